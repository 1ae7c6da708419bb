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

/// Where a follower truncates when its leader answers a fetch with a
/// diverging epoch (`AbstractFetcherThread#getOffsetTruncationState`,
/// KIP-279/320): the offset, and whether truncation is complete or the
/// follower must ask again (the next fetch carries its new last epoch).
///
/// - The follower knows the leader's epoch: truncate to the smaller of the
///   two ends of that epoch (and never past its own log end). Complete.
/// - The follower does not know that epoch: truncate to the end of its
///   largest smaller epoch, then ask again — the extra step, so records of
///   an epoch the leader never had are not kept by accident.
/// - The follower tracks no epoch at all: truncate to the leader's end
///   offset.
pub fn truncation_offset(
    cache: &LeaderEpochCache,
    log_end_offset: Offset,
    leader_epoch: u32,
    leader_end_offset: Offset,
) -> (Offset, bool) {
    let (follower_epoch, follower_end) = cache.end_offset_for(i64::from(leader_epoch), log_end_offset);
    if follower_end < 0 {
        return (leader_end_offset.min(log_end_offset), true);
    }
    let follower_end = follower_end as Offset;
    if follower_epoch != i64::from(leader_epoch) {
        (follower_end.min(log_end_offset), false)
    } else {
        (follower_end.min(leader_end_offset).min(log_end_offset), true)
    }
}

#[cfg(test)]
mod truncation_tests {
    use super::*;

    fn cache(entries: &[(u32, Offset)]) -> LeaderEpochCache {
        let mut cache = LeaderEpochCache::new();
        for &(epoch, start) in entries {
            cache.assign(epoch, start);
        }
        cache
    }

    #[test]
    fn a_follower_that_knows_the_epoch_truncates_to_the_smaller_end() {
        // Epoch 1 from 0, epoch 2 from 50; log to 80. The leader's epoch 2
        // ends at 60: the follower keeps 0..60.
        let follower = cache(&[(1, 0), (2, 50)]);
        assert_eq!(truncation_offset(&follower, 80, 2, 60), (60, true));
        // The follower's end offset beyond the leader's epoch boundary: the
        // leader's epoch 1 ended at 40 while the follower wrote epoch 1 up to
        // 50 (it led briefly): it truncates to 40.
        assert_eq!(truncation_offset(&follower, 80, 1, 40), (40, true));
    }

    #[test]
    fn a_follower_without_the_leaders_epoch_truncates_to_its_own_and_asks_again() {
        // The follower has epochs 1 (from 0) and 3 (from 30), log to 70; the
        // leader answers epoch 2 ending at 45. The follower never had epoch
        // 2: it truncates to where its epoch 1 ended (30), not to 45 (which
        // would keep records of its epoch 3), and fetches again.
        let follower = cache(&[(1, 0), (3, 30)]);
        assert_eq!(truncation_offset(&follower, 70, 2, 45), (30, false));
        // The next round, with its last epoch now 1, agrees at 30.
        let mut truncated = follower.clone();
        truncated.truncate_from_end(30);
        assert_eq!(truncation_offset(&truncated, 30, 1, 30), (30, true));
    }

    #[test]
    fn a_follower_whose_epochs_all_start_later_truncates_to_the_first_start() {
        // `endOffsetFor` answers the requested epoch 3 with the start of the
        // follower's first epoch (5 from offset 10): truncate to 10.
        let follower = cache(&[(5, 10)]);
        assert_eq!(truncation_offset(&follower, 20, 3, 12), (10, true));
    }

    #[test]
    fn a_follower_tracking_no_epoch_takes_the_leaders_offset() {
        let follower = LeaderEpochCache::new();
        assert_eq!(truncation_offset(&follower, 20, 3, 12), (12, true));
    }
}
