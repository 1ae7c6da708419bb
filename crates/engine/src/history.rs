//! Jepsen's checks of a Kafka history: what producers sent and consumers
//! polled, judged against the order the logs give every value.
//!
//! Jepsen's Kafka test (`jepsen.tests.kafka`, used in its analyses of
//! Redpanda in 2022 and of Bufstream in 2024, whose transaction finding was
//! reproduced on Kafka itself as KAFKA-17754) records every send and every
//! poll with their outcomes, rebuilds each partition's *version order* (which
//! value sits at which offset) from everything observed, and names the
//! anomalies it finds. This module is those checks over a history of plain
//! values, with no dependence on the simulator: the simulator (or a test)
//! builds the [`History`], [`check`] returns the [`Finding`]s, and the text
//! comes from `Display` in one place.
//!
//! Offsets in Kafka have gaps (transaction markers, aborted records under
//! `read_committed`, compaction), so "next" and "skipped" are measured in the
//! version order of values a reader could see, never by offset arithmetic.

use crate::sorting::Gather;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::protocol::{Offset, TopicPartition};

/// A value written to Kafka: unique per send (the simulator uses its record
/// id), so a value names one send.
pub type Value = u64;

/// A process of the history: a producer or a consumer, by index.
pub type Process = u32;

/// What a send's caller learned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Acknowledged, at this offset.
    Ok {
        /// Where the log put it.
        offset: Offset,
    },
    /// Definitely not written (an error Kafka guarantees was not applied,
    /// such as `NOT_ENOUGH_REPLICAS` before the append).
    Failed,
    /// Unknown: a timeout or a lost response. It may or may not be in the
    /// log; Jepsen calls it indeterminate, and so must a checker.
    Indeterminate,
}

/// How a transaction ended, as far as its producer learned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// `commitTransaction()` returned.
    Committed,
    /// Aborted: `abortTransaction()` returned, or the producer died or was
    /// fenced before it asked to commit (its next instance, or the
    /// coordinator's timeout, aborts what it left open).
    Aborted,
    /// Unknown: the producer asked to commit (its `EndTxn` was sent) and
    /// never learned the answer, because it crashed or was fenced first. The
    /// coordinator may have written `PrepareCommit`, which any later
    /// coordinator completes. Jepsen records such an operation as `:info`:
    /// its values may or may not be visible, so reading them is no aborted
    /// read and missing them is no lost write.
    Indeterminate,
}

/// One operation, in the order the history was recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// A producer sent `value` to `partition`.
    Send {
        /// The producer.
        process: Process,
        /// Where to.
        partition: TopicPartition,
        /// What.
        value: Value,
        /// What the producer learned.
        outcome: Outcome,
        /// The producer's transaction, if it was in one (numbered by the
        /// history; [`Op::EndTransaction`] closes it).
        transaction: Option<u64>,
    },
    /// A consumer's poll returned these records, in the order returned.
    Poll {
        /// The consumer.
        process: Process,
        /// (partition, offset, value) for each record.
        records: Vec<(TopicPartition, Offset, Value)>,
    },
    /// A consumer's position moved for a reason Kafka allows (a rebalance
    /// gave it partitions, it was reset or sought): the next read of those
    /// partitions may start anywhere.
    Reposition {
        /// The consumer.
        process: Process,
        /// The partitions whose position moved.
        partitions: Vec<TopicPartition>,
    },
    /// A transaction ended.
    EndTransaction {
        /// Its number, as the sends name it.
        transaction: u64,
        /// Committed, aborted, or unknown.
        ending: Ending,
    },
}

/// A history: the operations in the order they happened.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct History {
    /// The operations.
    pub ops: Vec<Op>,
}

/// Jepsen's anomaly classes for Kafka, by the names its checker prints.
/// The last two are what Kafka's design allows ([`AnomalyKind::allowed`]
/// says why); Jepsen reports them and does not count them against Kafka.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub enum AnomalyKind {
    /// Two different values observed at one offset of a partition
    /// (`:inconsistent-offsets`).
    InconsistentOffsets,
    /// One value at more than one offset (`:duplicate`): written twice.
    Duplicate,
    /// An acknowledged write no poll saw, though polls saw a later value
    /// of its partition (`:lost-write`).
    LostWrite,
    /// An acknowledged write no poll saw, and none read past it
    /// (`:unseen`): not lost yet, but never delivered by the end.
    Unseen,
    /// A poll returned a value whose send failed or whose transaction
    /// aborted (G1a, `:aborted-read`).
    AbortedRead,
    /// A committed transaction seen in part: a consumer read one of its
    /// values in a partition and went past the rest without them.
    TornTransaction,
    /// A producer's acknowledged sends to one partition got offsets that do
    /// not increase (`:nonmonotonic-send`).
    NonMonotonicSend,
    /// A consumer read a partition at an offset not after its previous read,
    /// with no rebalance or seek between (`:nonmonotonic-poll`).
    NonMonotonicPoll,
    /// A consumer's next read of a partition jumped over values a reader
    /// could see, with no rebalance or seek between (`:poll-skip`).
    PollSkip,
    /// Committed transactions each ordered before the other by the logs'
    /// write order (G0, which Elle finds in Jepsen's test): allowed.
    WriteCycle,
    /// One transaction's sends to a partition with another value between
    /// them (`:int-send-skip`): allowed.
    InterleavedSends,
    /// A duplicate an idempotent producer wrote once under each of two
    /// producer epochs (KIP-360): allowed. [`check`] reports every
    /// duplicate as [`AnomalyKind::Duplicate`]; a driver that knows the
    /// epochs (the simulator's verdict) names these.
    EpochBumpDuplicate,
    /// A non-monotonic send whose out-of-place batch a partition leader
    /// appended with no state for its producer, so without checking its
    /// sequence number: allowed. [`check`] reports it as
    /// [`AnomalyKind::NonMonotonicSend`]; a driver that knows which
    /// batches went unchecked (the simulator's verdict) names these.
    UncheckedSequence,
}

