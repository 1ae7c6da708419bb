//! A cluster's configuration and the inputs a run takes: user actions and
//! faults, each scheduled at a virtual time. Defaults are Kafka's.

use crate::replication::transactions::IsolationLevel;
use serde::{Deserialize, Serialize};

pub use crate::controller::cluster_control::ElectionType;

use crate::partitioning::null_key::NullKeyStrategy;
use crate::protocol::BrokerId;
use crate::replication::high_watermark::Acks;

use super::types::{NodeId, Time};

mod clients;
mod inputs;
mod topic;

pub use clients::*;
pub use inputs::*;
pub use topic::*;

/// The network between nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NetworkConfig {
    /// One-way latency of every message.
    #[serde(default = "default_latency")]
    pub latency_ms: u64,
    /// Extra random latency, uniform in `0..=jitter_ms`.
    #[serde(default)]
    pub jitter_ms: u64,
    /// Chance in parts per million that a message is lost.
    #[serde(default)]
    pub drop_per_million: u32,
}

fn default_latency() -> u64 {
    2
}

impl Default for NetworkConfig {
    fn default() -> Self {
        NetworkConfig {
            latency_ms: default_latency(),
            jitter_ms: 1,
            drop_per_million: 0,
        }
    }
}

/// The whole cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterConfig {
    /// Number of brokers (ids 1..=n).
    #[serde(default = "default_brokers")]
    pub brokers: u32,
    /// Number of KRaft controllers in the quorum (ids 1..=n).
    #[serde(default = "default_controllers")]
    pub controllers: u32,
    /// Topics created at start.
    #[serde(default)]
    pub topics: Vec<TopicConfig>,
    /// Producer clients.
    #[serde(default)]
    pub producers: Vec<ProducerConfig>,
    /// Consumer clients.
    #[serde(default)]
    pub consumers: Vec<ConsumerConfig>,
    /// `offsets.topic.num.partitions` (50). `__consumer_offsets` is created
    /// when the run has consumers.
    #[serde(default = "default_offsets_partitions")]
    pub offsets_topic_partitions: u32,
    /// `transaction.state.log.num.partitions` (50). `__transaction_state`
    /// is created when a transactional producer first looks for its
    /// coordinator.
    #[serde(default = "default_offsets_partitions")]
    pub transaction_state_partitions: u32,
    /// `offsets.topic.replication.factor` (3): `__consumer_offsets` is not
    /// created while fewer brokers can take a replica, and groups find no
    /// coordinator (`COORDINATOR_NOT_AVAILABLE`) until they can. A
    /// one-broker quickstart sets it to 1.
    #[serde(default = "default_internal_replication")]
    pub offsets_topic_replication_factor: u32,
    /// `transaction.state.log.replication.factor` (3), likewise for
    /// `__transaction_state` and transactional producers.
    #[serde(default = "default_internal_replication")]
    pub transaction_state_log_replication_factor: u32,
    /// `transaction.state.log.min.isr` (2): `__transaction_state`'s
    /// `min.insync.replicas` (at most its replication factor counts).
    #[serde(default = "default_transaction_min_isr")]
    pub transaction_state_log_min_isr: u32,
    /// `replica.lag.time.max.ms` (30000).
    #[serde(default = "default_lag")]
    pub replica_lag_time_max_ms: u64,
    /// `replica.fetch.wait.max.ms` (500): how long a leader holds an empty fetch.
    #[serde(default = "default_fetch_wait")]
    pub replica_fetch_wait_max_ms: u64,
    /// `broker.heartbeat.interval.ms` (2000).
    #[serde(default = "default_heartbeat")]
    pub broker_heartbeat_interval_ms: u64,
    /// `broker.session.timeout.ms` (9000).
    #[serde(default = "default_session")]
    pub broker_session_timeout_ms: u64,
    /// `unclean.leader.election.enable` (false).
    #[serde(default)]
    pub unclean_leader_election_enable: bool,
    /// `auto.leader.rebalance.enable` (true): the active controller moves
    /// leadership back to each partition's first replica.
    #[serde(default = "default_true")]
    pub auto_leader_rebalance_enable: bool,
    /// `leader.imbalance.check.interval.seconds` (300), in milliseconds.
    #[serde(default = "default_imbalance_interval")]
    pub leader_imbalance_check_interval_ms: u64,
    /// Eligible Leader Replicas (KIP-966; `eligible.leader.replicas.version=1`):
    /// a replica that leaves an ISR already below `min.insync.replicas`
    /// stays eligible to lead. On by default, as Kafka 4.1 turns it on for
    /// new clusters (it was off by default in 4.0).
    #[serde(default = "default_true")]
    pub eligible_leader_replicas_enable: bool,
    /// `transaction.version`, the cluster feature (`kafka-features
    /// upgrade --feature transaction.version=N`): 2 on a newly formatted
    /// Kafka 4.1 cluster, an epoch bump per transaction and partitions
    /// added by their leaders (KIP-890 part 2); 0 and 1 run the protocol
    /// as it was before.
    #[serde(default)]
    pub transaction_version: crate::protocol::transactions::TransactionVersion,
    /// `transaction.partition.verification.enable` (true): a leader asks
    /// the transaction coordinator whether a partition is in the
    /// transaction before it appends the transaction's first batch there
    /// (KIP-890 part 1). Under transaction version 2 the leader adds the
    /// partition whatever this says.
    #[serde(default = "default_true")]
    pub transaction_partition_verification_enable: bool,
    /// `unclean.leader.election.interval.ms` (300000, an internal
    /// setting): how often the active controller's periodic pass elects
    /// leaderless partitions uncleanly where the topic allows it.
    #[serde(default = "default_imbalance_interval")]
    pub unclean_leader_election_interval_ms: u64,
    /// `group.consumer.session.timeout.ms` (45000): a consumer-protocol
    /// member that sends no heartbeat for this long is fenced.
    #[serde(default = "default_consumer_session")]
    pub group_consumer_session_timeout_ms: u64,
    /// `group.consumer.heartbeat.interval.ms` (5000): how often
    /// consumer-protocol members heartbeat (the broker tells them).
    #[serde(default = "default_group_consumer_heartbeat")]
    pub group_consumer_heartbeat_interval_ms: u64,
    /// `group.consumer.min.session.timeout.ms` (45000): the lowest
    /// `group.consumer.session.timeout.ms` a broker starts with
    /// (`GroupCoordinatorConfig`).
    #[serde(default = "default_consumer_session")]
    pub group_consumer_min_session_timeout_ms: u64,
    /// `group.consumer.max.session.timeout.ms` (60000).
    #[serde(default = "default_consumer_max_session")]
    pub group_consumer_max_session_timeout_ms: u64,
    /// `group.consumer.min.heartbeat.interval.ms` (5000).
    #[serde(default = "default_group_consumer_heartbeat")]
    pub group_consumer_min_heartbeat_interval_ms: u64,
    /// `group.consumer.max.heartbeat.interval.ms` (15000).
    #[serde(default = "default_group_consumer_max_heartbeat")]
    pub group_consumer_max_heartbeat_interval_ms: u64,
    /// `log.flush.scheduler.interval.ms` (unset: `Long.MAX_VALUE`, never):
    /// how often each broker's log flusher flushes the logs whose `flush.ms`
    /// has passed since their last flush (`LogManager#flushDirtyLogs`). The
    /// first run waits `log.initial.task.delay.ms` (30 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_flush_scheduler_interval_ms: Option<u64>,
    /// `log.retention.check.interval.ms` (300000): how often each broker
    /// deletes the segments retention no longer keeps.
    #[serde(default = "default_imbalance_interval")]
    pub log_retention_check_interval_ms: u64,
    /// `producer.id.expiration.ms` (86400000, a day): a producer with no
    /// open transaction that wrote nothing to a partition for this long is
    /// forgotten there.
    #[serde(default = "default_producer_id_expiration")]
    pub producer_id_expiration_ms: u64,
    /// `producer.id.expiration.check.interval.ms` (600000): how often each
    /// broker looks for them.
    #[serde(default = "default_producer_id_expiration_check")]
    pub producer_id_expiration_check_interval_ms: u64,
    /// `log.cleaner.backoff.ms` (15000): how long each broker's log cleaner
    /// waits when no compacted log is dirty enough.
    #[serde(default = "default_cleaner_backoff")]
    pub log_cleaner_backoff_ms: u64,
    /// `offsets.topic.segment.bytes` (100 MiB): `__consumer_offsets`
    /// segments (and `__transaction_state`'s, whose own setting has the
    /// same default). Below it nothing of those topics is compacted.
    #[serde(default = "default_offsets_segment_bytes")]
    pub offsets_topic_segment_bytes: u64,
    /// Client quotas (`kafka-configs --alter --entity-type clients`): a
    /// byte rate per client id, or for every client id without its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub quotas: Vec<ClientQuota>,
    /// The network.
    #[serde(default)]
    pub network: NetworkConfig,
}

