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
//! functions over 100 lines. Failing: a web function over 150 lines.
//!
//! Failing too: web code that reads meaning out of text the engine wrote
//! for people (summaries, trace lines, node names, roles as strings); a
//! module below `sim` that imports it, `protocol` importing any other
//! engine module, any circle of imports among the engine's modules, and a
//! process that runs behind a context naming the `Simulation`.

use std::collections::{BTreeMap, BTreeSet};
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

/// Issue 35: the standard library's sorts are generic over the element and
/// the comparison, so every call site added a copy of driftsort to the
/// page's WebAssembly (about 250 KB for 70 copies). The engine and the page
/// sort through `kafkascope_engine::sorting`, and build ordered collections
/// with its `gather` (`collect` into a `BTreeMap` or `BTreeSet` sorts too).
#[test]
fn engine_and_page_sort_with_the_one_shared_sort() {
    const STD_SORTS: &[&str] = &[
        ".sort()",
        ".sort_by(",
        ".sort_by_key(",
        ".sort_unstable",
        ".sort_by_cached_key(",
        "collect::<BTreeMap",
        "collect::<BTreeSet",
        "collect::<std::collections::BTree",
        "BTreeMap::from([",
        "BTreeSet::from([",
    ];
    let mut found = Vec::new();
    for crate_dir in ["engine", "web"] {
        for file in rust_files(&repo().join("crates").join(crate_dir).join("src")) {
            let text = std::fs::read_to_string(&file).expect("source");
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            for (line, content) in code_lines(code).filter(|(_, line)| STD_SORTS.iter().any(|sort| line.contains(sort)))
            {
                found.push(format!("{}:{line}: {}", relative(&file), content.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "the standard library's sort, not kafkascope_engine::sorting:\n{}",
        found.join("\n")
    );
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

/// The longest a web function may be (issue #32, item 5): a component
/// is made of sub-components, hooks and helpers with typed arguments.
const WEB_FUNCTION_LINES: usize = 150;

#[test]
fn no_web_function_is_over_150_lines() {
    let mut long = Vec::new();
    for file in rust_files(&repo().join("crates/web/src")) {
        let text = std::fs::read_to_string(&file).expect("source");
        for (line, function, length) in long_functions(&text, WEB_FUNCTION_LINES) {
            long.push(format!("{}:{line} {function} ({length} lines)", relative(&file)));
        }
    }
    assert!(
        long.is_empty(),
        "web functions over {WEB_FUNCTION_LINES} lines; split them into parts with typed arguments:\n{}",
        long.join("\n")
    );
}

/// The longest an engine function may be outside the tests (issue #33,
/// item 5): a long handler is cut into named parts, a long text function
/// into per-message ones.
const ENGINE_FUNCTION_LINES: usize = 120;

#[test]
fn no_engine_function_is_over_120_lines_outside_the_tests() {
    let mut long = Vec::new();
    for file in rust_files(&repo().join("crates/engine/src")) {
        let text = std::fs::read_to_string(&file).expect("source");
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (line, function, length) in long_functions(code, ENGINE_FUNCTION_LINES) {
            long.push(format!("{}:{line} {function} ({length} lines)", relative(&file)));
        }
    }
    assert!(
        long.is_empty(),
        "engine functions over {ENGINE_FUNCTION_LINES} lines; cut them into named parts:\n{}",
        long.join("\n")
    );
}

/// The longest an engine file may be outside its tests (issue #33, item
/// 5: a file a person can hold in their head). A process's handlers are
/// rooms of its own module (`sim/broker/`, `sim/consumer/`, ...).
const ENGINE_FILE_LINES: usize = 1_250;

#[test]
fn no_engine_file_is_over_1250_lines_outside_its_tests() {
    let mut long = Vec::new();
    for file in rust_files(&repo().join("crates/engine/src")) {
        let text = std::fs::read_to_string(&file).expect("source");
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        let lines = code.lines().count();
        if lines > ENGINE_FILE_LINES {
            long.push(format!("{} ({lines} lines)", relative(&file)));
        }
    }
    assert!(
        long.is_empty(),
        "engine files over {ENGINE_FILE_LINES} lines outside their tests; give them rooms:\n{}",
        long.join("\n")
    );
}

/// The processes that run as their own state machines (issue 33, item
/// 2): each owns its state and handles its messages, timers and inputs
/// with `&mut self` and a narrow context: the producer its
/// `ProducerContext`, the consumer (with its application) its
/// `ConsumerContext`, the broker (its replica manager, group and
/// transaction coordinators) its `BrokerContext` and the controller
/// quorum its `QuorumContext`
/// (`sim::contexts`), the active controller's decisions their `Decision`
/// (the working metadata image, held sends and trace facts).
const BEHIND_A_CONTEXT: [&str; 5] = [
    "crates/engine/src/sim/broker",
    "crates/engine/src/sim/producer",
    "crates/engine/src/sim/consumer",
    "crates/engine/src/sim/controller.rs",
    "crates/engine/src/sim/quorum",
];

/// Architecture Invariant: a process behind a context never reaches the
/// simulation, so what its handlers may change is its own state and what
/// the context offers, not a convention. Its files never name
/// `Simulation` outside their unit tests, and nothing in them is an
/// `impl` of it.
#[test]
fn processes_behind_a_context_never_reach_the_simulation() {
    let mut found = Vec::new();
    for dir in BEHIND_A_CONTEXT {
        let path = repo().join(dir);
        let files = if path.is_file() { vec![path] } else { rust_files(&path) };
        assert!(!files.is_empty(), "{dir} has no files");
        for file in files {
            let text = std::fs::read_to_string(&file).expect("source");
            // A process's unit tests may build a whole cluster around it.
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            for (number, line) in code_lines(code) {
                if line.contains("Simulation") {
                    found.push(format!("{}:{number}: {}", relative(&file), line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "a process behind a context reaches the simulation:\n{}",
        found.join("\n")
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

// ----- imports between the engine's modules -----

/// The engine's modules by path (`sim::broker`, `groups::assignors`; the
/// crate root is ``), each with its code: comments dropped, and its tests
/// (whose `super` is the file itself, not its parent).
fn engine_modules() -> BTreeMap<String, String> {
    let source = repo().join("crates/engine/src");
    rust_files(&source)
        .into_iter()
        .map(|file| {
            let mut parts: Vec<String> = file
                .strip_prefix(&source)
                .expect("under src")
                .with_extension("")
                .components()
                .map(|part| part.as_os_str().to_string_lossy().into_owned())
                .collect();
            if parts.last().is_some_and(|last| last == "mod" || last == "lib") {
                parts.pop();
            }
            let text = std::fs::read_to_string(&file).expect("source");
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            let code: Vec<&str> = code_lines(code).map(|(_, line)| line).collect();
            (parts.join("::"), code.join("\n"))
        })
        .collect()
}

fn is_identifier(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// Parses a path at `start` of `code`, with its `{…}` groups expanded
/// (`super::{a::B, c}` gives `super::a::B` and `super::c`): the paths and
/// where the text after them begins.
fn parse_path(code: &[u8], start: usize) -> (Vec<Vec<String>>, usize) {
    let skip_spaces = |mut at: usize| {
        while at < code.len() && code[at].is_ascii_whitespace() {
            at += 1;
        }
        at
    };
    let mut segments = Vec::new();
    let mut at = start;
    loop {
        at = skip_spaces(at);
        if code.get(at) == Some(&b'{') {
            // A group: each item is a path of its own after the prefix.
            let mut paths = Vec::new();
            at += 1;
            loop {
                at = skip_spaces(at);
                match code.get(at) {
                    None => return (paths, at),
                    Some(b'}') => return (paths, at + 1),
                    Some(b',') => at += 1,
                    Some(_) => {
                        let (items, end) = parse_path(code, at);
                        for item in items {
                            paths.push(segments.iter().cloned().chain(item).collect());
                        }
                        at = end.max(at + 1);
                    }
                }
            }
        }
        let end = if code.get(at) == Some(&b'*') {
            at + 1
        } else {
            (at..code.len())
                .find(|&index| !is_identifier(code[index]))
                .unwrap_or(code.len())
        };
        if end == at {
            return (vec![segments], at);
        }
        segments.push(String::from_utf8_lossy(&code[at..end]).into_owned());
        at = end;
        if code[at..].starts_with(b"::") {
            at += 2;
        } else {
            return (vec![segments], at);
        }
    }
}

/// The modules `module`'s code refers to through `crate::`, `super::`,
/// `self::` or a child module's name, other than itself and its own
/// children (a module that uses what it contains is how Rust modules are
/// composed; a circle is two modules each needing the other from outside).
fn imports_of(module: &str, code: &str, modules: &BTreeMap<String, String>) -> BTreeSet<String> {
    let own: Vec<&str> = if module.is_empty() {
        Vec::new()
    } else {
        module.split("::").collect()
    };
    let is_child = |name: &str| {
        let child = own.iter().copied().chain([name]).collect::<Vec<_>>().join("::");
        modules.contains_key(&child)
    };
    let code = code.as_bytes();
    let mut imports = BTreeSet::new();
    let mut at = 0;
    while at < code.len() {
        let starts_path = is_identifier(code[at]) && (at == 0 || !is_identifier(code[at - 1]) && code[at - 1] != b':');
        if !starts_path {
            at += 1;
            continue;
        }
        let (paths, end) = parse_path(code, at);
        at = end.max(at + 1);
        for path in paths.into_iter().filter(|path| path.len() > 1) {
            let mut base: Vec<&str> = own.clone();
            let rest = match path[0].as_str() {
                "crate" => {
                    base.clear();
                    &path[1..]
                }
                "self" => &path[1..],
                "super" => {
                    let supers = path.iter().take_while(|segment| *segment == "super").count();
                    base.truncate(own.len().saturating_sub(supers));
                    &path[supers..]
                }
                name if is_child(name) => &path[..],
                _ => continue,
            };
            let full: Vec<&str> = base.into_iter().chain(rest.iter().map(String::as_str)).collect();
            let target = (1..=full.len())
                .rev()
                .map(|length| full[..length].join("::"))
                .find(|candidate| modules.contains_key(candidate));
            if let Some(target) = target {
                let inside = module.is_empty() || target == module || target.starts_with(&format!("{module}::"));
                if !inside {
                    imports.insert(target);
                }
            }
        }
    }
    imports
}

/// Each engine module with the modules it imports.
fn import_graph() -> BTreeMap<String, BTreeSet<String>> {
    let modules = engine_modules();
    modules
        .iter()
        .map(|(module, code)| (module.clone(), imports_of(module, code, &modules)))
        .collect()
}

/// The circles of `graph`: its strongly connected components of more
/// than one module (two modules are in one when each reaches the other).
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    let reachable = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut pending = vec![from];
        while let Some(module) = pending.pop() {
            for next in graph.get(module).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    pending.push(next);
                }
            }
        }
        seen
    };
    let reach: BTreeMap<&String, BTreeSet<String>> = graph.keys().map(|module| (module, reachable(module))).collect();
    let mut circles: Vec<BTreeSet<String>> = Vec::new();
    for (module, reached) in &reach {
        if circles.iter().any(|circle| circle.contains(*module)) {
            continue;
        }
        let circle: BTreeSet<String> = reached
            .iter()
            .filter(|other| reach.get(other).is_some_and(|back| back.contains(*module)))
            .cloned()
            .collect();
        if circle.len() > 1 {
            circles.push(circle);
        }
    }
    circles
}

fn in_sim(module: &str) -> bool {
    module == "sim" || module.starts_with("sim::")
}

/// Architecture Invariant: nothing below the simulator imports it. The
/// layers under `sim` (`protocol`, `groups`, `storage`, `replication`,
/// `controller`, `txn_coordinator`, …) take Kafka's vocabulary from
/// `protocol`, so each can be read and tested without the simulator.
#[test]
fn nothing_below_the_simulator_imports_it() {
    let found: Vec<String> = import_graph()
        .iter()
        .filter(|(module, _)| !in_sim(module))
        .flat_map(|(module, imports)| {
            imports
                .iter()
                .filter(|target| in_sim(target))
                .map(move |target| format!("{module} imports {target}"))
        })
        .collect();
    assert!(found.is_empty(), "modules below sim import it:\n{}", found.join("\n"));
}

/// `protocol` is the bottom layer: it imports nothing of the engine but
/// itself and `sorting` (the engine's one sort, which imports nothing).
#[test]
fn the_protocol_imports_nothing_of_the_engine() {
    let graph = import_graph();
    assert_eq!(
        graph.get("sorting"),
        Some(&BTreeSet::new()),
        "sorting imports nothing of the engine"
    );
    let found: Vec<String> = graph
        .iter()
        .filter(|(module, _)| module.starts_with("protocol"))
        .flat_map(|(module, imports)| {
            imports
                .iter()
                .filter(|target| !target.starts_with("protocol") && *target != "sorting")
                .map(move |target| format!("{module} imports {target}"))
        })
        .collect();
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// Architecture Invariant: no two modules of the engine import each other,
/// directly or through others, so each can be read knowing only what it
/// imports. (Issue 33's first slices broke up the circles `sim` had: the
/// processes, the network, the trace and the messages reaching each other,
/// and the fuzzer and the scenario format.)
#[test]
fn modules_import_each_other_in_no_circle() {
    let found: Vec<String> = circles(&import_graph())
        .iter()
        .map(|circle| circle.iter().cloned().collect::<Vec<_>>().join(", "))
        .collect();
    assert!(found.is_empty(), "circles of imports:\n{}", found.join("\n"));
    // The check itself finds what it is for.
    let modules: BTreeMap<String, String> = [
        ("a", "use super::{b::Thing, c};"),
        ("b", "fn f() -> crate::a::X { todo!() }"),
        ("c", "use crate::a::{\n    Y,\n};"),
        ("d", "use crate::a::Y;"),
    ]
    .into_iter()
    .map(|(module, code)| (module.to_string(), code.to_string()))
    .collect();
    let graph: BTreeMap<String, BTreeSet<String>> = modules
        .iter()
        .map(|(module, code)| (module.clone(), imports_of(module, code, &modules)))
        .collect();
    assert_eq!(
        circles(&graph),
        vec![["a", "b", "c"].map(String::from).into_iter().collect::<BTreeSet<_>>()]
    );
}
