//! The architecture map (SVG), drawn from a [`MapModel`]. Every node, replica
//! row and edge is a focusable button with an accessible name; selecting one
//! tells the parent, which shows the inspector.

use std::rc::Rc;

use yew::prelude::*;

use crate::cluster_model::count_of;
use crate::map_model::{
    fit_text, EdgeKind, FoldedInternal, MapEdge, MapModel, MapNode, NodeBody, ReplicaRow, MONO_CHAR_W, TEXT_CHAR_W,
};
use crate::selection::Selection;
use kafkascope_engine::sim::types::NodeId;
use kafkascope_engine::sim::view::ConsumerPhase;

/// The map's own style, inside the SVG so a downloaded copy looks the same.
/// Every state also shows in text (badges, upper-case states), never in
/// colour alone.
const MAP_STYLE: &str = r#"
svg.map { --m-fg: #1d1f21; --m-muted: #5c6166; --m-box: #ffffff; --m-row: #f3f4f6; --m-line: #9aa1a8;
  --m-accent: #1f6feb; --m-ok: #15803d; --m-warn: #b45309; --m-bad: #dc2626; --m-focus: #f59e0b;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
@media (prefers-color-scheme: dark) {
  svg.map { --m-fg: #e6e8ea; --m-muted: #9aa1a8; --m-box: #1a1e24; --m-row: #232932; --m-line: #5c6670;
    --m-accent: #4c8dff; --m-ok: #4ade80; --m-warn: #fbbf24; --m-bad: #ff7b72; }
}
svg.map text { fill: var(--m-fg); font-size: 12px; }
svg.map .title { font-weight: 700; font-size: 14px; }
svg.map .title.small { font-size: 13px; }
svg.map .state { font-size: 12px; font-weight: 600; fill: var(--m-muted); }
svg.map .end { text-anchor: end; }
svg.map .detail { fill: var(--m-muted); font-size: 12px; }
svg.map .mono, svg.map .offsets, svg.map .partition, svg.map .badge-text { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12px; }
svg.map .frame { fill: var(--m-box); stroke: var(--m-line); stroke-width: 1.2; }
svg.map .row { fill: var(--m-row); }
svg.map .node, svg.map .replica, svg.map .member, svg.map .edge, svg.map .folded { cursor: pointer; }
svg.map .folded .row { fill: none; stroke: var(--m-line); stroke-dasharray: 3 2; }
svg.map .folded:focus { outline: none; }
svg.map .folded:focus-visible .row { stroke: var(--m-focus); stroke-width: 2; }
svg.map .node:focus, svg.map .replica:focus, svg.map .member:focus, svg.map .edge:focus { outline: none; }
svg.map .node:focus-visible > .frame, svg.map .node.selected > .frame { stroke: var(--m-focus); stroke-width: 3; }
svg.map .node-header .header-hit { fill: transparent; stroke: none; }
svg.map .node-header:focus-visible .header-hit { stroke: var(--m-focus); stroke-width: 3; }
svg.map .replica:focus-visible .row, svg.map .replica.selected .row, svg.map .member:focus-visible .row, svg.map .member.selected .row { stroke: var(--m-focus); stroke-width: 2; }
svg.map .controller.active .frame { stroke: var(--m-accent); stroke-width: 2.5; }
svg.map .controller.down .frame, svg.map .broker-node.dead .frame { stroke-dasharray: 5 3; opacity: 0.6; }
svg.map .broker-node.dead .state, svg.map .broker-node.fenced .state, svg.map .controller.down .state { fill: var(--m-bad); }
svg.map .broker-node.fenced .frame { stroke: var(--m-bad); stroke-dasharray: 2 2; }
svg.map .broker-node.paused .state { fill: var(--m-warn); }
svg.map .bar-bg { fill: none; stroke: var(--m-line); stroke-width: 0.8; }
svg.map .bar { fill: var(--m-accent); }
svg.map .replica.follower .bar { fill: var(--m-ok); }
svg.map .replica.out-of-sync .bar { fill: var(--m-warn); }
svg.map .replica.out-of-sync .badge-text { fill: var(--m-warn); font-weight: 700; }
svg.map .replica.leader .badge-text, svg.map .replica.leader .partition { font-weight: 700; }
svg.map .hw { stroke: var(--m-fg); stroke-width: 1.6; }
svg.map .lso { stroke: var(--m-warn); stroke-width: 1.6; stroke-dasharray: 2 1.5; }
svg.map .cleaned { stroke: var(--m-fg); stroke-width: 1.4; }
svg.map .flushed { stroke: var(--m-fg); stroke-width: 2; }
svg.map .deleted { fill: var(--m-row); stroke: var(--m-muted); stroke-width: 0.6; stroke-dasharray: 1.5 1.5; }
svg.map .marker { stroke: var(--m-box); stroke-width: 1.2; }
svg.map .error-text { fill: var(--m-muted); font-size: 12px; }
svg.map .producer.has-error .error-text { fill: var(--m-bad); font-weight: 600; }
svg.map .group.rebalancing .frame { stroke: var(--m-warn); stroke-dasharray: 6 3; }
svg.map .group.rebalancing .state { fill: var(--m-warn); }
svg.map .edge .hit { stroke: transparent; stroke-width: 12; fill: none; }
svg.map .edge-buttons .edge { pointer-events: stroke; }
svg.map .edge .line { stroke: var(--m-line); stroke-width: 1.4; fill: none; opacity: 0.8; stroke-linejoin: round; }
svg.map .edge.replication .line { stroke-dasharray: 4 2; }
svg.map .edge.heartbeat .line, svg.map .edge.quorum .line { stroke-dasharray: 1 3; }
svg.map .edge.selected .line { stroke: var(--m-focus); stroke-width: 3; opacity: 1; }
svg.map .edge .focus-line { stroke: transparent; stroke-width: 3; fill: none; }
svg.map .edge:hover .focus-line, svg.map .edge:focus-visible .focus-line { stroke: var(--m-focus); }
svg.map .arrowhead { fill: var(--m-line); }
svg.map .election-note { font-size: 12px; fill: var(--m-muted); font-style: italic; }
svg.map .count { font-size: 12px; font-weight: 700; text-anchor: middle; }
svg.map .message { fill: var(--m-accent); stroke: var(--m-box); stroke-width: 1; }
svg.map .message.response { fill: var(--m-box); stroke: var(--m-accent); stroke-width: 2; }
"#;

#[derive(Properties, PartialEq)]
pub struct MapProps {
    pub model: Rc<MapModel>,
    pub selected: Option<Selection>,
    pub on_select: Callback<Selection>,
    /// `prefers-reduced-motion`: no moving messages, counts on edges instead.
    pub reduced_motion: bool,
    /// Shows every replica of Kafka's internal topics (a folded line's
    /// button); without it the folded lines are plain text.
    #[prop_or_default]
    pub on_expand_internal: Option<Callback<()>>,
}

/// Click and Enter/Space emit `name`; neither reaches the section's own
/// shortcuts (play/pause, stepping). The map's selections and the
/// sequence rows both use it.
pub fn activate<T: Clone + 'static>(
    name: T,
    on_select: &Callback<T>,
) -> (Callback<MouseEvent>, Callback<KeyboardEvent>) {
    let click = {
        let on_select = on_select.clone();
        let name = name.clone();
        Callback::from(move |event: MouseEvent| {
            event.stop_propagation();
            on_select.emit(name.clone());
        })
    };
    let key = {
        let on_select = on_select.clone();
        Callback::from(move |event: KeyboardEvent| {
            if matches!(event.key().as_str(), "Enter" | " ") {
                event.prevent_default();
                event.stop_propagation();
                on_select.emit(name.clone());
            }
        })
    };
    (click, key)
}

fn kind_class(kind: EdgeKind) -> &'static str {
    match kind {
        EdgeKind::Produce => "produce",
        EdgeKind::Replication => "replication",
        EdgeKind::BrokerToController => "heartbeat",
        EdgeKind::Quorum => "quorum",
        EdgeKind::Consumer => "consumer",
    }
}

