//! SyncGroup, Heartbeat, LeaveGroup and OffsetCommit from the members of a
//! classic group (`GroupMetadataManager#classicGroupSync`,
//! `#classicGroupHeartbeat`, `#classicGroupLeave`, `OffsetMetadataManager`).

use super::*;

impl ClassicShard {
    // ----- SyncGroup -----------------------------------------------------

    /// A SyncGroup. The leader's carries the assignment, which is written
    /// to the log; every member gets its part once that is committed.
    pub fn sync(&mut self, request_id: RequestId, request: &SyncRequest) -> Output {
        let written = self.sync_inner(request_id, request);
        self.push(written);
        self.take()
    }

    pub(super) fn sync_inner(&mut self, request_id: RequestId, request: &SyncRequest) -> Written {
        let Some(group) = self.groups.get(&request.group_id) else {
            self.respond(
                request_id,
                Response::Sync(SyncResponse::error(ErrorCode::UnknownMemberId)),
            );
            return None;
        };
        if group.state == ClassicState::Empty {
            self.respond(
                request_id,
                Response::Sync(SyncResponse::error(ErrorCode::UnknownMemberId)),
            );
            return None;
        }
        let error = if group.state == ClassicState::Dead {
            Some(ErrorCode::CoordinatorNotAvailable)
        } else if let Err(error) = group.validate_member(&request.member_id, request.group_instance_id.as_deref()) {
            Some(error)
        } else if request.generation != group.generation {
            Some(ErrorCode::IllegalGeneration)
        } else if group.state == ClassicState::PreparingRebalance {
            Some(ErrorCode::RebalanceInProgress)
        } else {
            None
        };
        if let Some(error) = error {
            self.respond(request_id, Response::Sync(SyncResponse::error(error)));
            return None;
        }
        let group_id = request.group_id.clone();
        match group.state {
            ClassicState::CompletingRebalance => {
                let group = self.groups.get_mut(&group_id)?;
                if let Some(member) = group.member_mut(&request.member_id) {
                    member.awaiting_sync = Some(request_id);
                }
                self.remove_pending_sync_member(&group_id, &request.member_id);
                let group = self.groups.get(&group_id)?;
                if !group.is_leader(&request.member_id) {
                    return None;
                }
                let mut assignment: BTreeMap<String, Vec<u8>> = request.assignments.iter().cloned().gather();
                for member in &group.members {
                    assignment.entry(member.member_id.clone()).or_default();
                }
                let record = group.metadata_record(&assignment);
                Some(Write {
                    transactional: None,
                    records: vec![record],
                    replay: false,
                    callback: Some(AppendCallback::Assignment {
                        group: group_id,
                        generation: request.generation,
                        assignment,
                    }),
                    response: None,
                })
            }
            ClassicState::Stable => {
                self.remove_pending_sync_member(&group_id, &request.member_id);
                let group = self.groups.get(&group_id)?;
                let member = group.member(&request.member_id)?;
                let response = SyncResponse {
                    error: None,
                    protocol_type: group.protocol_type.clone(),
                    protocol_name: group.protocol_name.clone(),
                    assignment: member.assignment.clone(),
                };
                self.respond(request_id, Response::Sync(response));
                None
            }
            _ => None,
        }
    }

    pub(super) fn remove_pending_sync_member(&mut self, group_id: &str, member_id: &str) {
        let Some(group) = self.groups.get_mut(group_id) else {
            return;
        };
        group.pending_sync.remove(member_id);
        let cancel = match group.state {
            ClassicState::Dead | ClassicState::Empty | ClassicState::PreparingRebalance => true,
            ClassicState::CompletingRebalance | ClassicState::Stable => group.pending_sync.is_empty(),
        };
        if cancel {
            self.timer.cancel(&sync_key(group_id));
        }
    }

    pub(super) fn remove_sync_expiration(&mut self, group_id: &str) {
        if let Some(group) = self.groups.get_mut(group_id) {
            group.pending_sync.clear();
        }
        self.timer.cancel(&sync_key(group_id));
    }

    /// `resetAndPropagateAssignmentWithError`.
    pub(super) fn reset_and_propagate_assignment(&mut self, group_id: &str, error: ErrorCode) {
        if let Some(group) = self.groups.get_mut(group_id) {
            for member in &mut group.members {
                member.assignment.clear();
            }
        }
        self.propagate_assignment(group_id, Some(error));
    }

