//! The sandbox's plain data: the preloaded examples, what a run reports,
//! and how a value given to `show(value)` is drawn. No Yew, no DOM, so the
//! native tests check it.

use kafkascope_engine::sorting::Gather;
use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// A preloaded snippet. Its first comment line is its title.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Example {
    /// The file name without `.js`, used as a stable id.
    pub id: &'static str,
    /// The snippet's source.
    pub code: &'static str,
}

impl Example {
    /// The first line without its `// `.
    pub fn title(&self) -> &'static str {
        self.code
            .lines()
            .next()
            .and_then(|line| line.strip_prefix("// "))
            .unwrap_or(self.id)
    }
}

macro_rules! examples {
    ($($id:literal),* $(,)?) => {
        &[$(Example { id: $id, code: include_str!(concat!("../../../web/sandbox-examples/", $id, ".js")) }),*]
    };
}

/// The examples, in the order the picker lists them.
pub const EXAMPLES: &[Example] = examples![
    "1-same-key-sticks",
    "2-null-keys-spread",
    "3-two-members-split-three",
    "4-third-member-idles",
    "5-compare-assignors",
    "6-eager-vs-cooperative",
    "7-acks-and-min-isr",
    "8-scale-case",
    "9-lost-response-idempotence",
    "9b-where-the-commit-goes",
    "9c-read-committed",
    "9d-exactly-once",
    "9e-dead-letter-queue",
    "9f-retention",
    "9g-compaction",
    "9h-quota",
    "9i-fetch-quota",
    "9j-add-partitions",
];

/// One entry of the API reference shown under the sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ReferenceEntry {
    pub name: String,
    pub signature: String,
    pub doc: String,
    /// A snippet the "Try it" button loads; the Node tests run it.
    pub example: String,
    /// `show` and `partitionMap` exist only in the sandbox.
    #[serde(default)]
    pub helper: bool,
}

#[derive(Deserialize)]
struct Reference {
    entries: Vec<ReferenceEntry>,
}

/// The API reference (`web/api-reference.json`, checked against the
/// TypeScript definitions by the Node tests).
pub fn api_reference() -> Vec<ReferenceEntry> {
    serde_json::from_str::<Reference>(include_str!("../../../web/api-reference.json"))
        .map(|reference| reference.entries)
        .unwrap_or_default()
}

/// The time limit when the learner has not chosen one: enough for the
/// longest example (a few minutes of a cluster) on a slow laptop, short
/// enough that an endless loop is stopped while the learner still waits.
pub const DEFAULT_TIMEOUT_MS: u32 = 5_000;

/// Reads the time-limit box: whole milliseconds from 100 to 60 000.
pub fn parse_timeout(text: &str) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(ms) if (100..=60_000).contains(&ms) => Ok(ms),
        _ => Err("The time limit must be a whole number of milliseconds from 100 to 60000.".to_string()),
    }
}

/// One console line.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct LogLine {
    /// `log`, `warn` or `error`.
    pub kind: String,
    pub text: String,
}

/// A value passed to `show`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Shown {
    pub title: Option<String>,
    pub value: Value,
}

/// Why a run stopped early.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SnippetError {
    /// `SyntaxError`, `Timeout`, `Error`, ...
    pub name: String,
    pub message: String,
    /// Line and column in the snippet, when known.
    pub line: Option<u32>,
    pub column: Option<u32>,
}

impl SnippetError {
    /// The message with its position, as the console shows it.
    pub fn describe(&self) -> String {
        let position = match (self.line, self.column) {
            (Some(line), Some(column)) => format!(" (line {line}, column {column})"),
            (Some(line), None) => format!(" (line {line})"),
            _ => String::new(),
        };
        let prefix = if self.message.starts_with(&self.name) || self.name == "Timeout" {
            String::new()
        } else {
            format!("{}: ", self.name)
        };
        format!("{prefix}{}{position}", self.message)
    }
}

/// What one run of a snippet produced.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunResult {
    pub logs: Vec<LogLine>,
    pub shows: Vec<Shown>,
    pub error: Option<SnippetError>,
    pub timed_out: bool,
    /// More output was printed than the console keeps.
    pub capped: bool,
    /// Wall-clock milliseconds, for the status line only.
    pub ms: f64,
}

/// How a shown value is drawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Diagram {
    /// Member to partitions (an assignment, or a report holding one).
    Assignment(Vec<(String, Vec<String>)>),
    /// Per partition, the keys placed there (`partitionMap`).
    PartitionMap(Vec<(u32, Vec<String>)>),
    /// Per partition, a count (an array of numbers).
    Counts(Vec<(u32, u64)>),
    /// Anything else, as indented JSON.
    Json(String),
}

