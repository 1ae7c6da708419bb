//! The share coordinator's state for share-partitions (KIP-932): what each
//! share-partition's leader wrote of its records' states, kept in
//! `__share_group_state` as `ShareSnapshot` and `ShareUpdate` records, and
//! read back by the next leader. Kafka 4.1's
//! `org.apache.kafka.coordinator.share.ShareCoordinatorShard` and
//! `PersisterStateBatchCombiner`, sans-IO (read in
//! `share-coordinator/src/main/java` at 13f70256, the 4.1.0 release commit):
//! - a write is refused for a share-partition not initialised
//!   (`INVALID_REQUEST`), from a leader or state epoch older than the last
//!   seen (`FENCED_LEADER_EPOCH`, `FENCED_STATE_EPOCH`);
//! - it becomes a `ShareUpdate` holding just its batches, or a
//!   `ShareSnapshot` of the whole merged state when
//!   `share.coordinator.snapshot.update.records.per.snapshot` (500) updates
//!   came since the last one or the state epoch rose (`generateShareStateRecord`);
//! - replaying the records folds each update into the state
//!   (`handleShareSnapshot`, `handleShareUpdate`, `merge`), merging batches:
//!   those below the start offset dropped, overlaps resolved for the batch
//!   with the higher delivery count (then state), equal neighbours joined;
//! - a read from a new leader epoch records that epoch (a write), which
//!   fences the old leader (`readStateAndMaybeUpdateLeaderEpoch`).
//!
//! Not modelled: topic ids (a share-partition is named by group, topic and
//! partition), deletes, cold-partition snapshots, the log of the records
//! itself (the caller appends them where it keeps the coordinator's log).

use std::collections::{BTreeMap, BTreeSet};

use super::share_partition::{RecordState, StateBatch};

/// `share.coordinator.snapshot.update.records.per.snapshot`.
pub const UPDATES_PER_SNAPSHOT: u32 = 500;

/// A range of records' state as the share coordinator stores it
/// (`PersisterStateBatch`): its delivery state's id (0 available, 2
/// acknowledged, 4 archived) and its delivery count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct PersistedBatch {
    /// The first offset.
    pub first: u64,
    /// The last offset.
    pub last: u64,
    /// How many times its records were delivered.
    pub delivery_count: i16,
    /// `RecordState::id` of its records.
    pub delivery_state: i8,
}

impl PersistedBatch {
    /// A batch from its offsets, state id and delivery count (Kafka's
    /// argument order).
    pub fn new(first: u64, last: u64, delivery_state: i8, delivery_count: i16) -> PersistedBatch {
        PersistedBatch {
            first,
            last,
            delivery_count,
            delivery_state,
        }
    }

    /// `compareBatchDeliveryInfo`: by delivery count, then state.
    fn delivery(&self) -> (i16, i8) {
        (self.delivery_count, self.delivery_state)
    }

    fn with_offsets(self, first: u64, last: u64) -> PersistedBatch {
        PersistedBatch { first, last, ..self }
    }
}

impl PersistedBatch {
    /// The batch as a new leader takes it (`RecordState.forId`), unless its
    /// state is not one the share coordinator stores.
    pub fn to_state_batch(self) -> Option<StateBatch> {
        let state = match self.delivery_state {
            0 => RecordState::Available,
            2 => RecordState::Acknowledged,
            4 => RecordState::Archived,
            _ => return None,
        };
        Some(StateBatch {
            first: self.first,
            last: self.last,
            state,
            delivery_count: u16::try_from(self.delivery_count).ok()?,
        })
    }
}

impl From<StateBatch> for PersistedBatch {
    fn from(batch: StateBatch) -> PersistedBatch {
        PersistedBatch::new(
            batch.first,
            batch.last,
            batch.state.id(),
            i16::try_from(batch.delivery_count).unwrap_or(i16::MAX),
        )
    }
}