    /// `propagateAssignment`: answers every parked SyncGroup and restarts
    /// those members' session timers.
    pub(super) fn propagate_assignment(&mut self, group_id: &str, error: Option<ErrorCode>) {
        let Some(group) = self.groups.get_mut(group_id) else {
            return;
        };
        let (protocol_type, protocol_name) = if error.is_none() {
            (group.protocol_type.clone(), group.protocol_name.clone())
        } else {
            (None, None)
        };
        let mut answers = Vec::new();
        let mut sessions = Vec::new();
        for member in &mut group.members {
            if let Some(request) = member.awaiting_sync.take() {
                answers.push((
                    request,
                    Response::Sync(SyncResponse {
                        error,
                        protocol_type: protocol_type.clone(),
                        protocol_name: protocol_name.clone(),
                        assignment: member.assignment.clone(),
                    }),
                ));
                sessions.push((member.member_id.clone(), member.session_timeout_ms));
            }
        }
        self.out.responses.extend(answers);
        for (member, session) in sessions {
            self.reschedule_heartbeat(group_id, &member, session);
        }
    }

    /// `expirePendingSync`: members that never sent SyncGroup are removed
    /// and the group rebalances without them.
    pub(super) fn expire_pending_sync(&mut self, group_id: &str) -> Written {
        let hint = self.hint();
        let group = self.groups.get_mut(group_id)?;
        if !matches!(group.state, ClassicState::CompletingRebalance | ClassicState::Stable)
            || group.pending_sync.is_empty()
        {
            return None;
        }
        let missing: Vec<String> = group.pending_sync.iter().cloned().collect();
        for member_id in &missing {
            group.remove(member_id, &hint);
        }
        for member_id in &missing {
            self.timer.cancel(&heartbeat_key(group_id, member_id));
        }
        self.prepare_rebalance(group_id, RebalanceReason::SyncTimeout)
    }

    // ----- Heartbeat, LeaveGroup, OffsetCommit -----------------------------

    /// A Heartbeat: restarts the member's session timer; during a
    /// rebalance it answers `REBALANCE_IN_PROGRESS`, the cue to rejoin.
    pub fn heartbeat(
        &mut self,
        request_id: RequestId,
        group_id: &str,
        member: &MemberIdentity,
        generation: i32,
    ) -> Output {
        let error = self.heartbeat_inner(group_id, member, generation).err();
        let error = match error {
            Some(error) => Some(error),
            None => match self.groups.get(group_id).map(|group| group.state) {
                Some(ClassicState::PreparingRebalance) => Some(ErrorCode::RebalanceInProgress),
                _ => None,
            },
        };
        self.respond(request_id, Response::Heartbeat(error));
        self.take()
    }

    pub(super) fn heartbeat_inner(
        &mut self,
        group_id: &str,
        identity: &MemberIdentity,
        generation: i32,
    ) -> Result<(), ErrorCode> {
        let group = self.groups.get(group_id).ok_or(ErrorCode::UnknownMemberId)?;
        if group.state == ClassicState::Dead {
            return Err(ErrorCode::CoordinatorNotAvailable);
        }
        group.validate_member(&identity.member_id, identity.group_instance_id.as_deref())?;
        if generation != group.generation {
            return Err(ErrorCode::IllegalGeneration);
        }
        if group.state == ClassicState::Empty {
            return Err(ErrorCode::UnknownMemberId);
        }
        let session = group
            .member(&identity.member_id)
            .map_or(0, |member| member.session_timeout_ms);
        self.reschedule_heartbeat(group_id, &identity.member_id, session);
        Ok(())
    }

