//! Transactional offsets (KIP-98, KIP-447) in the group coordinator, after
//! Kafka's `OffsetMetadataManagerTest`: a `TxnOffsetCommit` is checked
//! against the member and its generation but not the group's state
//! (`testGenericGroupTransactionalOffsetCommit*`), its offsets wait in the
//! pending store until the transaction's marker (`testTransactionalReplay`,
//! `testReplayTransactionEndMarkerWithCommit`), an abort drops them, a
//! regular commit written after them wins
//! (`testReplayTransactionEndMarkerKeepsTheMostRecentCommittedOffset`), and
//! fetches see them as unstable meanwhile
//! (`testFetchOffsetsWithPendingTransactionalOffsets`). Then the whole
//! consume-transform-produce loop in the simulation.

use kafkascope_engine::groups::classic::{
    ClassicConfig, ClassicShard, CoordinatorRecord, GroupMetadataValue, MemberIdentity, MemberMetadata,
    OffsetCommitValue, Response,
};
use kafkascope_engine::replication::transactions::IsolationLevel;
use kafkascope_engine::sim::config::{
    ClusterConfig, CommitMode, ConsumerConfig, Input, OffsetReset, ProducerConfig, ScheduledInput, TopicConfig,
};
use kafkascope_engine::sim::trace::{TraceKind, TransactionOutcome};
use kafkascope_engine::sim::types::ErrorCode;
use kafkascope_engine::sim::Simulation;
use kafkascope_engine::txn_coordinator::TxnState;

/// A shard with group `foo`, stable at generation 1 with `member`.
fn shard() -> ClassicShard {
    let mut shard = ClassicShard::new(ClassicConfig::default(), 0, 0);
    shard.replay(&CoordinatorRecord::GroupMetadata {
        group: "foo".into(),
        value: Some(GroupMetadataValue {
            protocol_type: "consumer".into(),
            generation: 1,
            protocol: Some("range".into()),
            leader: Some("member".into()),
            current_state_timestamp: 0,
            members: vec![MemberMetadata {
                member_id: "member".into(),
                group_instance_id: None,
                client_id: "client".into(),
                session_timeout_ms: 45_000,
                rebalance_timeout_ms: 300_000,
                subscription: Vec::new(),
                assignment: Vec::new(),
            }],
        }),
    });
    shard
}

fn member(id: &str) -> MemberIdentity {
    MemberIdentity {
        member_id: id.into(),
        group_instance_id: None,
    }
}

fn commit_record(offset: i64) -> CoordinatorRecord {
    CoordinatorRecord::OffsetCommit {
        group: "foo".into(),
        topic: "bar".into(),
        partition: 0,
        value: Some(OffsetCommitValue {
            offset,
            leader_epoch: -1,
            metadata: String::new(),
            commit_timestamp: 0,
        }),
    }
}

fn txn_commit_error(shard: &mut ClassicShard, member_id: &str, generation: i32) -> Option<ErrorCode> {
    let output = shard.commit_transactional(
        1,
        7,
        "foo",
        &member(member_id),
        generation,
        (5, 0),
        &[("bar".into(), 0, 100)],
    );
    match output.responses.first() {
        Some((_, Response::TxnOffsetCommit(7, error))) => *error,
        None => {
            let write = output.writes.first().expect("a write");
            assert_eq!(
                write.transactional,
                Some((5, 0)),
                "written with the producer's id and epoch"
            );
            None
        }
        other => panic!("unexpected answer {other:?}"),
    }
}

