//! The JavaScript API over the kafkascope engine.
//!
//! This crate is the only place where engine functions meet wasm-bindgen.
//! It converts JavaScript values into engine inputs and engine answers back
//! into JavaScript values; it holds no logic of its own, so whatever the
//! sandbox or an embedder computes is exactly what the CLI and the web app
//! compute. Nothing here panics on user input: a bad argument becomes a
//! JavaScript exception with a message.

use kafkascope_engine::groups::assignors::rebalance::{rebalance as run_rebalance, MembershipChange};
use kafkascope_engine::groups::assignors::{assign_explained, GroupInput, Strategy};
use kafkascope_engine::groups::coordinator_partition;
use kafkascope_engine::partitioning::null_key::{simulate_keyless, NullKeyConfig, NullKeyStrategy};
use kafkascope_engine::partitioning::{self, partition_for_key};
use kafkascope_engine::sim::config::{ClusterConfig, ConsumerConfig, Input, ScheduledInput};
use kafkascope_engine::sim::Simulation;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &str = r#"
/** A group as the assignors take it (the CLI's JSON shape). */
export interface GroupInput {
  topics: Record<string, number>;
  members: { memberId: string; topics: string[]; groupInstanceId?: string; owned?: string[]; generation?: number }[];
  topicIds?: Record<string, string>;
  options?: { map?: "treemap" | "hashmap"; type?: "HOMOGENEOUS" | "HETEROGENEOUS" };
}

/** An assignment with what it changed and why. */
export interface AssignmentReport {
  assignment: Record<string, string[]>;
  moves: { partition: string; from: string; to: string }[];
  revoked: Record<string, string[]>;
  withheld: string[];
  counts: Record<string, number>;
  reasons: Record<string, string>;
}

/** The shape of an assignment without the assignment itself. */
export interface AssignmentStats { members: number; partitions: number; minPerMember: number; maxPerMember: number; idleMembers: number }

/** Assignor names. */
export type Strategy = "range" | "roundrobin" | "sticky" | "cooperative-sticky" | "uniform" | "server-range";

/** A membership change for `rebalance`. */
export interface MembershipChange { join?: GroupInput["members"]; leave?: string[] }

/** One round of a rebalance. */
export interface RebalanceRound { change: number; generation: number; members: GroupInput["members"]; report: AssignmentReport }

/** Options for `simulateKeyless`. */
export interface KeylessOptions {
  strategy: "uniform-sticky" | "legacy-sticky" | "round-robin" | "round-robin-legacy";
  partitions: number;
  records: number;
  recordBytes?: number;
  batchSize?: number;
  adaptive?: boolean;
  lingerMsZero?: boolean;
  seed?: number;
}

/** Where one keyless record went and why. */
export interface KeylessChoice { partition: number; reason: string; kind: string }

/** One record in a replica's log. */
export interface LogRecord {
  offset: number;
  batchBaseOffset: number;
  leaderEpoch: number;
  key: string | null;
  valueSize: number | null;
  headersSize: number;
  timestamp: number;
  producerId: number | null;
  committed: boolean;
}

/** A trace event. */
export interface TraceEvent { id: number; time: number; cause: number | null; kind: string; line: string }
"#;

fn js_error(message: impl std::fmt::Display) -> JsError {
    JsError::new(&message.to_string())
}

/// A JavaScript value read as `T`, through its JSON text: the scenario
/// files and links are read from JSON text too, so the readers of the
/// engine's inputs are compiled once, not once per format (#35: the
/// simulator's module carried a second copy of the largest of them).
fn from_js<T: DeserializeOwned>(value: JsValue, what: &str) -> Result<T, JsError> {
    let text = js_sys::JSON::stringify(&value)
        .ok()
        .and_then(|text| text.as_string())
        .ok_or_else(|| js_error(format!("bad {what}: not a plain value that JSON can write")))?;
    serde_json::from_str(&text).map_err(|error| {
        // The position is in the JSON text made here, not in anything the
        // caller wrote: leave it out.
        let message = error.to_string();
        let message = message
            .rsplit_once(" at line ")
            .map_or(message.as_str(), |(message, _)| message);
        js_error(format!("bad {what}: {message}"))
    })
}