    /// A LeaveGroup for one or more members (v3+ member identities).
    pub fn leave(&mut self, request_id: RequestId, group_id: &str, members: &[MemberIdentity]) -> Output {
        let Some(group) = self.groups.get(group_id) else {
            self.respond(
                request_id,
                Response::Leave(LeaveResponse {
                    error: Some(ErrorCode::UnknownMemberId),
                    members: Vec::new(),
                }),
            );
            return self.take();
        };
        if group.state == ClassicState::Dead {
            self.respond(
                request_id,
                Response::Leave(LeaveResponse {
                    error: Some(ErrorCode::CoordinatorNotAvailable),
                    members: Vec::new(),
                }),
            );
            return self.take();
        }
        let hint = self.hint();
        let mut answers = Vec::new();
        for identity in members {
            let group = self.groups.get_mut(group_id).expect("checked above");
            let error = if identity.member_id == UNKNOWN_MEMBER_ID {
                // Removal by instance id (an administrator's).
                match identity
                    .group_instance_id
                    .as_deref()
                    .and_then(|instance| group.static_member_id(instance))
                {
                    Some(member_id) => {
                        self.remove_current_member(group_id, &member_id, &hint);
                        None
                    }
                    None => Some(ErrorCode::UnknownMemberId),
                }
            } else if group.pending_join.contains(&identity.member_id) {
                group.remove(&identity.member_id, &[]);
                self.timer.cancel(&heartbeat_key(group_id, &identity.member_id));
                None
            } else {
                match group.validate_member(&identity.member_id, identity.group_instance_id.as_deref()) {
                    Ok(()) => {
                        self.remove_current_member(group_id, &identity.member_id, &hint);
                        None
                    }
                    Err(error) => Some(error),
                }
            };
            answers.push(LeaveMemberResponse {
                member_id: identity.member_id.clone(),
                group_instance_id: identity.group_instance_id.clone(),
                error,
            });
        }
        let mut written = None;
        if let Some(answer) = answers.iter().find(|answer| answer.error.is_none()) {
            let left = match answer.member_id.as_str() {
                UNKNOWN_MEMBER_ID => answer.group_instance_id.clone().unwrap_or_default(),
                member => member.to_string(),
            };
            written = match self.groups.get(group_id).map(|group| group.state) {
                Some(ClassicState::Stable | ClassicState::CompletingRebalance) => {
                    self.maybe_prepare_rebalance_or_complete_join(group_id, RebalanceReason::Left { member: left })
                }
                Some(ClassicState::PreparingRebalance) => self.maybe_complete_join_phase(group_id),
                _ => None,
            };
        }
        let response = Response::Leave(LeaveResponse {
            error: None,
            members: answers,
        });
        match written {
            Some(mut write) => {
                write.response = Some((request_id, response));
                self.out.writes.push(write);
            }
            None => self.respond(request_id, response),
        }
        self.take()
    }

    /// `removeCurrentMemberFromClassicGroup`.
    pub(super) fn remove_current_member(&mut self, group_id: &str, member_id: &str, hint: &[String]) {
        self.timer.cancel(&heartbeat_key(group_id, member_id));
        let Some(group) = self.groups.get_mut(group_id) else {
            return;
        };
        if let Some(request) = group
            .member_mut(member_id)
            .and_then(|member| member.awaiting_join.take())
        {
            self.out.responses.push((
                request,
                Response::Join(JoinResponse::error(UNKNOWN_MEMBER_ID, ErrorCode::UnknownMemberId)),
            ));
        }
        group.remove(member_id, hint);
    }

    /// An OffsetCommit (v9) of one or more partitions. It is answered once
    /// its records are committed.
    pub fn commit(
        &mut self,
        request_id: RequestId,
        group_id: &str,
        member: &MemberIdentity,
        generation: i32,
        offsets: &[(String, u32, i64)],
    ) -> Output {
        let now = self.now_ms;
        let validated = match self.groups.get(group_id) {
            None if generation < 0 => {
                // A "simple" group, made by its first commit.
                self.groups
                    .insert(group_id.to_string(), ClassicGroup::new(group_id, now));
                Ok(())
            }
            None => Err(ErrorCode::GroupIdNotFound),
            Some(group) => group.validate_offset_commit(
                &member.member_id,
                member.group_instance_id.as_deref(),
                generation,
                false,
            ),
        };
        if let Err(error) = validated {
            self.respond(request_id, Response::OffsetCommit(Some(error)));
            return self.take();
        }
        let state = self.groups.get(group_id).map(|group| group.state);
        if matches!(state, Some(ClassicState::Stable | ClassicState::PreparingRebalance)) {
            // A commit keeps the member's session alive.
            let session = self
                .groups
                .get(group_id)
                .and_then(|group| group.member(&member.member_id))
                .map(|member| member.session_timeout_ms);
            if let Some(session) = session {
                self.reschedule_heartbeat(group_id, &member.member_id, session);
            }
        }
        self.commit_offsets(request_id, group_id, offsets)
    }

    /// Writes an OffsetCommit's offsets without checking the member: for a
    /// group another protocol's shard owns, which checked it
    /// (`ConsumerGroup#validateOffsetCommit`).
    pub fn commit_offsets(&mut self, request_id: RequestId, group_id: &str, offsets: &[(String, u32, i64)]) -> Output {
        self.offsets_write(request_id, group_id, offsets, Response::OffsetCommit(None), None)
    }
}
