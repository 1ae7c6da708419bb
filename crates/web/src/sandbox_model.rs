//! The sandbox's plain data: the preloaded examples, what a run reports,
//! and how a value given to `show(value)` is drawn. No Yew, no DOM, so the
//! native tests check it.

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

/// Picks the drawing for a value.
pub fn diagram(value: &Value) -> Diagram {
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
    Diagram::Json(serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string()))
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
    let mut keys: BTreeMap<u32, Vec<String>> = (0..count).map(|partition| (partition, Vec::new())).collect();
    for placement in value.get("placements")?.as_array()? {
        let partition = placement.get("partition")?.as_u64()? as u32;
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
        files.sort();
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
        ] {
            assert!(matches!(diagram(&value), Diagram::Json(_)), "{value}");
        }
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
