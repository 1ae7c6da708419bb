//! The fault fuzzer: random clusters under random fault schedules, checked
//! for safety (nothing acknowledged is lost in a safe configuration, no
//! invariant breaks, and Jepsen's checks over the run's history find no
//! anomaly there: [`crate::history`]) and for liveness (once every fault has healed, the
//! cluster acknowledges new records and every group reads everything).
//!
//! A case is a cluster, a seed and a schedule: faults until
//! [`FuzzCase::faults_end_ms`], then everything healed and restarted at
//! that moment; a recovery window; then a burst of keyed records from
//! every producer (one of them fresh, never used before) reaching every
//! partition; then a check. Kafka recovers from every one of these faults
//! on its own timeouts (broker sessions 9 s, consumer sessions 45 s,
//! requests 30 s, deliveries 120 s), so the windows are sized from them.
//!
//! One outage Kafka 4.1 does not end on its own, on purpose: with Eligible
//! Leader Replicas (KIP-966, on by default), a partition whose every
//! replica that could lead cleanly restarted after an unclean shutdown
//! keeps no leader until an operator elects one. Where the run reaches
//! [`OPERATOR_AT_MS`] with such a partition, the fuzzer acts as that
//! operator (`kafka-leader-election --election-type unclean`, an input in
//! the case's scenario file); the case may then lose acknowledged records,
//! as Kafka may, so it is judged as a lossy one.
//!
//! Everything here is deterministic: a seed gives the same case and the
//! same verdict on every machine. [`minimise`] shrinks a failing case to
//! the fewest inputs that still fail, as a scenario `kafkascope run`
//! replays.

use crate::sorting::Gather;
use serde::Serialize;

use crate::partitioning::{partition_for_key, RecordKey};
use crate::protocol::BrokerId;
use crate::random::Rng;
use crate::replication::high_watermark::Acks;

use super::config::{
    ClientQuota, ClusterConfig, ConfigChange, ConsumerConfig, ElectionType, Input, NetworkConfig, OffsetReset,
    PartitionRef, ProducerConfig, ScheduledInput, TopicConfig,
};
use super::scenario::{Expectation, Scenario};
use super::types::{NodeId, Time};
use super::Simulation;

pub use super::checks::{liveness_failures, safety_failures, PIPELINE_GROUP, PIPELINE_TOPIC};

/// Faults stop and everything is healed at this time.
pub const FAULTS_END_MS: Time = 40_000;
/// The recovery window after the faults end, before the burst: longer than
/// a consumer's session (45 s) plus a rebalance, and than a request timeout.
pub const RECOVERY_WINDOW_MS: Time = 60_000;
/// Brokers are started again this long after the faults end too (a
/// controlled shutdown held up by a partition finishes only once it heals),
/// and once more at [`FINAL_RESTART_MS`] (one that waited for a follower
/// started at the first sweep to catch up finishes only after it).
pub const LATE_RESTART_MS: Time = 30_000;
/// The last sweep of broker starts after the faults end, before the burst.
pub const FINAL_RESTART_MS: Time = 50_000;
/// When the fuzzer acts as an operator: after the last restart sweep, with
/// time for the restarted brokers to register and be unfenced.
pub const OPERATOR_AT_MS: Time = FAULTS_END_MS + FINAL_RESTART_MS + 5_000;
/// How long after the burst the check runs: past `delivery.timeout.ms`
/// (120 s) for anything produced before the faults ended.
pub const SETTLE_MS: Time = 80_000;

/// Which faults a schedule draws from (`cargo xtask fuzz --mix`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mix {
    /// Every kind of fault.
    All,
    /// Broker crashes, restarts and pauses only.
    Brokers,
    /// Controller crashes and restarts only.
    Controllers,
    /// Cut links, partitions, loss and slow nodes only.
    Network,
    /// Consumer crashes and restarts only.
    Clients,
}

impl Mix {
    /// Parses a `--mix` value.
    pub fn parse(text: &str) -> Result<Mix, String> {
        match text {
            "all" => Ok(Mix::All),
            "brokers" => Ok(Mix::Brokers),
            "controllers" => Ok(Mix::Controllers),
            "network" => Ok(Mix::Network),
            "clients" => Ok(Mix::Clients),
            other => Err(format!(
                "unknown mix {other:?}: use all, brokers, controllers, network or clients"
            )),
        }
    }
}

/// One fuzz case: a cluster, its seed and its inputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FuzzCase {
    /// The seed of the case (also the simulation's seed).
    pub seed: u64,
    /// The cluster.
    pub config: ClusterConfig,
    /// Whether nothing acknowledged may be lost (acks=all, min.insync 2, no
    /// unclean election).
    pub safe: bool,
    /// The faults, then the healing at [`FAULTS_END_MS`], then the burst.
    pub inputs: Vec<ScheduledInput>,
    /// When the burst is sent.
    pub burst_at_ms: Time,
    /// When the verdict is taken.
    pub check_at_ms: Time,
}

/// What a case found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// Broken invariants, and acknowledged records lost in a safe configuration.
    pub safety: Vec<String>,
    /// What did not recover.
    pub liveness: Vec<String>,
    /// Events the run processed.
    pub events: u64,
    /// What the fuzzer did as an operator: an unclean leader election for
    /// partitions left with no leader and an empty ISR and ELR once every
    /// broker is back (KIP-966 keeps them offline on purpose: each replica
    /// that could lead without losing data restarted after an unclean
    /// shutdown). Empty in most cases.
    pub operator: Vec<ScheduledInput>,
    /// Records written twice across an epoch bump
    /// ([`across_epoch_duplicates`](super::checks::across_epoch_duplicates)):
    /// Kafka's idempotence allows it; counted, not failed.
    pub across_epoch_duplicates: u64,
    /// Non-monotonic sends Jepsen's checks found in a safe case where the
    /// batch out of place was appended by a leader with no state for its
    /// producer, so without checking its sequence
    /// (`ProducerAppendInfo#checkSequence`): a reordering Kafka's
    /// idempotence allows; counted, not failed.
    pub unchecked_reorders: u64,
    /// A correlated power loss: every replica of a partition lost power at
    /// once with records it had not flushed, or every replica that could
    /// lead one was down and the one an unclean election chose had lost
    /// power. Judged as a lossy case: every loss named, no Jepsen verdict.
    pub correlated_power_loss: bool,
    /// Acknowledged records lost because every replica that had them lost
    /// power before flushing them: each named in the trace
    /// (`LossCause::PowerLoss`), what Kafka's design allows.
    pub lost_to_power: usize,
}

