//! A plain-data picture of a simulation at one moment, for the web app's
//! view models and the JavaScript API: what each broker holds, who leads
//! what, the controllers, the groups. Nothing here is needed to run the
//! simulation; it only reads it.

use serde::Serialize;

use crate::controller::partition_change::LeaderRecovery;
use crate::replication::{BrokerId, Offset};

use super::broker::BrokerStatus;
use super::consumer::ConsumerPhase;
use super::quorum::Role;
use super::Simulation;

/// The whole cluster at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterView {
    /// Virtual time.
    pub time_ms: u64,
    /// Events processed.
    pub events: u64,
    /// The brokers.
    pub brokers: Vec<BrokerView>,
    /// Every partition as the committed metadata has it.
    pub partitions: Vec<PartitionView>,
    /// The controllers.
    pub controllers: Vec<ControllerView>,
    /// The consumers.
    pub consumers: Vec<ConsumerView>,
}

/// One broker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BrokerView {
    /// Its id.
    pub id: BrokerId,
    /// "running", "dead" or "paused".
    pub status: String,
    /// Whether the controller has fenced it.
    pub fenced: bool,
    /// Its replicas.
    pub replicas: Vec<ReplicaView>,
}

/// One replica on a broker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaView {
    /// `topic-partition`.
    pub partition: String,
    /// "leader", "follower" or "offline" (this broker's belief).
    pub role: String,
    /// Log end offset.
    pub log_end_offset: Offset,
    /// High watermark.
    pub high_watermark: Offset,
    /// The leader epoch this broker is in, if it leads or follows.
    pub leader_epoch: Option<u32>,
}

/// One partition in the committed metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PartitionView {
    /// `topic-partition`.
    pub partition: String,
    /// The topic.
    pub topic: String,
    /// The leader, if any.
    pub leader: Option<BrokerId>,
    /// Assigned replicas.
    pub replicas: Vec<BrokerId>,
    /// In-sync replicas.
    pub isr: Vec<BrokerId>,
    /// Leader epoch.
    pub leader_epoch: u32,
    /// Partition epoch.
    pub partition_epoch: u32,
    /// Led by an unclean election and not recovered.
    pub recovering: bool,
}

/// One controller.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ControllerView {
    /// Its id.
    pub id: u32,
    /// Whether it runs.
    pub alive: bool,
    /// "leader", "follower" or "candidate".
    pub role: String,
    /// Its quorum epoch.
    pub epoch: u32,
    /// Metadata log entries it holds, and how many are committed.
    pub log_length: usize,
    /// Committed entries.
    pub committed: usize,
}

/// One consumer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerView {
    /// Its index.
    pub id: u32,
    /// Its group.
    pub group: String,
    /// Its member id, once joined.
    pub member_id: Option<String>,
    /// "stopped", "finding-coordinator", "joining", "syncing", "consuming".
    pub phase: String,
    /// Its generation.
    pub generation: u32,
    /// Its partitions with position, high watermark and lag.
    pub partitions: Vec<ConsumerPartitionView>,
    /// Records read so far.
    pub records_read: u64,
}

/// A consumer's partition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerPartitionView {
    /// `topic-partition`.
    pub partition: String,
    /// Next offset to read.
    pub position: Option<Offset>,
    /// The last offset this member committed for it, if any.
    pub committed: Option<Offset>,
    /// Last high watermark seen.
    pub high_watermark: Offset,
    /// `high watermark - position`.
    pub lag: Offset,
}

impl Simulation {
    /// A picture of the cluster now.
    pub fn view(&self) -> ClusterView {
        let brokers = self
            .brokers
            .values()
            .map(|broker| BrokerView {
                id: broker.id,
                status: match broker.status {
                    BrokerStatus::Running => "running",
                    BrokerStatus::Dead => "dead",
                    BrokerStatus::Paused { .. } => "paused",
                }
                .to_string(),
                fenced: self.controller.brokers.get(&broker.id).is_none_or(|state| state.fenced),
                replicas: broker
                    .logs
                    .iter()
                    .map(|(partition, log)| {
                        let (role, leader_epoch) = if let Some(leader) = broker.leading.get(partition) {
                            ("leader", Some(leader.leader_epoch))
                        } else if let Some(follower) = broker.following.get(partition) {
                            ("follower", Some(follower.leader_epoch))
                        } else {
                            ("offline", None)
                        };
                        ReplicaView {
                            partition: partition.to_string(),
                            role: role.to_string(),
                            log_end_offset: log.log_end_offset(),
                            high_watermark: log.high_watermark,
                            leader_epoch,
                        }
                    })
                    .collect(),
            })
            .collect();
        let partitions = self
            .controller
            .partitions
            .iter()
            .map(|(partition, registration)| PartitionView {
                partition: partition.to_string(),
                topic: partition.topic.to_string(),
                leader: registration.leader,
                replicas: registration.replicas.clone(),
                isr: registration.isr.clone(),
                leader_epoch: registration.leader_epoch,
                partition_epoch: registration.partition_epoch,
                recovering: registration.leader_recovery == LeaderRecovery::Recovering,
            })
            .collect();
        let controllers = self
            .quorum
            .nodes
            .values()
            .map(|node| ControllerView {
                id: node.id,
                alive: node.alive,
                role: match node.role {
                    Role::Leader => "leader",
                    Role::Follower => "follower",
                    Role::Candidate => "candidate",
                }
                .to_string(),
                epoch: node.epoch,
                log_length: node.log.len(),
                committed: node.committed,
            })
            .collect();
        let consumers = self
            .consumers
            .iter()
            .map(|consumer| ConsumerView {
                id: consumer.id,
                group: consumer.config.group.clone(),
                member_id: consumer.member_id.clone(),
                phase: match consumer.phase {
                    ConsumerPhase::Stopped => "stopped",
                    ConsumerPhase::FindingCoordinator => "finding-coordinator",
                    ConsumerPhase::Joining => "joining",
                    ConsumerPhase::Syncing => "syncing",
                    ConsumerPhase::Consuming => "consuming",
                }
                .to_string(),
                generation: consumer.generation,
                partitions: consumer
                    .assignment
                    .iter()
                    .map(|partition| {
                        let position = consumer.positions.get(partition).copied();
                        let high_watermark = consumer.high_watermarks.get(partition).copied().unwrap_or(0);
                        ConsumerPartitionView {
                            partition: partition.to_string(),
                            position,
                            committed: consumer.committed.get(partition).copied(),
                            high_watermark,
                            lag: high_watermark.saturating_sub(position.unwrap_or(0)),
                        }
                    })
                    .collect(),
                records_read: consumer.records_read,
            })
            .collect();
        ClusterView {
            time_ms: self.now,
            events: self.events_processed(),
            brokers,
            partitions,
            controllers,
            consumers,
        }
    }
}
