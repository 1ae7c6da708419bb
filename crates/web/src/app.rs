//! The app shell and its first card, the key partitioner.
//!
//! Components here stay thin: they read a view model and dispatch user
//! input; all computation lives in [`crate::view_model`].

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::HtmlInputElement;
use yew::prelude::*;

use crate::page_view::View;

use crate::sim_slot::{SimPart, SimSlot};
use crate::view_model::{key_placement, KeyPlacement};

/// The whole page, or one part of it alone (`?embed=map`: compact, with a
/// link to the whole page), for a course page's iframe.
#[function_component(App)]
pub fn app() -> Html {
    // The host page API answers `hello` whatever the page shows. The map
    // and the steps are the simulator's module, which installs it where
    // they are (a page in a frame loads it at once); an embedded lesson or
    // sandbox installs it here, without the simulator. Otherwise this module
    // only learns the host's origin, to tell it if the simulator stops.
    use_effect_with((), |_| {
        let query = web_sys::window()
            .and_then(|window| window.location().search().ok())
            .unwrap_or_default();
        if matches!(
            crate::view_model::embed_mode(&query),
            Ok(Some(
                crate::view_model::Embed::Lesson | crate::view_model::Embed::Sandbox
            ))
        ) {
            crate::host_api::bridge::install();
        } else {
            crate::host_api::bridge::learn_origin();
        }
        || ()
    });
    let window = web_sys::window();
    let query = window
        .as_ref()
        .and_then(|window| window.location().search().ok())
        .unwrap_or_default();
    let hash = window
        .as_ref()
        .and_then(|window| window.location().hash().ok())
        .unwrap_or_default();
    let embed = crate::view_model::embed_mode(&query);
    if let Ok(Some(part)) = embed {
        let path = window
            .as_ref()
            .and_then(|window| window.location().pathname().ok())
            .unwrap_or_default();
        let whole = crate::view_model::whole_page_link(&path, &query, &hash);
        let section = match part {
            crate::view_model::Embed::Lesson => html! { <crate::lesson::Lesson /> },
            crate::view_model::Embed::Map => html! { <SimSlot part={SimPart::Map} /> },
            crate::view_model::Embed::Steps => html! { <SimSlot part={SimPart::Steps} /> },
            crate::view_model::Embed::Sandbox => html! { <crate::sandbox::Sandbox /> },
        };
        return html! {
            <div class="embedded" data-testid="embedded" data-embed={part.name()}>
                <header class="embed-bar">
                    <span class="embed-name">{ "kafkascope" }</span>
                    <a href={whole} target="_blank" rel="noopener" data-testid="open-whole">{ "Open in kafkascope ↗" }</a>
                </header>
                <main class="app-main embed-main">{ address_note() }{ section }</main>
            </div>
        };
    }
    let embed_problem = embed.err();
    html! {
        <>
            <PageViews problem={embed_problem.map(AttrValue::from)} />
            <footer class="app-footer">
                { "Every answer on this page is computed by the same Rust engine as the kafkascope CLI, following Kafka's own rules." }
                <EmbedCode />
            </footer>
        </>
    }
}

/// The parameters of the page's address it does not read, named.
fn address_note() -> Html {
    let query = web_sys::window()
        .and_then(|window| window.location().search().ok())
        .unwrap_or_default();
    match crate::view_model::unknown_params_note(&query) {
        Some(note) => html! { <p class="muted address-note" role="status" data-testid="address-note">{ note }</p> },
        None => html! {},
    }
}

/// The view the current address opens (see [`View::for_address`]); a
/// fragment the address alone does not place opens the view whose
/// container holds the element it names.
fn current_view() -> View {
    let Some(window) = web_sys::window() else {
        return View::default();
    };
    let location = window.location();
    let query = location.search().unwrap_or_default();
    let hash = location.hash().unwrap_or_default();
    if let Some(view) = View::for_fragment(&hash) {
        return view;
    }
    let id = hash.trim_start_matches('#');
    (!id.is_empty())
        .then(|| window.document())
        .flatten()
        .and_then(|document| document.get_element_by_id(id))
        .and_then(|element| element.closest("[data-view]").ok().flatten())
        .and_then(|container| container.get_attribute("data-view"))
        .and_then(|name| View::named(&name))
        .unwrap_or_else(|| View::for_query(&query))
}