/// `PersisterStateBatchCombiner#combineStateBatches`: the batches so far
/// and the new ones as one list, without what lies below `start_offset`,
/// overlaps resolved and equal neighbours joined, in offset order.
pub fn combine_state_batches(
    so_far: &[PersistedBatch],
    new: &[PersistedBatch],
    start_offset: Option<u64>,
) -> Vec<PersistedBatch> {
    let mut combined: Vec<PersistedBatch> = so_far.iter().chain(new).copied().collect();
    if let Some(start) = start_offset {
        combined = combined
            .into_iter()
            .filter(|batch| batch.last >= start)
            .map(|batch| batch.with_offsets(batch.first.max(start), batch.last))
            .collect();
    }
    if combined.len() < 2 {
        return combined;
    }
    // Kafka's `TreeSet` orders by first offset, last offset, delivery
    // count, then state, and keeps one of equal batches.
    let mut sorted: BTreeSet<PersistedBatch> = combined.into_iter().collect();
    let mut done = Vec::new();
    while let Some((prev, candidate)) = merge_candidates(&mut sorted, &mut done) {
        sorted.remove(&prev);
        sorted.remove(&candidate);
        for batch in resolve(prev, candidate) {
            sorted.insert(batch);
        }
    }
    done.extend(sorted);
    done
}

/// `getMergeCandidatePair`: the first two neighbours that overlap, or
/// touch with the same delivery; the batches before them are final.
fn merge_candidates(
    sorted: &mut BTreeSet<PersistedBatch>,
    done: &mut Vec<PersistedBatch>,
) -> Option<(PersistedBatch, PersistedBatch)> {
    let mut iter = sorted.iter();
    let mut prev = *iter.next()?;
    let mut before = Vec::new();
    let mut pair = None;
    for &candidate in iter {
        let overlaps = candidate.first <= prev.last;
        let joins = prev.last + 1 == candidate.first && prev.delivery() == candidate.delivery();
        if overlaps || joins {
            pair = Some((prev, candidate));
            break;
        }
        before.push(prev);
        prev = candidate;
    }
    for batch in &before {
        sorted.remove(batch);
    }
    done.extend(before);
    pair
}

/// Two batches that overlap or touch, as one or more that do not
/// (`handleSameStateMerge`, `handleDiffStateOverlap…`): the one with the
/// higher delivery (count, then state) keeps the offsets they share.
fn resolve(prev: PersistedBatch, candidate: PersistedBatch) -> Vec<PersistedBatch> {
    if candidate.delivery() == prev.delivery() {
        return vec![prev.with_offsets(prev.first, candidate.last.max(prev.last))];
    }
    let candidate_lower = candidate.delivery() < prev.delivery();
    if candidate.first == prev.first {
        if candidate.last == prev.last {
            return vec![candidate];
        }
        return if candidate_lower {
            vec![prev, candidate.with_offsets(prev.last + 1, candidate.last)]
        } else {
            vec![candidate]
        };
    }
    if candidate_lower {
        if candidate.last > prev.last {
            return vec![prev, candidate.with_offsets(prev.last + 1, candidate.last)];
        }
        return vec![prev];
    }
    let mut pieces = vec![prev.with_offsets(prev.first, candidate.first - 1), candidate];
    if candidate.last < prev.last {
        pieces.push(prev.with_offsets(candidate.last + 1, prev.last));
    }
    pieces
}

/// One share-partition's state at the share coordinator (`ShareGroupOffset`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareGroupOffset {
    /// Bumped by each snapshot.
    pub snapshot_epoch: u32,
    /// The group's epoch when the state was initialised (`stateEpoch`).
    pub state_epoch: i32,
    /// The leader epoch of the last writer, if any wrote.
    pub leader_epoch: Option<i32>,
    /// The share-partition start offset, once known.
    pub start_offset: Option<u64>,
    /// The records' states from the start offset on.
    pub batches: Vec<PersistedBatch>,
}

/// A record of `__share_group_state`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShareStateRecord {
    /// The whole state (`ShareSnapshotValue`).
    Snapshot(ShareGroupOffset),
    /// What one write changed (`ShareUpdateValue`: no state epoch).
    Update {
        /// The snapshot it follows.
        snapshot_epoch: u32,
        /// The writer's leader epoch, if it sent one.
        leader_epoch: Option<i32>,
        /// The new start offset, if it moved.
        start_offset: Option<u64>,
        /// The ranges it wrote, merged among themselves.
        batches: Vec<PersistedBatch>,
    },
}

