//! What a learner or a scenario does to the cluster: each [`Input`]
//! applied at its time (faults, clients, records), partitions added, and
//! configuration changes checked and applied as Kafka applies them.

use super::*;

impl Simulation {
    pub(super) fn apply_input(&mut self, input: Input) {
        let description = describe_input(&input);
        self.current_cause = Some(self.record(TraceKind::Input {
            description,
            input: Box::new(input.clone()),
        }));
        match input {
            Input::Produce {
                producer,
                key,
                count,
                bytes,
            } => self.producer_send(producer, key, count, bytes),
            Input::KillBroker { broker } => self.broker_kill(broker),
            Input::PowerLoss { brokers } => self.broker_power_loss(&brokers),
            Input::RestartBroker { broker } => self.broker_restart(broker),
            Input::StopBroker { broker } => self.broker_graceful_stop(broker),
            Input::PauseBroker { broker, duration_ms } => self.broker_pause(broker, duration_ms),
            Input::CutLink { a, b } => self.network.cut(a, b),
            Input::HealLink { a, b } => self.network.heal(a, b),
            Input::Partition { side } => self.network.partition(side.into_iter().gather()),
            Input::HealNetwork => self.network.heal_all(),
            Input::SlowNode { node, extra_latency_ms } => self.network.slow_down(node, extra_latency_ms),
            Input::DropMessages { per_million } => self.network.set_drop_rate(per_million),
            Input::CommitTransaction { producer } => self.producer_end_transaction(producer, true),
            Input::AbortTransaction { producer } => self.producer_end_transaction(producer, false),
            Input::RestartProducer { producer } => {
                self.producer_crash(producer);
                self.producer_revive(producer);
            }
            Input::PoisonRecords {
                topic,
                key,
                partition,
                offset,
            } => {
                if self.poison.len() < crate::limits::MAX_INPUTS {
                    self.poison.push(PoisonRule {
                        topic,
                        key,
                        partition,
                        offset,
                    });
                }
            }
            Input::LoseProduceResponse { producer } => {
                if (producer as usize) < self.producers.len() {
                    self.network.lose_next_produce_response(NodeId::Producer(producer));
                }
            }
            Input::StallProduce { producer, delay_ms } => {
                if (producer as usize) < self.producers.len() {
                    self.network
                        .stall_next(NodeId::Producer(producer), MessageName::Produce, delay_ms);
                }
            }
            Input::StallEndTxn { producer, delay_ms } => {
                if (producer as usize) < self.producers.len() {
                    self.network
                        .stall_next(NodeId::Producer(producer), MessageName::EndTxn, delay_ms);
                }
            }
            Input::KillController { controller } => self.controller_kill(controller),
            Input::RestartController { controller } => self.controller_restart(controller),
            Input::StartConsumer { consumer } => self.consumer_start(consumer),
            Input::StopConsumer { consumer } => self.consumer_stop(consumer, true),
            Input::ProduceTombstone { producer, key } => self.producer_send_tombstone(producer, key),
            Input::CrashConsumer { consumer } => self.consumer_stop(consumer, false),
            Input::PauseConsumer { consumer, duration_ms } => self.consumer_pause(consumer, duration_ms),
            Input::AddConsumer { consumer } => self.consumer_add(consumer),
            Input::ElectLeaders {
                election_type,
                partitions,
            } => match self.quorum.active() {
                Some(active) => {
                    self.with_leader_state(active, |decision| decision.elect_leaders(election_type, &partitions))
                }
                None => {
                    self.record(TraceKind::ElectLeadersFailed {
                        election_type,
                        partition: None,
                        error: ErrorCode::RequestTimedOut,
                    });
                }
            },
            Input::CreatePartitions { topic, count } => self.create_partitions(topic, count),
            Input::SetConfig(change) => self.apply_config_change(change),
        }
    }

    /// An operator's `CreatePartitions`, decided by the active controller
    /// (no active controller: the admin client's request times out).
    pub(super) fn create_partitions(&mut self, topic: String, count: u32) {
        let input = Input::CreatePartitions {
            topic: topic.clone(),
            count,
        };
        if let Err(exceeded) = self.check_input(&input) {
            self.record(TraceKind::LimitReached {
                what: exceeded.what.to_string(),
                limit: exceeded.limit,
            });
            return;
        }
        match self.quorum.active() {
            Some(active) => self.with_leader_state(active, |decision| decision.create_partitions(&topic, count)),
            None => {
                self.record(TraceKind::CreatePartitionsFailed {
                    topic,
                    count,
                    error: ErrorCode::RequestTimedOut,
                });
            }
        }
    }