impl AnomalyKind {
    /// Jepsen's name for the class.
    pub fn name(self) -> &'static str {
        match self {
            AnomalyKind::InconsistentOffsets => "inconsistent offsets",
            AnomalyKind::Duplicate => "duplicate",
            AnomalyKind::LostWrite => "lost write",
            AnomalyKind::Unseen => "unseen",
            AnomalyKind::AbortedRead => "aborted read (G1a)",
            AnomalyKind::TornTransaction => "torn transaction",
            AnomalyKind::NonMonotonicSend => "non-monotonic send",
            AnomalyKind::NonMonotonicPoll => "non-monotonic poll",
            AnomalyKind::PollSkip => "poll skip",
            AnomalyKind::WriteCycle => "write cycle (G0)",
            AnomalyKind::InterleavedSends => "interleaved sends",
            AnomalyKind::EpochBumpDuplicate => "duplicate across an epoch bump",
            AnomalyKind::UncheckedSequence => "non-monotonic send with no producer state",
        }
    }

    /// What the class means, in a sentence for a learner.
    pub fn meaning(self) -> &'static str {
        match self {
            AnomalyKind::InconsistentOffsets => "Two different records were seen at the same offset of a partition.",
            AnomalyKind::Duplicate => "One record was written to the log twice, at two offsets.",
            AnomalyKind::LostWrite => {
                "An acknowledged record was never read, although consumers read past its offset: the log lost it."
            }
            AnomalyKind::Unseen => "An acknowledged record no consumer has read, and none has read past it yet.",
            AnomalyKind::AbortedRead => {
                "A consumer read a record whose send failed or whose transaction aborted, which should never be visible."
            }
            AnomalyKind::TornTransaction => {
                "A consumer read part of a committed transaction in a partition and went past the rest of it."
            }
            AnomalyKind::NonMonotonicSend => {
                "A producer's acknowledged records to one partition got offsets that do not increase in the order it sent them."
            }
            AnomalyKind::NonMonotonicPoll => {
                "A consumer read a partition at an offset not after the one it read before, with no rebalance or seek between."
            }
            AnomalyKind::PollSkip => {
                "A consumer's next read of a partition jumped over records it could have read, with no rebalance or seek between."
            }
            AnomalyKind::WriteCycle => {
                "Two committed transactions are each ordered before the other by the logs: one's record comes first in one place, the other's in another (another partition, or further along the same one)."
            }
            AnomalyKind::InterleavedSends => {
                "Another producer's record landed between two records one transaction sent to the same partition."
            }
            AnomalyKind::EpochBumpDuplicate => {
                "An idempotent producer's record was written twice, once under each of two producer epochs."
            }
            AnomalyKind::UncheckedSequence => {
                "An idempotent producer's later batch was written to a partition before its earlier ones, by a leader that knew nothing of the producer yet."
            }
        }
    }

    /// Why Kafka's design allows the class, for those it does (`None`:
    /// the class is an anomaly).
    pub fn allowed(self) -> Option<&'static str> {
        match self {
            AnomalyKind::WriteCycle => Some(
                "Kafka's transactions are atomic (all or none of a transaction's records become visible) but do not isolate concurrent writers: no lock orders two transactions across partitions, so Jepsen lists write cycles among what Kafka allows (its Redpanda analysis, 2022).",
            ),
            AnomalyKind::InterleavedSends => Some(
                "A transaction does not own a partition while it is open: other producers' batches append between its batches, and read_committed readers still see the transaction whole or not at all (Jepsen's int-send-skip, allowed for Kafka).",
            ),
            AnomalyKind::EpochBumpDuplicate => Some(
                "An idempotent producer removes duplicates within one producer epoch. After its epoch is bumped (KIP-360) it sends again, under new sequence numbers, batches whose first outcome it never learned, and a leader that had written them writes them again: Kafka's idempotence promises no more than that.",
            ),
            AnomalyKind::UncheckedSequence => Some(
                "A partition leader with no state for a producer (its first write there, or after its state expired or its records were deleted) accepts a batch at any sequence number (ProducerAppendInfo#checkSequence). When the producer's first batches are refused before the append (NOT_ENOUGH_REPLICAS) and a later one, already in flight, is taken, the earlier ones are then refused as OUT_OF_ORDER_SEQUENCE_NUMBER until they expire at delivery.timeout.ms or are sent again after an epoch bump, behind it. Idempotence orders a producer's batches only once the leader knows the producer.",
            ),
            _ => None,
        }
    }
}

