//! The live cluster: run controls, broker actions and panels shaped like
//! Kafka's command-line tools, redrawn from the engine's view after every
//! action. The simulation lives in this component; the panels read only
//! [`cluster_model`](crate::cluster_model) rows derived from its view.

use std::cell::RefCell;
use std::rc::Rc;

use kafkascope_engine::sim::config::{Input, ScheduledInput};
use kafkascope_engine::sim::Simulation;
use yew::prelude::*;

use crate::cluster_model::{default_config, describe_groups, describe_quorum, describe_topics, DEFAULT_SEED};

fn fresh() -> Simulation {
    // The default configuration is checked by the native tests.
    Simulation::new(default_config(), DEFAULT_SEED).unwrap_or_else(|_| unreachable!("the default cluster is valid"))
}

/// A user action on the running cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Run(u64),
    Step,
    Produce,
    Kill(u32),
    Restart(u32),
    Reset,
}

fn apply(simulation: &mut Simulation, action: Action) {
    let now = simulation.now();
    let input = |simulation: &mut Simulation, input| {
        simulation.schedule(ScheduledInput { at_ms: now, input });
        simulation.run_until(now);
    };
    match action {
        Action::Run(ms) => simulation.run_until(now + ms),
        Action::Step => {
            simulation.step();
        }
        Action::Produce => input(
            simulation,
            Input::Produce {
                producer: 0,
                key: None,
                count: 10,
                bytes: 100,
            },
        ),
        Action::Kill(broker) => input(simulation, Input::KillBroker { broker }),
        Action::Restart(broker) => input(simulation, Input::RestartBroker { broker }),
        Action::Reset => *simulation = fresh(),
    }
}

/// The live cluster section.
#[function_component(ClusterPanel)]
pub fn cluster_panel() -> Html {
    let simulation: Rc<RefCell<Simulation>> = use_mut_ref(fresh);
    let version = use_state(|| 0_u64);
    let act = {
        let simulation = simulation.clone();
        let version = version.clone();
        move |action: Action| {
            let simulation = simulation.clone();
            let version = version.clone();
            Callback::from(move |_: MouseEvent| {
                apply(&mut simulation.borrow_mut(), action);
                version.set(*version + 1);
            })
        }
    };
    let view = simulation.borrow().view();
    let summary = simulation.borrow().summary();
    let topics = describe_topics(&view);
    let groups = describe_groups(&view);
    let quorum = describe_quorum(&view);

    html! {
        <section class="card cluster" aria-labelledby="cluster-title">
            <h2 id="cluster-title">{ "A running cluster" }</h2>
            <p class="hint">
                { "Three brokers, three KRaft controllers, topic orders (3 partitions, RF 3, min.insync.replicas 2), an acks=all producer and group billing. Time is simulated: it moves only when you run it." }
            </p>
            <div class="controls" role="toolbar" aria-label="run controls">
                <button type="button" data-testid="cluster-step" onclick={act(Action::Step)}>{ "Step one event" }</button>
                <button type="button" data-testid="cluster-run-1s" onclick={act(Action::Run(1_000))}>{ "Run 1 s" }</button>
                <button type="button" data-testid="cluster-run-10s" onclick={act(Action::Run(10_000))}>{ "Run 10 s" }</button>
                <button type="button" data-testid="cluster-produce" onclick={act(Action::Produce)}>{ "Produce 10 records" }</button>
                <button type="button" data-testid="cluster-reset" onclick={act(Action::Reset)}>{ "Reset" }</button>
                <span class="clock" data-testid="cluster-time">{ format!("t = {} ms", view.time_ms) }</span>
            </div>
            <p class="muted" data-testid="cluster-summary">
                { format!(
                    "produced {}, acknowledged {}, lost {}, leader elections {}, invariant violations {}",
                    summary.produced, summary.acknowledged, summary.lost, summary.leader_elections, summary.invariant_violations
                ) }
            </p>
            <h3>{ "Brokers" }</h3>
            <ul class="brokers">
                { for view.brokers.iter().map(|broker| {
                    let id = broker.id;
                    let state = if broker.status == "running" && broker.fenced { "fenced".to_string() } else { broker.status.clone() };
                    html! {
                        <li class={classes!("broker", state.clone())} data-testid={format!("broker-{id}")}>
                            <strong>{ format!("broker-{id}") }</strong>
                            <span class="badge">{ state }</span>
                            { if broker.status == "dead" {
                                html! { <button type="button" data-testid={format!("restart-broker-{id}")} onclick={act(Action::Restart(id))}>{ "Restart" }</button> }
                            } else {
                                html! { <button type="button" data-testid={format!("kill-broker-{id}")} onclick={act(Action::Kill(id))}>{ "Kill" }</button> }
                            } }
                        </li>
                    }
                }) }
            </ul>
            <h3><code>{ "kafka-topics --describe --topic orders" }</code></h3>
            <table class="tool" data-testid="topics-table">
                <thead><tr><th>{ "Topic" }</th><th>{ "Partition" }</th><th>{ "Leader" }</th><th>{ "Replicas" }</th><th>{ "Isr" }</th><th></th></tr></thead>
                <tbody>
                    { for topics.iter().map(|row| html! {
                        <tr class={classes!(row.under_replicated.then_some("under-replicated"), row.offline.then_some("offline"))}>
                            <td>{ &row.topic }</td>
                            <td>{ row.partition }</td>
                            <td data-testid={format!("leader-{}", row.name)}>{ &row.leader }</td>
                            <td>{ &row.replicas }</td>
                            <td data-testid={format!("isr-{}", row.name)}>{ &row.isr }</td>
                            <td>{ if row.offline { "offline" } else if row.under_replicated { "under-replicated" } else { "" } }</td>
                        </tr>
                    }) }
                </tbody>
            </table>
            <h3><code>{ "kafka-consumer-groups --describe --group billing" }</code></h3>
            <table class="tool" data-testid="groups-table">
                <thead><tr><th>{ "GROUP" }</th><th>{ "TOPIC" }</th><th>{ "PARTITION" }</th><th>{ "CURRENT-OFFSET" }</th><th>{ "LOG-END-OFFSET" }</th><th>{ "LAG" }</th><th>{ "CONSUMER-ID" }</th></tr></thead>
                <tbody>
                    { for groups.iter().map(|row| html! {
                        <tr>
                            <td>{ &row.group }</td><td>{ &row.topic }</td><td>{ row.partition }</td>
                            <td>{ &row.current_offset }</td><td>{ row.log_end_offset }</td><td>{ &row.lag }</td>
                            <td>{ &row.consumer_id }</td>
                        </tr>
                    }) }
                </tbody>
            </table>
            { if groups.is_empty() { html! { <p class="muted">{ "No member owns a partition yet (the group is still forming: run a few seconds)." }</p> } } else { html! {} } }
            <h3><code>{ "kafka-metadata-quorum describe --status" }</code></h3>
            <pre class="tool" data-testid="quorum-status">{ format!(
                "LeaderId:       {}\nLeaderEpoch:    {}\nHighWatermark:  {}\nCurrentVoters:  [{}]\nDown:           {}",
                quorum.leader_id, quorum.leader_epoch, quorum.high_watermark, quorum.voters, quorum.down
            ) }</pre>
        </section>
    }
}
