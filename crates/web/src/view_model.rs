//! Plain data the page shows, derived from engine answers.
//!
//! Nothing here knows about Yew or the DOM; it is the boundary the native
//! tests check. Every user-typed value is parsed here and turned into either
//! a view or a message, never a panic.

use kafkascope_engine::java::to_positive;
use kafkascope_engine::partitioning::{murmur2, partition_for_key};

/// The largest partition count the key explorer draws as boxes. Kafka allows
/// far more; a page of boxes does not.
pub const PARTITION_COUNT_MAX: u32 = 64;

/// What the "which partition?" card shows for one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyPlacement {
    /// The key as typed; it is hashed as UTF-8, like Kafka's StringSerializer.
    pub key: String,
    /// murmur2 of the key's bytes as Kafka computes it (a signed Java int).
    pub murmur2: i32,
    /// `murmur2 & 0x7fffffff`, the non-negative value the modulo uses.
    pub positive_hash: i32,
    /// How many partitions the topic has.
    pub partition_count: u32,
    /// The partition the record goes to.
    pub partition: u32,
}

/// Computes the placement of `key`, or explains why the partition count the
/// user typed cannot be used.
pub fn key_placement(key: &str, partition_count_text: &str) -> Result<KeyPlacement, String> {
    let partition_count = parse_partition_count(partition_count_text)?;
    let hash = murmur2(key.as_bytes());
    let partition = partition_for_key(key.as_bytes(), partition_count)
        .ok_or_else(|| "A topic needs at least one partition.".to_string())?;
    Ok(KeyPlacement {
        key: key.to_string(),
        murmur2: hash,
        positive_hash: to_positive(hash),
        partition_count,
        partition,
    })
}

fn parse_partition_count(text: &str) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(count) if (1..=PARTITION_COUNT_MAX).contains(&count) => Ok(count),
        _ => Err(format!(
            "Partitions must be a whole number from 1 to {PARTITION_COUNT_MAX}."
        )),
    }
}

/// A part of the page shown alone, for a course page's iframe
/// (`?embed=map`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Embed {
    Lesson,
    Map,
    Steps,
    Sandbox,
}

impl Embed {
    pub const ALL: [Embed; 4] = [Embed::Lesson, Embed::Map, Embed::Steps, Embed::Sandbox];

    /// Its name in the address.
    pub fn name(self) -> &'static str {
        match self {
            Embed::Lesson => "lesson",
            Embed::Map => "map",
            Embed::Steps => "steps",
            Embed::Sandbox => "sandbox",
        }
    }
}

/// The value of one parameter of a page address's query (`?a=1&b=2`),
/// as written (the first, if it is repeated).
pub fn query_param<'a>(query: &'a str, name: &str) -> Option<&'a str> {
    query
        .trim_start_matches('?')
        .split('&')
        .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
}

/// Every parameter kafkascope's page reads in its address (the map, the
/// steps, links, embeds, course packages).
pub const ADDRESS_PARAMS: [&str; 16] = [
    "play", "preset", "seed", "knob", "run", "code", "story", "step", "fork", "exercise", "scenario", "embed", "host",
    "controls", "scorm", "mastery",
];

/// What the page says about parameters in its address it does not read (a
/// misspelt one, or one another site added): each named, with the one it
/// may have meant; `None` when it reads them all. The page still opens.
pub fn unknown_params_note(query: &str) -> Option<String> {
    let mut unknown: Vec<String> = Vec::new();
    for pair in query.trim_start_matches('?').split('&').filter(|pair| !pair.is_empty()) {
        let name = pair.split('=').next().unwrap_or_default();
        let clipped: String = name.chars().take(40).collect();
        if !ADDRESS_PARAMS.contains(&name) && !unknown.contains(&clipped) {
            unknown.push(clipped);
        }
    }
    if unknown.is_empty() {
        return None;
    }
    let shown = unknown.len().min(5);
    let named: Vec<String> = unknown[..shown]
        .iter()
        .map(
            |name| match ADDRESS_PARAMS.iter().find(|known| edit_distance(name, known) <= 2) {
                Some(known) if name.len() > 2 => {
                    format!("\u{201c}{name}\u{201d} (did you mean \u{201c}{known}\u{201d}?)")
                }
                _ => format!("\u{201c}{name}\u{201d}"),
            },
        )
        .collect();
    let more = match unknown.len() - shown {
        0 => String::new(),
        more => format!(" and {more} more"),
    };
    let (noun, verb) = if unknown.len() == 1 {
        ("parameter", "it changes")
    } else {
        ("parameters", "they change")
    };
    Some(format!(
        "kafkascope does not read the {noun} {}{more} in this address, so {verb} nothing here.",
        named.join(", ")
    ))
}