/// An edge's drawn line, under the boxes (the button is drawn apart, after
/// the boxes, so that the boxes come first in tab order).
fn edge_line(edge: &MapEdge, selected: bool) -> Html {
    html! {
        <g class={classes!("edge", kind_class(edge.kind), selected.then_some("selected"))} aria-hidden="true">
            <path class="line" d={edge.path()} marker-end="url(#arrow)" />
        </g>
    }
}

fn edge_view(edge: &MapEdge, selected: bool, reduced_motion: bool, on_select: &Callback<Selection>) -> Html {
    let (click, key) = activate(
        Selection::Edge {
            from: edge.from,
            to: edge.to,
        },
        on_select,
    );
    let middle = edge.at(0.5);
    html! {
        <g class={classes!("edge", kind_class(edge.kind), selected.then_some("selected"))}
            role="button" tabindex="0" aria-pressed={selected.to_string()}
            data-testid={format!("edge-{}", edge.key.replace("->", "-to-"))} onclick={click} onkeydown={key}>
            <title>{ &edge.label }</title>
            <path class="hit" d={edge.path()} />
            <path class="focus-line" d={edge.path()} />
            { if reduced_motion && edge.messages > 0 {
                html! { <text class="count" x={format!("{:.1}", middle.x)} y={format!("{:.1}", middle.y - 3.0)}>{ format!("{}✉", edge.messages) }</text> }
            } else { html! {} } }
        </g>
    }
}

