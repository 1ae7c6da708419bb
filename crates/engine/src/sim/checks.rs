//! What a run is judged by once it is over, as the fuzzer and a
//! scenario's `recovers` expectation judge it: safety (no invariant
//! broken; in a safe configuration nothing acknowledged lost, nothing
//! written twice, no input of the exactly-once pipeline with two committed
//! outputs) and liveness (every record sent after recovery acknowledged,
//! every group read up to every high watermark, no transaction left open).

use std::collections::BTreeMap;

use crate::protocol::records::RecordId;
use crate::protocol::TopicPartition;
use crate::replication::transactions::IsolationLevel;

use super::consumer::ConsumerPhase;
use super::trace::{ranges, LossCause, TraceKind};
use super::Simulation;

/// The exactly-once pipeline's output topic and group.
pub const PIPELINE_TOPIC: &str = "eos-out";
/// See [`PIPELINE_TOPIC`].
pub const PIPELINE_GROUP: &str = "eos";

/// Hanging transactions (KIP-890's motivation): for each partition, the
/// producers with a transaction open in its leader's log that no running
/// transaction coordinator has open for that partition. No marker will ever
/// close them, so `read_committed` readers stop at them for good.
pub fn hanging_transactions(simulation: &Simulation) -> Vec<(TopicPartition, u64)> {
    use crate::txn_coordinator::TxnState;
    let mut known: Vec<(u64, &TopicPartition)> = Vec::new();
    for broker in simulation.brokers().values() {
        for coordinator in broker.txn_coordinators.values() {
            for txn in coordinator.shard.transactions().values() {
                if matches!(
                    txn.state,
                    TxnState::Ongoing | TxnState::PrepareCommit | TxnState::PrepareAbort
                ) {
                    known.extend(txn.partitions.iter().map(|partition| (txn.producer_id, partition)));
                }
            }
        }
    }
    let mut hanging = Vec::new();
    for (partition, registration) in &simulation.controller().partitions {
        let Some(log) = registration
            .leader
            .and_then(|leader| simulation.brokers().get(&leader))
            .and_then(|broker| broker.logs.get(partition))
        else {
            continue;
        };
        for txn in log.producers.ongoing_txns() {
            if !known.contains(&(txn.producer_id, partition)) {
                hanging.push((partition.clone(), txn.producer_id));
            }
        }
    }
    hanging
}

/// The exactly-once pipeline's checks: no input record has two committed
/// outputs (safety); once recovered, every input record a `read_committed`
/// reader sees has its output, and no transaction is open on the output
/// topic (liveness).
fn pipeline_failures(simulation: &Simulation, liveness: bool) -> Vec<String> {
    let Some(pipeline) = simulation
        .config()
        .consumers
        .iter()
        .find(|consumer| consumer.output_producer.is_some())
    else {
        return Vec::new();
    };
    let mut failures = Vec::new();
    let audit = simulation.output_audit(PIPELINE_TOPIC);
    if !liveness {
        if !audit.duplicated.is_empty() {
            failures.push(format!(
                "exactly-once pipeline: input records with more than one committed output: {:?}",
                audit.duplicated
            ));
        }
        return failures;
    }
    let now = simulation.now();
    let mut inputs = 0;
    for topic in &pipeline.topics {
        let partitions = simulation.topic_partition_count(topic);
        for index in 0..partitions {
            let partition = TopicPartition::new(topic.as_str(), index);
            inputs += simulation.read_committed_records(&partition);
        }
    }
    if audit.sources != inputs {
        let apps: Vec<String> = simulation
            .consumers()
            .iter()
            .filter_map(|consumer| {
                let producer = simulation.producers.get(consumer.config.output_producer? as usize)?;
                let txn = producer.txn.as_ref()?;
                Some(format!(
                    "consumer-{} {:?} awaiting {} with producer-{} {} in flight {:?} ending {:?} abortable {} offsets {} added {:?}",
                    consumer.id,
                    consumer.phase,
                    consumer.awaiting_txn.is_some(),
                    producer.id,
                    txn.phase,
                    txn.in_flight,
                    txn.ending,
                    txn.abortable,
                    txn.offsets.is_some(),
                    txn.added
                ))
            })
            .collect();
        failures.push(format!(
            "exactly-once pipeline: {} of the {inputs} input records a read_committed reader sees have a committed output at {now} ms ({})",
            audit.sources,
            apps.join("; ")
        ));
    }
    let open = audit.open;
    if open > 0 {
        failures.push(format!(
            "exactly-once pipeline: {open} output records still in an open transaction at {now} ms"
        ));
    }
    failures
}

