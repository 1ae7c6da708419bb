//! Where a record *without* a key goes: the three behaviours a learner meets.
//!
//! * [`NullKeyStrategy::UniformSticky`] — Kafka 3.3+ (KIP-794,
//!   `BuiltInPartitioner`): stick to one partition until `batch.size` bytes
//!   went to it and its batch is ready, or `2 × batch.size` in any case;
//!   then switch, weighting partitions with shorter queues more (adaptive
//!   partitioning) when their queue lengths differ.
//! * [`NullKeyStrategy::LegacySticky`] — Kafka 2.4–3.2 (KIP-480,
//!   `StickyPartitionCache`): stick to one partition until a *new batch* is
//!   needed for it, then switch to a different random available partition.
//! * [`NullKeyStrategy::RoundRobin`] — before 2.4 (`DefaultPartitioner`,
//!   counter starting at a random value), or Kafka's opt-in
//!   `RoundRobinPartitioner` (counter starting at 0; since 2.4 the producer
//!   asks it a second time whenever the first answer would open a new batch,
//!   which skips partitions: KAFKA-9965).
//!
//! Randomness comes from the caller's [`Rng`], so a seed reproduces every
//! choice. Each choice carries a [`NullKeyReason`] the UI can show.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::java::to_positive;
use crate::random::Rng;

/// Which null-key behaviour to reproduce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum NullKeyStrategy {
    /// KIP-794 uniform sticky partitioning (Kafka 3.3 and later, the default).
    UniformSticky,
    /// KIP-480 sticky partitioning (Kafka 2.4 to 3.2).
    LegacySticky,
    /// Round-robin over available partitions.
    RoundRobin {
        /// `true`: the pre-2.4 `DefaultPartitioner` (counter starts at a
        /// random value, asked once per record); `false`: the opt-in
        /// `RoundRobinPartitioner` (counter starts at 0, asked again when a
        /// new batch is needed).
        legacy_default: bool,
    },
}

/// The producer settings the null-key behaviours read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct NullKeyConfig {
    /// `batch.size` (16384 by default): the sticky partitioner's switch
    /// threshold in bytes.
    pub batch_size: u32,
    /// `partitioner.adaptive.partitioning.enable` (true by default).
    pub adaptive: bool,
}

impl Default for NullKeyConfig {
    fn default() -> Self {
        NullKeyConfig {
            batch_size: 16_384,
            adaptive: true,
        }
    }
}

/// What the producer knows about one partition of the topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PartitionState {
    /// Whether the metadata knows a leader (the partition is "available").
    pub leader_known: bool,
    /// Batches waiting in this partition's accumulator queue; `None` if the
    /// producer has never created a batch for it.
    pub queued_batches: Option<u32>,
}

/// Why a keyless record goes where it goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum NullKeyReason {
    /// The first keyless record picks a random partition to stick to.
    FirstPick {
        /// How many partitions it chose among.
        among: u32,
        /// Whether partitions with shorter queues were favoured.
        weighted: bool,
    },
    /// Still on the sticky partition.
    Sticky {
        /// Bytes produced to it since the switch (before this record).
        produced_bytes: u32,
        /// The threshold (`batch.size`).
        batch_size: u32,
    },
    /// The sticky partition was switched before this record.
    Switched {
        /// The partition left.
        from: u32,
        /// Why the switch happened.
        because: SwitchCause,
        /// How many partitions the new one was chosen among.
        among: u32,
        /// Whether partitions with shorter queues were favoured.
        weighted: bool,
    },
    /// Round-robin: the counter's turn.
    RoundRobin {
        /// The counter value used.
        counter: i32,
        /// How many partitions it cycles over.
        among: u32,
        /// The first answer would have opened a new batch, so the producer
        /// asked again and the counter moved twice (KAFKA-9965).
        skipped: Option<u32>,
    },
}

/// Why a sticky partitioner moved on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SwitchCause {
    /// KIP-794: `batch.size` bytes went to the partition and its batches
    /// were ready to send.
    BatchSizeReached,
    /// KIP-794: `2 × batch.size` bytes went to it, ready or not.
    TwiceBatchSize,
    /// KIP-480: the record needed a new batch on the sticky partition.
    NewBatch,
}