/// One anomaly: its class, where, the values involved and the operation
/// (by index in [`History::ops`]) that showed it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Finding {
    /// The class.
    pub kind: AnomalyKind,
    /// The partition.
    pub partition: TopicPartition,
    /// The values involved (the lost, skipped or duplicated ones).
    pub values: Vec<Value>,
    /// The operation that showed it, when one did.
    pub op: Option<usize>,
}

impl fmt::Display for Finding {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let values: Vec<String> = self.values.iter().map(ToString::to_string).collect();
        write!(
            formatter,
            "{} on {}: value{} {}",
            self.kind.name(),
            self.partition,
            if self.values.len() == 1 { "" } else { "s" },
            values.join(", ")
        )?;
        if let Some(op) = self.op {
            write!(formatter, " (operation {op})")?;
        }
        Ok(())
    }
}

/// What the history says about each value and each partition.
#[derive(Default)]
struct Facts {
    /// Each partition's observed offsets and the values seen there.
    observed: BTreeMap<TopicPartition, BTreeMap<Offset, BTreeSet<Value>>>,
    /// Every value's sends: (partition, outcome, transaction, op index).
    sent: BTreeMap<Value, (TopicPartition, Outcome, Option<u64>, usize)>,
    /// Transactions' ends.
    ended: BTreeMap<u64, Ending>,
    /// Values some poll returned.
    read: BTreeSet<Value>,
}

impl Facts {
    /// `value` seen at `offset` of `partition` (by an acknowledgement or a poll).
    fn observe(&mut self, partition: &TopicPartition, offset: Offset, value: Value) {
        self.observed
            .entry(partition.clone())
            .or_default()
            .entry(offset)
            .or_default()
            .insert(value);
    }

    fn of(history: &History) -> Facts {
        let mut facts = Facts::default();
        for (index, op) in history.ops.iter().enumerate() {
            match op {
                Op::Send {
                    partition,
                    value,
                    outcome,
                    transaction,
                    ..
                } => {
                    if let Outcome::Ok { offset } = outcome {
                        facts.observe(partition, *offset, *value);
                    }
                    facts
                        .sent
                        .insert(*value, (partition.clone(), *outcome, *transaction, index));
                }
                Op::Poll { records, .. } => {
                    for (partition, offset, value) in records {
                        facts.observe(partition, *offset, *value);
                        facts.read.insert(*value);
                    }
                }
                Op::EndTransaction { transaction, ending } => {
                    facts.ended.insert(*transaction, *ending);
                }
                Op::Reposition { .. } => {}
            }
        }
        facts
    }

    /// Whether a reader may see `value`: not from a failed send or an
    /// aborted (or never committed) transaction; perhaps, from a
    /// transaction whose end its producer never learned.
    fn visibility(&self, value: Value) -> Visibility {
        match self.sent.get(&value) {
            Some((_, Outcome::Failed, _, _)) => Visibility::Hidden,
            Some((_, _, Some(transaction), _)) => match self.ended.get(transaction) {
                Some(Ending::Committed) => Visibility::Visible,
                Some(Ending::Indeterminate) => Visibility::Perhaps,
                Some(Ending::Aborted) | None => Visibility::Hidden,
            },
            _ => Visibility::Visible,
        }
    }

    /// The offsets of `partition` holding a value a reader may see, in order:
    /// the version order a consumer walks. A value whose visibility is
    /// unknown counts once some poll returned it (it was visible then).
    fn readable_offsets(&self, partition: &TopicPartition) -> Vec<Offset> {
        self.observed.get(partition).map_or_else(Vec::new, |offsets| {
            offsets
                .iter()
                .filter(|(_, values)| {
                    values.iter().any(|value| match self.visibility(*value) {
                        Visibility::Visible => true,
                        Visibility::Perhaps => self.read.contains(value),
                        Visibility::Hidden => false,
                    })
                })
                .map(|(offset, _)| *offset)
                .collect()
        })
    }
}

/// Whether readers may see a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Visibility {
    /// Acknowledged outside a transaction, or committed.
    Visible,
    /// Failed, or in an aborted transaction.
    Hidden,
    /// In a transaction whose end is [`Ending::Indeterminate`].
    Perhaps,
}

/// Every anomaly in `history`, sorted by class, partition and values.
pub fn check(history: &History) -> Vec<Finding> {
    let facts = Facts::of(history);
    let mut findings = Vec::new();
    check_offsets(&facts, &mut findings);
    check_writes(&facts, &mut findings);
    check_reads(history, &facts, &mut findings);
    check_sends(history, &mut findings);
    check_interleaving(&facts, &mut findings);
    check_cycles(&facts, &mut findings);
    crate::sorting::sort(&mut findings);
    findings.dedup();
    findings
}

