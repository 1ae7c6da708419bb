//! The JavaScript API over the kafkascope engine.
//!
//! This crate is the only place where engine functions meet wasm-bindgen.
//! It converts JavaScript values into engine inputs and engine answers back
//! into JavaScript values; it holds no logic of its own, so whatever the
//! sandbox or an embedder computes is exactly what the CLI and the web app
//! compute. Nothing here panics on user input: a bad argument becomes a
//! JavaScript exception with a message.

use kafkascope_engine::partitioning;
use wasm_bindgen::prelude::*;

/// Kafka's murmur2 of a string key's UTF-8 bytes, as a signed 32-bit
/// integer (`Utils#murmur2`).
#[wasm_bindgen]
pub fn murmur2(key: &str) -> i32 {
    partitioning::murmur2(key.as_bytes())
}

/// The partition Kafka's default partitioner picks for a string key among
/// `numPartitions` partitions: `toPositive(murmur2(utf8(key))) % numPartitions`.
///
/// Throws when `numPartitions` is not a whole number of at least 1.
#[wasm_bindgen(js_name = partitionFor)]
pub fn partition_for(key: &str, num_partitions: f64) -> Result<u32, JsError> {
    let count = partition_count(num_partitions)?;
    partitioning::partition_for_key(key.as_bytes(), count)
        .ok_or_else(|| JsError::new("numPartitions must be at least 1"))
}

/// Accepts only whole numbers in 1..=u32::MAX, so JavaScript's 2.5, NaN or
/// -1 get a message rather than a silently truncated count.
fn partition_count(value: f64) -> Result<u32, JsError> {
    if value.fract() == 0.0 && value >= 1.0 && value <= f64::from(u32::MAX) {
        Ok(value as u32)
    } else {
        Err(JsError::new(&format!(
            "numPartitions must be a whole number of at least 1, got {value}"
        )))
    }
}
