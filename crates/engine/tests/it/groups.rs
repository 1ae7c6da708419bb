//! Consumer groups in the simulation as Kafka runs them: the coordinator
//! moving without a rebalance, static membership (KIP-345), fencing.
//!
//! Drawn from Kafka's own tests: `GroupMetadataManagerTest`
//! (`testStaticMemberRejoinWithKnownMemberId`,
//! `testReplaceStaticMemberInStableStateNoError`, the `onLoaded` tests that
//! reschedule member sessions) and `ConsumerCoordinatorTest`
//! (`testCoordinatorDisconnect...`: a lost coordinator is looked up again
//! without giving up the assignment).

use kafkascope_engine::sim::config::{ClusterConfig, ConsumerConfig, Input, OffsetReset, ScheduledInput};
use kafkascope_engine::sim::trace::{ConsumerChange, TraceKind};
use kafkascope_engine::sim::view::ConsumerPhase;
use kafkascope_engine::sim::Simulation;

/// The `billing` cluster of the simulator tests with these members.
fn config(partitions: u32, consumers: Vec<ConsumerConfig>) -> ClusterConfig {
    ClusterConfig {
        consumers,
        ..crate::simulator::billing_config(partitions)
    }
}

fn consumer(instance: Option<&str>) -> ConsumerConfig {
    let mut consumer = ConsumerConfig::new("billing", vec!["orders".into()]);
    consumer.auto_offset_reset = OffsetReset::Earliest;
    consumer.group_instance_id = instance.map(str::to_string);
    consumer
}

fn produce(simulation: &mut Simulation, at_ms: u64, count: u32) {
    simulation.schedule(ScheduledInput {
        at_ms,
        input: Input::Produce {
            producer: 0,
            key: None,
            count,
            bytes: 100,
        },
    });
}

fn at(simulation: &mut Simulation, at_ms: u64, input: Input) {
    simulation.schedule(ScheduledInput { at_ms, input });
}

/// A consumer's handler takes `value` ms per record from `at_ms` on.
fn set_handler(simulation: &mut Simulation, at_ms: u64, consumer: u32, value: u64) {
    let change = kafkascope_engine::sim::config::ConfigChange::ProcessingMsPerRecord { consumer, value };
    at(simulation, at_ms, Input::SetConfig(change));
}

/// Generations the group started after `from_ms`.
fn rebalances_after(simulation: &Simulation, from_ms: u64) -> Vec<u32> {
    simulation
        .trace()
        .iter()
        .filter(|event| event.time > from_ms)
        .filter_map(|event| match &event.kind {
            TraceKind::GroupRebalanced { generation, .. } => Some(*generation),
            _ => None,
        })
        .collect()
}

fn coordinator(simulation: &Simulation) -> u32 {
    crate::simulator::coordinator_of(simulation, "billing", 3)
}

/// Records every member has read.
fn total_read(simulation: &Simulation) -> u64 {
    simulation
        .view()
        .consumers
        .iter()
        .map(|member| member.records_read)
        .sum()
}

/// Each member's generation and partitions.
fn memberships(simulation: &Simulation) -> Vec<(u32, Vec<String>)> {
    simulation
        .view()
        .consumers
        .iter()
        .map(|member| {
            let partitions = member.partitions.iter().map(|view| view.partition.clone()).collect();
            (member.generation, partitions)
        })
        .collect()
}

#[test]
fn killing_the_coordinator_keeps_the_generation_and_nobody_reads_twice() {
    let mut simulation = Simulation::new(config(4, vec![consumer(None), consumer(None)]), 5).expect("valid");
    produce(&mut simulation, 100, 40);
    simulation.run_until(20_000);
    let before = memberships(&simulation);
    assert!(before.iter().all(|(generation, _)| *generation >= 1), "{before:?}");
    let dead = coordinator(&simulation);
    at(&mut simulation, 20_000, Input::KillBroker { broker: dead });
    produce(&mut simulation, 45_000, 40);
    simulation.run_until(80_000);

    assert_ne!(coordinator(&simulation), dead, "a new broker coordinates the group");
    // The new coordinator loaded the group from __consumer_offsets: the
    // members heartbeat on in the same generation, with the same partitions.
    assert_eq!(rebalances_after(&simulation, 20_000), Vec::<u32>::new());
    let after = memberships(&simulation);
    assert_eq!(after, before);
    for member in &simulation.view().consumers {
        assert_eq!(member.phase, ConsumerPhase::Consuming, "{member:?}");
    }
    // Nothing was read twice: the members kept their positions.
    let read = total_read(&simulation);
    assert_eq!(read, 80);
    assert_eq!(simulation.summary().invariant_violations, 0);
}