fn default_internal_replication() -> u32 {
    3
}
fn default_transaction_min_isr() -> u32 {
    2
}
fn default_producer_id_expiration() -> u64 {
    86_400_000
}
fn default_producer_id_expiration_check() -> u64 {
    600_000
}
fn default_cleaner_backoff() -> u64 {
    15_000
}
fn default_offsets_segment_bytes() -> u64 {
    100 * 1024 * 1024
}
fn default_group_consumer_heartbeat() -> u64 {
    5_000
}
fn default_consumer_max_session() -> u64 {
    60_000
}
fn default_group_consumer_max_heartbeat() -> u64 {
    15_000
}

fn default_brokers() -> u32 {
    3
}
fn default_controllers() -> u32 {
    3
}
fn default_offsets_partitions() -> u32 {
    crate::groups::OFFSETS_TOPIC_PARTITIONS_DEFAULT
}
fn default_lag() -> u64 {
    30_000
}
fn default_fetch_wait() -> u64 {
    500
}
fn default_heartbeat() -> u64 {
    2_000
}
fn default_imbalance_interval() -> u64 {
    300_000
}
fn default_session() -> u64 {
    9_000
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            brokers: default_brokers(),
            controllers: default_controllers(),
            topics: Vec::new(),
            producers: Vec::new(),
            consumers: Vec::new(),
            offsets_topic_partitions: default_offsets_partitions(),
            transaction_state_partitions: default_offsets_partitions(),
            offsets_topic_replication_factor: default_internal_replication(),
            transaction_state_log_replication_factor: default_internal_replication(),
            transaction_state_log_min_isr: default_transaction_min_isr(),
            replica_lag_time_max_ms: default_lag(),
            replica_fetch_wait_max_ms: default_fetch_wait(),
            broker_heartbeat_interval_ms: default_heartbeat(),
            broker_session_timeout_ms: default_session(),
            unclean_leader_election_enable: false,
            auto_leader_rebalance_enable: true,
            leader_imbalance_check_interval_ms: default_imbalance_interval(),
            unclean_leader_election_interval_ms: default_imbalance_interval(),
            eligible_leader_replicas_enable: true,
            transaction_version: crate::protocol::transactions::TransactionVersion::default(),
            transaction_partition_verification_enable: true,
            group_consumer_session_timeout_ms: default_consumer_session(),
            group_consumer_heartbeat_interval_ms: default_group_consumer_heartbeat(),
            group_consumer_min_session_timeout_ms: default_consumer_session(),
            group_consumer_max_session_timeout_ms: default_consumer_max_session(),
            group_consumer_min_heartbeat_interval_ms: default_group_consumer_heartbeat(),
            group_consumer_max_heartbeat_interval_ms: default_group_consumer_max_heartbeat(),
            log_flush_scheduler_interval_ms: None,
            log_retention_check_interval_ms: default_imbalance_interval(),
            log_cleaner_backoff_ms: default_cleaner_backoff(),
            producer_id_expiration_ms: default_producer_id_expiration(),
            producer_id_expiration_check_interval_ms: default_producer_id_expiration_check(),
            offsets_topic_segment_bytes: default_offsets_segment_bytes(),
            quotas: Vec::new(),
            network: NetworkConfig::default(),
        }
    }
}

