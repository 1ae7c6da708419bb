//! What a broker's handlers may do beyond its own state, and the
//! simulation's entry points to a broker: each runs one of its handlers
//! with a [`BrokerContext`].
//!
//! A broker is one process with its components: the replica manager and
//! its logs (`broker`), the group coordinator (`coordinator`), the
//! transaction coordinator (`txn`) and KIP-890's verification
//! (`verification`). All of them are `impl Broker`; what they share
//! beyond the broker's state (the network's connections, the records'
//! ledger, the monitor's notes) goes through the context.

use crate::groups::coordinator_partition;
use crate::protocol::{BrokerId, TopicPartition};

use super::super::broker::coordinator::CommitRecord;
use super::super::broker::{Broker, BrokerStatus, PartitionLog};
use super::super::config::ClusterConfig;
use super::super::trace::{BrokerChange, TraceId, TraceKind};
use super::super::types::{Message, MessageName, MetadataImage, NodeId, RecordId, Time, MARKER_RECORD_BASE};
use super::super::{ProducedRecord, Simulation, Timer};

/// What a broker's handlers may do beyond their own state.
pub(crate) struct BrokerContext<'a> {
    sim: &'a mut Simulation,
    id: BrokerId,
}

impl BrokerContext<'_> {
    fn node(&self) -> NodeId {
        NodeId::Broker(self.id)
    }

    /// The simulated time.
    pub(crate) fn now(&self) -> Time {
        self.sim.now
    }

    /// The cluster's settings.
    pub(crate) fn config(&self) -> &ClusterConfig {
        &self.sim.config
    }

    /// Sends `message` to `to`.
    pub(crate) fn send(&mut self, to: NodeId, message: Message) {
        self.sim.send(self.node(), to, message);
    }

    /// Sets a timer for this life of the broker (`incarnation`) that
    /// fires after `delay_ms`.
    pub(crate) fn timer(&mut self, incarnation: u32, delay_ms: Time, timer: Timer) {
        self.sim.schedule_timer(self.node(), incarnation, delay_ms, timer);
    }

    /// Records a trace fact.
    pub(crate) fn trace(&mut self, kind: TraceKind) {
        self.sim.record(kind);
    }

    /// The trace event being handled (what what it traces was caused by).
    pub(crate) fn cause(&self) -> Option<TraceId> {
        self.sim.current_cause
    }

    /// What the traces and messages that follow are caused by.
    pub(crate) fn set_cause(&mut self, cause: Option<TraceId>) {
        self.sim.current_cause = cause;
    }

    /// Its current connection (a number) with `peer`.
    pub(crate) fn connection(&self, peer: NodeId) -> u32 {
        self.sim.network.connection(self.node(), peer)
    }

    /// A stall the inputs asked for on the next `request` from `from`, if
    /// any (its delay).
    pub(crate) fn take_stall(&mut self, from: NodeId, request: MessageName) -> Option<u64> {
        self.sim.network.take_stall(from, request)
    }

    /// Its process starts or dies (the network's view); a dead one's
    /// connections all break.
    pub(crate) fn set_running(&mut self, running: bool) {
        self.sim.broker_processes.insert(self.id, running);
        if !running {
            self.sim.close_connections(self.node());
        }
    }

    /// The storage settings of `partition`'s topic.
    pub(crate) fn log_config(&self, partition: &TopicPartition) -> crate::storage::LogConfig {
        self.sim.log_config(partition)
    }

    /// The settings of `partition`'s topic.
    pub(crate) fn topic_config(&self, partition: &TopicPartition) -> Option<&super::super::config::TopicConfig> {
        self.sim.topic_config(partition)
    }

    /// The `__consumer_offsets` partition a group lives on.
    pub(crate) fn offsets_partition(&self, group: &str) -> TopicPartition {
        self.sim.offsets_partition(group)
    }

    /// The `__transaction_state` partition a transactional id lives on.
    pub(crate) fn txn_partition(&self, transactional_id: &str) -> TopicPartition {
        self.sim.txn_partition(transactional_id)
    }

    /// Whether brokers check guards on transactional appends
    /// (`transaction.partition.verification.enable`): the guard to check a
    /// batch with, or `None`.
    pub(crate) fn log_guard(&self, guard: u64) -> Option<u64> {
        self.sim
            .config
            .transaction_partition_verification_enable
            .then_some(guard)
    }

    /// A producer's `client.id` (quotas are per client id).
    pub(crate) fn producer_client_id(&self, producer: u32) -> String {
        self.sim.producer_client_id(producer)
    }

    /// A consumer's `client.id`.
    pub(crate) fn consumer_client_id(&self, consumer: u32) -> String {
        self.sim.consumer_client_id(consumer)
    }

    /// What the ledger knows of produced `record` (its key and size).
    pub(crate) fn produced(&self, record: RecordId) -> Option<&ProducedRecord> {
        self.sim.records.get(record as usize)
    }

    /// The record id of the next transaction marker written.
    pub(crate) fn new_marker_id(&mut self) -> RecordId {
        let id = MARKER_RECORD_BASE + self.sim.markers_written;
        self.sim.markers_written += 1;
        id
    }

    /// Keeps what a coordinator's record says (the log holds its id);
    /// returns that id.
    pub(crate) fn push_commit(&mut self, commit: CommitRecord) -> RecordId {
        self.sim.commits.push(commit);
        super::super::broker::coordinator::COMMIT_RECORD_BASE + (self.sim.commits.len() - 1) as u64
    }

    /// What the coordinator record with id `record` says.
    pub(crate) fn commit_record(&self, record: RecordId) -> Option<&CommitRecord> {
        let index = record.checked_sub(super::super::broker::coordinator::COMMIT_RECORD_BASE)?;
        self.sim.commits.get(index as usize)
    }

    /// Member ids handed out so far, by every coordinator.
    pub(crate) fn member_counter(&self) -> u64 {
        self.sim.member_counter
    }

    /// A coordinator handed out member ids up to `counter`.
    pub(crate) fn raise_member_counter(&mut self, counter: u64) {
        self.sim.member_counter = self.sim.member_counter.max(counter);
    }

    /// Group member `member_id` is `client` (for the trace and the view).
    pub(crate) fn note_member_client(&mut self, member_id: String, client: NodeId) {
        self.sim.member_clients.insert(member_id, client);
    }

    /// The client group member `member_id` is (consumer 0 if unknown).
    pub(crate) fn member_client(&self, member_id: &str) -> NodeId {
        self.sim
            .member_clients
            .get(member_id)
            .copied()
            .unwrap_or(NodeId::Consumer(0))
    }

    /// The first group of a cluster: asks the active controller to create
    /// `__consumer_offsets` (kafkascope's shortcut for Kafka's
    /// `CreateTopics` request from the broker).
    pub(crate) fn create_offsets_topic(&mut self) {
        self.sim.controller_create_offsets_topic();
    }

    /// The first transactional id: `__transaction_state`, likewise.
    pub(crate) fn create_transaction_topic(&mut self) {
        self.sim.controller_create_transaction_topic();
    }

    /// A monitored invariant is violated (the trace says which).
    pub(crate) fn violation(&mut self) {
        self.sim.monitor.violations += 1;
    }

    /// The monitor: these records were appended without a sequence check
    /// (a non-idempotent producer's).
    pub(crate) fn unchecked_sequences(&mut self, records: impl IntoIterator<Item = RecordId>) {
        self.sim.monitor.unchecked_sequences.extend(records);
    }

    /// The monitor: `partition`'s replicas changed outside the leader's
    /// appends (a truncation).
    pub(crate) fn mark_dirty(&mut self, partition: &TopicPartition) {
        self.sim.monitor.mark_dirty(partition);
    }

    /// The newest epoch any transaction coordinator handed `producer_id`.
    pub(crate) fn handed_epoch(&self, producer_id: u64) -> Option<u16> {
        self.sim.monitor.handed_epochs.get(&producer_id).copied()
    }

    /// A transaction coordinator handed `producer_id` `epoch`.
    pub(crate) fn note_handed_epoch(&mut self, producer_id: u64, epoch: u16) {
        let handed = self.sim.monitor.handed_epochs.entry(producer_id).or_default();
        *handed = (*handed).max(epoch);
    }

    /// The monitor: `partition`'s log on this broker lost `records` with
    /// the power.
    pub(crate) fn note_power_loss(&mut self, partition: &TopicPartition, records: Vec<RecordId>) {
        self.sim.monitor.note_power_loss(self.id, partition, records);
    }
}

