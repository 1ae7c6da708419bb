//! A broker's metadata: fetching the controller's image and applying it
//! (becoming leader or follower of partitions), `BrokerMetadataPublisher`.

use super::*;

impl Broker {
    /// Fetches the metadata log from the controller it believes active,
    /// unless a fetch is in flight.
    pub(crate) fn fetch_metadata(&mut self, context: &mut BrokerContext<'_>) {
        if self.status == BrokerStatus::Dead || self.metadata_log.in_flight.is_some() {
            return;
        }
        let fetch = self.next_id();
        self.metadata_log.in_flight = Some((fetch, self.controller));
        let replica = &self.metadata_log;
        let message = Message::MetadataFetch {
            epoch: replica.epoch,
            fetch_offset: replica.log.len(),
            last_fetched_epoch: replica.log.last().map_or(0, |entry| entry.epoch),
        };
        let (incarnation, controller) = (self.incarnation, self.controller);
        context.send(NodeId::Controller(controller), message);
        context.timer(
            incarnation,
            crate::sim::quorum::REQUEST_TIMEOUT_MS,
            Timer::MetadataFetchTimeout(fetch),
        );
    }

    /// An answer to the broker's metadata fetch
    /// (`KafkaRaftClient#handleFetchResponse` as an observer).
    pub(super) fn metadata_response(
        &mut self,
        context: &mut BrokerContext<'_>,
        from: u32,
        answer: &crate::sim::types::MetadataFetchAnswer,
    ) {
        let id = self.id;
        let crate::sim::types::MetadataFetchAnswer {
            epoch,
            leader,
            error,
            from_offset,
            ref entries,
            high_watermark,
            diverging,
        } = *answer;
        let controllers = context.config().controllers;
        let incarnation = self.incarnation;
        if self.metadata_log.in_flight.is_none_or(|(_, to)| to != from) {
            // An answer to a fetch given up on.
            return;
        }
        self.metadata_log.in_flight = None;
        let newer = epoch > self.metadata_log.epoch;
        if epoch >= self.metadata_log.epoch {
            self.metadata_log.epoch = epoch;
            if let Some(leader) = leader {
                self.controller = leader;
            }
        }
        if error.is_some() || leader != Some(from) {
            if newer && leader.is_some_and(|leader| leader != from) {
                // Told who leads: fetch from it now.
                self.fetch_metadata(context);
            } else {
                // No better hint: ask another voter after a backoff.
                if leader.is_none() || !newer {
                    self.controller = from % controllers + 1;
                }
                context.timer(
                    incarnation,
                    crate::sim::quorum::RECONNECT_BACKOFF_MS,
                    Timer::MetadataFetchRetry,
                );
            }
            return;
        }
        let replica = &mut self.metadata_log;
        let (log, hw) = (&mut replica.log, &mut replica.high_watermark);
        let before = *hw;
        crate::sim::quorum::apply_fetched(log, hw, from_offset, entries, high_watermark, diverging);
        if let Some((epoch, end)) = diverging {
            let length = self.metadata_log.log.len();
            context.trace(TraceKind::BrokerStatus {
                broker: id,
                status: BrokerChange::TruncatedMetadataLog {
                    length,
                    controller: from,
                    epoch,
                    end_offset: end,
                },
            });
        }
        if self.metadata_log.high_watermark != before {
            self.publish_metadata(context);
        }
        self.fetch_metadata(context);
    }

    /// Applies the committed metadata, once the broker is registered and
    /// has caught up with its own registration (`BrokerLifecycleManager`'s
    /// initial catch-up: until then the broker takes on no partition).
    pub(super) fn publish_metadata(&mut self, context: &mut BrokerContext<'_>) {
        let (Some(state), Some(epoch)) = (self.metadata_log.committed(), self.broker_epoch) else {
            return;
        };
        if state.offset < epoch || self.metadata.as_ref().is_some_and(|image| image.offset >= state.offset) {
            return;
        }
        let image = state.image();
        self.apply_metadata(context, image);
    }

