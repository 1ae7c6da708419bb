//! The live cluster section's plain data: the starting cluster and the
//! panels shaped like Kafka's command-line tools (`kafka-topics
//! --describe`, `kafka-consumer-groups --describe`, `kafka-metadata-quorum
//! describe --status`), all derived from the engine's [`ClusterView`].

use kafkascope_engine::sorting::Gather;
use std::collections::BTreeMap;

use kafkascope_engine::sim::config::{
    ClusterConfig, CommitMode, ConsumerConfig, GroupProtocol, OffsetReset, ProducerConfig, TopicConfig,
};
use kafkascope_engine::sim::trace::TraceKind;
use kafkascope_engine::sim::types::NodeId;
use kafkascope_engine::sim::view::{ClusterView, Role};

/// The seed a fresh page starts with.
pub const DEFAULT_SEED: u64 = 1;

/// Three brokers, three KRaft controllers, `orders` with three partitions
/// replicated three times (`min.insync.replicas=2`), an `acks=all`
/// producer, a two-member group `billing` and a one-member group `search`
/// (the seeds' exercise).
pub fn default_config() -> ClusterConfig {
    let consumer = |index| {
        let group = if index < 2 { "billing" } else { "search" };
        let mut consumer = ConsumerConfig::new(group, vec!["orders".into()]);
        consumer.auto_offset_reset = OffsetReset::Earliest;
        consumer
    };
    ClusterConfig {
        brokers: 3,
        controllers: 3,
        topics: vec![TopicConfig {
            name: "orders".into(),
            partitions: 3,
            replication_factor: 3,
            min_insync_replicas: 2,
            ..TopicConfig::default()
        }],
        producers: vec![ProducerConfig::new("orders")],
        consumers: (0..3).map(consumer).collect(),
        offsets_topic_partitions: 3,
        ..ClusterConfig::default()
    }
}

/// The map benchmark's cluster (`?preset=bench`): 6 brokers, 3 topics of
/// 12 partitions with RF 3, a producer per topic and a 3-member group
/// reading all three.
pub fn bench_config() -> ClusterConfig {
    let topics: Vec<String> = ["clicks", "orders", "payments"]
        .iter()
        .map(|name| name.to_string())
        .collect();
    let consumer = |_| {
        let mut consumer = ConsumerConfig::new("readers", topics.clone());
        consumer.auto_offset_reset = OffsetReset::Earliest;
        consumer
    };
    ClusterConfig {
        brokers: 6,
        controllers: 3,
        topics: topics
            .iter()
            .map(|name| TopicConfig {
                name: name.clone(),
                partitions: 12,
                replication_factor: 3,
                min_insync_replicas: 2,
                ..TopicConfig::default()
            })
            .collect(),
        producers: topics.iter().map(|name| ProducerConfig::new(name.as_str())).collect(),
        consumers: (0..3).map(consumer).collect(),
        offsets_topic_partitions: 3,
        ..ClusterConfig::default()
    }
}

/// The cluster a page URL asks for: `?preset=bench` gives
/// [`bench_config`], anything else the default.
pub fn config_for_query(query: &str) -> ClusterConfig {
    let wants_bench = query
        .trim_start_matches('?')
        .split('&')
        .any(|pair| pair == "preset=bench");
    if wants_bench {
        bench_config()
    } else {
        default_config()
    }
}

/// What the map cannot do of what an address asks (a knob it does not
/// have, a preset it does not know), in a sentence; the map opens anyway.
pub fn address_problem(query: &str) -> Option<String> {
    use crate::lesson_model::{knob_in_query, KNOB_PARAM};
    let clip = |text: &str| {
        let text: String = text.chars().take(60).collect();
        format!("{text:?}")
    };
    if let Some(value) = crate::view_model::query_param(query, KNOB_PARAM) {
        if knob_in_query(query).is_none() {
            let names: Vec<&str> = crate::session::Knob::ALL.iter().map(|knob| knob.name()).collect();
            return Some(format!(
                "This link's knob {} is not KNOB:VALUE for one of the map's knobs ({}); the map opens without it.",
                clip(&value.replace("%3A", ":").replace("%3a", ":")),
                names.join(", ")
            ));
        }
    }
    match crate::view_model::query_param(query, "preset") {
        Some("bench") | None => None,
        Some(other) => Some(format!(
            "This link's preset {} is not one kafkascope has (bench); the map opens with its default cluster.",
            clip(other)
        )),
    }
}

/// The knobs that shape a cluster (changing them starts a new run).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setup {
    pub brokers: u32,
    pub partitions: u32,
    pub replication_factor: u32,
    /// The consumers' `partition.assignment.strategy` (classic protocol),
    /// or `consumer:` and the server-side assignor (`group.protocol=consumer`,
    /// KIP-848): one of [`ASSIGNORS`]' values.
    pub assignor: String,
    /// Members of `billing` and of `search`.
    pub billing: u32,
    pub search: u32,
    pub seed: u64,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            brokers: 3,
            partitions: 3,
            replication_factor: 3,
            assignor: "range".into(),
            billing: 2,
            search: 1,
            seed: DEFAULT_SEED,
        }
    }
}

/// The assignors a group can use (Kafka's names): the classic protocol's
/// client-side ones, then the consumer protocol's server-side ones; value
/// and label.
pub const ASSIGNORS: [(&str, &str); 6] = [
    ("range", "range"),
    ("roundrobin", "roundrobin"),
    ("sticky", "sticky"),
    ("cooperative-sticky", "cooperative-sticky"),
    ("consumer:uniform", "uniform (group.protocol=consumer, KIP-848)"),
    ("consumer:range", "range (group.protocol=consumer, KIP-848)"),
];

/// The cluster a [`Setup`] describes, or what is wrong with it in words.
pub fn setup_config(setup: &Setup) -> Result<ClusterConfig, String> {
    if !(1..=9).contains(&setup.brokers) {
        return Err(format!("brokers must be 1 to 9 (got {})", setup.brokers));
    }
    if !(1..=24).contains(&setup.partitions) {
        return Err(format!("partitions must be 1 to 24 (got {})", setup.partitions));
    }
    if setup.replication_factor < 1 || setup.replication_factor > setup.brokers {
        return Err(format!(
            "the replication factor must be 1 to the number of brokers ({}), got {}",
            setup.brokers, setup.replication_factor
        ));
    }
    if setup.billing > 8 || setup.search > 8 {
        return Err("at most 8 consumers per group".into());
    }
    if !ASSIGNORS.iter().any(|(value, _)| *value == setup.assignor) {
        return Err(format!("unknown assignor {:?}", setup.assignor));
    }
    let mut config = default_config();
    config.brokers = setup.brokers;
    config.topics[0].partitions = setup.partitions;
    config.topics[0].replication_factor = setup.replication_factor;
    config.topics[0].min_insync_replicas = config.topics[0].min_insync_replicas.min(setup.replication_factor);
    config.offsets_topic_partitions = 3;
    // With fewer than 3 brokers the internal topics take what there is, as
    // Kafka's quickstart configures a single broker
    // (`offsets.topic.replication.factor=1`); with the default 3 no group
    // would ever find a coordinator.
    config.offsets_topic_replication_factor = setup.brokers.min(3);
    config.transaction_state_log_replication_factor = setup.brokers.min(3);
    let member = |group: &str| {
        let mut consumer = ConsumerConfig::new(group, vec!["orders".into()]);
        consumer.auto_offset_reset = OffsetReset::Earliest;
        match setup.assignor.strip_prefix("consumer:") {
            Some(remote) => {
                consumer.group_protocol = GroupProtocol::Consumer;
                consumer.group_remote_assignor = Some(remote.to_string());
            }
            None => consumer.assignor = setup.assignor.clone(),
        }
        consumer
    };
    config.consumers = (0..setup.billing)
        .map(|_| member("billing"))
        .chain((0..setup.search).map(|_| member("search")))
        .collect();
    config.validate()?;
    Ok(config)
}

