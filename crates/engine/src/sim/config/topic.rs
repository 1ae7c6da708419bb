//! A topic's configuration (`TopicConfig`, Kafka's topic-level settings
//! with their defaults and bounds) and the storage settings a run can
//! change.

use super::*;

/// A topic to create when the run starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TopicConfig {
    /// The topic's name.
    pub name: String,
    /// Number of partitions.
    #[serde(default = "default_partitions")]
    pub partitions: u32,
    /// Replication factor.
    #[serde(default = "default_replication_factor")]
    pub replication_factor: u32,
    /// `min.insync.replicas` (Kafka's default is 1).
    #[serde(default = "one")]
    pub min_insync_replicas: u32,
    /// `cleanup.policy`: `delete` (the default), `compact` or
    /// `compact,delete`.
    #[serde(default)]
    pub cleanup_policy: crate::storage::CleanupPolicy,
    /// `segment.bytes` (1 GiB, at least 1 MiB in Kafka 4.1, KIP-1030): a
    /// segment rolls before it would pass this.
    #[serde(default = "default_segment_bytes")]
    pub segment_bytes: u64,
    /// `internal.segment.bytes` (unset): Kafka's test-only override of
    /// `segment.bytes` with no minimum (`LogConfig#segmentSize`), which the
    /// stories use so that segments roll within seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub internal_segment_bytes: Option<u64>,
    /// `segment.ms` (7 days): a segment rolls once its records span this.
    #[serde(default = "default_seven_days")]
    pub segment_ms: u64,
    /// `retention.ms` (7 days; -1: keep forever): closed segments whose
    /// newest record is older are deleted.
    #[serde(default = "default_retention_ms")]
    pub retention_ms: i64,
    /// `retention.bytes` (-1: no limit): oldest segments are deleted while
    /// the log is over it.
    #[serde(default = "minus_one")]
    pub retention_bytes: i64,
    /// `index.interval.bytes` (4096): bytes between offset-index entries.
    #[serde(default = "default_index_interval")]
    pub index_interval_bytes: u64,
    /// `min.cleanable.dirty.ratio` (0.5): the cleaner runs on a compacted
    /// log once more than this share of it is dirty.
    #[serde(default = "default_dirty_ratio")]
    pub min_cleanable_dirty_ratio: Ratio,
    /// `min.compaction.lag.ms` (0): records younger than this are not
    /// compacted.
    #[serde(default)]
    pub min_compaction_lag_ms: u64,
    /// `delete.retention.ms` (1 day): how long a tombstone outlives the
    /// cleaning that first kept it.
    #[serde(default = "default_one_day")]
    pub delete_retention_ms: u64,
    /// `flush.messages` (unset: `log.flush.interval.messages`, by default
    /// never): the log is flushed to disk once this many records are not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flush_messages: Option<u64>,
    /// `flush.ms` (unset: never): the broker's log flusher flushes the log
    /// once it was last flushed this long ago; the flusher runs every
    /// `logFlushSchedulerIntervalMs`, by default never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flush_ms: Option<u64>,
}

impl Default for TopicConfig {
    fn default() -> Self {
        TopicConfig {
            name: String::new(),
            partitions: default_partitions(),
            replication_factor: default_replication_factor(),
            min_insync_replicas: 1,
            cleanup_policy: crate::storage::CleanupPolicy::DELETE,
            segment_bytes: default_segment_bytes(),
            internal_segment_bytes: None,
            segment_ms: default_seven_days(),
            retention_ms: default_retention_ms(),
            retention_bytes: -1,
            index_interval_bytes: default_index_interval(),
            min_cleanable_dirty_ratio: default_dirty_ratio(),
            min_compaction_lag_ms: 0,
            delete_retention_ms: default_one_day(),
            flush_messages: None,
            flush_ms: None,
        }
    }
}

