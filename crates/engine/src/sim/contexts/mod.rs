//! The narrow context a process's handlers get, and the simulation's
//! entry points that route inputs, messages and timers to that process.
//!
//! A process that runs this way is a type that owns its state and
//! handles its messages and timers with `&mut self` and a context: it can
//! send a message, set a timer, close a connection, record a trace fact
//! and note in the ledger what became of a record, and nothing else. It
//! cannot see the other processes: what a producer tells its application
//! (a consumer's: a transaction ended) is handed over by the simulation
//! once the event's handler returns.
//!
//! Every process runs this way: the producer with its transaction
//! manager ([`ProducerContext`], its entry points in `producer.rs`), the
//! consumer with its application ([`ConsumerContext`], `consumer.rs`), the
//! broker with its coordinators ([`BrokerContext`], `broker.rs`) and the
//! controller quorum ([`QuorumContext`], `quorum.rs`), whose active
//! controller decides with a `controller::Decision` (`controller.rs`).

use std::collections::BTreeMap;

use crate::protocol::metadata::Controller;
use crate::protocol::{BrokerId, TopicPartition};
use crate::replication::high_watermark::Acks;

use super::config::ClusterConfig;
use super::controller::Decision;
use super::trace::TraceKind;
use super::types::{Message, NodeId, RecordId, Time};
use super::{Simulation, Timer};

mod broker;
mod consumer;
mod controller;
mod producer;
mod quorum;

pub(crate) use broker::BrokerContext;
pub(crate) use consumer::ConsumerContext;

/// What a producer's handlers may do beyond their own state.
pub(crate) struct ProducerContext<'a> {
    sim: &'a mut Simulation,
    id: u32,
    /// What the producer told its application (`commitTransaction()`
    /// returned: `Some(committed)`; a fatal error: `None`), handed over
    /// once the event's handler returns.
    told_app: Vec<Option<bool>>,
}

impl ProducerContext<'_> {
    /// The simulated time.
    pub(crate) fn now(&self) -> Time {
        self.sim.now
    }

    /// The brokers of the cluster, `1..=brokers()` (its bootstrap servers).
    pub(crate) fn brokers(&self) -> u32 {
        self.sim.config.brokers
    }

    /// Sends `message` to `broker`.
    pub(crate) fn send(&mut self, broker: BrokerId, message: Message) {
        self.sim
            .send(NodeId::Producer(self.id), NodeId::Broker(broker), message);
    }

    /// Sets a timer that fires after `delay_ms`.
    pub(crate) fn timer(&mut self, delay_ms: Time, timer: Timer) {
        self.sim.schedule_timer(NodeId::Producer(self.id), 0, delay_ms, timer);
    }

    /// Closes its connection to `broker` itself (a request timed out).
    pub(crate) fn close_connection(&mut self, broker: BrokerId) {
        self.sim
            .connection_closed_by(NodeId::Producer(self.id), NodeId::Broker(broker));
    }

    /// Its process died: every connection it had breaks.
    pub(crate) fn break_connections(&mut self) {
        for broker in 1..=self.sim.config.brokers {
            self.sim
                .connection_reset(NodeId::Producer(self.id), NodeId::Broker(broker));
        }
    }

    /// Records a trace fact.
    pub(crate) fn trace(&mut self, kind: TraceKind) {
        self.sim.record(kind);
    }

    /// Records produced so far, by every producer (kafkascope's limit).
    pub(crate) fn records_produced(&self) -> u64 {
        self.sim.records.len() as u64
    }

    /// A record the application sent: its id in the ledger.
    pub(crate) fn new_record(&mut self, key: Option<String>, bytes: u32, tombstone: bool) -> RecordId {
        self.sim.new_record_with(self.id, key, bytes, tombstone)
    }

    /// The partitioner put `record` in `partition`.
    pub(crate) fn placed(&mut self, record: RecordId, partition: TopicPartition) {
        self.sim.records[record as usize].partition = Some(partition);
    }

    /// `record` was acknowledged (at `offset`, none with acks=0) under `acks`.
    pub(crate) fn acknowledged(&mut self, record: RecordId, offset: Option<u64>, acks: Acks) {
        self.sim.mark_acknowledged(record, offset);
        self.sim.records[record as usize].acks = Some(acks);
    }

    /// The acknowledged `records` of `partition` are checked against its
    /// leader's log (an acknowledgement can arrive after a new leader took
    /// over).
    pub(crate) fn check_acknowledged(&mut self, partition: &TopicPartition, records: &[RecordId]) {
        self.sim.check_acknowledged(partition, Some(records));
    }

    /// `record` failed for good (counted once).
    pub(crate) fn failed(&mut self, record: RecordId) {
        self.fail_if(record, false);
    }

    /// `record` failed with the process, unless it was acknowledged.
    pub(crate) fn lost_with_process(&mut self, record: RecordId) {
        self.fail_if(record, true);
    }

    fn fail_if(&mut self, record: RecordId, unless_acknowledged: bool) {
        let produced = &mut self.sim.records[record as usize];
        if produced.failed || (unless_acknowledged && produced.acknowledged.is_some()) {
            return;
        }
        produced.failed = true;
        self.sim.failed_count += 1;
        self.sim.highlights.tally.entry(self.id).or_default()[2] += 1;
    }

    /// `record` expired with the older batch `first` began
    /// (`ProducerBatch#hasReachedDeliveryTimeout`).
    pub(crate) fn expired_with(&mut self, record: RecordId, first: RecordId) {
        self.sim.expired_with_older_batch.insert(record, first);
    }

    /// An `EndTxn` that commits went out (Jepsen's history).
    pub(crate) fn commit_sent(&mut self) {
        if let Some(recorder) = self.sim.jepsen.as_deref_mut() {
            recorder.commit_sent(self.id);
        }
    }

    /// The process died (Jepsen's history).
    pub(crate) fn crashed(&mut self) {
        let (next_id, now) = (self.sim.next_trace_id(), self.sim.now);
        if let Some(recorder) = self.sim.jepsen.as_deref_mut() {
            recorder.producer_crashed(self.id, next_id, now);
        }
    }

    /// Tells the application that its transaction ended (`Some(true)`
    /// committed, `Some(false)` aborted) or that a fatal error stopped
    /// the producer (`None`).
    pub(crate) fn tell_app(&mut self, outcome: Option<bool>) {
        self.told_app.push(outcome);
    }
}