/// Reads a knob's text as a number in `range`, or says why not.
pub fn parse_knob(name: &str, text: &str, range: std::ops::RangeInclusive<u64>) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(value) if range.contains(&value) => Ok(value),
        _ => Err(format!(
            "{name} must be a whole number from {} to {} (got {:?})",
            range.start(),
            range.end(),
            text.trim()
        )),
    }
}

/// The speed the play loop actually reached, in simulated milliseconds
/// per real second, from `(real ms, simulated ms)` samples: `None` until
/// they span a second of real time.
pub fn reached_speed(samples: &[(f64, u64)]) -> Option<f64> {
    let (first, last) = (samples.first()?, samples.last()?);
    let real = last.0 - first.0;
    (real >= 1_000.0).then(|| (last.1.saturating_sub(first.1)) as f64 * 1_000.0 / real)
}

/// A speed in simulated ms per real second as the speed menu writes it
/// (`1×` is real time).
pub fn speed_label(speed: f64) -> String {
    let factor = speed / 1_000.0;
    if factor >= 10.0 {
        format!("{factor:.0}×")
    } else if factor >= 1.0 {
        format!("{factor:.1}×")
    } else {
        format!("{factor:.2}×")
    }
}

/// A count with its noun, singular or plural as the count needs ("1
/// member", "2 members").
pub fn count_of(count: impl Into<u64>, singular: &str, plural: &str) -> String {
    let count = count.into();
    format!("{count} {}", if count == 1 { singular } else { plural })
}

/// One sentence saying what the cluster is made of.
pub fn describe_config(config: &ClusterConfig) -> String {
    let topics: Vec<String> = config
        .topics
        .iter()
        .map(|topic| {
            format!(
                "{} ({}, RF {}, min.insync.replicas {})",
                topic.name,
                count_of(topic.partitions, "partition", "partitions"),
                topic.replication_factor,
                topic.min_insync_replicas
            )
        })
        .collect();
    let groups: std::collections::BTreeSet<&str> = config
        .consumers
        .iter()
        .map(|consumer| consumer.group.as_str())
        .gather();
    format!(
        "{} brokers, {} KRaft controllers, topics {}; {} producer(s); {} consumer(s) in groups {}.",
        config.brokers,
        config.controllers,
        topics.join(", "),
        config.producers.len(),
        config.consumers.len(),
        groups.into_iter().collect::<Vec<_>>().join(", ")
    )
}

/// One line of `kafka-topics --describe`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicRow {
    pub topic: String,
    /// `orders-0`, the id the page's test ids use.
    pub name: String,
    pub partition: u32,
    /// A broker id, or `none` while the partition is offline.
    pub leader: String,
    pub replicas: String,
    pub isr: String,
    /// Eligible leader replicas (KIP-966), as `kafka-topics` prints them.
    pub elr: String,
    /// The last known ELR (`-1` for a remembered "no leader").
    pub last_known_elr: String,
    /// Fewer in-sync replicas than replicas.
    pub under_replicated: bool,
    pub offline: bool,
    /// Led by an unclean election and not yet reported recovered by its
    /// leader (`LeaderRecoveryState` RECOVERING, KIP-704).
    pub recovering: bool,
}

/// The user topics' partitions (not `__consumer_offsets`), in order.
pub fn describe_topics(view: &ClusterView) -> Vec<TopicRow> {
    view.partitions
        .iter()
        .filter(|partition| !partition.internal)
        .map(|partition| TopicRow {
            topic: partition.topic.clone(),
            name: partition.partition.clone(),
            partition: partition.index,
            leader: partition.leader.map_or("none".to_string(), |leader| leader.to_string()),
            replicas: join(&partition.replicas),
            isr: join(&partition.isr),
            elr: join(&partition.elr),
            last_known_elr: partition
                .last_known_elr
                .iter()
                .map(|member| member.map_or("-1".to_string(), |broker| broker.to_string()))
                .collect::<Vec<_>>()
                .join(","),
            under_replicated: partition.isr.len() < partition.replicas.len(),
            recovering: partition.recovering,
            offline: partition.leader.is_none(),
        })
        .collect()
}

/// One line of `kafka-consumer-groups --describe`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupRow {
    pub group: String,
    pub topic: String,
    pub partition: u32,
    /// The group's committed offset (`-` before the first commit).
    pub current_offset: String,
    /// What `kafka-consumer-groups` calls the log end offset: the latest
    /// offset `ListOffsets` gives a `read_uncommitted` client, the
    /// leader's high watermark.
    pub log_end_offset: u64,
    /// `LOG-END-OFFSET − CURRENT-OFFSET`, as the tool computes it
    /// (`ConsumerGroupCommand`); `-` before the first commit.
    pub lag: String,
    /// The member that owns the partition now (`-` for none).
    pub consumer_id: String,
    /// The owner's position (the next offset it reads; not a column of
    /// Kafka's tool, which reads only committed offsets).
    pub position: String,
    /// The member's last position reset after `OFFSET_OUT_OF_RANGE` (not
    /// a column of Kafka's tool; its consumer logs it).
    pub reset: String,
}

/// The high watermark of `partition` on its leader, as `ListOffsets`
/// (latest, `read_uncommitted`) answers it; 0 without a leader.
pub fn leader_high_watermark(view: &ClusterView, partition: &str) -> u64 {
    let leader = view
        .partitions
        .iter()
        .find(|candidate| candidate.partition == partition)
        .and_then(|found| found.leader);
    view.brokers
        .iter()
        .filter(|broker| Some(broker.id) == leader)
        .flat_map(|broker| broker.replicas.iter())
        .find(|replica| replica.partition == partition)
        .map_or(0, |replica| replica.high_watermark)
}

/// The group's committed offset for a partition, as its members know
/// their commits: the highest any member committed (the coordinator keeps
/// the latest, which is the highest unless a reset moved a member back).
pub fn group_committed(view: &ClusterView, group: &str, partition: &str) -> Option<u64> {
    view.consumers
        .iter()
        .filter(|consumer| consumer.group == group)
        .flat_map(|consumer| consumer.partitions.iter())
        .filter(|owned| owned.partition == partition)
        .filter_map(|owned| owned.committed)
        .max()
}

/// A group's lag on a partition as `kafka-consumer-groups` reports it:
/// the leader's high watermark minus the committed offset; `None` before
/// the first commit. The map's member rows, the group inspector and the
/// tool's panel all read this one function.
pub fn kafka_lag(view: &ClusterView, group: &str, partition: &str) -> Option<u64> {
    group_committed(view, group, partition)
        .map(|committed| leader_high_watermark(view, partition).saturating_sub(committed))
}

/// `kafka-consumer-groups --describe` for every group: one row per
/// partition a member owns, with its owner (the member of the newest
/// generation, when a rebalance in flight leaves two claiming it).
pub fn describe_groups(view: &ClusterView) -> Vec<GroupRow> {
    let mut owners: BTreeMap<(String, String, u32), &kafkascope_engine::sim::view::ConsumerView> = BTreeMap::new();
    let mut owned_views = BTreeMap::new();
    for consumer in &view.consumers {
        for owned in &consumer.partitions {
            let key = (consumer.group.clone(), owned.topic.clone(), owned.index);
            let newer = owners
                .get(&key)
                .is_none_or(|current| (consumer.generation, consumer.id) > (current.generation, current.id));
            if newer {
                owners.insert(key.clone(), consumer);
                owned_views.insert(key, owned);
            }
        }
    }
    owners
        .into_iter()
        .map(|((group, topic, partition), owner)| {
            let owned = owned_views[&(group.clone(), topic.clone(), partition)];
            let committed = group_committed(view, &group, &owned.partition);
            GroupRow {
                current_offset: committed.map_or("-".to_string(), |offset| offset.to_string()),
                log_end_offset: leader_high_watermark(view, &owned.partition),
                lag: kafka_lag(view, &group, &owned.partition).map_or("-".to_string(), |lag| lag.to_string()),
                consumer_id: owner.member_id.clone().unwrap_or_else(|| "-".to_string()),
                position: owned.position.map_or("-".to_string(), |offset| offset.to_string()),
                reset: owned.last_reset.map_or(String::new(), |(from, to)| {
                    format!("{from} → {to} (OFFSET_OUT_OF_RANGE)")
                }),
                group,
                topic,
                partition,
            }
        })
        .collect()
}

