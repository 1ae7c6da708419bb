//! The classic group coordinator against `vectors-group-coordinator.json`
//! (SEMANTICS.md §12): sequences of JoinGroup, SyncGroup, Heartbeat,
//! LeaveGroup, OffsetCommit, clock advances and coordinator reloads,
//! computed by running Kafka's own `GroupCoordinatorShard`
//! (`GroupMetadataManager`, `OffsetMetadataManager`, `ClassicGroup`).
//!
//! Each step is replayed through [`ClassicShard`] on the same clock. The
//! step's own answer, the parked answers it released, the timers that
//! fired, the records written and the snapshot after it are compared field
//! by field. Member ids are Kafka's random UUIDs, normalised to m1, m2, …
//! in order of first appearance; the engine's ids are normalised the same
//! way. Where Kafka picks a new leader from a `HashMap`, the vector's
//! choice is followed (SEMANTICS.md says any member is right there).
//!
//! Every sequence is checked; failures are collected and reported together.

use std::collections::BTreeMap;

use kafkascope_engine::groups::classic::{
    AppendCallback, ClassicConfig, ClassicShard, CoordinatorRecord, JoinRequest, MemberIdentity, Output, Protocol,
    RequestId, Response, SyncRequest, Write,
};
use kafkascope_engine::sim::types::ErrorCode;
use serde_json::{json, Value};

use crate::vectors::{hex_bytes, load};

const GROUP: &str = "g";
const CLIENT_ID: &str = "client";
const TICK_MS: u64 = 100;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn error_name(error: Option<ErrorCode>) -> String {
    error.map_or("NONE".to_string(), |error| error.to_string())
}

/// Member ids: the engine's raw ids and the vector's normalised ones.
#[derive(Default)]
struct Names {
    to_vector: BTreeMap<String, String>,
    to_engine: BTreeMap<String, String>,
}

impl Names {
    fn learn(&mut self, raw: String) {
        if !self.to_vector.contains_key(&raw) {
            let name = format!("m{}", self.to_vector.len() + 1);
            self.to_engine.insert(name.clone(), raw.clone());
            self.to_vector.insert(raw, name);
        }
    }

    fn vector(&self, raw: &str) -> String {
        self.to_vector.get(raw).cloned().unwrap_or_else(|| raw.to_string())
    }

    fn engine(&self, name: &str) -> String {
        self.to_engine.get(name).cloned().unwrap_or_else(|| name.to_string())
    }

    fn optional(&self, raw: Option<&str>) -> Value {
        raw.map_or(Value::Null, |raw| json!(self.vector(raw)))
    }

    /// A timer key with its member id normalised.
    fn timer_key(&self, key: &str) -> String {
        match key.strip_prefix("heartbeat-g-") {
            Some(member) => format!("heartbeat-g-{}", self.vector(member)),
            None => key.to_string(),
        }
    }
}

fn text(value: &Value) -> Option<String> {
    value.as_str().map(str::to_string)
}

fn number(value: &Value) -> i64 {
    value.as_i64().unwrap_or_else(|| panic!("not a number: {value}"))
}

fn sorted(mut values: Vec<Value>) -> Vec<Value> {
    values.sort_by_key(|value| value.to_string());
    values
}

fn response_json(response: &Response, names: &Names) -> Value {
    match response {
        Response::Join(join) => {
            let mut members: Vec<String> = join
                .members
                .iter()
                .map(|member| match &member.group_instance_id {
                    Some(instance) => format!("{}/{instance}", names.vector(&member.member_id)),
                    None => names.vector(&member.member_id),
                })
                .collect();
            members.sort();
            json!({
                "error": error_name(join.error),
                "generation": join.generation,
                "protocolType": join.protocol_type,
                "protocolName": join.protocol_name,
                "memberId": names.vector(&join.member_id),
                "leader": names.vector(&join.leader),
                "skipAssignment": join.skip_assignment,
                "members": members,
            })
        }
        Response::Sync(sync) => json!({
            "error": error_name(sync.error),
            "protocolType": sync.protocol_type,
            "protocolName": sync.protocol_name,
            "assignment": hex(&sync.assignment),
        }),
        Response::Heartbeat(error) | Response::OffsetCommit(error) | Response::TxnOffsetCommit(_, error) => {
            json!({ "error": error_name(*error) })
        }
        Response::Leave(leave) => {
            let mut value = json!({ "error": error_name(leave.error) });
            if leave.error.is_none() {
                value["members"] = leave
                    .members
                    .iter()
                    .map(|member| {
                        json!({
                            "memberId": names.vector(&member.member_id),
                            "groupInstanceId": member.group_instance_id,
                            "error": error_name(member.error),
                        })
                    })
                    .collect();
            }
            value
        }
    }
}

