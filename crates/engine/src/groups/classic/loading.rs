//! Loading a classic group back from its `__consumer_offsets` records:
//! replaying group metadata and offset commits (transactional ones held
//! until their marker), and loading or unloading the partition
//! (`GroupCoordinatorShard#replay`, `OffsetMetadataManager`).

use super::*;

impl ClassicShard {
    // ----- loading -------------------------------------------------------

    /// Applies one record of the partition (`GroupCoordinatorShard#replay`).
    pub fn replay(&mut self, record: &CoordinatorRecord) {
        match record {
            CoordinatorRecord::GroupMetadata { group, value: None } => {
                self.groups.remove(group);
            }
            CoordinatorRecord::GroupMetadata {
                group,
                value: Some(value),
            } => {
                let protocol_type = Some(value.protocol_type.clone()).filter(|kind| !kind.is_empty());
                let mut loaded = ClassicGroup {
                    group_id: group.clone(),
                    state: if value.members.is_empty() {
                        ClassicState::Empty
                    } else {
                        ClassicState::Stable
                    },
                    previous_state: ClassicState::Dead,
                    current_state_timestamp: u64::try_from(value.current_state_timestamp).ok(),
                    protocol_type: protocol_type.clone(),
                    protocol_name: value.protocol.clone(),
                    generation: value.generation,
                    leader: value.leader.clone(),
                    members: Vec::new(),
                    pending_join: BTreeSet::new(),
                    pending_sync: BTreeSet::new(),
                    rebalance_reason: RebalanceReason::Unstated,
                    new_member_added: false,
                };
                for member in &value.members {
                    loaded.members.push(ClassicMember {
                        member_id: member.member_id.clone(),
                        group_instance_id: member.group_instance_id.clone(),
                        client_id: member.client_id.clone(),
                        rebalance_timeout_ms: member.rebalance_timeout_ms,
                        session_timeout_ms: member.session_timeout_ms,
                        protocol_type: value.protocol_type.clone(),
                        protocols: vec![Protocol {
                            name: value.protocol.clone().unwrap_or_default(),
                            metadata: member.subscription.clone(),
                        }],
                        assignment: member.assignment.clone(),
                        awaiting_join: None,
                        awaiting_sync: None,
                        is_new: false,
                    });
                    if loaded.leader.is_none() {
                        loaded.leader = Some(member.member_id.clone());
                    }
                    if loaded.protocol_type.is_none() {
                        loaded.protocol_type = Some(value.protocol_type.clone());
                    }
                }
                self.groups.insert(group.clone(), loaded);
            }
            CoordinatorRecord::OffsetCommit {
                group,
                topic,
                partition,
                value,
            } => match value {
                Some(value) => {
                    if !self.groups.contains_key(group) {
                        // A "simple" group: offsets without membership.
                        self.groups.insert(group.clone(), ClassicGroup::new(group, self.now_ms));
                    }
                    self.offsets
                        .entry(group.clone())
                        .or_default()
                        .insert((topic.clone(), *partition), value.clone());
                }
                None => {
                    if let Some(offsets) = self.offsets.get_mut(group) {
                        offsets.remove(&(topic.clone(), *partition));
                        if offsets.is_empty() {
                            self.offsets.remove(group);
                        }
                    }
                }
            },
        }
    }

    /// Applies one record at log offset `record_offset`, written by
    /// `producer_id` if it came in a transactional batch
    /// (`OffsetMetadataManager#replay`): a transactional offset waits in
    /// the pending store for its marker; a tombstone also drops pending
    /// offsets of that partition.
    pub fn replay_at(&mut self, record: &CoordinatorRecord, record_offset: u64, producer_id: Option<u64>) {
        if let CoordinatorRecord::OffsetCommit {
            group,
            topic,
            partition,
            value,
        } = record
        {
            let key = (group.clone(), topic.clone(), *partition);
            match (value, producer_id) {
                (Some(value), Some(producer_id)) => {
                    if !self.groups.contains_key(group) {
                        self.groups.insert(group.clone(), ClassicGroup::new(group, self.now_ms));
                    }
                    self.pending_txn_offsets
                        .entry(producer_id)
                        .or_default()
                        .insert(key, (value.clone(), record_offset));
                    return;
                }
                (Some(_), None) => {
                    self.record_offsets.insert(key, record_offset);
                }
                (None, _) => {
                    self.record_offsets.remove(&key);
                    for pending in self.pending_txn_offsets.values_mut() {
                        pending.remove(&key);
                    }
                }
            }
        }
        self.replay(record);
    }

    /// A transaction marker for `producer_id` (`replayEndTransactionMarker`):
    /// on commit its pending offsets become the committed ones, unless a
    /// newer commit (a later record) is already there; on abort they go.
    /// Returns the offsets that became committed, per group.
    pub fn replay_end_transaction(
        &mut self,
        producer_id: u64,
        commit: bool,
    ) -> Vec<(String, Vec<(TopicPartition, u64)>)> {
        let Some(pending) = self.pending_txn_offsets.remove(&producer_id) else {
            return Vec::new();
        };
        let mut settled: BTreeMap<String, Vec<(TopicPartition, u64)>> = BTreeMap::new();
        if !commit {
            return Vec::new();
        }
        for ((group, topic, partition), (value, record_offset)) in pending {
            let key = (group.clone(), topic.clone(), partition);
            let newer = self
                .record_offsets
                .get(&key)
                .is_some_and(|existing| *existing > record_offset);
            if newer {
                continue;
            }
            self.record_offsets.insert(key, record_offset);
            settled.entry(group.clone()).or_default().push((
                TopicPartition::new(topic.as_str(), partition),
                u64::try_from(value.offset).unwrap_or(0),
            ));
            self.offsets.entry(group).or_default().insert((topic, partition), value);
        }
        settled.into_iter().collect()
    }

