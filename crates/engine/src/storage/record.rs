//! Records and record batches as a broker stores them, sized as Kafka's
//! message format v2 encodes them (`DefaultRecord`, `DefaultRecordBatch`),
//! uncompressed. The engine keeps no bytes; it keeps what a record *is*
//! (key, value size or a tombstone, create time, headers) and computes the
//! bytes Kafka would write, so that segment sizes, index positions and
//! `segment.bytes` rolls come out as Kafka's do.

use std::rc::Rc;

use serde::Serialize;

use crate::protocol::Offset;

pub use crate::protocol::records::{BatchProducer, LogBatch};

/// Kafka's `RecordBatch.NO_TIMESTAMP`.
pub const NO_TIMESTAMP: i64 = -1;

/// The fixed part of a v2 batch, before its records
/// (`DefaultRecordBatch.RECORD_BATCH_OVERHEAD`): base offset, length,
/// leader epoch, magic, CRC, attributes, last offset delta, base and max
/// timestamps, producer id and epoch, base sequence, record count.
pub const RECORD_BATCH_OVERHEAD: u32 = 61;

/// One record header: a key and a value size (`None` for a null value).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Header {
    /// The header's key.
    pub key: Rc<str>,
    /// The value's size in bytes, or `None` for a null value.
    pub value_size: Option<u32>,
}

/// A record in a log, at its offset. `P` is what the simulation attaches
/// to it (which produced record it is); the storage rules never read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogRecord<P> {
    /// Its offset in the partition.
    pub offset: Offset,
    /// Its timestamp (`CreateTime`: set by the producer), in ms.
    pub timestamp: i64,
    /// Its key, or `None` for a keyless record.
    pub key: Option<Rc<str>>,
    /// Its value's size in bytes, or `None` for a null value: a tombstone,
    /// which deletes the key from a compacted topic.
    pub value_size: Option<u32>,
    /// Its headers.
    pub headers: Vec<Header>,
    /// The simulation's own data about the record.
    pub payload: P,
}

impl<P> LogRecord<P> {
    /// Whether it is a tombstone (a null value).
    pub fn is_tombstone(&self) -> bool {
        self.value_size.is_none()
    }
}

/// What the storage rules read from a record: its offset, timestamp, key,
/// value size and headers' size. [`LogRecord`] is the plain one; the
/// simulation's records carry more.
pub trait StoredRecord: Clone {
    /// Its offset in the partition.
    fn offset(&self) -> Offset;
    /// Its timestamp in ms (`NO_TIMESTAMP` if none).
    fn timestamp(&self) -> i64;
    /// Its key, if any.
    fn key(&self) -> Option<&Rc<str>>;
    /// Its value's size, `None` for a tombstone.
    fn value_size(&self) -> Option<u32>;
    /// The encoded size of its headers: the count, then each header.
    fn headers_size(&self) -> u32;
    /// Whether it is a tombstone.
    fn is_tombstone(&self) -> bool {
        self.value_size().is_none()
    }
}

impl<P: Clone> StoredRecord for LogRecord<P> {
    fn offset(&self) -> Offset {
        self.offset
    }
    fn timestamp(&self) -> i64 {
        self.timestamp
    }
    fn key(&self) -> Option<&Rc<str>> {
        self.key.as_ref()
    }
    fn value_size(&self) -> Option<u32> {
        self.value_size
    }
    fn headers_size(&self) -> u32 {
        headers_size(&self.headers)
    }
}

/// The encoded size of a record's headers: a varint count, then each
/// header's key and value with their lengths.
pub fn headers_size(headers: &[Header]) -> u32 {
    let sized = |size: Option<u32>| size.map_or(1, |size| varint_size(i64::from(size)) + size);
    varint_size(headers.len() as i64)
        + headers
            .iter()
            .map(|header| sized(Some(header.key.len() as u32)) + sized(header.value_size))
            .sum::<u32>()
}