/// The properties of [`PageViews`].
#[derive(Properties, PartialEq)]
struct PageViewsProps {
    /// Why an `?embed=` address could not be followed, shown at the top.
    problem: Option<AttrValue>,
}

/// The top bar and the five views, one shown at a time. Every view stays
/// mounted, so the map's run and a story's step survive a switch.
#[function_component(PageViews)]
fn page_views(props: &PageViewsProps) -> Html {
    let view = use_state(current_view);
    {
        let view = view.setter();
        use_effect_with((), move |_| {
            let follow = Closure::<dyn Fn()>::new(move || view.set(current_view()));
            let window = web_sys::window();
            let names = ["hashchange", "popstate", crate::sequence_model::NAVIGATE_EVENT];
            if let Some(window) = &window {
                for name in names {
                    let _ = window.add_event_listener_with_callback(name, follow.as_ref().unchecked_ref());
                }
                // Now the views are drawn, a fragment inside one of them
                // can be placed.
                let _ = follow
                    .as_ref()
                    .unchecked_ref::<js_sys::Function>()
                    .call0(&JsValue::NULL);
            }
            move || {
                if let Some(window) = &window {
                    for name in names {
                        let _ = window.remove_event_listener_with_callback(name, follow.as_ref().unchecked_ref());
                    }
                }
                drop(follow);
            }
        });
    }
    // The page opened on this view; only a later switch moves the focus.
    let opened = use_mut_ref(|| false);
    use_effect_with(*view, move |&view| {
        if view.needs_simulator() {
            crate::sim_slot::want_simulator();
        }
        show_view(view, std::mem::replace(&mut *opened.borrow_mut(), true));
    });
    let links = View::ALL.into_iter().map(|each| {
        let current = (*view == each).then_some("page");
        html! {
            <a href={each.fragment()} data-testid={format!("nav-{}", each.name())} aria-current={current}
                title={each.description()}>{ each.label() }</a>
        }
    });
    let shown = |each: View, content: Html| {
        html! {
            <div class="view" data-view={each.name()} data-testid={format!("view-{}", each.name())} hidden={*view != each}>
                { content }
            </div>
        }
    };
    html! {
        <>
            <header class="app-header">
                <a class="brand" href="#lesson" title="kafkascope: Apache Kafka's internals, simulated faithfully in your browser">
                    <h1>{ "kafkascope" }</h1>
                </a>
                <nav class="app-nav" aria-label="views" data-testid="app-nav">{ for links }</nav>
            </header>
            <main class="app-main" data-view-shown={view.name()}>
                { props.problem.clone().map(|problem| html! { <p class="error" role="alert" data-testid="embed-problem">{ problem }</p> }).unwrap_or_default() }
                { address_note() }
                { shown(View::Learn, html! { <>
                    <p class="tagline">{ "Apache Kafka's internals, simulated faithfully in your browser." }</p>
                    <crate::lesson::Lesson />
                    <Learn />
                </> }) }
                // The simulator's module draws these two when first needed.
                { shown(View::Map, html! { <SimSlot part={SimPart::Map} /> }) }
                { shown(View::Stories, html! { <SimSlot part={SimPart::Steps} /> }) }
                { shown(View::Sandbox, html! { <crate::sandbox::Sandbox /> }) }
                { shown(View::Partitioner, html! { <KeyPartitioner /> }) }
            </main>
        </>
    }
}

