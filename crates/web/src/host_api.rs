//! The host page API: a course page that embeds kafkascope in an iframe
//! drives it and hears from it with `postMessage`.
//!
//! Every message both ways is an object with `kafkascope: 1` (the API's
//! version) and a `type`. The host sends commands ([`HostCommand`]); the
//! page answers `ready` to `hello` and sends events ([`HostEvent`]) as
//! things happen. The page takes messages only from the window that
//! embeds it; the first one fixes the host's origin (or the embed
//! address's `host=` parameter does, and then messages from any other
//! origin are ignored), and events go only to that origin, never to `*`.
//! A command the page cannot take is answered with an `error` event that
//! says why. The parsing and wording live here and are tested natively;
//! [`bridge`] is the browser side.

use serde::Serialize;

/// The API's version, in every message.
pub const HOST_API_VERSION: u32 = 1;

/// What a host may ask. (Read by [`parse_command`], by hand: a derived
/// reader of a tagged enum is some 16 KB of code in each of the page's
/// two modules, #35.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostCommand {
    /// The host introduces itself; the page answers `ready`.
    Hello,
    /// Play the live map (or, with `section: "steps"` or on a page that
    /// shows only the steps, the story).
    Play { section: Option<Section> },
    /// Pause it.
    Pause { section: Option<Section> },
    /// Go to a step of the story shown (1-based).
    GoToStep { step: usize },
    /// Open a scenario file's text as a story in the steps.
    LoadScenario { scenario: String, name: Option<String> },
    /// Set a live knob of the map by its Kafka name (`acks`, `1`).
    SetKnob { knob: String, value: String },
    /// Crash a broker of the live map.
    KillBroker { broker: u32 },
    /// Start a crashed broker again.
    RestartBroker { broker: u32 },
}

/// A part of the page, by the name `?embed=` takes: what `ready` lists
/// and what a command is for (only the map and the steps take commands).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Section {
    Lesson,
    Map,
    Steps,
    Sandbox,
}

impl Section {
    /// The parts a page shows: the one `?embed=` names, else all of them.
    pub fn shown(query: &str) -> Vec<Section> {
        use crate::view_model::Embed;
        match crate::view_model::embed_mode(query) {
            Ok(Some(Embed::Lesson)) => vec![Section::Lesson],
            Ok(Some(Embed::Map)) => vec![Section::Map],
            Ok(Some(Embed::Steps)) => vec![Section::Steps],
            Ok(Some(Embed::Sandbox)) => vec![Section::Sandbox],
            Ok(None) | Err(_) => vec![Section::Lesson, Section::Map, Section::Steps, Section::Sandbox],
        }
    }

    /// Why a command cannot go to this part when the page does not
    /// show it, or shows it without commands.
    pub fn refusal(self, command: &str) -> String {
        match self {
            Section::Map => format!("this page shows no live map for {command}"),
            Section::Steps => format!("this page shows no sequence steps for {command}"),
            Section::Lesson | Section::Sandbox => format!(
                "the {} takes no commands; {command} goes to the map or the steps",
                if self == Section::Lesson { "lesson" } else { "sandbox" }
            ),
        }
    }
}

/// A message for this page that it does not take: the command it names
/// (when its `type` is one), and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub command: Option<String>,
    pub message: String,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.message)
    }
}

/// Every command's `type`, as hosts spell it.
pub const COMMANDS: [&str; 8] = [
    "hello",
    "play",
    "pause",
    "goToStep",
    "loadScenario",
    "setKnob",
    "killBroker",
    "restartBroker",
];

impl HostCommand {
    /// Its `type`, as the host spelt it (for error events).
    pub fn name(&self) -> &'static str {
        match self {
            HostCommand::Hello => "hello",
            HostCommand::Play { .. } => "play",
            HostCommand::Pause { .. } => "pause",
            HostCommand::GoToStep { .. } => "goToStep",
            HostCommand::LoadScenario { .. } => "loadScenario",
            HostCommand::SetKnob { .. } => "setKnob",
            HostCommand::KillBroker { .. } => "killBroker",
            HostCommand::RestartBroker { .. } => "restartBroker",
        }
    }

    /// The section that takes it: the map's commands, the steps', and
    /// play/pause where the host said or, by default, the map (the steps
    /// when the page shows only them).
    pub fn section(&self, only_steps: bool) -> Section {
        match self {
            HostCommand::GoToStep { .. } | HostCommand::LoadScenario { .. } => Section::Steps,
            HostCommand::Play { section, .. } | HostCommand::Pause { section, .. } => {
                section.unwrap_or(if only_steps { Section::Steps } else { Section::Map })
            }
            _ => Section::Map,
        }
    }
}

