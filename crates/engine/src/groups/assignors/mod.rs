//! Consumer-group partition assignors, as Kafka's own classes compute them.
//!
//! An assignor takes the topics (with their partition counts) and the
//! group's members (with their subscriptions and, for the sticky assignors,
//! what they owned before) and decides which member owns which partition.
//! Each strategy here reproduces one Kafka class exactly, including its
//! tie-breaks, so a learner sees the assignment a real group would get.

mod range;
pub mod rebalance;
mod report;
mod round_robin;
pub mod simple;
pub mod scale;
mod sticky;
mod uniform;

pub use report::{AssignmentReport, PartitionMove};

pub use crate::protocol::{TopicName, TopicPartition};

use crate::sorting::Gather;
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::java::compare_strings;

/// One member of a group as an assignor sees it. In JSON (the CLI's and
/// the JavaScript API's input) fields are camelCase, as in the vector files.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Member {
    /// The member id the coordinator gave it.
    pub member_id: String,
    /// `group.instance.id` for a static member.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_instance_id: Option<String>,
    /// The topics it subscribes to. Names are shared allocations, so a
    /// group whose members subscribe to the same topics can hold each name
    /// once, as Kafka's own scale test does with one list of `String`s.
    pub topics: Vec<TopicName>,
    /// The partitions it owned in the previous generation (sticky assignors).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub owned: Vec<TopicPartition>,
    /// The generation of `owned`; `None` is Kafka's DEFAULT_GENERATION (-1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i32>,
}

/// Everything an assignor needs to decide.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct GroupInput {
    /// Topic name to partition count, as the metadata knows them.
    pub topics: BTreeMap<String, u32>,
    /// The members, in the order the coordinator listed them.
    pub members: Vec<Member>,
    /// Topic name to Kafka topic id (a `Uuid` string), for the server-side
    /// assignors, whose tie-breaks depend on topic ids.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub topic_ids: BTreeMap<String, String>,
    /// How the server-side assignors see the group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<ServerOptions>,
}

/// Options that mirror how Kafka's server-side assignor tests build a group.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ServerOptions {
    /// The map that holds the members: production uses a `HashMap`, Kafka's
    /// tests a `TreeMap` (sorted by member id). It decides iteration order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub map: Option<MemberMap>,
    /// Forces the subscription type; otherwise it is homogeneous exactly when
    /// every member subscribes to the same topics.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub subscription_type: Option<SubscriptionType>,
}

/// The Java map type holding a group's members on the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum MemberMap {
    /// `java.util.TreeMap`: iteration sorted by member id.
    Treemap,
    /// `java.util.HashMap`: iteration in hash-bucket order.
    Hashmap,
}

/// KIP-848's subscription type (`SubscriptionType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "UPPERCASE")]
pub enum SubscriptionType {
    /// Every member subscribes to the same topics.
    Homogeneous,
    /// Subscriptions differ.
    Heterogeneous,
}

/// The outcome: for every member, its partitions in the order the assignor
/// produced them.
pub type Assignment = BTreeMap<String, Vec<TopicPartition>>;

/// The assignors a learner can choose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Strategy {
    /// Client-side `RangeAssignor` (`range`).
    Range,
    /// Client-side `RoundRobinAssignor` (`roundrobin`).
    RoundRobin,
    /// Client-side `StickyAssignor` (`sticky`, eager protocol).
    Sticky,
    /// Client-side `CooperativeStickyAssignor` (`cooperative-sticky`): the
    /// first-phase assignment, with partitions changing owner withheld.
    CooperativeSticky,
    /// KIP-848 server-side `UniformAssignor` (`uniform`, the default of
    /// `group.consumer.assignors`).
    Uniform,
    /// KIP-848 server-side `RangeAssignor` (`server-range`; Kafka calls it
    /// `range` in `group.consumer.assignors`).
    ServerRange,
}

impl Strategy {
    /// Every strategy, in the order the UI lists them.
    pub const ALL: [Strategy; 6] = [
        Strategy::Range,
        Strategy::RoundRobin,
        Strategy::Sticky,
        Strategy::CooperativeSticky,
        Strategy::Uniform,
        Strategy::ServerRange,
    ];

    /// The name Kafka uses for the strategy.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Range => "range",
            Strategy::RoundRobin => "roundrobin",
            Strategy::Sticky => "sticky",
            Strategy::CooperativeSticky => "cooperative-sticky",
            Strategy::Uniform => "uniform",
            Strategy::ServerRange => "server-range",
        }
    }

    /// Looks a strategy up by its Kafka name.
    pub fn from_name(name: &str) -> Option<Strategy> {
        Strategy::ALL.into_iter().find(|strategy| strategy.name() == name)
    }
}

/// Why an assignment could not be computed: the input breaks a rule Kafka
/// enforces (for example a server-side member subscribed to a topic missing
/// from the metadata), said in one sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssignError {
    /// The sentence.
    pub message: String,
}

impl AssignError {
    fn new(message: impl Into<String>) -> AssignError {
        AssignError {
            message: message.into(),
        }
    }
}

