//! Whether a scenario's inputs name things its cluster has: producers,
//! consumers (those configured and those an earlier input added), brokers,
//! controllers, topics and partitions (those configured and those an
//! earlier `createPartitions` asked for). The simulator ignores an input
//! that names nothing it has, as Kafka's tools refuse one; a scenario
//! author hears which field, and where in the file, before the run.

use crate::sorting::Gather;
use std::collections::BTreeMap;

use super::config::{ClusterConfig, ConfigChange, Input, PartitionRef, ScheduledInput};
use super::types::NodeId;
use crate::json_position::Step;

/// An input that names something the cluster does not have: its index in
/// `inputs`, the path of the field inside it and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unknown {
    /// The input's index in the scenario's `inputs`.
    pub index: usize,
    /// The field inside the input (`["producer"]`, `["a", "id"]`).
    pub field: Vec<Step<'static>>,
    /// What the cluster has instead.
    pub message: String,
}

impl Unknown {
    /// The whole path from the scenario's root, for
    /// [`crate::json_position::position`].
    pub fn path(&self) -> Vec<Step<'static>> {
        let mut path = vec![Step::Field("inputs"), Step::Index(self.index), Step::Field("input")];
        path.extend(self.field.iter().copied());
        path
    }

    /// The path as a reader writes it: `inputs[3].input.a.id`.
    pub fn path_text(&self) -> String {
        let mut text = String::new();
        for step in self.path() {
            match step {
                Step::Field(name) if text.is_empty() => text.push_str(name),
                Step::Field(name) => {
                    text.push('.');
                    text.push_str(name);
                }
                Step::Index(index) => text.push_str(&format!("[{index}]")),
            }
        }
        text
    }
}

/// What the cluster has at one moment of the run.
struct Shape<'c> {
    config: &'c ClusterConfig,
    consumers: usize,
    partitions: BTreeMap<&'c str, u32>,
}