impl TopicConfig {
    /// The storage settings of the topic's logs.
    pub fn log_config(&self) -> crate::storage::LogConfig {
        crate::storage::LogConfig {
            segment_bytes: self.segment_size(),
            segment_ms: self.segment_ms as i64,
            index_interval_bytes: self.index_interval_bytes,
            retention_ms: self.retention_ms,
            retention_bytes: self.retention_bytes,
            cleanup_policy: self.cleanup_policy,
            min_cleanable_dirty_ratio: self.min_cleanable_dirty_ratio.0,
            min_compaction_lag_ms: self.min_compaction_lag_ms as i64,
            delete_retention_ms: self.delete_retention_ms as i64,
            flush_messages: self
                .flush_messages
                .map_or(i64::MAX, |messages| i64::try_from(messages).unwrap_or(i64::MAX)),
            flush_ms: self
                .flush_ms
                .map_or(i64::MAX, |ms| i64::try_from(ms).unwrap_or(i64::MAX)),
            ..crate::storage::LogConfig::default()
        }
    }

    /// The size a segment rolls at: `internal.segment.bytes` when set,
    /// else `segment.bytes` (`LogConfig#segmentSize`).
    pub fn segment_size(&self) -> u64 {
        self.internal_segment_bytes.unwrap_or(self.segment_bytes)
    }

    /// Checks the storage settings against Kafka's bounds (`LogConfig`).
    pub fn validate_storage(&self) -> Result<(), String> {
        let name = &self.name;
        // KIP-1030 (KAFKA-19080, 4.1): `atLeast(1024 * 1024)`, refused as
        // `INVALID_CONFIG` with ConfigDef's own message.
        if self.segment_bytes < MIN_SEGMENT_BYTES {
            return Err(format!(
                "topic {name}: Invalid value {} for configuration segment.bytes: Value must be at least {MIN_SEGMENT_BYTES} \
                 (Kafka 4.1's minimum, 1 MiB; for smaller segments set internal.segment.bytes, Kafka's test-only setting, as the stories do)",
                self.segment_bytes
            ));
        }
        // `flush.messages` is `atLeast(1)` (`LogConfig`).
        if self.flush_messages == Some(0) {
            return Err(format!(
                "topic {name}: Invalid value 0 for configuration flush.messages: Value must be at least 1"
            ));
        }
        // Kafka gives the test-only key no validator; a segment here must
        // at least hold a record's overhead (`RECORD_OVERHEAD_V0`).
        if let Some(internal) = self.internal_segment_bytes.filter(|bytes| *bytes < 14) {
            return Err(format!(
                "topic {name}: internal.segment.bytes must be at least 14 here (a segment must hold a record), got {internal}"
            ));
        }
        if self.segment_ms == 0 {
            return Err(format!("topic {name}: segment.ms must be at least 1"));
        }
        if self.retention_ms < -1 {
            return Err(format!(
                "topic {name}: retention.ms must be -1 (forever) or more, got {}",
                self.retention_ms
            ));
        }
        if self.retention_bytes < -1 {
            return Err(format!(
                "topic {name}: retention.bytes must be -1 (no limit) or more, got {}",
                self.retention_bytes
            ));
        }
        let ratio = self.min_cleanable_dirty_ratio.0;
        if !(0.0..=1.0).contains(&ratio) {
            return Err(format!(
                "topic {name}: min.cleanable.dirty.ratio must be between 0 and 1, got {ratio}"
            ));
        }
        Ok(())
    }
}

/// A ratio between 0 and 1 (`min.cleanable.dirty.ratio`), comparable
/// exactly so that configurations can be compared.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(transparent)]
pub struct Ratio(pub f64);