#[test]
fn a_static_member_restarted_within_its_session_gets_its_partitions_back_without_a_rebalance() {
    let members = vec![consumer(Some("billing-a")), consumer(Some("billing-b"))];
    let mut simulation = Simulation::new(config(4, members), 9).expect("valid");
    produce(&mut simulation, 100, 20);
    simulation.run_until(20_000);
    let owned = |simulation: &Simulation| -> Vec<String> {
        simulation.view().consumers[0]
            .partitions
            .iter()
            .map(|view| view.partition.clone())
            .collect()
    };
    let partitions = owned(&simulation);
    assert_eq!(partitions.len(), 2, "{:?}", simulation.view().consumers);
    at(&mut simulation, 20_000, Input::CrashConsumer { consumer: 0 });
    at(&mut simulation, 30_000, Input::StartConsumer { consumer: 0 });
    simulation.run_until(50_000);

    assert_eq!(rebalances_after(&simulation, 20_000), Vec::<u32>::new());
    let member = &simulation.view().consumers[0];
    assert_eq!(member.phase, ConsumerPhase::Consuming, "{member:?}");
    assert_eq!(owned(&simulation), partitions);
}

#[test]
fn a_dynamic_member_restarted_is_a_new_member_and_the_group_rebalances() {
    let mut simulation = Simulation::new(config(4, vec![consumer(None), consumer(None)]), 9).expect("valid");
    simulation.run_until(20_000);
    at(&mut simulation, 20_000, Input::CrashConsumer { consumer: 0 });
    at(&mut simulation, 30_000, Input::StartConsumer { consumer: 0 });
    // The restarted process joins as a new member; the join round waits for
    // the old one until its session.timeout.ms (45 s) ends.
    simulation.run_until(60_000);
    assert!(rebalances_after(&simulation, 20_000).is_empty());
    simulation.run_until(80_000);
    assert_eq!(rebalances_after(&simulation, 20_000).len(), 1);
    assert!(simulation
        .view()
        .consumers
        .iter()
        .all(|member| member.phase == ConsumerPhase::Consuming && member.partitions.len() == 2));
}

#[test]
fn a_second_process_with_the_same_group_instance_id_fences_the_first() {
    let members = vec![consumer(Some("billing-a")), consumer(Some("billing-a"))];
    let mut simulation = Simulation::new(config(2, members), 4).expect("valid");
    simulation.run_until(30_000);
    let fenced: Vec<u32> = simulation
        .trace()
        .iter()
        .filter_map(|event| match &event.kind {
            TraceKind::ConsumerStatus {
                consumer,
                status: ConsumerChange::Fenced,
            } => Some(*consumer),
            _ => None,
        })
        .collect();
    assert_eq!(fenced.len(), 1, "{fenced:?}");
    let view = simulation.view();
    let (loser, winner) = (fenced[0] as usize, 1 - fenced[0] as usize);
    assert_eq!(view.consumers[loser].phase, ConsumerPhase::Stopped);
    assert_eq!(view.consumers[winner].phase, ConsumerPhase::Consuming);
}

#[test]
fn session_timeouts_outside_the_brokers_bounds_are_refused_with_kafkas_names() {
    let mut short = consumer(None);
    short.session_timeout_ms = 5_000;
    let error = ClusterConfig::validate_consumer(&config(1, Vec::new()), &short).expect_err("refused");
    assert!(error.contains("group.min.session.timeout.ms"), "{error}");
    let mut slow = consumer(None);
    slow.heartbeat_interval_ms = 45_000;
    let error = ClusterConfig::validate_consumer(&config(1, Vec::new()), &slow).expect_err("refused");
    assert!(error.contains("heartbeatIntervalMs"), "{error}");
    let mut odd = consumer(Some("no spaces"));
    odd.group_instance_id = Some("no spaces".into());
    assert!(ClusterConfig::validate_consumer(&config(1, Vec::new()), &odd).is_err());
}

