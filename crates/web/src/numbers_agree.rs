//! Numbers agree everywhere: every shipped story, at every chapter (and at
//! its opening step and its end), drawn as the map and the tools draw it;
//! each figure a panel shows must be the one `ClusterView` and the trace
//! hold. Native, over the same functions the components call.

use std::collections::BTreeSet;

use kafkascope_engine::sim::trace::TraceKind;
use kafkascope_engine::sim::types::NodeId;
use kafkascope_engine::sim::view::{ClusterView, ReplicaRole, Role};

use crate::cluster_model::{
    controller_node_id, describe_groups, describe_quorum, describe_topics, leader_high_watermark,
};
use crate::map_model::{layout_fit, Fit, NodeBody};
use crate::sequence_model::{stories, LossHistory, StoryRun};

/// What disagrees at one point of one story, in words (empty: all agree).
fn disagreements(view: &ClusterView) -> Vec<String> {
    let mut wrong = Vec::new();
    let model = layout_fit(view, view.time_ms as f64, Fit::wide());
    map_rows(view, &model, &mut wrong);
    topics(view, &mut wrong);
    groups(view, &model, &mut wrong);
    quorum(view, &mut wrong);
    wrong
}

/// The map's replica rows: the view's log end, high watermark and role.
fn map_rows(view: &ClusterView, model: &crate::map_model::MapModel, wrong: &mut Vec<String>) {
    for node in &model.nodes {
        let NodeBody::Broker { id, replicas, .. } = &node.body else {
            continue;
        };
        let name = NodeId::Broker(*id);
        let broker = view
            .brokers
            .iter()
            .find(|broker| broker.id == *id)
            .expect("a drawn broker exists");
        for row in replicas {
            match broker
                .replicas
                .iter()
                .find(|replica| replica.partition == row.partition)
            {
                None => wrong.push(format!("{name} draws {} it does not hold", row.partition)),
                Some(replica) => {
                    if (row.log_end_offset, row.high_watermark) != (replica.log_end_offset, replica.high_watermark) {
                        wrong.push(format!(
                            "{name} {}: the map says LEO {} HW {}, the view {} {}",
                            row.partition,
                            row.log_end_offset,
                            row.high_watermark,
                            replica.log_end_offset,
                            replica.high_watermark
                        ));
                    }
                    if row.role != replica.role {
                        wrong.push(format!("{name} {}: the map's role is not the view's", row.partition));
                    }
                }
            }
        }
    }
}

/// kafka-topics: the leader is the broker whose replica leads.
fn topics(view: &ClusterView, wrong: &mut Vec<String>) {
    for row in describe_topics(view) {
        let leaders: Vec<String> = view
            .brokers
            .iter()
            .filter(|broker| {
                broker
                    .replicas
                    .iter()
                    .any(|replica| replica.partition == row.name && replica.role == ReplicaRole::Leader)
            })
            .map(|broker| broker.id.to_string())
            .collect();
        let controller_says = view
            .partitions
            .iter()
            .find(|partition| partition.partition == row.name)
            .and_then(|partition| partition.leader)
            .map_or("none".to_string(), |leader| leader.to_string());
        if row.leader != controller_says {
            wrong.push(format!(
                "kafka-topics says {} is led by {}, the metadata {controller_says}",
                row.name, row.leader
            ));
        }
        if leaders.len() > 1 {
            wrong.push(format!("{} has two leading replicas: {leaders:?}", row.name));
        }
    }
}

