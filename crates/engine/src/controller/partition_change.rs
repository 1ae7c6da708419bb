//! Partition leadership and ISR changes as the KRaft controller computes
//! them (`PartitionChangeBuilder`, `PartitionRegistration#merge`).
//!
//! Every change the controller commits is a `PartitionChangeRecord`. Each
//! record bumps the *partition* epoch; only records that set the leader
//! (even to the same broker) bump the *leader* epoch. Elections pick the
//! first valid replica in replica-list order; a valid leader is in the
//! target ISR (or, when that is empty, in the eligible leader replicas) and
//! "acceptable" (alive and not fenced). An unclean election may pick an
//! acceptable replica outside the ISR, and then the ISR becomes just that
//! replica and the partition is marked as recovering.
//!
//! Beyond leader and ISR the builder also tracks KIP-966's eligible leader
//! replicas (ELR: former ISR members that are safe leaders while the ISR
//! is below `min.insync.replicas`), the last known leader kept in
//! `lastKnownElr`, and reassignments (`addingReplicas`/`removingReplicas`,
//! completed once the ISR holds every target replica).
//!
//! Lists Kafka builds from a `HashSet<Integer>` (the ELR and the last known
//! ELR) come out in ascending order here: that is Java's iteration order
//! for broker ids below the set's table size (16), which is what Kafka
//! writes for the small clusters the simulator runs.

use crate::sorting::Gather;
use std::collections::BTreeSet;

use serde::Serialize;

use crate::protocol::BrokerId;

pub use crate::protocol::metadata::{LeaderRecovery, PartitionRegistration};

/// Which election to run (`PartitionChangeBuilder.Election`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Election {
    /// Bring the preferred replica (first in the list) back if it is valid.
    Preferred,
    /// Keep the current leader if valid, else the first valid replica.
    Online,
    /// As online, then any acceptable replica outside the ISR (data may be lost).
    Unclean,
}

/// The outcome of an election (`ElectionResult`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ElectionResult {
    /// The leader chosen, `None` for no leader.
    pub leader: Option<BrokerId>,
    /// Whether it came from outside the ISR.
    pub unclean: bool,
}

/// A change the controller commits (`PartitionChangeRecord`); `None`
/// fields are unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct PartitionChangeRecord {
    /// A new ISR.
    pub isr: Option<Vec<BrokerId>>,
    /// A leader assignment: `Some(None)` means "no leader". Setting it,
    /// even to the same broker, bumps the leader epoch.
    pub leader: Option<Option<BrokerId>>,
    /// A new replica list.
    pub replicas: Option<Vec<BrokerId>>,
    /// A new leader recovery state (set after an unclean election, or when
    /// the leader reports it has recovered).
    pub leader_recovery: Option<LeaderRecovery>,
    /// A new ELR (`eligibleLeaderReplicas`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elr: Option<Vec<BrokerId>>,
    /// A new last known ELR (`lastKnownElr`; `None` members are -1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_known_elr: Option<Vec<Option<BrokerId>>>,
    /// A new list of replicas being removed (`removingReplicas`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub removing_replicas: Option<Vec<BrokerId>>,
    /// A new list of replicas being added (`addingReplicas`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adding_replicas: Option<Vec<BrokerId>>,
}

