//! The map's tools, each a tab under the map: the lag charts, the
//! protocols compared, and the panels shaped like Kafka's own tools
//! (`kafka-topics`, `kafka-consumer-groups`, `kafka-metadata-quorum`) and
//! each record's fate. Components, so each re-renders only when its rows
//! change.

use kafkascope_engine::sim::types::NodeId;
use yew::prelude::*;

/// The size of a group's lag chart.
pub const LAG_CHART_W: f64 = 240.0;
pub const LAG_CHART_H: f64 = 48.0;

#[derive(Properties, PartialEq)]
pub struct LagProps {
    pub charts: Vec<crate::cluster_model::LagChart>,
    /// Each group's lag as `kafka-consumer-groups` counts it (from the
    /// committed offsets), beside the charts' count from the positions.
    #[prop_or_default]
    pub kafka_lag: std::collections::BTreeMap<String, String>,
}

/// Each group's lag over the last minute, rebalances shaded.
#[function_component(LagCharts)]
pub fn lag_charts(props: &LagProps) -> Html {
    if props.charts.is_empty() {
        return html! { <p class="muted">{ "No group has members yet: its lag shows here once one does." }</p> };
    }
    html! {
        <div class="lag-charts">
            <h3>{ "Records still to read, last minute" }</h3>
            { for props.charts.iter().map(|chart| html! {
                <figure class="lag-chart" data-testid={format!("lag-chart-{}", chart.group)}>
                    <svg viewBox={format!("0 0 {LAG_CHART_W} {LAG_CHART_H}")} width={LAG_CHART_W.to_string()} height={LAG_CHART_H.to_string()} role="img" aria-label={chart.summary.clone()}>
                        { for chart.rebalances.iter().map(|(x, width)| html! {
                            <rect class="lag-rebalance" data-testid="lag-rebalance" x={format!("{x:.1}")} y="0" width={format!("{width:.1}")} height={LAG_CHART_H.to_string()} />
                        }) }
                        { for chart.members.iter().enumerate().map(|(index, line)| html! {
                            <polyline class={classes!("lag-member", format!("lag-member-{}", index % 4))} data-testid={format!("lag-member-{}", NodeId::Consumer(line.consumer))} points={line.points.clone()} />
                        }) }
                        <polyline class="lag-line" points={chart.points.clone()} />
                    </svg>
                    <figcaption>
                        { format!(
                            "{}: {} still to read (top of scale {}); kafka-consumer-groups' LAG, from the committed offsets: {}",
                            chart.group, chart.last, chart.max, props.kafka_lag.get(&chart.group).map_or("-", String::as_str)
                        ) }
                        { for chart.members.iter().enumerate().map(|(index, line)| html! {
                            <span class={classes!("lag-key", format!("lag-member-{}", index % 4))}>{ format!(" · {} {}", NodeId::Consumer(line.consumer), line.last) }</span>
                        }) }
                    </figcaption>
                </figure>
            }) }
            <p class="muted">{ "These charts count what the members have still to read, as it happens: for each partition, its high watermark minus the owner's position (minus the committed offset while no member holds it), summed over the group (the solid line); the dashed lines are each member's own partitions. Shaded: members were rejoining (a rebalance). Kafka's lag, in kafka-consumer-groups and on the map's member rows, counts from the committed offset instead, so it stays above this line until the members commit what they have read." }</p>
        </div>
    }
}

#[derive(Properties, PartialEq)]
pub struct ComparisonProps {
    pub runs: Option<Result<Vec<crate::cluster_model::ProtocolRun>, String>>,
    pub on_run: Callback<MouseEvent>,
}

