//! What a partition leader knows about one follower (`kafka.cluster.Replica`):
//! how far its log goes, and when it was last caught up. "Caught up" is what
//! keeps a follower in the ISR: its log reached the leader's end, or it did
//! so less than `replica.lag.time.max.ms` ago.

use serde::Serialize;

use super::Offset;

/// Kafka's default `replica.lag.time.max.ms`.
pub const REPLICA_LAG_TIME_MAX_MS_DEFAULT: u64 = 30_000;

/// A follower's state as the leader tracks it. Times are virtual-clock
/// milliseconds; `None` means "never" (Kafka uses 0, which a wall clock
/// makes far in the past; a virtual clock starting at 0 cannot).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ReplicaState {
    /// The follower's log start, `None` until it fetches.
    pub log_start_offset: Option<Offset>,
    /// The follower's log end (its fetch offset), `None` until it fetches.
    pub log_end_offset: Option<Offset>,
    /// The leader's log end at the follower's previous fetch (Kafka starts
    /// it at 0 and resets it to "unknown" when a new leader takes over).
    pub last_fetch_leader_log_end_offset: Option<Offset>,
    /// When the follower last fetched.
    pub last_fetch_time_ms: Option<u64>,
    /// When the follower was last caught up with the leader.
    pub last_caught_up_time_ms: Option<u64>,
}

impl Default for ReplicaState {
    fn default() -> Self {
        ReplicaState {
            log_start_offset: None,
            log_end_offset: None,
            last_fetch_leader_log_end_offset: Some(0),
            last_fetch_time_ms: None,
            last_caught_up_time_ms: None,
        }
    }
}

impl ReplicaState {
    /// A follower fetched from `fetch_offset` at `fetch_time_ms` while the
    /// leader's log ended at `leader_end_offset` (`updateFetchStateOrThrow`).
    /// Fetching from the leader's end means caught up now; fetching from
    /// where the leader's log ended at the previous fetch means it was
    /// caught up then.
    pub fn record_fetch(
        &mut self,
        fetch_offset: Offset,
        follower_start_offset: Offset,
        fetch_time_ms: u64,
        leader_end_offset: Offset,
    ) {
        let caught_up_at = if fetch_offset >= leader_end_offset {
            Some(fetch_time_ms)
        } else if self
            .last_fetch_leader_log_end_offset
            .is_some_and(|previous| fetch_offset >= previous)
        {
            self.last_fetch_time_ms
        } else {
            None
        };
        if let Some(time) = caught_up_at {
            self.last_caught_up_time_ms = Some(self.last_caught_up_time_ms.map_or(time, |previous| previous.max(time)));
        }
        self.log_start_offset = Some(follower_start_offset);
        self.log_end_offset = Some(fetch_offset);
        self.last_fetch_leader_log_end_offset = Some(
            self.last_fetch_leader_log_end_offset
                .map_or(leader_end_offset, |previous| previous.max(leader_end_offset)),
        );
        self.last_fetch_time_ms = Some(fetch_time_ms);
    }

    /// A leader election touched this partition (`resetReplicaState`): a
    /// *new* leader knows nothing about the follower's log; a re-elected one
    /// keeps it. Either way the follower counts as caught up now if it is
    /// in the ISR, never otherwise.
    pub fn reset_on_leader_change(
        &mut self,
        now_ms: u64,
        leader_end_offset: Offset,
        new_leader: bool,
        follower_in_isr: bool,
    ) {
        let caught_up = follower_in_isr.then_some(now_ms);
        if new_leader {
            *self = ReplicaState {
                log_start_offset: None,
                log_end_offset: None,
                last_fetch_leader_log_end_offset: None,
                last_fetch_time_ms: None,
                last_caught_up_time_ms: caught_up,
            };
        } else {
            self.last_fetch_leader_log_end_offset = Some(leader_end_offset);
            self.last_fetch_time_ms = caught_up;
            self.last_caught_up_time_ms = caught_up;
        }
    }

    /// `isCaughtUp`: the follower's log ends where the leader's does, or it
    /// was caught up within the last `lag_time_max_ms`.
    pub fn is_caught_up(&self, leader_end_offset: Offset, now_ms: u64, lag_time_max_ms: u64) -> bool {
        self.log_end_offset == Some(leader_end_offset)
            || self
                .last_caught_up_time_ms
                .is_some_and(|time| now_ms.saturating_sub(time) <= lag_time_max_ms)
    }
}