/// A proposed change: the target ISR and replicas, and the election to run
/// (`PartitionChangeBuilder` and its setters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionChange<'a> {
    /// The partition as it stands.
    pub partition: &'a PartitionRegistration,
    /// The ISR wanted (defaults to the current one).
    pub target_isr: Vec<BrokerId>,
    /// The replicas wanted (defaults to the current ones).
    pub target_replicas: Vec<BrokerId>,
    /// The replicas a reassignment removes (defaults to the current ones).
    pub target_removing: Vec<BrokerId>,
    /// The replicas a reassignment adds (defaults to the current ones).
    pub target_adding: Vec<BrokerId>,
    /// Which election to run.
    pub election: Election,
    /// The brokers that can lead (registered, alive and unfenced).
    pub acceptable: &'a BTreeSet<BrokerId>,
    /// Metadata versions before 3.6 bump the leader epoch when the ISR
    /// shrinks (a workaround for KAFKA-15021); later ones do not.
    pub bump_leader_epoch_on_isr_shrink: bool,
    /// `eligible.leader.replicas.enable` (KIP-966); off by default.
    pub eligible_leader_replicas_enabled: bool,
    /// The topic's effective `min.insync.replicas` (only used with ELR).
    pub min_isr: usize,
    /// Brokers that restarted after an unclean shutdown: they leave the
    /// ISR and may not stay in the ELR (`setUncleanShutdownReplicas`).
    pub unclean_shutdown_replicas: Vec<BrokerId>,
    /// The leader recovery state wanted (defaults to the current one;
    /// `setTargetLeaderRecoveryState`, from AlterPartition).
    pub target_leader_recovery: LeaderRecovery,
    /// `useLastKnownLeaderInBalancedRecovery` (always on in Kafka): with
    /// ELR, `lastKnownElr` holds the last leader, who may be re-elected
    /// when ISR and ELR are both empty.
    pub use_last_known_leader: bool,
    /// A simulator setting, off in Kafka: mark *every* unclean election
    /// as RECOVERING. Kafka writes the state only when the partition is
    /// not already recovering, and leaves it until the leader reports
    /// recovery (AlterPartition); the simulator has no such report and
    /// instead treats any leader change without a recovery field as the
    /// end of recovery ([`PartitionRegistration::apply`]), so it needs the
    /// field on every unclean election. [`PartitionChange::new`] turns it on.
    pub mark_every_unclean_election: bool,
    /// Kafka 4.0's rule, off by default: the last known leader is elected
    /// even when it cannot lead (fenced, or Kafka's -1 for "none"), so a
    /// partition whose last known ELR is `[-1]` never gets a leader, not
    /// even from an unclean election. Kafka 4.1 elects it only when it is
    /// an acceptable leader (KAFKA-19522) and otherwise goes on to the
    /// unclean election.
    pub elect_unacceptable_last_known_leader: bool,
}

/// The builder's working targets while `build` runs.
struct Targets {
    isr: Vec<BrokerId>,
    replicas: Vec<BrokerId>,
    removing: Vec<BrokerId>,
    adding: Vec<BrokerId>,
    elr: Vec<BrokerId>,
    last_known_elr: Vec<Option<BrokerId>>,
}

/// `Replicas.contains`: every broker of `b` is in `a`.
fn contains_all(a: &[BrokerId], b: &[BrokerId]) -> bool {
    b.iter().all(|replica| a.contains(replica))
}

impl<'a> PartitionChange<'a> {
    /// A change that keeps replicas and ISR and runs `election`, with ELR
    /// off and [`PartitionChange::mark_every_unclean_election`] on (the
    /// simulator's controller).
    pub fn new(partition: &'a PartitionRegistration, election: Election, acceptable: &'a BTreeSet<BrokerId>) -> Self {
        PartitionChange {
            partition,
            target_isr: partition.isr.clone(),
            target_replicas: partition.replicas.clone(),
            target_removing: partition.removing_replicas.clone(),
            target_adding: partition.adding_replicas.clone(),
            election,
            acceptable,
            bump_leader_epoch_on_isr_shrink: false,
            eligible_leader_replicas_enabled: false,
            min_isr: 1,
            unclean_shutdown_replicas: Vec::new(),
            target_leader_recovery: partition.leader_recovery,
            use_last_known_leader: true,
            mark_every_unclean_election: true,
            elect_unacceptable_last_known_leader: false,
        }
    }

    /// The same change with Kafka's own settings (as `new`, but
    /// [`PartitionChange::mark_every_unclean_election`] off).
    pub fn kafka(partition: &'a PartitionRegistration, election: Election, acceptable: &'a BTreeSet<BrokerId>) -> Self {
        PartitionChange {
            mark_every_unclean_election: false,
            ..PartitionChange::new(partition, election, acceptable)
        }
    }

    fn initial_targets(&self) -> Targets {
        Targets {
            isr: self.target_isr.clone(),
            replicas: self.target_replicas.clone(),
            removing: self.target_removing.clone(),
            adding: self.target_adding.clone(),
            elr: self.partition.elr.clone(),
            last_known_elr: self.partition.last_known_elr.clone(),
        }
    }

    /// `isValidNewLeader`: in the target ISR, or in the target ELR when the
    /// target ISR is empty, and acceptable.
    fn is_valid_leader(&self, targets: &Targets, replica: BrokerId) -> bool {
        (targets.isr.contains(&replica) || (targets.isr.is_empty() && targets.elr.contains(&replica)))
            && self.acceptable.contains(&replica)
    }

