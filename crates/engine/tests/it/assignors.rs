//! Assignors against Kafka's own outputs (`vectors-assignors.json`).
//!
//! Each step's `kafka_output` is what Kafka's assignor class returned for the
//! step's input. Where a unit test pinned the answer (`expected_by_test`), the
//! step's `compare` says whether order matters; otherwise the output must be
//! Kafka's exactly, order included.

use std::collections::BTreeMap;

use kafkascope_engine::groups::assignors::{assign, Assignment, GroupInput, Strategy, TopicPartition};
use serde_json::Value;

use crate::vectors::load;

/// The vector files' assignor names.
fn strategy_for(vector_name: &str) -> Option<Strategy> {
    match vector_name {
        "range" => Some(Strategy::Range),
        "roundrobin" => Some(Strategy::RoundRobin),
        "server-range" => Some(Strategy::ServerRange),
        "sticky" => Some(Strategy::Sticky),
        "cooperative-sticky" => Some(Strategy::CooperativeSticky),
        "server-uniform" => Some(Strategy::Uniform),
        _ => None,
    }
}

fn parse_input(input: &Value) -> GroupInput {
    // The CLI's JSON shape is the vector files' shape: serde must read every input as it is.
    serde_json::from_value(input.clone()).expect("the CLI accepts the vector input")
}

fn parse_assignment(value: &Value) -> Assignment {
    serde_json::from_value(value.clone()).expect("an assignment")
}

fn as_sets(assignment: &Assignment) -> BTreeMap<String, Vec<TopicPartition>> {
    assignment
        .iter()
        .map(|(member, partitions)| {
            let mut sorted = partitions.clone();
            sorted.sort();
            (member.clone(), sorted)
        })
        .collect()
}

#[test]
fn every_assignor_matches_kafka() {
    let vectors = load("vectors-assignors.json");
    let mut checked = 0;
    let mut failures = Vec::new();
    for case in vectors["cases"].as_array().expect("cases") {
        let name = case["assignor"].as_str().expect("assignor");
        let strategy = strategy_for(name).unwrap_or_else(|| panic!("no strategy for the vectors' assignor {name:?}"));
        let id = case["id"].as_str().expect("id");
        for (step_index, step) in case["steps"].as_array().expect("steps").iter().enumerate() {
            let mut input = parse_input(&step["input"]);
            if let Some(topic_ids) = step["topic_ids"].as_object() {
                for (topic, id) in topic_ids {
                    input
                        .topic_ids
                        .insert(topic.clone(), id.as_str().expect("topic id").to_string());
                }
            }
            let actual = assign(strategy, &input).unwrap_or_else(|error| panic!("{id} step {step_index}: {error}"));
            let expected = parse_assignment(&step["kafka_output"]);
            let order_matters = step["expected_by_test"].is_null() || step["compare"] == "list";
            let matches = if order_matters {
                actual == expected
            } else {
                as_sets(&actual) == as_sets(&expected)
            };
            if !matches {
                failures.push(format!(
                    "{id} step {step_index}:\n  kafka: {expected:?}\n  ours:  {actual:?}"
                ));
            }
            checked += 1;
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} steps differ from Kafka:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(checked >= 70, "only {checked} assignor steps were found");
}
