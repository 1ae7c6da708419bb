//! The live cluster: run controls, knobs, the architecture map with its
//! inspector, and panels shaped like Kafka's command-line tools, redrawn
//! from the engine's view after every action. The simulation lives in this
//! component; everything drawn is derived from its [`ClusterView`] by
//! [`cluster_model`](crate::cluster_model) and [`map_model`](crate::map_model).
//!
//! [`ClusterView`]: kafkascope_engine::sim::view::ClusterView

use kafkascope_engine::sorting::Gather;
use std::cell::RefCell;
use std::rc::Rc;

use kafkascope_engine::sim::trace::TraceEvent;
use wasm_bindgen::JsCast;
use yew::prelude::*;

use crate::export::page_query;

use crate::cluster_model::{
    config_for_query, describe_config, describe_groups, describe_quorum, describe_topics, is_notable, reached_speed,
    DEFAULT_SEED,
};
use crate::host_api::{self, HostCommand, HostEvent};
use crate::knobs_form::{KnobValues, KnobsForm};
use crate::map::ClusterMap;
use crate::map_model::{inspect, layout_fit, mermaid, Fit};
use crate::map_tools::{
    Comparison, ExportTool, GroupsTool, LagCharts, LedgerTool, QuorumTool, TopicsTool, LAG_CHART_H, LAG_CHART_W,
};
use crate::run_toolbar::{RunToolbar, SPEEDS};
use crate::selection::Selection;
use crate::session::{Action, Knob, LinkOutcome, Session};
use crate::tabs::{Tab, TabPanel, Tabs};

/// Real milliseconds between two play ticks: one tick per frame at 60
/// frames a second, so messages move smoothly and each tick's work fits
/// in a frame.
const TICK_MS: u32 = 16;

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

