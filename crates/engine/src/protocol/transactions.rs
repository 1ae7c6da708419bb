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

/// `transaction.version`, a cluster feature finalized in the KRaft
/// metadata log (`TransactionVersion`, set with `kafka-features`): levels
/// 0 and 1 run KIP-98's protocol as it was (1 only writes the
/// transaction log's records in a flexible format); level 2 is KIP-890
/// part 2: the coordinator bumps the producer epoch at every `EndTxn`,
/// markers carry the bumped epoch, and a partition joins a transaction
/// when its leader adds it on the first produce instead of through the
/// producer's `AddPartitionsToTxn`. A freshly formatted Kafka 4.0 or 4.1
/// cluster runs level 2 (`LATEST_PRODUCTION`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(transparent)]
pub struct TransactionVersion(pub u8);

impl TransactionVersion {
    /// `TV_0`: the original protocol.
    pub const TV_0: TransactionVersion = TransactionVersion(0);
    /// `TV_1`: flexible transaction log records, the same protocol.
    pub const TV_1: TransactionVersion = TransactionVersion(1);
    /// `TV_2`: an epoch bump per transaction (KIP-890 part 2).
    pub const TV_2: TransactionVersion = TransactionVersion(2);
    /// The highest level Kafka 4.1 knows (`LATEST_PRODUCTION`).
    pub const LATEST: TransactionVersion = TransactionVersion::TV_2;

    /// `TransactionVersion#supportsEpochBump`: level 2 and above.
    pub fn supports_epoch_bump(self) -> bool {
        self.0 >= 2
    }

    /// The level, checked against Kafka 4.1's (0, 1 and 2).
    pub fn checked(level: u8) -> Result<TransactionVersion, String> {
        if level <= TransactionVersion::LATEST.0 {
            Ok(TransactionVersion(level))
        } else {
            Err(format!(
                "transaction.version {level} does not exist: Kafka 4.1 knows levels 0, 1 and 2"
            ))
        }
    }
}

impl Default for TransactionVersion {
    fn default() -> Self {
        TransactionVersion::LATEST
    }
}

impl std::fmt::Display for TransactionVersion {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "transaction.version={}", self.0)
    }
}