    /// Takes on the roles the new metadata gives this broker
    /// (`ReplicaManager#applyDelta`: `makeLeader` / `makeFollower`).
    pub(super) fn apply_metadata(&mut self, context: &mut BrokerContext<'_>, image: MetadataImage) {
        let id = self.id;
        if self
            .metadata
            .as_ref()
            .is_some_and(|current| current.offset >= image.offset)
        {
            return;
        }
        let now = context.now();
        let incarnation = self.incarnation;
        let partitions: Vec<_> = image
            .partitions
            .iter()
            .filter(|(_, registration)| registration.replicas.contains(&id))
            .map(|(partition, registration)| (partition.clone(), registration.clone()))
            .collect();
        self.fenced = image.fenced.contains(&id);
        self.metadata = Some(image);
        for (partition, registration) in partitions {
            let log_config = context.log_config(&partition);
            self.logs
                .entry(partition.clone())
                .or_insert_with(|| PartitionLog::new(log_config, now));
            if registration.leader == Some(id) {
                match self.leading.get_mut(&partition) {
                    Some(leader) if leader.leader_epoch == registration.leader_epoch => {
                        if registration.partition_epoch > leader.partition_epoch {
                            leader.isr = registration.isr.clone();
                            leader.partition_epoch = registration.partition_epoch;
                            leader.replicas = registration.replicas.clone();
                        }
                        continue;
                    }
                    Some(leader) if leader.leader_epoch > registration.leader_epoch => continue,
                    _ => {}
                }
                let was_leader = self.leading.contains_key(&partition);
                self.following.remove(&partition);
                let log = self.logs.get_mut(&partition).expect("created above");
                let log_end = log.log_end_offset();
                log.epoch_cache.assign(registration.leader_epoch, log_end);
                let followers = registration
                    .replicas
                    .iter()
                    .filter(|&&replica| replica != id)
                    .map(|&replica| {
                        let mut state = self
                            .leading
                            .get(&partition)
                            .and_then(|leader| leader.followers.get(&replica))
                            .map(|info| info.state)
                            .unwrap_or_default();
                        state.reset_on_leader_change(now, log_end, !was_leader, registration.isr.contains(&replica));
                        (
                            replica,
                            FollowerInfo {
                                state,
                                last_fetch: None,
                            },
                        )
                    })
                    .gather();
                let (parked_before, held_before) = self
                    .leading
                    .remove(&partition)
                    .map(|leader| (leader.parked, (leader.held, leader.leader_epoch)))
                    .unwrap_or_default();
                self.leading.insert(
                    partition.clone(),
                    LeaderState {
                        leader_epoch: registration.leader_epoch,
                        partition_epoch: registration.partition_epoch,
                        isr: registration.isr.clone(),
                        pending_isr: None,
                        pending_isr_sent_ms: 0,
                        replicas: registration.replicas.clone(),
                        followers,
                        epoch_start_offset: log_end,
                        parked: Vec::new(),
                        held: Vec::new(),
                    },
                );
                self.fail_parked(context, &partition, parked_before, ErrorCode::NotLeaderOrFollower);
                self.fail_held(context, &partition, held_before.0, held_before.1);
                self.leader_maybe_advance_hw(context, &partition, HighWatermarkTrigger::BecameLeader);
                if *partition.topic == *crate::protocol::OFFSETS_TOPIC {
                    self.coordinator_partition_changed(context, &partition, true);
                }
                if *partition.topic == *crate::protocol::TRANSACTION_STATE_TOPIC {
                    self.txn_partition_changed(context, &partition, true);
                }
            } else {
                let old_leader = self.leading.remove(&partition);
                let was_leader = old_leader.is_some();
                let (parked, held) = old_leader
                    .map(|leader| (leader.parked, (leader.held, leader.leader_epoch)))
                    .unwrap_or_default();
                match registration.leader {
                    Some(leader) => {
                        let already = self.following.get(&partition).is_some_and(|state| {
                            state.leader == leader && state.leader_epoch == registration.leader_epoch
                        });
                        if !already {
                            self.following.insert(
                                partition.clone(),
                                FollowerState {
                                    leader,
                                    leader_epoch: registration.leader_epoch,
                                    in_flight: None,
                                },
                            );
                            context.timer(incarnation, 0, Timer::FollowerFetch(partition.clone()));
                        }
                    }
                    None => {
                        self.following.remove(&partition);
                    }
                }
                self.fail_parked(context, &partition, parked, ErrorCode::NotLeaderOrFollower);
                self.fail_held(context, &partition, held.0, held.1);
                if was_leader && *partition.topic == *crate::protocol::OFFSETS_TOPIC {
                    self.coordinator_partition_changed(context, &partition, false);
                }
                if was_leader && *partition.topic == *crate::protocol::TRANSACTION_STATE_TOPIC {
                    self.txn_partition_changed(context, &partition, false);
                }
            }
        }
    }
}
