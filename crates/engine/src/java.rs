//! Small pieces of Java semantics that Kafka's answers depend on.
//!
//! Kafka is written in Java, and some of its observable behaviour follows
//! from Java's integer arithmetic and library hash functions. Reproducing
//! them exactly is what lets kafkascope give the same partition or the same
//! coordinator that a real cluster would.

/// Java's `String.hashCode()`: `s[0]*31^(n-1) + ... + s[n-1]` over the
/// string's UTF-16 code units, with wrapping 32-bit `int` arithmetic.
///
/// Kafka uses it to place a consumer group on a `__consumer_offsets`
/// partition (`GroupCoordinatorService#partitionFor`).
pub fn string_hash_code(text: &str) -> i32 {
    text.encode_utf16()
        .fold(0i32, |hash, unit| hash.wrapping_mul(31).wrapping_add(i32::from(unit)))
}

/// Kafka's `Utils.abs`: the absolute value, except that `i32::MIN` (which has
/// no positive counterpart) maps to 0 rather than staying negative.
pub fn kafka_abs(value: i32) -> i32 {
    if value == i32::MIN {
        0
    } else {
        value.abs()
    }
}

/// Kafka's `Utils.toPositive`: clears the sign bit (`value & 0x7fffffff`).
///
/// Note this is *not* an absolute value: `toPositive(-1)` is `i32::MAX`.
/// The producer's key partitioner uses it (`BuiltInPartitioner#partitionForKey`).
pub fn to_positive(value: i32) -> i32 {
    value & 0x7fff_ffff
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_code_of_empty_string_is_zero() {
        assert_eq!(string_hash_code(""), 0);
    }

    #[test]
    fn hash_code_uses_utf16_code_units() {
        // "a" is 97; a character outside the BMP is two code units.
        assert_eq!(string_hash_code("a"), 97);
        let surrogate_pair = "\u{1F600}";
        let expected = 0xD83Di32 * 31 + 0xDE00;
        assert_eq!(string_hash_code(surrogate_pair), expected);
    }

    #[test]
    fn kafka_abs_maps_min_value_to_zero() {
        assert_eq!(kafka_abs(i32::MIN), 0);
        assert_eq!(kafka_abs(-10), 10);
    }

    #[test]
    fn to_positive_clears_the_sign_bit() {
        assert_eq!(to_positive(-1), i32::MAX);
        assert_eq!(to_positive(i32::MIN), 0);
        assert_eq!(to_positive(5), 5);
    }
}

/// Java's `String.compareTo`: lexicographic over UTF-16 code units.
///
/// This differs from Rust's `str` ordering (by code point) only between
/// characters above U+FFFF and those in U+E000..=U+FFFF, but Kafka sorts
/// member ids this way, so we do too.
pub fn compare_strings(left: &str, right: &str) -> std::cmp::Ordering {
    left.encode_utf16().cmp(right.encode_utf16())
}

#[cfg(test)]
mod compare_tests {
    use super::compare_strings;
    use std::cmp::Ordering;

    #[test]
    fn orders_by_utf16_code_units() {
        assert_eq!(compare_strings("a", "b"), Ordering::Less);
        assert_eq!(compare_strings("consumer10", "consumer2"), Ordering::Less);
        // U+1F600 is the surrogate pair D83D DE00, which sorts below U+FFFD.
        assert_eq!(compare_strings("\u{1F600}", "\u{FFFD}"), Ordering::Less);
        assert_eq!("\u{1F600}".cmp("\u{FFFD}"), Ordering::Greater);
    }
}

/// The bucket of a `java.util.HashMap` table of `capacity` (a power of
/// two) that a key with this `hashCode` falls in: `HashMap#hash` spreads the
/// high bits down (`h ^ (h >>> 16)`), then the low bits pick the bucket.
pub fn hash_map_bucket(hash: i32, capacity: usize) -> usize {
    debug_assert!(capacity.is_power_of_two());
    let bits = hash as u32;
    ((bits ^ (bits >> 16)) as usize) & (capacity - 1)
}

/// The table capacity of a `java.util.HashMap` that started at
/// `initial_capacity` (16 for `new HashMap<>()`) and then had `size`
/// distinct keys inserted: it doubles whenever the size passes three
/// quarters of the capacity.
pub fn hash_map_capacity(initial_capacity: usize, size: usize) -> usize {
    let mut capacity = initial_capacity.max(1).next_power_of_two();
    while size > capacity / 4 * 3 {
        capacity *= 2;
    }
    capacity
}