/// Why the share coordinator refused a read or a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShareStateError {
    /// `INVALID_REQUEST`: the share-partition was never initialised.
    Uninitialized,
    /// `FENCED_LEADER_EPOCH`: a newer leader has read or written.
    FencedLeaderEpoch,
    /// `FENCED_STATE_EPOCH`: the state was initialised again since.
    FencedStateEpoch,
}

impl ShareStateError {
    /// Kafka's name for the error.
    pub fn name(self) -> &'static str {
        match self {
            ShareStateError::Uninitialized => "INVALID_REQUEST",
            ShareStateError::FencedLeaderEpoch => "FENCED_LEADER_EPOCH",
            ShareStateError::FencedStateEpoch => "FENCED_STATE_EPOCH",
        }
    }
}

/// A share-partition: its group, topic and partition.
pub type ShareKey = (String, String, u32);

/// The share coordinator's state, as replaying its records builds it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShareCoordinatorShard {
    states: BTreeMap<ShareKey, ShareGroupOffset>,
    leader_epochs: BTreeMap<ShareKey, i32>,
    state_epochs: BTreeMap<ShareKey, i32>,
    updates_since_snapshot: BTreeMap<ShareKey, u32>,
}

impl ShareCoordinatorShard {
    /// The state of `key`, if initialised.
    pub fn state(&self, key: &ShareKey) -> Option<&ShareGroupOffset> {
        self.states.get(key)
    }

    /// `InitializeShareGroupState`: a fresh snapshot (`generateInitializeStateRecord`).
    pub fn initialize(&mut self, key: &ShareKey, state_epoch: i32, start_offset: Option<u64>) -> ShareStateRecord {
        let snapshot_epoch = self.states.get(key).map_or(0, |state| state.snapshot_epoch + 1);
        let record = ShareStateRecord::Snapshot(ShareGroupOffset {
            snapshot_epoch,
            state_epoch,
            leader_epoch: None,
            start_offset,
            batches: Vec::new(),
        });
        self.replay(key, &record);
        record
    }

    /// `WriteShareGroupState` from a share-partition's leader: the record
    /// it becomes, already replayed (`writeState`).
    pub fn write(
        &mut self,
        key: &ShareKey,
        state_epoch: i32,
        leader_epoch: i32,
        start_offset: Option<u64>,
        batches: &[PersistedBatch],
    ) -> Result<ShareStateRecord, ShareStateError> {
        if !self.states.contains_key(key) {
            return Err(ShareStateError::Uninitialized);
        }
        // -1 is "not given", as on the wire.
        if leader_epoch != -1 && self.leader_epochs.get(key).is_some_and(|&known| known > leader_epoch) {
            return Err(ShareStateError::FencedLeaderEpoch);
        }
        if state_epoch != -1 && self.state_epochs.get(key).is_some_and(|&known| known > state_epoch) {
            return Err(ShareStateError::FencedStateEpoch);
        }
        let record = self.state_record(key, state_epoch, leader_epoch, start_offset, batches);
        self.replay(key, &record);
        Ok(record)
    }

    /// `ReadShareGroupState` from a leader at `leader_epoch`: the state,
    /// and the record that notes a newer leader epoch, if it is one
    /// (`readStateAndMaybeUpdateLeaderEpoch`).
    pub fn read(
        &mut self,
        key: &ShareKey,
        leader_epoch: i32,
    ) -> Result<(ShareGroupOffset, Option<ShareStateRecord>), ShareStateError> {
        let state = self.states.get(key).cloned().ok_or(ShareStateError::Uninitialized)?;
        let known = self.leader_epochs.get(key).copied();
        if known.is_some_and(|known| known > leader_epoch) {
            return Err(ShareStateError::FencedLeaderEpoch);
        }
        if leader_epoch == -1 || known == Some(leader_epoch) {
            return Ok((state, None));
        }
        let record = self.state_record(key, state.state_epoch, leader_epoch, state.start_offset, &[]);
        self.replay(key, &record);
        Ok((state, Some(record)))
    }

