//! The parts of the "Sequence steps" section that only draw what they are
//! given: the filters, the caption (with the folded start-up, "Why?" and
//! the read-aloud button) and the consumer groups at the step. Each takes
//! typed props and sends [`CursorAction`]s; [`crate::sequence`] holds the
//! cursor.

use kafkascope_engine::sim::types::NodeId;
use yew::prelude::*;

use crate::cluster_model::GroupRow;
use crate::sequence_model::{stories, Filter, Step};
use crate::story_cursor::{fork_choices, CursorAction, FilterField};
use crate::story_view::Startup;

#[derive(Properties, PartialEq)]
pub struct FiltersProps {
    pub partitions: Vec<String>,
    pub nodes: Vec<NodeId>,
    pub names: Vec<String>,
    pub filter: Filter,
    /// Steps shown, and in all.
    pub shown: usize,
    pub total: usize,
    pub on_filter: Callback<(FilterField, Option<String>)>,
    /// A compact embed shows the filters only once one is set (a click on
    /// the side map sets one), so that it can be undone.
    #[prop_or_default]
    pub compact: bool,
}

/// The filters by partition, client or node, and message or event.
#[function_component(StepFilters)]
pub fn step_filters(props: &FiltersProps) -> Html {
    let set = props.filter.partition.is_some() || props.filter.node.is_some() || props.filter.name.is_some();
    if props.compact && !set {
        return html! {};
    }
    let field = |field: FilterField| {
        let on_filter = props.on_filter.clone();
        Callback::from(move |event: Event| {
            let value = event.target_unchecked_into::<web_sys::HtmlSelectElement>().value();
            on_filter.emit((field, (!value.is_empty()).then_some(value)));
        })
    };
    let filter = &props.filter;
    html! {
        <div class="controls filters" role="group" aria-label="filters">
            <label>{ "Partition " }<select data-testid="filter-partition" onchange={field(FilterField::Partition)}>
                <option value="" selected={filter.partition.is_none()}>{ "all" }</option>
                { for props.partitions.iter().map(|partition| html! { <option value={partition.clone()} selected={filter.partition.as_ref() == Some(partition)}>{ partition }</option> }) }
            </select></label>
            <label>{ "Client or node " }<select data-testid="filter-node" onchange={field(FilterField::Node)}>
                <option value="" selected={filter.node.is_none()}>{ "all" }</option>
                { for props.nodes.iter().map(|node| html! { <option value={node.to_string()} selected={filter.node.as_ref() == Some(node)}>{ node.to_string() }</option> }) }
            </select></label>
            <label>{ "Message or event " }<select data-testid="filter-name" onchange={field(FilterField::Name)}>
                <option value="" selected={filter.name.is_none()}>{ "all" }</option>
                { for props.names.iter().map(|name| html! { <option value={name.clone()} selected={filter.name.as_ref() == Some(name)}>{ name }</option> }) }
            </select></label>
            <span class="muted">{ format!("{} of {} steps shown", props.shown, props.total) }</span>
        </div>
    }
}

#[derive(Properties, PartialEq)]
pub struct CaptionProps {
    pub step: Option<Step>,
    /// The start-up this step stands for, while it is folded.
    pub folded_startup: Option<Startup>,
    /// The step is inside the opened start-up (it can be folded again).
    pub in_open_startup: bool,
    pub why_open: bool,
    /// The causes, oldest first, while "Why?" is open.
    pub why: Vec<crate::sequence_model::WhyLine>,
    pub on_action: Callback<CursorAction>,
}