/// Drawn text. Hidden from assistive technology: every selectable thing on
/// the map is named by its `<title>`, which says all its text says (and
/// more), and a screen reader reads that instead of the scattered
/// fragments. (A `<title>` rather than `aria-label`: a name must contain
/// the visible text when it is an `aria-label`, and the drawn fragments are
/// abbreviations.)
fn text(x: f64, y: f64, class: &'static str, content: impl Into<String>) -> Html {
    html! { <text x={format!("{x:.1}")} y={format!("{y:.1}")} class={class} aria-hidden="true">{ content.into() }</text> }
}

#[derive(Properties, PartialEq)]
struct ReplicaProps {
    broker: u32,
    row: ReplicaRow,
    selected: bool,
    on_select: Callback<Selection>,
}

/// A replica row: a component, so rows whose numbers did not change are
/// not re-rendered.
#[function_component(ReplicaView)]
fn replica_component(props: &ReplicaProps) -> Html {
    replica_view(props.broker, &props.row, props.selected, &props.on_select)
}

fn replica_view(broker: u32, row: &ReplicaRow, is_selected: bool, on_select: &Callback<Selection>) -> Html {
    let selection = Selection::Replica {
        broker,
        partition: row.partition.clone(),
    };
    let (click, key) = activate(selection, on_select);
    let rect = row.rect;
    let (badge_x, bar_x, bar_w, text_x) = row.columns();
    let fraction = |offset: u64| offset as f64 / row.scale.max(1) as f64;
    let leo_w = bar_w * fraction(row.log_end_offset);
    let hw_x = bar_x + bar_w * fraction(row.high_watermark);
    let lso_x = bar_x + bar_w * fraction(row.last_stable_offset);
    let (bar_y, bar_h) = (rect.y + 7.0, 10.0);
    let baseline = rect.y + 16.5;
    html! {
        <g class={classes!("replica", row.role.to_string(), (!row.in_sync).then_some("out-of-sync"), is_selected.then_some("selected"))}
            role="button" tabindex="0"
            data-testid={format!("replica-{broker}-{}", row.partition)} onclick={click} onkeydown={key}>
            <title>{ row.label(broker) }</title>
            <rect class="row" x={format!("{:.1}", rect.x)} y={format!("{:.1}", rect.y + 1.0)} width={format!("{:.1}", rect.w)} height={format!("{:.1}", rect.h - 2.0)} />
            { text(rect.x + 4.0, baseline, "partition", row.short.clone()) }
            { text(badge_x, baseline, "badge-text", row.badge()) }
            <rect class="bar-bg" x={format!("{bar_x:.1}")} y={format!("{bar_y:.1}")} width={format!("{bar_w:.1}")} height={format!("{bar_h:.1}")} />
            <rect class="bar" x={format!("{bar_x:.1}")} y={format!("{bar_y:.1}")} width={format!("{leo_w:.1}")} height={format!("{bar_h:.1}")} />
            if let Some(cleaned) = row.cleaned_up_to {
                <line class="cleaned" data-testid={format!("cleaned-{broker}-{}", row.partition)} x1={format!("{:.1}", bar_x + bar_w * fraction(cleaned).min(1.0))} x2={format!("{:.1}", bar_x + bar_w * fraction(cleaned).min(1.0))} y1={format!("{:.1}", bar_y - 1.0)} y2={format!("{:.1}", bar_y + bar_h + 1.0)} />
            }
            if row.recovery_point > row.log_start_offset {
                <line class="flushed" data-testid={format!("flushed-{broker}-{}", row.partition)} x1={format!("{bar_x:.1}")} x2={format!("{:.1}", bar_x + bar_w * fraction(row.recovery_point).min(1.0))} y1={format!("{:.1}", bar_y + bar_h + 1.5)} y2={format!("{:.1}", bar_y + bar_h + 1.5)} />
            }
            if row.log_start_offset > 0 {
                <rect class="deleted" data-testid={format!("deleted-{broker}-{}", row.partition)} x={format!("{bar_x:.1}")} y={format!("{bar_y:.1}")} width={format!("{:.1}", bar_w * fraction(row.log_start_offset).min(1.0))} height={format!("{bar_h:.1}")} />
            }
            { for row.markers.iter().map(|offset| {
                let x = bar_x + bar_w * fraction(*offset);
                html! { <line class="marker" x1={format!("{x:.1}")} x2={format!("{x:.1}")} y1={format!("{bar_y:.1}")} y2={format!("{:.1}", bar_y + bar_h)} /> }
            }) }
            <line class="hw" x1={format!("{hw_x:.1}")} x2={format!("{hw_x:.1}")} y1={format!("{:.1}", bar_y - 3.0)} y2={format!("{:.1}", bar_y + bar_h + 3.0)} />
            if row.last_stable_offset < row.high_watermark {
                <line class="lso" data-testid={format!("lso-{broker}-{}", row.partition)} x1={format!("{lso_x:.1}")} x2={format!("{lso_x:.1}")} y1={format!("{:.1}", bar_y - 4.0)} y2={format!("{:.1}", bar_y + bar_h + 4.0)} />
            }
            { text(text_x, baseline, "offsets", row.offsets_text()) }
        </g>
    }
}

