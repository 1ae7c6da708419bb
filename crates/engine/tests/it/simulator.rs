//! The cluster simulator: the shipped scenarios give their stated outcomes
//! and golden traces, runs are deterministic, and randomized fault
//! schedules never break the safety invariants of a safe configuration.

use std::path::{Path, PathBuf};

use kafkascope_engine::random::Rng;
use kafkascope_engine::sim::config::{
    ClusterConfig, ConfigChange, ConsumerConfig, Input, OffsetReset, ProducerConfig, ScheduledInput, TopicConfig,
};
use kafkascope_engine::sim::scenario::Scenario;
use kafkascope_engine::sim::trace::{ChangeReason, ConsumerChange, ControllerChange, FencingReason, TraceKind};
use kafkascope_engine::sim::types::{ErrorCode, MessageName, NodeId};
use kafkascope_engine::sim::view::{ConsumerPhase, ProcessStatus, ReplicaRole, Role};
use kafkascope_engine::sim::Simulation;

fn scenarios_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios")
}

fn scenario_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(scenarios_dir())
        .expect("scenarios folder")
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|extension| extension == "json"))
        .collect();
    files.sort();
    files
}

/// A shipped scenario's cluster with all its inputs scheduled.
fn scheduled(file: &str) -> Simulation {
    let scenario = load(&scenarios_dir().join(file));
    let mut simulation = Simulation::new(scenario.config.clone(), scenario.seed).expect("valid");
    for input in &scenario.inputs {
        simulation.schedule(input.clone());
    }
    simulation
}

fn load(path: &Path) -> Scenario {
    Scenario::from_json(&std::fs::read_to_string(path).expect("read scenario")).expect("valid scenario")
}

/// Compares `actual` with the golden file, or rewrites it when
/// `KAFKASCOPE_BLESS=1`.
fn check_golden(path: &Path, actual: &str) {
    if std::env::var_os("KAFKASCOPE_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("golden folder");
        std::fs::write(path, actual).expect("write golden");
        return;
    }
    let expected = std::fs::read_to_string(path).unwrap_or_else(|_| {
        panic!(
            "missing golden file {}; run with KAFKASCOPE_BLESS=1 to create it",
            path.display()
        )
    });
    if expected != actual {
        let first_difference = expected
            .lines()
            .zip(actual.lines())
            .position(|(left, right)| left != right)
            .unwrap_or(expected.lines().count().min(actual.lines().count()));
        panic!(
            "{} differs from the run at line {}:\n  golden: {:?}\n  run:    {:?}\nIf the change is intended, rerun with KAFKASCOPE_BLESS=1.",
            path.display(),
            first_difference + 1,
            expected.lines().nth(first_difference),
            actual.lines().nth(first_difference)
        );
    }
}

#[test]
fn every_shipped_scenario_gives_its_stated_outcome_and_golden_trace() {
    let files = scenario_files();
    assert!(files.len() >= 4, "{files:?}");
    for file in files {
        let scenario = load(&file);
        let outcome = scenario.run().expect("the scenario runs");
        assert!(
            outcome.failures.is_empty(),
            "{}: {:?}",
            file.display(),
            outcome.failures
        );
        let trace: String = outcome
            .simulation
            .trace()
            .iter()
            .map(|event| event.line() + "\n")
            .collect();
        let stem = file.file_stem().expect("stem").to_string_lossy().into_owned();
        let golden = scenarios_dir().join("golden");
        check_golden(&golden.join(format!("{stem}.trace")), &trace);
        check_golden(
            &golden.join(format!("{stem}.hash")),
            &format!("{:016x}\n", outcome.simulation.trace_hash()),
        );
    }
}

#[test]
fn a_story_block_names_only_what_its_scenario_has() {
    let text = std::fs::read_to_string(scenarios_dir().join("acks1-leader-crash-loses-records.json")).expect("read");
    let good = Scenario::from_json(&text).expect("valid");
    let story = good.story.clone().expect("a story");
    assert_eq!(story.id, "acks1-loss");
    let with = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut value: serde_json::Value = serde_json::from_str(&text).expect("json");
        edit(&mut value);
        Scenario::from_json(&value.to_string())
    };
    let error = with(&|value| value["story"]["chapters"][0]["input"] = 7.into()).expect_err("no input 7");
    assert!(
        error.contains("story.chapters[0].input is 7, but the scenario has 7 inputs"),
        "{error}"
    );
    let error = with(&|value| value["story"]["id"] = "Acks 1!".into()).expect_err("not a link id");
    assert!(error.contains("story.id \"Acks 1!\" must be lower-case"), "{error}");
    let error = with(&|value| value["story"]["focus"] = "orders-9".into()).expect_err("no such partition");
    assert!(error.contains("story.focus \"orders-9\" is no partition"), "{error}");
    let error = with(&|value| value["story"]["chapter"] = 1.into()).expect_err("unknown field");
    assert!(error.contains("unknown field `chapter`"), "{error}");
    // A scenario without the block is no story, and runs the same.
    let plain = with(&|value| {
        value.as_object_mut().expect("object").remove("story");
    })
    .expect("valid");
    assert_eq!(plain.story, None);
    assert_eq!(
        plain.run().expect("runs").simulation.trace_hash(),
        good.run().expect("runs").simulation.trace_hash()
    );
}

#[test]
fn the_same_seed_and_inputs_give_the_same_trace() {
    for file in scenario_files() {
        let scenario = load(&file);
        let first = scenario.run().expect("runs").simulation.trace_hash();
        let second = scenario.run().expect("runs").simulation.trace_hash();
        assert_eq!(first, second, "{}", file.display());
    }
}

/// A safe configuration: RF 3, min.insync.replicas 2, acks=all,
/// idempotence, clean elections only.
fn safe_config() -> ClusterConfig {
    ClusterConfig {
        brokers: 3,
        topics: vec![TopicConfig {
            name: "orders".into(),
            partitions: 2,
            replication_factor: 3,
            min_insync_replicas: 2,
            ..TopicConfig::default()
        }],
        producers: vec![ProducerConfig::new("orders")],
        consumers: (0..2)
            .map(|_| {
                let mut consumer = ConsumerConfig::new("billing", vec!["orders".into()]);
                consumer.auto_offset_reset = OffsetReset::Earliest;
                consumer
            })
            .collect(),
        offsets_topic_partitions: 3,
        ..ClusterConfig::default()
    }
}

/// A random schedule of faults and produce requests over `horizon_ms`.
fn fault_schedule(seed: u64, horizon_ms: u64) -> Vec<ScheduledInput> {
    let mut rng = Rng::new(seed, 7);
    let mut inputs = Vec::new();
    let mut time = 0;
    let broker = |rng: &mut Rng| rng.next_u32() % 3 + 1;
    while time < horizon_ms {
        time += u64::from(rng.next_u32() % 3_000) + 100;
        let input = match rng.next_u32() % 15 {
            13 => Input::KillController {
                controller: rng.next_u32() % 3 + 1,
            },
            14 => Input::RestartController {
                controller: rng.next_u32() % 3 + 1,
            },
            0..=3 => Input::Produce {
                producer: 0,
                key: None,
                count: rng.next_u32() % 20 + 1,
                bytes: 100,
            },
            4 => Input::KillBroker {
                broker: broker(&mut rng),
            },
            5 => Input::RestartBroker {
                broker: broker(&mut rng),
            },
            6 => Input::PauseBroker {
                broker: broker(&mut rng),
                duration_ms: u64::from(rng.next_u32() % 15_000),
            },
            7 => Input::CutLink {
                a: NodeId::Broker(broker(&mut rng)),
                b: NodeId::Broker(broker(&mut rng)),
            },
            8 => Input::HealNetwork,
            9 => Input::DropMessages {
                per_million: [0, 10_000, 50_000][rng.next_u32() as usize % 3],
            },
            11 if rng.next_u32() % 2 == 0 => Input::CrashConsumer {
                consumer: rng.next_u32() % 2,
            },
            11 => Input::StartConsumer {
                consumer: rng.next_u32() % 2,
            },
            10 => Input::Partition {
                side: (1..=3)
                    .filter(|_| rng.next_u32() % 2 == 0)
                    .map(NodeId::Broker)
                    .collect(),
            },
            _ => Input::SlowNode {
                node: NodeId::Broker(broker(&mut rng)),
                extra_latency_ms: u64::from(rng.next_u32() % 200),
            },
        };
        inputs.push(ScheduledInput { at_ms: time, input });
    }
    // Let the cluster recover at the end: everyone back, network healed.
    for broker in 1..=3 {
        inputs.push(ScheduledInput {
            at_ms: horizon_ms,
            input: Input::RestartBroker { broker },
        });
    }
    inputs.push(ScheduledInput {
        at_ms: horizon_ms,
        input: Input::HealNetwork,
    });
    inputs.push(ScheduledInput {
        at_ms: horizon_ms,
        input: Input::DropMessages { per_million: 0 },
    });
    inputs
}

