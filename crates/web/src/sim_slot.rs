//! The simulator, loaded when the page first needs it.
//!
//! The page starts with its first module (this crate's `kafkascope-web`
//! binary): the lesson, the partitioner, the sandbox's panel and Learn. The
//! live map, the sequence steps and the exercises' runs need the simulator,
//! which is most of the code; they are a second module (the
//! `kafkascope-sim` binary, `sim/` next to the page) that draws into the
//! slots this module leaves for them. It loads when a slot comes near the
//! screen, when the address or a link asks for the map or the steps (a
//! story, a run link, a knob, `#steps`, an embedded map), when the learner
//! asks, or when an exercise runs.
//!
//! Both modules run Yew; each draws only into its own elements (the slot's
//! element is empty in this module's tree), so neither touches the other's
//! nodes.

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use yew::prelude::*;

#[wasm_bindgen(module = "/js/simulator.js")]
extern "C" {
    #[wasm_bindgen(js_name = simulatorWaiting)]
    fn simulator_waiting();
    #[wasm_bindgen(js_name = mountSimulator, catch)]
    async fn mount_simulator(part: &str, element: web_sys::Element) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(js_name = revealExercise, catch)]
    async fn reveal_exercise_js(index: usize) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(js_name = whenNear)]
    fn when_near(element: &web_sys::Element, callback: &js_sys::Function) -> js_sys::Function;
}

/// The address parameters the map or the steps read: any of them loads
/// the simulator as the page opens.
pub const SIMULATOR_PARAMS: [&str; 8] = [
    "story",
    "step",
    "fork",
    crate::share::RUN_PARAM,
    "seed",
    "preset",
    crate::lesson_model::KNOB_PARAM,
    crate::sequence_model::SCENARIO_PARAM,
];

/// Said on `window` when something needs the simulator: every slot loads.
pub const WANTED_EVENT: &str = "kafkascope-simulator-wanted";

/// A part of the page the simulator draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimPart {
    /// The live map (`#map`).
    Map,
    /// Sequence steps (`#steps`).
    Steps,
}

impl SimPart {
    /// Its name for the simulator's `mount` and its element's id.
    pub fn id(self) -> &'static str {
        match self {
            SimPart::Map => "map",
            SimPart::Steps => "steps",
        }
    }

    /// Its heading, shown while it loads.
    pub fn title(self) -> &'static str {
        match self {
            SimPart::Map => "The map: a running cluster",
            SimPart::Steps => "Stories: a run, message by message",
        }
    }
}

/// Whether the address needs the simulator as the page opens, rather than
/// when the map or the steps come near the screen:
/// - an embedded map or steps (`embed=map|steps`), or the whole page inside
///   another page's frame (its host drives the map and the steps);
/// - a parameter the map or the steps read ([`SIMULATOR_PARAMS`]: a story,
///   a step, forks, a run link, a seed, a preset, a knob, a scenario; not
///   `play=0` alone, a code link or a stranger's `utm_source`);
/// - an address fragment that names no element of the first module
///   (`#map`, `#steps`, or something inside them).
///
/// An embedded lesson or sandbox never needs it at once (an exercise's run
/// loads it).
pub fn needed_at_once(query: &str, in_a_frame: bool, fragment_in_shell: bool) -> bool {
    match crate::view_model::embed_mode(query) {
        Ok(Some(crate::view_model::Embed::Lesson | crate::view_model::Embed::Sandbox)) => return false,
        Ok(Some(_)) => return true,
        _ => {}
    }
    let asks = query
        .trim_start_matches('?')
        .split('&')
        .filter_map(|pair| pair.split('=').next())
        .any(|key| SIMULATOR_PARAMS.contains(&key));
    in_a_frame || asks || !fragment_in_shell
}

fn window_event_listener(name: &'static str, callback: &js_sys::Function) -> impl FnOnce() {
    let window = web_sys::window();
    if let Some(window) = &window {
        let _ = window.add_event_listener_with_callback(name, callback);
    }
    let callback = callback.clone();
    move || {
        if let Some(window) = &window {
            let _ = window.remove_event_listener_with_callback(name, &callback);
        }
    }
}

/// Asks every slot to load the simulator now.
pub fn want_simulator() {
    if let Some(window) = web_sys::window() {
        if let Ok(event) = web_sys::Event::new(WANTED_EVENT) {
            let _ = window.dispatch_event(&event);
        }
    }
}

/// Where a slot is.
#[derive(Debug, Clone, PartialEq)]
enum Phase {
    Waiting,
    Loading,
    Ready,
    Failed(String),
}

/// The properties of [`SimSlot`].
#[derive(Properties, PartialEq)]
pub struct SimSlotProps {
    pub part: SimPart,
}

