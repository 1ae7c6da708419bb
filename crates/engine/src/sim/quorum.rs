//! The KRaft controller quorum (KIP-500/595): controllers elect an active
//! controller with votes and epochs, and replicate the metadata log to a
//! majority before anything it decides takes effect.
//!
//! Each log entry carries the controller state after one decision (a
//! coarse but faithful stand-in for the metadata records that produce it).
//! The active controller decides on a working copy; the decision, its
//! answers to brokers and its trace events are released once a majority
//! holds the entry. A quorum of three survives the loss of one controller:
//! after `controller.quorum.fetch.timeout.ms` without hearing from the
//! leader, a follower starts an election with a randomized timeout, and the
//! voters grant their vote only to a candidate whose log is at least as
//! up to date as theirs, so committed decisions survive.
//!
//! Simplification: replication is pushed by the leader (Raft's
//! AppendEntries) rather than pulled by followers' Fetch as KRaft does; the
//! safety rules (vote, commit, truncation) are the same.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::Serialize;

use crate::random::Rng;
use crate::replication::BrokerId;

use super::controller::Controller;
use super::trace::{Invariant, TraceKind};
use super::types::{Message, NodeId};
use super::{Simulation, Timer};

/// `controller.quorum.election.timeout.ms` (1000).
pub const ELECTION_TIMEOUT_MS: u64 = 1_000;
/// `controller.quorum.fetch.timeout.ms` (2000).
pub const FETCH_TIMEOUT_MS: u64 = 2_000;
/// How often the leader replicates (its heartbeat).
const TICK_MS: u64 = 500;

/// A controller's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Role {
    /// Follows the leader it knows.
    Follower,
    /// Asking for votes.
    Candidate,
    /// The active controller.
    Leader,
}

/// One metadata log entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogEntry {
    /// The epoch it was written in.
    pub epoch: u32,
    /// The controller state after it.
    pub state: Arc<Controller>,
}

/// Messages held until their entry commits, and trace events to record then.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pending {
    index: usize,
    messages: Vec<(NodeId, NodeId, Message)>,
    trace: Vec<TraceKind>,
}

/// One controller process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumNode {
    /// Its id.
    pub id: u32,
    /// Whether the process runs.
    pub alive: bool,
    /// Bumped at every start.
    pub incarnation: u32,
    /// Its role.
    pub role: Role,
    /// Its epoch (persisted).
    pub epoch: u32,
    /// Whom it voted for in `epoch` (persisted).
    pub voted_for: Option<u32>,
    /// The leader it knows.
    pub leader: Option<u32>,
    /// The metadata log (persisted).
    pub log: Vec<LogEntry>,
    /// Entries known committed.
    pub committed: usize,
    last_heard_ms: u64,
    votes: BTreeSet<u32>,
    match_index: BTreeMap<u32, usize>,
    pending: Vec<Pending>,
    /// When each broker last sent a heartbeat (the active controller's
    /// `BrokerHeartbeatManager`; not replicated).
    pub heartbeats: BTreeMap<BrokerId, u64>,
    /// A preferred-leader balance is scheduled (`imbalancedScheduled`).
    balance_scheduled: bool,
    /// As leader: when each voter last answered (check quorum).
    heard_from: BTreeMap<u32, u64>,
}

/// The controller quorum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quorum {
    /// The controllers by id.
    pub nodes: BTreeMap<u32, QuorumNode>,
    /// Who led each epoch (for the one-leader-per-epoch invariant).
    leaders_by_epoch: BTreeMap<u32, u32>,
    /// Elections won after the first.
    pub elections: u64,
    rng: Rng,
}

