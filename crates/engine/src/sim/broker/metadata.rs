//! A broker's metadata: fetching the controller's image and applying it
//! (becoming leader or follower of partitions), `BrokerMetadataPublisher`.

use super::*;

impl Simulation {
    /// Fetches the metadata log from the controller it believes active,
    /// unless a fetch is in flight.
    pub(crate) fn broker_fetch_metadata(&mut self, id: BrokerId) {
        let broker = self.broker(id);
        if broker.status == BrokerStatus::Dead || broker.metadata_log.in_flight.is_some() {
            return;
        }
        let fetch = broker.next_id();
        broker.metadata_log.in_flight = Some((fetch, broker.controller));
        let replica = &broker.metadata_log;
        let message = Message::MetadataFetch {
            epoch: replica.epoch,
            fetch_offset: replica.log.len(),
            last_fetched_epoch: replica.log.last().map_or(0, |entry| entry.epoch),
        };
        let (incarnation, controller) = (broker.incarnation, broker.controller);
        self.send(NodeId::Broker(id), NodeId::Controller(controller), message);
        self.schedule_timer(
            NodeId::Broker(id),
            incarnation,
            crate::sim::quorum::REQUEST_TIMEOUT_MS,
            Timer::MetadataFetchTimeout(fetch),
        );
    }

    /// An answer to the broker's metadata fetch
    /// (`KafkaRaftClient#handleFetchResponse` as an observer).
    pub(super) fn broker_metadata_response(
        &mut self,
        id: BrokerId,
        from: u32,
        answer: &crate::sim::types::MetadataFetchAnswer,
    ) {
        let crate::sim::types::MetadataFetchAnswer {
            epoch,
            leader,
            error,
            from_offset,
            ref entries,
            high_watermark,
            diverging,
        } = *answer;
        let controllers = self.config.controllers;
        let incarnation = self.brokers[&id].incarnation;
        let broker = self.broker(id);
        if broker.metadata_log.in_flight.is_none_or(|(_, to)| to != from) {
            // An answer to a fetch given up on.
            return;
        }
        broker.metadata_log.in_flight = None;
        let newer = epoch > broker.metadata_log.epoch;
        if epoch >= broker.metadata_log.epoch {
            broker.metadata_log.epoch = epoch;
            if let Some(leader) = leader {
                broker.controller = leader;
            }
        }
        if error.is_some() || leader != Some(from) {
            if newer && leader.is_some_and(|leader| leader != from) {
                // Told who leads: fetch from it now.
                self.broker_fetch_metadata(id);
            } else {
                // No better hint: ask another voter after a backoff.
                if leader.is_none() || !newer {
                    broker.controller = from % controllers + 1;
                }
                self.schedule_timer(
                    NodeId::Broker(id),
                    incarnation,
                    crate::sim::quorum::RECONNECT_BACKOFF_MS,
                    Timer::MetadataFetchRetry,
                );
            }
            return;
        }
        let replica = &mut broker.metadata_log;
        let (log, hw) = (&mut replica.log, &mut replica.high_watermark);
        let before = *hw;
        crate::sim::quorum::apply_fetched(log, hw, from_offset, entries, high_watermark, diverging);
        if let Some((epoch, end)) = diverging {
            let length = broker.metadata_log.log.len();
            self.record(TraceKind::BrokerStatus {
                broker: id,
                status: BrokerChange::TruncatedMetadataLog {
                    length,
                    controller: from,
                    epoch,
                    end_offset: end,
                },
            });
        }
        let broker = self.broker(id);
        if broker.metadata_log.high_watermark != before {
            self.broker_publish_metadata(id);
        }
        self.broker_fetch_metadata(id);
    }

    /// Applies the committed metadata, once the broker is registered and
    /// has caught up with its own registration (`BrokerLifecycleManager`'s
    /// initial catch-up: until then the broker takes on no partition).
    pub(super) fn broker_publish_metadata(&mut self, id: BrokerId) {
        let broker = &self.brokers[&id];
        let (Some(state), Some(epoch)) = (broker.metadata_log.committed(), broker.broker_epoch) else {
            return;
        };
        if state.offset < epoch
            || broker
                .metadata
                .as_ref()
                .is_some_and(|image| image.offset >= state.offset)
        {
            return;
        }
        let image = state.image();
        self.broker_apply_metadata(id, image);
    }