impl fmt::Display for NullKeyReason {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let weighting = |weighted: bool| {
            if weighted {
                ", favouring partitions with shorter queues"
            } else {
                ""
            }
        };
        match self {
            NullKeyReason::FirstPick { among, weighted } => write!(
                formatter,
                "first keyless record: picked a random partition among {among}{}",
                weighting(*weighted)
            ),
            NullKeyReason::Sticky {
                produced_bytes,
                batch_size,
            } => write!(
                formatter,
                "sticking to the current partition: {produced_bytes} of {batch_size} bytes produced to it so far"
            ),
            NullKeyReason::Switched {
                from,
                because,
                among,
                weighted,
            } => {
                let cause = match because {
                    SwitchCause::BatchSizeReached => "batch.size bytes went to it and its batch was ready",
                    SwitchCause::TwiceBatchSize => "twice batch.size bytes went to it",
                    SwitchCause::NewBatch => "the record needed a new batch there",
                };
                write!(
                    formatter,
                    "switched away from partition {from} because {cause}: picked a random partition among {among}{}",
                    weighting(*weighted)
                )
            }
            NullKeyReason::RoundRobin {
                counter,
                among,
                skipped,
            } => {
                write!(formatter, "round-robin: counter {counter} over {among} partitions")?;
                if let Some(skipped) = skipped {
                    write!(
                        formatter,
                        "; partition {skipped} would have needed a new batch, so the producer asked again (KAFKA-9965)"
                    )?;
                }
                Ok(())
            }
        }
    }
}

/// The partition for the next keyless record and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NullKeyChoice {
    /// The partition.
    pub partition: u32,
    /// Why.
    pub reason: NullKeyReason,
}

/// A keyless-record partitioner for one topic, with the state Kafka keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NullKeyPartitioner {
    strategy: NullKeyStrategy,
    config: NullKeyConfig,
    /// Sticky strategies: the current partition and bytes produced to it.
    sticky: Option<(u32, u32)>,
    /// A switch that happened after the last append, reported with the next
    /// choice.
    pending_switch: Option<(u32, SwitchCause, u32, bool)>,
    /// Round-robin counter (`None` until first used).
    counter: Option<i32>,
}

impl NullKeyPartitioner {
    /// A partitioner with no history.
    pub fn new(strategy: NullKeyStrategy, config: NullKeyConfig) -> NullKeyPartitioner {
        NullKeyPartitioner {
            strategy,
            config: sanitize(config),
            sticky: None,
            pending_switch: None,
            counter: None,
        }
    }

    /// The partition for the next keyless record. `opens_new_batch(p)`
    /// says whether appending the record to partition `p` would need a new
    /// batch (KIP-480 switches then; the opt-in round-robin asks twice).
    /// Returns `None` only for a topic without partitions.
    pub fn choose(
        &mut self,
        partitions: &[PartitionState],
        opens_new_batch: impl Fn(u32) -> bool,
        rng: &mut Rng,
    ) -> Option<NullKeyChoice> {
        if partitions.is_empty() {
            return None;
        }
        Some(match self.strategy {
            NullKeyStrategy::UniformSticky => match (self.sticky, self.pending_switch.take()) {
                (Some((partition, _)), Some((from, because, among, weighted))) => NullKeyChoice {
                    partition,
                    reason: NullKeyReason::Switched {
                        from,
                        because,
                        among,
                        weighted,
                    },
                },
                (Some((partition, produced_bytes)), None) => NullKeyChoice {
                    partition,
                    reason: NullKeyReason::Sticky {
                        produced_bytes,
                        batch_size: self.config.batch_size,
                    },
                },
                (None, _) => {
                    let (partition, among, weighted) = self.next_uniform_sticky(partitions, rng);
                    self.sticky = Some((partition, 0));
                    NullKeyChoice {
                        partition,
                        reason: NullKeyReason::FirstPick { among, weighted },
                    }
                }
            },
            NullKeyStrategy::LegacySticky => match self.sticky {
                None => {
                    let (partition, among) = next_legacy_sticky(partitions, None, rng);
                    self.sticky = Some((partition, 0));
                    NullKeyChoice {
                        partition,
                        reason: NullKeyReason::FirstPick { among, weighted: false },
                    }
                }
                Some((current, _)) if opens_new_batch(current) => {
                    // KafkaProducer aborts the append, calls onNewBatch, asks again.
                    let (partition, among) = next_legacy_sticky(partitions, Some(current), rng);
                    self.sticky = Some((partition, 0));
                    NullKeyChoice {
                        partition,
                        reason: NullKeyReason::Switched {
                            from: current,
                            because: SwitchCause::NewBatch,
                            among,
                            weighted: false,
                        },
                    }
                }
                Some((partition, produced_bytes)) => NullKeyChoice {
                    partition,
                    reason: NullKeyReason::Sticky {
                        produced_bytes,
                        batch_size: self.config.batch_size,
                    },
                },
            },
            NullKeyStrategy::RoundRobin { legacy_default } => {
                let (first, counter, among) = self.next_round_robin(partitions, legacy_default, rng);
                if !legacy_default && opens_new_batch(first) {
                    let (partition, counter, among) = self.next_round_robin(partitions, legacy_default, rng);
                    NullKeyChoice {
                        partition,
                        reason: NullKeyReason::RoundRobin {
                            counter,
                            among,
                            skipped: Some(first),
                        },
                    }
                } else {
                    NullKeyChoice {
                        partition: first,
                        reason: NullKeyReason::RoundRobin {
                            counter,
                            among,
                            skipped: None,
                        },
                    }
                }
            }
        })
    }

