//! The live cluster: run controls, broker actions and panels shaped like
//! Kafka's command-line tools, redrawn from the engine's view after every
//! action. The simulation lives in this component; the panels read only
//! [`cluster_model`](crate::cluster_model) rows derived from its view.

use std::cell::RefCell;
use std::rc::Rc;

use kafkascope_engine::sim::config::{Input, ScheduledInput};
use kafkascope_engine::sim::Simulation;
use wasm_bindgen::JsCast;
use yew::prelude::*;

use kafkascope_engine::sim::config::ClusterConfig;

use crate::cluster_model::{
    config_for_query, default_config, describe_config, describe_groups, describe_quorum, describe_topics, DEFAULT_SEED,
};

/// The cluster the page's URL asks for (`?preset=bench` for the benchmark).
fn page_config() -> ClusterConfig {
    let query = web_sys::window()
        .and_then(|window| window.location().search().ok())
        .unwrap_or_default();
    config_for_query(&query)
}

fn fresh() -> Simulation {
    // Both presets are checked by the native tests; fall back to the
    // default rather than panic if that ever changed.
    Simulation::new(page_config(), DEFAULT_SEED)
        .or_else(|_| Simulation::new(default_config(), DEFAULT_SEED))
        .unwrap_or_else(|_| unreachable!("the default cluster is valid"))
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
        Action::Produce => {
            for producer in 0..simulation.config().producers.len() as u32 {
                input(
                    simulation,
                    Input::Produce {
                        producer,
                        key: None,
                        count: 10,
                        bytes: 100,
                    },
                );
            }
        }
        Action::Kill(broker) => input(simulation, Input::KillBroker { broker }),
        Action::Restart(broker) => input(simulation, Input::RestartBroker { broker }),
        Action::Reset => *simulation = fresh(),
    }
}

/// Real milliseconds between two ticks while playing.
const TICK_MS: u32 = 100;

/// Playback speeds: virtual milliseconds per real second, on a log scale.
const SPEEDS: [(u64, &str); 4] = [(100, "0.1×"), (1_000, "1×"), (10_000, "10×"), (100_000, "100×")];

/// The live cluster section.
#[function_component(ClusterPanel)]
pub fn cluster_panel() -> Html {
    let simulation: Rc<RefCell<Simulation>> = use_mut_ref(fresh);
    let redraw = use_force_update();
    let playing = use_state(|| false);
    let speed = use_state(|| SPEEDS[1].0);
    let act = {
        let simulation = simulation.clone();
        let redraw = redraw.clone();
        move |action: Action| {
            let simulation = simulation.clone();
            let redraw = redraw.clone();
            Callback::from(move |_: MouseEvent| {
                apply(&mut simulation.borrow_mut(), action);
                redraw.force_update();
            })
        }
    };
    // While playing, advance virtual time every tick and redraw.
    {
        let simulation = simulation.clone();
        let redraw = redraw.clone();
        use_effect_with((*playing, *speed), move |&(playing, speed)| {
            let interval = playing.then(|| {
                gloo_timers::callback::Interval::new(TICK_MS, move || {
                    apply(
                        &mut simulation.borrow_mut(),
                        Action::Run(speed * u64::from(TICK_MS) / 1_000),
                    );
                    redraw.force_update();
                })
            });
            move || drop(interval)
        });
    }
    let toggle_play = {
        let playing = playing.clone();
        Callback::from(move |_: MouseEvent| playing.set(!*playing))
    };
    let on_speed = {
        let speed = speed.clone();
        Callback::from(move |event: Event| {
            let value = event.target_unchecked_into::<web_sys::HtmlSelectElement>().value();
            if let Ok(chosen) = value.parse() {
                speed.set(chosen);
            }
        })
    };
    // Space plays or pauses and the right arrow steps, while the section
    // has focus (so typing elsewhere on the page is never taken).
    let on_keydown = {
        let playing = playing.clone();
        let simulation = simulation.clone();
        let redraw = redraw.clone();
        Callback::from(move |event: KeyboardEvent| {
            let in_control = event
                .target()
                .and_then(|target| target.dyn_into::<web_sys::Element>().ok())
                .is_some_and(|element| {
                    matches!(element.tag_name().as_str(), "BUTTON" | "SELECT" | "INPUT" | "TEXTAREA")
                });
            match event.key().as_str() {
                " " if !in_control => {
                    event.prevent_default();
                    playing.set(!*playing);
                }
                "ArrowRight" if !in_control => {
                    event.prevent_default();
                    apply(&mut simulation.borrow_mut(), Action::Step);
                    redraw.force_update();
                }
                _ => {}
            }
        })
    };
    let view = simulation.borrow().view();
    let summary = simulation.borrow().summary();
    let topics = describe_topics(&view);
    let groups = describe_groups(&view);
    let quorum = describe_quorum(&view);

    html! {
        <section class="card cluster" aria-labelledby="cluster-title" tabindex="0" onkeydown={on_keydown}
            data-testid="cluster" data-events={view.events.to_string()}>
            <h2 id="cluster-title">{ "A running cluster" }</h2>
            <p class="hint">
                { describe_config(simulation.borrow().config()) }
                { " Time is simulated: it moves when you play, run or step it (with this section focused: Space plays or pauses, → steps one event)." }
            </p>
            <div class="controls" role="toolbar" aria-label="run controls">
                <button type="button" data-testid="cluster-play" aria-pressed={playing.to_string()} onclick={toggle_play}>
                    { if *playing { "❚❚ Pause" } else { "▶ Play" } }
                </button>
                <label for="cluster-speed" class="visually-hidden">{ "Speed" }</label>
                <select id="cluster-speed" data-testid="cluster-speed" onchange={on_speed} aria-label="speed">
                    { for SPEEDS.iter().map(|(value, label)| html! {
                        <option value={value.to_string()} selected={*speed == *value}>{ *label }</option>
                    }) }
                </select>
                <button type="button" data-testid="cluster-step" onclick={act(Action::Step)}>{ "Step one event" }</button>
                <button type="button" data-testid="cluster-run-1s" onclick={act(Action::Run(1_000))}>{ "Run 1 s" }</button>
                <button type="button" data-testid="cluster-run-10s" onclick={act(Action::Run(10_000))}>{ "Run 10 s" }</button>
                <button type="button" data-testid="cluster-produce" onclick={act(Action::Produce)}>{ "Produce 10 records per producer" }</button>
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
            <h3><code>{ "kafka-topics --describe" }</code></h3>
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
            <h3><code>{ "kafka-consumer-groups --describe --all-groups" }</code></h3>
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