impl Verdict {
    /// Whether the case passed.
    pub fn passed(&self) -> bool {
        self.safety.is_empty() && self.liveness.is_empty()
    }

    /// Which check failed first: "safety", "liveness" or "passed".
    pub fn class(&self) -> &'static str {
        if !self.safety.is_empty() {
            "safety"
        } else if !self.liveness.is_empty() {
            "liveness"
        } else {
            "passed"
        }
    }
}

/// A key of `topic`'s partition `partition` (the first `live-N` that lands
/// there, by Kafka's murmur2 partitioner).
fn key_for(partition: u32, partitions: u32) -> String {
    (0..)
        .map(|index| format!("live-{index}"))
        .find(|key| partition_for_key(&RecordKey::Text(key.clone()).serialize(), partitions) == Some(partition))
        .expect("murmur2 reaches every partition")
}

impl FuzzCase {
    /// The case for `seed` under `mix`.
    pub fn generate(seed: u64, mix: Mix) -> FuzzCase {
        let mut rng = Rng::new(seed, 11);
        let brokers = 3 + pick(&mut rng, 3);
        let topic_count = 1 + pick(&mut rng, 3);
        // One case in five is lossy: acks=1 or unclean election allowed.
        let safe = pick(&mut rng, 5) != 0;
        let topics: Vec<TopicConfig> = (0..topic_count)
            .map(|index| TopicConfig {
                name: format!("t{index}"),
                partitions: 1 + pick(&mut rng, 4),
                replication_factor: 3,
                min_insync_replicas: 2,
                ..TopicConfig::default()
            })
            .collect();
        let mut producers: Vec<ProducerConfig> = topics
            .iter()
            .map(|topic| {
                let mut producer = ProducerConfig::new(topic.name.clone());
                if !safe && pick(&mut rng, 2) == 0 {
                    producer.acks = Acks::Leader;
                    producer.enable_idempotence = Some(false);
                }
                producer
            })
            .collect();
        // A fresh producer that sends nothing until the burst.
        producers.push(ProducerConfig::new(topics[0].name.clone()));
        // max.in.flight.requests.per.connection from 1 to 5 (every value
        // an idempotent producer allows), from a stream of its own so the
        // rest of the schedule stays as it was.
        let mut in_flight = Rng::new(seed, 12);
        for producer in &mut producers {
            producer.max_in_flight_requests_per_connection = 1 + in_flight.next_u32() % 5;
        }
        // Some idempotent producers are transactional (KIP-98), from a
        // stream of their own; their timeout is the longest a broker allows
        // so that no fault window outlasts it (a timed-out transaction
        // fences its producer for good, which is the application's to
        // handle, not the cluster's).
        let mut transactional = Rng::new(seed, 17);
        let topic_producers = producers.len() - 1;
        for (index, producer) in producers.iter_mut().take(topic_producers).enumerate() {
            if producer.idempotence() && transactional.next_u32() % 3 == 0 {
                producer.transactional_id = Some(format!("tx-{index}"));
                producer.transaction_timeout_ms = crate::txn_coordinator::TRANSACTION_MAX_TIMEOUT_MS;
            }
        }
        let mut consumers = consumer_groups(&mut rng, &topics);
        assign_group_protocols(seed, &mut consumers);
        assign_commit_modes(seed, &mut consumers);
        assign_isolation(seed, &mut consumers);
        let mut topics = topics;
        add_pipeline(seed, safe, &mut topics, &mut producers, &mut consumers);
        let retention_check = small_storage(seed, &mut topics, &consumers);
        let (offsets_segment_bytes, cleaner_backoff) = internal_compaction(seed);
        let mut quota_rng = Rng::new(seed, 21);
        let quotas = default_quotas(&mut quota_rng);
        let config = ClusterConfig {
            brokers,
            controllers: 3,
            quotas,
            log_retention_check_interval_ms: retention_check.unwrap_or(300_000),
            offsets_topic_segment_bytes: offsets_segment_bytes,
            log_cleaner_backoff_ms: cleaner_backoff,
            topics,
            producers,
            consumers,
            offsets_topic_partitions: 3,
            transaction_state_partitions: 3,
            unclean_leader_election_enable: !safe && pick(&mut rng, 2) == 0,
            network: NetworkConfig::default(),
            ..ClusterConfig::default()
        };
        let mut config = config;
        let grow = partition_growth(seed, &mut config);
        let (mut features, switch) = transaction_feature(seed, &mut config);
        let mut inputs = schedule(&config, &mut rng, mix);
        inputs.extend(grow);
        inputs.extend(switch);
        // Some cases cut the power of one broker now and then (a minority
        // of every partition's replicas): what its logs had not flushed is
        // gone from its disk, and nothing acknowledged may be lost. Some
        // topics flush every few records (`flush.messages`), so a power
        // loss keeps part of a log. From a stream of its own.
        if matches!(mix, Mix::All | Mix::Brokers) {
            inputs.extend(power_losses(&mut config, &mut Rng::new(seed, 24)));
        }
        inputs.extend(lost_responses(seed, &config));
        inputs.extend(transaction_inputs(&config, &mut transactional, &mut features));
        inputs.extend(quota_backlog(&config, &mut quota_rng));
        crate::sorting::sort_by_key(&mut inputs, |input| input.at_ms);
        let mut case = FuzzCase {
            seed,
            config,
            safe,
            inputs,
            burst_at_ms: FAULTS_END_MS + RECOVERY_WINDOW_MS,
            check_at_ms: FAULTS_END_MS + RECOVERY_WINDOW_MS + SETTLE_MS,
        };
        case.inputs.extend(case.healing());
        case.inputs.extend(case.burst());
        case
    }

