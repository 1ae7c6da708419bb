//! The invariants, checked after every event, and the bookkeeping that
//! finds lost acknowledged records. A violation becomes a trace event; in a
//! safe configuration the tests fail on it. In a lossy configuration
//! (`acks=0/1`, unclean election) losing records is the lesson: the trace
//! says which records and why.

use std::collections::{BTreeMap, BTreeSet};

use crate::protocol::records::LogBatch;
use crate::protocol::{BrokerId, TopicPartition};
use crate::replication::high_watermark::Acks;

use super::broker::{BrokerStatus, PartitionLog};
use super::trace::{ranges, Invariant, LossCause, LossReason, TraceKind};
use super::types::{NodeId, Record, RecordId};
use super::Simulation;

/// A broken invariant found by a check: which, where, in which epoch or
/// generation, and what was seen.
type Violation = (Invariant, TopicPartition, u32, String);

/// Which leader invariants an event can affect.
#[derive(Debug, Clone, Copy)]
pub(crate) enum CheckScope<'a> {
    /// Anything: re-check every partition.
    Everything,
    /// Only these partitions' replication state changed.
    Partitions(&'a [TopicPartition]),
    /// No replica, leader or ISR changed (a client's or a group's
    /// bookkeeping, a heartbeat): only the group and loss checks run.
    ClientsOnly,
}

/// What the checks remember between events.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Monitor {
    /// Violations found so far.
    pub violations: u64,
    /// Partitions whose acknowledged records must be re-checked.
    dirty: BTreeSet<TopicPartition>,
    /// The highest high watermark each leader epoch reached.
    high_watermarks: BTreeMap<(TopicPartition, u32), u64>,
    /// Who led each partition in each epoch.
    leaders: BTreeMap<(TopicPartition, u32), BrokerId>,
    /// Partitions that had an unclean election.
    unclean: BTreeSet<TopicPartition>,
    /// Violations already reported, so each is reported once.
    reported: BTreeSet<(Invariant, TopicPartition, u32)>,
    /// Each consumer's (phase, generation, owned count) when group
    /// ownership was last checked: a consumer's assignment only changes
    /// together with one of them, so an unchanged signature needs no check.
    group_signature: Vec<(u8, u32, usize)>,
    /// The newest epoch each transactional producer id was handed by an
    /// `InitProducerId` answer.
    pub(crate) handed_epochs: BTreeMap<u64, u16>,
    /// Records a leader appended in a batch whose sequence it could not
    /// check: it had no state for the producer and the batch did not start
    /// at sequence 0 (`ProducerAppendInfo#checkSequence` accepts any
    /// sequence then).
    pub(crate) unchecked_sequences: BTreeSet<RecordId>,
    /// Logs that lost records to a power loss: (broker, partition).
    power_lost: BTreeSet<(BrokerId, TopicPartition)>,
    /// Records a power loss erased from a broker's log: (broker, record).
    power_erased: BTreeSet<(BrokerId, RecordId)>,
    /// Acknowledged records lost because a power loss erased them from the
    /// replica that leads now ([`LossCause::PowerLoss`]).
    pub(crate) lost_to_power: BTreeSet<RecordId>,
    /// The partitions where that happened.
    pub(crate) partitions_lost_to_power: BTreeSet<TopicPartition>,
    /// Partitions an unclean election (KIP-966's last known leader, or
    /// `unclean.leader.election.enable`) gave to a replica whose log a
    /// power loss had cut: every replica that could lead was down, and
    /// the one chosen had lost what it had not flushed.
    pub(crate) led_uncleanly_after_power_loss: BTreeSet<TopicPartition>,
    /// Partitions whose every replica lost power in one power loss, some
    /// with records it had not flushed: nothing holds those records any
    /// more (a correlated power loss, which replication cannot cover).
    pub(crate) cut_everywhere: BTreeSet<TopicPartition>,
}