impl ClusterConfig {
    /// Checks one consumer against this cluster: a known assignor and
    /// topics that exist.
    pub fn validate_consumer(&self, consumer: &ConsumerConfig) -> Result<(), String> {
        if crate::groups::assignors::Strategy::from_name(&consumer.assignor).is_none() {
            return Err(format!("unknown assignor {:?}", consumer.assignor));
        }
        if let Some(topic) = consumer
            .topics
            .iter()
            .find(|topic| !self.topics.iter().any(|known| &known.name == *topic))
        {
            return Err(format!("subscribes to unknown topic {topic}"));
        }
        // Zero intervals would schedule timers at the same instant forever.
        for (name, value) in [
            ("autoCommitIntervalMs", consumer.auto_commit_interval_ms),
            ("sessionTimeoutMs", consumer.session_timeout_ms),
            ("heartbeatIntervalMs", consumer.heartbeat_interval_ms),
            ("maxPollRecords", u64::from(consumer.max_poll_records)),
            ("maxPollIntervalMs", consumer.max_poll_interval_ms),
        ] {
            if value == 0 {
                return Err(format!("{name} must be at least 1"));
            }
        }
        // The broker refuses a JoinGroup whose session timeout is outside
        // group.min.session.timeout.ms (6000) .. group.max.session.timeout.ms
        // (1800000) with INVALID_SESSION_TIMEOUT.
        let session = consumer.session_timeout_ms;
        if !(6_000..=1_800_000).contains(&session) {
            return Err(format!(
                "sessionTimeoutMs must be between 6000 and 1800000 (the broker's group.min.session.timeout.ms and group.max.session.timeout.ms), got {session}"
            ));
        }
        // KafkaConsumer: "heartbeat.interval.ms must be lower than session.timeout.ms".
        if consumer.heartbeat_interval_ms >= session {
            return Err(format!(
                "heartbeatIntervalMs ({}) must be lower than sessionTimeoutMs ({session})",
                consumer.heartbeat_interval_ms
            ));
        }
        if consumer.consumer_protocol() {
            if let Some(assignor) = &consumer.group_remote_assignor {
                if !REMOTE_ASSIGNORS.contains(&assignor.as_str()) {
                    // The broker answers UNSUPPORTED_ASSIGNOR.
                    return Err(format!(
                        "groupRemoteAssignor {assignor:?} is not one of the broker's group.consumer.assignors (uniform, range)"
                    ));
                }
            }
            if consumer.group_instance_id.is_some() {
                return Err(
                    "groupInstanceId with groupProtocol \"consumer\": static membership is modelled with the classic protocol only"
                        .to_string(),
                );
            }
        } else if consumer.group_remote_assignor.is_some() {
            // `ConsumerConfig`: group.remote.assignor belongs to the consumer protocol.
            return Err("groupRemoteAssignor is only used with groupProtocol \"consumer\"".to_string());
        }
        // One group, one protocol (Kafka can migrate a group between the two,
        // KIP-848's online migration; that is not modelled).
        if let Some(other) = self
            .consumers
            .iter()
            .find(|other| other.group == consumer.group && other.group_protocol != consumer.group_protocol)
        {
            return Err(format!(
                "group {} already has members with groupProtocol \"{}\"; a group uses one protocol here (Kafka's online migration between the two is not modelled)",
                consumer.group, other.group_protocol
            ));
        }
        self.validate_output_producer(consumer)?;
        self.validate_failure_policy(consumer)?;
        if let Some(instance) = &consumer.group_instance_id {
            // `JoinGroupRequest.validateGroupInstanceId`.
            let legal = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
            if instance.is_empty() || instance.len() > 249 || !instance.chars().all(legal) {
                return Err(format!(
                    "groupInstanceId {instance:?} must be 1 to 249 characters of a-z, A-Z, 0-9, '.', '_' or '-'"
                ));
            }
        }
        Ok(())
    }