/// What the page tells its host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum HostEvent {
    /// The page is running and takes commands.
    Ready { sections: Vec<Section> },
    /// The story shown moved to a step (1-based, of `steps`).
    StepChanged { story: String, step: usize, steps: usize },
    /// The story shown reached its last step.
    StoryFinished { story: String },
    /// The live map lost acknowledged records (`lost`: all so far).
    RecordLost { lost: u64, newly: u64 },
    /// A live knob changed (by the learner or the host).
    KnobChanged { knob: String, value: String },
    /// A command the page could not take, and why.
    Error { command: Option<String>, message: String },
}

impl HostEvent {
    /// The message's JSON: the event with `kafkascope: 1`.
    pub fn to_json(&self) -> String {
        let mut value = serde_json::to_value(self).unwrap_or_default();
        if let Some(object) = value.as_object_mut() {
            object.insert("kafkascope".into(), HOST_API_VERSION.into());
        }
        value.to_string()
    }
}

/// Reads a host's message (its JSON), or says why it is not one the page
/// takes. Messages without `kafkascope` are not for this page (`None`:
/// ignored, other scripts post messages too).
pub fn parse_command(json: &str) -> Option<Result<HostCommand, Refused>> {
    let value: serde_json::Value = serde_json::from_str(json).ok()?;
    let version = value.get("kafkascope")?;
    let command = value
        .get("type")
        .and_then(|name| name.as_str())
        .filter(|name| COMMANDS.contains(name))
        .map(str::to_string);
    if version.as_u64() != Some(u64::from(HOST_API_VERSION)) {
        return Some(Err(Refused {
            command,
            message: format!(
                "this page speaks kafkascope host API version {HOST_API_VERSION}; the message says {version}"
            ),
        }));
    }
    Some(command_of(&value).map_err(|error| {
        let message = match &command {
            Some(name) => format!("{name} is a command this page takes, but not like this: {error}"),
            None => format!("not a command this page takes: {error}"),
        };
        Refused { command, message }
    }))
}

/// The command a host's message (an object with `type`) asks for, or what
/// is wrong with it, in the words serde would use (`unknown variant`,
/// `unknown field`, `missing field`).
fn command_of(value: &serde_json::Value) -> Result<HostCommand, String> {
    use serde_json::Value;
    let object = value
        .as_object()
        .ok_or("invalid type: expected an object with a `type`")?;
    let kind = match object.get("type") {
        Some(Value::String(kind)) => kind.as_str(),
        Some(other) => return Err(format!("invalid type: {other}, expected a command name")),
        None => return Err("missing field `type`".to_string()),
    };
    let fields: &[&str] = match kind {
        "hello" => &[],
        "play" | "pause" => &["section"],
        "goToStep" => &["step"],
        "loadScenario" => &["scenario", "name"],
        "setKnob" => &["knob", "value"],
        "killBroker" | "restartBroker" => &["broker"],
        other => {
            let expected: Vec<String> = COMMANDS.iter().map(|name| format!("`{name}`")).collect();
            return Err(format!(
                "unknown variant `{other}`, expected one of {}",
                expected.join(", ")
            ));
        }
    };
    if let Some(extra) = object
        .keys()
        .find(|key| !matches!(key.as_str(), "type" | "kafkascope") && !fields.contains(&key.as_str()))
    {
        let expected: Vec<String> = fields.iter().map(|name| format!("`{name}`")).collect();
        return Err(match expected.as_slice() {
            [] => format!("unknown field `{extra}`, there are no fields"),
            _ => format!("unknown field `{extra}`, expected one of {}", expected.join(", ")),
        });
    }
    // A field absent or null is `None`.
    let field = |name: &str| object.get(name).filter(|value| !value.is_null());
    let required = |name: &str| field(name).ok_or_else(|| format!("missing field `{name}`"));
    let text = |value: &Value, name: &str| {
        value
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("invalid type for `{name}`: {value}, expected a string"))
    };
    let whole = |value: &Value, name: &str, max: u64| {
        value
            .as_u64()
            .filter(|number| *number <= max)
            .ok_or_else(|| format!("invalid value for `{name}`: {value}, expected a whole number from 0 to {max}"))
    };
    let section = || -> Result<Option<Section>, String> {
        field("section")
            .map(|value| match value.as_str() {
                Some("lesson") => Ok(Section::Lesson),
                Some("map") => Ok(Section::Map),
                Some("steps") => Ok(Section::Steps),
                Some("sandbox") => Ok(Section::Sandbox),
                _ => Err(format!(
                    "unknown variant {value} for `section`, expected one of `lesson`, `map`, `steps`, `sandbox`"
                )),
            })
            .transpose()
    };
    Ok(match kind {
        "hello" => HostCommand::Hello,
        "play" => HostCommand::Play { section: section()? },
        "pause" => HostCommand::Pause { section: section()? },
        "goToStep" => HostCommand::GoToStep {
            step: whole(required("step")?, "step", u64::from(u32::MAX))? as usize,
        },
        "loadScenario" => HostCommand::LoadScenario {
            scenario: text(required("scenario")?, "scenario")?,
            name: field("name").map(|name| text(name, "name")).transpose()?,
        },
        "setKnob" => HostCommand::SetKnob {
            knob: text(required("knob")?, "knob")?,
            value: text(required("value")?, "value")?,
        },
        _ => {
            let broker = whole(required("broker")?, "broker", u64::from(u32::MAX))? as u32;
            if kind == "killBroker" {
                HostCommand::KillBroker { broker }
            } else {
                HostCommand::RestartBroker { broker }
            }
        }
    })
}