/// Records an idempotent producer wrote twice under two producer epochs:
/// after an epoch bump (KIP-360, `TransactionManager#bumpIdempotentProducerEpoch`)
/// it resends, under new sequences, batches whose earlier attempt it never
/// heard back about, and the broker, which deduplicates within an epoch,
/// writes them again, as Kafka's does. Not a failure; the fuzzer counts it.
pub fn across_epoch_duplicates(simulation: &Simulation) -> u64 {
    simulation
        .monitor
        .duplicated_records(simulation)
        .saturating_sub(simulation.monitor.duplicated_within_an_epoch(simulation))
}

/// The records [`across_epoch_duplicates`] counts: each written in its
/// partition's leader log under more than one producer epoch.
pub fn across_epoch_duplicate_records(simulation: &Simulation) -> std::collections::BTreeSet<RecordId> {
    simulation.monitor.duplicated_across_epochs(simulation)
}

/// Broken invariants, and in a safe configuration lost acknowledged records.
pub fn safety_failures(simulation: &Simulation, safe: bool) -> Vec<String> {
    let mut failures: Vec<String> = simulation
        .trace()
        .iter()
        .filter_map(|event| match &event.kind {
            TraceKind::InvariantViolated { .. } => Some(event.line()),
            // Records every replica that had them lost to a power loss
            // before they were flushed: named, and Kafka's design.
            TraceKind::RecordsLost { reason, .. } if reason.causes == [LossCause::PowerLoss] => None,
            TraceKind::RecordsLost { .. } if safe => Some(event.line()),
            _ => None,
        })
        .collect();
    if failures.is_empty() && simulation.summary().invariant_violations > 0 {
        failures.push(format!(
            "{} invariant violations",
            simulation.summary().invariant_violations
        ));
    }
    if safe && failures.is_empty() {
        let mut lost = simulation.lost_records();
        lost.retain(|record| !simulation.monitor.lost_to_power.contains(record));
        if !lost.is_empty() {
            failures.push(format!("acknowledged records lost: {lost:?}"));
        }
        failures.extend(duplicate_failures(simulation));
    }
    failures
}

/// In a safe configuration: the exactly-once pipeline's input records
/// with more than one committed output, and records an idempotent
/// producer wrote twice within one epoch. Every producer of a safe
/// configuration is idempotent, so a retry never writes a record twice
/// within one producer epoch (across an epoch bump Kafka's idempotence
/// cannot tell a resent batch from a new one; `across_epoch_duplicates`
/// counts those).
pub(crate) fn duplicate_failures(simulation: &Simulation) -> Vec<String> {
    let mut failures = pipeline_failures(simulation, false);
    let duplicated = simulation.monitor.duplicated_within_an_epoch(simulation);
    if duplicated > 0 {
        failures.push(format!("{duplicated} records written twice by idempotent producers"));
    }
    failures
}

/// What has not recovered: records from `first_burst_record` on not
/// acknowledged, records neither acknowledged nor failed, groups that have
/// not read up to every partition's high watermark.
///
/// In a lossy configuration a record sent after recovery may also fail
/// with an error (an idempotent producer whose acknowledged sequences a
/// truncation removed gets `OUT_OF_ORDER_SEQUENCE_NUMBER` once, as Kafka's
/// does); it still has to be decided, not left hanging.
pub fn liveness_failures(simulation: &Simulation, first_burst_record: u64, safe: bool) -> Vec<String> {
    let mut failures = Vec::new();
    if safe {
        failures.extend(pipeline_failures(simulation, true));
    }
    let now = simulation.now();
    failures.extend(record_failures(simulation, first_burst_record, safe, now));
    failures.extend(group_failures(simulation, safe, now));
    failures
}