/// The vector's response with the leader's member list sorted.
fn expected_response(response: &Value) -> Value {
    let mut response = response.clone();
    if let Some(members) = response.get_mut("members").and_then(Value::as_array_mut) {
        if members.iter().all(Value::is_string) {
            members.sort_by_key(|member| member.to_string());
        }
    }
    response
}

fn record_json(offset: usize, record: &CoordinatorRecord, names: &Names) -> Value {
    match record {
        CoordinatorRecord::GroupMetadata { group, value } => json!({
            "offset": offset,
            "type": "GroupMetadata",
            "group": group,
            "value": value.as_ref().map(|value| json!({
                "protocolType": value.protocol_type,
                "generation": value.generation,
                "protocol": value.protocol,
                "leader": names.optional(value.leader.as_deref()),
                "currentStateTimestamp": value.current_state_timestamp,
                "members": sorted(value.members.iter().map(|member| json!({
                    "memberId": names.vector(&member.member_id),
                    "groupInstanceId": member.group_instance_id,
                    "sessionTimeout": member.session_timeout_ms,
                    "rebalanceTimeout": member.rebalance_timeout_ms,
                    "assignment": hex(&member.assignment),
                    "subscription": hex(&member.subscription),
                })).collect()),
            })),
        }),
        CoordinatorRecord::OffsetCommit {
            group,
            topic,
            partition,
            value,
        } => json!({
            "offset": offset,
            "type": "OffsetCommit",
            "group": group,
            "topic": topic,
            "partition": partition,
            "value": value.as_ref().map(|value| json!({
                "offset": value.offset,
                "leaderEpoch": value.leader_epoch,
                "metadata": value.metadata,
                "commitTimestamp": value.commit_timestamp,
            })),
        }),
    }
}

fn expected_record(record: &Value) -> Value {
    let mut record = record.clone();
    if let Some(members) = record
        .get_mut("value")
        .and_then(|value| value.get_mut("members"))
        .and_then(Value::as_array_mut)
    {
        let mut list = std::mem::take(members);
        for member in &mut list {
            if let Some(fields) = member.as_object_mut() {
                fields.retain(|key, _| {
                    matches!(
                        key.as_str(),
                        "memberId"
                            | "groupInstanceId"
                            | "sessionTimeout"
                            | "rebalanceTimeout"
                            | "assignment"
                            | "subscription"
                    )
                });
            }
        }
        *members = sorted(list);
    }
    record
}

fn snapshot_json(shard: &ClassicShard, names: &Names) -> Value {
    let group = shard.group(GROUP).map(|group| {
        let mut pending: Vec<String> = group.pending_join.iter().map(|member| names.vector(member)).collect();
        pending.sort();
        let mut pending_sync: Vec<String> = group.pending_sync.iter().map(|member| names.vector(member)).collect();
        pending_sync.sort();
        json!({
            "state": group.state,
            "generation": group.generation,
            "protocolType": group.protocol_type,
            "protocol": group.protocol_name,
            "leader": names.optional(group.leader.as_deref()),
            "members": sorted(group.members.iter().map(|member| json!({
                "memberId": names.vector(&member.member_id),
                "groupInstanceId": member.group_instance_id,
                "sessionTimeoutMs": member.session_timeout_ms,
                "rebalanceTimeoutMs": member.rebalance_timeout_ms,
                "awaitingJoin": member.awaiting_join.is_some(),
                "awaitingSync": member.awaiting_sync.is_some(),
                "assignment": hex(&member.assignment),
                "isNew": member.is_new,
            })).collect()),
            "pendingMembers": pending,
            "numPendingJoinMembers": group.pending_join.len(),
            "pendingSyncMembers": pending_sync,
        })
    });
    let mut offsets: Vec<String> = shard
        .committed_offsets(GROUP)
        .into_iter()
        .map(|((topic, partition), offset)| format!("{topic}-{partition}={offset}"))
        .collect();
    offsets.sort();
    let timers: serde_json::Map<String, Value> = shard
        .timers()
        .into_iter()
        .map(|(key, deadline)| (names.timer_key(&key), json!(deadline)))
        .collect();
    json!({
        "timeMs": shard.now_ms(),
        "group": group,
        "offsets": offsets,
        "timers": timers,
    })
}