/// The host origin an embed address pins (`host=https://course.example`):
/// a scheme, `://` and a host with no path; anything else (`*`, `null`, a
/// page address) pins nothing.
pub fn pinned_origin(query: &str) -> Option<String> {
    {
        let value = crate::view_model::query_param(query, "host")?;
        let value = value
            .replace("%3A", ":")
            .replace("%3a", ":")
            .replace("%2F", "/")
            .replace("%2f", "/");
        let value = value.trim_end_matches('/');
        let (scheme, rest) = value.split_once("://")?;
        let plain = |text: &str| {
            !text.is_empty()
                && text
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || b".-:[]".contains(&byte))
        };
        (matches!(scheme, "http" | "https") && plain(rest)).then(|| value.to_string())
    }
}

/// The browser side: the page's `message` listener, the handlers each
/// section registers, and the events it posts to its host.
pub mod bridge {
    use std::cell::RefCell;
    use std::rc::Rc;

    use wasm_bindgen::{closure::Closure, JsCast};

    use super::{parse_command, pinned_origin, HostCommand, HostEvent, Section};

    /// A section's handler: takes a command meant for it, or says why not.
    pub type Handler = Rc<dyn Fn(&HostCommand) -> Result<(), String>>;

    #[derive(Default)]
    struct State {
        installed: bool,
        /// The host's origin once known (pinned by `host=` or the first
        /// message from the embedding window).
        origin: Option<String>,
        pinned: bool,
        handlers: Vec<(Section, Handler)>,
        /// Sections still loading (a `?scenario=` file): until none is,
        /// commands wait in `waiting` and `ready` is not said.
        holds: u32,
        waiting: Vec<HostCommand>,
        /// `ready` has been said: it is said once per page, however many
        /// `hello`s the host sent before hearing it.
        ready_said: bool,
    }

    thread_local! {
        static STATE: RefCell<State> = RefCell::new(State::default());
    }

    fn parent() -> Option<web_sys::Window> {
        let window = web_sys::window()?;
        let parent = window.parent().ok().flatten()?;
        // Not embedded: the parent is the window itself.
        (!js_sys::Object::is(&parent, &window)).then_some(parent)
    }

    /// Posts an event to the host, if the page is embedded and knows it.
    pub fn emit(event: &HostEvent) {
        // While a section loads what the address asks for, what the page
        // shows is not yet what the host asked for: it hears nothing.
        let Some(origin) = STATE.with(|state| {
            let state = state.borrow();
            (state.holds == 0).then(|| state.origin.clone()).flatten()
        }) else {
            return;
        };
        let Some(parent) = parent() else { return };
        let Ok(message) = js_sys::JSON::parse(&event.to_json()) else {
            return;
        };
        let _ = parent.post_message(&message, &origin);
    }

