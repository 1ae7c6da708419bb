//! The "Sequence steps" section: a guided story played step by step, its
//! sequence diagram drawn from the run's trace, the map of the cluster at
//! the current step, a scrubber to rewind, forks, filters, the "why"
//! chains, deep links and the Mermaid export. All the data comes from
//! [`crate::sequence_model`]; the map is the same [`ClusterMap`] the live
//! section draws.

use kafkascope_engine::sorting::Gather;
use std::cell::RefCell;
use std::rc::Rc;

use kafkascope_engine::sim::types::NodeId;
use wasm_bindgen::JsCast;
use yew::prelude::*;

use crate::export::page_query;

use crate::map::{activate, ClusterMap};
use crate::map_model::{layout_fit, requester_first};
use crate::selection::Selection;
use crate::sequence_model::{
    lifelines, link, merged_link, mermaid, parse_link, story, Filter, Step, StepKind, NAVIGATE_EVENT,
};
use crate::story_cursor::{CursorAction, FilterField, StoryCursor};
use crate::story_loader::{LoadProgress, StoryLoader, OPEN_WORK, SLICE_WORK};

fn set_url(query: &str) {
    if let Some(history) = web_sys::window().and_then(|window| window.history().ok()) {
        let _ = history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(query));
    }
}

/// Steps shown before and after the current one in the diagram.
const BEFORE: usize = 8;
const AFTER: usize = 12;
const ROW_H: f64 = 28.0;
const TOP: f64 = 46.0;

/// About how wide a character of the diagram's 12 px text is.
const CHAR_W: f64 = 7.3;

/// Text centred near `centre` on a row of its own: as much of it as the
/// diagram's width (`span`: from the time gutter to the right edge) holds,
/// moved sideways so it stays inside. The centre, the text, its width.
fn fitted(text: &str, centre: f64, (left, right): (f64, f64)) -> (f64, String, f64) {
    let room = (right - left - 16.0).max(CHAR_W * 4.0);
    let shown = short(text, (room / CHAR_W) as usize);
    let text_w = shown.chars().count() as f64 * CHAR_W;
    let half = text_w / 2.0 + 6.0;
    let centre = centre.clamp(left + half, (right - half).max(left + half));
    (centre, shown, text_w)
}

/// An arrow's label, [`fitted`] over the arrow.
fn wide_text(class: &'static str, text: &str, centre: f64, y: f64, span: (f64, f64)) -> Html {
    let (centre, shown, _) = fitted(text, centre, span);
    html! { <text class={class} x={format!("{centre:.1}")} y={format!("{y:.1}")}>{ shown }</text> }
}