    /// `electLeader` on the builder as set up (before `build` moves the
    /// targets).
    pub fn elect_leader(&self) -> ElectionResult {
        self.elect(&self.initial_targets())
    }

    /// `electLeader`, `electPreferredLeader` and `electAnyLeader`.
    fn elect(&self, targets: &Targets) -> ElectionResult {
        let clean = |leader: BrokerId| ElectionResult {
            leader: Some(leader),
            unclean: false,
        };
        let valid_current = self
            .partition
            .leader
            .filter(|&leader| self.is_valid_leader(targets, leader));
        if self.election == Election::Preferred {
            // electPreferredLeader: replicas[0], else the current leader,
            // else the next valid replica.
            if let Some(&preferred) = targets.replicas.first() {
                if self.is_valid_leader(targets, preferred) {
                    return clean(preferred);
                }
            }
            if let Some(current) = valid_current {
                return clean(current);
            }
            if let Some(next) = targets
                .replicas
                .iter()
                .skip(1)
                .copied()
                .find(|&replica| self.is_valid_leader(targets, replica))
            {
                return clean(next);
            }
        } else {
            // electAnyLeader: the current leader, else the first valid replica.
            if let Some(current) = valid_current {
                return clean(current);
            }
            if let Some(first) = targets
                .replicas
                .iter()
                .copied()
                .find(|&replica| self.is_valid_leader(targets, replica))
            {
                return clean(first);
            }
        }
        if let Some(last_leader) = self.last_known_leader(targets) {
            return ElectionResult {
                leader: last_leader,
                unclean: true,
            };
        }
        if self.election == Election::Unclean {
            if let Some(leader) = targets
                .replicas
                .iter()
                .copied()
                .find(|replica| self.acceptable.contains(replica))
            {
                return ElectionResult {
                    leader: Some(leader),
                    unclean: true,
                };
            }
        }
        ElectionResult {
            leader: None,
            unclean: false,
        }
    }

    /// `canElectLastKnownLeader`: with ELR and balanced recovery, ISR and
    /// ELR both empty and exactly one last known ELR member, that member
    /// is elected if it is an acceptable leader (Kafka 4.1, KAFKA-19522).
    /// Kafka 4.0 only *logged* when it was not, and elected it even then
    /// (so a remembered -1 "elected" no leader); see
    /// [`PartitionChange::elect_unacceptable_last_known_leader`].
    fn last_known_leader(&self, targets: &Targets) -> Option<Option<BrokerId>> {
        if !self.eligible_leader_replicas_enabled || !self.use_last_known_leader {
            return None;
        }
        if !targets.elr.is_empty() || !targets.isr.is_empty() {
            return None;
        }
        match self.partition.last_known_elr.as_slice() {
            [last]
                if self.elect_unacceptable_last_known_leader
                    || last.is_some_and(|last| self.acceptable.contains(&last)) =>
            {
                Some(*last)
            }
            _ => None,
        }
    }

    /// `completeReassignmentIfNeeded` with
    /// `PartitionReassignmentReplicas.maybeCompleteReassignment`: once
    /// the target ISR, without the removed replicas, holds every target
    /// replica, the removed replicas leave replicas and ISR and the
    /// reassignment ends.
    fn complete_reassignment(targets: &mut Targets) {
        if targets.removing.is_empty() && targets.adding.is_empty() {
            return;
        }
        let mut isr = targets.isr.clone();
        let mut replicas = targets.replicas.clone();
        if !targets.removing.is_empty() {
            isr.retain(|replica| !targets.removing.contains(replica));
            if isr.is_empty() {
                return;
            }
            replicas.retain(|replica| !targets.removing.contains(replica));
            if replicas.is_empty() {
                return;
            }
        }
        if !contains_all(&isr, &replicas) {
            return;
        }
        targets.isr = isr;
        targets.replicas = replicas;
        targets.removing.clear();
        targets.adding.clear();
    }