    /// Registers a section's handler for the page's life (a section is
    /// drawn once).
    pub fn register(section: Section, handler: Handler) {
        STATE.with(|state| state.borrow_mut().handlers.push((section, handler)));
    }

    /// The sections that take commands (registered a handler).
    fn sections() -> Vec<Section> {
        STATE.with(|state| {
            let mut sections: Vec<Section> = state.borrow().handlers.iter().map(|(section, _)| *section).collect();
            sections.dedup();
            sections
        })
    }

    /// A section is loading what the address asks for: the host hears
    /// `ready`, and its commands run, only once it is done ([`release`]).
    pub fn hold() {
        STATE.with(|state| state.borrow_mut().holds += 1);
    }

    /// The section has loaded (or failed to): commands that waited run now,
    /// in order.
    pub fn release() {
        let waiting = STATE.with(|state| {
            let mut state = state.borrow_mut();
            state.holds = state.holds.saturating_sub(1);
            if state.holds == 0 {
                std::mem::take(&mut state.waiting)
            } else {
                Vec::new()
            }
        });
        for command in waiting {
            handle(&command);
        }
    }

    fn handle(command: &HostCommand) {
        let held = STATE.with(|state| {
            let mut state = state.borrow_mut();
            if state.holds > 0 {
                state.waiting.push(command.clone());
            }
            state.holds > 0
        });
        if held {
            return;
        }
        if matches!(command, HostCommand::Hello) {
            let first = STATE.with(|state| !std::mem::replace(&mut state.borrow_mut().ready_said, true));
            if first {
                emit(&HostEvent::Ready {
                    sections: Section::shown(&crate::export::page_query()),
                });
            }
            return;
        }
        let sections = sections();
        let only_steps = sections == [Section::Steps];
        let section = command.section(only_steps);
        let handler = STATE.with(|state| {
            state
                .borrow()
                .handlers
                .iter()
                .find(|(candidate, _)| *candidate == section)
                .map(|(_, handler)| handler.clone())
        });
        let result = match handler {
            Some(handler) => handler(command),
            None => Err(section.refusal(command.name())),
        };
        if let Err(message) = result {
            emit(&HostEvent::Error {
                command: Some(command.name().to_string()),
                message,
            });
        }
    }

    /// The messages index.html kept from before the app ran (in a frame, at
    /// most 100), and no more from now on.
    fn take_early_messages() -> Vec<web_sys::MessageEvent> {
        let Some(window) = web_sys::window() else {
            return Vec::new();
        };
        let key = wasm_bindgen::JsValue::from_str("__kafkascopeEarlyMessages");
        let kept = js_sys::Reflect::get(&window, &key).unwrap_or(wasm_bindgen::JsValue::NULL);
        let _ = js_sys::Reflect::set(&window, &key, &wasm_bindgen::JsValue::NULL);
        kept.dyn_into::<js_sys::Array>()
            .map(|kept| kept.iter().filter_map(|event| event.dyn_into().ok()).collect())
            .unwrap_or_default()
    }

    /// The simulator's module could not load, so the parts a host drives
    /// will not answer: a host the address names (`host=`, as the custom
    /// elements do) hears why, once, as an `error` without a command.
    pub fn report_unavailable(reason: &str) {
        thread_local! {
            static SAID: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
        }
        if SAID.with(|said| said.replace(true)) {
            return;
        }
        let query = web_sys::window()
            .and_then(|window| window.location().search().ok())
            .unwrap_or_default();
        let (Some(parent), Some(origin)) = (parent(), pinned_origin(&query)) else {
            return;
        };
        let event = HostEvent::Error {
            command: None,
            message: format!("the simulator could not load: {reason}"),
        };
        if let Ok(message) = js_sys::JSON::parse(&event.to_json()) {
            let _ = parent.post_message(&message, &origin);
        }
    }