    /// A consume-transform-produce consumer's output producer: one of the
    /// cluster's, its own, transactional for `commitMode` "transactional".
    fn validate_output_producer(&self, consumer: &ConsumerConfig) -> Result<(), String> {
        match (consumer.output_producer, consumer.commit_mode) {
            (Some(producer), mode) => {
                let Some(output) = self.producers.get(producer as usize) else {
                    return Err(format!(
                        "outputProducer {producer} is not one of the {} producers",
                        self.producers.len()
                    ));
                };
                if mode == CommitMode::Transactional && output.transactional_id.is_none() {
                    return Err(format!(
                        "commitMode \"transactional\" sends offsets in outputProducer {producer}'s transactions: that producer needs a transactionalId"
                    ));
                }
                if let Some(other) = self
                    .consumers
                    .iter()
                    .find(|other| !std::ptr::eq(*other, consumer) && other.output_producer == Some(producer))
                {
                    return Err(format!(
                        "outputProducer {producer} already belongs to a consumer of group {}: each app instance has its own producer",
                        other.group
                    ));
                }
            }
            (None, CommitMode::Transactional) => {
                return Err(
                    "commitMode \"transactional\" needs an outputProducer (the transactional producer its outputs and offsets go through)"
                        .to_string(),
                );
            }
            (None, _) => {}
        }
        Ok(())
    }