fn run_fault_seed(seed: u64) -> Result<(), String> {
    let horizon = 40_000;
    let mut simulation = Simulation::new(safe_config(), seed).map_err(|error| error.to_string())?;
    for input in fault_schedule(seed, horizon) {
        simulation.schedule(input);
    }
    simulation.run_until(horizon + 30_000);
    if std::env::var_os("KAFKASCOPE_PRINT_TRACE").is_some() {
        for event in simulation.trace() {
            println!("{}", event.line());
        }
    }
    let summary = simulation.summary();
    let violations: Vec<String> = simulation
        .trace()
        .iter()
        .filter(|event| {
            matches!(
                event.kind,
                TraceKind::InvariantViolated { .. } | TraceKind::RecordsLost { .. }
            )
        })
        .map(|event| event.line())
        .collect();
    if summary.invariant_violations > 0 || summary.lost > 0 || !violations.is_empty() {
        return Err(violations.join("\n"));
    }
    Ok(())
}

#[test]
fn randomized_fault_schedules_keep_a_safe_configuration_safe() {
    // KAFKASCOPE_SEED=n replays one seed; KAFKASCOPE_SEEDS=n runs more.
    let seeds: Vec<u64> = match std::env::var("KAFKASCOPE_SEED").ok().and_then(|seed| seed.parse().ok()) {
        Some(seed) => vec![seed],
        None => {
            let count = std::env::var("KAFKASCOPE_SEEDS")
                .ok()
                .and_then(|count| count.parse().ok())
                .unwrap_or(500);
            (0..count).collect()
        }
    };
    for seed in seeds {
        if let Err(report) = run_fault_seed(seed) {
            panic!(
                "seed {seed} broke a safety invariant:\n{report}\nreplay it with: KAFKASCOPE_SEED={seed} cargo test -p kafkascope-engine --test it randomized_fault_schedules"
            );
        }
    }
}

mod recording {
    use kafkascope_engine::sim::config::{Input, ScheduledInput};
    use kafkascope_engine::sim::recording::Recording;
    use kafkascope_engine::sim::trace::hash;
    use kafkascope_engine::sim::Simulation;

    use super::{fault_schedule, safe_config};

    fn recording(seed: u64) -> Recording {
        let mut simulation = Simulation::new(safe_config(), seed).expect("valid");
        for input in fault_schedule(seed, 20_000) {
            simulation.schedule(input);
        }
        Recording::new(simulation, 500)
    }

    #[test]
    fn rewinding_and_replaying_reaches_the_same_state() {
        let mut straight = recording(3);
        straight.run_until(40_000);
        let end = straight.position();
        let final_hash = hash(straight.trace());

        let mut scrubbed = recording(3);
        scrubbed.seek(end / 2);
        let middle_hash = hash(scrubbed.trace());
        scrubbed.seek(end);
        scrubbed.seek(end / 3);
        scrubbed.seek(end / 2);
        assert_eq!(
            hash(scrubbed.trace()),
            middle_hash,
            "the middle, reached again after a rewind"
        );
        scrubbed.seek(end);
        assert_eq!(
            hash(scrubbed.trace()),
            final_hash,
            "the end, reached again after rewinds"
        );
        assert_eq!(scrubbed.simulation().summary(), straight.simulation().summary());
    }

    #[test]
    fn a_seek_lands_on_the_exact_event() {
        let mut straight = recording(5);
        straight.run_until(40_000);
        for target in [0, 1, 777, straight.position() / 2, straight.position() - 1] {
            let mut seeking = straight.clone();
            seeking.seek(target);
            assert_eq!(seeking.position(), target);
            let prefix = &straight.trace()[..seeking.trace().len()];
            assert_eq!(hash(seeking.trace()), hash(prefix), "event {target}");
        }
    }

    #[test]
    fn forking_replaces_the_future() {
        let mut original = recording(9);
        original.run_until(40_000);
        let end_hash = hash(original.trace());

        let mut fork = recording(9);
        fork.seek(original.position() / 2);
        let now = fork.simulation().now();
        fork.fork(vec![ScheduledInput {
            at_ms: now + 1,
            input: Input::KillBroker { broker: 1 },
        }]);
        fork.run_until(40_000);
        assert_ne!(hash(fork.trace()), end_hash, "a different future");
        assert!(fork
            .trace()
            .iter()
            .any(|event| event.line().contains("input: kill broker-1")));
        // A fork keeps the past exactly.
        let past = fork.trace().iter().take_while(|event| event.time <= now).count();
        assert_eq!(hash(&fork.trace()[..past]), hash(&original.trace()[..past]));
    }

    /// A seek to just after a fork (before the next snapshot) replays the
    /// new future, not the old one from the snapshot before the fork: a
    /// story link with two forks replayed the first fork's future wrongly
    /// when it went back for the second.
    #[test]
    fn a_seek_just_after_a_fork_replays_the_forked_future() {
        let mut fork = recording(9);
        // Not on a snapshot: 500 events apart.
        fork.seek(1_234);
        let at = fork.position();
        let now = fork.simulation().now();
        fork.fork(vec![ScheduledInput {
            at_ms: now,
            input: Input::KillBroker { broker: 1 },
        }]);
        fork.run_until(40_000);
        let forked = fork.trace().to_vec();
        let end = fork.position();
        for target in [at + 1, at + 10, at + 300, at] {
            fork.seek(target);
            assert_eq!(fork.position(), target);
            fork.seek(end);
            assert_eq!(hash(fork.trace()), hash(&forked), "after a seek to {target}");
        }
        // A second fork after the first keeps the first's future before it.
        fork.seek(at + 50);
        let second_at = fork.simulation().now();
        fork.fork(vec![ScheduledInput {
            at_ms: second_at,
            input: Input::KillBroker { broker: 2 },
        }]);
        fork.run_until(40_000);
        let kept = fork.trace().iter().take_while(|event| event.time < second_at).count();
        assert_eq!(hash(&fork.trace()[..kept]), hash(&forked[..kept]));
        assert!(fork
            .trace()
            .iter()
            .any(|event| event.line().contains("input: kill broker-1")));
    }
}

/// Three brokers, one `orders` topic with `partitions` partitions, one
/// producer and one consumer in group `billing` reading from the earliest.
pub(crate) fn billing_config(partitions: u32) -> ClusterConfig {
    let mut consumer = ConsumerConfig::new("billing", vec!["orders".into()]);
    consumer.auto_offset_reset = OffsetReset::Earliest;
    ClusterConfig {
        topics: vec![TopicConfig {
            name: "orders".into(),
            partitions,
            replication_factor: 3,
            min_insync_replicas: 2,
            ..TopicConfig::default()
        }],
        producers: vec![ProducerConfig::new("orders")],
        consumers: vec![consumer],
        offsets_topic_partitions: 3,
        ..ClusterConfig::default()
    }
}

