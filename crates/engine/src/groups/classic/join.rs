//! JoinGroup on the coordinator: new, existing and static members, the
//! initial rebalance delay, preparing a rebalance and completing the join
//! phase, and session timeouts (`GroupMetadataManager#classicGroupJoin`).

use super::*;

impl ClassicShard {
    // ----- JoinGroup -----------------------------------------------------

    /// A JoinGroup as `GroupCoordinatorService` takes it: the session
    /// timeout is checked against the broker's bounds first.
    pub fn join(&mut self, request_id: RequestId, request: &JoinRequest) -> Output {
        if request.group_id.is_empty() {
            // INVALID_GROUP_ID is not among the errors the engine names;
            // an empty group id cannot be configured in the simulator.
            self.join_error(request_id, &request.member_id, ErrorCode::InconsistentGroupProtocol);
            return self.take();
        }
        if request.session_timeout_ms < self.config.min_session_timeout_ms
            || request.session_timeout_ms > self.config.max_session_timeout_ms
        {
            self.join_error(request_id, &request.member_id, ErrorCode::InvalidSessionTimeout);
            return self.take();
        }
        self.shard_join(request_id, request)
    }

    /// A JoinGroup as the shard takes it (`classicGroupJoinToClassicGroup`),
    /// without the service's session-timeout check.
    pub fn shard_join(&mut self, request_id: RequestId, request: &JoinRequest) -> Output {
        let group_id = request.group_id.clone();
        let unknown = request.member_id == UNKNOWN_MEMBER_ID;
        let is_new_group = !self.groups.contains_key(&group_id);
        if is_new_group {
            if !unknown {
                self.join_error(request_id, &request.member_id, ErrorCode::UnknownMemberId);
                return self.take();
            }
            self.groups
                .insert(group_id.clone(), ClassicGroup::new(&group_id, self.now_ms));
        }
        let written = if unknown {
            self.join_new_member(request_id, request)
        } else {
            self.join_existing_member(request_id, request)
        };
        match written {
            None if is_new_group => {
                // The new group is committed with an empty metadata record.
                let group = &self.groups[&group_id];
                let record = CoordinatorRecord::GroupMetadata {
                    group: group_id.clone(),
                    value: Some(GroupMetadataValue {
                        protocol_type: String::new(),
                        generation: 0,
                        protocol: None,
                        leader: None,
                        current_state_timestamp: group.state_timestamp(),
                        members: Vec::new(),
                    }),
                };
                self.out.writes.push(Write {
                    transactional: None,
                    records: vec![record],
                    replay: false,
                    callback: Some(AppendCallback::NewGroup {
                        group: group_id,
                        request: request_id,
                    }),
                    response: None,
                });
            }
            written => self.push(written),
        }
        self.take()
    }

    pub(super) fn join_new_member(&mut self, request_id: RequestId, request: &JoinRequest) -> Written {
        let group = &self.groups[&request.group_id];
        if group.state == ClassicState::Dead {
            self.join_error(request_id, UNKNOWN_MEMBER_ID, ErrorCode::CoordinatorNotAvailable);
            return None;
        }
        if !group.supports_protocols(&request.protocol_type, &request.protocols) {
            self.join_error(request_id, UNKNOWN_MEMBER_ID, ErrorCode::InconsistentGroupProtocol);
            return None;
        }
        let new_member_id = self.generate_member_id(&request.client_id, request.group_instance_id.as_deref());
        match &request.group_instance_id {
            Some(instance) => match self.groups[&request.group_id].static_member_id(instance) {
                // A known static member restarted: it takes over its old
                // id's place (KIP-345).
                Some(existing) => self.update_static_member(request_id, request, &existing, &new_member_id),
                None => self.add_member_then_rebalance(request_id, request, new_member_id),
            },
            None => {
                // JoinGroup v4+: hand out an id and ask the member to join
                // again with it (KIP-394); it is pending until then.
                let group_id = request.group_id.clone();
                if let Some(group) = self.groups.get_mut(&group_id) {
                    group.pending_join.insert(new_member_id.clone());
                }
                self.reschedule_heartbeat(&group_id, &new_member_id, request.session_timeout_ms);
                self.join_error(request_id, &new_member_id, ErrorCode::MemberIdRequired);
                None
            }
        }
    }

