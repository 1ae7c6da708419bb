//! The "run this" panel: an editor, the preloaded examples, a Run button,
//! a console and the diagrams `show(value)` asks for.
//!
//! Snippets never run here: `js/sandbox.js` keeps one hidden sandboxed
//! iframe (an opaque origin under a policy that forbids every fetch) holding
//! the compiled engine, which runs each snippet in a fresh worker and stops
//! it at the time limit. This component only hands it the code and draws
//! the [`RunResult`] it returns.

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{HtmlInputElement, HtmlSelectElement, HtmlTextAreaElement};
use yew::prelude::*;

use crate::export::page_query;

use crate::sandbox_model::{
    api_reference, drawings, parse_timeout, Diagram, Drawing, RunResult, DEFAULT_TIMEOUT_MS, EXAMPLES, OUTPUT_CHARS,
    OUTPUT_ITEMS,
};

#[wasm_bindgen(module = "/js/sandbox.js")]
extern "C" {
    #[wasm_bindgen(js_name = runSnippet)]
    fn run_snippet(code: &str, timeout_ms: f64, on_done: &js_sys::Function);
}

/// What the panel shows under the editor.
#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    Idle,
    Running,
    /// The run's result, with its drawings made once, within bounds, and
    /// how many shown values were not drawn.
    Done(RunResult, Vec<Drawing>, usize),
    /// The result could not be read (a bug, reported rather than hidden).
    Broken(String),
}

/// The output's props: one run's outcome, compared by identity, so that
/// typing in the editor never draws a run's output again.
#[derive(Clone, Properties)]
struct OutputProps {
    outcome: std::rc::Rc<Outcome>,
}

impl PartialEq for OutputProps {
    fn eq(&self, other: &OutputProps) -> bool {
        std::rc::Rc::ptr_eq(&self.outcome, &other.outcome)
    }
}

#[function_component(RunOutput)]
fn run_output(props: &OutputProps) -> Html {
    outcome_view(&props.outcome)
}

/// The link to the editor's code once asked for (or why there is none),
/// and whether it was copied.
type Shared = Option<(Result<String, String>, Option<bool>)>;