/// The most one drawing shows: characters of text (a deeply nested value
/// pretty-prints to some 65 times its size) and chips, rows or bars (a
/// million characters of JSON can ask for 300,000 chips).
pub const DRAWING_CHARS: usize = 100_000;
/// See [`DRAWING_CHARS`].
pub const DRAWING_ITEMS: usize = 1_000;
/// The most all of a run's drawings show together.
pub const OUTPUT_CHARS: usize = 300_000;
/// See [`OUTPUT_CHARS`].
pub const OUTPUT_ITEMS: usize = 3_000;

/// A shown value as the panel draws it, and what the drawing leaves out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drawing {
    pub title: Option<String>,
    pub diagram: Diagram,
    /// A sentence saying what was left out, if anything was.
    pub truncated: Option<String>,
}

/// A run's drawings within the bounds above, computed once when the run
/// ends, and how many shown values were not drawn at all: a flood of
/// output costs the page no more than the bounds, however it is built.
pub fn drawings(shows: &[Shown]) -> (Vec<Drawing>, usize) {
    let (mut chars, mut items) = (0, 0);
    let mut drawn = Vec::new();
    for (index, shown) in shows.iter().enumerate() {
        if chars >= OUTPUT_CHARS || items >= OUTPUT_ITEMS {
            return (drawn, shows.len() - index);
        }
        let room = (
            DRAWING_CHARS.min(OUTPUT_CHARS - chars),
            DRAWING_ITEMS.min(OUTPUT_ITEMS - items),
        );
        let (diagram, truncated, size) = bounded(&shown.value, room);
        chars += size.0;
        items += size.1;
        drawn.push(Drawing {
            title: shown.title.as_ref().map(|title| clip(title, 200)),
            diagram,
            truncated,
        });
    }
    (drawn, 0)
}

/// The drawing of `value` cut to `room` (characters, items), what was cut,
/// and the size drawn.
fn bounded(value: &Value, room: (usize, usize)) -> (Diagram, Option<String>, (usize, usize)) {
    let (chars, items) = room;
    match diagram_within(value, chars) {
        Diagram::Json(text) => {
            let size = (text.len(), 1);
            let cut = (text.len() >= chars).then(|| {
                format!("… output truncated: this value is longer than the sandbox draws ({chars} characters)")
            });
            (Diagram::Json(text), cut, size)
        }
        Diagram::Assignment(rows) => {
            let (rows, left, size) = cut_rows(rows, room);
            let cut = (left > 0).then(|| {
                format!("… and {left} more not drawn (the sandbox draws up to {items} chips and rows of a value)")
            });
            (Diagram::Assignment(rows), cut, size)
        }
        Diagram::PartitionMap(rows) => {
            let (rows, left, size) = cut_rows(rows, room);
            let cut = (left > 0).then(|| {
                format!("… and {left} more not drawn (the sandbox draws up to {items} chips and rows of a value)")
            });
            (Diagram::PartitionMap(rows), cut, size)
        }
        Diagram::Counts(mut counts) => {
            let left = counts.len().saturating_sub(items);
            counts.truncate(items);
            let cut = (left > 0).then(|| format!("… and {left} more partitions not drawn"));
            let size = (counts.len() * 8, counts.len());
            (Diagram::Counts(counts), cut, size)
        }
    }
}

/// Rows of chips cut so that rows and chips together stay within `room`;
/// returns the rows kept, how many rows and chips were left out, and the
/// size kept. Each chip's text is cut to 200 characters.
fn cut_rows<K: Clone>(
    rows: Vec<(K, Vec<String>)>,
    room: (usize, usize),
) -> (Vec<(K, Vec<String>)>, usize, (usize, usize)) {
    let (chars, items) = room;
    let total: usize = rows.iter().map(|(_, chips)| chips.len() + 1).sum();
    let (mut used_chars, mut used_items) = (0, 0);
    let mut kept = Vec::new();
    'rows: for (key, chips) in rows {
        if used_items >= items || used_chars >= chars {
            break;
        }
        used_items += 1;
        used_chars += 8;
        let mut row = Vec::new();
        for chip in chips {
            if used_items >= items || used_chars >= chars {
                kept.push((key, row));
                break 'rows;
            }
            let chip = clip(&chip, 200);
            used_items += 1;
            used_chars += chip.len();
            row.push(chip);
        }
        kept.push((key, row));
    }
    (kept, total.saturating_sub(used_items), (used_chars, used_items))
}

/// `text` cut to at most `max` characters, with "…" when cut.
fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