/// Inconsistent offsets and duplicates, from the version order.
fn check_offsets(facts: &Facts, findings: &mut Vec<Finding>) {
    let mut offsets_of: BTreeMap<(TopicPartition, Value), BTreeSet<Offset>> = BTreeMap::new();
    for (partition, offsets) in &facts.observed {
        for (offset, values) in offsets {
            if values.len() > 1 {
                findings.push(Finding {
                    kind: AnomalyKind::InconsistentOffsets,
                    partition: partition.clone(),
                    values: values.iter().copied().collect(),
                    op: values.iter().find_map(|value| facts.sent.get(value).map(|sent| sent.3)),
                });
            }
            for value in values {
                offsets_of
                    .entry((partition.clone(), *value))
                    .or_default()
                    .insert(*offset);
            }
        }
    }
    for ((partition, value), offsets) in offsets_of {
        if offsets.len() > 1 {
            findings.push(Finding {
                kind: AnomalyKind::Duplicate,
                partition,
                values: vec![value],
                op: facts.sent.get(&value).map(|sent| sent.3),
            });
        }
    }
}

/// Lost and unseen writes: acknowledged, visible, never read.
fn check_writes(facts: &Facts, findings: &mut Vec<Finding>) {
    for (value, (partition, outcome, _, index)) in &facts.sent {
        let Outcome::Ok { offset } = outcome else { continue };
        if facts.read.contains(value) || facts.visibility(*value) != Visibility::Visible {
            continue;
        }
        let read_past = facts.observed.get(partition).is_some_and(|offsets| {
            offsets
                .range(offset + 1..)
                .any(|(_, values)| values.iter().any(|later| facts.read.contains(later)))
        });
        findings.push(Finding {
            kind: if read_past {
                AnomalyKind::LostWrite
            } else {
                AnomalyKind::Unseen
            },
            partition: partition.clone(),
            values: vec![*value],
            op: Some(*index),
        });
    }
}

/// Aborted reads, and each consumer's walk through each partition:
/// non-monotonic polls, skips and torn transactions.
fn check_reads(history: &History, facts: &Facts, findings: &mut Vec<Finding>) {
    let mut last: BTreeMap<(Process, TopicPartition), Offset> = BTreeMap::new();
    let mut orders: BTreeMap<TopicPartition, Vec<Offset>> = BTreeMap::new();
    for (index, op) in history.ops.iter().enumerate() {
        match op {
            Op::Reposition { process, partitions } => {
                for partition in partitions {
                    last.remove(&(*process, partition.clone()));
                }
            }
            Op::Poll { process, records } => {
                for (partition, offset, value) in records {
                    if facts.visibility(*value) == Visibility::Hidden {
                        findings.push(Finding {
                            kind: AnomalyKind::AbortedRead,
                            partition: partition.clone(),
                            values: vec![*value],
                            op: Some(index),
                        });
                    }
                    let key = (*process, partition.clone());
                    if let Some(previous) = last.get(&key).copied() {
                        if *offset <= previous {
                            findings.push(Finding {
                                kind: AnomalyKind::NonMonotonicPoll,
                                partition: partition.clone(),
                                values: vec![*value],
                                op: Some(index),
                            });
                        } else {
                            let order = orders
                                .entry(partition.clone())
                                .or_insert_with(|| facts.readable_offsets(partition));
                            let skipped: Vec<Offset> = order
                                .iter()
                                .copied()
                                .filter(|between| previous < *between && *between < *offset)
                                .collect();
                            if !skipped.is_empty() {
                                findings.push(skip_finding(facts, partition, previous, &skipped, *value, index));
                            }
                        }
                    }
                    last.insert(key, *offset);
                }
            }
            Op::Send { .. } | Op::EndTransaction { .. } => {}
        }
    }
}

/// A skip over `skipped` offsets of `partition` between a read at
/// `previous` and one of `value`: a torn transaction when the skipped values
/// share a committed transaction with the value read before or after.
fn skip_finding(
    facts: &Facts,
    partition: &TopicPartition,
    previous: Offset,
    skipped: &[Offset],
    value: Value,
    index: usize,
) -> Finding {
    let values_at = |offset: &Offset| -> Vec<Value> {
        facts
            .observed
            .get(partition)
            .and_then(|offsets| offsets.get(offset))
            .map_or_else(Vec::new, |values| values.iter().copied().collect())
    };
    let skipped_values: Vec<Value> = skipped.iter().flat_map(&values_at).collect();
    let transaction_of = |value: &Value| facts.sent.get(value).and_then(|(_, _, transaction, _)| *transaction);
    let neighbours: BTreeSet<u64> = values_at(&previous)
        .iter()
        .chain(std::iter::once(&value))
        .filter_map(&transaction_of)
        .gather();
    let torn = skipped_values
        .iter()
        .filter_map(&transaction_of)
        .any(|transaction| neighbours.contains(&transaction));
    Finding {
        kind: if torn {
            AnomalyKind::TornTransaction
        } else {
            AnomalyKind::PollSkip
        },
        partition: partition.clone(),
        values: skipped_values,
        op: Some(index),
    }
}

/// Each producer's acknowledged offsets per partition must increase.
fn check_sends(history: &History, findings: &mut Vec<Finding>) {
    let mut last: BTreeMap<(Process, TopicPartition), Offset> = BTreeMap::new();
    for (index, op) in history.ops.iter().enumerate() {
        let Op::Send {
            process,
            partition,
            value,
            outcome: Outcome::Ok { offset },
            ..
        } = op
        else {
            continue;
        };
        let key = (*process, partition.clone());
        if last.get(&key).is_some_and(|previous| offset <= previous) {
            findings.push(Finding {
                kind: AnomalyKind::NonMonotonicSend,
                partition: partition.clone(),
                values: vec![*value],
                op: Some(index),
            });
        }
        last.insert(key, *offset);
    }
}

