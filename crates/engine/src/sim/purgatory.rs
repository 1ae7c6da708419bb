//! The broker's purgatory of appends (`DelayedProduce` and the
//! coordinators' writes waiting in `CoordinatorRuntime`): an append that
//! waits for the high watermark, who waits for it and how to answer. The
//! broker keeps them per partition; its group and transaction
//! coordinators park their writes there too.

use serde::Serialize;

use crate::protocol::{NodeId, Offset};

/// Who waits for a parked append, and how to answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum ParkedReply {
    /// One partition's part of a producer's acks=all request.
    Produce {
        /// The request id.
        request: u64,
        /// The request's `timeoutMs` (the producer's `request.timeout.ms`).
        timeout_ms: u64,
    },
    /// A group coordinator's write (offset commits, group metadata).
    CoordinatorWrite {
        /// The write's id on its coordinator.
        write: u64,
    },
    /// A transaction coordinator's write (a transaction's new state).
    TxnWrite {
        /// The write's id on its coordinator.
        write: u64,
    },
    /// A transaction marker the coordinator (the parked client) asked for.
    TxnMarker {
        /// Whose transaction.
        transactional_id: String,
    },
}

/// An append waiting for the high watermark (acks=all, offset commits).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Parked {
    /// How to answer.
    pub reply: ParkedReply,
    /// Who to answer.
    pub client: NodeId,
    /// The id of its expiry timer.
    pub timer: u64,
    /// The batch's base offset.
    pub base_offset: Offset,
    /// Last offset + 1.
    pub required_offset: Offset,
}
