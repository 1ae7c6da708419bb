//! What a learner can do to what they selected on the map: the
//! inspector's actions (Kill, Restart, Pause, a member's commit mode…)
//! and the phone sheet's few, each naming the process it acts on.

use std::collections::BTreeMap;

use kafkascope_engine::sim::config::{CommitMode, OffsetReset};
use kafkascope_engine::sim::types::NodeId;
use kafkascope_engine::sim::view::{ClusterView, ConsumerPhase, ProcessStatus};
use yew::prelude::*;

use crate::selection::Selection;
use crate::session::Action;

/// What the inspector's actions depend on beyond the cluster's view.
pub struct ActionFacts<'a> {
    pub view: &'a ClusterView,
    /// The consumers whose handler is slow (the inspector offers to undo it).
    pub slow_handlers: &'a [u32],
    /// Each consumer's commit mode and whether its handler is idempotent.
    pub member_settings: &'a BTreeMap<u32, (CommitMode, bool)>,
    /// A replica of a topic the learner may grow: its topic and partition count.
    pub add_partition: Option<(&'a str, u32)>,
}

/// A button's click handler for each action: the click sends `action`
/// to `dispatch`.
pub fn actor(dispatch: &Callback<Action>) -> impl Fn(Action) -> Callback<MouseEvent> + '_ {
    move |action: Action| {
        let dispatch = dispatch.clone();
        Callback::from(move |_: MouseEvent| dispatch.emit(action.clone()))
    }
}

/// The phone sheet's actions for `node`: what a learner does to a process.
pub fn sheet_actions(view: &ClusterView, node: NodeId, dispatch: &Callback<Action>) -> Html {
    let act = actor(dispatch);
    let button = |verb: &'static str, tail: &'static str, test: &str, action: Action| {
        html! { <button type="button" data-testid={format!("sheet-{test}")} onclick={act(action)}>{ format!("{verb} {node}{tail}") }</button> }
    };
    match node {
        NodeId::Broker(id) => {
            let dead = view
                .brokers
                .iter()
                .any(|broker| broker.id == id && broker.status == ProcessStatus::Dead);
            if dead {
                button("Restart", "", "restart", Action::Restart(id))
            } else {
                html! { <>
                    { button("Kill", "", "kill", Action::Kill(id)) }
                    { button("Cut the power of", " (loses what is not flushed)", "power", Action::PowerLoss(id)) }
                    { button("Pause", " for 5 s (GC)", "pause", Action::Pause(id)) }
                </> }
            }
        }
        NodeId::Controller(id) => {
            let alive = view
                .controllers
                .iter()
                .any(|controller| controller.id == id && controller.alive);
            if alive {
                button("Kill", "", "kill", Action::KillController(id))
            } else {
                button("Restart", "", "restart", Action::RestartController(id))
            }
        }
        NodeId::Consumer(id) => html! { <>
            { button("Crash", " (no goodbye)", "crash", Action::CrashConsumer(id)) }
            { button("Remove", " (it leaves the group)", "remove", Action::StopConsumer(id)) }
        </> },
        NodeId::Producer(_) => button("Produce 10 from", " (no key)", "produce", Action::Produce),
    }
}

/// The inspector's actions for `selection`.
pub fn inspector_actions(facts: &ActionFacts, selection: &Selection, dispatch: &Callback<Action>) -> Html {
    let view = facts.view;
    let act = actor(dispatch);
    let button = |label: &'static str, test: String, action: Action| {
        html! {
            <button type="button" data-testid={test} onclick={act(action)}>{ label }</button>
        }
    };
    // A replica's actions are its broker's.
    let node = selection
        .node()
        .map(|node| node.to_string())
        .unwrap_or_else(|| selection.key());
    match (selection.node(), selection) {
        (Some(NodeId::Broker(id)), _) => {
            let dead = view
                .brokers
                .iter()
                .any(|broker| broker.id == id && broker.status == ProcessStatus::Dead);
            html! { <>
                { if dead { button("Restart", format!("inspector-restart-{node}"), Action::Restart(id)) }
                  else { html! { <>
                      { button("Kill", format!("inspector-kill-{node}"), Action::Kill(id)) }
                      { button("Stop gracefully (controlled shutdown)", format!("inspector-stop-{node}"), Action::Stop(id)) }
                  </> } } }
                { button("Cut its power (loses what is not flushed)", format!("inspector-power-{node}"), Action::PowerLoss(id)) }
                { button("Cut every broker's power", "inspector-power-all".to_string(), Action::PowerLossAll) }
                { button("Pause 5 s (GC)", format!("inspector-pause-{node}"), Action::Pause(id)) }
                { button("Slow down +200 ms", format!("inspector-slow-{node}"), Action::Slow(id, 200)) }
                { button("Normal speed", format!("inspector-unslow-{node}"), Action::Slow(id, 0)) }
                { match facts.add_partition {
                    Some((topic, count)) => html! {
                        <button type="button" data-testid="inspector-add-partition"
                            title="kafka-topics --alter --partitions: the active controller adds one; producers and consumers see it at their next metadata refresh (metadata.max.age.ms, 5 minutes: use Skip 10 min)"
                            onclick={act(Action::AddPartitions(topic.to_string()))}>
                            { format!("Add a partition to {topic} ({count} → {})", count + 1) }
                        </button>
                    },
                    _ => html! {},
                } }
            </> }
        }
        (Some(NodeId::Controller(id)), _) => {
            let alive = view
                .controllers
                .iter()
                .any(|controller| controller.id == id && controller.alive);
            if alive {
                button("Kill", format!("inspector-kill-{node}"), Action::KillController(id))
            } else {
                button(
                    "Restart",
                    format!("inspector-restart-{node}"),
                    Action::RestartController(id),
                )
            }
        }
        (Some(NodeId::Consumer(id)), _) => {
            let stopped = view
                .consumers
                .iter()
                .any(|consumer| consumer.id == id && consumer.phase == ConsumerPhase::Stopped);
            if stopped {
                button(
                    "Start (join the group)",
                    format!("inspector-start-{node}"),
                    Action::StartConsumer(id),
                )
            } else {
                running_consumer_actions(facts, id, &node, dispatch)
            }
        }
        (_, Selection::Group(group)) => button(
            "Add a consumer",
            format!("inspector-add-{node}"),
            Action::AddConsumer(group.clone()),
        ),
        (Some(NodeId::Producer(id)), _) => html! { <>
            { button("Produce 10 (no key)", "inspector-produce".into(), Action::Produce) }
            { button("Produce 10 with key \"user-42\"", "inspector-produce-keyed".into(), Action::ProduceKeyed) }
            { button("Lose its next produce response", format!("inspector-lose-response-{node}"), Action::LoseProduceResponse(id)) }
            { button("Send a poison record (every handler fails on it)", format!("inspector-poison-{node}"), Action::ProducePoison(id)) }
        </> },
        _ => html! {},
    }
}

