//! The fuzzer's trace hashes: proof that a change moved code, not
//! behaviour. `fuzz-trace-hashes.txt` keeps, for each of the fuzzer's
//! 10,000 seeds (`cargo xtask fuzz`'s default run, mix `all`), the hash of
//! the trace its run records; a restructuring of the engine must leave
//! every one of them as it was.
//!
//! The default test checks every 50th seed. The full check is ignored by
//! default (it runs the 10,000 cases):
//!
//! ```text
//! cargo test -p kafkascope-engine --test it -- --ignored every_fuzz_seed_keeps_its_trace_hash
//! ```
//!
//! After an intended change of behaviour, rewrite the file with
//! `KAFKASCOPE_BLESS=1` and the same command.

use std::collections::BTreeMap;
use std::path::PathBuf;

use kafkascope_engine::sim::fuzz::{FuzzCase, Mix};

/// How many seeds the file keeps (the fuzzer's default run).
const SEEDS: u64 = 10_000;
/// The default test checks every this many-th seed.
const SAMPLE_EVERY: u64 = 50;

fn expected_file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-trace-hashes.txt")
}

/// The committed hashes by seed (lines `seed hash`, the hash in hex).
fn expected() -> BTreeMap<u64, u64> {
    let text = std::fs::read_to_string(expected_file()).expect("read fuzz-trace-hashes.txt");
    text.lines()
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| {
            let (seed, hash) = line.split_once(' ').expect("a `seed hash` line");
            let seed = seed.parse().expect("a seed");
            let hash = u64::from_str_radix(hash, 16).expect("a hex hash");
            (seed, hash)
        })
        .collect()
}

/// The trace hash of each seed's run.
fn hashes(seeds: &[u64]) -> BTreeMap<u64, u64> {
    crate::per_seed_on_threads(seeds, |seed| FuzzCase::generate(seed, Mix::All).trace_hash())
        .into_iter()
        .collect()
}

/// Compares the hashes of `seeds` with the committed ones and names every
/// seed whose trace changed.
fn check(seeds: &[u64]) {
    let expected = expected();
    let actual = hashes(seeds);
    let changed: Vec<String> = actual
        .iter()
        .filter(|(seed, hash)| expected.get(seed) != Some(hash))
        .map(|(seed, hash)| {
            let expected = expected
                .get(seed)
                .map_or("none".to_string(), |hash| format!("{hash:016x}"));
            format!("seed {seed}: {hash:016x}, expected {expected}")
        })
        .collect();
    assert!(
        changed.is_empty(),
        "{} of {} seeds changed their trace (if that is intended, rewrite the file: see trace_hashes.rs):\n{}",
        changed.len(),
        seeds.len(),
        changed.join("\n")
    );
}

#[test]
fn sampled_fuzz_seeds_keep_their_trace_hashes() {
    let seeds: Vec<u64> = (0..SEEDS).step_by(SAMPLE_EVERY as usize).collect();
    check(&seeds);
}

#[test]
#[ignore = "runs all 10,000 fuzz cases; see the module's doc"]
fn every_fuzz_seed_keeps_its_trace_hash() {
    let seeds: Vec<u64> = (0..SEEDS).collect();
    if std::env::var_os("KAFKASCOPE_BLESS").is_some() {
        let mut text = String::from(
            "# The trace hash of each fuzz seed's run (mix all): see crates/engine/tests/it/trace_hashes.rs.\n",
        );
        for (seed, hash) in hashes(&seeds) {
            text.push_str(&format!("{seed} {hash:016x}\n"));
        }
        std::fs::write(expected_file(), text).expect("write fuzz-trace-hashes.txt");
        return;
    }
    check(&seeds);
}
