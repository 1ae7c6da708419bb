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
mod input_names;
mod java_ordering;
mod jepsen;
mod log_storage_vectors;
mod marker_removal;
mod offset_validation;
mod partitioning;
mod power_loss;
mod producer_expiration;
mod producer_state_vectors;
mod quotas;
mod replication;
mod retention;
mod simulator;
mod storage_properties;
mod tidy;
mod trace_hashes;
mod transactions;
mod txn_coordinator_vectors;
mod txn_offsets;
mod vectors;

/// `run(seed)` for every seed, on up to four threads (the fuzz and
/// trace-hash tests run thousands of cases), with each seed's answer.
fn per_seed_on_threads<T: Send>(seeds: &[u64], run: impl Fn(u64) -> T + Sync) -> Vec<(u64, T)> {
    let threads = std::thread::available_parallelism()
        .map_or(2, |count| count.get())
        .min(4);
    let run = &run;
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|thread| {
                scope.spawn(move || {
                    seeds
                        .iter()
                        .skip(thread)
                        .step_by(threads)
                        .map(|&seed| (seed, run(seed)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|handle| handle.join().expect("a seed's thread panicked"))
            .collect()
    })
}
