//! The `kafkascope` binary as a user runs it.

use std::io::Write;
use std::process::{Command, Stdio};

fn kafkascope(arguments: &[&str]) -> (bool, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_kafkascope"))
        .args(arguments)
        .output()
        .expect("run kafkascope");
    (
        output.status.success(),
        String::from_utf8(output.stdout).expect("utf-8 stdout"),
        String::from_utf8(output.stderr).expect("utf-8 stderr"),
    )
}

#[test]
fn partition_prints_key_murmur2_and_partition() {
    // "" -> murmur2 275646681 -> partition 9 of 12; "abc" -> 479470107 (UtilsTest).
    let (ok, stdout, _) = kafkascope(&["partition", "--partitions", "12", "", "abc"]);
    assert!(ok);
    assert_eq!(stdout, "\t275646681\t9\nabc\t479470107\t3\n");
}

#[test]
fn partition_rejects_a_zero_count_in_one_line() {
    let (ok, stdout, stderr) = kafkascope(&["partition", "--partitions", "0", "k"]);
    assert!(!ok);
    assert!(stdout.is_empty());
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("--partitions"), "{stderr}");
}

#[test]
fn every_subcommand_has_its_own_help() {
    for command in ["partition", "assign", "run", "fuzz"] {
        for arguments in [vec!["help", command], vec![command, "--help"]] {
            let (ok, stdout, stderr) = kafkascope(&arguments);
            assert!(ok, "{arguments:?}: {stderr}");
            assert!(
                stdout.contains(&format!("Usage: kafkascope {command}")),
                "{arguments:?}: {stdout}"
            );
        }
    }
    let (ok, stdout, _) = kafkascope(&["help", "fuzz"]);
    assert!(
        ok && stdout.contains("--mix <M>") && stdout.contains("[default: 1000]"),
        "{stdout}"
    );
    // No command: the overview, on stdout.
    let (ok, stdout, _) = kafkascope(&[]);
    assert!(
        ok && ["partition", "assign", "run", "fuzz"]
            .iter()
            .all(|command| stdout.contains(command)),
        "{stdout}"
    );
    // A bad value is one line naming the option and what it takes.
    let (ok, _, stderr) = kafkascope(&["fuzz", "--mix", "nope"]);
    assert!(!ok);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("--mix") && stderr.contains("use all, brokers"),
        "{stderr}"
    );
}

/// `--brokers` and `--partitions` run the same schedules on a larger
/// cluster (#39: a sweep over large shapes), said in the report.
#[test]
fn the_fuzzer_runs_its_schedules_on_a_larger_shape_on_request() {
    let (ok, stdout, stderr) = kafkascope(&["fuzz", "--seeds", "1", "--brokers", "9", "--partitions", "6"]);
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("on at least 9 brokers and 6 partitions a topic: 0 safety failures, 0 liveness failures, 0 crashes"),
        "{stdout}"
    );
    let (ok, _, stderr) = kafkascope(&["fuzz", "--brokers", "65"]);
    assert!(!ok && stderr.contains("--brokers") && stderr.contains("1..=64"), "{stderr}");
}

#[test]
fn unknown_command_is_an_error() {
    let (ok, _, stderr) = kafkascope(&["frobnicate"]);
    assert!(!ok);
    assert!(stderr.contains("unrecognized subcommand"), "{stderr}");
}

fn kafkascope_with_stdin(arguments: &[&str], stdin: &str) -> (bool, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kafkascope"))
        .args(arguments)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run kafkascope");
    // A command that fails on its arguments exits before reading stdin:
    // the pipe may be closed by then.
    if let Err(error) = child.stdin.take().expect("stdin").write_all(stdin.as_bytes()) {
        assert_eq!(error.kind(), std::io::ErrorKind::BrokenPipe, "write stdin: {error}");
    }
    let output = child.wait_with_output().expect("wait");
    (
        output.status.success(),
        String::from_utf8(output.stdout).expect("utf-8 stdout"),
        String::from_utf8(output.stderr).expect("utf-8 stderr"),
    )
}

