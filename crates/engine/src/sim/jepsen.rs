//! The run's history as Jepsen's Kafka test records one (every send with
//! what its producer learned, every poll with the values it returned, the
//! moves of a consumer's position Kafka allows, every transaction's end),
//! kept as the simulation runs, and Jepsen's verdict over it
//! ([`crate::history::check`]).
//!
//! The recorder watches the trace (what a producer learned, rebalances,
//! resets, restarts, transaction ends) and is told each poll's records by
//! the consumer, which alone knows the values at the offsets it read. It
//! changes nothing in the run: the trace and its hash are the same with it.
//!
//! Where the simulation goes past what Jepsen's test does, the verdict says
//! so instead of judging: a partition whose records retention or compaction
//! deleted (Jepsen's test keeps every record) is not judged for lost,
//! unseen or skipped values; `read_uncommitted` consumers' polls are left
//! out when a producer is transactional (they may read what later aborts,
//! as Kafka documents).

use crate::sorting::Gather;
use std::collections::{BTreeMap, BTreeSet};

use crate::chunked::ChunkedVec;
use crate::history::{check, AnomalyKind, Ending, Finding, History, Op, Outcome};
use crate::protocol::records::RecordId;
use crate::protocol::{ErrorCode, Offset, Time, TopicPartition};

use super::trace::{TraceId, TraceKind, TransactionOutcome};

/// The history kept so far and what the recorder needs to keep it.
#[derive(Debug, Clone, Default)]
pub struct Recorder {
    /// The operations, each with the trace event that shows it (a poll's:
    /// its first `Consumed`) and its time. Chunked, so a snapshot of a
    /// story's run shares them.
    ops: ChunkedVec<(Op, TraceId, Time)>,
    /// How many operations to keep; past it only transaction ends are
    /// kept (so the transactions already seen end as they did).
    limit: usize,
    /// Whether an operation was left out for the limit.
    full: bool,
    /// A poll whose `Consumed` event is still to come: (consumer, its op).
    poll_pending: Option<(u32, usize)>,
    /// The trace event being noted (where the next operation shows), and
    /// its time.
    at: TraceId,
    now: Time,
    /// Each transactional producer's open transaction, numbered by the
    /// recorder.
    open: BTreeMap<u32, u64>,
    next_transaction: u64,
    /// Producers that sent `EndTxn` to commit their open transaction and
    /// have not learned how it ended: if they die or are fenced now, the
    /// outcome is unknown.
    committing: BTreeSet<u32>,
    /// Records whose send may have reached a log though it failed at some
    /// attempt (a timeout, a lost response, `NOT_ENOUGH_REPLICAS_AFTER_APPEND`).
    ambiguous: BTreeSet<RecordId>,
    /// Records whose send ended (acknowledged or failed for good).
    settled: BTreeSet<RecordId>,
    /// Partitions each consumer has read.
    read: BTreeMap<u32, BTreeSet<TopicPartition>>,
    /// Partitions retention or compaction deleted records from.
    pruned: BTreeSet<TopicPartition>,
    /// Where the first poll of each partition started.
    first_read: BTreeMap<TopicPartition, Offset>,
}

/// An error after which the records may still be in the log.
fn ambiguous(error: ErrorCode) -> bool {
    matches!(
        error,
        ErrorCode::RequestTimedOut
            | ErrorCode::NetworkException
            | ErrorCode::NotEnoughReplicasAfterAppend
            | ErrorCode::DeliveryTimeout
    )
}