    /// Tells the partitioner that `bytes` were appended to `partition`, and
    /// whether that partition's batches are now all full or sent (the
    /// accumulator's `enableSwitch`). KIP-794 may switch here.
    pub fn appended(
        &mut self,
        partition: u32,
        bytes: u32,
        partitions: &[PartitionState],
        batches_ready: bool,
        rng: &mut Rng,
    ) {
        let Some((current, produced)) = self.sticky else { return };
        if current != partition {
            return;
        }
        let produced = produced.saturating_add(bytes);
        self.sticky = Some((current, produced));
        if self.strategy != NullKeyStrategy::UniformSticky {
            return;
        }
        // BuiltInPartitioner#updatePartitionInfo.
        let batch_size = self.config.batch_size;
        let cause = if produced >= batch_size.saturating_mul(2) {
            Some(SwitchCause::TwiceBatchSize)
        } else if produced >= batch_size && batches_ready {
            Some(SwitchCause::BatchSizeReached)
        } else {
            None
        };
        if let Some(because) = cause {
            let (next, among, weighted) = self.next_uniform_sticky(partitions, rng);
            self.sticky = Some((next, 0));
            self.pending_switch = Some((current, because, among, weighted));
        }
    }

    /// `BuiltInPartitioner#nextPartition`: returns the partition, how many
    /// it chose among, and whether the choice was load-weighted.
    fn next_uniform_sticky(&self, partitions: &[PartitionState], rng: &mut Rng) -> (u32, u32, bool) {
        let random = to_positive(rng.next_java_int()) as u32;
        if let Some(table) = self.load_table(partitions) {
            let total = table.last().map(|&(cumulative, _)| cumulative).unwrap_or(1).max(1);
            let weighted_random = random % total;
            // The first entry whose cumulative weight is strictly greater.
            let index = table.partition_point(|&(cumulative, _)| cumulative <= weighted_random);
            let index = index.min(table.len() - 1);
            return (table[index].1, table.len() as u32, true);
        }
        let available = available(partitions);
        if available.is_empty() {
            (random % partitions.len() as u32, partitions.len() as u32, false)
        } else {
            (
                available[(random % available.len() as u32) as usize],
                available.len() as u32,
                false,
            )
        }
    }

    /// `BuiltInPartitioner#updatePartitionLoadStats`: a cumulative frequency
    /// table over partitions with a leader, weight `(max queue + 1) − queue`;
    /// `None` when adaptive partitioning does not apply.
    fn load_table(&self, partitions: &[PartitionState]) -> Option<Vec<(u32, u32)>> {
        if !self.config.adaptive || partitions.len() < 2 {
            return None;
        }
        // The accumulator reports queue sizes only once every partition
        // has had a batch.
        if partitions.iter().any(|partition| partition.queued_batches.is_none()) {
            return None;
        }
        let queues: Vec<(u32, u32)> = partitions
            .iter()
            .enumerate()
            .filter(|(_, partition)| partition.leader_known)
            .map(|(index, partition)| (index as u32, partition.queued_batches.unwrap_or(0)))
            .collect();
        if queues.is_empty() {
            return None;
        }
        let all_equal = queues.iter().all(|&(_, queue)| queue == queues[0].1);
        if all_equal && queues.len() == partitions.len() {
            return None;
        }
        let max_plus_one = queues
            .iter()
            .map(|&(_, queue)| queue)
            .max()
            .unwrap_or(0)
            .saturating_add(1);
        let mut cumulative = 0u32;
        Some(
            queues
                .into_iter()
                .map(|(partition, queue)| {
                    cumulative = cumulative.saturating_add(max_plus_one - queue);
                    (cumulative, partition)
                })
                .collect(),
        )
    }