    /// Whether a transaction's offsets for this partition are still
    /// pending (`hasPendingTransactionalOffsets`): an `OffsetFetch`
    /// (which consumers send with `requireStable`) gets
    /// `UNSTABLE_OFFSET_COMMIT` for it.
    pub fn has_pending_transactional_offsets(&self, group: &str, topic: &str, partition: u32) -> bool {
        let key = (group.to_string(), topic.to_string(), partition);
        self.pending_txn_offsets
            .values()
            .any(|pending| pending.contains_key(&key))
    }

    /// A `TxnOffsetCommit` (`OffsetMetadataManager#commitTransactionalOffset`):
    /// the member is checked as for an `OffsetCommit` but the group's
    /// state is not (`validateOffsetCommit` with `isTransactional`); an
    /// unknown group with a generation gets `ILLEGAL_GENERATION`. The
    /// records are written with the producer's id and epoch and answered
    /// once committed; they count only after the transaction's marker.
    #[allow(clippy::too_many_arguments)]
    pub fn commit_transactional(
        &mut self,
        request_id: RequestId,
        client_request: u64,
        group_id: &str,
        member: &MemberIdentity,
        generation: i32,
        producer: (u64, u16),
        offsets: &[(String, u32, i64)],
    ) -> Output {
        let now = self.now_ms;
        let validated = match self.groups.get(group_id) {
            None if generation < 0 => {
                self.groups
                    .insert(group_id.to_string(), ClassicGroup::new(group_id, now));
                Ok(())
            }
            None => Err(ErrorCode::IllegalGeneration),
            Some(group) => {
                group.validate_offset_commit(&member.member_id, member.group_instance_id.as_deref(), generation, true)
            }
        };
        if let Err(error) = validated {
            self.respond(request_id, Response::TxnOffsetCommit(client_request, Some(error)));
            return self.take();
        }
        self.transactional_offsets_write(request_id, client_request, group_id, producer, offsets)
    }

    /// Writes a `TxnOffsetCommit`'s offsets without checking the member
    /// (for a group another protocol's shard owns, which checked it).
    pub fn transactional_offsets_write(
        &mut self,
        request_id: RequestId,
        client_request: u64,
        group_id: &str,
        producer: (u64, u16),
        offsets: &[(String, u32, i64)],
    ) -> Output {
        let response = Response::TxnOffsetCommit(client_request, None);
        self.offsets_write(request_id, group_id, offsets, response, Some(producer))
    }

    /// Writes offset commit records for `offsets`, answered with `response`
    /// once committed; in `producer`'s transactional batch if given.
    pub(super) fn offsets_write(
        &mut self,
        request_id: RequestId,
        group_id: &str,
        offsets: &[(String, u32, i64)],
        response: Response,
        transactional: Option<(u64, u16)>,
    ) -> Output {
        let now = self.now_ms;
        let records = offsets
            .iter()
            .map(|(topic, partition, offset)| CoordinatorRecord::OffsetCommit {
                group: group_id.to_string(),
                topic: topic.clone(),
                partition: *partition,
                value: Some(OffsetCommitValue {
                    offset: *offset,
                    leader_epoch: -1,
                    metadata: String::new(),
                    commit_timestamp: now,
                }),
            })
            .collect();
        self.out.writes.push(Write {
            records,
            replay: true,
            callback: None,
            response: Some((request_id, response)),
            transactional,
        });
        self.take()
    }

    /// The partition is loaded (`onLoaded`): every member's session timer
    /// starts again, and the shard's periodic jobs are scheduled.
    pub fn on_loaded(&mut self) {
        let members: Vec<(String, String, u64)> = self
            .groups
            .values()
            .flat_map(|group| {
                group.members.iter().map(|member| {
                    (
                        group.group_id.clone(),
                        member.member_id.clone(),
                        member.session_timeout_ms,
                    )
                })
            })
            .collect();
        for (group, member, session) in members {
            self.reschedule_heartbeat(&group, &member, session);
        }
        self.schedule(
            GROUP_EXPIRATION_KEY.to_string(),
            self.config.offsets_retention_check_interval_ms,
            TimerOp::ExpireGroupMetadata,
        );
        self.schedule(
            SIZE_COUNTER_KEY.to_string(),
            SIZE_COUNTER_INTERVAL_MS,
            TimerOp::SizeCounter,
        );
    }

    /// The partition moves away (`onUnloaded`): groups turn Dead, and
    /// parked JoinGroup / SyncGroup requests are answered `NOT_COORDINATOR`
    /// so their members look for the new coordinator.
    pub fn unload(&mut self) -> Output {
        let now = self.now_ms;
        let mut answers = Vec::new();
        for group in self.groups.values_mut() {
            group.transition_to(ClassicState::Dead, now);
            match group.previous_state {
                ClassicState::PreparingRebalance => {
                    for member in &mut group.members {
                        if let Some(request) = member.awaiting_join.take() {
                            answers.push((
                                request,
                                Response::Join(JoinResponse::error(&member.member_id, ErrorCode::NotCoordinator)),
                            ));
                        }
                    }
                }
                ClassicState::CompletingRebalance | ClassicState::Stable => {
                    for member in &mut group.members {
                        if let Some(request) = member.awaiting_sync.take() {
                            answers.push((request, Response::Sync(SyncResponse::error(ErrorCode::NotCoordinator))));
                        }
                    }
                }
                ClassicState::Empty | ClassicState::Dead => {}
            }
        }
        self.out.responses.extend(answers);
        self.take()
    }
}
