//! Kafka's 32-bit MurmurHash2 (`org.apache.kafka.common.utils.Utils#murmur2`).
//!
//! The arithmetic is Java `int` arithmetic: multiplication wraps, and the
//! right shifts are *unsigned* (`>>>`). Doing the work on `u32` gives exactly
//! those bit patterns; the result is reinterpreted as a signed `i32` at the
//! end, because Kafka's partitioner and its tests see a signed value.

/// Kafka's seed for murmur2.
const SEED: u32 = 0x9747_b28c;
/// The MurmurHash2 mixing constant.
const MIX: u32 = 0x5bd1_e995;
/// The MurmurHash2 shift.
const SHIFT: u32 = 24;

/// murmur2 of `data`, exactly as Kafka computes it (a signed Java `int`).
pub fn murmur2(data: &[u8]) -> i32 {
    // Java computes `seed ^ length` on an int; only the low 32 bits of the
    // length take part, which is what truncating to u32 keeps.
    let mut hash = SEED ^ (data.len() as u32);

    let mut words = data.chunks_exact(4);
    for word in &mut words {
        let mut k = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
        k = k.wrapping_mul(MIX);
        k ^= k >> SHIFT;
        k = k.wrapping_mul(MIX);
        hash = hash.wrapping_mul(MIX);
        hash ^= k;
    }

    // The last 1 to 3 bytes fold into the hash the way Java's fall-through
    // switch does: byte 2 shifted by 16, byte 1 by 8, byte 0 as is.
    let tail = words.remainder();
    if !tail.is_empty() {
        for (index, byte) in tail.iter().enumerate().rev() {
            hash ^= u32::from(*byte) << (8 * index);
        }
        hash = hash.wrapping_mul(MIX);
    }

    hash ^= hash >> 13;
    hash = hash.wrapping_mul(MIX);
    hash ^= hash >> 15;
    hash as i32
}

#[cfg(test)]
mod tests {
    use super::murmur2;

    // From Kafka's UtilsTest#testMurmur2 (also in the shared vectors file,
    // which the integration tests read in full).
    #[test]
    fn matches_kafkas_short_vectors() {
        assert_eq!(murmur2(b"21"), -973932308);
        assert_eq!(murmur2(b"foobar"), -790332482);
        assert_eq!(murmur2(b"abc"), 479470107);
    }
}