/// What the page does when `view` shows: the document says which view is
/// shown (`data-page-view` on `<html>`, for the styles and for tests), and the page goes to
/// the element the fragment names, or to the top. On a switch (not as the
/// page opens) the focus moves there too, so a keyboard or screen reader
/// user lands in the view they chose.
fn show_view(view: View, switched: bool) {
    let Some(document) = web_sys::window().and_then(|window| window.document()) else {
        return;
    };
    if let Some(root) = document.document_element() {
        let _ = root.set_attribute("data-page-view", view.name());
    }
    // After this render has drawn the view.
    gloo_timers::callback::Timeout::new(0, move || {
        let Some(window) = web_sys::window() else { return };
        let Some(document) = window.document() else { return };
        let hash = window.location().hash().unwrap_or_default();
        let id = hash.trim_start_matches('#');
        let container = document
            .query_selector(&format!("[data-view=\"{}\"]", view.name()))
            .ok()
            .flatten();
        let named = (!id.is_empty())
            .then(|| document.get_element_by_id(id))
            .flatten()
            .filter(|element| {
                container
                    .as_ref()
                    .is_some_and(|container| container.contains(Some(element)))
            });
        let is_section = named.as_ref().is_some_and(|element| {
            View::ALL
                .into_iter()
                .any(|each| each.fragment().trim_start_matches('#') == element.id())
        });
        match &named {
            Some(element) if !is_section => element.scroll_into_view(),
            _ => window.scroll_to_with_x_and_y(0.0, 0.0),
        }
        if switched {
            let target = named.or_else(|| {
                container
                    .as_ref()
                    .and_then(|container| container.query_selector("section[tabindex]").ok().flatten())
            });
            if let Some(target) = target.and_then(|target| target.dyn_into::<web_sys::HtmlElement>().ok()) {
                let options = web_sys::FocusOptions::new();
                options.set_prevent_scroll(true);
                let _ = target.focus_with_options(&options);
            }
        }
    })
    .forget();
}

/// "Which partition does this key go to?": murmur2 over the key's UTF-8
/// bytes, the sign bit cleared, modulo the partition count.
#[function_component(KeyPartitioner)]
pub fn key_partitioner() -> Html {
    let key = use_state(|| "user-42".to_string());
    let partition_count_text = use_state(|| "6".to_string());

    let on_key = {
        let key = key.clone();
        Callback::from(move |event: InputEvent| {
            key.set(event.target_unchecked_into::<HtmlInputElement>().value());
        })
    };
    let on_count = {
        let partition_count_text = partition_count_text.clone();
        Callback::from(move |event: InputEvent| {
            partition_count_text.set(event.target_unchecked_into::<HtmlInputElement>().value());
        })
    };

    let result = key_placement(&key, &partition_count_text);

    html! {
        <section id="partitioner" class="card" aria-labelledby="partitioner-title" tabindex="-1">
            <h2 id="partitioner-title">{ "Which partition does a key go to?" }</h2>
            <div class="form-row">
                <label for="key-input">{ "Key" }</label>
                <input id="key-input" data-testid="key-input" type="text"
                    value={(*key).clone()} oninput={on_key} spellcheck="false" />
                <label for="partitions-input">{ "Partitions" }</label>
                <input id="partitions-input" data-testid="partitions-input" type="number"
                    min="1" max="64" value={(*partition_count_text).clone()} oninput={on_count} />
            </div>
            { match result {
                Ok(placement) => placement_view(&placement),
                Err(message) => html! {
                    <p class="error" role="alert" data-testid="partition-error">{ message }</p>
                },
            } }
            <KeyDistributionView />
        </section>
    }
}

