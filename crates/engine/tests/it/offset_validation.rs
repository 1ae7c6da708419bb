//! KIP-320: a consumer validates its position after a leader change
//! (`SubscriptionState#maybeValidatePositionForCurrentLeader`,
//! `OffsetsForLeaderEpochUtils`, `SubscriptionState#maybeCompleteValidation`).
//! The shipped scenario `a-consumer-finds-the-log-truncated-under-it.json`
//! (with its golden trace) shows the seek to the divergence point; these
//! tests pin what `auto.offset.reset=none` does with it, and that the
//! consumer sends no fetch while its position awaits validation.

use kafkascope_engine::protocol::messages::MessageName;
use kafkascope_engine::sim::config::{ConfigChange, Input, OffsetReset, ScheduledInput};
use kafkascope_engine::sim::consumer::ConsumerPhase;
use kafkascope_engine::sim::scenario::Scenario;
use kafkascope_engine::sim::trace::TraceKind;
use kafkascope_engine::sim::types::NodeId;

fn scenario(reset: OffsetReset) -> Scenario {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/a-consumer-finds-the-log-truncated-under-it.json");
    let text = std::fs::read_to_string(path).expect("the scenario");
    let mut scenario = Scenario::from_json(&text).expect("it parses");
    scenario.config.consumers[0].auto_offset_reset = reset;
    scenario.expect.clear();
    scenario
}

/// With a reset policy the consumer seeks to where the logs part and reads
/// the new leader's records there; with `none`, `poll()` throws
/// `LogTruncationException` and (this application not catching it) the
/// consumer closes without reading them.
#[test]
fn a_truncation_found_without_a_reset_policy_stops_the_consumer() {
    // It starts from the beginning (nothing is committed yet) and is
    // switched to `none` once it has read the first ten records.
    let mut switched = scenario(OffsetReset::Earliest);
    switched.inputs.push(ScheduledInput {
        at_ms: 20_000,
        input: Input::SetConfig(ConfigChange::AutoOffsetReset {
            consumer: 0,
            reset: OffsetReset::None,
        }),
    });
    switched.inputs.sort_by_key(|input| input.at_ms);
    let outcome = switched.run().expect("runs");
    let simulation = &outcome.simulation;
    let found: Vec<_> = simulation
        .trace()
        .iter()
        .filter_map(|event| match &event.kind {
            TraceKind::LogTruncationDetected {
                position,
                diverging,
                reset,
                ..
            } => Some((*position, *diverging, *reset)),
            _ => None,
        })
        .collect();
    assert_eq!(found, vec![(10, Some(5), OffsetReset::None)]);
    let consumer = &simulation.consumers()[0];
    assert_eq!(consumer.phase, ConsumerPhase::Stopped);
    assert_eq!(
        consumer.records_read, 10,
        "it read the first ten records and none of the new leader's"
    );

    let outcome = scenario(OffsetReset::Earliest).run().expect("runs");
    assert_eq!(outcome.simulation.consumers()[0].records_read, 15);
}

/// Between the leader change and the answer to its `OffsetForLeaderEpoch`,
/// the partition is not fetched (`AWAIT_VALIDATION` has no valid position).
#[test]
fn a_position_awaiting_validation_is_not_fetched() {
    let outcome = scenario(OffsetReset::Earliest).run().expect("runs");
    let mut awaiting = false;
    let mut validations = 0;
    for event in outcome.simulation.trace() {
        let TraceKind::Sent { from, name, .. } = &event.kind else {
            continue;
        };
        match name {
            MessageName::OffsetForLeaderEpoch => {
                awaiting = true;
                validations += 1;
            }
            MessageName::OffsetForLeaderEpochResponse => awaiting = false,
            MessageName::Fetch if matches!(from, NodeId::Consumer(_)) => assert!(
                !awaiting,
                "a fetch went out at {} ms while the position awaited validation",
                event.time
            ),
            _ => {}
        }
    }
    assert!(validations >= 1, "no validation was sent");
}