    /// What a consumer does with records that keep failing: bounded
    /// retries and backoff, and a dead letter producer writing to the
    /// topic's `.DLQ` when it sends them there.
    fn validate_failure_policy(&self, consumer: &ConsumerConfig) -> Result<(), String> {
        let policy = &consumer.on_failure;
        if policy.retries > 100 {
            return Err(format!("onFailure.retries must be at most 100, got {}", policy.retries));
        }
        if policy.backoff_ms > 3_600_000 {
            return Err(format!(
                "onFailure.backoffMs must be at most 3600000 (an hour), got {}",
                policy.backoff_ms
            ));
        }
        match (policy.then, policy.dead_letter_producer) {
            (AfterFailures::DeadLetter, None) => {
                return Err("onFailure.then \"dead-letter\" needs a deadLetterProducer (the producer that writes to <topic>.DLQ)".to_string());
            }
            (AfterFailures::Stop, Some(_)) => {
                return Err("onFailure.deadLetterProducer is only used with then \"dead-letter\"".to_string());
            }
            (AfterFailures::DeadLetter, Some(producer)) => {
                let [topic] = consumer.topics.as_slice() else {
                    return Err("a dead letter queue here belongs to one topic: subscribe to one topic to use onFailure.then \"dead-letter\"".to_string());
                };
                let wanted = format!("{topic}.DLQ");
                match self.producers.get(producer as usize) {
                    None => {
                        return Err(format!(
                            "onFailure.deadLetterProducer {producer} is not one of the {} producers",
                            self.producers.len()
                        ))
                    }
                    Some(dlq) if dlq.topic != wanted => {
                        return Err(format!(
                        "onFailure.deadLetterProducer {producer} writes to {}, not to the dead letter topic {wanted}",
                        dlq.topic
                    ))
                    }
                    Some(_) => {}
                }
                if consumer.commit_mode == CommitMode::Transactional {
                    return Err("a dead letter queue with commitMode \"transactional\" is not modelled".to_string());
                }
            }
            (AfterFailures::Stop, None) => {}
        }
        Ok(())
    }