/// Runs a group of `assignor` members on 4 partitions, adds a third member
/// at 20 s, and samples every millisecond of the next 10 s (then every
/// 100 ms) how many partitions a member is reading (owns while consuming
/// or, cooperatively, while rebalancing).
fn add_a_member(assignor: &str) -> (Simulation, Vec<usize>) {
    let member = || {
        let mut member = consumer(None);
        member.assignor = assignor.to_string();
        member
    };
    // The second member starts 1.5 s after the first, so their heartbeats
    // (which bring the news of a rebalance) do not arrive in lockstep.
    let mut late = member();
    late.start = false;
    let mut simulation = Simulation::new(config(4, vec![member(), late]), 21).expect("valid");
    at(&mut simulation, 1_500, Input::StartConsumer { consumer: 1 });
    produce(&mut simulation, 100, 40);
    at(&mut simulation, 20_000, Input::AddConsumer { consumer: member() });
    produce(&mut simulation, 40_000, 40);
    let mut reading = Vec::new();
    let mut now = 0;
    while now < 90_000 {
        now += if (20_000..30_000).contains(&now) { 1 } else { 100 };
        simulation.run_until(now);
        if (20_000..30_000).contains(&now) {
            let count = simulation
                .consumers()
                .iter()
                .filter(|member| member.phase != ConsumerPhase::Stopped)
                .map(|member| member.assignment.len())
                .sum();
            reading.push(count);
        }
    }
    (simulation, reading)
}

#[test]
fn cooperative_sticky_moves_one_partition_in_two_rounds_while_the_others_keep_reading() {
    let (simulation, reading) = add_a_member("cooperative-sticky");
    // Never a partition left unread, nothing read twice.
    let failures = kafkascope_engine::sim::fuzz::liveness_failures(&simulation, 0, true);
    assert!(failures.is_empty(), "{failures:?}");
    let read: u64 = simulation.consumers().iter().map(|member| member.records_read).sum();
    assert_eq!(read, 80);
    // Round one revokes the partition that moves; round two assigns it.
    assert_eq!(rebalances_after(&simulation, 20_000).len(), 2);
    let owned: Vec<usize> = simulation
        .consumers()
        .iter()
        .map(|member| member.assignment.len())
        .collect();
    assert_eq!(owned.iter().sum::<usize>(), 4, "{owned:?}");
    assert!(owned.iter().all(|count| *count >= 1), "{owned:?}");
    // The two first members kept reading the partitions they kept: at
    // least three partitions were read at every moment of the rebalance.
    assert!(reading.iter().all(|count| *count >= 3), "{reading:?}");

    // Eager on the same change: everyone stops while the group rebalances.
    let (eager, eager_reading) = add_a_member("range");
    assert!(kafkascope_engine::sim::fuzz::liveness_failures(&eager, 0, true).is_empty());
    // Partition-milliseconds not read while the group rebalanced.
    let paused = |samples: &[usize]| samples.iter().map(|count| 4usize.saturating_sub(*count)).sum::<usize>();
    let least = |samples: &[usize]| samples.iter().copied().min().unwrap_or(0);
    assert!(
        least(&eager_reading) < least(&reading),
        "eager gives up partitions that do not move"
    );
    assert!(
        paused(&reading) < paused(&eager_reading),
        "cooperative {} vs eager {}",
        paused(&reading),
        paused(&eager_reading)
    );
}

/// Total lag of a group's running members.
fn group_lag(simulation: &Simulation) -> u64 {
    simulation
        .consumers()
        .iter()
        .filter(|member| member.phase != ConsumerPhase::Stopped)
        .flat_map(|member| member.lag().into_values())
        .sum()
}

fn statuses(simulation: &Simulation, wanted: fn(&ConsumerChange) -> bool) -> Vec<u32> {
    simulation
        .trace()
        .iter()
        .filter_map(|event| match &event.kind {
            TraceKind::ConsumerStatus { consumer, status } if wanted(status) => Some(*consumer),
            _ => None,
        })
        .collect()
}