#[test]
fn committed_offsets_survive_a_consumer_restart() {
    let config = billing_config(1);
    let mut simulation = Simulation::new(config, 11).expect("valid");
    let at = |at_ms, input| ScheduledInput { at_ms, input };
    simulation.schedule(at(
        100,
        Input::Produce {
            producer: 0,
            key: None,
            count: 20,
            bytes: 100,
        },
    ));
    simulation.schedule(at(9_000, Input::StopConsumer { consumer: 0 }));
    simulation.schedule(at(
        10_000,
        Input::Produce {
            producer: 0,
            key: None,
            count: 10,
            bytes: 100,
        },
    ));
    simulation.schedule(at(12_000, Input::StartConsumer { consumer: 0 }));
    simulation.run_until(25_000);
    let consumer = &simulation.consumers()[0];
    // 20 before the restart, then only the 10 new ones: it resumed from its
    // committed offset instead of reading from the start again.
    assert_eq!(
        consumer.records_read,
        30,
        "{}",
        simulation
            .trace()
            .iter()
            .map(|e| e.line())
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(simulation
        .trace()
        .iter()
        .any(|event| event.line().contains("OffsetFetchResponse group=billing orders-0=20")));
    assert_eq!(consumer.lag().values().sum::<u64>(), 0);
    assert_eq!(simulation.summary().invariant_violations, 0);
}

#[test]
fn the_cluster_view_reports_what_the_happy_path_ends_with() {
    let outcome = load(&scenarios_dir().join("happy-path.json")).run().expect("runs");
    let view = outcome.simulation.view();
    assert_eq!(view.brokers.len(), 3);
    assert!(view
        .brokers
        .iter()
        .all(|broker| broker.status == ProcessStatus::Running && !broker.fenced));
    assert!(!view.partitions.is_empty());
    for partition in &view.partitions {
        let leader = partition.leader.expect("every partition has a leader");
        assert!(partition.isr.contains(&leader), "{partition:?}");
        // The leader's replica reports the role the controller gave it.
        let replica = view
            .brokers
            .iter()
            .find(|broker| broker.id == leader)
            .and_then(|broker| {
                broker
                    .replicas
                    .iter()
                    .find(|replica| replica.partition == partition.partition)
            })
            .expect("the leader hosts the partition");
        assert_eq!(replica.role, ReplicaRole::Leader);
        assert!(replica.high_watermark <= replica.log_end_offset);
    }
    assert_eq!(
        view.controllers
            .iter()
            .filter(|controller| controller.role == Role::Leader)
            .count(),
        1
    );
    assert_eq!(view.time_ms, outcome.simulation.now());
    // The view is plain data: it survives a JSON round trip unchanged.
    let json = serde_json::to_string(&view).expect("serializes");
    assert!(json.contains("\"partitions\""));
}

/// The broker leading the group's `__consumer_offsets` partition: its
/// coordinator.
pub(crate) fn coordinator_of(simulation: &Simulation, group: &str, offsets_partitions: u32) -> u32 {
    let partition =
        kafkascope_engine::groups::coordinator_partition(group, offsets_partitions).expect("partitions > 0");
    let name = format!("__consumer_offsets-{partition}");
    simulation
        .view()
        .partitions
        .iter()
        .find(|view| view.partition == name)
        .and_then(|view| view.leader)
        .expect("the offsets partition has a leader")
}

#[test]
fn a_consumer_whose_coordinator_dies_finds_the_new_one_and_reads_on() {
    // Killed while the JoinGroup waits out the initial rebalance delay, and
    // killed while the group consumes: both times the member's requests die
    // with the connection, and it must look for the coordinator again.
    for kill_at in [1_500, 20_000] {
        let config = billing_config(3);
        let mut simulation = Simulation::new(config, 7).expect("valid");
        simulation.schedule(ScheduledInput {
            at_ms: 100,
            input: Input::Produce {
                producer: 0,
                key: None,
                count: 30,
                bytes: 100,
            },
        });
        simulation.run_until(kill_at);
        let coordinator = coordinator_of(&simulation, "billing", 3);
        simulation.schedule(ScheduledInput {
            at_ms: kill_at,
            input: Input::KillBroker { broker: coordinator },
        });
        simulation.run_until(kill_at + 40_000);
        let view = simulation.view();
        let member = &view.consumers[0];
        assert_eq!(
            member.phase,
            ConsumerPhase::Consuming,
            "killed at {kill_at}: {member:?}"
        );
        assert_eq!(member.partitions.len(), 3, "killed at {kill_at}: {member:?}");
        assert!(member.records_read >= 30, "killed at {kill_at}: {member:?}");
        assert_ne!(coordinator_of(&simulation, "billing", 3), coordinator);
        assert_eq!(simulation.summary().invariant_violations, 0);
    }
}

#[test]
fn a_consumer_added_mid_run_joins_and_the_group_splits_the_partitions() {
    let mut simulation = Simulation::new(billing_config(2), 3).expect("valid");
    simulation.run_until(10_000);
    assert_eq!(simulation.view().consumers[0].partitions.len(), 2);
    let mut second = ConsumerConfig::new("billing", vec!["orders".into()]);
    second.auto_offset_reset = OffsetReset::Earliest;
    simulation.schedule(ScheduledInput {
        at_ms: 10_000,
        input: Input::AddConsumer { consumer: second },
    });
    // Refused quietly: an unknown topic.
    simulation.schedule(ScheduledInput {
        at_ms: 10_000,
        input: Input::AddConsumer {
            consumer: ConsumerConfig::new("billing", vec!["nope".into()]),
        },
    });
    simulation.run_until(30_000);
    let view = simulation.view();
    assert_eq!(view.consumers.len(), 2);
    for consumer in &view.consumers {
        assert_eq!(consumer.phase, ConsumerPhase::Consuming, "{consumer:?}");
        assert_eq!(consumer.partitions.len(), 1, "{consumer:?}");
    }
    assert_eq!(simulation.summary().invariant_violations, 0);
}

/// The fault fuzzer over `KAFKASCOPE_FUZZ_SEEDS` seeds (500 by default; one
/// with `KAFKASCOPE_FUZZ_SEED=n`), on both cores: random clusters under
/// random faults that all end at 40 s; safety must hold in every case, and
/// once everything has healed the cluster must acknowledge a burst to every
/// partition and every group must read everything (liveness). A failing
/// seed is printed with the command that replays and minimises it.
#[test]
fn the_fault_fuzzer_finds_every_cluster_safe_and_recovered() {
    use kafkascope_engine::sim::fuzz::{FuzzCase, Mix};
    let seeds: Vec<u64> = match std::env::var("KAFKASCOPE_FUZZ_SEED")
        .ok()
        .and_then(|seed| seed.parse().ok())
    {
        Some(seed) => vec![seed],
        None => {
            let count: u64 = std::env::var("KAFKASCOPE_FUZZ_SEEDS")
                .ok()
                .and_then(|count| count.parse().ok())
                .unwrap_or(500);
            (0..count).collect()
        }
    };
    let verdicts = crate::per_seed_on_threads(&seeds, |seed| FuzzCase::generate(seed, Mix::All).run());
    let mut safety = Vec::new();
    let mut liveness = Vec::new();
    for (seed, verdict) in &verdicts {
        if !verdict.safety.is_empty() {
            safety.push(format!("seed {seed}: {}", verdict.safety.join("; ")));
        } else if !verdict.liveness.is_empty() {
            liveness.push(format!("seed {seed}: {}", verdict.liveness[0]));
        }
    }
    liveness.sort();
    println!(
        "fuzz: {} seeds, {} safety failures, {} liveness failures (replay one: cargo xtask fuzz --from N --seeds 1)",
        seeds.len(),
        safety.len(),
        liveness.len()
    );
    for line in &liveness {
        println!("  liveness {line}");
    }
    assert!(safety.is_empty(), "safety failures:\n{}", safety.join("\n"));
    assert!(liveness.is_empty(), "liveness failures:\n{}", liveness.join("\n"));
}

/// Each behaviour the recovery work fixed has a scenario in
/// `scenarios/recovery/`, a fault schedule the fuzzer found and minimised
/// while the behaviour was wrong: no acknowledged record lost where the
/// cluster is safe, and everything acknowledged and read once the faults
/// heal (`kafkascope run` replays each one).
#[test]
fn every_recovery_scenario_recovers() {
    let dir = scenarios_dir().join("recovery");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("scenarios/recovery")
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|extension| extension == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 9, "expected the recovery scenarios, found {files:?}");
    for path in files {
        let scenario = load(&path);
        assert!(
            scenario.expect.iter().any(|expectation| matches!(
                expectation,
                kafkascope_engine::sim::scenario::Expectation::Recovers { .. }
            )),
            "{} checks no recovery",
            path.display()
        );
        let outcome = scenario.run().expect("runs");
        assert!(
            outcome.failures.is_empty(),
            "{}: {}",
            path.display(),
            outcome.failures.join("; ")
        );
    }
}

