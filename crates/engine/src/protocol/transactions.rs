//! KIP-98's vocabulary: how a transaction ends on a partition and what a
//! consumer may read.

use serde::Serialize;

/// A control batch's kind (`ControlRecordType`): how a transaction ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ControlType {
    /// `COMMIT`: the transaction's records become readable to `read_committed`.
    Commit,
    /// `ABORT`: `read_committed` readers skip the transaction's records.
    Abort,
}

impl std::fmt::Display for ControlType {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            ControlType::Commit => "COMMIT",
            ControlType::Abort => "ABORT",
        })
    }
}

/// `isolation.level`: what a consumer may read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum IsolationLevel {
    /// `read_uncommitted` (the default): everything below the high watermark,
    /// open and aborted transactions included.
    #[default]
    ReadUncommitted,
    /// `read_committed`: only below the last stable offset, without aborted
    /// transactions' records.
    ReadCommitted,
}

impl std::fmt::Display for IsolationLevel {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            IsolationLevel::ReadUncommitted => "read_uncommitted",
            IsolationLevel::ReadCommitted => "read_committed",
        })
    }
}