    /// `generateShareStateRecord`: a snapshot every
    /// [`UPDATES_PER_SNAPSHOT`] updates or when the state epoch rose, else
    /// an update.
    fn state_record(
        &self,
        key: &ShareKey,
        state_epoch: i32,
        leader_epoch: i32,
        start_offset: Option<u64>,
        batches: &[PersistedBatch],
    ) -> ShareStateRecord {
        let current = &self.states[key];
        let updates = self.updates_since_snapshot.get(key).copied().unwrap_or(0);
        let leader = (leader_epoch != -1).then_some(leader_epoch);
        if updates >= UPDATES_PER_SNAPSHOT || state_epoch > current.state_epoch {
            let start = start_offset.or(current.start_offset);
            return ShareStateRecord::Snapshot(ShareGroupOffset {
                snapshot_epoch: current.snapshot_epoch + 1,
                state_epoch: if state_epoch == -1 { current.state_epoch } else { state_epoch },
                leader_epoch: leader.or(current.leader_epoch),
                start_offset: start,
                batches: combine_state_batches(&current.batches, batches, start),
            });
        }
        ShareStateRecord::Update {
            snapshot_epoch: current.snapshot_epoch,
            leader_epoch: leader,
            start_offset,
            batches: combine_state_batches(&[], batches, start_offset),
        }
    }

    /// Folds one record into the state, as loading `__share_group_state`
    /// does (`handleShareSnapshot`, `handleShareUpdate`).
    pub fn replay(&mut self, key: &ShareKey, record: &ShareStateRecord) {
        match record {
            ShareStateRecord::Snapshot(state) => {
                self.note_leader_epoch(key, state.leader_epoch);
                let known = self.state_epochs.entry(key.clone()).or_insert(state.state_epoch);
                *known = (*known).max(state.state_epoch);
                self.states.insert(key.clone(), state.clone());
                if let Some(count) = self.updates_since_snapshot.get_mut(key) {
                    if *count >= UPDATES_PER_SNAPSHOT {
                        *count = 0;
                    }
                }
            }
            ShareStateRecord::Update {
                snapshot_epoch,
                leader_epoch,
                start_offset,
                batches,
            } => {
                self.note_leader_epoch(key, *leader_epoch);
                let merged = match self.states.get(key) {
                    None => ShareGroupOffset {
                        snapshot_epoch: *snapshot_epoch,
                        state_epoch: 0,
                        leader_epoch: *leader_epoch,
                        start_offset: *start_offset,
                        batches: batches.clone(),
                    },
                    Some(so_far) => {
                        let start = start_offset.or(so_far.start_offset);
                        ShareGroupOffset {
                            snapshot_epoch: so_far.snapshot_epoch,
                            state_epoch: so_far.state_epoch,
                            leader_epoch: leader_epoch.or(so_far.leader_epoch),
                            start_offset: start,
                            batches: combine_state_batches(&so_far.batches, batches, start),
                        }
                    }
                };
                self.states.insert(key.clone(), merged);
                let count = self.updates_since_snapshot.entry(key.clone()).or_insert(u32::MAX);
                *count = count.wrapping_add(1);
            }
        }
    }

    /// `maybeUpdateLeaderEpochMap`: the highest leader epoch seen.
    fn note_leader_epoch(&mut self, key: &ShareKey, leader_epoch: Option<i32>) {
        let epoch = leader_epoch.unwrap_or(-1);
        let known = self.leader_epochs.entry(key.clone()).or_insert(epoch);
        *known = (*known).max(epoch);
    }
}

/// Kafka 4.1.0's `PersisterStateBatchCombinerTest` cases, by name, and the
/// shard's rules in its own words.
#[cfg(test)]
mod tests {
    use super::*;

    fn batch(first: u64, last: u64, state: i8, count: i16) -> PersistedBatch {
        PersistedBatch::new(first, last, state, count)
    }

    fn combine(so_far: &[PersistedBatch], new: &[PersistedBatch], start: i64) -> Vec<PersistedBatch> {
        combine_state_batches(so_far, new, u64::try_from(start).ok())
    }