    /// Round-robin's `nextValue` and the partition it maps to.
    fn next_round_robin(
        &mut self,
        partitions: &[PartitionState],
        legacy_default: bool,
        rng: &mut Rng,
    ) -> (u32, i32, u32) {
        let counter = *self
            .counter
            .get_or_insert_with(|| if legacy_default { rng.next_java_int() } else { 0 });
        self.counter = Some(counter.wrapping_add(1));
        let positive = to_positive(counter) as u32;
        let available = available(partitions);
        if available.is_empty() {
            (positive % partitions.len() as u32, counter, partitions.len() as u32)
        } else {
            (
                available[(positive % available.len() as u32) as usize],
                counter,
                available.len() as u32,
            )
        }
    }
}

/// `StickyPartitionCache#nextPartition`: a random available partition other
/// than `previous` when there is a choice.
fn next_legacy_sticky(partitions: &[PartitionState], previous: Option<u32>, rng: &mut Rng) -> (u32, u32) {
    let available = available(partitions);
    match available.len() {
        0 => {
            let random = to_positive(rng.next_java_int()) as u32;
            (random % partitions.len() as u32, partitions.len() as u32)
        }
        1 => (available[0], 1),
        count => loop {
            let random = to_positive(rng.next_java_int()) as u32;
            let candidate = available[(random % count as u32) as usize];
            if Some(candidate) != previous {
                return (candidate, count as u32);
            }
        },
    }
}

fn available(partitions: &[PartitionState]) -> Vec<u32> {
    partitions
        .iter()
        .enumerate()
        .filter(|(_, partition)| partition.leader_known)
        .map(|(index, _)| index as u32)
        .collect()
}

/// `batch.size` below 1 is rejected by Kafka; we clamp instead of failing.
fn sanitize(config: NullKeyConfig) -> NullKeyConfig {
    NullKeyConfig {
        batch_size: config.batch_size.max(1),
        ..config
    }
}

