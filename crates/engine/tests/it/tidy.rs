//! The tidy test (as rust-analyzer keeps one): rules about the code itself
//! that hold for every file, checked by reading the sources.
//!
//! Failing: the engine depends on nothing web, reads no clock, starts no
//! thread, asks the OS for nothing (files, environment, network,
//! randomness), and uses hash collections only where a file below says why
//! their order cannot leak; no engine or driver code calls `unwrap` outside
//! its tests.
//!
//! Reported, not failing (a list to shrink): files over 800 lines and
//! functions over 100 lines.
//!
//! Failing too: web code that reads meaning out of text the engine wrote
//! for people (summaries, trace lines, node names, roles as strings).

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|extension| extension == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The lines of `text` that are code: comments and doc comments dropped.
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(index, line)| (index + 1, line))
        .filter(|(_, line)| !line.trim_start().starts_with("//"))
}

fn relative(path: &Path) -> String {
    path.strip_prefix(repo()).unwrap_or(path).to_string_lossy().into_owned()
}

#[test]
fn the_engine_depends_on_nothing_web() {
    let manifest = std::fs::read_to_string(repo().join("crates/engine/Cargo.toml")).expect("engine manifest");
    let dependencies = manifest
        .split("[dependencies]")
        .nth(1)
        .and_then(|rest| rest.split("\n[").next())
        .unwrap_or_default();
    for web in ["wasm-bindgen", "web-sys", "js-sys", "yew", "gloo", "getrandom", "rand"] {
        assert!(
            !dependencies.lines().any(|line| line.trim_start().starts_with(web)),
            "the engine depends on {web}"
        );
    }
}

#[test]
fn the_engine_reads_no_clock_starts_no_thread_and_asks_the_os_for_nothing() {
    let forbidden = [
        "std::time",
        "Instant::",
        "SystemTime",
        "std::thread",
        "thread::spawn",
        "std::fs",
        "std::env",
        "std::net",
        "std::process",
        "thread_rng",
        "getrandom",
    ];
    let mut found = Vec::new();
    for file in rust_files(&repo().join("crates/engine/src")) {
        let text = std::fs::read_to_string(&file).expect("source");
        for (number, line) in code_lines(&text) {
            for pattern in forbidden {
                if line.contains(pattern) {
                    found.push(format!("{}:{number}: {pattern}", relative(&file)));
                }
            }
        }
    }
    assert!(found.is_empty(), "{found:#?}");
}

/// Hash collections iterate in an order that may differ between builds;
/// the engine keeps them to lookups, in these files only.
const HASH_COLLECTIONS_ALLOWED: [(&str, &str); 1] = [(
    "crates/engine/src/groups/assignors/sticky.rs",
    "a name-to-index lookup with a fixed FNV hasher, never iterated",
)];

