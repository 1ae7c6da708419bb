//! The simulator's module: the live map, the sequence steps and the
//! exercises' runs, loaded by the page's first module when first needed
//! (`js/simulator.js`, see `sim_slot`). `cargo xtask build` builds it with
//! wasm-bindgen into `dist/sim/`.

use wasm_bindgen::prelude::*;

// The JavaScript API (`murmur2`, `partitionFor`, `assign`, `Cluster`...):
// its exports are this module's too, so the sandbox's worker runs snippets
// on the very module the map runs on, and no learner downloads the engine
// twice (#35).
extern crate kafkascope_js;

fn main() {
    // A panic here is said to the page (js/crash.js, which the first module
    // installed) before the trap; in the sandbox's worker only logged.
    kafkascope_web::crash::install(kafkascope_web::crash::Module::Simulator);
}

/// How many of Yew's app ids this module skips before its first app.
///
/// Yew numbers its apps from 1 in each module, brands each app's elements
/// with the number, and lets the innermost app's root handle an event.
/// The page's first module has one app, whose root (the page's body) holds
/// the slots this module draws into. Were this module's first app numbered
/// 1 too, the first module would take events inside the map for its own
/// and look its own handlers up by this module's handler numbers. Starting
/// far above the first module's few apps keeps the numbers apart.
const SKIPPED_APP_IDS: usize = 256;

#[yew::function_component(Nothing)]
fn nothing() -> yew::Html {
    yew::Html::default()
}

fn skip_app_ids() {
    thread_local! {
        static SKIPPED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }
    if SKIPPED.with(|skipped| skipped.replace(true)) {
        return;
    }
    let Some(document) = web_sys::window().and_then(|window| window.document()) else {
        return;
    };
    // Each empty app takes a number and is kept (a few bytes each).
    for _ in 0..SKIPPED_APP_IDS {
        if let Ok(host) = document.create_element("div") {
            std::mem::forget(yew::Renderer::<Nothing>::with_root(host).render());
        }
    }
}

/// Draws `part` (`map` or `steps`) into `element`, an empty slot of the
/// page's first module, for the page's life. The part answers the host
/// page (it installs the host API and registers its commands).
#[wasm_bindgen]
pub fn mount(part: &str, element: web_sys::Element) -> Result<(), JsValue> {
    // A part is drawn once a page: a second copy would run unseen and take
    // the host's commands.
    thread_local! {
        static DRAWN: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    if DRAWN.with(|drawn| drawn.borrow().iter().any(|each| each == part)) {
        return Err(JsValue::from_str(&format!("the {part} is already drawn on this page")));
    }
    skip_app_ids();
    kafkascope_web::course::start(&[kafkascope_web::course_model::Part::Story]);
    match part {
        "map" => {
            std::mem::forget(yew::Renderer::<kafkascope_web::cluster_panel::ClusterPanel>::with_root(element).render())
        }
        "steps" => {
            std::mem::forget(yew::Renderer::<kafkascope_web::sequence::SequenceSteps>::with_root(element).render())
        }
        other => return Err(JsValue::from_str(&format!("the simulator draws no part {other:?}"))),
    }
    DRAWN.with(|drawn| drawn.borrow_mut().push(part.to_string()));
    Ok(())
}

/// Runs the lesson's exercise `index`: each case's outcome, or why the run
/// failed, as JSON (`{"Ok":[…]}` or `{"Err":"…"}`).
#[wasm_bindgen(js_name = revealExercise)]
pub fn reveal_exercise(index: usize) -> String {
    let result = kafkascope_web::lesson_model::lesson()
        .exercises
        .get(index)
        .ok_or_else(|| format!("the lesson has no exercise {index}"))
        .and_then(kafkascope_web::exercise_model::reveal);
    // A list of plain structs and strings: writing it cannot fail.
    serde_json::to_string(&result).unwrap_or_default()
}