/// Each group's total LAG over its rows of `kafka-consumer-groups`
/// (`-` while none of its partitions has a committed offset).
pub fn group_lags(rows: &[GroupRow]) -> BTreeMap<String, String> {
    let mut lags: BTreeMap<String, Option<u64>> = BTreeMap::new();
    for row in rows {
        let total = lags.entry(row.group.clone()).or_default();
        if let Ok(lag) = row.lag.parse::<u64>() {
            *total = Some(total.unwrap_or(0) + lag);
        }
    }
    lags.into_iter()
        .map(|(group, lag)| (group, lag.map_or("-".to_string(), |lag| lag.to_string())))
        .gather()
}

/// `kafka-metadata-quorum describe --status`, reduced to what the
/// simulation knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumStatus {
    /// The active controller, `none` during an election.
    pub leader_id: String,
    pub leader_epoch: u32,
    /// Metadata log entries committed by a majority.
    pub high_watermark: usize,
    pub voters: String,
    /// Brokers fetching the metadata log (`CurrentObservers`).
    pub observers: String,
    /// How far the furthest-behind voter is (`MaxFollowerLag`).
    pub max_follower_lag: usize,
    pub down: String,
    /// `kafka-metadata-quorum describe --replication`: one row per voter
    /// and observer, as the leader sees them.
    pub replication: Vec<QuorumReplicaRow>,
}

/// One row of `kafka-metadata-quorum describe --replication`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumReplicaRow {
    pub node_id: u32,
    pub log_end_offset: usize,
    pub lag: usize,
    pub last_fetch_ms: String,
    pub last_caught_up_ms: String,
    pub status: QuorumMember,
}

/// What a controller or broker is to the metadata quorum, as
/// `kafka-metadata-quorum describe --replication` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuorumMember {
    Leader,
    Follower,
    Observer,
}

impl std::fmt::Display for QuorumMember {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            QuorumMember::Leader => "Leader",
            QuorumMember::Follower => "Follower",
            QuorumMember::Observer => "Observer",
        })
    }
}

/// The offset of controllers' node ids in the tools' output. Node ids are
/// unique across a KRaft cluster (a controller and a broker never share
/// one); the map names processes `controller-N` and `broker-N`, so the
/// tools number controller-N as node 3000+N, as Kafka's own test clusters
/// do (`TestKitNodes`: controllers from 3000, brokers from 0).
pub const CONTROLLER_NODE_ID_BASE: u32 = 3000;

/// A controller's node id in the tools' output.
pub fn controller_node_id(controller: u32) -> u32 {
    CONTROLLER_NODE_ID_BASE + controller
}

pub fn describe_quorum(view: &ClusterView) -> QuorumStatus {
    let leader = view
        .controllers
        .iter()
        .filter(|controller| controller.alive && controller.role == Role::Leader)
        .max_by_key(|controller| controller.epoch);
    let voters: Vec<u32> = view
        .controllers
        .iter()
        .map(|controller| controller_node_id(controller.id))
        .collect();
    let down: Vec<u32> = view
        .controllers
        .iter()
        .filter(|controller| !controller.alive)
        .map(|controller| controller_node_id(controller.id))
        .collect();
    let mut replication = Vec::new();
    let mut observers = Vec::new();
    if let Some(leader) = leader {
        replication.push(QuorumReplicaRow {
            node_id: controller_node_id(leader.id),
            log_end_offset: leader.log_length,
            lag: 0,
            last_fetch_ms: view.time_ms.to_string(),
            last_caught_up_ms: view.time_ms.to_string(),
            status: QuorumMember::Leader,
        });
        for fetcher in &leader.fetchers {
            let (node_id, status) = match fetcher.node {
                NodeId::Controller(id) => (controller_node_id(id), QuorumMember::Follower),
                NodeId::Broker(id) => {
                    observers.push(id);
                    (id, QuorumMember::Observer)
                }
                _ => continue,
            };
            replication.push(QuorumReplicaRow {
                node_id,
                log_end_offset: fetcher.log_end_offset,
                lag: leader.log_length.saturating_sub(fetcher.log_end_offset),
                last_fetch_ms: fetcher.last_fetch_ms.to_string(),
                last_caught_up_ms: fetcher.last_caught_up_ms.map_or("-".to_string(), |ms| ms.to_string()),
                status,
            });
        }
    }
    let max_follower_lag = replication
        .iter()
        .filter(|row| row.status == QuorumMember::Follower)
        .map(|row| row.lag)
        .max()
        .unwrap_or(0);
    QuorumStatus {
        observers: join(&observers),
        max_follower_lag,
        replication,
        leader_id: leader.map_or("none".to_string(), |leader| controller_node_id(leader.id).to_string()),
        leader_epoch: view
            .controllers
            .iter()
            .map(|controller| controller.epoch)
            .max()
            .unwrap_or(0),
        high_watermark: leader.map_or(0, |leader| leader.committed),
        voters: join(&voters),
        down: if down.is_empty() { "-".to_string() } else { join(&down) },
    }
}

fn join(ids: &[u32]) -> String {
    ids.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// What a `min.insync.replicas` above the replication factor means. Kafka
/// accepts the setting, then counts `min(min.insync.replicas, replicas)`
/// (`Partition#effectiveMinIsr`: "there is no restriction on it … the
/// effective min ISR of min(replication factor, min ISR) is returned").
pub fn min_insync_warning(min_insync: u32, replication_factor: u32) -> Option<String> {
    (min_insync > replication_factor).then(|| {
        format!(
            "min.insync.replicas={min_insync} is above the replication factor ({replication_factor}). Kafka accepts it and counts {replication_factor} instead (the effective min ISR): acks=all writes need every replica in sync, and as soon as one leaves the ISR they fail with NOT_ENOUGH_REPLICAS."
        )
    })
}

/// Whether a trace event belongs in "What just happened": state changes
/// and decisions (inputs, fencing, elections, ISR changes, rebalances,
/// errors, losses, truncations, process status), never routine traffic
/// (messages sent, delivered or dropped, appends, high watermarks, reads,
/// commits, acknowledgements). An exhaustive match, so a new kind of event
/// has to be placed here.
pub fn is_notable(kind: &TraceKind) -> bool {
    match kind {
        TraceKind::Input { .. }
        | TraceKind::BrokerStatus { .. }
        | TraceKind::BrokerFencing { .. }
        | TraceKind::LeaderElected { .. }
        | TraceKind::IsrChanged { .. }
        | TraceKind::Truncated { .. }
        | TraceKind::ProduceFailed { .. }
        | TraceKind::RecordsLost { .. }
        | TraceKind::InvariantViolated { .. }
        | TraceKind::GroupRebalanced { .. }
        | TraceKind::TargetAssignment { .. }
        | TraceKind::ProcessedAgain { .. }
        | TraceKind::ProcessingInterrupted { .. }
        | TraceKind::ConsumerStatus { .. }
        | TraceKind::ControllerStatus { .. }
        | TraceKind::ControllerElection { .. }
        | TraceKind::ControllerElected { .. }
        | TraceKind::ElectLeadersFailed { .. }
        | TraceKind::PartitionsCreated { .. }
        | TraceKind::CreatePartitionsFailed { .. }
        | TraceKind::InternalTopicNotCreated { .. }
        | TraceKind::LimitReached { .. }
        | TraceKind::ChangeRefused { .. }
        | TraceKind::DuplicateIgnored { .. }
        | TraceKind::RequestStalled { .. }
        | TraceKind::ProducersExpired { .. }
        | TraceKind::TransactionalWriteRefused { .. }
        | TraceKind::MarkerWritten { .. }
        | TraceKind::TransactionState { .. }
        | TraceKind::TransactionEnded { .. }
        | TraceKind::TransactionRolledBack { .. }
        | TraceKind::DeadLettered { .. }
        | TraceKind::HandlerFailed { .. }
        | TraceKind::SegmentsDeleted { .. }
        | TraceKind::LogCleaned { .. }
        | TraceKind::Throttled { .. }
        | TraceKind::OffsetOutOfRange { .. }
        | TraceKind::NoOffsetForPartition { .. }
        | TraceKind::LogTruncationDetected { .. }
        | TraceKind::OffsetReset { .. } => true,
        TraceKind::Sent { .. }
        | TraceKind::Delivered { .. }
        | TraceKind::Dropped { .. }
        | TraceKind::Appended { .. }
        | TraceKind::HighWatermark { .. }
        | TraceKind::Acknowledged { .. }
        | TraceKind::Consumed { .. }
        | TraceKind::OffsetsCommitted { .. } => false,
    }
}

/// How often the live map samples each group's lag (virtual time).
pub const LAG_SAMPLE_MS: u64 = 250;
/// How many samples a group's lag chart keeps (a minute).
pub const LAG_SAMPLES_KEPT: usize = 240;

/// One sample of a group's lag: the sum over its members' partitions of
/// high watermark minus position, and whether the group was rebalancing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LagSample {
    pub at_ms: u64,
    pub lag: u64,
    pub rebalancing: bool,
    /// Partitions the group subscribes to that no running member reads:
    /// unowned (an eager rebalance takes them all away), moving, or owned
    /// by a paused or dead member.
    pub unread: u32,
    /// Members stopped by a rebalance: running (not paused), rejoining
    /// and owning nothing, as every eager member is while its group
    /// rebalances.
    pub stopped: u32,
}