impl Recorder {
    /// Notes what a trace event tells the history; `transactional` says
    /// whether a producer sends in transactions.
    /// `id` is the event's place in the trace, `now` its time.
    pub(crate) fn note(&mut self, kind: &TraceKind, id: TraceId, now: Time, transactional: impl Fn(u32) -> bool) {
        self.at = id;
        self.now = now;
        match kind {
            TraceKind::Acknowledged {
                producer,
                partition,
                base_offset,
                records,
            } => {
                let transaction = transactional(*producer).then(|| self.transaction_of(*producer));
                for (index, &record) in records.iter().enumerate() {
                    let outcome = match base_offset {
                        Some(base) => Outcome::Ok {
                            offset: base + index as Offset,
                        },
                        // acks=0: the producer learns nothing of where, or whether.
                        None => Outcome::Indeterminate,
                    };
                    self.send(*producer, partition, record, outcome, transaction);
                }
            }
            TraceKind::Consumed { consumer, .. } => {
                if let Some((polled, index)) = self.poll_pending {
                    if polled == *consumer {
                        if let Some(entry) = self.ops.get(index).cloned() {
                            self.ops[index] = (entry.0, id, now);
                        }
                        self.poll_pending = None;
                    }
                }
            }
            TraceKind::ProduceFailed {
                producer,
                partition,
                error,
                records,
                will_retry,
            } => {
                if ambiguous(*error) {
                    self.ambiguous.extend(records.iter().copied());
                }
                if !will_retry {
                    let transaction = transactional(*producer).then(|| self.transaction_of(*producer));
                    for &record in records {
                        let outcome = if self.ambiguous.contains(&record) {
                            Outcome::Indeterminate
                        } else {
                            Outcome::Failed
                        };
                        self.send(*producer, partition, record, outcome, transaction);
                    }
                }
            }
            TraceKind::TransactionEnded { producer, outcome, .. } => {
                let ending = match outcome {
                    TransactionOutcome::Committed => Ending::Committed,
                    TransactionOutcome::Aborted => Ending::Aborted,
                    // Fenced with a commit under way: the coordinator may
                    // have prepared it, and whoever fenced the producer
                    // completes a prepared commit.
                    TransactionOutcome::Fenced | TransactionOutcome::Fatal(_) => self.unfinished(*producer),
                };
                self.committing.remove(producer);
                if let Some(transaction) = self.open.remove(producer) {
                    self.push(Op::EndTransaction { transaction, ending });
                }
            }
            TraceKind::GroupRebalanced { assignment, .. } | TraceKind::TargetAssignment { assignment, .. } => {
                for member in assignment {
                    if let super::types::NodeId::Consumer(consumer) = member.consumer {
                        let mut partitions = member.partitions.clone();
                        partitions.extend(self.read.get(&consumer).into_iter().flatten().cloned());
                        self.reposition(consumer, partitions);
                    }
                }
            }
            TraceKind::ConsumerStatus { consumer, .. } | TraceKind::TransactionRolledBack { consumer, .. } => {
                let partitions = self.read.get(consumer).into_iter().flatten().cloned().collect();
                self.reposition(*consumer, partitions);
            }
            TraceKind::NoOffsetForPartition { client, partition }
            | TraceKind::OffsetOutOfRange { client, partition, .. }
            | TraceKind::LogTruncationDetected { client, partition, .. } => {
                if let super::types::NodeId::Consumer(consumer) = client {
                    self.reposition(*consumer, vec![partition.clone()]);
                }
            }
            TraceKind::SegmentsDeleted { partition, .. } | TraceKind::LogCleaned { partition, .. } => {
                self.pruned.insert(partition.clone());
            }
            _ => {}
        }
    }

    /// A producer's process died: a transaction it left open is aborted
    /// (by its next instance's `initTransactions()`, or by the coordinator
    /// at `transaction.timeout.ms`), unless its commit was under way: then
    /// the coordinator may have written `PrepareCommit`, which it completes
    /// (`TransactionCoordinator#handleInitProducerId` rolls a prepared
    /// commit forward), so the outcome is unknown.
    pub(crate) fn producer_crashed(&mut self, producer: u32, next_id: TraceId, now: Time) {
        self.at = next_id;
        self.now = now;
        let ending = self.unfinished(producer);
        self.committing.remove(&producer);
        if let Some(transaction) = self.open.remove(&producer) {
            self.push(Op::EndTransaction { transaction, ending });
        }
    }