/// Eager, cooperative and KIP-848 side by side on the same fault.
#[function_component(Comparison)]
pub fn comparison(props: &ComparisonProps) -> Html {
    use crate::cluster_model::{COMPARE_HANDLER_MS, COMPARE_PAUSE_AT_MS, COMPARE_PAUSE_MS, COMPARE_RATE};
    use crate::session::{COMPARE_CHART_H, COMPARE_CHART_W};
    html! {
        <div class="compare" data-testid="compare-protocols">
            <h3>{ "Eager, cooperative and KIP-848 side by side on the same fault" }</h3>
            <p>{ format!(
                "Three runs of this shape (at least 3 members of billing and 6 partitions), differing only in the rebalance protocol: {COMPARE_RATE} keyed records a second, a handler taking {COMPARE_HANDLER_MS} ms per record, and at {} s consumer-0 pauses for {} s, past its 45 s session, so it is dropped and comes back.",
                COMPARE_PAUSE_AT_MS / 1_000,
                COMPARE_PAUSE_MS / 1_000
            ) }</p>
            <button type="button" data-testid="compare-run" onclick={props.on_run.clone()}>{ "Run the three" }</button>
            { match &props.runs {
                None => html! {},
                Some(Err(message)) => html! { <p class="error" role="alert">{ message }</p> },
                Some(Ok(runs)) => html! {
                    <div class="lag-charts">
                        { for runs.iter().enumerate().map(|(index, run)| html! {
                            <figure class="lag-chart" data-testid={format!("compare-{index}")} data-stopped-ms={run.stopped_ms.to_string()} data-peak-lag={run.peak_lag.to_string()}>
                                <svg viewBox={format!("0 0 {COMPARE_CHART_W} {COMPARE_CHART_H}")} width={COMPARE_CHART_W.to_string()} height={COMPARE_CHART_H.to_string()} role="img" aria-label={run.chart.summary.clone()}>
                                    { for run.chart.rebalances.iter().map(|(x, width)| html! {
                                        <rect class="lag-rebalance" x={format!("{x:.1}")} y="0" width={format!("{width:.1}")} height={COMPARE_CHART_H.to_string()} />
                                    }) }
                                    <polyline class="lag-line" points={run.chart.points.clone()} />
                                </svg>
                                <figcaption>
                                    <strong>{ &run.label }</strong>
                                    { format!(": members stopped {:.1} s, lag at most {}, {} rebalance(s)", run.stopped_ms as f64 / 1_000.0, run.peak_lag, run.rebalances) }
                                </figcaption>
                            </figure>
                        }) }
                        <p class="muted">{ "Shaded: running members stood idle, rejoining with no partitions (an eager rebalance takes every partition away). Lag counts every partition: its high watermark minus the owner's position, or minus the committed offset while nobody reads it, so the paused member's partitions count too." }</p>
                    </div>
                },
            } }
        </div>
    }
}

/// The properties of [`TopicsTool`].
#[derive(Properties, PartialEq)]
pub struct TopicsToolProps {
    pub topics: Vec<crate::cluster_model::TopicRow>,
}

/// `kafka-topics --describe`.
#[function_component(TopicsTool)]
pub fn topics_tool(props: &TopicsToolProps) -> Html {
    let topics = &props.topics;
    html! {
        <>
                    <h3><code>{ "kafka-topics --describe" }</code></h3>
                    <table class="tool" data-testid="topics-table" tabindex="0" aria-label="kafka-topics --describe (scrolls sideways)">
                        <thead><tr><th>{ "Topic" }</th><th>{ "Partition" }</th><th>{ "Leader" }</th><th>{ "Replicas" }</th><th>{ "Isr" }</th><th>{ "Elr" }</th><th>{ "LastKnownElr" }</th><th>{ "Status" }</th></tr></thead>
                        <tbody>
                            { for topics.iter().map(|row| html! {
                                <tr class={classes!(row.under_replicated.then_some("under-replicated"), row.offline.then_some("offline"))}>
                                    <td>{ &row.topic }</td>
                                    <td>{ row.partition }</td>
                                    <td data-testid={format!("leader-{}", row.name)}>{ &row.leader }</td>
                                    <td>{ &row.replicas }</td>
                                    <td data-testid={format!("isr-{}", row.name)}>{ &row.isr }</td>
                                    <td data-testid={format!("elr-{}", row.name)}>{ &row.elr }</td>
                                    <td>{ &row.last_known_elr }</td>
                                    <td>{ if row.offline { "offline" } else if row.recovering { "recovering (unclean leader)" } else if row.under_replicated { "under-replicated" } else { "" } }</td>
                                </tr>
                            }) }
                        </tbody>
                    </table>
        </>
    }
}

/// The properties of [`GroupsTool`].
#[derive(Properties, PartialEq)]
pub struct GroupsToolProps {
    pub groups: Vec<crate::cluster_model::GroupRow>,
}

