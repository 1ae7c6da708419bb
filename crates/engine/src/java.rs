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