    /// Everything restarted and healed at [`FAULTS_END_MS`].
    fn healing(&self) -> Vec<ScheduledInput> {
        let at = |input| ScheduledInput {
            at_ms: FAULTS_END_MS,
            input,
        };
        let mut inputs = vec![at(Input::HealNetwork), at(Input::DropMessages { per_million: 0 })];
        inputs.extend(all_nodes(&self.config).into_iter().map(|node| {
            at(Input::SlowNode {
                node,
                extra_latency_ms: 0,
            })
        }));
        inputs.extend((1..=self.config.brokers).map(|broker| at(Input::RestartBroker { broker })));
        // A controlled shutdown that a fault held up may finish just after
        // the faults end: that broker is started again a little later.
        for sweep in [LATE_RESTART_MS, FINAL_RESTART_MS] {
            inputs.extend((1..=self.config.brokers).map(|broker| ScheduledInput {
                at_ms: FAULTS_END_MS + sweep,
                input: Input::RestartBroker { broker },
            }));
        }
        inputs.extend((1..=self.config.controllers).map(|controller| at(Input::RestartController { controller })));
        inputs.extend((0..self.config.consumers.len() as u32).map(|consumer| at(Input::StartConsumer { consumer })));
        // An application that stopped on a fatal error after the faults
        // ended is started again by its supervisor, as a deployment would:
        // a static member whose new member id a failed-over coordinator
        // never persisted gets FENCED_INSTANCE_ID on its next join, which
        // Kafka's client treats as fatal (`JoinGroupResponseHandler`;
        // `GroupMetadataManager#validateExistingMember`).
        for sweep in [LATE_RESTART_MS, FINAL_RESTART_MS] {
            inputs.extend((0..self.config.consumers.len() as u32).map(|consumer| ScheduledInput {
                at_ms: FAULTS_END_MS + sweep,
                input: Input::StartConsumer { consumer },
            }));
        }
        // Likewise a transactional producer's application: a coordinator
        // left on a broker cut off from the controller can answer `EndTxn`
        // with INVALID_TXN_STATE, which Kafka's client treats as fatal
        // (`TransactionManager.EndTxnHandler`); the supervisor starts a
        // new instance, whose `initTransactions()` fences the old one.
        for (producer, config) in self.config.producers.iter().enumerate() {
            if config.transactional_id.is_some() && !is_output_producer(&self.config, producer) {
                inputs.push(ScheduledInput {
                    at_ms: FAULTS_END_MS + LATE_RESTART_MS,
                    input: Input::RestartProducer {
                        producer: producer as u32,
                    },
                });
            }
        }
        // Handlers are fast again.
        inputs.extend((0..self.config.consumers.len() as u32).map(|consumer| {
            at(Input::SetConfig(ConfigChange::ProcessingMsPerRecord {
                consumer,
                value: 0,
            }))
        }));
        inputs
    }

    /// Two keyed records to every partition of each producer's topic, from
    /// every producer.
    fn burst(&self) -> Vec<ScheduledInput> {
        let mut inputs = Vec::new();
        for (index, producer) in self.config.producers.iter().enumerate() {
            // A pipeline's producer sends only what its app makes.
            if is_output_producer(&self.config, index) {
                continue;
            }
            let configured = self
                .config
                .topics
                .iter()
                .find(|topic| topic.name == producer.topic)
                .map_or(1, |topic| topic.partitions);
            // Partitions an operator added count too.
            let partitions = self
                .inputs
                .iter()
                .filter_map(|input| match &input.input {
                    Input::CreatePartitions { topic, count } if *topic == producer.topic => Some(*count),
                    _ => None,
                })
                .fold(configured, u32::max);
            for partition in 0..partitions {
                inputs.push(ScheduledInput {
                    at_ms: self.burst_at_ms,
                    input: Input::Produce {
                        producer: index as u32,
                        key: Some(key_for(partition, partitions)),
                        count: 2,
                        bytes: 100,
                    },
                });
            }
            // A transactional producer commits the burst (again later, in
            // case a commit still under way held the burst for the next
            // transaction).
            if producer.transactional_id.is_some() {
                for after in [5_000, 20_000, 40_000] {
                    inputs.push(ScheduledInput {
                        at_ms: self.burst_at_ms + after,
                        input: Input::CommitTransaction { producer: index as u32 },
                    });
                }
            }
        }
        inputs
    }

    /// The same schedule on a larger cluster: at least `brokers` brokers
    /// and `partitions` partitions a topic (never fewer than generated, so
    /// every input still names a broker and a partition that exist). The
    /// sweep over large shapes (`kafkascope fuzz --brokers --partitions`).
    pub fn at_shape(mut self, brokers: Option<u32>, partitions: Option<u32>) -> FuzzCase {
        if let Some(brokers) = brokers {
            self.config.brokers = self.config.brokers.max(brokers);
        }
        if let Some(partitions) = partitions {
            for topic in &mut self.config.topics {
                topic.partitions = topic.partitions.max(partitions);
            }
        }
        self
    }

    /// Runs the case and judges it.
    pub fn run(&self) -> Verdict {
        match self.simulate() {
            Ok((_, verdict)) => verdict,
            Err(error) => Verdict {
                safety: vec![format!("the generated cluster is invalid: {error}")],
                ..Verdict::default()
            },
        }
    }