    pub(super) fn join_existing_member(&mut self, request_id: RequestId, request: &JoinRequest) -> Written {
        let member_id = request.member_id.clone();
        let group = &self.groups[&request.group_id];
        if group.state == ClassicState::Dead {
            self.join_error(request_id, &member_id, ErrorCode::CoordinatorNotAvailable);
            return None;
        }
        if !group.supports_protocols(&request.protocol_type, &request.protocols) {
            self.join_error(request_id, &member_id, ErrorCode::InconsistentGroupProtocol);
            return None;
        }
        if group.pending_join.contains(&member_id) {
            return self.add_member_then_rebalance(request_id, request, member_id);
        }
        if let Err(error) = group.validate_member(&member_id, request.group_instance_id.as_deref()) {
            let mut response = JoinResponse::error(&member_id, error);
            response.protocol_name = None;
            self.respond(request_id, Response::Join(response));
            return None;
        }
        let member = group.member(&member_id)?;
        let same_metadata = member.protocols == request.protocols;
        match group.state {
            ClassicState::PreparingRebalance => self.update_member_then_rebalance(request_id, request),
            ClassicState::CompletingRebalance if same_metadata => {
                // It missed its JoinGroup answer: send the current one.
                let response = group.join_response(&member_id, group.is_leader(&member_id), false);
                self.respond(request_id, Response::Join(response));
                None
            }
            ClassicState::CompletingRebalance => self.update_member_then_rebalance(request_id, request),
            ClassicState::Stable if group.is_leader(&member_id) || !same_metadata => {
                // The leader's JoinGroup, or new metadata, starts a rebalance.
                self.update_member_then_rebalance(request_id, request)
            }
            ClassicState::Stable => {
                let response = group.join_response(&member_id, false, false);
                self.respond(request_id, Response::Join(response));
                None
            }
            ClassicState::Empty | ClassicState::Dead => {
                self.join_error(request_id, &member_id, ErrorCode::UnknownMemberId);
                None
            }
        }
    }

    /// `updateMember` then `maybePrepareRebalanceOrCompleteJoin`. A member
    /// that was already waiting in a JoinGroup waits on the new one (the
    /// old request is never answered, as in Kafka).
    pub(super) fn update_member_then_rebalance(&mut self, request_id: RequestId, request: &JoinRequest) -> Written {
        let group = self.groups.get_mut(&request.group_id)?;
        let member = group.member_mut(&request.member_id)?;
        member.protocols = request.protocols.clone();
        member.rebalance_timeout_ms = request.rebalance_timeout_ms;
        member.session_timeout_ms = request.session_timeout_ms;
        member.awaiting_join = Some(request_id);
        self.maybe_prepare_rebalance_or_complete_join(
            &request.group_id,
            RebalanceReason::Rejoined {
                member: request.member_id.clone(),
            },
        )
    }

    /// `addMemberThenRebalanceOrCompleteJoin`.
    pub(super) fn add_member_then_rebalance(
        &mut self,
        request_id: RequestId,
        request: &JoinRequest,
        member_id: String,
    ) -> Written {
        let group_id = request.group_id.clone();
        let group = self.groups.get_mut(&group_id)?;
        if group.state == ClassicState::PreparingRebalance && group.previous_state == ClassicState::Empty {
            // The initial rebalance waits longer while members keep coming.
            group.new_member_added = true;
        }
        if group.members.is_empty() {
            group.protocol_type = Some(request.protocol_type.clone());
        }
        if group.leader.is_none() {
            group.leader = Some(member_id.clone());
        }
        group.members.push(ClassicMember {
            member_id: member_id.clone(),
            group_instance_id: request.group_instance_id.clone(),
            client_id: request.client_id.clone(),
            rebalance_timeout_ms: request.rebalance_timeout_ms,
            session_timeout_ms: request.session_timeout_ms,
            protocol_type: request.protocol_type.clone(),
            protocols: request.protocols.clone(),
            assignment: Vec::new(),
            awaiting_join: Some(request_id),
            awaiting_sync: None,
            is_new: true,
        });
        group.pending_join.remove(&member_id);
        let joined = member_id.clone();
        // A new member cannot heartbeat while its JoinGroup is parked; it
        // gets the new-member join timeout instead of its session timeout.
        self.reschedule_heartbeat(&group_id, &member_id, self.config.new_member_join_timeout_ms);
        self.maybe_prepare_rebalance_or_complete_join(&group_id, RebalanceReason::Joined { member: joined })
    }