/// `kafka-consumer-groups --describe --all-groups`.
#[function_component(GroupsTool)]
pub fn groups_tool(props: &GroupsToolProps) -> Html {
    let groups = &props.groups;
    html! {
        <>
                    <h3><code>{ "kafka-consumer-groups --describe --all-groups" }</code></h3>
                    <table class="tool" data-testid="groups-table" tabindex="0" aria-label="kafka-consumer-groups --describe (scrolls sideways)">
                        <thead><tr><th>{ "GROUP" }</th><th>{ "TOPIC" }</th><th>{ "PARTITION" }</th><th>{ "CURRENT-OFFSET" }</th><th>{ "LOG-END-OFFSET" }</th><th>{ "LAG" }</th><th>{ "RESET (consumer log)" }</th><th>{ "CONSUMER-ID" }</th></tr></thead>
                        <tbody>
                            { for groups.iter().map(|row| html! {
                                <tr>
                                    <td>{ &row.group }</td><td>{ &row.topic }</td><td>{ row.partition }</td>
                                    <td>{ &row.current_offset }</td><td>{ row.log_end_offset }</td><td>{ &row.lag }</td>
                                    <td data-testid={format!("reset-{}-{}-{}", row.group, row.topic, row.partition)}>{ &row.reset }</td>
                                    <td>{ &row.consumer_id }</td>
                                </tr>
                            }) }
                        </tbody>
                    </table>
                    { if groups.is_empty() { html! { <p class="muted">{ "No member owns a partition yet (the groups are still forming: run a few seconds)." }</p> } } else { html! {} } }
                    <p class="muted" data-testid="member-id-note">{ "CONSUMER-ID is the member id the group coordinator gave the member when it joined: its client id (consumer-0), a dash and a suffix. Kafka's suffix is a UUID (GroupMetadata.generateMemberId); here it is a counter, so consumer-0-3 is the member consumer-0, and the same id appears in the event list and the stories' captions." }</p>
        </>
    }
}

/// The properties of [`LedgerTool`].
#[derive(Properties, PartialEq)]
pub struct LedgerToolProps {
    pub ledger: Vec<crate::cluster_model::LedgerRow>,
}

/// What happened to each acknowledged record, per group.
#[function_component(LedgerTool)]
pub fn ledger_tool(props: &LedgerToolProps) -> Html {
    let ledger = &props.ledger;
    html! {
        <>
                    <h3>{ "What happened to each record (delivery semantics)" }</h3>
                    <table class="tool" data-testid="ledger-table" tabindex="0" aria-label="What happened to each acknowledged record, per group (scrolls sideways)">
                        <thead><tr><th>{ "GROUP" }</th><th>{ "PROCESSED ONCE" }</th><th>{ "PROCESSED AGAIN" }</th><th>{ "DUPLICATES SKIPPED" }</th><th>{ "NEVER PROCESSED" }</th><th>{ "DEAD-LETTERED" }</th><th>{ "NOT YET" }</th></tr></thead>
                        <tbody>
                            { for ledger.iter().map(|row| html! {
                                <tr data-testid={format!("ledger-{}", row.group)}>
                                    <td>{ &row.group }</td>
                                    <td data-testid={format!("ledger-{}-once", row.group)}>{ row.once }</td>
                                    <td data-testid={format!("ledger-{}-again", row.group)} title={row.again_why.clone()}>{ if row.again == 0 { "0".to_string() } else { format!("{} ({})", row.again, row.again_why) } }</td>
                                    <td data-testid={format!("ledger-{}-skipped", row.group)}>{ row.skipped }</td>
                                    <td data-testid={format!("ledger-{}-never", row.group)} title={row.never_why.clone()}>{ if row.never == 0 { "0".to_string() } else { format!("{} ({})", row.never, row.never_why) } }</td>
                                    <td data-testid={format!("ledger-{}-dead-lettered", row.group)}>{ row.dead_lettered }</td>
                                    <td>{ row.not_yet }</td>
                                </tr>
                            }) }
                        </tbody>
                    </table>
                    <p class="muted">{ "Each acknowledged record of the topics a group reads: processed by the group's handlers once, more than once (and why), never (and why), or not yet. Commit before processing and a crash mid-batch loses records (at most once); commit after processing repeats them (at least once); an idempotent handler turns repeats into no-ops; a handler that gives up on a poison record can send it to a dead letter topic and go on. Pick a member to change how it commits." }</p>
        </>
    }
}

/// The properties of [`QuorumTool`].
#[derive(Properties, PartialEq)]
pub struct QuorumToolProps {
    pub quorum: crate::cluster_model::QuorumStatus,
}