/// A broker's folded line for its replicas of Kafka's internal topics: a
/// button that shows them all (the full view) when the map can.
fn folded_view(broker: u32, folded: &FoldedInternal, on_expand: &Option<Callback<()>>) -> Html {
    let rect = folded.rect;
    let words = format!(
        "+ {} internal {} · leads {} ▸",
        folded.replicas,
        if folded.replicas == 1 { "replica" } else { "replicas" },
        folded.leads
    );
    let label = format!(
        "{} on {}: {} of Kafka's internal topics (__consumer_offsets, __transaction_state), {} of them led here{}",
        count_of(folded.replicas as u64, "replica", "replicas"),
        crate::selection::as_broker(broker),
        if folded.replicas == 1 { "a replica" } else { "replicas" },
        folded.leads,
        if on_expand.is_some() { "; show them" } else { "" }
    );
    let drawn = fit_text(&words, rect.w - 8.0, crate::map_model::TEXT_CHAR_W);
    match on_expand {
        Some(on_expand) => {
            let (click, key) = activate((), on_expand);
            html! {
                <g class="folded" role="button" tabindex="0" data-testid={format!("folded-{broker}")} onclick={click} onkeydown={key}>
                    <title>{ label }</title>
                    <rect class="row" x={format!("{:.1}", rect.x)} y={format!("{:.1}", rect.y + 1.0)} width={format!("{:.1}", rect.w)} height={format!("{:.1}", rect.h - 2.0)} />
                    { text(rect.x + 4.0, rect.y + 16.5, "detail", drawn) }
                </g>
            }
        }
        None => html! {
            <g class="folded" data-testid={format!("folded-{broker}")}>
                <title>{ label }</title>
                { text(rect.x + 4.0, rect.y + 16.5, "detail", drawn) }
            </g>
        },
    }
}