    /// `maybePopulateTargetElr`: with ELR on, an ISR at or above min ISR
    /// clears ELR and last known ELR; below it, the ELR becomes (current
    /// ELR ∪ current ISR) minus the target ISR and minus unclean-shutdown
    /// replicas, and the last known ELR (current ELR ∪ current ISR ∪ last
    /// known ELR) minus the target ISR and the new ELR.
    fn populate_target_elr(&self, targets: &mut Targets) {
        if !self.eligible_leader_replicas_enabled {
            return;
        }
        if targets.isr.len() >= self.min_isr {
            targets.elr.clear();
            targets.last_known_elr.clear();
            return;
        }
        // Java's HashSet iterates small ids in ascending order, and -1
        // (`None`) first.
        let mut candidates: BTreeSet<Option<BrokerId>> = targets.elr.iter().copied().map(Some).gather();
        candidates.extend(self.partition.isr.iter().copied().map(Some));
        let elr: Vec<BrokerId> = candidates
            .iter()
            .flatten()
            .copied()
            .filter(|replica| !targets.isr.contains(replica) && !self.unclean_shutdown_replicas.contains(replica))
            .collect();
        candidates.extend(targets.last_known_elr.iter().copied());
        targets.last_known_elr = candidates
            .into_iter()
            .filter(|replica| replica.is_none_or(|replica| !targets.isr.contains(&replica) && !elr.contains(&replica)))
            .collect();
        targets.elr = elr;
    }

    /// `tryElection`: sets the leader when the election picks a different
    /// one. A leader taken from the ELR becomes the whole ISR and leaves
    /// the ELR; an unclean leader becomes the whole ISR (in the record) and
    /// the partition starts RECOVERING unless it already is.
    fn try_election(&self, targets: &mut Targets, record: &mut PartitionChangeRecord) {
        let result = self.elect(targets);
        if result.leader == self.partition.leader {
            return;
        }
        if let Some(leader) = result.leader.filter(|leader| targets.elr.contains(leader)) {
            targets.isr = vec![leader];
            targets.elr.retain(|&replica| replica != leader);
        }
        record.leader = Some(result.leader);
        if result.unclean {
            // Kafka would write an ISR of [-1] for a remembered -1, which its
            // invariants keep out of reach (a partition with a leader has
            // no last known ELR); the simulator cannot hold -1 in an ISR.
            if let Some(leader) = result.leader {
                record.isr = Some(vec![leader]);
            }
            if self.partition.leader_recovery != LeaderRecovery::Recovering || self.mark_every_unclean_election {
                record.leader_recovery = Some(LeaderRecovery::Recovering);
            }
        }
    }

    /// `triggerLeaderEpochBumpForReplicaReassignmentIfNeeded`: a replica
    /// set that loses a member re-sets the leader (bumping its epoch).
    fn bump_for_reassignment(&self, targets: &Targets, record: &mut PartitionChangeRecord) {
        if record.leader.is_none() && !contains_all(&targets.replicas, &self.partition.replicas) {
            record.leader = Some(self.partition.leader);
        }
    }

    /// `triggerLeaderEpochBumpForIsrShrinkIfNeeded` (metadata versions
    /// before 3.6 only): an ISR shrink re-sets the leader.
    fn bump_for_isr_shrink(&self, record: &mut PartitionChangeRecord) {
        if !self.bump_leader_epoch_on_isr_shrink || record.leader.is_some() {
            return;
        }
        if let Some(isr) = &record.isr {
            if !contains_all(isr, &self.partition.isr) {
                record.leader = Some(self.partition.leader);
            }
        }
    }

    /// `maybeUpdateRecordElr`: an unclean election (the record already
    /// sets the ISR) or ELR off clears ELR and last known ELR; a changed
    /// ELR is written. Without balanced recovery the last known ELR is
    /// written here too (kept as it is while the partition has no leader
    /// and it holds a single last leader).
    fn update_record_elr(&self, targets: &mut Targets, record: &mut PartitionChangeRecord) {
        let clean_election = record.isr.is_none();
        if !clean_election || !self.eligible_leader_replicas_enabled {
            targets.elr.clear();
            targets.last_known_elr.clear();
        }
        if targets.elr != self.partition.elr {
            record.elr = Some(targets.elr.clone());
        }
        let stays_leaderless = match record.leader {
            Some(None) => true,
            None => self.partition.leader.is_none(),
            Some(Some(_)) => false,
        };
        if self.use_last_known_leader && self.partition.last_known_elr.len() == 1 && stays_leaderless {
            targets.last_known_elr = self.partition.last_known_elr.clone();
        }
        if self.use_last_known_leader {
            return;
        }
        if targets.last_known_elr != self.partition.last_known_elr {
            record.last_known_elr = Some(targets.last_known_elr.clone());
        }
    }