/// `kafka-metadata-quorum describe --status` and `--replication`.
#[function_component(QuorumTool)]
pub fn quorum_tool(props: &QuorumToolProps) -> Html {
    let quorum = &props.quorum;
    html! {
        <>
                    <h3><code>{ "kafka-metadata-quorum describe --status" }</code></h3>
                    <pre class="tool" data-testid="quorum-status">{ format!(
                        "LeaderId:          {}\nLeaderEpoch:       {}\nHighWatermark:     {}\nMaxFollowerLag:    {}\nCurrentVoters:     [{}]\nCurrentObservers:  [{}]\nDown:              {}",
                        quorum.leader_id, quorum.leader_epoch, quorum.high_watermark, quorum.max_follower_lag, quorum.voters, quorum.observers, quorum.down
                    ) }</pre>
                    <h3><code>{ "kafka-metadata-quorum describe --replication" }</code></h3>
                    <table class="tool" data-testid="quorum-replication" tabindex="0" aria-label="kafka-metadata-quorum describe --replication (scrolls sideways)">
                        <thead><tr><th>{ "NodeId" }</th><th>{ "LogEndOffset" }</th><th>{ "Lag" }</th><th>{ "LastFetchTimestamp" }</th><th>{ "LastCaughtUpTimestamp" }</th><th>{ "Status" }</th></tr></thead>
                        <tbody>
                            { for quorum.replication.iter().map(|row| html! {
                                <tr>
                                    <td>{ row.node_id }</td><td>{ row.log_end_offset }</td><td>{ row.lag }</td>
                                    <td>{ &row.last_fetch_ms }</td><td>{ &row.last_caught_up_ms }</td><td>{ row.status.to_string() }</td>
                                </tr>
                            }) }
                        </tbody>
                    </table>
                    <p class="muted">{ "Brokers are observers of the controller quorum: they fetch the metadata log like the follower controllers do, but never vote. Node ids are unique in a KRaft cluster: here broker-N is node N and controller-N is node 3000+N (Kafka's own test clusters number controllers from 3000). Offsets count the simulation's metadata log entries (one per controller decision, standing for its records; Kafka counts the records themselves), the same unit as the controller boxes and the broker inspector. \"Down\" lists the controllers that are down (a dead broker simply stops fetching). Timestamps are simulated milliseconds." }</p>
        </>
    }
}

/// The properties of [`ExportTool`].
#[derive(Properties, PartialEq)]
pub struct ExportToolProps {
    /// The topology as a Mermaid flowchart, made when asked for.
    pub mermaid: Callback<(), String>,
    pub on_svg: Callback<()>,
    pub on_scenario: Callback<()>,
    pub on_trace: Callback<()>,
}

/// The map and the run, to take away: the topology as Mermaid, the map as
/// SVG, the run as a scenario file, the trace as JSON.
#[function_component(ExportTool)]
pub fn export_tool(props: &ExportToolProps) -> Html {
    let click = |callback: &Callback<()>| {
        let callback = callback.clone();
        Callback::from(move |_: MouseEvent| callback.emit(()))
    };
    html! {
        <div class="controls" role="toolbar" aria-label="export">
            <crate::export::MermaidExport label="Mermaid flowchart" description="the topology as a Mermaid flowchart"
                ids={(AttrValue::from("export-mermaid"), AttrValue::from("mermaid-text"), AttrValue::from("copy-mermaid"))}
                text={props.mermaid.clone()} />
            <button type="button" data-testid="export-svg" onclick={click(&props.on_svg)}>{ "Download the map (SVG)" }</button>
            <button type="button" data-testid="export-scenario" title="This run as a scenario file: its cluster, seed and every input so far, to open in Stories or run with kafkascope run"
                onclick={click(&props.on_scenario)}>{ "Download the run (scenario file)" }</button>
            <button type="button" data-testid="export-trace" title="The latest trace events the page keeps, as JSON"
                onclick={click(&props.on_trace)}>{ "Download the trace (JSON)" }</button>
        </div>
    }
}

/// The properties of [`JepsenTool`].
#[derive(Properties, PartialEq)]
pub struct JepsenToolProps {
    pub panel: Option<crate::jepsen_model::JepsenPanel>,
    pub on_check: Callback<MouseEvent>,
}

