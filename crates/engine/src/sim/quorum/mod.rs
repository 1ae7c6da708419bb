//! The KRaft controller quorum (KIP-500/595): controllers elect an active
//! controller with votes and epochs, and the metadata log
//! (`__cluster_metadata`) is replicated by **fetching**, as
//! `KafkaRaftClient` does: every voter that follows, and every broker (an
//! *observer*, which never votes), sends the leader `Fetch` requests with
//! its log end offset and the epoch of its last entry. The leader checks
//! them against its log (a follower whose log diverged is told where to
//! truncate), answers with the entries the fetcher lacks and the high
//! watermark, and holds a fetch that has nothing new for up to
//! `MAX_FETCH_WAIT_MS` (the fetch purgatory), completing it early when it
//! appends or the high watermark moves. An entry is committed once a
//! majority of voters fetched past it (entries of the leader's own epoch,
//! Raft's rule). Decisions of the active controller, their answers to
//! brokers and their trace events are released at commit; brokers apply
//! only committed entries.
//!
//! A follower that gets no answer from the leader within
//! `controller.quorum.fetch.timeout.ms` starts an election with a
//! randomized timeout; voters grant their vote only to a candidate whose
//! log is at least as up to date as theirs, so committed decisions
//! survive; the winner announces itself with `BeginQuorumEpoch`. A leader
//! that has not heard from a majority within 1.5 × the fetch timeout
//! resigns (check quorum).
//!
//! Simplification: each log entry carries the controller state after one
//! decision (like the in-memory snapshots `QuorumController` keeps per
//! offset) together with the records it stands for, rather than
//! serialized record batches.

use crate::sorting::Gather;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use serde::Serialize;

use crate::protocol::BrokerId;
use crate::random::Rng;

use super::contexts::{Decided, QuorumContext};
use super::controller::Decision;
use super::trace::{CandidacyReason, ControllerChange, Invariant, TraceKind};
use super::types::{ErrorCode, Message, MetadataFetchAnswer, MetadataRecord, NodeId, Time};
use super::Timer;

pub use crate::protocol::metadata::LogEntry;
use crate::protocol::metadata::{records_between, Controller};

mod election;

/// `controller.quorum.election.timeout.ms` (1000).
pub const ELECTION_TIMEOUT_MS: u64 = 1_000;
/// `controller.quorum.fetch.timeout.ms` (2000).
pub const FETCH_TIMEOUT_MS: u64 = 2_000;
/// `controller.quorum.request.timeout.ms` (2000): a fetch with no answer
/// by then is given up and sent again (to another voter, for an observer).
pub const REQUEST_TIMEOUT_MS: u64 = 2_000;
/// `KafkaRaftClient.MAX_FETCH_WAIT_MS`: how long the leader holds a fetch
/// that has nothing new.
pub const MAX_FETCH_WAIT_MS: u64 = 500;
/// How long a fetcher waits after its connection to the leader broke
/// before it fetches again (the network client's reconnect backoff at its
/// `reconnect.backoff.max.ms` of 1000).
pub const RECONNECT_BACKOFF_MS: u64 = 1_000;
/// Entries per fetch answer at most (`Fetch`'s `max_bytes`, counted in
/// entries).
const FETCH_MAX_ENTRIES: usize = 100;
/// How often each controller looks at its timeouts.
const TICK_MS: u64 = 500;

/// A controller's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Follows the leader it knows (or waits to learn one).
    Follower,
    /// Lost the leader and asks the voters, without bumping its epoch,
    /// whether it could win an election (`ProspectiveState`, KIP-996).
    Prospective,
    /// Asking for votes.
    Candidate,
    /// The active controller.
    Leader,
}

impl std::fmt::Display for Role {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            Role::Follower => "follower",
            Role::Prospective => "prospective",
            Role::Candidate => "candidate",
            Role::Leader => "leader",
        })
    }
}

/// The largest epoch at or below `epoch` in `log` and the offset just past
/// its last entry (`ReplicatedLog#endOffsetForEpoch`); `(0, 0)` if none.
pub fn end_offset_for_epoch(log: &[LogEntry], epoch: u32) -> (u32, usize) {
    let end = log.partition_point(|entry| entry.epoch <= epoch);
    if end == 0 {
        (0, 0)
    } else {
        (log[end - 1].epoch, end)
    }
}

