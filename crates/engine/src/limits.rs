//! What kafkascope accepts at every entry point (the CLI, the JavaScript
//! API, the page and the scenario format), in one place.
//!
//! Kafka bounds what it accepts and names the bound when it refuses
//! (`message.max.bytes`, `max.partitions` …); so do we. These are
//! kafkascope's own limits, sized so that the largest input fits in a
//! browser tab: each comfortably above what a lesson or Kafka's own
//! assignor tests use (the million-partition assignment is 500 topics of
//! 2,000 partitions for 2,000 members), and far below what exhausts
//! memory. A refusal is an error that names the limit, never a panic or a
//! silent cut.

use std::fmt;

/// Partitions an assignment may cover, summed over the group's topics.
pub const MAX_ASSIGN_PARTITIONS: u64 = 2_000_000;
/// Members of one group given to an assignor.
pub const MAX_ASSIGN_MEMBERS: usize = 100_000;
/// Topic names across every member's subscription, and partitions across
/// every member's owned list, in one assignment.
pub const MAX_ASSIGN_SUBSCRIPTIONS: usize = 10_000_000;
/// Brokers in a simulated cluster.
pub const MAX_BROKERS: u32 = 64;
/// KRaft controllers in a simulated cluster.
pub const MAX_CONTROLLERS: u32 = 7;
/// Topics in a simulated cluster.
pub const MAX_TOPICS: usize = 100;
/// Partitions of one simulated topic.
pub const MAX_PARTITIONS_PER_TOPIC: u32 = 1_000;
/// Partitions of a simulated cluster, `__consumer_offsets` included.
pub const MAX_CLUSTER_PARTITIONS: u64 = 10_000;
/// Producers in a simulated cluster.
pub const MAX_PRODUCERS: usize = 100;
/// Consumers in a simulated cluster, configured and added.
pub const MAX_CONSUMERS: usize = 1_000;
/// Records a simulation accepts from producers over its whole run.
pub const MAX_RECORDS: u64 = 1_000_000;
/// Bytes of one simulated record (Kafka's `max.request.size` default).
pub const MAX_RECORD_BYTES: u32 = 1_048_576;
/// Inputs in one scenario file.
pub const MAX_INPUTS: usize = 100_000;
/// Simulated time a run may reach: seven days (Kafka's default
/// `retention.ms`).
pub const MAX_RUN_MS: u64 = 7 * 24 * 60 * 60 * 1_000;
/// Bytes of one input document (a group for `assign`, a scenario file).
pub const MAX_INPUT_BYTES: u64 = 256 * 1024 * 1024;
/// Trace events the JavaScript API keeps for `trace()` (the oldest go).
pub const MAX_TRACE_KEPT: usize = 200_000;
/// Operations a run's history keeps for Jepsen's checks
/// ([`crate::sim::Simulation::keep_history`]): a run that goes past them
/// is judged on its first operations, and its verdict says so. (Each is a
/// few dozen bytes; a poll holds its records too.)
pub const MAX_HISTORY_OPERATIONS: usize = 1_000_000;

/// Work a story (a shipped one, a scenario file, `?scenario=`) may take
/// to play, in events × [`crate::sim::Simulation::event_cost`]: the
/// largest scenario reaches it in 1.8 s in Chromium on the benchmark
/// machine and 6.1 s with the CPU slowed four times (BENCHMARKS.md, "The
/// costliest inputs the page accepts"), in one call. The shipped
/// stories take at most a tenth of it (a test keeps that true); a cluster
/// of 64 brokers and 1,000 partitions reaches it after a few simulated
/// seconds, and the story is refused with a message rather than left to
/// exhaust the tab's memory.
pub const MAX_STORY_WORK: u64 = 100_000_000;
/// Work a run link may replay, in the same unit: twice a story's, about
/// 720,000 events of the map's default cluster (3.7 s in Chromium on the
/// benchmark machine, replayed a slice at a time while the page answers).
pub const MAX_LINK_WORK: u64 = 200_000_000;
/// Forks a story link replays (each replays the story from its step).
pub const MAX_LINK_FORKS: usize = 16;

/// A value above one of the limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitExceeded {
    /// What was counted, in the words of the input ("partitions", "runUntilMs").
    pub what: &'static str,
    /// The value given.
    pub got: u64,
    /// The limit.
    pub limit: u64,
}

impl fmt::Display for LimitExceeded {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "{} is {}, above kafkascope's limit of {}",
            self.what, self.got, self.limit
        )
    }
}

impl std::error::Error for LimitExceeded {}

/// `Err` naming the limit when `got` is above `limit`.
pub fn at_most(what: &'static str, got: u64, limit: u64) -> Result<(), LimitExceeded> {
    if got > limit {
        Err(LimitExceeded { what, got, limit })
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_what_was_counted_and_the_limit() {
        assert_eq!(at_most("partitions", 10, 10), Ok(()));
        let error = at_most("partitions", 3_000_000_000, MAX_ASSIGN_PARTITIONS).unwrap_err();
        assert_eq!(
            error.to_string(),
            "partitions is 3000000000, above kafkascope's limit of 2000000"
        );
    }
}