impl Simulation {
    /// Runs `handle` on broker `id` with its context; `None` for a broker
    /// the cluster does not have. The broker is handed to it by value;
    /// what holds its place meanwhile is a stand-in nothing the context
    /// does reads (the network asks `broker_processes` whether it runs).
    fn with_broker<R>(
        &mut self,
        id: BrokerId,
        handle: impl FnOnce(&mut Broker, &mut BrokerContext<'_>) -> R,
    ) -> Option<R> {
        let mut broker = std::mem::replace(self.brokers.get_mut(&id)?, Broker::new(id));
        let result = handle(&mut broker, &mut BrokerContext { sim: self, id });
        self.brokers.insert(id, broker);
        Some(result)
    }

    /// The `__consumer_offsets` partition a group lives on.
    pub(crate) fn offsets_partition(&self, group: &str) -> TopicPartition {
        let partition = coordinator_partition(group, self.config.offsets_topic_partitions).unwrap_or(0);
        TopicPartition::new(self.offsets_topic.clone(), partition)
    }

    /// The `__transaction_state` partition a transactional id lives on.
    pub(crate) fn txn_partition(&self, transactional_id: &str) -> TopicPartition {
        let partition = coordinator_partition(transactional_id, self.config.transaction_state_partitions).unwrap_or(0);
        TopicPartition::new(self.transaction_topic.clone(), partition)
    }

    /// `partition`'s log on its leader.
    pub(crate) fn leader_log(&self, partition: &TopicPartition) -> Option<&PartitionLog> {
        let leader = self.controller.partitions.get(partition)?.leader?;
        self.brokers.get(&leader)?.logs.get(partition)
    }

    /// Broker `id` (known to exist), for tests that reach behind the
    /// monitor's back.
    #[cfg(test)]
    pub(crate) fn broker(&mut self, id: BrokerId) -> &mut Broker {
        self.brokers.get_mut(&id).expect("known broker")
    }

    /// A broker that was already registered and unfenced when the run
    /// began (the cluster is in a steady state at time 0).
    pub(crate) fn broker_start_registered(&mut self, id: BrokerId, broker_epoch: u64, image: MetadataImage) {
        self.with_broker(id, |broker, context| {
            broker.start_registered(context, broker_epoch, image)
        });
    }

    /// The broker's process dies.
    pub(crate) fn broker_kill(&mut self, id: BrokerId) {
        self.with_broker(id, |broker, context| broker.stop(context, BrokerChange::Killed));
    }

    /// `brokers` lose power at once: a running one's process dies (an
    /// unclean shutdown), and every listed broker's logs lose what was past
    /// their recovery points. The metadata log is not touched: KRaft
    /// flushes it before it acknowledges anything (`KafkaRaftClient`).
    pub(crate) fn broker_power_loss(&mut self, brokers: &[BrokerId]) {
        let mut seen = std::collections::BTreeSet::new();
        for &id in brokers {
            if !self.brokers.contains_key(&id) || !seen.insert(id) {
                continue;
            }
            self.with_broker(id, Broker::lose_power);
        }
        let partitions = self
            .controller
            .partitions
            .iter()
            .map(|(partition, registration)| (partition, registration.replicas.as_slice()));
        self.monitor.note_power_cut(&seen, partitions);
    }

    /// A graceful stop (`kafka-server-stop`); see [`Broker::graceful_stop`].
    pub(crate) fn broker_graceful_stop(&mut self, id: BrokerId) {
        self.with_broker(id, Broker::graceful_stop);
    }

    /// Every connection of a process that dies breaks: its peers see a
    /// disconnect and fail what they had in flight on it (a JoinGroup
    /// waiting for the rebalance, a long-poll fetch, a produce).
    pub(crate) fn close_connections(&mut self, node: NodeId) {
        let mut peers: Vec<NodeId> = self.brokers.keys().map(|&broker| NodeId::Broker(broker)).collect();
        peers.extend(
            self.controller_processes
                .keys()
                .map(|&controller| NodeId::Controller(controller)),
        );
        peers.extend((0..self.producers.len() as u32).map(NodeId::Producer));
        peers.extend((0..self.consumers.len() as u32).map(NodeId::Consumer));
        for peer in peers {
            if peer != node {
                self.connection_reset(node, peer);
            }
        }
    }

    /// A dead broker's process starts again.
    pub(crate) fn broker_restart(&mut self, id: BrokerId) {
        if self
            .brokers
            .get(&id)
            .is_some_and(|broker| broker.status == BrokerStatus::Dead)
        {
            self.with_broker(id, Broker::start);
        }
    }

    /// The broker's process stops for `duration_ms` (a GC pause).
    pub(crate) fn broker_pause(&mut self, id: BrokerId, duration_ms: u64) {
        self.with_broker(id, |broker, context| broker.pause(context, duration_ms));
    }

    /// A broker's timer.
    pub(crate) fn broker_timer(&mut self, id: BrokerId, timer: Timer) {
        self.with_broker(id, |broker, context| broker.timer(context, timer));
    }

    /// A message for a broker.
    pub(crate) fn broker_receive(&mut self, id: BrokerId, from: NodeId, message: Message) {
        self.with_broker(id, |broker, context| broker.receive(context, from, message));
    }
}