/// A slot the simulator draws `part` into, with a stand-in until it has.
#[function_component(SimSlot)]
pub fn sim_slot(props: &SimSlotProps) -> Html {
    let part = props.part;
    let phase = use_state(|| Phase::Waiting);
    // The phase as the listeners see it (they outlive renders).
    let current = use_mut_ref(|| Phase::Waiting);
    let root = use_node_ref();
    let stand_in = use_node_ref();
    // Whether the address asked for this part (its #fragment is inside it),
    // and whether the learner has scrolled, pressed a key or touched the
    // page since: only then does the page go to the fragment once drawn.
    let by_address = use_mut_ref(|| false);
    let learner_moved = use_mut_ref(|| false);
    let start = start_callback(part, phase.clone(), current.clone(), root.clone());
    {
        let start = start.clone();
        let stand_in = stand_in.clone();
        let by_address = by_address.clone();
        let learner_moved = learner_moved.clone();
        use_effect_with((), move |_| {
            simulator_waiting();
            let moved = Closure::<dyn Fn()>::new(move || *learner_moved.borrow_mut() = true);
            let stop_moved: Vec<_> = ["wheel", "touchstart", "keydown"]
                .into_iter()
                .map(|name| window_event_listener(name, moved.as_ref().unchecked_ref()))
                .collect();
            let wanted = {
                let start = start.clone();
                Closure::<dyn Fn()>::new(move || start.emit(()))
            };
            let stop_wanted = window_event_listener(WANTED_EVENT, wanted.as_ref().unchecked_ref());
            // A lesson or Learn link that opens a story or sets a knob.
            let stop_navigate =
                window_event_listener(crate::sequence_model::NAVIGATE_EVENT, wanted.as_ref().unchecked_ref());
            let stop_near = stand_in
                .cast::<web_sys::Element>()
                .map(|element| when_near(&element, wanted.as_ref().unchecked_ref()));
            let (query, in_a_frame, fragment_in_shell) = address_facts();
            if needed_at_once(&query, in_a_frame, fragment_in_shell) {
                *by_address.borrow_mut() = !fragment_in_shell;
                start.emit(());
            }
            move || {
                stop_wanted();
                stop_navigate();
                for stop in stop_moved {
                    stop();
                }
                drop(moved);
                if let Some(stop) = stop_near {
                    let _ = stop.call0(&JsValue::NULL);
                }
                drop(wanted);
            }
        });
    }
    use_fragment_in_view((*phase).clone(), by_address, learner_moved, part);
    let load_now = {
        let start = start.clone();
        Callback::from(move |_: MouseEvent| start.emit(()))
    };
    let stand_in_view = stand_in_view(part, &phase, stand_in, load_now);
    html! {
        <>
            <div class="sim-slot" ref={root} id={format!("{}-slot", part.id())} data-part={part.id()}></div>
            { stand_in_view }
        </>
    }
}

/// Start: draw the simulator into the slot once (the other slot loads
/// too), and say why where it cannot.
fn start_callback(
    part: SimPart,
    phase: UseStateHandle<Phase>,
    current: std::rc::Rc<std::cell::RefCell<Phase>>,
    root: NodeRef,
) -> Callback<()> {
    Callback::from(move |_: ()| {
        if matches!(*current.borrow(), Phase::Loading | Phase::Ready) {
            return;
        }
        let Some(element) = root.cast::<web_sys::Element>() else {
            return;
        };
        *current.borrow_mut() = Phase::Loading;
        phase.set(Phase::Loading);
        // The other slot loads too: the map and the steps follow the
        // same links and answer the same host.
        want_simulator();
        let phase = phase.clone();
        let current = current.clone();
        wasm_bindgen_futures::spawn_local(async move {
            let next = match mount_simulator(part.id(), element).await {
                Ok(_) => Phase::Ready,
                Err(error) => {
                    let reason = error
                        .dyn_ref::<js_sys::Error>()
                        .map(|error| String::from(error.message()))
                        .or_else(|| error.as_string())
                        .unwrap_or_else(|| "its code did not load".to_string());
                    // No part the host drives will answer it.
                    crate::host_api::bridge::report_unavailable(&reason);
                    Phase::Failed(reason)
                }
            };
            *current.borrow_mut() = next.clone();
            phase.set(next);
        });
    })
}

/// What the address asks for: its query, whether the page is in a frame,
/// and whether its fragment names something outside the simulator's parts.
fn address_facts() -> (String, bool, bool) {
    let window = web_sys::window();
    let location = window.as_ref().map(|window| window.location());
    let query = location
        .as_ref()
        .and_then(|location| location.search().ok())
        .unwrap_or_default();
    let hash = location
        .as_ref()
        .and_then(|location| location.hash().ok())
        .unwrap_or_default();
    let id = hash.trim_start_matches('#');
    let fragment_in_shell = id.is_empty()
        || window
            .as_ref()
            .and_then(|window| window.document())
            .and_then(|document| document.get_element_by_id(id))
            .is_some_and(|element| !element.has_attribute("data-sim-stand-in"));
    let in_a_frame = window
        .as_ref()
        .and_then(|window| {
            window
                .parent()
                .ok()
                .flatten()
                .map(|parent| !js_sys::Object::is(&parent, window))
        })
        .unwrap_or(false);
    (query, in_a_frame, fragment_in_shell)
}