/// What the controller quorum's handlers may do beyond the quorum's own
/// state (its controllers, their logs, votes and held fetches).
pub(crate) struct QuorumContext<'a> {
    sim: &'a mut Simulation,
}

/// What one decision of the active controller held back: its messages
/// (from, to, message) and trace facts, released when its entry commits,
/// and, for the periodic unclean election pass, whether it hit its limit.
pub(crate) struct Decided {
    pub(crate) messages: Vec<(NodeId, NodeId, Message)>,
    pub(crate) trace: Vec<TraceKind>,
    pub(crate) unclean_pass_hit_limit: Option<bool>,
}

impl QuorumContext<'_> {
    /// The simulated time.
    pub(crate) fn now(&self) -> Time {
        self.sim.now
    }

    /// The cluster's settings.
    pub(crate) fn config(&self) -> &ClusterConfig {
        &self.sim.config
    }

    /// Sends a message from a controller (`from`).
    pub(crate) fn send(&mut self, from: NodeId, to: NodeId, message: Message) {
        self.sim.send(from, to, message);
    }

    /// Sets a timer on controller `node` (for its `incarnation`).
    pub(crate) fn timer(&mut self, node: NodeId, incarnation: u32, delay_ms: Time, timer: Timer) {
        self.sim.schedule_timer(node, incarnation, delay_ms, timer);
    }

    /// Records a trace fact.
    pub(crate) fn trace(&mut self, kind: TraceKind) {
        self.sim.record(kind);
    }

    /// Controller `id`'s process starts or dies; a dead one's connections
    /// all break.
    pub(crate) fn set_running(&mut self, id: u32, running: bool) {
        self.sim.controller_processes.insert(id, running);
        if !running {
            self.sim.close_connections(NodeId::Controller(id));
        }
    }

    /// Two controllers lead one epoch: the invariant is violated (the
    /// trace says so).
    pub(crate) fn violation(&mut self) {
        self.sim.monitor.violations += 1;
    }

    /// The quorum committed `state`: it becomes the cluster's view.
    pub(crate) fn committed(&mut self, state: &Controller) {
        self.sim.apply_committed(state);
    }

    /// Runs one decision of controller `id` on `image` (a working copy of
    /// its latest state) with the broker `heartbeats` it keeps.
    pub(crate) fn decide(
        &mut self,
        id: u32,
        image: &mut Controller,
        heartbeats: &mut BTreeMap<BrokerId, u64>,
        work: impl FnOnce(&mut Decision<'_>),
    ) -> Decided {
        let sim = &mut *self.sim;
        let mut decision = Decision {
            image,
            config: &sim.config,
            now: sim.now,
            me: NodeId::Controller(id),
            heartbeats,
            placement_rng: &mut sim.placement_rng,
            topic_names: &mut sim.topic_names,
            internal_topics_refused: &mut sim.internal_topics_refused,
            outbox: Vec::new(),
            trace: Vec::new(),
            unclean_pass_hit_limit: None,
        };
        work(&mut decision);
        Decided {
            messages: decision.outbox,
            trace: decision.trace,
            unclean_pass_hit_limit: decision.unclean_pass_hit_limit,
        }
    }
}