    /// The hash of the trace the case's run records (see
    /// [`Simulation::trace_hash`]), 0 for an invalid cluster: equal
    /// hashes before and after a change to the engine mean the change
    /// moved no behaviour (the trace-hash test keeps one per seed).
    pub fn trace_hash(&self) -> u64 {
        self.simulate().map_or(0, |(simulation, _)| simulation.trace_hash())
    }

    /// Runs the case to its check and judges it, keeping the simulation.
    fn simulate(&self) -> Result<(Simulation, Verdict), String> {
        let mut simulation = Simulation::new(self.config.clone(), self.seed)?;
        simulation.set_trace_options(super::TraceOptions { messages: false });
        if self.safe {
            simulation.keep_history();
        }
        for input in &self.inputs {
            simulation.schedule(input.clone());
        }
        simulation.run_until(OPERATOR_AT_MS);
        let operator = if self.operator_acted() {
            Vec::new()
        } else {
            operator_elections(&simulation)
        };
        for input in &operator {
            simulation.schedule(input.clone());
        }
        simulation.run_until(self.burst_at_ms.saturating_sub(1));
        let first_burst_record = simulation.records().len() as u64;
        simulation.run_until(self.check_at_ms);
        // An unclean election may lose acknowledged records, as Kafka's
        // does; the monitor still reports every loss.
        // So may a correlated power loss: every replica of a partition cut
        // at once, or every replica that could lead one down and the one
        // elected power-cut (its unflushed records gone with it). Each
        // loss is still named in the ledger.
        let silent = simulation.final_loss_audit();
        let correlated = simulation.monitor.correlated_power_loss();
        let safe = self.safe && operator.is_empty() && !self.operator_acted() && !correlated;
        let mut verdict = Verdict {
            safety: safety_failures(&simulation, safe),
            liveness: liveness_failures(&simulation, first_burst_record, safe),
            events: simulation.events_processed(),
            operator,
            across_epoch_duplicates: super::checks::across_epoch_duplicates(&simulation),
            unchecked_reorders: 0,
            correlated_power_loss: correlated,
            lost_to_power: simulation.monitor.lost_to_power.len(),
        };
        // Safe or not, no loss may be silent: one the checks after each
        // event missed is a failure even where losses are allowed.
        if !silent.is_empty() {
            verdict.safety.push(format!(
                "acknowledged records lost with no cause named until the final audit: {}",
                super::trace::ranges(&silent)
            ));
        }
        // Jepsen's checks over the history: in a safe cluster, any anomaly
        // they find (what Kafka's design allows aside) is a safety failure.
        if safe {
            if let Some(jepsen) = simulation.jepsen_verdict() {
                verdict.unchecked_reorders = jepsen
                    .allowed
                    .iter()
                    .filter(|finding| finding.kind == crate::history::AnomalyKind::UncheckedSequence)
                    .count() as u64;
                verdict.safety.extend(
                    jepsen
                        .findings
                        .iter()
                        .map(|finding| format!("Jepsen's checks: {finding}")),
                );
            }
        }
        verdict.safety.truncate(10);
        verdict.liveness.truncate(10);
        Ok((simulation, verdict))
    }

    /// Whether the inputs already hold the operator's elections.
    fn operator_acted(&self) -> bool {
        self.inputs
            .iter()
            .any(|input| matches!(input.input, Input::ElectLeaders { .. }))
    }

    /// The case with the operator's elections among its inputs, as its
    /// scenario file replays it.
    pub fn with_operator(mut self) -> FuzzCase {
        let operator = self.run().operator;
        self.inputs.extend(operator);
        self
    }

    /// The case as a scenario file that `kafkascope run` replays, expecting
    /// what the fuzzer expects (so a failing case fails there too).
    pub fn scenario(&self) -> Scenario {
        let mut expect = vec![
            Expectation::NoInvariantViolations,
            Expectation::Recovers {
                burst_at_ms: self.burst_at_ms,
            },
        ];
        if self.safe && !self.operator_acted() {
            expect.insert(0, Expectation::NoRecordsLost);
            expect.push(Expectation::NoJepsenAnomalies);
        }
        Scenario {
            name: format!("Fuzz seed {}", self.seed),
            description: format!(
                "A fault schedule found by `cargo xtask fuzz` (seed {}). Faults end at {} ms and everything is healed then; \
                 at {} ms every producer sends to every partition; by {} ms all of it must be acknowledged and read.",
                self.seed, FAULTS_END_MS, self.burst_at_ms, self.check_at_ms
            ),
            seed: self.seed,
            config: self.config.clone(),
            inputs: self.inputs.clone(),
            run_until_ms: self.check_at_ms,
            expect,
            story: None,
        }
    }
}

/// Whether producer `index` is a consume-transform-produce app's.
fn is_output_producer(config: &ClusterConfig, index: usize) -> bool {
    config
        .consumers
        .iter()
        .any(|consumer| consumer.output_producer == Some(index as u32))
}

fn all_nodes(config: &ClusterConfig) -> Vec<NodeId> {
    let mut nodes: Vec<NodeId> = (1..=config.brokers).map(NodeId::Broker).collect();
    nodes.extend((1..=config.controllers).map(NodeId::Controller));
    nodes.extend((0..config.producers.len() as u32).map(NodeId::Producer));
    nodes.extend((0..config.consumers.len() as u32).map(NodeId::Consumer));
    nodes
}