type Found = Result<(), (Vec<Step<'static>>, String)>;

fn numbered(count: u64, first: u64, what: &str) -> String {
    match count {
        0 => format!("no {what}s"),
        1 => format!("one {what}, {what} {first}"),
        _ => format!("{what}s {first} to {}", first + count - 1),
    }
}

impl<'c> Shape<'c> {
    fn producer(&self, id: u32, field: &'static str) -> Found {
        let count = self.config.producers.len() as u64;
        if u64::from(id) < count {
            return Ok(());
        }
        Err((
            vec![Step::Field(field)],
            format!("the cluster has {}, not producer {id}", numbered(count, 0, "producer")),
        ))
    }

    fn consumer(&self, id: u32, field: &'static str) -> Found {
        let count = self.consumers as u64;
        if u64::from(id) < count {
            return Ok(());
        }
        Err((
            vec![Step::Field(field)],
            format!(
                "the cluster has {} at that time (config.consumers, then those addConsumer adds), not consumer {id}",
                numbered(count, 0, "consumer")
            ),
        ))
    }

    fn broker(&self, id: u32, path: Vec<Step<'static>>) -> Found {
        if (1..=self.config.brokers).contains(&id) {
            return Ok(());
        }
        Err((
            path,
            format!(
                "the cluster has {}, not broker {id}",
                numbered(u64::from(self.config.brokers), 1, "broker")
            ),
        ))
    }

    fn controller(&self, id: u32, path: Vec<Step<'static>>) -> Found {
        let count = self.config.controllers.max(1);
        if (1..=count).contains(&id) {
            return Ok(());
        }
        Err((
            path,
            format!(
                "the quorum has {}, not controller {id}",
                numbered(u64::from(count), 1, "controller")
            ),
        ))
    }

    fn node(&self, node: NodeId, field: &'static str) -> Found {
        self.node_at(node, vec![Step::Field(field)])
    }

    fn node_at(&self, node: NodeId, mut path: Vec<Step<'static>>) -> Found {
        path.push(Step::Field("id"));
        match node {
            NodeId::Broker(id) => self.broker(id, path),
            NodeId::Controller(id) => self.controller(id, path),
            NodeId::Producer(id) => self.producer(id, "id").map_err(|(_, message)| (path, message)),
            NodeId::Consumer(id) => self.consumer(id, "id").map_err(|(_, message)| (path, message)),
        }
    }

    fn topic(&self, topic: &str, path: Vec<Step<'static>>) -> Result<u32, (Vec<Step<'static>>, String)> {
        self.partitions.get(topic).copied().ok_or_else(|| {
            let known: Vec<&str> = self.partitions.keys().copied().collect();
            let has = match known.as_slice() {
                [] => "no topics".to_string(),
                [only] => format!("one topic, {only}"),
                _ => format!("the topics {}", known.join(", ")),
            };
            (path, format!("the cluster has {has}, not a topic named \"{topic}\""))
        })
    }

    fn partition(&self, topic: &str, partition: Option<u32>, path: &[Step<'static>]) -> Found {
        let mut topic_path = path.to_vec();
        topic_path.push(Step::Field("topic"));
        let count = self.topic(topic, topic_path)?;
        match partition {
            Some(partition) if partition >= count => {
                let mut partition_path = path.to_vec();
                partition_path.push(Step::Field("partition"));
                Err((
                    partition_path,
                    format!(
                        "{topic} has {} at that time, not partition {partition}",
                        numbered(u64::from(count), 0, "partition")
                    ),
                ))
            }
            _ => Ok(()),
        }
    }

    fn config_change(&self, change: &ConfigChange) -> Found {
        match change {
            ConfigChange::Acks { producer, .. }
            | ConfigChange::LingerMs { producer, .. }
            | ConfigChange::EnableIdempotence { producer, .. } => self.producer(*producer, "producer"),
            ConfigChange::ProcessingMsPerRecord { consumer, .. }
            | ConfigChange::CommitMode { consumer, .. }
            | ConfigChange::IdempotentHandler { consumer, .. }
            | ConfigChange::AutoOffsetReset { consumer, .. } => self.consumer(*consumer, "consumer"),
            ConfigChange::MinInsyncReplicas { topic, .. }
            | ConfigChange::TopicStorage { topic, .. }
            | ConfigChange::CleanupPolicy { topic, .. }
            | ConfigChange::MinCleanableDirtyRatio { topic, .. } => {
                self.topic(topic, vec![Step::Field("topic")]).map(drop)
            }
            ConfigChange::UncleanLeaderElection { .. }
            | ConfigChange::TransactionVersion { .. }
            | ConfigChange::TransactionPartitionVerification { .. }
            | ConfigChange::ReplicaLagTimeMaxMs { .. }
            | ConfigChange::Quota(_) => Ok(()),
        }
    }

    /// Checks one input and then applies what it adds (a consumer,
    /// partitions).
    fn take(&mut self, input: &'c Input) -> Found {
        match input {
            Input::Produce { producer, .. }
            | Input::LoseProduceResponse { producer }
            | Input::StallProduce { producer, .. }
            | Input::StallEndTxn { producer, .. }
            | Input::CommitTransaction { producer }
            | Input::AbortTransaction { producer }
            | Input::RestartProducer { producer }
            | Input::ProduceTombstone { producer, .. } => self.producer(*producer, "producer"),
            Input::KillBroker { broker }
            | Input::RestartBroker { broker }
            | Input::StopBroker { broker }
            | Input::PauseBroker { broker, .. } => self.broker(*broker, vec![Step::Field("broker")]),
            Input::PowerLoss { brokers } => brokers
                .iter()
                .enumerate()
                .try_for_each(|(index, broker)| self.broker(*broker, vec![Step::Field("brokers"), Step::Index(index)])),
            Input::CutLink { a, b } | Input::HealLink { a, b } => {
                self.node(*a, "a")?;
                self.node(*b, "b")
            }
            Input::Partition { side } => side
                .iter()
                .enumerate()
                .try_for_each(|(index, node)| self.node_at(*node, vec![Step::Field("side"), Step::Index(index)])),
            Input::SlowNode { node, .. } => self.node(*node, "node"),
            Input::KillController { controller } | Input::RestartController { controller } => {
                self.controller(*controller, vec![Step::Field("controller")])
            }
            Input::StartConsumer { consumer }
            | Input::StopConsumer { consumer }
            | Input::CrashConsumer { consumer }
            | Input::PauseConsumer { consumer, .. } => self.consumer(*consumer, "consumer"),
            Input::AddConsumer { consumer } => {
                for (index, topic) in consumer.topics.iter().enumerate() {
                    self.topic(
                        topic,
                        vec![Step::Field("consumer"), Step::Field("topics"), Step::Index(index)],
                    )?;
                }
                self.config
                    .validate_consumer(consumer)
                    .map_err(|error| (vec![Step::Field("consumer")], error))?;
                self.consumers += 1;
                Ok(())
            }
            Input::ElectLeaders { partitions, .. } => {
                partitions
                    .iter()
                    .enumerate()
                    .try_for_each(|(index, PartitionRef { topic, partition })| {
                        self.partition(
                            topic,
                            Some(*partition),
                            &[Step::Field("partitions"), Step::Index(index)],
                        )
                    })
            }
            Input::CreatePartitions { topic, count } => {
                let current = self.topic(topic, vec![Step::Field("topic")])?;
                if *count > current {
                    self.partitions.insert(topic.as_str(), *count);
                }
                Ok(())
            }
            Input::PoisonRecords { topic, partition, .. } => self.partition(topic, *partition, &[]),
            Input::SetConfig(change) => self.config_change(change),
            Input::HealNetwork | Input::DropMessages { .. } => Ok(()),
        }
    }
}

/// The first input, in the order the run applies them (by `atMs`, the
/// file's order among equals), that names something its cluster does not
/// have at that time.
pub fn first_unknown(config: &ClusterConfig, inputs: &[ScheduledInput]) -> Option<Unknown> {
    let mut shape = Shape {
        config,
        consumers: config.consumers.len(),
        partitions: config
            .topics
            .iter()
            .map(|topic| (topic.name.as_str(), topic.partitions))
            .gather(),
    };
    let mut order: Vec<usize> = (0..inputs.len()).collect();
    crate::sorting::sort_by_key(&mut order, |index| inputs[*index].at_ms);
    order.into_iter().find_map(|index| {
        shape
            .take(&inputs[index].input)
            .err()
            .map(|(field, message)| Unknown { index, field, message })
    })
}

#[cfg(test)]
mod tests {
    use crate::sim::scenario::Scenario;

    fn scenario(inputs: &str) -> String {
        format!(
            r#"{{
  "name": "names",
  "seed": 1,
  "config": {{
    "brokers": 3,
    "controllers": 3,
    "topics": [{{ "name": "orders", "partitions": 3, "replicationFactor": 3 }}],
    "producers": [{{ "topic": "orders" }}],
    "consumers": [{{ "group": "g", "topics": ["orders"] }}]
  }},
  "inputs": [
{inputs}
  ],
  "runUntilMs": 5000
}}"#
        )
    }

    fn refused(inputs: &str) -> String {
        Scenario::from_json(&scenario(inputs)).expect_err(inputs)
    }

    #[test]
    fn an_input_naming_what_the_cluster_lacks_is_refused_with_its_field_and_place() {
        let error = refused(
            r#"    { "atMs": 1000, "input": { "type": "produce", "producer": 0 } },
    { "atMs": 2000, "input": { "type": "produce", "producer": 3 } }"#,
        );
        assert_eq!(
            error,
            "bad scenario: inputs[1].input.producer: the cluster has one producer, producer 0, not producer 3 at line 13 column 63"
        );
        for (input, says) in [
            (
                r#"{ "type": "stopBroker", "broker": 9 }"#,
                "inputs[0].input.broker: the cluster has brokers 1 to 3, not broker 9",
            ),
            (r#"{ "type": "killBroker", "broker": 0 }"#, "not broker 0"),
            (
                r#"{ "type": "killController", "controller": 4 }"#,
                "the quorum has controllers 1 to 3, not controller 4",
            ),
            (
                r#"{ "type": "crashConsumer", "consumer": 1 }"#,
                "inputs[0].input.consumer: the cluster has one consumer, consumer 0 at that time",
            ),
            (
                r#"{ "type": "cutLink", "a": { "kind": "broker", "id": 1 }, "b": { "kind": "controller", "id": 7 } }"#,
                "inputs[0].input.b.id: the quorum has controllers 1 to 3, not controller 7",
            ),
            (
                r#"{ "type": "partition", "side": [{ "kind": "broker", "id": 1 }, { "kind": "producer", "id": 2 }] }"#,
                "inputs[0].input.side[1].id: the cluster has one producer",
            ),
            (
                r#"{ "type": "slowNode", "node": { "kind": "consumer", "id": 5 }, "extraLatencyMs": 10 }"#,
                "inputs[0].input.node.id",
            ),
            (
                r#"{ "type": "poisonRecords", "topic": "ordrs" }"#,
                "inputs[0].input.topic: the cluster has one topic, orders, not a topic named \"ordrs\"",
            ),
            (
                r#"{ "type": "poisonRecords", "topic": "orders", "partition": 3 }"#,
                "inputs[0].input.partition: orders has partitions 0 to 2 at that time, not partition 3",
            ),
            (
                r#"{ "type": "electLeaders", "electionType": "preferred", "partitions": [{ "topic": "orders", "partition": 0 }, { "topic": "orders", "partition": 8 }] }"#,
                "inputs[0].input.partitions[1].partition",
            ),
            (
                r#"{ "type": "createPartitions", "topic": "payments", "count": 4 }"#,
                "inputs[0].input.topic",
            ),
            (
                r#"{ "type": "setConfig", "knob": "acks", "producer": 2, "acks": "1" }"#,
                "inputs[0].input.producer",
            ),
            (
                r#"{ "type": "setConfig", "knob": "minInsyncReplicas", "topic": "nope", "value": 1 }"#,
                "inputs[0].input.topic",
            ),
            (
                r#"{ "type": "addConsumer", "consumer": { "group": "h", "topics": ["orders", "nope"] } }"#,
                "inputs[0].input.consumer.topics[1]",
            ),
        ] {
            let error = refused(&format!(r#"    {{ "atMs": 1000, "input": {input} }}"#));
            assert!(error.contains(says), "{input}: {error}");
            assert!(error.contains(" at line 12 column "), "{input}: {error}");
        }
    }

    #[test]
    fn an_input_after_the_run_ends_is_refused_where_it_is() {
        let error = refused(r#"    { "atMs": 9000, "input": { "type": "produce", "producer": 0 } }"#);
        assert_eq!(
            error,
            "bad scenario: inputs[0].atMs is 9000, after the run ends (runUntilMs 5000), so it would never happen at line 12 column 15"
        );
    }

    #[test]
    fn what_earlier_inputs_add_is_there_for_later_ones_in_time_order() {
        // The second consumer exists once addConsumer has run, and the
        // fourth partition once createPartitions has, whatever the file's order.
        let fine = scenario(
            r#"    { "atMs": 3000, "input": { "type": "crashConsumer", "consumer": 1 } },
    { "atMs": 3000, "input": { "type": "poisonRecords", "topic": "orders", "partition": 3 } },
    { "atMs": 1000, "input": { "type": "addConsumer", "consumer": { "group": "g", "topics": ["orders"] } } },
    { "atMs": 2000, "input": { "type": "createPartitions", "topic": "orders", "count": 4 } }"#,
        );
        assert!(
            Scenario::from_json(&fine).is_ok(),
            "{:?}",
            Scenario::from_json(&fine).err()
        );
        let early = refused(
            r#"    { "atMs": 500, "input": { "type": "crashConsumer", "consumer": 1 } },
    { "atMs": 1000, "input": { "type": "addConsumer", "consumer": { "group": "g", "topics": ["orders"] } } }"#,
        );
        assert!(early.contains("inputs[0].input.consumer"), "{early}");
    }
}
