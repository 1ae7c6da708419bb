//! The lesson at the top of the page: objectives, then tabs (Gist,
//! Compare, Q&A, KRaft, Glossary), each part drawn from
//! [`crate::lesson_model`]. Its links open a story's step, set a knob on
//! the live map, or go to a part of the page or of the lesson.

use wasm_bindgen::JsCast;
use yew::prelude::*;

use crate::lesson_model::{lesson, LessonLink, LessonTab, Piece};

/// The current address's fragment.
fn current_hash() -> String {
    web_sys::window()
        .and_then(|window| window.location().hash().ok())
        .unwrap_or_default()
}

/// Opens `url` in this page without loading it again: the address changes,
/// the sections that follow it hear [`crate::sequence_model::NAVIGATE_EVENT`]
/// and the element `target` scrolls into view.
pub fn open_in_page(url: &str, target: &str) {
    let Some(window) = web_sys::window() else { return };
    if let Ok(history) = window.history() {
        let _ = history.push_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(url));
    }
    if let Ok(navigate) = web_sys::Event::new(crate::sequence_model::NAVIGATE_EVENT) {
        let _ = window.dispatch_event(&navigate);
    }
    if let Some(element) = window
        .document()
        .and_then(|document| document.get_element_by_id(target))
    {
        element.scroll_into_view();
    }
}

/// Keeps the page's other parameters (`play=0`, a preset) in a link's
/// address.
fn with_page_query(href: &str) -> String {
    let query = web_sys::window()
        .and_then(|window| window.location().search().ok())
        .unwrap_or_default();
    let Some(own) = href.strip_prefix('?') else {
        return href.to_string();
    };
    let (own, fragment) = own.split_once('#').unwrap_or((own, ""));
    let own_keys: Vec<&str> = own.split('&').filter_map(|pair| pair.split('=').next()).collect();
    let mut pairs: Vec<String> = query
        .trim_start_matches('?')
        .split('&')
        .filter(|pair| !pair.is_empty())
        .filter(|pair| {
            let key = pair.split('=').next().unwrap_or_default();
            !own_keys.contains(&key) && key != "story" && key != "step" && key != "fork" && key != "knob"
        })
        .map(str::to_string)
        .collect();
    pairs.extend(own.split('&').map(str::to_string));
    format!("?{}#{fragment}", pairs.join("&"))
}

fn embedded_lesson() -> bool {
    matches!(
        crate::view_model::embed_mode(&crate::export::page_query()),
        Ok(Some(crate::view_model::Embed::Lesson))
    )
}

/// A lesson link's address without what makes the page an embedded part
/// or a course package: the whole page at what the link names.
fn whole_page(href: &str) -> String {
    let (query, fragment) = href.split_once('#').unwrap_or((href, ""));
    let kept: Vec<&str> = query
        .trim_start_matches('?')
        .split('&')
        .filter(|pair| {
            let key = pair.split('=').next().unwrap_or_default();
            !pair.is_empty() && !["embed", "scorm", "mastery", "exercise", "host"].contains(&key)
        })
        .collect();
    let fragment = if fragment.is_empty() { String::new() } else { format!("#{fragment}") };
    format!("./?{}{fragment}", kept.join("&"))
}

/// `text` with the first use of each glossary term not in `seen` marked:
/// underlined, its definition as its title, a link to the glossary.
pub fn glossed(text: &str, seen: &mut std::collections::BTreeSet<usize>) -> Html {
    let pieces = lesson().gloss(text, seen);
    html! { <>{ for pieces.into_iter().map(|piece| match piece {
        Piece::Text(text) => html! { { text.to_string() } },
        Piece::Term(text, term) => html! {
            <a class="term" href={format!("#{}", term.anchor())} title={term.definition.clone()}>{ text.to_string() }</a>
        },
    }) }</> }
}

#[derive(Properties, PartialEq)]
struct LinkProps {
    link: LessonLink,
    #[prop_or_default]
    label: Option<AttrValue>,
    on_anchor: Callback<String>,
}