fn node_view(
    node: &MapNode,
    selected: &Option<Selection>,
    on_select: &Callback<Selection>,
    on_expand: &Option<Callback<()>>,
) -> Html {
    let rect = node.rect;
    let is_selected = selected.as_ref() == Some(&node.id);
    let (click, key) = activate(node.id.clone(), on_select);
    let frame = |class: &'static str| {
        html! {
            <rect class={classes!("frame", class)} x={format!("{:.1}", rect.x)} y={format!("{:.1}", rect.y)}
                width={format!("{:.1}", rect.w)} height={format!("{:.1}", rect.h)} rx="6" />
        }
    };
    let (x, y) = (rect.x + 8.0, rect.y);
    // What a line of the box may hold.
    let inner = rect.w - 16.0;
    let line = |content: String| fit_text(&content, inner, TEXT_CHAR_W);
    let (class, inner) = match &node.body {
        NodeBody::Controller {
            role, epoch, committed, ..
        } => (
            classes!("controller", role.clone()),
            html! { <>
                { frame("box") }
                { text(x, y + 20.0, "title", line(node.name.clone())) }
                { text(x, y + 38.0, "state", line(format!("{} · epoch {epoch}", role.to_uppercase()))) }
                { text(x, y + 55.0, "detail", line(format!("metadata: {} committed", count_of(*committed as u64, "entry", "entries")))) }
            </> },
        ),
        NodeBody::Broker {
            id,
            state,
            leads,
            follows,
            replicas,
            folded_internal,
        } => (
            classes!("broker-node", state.clone()),
            html! { <>
                { frame("box") }
                { text(x, y + 19.0, "title", node.name.clone()) }
                { text(rect.x + rect.w - 8.0, y + 19.0, "state end", state.to_uppercase()) }
                { text(x, y + 37.0, "detail", line(format!("leads {leads} · follows {follows}"))) }
                { for replicas.iter().map(|row| {
                    let row_selected = matches!(
                        selected,
                        Some(Selection::Replica { broker, partition }) if broker == id && *partition == row.partition
                    );
                    html! { <ReplicaView key={row.partition.clone()} broker={*id} row={row.clone()} selected={row_selected} on_select={on_select.clone()} /> }
                }) }
                { folded_internal.as_ref().map_or(html! {}, |folded| folded_view(*id, folded, on_expand)) }
            </> },
        ),
        NodeBody::Producer(producer) => (
            classes!("producer", producer.last_error.is_some().then_some("has-error")),
            html! { <>{ frame("box") }{ producer_lines(producer, &node.name, x, y, inner) }</> },
        ),
        NodeBody::Group {
            name,
            generation,
            modern,
            cooperative,
            rebalancing,
            members,
            ..
        } => (
            classes!("group", rebalancing.then_some("rebalancing")),
            html! { <>
                { frame("box") }
                { text(x, y + 19.0, "title", line(format!("group {name}"))) }
                { text(x, y + 37.0, "state", line(if *modern { format!("KIP-848 · epoch {generation}") } else if *rebalancing && *cooperative { format!("REBALANCING (reading) · gen {generation}") } else if *rebalancing { format!("REBALANCING (paused) · gen {generation}") } else { format!("STABLE · gen {generation}") })) }
                { for members.iter().map(|member| member_view(member, name, selected, on_select)) }
            </> },
        ),
    };
    // A broker holds replica buttons and a group member buttons: such a box
    // is a labelled group (a button may not contain buttons), selected by
    // a click anywhere on it or by its header button from the keyboard.
    if matches!(node.body, NodeBody::Broker { .. } | NodeBody::Group { .. }) {
        return html! {
            <g class={classes!("node", class, is_selected.then_some("selected"))} role="group"
                aria-label={node.label.clone()} data-testid={format!("node-{}", node.name)} onclick={click}>
                <title>{ &node.label }</title>
                { inner }
                <g class="node-header" role="button" tabindex="0" aria-label={format!("select {}", node.name)}
                    aria-pressed={is_selected.to_string()} data-testid={format!("select-{}", node.name)} onkeydown={key}>
                    <rect class="header-hit" x={format!("{:.1}", rect.x)} y={format!("{:.1}", rect.y)}
                        width={format!("{:.1}", rect.w)} height="42" rx="6" />
                </g>
            </g>
        };
    }
    html! {
        <g class={classes!("node", class, is_selected.then_some("selected"))} role="button" tabindex="0"
            aria-pressed={is_selected.to_string()}
            data-testid={format!("node-{}", node.name)} onclick={click} onkeydown={key}>
            <title>{ &node.label }</title>
            { inner }
        </g>
    }
}

