//! The architecture map's plain data: where every node sits, what it shows,
//! which edges join them and where each message in flight is, all derived
//! from the engine's [`ClusterView`]. The map component only draws this;
//! the inspector texts and the Mermaid export come from here too, so the
//! whole picture is testable natively.

use kafkascope_engine::sorting::Gather;
use std::collections::BTreeMap;

use crate::cluster_model::count_of;
use crate::selection::{as_broker, as_controller, as_producer, Selection};
use kafkascope_engine::sim::config::OffsetReset;
use kafkascope_engine::sim::types::NodeId;
use kafkascope_engine::sim::view::{
    ClusterView, ConsumerPhase, ConsumerView, MessageView, ProcessStatus, ProducerView, ReplicaRole, Role,
};

/// The width of the wide layout that the native tests and the exports
/// use (the page lays the map out for the width its box has).
pub const WIDTH: f64 = 1000.0;
const MARGIN: f64 = 10.0;
/// Above the controllers: the lane their quorum edges run in.
const TOP_LANE: f64 = 26.0;
const PRODUCER_W: f64 = 196.0;
const GROUP_W: f64 = 224.0;
/// Between the producers and the brokers, and the brokers and the groups:
/// the vertical lanes edges run in.
const LANE: f64 = 44.0;
/// Between two columns of brokers (a vertical lane too).
const COLUMN_GAP: f64 = 30.0;
/// Between two rows of brokers (a horizontal lane).
const ROW_GAP: f64 = 44.0;
/// Between the quorum and the first row of brokers: the election note and
/// the brokers' edges to the active controller.
const QUORUM_GAP: f64 = 58.0;
const GAP: f64 = 14.0;
const CONTROLLER_H: f64 = 64.0;
const CONTROLLER_MIN_W: f64 = 168.0;
const CONTROLLER_MAX_W: f64 = 200.0;
const BROKER_HEADER: f64 = 44.0;
/// The narrowest a broker box may be: a replica row's name, badge, bar and
/// `HW/LEO` at 12 px.
const MIN_BROKER_W: f64 = 244.0;
const MAX_BROKER_W: f64 = 420.0;
/// Height of one replica row in a broker: a 24 px target (WCAG 2.2's
/// minimum target size).
pub const ROW_H: f64 = 24.0;
const MAX_BROKERS_PER_ROW: usize = 3;
const PRODUCER_H: f64 = 178.0;
const MEMBER_H: f64 = 52.0;
const GROUP_HEADER: f64 = 44.0;
/// One column (a phone): the lane on the right that every edge runs in.
const NARROW_LANE: f64 = 28.0;
/// The narrowest map drawn; a narrower box scrolls.
const MIN_WIDTH: f64 = 280.0;

/// A point in SVG units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

/// A box in SVG units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect {
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
}

/// One replica row inside a broker box.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplicaRow {
    /// `orders-0`.
    pub partition: String,
    /// What the row shows of the name: `offsets-17` for a partition of
    /// `__consumer_offsets`.
    pub short: String,
    /// Of a topic Kafka keeps for itself (listed last).
    pub internal: bool,
    pub role: ReplicaRole,
    /// In the committed ISR.
    pub in_sync: bool,
    pub log_end_offset: u64,
    pub high_watermark: u64,
    /// Where `read_committed` consumers stop (drawn when below the high
    /// watermark: a transaction is open).
    pub last_stable_offset: u64,
    /// The offsets of the latest transaction markers (drawn as ticks).
    pub markers: Vec<u64>,
    /// The log start offset: below it retention deleted the records
    /// (drawn as an empty stretch at the bar's start).
    pub log_start_offset: u64,
    /// For a compacted log, where the cleaner's last pass stopped (drawn
    /// as a tick: clean below, dirty above).
    pub cleaned_up_to: Option<u64>,
    /// The recovery point: below it the log is flushed to disk (drawn as a
    /// line under the bar); above it, in the page cache only.
    pub recovery_point: u64,
    /// The largest log end among the partition's replicas (the bar's scale).
    pub scale: u64,
    pub leader_epoch: Option<u32>,
    /// Row position.
    pub rect: Rect,
    /// The width of the broker's name column (its longest drawn name).
    pub name_w: f64,
}

impl ReplicaRow {
    /// The badge text: `L`/`F` plus `ISR` or `OSR` (never colour alone).
    pub fn badge(&self) -> String {
        let role = match self.role {
            ReplicaRole::Leader => "L",
            ReplicaRole::Follower => "F",
            ReplicaRole::Offline => "-",
        };
        format!("{role} {}", if self.in_sync { "ISR" } else { "OSR" })
    }

    /// The drawn `HW/LEO` text: whole numbers up to 9,999, then `12.3k` and
    /// `4.6M`, so it fits its box at any offset (the accessible name and
    /// the inspector have the exact numbers).
    pub fn offsets_text(&self) -> String {
        format!("{}/{}", compact(self.high_watermark), compact(self.log_end_offset))
    }

    /// Where the badge, the log bar and the offsets text go: the name
    /// column is as wide as the broker's longest drawn name, the text gets
    /// the width it needs at the row's monospace size, the bar the rest.
    /// Returns `(badge_x, bar_x, bar_w, text_x)`.
    pub fn columns(&self) -> (f64, f64, f64, f64) {
        let text_w = self.offsets_text().chars().count() as f64 * MONO_CHAR_W + 4.0;
        let badge_x = self.rect.x + 4.0 + self.name_w + 8.0;
        let bar_x = badge_x + BADGE_W + 6.0;
        let text_x = self.rect.x + self.rect.w - text_w;
        let bar_w = (text_x - 6.0 - bar_x).max(MIN_BAR_W);
        (badge_x, bar_x, bar_w, text_x)
    }

    /// The accessible name of the row.
    pub fn label(&self, broker: u32) -> String {
        let mut label = format!(
            "replica of {} on {broker_broker}: {}, {}, log end offset {}, high watermark {}",
            self.partition,
            self.role,
            if self.in_sync { "in sync" } else { "out of sync" },
            self.log_end_offset,
            self.high_watermark,
            broker_broker = as_broker(broker)
        );
        if self.last_stable_offset < self.high_watermark {
            label.push_str(&format!(", last stable offset {}", self.last_stable_offset));
        }
        if self.log_start_offset > 0 {
            label.push_str(&format!(
                ", log start offset {} (older records deleted)",
                self.log_start_offset
            ));
        }
        if self.recovery_point < self.log_end_offset {
            label.push_str(&format!(
                ", flushed to disk below offset {} (the rest is in the page cache only)",
                self.recovery_point
            ));
        }
        if !self.markers.is_empty() {
            let count = self.markers.len();
            label.push_str(&format!(
                ", {count} transaction marker{}",
                if count == 1 { "" } else { "s" }
            ));
        }
        label
    }
}

/// The width of one character of the map's 12 px monospace text (a
/// monospace glyph is about 0.6 em wide; a little over, so text never runs
/// out of its box).
pub const MONO_CHAR_W: f64 = 7.4;
/// An upper bound on the width of one character of the map's 12 px
/// proportional text (system-ui: about 0.5 em on average).
pub const TEXT_CHAR_W: f64 = 6.9;
/// The badge (`L ISR`): five monospace characters.
const BADGE_W: f64 = 5.0 * MONO_CHAR_W;
/// The narrowest log bar.
const MIN_BAR_W: f64 = 28.0;
/// The most characters of a replica's name a row draws (more are cut with
/// `…`; the accessible name and the inspector have the whole name).
const NAME_CHARS_MAX: usize = 12;

/// `text` cut to what fits in `width` at `char_w` a character, with `…`
/// when cut.
pub fn fit_text(text: &str, width: f64, char_w: f64) -> String {
    let fits = (width / char_w).floor().max(1.0) as usize;
    if text.chars().count() <= fits {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(fits.saturating_sub(1)).collect::<String>())
    }
}

/// An offset in at most four characters: whole up to 9999, then `12k`,
/// `4.6M`, `460M` (rounded down, so a number never shows as more than it is).
fn compact(offset: u64) -> String {
    if offset <= 9_999 {
        return offset.to_string();
    }
    let mut scaled = offset as f64;
    for unit in ["k", "M", "G", "T", "P", "E"] {
        scaled /= 1_000.0;
        if scaled < 10.0 {
            return format!("{:.1}{unit}", (scaled * 10.0).floor() / 10.0);
        }
        if scaled < 1_000.0 {
            return format!("{}{unit}", scaled.floor());
        }
    }
    format!("{}E", scaled.floor())
}

/// One member row inside a group box.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberRow {
    /// `consumer-0`.
    pub name: String,
    pub id: u32,
    pub member_id: Option<String>,
    pub phase: ConsumerPhase,
    /// Owned partitions: `orders-0 @12 lag 3`.
    pub partitions: Vec<String>,
    pub total_lag: u64,
    /// A broker throttles its fetches (`consumer_byte_rate`).
    pub throttled: bool,
    pub rect: Rect,
}

/// A broker's replicas of Kafka's internal topics, folded into one line
/// (the beginner view).
#[derive(Debug, Clone, PartialEq)]
pub struct FoldedInternal {
    pub replicas: usize,
    pub leads: usize,
    pub rect: Rect,
}

/// What a node box holds.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeBody {
    Producer(ProducerView),
    Controller {
        id: u32,
        alive: bool,
        role: String,
        epoch: u32,
        committed: usize,
    },
    Broker {
        id: u32,
        /// "running", "dead", "paused", "fenced" or "stopping" (a controlled shutdown).
        state: String,
        leads: usize,
        follows: usize,
        replicas: Vec<ReplicaRow>,
        /// The beginner view's one line for the broker's replicas of
        /// Kafka's internal topics.
        folded_internal: Option<FoldedInternal>,
    },
    Group {
        name: String,
        /// The generation (classic), or the highest member epoch (KIP-848).
        generation: u32,
        /// Whether it speaks the consumer protocol (KIP-848).
        modern: bool,
        /// Whether it rebalances cooperatively (KIP-429): members keep
        /// reading what they own while it rebalances.
        cooperative: bool,
        /// Members are stopped for a classic rebalance (never with KIP-848,
        /// where each member moves on its own).
        rebalancing: bool,
        coordinator: Option<u32>,
        members: Vec<MemberRow>,
        /// Committed offset and lag per partition (from the members' view).
        offsets: Vec<(String, Option<u64>, u64)>,
    },
}

/// A box on the map.
#[derive(Debug, Clone, PartialEq)]
pub struct MapNode {
    /// A node or a group.
    pub id: Selection,
    /// Its key: `broker-1`, `producer-0`, `controller-2`, `group-billing`.
    pub name: String,
    pub rect: Rect,
    /// Spoken and shown on hover.
    pub label: String,
    pub body: NodeBody,
}

/// The protocol family an edge carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum EdgeKind {
    /// Producer to a broker: Metadata and Produce.
    Produce,
    /// Follower to leader: replication Fetch.
    Replication,
    /// Broker to the active controller: registration and heartbeats.
    BrokerToController,
    /// Controller to controller: KRaft votes and log replication.
    Quorum,
    /// Consumer to a broker: the group protocol and consumer fetches.
    Consumer,
}

/// A line between two nodes.
#[derive(Debug, Clone, PartialEq)]
pub struct MapEdge {
    /// `broker-2->broker-1`: the direction its requests go.
    pub key: String,
    pub from: NodeId,
    pub to: NodeId,
    pub kind: EdgeKind,
    /// Its route through the lanes between boxes: straight stretches
    /// from the requester's box to the other's.
    pub points: Vec<Point>,
    /// Messages on it now.
    pub messages: usize,
    pub label: String,
}

impl MapEdge {
    /// The point at `t` (0 at `from`, 1 at `to`) along the route, by length.
    pub fn at(&self, t: f64) -> Point {
        let t = t.clamp(0.0, 1.0);
        let lengths: Vec<f64> = self
            .points
            .windows(2)
            .map(|pair| (pair[1].x - pair[0].x).hypot(pair[1].y - pair[0].y))
            .collect();
        let total: f64 = lengths.iter().sum();
        let Some(first) = self.points.first() else {
            return Point { x: 0.0, y: 0.0 };
        };
        let mut left = t * total;
        for (pair, length) in self.points.windows(2).zip(&lengths) {
            if left <= *length && *length > 0.0 {
                let share = left / length;
                return Point {
                    x: pair[0].x + (pair[1].x - pair[0].x) * share,
                    y: pair[0].y + (pair[1].y - pair[0].y) * share,
                };
            }
            left -= length;
        }
        *self.points.last().unwrap_or(first)
    }

