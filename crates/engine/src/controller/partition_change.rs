//! Partition leadership and ISR changes as the KRaft controller computes
//! them (`PartitionChangeBuilder`, `PartitionRegistration#merge`).
//!
//! Every change the controller commits is a `PartitionChangeRecord`. Each
//! record bumps the *partition* epoch; only records that set the leader
//! (even to the same broker) bump the *leader* epoch. Elections pick the
//! first valid replica in replica-list order; a valid leader is in the
//! target ISR and "acceptable" (alive and not fenced). An unclean election
//! may pick an acceptable replica outside the ISR, and then the ISR becomes
//! just that replica and the partition is marked as recovering.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::replication::BrokerId;

/// Whether the partition's leader has recovered its log after an unclean
/// election (`LeaderRecoveryState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum LeaderRecovery {
    /// Normal.
    Recovered,
    /// Elected uncleanly; the log may have lost committed records.
    Recovering,
}

/// The controller's view of one partition (`PartitionRegistration`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PartitionRegistration {
    /// Assigned replicas; the first is the preferred leader.
    pub replicas: Vec<BrokerId>,
    /// In-sync replicas.
    pub isr: Vec<BrokerId>,
    /// The leader, `None` when the partition is offline (Kafka's -1).
    pub leader: Option<BrokerId>,
    /// Bumped whenever leadership is (re)assigned.
    pub leader_epoch: u32,
    /// Bumped by every change.
    pub partition_epoch: u32,
    /// Clean or recovering after an unclean election.
    pub leader_recovery: LeaderRecovery,
}

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
    /// Set after an unclean election.
    pub leader_recovery: Option<LeaderRecovery>,
}

/// A proposed change: the target ISR and replicas, and the election to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionChange<'a> {
    /// The partition as it stands.
    pub partition: &'a PartitionRegistration,
    /// The ISR wanted (defaults to the current one).
    pub target_isr: Vec<BrokerId>,
    /// The replicas wanted (defaults to the current ones).
    pub target_replicas: Vec<BrokerId>,
    /// Which election to run.
    pub election: Election,
    /// The brokers that can lead (registered, alive and unfenced).
    pub acceptable: &'a BTreeSet<BrokerId>,
    /// Metadata versions before 3.6 bump the leader epoch when the ISR
    /// shrinks (a workaround for KAFKA-15021); later ones do not.
    pub bump_leader_epoch_on_isr_shrink: bool,
}

impl<'a> PartitionChange<'a> {
    /// A change that keeps replicas and ISR and runs `election`.
    pub fn new(partition: &'a PartitionRegistration, election: Election, acceptable: &'a BTreeSet<BrokerId>) -> Self {
        PartitionChange {
            partition,
            target_isr: partition.isr.clone(),
            target_replicas: partition.replicas.clone(),
            election,
            acceptable,
            bump_leader_epoch_on_isr_shrink: false,
        }
    }

    fn is_valid_leader(&self, replica: BrokerId) -> bool {
        self.target_isr.contains(&replica) && self.acceptable.contains(&replica)
    }

    /// `electLeader`.
    pub fn elect_leader(&self) -> ElectionResult {
        let current = self.partition.leader;
        let valid_current = current.filter(|&leader| self.is_valid_leader(leader));
        if self.election == Election::Preferred {
            if let Some(&preferred) = self.target_replicas.first() {
                if self.is_valid_leader(preferred) {
                    return ElectionResult {
                        leader: Some(preferred),
                        unclean: false,
                    };
                }
            }
            if valid_current.is_some() {
                return ElectionResult {
                    leader: valid_current,
                    unclean: false,
                };
            }
            let next = self
                .target_replicas
                .iter()
                .skip(1)
                .copied()
                .find(|&replica| self.is_valid_leader(replica));
            return ElectionResult {
                leader: next,
                unclean: false,
            };
        }
        if valid_current.is_some() {
            return ElectionResult {
                leader: valid_current,
                unclean: false,
            };
        }
        if let Some(leader) = self
            .target_replicas
            .iter()
            .copied()
            .find(|&replica| self.is_valid_leader(replica))
        {
            return ElectionResult {
                leader: Some(leader),
                unclean: false,
            };
        }
        if self.election == Election::Unclean {
            if let Some(leader) = self
                .target_replicas
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

    /// `build`: the record to commit, or `None` when nothing changes.
    pub fn build(&self) -> Option<PartitionChangeRecord> {
        let mut record = PartitionChangeRecord::default();
        let mut target_isr = self.target_isr.clone();
        let election = self.elect_leader();
        if election.leader != self.partition.leader {
            record.leader = Some(election.leader);
            if let (true, Some(leader)) = (election.unclean, election.leader) {
                target_isr = vec![leader];
                record.leader_recovery = Some(LeaderRecovery::Recovering);
            }
        } else if self.bump_leader_epoch_on_isr_shrink
            && self.partition.isr.iter().any(|member| !target_isr.contains(member))
        {
            record.leader = Some(self.partition.leader);
        }
        // Removing a replica from the replica set bumps the leader epoch.
        if record.leader.is_none()
            && self
                .partition
                .replicas
                .iter()
                .any(|replica| !self.target_replicas.contains(replica))
        {
            record.leader = Some(self.partition.leader);
        }
        if target_isr != self.partition.isr {
            record.isr = Some(target_isr);
        }
        if self.target_replicas != self.partition.replicas {
            record.replicas = Some(self.target_replicas.clone());
        }
        (record != PartitionChangeRecord::default()).then_some(record)
    }
}

impl PartitionRegistration {
    /// `merge`: applies a committed record. The partition epoch always
    /// moves; the leader epoch moves iff the record sets the leader.
    pub fn apply(&mut self, record: &PartitionChangeRecord) {
        if let Some(isr) = &record.isr {
            self.isr = isr.clone();
        }
        if let Some(replicas) = &record.replicas {
            self.replicas = replicas.clone();
        }
        if let Some(leader) = record.leader {
            self.leader = leader;
            self.leader_epoch += 1;
            // A clean leader change ends any recovery.
            self.leader_recovery = record.leader_recovery.unwrap_or(LeaderRecovery::Recovered);
        } else if let Some(recovery) = record.leader_recovery {
            self.leader_recovery = recovery;
        }
        self.partition_epoch += 1;
    }
}
