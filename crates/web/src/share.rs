//! A live run in a link: the cluster's configuration, its seed and every
//! input the page gave it (with how many events had run when each was
//! given), so opening the link replays the run to the same moment and the
//! same trace. The text is `1.` (the format's version) and the run as
//! JSON, deflated (`miniz_oxide`) and base64url-encoded (`base64`), so a
//! minute of play fits in an address.
//!
//! A link is input like any other: a malformed, oversized or hostile one
//! is refused with a sentence saying why, never by a panic, and its replay
//! is bounded ([`MAX_LINK_EVENTS`], the engine's input limits).

use base64::Engine as _;
use kafkascope_engine::sim::config::{ClusterConfig, Input, ScheduledInput};
use kafkascope_engine::sim::Simulation;
use serde::{Deserialize, Serialize};

/// The link format this page writes (and the only one it reads).
pub const LINK_VERSION: u32 = 1;

/// The most events a link may ask to replay: the page replays a link
/// before it draws, so a link asking for more is refused rather than
/// holding the tab for minutes.
pub const MAX_LINK_EVENTS: u64 = 5_000_000;

/// The largest cluster a link may describe: what the live map's knobs
/// make (up to 9 brokers, 24 partitions, 8 members in each group, added
/// members), with room to spare, so a short link cannot ask for a huge
/// cluster.
fn check_link_config(config: &ClusterConfig) -> Result<(), String> {
    let too_big = |what: &str, got: usize, most: usize| {
        (got > most).then(|| format!("this run link's cluster has {got} {what}; a link may carry at most {most}"))
    };
    let partitions = config
        .topics
        .iter()
        .map(|topic| topic.partitions as usize)
        .max()
        .unwrap_or(0);
    [
        too_big("brokers", config.brokers as usize, 9),
        too_big("controllers", config.controllers as usize, 5),
        too_big("topics", config.topics.len(), 4),
        too_big("partitions in a topic", partitions, 24),
        too_big(
            "__consumer_offsets partitions",
            config.offsets_topic_partitions as usize,
            50,
        ),
        too_big("producers", config.producers.len(), 8),
        too_big("consumers", config.consumers.len(), 32),
    ]
    .into_iter()
    .flatten()
    .next()
    .map_or(Ok(()), Err)
}

/// The most bytes a link's JSON may inflate to.
const MAX_LINK_JSON: usize = 8 * 1024 * 1024;

/// An input the page gave the run, and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LoggedInput {
    /// Events the run had processed when the input was scheduled.
    pub events: u64,
    pub at_ms: u64,
    pub input: Input,
}

impl LoggedInput {
    pub fn scheduled(&self) -> ScheduledInput {
        ScheduledInput {
            at_ms: self.at_ms,
            input: self.input.clone(),
        }
    }
}

/// A live run as a link carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunLink {
    /// The format's version ([`LINK_VERSION`]).
    pub v: u32,
    pub config: ClusterConfig,
    pub seed: u64,
    /// Every input, in the order the page gave them.
    pub inputs: Vec<LoggedInput>,
    /// Events processed at the moment the link was made.
    pub events: u64,
    /// The virtual time then (it can run ahead of the last event).
    pub now_ms: u64,
    /// The play stream's next record time and records sent (so playing on
    /// from the link continues as the run would have).
    #[serde(default)]
    pub stream: (u64, u64),
    /// The fraction of a millisecond the next play tick owes.
    #[serde(default)]
    pub carry: f64,
    /// Chaos under way at the link's moment: its faults so far are among
    /// `inputs`; this is how it draws on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chaos: Option<LinkedChaos>,
}

/// Chaos as a run link carries it: its settings, where its windows count
/// from, the next one to draw, the faults drawn and not yet due, and how
/// many of Jepsen's findings it has reported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LinkedChaos {
    pub settings: kafkascope_engine::sim::chaos::ChaosSettings,
    pub started_ms: u64,
    pub next_window: u64,
    pub pending: Vec<kafkascope_engine::sim::chaos::ChaosFault>,
    pub jepsen_seen: usize,
    pub jepsen_checked_at: usize,
    /// Which of Jepsen's findings chaos holds the map at, when the link was
    /// made there (a replay judges the history again to show it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jepsen_halt: Option<usize>,
}