/// One lesson link.
#[function_component(Link)]
fn link_view(props: &LinkProps) -> Html {
    let link = props.link.clone();
    let href = with_page_query(&link.href());
    let onclick = {
        let href = href.clone();
        let link = link.clone();
        let on_anchor = props.on_anchor.clone();
        Callback::from(move |event: MouseEvent| {
            if event.ctrl_key() || event.meta_key() || event.shift_key() || event.button() != 0 {
                return; // a new tab or window loads it as usual
            }
            match &link {
                LessonLink::Story { .. } => {
                    event.prevent_default();
                    open_in_page(&href, "steps");
                }
                LessonLink::Knob { .. } => {
                    event.prevent_default();
                    open_in_page(&href, "map");
                }
                LessonLink::Anchor { anchor } => {
                    event.prevent_default();
                    on_anchor.emit(anchor.clone());
                }
                LessonLink::Section { .. } => {}
            }
        })
    };
    // In an embedded lesson (a course page's frame, a course package) the
    // map and the steps are not on the page: those links open the whole
    // of kafkascope in a new tab, at what they name.
    if !matches!(props.link, LessonLink::Anchor { .. }) && embedded_lesson() {
        let whole = whole_page(&href);
        let label = props.label.clone().unwrap_or_else(|| AttrValue::from(props.link.label()));
        return html! {
            <a class="lesson-link" href={whole} target="_blank" rel="noopener" data-kind="whole-page">{ label }{ " ↗" }</a>
        };
    }
    let kind = match &props.link {
        LessonLink::Story { .. } => "story",
        LessonLink::Knob { .. } => "knob",
        LessonLink::Section { .. } => "section",
        LessonLink::Anchor { .. } => "anchor",
    };
    let label = props
        .label
        .clone()
        .unwrap_or_else(|| AttrValue::from(props.link.label()));
    html! {
        <a class="lesson-link" href={href} data-kind={kind} {onclick}>{ label }</a>
    }
}

/// The lesson section.
/// An embedded lesson that names one exercise (`?embed=lesson&exercise=pitfalls`,
/// as a course package for that exercise does) shows only it.
fn single_exercise(on_anchor: &Callback<String>) -> Option<Html> {
    let query = crate::export::page_query();
    if !matches!(crate::view_model::embed_mode(&query), Ok(Some(crate::view_model::Embed::Lesson))) {
        return None;
    }
    let wanted = crate::view_model::query_param(&query, "exercise")?;
    let index = lesson().exercises.iter().position(|exercise| exercise.id == wanted)?;
    Some(html! {
        <section id="lesson" class="card lesson wide" aria-label="an exercise" data-testid="lesson" tabindex="-1">
            <ExerciseView index={index} on_anchor={on_anchor.clone()} />
        </section>
    })
}

