//! Transactions in the simulation (KIP-98), as Kafka 4.1 runs them: a
//! zombie producer fenced by a newer instance with the same
//! `transactional.id`, a transaction past `transaction.timeout.ms` aborted
//! by its coordinator, and a coordinator that fails over after the commit
//! was decided and still finishes it. `read_committed` groups never return
//! a record of an aborted or undecided transaction (the monitor checks
//! every fetch).

use kafkascope_engine::replication::transactions::IsolationLevel;
use kafkascope_engine::sim::config::{
    ClusterConfig, ConsumerConfig, Input, OffsetReset, ProducerConfig, ScheduledInput, TopicConfig,
};
use kafkascope_engine::sim::trace::{TraceKind, TransactionOutcome};
use kafkascope_engine::sim::producer::transactions::TxnPhase;
use kafkascope_engine::sim::Simulation;

/// One transactional id shared by `instances` producers of `payments`
/// (2 partitions), a read_uncommitted group (consumer 0) and a
/// read_committed one (consumer 1).
fn config(instances: usize, timeout_ms: u64) -> ClusterConfig {
    let mut producer = ProducerConfig::new("payments");
    producer.transactional_id = Some("payments-tx".into());
    producer.transaction_timeout_ms = timeout_ms;
    let mut audit = ConsumerConfig::new("audit", vec!["payments".into()]);
    audit.auto_offset_reset = OffsetReset::Earliest;
    let mut ledger = audit.clone();
    ledger.group = "ledger".into();
    ledger.isolation_level = IsolationLevel::ReadCommitted;
    ClusterConfig {
        topics: vec![TopicConfig {
            name: "payments".into(),
            partitions: 2,
            replication_factor: 3,
            min_insync_replicas: 2,
            ..TopicConfig::default()
        }],
        producers: vec![producer; instances],
        consumers: vec![audit, ledger],
        offsets_topic_partitions: 3,
        transaction_state_partitions: 3,
        ..ClusterConfig::default()
    }
}

fn produce(producer: u32, count: u32) -> Input {
    Input::Produce {
        producer,
        key: None,
        count,
        bytes: 100,
    }
}

fn at(at_ms: u64, input: Input) -> ScheduledInput {
    ScheduledInput { at_ms, input }
}

fn read(simulation: &Simulation) -> Vec<u64> {
    simulation
        .view()
        .consumers
        .iter()
        .map(|consumer| consumer.records_read)
        .collect()
}

fn outcomes(simulation: &Simulation, producer: u32) -> Vec<TransactionOutcome> {
    simulation
        .trace()
        .iter()
        .filter_map(|event| match &event.kind {
            TraceKind::TransactionEnded {
                producer: who, outcome, ..
            } if *who == producer => Some(*outcome),
            _ => None,
        })
        .collect()
}

#[test]
fn a_new_instance_fences_the_zombie_and_its_open_transaction_is_aborted() {
    let mut simulation = Simulation::new(config(2, 60_000), 3).expect("valid");
    // Instance 0 commits one transaction, opens a second and stalls.
    simulation.schedule(at(5_000, produce(0, 4)));
    simulation.schedule(at(6_000, Input::CommitTransaction { producer: 0 }));
    simulation.schedule(at(8_000, produce(0, 3)));
    // Instance 1 starts with the same transactional.id: InitProducerId
    // bumps the epoch and aborts what instance 0 left open.
    simulation.schedule(at(10_000, produce(1, 2)));
    simulation.schedule(at(12_000, Input::CommitTransaction { producer: 1 }));
    // The zombie wakes up and tries to commit.
    simulation.schedule(at(14_000, produce(0, 1)));
    simulation.schedule(at(15_000, Input::CommitTransaction { producer: 0 }));
    simulation.run_until(40_000);
    assert_eq!(
        outcomes(&simulation, 0).last(),
        Some(&TransactionOutcome::Fenced),
        "{:?}",
        outcomes(&simulation, 0)
    );
    assert_eq!(outcomes(&simulation, 1), vec![TransactionOutcome::Committed]);
    let view = simulation.view();
    let zombie = view.producers[0].transaction.as_ref().expect("transactional");
    assert_eq!(zombie.phase, TxnPhase::Fenced);
    // read_uncommitted sees the zombie's aborted records; read_committed
    // sees the 4 + 2 committed ones only.
    assert_eq!(read(&simulation), vec![9, 6]);
    assert_eq!(simulation.summary().invariant_violations, 0);
    // The zombie's last send failed: it is closed.
    assert!(simulation.summary().failed >= 1);
    let ledger = simulation
        .ledger_views()
        .into_iter()
        .find(|view| view.group == "ledger")
        .expect("ledger");
    assert_eq!(ledger.processed_once, 6, "{ledger:?}");
}