/// The link's text for a run.
pub fn encode(run: &RunLink) -> String {
    format!(
        "{LINK_VERSION}.{}",
        pack(&serde_json::to_string(run).unwrap_or_default())
    )
}

/// Text deflated and base64url-encoded, for an address.
fn pack(text: &str) -> String {
    let packed = miniz_oxide::deflate::compress_to_vec(text.as_bytes(), 9);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(packed)
}

/// The text [`pack`] made, at most `limit` bytes once inflated; `what`
/// names the link in the reason it cannot be read.
fn unpack(body: &str, limit: usize, what: &str) -> Result<String, String> {
    let packed = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(body.trim_end_matches('='))
        .map_err(|_| format!("this {what} is damaged (it is not base64url text)"))?;
    let bytes = miniz_oxide::inflate::decompress_to_vec_with_limit(&packed, limit)
        .map_err(|_| format!("this {what} is damaged or too large to open"))?;
    String::from_utf8(bytes).map_err(|_| format!("this {what} is damaged (it is not UTF-8 text)"))
}

/// The query parameter that carries a sandbox snippet's code.
pub const CODE_PARAM: &str = "code";

/// The most bytes of code a link carries (the sandbox's examples are
/// about 2 KiB).
pub const MAX_LINK_CODE: usize = 64 * 1024;

/// The address that opens the sandbox with `code` in its editor (not
/// run: the learner presses Run), from the page at `base`, keeping an
/// embed mode.
pub fn code_address(base: &str, query: &str, code: &str) -> Result<String, String> {
    if code.len() > MAX_LINK_CODE {
        return Err(format!(
            "this snippet is {} bytes; a link carries at most {MAX_LINK_CODE}",
            code.len()
        ));
    }
    let embed = crate::view_model::query_param(query, "embed")
        .map(|part| format!("embed={part}&"))
        .unwrap_or_default();
    Ok(format!(
        "{base}?{embed}{CODE_PARAM}={LINK_VERSION}.{}#sandbox",
        pack(code)
    ))
}

/// The snippet a page address carries, if any, or why it cannot be read.
pub fn code_in_query(query: &str) -> Option<Result<String, String>> {
    let text = crate::view_model::query_param(query, CODE_PARAM)?;
    Some(match text.split_once('.') {
        Some((version, body)) if version == LINK_VERSION.to_string() => unpack(body, MAX_LINK_CODE, "code link"),
        Some((version, _)) if version.parse::<u32>().is_ok_and(|version| version > LINK_VERSION) => {
            Err("this code link was made by a newer kafkascope".to_string())
        }
        _ => Err("this code link is damaged (it has no version this page reads)".to_string()),
    })
}

/// The query parameter that carries a run.
pub const RUN_PARAM: &str = "run";

/// The run link's text in a page address's query, if any.
pub fn run_in_query(query: &str) -> Option<&str> {
    crate::view_model::query_param(query, RUN_PARAM)
}

/// The address that opens `run` on the map, paused, from the page at
/// `base` (its origin and path).
pub fn run_address(base: &str, run: &RunLink) -> String {
    format!("{base}?play=0&{RUN_PARAM}={}#map", encode(run))
}

/// Why a run link's text is not a run, in a learner's words (the
/// parser's own words name fields a learner never saw).
fn damaged_run(error: &serde_json::Error) -> String {
    use serde_json::error::Category;
    let what = match error.classify() {
        Category::Data => "it names settings or inputs kafkascope does not have (a part of it was changed by hand)",
        Category::Eof | Category::Syntax | Category::Io => "its text was cut short or changed after it was made",
    };
    format!("this run link is damaged: {what}. Copy the link again from the page that made it")
}