/// The leader's check of a fetch position (`KafkaRaftClient` →
/// `ReplicatedLog#validateOffsetAndEpoch`): `None` when the fetcher's log
/// matches the leader's up to `fetch_offset`, else the epoch and end offset
/// it must truncate to.
pub fn diverging_epoch(log: &[LogEntry], fetch_offset: usize, last_fetched_epoch: u32) -> Option<(u32, usize)> {
    if fetch_offset == 0 && last_fetched_epoch == 0 {
        return None;
    }
    let (epoch, end) = end_offset_for_epoch(log, last_fetched_epoch);
    (epoch != last_fetched_epoch || end < fetch_offset).then_some((epoch, end))
}

/// Where a fetcher truncates when the leader reports a diverging epoch
/// (`ReplicatedLog#truncateToEndOffset`).
pub fn truncation_offset(log: &[LogEntry], diverging: (u32, usize)) -> usize {
    let (epoch, end) = diverging;
    if epoch == 0 {
        return end.min(log.len());
    }
    let (local_epoch, local_end) = end_offset_for_epoch(log, epoch);
    if local_epoch == epoch {
        local_end.min(end)
    } else {
        local_end
    }
}

/// Applies a fetch answer to a fetcher's copy of the log: truncates where it
/// diverged, appends the entries that start at its end, and moves its high
/// watermark. Returns whether the log or the high watermark changed.
pub(crate) fn apply_fetched(
    log: &mut Vec<LogEntry>,
    high_watermark: &mut usize,
    from_offset: usize,
    entries: &[LogEntry],
    leader_high_watermark: usize,
    diverging: Option<(u32, usize)>,
) -> bool {
    let before = (log.len(), *high_watermark);
    if let Some(diverging) = diverging {
        let to = truncation_offset(log, diverging);
        log.truncate(to);
        *high_watermark = (*high_watermark).min(to);
        return true;
    }
    if from_offset == log.len() {
        log.extend(entries.iter().cloned());
    }
    *high_watermark = (*high_watermark).max(leader_high_watermark.min(log.len()));
    before != (log.len(), *high_watermark)
}

/// When a periodic controller task runs next (`QuorumController.ImbalanceSchedule`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Schedule {
    /// After its interval.
    Deferred,
    /// It is scheduled.
    Scheduled,
    /// At once (its last pass hit its limit).
    Immediately,
}

/// Messages held until their entry commits, and trace events to record then.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pending {
    index: usize,
    messages: Vec<(NodeId, NodeId, Message)>,
    trace: Vec<TraceKind>,
}

/// A fetch the leader holds until it has something new (`fetchPurgatory`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct HeldFetch {
    id: u64,
    from: NodeId,
    fetch_offset: usize,
}