#[test]
fn a_slow_handler_falls_behind_and_more_members_catch_up() {
    // One member whose handler takes 50 ms a record reads 4 partitions;
    // 400 records arrive at once. It needs 20 s; lag builds, then more
    // members (up to the partition count) share the work.
    let mut slow = consumer(None);
    slow.processing_ms_per_record = 50;
    let mut simulation = Simulation::new(config(4, vec![slow.clone()]), 3).expect("valid");
    produce(&mut simulation, 10_000, 400);
    simulation.run_until(12_000);
    let behind = group_lag(&simulation);
    assert!(behind > 200, "lag {behind}");
    // Records come one poll (max.poll.records) at a time.
    assert!(simulation.consumers()[0].processing_until.is_some());
    at(&mut simulation, 12_000, Input::AddConsumer { consumer: slow.clone() });
    at(&mut simulation, 12_000, Input::AddConsumer { consumer: slow });
    simulation.run_until(20_000);
    assert!(group_lag(&simulation) < behind, "more members drain the lag");
    simulation.run_until(60_000);
    assert_eq!(group_lag(&simulation), 0);
    assert!(kafkascope_engine::sim::fuzz::liveness_failures(&simulation, 0, true).is_empty());
}

#[test]
fn a_gc_pause_longer_than_the_session_timeout_makes_the_group_rebalance() {
    let mut simulation = Simulation::new(config(4, vec![consumer(None), consumer(None)]), 5).expect("valid");
    simulation.run_until(20_000);
    // 30 s is inside the 45 s session: nothing happens.
    at(
        &mut simulation,
        20_000,
        Input::PauseConsumer {
            consumer: 0,
            duration_ms: 30_000,
        },
    );
    simulation.run_until(60_000);
    assert_eq!(rebalances_after(&simulation, 20_000), Vec::<u32>::new());
    assert_eq!(
        statuses(&simulation, |status| matches!(status, ConsumerChange::Paused { .. })),
        vec![0]
    );
    // 60 s is past it: the coordinator drops the member, the other one
    // takes every partition; when the paused one wakes up it learns it
    // was dropped and joins again.
    at(
        &mut simulation,
        60_000,
        Input::PauseConsumer {
            consumer: 0,
            duration_ms: 60_000,
        },
    );
    simulation.run_until(116_000);
    let reasons: Vec<String> = simulation
        .trace()
        .iter()
        .filter(|event| event.time > 60_000)
        .filter_map(|event| match &event.kind {
            TraceKind::GroupRebalanced { reason, .. } => Some(reason.to_string()),
            _ => None,
        })
        .collect();
    assert!(
        reasons.first().is_some_and(|reason| reason.contains("session timeout")),
        "{reasons:?}"
    );
    assert_eq!(simulation.consumers()[1].assignment.len(), 4);
    simulation.run_until(160_000);
    assert!(
        !rebalances_after(&simulation, 120_000).is_empty(),
        "the paused member rejoins"
    );
    assert_eq!(simulation.consumers()[0].assignment.len(), 2);
}

#[test]
fn a_handler_slower_than_max_poll_interval_leaves_the_group_and_joins_again() {
    let mut slow = consumer(None);
    slow.max_poll_interval_ms = 10_000;
    let mut simulation = Simulation::new(config(2, vec![slow.clone(), slow]), 8).expect("valid");
    simulation.run_until(15_000);
    set_handler(&mut simulation, 15_000, 0, 1_000);
    produce(&mut simulation, 15_000, 40);
    simulation.run_until(60_000);
    let timeouts = statuses(&simulation, |status| {
        matches!(status, ConsumerChange::PollTimeout { .. })
    });
    assert!(timeouts.contains(&0), "{timeouts:?}");
    assert!(!rebalances_after(&simulation, 15_000).is_empty());
    // Fast again, it catches up and the group settles.
    at(
        &mut simulation,
        60_000,
        Input::SetConfig(kafkascope_engine::sim::config::ConfigChange::ProcessingMsPerRecord { consumer: 0, value: 0 }),
    );
    simulation.run_until(120_000);
    assert!(kafkascope_engine::sim::fuzz::liveness_failures(&simulation, 0, true).is_empty());
}

#[test]
fn a_member_whose_assignor_the_group_does_not_share_is_refused_and_stops() {
    let mut odd = consumer(None);
    odd.assignor = "cooperative-sticky".into();
    let mut simulation = Simulation::new(config(2, vec![consumer(None), odd]), 2).expect("valid");
    simulation.run_until(30_000);
    let refused = statuses(&simulation, |status| matches!(status, ConsumerChange::Refused { .. }));
    assert_eq!(refused.len(), 1, "{refused:?}");
    let view = simulation.view();
    assert_eq!(view.consumers[refused[0] as usize].phase, ConsumerPhase::Stopped);
    let other = 1 - refused[0] as usize;
    assert_eq!(view.consumers[other].phase, ConsumerPhase::Consuming);
    assert_eq!(view.consumers[other].partitions.len(), 2);
}

