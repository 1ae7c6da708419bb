//! When the page's own code fails: a Rust panic (which aborts in the
//! release build) or any other WebAssembly trap leaves the module that
//! trapped unable to go on. [`install`] gives each module a panic hook that
//! logs the panic and says `kafkascope-panic` on `window` (with the module
//! and the message) just before the trap; [`watch`] (the first module,
//! once) has `js/crash.js` catch the trap and put [`WORDS`] where the
//! stopped part is: in the map's and the steps' sections for the
//! simulator, at the top of the page otherwise, each with a button that
//! reloads the page. The words live here, tested natively.

use serde::Serialize;
use wasm_bindgen::prelude::*;

#[wasm_bindgen(module = "/js/crash.js")]
extern "C" {
    #[wasm_bindgen(js_name = watchCrashes)]
    fn watch_crashes(words: JsValue, on_stopped: &Closure<dyn Fn(String, String)>);
}

/// The event a panic hook says on `window` before the trap.
pub const PANIC_EVENT: &str = "kafkascope-panic";

/// Which of the page's two modules a panic happened in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Module {
    /// The first module: the lesson, the partitioner, the sandbox's panel.
    Page,
    /// The simulator's module: the map and the steps (and, in the sandbox's
    /// worker, the JavaScript API).
    Simulator,
}

impl Module {
    /// Its name in `kafkascope-panic` and in `WORDS`.
    pub fn name(self) -> &'static str {
        match self {
            Module::Page => "page",
            Module::Simulator => "simulator",
        }
    }
}

/// What a stopped part says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Said {
    pub heading: &'static str,
    pub body: &'static str,
}

/// Everything `js/crash.js` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Words {
    pub simulator: Said,
    pub page: Said,
    pub reload: &'static str,
    pub details: &'static str,
}

/// The words, in one place.
pub const WORDS: Words = Words {
    simulator: Said {
        heading: "The simulator stopped",
        body: "Something inside kafkascope failed while it ran the map and the steps, so they no longer answer. \
               This is a bug in kafkascope, not anything you did. Reload the page to start them again.",
    },
    page: Said {
        heading: "kafkascope stopped",
        body: "Something inside kafkascope failed, so parts of this page no longer answer. \
               This is a bug in kafkascope, not anything you did. Reload the page to start again.",
    },
    reload: "Reload the page",
    details: "What failed (for a bug report)",
};

/// The line a panic hook logs and says: the module, then the panic.
pub fn panic_line(module: Module, panic: &str) -> String {
    format!("kafkascope's {} module failed: {panic}", module.name())
}

/// Gives this module a panic hook (no JavaScript runs until a panic, so
/// this is safe where the page's scripts are absent, as in the sandbox's
/// worker: there the line goes to the console only).
pub fn install(module: Module) {
    std::panic::set_hook(Box::new(move |info| {
        let line = panic_line(module, &info.to_string());
        web_sys::console::error_1(&JsValue::from_str(&line));
        let Some(window) = web_sys::window() else {
            return;
        };
        let detail = js_sys::Object::new();
        let _ = js_sys::Reflect::set(&detail, &"module".into(), &module.name().into());
        let _ = js_sys::Reflect::set(&detail, &"message".into(), &JsValue::from_str(&line));
        let init = web_sys::CustomEventInit::new();
        init.set_detail(&detail);
        if let Ok(event) = web_sys::CustomEvent::new_with_event_init_dict(PANIC_EVENT, &init) {
            let _ = window.dispatch_event(&event);
        }
    }));
}

/// Has the page catch a trap of either module and say so (once a page).
pub fn watch() {
    thread_local! {
        static ON_STOPPED: Closure<dyn Fn(String, String)> = Closure::new(|module: String, what: String| {
            crate::host_api::bridge::report_stopped(&host_message(&module, &what));
        });
    }
    if let Ok(words) = serde_wasm_bindgen::to_value(&WORDS) {
        ON_STOPPED.with(|on_stopped| watch_crashes(words, on_stopped));
    }
}

/// What a host page hears (an `error` event without a command) when a
/// part of the page stopped: which part, that it is kafkascope's bug and
/// how to start it again, and what failed.
pub fn host_message(module: &str, what: &str) -> String {
    let part = match module {
        "simulator" => "the simulator (the map and the steps)",
        _ => "the page",
    };
    format!("{part} stopped because of a bug in kafkascope; reloading the page starts it again. What failed: {what}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stopped_part_says_it_is_a_bug_and_how_to_start_again() {
        for said in [WORDS.simulator, WORDS.page] {
            assert!(said.body.contains("This is a bug in kafkascope"), "{}", said.body);
            assert!(said.body.contains("Reload the page"), "{}", said.body);
            assert!(
                !said.body.contains("panic") && !said.body.contains("trap"),
                "{}",
                said.body
            );
        }
        assert!(WORDS.reload.starts_with("Reload"));
    }

    #[test]
    fn a_host_hears_which_part_stopped_and_how_to_start_it_again() {
        let message = host_message("simulator", "kafkascope's simulator module failed: boom");
        assert!(
            message.starts_with("the simulator (the map and the steps) stopped"),
            "{message}"
        );
        assert!(
            message.contains("reloading the page") && message.ends_with("failed: boom"),
            "{message}"
        );
        assert!(host_message("page", "x").starts_with("the page stopped"));
    }

    #[test]
    fn the_panic_line_names_the_module() {
        assert_eq!(
            panic_line(Module::Simulator, "panicked at src/a.rs:1:1:\nboom"),
            "kafkascope's simulator module failed: panicked at src/a.rs:1:1:\nboom"
        );
        assert!(panic_line(Module::Page, "x").contains("page module"));
    }
}
