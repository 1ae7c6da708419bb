//! Embeds every scenario file of `scenarios/` in the app: those with a
//! `story` block become the guided stories, so a new story is one scenario
//! file (plus its golden trace) and no code.

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
    let mut out = String::from("/// Every scenario file of `scenarios/`: its name and its text.\npub const SCENARIO_FILES: &[(&str, &str)] = &[\n");
    for file in files {
        println!("cargo:rerun-if-changed={}", file.display());
        let name = file.file_name().expect("a name").to_string_lossy().into_owned();
        let path = file.canonicalize().expect("a path");
        out += &format!("    ({name:?}, include_str!({:?})),\n", path.display().to_string());
    }
    out += "];\n";
    let target = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("scenario_files.rs");
    std::fs::write(target, out).expect("written");
}