fn expected_snapshot(after: &Value) -> Value {
    let mut after = after.clone();
    if let Some(group) = after.get_mut("group").filter(|group| !group.is_null()) {
        for field in ["members", "pendingMembers", "pendingSyncMembers"] {
            if let Some(list) = group.get_mut(field).and_then(Value::as_array_mut) {
                let taken = std::mem::take(list);
                *list = sorted(taken);
            }
        }
    }
    if let Some(offsets) = after.get_mut("offsets").and_then(Value::as_array_mut) {
        let taken = std::mem::take(offsets);
        *offsets = sorted(taken);
    }
    after
}

/// One sequence's replay state.
struct Replay {
    shard: ClassicShard,
    log: Vec<CoordinatorRecord>,
    names: Names,
    /// Request id (the step) to its client and API.
    requests: BTreeMap<RequestId, (String, &'static str)>,
}

/// What a step produced, after the log's owner handled its writes.
#[derive(Default)]
struct Step {
    responses: Vec<(RequestId, Response)>,
    records: Vec<(usize, CoordinatorRecord)>,
    timers_fired: Vec<(String, u64)>,
}

impl Replay {
    fn new() -> Replay {
        let mut shard = ClassicShard::new(ClassicConfig::default(), 0, 0);
        shard.on_loaded();
        Replay {
            shard,
            log: Vec::new(),
            names: Names::default(),
            requests: BTreeMap::new(),
        }
    }

    /// Plays the runtime: append each write, replay it if asked, and
    /// complete it at once (the vectors' log commits instantly).
    fn absorb(&mut self, output: Output, step: &mut Step) {
        step.responses.extend(output.responses);
        step.timers_fired.extend(output.timers_fired);
        let mut writes: std::collections::VecDeque<Write> = output.writes.into();
        while let Some(write) = writes.pop_front() {
            for record in &write.records {
                step.records.push((self.log.len(), record.clone()));
                self.log.push(record.clone());
                if write.replay {
                    self.shard.replay(record);
                }
            }
            if let Some(callback) = &write.callback {
                let more = self.shard.committed(callback);
                step.responses.extend(more.responses);
                writes.extend(more.writes);
            }
            if let Some(response) = write.response {
                step.responses.push(response);
            }
        }
    }

    fn identity(&self, op: &Value) -> MemberIdentity {
        MemberIdentity {
            member_id: self.names.engine(op["memberId"].as_str().unwrap_or("")),
            group_instance_id: text(&op["groupInstanceId"]),
        }
    }