/// Each committed transaction's values in each partition, in offset order.
fn transaction_values(facts: &Facts) -> BTreeMap<(u64, TopicPartition), Vec<(Offset, Value)>> {
    let mut values: BTreeMap<(u64, TopicPartition), Vec<(Offset, Value)>> = BTreeMap::new();
    for (partition, offsets) in &facts.observed {
        for (offset, at) in offsets {
            for value in at {
                if let Some((_, _, Some(transaction), _)) = facts.sent.get(value) {
                    if facts.ended.get(transaction) == Some(&Ending::Committed) {
                        values
                            .entry((*transaction, partition.clone()))
                            .or_default()
                            .push((*offset, *value));
                    }
                }
            }
        }
    }
    values
}

/// Interleaved sends (`:int-send-skip`): a committed transaction's values in
/// a partition with some other value observed between two of them.
fn check_interleaving(facts: &Facts, findings: &mut Vec<Finding>) {
    for ((transaction, partition), values) in transaction_values(facts) {
        let (Some((first, _)), Some((last, _))) = (values.first(), values.last()) else {
            continue;
        };
        let Some(offsets) = facts.observed.get(&partition) else {
            continue;
        };
        let between: Vec<Value> = offsets
            .range(first..=last)
            .flat_map(|(_, at)| at.iter().copied())
            .filter(|value| facts.sent.get(value).is_none_or(|sent| sent.2 != Some(transaction)))
            .collect();
        if !between.is_empty() {
            let mut involved: Vec<Value> = values.iter().map(|(_, value)| *value).collect();
            involved.extend(between);
            crate::sorting::sort_u64(&mut involved);
            findings.push(Finding {
                kind: AnomalyKind::InterleavedSends,
                partition,
                op: values
                    .last()
                    .and_then(|(_, value)| facts.sent.get(value))
                    .map(|sent| sent.3),
                values: involved,
            });
        }
    }
}

/// Write cycles (G0): committed transactions ordered one way and the other.
/// As in Jepsen's checker (Elle's write-write dependencies), each value of a
/// partition depends on the value before it in the version order, so a
/// transaction whose values have another's between them (interleaved sends)
/// is in a cycle too, as are two transactions ordered one way in one
/// partition and the other way in another. A cycle is a strongly connected
/// set of two or more transactions: one finding each.
fn check_cycles(facts: &Facts, findings: &mut Vec<Finding>) {
    let values = transaction_values(facts);
    // Each partition's committed transactional values in offset order.
    let mut orders: BTreeMap<TopicPartition, Vec<(Offset, u64)>> = BTreeMap::new();
    for ((transaction, partition), at) in &values {
        let order = orders.entry(partition.clone()).or_default();
        order.extend(at.iter().map(|(offset, _)| (*offset, *transaction)));
    }
    let mut edges: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
    for order in orders.values_mut() {
        crate::sorting::sort(order);
        for pair in order.windows(2) {
            if pair[0].1 != pair[1].1 {
                edges.entry(pair[0].1).or_default().insert(pair[1].1);
            }
        }
    }
    for component in strongly_connected(&edges) {
        if component.len() < 2 {
            continue;
        }
        // Where two of them are ordered, and a value of each.
        let partition = orders
            .iter()
            .find(|(_, order)| {
                let present: BTreeSet<u64> = order
                    .iter()
                    .map(|(_, transaction)| *transaction)
                    .filter(|transaction| component.contains(transaction))
                    .gather();
                present.len() >= 2
            })
            .map(|(partition, _)| partition.clone());
        let Some(partition) = partition else { continue };
        let mut involved: Vec<Value> = component
            .iter()
            .filter_map(|transaction| values.get(&(*transaction, partition.clone())))
            .filter_map(|at| at.first().map(|(_, value)| *value))
            .collect();
        crate::sorting::sort_u64(&mut involved);
        findings.push(Finding {
            kind: AnomalyKind::WriteCycle,
            partition,
            op: involved
                .last()
                .and_then(|value| facts.sent.get(value))
                .map(|sent| sent.3),
            values: involved,
        });
    }
}

