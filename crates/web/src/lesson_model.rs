//! The lesson, as data: `web/lesson.json` read into typed parts (gist,
//! tables, questions, glossary, sections), each link a typed target the
//! page turns into an address. Components only draw what is here.
//!
//! A test runs every story a link names and checks that the step it names
//! shows what the link says it shows, so the lesson cannot rot when a
//! story changes (the failure names the step that shows it now).

use serde::Deserialize;

use crate::session::Knob;

/// Where a lesson link goes.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum LessonLink {
    /// A story at a step (1-based; none: its first), which shows an event
    /// of this name (a step's name, as the steps' filter lists them).
    Story {
        story: String,
        #[serde(default)]
        step: Option<usize>,
        #[serde(default)]
        shows: Option<String>,
    },
    /// A live knob set on the map to a value (Kafka's name).
    Knob { knob: String, value: String },
    /// A part of the page (`map`, `steps`, `sandbox`, `partitioner`, `learn`).
    Section { section: String },
    /// A part of the lesson itself (a table's or a section's id).
    Anchor { anchor: String },
}

/// The page's parts a link may open.
pub const PAGE_SECTIONS: [&str; 5] = ["map", "steps", "sandbox", "partitioner", "learn"];

/// The query parameter a knob link sets (`?knob=acks:1#map`).
pub const KNOB_PARAM: &str = "knob";

impl LessonLink {
    /// The address it opens, relative to the page.
    pub fn href(&self) -> String {
        match self {
            // (Without a step a story opens on its first chapter.)
            LessonLink::Story { story, step, .. } => match step {
                Some(step) => format!("?story={story}&step={step}#steps"),
                None => format!("?story={story}#steps"),
            },
            LessonLink::Knob { knob, value } => format!("?{KNOB_PARAM}={knob}:{value}#map"),
            LessonLink::Section { section } => format!("#{section}"),
            LessonLink::Anchor { anchor } => format!("#lesson-{anchor}"),
        }
    }

    /// What the link says it does, for its label.
    pub fn label(&self) -> String {
        match self {
            LessonLink::Story { step: Some(step), .. } => format!("see it happen (step {step})"),
            LessonLink::Story { .. } => "see it happen".to_string(),
            LessonLink::Knob { knob, value } => format!("set {knob}={value} on the map"),
            LessonLink::Section { section } => format!("open the {section}"),
            LessonLink::Anchor { .. } => "see the table".to_string(),
        }
    }
}

/// A knob link's knob and value, from a page address (`knob=acks:1`).
pub fn knob_in_query(query: &str) -> Option<(Knob, String)> {
    let value = crate::view_model::query_param(query, KNOB_PARAM)?;
    let value = value.replace("%3A", ":").replace("%3a", ":");
    let (name, setting) = value.split_once(':')?;
    Some((Knob::from_name(name)?, setting.to_string()))
}

/// A page address without its knob parameter (`?` alone when nothing is
/// left).
pub fn without_knob(query: &str) -> String {
    let kept: Vec<&str> = query
        .trim_start_matches('?')
        .split('&')
        .filter(|pair| !pair.is_empty() && !pair.starts_with(&format!("{KNOB_PARAM}=")))
        .collect();
    format!("?{}", kept.join("&"))
}

/// One objective: what the learner should be able to do, and where to
/// practise it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Objective {
    pub text: String,
    pub link: LessonLink,
}

/// A component and why it exists.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Component {
    pub name: String,
    pub why: String,
    pub link: LessonLink,
}

/// One side of "Prefer / Alternative".
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Choice {
    pub title: String,
    pub text: String,
    pub points: Vec<String>,
}

/// A card with a title, a sentence and a link (the happy path).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Card {
    pub title: String,
    pub text: String,
    pub link: LessonLink,
}

/// The gist.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Gist {
    pub mental_model: String,
    pub components: Vec<Component>,
    pub prefer: Choice,
    pub alternative: Choice,
    pub happy_path: Vec<Card>,
}

/// A table row, with where it can be seen.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Row {
    pub cells: Vec<String>,
    pub link: Option<LessonLink>,
}

/// A table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Table {
    pub id: String,
    pub title: String,
    #[serde(default)]
    pub note: Option<String>,
    pub columns: Vec<String>,
    pub rows: Vec<Row>,
}

/// A question, its answer (hidden until asked) and where it can be seen.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Question {
    pub id: String,
    pub question: String,
    pub answer: String,
    pub link: Option<LessonLink>,
}