    /// The SVG path.
    pub fn path(&self) -> String {
        self.points
            .iter()
            .enumerate()
            .map(|(index, point)| format!("{}{:.1},{:.1}", if index == 0 { "M" } else { " L" }, point.x, point.y))
            .collect()
    }
}

/// A message drawn on its edge.
#[derive(Debug, Clone, PartialEq)]
pub struct MapMessage {
    pub at: Point,
    pub name: kafkascope_engine::sim::types::MessageName,
    /// A response travels back along the edge.
    pub response: bool,
}

/// Everything the map draws.
#[derive(Debug, Clone, PartialEq)]
pub struct MapModel {
    /// The width in SVG units (the viewBox).
    pub width: f64,
    pub height: f64,
    /// Under the quorum: the last leader election and why (cut to fit;
    /// none on a stacked map).
    pub election_note: Option<(Point, String)>,
    /// The last leader election and why, whole (drawn beside a stacked map).
    pub election_text: Option<String>,
    pub nodes: Vec<MapNode>,
    pub edges: Vec<MapEdge>,
    pub messages: Vec<MapMessage>,
}

impl MapModel {
    /// The box of a node or a group.
    pub fn node(&self, id: &Selection) -> Option<&MapNode> {
        self.nodes.iter().find(|node| node.id == *id)
    }

    /// The edge from `from` to `to`.
    pub fn edge(&self, from: NodeId, to: NodeId) -> Option<&MapEdge> {
        self.edges.iter().find(|edge| edge.from == from && edge.to == to)
    }
}

fn edge_kind(from: NodeId, to: NodeId) -> EdgeKind {
    use NodeId::{Broker, Consumer, Controller, Producer};
    match (from, to) {
        (Producer(_), _) | (_, Producer(_)) => EdgeKind::Produce,
        (Consumer(_), _) | (_, Consumer(_)) => EdgeKind::Consumer,
        (Controller(_), Controller(_)) => EdgeKind::Quorum,
        (Controller(_), _) | (_, Controller(_)) => EdgeKind::BrokerToController,
        (Broker(_), Broker(_)) => EdgeKind::Replication,
    }
}

/// Which end sends the requests on an edge between `a` and `b` (the
/// client, the follower, the broker towards the controller).
pub fn requester_first(a: NodeId, b: NodeId) -> (NodeId, NodeId) {
    let rank = |node: NodeId| match node {
        NodeId::Producer(_) | NodeId::Consumer(_) => 0,
        NodeId::Broker(_) => 1,
        NodeId::Controller(_) => 2,
    };
    if rank(a) <= rank(b) {
        (a, b)
    } else {
        (b, a)
    }
}

/// How the map is laid out: for the width its box has on screen, drawn at
/// one SVG unit a CSS pixel, so every text is the size the map's style
/// says (12 px and up) at any width.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fit {
    /// The width of the map's box in CSS pixels.
    pub width: f64,
    /// Draw each replica of Kafka's internal topics (`__consumer_offsets`,
    /// `__transaction_state`) as its own row (the full view), rather than
    /// one folded line per broker (the beginner view).
    pub internal_topics: bool,
}

impl Fit {
    /// The wide layout the native tests and exports use, every row drawn.
    pub fn wide() -> Fit {
        Fit {
            width: WIDTH,
            internal_topics: true,
        }
    }

    /// A 390 px phone's map box.
    pub fn phone() -> Fit {
        Fit {
            width: 340.0,
            internal_topics: true,
        }
    }

    /// Whether everything goes in one column (the box is too narrow for the
    /// producers, a broker and the groups side by side).
    pub fn stacked(&self) -> bool {
        wide_brokers_w(self.width.max(MIN_WIDTH)) < MIN_BROKER_W
    }
}

fn wide_brokers_w(width: f64) -> f64 {
    width - 2.0 * MARGIN - PRODUCER_W - GROUP_W - 2.0 * LANE
}

/// Where each part of the map goes.
struct Frame {
    width: f64,
    /// The column of the quorum and the brokers.
    brokers_x: f64,
    brokers_w: f64,
    brokers_per_row: usize,
    producer_x: f64,
    producer_w: f64,
    group_x: f64,
    group_w: f64,
    /// Producers, brokers and groups one below the other, edges in a lane
    /// on the right.
    stacked: bool,
    internal_topics: bool,
}

impl Frame {
    fn of(fit: Fit, brokers: usize) -> Frame {
        let width = fit.width.max(MIN_WIDTH).floor();
        let wide = wide_brokers_w(width);
        if wide >= MIN_BROKER_W {
            let fit_per_row = ((wide + COLUMN_GAP) / (MIN_BROKER_W + COLUMN_GAP)).floor() as usize;
            let per_row = fit_per_row.clamp(1, MAX_BROKERS_PER_ROW).min(brokers.max(1));
            // Boxes no wider than they need; the columns stay centred.
            let broker_w = ((wide - COLUMN_GAP * (per_row as f64 - 1.0)) / per_row as f64).min(MAX_BROKER_W);
            let brokers_w = broker_w * per_row as f64 + COLUMN_GAP * (per_row as f64 - 1.0);
            let width = (width).min(2.0 * MARGIN + PRODUCER_W + GROUP_W + 2.0 * LANE + brokers_w);
            Frame {
                width,
                brokers_x: MARGIN + PRODUCER_W + LANE,
                brokers_w,
                brokers_per_row: per_row,
                producer_x: MARGIN,
                producer_w: PRODUCER_W,
                group_x: width - MARGIN - GROUP_W,
                group_w: GROUP_W,
                stacked: false,
                internal_topics: fit.internal_topics,
            }
        } else {
            let inner = width - 2.0 * MARGIN - NARROW_LANE;
            Frame {
                width,
                brokers_x: MARGIN,
                brokers_w: inner,
                brokers_per_row: 1,
                producer_x: MARGIN,
                producer_w: inner,
                group_x: MARGIN,
                group_w: inner,
                stacked: true,
                internal_topics: fit.internal_topics,
            }
        }
    }
}

/// Lays the view out (wide, every row drawn).
pub fn layout(view: &ClusterView) -> MapModel {
    layout_at(view, view.time_ms as f64)
}

/// Lays the view out with messages placed at `time_ms`, which may fall
/// between the whole milliseconds the simulation has reached (smooth
/// motion at slow speeds).
pub fn layout_at(view: &ClusterView, time_ms: f64) -> MapModel {
    layout_fit(view, time_ms, Fit::wide())
}

/// One broker's replica rows, user topics first; Kafka's internal topics
/// folded into one line unless the fit draws them.
fn replica_rows(
    broker: &kafkascope_engine::sim::view::BrokerView,
    scale: &BTreeMap<&str, u64>,
    frame: &Frame,
) -> (Vec<ReplicaRow>, Option<FoldedInternal>) {
    let mut rows: Vec<ReplicaRow> = broker
        .replicas
        .iter()
        .map(|replica| ReplicaRow {
            partition: replica.partition.clone(),
            short: if replica.internal {
                format!("{}-{}", internal_short(&replica.topic), replica.index)
            } else {
                replica.partition.clone()
            },
            internal: replica.internal,
            role: replica.role,
            in_sync: replica.in_isr,
            log_end_offset: replica.log_end_offset,
            high_watermark: replica.high_watermark,
            last_stable_offset: replica.last_stable_offset,
            markers: replica.marker_offsets.clone(),
            log_start_offset: replica.log_start_offset,
            cleaned_up_to: replica.cleaned_up_to,
            recovery_point: replica.recovery_point,
            scale: scale.get(replica.partition.as_str()).copied().unwrap_or(1),
            leader_epoch: replica.leader_epoch,
            rect: Rect {
                x: 0.0,
                y: 0.0,
                w: 0.0,
                h: 0.0,
            },
            name_w: 0.0,
        })
        .collect();
    kafkascope_engine::sorting::sort_by_key(&mut rows, |replica| replica.internal);
    if frame.internal_topics {
        return (rows, None);
    }
    let internal: Vec<ReplicaRow> = rows.iter().filter(|row| row.internal).cloned().collect();
    rows.retain(|row| !row.internal);
    let folded = (!internal.is_empty()).then(|| FoldedInternal {
        replicas: internal.len(),
        leads: internal.iter().filter(|row| row.role == ReplicaRole::Leader).count(),
        rect: Rect {
            x: 0.0,
            y: 0.0,
            w: 0.0,
            h: 0.0,
        },
    });
    (rows, folded)
}

/// What a row calls an internal topic's partition: `offsets-17`, `txn-3`.
fn internal_short(topic: &str) -> &'static str {
    if topic == "__transaction_state" {
        "txn"
    } else {
        "offsets"
    }
}

/// [`layout_at`] for the box the map has on screen.
pub fn layout_fit(view: &ClusterView, time_ms: f64, fit: Fit) -> MapModel {
    let frame = Frame::of(fit, view.brokers.len());
    let mut nodes = Vec::new();
    let Quorum {
        x: quorum_x,
        top: quorum_top,
        bottom: quorum_bottom,
    } = quorum_nodes(view, &frame, &mut nodes);
    let top = quorum_bottom + QUORUM_GAP;
    // Brokers in rows under the quorum, each as tall as its replica list.
    let mut scale: BTreeMap<&str, u64> = BTreeMap::new();
    for broker in &view.brokers {
        for replica in &broker.replicas {
            let entry = scale.entry(replica.partition.as_str()).or_insert(1);
            *entry = (*entry).max(replica.log_end_offset);
        }
    }
    let per_row = frame.brokers_per_row;
    let broker_w = (frame.brokers_w - COLUMN_GAP * (per_row as f64 - 1.0)) / per_row as f64;
    // Stacked, the producers come first (they write to the brokers).
    let producers_h = view.producers.len() as f64 * (PRODUCER_H + GAP);
    let mut y = if frame.stacked {
        top + producers_h + ROW_GAP - GAP
    } else {
        top
    };
    let mut row_tops = Vec::new();
    let laid: Vec<(Vec<ReplicaRow>, Option<FoldedInternal>)> = view
        .brokers
        .iter()
        .map(|broker| replica_rows(broker, &scale, &frame))
        .collect();
    for (row, rows_of) in view.brokers.chunks(per_row).zip(laid.chunks(per_row)) {
        let row_h = rows_of
            .iter()
            .map(|(rows, folded)| BROKER_HEADER + (rows.len() + usize::from(folded.is_some())) as f64 * ROW_H + 6.0)
            .fold(0.0, f64::max);
        row_tops.push(y);
        for (index, (broker, (rows, folded))) in row.iter().zip(rows_of).enumerate() {
            let rect = Rect {
                x: frame.brokers_x + index as f64 * (broker_w + COLUMN_GAP),
                y,
                w: broker_w,
                h: row_h,
            };
            nodes.push(broker_node(broker, rect, rows, folded));
        }
        y += row_h + ROW_GAP;
    }
    let bottom = y - ROW_GAP + GAP;
    // Producers down the left (stacked: above the brokers).
    for (index, producer) in view.producers.iter().enumerate() {
        let rect = Rect {
            x: frame.producer_x,
            y: top + index as f64 * (PRODUCER_H + GAP),
            w: frame.producer_w,
            h: PRODUCER_H,
        };
        nodes.push(producer_node(producer, rect));
    }
    // Consumer groups down the right (stacked: below the brokers).
    let mut groups: BTreeMap<&str, Vec<&ConsumerView>> = BTreeMap::new();
    for consumer in &view.consumers {
        groups.entry(consumer.group.as_str()).or_default().push(consumer);
    }
    let mut group_y = if frame.stacked { bottom + ROW_GAP - GAP } else { top };
    for (group, members) in groups {
        let rect = Rect {
            x: frame.group_x,
            y: group_y,
            w: frame.group_w,
            h: GROUP_HEADER + members.len() as f64 * (MEMBER_H + 4.0) + 4.0,
        };
        nodes.push(group_node(view, group, &members, rect));
        group_y += rect.h + GAP;
    }
    let height = bottom.max(group_y).max(top + producers_h) - GAP + MARGIN;
    let election_note = election_note(view, &frame, quorum_x, quorum_bottom);
    let mut model = MapModel {
        width: frame.width,
        height,
        election_note,
        election_text: election_text(view),
        nodes,
        edges: Vec::new(),
        messages: Vec::new(),
    };
    let lanes = Lanes {
        stacked: frame.stacked,
        right_lane_x: frame.width - MARGIN - NARROW_LANE / 2.0,
        producer_lane_x: frame.brokers_x - LANE / 2.0,
        group_lane_x: frame.brokers_x + frame.brokers_w + LANE / 2.0,
        column_lane_x: if per_row > 1 {
            frame.brokers_x + broker_w + COLUMN_GAP / 2.0
        } else {
            frame.brokers_x + frame.brokers_w + LANE / 4.0
        },
        row_tops,
        quorum_top,
        quorum_bottom,
        quorum_side_x: quorum_x - GAP / 2.0,
    };
    model.edges = edges(view, &model, &lanes);
    model.messages = messages(view, &model, time_ms);
    for edge in &mut model.edges {
        edge.messages = view
            .in_flight
            .iter()
            .filter(|message| requester_first(message.from, message.to) == (edge.from, edge.to))
            .count();
        edge.label = edge_label(edge);
    }
    model
}

