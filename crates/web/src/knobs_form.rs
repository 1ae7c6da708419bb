//! The map's knobs: the live ones (each change an input at this moment of
//! the run) grouped as Kafka groups its settings (producer, topic, client
//! quotas, broker; a consumer's own are on its inspector), and the shape
//! ones that start a new run.

use kafkascope_engine::sim::config::{ClusterConfig, StorageSetting};
use kafkascope_engine::sim::view::ClusterView;
use yew::prelude::*;

use crate::cluster_model::{min_insync_warning, Setup, ASSIGNORS};
use crate::knob::KnobInput;
use crate::session::{Action, Knob, SetupField};

/// What the live knobs show: the run's current settings.
#[derive(Debug, Clone, PartialEq)]
pub struct KnobValues {
    pub acks: String,
    pub linger: u64,
    pub idempotent: bool,
    pub min_insync: u32,
    pub replication_factor: u32,
    /// `retention.ms`, `retention.bytes`, `segment.bytes`,
    /// `internal.segment.bytes` (-1: not set).
    pub storage: (i64, i64, i64, i64),
    /// `flush.messages` (-1: not set, Kafka's default: never).
    pub flush_messages: i64,
    /// `cleanup.policy`, `min.cleanable.dirty.ratio`,
    /// `min.compaction.lag.ms`, `delete.retention.ms`.
    pub cleanup: (String, f64, u64, u64),
    /// The default client quota's `producer_byte_rate` and
    /// `consumer_byte_rate` (empty: none).
    pub quota: (String, String),
    pub unclean: bool,
    pub unclean_interval_ms: u64,
    pub lag_ms: u64,
    pub cleaner_backoff_ms: u64,
    /// The finalized `transaction.version`.
    pub transaction_version: u8,
    pub verification: bool,
}

impl KnobValues {
    /// The settings of the run `view` shows, configured by `config`.
    pub fn of(view: &ClusterView, config: &ClusterConfig) -> KnobValues {
        let acks = view
            .producers
            .first()
            .map_or("all".to_string(), |producer| producer.acks.to_string());
        let linger = view.producers.first().map_or(0, |producer| producer.linger_ms);
        let idempotent = view.producers.first().is_some_and(|producer| producer.idempotent);
        let min_insync = config.topics.first().map_or(1, |topic| topic.min_insync_replicas);
        let storage = config.topics.first().map_or((0, 0, 0, -1), |topic| {
            (
                topic.retention_ms,
                topic.retention_bytes,
                topic.segment_bytes as i64,
                topic.internal_segment_bytes.map_or(-1, |bytes| bytes as i64),
            )
        });
        let flush_messages = config
            .topics
            .first()
            .and_then(|topic| topic.flush_messages)
            .map_or(-1, |messages| i64::try_from(messages).unwrap_or(i64::MAX));
        let replication_factor = config.topics.first().map_or(1, |topic| topic.replication_factor);
        let cleanup = config
            .topics
            .first()
            .map_or(("delete".to_string(), 0.5, 0, 0), |topic| {
                (
                    topic.cleanup_policy.to_string(),
                    topic.min_cleanable_dirty_ratio.0,
                    topic.min_compaction_lag_ms,
                    topic.delete_retention_ms,
                )
            });
        let default_quota = config.quotas.iter().find(|quota| quota.client_id.is_none());
        let rate_text = |rate: Option<u64>| rate.map_or(String::new(), |rate| rate.to_string());
        let quota = (
            rate_text(default_quota.and_then(|quota| quota.producer_byte_rate)),
            rate_text(default_quota.and_then(|quota| quota.consumer_byte_rate)),
        );
        KnobValues {
            acks,
            linger,
            idempotent,
            min_insync,
            replication_factor,
            storage,
            flush_messages,
            cleanup,
            quota,
            unclean: config.unclean_leader_election_enable,
            unclean_interval_ms: config.unclean_leader_election_interval_ms,
            lag_ms: config.replica_lag_time_max_ms,
            cleaner_backoff_ms: config.log_cleaner_backoff_ms,
            transaction_version: view.features.transaction_version,
            verification: view.features.transaction_partition_verification,
        }
    }
}