/// Levenshtein distance, for short names.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous + usize::from(ca != *cb);
            previous = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(previous + 1);
        }
    }
    row[b.len()]
}

/// `?seed=N` on the page's address: the live map's seed, from 0 to
/// 4294967295 as the seed knob takes it; `None` without one.
pub fn seed_in_query(query: &str) -> Option<Result<u64, String>> {
    let value = query_param(query, "seed")?;
    Some(
        value
            .parse::<u64>()
            .ok()
            .filter(|seed| *seed <= u64::from(u32::MAX))
            .ok_or_else(|| {
                format!(
                    "the seed in this address, {value:?}, is not a whole number from 0 to {}",
                    u32::MAX
                )
            }),
    )
}

/// The embed mode an address asks for: none, one of [`Embed::ALL`], or a
/// message naming the ones there are.
pub fn embed_mode(query: &str) -> Result<Option<Embed>, String> {
    let Some(value) = query_param(query, "embed") else {
        return Ok(None);
    };
    Embed::ALL
        .into_iter()
        .find(|embed| embed.name() == value)
        .map(Some)
        .ok_or_else(|| {
            let names: Vec<&str> = Embed::ALL.iter().map(|embed| embed.name()).collect();
            format!(
                "This link asks to embed \"{value}\", which is not a part of the page (the parts are {}); here is the whole page.",
                names.join(", ")
            )
        })
}

/// The frame every embedded part is made to fit, in CSS pixels: the size
/// the authoring guide promises and the embed-code generator writes.
pub const EMBED_FRAME: (u32, u32) = (800, 600);

/// Whether an embedded story shows only what reads it: a part that shows
/// only the steps, for a story the address names (`story=` or
/// `scenario=`), hides the story picker, the file picker and the filters,
/// unless the address asks for every control (`controls=all`).
pub fn compact_story(query: &str) -> bool {
    matches!(embed_mode(query), Ok(Some(Embed::Steps)))
        && (query_param(query, "story").is_some() || query_param(query, "scenario").is_some())
        && query_param(query, "controls") != Some("all")
}

impl Embed {
    /// Its title for a frame, and the frame's size in CSS pixels.
    fn frame(self) -> (&'static str, u32, u32) {
        let (width, height) = EMBED_FRAME;
        match self {
            Embed::Lesson => ("the lesson", width, height),
            Embed::Map => ("a running Kafka cluster", width, height),
            Embed::Steps => ("a story step by step", width, height),
            Embed::Sandbox => ("a JavaScript sandbox", width, height),
        }
    }
}

/// The HTML a course page pastes to embed one part of the page served at
/// `page_url` (origin and path): an iframe sized for it, scripts allowed
/// (with the frame's own origin, which the app needs to load its
/// WebAssembly), popups for its link to the whole page, and clipboard
/// writes for its copy buttons.
pub fn embed_code(page_url: &str, part: Embed) -> String {
    let (title, width, height) = part.frame();
    let escape = |text: &str| {
        text.replace('&', "&amp;")
            .replace('"', "&quot;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    format!(
        "<iframe src=\"{}?embed={}&amp;play=0\" width=\"{width}\" height=\"{height}\" title=\"kafkascope: {title}\" style=\"border: 0; max-width: 100%\" loading=\"lazy\" sandbox=\"allow-scripts allow-same-origin allow-popups allow-popups-to-escape-sandbox\" allow=\"clipboard-write\"></iframe>",
        escape(page_url),
        part.name()
    )
}

/// The same address without its embed parameter: the whole page.
pub fn without_embed(query: &str) -> String {
    let kept: Vec<&str> = query
        .trim_start_matches('?')
        .split('&')
        .filter(|pair| !pair.is_empty() && !pair.starts_with("embed="))
        .collect();
    if kept.is_empty() {
        String::new()
    } else {
        format!("?{}", kept.join("&"))
    }
}

/// The whole page's address for an embedded part at `path` (the page's
/// own path, `query` and `hash`): always a path on this site. A path that
/// starts with `//` (`HOST//other.host?embed=map`) would otherwise be read
/// as another host's address, so its leading slashes become one.
pub fn whole_page_link(path: &str, query: &str, hash: &str) -> String {
    format!(
        "/{}{}{hash}",
        path.trim_start_matches(['/', '\\']),
        without_embed(query)
    )
}

/// The most keys the distribution view takes.
pub const KEYS_MAX: usize = 200;

/// One key of the distribution view: its records a second, where it goes
/// now and after the partition count changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRow {
    pub key: String,
    pub weight: u64,
    pub partition: u32,
    pub after: u32,
}

