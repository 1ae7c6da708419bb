//! The engine's integration tests: Kafka's own behaviour, read from the
//! shared vector files, checked against the engine's public API.

mod assignor_properties;
mod assignors;
mod controller_vectors;
mod create_partitions;
mod dead_letter;
mod delivery;
mod group_coordinator_vectors;
mod groups;
mod java_ordering;
mod log_storage_vectors;
mod partitioning;
mod producer_state_vectors;
mod quotas;
mod replication;
mod retention;
mod simulator;
mod storage_properties;
mod tidy;
mod trace_hashes;
mod transactions;
mod txn_offsets;
mod vectors;
