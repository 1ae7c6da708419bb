//! The simulated network: latency with jitter, lost messages, cut links,
//! network partitions and slow nodes. Each link delivers in order, as the
//! TCP connections between Kafka nodes do, and behaves like one: a
//! message that cannot get through breaks the connection. Both ends are
//! told (the client sees a disconnect, as Kafka's `NetworkClient` does),
//! every message still in flight on it is discarded, and later messages go
//! on a new connection (each has a generation; a message of an older one
//! is never delivered). So no later message overtakes a lost earlier one.
//!
//! Simplification: a real TCP connection across a cut link only notices
//! the loss at a timeout; here both ends notice after one network latency.

use std::collections::{BTreeMap, BTreeSet};

use crate::random::Rng;

use super::config::NetworkConfig;
use super::types::{MessageName, NodeId, Time};

/// Why a message never arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DropReason {
    /// The link between the two nodes is cut.
    LinkCut,
    /// The nodes are on different sides of a network partition.
    NetworkPartition,
    /// Random loss.
    Lost,
    /// Sent on a connection that broke before it arrived.
    ConnectionReset,
    /// The learner asked for this one response to be lost.
    Injected,
}

impl std::fmt::Display for DropReason {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            DropReason::LinkCut => "the link is cut",
            DropReason::NetworkPartition => "the two are on different sides of a network partition",
            DropReason::Lost => "lost on the way",
            DropReason::ConnectionReset => "its connection broke before it arrived",
            DropReason::Injected => "lost on the way back, as the learner asked",
        })
    }
}

/// The network's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Network {
    pub(crate) config: NetworkConfig,
    cut: BTreeSet<(NodeId, NodeId)>,
    side: Option<BTreeSet<NodeId>>,
    slow: BTreeMap<NodeId, u64>,
    /// Last delivery time per directed link, to keep each link in order.
    last_delivery: BTreeMap<(NodeId, NodeId), Time>,
    /// The generation of the connection between two nodes (absent: 0),
    /// bumped every time it breaks.
    connections: BTreeMap<(NodeId, NodeId), u32>,
    /// Nodes whose next produce response is to be lost.
    lose_next_produce_response: BTreeSet<NodeId>,
    /// Producers whose next request of a kind (`Produce`, `EndTxn`) waits
    /// this long in its broker's request queue.
    stall_next: BTreeMap<(NodeId, MessageName), u64>,
    /// Directed (sender, peer) pairs whose connection broke under a lost
    /// message, until the sender hears of it (its `ConnectionClosed`
    /// arrives): what it sends meanwhile goes down the broken connection
    /// and is lost too, as on a TCP connection nothing gets past a lost
    /// segment.
    unaware: BTreeSet<(NodeId, NodeId)>,
}

fn ordered(a: NodeId, b: NodeId) -> (NodeId, NodeId) {
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}

impl Network {
    /// A healthy network.
    pub fn new(config: NetworkConfig) -> Network {
        Network {
            config,
            cut: BTreeSet::new(),
            side: None,
            slow: BTreeMap::new(),
            last_delivery: BTreeMap::new(),
            connections: BTreeMap::new(),
            lose_next_produce_response: BTreeSet::new(),
            stall_next: BTreeMap::new(),
            unaware: BTreeSet::new(),
        }
    }

    /// `sender` has not yet heard that its connection to `peer` broke.
    pub fn mark_unaware(&mut self, sender: NodeId, peer: NodeId) {
        self.unaware.insert((sender, peer));
    }

    /// `sender` heard that its connection to `peer` broke (or it
    /// restarted): what it sends next opens a new connection.
    pub fn mark_aware(&mut self, sender: NodeId, peer: NodeId) {
        self.unaware.remove(&(sender, peer));
    }

    /// Whether `sender` still sends down a connection to `peer` that broke.
    pub fn is_unaware(&self, sender: NodeId, peer: NodeId) -> bool {
        self.unaware.contains(&(sender, peer))
    }