/// The documents' collector, keyed by router: many keys over the
/// partitions, the load each partition gets, and the keys that move when
/// partitions are added.
#[function_component(KeyDistributionView)]
fn key_distribution_view() -> Html {
    let keys = use_state(|| {
        "192.168.1.1 40\n192.168.1.2 5\n192.168.1.3 5\n192.168.1.4 5\n192.168.1.5 5\n192.168.1.6 5\n192.168.1.7 5\n192.168.1.8 5".to_string()
    });
    let now = use_state(|| "3".to_string());
    let after = use_state(|| "4".to_string());
    let text = |state: &UseStateHandle<String>| {
        let state = state.clone();
        Callback::from(move |event: InputEvent| state.set(event.target_unchecked_into::<HtmlInputElement>().value()))
    };
    let on_keys = {
        let keys = keys.clone();
        Callback::from(move |event: InputEvent| {
            keys.set(event.target_unchecked_into::<web_sys::HtmlTextAreaElement>().value());
        })
    };
    let bars = |load: &[u64], label: &str, testid: &str| {
        let most = load.iter().copied().max().unwrap_or(0).max(1);
        html! {
            <ol class="load-bars" aria-label={label.to_string()} data-testid={testid.to_string()} start="0">
                { for load.iter().enumerate().map(|(partition, records)| html! {
                    <li>
                        <span class="partition-number">{ format!("p{partition}") }</span>
                        <span class="load-bar" style={format!("width: {}%", records * 100 / most)}></span>
                        <span class="muted">{ format!(" {records}/s") }</span>
                    </li>
                }) }
            </ol>
        }
    };
    html! {
        <details class="key-distribution" data-testid="key-distribution">
            <summary>{ "Many keys: hot partitions, and what moves when partitions are added" }</summary>
            <p class="hint">{ "A collector receives logs from routers and keys each record by its router's address, so a router's logs stay in order in one partition. Design the key backwards from the consumer: it needs one router's logs in order, not all of them. One key per line, with its records a second after a space." }</p>
            <div class="form-row">
                <textarea aria-label="keys, one a line, with their rate" data-testid="keys-input" rows="6" cols="28" spellcheck="false" value={(*keys).clone()} oninput={on_keys} />
                <label>{ "Partitions now " }<input type="number" min="1" max="64" data-testid="keys-partitions" value={(*now).clone()} oninput={text(&now)} /></label>
                <label>{ "after adding " }<input type="number" min="1" max="64" data-testid="keys-after" value={(*after).clone()} oninput={text(&after)} /></label>
            </div>
            { match crate::view_model::key_distribution(&keys, &now, &after) {
                Err(message) => html! { <p class="error" role="alert" data-testid="keys-error">{ message }</p> },
                Ok(view) => {
                    let moved: Vec<&crate::view_model::KeyRow> = view.moved().collect();
                    html! { <>
                        <p data-testid="keys-hottest">{ format!("The busiest partition takes {}% of the records: a hot key makes a hot partition, and only a better key spreads it (more partitions do not split one key).", view.hottest_share()) }</p>
                        <div class="load-compare">
                            <div><h4>{ format!("{} partitions", view.partitions) }</h4>{ bars(&view.load, "records a second per partition now", "keys-load") }</div>
                            <div><h4>{ format!("{} partitions", view.after) }</h4>{ bars(&view.load_after, "records a second per partition after adding", "keys-load-after") }</div>
                        </div>
                        <p data-testid="keys-moved">{ if moved.is_empty() {
                            "No key moves.".to_string()
                        } else {
                            format!(
                                "{} of {} keys move: {}. Their old records stay where they were, so for a while a key's records sit in two partitions and a consumer can read its new ones before its old ones.",
                                moved.len(),
                                view.rows.len(),
                                moved.iter().map(|row| format!("{} (p{} → p{})", row.key, row.partition, row.after)).collect::<Vec<_>>().join(", ")
                            )
                        } }</p>
                    </> }
                }
            } }
        </details>
    }
}