/// The properties of [`KnobsForm`].
#[derive(Properties, PartialEq)]
pub struct KnobsFormProps {
    pub values: KnobValues,
    /// The pending shape (applied on submit).
    pub setup: Setup,
    /// Why the last knob was refused, if it was.
    pub knob_error: Option<String>,
    /// How many knob changes were refused: a refused select or box is
    /// drawn afresh, so it shows the run's value again.
    pub refusals: u32,
    /// Every change, as the session's action.
    pub dispatch: Callback<Action>,
}

/// The knobs form.
#[function_component(KnobsForm)]
pub fn knobs_form(props: &KnobsFormProps) -> Html {
    let values = &props.values;
    let refusals = props.refusals;
    // A live knob becomes an input at this moment of the run.
    let live = |knob: Knob| {
        let dispatch = props.dispatch.clone();
        Callback::from(move |event: Event| {
            let target = event.target_unchecked_into::<web_sys::HtmlInputElement>();
            let text = if matches!(
                knob,
                Knob::UncleanLeaderElection | Knob::EnableIdempotence | Knob::TransactionPartitionVerification
            ) {
                target.checked().to_string()
            } else {
                target.value()
            };
            dispatch.emit(Action::Knob(knob, text));
        })
    };
    // A shape knob edits the pending setup (applied on submit).
    let setup_field = |field: SetupField| {
        let dispatch = props.dispatch.clone();
        Callback::from(move |event: Event| {
            let text = event.target_unchecked_into::<web_sys::HtmlInputElement>().value();
            dispatch.emit(Action::Setup(field, text));
        })
    };
    let on_assignor = {
        let dispatch = props.dispatch.clone();
        Callback::from(move |event: Event| {
            let value = event.target_unchecked_into::<web_sys::HtmlSelectElement>().value();
            dispatch.emit(Action::Assignor(value));
        })
    };
    let onsubmit = {
        let dispatch = props.dispatch.clone();
        Callback::from(move |event: SubmitEvent| {
            event.prevent_default();
            dispatch.emit(Action::ApplySetup);
        })
    };
    html! {
        <form class="knobs" data-testid="knobs" novalidate=true {onsubmit}>
            <fieldset>
                <legend>{ "Live: each change is an input at this moment of the run" }</legend>
                <fieldset class="knob-group" data-testid="knobs-producer">
                    <legend>{ "Producer" }</legend>
                    <label>{ "acks " }
                        <select key={format!("acks-{refusals}")} data-testid="knob-acks" onchange={live(Knob::Acks)}>
                            { for ["0", "1", "all"].iter().map(|value| html! { <option value={*value} selected={values.acks == *value}>{ *value }</option> }) }
                        </select>
                    </label>
                    <label>{ "linger.ms " }
                        <KnobInput live=true testid="knob-linger" value={values.linger.to_string()} onchange={live(Knob::LingerMs)} />
                    </label>
                    <label>
                        <input key={format!("idempotence-{refusals}")} type="checkbox" data-testid="knob-idempotence" checked={values.idempotent} onchange={live(Knob::EnableIdempotence)} />
                        { " enable.idempotence" }
                    </label>
                    <p class="muted hint">{ "Kafka sets it when a producer is created; here it switches between sends, and the producer gets a new producer id. It needs acks=all." }</p>
                </fieldset>
                <fieldset class="knob-group" data-testid="knobs-topic">
                    <legend>{ "Topic" }</legend>
                    <label>{ "min.insync.replicas " }
                        <KnobInput live=true testid="knob-min-insync" value={values.min_insync.to_string()} onchange={live(Knob::MinInsyncReplicas)} />
                    </label>
                    { match min_insync_warning(values.min_insync, values.replication_factor) {
                        Some(warning) => html! { <p class="warning" role="status" data-testid="knob-min-insync-warning">{ warning }</p> },
                        None => html! {},
                    } }
                    <label>{ "retention.ms " }
                        <KnobInput live=true testid="knob-retention-ms" value={values.storage.0.to_string()} onchange={live(Knob::Storage(StorageSetting::RetentionMs))} />
                    </label>
                    <label>{ "retention.bytes " }
                        <KnobInput live=true testid="knob-retention-bytes" value={values.storage.1.to_string()} onchange={live(Knob::Storage(StorageSetting::RetentionBytes))} />
                    </label>
                    <label>{ "segment.bytes " }
                        <KnobInput live=true testid="knob-segment-bytes" value={values.storage.2.to_string()} onchange={live(Knob::Storage(StorageSetting::SegmentBytes))} />
                    </label>
                    <label>{ "internal.segment.bytes " }
                        <KnobInput live=true testid="knob-internal-segment-bytes" value={values.storage.3.to_string()} onchange={live(Knob::Storage(StorageSetting::InternalSegmentBytes))} />
                    </label>
                    <p class="muted hint">{ "Topic storage (kafka-configs --alter on every topic): retention deletes the oldest segments whose newest record is older than retention.ms (the active one too, once it is due), or the oldest while a log is over retention.bytes, at each broker's retention check (every log.retention.check.interval.ms, 5 min by default). -1 means no limit. Kafka 4.1 refuses a segment.bytes below 1 MiB, which would take hours to fill here; internal.segment.bytes is Kafka's test-only setting that overrides it with no minimum (-1: not set), so set it to a few KB to see segments roll within seconds." }</p>
                    <label>{ "flush.messages " }
                        <KnobInput live=true testid="knob-flush-messages" value={values.flush_messages.to_string()} onchange={live(Knob::Storage(StorageSetting::FlushMessages))} />
                    </label>
                    <p class="muted hint">{ "How many records a log may hold that are not yet synced to disk (-1: not set, Kafka's default, log.flush.interval.messages: never). Kafka leaves durability to replication: a crash keeps the page cache, a power loss does not. 1 syncs every record, which costs a real broker its throughput and costs nothing here; with it, a power loss of every broker loses nothing acknowledged (try it with Chaos)." }</p>
                    <label>{ "cleanup.policy " }
                        <select key={format!("cleanup-{refusals}")} data-testid="knob-cleanup-policy" onchange={live(Knob::CleanupPolicy)}>
                            { for ["delete", "compact", "compact,delete"].iter().map(|value| html! { <option value={*value} selected={values.cleanup.0 == *value}>{ *value }</option> }) }
                        </select>
                    </label>
                    <label>{ "min.cleanable.dirty.ratio " }
                        <KnobInput live=true testid="knob-dirty-ratio" value={values.cleanup.1.to_string()} onchange={live(Knob::MinCleanableDirtyRatio)} />
                    </label>
                    <label>{ "min.compaction.lag.ms " }
                        <KnobInput live=true testid="knob-compaction-lag" value={values.cleanup.2.to_string()} onchange={live(Knob::Storage(StorageSetting::MinCompactionLagMs))} />
                    </label>
                    <label>{ "delete.retention.ms " }
                        <KnobInput live=true testid="knob-delete-retention" value={values.cleanup.3.to_string()} onchange={live(Knob::Storage(StorageSetting::DeleteRetentionMs))} />
                    </label>
                    <p class="muted hint">{ format!(
                        "Compaction: each broker's cleaner (every log.cleaner.backoff.ms, {} s here) cleans a compacted log once its dirty part is over min.cleanable.dirty.ratio and older than min.compaction.lag.ms, keeping the latest record of each key; a tombstone stays delete.retention.ms after the first cleaning that saw it. The active segment is never cleaned.",
                        values.cleaner_backoff_ms / 1_000
                    ) }</p>
                </fieldset>
                <fieldset class="knob-group" data-testid="knobs-quota">
                    <legend>{ "Client quotas (default, every client id)" }</legend>
                    <label>{ "producer_byte_rate " }
                        <KnobInput live=true testid="knob-producer-byte-rate" value={values.quota.0.clone()} onchange={live(Knob::ProducerByteRate)} />
                    </label>
                    <label>{ "consumer_byte_rate " }
                        <KnobInput live=true testid="knob-consumer-byte-rate" value={values.quota.1.clone()} onchange={live(Knob::ConsumerByteRate)} />
                    </label>
                    <p class="muted hint">{ "Bytes a second per broker (kafka-configs --alter --entity-type clients --entity-default); empty: no quota. A client over it gets throttle_time_ms in its answers (a fetch answer comes back empty) and the broker mutes its connection for that long." }</p>
                </fieldset>
                { broker_knobs(values, refusals, &live) }
                <fieldset class="knob-group" data-testid="knobs-consumer">
                    <legend>{ "Consumer" }</legend>
                    <p class="muted hint">{ "Each member has its own: select it on the map (commit mode, processing time, crash, pause)." }</p>
                </fieldset>
            </fieldset>
            <fieldset>
                <legend>{ "Shape: these start a new run" }</legend>
                <label>{ "brokers " }<KnobInput testid="knob-brokers" value={props.setup.brokers.to_string()} onchange={setup_field(SetupField::Brokers)} /></label>
                <label>{ "partitions " }<KnobInput testid="knob-partitions" value={props.setup.partitions.to_string()} onchange={setup_field(SetupField::Partitions)} /></label>
                <label>{ "replication factor " }<KnobInput testid="knob-rf" value={props.setup.replication_factor.to_string()} onchange={setup_field(SetupField::ReplicationFactor)} /></label>
                <label>{ "assignor " }
                    <select data-testid="knob-assignor" onchange={on_assignor}>
                        { for ASSIGNORS.iter().map(|(value, label)| html! { <option value={*value} selected={props.setup.assignor == *value}>{ *label }</option> }) }
                    </select>
                </label>
                <label>{ "billing consumers " }<KnobInput testid="knob-billing" value={props.setup.billing.to_string()} onchange={setup_field(SetupField::BillingConsumers)} /></label>
                <label>{ "search consumers " }<KnobInput testid="knob-search" value={props.setup.search.to_string()} onchange={setup_field(SetupField::SearchConsumers)} /></label>
                <label>{ "seed " }<KnobInput testid="knob-seed" value={props.setup.seed.to_string()} onchange={setup_field(SetupField::Seed)} /></label>
                <button type="submit" data-testid="knob-apply">{ "Start a new run with these" }</button>
            </fieldset>
            { if let Some(message) = &props.knob_error { html! { <p class="error" role="alert" data-testid="knob-error">{ message }</p> } } else { html! {} } }
        </form>
    }
}

