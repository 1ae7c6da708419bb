//! `kafkascope`: the engine from a terminal.
//!
//! The CLI is a thin driver: it parses arguments, calls the engine and prints
//! the answer. Anything it computes, the web app and the JavaScript API
//! compute the same way, because all three call the same engine functions.

use std::process::ExitCode;

use std::io::Read;

use kafkascope_engine::groups::assignors::{assign, assign_explained, GroupInput, Strategy};
use kafkascope_engine::partitioning::{murmur2, partition_for_key};

const USAGE: &str = "\
usage: kafkascope <command> [options]

commands:
  partition --partitions N KEY...   print, for each key: key, murmur2, partition
  assign --strategy S [--explain]   read a group as JSON on stdin, print its assignment as JSON
                                    (S: range, roundrobin, sticky, cooperative-sticky, uniform, server-range); --explain adds the
                                    moves, revocations, per-member counts and a reason per partition
  run FILE [--json]                 play a scenario: print its trace as it happens and a summary; exit
                                    non-zero if an expected outcome did not happen; --json prints one
                                    JSON object per line (type event for each trace event, then type summary)
  fuzz [--seeds N] [--from S] [--mix M] [--out DIR]
                                    run N random fault schedules (default 1000, from seed S, default 0;
                                    M: all, brokers, controllers, network, clients) and check safety and
                                    recovery; each failure prints its seed and writes a minimised scenario
                                    to DIR (default target/fuzz-failures); exit 1 if any failed
  help                              print this text";