/// A keyless workload through a minimal record accumulator, for the sandbox
/// and lessons: `count` records of `record_bytes` each, produced to a topic
/// whose partitions are all available. With `linger_ms_zero` every batch is
/// sent as soon as a record lands in it (queues stay empty, so batches are
/// always ready); otherwise batches are sent only when full. Returns every
/// choice, in order.
pub fn simulate_keyless(
    strategy: NullKeyStrategy,
    config: NullKeyConfig,
    partition_count: u32,
    count: usize,
    record_bytes: u32,
    linger_ms_zero: bool,
    seed: u64,
) -> Vec<NullKeyChoice> {
    let config = sanitize(config);
    let mut rng = Rng::new(seed, 0).derive("null-key-partitioner");
    let mut partitioner = NullKeyPartitioner::new(strategy, config);
    // Bytes in each partition's open batch, and queued (full, unsent) batches.
    let mut open_batch: Vec<Option<u32>> = vec![None; partition_count as usize];
    let mut state = vec![
        PartitionState {
            leader_known: true,
            queued_batches: None
        };
        partition_count as usize
    ];
    let mut choices = Vec::with_capacity(count);
    for _ in 0..count {
        let fits = |partition: u32| {
            open_batch[partition as usize].is_some_and(|bytes| bytes.saturating_add(record_bytes) <= config.batch_size)
        };
        let Some(choice) = partitioner.choose(&state, |partition| !fits(partition), &mut rng) else {
            break;
        };
        let partition = choice.partition as usize;
        // Append: into the open batch if it fits, else close it and open one.
        let queued = state[partition].queued_batches.get_or_insert(0);
        match open_batch[partition] {
            Some(bytes) if bytes.saturating_add(record_bytes) <= config.batch_size => {
                open_batch[partition] = Some(bytes + record_bytes);
            }
            Some(_) => {
                *queued += 1;
                open_batch[partition] = Some(record_bytes);
            }
            None => open_batch[partition] = Some(record_bytes),
        }
        let ready = if linger_ms_zero {
            // The sender drains everything right away.
            *queued = 0;
            open_batch[partition] = None;
            true
        } else {
            open_batch[partition].is_some_and(|bytes| bytes.saturating_add(record_bytes) > config.batch_size)
        };
        partitioner.appended(choice.partition, record_bytes, &state, ready, &mut rng);
        choices.push(choice);
    }
    choices
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_available(count: usize, queues: &[u32]) -> Vec<PartitionState> {
        (0..count)
            .map(|index| PartitionState {
                leader_known: true,
                queued_batches: queues.get(index).copied(),
            })
            .collect()
    }

    #[test]
    fn adaptive_weights_follow_kafkas_example() {
        // BuiltInPartitionerTest#adaptivePartitionsTest: queues {5,0,3,0,1}
        // give frequencies {1,6,3,6,5} per 21.
        let partitioner = NullKeyPartitioner::new(NullKeyStrategy::UniformSticky, NullKeyConfig::default());
        let table = partitioner
            .load_table(&all_available(5, &[5, 0, 3, 0, 1]))
            .expect("weighted");
        let cumulative: Vec<u32> = table.iter().map(|&(value, _)| value).collect();
        assert_eq!(cumulative, vec![1, 7, 10, 16, 21]);
        let mut frequency = [0u32; 5];
        for random in 0..21u32 {
            let index = table.partition_point(|&(value, _)| value <= random);
            frequency[index] += 1;
        }
        assert_eq!(frequency, [1, 6, 3, 6, 5]);
    }

    #[test]
    fn equal_queues_switch_uniformly() {
        let partitioner = NullKeyPartitioner::new(NullKeyStrategy::UniformSticky, NullKeyConfig::default());
        assert_eq!(partitioner.load_table(&all_available(3, &[2, 2, 2])), None);
        assert_eq!(
            partitioner.load_table(&all_available(3, &[2, 2])),
            None,
            "a partition without batches"
        );
    }

    #[test]
    fn uniform_sticky_switches_after_batch_size_bytes() {
        let config = NullKeyConfig {
            batch_size: 1000,
            adaptive: true,
        };
        let choices = simulate_keyless(NullKeyStrategy::UniformSticky, config, 6, 40, 100, true, 1);
        // Ten 100-byte records reach batch.size, then the partition changes.
        let first = choices[0].partition;
        assert!(choices[..10].iter().all(|choice| choice.partition == first));
        assert!(matches!(
            choices[10].reason,
            NullKeyReason::Switched {
                because: SwitchCause::BatchSizeReached,
                ..
            }
        ));
    }

    #[test]
    fn uniform_sticky_waits_for_a_ready_batch_up_to_twice_batch_size() {
        // With linger, 300-byte records in 1000-byte batches: after 4 records
        // (1200 bytes) the open batch still has room, so no switch until the
        // batch is full (after 6 records, 1800 bytes) — below 2x.
        let config = NullKeyConfig {
            batch_size: 1000,
            adaptive: false,
        };
        let choices = simulate_keyless(NullKeyStrategy::UniformSticky, config, 4, 20, 300, false, 3);
        let switch = choices
            .iter()
            .position(|choice| matches!(choice.reason, NullKeyReason::Switched { .. }));
        assert!(switch.is_some());
        let switch = switch.unwrap_or(0);
        assert!(
            (4..=7).contains(&switch),
            "switched before record {switch}: {choices:?}"
        );
    }

    #[test]
    fn legacy_sticky_switches_on_a_new_batch_to_another_partition() {
        let config = NullKeyConfig {
            batch_size: 1000,
            adaptive: false,
        };
        let choices = simulate_keyless(NullKeyStrategy::LegacySticky, config, 3, 30, 300, false, 5);
        for pair in choices.windows(2) {
            if let NullKeyReason::Switched { from, because, .. } = pair[1].reason {
                assert_eq!(because, SwitchCause::NewBatch);
                assert_ne!(from, pair[1].partition, "KIP-480 never re-picks the same partition");
            }
        }
        assert!(choices
            .iter()
            .any(|choice| matches!(choice.reason, NullKeyReason::Switched { .. })));
    }

    #[test]
    fn round_robin_cycles_and_the_opt_in_partitioner_skips_on_new_batches() {
        let config = NullKeyConfig {
            batch_size: 1000,
            adaptive: false,
        };
        let legacy = simulate_keyless(
            NullKeyStrategy::RoundRobin { legacy_default: true },
            config,
            3,
            6,
            100,
            true,
            9,
        );
        let cycle: Vec<u32> = legacy.iter().map(|choice| choice.partition).collect();
        assert_eq!(cycle[..3], cycle[3..], "period 3: {cycle:?}");
        // linger.ms=0: every record opens a new batch, so the opt-in
        // partitioner is asked twice each time and lands on every other
        // partition (0, 1, 2, 3 asked; 1, 3, 5... answered).
        let opt_in = simulate_keyless(
            NullKeyStrategy::RoundRobin { legacy_default: false },
            config,
            4,
            4,
            100,
            true,
            9,
        );
        let partitions: Vec<u32> = opt_in.iter().map(|choice| choice.partition).collect();
        assert_eq!(partitions, vec![1, 3, 1, 3]);
    }

    #[test]
    fn the_same_seed_gives_the_same_choices() {
        let config = NullKeyConfig::default();
        let one = simulate_keyless(NullKeyStrategy::UniformSticky, config, 12, 500, 512, true, 42);
        let two = simulate_keyless(NullKeyStrategy::UniformSticky, config, 12, 500, 512, true, 42);
        assert_eq!(one, two);
    }
}