/// The strongly connected components of a graph (Tarjan's algorithm,
/// without recursion), each sorted; in a deterministic order.
fn strongly_connected(edges: &BTreeMap<u64, BTreeSet<u64>>) -> Vec<BTreeSet<u64>> {
    let nodes: BTreeSet<u64> = edges
        .iter()
        .flat_map(|(from, to)| std::iter::once(*from).chain(to.iter().copied()))
        .gather();
    let mut index_of: BTreeMap<u64, usize> = BTreeMap::new();
    let mut low: BTreeMap<u64, usize> = BTreeMap::new();
    let mut on_stack: BTreeSet<u64> = BTreeSet::new();
    let mut stack: Vec<u64> = Vec::new();
    let mut components = Vec::new();
    let empty = BTreeSet::new();
    for &root in &nodes {
        if index_of.contains_key(&root) {
            continue;
        }
        // (node, its successors not yet visited from it)
        let mut work: Vec<(u64, Vec<u64>)> = Vec::new();
        let visit = |node: u64,
                     index_of: &mut BTreeMap<u64, usize>,
                     low: &mut BTreeMap<u64, usize>,
                     stack: &mut Vec<u64>,
                     on_stack: &mut BTreeSet<u64>|
         -> (u64, Vec<u64>) {
            let next = index_of.len();
            index_of.insert(node, next);
            low.insert(node, next);
            stack.push(node);
            on_stack.insert(node);
            (node, edges.get(&node).unwrap_or(&empty).iter().rev().copied().collect())
        };
        work.push(visit(root, &mut index_of, &mut low, &mut stack, &mut on_stack));
        while let Some((node, successors)) = work.last_mut() {
            let node = *node;
            if let Some(next) = successors.pop() {
                if !index_of.contains_key(&next) {
                    work.push(visit(next, &mut index_of, &mut low, &mut stack, &mut on_stack));
                } else if on_stack.contains(&next) {
                    let lowest = low[&node].min(index_of[&next]);
                    low.insert(node, lowest);
                }
                continue;
            }
            work.pop();
            if let Some((parent, _)) = work.last() {
                let lowest = low[parent].min(low[&node]);
                low.insert(*parent, lowest);
            }
            if low[&node] == index_of[&node] {
                let mut component = BTreeSet::new();
                while let Some(member) = stack.pop() {
                    on_stack.remove(&member);
                    component.insert(member);
                    if member == node {
                        break;
                    }
                }
                components.push(component);
            }
        }
    }
    components
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(partition: u32) -> TopicPartition {
        TopicPartition::new("t", partition)
    }

    fn send(process: Process, partition: u32, value: Value, offset: Offset) -> Op {
        Op::Send {
            process,
            partition: p(partition),
            value,
            outcome: Outcome::Ok { offset },
            transaction: None,
        }
    }

    fn txn_send(process: Process, value: Value, offset: Offset, transaction: u64) -> Op {
        Op::Send {
            process,
            partition: p(0),
            value,
            outcome: Outcome::Ok { offset },
            transaction: Some(transaction),
        }
    }

    /// A send to t-0 whose outcome is not an acknowledgement.
    fn unacknowledged(value: Value, outcome: Outcome) -> Op {
        Op::Send {
            process: 0,
            partition: p(0),
            value,
            outcome,
            transaction: None,
        }
    }

    fn poll(process: Process, records: &[(u32, Offset, Value)]) -> Op {
        Op::Poll {
            process,
            records: records
                .iter()
                .map(|(partition, offset, value)| (p(*partition), *offset, *value))
                .collect(),
        }
    }

    /// `ops` (three values written at offsets 0, 1 and 2 of t-0), then
    /// consumer 8 reading all three and consumer 7 reading the first and
    /// jumping to the third.
    fn read_whole_and_skipping(mut ops: Vec<Op>) -> Vec<Op> {
        ops.extend([
            poll(8, &[(0, 0, 1), (0, 1, 2), (0, 2, 3)]),
            poll(7, &[(0, 0, 1)]),
            poll(7, &[(0, 2, 3)]),
        ]);
        ops
    }

    fn kinds(ops: Vec<Op>) -> Vec<AnomalyKind> {
        check(&History { ops })
            .into_iter()
            .map(|finding| finding.kind)
            .collect()
    }

    /// Three sends read in order, once each, by one consumer: nothing to say.
    fn legal() -> Vec<Op> {
        vec![
            send(0, 0, 1, 0),
            send(0, 0, 2, 1),
            send(0, 0, 3, 2),
            poll(7, &[(0, 0, 1), (0, 1, 2)]),
            poll(7, &[(0, 2, 3)]),
        ]
    }

    #[test]
    fn a_legal_history_has_no_findings() {
        assert_eq!(kinds(legal()), vec![]);
        // Gaps in offsets (markers, aborted records) are not skips.
        let ops = vec![
            send(0, 0, 1, 0),
            txn_send(1, 2, 1, 9),
            Op::EndTransaction {
                transaction: 9,
                ending: Ending::Aborted,
            },
            send(0, 0, 3, 3),
            poll(7, &[(0, 0, 1)]),
            poll(7, &[(0, 3, 3)]),
        ];
        assert_eq!(kinds(ops), vec![]);
    }

    #[test]
    fn inconsistent_offsets_two_values_at_one_offset() {
        let mut ops = legal();
        ops.push(poll(8, &[(0, 1, 99)]));
        assert!(kinds(ops).contains(&AnomalyKind::InconsistentOffsets));
    }

    #[test]
    fn a_duplicate_is_one_value_at_two_offsets() {
        let mut ops = legal();
        ops.push(poll(8, &[(0, 3, 2)]));
        let findings = check(&History { ops });
        assert!(findings
            .iter()
            .any(|finding| finding.kind == AnomalyKind::Duplicate && finding.values == vec![2]));
    }

    #[test]
    fn a_lost_write_is_acknowledged_unread_and_read_past() {
        let ops = vec![
            send(0, 0, 1, 0),
            send(0, 0, 2, 1),
            send(0, 0, 3, 2),
            poll(7, &[(0, 0, 1)]),
            Op::Reposition {
                process: 7,
                partitions: vec![p(0)],
            },
            poll(7, &[(0, 2, 3)]),
        ];
        let findings = check(&History { ops });
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert_eq!(findings[0].kind, AnomalyKind::LostWrite);
        assert_eq!(findings[0].values, vec![2]);
        assert_eq!(findings[0].to_string(), "lost write on t-0: value 2 (operation 1)");
    }

    #[test]
    fn unseen_is_acknowledged_and_never_read_nor_read_past() {
        let ops = vec![send(0, 0, 1, 0), send(0, 0, 2, 1), poll(7, &[(0, 0, 1)])];
        assert_eq!(kinds(ops), vec![AnomalyKind::Unseen]);
        // A failed or indeterminate send that nobody read is not unseen.
        let ops = vec![unacknowledged(1, Outcome::Indeterminate)];
        assert_eq!(kinds(ops), vec![]);
    }

    #[test]
    fn an_aborted_read_returns_a_failed_or_aborted_value() {
        let ops = vec![unacknowledged(1, Outcome::Failed), poll(7, &[(0, 0, 1)])];
        assert_eq!(kinds(ops), vec![AnomalyKind::AbortedRead]);
        let ops = vec![
            txn_send(0, 1, 0, 5),
            Op::EndTransaction {
                transaction: 5,
                ending: Ending::Aborted,
            },
            poll(7, &[(0, 0, 1)]),
        ];
        assert_eq!(kinds(ops), vec![AnomalyKind::AbortedRead]);
        // An indeterminate send may have been written: reading it is legal.
        let ops = vec![unacknowledged(1, Outcome::Indeterminate), poll(7, &[(0, 0, 1)])];
        assert_eq!(kinds(ops), vec![]);
    }

    #[test]
    fn a_commit_of_unknown_outcome_may_be_read_or_not() {
        let unknown = |transaction| Op::EndTransaction {
            transaction,
            ending: Ending::Indeterminate,
        };
        // Read: no aborted read (had it been aborted, it would be one).
        let read = vec![txn_send(0, 1, 0, 5), unknown(5), poll(7, &[(0, 0, 1)])];
        assert_eq!(kinds(read), vec![]);
        // Never read though a consumer read past it: no lost write (had it
        // been committed, it would be one).
        let unread = vec![
            txn_send(0, 1, 0, 5),
            unknown(5),
            send(1, 0, 2, 2),
            poll(7, &[(0, 2, 2)]),
        ];
        assert_eq!(kinds(unread.clone()), vec![]);
        let mut committed = unread;
        committed[1] = Op::EndTransaction {
            transaction: 5,
            ending: Ending::Committed,
        };
        assert_eq!(kinds(committed), vec![AnomalyKind::LostWrite]);
        // Read by one consumer, it was visible: another that jumps over it
        // skips it.
        let skipped = vec![
            send(1, 0, 1, 0),
            txn_send(0, 2, 1, 5),
            unknown(5),
            send(1, 0, 3, 2),
            poll(8, &[(0, 0, 1), (0, 1, 2), (0, 2, 3)]),
            poll(7, &[(0, 0, 1), (0, 2, 3)]),
        ];
        assert_eq!(kinds(skipped), vec![AnomalyKind::PollSkip]);
    }

    #[test]
    fn a_torn_transaction_is_read_in_part() {
        let ops = read_whole_and_skipping(vec![
            txn_send(0, 1, 0, 5),
            txn_send(0, 2, 1, 5),
            txn_send(0, 3, 2, 5),
            Op::EndTransaction {
                transaction: 5,
                ending: Ending::Committed,
            },
        ]);
        let findings = check(&History { ops });
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert_eq!(findings[0].kind, AnomalyKind::TornTransaction);
        assert_eq!(findings[0].values, vec![2]);
    }

    #[test]
    fn non_monotonic_sends_and_polls() {
        let ops = vec![send(0, 0, 1, 5), send(0, 0, 2, 3), poll(7, &[(0, 3, 2), (0, 5, 1)])];
        assert_eq!(kinds(ops), vec![AnomalyKind::NonMonotonicSend]);
        let ops = vec![
            send(0, 0, 1, 0),
            send(0, 0, 2, 1),
            poll(7, &[(0, 0, 1), (0, 1, 2)]),
            poll(7, &[(0, 0, 1)]),
        ];
        assert_eq!(kinds(ops), vec![AnomalyKind::NonMonotonicPoll]);
        // A rebalance between allows reading again from anywhere.
        let ops = vec![
            send(0, 0, 1, 0),
            send(0, 0, 2, 1),
            poll(7, &[(0, 0, 1), (0, 1, 2)]),
            Op::Reposition {
                process: 7,
                partitions: vec![p(0)],
            },
            poll(7, &[(0, 0, 1)]),
        ];
        assert_eq!(kinds(ops), vec![]);
    }

    fn commit(transaction: u64) -> Op {
        Op::EndTransaction {
            transaction,
            ending: Ending::Committed,
        }
    }

    /// A committed transaction's send of `value` to `partition` at `offset`.
    fn txn_send_to(partition: u32, value: Value, offset: Offset, transaction: u64) -> Op {
        Op::Send {
            process: transaction as Process,
            partition: p(partition),
            value,
            outcome: Outcome::Ok { offset },
            transaction: Some(transaction),
        }
    }

    #[test]
    fn a_write_cycle_is_two_transactions_in_opposite_orders_and_allowed() {
        // Transaction 1 is first on t-0, transaction 2 first on t-1.
        let crossed = vec![
            txn_send_to(0, 1, 0, 1),
            txn_send_to(1, 2, 0, 2),
            txn_send_to(0, 3, 1, 2),
            txn_send_to(1, 4, 1, 1),
            commit(1),
        ];
        let mut ops = crossed.clone();
        ops.extend([commit(2), poll(7, &[(0, 0, 1), (0, 1, 3), (1, 0, 2), (1, 1, 4)])]);
        let findings = check(&History { ops: ops.clone() });
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert_eq!(findings[0].kind, AnomalyKind::WriteCycle);
        assert_eq!(findings[0].values, vec![1, 3]);
        assert!(AnomalyKind::WriteCycle.allowed().is_some());
        // The same transactions in the same order on both: no cycle.
        let mut ordered = ops;
        ordered[1] = txn_send_to(1, 2, 1, 2);
        ordered[3] = txn_send_to(1, 4, 0, 1);
        ordered[6] = poll(7, &[(0, 0, 1), (0, 1, 3), (1, 0, 4), (1, 1, 2)]);
        assert_eq!(kinds(ordered), vec![]);
        // An aborted transaction orders nothing.
        let mut aborted = crossed;
        aborted.extend([
            Op::EndTransaction {
                transaction: 2,
                ending: Ending::Aborted,
            },
            poll(7, &[(0, 0, 1), (1, 1, 4)]),
        ]);
        assert_eq!(kinds(aborted), vec![]);
    }

    #[test]
    fn interleaved_sends_have_another_value_between_and_are_allowed() {
        let ops = vec![
            txn_send_to(0, 1, 0, 1),
            send(5, 0, 2, 1),
            txn_send_to(0, 3, 2, 1),
            commit(1),
            poll(7, &[(0, 0, 1), (0, 1, 2), (0, 2, 3)]),
        ];
        let findings = check(&History { ops });
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert_eq!(findings[0].kind, AnomalyKind::InterleavedSends);
        assert_eq!(findings[0].values, vec![1, 2, 3]);
        assert!(AnomalyKind::InterleavedSends.allowed().is_some());
        // Two transactions interleaved in one partition: each one's values
        // have the other's between them, and Elle's dependencies make that a
        // write cycle as well.
        let ops = vec![
            txn_send_to(0, 1, 0, 1),
            txn_send_to(0, 2, 1, 2),
            txn_send_to(0, 3, 2, 1),
            txn_send_to(0, 4, 3, 2),
            commit(1),
            commit(2),
            poll(7, &[(0, 0, 1), (0, 1, 2), (0, 2, 3), (0, 3, 4)]),
        ];
        assert_eq!(
            kinds(ops),
            vec![
                AnomalyKind::WriteCycle,
                AnomalyKind::InterleavedSends,
                AnomalyKind::InterleavedSends
            ]
        );
        // Contiguous: nothing.
        let ops = vec![
            txn_send_to(0, 1, 0, 1),
            txn_send_to(0, 3, 1, 1),
            send(5, 0, 2, 2),
            commit(1),
            poll(7, &[(0, 0, 1), (0, 1, 3), (0, 2, 2)]),
        ];
        assert_eq!(kinds(ops), vec![]);
    }

    #[test]
    fn every_class_says_what_it_means_and_only_two_are_allowed() {
        let all = [
            AnomalyKind::InconsistentOffsets,
            AnomalyKind::Duplicate,
            AnomalyKind::LostWrite,
            AnomalyKind::Unseen,
            AnomalyKind::AbortedRead,
            AnomalyKind::TornTransaction,
            AnomalyKind::NonMonotonicSend,
            AnomalyKind::NonMonotonicPoll,
            AnomalyKind::PollSkip,
            AnomalyKind::WriteCycle,
            AnomalyKind::InterleavedSends,
            AnomalyKind::EpochBumpDuplicate,
        ];
        for kind in all {
            assert!(kind.meaning().ends_with('.'), "{kind:?}");
        }
        let allowed: Vec<AnomalyKind> = all.into_iter().filter(|kind| kind.allowed().is_some()).collect();
        assert_eq!(
            allowed,
            vec![
                AnomalyKind::WriteCycle,
                AnomalyKind::InterleavedSends,
                AnomalyKind::EpochBumpDuplicate
            ]
        );
    }

    #[test]
    fn a_poll_skip_jumps_over_a_readable_value() {
        let ops = read_whole_and_skipping(vec![send(0, 0, 1, 0), send(0, 0, 2, 1), send(0, 0, 3, 2)]);
        let findings = check(&History { ops });
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert_eq!(findings[0].kind, AnomalyKind::PollSkip);
        assert_eq!(findings[0].values, vec![2]);
        assert_eq!(findings[0].op, Some(5));
    }
}