/// Records from `first_burst_record` on not acknowledged, and records
/// neither acknowledged nor failed, by producer.
fn record_failures(simulation: &Simulation, first_burst_record: u64, safe: bool, now: u64) -> Vec<String> {
    let mut failures = Vec::new();
    let mut unacknowledged: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    let mut undecided: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    for (id, record) in simulation.records().iter().enumerate() {
        let id = id as u64;
        // A burst record appended to a batch begun before the burst (one
        // still waiting behind a retried batch the faults left) expires
        // with that batch, as Kafka's would: it was answered, not lost.
        let joined_an_older_batch = record.failed
            && simulation
                .expired_with_older_batch
                .get(&id)
                .is_some_and(|&first| first < first_burst_record);
        if id >= first_burst_record
            && record.acknowledged.is_none()
            && (safe || !record.failed)
            && !joined_an_older_batch
        {
            unacknowledged.entry(record.producer).or_default().push(id);
        } else if record.acknowledged.is_none() && !record.failed {
            undecided.entry(record.producer).or_default().push(id);
        }
    }
    for (producer, records) in unacknowledged {
        failures.push(format!(
            "producer-{producer}: {} records sent after recovery were not acknowledged by {now} ms (ids {})",
            records.len(),
            ranges(&records)
        ));
    }
    for (producer, records) in undecided {
        failures.push(format!(
            "producer-{producer}: {} records neither acknowledged nor failed by {now} ms (ids {})",
            records.len(),
            ranges(&records)
        ));
    }
    failures
}

/// Every group reads up to the high watermark of every partition it
/// subscribes to, and no transaction is left open (the last stable offset
/// is the high watermark).
fn group_failures(simulation: &Simulation, safe: bool, now: u64) -> Vec<String> {
    let mut failures = Vec::new();
    let mut groups: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for consumer in simulation.consumers() {
        let topics = groups.entry(consumer.config.group.as_str()).or_default();
        for topic in &consumer.config.topics {
            if !topics.contains(&topic.as_str()) {
                topics.push(topic.as_str());
            }
        }
    }
    // In a lossy case the exactly-once app may stop: a coordinator that
    // lost its transaction state with its records fences the app's
    // producer, and the app closes it (the way Kafka's `KafkaProducer`
    // documentation says to handle `ProducerFencedException`). Its group
    // is judged, with the rest of the pipeline, only in a safe case.
    let pipeline_group = simulation
        .config()
        .consumers
        .iter()
        .find(|consumer| consumer.output_producer.is_some())
        .map(|consumer| consumer.group.as_str());
    let controller = simulation.controller();
    for (group, topics) in groups {
        if !safe && Some(group) == pipeline_group {
            continue;
        }
        for (partition, registration) in &controller.partitions {
            if !topics.contains(&&*partition.topic) {
                continue;
            }
            let Some(leader) = registration.leader else {
                failures.push(format!("{partition} has no leader at {now} ms"));
                continue;
            };
            let log = simulation
                .brokers()
                .get(&leader)
                .and_then(|broker| broker.logs.get(partition));
            let high_watermark = log.map_or(0, |log| log.high_watermark);
            let last_stable_offset = log.map_or(0, |log| log.last_stable_offset());
            // (In a lossy configuration a coordinator may lose a
            // transaction's state with its records, as Kafka's may; its
            // producer is then fenced and the transaction stays open until
            // transaction.timeout.ms, long after this check.)
            if safe && last_stable_offset < high_watermark {
                failures.push(format!(
                    "{partition}: a transaction is still open at {now} ms (last stable offset {last_stable_offset}, high watermark {high_watermark})"
                ));
            }
            let reader = simulation
                .consumers()
                .iter()
                .filter(|consumer| consumer.config.group == group && consumer.phase == ConsumerPhase::Consuming)
                .find(|consumer| consumer.assignment.contains(partition));
            match reader {
                None => failures.push(format!(
                    "group {group}: no consuming member owns {partition} at {now} ms ({})",
                    members_text(simulation, group)
                )),
                Some(consumer) => {
                    let position = consumer.positions.get(partition).copied().unwrap_or(0);
                    let (end, name) = match consumer.config.isolation_level {
                        IsolationLevel::ReadUncommitted => (high_watermark, "high watermark"),
                        IsolationLevel::ReadCommitted => (last_stable_offset, "last stable offset"),
                    };
                    if position < end {
                        failures.push(format!(
                            "group {group}: consumer-{} is at offset {position} of {partition}, whose {name} is {end}",
                            consumer.id
                        ));
                    }
                }
            }
        }
    }
    failures
}

fn members_text(simulation: &Simulation, group: &str) -> String {
    simulation
        .consumers()
        .iter()
        .filter(|consumer| consumer.config.group == group)
        .map(|consumer| {
            format!(
                "consumer-{} {:?} generation {} owns {}",
                consumer.id,
                consumer.phase,
                consumer.generation,
                consumer
                    .assignment
                    .iter()
                    .map(TopicPartition::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}