    #[test]
    fn corner_cases() {
        let cases: [(&str, Vec<PersistedBatch>, Vec<PersistedBatch>, Vec<PersistedBatch>, i64); 7] = [
            (
                "Current batches with start offset midway are pruned.",
                vec![batch(100, 130, 0, 1)],
                vec![],
                vec![batch(120, 130, 0, 1)],
                120,
            ),
            (
                "New batches with start offset midway are pruned.",
                vec![],
                vec![batch(100, 130, 0, 1)],
                vec![batch(120, 130, 0, 1)],
                120,
            ),
            ("Both current and new batches empty.", vec![], vec![], vec![], 120),
            ("Null current and new batches are treated as empty.", vec![], vec![], vec![], -1),
            (
                "Duplicate equal batches ending before a later batch do not fill the gap.",
                vec![batch(100, 110, 0, 1)],
                vec![batch(100, 110, 0, 1), batch(120, 130, 2, 1)],
                vec![batch(100, 110, 0, 1), batch(120, 130, 2, 1)],
                -1,
            ),
            (
                "Duplicate state-2 batches ending before a later state-0 batch do not fill the gap.",
                vec![batch(0, 5, 2, 1)],
                vec![batch(0, 5, 2, 1), batch(11, 15, 0, 1)],
                vec![batch(0, 5, 2, 1), batch(11, 15, 0, 1)],
                -1,
            ),
            (
                "Duplicate state-0 batches ending before a later state-0 batch do not fill the gap.",
                vec![batch(0, 5, 0, 1)],
                vec![batch(0, 5, 0, 1), batch(11, 15, 0, 1)],
                vec![batch(0, 5, 0, 1), batch(11, 15, 0, 1)],
                -1,
            ),
        ];
        for (name, so_far, new, expected, start) in cases {
            assert_eq!(combine(&so_far, &new, start), expected, "{name}");
        }
    }

    #[test]
    fn same_state() {
        let so_far = [batch(100, 110, 0, 1)];
        let cases = [
            ("same first and last offset", batch(100, 110, 0, 1), vec![batch(100, 110, 0, 1)]),
            ("same first, last strictly smaller", batch(100, 105, 0, 1), vec![batch(100, 110, 0, 1)]),
            ("same first, last strictly larger", batch(100, 115, 0, 1), vec![batch(100, 115, 0, 1)]),
            ("first larger, last smaller", batch(105, 108, 0, 1), vec![batch(100, 110, 0, 1)]),
            ("first larger, last equal", batch(105, 110, 0, 1), vec![batch(100, 110, 0, 1)]),
            ("first larger, last larger", batch(105, 115, 0, 1), vec![batch(100, 115, 0, 1)]),
            ("contiguous", batch(111, 115, 0, 1), vec![batch(100, 115, 0, 1)]),
        ];
        for (name, new, expected) in cases {
            assert_eq!(combine(&so_far, &[new], -1), expected, "Same state. {name}");
        }
    }

    #[test]
    fn complex_cases() {
        assert_eq!(
            combine(
                &[batch(100, 110, 0, 1), batch(121, 130, 0, 1)],
                &[batch(111, 119, 2, 2), batch(116, 123, 2, 2)],
                -1
            ),
            vec![batch(100, 110, 0, 1), batch(111, 123, 2, 2), batch(124, 130, 0, 1)],
            "Handle overlapping batches in newBatches, same state"
        );
        assert_eq!(
            combine(
                &[batch(100, 110, 0, 1)],
                &[batch(101, 105, 1, 2), batch(101, 115, 2, 2), batch(101, 120, 3, 2)],
                -1
            ),
            vec![batch(100, 100, 0, 1), batch(101, 120, 3, 2)],
            "Handle overlapping batches in newBatches, different priority."
        );
        assert_eq!(
            combine(
                &[batch(100, 110, 0, 1), batch(121, 130, 0, 1)],
                &[batch(111, 119, 2, 2), batch(116, 123, 2, 2)],
                120
            ),
            vec![batch(120, 123, 2, 2), batch(124, 130, 0, 1)],
            "Handle overlapping batches in newBatches, with pruning."
        );
        assert_eq!(
            combine(
                &[batch(111, 120, 0, 1)],
                &[batch(111, 113, 0, 2), batch(114, 114, 2, 1), batch(115, 119, 0, 2)],
                -1
            ),
            vec![batch(111, 113, 0, 2), batch(114, 114, 2, 1), batch(115, 119, 0, 2), batch(120, 120, 0, 1)],
            "Multiple higher state batch updates."
        );
    }

