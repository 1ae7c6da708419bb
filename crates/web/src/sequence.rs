//! The "Sequence steps" section: a guided story played step by step, its
//! sequence diagram drawn from the run's trace, the map of the cluster at
//! the current step, a scrubber to rewind, forks, filters, the "why"
//! chains, deep links and the Mermaid export. All the data comes from
//! [`crate::sequence_model`]; the map is the same [`ClusterMap`] the live
//! section draws.

use std::cell::RefCell;
use std::rc::Rc;

use kafkascope_engine::replication::high_watermark::Acks;
use kafkascope_engine::sim::config::{ConfigChange, Input};
use kafkascope_engine::sim::types::NodeId;
use wasm_bindgen::JsCast;
use yew::prelude::*;

use crate::export::MermaidExport;
use crate::map::ClusterMap;
use crate::map_model::{layout_fit, requester_first};
use crate::selection::{as_broker, parse_node, Selection};
use crate::sequence_model::{
    first_story, lifelines, link, link_problem, merged_link, mermaid, nearest_shown, parse_forks, parse_link, stories,
    story, Filter, ForkLink, Step, StepKind, StoryDef, StoryRun, NAVIGATE_EVENT,
};

fn page_query() -> String {
    web_sys::window()
        .and_then(|window| window.location().search().ok())
        .unwrap_or_default()
}

fn set_url(query: &str) {
    if let Some(history) = web_sys::window().and_then(|window| window.history().ok()) {
        let _ = history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(query));
    }
}

/// What opening a story changes (from the picker, a Learn link or the back
/// button): the run (started afresh unless it is that story already, and
/// then without forks), the step, the filter, play stopped.
#[derive(Clone)]
struct StoryOpener {
    run: Rc<RefCell<Option<StoryRun>>>,
    forks: Rc<RefCell<Vec<ForkLink>>>,
    current: UseStateHandle<usize>,
    filter: UseStateHandle<Filter>,
    playing: UseStateHandle<bool>,
    redraw: UseForceUpdateHandle,
}

impl StoryOpener {
    fn open(&self, chosen: &'static StoryDef, step: usize, filter: Filter) {
        let same = self.run.borrow().as_ref().is_some_and(|run| run.story.id == chosen.id);
        if !same {
            *self.run.borrow_mut() = StoryRun::start(chosen).ok();
            self.forks.borrow_mut().clear();
        }
        self.playing.set(false);
        self.filter.set(filter);
        self.current.set(step);
        self.redraw.force_update();
    }
}

/// The steps `filter` keeps, as indices into all of the run's steps.
fn shown_steps(run: Option<&StoryRun>, filter: &Filter) -> Vec<usize> {
    run.map(|run| {
        run.steps
            .iter()
            .enumerate()
            .filter(|(_, step)| filter.keeps(step))
            .map(|(index, _)| index)
            .collect()
    })
    .unwrap_or_default()
}

/// Steps shown before and after the current one in the diagram.
const BEFORE: usize = 8;
const AFTER: usize = 12;
const ROW_H: f64 = 28.0;
const TOP: f64 = 46.0;

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
}

/// One row's click and Enter/Space: pick that step.
fn pick_handlers(on_pick: &Callback<usize>, index: usize) -> (Callback<MouseEvent>, Callback<KeyboardEvent>) {
    let pick = {
        let on_pick = on_pick.clone();
        Callback::from(move |_: MouseEvent| on_pick.emit(index))
    };
    let key = {
        let on_pick = on_pick.clone();
        Callback::from(move |event: KeyboardEvent| {
            if matches!(event.key().as_str(), "Enter" | " ") {
                event.prevent_default();
                event.stop_propagation();
                on_pick.emit(index);
            }
        })
    };
    (pick, key)
}