/// Indented JSON of `value`, stopped once it reaches `max` bytes: the
/// printer stops there too, so a huge value costs no more than `max`.
fn pretty_within(value: &Value, max: usize) -> String {
    struct Bounded {
        bytes: Vec<u8>,
        max: usize,
    }
    impl std::io::Write for Bounded {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            let room = self.max - self.bytes.len();
            if bytes.len() > room {
                self.bytes.extend_from_slice(&bytes[..room]);
                return Err(std::io::Error::other("the drawing is full"));
            }
            self.bytes.extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut out = Bounded { bytes: Vec::new(), max };
    // A full drawing ends the printing early; what was written is kept.
    let _ = serde_json::to_writer_pretty(&mut out, value);
    match String::from_utf8(out.bytes) {
        Ok(text) => text,
        Err(error) => {
            let valid = error.utf8_error().valid_up_to();
            let mut bytes = error.into_bytes();
            bytes.truncate(valid);
            String::from_utf8(bytes).unwrap_or_default()
        }
    }
}

/// Picks the drawing for a value.
pub fn diagram(value: &Value) -> Diagram {
    diagram_within(value, DRAWING_CHARS)
}

/// [`diagram`], with JSON text cut at `max_chars`.
fn diagram_within(value: &Value, max_chars: usize) -> Diagram {
    if let Some(assignment) = value.get("assignment").and_then(as_assignment) {
        return Diagram::Assignment(assignment);
    }
    if value.get("kind").and_then(Value::as_str) == Some("partition-map") {
        if let Some(map) = as_partition_map(value) {
            return Diagram::PartitionMap(map);
        }
    }
    if let Some(assignment) = as_assignment(value) {
        return Diagram::Assignment(assignment);
    }
    if let Some(values) = value.as_array() {
        let counts: Option<Vec<u64>> = values.iter().map(Value::as_u64).collect();
        if let Some(counts) = counts.filter(|counts| !counts.is_empty() && counts.len() <= 1_000) {
            return Diagram::Counts(
                counts
                    .into_iter()
                    .enumerate()
                    .map(|(index, count)| (index as u32, count))
                    .collect(),
            );
        }
    }
    Diagram::Json(pretty_within(value, max_chars))
}

fn as_assignment(value: &Value) -> Option<Vec<(String, Vec<String>)>> {
    let object = value.as_object().filter(|object| !object.is_empty())?;
    object
        .iter()
        .map(|(member, partitions)| {
            let partitions: Option<Vec<String>> = partitions
                .as_array()?
                .iter()
                .map(|partition| partition.as_str().map(str::to_string))
                .collect();
            Some((member.clone(), partitions?))
        })
        .collect()
}

fn as_partition_map(value: &Value) -> Option<Vec<(u32, Vec<String>)>> {
    let count = value
        .get("numPartitions")?
        .as_u64()
        .filter(|count| (1..=1_000).contains(count))? as u32;
    let mut keys: BTreeMap<u32, Vec<String>> = (0..count).map(|partition| (partition, Vec::new())).gather();
    for placement in value.get("placements")?.as_array()? {
        let partition = u32::try_from(placement.get("partition")?.as_u64()?).ok()?;
        let key = placement.get("key")?.as_str()?.to_string();
        keys.get_mut(&partition)?.push(key);
    }
    Some(keys.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_example_has_a_title_and_a_unique_id() {
        let mut ids: Vec<&str> = EXAMPLES.iter().map(|example| example.id).collect();
        ids.dedup();
        assert_eq!(ids.len(), EXAMPLES.len());
        for example in EXAMPLES {
            assert!(example.code.starts_with("// "), "{}", example.id);
            assert!(!example.title().is_empty());
        }
    }

    #[test]
    fn the_picker_lists_every_example_file_and_each_has_an_expectation() {
        let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../web/sandbox-examples");
        let mut files: Vec<String> = std::fs::read_dir(&folder)
            .expect("examples folder")
            .filter_map(|entry| {
                entry
                    .ok()?
                    .file_name()
                    .to_str()?
                    .strip_suffix(".js")
                    .map(str::to_string)
            })
            .collect();
        kafkascope_engine::sorting::sort(&mut files);
        let listed: Vec<&str> = EXAMPLES.iter().map(|example| example.id).collect();
        assert_eq!(files, listed);
        let expected: Value =
            serde_json::from_str(&std::fs::read_to_string(folder.join("expected.json")).expect("expected.json"))
                .expect("JSON");
        for id in listed {
            assert!(expected["examples"][id]["output"].is_array(), "no expectation for {id}");
        }
    }

    #[test]
    fn the_api_reference_parses() {
        let reference = api_reference();
        assert!(reference.len() >= 20);
        assert!(reference.iter().any(|entry| entry.name == "partitionFor"));
        assert!(reference.iter().all(|entry| !entry.example.is_empty()));
    }

    #[test]
    fn reports_and_plain_assignments_draw_as_assignments() {
        let report = json!({ "assignment": { "a": ["t-0", "t-1"], "b": [] }, "moves": [] });
        let expected = Diagram::Assignment(vec![
            ("a".into(), vec!["t-0".into(), "t-1".into()]),
            ("b".into(), vec![]),
        ]);
        assert_eq!(diagram(&report), expected);
        assert_eq!(diagram(&report["assignment"]), expected);
    }

    #[test]
    fn partition_maps_and_counts_draw_per_partition() {
        let map = json!({ "kind": "partition-map", "numPartitions": 3,
            "placements": [{ "key": "k1", "partition": 2 }, { "key": "k2", "partition": 2 }] });
        assert_eq!(
            diagram(&map),
            Diagram::PartitionMap(vec![(0, vec![]), (1, vec![]), (2, vec!["k1".into(), "k2".into()])])
        );
        assert_eq!(
            diagram(&json!([3, 0, 5])),
            Diagram::Counts(vec![(0, 3), (1, 0), (2, 5)])
        );
    }

    #[test]
    fn anything_else_and_bad_shapes_fall_back_to_json() {
        for value in [
            json!({ "acknowledged": 5 }),
            json!("text"),
            json!({ "kind": "partition-map", "numPartitions": 2, "placements": [{ "key": "k", "partition": 9 }] }),
            json!([]),
            // 2^32 is no partition of two (it once wrapped round to P0).
            json!({ "kind": "partition-map", "numPartitions": 2, "placements": [{ "key": "k", "partition": 4_294_967_296_u64 }] }),
        ] {
            assert!(matches!(diagram(&value), Diagram::Json(_)), "{value}");
        }
    }

    /// The floods a red team found: each costs the page no more than the
    /// bounds, and says what it left out.
    #[test]
    fn floods_of_shown_values_are_drawn_within_the_bounds() {
        let shown = |value: Value| Shown {
            title: Some("x".repeat(10_000)),
            value,
        };
        // Deeply nested zeros: two characters each, 130 once indented.
        let mut nested = json!(vec![0; 99_900]);
        for _ in 0..63 {
            nested = json!([nested]);
        }
        let chips = json!({ "m": vec![""; 66_600] });
        let maps = json!({ "kind": "partition-map", "numPartitions": 1_000, "placements": [] });
        for (flood, count) in [(nested, 5), (chips, 5), (maps, 50), (json!(vec![0; 1_000]), 50)] {
            let shows: Vec<Shown> = (0..count).map(|_| shown(flood.clone())).collect();
            let (drawings, hidden) = drawings(&shows);
            let mut chars = 0;
            let mut items = 0;
            for drawing in &drawings {
                assert!(drawing.title.as_ref().is_some_and(|title| title.chars().count() <= 201));
                match &drawing.diagram {
                    Diagram::Json(text) => chars += text.len(),
                    Diagram::Assignment(rows) => items += rows.iter().map(|(_, chips)| chips.len() + 1).sum::<usize>(),
                    Diagram::PartitionMap(rows) => {
                        items += rows.iter().map(|(_, chips)| chips.len() + 1).sum::<usize>()
                    }
                    Diagram::Counts(counts) => items += counts.len(),
                }
            }
            assert!(chars <= OUTPUT_CHARS, "{chars} characters drawn");
            assert!(items <= OUTPUT_ITEMS, "{items} items drawn");
            assert!(
                hidden > 0 || drawings.iter().any(|drawing| drawing.truncated.is_some()),
                "nothing says what was left out"
            );
        }
        // A small value is drawn whole and says nothing.
        let (drawings, hidden) = drawings(&[shown(json!({ "a": ["t-0"] }))]);
        assert_eq!((drawings[0].truncated.clone(), hidden), (None, 0));
    }

    #[test]
    fn the_time_limit_is_checked() {
        assert_eq!(parse_timeout("2000"), Ok(2000));
        assert!(parse_timeout("0").is_err());
        assert!(parse_timeout("abc").is_err());
        assert!(parse_timeout("1e9").is_err());
    }

    #[test]
    fn errors_read_with_their_position() {
        let error = SnippetError {
            name: "SyntaxError".into(),
            message: "Unexpected token ')'".into(),
            line: Some(3),
            column: Some(7),
        };
        assert_eq!(error.describe(), "SyntaxError: Unexpected token ')' (line 3, column 7)");
    }
}