    /// `updateStaticMemberThenRebalanceOrCompleteJoin`.
    pub(super) fn update_static_member(
        &mut self,
        request_id: RequestId,
        request: &JoinRequest,
        old_member_id: &str,
        new_member_id: &str,
    ) -> Written {
        let group_id = request.group_id.clone();
        self.replace_static_member(&group_id, old_member_id, new_member_id);
        let session = {
            let group = self.groups.get_mut(&group_id)?;
            let member = group.member_mut(new_member_id)?;
            member.session_timeout_ms
        };
        self.reschedule_heartbeat(&group_id, new_member_id, session);
        let group = self.groups.get_mut(&group_id)?;
        let member = group.member_mut(new_member_id)?;
        member.protocols = request.protocols.clone();
        member.rebalance_timeout_ms = request.rebalance_timeout_ms;
        member.session_timeout_ms = request.session_timeout_ms;
        member.awaiting_join = Some(request_id);
        match group.state {
            ClassicState::Stable => {
                if group.protocol_name.clone().unwrap_or_default() == group.select_protocol().unwrap_or_default() {
                    // Same protocol: persist the new id, no rebalance; the
                    // answer goes out once the record is committed.
                    let assignment = group.group_assignment();
                    let record = group.metadata_record(&assignment);
                    Some(Write {
                        transactional: None,
                        records: vec![record],
                        replay: false,
                        callback: Some(AppendCallback::StaticMemberReplaced {
                            group: group_id,
                            request: request_id,
                            old_member_id: old_member_id.to_string(),
                            new_member_id: new_member_id.to_string(),
                        }),
                        response: None,
                    })
                } else {
                    self.maybe_prepare_rebalance_or_complete_join(
                        &group_id,
                        RebalanceReason::Rejoined {
                            member: new_member_id.to_string(),
                        },
                    )
                }
            }
            ClassicState::CompletingRebalance => self.prepare_rebalance(
                &group_id,
                RebalanceReason::Rejoined {
                    member: new_member_id.to_string(),
                },
            ),
            _ => self.maybe_complete_join_phase(&group_id),
        }
    }

    /// `ClassicGroup#replaceStaticMember`: the old id's parked requests are
    /// answered `FENCED_INSTANCE_ID`; the new id takes its place.
    pub(super) fn replace_static_member(&mut self, group_id: &str, old_member_id: &str, new_member_id: &str) {
        let Some(group) = self.groups.get_mut(group_id) else {
            return;
        };
        let Some(index) = group
            .members
            .iter()
            .position(|member| member.member_id == old_member_id)
        else {
            return;
        };
        let mut answers = Vec::new();
        let member = &mut group.members[index];
        if let Some(request) = member.awaiting_join.take() {
            let mut response = JoinResponse::error(old_member_id, ErrorCode::FencedInstanceId);
            response.protocol_name = None;
            answers.push((request, Response::Join(response)));
        }
        if let Some(request) = member.awaiting_sync.take() {
            answers.push((
                request,
                Response::Sync(SyncResponse::error(ErrorCode::FencedInstanceId)),
            ));
        }
        member.member_id = new_member_id.to_string();
        member.is_new = false;
        // Kafka re-inserts the member under its new id.
        let moved = group.members.remove(index);
        group.members.push(moved);
        if group.is_leader(old_member_id) {
            group.leader = Some(new_member_id.to_string());
        }
        self.out.responses.extend(answers);
    }