/// Jepsen's checks on the live run: a button that judges the run so far,
/// and the verdict as the Stories view shows one (with times for steps).
#[function_component(JepsenTool)]
pub fn jepsen_tool(props: &JepsenToolProps) -> Html {
    html! {
        <div class="jepsen-tool" data-testid="jepsen-tool">
            <p>{ "The map keeps the run's history as Jepsen's Kafka test does: every send with what its producer learned, every poll with what it returned. Kill brokers, cut links or turn knobs, then ask what Jepsen would say." }</p>
            <button type="button" class="step-link" data-testid="jepsen-check" onclick={props.on_check.clone()}>
                { if props.panel.is_some() { "Check again" } else { "Check the run so far" } }
            </button>
            <crate::step_parts::JepsenVerdict panel={props.panel.clone()} on_action={Callback::noop()} open={true} />
        </div>
    }
}

/// The properties of [`ChaosTool`].
#[derive(Properties, PartialEq)]
pub struct ChaosToolProps {
    /// The settings as the learner edits them.
    pub setup: kafkascope_engine::sim::chaos::ChaosSettings,
    /// Chaos under way, if any.
    pub chaos: Option<crate::session::ChaosRun>,
    /// Why the last edit was refused.
    pub error: Option<String>,
    pub dispatch: Callback<crate::session::Action>,
    /// Copies a link to this moment (the toolbar's "Copy link").
    pub on_copy: Callback<MouseEvent>,
    /// Plays the map on from where chaos stopped it.
    pub on_play_on: Callback<MouseEvent>,
    /// The run's virtual time.
    pub now: u64,
}

/// Chaos mode: random faults on the running cluster from a seed, the
/// kinds and rate the learner chose, the faults as they strike, and where
/// it stopped the map (the anomaly, Kafka's design or a bug, a link).
#[function_component(ChaosTool)]
pub fn chaos_tool(props: &ChaosToolProps) -> Html {
    use crate::session::Action;
    use kafkascope_engine::sim::chaos::{FaultKind, MAX_PER_MINUTE};
    let dispatch = &props.dispatch;
    let text = |make: fn(String) -> Action| {
        dispatch.reform(move |event: Event| make(event.target_unchecked_into::<web_sys::HtmlInputElement>().value()))
    };
    let kind_box = |kind: FaultKind| {
        let on = props.setup.kinds.contains(&kind);
        let onchange = dispatch.reform(move |event: Event| {
            Action::ChaosKind(
                kind,
                event.target_unchecked_into::<web_sys::HtmlInputElement>().checked(),
            )
        });
        html! {
            <label class="chaos-kind">
                <input type="checkbox" data-testid={format!("chaos-kind-{}", kind_id(kind))} checked={on} {onchange} />
                { format!(" {kind}") }
            </label>
        }
    };
    let stop_box = dispatch.reform(|event: Event| {
        Action::ChaosStopAtAnomaly(event.target_unchecked_into::<web_sys::HtmlInputElement>().checked())
    });
    let running = props.chaos.is_some();
    html! {
        <div class="chaos-tool" data-testid="chaos-tool">
            <p>{ "Chaos strikes the running cluster with random faults, drawn from a seed by the fault fuzzer's own generator, each healed 2 to 12 seconds later, while the invariant monitors and Jepsen's checks keep watching. Faults strike only while the map plays (or runs or skips time); a link copied now replays the same faults and draws on alike." }</p>
            <fieldset class="chaos-kinds" disabled={running}>
                <legend>{ "Faults" }</legend>
                { for FaultKind::ALL.into_iter().map(kind_box) }
            </fieldset>
            <div class="chaos-numbers">
                <label>{ "faults a minute " }
                    <crate::knob::KnobInput testid="chaos-rate" value={props.setup.per_minute.to_string()} onchange={text(Action::ChaosRate)} live=true />
                </label>
                <label>{ "seed " }
                    <crate::knob::KnobInput testid="chaos-seed" value={props.setup.seed.to_string()} onchange={text(Action::ChaosSeed)} live=true />
                </label>
            </div>
            <label class="chaos-kind">
                <input type="checkbox" data-testid="chaos-stop-at-anomaly" checked={props.setup.stop_at_anomaly} onchange={stop_box} />
                { " Stop at the first anomaly (a lost record, a broken invariant, a finding of Jepsen's checks)" }
            </label>
            <p class="muted hint">{ format!("From 1 to {MAX_PER_MINUTE} faults a minute of simulated time; the kinds and numbers apply when chaos starts.") }</p>
            { match &props.error {
                Some(message) => html! { <p class="error" role="alert" data-testid="chaos-error">{ message }</p> },
                None => html! {},
            } }
            { if running {
                html! { <button type="button" data-testid="chaos-stop" onclick={dispatch.reform(|_: MouseEvent| Action::StopChaos)}>{ "Stop chaos" }</button> }
            } else {
                html! { <button type="button" data-testid="chaos-start" onclick={dispatch.reform(|_: MouseEvent| Action::StartChaos)}>{ "Start chaos" }</button> }
            } }
            { match &props.chaos {
                Some(chaos) => chaos_status(chaos, props.now, &props.on_play_on, &props.on_copy),
                None => html! {},
            } }
        </div>
    }
}