/// Whether the selection's summary goes at the foot of the screen: on a
/// phone, and in an embedded map too narrow for the inspector beside it
/// (the inspector is then below the map, out of the frame).
fn wants_sheet() -> bool {
    let matches = |query: &str| {
        web_sys::window()
            .and_then(|window| window.match_media(query).ok().flatten())
            .is_some_and(|query| query.matches())
    };
    is_phone()
        || (matches!(
            crate::view_model::embed_mode(&crate::export::page_query()),
            Ok(Some(crate::view_model::Embed::Map))
        ) && matches("(max-width: 1099px)"))
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
/// and the clock measures what that cost and the speed reached. Nothing
/// plays (or is measured) while a run link replays; `false` then.
fn tick(session: &mut Session, clock: &mut Clock, speed: u64, rate: u32) -> bool {
    if session.replaying().is_some() {
        clock.progress.clear();
        return false;
    }
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
    true
}

fn download_svg() {
    let Some(document) = web_sys::window().and_then(|window| window.document()) else {
        return;
    };
    let Ok(Some(svg)) = document.query_selector("[data-testid=\"map\"]") else {
        return;
    };
    download(
        "kafkascope-map.svg",
        "image/svg+xml",
        &crate::map_model::svg_file(&svg.outer_html()),
    );
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
    let (session, link_problem) = use_map_session();
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

    use_tick_costs(clock.clone());
    let dispatch = session_dispatch(session.clone(), clock.clone(), redraw.clone());
    use_host_commands(dispatch.clone(), session.clone(), playing.clone());
    use_play_loop(session.clone(), clock.clone(), redraw, (*playing, *speed, *rate));
    use_knob_links(dispatch.clone(), playing.clone(), side_tab.setter());
    use_session_work(dispatch.clone(), &session, playing.clone());
    let toggle_play = {
        let playing = playing.clone();
        Callback::from(move |_: MouseEvent| playing.set(!*playing))
    };
    let on_keydown = map_keys(playing.clone(), dispatch.clone());
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
    let dispatch_callback = {
        let dispatch = dispatch.clone();
        Callback::from(move |action| dispatch(action))
    };

    use_selection_in_view(session.borrow().selected().map(Selection::key));
    let current = session.borrow();
    let simulation_ref = current.simulation();
    let view = simulation_ref.view();
    let summary = simulation_ref.summary();
    announce_losses(&last_lost, summary.lost);
    let config = simulation_ref.config().clone();
    let selected = current.selected().cloned();
    let setup = current.setup().clone();
    let knob_error = current.knob_error().map(str::to_string);
    // A refused change redraws its control from the run's state.
    let refusals = current.refusals();
    let replica_records = replica_records(simulation_ref, &view, selected.as_ref());
    let actions = selected.as_ref().map(|selection| {
        actions_for(
            simulation_ref,
            &view,
            selection,
            replica_records.as_ref(),
            &dispatch_callback,
        )
    });
    let tools = ToolData::of(&current, &view);
    let model = Rc::new(layout_fit(
        &view,
        view.time_ms as f64 + current.carry(),
        Fit {
            width: map_width,
            internal_topics: *internal_topics,
        },
    ));
    let skipping = current.skipping();
    let link = LinkNotice::of(&current, &link_problem.borrow());
    let chaos_line = current
        .chaos()
        .map(|chaos| chaos_notice_text(chaos, simulation_ref.now()));
    drop(current);
    let inspection = selected
        .as_ref()
        .and_then(|selection| inspect(&view, &model, selection));
    let (tick_ms, tick_samples, reached, simulation_ms) = clock.borrow().measures(*playing);
    // On a phone the inspector is far below the map: a tap shows the
    // selection's summary at the foot of the screen, with its actions
    // (what a learner does to a process) and a way to the rest.
    let sheet = match (&inspection, &selected) {
        (Some(inspection), Some(selection)) if wants_sheet() && !*sheet_folded => phone_sheet(
            inspection,
            selection,
            &view,
            &dispatch_callback,
            &on_select,
            &sheet_folded,
            &side_tab,
        ),
        _ => html! {},
    };
    let exports = ExportCallbacks::of(model.clone(), &session, &shared, &playing, view.time_ms);
    html! {
        <section id="map" class="card cluster wide" aria-labelledby="cluster-title" tabindex="0" onkeydown={on_keydown}
            data-testid="cluster" data-events={view.events.to_string()}
            data-tick-ms={format!("{tick_ms:.2}")} data-tick-samples={tick_samples.to_string()} data-simulation-ms={format!("{simulation_ms:.2}")}
            data-speed-reached={reached.map(|reached| format!("{reached:.0}"))}>
            <h2 id="cluster-title">{ "The map: a running cluster" }</h2>
            { map_hint(&config) }
            <RunToolbar playing={*playing} speed={*speed} rate={*rate} {skipping} {reached} time_ms={view.time_ms}
                dispatch={dispatch_callback.clone()}
                on_play={toggle_play} on_speed={{ let speed = speed.setter(); Callback::from(move |chosen| speed.set(chosen)) }}
                on_rate={{ let rate = rate.setter(); Callback::from(move |chosen| rate.set(chosen)) }} on_copy={copy_run_link(session.clone(), shared.clone())} />
            { run_notices(&link, (*shared).as_ref(), &dispatch_callback) }
            { chaos_notice(chaos_line, &tool_tab, &dispatch_callback) }
            { summary_line(&summary) }
            <div class="map-layout">
                <div class="map-frame">
                    <div class="map-scroll" ref={map_box}><ClusterMap model={model.clone()} selected={selected.clone()} on_select={on_select.clone()} reduced_motion={*reduced_motion}
                        on_expand_internal={{ let internal_topics = internal_topics.clone(); Callback::from(move |()| internal_topics.set(true)) }} /></div>
                    <p class="legend muted">{ MAP_LEGEND }</p>
                    { display_controls(&internal_topics, &reduced_motion) }
                </div>
                { sheet }
                { side_panel(&side_tab, crate::inspector::inspector_body(inspection.as_ref(), actions.unwrap_or_default(), match &replica_records {
                    Some((_, _, _, strip)) => strip.as_slice(),
                    None => &[],
                }), html! {
                    <KnobsForm values={KnobValues::of(&view, &config)} setup={setup.clone()} knob_error={knob_error.clone()} {refusals}
                        dispatch={dispatch_callback.clone()} />
                }) }
                { tool_panels(&tool_tab, tools, dispatch_callback.clone(), exports) }
            </div>
        </section>
    }
}

/// On a phone the inspector is far below the map: a tap shows the
/// selection's summary at the foot of the screen, with its actions (what a
/// learner does to a process) and a way to the rest.
fn phone_sheet(
    inspection: &crate::map_model::Inspection,
    selection: &Selection,
    view: &kafkascope_engine::sim::view::ClusterView,
    dispatch: &Callback<Action>,
    on_select: &Callback<Selection>,
    sheet_folded: &UseStateHandle<bool>,
    side_tab: &UseStateHandle<&'static str>,
) -> Html {
    let actions = selection
        .node()
        .map(|node| crate::map_actions::sheet_actions(view, node, dispatch));
    let on_close = {
        let on_select = on_select.clone();
        let selection = selection.clone();
        Callback::from(move |_: MouseEvent| on_select.emit(selection.clone()))
    };
    // The sheet goes: the full inspector is what the learner asked for.
    let on_more = {
        let sheet_folded = sheet_folded.clone();
        let side_tab = side_tab.clone();
        Callback::from(move |()| {
            sheet_folded.set(true);
            side_tab.set(SIDE_INSPECTOR);
        })
    };
    crate::inspector::selection_sheet(inspection, actions.unwrap_or_default(), on_close, on_more)
}

/// The side beside the map: the inspector or the knobs, a tab each.
fn side_panel(side_tab: &UseStateHandle<&'static str>, inspector: Html, knobs: Html) -> Html {
    html! {
        <aside class="side" aria-label="inspector and knobs">
            <Tabs label="inspector and knobs" tabs={vec![
                Tab { id: SIDE_INSPECTOR, label: "Inspector".into() },
                Tab { id: SIDE_KNOBS, label: "Knobs".into() },
            ]} selected={**side_tab} on_select={{ let side_tab = side_tab.setter(); Callback::from(move |id| side_tab.set(id)) }} />
            <TabPanel id={SIDE_INSPECTOR} selected={**side_tab == SIDE_INSPECTOR}>
                <div class="inspector" id="inspector-full" data-testid="inspector" aria-live="polite">{ inspector }</div>
            </TabPanel>
            <TabPanel id={SIDE_KNOBS} selected={**side_tab == SIDE_KNOBS}>{ knobs }</TabPanel>
        </aside>
    }
}

/// The inspector's actions for the selection.
fn actions_for(
    simulation_ref: &kafkascope_engine::sim::Simulation,
    view: &kafkascope_engine::sim::view::ClusterView,
    selection: &Selection,
    replica_records: Option<&(String, u32, bool, Vec<crate::view_model::RecordChip>)>,
    dispatch: &Callback<Action>,
) -> Html {
    let facts = crate::map_actions::ActionFacts {
        view,
        slow_handlers: &slow_handlers(simulation_ref),
        member_settings: &member_settings(simulation_ref),
        add_partition: match replica_records {
            Some((topic, count, false, _)) => Some((topic.as_str(), *count)),
            _ => None,
        },
    };
    crate::map_actions::inspector_actions(&facts, selection, dispatch)
}

/// What the map is and how to drive it.
fn map_hint(config: &kafkascope_engine::sim::config::ClusterConfig) -> Html {
    let hint = html! {
        <p class="hint">
            { describe_config(config) }
            { " Time is simulated: the map opens playing; pause it, step one event, or run or skip a stretch of time at once (only playing sends the steady stream of records)" }
            <span class="keys">{ " (with this section focused: Space plays or pauses, → steps one event)" }</span>
            { ". Click anything on the map to inspect it." }
        </p>
    };
    // Embedded, the map comes first: what the cluster is, a click away.
    if matches!(
        crate::view_model::embed_mode(&crate::export::page_query()),
        Ok(Some(crate::view_model::Embed::Map))
    ) {
        html! {
            <details class="map-about" data-testid="map-about">
                <summary>{ "About this cluster, and how to run it" }</summary>
                { hint }
            </details>
        }
    } else {
        hint
    }
}

/// The run's totals in one line.
fn summary_line(summary: &kafkascope_engine::sim::Summary) -> Html {
    html! {
        <p class="muted" data-testid="cluster-summary">
            { format!(
                "produced {}, acknowledged {}, failed {}, lost {}, leader elections {}, invariant violations {}",
                summary.produced, summary.acknowledged, summary.failed, summary.lost, summary.leader_elections, summary.invariant_violations
            ) }
        </p>
    }
}

/// What the map's marks mean.
const MAP_LEGEND: &str = "L leader · F follower · ISR in sync · OSR out of sync · bar = log end offset, | = high watermark (numbers: HW/LEO), ¦ = last stable offset, dashed stretch = deleted by retention, dark tick = compacted up to, line under a bar = flushed to disk (the rest is in the page cache only) · dots = messages in flight (hollow: responses) · a member's @N = its committed offset";

/// The map's session: a run link (`?run=`) starts replaying a shared run
/// to its moment (a slice at a time, [`use_slices`]), and one that
/// cannot open says why, over the default cluster; `?seed=N` starts the
/// map with that seed. Also what to say about the address, if anything.
#[hook]
fn use_map_session() -> (Rc<RefCell<Session>>, Rc<RefCell<Option<String>>>) {
    let link_problem = use_mut_ref(|| None::<String>);
    let session = {
        let link_problem = link_problem.clone();
        use_mut_ref(move || {
            let query = page_query();
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
                Some(Ok(session)) => session,
                Some(Err(problem)) => {
                    *link_problem.borrow_mut() = Some(crate::session::link_failed(&problem));
                    Session::new(config_for_query(&query), seed)
                }
                None => {
                    // A knob or preset the map does not have is named, not
                    // silently dropped.
                    if let Some(problem) = crate::cluster_model::address_problem(&query) {
                        *link_problem.borrow_mut() = Some(problem);
                    }
                    Session::new(config_for_query(&query), seed)
                }
            }
        })
    };
    (session, link_problem)
}