mod producer_config {
    use kafkascope_engine::replication::high_watermark::Acks;
    use kafkascope_engine::sim::config::{ClusterConfig, ProducerConfig, TopicConfig};

    fn cluster(producer: ProducerConfig) -> ClusterConfig {
        ClusterConfig {
            topics: vec![TopicConfig {
                name: "orders".into(),
                partitions: 1,
                replication_factor: 3,
                min_insync_replicas: 2,
                ..TopicConfig::default()
            }],
            producers: vec![producer],
            ..ClusterConfig::default()
        }
    }

    /// Kafka 4.1's producer defaults (`ProducerConfig`, KIP-1030 for linger.ms).
    #[test]
    fn producer_defaults_are_kafka_4_1s() {
        let producer = ProducerConfig::new("orders");
        assert_eq!(producer.acks, Acks::All);
        assert_eq!(producer.linger_ms, 5);
        assert_eq!(producer.batch_size, 16_384);
        assert_eq!(producer.request_timeout_ms, 30_000);
        assert_eq!(producer.delivery_timeout(), 120_000);
        assert_eq!(producer.retry_backoff_ms, 100);
        assert_eq!(producer.max_in_flight_requests_per_connection, 5);
        assert!(producer.idempotence());
        let parsed: ProducerConfig = serde_json::from_str(r#"{"topic":"orders"}"#).expect("parses");
        assert_eq!(parsed, producer);
    }

    /// `ProducerConfig#postProcessAndValidateIdempotenceConfigs`: acks other
    /// than all quietly turns the default idempotence off, but an explicit
    /// enable.idempotence=true with it is refused with Kafka's message.
    #[test]
    fn idempotence_with_acks_other_than_all_is_refused_only_when_asked_for() {
        let mut producer = ProducerConfig::new("orders");
        producer.acks = Acks::Leader;
        assert!(!producer.idempotence());
        assert!(cluster(producer.clone()).validate().is_ok());
        producer.enable_idempotence = Some(true);
        let error = cluster(producer).validate().expect_err("refused");
        assert_eq!(
            error,
            "producer 0: Must set acks to all in order to use the idempotent producer. Otherwise we cannot guarantee idempotence."
        );
    }

    /// `ProducerConfig#postProcessAndValidateIdempotenceConfigs` as of 4.0
    /// (KAFKA-17927): more than 5 requests in flight per connection are
    /// refused whether idempotence is the default or set; only an explicit
    /// enable.idempotence=false allows them. 0 is refused (`atLeast(1)`).
    #[test]
    fn more_than_five_in_flight_requests_are_refused_unless_idempotence_is_off() {
        let mut producer = ProducerConfig::new("orders");
        producer.max_in_flight_requests_per_connection = 6;
        assert!(producer.idempotence(), "the default stays on");
        let refused =
            "producer 0: Must set max.in.flight.requests.per.connection to at most 5 to use the idempotent producer.";
        assert_eq!(cluster(producer.clone()).validate().expect_err("refused"), refused);
        producer.enable_idempotence = Some(true);
        assert_eq!(cluster(producer.clone()).validate().expect_err("refused"), refused);
        producer.enable_idempotence = Some(false);
        assert!(cluster(producer.clone()).validate().is_ok());
        producer.enable_idempotence = None;
        producer.acks = Acks::Leader;
        assert!(!producer.idempotence(), "acks=1 still turns the default off");
        assert!(cluster(producer.clone()).validate().is_ok());
        producer.max_in_flight_requests_per_connection = 0;
        let error = cluster(producer).validate().expect_err("refused");
        assert_eq!(
            error,
            "producer 0: Invalid value 0 for configuration max.in.flight.requests.per.connection: Value must be at least 1"
        );
    }

    /// `KafkaProducer#configureDeliveryTimeout`: an explicit
    /// delivery.timeout.ms below linger.ms + request.timeout.ms is refused;
    /// the default is raised to that sum instead.
    #[test]
    fn delivery_timeout_below_linger_plus_request_timeout_is_refused() {
        let mut producer = ProducerConfig::new("orders");
        producer.delivery_timeout_ms = Some(10_000);
        let error = cluster(producer.clone()).validate().expect_err("refused");
        assert_eq!(
            error,
            "producer 0: delivery.timeout.ms should be equal to or larger than linger.ms + request.timeout.ms"
        );
        producer.delivery_timeout_ms = None;
        producer.request_timeout_ms = 200_000;
        assert_eq!(producer.delivery_timeout(), 200_005);
        assert!(cluster(producer).validate().is_ok());
    }
}

/// `NetworkClient#handleTimedOutRequests`: a consumer whose fetch is held
/// by a leader that stopped answering (a long pause) gives up after
/// `request.timeout.ms` (30 s), disconnects, finds the new leader the
/// controller elected meanwhile, and reads on — long before the old leader
/// wakes up.
#[test]
fn a_consumer_request_with_no_answer_times_out_and_the_consumer_moves_on() {
    let config = billing_config(1);
    let mut simulation = Simulation::new(config, 5).expect("valid");
    simulation.run_until(10_000);
    let leader = simulation
        .controller()
        .partitions
        .values()
        .next()
        .and_then(|p| p.leader)
        .expect("a leader");
    let pause_at = 10_000;
    simulation.schedule(ScheduledInput {
        at_ms: pause_at,
        input: Input::PauseBroker {
            broker: leader,
            duration_ms: 90_000,
        },
    });
    simulation.schedule(ScheduledInput {
        at_ms: pause_at + 12_000,
        input: Input::Produce {
            producer: 0,
            key: None,
            count: 5,
            bytes: 100,
        },
    });
    simulation.run_until(pause_at + 60_000);
    let read = simulation.consumers()[0].records_read;
    assert_eq!(
        read, 5,
        "the consumer read {read} of the 5 records written to the new leader"
    );
    assert!(simulation.trace().iter().any(|event| matches!(
        &event.kind,
        TraceKind::ConsumerStatus {
            status: ConsumerChange::TimedOut { .. },
            ..
        }
    )));
}

/// `ClusterControlManager#registerBroker`: a broker restarted inside its
/// old session is refused (`DUPLICATE_BROKER_REGISTRATION`) until that
/// session expires and is fenced, so leadership moves off the old process;
/// then it registers with a new broker epoch, catches up and is unfenced.
#[test]
fn a_broker_restarted_inside_its_session_waits_for_it_to_expire_and_gets_a_new_epoch() {
    let config = billing_config(3);
    let mut simulation = Simulation::new(config, 8).expect("valid");
    simulation.run_until(5_000);
    let old_epoch = simulation.controller().brokers[&1].epoch;
    let led_before: Vec<_> = simulation
        .controller()
        .partitions
        .iter()
        .filter(|(_, registration)| registration.leader == Some(1))
        .map(|(partition, _)| partition.clone())
        .collect();
    assert!(!led_before.is_empty(), "broker-1 should lead something in this seed");
    let at = |at_ms, input| ScheduledInput { at_ms, input };
    simulation.schedule(at(5_000, Input::KillBroker { broker: 1 }));
    simulation.schedule(at(6_000, Input::RestartBroker { broker: 1 }));
    simulation.run_until(40_000);
    let refused = simulation.trace().iter().any(|event| {
        matches!(&event.kind, TraceKind::Sent { summary, .. } if summary.contains("DUPLICATE_BROKER_REGISTRATION"))
    });
    assert!(
        refused,
        "the restarted broker was not refused while its old session was valid"
    );
    let fenced_for_session = simulation.trace().iter().any(|event| {
        matches!(
            &event.kind,
            TraceKind::BrokerFencing {
                broker: 1,
                fenced: true,
                reason: FencingReason::SessionExpired { .. }
            }
        )
    });
    assert!(fenced_for_session, "the old session should expire and be fenced");
    for partition in &led_before {
        let registration = &simulation.controller().partitions[partition];
        assert!(registration.leader_epoch > 0, "{partition} kept its old leader epoch");
    }
    let state = &simulation.controller().brokers[&1];
    assert!(state.epoch > old_epoch, "a new broker epoch");
    assert!(!state.fenced, "registered again and unfenced");
    assert_eq!(simulation.summary().lost, 0);
}

/// KIP-704 (`Partition#makeLeader`, `PartitionRegistration#merge`): a
/// partition led by an unclean election is RECOVERING, and stays so across
/// later changes until its leader reports itself recovered in an
/// AlterPartition (here, when a restarted follower catches up and joins
/// the ISR).
#[test]
fn an_uncleanly_elected_partition_recovers_when_its_leader_reports_it() {
    let mut simulation = scheduled("unclean-election-truncates.json");
    let recovering = |simulation: &Simulation| {
        simulation
            .view()
            .partitions
            .iter()
            .any(|partition| partition.recovering)
    };
    simulation.run_until(25_000);
    assert!(
        recovering(&simulation),
        "after the unclean election the partition is RECOVERING"
    );
    simulation.schedule(ScheduledInput {
        at_ms: 25_000,
        input: Input::RestartBroker { broker: 2 },
    });
    simulation.run_until(40_000);
    let partition = &simulation.view().partitions[0];
    assert!(
        partition.isr.len() >= 2,
        "the restarted follower rejoined: {:?}",
        partition.isr
    );
    assert!(
        !partition.recovering,
        "the leader reported recovery with the ISR change"
    );
}

/// KRaft replication by fetching (KIP-595, `KafkaRaftClient`): an active
/// controller cut off from the other voters keeps appending what brokers
/// ask of it, but nothing it writes commits; the others elect a new leader,
/// and when the links heal the old leader learns the new epoch, fetches,
/// is told where its log diverged and truncates its uncommitted entries
/// (`ReplicatedLog#truncateToEndOffset`). Brokers, observers fetching the
/// log, follow the new leader.
#[test]
fn a_cut_off_active_controller_truncates_its_uncommitted_metadata_when_it_rejoins() {
    let config = billing_config(3);
    let mut simulation = Simulation::new(config, 8).expect("valid");
    simulation.run_until(1_000);
    let leader_of_something = simulation
        .controller()
        .partitions
        .values()
        .find_map(|registration| registration.leader)
        .expect("a leader");
    let at = |at_ms, input| ScheduledInput { at_ms, input };
    for other in [2, 3] {
        simulation.schedule(at(
            1_000,
            Input::CutLink {
                a: NodeId::Controller(1),
                b: NodeId::Controller(other),
            },
        ));
    }
    // The broker asks controller-1, still active as far as it knows, for a
    // controlled shutdown: controller-1 appends that, uncommitted.
    simulation.schedule(at(
        1_100,
        Input::StopBroker {
            broker: leader_of_something,
        },
    ));
    simulation.schedule(at(8_000, Input::HealNetwork));
    simulation.run_until(30_000);
    let trace = simulation.trace();
    let truncated = trace.iter().any(|event| {
        matches!(
            &event.kind,
            TraceKind::ControllerStatus {
                controller: 1,
                status: ControllerChange::TruncatedMetadataLog { .. }
            }
        )
    });
    assert!(truncated, "controller-1 should truncate what it wrote alone");
    let view = simulation.view();
    let active = view
        .controllers
        .iter()
        .find(|controller| controller.role == Role::Leader)
        .expect("an active controller");
    assert_ne!(active.id, 1, "a new leader was elected while controller-1 was cut off");
    let old = view
        .controllers
        .iter()
        .find(|controller| controller.id == 1)
        .expect("controller-1");
    assert_eq!(old.leader, Some(active.id), "controller-1 follows the new leader");
    assert_eq!(old.committed, active.committed, "and has caught up");
    let observers: Vec<NodeId> = active
        .fetchers
        .iter()
        .filter(|fetcher| !fetcher.voter)
        .map(|fetcher| fetcher.node)
        .collect();
    assert!(
        observers.len() >= 2,
        "the running brokers fetch from the new leader as observers: {observers:?}"
    );
    for broker in view
        .brokers
        .iter()
        .filter(|broker| broker.status == ProcessStatus::Running)
    {
        assert_eq!(broker.metadata.controller, active.id);
        assert_eq!(
            broker.metadata.high_watermark, active.committed,
            "broker-{} caught up",
            broker.id
        );
    }
    // The controlled shutdown still happened, through the new leader.
    let stopped = view
        .brokers
        .iter()
        .find(|broker| broker.id == leader_of_something)
        .expect("the broker");
    assert_eq!(
        stopped.status,
        ProcessStatus::Dead,
        "the broker finished its controlled shutdown"
    );
    assert_eq!(simulation.summary().lost, 0);
}

/// `ClusterControlManager#registerBroker` → `handleBrokerUncleanShutdown`:
/// a broker that crashed comes back as a new incarnation with no
/// clean-shutdown epoch (`previousBrokerEpoch` -1), so the controller
/// treats it as an unclean shutdown (out of every ISR it can leave, not
/// electable); after a controlled shutdown it reports its last epoch and
/// is not. (With ELR off, a crashed broker has usually been fenced out of
/// its ISRs before its new registration is accepted, so the removal seldom
/// finds anything left to do.)
#[test]
fn a_broker_back_from_a_crash_leaves_every_isr_but_not_after_a_controlled_shutdown() {
    let at = |at_ms, input| ScheduledInput { at_ms, input };
    let mut crashed = Simulation::new(billing_config(3), 8).expect("valid");
    crashed.run_until(2_000);
    crashed.schedule(at(2_000, Input::KillBroker { broker: 2 }));
    crashed.schedule(at(2_200, Input::RestartBroker { broker: 2 }));
    crashed.run_until(30_000);
    let unclean = crashed.trace().iter().any(|event| {
        matches!(&event.kind, TraceKind::Sent { summary, .. } if summary.contains("BrokerRegistration broker=2") && summary.contains("previousBrokerEpoch=-1"))
    });
    assert!(unclean, "the crashed broker registers with no clean-shutdown epoch");
    assert!(!crashed.controller().brokers[&2].fenced, "and is back, unfenced");
    // A controlled shutdown, then a restart: it reports its epoch and
    // keeps its ISR places until it catches up.
    let mut clean = Simulation::new(billing_config(3), 8).expect("valid");
    clean.run_until(2_000);
    let epoch = clean.controller().brokers[&2].epoch;
    clean.schedule(at(2_000, Input::StopBroker { broker: 2 }));
    clean.schedule(at(8_000, Input::RestartBroker { broker: 2 }));
    clean.run_until(20_000);
    let reported = clean.trace().iter().any(|event| {
        matches!(&event.kind, TraceKind::Sent { summary, .. } if summary.contains(&format!("previousBrokerEpoch={epoch}")))
    });
    assert!(reported, "the cleanly stopped broker reports its last epoch");
    let removed_at_registration = clean.trace().iter().any(|event| {
        matches!(
            &event.kind,
            TraceKind::IsrChanged {
                reason: ChangeReason::UncleanRestart { .. },
                ..
            }
        )
    });
    assert!(!removed_at_registration);
    assert_eq!(clean.summary().lost, 0);
}

/// The leader and the followers of a one-partition cluster's partition.
fn leader_and_followers(simulation: &Simulation) -> (u32, Vec<u32>) {
    let registration = simulation
        .controller()
        .partitions
        .values()
        .next()
        .expect("one partition");
    let leader = registration.leader.expect("a leader");
    let followers = registration
        .replicas
        .iter()
        .copied()
        .filter(|&replica| replica != leader)
        .collect();
    (leader, followers)
}

/// A one-partition cluster at 60 s whose partition has no leader: the
/// followers died at 1 s, the leader shrank the ISR to itself and died at
/// 30 s, and the followers came back at 31 s. Returns the followers.
fn leaderless_with_its_isr_dead(config: ClusterConfig) -> (Simulation, Vec<u32>) {
    let mut simulation = Simulation::new(config, 3).expect("valid");
    let at = |at_ms, input| ScheduledInput { at_ms, input };
    simulation.run_until(1_000);
    let (leader, followers) = leader_and_followers(&simulation);
    for &follower in &followers {
        simulation.schedule(at(1_000, Input::KillBroker { broker: follower }));
    }
    simulation.schedule(at(30_000, Input::KillBroker { broker: leader }));
    for &follower in &followers {
        simulation.schedule(at(31_000, Input::RestartBroker { broker: follower }));
    }
    simulation.run_until(60_000);
    (simulation, followers)
}

/// `QuorumController#maybeScheduleNextElectUncleanLeaders`: switching on
/// `unclean.leader.election.enable` elects nothing at once; the active
/// controller's periodic pass (`unclean.leader.election.interval.ms`)
/// elects the leaderless partition from outside its ISR.
#[test]
fn unclean_election_waits_for_the_controllers_periodic_pass() {
    let mut config = billing_config(1);
    config.consumers.clear();
    config.unclean_leader_election_interval_ms = 20_000;
    let (mut simulation, followers) = leaderless_with_its_isr_dead(config);
    let at = |at_ms, input| ScheduledInput { at_ms, input };
    let partition = |simulation: &Simulation| simulation.controller().partitions.values().next().expect("one").clone();
    assert_eq!(
        partition(&simulation).leader,
        None,
        "offline: its only ISR member is dead"
    );
    simulation.schedule(at(
        60_000,
        Input::SetConfig(ConfigChange::UncleanLeaderElection { enable: true }),
    ));
    simulation.run_until(70_000);
    assert_eq!(
        partition(&simulation).leader,
        None,
        "nothing is elected when the setting changes"
    );
    simulation.run_until(85_000);
    let after = partition(&simulation);
    assert!(
        after.leader.is_some_and(|leader| followers.contains(&leader)),
        "the periodic pass elects a follower uncleanly: {after:?}"
    );
    let by_the_pass = simulation.trace().iter().any(|event| {
        matches!(
            &event.kind,
            TraceKind::LeaderElected {
                unclean: true,
                reason: ChangeReason::UncleanPass,
                ..
            }
        )
    });
    assert!(by_the_pass);
}

/// `ReplicationControlManager#electLeader`: an operator's
/// `kafka-leader-election --election-type unclean` elects a live replica
/// for a partition whose only ISR member is dead, whatever
/// `unclean.leader.election.enable` says; asked again, it answers `ELECTION_NOT_NEEDED` for a
/// partition it names and says nothing when it names none; a preferred
/// election whose first replica cannot lead answers
/// `PREFERRED_LEADER_NOT_AVAILABLE`.
#[test]
fn an_operators_unclean_election_brings_back_a_partition_whose_isr_is_dead() {
    use kafkascope_engine::sim::config::{ElectionType, PartitionRef};
    let mut config = billing_config(1);
    config.consumers.clear();
    let (mut simulation, followers) = leaderless_with_its_isr_dead(config);
    let at = |at_ms, input| ScheduledInput { at_ms, input };
    let partition = |simulation: &Simulation| {
        simulation
            .controller()
            .partitions
            .iter()
            .next()
            .map(|(p, r)| (p.clone(), r.clone()))
            .expect("one")
    };
    let (name, before) = partition(&simulation);
    assert_eq!(before.leader, None, "offline: its only ISR member is dead");
    let named = vec![PartitionRef {
        topic: name.topic.to_string(),
        partition: name.partition,
    }];
    simulation.schedule(at(
        60_000,
        Input::ElectLeaders {
            election_type: ElectionType::Unclean,
            partitions: Vec::new(),
        },
    ));
    simulation.run_until(62_000);
    let (_, after) = partition(&simulation);
    assert!(
        after.leader.is_some_and(|leader| followers.contains(&leader)),
        "the operator's election elects a follower uncleanly: {after:?}"
    );
    assert!(simulation.trace().iter().any(|event| matches!(
        &event.kind,
        TraceKind::LeaderElected {
            unclean: true,
            reason: ChangeReason::OperatorUnclean,
            ..
        }
    )));
    let refusals = |simulation: &Simulation| -> Vec<ErrorCode> {
        simulation
            .trace()
            .iter()
            .filter_map(|event| match &event.kind {
                TraceKind::ElectLeadersFailed { error, .. } => Some(*error),
                _ => None,
            })
            .collect()
    };
    assert!(refusals(&simulation).is_empty());
    simulation.schedule(at(
        63_000,
        Input::ElectLeaders {
            election_type: ElectionType::Unclean,
            partitions: Vec::new(),
        },
    ));
    simulation.schedule(at(
        64_000,
        Input::ElectLeaders {
            election_type: ElectionType::Unclean,
            partitions: named.clone(),
        },
    ));
    simulation.schedule(at(
        65_000,
        Input::ElectLeaders {
            election_type: ElectionType::Preferred,
            partitions: named,
        },
    ));
    simulation.run_until(66_000);
    let first_replica_leads = after.leader == after.replicas.first().copied();
    let expected = if first_replica_leads {
        vec![ErrorCode::ElectionNotNeeded, ErrorCode::ElectionNotNeeded]
    } else {
        vec![ErrorCode::ElectionNotNeeded, ErrorCode::PreferredLeaderNotAvailable]
    };
    assert_eq!(refusals(&simulation), expected);
    // min.insync.replicas=2 refused every write the followers missed, so
    // even this unclean election loses nothing acknowledged.
    assert_eq!(simulation.summary().lost, 0);
}

/// Eligible Leader Replicas (KIP-966, on for new clusters since Kafka 4.1,
/// and by default in the simulator;
/// `PartitionChangeBuilder#maybePopulateTargetElr`): a follower fenced out
/// of an ISR that is already below `min.insync.replicas` stays eligible to
/// lead, because the high watermark cannot have moved without it. When
/// the last ISR member dies too, the ISR may become empty, and the ELR
/// member is elected, cleanly, as soon as it is unfenced again.
#[test]
fn a_follower_fenced_below_min_isr_stays_eligible_and_leads_cleanly_later() {
    let mut config = billing_config(1);
    config.consumers.clear();
    config.eligible_leader_replicas_enable = true;
    let mut simulation = Simulation::new(config, 5).expect("valid");
    simulation.run_until(1_000);
    let (leader, followers) = leader_and_followers(&simulation);
    let (first, second) = (followers[0], followers[1]);
    let at = |at_ms, input| ScheduledInput { at_ms, input };
    let cut_from_controllers = |simulation: &mut Simulation, at_ms, broker| {
        for controller in 1..=3 {
            simulation.schedule(at(
                at_ms,
                Input::CutLink {
                    a: NodeId::Broker(broker),
                    b: NodeId::Controller(controller),
                },
            ));
        }
    };
    simulation.schedule(at(
        1_000,
        Input::Produce {
            producer: 0,
            key: None,
            count: 5,
            bytes: 100,
        },
    ));
    cut_from_controllers(&mut simulation, 2_000, first);
    cut_from_controllers(&mut simulation, 15_000, second);
    simulation.run_until(30_000);
    let partition = |simulation: &Simulation| simulation.controller().partitions.values().next().expect("one").clone();
    let shrunk = partition(&simulation);
    assert_eq!(shrunk.isr, vec![leader], "both followers fenced out of the ISR");
    assert_eq!(
        shrunk.elr,
        vec![second],
        "the one fenced below min.insync.replicas is eligible"
    );
    simulation.schedule(at(30_000, Input::KillBroker { broker: leader }));
    simulation.run_until(45_000);
    let empty = partition(&simulation);
    assert_eq!(empty.leader, None);
    assert!(empty.isr.is_empty(), "with ELR the ISR may become empty: {empty:?}");
    simulation.schedule(at(45_000, Input::HealNetwork));
    simulation.run_until(60_000);
    let after = partition(&simulation);
    assert_eq!(after.leader, Some(second), "the ELR member leads: {after:?}");
    let clean = simulation.trace().iter().any(|event| {
        matches!(&event.kind, TraceKind::LeaderElected { leader: Some(elected), unclean: false, .. } if *elected == second)
    });
    assert!(clean, "and its election is clean");
    assert_eq!(simulation.summary().lost, 0);
}

/// Pre-vote (KIP-996, `ProspectiveState`): a controller that loses its
/// leader first asks the voters whether it could win, without bumping its
/// epoch; cut off from them, it stays in its epoch however long it waits,
/// so it cannot disrupt the quorum when it comes back. A refused pre-vote
/// names the leader, and it follows it.
#[test]
fn a_cut_off_controller_asks_for_pre_votes_and_keeps_its_epoch() {
    let mut simulation = scheduled("cut-off-controller-truncates-uncommitted-metadata.json");
    simulation.run_until(7_900);
    let epoch_of = |simulation: &Simulation, id: u32| {
        simulation
            .view()
            .controllers
            .iter()
            .find(|controller| controller.id == id)
            .map(|controller| (controller.epoch, controller.role))
            .expect("a controller")
    };
    let (epoch, role) = epoch_of(&simulation, 1);
    assert_eq!(epoch, 1, "controller-1 kept its epoch while cut off");
    assert_eq!(role, Role::Prospective);
    let asked = simulation.trace().iter().any(|event| {
        matches!(&event.kind, TraceKind::Sent { from: NodeId::Controller(1), summary, .. } if summary.contains("preVote=true"))
    });
    assert!(asked, "it asked for pre-votes");
    simulation.run_until(12_000);
    let view = simulation.view();
    let active = view
        .controllers
        .iter()
        .find(|controller| controller.role == Role::Leader)
        .expect("a leader");
    let (epoch, role) = epoch_of(&simulation, 1);
    assert_eq!(
        (epoch, role),
        (active.epoch, Role::Follower),
        "back, it follows the leader's epoch"
    );
}

/// What `producer-0` sent (with its summary) and the answers delivered to
/// it, in trace order: time, message name, the broker, the summary.
fn producer_traffic(simulation: &Simulation) -> Vec<(u64, &'static str, NodeId, String)> {
    simulation
        .trace()
        .iter()
        .filter_map(|event| match &event.kind {
            TraceKind::Sent {
                from: NodeId::Producer(0),
                to,
                name,
                summary,
                ..
            } => Some((event.time, name.as_str(), *to, summary.clone())),
            TraceKind::Delivered {
                from,
                to: NodeId::Producer(0),
                name,
            } => Some((event.time, name.as_str(), *from, String::new())),
            _ => None,
        })
        .collect()
}

/// `RecordAccumulator#drain` and `Sender#sendProduceRequests`: the sender
/// takes, per leader, the first batch of every partition that broker leads
/// into ONE `Produce` request; the broker appends each partition's batch
/// and answers with ONE `ProduceResponse` naming every partition
/// (`KafkaApis#handleProduceRequest`, `DelayedProduce` for acks=all).
#[test]
fn one_produce_request_carries_a_batch_per_partition_to_their_leader_and_one_response_answers_them_all() {
    let mut config = billing_config(6);
    config.consumers.clear();
    let mut simulation = Simulation::new(config, 3).expect("valid");
    simulation.run_until(2_000);
    // 26 keys spread over the 6 partitions; each broker leads two.
    for (index, key) in ('a'..='z').enumerate() {
        simulation.schedule(ScheduledInput {
            at_ms: 2_000 + index as u64 % 2,
            input: Input::Produce {
                producer: 0,
                key: Some(format!("user-{key}")),
                count: 1,
                bytes: 100,
            },
        });
    }
    simulation.run_until(10_000);
    assert_eq!(simulation.summary().acknowledged, 26);
    let requests: Vec<(NodeId, String)> = producer_traffic(&simulation)
        .into_iter()
        .filter(|(_, name, _, _)| *name == "Produce")
        .map(|(_, _, to, summary)| (to, summary))
        .collect();
    assert_eq!(requests.len(), 3, "one request per leader: {requests:#?}");
    for (to, summary) in &requests {
        assert_eq!(summary.matches(" records=").count(), 2, "{to}: {summary}");
        assert!(summary.contains("acks=all timeoutMs=30000"), "{summary}");
    }
    let responses: Vec<&String> = simulation
        .trace()
        .iter()
        .filter_map(|event| match &event.kind {
            TraceKind::Sent {
                to: NodeId::Producer(0),
                name: MessageName::ProduceResponse,
                summary,
                ..
            } => Some(summary),
            _ => None,
        })
        .collect();
    assert_eq!(responses.len(), 3, "{responses:#?}");
    for response in responses {
        assert_eq!(response.matches("baseOffset=").count(), 2, "{response}");
    }
}

/// `NetworkClient#canSendRequest` (`InFlightRequests#canSendMore`): at most
/// `max.in.flight.requests.per.connection` produce requests await an
/// answer on one broker connection, however many batches wait; with
/// idempotence the partition's records still land in order
/// (`RecordAccumulator#shouldStopDrainBatchesForPartition`, the broker's
/// sequence checks).
#[test]
fn no_more_than_max_in_flight_requests_per_connection_await_an_answer_from_one_broker() {
    for max_in_flight in [5, 2, 1] {
        let mut config = billing_config(1);
        config.consumers.clear();
        config.producers[0].batch_size = 1_000;
        config.producers[0].max_in_flight_requests_per_connection = max_in_flight;
        let mut simulation = Simulation::new(config, 4).expect("valid");
        simulation.run_until(2_000);
        // 200 records of 100 bytes: 20 batches for the one partition.
        simulation.schedule(ScheduledInput {
            at_ms: 2_000,
            input: Input::Produce {
                producer: 0,
                key: Some("k".into()),
                count: 200,
                bytes: 100,
            },
        });
        simulation.run_until(20_000);
        assert_eq!(simulation.summary().acknowledged, 200, "max.in.flight={max_in_flight}");
        let mut outstanding = 0usize;
        let mut most = 0usize;
        for (_, name, _, _) in producer_traffic(&simulation) {
            match name {
                "Produce" => outstanding += 1,
                "ProduceResponse" => outstanding -= 1,
                _ => {}
            }
            most = most.max(outstanding);
        }
        assert_eq!(most, max_in_flight as usize, "max.in.flight={max_in_flight}");
        // In order: record ids (the order they were sent) get rising offsets.
        let offsets: Vec<u64> = simulation
            .records()
            .iter()
            .filter_map(|record| record.acknowledged.flatten())
            .collect();
        assert!(offsets.windows(2).all(|pair| pair[0] < pair[1]), "{offsets:?}");
    }
}

/// `TransactionManager#bumpIdempotentEpochAndResetIdIfNeeded` and
/// `Sender#maybeSendAndPollTransactionalRequest`: an idempotent producer
/// first asks the least loaded broker for a producer id
/// (`InitProducerId`) and sends no produce request before it has one; an
/// answer that never comes (the broker paused: the request times out) or
/// is lost with its connection (the broker died) is asked again
/// (`TxnRequestHandler#reenqueue`), of another broker.
#[test]
fn an_idempotent_producer_sends_nothing_before_init_producer_id_is_answered_and_retries_it() {
    for fault in ["pause", "kill"] {
        let mut config = billing_config(3);
        config.consumers.clear();
        let mut simulation = Simulation::new(config, 6).expect("valid");
        simulation.run_until(1_000);
        simulation.schedule(ScheduledInput {
            at_ms: 1_000,
            input: Input::Produce {
                producer: 0,
                key: None,
                count: 10,
                bytes: 100,
            },
        });
        simulation.run_until(1_000);
        let first = simulation
            .trace()
            .iter()
            .find_map(|event| match &event.kind {
                TraceKind::Sent {
                    from: NodeId::Producer(0),
                    to: NodeId::Broker(broker),
                    name: MessageName::InitProducerId,
                    ..
                } => Some(*broker),
                _ => None,
            })
            .expect("InitProducerId goes out with the first records");
        let input = match fault {
            "pause" => Input::PauseBroker {
                broker: first,
                duration_ms: 60_000,
            },
            _ => Input::KillBroker { broker: first },
        };
        simulation.schedule(ScheduledInput { at_ms: 1_000, input });
        simulation.run_until(120_000);
        let events: Vec<(u64, &'static str, NodeId)> = producer_traffic(&simulation)
            .into_iter()
            .map(|(time, name, broker, _)| (time, name, broker))
            .collect();
        let inits: Vec<&(u64, &str, NodeId)> = events.iter().filter(|(_, name, _)| *name == "InitProducerId").collect();
        assert_eq!(inits.len(), 2, "{fault}: asked again once: {events:?}");
        assert_ne!(inits[1].2, NodeId::Broker(first), "{fault}: asked another broker");
        if fault == "pause" {
            assert!(inits[1].0 >= inits[0].0 + 30_000, "{fault}: after request.timeout.ms");
        }
        let answered = events
            .iter()
            .position(|(_, name, _)| *name == "InitProducerIdResponse")
            .expect("answered");
        let first_produce = events
            .iter()
            .position(|(_, name, _)| *name == "Produce")
            .expect("produced");
        assert!(answered < first_produce, "{fault}: {events:?}");
        assert_eq!(simulation.summary().acknowledged, 10, "{fault}");
    }
}

/// `kafkascope run` streams: played in windows whose trace is handed over
/// and dropped, a scenario gives exactly the trace and outcome it gives
/// when the whole trace is kept.
#[test]
fn a_streamed_run_gives_the_same_trace_and_outcome() {
    let scenario = load(&scenarios_dir().join("seeds-exercise.json"));
    let kept = scenario.run().expect("runs");
    let mut streamed_lines = Vec::new();
    let streamed = scenario
        .run_streaming(&mut |event| streamed_lines.push(event.line()))
        .expect("runs");
    let kept_lines: Vec<String> = kept.simulation.trace().iter().map(|event| event.line()).collect();
    assert_eq!(streamed_lines, kept_lines);
    assert!(streamed.simulation.trace().is_empty());
    assert_eq!(streamed.summary, kept.summary);
    assert_eq!(streamed.failures, kept.failures);
}

/// Bounded resources: a send that would take the simulation past
/// `kafkascope_engine::limits::MAX_RECORDS` is refused whole, with a trace
/// event naming the limit, and nothing is allocated for it.
#[test]
fn a_send_above_the_record_limit_is_refused_naming_it() {
    let mut config = billing_config(1);
    config.consumers.clear();
    let mut simulation = Simulation::new(config, 1).expect("valid");
    simulation.schedule(ScheduledInput {
        at_ms: 10,
        input: Input::Produce {
            producer: 0,
            key: None,
            count: 1_000_001,
            bytes: 100,
        },
    });
    simulation.run_until(20);
    assert_eq!(simulation.records().len(), 0);
    let refused = simulation.trace().iter().any(|event| {
        matches!(&event.kind, TraceKind::LimitReached { what, limit } if what == "records produced" && *limit == 1_000_000)
    });
    assert!(refused);
}

/// Kafka creates `__consumer_offsets` on a group's first coordinator lookup
/// (`AutoTopicCreationManager`): a cluster started without consumers gets
/// it when its first consumer is added, and that consumer joins and reads.
#[test]
fn the_first_consumer_added_later_gets_the_offsets_topic_created_and_reads() {
    let mut config = billing_config(1);
    config.consumers.clear();
    let mut simulation = Simulation::new(config, 4).expect("valid");
    let at = |at_ms, input| ScheduledInput { at_ms, input };
    let offsets = |simulation: &Simulation| {
        simulation
            .controller()
            .partitions
            .keys()
            .filter(|partition| &*partition.topic == "__consumer_offsets")
            .count()
    };
    simulation.schedule(at(
        500,
        Input::Produce {
            producer: 0,
            key: Some("k".into()),
            count: 5,
            bytes: 100,
        },
    ));
    simulation.run_until(2_000);
    assert_eq!(offsets(&simulation), 0, "no group yet, no offsets topic");
    let mut consumer = ConsumerConfig::new("late", vec!["orders".to_string()]);
    consumer.auto_offset_reset = OffsetReset::Earliest;
    simulation.schedule(at(2_000, Input::AddConsumer { consumer }));
    simulation.run_until(20_000);
    assert!(offsets(&simulation) > 0);
    let consumer = &simulation.consumers()[0];
    assert_eq!(
        consumer.phase,
        kafkascope_engine::sim::consumer::ConsumerPhase::Consuming
    );
    let read: u64 = consumer.positions.values().sum();
    assert_eq!(read, 5, "it read the records sent before it existed");
}

/// A pause or a slow link asked for past the end of time neither wraps the
/// clock around (time never goes back) nor passes kafkascope's limits.
#[test]
fn endless_pauses_and_latencies_are_refused_and_never_wrap_time() {
    use kafkascope_engine::sim::config::ScheduledInput;
    use kafkascope_engine::sim::types::NodeId;
    let endless = [
        Input::PauseBroker {
            broker: 1,
            duration_ms: u64::MAX,
        },
        Input::PauseConsumer {
            consumer: 0,
            duration_ms: u64::MAX,
        },
        Input::SlowNode {
            node: NodeId::Broker(2),
            extra_latency_ms: u64::MAX,
        },
    ];
    let mut simulation = Simulation::new(billing_config(3), 3).expect("valid");
    for input in &endless {
        assert!(simulation.check_input(input).is_err(), "{input:?}");
        let scenario = kafkascope_engine::sim::scenario::Scenario {
            name: "endless".into(),
            description: String::new(),
            seed: 3,
            config: billing_config(3),
            inputs: vec![ScheduledInput {
                at_ms: 10,
                input: input.clone(),
            }],
            run_until_ms: 1_000,
            expect: Vec::new(),
            story: None,
        };
        assert!(scenario.check_limits().is_err(), "{input:?}");
        // Applied anyway (a driver that did not ask first), time still only
        // moves forward.
        simulation.schedule(ScheduledInput {
            at_ms: 100,
            input: input.clone(),
        });
    }
    let mut last = 0;
    for _ in 0..20_000 {
        if !simulation.step() {
            break;
        }
        assert!(
            simulation.now() >= last,
            "time went back from {last} to {}",
            simulation.now()
        );
        last = simulation.now();
    }
}