/// The initial capacity of `new HashSet<>(collection)` (and
/// `new HashMap<>(map)`): `max(size / 0.75 + 1, 16)`, rounded up to a power
/// of two.
pub fn hash_set_copy_capacity(size: usize) -> usize {
    let wanted = ((size as f32 / 0.75) as usize + 1).max(16);
    wanted.next_power_of_two()
}

/// The order in which a `java.util.HashMap` or `HashSet` iterates keys that
/// were inserted in the order of `hashes` (each key's `hashCode`), all
/// distinct, into a table of `capacity` buckets: bucket by bucket, and
/// within a bucket in insertion order (a resize keeps that order). Returns
/// indices into `hashes`.
///
/// Some of Kafka's assignors iterate members or topics from a `HashMap`, so
/// their output depends on this order. Treeified buckets (eight or more
/// colliding keys in a table of 64 or more) are not modelled.
pub fn hash_map_iteration_order(hashes: &[i32], capacity: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..hashes.len()).collect();
    // A stable sort keeps insertion order within a bucket.
    crate::sorting::sort_by_key(&mut order, |&index| hash_map_bucket(hashes[index], capacity));
    order
}

/// Kafka's `Uuid#hashCode` for a topic id written in Kafka's string form
/// (22 characters of URL-safe base64 without padding): with `x` the xor of
/// the two 64-bit halves, `(int)(x >> 32) ^ (int)x`. `None` if `text` is not
/// a Kafka Uuid.
pub fn uuid_hash_code(text: &str) -> Option<i32> {
    let (most_significant, least_significant) = uuid_bits(text)?;
    Some(uuid_bits_hash_code(most_significant, least_significant))
}

/// `Uuid#hashCode` from the two halves of a Kafka `Uuid`.
pub fn uuid_bits_hash_code(most_significant: i64, least_significant: i64) -> i32 {
    let mixed = most_significant ^ least_significant;
    ((mixed >> 32) as i32) ^ (mixed as i32)
}

/// The two signed 64-bit halves of a Kafka `Uuid` in its string form, as
/// `Uuid#getMostSignificantBits` and `getLeastSignificantBits` return them.
/// `Uuid#compareTo` orders by these halves, each compared as a signed long.
pub fn uuid_bits(text: &str) -> Option<(i64, i64)> {
    let bytes = decode_base64_url(text)?;
    let bytes: [u8; 16] = bytes.try_into().ok()?;
    let most_significant = i64::from_be_bytes(bytes[..8].try_into().ok()?);
    let least_significant = i64::from_be_bytes(bytes[8..].try_into().ok()?);
    Some((most_significant, least_significant))
}

/// Decodes unpadded URL-safe base64 (RFC 4648 §5).
fn decode_base64_url(text: &str) -> Option<Vec<u8>> {
    let value_of = |character: u8| -> Option<u32> {
        Some(match character {
            b'A'..=b'Z' => character - b'A',
            b'a'..=b'z' => character - b'a' + 26,
            b'0'..=b'9' => character - b'0' + 52,
            b'-' => 62,
            b'_' => 63,
            _ => return None,
        } as u32)
    };
    let mut output = Vec::with_capacity(text.len() * 3 / 4);
    let mut buffer = 0u32;
    let mut bits = 0;
    for character in text.bytes() {
        buffer = (buffer << 6) | value_of(character)?;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            output.push((buffer >> bits) as u8);
            buffer &= (1 << bits) - 1;
        }
    }
    // A lone 6-bit group cannot end a valid encoding. Leftover bits are
    // ignored, as Java's `Base64.Decoder` (which Kafka's `Uuid` uses) does.
    (bits < 6).then_some(output)
}

#[cfg(test)]
mod hash_order_tests {
    use super::*;

    #[test]
    fn capacity_doubles_past_three_quarters() {
        assert_eq!(hash_map_capacity(16, 12), 16);
        assert_eq!(hash_map_capacity(16, 13), 32);
        assert_eq!(hash_set_copy_capacity(3), 16);
        assert_eq!(hash_set_copy_capacity(12), 32);
    }

    #[test]
    fn consecutive_hashes_iterate_by_bucket() {
        // consumer1..3 hash to -421004549..-421004547: buckets 14, 15, 12
        // after spreading, so Java iterates consumer3, consumer2, consumer1.
        let hashes: Vec<i32> = ["consumer1", "consumer2", "consumer3"]
            .iter()
            .map(|s| string_hash_code(s))
            .collect();
        assert_eq!(hash_map_iteration_order(&hashes, 16), vec![2, 1, 0]);
    }

    #[test]
    fn bad_uuids_have_no_hash() {
        assert_eq!(uuid_hash_code("not a uuid"), None);
        assert_eq!(uuid_hash_code(""), None);
    }
}