/// A member row of a group's box: a button of its own.
fn member_view(
    member: &crate::map_model::MemberRow,
    name: &str,
    selected: &Option<Selection>,
    on_select: &Callback<Selection>,
) -> Html {
    let member_node = Selection::Node(NodeId::Consumer(member.id));
    let member_selected = selected.as_ref() == Some(&member_node);
    let (click, key) = activate(member_node, on_select);
    let r = member.rect;
    let label = format!(
        "{} in group {name}, {}{}, owns {}, total lag {}",
        member.name,
        member.phase,
        if member.throttled {
            ", fetches throttled by a quota"
        } else {
            ""
        },
        if member.partitions.is_empty() {
            "nothing".to_string()
        } else {
            member.partitions.join(", ")
        },
        member.total_lag
    );
    let more = member.partitions.len().saturating_sub(2);
    let title_w = r.w - 8.0 - if more > 0 { 30.0 } else { 0.0 };
    html! {
        <g class={classes!("member", member.phase.to_string(), member_selected.then_some("selected"))}
            role="button" tabindex="0" data-testid={format!("member-{}", member.name)}
            onclick={click} onkeydown={key}>
            <title>{ label }</title>
            <rect class="row" x={format!("{:.1}", r.x)} y={format!("{:.1}", r.y)} width={format!("{:.1}", r.w)} height={format!("{:.1}", r.h)} rx="4" />
            { text(r.x + 4.0, r.y + 17.0, "title small", fit_text(&format!("{} · {}{}", member.name, member.phase, if member.throttled { " · ⏸" } else { "" }), title_w, TEXT_CHAR_W + 0.5)) }
            { if member.partitions.is_empty() {
                text(r.x + 4.0, r.y + 34.0, "detail", if member.phase == ConsumerPhase::Consuming { "idle: no partition" } else { "" })
            } else { html! { <>
                { for member.partitions.iter().take(2).enumerate().map(|(index, line)| text(r.x + 4.0, r.y + 33.0 + index as f64 * 14.0, "detail mono", fit_text(line, r.w - 8.0, MONO_CHAR_W))) }
                { if more > 0 { text(r.x + r.w - 28.0, r.y + 17.0, "detail", format!("+{more}")) } else { html! {} } }
            </> } } }
        </g>
    }
}

/// The lines of a producer's box: its topic and acks, its buffer as a
/// gauge, what is in flight, its last error, and where its recent keys went.
fn producer_lines(
    producer: &kafkascope_engine::sim::view::ProducerView,
    name: &str,
    x: f64,
    y: f64,
    inner: f64,
) -> Html {
    let line = |content: String| fit_text(&content, inner, TEXT_CHAR_W);
    let gauge_w = inner;
    let fill = (producer.buffered_bytes as f64 / f64::from(producer.batch_size.max(1))).min(1.0) * gauge_w;
    let error = producer.last_error.as_ref().map(|error| {
        format!(
            "⚠ {} {}{}",
            error.error,
            error.partition,
            if error.will_retry { " (retry)" } else { "" }
        )
    });
    html! { <>
        { text(x, y + 20.0, "title", line(name.to_string())) }
        { text(x, y + 38.0, "detail", line(format!("→ {} · acks={}", producer.topic, producer.acks))) }
        { text(x, y + 55.0, "detail", line(format!(
            "buffered {} · batches {}",
            producer.buffered_records, producer.buffered_batches,
        ))) }
        <rect class="bar-bg" x={format!("{x:.1}")} y={format!("{:.1}", y + 61.0)} width={format!("{gauge_w:.1}")} height="6" />
        <rect class="bar" x={format!("{x:.1}")} y={format!("{:.1}", y + 61.0)} width={format!("{fill:.1}")} height="6" />
        { text(x, y + 84.0, "detail", line(format!("in flight {} · acked {}", producer.in_flight, producer.acknowledged))) }
        { text(x, y + 101.0, "error-text", line(match producer.throttled_until {
            Some(until) => format!("⏸ THROTTLED until {until} ms"),
            None if producer.waiting > 0 => format!("{} await metadata", count_of(producer.waiting as u64, "record", "records")),
            None => error.unwrap_or_else(|| "no errors".to_string()),
        })) }
        { text(x, y + 120.0, "detail", line("recent keys → partition:".to_string())) }
        { for producer.recent.iter().take(3).enumerate().map(|(index, record)| text(
            x + 6.0,
            y + 138.0 + index as f64 * 16.0,
            "detail mono",
            fit_text(&format!(
                "{} → {}{}",
                record.key.as_deref().map_or("(no key)".to_string(), |key| format!("{key:?}")),
                record.partition.map_or("?".to_string(), |partition| format!("p{partition}")),
                if record.acknowledged { " ✓" } else { "" }
            ), inner - 6.0, MONO_CHAR_W),
        )) }
    </> }
}