/// The broker's live knobs (and the cluster's `transaction.version`).
fn broker_knobs(values: &KnobValues, refusals: u32, live: &dyn Fn(Knob) -> Callback<Event>) -> Html {
    html! {
    <fieldset class="knob-group" data-testid="knobs-broker">
        <legend>{ "Broker" }</legend>
        <label>
            <input type="checkbox" data-testid="knob-unclean" checked={values.unclean} onchange={live(Knob::UncleanLeaderElection)} />
            { " unclean.leader.election.enable" }
        </label>
        <p class="muted hint">{ format!(
            "With it on, a partition whose leader is fenced gets an unclean leader at once; one already offline waits for the controller's periodic pass (unclean.leader.election.interval.ms, {} s).",
            values.unclean_interval_ms / 1_000
        ) }</p>
        <label>{ "replica.lag.time.max.ms " }
            <KnobInput live=true testid="knob-lag" value={values.lag_ms.to_string()} onchange={live(Knob::ReplicaLagTimeMaxMs)} />
        </label>
        <label>{ "transaction.version " }
            <select key={format!("transaction-version-{refusals}")} data-testid="knob-transaction-version" onchange={live(Knob::TransactionVersion)}>
                { for ["0", "1", "2"].iter().map(|value| html! { <option value={*value} selected={values.transaction_version.to_string() == *value}>{ *value }</option> }) }
            </select>
        </label>
        <label>
            <input key={format!("verification-{refusals}")} type="checkbox" data-testid="knob-verification" checked={values.verification} onchange={live(Knob::TransactionPartitionVerification)} />
            { " transaction.partition.verification.enable" }
        </label>
        <p class="muted hint">{ "transaction.version is a cluster feature (kafka-features upgrade or downgrade). 2 (the default on a new Kafka 4.1 cluster) bumps the producer epoch at every EndTxn (commit or abort) and has partition leaders add partitions to transactions (KIP-890 part 2); 0 and 1 run the protocol as it was. A running producer picks up a change only when its next transaction starts. With verification on, a leader asks the transaction coordinator before it takes a transaction's first batch, so a late write cannot open a transaction nobody knows of." }</p>
    </fieldset>
    }
}