/// The step's caption: its chapter, its outcome, its words with the
/// glossary marked, "Read this step", and "Why?" with its causes.
#[function_component(StepCaption)]
pub fn step_caption(props: &CaptionProps) -> Html {
    let act = |action: CursorAction| {
        let on_action = props.on_action.clone();
        Callback::from(move |_: MouseEvent| on_action.emit(action.clone()))
    };
    let Some(step) = &props.step else {
        return html! { <div class="caption" aria-live="polite" data-testid="step-caption"><p>{ "No steps." }</p></div> };
    };
    let words = match &props.folded_startup {
        Some(startup) => html! { <>
            <p data-read="step-caption" data-testid="startup-caption">{ &startup.text }</p>
            <button type="button" data-testid="startup-open" onclick={act(CursorAction::Startup(true))}>{ format!("Show these {} steps", startup.folded.len()) }</button>
        </> },
        None => html! {
            <p data-read="step-caption">
                { if let Some(outcome) = step.outcome { html! { <span class={classes!("outcome", outcome)} data-testid="step-outcome">{ outcome }</span> } } else { html! {} } }
                { crate::lesson::glossed(&step.caption, &mut Default::default()) }
            </p>
        },
    };
    let spoken = format!(
        "{}{}",
        step.chapter
            .as_ref()
            .map(|chapter| format!("{chapter} "))
            .unwrap_or_default(),
        step.caption
    );
    html! {
        <div class="caption" aria-live="polite" data-testid="step-caption">
            { if let Some(chapter) = &step.chapter { html! { <p class="chapter" data-testid="step-chapter">{ chapter }</p> } } else { html! {} } }
            { words }
            { if props.in_open_startup { html! {
                <button type="button" data-testid="startup-fold" onclick={act(CursorAction::Startup(false))}>{ "Fold the start-up" }</button>
            } } else { html! {} } }
            <div class="caption-actions">
                <crate::voice::ReadAloud id="step-caption" label="Read this step" text={spoken} />
                { if step.explainable { html! {
                    <button type="button" data-testid="step-why" aria-expanded={props.why_open.to_string()} onclick={act(CursorAction::ToggleWhy)}>{ "Why?" }</button>
                } } else { html! {} } }
            </div>
            { if props.why.is_empty() { html! {} } else { html! {
                <ol class="why-chain" data-testid="why-chain" aria-label="causes, oldest first">
                    // Plain words first; the message itself one click away.
                    { for props.why.iter().map(|line| match &line.plain {
                        Some(plain) => html! { <li>
                            { format!("{} ms: {plain} ", line.time) }
                            <details class="why-raw"><summary>{ "show it as the trace has it" }</summary><code>{ &line.raw }</code></details>
                        </li> },
                        None => html! { <li>{ format!("{} ms: {}", line.time, line.raw) }</li> },
                    }) }
                </ol>
            } } }
        </div>
    }
}

#[derive(Properties, PartialEq)]
pub struct GroupsProps {
    pub groups: Vec<GroupRow>,
}

/// `kafka-consumer-groups --describe` at the step: one row per group and
/// partition, as the live map's panel has it.
#[function_component(StepGroups)]
pub fn step_groups(props: &GroupsProps) -> Html {
    if props.groups.is_empty() {
        return html! {};
    }
    html! {
        <details class="step-groups" data-testid="step-groups">
            <summary>{ "kafka-consumer-groups --describe at this step" }</summary>
            <table class="tool" tabindex="0" aria-label="kafka-consumer-groups --describe at this step (scrolls sideways)">
                <thead><tr><th>{ "GROUP" }</th><th>{ "PARTITION" }</th><th>{ "CURRENT-OFFSET" }</th><th>{ "LOG-END-OFFSET" }</th><th>{ "LAG" }</th><th>{ "CONSUMER-ID" }</th><th>{ "RESET (consumer log)" }</th></tr></thead>
                <tbody>
                    { for props.groups.iter().map(|row| html! {
                        <tr>
                            <td>{ &row.group }</td><td>{ format!("{}-{}", row.topic, row.partition) }</td>
                            <td>{ &row.current_offset }</td><td>{ row.log_end_offset }</td><td>{ &row.lag }</td><td>{ &row.consumer_id }</td>
                            <td data-testid={format!("step-reset-{}-{}-{}", row.group, row.topic, row.partition)}>{ &row.reset }</td>
                        </tr>
                    }) }
                </tbody>
            </table>
        </details>
    }
}

#[derive(Properties, PartialEq)]
pub struct StoryBarProps {
    /// The story shown (its id).
    pub story: String,
    /// A story opened from a file: its label in the picker.
    pub custom: Option<String>,
    pub title: String,
    pub description: String,
    /// What is wrong with a scenario file the learner opened.
    pub problem: Option<String>,
    pub on_story: Callback<Event>,
    pub on_file: Callback<Event>,
    /// An embedded story the address names: its title, with what it
    /// teaches a click away, and no pickers.
    #[prop_or_default]
    pub compact: bool,
}

/// The story picker, "Open a scenario file", and what the story teaches.
#[function_component(StoryBar)]
pub fn story_bar(props: &StoryBarProps) -> Html {
    if props.compact {
        return html! {
            <div class="story-bar compact">
                { match &props.problem {
                    Some(problem) => html! { <p class="error" role="alert" data-testid="scenario-problem">{ problem }</p> },
                    None => html! {},
                } }
                <details class="story-about" data-testid="story-about">
                    <summary><strong>{ props.custom.as_ref().unwrap_or(&props.title) }</strong>{ if props.description.is_empty() { "" } else { " · what it shows" } }</summary>
                    <p class="hint">{ &props.description }</p>
                </details>
            </div>
        };
    }
    html! {
        <div class="story-bar">
            <label>{ "Story " }
                <select data-testid="story-select" onchange={props.on_story.clone()}>
                    { for stories().iter().map(|candidate| html! {
                        <option value={candidate.id.clone()} selected={candidate.id == props.story}>{ candidate.title() }</option>
                    }) }
                    { match &props.custom { Some(label) => html! {
                        <option value={props.story.clone()} selected=true>{ label }</option>
                    }, None => html! {} } }
                </select>
            </label>
            <label class="open-scenario" title="A scenario file (the format of scenarios/ and of the map's Download the run), played here as a story. You can also drop the file on this section.">{ "Open a scenario file " }
                <input type="file" accept=".json,application/json" data-testid="open-scenario" onchange={props.on_file.clone()} />
            </label>
            <a class="format-link" href="scenario-format.html" target="_blank" rel="noopener" data-testid="scenario-format-link">{ "the file format" }</a>
            { match &props.problem {
                Some(problem) => html! { <p class="error" role="alert" data-testid="scenario-problem">{ problem }</p> },
                None => html! {},
            } }
            <p class="hint"><strong>{ &props.title }</strong>{ if props.description.is_empty() { String::new() } else { format!(": {}", props.description) } }</p>
        </div>
    }
}