#[test]
fn the_coordinator_aborts_a_transaction_past_its_timeout_and_fences_its_producer() {
    let mut simulation = Simulation::new(config(1, 3_000), 5).expect("valid");
    simulation.schedule(at(5_000, produce(0, 5)));
    // Never committed in time: the coordinator aborts it at its next
    // check after 3 s.
    simulation.schedule(at(30_000, Input::CommitTransaction { producer: 0 }));
    simulation.run_until(50_000);
    assert!(simulation.trace().iter().any(|event| matches!(
        &event.kind,
        TraceKind::TransactionState {
            state: kafkascope_engine::txn_coordinator::TxnState::CompleteAbort,
            ..
        }
    )));
    // Under transaction version 2 the abort bumped the epoch, so the late
    // commit, one epoch behind, counts as a retry of the ended
    // transaction (`retryOnEpochBump`), which was aborted:
    // `INVALID_TXN_STATE`, fatal for the producer (`EndTxnHandler`).
    assert_eq!(
        outcomes(&simulation, 0),
        vec![TransactionOutcome::Fatal(
            kafkascope_engine::sim::types::ErrorCode::InvalidTxnState
        )]
    );
    assert_eq!(read(&simulation), vec![5, 0]);
    assert_eq!(simulation.summary().invariant_violations, 0);
}

/// The coordinator of `payments-tx` crashes `kill_after` ms after the
/// commit is asked for (and restarts later); returns the run.
fn commit_with_coordinator_crash(kill_after: u64) -> Simulation {
    let mut simulation = Simulation::new(config(1, 60_000), 7).expect("valid");
    simulation.schedule(at(5_000, produce(0, 6)));
    simulation.schedule(at(6_000, Input::CommitTransaction { producer: 0 }));
    simulation.run_until(6_000);
    let partition = kafkascope_engine::groups::coordinator_partition("payments-tx", 3).expect("a partition");
    let coordinator = simulation
        .view()
        .brokers
        .iter()
        .find(|broker| {
            broker.replicas.iter().any(|replica| {
                replica.partition == format!("__transaction_state-{partition}")
                    && replica.role == kafkascope_engine::sim::view::ReplicaRole::Leader
            })
        })
        .map(|broker| broker.id)
        .expect("a coordinator");
    simulation.schedule(at(6_000 + kill_after, Input::KillBroker { broker: coordinator }));
    simulation.schedule(at(30_000, Input::RestartBroker { broker: coordinator }));
    simulation.run_until(80_000);
    if std::env::var("DEBUG_TXN").is_ok() {
        for event in simulation.trace() {
            let line = event.line();
            if line.contains("transaction") || line.contains("marker") || line.contains("input") {
                eprintln!("{line}");
            }
        }
    }
    simulation
}

#[test]
fn a_commit_survives_its_coordinators_crash_before_and_after_it_is_decided() {
    // At 4 ms PrepareCommit is not replicated yet: the producer's EndTxn
    // times out, finds the new coordinator, and commits there. At 12 ms it
    // is: the new coordinator loads it and sends the markers itself.
    for kill_after in [4, 12] {
        let simulation = commit_with_coordinator_crash(kill_after);
        assert_eq!(read(&simulation), vec![6, 6], "kill after {kill_after} ms");
        assert_eq!(
            outcomes(&simulation, 0),
            vec![TransactionOutcome::Committed],
            "kill after {kill_after} ms"
        );
        assert_eq!(simulation.summary().invariant_violations, 0);
        let open = simulation
            .view()
            .brokers
            .iter()
            .flat_map(|broker| broker.replicas.iter())
            .filter(|replica| {
                replica.topic == "payments" && replica.role == kafkascope_engine::sim::view::ReplicaRole::Leader
            })
            .any(|replica| replica.last_stable_offset < replica.high_watermark);
        assert!(!open, "kill after {kill_after} ms: no transaction is left open");
    }
}

#[test]
fn a_transactional_producer_needs_idempotence() {
    let mut config = config(1, 60_000);
    config.producers[0].acks = kafkascope_engine::replication::high_watermark::Acks::Leader;
    let Err(error) = Simulation::new(config, 1) else {
        panic!("refused")
    };
    assert!(
        error.contains("Cannot set a transactional.id without also enabling idempotence"),
        "{error}"
    );
    let mut config = self::config(1, 60_000);
    config.producers[0].transaction_timeout_ms = 900_001;
    assert!(Simulation::new(config, 1).is_err());
}
