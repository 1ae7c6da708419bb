//! The live cluster: run controls, knobs, the architecture map with its
//! inspector, and panels shaped like Kafka's command-line tools, redrawn
//! from the engine's view after every action. The simulation lives in this
//! component; everything drawn is derived from its [`ClusterView`] by
//! [`cluster_model`](crate::cluster_model) and [`map_model`](crate::map_model).
//!
//! [`ClusterView`]: kafkascope_engine::sim::view::ClusterView

use std::cell::RefCell;
use std::rc::Rc;

use kafkascope_engine::sim::trace::TraceEvent;
use kafkascope_engine::sim::types::NodeId;
use kafkascope_engine::sim::view::{ConsumerPhase, ProcessStatus};
use wasm_bindgen::JsCast;
use yew::prelude::*;

use crate::export::page_query;

use crate::cluster_model::{
    config_for_query, describe_config, describe_groups, describe_quorum, describe_topics, is_notable,
    min_insync_warning, reached_speed, speed_label, ASSIGNORS, DEFAULT_SEED,
};
use crate::export::MermaidExport;
use crate::host_api::{self, HostCommand, HostEvent};
use crate::knob::KnobInput;
use crate::map::ClusterMap;
use crate::map_model::{inspect, layout_fit, mermaid, Fit};
use crate::map_tools::{
    Comparison, GroupsTool, LagCharts, LedgerTool, QuorumTool, TopicsTool, LAG_CHART_H, LAG_CHART_W,
};
use crate::selection::Selection;
use crate::session::{Action, Knob, Session, SetupField};
use crate::tabs::{Tab, TabPanel, Tabs};
use kafkascope_engine::sim::config::{OffsetReset, StorageSetting};

/// Real milliseconds between two play ticks: one tick per frame at 60
/// frames a second, so messages move smoothly and each tick's work fits
/// in a frame.
const TICK_MS: u32 = 16;

/// Playback speeds: virtual milliseconds per real second, on a log scale.
const SPEEDS: [(u64, &str); 5] = [
    (10, "0.01×"),
    (100, "0.1×"),
    (1_000, "1×"),
    (10_000, "10×"),
    (100_000, "100×"),
];

/// Records per second each producer sends while playing.
const RATES: [u32; 5] = [0, 1, 5, 20, 100];

/// How many play ticks the tick-cost average covers.
const TICK_WINDOW: usize = 60;

fn now_ms() -> f64 {
    web_sys::window()
        .and_then(|window| window.performance())
        .map_or(0.0, |performance| performance.now())
}

/// Whether the page is as narrow as a phone (the steps then read as a
/// list).
pub fn is_phone() -> bool {
    web_sys::window()
        .and_then(|window| window.match_media("(max-width: 700px)").ok().flatten())
        .is_some_and(|query| query.matches())
}

fn prefers_reduced_motion() -> bool {
    web_sys::window()
        .and_then(|window| window.match_media("(prefers-reduced-motion: reduce)").ok().flatten())
        .is_some_and(|query| query.matches())
}

/// Real-time measures of play, kept between ticks (the state of the map
/// itself is the [`Session`]'s).
#[derive(Default)]
struct Clock {
    /// When the current tick started (real ms), until its render lands.
    tick_started: Option<f64>,
    /// Recent tick costs (tick plus render), real ms.
    costs: std::collections::VecDeque<f64>,
    /// The simulation's share of them.
    simulation_costs: std::collections::VecDeque<f64>,
    /// (real ms, simulated ms) after each tick over the last two seconds:
    /// the speed actually reached.
    progress: std::collections::VecDeque<(f64, u64)>,
}

/// One play tick: the session advances by the speed's share of a tick,
/// and the clock measures what that cost and the speed reached.
fn tick(session: &mut Session, clock: &mut Clock, speed: u64, rate: u32) {
    clock.tick_started = Some(now_ms());
    let started = now_ms();
    session.apply(Action::Tick {
        virtual_ms: speed as f64 * f64::from(TICK_MS) / 1_000.0,
        rate,
    });
    // Play, pause, a new speed and actions start the measure over.
    let finished = now_ms();
    clock.progress.push_back((finished, session.simulation().now()));
    // The last two seconds, but never fewer than two samples: on a device
    // so slow that one tick takes longer, the speed reached is still measured.
    while clock.progress.len() > 2 && clock.progress.front().is_some_and(|&(at, _)| finished - at > 2_000.0) {
        clock.progress.pop_front();
    }
    clock.simulation_costs.push_back(finished - started);
    if clock.simulation_costs.len() > TICK_WINDOW {
        clock.simulation_costs.pop_front();
    }
}

fn download_svg() {
    let Some(document) = web_sys::window().and_then(|window| window.document()) else {
        return;
    };
    let Ok(Some(svg)) = document.query_selector("[data-testid=\"map\"]") else {
        return;
    };
    download("kafkascope-map.svg", "image/svg+xml", &svg.outer_html());
}

/// Saves `text` as a file named `name` (the browser's download).
fn download(name: &str, mime: &str, text: &str) {
    let Some(document) = web_sys::window().and_then(|window| window.document()) else {
        return;
    };
    let parts = js_sys::Array::of1(&wasm_bindgen::JsValue::from_str(text));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type(mime);
    let Ok(blob) = web_sys::Blob::new_with_str_sequence_and_options(&parts, &options) else {
        return;
    };
    let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) else {
        return;
    };
    if let Ok(link) = document.create_element("a") {
        if let Ok(link) = link.dyn_into::<web_sys::HtmlAnchorElement>() {
            link.set_href(&url);
            link.set_download(name);
            link.click();
        }
    }
    let _ = web_sys::Url::revoke_object_url(&url);
}