impl Quorum {
    /// A quorum of `count` controllers, controller 1 active in epoch 1 with
    /// `initial` as its committed state.
    pub fn new(count: u32, initial: Controller, rng: Rng) -> Quorum {
        let entry = LogEntry {
            epoch: 1,
            state: Arc::new(initial),
        };
        let nodes = (1..=count.max(1))
            .map(|id| {
                let node = QuorumNode {
                    id,
                    alive: true,
                    incarnation: 1,
                    role: if id == 1 { Role::Leader } else { Role::Follower },
                    epoch: 1,
                    voted_for: Some(1),
                    leader: Some(1),
                    log: vec![entry.clone()],
                    committed: 1,
                    last_heard_ms: 0,
                    votes: BTreeSet::new(),
                    match_index: (1..=count.max(1)).map(|peer| (peer, 1)).collect(),
                    pending: Vec::new(),
                    heartbeats: BTreeMap::new(),
                    balance_scheduled: false,
                    heard_from: (1..=count.max(1)).map(|peer| (peer, 0)).collect(),
                };
                (id, node)
            })
            .collect();
        Quorum {
            nodes,
            leaders_by_epoch: [(1, 1)].into_iter().collect(),
            elections: 0,
            rng,
        }
    }

    /// The active controller, if one is alive and leading.
    pub fn active(&self) -> Option<u32> {
        self.nodes
            .values()
            .filter(|node| node.alive && node.role == Role::Leader)
            .max_by_key(|node| node.epoch)
            .map(|node| node.id)
    }

    fn majority(&self) -> usize {
        self.nodes.len() / 2 + 1
    }
}

impl Simulation {
    /// The controller node sending what the controller logic sends now.
    pub(crate) fn controller_node(&self) -> NodeId {
        NodeId::Controller(self.controller_sender.unwrap_or(1))
    }

    /// Starts every controller's timers.
    pub(crate) fn quorum_start(&mut self) {
        let ids: Vec<u32> = self.quorum.nodes.keys().copied().collect();
        for id in ids {
            self.schedule_timer(NodeId::Controller(id), 1, TICK_MS, Timer::QuorumTick);
            self.schedule_timer(NodeId::Controller(id), 1, 1_000, Timer::SessionCheck);
        }
    }

    /// When to look for expired broker sessions next: the moment the
    /// earliest unfenced broker's session runs out, as Kafka's
    /// `QuorumController.rescheduleMaybeFenceStaleBrokers` schedules it
    /// (`BrokerHeartbeatManager.nextCheckTimeNs`), and at least every
    /// second (a heartbeat in between only pushes the expiry later).
    fn session_check_delay(&self, id: u32) -> u64 {
        let Some(node) = self.quorum.nodes.get(&id).filter(|node| node.role == Role::Leader) else {
            return 1_000;
        };
        let Some(latest) = node.log.last() else { return 1_000 };
        let timeout = self.config.broker_session_timeout_ms;
        latest
            .state
            .brokers
            .iter()
            .filter(|(_, state)| !state.fenced)
            .map(|(broker, _)| node.heartbeats.get(broker).copied().unwrap_or(0) + timeout + 1)
            .min()
            .map_or(1_000, |expiry| expiry.saturating_sub(self.now).clamp(1, 1_000))
    }

    /// Whether a controller process runs (messages to a dead one are lost).
    pub(crate) fn controller_alive(&self, id: u32) -> bool {
        self.quorum.nodes.get(&id).is_some_and(|node| node.alive)
    }

    pub(crate) fn controller_kill(&mut self, id: u32) {
        let Some(node) = self.quorum.nodes.get_mut(&id) else {
            return;
        };
        if !node.alive {
            return;
        }
        node.alive = false;
        node.role = Role::Follower;
        node.leader = None;
        node.pending.clear();
        node.votes.clear();
        node.heartbeats.clear();
        node.balance_scheduled = false;
        self.record(TraceKind::ControllerStatus {
            controller: id,
            status: "killed (its metadata log stays on disk)".to_string(),
        });
        self.close_connections(NodeId::Controller(id));
    }

    pub(crate) fn controller_restart(&mut self, id: u32) {
        let now = self.now;
        let Some(node) = self.quorum.nodes.get_mut(&id) else {
            return;
        };
        if node.alive {
            return;
        }
        node.alive = true;
        node.incarnation += 1;
        node.last_heard_ms = now;
        let incarnation = node.incarnation;
        self.record(TraceKind::ControllerStatus {
            controller: id,
            status: "started".to_string(),
        });
        self.schedule_timer(NodeId::Controller(id), incarnation, TICK_MS, Timer::QuorumTick);
        self.schedule_timer(NodeId::Controller(id), incarnation, 1_000, Timer::SessionCheck);
    }