    /// KIP-848's broker bounds (`GroupCoordinatorConfig`'s checks, which
    /// keep a broker from starting): the session timeout and heartbeat
    /// interval within their minimum and maximum, the heartbeat shorter
    /// than the session. A cluster that lowers them lowers the minimums
    /// too, as Kafka requires.
    fn validate_group_consumer_bounds(&self) -> Result<(), String> {
        let (session, heartbeat) = (
            self.group_consumer_session_timeout_ms,
            self.group_consumer_heartbeat_interval_ms,
        );
        let rules = [
            (
                self.group_consumer_max_heartbeat_interval_ms >= self.group_consumer_min_heartbeat_interval_ms,
                "group.consumer.max.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms",
            ),
            (
                heartbeat >= self.group_consumer_min_heartbeat_interval_ms,
                "group.consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms",
            ),
            (
                heartbeat <= self.group_consumer_max_heartbeat_interval_ms,
                "group.consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms",
            ),
            (
                self.group_consumer_max_session_timeout_ms >= self.group_consumer_min_session_timeout_ms,
                "group.consumer.max.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms",
            ),
            (
                session >= self.group_consumer_min_session_timeout_ms,
                "group.consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms",
            ),
            (
                session <= self.group_consumer_max_session_timeout_ms,
                "group.consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms",
            ),
            (
                heartbeat < session,
                "group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms",
            ),
        ];
        match rules.iter().find(|(holds, _)| !holds) {
            Some((_, message)) => Err(format!(
                "{message} (session {session} ms, heartbeat {heartbeat} ms; bounds: session {}..={} ms, heartbeat {}..={} ms)",
                self.group_consumer_min_session_timeout_ms,
                self.group_consumer_max_session_timeout_ms,
                self.group_consumer_min_heartbeat_interval_ms,
                self.group_consumer_max_heartbeat_interval_ms
            )),
            None => Ok(()),
        }
    }

    /// Checks what Kafka would refuse, in one sentence.
    pub fn validate(&self) -> Result<(), String> {
        use crate::limits::{
            at_most, MAX_BROKERS, MAX_CLUSTER_PARTITIONS, MAX_CONSUMERS, MAX_CONTROLLERS, MAX_PRODUCERS, MAX_TOPICS,
        };
        if self.brokers == 0 || self.brokers > MAX_BROKERS {
            return Err(format!(
                "brokers must be between 1 and {MAX_BROKERS}, got {}",
                self.brokers
            ));
        }
        crate::protocol::transactions::TransactionVersion::checked(self.transaction_version.0)?;
        self.validate_group_consumer_bounds()?;
        let limit = |result: Result<(), crate::limits::LimitExceeded>| result.map_err(|error| error.to_string());
        limit(at_most("topics", self.topics.len() as u64, MAX_TOPICS as u64))?;
        limit(at_most("producers", self.producers.len() as u64, MAX_PRODUCERS as u64))?;
        limit(at_most("consumers", self.consumers.len() as u64, MAX_CONSUMERS as u64))?;
        let partitions: u64 = self.topics.iter().map(|topic| u64::from(topic.partitions)).sum::<u64>()
            + u64::from(self.offsets_topic_partitions)
            + if self
                .producers
                .iter()
                .any(|producer| producer.transactional_id.is_some())
            {
                u64::from(self.transaction_state_partitions)
            } else {
                0
            };
        limit(at_most(
            "partitions in the cluster (__consumer_offsets and __transaction_state included)",
            partitions,
            MAX_CLUSTER_PARTITIONS,
        ))?;
        self.validate_topics()?;
        if self.controllers == 0 || self.controllers > MAX_CONTROLLERS {
            return Err(format!(
                "controllers must be between 1 and {MAX_CONTROLLERS}, got {}",
                self.controllers
            ));
        }
        if self.leader_imbalance_check_interval_ms == 0 {
            return Err("leaderImbalanceCheckIntervalMs must be at least 1".to_string());
        }
        for quota in &self.quotas {
            quota.validate()?;
        }
        if self.log_cleaner_backoff_ms == 0 {
            return Err("logCleanerBackoffMs must be at least 1".to_string());
        }
        if self.offsets_topic_segment_bytes < 14 {
            return Err("offsetsTopicSegmentBytes must be at least 14".to_string());
        }
        if self.log_retention_check_interval_ms == 0 {
            return Err("logRetentionCheckIntervalMs must be at least 1".to_string());
        }
        if self.log_flush_scheduler_interval_ms == Some(0) {
            return Err("logFlushSchedulerIntervalMs must be at least 1".to_string());
        }
        if self.unclean_leader_election_interval_ms == 0 {
            return Err("uncleanLeaderElectionIntervalMs must be at least 1".to_string());
        }
        // The broker's bounds (group.consumer.min/max.session.timeout.ms and
        // heartbeat.interval.ms) are widened here so stories can be short.
        let session = self.group_consumer_session_timeout_ms;
        if !(6_000..=1_800_000).contains(&session) {
            return Err(format!(
                "groupConsumerSessionTimeoutMs must be between 6000 and 1800000, got {session}"
            ));
        }
        let heartbeat = self.group_consumer_heartbeat_interval_ms;
        if heartbeat == 0 || heartbeat >= session {
            return Err(format!(
                "groupConsumerHeartbeatIntervalMs ({heartbeat}) must be at least 1 and lower than groupConsumerSessionTimeoutMs ({session})"
            ));
        }
        if self.offsets_topic_partitions == 0 || self.offsets_topic_partitions > 1_000 {
            return Err("offsetsTopicPartitions must be between 1 and 1000".to_string());
        }
        if self.transaction_state_partitions == 0 || self.transaction_state_partitions > 1_000 {
            return Err("transactionStatePartitions must be between 1 and 1000".to_string());
        }
        for (index, consumer) in self.consumers.iter().enumerate() {
            self.validate_consumer(consumer)
                .map_err(|message| format!("consumer {index}: {message}"))?;
        }
        for (index, producer) in self.producers.iter().enumerate() {
            if !self.topics.iter().any(|topic| topic.name == producer.topic) {
                return Err(format!("producer {index} writes to unknown topic {}", producer.topic));
            }
            if producer.batch_size == 0 {
                return Err(format!("producer {index}: batch.size must be at least 1"));
            }
            producer
                .validate()
                .map_err(|message| format!("producer {index}: {message}"))?;
        }
        Ok(())
    }