#[derive(Properties, PartialEq)]
struct NodeProps {
    node: MapNode,
    /// The selection, if it is this node or inside it.
    selected: Option<Selection>,
    on_select: Callback<Selection>,
    on_expand: Option<Callback<()>>,
}

/// A node box: a component, so unchanged boxes are not re-rendered.
#[function_component(NodeView)]
fn node_component(props: &NodeProps) -> Html {
    node_view(&props.node, &props.selected, &props.on_select, &props.on_expand)
}

#[derive(Properties, PartialEq)]
struct EdgeProps {
    edge: MapEdge,
    selected: bool,
    reduced_motion: bool,
    on_select: Callback<Selection>,
}

#[function_component(EdgeView)]
fn edge_component(props: &EdgeProps) -> Html {
    edge_view(&props.edge, props.selected, props.reduced_motion, &props.on_select)
}

/// Whether a selection falls on this node (the node, a replica row in
/// it, or a member row in it).
fn selection_within(node: &MapNode, selected: &Option<Selection>) -> Option<Selection> {
    let selection = selected.as_ref()?;
    let inside = *selection == node.id
        || matches!(selection, Selection::Replica { broker, .. } if node.id == Selection::Node(NodeId::Broker(*broker)))
        || matches!(
            (&node.body, selection),
            (NodeBody::Group { members, .. }, Selection::Node(NodeId::Consumer(consumer)))
                if members.iter().any(|member| member.id == *consumer)
        );
    inside.then(|| selection.clone())
}

fn is_edge(selected: &Option<Selection>, edge: &MapEdge) -> bool {
    matches!(selected, Some(Selection::Edge { from, to }) if *from == edge.from && *to == edge.to)
}

/// The width, in CSS pixels, that the map may take in the element `node`
/// (its content box less the map's 1 px border), kept up to date as the
/// element is resized (`ResizeObserver`). Before the first measure it is a
/// guess from the window's width.
#[hook]
pub fn use_map_width(node: NodeRef) -> f64 {
    let width = use_state(|| {
        let window = web_sys::window()
            .and_then(|window| window.inner_width().ok())
            .and_then(|width| width.as_f64());
        match window {
            Some(window) if window <= 700.0 => window - 50.0,
            Some(window) => (window * 0.6).min(1400.0),
            None => crate::map_model::WIDTH,
        }
    });
    {
        let width = width.clone();
        use_effect_with(node, move |node| {
            use wasm_bindgen::closure::Closure;
            use wasm_bindgen::JsCast;
            let observed = node.cast::<web_sys::Element>();
            let callback = Closure::<dyn FnMut(js_sys::Array)>::new(move |entries: js_sys::Array| {
                let Ok(entry) = entries.get(0).dyn_into::<web_sys::ResizeObserverEntry>() else {
                    return;
                };
                // The map's own border takes 2 px of the box.
                let measured = (entry.content_rect().width() - 2.0).floor();
                if measured > 0.0 && (measured - *width).abs() >= 1.0 {
                    width.set(measured);
                }
            });
            let observer = web_sys::ResizeObserver::new(callback.as_ref().unchecked_ref()).ok();
            if let (Some(observer), Some(element)) = (&observer, &observed) {
                observer.observe(element);
            }
            move || {
                if let Some(observer) = observer {
                    observer.disconnect();
                }
                drop(callback);
            }
        });
    }
    *width
}