impl Monitor {
    /// Remembers the records a power loss erased from `broker`'s log of
    /// `partition`.
    pub(crate) fn note_power_loss(&mut self, broker: BrokerId, partition: &TopicPartition, records: Vec<RecordId>) {
        self.power_lost.insert((broker, partition.clone()));
        self.power_erased
            .extend(records.into_iter().map(|record| (broker, record)));
    }

    /// Asks for a full check of a partition's acknowledged records.
    pub fn mark_dirty(&mut self, partition: &TopicPartition) {
        self.dirty.insert(partition.clone());
    }

    /// Remembers that a partition was led by an unclean election, here
    /// by `leader`.
    pub fn note_unclean_election(&mut self, partition: &TopicPartition, leader: Option<BrokerId>) {
        self.unclean.insert(partition.clone());
        self.dirty.insert(partition.clone());
        if leader.is_some_and(|leader| self.power_lost.contains(&(leader, partition.clone()))) {
            self.led_uncleanly_after_power_loss.insert(partition.clone());
        }
    }

    /// Whether a correlated power loss struck (what the fuzzer judges as a
    /// lossy case): every replica of a partition lost power at once with
    /// records not flushed, or an unclean election gave a partition to a
    /// replica a power loss had cut.
    pub fn correlated_power_loss(&self) -> bool {
        !self.led_uncleanly_after_power_loss.is_empty() || !self.cut_everywhere.is_empty()
    }

    /// After one power loss of `brokers`: notes each partition all of whose
    /// `replicas` it cut, one of them losing what it had not flushed.
    pub(crate) fn note_power_cut<'a>(
        &mut self,
        brokers: &BTreeSet<BrokerId>,
        partitions: impl Iterator<Item = (&'a TopicPartition, &'a [BrokerId])>,
    ) {
        for (partition, replicas) in partitions {
            if replicas.iter().all(|replica| brokers.contains(replica))
                && replicas
                    .iter()
                    .any(|&replica| self.power_lost.contains(&(replica, partition.clone())))
            {
                self.cut_everywhere.insert(partition.clone());
            }
        }
    }

    /// Records present more than once in their partition's leader log
    /// under the same producer id and epoch (or without one): duplicates
    /// idempotence should have stopped. Kafka's broker deduplicates only
    /// within one epoch, and an idempotent producer that bumps its epoch
    /// after OUT_OF_ORDER_SEQUENCE_NUMBER (KIP-360) sends a batch whose
    /// earlier attempt's outcome it never learned under new sequences: that
    /// copy is not counted here (see [`duplicated_records`](Self::duplicated_records)).
    pub fn duplicated_within_an_epoch(&self, simulation: &Simulation) -> u64 {
        let mut duplicated = 0;
        for log in leader_logs(simulation) {
            let mut seen: BTreeSet<(RecordId, Option<(u64, i16)>)> = BTreeSet::new();
            for_each_stamped(log, |record, stamp| {
                if !seen.insert((record, stamp)) {
                    duplicated += 1;
                }
            });
        }
        duplicated
    }

    /// Records written in their partition's leader log under more than one
    /// (producer id, epoch).
    pub fn duplicated_across_epochs(&self, simulation: &Simulation) -> BTreeSet<RecordId> {
        let mut across = BTreeSet::new();
        for log in leader_logs(simulation) {
            let mut stamps: std::collections::BTreeMap<RecordId, Option<(u64, i16)>> =
                std::collections::BTreeMap::new();
            for_each_stamped(log, |record, stamp| {
                if *stamps.entry(record).or_insert(stamp) != stamp {
                    across.insert(record);
                }
            });
        }
        across
    }

    /// Records present more than once in their partition's leader log.
    pub fn duplicated_records(&self, simulation: &Simulation) -> u64 {
        let mut duplicated = 0;
        for log in leader_logs(simulation) {
            let mut seen = BTreeSet::new();
            for record in log.records() {
                if !seen.insert(record.id) {
                    duplicated += 1;
                }
            }
        }
        duplicated
    }
}

