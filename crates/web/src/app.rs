//! The app shell and its first card, the key partitioner.
//!
//! Components here stay thin: they read a view model and dispatch user
//! input; all computation lives in [`crate::view_model`].

use web_sys::HtmlInputElement;
use yew::prelude::*;

use crate::view_model::{key_placement, KeyPlacement};

/// The whole page.
#[function_component(App)]
pub fn app() -> Html {
    html! {
        <>
            <header class="app-header">
                <h1>{ "kafkascope" }</h1>
                <p class="tagline">{ "Apache Kafka's internals, simulated faithfully in your browser." }</p>
                <nav class="app-nav" aria-label="sections">
                    <a href="#lesson">{ "Gist" }</a>
                    <a href="#map">{ "Map" }</a>
                    <a href="#steps">{ "Sequence steps" }</a>
                    <a href="#qa">{ "Q&A" }</a>
                    <a href="#sandbox">{ "Sandbox" }</a>
                    <a href="#learn">{ "Learn" }</a>
                    <a href="#partitioner">{ "Partitioner" }</a>
                </nav>
            </header>
            <main class="app-main">
                <crate::lesson::Lesson />
                <crate::cluster_panel::ClusterPanel />
                <crate::sequence::SequenceSteps />
                <KeyPartitioner />
                <crate::sandbox::Sandbox />
                <Learn />
            </main>
            <footer class="app-footer">
                { "Every answer on this page is computed by the same Rust engine as the kafkascope CLI, following Kafka's own rules." }
            </footer>
        </>
    }
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
        </section>
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
            if let Some(story) = crate::sequence_model::story(id) {
                let url = crate::sequence_model::merged_link(&query, story, 0, &[]);
                crate::lesson::open_in_page(&url, "steps");
            }
        })
    };
    html! {
        <section id="learn" class="card learn" aria-labelledby="learn-title" data-testid="learn" tabindex="-1">
            <h2 id="learn-title">{ "Learn" }</h2>
            <p class="hint">{ "A path through the stories; each opens in Sequence steps at its first step. Then try the same on the live map: kill a leader, turn acks down, add a consumer." }</p>
            <ol>
                { for crate::sequence_model::stories().iter().map(|story| {
                    let id = story.id.as_str();
                    html! {
                        <li><a href={format!("?story={id}&step=1#steps")} data-testid={format!("learn-{id}")}
                            onclick={open_story(id)}>{ id }</a>{ format!(" — {}", story.story().learn) }</li>
                    }
                }) }
            </ol>
        </section>
    }
}
