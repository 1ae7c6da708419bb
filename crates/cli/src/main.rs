//! `kafkascope`: the engine from a terminal.
//!
//! The CLI is a thin driver: it parses arguments, calls the engine and prints
//! the answer. Anything it computes, the web app and the JavaScript API
//! compute the same way, because all three call the same engine functions.

mod reference;

use std::path::PathBuf;
use std::process::ExitCode;

use std::io::Read;

use clap::{Parser, Subcommand};
use kafkascope_engine::groups::assignors::{assign, assign_explained, GroupInput, Strategy};
use kafkascope_engine::partitioning::{murmur2, partition_for_key};
use kafkascope_engine::sim::fuzz::Mix;

/// Apache Kafka's internals from a terminal: the same engine as the
/// kafkascope page, following Kafka 4.1's rules.
#[derive(Debug, Parser)]
#[command(name = "kafkascope", version, arg_required_else_help = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print, for each key: the key, its murmur2 hash and its partition, as
    /// Kafka's producer picks it for a keyed record (the key's UTF-8 bytes,
    /// as StringSerializer writes them).
    Partition {
        /// How many partitions the topic has.
        #[arg(short, long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        partitions: u32,
        /// The keys (after `--` if one starts with a dash).
        #[arg(required = true, value_name = "KEY")]
        keys: Vec<String>,
    },
    /// Read a group as JSON on stdin and print its assignment as JSON
    /// (`{"memberId": ["topic-partition", ...]}`).
    Assign {
        /// The assignor: range, roundrobin, sticky, cooperative-sticky,
        /// uniform or server-range.
        #[arg(short, long, value_name = "S", value_parser = parse_strategy)]
        strategy: Strategy,
        /// Add the moves, revocations, per-member counts and a reason per
        /// partition.
        #[arg(long)]
        explain: bool,
    },
    /// Play a scenario file: print its trace as it happens, then a summary;
    /// exit non-zero if an expected outcome did not happen.
    Run {
        /// The scenario (JSON; see `scenarios/`).
        file: PathBuf,
        /// Print one JSON object per line: `{"type":"event"}` for each trace
        /// event (typed fields), then `{"type":"summary"}` with the
        /// expectations' failures.
        #[arg(long)]
        json: bool,
        /// Print no trace, only the summary and the expectations (to time
        /// a long run, or to check it).
        #[arg(long)]
        quiet: bool,
    },
    /// Print the scenario file format: its JSON Schema, or its reference as
    /// Markdown or HTML (generated from the types the parser reads).
    Schema {
        /// json, markdown or html.
        #[arg(long, value_name = "F", default_value = "json", value_parser = ["json", "markdown", "html"])]
        format: String,
    },
    /// Run random fault schedules and check safety and recovery; each
    /// failure prints its seed and writes a minimised scenario file.
    Fuzz {
        /// How many schedules.
        #[arg(long, value_name = "N", default_value_t = 1_000)]
        seeds: u64,
        /// The first seed.
        #[arg(long, value_name = "S", default_value_t = 0)]
        from: u64,
        /// Which faults: all, brokers, controllers, network or clients.
        #[arg(long, value_name = "M", default_value = "all", value_parser = Mix::parse)]
        mix: Mix,
        /// Where minimised failures go.
        #[arg(long, value_name = "DIR", default_value = "target/fuzz-failures")]
        out: PathBuf,
        /// Run each schedule on at least this many brokers (a sweep over
        /// large shapes; the schedules are generated on 3 to 5).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
        brokers: Option<u32>,
        /// Give each topic at least this many partitions (generated: 1 to 4).
        #[arg(long, value_name = "P", value_parser = clap::value_parser!(u32).range(1..=1000))]
        partitions: Option<u32>,
    },
}

