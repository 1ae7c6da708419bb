//! The page's views: one at a time, picked from the top bar or the
//! address.
//!
//! The page is an app with five views: Learn (the lesson and the path
//! through the stories), the Map, Stories (the sequence steps), the Sandbox
//! and the Partitioner. The address picks the view, so every address that
//! worked when the page was one long column still opens what it opened:
//! `#map`, `?story=…&step=…#steps`, `?run=…`, a knob link, `#qa`. The top
//! bar's links change the fragment, so the browser's Back moves between
//! views. This module is the pure part, tested natively; `app.rs` draws it.

use crate::lesson_model::LessonTab;

/// One view of the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum View {
    /// The lesson and the path through the stories: the page's home.
    #[default]
    Learn,
    /// The live map of a running cluster.
    Map,
    /// Sequence steps: a story, message by message.
    Stories,
    /// JavaScript snippets against the engine.
    Sandbox,
    /// Which partition a key goes to.
    Partitioner,
}

impl View {
    /// Every view, in the top bar's order.
    pub const ALL: [View; 5] = [View::Learn, View::Map, View::Stories, View::Sandbox, View::Partitioner];

    /// Its name: the `data-view` attribute and test ids.
    pub fn name(self) -> &'static str {
        match self {
            View::Learn => "learn",
            View::Map => "map",
            View::Stories => "stories",
            View::Sandbox => "sandbox",
            View::Partitioner => "partitioner",
        }
    }

    /// Its label in the top bar.
    pub fn label(self) -> &'static str {
        match self {
            View::Learn => "Learn",
            View::Map => "Map",
            View::Stories => "Stories",
            View::Sandbox => "Sandbox",
            View::Partitioner => "Partitioner",
        }
    }

    /// What the top bar's link says about it, for its title.
    pub fn description(self) -> &'static str {
        match self {
            View::Learn => "The lesson: the gist, tables, questions, exercises, and a path through the stories",
            View::Map => "A running cluster: click a broker, a replica or a client",
            View::Stories => "A story, message by message, as a sequence diagram",
            View::Sandbox => "Run JavaScript against the engine",
            View::Partitioner => "Which partition a key goes to, and what moves when partitions are added",
        }
    }

    /// The fragment its top-bar link sets (the id of its main section, as
    /// the one-column page had it).
    pub fn fragment(self) -> &'static str {
        match self {
            View::Learn => "#lesson",
            View::Map => "#map",
            View::Stories => "#steps",
            View::Sandbox => "#sandbox",
            View::Partitioner => "#partitioner",
        }
    }

    /// Whether it shows the simulator's module (which loads when it opens).
    pub fn needs_simulator(self) -> bool {
        matches!(self, View::Map | View::Stories)
    }

    /// The view named `name` (`data-view`), if any.
    pub fn named(name: &str) -> Option<View> {
        View::ALL.into_iter().find(|view| view.name() == name)
    }

    /// The view an address fragment opens, where the fragment alone says:
    /// a view's own section, the lesson's tabs and anchors, the Learn
    /// path, or the map's full inspector. `None` for an empty fragment or
    /// one this module does not know (the page then looks for the element
    /// it names).
    pub fn for_fragment(hash: &str) -> Option<View> {
        let id = hash.trim_start_matches('#');
        if id.is_empty() {
            return None;
        }
        if let Some(view) = View::ALL
            .into_iter()
            .find(|view| view.fragment().trim_start_matches('#') == id)
        {
            return Some(view);
        }
        match id {
            "learn" => return Some(View::Learn),
            "inspector-full" | "inspector" | "knobs" => return Some(View::Map),
            _ => {}
        }
        LessonTab::for_hash(id).map(|_| View::Learn)
    }

    /// The view an address opens: its fragment's view, else the view its
    /// parameters are for (a story, a step, forks or a scenario open
    /// Stories; a run link, a seed, a preset or a knob open the map; a
    /// code link opens the Sandbox), else Learn.
    pub fn for_address(query: &str, hash: &str) -> View {
        View::for_fragment(hash).unwrap_or_else(|| View::for_query(query))
    }

    /// The view an address's parameters are for.
    pub fn for_query(query: &str) -> View {
        let keys: Vec<&str> = query
            .trim_start_matches('?')
            .split('&')
            .filter_map(|pair| pair.split('=').next())
            .filter(|key| !key.is_empty())
            .collect();
        let has = |names: &[&str]| keys.iter().any(|key| names.contains(key));
        if has(&["story", "step", "fork", crate::sequence_model::SCENARIO_PARAM]) {
            View::Stories
        } else if has(&[
            crate::share::RUN_PARAM,
            "seed",
            "preset",
            crate::lesson_model::KNOB_PARAM,
        ]) {
            View::Map
        } else if has(&[crate::share::CODE_PARAM]) {
            View::Sandbox
        } else {
            View::Learn
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_old_address_opens_its_view() {
        let cases = [
            ("", "", View::Learn),
            ("", "#lesson", View::Learn),
            ("", "#qa", View::Learn),
            ("", "#gist", View::Learn),
            ("", "#glossary", View::Learn),
            ("", "#learn", View::Learn),
            ("", "#map", View::Map),
            ("", "#inspector-full", View::Map),
            ("", "#steps", View::Stories),
            ("", "#sandbox", View::Sandbox),
            ("", "#partitioner", View::Partitioner),
            ("?story=happy-path&step=4", "#steps", View::Stories),
            ("?story=happy-path", "", View::Stories),
            ("?story=exercise&step=41&fork=12:kill-1", "", View::Stories),
            ("?scenario=https%3A%2F%2Fx%2Fa.json", "", View::Stories),
            ("?run=abc", "", View::Map),
            ("?seed=7", "", View::Map),
            ("?preset=bench&play=0", "", View::Map),
            ("?code=abc", "", View::Sandbox),
            ("?play=0", "", View::Learn),
            ("?utm_source=x", "", View::Learn),
            // The fragment wins over the parameters, as it scrolled there.
            ("?story=happy-path", "#map", View::Map),
            ("?run=abc", "#qa", View::Learn),
        ];
        for (query, hash, view) in cases {
            assert_eq!(View::for_address(query, hash), view, "{query}{hash}");
        }
        let knob = format!("?{}=acks%3D1", crate::lesson_model::KNOB_PARAM);
        assert_eq!(View::for_address(&knob, ""), View::Map);
    }

    #[test]
    fn an_unknown_fragment_is_left_to_the_page() {
        assert_eq!(View::for_fragment("#nothing-here"), None);
        assert_eq!(View::for_fragment("#"), None);
        assert_eq!(View::for_fragment(""), None);
    }

    #[test]
    fn names_and_fragments_round_trip() {
        for view in View::ALL {
            assert_eq!(View::named(view.name()), Some(view));
            assert_eq!(View::for_fragment(view.fragment()), Some(view));
            assert!(!view.label().is_empty() && !view.description().is_empty());
        }
        assert!(View::Map.needs_simulator() && View::Stories.needs_simulator());
        assert!(!View::Learn.needs_simulator());
    }
}
