//! Voice readout: the browser's speech synthesis (the Web Speech API)
//! reads the gist, a step's caption or an answer aloud. One utterance at a
//! time for the whole page; the settings (voice, rate) are shared. Where
//! the browser has no speech synthesis the page says so and shows no
//! button that cannot work.

use std::cell::RefCell;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use yew::prelude::*;

/// The rates the learner can pick.
pub const RATES: [(f32, &str); 4] = [(0.75, "slow"), (1.0, "normal"), (1.25, "brisk"), (1.5, "fast")];

/// What is being read, shared by every read-aloud button of the page.
#[derive(Default)]
struct Voice {
    /// The voice's name (none: the browser's default).
    voice: Option<String>,
    rate: f32,
    /// The button whose text is being read, and whether it is paused.
    speaking: Option<(String, bool)>,
    /// Buttons to redraw when `speaking` changes.
    listeners: Vec<(String, Callback<()>)>,
}

thread_local! {
    static VOICE: RefCell<Voice> = RefCell::new(Voice { rate: 1.0, ..Voice::default() });
}

fn notify() {
    let listeners: Vec<Callback<()>> = VOICE.with(|voice| {
        voice
            .borrow()
            .listeners
            .iter()
            .map(|(_, callback)| callback.clone())
            .collect()
    });
    for listener in listeners {
        listener.emit(());
    }
}

/// The browser's speech synthesis, if it has one.
fn synthesis() -> Option<web_sys::SpeechSynthesis> {
    let window = web_sys::window()?;
    let present = js_sys::Reflect::get(&window, &JsValue::from_str("speechSynthesis"))
        .ok()
        .filter(|value| !value.is_undefined() && !value.is_null())?;
    // A stand-in object (the tests') is used as it is: every call on it is
    // by name.
    Some(present.unchecked_into::<web_sys::SpeechSynthesis>())
}

/// Whether this browser can read aloud.
pub fn available() -> bool {
    synthesis().is_some()
        && web_sys::window()
            .and_then(|window| js_sys::Reflect::get(&window, &JsValue::from_str("SpeechSynthesisUtterance")).ok())
            .is_some_and(|constructor| constructor.is_function())
}

/// Reads `text` aloud for the button `owner`, stopping anything else.
fn speak(owner: &str, text: &str) {
    let Some(synthesis) = synthesis() else { return };
    synthesis.cancel();
    let Ok(utterance) = web_sys::SpeechSynthesisUtterance::new_with_text(text) else {
        return;
    };
    let (rate, voice) = VOICE.with(|voice| {
        let voice = voice.borrow();
        (voice.rate, voice.voice.clone())
    });
    utterance.set_rate(rate);
    if let Some(name) = voice {
        if let Some(found) = synthesis.get_voices().iter().find_map(|candidate| {
            let candidate: web_sys::SpeechSynthesisVoice = candidate.unchecked_into();
            (candidate.name() == name).then_some(candidate)
        }) {
            utterance.set_voice(Some(&found));
        }
    }
    let owner_done = owner.to_string();
    let done = Closure::<dyn Fn()>::new(move || {
        let ended = VOICE.with(|voice| {
            let mut voice = voice.borrow_mut();
            let mine = voice
                .speaking
                .as_ref()
                .is_some_and(|(speaking, _)| *speaking == owner_done);
            if mine {
                voice.speaking = None;
            }
            mine
        });
        if ended {
            notify();
        }
    });
    utterance.set_onend(Some(done.as_ref().unchecked_ref()));
    utterance.set_onerror(Some(done.as_ref().unchecked_ref()));
    done.forget();
    VOICE.with(|voice| voice.borrow_mut().speaking = Some((owner.to_string(), false)));
    synthesis.speak(&utterance);
    notify();
}

fn stop() {
    if let Some(synthesis) = synthesis() {
        synthesis.cancel();
    }
    VOICE.with(|voice| voice.borrow_mut().speaking = None);
    notify();
}

fn toggle_pause() {
    let Some(synthesis) = synthesis() else { return };
    let paused = VOICE.with(|voice| {
        let mut voice = voice.borrow_mut();
        match voice.speaking.as_mut() {
            Some((_, paused)) => {
                *paused = !*paused;
                Some(*paused)
            }
            None => None,
        }
    });
    match paused {
        Some(true) => synthesis.pause(),
        Some(false) => synthesis.resume(),
        None => {}
    }
    notify();
}

#[derive(Properties, PartialEq)]
pub struct ReadAloudProps {
    /// What to read.
    pub text: AttrValue,
    /// A unique name for the button (its test id is `read-{id}`).
    pub id: AttrValue,
    /// The button's label.
    #[prop_or(AttrValue::from("Read aloud"))]
    pub label: AttrValue,
}