/// Where the quorum was laid out.
struct Quorum {
    x: f64,
    top: f64,
    bottom: f64,
}

/// The KRaft quorum across the top of the broker column: its controllers'
/// boxes go into `nodes`.
fn quorum_nodes(view: &ClusterView, frame: &Frame, nodes: &mut Vec<MapNode>) -> Quorum {
    // The KRaft quorum across the top of the broker column.
    let controllers = view.controllers.len().max(1);
    // Wide, the quorum spans the map over the producers and groups (which
    // start below it), as many abreast as fit.
    let (quorum_left, quorum_room) = if frame.stacked {
        (frame.brokers_x, frame.brokers_w)
    } else {
        (MARGIN + GAP, frame.width - 2.0 * (MARGIN + GAP))
    };
    let abreast = if frame.stacked {
        1
    } else {
        (((quorum_room + GAP) / (CONTROLLER_MIN_W + GAP)).floor() as usize).clamp(1, controllers)
    };
    let controller_w = ((quorum_room - GAP * (abreast as f64 - 1.0)) / abreast as f64).min(if frame.stacked {
        frame.brokers_w
    } else {
        CONTROLLER_MAX_W
    });
    let quorum_w = controller_w * abreast as f64 + GAP * (abreast as f64 - 1.0);
    let quorum_x = if frame.stacked {
        quorum_left
    } else {
        // Over the broker column when it fits there.
        (frame.brokers_x + (frame.brokers_w - quorum_w) / 2.0).clamp(quorum_left, quorum_left + quorum_room - quorum_w)
    };
    let quorum_rows = controllers.div_ceil(abreast);
    let quorum_top = MARGIN + TOP_LANE;
    let quorum_bottom = quorum_top + quorum_rows as f64 * (CONTROLLER_H + GAP) - GAP;
    for (index, controller) in view.controllers.iter().enumerate() {
        let rect = Rect {
            x: quorum_x + (index % abreast) as f64 * (controller_w + GAP),
            y: quorum_top + (index / abreast) as f64 * (CONTROLLER_H + GAP),
            w: controller_w,
            h: CONTROLLER_H,
        };
        let state = if !controller.alive {
            "down".to_string()
        } else if controller.role == Role::Leader {
            "active".to_string()
        } else {
            controller.role.to_string()
        };
        let id = Selection::Node(NodeId::Controller(controller.id));
        nodes.push(MapNode {
            name: id.key(),
            id,
            rect,
            label: format!("{}, {state}, epoch {}", as_controller(controller.id), controller.epoch),
            body: NodeBody::Controller {
                id: controller.id,
                alive: controller.alive,
                role: state,
                epoch: controller.epoch,
                committed: controller.committed,
            },
        });
    }
    Quorum {
        x: quorum_x,
        top: quorum_top,
        bottom: quorum_bottom,
    }
}

/// A broker's box: its state, what it leads and follows, and a row per
/// replica (the name column as wide as the longest name drawn, leaving the
/// badge, a bar and the widest offsets text room).
fn broker_node(
    broker: &kafkascope_engine::sim::view::BrokerView,
    rect: Rect,
    rows: &[ReplicaRow],
    folded: &Option<FoldedInternal>,
) -> MapNode {
    let running = broker.status == ProcessStatus::Running;
    let state = if running && broker.shutting_down {
        "stopping".to_string()
    } else if running && broker.fenced {
        "fenced".to_string()
    } else {
        broker.status.to_string()
    };
    let mut replicas = rows.to_vec();
    let mut folded = folded.clone();
    // The name column: the longest drawn name, leaving the badge,
    // a bar and the widest offsets text room.
    let row_w = rect.w - 8.0;
    let widest_offsets = replicas
        .iter()
        .map(|row| row.offsets_text().chars().count())
        .max()
        .unwrap_or(3) as f64
        * MONO_CHAR_W
        + 4.0;
    let room = row_w - 4.0 - 8.0 - BADGE_W - 6.0 - MIN_BAR_W - 6.0 - widest_offsets;
    let name_chars = replicas
        .iter()
        .map(|row| row.short.chars().count())
        .max()
        .unwrap_or(1)
        .min(NAME_CHARS_MAX)
        .min(((room / MONO_CHAR_W).floor().max(3.0)) as usize);
    let name_w = name_chars as f64 * MONO_CHAR_W;
    for (row_index, replica) in replicas.iter_mut().enumerate() {
        replica.short = fit_text(&replica.short, name_w + 0.5, MONO_CHAR_W);
        replica.name_w = name_w;
        replica.rect = Rect {
            x: rect.x + 4.0,
            y: rect.y + BROKER_HEADER + row_index as f64 * ROW_H,
            w: row_w,
            h: ROW_H,
        };
    }
    if let Some(folded) = folded.as_mut() {
        folded.rect = Rect {
            x: rect.x + 4.0,
            y: rect.y + BROKER_HEADER + replicas.len() as f64 * ROW_H,
            w: row_w,
            h: ROW_H,
        };
    }
    let leads = broker
        .replicas
        .iter()
        .filter(|replica| replica.role == ReplicaRole::Leader)
        .count();
    let follows = broker
        .replicas
        .iter()
        .filter(|replica| replica.role == ReplicaRole::Follower)
        .count();
    let id = Selection::Node(NodeId::Broker(broker.id));
    MapNode {
        name: id.key(),
        id,
        rect,
        label: format!(
            "{}, {state}, leads {leads} and follows {follows} partitions",
            as_broker(broker.id)
        ),
        body: NodeBody::Broker {
            id: broker.id,
            state,
            leads,
            follows,
            replicas,
            folded_internal: folded,
        },
    }
}

/// A producer's box.
fn producer_node(producer: &ProducerView, rect: Rect) -> MapNode {
    let id = Selection::Node(NodeId::Producer(producer.id));
    MapNode {
        name: id.key(),
        id,
        rect,
        label: format!(
            "{} writing {}, acks={}, {} buffered, {} in flight",
            as_producer(producer.id),
            producer.topic,
            producer.acks,
            count_of(producer.buffered_records as u64, "record", "records"),
            count_of(producer.in_flight as u64, "request", "requests")
        ),
        body: NodeBody::Producer(producer.clone()),
    }
}

/// A group's box with a row per member.
fn group_node(view: &ClusterView, group: &str, members: &[&ConsumerView], rect: Rect) -> MapNode {
    // Lag as `kafka-consumer-groups` reports it: the leader's high
    // watermark minus the committed offset (`-` before the first commit).
    let lag = |partition: &str| crate::cluster_model::kafka_lag(view, group, partition);
    let shown = |lag: Option<u64>| lag.map_or("-".to_string(), |lag| lag.to_string());
    let member_rows: Vec<MemberRow> = members
        .iter()
        .enumerate()
        .map(|(index, consumer)| MemberRow {
            name: NodeId::Consumer(consumer.id).to_string(),
            id: consumer.id,
            member_id: consumer.member_id.clone(),
            phase: consumer.phase,
            partitions: consumer
                .partitions
                .iter()
                .map(|owned| {
                    format!(
                        "{} @{} lag {}",
                        owned.partition,
                        owned.committed.map_or("-".to_string(), |offset| offset.to_string()),
                        shown(lag(&owned.partition))
                    )
                })
                .collect(),
            total_lag: consumer
                .partitions
                .iter()
                .filter_map(|owned| lag(&owned.partition))
                .sum(),
            throttled: consumer.throttled_until.is_some(),
            rect: Rect {
                x: rect.x + 4.0,
                y: rect.y + GROUP_HEADER + index as f64 * (MEMBER_H + 4.0),
                w: rect.w - 8.0,
                h: MEMBER_H,
            },
        })
        .collect();
    let active: Vec<&&ConsumerView> = members
        .iter()
        .filter(|member| member.phase != ConsumerPhase::Stopped)
        .collect();
    let modern = members
        .iter()
        .any(|member| member.group_protocol == kafkascope_engine::sim::config::GroupProtocol::Consumer);
    let cooperative = members.iter().any(|member| member.cooperative);
    let rebalancing = !modern
        && active.iter().any(|member| {
            matches!(
                member.phase,
                ConsumerPhase::Joining | ConsumerPhase::Syncing | ConsumerPhase::FindingCoordinator
            )
        });
    let mut offsets: Vec<(String, Option<u64>, u64)> = members
        .iter()
        .flat_map(|member| member.partitions.iter())
        .map(|owned| {
            (
                owned.partition.clone(),
                owned.committed,
                lag(&owned.partition).unwrap_or(0),
            )
        })
        .collect();
    kafkascope_engine::sorting::sort(&mut offsets);
    let id = Selection::Group(group.to_string());
    MapNode {
        name: id.key(),
        id,
        rect,
        label: format!(
            "consumer group {group}, {}{}",
            count_of(active.len() as u64, "member", "members"),
            match (rebalancing, cooperative) {
                (true, true) => ", rebalancing cooperatively (members still reading)",
                (true, false) => ", rebalancing (members paused)",
                _ => "",
            }
        ),
        body: NodeBody::Group {
            name: group.to_string(),
            generation: active.iter().map(|member| member.generation).max().unwrap_or(0),
            modern,
            cooperative,
            rebalancing,
            coordinator: active.iter().find_map(|member| member.coordinator),
            members: member_rows,
            offsets,
        },
    }
}

/// Under the quorum: the last leader election and why, cut to the width.
/// The last leader election in one sentence (and the fenced brokers).
fn election_text(view: &ClusterView) -> Option<String> {
    let fenced: Vec<String> = view
        .brokers
        .iter()
        .filter(|broker| broker.fenced)
        .map(|broker| NodeId::Broker(broker.id).to_string())
        .collect();
    let fenced = if fenced.is_empty() {
        String::new()
    } else {
        format!("fenced: {} · ", fenced.join(", "))
    };
    view.highlights.last_leader_election.as_ref().map(|election| {
        format!(
            "{fenced}last election: {} → {} (epoch {}{}) at {} ms: {}",
            election.partition,
            election
                .leader
                .map_or("no leader".to_string(), |leader| as_broker(leader).to_string()),
            election.leader_epoch,
            if election.unclean { ", UNCLEAN" } else { "" },
            election.time_ms,
            election.reason
        )
    })
}

/// The election's line under the quorum, cut to the map's width. A stacked
/// (phone) map has no room for it there: the page shows the whole sentence
/// beside the map instead ([`MapModel::election_text`]).
fn election_note(view: &ClusterView, frame: &Frame, quorum_x: f64, quorum_bottom: f64) -> Option<(Point, String)> {
    if frame.stacked {
        return None;
    }
    let x = quorum_x.min(frame.brokers_x);
    election_text(view).map(|text| {
        (
            Point {
                x,
                y: quorum_bottom + 18.0,
            },
            fit_text(&text, frame.width - x - MARGIN, TEXT_CHAR_W),
        )
    })
}