/// The live cluster section.
#[function_component(ClusterPanel)]
pub fn cluster_panel() -> Html {
    // A run link (`?run=`) replays a shared run to its moment; one that
    // cannot open says why, over the default cluster.
    let link_problem = use_mut_ref(|| None::<String>);
    let restored_at = use_mut_ref(|| None::<(u64, u64)>);
    let session: Rc<RefCell<Session>> = {
        let link_problem = link_problem.clone();
        let restored_at = restored_at.clone();
        use_mut_ref(move || {
            let query = page_query();
            // `?seed=N` starts the map with that seed (a run link carries its own).
            let seed = match crate::view_model::seed_in_query(&query) {
                // A run link carries its own seed.
                _ if crate::share::run_in_query(&query).is_some() => DEFAULT_SEED,
                None => DEFAULT_SEED,
                Some(Ok(seed)) => seed,
                Some(Err(problem)) => {
                    *link_problem.borrow_mut() = Some(format!("{problem}; the map uses seed {DEFAULT_SEED}."));
                    DEFAULT_SEED
                }
            };
            match crate::share::run_in_query(&query).map(Session::from_link) {
                Some(Ok(session)) => {
                    *restored_at.borrow_mut() = Some((session.simulation().now(), session.run_hash()));
                    session
                }
                Some(Err(problem)) => {
                    *link_problem.borrow_mut() = Some(format!(
                        "This run link could not open: {problem}. The default cluster is shown instead."
                    ));
                    Session::new(config_for_query(&query), seed)
                }
                None => Session::new(config_for_query(&query), seed),
            }
        })
    };
    // The address of this moment, once asked for, with the run's fingerprint.
    let shared = use_state(|| None::<(String, u64, Option<bool>)>);
    let clock: Rc<RefCell<Clock>> = use_mut_ref(Clock::default);
    let last_lost = use_mut_ref(|| 0u64);
    let redraw = use_force_update();
    // The page opens with the cluster running (RaftScope does the same),
    // unless the URL says `play=0` or the reader prefers reduced motion.
    let playing = use_state(|| !page_query().contains("play=0") && !prefers_reduced_motion());
    let speed = use_state(|| SPEEDS[2].0);
    let rate = use_state(|| if page_query().contains("preset=bench") { 5 } else { 1 });
    let reduced_motion = use_state(prefers_reduced_motion);
    // The map is laid out for its box's width; Kafka's internal topics are
    // folded into a line per broker until the learner asks for them.
    let map_box = use_node_ref();
    let map_width = crate::map::use_map_width(map_box.clone());
    let internal_topics = use_state(|| false);
    // The side shows the inspector or the knobs; the tools under the map
    // are tabs too, so the view is the map, not a column of panels.
    let side_tab = use_state(|| SIDE_INSPECTOR);
    let tool_tab = use_state(|| TOOL_RECENT);
    // On a phone, whether the learner went from the selection's sheet to
    // the full inspector (the sheet then stays away until the next tap).
    let sheet_folded = use_state(|| false);

    // A render after a play tick closes that tick's cost sample.
    {
        let clock = clock.clone();
        use_effect(move || {
            let mut clock = clock.borrow_mut();
            if let Some(started) = clock.tick_started.take() {
                let cost = now_ms() - started;
                clock.costs.push_back(cost);
                if clock.costs.len() > TICK_WINDOW {
                    clock.costs.pop_front();
                }
            }
        });
    }

    // Every change goes through the session: one place that moves the
    // simulation and collects its trace.
    let dispatch: Rc<dyn Fn(Action)> = {
        let session = session.clone();
        let clock = clock.clone();
        let redraw = redraw.clone();
        Rc::new(move |action: Action| {
            let moves = !matches!(action, Action::Select(_));
            let knob = match &action {
                Action::Knob(knob, value) => Some((knob.name().to_string(), value.clone())),
                _ => None,
            };
            session.borrow_mut().apply(action);
            // The host page hears of each knob the run took.
            if let Some((knob, value)) = knob {
                if session.borrow().knob_error().is_none() {
                    host_api::bridge::emit(&HostEvent::KnobChanged { knob, value });
                }
            }
            if moves {
                clock.borrow_mut().progress.clear();
            }
            redraw.force_update();
        })
    };
    // The host page API (an embedding course page): play, pause, knobs,
    // brokers.
    {
        let dispatch = dispatch.clone();
        let session = session.clone();
        let playing = playing.clone();
        use_effect_with((), move |_| {
            let handler: host_api::bridge::Handler = Rc::new(move |command: &HostCommand| {
                let brokers = session.borrow().simulation().config().brokers;
                match command {
                    HostCommand::Play { .. } => playing.set(true),
                    HostCommand::Pause { .. } => playing.set(false),
                    HostCommand::SetKnob { knob, value } => {
                        let Some(knob) = Knob::from_name(knob) else {
                            let names: Vec<&str> = Knob::ALL.iter().map(|knob| knob.name()).collect();
                            return Err(format!(
                                "the map has no live knob {knob:?}; it has {}",
                                names.join(", ")
                            ));
                        };
                        dispatch(Action::Knob(knob, value.clone()));
                        if let Some(problem) = session.borrow().knob_error() {
                            return Err(problem.to_string());
                        }
                    }
                    HostCommand::KillBroker { broker } | HostCommand::RestartBroker { broker }
                        if !(1..=brokers).contains(broker) =>
                    {
                        return Err(format!("the map has brokers 1 to {brokers}, not {broker}"));
                    }
                    HostCommand::KillBroker { broker } => dispatch(Action::Kill(*broker)),
                    HostCommand::RestartBroker { broker } => dispatch(Action::Restart(*broker)),
                    other => return Err(format!("the map does not take {}", other.name())),
                }
                Ok(())
            });
            host_api::bridge::register(host_api::Section::Map, handler);
            host_api::bridge::install();
            || ()
        });
    }
    let act = {
        let dispatch = dispatch.clone();
        move |action: Action| {
            let dispatch = dispatch.clone();
            Callback::from(move |_: MouseEvent| dispatch(action.clone()))
        }
    };
    // While playing, advance virtual time every tick and redraw.
    {
        let session = session.clone();
        let redraw = redraw.clone();
        let clock = clock.clone();
        use_effect_with((*playing, *speed, *rate), move |&(playing, speed, rate)| {
            // Play, pause and a new speed start the measure of the speed reached over.
            clock.borrow_mut().progress.clear();
            let interval = playing.then(|| {
                gloo_timers::callback::Interval::new(TICK_MS, move || {
                    tick(&mut session.borrow_mut(), &mut clock.borrow_mut(), speed, rate);
                    redraw.force_update();
                })
            });
            move || drop(interval)
        });
    }
    // A lesson link that sets a knob (`?knob=acks:1#map`) changes the
    // address and says so (NAVIGATE_EVENT); one opened in a new tab sets
    // it when the map starts. The map stops playing, so the learner acts
    // next.
    {
        let dispatch = dispatch.clone();
        let playing = playing.clone();
        let side_tab = side_tab.setter();
        use_effect_with((), move |_| {
            let apply = move || {
                let query = page_query();
                if let Some((knob, value)) = crate::lesson_model::knob_in_query(&query) {
                    playing.set(false);
                    side_tab.set(SIDE_KNOBS);
                    dispatch(Action::Knob(knob, value));
                    // Done: the address no longer asks for it, so later
                    // navigation does not set it again.
                    if let Some(window) = web_sys::window() {
                        let hash = window.location().hash().unwrap_or_default();
                        let url = format!("{}{hash}", crate::lesson_model::without_knob(&query));
                        if let Ok(history) = window.history() {
                            let _ = history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&url));
                        }
                    }
                }
            };
            apply();
            let follow = wasm_bindgen::closure::Closure::<dyn Fn()>::new(apply);
            let window = web_sys::window();
            if let Some(window) = &window {
                let _ = window.add_event_listener_with_callback(
                    crate::sequence_model::NAVIGATE_EVENT,
                    wasm_bindgen::JsCast::unchecked_ref(follow.as_ref()),
                );
            }
            move || {
                if let Some(window) = &window {
                    let _ = window.remove_event_listener_with_callback(
                        crate::sequence_model::NAVIGATE_EVENT,
                        wasm_bindgen::JsCast::unchecked_ref(follow.as_ref()),
                    );
                }
            }
        });
    }
    // A long skip runs one slice per timer turn, so the page draws its
    // progress in between and the Stop button stays clickable.
    {
        let dispatch = dispatch.clone();
        let slice_scheduled = use_mut_ref(|| false);
        let skipping = session.borrow().skipping().is_some();
        use_effect(move || {
            if skipping && !*slice_scheduled.borrow() {
                *slice_scheduled.borrow_mut() = true;
                let slice_scheduled = slice_scheduled.clone();
                gloo_timers::callback::Timeout::new(0, move || {
                    *slice_scheduled.borrow_mut() = false;
                    dispatch(Action::SkipSlice);
                })
                .forget();
            }
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
    let on_rate = {
        let rate = rate.clone();
        Callback::from(move |event: Event| {
            let value = event.target_unchecked_into::<web_sys::HtmlSelectElement>().value();
            if let Ok(chosen) = value.parse() {
                rate.set(chosen);
            }
        })
    };
    let on_reset = act(Action::Reset);
    let on_apply_setup = {
        let dispatch = dispatch.clone();
        Callback::from(move |event: SubmitEvent| {
            event.prevent_default();
            dispatch(Action::ApplySetup);
        })
    };
    // A shape knob edits the pending setup (applied on submit).
    let setup_field = |field: SetupField| {
        let dispatch = dispatch.clone();
        Callback::from(move |event: Event| {
            let text = event.target_unchecked_into::<web_sys::HtmlInputElement>().value();
            dispatch(Action::Setup(field, text));
        })
    };
    let on_assignor = {
        let dispatch = dispatch.clone();
        Callback::from(move |event: Event| {
            let value = event.target_unchecked_into::<web_sys::HtmlSelectElement>().value();
            dispatch(Action::Assignor(value));
        })
    };
    // A live knob becomes an input at this moment of the run.
    let live = |knob: Knob| {
        let dispatch = dispatch.clone();
        Callback::from(move |event: Event| {
            let target = event.target_unchecked_into::<web_sys::HtmlInputElement>();
            let text = if matches!(knob, Knob::UncleanLeaderElection | Knob::EnableIdempotence) {
                target.checked().to_string()
            } else {
                target.value()
            };
            dispatch(Action::Knob(knob, text));
        })
    };
    // Space plays or pauses and the right arrow steps, while the section
    // has focus (so typing elsewhere on the page is never taken).
    let on_keydown = {
        let playing = playing.clone();
        let dispatch = dispatch.clone();
        Callback::from(move |event: KeyboardEvent| {
            let in_control = event
                .target()
                .and_then(|target| target.dyn_into::<web_sys::Element>().ok())
                .is_some_and(|element| {
                    matches!(element.tag_name().as_str(), "BUTTON" | "SELECT" | "INPUT" | "TEXTAREA")
                        || element.get_attribute("role").as_deref() == Some("button")
                });
            match event.key().as_str() {
                " " if !in_control => {
                    event.prevent_default();
                    playing.set(!*playing);
                }
                "ArrowRight" if !in_control => {
                    event.prevent_default();
                    dispatch(Action::Step);
                }
                _ => {}
            }
        })
    };
    // Stable while the selection stays, so unchanged map nodes skip
    // re-rendering.
    let on_select = {
        let dispatch = dispatch.clone();
        let side_tab = side_tab.setter();
        let sheet_folded = sheet_folded.setter();
        use_callback((), move |selection: Selection, _| {
            side_tab.set(SIDE_INSPECTOR);
            sheet_folded.set(false);
            dispatch(Action::Select(selection))
        })
    };

    let current = session.borrow();
    let simulation_ref = current.simulation();
    let view = simulation_ref.view();
    let summary = simulation_ref.summary();
    // The host page hears when acknowledged records are lost.
    {
        let mut known = last_lost.borrow_mut();
        if summary.lost > *known {
            host_api::bridge::emit(&HostEvent::RecordLost {
                lost: summary.lost,
                newly: summary.lost - *known,
            });
        }
        *known = summary.lost;
    }
    let config = simulation_ref.config().clone();
    let selected = current.selected().cloned();
    let setup = current.setup().clone();
    let knob_error = current.knob_error().map(str::to_string);
    // A refused change redraws its control from the run's state.
    let refusals = current.refusals();
    // Each member's commit mode and handler kind (the inspector's controls).
    let member_settings: std::collections::BTreeMap<u32, (kafkascope_engine::sim::config::CommitMode, bool)> =
        simulation_ref
            .consumers()
            .iter()
            .map(|consumer| {
                (
                    consumer.id,
                    (consumer.config.commit_mode, consumer.config.idempotent_handler),
                )
            })
            .collect();
    let ledger = crate::cluster_model::ledger_rows(&simulation_ref.ledger_views());
    // A selected replica's latest records (its topic, its partition count
    // and the strip), where one key's records keep their order.
    let replica_records = match &selected {
        Some(Selection::Replica { broker, partition }) => view
            .partitions
            .iter()
            .find(|candidate| candidate.partition == *partition)
            .and_then(|registration| {
                let replica = view
                    .brokers
                    .iter()
                    .find(|candidate| candidate.id == *broker)?
                    .replicas
                    .iter()
                    .find(|replica| replica.partition == *partition)?;
                let from = crate::view_model::record_strip_from(replica.log_start_offset, replica.log_end_offset);
                let topic_partition = kafkascope_engine::groups::assignors::TopicPartition::new(
                    registration.topic.as_str(),
                    registration.index,
                );
                let records = simulation_ref.log_records(&topic_partition, Some(*broker), from).ok()?;
                let count = simulation_ref.topic_partition_count(&registration.topic);
                Some((
                    registration.topic.clone(),
                    count,
                    registration.internal,
                    crate::view_model::record_strip(&records),
                ))
            }),
        _ => None,
    };
    // Which consumers have a slow handler (the inspector offers to undo it).
    let slow_handlers: Vec<u32> = simulation_ref
        .consumers()
        .iter()
        .filter(|consumer| consumer.config.processing_ms_per_record > 0)
        .map(|consumer| consumer.id)
        .collect();
    let lag_charts: Vec<crate::cluster_model::LagChart> = current
        .lag()
        .groups()
        .map(|group| {
            crate::cluster_model::lag_chart_with_members(
                group,
                &current.lag().samples(group),
                &current.lag().member_samples(group),
                LAG_CHART_W,
                LAG_CHART_H,
            )
        })
        .collect();
    let comparison = current.comparison().cloned();
    let on_compare = {
        let dispatch = dispatch.clone();
        Callback::from(move |_: MouseEvent| dispatch(Action::Compare))
    };
    // What just happened: the latest state changes (no message traffic).
    let recent: Vec<String> = current
        .trace()
        .iter()
        .rev()
        .take(5_000)
        .filter(|event| is_notable(&event.kind))
        .take(12)
        .map(TraceEvent::line)
        .collect();
    let model = Rc::new(layout_fit(
        &view,
        view.time_ms as f64 + current.carry(),
        Fit {
            width: map_width,
            internal_topics: *internal_topics,
        },
    ));
    drop(current);
    let topics = describe_topics(&view);
    let groups = describe_groups(&view);
    let quorum = describe_quorum(&view);
    let inspection = selected
        .as_ref()
        .and_then(|selection| inspect(&view, &model, selection));
    let costs = &clock.borrow().costs;
    let tick_ms = if costs.is_empty() {
        0.0
    } else {
        costs.iter().sum::<f64>() / costs.len() as f64
    };
    let tick_samples = costs.len();
    let reached = if *playing {
        let progress = &clock.borrow().progress;
        progress
            .front()
            .zip(progress.back())
            .and_then(|(first, last)| reached_speed(&[*first, *last]))
    } else {
        None
    };
    let simulation_costs = &clock.borrow().simulation_costs;
    let simulation_ms = if simulation_costs.is_empty() {
        0.0
    } else {
        simulation_costs.iter().sum::<f64>() / simulation_costs.len() as f64
    };
    let acks = view
        .producers
        .first()
        .map_or("all".to_string(), |producer| producer.acks.to_string());
    let linger = view.producers.first().map_or(0, |producer| producer.linger_ms);
    let idempotent = view.producers.first().is_some_and(|producer| producer.idempotent);
    let min_insync = config.topics.first().map_or(1, |topic| topic.min_insync_replicas);
    let storage = config.topics.first().map_or((0, 0, 0), |topic| {
        (topic.retention_ms, topic.retention_bytes, topic.segment_bytes as i64)
    });
    let replication_factor = config.topics.first().map_or(1, |topic| topic.replication_factor);
    let cleanup = config
        .topics
        .first()
        .map_or(("delete".to_string(), 0.5, 0, 0), |topic| {
            (
                topic.cleanup_policy.to_string(),
                topic.min_cleanable_dirty_ratio.0,
                topic.min_compaction_lag_ms,
                topic.delete_retention_ms,
            )
        });
    let default_quota = config.quotas.iter().find(|quota| quota.client_id.is_none());
    let rate_text = |rate: Option<u64>| rate.map_or(String::new(), |rate| rate.to_string());
    let quota = (
        rate_text(default_quota.and_then(|quota| quota.producer_byte_rate)),
        rate_text(default_quota.and_then(|quota| quota.consumer_byte_rate)),
    );

    let phone = is_phone();
    // The phone sheet's few actions: what a learner does to a process.
    // Each names the process it acts on: a tap on a replica row selects
    // the row, but Kill kills its broker, and says so.
    let sheet_actions = selected.as_ref().and_then(Selection::node).map(|node| {
        let button = |verb: &'static str, tail: &'static str, test: &str, action: Action| {
            html! { <button type="button" data-testid={format!("sheet-{test}")} onclick={act(action)}>{ format!("{verb} {node}{tail}") }</button> }
        };
        match node {
            NodeId::Broker(id) => {
                let dead = view.brokers.iter().any(|broker| broker.id == id && broker.status == ProcessStatus::Dead);
                if dead {
                    button("Restart", "", "restart", Action::Restart(id))
                } else {
                    html! { <>{ button("Kill", "", "kill", Action::Kill(id)) }{ button("Pause", " for 5 s (GC)", "pause", Action::Pause(id)) }</> }
                }
            }
            NodeId::Controller(id) => {
                let alive = view.controllers.iter().any(|controller| controller.id == id && controller.alive);
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
    });
    // The inspector's actions for the selection.
    let actions = selected.as_ref().map(|selection| {
        let button = |label: &'static str, test: String, action: Action| {
            html! {
                <button type="button" data-testid={test} onclick={act(action)}>{ label }</button>
            }
        };
        // A replica's actions are its broker's.
        let node = selection.node().map(|node| node.to_string()).unwrap_or_else(|| selection.key());
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
                    { button("Pause 5 s (GC)", format!("inspector-pause-{node}"), Action::Pause(id)) }
                    { button("Slow down +200 ms", format!("inspector-slow-{node}"), Action::Slow(id, 200)) }
                    { button("Normal speed", format!("inspector-unslow-{node}"), Action::Slow(id, 0)) }
                    { match &replica_records {
                        Some((topic, count, false, _)) => html! {
                            <button type="button" data-testid="inspector-add-partition"
                                title="kafka-topics --alter --partitions: the active controller adds one; producers and consumers see it at their next metadata refresh (metadata.max.age.ms, 5 minutes: use Skip 10 min)"
                                onclick={act(Action::AddPartitions(topic.clone()))}>
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
                    let handler = if slow_handlers.contains(&id) {
                        button("Fast handler again", format!("inspector-fast-{node}"), Action::HandlerMs(id, 0))
                    } else {
                        button(
                            "Slow handler (100 ms a record)",
                            format!("inspector-slow-{node}"),
                            Action::HandlerMs(id, 100),
                        )
                    };
                    let (mode, idempotent) = member_settings.get(&id).copied().unwrap_or_default();
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
                                dispatch(Action::OffsetReset(id, reset));
                            }
                        })
                    };
                    let on_mode = {
                        let dispatch = dispatch.clone();
                        Callback::from(move |event: Event| {
                            let value = event.target_unchecked_into::<web_sys::HtmlSelectElement>().value();
                            if let Some(mode) = crate::cluster_model::commit_mode(&value) {
                                dispatch(Action::CommitMode(id, mode));
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
    });
    let mermaid_source = {
        let model = model.clone();
        Callback::from(move |_: ()| mermaid(&model))
    };
    let copy_run_link = {
        let session = session.clone();
        let shared = shared.clone();
        Callback::from(move |_: MouseEvent| {
            let base = crate::export::page_base();
            let (url, hash) = {
                let session = session.borrow();
                (
                    crate::share::run_address(&base, &session.run_link()),
                    session.run_hash(),
                )
            };
            shared.set(Some((url.clone(), hash, None)));
            let shared = shared.clone();
            wasm_bindgen_futures::spawn_local(async move {
                let copied = crate::export::copy_to_clipboard(&url).await;
                shared.set(Some((url, hash, Some(copied))));
            });
        })
    };
    let toggle_motion = {
        let reduced_motion = reduced_motion.clone();
        Callback::from(move |_: MouseEvent| reduced_motion.set(!*reduced_motion))
    };

    let skipping = session.borrow().skipping();
    html! {
        <section id="map" class="card cluster wide" aria-labelledby="cluster-title" tabindex="0" onkeydown={on_keydown}
            data-testid="cluster" data-events={view.events.to_string()}
            data-tick-ms={format!("{tick_ms:.2}")} data-tick-samples={tick_samples.to_string()} data-simulation-ms={format!("{simulation_ms:.2}")}
            data-speed-reached={reached.map(|reached| format!("{reached:.0}"))}>
            <h2 id="cluster-title">{ "The map: a running cluster" }</h2>
            <p class="hint">
                { describe_config(&config) }
                { " Time is simulated: it moves when you play, run or step it" }
                <span class="keys">{ " (with this section focused: Space plays or pauses, → steps one event)" }</span>
                { ". Click anything on the map to inspect it." }
            </p>
            <div class="controls run-controls" role="toolbar" aria-label="run controls">
                <button type="button" data-testid="cluster-play" aria-pressed={playing.to_string()} onclick={toggle_play}>
                    { if *playing { "❚❚ Pause" } else { "▶ Play" } }
                </button>
                <label>{ "Speed " }
                    <select data-testid="cluster-speed" onchange={on_speed}>
                        { for SPEEDS.iter().map(|(value, label)| html! {
                            <option value={value.to_string()} selected={*speed == *value}>{ *label }</option>
                        }) }
                    </select>
                </label>
                <label title="Records a second each producer sends while playing">{ "Records/s " }
                    <select data-testid="cluster-rate" onchange={on_rate}>
                        { for RATES.iter().map(|value| html! {
                            <option value={value.to_string()} selected={*rate == *value}>{ value.to_string() }</option>
                        }) }
                    </select>
                </label>
                <button type="button" data-testid="cluster-step" title="Step one event: the next message delivered or timer fired" onclick={act(Action::Step)}>{ "Step" }</button>
                <button type="button" data-testid="cluster-run-1s" onclick={act(Action::Run(1_000))}>{ "Run 1 s" }</button>
                <button type="button" data-testid="cluster-run-10s" onclick={act(Action::Run(10_000))}>{ "Run 10 s" }</button>
                <button type="button" data-testid="cluster-skip-1m" title="Time travel: run a minute of the cluster at once (retention and compaction work in minutes and hours)" onclick={act(Action::Run(60_000))}>{ "Skip 1 min" }</button>
                <button type="button" data-testid="cluster-skip-10m" title="Time travel: run ten minutes of the cluster at once" onclick={act(Action::Run(600_000))}>{ "Skip 10 min" }</button>
                <button type="button" data-testid="cluster-skip-1h" disabled={skipping.is_some()} title="Time travel: run an hour of the cluster, a minute at a time, with its progress shown (every event still runs: the cluster is never idle)" onclick={act(Action::Skip(3_600_000))}>{ "Skip 1 h" }</button>
                <button type="button" data-testid="cluster-produce" title="Produce 10 records per producer now" onclick={act(Action::Produce)}>{ "Produce 10" }</button>
                <button type="button" data-testid="cluster-reset" onclick={on_reset}>{ "Reset" }</button>
                <button type="button" data-testid="copy-run-link" title="A link that opens this cluster at this moment: the same configuration, seed and every input so far, replayed" onclick={copy_run_link}>{ "Copy link" }</button>
                // A box of its own size: what changes while playing (the
                // clock, the speed reached, an hour's skip) never moves
                // the buttons.
                <span class="run-status">
                    <span class="clock" data-testid="cluster-time">{ format!("t = {} ms", view.time_ms) }</span>
                    { match skipping {
                        Some((done, total)) => html! {
                            <span class="skip-progress" role="status" data-testid="skip-progress">
                                <progress max={total.to_string()} value={done.to_string()} aria-label="time skipped" />
                                { format!(" skipped {} of {} min ", done / 60_000, total / 60_000) }
                                <button type="button" data-testid="cluster-skip-stop" onclick={act(Action::StopSkip)}>{ "Stop" }</button>
                            </span>
                        },
                        None => match reached {
                            // The speed asked for is not always the speed
                            // reached: when the page cannot keep up, it says so.
                            Some(reached) if reached < 0.9 * *speed as f64 => html! {
                                <span class="muted" role="status" data-testid="speed-reached">
                                    { format!("reaching {} (this device cannot keep up)", speed_label(reached)) }
                                </span>
                            },
                            _ => html! {},
                        },
                    } }
                </span>
            </div>
            { match link_problem.borrow().as_ref() {
                Some(problem) => html! { <p class="error" role="alert" data-testid="run-link-problem">{ problem }</p> },
                None => html! {},
            } }
            { match *restored_at.borrow() {
                Some((at, hash)) => html! {
                    <p class="muted" role="status" data-testid="run-restored" data-run-hash={format!("{hash:016x}")}>
                        { format!("Opened a shared run at t = {at} ms: the same cluster, seed and inputs, replayed (run fingerprint {hash:016x}).") }
                    </p>
                },
                None => html! {},
            } }
            { match &*shared {
                Some((url, hash, copied)) => html! {
                    <div class="run-share" data-testid="run-share" data-run-hash={format!("{hash:016x}")}>
                        <label>{ "Link to this moment " }
                            <input type="text" readonly=true data-testid="run-link" value={url.clone()} />
                        </label>
                        <span class="muted" role="status">{ match copied {
                            Some(true) => format!("Copied. Run fingerprint {hash:016x}."),
                            Some(false) => format!("Copying is not allowed here: select the link and copy it. Run fingerprint {hash:016x}."),
                            None => String::new(),
                        } }</span>
                    </div>
                },
                None => html! {},
            } }
            <p class="muted" data-testid="cluster-summary">
                { format!(
                    "produced {}, acknowledged {}, failed {}, lost {}, leader elections {}, invariant violations {}",
                    summary.produced, summary.acknowledged, summary.failed, summary.lost, summary.leader_elections, summary.invariant_violations
                ) }
            </p>
            <div class="map-layout">
                <div class="map-frame">
                    <div class="map-scroll" ref={map_box}><ClusterMap model={model.clone()} selected={selected.clone()} on_select={on_select.clone()} reduced_motion={*reduced_motion}
                        on_expand_internal={{ let internal_topics = internal_topics.clone(); Callback::from(move |()| internal_topics.set(true)) }} /></div>
                    <p class="legend muted">
                        { "L leader · F follower · ISR in sync · OSR out of sync · bar = log end offset, | = high watermark (numbers: HW/LEO), ¦ = last stable offset, dashed stretch = deleted by retention, dark tick = compacted up to · dots = messages in flight (hollow: responses) · a member's @N = its committed offset" }
                    </p>
                    <div class="controls" role="toolbar" aria-label="export and display">
                        <MermaidExport label="Mermaid flowchart" description="the topology as a Mermaid flowchart"
                            ids={(AttrValue::from("export-mermaid"), AttrValue::from("mermaid-text"), AttrValue::from("copy-mermaid"))}
                            text={mermaid_source} />
                        <button type="button" data-testid="export-svg" onclick={Callback::from(|_: MouseEvent| download_svg())}>{ "Download the map (SVG)" }</button>
                        <button type="button" data-testid="export-scenario" title="This run as a scenario file: its cluster, seed and every input so far, to open in Stories or run with kafkascope run"
                            onclick={{
                                let session = session.clone();
                                Callback::from(move |_: MouseEvent| download("kafkascope-run.json", "application/json", &session.borrow().scenario_json()))
                            }}>{ "Download the run (scenario file)" }</button>
                        <button type="button" data-testid="export-trace" title="The latest trace events the page keeps, as JSON"
                            onclick={{
                                let session = session.clone();
                                Callback::from(move |_: MouseEvent| download("kafkascope-trace.json", "application/json", &session.borrow().trace_json()))
                            }}>{ "Download the trace (JSON)" }</button>
                        <button type="button" data-testid="toggle-internal" aria-pressed={internal_topics.to_string()}
                            title="Draw every replica of __consumer_offsets and __transaction_state, the topics Kafka keeps for itself"
                            onclick={{ let internal_topics = internal_topics.clone(); Callback::from(move |_: MouseEvent| internal_topics.set(!*internal_topics)) }}>{ "Show internal topics" }</button>
                        <button type="button" data-testid="toggle-motion" aria-pressed={reduced_motion.to_string()} onclick={toggle_motion}>{ "Reduce motion" }</button>
                    </div>

                </div>
                { match (&inspection, phone) {
                    // On a phone the inspector is far below the map: a tap
                    // shows the selection's summary at the foot of the
                    // screen, with its actions and a way to the rest.
                    (Some(inspection), true) if !*sheet_folded => html! {
                        <div class="selection-sheet" data-testid="selection-sheet" role="region" aria-label={format!("selected: {}", inspection.title)}>
                            <div class="sheet-head">
                                <strong data-testid="sheet-title">{ &inspection.title }</strong>
                                <button type="button" data-testid="sheet-close" aria-label="close the summary" onclick={{
                                    let on_select = on_select.clone();
                                    let selected = selected.clone();
                                    Callback::from(move |_: MouseEvent| if let Some(selection) = selected.clone() { on_select.emit(selection) })
                                }}>{ "✕" }</button>
                            </div>
                            <dl class="sheet-facts">
                                { for inspection.facts.iter().take(3).map(|(name, value)| html! { <><dt>{ name }</dt><dd>{ value }</dd></> }) }
                            </dl>
                            <div class="controls" role="toolbar" aria-label="actions">{ sheet_actions.clone().unwrap_or_default() }</div>
                            <a href="#inspector-full" data-testid="sheet-more" onclick={{
                                let sheet_folded = sheet_folded.clone();
                                let side_tab = side_tab.clone();
                                Callback::from(move |event: MouseEvent| {
                                event.prevent_default();
                                // The sheet goes: the full inspector is what the learner asked for.
                                sheet_folded.set(true);
                                side_tab.set(SIDE_INSPECTOR);
                                if let Some(element) = web_sys::window().and_then(|window| window.document()).and_then(|document| document.get_element_by_id("inspector-full")) {
                                    element.scroll_into_view();
                                }
                            })}}>{ "Everything about it ↓" }</a>
                        </div>
                    },
                    _ => html! {},
                } }
                <aside class="side" aria-label="inspector and knobs">
                    <Tabs label="inspector and knobs" tabs={vec![
                        Tab { id: SIDE_INSPECTOR, label: "Inspector".into() },
                        Tab { id: SIDE_KNOBS, label: "Knobs".into() },
                    ]} selected={*side_tab} on_select={{ let side_tab = side_tab.setter(); Callback::from(move |id| side_tab.set(id)) }} />
                    <TabPanel id={SIDE_INSPECTOR} selected={*side_tab == SIDE_INSPECTOR}>
                    <div class="inspector" id="inspector-full" data-testid="inspector" aria-live="polite">
                        { match &inspection {
                            Some(inspection) => {
                                // Glossary terms, marked at their first use in the inspector.
                                let seen = std::cell::RefCell::new(std::collections::BTreeSet::new());
                                let gloss = |text: &str| crate::lesson::glossed(text, &mut seen.borrow_mut());
                                html! { <>
                                <h4 data-testid="inspector-title">{ &inspection.title }</h4>
                                // What a learner does comes first: Kill, Restart, Pause.
                                <div class="controls" role="toolbar" aria-label="actions" data-testid="inspector-actions">{ actions.unwrap_or_default() }</div>
                                <p class="why">{ gloss(&inspection.why) }</p>
                                <dl data-testid="inspector-facts">
                                    { for inspection.facts.iter().map(|(name, value)| html! { <><dt>{ gloss(name) }</dt><dd>{ value }</dd></> }) }
                                </dl>
                                { if inspection.messages.is_empty() { html! {} } else { html! {
                                    <ul class="messages-now" data-testid="inspector-messages" tabindex="0" aria-label="messages in flight">
                                        { for inspection.messages.iter().map(|line| html! { <li>{ line }</li> }) }
                                    </ul>
                                } } }
                                { if inspection.files.is_empty() { html! {} } else { html! {
                                    <details class="files" data-testid="inspector-files" open=true>
                                        <summary>{ "Files on disk" }</summary>
                                        <ul>
                                            { for inspection.files.iter().map(|(name, size, holds)| html! {
                                                <li><code>{ name }</code>{ if size.is_empty() { html! {} } else { html! { <span class="muted">{ format!(" {size} · {holds}") }</span> } } }</li>
                                            }) }
                                        </ul>
                                    </details>
                                } } }
                                { match &replica_records {
                                    Some((_, _, _, strip)) if !strip.is_empty() => html! {
                                        <details class="record-strip" data-testid="inspector-records" open=true>
                                            <summary>{ "Latest records, oldest first" }</summary>
                                            <p class="muted">{ "One colour per key. A key's records stay in the order they were written within its partition; records in different partitions have no order between them. Dashed: above the high watermark, not yet readable." }</p>
                                            <ol>
                                                { for strip.iter().map(|chip| html! {
                                                    <li class={classes!("record-chip", format!("hue-{}", chip.hue), (!chip.committed).then_some("uncommitted"), chip.tombstone.then_some("tombstone"))}
                                                        data-offset={chip.offset.to_string()} data-key={chip.key.clone().unwrap_or_default()}
                                                        title={format!("offset {}{}", chip.offset, if chip.tombstone { " (tombstone: null value)" } else { "" })}>
                                                        <span class="record-offset">{ chip.offset }</span>
                                                        <span class="record-key">{ chip.key.clone().unwrap_or_else(|| "(no key)".into()) }</span>
                                                    </li>
                                                }) }
                                            </ol>
                                        </details>
                                    },
                                    _ => html! {},
                                } }
                                { if inspection.lookup.is_empty() { html! {} } else { html! {
                                    <details class="lookup" data-testid="inspector-lookup">
                                        <summary>{ "How a read finds an offset" }</summary>
                                        <ol>{ for inspection.lookup.iter().map(|step| html! { <li>{ step }</li> }) }</ol>
                                    </details>
                                } } }
                            </> }
                            }
                            None => html! { <p class="muted">{ "Select a broker, a replica row, a controller, the producer, a group, a member or an edge." }</p> },
                        } }
                    </div>
                    </TabPanel>
                    <TabPanel id={SIDE_KNOBS} selected={*side_tab == SIDE_KNOBS}>
                    <form class="knobs" data-testid="knobs" novalidate=true onsubmit={on_apply_setup}>
                        <fieldset>
                            <legend>{ "Live: each change is an input at this moment of the run" }</legend>
                            <fieldset class="knob-group" data-testid="knobs-producer">
                                <legend>{ "Producer" }</legend>
                                <label>{ "acks " }
                                    <select key={format!("acks-{refusals}")} data-testid="knob-acks" onchange={live(Knob::Acks)}>
                                        { for ["0", "1", "all"].iter().map(|value| html! { <option value={*value} selected={acks == *value}>{ *value }</option> }) }
                                    </select>
                                </label>
                                <label>{ "linger.ms " }
                                    <KnobInput live=true testid="knob-linger" value={linger.to_string()} onchange={live(Knob::LingerMs)} />
                                </label>
                                <label>
                                    <input key={format!("idempotence-{refusals}")} type="checkbox" data-testid="knob-idempotence" checked={idempotent} onchange={live(Knob::EnableIdempotence)} />
                                    { " enable.idempotence" }
                                </label>
                                <p class="muted hint">{ "Kafka sets it when a producer is created; here it switches between sends, and the producer gets a new producer id. It needs acks=all." }</p>
                            </fieldset>
                            <fieldset class="knob-group" data-testid="knobs-topic">
                                <legend>{ "Topic" }</legend>
                                <label>{ "min.insync.replicas " }
                                    <KnobInput live=true testid="knob-min-insync" value={min_insync.to_string()} onchange={live(Knob::MinInsyncReplicas)} />
                                </label>
                                { match min_insync_warning(min_insync, replication_factor) {
                                    Some(warning) => html! { <p class="warning" role="status" data-testid="knob-min-insync-warning">{ warning }</p> },
                                    None => html! {},
                                } }
                                <label>{ "retention.ms " }
                                    <KnobInput live=true testid="knob-retention-ms" value={storage.0.to_string()} onchange={live(Knob::Storage(StorageSetting::RetentionMs))} />
                                </label>
                                <label>{ "retention.bytes " }
                                    <KnobInput live=true testid="knob-retention-bytes" value={storage.1.to_string()} onchange={live(Knob::Storage(StorageSetting::RetentionBytes))} />
                                </label>
                                <label>{ "segment.bytes " }
                                    <KnobInput live=true testid="knob-segment-bytes" value={storage.2.to_string()} onchange={live(Knob::Storage(StorageSetting::SegmentBytes))} />
                                </label>
                                <p class="muted hint">{ "Topic storage (kafka-configs --alter on every topic): retention deletes closed segments older than retention.ms, or the oldest while a log is over retention.bytes, at each broker's retention check (every log.retention.check.interval.ms, 5 min by default). -1 means no limit." }</p>
                                <label>{ "cleanup.policy " }
                                    <select key={format!("cleanup-{refusals}")} data-testid="knob-cleanup-policy" onchange={live(Knob::CleanupPolicy)}>
                                        { for ["delete", "compact", "compact,delete"].iter().map(|value| html! { <option value={*value} selected={cleanup.0 == *value}>{ *value }</option> }) }
                                    </select>
                                </label>
                                <label>{ "min.cleanable.dirty.ratio " }
                                    <KnobInput live=true testid="knob-dirty-ratio" value={cleanup.1.to_string()} onchange={live(Knob::MinCleanableDirtyRatio)} />
                                </label>
                                <label>{ "min.compaction.lag.ms " }
                                    <KnobInput live=true testid="knob-compaction-lag" value={cleanup.2.to_string()} onchange={live(Knob::Storage(StorageSetting::MinCompactionLagMs))} />
                                </label>
                                <label>{ "delete.retention.ms " }
                                    <KnobInput live=true testid="knob-delete-retention" value={cleanup.3.to_string()} onchange={live(Knob::Storage(StorageSetting::DeleteRetentionMs))} />
                                </label>
                                <p class="muted hint">{ format!(
                                    "Compaction: each broker's cleaner (every log.cleaner.backoff.ms, {} s here) cleans a compacted log once its dirty part is over min.cleanable.dirty.ratio and older than min.compaction.lag.ms, keeping the latest record of each key; a tombstone stays delete.retention.ms after the first cleaning that saw it. The active segment is never cleaned.",
                                    config.log_cleaner_backoff_ms / 1_000
                                ) }</p>
                            </fieldset>
                            <fieldset class="knob-group" data-testid="knobs-quota">
                                <legend>{ "Client quotas (default, every client id)" }</legend>
                                <label>{ "producer_byte_rate " }
                                    <KnobInput live=true testid="knob-producer-byte-rate" value={quota.0.clone()} onchange={live(Knob::ProducerByteRate)} />
                                </label>
                                <label>{ "consumer_byte_rate " }
                                    <KnobInput live=true testid="knob-consumer-byte-rate" value={quota.1.clone()} onchange={live(Knob::ConsumerByteRate)} />
                                </label>
                                <p class="muted hint">{ "Bytes a second per broker (kafka-configs --alter --entity-type clients --entity-default); empty: no quota. A client over it gets throttle_time_ms in its answers (a fetch answer comes back empty) and the broker mutes its connection for that long." }</p>
                            </fieldset>
                            <fieldset class="knob-group" data-testid="knobs-broker">
                                <legend>{ "Broker" }</legend>
                                <label>
                                    <input type="checkbox" data-testid="knob-unclean" checked={config.unclean_leader_election_enable} onchange={live(Knob::UncleanLeaderElection)} />
                                    { " unclean.leader.election.enable" }
                                </label>
                                <p class="muted hint">{ format!(
                                    "With it on, a partition whose leader is fenced gets an unclean leader at once; one already offline waits for the controller's periodic pass (unclean.leader.election.interval.ms, {} s).",
                                    config.unclean_leader_election_interval_ms / 1_000
                                ) }</p>
                                <label>{ "replica.lag.time.max.ms " }
                                    <KnobInput live=true testid="knob-lag" value={config.replica_lag_time_max_ms.to_string()} onchange={live(Knob::ReplicaLagTimeMaxMs)} />
                                </label>
                            </fieldset>
                            <fieldset class="knob-group" data-testid="knobs-consumer">
                                <legend>{ "Consumer" }</legend>
                                <p class="muted hint">{ "Each member has its own: select it on the map (commit mode, processing time, crash, pause)." }</p>
                            </fieldset>
                        </fieldset>
                        <fieldset>
                            <legend>{ "Shape: these start a new run" }</legend>
                            <label>{ "brokers " }<KnobInput testid="knob-brokers" value={setup.brokers.to_string()} onchange={setup_field(SetupField::Brokers)} /></label>
                            <label>{ "partitions " }<KnobInput testid="knob-partitions" value={setup.partitions.to_string()} onchange={setup_field(SetupField::Partitions)} /></label>
                            <label>{ "replication factor " }<KnobInput testid="knob-rf" value={setup.replication_factor.to_string()} onchange={setup_field(SetupField::ReplicationFactor)} /></label>
                            <label>{ "assignor " }
                                <select data-testid="knob-assignor" onchange={on_assignor}>
                                    { for ASSIGNORS.iter().map(|(value, label)| html! { <option value={*value} selected={setup.assignor == *value}>{ *label }</option> }) }
                                </select>
                            </label>
                            <label>{ "billing consumers " }<KnobInput testid="knob-billing" value={setup.billing.to_string()} onchange={setup_field(SetupField::BillingConsumers)} /></label>
                            <label>{ "search consumers " }<KnobInput testid="knob-search" value={setup.search.to_string()} onchange={setup_field(SetupField::SearchConsumers)} /></label>
                            <label>{ "seed " }<KnobInput testid="knob-seed" value={setup.seed.to_string()} onchange={setup_field(SetupField::Seed)} /></label>
                            <button type="submit" data-testid="knob-apply">{ "Start a new run with these" }</button>
                        </fieldset>
                        { if let Some(message) = &knob_error { html! { <p class="error" role="alert" data-testid="knob-error">{ message }</p> } } else { html! {} } }
                    </form>
                    </TabPanel>
                </aside>
                <div class="tools">
                    <Tabs label="tools" tabs={tool_tabs()} selected={*tool_tab}
                        on_select={{ let tool_tab = tool_tab.setter(); Callback::from(move |id| tool_tab.set(id)) }} />
                    <TabPanel id={TOOL_RECENT} selected={*tool_tab == TOOL_RECENT} class="recent">
                    { if recent.is_empty() { html! { <p class="muted">{ "Nothing yet beyond routine traffic: kill a broker, turn a knob or add a consumer." }</p> } } else { html! {
                        <ol class="recent-events" data-testid="recent-events" reversed=true tabindex="0" aria-label="what just happened, newest first">
                            { for recent.iter().map(|line| html! { <li>{ line }</li> }) }
                        </ol>
                    } } }
                    </TabPanel>
                    <TabPanel id={TOOL_LAG} selected={*tool_tab == TOOL_LAG}><LagCharts charts={lag_charts} /></TabPanel>
                    <TabPanel id={TOOL_TOPICS} selected={*tool_tab == TOOL_TOPICS}><TopicsTool {topics} /></TabPanel>
                    <TabPanel id={TOOL_GROUPS} selected={*tool_tab == TOOL_GROUPS}><GroupsTool {groups} /></TabPanel>
                    <TabPanel id={TOOL_LEDGER} selected={*tool_tab == TOOL_LEDGER}><LedgerTool {ledger} /></TabPanel>
                    <TabPanel id={TOOL_QUORUM} selected={*tool_tab == TOOL_QUORUM}><QuorumTool {quorum} /></TabPanel>
                    <TabPanel id={TOOL_COMPARE} selected={*tool_tab == TOOL_COMPARE}><Comparison runs={comparison} on_run={on_compare} /></TabPanel>
                </div>
            </div>
        </section>
    }
}

/// The side's tabs.
const SIDE_INSPECTOR: &str = "inspector";
const SIDE_KNOBS: &str = "knobs";
/// The tools' tabs.
const TOOL_RECENT: &str = "recent";
const TOOL_LAG: &str = "lag";
const TOOL_TOPICS: &str = "topics";
const TOOL_GROUPS: &str = "groups";
const TOOL_LEDGER: &str = "ledger";
const TOOL_QUORUM: &str = "quorum";
const TOOL_COMPARE: &str = "compare";

/// The tools under the map, each a tab: what just happened, then the
/// panels shaped like Kafka's tools.
fn tool_tabs() -> Vec<Tab> {
    [
        (TOOL_RECENT, "What just happened"),
        (TOOL_LAG, "Lag"),
        (TOOL_TOPICS, "kafka-topics"),
        (TOOL_GROUPS, "kafka-consumer-groups"),
        (TOOL_LEDGER, "Each record's fate"),
        (TOOL_QUORUM, "kafka-metadata-quorum"),
        (TOOL_COMPARE, "Compare protocols"),
    ]
    .into_iter()
    .map(|(id, label)| Tab {
        id,
        label: label.into(),
    })
    .collect()
}