/// Reads a link's text, or says why it cannot.
pub fn decode(text: &str) -> Result<RunLink, String> {
    let (version, body) = text
        .split_once('.')
        .ok_or_else(|| "this run link is damaged (it has no version)".to_string())?;
    match version.parse::<u32>() {
        Ok(LINK_VERSION) => {}
        Ok(other) if other > LINK_VERSION => {
            return Err(format!(
                "this run link was made by a newer kafkascope (link format {other}; this page reads format {LINK_VERSION})"
            ))
        }
        Ok(other) => {
            return Err(format!(
                "this run link was made by an older kafkascope (link format {other}), whose runs this version cannot replay"
            ))
        }
        Err(_) => return Err("this run link is damaged (its version is not a number)".to_string()),
    }
    // As text: `from_str` is the parser the scenarios use, so the app holds
    // one copy of every type's JSON reader, not two.
    let text = unpack(body, MAX_LINK_JSON, "run link")?;
    let run: RunLink = serde_json::from_str(&text).map_err(|error| damaged_run(&error))?;
    if run.v != LINK_VERSION {
        return Err(format!(
            "this run link says format {} inside format {LINK_VERSION}",
            run.v
        ));
    }
    check_link_config(&run.config)?;
    // Chaos's faults drawn and not yet due are inputs like the others:
    // within the limits, naming only what the cluster has.
    let mut pending = Vec::new();
    if let Some(chaos) = &run.chaos {
        chaos
            .settings
            .check()
            .map_err(|problem| format!("this run link's chaos cannot run: {problem}"))?;
        if chaos.pending.len() > 1_000 {
            return Err("this run link's chaos has more than 1,000 faults waiting".to_string());
        }
        if chaos.jepsen_halt.is_some_and(|finding| finding >= chaos.jepsen_seen) {
            return Err("this run link's chaos stops at a finding of Jepsen's checks it has not seen".to_string());
        }
        pending.extend(chaos.pending.iter().flat_map(|fault| fault.inputs.iter().cloned()));
        if let Some(unknown) = kafkascope_engine::sim::input_names::first_unknown(&run.config, &pending) {
            return Err(format!(
                "this run link's chaos names something its cluster lacks: {}",
                unknown.message
            ));
        }
    }
    let scenario_limits = kafkascope_engine::sim::scenario::Scenario {
        name: String::new(),
        description: String::new(),
        seed: run.seed,
        config: run.config.clone(),
        inputs: run.inputs.iter().map(LoggedInput::scheduled).chain(pending).collect(),
        run_until_ms: run.now_ms,
        expect: Vec::new(),
        story: None,
    }
    .check_limits();
    scenario_limits.map_err(|exceeded| format!("this run link asks for more than kafkascope allows: {exceeded}"))?;
    if run.events > MAX_LINK_EVENTS {
        return Err(format!(
            "this run link replays {} events; kafkascope opens links of at most {MAX_LINK_EVENTS}",
            run.events
        ));
    }
    Ok(run)
}

/// Replays a run to the moment its link was made: the same configuration
/// and seed (`simulation` starts from them), each input scheduled after
/// the same number of events as before, then the clock moved on as it
/// was. The simulation is the same event for event, so its trace is too.
/// `drain` takes the trace every so often, as the page does while a run
/// plays (a long replay would otherwise hold all of it). All at once: the
/// page replays a slice at a time with [`Replay`].
pub fn replay(
    simulation: &mut Simulation,
    run: &RunLink,
    drain: &mut dyn FnMut(&mut Simulation),
) -> Result<(), String> {
    let mut replay = Replay::start(simulation, run.clone())?;
    while !replay.advance(simulation, u64::MAX, drain)? {}
    Ok(())
}

/// Work one slice of a link's replay may do on the page, in
/// [`Simulation::event_cost`] units: about 2,000 events of the largest
/// cluster a link may carry and 7,000 of the map's default, a few
/// milliseconds natively and well under the 100 ms a page may hold its
/// thread on a slow laptop. The page draws the replay's progress and
/// answers its Stop between slices.
pub const REPLAY_SLICE_WORK: u64 = 2_000_000;

