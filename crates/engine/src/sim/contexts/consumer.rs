//! What a consumer's handlers may do beyond their own state, and the
//! simulation's entry points to a consumer: each runs one of its handlers
//! with a [`ConsumerContext`].
//!
//! The consumer stands for its whole application: the handler that works
//! on what it polls, the records that handler fails on, and the producer
//! a consume-transform-produce application writes with (its
//! `outputProducer`, or its dead letter producer). What the application
//! asks of that producer goes through the context, which runs the
//! producer's own handler.

use crate::protocol::{BrokerId, TopicPartition};
use crate::replication::transactions::IsolationLevel;

use super::super::config::{ClusterConfig, ConsumerConfig};
use super::super::consumer::Consumer;
use super::super::ledger::{Duplicates, InProcess};
use super::super::producer::transactions::{SendOffsets, TxnPhase};
use super::super::trace::TraceKind;
use super::super::types::{Message, NodeId, Record, RecordId, Time};
use super::super::{DeadLetterHeaders, Simulation, Timer};

/// What a consumer's handlers may do beyond their own state.
pub(crate) struct ConsumerContext<'a> {
    sim: &'a mut Simulation,
    id: u32,
}

impl ConsumerContext<'_> {
    fn node(&self) -> NodeId {
        NodeId::Consumer(self.id)
    }

    /// The simulated time.
    pub(crate) fn now(&self) -> Time {
        self.sim.now
    }

    /// The cluster's settings.
    pub(crate) fn config(&self) -> &ClusterConfig {
        &self.sim.config
    }

    /// Sends `message` to `broker`.
    pub(crate) fn send(&mut self, broker: BrokerId, message: Message) {
        self.sim.send(self.node(), NodeId::Broker(broker), message);
    }

    /// Sets a timer for this life of the consumer (`incarnation`) that
    /// fires after `delay_ms`.
    pub(crate) fn timer(&mut self, incarnation: u32, delay_ms: Time, timer: Timer) {
        self.sim.schedule_timer(self.node(), incarnation, delay_ms, timer);
    }

    /// Its connection to `broker` breaks (a request timed out, or the
    /// process died with its sockets).
    pub(crate) fn connection_reset(&mut self, broker: BrokerId) {
        self.sim.connection_reset(self.node(), NodeId::Broker(broker));
    }

    /// Records a trace fact.
    pub(crate) fn trace(&mut self, kind: TraceKind) {
        self.sim.record(kind);
    }

    /// Its process starts or stops (the network's view).
    pub(crate) fn set_running(&mut self, running: bool) {
        if let Some(process) = self.sim.consumer_processes.get_mut(self.id as usize) {
            *process = running;
        }
    }

    /// The next number for a member id it picks itself (KIP-1082); member
    /// ids stay unique across every client and coordinator.
    pub(crate) fn next_member_number(&mut self) -> u64 {
        self.sim.member_counter += 1;
        self.sim.member_counter
    }

    /// A monitored invariant is violated (the trace says which).
    pub(crate) fn violation(&mut self) {
        self.sim.monitor.violations += 1;
    }

    /// The monitor's check of what a `read_committed` poll returned from
    /// `from`'s log of `partition`.
    pub(crate) fn check_read_committed(&mut self, from: NodeId, partition: &TopicPartition, returned: &[Record]) {
        self.sim.check_read_committed(self.id, from, partition, returned);
    }

    /// Whether the application's handler fails on this record (a
    /// `PoisonRecords` rule matches it).
    pub(crate) fn is_poison(&self, record: &InProcess) -> bool {
        let sim = &*self.sim;
        if sim.poison.is_empty() {
            return false;
        }
        let key = sim
            .records
            .get(record.record as usize)
            .and_then(|made| made.key.as_deref());
        sim.poison.iter().any(|rule| {
            *rule.topic == *record.partition.topic
                && rule.key.as_deref().is_none_or(|poison_key| Some(poison_key) == key)
                && rule
                    .partition
                    .is_none_or(|partition| partition == record.partition.partition)
                && rule.offset.is_none_or(|offset| offset == record.offset)
        })
    }

    /// The handler (this consumer's `incarnation`) finished these records
    /// of `group`: the ledger notes them and returns the duplicates.
    pub(crate) fn processed(
        &mut self,
        group: &str,
        incarnation: u32,
        idempotent: bool,
        records: &[InProcess],
    ) -> Duplicates {
        let me = self.id;
        let lives: Vec<u32> = self.sim.consumers.iter().map(|consumer| consumer.incarnation).collect();
        self.sim
            .ledger
            .process(group, me, incarnation, idempotent, records, |who, life| {
                let now = if who == me {
                    Some(incarnation)
                } else {
                    lives.get(who as usize).copied()
                };
                now.is_some_and(|now| now != life)
            })
    }

    /// The handler sent these records of `group` to the dead letter queue.
    pub(crate) fn dead_letter(&mut self, group: &str, records: &[RecordId]) {
        self.sim.ledger.dead_letter(group, records);
    }

    /// The handler gave up on these records of `group` (it stopped).
    pub(crate) fn abandon(&mut self, group: &str, records: &[RecordId]) {
        self.sim.ledger.abandon(group, records);
    }

    /// Whether Jepsen's checks read a poll at `isolation`: unless a
    /// `read_uncommitted` consumer may see what a transaction later aborts.
    pub(crate) fn jepsen_judges(&self, isolation: IsolationLevel) -> bool {
        self.sim.jepsen.is_some()
            && (isolation == IsolationLevel::ReadCommitted
                || self
                    .sim
                    .producers
                    .iter()
                    .all(|producer| producer.config.transactional_id.is_none()))
    }

    /// A poll returned these records (partition, offset, record): Jepsen's
    /// history.
    pub(crate) fn jepsen_poll(&mut self, polled: Vec<(TopicPartition, crate::protocol::Offset, RecordId)>) {
        let (next_id, now) = (self.sim.next_trace_id(), self.sim.now);
        if let Some(recorder) = self.sim.jepsen.as_deref_mut() {
            recorder.poll(self.id, polled, next_id, now);
        }
    }

    /// Whether the application's `producer` was fenced (a newer instance
    /// owns its transactional id).
    pub(crate) fn producer_fenced(&self, producer: u32) -> bool {
        self.sim
            .producers
            .get(producer as usize)
            .and_then(|state| state.txn.as_ref())
            .is_some_and(|txn| txn.phase == TxnPhase::Fenced)
    }

    /// The topic the application's `producer` writes to.
    pub(crate) fn producer_topic(&self, producer: u32) -> String {
        self.sim
            .producers
            .get(producer as usize)
            .map(|state| state.config.topic.clone())
            .unwrap_or_default()
    }

    /// The application's `producer` dies with it.
    pub(crate) fn producer_crash(&mut self, producer: u32) {
        self.sim.producer_crash(producer);
    }

    /// The application's `producer` starts again with it.
    pub(crate) fn producer_revive(&mut self, producer: u32) {
        self.sim.producer_revive(producer);
    }

    /// The handler writes one output record made from record `source`
    /// (same key and size) with `producer`.
    pub(crate) fn producer_send_derived(&mut self, producer: u32, source: RecordId) {
        let (key, bytes) = match self.sim.records.get(source as usize) {
            Some(record) => (record.key.as_ref().map(|key| key.to_string()), record.bytes),
            None => (None, 100),
        };
        self.sim.producer_send_derived(producer, source, key, bytes);
    }

    /// The handler sends record `source` to the dead letter queue with
    /// `producer`; returns the dead letter's id.
    pub(crate) fn producer_send_dead_letter(
        &mut self,
        producer: u32,
        source: RecordId,
        headers: DeadLetterHeaders,
    ) -> Option<RecordId> {
        self.sim.producer_send_dead_letter(producer, source, headers)
    }

    /// `sendOffsetsToTransaction(offsets, groupMetadata)` on `producer`.
    pub(crate) fn producer_send_offsets(&mut self, producer: u32, offsets: SendOffsets) {
        self.sim.producer_send_offsets(producer, offsets);
    }

    /// `commitTransaction()` (or `abortTransaction()`) on `producer`.
    pub(crate) fn producer_end_transaction(&mut self, producer: u32, commit: bool) {
        self.sim.producer_end_transaction(producer, commit);
    }
}