/// kafka-consumer-groups: one row per group and partition; LOG-END-OFFSET
/// is the leader's high watermark; LAG is LOG-END-OFFSET − CURRENT-OFFSET;
/// the map's member row for the owner says the same.
fn groups(view: &ClusterView, model: &crate::map_model::MapModel, wrong: &mut Vec<String>) {
    let groups = describe_groups(view);
    let mut seen = BTreeSet::new();
    for row in &groups {
        let partition = format!("{}-{}", row.topic, row.partition);
        if !seen.insert((row.group.clone(), partition.clone())) {
            wrong.push(format!("kafka-consumer-groups lists {} {partition} twice", row.group));
        }
        if row.log_end_offset != leader_high_watermark(view, &partition) {
            wrong.push(format!(
                "{} {partition}: LOG-END-OFFSET {} is not the leader's HW",
                row.group, row.log_end_offset
            ));
        }
        if let Ok(current) = row.current_offset.parse::<u64>() {
            let lag = row.log_end_offset.saturating_sub(current).to_string();
            if row.lag != lag {
                wrong.push(format!(
                    "{} {partition}: LAG {} is not {} − {current}",
                    row.group, row.lag, row.log_end_offset
                ));
            }
        }
        let member_rows = model.nodes.iter().filter_map(|node| match &node.body {
            NodeBody::Group { members, .. } => Some(members),
            _ => None,
        });
        let shown = format!("{partition} @{} lag {}", row.current_offset, row.lag);
        let owner_row = member_rows
            .flatten()
            .find(|member| member.member_id.as_deref() == Some(row.consumer_id.as_str()) && row.consumer_id != "-");
        if let Some(member) = owner_row {
            if !member.partitions.contains(&shown) {
                wrong.push(format!(
                    "{}'s row says {:?}; kafka-consumer-groups says {shown:?}",
                    member.name, member.partitions
                ));
            }
        }
    }
    // The group inspector's offsets: each partition's committed offset and
    // lag as the tool has them.
    for node in &model.nodes {
        let NodeBody::Group { name, offsets, .. } = &node.body else {
            continue;
        };
        for (partition, committed, lag) in offsets {
            let Some(row) = groups
                .iter()
                .find(|row| row.group == *name && format!("{}-{}", row.topic, row.partition) == *partition)
            else {
                continue;
            };
            let committed = committed.map_or("-".to_string(), |offset| offset.to_string());
            if committed != row.current_offset || (row.lag != "-" && row.lag != lag.to_string()) {
                wrong.push(format!(
                    "group {name}'s inspector says {partition} at {committed} lag {lag}; kafka-consumer-groups {} lag {}",
                    row.current_offset, row.lag
                ));
            }
        }
    }
}

/// kafka-metadata-quorum: unique node ids; the leader is the view's.
fn quorum(view: &ClusterView, wrong: &mut Vec<String>) {
    let quorum = describe_quorum(view);
    // One unit, entries: a broker applies only what it holds committed,
    // and the tool's HighWatermark is the active controller's count.
    for broker in &view.brokers {
        let metadata = &broker.metadata;
        if metadata
            .applied_entries
            .is_some_and(|applied| applied > metadata.high_watermark.min(metadata.log_end_offset))
        {
            wrong.push(format!(
                "broker {} applied more metadata entries than it holds committed",
                broker.id
            ));
        }
    }
    if let Some(active) = view
        .controllers
        .iter()
        .find(|controller| controller.alive && controller.role == Role::Leader)
    {
        if quorum.high_watermark != active.committed {
            wrong.push(format!(
                "kafka-metadata-quorum's HighWatermark {} is not the active controller's {} committed entries",
                quorum.high_watermark, active.committed
            ));
        }
    }
    let voters: BTreeSet<&str> = quorum.voters.split(',').filter(|id| !id.is_empty()).collect();
    if quorum.observers.split(',').any(|observer| voters.contains(observer)) {
        wrong.push(format!("node ids {} are both voters and observers", quorum.observers));
    }
    let leader = view
        .controllers
        .iter()
        .filter(|controller| controller.alive && controller.role == Role::Leader)
        .max_by_key(|controller| controller.epoch)
        .map_or("none".to_string(), |controller| {
            controller_node_id(controller.id).to_string()
        });
    if quorum.leader_id != leader {
        wrong.push(format!(
            "the quorum's LeaderId {} is not the active controller {leader}",
            quorum.leader_id
        ));
    }
}

#[test]
fn every_panel_agrees_with_the_view_at_every_chapter_of_every_story() {
    let mut wrong = Vec::new();
    for story in stories() {
        let mut run = StoryRun::start(story).unwrap_or_else(|error| panic!("{}: {error}", story.id));
        let mut points: Vec<usize> = run.outline.chapters.iter().map(|chapter| chapter.index).collect();
        points.push(run.outline.opening_step());
        points.push(run.steps.len() - 1);
        // Each key moment too: the steps a learner jumps to.
        points.extend(run.outline.moments.iter().map(|(index, _)| *index));
        kafkascope_engine::sorting::sort(&mut points);
        points.dedup();
        for index in points {
            run.seek(index);
            let view = run.recording.simulation().view();
            for problem in disagreements(&view) {
                wrong.push(format!("{} step {}: {problem}", story.id, index + 1));
            }
        }
        // A loss is told by its records' own history: the acknowledgements
        // add up to the records lost.
        for event in run.trace() {
            if let TraceKind::RecordsLost { records, .. } = &event.kind {
                let history = LossHistory::of(run.trace(), event).expect("a loss has a history");
                let told: usize = history.batches.iter().map(|batch| batch.count).sum();
                if told != records.len() {
                    wrong.push(format!(
                        "{}: a loss of {} records is told as {told}",
                        story.id,
                        records.len()
                    ));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{} disagreements:\n{}", wrong.len(), wrong.join("\n"));
}