/// Where a node (or a member row inside a group) is.
fn rect_of(model: &MapModel, node_id: NodeId) -> Option<Rect> {
    model.nodes.iter().find_map(|node| {
        if node.id == Selection::Node(node_id) {
            return Some(node.rect);
        }
        match (&node.body, node_id) {
            (NodeBody::Group { members, .. }, NodeId::Consumer(consumer)) => members
                .iter()
                .find(|member| member.id == consumer)
                .map(|member| member.rect),
            _ => None,
        }
    })
}

/// The gaps between boxes that edges run in, so that no edge crosses a box
/// (only its two ends touch theirs).
struct Lanes {
    stacked: bool,
    /// One column: the lane right of the boxes.
    right_lane_x: f64,
    /// Between the producers and the brokers.
    producer_lane_x: f64,
    /// Between the brokers and the groups.
    group_lane_x: f64,
    /// Where edges go from one row of brokers to another: between the first
    /// two columns, or beside a single column.
    column_lane_x: f64,
    /// The top of each row of brokers (the lane above it is `ROW_GAP`, or
    /// `QUORUM_GAP` over the first).
    row_tops: Vec<f64>,
    quorum_top: f64,
    quorum_bottom: f64,
    /// Left of the quorum: how edges reach a controller above its last row.
    quorum_side_x: f64,
}

impl Lanes {
    /// The lane under the bottom of a controller at `bottom`: the gap to
    /// the next row of the quorum, or the lane under the quorum.
    fn under_controller(&self, bottom: f64, spread: f64) -> f64 {
        if bottom + 1.0 >= self.quorum_bottom {
            self.quorum_bottom + (QUORUM_GAP * 0.6).min(30.0) + spread * 0.5
        } else {
            bottom + GAP / 2.0 + spread * 0.15
        }
    }

    /// The lane over the top of a controller at `top`.
    fn over_controller(&self, top: f64, spread: f64) -> f64 {
        if top <= self.quorum_top + 1.0 {
            self.quorum_top - TOP_LANE / 2.0 + spread * 0.4
        } else {
            top - GAP / 2.0 + spread * 0.15
        }
    }

    /// The horizontal lane just above the broker row that starts at `top`.
    fn above(&self, top: f64, spread: f64) -> f64 {
        let first = self.row_tops.first().copied().unwrap_or(top);
        if (top - first).abs() < 0.5 {
            // Under the election note.
            top - QUORUM_GAP * 0.4 + spread
        } else {
            top - ROW_GAP / 2.0 + spread
        }
    }

    /// The route of an edge from `a` to `b` (their boxes), in the lanes.
    fn route(&self, kind: EdgeKind, from: NodeId, a: Rect, b: Rect, spread: f64) -> Vec<Point> {
        let p = |x: f64, y: f64| Point { x, y };
        if self.stacked {
            // Out of the right side, along the lane, into the right side.
            let ay = a.y + (a.h / 2.0).min(16.0) + spread * 0.5;
            let by = b.y + (b.h / 2.0).min(16.0) - spread * 0.5;
            let x = self.right_lane_x + spread;
            return vec![p(a.x + a.w, ay), p(x, ay), p(x, by), p(b.x + b.w, by)];
        }
        match kind {
            EdgeKind::Produce | EdgeKind::Consumer => {
                // Clients sit beside the broker column: out of their side
                // into their lane, then to the broker's near side (first or
                // last column) or down into its top through the lane above
                // its row.
                let producer = matches!(from, NodeId::Producer(_));
                let (side_x, lane_x) = if producer {
                    (a.x + a.w, self.producer_lane_x + spread)
                } else {
                    (a.x, self.group_lane_x + spread)
                };
                let ay = a.y + (a.h / 2.0).min(20.0);
                let near = if producer {
                    (b.x - (self.producer_lane_x + LANE / 2.0)).abs() < 1.0
                } else {
                    (b.x + b.w - (self.group_lane_x - LANE / 2.0)).abs() < 1.0
                };
                if near {
                    let by = b.y + 14.0 + spread * 0.6;
                    let bx = if producer { b.x } else { b.x + b.w };
                    vec![p(side_x, ay), p(lane_x, ay), p(lane_x, by), p(bx, by)]
                } else {
                    let lane_y = self.above(b.y, spread * 0.5);
                    let bx = if producer {
                        b.x + 24.0 + spread
                    } else {
                        b.x + b.w - 24.0 + spread
                    };
                    vec![
                        p(side_x, ay),
                        p(lane_x, ay),
                        p(lane_x, lane_y),
                        p(bx, lane_y),
                        p(bx, b.y),
                    ]
                }
            }
            EdgeKind::Replication | EdgeKind::BrokerToController => {
                // Up out of the broker's top into the lane above its row;
                // along it (through the column lane to another row's lane
                // when the other end is on another row); down into the
                // other broker's top, or up into the controller's bottom.
                let to_controller = kind == EdgeKind::BrokerToController;
                let ax = a.x + a.w / 2.0 + if to_controller { a.w / 4.0 } else { -a.w / 6.0 } + spread;
                let a_lane = self.above(a.y, spread * 0.5);
                let (b_lane, bx, by) = if to_controller {
                    (
                        self.under_controller(b.y + b.h, spread),
                        b.x + b.w / 2.0 + spread * 2.0,
                        b.y + b.h,
                    )
                } else {
                    (self.above(b.y, -spread * 0.5), b.x + b.w / 2.0 + spread, b.y)
                };
                let under_quorum = self.under_controller(self.quorum_bottom, spread);
                let mut route = vec![p(ax, a.y), p(ax, a_lane)];
                if to_controller && b.y + b.h + 1.0 < self.quorum_bottom {
                    // A controller above the quorum's last row: under the
                    // quorum to its left side, up, and along the gap under
                    // the controller's row.
                    if (a_lane - under_quorum).abs() >= 12.0 {
                        let cx = self.column_lane_x + spread;
                        route.extend([p(cx, a_lane), p(cx, under_quorum)]);
                    }
                    let side = self.quorum_side_x + spread * 0.2;
                    let last = route.last().copied().unwrap_or(p(ax, a_lane));
                    route.extend([p(side, last.y), p(side, b_lane), p(bx, b_lane), p(bx, by)]);
                } else if (a_lane - b_lane).abs() < 12.0 || (!to_controller && (a.y - b.y).abs() < 0.5) {
                    route.extend([p(bx, a_lane), p(bx, by)]);
                } else {
                    let cx = self.column_lane_x + spread;
                    route.extend([p(cx, a_lane), p(cx, b_lane), p(bx, b_lane), p(bx, by)]);
                }
                route
            }
            EdgeKind::Quorum => {
                // Over the top of the quorum row; between rows of a quorum
                // on more than one, by its left side.
                let ax = a.x + a.w / 2.0 + spread;
                let bx = b.x + b.w / 2.0 - spread;
                let a_lane = self.over_controller(a.y, spread);
                if (a.y - b.y).abs() < 0.5 {
                    vec![p(ax, a.y), p(ax, a_lane), p(bx, a_lane), p(bx, b.y)]
                } else {
                    let b_lane = self.over_controller(b.y, spread);
                    let side = self.quorum_side_x + spread * 0.2;
                    vec![
                        p(ax, a.y),
                        p(ax, a_lane),
                        p(side, a_lane),
                        p(side, b_lane),
                        p(bx, b_lane),
                        p(bx, b.y),
                    ]
                }
            }
        }
    }
}

fn edges(view: &ClusterView, model: &MapModel, lanes: &Lanes) -> Vec<MapEdge> {
    let mut pairs: BTreeMap<(NodeId, NodeId), ()> = BTreeMap::new();
    let leaders: BTreeMap<&str, u32> = view
        .partitions
        .iter()
        .filter_map(|partition| partition.leader.map(|leader| (partition.partition.as_str(), leader)))
        .gather();
    for producer in &view.producers {
        for partition in view
            .partitions
            .iter()
            .filter(|partition| partition.topic == producer.topic)
        {
            if let Some(leader) = partition.leader {
                pairs.insert((NodeId::Producer(producer.id), NodeId::Broker(leader)), ());
            }
        }
    }
    for broker in view
        .brokers
        .iter()
        .filter(|broker| broker.status != ProcessStatus::Dead)
    {
        for replica in broker
            .replicas
            .iter()
            .filter(|replica| replica.role == ReplicaRole::Follower)
        {
            if let Some(&leader) = leaders.get(replica.partition.as_str()) {
                if leader != broker.id {
                    pairs.insert((NodeId::Broker(broker.id), NodeId::Broker(leader)), ());
                }
            }
        }
    }
    let active = view
        .controllers
        .iter()
        .filter(|controller| controller.alive && controller.role == Role::Leader)
        .max_by_key(|controller| controller.epoch);
    if let Some(active) = active {
        let active = NodeId::Controller(active.id);
        for broker in view
            .brokers
            .iter()
            .filter(|broker| broker.status != ProcessStatus::Dead)
        {
            pairs.insert((NodeId::Broker(broker.id), active), ());
        }
        for other in view.controllers.iter().map(|other| NodeId::Controller(other.id)) {
            if other != active {
                pairs.insert((other, active), ());
            }
        }
    }
    for consumer in view
        .consumers
        .iter()
        .filter(|consumer| consumer.phase != ConsumerPhase::Stopped)
    {
        let node = NodeId::Consumer(consumer.id);
        if let Some(coordinator) = consumer.coordinator {
            pairs.insert((node, NodeId::Broker(coordinator)), ());
        }
        for owned in &consumer.partitions {
            if let Some(&leader) = leaders.get(owned.partition.as_str()) {
                pairs.insert((node, NodeId::Broker(leader)), ());
            }
        }
    }
    for message in &view.in_flight {
        pairs.insert(requester_first(message.from, message.to), ());
    }
    // Edges sharing a lane are spread a few units apart.
    let mut in_kind: BTreeMap<EdgeKind, usize> = BTreeMap::new();
    pairs
        .into_keys()
        .filter_map(|(from, to)| {
            let a = rect_of(model, from)?;
            let b = rect_of(model, to)?;
            let kind = edge_kind(from, to);
            let index = in_kind.entry(kind).or_insert(0);
            let spread = (*index % 7) as f64 * 3.0 - 9.0;
            *index += 1;
            Some(MapEdge {
                key: Selection::Edge { from, to }.key(),
                from,
                to,
                kind,
                points: lanes.route(kind, from, a, b, spread),
                messages: 0,
                label: String::new(),
            })
        })
        .collect()
}

fn messages(view: &ClusterView, model: &MapModel, time_ms: f64) -> Vec<MapMessage> {
    let edges: BTreeMap<(NodeId, NodeId), &MapEdge> =
        model.edges.iter().map(|edge| ((edge.from, edge.to), edge)).gather();
    view.in_flight
        .iter()
        .filter_map(|message| {
            let (from, to) = requester_first(message.from, message.to);
            let edge = edges.get(&(from, to))?;
            let span = message.arrives_ms.saturating_sub(message.sent_ms).max(1) as f64;
            let progress = ((time_ms - message.sent_ms as f64) / span).clamp(0.0, 1.0);
            let response = message.from != from;
            Some(MapMessage {
                at: edge.at(if response { 1.0 - progress } else { progress }),
                name: message.name,
                response,
            })
        })
        .collect()
}

/// The protocol an edge carries, in Kafka's request names.
pub fn edge_protocol(kind: EdgeKind) -> &'static str {
    match kind {
        EdgeKind::Produce => "Metadata → MetadataResponse; InitProducerId → InitProducerIdResponse (idempotent producers); Produce → ProduceResponse (one request per leader, a batch per partition)",
        EdgeKind::Replication => "Fetch → FetchResponse (the follower pulls from the leader)",
        EdgeKind::BrokerToController => {
            "Fetch → FetchResponse of __cluster_metadata (the broker, an observer, pulls the metadata log); BrokerRegistration, BrokerHeartbeat → BrokerHeartbeatResponse, AlterPartition → AlterPartitionResponse"
        }
        EdgeKind::Quorum => "Fetch → FetchResponse of __cluster_metadata (the follower pulls the metadata log); Vote → VoteResponse; BeginQuorumEpoch (KRaft, KIP-595)",
        EdgeKind::Consumer => {
            "FindCoordinator, JoinGroup, SyncGroup, Heartbeat, OffsetFetch, OffsetCommit (to the coordinator); ListOffsets, Fetch (to leaders)"
        }
    }
}