/// A running consumer's actions: leave, crash or pause it, its handler's
/// speed and idempotence, its commit mode and auto.offset.reset.
fn running_consumer_actions(facts: &ActionFacts, id: u32, node: &str, dispatch: &Callback<Action>) -> Html {
    let view = facts.view;
    let act = actor(dispatch);
    let button = |label: &'static str, test: String, action: Action| {
        html! {
            <button type="button" data-testid={test} onclick={act(action)}>{ label }</button>
        }
    };
    let handler = if facts.slow_handlers.contains(&id) {
        button(
            "Fast handler again",
            format!("inspector-fast-{node}"),
            Action::HandlerMs(id, 0),
        )
    } else {
        button(
            "Slow handler (100 ms a record)",
            format!("inspector-slow-{node}"),
            Action::HandlerMs(id, 100),
        )
    };
    let (mode, idempotent) = facts.member_settings.get(&id).copied().unwrap_or_default();
    let reset = view
        .consumers
        .iter()
        .find(|consumer| consumer.id == id)
        .map_or(OffsetReset::Latest, |consumer| consumer.auto_offset_reset);
    let on_reset = {
        let dispatch = dispatch.clone();
        Callback::from(move |event: Event| {
            let value = event.target_unchecked_into::<web_sys::HtmlSelectElement>().value();
            let reset = [OffsetReset::Earliest, OffsetReset::Latest, OffsetReset::None]
                .into_iter()
                .find(|each| each.to_string() == value);
            if let Some(reset) = reset {
                dispatch.emit(Action::OffsetReset(id, reset));
            }
        })
    };
    let on_mode = {
        let dispatch = dispatch.clone();
        Callback::from(move |event: Event| {
            let value = event.target_unchecked_into::<web_sys::HtmlSelectElement>().value();
            if let Some(mode) = crate::cluster_model::commit_mode(&value) {
                dispatch.emit(Action::CommitMode(id, mode));
            }
        })
    };
    html! { <>
        { button("Remove (leave the group)", format!("inspector-remove-{node}"), Action::StopConsumer(id)) }
        { button("Crash (no goodbye)", format!("inspector-crash-{node}"), Action::CrashConsumer(id)) }
        { button("GC pause 60 s (no polls, no heartbeats)", format!("inspector-pause-{node}"), Action::PauseConsumer(id, 60_000)) }
        { handler }
        if mode == kafkascope_engine::sim::config::CommitMode::Transactional {
            <p class="inspector-control" data-testid={format!("inspector-commit-{node}")}>{ "commits: its offsets go in its output producer's transactions (exactly once)" }</p>
        } else {
            <label class="inspector-control">{ "commits " }
                <select data-testid={format!("inspector-commit-{node}")} onchange={on_mode}>
                    { for crate::cluster_model::COMMIT_MODES.iter().map(|(each, value, label)| html! {
                        <option value={*value} selected={*each == mode}>{ *label }</option>
                    }) }
                </select>
            </label>
        }
        <label class="inspector-control">{ "auto.offset.reset " }
            <select data-testid={format!("inspector-reset-{node}")} onchange={on_reset}>
                { for [OffsetReset::Earliest, OffsetReset::Latest, OffsetReset::None].into_iter().map(|each| html! {
                    <option value={each.to_string()} selected={each == reset}>{ each.to_string() }</option>
                }) }
            </select>
        </label>
        { if idempotent {
            button("Handler not idempotent", format!("inspector-idempotent-{node}"), Action::IdempotentHandler(id, false))
        } else {
            button("Idempotent handler (skips repeats)", format!("inspector-idempotent-{node}"), Action::IdempotentHandler(id, true))
        } }
    </> }
}