/// The sandbox panel.
#[function_component(Sandbox)]
pub fn sandbox() -> Html {
    // A code link (`?code=1.…#sandbox`) puts its snippet in the editor (it
    // runs when the learner presses Run); one that cannot be read says why.
    let linked = use_memo((), |_| crate::share::code_in_query(&page_query()));
    let example = use_state(|| match &*linked {
        Some(Ok(_)) => String::new(),
        _ => EXAMPLES[0].id.to_string(),
    });
    let code = use_state(|| match &*linked {
        Some(Ok(code)) => code.clone(),
        _ => EXAMPLES[0].code.to_string(),
    });
    let link_problem = match &*linked {
        Some(Err(problem)) => Some(format!("{problem}; the first example is shown instead.")),
        _ => None,
    };
    // The link to the editor's code, once asked for, and whether it was copied.
    let shared = use_state(|| None::<(Result<String, String>, Option<bool>)>);
    let timeout_text = use_state(|| DEFAULT_TIMEOUT_MS.to_string());
    let outcome = use_state(|| std::rc::Rc::new(Outcome::Idle));
    let finished_runs = use_mut_ref(|| 0_u32);
    let editor = use_node_ref();

    let run = run_callback(
        code.clone(),
        timeout_text.clone(),
        outcome.clone(),
        finished_runs.clone(),
    );

    let on_example = {
        let example = example.clone();
        let code = code.clone();
        let outcome = outcome.clone();
        Callback::from(move |event: Event| {
            let id = event.target_unchecked_into::<HtmlSelectElement>().value();
            if let Some(chosen) = EXAMPLES.iter().find(|candidate| candidate.id == id) {
                example.set(id);
                code.set(chosen.code.to_string());
                outcome.set(std::rc::Rc::new(Outcome::Idle));
            }
        })
    };
    let on_input = {
        let code = code.clone();
        Callback::from(move |event: InputEvent| {
            code.set(event.target_unchecked_into::<HtmlTextAreaElement>().value());
        })
    };
    let escaped = use_mut_ref(|| false);
    let on_keydown = editor_keys(code.clone(), run.clone(), editor.clone(), escaped);
    let on_timeout = {
        let timeout_text = timeout_text.clone();
        Callback::from(move |event: InputEvent| {
            timeout_text.set(event.target_unchecked_into::<HtmlInputElement>().value());
        })
    };
    let on_run = {
        let run = run.clone();
        Callback::from(move |_: MouseEvent| run.emit(()))
    };
    let copy_code_link = copy_code_link(code.clone(), shared.clone());
    let on_try = {
        let code = code.clone();
        let outcome = outcome.clone();
        let editor = editor.clone();
        Callback::from(move |example: String| {
            code.set(example);
            outcome.set(std::rc::Rc::new(Outcome::Idle));
            if let Some(area) = editor.cast::<HtmlTextAreaElement>() {
                let _ = area.focus();
                area.scroll_into_view();
            }
        })
    };

    let line_count = code.lines().count().max(1) + usize::from(code.ends_with('\n'));
    let timeout_error = parse_timeout(&timeout_text).err();
    let running = **outcome == Outcome::Running;

    html! {
        // `data-finished-runs` counts finished runs, so tests can wait for the next one.
        <section id="sandbox" class="card sandbox" aria-labelledby="sandbox-title" data-testid="sandbox" tabindex="-1"
            data-finished-runs={finished_runs.borrow().to_string()}>
            <h2 id="sandbox-title">{ "Run this" }</h2>
            <p class="hint">
                { "JavaScript with the engine's API in scope: " }
                <code>{ "partitionFor, murmur2, simulateKeyless, assign, assignStats, rebalance, Cluster, show, partitionMap" }</code>
                { ". It runs in an isolated worker with no network, storage or page access. Ctrl+Enter runs; Tab indents; Escape then Tab leaves the editor." }
            </p>
            <div class="form-row">
                <label for="sandbox-example">{ "Example" }</label>
                <select id="sandbox-example" data-testid="sandbox-example" onchange={on_example}>
                    { if example.is_empty() { html! { <option value="" selected=true>{ "Code from a link" }</option> } } else { html! {} } }
                    { for EXAMPLES.iter().map(|candidate| html! {
                        <option value={candidate.id} selected={*example == candidate.id}>{ candidate.title() }</option>
                    }) }
                </select>
                <label for="sandbox-timeout">{ "Time limit (ms)" }</label>
                <input id="sandbox-timeout" data-testid="sandbox-timeout" type="number" min="100" max="60000"
                    step="100" value={(*timeout_text).clone()} oninput={on_timeout} />
                <button type="button" class="run" data-testid="sandbox-run" onclick={on_run}
                    disabled={running || timeout_error.is_some()}>
                    { if running { "Running…" } else { "Run ▶" } }
                </button>
                <button type="button" data-testid="copy-code-link" title="A link that opens the sandbox with this code in the editor" onclick={copy_code_link}>{ "Copy link to this code" }</button>
            </div>
            { for timeout_error.map(|message| html! { <p class="error" role="alert">{ message }</p> }) }
            { for link_problem.map(|problem| html! { <p class="error" role="alert" data-testid="code-link-problem">{ problem }</p> }) }
            { share_view(&shared) }
            <div class="editor">
                <pre class="gutter" aria-hidden="true">
                    { (1..=line_count).map(|line| format!("{line}\n")).collect::<String>() }
                </pre>
                <textarea ref={editor} data-testid="sandbox-editor" aria-label="snippet"
                    spellcheck="false" wrap="off" rows={line_count.max(8).to_string()}
                    value={(*code).clone()} oninput={on_input} onkeydown={on_keydown} />
            </div>
            <RunOutput outcome={(*outcome).clone()} />
            { reference_view(&on_try) }
        </section>
    }
}

/// Run: the snippet goes to its isolated worker, and the outcome comes
/// back once (`finished_runs` counts them, for tests to wait on).
fn run_callback(
    code: UseStateHandle<String>,
    timeout_text: UseStateHandle<String>,
    outcome: UseStateHandle<std::rc::Rc<Outcome>>,
    finished_runs: std::rc::Rc<std::cell::RefCell<u32>>,
) -> Callback<()> {
    Callback::from(move |()| {
        if **outcome == Outcome::Running {
            return;
        }
        let Ok(timeout) = parse_timeout(&timeout_text) else {
            return;
        };
        outcome.set(std::rc::Rc::new(Outcome::Running));
        let outcome = outcome.clone();
        let finished_runs = finished_runs.clone();
        let on_done = Closure::once_into_js(move |value: JsValue| {
            *finished_runs.borrow_mut() += 1;
            match serde_wasm_bindgen::from_value::<RunResult>(value) {
                Ok(result) => {
                    crate::course::sandbox_ran();
                    let (drawn, hidden) = drawings(&result.shows);
                    outcome.set(std::rc::Rc::new(Outcome::Done(result, drawn, hidden)));
                }
                Err(error) => outcome.set(std::rc::Rc::new(Outcome::Broken(error.to_string()))),
            }
        });
        run_snippet(&code, f64::from(timeout), on_done.unchecked_ref());
    })
}