/// Member 0's handler is busy for about 20 s when a third member joins:
/// the join round waits for member 0's next poll. Returns, for each
/// 100 ms of the next 25 s, how many partitions member 1 was reading.
fn busy_member_holds_the_round(assignor: &str) -> Vec<usize> {
    let member = |processing| {
        let mut member = consumer(None);
        member.assignor = assignor.to_string();
        member.processing_ms_per_record = processing;
        member
    };
    let mut simulation = Simulation::new(config(4, vec![member(0), member(0)]), 12).expect("valid");
    simulation.run_until(15_000);
    set_handler(&mut simulation, 15_000, 0, 200);
    // Keyed records land on one partition each; enough for every
    // partition so member 0 has a long batch.
    for key in 0..8 {
        simulation.schedule(ScheduledInput {
            at_ms: 15_000,
            input: Input::Produce {
                producer: 0,
                key: Some(format!("k{key}")),
                count: 25,
                bytes: 100,
            },
        });
    }
    at(&mut simulation, 17_000, Input::AddConsumer { consumer: member(0) });
    let mut reading = Vec::new();
    for step in 1..=250 {
        simulation.run_until(17_000 + step * 100);
        reading.push(simulation.consumers()[1].assignment.len());
    }
    reading
}

#[test]
fn a_busy_handler_holds_up_the_join_round_and_only_eager_members_stop_meanwhile() {
    // Kafka's heartbeat thread only asks for a rejoin; the join happens in
    // the application's next poll(), so a member stuck in its handler keeps
    // the whole round waiting (up to the rebalance timeout).
    let eager = busy_member_holds_the_round("range");
    let stopped = eager.iter().filter(|count| **count == 0).count();
    assert!(
        stopped >= 20,
        "eager: member 1 waits without partitions for {stopped} samples"
    );
    let cooperative = busy_member_holds_the_round("cooperative-sticky");
    let stopped_cooperative = cooperative.iter().filter(|count| **count == 0).count();
    assert!(
        stopped_cooperative < stopped,
        "cooperative: member 1 keeps reading ({stopped_cooperative} vs {stopped} samples without partitions)"
    );
}

// ----- the consumer protocol (KIP-848) ---------------------------------
//
// Drawn from Kafka's `GroupMetadataManagerTest`
// (`testMemberJoinsEmptyConsumerGroup`, `testUpdatingSubscriptionTriggersNewTargetAssignment`,
// `testReconciliationProcess`: revoke first, then assign; `testSessionTimeoutExpiration`;
// `testOnLoaded` rescheduling sessions) and the client's
// `ConsumerMembershipManagerTest` (`testFencedWhenInStable...`: partitions
// lost, rejoin at epoch 0; `testReconciliationCommitsBeforeRevocation`).

fn modern(group: &str) -> ConsumerConfig {
    let mut consumer = ConsumerConfig::new(group, vec!["orders".into()]);
    consumer.auto_offset_reset = OffsetReset::Earliest;
    consumer.group_protocol = kafkascope_engine::sim::config::GroupProtocol::Consumer;
    consumer
}

/// Target assignments stored after `from_ms`: epoch and reason.
fn targets_after(simulation: &Simulation, from_ms: u64) -> Vec<(u32, String)> {
    simulation
        .trace()
        .iter()
        .filter(|event| event.time > from_ms)
        .filter_map(|event| match &event.kind {
            TraceKind::TargetAssignment { epoch, reason, .. } => Some((*epoch, reason.to_string())),
            _ => None,
        })
        .collect()
}

/// Records each consumer returned from `poll()` after `from_ms`.
fn consumed_after(simulation: &Simulation, from_ms: u64) -> Vec<u64> {
    let mut counts = vec![0; simulation.view().consumers.len()];
    for event in simulation.trace().iter().filter(|event| event.time > from_ms) {
        if let TraceKind::Consumed { consumer, from, to, .. } = &event.kind {
            counts[*consumer as usize] += to - from;
        }
    }
    counts
}