/// Random faults before [`FAULTS_END_MS`], with produce requests among them.
fn schedule(config: &ClusterConfig, rng: &mut Rng, mix: Mix) -> Vec<ScheduledInput> {
    let nodes = all_nodes(config);
    let servers: Vec<NodeId> = nodes
        .iter()
        .copied()
        .filter(|node| matches!(node, NodeId::Broker(_) | NodeId::Controller(_)))
        .collect();
    let mut inputs = Vec::new();
    let mut time = 0;
    // A pipeline's output producer sends only what its app makes (a send
    // of its own would open a transaction no one ends, as a real app's
    // producer never gets one).
    let producers: Vec<u32> = (0..config.producers.len() as u32 - 1)
        .filter(|&producer| !is_output_producer(config, producer as usize))
        .collect();
    let consumers = config.consumers.len() as u32;
    loop {
        time += u64::from(rng.next_u32() % 3_000) + 100;
        if time >= FAULTS_END_MS {
            break;
        }
        let kind = rng.next_u32() % 20;
        let fault = match (mix, kind) {
            (_, 0..=3) => {
                let producer = producers
                    .get((rng.next_u32() as usize) % producers.len().max(1))
                    .copied();
                let count = rng.next_u32() % 20 + 1;
                producer.map(|producer| Input::Produce {
                    producer,
                    key: None,
                    count,
                    bytes: 100,
                })
            }
            (Mix::All | Mix::Brokers, 4) => Some(Input::KillBroker {
                broker: rng.next_u32() % config.brokers + 1,
            }),
            (Mix::All | Mix::Brokers, 5) => Some(Input::RestartBroker {
                broker: rng.next_u32() % config.brokers + 1,
            }),
            (Mix::All | Mix::Brokers, 6) => Some(Input::PauseBroker {
                broker: rng.next_u32() % config.brokers + 1,
                duration_ms: u64::from(rng.next_u32() % 15_000),
            }),
            (Mix::All | Mix::Controllers, 7) => Some(Input::KillController {
                controller: rng.next_u32() % config.controllers + 1,
            }),
            (Mix::All | Mix::Controllers, 8) => Some(Input::RestartController {
                controller: rng.next_u32() % config.controllers + 1,
            }),
            (Mix::All | Mix::Network, 9) => {
                let a = nodes[rng.next_u32() as usize % nodes.len()];
                let b = servers[rng.next_u32() as usize % servers.len()];
                Some(Input::CutLink { a, b })
            }
            (Mix::All | Mix::Network, 10) => Some(Input::Partition {
                side: nodes.iter().copied().filter(|_| rng.next_u32() % 2 == 0).collect(),
            }),
            (Mix::All | Mix::Network, 11) => Some(Input::HealNetwork),
            (Mix::All | Mix::Network, 12) => Some(Input::DropMessages {
                per_million: [0, 10_000, 50_000][rng.next_u32() as usize % 3],
            }),
            (Mix::All | Mix::Network, 13) => Some(Input::SlowNode {
                node: nodes[rng.next_u32() as usize % nodes.len()],
                extra_latency_ms: u64::from(rng.next_u32() % 200),
            }),
            (Mix::All | Mix::Clients, 14) if consumers > 0 => Some(Input::CrashConsumer {
                consumer: rng.next_u32() % consumers,
            }),
            (Mix::All | Mix::Clients, 15) if consumers > 0 => Some(Input::StartConsumer {
                consumer: rng.next_u32() % consumers,
            }),
            // A graceful stop, early enough to finish before the faults end.
            (Mix::All | Mix::Brokers, 16) if time + 10_000 < FAULTS_END_MS => Some(Input::StopBroker {
                broker: rng.next_u32() % config.brokers + 1,
            }),
            // A crash and a restart inside the broker's session.
            (Mix::All | Mix::Brokers, 17) => {
                let broker = rng.next_u32() % config.brokers + 1;
                let back = time + u64::from(rng.next_u32() % 5_000);
                if back < FAULTS_END_MS {
                    inputs.push(ScheduledInput {
                        at_ms: back,
                        input: Input::RestartBroker { broker },
                    });
                }
                Some(Input::KillBroker { broker })
            }
            // A garbage-collection pause, sometimes past the session timeout.
            (Mix::All | Mix::Clients, 18) if consumers > 0 => Some(Input::PauseConsumer {
                consumer: rng.next_u32() % consumers,
                duration_ms: u64::from(rng.next_u32() % 30_000),
            }),
            // A handler slows down (sometimes past max.poll.interval.ms).
            (Mix::All | Mix::Clients, 19) if consumers > 0 => {
                Some(Input::SetConfig(ConfigChange::ProcessingMsPerRecord {
                    consumer: rng.next_u32() % consumers,
                    value: [0, 20, 200, 1_000][rng.next_u32() as usize % 4],
                }))
            }
            _ => None,
        };
        if let Some(input) = fault {
            inputs.push(ScheduledInput { at_ms: time, input });
        }
    }
    crate::sorting::sort_by_key(&mut inputs, |input| input.at_ms);
    inputs
}

/// Power losses in one case of three, with `flush.messages` on some
/// topics: of one broker at a time (once or twice), or, in one such case
/// of four, of every broker at once (a data centre's power failure, what
/// replication cannot protect from). Each broker restarts within ten
/// seconds (or at the healing).
fn power_losses(config: &mut ClusterConfig, rng: &mut Rng) -> Vec<ScheduledInput> {
    let mut inputs = Vec::new();
    if rng.next_u32() % 3 != 0 {
        return inputs;
    }
    for topic in &mut config.topics {
        if rng.next_u32() % 3 == 0 {
            topic.flush_messages = Some(1 + u64::from(rng.next_u32() % 20));
        }
    }
    let cuts: Vec<Vec<BrokerId>> = if rng.next_u32() % 4 == 0 {
        vec![(1..=config.brokers).collect()]
    } else {
        (0..1 + rng.next_u32() % 2)
            .map(|_| vec![rng.next_u32() % config.brokers + 1])
            .collect()
    };
    for brokers in cuts {
        let at_ms = u64::from(rng.next_u32()) % FAULTS_END_MS;
        inputs.push(ScheduledInput {
            at_ms,
            input: Input::PowerLoss {
                brokers: brokers.clone(),
            },
        });
        for broker in brokers {
            let back = at_ms + u64::from(rng.next_u32() % 10_000);
            if back < FAULTS_END_MS {
                inputs.push(ScheduledInput {
                    at_ms: back,
                    input: Input::RestartBroker { broker },
                });
            }
        }
    }
    inputs
}

