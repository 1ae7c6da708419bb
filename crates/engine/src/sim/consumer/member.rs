//! The consumer client's KIP-848 half (`group.protocol=consumer`): Kafka's
//! `ConsumerMembershipManager` and `ConsumerHeartbeatRequestManager`.
//!
//! The member joins with a `ConsumerGroupHeartbeat` at epoch 0 and then
//! heartbeats every `group.self.heartbeat.interval.ms` (the broker
//! says how often), one request at a time, reporting the partitions it
//! owns. When an answer brings a new assignment it reconciles on its own:
//! partitions it must give up are committed, dropped, and reported gone in
//! a heartbeat sent at once; partitions it gains are read from their
//! committed offsets. No other member stops. A member the coordinator no
//! longer knows at its epoch (`FENCED_MEMBER_EPOCH`, `UNKNOWN_MEMBER_ID`)
//! drops everything without committing (`onPartitionsLost`) and joins
//! again at epoch 0 with the same member id (KIP-1082: the client picks
//! its id and keeps it for its life).
//!
//! Simplification: reconciliation runs on the client's background thread
//! without a rebalance listener, so a busy record handler does not hold it
//! up (with a listener Kafka runs the callbacks in the application's next
//! `poll()`).

use crate::protocol::TopicPartition;

use super::{Consumer, ConsumerContext, ConsumerPhase};
use crate::sim::trace::{ConsumerChange, TraceKind};
use crate::sim::types::{ErrorCode, MemberEpochAnswer, Message, NodeId};
use crate::sim::Timer;

/// `retry.backoff.ms` (100): the wait before joining again after a fence.
const REJOIN_BACKOFF_MS: u64 = 100;

impl Consumer {
    /// Joins (or joins again) with epoch 0.
    pub(crate) fn member_join(&mut self, context: &mut ConsumerContext<'_>) {
        let id = self.id;
        if self.coordinator.is_none() {
            return;
        }
        if self.member_id.is_none() {
            let number = context.next_member_number();
            let member_id = format!("{}-{}", NodeId::Consumer(id), number);
            self.member_id = Some(member_id);
        }
        self.phase = ConsumerPhase::Joining;
        self.generation = 0;
        self.assignment.clear();
        self.fetching.clear();
        self.buffer.clear();
        self.heartbeat_in_flight = false;
        self.member_heartbeat(context);
    }

    /// Sends a `ConsumerGroupHeartbeat` with the member's epoch and what it
    /// owns, unless one is in flight; the next one is due an interval
    /// later.
    pub(crate) fn member_heartbeat(&mut self, context: &mut ConsumerContext<'_>) {
        let (Some(coordinator), Some(member_id)) = (self.coordinator, self.member_id.clone()) else {
            return;
        };
        let member = matches!(self.phase, ConsumerPhase::Joining | ConsumerPhase::Consuming);
        if !member || self.heartbeat_in_flight || self.rejoin_on_poll {
            return;
        }
        let message = Message::ConsumerGroupHeartbeat {
            group: self.config.group.clone(),
            member_id,
            member_epoch: self.generation as i32,
            rebalance_timeout_ms: self.config.max_poll_interval_ms,
            topics: self.config.topics.clone(),
            assignor: self.config.group_remote_assignor.clone(),
            owned: self.assignment.clone(),
        };
        let interval = self.heartbeat_interval_ms;
        self.heartbeat_in_flight = true;
        self.send(context, coordinator, message);
        self.member_schedule_heartbeat(context, interval);
    }

    /// The next heartbeat is due in `delay` ms (the one pending timer
    /// counts; an earlier one replaces it).
    fn member_schedule_heartbeat(&mut self, context: &mut ConsumerContext<'_>, delay: u64) {
        let at = context.now() + delay;
        self.heartbeat_due_at = Some(at);
        let incarnation = self.incarnation;
        context.timer(incarnation, delay, Timer::ConsumerGroupHeartbeat);
    }

    /// The heartbeat timer fired.
    pub(crate) fn member_heartbeat_due(&mut self, context: &mut ConsumerContext<'_>) {
        if self.heartbeat_due_at.is_none_or(|at| at > context.now()) {
            return;
        }
        self.heartbeat_due_at = None;
        if self.phase == ConsumerPhase::Stopped {
            return;
        }
        if self.heartbeat_in_flight {
            // Sent as soon as the answer is in.
            return;
        }
        self.member_heartbeat(context);
    }

    /// Leaves the group: a heartbeat with epoch -1, not waited for.
    pub(crate) fn member_leave(&mut self, context: &mut ConsumerContext<'_>) {
        let (Some(coordinator), Some(member_id)) = (self.coordinator, self.member_id.clone()) else {
            return;
        };
        if self.generation == 0 && self.phase != ConsumerPhase::Joining {
            return;
        }
        let message = Message::ConsumerGroupHeartbeat {
            group: self.config.group.clone(),
            member_id,
            member_epoch: crate::groups::consumer::LEAVE_GROUP_MEMBER_EPOCH,
            rebalance_timeout_ms: self.config.max_poll_interval_ms,
            topics: self.config.topics.clone(),
            assignor: self.config.group_remote_assignor.clone(),
            owned: Vec::new(),
        };
        self.send(context, coordinator, message);
    }