impl<R: StoredRecord> LogBatch<R> {
    /// A batch of `records`, whose offsets must be consecutive from the
    /// first. Its size is computed here.
    ///
    /// # Panics
    /// If `records` is empty.
    pub fn new(records: Vec<R>, producer: Option<BatchProducer>) -> Self {
        let first = records.first().expect("a batch has at least one record");
        let base_offset = first.offset();
        let last_offset = records.last().map_or(base_offset, StoredRecord::offset);
        let max_timestamp = records
            .iter()
            .map(StoredRecord::timestamp)
            .max()
            .unwrap_or(NO_TIMESTAMP);
        let mut batch = LogBatch {
            base_offset,
            last_offset,
            max_timestamp,
            delete_horizon_ms: None,
            producer,
            records,
            size_bytes: 0,
        };
        batch.size_bytes = batch.encoded_size();
        batch
    }

    /// The offset after it.
    pub fn next_offset(&self) -> Offset {
        self.last_offset + 1
    }

    /// Whether it is a control batch (a transaction marker).
    pub fn is_control(&self) -> bool {
        self.producer.is_some_and(|producer| producer.control)
    }

    /// The batch's base timestamp: the delete horizon when one is set
    /// (`MemoryRecordsBuilder`), else the first record's timestamp.
    fn base_timestamp(&self) -> i64 {
        self.delete_horizon_ms
            .or_else(|| self.records.first().map(StoredRecord::timestamp))
            .unwrap_or(NO_TIMESTAMP)
    }

    /// Its size as v2 encodes it: the header, then each record with its
    /// offset and timestamp as deltas from the batch's base.
    pub fn encoded_size(&self) -> u32 {
        let base_timestamp = self.base_timestamp();
        RECORD_BATCH_OVERHEAD
            + self
                .records
                .iter()
                .map(|record| {
                    record_size(
                        (record.offset() - self.base_offset) as i64,
                        record.timestamp() - base_timestamp,
                        record.key().map(|key| key.len() as u32),
                        record.value_size(),
                        record.headers_size(),
                    )
                })
                .sum::<u32>()
    }
}

/// The bytes of one v2 record (`DefaultRecord.sizeInBytes`): a varint
/// length, then attributes, the offset and timestamp deltas, key, value and
/// headers (`headers_size`, see [`headers_size`]), each length a zig-zag
/// varint (-1 for null).
pub fn record_size(
    offset_delta: i64,
    timestamp_delta: i64,
    key_size: Option<u32>,
    value_size: Option<u32>,
    headers_size: u32,
) -> u32 {
    let sized = |size: Option<u32>| size.map_or(1, |size| varint_size(i64::from(size)) + size);
    let body = 1
        + varint_size(offset_delta)
        + varint_size(timestamp_delta)
        + sized(key_size)
        + sized(value_size)
        + headers_size;
    body + varint_size(i64::from(body))
}

/// Bytes of a zig-zag varint (`ByteUtils.sizeOfVarint`/`sizeOfVarlong`).
pub fn varint_size(value: i64) -> u32 {
    let mut zigzag = ((value << 1) ^ (value >> 63)) as u64;
    let mut bytes = 1;
    while zigzag >= 0x80 {
        zigzag >>= 7;
        bytes += 1;
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_are_zigzag_encoded() {
        assert_eq!(varint_size(0), 1);
        assert_eq!(varint_size(-1), 1);
        assert_eq!(varint_size(63), 1);
        assert_eq!(varint_size(64), 2);
        assert_eq!(varint_size(-65), 2);
        assert_eq!(varint_size(i64::from(i32::MAX)), 5);
    }

    #[test]
    fn a_batch_is_its_header_and_its_records() {
        // Kafka writes 184 bytes for these three records (vectors-log-storage seg-0).
        let record = |offset, timestamp, value| LogRecord {
            offset,
            timestamp,
            key: Some(Rc::from("k5")),
            value_size: Some(value),
            headers: Vec::new(),
            payload: (),
        };
        let batch = LogBatch::new(vec![record(0, 10, 54), record(1, 12, 24), record(2, 10, 18)], None);
        assert_eq!(batch.size_bytes, 184);
    }
}
