//! KRaft's elections (KIP-595, KIP-996): the leader's `BeginQuorumEpoch`,
//! pre-votes and votes, stepping down, winning, and the check-quorum
//! contact a leader needs to stay.

use super::*;

impl Quorum {
    /// The leader tells every voter that has not fetched in its epoch yet
    /// that it leads (`BeginQuorumEpoch`, sent again each
    /// `controller.quorum.request.timeout.ms` until they fetch).
    pub(super) fn begin_epoch(&mut self, context: &mut QuorumContext, id: u32, force: bool) {
        let now = context.now();
        let node = self.nodes.get_mut(&id).expect("known");
        if !force && now.saturating_sub(node.begin_epoch_sent_ms) < REQUEST_TIMEOUT_MS {
            return;
        }
        node.begin_epoch_sent_ms = now;
        let epoch = node.epoch;
        let unaware: Vec<u32> = node
            .voters
            .iter()
            .filter(|(&voter, progress)| {
                voter != id && progress.last_caught_up_ms.is_none() && progress.fetch_offset == 0
            })
            .map(|(&voter, _)| voter)
            .collect();
        for voter in unaware {
            context.send(
                NodeId::Controller(id),
                NodeId::Controller(voter),
                Message::BeginQuorumEpoch { epoch, leader: id },
            );
        }
    }

    /// `transitionToProspective`: asks every voter whether it could win
    /// the next epoch (a `Vote` with `preVote`), keeping its own epoch; a
    /// majority's yes starts the real election. Refused, it asks again
    /// after the election timeout.
    pub(super) fn start_pre_vote(&mut self, context: &mut QuorumContext, id: u32) {
        let incarnation = self.nodes[&id].incarnation;
        let jitter = u64::from(self.rng.next_u32()) % ELECTION_TIMEOUT_MS;
        let node = self.nodes.get_mut(&id).expect("known");
        node.role = Role::Prospective;
        node.votes = [id].into_iter().gather();
        let epoch = node.epoch;
        let (last_epoch, last_index) = (node.last_epoch(), node.log.len() as u64);
        context.trace(TraceKind::ControllerStatus {
            controller: id,
            status: ControllerChange::Prospective { epoch },
        });
        // A pre-vote carries the prospective's own epoch, not the next one
        // (`KafkaRaftClient#buildVoteRequest`).
        let ask = Message::Vote {
            epoch,
            candidate: id,
            last_epoch,
            last_index,
            pre_vote: true,
        };
        self.ask_votes(context, id, ask, incarnation, ELECTION_TIMEOUT_MS + jitter, epoch);
        self.maybe_win_pre_vote(context, id);
    }

    /// Sends `ask` (a `Vote`) to every other voter, and gives the round
    /// until `timeout` (`Timer::ElectionTimeout` of `epoch`).
    pub(super) fn ask_votes(
        &mut self,
        context: &mut QuorumContext,
        id: u32,
        ask: Message,
        incarnation: u32,
        timeout: u64,
        epoch: u32,
    ) {
        let peers: Vec<u32> = self.nodes.keys().copied().filter(|&peer| peer != id).collect();
        for peer in peers {
            context.send(NodeId::Controller(id), NodeId::Controller(peer), ask.clone());
        }
        context.timer(
            NodeId::Controller(id),
            incarnation,
            timeout,
            Timer::ElectionTimeout(epoch),
        );
    }

    /// A prospective with a majority of pre-votes stands for election.
    pub(super) fn maybe_win_pre_vote(&mut self, context: &mut QuorumContext, id: u32) {
        let majority = self.majority();
        let node = &self.nodes[&id];
        if node.role == Role::Prospective && node.votes.len() >= majority {
            self.start_election(context, id, CandidacyReason::PreVoteGranted);
        }
    }

    pub(super) fn start_election(&mut self, context: &mut QuorumContext, id: u32, reason: CandidacyReason) {
        let incarnation = self.nodes[&id].incarnation;
        let jitter = u64::from(self.rng.next_u32()) % ELECTION_TIMEOUT_MS;
        let node = self.nodes.get_mut(&id).expect("known");
        node.epoch += 1;
        node.role = Role::Candidate;
        node.voted_for = Some(id);
        node.leader = None;
        node.fetch_sent_ms = None;
        node.votes = [id].into_iter().gather();
        let epoch = node.epoch;
        let last_index = node.log.len();
        let last_epoch = node.last_epoch();
        context.trace(TraceKind::ControllerElection {
            controller: id,
            epoch,
            reason,
        });
        let ask = Message::Vote {
            epoch,
            candidate: id,
            last_epoch,
            last_index: last_index as u64,
            pre_vote: false,
        };
        self.ask_votes(context, id, ask, incarnation, ELECTION_TIMEOUT_MS + jitter, epoch);
        self.maybe_win(context, id);
    }