#[test]
fn assign_range_prints_kafkas_assignment_as_json() {
    // RangeAssignor javadoc: two consumers, two topics of three partitions.
    let group = r#"{"topics": {"t0": 3, "t1": 3},
        "members": [{"memberId": "C0", "topics": ["t0", "t1"]}, {"memberId": "C1", "topics": ["t0", "t1"]}]}"#;
    let (ok, stdout, stderr) = kafkascope_with_stdin(&["assign", "--strategy", "range"], group);
    assert!(ok, "{stderr}");
    assert_eq!(
        stdout,
        "{\"C0\":[\"t0-0\",\"t0-1\",\"t1-0\",\"t1-1\"],\"C1\":[\"t0-2\",\"t1-2\"]}\n"
    );
}

#[test]
fn assign_names_the_bad_field_in_one_line() {
    let group = r#"{"topics": {"t0": 3}, "members": [{"topics": ["t0"]}]}"#;
    let (ok, _, stderr) = kafkascope_with_stdin(&["assign", "--strategy", "roundrobin"], group);
    assert!(!ok);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("memberId"), "{stderr}");
}

#[test]
fn assign_rejects_an_unknown_strategy() {
    let (ok, _, stderr) = kafkascope_with_stdin(&["assign", "--strategy", "fair"], "{}");
    assert!(!ok);
    assert!(stderr.contains("unknown strategy"), "{stderr}");
}

#[test]
fn assign_explain_reports_moves_revocations_counts_and_reasons() {
    // b owned t0-0 before; range now gives t0-0 to a (first in member order).
    let group = r#"{"topics": {"t0": 2}, "members": [
        {"memberId": "b", "topics": ["t0"], "owned": ["t0-0"]},
        {"memberId": "a", "topics": ["t0"]}]}"#;
    let (ok, stdout, stderr) = kafkascope_with_stdin(&["assign", "--strategy", "range", "--explain"], group);
    assert!(ok, "{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(report["assignment"], serde_json::json!({"a": ["t0-0"], "b": ["t0-1"]}));
    assert_eq!(
        report["moves"],
        serde_json::json!([{"partition": "t0-0", "from": "b", "to": "a"}])
    );
    assert_eq!(report["revoked"], serde_json::json!({"b": ["t0-0"]}));
    assert_eq!(report["counts"], serde_json::json!({"a": 1, "b": 1}));
    let reason = report["reasons"]["t0-1"].as_str().expect("a reason per partition");
    assert!(reason.contains("b is number 2"), "{reason}");
}

/// The vector files: the shared folder beside the repository when present,
/// else the copy in `tests/kafka-vectors`.
fn vector_file(name: &str) -> std::path::PathBuf {
    let repo = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let shared = repo.join("../shared/kafka-vectors");
    let dir = if shared.join(name).is_file() {
        shared
    } else {
        repo.join("tests/kafka-vectors")
    };
    dir.join(name)
}

#[test]
fn assign_answers_every_vector_case_as_kafka_does() {
    let text = std::fs::read_to_string(vector_file("vectors-assignors.json")).expect("vectors");
    let vectors: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let mut checked = 0;
    for case in vectors["cases"].as_array().expect("cases") {
        let strategy = match case["assignor"].as_str().expect("assignor") {
            "server-uniform" => "uniform",
            other => other,
        };
        for step in case["steps"].as_array().expect("steps") {
            let mut input = step["input"].clone();
            if !step["topic_ids"].is_null() {
                input["topicIds"] = step["topic_ids"].clone();
            }
            let (ok, stdout, stderr) = kafkascope_with_stdin(&["assign", "--strategy", strategy], &input.to_string());
            assert!(ok, "{}: {stderr}", case["id"]);
            let actual: serde_json::Value = serde_json::from_str(&stdout).expect("JSON out");
            let expected = &step["kafka_output"];
            let order_matters = step["expected_by_test"].is_null() || step["compare"] == "list";
            let normalize = |value: &serde_json::Value| -> std::collections::BTreeMap<String, Vec<String>> {
                value
                    .as_object()
                    .expect("object")
                    .iter()
                    .map(|(member, partitions)| {
                        let mut list: Vec<String> = partitions
                            .as_array()
                            .expect("list")
                            .iter()
                            .map(|partition| partition.as_str().expect("string").to_string())
                            .collect();
                        if !order_matters {
                            list.sort();
                        }
                        (member.clone(), list)
                    })
                    .collect()
            };
            assert_eq!(normalize(&actual), normalize(expected), "{}", case["id"]);
            checked += 1;
        }
    }
    assert!(checked >= 70, "only {checked} steps");
}