    /// `producer` sent `EndTxn` to commit its open transaction (a retry
    /// too): from now on it may have committed.
    pub(crate) fn commit_sent(&mut self, producer: u32) {
        if self.open.contains_key(&producer) {
            self.committing.insert(producer);
        }
    }

    /// How `producer`'s open transaction ended when it never learned:
    /// unknown if it had asked to commit, else aborted.
    fn unfinished(&self, producer: u32) -> Ending {
        if self.committing.contains(&producer) {
            Ending::Indeterminate
        } else {
            Ending::Aborted
        }
    }

    /// A consumer's poll returned these records (partition, offset,
    /// record); `next_id` is the next trace event's place, where the poll
    /// shows until its `Consumed` event does.
    pub(crate) fn poll(
        &mut self,
        consumer: u32,
        records: Vec<(TopicPartition, Offset, RecordId)>,
        next_id: TraceId,
        now: Time,
    ) {
        if records.is_empty() {
            return;
        }
        self.at = next_id;
        self.now = now;
        self.poll_pending = Some((consumer, self.ops.len()));
        let read = self.read.entry(consumer).or_default();
        for (partition, offset, _) in &records {
            self.first_read.entry(partition.clone()).or_insert(*offset);
            if !read.contains(partition) {
                read.insert(partition.clone());
            }
        }
        self.push(Op::Poll {
            process: consumer,
            records,
        });
    }

    fn transaction_of(&mut self, producer: u32) -> u64 {
        *self.open.entry(producer).or_insert_with(|| {
            self.next_transaction += 1;
            self.next_transaction
        })
    }

    fn send(
        &mut self,
        producer: u32,
        partition: &TopicPartition,
        record: RecordId,
        outcome: Outcome,
        transaction: Option<u64>,
    ) {
        if self.settled.insert(record) {
            self.push(Op::Send {
                process: producer,
                partition: partition.clone(),
                value: record,
                outcome,
                transaction,
            });
        }
    }

    fn reposition(&mut self, consumer: u32, partitions: Vec<TopicPartition>) {
        if !partitions.is_empty() {
            self.push(Op::Reposition {
                process: consumer,
                partitions,
            });
        }
    }

    /// A recorder that keeps at most `limit` operations.
    pub(crate) fn with_limit(limit: usize) -> Recorder {
        Recorder {
            limit,
            ..Recorder::default()
        }
    }

    fn push(&mut self, op: Op) {
        if self.ops.len() >= self.limit && !matches!(op, Op::EndTransaction { .. }) {
            self.full = true;
            return;
        }
        self.ops.push((op, self.at, self.now));
    }

    /// Operations recorded so far.
    pub fn operations(&self) -> usize {
        self.ops.len()
    }

    /// The history so far.
    pub fn history(&self) -> History {
        History {
            ops: self.ops.iter().map(|(op, ..)| op.clone()).collect(),
        }
    }