impl Simulation {
    /// Runs `handle` on consumer `id` with its context; `None` for a
    /// consumer the cluster does not have. The consumer is handed to it
    /// by value; what holds its place meanwhile is a stand-in nothing the
    /// context does reads (the network asks `consumer_processes` whether
    /// it runs, and the ledger gets its incarnation from the handler).
    fn with_consumer<R>(
        &mut self,
        id: u32,
        handle: impl FnOnce(&mut Consumer, &mut ConsumerContext<'_>) -> R,
    ) -> Option<R> {
        let index = id as usize;
        let stand_in = Consumer::stand_in(id);
        let mut consumer = std::mem::replace(self.consumers.get_mut(index)?, stand_in);
        let result = handle(&mut consumer, &mut ConsumerContext { sim: self, id });
        self.consumers[index] = consumer;
        Some(result)
    }

    /// The consumers.
    pub fn consumers(&self) -> &[Consumer] {
        &self.consumers
    }

    /// A consumer from the configuration joins the run (not started).
    pub(crate) fn consumer_push(&mut self, config: ConsumerConfig) {
        let id = self.consumers.len() as u32;
        self.consumers.push(Consumer::new(id, config));
        self.consumer_processes.push(false);
    }

    /// A consumer that was not in the configuration starts. It takes the
    /// next index; one the cluster would refuse is ignored (drivers check
    /// with [`ClusterConfig::validate_consumer`] first).
    pub(crate) fn consumer_add(&mut self, config: ConsumerConfig) {
        if self.config.validate_consumer(&config).is_err() || self.consumers.len() >= crate::limits::MAX_CONSUMERS {
            return;
        }
        let id = self.consumers.len() as u32;
        self.config.consumers.push(config.clone());
        self.consumer_push(config);
        self.consumer_start(id);
    }

    /// A consumer's `client.id`: as configured, else `consumer-N`.
    pub(crate) fn consumer_client_id(&self, id: u32) -> String {
        self.consumers
            .get(id as usize)
            .and_then(|consumer| consumer.config.client_id.clone())
            .unwrap_or_else(|| format!("consumer-{id}"))
    }

    /// Applies a live change to a consumer's settings.
    pub(crate) fn consumer_config_change(&mut self, id: u32, change: impl Fn(&mut ConsumerConfig)) {
        if let Some(consumer) = self.consumers.get_mut(id as usize) {
            change(&mut consumer.config);
        }
        if let Some(config) = self.config.consumers.get_mut(id as usize) {
            change(config);
        }
    }

    /// Until when a consumer's process is paused, if it is now.
    pub(crate) fn consumer_paused_until(&self, id: u32) -> Option<u64> {
        self.consumers
            .get(id as usize)
            .and_then(|consumer| consumer.paused_until)
            .filter(|until| *until > self.now)
    }

    /// The consumer's process (and its application) starts.
    pub(crate) fn consumer_start(&mut self, id: u32) {
        self.with_consumer(id, Consumer::start);
    }

    /// The consumer closes (`clean`) or its process dies.
    pub(crate) fn consumer_stop(&mut self, id: u32, clean: bool) {
        self.with_consumer(id, |consumer, context| consumer.stop(context, clean));
    }

    /// The consumer's process stops for `duration_ms` (a GC pause).
    pub(crate) fn consumer_pause(&mut self, id: u32, duration_ms: u64) {
        self.with_consumer(id, |consumer, context| consumer.pause(context, duration_ms));
    }

    /// A message for a consumer.
    pub(crate) fn consumer_receive(&mut self, id: u32, from: NodeId, message: Message) {
        self.with_consumer(id, |consumer, context| consumer.receive(context, from, message));
    }

    /// A consumer's timer (set in life `incarnation`).
    pub(crate) fn consumer_timer(&mut self, id: u32, incarnation: u32, timer: Timer) {
        self.with_consumer(id, |consumer, context| consumer.timer(context, incarnation, timer));
    }

    /// `producer` told its application that its transaction ended (or
    /// that a fatal error stopped it): the running consumer whose
    /// application writes with it hears of it.
    pub(crate) fn consumer_output_transaction_ended(&mut self, producer: u32, outcome: Option<bool>) {
        let Some(id) = self
            .consumers
            .iter()
            .position(|consumer| consumer.writes_with(producer))
        else {
            return;
        };
        self.with_consumer(id as u32, |consumer, context| {
            consumer.output_transaction_ended(context, outcome)
        });
    }
}
