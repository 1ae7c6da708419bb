//! Embeds every scenario file of `scenarios/` in the app: those with a
//! `story` block become the guided stories, so a new story is one scenario
//! file (plus its golden trace) and no code.
//!
//! It also writes the stories' index (id, order, Learn sentence) on its own,
//! so the page's first module lists them on Learn without the scenario files
//! or the simulator (a native test holds it equal to the parsed stories).

use std::path::Path;

fn main() {
    let scenarios = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    println!("cargo:rerun-if-changed={}", scenarios.display());
    let mut files: Vec<_> = std::fs::read_dir(&scenarios)
        .expect("the scenarios folder")
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "json"))
        .collect();
    files.sort();
    let mut out = String::from("/// Every scenario file of `scenarios/`: its name and its text (compact).\npub const SCENARIO_FILES: &[(&str, &str)] = &[\n");
    let mut index: Vec<(u64, String, String)> = Vec::new();
    for file in files {
        // A file that does not parse is left out (the stories leave it out
        // too, and a test names it).
        let text = std::fs::read_to_string(&file).expect("a readable scenario file");
        println!("cargo:rerun-if-changed={}", file.display());
        let name = file.file_name().expect("a name").to_string_lossy().into_owned();
        if let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) {
            let story = &value["story"];
            if let (Some(id), Some(order), Some(learn)) =
                (story["id"].as_str(), story["order"].as_u64(), story["learn"].as_str())
            {
                index.push((order, id.to_string(), learn.to_string()));
            }
            // Shipped without the file's indentation (#35: the page's
            // weight); only parsed, never shown as written.
            let compact = serde_json::to_string(&value).expect("a JSON value serializes");
            out += &format!("    ({name:?}, {compact:?}),\n");
        } else {
            let path = file.canonicalize().expect("a path");
            out += &format!("    ({name:?}, include_str!({:?})),\n", path.display().to_string());
        }
    }
    out += "];\n";
    index.sort();
    out += "\n/// The stories in their order: id and Learn sentence.\npub const STORY_INDEX: &[(&str, &str)] = &[\n";
    for (_, id, learn) in index {
        out += &format!("    ({id:?}, {learn:?}),\n");
    }
    out += "];\n";
    let target = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("scenario_files.rs");
    std::fs::write(target, out).expect("written");
}