    /// A `ConsumerGroupHeartbeat` answer.
    pub(crate) fn member_answer(
        &mut self,
        context: &mut ConsumerContext<'_>,
        result: Result<MemberEpochAnswer, ErrorCode>,
    ) {
        match result {
            Ok(answer) if answer.member_epoch < 0 => {}
            Ok(answer) => {
                self.heartbeat_in_flight = false;
                if !matches!(self.phase, ConsumerPhase::Joining | ConsumerPhase::Consuming) || self.rejoin_on_poll {
                    return;
                }
                self.phase = ConsumerPhase::Consuming;
                self.member_id = Some(answer.member_id);
                let old_epoch = self.generation;
                self.generation = answer.member_epoch.max(0) as u32;
                self.heartbeat_interval_ms = answer.heartbeat_interval_ms.max(1);
                let interval = self.heartbeat_interval_ms;
                let acked = match answer.assignment {
                    Some(assignment) => self.member_reconcile(context, assignment, old_epoch),
                    None => false,
                };
                if !acked {
                    self.member_schedule_heartbeat(context, interval);
                }
            }
            Err(error) => {
                self.heartbeat_in_flight = false;
                match error {
                    ErrorCode::FencedMemberEpoch | ErrorCode::UnknownMemberId => self.member_fenced(context, error),
                    _ => self.group_error(context, error),
                }
            }
        }
    }

    /// Moves to the assignment the coordinator sent; returns whether a
    /// heartbeat went out (or will, once the commit before a revocation
    /// is answered).
    fn member_reconcile(
        &mut self,
        context: &mut ConsumerContext<'_>,
        assignment: Vec<TopicPartition>,
        old_epoch: u32,
    ) -> bool {
        let id = self.id;
        let revoked: Vec<TopicPartition> = self
            .assignment
            .iter()
            .filter(|partition| !assignment.contains(partition))
            .cloned()
            .collect();
        let added: Vec<TopicPartition> = assignment
            .iter()
            .filter(|partition| !self.assignment.contains(partition))
            .cloned()
            .collect();
        let epoch = self.generation;
        if revoked.is_empty() && added.is_empty() {
            if epoch != old_epoch {
                context.trace(TraceKind::ConsumerStatus {
                    consumer: id,
                    status: ConsumerChange::Reconciled { epoch, added, revoked },
                });
            }
            return false;
        }
        let mut wait_for_commit = false;
        if !revoked.is_empty() {
            // Auto-commit before revocation
            // (`ConsumerMembershipManager#signalReconciliationStarted`,
            // `autoCommitSyncBeforeRevocation`): what was consumed of the
            // partitions it gives up is committed first.
            let before = self.pending_commits.len();
            self.commit(context);
            wait_for_commit = self.pending_commits.len() > before;
        }
        self.assignment.retain(|partition| !revoked.contains(partition));
        self.positions.retain(|partition, _| !revoked.contains(partition));
        self.resetting.retain(|partition, _| !revoked.contains(partition));
        self.fetching.retain(|partition, _| !revoked.contains(partition));
        self.buffer.retain(|partition, _| !revoked.contains(partition));
        self.assignment.extend(added.iter().cloned());
        context.trace(TraceKind::ConsumerStatus {
            consumer: id,
            status: ConsumerChange::Reconciled { epoch, added, revoked },
        });
        self.fetch_positions(context);
        self.fetch_all(context);
        if wait_for_commit {
            self.ack_after_commit = true;
        } else {
            // Acknowledged at once (`MemberState.ACKNOWLEDGING`).
            self.member_heartbeat(context);
        }
        true
    }

    /// The commit sent before a revocation is answered (or lost): the
    /// member reports what it owns now.
    pub(crate) fn member_commit_settled(&mut self, context: &mut ConsumerContext<'_>) {
        if std::mem::take(&mut self.ack_after_commit) {
            self.member_heartbeat(context);
        }
    }

    /// Fenced: its partitions are lost, not committed; it joins again at
    /// epoch 0 after a short backoff.
    fn member_fenced(&mut self, context: &mut ConsumerContext<'_>, error: ErrorCode) {
        let id = self.id;
        if self.phase == ConsumerPhase::Stopped {
            return;
        }
        self.generation = 0;
        self.assignment.clear();
        self.positions.clear();
        self.resetting.clear();
        self.fetching.clear();
        self.buffer.clear();
        self.pending_commits.clear();
        self.ack_after_commit = false;
        self.phase = ConsumerPhase::Joining;
        context.trace(TraceKind::ConsumerStatus {
            consumer: id,
            status: ConsumerChange::EpochFenced { error },
        });
        self.member_schedule_heartbeat(context, REJOIN_BACKOFF_MS);
    }
}
