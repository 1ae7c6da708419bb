//! Every scenario kafkascope ships, and every case the fuzzer makes,
//! names only producers, consumers, brokers, controllers, topics and
//! partitions its cluster has (`sim::input_names`), so the check that
//! refuses a scenario naming one it lacks never refuses one of ours.

use kafkascope_engine::sim::fuzz::{FuzzCase, Mix};
use kafkascope_engine::sim::scenario::Scenario;

#[test]
fn every_shipped_scenario_and_fuzzed_case_names_only_what_it_has() {
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut files = 0;
    for folder in [folder.clone(), folder.join("recovery"), folder.join("open")] {
        for entry in std::fs::read_dir(&folder).expect("scenarios") {
            let path = entry.expect("entry").path();
            if path.extension().is_some_and(|extension| extension == "json") {
                let text = std::fs::read_to_string(&path).expect("read");
                if let Err(error) = Scenario::from_json(&text) {
                    assert!(!error.contains(".input."), "{}: {error}", path.display());
                }
                files += 1;
            }
        }
    }
    assert!(files > 20, "{files} scenario files");
    for seed in 0..40 {
        for mix in [Mix::All, Mix::Clients, Mix::Controllers] {
            let case = FuzzCase::generate(seed, mix).with_operator();
            let scenario = case.scenario();
            let unknown = kafkascope_engine::sim::input_names::first_unknown(&scenario.config, &scenario.inputs);
            assert_eq!(unknown, None, "seed {seed} {mix:?}");
            // Its file (a fuzz repro) opens: every input before the end.
            let text = serde_json::to_string(&scenario).expect("a scenario writes");
            assert!(Scenario::from_json(&text).is_ok(), "seed {seed} {mix:?}: {:?}", Scenario::from_json(&text).err());
        }
    }
}