#[function_component(Lesson)]
pub fn lesson_section() -> Html {
    let lesson = lesson();
    let tab = use_state(|| LessonTab::for_hash(&current_hash()).unwrap_or_default());
    // The element to bring into view once its tab is drawn.
    let reveal = use_state(|| None::<String>);
    use_tab_from_address(tab.clone(), reveal.clone());
    use_reveal(reveal.clone(), *tab);
    let on_anchor = {
        let tab = tab.clone();
        let reveal = reveal.clone();
        Callback::from(move |anchor: String| {
            if let Some(chosen) = lesson.tab_of_anchor(&anchor) {
                tab.set(chosen);
                reveal.set(Some(format!("lesson-{anchor}")));
            }
        })
    };
    let select = |chosen: LessonTab| {
        let tab = tab.clone();
        Callback::from(move |_: MouseEvent| tab.set(chosen))
    };
    let on_tab_keys = tab_keys(tab.clone());
    if let Some(alone) = single_exercise(&on_anchor) {
        return alone;
    }
    let link = |link: &LessonLink| html! { <Link link={link.clone()} on_anchor={on_anchor.clone()} /> };
    // Glossary terms, underlined at their first use on the page (the
    // panels are drawn in page order), each a link to its definition.
    let seen = std::cell::RefCell::new(std::collections::BTreeSet::new());
    let gloss = |text: &str| -> Html { glossed(text, &mut seen.borrow_mut()) };
    html! {
        <section id="lesson" class="card lesson wide" aria-labelledby="lesson-title" data-testid="lesson" tabindex="-1">
            <h2 id="lesson-title">{ &lesson.title }</h2>
            <p class="lesson-summary" data-testid="lesson-summary">{ &lesson.summary }</p>
            <p class="hint">
                { "The live cluster is one click away: " }
                <a href="#map" data-testid="lesson-open-map">{ "open the map" }</a>
                { ", or follow a story step by step in " }
                <a href="#steps">{ "Stories" }</a>{ "." }
            </p>
            <details class="objectives" open=true data-testid="lesson-objectives">
                <summary>{ "You should be able to" }</summary>
                <ul>
                    { for lesson.objectives.iter().map(|objective| html! {
                        <li>{ &objective.text }{ " " }{ link(&objective.link) }</li>
                    }) }
                </ul>
            </details>
            <div class="lesson-tabs" role="tablist" aria-label="the lesson's parts" onkeydown={on_tab_keys}>
                { for LessonTab::ALL.into_iter().map(|each| html! {
                    <button type="button" role="tab" id={format!("tab-{}", each.id())}
                        aria-selected={(*tab == each).to_string()} aria-controls={each.id()}
                        tabindex={if *tab == each { "0" } else { "-1" }}
                        data-testid={format!("lesson-tab-{}", each.id())} onclick={select(each)}>{ each.label() }</button>
                }) }
            </div>
            { for LessonTab::ALL.into_iter().map(|each| {
                let body = match each {
                    LessonTab::Gist => gist_panel(lesson, &link, &gloss),
                    LessonTab::Tables => tables_panel(lesson, &link),
                    LessonTab::Questions => questions_panel(lesson, &link, &gloss),
                    LessonTab::Exercise => html! { <>
                        { for lesson.exercises.iter().enumerate().map(|(index, _)| html! {
                            <ExerciseView index={index} on_anchor={on_anchor.clone()} />
                        }) }
                    </> },
                    LessonTab::Kraft => kraft_panel(lesson, &link, &gloss),
                    LessonTab::Glossary => glossary_panel(lesson),
                };
                html! {
                    <div role="tabpanel" id={each.id()} aria-labelledby={format!("tab-{}", each.id())}
                        hidden={*tab != each} data-testid={format!("lesson-panel-{}", each.id())}>
                        { body }
                    </div>
                }
            }) }
        </section>
    }
}

/// An address that names a tab (`#qa`, a table's `#lesson-compare`) opens
/// it, from the header's links or the back button.
#[hook]
fn use_tab_from_address(tab: UseStateHandle<LessonTab>, reveal: UseStateHandle<Option<String>>) {
    use_effect_with((), move |_| {
        let follow = wasm_bindgen::closure::Closure::<dyn Fn()>::new(move || {
            let hash = current_hash();
            if let Some(chosen) = LessonTab::for_hash(&hash) {
                tab.set(chosen);
                reveal.set(Some(hash.trim_start_matches('#').to_string()));
            }
        });
        let window = web_sys::window();
        if let Some(window) = &window {
            let _ = window.add_event_listener_with_callback("hashchange", follow.as_ref().unchecked_ref());
        }
        move || {
            if let Some(window) = &window {
                let _ = window.remove_event_listener_with_callback("hashchange", follow.as_ref().unchecked_ref());
            }
        }
    });
}