    /// Runs controller logic on the active controller's working state and
    /// holds what it sends until the resulting log entry commits.
    pub(crate) fn with_leader_state(&mut self, id: u32, work: impl FnOnce(&mut Simulation)) {
        let Some(node) = self.quorum.nodes.get(&id) else { return };
        let before = node.log.last().expect("never empty").state.clone();
        let working = (*before).clone();
        let committed_view = std::mem::replace(&mut self.controller, working);
        self.controller_sender = Some(id);
        self.controller_outbox = Some(Vec::new());
        self.controller_trace = Some(Vec::new());
        work(self);
        let outbox = self.controller_outbox.take().unwrap_or_default();
        let trace = self.controller_trace.take().unwrap_or_default();
        self.controller_sender = None;
        let working = std::mem::replace(&mut self.controller, committed_view);
        self.quorum_maybe_schedule_balance(id, &working);
        if working == *before {
            // A decision that writes nothing still answers from the latest,
            // possibly uncommitted, state: like a `ControllerWriteEvent`
            // with no records, its answers wait until everything written
            // before it has committed.
            let node = self.quorum.nodes.get_mut(&id).expect("known");
            if let Some(last) = node.pending.last_mut() {
                last.messages.extend(outbox);
                last.trace.extend(trace);
                return;
            }
            for (from, to, message) in outbox {
                self.send(from, to, message);
            }
            for kind in trace {
                self.record(kind);
            }
            return;
        }
        let node = self.quorum.nodes.get_mut(&id).expect("known");
        node.log.push(LogEntry {
            epoch: node.epoch,
            state: Arc::new(working),
        });
        let index = node.log.len();
        node.match_index.insert(id, index);
        node.pending.push(Pending {
            index,
            messages: outbox,
            trace,
        });
        self.quorum_replicate(id);
        self.quorum_advance_commit(id);
    }

    /// `QuorumController#maybeScheduleNextBalancePartitionLeaders`: after
    /// each decision, when some partition is not led by its first replica
    /// and no balance is scheduled, one is scheduled
    /// `leader.imbalance.check.interval.seconds` later.
    fn quorum_maybe_schedule_balance(&mut self, id: u32, state: &super::controller::Controller) {
        if !self.config.auto_leader_rebalance_enable {
            return;
        }
        let Some(node) = self.quorum.nodes.get_mut(&id) else {
            return;
        };
        if node.balance_scheduled || node.role != Role::Leader {
            return;
        }
        let imbalanced = state
            .partitions
            .values()
            .any(|registration| registration.leader != registration.replicas.first().copied());
        if imbalanced {
            node.balance_scheduled = true;
            let incarnation = node.incarnation;
            let interval = self.config.leader_imbalance_check_interval_ms;
            self.schedule_timer(
                NodeId::Controller(id),
                incarnation,
                interval,
                Timer::LeaderImbalanceCheck,
            );
        }
    }

    /// Sends every follower the entries it lacks, with the commit index.
    fn quorum_replicate(&mut self, id: u32) {
        let node = &self.quorum.nodes[&id];
        if node.role != Role::Leader {
            return;
        }
        let peers: Vec<u32> = self.quorum.nodes.keys().copied().filter(|&peer| peer != id).collect();
        let mut messages = Vec::new();
        for peer in peers {
            let next = node.match_index.get(&peer).copied().unwrap_or(0);
            let prev_epoch = if next == 0 { 0 } else { node.log[next - 1].epoch };
            messages.push((
                peer,
                Message::QuorumAppend {
                    epoch: node.epoch,
                    leader: id,
                    prev_index: next,
                    prev_epoch,
                    entries: node.log[next..].to_vec(),
                    commit: node.committed,
                },
            ));
        }
        for (peer, message) in messages {
            self.send(NodeId::Controller(id), NodeId::Controller(peer), message);
        }
    }

