//! The broker's check of an idempotent producer's sequence numbers
//! (`ProducerAppendInfo#checkSequence`, `ProducerStateEntry`, and the
//! duplicate handling in `UnifiedLog`).
//!
//! Each (producer id, partition) carries a sequence number per record. The
//! broker appends a batch only if it continues the last one; a batch it has
//! seen (among the last five) is answered with its original offset instead
//! of being written twice — that is how retries stay exactly-once per
//! partition.

use std::collections::VecDeque;

use serde::Serialize;

use super::Offset;

/// Batches per producer the broker remembers for duplicate detection
/// (`ProducerStateEntry.NUM_BATCHES_TO_RETAIN`).
pub const BATCHES_RETAINED: usize = 5;

/// A batch the broker appended for a producer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AppendedBatch {
    /// The first record's sequence number.
    pub first_sequence: i32,
    /// The last record's sequence number.
    pub last_sequence: i32,
    /// The offset the first record got.
    pub base_offset: Offset,
}

/// What the broker remembers about one producer on one partition.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct ProducerState {
    /// The producer epoch of the remembered batches.
    pub epoch: Option<u16>,
    /// The last batches, oldest first.
    pub batches: VecDeque<AppendedBatch>,
}

/// The verdict on an incoming batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum SequenceCheck {
    /// In sequence: append it.
    Append,
    /// Seen before: do not append; answer with the original offset.
    Duplicate {
        /// The offset the batch got the first time.
        base_offset: Offset,
    },
    /// `OUT_OF_ORDER_SEQUENCE_NUMBER`: a gap, or a new epoch not starting at 0.
    OutOfOrder {
        /// The sequence the broker expected.
        expected: i32,
    },
    /// `INVALID_PRODUCER_EPOCH`: an older epoch than the broker knows.
    StaleEpoch,
}

impl ProducerState {
    /// Checks a batch with sequences `first..=last` from producer `epoch`.
    pub fn check(&self, epoch: u16, first_sequence: i32, last_sequence: i32) -> SequenceCheck {
        match self.epoch {
            Some(known) if epoch < known => return SequenceCheck::StaleEpoch,
            Some(known) if epoch > known => {
                return if first_sequence == 0 {
                    SequenceCheck::Append
                } else {
                    SequenceCheck::OutOfOrder { expected: 0 }
                };
            }
            Some(_) => {}
            None => return SequenceCheck::Append,
        }
        if let Some(duplicate) = self
            .batches
            .iter()
            .find(|batch| batch.first_sequence == first_sequence && batch.last_sequence == last_sequence)
        {
            return SequenceCheck::Duplicate {
                base_offset: duplicate.base_offset,
            };
        }
        let Some(last) = self.batches.back() else {
            return SequenceCheck::Append;
        };
        // After i32::MAX the sequence wraps to 0 (`inSequence`).
        let expected = if last.last_sequence == i32::MAX {
            0
        } else {
            last.last_sequence + 1
        };
        if first_sequence == expected {
            SequenceCheck::Append
        } else {
            SequenceCheck::OutOfOrder { expected }
        }
    }

    /// Records an appended batch, forgetting older epochs and all but the
    /// last [`BATCHES_RETAINED`] batches.
    pub fn record(&mut self, epoch: u16, batch: AppendedBatch) {
        if self.epoch != Some(epoch) {
            self.epoch = Some(epoch);
            self.batches.clear();
        }
        self.batches.push_back(batch);
        while self.batches.len() > BATCHES_RETAINED {
            self.batches.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state_with_last(last_sequence: i32) -> ProducerState {
        let mut state = ProducerState::default();
        state.record(
            0,
            AppendedBatch {
                first_sequence: last_sequence.saturating_sub(1).max(0),
                last_sequence,
                base_offset: 40,
            },
        );
        state
    }

    #[test]
    fn sequences_follow_kafkas_rules() {
        // The cases of vectors-replication.json "idempotence" (derived).
        assert_eq!(state_with_last(4).check(0, 5, 5), SequenceCheck::Append);
        assert_eq!(state_with_last(i32::MAX).check(0, 0, 0), SequenceCheck::Append);
        assert_eq!(
            state_with_last(4).check(0, 7, 7),
            SequenceCheck::OutOfOrder { expected: 5 }
        );
        assert_eq!(
            state_with_last(4).check(0, 3, 4),
            SequenceCheck::Duplicate { base_offset: 40 }
        );
        assert_eq!(state_with_last(4).check(1, 0, 0), SequenceCheck::Append);
        assert_eq!(
            state_with_last(4).check(1, 3, 3),
            SequenceCheck::OutOfOrder { expected: 0 }
        );
        let mut newer = state_with_last(4);
        newer.record(
            2,
            AppendedBatch {
                first_sequence: 0,
                last_sequence: 0,
                base_offset: 50,
            },
        );
        assert_eq!(newer.check(1, 1, 1), SequenceCheck::StaleEpoch);
    }

    #[test]
    fn only_the_last_five_batches_are_remembered() {
        let mut state = ProducerState::default();
        for sequence in 0..7 {
            state.record(
                0,
                AppendedBatch {
                    first_sequence: sequence,
                    last_sequence: sequence,
                    base_offset: sequence as u64,
                },
            );
        }
        assert_eq!(state.batches.len(), BATCHES_RETAINED);
        assert_eq!(state.check(0, 1, 1), SequenceCheck::OutOfOrder { expected: 7 });
        assert_eq!(state.check(0, 3, 3), SequenceCheck::Duplicate { base_offset: 3 });
    }
}