/// A run link's replay under way, advanced a slice at a time so the page
/// stays responsive while a long one runs ([`Replay::advance`]). Its work
/// is bounded before any is done (the events it replays times what each
/// costs on its cluster, at most [`kafkascope_engine::limits::MAX_LINK_WORK`]).
#[derive(Debug, Clone)]
pub struct Replay {
    run: RunLink,
    /// The next of the link's inputs to schedule.
    next_input: usize,
}

impl Replay {
    /// A replay of `run` into `simulation` (new, from the link's
    /// configuration and seed), or why the link asks for too much work or
    /// is malformed.
    pub fn start(simulation: &Simulation, run: RunLink) -> Result<Replay, String> {
        // Work bounded before it is done: the events the link replays
        // times what each costs on its cluster (a link on the largest
        // cluster a link may carry replays far fewer events than one on
        // the default).
        let cost = simulation.event_cost();
        let limit = kafkascope_engine::limits::MAX_LINK_WORK;
        if run.events.saturating_mul(cost) > limit {
            return Err(format!(
                "this run link replays {} events on a cluster where each costs {cost} (256 plus one per replica and client); kafkascope replays at most {limit} of that work, about {} events on this cluster",
                run.events,
                limit / cost
            ));
        }
        let mut last = 0;
        for logged in &run.inputs {
            if logged.events < last || logged.events > run.events {
                return Err("this run link's inputs are out of order".to_string());
            }
            last = logged.events;
        }
        Ok(Replay { run, next_input: 0 })
    }

    /// The events replayed of the link's total, for a progress bar.
    pub fn progress(&self, simulation: &Simulation) -> (u64, u64) {
        (simulation.events_processed().min(self.run.events), self.run.events)
    }

    /// The link being replayed.
    pub fn run(&self) -> &RunLink {
        &self.run
    }

    /// The link's inputs scheduled so far (what a link to where a stopped
    /// replay got to carries).
    pub fn inputs_given(&self) -> &[LoggedInput] {
        &self.run.inputs[..self.next_input]
    }