    /// Jepsen's verdict on the history so far: `unsettled` are the records
    /// produced whose send has not ended (indeterminate, as Jepsen counts
    /// an operation that never completed); `across_epochs` the records an
    /// idempotent producer wrote under two producer epochs (KIP-360), whose
    /// duplicates Kafka's idempotence allows; `unchecked` the records a
    /// leader appended with no state for their producer, whose order
    /// idempotence could not keep.
    pub fn verdict(
        &self,
        unsettled: impl Iterator<Item = (u32, TopicPartition, RecordId)>,
        across_epochs: &BTreeSet<RecordId>,
        unchecked: &BTreeSet<RecordId>,
        lost_to_power: &BTreeSet<TopicPartition>,
    ) -> Verdict {
        let mut history = self.history();
        let mut steps: Vec<Option<(TraceId, Time)>> = self.ops.iter().map(|(_, id, at)| Some((*id, *at))).collect();
        for (producer, partition, record) in unsettled {
            if !self.settled.contains(&record) {
                history.ops.push(Op::Send {
                    process: producer,
                    partition,
                    value: record,
                    outcome: Outcome::Indeterminate,
                    transaction: None,
                });
                steps.push(None);
            }
        }
        // A producer's sends are asynchronous and complete out of order (a
        // batch whose answer was lost is acknowledged, at its first offset,
        // after later ones), where Jepsen's test sends one at a time; its
        // non-monotonic-send check is about the order they were sent in,
        // so the sends keep their places in the history but in the order
        // they were made (record ids are given in that order).
        let slots: Vec<usize> = (0..history.ops.len())
            .filter(|&index| matches!(history.ops[index], Op::Send { .. }))
            .collect();
        let mut sends: Vec<(Op, Option<(TraceId, Time)>)> = slots
            .iter()
            .map(|&index| (history.ops[index].clone(), steps[index]))
            .collect();
        crate::sorting::sort_by_key(&mut sends, |(op, _)| match op {
            Op::Send { value, .. } => *value,
            _ => 0,
        });
        for (slot, (send, step)) in slots.into_iter().zip(sends) {
            history.ops[slot] = send;
            steps[slot] = step;
        }
        let acknowledged: BTreeMap<RecordId, Offset> = history
            .ops
            .iter()
            .filter_map(|op| match op {
                Op::Send {
                    value,
                    outcome: Outcome::Ok { offset },
                    ..
                } => Some((*value, *offset)),
                _ => None,
            })
            .gather();
        let before_first_read = |finding: &Finding| {
            self.first_read.get(&finding.partition).is_some_and(|first| {
                finding
                    .values
                    .iter()
                    .all(|value| acknowledged.get(value).is_some_and(|offset| offset < first))
            })
        };
        let mut findings = Vec::new();
        let mut not_judged = Vec::new();
        let mut allowed = Vec::new();
        for mut finding in check(&history) {
            if finding.kind == AnomalyKind::Duplicate
                && finding.values.iter().all(|value| across_epochs.contains(value))
            {
                finding.kind = AnomalyKind::EpochBumpDuplicate;
            }
            if finding.kind == AnomalyKind::NonMonotonicSend
                && finding.values.iter().all(|value| unchecked.contains(value))
            {
                finding.kind = AnomalyKind::UncheckedSequence;
            }
            if finding.kind.allowed().is_some() {
                allowed.push(finding);
            } else if lost_to_power.contains(&finding.partition) {
                not_judged.push((finding, NotJudged::PowerLoss));
            } else if finding.kind == AnomalyKind::Unseen {
                not_judged.push((finding, NotJudged::NoFinalRead));
            } else if finding.kind == AnomalyKind::LostWrite && before_first_read(&finding) {
                not_judged.push((finding, NotJudged::BeforeFirstRead));
            } else if self.pruned.contains(&finding.partition)
                && matches!(finding.kind, AnomalyKind::LostWrite | AnomalyKind::PollSkip)
            {
                not_judged.push((finding, NotJudged::Deleted));
            } else {
                findings.push(finding);
            }
        }
        let unknown_commits = history
            .ops
            .iter()
            .filter(|op| {
                matches!(
                    op,
                    Op::EndTransaction {
                        ending: Ending::Indeterminate,
                        ..
                    }
                )
            })
            .count();
        Verdict {
            operations: history.ops.len(),
            unknown_commits,
            findings,
            not_judged,
            allowed,
            steps,
            complete: !self.full,
        }
    }
}

/// Why the verdict leaves a finding out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum NotJudged {
    /// Acknowledged values no poll returned by the end: Jepsen's test ends
    /// with every partition read to its end; a run stops where it is, so
    /// a value may be unread only because nobody had read that far yet.
    NoFinalRead,
    /// Retention or compaction deleted records of the partition, which
    /// Jepsen's test (keeping every record) does not do.
    Deleted,
    /// Written before the first read of its partition began there: the
    /// partition's first readers started past it (a group with
    /// `auto.offset.reset=latest`, or one joining late), where Jepsen's
    /// test has every reader start at the beginning.
    BeforeFirstRead,
    /// A power loss erased acknowledged records of the partition from
    /// every replica that could lead (named in the ledger as the power
    /// loss's): its log was written again from an earlier offset, which
    /// Jepsen's checks would report as the loss's consequences.
    PowerLoss,
}