#[test]
fn a_consumer_protocol_group_gives_a_new_member_partitions_while_the_others_keep_reading() {
    let mut simulation = Simulation::new(config(4, vec![modern("billing"), modern("billing")]), 11).expect("valid");
    produce(&mut simulation, 100, 40);
    simulation.run_until(15_000);
    let before = memberships(&simulation);
    assert!(before.iter().all(|(_, partitions)| partitions.len() == 2), "{before:?}");
    // Traffic to every partition all along (keyed: keyless records stick
    // to one partition per batch): members that keep their partitions keep
    // reading.
    for second in 15..40 {
        for key in 0..8 {
            at(
                &mut simulation,
                second * 1_000,
                Input::Produce {
                    producer: 0,
                    key: Some(format!("key-{key}")),
                    count: 1,
                    bytes: 100,
                },
            );
        }
    }
    at(
        &mut simulation,
        20_000,
        Input::AddConsumer {
            consumer: modern("billing"),
        },
    );
    simulation.run_until(60_000);

    let after = memberships(&simulation);
    assert_eq!(after.len(), 3);
    let mut owned: Vec<String> = after.iter().flat_map(|(_, partitions)| partitions.clone()).collect();
    owned.sort();
    assert_eq!(owned, ["orders-0", "orders-1", "orders-2", "orders-3"], "{after:?}");
    assert!(
        after[2].1.len() == 1 || after[2].1.len() == 2,
        "the newcomer reads: {after:?}"
    );
    // One new target assignment, for the join; no member ever had to stop:
    // each kept reading during the reconciliation.
    let targets = targets_after(&simulation, 20_000);
    assert_eq!(targets.len(), 1, "{targets:?}");
    assert!(targets[0].1.contains("joined"), "{targets:?}");
    let during = consumed_after(&simulation, 20_000);
    assert!(during[0] > 0 && during[1] > 0 && during[2] > 0, "{during:?}");
    // Every record read exactly once: the one who gave a partition up
    // committed it first.
    let read = total_read(&simulation);
    assert_eq!(read, 40 + 25 * 8);
    assert!(simulation
        .trace()
        .iter()
        .any(|event| matches!(&event.kind, TraceKind::ConsumerStatus { status: ConsumerChange::Reconciled { revoked, .. }, .. } if !revoked.is_empty())));
    assert_eq!(simulation.summary().invariant_violations, 0);
}

#[test]
fn a_consumer_protocol_group_survives_its_coordinator_without_a_new_epoch() {
    let mut simulation = Simulation::new(config(4, vec![modern("billing"), modern("billing")]), 5).expect("valid");
    produce(&mut simulation, 100, 40);
    simulation.run_until(20_000);
    let before = memberships(&simulation);
    let dead = coordinator(&simulation);
    at(&mut simulation, 20_000, Input::KillBroker { broker: dead });
    produce(&mut simulation, 45_000, 40);
    simulation.run_until(90_000);

    assert_ne!(coordinator(&simulation), dead);
    assert_eq!(targets_after(&simulation, 20_000), Vec::<(u32, String)>::new());
    assert_eq!(memberships(&simulation), before, "same epochs, same partitions");
    let read = total_read(&simulation);
    assert_eq!(read, 80);
    assert_eq!(simulation.summary().invariant_violations, 0);
}

#[test]
fn a_paused_consumer_protocol_member_is_fenced_and_joins_again_at_epoch_zero() {
    let mut cluster = config(4, vec![modern("billing"), modern("billing")]);
    cluster.group_consumer_session_timeout_ms = 10_000;
    cluster.group_consumer_heartbeat_interval_ms = 3_000;
    cluster.group_consumer_min_session_timeout_ms = 10_000;
    cluster.group_consumer_min_heartbeat_interval_ms = 3_000;
    let mut simulation = Simulation::new(cluster, 3).expect("valid");
    produce(&mut simulation, 100, 20);
    simulation.run_until(15_000);
    at(
        &mut simulation,
        15_000,
        Input::PauseConsumer {
            consumer: 0,
            duration_ms: 20_000,
        },
    );
    for second in 16..60 {
        produce(&mut simulation, second * 1_000, 2);
    }
    simulation.run_until(70_000);

    let reasons: Vec<String> = targets_after(&simulation, 15_000)
        .into_iter()
        .map(|(_, reason)| reason)
        .collect();
    assert!(reasons[0].contains("missed its session timeout"), "{reasons:?}");
    assert!(reasons.iter().any(|reason| reason.contains("joined")), "{reasons:?}");
    assert!(simulation.trace().iter().any(|event| matches!(
        &event.kind,
        TraceKind::ConsumerStatus {
            consumer: 0,
            status: ConsumerChange::EpochFenced { .. }
        }
    )));
    // While member 0 slept, member 1 read everything; afterwards both read.
    let after = memberships(&simulation);
    assert!(after.iter().all(|(_, partitions)| partitions.len() == 2), "{after:?}");
    let read = total_read(&simulation);
    assert!(read >= 20 + 44 * 2, "nothing left unread: {read}");
    assert_eq!(simulation.summary().invariant_violations, 0);
}