    /// Replays at most `work` more (in [`Simulation::event_cost`] units,
    /// at least one event); `Ok(true)` once the run is at its link's
    /// moment, or why the link does not replay.
    pub fn advance(
        &mut self,
        simulation: &mut Simulation,
        work: u64,
        drain: &mut dyn FnMut(&mut Simulation),
    ) -> Result<bool, String> {
        let slice = (work / simulation.event_cost().max(1)).max(1);
        let stop_at = simulation.events_processed().saturating_add(slice);
        loop {
            while let Some(logged) = self.run.inputs.get(self.next_input) {
                if logged.events > simulation.events_processed() {
                    break;
                }
                simulation
                    .check_input(&logged.input)
                    .map_err(|exceeded| format!("this run link asks for more than kafkascope allows: {exceeded}"))?;
                logged
                    .input
                    .check_topic_names()
                    .map_err(|error| format!("this run link names a topic Kafka would refuse: {error}"))?;
                simulation.schedule(logged.scheduled());
                self.next_input += 1;
            }
            if simulation.events_processed() >= self.run.events {
                // The page's last action may have moved the clock past the
                // last event (a run of 10 s ends at its end, whatever ran).
                if simulation.next_event_time().is_none_or(|time| time > self.run.now_ms) {
                    simulation.run_until(self.run.now_ms);
                }
                drain(simulation);
                return Ok(true);
            }
            if simulation.events_processed() >= stop_at {
                drain(simulation);
                return Ok(false);
            }
            if !simulation.step() {
                return Err("this run link does not match what this version of kafkascope simulates".to_string());
            }
            if simulation.events_processed() % 10_000 == 0 {
                drain(simulation);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real run's link: two seconds, a broker killed, two more seconds.
    fn run() -> RunLink {
        use crate::session::{Action, Session};
        let mut session = Session::new(crate::cluster_model::default_config(), 7);
        session.apply(Action::Run(2_000));
        session.apply(Action::Kill(2));
        session.apply(Action::Run(2_000));
        session.run_link()
    }

    fn replayed(link: &RunLink) -> Result<Simulation, String> {
        let mut simulation = Simulation::new(link.config.clone(), link.seed)?;
        replay(&mut simulation, link, &mut |_| {})?;
        Ok(simulation)
    }

    /// A link's chaos is checked as the Chaos tab checks it, and its
    /// waiting faults as every other input: what the page could not have
    /// made is refused with a reason.
    #[test]
    fn a_link_with_chaos_it_could_not_have_made_is_refused() {
        use kafkascope_engine::sim::chaos::{ChaosFault, ChaosSettings, FaultKind};
        use kafkascope_engine::sim::config::{Input, ScheduledInput};
        let with = |settings: ChaosSettings, input: Input| {
            let mut link = run();
            link.chaos = Some(LinkedChaos {
                settings,
                started_ms: 0,
                next_window: 1,
                pending: vec![ChaosFault {
                    at_ms: 5_000,
                    kind: FaultKind::Pause,
                    inputs: vec![ScheduledInput { at_ms: 5_000, input }],
                    heals_at_ms: 6_000,
                }],
                jepsen_seen: 0,
                jepsen_checked_at: 0,
                jepsen_halt: None,
            });
            decode(&encode(&link))
        };
        let fine = Input::PauseBroker {
            broker: 1,
            duration_ms: 1_000,
        };
        assert!(with(ChaosSettings::default(), fine.clone()).is_ok());
        let none = ChaosSettings {
            kinds: Vec::new(),
            ..ChaosSettings::default()
        };
        assert!(with(none, fine).is_err_and(|error| error.contains("chaos cannot run")));
        let missing = Input::KillBroker { broker: 9 };
        assert!(with(ChaosSettings::default(), missing).is_err_and(|error| error.contains("names something")));
        let endless = Input::PauseBroker {
            broker: 1,
            duration_ms: u64::MAX,
        };
        assert!(
            with(ChaosSettings::default(), endless).is_err_and(|error| error.contains("more than kafkascope allows"))
        );
        // A stop at a finding of Jepsen's checks the link has not seen.
        let mut link = run();
        link.chaos = Some(LinkedChaos {
            settings: ChaosSettings::default(),
            started_ms: 0,
            next_window: 1,
            pending: Vec::new(),
            jepsen_seen: 1,
            jepsen_checked_at: 0,
            jepsen_halt: Some(0),
        });
        assert!(decode(&encode(&link)).is_ok());
        if let Some(chaos) = link.chaos.as_mut() {
            chaos.jepsen_halt = Some(1);
        }
        assert!(decode(&encode(&link)).is_err_and(|error| error.contains("has not seen")));
    }

    #[test]
    fn a_link_round_trips_and_replays_to_the_same_moment() {
        let link = run();
        let text = encode(&link);
        assert!(text.starts_with("1."), "{text}");
        assert!(text
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || b".-_".contains(&byte)));
        assert_eq!(decode(&text), Ok(link.clone()));
        assert_eq!(link.inputs.len(), 1);
        let simulation = replayed(&link).expect("replays");
        assert_eq!(simulation.events_processed(), link.events);
        assert_eq!(simulation.now(), 4_000);
    }

    #[test]
    fn the_address_carries_the_run_and_the_query_gives_it_back() {
        let link = run();
        let address = run_address("https://example.org/kafkascope/", &link);
        assert!(address.starts_with("https://example.org/kafkascope/?play=0&run=1."));
        assert!(address.ends_with("#map"));
        let query = address
            .split_once('?')
            .map(|(_, query)| query.trim_end_matches("#map"))
            .unwrap_or_default();
        assert_eq!(run_in_query(&format!("?{query}")).map(decode), Some(Ok(link)));
        assert_eq!(run_in_query("?play=0&story=x"), None);
        assert_eq!(run_in_query("?running=1"), None);
    }

    #[test]
    fn a_snippet_travels_in_a_link_and_a_bad_one_says_why() {
        let code = "// Keys stick\nconsole.log(partitionFor('user-42', 6));\n";
        let address = code_address("https://x.example/kafkascope/", "?embed=sandbox&play=0", code).unwrap();
        assert!(
            address.starts_with("https://x.example/kafkascope/?embed=sandbox&code=1."),
            "{address}"
        );
        assert!(address.ends_with("#sandbox"));
        let query = &address[address.find('?').unwrap()..address.find('#').unwrap()];
        assert_eq!(code_in_query(query), Some(Ok(code.to_string())));
        assert_eq!(code_in_query("?story=x"), None);
        let too_long = "x".repeat(MAX_LINK_CODE + 1);
        assert!(code_address("/", "", &too_long).unwrap_err().contains("at most"));
        for (bad, says) in [
            ("?code=2.AAAA", "newer"),
            ("?code=1.%%%", "damaged"),
            ("?code=abc", "damaged"),
            ("?code=1.AAAA", "damaged"),
        ] {
            let error = code_in_query(bad).unwrap().unwrap_err();
            assert!(error.contains(says), "{bad}: {error}");
        }
        // A bomb: inflating past the limit is refused.
        let bomb = format!("?code=1.{}", pack(&"a".repeat(MAX_LINK_CODE * 4)));
        assert!(code_in_query(&bomb).unwrap().unwrap_err().contains("too large"));
    }

    #[test]
    fn bad_links_say_why() {
        let link = encode(&run());
        let body = link.split_once('.').map(|(_, body)| body).unwrap_or_default();
        for (text, says) in [
            ("garbage", "no version"),
            (&format!("2.{body}") as &str, "newer kafkascope"),
            (&format!("0.{body}") as &str, "older kafkascope"),
            ("x.abc", "not a number"),
            ("1.!!!", "not base64url"),
            ("1.AAAA", "damaged or too large"),
            (
                &format!("1.{}", pack(r#"{"v":1,"seed":1,"config":{"brokers":3,"mitopics":[]}}"#)) as &str,
                "names settings or inputs kafkascope does not have",
            ),
            (
                &format!("1.{}", pack(r#"{"v":1,"seed":1,"conf"#)) as &str,
                "cut short or changed",
            ),
        ] {
            let error = decode(text).expect_err(text);
            assert!(error.contains(says), "{text}: {error}");
            // Plain words: no parser's field lists or positions.
            assert!(!error.contains('`') && !error.contains("expected"), "{text}: {error}");
        }
        let mut huge = run();
        huge.events = MAX_LINK_EVENTS + 1;
        assert!(decode(&encode(&huge)).is_err_and(|error| error.contains("at most")));
        let mut big = run();
        big.config.brokers = 64;
        assert!(decode(&encode(&big)).is_err_and(|error| error.contains("64 brokers")));
        let mut endless = run();
        endless.inputs[0].input = Input::PauseBroker {
            broker: 1,
            duration_ms: u64::MAX,
        };
        assert!(decode(&encode(&endless)).is_err_and(|error| error.contains("durationMs")));
        let mut greedy = run();
        greedy.inputs[0].input = Input::Produce {
            producer: 0,
            key: None,
            count: u32::MAX,
            bytes: 100,
        };
        assert!(replayed(&greedy).is_err_and(|error| error.contains("more than kafkascope allows")));
        // Within every count a link may carry, but too much work: refused
        // before any of it is done.
        let mut costly = run();
        costly.config.brokers = 9;
        for topic in &mut costly.config.topics {
            topic.partitions = 24;
            topic.replication_factor = 9;
        }
        costly.events = MAX_LINK_EVENTS;
        assert!(replayed(&costly).is_err_and(|error| error.contains("kafkascope replays at most")));
        let mut backwards = run();
        backwards.inputs.push(LoggedInput {
            events: 10,
            at_ms: 0,
            input: Input::HealNetwork,
        });
        assert!(replayed(&backwards).is_err_and(|error| error.contains("out of order")));
    }
}