impl std::fmt::Display for NotJudged {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            NotJudged::NoFinalRead => {
                "acknowledged but unread when the run stopped (Jepsen's test reads every partition to its end first)"
            }
            NotJudged::Deleted => "on a partition where retention or compaction deleted records",
            NotJudged::BeforeFirstRead => "written before the partition's first reader started (past them)",
            NotJudged::PowerLoss => {
                "on a partition where a power loss erased acknowledged records from every replica that could lead (the ledger names the loss)"
            }
        })
    }
}

/// What Jepsen's checks say about a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Operations in the history.
    pub operations: usize,
    /// The anomalies found.
    pub findings: Vec<Finding>,
    /// Findings the verdict leaves out, and why.
    pub not_judged: Vec<(Finding, NotJudged)>,
    /// What Kafka's design allows ([`AnomalyKind::allowed`] says why):
    /// reported, not counted against the run.
    pub allowed: Vec<Finding>,
    /// Transactions whose producer asked to commit and never learned the
    /// outcome ([`Ending::Indeterminate`]): their records may be read or not.
    pub unknown_commits: usize,
    /// Whether the history holds the whole run (`false`: it stopped at
    /// [`crate::limits::MAX_HISTORY_OPERATIONS`] or the limit it was given,
    /// and the verdict is on the run's first operations).
    pub complete: bool,
    /// The trace event that shows each operation of the judged history,
    /// and its time (`None`: a send still under way when the verdict was
    /// taken).
    steps: Vec<Option<(TraceId, Time)>>,
}

impl Verdict {
    /// The trace event that shows `finding`'s operation, if it has one.
    pub fn trace_id(&self, finding: &Finding) -> Option<TraceId> {
        self.steps.get(finding.op?).copied().flatten().map(|(id, _)| id)
    }

    /// When `finding`'s operation happened, if it has one.
    pub fn time_of(&self, finding: &Finding) -> Option<Time> {
        self.steps.get(finding.op?).copied().flatten().map(|(_, at)| at)
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.findings.is_empty() {
            write!(
                formatter,
                "Jepsen's checks: no anomaly in {} operations",
                self.operations
            )?;
        } else {
            let mut counts: BTreeMap<AnomalyKind, usize> = BTreeMap::new();
            for finding in &self.findings {
                *counts.entry(finding.kind).or_default() += 1;
            }
            let named: Vec<String> = counts
                .iter()
                .map(|(kind, count)| format!("{} {count}", kind.name()))
                .collect();
            write!(
                formatter,
                "Jepsen's checks: {} in {} operations",
                named.join(", "),
                self.operations
            )?;
        }
        let mut left_out: BTreeMap<NotJudged, usize> = BTreeMap::new();
        for (_, why) in &self.not_judged {
            *left_out.entry(*why).or_default() += 1;
        }
        for (why, count) in left_out {
            write!(formatter, "; not judged: {count} {why}")?;
        }
        let mut allowed: BTreeMap<AnomalyKind, usize> = BTreeMap::new();
        for finding in &self.allowed {
            *allowed.entry(finding.kind).or_default() += 1;
        }
        for (kind, count) in allowed {
            write!(formatter, "; allowed by Kafka's design: {} {count}", kind.name())?;
        }
        if self.unknown_commits > 0 {
            write!(
                formatter,
                "; {} {} asked to commit and never learned the outcome (judged as perhaps committed)",
                self.unknown_commits,
                if self.unknown_commits == 1 {
                    "transaction's producer"
                } else {
                    "transactions' producers"
                }
            )?;
        }
        if !self.complete {
            formatter.write_str("; the history stopped at its limit, so this judges the first part of the run only")?;
        }
        Ok(())
    }
}
