//! When a partition's high watermark moves, and what a produce request gets
//! (`kafka.cluster.Partition`: `maybeIncrementLeaderHW`,
//! `appendRecordsToLeader`, `checkEnoughReplicasReachOffset`).
//!
//! The high watermark is the offset below which records are committed:
//! consumers read only below it, and `acks=all` producers are answered once
//! it passes their records.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{BrokerId, Offset};

pub use crate::protocol::acks::Acks;

/// `min(min.insync.replicas, replication factor)`: a topic with fewer
/// replicas than `min.insync.replicas` can still accept `acks=all` writes
/// when all its replicas are in sync (`Partition#effectiveMinIsr`).
pub fn effective_min_isr(min_insync_replicas: u32, replication_factor: u32) -> u32 {
    min_insync_replicas.min(replication_factor)
}

/// What the leader sees when it re-evaluates its high watermark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HighWatermarkInputs<'a> {
    /// The leader's own log end offset.
    pub leader_log_end_offset: Offset,
    /// The current high watermark.
    pub current: Offset,
    /// The committed ISR (leader included).
    pub isr: &'a [BrokerId],
    /// The maximal ISR: the ISR plus members of an AlterPartition still in
    /// flight (`partitionState.maximalIsr`).
    pub maximal_isr: &'a [BrokerId],
    /// The leader.
    pub leader: BrokerId,
    /// Each follower's log end offset as the leader knows it.
    pub follower_log_end_offsets: &'a BTreeMap<BrokerId, Offset>,
    /// Followers outside the ISR that are caught up and eligible to join it
    /// (they hold the high watermark back so that they can join).
    pub caught_up_eligible: &'a [BrokerId],
    /// `min.insync.replicas`.
    pub min_insync_replicas: u32,
    /// The partition's replication factor.
    pub replication_factor: u32,
}

/// Why the high watermark is where it is after a re-evaluation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum HighWatermarkDecision {
    /// It advanced to the smallest log end among the leader and the
    /// replicas that count; `held_back_by` names the replica(s) at that
    /// smallest log end.
    Advanced {
        /// The new high watermark.
        to: Offset,
        /// The replicas whose log end set it.
        held_back_by: Vec<BrokerId>,
    },
    /// It stays: nothing that counts is further along.
    Unchanged {
        /// The replicas whose log end keeps it here.
        held_back_by: Vec<BrokerId>,
    },
    /// It stays because the ISR is smaller than `min.insync.replicas`
    /// (KAFKA-15583, Kafka 3.7+).
    FrozenUnderMinIsr {
        /// The ISR size.
        isr_size: u32,
        /// The effective minimum.
        min_isr: u32,
    },
}

impl HighWatermarkDecision {
    /// The high watermark after the decision.
    pub fn value(&self, current: Offset) -> Offset {
        match self {
            HighWatermarkDecision::Advanced { to, .. } => *to,
            _ => current,
        }
    }
}

/// `maybeIncrementLeaderHW`: the minimum log end over the leader and every
/// follower that is in the maximal ISR or caught up and eligible; it only
/// ever moves forward, and not at all while the ISR is under the minimum.
pub fn evaluate(inputs: &HighWatermarkInputs<'_>) -> HighWatermarkDecision {
    let min_isr = effective_min_isr(inputs.min_insync_replicas, inputs.replication_factor);
    let isr_size = inputs.isr.len() as u32;
    if isr_size < min_isr {
        return HighWatermarkDecision::FrozenUnderMinIsr { isr_size, min_isr };
    }
    let mut counted: BTreeMap<BrokerId, Offset> = BTreeMap::new();
    counted.insert(inputs.leader, inputs.leader_log_end_offset);
    for &replica in inputs.maximal_isr.iter().chain(inputs.caught_up_eligible) {
        if replica != inputs.leader {
            let end = inputs.follower_log_end_offsets.get(&replica).copied().unwrap_or(0);
            counted.insert(replica, end);
        }
    }
    let lowest = counted.values().copied().min().unwrap_or(inputs.leader_log_end_offset);
    let held_back_by: Vec<BrokerId> = counted
        .iter()
        .filter(|(_, &end)| end == lowest)
        .map(|(&replica, _)| replica)
        .collect();
    if lowest > inputs.current {
        HighWatermarkDecision::Advanced {
            to: lowest,
            held_back_by,
        }
    } else {
        HighWatermarkDecision::Unchanged { held_back_by }
    }
}

/// What the leader does with a produce request when it arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProduceAdmission {
    /// `NOT_ENOUGH_REPLICAS`: `acks=all` and the ISR is below the minimum;
    /// nothing is appended.
    RejectNotEnoughReplicas,
    /// Append, and answer at once (`acks=1`) or never (`acks=0`).
    AppendAndAnswer,
    /// Append and park the request until the high watermark passes it.
    AppendAndWait,
}

/// `appendRecordsToLeader`'s check before appending.
pub fn admit_produce(acks: Acks, isr_size: u32, min_insync_replicas: u32, replication_factor: u32) -> ProduceAdmission {
    match acks {
        Acks::All if isr_size < effective_min_isr(min_insync_replicas, replication_factor) => {
            ProduceAdmission::RejectNotEnoughReplicas
        }
        Acks::All => ProduceAdmission::AppendAndWait,
        Acks::Leader | Acks::None => ProduceAdmission::AppendAndAnswer,
    }
}

/// The state of an `acks=all` request parked in purgatory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ParkedProduce {
    /// Still waiting for the high watermark.
    Waiting,
    /// Committed: answer with success.
    Committed,
    /// `NOT_ENOUGH_REPLICAS_AFTER_APPEND`: committed, but the maximal ISR
    /// shrank below the minimum while waiting (the records *are* in the log).
    NotEnoughReplicasAfterAppend,
}

/// `checkEnoughReplicasReachOffset`: `required_offset` is the batch's last
/// offset + 1.
pub fn check_parked_produce(
    high_watermark: Offset,
    required_offset: Offset,
    maximal_isr_size: u32,
    min_insync_replicas: u32,
    replication_factor: u32,
) -> ParkedProduce {
    if high_watermark < required_offset {
        ParkedProduce::Waiting
    } else if maximal_isr_size >= effective_min_isr(min_insync_replicas, replication_factor) {
        ParkedProduce::Committed
    } else {
        ParkedProduce::NotEnoughReplicasAfterAppend
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effective_min_isr_is_capped_by_the_replication_factor() {
        assert_eq!(effective_min_isr(5, 2), 2);
        assert_eq!(admit_produce(Acks::All, 2, 5, 2), ProduceAdmission::AppendAndWait);
    }
}