/// The editor's keys: Ctrl+Enter runs; Tab indents (two spaces) instead of
/// leaving the editor; Shift+Tab, and Escape then Tab, still move focus
/// (the way out of a field that takes Tab for indenting, as WAI-ARIA's
/// practices for editors advise).
fn editor_keys(
    code: UseStateHandle<String>,
    run: Callback<()>,
    editor: NodeRef,
    escaped: std::rc::Rc<std::cell::RefCell<bool>>,
) -> Callback<KeyboardEvent> {
    Callback::from(move |event: KeyboardEvent| {
        let leaving = std::mem::replace(&mut *escaped.borrow_mut(), event.key() == "Escape");
        if leaving && event.key() == "Tab" {
            return;
        }
        if event.key() == "Enter" && (event.ctrl_key() || event.meta_key()) {
            event.prevent_default();
            run.emit(());
        } else if event.key() == "Tab" && !event.shift_key() && !event.ctrl_key() && !event.alt_key() {
            event.prevent_default();
            if let Some(area) = editor.cast::<HtmlTextAreaElement>() {
                let value = area.value();
                let start = area.selection_start().ok().flatten().unwrap_or(0) as usize;
                let end = area.selection_end().ok().flatten().unwrap_or(0) as usize;
                let (start, end) = (utf16_to_byte(&value, start), utf16_to_byte(&value, end));
                let updated = format!("{}  {}", &value[..start], &value[end..]);
                area.set_value(&updated);
                let caret = (value[..start].encode_utf16().count() + 2) as u32;
                let _ = area.set_selection_range(caret, caret);
                code.set(updated);
            }
        }
    })
}

/// "Copy link to this code": the address, shown and copied where the page
/// may.
fn copy_code_link(code: UseStateHandle<String>, shared: UseStateHandle<Shared>) -> Callback<MouseEvent> {
    Callback::from(move |_: MouseEvent| {
        let base = crate::export::page_base();
        let address = crate::share::code_address(&base, &page_query(), &code);
        shared.set(Some((address.clone(), None)));
        if let Ok(url) = address {
            let shared = shared.clone();
            wasm_bindgen_futures::spawn_local(async move {
                let copied = crate::export::copy_to_clipboard(&url).await;
                shared.set(Some((Ok(url), Some(copied))));
            });
        }
    })
}

/// The code's link once asked for, or why there is none.
fn share_view(shared: &Shared) -> Html {
    match shared {
        Some((Ok(url), copied)) => html! {
            <div class="run-share" data-testid="code-share">
                <label>{ "Link to this code " }
                    <input type="text" readonly=true data-testid="code-link" value={url.clone()} />
                </label>
                <span class="muted" role="status">{ match copied {
                    Some(true) => "Copied.",
                    Some(false) => "Copying is not allowed here: select the link and copy it.",
                    None => "",
                } }</span>
            </div>
        },
        Some((Err(problem), _)) => {
            html! { <p class="error" role="alert" data-testid="code-share-problem">{ problem }</p> }
        }
        None => html! {},
    }
}

/// The API reference: every function with its signature, what it does and
/// an example the learner can load into the editor.
fn reference_view(on_try: &Callback<String>) -> Html {
    html! {
        <details class="reference" data-testid="api-reference">
            <summary>{ "API reference" }</summary>
            <dl>
                { for api_reference().into_iter().map(|entry| {
                    let on_click = {
                        let on_try = on_try.clone();
                        let example = entry.example.clone();
                        Callback::from(move |_: MouseEvent| on_try.emit(example.clone()))
                    };
                    html! {
                        <>
                            <dt id={format!("api-{}", entry.name.replace('.', "-"))}><code>{ &entry.signature }</code></dt>
                            <dd>
                                <p>{ &entry.doc }</p>
                                <pre class="json">{ &entry.example }</pre>
                                <button type="button" class="try" data-testid={format!("try-{}", entry.name)}
                                    onclick={on_click}>{ "Try it" }</button>
                            </dd>
                        </>
                    }
                }) }
            </dl>
        </details>
    }
}