/// Each group's lag over the last minute, as the live map sampled it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LagHistory {
    groups: std::collections::BTreeMap<String, std::collections::VecDeque<LagSample>>,
    next_at_ms: u64,
    /// Samples kept per group; 0 means [`LAG_SAMPLES_KEPT`].
    capacity: usize,
    /// Each running member's lag at each sample, by group and consumer.
    members:
        std::collections::BTreeMap<String, std::collections::BTreeMap<u32, std::collections::VecDeque<(u64, u64)>>>,
    /// Groups that completed a rebalance since the last sample.
    rebalanced: std::collections::BTreeSet<String>,
}

impl LagHistory {
    /// A history that keeps `capacity` samples per group.
    pub fn with_capacity(capacity: usize) -> LagHistory {
        LagHistory {
            capacity,
            ..LagHistory::default()
        }
    }

    /// Notes a trace event: a completed rebalance shades the next sample
    /// even if no member was caught rejoining at a sampling instant.
    pub fn note(&mut self, event: &kafkascope_engine::sim::trace::TraceEvent) {
        if let TraceKind::GroupRebalanced { group, .. } | TraceKind::TargetAssignment { group, .. } = &event.kind {
            self.rebalanced.insert(group.clone());
        }
    }

    /// Samples every group once `LAG_SAMPLE_MS` has passed since the last
    /// sample (members that are stopped do not count).
    pub fn sample(&mut self, simulation: &kafkascope_engine::sim::Simulation) {
        use kafkascope_engine::sim::view::ConsumerPhase;
        let now = simulation.now();
        if now < self.next_at_ms {
            return;
        }
        self.next_at_ms = now + LAG_SAMPLE_MS;
        use kafkascope_engine::groups::assignors::TopicPartition;
        // Per group: whether a member is rejoining, members stopped, the
        // topics, and per partition the running owner's position.
        #[derive(Default)]
        struct Group<'a> {
            rebalancing: bool,
            stopped: u32,
            topics: std::collections::BTreeSet<&'a str>,
            read: std::collections::BTreeMap<&'a TopicPartition, u64>,
            owned: std::collections::BTreeMap<&'a TopicPartition, u64>,
            committed: std::collections::BTreeMap<&'a TopicPartition, u64>,
            /// Each running member's lag: its partitions' high watermarks
            /// minus its positions.
            members: Vec<(u32, u64)>,
        }
        let mut totals: std::collections::BTreeMap<String, Group> = std::collections::BTreeMap::new();
        for consumer in simulation.consumers() {
            let entry = totals.entry(consumer.config.group.clone()).or_default();
            entry.topics.extend(consumer.config.topics.iter().map(String::as_str));
            for (partition, offset) in &consumer.committed {
                let best = entry.committed.entry(partition).or_default();
                *best = (*best).max(*offset);
            }
            if consumer.phase == ConsumerPhase::Stopped {
                continue;
            }
            let rejoining = matches!(consumer.phase, ConsumerPhase::Joining | ConsumerPhase::Syncing);
            entry.rebalancing |= rejoining;
            let paused = consumer.paused_until.is_some_and(|until| until > now);
            let member_lag = consumer
                .assignment
                .iter()
                .map(|partition| {
                    let hw = simulation.partition_high_watermark(partition).unwrap_or(0);
                    hw.saturating_sub(consumer.positions.get(partition).copied().unwrap_or(hw))
                })
                .sum();
            entry.members.push((consumer.id, member_lag));
            for partition in &consumer.assignment {
                let position = consumer.positions.get(partition).copied();
                if let Some(position) = position {
                    entry.owned.insert(partition, position);
                }
                if !paused {
                    entry.read.insert(partition, position.unwrap_or(0));
                }
            }
            if !paused && rejoining && consumer.assignment.is_empty() {
                entry.stopped += 1;
            }
        }
        let kept = if self.capacity == 0 {
            LAG_SAMPLES_KEPT
        } else {
            self.capacity
        };
        for (group, totals) in totals {
            // Lag counts every partition the group reads: its high
            // watermark minus the owner's position, or minus the group's
            // committed offset where no member holds it (what
            // kafka-consumer-groups shows as CURRENT-OFFSET).
            let mut lag = 0;
            let mut unread = 0;
            for topic in simulation
                .config()
                .topics
                .iter()
                .filter(|topic| totals.topics.contains(topic.name.as_str()))
            {
                for index in 0..topic.partitions {
                    let partition = TopicPartition::new(topic.name.as_str(), index);
                    let hw = simulation.partition_high_watermark(&partition).unwrap_or(0);
                    let at = totals
                        .owned
                        .get(&partition)
                        .or_else(|| totals.committed.get(&partition))
                        .copied()
                        .unwrap_or(hw);
                    lag += hw.saturating_sub(at);
                    if !totals.read.contains_key(&partition) {
                        unread += 1;
                    }
                }
            }
            let rebalancing = totals.rebalancing | self.rebalanced.remove(&group);
            let members = self.members.entry(group.clone()).or_default();
            for (consumer, member_lag) in &totals.members {
                let series = members.entry(*consumer).or_default();
                series.push_back((now, *member_lag));
                while series.len() > kept {
                    series.pop_front();
                }
            }
            // A member that stopped keeps its line only while its samples
            // are still in the window.
            let oldest = self
                .groups
                .get(&group)
                .and_then(|samples| samples.front())
                .map_or(0, |sample| sample.at_ms);
            members.retain(|_, series| series.back().is_some_and(|(at, _)| *at >= oldest));
            let samples = self.groups.entry(group).or_default();
            samples.push_back(LagSample {
                at_ms: now,
                lag,
                rebalancing,
                unread,
                stopped: totals.stopped,
            });
            while samples.len() > kept {
                samples.pop_front();
            }
        }
    }

    /// The samples of a group, oldest first.
    pub fn samples(&self, group: &str) -> Vec<LagSample> {
        self.groups
            .get(group)
            .map(|samples| samples.iter().copied().collect())
            .unwrap_or_default()
    }

    /// Each member's lag over the window kept, by consumer: (time, lag).
    pub fn member_samples(&self, group: &str) -> Vec<(u32, Vec<(u64, u64)>)> {
        self.members
            .get(group)
            .map(|members| {
                members
                    .iter()
                    .map(|(consumer, series)| (*consumer, series.iter().copied().collect()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The groups sampled.
    pub fn groups(&self) -> impl Iterator<Item = &String> {
        self.groups.keys()
    }
}

/// A group's lag chart, ready to draw in a `width` × `height` box.
#[derive(Debug, Clone, PartialEq)]
pub struct LagChart {
    pub group: String,
    /// The line's points (`x,y x,y …`).
    pub points: String,
    /// Stretches where the group was rebalancing: x and width.
    pub rebalances: Vec<(f64, f64)>,
    /// The highest lag shown (the top of the scale).
    pub max: u64,
    /// The lag now.
    pub last: u64,
    /// One sentence for screen readers and the caption.
    pub summary: String,
    /// Each member's own line, on the group's scale.
    pub members: Vec<MemberLine>,
}

/// One member's lag over time in its group's chart.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberLine {
    pub consumer: u32,
    /// The line's points (`x,y x,y …`).
    pub points: String,
    /// Its lag now.
    pub last: u64,
}

/// A group's chart with a line per member (its partitions' high
/// watermarks minus its positions) under the group's total.
pub fn lag_chart_with_members(
    group: &str,
    samples: &[LagSample],
    members: &[(u32, Vec<(u64, u64)>)],
    width: f64,
    height: f64,
) -> LagChart {
    let mut chart = lag_chart(group, samples, width, height);
    let (Some(first), Some(last)) = (samples.first(), samples.last()) else {
        return chart;
    };
    let span = (last.at_ms - first.at_ms).max(1) as f64;
    let max = members
        .iter()
        .flat_map(|(_, series)| series.iter().map(|(_, lag)| *lag))
        .max()
        .unwrap_or(0)
        .max(chart.max)
        .max(1);
    chart.max = max;
    let x = |at: u64| at.saturating_sub(first.at_ms) as f64 / span * width;
    let y = |lag: u64| height - lag as f64 / max as f64 * height;
    chart.points = samples
        .iter()
        .map(|sample| format!("{:.1},{:.1}", x(sample.at_ms), y(sample.lag)))
        .collect::<Vec<_>>()
        .join(" ");
    chart.members = members
        .iter()
        .filter_map(|(consumer, series)| {
            let now = series.last().filter(|(at, _)| *at == last.at_ms)?.1;
            let points = series
                .iter()
                .filter(|(at, _)| *at >= first.at_ms)
                .map(|(at, lag)| format!("{:.1},{:.1}", x(*at), y(*lag)))
                .collect::<Vec<_>>()
                .join(" ");
            Some(MemberLine {
                consumer: *consumer,
                points,
                last: now,
            })
        })
        .collect();
    if !chart.members.is_empty() {
        let parts: Vec<String> = chart
            .members
            .iter()
            .map(|line| format!("{} {}", NodeId::Consumer(line.consumer), line.last))
            .collect();
        chart.summary = format!("{} Per member now: {}.", chart.summary, parts.join(", "));
    }
    chart
}

/// Draws a group's samples: time left to right over the window kept,
/// lag bottom to top from 0 to the highest value.
pub fn lag_chart(group: &str, samples: &[LagSample], width: f64, height: f64) -> LagChart {
    let (Some(first), Some(last)) = (samples.first(), samples.last()) else {
        return LagChart {
            group: group.to_string(),
            points: String::new(),
            rebalances: Vec::new(),
            max: 0,
            last: 0,
            summary: format!("Group {group}: no lag sampled yet."),
            members: Vec::new(),
        };
    };
    let span = (last.at_ms - first.at_ms).max(1) as f64;
    let max = samples.iter().map(|sample| sample.lag).max().unwrap_or(0).max(1);
    let x = |at: u64| (at - first.at_ms) as f64 / span * width;
    let y = |lag: u64| height - lag as f64 / max as f64 * height;
    let points = samples
        .iter()
        .map(|sample| format!("{:.1},{:.1}", x(sample.at_ms), y(sample.lag)))
        .collect::<Vec<_>>()
        .join(" ");
    let mut rebalances: Vec<(f64, f64)> = Vec::new();
    let mut start: Option<u64> = None;
    for (index, sample) in samples.iter().enumerate() {
        let next = samples.get(index + 1).map_or(sample.at_ms, |next| next.at_ms);
        match (sample.rebalancing, start) {
            (true, None) => start = Some(sample.at_ms),
            (false, Some(begin)) => {
                rebalances.push((x(begin), (x(sample.at_ms) - x(begin)).max(1.0)));
                start = None;
            }
            _ => {}
        }
        if index + 1 == samples.len() {
            if let Some(begin) = start {
                rebalances.push((x(begin), (x(next) - x(begin)).max(1.0)));
            }
        }
    }
    let paused = rebalances.len();
    let summary = format!(
        "Group {group}: lag {} now, at most {} over the last {} s{}.",
        last.lag,
        samples.iter().map(|sample| sample.lag).max().unwrap_or(0),
        ((last.at_ms - first.at_ms) as f64 / 1_000.0).round(),
        match paused {
            0 => String::new(),
            1 => ", one rebalance shaded".to_string(),
            count => format!(", {count} rebalances shaded"),
        }
    );
    LagChart {
        group: group.to_string(),
        points,
        rebalances,
        max,
        last: last.lag,
        summary,
        members: Vec::new(),
    }
}

/// The commit modes a member can use: the mode, its form value and label.
pub const COMMIT_MODES: [(CommitMode, &str, &str); 4] = [
    (CommitMode::Auto, "auto", "auto-commit (enable.auto.commit=true)"),
    (
        CommitMode::BeforeProcessing,
        "before",
        "commitSync before processing (at most once)",
    ),
    (
        CommitMode::AfterProcessing,
        "after",
        "commitSync after processing (at least once)",
    ),
    (
        CommitMode::AfterProcessingAsync,
        "after-async",
        "commitAsync after processing",
    ),
];

/// The commit mode a form value names.
pub fn commit_mode(value: &str) -> Option<CommitMode> {
    COMMIT_MODES
        .iter()
        .find(|(_, name, _)| *name == value)
        .map(|(mode, ..)| *mode)
}

/// One line of the delivery ledger table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerRow {
    pub group: String,
    pub once: u64,
    /// Processed again, with the reasons and their counts.
    pub again: u64,
    pub again_why: String,
    pub skipped: u64,
    pub never: u64,
    pub never_why: String,
    pub dead_lettered: u64,
    pub not_yet: u64,
}

/// The delivery ledger, one row per group, reasons in words.
pub fn ledger_rows(views: &[kafkascope_engine::sim::ledger::LedgerView]) -> Vec<LedgerRow> {
    views
        .iter()
        .map(|view| {
            let why = |parts: Vec<String>| parts.join("; ");
            LedgerRow {
                group: view.group.clone(),
                once: view.processed_once,
                again: view.processed_more,
                again_why: why(view
                    .duplicates
                    .iter()
                    .map(|(reason, count)| format!("{count}: {reason}"))
                    .collect()),
                skipped: view.skipped_duplicates,
                never: view.never_processed.iter().map(|(_, count)| count).sum(),
                never_why: why(view
                    .never_processed
                    .iter()
                    .map(|(reason, count)| format!("{count}: {reason}"))
                    .collect()),
                dead_lettered: view.dead_lettered,
                not_yet: view.not_yet,
            }
        })
        .collect()
}

/// The protocols the side-by-side comparison runs: value (as in
/// [`ASSIGNORS`]) and name.
pub const COMPARED: [(&str, &str); 3] = [
    ("range", "eager (range)"),
    ("cooperative-sticky", "cooperative (cooperative-sticky)"),
    ("consumer:uniform", "consumer protocol (KIP-848)"),
];
/// The comparison's fault: `billing`'s first member pauses at this time
/// for this long (past its 45 s session), under a steady keyed load.
pub const COMPARE_PAUSE_AT_MS: u64 = 20_000;
pub const COMPARE_PAUSE_MS: u64 = 50_000;
pub const COMPARE_RUN_MS: u64 = 110_000;
/// Keyed records per second in the comparison.
pub const COMPARE_RATE: u32 = 30;
/// The comparison's record handler: ms per record.
pub const COMPARE_HANDLER_MS: u64 = 20;

/// One protocol's run of the comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct ProtocolRun {
    /// The protocol's name.
    pub label: String,
    /// `billing`'s lag, with the stretches where partitions went unread
    /// shaded.
    pub chart: LagChart,
    /// Time partitions went unread after the fault, summed over
    /// partitions (partition-milliseconds).
    pub unread_ms: u64,
    /// Time running members spent stopped by rebalances, summed over
    /// members.
    pub stopped_ms: u64,
    /// The highest lag.
    pub peak_lag: u64,
    /// Rebalances (generations, or target assignments with KIP-848).
    pub rebalances: usize,
    /// Records `billing` read.
    pub read: u64,
}

/// Runs the same fault on the same cluster once per protocol of
/// [`COMPARED`]: a member of `billing` pauses for a minute under steady
/// load, so its session ends and it comes back. Each run is the engine's,
/// from `setup` (brokers, partitions, members, seed) with only the
/// protocol changed.
pub fn compare_protocols(setup: &Setup, width: f64, height: f64) -> Result<Vec<ProtocolRun>, String> {
    use kafkascope_engine::sim::config::{Input, ScheduledInput};
    let mut runs = Vec::new();
    for (assignor, label) in COMPARED {
        let shaped = Setup {
            assignor: assignor.to_string(),
            billing: setup.billing.max(3),
            partitions: setup.partitions.max(6),
            ..setup.clone()
        };
        let mut config = setup_config(&shaped)?;
        // The application spends a little time on each record, so lag
        // builds while members are stopped.
        for consumer in &mut config.consumers {
            consumer.processing_ms_per_record = COMPARE_HANDLER_MS;
        }
        let mut simulation =
            kafkascope_engine::sim::Simulation::new(config, shaped.seed).map_err(|error| error.to_string())?;
        simulation.set_trace_options(kafkascope_engine::sim::TraceOptions { messages: false });
        for second in 1..COMPARE_RUN_MS / 1_000 {
            for key in 0..COMPARE_RATE {
                simulation.schedule(ScheduledInput {
                    at_ms: second * 1_000 + u64::from(key) * (1_000 / u64::from(COMPARE_RATE)),
                    input: Input::Produce {
                        producer: 0,
                        key: Some(format!("key-{key}")),
                        count: 1,
                        bytes: 100,
                    },
                });
            }
        }
        simulation.schedule(ScheduledInput {
            at_ms: COMPARE_PAUSE_AT_MS,
            input: Input::PauseConsumer {
                consumer: 0,
                duration_ms: COMPARE_PAUSE_MS,
            },
        });
        let mut history = LagHistory::with_capacity((COMPARE_RUN_MS / LAG_SAMPLE_MS) as usize + 1);
        let mut seen = 0;
        let mut rebalances = 0;
        while simulation.now() < COMPARE_RUN_MS {
            let next = (simulation.now() + LAG_SAMPLE_MS).min(COMPARE_RUN_MS);
            simulation.run_until(next);
            for event in &simulation.trace()[seen..] {
                if let TraceKind::GroupRebalanced { group, .. } | TraceKind::TargetAssignment { group, .. } =
                    &event.kind
                {
                    if group == "billing" && event.time > COMPARE_PAUSE_AT_MS {
                        rebalances += 1;
                    }
                }
            }
            seen = simulation.trace().len();
            history.sample(&simulation);
        }
        let samples: Vec<LagSample> = history
            .samples("billing")
            .into_iter()
            .map(|sample| {
                // Only what follows the fault counts (the first join is the
                // same for every protocol).
                let after = sample.at_ms > COMPARE_PAUSE_AT_MS;
                LagSample {
                    rebalancing: after && sample.stopped > 0,
                    unread: if after { sample.unread } else { 0 },
                    stopped: if after { sample.stopped } else { 0 },
                    ..sample
                }
            })
            .collect();
        let unread_ms = samples
            .iter()
            .map(|sample| u64::from(sample.unread) * LAG_SAMPLE_MS)
            .sum();
        let stopped_ms = samples
            .iter()
            .map(|sample| u64::from(sample.stopped) * LAG_SAMPLE_MS)
            .sum();
        let peak_lag = samples.iter().map(|sample| sample.lag).max().unwrap_or(0);
        let read = simulation
            .consumers()
            .iter()
            .filter(|consumer| consumer.config.group == "billing")
            .map(|consumer| consumer.records_read)
            .sum();
        let mut chart = lag_chart("billing", &samples, width, height);
        chart.summary = format!(
            "{label}: members stopped {:.2} s in total, partitions unread {:.1} s, lag at most {peak_lag}, {rebalances} rebalance(s) after the pause.",
            stopped_ms as f64 / 1_000.0,
            unread_ms as f64 / 1_000.0
        );
        runs.push(ProtocolRun {
            label: label.to_string(),
            chart,
            unread_ms,
            stopped_ms,
            peak_lag,
            rebalances,
            read,
        });
    }
    Ok(runs)
}

#[cfg(test)]
mod tests {
    use kafkascope_engine::sim::Simulation;

    use super::*;

    fn settled() -> Simulation {
        let mut simulation = Simulation::new(default_config(), DEFAULT_SEED).expect("the default cluster is valid");
        simulation.run_until(10_000);
        simulation
    }

    /// A dead broker's clients keep failing to reach it; those dropped
    /// messages must not push the fencing and the election out of "What
    /// just happened".
    #[test]
    fn what_just_happened_keeps_the_fencing_and_the_election_above_dropped_messages() {
        use kafkascope_engine::sim::config::{Input, ScheduledInput};
        let mut simulation = settled();
        let leader = simulation.view().partitions[0].leader.expect("a leader");
        simulation.schedule(ScheduledInput {
            at_ms: 10_000,
            input: Input::KillBroker { broker: leader },
        });
        simulation.run_until(25_000);
        let recent: Vec<String> = simulation
            .trace()
            .iter()
            .rev()
            .filter(|event| is_notable(&event.kind))
            .take(12)
            .map(|event| event.line())
            .collect();
        let text = recent.join("\n");
        assert!(text.contains(&format!("controller fenced broker-{leader}")), "{text}");
        assert!(!text.contains("dropped"), "{text}");
    }

    #[test]
    fn setups_build_valid_clusters_or_say_what_is_wrong() {
        let config = setup_config(&Setup::default()).expect("the default setup is valid");
        assert_eq!(config.consumers.len(), 3);
        let bigger = Setup {
            brokers: 5,
            partitions: 8,
            replication_factor: 2,
            assignor: "cooperative-sticky".into(),
            billing: 3,
            search: 0,
            seed: 7,
        };
        let config = setup_config(&bigger).expect("valid");
        assert_eq!(config.topics[0].min_insync_replicas, 2);
        assert!(Simulation::new(config, 7).is_ok());
        // The consumer protocol (KIP-848) with a server-side assignor.
        let modern = setup_config(&Setup {
            assignor: "consumer:range".into(),
            ..Setup::default()
        })
        .expect("valid");
        assert!(modern.consumers.iter().all(|consumer| {
            consumer.group_protocol == GroupProtocol::Consumer
                && consumer.group_remote_assignor.as_deref() == Some("range")
        }));
        let too_many = Setup {
            replication_factor: 4,
            ..Setup::default()
        };
        assert!(setup_config(&too_many).unwrap_err().contains("replication factor"));
        assert!(setup_config(&Setup {
            brokers: 0,
            ..Setup::default()
        })
        .is_err());
        assert!(setup_config(&Setup {
            assignor: "x".into(),
            ..Setup::default()
        })
        .is_err());
        assert_eq!(parse_knob("linger.ms", " 5 ", 0..=1000), Ok(5));
        assert!(parse_knob("linger.ms", "-1", 0..=1000)
            .unwrap_err()
            .contains("linger.ms"));
        assert!(parse_knob("linger.ms", "abc", 0..=1000).is_err());
        assert!(parse_knob("linger.ms", "99999999999999999999999", 0..=1000).is_err());
    }

    #[test]
    fn an_unknown_knob_or_preset_in_the_address_is_named() {
        assert_eq!(address_problem("?knob=acks:1"), None);
        assert_eq!(address_problem("?preset=bench&play=0"), None);
        let knob = address_problem("?knob=ackz:1").expect("unknown knob");
        assert!(
            knob.contains("\"ackz:1\"") && knob.contains("min.insync.replicas"),
            "{knob}"
        );
        assert!(address_problem("?knob=acks").is_some(), "no value");
        let preset = address_problem("?preset=huge").expect("unknown preset");
        assert!(
            preset.contains("\"huge\"") && preset.contains("default cluster"),
            "{preset}"
        );
    }

    #[test]
    fn the_bench_preset_is_valid_and_chosen_by_the_query() {
        assert_eq!(config_for_query("?preset=bench").brokers, 6);
        assert_eq!(config_for_query("?x=1&preset=bench").topics.len(), 3);
        assert_eq!(config_for_query("").brokers, 3);
        assert_eq!(config_for_query("?preset=nope").brokers, 3);
        let mut simulation = Simulation::new(bench_config(), DEFAULT_SEED).expect("the bench cluster is valid");
        simulation.run_until(10_000);
        assert_eq!(describe_topics(&simulation.view()).len(), 36);
        assert!(describe_config(&bench_config()).starts_with("6 brokers"));
        assert_eq!(count_of(1u64, "member", "members"), "1 member");
        assert_eq!(reached_speed(&[(0.0, 0), (500.0, 50_000)]), None);
        assert_eq!(
            reached_speed(&[(0.0, 0), (500.0, 20_000), (2_000.0, 84_000)]),
            Some(42_000.0)
        );
        assert_eq!(speed_label(42_000.0), "42×");
        assert_eq!(speed_label(1_500.0), "1.5×");
        assert_eq!(speed_label(10.0), "0.01×");
        assert_eq!(count_of(0u64, "member", "members"), "0 members");
        assert_eq!(count_of(2u64, "batch", "batches"), "2 batches");
    }

    #[test]
    fn a_producer_whose_bootstrap_broker_died_asks_another_at_once() {
        use kafkascope_engine::sim::config::{Input, ScheduledInput};
        let mut simulation = settled();
        let now = simulation.now();
        // The producer has not asked for metadata yet; its first bootstrap
        // broker is broker-1.
        simulation.schedule(ScheduledInput {
            at_ms: now,
            input: Input::KillBroker { broker: 1 },
        });
        simulation.schedule(ScheduledInput {
            at_ms: now + 10_000,
            input: Input::Produce {
                producer: 0,
                key: None,
                count: 10,
                bytes: 100,
            },
        });
        simulation.run_until(now + 10_500);
        assert_eq!(simulation.summary().acknowledged, 10, "{:?}", simulation.summary());
    }

    #[test]
    fn clients_of_a_dead_coordinator_back_off_instead_of_storming() {
        use kafkascope_engine::sim::config::{Input, ScheduledInput};
        use kafkascope_engine::sim::trace::TraceKind;
        let mut simulation = settled();
        let coordinator = simulation.view().consumers[0].coordinator.expect("a coordinator");
        let now = simulation.now();
        simulation.take_trace();
        simulation.schedule(ScheduledInput {
            at_ms: now,
            input: Input::KillBroker { broker: coordinator },
        });
        simulation.run_until(now + 9_000);
        let dead = NodeId::Broker(coordinator);
        let lost = simulation
            .take_trace()
            .iter()
            .filter(|event| matches!(&event.kind, TraceKind::Dropped { to, .. } if *to == dead))
            .count();
        // Three clients, two requests a lookup, one lookup per 100 ms at
        // most: under 600 in 9 s (at network speed it was thousands).
        assert!(lost < 600, "{lost} requests lost to the dead coordinator");
    }

    #[test]
    fn a_min_insync_above_the_replication_factor_is_warned_about() {
        assert_eq!(min_insync_warning(2, 3), None);
        assert_eq!(min_insync_warning(3, 3), None);
        let warning = min_insync_warning(4, 3).expect("a warning");
        assert!(warning.contains("above the replication factor (3)"), "{warning}");
        assert!(warning.contains("counts 3 instead"), "{warning}");
        assert!(warning.contains("NOT_ENOUGH_REPLICAS"), "{warning}");
    }

    #[test]
    fn topics_describe_lists_the_user_topic_with_a_full_isr() {
        let rows = describe_topics(&settled().view());
        assert_eq!(rows.len(), 3);
        for (index, row) in rows.iter().enumerate() {
            assert_eq!(row.topic, "orders");
            assert_eq!(row.partition, index as u32);
            assert_eq!(row.replicas.split(',').count(), 3);
            assert!(!row.under_replicated && !row.offline, "{row:?}");
        }
    }

    #[test]
    fn a_killed_leader_is_replaced_from_the_isr_and_the_partition_is_under_replicated() {
        let mut simulation = settled();
        let before = describe_topics(&simulation.view())[0].clone();
        let leader: u32 = before.leader.parse().expect("a leader");
        simulation.schedule(kafkascope_engine::sim::config::ScheduledInput {
            at_ms: simulation.now(),
            input: kafkascope_engine::sim::config::Input::KillBroker { broker: leader },
        });
        simulation.run_until(simulation.now() + 20_000);
        let after = describe_topics(&simulation.view())[0].clone();
        assert_ne!(after.leader, before.leader);
        assert!(
            before.isr.split(',').any(|id| id == after.leader),
            "{before:?} -> {after:?}"
        );
        assert!(after.under_replicated);
    }

    #[test]
    fn the_group_owns_every_partition_and_commits() {
        let mut simulation = settled();
        simulation.schedule(kafkascope_engine::sim::config::ScheduledInput {
            at_ms: simulation.now(),
            input: kafkascope_engine::sim::config::Input::Produce {
                producer: 0,
                key: None,
                count: 30,
                bytes: 100,
            },
        });
        simulation.run_until(simulation.now() + 20_000);
        let rows = describe_groups(&simulation.view());
        assert_eq!(
            rows.iter()
                .map(|row| (row.group.as_str(), row.partition))
                .collect::<Vec<_>>(),
            vec![
                ("billing", 0),
                ("billing", 1),
                ("billing", 2),
                ("search", 0),
                ("search", 1),
                ("search", 2)
            ]
        );
        assert!(
            rows.iter().all(|row| row.lag == "0" && row.current_offset != "-"),
            "{rows:?}"
        );
        let quorum = describe_quorum(&simulation.view());
        assert_ne!(quorum.leader_id, "none");
        // Node ids are unique: no voter is also an observer.
        assert_eq!(quorum.voters, "3001,3002,3003");
        let voters: Vec<&str> = quorum.voters.split(',').collect();
        assert!(
            quorum.observers.split(',').all(|observer| !voters.contains(&observer)),
            "{quorum:?}"
        );
        assert_eq!(quorum.observers, "1,2,3");
    }

    #[test]
    fn after_the_coordinator_dies_the_group_still_owns_every_partition_once() {
        use kafkascope_engine::sim::config::{Input, ScheduledInput};
        let mut simulation = settled();
        let now = simulation.now();
        simulation.schedule(ScheduledInput {
            at_ms: now,
            input: Input::Produce {
                producer: 0,
                key: None,
                count: 10,
                bytes: 100,
            },
        });
        simulation.run_until(now + 10_000);
        // Broker 1 leads orders-0 and coordinates the group here.
        let leader: u32 = describe_topics(&simulation.view())[0].leader.parse().expect("a leader");
        let now = simulation.now();
        simulation.schedule(ScheduledInput {
            at_ms: now,
            input: Input::KillBroker { broker: leader },
        });
        simulation.run_until(now + 20_000);
        // Two clients, so two members: none of them joined twice.
        let mut rows = describe_groups(&simulation.view());
        rows.retain(|row| row.group == "billing");
        assert_eq!(
            rows.iter().map(|row| row.partition).collect::<Vec<_>>(),
            vec![0, 1, 2],
            "{rows:?}"
        );
        let members: std::collections::BTreeSet<&str> = rows.iter().map(|row| row.consumer_id.as_str()).collect();
        assert_eq!(members.len(), 2, "{rows:?}");
    }

    #[test]
    fn a_lag_chart_scales_to_its_box_and_shades_rebalances() {
        let sample = |at_ms, lag, rebalancing| LagSample {
            at_ms,
            lag,
            rebalancing,
            unread: 0,
            stopped: 0,
        };
        let samples = [
            sample(0, 0, false),
            sample(1_000, 10, true),
            sample(2_000, 20, true),
            sample(3_000, 5, false),
            sample(4_000, 0, false),
        ];
        let chart = lag_chart("billing", &samples, 200.0, 50.0);
        assert_eq!(chart.max, 20);
        assert_eq!(chart.last, 0);
        assert!(
            chart.points.starts_with("0.0,50.0 50.0,25.0 100.0,0.0"),
            "{}",
            chart.points
        );
        assert_eq!(chart.rebalances, vec![(50.0, 100.0)]);
        assert!(chart.summary.contains("at most 20"), "{}", chart.summary);
        assert!(chart.summary.contains("one rebalance"), "{}", chart.summary);
        let empty = lag_chart("search", &[], 200.0, 50.0);
        assert!(empty.points.is_empty());
    }

    #[test]
    fn the_lag_history_sees_a_paused_member_make_its_group_rebalance() {
        use kafkascope_engine::sim::config::{Input, ScheduledInput};
        let mut simulation = kafkascope_engine::sim::Simulation::new(default_config(), 1).expect("valid");
        let mut history = LagHistory::default();
        let step = |simulation: &mut kafkascope_engine::sim::Simulation, until: u64, history: &mut LagHistory| {
            while simulation.now() < until {
                let next = simulation.now() + LAG_SAMPLE_MS;
                simulation.run_until(next);
                for event in simulation.take_trace() {
                    history.note(&event);
                }
                history.sample(simulation);
            }
        };
        step(&mut simulation, 20_000, &mut history);
        simulation.schedule(ScheduledInput {
            at_ms: 20_000,
            input: Input::PauseConsumer {
                consumer: 0,
                duration_ms: 60_000,
            },
        });
        step(&mut simulation, 80_000, &mut history);
        let samples = history.samples("billing");
        assert_eq!(samples.len(), LAG_SAMPLES_KEPT);
        assert!(samples.iter().any(|sample| sample.rebalancing), "the group rebalanced");
        assert!(history.groups().any(|group| group == "search"));
    }
}

#[cfg(test)]
mod comparison_tests {
    use super::*;

    /// The same GC pause, three protocols: the paused member's partitions
    /// go unread until its session ends in every one; on top of that an
    /// eager rebalance takes every partition away, a cooperative one only
    /// those that move, and KIP-848 moves each partition as soon as its
    /// old owner lets go.
    #[test]
    fn the_same_pause_stops_eager_members_most_and_kip848_members_least() {
        for seed in [3, 11] {
            let runs = compare_protocols(
                &Setup {
                    seed,
                    ..Setup::default()
                },
                240.0,
                48.0,
            )
            .expect("valid");
            let text: Vec<String> = runs.iter().map(|run| run.chart.summary.clone()).collect();
            assert!(runs[0].stopped_ms > runs[1].stopped_ms, "seed {seed}: {text:?}");
            assert!(runs[1].stopped_ms >= runs[2].stopped_ms, "seed {seed}: {text:?}");
            assert!(
                runs[0].peak_lag > runs[1].peak_lag.max(runs[2].peak_lag),
                "seed {seed}: {text:?}"
            );
        }
        let runs = compare_protocols(&Setup::default(), 240.0, 48.0).expect("valid");
        assert_eq!(runs.len(), 3);
        let runs_text: Vec<String> = runs.iter().map(|run| run.chart.summary.clone()).collect();
        let [eager, cooperative, modern] = [&runs[0], &runs[1], &runs[2]];
        assert!(
            eager.rebalances >= 2 && cooperative.rebalances >= 2 && modern.rebalances >= 2,
            "{runs_text:?}"
        );
        assert!(eager.stopped_ms > cooperative.stopped_ms, "{runs_text:?}");
        assert!(cooperative.stopped_ms >= modern.stopped_ms, "{runs_text:?}");
        assert!(
            eager.unread_ms > cooperative.unread_ms.max(modern.unread_ms),
            "{runs_text:?}"
        );
        assert!(
            eager.peak_lag > cooperative.peak_lag.max(modern.peak_lag),
            "{runs_text:?}"
        );
        assert!(!eager.chart.rebalances.is_empty(), "unread stretches are shaded");
        for run in &runs {
            assert!(run.read > 0, "{run:?}");
            assert!(run.chart.summary.contains("partitions unread"), "{}", run.chart.summary);
        }
    }
}

#[cfg(test)]
mod member_lag_tests {
    use super::*;
    use kafkascope_engine::sim::config::{ConfigChange, Input, ScheduledInput};
    use kafkascope_engine::sim::Simulation;

    /// A slow member's own line climbs while the fast one's stays at 0; the
    /// group's line is their sum.
    #[test]
    fn each_member_gets_its_own_lag_line() {
        let mut simulation = Simulation::new(default_config(), DEFAULT_SEED).expect("valid");
        simulation.schedule(ScheduledInput {
            at_ms: 10_000,
            input: Input::SetConfig(ConfigChange::ProcessingMsPerRecord {
                consumer: 0,
                value: 500,
            }),
        });
        for second in 10..20 {
            for key in 0..6 {
                simulation.schedule(ScheduledInput {
                    at_ms: second * 1_000 + key * 100,
                    input: Input::Produce {
                        producer: 0,
                        key: Some(format!("key-{key}")),
                        count: 1,
                        bytes: 100,
                    },
                });
            }
        }
        let mut history = LagHistory::default();
        while simulation.now() < 20_000 {
            let next = simulation.now() + LAG_SAMPLE_MS;
            simulation.run_until(next);
            history.sample(&simulation);
        }
        let chart = lag_chart_with_members(
            "billing",
            &history.samples("billing"),
            &history.member_samples("billing"),
            240.0,
            48.0,
        );
        let lines: Vec<(u32, u64)> = chart.members.iter().map(|line| (line.consumer, line.last)).collect();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].1 > 0, "the slow member lags: {lines:?}");
        assert_eq!(lines[1].1, 0, "the fast one keeps up: {lines:?}");
        assert!(
            chart.summary.contains("Per member now: consumer-0"),
            "{}",
            chart.summary
        );
        assert!(chart.members.iter().all(|line| !line.points.is_empty()));
    }
}