/// Each record of a log with the (producer id, epoch) its batch carries.
fn for_each_stamped(log: &super::broker::PartitionLog, mut visit: impl FnMut(RecordId, Option<(u64, i16)>)) {
    for batch in log.log.batches_from(0) {
        let stamp = batch
            .producer
            .as_ref()
            .map(|producer| (producer.producer_id, producer.producer_epoch));
        for record in &batch.records {
            visit(record.id, stamp);
        }
    }
}

/// Each partition's log on its leader, as the controller names it.
fn leader_logs(simulation: &Simulation) -> impl Iterator<Item = &super::broker::PartitionLog> + '_ {
    simulation
        .controller
        .partitions
        .iter()
        .filter_map(|(partition, registration)| simulation.brokers.get(&registration.leader?)?.logs.get(partition))
}

impl Simulation {
    /// Runs every check; called after each event. `scope` limits the
    /// leader checks to the one partition the event could have changed.
    pub(crate) fn check_invariants(&mut self, scope: CheckScope<'_>) {
        let mut violations: Vec<Violation> = Vec::new();
        self.check_leaders(scope, &mut violations);
        self.check_group_owners(&mut violations);
        for (invariant, partition, epoch, detail) in violations {
            if self.monitor.reported.insert((invariant, partition, epoch)) {
                self.monitor.violations += 1;
                self.record(TraceKind::InvariantViolated { invariant, detail });
            }
        }
        let dirty = std::mem::take(&mut self.monitor.dirty);
        for partition in dirty {
            self.check_acknowledged(&partition, None);
        }
    }

    /// The leaders' invariants: one leader per epoch, a high watermark
    /// that never goes back, log start and last stable offset within it,
    /// and within every ISR member's log end.
    fn check_leaders(&mut self, scope: CheckScope<'_>, violations: &mut Vec<Violation>) {
        for (&id, broker) in &self.brokers {
            if broker.status == BrokerStatus::Dead {
                continue;
            }
            let leading: Vec<_> = match scope {
                CheckScope::Partitions(partitions) => partitions
                    .iter()
                    .filter_map(|partition| broker.leading.get_key_value(partition))
                    .collect(),
                CheckScope::Everything => broker.leading.iter().collect(),
                CheckScope::ClientsOnly => Vec::new(),
            };
            for (partition, leader) in leading {
                let epoch = leader.leader_epoch;
                let key = (partition.clone(), epoch);
                match self.monitor.leaders.get(&key) {
                    Some(&other) if other != id => violations.push((
                        Invariant::OneLeaderPerEpoch,
                        partition.clone(),
                        epoch,
                        format!("broker-{other} and broker-{id} both lead {partition} in epoch {epoch}"),
                    )),
                    Some(_) => {}
                    None => {
                        self.monitor.leaders.insert(key.clone(), id);
                    }
                }
                let hw = broker.logs.get(partition).map_or(0, |log| log.high_watermark);
                let previous = self.monitor.high_watermarks.entry(key).or_insert(hw);
                if hw < *previous {
                    violations.push((
                        Invariant::HighWatermarkMonotonic,
                        partition.clone(),
                        epoch,
                        format!("broker-{id}'s high watermark for {partition} went from {previous} back to {hw} in epoch {epoch}"),
                    ));
                }
                *previous = (*previous).max(hw);
                let log_start = broker.logs.get(partition).map_or(0, |log| log.log_start_offset());
                if log_start > hw {
                    violations.push((
                        Invariant::LogStartWithinHighWatermark,
                        partition.clone(),
                        epoch,
                        format!("broker-{id}'s log start {log_start} for {partition} is past its high watermark {hw}"),
                    ));
                }
                let lso = broker.logs.get(partition).map_or(0, |log| log.last_stable_offset());
                if lso > hw {
                    violations.push((
                        Invariant::LastStableOffsetWithinHighWatermark,
                        partition.clone(),
                        epoch,
                        format!(
                            "broker-{id}'s last stable offset {lso} for {partition} is past its high watermark {hw}"
                        ),
                    ));
                }
                if let Some(registration) = self.controller.partitions.get(partition) {
                    if registration.leader_epoch == epoch {
                        for member in &registration.isr {
                            // A member that lost power is listed until the
                            // controller fences it; its log is not served
                            // until it has caught up and rejoined.
                            let powered_off = self.monitor.power_lost.contains(&(*member, partition.clone()))
                                && self
                                    .brokers
                                    .get(member)
                                    .is_some_and(|b| b.status == BrokerStatus::Dead || b.fenced);
                            let end = self
                                .brokers
                                .get(member)
                                .and_then(|b| b.logs.get(partition))
                                .map_or(0, |log| log.log_end_offset());
                            if hw > end && !powered_off {
                                violations.push((
                                    Invariant::HighWatermarkWithinIsr,
                                    partition.clone(),
                                    epoch,
                                    format!("{partition}: leader broker-{id}'s high watermark {hw} is above ISR member broker-{member}'s log end {end}"),
                                ));
                            }
                        }
                    }
                }
            }
        }
    }