/// A read-aloud button; while it reads, Pause and Stop, and the text it
/// reads is marked (the `speaking` class on the element with
/// `data-read="{id}"`).
#[function_component(ReadAloud)]
pub fn read_aloud(props: &ReadAloudProps) -> Html {
    let redraw = use_force_update();
    {
        let id = props.id.to_string();
        use_effect_with(id, move |id| {
            let id = id.clone();
            let callback = Callback::from(move |_| redraw.force_update());
            VOICE.with(|voice| voice.borrow_mut().listeners.push((id.clone(), callback)));
            move || VOICE.with(|voice| voice.borrow_mut().listeners.retain(|(owner, _)| *owner != id))
        });
    }
    if !available() {
        return html! {};
    }
    let id = props.id.to_string();
    let state = VOICE.with(|voice| voice.borrow().speaking.clone());
    let mine = state
        .as_ref()
        .filter(|(owner, _)| *owner == id)
        .map(|(_, paused)| *paused);
    // Mark what is read.
    if let Some(document) = web_sys::window().and_then(|window| window.document()) {
        if let Ok(Some(element)) = document.query_selector(&format!("[data-read=\"{id}\"]")) {
            let _ = if mine.is_some() {
                element.class_list().add_1("speaking")
            } else {
                element.class_list().remove_1("speaking")
            };
        }
    }
    match mine {
        None => {
            let text = props.text.to_string();
            let owner = id.clone();
            let onclick = Callback::from(move |_: MouseEvent| speak(&owner, &text));
            html! {
                <button type="button" class="read-aloud" data-testid={format!("read-{id}")} {onclick}>{ props.label.clone() }</button>
            }
        }
        Some(paused) => html! {
            <span class="read-aloud speaking-controls" role="group" aria-label="reading aloud">
                <button type="button" data-testid={format!("read-pause-{id}")} onclick={Callback::from(|_: MouseEvent| toggle_pause())}>
                    { if paused { "▶ Resume" } else { "❚❚ Pause" } }
                </button>
                <button type="button" data-testid={format!("read-stop-{id}")} onclick={Callback::from(|_: MouseEvent| stop())}>{ "■ Stop" }</button>
            </span>
        },
    }
}

/// The voice and the rate every read-aloud button uses, or a sentence
/// where the browser cannot read aloud.
#[function_component(VoiceSettings)]
pub fn voice_settings() -> Html {
    let voices = use_state(Vec::<String>::new);
    {
        let voices = voices.clone();
        use_effect_with((), move |_| {
            // Voices load asynchronously in some browsers
            // (`voiceschanged`); ask now and once more shortly after.
            let load = move || {
                if let Some(synthesis) = synthesis() {
                    let names: Vec<String> = synthesis
                        .get_voices()
                        .iter()
                        .map(|voice| voice.unchecked_into::<web_sys::SpeechSynthesisVoice>().name())
                        .collect();
                    voices.set(names);
                }
            };
            load();
            let later = gloo_timers::callback::Timeout::new(500, load);
            move || drop(later)
        });
    }
    if !available() {
        return html! {
            <p class="muted hint" data-testid="voice-unavailable">
                { "Reading aloud needs the browser's speech synthesis (the Web Speech API), which this browser does not offer; everything it would read is written on the page." }
            </p>
        };
    }
    let on_voice = Callback::from(|event: Event| {
        let value = event.target_unchecked_into::<web_sys::HtmlSelectElement>().value();
        VOICE.with(|voice| voice.borrow_mut().voice = (!value.is_empty()).then_some(value));
    });
    let on_rate = Callback::from(|event: Event| {
        let value = event.target_unchecked_into::<web_sys::HtmlSelectElement>().value();
        if let Ok(rate) = value.parse::<f32>() {
            VOICE.with(|voice| voice.borrow_mut().rate = rate);
        }
    });
    html! {
        <div class="voice-settings form-row" data-testid="voice-settings">
            <label>{ "Voice " }
                <select data-testid="voice-select" onchange={on_voice}>
                    <option value="">{ "the browser's default" }</option>
                    { for voices.iter().map(|name| html! { <option value={name.clone()}>{ name }</option> }) }
                </select>
            </label>
            <label>{ "Rate " }
                <select data-testid="voice-rate" onchange={on_rate}>
                    { for RATES.iter().map(|(rate, label)| html! { <option value={rate.to_string()} selected={*rate == 1.0}>{ *label }</option> }) }
                </select>
            </label>
        </div>
    }
}