fn main() -> ExitCode {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    match run(&arguments) {
        Ok(output) => {
            print!("{output}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("kafkascope: {message}");
            ExitCode::from(2)
        }
    }
}

/// Runs one command line and returns what to print, or a one-line error.
fn run(arguments: &[String]) -> Result<String, String> {
    match arguments.first().map(String::as_str) {
        Some("partition") => partition(&arguments[1..]),
        Some("assign") => {
            let input = read_bounded(std::io::stdin(), "stdin")?;
            assign_command(&arguments[1..], &input)
        }
        Some("run") => run_scenario(&arguments[1..]),
        Some("fuzz") => fuzz(&arguments[1..]),
        Some("help" | "--help" | "-h") | None => Ok(format!("{USAGE}\n")),
        Some(other) => Err(format!("unknown command {other:?}; try `kafkascope help`")),
    }
}

/// Reads a whole input document, refusing one above
/// [`kafkascope_engine::limits::MAX_INPUT_BYTES`] before holding it all.
fn read_bounded(reader: impl Read, name: &str) -> Result<String, String> {
    use kafkascope_engine::limits::{at_most, MAX_INPUT_BYTES};
    let mut input = String::new();
    reader
        .take(MAX_INPUT_BYTES + 1)
        .read_to_string(&mut input)
        .map_err(|error| format!("cannot read {name}: {error}"))?;
    at_most("the input's size in bytes", input.len() as u64, MAX_INPUT_BYTES)
        .map_err(|error| format!("{name}: {error}"))?;
    Ok(input)
}

/// `kafkascope partition --partitions N KEY...`: keys are strings, hashed as
/// their UTF-8 bytes (Kafka's StringSerializer). One tab-separated line per
/// key: the key, its murmur2, its partition.
fn partition(arguments: &[String]) -> Result<String, String> {
    let mut partition_count: Option<u32> = None;
    let mut keys = Vec::new();
    let mut rest = arguments.iter();
    while let Some(argument) = rest.next() {
        if argument == "--partitions" || argument == "-p" {
            let value = rest.next().ok_or("--partitions needs a number")?;
            partition_count = Some(parse_partition_count(value)?);
        } else if let Some(value) = argument.strip_prefix("--partitions=") {
            partition_count = Some(parse_partition_count(value)?);
        } else if argument == "--" {
            keys.extend(rest.by_ref().cloned());
        } else if argument.starts_with("--") {
            return Err(format!("unknown option {argument:?} for partition"));
        } else {
            keys.push(argument.clone());
        }
    }
    let partition_count = partition_count.ok_or("partition needs --partitions N")?;
    if keys.is_empty() {
        return Err("partition needs at least one KEY".into());
    }
    let mut output = String::new();
    for key in keys {
        let bytes = key.as_bytes();
        let partition = partition_for_key(bytes, partition_count).expect("count checked to be at least 1");
        output.push_str(&format!("{key}\t{}\t{partition}\n", murmur2(bytes)));
    }
    Ok(output)
}

fn parse_partition_count(value: &str) -> Result<u32, String> {
    match value.parse::<u32>() {
        Ok(count) if count >= 1 => Ok(count),
        _ => Err(format!(
            "--partitions must be a whole number of at least 1, got {value:?}"
        )),
    }
}

/// `kafkascope assign --strategy S`: `input` is the group as JSON
/// (`{"topics": {...}, "members": [...]}`); the answer is
/// `{"memberId": ["topic-partition", ...]}`.
fn assign_command(arguments: &[String], input: &str) -> Result<String, String> {
    let mut strategy = None;
    let mut explain = false;
    let mut rest = arguments.iter();
    while let Some(argument) = rest.next() {
        if argument == "--explain" {
            explain = true;
            continue;
        }
        let value = if argument == "--strategy" || argument == "-s" {
            rest.next().ok_or("--strategy needs a name")?.as_str()
        } else if let Some(value) = argument.strip_prefix("--strategy=") {
            value
        } else {
            return Err(format!("unknown option {argument:?} for assign"));
        };
        strategy = Some(Strategy::from_name(value).ok_or_else(|| {
            let names: Vec<&str> = Strategy::ALL.iter().map(|strategy| strategy.name()).collect();
            format!("unknown strategy {value:?}; choose one of {}", names.join(", "))
        })?);
    }
    let strategy = strategy.ok_or("assign needs --strategy S")?;
    let group: GroupInput = serde_json::from_str(input).map_err(|error| format!("bad group JSON on stdin: {error}"))?;
    let json = if explain {
        serde_json::to_string_pretty(&assign_explained(strategy, &group).map_err(|error| error.to_string())?)
    } else {
        serde_json::to_string(&assign(strategy, &group).map_err(|error| error.to_string())?)
    }
    .map_err(|error| error.to_string())?;
    Ok(format!("{json}\n"))
}

/// `kafkascope run FILE`: the trace, one event per line, then a summary and
/// the expectations. A failed expectation is an error (exit code 1 via
/// `main`'s error path would print only one line, so the full report is
/// printed and the failure reported after it).
fn run_scenario(arguments: &[String]) -> Result<String, String> {
    use std::io::Write;
    let (json, path) = match arguments {
        [flag, path] if flag == "--json" => (true, path),
        [path, flag] if flag == "--json" => (true, path),
        [path] if !path.starts_with("--") => (false, path),
        _ => return Err("run needs exactly one scenario FILE (and optionally --json)".into()),
    };
    let file = std::fs::File::open(path).map_err(|error| format!("cannot read {path}: {error}"))?;
    let text = read_bounded(file, path)?;
    let scenario = kafkascope_engine::sim::scenario::Scenario::from_json(&text)?;
    // The trace is streamed, never held: a long run prints as it goes in
    // bounded memory.
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut write_error = None;
    let outcome = scenario.run_streaming(&mut |event| {
        if write_error.is_some() {
            return;
        }
        let written = if json {
            serde_json::to_string(&serde_json::json!({ "type": "event", "event": event }))
                .map_err(std::io::Error::other)
                .and_then(|line| writeln!(out, "{line}"))
        } else {
            writeln!(out, "{}", event.line())
        };
        if let Err(error) = written {
            write_error = Some(error);
        }
    })?;
    if let Some(error) = write_error {
        return Err(format!("cannot write the trace: {error}"));
    }
    let summary = &outcome.summary;
    let lost = outcome.simulation.lost_records();
    let mut report = String::new();
    if json {
        let line = serde_json::json!({
            "type": "summary",
            "summary": summary,
            "lostRecords": lost,
            "expectations": scenario.expect.len(),
            "failures": outcome.failures,
        });
        report.push_str(&format!("{line}\n"));
    } else {
        report.push_str(&format!(
            "\nsummary: {} produced, {} acknowledged, {} lost, {} duplicated, {} failed; {} leader elections; {} invariant violations; {} events in {} ms\n",
            summary.produced,
            summary.acknowledged,
            summary.lost,
            summary.duplicated,
            summary.failed,
            summary.leader_elections,
            summary.invariant_violations,
            summary.events,
            summary.time_ms
        ));
        if !lost.is_empty() {
            report.push_str(&format!(
                "lost records: {}\n",
                kafkascope_engine::sim::trace::ranges(&lost)
            ));
        }
        if outcome.failures.is_empty() {
            report.push_str(&format!("expectations: all {} met\n", scenario.expect.len()));
        }
    }
    if outcome.failures.is_empty() {
        out.write_all(report.as_bytes()).map_err(|error| error.to_string())?;
        out.flush().map_err(|error| error.to_string())?;
        Ok(String::new())
    } else {
        out.write_all(report.as_bytes()).map_err(|error| error.to_string())?;
        out.flush().map_err(|error| error.to_string())?;
        Err(format!(
            "{} expectation(s) not met: {}",
            outcome.failures.len(),
            outcome.failures.join("; ")
        ))
    }
}

/// `kafkascope fuzz`: random fault schedules checked for safety and
/// liveness, with a progress line; failures are minimised and written as
/// scenario files. The wall-clock figures are the driver's, not the engine's.
fn fuzz(arguments: &[String]) -> Result<String, String> {
    use kafkascope_engine::sim::fuzz::{minimise, FuzzCase, Mix};
    use std::io::Write;
    let mut seeds: u64 = 1_000;
    let mut from: u64 = 0;
    let mut mix = Mix::All;
    let mut out = std::path::PathBuf::from("target/fuzz-failures");
    let mut rest = arguments.iter();
    while let Some(argument) = rest.next() {
        let mut value = |name: &str| rest.next().cloned().ok_or_else(|| format!("{name} needs a value"));
        match argument.as_str() {
            "--seeds" => {
                seeds = value("--seeds")?
                    .parse()
                    .map_err(|_| "--seeds needs a number".to_string())?
            }
            "--from" => {
                from = value("--from")?
                    .parse()
                    .map_err(|_| "--from needs a number".to_string())?
            }
            "--mix" => mix = Mix::parse(&value("--mix")?)?,
            "--out" => out = value("--out")?.into(),
            other => return Err(format!("unknown fuzz option {other:?}; try `kafkascope help`")),
        }
    }
    let started = std::time::Instant::now();
    let mut failed: Vec<(u64, &'static str, String)> = Vec::new();
    let mut slowest = (0u64, std::time::Duration::ZERO, 0u64);
    let mut operator_cases = 0u64;
    let mut stderr = std::io::stderr();
    for (done, seed) in (from..from + seeds).enumerate() {
        let case = FuzzCase::generate(seed, mix);
        let run_started = std::time::Instant::now();
        let verdict = match std::panic::catch_unwind(|| case.run()) {
            Ok(verdict) => verdict,
            Err(panic) => {
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|text| text.to_string()))
                    .unwrap_or_default();
                let _ = writeln!(stderr, "\rseed {seed} crashed: {message}");
                failed.push((seed, "crash", message));
                continue;
            }
        };
        if !verdict.operator.is_empty() {
            operator_cases += 1;
        }
        let took = run_started.elapsed();
        if took > slowest.1 {
            slowest = (seed, took, verdict.events);
        }
        if !verdict.passed() {
            let first = verdict
                .safety
                .first()
                .or(verdict.liveness.first())
                .cloned()
                .unwrap_or_default();
            let _ = writeln!(stderr, "\rseed {seed} failed ({}): {first}", verdict.class());
            let minimal = minimise(&case);
            std::fs::create_dir_all(&out).map_err(|error| format!("cannot create {}: {error}", out.display()))?;
            let path = out.join(format!("fuzz-seed-{seed}.json"));
            let text = serde_json::to_string_pretty(&minimal.scenario()).map_err(|error| error.to_string())?;
            std::fs::write(&path, text + "\n").map_err(|error| format!("cannot write {}: {error}", path.display()))?;
            let _ = writeln!(
                stderr,
                "  minimised to {} inputs: replay with `kafkascope run {}`",
                minimal.inputs.len(),
                path.display()
            );
            failed.push((seed, verdict.class(), first));
        }
        let done = done as u64 + 1;
        if done % 50 == 0 || done == seeds {
            let rate = done as f64 / started.elapsed().as_secs_f64().max(1e-9);
            let _ = write!(
                stderr,
                "\rfuzz: {done}/{seeds} seeds, {} failed, {rate:.1} seeds/s   ",
                failed.len()
            );
            let _ = stderr.flush();
        }
    }
    let _ = writeln!(stderr);
    let elapsed = started.elapsed().as_secs_f64();
    let mut report = format!(
        "fuzz: {seeds} seeds ({from}..{}), mix {mix:?}: {} safety failures, {} liveness failures, {} crashes; \
         {:.1} seeds/s over {elapsed:.1} s; slowest seed {} ({} events, {:.0} ms); \
         {operator_cases} seeds needed an operator's unclean leader election (KIP-966 keeps a partition \
         offline when every replica that could lead cleanly restarted after an unclean shutdown)\n",
        from + seeds,
        failed.iter().filter(|(_, class, _)| *class == "safety").count(),
        failed.iter().filter(|(_, class, _)| *class == "liveness").count(),
        failed.iter().filter(|(_, class, _)| *class == "crash").count(),
        seeds as f64 / elapsed.max(1e-9),
        slowest.0,
        slowest.2,
        slowest.1.as_secs_f64() * 1_000.0
    );
    if failed.is_empty() {
        Ok(report)
    } else {
        for (seed, class, first) in &failed {
            report.push_str(&format!("seed {seed} ({class}): {first}\n"));
        }
        print!("{report}");
        Err(format!("{} of {seeds} seeds failed", failed.len()))
    }
}