/// A glossary entry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Term {
    pub term: String,
    #[serde(default)]
    pub name: Option<String>,
    pub definition: String,
}

/// A section of prose.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prose {
    pub id: String,
    pub title: String,
    pub paragraphs: Vec<String>,
    pub link: Option<LessonLink>,
}

/// The whole lesson.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lesson {
    pub about: String,
    pub title: String,
    pub summary: String,
    pub objectives: Vec<Objective>,
    pub gist: Gist,
    pub sections: Vec<Prose>,
    pub tables: Vec<Table>,
    pub qa: Vec<Question>,
    pub glossary: Vec<Term>,
    /// The predict-then-reveal exercises, the pitfalls first.
    pub exercises: Vec<crate::exercise_model::Exercise>,
}

impl Lesson {
    /// Every link in the lesson, with where it is (for messages).
    pub fn links(&self) -> Vec<(String, &LessonLink)> {
        let mut links: Vec<(String, &LessonLink)> = Vec::new();
        for (index, objective) in self.objectives.iter().enumerate() {
            links.push((format!("objective {}", index + 1), &objective.link));
        }
        for component in &self.gist.components {
            links.push((format!("component {}", component.name), &component.link));
        }
        for (index, card) in self.gist.happy_path.iter().enumerate() {
            links.push((format!("happy path card {}", index + 1), &card.link));
        }
        for section in &self.sections {
            if let Some(link) = &section.link {
                links.push((format!("section {}", section.id), link));
            }
        }
        for table in &self.tables {
            for (index, row) in table.rows.iter().enumerate() {
                if let Some(link) = &row.link {
                    links.push((format!("table {} row {}", table.id, index + 1), link));
                }
            }
        }
        for question in &self.qa {
            if let Some(link) = &question.link {
                links.push((format!("question {}", question.id), link));
            }
        }
        links
    }

    /// The ids an anchor link may name: tables and sections.
    pub fn anchors(&self) -> Vec<&str> {
        self.tables
            .iter()
            .map(|table| table.id.as_str())
            .chain(self.sections.iter().map(|section| section.id.as_str()))
            .collect()
    }

    /// Which tab holds an anchor.
    pub fn tab_of_anchor(&self, anchor: &str) -> Option<LessonTab> {
        if self.tables.iter().any(|table| table.id == anchor) {
            Some(LessonTab::Tables)
        } else if self.sections.iter().any(|section| section.id == anchor) {
            Some(LessonTab::Kraft)
        } else {
            None
        }
    }
}

/// A piece of lesson text: plain, or a glossary term's first use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece<'a> {
    Text(&'a str),
    /// The words as written, and the glossary entry they name.
    Term(&'a str, &'a Term),
}

impl Term {
    /// The spellings that name it: the term and its long name.
    fn spellings(&self) -> Vec<&str> {
        std::iter::once(self.term.as_str())
            .chain(self.name.as_deref())
            .collect()
    }

    /// Its id on the page (`term-ISR`).
    pub fn anchor(&self) -> String {
        format!("term-{}", self.term.replace(' ', "-"))
    }
}

impl Lesson {
    /// Splits `text` so that the first use on the page of each glossary
    /// term (its short or long name, as a whole word) is marked; `seen`
    /// holds the terms already marked, in the page's order.
    pub fn gloss<'a>(&'a self, text: &'a str, seen: &mut std::collections::BTreeSet<usize>) -> Vec<Piece<'a>> {
        let mut pieces = Vec::new();
        let mut rest = text;
        loop {
            // The earliest first use in what is left.
            let found = self
                .glossary
                .iter()
                .enumerate()
                .filter(|(index, _)| !seen.contains(index))
                .flat_map(|(index, term)| {
                    term.spellings()
                        .into_iter()
                        .map(move |spelling| (index, term, spelling))
                })
                .filter_map(|(index, term, spelling)| find_word(rest, spelling).map(|at| (at, index, term, spelling)))
                .min_by_key(|(at, _, _, spelling)| (*at, std::cmp::Reverse(spelling.len())));
            let Some((at, index, term, spelling)) = found else {
                break;
            };
            seen.insert(index);
            if at > 0 {
                pieces.push(Piece::Text(&rest[..at]));
            }
            pieces.push(Piece::Term(&rest[at..at + spelling.len()], term));
            rest = &rest[at + spelling.len()..];
        }
        if !rest.is_empty() {
            pieces.push(Piece::Text(rest));
        }
        pieces
    }
}