/// A UTF-16 offset (what the DOM reports) as a byte offset into `text`.
fn utf16_to_byte(text: &str, utf16: usize) -> usize {
    let mut units = 0;
    for (byte, character) in text.char_indices() {
        if units >= utf16 {
            return byte;
        }
        units += character.len_utf16();
    }
    text.len()
}

fn outcome_view(outcome: &Outcome) -> Html {
    match outcome {
        Outcome::Idle => html! {
            <div class="console" data-testid="sandbox-console" aria-live="polite">
                <p class="muted">{ "Press Run to see the output here." }</p>
            </div>
        },
        Outcome::Running => html! {
            <div class="console" data-testid="sandbox-console" aria-live="polite" aria-busy="true">
                <p class="muted">{ "Running in a worker…" }</p>
            </div>
        },
        Outcome::Broken(message) => html! {
            <p class="error" role="alert" data-testid="sandbox-error">{ format!("The sandbox sent an unreadable result: {message}") }</p>
        },
        Outcome::Done(result, drawn, hidden) => html! {
            <>
                <div class="console" data-testid="sandbox-console" aria-live="polite">
                    { for result.logs.iter().map(|line| html! {
                        <pre class={classes!("log", line.kind.clone())}>{ &line.text }</pre>
                    }) }
                    { for result.capped.then(|| html! {
                        <p class="muted" data-testid="sandbox-capped">{ "(more output than the console keeps; the rest was dropped)" }</p>
                    }) }
                    { for result.error.as_ref().map(|error| html! {
                        <pre class="log error" role="alert" data-testid="sandbox-error">{ error.describe() }</pre>
                    }) }
                </div>
                <p class="muted status" data-testid="sandbox-status">
                    { if result.timed_out { "stopped".to_string() } else { format!("finished in {} ms", result.ms) } }
                </p>
                { for drawn.iter().map(shown_view) }
                { for (*hidden > 0).then(|| html! {
                    <p class="muted" data-testid="sandbox-truncated">{ format!("… {hidden} more value(s) passed to show() not drawn: the sandbox draws up to {OUTPUT_CHARS} characters and {OUTPUT_ITEMS} chips, rows or bars a run") }</p>
                }) }
            </>
        },
    }
}

fn shown_view(drawing: &Drawing) -> Html {
    let title = drawing.title.clone().map(|title| html! { <h3>{ title }</h3> });
    let truncated = drawing
        .truncated
        .clone()
        .map(|note| html! { <p class="muted" data-testid="sandbox-truncated">{ note }</p> });
    let body = match drawing.diagram.clone() {
        Diagram::Assignment(rows) => html! {
            <table class="assignment">
                <thead><tr><th>{ "member" }</th><th>{ "partitions" }</th></tr></thead>
                <tbody>
                    { for rows.into_iter().map(|(member, partitions)| html! {
                        <tr>
                            <th scope="row">{ member }</th>
                            <td>
                                { if partitions.is_empty() { html! { <span class="muted">{ "idle" }</span> } } else { html! {} } }
                                { for partitions.into_iter().map(|partition| html! { <span class="chip">{ partition }</span> }) }
                            </td>
                        </tr>
                    }) }
                </tbody>
            </table>
        },
        Diagram::PartitionMap(rows) => html! {
            <ul class="partition-map">
                { for rows.into_iter().map(|(partition, keys)| html! {
                    <li>
                        <span class="partition-number">{ format!("P{partition}") }</span>
                        { for keys.into_iter().map(|key| html! { <span class="chip">{ key }</span> }) }
                    </li>
                }) }
            </ul>
        },
        Diagram::Counts(counts) => {
            let max = counts.iter().map(|(_, count)| *count).max().unwrap_or(0).max(1);
            html! {
                <ul class="bars">
                    { for counts.into_iter().map(|(partition, count)| html! {
                        <li>
                            <span class="partition-number">{ format!("P{partition}") }</span>
                            <span class="bar" style={format!("width: {}%", count * 100 / max)}></span>
                            <span class="count">{ count }</span>
                        </li>
                    }) }
                </ul>
            }
        }
        Diagram::Json(text) => html! { <pre class="json">{ text }</pre> },
    };
    html! {
        <figure class="diagram" data-testid="sandbox-diagram">
            { for title }
            { body }
            { for truncated }
        </figure>
    }
}