    /// Within one group generation no partition has two owners.
    fn check_group_owners(&mut self, violations: &mut Vec<Violation>) {
        // Within one group generation no partition has two owners. Only
        // members the group's coordinator counts in that generation are
        // compared: a member cut off from its coordinator keeps reading
        // (as Kafka's client does) until it learns it was dropped, and if
        // an unclean election lost the group's records, the generation
        // numbers of the group's new life can repeat its old ones.
        // A consumer-protocol group (KIP-848) has no generations: a
        // partition is never handed to a member before its last owner
        // reported it gone, so no two of its members own one at once
        // (counted under generation 0).
        let signature = |consumer: &super::consumer::Consumer| {
            (consumer.phase as u8, consumer.generation, consumer.assignment.len())
        };
        let groups_changed = self.consumers.len() != self.monitor.group_signature.len()
            || self
                .consumers
                .iter()
                .zip(&self.monitor.group_signature)
                .any(|(consumer, seen)| signature(consumer) != *seen);
        if groups_changed {
            self.monitor.group_signature = self.consumers.iter().map(signature).collect();
        }
        // Who the coordinators count, read only when a consumer's phase,
        // generation or assignment changed (else nothing is compared).
        let mut current: std::collections::BTreeSet<(&str, &str, u32)> = std::collections::BTreeSet::new();
        // Only coordinators on their partition's current leader count: one
        // left on a broker cut off from the controller (not yet told it
        // lost the partition) speaks for nobody.
        for (&id, broker) in self.brokers.iter().filter(|_| groups_changed) {
            for (partition, coordinator) in &broker.coordinators {
                let leads = self
                    .controller
                    .partitions
                    .get(partition)
                    .is_some_and(|registration| registration.leader == Some(id));
                if !leads {
                    continue;
                }
                for (group, members) in coordinator.consumer.member_ids() {
                    for member in members {
                        current.insert((group, member, 0));
                    }
                }
                for group in coordinator.shard.groups() {
                    for member in &group.members {
                        current.insert((
                            group.group_id.as_str(),
                            member.member_id.as_str(),
                            u32::try_from(group.generation).unwrap_or(0),
                        ));
                    }
                }
            }
        }
        let mut owners: BTreeMap<(&str, u32, &TopicPartition), u32> = BTreeMap::new();
        for consumer in self.consumers.iter().filter(|_| groups_changed) {
            if consumer.phase != super::consumer::ConsumerPhase::Consuming {
                continue;
            }
            // An unclean election of the group's `__consumer_offsets`
            // partition may lose the coordinator's records of who owns
            // what (as Kafka's would): the invariant presumes they survive.
            if self
                .monitor
                .unclean
                .contains(&self.offsets_partition(&consumer.config.group))
            {
                continue;
            }
            let generation = if consumer.config.consumer_protocol() {
                0
            } else {
                consumer.generation
            };
            let counted = consumer
                .member_id
                .as_deref()
                .is_some_and(|member| current.contains(&(consumer.config.group.as_str(), member, generation)));
            if !counted {
                continue;
            }
            for partition in &consumer.assignment {
                let key = (consumer.config.group.as_str(), generation, partition);
                if let Some(&other) = owners.get(&key) {
                    violations.push((
                        Invariant::OneOwnerPerGeneration,
                        partition.clone(),
                        consumer.generation,
                        format!(
                            "consumer-{other} and consumer-{} both own {partition} in generation {} of group {}",
                            consumer.id, consumer.generation, consumer.config.group
                        ),
                    ));
                } else {
                    owners.insert(key, consumer.id);
                }
            }
        }
    }