/// Scrolls the box `node` (not the page) so that the map's selected box,
/// row or edge inside it is in view.
pub fn scroll_to_selected(node: &NodeRef) {
    let Some(frame) = node.cast::<web_sys::Element>() else {
        return;
    };
    let Ok(Some(selected)) = frame.query_selector("svg.map .selected") else {
        return;
    };
    let (outer, inner) = (frame.get_bounding_client_rect(), selected.get_bounding_client_rect());
    let margin = 24.0;
    let top = f64::from(frame.scroll_top());
    let wanted = if inner.top() < outer.top() + margin {
        top - (outer.top() + margin - inner.top())
    } else if inner.bottom() > outer.bottom() - margin {
        // As much of it as fits, its top first.
        top + (inner.bottom() - outer.bottom() + margin).min(inner.top() - outer.top() - margin)
    } else {
        return;
    };
    frame.set_scroll_top(wanted.max(0.0) as i32);
}

/// The whole map less every box: the clip of the edges' click targets.
fn outside_boxes(model: &MapModel) -> String {
    let mut path = format!("M0,0 H{:.0} V{:.0} H0 Z", model.width, model.height);
    for node in &model.nodes {
        let r = node.rect;
        path.push_str(&format!(
            " M{:.1},{:.1} h{:.1} v{:.1} h{:.1} Z",
            r.x, r.y, r.w, r.h, -r.w
        ));
    }
    path
}

/// The map.
#[function_component(ClusterMap)]
pub fn cluster_map(props: &MapProps) -> Html {
    let model = &props.model;
    // A stacked (phone) map has no room under its quorum for the last
    // election: the whole sentence is drawn above the map instead.
    let election_above = match (&model.election_note, &model.election_text) {
        (None, Some(text)) => html! { <p class="election-note-text" data-testid="last-election">{ text }</p> },
        _ => html! {},
    };
    html! { <>
        { election_above }
        <svg class="map" data-testid="map" viewBox={format!("0 0 {:.0} {:.0}", model.width, model.height)}
            // Drawn at one unit a pixel: the model is laid out for the
            // width of the map's box, so its text is the size its style says.
            width={format!("{:.0}", model.width)} height={format!("{:.0}", model.height)}
            xmlns="http://www.w3.org/2000/svg" role="group" aria-label="architecture map of the running cluster">
            <style>{ MAP_STYLE }</style>
            <defs>
                // Edges take clicks only outside the boxes: a click or a tap
                // anywhere on a box or a row selects it, never an edge.
                <clipPath id="outside-boxes" clipPathUnits="userSpaceOnUse">
                    <path clip-rule="evenodd" d={outside_boxes(model)} />
                </clipPath>
                <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse">
                    <path d="M0,0 L10,5 L0,10 z" class="arrowhead" />
                </marker>
            </defs>
            { match &model.election_note {
                Some((at, note)) => html! {
                    <text class="election-note" data-testid="last-election" x={format!("{:.1}", at.x)} y={format!("{:.1}", at.y)}>{ note.clone() }</text>
                },
                None => html! {},
            } }
            <g class="edges" aria-hidden="true">
                { for model.edges.iter().map(|edge| edge_line(edge, is_edge(&props.selected, edge))) }
            </g>
            <g class="nodes">
                { for model.nodes.iter().map(|node| html! {
                    <NodeView key={node.name.clone()} node={node.clone()} selected={selection_within(node, &props.selected)} on_select={props.on_select.clone()} on_expand={props.on_expand_internal.clone()} />
                }) }
            </g>
            <g class="edge-buttons" clip-path="url(#outside-boxes)">
                { for model.edges.iter().map(|edge| html! {
                    <EdgeView key={edge.key.clone()} edge={edge.clone()} selected={is_edge(&props.selected, edge)}
                        reduced_motion={props.reduced_motion} on_select={props.on_select.clone()} />
                }) }
            </g>
            { if props.reduced_motion { html! {} } else { html! {
                <g class="messages" aria-hidden="true">
                    { for model.messages.iter().map(|message| html! {
                        <circle class={classes!("message", message.response.then_some("response"))}
                            cx={format!("{:.1}", message.at.x)} cy={format!("{:.1}", message.at.y)} r="4">
                            <title>{ message.name.as_str() }</title>
                        </circle>
                    }) }
                </g>
            } } }
        </svg>
    </> }
}