    /// A node sees a newer epoch, or learns the leader of its own: it
    /// follows (and fetches from the leader, once known).
    pub(super) fn step_down(&mut self, context: &mut QuorumContext, id: u32, epoch: u32, leader: Option<u32>) {
        let now = context.now();
        let node = self.nodes.get_mut(&id).expect("known");
        if epoch > node.epoch {
            node.epoch = epoch;
            node.voted_for = None;
            node.leader = None;
            node.fetch_sent_ms = None;
            node.fetched_from_leader = false;
        }
        if node.role == Role::Leader {
            node.clear_leadership();
        }
        node.role = Role::Follower;
        node.votes.clear();
        if leader.is_some() && node.leader != leader {
            node.leader = leader;
            node.fetch_sent_ms = None;
            node.fetched_from_leader = false;
            node.last_heard_ms = now;
        }
        self.fetch(context, id);
    }

    pub(super) fn maybe_win(&mut self, context: &mut QuorumContext, id: u32) {
        let majority = self.majority();
        let now = context.now();
        let peers = self.peer_ids();
        let node = self.nodes.get_mut(&id).expect("known");
        if node.role != Role::Candidate || node.votes.len() < majority {
            return;
        }
        node.role = Role::Leader;
        node.leader = Some(id);
        let epoch = node.epoch;
        let votes: Vec<u32> = node.votes.iter().copied().collect();
        node.epoch_start = node.log.len();
        // Nothing is known of the other voters until they fetch; each gets
        // a full check-quorum window to do so.
        node.voters = peers
            .into_iter()
            .map(|peer| {
                let progress = FetcherProgress {
                    fetch_offset: 0,
                    last_fetch_ms: now,
                    last_caught_up_ms: None,
                };
                (peer, progress)
            })
            .gather();
        node.observers.clear();
        node.held.clear();
        // A fresh session for every registered broker.
        let brokers: Vec<BrokerId> = node
            .log
            .last()
            .map(|entry| entry.state.brokers.keys().copied().collect())
            .unwrap_or_default();
        node.heartbeats = brokers.into_iter().map(|broker| (broker, now)).gather();
        self.elections += 1;
        if let Some(&other) = self.leaders_by_epoch.get(&epoch) {
            if other != id {
                context.violation();
                context.trace(TraceKind::InvariantViolated {
                    invariant: Invariant::OneActiveControllerPerEpoch,
                    detail: format!("controller-{other} and controller-{id} both lead epoch {epoch}"),
                });
            }
        }
        self.leaders_by_epoch.insert(epoch, id);
        context.trace(TraceKind::ControllerElected {
            controller: id,
            epoch,
            votes,
        });
        self.begin_epoch(context, id, true);
        // A new leader commits its predecessors' entries by writing one of
        // its own (KRaft's `LeaderChangeMessage`).
        self.with_leader_state(context, id, |decision| decision.write_leader_change());
    }

    /// Whether leader `id` heard from a majority (itself included) within
    /// the check-quorum window.
    pub(super) fn has_majority_contact(&self, id: u32, now: Time) -> bool {
        let node = &self.nodes[&id];
        let window = FETCH_TIMEOUT_MS * 3 / 2;
        let heard = node
            .voters
            .iter()
            .filter(|(&peer, progress)| peer != id && now.saturating_sub(progress.last_fetch_ms) <= window)
            .count();
        heard + 1 >= self.majority()
    }

    pub(super) fn peer_ids(&self) -> Vec<u32> {
        self.nodes.keys().copied().collect()
    }

    /// `Vote`: grant or refuse a candidate's vote, or a prospective's
    /// pre-vote (KIP-996), moving first to a newer epoch it names.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn vote(
        &mut self,
        context: &mut QuorumContext,
        id: u32,
        from: NodeId,
        epoch: u32,
        candidate: u32,
        last_epoch: u32,
        last_index: u64,
        pre_vote: bool,
    ) {
        let now = context.now();
        let last_index = last_index as usize;
        // A vote or pre-vote from a newer epoch moves this voter to
        // it, leaderless (`KafkaRaftClient#handleVoteRequest`). A
        // prospective never bumps its own epoch, so only a voter
        // whose earlier candidacy failed carries one this new: the
        // quorum must move up to it, or that voter and any broker
        // that learned its epoch would wait for ever.
        if epoch > self.nodes[&id].epoch {
            self.step_down(context, id, epoch, None);
        }
        let node = self.nodes.get_mut(&id).expect("known");
        let up_to_date = (last_epoch, last_index) >= (node.last_epoch(), node.log.len());
        let granted = if pre_vote {
            // `canGrantVote(isPreVote)`: a leader refuses, and so
            // does a follower that has fetched from its leader;
            // the others grant a prospective of their epoch whose
            // log is as up to date as theirs.
            let has_leader = match node.role {
                Role::Leader => true,
                Role::Follower => node.leader.is_some() && node.fetched_from_leader,
                Role::Candidate | Role::Prospective => false,
            };
            epoch == node.epoch && up_to_date && !has_leader
        } else {
            let granted = epoch == node.epoch
                && node.role != Role::Leader
                && node.voted_for.is_none_or(|voted| voted == candidate)
                && up_to_date;
            if granted {
                node.voted_for = Some(candidate);
                node.last_heard_ms = now;
            }
            granted
        };
        let reply = Message::VoteResponse {
            epoch: node.epoch,
            leader: node.leader,
            granted,
            pre_vote,
        };
        context.send(NodeId::Controller(id), from, reply);
    }
}