    /// Takes on the roles the new metadata gives this broker
    /// (`ReplicaManager#applyDelta`: `makeLeader` / `makeFollower`).
    pub(super) fn broker_apply_metadata(&mut self, id: BrokerId, image: MetadataImage) {
        if self.brokers[&id]
            .metadata
            .as_ref()
            .is_some_and(|current| current.offset >= image.offset)
        {
            return;
        }
        let now = self.now;
        let incarnation = self.brokers[&id].incarnation;
        let partitions: Vec<_> = image
            .partitions
            .iter()
            .filter(|(_, registration)| registration.replicas.contains(&id))
            .map(|(partition, registration)| (partition.clone(), registration.clone()))
            .collect();
        self.broker(id).fenced = image.fenced.contains(&id);
        self.broker(id).metadata = Some(image);
        for (partition, registration) in partitions {
            let log_config = self.log_config(&partition);
            self.broker(id)
                .logs
                .entry(partition.clone())
                .or_insert_with(|| PartitionLog::new(log_config, now));
            if registration.leader == Some(id) {
                let broker = self.broker(id);
                match broker.leading.get_mut(&partition) {
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
                let was_leader = broker.leading.contains_key(&partition);
                broker.following.remove(&partition);
                let log = broker.logs.get_mut(&partition).expect("created above");
                let log_end = log.log_end_offset();
                log.epoch_cache.assign(registration.leader_epoch, log_end);
                let followers = registration
                    .replicas
                    .iter()
                    .filter(|&&replica| replica != id)
                    .map(|&replica| {
                        let mut state = broker
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
                let (parked_before, held_before) = broker
                    .leading
                    .remove(&partition)
                    .map(|leader| (leader.parked, (leader.held, leader.leader_epoch)))
                    .unwrap_or_default();
                broker.leading.insert(
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
                self.fail_parked(id, &partition, parked_before, ErrorCode::NotLeaderOrFollower);
                self.fail_held(id, &partition, held_before.0, held_before.1);
                self.leader_maybe_advance_hw(id, &partition, HighWatermarkTrigger::BecameLeader);
                if *partition.topic == *crate::sim::coordinator::OFFSETS_TOPIC {
                    self.coordinator_partition_changed(id, &partition, true);
                }
                if *partition.topic == *crate::sim::txn::TRANSACTION_STATE_TOPIC {
                    self.txn_partition_changed(id, &partition, true);
                }
            } else {
                let broker = self.broker(id);
                let old_leader = broker.leading.remove(&partition);
                let was_leader = old_leader.is_some();
                let (parked, held) = old_leader
                    .map(|leader| (leader.parked, (leader.held, leader.leader_epoch)))
                    .unwrap_or_default();
                match registration.leader {
                    Some(leader) => {
                        let already = broker.following.get(&partition).is_some_and(|state| {
                            state.leader == leader && state.leader_epoch == registration.leader_epoch
                        });
                        if !already {
                            broker.following.insert(
                                partition.clone(),
                                FollowerState {
                                    leader,
                                    leader_epoch: registration.leader_epoch,
                                    in_flight: None,
                                },
                            );
                            self.schedule_timer(
                                NodeId::Broker(id),
                                incarnation,
                                0,
                                Timer::FollowerFetch(partition.clone()),
                            );
                        }
                    }
                    None => {
                        broker.following.remove(&partition);
                    }
                }
                self.fail_parked(id, &partition, parked, ErrorCode::NotLeaderOrFollower);
                self.fail_held(id, &partition, held.0, held.1);
                if was_leader && *partition.topic == *crate::sim::coordinator::OFFSETS_TOPIC {
                    self.coordinator_partition_changed(id, &partition, false);
                }
                if was_leader && *partition.topic == *crate::sim::txn::TRANSACTION_STATE_TOPIC {
                    self.txn_partition_changed(id, &partition, false);
                }
            }
        }
    }
}