    /// Learns the host's origin as the bridge does (pinned by the address,
    /// or the first kafkascope message from the embedding window, the ones
    /// kept from before the page ran included) without answering anything:
    /// for the page's own module while the simulator's module answers the
    /// host, so that if the simulator stops the page can still tell the
    /// host ([`report_stopped`]).
    pub fn learn_origin() {
        let first = STATE.with(|state| !std::mem::replace(&mut state.borrow_mut().installed, true));
        if !first || parent().is_none() {
            return;
        }
        let query = web_sys::window()
            .and_then(|window| window.location().search().ok())
            .unwrap_or_default();
        if let Some(origin) = pinned_origin(&query) {
            STATE.with(|state| state.borrow_mut().origin = Some(origin));
            return;
        }
        let note = |event: &web_sys::MessageEvent| {
            let from_parent = match (event.source(), parent()) {
                (Some(source), Some(parent)) => js_sys::Object::is(&source, &parent),
                _ => false,
            };
            let json = js_sys::JSON::stringify(&event.data())
                .ok()
                .and_then(|text| text.as_string())
                .unwrap_or_default();
            if from_parent && parse_command(&json).is_some() {
                STATE.with(|state| {
                    state.borrow_mut().origin.get_or_insert_with(|| event.origin());
                });
            }
        };
        // The messages index.html keeps are left for the simulator's module.
        let kept = web_sys::window()
            .and_then(|window| js_sys::Reflect::get(&window, &"__kafkascopeEarlyMessages".into()).ok())
            .and_then(|kept| kept.dyn_into::<js_sys::Array>().ok());
        for event in kept.iter().flat_map(|kept| kept.iter()) {
            if let Ok(event) = event.dyn_into::<web_sys::MessageEvent>() {
                note(&event);
            }
        }
        let listener = Closure::<dyn Fn(web_sys::MessageEvent)>::new(move |event: web_sys::MessageEvent| note(&event));
        if let Some(window) = web_sys::window() {
            let _ = window.add_event_listener_with_callback("message", listener.as_ref().unchecked_ref());
        }
        listener.forget();
    }

    /// A part of the page stopped (a trap, [`crate::crash`]): the host
    /// hears it once, as an `error` without a command, at the origin it
    /// said `hello` from or the one the address pins.
    pub fn report_stopped(message: &str) {
        thread_local! {
            static SAID: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
        }
        let query = web_sys::window()
            .and_then(|window| window.location().search().ok())
            .unwrap_or_default();
        let origin = STATE
            .with(|state| state.borrow().origin.clone())
            .or_else(|| pinned_origin(&query));
        let (Some(parent), Some(origin)) = (parent(), origin) else {
            return;
        };
        if SAID.with(|said| said.replace(true)) {
            return;
        }
        let event = HostEvent::Error {
            command: None,
            message: message.to_string(),
        };
        if let Ok(message) = js_sys::JSON::parse(&event.to_json()) {
            let _ = parent.post_message(&message, &origin);
        }
    }