#[derive(Properties, PartialEq)]
pub struct ControlsProps {
    pub playing: bool,
    /// Twice the multiple of the story's default pace (1 is 0.5×).
    pub pace: u32,
    /// "step N of M · t = T ms".
    pub position: String,
    /// The link to this step (none for a story from a file).
    pub link: Option<String>,
    pub on_action: Callback<CursorAction>,
    pub on_play: Callback<()>,
    pub on_pace: Callback<u32>,
}

/// First, previous, next, last, play and its pace, where the story is, and
/// the link to this step.
#[function_component(StepControls)]
pub fn step_controls(props: &ControlsProps) -> Html {
    let act = |action: CursorAction| {
        let on_action = props.on_action.clone();
        Callback::from(move |_: MouseEvent| on_action.emit(action.clone()))
    };
    let on_play = props.on_play.reform(|_: MouseEvent| ());
    let on_pace = {
        let on_pace = props.on_pace.clone();
        Callback::from(move |event: Event| {
            if let Ok(value) = event
                .target_unchecked_into::<web_sys::HtmlSelectElement>()
                .value()
                .parse()
            {
                on_pace.emit(value);
            }
        })
    };
    html! {
        <div class="controls" role="toolbar" aria-label="step controls">
            <button type="button" data-testid="step-first" onclick={act(CursorAction::First)}>{ "« First" }</button>
            <button type="button" data-testid="step-prev" onclick={act(CursorAction::By(-1))}>{ "◀ Previous" }</button>
            <button type="button" data-testid="step-next" onclick={act(CursorAction::By(1))}>{ "Next ▶" }</button>
            <button type="button" data-testid="step-last" onclick={act(CursorAction::Last)}>{ "Last »" }</button>
            <button type="button" data-testid="step-play" aria-pressed={props.playing.to_string()} onclick={on_play}>{ if props.playing { "❚❚ Pause" } else { "▶ Play the story" } }</button>
            <label>{ "Pace " }
                <select data-testid="step-pace" onchange={on_pace}>
                    { for [(1u32, "0.5×"), (2, "1×"), (4, "2×"), (8, "4×")].iter().map(|(value, label)| html! {
                        <option value={value.to_string()} selected={props.pace == *value}>{ *label }</option>
                    }) }
                </select>
            </label>
            <span class="clock" data-testid="step-position">{ &props.position }</span>
            { match &props.link {
                None => html! { <span class="muted" data-testid="step-link-none">{ "(a story from your file has no link: share the file)" }</span> },
                Some(link) => html! { <a href={link.clone()} data-testid="step-link">{ "Link to this step" }</a> },
            } }
        </div>
    }
}

#[derive(Properties, PartialEq)]
pub struct ForkProps {
    pub brokers: u32,
    /// What was changed at forks so far.
    pub forks: Vec<String>,
    pub on_action: Callback<CursorAction>,
    /// The shown steps as Mermaid, made when asked.
    pub mermaid: Callback<(), String>,
}

/// "Fork here" with its choices, the forks made, and the Mermaid export.
#[function_component(ForkBar)]
pub fn fork_bar(props: &ForkProps) -> Html {
    let choice = use_state(|| "kill-1".to_string());
    let on_choice = {
        let choice = choice.clone();
        Callback::from(move |event: Event| {
            choice.set(event.target_unchecked_into::<web_sys::HtmlSelectElement>().value())
        })
    };
    let on_fork = {
        let on_action = props.on_action.clone();
        let choice = choice.clone();
        Callback::from(move |_: MouseEvent| on_action.emit(CursorAction::Fork(choice.to_string())))
    };
    html! {
        <div class="controls fork" role="group" aria-label="fork">
            <label>{ "Fork here: " }
                <select data-testid="fork-input" onchange={on_choice}>
                    { for fork_choices(props.brokers).into_iter().map(|(value, label)| html! { <option value={value.clone()} selected={*choice == value}>{ label }</option> }) }
                </select>
            </label>
            <button type="button" data-testid="fork-apply" onclick={on_fork}>{ "Fork: discard the future and replay" }</button>
            { if props.forks.is_empty() { html! {} } else { html! { <span class="muted" data-testid="fork-list">{ format!("forked: {}", props.forks.join(", then ")) }</span> } } }
            <crate::export::MermaidExport label="Mermaid sequenceDiagram" description="the shown steps as a Mermaid sequence diagram"
                ids={(AttrValue::from("export-sequence"), AttrValue::from("sequence-mermaid"), AttrValue::from("copy-sequence"))}
                text={props.mermaid.clone()} />
        </div>
    }
}