#[test]
fn a_transactional_offset_commit_is_checked_against_the_member_and_its_generation() {
    let mut shard = shard();
    assert_eq!(txn_commit_error(&mut shard, "member", 1), None);
    assert_eq!(
        txn_commit_error(&mut shard, "member", 100),
        Some(ErrorCode::IllegalGeneration)
    );
    assert_eq!(
        txn_commit_error(&mut shard, "other", 1),
        Some(ErrorCode::UnknownMemberId)
    );
    // An unknown group with a generation: ILLEGAL_GENERATION.
    let mut empty = ClassicShard::new(ClassicConfig::default(), 0, 0);
    let output = empty.commit_transactional(1, 7, "foo", &member("member"), 10, (5, 0), &[("bar".into(), 0, 100)]);
    assert!(matches!(
        output.responses.first(),
        Some((_, Response::TxnOffsetCommit(7, Some(ErrorCode::IllegalGeneration))))
    ));
}

#[test]
fn pending_offsets_count_only_after_a_commit_marker() {
    let mut shard = shard();
    shard.replay_at(&commit_record(100), 10, Some(5));
    assert!(shard.has_pending_transactional_offsets("foo", "bar", 0));
    assert!(!shard.has_pending_transactional_offsets("foo", "bar", 1));
    assert!(
        shard.committed_offsets("foo").is_empty(),
        "pending offsets are not committed ones"
    );
    let settled = shard.replay_end_transaction(5, true);
    assert_eq!(settled.len(), 1);
    assert!(!shard.has_pending_transactional_offsets("foo", "bar", 0));
    assert_eq!(shard.committed_offsets("foo").get(&("bar".to_string(), 0)), Some(&100));

    // An abort drops them.
    shard.replay_at(&commit_record(200), 20, Some(6));
    assert!(shard.replay_end_transaction(6, false).is_empty());
    assert_eq!(shard.committed_offsets("foo").get(&("bar".to_string(), 0)), Some(&100));
}

#[test]
fn a_regular_commit_written_after_the_transactional_one_wins() {
    let mut shard = shard();
    shard.replay_at(&commit_record(100), 0, Some(5));
    shard.replay_at(&commit_record(101), 1, None);
    shard.replay_end_transaction(5, true);
    assert_eq!(shard.committed_offsets("foo").get(&("bar".to_string(), 0)), Some(&101));
}

fn at(at_ms: u64, input: Input) -> ScheduledInput {
    ScheduledInput { at_ms, input }
}

/// Two app instances of group `enricher` read `orders` and write one
/// receipt per order to `receipts` through their own transactional
/// producers (1 and 2), offsets in the same transaction; group `billing`
/// reads `receipts` with read_committed.
fn pipeline() -> ClusterConfig {
    let topic = |name: &str| TopicConfig {
        name: name.into(),
        partitions: 2,
        replication_factor: 3,
        min_insync_replicas: 2,
        ..TopicConfig::default()
    };
    let mut producers = vec![ProducerConfig::new("orders")];
    let mut consumers = Vec::new();
    for instance in 0..2 {
        let mut producer = ProducerConfig::new("receipts");
        producer.transactional_id = Some(format!("enricher-{instance}"));
        producers.push(producer);
        let mut consumer = ConsumerConfig::new("enricher", vec!["orders".into()]);
        consumer.auto_offset_reset = OffsetReset::Earliest;
        consumer.commit_mode = CommitMode::Transactional;
        consumer.output_producer = Some(instance + 1);
        consumer.isolation_level = IsolationLevel::ReadCommitted;
        consumer.processing_ms_per_record = 100;
        consumer.session_timeout_ms = 10_000;
        consumers.push(consumer);
    }
    let mut billing = ConsumerConfig::new("billing", vec!["receipts".into()]);
    billing.auto_offset_reset = OffsetReset::Earliest;
    billing.isolation_level = IsolationLevel::ReadCommitted;
    consumers.push(billing);
    ClusterConfig {
        topics: vec![topic("orders"), topic("receipts")],
        producers,
        consumers,
        offsets_topic_partitions: 3,
        transaction_state_partitions: 3,
        ..ClusterConfig::default()
    }
}

fn produce(key: &str, count: u32) -> Input {
    Input::Produce {
        producer: 0,
        key: Some(key.into()),
        count,
        bytes: 100,
    }
}

