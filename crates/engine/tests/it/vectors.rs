//! Finds and loads the Kafka vector files.
//!
//! The project's shared folder (`../shared/kafka-vectors` beside the
//! repository) is the source of truth and may hold more cases than the copy
//! kept in `tests/kafka-vectors`; it wins when present. `KAFKASCOPE_VECTORS`
//! names another folder explicitly.

use std::path::PathBuf;

/// The folder the vector files are read from.
pub fn vectors_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("KAFKASCOPE_VECTORS") {
        return PathBuf::from(dir);
    }
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let shared = repo.join("../shared/kafka-vectors");
    if shared.join("SEMANTICS.md").is_file() {
        shared
    } else {
        repo.join("tests/kafka-vectors")
    }
}

/// Parses one vector file, failing the test with the path if it is missing.
pub fn load(file_name: &str) -> serde_json::Value {
    let path = vectors_dir().join(file_name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|error| panic!("{} is not JSON: {error}", path.display()))
}

/// Decodes a hex string such as `"00000064"` into bytes.
pub fn hex_bytes(hex: &str) -> Vec<u8> {
    assert!(hex.len() % 2 == 0, "odd-length hex {hex:?}");
    (0..hex.len())
        .step_by(2)
        .map(|index| u8::from_str_radix(&hex[index..index + 2], 16).expect("hex digit"))
        .collect()
}

/// An election as Kafka's vector files name it (`PartitionChangeBuilder.Election`).
pub fn election(name: &str) -> kafkascope_engine::controller::partition_change::Election {
    use kafkascope_engine::controller::partition_change::Election;
    match name {
        "PREFERRED" => Election::Preferred,
        "ONLINE" => Election::Online,
        "UNCLEAN" => Election::Unclean,
        other => panic!("unknown election {other}"),
    }
}

/// A JSON list of integers (empty when absent).
pub fn integers(value: &serde_json::Value) -> Vec<i64> {
    value
        .as_array()
        .map(|list| list.iter().map(|item| item.as_i64().expect("an integer")).collect())
        .unwrap_or_default()
}