/// Many keys over a topic's partitions (the collector that keys by
/// source): how much each partition gets (a hot key makes a hot
/// partition), and which keys move when partitions are added (hash modulo
/// a new count; Kafka does not move old records, so a moved key's new
/// records land away from its old ones).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyDistribution {
    pub rows: Vec<KeyRow>,
    pub partitions: u32,
    pub after: u32,
    /// Records a second per partition, now and after.
    pub load: Vec<u64>,
    pub load_after: Vec<u64>,
}

impl KeyDistribution {
    /// Keys that go to another partition after the change.
    pub fn moved(&self) -> impl Iterator<Item = &KeyRow> {
        self.rows.iter().filter(|row| row.partition != row.after)
    }

    /// The busiest partition's share of all records, in percent.
    pub fn hottest_share(&self) -> u64 {
        let total: u64 = self.load.iter().sum();
        (self.load.iter().copied().max().unwrap_or(0) * 100)
            .checked_div(total)
            .unwrap_or(0)
    }
}

/// Reads keys, one a line, each with an optional weight (`router-1 40`:
/// forty records a second; one by default), and places them on
/// `partitions_text` partitions now and `after_text` after a change.
pub fn key_distribution(keys_text: &str, partitions_text: &str, after_text: &str) -> Result<KeyDistribution, String> {
    let partitions = parse_partition_count(partitions_text)?;
    let after = parse_partition_count(after_text).map_err(|_| {
        format!("The partition count after the change must be a whole number from 1 to {PARTITION_COUNT_MAX}.")
    })?;
    if after < partitions {
        return Err(format!(
            "Kafka only adds partitions (kafka-topics --alter --partitions): {after} is fewer than {partitions}."
        ));
    }
    let mut rows = Vec::new();
    for (number, line) in keys_text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let (key, weight) = match line.rsplit_once(char::is_whitespace) {
            Some((key, weight)) if weight.chars().all(|c| c.is_ascii_digit()) => {
                let weight = weight
                    .parse::<u64>()
                    .ok()
                    .filter(|weight| (1..=1_000_000).contains(weight))
                    .ok_or_else(|| {
                        format!(
                            "Line {}: a key's rate must be from 1 to 1000000 records a second.",
                            number + 1
                        )
                    })?;
                (key.trim(), weight)
            }
            _ => (line, 1),
        };
        if rows.len() == KEYS_MAX {
            return Err(format!("At most {KEYS_MAX} keys."));
        }
        let place = |count| partition_for_key(key.as_bytes(), count).unwrap_or(0);
        rows.push(KeyRow {
            key: key.to_string(),
            weight,
            partition: place(partitions),
            after: place(after),
        });
    }
    let load_of = |count: u32, pick: fn(&KeyRow) -> u32| {
        let mut load = vec![0; count as usize];
        for row in &rows {
            load[pick(row) as usize] += row.weight;
        }
        load
    };
    Ok(KeyDistribution {
        load: load_of(partitions, |row| row.partition),
        load_after: load_of(after, |row| row.after),
        rows,
        partitions,
        after,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_in_the_address_is_the_seed_knobs_range() {
        assert_eq!(seed_in_query("?embed=map&seed=42"), Some(Ok(42)));
        assert_eq!(seed_in_query("?seed=4294967295"), Some(Ok(u64::from(u32::MAX))));
        assert_eq!(seed_in_query("?story=x"), None);
        for bad in ["?seed=-1", "?seed=4294967296", "?seed=abc", "?seed="] {
            assert!(
                seed_in_query(bad).unwrap().unwrap_err().contains("not a whole number"),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_pinned_story_in_an_embed_is_compact_unless_every_control_is_asked_for() {
        assert!(compact_story("?embed=steps&story=happy-path&play=0"));
        assert!(compact_story("?embed=steps&scenario=https%3A%2F%2Fx%2Fa.json"));
        assert!(!compact_story("?embed=steps&story=happy-path&controls=all"));
        assert!(!compact_story("?embed=steps"));
        assert!(!compact_story("?story=happy-path"));
        assert!(!compact_story("?embed=map&story=happy-path"));
    }

    #[test]
    fn embed_mode_reads_the_address_and_refuses_unknown_parts() {
        assert_eq!(embed_mode(""), Ok(None));
        assert_eq!(embed_mode("?play=0&embed=map"), Ok(Some(Embed::Map)));
        assert_eq!(embed_mode("?embed=steps&story=x"), Ok(Some(Embed::Steps)));
        assert!(embed_mode("?embed=<script>").is_err_and(|error| error.contains("lesson, map, steps, sandbox")));
        assert_eq!(without_embed("?embed=map&play=0"), "?play=0");
        assert_eq!(without_embed("?embed=map"), "");
        let code = embed_code("https://example.org/k/\"x", Embed::Map);
        assert!(
            code.starts_with(
                "<iframe src=\"https://example.org/k/&quot;x?embed=map&amp;play=0\" width=\"800\" height=\"600\""
            ),
            "{code}"
        );
        assert!(code.contains("sandbox=\"allow-scripts allow-same-origin"));
    }

    /// The documents' collector: routers keyed by their address. Each
    /// key stays in one partition; one busy router makes one busy
    /// partition; adding partitions moves some keys and not others.
    #[test]
    fn key_distribution_shows_hot_partitions_and_moved_keys() {
        let keys = "192.168.1.1 40\n192.168.1.2\n192.168.1.3\n192.168.1.4\n\n192.168.1.5 2";
        let view = key_distribution(keys, "3", "4").expect("valid");
        assert_eq!(view.rows.len(), 5);
        assert_eq!(view.load.iter().sum::<u64>(), 45);
        assert!(view.hottest_share() >= 40 * 100 / 45);
        for row in &view.rows {
            assert_eq!(Some(row.partition), partition_for_key(row.key.as_bytes(), 3));
            assert_eq!(Some(row.after), partition_for_key(row.key.as_bytes(), 4));
        }
        assert_eq!(view.load_after.len(), 4);
        let same = key_distribution(keys, "3", "3").expect("valid");
        assert_eq!(same.moved().count(), 0);
        assert!(key_distribution(keys, "4", "3").is_err_and(|error| error.contains("only adds")));
        assert!(key_distribution("a 0", "3", "3").is_err_and(|error| error.contains("Line 1")));
        assert_eq!(
            key_distribution("my key", "3", "3").expect("valid").rows[0].key,
            "my key"
        );
    }

    #[test]
    fn placement_uses_kafkas_partitioner() {
        // The empty key: murmur2 275646681, partition 9 of 12 (Kafka's vectors).
        let placement = key_placement("", "12").expect("valid");
        assert_eq!(placement.murmur2, 275646681);
        assert_eq!(placement.partition, 9);
    }

    #[test]
    fn bad_counts_get_a_message() {
        for text in ["0", "-1", "abc", "", "65", "2.5"] {
            let message = key_placement("k", text).expect_err(text);
            assert!(message.contains("1 to 64"), "{text}: {message}");
        }
    }
}

/// How many of a replica's latest records the inspector shows.
pub const RECORD_STRIP_LEN: u64 = 24;

/// One record in a replica's strip: its offset, its key (or none), a hue
/// shared by every record of that key, and whether it is a tombstone or
/// still above the high watermark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordChip {
    pub offset: u64,
    pub key: Option<String>,
    /// 0..8, the same for every record of a key.
    pub hue: u8,
    pub tombstone: bool,
    pub committed: bool,
}

/// The offset the strip starts at: the latest [`RECORD_STRIP_LEN`] offsets
/// of a log (fewer where retention deleted the rest).
pub fn record_strip_from(log_start_offset: u64, log_end_offset: u64) -> u64 {
    log_end_offset.saturating_sub(RECORD_STRIP_LEN).max(log_start_offset)
}

/// A replica's latest records as chips, oldest first: one key's records
/// keep their order in a partition, which the strip shows; records of
/// different partitions have no order between them.
pub fn record_strip(records: &[kafkascope_engine::sim::view::LogRecordView]) -> Vec<RecordChip> {
    records
        .iter()
        .rev()
        .take(RECORD_STRIP_LEN as usize)
        .rev()
        .map(|record| RecordChip {
            offset: record.offset,
            hue: record.key.as_deref().map_or(0, |key| {
                kafkascope_engine::partitioning::partition_for_key(key.as_bytes(), 8).unwrap_or(0) as u8
            }),
            key: record.key.clone(),
            tombstone: record.value_size.is_none(),
            committed: record.committed,
        })
        .collect()
}

#[cfg(test)]
mod record_strip_tests {
    use super::*;
    use kafkascope_engine::groups::assignors::TopicPartition;
    use kafkascope_engine::sim::config::{Input, ScheduledInput};
    use kafkascope_engine::sim::Simulation;

    /// The strip lists a partition's records in offset order, each key
    /// with one hue, and only the latest ones.
    #[test]
    fn the_strip_shows_the_latest_records_in_order_with_a_hue_per_key() {
        let mut config = crate::cluster_model::default_config();
        config.topics[0].partitions = 1;
        let mut simulation = Simulation::new(config, 1).expect("valid");
        for (at_ms, key) in [(100, "alice"), (200, "bob"), (300, "alice")] {
            simulation.schedule(ScheduledInput {
                at_ms,
                input: Input::Produce {
                    producer: 0,
                    key: Some(key.into()),
                    count: 10,
                    bytes: 100,
                },
            });
        }
        simulation.run_until(2_000);
        let partition = TopicPartition::new("orders", 0);
        assert_eq!(record_strip_from(0, 30), 6);
        assert_eq!(record_strip_from(10, 30), 10);
        let records = simulation
            .log_records(&partition, None, record_strip_from(0, 30))
            .expect("records");
        let strip = record_strip(&records);
        assert_eq!(strip.len(), RECORD_STRIP_LEN as usize);
        assert!(strip.windows(2).all(|pair| pair[0].offset < pair[1].offset));
        assert_eq!(strip.first().map(|chip| chip.offset), Some(6));
        let hue = |key: &str| {
            strip
                .iter()
                .filter(|chip| chip.key.as_deref() == Some(key))
                .map(|chip| chip.hue)
                .collect::<std::collections::BTreeSet<_>>()
        };
        assert_eq!(hue("alice").len(), 1);
        assert_eq!(hue("bob").len(), 1);
        assert!(strip.iter().all(|chip| chip.committed && !chip.tombstone));
    }

    #[test]
    fn the_whole_page_link_stays_on_this_site() {
        assert_eq!(
            whole_page_link("/kafkascope/", "?embed=map&seed=3", "#map"),
            "/kafkascope/?seed=3#map"
        );
        assert_eq!(whole_page_link("//other.host", "?embed=map", ""), "/other.host");
        assert_eq!(whole_page_link("/\\other.host/x", "?embed=steps", ""), "/other.host/x");
        assert_eq!(whole_page_link("", "?embed=map", ""), "/");
    }

    #[test]
    fn an_address_parameter_the_page_does_not_read_is_named_with_what_it_may_mean() {
        assert_eq!(unknown_params_note("?play=0&story=happy-path&step=3#steps"), None);
        assert_eq!(unknown_params_note(""), None);
        assert_eq!(
            unknown_params_note("?play=0&storry=happy-path"),
            Some("kafkascope does not read the parameter \u{201c}storry\u{201d} (did you mean \u{201c}story\u{201d}?) in this address, so it changes nothing here.".to_string())
        );
        let many = unknown_params_note("?utm_source=a&utm_medium=b&x=1&x=2&y&z=3&w=4&v=5").expect("named");
        assert!(many.starts_with("kafkascope does not read the parameters \u{201c}utm_source\u{201d}, \u{201c}utm_medium\u{201d}, \u{201c}x\u{201d}, \u{201c}y\u{201d}, \u{201c}z\u{201d} and 2 more"), "{many}");
        assert!(!many.contains("did you mean"), "{many}");
        let long = unknown_params_note(&format!("?{}=1", "a".repeat(5_000))).expect("named");
        assert!(long.len() < 200, "{long}");
    }
}
