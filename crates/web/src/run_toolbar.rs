//! The map's run toolbar: play or pause, the speed, the records a second,
//! a step, runs and time travel, a burst of records, reset, a link to this
//! moment, and a status box of its own size (the clock, the speed reached,
//! an hour's skip), so nothing moves while playing.

use yew::prelude::*;

use crate::cluster_model::speed_label;
use crate::session::Action;

/// Playback speeds: virtual milliseconds per real second, on a log scale.
pub const SPEEDS: [(u64, &str); 5] = [
    (10, "0.01×"),
    (100, "0.1×"),
    (1_000, "1×"),
    (10_000, "10×"),
    (100_000, "100×"),
];

/// Records per second each producer sends while playing.
pub const RATES: [u32; 5] = [0, 1, 5, 20, 100];

/// The properties of [`RunToolbar`].
#[derive(Properties, PartialEq)]
pub struct RunToolbarProps {
    pub playing: bool,
    /// Simulated milliseconds a second of play ([`SPEEDS`]).
    pub speed: u64,
    /// Records a second per producer while playing ([`RATES`]).
    pub rate: u32,
    /// An hour's skip under way: (done, total) simulated milliseconds.
    pub skipping: Option<(u64, u64)>,
    /// The speed this device reaches while playing, if measured.
    pub reached: Option<f64>,
    pub time_ms: u64,
    pub dispatch: Callback<Action>,
    pub on_play: Callback<MouseEvent>,
    pub on_speed: Callback<u64>,
    pub on_rate: Callback<u32>,
    pub on_copy: Callback<MouseEvent>,
}

/// The run toolbar.
#[function_component(RunToolbar)]
pub fn run_toolbar(props: &RunToolbarProps) -> Html {
    let act = crate::map_actions::actor(&props.dispatch);
    let on_speed = {
        let on_speed = props.on_speed.clone();
        Callback::from(move |event: Event| {
            let value = event.target_unchecked_into::<web_sys::HtmlSelectElement>().value();
            if let Ok(chosen) = value.parse() {
                on_speed.emit(chosen);
            }
        })
    };
    let on_rate = {
        let on_rate = props.on_rate.clone();
        Callback::from(move |event: Event| {
            let value = event.target_unchecked_into::<web_sys::HtmlSelectElement>().value();
            if let Ok(chosen) = value.parse() {
                on_rate.emit(chosen);
            }
        })
    };
    html! {
        <div class="controls run-controls" role="toolbar" aria-label="run controls">
            <button type="button" data-testid="cluster-play" aria-pressed={props.playing.to_string()} onclick={props.on_play.clone()}>
                { if props.playing { "❚❚ Pause" } else { "▶ Play" } }
            </button>
            <label>{ "Speed " }
                <select data-testid="cluster-speed" onchange={on_speed}>
                    { for SPEEDS.iter().map(|(value, label)| html! {
                        <option value={value.to_string()} selected={props.speed == *value}>{ *label }</option>
                    }) }
                </select>
            </label>
            <label title="Records a second each producer sends while playing (Run and Skip move time only)">{ "Records/s while playing " }
                <select data-testid="cluster-rate" onchange={on_rate}>
                    { for RATES.iter().map(|value| html! {
                        <option value={value.to_string()} selected={props.rate == *value}>{ value.to_string() }</option>
                    }) }
                </select>
            </label>
            <button type="button" data-testid="cluster-step" title="Step one event: the next message delivered or timer fired" onclick={act(Action::Step)}>{ "Step" }</button>
            <button type="button" data-testid="cluster-run-1s" onclick={act(Action::Run(1_000))}>{ "Run 1 s" }</button>
            <button type="button" data-testid="cluster-run-10s" onclick={act(Action::Run(10_000))}>{ "Run 10 s" }</button>
            <button type="button" data-testid="cluster-skip-1m" title="Time travel: run a minute of the cluster at once (retention and compaction work in minutes and hours)" onclick={act(Action::Run(60_000))}>{ "Skip 1 min" }</button>
            <button type="button" data-testid="cluster-skip-10m" title="Time travel: run ten minutes of the cluster at once" onclick={act(Action::Run(600_000))}>{ "Skip 10 min" }</button>
            <button type="button" data-testid="cluster-skip-1h" disabled={props.skipping.is_some()} title="Time travel: run an hour of the cluster, a minute at a time, with its progress shown (every event still runs: the cluster is never idle)" onclick={act(Action::Skip(3_600_000))}>{ "Skip 1 h" }</button>
            <button type="button" data-testid="cluster-produce" title="Produce 10 records per producer now" onclick={act(Action::Produce)}>{ "Produce 10" }</button>
            <button type="button" data-testid="cluster-reset" onclick={act(Action::Reset)}>{ "Reset" }</button>
            <button type="button" data-testid="copy-run-link" title="A link that opens this cluster at this moment: the same configuration, seed and every input so far, replayed" onclick={props.on_copy.clone()}>{ "Copy link" }</button>
            // A box of its own size: what changes while playing (the
            // clock, the speed reached, an hour's skip) never moves
            // the buttons.
            <span class="run-status">
                <span class="clock" data-testid="cluster-time">{ format!("t = {} ms", props.time_ms) }</span>
                { match props.skipping {
                    Some((done, total)) => html! {
                        <span class="skip-progress" role="status" data-testid="skip-progress">
                            <progress max={total.to_string()} value={done.to_string()} aria-label="time skipped" />
                            { format!(" skipped {} of {} min ", done / 60_000, total / 60_000) }
                            <button type="button" data-testid="cluster-skip-stop" onclick={act(Action::StopSkip)}>{ "Stop" }</button>
                        </span>
                    },
                    None => match props.reached {
                        // The speed asked for is not always the speed
                        // reached: when the page cannot keep up, it says so.
                        Some(reached) if reached < 0.9 * props.speed as f64 => html! {
                            <span class="muted" role="status" data-testid="speed-reached">
                                { format!("reaching {} (this device cannot keep up)", speed_label(reached)) }
                            </span>
                        },
                        _ => html! {},
                    },
                } }
            </span>
        </div>
    }
}