fn parse_strategy(name: &str) -> Result<Strategy, String> {
    Strategy::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = Strategy::ALL.iter().map(|strategy| strategy.name()).collect();
        format!("unknown strategy {name:?}; choose one of {}", names.join(", "))
    })
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return usage_error(&error),
    };
    match run(cli.command) {
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

/// Help and the version go to stdout; a usage error is one line on stderr
/// (scripts read it), with where to look next.
fn usage_error(error: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match error.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            print!("{error}");
            ExitCode::SUCCESS
        }
        _ => {
            let text = error.to_string();
            let first = text.lines().next().unwrap_or_default();
            let first = first.strip_prefix("error: ").unwrap_or(first);
            eprintln!("kafkascope: {first}; try `kafkascope help`");
            ExitCode::from(2)
        }
    }
}

/// Runs one command and returns what to print, or a one-line error.
fn run(command: Command) -> Result<String, String> {
    match command {
        Command::Partition { partitions, keys } => Ok(partition(partitions, &keys)),
        Command::Assign { strategy, explain } => {
            let input = read_bounded(std::io::stdin(), "stdin")?;
            assign_command(strategy, explain, &input)
        }
        Command::Run { file, json, quiet } => run_scenario(&file, json, quiet),
        Command::Fuzz {
            seeds,
            from,
            mix,
            out,
            brokers,
            partitions,
        } => fuzz(seeds, from, mix, out, (brokers, partitions)),
        Command::Schema { format } => Ok(match format.as_str() {
            "markdown" => reference::markdown(),
            "html" => reference::html(),
            _ => reference::schema_json(),
        }),
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
fn partition(partition_count: u32, keys: &[String]) -> String {
    let mut output = String::new();
    for key in keys {
        let bytes = key.as_bytes();
        let partition = partition_for_key(bytes, partition_count).expect("clap checked the count is at least 1");
        output.push_str(&format!("{key}\t{}\t{partition}\n", murmur2(bytes)));
    }
    output
}

/// `kafkascope assign --strategy S`: `input` is the group as JSON
/// (`{"topics": {...}, "members": [...]}`); the answer is
/// `{"memberId": ["topic-partition", ...]}`.
fn assign_command(strategy: Strategy, explain: bool, input: &str) -> Result<String, String> {
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
fn run_scenario(path: &std::path::Path, json: bool, quiet: bool) -> Result<String, String> {
    use std::io::Write;
    let path = path.display().to_string();
    let file = std::fs::File::open(&path).map_err(|error| format!("cannot read {path}: {error}"))?;
    let text = read_bounded(file, &path)?;
    let scenario = kafkascope_engine::sim::scenario::Scenario::from_json(&text)?;
    // The trace is streamed, never held: a long run prints as it goes in
    // bounded memory.
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut write_error = None;
    let outcome = scenario.run_streaming_with_history(&mut |event| {
        if quiet || write_error.is_some() {
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
    let verdict = outcome.simulation.jepsen_verdict();
    let mut report = String::new();
    if json {
        let expectations: Vec<serde_json::Value> = outcome
            .checked
            .iter()
            .map(|(expectation, failure)| {
                serde_json::json!({ "expectation": expectation, "met": failure.is_none(), "failure": failure })
            })
            .collect();
        let line = serde_json::json!({
            "type": "summary",
            "summary": summary,
            "lostRecords": lost,
            "jepsen": verdict.as_ref().map(verdict_json),
            "expectations": expectations,
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
        if let Some(verdict) = &verdict {
            report.push_str(&format!("{verdict}\n"));
            for finding in verdict.findings.iter().take(20) {
                report.push_str(&format!("  {finding}\n"));
            }
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

/// Jepsen's verdict as `kafkascope run --json` writes it: each finding with
/// its class, partition, values and sentence, what was not judged and why,
/// and what Kafka's design allows, with why.
fn verdict_json(verdict: &kafkascope_engine::sim::jepsen::Verdict) -> serde_json::Value {
    let finding = |finding: &kafkascope_engine::history::Finding| {
        serde_json::json!({
            "kind": finding.kind.name(),
            "partition": finding.partition.to_string(),
            "values": finding.values,
            "text": finding.to_string(),
        })
    };
    serde_json::json!({
        "operations": verdict.operations,
        "unknownCommits": verdict.unknown_commits,
        "findings": verdict.findings.iter().map(finding).collect::<Vec<_>>(),
        "notJudged": verdict
            .not_judged
            .iter()
            .map(|(left_out, why)| {
                let mut value = finding(left_out);
                value["why"] = why.to_string().into();
                value
            })
            .collect::<Vec<_>>(),
        "allowed": verdict
            .allowed
            .iter()
            .map(|allowed| {
                let mut value = finding(allowed);
                value["why"] = allowed.kind.allowed().unwrap_or_default().into();
                value
            })
            .collect::<Vec<_>>(),
        "text": verdict.to_string(),
    })
}

/// `kafkascope fuzz`: random fault schedules checked for safety and
/// liveness, with a progress line; failures are minimised and written as
/// scenario files. The wall-clock figures are the driver's, not the engine's.
fn fuzz(seeds: u64, from: u64, mix: Mix, out: PathBuf, shape: (Option<u32>, Option<u32>)) -> Result<String, String> {
    use kafkascope_engine::sim::fuzz::{minimise, FuzzCase};
    use std::io::Write;
    let started = std::time::Instant::now();
    let mut failed: Vec<(u64, &'static str, String)> = Vec::new();
    let mut slowest = (0u64, std::time::Duration::ZERO, 0u64);
    let mut operator_cases = 0u64;
    let mut resent_cases = 0u64;
    let mut reordered_cases = 0u64;
    let mut powered_off_cases = 0u64;
    let mut correlated_cases = 0u64;
    let mut everyone_cut_cases = 0u64;
    let mut lost_to_power_cases = 0u64;
    let mut lost_to_power_records = 0u64;
    let mut stderr = std::io::stderr();
    for (done, seed) in (from..from + seeds).enumerate() {
        let case = FuzzCase::generate(seed, mix).at_shape(shape.0, shape.1);
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
        if verdict.across_epoch_duplicates > 0 {
            resent_cases += 1;
        }
        if verdict.unchecked_reorders > 0 {
            reordered_cases += 1;
        }
        if case
            .inputs
            .iter()
            .any(|input| matches!(input.input, kafkascope_engine::sim::config::Input::PowerLoss { .. }))
        {
            powered_off_cases += 1;
        }
        if verdict.correlated_power_loss {
            correlated_cases += 1;
        }
        if case.inputs.iter().any(|input| {
            matches!(&input.input, kafkascope_engine::sim::config::Input::PowerLoss { brokers } if brokers.len() > 1)
        }) {
            everyone_cut_cases += 1;
        }
        if verdict.lost_to_power > 0 {
            lost_to_power_cases += 1;
            lost_to_power_records += verdict.lost_to_power as u64;
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
        "fuzz: {seeds} seeds ({from}..{}), mix {mix:?}{}: {} safety failures, {} liveness failures, {} crashes; \
         {:.1} seeds/s over {elapsed:.1} s; slowest seed {} ({} events, {:.0} ms); \
         {operator_cases} seeds needed an operator's unclean leader election (KIP-966 keeps a partition \
         offline when every replica that could lead cleanly restarted after an unclean shutdown); \
         {resent_cases} seeds had an idempotent producer write records twice across an epoch bump (KIP-360: \
         a batch whose first attempt's outcome it never learned, resent under the new epoch, as Kafka's producer does); \
         {reordered_cases} seeds had an idempotent producer's later batch written before its earlier ones by a leader \
         with no state for the producer (ProducerAppendInfo#checkSequence accepts any sequence then); \
         {powered_off_cases} seeds cut the power of brokers (what they had not flushed lost from their disks), \
         {everyone_cut_cases} of them of every broker at once; {correlated_cases} were correlated (every replica of a \
         partition cut at once, or every replica that could lead one down and the one elected uncleanly power-cut: \
         judged as lossy, every loss named); \
         {lost_to_power_cases} lost acknowledged records that every replica holding them had not flushed \
         ({lost_to_power_records} records, each named as lost to a power loss)\n",
        from + seeds,
        match shape {
            (None, None) => String::new(),
            (brokers, partitions) => format!(
                ", on at least {} brokers and {} partitions a topic",
                brokers.unwrap_or(3),
                partitions.unwrap_or(1)
            ),
        },
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