#[derive(Properties, PartialEq)]
pub struct JepsenProps {
    pub panel: Option<crate::jepsen_model::JepsenPanel>,
    pub on_action: Callback<CursorAction>,
    /// Always open (the map's tool, where it is the whole tab).
    #[prop_or_default]
    pub open: bool,
}

/// "What Jepsen would say about this run": a run judged by Jepsen's checks,
/// each finding with a button to the step that shows it (in a story) or
/// its time (on the map). Open when there is an anomaly to see.
#[function_component(JepsenVerdict)]
pub fn jepsen_verdict(props: &JepsenProps) -> Html {
    let Some(panel) = &props.panel else { return html! {} };
    let row = |row: &crate::jepsen_model::FindingRow, testid: &'static str| {
        let go = row.step.map(|step| {
            let on_action = props.on_action.clone();
            (
                step,
                Callback::from(move |_: MouseEvent| on_action.emit(CursorAction::Go(step))),
            )
        });
        html! {
            <li data-testid={testid}>
                <strong>{ row.class }</strong>{ " " }{ row.detail.clone() }{ ". " }
                <span class="muted">{ row.meaning }</span>
                { match (go, row.at_ms) {
                    (Some((step, onclick)), _) => html! { <>{ " " }<button type="button" class="step-link" data-testid="jepsen-step" data-step={(step + 1).to_string()} {onclick}>{ format!("Go to step {}", step + 1) }</button></> },
                    (None, Some(at_ms)) => html! { <span class="muted" data-testid="jepsen-time">{ format!(" (at {at_ms} ms)") }</span> },
                    (None, None) => html! {},
                } }
            </li>
        }
    };
    let more = |hidden: usize| {
        (hidden > 0)
            .then(|| html! { <li class="muted">{ format!("and {hidden} more") }</li> })
            .unwrap_or_default()
    };
    html! {
        <details class="jepsen" data-testid="jepsen" open={props.open || panel.finding_count > 0}
            data-findings={panel.finding_count.to_string()} data-allowed={panel.allowed_count.to_string()}
            data-operations={panel.operations.to_string()}>
            <summary>{ panel.summary() }</summary>
            <p class="muted">{ "Jepsen's Kafka test records every send with what its producer learned and every poll with what it returned, rebuilds the order each partition's log gives the records, and names what a consumer or producer should never have seen. " }{ panel.scope.clone() }</p>
            { if panel.complete { html! {} } else { html! {
                <p class="muted" data-testid="jepsen-partial">{ "The run's history stopped at its limit, so this judges the first part of the run only." }</p>
            } } }
            { if panel.findings.is_empty() {
                html! { <p data-testid="jepsen-clean">{ "No anomaly: every acknowledged record that a consumer could read was read once, in order, and nothing aborted or failed was read." }</p> }
            } else {
                html! { <ul class="jepsen-findings">
                    { for panel.findings.iter().map(|finding| row(finding, "jepsen-finding")) }
                    { more(panel.hidden) }
                </ul> }
            } }
            { for panel.allowed.iter().map(|allowed| html! {
                <div class="jepsen-allowed" data-testid="jepsen-allowed">
                    <p><strong>{ format!("Allowed by Kafka's design: {}.", allowed.class) }</strong>{ " " }{ allowed.why }</p>
                    <ul>
                        { for allowed.rows.iter().map(|finding| row(finding, "jepsen-allowed-finding")) }
                        { more(allowed.hidden) }
                    </ul>
                </div>
            }) }
            { if panel.unknown_commits == 0 { html! {} } else { html! {
                <p class="muted" data-testid="jepsen-unknown">{ panel.unknown_text() }</p>
            } } }
            { if panel.not_judged.is_empty() { html! {} } else { html! {
                <p class="muted" data-testid="jepsen-not-judged">{ "Not judged: " }{ panel.not_judged.iter().map(|(why, count)| format!("{count} record{} {why}", if *count == 1 { "" } else { "s" })).collect::<Vec<_>>().join("; ") }{ "." }</p>
            } } }
        </details>
    }
}
