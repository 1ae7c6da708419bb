//! The leader-epoch history of one replica's log (`LeaderEpochFileCache`,
//! KIP-101/279): a list of `(leader epoch, first offset written in it)`,
//! strictly increasing in both. A follower asks the leader where its last
//! epoch ended and truncates there, so logs that diverged under an old
//! leader converge on the new leader's.

use serde::Serialize;

use super::Offset;

/// Kafka's `UNDEFINED_EPOCH` and `UNDEFINED_EPOCH_OFFSET`.
pub const UNDEFINED: i64 = -1;

/// One epoch and the offset its first record got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct EpochEntry {
    /// The leader epoch.
    pub epoch: u32,
    /// The first offset written in that epoch.
    pub start_offset: Offset,
}

/// A replica's epoch history.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct LeaderEpochCache {
    entries: Vec<EpochEntry>,
}

impl LeaderEpochCache {
    /// An empty history.
    pub fn new() -> LeaderEpochCache {
        LeaderEpochCache::default()
    }

    /// The entries, oldest first.
    pub fn entries(&self) -> &[EpochEntry] {
        &self.entries
    }

    /// The latest epoch, if any.
    pub fn latest_epoch(&self) -> Option<u32> {
        self.entries.last().map(|entry| entry.epoch)
    }

    /// The epoch before the latest one (`previousEpoch`).
    pub fn previous_epoch(&self) -> Option<u32> {
        self.entries.len().checked_sub(2).map(|index| self.entries[index].epoch)
    }

    /// Records that `epoch` starts at `start_offset` (`assign`). Nothing
    /// changes if it is the latest epoch already starting at or before that
    /// offset; otherwise entries that would break monotonicity (epoch ≥
    /// `epoch` or start ≥ `start_offset`) are dropped first.
    pub fn assign(&mut self, epoch: u32, start_offset: Offset) {
        if let Some(latest) = self.entries.last() {
            if latest.epoch == epoch && start_offset >= latest.start_offset {
                return;
            }
        }
        self.entries
            .retain(|entry| entry.epoch < epoch && entry.start_offset < start_offset);
        self.entries.push(EpochEntry { epoch, start_offset });
    }

    /// `endOffsetFor(requestedEpoch, logEndOffset)`: the largest epoch
    /// ≤ `requested` this log knows, and the offset where it ended (the
    /// next epoch's start, or the log end for the latest epoch). `(-1, -1)`
    /// when the epoch is undefined or newer than anything known.
    pub fn end_offset_for(&self, requested: i64, log_end_offset: Offset) -> (i64, i64) {
        if requested == UNDEFINED {
            return (UNDEFINED, UNDEFINED);
        }
        if self.latest_epoch().map(i64::from) == Some(requested) {
            return (requested, log_end_offset as i64);
        }
        let Some(higher) = self.entries.iter().find(|entry| i64::from(entry.epoch) > requested) else {
            return (UNDEFINED, UNDEFINED);
        };
        match self
            .entries
            .iter()
            .rev()
            .find(|entry| i64::from(entry.epoch) <= requested)
        {
            Some(floor) => (i64::from(floor.epoch), higher.start_offset as i64),
            None => (requested, higher.start_offset as i64),
        }
    }

    /// Drops epochs that start at or after `end_offset` (`truncateFromEnd`),
    /// when the log is truncated to `end_offset`.
    pub fn truncate_from_end(&mut self, end_offset: Offset) {
        self.entries.retain(|entry| entry.start_offset < end_offset);
    }

    /// Forgets history before `start_offset` (`truncateFromStart`), when
    /// the log start moves forward: the epoch containing `start_offset` now
    /// starts there.
    pub fn truncate_from_start(&mut self, start_offset: Offset) {
        let Some(floor) = self
            .entries
            .iter()
            .rposition(|entry| entry.start_offset <= start_offset)
        else {
            return;
        };
        self.entries.drain(..floor);
        self.entries[0].start_offset = start_offset;
    }
}