/// A new selection stays in sight: on a phone the sheet at the foot of
/// the screen must not cover what was tapped (the page's scroll padding
/// leaves the sheet's room, see styles.css), so the selected box or row is
/// scrolled just enough to show above it.
#[hook]
fn use_selection_in_view(selected: Option<String>) {
    use_effect_with(selected, |selected| {
        if selected.is_some() && is_phone() {
            let target = web_sys::window()
                .and_then(|window| window.document())
                .and_then(|document| {
                    document
                        .query_selector("[data-testid=\"cluster\"] svg.map .selected")
                        .ok()
                        .flatten()
                });
            let height = web_sys::window()
                .and_then(|window| window.inner_height().ok())
                .and_then(|height| height.as_f64());
            if let (Some(target), Some(height)) = (target, height) {
                // Below the sheet's top (about 14rem from the foot): bring
                // its foot up to just above the sheet.
                if target.get_bounding_client_rect().bottom() > height - SHEET_ROOM_PX {
                    target.scroll_into_view_with_bool(false);
                }
            }
        }
    });
}

/// How much of a phone's screen the selection's sheet may take (the page's
/// `scroll-padding-bottom` while it shows, 14rem).
const SHEET_ROOM_PX: f64 = 224.0;

/// A render after a play tick closes that tick's cost sample.
#[hook]
fn use_tick_costs(clock: Rc<RefCell<Clock>>) {
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

/// Every change goes through the session: one place that moves the
/// simulation and collects its trace. The host page hears of each knob the
/// run took.
fn session_dispatch(
    session: Rc<RefCell<Session>>,
    clock: Rc<RefCell<Clock>>,
    redraw: UseForceUpdateHandle,
) -> Rc<dyn Fn(Action)> {
    Rc::new(move |action: Action| {
        let moves = !matches!(action, Action::Select(_));
        let knob = match &action {
            Action::Knob(knob, value) => Some((knob.name().to_string(), value.clone())),
            _ => None,
        };
        session.borrow_mut().apply(action);
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
}

/// While playing, advance virtual time every tick and redraw.
#[hook]
fn use_play_loop(
    session: Rc<RefCell<Session>>,
    clock: Rc<RefCell<Clock>>,
    redraw: UseForceUpdateHandle,
    play: (bool, u64, u32),
) {
    use_effect_with(play, move |&(playing, speed, rate)| {
        // Play, pause and a new speed start the measure of the speed reached over.
        clock.borrow_mut().progress.clear();
        // Playing on after chaos held the map at an anomaly.
        if playing && session.borrow().chaos().is_some_and(|chaos| chaos.holding) {
            session.borrow_mut().apply(Action::ResumeChaos);
        }
        let interval = playing.then(|| {
            gloo_timers::callback::Interval::new(TICK_MS, move || {
                if tick(&mut session.borrow_mut(), &mut clock.borrow_mut(), speed, rate) {
                    redraw.force_update();
                }
            })
        });
        move || drop(interval)
    });
}

/// Space plays or pauses and the right arrow steps, while the section has
/// focus (so typing elsewhere on the page is never taken).
fn map_keys(playing: UseStateHandle<bool>, dispatch: Rc<dyn Fn(Action)>) -> Callback<KeyboardEvent> {
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
}

/// The host page hears when acknowledged records are lost.
fn announce_losses(last_lost: &RefCell<u64>, lost: u64) {
    let mut known = last_lost.borrow_mut();
    if lost > *known {
        host_api::bridge::emit(&HostEvent::RecordLost {
            lost,
            newly: lost - *known,
        });
    }
    *known = lost;
}

/// "Copy link": the address of this moment, with the run's fingerprint,
/// shown and copied where the page may.
fn copy_run_link(
    session: Rc<RefCell<Session>>,
    shared: UseStateHandle<Option<(String, u64, Option<bool>)>>,
) -> Callback<MouseEvent> {
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
}

/// What the page knows about the address it opened: a problem with it,
/// and a run link's replay (under way, or what became of it).
struct LinkNotice {
    problem: Option<String>,
    replaying: Option<(u64, u64)>,
    outcome: Option<LinkOutcome>,
}

impl LinkNotice {
    fn of(current: &Session, problem: &Option<String>) -> LinkNotice {
        LinkNotice {
            problem: problem.clone(),
            replaying: current.replaying(),
            outcome: current.link_outcome().cloned(),
        }
    }
}

/// What the page says about a run link: why it could not open, its replay
/// under way (with a Stop), the moment a shared run opened at or where its
/// replay was stopped, the link just copied.
fn run_notices(link: &LinkNotice, shared: Option<&(String, u64, Option<bool>)>, dispatch: &Callback<Action>) -> Html {
    let problem = match &link.outcome {
        Some(failed @ LinkOutcome::Failed(_)) => Some(failed.to_string()),
        _ => link.problem.clone(),
    };
    html! { <>
        { match problem {
            Some(problem) => html! { <p class="error" role="alert" data-testid="run-link-problem">{ problem }</p> },
            None => html! {},
        } }
        { match link.replaying {
            Some((done, total)) => html! {
                <p class="replay-progress" role="status" data-testid="replay-progress">
                    <progress max={total.to_string()} value={done.to_string()} aria-label="shared run replayed" />
                    { format!(" {} ", crate::session::replay_progress(done, total)) }
                    <button type="button" data-testid="replay-stop" onclick={dispatch.reform(|_: MouseEvent| Action::StopReplay)}>{ "Stop" }</button>
                </p>
            },
            None => html! {},
        } }
        { match &link.outcome {
            Some(outcome @ LinkOutcome::Opened { hash, .. }) => html! {
                <p class="muted" role="status" data-testid="run-restored" data-run-hash={format!("{hash:016x}")}>{ outcome.to_string() }</p>
            },
            Some(outcome @ LinkOutcome::Stopped { .. }) => html! {
                <p class="muted" role="status" data-testid="replay-stopped">{ outcome.to_string() }</p>
            },
            _ => html! {},
        } }
        { match shared {
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
    </> }
}

/// The session's work in slices (a long skip, a run link's replay), and
/// chaos that stops at an anomaly holding the map there (the play button
/// shows it paused until the learner plays on).
#[hook]
fn use_session_work(dispatch: Rc<dyn Fn(Action)>, session: &Rc<RefCell<Session>>, playing: UseStateHandle<bool>) {
    let (skipping, replaying, holding) = {
        let current = session.borrow();
        (
            current.skipping().is_some(),
            current.replaying().is_some(),
            current.chaos().is_some_and(|chaos| chaos.holding),
        )
    };
    use_slices(dispatch.clone(), skipping.then_some(Action::SkipSlice));
    use_slices(dispatch, replaying.then_some(Action::ReplaySlice));
    use_effect_with(holding, move |&holding| {
        if holding {
            playing.set(false);
        }
    });
}

/// The line above the map while chaos runs, with the way to its tab and a
/// Stop.
fn chaos_notice(line: Option<String>, tool_tab: &UseStateHandle<&'static str>, dispatch: &Callback<Action>) -> Html {
    let Some(line) = line else {
        return html! {};
    };
    let open = {
        let tool_tab = tool_tab.setter();
        Callback::from(move |_: MouseEvent| tool_tab.set(TOOL_CHAOS))
    };
    html! {
        <p class="chaos-notice" role="status" data-testid="chaos-notice">
            { format!("{line} ") }
            <button type="button" data-testid="chaos-open" onclick={open}>{ "Chaos tab" }</button>
            { " " }
            <button type="button" data-testid="chaos-notice-stop" onclick={dispatch.reform(|_: MouseEvent| Action::StopChaos)}>{ "Stop chaos" }</button>
        </p>
    }
}

/// The line above the map while chaos runs: its faults so far, and the
/// anomaly it holds the map at.
fn chaos_notice_text(chaos: &crate::session::ChaosRun, now: u64) -> String {
    let struck = chaos.struck(now);
    let faults = format!(
        "Chaos is on: {struck} fault{} so far.",
        if struck == 1 { "" } else { "s" }
    );
    match (&chaos.halt, chaos.holding) {
        (Some(halt), true) => format!(
            "{faults} It stopped the map at t = {} ms: {}.",
            halt.at_ms, halt.finding
        ),
        _ => faults,
    }
}

/// The map's display switches: internal topics drawn, reduced motion.
fn display_controls(internal_topics: &UseStateHandle<bool>, reduced_motion: &UseStateHandle<bool>) -> Html {
    let toggle = |state: &UseStateHandle<bool>| {
        let state = state.clone();
        Callback::from(move |_: MouseEvent| state.set(!*state))
    };
    html! {
        <div class="controls" role="toolbar" aria-label="display">
            <button type="button" data-testid="toggle-internal" aria-pressed={internal_topics.to_string()}
                title="Draw every replica of __consumer_offsets and __transaction_state, the topics Kafka keeps for itself"
                onclick={toggle(internal_topics)}>{ "Show internal topics" }</button>
            <button type="button" data-testid="toggle-motion" aria-pressed={reduced_motion.to_string()} onclick={toggle(reduced_motion)}>{ "Reduce motion" }</button>
        </div>
    }
}

/// What the tools under the map show, read from the session at one moment.
struct ToolData {
    recent: Vec<String>,
    lag_charts: Vec<crate::cluster_model::LagChart>,
    topics: Vec<crate::cluster_model::TopicRow>,
    groups: Vec<crate::cluster_model::GroupRow>,
    ledger: Vec<crate::cluster_model::LedgerRow>,
    quorum: crate::cluster_model::QuorumStatus,
    comparison: Option<Result<Vec<crate::cluster_model::ProtocolRun>, String>>,
    /// Each group's total LAG as kafka-consumer-groups shows it.
    kafka_lag: std::collections::BTreeMap<String, String>,
    /// Jepsen's verdict on the run, as last checked.
    jepsen: Option<crate::jepsen_model::JepsenPanel>,
    /// Chaos: its settings, what runs, and why an edit was refused.
    chaos_setup: kafkascope_engine::sim::chaos::ChaosSettings,
    chaos: Option<crate::session::ChaosRun>,
    chaos_error: Option<String>,
}

impl ToolData {
    fn of(current: &Session, view: &kafkascope_engine::sim::view::ClusterView) -> Self {
        ToolData {
            recent: recent_lines(current),
            lag_charts: lag_charts(current),
            topics: describe_topics(view),
            groups: describe_groups(view),
            ledger: crate::cluster_model::ledger_rows(&current.simulation().ledger_views()),
            quorum: describe_quorum(view),
            comparison: current.comparison().cloned(),
            kafka_lag: crate::cluster_model::group_lags(&describe_groups(view)),
            jepsen: current.jepsen().cloned(),
            chaos_setup: current.chaos_setup().clone(),
            chaos: current.chaos().cloned(),
            chaos_error: current.chaos_error().map(str::to_string),
        }
    }
}

/// What the Export tab saves: the map's Mermaid text, and the session's
/// scenario and trace.
struct ExportCallbacks {
    mermaid: Callback<(), String>,
    session: Rc<RefCell<Session>>,
    /// The toolbar's "Copy link", and playing on (chaos's tab has both).
    on_copy: Callback<MouseEvent>,
    on_play: Callback<MouseEvent>,
    /// The run's virtual time.
    now: u64,
}

impl ExportCallbacks {
    fn of(
        model: Rc<crate::map_model::MapModel>,
        session: &Rc<RefCell<Session>>,
        shared: &UseStateHandle<Option<(String, u64, Option<bool>)>>,
        playing: &UseStateHandle<bool>,
        now: u64,
    ) -> ExportCallbacks {
        let playing = playing.clone();
        ExportCallbacks {
            mermaid: Callback::from(move |_: ()| mermaid(&model)),
            session: session.clone(),
            on_copy: copy_run_link(session.clone(), shared.clone()),
            on_play: Callback::from(move |_: MouseEvent| playing.set(true)),
            now,
        }
    }
}

/// The tools under the map, a tab each.
fn tool_panels(
    tool_tab: &UseStateHandle<&'static str>,
    tools: ToolData,
    dispatch: Callback<Action>,
    exports: ExportCallbacks,
) -> Html {
    let ToolData {
        recent,
        lag_charts,
        topics,
        groups,
        ledger,
        quorum,
        comparison,
        kafka_lag,
        jepsen,
        chaos_setup,
        chaos,
        chaos_error,
    } = tools;
    let shown = **tool_tab;
    let save = |name: &'static str, text: fn(&Session) -> String| {
        let session = exports.session.clone();
        Callback::from(move |()| download(name, "application/json", &text(&session.borrow())))
    };
    html! {
        <div class="tools">
            <Tabs label="tools" tabs={tool_tabs()} selected={shown}
                on_select={{ let tool_tab = tool_tab.setter(); Callback::from(move |id| tool_tab.set(id)) }} />
            <TabPanel id={TOOL_RECENT} selected={shown == TOOL_RECENT} class="recent">
            { if recent.is_empty() { html! { <p class="muted">{ "Nothing yet beyond routine traffic: kill a broker, turn a knob or add a consumer." }</p> } } else { html! {
                <ol class="recent-events" data-testid="recent-events" reversed=true tabindex="0" aria-label="what just happened, newest first">
                    { for recent.iter().map(|line| html! { <li>{ line }</li> }) }
                </ol>
            } } }
            </TabPanel>
            <TabPanel id={TOOL_LAG} selected={shown == TOOL_LAG}><LagCharts charts={lag_charts} {kafka_lag} /></TabPanel>
            <TabPanel id={TOOL_TOPICS} selected={shown == TOOL_TOPICS}><TopicsTool {topics} /></TabPanel>
            <TabPanel id={TOOL_GROUPS} selected={shown == TOOL_GROUPS}><GroupsTool {groups} /></TabPanel>
            <TabPanel id={TOOL_LEDGER} selected={shown == TOOL_LEDGER}><LedgerTool {ledger} /></TabPanel>
            <TabPanel id={TOOL_QUORUM} selected={shown == TOOL_QUORUM}><QuorumTool {quorum} /></TabPanel>
            <TabPanel id={TOOL_COMPARE} selected={shown == TOOL_COMPARE}><Comparison runs={comparison} on_run={dispatch.reform(|_: MouseEvent| Action::Compare)} /></TabPanel>
            <TabPanel id={TOOL_JEPSEN} selected={shown == TOOL_JEPSEN}>
                <crate::map_tools::JepsenTool panel={jepsen} on_check={dispatch.reform(|_: MouseEvent| Action::CheckJepsen)} />
            </TabPanel>
            <TabPanel id={TOOL_CHAOS} selected={shown == TOOL_CHAOS}>
                <crate::map_tools::ChaosTool setup={chaos_setup} {chaos} error={chaos_error} dispatch={dispatch.clone()}
                    on_copy={exports.on_copy.clone()} on_play_on={exports.on_play.clone()} now={exports.now} />
            </TabPanel>
            <TabPanel id={TOOL_EXPORT} selected={shown == TOOL_EXPORT}>
                <ExportTool mermaid={exports.mermaid.clone()} on_svg={Callback::from(|()| download_svg())}
                    on_scenario={save("kafkascope-run.json", Session::scenario_json)}
                    on_trace={save("kafkascope-trace.json", Session::trace_json)} />
            </TabPanel>
        </div>
    }
}

/// The host page API (an embedding course page): play, pause, knobs,
/// brokers.
#[hook]
fn use_host_commands(dispatch: Rc<dyn Fn(Action)>, session: Rc<RefCell<Session>>, playing: UseStateHandle<bool>) {
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

/// A lesson link that sets a knob (`?knob=acks:1#map`) changes the
/// address and says so (NAVIGATE_EVENT); one opened in a new tab sets it
/// when the map starts. The map stops playing and shows its knobs, so the
/// learner acts next.
#[hook]
fn use_knob_links(dispatch: Rc<dyn Fn(Action)>, playing: UseStateHandle<bool>, side_tab: UseStateSetter<&'static str>) {
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

/// Work that runs in slices (an hour's skip, a run link's replay) runs
/// one per timer turn, so the page draws its progress in between and its
/// Stop stays clickable: `next` is the slice's action while there is one.
#[hook]
pub(crate) fn use_slices<A: 'static>(dispatch: Rc<dyn Fn(A)>, next: Option<A>) {
    let slice_scheduled = use_mut_ref(|| false);
    use_effect(move || {
        if let Some(next) = next.filter(|_| !*slice_scheduled.borrow()) {
            *slice_scheduled.borrow_mut() = true;
            let slice_scheduled = slice_scheduled.clone();
            gloo_timers::callback::Timeout::new(0, move || {
                *slice_scheduled.borrow_mut() = false;
                dispatch(next);
            })
            .forget();
        }
    });
}

/// A selected replica's latest records: its topic, the topic's partition
/// count, whether it is internal, and the strip (where one key's records
/// keep their order).
fn replica_records(
    simulation_ref: &kafkascope_engine::sim::Simulation,
    view: &kafkascope_engine::sim::view::ClusterView,
    selected: Option<&Selection>,
) -> Option<(String, u32, bool, Vec<crate::view_model::RecordChip>)> {
    match selected {
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
    }
}

impl Clock {
    /// What the toolbar and the benchmark read off the clock: the average
    /// tick cost (ms) and its sample count, the speed reached while
    /// playing, and the simulation's average share of a tick (ms).
    fn measures(&self, playing: bool) -> (f64, usize, Option<f64>, f64) {
        let average = |costs: &std::collections::VecDeque<f64>| {
            if costs.is_empty() {
                0.0
            } else {
                costs.iter().sum::<f64>() / costs.len() as f64
            }
        };
        let reached = if playing {
            self.progress
                .front()
                .zip(self.progress.back())
                .and_then(|(first, last)| reached_speed(&[*first, *last]))
        } else {
            None
        };
        (
            average(&self.costs),
            self.costs.len(),
            reached,
            average(&self.simulation_costs),
        )
    }
}

/// Each member's commit mode and whether its handler is idempotent (the
/// inspector's controls).
fn member_settings(
    simulation_ref: &kafkascope_engine::sim::Simulation,
) -> std::collections::BTreeMap<u32, (kafkascope_engine::sim::config::CommitMode, bool)> {
    simulation_ref
        .consumers()
        .iter()
        .map(|consumer| {
            (
                consumer.id,
                (consumer.config.commit_mode, consumer.config.idempotent_handler),
            )
        })
        .gather()
}

/// Which consumers have a slow handler (the inspector offers to undo it).
fn slow_handlers(simulation_ref: &kafkascope_engine::sim::Simulation) -> Vec<u32> {
    simulation_ref
        .consumers()
        .iter()
        .filter(|consumer| consumer.config.processing_ms_per_record > 0)
        .map(|consumer| consumer.id)
        .collect()
}

/// Each group's lag chart over the last minute.
fn lag_charts(current: &Session) -> Vec<crate::cluster_model::LagChart> {
    current
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
        .collect()
}

/// What just happened: the latest state changes (no message traffic).
fn recent_lines(current: &Session) -> Vec<String> {
    current
        .trace()
        .iter()
        .rev()
        .take(5_000)
        .filter(|event| is_notable(&event.kind))
        .take(12)
        .map(TraceEvent::line)
        .collect()
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
const TOOL_JEPSEN: &str = "jepsen";
const TOOL_CHAOS: &str = "chaos";
const TOOL_EXPORT: &str = "export";

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
        (TOOL_JEPSEN, "Jepsen's checks"),
        (TOOL_CHAOS, "Chaos"),
        (TOOL_EXPORT, "Export"),
    ]
    .into_iter()
    .map(|(id, label)| Tab {
        id,
        label: label.into(),
    })
    .collect()
}