#[test]
fn the_engine_uses_hash_collections_only_where_their_order_cannot_leak() {
    let mut found = Vec::new();
    for file in rust_files(&repo().join("crates/engine/src")) {
        let name = relative(&file);
        if HASH_COLLECTIONS_ALLOWED.iter().any(|(allowed, _)| *allowed == name) {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("source");
        for (number, line) in code_lines(&text) {
            if line.contains("HashMap") || line.contains("HashSet") {
                found.push(format!("{name}:{number}: {}", line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "{found:#?}");
}

/// Function lengths, by brace counting from each `fn` line (good enough
/// for a report).
fn long_functions(text: &str, limit: usize) -> Vec<(usize, String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut long = Vec::new();
    for (start, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let is_fn = ["fn ", "pub fn ", "pub(crate) fn ", "async fn ", "pub async fn "]
            .iter()
            .any(|prefix| trimmed.starts_with(prefix));
        if !is_fn || trimmed.ends_with(';') {
            continue;
        }
        let mut depth = 0i64;
        let mut opened = false;
        for (offset, body) in lines[start..].iter().enumerate() {
            for character in body.chars() {
                match character {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if opened && depth <= 0 {
                if offset + 1 > limit {
                    let name = trimmed
                        .split("fn ")
                        .nth(1)
                        .and_then(|rest| rest.split(['(', '<']).next())
                        .unwrap_or("?")
                        .to_string();
                    long.push((start + 1, name, offset + 1));
                }
                break;
            }
        }
    }
    long
}

/// Patterns by which web code would read meaning out of text the engine
/// wrote for people (issue #13, item 1): it gets typed facts instead.
const ENGINE_TEXT_READING: &[&str] = &[
    // A message summary or a trace line taken apart.
    "summary.contains(",
    "summary.matches(",
    "summary.split",
    "summary.find(",
    "summary.starts_with(",
    "summary.strip_prefix(",
    ".line().split",
    ".line().find(",
    "number_after(",
    "description.starts_with(",
    // Node ids written or read by hand instead of by `NodeId`'s `Display`
    // and `selection::parse_node`.
    "\"broker-\"",
    "\"controller-\"",
    "\"consumer-\"",
    "\"producer-\"",
    "broker-{",
    "controller-{",
    "consumer-{",
    "producer-{",
    // Roles, phases, states and message names compared as text.
    "role == \"",
    "role != \"",
    "phase == \"",
    "phase != \"",
    "status == \"",
    "status != \"",
    "name == \"Fetch",
    "name == \"Metadata",
    "name == \"Produce",
    "name == \"FindCoordinator",
    "error_name(",
];

/// The lines of a web file's code (not its comments or its tests) that
/// read engine text. `selection.rs` is where selection keys are written and
/// read back, in one place.
fn engine_text_reading(name: &str, text: &str) -> Vec<(usize, String)> {
    if name.ends_with("selection.rs") {
        return Vec::new();
    }
    let code = text.split("#[cfg(test)]").next().unwrap_or_default();
    code_lines(code)
        .filter(|(_, line)| ENGINE_TEXT_READING.iter().any(|pattern| line.contains(pattern)))
        .map(|(number, line)| (number, line.trim().to_string()))
        .collect()
}

#[test]
fn no_driver_or_engine_code_unwraps() {
    // User input reaches the engine through every driver; a failure is an
    // error that says what is wrong, and an `expect` names the invariant
    // that makes it impossible. Tests may unwrap.
    let mut found = Vec::new();
    for crate_dir in ["engine", "js", "cli", "web"] {
        for file in rust_files(&repo().join("crates").join(crate_dir).join("src")) {
            let text = std::fs::read_to_string(&file).expect("source");
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            for (line, content) in code_lines(code).filter(|(_, line)| line.contains(".unwrap()")) {
                found.push(format!("{}:{line}: {}", relative(&file), content.trim()));
            }
        }
    }
    assert!(found.is_empty(), "unwrap outside tests:\n{}", found.join("\n"));
}

#[test]
fn the_web_reads_no_engine_text() {
    let mut found = Vec::new();
    for file in rust_files(&repo().join("crates/web/src")) {
        let text = std::fs::read_to_string(&file).expect("source");
        let name = relative(&file);
        for (line, code) in engine_text_reading(&name, &text) {
            found.push(format!("{name}:{line}: {code}"));
        }
    }
    assert!(
        found.is_empty(),
        "the web reads engine text; give it typed facts instead:\n{}",
        found.join("\n")
    );
    // The check itself catches what it is for.
    assert_eq!(
        engine_text_reading(
            "x.rs",
            "if summary.contains(\"acks=all\") {}\nlet a = role == \"leader\";\n"
        )
        .len(),
        2
    );
}

#[test]
fn report_long_files_and_functions() {
    let mut report = Vec::new();
    for crate_dir in ["engine", "web", "js", "cli", "xtask"] {
        for file in rust_files(&repo().join("crates").join(crate_dir).join("src")) {
            let text = std::fs::read_to_string(&file).expect("source");
            let name = relative(&file);
            let lines = text.lines().count();
            if lines > 800 {
                report.push(format!("file over 800 lines: {name} ({lines})"));
            }
            for (line, function, length) in long_functions(&text, 100) {
                report.push(format!("function over 100 lines: {name}:{line} {function} ({length})"));
            }
        }
    }
    // A list to shrink, printed with `--nocapture`; it never fails.
    eprintln!("tidy report ({} items):\n{}", report.len(), report.join("\n"));
    assert!(long_functions("fn a() {\n}\n", 1).len() == 1);
}