/// Once drawn, an address's fragment inside this part comes into view (the
/// browser looked for it before it existed), unless the learner has moved
/// on meanwhile.
#[hook]
fn use_fragment_in_view(
    phase: Phase,
    by_address: std::rc::Rc<std::cell::RefCell<bool>>,
    learner_moved: std::rc::Rc<std::cell::RefCell<bool>>,
    part: SimPart,
) {
    use_effect_with(phase, move |phase| {
        if *phase == Phase::Ready && *by_address.borrow() && !*learner_moved.borrow() {
            let document = web_sys::window().and_then(|window| window.document());
            let hash = document
                .as_ref()
                .and_then(|document| document.location())
                .and_then(|location| location.hash().ok())
                .unwrap_or_default();
            let id = hash.trim_start_matches('#');
            let target = (!id.is_empty())
                .then(|| document.as_ref().and_then(|document| document.get_element_by_id(id)))
                .flatten();
            if let (Some(target), Some(root)) = (target, root_of(part)) {
                if root.contains(Some(&target)) {
                    target.scroll_into_view();
                }
            }
        }
    });
}

/// What the slot shows until the simulator has drawn: a way to load it now,
/// the load under way, or why it failed.
fn stand_in_view(part: SimPart, phase: &Phase, stand_in: NodeRef, load_now: Callback<MouseEvent>) -> Html {
    match phase {
        Phase::Ready => html! {},
        phase => html! {
            <section id={part.id()} class="card wide sim-stand-in" ref={stand_in.clone()} data-sim-stand-in="true"
                data-testid={format!("{}-stand-in", part.id())} aria-labelledby={format!("{}-stand-in-title", part.id())}>
                <h2 id={format!("{}-stand-in-title", part.id())}>{ part.title() }</h2>
                { match phase {
                    Phase::Waiting => html! {
                        <p>
                            { "The simulator loads when this view opens (about a megabyte, once). " }
                            <button type="button" data-testid={format!("{}-load", part.id())} onclick={load_now}>{ "Load it now" }</button>
                        </p>
                    },
                    Phase::Failed(message) => html! {
                        <p class="error" role="alert" data-testid={format!("{}-load-failed", part.id())}>
                            { format!("The simulator could not load: {message}. ") }
                            <button type="button" onclick={load_now}>{ "Try again" }</button>
                        </p>
                    },
                    _ => html! { <p role="status">{ "Loading the simulator…" }</p> },
                } }
            </section>
        },
    }
}

fn root_of(part: SimPart) -> Option<web_sys::Element> {
    web_sys::window()
        .and_then(|window| window.document())
        .and_then(|document| document.get_element_by_id(&format!("{}-slot", part.id())))
}

/// Runs the lesson's exercise `index` in the simulator (loading it if need
/// be): each case's outcome, or why the run failed.
pub async fn reveal_exercise(index: usize) -> Result<Vec<crate::exercise_model::Revealed>, String> {
    let json = reveal_exercise_js(index)
        .await
        .map_err(|error| {
            format!(
                "the simulator could not load: {}",
                error
                    .dyn_ref::<js_sys::Error>()
                    .map(|error| String::from(error.message()))
                    .unwrap_or_else(|| "its code did not load".to_string())
            )
        })?
        .as_string()
        .unwrap_or_default();
    serde_json::from_str::<Result<Vec<crate::exercise_model::Revealed>, String>>(&json)
        .map_err(|error| format!("the simulator's answer could not be read: {error}"))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_simulator_loads_at_once_only_when_the_address_or_the_host_needs_it() {
        // A plain visit, a code link, a lesson or sandbox embed: later.
        for query in [
            "",
            "?code=1.abc#sandbox",
            "?embed=lesson",
            "?embed=sandbox&host=https%3A%2F%2Fx",
            "?play=0",
            "?utm_source=course&fbclid=x",
        ] {
            assert!(!needed_at_once(query, false, true), "{query}");
        }
        assert!(!needed_at_once("?embed=lesson", true, true), "an embedded lesson");
        // A story, a run link, a seed, a knob, an embedded map or steps:
        // at once.
        for query in [
            "?story=happy-path&step=3",
            "?run=1.x",
            "?seed=7",
            "?knob=acks:1",
            "?embed=map",
            "?embed=steps",
            "?play=0&preset=bench",
            "?scenario=https%3A%2F%2Fx%2Fa.json",
        ] {
            assert!(needed_at_once(query, false, true), "{query}");
        }
        // The whole page in a frame (its host drives the map), or `#steps`.
        assert!(needed_at_once("", true, true));
        assert!(needed_at_once("", false, false));
    }

    #[test]
    fn each_part_names_its_element() {
        assert_eq!(SimPart::Map.id(), "map");
        assert_eq!(SimPart::Steps.id(), "steps");
    }
}
