//! Why a consumer group rebalances: the reasons a group coordinator
//! (classic or KIP-848) gives for starting a new generation or group epoch.

use serde::Serialize;

/// Why a group's coordinator started a rebalance (`Display` is the trace's
/// text; Kafka's `GroupMetadataManager` logs the same reasons).
#[allow(missing_docs)]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "kebab-case")]
pub enum RebalanceReason {
    /// None was recorded (a group loaded as it was).
    #[default]
    Unstated,
    /// A new member joined.
    Joined { member: String },
    /// A known member joined again.
    Rejoined { member: String },
    /// A member left with `LeaveGroup`.
    Left { member: String },
    /// Members missed `session.timeout.ms`.
    SessionTimeout { members: Vec<String> },
    /// Members did not send `SyncGroup` within the rebalance timeout.
    SyncTimeout,
    /// Writing the new generation to `__consumer_offsets` failed.
    GenerationNotStored,
    /// KIP-848: a member did not give up its revoked partitions within
    /// its rebalance timeout (`max.poll.interval.ms`).
    RebalanceTimeout { member: String },
}

impl std::fmt::Display for RebalanceReason {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RebalanceReason::Unstated => Ok(()),
            RebalanceReason::Joined { member } => write!(formatter, "{member} joined"),
            RebalanceReason::Rejoined { member } => write!(formatter, "{member} rejoined"),
            RebalanceReason::Left { member } => write!(formatter, "{member} left the group"),
            RebalanceReason::SessionTimeout { members } => {
                write!(formatter, "{} missed its session timeout", members.join(", "))
            }
            RebalanceReason::SyncTimeout => {
                write!(formatter, "members did not send SyncGroup within the rebalance timeout")
            }
            RebalanceReason::GenerationNotStored => write!(formatter, "the group's generation could not be stored"),
            RebalanceReason::RebalanceTimeout { member } => {
                write!(
                    formatter,
                    "{member} did not revoke its partitions within its rebalance timeout"
                )
            }
        }
    }
}