impl fmt::Display for AssignError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.message)
    }
}

impl std::error::Error for AssignError {}

/// Computes the assignment Kafka's assignor for `strategy` gives.
pub fn assign(strategy: Strategy, input: &GroupInput) -> Result<Assignment, AssignError> {
    Ok(assign_with_withheld(strategy, input)?.0)
}

/// Computes the assignment and explains it: moves, revocations, withheld
/// partitions, counts and a reason per partition.
pub fn assign_explained(strategy: Strategy, input: &GroupInput) -> Result<AssignmentReport, AssignError> {
    let (assignment, withheld) = assign_with_withheld(strategy, input)?;
    Ok(report::report(strategy, input, assignment, withheld))
}

/// The assignment, and the partitions the cooperative protocol withholds
/// from their new owner this round (empty for eager assignors).
fn assign_with_withheld(
    strategy: Strategy,
    input: &GroupInput,
) -> Result<(Assignment, Vec<TopicPartition>), AssignError> {
    check_input(input)?;
    let assignment = match strategy {
        Strategy::CooperativeSticky => return Ok(sticky::assign_cooperative(input)),
        Strategy::Uniform => uniform::assign(input)?,
        Strategy::Sticky => sticky::assign_sticky(input),
        Strategy::Range => range::assign(input),
        Strategy::RoundRobin => round_robin::assign(input),
        // In the Kafka snapshot we follow, the server-side range assignor is
        // not sticky: it computes the same per-topic ranges as the client's,
        // over members in the same order, whatever they owned
        // (`group-coordinator/.../assignor/RangeAssignor.java`).
        Strategy::ServerRange => range::assign(input),
    };
    Ok((assignment, Vec::new()))
}

/// Refuses an input over the limits or naming a member twice.
fn check_input(input: &GroupInput) -> Result<(), AssignError> {
    check_limits(input).map_err(|error| AssignError::new(error.to_string()))?;
    let mut seen = std::collections::BTreeSet::new();
    for member in &input.members {
        if !seen.insert(member.member_id.as_str()) {
            return Err(AssignError::new(format!(
                "member id {:?} appears more than once",
                member.member_id
            )));
        }
    }
    Ok(())
}

/// What one assignment may be asked to cover ([`crate::limits`]): checked
/// before anything is allocated for it.
fn check_limits(input: &GroupInput) -> Result<(), crate::limits::LimitExceeded> {
    use crate::limits::{at_most, MAX_ASSIGN_MEMBERS, MAX_ASSIGN_PARTITIONS, MAX_ASSIGN_SUBSCRIPTIONS};
    let partitions: u64 = input.topics.values().map(|&count| u64::from(count)).sum();
    at_most("partitions", partitions, MAX_ASSIGN_PARTITIONS)?;
    at_most("members", input.members.len() as u64, MAX_ASSIGN_MEMBERS as u64)?;
    let subscriptions: usize = input.members.iter().map(|member| member.topics.len()).sum();
    at_most(
        "subscribed topics across members",
        subscriptions as u64,
        MAX_ASSIGN_SUBSCRIPTIONS as u64,
    )?;
    let owned: usize = input.members.iter().map(|member| member.owned.len()).sum();
    at_most(
        "owned partitions across members",
        owned as u64,
        MAX_ASSIGN_SUBSCRIPTIONS as u64,
    )
}

/// Kafka's member order (`AbstractPartitionAssignor.MemberInfo#compareTo`):
/// static members first, by `group.instance.id`; then dynamic members by
/// member id. Strings compare as Java does (UTF-16 code units).
pub(crate) fn member_order(left: &Member, right: &Member) -> Ordering {
    match (&left.group_instance_id, &right.group_instance_id) {
        (Some(left_instance), Some(right_instance)) => compare_strings(left_instance, right_instance)
            .then_with(|| compare_strings(&left.member_id, &right.member_id)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => compare_strings(&left.member_id, &right.member_id),
    }
}

/// An empty assignment listing every member, as Kafka's assignors return
/// members that get nothing with an empty list.
pub(crate) fn empty_assignment(input: &GroupInput) -> Assignment {
    input
        .members
        .iter()
        .map(|member| (member.member_id.clone(), Vec::new()))
        .gather()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_partitions_parse_with_dashes_in_the_topic() {
        assert_eq!(
            TopicPartition::parse("my-topic-12"),
            Some(TopicPartition::new("my-topic", 12))
        );
        assert_eq!(TopicPartition::parse("topic"), None);
        assert_eq!(TopicPartition::parse("topic-x"), None);
        assert_eq!(TopicPartition::parse("-3"), None);
        assert_eq!(TopicPartition::new("t", 3).to_string(), "t-3");
    }

    #[test]
    fn static_members_sort_before_dynamic_ones() {
        let dynamic = Member {
            member_id: "a".into(),
            ..Member::default()
        };
        let static_member = Member {
            member_id: "z".into(),
            group_instance_id: Some("instance".into()),
            ..Member::default()
        };
        assert_eq!(member_order(&static_member, &dynamic), Ordering::Less);
    }
}
