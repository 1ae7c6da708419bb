//! Who is who: the ids of Kafka's processes (brokers, controllers,
//! clients) and of idempotent producers.

use serde::{Deserialize, Serialize};

/// A broker's id (`node.id`).
pub type BrokerId = u32;

/// A producer id (`long` in Kafka).
pub type ProducerId = u64;

/// A producer epoch (`short` in Kafka).
pub type ProducerEpoch = i16;

/// A node of the simulated system.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "kind", content = "id", rename_all = "kebab-case")]
pub enum NodeId {
    /// A KRaft controller.
    Controller(u32),
    /// A broker.
    Broker(BrokerId),
    /// A producer client.
    Producer(u32),
    /// A consumer client.
    Consumer(u32),
}

impl std::fmt::Display for NodeId {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NodeId::Controller(id) => write!(formatter, "controller-{id}"),
            NodeId::Broker(id) => write!(formatter, "broker-{id}"),
            NodeId::Producer(id) => write!(formatter, "producer-{id}"),
            NodeId::Consumer(id) => write!(formatter, "consumer-{id}"),
        }
    }
}
