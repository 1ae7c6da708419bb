//! The browser side of a course package ([`crate::course_model`]): started
//! once per module when the address is a package's launch (`scorm=`), it
//! reads what the platform kept (`cmi.suspend_data`), hands the exercises
//! their saved answers and the story its saved step, and reports every
//! change. Outside a package it does nothing.

use std::cell::RefCell;

use wasm_bindgen::prelude::*;

use crate::course_model::{launch, part, scored_exercises, values, ExerciseProgress, Launch, Part, Progress};
use crate::exercise_model::Outcome;

#[wasm_bindgen(module = "/js/course.js")]
extern "C" {
    #[wasm_bindgen(js_name = courseStart)]
    fn course_start(version: &str) -> Option<String>;
    #[wasm_bindgen(js_name = courseGet)]
    fn course_get(key: &str) -> String;
    #[wasm_bindgen(js_name = courseReport)]
    fn course_report(pairs: js_sys::Array) -> js_sys::Array;
}

struct Session {
    launch: Launch,
    part: Part,
    progress: Progress,
}

thread_local! {
    static SESSION: RefCell<Option<Session>> = const { RefCell::new(None) };
    static STARTED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Starts the package's session (once per module). The page's `<html>`
/// says how it went: `data-course="recording"`, or `"alone"` with the
/// reason in `data-course-problem` when no platform took the session.
/// The module that draws the package's part (`owns`) reports at once, so
/// the platform hears `incomplete` from the start, not "not attempted"
/// (which some platforms turn into "completed" when the session ends).
pub fn start(owns: &[Part]) {
    if STARTED.with(|started| started.replace(true)) {
        return;
    }
    let query = crate::export::page_query();
    let Some(launch) = launch(&query) else { return };
    let problem = course_start(launch.scorm.name());
    let root = web_sys::window()
        .and_then(|window| window.document())
        .and_then(|document| document.document_element());
    if let Some(root) = &root {
        let _ = root.set_attribute("data-course", if problem.is_some() { "alone" } else { "recording" });
        if let Some(problem) = &problem {
            let _ = root.set_attribute("data-course-problem", problem);
        }
    }
    if problem.is_some() {
        return;
    }
    let progress = Progress::resume(&course_get("cmi.suspend_data"));
    let part = part(&query);
    if part == Part::Story {
        resume_story_step(&query, progress.step);
    }
    SESSION.with(|session| {
        *session.borrow_mut() = Some(Session { launch, part, progress });
    });
    if owns.contains(&part) {
        report();
    }
}

/// A story that was left at a step opens there again: the step goes into
/// the address before the steps read it (the simulator's module draws
/// them later), unless the address names one.
fn resume_story_step(query: &str, step: Option<usize>) {
    let (Some(step), None) = (step, crate::view_model::query_param(query, "step")) else {
        return;
    };
    let Some(window) = web_sys::window() else { return };
    let hash = window.location().hash().unwrap_or_default();
    let address = format!("{query}&step={step}{hash}");
    if let Ok(history) = window.history() {
        let _ = history.replace_state_with_url(&JsValue::NULL, "", Some(&address));
    }
}

fn report() {
    let pairs = SESSION.with(|session| {
        let session = session.borrow();
        let session = session.as_ref()?;
        let lesson = &crate::lesson_model::lesson().exercises;
        let exercises = match session.part {
            Part::Exercises => scored_exercises(&session.launch, lesson),
            Part::Story | Part::Sandbox => Vec::new(),
        };
        Some(values(&session.launch, session.part, &session.progress, &exercises))
    });
    let Some(pairs) = pairs else { return };
    let array = js_sys::Array::new();
    for (key, value) in pairs {
        array.push(&js_sys::Array::of2(&JsValue::from_str(&key), &JsValue::from_str(&value)));
    }
    let refused = course_report(array);
    if refused.length() > 0 {
        web_sys::console::warn_2(&JsValue::from_str("kafkascope: the learning platform refused"), &refused);
    }
}

fn update(wanted: Part, change: impl FnOnce(&mut Progress)) {
    let changed = SESSION.with(|session| match session.borrow_mut().as_mut() {
        Some(session) if session.part == wanted => {
            change(&mut session.progress);
            true
        }
        _ => false,
    });
    if changed {
        report();
    }
}

/// The answers the learner gave an exercise before, if the platform kept
/// them.
pub fn saved_answers(exercise: &str, cases: usize) -> Option<Vec<Option<Outcome>>> {
    SESSION.with(|session| {
        let session = session.borrow();
        let saved = session.as_ref()?.progress.exercises.get(exercise)?;
        (saved.answers.len() == cases).then(|| saved.answers.clone())
    })
}

/// An exercise's answers changed, or its run revealed the outcomes.
pub fn exercise_changed(exercise: &str, answers: &[Option<Outcome>], outcomes: Option<Vec<Outcome>>) {
    update(Part::Exercises, |progress| {
        progress
            .exercises
            .entry(exercise.to_string())
            .or_insert_with(ExerciseProgress::default)
            .record(answers, outcomes);
    });
}

/// The best run the platform keeps for an exercise: right answers, cases.
pub fn best_score(exercise: &str) -> Option<(usize, usize)> {
    SESSION.with(|session| session.borrow().as_ref()?.progress.exercises.get(exercise)?.best_score())
}

/// The story moved to `step` of `steps`.
pub fn story_step(step: usize, steps: usize) {
    update(Part::Story, |progress| {
        progress.step = Some(step);
        progress.finished |= step >= steps;
    });
}

/// The sandbox ran the learner's code.
pub fn sandbox_ran() {
    update(Part::Sandbox, |progress| progress.ran = true);
}