impl PartialEq for Ratio {
    fn eq(&self, other: &Ratio) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for Ratio {}

/// `segment.bytes`'s minimum in Kafka 4.1 (KIP-1030): 1 MiB.
pub const MIN_SEGMENT_BYTES: u64 = 1024 * 1024;

pub(super) fn default_segment_bytes() -> u64 {
    1024 * 1024 * 1024
}
pub(super) fn default_seven_days() -> u64 {
    7 * 24 * 60 * 60 * 1000
}
pub(super) fn default_retention_ms() -> i64 {
    7 * 24 * 60 * 60 * 1000
}
pub(super) fn minus_one() -> i64 {
    -1
}
pub(super) fn default_index_interval() -> u64 {
    4096
}
pub(super) fn default_dirty_ratio() -> Ratio {
    Ratio(0.5)
}
pub(super) fn default_one_day() -> u64 {
    24 * 60 * 60 * 1000
}

pub(super) fn default_partitions() -> u32 {
    3
}
pub(super) fn default_replication_factor() -> u32 {
    3
}
pub(super) fn one() -> u32 {
    1
}

/// A topic storage setting a run can change, with Kafka's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum StorageSetting {
    /// `retention.ms` (-1: forever).
    #[serde(rename = "retention.ms")]
    RetentionMs,
    /// `retention.bytes` (-1: no limit).
    #[serde(rename = "retention.bytes")]
    RetentionBytes,
    /// `segment.bytes` (at least 1 MiB).
    #[serde(rename = "segment.bytes")]
    SegmentBytes,
    /// `internal.segment.bytes`: Kafka's test-only override of
    /// `segment.bytes`; -1 removes it.
    #[serde(rename = "internal.segment.bytes")]
    InternalSegmentBytes,
    /// `segment.ms`.
    #[serde(rename = "segment.ms")]
    SegmentMs,
    /// `min.compaction.lag.ms`: how old a record must be before the
    /// cleaner may compact it away.
    #[serde(rename = "min.compaction.lag.ms")]
    MinCompactionLagMs,
    /// `delete.retention.ms`: how long a tombstone stays after the first
    /// cleaning that saw it.
    #[serde(rename = "delete.retention.ms")]
    DeleteRetentionMs,
    /// `flush.messages`: the log is synced to disk once this many records
    /// are not (-1: not set, `log.flush.interval.messages`, by default
    /// never).
    #[serde(rename = "flush.messages")]
    FlushMessages,
}

impl std::fmt::Display for StorageSetting {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            StorageSetting::RetentionMs => "retention.ms",
            StorageSetting::RetentionBytes => "retention.bytes",
            StorageSetting::SegmentBytes => "segment.bytes",
            StorageSetting::InternalSegmentBytes => "internal.segment.bytes",
            StorageSetting::SegmentMs => "segment.ms",
            StorageSetting::MinCompactionLagMs => "min.compaction.lag.ms",
            StorageSetting::DeleteRetentionMs => "delete.retention.ms",
            StorageSetting::FlushMessages => "flush.messages",
        })
    }
}

impl TopicConfig {
    /// The topic with one storage setting changed, checked against
    /// Kafka's bounds.
    pub fn with_storage(&self, setting: StorageSetting, value: i64) -> Result<TopicConfig, String> {
        let mut changed = self.clone();
        let positive =
            |value: i64| u64::try_from(value).map_err(|_| format!("{setting} must not be negative, got {value}"));
        match setting {
            StorageSetting::RetentionMs => changed.retention_ms = value,
            StorageSetting::RetentionBytes => changed.retention_bytes = value,
            StorageSetting::SegmentBytes => changed.segment_bytes = positive(value)?,
            StorageSetting::InternalSegmentBytes => {
                changed.internal_segment_bytes = if value == -1 { None } else { Some(positive(value)?) }
            }
            StorageSetting::SegmentMs => changed.segment_ms = positive(value)?,
            StorageSetting::MinCompactionLagMs => changed.min_compaction_lag_ms = positive(value)?,
            StorageSetting::DeleteRetentionMs => changed.delete_retention_ms = positive(value)?,
            StorageSetting::FlushMessages => {
                changed.flush_messages = if value == -1 { None } else { Some(positive(value)?) }
            }
        }
        changed.validate_storage()?;
        Ok(changed)
    }
}