    /// `maybePrepareRebalanceOrCompleteJoin`.
    pub(super) fn maybe_prepare_rebalance_or_complete_join(
        &mut self,
        group_id: &str,
        reason: RebalanceReason,
    ) -> Written {
        if self.groups.get(group_id)?.can_rebalance() {
            self.prepare_rebalance(group_id, reason)
        } else {
            self.maybe_complete_join_phase(group_id)
        }
    }

    /// `maybeCompleteJoinPhase`: not during the initial rebalance, and only
    /// once every member has rejoined.
    pub(super) fn maybe_complete_join_phase(&mut self, group_id: &str) -> Written {
        let group = self.groups.get(group_id)?;
        if group.state != ClassicState::PreparingRebalance
            || group.previous_state == ClassicState::Empty
            || !group.has_all_members_joined()
        {
            return None;
        }
        self.complete_join(group_id)
    }

    /// `prepareRebalance`.
    pub(super) fn prepare_rebalance(&mut self, group_id: &str, reason: RebalanceReason) -> Written {
        let now = self.now_ms;
        if self.groups.get(group_id)?.state == ClassicState::CompletingRebalance {
            self.reset_and_propagate_assignment(group_id, ErrorCode::RebalanceInProgress);
        }
        self.remove_sync_expiration(group_id);
        let group = self.groups.get_mut(group_id)?;
        group.rebalance_reason = reason;
        let initial = group.state == ClassicState::Empty;
        if initial {
            let delay = self.config.initial_rebalance_delay_ms;
            let remaining = group.rebalance_timeout_ms().saturating_sub(delay);
            group.transition_to(ClassicState::PreparingRebalance, now);
            self.schedule(
                join_key(group_id),
                delay,
                TimerOp::InitialJoin {
                    group: group_id.to_string(),
                    delay_ms: delay,
                    remaining_ms: remaining,
                },
            );
            return None;
        }
        group.transition_to(ClassicState::PreparingRebalance, now);
        self.maybe_complete_join_else_schedule(group_id)
    }

    pub(super) fn maybe_complete_join_else_schedule(&mut self, group_id: &str) -> Written {
        let group = self.groups.get(group_id)?;
        if group.has_all_members_joined() {
            self.complete_join(group_id)
        } else {
            let timeout = group.rebalance_timeout_ms();
            self.schedule(
                join_key(group_id),
                timeout,
                TimerOp::CompleteJoin {
                    group: group_id.to_string(),
                },
            );
            None
        }
    }

    /// `tryCompleteInitialRebalanceElseSchedule`: while new members keep
    /// joining, wait another delay, up to the rebalance timeout.
    pub(super) fn try_complete_initial_rebalance(
        &mut self,
        group_id: &str,
        delay_ms: u64,
        remaining_ms: u64,
    ) -> Written {
        let initial_delay = self.config.initial_rebalance_delay_ms;
        let group = self.groups.get_mut(group_id)?;
        if group.new_member_added && remaining_ms != 0 {
            group.new_member_added = false;
            let new_delay = initial_delay.min(remaining_ms);
            let new_remaining = remaining_ms.saturating_sub(delay_ms);
            self.schedule(
                join_key(group_id),
                new_delay,
                TimerOp::InitialJoin {
                    group: group_id.to_string(),
                    delay_ms: new_delay,
                    remaining_ms: new_remaining,
                },
            );
            None
        } else {
            self.complete_join(group_id)
        }
    }