fn scenario(name: &str) -> String {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

#[test]
fn run_prints_the_trace_and_a_summary_naming_lost_records() {
    let (ok, stdout, stderr) = kafkascope(&["run", &scenario("acks1-leader-crash-loses-records.json")]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("acknowledged records 5-9 LOST"), "{stdout}");
    assert!(
        stdout.contains("summary: 10 produced, 10 acknowledged, 5 lost"),
        "{stdout}"
    );
    assert!(stdout.contains("lost records: 5-9"), "{stdout}");
    // No consumer reads this run, so Jepsen's checks cannot see the loss
    // and say why they do not judge it.
    assert!(
        stdout.contains("Jepsen's checks: no anomaly in 10 operations; not judged: 10 acknowledged but unread when the run stopped"),
        "{stdout}"
    );
    assert!(stdout.ends_with("expectations: all 4 met\n"), "{stdout}");
}

/// `kafkascope run` ends with what Jepsen's checks say about the run's
/// history: here the late write that joins the next transaction without
/// KIP-890's verification, read though its own transaction aborted.
#[test]
fn run_reports_jepsens_verdict_as_text_and_json() {
    let path = scenario("without-verification-a-late-write-joins-the-next-transaction.json");
    let (ok, stdout, stderr) = kafkascope(&["run", "--quiet", &path]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("Jepsen's checks: aborted read (G1a) 3 in "), "{stdout}");
    assert!(stdout.contains("  aborted read (G1a) on payments-0: value 0"), "{stdout}");
    let (ok, stdout, stderr) = kafkascope(&["run", "--json", "--quiet", &path]);
    assert!(ok, "{stderr}");
    let summary: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one JSON line");
    let findings = summary["jepsen"]["findings"].as_array().expect("findings");
    assert_eq!(findings.len(), 3);
    assert_eq!(findings[0]["kind"], "aborted read (G1a)");
    assert_eq!(findings[0]["partition"], "payments-0");
    assert_eq!(findings[0]["values"], serde_json::json!([0]));
}

#[test]
fn run_exits_non_zero_when_an_expectation_fails() {
    let dir = std::env::temp_dir().join(format!("kafkascope-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let text = std::fs::read_to_string(scenario("happy-path.json")).expect("scenario");
    let mut scenario_json: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    scenario_json["expect"] = serde_json::json!([{ "type": "someRecordsLost", "atLeast": 1 }]);
    let broken = scenario_json.to_string();
    let path = dir.join("broken.json");
    std::fs::write(&path, broken).expect("write");
    let (ok, stdout, stderr) = kafkascope(&["run", &path.to_string_lossy()]);
    assert!(!ok);
    assert!(stdout.contains("summary:"), "{stdout}");
    assert!(stderr.contains("expected at least 1 lost records"), "{stderr}");
}

#[test]
fn run_rejects_a_bad_scenario_in_one_line() {
    let dir = std::env::temp_dir().join(format!("kafkascope-cli-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("bad.json");
    std::fs::write(&path, r#"{"name": "x", "config": {"brokers": 0}, "runUntilMs": 10}"#).expect("write");
    let (ok, _, stderr) = kafkascope(&["run", &path.to_string_lossy()]);
    assert!(!ok);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("brokers must be between 1 and 64"), "{stderr}");
}

/// Bounded resources: a group of three billion partitions is refused at
/// once, naming the limit, instead of growing without end.
#[test]
fn assign_refuses_a_group_above_the_partition_limit_naming_it() {
    let group = r#"{"topics": {"t": 3000000000}, "members": [{"memberId": "m", "topics": ["t"]}]}"#;
    let (ok, _, stderr) = kafkascope_with_stdin(&["assign", "--strategy", "range"], group);
    assert!(!ok);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("partitions is 3000000000, above kafkascope's limit of 2000000"),
        "{stderr}"
    );
}

/// Bounded resources: a run three years long is refused before it starts.
#[test]
fn run_refuses_a_run_longer_than_the_limit() {
    let dir = std::env::temp_dir().join(format!("kafkascope-cli-long-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let text = std::fs::read_to_string(scenario("happy-path.json")).expect("scenario");
    let mut scenario_json: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    scenario_json["runUntilMs"] = serde_json::json!(94_608_000_000u64);
    let path = dir.join("long.json");
    std::fs::write(&path, scenario_json.to_string()).expect("write");
    let (ok, _, stderr) = kafkascope(&["run", &path.to_string_lossy()]);
    assert!(!ok);
    assert!(
        stderr.contains("runUntilMs is 94608000000, above kafkascope's limit of 604800000"),
        "{stderr}"
    );
}

/// `kafkascope run --json`: one JSON object per line, typed trace events
/// then the summary, for tools and course authors' CI.
#[test]
fn run_json_prints_typed_events_then_the_summary() {
    let (ok, stdout, stderr) = kafkascope(&["run", &scenario("acks1-leader-crash-loses-records.json"), "--json"]);
    assert!(ok, "{stderr}");
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).expect("every line is JSON"))
        .collect();
    let (last, events) = lines.split_last().expect("lines");
    assert!(events.iter().all(|line| line["type"] == "event"));
    assert!(events
        .iter()
        .any(|line| line["event"]["kind"]["kind"] == "records-lost"));
    assert_eq!(last["type"], "summary");
    assert_eq!(last["summary"]["lost"], 5);
    assert_eq!(last["lostRecords"], serde_json::json!([5, 6, 7, 8, 9]));
    assert_eq!(last["failures"], serde_json::json!([]));
    // Each expectation with whether it held.
    let expectations = last["expectations"].as_array().expect("a list");
    assert_eq!(expectations.len(), 4);
    assert_eq!(
        expectations[1]["expectation"],
        serde_json::json!({"type": "recordsLost", "records": [5, 6, 7, 8, 9]})
    );
    assert!(expectations.iter().all(|expectation| expectation["met"] == true));
    // Typed facts, not only text: a produce request's partitions and acks,
    // the input that was applied.
    let produce = events
        .iter()
        .find(|line| line["event"]["kind"]["name"] == "Produce")
        .expect("a produce request");
    assert_eq!(produce["event"]["kind"]["facts"]["acks"], "1");
    assert_eq!(produce["event"]["kind"]["facts"]["partitions"][0], "orders-0");
    let input = events
        .iter()
        .find(|line| line["event"]["kind"]["kind"] == "input")
        .expect("an input");
    assert_eq!(input["event"]["kind"]["input"]["type"], "produce");
}

/// The scenario format's schema and reference are generated from the types
/// (`kafkascope schema`), and the copies the site publishes and docs/ keeps
/// are what it prints now: the reference cannot drift from the parser.
/// `KAFKASCOPE_BLESS=1` rewrites them.
#[test]
fn the_published_scenario_format_is_generated_from_the_types() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for (format, file) in [
        ("json", "docs/scenario.schema.json"),
        ("markdown", "docs/scenario-format.md"),
        ("html", "web/scenario-format.html"),
    ] {
        let (ok, generated, stderr) = kafkascope(&["schema", "--format", format]);
        assert!(ok, "{stderr}");
        let path = root.join(file);
        if std::env::var_os("KAFKASCOPE_BLESS").is_some() {
            std::fs::write(&path, &generated).expect("write the reference");
        }
        let kept = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            kept == generated,
            "{file} is not what `kafkascope schema --format {format}` prints; rewrite it with KAFKASCOPE_BLESS=1 cargo test -p kafkascope-cli"
        );
    }
    // Every kind of input and every knob is in the reference, by its tag.
    let (_, markdown, _) = kafkascope(&["schema", "--format", "markdown"]);
    for tag in ["produce", "killBroker", "createPartitions", "partition", "setConfig"] {
        assert!(
            markdown.contains(&format!("### `type`: `\"{tag}\"`")),
            "the reference lacks input {tag}"
        );
    }
    for section in [
        "## Scenario",
        "## ClusterConfig",
        "## Input",
        "## Expectation",
        "## Story",
    ] {
        assert!(markdown.contains(section), "the reference lacks {section}");
    }
}

/// `run --quiet` prints no trace, only the summary and the expectations
/// (as text, or with `--json` one summary line).
#[test]
fn a_quiet_run_prints_only_its_summary() {
    let path = scenario("happy-path.json");
    let path = path.as_str();
    let (ok, out, stderr) = kafkascope(&["run", "--quiet", path]);
    assert!(ok, "{stderr}");
    assert!(!out.contains(" ms  #"), "a trace line was printed: {out}");
    assert!(out.trim_start().starts_with("summary: "), "{out}");
    assert!(out.contains("expectations: all"), "{out}");
    let (ok, out, stderr) = kafkascope(&["run", "--quiet", "--json", path]);
    assert!(ok, "{stderr}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1, "{out}");
    let summary: serde_json::Value = serde_json::from_str(lines[0]).expect("JSON");
    assert_eq!(summary["type"], "summary");
}