/// A fault kind's name in test ids.
fn kind_id(kind: kafkascope_engine::sim::chaos::FaultKind) -> &'static str {
    use kafkascope_engine::sim::chaos::FaultKind;
    match kind {
        FaultKind::Crash => "crash",
        FaultKind::PowerLoss => "power-loss",
        FaultKind::Pause => "pause",
        FaultKind::Partition => "partition",
        FaultKind::LossyLinks => "lossy-links",
        FaultKind::SlowNode => "slow-node",
    }
}

/// What chaos did and found: the anomaly it stopped at, the latest faults.
fn chaos_status(
    chaos: &crate::session::ChaosRun,
    now: u64,
    on_play_on: &Callback<MouseEvent>,
    on_copy: &Callback<MouseEvent>,
) -> Html {
    use kafkascope_engine::sim::chaos::Judgement;
    let halt = chaos.halt.as_ref().map(|halt| {
        let judgement = halt.finding.judgement();
        let class = match judgement {
            Judgement::KafkasDesign => "chaos-halt design",
            Judgement::WouldBeABug => "chaos-halt bug",
        };
        let verb = if chaos.holding { "Chaos stopped the map" } else { "The latest anomaly" };
        let at = match halt.event {
            Some(event) => format!("{verb} at t = {} ms, trace event #{event}: ", halt.at_ms),
            None => format!("{verb} at t = {} ms: ", halt.at_ms),
        };
        html! {
            <div class={class} role="status" data-testid="chaos-halt" data-event={halt.event.map(|event| event.to_string())}
                data-judgement={if judgement == Judgement::KafkasDesign { "design" } else { "bug" }}>
                <p><strong>{ at }</strong>{ halt.finding.to_string() }{ "." }</p>
                <p>{ halt.finding.why() }</p>
                { if matches!(&halt.finding, kafkascope_engine::sim::chaos::Finding::RecordsLost { causes, .. }
                    if causes.contains(&kafkascope_engine::sim::trace::LossCause::PowerLoss)) {
                    html! { <p data-testid="chaos-try">{ "Try it the other way: set flush.messages to 1 on the Knobs tab, then start chaos again with the same seed. Every record is synced before it is acknowledged, and no power loss takes one." }</p> }
                } else { html! {} } }
                { match &halt.line {
                    Some(line) => html! { <p class="muted mono">{ line }</p> },
                    None => html! { <p class="muted">{ "See the Jepsen's checks tab for the finding and its records." }</p> },
                } }
                <p class="chaos-actions">
                    <button type="button" data-testid="chaos-copy-link" title="A link that opens this cluster at this moment, with chaos as it is" onclick={on_copy.clone()}>{ "Copy a link to this moment" }</button>
                    { if chaos.holding {
                        html! { <button type="button" data-testid="chaos-resume" onclick={on_play_on.clone()}>{ "Play on" }</button> }
                    } else { html! {} } }
                </p>
            </div>
        }
    });
    html! { <>
        <p role="status" data-testid="chaos-status">{ format!(
            "Chaos is on since t = {} ms: {} fault{} so far, {} anomal{} found.",
            chaos.started_ms,
            chaos.struck(now),
            if chaos.struck(now) == 1 { "" } else { "s" },
            chaos.findings,
            if chaos.findings == 1 { "y" } else { "ies" },
        ) }</p>
        { halt.unwrap_or_default() }
        { if chaos.struck(now) == 0 { html! {} } else { html! {
            <ol class="chaos-faults" data-testid="chaos-faults" reversed=true start={chaos.struck(now).to_string()} aria-label="faults chaos injected, newest first">
                { for chaos.injected.iter().rev().filter(|fault| fault.at_ms <= now).map(|fault| html! { <li>{ fault.to_string() }</li> }) }
            </ol>
        } } }
    </> }
}