    /// `maybeUpdateLastKnownLeader` (ELR and balanced recovery on): the
    /// first time the ISR becomes empty the current leader is remembered
    /// as the last known ELR; a partition that gets or keeps a leader
    /// clears it.
    fn update_last_known_leader(&self, record: &mut PartitionChangeRecord) {
        if !self.use_last_known_leader || !self.eligible_leader_replicas_enabled {
            return;
        }
        let isr_emptied = record.isr.as_ref().is_some_and(Vec::is_empty);
        let already_remembered = self.partition.last_known_elr == [self.partition.leader];
        let has_leader = match record.leader {
            Some(Some(_)) => true,
            Some(None) => false,
            None => self.partition.leader.is_some(),
        };
        if isr_emptied && !already_remembered {
            // Kafka writes the leader field as is: -1 when there is none.
            record.last_known_elr = Some(vec![self.partition.leader]);
        } else if has_leader && !self.partition.last_known_elr.is_empty() {
            record.last_known_elr = Some(Vec::new());
        }
    }

    /// `setAssignmentChanges`: replicas (when any), removing and adding
    /// replicas that differ from the partition's.
    fn set_assignment_changes(&self, targets: &Targets, record: &mut PartitionChangeRecord) {
        if !targets.replicas.is_empty() && targets.replicas != self.partition.replicas {
            record.replicas = Some(targets.replicas.clone());
        }
        if targets.removing != self.partition.removing_replicas {
            record.removing_replicas = Some(targets.removing.clone());
        }
        if targets.adding != self.partition.adding_replicas {
            record.adding_replicas = Some(targets.adding.clone());
        }
    }

    /// `build`: the record to commit, or `None` when nothing changes
    /// (`changeRecordIsNoOp`).
    pub fn build(&self) -> Option<PartitionChangeRecord> {
        let mut record = PartitionChangeRecord::default();
        let mut targets = self.initial_targets();
        Self::complete_reassignment(&mut targets);
        self.populate_target_elr(&mut targets);
        self.try_election(&mut targets, &mut record);
        self.bump_for_reassignment(&targets, &mut record);
        self.update_record_elr(&mut targets, &mut record);
        // The ISR may only become empty with ELR on; an unclean election
        // has already set it.
        if record.isr.is_none()
            && (!targets.isr.is_empty() || self.eligible_leader_replicas_enabled)
            && targets.isr != self.partition.isr
        {
            record.isr = Some(targets.isr.clone());
        }
        self.bump_for_isr_shrink(&mut record);
        self.update_last_known_leader(&mut record);
        self.set_assignment_changes(&targets, &mut record);
        if self.target_leader_recovery != self.partition.leader_recovery {
            record.leader_recovery = Some(self.target_leader_recovery);
        }
        (record != PartitionChangeRecord::default()).then_some(record)
    }
}

impl PartitionRegistration {
    /// `PartitionRegistration#merge`: applies a committed record exactly as
    /// Kafka does. Every field the record sets replaces the partition's;
    /// the partition epoch always moves; the leader epoch moves iff the
    /// record sets the leader; the recovery state changes only when the
    /// record carries one.
    pub fn merge(&mut self, record: &PartitionChangeRecord) {
        if let Some(replicas) = &record.replicas {
            self.replicas = replicas.clone();
        }
        if let Some(isr) = &record.isr {
            self.isr = isr.clone();
        }
        if let Some(removing) = &record.removing_replicas {
            self.removing_replicas = removing.clone();
        }
        if let Some(adding) = &record.adding_replicas {
            self.adding_replicas = adding.clone();
        }
        if let Some(leader) = record.leader {
            self.leader = leader;
            self.leader_epoch += 1;
        }
        if let Some(recovery) = record.leader_recovery {
            self.leader_recovery = recovery;
        }
        if let Some(elr) = &record.elr {
            self.elr = elr.clone();
        }
        if let Some(last_known_elr) = &record.last_known_elr {
            self.last_known_elr = last_known_elr.clone();
        }
        self.partition_epoch += 1;
    }

    /// The simulator's merge: [`PartitionRegistration::merge`]. A
    /// partition elected uncleanly stays RECOVERING until its leader
    /// reports recovery in an AlterPartition (KIP-704), as in Kafka.
    pub fn apply(&mut self, record: &PartitionChangeRecord) {
        self.merge(record);
    }
}