fn short(text: &str, limit: usize) -> String {
    if text.chars().count() <= limit {
        text.to_string()
    } else {
        let cut: String = text.chars().take(limit.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

/// The map selection a step highlights: the edge a message travels on,
/// or the replica or node a state change happened on.
fn highlight(step: &Step) -> Option<Selection> {
    match &step.kind {
        StepKind::Arrow { from, to, .. } => {
            let (from, to) = requester_first(*from, *to);
            Some(Selection::Edge { from, to })
        }
        StepKind::Note { over, .. } => Some(match (over, step.partitions.first()) {
            (NodeId::Broker(broker), Some(partition)) => Selection::Replica {
                broker: *broker,
                partition: partition.clone(),
            },
            _ => Selection::Node(*over),
        }),
        StepKind::Input { .. } => None,
    }
}

#[derive(Properties, PartialEq)]
struct DiagramProps {
    /// (index into all steps, the step) for the visible window.
    rows: Vec<(usize, Step)>,
    /// What each lifeline is now.
    roles: std::collections::BTreeMap<NodeId, String>,
    current: usize,
    on_pick: Callback<usize>,
    /// A phone: the steps as a vertical list instead of lifelines side by
    /// side (readable with no sideways scrolling).
    narrow: bool,
    /// The width of the diagram's box, in CSS pixels: the diagram is laid
    /// out for it and drawn unscaled, so its text is the size the styles
    /// say (12 px and up); lifelines that do not fit scroll sideways.
    box_width: f64,
    /// The lifelines, in order: the cast of the steps shown, not only of
    /// this window of them.
    cast: Vec<NodeId>,
}

/// The steps around the current one as a list, for a phone: time, then
/// who sends what to whom, or what changed where.
fn sequence_list(props: &DiagramProps) -> Html {
    html! {
        <ol class="sequence-list" data-testid="sequence-diagram" aria-label="the steps around the current one">
            { for props.rows.iter().map(|(index, step)| {
                let current = *index == props.current;
                let (pick, key) = activate(*index, &props.on_pick);
                let what = match &step.kind {
                    StepKind::Arrow { from, to, label, dropped, .. } => {
                        format!("{from} {} {to}: {label}", if *dropped { "✗→" } else { "→" })
                    }
                    StepKind::Note { over, text } => format!("{over}: {text}"),
                    StepKind::Input { text } => format!("▶ {text}"),
                };
                html! {
                    <li>
                        <div class={classes!("row", step.outcome, current.then_some("current"))} role="button" tabindex="0"
                            aria-current={current.then_some("step")} title={step.caption.clone()}
                            data-testid={format!("seq-step-{}", index + 1)} onclick={pick} onkeydown={key}>
                            <span class="time">{ format!("{} ms", step.time) }</span>
                            <span class="what">{ what }</span>
                        </div>
                    </li>
                }
            }) }
        </ol>
    }
}

#[function_component(SequenceDiagram)]
fn sequence_diagram(props: &DiagramProps) -> Html {
    if props.narrow {
        return sequence_list(props);
    }
    let mut lines = props.cast.clone();
    for node in lifelines(props.rows.iter().map(|(_, step)| step)) {
        if !lines.contains(&node) {
            lines.push(node);
        }
    }
    // A gutter on the left for the times.
    let gutter = 66.0;
    let room = props.box_width.max(320.0) - gutter - 12.0;
    let column = if lines.is_empty() {
        140.0
    } else {
        (room / lines.len() as f64).clamp(104.0, 170.0)
    };
    // The border (1 px each side) is outside the drawing, so the drawing is
    // never scaled to fit its box.
    let width = (gutter + 12.0 + column * lines.len() as f64).max(props.box_width.max(322.0) - 2.0);
    let height = TOP + props.rows.len() as f64 * ROW_H + 16.0;
    let x_of = |node: &NodeId| {
        lines
            .iter()
            .position(|line| line == node)
            .map_or(gutter, |index| gutter + column * (index as f64 + 0.5))
    };
    html! {
        <svg class="sequence" data-testid="sequence-diagram" viewBox={format!("0 0 {width:.0} {height:.0}")}
            width={format!("{width:.0}")} height={format!("{height:.0}")}
            role="group" aria-label="sequence diagram of the steps around the current one" xmlns="http://www.w3.org/2000/svg">
            <defs>
                <marker id="seq-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
                    <path d="M0,0 L10,5 L0,10 z" class="seq-head" />
                </marker>
            </defs>
            { for lines.iter().map(|line| {
                let x = x_of(line);
                html! { <g class="lifeline">
                    <rect x={format!("{:.1}", x - column / 2.0 + 4.0)} y="4" width={format!("{:.1}", column - 8.0)} height="34" rx="4" />
                    <text x={format!("{x:.1}")} y="18" class="lifeline-name">{ line.to_string() }</text>
                    <text x={format!("{x:.1}")} y="31" class="lifeline-role">{ short(props.roles.get(line).map_or("", String::as_str), (column / 6.8) as usize) }</text>
                    <line x1={format!("{x:.1}")} x2={format!("{x:.1}")} y1="38" y2={format!("{:.1}", height - 4.0)} />
                </g> }
            }) }
            { for props.rows.iter().enumerate().map(|(row, (index, step))| {
                let y = TOP + row as f64 * ROW_H;
                let current = *index == props.current;
                let (pick, key) = activate(*index, &props.on_pick);
                let body = match &step.kind {
                    // A broker asking itself (a leader that is also the
                    // transaction coordinator): a loop on its lifeline,
                    // labelled beside it.
                    StepKind::Arrow { from, to, label, .. } if from == to => {
                        let x = x_of(from);
                        html! { <>
                            <path class="message" fill="none" marker-end="url(#seq-arrow)"
                                d={format!("M{x:.1},{:.1} h18 v10 h-16", y + 10.0)} />
                            { wide_text("label", label, x + 24.0 + (width - x - 24.0).min(260.0) / 2.0, y + 12.0, (gutter, width)) }
                        </> }
                    }
                    StepKind::Arrow { from, to, label, dropped, .. } => {
                        let (x1, x2) = (x_of(from), x_of(to));
                        let end = if *dropped { x1 + (x2 - x1) * 0.6 } else { x2 };
                        html! { <>
                            <line class={classes!("message", dropped.then_some("dropped"))} x1={format!("{x1:.1}")} x2={format!("{end:.1}")}
                                y1={format!("{:.1}", y + 16.0)} y2={format!("{:.1}", y + 16.0)} marker-end={(!dropped).then_some("url(#seq-arrow)")} />
                            { if *dropped { html! { <text class="lost" x={format!("{end:.1}")} y={format!("{:.1}", y + 20.0)}>{ "✗" }</text> } } else { html! {} } }
                            { wide_text("label", label, (x1 + x2) / 2.0, y + 12.0, (gutter, width)) }
                        </> }
                    }
                    StepKind::Note { over, text } => {
                        // A row holds one step, so a note may be wider than
                        // its lifeline's column: as wide as its words, kept
                        // inside the diagram.
                        let (centre, shown, text_w) = fitted(text, x_of(over), (gutter, width));
                        let box_w = (text_w + 12.0).max(column - 12.0).min(width - gutter - 4.0);
                        let box_x = (centre - box_w / 2.0).clamp(gutter, (width - box_w).max(gutter));
                        html! { <>
                            <rect class={classes!("note", step.outcome)} x={format!("{box_x:.1}")} y={format!("{:.1}", y + 5.0)}
                                width={format!("{box_w:.1}")} height="18" rx="3" />
                            <text class="note-text" x={format!("{centre:.1}")} y={format!("{:.1}", y + 18.0)}>{ shown }</text>
                        </> }
                    }
                    StepKind::Input { text } => html! { <>
                        <rect class="input" x={format!("{:.1}", gutter - 4.0)} y={format!("{:.1}", y + 4.0)} width={format!("{:.1}", width - gutter)} height="20" rx="3" />
                        <text class="note-text" x={format!("{:.1}", (width + gutter) / 2.0)} y={format!("{:.1}", y + 18.0)}>{ short(&format!("▶ {text}"), ((width - gutter) / 7.0) as usize) }</text>
                    </> },
                };
                html! {
                    <g class={classes!("row", current.then_some("current"))} role="button" tabindex="0"
                        aria-current={current.then_some("step")}
                        data-testid={format!("seq-step-{}", index + 1)} onclick={pick} onkeydown={key}>
                        // Named by its title: an aria-label would have to
                        // contain the drawn (abbreviated) text.
                        <title>{ format!("step {}: {}", index + 1, step.caption) }</title>
                        <rect class="band" x="0" y={format!("{y:.1}")} width={format!("{width:.1}")} height={format!("{ROW_H:.1}")} />
                        <text class="time" x="4" y={format!("{:.1}", y + 11.0)}>{ format!("{} ms", step.time) }</text>
                        { body }
                    </g>
                }
            }) }
        </svg>
    }
}

/// GETs `url` and returns its text: at most
/// [`crate::sequence_model::MAX_SCENARIO_FILE_BYTES`], from a `200`; the
/// browser refuses another site's file unless it allows it (CORS).
async fn fetch_text(url: &str) -> Result<String, String> {
    use std::cell::Cell;
    use wasm_bindgen_futures::JsFuture;
    let limit = crate::sequence_model::MAX_SCENARIO_FILE_BYTES;
    let window = web_sys::window().ok_or("there is no window")?;
    // The whole file must arrive within this time: a body that trickles
    // would otherwise keep the steps loading (and a host waiting) for ever.
    let seconds = SCENARIO_FETCH_LIMIT_MS / 1_000;
    let controller = web_sys::AbortController::new().map_err(|_| "this browser cannot fetch a scenario".to_string())?;
    let timed_out = Rc::new(Cell::new(false));
    let timer = {
        let (controller, timed_out) = (controller.clone(), timed_out.clone());
        gloo_timers::callback::Timeout::new(SCENARIO_FETCH_LIMIT_MS, move || {
            timed_out.set(true);
            controller.abort();
        })
    };
    let failed = |timed_out: &Cell<bool>| {
        if timed_out.get() {
            format!("{url} did not arrive within {seconds} s")
        } else {
            format!("{url} could not be fetched (the network failed, or its site does not send Access-Control-Allow-Origin)")
        }
    };
    let too_large = |size: String| format!("{url} is {size} bytes; kafkascope opens scenario files of at most {limit}");
    // No cookies or credentials go with it, even to kafkascope's own site.
    let init = web_sys::RequestInit::new();
    init.set_credentials(web_sys::RequestCredentials::Omit);
    init.set_mode(web_sys::RequestMode::Cors);
    init.set_signal(Some(&controller.signal()));
    let response: web_sys::Response = JsFuture::from(window.fetch_with_str_and_init(url, &init))
        .await
        .map_err(|_| failed(&timed_out))?
        .dyn_into()
        .map_err(|_| failed(&timed_out))?;
    if !response.ok() {
        return Err(format!("{url} answered HTTP {}", response.status()));
    }
    // A declared length can be above 4 GiB, which does not fit a 32-bit
    // usize: read it as u64.
    let declared = response
        .headers()
        .get("content-length")
        .ok()
        .flatten()
        .and_then(|length| length.trim().parse::<u64>().ok());
    if let Some(length) = declared.filter(|length| *length > limit as u64) {
        controller.abort();
        return Err(too_large(length.to_string()));
    }
    // Read the body as it arrives and stop at the limit, whatever was
    // declared (a body can be longer than its header says, or chunked).
    let body = response.body().ok_or_else(|| failed(&timed_out))?;
    let reader: web_sys::ReadableStreamDefaultReader = body.get_reader().dyn_into().map_err(|_| failed(&timed_out))?;
    let mut bytes: Vec<u8> = Vec::new();
    loop {
        let chunk = JsFuture::from(reader.read()).await.map_err(|_| failed(&timed_out))?;
        let done = js_sys::Reflect::get(&chunk, &"done".into())
            .map(|done| done.is_truthy())
            .unwrap_or(true);
        if done {
            break;
        }
        let value = js_sys::Reflect::get(&chunk, &"value".into()).map_err(|_| failed(&timed_out))?;
        let array: js_sys::Uint8Array = value.dyn_into().map_err(|_| failed(&timed_out))?;
        if bytes.len() + array.length() as usize > limit {
            let _ = reader.cancel();
            controller.abort();
            return Err(too_large(format!("more than {limit}")));
        }
        let start = bytes.len();
        bytes.resize(start + array.length() as usize, 0);
        array.copy_to(&mut bytes[start..]);
    }
    drop(timer);
    String::from_utf8(bytes).map_err(|_| format!("{url} is not UTF-8 text"))
}

/// How long a scenario named by `?scenario=` (or an element's `scenario`)
/// may take to arrive, body included.
const SCENARIO_FETCH_LIMIT_MS: u32 = 20_000;

/// The section.
/// What the story is for the rest of the section: where every move goes.
type Dispatch = Rc<dyn Fn(CursorAction)>;

/// The host page API (an embedding course page): play, pause, go to a
/// step, load a scenario.
#[hook]
fn use_host_commands(dispatch: Dispatch, cursor: Rc<RefCell<Option<StoryCursor>>>, playing: UseStateHandle<bool>) {
    use_effect_with((), move |_| {
        let handler: crate::host_api::bridge::Handler = Rc::new(move |command: &crate::host_api::HostCommand| {
            use crate::host_api::HostCommand;
            match command {
                HostCommand::Play { .. } => playing.set(true),
                HostCommand::Pause { .. } => playing.set(false),
                HostCommand::GoToStep { step } => {
                    let total = cursor.borrow().as_ref().map_or(0, |cursor| cursor.run().steps.len());
                    if !(1..=total).contains(step) {
                        return Err(format!("this story has steps 1 to {total}, not {step}"));
                    }
                    playing.set(false);
                    dispatch(CursorAction::Go(step - 1));
                }
                HostCommand::LoadScenario { scenario, name } => {
                    let name = name.as_deref().unwrap_or("scenario.json");
                    let chosen = crate::sequence_model::custom_story(name, scenario)?;
                    playing.set(false);
                    dispatch(CursorAction::Open {
                        story: chosen,
                        step: None,
                        filter: Filter::default(),
                    });
                    if let Some(problem) = cursor.borrow().as_ref().and_then(StoryCursor::open_problem) {
                        return Err(problem.to_string());
                    }
                }
                other => return Err(format!("the sequence steps do not take {}", other.name())),
            }
            Ok(())
        });
        crate::host_api::bridge::register(crate::host_api::Section::Steps, handler);
        crate::host_api::bridge::install();
        || ()
    });
}

/// A Learn link changes the address without loading the page again and
/// says so with NAVIGATE_EVENT; the back button too (`popstate`). Either
/// way the story and step the address names open here, unfiltered so the
/// step is in view.
#[hook]
fn use_follow_links(dispatch: Dispatch, playing: UseStateHandle<bool>) {
    use_effect_with((), move |_| {
        let follow = wasm_bindgen::closure::Closure::<dyn Fn()>::new(move || {
            let (linked, step) = parse_link(&page_query());
            let Some(chosen) = linked else { return };
            playing.set(false);
            dispatch(CursorAction::Open {
                story: chosen,
                step: step.map(|step| step.saturating_sub(1)),
                filter: Filter::default(),
            });
        });
        let window = web_sys::window();
        if let Some(window) = &window {
            for name in [NAVIGATE_EVENT, "popstate"] {
                let _ = window.add_event_listener_with_callback(name, follow.as_ref().unchecked_ref());
            }
        }
        move || {
            if let Some(window) = &window {
                for name in [NAVIGATE_EVENT, "popstate"] {
                    let _ = window.remove_event_listener_with_callback(name, follow.as_ref().unchecked_ref());
                }
            }
            drop(follow);
        }
    });
}

/// `?scenario=URL`: a course page's own scenario, fetched once and played
/// as a story (at `&step=N` if given); one that cannot be fetched or is not
/// valid says why, over the story the address would otherwise open. Until
/// it has loaded, a host page's commands wait and it hears no `ready` (so a
/// `goToStep` is for this story, not the one before). Gives whether it is
/// loading.
#[hook]
fn use_scenario_from_address(
    dispatch: Dispatch,
    cursor: Rc<RefCell<Option<StoryCursor>>>,
    problem: UseStateHandle<Option<String>>,
    from_address: FromAddress,
) -> bool {
    let loading = use_state(|| false);
    {
        let loading = loading.clone();
        use_effect_with((), move |_| {
            let query = page_query();
            if let Some(raw) = crate::view_model::query_param(&query, crate::sequence_model::SCENARIO_PARAM) {
                let raw_kept = raw.to_string();
                let decoded = js_sys::decode_uri_component(raw)
                    .ok()
                    .and_then(|text| text.as_string())
                    .filter(|text| !text.trim().is_empty())
                    .ok_or_else(|| "the link names no scenario address".to_string());
                let page = web_sys::window()
                    .and_then(|window| window.location().href().ok())
                    .unwrap_or_default();
                match decoded
                    .and_then(|decoded| {
                        web_sys::Url::new_with_base(&decoded, &page)
                            .map(|url| url.href())
                            .map_err(|_| format!("{decoded} is not a web address"))
                    })
                    .and_then(|url| crate::sequence_model::scenario_url_name(&url).map(|name| (url, name)))
                {
                    Err(error) => {
                        problem.set(Some(format!("The scenario in this link could not open: {error}.")));
                        crate::host_api::bridge::release();
                        crate::host_api::bridge::emit(&crate::host_api::HostEvent::Error {
                            command: None,
                            message: format!("the scenario in the address could not open: {error}"),
                        });
                    }
                    Ok((url, name)) => {
                        let linked_step = parse_link(&query).1;
                        let step = linked_step.map(|step| step.saturating_sub(1));
                        let shown_before = cursor.borrow().as_ref().map(|cursor| cursor.story().id.clone());
                        loading.set(true);
                        wasm_bindgen_futures::spawn_local(async move {
                            let result = fetch_text(&url)
                                .await
                                .and_then(|text| crate::sequence_model::custom_story(&name, &text));
                            loading.set(false);
                            // A story the learner picked meanwhile stays.
                            let moved =
                                cursor.borrow().as_ref().map(|cursor| cursor.story().id.clone()) != shown_before;
                            match &result {
                                Ok(_) if moved => {}
                                Ok(chosen) => {
                                    problem.set(None);
                                    *from_address.borrow_mut() = Some((*chosen, raw_kept));
                                    dispatch(CursorAction::Open {
                                        story: chosen,
                                        step,
                                        filter: Filter::default(),
                                    });
                                }
                                Err(error) => {
                                    problem.set(Some(format!("The scenario in this link could not open: {error}.")))
                                }
                            }
                            crate::host_api::bridge::release();
                            // The host hears why, after `ready`.
                            if let Err(error) = result {
                                crate::host_api::bridge::emit(&crate::host_api::HostEvent::Error {
                                    command: None,
                                    message: format!("the scenario in the address could not open: {error}"),
                                });
                            }
                        });
                    }
                }
            }
            || ()
        });
    }
    *loading
}

/// The address bar follows the step once the learner moves, so it can be
/// shared; loading the page never rewrites it (a preset, `play=0` or a
/// section's #anchor stay as they were). An opened file's story has no
/// address: it exists only here.
#[hook]
fn use_address_bar(
    deep_link: String,
    scenario_raw: Option<String>,
    story: &'static crate::sequence_model::StoryDef,
    index: usize,
    forks: Vec<crate::sequence_model::ForkLink>,
) {
    let loaded_once = use_mut_ref(|| false);
    use_effect_with(deep_link, move |_| {
        if std::mem::replace(&mut *loaded_once.borrow_mut(), true) {
            if let Some(raw) = &scenario_raw {
                set_url(&crate::sequence_model::merged_scenario_link(
                    &page_query(),
                    raw,
                    index,
                    &forks,
                ));
            } else if !story.is_custom() {
                set_url(&merged_link(&page_query(), story, index, &forks));
            }
        }
    });
}

/// While the story plays, the next shown step comes after the pace's
/// milliseconds; at the end it stops. (`at`: the step, the view and the
/// pace, which restart the timer when they change.)
#[hook]
fn use_auto_play(
    playing: UseStateHandle<bool>,
    at: (usize, Filter, u32),
    next_shown: Option<usize>,
    go: Callback<usize>,
) {
    use_effect_with((*playing, at), move |&(on, (_, _, pace))| {
        let timer = on.then(|| {
            gloo_timers::callback::Timeout::new(pace, move || match next_shown {
                Some(next) => go.emit(next),
                None => playing.set(false),
            })
        });
        move || drop(timer)
    });
}

/// A scenario file the learner opens (the picker or a drop on the section)
/// plays as a story; one that is not valid says where and why.
fn file_opener(
    dispatch: Dispatch,
    playing: UseStateHandle<bool>,
    scenario_problem: UseStateHandle<Option<String>>,
) -> Rc<dyn Fn(web_sys::File)> {
    Rc::new(move |file: web_sys::File| {
        let dispatch = dispatch.clone();
        let playing = playing.clone();
        let problem = scenario_problem.clone();
        wasm_bindgen_futures::spawn_local(async move {
            let name = file.name();
            if file.size() > crate::sequence_model::MAX_SCENARIO_FILE_BYTES as f64 {
                problem.set(Some(format!(
                    "{name} is {} bytes; kafkascope opens scenario files of at most {}",
                    file.size(),
                    crate::sequence_model::MAX_SCENARIO_FILE_BYTES
                )));
                return;
            }
            let text = match wasm_bindgen_futures::JsFuture::from(file.text()).await {
                Ok(text) => text.as_string().unwrap_or_default(),
                Err(_) => {
                    problem.set(Some(format!("{name} could not be read")));
                    return;
                }
            };
            match crate::sequence_model::custom_story(&name, &text) {
                Ok(chosen) => {
                    problem.set(None);
                    playing.set(false);
                    dispatch(CursorAction::Open {
                        story: chosen,
                        step: None,
                        filter: Filter::default(),
                    });
                }
                Err(error) => problem.set(Some(error)),
            }
        });
    })
}

/// The section's keys: ← → a step, Shift+← → a key moment, [ ] (or Page
/// Up and Down) a chapter; not while a control has the focus.
fn step_keys(dispatch: Dispatch, any: bool) -> Callback<KeyboardEvent> {
    Callback::from(move |event: KeyboardEvent| {
        let in_control = event
            .target()
            .and_then(|target| target.dyn_into::<web_sys::Element>().ok())
            .is_some_and(|element| matches!(element.tag_name().as_str(), "SELECT" | "INPUT" | "TEXTAREA"));
        if in_control || !any {
            return;
        }
        let action = match (event.key().as_str(), event.shift_key()) {
            ("ArrowRight", false) => CursorAction::By(1),
            ("ArrowLeft", false) => CursorAction::By(-1),
            ("ArrowRight", true) => CursorAction::Moment(true),
            ("ArrowLeft", true) => CursorAction::Moment(false),
            ("]" | "PageDown", _) => CursorAction::Chapter(true),
            ("[" | "PageUp", _) => CursorAction::Chapter(false),
            _ => return,
        };
        event.prevent_default();
        dispatch(action);
    })
}

/// Scenario files: one the learner opens (the picker or a drop on the
/// section) or the address names (`?scenario=`) plays as a story; one that
/// is not valid says where and why.
struct ScenarioFiles {
    problem: Option<String>,
    /// Whether `?scenario=` is still being fetched.
    loading: bool,
    on_file: Callback<Event>,
    on_drop: Callback<DragEvent>,
}

#[hook]
fn use_scenario_files(
    dispatch: Dispatch,
    playing: UseStateHandle<bool>,
    cursor: Rc<RefCell<Option<StoryCursor>>>,
    from_address: FromAddress,
) -> ScenarioFiles {
    let scenario_problem = use_state(|| None::<String>);
    let open_file = file_opener(dispatch.clone(), playing, scenario_problem.clone());
    let loading = use_scenario_from_address(dispatch, cursor, scenario_problem.clone(), from_address);
    ScenarioFiles {
        problem: (*scenario_problem).clone(),
        loading,
        on_file: file_input(open_file.clone()),
        on_drop: file_drop(open_file),
    }
}

/// A story fetched from the address, and the address as the query has it.
type FromAddress = Rc<RefCell<Option<(&'static crate::sequence_model::StoryDef, String)>>>;

/// The steps section. The story the address names opens at once when it
/// is as small as a shipped story; a larger one (a costly scenario, a link
/// with many forks) plays a slice at a time, its progress shown with a
/// Stop, and the page answers meanwhile.
#[function_component(SequenceSteps)]
pub fn sequence_steps() -> Html {
    let first = use_mut_ref(|| {
        StoryLoader::from_link(&page_query()).ok().map(|mut loader| {
            loader.slice(OPEN_WORK);
            loader
        })
    });
    let cursor: Rc<RefCell<Option<StoryCursor>>> = use_mut_ref(|| None);
    let redraw = use_force_update();
    // A loader that is done opens its story.
    if first.borrow().as_ref().is_some_and(StoryLoader::is_done) {
        let done = first.borrow_mut().take().expect("a loader");
        *cursor.borrow_mut() = done
            .loaded()
            .ok()
            .and_then(|loaded| StoryCursor::from_loaded(loaded).ok());
    }
    let progress = first.borrow().as_ref().map(StoryLoader::progress);
    let on_first: Rc<dyn Fn(bool)> = Rc::new(move |stop: bool| {
        if let Some(loader) = first.borrow_mut().as_mut() {
            if stop {
                loader.stop();
            } else {
                loader.slice(SLICE_WORK);
            }
        }
        redraw.force_update();
    });
    crate::cluster_panel::use_slices(on_first.clone(), progress.map(|_| false));
    match progress {
        Some(progress) => first_loading(progress, on_first),
        None => html! { <OpenSteps cursor={SharedCursor(cursor)} /> },
    }
}

/// The steps section while its first story plays: how far, and a Stop
/// that opens it as far as it has played.
fn first_loading(progress: LoadProgress, on_first: Rc<dyn Fn(bool)>) -> Html {
    html! {
        <section id="steps" class="card steps wide" aria-labelledby="steps-title" data-testid="steps" data-story-loading="true">
            <h2 id="steps-title">{ "Stories: a run, message by message" }</h2>
            { opening_line(progress, Callback::from(move |_: MouseEvent| on_first(true))) }
        </section>
    }
}

/// The line that says a story is opening, with its Stop.
fn opening_line(progress: LoadProgress, on_stop: Callback<MouseEvent>) -> Html {
    html! {
        <p class="replay-progress" role="status" data-testid="story-loading">
            <progress max={progress.until_ms.to_string()} value={progress.now_ms.to_string()} aria-label="story played" />
            { format!(" {} ", progress.text()) }
            <button type="button" data-testid="story-loading-stop" onclick={on_stop}>{ "Stop and show what has played" }</button>
        </p>
    }
}

/// The cursor the open steps share with the section (equal when it is the
/// same one).
#[derive(Clone)]
pub struct SharedCursor(Rc<RefCell<Option<StoryCursor>>>);

impl PartialEq for SharedCursor {
    fn eq(&self, other: &Self) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

#[derive(Properties, PartialEq)]
pub struct OpenStepsProps {
    pub cursor: SharedCursor,
}

/// The steps section with a story open.
#[function_component(OpenSteps)]
fn open_steps(props: &OpenStepsProps) -> Html {
    let cursor = props.cursor.0.clone();
    use_held_for_scenario();
    let redraw = use_force_update();
    let playing = use_state(|| false);
    // The side map is laid out for its own box.
    let map_box = use_node_ref();
    let map_width = crate::map::use_map_width(map_box.clone());
    // So is the diagram: its text is drawn at its own size, never scaled down.
    let diagram_box = use_node_ref();
    let diagram_width = crate::map::use_map_width(diagram_box.clone());
    use_scrolled_to_selected(map_box.clone());
    // How fast the story plays: twice the multiple of its default pace
    // (1 is 0.5×, 2 is 1×, 4 is 2×, 8 is 4×).
    let pace = use_state(|| 2u32);
    // Every move goes through the cursor, which keeps the recording at
    // the step shown.
    let dispatch = cursor_dispatch(cursor.clone(), redraw);

    use_host_commands(dispatch.clone(), cursor.clone(), playing.clone());
    // Another story opening plays a slice at a time.
    let opening = cursor
        .borrow()
        .as_ref()
        .and_then(|current| current.opening().map(|(_, progress)| progress));
    crate::cluster_panel::use_slices(dispatch.clone(), opening.map(|_| CursorAction::PlaySlice));
    let borrowed = cursor.borrow();
    let Some(current) = borrowed.as_ref() else {
        return unloaded();
    };
    let story_def = current.story();
    let story_run = current.run();
    let total = story_run.steps.len();
    let index = current.index();
    let filter = current.filter().clone();
    use_step_events(story_def.id.clone(), index, total);
    let forks_made = current.forks().to_vec();
    let problem = current.problem().map(str::to_string);
    let open_problem = current.open_problem().map(str::to_string);
    let why_open = current.why_open();
    let visible = current.visible();
    let place = visible.partition_point(|&shown| shown < index);
    let next_shown = current.next_shown();
    let every_step = current.every_step();
    let outline = story_run.outline.clone();
    let pace_ms = outline.pace_ms() * 2 / (*pace).max(1);
    // A story fetched from the address (`?scenario=…`) has a link: the same
    // address at a step. (The story and the address as the query has it.)
    let from_address = use_mut_ref(|| None::<(&'static crate::sequence_model::StoryDef, String)>);
    let (scenario_raw, deep_link) = address_of(&from_address, story_def, index, &forks_made);
    use_address_bar(
        deep_link.clone(),
        scenario_raw.clone(),
        story_def,
        index,
        forks_made.clone(),
    );
    use_follow_links(dispatch.clone(), playing.clone());
    let on_action = {
        let dispatch = dispatch.clone();
        Callback::from(move |action: CursorAction| dispatch(action))
    };
    let go = on_action.reform(CursorAction::Go);
    use_auto_play(
        playing.clone(),
        (index, filter.clone(), pace_ms),
        next_shown,
        go.clone(),
    );
    let (on_play, on_pace) = play_callbacks(playing.clone(), pace.setter());
    let files = use_scenario_files(dispatch.clone(), playing.clone(), cursor.clone(), from_address.clone());
    let scenario_loading = files.loading;
    let on_drag_over = Callback::from(|event: DragEvent| event.prevent_default());
    let on_story = story_picker(dispatch.clone(), playing.clone());
    // A filter that hides the current step moves to the nearest shown one.
    let on_filter =
        on_action.reform(|(field, value): (FilterField, Option<String>)| CursorAction::Filter(field, value));
    let on_keydown = step_keys(dispatch.clone(), !visible.is_empty());

    // The run at the current step (the cursor keeps its recording there).
    let step = story_run.steps.get(index).cloned();
    let view = story_run.recording.simulation().view();
    let trace_hash = story_run.trace_hash();
    let why = if why_open {
        story_run.why_lines(index)
    } else {
        Vec::new()
    };
    let rows = window_rows(story_run, &visible, place, filter.startup_open);
    let (partitions, nodes, names) = filter_options(story_run);
    // The diagram's cast: everyone the steps shown take part in, so a
    // lifeline stays put while the window of steps moves.
    let cast = lifelines(visible.iter().filter_map(|&shown| story_run.steps.get(shown)));
    let roles = crate::sequence_model::roles(
        &view,
        &story_run.steps,
        filter.partition.as_deref().or(story_def.focus()),
    );
    let forks = story_run.forks.clone();
    let brokers = story_run.scenario.config.brokers;
    let description = story_description(story_run, story_def);
    let title = story_run.scenario.name.clone();
    let mermaid_source = {
        let shown: Vec<Step> = rows.iter().map(|(_, step)| step.clone()).collect();
        Callback::from(move |_: ()| mermaid(&shown.iter().collect::<Vec<_>>()))
    };
    let jepsen = story_run.jepsen.clone();
    drop(borrowed);
    let model = Rc::new(side_model(&view, step.as_ref(), map_width));
    let groups = crate::cluster_model::describe_groups(&view);
    let compact = crate::view_model::compact_story(&crate::export::page_query());

    html! {
        <section id="steps" class="card steps wide" aria-labelledby="steps-title" tabindex="0" onkeydown={on_keydown}
            data-testid="steps" data-story={story_def.id.clone()} data-step={(index + 1).to_string()} data-steps={total.to_string()} data-shown={visible.len().to_string()} data-pace-ms={pace_ms.to_string()}
            data-opening={(outline.opening_step() + 1).to_string()}
            data-trace-hash={format!("{trace_hash:016x}")} data-time={view.time_ms.to_string()}
            data-scenario-loading={scenario_loading.to_string()}
            ondrop={files.on_drop} ondragover={on_drag_over}>
            <h2 id="steps-title" class={classes!(compact.then_some("visually-hidden"))}>{ "Stories: a run, message by message" }</h2>
            { if let Some(problem) = &problem { html! { <p class="error" role="alert" data-testid="link-problem">{ problem }</p> } } else { html! {} } }
            { opening.map_or_else(Html::default, |progress| opening_line(progress, on_action.reform(|_: MouseEvent| CursorAction::StopOpening))) }
            <crate::step_parts::StoryBar compact={compact} story={story_def.id.clone()} custom={story_def.is_custom().then(|| format!("{} (from {})", story_def.title(), story_def.file))}
                title={title} description={description} problem={files.problem.or(open_problem)} on_story={on_story} on_file={files.on_file} />
            <crate::step_parts::StepControls playing={*playing} pace={*pace} on_action={on_action.clone()} on_play={on_play} on_pace={on_pace}
                // The step's own number (the one links and Learn name), and
                // where it sits among the steps shown.
                position={position_text(index, total, place, visible.len(), view.time_ms)}
                link={(!(story_def.is_custom() && scenario_raw.is_none())).then(|| deep_link.clone())} />
            <crate::story_timeline::StoryTimeline outline={outline.clone()} visible={visible.clone()} current={index} total={total}
                every={filter.every} filtered={every_step && !filter.every} on_action={on_action.clone()} />
            <crate::step_parts::StepFilters {compact} partitions={partitions} nodes={nodes.clone()}
                names={names} filter={filter.clone()} shown={visible.len()} total={total} on_filter={on_filter} />
            <crate::step_parts::StepCaption step={step.clone()} folded_startup={outline.folded_startup(index, filter.startup_open).cloned()}
                in_open_startup={filter.startup_open && !filter.every && outline.startup.as_ref().is_some_and(|startup| startup.folded.contains(&index))}
                why_open={why_open} why={why.clone()} on_action={on_action.clone()} />
            <div class="steps-layout">
                <div class="diagram-frame" ref={diagram_box}>
                    <SequenceDiagram rows={rows} roles={roles} current={index} on_pick={go.clone()} narrow={crate::cluster_panel::is_phone()} box_width={diagram_width} cast={cast} />
                </div>
                { side_map(map_box, model, step.as_ref().and_then(highlight), groups, on_action.clone()) }
            </div>
            <crate::step_parts::ForkBar brokers={brokers} forks={forks} on_action={on_action.clone()} mermaid={mermaid_source} />
            <crate::step_parts::JepsenVerdict panel={jepsen} on_action={on_action.clone()} />

        </section>
    }
}

/// What the step touched stays in view in the side map's box.
#[hook]
fn use_scrolled_to_selected(map_box: NodeRef) {
    use_effect(move || crate::map::scroll_to_selected(&map_box));
}

/// The side map: the cluster right after the step, what it touched
/// highlighted, and the groups' positions.
fn side_map(
    map_box: NodeRef,
    model: Rc<crate::map_model::MapModel>,
    selected: Option<Selection>,
    groups: Vec<crate::cluster_model::GroupRow>,
    on_action: Callback<CursorAction>,
) -> Html {
    // A click on a box shows only the steps it takes part in; on a replica
    // row, only its partition's (the filters above say so and undo it).
    let on_select = Callback::from(move |selection: Selection| match selection {
        Selection::Node(node) => on_action.emit(CursorAction::Filter(FilterField::Node, Some(node.to_string()))),
        Selection::Replica { partition, .. } => {
            on_action.emit(CursorAction::Filter(FilterField::Partition, Some(partition)))
        }
        Selection::Group(_) | Selection::Edge { .. } => {}
    });
    html! {
        <div class="steps-map" ref={map_box}>
            <ClusterMap model={model} selected={selected} on_select={on_select} reduced_motion={true} />
            <p class="legend muted">{ "The cluster right after this step; the highlighted edge or replica is what the step touched. Click a box to see only its steps, or a replica row for its partition's." }</p>
            <crate::step_parts::StepGroups groups={groups} />
        </div>
    }
}

/// The link to this step: a story fetched from the address (`?scenario=…`)
/// links to the same address at a step (the address as the query has it,
/// and the link).
fn address_of(
    from_address: &FromAddress,
    story_def: &'static crate::sequence_model::StoryDef,
    index: usize,
    forks: &[crate::sequence_model::ForkLink],
) -> (Option<String>, String) {
    let scenario_raw = from_address
        .borrow()
        .as_ref()
        .filter(|(story, _)| std::ptr::eq(*story, story_def))
        .map(|(_, raw)| raw.clone());
    let deep_link = match &scenario_raw {
        Some(raw) => crate::sequence_model::merged_scenario_link("", raw, index, forks),
        None => link(story_def, index, forks),
    };
    (scenario_raw, deep_link)
}

/// What the filters offer: every partition, lifeline and message name of
/// the story's steps.
fn filter_options(story_run: &crate::sequence_model::StoryRun) -> (Vec<String>, Vec<NodeId>, Vec<String>) {
    let partitions: std::collections::BTreeSet<String> = story_run
        .steps
        .iter()
        .flat_map(|step| step.partitions.iter().cloned())
        .gather();
    let names: std::collections::BTreeSet<String> = story_run.steps.iter().map(|step| step.name.clone()).gather();
    (
        partitions.into_iter().collect(),
        lifelines(story_run.steps.iter()),
        names.into_iter().collect(),
    )
}

/// A scenario without a description says what its story teaches.
fn story_description(
    story_run: &crate::sequence_model::StoryRun,
    story_def: &crate::sequence_model::StoryDef,
) -> String {
    match story_run.scenario.description.trim() {
        "" => story_def.story().learn.clone(),
        text => text.to_string(),
    }
}

/// Play or pause, and the pace.
fn play_callbacks(playing: UseStateHandle<bool>, pace: UseStateSetter<u32>) -> (Callback<()>, Callback<u32>) {
    (
        Callback::from(move |_: ()| playing.set(!*playing)),
        Callback::from(move |value: u32| pace.set(value)),
    )
}

/// The page for a story that could not be loaded.
fn unloaded() -> Html {
    html! {
        <section id="steps" class="card wide" data-testid="steps">
            <h2>{ "Sequence steps" }</h2>
            <p class="error" role="alert">{ "This story could not be loaded." }</p>
        </section>
    }
}

/// A `?scenario=` address: the host page hears nothing, and its commands
/// wait, from the first render until the file has loaded or failed.
#[hook]
fn use_held_for_scenario() {
    use_mut_ref(|| {
        let held = crate::view_model::query_param(&page_query(), crate::sequence_model::SCENARIO_PARAM).is_some();
        if held {
            crate::host_api::bridge::hold();
        }
        held
    });
}

/// Every move goes through the cursor, which keeps the recording at the
/// step shown.
fn cursor_dispatch(cursor: Rc<RefCell<Option<StoryCursor>>>, redraw: UseForceUpdateHandle) -> Dispatch {
    Rc::new(move |action: CursorAction| {
        if let Some(cursor) = cursor.borrow_mut().as_mut() {
            cursor.apply(action);
        }
        redraw.force_update();
    })
}

/// The host page hears each step, and the end of the story.
#[hook]
fn use_step_events(story: String, index: usize, total: usize) {
    use_effect_with((story, index, total), |(story, index, total)| {
        crate::host_api::bridge::emit(&crate::host_api::HostEvent::StepChanged {
            story: story.clone(),
            step: index + 1,
            steps: *total,
        });
        // A course package's story reports its step (and its end).
        crate::course::story_step(index + 1, *total);
        if index + 1 == *total {
            crate::host_api::bridge::emit(&crate::host_api::HostEvent::StoryFinished { story: story.clone() });
        }
    });
}

/// The file picker: the chosen scenario file opens as a story.
fn file_input(open_file: Rc<dyn Fn(web_sys::File)>) -> Callback<Event> {
    Callback::from(move |event: Event| {
        let input = event.target_unchecked_into::<web_sys::HtmlInputElement>();
        if let Some(file) = input.files().and_then(|files| files.get(0)) {
            open_file(file);
        }
        input.set_value("");
    })
}

/// A scenario file dropped on the section opens as a story.
fn file_drop(open_file: Rc<dyn Fn(web_sys::File)>) -> Callback<DragEvent> {
    Callback::from(move |event: DragEvent| {
        if let Some(file) = event
            .data_transfer()
            .and_then(|data| data.files())
            .and_then(|files| files.get(0))
        {
            event.prevent_default();
            open_file(file);
        }
    })
}

/// The story picker: a shipped story, opened on its first chapter.
fn story_picker(dispatch: Dispatch, playing: UseStateHandle<bool>) -> Callback<Event> {
    Callback::from(move |event: Event| {
        let id = event.target_unchecked_into::<web_sys::HtmlSelectElement>().value();
        if let Some(chosen) = story(&id) {
            playing.set(false);
            dispatch(CursorAction::Open {
                story: chosen,
                step: None,
                filter: Filter::default(),
            });
        }
    })
}

/// The diagram's rows: a window of the steps shown around the current one,
/// the folded start-up drawn as one step.
fn window_rows(
    story_run: &crate::sequence_model::StoryRun,
    visible: &[usize],
    place: usize,
    startup_open: bool,
) -> Vec<(usize, Step)> {
    visible
        .iter()
        .skip(place.saturating_sub(BEFORE))
        .take(BEFORE + AFTER + 1)
        .map(|&shown| {
            let mut row = story_run.steps[shown].clone();
            if let Some(startup) = story_run.outline.folded_startup(shown, startup_open) {
                row.kind = StepKind::Input {
                    text: format!("the cluster starts ({} steps folded)", startup.folded.len()),
                };
            }
            (shown, row)
        })
        .collect()
}

/// The side map after a step, laid out for its box; Kafka's internal
/// topics are drawn when the step is about one of them.
fn side_model(
    view: &kafkascope_engine::sim::view::ClusterView,
    step: Option<&Step>,
    width: f64,
) -> crate::map_model::MapModel {
    let internal_topics = step.and_then(highlight).is_some_and(
        |selection| matches!(&selection, Selection::Replica { partition, .. } if partition.starts_with("__")),
    );
    layout_fit(
        view,
        view.time_ms as f64,
        crate::map_model::Fit { width, internal_topics },
    )
}

/// The step's own number (the one links and Learn name), and where it
/// sits among the steps shown.
fn position_text(index: usize, total: usize, place: usize, shown: usize, time_ms: u64) -> String {
    if shown == total {
        format!("step {} of {} · t = {} ms", index + 1, total, time_ms)
    } else {
        format!(
            "step {} of {} · {} of the {} shown · t = {} ms",
            index + 1,
            total,
            place + 1,
            shown,
            time_ms
        )
    }
}
