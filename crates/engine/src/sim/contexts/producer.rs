//! The simulation's entry points to a producer: each runs one of its
//! handlers with a [`ProducerContext`].

use super::super::producer::transactions::SendOffsets;
use super::super::producer::Producer;
use super::super::types::{Message, NodeId, RecordId};
use super::super::{DeadLetterHeaders, Simulation, Timer};
use super::ProducerContext;

impl Simulation {
    /// Runs `handle` on producer `id` with its context; `None` for a
    /// producer the cluster does not have. What it told its application
    /// waits in `told_apps` and is handed over once the event's handler
    /// returns ([`Simulation::hand_over_told_apps`]), as Kafka's
    /// application thread hears of what the sender did after the sender's
    /// own work (a fatal error in the middle of a produce answer: every
    /// batch of the answer fails first, then the application stops). A
    /// producer's handler that its consumer's application ran (a commit)
    /// so never runs that consumer's handler inside its own.
    fn with_producer<R>(
        &mut self,
        id: u32,
        handle: impl FnOnce(&mut Producer, &mut ProducerContext<'_>) -> R,
    ) -> Option<R> {
        let index = id as usize;
        let stand_in = self.producers.get(index)?.stand_in();
        let mut producer = std::mem::replace(&mut self.producers[index], stand_in);
        let mut context = ProducerContext {
            sim: self,
            id,
            told_app: Vec::new(),
        };
        let result = handle(&mut producer, &mut context);
        let told_app = std::mem::take(&mut context.told_app);
        self.producers[index] = producer;
        self.told_apps.extend(told_app.into_iter().map(|outcome| (id, outcome)));
        Some(result)
    }

    /// Hands what producers told their applications during the event to
    /// the consumer applications that own them, in order (what that
    /// does may tell more).
    pub(crate) fn hand_over_told_apps(&mut self) {
        while let Some((producer, outcome)) = self.told_apps.pop_front() {
            self.consumer_output_transaction_ended(producer, outcome);
        }
    }

    /// A producer's `client.id`: as configured, else `producer-N`.
    pub(crate) fn producer_client_id(&self, producer: u32) -> String {
        self.producers
            .get(producer as usize)
            .and_then(|state| state.config.client_id.clone())
            .unwrap_or_else(|| format!("producer-{producer}"))
    }

    /// The `Produce` input: records enter the producer.
    pub(crate) fn producer_send(&mut self, producer: u32, key: Option<String>, count: u32, bytes: u32) {
        self.with_producer(producer, |state, context| state.send(context, key, count, bytes, false));
    }

    /// The `ProduceTombstone` input: one record with a null value.
    pub(crate) fn producer_send_tombstone(&mut self, producer: u32, key: String) {
        self.with_producer(producer, |state, context| state.send(context, Some(key), 1, 0, true));
    }

    /// One output record of a consume-transform-produce handler, made
    /// from record `source` (same key and size).
    pub(crate) fn producer_send_derived(&mut self, producer: u32, source: RecordId, key: Option<String>, bytes: u32) {
        let made = self.with_producer(producer, |state, context| state.send_one(context, key, bytes));
        if let Some(Some(made)) = made {
            self.records[made as usize].source = Some(source);
        }
    }

    /// A dead letter: record `source` again (same key and size) with
    /// headers saying where it came from and why; returns its id.
    pub(crate) fn producer_send_dead_letter(
        &mut self,
        producer: u32,
        source: RecordId,
        headers: DeadLetterHeaders,
    ) -> Option<RecordId> {
        let (key, bytes) = match self.records.get(source as usize) {
            Some(record) => (record.key.as_ref().map(|key| key.to_string()), record.bytes),
            None => (None, 100),
        };
        let made = self
            .with_producer(producer, |state, context| state.send_one(context, key, bytes))
            .flatten()?;
        self.records[made as usize].dead_letter = Some(std::rc::Rc::new(headers));
        Some(made)
    }

    /// The producer's process dies (with its app); see [`Producer::crash`].
    pub(crate) fn producer_crash(&mut self, producer: u32) {
        self.with_producer(producer, Producer::crash);
    }

    /// A crashed producer's process starts again, as a new instance.
    pub(crate) fn producer_revive(&mut self, producer: u32) {
        self.with_producer(producer, Producer::revive);
    }

    /// `enable.idempotence` switched mid-run.
    pub(crate) fn producer_set_idempotence(&mut self, producer: u32, enable: bool) {
        self.with_producer(producer, |state, context| state.set_idempotence(context, enable));
    }

    /// A message for a producer.
    pub(crate) fn producer_receive(&mut self, producer: u32, from: NodeId, message: Message) {
        self.with_producer(producer, |state, context| state.receive(context, from, message));
    }

    /// A producer's timer.
    pub(crate) fn producer_timer(&mut self, producer: u32, timer: Timer) {
        self.with_producer(producer, |state, context| state.timer(context, timer));
    }

    /// The `commitTransaction` / `abortTransaction` inputs.
    pub(crate) fn producer_end_transaction(&mut self, producer: u32, commit: bool) {
        self.with_producer(producer, |state, context| state.end_transaction(context, commit));
    }

    /// `sendOffsetsToTransaction(offsets, groupMetadata)`.
    pub(crate) fn producer_send_offsets(&mut self, producer: u32, offsets: SendOffsets) {
        self.with_producer(producer, |state, context| state.send_offsets(context, offsets));
    }
}
