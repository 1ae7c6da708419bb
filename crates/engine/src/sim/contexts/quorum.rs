//! The simulation's entry points to the controller quorum: each runs one
//! of its handlers with a [`QuorumContext`].

use crate::protocol::metadata::Controller;

use super::super::controller::Decision;
use super::super::quorum::Quorum;
use super::super::types::{Message, NodeId};
use super::super::{Simulation, Timer};
use super::QuorumContext;

impl Simulation {
    /// Runs `handle` on the quorum with its context. The quorum is handed
    /// to it by value; what holds its place meanwhile has no controllers,
    /// and nothing the context does reads it (the network asks
    /// `controller_processes` whether a controller runs).
    fn with_quorum<R>(&mut self, handle: impl FnOnce(&mut Quorum, &mut QuorumContext<'_>) -> R) -> R {
        let mut quorum = std::mem::replace(&mut self.quorum, Quorum::stand_in());
        let result = handle(&mut quorum, &mut QuorumContext { sim: self });
        self.quorum = quorum;
        result
    }

    /// Starts every controller's timers; followers start fetching.
    pub(crate) fn quorum_start(&mut self) {
        self.with_quorum(Quorum::start);
    }

    /// Whether a controller process runs (messages to a dead one are lost).
    pub(crate) fn controller_alive(&self, id: u32) -> bool {
        self.controller_processes.get(&id).copied().unwrap_or(false)
    }

    /// Controller `id`'s process dies.
    pub(crate) fn controller_kill(&mut self, id: u32) {
        self.with_quorum(|quorum, context| quorum.kill(context, id));
    }

    /// Controller `id`'s process starts again.
    pub(crate) fn controller_restart(&mut self, id: u32) {
        self.with_quorum(|quorum, context| quorum.restart(context, id));
    }

    /// Runs one decision of controller `id` (the active one); see
    /// [`Quorum::with_leader_state`].
    pub(crate) fn with_leader_state(&mut self, id: u32, work: impl FnOnce(&mut Decision<'_>)) {
        self.with_quorum(|quorum, context| quorum.with_leader_state(context, id, work));
    }

    /// A controller's timer.
    pub(crate) fn quorum_timer(&mut self, id: u32, incarnation: u32, timer: Timer) {
        self.with_quorum(|quorum, context| quorum.timer(context, id, incarnation, timer));
    }

    /// Quorum messages (from controllers, and brokers' fetches); `false`
    /// for other messages.
    pub(crate) fn quorum_receive(&mut self, id: u32, from: NodeId, message: &Message) -> bool {
        self.with_quorum(|quorum, context| quorum.receive(context, id, from, message))
    }

    /// A newly committed controller state becomes the cluster's view.
    pub(crate) fn apply_committed(&mut self, state: &Controller) {
        if state.offset <= self.controller.offset && *state == self.controller {
            return;
        }
        for (partition, registration) in &state.partitions {
            let changed = self
                .controller
                .partitions
                .get(partition)
                .is_none_or(|old| old.leader_epoch != registration.leader_epoch);
            if changed {
                self.monitor.mark_dirty(partition);
                if registration.leader_recovery == crate::controller::partition_change::LeaderRecovery::Recovering {
                    self.monitor.note_unclean_election(partition, registration.leader);
                }
            }
        }
        self.controller = state.clone();
    }
}