fn to_js<T: Serialize>(value: &T) -> Result<JsValue, JsError> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(js_error)
}

/// Kafka's murmur2 of a string key's UTF-8 bytes, as a signed 32-bit
/// integer (`Utils#murmur2`).
#[wasm_bindgen]
pub fn murmur2(#[wasm_bindgen(unchecked_param_type = "string")] key: JsValue) -> Result<i32, JsError> {
    Ok(partitioning::murmur2(string_arg(&key, "key")?.as_bytes()))
}

/// Kafka's murmur2 of raw key bytes (for keys a serializer produced).
#[wasm_bindgen(js_name = murmur2Bytes)]
pub fn murmur2_bytes(
    #[wasm_bindgen(unchecked_param_type = "Uint8Array | number[]")] key: JsValue,
) -> Result<i32, JsError> {
    Ok(partitioning::murmur2(&bytes_arg(&key, "key")?))
}

/// The partition Kafka's default partitioner picks for a string key among
/// `numPartitions` partitions: `toPositive(murmur2(utf8(key))) % numPartitions`.
///
/// Throws when `numPartitions` is not a whole number of at least 1.
#[wasm_bindgen(js_name = partitionFor)]
pub fn partition_for(
    #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
    num_partitions: f64,
) -> Result<u32, JsError> {
    place(string_arg(&key, "key")?.as_bytes(), num_partitions)
}

/// `partitionFor` for raw key bytes.
#[wasm_bindgen(js_name = partitionForBytes)]
pub fn partition_for_bytes(
    #[wasm_bindgen(unchecked_param_type = "Uint8Array | number[]")] key: JsValue,
    num_partitions: f64,
) -> Result<u32, JsError> {
    place(&bytes_arg(&key, "key")?, num_partitions)
}

fn place(key: &[u8], num_partitions: f64) -> Result<u32, JsError> {
    let count = whole_number(num_partitions, "numPartitions", 1)?;
    partition_for_key(key, count).ok_or_else(|| js_error("numPartitions must be at least 1"))
}

/// The `__consumer_offsets` partition that hosts a group's coordinator:
/// `abs(groupId.hashCode()) % offsetsPartitions`.
#[wasm_bindgen(js_name = coordinatorPartition)]
pub fn coordinator_partition_for(
    #[wasm_bindgen(unchecked_param_type = "string")] group_id: JsValue,
    offsets_partitions: f64,
) -> Result<u32, JsError> {
    let group_id = string_arg(&group_id, "groupId")?;
    let count = whole_number(offsets_partitions, "offsetsPartitions", 1)?;
    coordinator_partition(&group_id, count).ok_or_else(|| js_error("offsetsPartitions must be at least 1"))
}

/// Strings and byte arrays arrive as `JsValue` and are checked here:
/// wasm-bindgen's own `&str`/`&[u8]` glue would read a number or an object
/// as garbage memory and trap the module.
fn string_arg(value: &JsValue, name: &str) -> Result<String, JsError> {
    value
        .as_string()
        .ok_or_else(|| js_error(format!("{name} must be a string")))
}

fn bytes_arg(value: &JsValue, name: &str) -> Result<Vec<u8>, JsError> {
    if let Some(array) = value.dyn_ref::<js_sys::Uint8Array>() {
        return Ok(array.to_vec());
    }
    if js_sys::Array::is_array(value) {
        return js_sys::Array::from(value)
            .iter()
            .map(|item| match item.as_f64() {
                Some(byte) if byte.fract() == 0.0 && (0.0..=255.0).contains(&byte) => Ok(byte as u8),
                _ => Err(js_error(format!("{name} must hold bytes: whole numbers from 0 to 255"))),
            })
            .collect();
    }
    Err(js_error(format!("{name} must be a Uint8Array or an array of bytes")))
}