#[test]
fn a_zombie_instance_cannot_commit_its_offsets_and_its_outputs_are_aborted() {
    let mut simulation = Simulation::new(pipeline(), 3).expect("valid");
    for input in [
        at(8_000, produce("alice", 6)),
        at(8_000, produce("bob", 6)),
        // A pause past the session timeout, mid-batch: the group moves on.
        at(
            8_300,
            Input::PauseConsumer {
                consumer: 0,
                duration_ms: 15_000,
            },
        ),
    ] {
        simulation.schedule(input);
    }
    simulation.run_until(60_000);
    let trace = simulation.trace();
    // The zombie's TxnOffsetCommit is refused, so its transaction aborts.
    let aborted = trace.iter().any(|event| {
        matches!(
            &event.kind,
            TraceKind::TransactionEnded {
                producer: 1,
                outcome: TransactionOutcome::Aborted,
                ..
            }
        )
    });
    assert!(aborted, "the zombie's transaction aborts");
    let audit = simulation.output_audit("receipts");
    assert_eq!(audit.sources, 12, "every order has a committed receipt: {audit:?}");
    assert!(audit.duplicated.is_empty(), "no order has two: {audit:?}");
    assert!(
        audit.hidden >= 1,
        "the zombie's receipts are in the log, aborted: {audit:?}"
    );
    assert_eq!(
        simulation.consumers()[2].records_read,
        12,
        "billing reads each receipt once"
    );
    assert_eq!(simulation.summary().invariant_violations, 0);
}

#[test]
fn a_crashed_instance_is_fenced_by_its_restart_and_its_open_transaction_aborted() {
    let mut simulation = Simulation::new(pipeline(), 4).expect("valid");
    for input in [
        // A first order each, so both producers have their ids.
        at(3_000, produce("alice", 1)),
        at(3_000, produce("bob", 1)),
        at(8_000, produce("alice", 6)),
        at(8_000, produce("bob", 6)),
        at(8_300, Input::CrashConsumer { consumer: 1 }),
    ] {
        simulation.schedule(input);
    }
    simulation.run_until(30_000);
    // While the dead instance's transaction is open, billing waits at the
    // last stable offset of the partition it wrote to.
    let open_before = simulation.output_audit("receipts").open;
    assert!(
        open_before >= 1,
        "the crashed instance left receipts in an open transaction"
    );
    simulation.schedule(at(30_000, Input::StartConsumer { consumer: 1 }));
    simulation.run_until(60_000);
    let fenced = simulation.trace().iter().any(|event| {
        matches!(&event.kind, TraceKind::TransactionState { transactional_id, producer_epoch, state: TxnState::PrepareAbort, .. }
            if transactional_id == "enricher-1" && *producer_epoch >= 1)
    });
    assert!(fenced);
    let audit = simulation.output_audit("receipts");
    assert_eq!(audit.open, 0, "the restart fenced and aborted it: {audit:?}");
    assert_eq!(audit.sources, 14, "{audit:?}");
    assert!(audit.duplicated.is_empty(), "{audit:?}");
    assert_eq!(simulation.consumers()[2].records_read, 14);
}

fn refused(config: ClusterConfig) -> String {
    match Simulation::new(config, 1) {
        Err(error) => error,
        Ok(_) => panic!("accepted"),
    }
}

#[test]
fn transactional_commits_need_a_transactional_output_producer() {
    let mut config = pipeline();
    config.consumers[0].output_producer = None;
    let error = refused(config);
    assert!(error.contains("outputProducer"), "{error}");
    let mut config = pipeline();
    config.producers[1].transactional_id = None;
    let error = refused(config);
    assert!(error.contains("transactionalId"), "{error}");
    let mut config = pipeline();
    config.consumers[1].output_producer = Some(1);
    let error = refused(config);
    assert!(error.contains("already belongs"), "{error}");
}