    #[test]
    fn different_states() {
        let cases = [
            ("higher, offsets match", batch(100, 110, 0, 1), batch(100, 110, 0, 2), vec![batch(100, 110, 0, 2)]),
            ("lower, offsets match", batch(100, 110, 0, 3), batch(100, 110, 0, 1), vec![batch(100, 110, 0, 3)]),
            (
                "higher, same first, last smaller",
                batch(100, 110, 0, 1),
                batch(100, 105, 0, 2),
                vec![batch(100, 105, 0, 2), batch(106, 110, 0, 1)],
            ),
            ("lower, same first, last smaller", batch(100, 110, 0, 3), batch(100, 105, 0, 1), vec![batch(100, 110, 0, 3)]),
            ("higher, same first, last larger", batch(100, 110, 0, 1), batch(100, 115, 0, 2), vec![batch(100, 115, 0, 2)]),
            (
                "lower, same first, last larger",
                batch(100, 110, 0, 3),
                batch(100, 115, 0, 1),
                vec![batch(100, 110, 0, 3), batch(111, 115, 0, 1)],
            ),
            (
                "higher, inside",
                batch(100, 115, 0, 1),
                batch(105, 110, 1, 1),
                vec![batch(100, 104, 0, 1), batch(105, 110, 1, 1), batch(111, 115, 0, 1)],
            ),
            ("lower, inside", batch(100, 115, 1, 1), batch(105, 110, 0, 1), vec![batch(100, 115, 1, 1)]),
            (
                "higher, first larger, last same",
                batch(100, 110, 0, 1),
                batch(105, 110, 0, 2),
                vec![batch(100, 104, 0, 1), batch(105, 110, 0, 2)],
            ),
            ("lower, first larger, last same", batch(100, 110, 0, 2), batch(105, 110, 0, 1), vec![batch(100, 110, 0, 2)]),
            (
                "higher, both larger",
                batch(100, 110, 0, 1),
                batch(105, 115, 0, 2),
                vec![batch(100, 104, 0, 1), batch(105, 115, 0, 2)],
            ),
            (
                "lower, both larger",
                batch(100, 110, 0, 2),
                batch(105, 115, 0, 1),
                vec![batch(100, 110, 0, 2), batch(111, 115, 0, 1)],
            ),
        ];
        for (name, so_far, new, expected) in cases {
            assert_eq!(combine(&[so_far], &[new], -1), expected, "newBatch {name}");
        }
    }

    fn key() -> ShareKey {
        ("g".to_string(), "orders".to_string(), 0)
    }

    /// Writes need an initialised share-partition, and a newer leader or
    /// state epoch fences the older writer.
    #[test]
    fn writes_are_refused_uninitialized_or_fenced() {
        let mut shard = ShareCoordinatorShard::default();
        assert_eq!(shard.write(&key(), 0, 0, Some(0), &[]), Err(ShareStateError::Uninitialized));
        shard.initialize(&key(), 1, None);
        assert!(shard.write(&key(), 1, 3, Some(0), &[batch(0, 4, 2, 1)]).is_ok());
        assert_eq!(
            shard.write(&key(), 1, 2, Some(0), &[]).map_err(ShareStateError::name),
            Err("FENCED_LEADER_EPOCH")
        );
        assert_eq!(shard.write(&key(), 0, 3, Some(0), &[]), Err(ShareStateError::FencedStateEpoch));
        // A new leader's read records its epoch, which fences the old one.
        let (state, record) = shard.read(&key(), 4).expect("read");
        assert_eq!(state.batches, vec![batch(0, 4, 2, 1)]);
        assert!(record.is_some());
        assert_eq!(shard.write(&key(), 1, 3, Some(5), &[]), Err(ShareStateError::FencedLeaderEpoch));
        assert_eq!(shard.read(&key(), 4).map(|(_, record)| record), Ok(None));
    }