    /// `completeClassicGroupJoin`: dynamic members that did not rejoin are
    /// removed, the generation moves on, and every waiting member gets its
    /// JoinGroup answer (the leader with the member list).
    pub(super) fn complete_join(&mut self, group_id: &str) -> Written {
        let now = self.now_ms;
        let hint = self.hint();
        self.timer.cancel(&join_key(group_id));
        let group = self.groups.get_mut(group_id)?;
        let not_rejoined: Vec<String> = group
            .members
            .iter()
            .filter(|member| member.awaiting_join.is_none() && member.group_instance_id.is_none())
            .map(|member| member.member_id.clone())
            .collect();
        for member_id in &not_rejoined {
            group.remove(member_id, &hint);
        }
        for member_id in &not_rejoined {
            self.timer.cancel(&heartbeat_key(group_id, member_id));
        }
        let group = self.groups.get_mut(group_id)?;
        if group.state == ClassicState::Dead {
            return None;
        }
        if !group.maybe_elect_new_joined_leader(&hint) && !group.members.is_empty() {
            // Nobody rejoined: wait another rebalance timeout for the
            // session timeouts to clear the group.
            let timeout = group.rebalance_timeout_ms();
            self.schedule(
                join_key(group_id),
                timeout,
                TimerOp::CompleteJoin {
                    group: group_id.to_string(),
                },
            );
            return None;
        }
        group.init_next_generation(now);
        if group.state == ClassicState::Empty {
            let record = group.metadata_record(&BTreeMap::new());
            return Some(Write {
                transactional: None,
                records: vec![record],
                replay: false,
                callback: None,
                response: None,
            });
        }
        let answers: Vec<(RequestId, Response)> = group
            .members
            .iter()
            .filter_map(|member| {
                let request = member.awaiting_join?;
                let leader = group.is_leader(&member.member_id);
                Some((
                    request,
                    Response::Join(group.join_response(&member.member_id, leader, false)),
                ))
            })
            .collect();
        let mut sessions = Vec::new();
        for member in &mut group.members {
            member.awaiting_join = None;
            sessions.push((member.member_id.clone(), member.session_timeout_ms));
            member.is_new = false;
        }
        group.pending_sync = group.members.iter().map(|member| member.member_id.clone()).gather();
        let sync_timeout = group.rebalance_timeout_ms();
        self.out.responses.extend(answers);
        for (member, session) in sessions {
            self.reschedule_heartbeat(group_id, &member, session);
        }
        self.schedule(
            sync_key(group_id),
            sync_timeout,
            TimerOp::PendingSync {
                group: group_id.to_string(),
            },
        );
        None
    }

    /// `expireClassicGroupMemberHeartbeat`.
    pub(super) fn expire_member_heartbeat(&mut self, group_id: &str, member_id: &str) -> Written {
        let group = self.groups.get_mut(group_id)?;
        if group.state == ClassicState::Dead {
            return None;
        }
        if group.pending_join.contains(member_id) {
            // A pending member that never came back.
            group.remove(member_id, &[]);
            if group.state == ClassicState::PreparingRebalance && group.has_all_members_joined() {
                return self.complete_join(group_id);
            }
            return None;
        }
        let member = group.member(member_id)?;
        if member.has_satisfied_heartbeat() {
            return None;
        }
        self.remove_member_and_update_group(group_id, member_id)
    }

    /// `removeMemberAndUpdateClassicGroup`: a parked JoinGroup is answered
    /// `UNKNOWN_MEMBER_ID` first.
    pub(super) fn remove_member_and_update_group(&mut self, group_id: &str, member_id: &str) -> Written {
        let hint = self.hint();
        let group = self.groups.get_mut(group_id)?;
        if let Some(request) = group
            .member_mut(member_id)
            .and_then(|member| member.awaiting_join.take())
        {
            self.out.responses.push((
                request,
                Response::Join(JoinResponse::error(UNKNOWN_MEMBER_ID, ErrorCode::UnknownMemberId)),
            ));
        }
        group.remove(member_id, &hint);
        match group.state {
            ClassicState::Stable | ClassicState::CompletingRebalance => self.maybe_prepare_rebalance_or_complete_join(
                group_id,
                RebalanceReason::SessionTimeout {
                    members: vec![member_id.to_string()],
                },
            ),
            ClassicState::PreparingRebalance if group.has_all_members_joined() => self.complete_join(group_id),
            _ => None,
        }
    }
}