/// Where `word` appears in `text` as a whole word (case as written for
/// short all-capital terms, any case for the others).
fn find_word(text: &str, word: &str) -> Option<usize> {
    let exact = word.chars().all(|c| c.is_ascii_uppercase());
    let haystack = if exact {
        text.to_string()
    } else {
        text.to_ascii_lowercase()
    };
    let needle = if exact {
        word.to_string()
    } else {
        word.to_ascii_lowercase()
    };
    let boundary = |c: Option<char>| c.is_none_or(|c| !c.is_alphanumeric() && c != '_' && c != '.');
    let mut from = 0;
    while let Some(found) = haystack[from..].find(&needle) {
        let at = from + found;
        let before = haystack[..at].chars().next_back();
        let after = haystack[at + needle.len()..].chars().next();
        if boundary(before) && boundary(after) {
            return Some(at);
        }
        from = at + needle.len();
    }
    None
}

/// The lesson shipped with the page.
pub fn lesson() -> &'static Lesson {
    static LESSON: std::sync::OnceLock<Lesson> = std::sync::OnceLock::new();
    LESSON.get_or_init(|| {
        serde_json::from_str(include_str!("../../../web/lesson.json"))
            .unwrap_or_else(|error| panic!("web/lesson.json: {error}"))
    })
}

/// The lesson's tabs, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LessonTab {
    #[default]
    Gist,
    Tables,
    Questions,
    Exercise,
    Kraft,
    Glossary,
}

impl LessonTab {
    pub const ALL: [LessonTab; 6] = [
        LessonTab::Gist,
        LessonTab::Tables,
        LessonTab::Questions,
        LessonTab::Exercise,
        LessonTab::Kraft,
        LessonTab::Glossary,
    ];