    /// The audit at the end of a run: every acknowledged record checked
    /// against its partition's leader log, whether or not a change marked
    /// the partition for checking. Returns the records it finds lost that
    /// the checks after each event had not named (it names them now): empty
    /// unless those checks missed a loss, which would have been silent.
    pub fn final_loss_audit(&mut self) -> Vec<RecordId> {
        let mut by_partition: BTreeMap<TopicPartition, Vec<RecordId>> = BTreeMap::new();
        for (id, record) in self.records.iter().enumerate() {
            if let (Some(partition), Some(Some(_)), false) = (&record.partition, record.acknowledged, record.lost) {
                by_partition.entry(partition.clone()).or_default().push(id as RecordId);
            }
        }
        let mut silent = Vec::new();
        for (partition, records) in by_partition {
            self.check_acknowledged(&partition, Some(&records));
            silent.extend(records.into_iter().filter(|&record| self.records[record as usize].lost));
        }
        silent
    }

    /// Finds acknowledged records (all of them, or just `only`) that the
    /// partition's current leader no longer has.
    pub(crate) fn check_acknowledged(&mut self, partition: &TopicPartition, only: Option<&[RecordId]>) {
        let Some(registration) = self.controller.partitions.get(partition) else {
            return;
        };
        let Some(leader) = registration.leader else { return };
        let Some(broker) = self.brokers.get(&leader) else {
            return;
        };
        // A leader whose log a power loss cut that does not serve yet (it is
        // down, or back but not yet told of a new leader epoch) is judged
        // once a leader serves.
        if !broker.leading.contains_key(partition) && self.monitor.power_lost.contains(&(leader, partition.clone())) {
            self.monitor.mark_dirty(partition);
            return;
        }
        let Some(log) = broker.logs.get(partition) else {
            return;
        };
        let candidates: Vec<RecordId> = match only {
            Some(records) => records.to_vec(),
            None => (0..self.records.len() as RecordId)
                .filter(|&record| self.records[record as usize].partition.as_ref() == Some(partition))
                .collect(),
        };
        let mut lost = Vec::new();
        // The batch the last record was found in: the records of one
        // acknowledged batch are looked up one after another.
        let mut batch = None;
        for record in candidates {
            let produced = &self.records[record as usize];
            if produced.lost {
                continue;
            }
            let Some(Some(offset)) = produced.acknowledged else {
                continue;
            };
            // Below the log start, retention deleted it; gone from a cleaned
            // stretch, compaction kept a newer record of its key: policy,
            // not loss.
            let deleted = offset < log.log_start_offset() || log.compacted_away(offset);
            if !batch.is_some_and(|batch: &LogBatch<Record>| (batch.base_offset..=batch.last_offset).contains(&offset))
            {
                batch = log.log.first_batch_from(offset);
            }
            let present = batch
                .and_then(|batch| PartitionLog::record_in(batch, offset))
                .is_some_and(|stored| stored.id == record);
            if !present && !deleted {
                lost.push(record);
            }
        }
        if lost.is_empty() {
            return;
        }
        let unclean = self.monitor.unclean.contains(partition);
        let min_isr = self
            .topic_config(partition)
            .map_or(1, |topic| topic.min_insync_replicas);
        let mut safe = Vec::new();
        let mut reasons = BTreeSet::new();
        for &record in &lost {
            self.records[record as usize].lost = true;
            let acks = self.records[record as usize].acks;
            let powered_off = self.monitor.power_erased.contains(&(leader, record));
            if powered_off {
                self.monitor.lost_to_power.insert(record);
                self.monitor.partitions_lost_to_power.insert(partition.clone());
            }
            if acks == Some(Acks::All) && min_isr >= 2 && !unclean && !powered_off {
                safe.push(record);
            }
            reasons.insert(match acks {
                _ if powered_off => LossCause::PowerLoss,
                Some(Acks::Leader) => LossCause::AcksOneUnreplicated,
                Some(Acks::All) if unclean => LossCause::UncleanElection,
                Some(Acks::All) => LossCause::AcksAllMissing,
                _ => LossCause::NoGuarantee,
            });
        }
        let reason = LossReason {
            causes: reasons.into_iter().collect(),
            leader,
            leader_epoch: registration.leader_epoch,
        };
        self.record(TraceKind::RecordsLost {
            partition: partition.clone(),
            records: lost,
            reason,
        });
        if !safe.is_empty() {
            self.monitor.violations += 1;
            self.record(TraceKind::InvariantViolated {
                invariant: Invariant::NoAcknowledgedRecordLost,
                detail: format!("records {} of {partition} were acknowledged under acks=all, min.insync.replicas={min_isr} and clean elections, and are lost", ranges(&safe)),
            });
        }
    }
}