/// The operator's `kafka-leader-election --election-type unclean` for every
/// partition with no leader and an empty ISR and ELR (KIP-966's intended
/// outage: in Kafka 4.1 such a partition waits for an operator, or for
/// `unclean.leader.election.enable`).
fn operator_elections(simulation: &Simulation) -> Vec<ScheduledInput> {
    let partitions: Vec<PartitionRef> = simulation
        .controller()
        .partitions
        .iter()
        .filter(|(_, registration)| {
            registration.leader.is_none() && registration.isr.is_empty() && registration.elr.is_empty()
        })
        .map(|(partition, _)| PartitionRef {
            topic: partition.topic.to_string(),
            partition: partition.partition,
        })
        .collect();
    if partitions.is_empty() {
        return Vec::new();
    }
    vec![ScheduledInput {
        at_ms: simulation.now() + 1,
        input: Input::ElectLeaders {
            election_type: ElectionType::Unclean,
            partitions,
        },
    }]
}

/// Shrinks a failing case: drops fault inputs one at a time while the case
/// still fails the same way (safety or liveness). The healing and the burst
/// stay.
pub fn minimise(case: &FuzzCase) -> FuzzCase {
    let class = case.run().class();
    if class == "passed" {
        return case.clone().with_operator();
    }
    let mut best = case.clone();
    loop {
        let mut shrunk = false;
        let mut index = 0;
        while index < best.inputs.len() {
            if best.inputs[index].at_ms >= FAULTS_END_MS {
                index += 1;
                continue;
            }
            let mut candidate = best.clone();
            candidate.inputs.remove(index);
            if candidate.run().class() == class {
                best = candidate;
                shrunk = true;
            } else {
                index += 1;
            }
        }
        if !shrunk {
            return best.with_operator();
        }
    }
}

/// Some groups speak the consumer protocol (KIP-848), with the
/// broker's default assignor or one asked for; from a stream of its
/// own so the rest of the schedule stays as it was.
fn assign_group_protocols(seed: u64, consumers: &mut [ConsumerConfig]) {
    let mut protocols = Rng::new(seed, 13);
    let groups: std::collections::BTreeSet<String> = consumers.iter().map(|consumer| consumer.group.clone()).gather();
    for group in groups {
        if protocols.next_u32() % 3 != 0 {
            continue;
        }
        let remote = [None, Some("uniform"), Some("range")][(protocols.next_u32() % 3) as usize];
        for consumer in consumers.iter_mut().filter(|consumer| consumer.group == group) {
            consumer.group_protocol = super::config::GroupProtocol::Consumer;
            consumer.group_remote_assignor = remote.map(str::to_string);
            consumer.group_instance_id = None;
        }
    }
}

/// Some groups commit by hand (before or after processing, sync or
/// async), some handlers are idempotent; from a stream of its own.
fn assign_commit_modes(seed: u64, consumers: &mut [ConsumerConfig]) {
    let mut commits = Rng::new(seed, 14);
    let groups: std::collections::BTreeSet<String> = consumers.iter().map(|consumer| consumer.group.clone()).gather();
    for group in groups {
        let mode = match commits.next_u32() % 6 {
            0 => super::config::CommitMode::BeforeProcessing,
            1 => super::config::CommitMode::AfterProcessing,
            2 => super::config::CommitMode::AfterProcessingAsync,
            _ => super::config::CommitMode::Auto,
        };
        let idempotent = commits.next_u32() % 4 == 0;
        for consumer in consumers.iter_mut().filter(|consumer| consumer.group == group) {
            consumer.commit_mode = mode;
            consumer.idempotent_handler = idempotent;
        }
    }
}

/// Some groups read with isolation.level=read_committed; from a
/// stream of its own.
fn assign_isolation(seed: u64, consumers: &mut [ConsumerConfig]) {
    let mut isolation = Rng::new(seed, 16);
    let groups: std::collections::BTreeSet<String> = consumers.iter().map(|consumer| consumer.group.clone()).gather();
    for group in groups {
        if isolation.next_u32() % 2 == 0 {
            for consumer in consumers.iter_mut().filter(|consumer| consumer.group == group) {
                consumer.isolation_level = crate::replication::transactions::IsolationLevel::ReadCommitted;
            }
        }
    }
}

/// Some safe cases run an exactly-once pipeline (KIP-98, KIP-447): a
/// group of two app instances reads t0 (read_committed) and writes one
/// output per record to its own topic through its own transactional
/// producer, with the offsets in the same transaction; from a stream of
/// its own.
fn add_pipeline(
    seed: u64,
    safe: bool,
    topics: &mut Vec<TopicConfig>,
    producers: &mut Vec<ProducerConfig>,
    consumers: &mut Vec<ConsumerConfig>,
) {
    let mut pipeline = Rng::new(seed, 18);
    // Only in safe configurations: where an unclean election may lose
    // a transaction coordinator's records, a transaction can hang for
    // good, as Kafka's can (what KIP-890 and `kafka-transactions.sh
    // abort` are for).
    if pipeline.next_u32() % 3 == 0 && safe {
        topics.push(TopicConfig {
            name: PIPELINE_TOPIC.to_string(),
            partitions: 1 + pipeline.next_u32() % 3,
            replication_factor: 3,
            min_insync_replicas: 2,
            ..TopicConfig::default()
        });
        let input = topics[0].name.clone();
        let processing = u64::from(pipeline.next_u32() % 3) * 20;
        for member in 0..2 {
            let mut producer = ProducerConfig::new(PIPELINE_TOPIC);
            producer.transactional_id = Some(format!("eos-{member}"));
            producer.transaction_timeout_ms = crate::txn_coordinator::TRANSACTION_MAX_TIMEOUT_MS;
            producer.max_in_flight_requests_per_connection = 1 + pipeline.next_u32() % 5;
            producers.push(producer);
            let mut consumer = ConsumerConfig::new(PIPELINE_GROUP, vec![input.clone()]);
            consumer.auto_offset_reset = OffsetReset::Earliest;
            consumer.commit_mode = super::config::CommitMode::Transactional;
            consumer.output_producer = Some(producers.len() as u32 - 1);
            consumer.isolation_level = crate::replication::transactions::IsolationLevel::ReadCommitted;
            consumer.processing_ms_per_record = processing;
            consumers.push(consumer);
        }
    }
}