    /// Its id, in addresses (`#qa`) and test ids.
    pub fn id(self) -> &'static str {
        match self {
            LessonTab::Gist => "gist",
            LessonTab::Tables => "tables",
            LessonTab::Questions => "qa",
            LessonTab::Exercise => "exercise",
            LessonTab::Kraft => "kraft",
            LessonTab::Glossary => "glossary",
        }
    }

    /// Its label.
    pub fn label(self) -> &'static str {
        match self {
            LessonTab::Gist => "Gist",
            LessonTab::Tables => "Compare",
            LessonTab::Questions => "Q&A",
            LessonTab::Exercise => "Exercise",
            LessonTab::Kraft => "KRaft",
            LessonTab::Glossary => "Glossary",
        }
    }

    /// The tab an address's fragment opens (`#qa`, `#lesson-compare`).
    pub fn for_hash(hash: &str) -> Option<LessonTab> {
        let hash = hash.trim_start_matches('#');
        if hash == "lesson" {
            return Some(LessonTab::Gist);
        }
        if let Some(tab) = LessonTab::ALL.into_iter().find(|tab| tab.id() == hash) {
            return Some(tab);
        }
        if hash.starts_with("term-") {
            return Some(LessonTab::Glossary);
        }
        if hash
            .strip_prefix("exercise-")
            .is_some_and(|id| lesson().exercises.iter().any(|exercise| exercise.id == id))
        {
            return Some(LessonTab::Exercise);
        }
        let anchor = hash.strip_prefix("lesson-")?;
        lesson().tab_of_anchor(anchor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sequence_model::{story, StoryRun};

    #[test]
    fn the_lesson_parses_and_has_every_part() {
        let lesson = lesson();
        assert!(lesson.objectives.len() >= 4);
        assert_eq!(lesson.gist.happy_path.len(), 5);
        assert!(lesson.qa.len() >= 7, "every question of the documents");
        assert!(lesson.glossary.iter().any(|term| term.term == "ISR"));
        for table in &lesson.tables {
            for row in &table.rows {
                assert_eq!(
                    row.cells.len(),
                    table.columns.len(),
                    "table {}: {:?}",
                    table.id,
                    row.cells
                );
            }
        }
    }

    /// Every link opens something that exists: a story's step that shows
    /// what the link says, a knob the map has with a value it takes, a
    /// part of the page, a table or section of the lesson.
    #[test]
    fn every_lesson_link_opens_a_step_or_state_that_exists() {
        let lesson = lesson();
        let mut problems = Vec::new();
        let mut runs: std::collections::BTreeMap<String, StoryRun> = std::collections::BTreeMap::new();
        let config = crate::cluster_model::default_config();
        for (place, link) in lesson.links() {
            match link {
                LessonLink::Story { story: id, step, shows } => {
                    let Some(definition) = story(id) else {
                        problems.push(format!("{place}: no story {id:?}"));
                        continue;
                    };
                    let run = runs
                        .entry(id.clone())
                        .or_insert_with(|| StoryRun::start(definition).expect("a story plays"));
                    match (step, shows) {
                        (None, None) => {}
                        (Some(step), Some(shows)) => {
                            let ok = run
                                .steps
                                .get(step.wrapping_sub(1))
                                .is_some_and(|found| found.name == *shows);
                            if !ok {
                                let now: Vec<usize> = run
                                    .steps
                                    .iter()
                                    .enumerate()
                                    .filter(|(_, found)| found.name == *shows)
                                    .map(|(index, _)| index + 1)
                                    .take(5)
                                    .collect();
                                problems.push(format!(
                                    "{place}: step {step} of {id} does not show {shows}; steps that do: {now:?}"
                                ));
                            }
                        }
                        _ => problems.push(format!(
                            "{place}: a story link names a step and what it shows, or neither"
                        )),
                    }
                }
                LessonLink::Knob { knob, value } => match Knob::from_name(knob) {
                    Some(found) => {
                        if let Err(error) = found.change(value, &config) {
                            problems.push(format!("{place}: {error}"));
                        }
                    }
                    None => problems.push(format!("{place}: no live knob {knob}")),
                },
                LessonLink::Section { section } => {
                    if !PAGE_SECTIONS.contains(&section.as_str()) {
                        problems.push(format!("{place}: no page section {section}"));
                    }
                }
                LessonLink::Anchor { anchor } => {
                    if !lesson.anchors().contains(&anchor.as_str()) {
                        problems.push(format!("{place}: no table or section {anchor}"));
                    }
                }
            }
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }

    /// A term is marked at its first use only, by its short or long
    /// name, as a whole word.
    #[test]
    fn the_first_use_of_a_glossary_term_is_marked() {
        let lesson = lesson();
        let mut seen = std::collections::BTreeSet::new();
        let first = lesson.gloss("The ISR waits; the high watermark moves; ISR again. ISRs.", &mut seen);
        let terms: Vec<&str> = first
            .iter()
            .filter_map(|piece| match piece {
                Piece::Term(text, _) => Some(*text),
                Piece::Text(_) => None,
            })
            .collect();
        assert_eq!(terms, ["ISR", "high watermark"]);
        let text: String = first
            .iter()
            .map(|piece| match piece {
                Piece::Term(text, _) | Piece::Text(text) => *text,
            })
            .collect();
        assert_eq!(text, "The ISR waits; the high watermark moves; ISR again. ISRs.");
        let again = lesson.gloss("The ISR shrinks.", &mut seen);
        assert_eq!(again, [Piece::Text("The ISR shrinks.")]);
        assert_eq!(
            lesson.gloss("min.insync.replicas", &mut seen),
            [Piece::Text("min.insync.replicas")]
        );
        assert_eq!(LessonTab::for_hash("#term-ISR"), Some(LessonTab::Glossary));
    }

    #[test]
    fn addresses_open_their_tab_and_knob_links_name_a_knob() {
        assert_eq!(LessonTab::for_hash("#qa"), Some(LessonTab::Questions));
        assert_eq!(LessonTab::for_hash("#lesson-compare"), Some(LessonTab::Tables));
        assert_eq!(LessonTab::for_hash("#map"), None);
        assert_eq!(LessonTab::for_hash("#lesson"), Some(LessonTab::Gist));
        assert_eq!(
            knob_in_query("?play=0&knob=acks:1"),
            Some((Knob::Acks, "1".to_string()))
        );
        assert_eq!(knob_in_query("?knob=acks%3A1"), Some((Knob::Acks, "1".to_string())));
        assert_eq!(knob_in_query("?knob=nope:1"), None);
        assert_eq!(without_knob("?play=0&knob=acks:1"), "?play=0");
        assert_eq!(without_knob("?knob=acks:1"), "?");
        let link = LessonLink::Knob {
            knob: "acks".into(),
            value: "1".into(),
        };
        assert_eq!(
            knob_in_query(link.href().split('#').next().unwrap_or_default()),
            Some((Knob::Acks, "1".into()))
        );
    }
}