    /// Listens for the host's messages (once per page).
    pub fn install() {
        let first = STATE.with(|state| !std::mem::replace(&mut state.borrow_mut().installed, true));
        if !first {
            return;
        }
        if parent().is_none() {
            take_early_messages();
            return;
        }
        let query = web_sys::window()
            .and_then(|window| window.location().search().ok())
            .unwrap_or_default();
        if let Some(origin) = pinned_origin(&query) {
            STATE.with(|state| {
                let mut state = state.borrow_mut();
                state.origin = Some(origin);
                state.pinned = true;
            });
        }
        let listener = Closure::<dyn Fn(web_sys::MessageEvent)>::new(move |event: web_sys::MessageEvent| {
            // Only the window that embeds this page may drive it.
            let from_parent = match (event.source(), parent()) {
                (Some(source), Some(parent)) => js_sys::Object::is(&source, &parent),
                _ => false,
            };
            if !from_parent {
                return;
            }
            let json = js_sys::JSON::stringify(&event.data())
                .ok()
                .and_then(|text| text.as_string())
                .unwrap_or_default();
            // Messages without `kafkascope` are other scripts': they fix
            // no origin.
            let Some(parsed) = parse_command(&json) else {
                return;
            };
            let origin = event.origin();
            let accepted = STATE.with(|state| {
                let mut state = state.borrow_mut();
                match &state.origin {
                    Some(known) => *known == origin,
                    None => {
                        state.origin = Some(origin.clone());
                        true
                    }
                }
            });
            if !accepted {
                return;
            }
            match parsed {
                Ok(command) => handle(&command),
                Err(refused) => emit(&HostEvent::Error {
                    command: refused.command,
                    message: refused.message,
                }),
            }
        });
        if let Some(window) = web_sys::window() {
            let _ = window.add_event_listener_with_callback("message", listener.as_ref().unchecked_ref());
            // What the host said before this module ran (index.html keeps
            // it): heard in order, once every part drawn with this one has
            // registered (the map and the steps are two apps, each
            // installing this in its first effect).
            let function: js_sys::Function = listener.as_ref().unchecked_ref::<js_sys::Function>().clone();
            let early = take_early_messages();
            if !early.is_empty() {
                gloo_timers::callback::Timeout::new(0, move || {
                    for event in early {
                        let _ = function.call1(&wasm_bindgen::JsValue::NULL, &event);
                    }
                })
                .forget();
            }
        }
        listener.forget();
        // A pinned host hears `ready` without asking, once every section
        // drawn with this one has registered.
        let pinned = STATE.with(|state| state.borrow().pinned);
        if pinned {
            gloo_timers::callback::Timeout::new(0, || handle(&HostCommand::Hello)).forget();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse_with_their_version_and_fields() {
        assert_eq!(
            parse_command(r#"{"kafkascope":1,"type":"setKnob","knob":"acks","value":"1"}"#),
            Some(Ok(HostCommand::SetKnob {
                knob: "acks".into(),
                value: "1".into()
            }))
        );
        assert_eq!(
            parse_command(r#"{"kafkascope":1,"type":"play","section":"steps"}"#)
                .map(|command| command.map(|command| command.section(false))),
            Some(Ok(Section::Steps))
        );
        let play = parse_command(r#"{"kafkascope":1,"type":"play"}"#)
            .and_then(Result::ok)
            .expect("play");
        assert_eq!(play.section(false), Section::Map);
        assert_eq!(play.section(true), Section::Steps);
        // Other scripts' messages are not for this page.
        assert_eq!(parse_command(r#"{"type":"play"}"#), None);
        assert_eq!(parse_command("not json"), None);
        let wrong_version = parse_command(r#"{"kafkascope":2,"type":"play"}"#).expect("for us");
        assert!(wrong_version
            .is_err_and(|error| error.message.contains("version 1") && error.command.as_deref() == Some("play")));
        let unknown = parse_command(r#"{"kafkascope":1,"type":"explode"}"#).expect("for us");
        assert!(unknown
            .clone()
            .is_err_and(|error| error.message.contains("unknown variant `explode`")));
        assert!(unknown.is_err_and(|refused| refused.command.is_none()));
        let extra = parse_command(r#"{"kafkascope":1,"type":"killBroker","broker":1,"now":true}"#).expect("for us");
        assert_eq!(
            extra.clone().err().and_then(|refused| refused.command).as_deref(),
            Some("killBroker")
        );
        assert!(extra.is_err_and(|error| error.message.contains("unknown field `now`")));
        let missing = parse_command(r#"{"kafkascope":1,"type":"goToStep"}"#).expect("for us");
        assert!(
            missing.is_err_and(|refused| refused.command.as_deref() == Some("goToStep")
                && refused.message.contains("missing field `step`"))
        );
    }

    /// Every command reads as hosts write it; wrong types and values are
    /// refused with the field named.
    #[test]
    fn every_command_reads_and_wrong_fields_are_named() {
        let read = |json: &str| parse_command(json).expect("for us");
        assert_eq!(read(r#"{"kafkascope":1,"type":"hello"}"#), Ok(HostCommand::Hello));
        assert_eq!(
            read(r#"{"kafkascope":1,"type":"pause","section":"steps"}"#),
            Ok(HostCommand::Pause {
                section: Some(Section::Steps)
            })
        );
        assert_eq!(
            read(r#"{"kafkascope":1,"type":"play","section":null}"#),
            Ok(HostCommand::Play { section: None })
        );
        assert_eq!(
            read(r#"{"kafkascope":1,"type":"goToStep","step":7}"#),
            Ok(HostCommand::GoToStep { step: 7 })
        );
        assert_eq!(
            read(r#"{"kafkascope":1,"type":"loadScenario","scenario":"{}","name":"a.json"}"#),
            Ok(HostCommand::LoadScenario {
                scenario: "{}".into(),
                name: Some("a.json".into())
            })
        );
        assert_eq!(
            read(r#"{"kafkascope":1,"type":"setKnob","knob":"acks","value":"1"}"#),
            Ok(HostCommand::SetKnob {
                knob: "acks".into(),
                value: "1".into()
            })
        );
        assert_eq!(
            read(r#"{"kafkascope":1,"type":"restartBroker","broker":2}"#),
            Ok(HostCommand::RestartBroker { broker: 2 })
        );
        for (json, expected) in [
            (
                r#"{"kafkascope":1,"type":"play","section":"moon"}"#,
                "unknown variant \"moon\" for `section`",
            ),
            (
                r#"{"kafkascope":1,"type":"goToStep","step":-1}"#,
                "invalid value for `step`: -1",
            ),
            (
                r#"{"kafkascope":1,"type":"killBroker","broker":4294967296}"#,
                "invalid value for `broker`",
            ),
            (
                r#"{"kafkascope":1,"type":"setKnob","knob":"acks","value":1}"#,
                "invalid type for `value`: 1, expected a string",
            ),
            (
                r#"{"kafkascope":1,"type":"hello","x":1}"#,
                "unknown field `x`, there are no fields",
            ),
            (
                r#"{"kafkascope":1,"type":7}"#,
                "invalid type: 7, expected a command name",
            ),
            (r#"{"kafkascope":1}"#, "missing field `type`"),
            (r#"{"kafkascope":1,"type":"loadScenario"}"#, "missing field `scenario`"),
        ] {
            let refused = read(json).expect_err(json);
            assert!(refused.message.contains(expected), "{json}: {}", refused.message);
        }
    }

    #[test]
    fn events_carry_the_version_and_their_type() {
        let json = HostEvent::StepChanged {
            story: "happy-path".into(),
            step: 3,
            steps: 40,
        }
        .to_json();
        let value: serde_json::Value = serde_json::from_str(&json).expect("json");
        assert_eq!(value["kafkascope"], 1);
        assert_eq!(value["type"], "stepChanged");
        assert_eq!(value["step"], 3);
        let ready: serde_json::Value = serde_json::from_str(
            &HostEvent::Ready {
                sections: vec![Section::Map],
            }
            .to_json(),
        )
        .expect("json");
        assert_eq!(ready["sections"], serde_json::json!(["map"]));
    }

    #[test]
    fn ready_lists_the_parts_the_page_shows_and_only_map_and_steps_take_commands() {
        assert_eq!(Section::shown("?embed=sandbox"), vec![Section::Sandbox]);
        assert_eq!(Section::shown("?embed=lesson&host=x"), vec![Section::Lesson]);
        assert_eq!(Section::shown("?embed=steps&story=happy-path"), vec![Section::Steps]);
        assert_eq!(
            Section::shown("?play=0"),
            vec![Section::Lesson, Section::Map, Section::Steps, Section::Sandbox]
        );
        let ready: serde_json::Value = serde_json::from_str(
            &HostEvent::Ready {
                sections: Section::shown("?embed=sandbox"),
            }
            .to_json(),
        )
        .expect("json");
        assert_eq!(ready["sections"], serde_json::json!(["sandbox"]));
        assert!(Section::Sandbox
            .refusal("killBroker")
            .contains("the sandbox takes no commands"));
        assert!(Section::Map.refusal("killBroker").contains("no live map"));
    }

    #[test]
    fn the_embed_address_may_pin_the_host_origin() {
        assert_eq!(
            pinned_origin("?embed=map&host=https%3A%2F%2Fcourse.example"),
            Some("https://course.example".into())
        );
        assert_eq!(pinned_origin("?embed=map"), None);
        assert_eq!(
            pinned_origin("?host=https://course.example/"),
            Some("https://course.example".into())
        );
        assert_eq!(
            pinned_origin("?host=http://127.0.0.1:8080"),
            Some("http://127.0.0.1:8080".into())
        );
        for bad in [
            "*",
            "null",
            "https://course.example/page",
            "javascript:alert(1)",
            "ftp://x",
            "https://",
        ] {
            assert_eq!(pinned_origin(&format!("?host={bad}")), None, "{bad}");
        }
    }

    /// A well-formed message of command `name`, with the fields it needs.
    fn example_message(name: &str) -> String {
        match name {
            "goToStep" => format!(r#"{{"kafkascope":1,"type":"{name}","step":1}}"#),
            "loadScenario" => format!(r#"{{"kafkascope":1,"type":"{name}","scenario":"{{}}"}}"#),
            "setKnob" => format!(r#"{{"kafkascope":1,"type":"{name}","knob":"acks","value":"1"}}"#),
            "killBroker" | "restartBroker" => format!(r#"{{"kafkascope":1,"type":"{name}","broker":2}}"#),
            _ => format!(r#"{{"kafkascope":1,"type":"{name}"}}"#),
        }
    }

    /// The drop-in elements (web/kafkascope-element.js) send only commands
    /// the page takes, speak this API's version, and the guide names each
    /// element, method and attribute they have.
    #[test]
    fn the_custom_elements_send_commands_the_page_takes() {
        let element = include_str!("../../../web/kafkascope-element.js");
        let guide = include_str!("../../../docs/authoring.md");
        assert!(element.contains(&format!("const API_VERSION = {HOST_API_VERSION};")));
        let mut sent = Vec::new();
        for piece in element.split("type: '").skip(1) {
            let name = &piece[..piece.find('\'').expect("a closing quote")];
            if name == "error" {
                // The element's own error event, for commands it cannot send.
                continue;
            }
            let message = example_message(name);
            let command = parse_command(&message)
                .expect("for us")
                .unwrap_or_else(|error| panic!("{name}: {error}"));
            assert_eq!(command.name(), name);
            sent.push(name.to_string());
        }
        for command in COMMANDS {
            assert!(
                sent.iter().any(|name| name == command),
                "the elements cannot send {command}"
            );
        }
        for method in [
            "play(",
            "pause(",
            "goToStep(",
            "loadScenario(",
            "setKnob(",
            "killBroker(",
            "restartBroker(",
            "send(",
        ] {
            assert!(element.contains(&format!("  {method}")), "the element lacks {method}");
            assert!(
                guide.contains(&format!("`{method}")),
                "the guide does not name {method}"
            );
        }
        for tag in [
            "kafkascope-map",
            "kafkascope-steps",
            "kafkascope-lesson",
            "kafkascope-sandbox",
        ] {
            assert!(
                element.contains(&format!("'{tag}'")) && guide.contains(&format!("<{tag}>")),
                "{tag}"
            );
        }
        for attribute in ["story", "step", "seed", "scenario", "knob", "play"] {
            assert!(
                element.contains(&format!("'{attribute}'")),
                "the element lacks {attribute}"
            );
            assert!(
                guide.contains(&format!("`{attribute}`")),
                "the guide does not name {attribute}"
            );
        }
    }

    /// docs/authoring.md documents every command and event by its `type`,
    /// and its messages and scenario example are ones the page takes.
    #[test]
    fn the_authoring_guide_names_every_message_and_its_examples_hold() {
        let guide = include_str!("../../../docs/authoring.md");
        for name in COMMANDS {
            assert!(
                guide.contains(&format!("| `{name}` |")),
                "the guide's command table lacks {name}"
            );
            let message = example_message(name);
            let command = parse_command(&message).expect("for us").expect("a command");
            assert_eq!(command.name(), name);
        }
        for name in [
            "ready",
            "stepChanged",
            "storyFinished",
            "recordLost",
            "knobChanged",
            "error",
        ] {
            assert!(
                guide.contains(&format!("| `{name}` |")),
                "the guide's event table lacks {name}"
            );
        }
        // The example's sends parse as commands.
        for example in [
            r#"{"kafkascope":1,"type":"setKnob","knob":"acks","value":"1"}"#,
            r#"{"kafkascope":1,"type":"killBroker","broker":2}"#,
            r#"{"kafkascope":1,"type":"play"}"#,
        ] {
            assert!(
                parse_command(example).is_some_and(|command| command.is_ok()),
                "{example}"
            );
        }
        assert!(guide.contains("send({ type: 'setKnob', knob: 'acks', value: '1' })"));
        // The minimal scenario opens as a story.
        let start = guide.find("```json").expect("a scenario example") + "```json".len();
        let end = start + guide[start..].find("```").expect("its end");
        let story =
            crate::sequence_model::custom_story("guide.json", &guide[start..end]).expect("the guide's scenario opens");
        assert_eq!(story.id, "custom-a-broker-dies");
    }
}