    fn play(&mut self, index: usize, op: &Value) -> Step {
        let request = index as RequestId;
        let client = op["client"].as_str().unwrap_or("").to_string();
        let mut step = Step::default();
        let counter_before = self.shard.member_counter();
        let output = match op["op"].as_str().expect("op") {
            "join" => {
                self.requests.insert(request, (client, "JoinGroup"));
                let join = JoinRequest {
                    group_id: GROUP.to_string(),
                    member_id: self.names.engine(op["memberId"].as_str().unwrap_or("")),
                    group_instance_id: text(&op["groupInstanceId"]),
                    session_timeout_ms: number(&op["sessionTimeoutMs"]) as u64,
                    rebalance_timeout_ms: number(&op["rebalanceTimeoutMs"]) as u64,
                    protocol_type: "consumer".to_string(),
                    protocols: vec![Protocol {
                        name: op["protocol"].as_str().expect("protocol").to_string(),
                        metadata: hex_bytes(op["metadata"].as_str().expect("metadata")),
                    }],
                    client_id: CLIENT_ID.to_string(),
                };
                let output = self.shard.shard_join(request, &join);
                // A join hands out at most one new member id.
                if self.shard.member_counter() > counter_before {
                    let prefix = join.group_instance_id.clone().unwrap_or_else(|| CLIENT_ID.to_string());
                    self.names.learn(format!("{prefix}-{}", self.shard.member_counter()));
                }
                output
            }
            "sync" => {
                self.requests.insert(request, (client, "SyncGroup"));
                let identity = self.identity(op);
                let assignments = op["assignments"]
                    .as_array()
                    .map(|list| {
                        list.iter()
                            .map(|entry| {
                                (
                                    self.names.engine(entry["memberId"].as_str().expect("member")),
                                    hex_bytes(entry["assignment"].as_str().expect("assignment")),
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let sync = SyncRequest {
                    group_id: GROUP.to_string(),
                    member_id: identity.member_id,
                    group_instance_id: identity.group_instance_id,
                    generation: number(&op["generation"]) as i32,
                    assignments,
                };
                self.shard.sync(request, &sync)
            }
            "heartbeat" => {
                self.requests.insert(request, (client, "Heartbeat"));
                let identity = self.identity(op);
                self.shard
                    .heartbeat(request, GROUP, &identity, number(&op["generation"]) as i32)
            }
            "leave" => {
                self.requests.insert(request, (client, "LeaveGroup"));
                let identity = self.identity(op);
                self.shard.leave(request, GROUP, &[identity])
            }
            "commit" => {
                self.requests.insert(request, (client, "OffsetCommit"));
                let identity = self.identity(op);
                let offsets = [(
                    op["topic"].as_str().expect("topic").to_string(),
                    number(&op["partition"]) as u32,
                    number(&op["offset"]),
                )];
                self.shard
                    .commit(request, GROUP, &identity, number(&op["generation"]) as i32, &offsets)
            }
            "advance" => {
                let mut remaining = number(&op["ms"]) as u64;
                while remaining > 0 {
                    let tick = remaining.min(TICK_MS);
                    remaining -= tick;
                    let now = self.shard.now_ms() + tick;
                    let output = self.shard.poll(now);
                    self.absorb(output, &mut step);
                }
                Output::default()
            }
            "reload" => {
                let unloaded = self.shard.unload();
                self.absorb(unloaded, &mut step);
                let mut shard = ClassicShard::new(
                    ClassicConfig::default(),
                    self.shard.now_ms(),
                    self.shard.member_counter(),
                );
                for record in &self.log {
                    shard.replay(record);
                }
                shard.on_loaded();
                self.shard = shard;
                Output::default()
            }
            other => panic!("unknown op {other}"),
        };
        self.absorb(output, &mut step);
        step
    }
}

fn check_sequence(sequence: &Value) -> Result<(), String> {
    let mut replay = Replay::new();
    let steps = sequence["steps"].as_array().expect("steps");
    for (index, expected) in steps.iter().enumerate() {
        let op = &expected["op"];
        // Follow Kafka's HashMap choice of a new leader: the leader its
        // JoinGroup answers name in this step, else the one after it.
        let answers = std::iter::once(&expected["response"]).chain(
            expected["completed"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|entry| &entry["response"]),
        );
        replay.shard.leader_preference = answers
            .filter_map(|response| response["leader"].as_str())
            .chain(expected["after"]["group"]["leader"].as_str())
            .filter(|leader| !leader.is_empty())
            .map(|leader| replay.names.engine(leader))
            .collect();
        let step = replay.play(index, op);
        let names = &replay.names;
        let fail = |what: &str, got: &Value, want: &Value| {
            Err(format!(
                "seq {} step {index} ({}): {what}\n   got  {got}\n   want {want}",
                sequence["seq"], op
            ))
        };

        let own: Vec<Value> = step
            .responses
            .iter()
            .filter(|(request, _)| *request == index as RequestId)
            .map(|(_, response)| response_json(response, names))
            .collect();
        if op["op"] != "advance" && op["op"] != "reload" {
            let want = if expected["response"].is_null() {
                Value::Null
            } else {
                expected_response(&expected["response"])
            };
            let got = own.first().cloned().unwrap_or(Value::Null);
            if got != want {
                return fail("response", &got, &want);
            }
        }

        let completed = sorted(
            step.responses
                .iter()
                .filter(|(request, _)| *request != index as RequestId)
                .map(|(request, response)| {
                    let (client, api) = replay.requests.get(request).cloned().unwrap_or_default();
                    json!({
                        "client": client,
                        "api": api,
                        "requestStep": request,
                        "response": response_json(response, names),
                    })
                })
                .collect(),
        );
        let want_completed = sorted(
            expected["completed"]
                .as_array()
                .map(|list| {
                    list.iter()
                        .map(|entry| {
                            let mut entry = entry.clone();
                            entry["response"] = expected_response(&entry["response"]);
                            entry
                        })
                        .collect()
                })
                .unwrap_or_default(),
        );
        if completed != want_completed {
            return fail("completed", &json!(completed), &json!(want_completed));
        }

        let fired: Vec<Value> = step
            .timers_fired
            .iter()
            .map(|(key, at)| json!({ "key": names.timer_key(key), "atMs": at }))
            .collect();
        let want_fired = expected["timersFired"].as_array().cloned().unwrap_or_default();
        if sorted(fired.clone()) != sorted(want_fired.clone()) {
            return fail("timersFired", &json!(fired), &json!(want_fired));
        }

        let records: Vec<Value> = step
            .records
            .iter()
            .map(|(offset, record)| record_json(*offset, record, names))
            .collect();
        let want_records: Vec<Value> = expected["records"]
            .as_array()
            .map(|list| list.iter().map(expected_record).collect())
            .unwrap_or_default();
        if records != want_records {
            return fail("records", &json!(records), &json!(want_records));
        }

        let after = snapshot_json(&replay.shard, names);
        let want_after = expected_snapshot(&expected["after"]);
        if after != want_after {
            return fail("after", &after, &want_after);
        }
    }
    Ok(())
}

/// Checks every sequence and reports the failures together.
fn check_all(sequences: &[Value], kind: &str, check: fn(&Value) -> Result<(), String>) {
    let failures: Vec<String> = sequences.iter().filter_map(|sequence| check(sequence).err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {} {kind} sequences differ from Kafka's group coordinator:\n{}",
        failures.len(),
        sequences.len(),
        failures.iter().take(5).cloned().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn classic_groups_match_kafkas_group_coordinator() {
    let vectors = load("vectors-group-coordinator.json");
    let sequences = vectors["classic"].as_array().expect("classic sequences");
    assert!(
        sequences.len() >= 100,
        "expected the classic sequences, found {}",
        sequences.len()
    );
    check_all(sequences, "classic", check_sequence);
}

/// The writes' callbacks are plain data, so a runtime can hold them until
/// the log commits.
#[test]
fn append_callbacks_can_wait_for_the_log() {
    let mut shard = ClassicShard::new(ClassicConfig::default(), 0, 0);
    shard.on_loaded();
    let join = JoinRequest {
        group_id: GROUP.to_string(),
        member_id: String::new(),
        group_instance_id: None,
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 10_000,
        protocol_type: "consumer".to_string(),
        protocols: vec![Protocol {
            name: "range".to_string(),
            metadata: vec![1],
        }],
        client_id: CLIENT_ID.to_string(),
    };
    let output = shard.join(1, &join);
    assert!(matches!(
        output.writes[0].callback,
        Some(AppendCallback::NewGroup { request: 1, .. })
    ));
    assert!(matches!(
        &output.responses[0].1,
        Response::Join(response) if response.error == Some(ErrorCode::MemberIdRequired)
    ));
    // The service rejects a session timeout under the broker's minimum.
    let short = JoinRequest {
        session_timeout_ms: 5_000,
        ..join
    };
    let output = shard.join(2, &short);
    assert!(matches!(
        &output.responses[0].1,
        Response::Join(response) if response.error == Some(ErrorCode::InvalidSessionTimeout)
    ));
}

// ----- KIP-848: the consumer protocol (SEMANTICS.md §12.1) ----------------

mod consumer_protocol {
    use std::collections::{BTreeMap, BTreeSet};

    use kafkascope_engine::groups::consumer::{
        ConsumerConfig, ConsumerOutput, ConsumerRecord, ConsumerShard, HeartbeatRequest, HeartbeatResponse, Partition,
    };
    use serde_json::{json, Value};

    use super::error_name;
    use crate::vectors::load;

    const GROUP: &str = "g";

    /// Raw member ids chosen so that they sort as Kafka's did
    /// (`memberIdSortOrder`), which the range assignor's order depends on.
    struct Names {
        to_vector: BTreeMap<String, String>,
        to_engine: BTreeMap<String, String>,
    }

    impl Names {
        fn new(sort_order: &[Value]) -> Names {
            let mut names = Names {
                to_vector: BTreeMap::new(),
                to_engine: BTreeMap::new(),
            };
            for (rank, name) in sort_order.iter().enumerate() {
                let name = name.as_str().expect("member name").to_string();
                let raw = format!("member-{rank:03}");
                names.to_vector.insert(raw.clone(), name.clone());
                names.to_engine.insert(name, raw);
            }
            names
        }

        fn vector(&self, raw: &str) -> String {
            self.to_vector.get(raw).cloned().unwrap_or_else(|| raw.to_string())
        }

        fn engine(&self, name: &str) -> String {
            self.to_engine.get(name).cloned().unwrap_or_else(|| name.to_string())
        }

        /// Raw ids in the order Kafka handed them out (m1, m2, ...).
        fn in_order(&self) -> Vec<String> {
            (1..=self.to_engine.len())
                .filter_map(|index| self.to_engine.get(&format!("m{index}")).cloned())
                .collect()
        }

        fn key(&self, key: &str) -> String {
            for prefix in ["session-timeout-g-", "rebalance-timeout-g-"] {
                if let Some(member) = key.strip_prefix(prefix) {
                    return format!("{prefix}{}", self.vector(member));
                }
            }
            key.to_string()
        }
    }

    fn partition(text: &str) -> Partition {
        let (topic, index) = text.rsplit_once('-').expect("topic-partition");
        (topic.to_string(), index.parse().expect("partition index"))
    }

    fn partitions(value: &Value) -> Option<Vec<Partition>> {
        value.as_array().map(|list| {
            list.iter()
                .map(|item| partition(item.as_str().expect("text")))
                .collect()
        })
    }

    fn names_of(partitions: &BTreeSet<Partition>) -> Vec<String> {
        let mut names: Vec<String> = partitions
            .iter()
            .map(|(topic, index)| format!("{topic}-{index}"))
            .collect();
        names.sort();
        names
    }

    fn response_json(response: &HeartbeatResponse, names: &Names) -> Value {
        if response.error.is_some() {
            return json!({ "error": error_name(response.error) });
        }
        json!({
            "error": "NONE",
            "memberId": names.vector(&response.member_id),
            "memberEpoch": response.member_epoch,
            "heartbeatIntervalMs": response.heartbeat_interval_ms,
            "assignment": response.assignment.as_ref().map(names_of),
        })
    }

    fn record_json(record: &ConsumerRecord, names: &Names) -> Value {
        match record {
            ConsumerRecord::MemberMetadata { group, member, value } => json!({
                "type": "ConsumerGroupMemberMetadata",
                "key": { "group": group, "memberId": names.vector(member) },
                "value": value.as_ref().map(|value| {
                    let mut topics = value.subscribed_topic_names.clone();
                    topics.sort();
                    json!({
                        "instanceId": value.instance_id,
                        "rebalanceTimeoutMs": value.rebalance_timeout_ms,
                        "serverAssignor": value.server_assignor,
                        "subscribedTopicNames": topics,
                    })
                }),
            }),
            ConsumerRecord::PartitionMetadata { group, value } => json!({
                "type": "ConsumerGroupPartitionMetadata",
                "key": { "group": group },
                "value": value.as_ref().map(|topics| json!({ "topics": topics })),
            }),
            ConsumerRecord::GroupMetadata { group, value } => json!({
                "type": "ConsumerGroupMetadata",
                "key": { "group": group },
                "value": value.map(|epoch| json!({ "epoch": epoch })),
            }),
            ConsumerRecord::TargetAssignmentMember { group, member, value } => json!({
                "type": "ConsumerGroupTargetAssignmentMember",
                "key": { "group": group, "memberId": names.vector(member) },
                "value": value.as_ref().map(|partitions| json!({ "assignment": names_of(partitions) })),
            }),
            ConsumerRecord::TargetAssignmentMetadata { group, value } => json!({
                "type": "ConsumerGroupTargetAssignmentMetadata",
                "key": { "group": group },
                "value": value.map(|epoch| json!({ "assignmentEpoch": epoch })),
            }),
            ConsumerRecord::CurrentMemberAssignment { group, member, value } => json!({
                "type": "ConsumerGroupCurrentMemberAssignment",
                "key": { "group": group, "memberId": names.vector(member) },
                "value": value.as_ref().map(|value| json!({
                    "memberEpoch": value.member_epoch,
                    "previousMemberEpoch": value.previous_member_epoch,
                    "state": value.state,
                    "assigned": names_of(&value.assigned),
                    "pendingRevocation": names_of(&value.pending_revocation),
                })),
            }),
        }
    }

    /// Records in order, except that a run of target-assignment records is
    /// compared as a set (Kafka writes them in `HashMap` order of member ids).
    fn canonical(records: Vec<Value>) -> Vec<Value> {
        let mut out: Vec<Value> = Vec::new();
        let mut run: Vec<Value> = Vec::new();
        for mut record in records {
            if let Some(topics) = record
                .get_mut("value")
                .and_then(|value| value.get_mut("subscribedTopicNames"))
                .and_then(Value::as_array_mut)
            {
                topics.sort_by_key(|topic| topic.to_string());
            }
            if record["type"] == "ConsumerGroupTargetAssignmentMember" {
                run.push(record);
                continue;
            }
            run.sort_by_key(|record| record.to_string());
            out.append(&mut run);
            out.push(record);
        }
        run.sort_by_key(|record| record.to_string());
        out.append(&mut run);
        out
    }

    fn snapshot_json(shard: &ConsumerShard, names: &Names) -> Value {
        let group = shard.group(GROUP).map(|group| {
            let mut members: Vec<Value> = group
                .members
                .values()
                .map(|member| {
                    json!({
                        "memberId": names.vector(&member.member_id),
                        "memberEpoch": member.member_epoch,
                        "previousMemberEpoch": member.previous_member_epoch,
                        "state": member.state,
                        "assigned": names_of(&member.assigned),
                        "pendingRevocation": names_of(&member.pending_revocation),
                        "subscribedTopicNames": member.subscribed_topic_names,
                        "serverAssignor": member.server_assignor,
                    })
                })
                .collect();
            members.sort_by_key(|member| member["memberId"].to_string());
            let target: serde_json::Map<String, Value> = group
                .target
                .iter()
                .map(|(member, partitions)| (names.vector(member), json!(names_of(partitions))))
                .collect();
            json!({
                "groupEpoch": group.group_epoch,
                "assignmentEpoch": group.assignment_epoch,
                "state": group.state,
                "subscriptionMetadata": group.subscription_metadata,
                "members": members,
                "targetAssignment": target,
            })
        });
        let timers: serde_json::Map<String, Value> = shard
            .timers()
            .into_iter()
            .map(|(key, deadline)| (names.key(&key), json!(deadline)))
            .collect();
        json!({ "timeMs": shard.now_ms(), "group": group, "timers": timers })
    }

    fn expected_snapshot(after: &Value) -> Value {
        let mut after = after.clone();
        if let Some(members) = after
            .get_mut("group")
            .and_then(|group| group.get_mut("members"))
            .and_then(Value::as_array_mut)
        {
            for member in members.iter_mut() {
                if let Some(topics) = member.get_mut("subscribedTopicNames").and_then(Value::as_array_mut) {
                    topics.sort_by_key(|topic| topic.to_string());
                }
            }
            members.sort_by_key(|member| member["memberId"].to_string());
        }
        after
    }

    /// The engine's own uniform assignment must be as balanced as Kafka's:
    /// the same partitions, and among members with the same subscription
    /// sizes that differ by at most one.
    fn check_balance(
        mine: &BTreeMap<String, BTreeSet<Partition>>,
        kafka: &BTreeMap<String, BTreeSet<Partition>>,
        shard: &ConsumerShard,
    ) -> Result<(), String> {
        let all = |assignment: &BTreeMap<String, BTreeSet<Partition>>| -> BTreeSet<Partition> {
            assignment.values().flatten().cloned().collect()
        };
        if all(mine) != all(kafka) {
            return Err(format!("uniform covers other partitions: {mine:?} vs {kafka:?}"));
        }
        let Some(group) = shard.group(GROUP) else {
            return Ok(());
        };
        let mut by_subscription: BTreeMap<Vec<String>, Vec<usize>> = BTreeMap::new();
        for (member, partitions) in mine {
            if let Some(state) = group.members.get(member) {
                let key: Vec<String> = state.subscribed_topic_names.iter().cloned().collect();
                by_subscription.entry(key).or_default().push(partitions.len());
            }
        }
        for sizes in by_subscription.values() {
            let (least, most) = (sizes.iter().min(), sizes.iter().max());
            if let (Some(least), Some(most)) = (least, most) {
                if most - least > 1 {
                    return Err(format!("uniform is unbalanced: {mine:?}"));
                }
            }
        }
        Ok(())
    }

    fn check_sequence(sequence: &Value) -> Result<(), String> {
        let topics: BTreeMap<String, u32> = sequence["topics"]
            .as_array()
            .expect("topics")
            .iter()
            .map(|topic| {
                (
                    topic["name"].as_str().expect("name").to_string(),
                    topic["numPartitions"].as_u64().expect("count") as u32,
                )
            })
            .collect();
        let names = Names::new(sequence["memberIdSortOrder"].as_array().expect("sort order"));
        let mut shard = ConsumerShard::new(ConsumerConfig::default(), 0, topics);
        shard.on_loaded();
        shard.next_member_ids = names.in_order().into();
        for (index, expected) in sequence["steps"].as_array().expect("steps").iter().enumerate() {
            let op = &expected["op"];
            let fail = |what: &str, got: &Value, want: &Value| {
                Err(format!(
                    "seq {} step {index} ({op}): {what}\n   got  {got}\n   want {want}",
                    sequence["seq"]
                ))
            };
            let kafka_target: Option<BTreeMap<String, BTreeSet<Partition>>> = expected["after"]["group"]
                ["targetAssignment"]
                .as_object()
                .map(|target| {
                    target
                        .iter()
                        .map(|(member, list)| {
                            (
                                names.engine(member),
                                partitions(list).unwrap_or_default().into_iter().collect(),
                            )
                        })
                        .collect()
                });
            shard.uniform_override = kafka_target.clone();
            shard.last_uniform = None;
            let mut outputs: Vec<ConsumerOutput> = Vec::new();
            match op["op"].as_str().expect("op") {
                "join" | "heartbeat" | "leave" => {
                    let request = HeartbeatRequest {
                        group_id: GROUP.to_string(),
                        member_id: names.engine(op["memberId"].as_str().unwrap_or("")),
                        member_epoch: op["memberEpoch"].as_i64().expect("epoch") as i32,
                        instance_id: None,
                        rebalance_timeout_ms: op["rebalanceTimeoutMs"].as_i64().unwrap_or(-1) as i32,
                        subscribed_topic_names: op["subscribedTopicNames"].as_array().map(|list| {
                            list.iter()
                                .map(|topic| topic.as_str().expect("topic").to_string())
                                .collect()
                        }),
                        server_assignor: op["serverAssignor"].as_str().map(str::to_string),
                        owned: partitions(&op["ownedTopicPartitions"]),
                        client_id: "client".to_string(),
                    };
                    let output = shard.heartbeat(&request);
                    for record in &output.records {
                        shard.replay(record);
                    }
                    outputs.push(output);
                }
                "crash" => {}
                "addPartitions" => shard.set_topic(
                    op["topic"].as_str().expect("topic"),
                    op["numPartitions"].as_u64().expect("count") as u32,
                ),
                "advance" => {
                    let mut remaining = op["ms"].as_u64().expect("ms");
                    while remaining > 0 {
                        let tick = remaining.min(100);
                        remaining -= tick;
                        let output = shard.poll(shard.now_ms() + tick);
                        for record in &output.records {
                            shard.replay(record);
                        }
                        outputs.push(output);
                    }
                }
                other => panic!("unknown op {other}"),
            }
            if let (Some(mine), Some(kafka)) = (&shard.last_uniform, &kafka_target) {
                check_balance(mine, kafka, &shard).or_else(|error| fail(&error, &json!(null), &json!(null)))?;
            }
            if let Some(want) = expected.get("response").filter(|response| !response.is_null()) {
                let got = outputs
                    .iter()
                    .find_map(|output| output.response.as_ref())
                    .map_or(Value::Null, |response| response_json(response, &names));
                if &got != want {
                    return fail("response", &got, want);
                }
            }
            let fired: Vec<Value> = outputs
                .iter()
                .flat_map(|output| &output.timers_fired)
                .map(|(key, at)| json!({ "key": names.key(key), "atMs": at }))
                .collect();
            let want_fired = expected["timersFired"].as_array().cloned().unwrap_or_default();
            let sorted = |mut list: Vec<Value>| {
                list.sort_by_key(|value| value.to_string());
                list
            };
            if sorted(fired.clone()) != sorted(want_fired.clone()) {
                return fail("timersFired", &json!(fired), &json!(want_fired));
            }
            let records = canonical(
                outputs
                    .iter()
                    .flat_map(|output| &output.records)
                    .map(|record| record_json(record, &names))
                    .collect(),
            );
            let want_records = canonical(expected["records"].as_array().cloned().unwrap_or_default());
            if records != want_records {
                return fail("records", &json!(records), &json!(want_records));
            }
            let after = snapshot_json(&shard, &names);
            let want_after = expected_snapshot(&expected["after"]);
            if after != want_after {
                return fail("after", &after, &want_after);
            }
        }
        Ok(())
    }

    #[test]
    fn consumer_groups_match_kafkas_kip_848_coordinator() {
        let vectors = load("vectors-group-coordinator.json");
        let sequences = vectors["consumer_protocol"]
            .as_array()
            .expect("consumer_protocol sequences");
        assert!(sequences.len() >= 60, "found {}", sequences.len());
        super::check_all(sequences, "consumer-protocol", check_sequence);
    }
}
