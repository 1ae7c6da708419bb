//! What a learner can point at on the map: a node, a group, a replica or an
//! edge. One type, one way to write it as a key (test ids, the inspector,
//! the selection kept across frames) and one way to read a key back.

use kafkascope_engine::replication::BrokerId;
use kafkascope_engine::sim::types::NodeId;

/// A selection on the architecture map.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Selection {
    /// A controller, broker or producer box, or a consumer's row in its group.
    Node(NodeId),
    /// A consumer group's box.
    Group(String),
    /// One replica row: a broker's copy of a partition (`orders-0`).
    Replica { broker: BrokerId, partition: String },
    /// An edge, named from the end that sends its requests (the client, the
    /// follower, the broker towards the controller).
    Edge { from: NodeId, to: NodeId },
}

impl Selection {
    /// The key: `broker-1`, `group-billing`, `broker-1/orders-0`,
    /// `broker-2->broker-1`.
    pub fn key(&self) -> String {
        match self {
            Selection::Node(node) => node.to_string(),
            Selection::Group(group) => format!("group-{group}"),
            Selection::Replica { broker, partition } => format!("{}/{partition}", NodeId::Broker(*broker)),
            Selection::Edge { from, to } => format!("{from}->{to}"),
        }
    }

    /// Reads a key back (`None` if it names nothing a map can hold).
    pub fn parse(key: &str) -> Option<Selection> {
        if let Some((from, to)) = key.split_once("->") {
            return Some(Selection::Edge {
                from: parse_node(from)?,
                to: parse_node(to)?,
            });
        }
        if let Some((broker, partition)) = key.split_once('/') {
            let NodeId::Broker(broker) = parse_node(broker)? else {
                return None;
            };
            return (!partition.is_empty()).then(|| Selection::Replica {
                broker,
                partition: partition.to_string(),
            });
        }
        if let Some(("group", group)) = key.split_once('-') {
            return (!group.is_empty()).then(|| Selection::Group(group.to_string()));
        }
        parse_node(key).map(Selection::Node)
    }

    /// The node this selection is, or sits in (a replica's broker).
    pub fn node(&self) -> Option<NodeId> {
        match self {
            Selection::Node(node) => Some(*node),
            Selection::Replica { broker, .. } => Some(NodeId::Broker(*broker)),
            Selection::Group(_) | Selection::Edge { .. } => None,
        }
    }
}

impl std::fmt::Display for Selection {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.key())
    }
}

/// `broker-N` as a node (`format!("{}", as_broker(id))`): node ids are
/// written by [`NodeId`]'s `Display`, in one place.
pub fn as_broker(id: impl std::borrow::Borrow<u32>) -> NodeId {
    NodeId::Broker(*id.borrow())
}

/// `controller-N` as a node.
pub fn as_controller(id: impl std::borrow::Borrow<u32>) -> NodeId {
    NodeId::Controller(*id.borrow())
}

/// `producer-N` as a node.
pub fn as_producer(id: impl std::borrow::Borrow<u32>) -> NodeId {
    NodeId::Producer(*id.borrow())
}

/// `consumer-N` as a node.
pub fn as_consumer(id: impl std::borrow::Borrow<u32>) -> NodeId {
    NodeId::Consumer(*id.borrow())
}

/// Reads a node id as [`NodeId`]'s `Display` writes it (`controller-1`).
pub fn parse_node(text: &str) -> Option<NodeId> {
    let (kind, number) = text.split_once('-')?;
    if number.is_empty() || !number.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    let id: u32 = number.parse().ok()?;
    let node = match kind {
        "controller" => NodeId::Controller(id),
        "broker" => NodeId::Broker(id),
        "producer" => NodeId::Producer(id),
        "consumer" => NodeId::Consumer(id),
        _ => return None,
    };
    // Only the one spelling `Display` gives (no `broker-01`).
    (node.to_string() == text).then_some(node)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_selection_reads_back_from_its_key() {
        let all = [
            Selection::Node(NodeId::Controller(2)),
            Selection::Node(NodeId::Broker(1)),
            Selection::Node(NodeId::Producer(0)),
            Selection::Node(NodeId::Consumer(12)),
            Selection::Group("billing".into()),
            Selection::Group("a-b".into()),
            Selection::Replica {
                broker: 3,
                partition: "orders-0".into(),
            },
            Selection::Replica {
                broker: 1,
                partition: "__consumer_offsets-17".into(),
            },
            Selection::Edge {
                from: NodeId::Broker(2),
                to: NodeId::Broker(1),
            },
            Selection::Edge {
                from: NodeId::Consumer(0),
                to: NodeId::Broker(3),
            },
        ];
        for selection in all {
            assert_eq!(
                Selection::parse(&selection.key()),
                Some(selection.clone()),
                "{selection}"
            );
        }
        assert_eq!(Selection::Node(NodeId::Broker(1)).key(), "broker-1");
        assert_eq!(
            Selection::Replica {
                broker: 1,
                partition: "orders-0".into()
            }
            .key(),
            "broker-1/orders-0"
        );
    }

    #[test]
    fn keys_that_name_nothing_read_as_none() {
        for key in [
            "",
            "broker",
            "broker-",
            "broker-x",
            "broker-01",
            "queue-1",
            "group-",
            "broker-1/",
            "producer-0/orders-0",
            "broker-1->",
            "->broker-1",
            "broker-4294967296",
        ] {
            assert_eq!(Selection::parse(key), None, "{key}");
        }
    }
}