/// Brings the element asked for into view once its tab is drawn.
#[hook]
fn use_reveal(reveal: UseStateHandle<Option<String>>, tab: LessonTab) {
    use_effect_with(((*reveal).clone(), tab), move |(target, _)| {
        if let Some(target) = target {
            if let Some(element) = web_sys::window()
                .and_then(|window| window.document())
                .and_then(|document| document.get_element_by_id(target))
            {
                element.scroll_into_view();
            }
            reveal.set(None);
        }
    });
}

/// WAI-ARIA's tabs: the arrows, Home and End move between the tabs (and
/// select them), as the map's tabs do.
fn tab_keys(tab: UseStateHandle<LessonTab>) -> Callback<KeyboardEvent> {
    Callback::from(move |event: KeyboardEvent| {
        let index = LessonTab::ALL.iter().position(|each| *each == *tab).unwrap_or(0);
        let Some(next) = crate::tabs::moved(index, LessonTab::ALL.len(), &event.key()) else {
            return;
        };
        event.prevent_default();
        let chosen = LessonTab::ALL[next];
        tab.set(chosen);
        if let Some(button) = web_sys::window()
            .and_then(|window| window.document())
            .and_then(|document| document.get_element_by_id(&format!("tab-{}", chosen.id())))
            .and_then(|button| wasm_bindgen::JsCast::dyn_into::<web_sys::HtmlElement>(button).ok())
        {
            let _ = button.focus();
        }
    })
}

/// The gist: the mental model, why each part exists, prefer or alternative, the happy path.
fn gist_panel(
    lesson: &'static crate::lesson_model::Lesson,
    link: &dyn Fn(&LessonLink) -> Html,
    gloss: &dyn Fn(&str) -> Html,
) -> Html {
    let gist = &lesson.gist;
    html! { <>
        <crate::voice::VoiceSettings />
        <div data-read="gist">
            <p>{ gloss(&gist.mental_model) }</p>
        </div>
        <crate::voice::ReadAloud id="gist" label="Read the gist aloud" text={format!("{} {} {}", lesson.title, lesson.summary, gist.mental_model)} />
        <h3>{ "Why each part exists" }</h3>
        <dl class="components">
            { for gist.components.iter().map(|component| html! { <>
                <dt>{ &component.name }</dt>
                <dd>{ gloss(&component.why) }{ " " }{ link(&component.link) }</dd>
            </> }) }
        </dl>
        <div class="prefer-alternative">
            { for [("Prefer", &gist.prefer), ("Alternative", &gist.alternative)].into_iter().map(|(label, choice)| html! {
                <div class="choice">
                    <h3>{ format!("{label}: {}", choice.title) }</h3>
                    <p>{ &choice.text }</p>
                    <ul>{ for choice.points.iter().map(|point| html! { <li>{ point }</li> }) }</ul>
                </div>
            }) }
        </div>
        <h3>{ "The happy path in five steps" }</h3>
        <ol class="happy-path" data-testid="happy-path">
            { for gist.happy_path.iter().enumerate().map(|(index, card)| html! {
                <li class="happy-card" data-testid={format!("happy-card-{}", index + 1)}>
                    <span class="number" aria-hidden="true">{ index + 1 }</span>
                    <h4>{ &card.title }</h4>
                    <p>{ gloss(&card.text) }</p>
                    { link(&card.link) }
                </li>
            }) }
        </ol>
    </> }
}

/// The comparison tables, with a link to see each row where it has one.
fn tables_panel(lesson: &'static crate::lesson_model::Lesson, link: &dyn Fn(&LessonLink) -> Html) -> Html {
    html! { <>
        { for lesson.tables.iter().map(|table| {
            let linked = table.rows.iter().any(|row| row.link.is_some());
            html! {
                <div class="table-wrap">
                    <table id={format!("lesson-{}", table.id)} data-testid={format!("lesson-table-{}", table.id)}>
                        <caption>{ &table.title }</caption>
                        <thead><tr>
                            { for table.columns.iter().map(|column| html! { <th scope="col">{ column }</th> }) }
                            { if linked { html! { <th scope="col">{ "See it" }</th> } } else { html! {} } }
                        </tr></thead>
                        <tbody>
                            { for table.rows.iter().map(|row| html! {
                                <tr>
                                    { for row.cells.iter().enumerate().map(|(index, cell)| if index == 0 {
                                        html! { <th scope="row">{ cell }</th> }
                                    } else {
                                        html! { <td>{ cell }</td> }
                                    }) }
                                    { if linked { html! { <td>{ row.link.as_ref().map(&link).unwrap_or_default() }</td> } } else { html! {} } }
                                </tr>
                            }) }
                        </tbody>
                    </table>
                    { table.note.as_ref().map(|note| html! { <p class="muted hint">{ note }</p> }).unwrap_or_default() }
                </div>
            }
        }) }
    </> }
}

