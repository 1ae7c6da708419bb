//! kafkascope's engine: Apache Kafka's rules as pure, deterministic Rust.
//!
//! Everything a learner sees in kafkascope (the map, the sequence steps, the
//! sandbox) is computed here. The engine is *sans-IO*: it never reads a clock,
//! spawns a thread, touches the DOM or the file system, or asks the OS for
//! randomness. Drivers (the CLI, the web app, the JavaScript API, tests) feed
//! it inputs and read its outputs, so the same inputs give the same answers
//! natively and in WebAssembly.
//!
//! Where Kafka has a rule, the engine follows it and names the Kafka class or
//! KIP it comes from, next to the code.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod chunked;
pub mod controller;
pub mod groups;
pub mod history;
pub mod java;
pub mod json_position;
pub mod limits;
pub mod partitioning;
pub mod protocol;
pub mod random;
pub mod replication;
pub mod sim;
pub mod sorting;
pub mod storage;
pub mod txn_coordinator;