    /// Commits what a majority holds (entries of the current epoch, Raft's
    /// rule), releasing held messages and trace events.
    fn quorum_advance_commit(&mut self, id: u32) {
        let majority = self.quorum.majority();
        let node = self.quorum.nodes.get_mut(&id).expect("known");
        if node.role != Role::Leader {
            return;
        }
        let mut matched: Vec<usize> = node.match_index.values().copied().collect();
        matched.sort_unstable_by(|a, b| b.cmp(a));
        let candidate = matched.get(majority - 1).copied().unwrap_or(0);
        if candidate <= node.committed || node.log[candidate - 1].epoch != node.epoch {
            return;
        }
        node.committed = candidate;
        let state = node.log[candidate - 1].state.clone();
        let (ready, waiting): (Vec<Pending>, Vec<Pending>) = std::mem::take(&mut node.pending)
            .into_iter()
            .partition(|pending| pending.index <= candidate);
        node.pending = waiting;
        self.apply_committed(&state);
        for pending in ready {
            for kind in pending.trace {
                self.record(kind);
            }
            for (from, to, message) in pending.messages {
                self.send(from, to, message);
            }
        }
    }

    /// A newly committed controller state becomes the cluster's view.
    fn apply_committed(&mut self, state: &Controller) {
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
                    self.monitor.note_unclean_election(partition);
                }
            }
        }
        self.controller = state.clone();
    }

    pub(crate) fn quorum_timer(&mut self, id: u32, incarnation: u32, timer: Timer) {
        let now = self.now;
        let Some(node) = self.quorum.nodes.get(&id) else { return };
        if !node.alive || node.incarnation != incarnation {
            return;
        }
        match timer {
            Timer::QuorumTick => {
                self.schedule_timer(NodeId::Controller(id), incarnation, TICK_MS, Timer::QuorumTick);
                let node = &self.quorum.nodes[&id];
                match node.role {
                    // Check quorum (KIP-595, `LeaderState#timeUntilCheckQuorumExpires`):
                    // a leader that has not heard from a majority of voters
                    // within 1.5 × controller.quorum.fetch.timeout.ms resigns,
                    // so a controller cut off from the quorum stops answering
                    // brokers as if it were active.
                    Role::Leader if !self.quorum_has_majority_contact(id) => {
                        let node = self.quorum.nodes.get_mut(&id).expect("known");
                        node.role = Role::Follower;
                        node.leader = None;
                        node.pending.clear();
                        node.heartbeats.clear();
                        node.balance_scheduled = false;
                        node.last_heard_ms = now;
                        let epoch = node.epoch;
                        self.record(TraceKind::ControllerStatus {
                            controller: id,
                            status: format!(
                                "resigned as active controller in epoch {epoch}: no word from a majority of the quorum within 1.5 × controller.quorum.fetch.timeout.ms"
                            ),
                        });
                    }
                    Role::Leader => self.quorum_replicate(id),
                    Role::Follower if now.saturating_sub(node.last_heard_ms) > FETCH_TIMEOUT_MS => {
                        self.quorum_start_election(
                            id,
                            "no word from the leader within controller.quorum.fetch.timeout.ms",
                        );
                    }
                    _ => {}
                }
            }
            Timer::ElectionTimeout(epoch) => {
                let node = &self.quorum.nodes[&id];
                if node.role == Role::Candidate && node.epoch == epoch {
                    self.quorum_start_election(id, "the election timed out without a majority");
                }
            }
            Timer::LeaderImbalanceCheck => {
                let node = self.quorum.nodes.get_mut(&id).expect("known");
                if node.role == Role::Leader && node.balance_scheduled {
                    node.balance_scheduled = false;
                    self.with_leader_state(id, |simulation| simulation.controller_balance_leaders());
                }
            }
            Timer::SessionCheck => {
                if self.quorum.nodes[&id].role == Role::Leader {
                    self.with_leader_state(id, |simulation| simulation.controller_session_check(id));
                }
                let delay = self.session_check_delay(id);
                self.schedule_timer(NodeId::Controller(id), incarnation, delay, Timer::SessionCheck);
            }
            _ => {}
        }
    }

    fn quorum_start_election(&mut self, id: u32, reason: &str) {
        let incarnation = self.quorum.nodes[&id].incarnation;
        let jitter = u64::from(self.quorum.rng.next_u32()) % ELECTION_TIMEOUT_MS;
        let node = self.quorum.nodes.get_mut(&id).expect("known");
        node.epoch += 1;
        node.role = Role::Candidate;
        node.voted_for = Some(id);
        node.leader = None;
        node.votes = [id].into_iter().collect();
        let epoch = node.epoch;
        let last_index = node.log.len();
        let last_epoch = node.log.last().map_or(0, |entry| entry.epoch);
        self.record(TraceKind::ControllerElection {
            controller: id,
            epoch,
            reason: reason.to_string(),
        });
        let peers: Vec<u32> = self.quorum.nodes.keys().copied().filter(|&peer| peer != id).collect();
        for peer in peers {
            let message = Message::Vote {
                epoch,
                candidate: id,
                last_epoch,
                last_index: last_index as u64,
            };
            self.send(NodeId::Controller(id), NodeId::Controller(peer), message);
        }
        self.schedule_timer(
            NodeId::Controller(id),
            incarnation,
            ELECTION_TIMEOUT_MS + jitter,
            Timer::ElectionTimeout(epoch),
        );
        self.quorum_maybe_win(id);
    }

    /// A node sees a newer epoch: it follows.
    fn quorum_step_down(&mut self, id: u32, epoch: u32, leader: Option<u32>) {
        let now = self.now;
        let node = self.quorum.nodes.get_mut(&id).expect("known");
        if epoch > node.epoch {
            node.epoch = epoch;
            node.voted_for = None;
        }
        if node.role == Role::Leader {
            node.pending.clear();
            node.heartbeats.clear();
            node.balance_scheduled = false;
        }
        node.role = Role::Follower;
        node.leader = leader;
        node.votes.clear();
        if leader.is_some() {
            node.last_heard_ms = now;
        }
    }

    fn quorum_maybe_win(&mut self, id: u32) {
        let majority = self.quorum.majority();
        let now = self.now;
        let peers = self.quorum_peer_ids();
        let node = self.quorum.nodes.get_mut(&id).expect("known");
        if node.role != Role::Candidate || node.votes.len() < majority {
            return;
        }
        node.role = Role::Leader;
        node.leader = Some(id);
        let epoch = node.epoch;
        let votes: Vec<u32> = node.votes.iter().copied().collect();
        let length = node.log.len();
        node.match_index = peers
            .into_iter()
            .map(|peer| (peer, if peer == id { length } else { 0 }))
            .collect();
        // A fresh session for every registered broker.
        let brokers: Vec<BrokerId> = node
            .log
            .last()
            .map(|entry| entry.state.brokers.keys().copied().collect())
            .unwrap_or_default();
        node.heartbeats = brokers.into_iter().map(|broker| (broker, now)).collect();
        node.heard_from = node.match_index.keys().map(|&peer| (peer, now)).collect();
        self.quorum.elections += 1;
        if let Some(&other) = self.quorum.leaders_by_epoch.get(&epoch) {
            if other != id {
                self.monitor.violations += 1;
                self.record(TraceKind::InvariantViolated {
                    invariant: Invariant::OneActiveControllerPerEpoch,
                    detail: format!("controller-{other} and controller-{id} both lead epoch {epoch}"),
                });
            }
        }
        self.quorum.leaders_by_epoch.insert(epoch, id);
        self.record(TraceKind::ControllerElected {
            controller: id,
            epoch,
            votes,
        });
        // A new leader commits its predecessors' entries by writing one of its own.
        self.with_leader_state(id, |simulation| simulation.controller.offset += 1);
    }

    /// Whether leader `id` heard from a majority (itself included) within
    /// the check-quorum window.
    fn quorum_has_majority_contact(&self, id: u32) -> bool {
        let node = &self.quorum.nodes[&id];
        let window = FETCH_TIMEOUT_MS * 3 / 2;
        let heard = node
            .heard_from
            .iter()
            .filter(|(&peer, &at)| peer != id && self.now.saturating_sub(at) <= window)
            .count();
        heard + 1 >= self.quorum.majority()
    }

    fn quorum_peer_ids(&self) -> Vec<u32> {
        self.quorum.nodes.keys().copied().collect()
    }

    /// Handles quorum messages; returns `false` for other messages.
    pub(crate) fn quorum_receive(&mut self, id: u32, from: NodeId, message: &Message) -> bool {
        let now = self.now;
        let NodeId::Controller(peer) = from else {
            return false;
        };
        match message {
            Message::Vote {
                epoch,
                candidate,
                last_epoch,
                last_index,
            } => {
                let (epoch, candidate, last_epoch, last_index) =
                    (*epoch, *candidate, *last_epoch, *last_index as usize);
                if epoch > self.quorum.nodes[&id].epoch {
                    self.quorum_step_down(id, epoch, None);
                }
                let node = self.quorum.nodes.get_mut(&id).expect("known");
                let my_last = (node.log.last().map_or(0, |entry| entry.epoch), node.log.len());
                let granted = epoch == node.epoch
                    && node.voted_for.is_none_or(|voted| voted == candidate)
                    && (last_epoch, last_index) >= my_last;
                if granted {
                    node.voted_for = Some(candidate);
                    node.last_heard_ms = now;
                }
                let reply = Message::VoteResponse {
                    epoch: node.epoch,
                    granted,
                };
                self.send(NodeId::Controller(id), from, reply);
            }
            Message::VoteResponse { epoch, granted } => {
                let node = &self.quorum.nodes[&id];
                if *epoch > node.epoch {
                    self.quorum_step_down(id, *epoch, None);
                } else if *granted && node.role == Role::Candidate && *epoch == node.epoch {
                    self.quorum.nodes.get_mut(&id).expect("known").votes.insert(peer);
                    self.quorum_maybe_win(id);
                }
            }
            Message::QuorumAppend {
                epoch,
                leader,
                prev_index,
                prev_epoch,
                entries,
                commit,
            } => {
                let node = &self.quorum.nodes[&id];
                if *epoch < node.epoch {
                    let reply = Message::QuorumAppendResponse {
                        epoch: node.epoch,
                        success: false,
                        match_index: 0,
                    };
                    self.send(NodeId::Controller(id), from, reply);
                    return true;
                }
                self.quorum_step_down(id, *epoch, Some(*leader));
                let node = self.quorum.nodes.get_mut(&id).expect("known");
                let consistent = *prev_index <= node.log.len()
                    && (*prev_index == 0 || node.log[prev_index - 1].epoch == *prev_epoch);
                let reply = if consistent {
                    node.log.truncate(*prev_index);
                    node.log.extend(entries.iter().cloned());
                    node.committed = node.committed.max((*commit).min(node.log.len()));
                    Message::QuorumAppendResponse {
                        epoch: node.epoch,
                        success: true,
                        match_index: node.log.len(),
                    }
                } else {
                    let back = prev_index.saturating_sub(1).min(node.log.len());
                    Message::QuorumAppendResponse {
                        epoch: node.epoch,
                        success: false,
                        match_index: back,
                    }
                };
                self.send(NodeId::Controller(id), from, reply);
            }
            Message::QuorumAppendResponse {
                epoch,
                success,
                match_index,
            } => {
                let node = &self.quorum.nodes[&id];
                if *epoch > node.epoch {
                    self.quorum_step_down(id, *epoch, None);
                    return true;
                }
                if node.role != Role::Leader || *epoch != node.epoch {
                    return true;
                }
                let node = self.quorum.nodes.get_mut(&id).expect("known");
                node.heard_from.insert(peer, now);
                node.match_index.insert(peer, *match_index);
                if *success {
                    self.quorum_advance_commit(id);
                } else {
                    self.quorum_replicate(id);
                }
            }
            _ => return false,
        }
        true
    }
}