    /// How many partitions `topic` has now, as the active controller's
    /// committed metadata says (0 for a topic that does not exist).
    pub fn topic_partition_count(&self, topic: &str) -> u32 {
        self.controller
            .partitions
            .keys()
            .filter(|partition| *partition.topic == *topic)
            .map(|partition| partition.partition + 1)
            .max()
            .unwrap_or(0)
    }

    /// Whether Kafka would accept `change` in this run: a producer with
    /// `enable.idempotence=true` needs `acks=all`
    /// (`ProducerConfig#postProcessAndValidateIdempotenceConfigs`); a
    /// driver asks first to answer with the error, the simulation refuses
    /// such a change anyway with a [`TraceKind::ChangeRefused`] event.
    pub fn check_config_change(&self, change: &ConfigChange) -> Result<(), String> {
        const NEEDS_ACKS_ALL: &str =
            "Must set acks to all in order to use the idempotent producer. Otherwise we cannot guarantee idempotence.";
        match change {
            ConfigChange::EnableIdempotence { producer, enable: true } => {
                match self.producers.get(*producer as usize) {
                    Some(state) if state.config.acks != crate::replication::high_watermark::Acks::All => {
                        Err(NEEDS_ACKS_ALL.to_string())
                    }
                    _ => Ok(()),
                }
            }
            ConfigChange::Acks { producer, acks } => match self.producers.get(*producer as usize) {
                Some(state)
                    if state.config.enable_idempotence == Some(true)
                        && *acks != crate::replication::high_watermark::Acks::All =>
                {
                    Err(NEEDS_ACKS_ALL.to_string())
                }
                _ => Ok(()),
            },
            ConfigChange::TopicStorage { .. }
            | ConfigChange::CleanupPolicy { .. }
            | ConfigChange::MinCleanableDirtyRatio { .. } => self.changed_topic(change).map(|_| ()),
            ConfigChange::Quota(quota) => quota.validate(),
            ConfigChange::TransactionVersion { level } => {
                crate::protocol::transactions::TransactionVersion::checked(*level).map(|_| ())
            }
            ConfigChange::CommitMode { consumer, mode } => {
                let current = self
                    .consumers
                    .get(*consumer as usize)
                    .map(|state| state.config.commit_mode);
                let transactional = config::CommitMode::Transactional;
                if current.is_some_and(|current| (current == transactional) != (*mode == transactional)) {
                    // kafkascope's rule: an app's exactly-once loop is how
                    // it is written, not a setting to flip mid-run.
                    Err("an exactly-once (transactional) app cannot switch to or from committing its offsets in transactions while it runs".to_string())
                } else {
                    Ok(())
                }
            }
            _ => Ok(()),
        }
    }

    /// A topic change: which topic (its index) and its configuration
    /// with the change, checked against Kafka's bounds.
    pub(super) fn changed_topic(&self, change: &ConfigChange) -> Result<(usize, config::TopicConfig), String> {
        let topic = match change {
            ConfigChange::TopicStorage { topic, .. }
            | ConfigChange::CleanupPolicy { topic, .. }
            | ConfigChange::MinCleanableDirtyRatio { topic, .. } => topic,
            _ => return Err("not a topic change".to_string()),
        };
        let Some(index) = self.config.topics.iter().position(|candidate| candidate.name == *topic) else {
            return Err(format!("no topic {topic}"));
        };
        let known = &self.config.topics[index];
        let changed = match change {
            ConfigChange::TopicStorage { setting, value, .. } => known.with_storage(*setting, *value)?,
            ConfigChange::CleanupPolicy { policy, .. } => config::TopicConfig {
                cleanup_policy: *policy,
                ..known.clone()
            },
            ConfigChange::MinCleanableDirtyRatio { ratio, .. } => config::TopicConfig {
                min_cleanable_dirty_ratio: *ratio,
                ..known.clone()
            },
            _ => known.clone(),
        };
        changed.validate_storage()?;
        Ok((index, changed))
    }