/// How far a fetcher got, as the leader sees it (`LeaderState.ReplicaState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FetcherProgress {
    /// Its log end offset at its last fetch.
    pub fetch_offset: usize,
    /// When it last fetched.
    pub last_fetch_ms: u64,
    /// When it last fetched up to the leader's end.
    pub last_caught_up_ms: Option<u64>,
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
    /// Entries known committed (its high watermark).
    pub committed: usize,
    /// As a follower: the last answer from the leader.
    last_heard_ms: u64,
    /// As a follower: when the fetch in flight was sent.
    fetch_sent_ms: Option<u64>,
    /// As a follower: it has fetched from the leader of its epoch
    /// (`FollowerState.hasFetchedFromLeader`); it then refuses pre-votes.
    fetched_from_leader: bool,
    votes: BTreeSet<u32>,
    /// As leader: every voter's progress (its own included), and every
    /// observer's.
    pub voters: BTreeMap<u32, FetcherProgress>,
    /// As leader: brokers fetching the log (observers).
    pub observers: BTreeMap<BrokerId, FetcherProgress>,
    /// As leader: the first offset of its epoch (the high watermark moves
    /// only once an entry of its own epoch is committed).
    epoch_start: usize,
    /// As leader: when it last sent `BeginQuorumEpoch`.
    begin_epoch_sent_ms: u64,
    held: Vec<HeldFetch>,
    next_held: u64,
    pending: Vec<Pending>,
    /// When each broker last sent a heartbeat (the active controller's
    /// `BrokerHeartbeatManager`; not replicated).
    pub heartbeats: BTreeMap<BrokerId, u64>,
    /// A preferred-leader balance is scheduled (`imbalancedScheduled`).
    balance_scheduled: bool,
    /// The periodic unclean election pass (`uncleanScheduled`).
    unclean_scheduled: Schedule,
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
            records: Rc::from(vec![MetadataRecord::Bootstrap]),
            state: Rc::new(initial),
        };
        let ids = 1..=count.max(1);
        let caught_up = FetcherProgress {
            fetch_offset: 1,
            last_fetch_ms: 0,
            last_caught_up_ms: Some(0),
        };
        let nodes = ids
            .clone()
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
                    fetch_sent_ms: None,
                    fetched_from_leader: true,
                    votes: BTreeSet::new(),
                    voters: ids.clone().map(|peer| (peer, caught_up)).gather(),
                    observers: BTreeMap::new(),
                    epoch_start: 0,
                    begin_epoch_sent_ms: 0,
                    held: Vec::new(),
                    next_held: 0,
                    pending: Vec::new(),
                    heartbeats: BTreeMap::new(),
                    balance_scheduled: false,
                    unclean_scheduled: Schedule::Deferred,
                };
                (id, node)
            })
            .gather();
        Quorum {
            nodes,
            leaders_by_epoch: [(1, 1)].into_iter().gather(),
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

impl QuorumNode {
    fn last_epoch(&self) -> u32 {
        self.log.last().map_or(0, |entry| entry.epoch)
    }

    /// Forgets what it knew as leader.
    fn clear_leadership(&mut self) {
        self.pending.clear();
        self.held.clear();
        self.heartbeats.clear();
        self.observers.clear();
        self.balance_scheduled = false;
        self.unclean_scheduled = Schedule::Deferred;
    }
}

impl Quorum {
    /// What holds the quorum's place while one of its handlers runs
    /// (allocates nothing).
    pub(crate) fn stand_in() -> Quorum {
        Quorum {
            nodes: BTreeMap::new(),
            leaders_by_epoch: BTreeMap::new(),
            elections: 0,
            rng: Rng::new(0, 0),
        }
    }

    /// Starts every controller's timers; followers start fetching.
    pub(crate) fn start(&mut self, context: &mut QuorumContext) {
        let ids: Vec<u32> = self.nodes.keys().copied().collect();
        for id in ids {
            context.timer(NodeId::Controller(id), 1, TICK_MS, Timer::QuorumTick);
            context.timer(NodeId::Controller(id), 1, 1_000, Timer::SessionCheck);
            self.fetch(context, id);
        }
    }

    /// When to look for expired broker sessions next: the moment the
    /// earliest unfenced broker's session runs out, as Kafka's
    /// `QuorumController.rescheduleMaybeFenceStaleBrokers` schedules it
    /// (`BrokerHeartbeatManager.nextCheckTimeNs`), and at least every
    /// second (a heartbeat in between only pushes the expiry later).
    fn session_check_delay(&self, context: &QuorumContext, id: u32) -> u64 {
        let Some(node) = self.nodes.get(&id).filter(|node| node.role == Role::Leader) else {
            return 1_000;
        };
        let Some(latest) = node.log.last() else { return 1_000 };
        let timeout = context.config().broker_session_timeout_ms;
        latest
            .state
            .brokers
            .iter()
            .filter(|(_, state)| !state.fenced)
            .map(|(broker, _)| node.heartbeats.get(broker).copied().unwrap_or(0) + timeout + 1)
            .min()
            .map_or(1_000, |expiry| expiry.saturating_sub(context.now()).clamp(1, 1_000))
    }

    /// Controller `id`'s process dies: it forgets its leadership and its
    /// connections break.
    pub(crate) fn kill(&mut self, context: &mut QuorumContext, id: u32) {
        let Some(node) = self.nodes.get_mut(&id) else {
            return;
        };
        if !node.alive {
            return;
        }
        node.alive = false;
        node.role = Role::Follower;
        node.leader = None;
        node.fetch_sent_ms = None;
        node.votes.clear();
        node.clear_leadership();
        context.trace(TraceKind::ControllerStatus {
            controller: id,
            status: ControllerChange::Killed,
        });
        context.set_running(id, false);
    }

    /// Controller `id`'s process starts again (a new incarnation).
    pub(crate) fn restart(&mut self, context: &mut QuorumContext, id: u32) {
        let now = context.now();
        let Some(node) = self.nodes.get_mut(&id) else {
            return;
        };
        if node.alive {
            return;
        }
        node.alive = true;
        node.incarnation += 1;
        node.last_heard_ms = now;
        let incarnation = node.incarnation;
        context.set_running(id, true);
        context.trace(TraceKind::ControllerStatus {
            controller: id,
            status: ControllerChange::Started,
        });
        context.timer(NodeId::Controller(id), incarnation, TICK_MS, Timer::QuorumTick);
        context.timer(NodeId::Controller(id), incarnation, 1_000, Timer::SessionCheck);
    }

    /// Runs one decision of controller `id` (the active one) on a working
    /// copy of its latest state ([`Decision`]) and holds what it sends and
    /// traces until the resulting log entry commits.
    pub(crate) fn with_leader_state(
        &mut self,
        context: &mut QuorumContext,
        id: u32,
        work: impl FnOnce(&mut Decision<'_>),
    ) {
        let Some(node) = self.nodes.get_mut(&id) else {
            return;
        };
        let before = node.log.last().expect("never empty").state.clone();
        let mut working = (*before).clone();
        let Decided {
            messages: outbox,
            trace,
            unclean_pass_hit_limit,
        } = context.decide(id, &mut working, &mut node.heartbeats, work);
        if let Some(hit_limit) = unclean_pass_hit_limit {
            node.unclean_scheduled = if hit_limit {
                Schedule::Immediately
            } else {
                Schedule::Deferred
            };
        }
        if working != *before && working.offset == before.offset {
            // Every record has an offset of its own: a change with no
            // other count of its records (a `ConfigRecord`, a
            // `FeatureLevelRecord`) still moves the image on, or brokers
            // that have the last image would skip it.
            working.offset += 1;
        }
        self.maybe_schedule_balance(context, id, &working);
        self.maybe_schedule_unclean(context, id, &working);
        if working == *before {
            // A decision that writes nothing still answers from the latest,
            // possibly uncommitted, state: like a `ControllerWriteEvent`
            // with no records, its answers wait until everything written
            // before it has committed.
            let node = self.nodes.get_mut(&id).expect("known");
            if let Some(last) = node.pending.last_mut() {
                last.messages.extend(outbox);
                last.trace.extend(trace);
                return;
            }
            for (from, to, message) in outbox {
                context.send(from, to, message);
            }
            for kind in trace {
                context.trace(kind);
            }
            return;
        }
        let now = context.now();
        let node = self.nodes.get_mut(&id).expect("known");
        let records = records_between(&before, &working, node.log.len() == node.epoch_start);
        node.log.push(LogEntry {
            epoch: node.epoch,
            records: Rc::from(records),
            state: Rc::new(working),
        });
        let index = node.log.len();
        node.voters.insert(
            id,
            FetcherProgress {
                fetch_offset: index,
                last_fetch_ms: now,
                last_caught_up_ms: Some(now),
            },
        );
        node.pending.push(Pending {
            index,
            messages: outbox,
            trace,
        });
        self.advance_commit(context, id);
        // New entries: every held fetch can be answered.
        self.complete_held(context, id, None);
    }

    /// `QuorumController#maybeScheduleNextBalancePartitionLeaders`: after
    /// each decision, when some partition is not led by its first replica
    /// and no balance is scheduled, one is scheduled
    /// `leader.imbalance.check.interval.seconds` later.
    fn maybe_schedule_balance(&mut self, context: &mut QuorumContext, id: u32, state: &Controller) {
        if !context.config().auto_leader_rebalance_enable {
            return;
        }
        let Some(node) = self.nodes.get_mut(&id) else {
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
            let interval = context.config().leader_imbalance_check_interval_ms;
            context.timer(
                NodeId::Controller(id),
                incarnation,
                interval,
                Timer::LeaderImbalanceCheck,
            );
        }
    }

    /// `QuorumController#maybeScheduleNextElectUncleanLeaders`: after each
    /// decision, when some partition has no leader and no pass is
    /// scheduled, one is scheduled `unclean.leader.election.interval.ms`
    /// later (10 ms if the last pass hit its limit).
    fn maybe_schedule_unclean(&mut self, context: &mut QuorumContext, id: u32, state: &Controller) {
        let Some(node) = self.nodes.get_mut(&id) else {
            return;
        };
        if node.unclean_scheduled == Schedule::Scheduled || node.role != Role::Leader {
            return;
        }
        if state
            .partitions
            .values()
            .any(|registration| registration.leader.is_none())
        {
            let delay = match node.unclean_scheduled {
                Schedule::Immediately => 10,
                _ => context.config().unclean_leader_election_interval_ms,
            };
            node.unclean_scheduled = Schedule::Scheduled;
            let incarnation = node.incarnation;
            context.timer(NodeId::Controller(id), incarnation, delay, Timer::UncleanElectionCheck);
        }
    }

    /// A follower sends the leader it knows a fetch from its log end, unless
    /// one is in flight.
    fn fetch(&mut self, context: &mut QuorumContext, id: u32) {
        let now = context.now();
        let node = self.nodes.get_mut(&id).expect("known");
        // A prospective keeps fetching from the leader it knew: an answer
        // makes it a follower again.
        if !node.alive || !matches!(node.role, Role::Follower | Role::Prospective) || node.fetch_sent_ms.is_some() {
            return;
        }
        let Some(leader) = node.leader.filter(|&leader| leader != id) else {
            return;
        };
        node.fetch_sent_ms = Some(now);
        let message = Message::MetadataFetch {
            epoch: node.epoch,
            fetch_offset: node.log.len(),
            last_fetched_epoch: node.last_epoch(),
        };
        context.send(NodeId::Controller(id), NodeId::Controller(leader), message);
    }

    /// The leader answers fetch `held` (or every held fetch): the entries
    /// past its fetch offset and the high watermark.
    fn complete_held(&mut self, context: &mut QuorumContext, id: u32, only: Option<u64>) {
        let node = self.nodes.get_mut(&id).expect("known");
        let (answer, keep): (Vec<HeldFetch>, Vec<HeldFetch>) = std::mem::take(&mut node.held)
            .into_iter()
            .partition(|held| only.is_none_or(|only| only == held.id));
        node.held = keep;
        for held in answer {
            let response = self.fetch_answer(id, held.fetch_offset);
            context.send(NodeId::Controller(id), held.from, response);
        }
    }

    /// The leader's answer to a fetch from `fetch_offset` that matched its log.
    fn fetch_answer(&self, id: u32, fetch_offset: usize) -> Message {
        let node = &self.nodes[&id];
        let from = fetch_offset.min(node.log.len());
        let to = (from + FETCH_MAX_ENTRIES).min(node.log.len());
        Message::MetadataFetchResponse(MetadataFetchAnswer {
            epoch: node.epoch,
            leader: Some(id),
            error: None,
            from_offset: from,
            entries: node.log[from..to].to_vec(),
            high_watermark: node.committed,
            diverging: None,
        })
    }

    /// The leader handles a fetch from a voter or an observer
    /// (`KafkaRaftClient#handleFetchRequest`).
    fn handle_fetch(
        &mut self,
        context: &mut QuorumContext,
        id: u32,
        from: NodeId,
        epoch: u32,
        fetch_offset: usize,
        last_fetched_epoch: u32,
    ) {
        let now = context.now();
        let node = &self.nodes[&id];
        // Only the leader of the fetcher's epoch answers with data
        // (`validateLeaderOnlyRequest`): an older epoch is fenced, a newer
        // one unknown, and a non-leader names the leader it knows.
        let error = if epoch < node.epoch {
            Some(ErrorCode::FencedLeaderEpoch)
        } else if epoch > node.epoch {
            Some(ErrorCode::UnknownLeaderEpoch)
        } else if node.role != Role::Leader {
            Some(ErrorCode::NotLeaderOrFollower)
        } else {
            None
        };
        if let Some(error) = error {
            let response = Message::MetadataFetchResponse(MetadataFetchAnswer {
                epoch: node.epoch,
                leader: node.leader,
                error: Some(error),
                from_offset: fetch_offset,
                entries: Vec::new(),
                high_watermark: 0,
                diverging: None,
            });
            context.send(NodeId::Controller(id), from, response);
            return;
        }
        if let Some(diverging) = diverging_epoch(&node.log, fetch_offset, last_fetched_epoch) {
            let response = Message::MetadataFetchResponse(MetadataFetchAnswer {
                epoch: node.epoch,
                leader: Some(id),
                error: None,
                from_offset: fetch_offset,
                entries: Vec::new(),
                high_watermark: node.committed,
                diverging: Some(diverging),
            });
            context.send(NodeId::Controller(id), from, response);
            return;
        }
        let end = node.log.len();
        let node = self.nodes.get_mut(&id).expect("known");
        let progress = match from {
            NodeId::Controller(peer) => node.voters.entry(peer),
            NodeId::Broker(broker) => node.observers.entry(broker),
            _ => return,
        };
        let progress = progress.or_insert(FetcherProgress {
            fetch_offset,
            last_fetch_ms: now,
            last_caught_up_ms: None,
        });
        progress.fetch_offset = fetch_offset;
        progress.last_fetch_ms = now;
        if fetch_offset >= end {
            progress.last_caught_up_ms = Some(now);
        }
        if matches!(from, NodeId::Controller(_)) {
            self.advance_commit(context, id);
        }
        let node = self.nodes.get_mut(&id).expect("known");
        if fetch_offset < node.log.len() {
            let response = self.fetch_answer(id, fetch_offset);
            context.send(NodeId::Controller(id), from, response);
            return;
        }
        // Nothing new: held until the leader appends, the high watermark
        // moves, or `MAX_FETCH_WAIT_MS` passes. One held fetch per fetcher.
        node.held.retain(|held| held.from != from);
        node.next_held += 1;
        let held = node.next_held;
        let incarnation = node.incarnation;
        node.held.push(HeldFetch {
            id: held,
            from,
            fetch_offset,
        });
        context.timer(
            NodeId::Controller(id),
            incarnation,
            MAX_FETCH_WAIT_MS,
            Timer::QuorumFetchExpiry(held),
        );
    }

    /// Commits what a majority of voters holds (entries of the current
    /// epoch, Raft's rule: `LeaderState#maybeUpdateHighWatermark`),
    /// releasing held messages and trace events; held fetches learn the new
    /// high watermark.
    fn advance_commit(&mut self, context: &mut QuorumContext, id: u32) {
        let majority = self.majority();
        let node = self.nodes.get_mut(&id).expect("known");
        if node.role != Role::Leader {
            return;
        }
        let mut matched: Vec<usize> = node
            .voters
            .iter()
            .map(|(&voter, progress)| {
                if voter == id {
                    node.log.len()
                } else {
                    progress.fetch_offset
                }
            })
            .collect();
        crate::sorting::sort_by(&mut matched, |a, b| b.cmp(a));
        let candidate = matched.get(majority - 1).copied().unwrap_or(0).min(node.log.len());
        if candidate <= node.committed || candidate <= node.epoch_start {
            return;
        }
        node.committed = candidate;
        let state = node.log[candidate - 1].state.clone();
        let (ready, waiting): (Vec<Pending>, Vec<Pending>) = std::mem::take(&mut node.pending)
            .into_iter()
            .partition(|pending| pending.index <= candidate);
        node.pending = waiting;
        context.committed(&state);
        for pending in ready {
            for kind in pending.trace {
                context.trace(kind);
            }
            for (from, to, message) in pending.messages {
                context.send(from, to, message);
            }
        }
        // `onUpdateLeaderHighWatermark`: held fetches complete.
        self.complete_held(context, id, None);
    }

    pub(crate) fn timer(&mut self, context: &mut QuorumContext, id: u32, incarnation: u32, timer: Timer) {
        let now = context.now();
        let Some(node) = self.nodes.get(&id) else { return };
        if !node.alive || node.incarnation != incarnation {
            return;
        }
        match timer {
            Timer::QuorumTick => {
                context.timer(NodeId::Controller(id), incarnation, TICK_MS, Timer::QuorumTick);
                let node = &self.nodes[&id];
                match node.role {
                    // Check quorum (KIP-595, `LeaderState#timeUntilCheckQuorumExpires`):
                    // a leader that has not heard from a majority of voters
                    // within 1.5 × controller.quorum.fetch.timeout.ms resigns,
                    // so a controller cut off from the quorum stops answering
                    // brokers as if it were active.
                    Role::Leader if !self.has_majority_contact(id, now) => {
                        let node = self.nodes.get_mut(&id).expect("known");
                        node.role = Role::Follower;
                        node.leader = None;
                        node.clear_leadership();
                        node.last_heard_ms = now;
                        let epoch = node.epoch;
                        context.trace(TraceKind::ControllerStatus {
                            controller: id,
                            status: ControllerChange::Resigned { epoch },
                        });
                    }
                    Role::Leader => self.begin_epoch(context, id, false),
                    Role::Follower if now.saturating_sub(node.last_heard_ms) > FETCH_TIMEOUT_MS => {
                        self.start_pre_vote(context, id);
                    }
                    Role::Follower => {
                        // A fetch with no answer within the request timeout
                        // is given up and sent again.
                        let node = self.nodes.get_mut(&id).expect("known");
                        if node
                            .fetch_sent_ms
                            .is_some_and(|sent| now.saturating_sub(sent) >= REQUEST_TIMEOUT_MS)
                        {
                            node.fetch_sent_ms = None;
                        }
                        self.fetch(context, id);
                    }
                    Role::Candidate | Role::Prospective => {}
                }
            }
            Timer::QuorumFetchExpiry(held) if self.nodes[&id].role == Role::Leader => {
                self.complete_held(context, id, Some(held));
            }
            Timer::QuorumFetchRetry => self.fetch(context, id),
            Timer::ElectionTimeout(epoch) => {
                // A candidate whose election timed out, or a prospective
                // whose pre-vote did, asks again with a pre-vote (KIP-996:
                // no epoch is bumped without a majority's go-ahead).
                let node = &self.nodes[&id];
                if matches!(node.role, Role::Candidate | Role::Prospective) && node.epoch == epoch {
                    self.start_pre_vote(context, id);
                }
            }
            Timer::LeaderImbalanceCheck => {
                let node = self.nodes.get_mut(&id).expect("known");
                if node.role == Role::Leader && node.balance_scheduled {
                    node.balance_scheduled = false;
                    self.with_leader_state(context, id, |decision| decision.balance_leaders());
                }
            }
            Timer::UncleanElectionCheck
                if self.nodes[&id].role == Role::Leader && self.nodes[&id].unclean_scheduled == Schedule::Scheduled =>
            {
                self.with_leader_state(context, id, |decision| decision.unclean_election_pass());
            }
            Timer::SessionCheck => {
                if self.nodes[&id].role == Role::Leader {
                    self.with_leader_state(context, id, |decision| decision.session_check());
                }
                let delay = self.session_check_delay(context, id);
                context.timer(NodeId::Controller(id), incarnation, delay, Timer::SessionCheck);
            }
            _ => {}
        }
    }

    /// Handles quorum messages (from controllers, and brokers' fetches);
    /// returns `false` for other messages.
    pub(crate) fn receive(&mut self, context: &mut QuorumContext, id: u32, from: NodeId, message: &Message) -> bool {
        if let Message::MetadataFetch {
            epoch,
            fetch_offset,
            last_fetched_epoch,
        } = message
        {
            self.handle_fetch(context, id, from, *epoch, *fetch_offset, *last_fetched_epoch);
            return true;
        }
        let NodeId::Controller(peer) = from else {
            if let (Message::ConnectionClosed, NodeId::Broker(_)) = (message, from) {
                // A broker's held fetch is gone with its connection.
                let node = self.nodes.get_mut(&id).expect("known");
                node.held.retain(|held| held.from != from);
            }
            return false;
        };
        match message {
            Message::Vote {
                epoch,
                candidate,
                last_epoch,
                last_index,
                pre_vote,
            } => self.vote(
                context,
                id,
                from,
                *epoch,
                *candidate,
                *last_epoch,
                *last_index,
                *pre_vote,
            ),
            Message::VoteResponse {
                epoch,
                leader,
                granted,
                pre_vote,
            } => {
                let node = &self.nodes[&id];
                if *epoch > node.epoch {
                    self.step_down(context, id, *epoch, leader.filter(|&leader| leader != id));
                } else if *granted && *epoch == node.epoch {
                    let expected = if *pre_vote { Role::Prospective } else { Role::Candidate };
                    if node.role == expected {
                        self.nodes.get_mut(&id).expect("known").votes.insert(peer);
                        if *pre_vote {
                            self.maybe_win_pre_vote(context, id);
                        } else {
                            self.maybe_win(context, id);
                        }
                    }
                }
            }
            Message::BeginQuorumEpoch { epoch, leader } => {
                let node = &self.nodes[&id];
                if *epoch > node.epoch || (*epoch == node.epoch && node.role != Role::Leader) {
                    self.step_down(context, id, *epoch, Some(*leader));
                }
            }
            Message::MetadataFetchResponse(answer) => self.fetched(context, id, peer, answer),
            Message::ConnectionClosed => {
                let node = self.nodes.get_mut(&id).expect("known");
                // As leader: the peer's held fetch is gone. As follower: the
                // fetch in flight failed; fetch again after the backoff.
                node.held.retain(|held| held.from != from);
                if node.leader == Some(peer) && node.fetch_sent_ms.is_some() {
                    node.fetch_sent_ms = None;
                    let incarnation = node.incarnation;
                    context.timer(
                        NodeId::Controller(id),
                        incarnation,
                        RECONNECT_BACKOFF_MS,
                        Timer::QuorumFetchRetry,
                    );
                }
            }
            _ => return false,
        }
        true
    }

    /// The leader's answer to this voter's fetch of the metadata log:
    /// entries to append, where its log diverged, or the leader to follow.
    fn fetched(&mut self, context: &mut QuorumContext, id: u32, peer: u32, answer: &MetadataFetchAnswer) {
        let now = context.now();
        let MetadataFetchAnswer {
            epoch,
            leader,
            error,
            from_offset,
            entries,
            high_watermark,
            diverging,
        } = answer;
        let node = self.nodes.get_mut(&id).expect("known");
        node.fetch_sent_ms = None;
        if *epoch > node.epoch {
            self.step_down(context, id, *epoch, *leader);
            return;
        }
        let node = self.nodes.get_mut(&id).expect("known");
        if *epoch < node.epoch || !matches!(node.role, Role::Follower | Role::Prospective) {
            return;
        }
        if error.is_some() {
            // The responder is not the leader of this epoch: follow
            // the one it names, or wait for the next tick.
            if let Some(leader) = leader.filter(|&leader| leader != peer && leader != id) {
                self.step_down(context, id, *epoch, Some(leader));
            }
            return;
        }
        if node.leader != Some(peer) {
            node.leader = Some(peer);
        }
        node.role = Role::Follower;
        node.votes.clear();
        node.fetched_from_leader = true;
        node.last_heard_ms = now;
        let (log, committed) = (&mut node.log, &mut node.committed);
        apply_fetched(log, committed, *from_offset, entries, *high_watermark, *diverging);
        if let Some((epoch, end)) = diverging {
            let length = node.log.len();
            context.trace(TraceKind::ControllerStatus {
                controller: id,
                status: ControllerChange::TruncatedMetadataLog {
                    length,
                    leader: peer,
                    epoch: *epoch,
                    end_offset: *end,
                },
            });
        }
        self.fetch(context, id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log whose entries have these epochs.
    fn log(epochs: &[u32]) -> Vec<LogEntry> {
        epochs
            .iter()
            .map(|&epoch| LogEntry {
                epoch,
                records: Rc::from(Vec::new()),
                state: Rc::new(Controller::default()),
            })
            .collect()
    }

    #[test]
    fn the_end_of_an_epoch_is_the_offset_after_its_last_entry() {
        let leader = log(&[1, 1, 3, 3, 3, 4]);
        assert_eq!(end_offset_for_epoch(&leader, 1), (1, 2));
        // Epoch 2 was never written: the largest epoch below it answers.
        assert_eq!(end_offset_for_epoch(&leader, 2), (1, 2));
        assert_eq!(end_offset_for_epoch(&leader, 3), (3, 5));
        assert_eq!(end_offset_for_epoch(&leader, 9), (4, 6));
        assert_eq!(end_offset_for_epoch(&leader, 0), (0, 0));
    }

    #[test]
    fn the_leader_accepts_a_matching_fetch_and_names_the_divergence_otherwise() {
        let leader = log(&[1, 1, 3, 3, 3, 4]);
        assert_eq!(diverging_epoch(&leader, 0, 0), None);
        assert_eq!(diverging_epoch(&leader, 2, 1), None);
        assert_eq!(diverging_epoch(&leader, 6, 4), None);
        // The follower wrote more of epoch 1 than the leader kept.
        assert_eq!(diverging_epoch(&leader, 4, 1), Some((1, 2)));
        // The follower has an epoch the leader never had.
        assert_eq!(diverging_epoch(&leader, 3, 2), Some((1, 2)));
    }

    #[test]
    fn a_diverged_fetcher_truncates_to_the_common_end() {
        let follower = log(&[1, 1, 1, 1, 2]);
        // The leader's epoch 1 ends at 2: cut to the smaller end.
        assert_eq!(truncation_offset(&follower, (1, 2)), 2);
        // The leader's epoch 1 ends past the follower's: keep all of it.
        assert_eq!(truncation_offset(&follower, (1, 9)), 4);
        // The follower never had the leader's epoch 3: cut to the end of
        // its largest epoch below it (2, ending at 5).
        assert_eq!(truncation_offset(&follower, (3, 1)), 5);
        assert_eq!(truncation_offset(&follower, (0, 0)), 0);
    }

    #[test]
    fn a_fetch_answer_truncates_appends_and_moves_the_high_watermark() {
        let leader = log(&[1, 1, 3, 3]);
        let mut follower = log(&[1, 1, 1]);
        let mut high_watermark = 2;
        let diverging = diverging_epoch(&leader, follower.len(), 1).expect("diverged");
        assert!(apply_fetched(
            &mut follower,
            &mut high_watermark,
            3,
            &[],
            2,
            Some(diverging)
        ));
        assert_eq!(follower.len(), 2);
        assert!(apply_fetched(
            &mut follower,
            &mut high_watermark,
            2,
            &leader[2..],
            3,
            None
        ));
        assert_eq!(follower.len(), 4);
        assert_eq!(high_watermark, 3);
        // A stale answer (entries from an offset it is no longer at) is not appended.
        assert!(!apply_fetched(
            &mut follower,
            &mut high_watermark,
            1,
            &leader[1..],
            3,
            None
        ));
        assert_eq!(follower.len(), 4);
    }
}