    /// A leader writes what its members acknowledge (with the start offset
    /// as it was before, so one write behind), fails, and the next leader
    /// starts from that: records it acknowledged stay done, released ones
    /// come back with their count, and the ones held when it failed are
    /// delivered again as if for the first time. The old leader is fenced.
    #[test]
    fn a_new_leader_starts_from_what_the_old_one_wrote() {
        use super::super::share_partition::{AcknowledgeType, AcknowledgementBatch, LogBatch, ShareConfig, SharePartition};
        let mut shard = ShareCoordinatorShard::default();
        shard.initialize(&key(), 0, Some(0));
        let log = [LogBatch { base: 0, last: 9 }];
        let mut leader = SharePartition::new(ShareConfig::default(), 0);
        leader.acquire("a", 500, u64::MAX, 0, &log, 0);
        for (first, last, kind) in [(0, 4, AcknowledgeType::Accept), (5, 7, AcknowledgeType::Release)] {
            let start = leader.start_offset();
            let written = leader
                .acknowledge("a", &[AcknowledgementBatch::all(first, last, kind)])
                .expect("acknowledged");
            let batches: Vec<PersistedBatch> = written.into_iter().map(PersistedBatch::from).collect();
            shard.write(&key(), 0, 1, Some(start), &batches).expect("written");
        }
        let (state, _) = shard.read(&key(), 2).expect("read");
        assert_eq!((state.start_offset, state.batches.clone()), (Some(5), vec![batch(5, 7, 0, 1)]));
        let batches: Vec<StateBatch> = state.batches.iter().filter_map(|batch| batch.to_state_batch()).collect();
        let mut next = SharePartition::initialized(ShareConfig::default(), 5, &batches).expect("initialised");
        assert_eq!(next.next_fetch_offset(), 5);
        let acquired = next.acquire("b", 500, u64::MAX, 5, &log, 0);
        let ranges: Vec<(u64, u64, u16)> = acquired
            .records
            .iter()
            .map(|records| (records.first, records.last, records.delivery_count))
            .collect();
        assert_eq!(ranges, vec![(5, 7, 2), (8, 9, 1)]);
        assert_eq!(shard.write(&key(), 0, 1, Some(5), &[]), Err(ShareStateError::FencedLeaderEpoch));
    }

    /// Updates carry only their batches; the state merges them, and every
    /// [`UPDATES_PER_SNAPSHOT`] updates a snapshot carries the whole state.
    #[test]
    fn updates_merge_and_a_snapshot_comes_every_500() {
        let mut shard = ShareCoordinatorShard::default();
        shard.initialize(&key(), 0, Some(0));
        let first = shard.write(&key(), 0, 0, None, &[batch(0, 9, 0, 1)]).expect("written");
        assert!(matches!(first, ShareStateRecord::Update { .. }));
        shard.write(&key(), 0, 0, None, &[batch(0, 4, 2, 1)]).expect("written");
        assert_eq!(shard.state(&key()).map(|state| state.batches.clone()), Some(vec![batch(0, 4, 2, 1), batch(5, 9, 0, 1)]));
        shard.write(&key(), 0, 0, Some(5), &[]).expect("written");
        assert_eq!(shard.state(&key()).map(|state| state.batches.clone()), Some(vec![batch(5, 9, 0, 1)]));
        let mut snapshots = 0;
        for offset in 10..1_010 {
            let record = shard.write(&key(), 0, 0, None, &[batch(offset, offset, 2, 1)]).expect("written");
            if let ShareStateRecord::Snapshot(state) = record {
                snapshots += 1;
                assert_eq!(state.snapshot_epoch, snapshots);
                assert_eq!(state.batches.first(), Some(&batch(5, 9, 0, 1)));
            }
        }
        assert_eq!(snapshots, 2);
        // Loading the records again builds the same state.
        let mut loaded = ShareCoordinatorShard::default();
        let mut replayed = ShareCoordinatorShard::default();
        replayed.initialize(&key(), 0, Some(0));
        for offset in 0..3u64 {
            let record = replayed.write(&key(), 0, 0, None, &[batch(offset, offset, 2, 1)]).expect("written");
            loaded.replay(&key(), &record);
        }
        assert_eq!(loaded.state(&key()).map(|state| state.batches.clone()), Some(vec![batch(0, 2, 2, 1)]));
    }
}