#[test]
fn a_consumer_protocol_member_that_stops_polling_leaves_and_joins_again() {
    let mut slow = modern("billing");
    slow.max_poll_interval_ms = 5_000;
    slow.max_poll_records = 10;
    let mut simulation = Simulation::new(config(2, vec![slow, modern("billing")]), 4).expect("valid");
    produce(&mut simulation, 100, 10);
    simulation.run_until(10_000);
    set_handler(&mut simulation, 10_000, 0, 1_000);
    produce(&mut simulation, 11_000, 40);
    set_handler(&mut simulation, 25_000, 0, 0);
    simulation.run_until(60_000);
    assert!(simulation.trace().iter().any(|event| matches!(
        &event.kind,
        TraceKind::ConsumerStatus {
            consumer: 0,
            status: ConsumerChange::PollTimeout { .. }
        }
    )));
    let left = simulation.trace().iter().any(|event| {
        matches!(
            &event.kind,
            TraceKind::Sent { facts, .. } if facts.member_epoch == Some(-1)
        )
    });
    assert!(left, "it left with epoch -1");
    let after = memberships(&simulation);
    assert!(after.iter().all(|(_, partitions)| partitions.len() == 1), "{after:?}");
    assert_eq!(simulation.summary().invariant_violations, 0);
}

#[test]
fn the_consumer_protocol_is_checked_where_the_model_stops() {
    let mut stat = modern("billing");
    stat.group_instance_id = Some("a".into());
    let error = ClusterConfig::validate(&config(2, vec![stat])).expect_err("refused");
    assert!(error.contains("static membership"), "{error}");
    let error = ClusterConfig::validate(&config(2, vec![modern("billing"), consumer(None)])).expect_err("refused");
    assert!(error.contains("one protocol"), "{error}");
    let mut odd = modern("billing");
    odd.group_remote_assignor = Some("sticky".into());
    let error = ClusterConfig::validate(&config(2, vec![odd])).expect_err("refused");
    assert!(error.contains("group.consumer.assignors"), "{error}");
    let mut range = modern("billing");
    range.group_remote_assignor = Some("range".into());
    ClusterConfig::validate(&config(2, vec![range.clone(), range])).expect("range is a server assignor");
}

/// KIP-848's broker bounds (`GroupCoordinatorConfig`): a session timeout
/// or heartbeat interval outside its minimum and maximum keeps the broker
/// from starting, with Kafka's message; lowering the minimum too is fine.
#[test]
fn kip_848_session_and_heartbeat_stay_within_the_brokers_bounds() {
    let mut cluster = ClusterConfig {
        group_consumer_session_timeout_ms: 10_000,
        ..ClusterConfig::default()
    };
    let refused = cluster.validate().expect_err("below the minimum");
    assert!(
        refused.contains(
            "group.consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms"
        ),
        "{refused}"
    );
    cluster.group_consumer_min_session_timeout_ms = 10_000;
    assert_eq!(cluster.validate(), Ok(()));
    cluster.group_consumer_heartbeat_interval_ms = 20_000;
    let refused = cluster.validate().expect_err("above the maximum");
    assert!(
        refused.contains("group.consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms"),
        "{refused}"
    );
    cluster.group_consumer_max_heartbeat_interval_ms = 20_000;
    let refused = cluster.validate().expect_err("not below the session");
    assert!(
        refused.contains("group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms"),
        "{refused}"
    );
}