    /// Each topic: a legal name that collides with no other, partitions
    /// within the limit, a replication factor the brokers can hold, and
    /// its storage settings.
    fn validate_topics(&self) -> Result<(), String> {
        use crate::limits::MAX_PARTITIONS_PER_TOPIC;
        for (index, topic) in self.topics.iter().enumerate() {
            if let Some(reason) = crate::protocol::topic_partition::invalid_topic_name(&topic.name) {
                return Err(format!("topic {index}: {reason}"));
            }
            // `ReplicationControlManager#validateNewTopicNames`: names that
            // differ only by '.' and '_' collide (metrics cannot tell them
            // apart); equal names are one topic created twice.
            let unified = |name: &str| name.replace('.', "_");
            if let Some(earlier) = self.topics[..index]
                .iter()
                .find(|earlier| unified(&earlier.name) == unified(&topic.name))
            {
                return Err(if earlier.name == topic.name {
                    format!("topic {} is listed twice", topic.name)
                } else {
                    format!("Topic '{}' collides with existing topic: {}", topic.name, earlier.name)
                });
            }
            if topic.partitions == 0 || topic.partitions > MAX_PARTITIONS_PER_TOPIC {
                return Err(format!(
                    "topic {}: partitions must be between 1 and {MAX_PARTITIONS_PER_TOPIC}",
                    topic.name
                ));
            }
            if topic.replication_factor == 0 || topic.replication_factor > self.brokers {
                return Err(format!(
                    "topic {}: replication factor {} must be between 1 and the number of brokers ({})",
                    topic.name, topic.replication_factor, self.brokers
                ));
            }
            if topic.min_insync_replicas == 0 {
                return Err(format!("topic {}: min.insync.replicas must be at least 1", topic.name));
            }
            topic.validate_storage()?;
        }
        Ok(())
    }
}

/// An input and when it happens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScheduledInput {
    /// Virtual time of the input.
    pub at_ms: Time,
    /// The input.
    pub input: Input,
}
