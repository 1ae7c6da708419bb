//! `cargo xtask bench`: the benchmarks, natively and as wasm in headless
//! Chromium. Benchmarks print figures; they never fail on a time.
//!
//! 1. Kafka's million-partition sticky scale case, natively
//!    (`crates/engine/benches/assignors.rs`), which also writes each step's
//!    input as JSON under `target/bench/`;
//! 2. the `kafkascope` CLI answering those inputs (release build);
//! 3. the same scale case and the simulator throughput run compiled to
//!    wasm, in headless Chromium (`crates/js/tests/bench_scale.rs`);
//! 4. the map's tick (one 16-ms frame at 100×: simulate 1.6 s, then the
//!    view, the map and the panels) for the bench preset, natively
//!    (`crates/web/examples/map_tick.rs`) and in the page in headless
//!    Chromium while it plays (`tests/bench/map-tick.bench.cjs`), and what
//!    the costliest inputs the page accepts cost there, at full speed and
//!    on a CPU slowed four times (`tests/bench/costly-inputs.bench.cjs`).

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::process::run;
use crate::setup::{ensure_browser, ensure_web_build_tools};
use crate::{repo_root, target_dir, Outcome};

pub fn bench_command() -> Outcome {
    let root = repo_root();
    let inputs = target_dir().join("bench");

    println!("\nxtask: [1/4] native: Kafka's scale case (sticky, cooperative-sticky) and simulator throughput");
    run(Command::new("cargo")
        .args([
            "bench",
            "--quiet",
            "--package",
            "kafkascope-engine",
            "--bench",
            "assignors",
            "--",
            "--write",
        ])
        .arg(&inputs)
        .current_dir(&root))?;

    run(Command::new("cargo")
        .args([
            "bench",
            "--quiet",
            "--package",
            "kafkascope-engine",
            "--bench",
            "simulator",
        ])
        .current_dir(&root))?;

    println!("\nxtask: [2/4] the kafkascope CLI on the scale case's inputs");
    run(Command::new("cargo")
        .args(["build", "--quiet", "--release", "--package", "kafkascope-cli"])
        .current_dir(&root))?;
    let cli = target_dir().join("release/kafkascope");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&inputs)
        .map_err(|error| format!("cannot list {}: {error}", inputs.display()))?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|extension| extension == "json"))
        .collect();
    files.sort();
    for file in files {
        let name = file.file_stem().unwrap_or_default().to_string_lossy().into_owned();
        // Files are named scale-<strategy>-<step>.json.
        let strategy = name
            .trim_start_matches("scale-")
            .rsplit_once('-')
            .map(|(strategy, _)| strategy.to_string());
        let Some(strategy) = strategy else { continue };
        let input = std::fs::File::open(&file).map_err(|error| format!("cannot open {}: {error}", file.display()))?;
        let started = Instant::now();
        let output = Command::new(&cli)
            .args(["assign", "--strategy", &strategy])
            .stdin(input)
            .stderr(Stdio::inherit())
            .output()
            .map_err(|error| format!("cannot run {}: {error}", cli.display()))?;
        let elapsed = started.elapsed();
        if !output.status.success() {
            return Err(format!("kafkascope assign failed on {}", file.display()));
        }
        let assignment: serde_json::Map<String, serde_json::Value> =
            serde_json::from_slice(&output.stdout).map_err(|error| {
                format!(
                    "kafkascope assign printed no JSON object for {}: {error}",
                    file.display()
                )
            })?;
        let partitions: usize = assignment
            .values()
            .map(|partitions| partitions.as_array().map_or(0, Vec::len))
            .sum();
        println!(
            "cli  {name:<40} {:>8.1} ms end to end (read, assign, write JSON): {} members, {partitions} partitions",
            elapsed.as_secs_f64() * 1000.0,
            assignment.len()
        );
    }

    println!("\nxtask: [3/4] wasm in headless Chromium: Kafka's scale case");
    let toolchain = ensure_web_build_tools()?;
    let browser = ensure_browser()?;
    run(toolchain
        .command("cargo")
        .args([
            "test",
            "--profile",
            "web",
            "--target",
            "wasm32-unknown-unknown",
            "--package",
            "kafkascope-js",
            "--test",
            "bench_scale",
            "--",
            "--include-ignored",
            "--nocapture",
        ])
        .env("CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER", "wasm-bindgen-test-runner")
        .env("CHROMEDRIVER", &browser.chromedriver)
        .env("WASM_BINDGEN_TEST_TIMEOUT", "600")
        .current_dir(&root))?;

    println!("\nxtask: [4/4] the live cluster's tick: natively, then simulation + render in the page");
    run(Command::new("cargo")
        .args([
            "run",
            "--quiet",
            "--release",
            "--package",
            "kafkascope-web",
            "--example",
            "map_tick",
        ])
        .current_dir(&root))?;
    let dist = crate::site::build_release(&toolchain)?;
    let listener = crate::serve::bind(Some(0))?;
    let port = listener.local_addr().map_err(|error| error.to_string())?.port();
    std::thread::spawn(move || crate::serve::serve_forever(listener, dist, "/".to_string()));
    for bench in ["map-tick", "costly-inputs"] {
        run(toolchain
            .command("node")
            .arg(root.join(format!("tests/bench/{bench}.bench.cjs")))
            .env("NODE_PATH", &toolchain.node_modules)
            .env("KAFKASCOPE_URL", format!("http://127.0.0.1:{port}/"))
            .env("CHROMIUM", &browser.chromium)
            .current_dir(&root))?;
    }
    Ok(())
}