/// Some topics keep little (small segments, retention by size or
/// time) and the brokers check retention often, so that segments
/// are deleted under faults; not the exactly-once pipeline's input,
/// whose every record must reach the output. From a stream of its own.
fn small_storage(seed: u64, topics: &mut [TopicConfig], consumers: &[ConsumerConfig]) -> Option<u64> {
    let mut storage = Rng::new(seed, 19);
    let pipeline_input = consumers
        .iter()
        .find(|consumer| consumer.output_producer.is_some())
        .and_then(|consumer| consumer.topics.first().cloned());
    let mut retention_check = None;
    for topic in topics.iter_mut() {
        if storage.next_u32() % 3 != 0 || Some(&topic.name) == pipeline_input.as_ref() || topic.name == PIPELINE_TOPIC {
            continue;
        }
        topic.internal_segment_bytes = Some(300 + u64::from(storage.next_u32() % 2_000));
        match storage.next_u32() % 3 {
            0 => topic.retention_bytes = 1_000 + i64::from(storage.next_u32() % 4_000),
            1 => topic.retention_ms = 2_000 + i64::from(storage.next_u32() % 30_000),
            _ => {
                topic.retention_bytes = 1_000 + i64::from(storage.next_u32() % 4_000);
                topic.retention_ms = 2_000 + i64::from(storage.next_u32() % 30_000);
            }
        }
        retention_check = Some(1_000 + u64::from(storage.next_u32() % 9_000));
    }
    retention_check
}

/// Some cases give the internal topics small segments and a busy
/// cleaner, so that `__consumer_offsets` and `__transaction_state`
/// are compacted under faults and coordinators that fail over
/// replay compacted logs. From a stream of its own.
fn internal_compaction(seed: u64) -> (u64, u64) {
    let mut compaction = Rng::new(seed, 20);
    if compaction.next_u32() % 3 == 0 {
        (
            400 + u64::from(compaction.next_u32() % 3_000),
            1_000 + u64::from(compaction.next_u32() % 9_000),
        )
    } else {
        (100 * 1024 * 1024, 15_000)
    }
}

/// Some cases put every client under default byte-rate quotas, so
/// that throttled answers and muted connections meet faults. From a
/// stream of its own.
fn default_quotas(quota_rng: &mut Rng) -> Vec<ClientQuota> {
    if quota_rng.next_u32() % 3 == 0 {
        // At least batch.size (16384) over the ten seconds a fetch may
        // take in bytes: a batch larger than that is always
        // throttled and never read, in Kafka as here (the first batch
        // of an answer is sent whole, whatever `fetch.max.bytes`).
        let mut rate = || 1_700 + u64::from(quota_rng.next_u32() % 2_300);
        let (produce, fetch) = (rate(), rate());
        let quota = match quota_rng.next_u32() % 3 {
            0 => ClientQuota {
                client_id: None,
                producer_byte_rate: Some(produce),
                consumer_byte_rate: None,
            },
            1 => ClientQuota {
                client_id: None,
                producer_byte_rate: None,
                consumer_byte_rate: Some(fetch),
            },
            _ => ClientQuota {
                client_id: None,
                producer_byte_rate: Some(produce),
                consumer_byte_rate: Some(fetch),
            },
        };
        vec![quota]
    } else {
        Vec::new()
    }
}

/// Some cases have an operator add partitions to a topic, during the
/// faults or soon after, and give the clients a short
/// `metadata.max.age.ms` so they find the new partitions before the
/// check. From a stream of its own.
fn partition_growth(seed: u64, config: &mut ClusterConfig) -> Option<ScheduledInput> {
    let mut growth = Rng::new(seed, 22);
    // A static group leader that rejoins after the change (a restart, a
    // poll timeout) does so without computing an assignment (KIP-814)
    // and takes the metadata it has then as its snapshot, so it never
    // notices the new partitions, in Kafka as here: cases with static
    // members add none.
    let statics = config
        .consumers
        .iter()
        .any(|consumer| consumer.group_instance_id.is_some());
    (growth.next_u32() % 4 == 0 && !statics).then(|| {
        let max_age = 5_000 + u64::from(growth.next_u32() % 25_000);
        for producer in &mut config.producers {
            producer.metadata_max_age_ms = max_age;
        }
        for consumer in &mut config.consumers {
            consumer.metadata_max_age_ms = max_age;
        }
        let topic = &config.topics[(growth.next_u32() as usize) % config.topics.len()];
        ScheduledInput {
            at_ms: u64::from(growth.next_u32()) % (FAULTS_END_MS + 20_000),
            input: Input::CreatePartitions {
                topic: topic.name.clone(),
                count: topic.partitions + 1 + growth.next_u32() % 3,
            },
        }
    })
}

/// Lost produce responses (the retry an idempotent producer's
/// sequences make harmless), from a stream of their own.
fn lost_responses(seed: u64, config: &ClusterConfig) -> Vec<ScheduledInput> {
    let mut inputs = Vec::new();
    let mut responses = Rng::new(seed, 15);
    let pipeline_producers = config
        .consumers
        .iter()
        .filter(|consumer| consumer.output_producer.is_some())
        .count() as u32;
    for producer in 0..config.producers.len() as u32 - 1 - pipeline_producers {
        for _ in 0..responses.next_u32() % 3 {
            inputs.push(ScheduledInput {
                at_ms: u64::from(responses.next_u32()) % FAULTS_END_MS,
                input: Input::LoseProduceResponse { producer },
            });
        }
    }
    inputs
}