    /// Loses the next produce response sent to `node`.
    pub fn lose_next_produce_response(&mut self, node: NodeId) {
        self.lose_next_produce_response.insert(node);
    }

    /// Whether a produce response to `node` is the one to lose (and
    /// forgets the wish).
    pub fn take_produce_response_loss(&mut self, node: NodeId) -> bool {
        self.lose_next_produce_response.remove(&node)
    }

    /// The next `request` from `node` will wait `delay_ms` in its
    /// broker's request queue.
    pub fn stall_next(&mut self, node: NodeId, request: MessageName, delay_ms: u64) {
        self.stall_next.insert((node, request), delay_ms);
    }

    /// How long a `request` from `node` is to wait, if it is the one (and
    /// forgets the wish).
    pub fn take_stall(&mut self, node: NodeId, request: MessageName) -> Option<u64> {
        self.stall_next.remove(&(node, request))
    }

    /// The current connection between two nodes (its generation).
    pub fn connection(&self, a: NodeId, b: NodeId) -> u32 {
        self.connections.get(&ordered(a, b)).copied().unwrap_or(0)
    }

    /// Breaks the connection between two nodes: what is in flight on it is
    /// discarded, and the next message opens a new one.
    pub fn reset(&mut self, a: NodeId, b: NodeId) -> u32 {
        let generation = self.connections.entry(ordered(a, b)).or_insert(0);
        *generation += 1;
        *generation
    }

    /// When a message sent now from `from` to `to` arrives, or why it does not.
    pub fn route(&mut self, from: NodeId, to: NodeId, now: Time, rng: &mut Rng) -> Result<Time, DropReason> {
        if from == to {
            return Ok(now);
        }
        if self.cut.contains(&ordered(from, to)) {
            return Err(DropReason::LinkCut);
        }
        if let Some(side) = &self.side {
            if side.contains(&from) != side.contains(&to) {
                return Err(DropReason::NetworkPartition);
            }
        }
        if self.config.drop_per_million > 0 && rng.next_u32() % 1_000_000 < self.config.drop_per_million {
            return Err(DropReason::Lost);
        }
        let jitter = if self.config.jitter_ms > 0 {
            u64::from(rng.next_u32()) % (self.config.jitter_ms + 1)
        } else {
            0
        };
        let slow = self
            .slow
            .get(&from)
            .copied()
            .unwrap_or(0)
            .saturating_add(self.slow.get(&to).copied().unwrap_or(0));
        // Saturating: a latency asked for past the end of time arrives never.
        let mut arrival = now
            .saturating_add(self.config.latency_ms)
            .saturating_add(jitter)
            .saturating_add(slow);
        let last = self.last_delivery.entry((from, to)).or_insert(0);
        arrival = arrival.max(*last);
        *last = arrival;
        Ok(arrival)
    }

    /// Cuts the link between two nodes.
    pub fn cut(&mut self, a: NodeId, b: NodeId) {
        self.cut.insert(ordered(a, b));
    }

    /// Restores the link between two nodes.
    pub fn heal(&mut self, a: NodeId, b: NodeId) {
        self.cut.remove(&ordered(a, b));
    }

    /// Splits the network so that `side` reaches only itself.
    pub fn partition(&mut self, side: BTreeSet<NodeId>) {
        self.side = Some(side);
    }

    /// Removes every cut and split.
    pub fn heal_all(&mut self) {
        self.cut.clear();
        self.side = None;
    }

    /// Adds latency to a node's messages.
    pub fn slow_down(&mut self, node: NodeId, extra_ms: u64) {
        if extra_ms == 0 {
            self.slow.remove(&node);
        } else {
            self.slow.insert(node, extra_ms);
        }
    }

    /// Changes the loss rate.
    pub fn set_drop_rate(&mut self, per_million: u32) {
        self.config.drop_per_million = per_million.min(1_000_000);
    }
}