impl Simulation {
    /// The monitor: no record a `read_committed` consumer returns belongs
    /// to a transaction its leader's transaction index lists as aborted.
    pub(crate) fn check_read_committed(
        &mut self,
        id: u32,
        from: NodeId,
        partition: &TopicPartition,
        returned: &[Record],
    ) {
        let NodeId::Broker(broker) = from else { return };
        let Some(log) = self.brokers.get(&broker).and_then(|broker| broker.logs.get(partition)) else {
            return;
        };
        let aborted: Vec<crate::protocol::Offset> = returned
            .iter()
            .filter_map(|record| {
                let batch = record.batch?;
                (batch.transactional
                    && log.txn_index.entries().iter().any(|txn| {
                        txn.producer_id == batch.producer_id
                            && (txn.first_offset..=txn.last_offset).contains(&record.offset)
                    }))
                .then_some(record.offset)
            })
            .collect();
        if !aborted.is_empty() {
            self.monitor.violations += 1;
            self.record(TraceKind::InvariantViolated {
                invariant: Invariant::ReadCommittedSkipsAborted,
                detail: format!("consumer-{id} (read_committed) returned offsets {aborted:?} of {partition}, which belong to aborted transactions"),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::sim::scenario::Scenario;

    /// The audit is built to catch what the checks after each event miss:
    /// records cut from a leader's log behind the monitor's back are found
    /// and named; a healthy run gives it nothing.
    #[test]
    fn the_final_audit_finds_a_loss_the_checks_after_each_event_did_not_see() {
        let scenario = Scenario::from_json(include_str!("../../../../scenarios/happy-path.json")).expect("parses");
        let mut simulation = scenario.run().expect("plays").simulation;
        assert!(simulation.final_loss_audit().is_empty());
        let partition = simulation.records[0].partition.clone().expect("sent");
        let acknowledged: Vec<u64> = (0..simulation.records.len() as u64)
            .filter(|&record| {
                let produced = &simulation.records[record as usize];
                produced.partition.as_ref() == Some(&partition) && matches!(produced.acknowledged, Some(Some(_)))
            })
            .collect();
        assert!(!acknowledged.is_empty());
        let leader = simulation.controller.partitions[&partition].leader.expect("led");
        let now = simulation.now();
        // Behind the monitor's back: nothing marks the partition dirty.
        let log = simulation.broker(leader).logs.get_mut(&partition).expect("a replica");
        let start = log.log.log_start_offset;
        log.truncate_to(start, now);
        assert_eq!(simulation.final_loss_audit(), acknowledged);
        assert_eq!(simulation.lost_records(), acknowledged, "and named now");
    }
}