/// The steps around the current one as a list, for a phone: time, then
/// who sends what to whom, or what changed where.
fn sequence_list(props: &DiagramProps) -> Html {
    html! {
        <ol class="sequence-list" data-testid="sequence-diagram" aria-label="the steps around the current one">
            { for props.rows.iter().map(|(index, step)| {
                let current = *index == props.current;
                let (pick, key) = pick_handlers(&props.on_pick, *index);
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
    let lines = lifelines(props.rows.iter().map(|(_, step)| step));
    let column = if lines.is_empty() {
        140.0
    } else {
        (880.0 / lines.len() as f64).clamp(96.0, 150.0)
    };
    // A gutter on the left for the times.
    let gutter = 54.0;
    let width = (gutter + 20.0 + column * lines.len() as f64).max(600.0);
    let height = TOP + props.rows.len() as f64 * ROW_H + 16.0;
    let x_of = |node: &NodeId| {
        lines
            .iter()
            .position(|line| line == node)
            .map_or(gutter, |index| gutter + column * (index as f64 + 0.5))
    };
    html! {
        <svg class="sequence" data-testid="sequence-diagram" viewBox={format!("0 0 {width:.0} {height:.0}")}
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
                    <text x={format!("{x:.1}")} y="31" class="lifeline-role">{ short(props.roles.get(line).map_or("", String::as_str), (column / 5.0) as usize) }</text>
                    <line x1={format!("{x:.1}")} x2={format!("{x:.1}")} y1="38" y2={format!("{:.1}", height - 4.0)} />
                </g> }
            }) }
            { for props.rows.iter().enumerate().map(|(row, (index, step))| {
                let y = TOP + row as f64 * ROW_H;
                let current = *index == props.current;
                let (pick, key) = pick_handlers(&props.on_pick, *index);
                let body = match &step.kind {
                    StepKind::Arrow { from, to, label, dropped, .. } => {
                        let (x1, x2) = (x_of(from), x_of(to));
                        let end = if *dropped { x1 + (x2 - x1) * 0.6 } else { x2 };
                        html! { <>
                            <line class={classes!("message", dropped.then_some("dropped"))} x1={format!("{x1:.1}")} x2={format!("{end:.1}")}
                                y1={format!("{:.1}", y + 16.0)} y2={format!("{:.1}", y + 16.0)} marker-end={(!dropped).then_some("url(#seq-arrow)")} />
                            { if *dropped { html! { <text class="lost" x={format!("{end:.1}")} y={format!("{:.1}", y + 20.0)}>{ "✗" }</text> } } else { html! {} } }
                            <text class="label" x={format!("{:.1}", (x1 + x2) / 2.0)} y={format!("{:.1}", y + 12.0)}>{ short(label, ((x2 - x1).abs() / 5.2) as usize + 14) }</text>
                        </> }
                    }
                    StepKind::Note { over, text } => {
                        let x = x_of(over);
                        html! { <>
                            <rect class={classes!("note", step.outcome)} x={format!("{:.1}", x - column / 2.0 + 6.0)} y={format!("{:.1}", y + 5.0)}
                                width={format!("{:.1}", column - 12.0)} height="18" rx="3" />
                            <text class="note-text" x={format!("{x:.1}")} y={format!("{:.1}", y + 18.0)}>{ short(text, (column / 5.6) as usize) }</text>
                        </> }
                    }
                    StepKind::Input { text } => html! { <>
                        <rect class="input" x="4" y={format!("{:.1}", y + 4.0)} width={format!("{:.1}", width - 8.0)} height="20" rx="3" />
                        <text class="note-text" x={format!("{:.1}", width / 2.0)} y={format!("{:.1}", y + 18.0)}>{ format!("▶ {text}") }</text>
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

/// The faults and knob changes a fork can start with.
fn fork_choices(brokers: u32) -> Vec<(String, String)> {
    let mut choices: Vec<(String, String)> = Vec::new();
    for broker in 1..=brokers {
        choices.push((
            format!("kill-{broker}"),
            format!("kill {broker_broker}", broker_broker = as_broker(broker)),
        ));
        choices.push((
            format!("restart-{broker}"),
            format!("restart {broker_broker}", broker_broker = as_broker(broker)),
        ));
    }
    choices.push(("acks-1".into(), "set acks=1".into()));
    choices.push(("acks-all".into(), "set acks=all".into()));
    choices.push(("unclean".into(), "enable unclean.leader.election".into()));
    choices.push(("produce".into(), "produce 10 records".into()));
    choices.push(("slow-1".into(), "slow broker-1 by 300 ms".into()));
    choices
}

fn fork_inputs(choice: &str) -> Vec<Input> {
    let number = |prefix: &str| choice.strip_prefix(prefix).and_then(|id| id.parse::<u32>().ok());
    if let Some(broker) = number("kill-") {
        vec![Input::KillBroker { broker }]
    } else if let Some(broker) = number("restart-") {
        vec![Input::RestartBroker { broker }]
    } else {
        match choice {
            "acks-1" => vec![Input::SetConfig(ConfigChange::Acks {
                producer: 0,
                acks: Acks::Leader,
            })],
            "acks-all" => vec![Input::SetConfig(ConfigChange::Acks {
                producer: 0,
                acks: Acks::All,
            })],
            "unclean" => vec![Input::SetConfig(ConfigChange::UncleanLeaderElection { enable: true })],
            "produce" => vec![Input::Produce {
                producer: 0,
                key: None,
                count: 10,
                bytes: 100,
            }],
            "slow-1" => vec![Input::SlowNode {
                node: NodeId::Broker(1),
                extra_latency_ms: 300,
            }],
            _ => Vec::new(),
        }
    }
}

/// The section.
#[function_component(SequenceSteps)]
pub fn sequence_steps() -> Html {
    let query = use_memo((), |_| page_query());
    let (linked_story, linked_step) = parse_link(&query);
    // A link's forks are replayed as they were made; one that names no
    // such step or choice stops the replay there and says so.
    let fork_problem = use_mut_ref(|| None::<String>);
    let forks: Rc<RefCell<Vec<ForkLink>>> = use_mut_ref(Vec::new);
    let run = {
        let fork_problem = fork_problem.clone();
        let forks = forks.clone();
        let query = query.clone();
        use_mut_ref(move || {
            let mut run = StoryRun::start(linked_story.unwrap_or(first_story())).ok()?;
            let linked_forks = parse_forks(&query).unwrap_or_else(|problem| {
                *fork_problem.borrow_mut() = Some(problem);
                Vec::new()
            });
            for (step, choice) in linked_forks {
                let label = fork_choices(run.scenario.config.brokers)
                    .into_iter()
                    .find(|(value, _)| *value == choice)
                    .map(|(_, label)| label);
                match label {
                    Some(label) if step < run.steps.len() => {
                        run.fork(step, fork_inputs(&choice), label);
                        forks.borrow_mut().push((step, choice));
                    }
                    _ => {
                        *fork_problem.borrow_mut() = Some(format!(
                            "This link's fork \"{}:{choice}\" names no such step or choice; the story opens without it.",
                            step + 1
                        ));
                        break;
                    }
                }
            }
            Some(run)
        })
    };
    let redraw = use_force_update();
    let current = use_state(|| linked_step.map_or(0, |step| step.saturating_sub(1)));
    // A link to a step opens unfiltered, so the step is in view.
    let filter = use_state(|| Filter {
        partition: linked_step
            .is_none()
            .then(|| linked_story.unwrap_or(first_story()).focus().map(str::to_string))
            .flatten(),
        ..Filter::default()
    });
    let why_open = use_state(|| false);
    let playing = use_state(|| false);
    // Real milliseconds per step while the story plays.
    let pace = use_state(|| 900u32);
    let fork_choice = use_state(|| "kill-1".to_string());

    // A link that names no story or no such step says so, until the
    // learner moves.
    let problem = {
        let steps = run.borrow().as_ref().map_or(0, |run| run.steps.len());
        let query = query.clone();
        let fork_problem = fork_problem.borrow().clone();
        use_state(move || link_problem(&query, steps).or(fork_problem))
    };
    let loaded = run.borrow().as_ref().map(|run| (run.story, run.steps.len()));
    let (story_def, total) = loaded.unwrap_or((first_story(), 0));
    let index = (*current).min(total.saturating_sub(1));
    let deep_link = link(story_def, index, &forks.borrow());
    // The address bar follows the step once the learner moves, so it can be
    // shared; loading the page never rewrites it (a preset, `play=0` or a
    // section's #anchor stay as they were).
    let loaded_once = use_mut_ref(|| false);
    {
        let query_story = story_def;
        let forks = forks.clone();
        use_effect_with(deep_link.clone(), move |_| {
            if std::mem::replace(&mut *loaded_once.borrow_mut(), true) {
                set_url(&merged_link(&page_query(), query_story, index, &forks.borrow()));
            }
        });
    }
    // A Learn link changes the address without loading the page again and
    // says so with NAVIGATE_EVENT; the back button too (`popstate`). Either
    // way the story and step the address names open here.
    let opener = StoryOpener {
        run: run.clone(),
        forks: forks.clone(),
        current: current.clone(),
        filter: filter.clone(),
        playing: playing.clone(),
        redraw: redraw.clone(),
    };
    {
        let opener = opener.clone();
        let problem = problem.clone();
        use_effect_with((), move |_| {
            let follow = wasm_bindgen::closure::Closure::<dyn Fn()>::new(move || {
                problem.set(None);
                let (linked, step) = parse_link(&page_query());
                let Some(chosen) = linked else { return };
                // A link to a step opens unfiltered, so the step is in view.
                opener.open(chosen, step.map_or(0, |step| step.saturating_sub(1)), Filter::default());
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

    // The steps the filter keeps, as indices into all steps.
    let visible = shown_steps(run.borrow().as_ref(), &filter);
    let place = visible.partition_point(|&shown| shown < index);

    let go = {
        let current = current.clone();
        let why_open = why_open.clone();
        let problem = problem.clone();
        Callback::from(move |target: usize| {
            problem.set(None);
            why_open.set(false);
            current.set(target);
        })
    };
    // Previous and next move within the filtered steps.
    let step_by = |delta: isize| {
        let go = go.clone();
        let visible = visible.clone();
        Callback::from(move |_: MouseEvent| {
            if visible.is_empty() {
                return;
            }
            let at = visible.partition_point(|&shown| shown < index);
            let at = if visible.get(at) == Some(&index) {
                at as isize
            } else {
                at as isize - i32::from(delta > 0) as isize
            };
            let next = (at + delta).clamp(0, visible.len() as isize - 1) as usize;
            go.emit(visible[next]);
        })
    };
    let first = {
        let go = go.clone();
        let target = visible.first().copied().unwrap_or(0);
        Callback::from(move |_: MouseEvent| go.emit(target))
    };
    let last = {
        let go = go.clone();
        let target = visible.last().copied().unwrap_or(0);
        Callback::from(move |_: MouseEvent| go.emit(target))
    };
    let on_scrub = {
        let go = go.clone();
        let visible = visible.clone();
        Callback::from(move |event: InputEvent| {
            let value = event.target_unchecked_into::<web_sys::HtmlInputElement>().value();
            if let Some(&target) = value.parse::<usize>().ok().and_then(|at| visible.get(at)) {
                go.emit(target);
            }
        })
    };
    // Auto-advance while playing.
    {
        let go = go.clone();
        let playing_handle = playing.clone();
        let visible = visible.clone();
        use_effect_with(
            (*playing, index, filter.clone(), *pace),
            move |&(playing, index, _, pace)| {
                let timer = playing.then(|| {
                    gloo_timers::callback::Timeout::new(pace, move || {
                        let at = visible.partition_point(|&shown| shown <= index);
                        match visible.get(at) {
                            Some(&next) => go.emit(next),
                            None => playing_handle.set(false),
                        }
                    })
                });
                move || drop(timer)
            },
        );
    }
    let on_pace = {
        let pace = pace.clone();
        Callback::from(move |event: Event| {
            if let Ok(value) = event
                .target_unchecked_into::<web_sys::HtmlSelectElement>()
                .value()
                .parse()
            {
                pace.set(value);
            }
        })
    };
    let toggle_play = {
        let playing = playing.clone();
        Callback::from(move |_: MouseEvent| playing.set(!*playing))
    };
    let on_story = Callback::from(move |event: Event| {
        let id = event.target_unchecked_into::<web_sys::HtmlSelectElement>().value();
        if let Some(chosen) = story(&id) {
            let focus = Filter {
                partition: chosen.focus().map(str::to_string),
                ..Filter::default()
            };
            opener.open(chosen, 0, focus);
        }
    });
    // A filter that hides the current step moves to the nearest shown one.
    let filter_field = |field: &'static str| {
        let filter = filter.clone();
        let run = run.clone();
        let current = current.clone();
        Callback::from(move |event: Event| {
            let value = event.target_unchecked_into::<web_sys::HtmlSelectElement>().value();
            let value = (!value.is_empty()).then_some(value);
            let mut next = (*filter).clone();
            match field {
                "partition" => next.partition = value,
                "node" => next.node = value.as_deref().and_then(parse_node),
                _ => next.name = value,
            }
            let shown = shown_steps(run.borrow().as_ref(), &next);
            if let Some(nearest) = nearest_shown(&shown, index) {
                current.set(nearest);
            }
            filter.set(next);
        })
    };
    let on_fork_choice = {
        let fork_choice = fork_choice.clone();
        Callback::from(move |event: Event| {
            fork_choice.set(event.target_unchecked_into::<web_sys::HtmlSelectElement>().value());
        })
    };
    let on_fork = {
        let run = run.clone();
        let forks = forks.clone();
        let fork_choice = fork_choice.clone();
        let current = current.clone();
        let redraw = redraw.clone();
        Callback::from(move |_: MouseEvent| {
            let mut borrowed = run.borrow_mut();
            let Some(run) = borrowed.as_mut() else { return };
            let Some(at) = run.steps.get(index).map(|step| step.trace_id) else {
                return;
            };
            let label = fork_choices(run.scenario.config.brokers)
                .into_iter()
                .find(|(value, _)| *value == *fork_choice)
                .map_or_else(|| fork_choice.to_string(), |(_, label)| label);
            run.fork(index, fork_inputs(&fork_choice), label);
            forks.borrow_mut().push((index, fork_choice.to_string()));
            current.set(run.step_at_or_after(at));
            drop(borrowed);
            redraw.force_update();
        })
    };
    let on_keydown = {
        let go = go.clone();
        let visible = visible.clone();
        Callback::from(move |event: KeyboardEvent| {
            let in_control = event
                .target()
                .and_then(|target| target.dyn_into::<web_sys::Element>().ok())
                .is_some_and(|element| matches!(element.tag_name().as_str(), "SELECT" | "INPUT" | "TEXTAREA"));
            if in_control || visible.is_empty() {
                return;
            }
            let at = visible.partition_point(|&shown| shown < index);
            let target = match event.key().as_str() {
                "ArrowRight" => visible.get(at + usize::from(visible.get(at) == Some(&index))).copied(),
                "ArrowLeft" => at.checked_sub(1).and_then(|at| visible.get(at)).copied(),
                _ => None,
            };
            if let Some(target) = target {
                event.prevent_default();
                go.emit(target);
            }
        })
    };

    // The run at the current step.
    let mut borrowed = run.borrow_mut();
    let Some(story_run) = borrowed.as_mut() else {
        return html! {
            <section id="steps" class="card wide" data-testid="steps">
                <h2>{ "Sequence steps" }</h2>
                <p class="error" role="alert">{ "This story could not be loaded." }</p>
            </section>
        };
    };
    story_run.seek(index);
    let step = story_run.steps.get(index).cloned();
    let view = story_run.recording.simulation().view();
    let trace_hash = story_run.trace_hash();
    let why = if *why_open { story_run.why(index) } else { Vec::new() };
    let window_start = place.saturating_sub(BEFORE);
    let rows: Vec<(usize, Step)> = visible
        .iter()
        .skip(window_start)
        .take(BEFORE + AFTER + 1)
        .map(|&shown| (shown, story_run.steps[shown].clone()))
        .collect();
    let partitions: std::collections::BTreeSet<String> = story_run
        .steps
        .iter()
        .flat_map(|step| step.partitions.iter().cloned())
        .collect();
    let nodes = lifelines(story_run.steps.iter());
    let names: std::collections::BTreeSet<String> = story_run.steps.iter().map(|step| step.name.clone()).collect();
    let roles = crate::sequence_model::roles(
        &view,
        &story_run.steps,
        filter.partition.as_deref().or(story_def.focus()),
    );
    let forks = story_run.forks.clone();
    let brokers = story_run.scenario.config.brokers;
    let description = story_run.scenario.description.clone();
    let title = story_run.scenario.name.clone();
    let mermaid_source = {
        let shown: Vec<Step> = rows.iter().map(|(_, step)| step.clone()).collect();
        Callback::from(move |_: ()| mermaid(&shown.iter().collect::<Vec<_>>()))
    };
    drop(borrowed);
    let model = Rc::new(layout_fit(&view, view.time_ms as f64, crate::cluster_panel::map_fit()));
    let toggle_why = {
        let why_open = why_open.clone();
        Callback::from(move |_: MouseEvent| why_open.set(!*why_open))
    };
    let on_map_select = Callback::from(|_: Selection| {});

    html! {
        <section id="steps" class="card steps wide" aria-labelledby="steps-title" tabindex="0" onkeydown={on_keydown}
            data-testid="steps" data-story={story_def.id.clone()} data-step={(index + 1).to_string()} data-steps={total.to_string()}
            data-trace-hash={format!("{trace_hash:016x}")} data-time={view.time_ms.to_string()}>
            <h2 id="steps-title">{ "Sequence steps: the run, message by message" }</h2>
            { if let Some(problem) = &*problem { html! { <p class="error" role="alert" data-testid="link-problem">{ problem }</p> } } else { html! {} } }
            <div class="story-bar">
                <label>{ "Story " }
                    <select data-testid="story-select" onchange={on_story}>
                        { for stories().iter().map(|candidate| html! {
                            <option value={candidate.id.clone()} selected={candidate.id == story_def.id}>{ candidate.title() }</option>
                        }) }
                    </select>
                </label>
                <p class="hint"><strong>{ title }</strong>{ ": " }{ description }</p>
            </div>
            <div class="controls" role="toolbar" aria-label="step controls">
                <button type="button" data-testid="step-first" onclick={first}>{ "« First" }</button>
                <button type="button" data-testid="step-prev" onclick={step_by(-1)}>{ "◀ Previous" }</button>
                <button type="button" data-testid="step-next" onclick={step_by(1)}>{ "Next ▶" }</button>
                <button type="button" data-testid="step-last" onclick={last}>{ "Last »" }</button>
                <button type="button" data-testid="step-play" aria-pressed={playing.to_string()} onclick={toggle_play}>{ if *playing { "❚❚ Pause" } else { "▶ Play the story" } }</button>
                <label>{ "Pace " }
                    <select data-testid="step-pace" onchange={on_pace}>
                        { for [(1800u32, "0.5×"), (900, "1×"), (450, "2×"), (225, "4×")].iter().map(|(value, label)| html! {
                            <option value={value.to_string()} selected={*pace == *value}>{ *label }</option>
                        }) }
                    </select>
                </label>
                <label class="scrubber">{ "Timeline " }
                    <input type="range" data-testid="step-scrubber" min="0" max={visible.len().saturating_sub(1).to_string()}
                        value={place.min(visible.len().saturating_sub(1)).to_string()} oninput={on_scrub} aria-label="timeline: jump to any step" />
                </label>
                <span class="clock" data-testid="step-position">{ format!("step {} of {} · t = {} ms", index + 1, total, view.time_ms) }</span>
                <a href={deep_link.clone()} data-testid="step-link">{ "Link to this step" }</a>
            </div>
            <div class="controls filters" role="group" aria-label="filters">
                <label>{ "Partition " }<select data-testid="filter-partition" onchange={filter_field("partition")}>
                    <option value="" selected={filter.partition.is_none()}>{ "all" }</option>
                    { for partitions.iter().map(|partition| html! { <option value={partition.clone()} selected={filter.partition.as_ref() == Some(partition)}>{ partition }</option> }) }
                </select></label>
                <label>{ "Client or node " }<select data-testid="filter-node" onchange={filter_field("node")}>
                    <option value="" selected={filter.node.is_none()}>{ "all" }</option>
                    { for nodes.iter().map(|node| html! { <option value={node.to_string()} selected={filter.node.as_ref() == Some(node)}>{ node.to_string() }</option> }) }
                </select></label>
                <label>{ "Message or event " }<select data-testid="filter-name" onchange={filter_field("name")}>
                    <option value="" selected={filter.name.is_none()}>{ "all" }</option>
                    { for names.iter().map(|name| html! { <option value={name.clone()} selected={filter.name.as_ref() == Some(name)}>{ name }</option> }) }
                </select></label>
                <span class="muted">{ format!("{} of {} steps shown", visible.len(), total) }</span>
            </div>
            <div class="caption" aria-live="polite" data-testid="step-caption">
                { match &step {
                    Some(step) => html! { <>
                        { if let Some(chapter) = &step.chapter { html! { <p class="chapter" data-testid="step-chapter">{ chapter }</p> } } else { html! {} } }
                        <p>
                            { if let Some(outcome) = step.outcome { html! { <span class={classes!("outcome", outcome)} data-testid="step-outcome">{ outcome }</span> } } else { html! {} } }
                            { &step.caption }
                        </p>
                        { if step.explainable { html! {
                            <button type="button" data-testid="step-why" aria-expanded={why_open.to_string()} onclick={toggle_why}>{ "Why?" }</button>
                        } } else { html! {} } }
                        { if why.is_empty() { html! {} } else { html! {
                            <ol class="why-chain" data-testid="why-chain" aria-label="causes, newest first">
                                { for why.iter().map(|line| html! { <li>{ line }</li> }) }
                            </ol>
                        } } }
                    </> },
                    None => html! { <p>{ "No steps." }</p> },
                } }
            </div>
            <div class="steps-layout">
                <div class="diagram-frame">
                    <SequenceDiagram rows={rows} roles={roles} current={index} on_pick={go.clone()} narrow={crate::cluster_panel::map_fit() == crate::map_model::Fit::Narrow} />
                </div>
                <div class="steps-map">
                    <ClusterMap model={model} selected={step.as_ref().and_then(highlight)} on_select={on_map_select} reduced_motion={true} />
                    <p class="legend muted">{ "The cluster right after this step; the highlighted edge or replica is what the step touched." }</p>
                </div>
            </div>
            <div class="controls fork" role="group" aria-label="fork">
                <label>{ "Fork here: " }
                    <select data-testid="fork-input" onchange={on_fork_choice}>
                        { for fork_choices(brokers).into_iter().map(|(value, label)| html! { <option value={value.clone()} selected={*fork_choice == value}>{ label }</option> }) }
                    </select>
                </label>
                <button type="button" data-testid="fork-apply" onclick={on_fork}>{ "Fork: discard the future and replay" }</button>
                { if forks.is_empty() { html! {} } else { html! { <span class="muted" data-testid="fork-list">{ format!("forked: {}", forks.join(", then ")) }</span> } } }
                <MermaidExport label="Mermaid sequenceDiagram" description="the shown steps as a Mermaid sequence diagram"
                    ids={(AttrValue::from("export-sequence"), AttrValue::from("sequence-mermaid"), AttrValue::from("copy-sequence"))}
                    text={mermaid_source} />
            </div>

        </section>
    }
}