/// The questions, each answer folded until the learner opens it.
fn questions_panel(
    lesson: &'static crate::lesson_model::Lesson,
    link: &dyn Fn(&LessonLink) -> Html,
    gloss: &dyn Fn(&str) -> Html,
) -> Html {
    html! {
        <div class="qa-list">
            <p class="hint">{ "Think of your answer, then open the card. Each answer links to the moment that shows it." }</p>
            { for lesson.qa.iter().map(|question| html! {
                <details class="qa" data-testid={format!("qa-{}", question.id)}>
                    <summary>{ &question.question }</summary>
                    <p data-read={format!("qa-{}", question.id)}>{ gloss(&question.answer) }</p>
                    <crate::voice::ReadAloud id={format!("qa-{}", question.id)} label="Read the answer" text={format!("{} {}", question.question, question.answer)} />
                    { question.link.as_ref().map(&link).unwrap_or_default() }
                </details>
            }) }
        </div>
    }
}

/// The sections on KRaft.
fn kraft_panel(
    lesson: &'static crate::lesson_model::Lesson,
    link: &dyn Fn(&LessonLink) -> Html,
    gloss: &dyn Fn(&str) -> Html,
) -> Html {
    html! { <>
        { for lesson.sections.iter().map(|section| html! {
            <div id={format!("lesson-{}", section.id)}>
                <h3>{ &section.title }</h3>
                { for section.paragraphs.iter().map(|paragraph| html! { <p>{ gloss(paragraph) }</p> }) }
                { section.link.as_ref().map(&link).unwrap_or_default() }
            </div>
        }) }
    </> }
}

/// The glossary, each term with its anchor.
fn glossary_panel(lesson: &'static crate::lesson_model::Lesson) -> Html {
    html! {
        <dl class="glossary" data-testid="glossary">
            { for lesson.glossary.iter().map(|term| html! { <>
                <dt id={term.anchor()}>
                    { &term.term }
                    { term.name.as_ref().map(|name| html! { <span class="muted">{ format!(" ({name})") }</span> }).unwrap_or_default() }
                </dt>
                <dd>{ &term.definition }</dd>
            </> }) }
        </dl>
    }
}

#[derive(Properties, PartialEq)]
struct ExerciseProps {
    /// Which of the lesson's exercises.
    index: usize,
    on_anchor: Callback<String>,
}