    pub(super) fn apply_config_change(&mut self, change: ConfigChange) {
        if let Err(reason) = self.check_config_change(&change) {
            self.record(TraceKind::ChangeRefused {
                change: describe_change(&change),
                reason,
            });
            return;
        }
        match change {
            ConfigChange::EnableIdempotence { producer, enable } => self.producer_set_idempotence(producer, enable),
            ConfigChange::Acks { producer, acks } => {
                if let Some(producer) = self.producers.get_mut(producer as usize) {
                    producer.config.acks = acks;
                }
            }
            ConfigChange::MinInsyncReplicas { topic, value } => {
                let Some(config) = self.config.topics.iter_mut().find(|candidate| candidate.name == topic) else {
                    return;
                };
                let changed = config.min_insync_replicas != value.max(1);
                config.min_insync_replicas = value.max(1);
                // KIP-966: a new min.insync.replicas makes the topic's ELRs
                // meaningless, so the active controller clears them in the
                // same write as the config (`ConfigurationControlManager#
                // createClearElrRecordsAsNeeded`, a `ClearElrRecord`):
                // partitions with an ELR or a last known ELR lose both, and
                // their partition epoch goes up; leaders and ISRs stay.
                if changed && self.config.eligible_leader_replicas_enable {
                    if let Some(active) = self.quorum.active() {
                        self.with_leader_state(active, |decision| decision.clear_elr(&topic));
                    }
                }
            }
            ConfigChange::UncleanLeaderElection { enable } => {
                // The change is a `ConfigRecord`; like every write, it lets
                // the active controller schedule its periodic unclean
                // election pass if some partition has no leader
                // (`QuorumController#maybeScheduleNextElectUncleanLeaders`).
                // Nothing is elected at once.
                self.config.unclean_leader_election_enable = enable;
                if let Some(active) = self.quorum.active() {
                    self.with_leader_state(active, |decision| decision.set_unclean_leader_election(enable));
                }
            }
            ConfigChange::TransactionVersion { level } => {
                // `kafka-features upgrade|downgrade --feature
                // transaction.version=N` (`UpdateFeatures`): a
                // `FeatureLevelRecord` the brokers apply like any metadata.
                let version = crate::protocol::transactions::TransactionVersion(level);
                self.config.transaction_version = version;
                if let Some(active) = self.quorum.active() {
                    self.with_leader_state(active, |decision| decision.set_transaction_version(version));
                }
            }
            ConfigChange::TransactionPartitionVerification { enable } => {
                self.config.transaction_partition_verification_enable = enable;
            }
            ConfigChange::ReplicaLagTimeMaxMs { value } => self.config.replica_lag_time_max_ms = value.max(1),
            ConfigChange::TopicStorage { .. }
            | ConfigChange::CleanupPolicy { .. }
            | ConfigChange::MinCleanableDirtyRatio { .. } => {
                // Checked in `check_config_change`.
                let Ok((index, changed)) = self.changed_topic(&change) else {
                    return;
                };
                let log_config = changed.log_config();
                let topic = changed.name.clone();
                self.config.topics[index] = changed;
                for broker in self.brokers.values_mut() {
                    for (partition, log) in &mut broker.logs {
                        if *partition.topic == *topic {
                            log.log.config = log_config;
                        }
                    }
                }
            }
            ConfigChange::Quota(quota) => self.config.set_quota(quota),
            ConfigChange::LingerMs { producer, value } => {
                if let Some(producer) = self.producers.get_mut(producer as usize) {
                    producer.config.linger_ms = value;
                }
            }
            ConfigChange::ProcessingMsPerRecord { consumer, value } => {
                self.consumer_config_change(consumer, |config| config.processing_ms_per_record = value);
            }
            ConfigChange::CommitMode { consumer, mode } => {
                self.consumer_config_change(consumer, |config| config.commit_mode = mode);
            }
            ConfigChange::IdempotentHandler { consumer, enable } => {
                self.consumer_config_change(consumer, |config| config.idempotent_handler = enable);
            }
            ConfigChange::AutoOffsetReset { consumer, reset } => {
                self.consumer_config_change(consumer, |config| config.auto_offset_reset = reset);
            }
        }
    }
}