/// What the requests on an edge do, and what follows if it breaks.
pub fn edge_effect(kind: EdgeKind) -> (&'static str, &'static str) {
    match kind {
        EdgeKind::Produce => (
            "The producer learns the leaders (and, when idempotent, gets a producer id first), then sends each leader one request with a batch for each partition it leads, up to max.in.flight.requests.per.connection requests at a time; the leader appends each batch and answers once for all of them, by its acks setting.",
            "If the leader is gone, requests fail (NETWORK_EXCEPTION, NOT_LEADER_OR_FOLLOWER); the producer refreshes metadata and retries until delivery.timeout.ms.",
        ),
        EdgeKind::Replication => (
            "The follower asks for records from its log end; the leader answers with them and its high watermark, and learns how far the follower got, which moves the high watermark.",
            "A follower that stops fetching falls out of the ISR after replica.lag.time.max.ms; acks=all writes then wait only for the smaller ISR, or fail below min.insync.replicas.",
        ),
        EdgeKind::BrokerToController => (
            "The broker fetches the metadata log from the active controller and applies what is committed (it is an observer of the quorum); it heartbeats to keep its session; leaders ask the controller to change an ISR.",
            "Without heartbeats for broker.session.timeout.ms the controller fences the broker and elects new leaders for its partitions from their ISRs.",
        ),
        EdgeKind::Quorum => (
            "Controllers elect an active controller by vote; the others fetch its metadata log, and a record is committed once a majority of controllers hold it.",
            "If the active controller is cut off, the others time out, vote in a new epoch, and the metadata committed so far survives.",
        ),
        EdgeKind::Consumer => (
            "The member finds its group's coordinator, joins, gets its partitions, heartbeats and commits offsets there; it fetches records from each partition's leader up to the high watermark.",
            "If the coordinator is lost the member looks for it again; a member silent for session.timeout.ms is removed and the group rebalances.",
        ),
    }
}

fn edge_label(edge: &MapEdge) -> String {
    let name = match edge.kind {
        EdgeKind::Produce => "produce path",
        EdgeKind::Replication => "replication fetch",
        EdgeKind::BrokerToController => "broker heartbeats and metadata",
        EdgeKind::Quorum => "KRaft quorum",
        EdgeKind::Consumer => "consumer requests",
    };
    format!(
        "{name}: {} to {}, {} message{} in flight",
        edge.from,
        edge.to,
        edge.messages,
        if edge.messages == 1 { "" } else { "s" }
    )
}

/// The messages on an edge now, as lines (`Produce producer-0 → broker-1: ...`).
pub fn messages_on(view: &ClusterView, edge: &MapEdge) -> Vec<String> {
    view.in_flight
        .iter()
        .filter(|message| requester_first(message.from, message.to) == (edge.from, edge.to))
        .map(|message: &MessageView| {
            format!(
                "{} → {}: {} (arrives at {} ms)",
                message.from, message.to, message.summary, message.arrives_ms
            )
        })
        .collect()
}

/// The inspector's content for a selection.
#[derive(Debug, Clone, PartialEq)]
pub struct Inspection {
    pub title: String,
    /// Why this exists, one paragraph.
    pub why: String,
    /// Its protocol state now.
    pub facts: Vec<(String, String)>,
    /// Lines listing messages in flight, if an edge.
    pub messages: Vec<String>,
    /// For a replica: its files on disk (name, size, what it holds).
    pub files: Vec<(String, String, String)>,
    /// For a replica: how a read finds one offset on disk, step by step.
    pub lookup: Vec<String>,
}

/// A replica's segment files as `ls` would list them in its partition's
/// directory: for each segment its `.log`, `.index` and `.timeindex`.
fn replica_files(replica: &kafkascope_engine::sim::view::ReplicaView) -> Vec<(String, String, String)> {
    let mut files = Vec::new();
    if replica.segment_count > replica.segments.len() {
        files.push((
            format!("… {} older segments", replica.segment_count - replica.segments.len()),
            String::new(),
            String::new(),
        ));
    }
    for segment in &replica.segments {
        let records = if segment.next_offset > segment.base_offset {
            format!("offsets {}–{}", segment.base_offset, segment.next_offset - 1)
        } else {
            "empty".to_string()
        };
        let role = if segment.active {
            ", active: appends go here"
        } else {
            ""
        };
        files.push((
            format!("{}.log", segment.file_stem),
            format!("{} B", segment.size_bytes),
            format!("records, {records}{role}"),
        ));
        // The active segment's index files are preallocated to
        // segment.index.bytes on disk and trimmed to their entries when it
        // rolls; the size shown is what the entries take.
        let preallocated = if segment.active {
            " (preallocated on disk until the segment rolls)"
        } else {
            ""
        };
        for (suffix, entries, entry_bytes, maps) in [
            (
                ".index",
                segment.offset_index_entries,
                8,
                "offset → position, one per index.interval.bytes",
            ),
            (".timeindex", segment.time_index_entries, 12, "timestamp → offset"),
        ] {
            files.push((
                format!("{}{suffix}", segment.file_stem),
                format!("{} B", entries * entry_bytes),
                format!("{entries} entries: {maps}{preallocated}"),
            ));
        }
    }
    files
}

/// How a fetch finds `lookup.target` on disk, one sentence per step.
fn lookup_steps(lookup: kafkascope_engine::storage::Lookup) -> Vec<String> {
    let (entry_offset, entry_position) = lookup.index_entry;
    vec![
        format!(
            "Segment: the last segment whose base offset is at most {} is {:020}.log.",
            lookup.target, lookup.segment_base_offset
        ),
        if entry_position == 0 && entry_offset == lookup.segment_base_offset {
            "Index: no entry at or below it yet, so the read starts at the file's beginning (position 0).".to_string()
        } else {
            format!("Index: the last entry at or below it says offset {entry_offset} is in the batch at byte {entry_position}.")
        },
        format!(
            "Scan: reading forward from there, batch {} of the scan (base offset {}, at byte {}) holds offset {}.",
            lookup.batches_scanned, lookup.batch_base_offset, lookup.batch_position, lookup.target
        ),
    ]
}

fn ms(value: Option<u64>) -> String {
    value.map_or("never".to_string(), |ms| format!("{ms} ms"))
}

/// What the inspector shows for a node, a replica, a member, a group or
/// an edge.
pub fn inspect(view: &ClusterView, model: &MapModel, selected: &Selection) -> Option<Inspection> {
    match selected {
        Selection::Edge { from, to } => inspect_edge(view, model.edge(*from, *to)?),
        Selection::Replica { broker, partition } => inspect_replica(view, model, *broker, partition),
        Selection::Node(NodeId::Consumer(consumer)) => inspect_member(view, *consumer),
        Selection::Node(_) | Selection::Group(_) => inspect_node(view, model.node(selected)?),
    }
}

fn inspect_edge(view: &ClusterView, edge: &MapEdge) -> Option<Inspection> {
    {
        let (effect, consequence) = edge_effect(edge.kind);
        return Some(Inspection {
            title: format!("{} → {}", edge.from, edge.to),
            why: effect.to_string(),
            facts: vec![
                ("Protocol".into(), edge_protocol(edge.kind).into()),
                (
                    "Direction".into(),
                    format!("requests {} → {}, responses back", edge.from, edge.to),
                ),
                ("If it breaks".into(), consequence.into()),
                ("In flight".into(), edge.messages.to_string()),
            ],
            messages: messages_on(view, edge),
            files: Vec::new(),
            lookup: Vec::new(),
        });
    }
}

fn inspect_replica(view: &ClusterView, model: &MapModel, broker: u32, partition: &str) -> Option<Inspection> {
    {
        let node = model.node(&Selection::Node(NodeId::Broker(broker)))?;
        let NodeBody::Broker { id, replicas, .. } = &node.body else {
            return None;
        };
        let replica = replicas.iter().find(|replica| replica.partition == partition)?;
        let registration = view
            .partitions
            .iter()
            .find(|candidate| candidate.partition == partition)?;
        // Fetch times change on every fetch, so they stay out of the
        // drawn rows and are read here.
        let tracked = view
            .brokers
            .iter()
            .find(|candidate| candidate.id == *id)
            .and_then(|candidate| candidate.replicas.iter().find(|replica| replica.partition == partition));
        let broker_down = view
            .brokers
            .iter()
            .any(|candidate| candidate.id == *id && candidate.status == ProcessStatus::Dead);
        let ids = |list: &[u32]| list.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
        return Some(Inspection {
            title: format!("{partition} on {broker_id}", broker_id = as_broker(id)),
            why: "A replica is one broker's copy of a partition's log. The leader takes writes; followers fetch from it. A replica in the ISR is caught up, so the high watermark (what consumers may read and acks=all waits for) counts it.".into(),
            facts: vec![
                ("Role".into(), replica.role.to_string()),
                ("In sync".into(), match (replica.in_sync, broker_down) {
                    (true, false) => "yes (in the ISR)".into(),
                    // The ISR is the controller's: a dead broker's replica
                    // stays in it until the controller fences the broker
                    // (KRaft's broker.session.timeout.ms after its last
                    // heartbeat, BrokerHeartbeatManager), then leaves it.
                    (true, true) => "still in the ISR: its broker is down, but the controller keeps it there until it fences the broker (broker.session.timeout.ms after its last heartbeat)".into(),
                    (false, true) => "no (its broker is down)".into(),
                    (false, false) => "no (out of sync)".into(),
                }),
                ("Log end offset".into(), replica.log_end_offset.to_string()),
                ("High watermark".into(), replica.high_watermark.to_string()),
                ("Last stable offset".into(), match tracked {
                    Some(view) if view.last_stable_offset < view.high_watermark => format!(
                        "{} (a transaction is open or its marker is not replicated yet: read_committed consumers stop here)",
                        view.last_stable_offset
                    ),
                    _ => "= high watermark (no open transaction)".into(),
                }),
                ("Leader epoch".into(), replica.leader_epoch.map_or("-".into(), |epoch| epoch.to_string())),
                ("Leader".into(), registration.leader.map_or("none".into(), |leader| format!("{broker_leader}", broker_leader = as_broker(leader)))),
                ("ISR".into(), ids(&registration.isr)),
                ("ELR".into(), if registration.elr.is_empty() { "none".into() } else { format!("{} (left the ISR below min.insync.replicas; still eligible to lead)", ids(&registration.elr)) }),
                ("Leader recovery".into(), if registration.recovering { "RECOVERING: elected uncleanly; its leader has not reported recovery yet (KIP-704)".into() } else { "RECOVERED".into() }),
                ("Last fetch".into(), if replica.role == ReplicaRole::Leader { "(leader)".into() } else { ms(tracked.and_then(|replica| replica.last_fetch_ms)) }),
                ("Last caught up".into(), if replica.role == ReplicaRole::Leader { "(leader)".into() } else { ms(tracked.and_then(|replica| replica.last_caught_up_ms)) }),
                ("Log start offset".into(), tracked.map_or("0".into(), |replica| {
                    if replica.log_start_offset == 0 { "0 (nothing deleted yet)".into() } else { format!("{} (retention deleted everything below it)", replica.log_start_offset) }
                })),
                ("Compaction".into(), tracked.map_or("-".into(), |replica| match replica.cleaned_up_to {
                    Some(cleaned) => format!("clean below offset {cleaned} (the latest record of each key); dirty above"),
                    None => "not cleaned (cleanup.policy=delete, or nothing cleanable yet)".into(),
                })),
                ("On disk".into(), tracked.map_or("-".into(), |replica| format!(
                    "{} bytes in {} segment{}", replica.size_bytes, replica.segment_count, if replica.segment_count == 1 { "" } else { "s" }
                ))),
                ("Flushed".into(), tracked.map_or("-".into(), |replica| flushed_text(replica.recovery_point, replica.log_end_offset))),
            ],
            messages: Vec::new(),
            files: tracked.map_or_else(Vec::new, replica_files),
            lookup: tracked.and_then(|replica| replica.lookup.map(lookup_steps)).unwrap_or_default(),
        });
    }
}