/// Transactional producers commit or abort now and then (not a
/// pipeline's: its app does that).
fn transaction_inputs(config: &ClusterConfig, transactional: &mut Rng, features: &mut Rng) -> Vec<ScheduledInput> {
    let mut inputs = Vec::new();
    for (producer, producer_config) in config.producers.iter().enumerate() {
        if producer_config.transactional_id.is_none() || is_output_producer(&config, producer) {
            continue;
        }
        for _ in 0..1 + transactional.next_u32() % 4 {
            let producer = producer as u32;
            inputs.push(ScheduledInput {
                at_ms: u64::from(transactional.next_u32()) % FAULTS_END_MS,
                input: if transactional.next_u32() % 3 == 0 {
                    Input::AbortTransaction { producer }
                } else {
                    Input::CommitTransaction { producer }
                },
            });
        }
        // Now and then one of its produce requests waits in a broker's
        // queue past its timeout and lands late: the write KIP-890's
        // verification keeps out of a transaction that has ended.
        if features.next_u32() % 3 == 0 {
            inputs.push(ScheduledInput {
                at_ms: u64::from(features.next_u32()) % FAULTS_END_MS,
                input: Input::StallProduce {
                    producer: producer as u32,
                    delay_ms: 1_000 + u64::from(features.next_u32() % 60_000),
                },
            });
        }
    }
    inputs
}

/// Under quotas, a backlog: one large send that a consumer reads in
/// more bytes than its quota lets through, so it is throttled. Few
/// records (a handler slowed to a second a record must still get
/// through them before the check).
fn quota_backlog(config: &ClusterConfig, quota_rng: &mut Rng) -> Option<ScheduledInput> {
    if !config.quotas.is_empty() && config.producers[0].transactional_id.is_none() && !is_output_producer(&config, 0) {
        return Some(ScheduledInput {
            at_ms: u64::from(quota_rng.next_u32()) % FAULTS_END_MS,
            input: Input::Produce {
                producer: 0,
                key: None,
                count: 20 + quota_rng.next_u32() % 30,
                bytes: 1_000 + quota_rng.next_u32() % 1_000,
            },
        });
    }
    None
}

/// One or two consumer groups of one to three members each, with an eager
/// assignor or the cooperative one (KIP-429).
fn consumer_groups(rng: &mut Rng, topics: &[TopicConfig]) -> Vec<ConsumerConfig> {
    let assignors = ["range", "roundrobin", "sticky", "cooperative-sticky"];
    let mut consumers = Vec::new();
    for group in 0..1 + pick(rng, 2) {
        let subscribed: Vec<String> = topics
            .iter()
            .filter(|_| pick(rng, 3) != 0)
            .map(|topic| topic.name.clone())
            .collect();
        let subscribed = if subscribed.is_empty() {
            vec![topics[0].name.clone()]
        } else {
            subscribed
        };
        let assignor = assignors[pick(rng, assignors.len() as u32) as usize];
        // Some groups have static members (KIP-345), some a short
        // max.poll.interval.ms that a slow handler overruns.
        let static_members = pick(rng, 3) == 0;
        let max_poll_interval_ms = if pick(rng, 3) == 0 { 5_000 } else { 300_000 };
        for member in 0..1 + pick(rng, 3) {
            let mut consumer = ConsumerConfig::new(format!("g{group}"), subscribed.clone());
            consumer.assignor = assignor.to_string();
            consumer.auto_offset_reset = OffsetReset::Earliest;
            if static_members {
                consumer.group_instance_id = Some(format!("g{group}-member-{member}"));
            }
            consumer.max_poll_interval_ms = max_poll_interval_ms;
            consumers.push(consumer);
        }
    }
    consumers
}

/// A number below `bound` from the case's main stream.
fn pick(rng: &mut Rng, bound: u32) -> u32 {
    rng.next_u32() % bound
}

/// Transaction version 2, as a new Kafka 4.1 cluster runs, in three cases
/// of four, version 1 in the rest; now and then an operator changes it
/// mid-run (`kafka-features`), which each producer follows at its next
/// transaction boundary. From a stream of its own, returned with the
/// change (the transaction inputs draw from it next).
fn transaction_feature(seed: u64, config: &mut ClusterConfig) -> (Rng, Option<ScheduledInput>) {
    let mut features = Rng::new(seed, 23);
    let version_1 = features.next_u32() % 4 == 0;
    config.transaction_version = if version_1 {
        crate::protocol::transactions::TransactionVersion::TV_1
    } else {
        crate::protocol::transactions::TransactionVersion::TV_2
    };
    let switch = (features.next_u32() % 6 == 0).then(|| ScheduledInput {
        at_ms: u64::from(features.next_u32()) % (FAULTS_END_MS + 20_000),
        input: Input::SetConfig(crate::sim::config::ConfigChange::TransactionVersion {
            level: if version_1 { 2 } else { 1 },
        }),
    });
    (features, switch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases_are_deterministic_and_end_their_faults_in_time() {
        let case = FuzzCase::generate(42, Mix::All);
        assert_eq!(case, FuzzCase::generate(42, Mix::All));
        assert!(case
            .inputs
            .iter()
            .filter(|input| {
                !matches!(
                    input.input,
                    Input::Produce { .. }
                        | Input::RestartBroker { .. }
                        | Input::StartConsumer { .. }
                        | Input::CommitTransaction { .. }
                )
            })
            .all(|input| input.at_ms <= FAULTS_END_MS));
        assert!(case.config.validate().is_ok());
    }

    #[test]
    fn burst_keys_reach_every_partition() {
        for partitions in 1..=4 {
            for partition in 0..partitions {
                let key = key_for(partition, partitions);
                assert_eq!(
                    partition_for_key(&RecordKey::Text(key).serialize(), partitions),
                    Some(partition)
                );
            }
        }
    }
}