/// Accepts only whole numbers in `minimum..=u32::MAX`, so JavaScript's
/// 2.5, NaN or -1 get a message rather than a silently truncated count.
fn whole_number(value: f64, name: &str, minimum: u32) -> Result<u32, JsError> {
    if value.fract() == 0.0 && value >= f64::from(minimum) && value <= f64::from(u32::MAX) {
        Ok(value as u32)
    } else {
        Err(js_error(format!(
            "{name} must be a whole number of at least {minimum}, got {value}"
        )))
    }
}

fn strategy(name: &JsValue) -> Result<Strategy, JsError> {
    let name = string_arg(name, "strategy")?;
    Strategy::from_name(&name).ok_or_else(|| {
        let names: Vec<&str> = Strategy::ALL.iter().map(|strategy| strategy.name()).collect();
        js_error(format!("unknown strategy {name:?}; choose one of {}", names.join(", ")))
    })
}

/// Kafka's assignment for `input` with the named assignor, with the moves,
/// revocations, withheld partitions, counts and a reason per partition.
#[wasm_bindgen(unchecked_return_type = "AssignmentReport")]
pub fn assign(
    #[wasm_bindgen(unchecked_param_type = "Strategy")] strategy_name: JsValue,
    #[wasm_bindgen(unchecked_param_type = "GroupInput")] input: JsValue,
) -> Result<JsValue, JsError> {
    let strategy = strategy(&strategy_name)?;
    let group: GroupInput = from_js(input, "group")?;
    let report = assign_explained(strategy, &group).map_err(js_error)?;
    to_js(&report)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AssignmentStats {
    members: usize,
    partitions: usize,
    min_per_member: usize,
    max_per_member: usize,
    idle_members: usize,
}

/// The assignment's shape without the assignment: member and partition
/// counts, the fewest and most partitions a member got, idle members.
/// For groups too large to send back whole (Kafka's million-partition scale
/// case).
#[wasm_bindgen(js_name = assignStats, unchecked_return_type = "AssignmentStats")]
pub fn assign_stats(
    #[wasm_bindgen(unchecked_param_type = "Strategy")] strategy_name: JsValue,
    #[wasm_bindgen(unchecked_param_type = "GroupInput")] input: JsValue,
) -> Result<JsValue, JsError> {
    let strategy = strategy(&strategy_name)?;
    let group: GroupInput = from_js(input, "group")?;
    let assignment = kafkascope_engine::groups::assignors::assign(strategy, &group).map_err(js_error)?;
    let sizes: Vec<usize> = group
        .members
        .iter()
        .map(|member| assignment.get(&member.member_id).map_or(0, Vec::len))
        .collect();
    to_js(&AssignmentStats {
        members: sizes.len(),
        partitions: sizes.iter().sum(),
        min_per_member: sizes.iter().copied().min().unwrap_or(0),
        max_per_member: sizes.iter().copied().max().unwrap_or(0),
        idle_members: sizes.iter().filter(|&&size| size == 0).count(),
    })
}

/// Runs the initial assignment and then one rebalance per membership
/// change, returning every round (cooperative-sticky takes two rounds to
/// move a partition: revoke, then assign).
#[wasm_bindgen(unchecked_return_type = "RebalanceRound[]")]
pub fn rebalance(
    #[wasm_bindgen(unchecked_param_type = "Strategy")] strategy_name: JsValue,
    #[wasm_bindgen(unchecked_param_type = "GroupInput")] input: JsValue,
    #[wasm_bindgen(unchecked_param_type = "MembershipChange[]")] changes: JsValue,
) -> Result<JsValue, JsError> {
    let strategy = strategy(&strategy_name)?;
    let group: GroupInput = from_js(input, "group")?;
    let changes: Vec<MembershipChange> = from_js(changes, "membership changes")?;
    let rounds = run_rebalance(strategy, &group, &changes).map_err(js_error)?;
    to_js(&rounds)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct KeylessOptions {
    strategy: String,
    partitions: f64,
    records: f64,
    #[serde(default)]
    record_bytes: Option<f64>,
    #[serde(default)]
    batch_size: Option<f64>,
    #[serde(default)]
    adaptive: Option<bool>,
    #[serde(default)]
    linger_ms_zero: Option<bool>,
    #[serde(default)]
    seed: Option<f64>,
}

#[derive(Serialize)]
struct KeylessChoice {
    partition: u32,
    reason: String,
    kind: String,
}

/// Where keyless records go under one of the three behaviours, record by
/// record, each with the reason (deterministic for a seed).
#[wasm_bindgen(js_name = simulateKeyless, unchecked_return_type = "KeylessChoice[]")]
pub fn simulate_keyless_js(
    #[wasm_bindgen(unchecked_param_type = "KeylessOptions")] options: JsValue,
) -> Result<JsValue, JsError> {
    let options: KeylessOptions = from_js(options, "options")?;
    let strategy = match options.strategy.as_str() {
        "uniform-sticky" => NullKeyStrategy::UniformSticky,
        "legacy-sticky" => NullKeyStrategy::LegacySticky,
        "round-robin" => NullKeyStrategy::RoundRobin { legacy_default: false },
        "round-robin-legacy" => NullKeyStrategy::RoundRobin { legacy_default: true },
        other => {
            return Err(js_error(format!(
                "unknown strategy {other:?}; choose uniform-sticky, legacy-sticky, round-robin or round-robin-legacy"
            )))
        }
    };
    let partitions = whole_number(options.partitions, "partitions", 1)?.min(10_000);
    let records = whole_number(options.records, "records", 0)?.min(1_000_000) as usize;
    let record_bytes = whole_number(options.record_bytes.unwrap_or(100.0), "recordBytes", 1)?;
    let batch_size = whole_number(options.batch_size.unwrap_or(16_384.0), "batchSize", 1)?;
    let seed = whole_number(options.seed.unwrap_or(1.0), "seed", 0)?;
    let config = NullKeyConfig {
        batch_size,
        adaptive: options.adaptive.unwrap_or(true),
    };
    let choices = simulate_keyless(
        strategy,
        config,
        partitions,
        records,
        record_bytes,
        options.linger_ms_zero.unwrap_or(true),
        u64::from(seed),
    );
    let out: Vec<KeylessChoice> = choices
        .into_iter()
        .map(|choice| {
            let kind = serde_json::to_value(&choice.reason)
                .ok()
                .and_then(|value| value.get("kind").and_then(|kind| kind.as_str().map(str::to_string)))
                .unwrap_or_default();
            KeylessChoice {
                partition: choice.partition,
                reason: choice.reason.to_string(),
                kind,
            }
        })
        .collect();
    to_js(&out)
}

#[derive(Serialize)]
struct TraceEventOut {
    id: u64,
    time: u64,
    cause: Option<u64>,
    kind: String,
    line: String,
}

/// A simulated cluster for scripted runs: brokers, controllers, producers
/// and consumer groups on a virtual clock. Actions happen at the current
/// virtual time; `runFor` advances it.
#[wasm_bindgen]
pub struct Cluster {
    simulation: Simulation,
    /// The latest trace events, at most
    /// [`kafkascope_engine::limits::MAX_TRACE_KEPT`] (the oldest go).
    trace: std::collections::VecDeque<kafkascope_engine::sim::trace::TraceEvent>,
}

#[wasm_bindgen]
impl Cluster {
    /// A cluster from a config (the scenario format's `config`, camelCase)
    /// and a seed.
    #[wasm_bindgen(constructor)]
    pub fn new(config: JsValue, seed: Option<f64>) -> Result<Cluster, JsError> {
        let config: ClusterConfig = from_js(config, "cluster config")?;
        let seed = whole_number(seed.unwrap_or(1.0), "seed", 0)?;
        let simulation = Simulation::new(config, u64::from(seed)).map_err(js_error)?;
        Ok(Cluster {
            simulation,
            trace: std::collections::VecDeque::new(),
        })
    }

    fn act(&mut self, input: Input) {
        let now = self.simulation.now();
        self.simulation.schedule(ScheduledInput { at_ms: now, input });
        self.simulation.run_until(now);
        self.collect_trace();
    }

    /// Moves the simulation's new trace events into the bounded buffer.
    fn collect_trace(&mut self) {
        self.trace.extend(self.simulation.take_trace());
        let excess = self
            .trace
            .len()
            .saturating_sub(kafkascope_engine::limits::MAX_TRACE_KEPT);
        self.trace.drain(..excess);
    }

    /// Checks an input against kafkascope's limits, then applies it.
    fn act_checked(&mut self, input: Input) -> Result<(), JsError> {
        self.simulation.check_input(&input).map_err(js_error)?;
        input.check_topic_names().map_err(js_error)?;
        if let Input::SetConfig(change) = &input {
            self.simulation.check_config_change(change).map_err(js_error)?;
        }
        self.act(input);
        Ok(())
    }

    /// A producer sends `count` records (with `key`, or none).
    pub fn produce(
        &mut self,
        producer: u32,
        #[wasm_bindgen(unchecked_param_type = "string | null")] key: JsValue,
        count: Option<u32>,
        bytes: Option<u32>,
    ) -> Result<(), JsError> {
        if producer as usize >= self.simulation.config().producers.len() {
            return Err(js_error(format!("there is no producer {producer}")));
        }
        let key = if key.is_null() || key.is_undefined() {
            None
        } else {
            Some(string_arg(&key, "key")?)
        };
        self.act_checked(Input::Produce {
            producer,
            key,
            count: count.unwrap_or(1),
            bytes: bytes.unwrap_or(100).max(1),
        })
    }

    /// Crashes a broker.
    #[wasm_bindgen(js_name = killBroker)]
    pub fn kill_broker(&mut self, broker: u32) {
        self.act(Input::KillBroker { broker });
    }

    /// Restarts a crashed broker.
    #[wasm_bindgen(js_name = restartBroker)]
    pub fn restart_broker(&mut self, broker: u32) {
        self.act(Input::RestartBroker { broker });
    }

    /// Crashes a controller.
    #[wasm_bindgen(js_name = killController)]
    pub fn kill_controller(&mut self, controller: u32) {
        self.act(Input::KillController { controller });
    }

    /// Restarts a crashed controller.
    #[wasm_bindgen(js_name = restartController)]
    pub fn restart_controller(&mut self, controller: u32) {
        self.act(Input::RestartController { controller });
    }

    /// Starts a configured consumer.
    #[wasm_bindgen(js_name = startConsumer)]
    pub fn start_consumer(&mut self, consumer: u32) {
        self.act(Input::StartConsumer { consumer });
    }

    /// Starts a new consumer (the scenario format's consumer config, such as
    /// `{ group: "g", topics: ["t"] }`) and returns its id. It joins its
    /// group, which rebalances.
    #[wasm_bindgen(js_name = addConsumer)]
    pub fn add_consumer(&mut self, config: JsValue) -> Result<u32, JsError> {
        let consumer: ConsumerConfig = from_js(config, "consumer config")?;
        self.simulation
            .config()
            .validate_consumer(&consumer)
            .map_err(js_error)?;
        let id = self.simulation.consumers().len() as u32;
        self.act_checked(Input::AddConsumer { consumer })?;
        Ok(id)
    }

    /// Stops a consumer cleanly (it commits and leaves its group).
    #[wasm_bindgen(js_name = stopConsumer)]
    pub fn stop_consumer(&mut self, consumer: u32) {
        self.act(Input::StopConsumer { consumer });
    }

    /// Applies any input of the scenario format.
    pub fn input(&mut self, input: JsValue) -> Result<(), JsError> {
        let input: Input = from_js(input, "input")?;
        self.act_checked(input)
    }

    /// Processes one event; `false` when nothing is left (or simulated
    /// time is at kafkascope's limit).
    pub fn step(&mut self) -> bool {
        let stepped = self.simulation.step();
        self.collect_trace();
        stepped
    }

    /// Advances virtual time by `ms`; a run past kafkascope's limit of
    /// simulated time (seven days) is refused, naming it.
    #[wasm_bindgen(js_name = runFor)]
    pub fn run_for(&mut self, ms: f64) -> Result<(), JsError> {
        let ms = whole_number(ms, "ms", 0)?;
        let until = self.simulation.now() + u64::from(ms);
        kafkascope_engine::limits::at_most(
            "the simulated time runFor would reach (ms)",
            until,
            kafkascope_engine::limits::MAX_RUN_MS,
        )
        .map_err(js_error)?;
        // Run in slices so the trace buffer stays bounded on a long run.
        while self.simulation.now() < until {
            let slice_end = until.min(self.simulation.now() + 10_000);
            self.simulation.run_until(slice_end);
            self.collect_trace();
        }
        Ok(())
    }

    /// Virtual time in milliseconds.
    #[wasm_bindgen(getter)]
    pub fn now(&self) -> f64 {
        self.simulation.now() as f64
    }

    /// Brokers, partitions, controllers and consumers now.
    pub fn state(&self) -> Result<JsValue, JsError> {
        to_js(&self.simulation.view())
    }

    /// Counts: produced, acknowledged, lost, duplicated, failed, elections,
    /// invariant violations.
    pub fn summary(&self) -> Result<JsValue, JsError> {
        to_js(&self.simulation.summary())
    }

    /// What each group's handlers did with the acknowledged records:
    /// processed once, again (and why), skipped by an idempotent handler,
    /// never (and why), not yet.
    pub fn ledger(&self) -> Result<JsValue, JsError> {
        to_js(&self.simulation.ledger_views())
    }

    /// A consume-transform-produce pipeline's committed outputs on `topic`,
    /// as a `read_committed` reader sees them now: `outputs`, `sources`
    /// (input records with an output), `duplicated` ([input record id,
    /// copies] for each with more than one), `hidden` (aborted or not yet
    /// decided) and `open` (above the last stable offset).
    pub fn outputs(&self, topic: &str) -> Result<JsValue, JsError> {
        to_js(&self.simulation.output_audit(topic))
    }

    /// The records of a partition as one replica's log holds them (the
    /// leader's unless `broker` is given), from offset `from`, at most
    /// 1000: offset, its batch's base offset, leader epoch, key, value
    /// size (null: a tombstone), headers size, timestamp, producer id and
    /// whether it is committed.
    #[wasm_bindgen(unchecked_return_type = "LogRecord[]")]
    pub fn records(
        &self,
        topic: &str,
        partition: u32,
        broker: Option<u32>,
        from: Option<f64>,
    ) -> Result<JsValue, JsError> {
        let partition = kafkascope_engine::groups::assignors::TopicPartition::new(topic, partition);
        let from = from.unwrap_or(0.0).max(0.0) as u64;
        let records = self
            .simulation
            .log_records(&partition, broker, from)
            .map_err(js_error)?;
        to_js(&records)
    }

    /// Trace events from id `from` on.
    #[wasm_bindgen(unchecked_return_type = "TraceEvent[]")]
    pub fn trace(&self, from: Option<f64>) -> Result<JsValue, JsError> {
        let from = from.unwrap_or(0.0).max(0.0) as u64;
        let events: Vec<TraceEventOut> = self
            .trace
            .iter()
            .filter(|event| event.id >= from)
            .map(|event| TraceEventOut {
                id: event.id,
                time: event.time,
                cause: event.cause,
                // Through the JSON text: the module's one writer of trace
                // events (a value writer would be a second copy, #35).
                kind: serde_json::to_string(&event.kind)
                    .ok()
                    .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
                    .and_then(|value| value.get("kind").and_then(|kind| kind.as_str().map(str::to_string)))
                    .unwrap_or_default(),
                line: event.line(),
            })
            .collect();
        to_js(&events)
    }
}