/// What a replica's recovery point means for its records.
pub fn flushed_text(recovery_point: u64, log_end_offset: u64) -> String {
    if log_end_offset == 0 {
        return "nothing written yet".to_string();
    }
    if recovery_point >= log_end_offset {
        return format!("everything (offsets below {log_end_offset}): a power loss loses nothing here");
    }
    format!(
        "below offset {recovery_point} (the recovery point); offsets {recovery_point} to {} are in the page cache only: a crash keeps them, a power loss loses them. Kafka flushes when flush.messages or flush.ms say so (by default never), when a segment rolls and at a clean shutdown, and otherwise leaves durability to replication",
        log_end_offset - 1
    )
}

fn inspect_node(view: &ClusterView, node: &MapNode) -> Option<Inspection> {
    {
        return Some(match &node.body {
            NodeBody::Producer(producer) => Inspection {
                title: node.name.clone(),
                why: "The producer turns records into batches per partition (the key's murmur2 hash picks the partition; keyless records stick to one partition per batch), waits up to linger.ms to fill a batch, and sends each leader one request with a batch for each partition it leads. An idempotent producer first gets a producer id (InitProducerId), so leaders can drop duplicates and keep each partition in order.".into(),
                facts: vec![
                    ("Topic".into(), producer.topic.clone()),
                    ("acks".into(), producer.acks.to_string()),
                    ("linger.ms".into(), producer.linger_ms.to_string()),
                    ("enable.idempotence".into(), producer.idempotent.to_string()),
                    ("transactional.id".into(), match &producer.transaction {
                        None => "none (not transactional)".into(),
                        Some(txn) => format!(
                            "{}: {}{}{}; {} committed, {} aborted. {}",
                            txn.transactional_id,
                            txn.phase,
                            if txn.partitions.is_empty() { String::new() } else { format!(" on partitions {:?}", txn.partitions) },
                            match txn.ending { Some(true) => ", committing", Some(false) => ", aborting", None => "" },
                            txn.committed,
                            txn.aborted,
                            if txn.transaction_v2 {
                                "Runs transaction version 2 (KIP-890): each EndTxn bumps its epoch, and partition leaders add partitions to the transaction."
                            } else {
                                "Runs the transaction version 1 protocol: it adds partitions itself (AddPartitionsToTxn) and keeps its epoch across transactions."
                            }
                        ),
                    }),
                    ("Buffered".into(), format!("{} in {} ({})", count_of(producer.buffered_records as u64, "record", "records"), count_of(producer.buffered_batches as u64, "batch", "batches"), count_of(producer.buffered_bytes, "byte", "bytes"))),
                    ("Waiting for metadata".into(), producer.waiting.to_string()),
                    ("Producer id".into(), match (producer.idempotent, producer.producer_id) {
                        (false, _) => "none (not idempotent)".into(),
                        (true, None) => "waiting for InitProducerId".into(),
                        (true, Some(id)) => format!("{id}, epoch {}", producer.producer_epoch),
                    }),
                    ("Requests in flight".into(), format!("{} (at most {} per broker)", producer.in_flight, producer.max_in_flight_per_connection)),
                    ("Sent / acknowledged / failed".into(), format!("{} / {} / {}", producer.sent, producer.acknowledged, producer.failed)),
                    ("Quota".into(), match producer.throttled_until {
                        Some(until) => format!("throttled until {until} ms: a broker measured it over its producer_byte_rate and it waits (KIP-219)"),
                        None => "not throttled".into(),
                    }),
                    ("Last error".into(), producer.last_error.as_ref().map_or("none".into(), |error| format!("{} on {} at {} ms{}", error.error, error.partition, error.time_ms, if error.will_retry { " (retrying)" } else { "" }))),
                ],
                messages: Vec::new(),
            files: Vec::new(),
            lookup: Vec::new(),
            },
            NodeBody::Controller { id, alive, role, epoch, committed } => Inspection {
                title: node.name.clone(),
                why: "A KRaft controller keeps the cluster's metadata (brokers, partitions, leaders, ISRs) in a replicated log. One is active: it fences silent brokers, elects partition leaders from the ISR and commits ISR changes once a majority of controllers hold them.".into(),
                facts: vec![
                    ("State".into(), if *alive { role.clone() } else { "down".into() }),
                    ("Epoch".into(), epoch.to_string()),
                    ("Committed metadata log entries".into(), committed.to_string()),
                    ("Finalized features (kafka-features describe)".into(), format!(
                        "transaction.version={}: {}",
                        view.features.transaction_version,
                        if view.features.transaction_version >= 2 {
                            "an epoch bump at every EndTxn (commit or abort), partitions added by their leaders (KIP-890 part 2)"
                        } else {
                            "producers add partitions themselves and keep their epoch between transactions"
                        }
                    )),
                    ("Fetching from it".into(), fetchers_fact(view, *id)),
                    ("Fenced brokers".into(), {
                        let fenced: Vec<String> = view.brokers.iter().filter(|broker| broker.fenced).map(|broker| as_broker(broker.id).to_string()).collect();
                        if fenced.is_empty() { "none".into() } else { fenced.join(", ") }
                    }),
                    ("Last leader election".into(), view.highlights.last_leader_election.as_ref().map_or("none yet".into(), |election| format!(
                        "{} → {} (epoch {}) at {} ms{}: {}",
                        election.partition,
                        election.leader.map_or("none".into(), |leader| as_broker(leader).to_string()),
                        election.leader_epoch,
                        election.time_ms,
                        if election.unclean { ", unclean" } else { "" },
                        election.reason
                    ))),
                    ("Last controller election".into(), view.highlights.last_controller_election.map_or("none".into(), |(time, controller, epoch)| format!(
                        "{controller_controller} won epoch {epoch} at {time} ms{}",
                        view.highlights.last_candidacy_reason.as_ref().map_or(String::new(), |reason| format!(" ({reason})")), controller_controller = as_controller(controller)))),
                ],
                messages: Vec::new(),
            files: Vec::new(),
            lookup: Vec::new(),
            },
            NodeBody::Broker { id, state, leads, follows, replicas, .. } => Inspection {
                title: node.name.clone(),
                why: "A broker stores partition replicas. For each partition it either leads (takes produce requests and serves fetches) or follows (fetches from the leader). It heartbeats to the active controller, which fences it if the heartbeats stop.".into(),
                facts: vec![
                    ("State".into(), state.clone()),
                    ("Leads".into(), format!("{leads} partitions")),
                    ("Follows".into(), format!("{follows} partitions")),
                    ("Metadata log".into(), view.brokers.iter().find(|broker| broker.id == *id).map_or("-".into(), |broker| {
                        let metadata = &broker.metadata;
                        let held = format!(
                            "{}, {} of them committed; it has applied {}",
                            count_of(metadata.log_end_offset as u64, "entry", "entries"),
                            metadata.high_watermark,
                            metadata.applied_entries.map_or("none yet (not caught up with its registration)".to_string(), |applied| count_of(applied as u64, "entry", "entries"))
                        );
                        if broker.status == ProcessStatus::Dead {
                            format!("not fetching: the broker is down. Its copy of __cluster_metadata holds {held}")
                        } else {
                            format!("an observer fetching __cluster_metadata from {}: it holds {held}", as_controller(metadata.controller))
                        }
                    })),
                    ("Out of sync here".into(), {
                        let out: Vec<&str> = replicas.iter().filter(|replica| !replica.in_sync).map(|replica| replica.partition.as_str()).collect();
                        if out.is_empty() { "none".into() } else { out.join(", ") }
                    }),
                    ("Coordinates".into(), {
                        let groups: std::collections::BTreeSet<&str> = view.consumers.iter().filter(|consumer| consumer.coordinator == Some(*id)).map(|consumer| consumer.group.as_str()).gather();
                        if groups.is_empty() { "no group".into() } else { groups.into_iter().collect::<Vec<_>>().join(", ") }
                    }),
                ],
                messages: Vec::new(),
            files: Vec::new(),
            lookup: Vec::new(),
            },
            NodeBody::Group { name, generation, modern, cooperative, rebalancing, coordinator, members, offsets } => Inspection {
                title: format!("group {name}"),
                why: if *modern {
                    "A consumer group shares a topic's partitions among its members. This one speaks the consumer protocol (group.protocol=consumer, KIP-848): members only heartbeat; the coordinator (the leader of the group's __consumer_offsets partition) computes the assignment itself and each member moves to it on its own, giving up partitions before others get them, so nobody stops. It also stores the committed offsets.".into()
                } else {
                    "A consumer group shares a topic's partitions among its members: each partition has one owner per generation. The coordinator (the leader of the group's __consumer_offsets partition) runs the rebalance and stores the committed offsets.".into()
                },
                facts: vec![
                    if *modern { ("Member epoch (highest)".into(), generation.to_string()) } else { ("Generation".into(), generation.to_string()) },
                    ("State".into(), if *modern { "each member reconciles on its own (no stop)".into() } else if *rebalancing && *cooperative { "rebalancing cooperatively (members keep reading what they own; only moving partitions wait)".into() } else if *rebalancing { "rebalancing (members paused)".into() } else { "stable".into() }),
                    ("Coordinator".into(), coordinator.map_or("unknown".into(), |broker| format!("{broker_broker}", broker_broker = as_broker(broker)))),
                    ("Members".into(), members.iter().filter(|member| member.phase != ConsumerPhase::Stopped).count().to_string()),
                    ("Committed offsets".into(), offsets.iter().map(|(partition, committed, lag)| format!("{partition} @{} lag {lag}", committed.map_or("-".into(), |offset| offset.to_string()))).collect::<Vec<_>>().join("; ")),
                    ("Last rebalance".into(), view.highlights.rebalances.get(name).map_or("none yet".into(), |(time, generation, reason)| format!("{} {generation} at {time} ms: {reason}", if *modern { "target assignment at epoch" } else { "generation" }))),
                ],
                messages: Vec::new(),
            files: Vec::new(),
            lookup: Vec::new(),
            },
        });
    }
}

fn inspect_member(view: &ClusterView, id: u32) -> Option<Inspection> {
    let consumer = view.consumers.iter().find(|consumer| consumer.id == id)?;
    Some(Inspection {
        title: NodeId::Consumer(id).to_string(),
        why: "A consumer is one member of its group. It reads only the partitions the group assigned it in this generation, from each partition's leader and never past the high watermark, and commits how far it got.".into(),
        facts: vec![
            ("Group".into(), consumer.group.clone()),
            ("Phase".into(), consumer.phase.to_string()),
            ("Member id".into(), consumer.member_id.clone().unwrap_or_else(|| "-".into())),
            if consumer.group_protocol == kafkascope_engine::sim::config::GroupProtocol::Consumer {
                ("Member epoch".into(), consumer.generation.to_string())
            } else {
                ("Generation".into(), consumer.generation.to_string())
            },
            ("Partitions".into(), if consumer.partitions.is_empty() { "none (idle)".into() } else {
                consumer.partitions.iter().map(|owned| format!("{} position {} (next offset it reads) · committed {} · lag {} (high watermark − committed)", owned.partition, owned.position.map_or("-".into(), |offset| offset.to_string()), owned.committed.map_or("-".into(), |offset| offset.to_string()), crate::cluster_model::kafka_lag(view, &consumer.group, &owned.partition).map_or("-".to_string(), |lag| lag.to_string()))).collect::<Vec<_>>().join("; ")
            }),
            ("Records read".into(), consumer.records_read.to_string()),
            ("auto.offset.reset".into(), match consumer.auto_offset_reset {
                OffsetReset::None => "none: a position it cannot find makes poll() throw".into(),
                reset => format!("{reset}: where it goes when its group has no offset or its position is gone"),
            }),
            ("Quota".into(), match consumer.throttled_until {
                Some(until) => format!("fetches throttled until {until} ms: a broker measured client.id {} over its consumer_byte_rate, answered empty and muted the connection (KIP-219)", consumer.client_id),
                None => format!("not throttled (client.id {})", consumer.client_id),
            }),
        ],
        messages: Vec::new(),
        files: Vec::new(),
        lookup: Vec::new(),
    })
}