/// One exercise: a prediction per case, then the run reveals each case's
/// outcome with its numbers, and the answers are scored.
#[function_component(ExerciseView)]
fn exercise_view(props: &ExerciseProps) -> Html {
    use crate::exercise_model::{score, Outcome};
    let index = props.index;
    let exercise = &lesson().exercises[index];
    let answers = use_state(|| {
        crate::course::saved_answers(&exercise.id, exercise.cases.len())
            .unwrap_or_else(|| vec![None::<Outcome>; exercise.cases.len()])
    });
    let revealed = use_state(|| None::<Result<Vec<crate::exercise_model::Revealed>, String>>);
    let choose = |case: usize, outcome: Outcome| {
        let answers = answers.clone();
        let revealed = revealed.clone();
        Callback::from(move |_: Event| {
            let mut next = (*answers).clone();
            next[case] = Some(outcome);
            crate::course::exercise_changed(&lesson().exercises[index].id, &next, None);
            answers.set(next);
            // A changed answer hides the old reveal.
            revealed.set(None);
        })
    };
    // The run happens in the simulator's module, loaded on the first run.
    let running = use_state(|| false);
    let run = {
        let revealed = revealed.clone();
        let running = running.clone();
        let answers = answers.clone();
        Callback::from(move |_: MouseEvent| {
            if *running {
                return;
            }
            running.set(true);
            let revealed = revealed.clone();
            let running = running.clone();
            let answers = (*answers).clone();
            wasm_bindgen_futures::spawn_local(async move {
                let result = crate::sim_slot::reveal_exercise(index).await;
                if let Ok(cases) = &result {
                    let outcomes = cases.iter().map(|case| case.outcome).collect();
                    crate::course::exercise_changed(&lesson().exercises[index].id, &answers, Some(outcomes));
                }
                revealed.set(Some(result));
                running.set(false);
            });
        })
    };
    let all_answered = answers.iter().all(Option::is_some);
    html! {
        <div class="exercise" id={format!("exercise-{}", exercise.id)} data-testid={format!("exercise-{}", exercise.id)}>
            <h3>{ &exercise.title }</h3>
            <p>{ &exercise.intro }</p>
            <ol class="exercise-cases">
                { for exercise.cases.iter().enumerate().map(|(index, case)| {
                    let result = revealed.as_ref().and_then(|result| result.as_ref().ok()).and_then(|cases| cases.get(index));
                    html! {
                        <li data-testid={format!("case-{}", case.id)}>
                            <fieldset>
                                <legend>{ &case.prompt }</legend>
                                { for case.choices().iter().copied().map(|outcome| html! {
                                    <label class="choice-label">
                                        <input type="radio" name={format!("case-{}", case.id)} value={outcome.label()}
                                            data-testid={format!("case-{}-{}", case.id, outcome.label())}
                                            checked={answers[index] == Some(outcome)} onchange={choose(index, outcome)} />
                                        { format!(" {} ", outcome.label()) }
                                    </label>
                                }) }
                            </fieldset>
                            { match result {
                                Some(result) => {
                                    let right = answers[index] == Some(result.outcome);
                                    let link = LessonLink::Story { story: exercise.story.clone(), step: Some(result.step), shows: None };
                                    html! {
                                        <p class={classes!("verdict", if right { "right" } else { "wrong" })} data-testid={format!("verdict-{}", case.id)}>
                                            <strong>{ if right { "Right: " } else { "Not quite: " } }</strong>
                                            { format!("the run says {}. ", result.outcome.label()) }
                                            { &result.evidence }{ ". " }
                                            <Link link={link} label={AttrValue::from("watch it in the steps")} on_anchor={props.on_anchor.clone()} />
                                        </p>
                                    }
                                }
                                None => html! {},
                            } }
                        </li>
                    }
                }) }
            </ol>
            <button type="button" data-testid="exercise-run" disabled={!all_answered || *running} onclick={run}>
                { if *running { "Running…" } else if all_answered { "Run it and check my answers" } else { "Answer every case, then run it" } }
            </button>
            { match revealed.as_ref() {
                Some(Ok(cases)) => html! {
                    <p class="score" role="status" data-testid="exercise-score">
                        { format!("{} of {} right.", score(&answers, cases), cases.len()) }
                    </p>
                },
                Some(Err(problem)) => html! { <p class="error" role="alert">{ problem }</p> },
                // A learner back in a course package: what the platform kept.
                None => match crate::course::best_score(&exercise.id) {
                    Some((right, cases)) => html! {
                        <p class="score" role="status" data-testid="exercise-kept-score">
                            { format!("Your best run so far: {right} of {cases} right (your learning platform keeps it; running again cannot lower it). Run it again to see each case explained.") }
                        </p>
                    },
                    None => html! {},
                },
            } }
        </div>
    }
}