fn placement_view(placement: &KeyPlacement) -> Html {
    let partition_boxes = (0..placement.partition_count).map(|partition| {
        let chosen = partition == placement.partition;
        let label = if chosen {
            format!("partition {partition}, chosen")
        } else {
            format!("partition {partition}")
        };
        html! {
            <li class={classes!("partition-box", chosen.then_some("chosen"))} aria-label={label}>
                <span class="partition-number">{ partition }</span>
                { if chosen { html!{ <span class="marker">{ "◀ key" }</span> } } else { html!{} } }
            </li>
        }
    });
    html! {
        <div class="placement" aria-live="polite">
            <p class="answer">
                { "Key " }<code data-testid="key-echo">{ format!("{:?}", placement.key) }</code>
                { " goes to " }<strong>{ "partition " }<span data-testid="partition">{ placement.partition }</span></strong>
                { format!(" of {}.", placement.partition_count) }
            </p>
            <ol class="steps">
                <li>{ "murmur2(UTF-8 bytes) = " }<code data-testid="murmur2">{ placement.murmur2 }</code></li>
                <li>{ "toPositive: clear the sign bit = " }<code>{ placement.positive_hash }</code></li>
                <li>{ format!("{} mod {} = ", placement.positive_hash, placement.partition_count) }<code>{ placement.partition }</code></li>
            </ol>
            <ul class="partitions" aria-label="partitions of the topic">{ for partition_boxes }</ul>
        </div>
    }
}

/// Learn: a path through the page, story by story, in the stories' order
/// (each scenario file's `story` block gives its place and its sentence).
#[function_component(Learn)]
pub fn learn() -> Html {
    // A Learn link opens its story in Sequence steps without loading the
    // page again (which would throw away the learner's map): the address
    // changes, the steps section follows it, and the page scrolls there.
    let open_story = |id: &'static str| {
        Callback::from(move |event: MouseEvent| {
            if event.ctrl_key() || event.meta_key() || event.shift_key() || event.button() != 0 {
                return; // a new tab or window loads it as usual
            }
            event.prevent_default();
            let Some(window) = web_sys::window() else { return };
            let query = window.location().search().unwrap_or_default();
            let url = crate::sequence_model::merged_story_link(&query, id);
            crate::lesson::open_in_page(&url, "steps");
        })
    };
    html! {
        <section id="learn" class="card learn" aria-labelledby="learn-title" data-testid="learn" tabindex="-1">
            <h2 id="learn-title">{ "Learn" }</h2>
            <p class="hint">{ "A path through the stories; each opens in Stories on its first chapter. Then try the same on the live map: kill a leader, turn acks down, add a consumer." }</p>
            <ol>
                { for crate::sequence_model::story_index().iter().map(|&(id, learn)| {
                    html! {
                        <li><a href={format!("?story={id}#steps")} data-testid={format!("learn-{id}")}
                            onclick={open_story(id)}>{ id }</a>{ format!(" — {learn}") }</li>
                    }
                }) }
            </ol>
        </section>
    }
}

/// For course authors: the HTML that embeds one part of this page.
#[function_component(EmbedCode)]
fn embed_code_view() -> Html {
    use crate::view_model::{embed_code, Embed};
    let part = use_state(|| Embed::Map);
    let on_part = {
        let part = part.clone();
        Callback::from(move |event: Event| {
            let value = event.target_unchecked_into::<web_sys::HtmlSelectElement>().value();
            if let Some(chosen) = Embed::ALL.into_iter().find(|each| each.name() == value) {
                part.set(chosen);
            }
        })
    };
    let text = {
        let part = *part;
        Callback::from(move |_| {
            let location = web_sys::window().map(|window| window.location());
            let page = location
                .map(|location| {
                    format!(
                        "{}{}",
                        location.origin().unwrap_or_default(),
                        location.pathname().unwrap_or_default()
                    )
                })
                .unwrap_or_default();
            embed_code(&page, part)
        })
    };
    html! {
        <div class="embed-code" data-testid="embed-code">
            <label>{ "Embed a part of this page in a course: " }
                <select data-testid="embed-part" onchange={on_part}>
                    { for Embed::ALL.into_iter().map(|each| html! { <option value={each.name()} selected={*part == each}>{ each.name() }</option> }) }
                </select>
            </label>
            { " " }
            <crate::export::MermaidExport label="Show the embed code" description="HTML that embeds this part of the page"
                ids={(AttrValue::from("embed-show"), AttrValue::from("embed-text"), AttrValue::from("embed-copy"))} {text} />
        </div>
    }
}