/// Who fetches the metadata log from the active controller `id`: its
/// voters and its observers (brokers), with how far each got.
fn fetchers_fact(view: &ClusterView, id: u32) -> String {
    let Some(controller) = view.controllers.iter().find(|controller| controller.id == id) else {
        return "-".into();
    };
    if controller.fetchers.is_empty() {
        return match controller.leader {
            Some(leader) if leader != id && controller.alive => {
                format!(
                    "nobody: it follows {controller_leader}, fetching from it",
                    controller_leader = as_controller(leader)
                )
            }
            _ => "nobody (it is not the active controller)".into(),
        };
    }
    let describe = |voter: bool| {
        controller
            .fetchers
            .iter()
            .filter(|fetcher| fetcher.voter == voter)
            .map(|fetcher| {
                format!(
                    "{} at offset {} (fetched {} ms ago)",
                    fetcher.node,
                    fetcher.log_end_offset,
                    view.time_ms.saturating_sub(fetcher.last_fetch_ms)
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!("voters: {}; observers: {}", describe(true), describe(false))
}

/// The map's SVG as the browser serialises it (`outerHTML`, HTML rules)
/// made a well-formed XML file: HTML writes a non-breaking space as
/// `&nbsp;`, an entity XML does not define, so a name holding one made
/// the downloaded SVG unreadable. `&`, `<`, `>` and quotes are already
/// written as XML's own entities.
pub fn svg_file(outer_html: &str) -> String {
    let body = outer_html.replace("&nbsp;", "&#160;");
    if body.starts_with("<svg") && !body.contains("xmlns=") {
        body.replacen("<svg", "<svg xmlns=\"http://www.w3.org/2000/svg\"", 1)
    } else {
        body
    }
}

/// The topology as a Mermaid flowchart.
pub fn mermaid(model: &MapModel) -> String {
    use crate::sequence_model::{mermaid_id, mermaid_label as label};
    let id = |name: &dyn std::fmt::Display| mermaid_id(&name.to_string());
    let mut out = String::from("flowchart LR\n");
    let mut quorum = String::new();
    let mut brokers = String::new();
    let mut clients = String::new();
    for node in &model.nodes {
        match &node.body {
            NodeBody::Controller { role, epoch, .. } => {
                quorum += &format!(
                    "    {}[\"{}\"]\n",
                    id(&node.name),
                    label(&format!("{} ({role}, epoch {epoch})", node.name))
                );
            }
            NodeBody::Broker {
                state, leads, follows, ..
            } => {
                brokers += &format!(
                    "    {}[\"{}\"]\n",
                    id(&node.name),
                    label(&format!("{} ({state}, leads {leads}, follows {follows})", node.name))
                );
            }
            NodeBody::Producer(producer) => {
                clients += &format!(
                    "  {}([\"{}\"])\n",
                    id(&node.name),
                    label(&format!("{} → {} (acks={})", node.name, producer.topic, producer.acks))
                );
            }
            NodeBody::Group { name, members, .. } => {
                clients += &format!(
                    "  subgraph {}[\"{}\"]\n",
                    id(&node.name),
                    label(&format!("group {name}"))
                );
                for member in members {
                    clients += &format!(
                        "    {}([\"{}\"])\n",
                        id(&member.name),
                        label(&format!("{} ({})", member.name, member.phase))
                    );
                }
                clients += "  end\n";
            }
        }
    }
    out += &format!("  subgraph quorum[\"KRaft controller quorum\"]\n{quorum}  end\n");
    out += &format!("  subgraph brokers[\"brokers\"]\n{brokers}  end\n");
    out += &clients;
    for edge in &model.edges {
        let label = match edge.kind {
            EdgeKind::Produce => "Produce",
            EdgeKind::Replication => "Fetch",
            EdgeKind::BrokerToController => "Heartbeat",
            EdgeKind::Quorum => "KRaft",
            EdgeKind::Consumer => "group / Fetch",
        };
        out += &format!("  {} -->|{label}| {}\n", id(&edge.from), id(&edge.to));
    }
    out
}

#[cfg(test)]
mod tests {
    use kafkascope_engine::sim::config::{Input, ScheduledInput};
    use kafkascope_engine::sim::Simulation;

    use super::*;

    fn assert_no_two_boxes_overlap(model: &MapModel) {
        for (index, a) in model.nodes.iter().enumerate() {
            for b in &model.nodes[index + 1..] {
                let apart = a.rect.x + a.rect.w <= b.rect.x
                    || b.rect.x + b.rect.w <= a.rect.x
                    || a.rect.y + a.rect.h <= b.rect.y
                    || b.rect.y + b.rect.h <= a.rect.y;
                assert!(apart, "{} overlaps {}", a.name, b.name);
            }
        }
    }

    fn sel(key: &str) -> Selection {
        Selection::parse(key).unwrap_or_else(|| panic!("{key} is a selection"))
    }
    use crate::cluster_model::{bench_config, default_config, DEFAULT_SEED};

    fn settled() -> Simulation {
        let mut simulation = Simulation::new(default_config(), DEFAULT_SEED).expect("valid");
        simulation.schedule(ScheduledInput {
            at_ms: 0,
            input: Input::Produce {
                producer: 0,
                key: Some("user-42".into()),
                count: 5,
                bytes: 100,
            },
        });
        simulation.run_until(10_000);
        simulation
    }

    #[test]
    fn every_broker_controller_producer_and_group_has_a_box_inside_the_map() {
        let view = settled().view();
        let model = layout(&view);
        for name in [
            "controller-1",
            "controller-2",
            "controller-3",
            "broker-1",
            "broker-2",
            "broker-3",
            "producer-0",
            "group-billing",
            "group-search",
        ] {
            let node = model.node(&sel(name)).unwrap_or_else(|| panic!("{name} missing"));
            assert!(
                node.rect.x >= 0.0 && node.rect.x + node.rect.w <= WIDTH,
                "{name} {:?}",
                node.rect
            );
            assert!(node.rect.y + node.rect.h <= model.height, "{name}");
        }
        // No two top-level boxes overlap.
        assert_no_two_boxes_overlap(&model);
    }

    #[test]
    fn a_phone_gets_one_column_with_every_box_inside_and_none_overlapping() {
        for config in [default_config(), bench_config()] {
            let mut simulation = Simulation::new(config, DEFAULT_SEED).expect("valid");
            simulation.run_until(3_000);
            let fit = Fit::phone();
            assert!(fit.stacked());
            let model = layout_fit(&simulation.view(), 3_000.0, fit);
            assert_eq!(model.width, fit.width);
            for node in &model.nodes {
                assert!(
                    node.rect.x >= 0.0
                        && node.rect.x + node.rect.w <= fit.width
                        && node.rect.y + node.rect.h <= model.height,
                    "{} {:?}",
                    node.name,
                    node.rect
                );
            }
            assert_no_two_boxes_overlap(&model);
            // Top to bottom: the quorum, producers, brokers, groups.
            let top_of = |kind: fn(&NodeBody) -> bool| {
                model
                    .nodes
                    .iter()
                    .filter(|node| kind(&node.body))
                    .map(|node| node.rect.y)
                    .fold(f64::INFINITY, f64::min)
            };
            let bottom_of = |kind: fn(&NodeBody) -> bool| {
                model
                    .nodes
                    .iter()
                    .filter(|node| kind(&node.body))
                    .map(|node| node.rect.y + node.rect.h)
                    .fold(0.0, f64::max)
            };
            let controller = |body: &NodeBody| matches!(body, NodeBody::Controller { .. });
            let producer = |body: &NodeBody| matches!(body, NodeBody::Producer(_));
            let broker = |body: &NodeBody| matches!(body, NodeBody::Broker { .. });
            let group = |body: &NodeBody| matches!(body, NodeBody::Group { .. });
            assert!(bottom_of(controller) < top_of(producer));
            assert!(bottom_of(producer) < top_of(broker));
            assert!(bottom_of(broker) < top_of(group));
            assert!(model
                .election_note
                .as_ref()
                .is_none_or(|(at, note)| at.x + note.chars().count() as f64 * TEXT_CHAR_W <= fit.width));
        }
    }

    #[test]
    fn replica_rows_show_leader_and_isr_badges_and_the_hw_within_the_log() {
        let view = settled().view();
        let model = layout(&view);
        let NodeBody::Broker { replicas, .. } = &model.node(&sel("broker-1")).expect("broker-1").body else {
            panic!("not a broker")
        };
        assert!(replicas.iter().any(|replica| replica.badge() == "L ISR"));
        assert!(replicas.iter().any(|replica| replica.badge() == "F ISR"));
        for replica in replicas {
            assert!(replica.high_watermark <= replica.log_end_offset && replica.log_end_offset <= replica.scale);
        }
        // The keyed records all went to one partition and are replicated.
        let written: Vec<&ReplicaRow> = replicas
            .iter()
            .filter(|replica| replica.partition.starts_with("orders") && replica.log_end_offset == 5)
            .collect();
        assert_eq!(written.len(), 1, "{replicas:?}");
    }

    #[test]
    fn edges_join_producers_followers_brokers_controllers_and_consumers() {
        let view = settled().view();
        let model = layout(&view);
        let kinds: std::collections::BTreeSet<EdgeKind> = model.edges.iter().map(|edge| edge.kind).collect();
        assert_eq!(kinds.len(), 5, "{kinds:?}");
        for edge in &model.edges {
            assert!(
                model.node(&Selection::Node(edge.from)).is_some() || matches!(edge.from, NodeId::Consumer(_)),
                "{}",
                edge.key
            );
            assert!(!edge.label.is_empty());
        }
        let replication = model
            .edges
            .iter()
            .find(|edge| edge.kind == EdgeKind::Replication)
            .expect("a fetch edge");
        let inspection = inspect(&view, &model, &sel(&replication.key)).expect("an inspection");
        assert!(inspection
            .facts
            .iter()
            .any(|(name, value)| name == "Protocol" && value.contains("Fetch")));
    }

    #[test]
    fn messages_in_flight_sit_on_their_edges() {
        let mut simulation = settled();
        // Stop right after a send so something is in flight.
        let mut found = false;
        for _ in 0..200 {
            simulation.step();
            let view = simulation.view();
            if !view.in_flight.is_empty() {
                let model = layout(&view);
                assert!(!model.messages.is_empty());
                for message in &model.messages {
                    assert!(
                        message.at.x >= 0.0
                            && message.at.x <= WIDTH
                            && message.at.y >= 0.0
                            && message.at.y <= model.height
                    );
                }
                assert!(model.edges.iter().map(|edge| edge.messages).sum::<usize>() >= model.messages.len());
                found = true;
                break;
            }
        }
        assert!(found);
    }

    #[test]
    fn the_inspector_explains_a_broker_a_replica_a_producer_a_group_and_a_member() {
        let view = settled().view();
        let model = layout(&view);
        for selected in [
            "broker-1",
            "broker-2/orders-0",
            "producer-0",
            "group-billing",
            "consumer-0",
            "controller-1",
        ] {
            let inspection = inspect(&view, &model, &sel(selected)).unwrap_or_else(|| panic!("{selected}"));
            assert!(!inspection.why.is_empty() && !inspection.facts.is_empty(), "{selected}");
        }
        let replica = inspect(&view, &model, &sel("broker-2/orders-0")).expect("replica");
        for field in [
            "Log end offset",
            "High watermark",
            "Leader epoch",
            "ISR",
            "Last fetch",
            "Last caught up",
        ] {
            assert!(replica.facts.iter().any(|(name, _)| name == field), "{field}");
        }
        assert!(inspect(&view, &model, &sel("broker-99")).is_none());
    }

    #[test]
    fn a_dead_broker_is_drawn_dead_then_fenced_out_and_the_election_is_explained() {
        let mut simulation = settled();
        simulation.schedule(ScheduledInput {
            at_ms: simulation.now(),
            input: Input::KillBroker { broker: 1 },
        });
        simulation.run_until(simulation.now() + 15_000);
        let view = simulation.view();
        let model = layout(&view);
        let NodeBody::Broker { state, .. } = &model.node(&sel("broker-1")).expect("broker-1").body else {
            panic!()
        };
        assert_eq!(state, "dead");
        assert!(view
            .highlights
            .last_leader_election
            .as_ref()
            .is_some_and(|election| election.leader != Some(1)));
        let controller = model
            .nodes
            .iter()
            .find(|node| matches!(&node.body, NodeBody::Controller { role, .. } if role == "active"))
            .expect("an active controller");
        let (_, note) = model
            .election_note
            .as_ref()
            .expect("the election shows under the quorum");
        assert!(
            note.contains("last election") && note.contains("broker-1 was fenced"),
            "{note}"
        );
        let inspection = inspect(&view, &model, &controller.id).expect("inspection");
        let fenced = inspection
            .facts
            .iter()
            .find(|(name, _)| name == "Fenced brokers")
            .expect("fenced");
        assert_eq!(fenced.1, "broker-1");
        // On a phone the sentence is whole, beside the map, not cut short.
        let phone = layout_fit(&view, view.time_ms as f64, Fit::phone());
        assert_eq!(phone.election_note, None);
        let whole = phone.election_text.as_deref().expect("the election is told");
        assert!(whole.contains("broker-1 was fenced") && !whole.contains('…'), "{whole}");
        assert!(note.ends_with('…') || whole.contains(note.as_str()), "{note} / {whole}");
    }

    #[test]
    fn the_mermaid_export_names_every_node_and_edge() {
        let model = layout(&settled().view());
        let text = mermaid(&model);
        assert!(text.starts_with("flowchart LR\n"));
        for node in &model.nodes {
            assert!(text.contains(&node.name.replace('-', "_")), "{}", node.name);
        }
        assert_eq!(text.matches("-->|").count(), model.edges.len());
    }

    /// A group id is any string in Kafka; one written to close a label
    /// and add a `click … href` statement stays inside its label.
    #[test]
    fn a_name_cannot_add_statements_to_the_mermaid_export() {
        let mut config = default_config();
        let hostile = "g\"]\nclick broker_1 href \"javascript:alert(1)\"\n%% #x";
        for consumer in &mut config.consumers {
            consumer.group = hostile.to_string();
        }
        let mut simulation = Simulation::new(config, DEFAULT_SEED).expect("valid");
        simulation.run_until(3_000);
        let text = mermaid(&layout(&simulation.view()));
        assert!(
            text.contains("group g#quot;] click broker_1 href #quot;javascript"),
            "{text}"
        );
        for line in text.lines() {
            let statement = line.trim_start();
            assert!(
                !statement.starts_with("click") && !statement.starts_with("%%"),
                "{line}"
            );
            assert_eq!(line.matches('"').count() % 2, 0, "{line}");
        }
    }

    #[test]
    fn the_svg_file_is_xml_even_with_a_non_breaking_space() {
        let file = svg_file("<svg class=\"map\"><text>a&nbsp;b &amp; c</text></svg>");
        assert_eq!(
            file,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"map\"><text>a&#160;b &amp; c</text></svg>"
        );
        let already = svg_file("<svg xmlns=\"http://www.w3.org/2000/svg\"></svg>");
        assert_eq!(already.matches("xmlns=").count(), 1);
    }

    #[test]
    fn offsets_fit_their_replica_row_at_nine_brokers_and_any_size() {
        let mut config = bench_config();
        config.brokers = 9;
        let mut simulation = Simulation::new(config, DEFAULT_SEED).expect("valid");
        simulation.run_until(2_000);
        let model = layout(&simulation.view());
        assert_eq!(
            model
                .nodes
                .iter()
                .filter(|node| matches!(node.body, NodeBody::Broker { .. }))
                .count(),
            9
        );
        let rows: Vec<&ReplicaRow> = model
            .nodes
            .iter()
            .filter_map(|node| match &node.body {
                NodeBody::Broker { replicas, .. } => Some(replicas),
                _ => None,
            })
            .flatten()
            .collect();
        assert!(rows.len() >= 9);
        for row in rows {
            for (hw, leo) in [
                (0, 0),
                (9_999, 9_999),
                (123_456, 123_999),
                (4_500_000, 4_600_000),
                (u64::MAX / 2, u64::MAX / 2),
            ] {
                let row = ReplicaRow {
                    high_watermark: hw,
                    log_end_offset: leo,
                    ..row.clone()
                };
                let (badge_x, bar_x, bar_w, text_x) = row.columns();
                let text_w = row.offsets_text().chars().count() as f64 * MONO_CHAR_W;
                assert!(
                    row.rect.x + 4.0 + row.short.chars().count() as f64 * MONO_CHAR_W <= badge_x,
                    "{} runs into its badge",
                    row.short
                );
                assert!(badge_x + BADGE_W < bar_x, "the badge runs into the bar");
                assert!(
                    text_x + text_w <= row.rect.x + row.rect.w,
                    "{} overflows {:?}",
                    row.offsets_text(),
                    row.rect
                );
                assert!(bar_x + bar_w < text_x, "the bar runs into {}", row.offsets_text());
                assert!(bar_w >= 24.0, "the bar is too short for {}", row.offsets_text());
            }
        }
        let row = |hw, leo| ReplicaRow {
            high_watermark: hw,
            log_end_offset: leo,
            ..model
                .nodes
                .iter()
                .find_map(|node| match &node.body {
                    NodeBody::Broker { replicas, .. } => replicas.first().cloned(),
                    _ => None,
                })
                .expect("a row")
        };
        assert_eq!(row(1_234, 9_999).offsets_text(), "1234/9999");
        assert_eq!(row(12_345, 4_690_000).offsets_text(), "12k/4.6M");
        assert_eq!(row(999_999, 460_000_000).offsets_text(), "999k/460M");
    }

    #[test]
    fn the_bench_cluster_lays_out_in_two_rows_of_brokers() {
        let mut simulation = Simulation::new(bench_config(), DEFAULT_SEED).expect("valid");
        simulation.run_until(5_000);
        let model = layout(&simulation.view());
        let first = model.node(&sel("broker-1")).expect("b1").rect;
        let fourth = model.node(&sel("broker-4")).expect("b4").rect;
        assert!(fourth.y > first.y + first.h);
    }

    /// Whether the straight stretch `a`–`b` passes through the inside of `rect`.
    fn crosses(a: Point, b: Point, rect: Rect) -> bool {
        let inset = 1.0;
        let (x0, x1) = (rect.x + inset, rect.x + rect.w - inset);
        let (y0, y1) = (rect.y + inset, rect.y + rect.h - inset);
        // Sample the stretch (every route is made of short straight runs).
        let steps = 200;
        (0..=steps).any(|step| {
            let t = f64::from(step) / f64::from(steps);
            let (x, y) = (a.x + (b.x - a.x) * t, a.y + (b.y - a.y) * t);
            x > x0 && x < x1 && y > y0 && y < y1
        })
    }

    /// The boxes an edge may touch: its two ends (a member's group too).
    fn ends_of(model: &MapModel, edge: &MapEdge) -> Vec<String> {
        let mut ends = Vec::new();
        for node in &model.nodes {
            let end = [edge.from, edge.to].iter().any(|id| {
                node.id == Selection::Node(*id)
                    || matches!((&node.body, id), (NodeBody::Group { members, .. }, NodeId::Consumer(consumer)) if members.iter().any(|member| member.id == *consumer))
            });
            if end {
                ends.push(node.name.clone());
            }
        }
        ends
    }

    #[test]
    fn at_every_size_boxes_fit_the_width_and_edges_run_between_boxes_never_through_one() {
        for brokers in [1, 2, 3, 5, 9] {
            for partitions in [1, 6, 24] {
                let mut config = default_config();
                config.brokers = brokers;
                // Quorums of three, five and seven (the most a run may have).
                config.controllers = match brokers {
                    9 => 7,
                    5 => 5,
                    _ => 3,
                };
                config.topics[0].partitions = partitions;
                config.topics[0].replication_factor = brokers.min(3);
                config.topics[0].min_insync_replicas = 1;
                let mut simulation = Simulation::new(config, DEFAULT_SEED).expect("valid");
                simulation.schedule(ScheduledInput {
                    at_ms: 0,
                    input: Input::Produce {
                        producer: 0,
                        key: Some("user-42".into()),
                        count: 5,
                        bytes: 100,
                    },
                });
                simulation.run_until(6_000);
                let view = simulation.view();
                for width in [280.0, 300.0, 340.0, 700.0, 760.0, 882.0, 1000.0, 1280.0, 1600.0] {
                    for internal_topics in [false, true] {
                        let fit = Fit { width, internal_topics };
                        let model = layout_fit(&view, 6_000.0, fit);
                        let case = format!(
                            "{brokers} brokers, {partitions} partitions, {width} px, internal {internal_topics}"
                        );
                        assert!(model.width <= width.max(MIN_WIDTH), "{case}: {} wide", model.width);
                        for node in &model.nodes {
                            let r = node.rect;
                            assert!(
                                r.x >= 0.0 && r.x + r.w <= model.width && r.y >= 0.0 && r.y + r.h <= model.height,
                                "{case}: {} at {r:?} outside {}×{}",
                                node.name,
                                model.width,
                                model.height
                            );
                            if let NodeBody::Broker { replicas, .. } = &node.body {
                                let least = if fit.stacked() {
                                    MIN_WIDTH - 2.0 * MARGIN - NARROW_LANE
                                } else {
                                    MIN_BROKER_W
                                };
                                assert!(r.w >= least, "{case}: {} is {} wide", node.name, r.w);
                                for row in replicas {
                                    let (badge_x, bar_x, bar_w, text_x) = row.columns();
                                    assert!(
                                        row.rect.x + 4.0 + row.short.chars().count() as f64 * MONO_CHAR_W
                                            <= badge_x + 0.5,
                                        "{case}: {}",
                                        row.short
                                    );
                                    assert!(
                                        bar_x + bar_w <= text_x && bar_w >= MIN_BAR_W,
                                        "{case}: {}",
                                        row.partition
                                    );
                                    assert!(
                                        text_x + row.offsets_text().chars().count() as f64 * MONO_CHAR_W
                                            <= row.rect.x + row.rect.w,
                                        "{case}"
                                    );
                                }
                            }
                        }
                        assert_no_two_boxes_overlap(&model);
                        for edge in &model.edges {
                            let ends = ends_of(&model, edge);
                            for node in model.nodes.iter().filter(|node| !ends.contains(&node.name)) {
                                for pair in edge.points.windows(2) {
                                    assert!(
                                        !crosses(pair[0], pair[1], node.rect),
                                        "{case}: {} runs through {} ({:?})",
                                        edge.key,
                                        node.name,
                                        edge.points
                                    );
                                }
                            }
                            assert!(
                                edge.points.iter().all(|point| point.x >= 0.0
                                    && point.x <= model.width
                                    && point.y >= 0.0
                                    && point.y <= model.height),
                                "{case}: {} leaves the map",
                                edge.key
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_beginner_view_folds_internal_topics_into_one_line_per_broker() {
        let view = settled().view();
        let folded = layout_fit(
            &view,
            0.0,
            Fit {
                width: WIDTH,
                internal_topics: false,
            },
        );
        let full = layout_fit(&view, 0.0, Fit::wide());
        for (node, whole) in folded.nodes.iter().zip(&full.nodes) {
            if let (
                NodeBody::Broker {
                    replicas,
                    folded_internal,
                    ..
                },
                NodeBody::Broker { replicas: all, .. },
            ) = (&node.body, &whole.body)
            {
                assert!(replicas.iter().all(|row| !row.internal));
                let internal = all.iter().filter(|row| row.internal).count();
                assert!(internal > 0);
                let line = folded_internal.as_ref().expect("a folded line");
                assert_eq!(line.replicas, internal);
                assert_eq!(
                    line.leads,
                    all.iter()
                        .filter(|row| row.internal && row.role == ReplicaRole::Leader)
                        .count()
                );
                assert_eq!(replicas.len() + internal, all.len());
            }
        }
    }
}
