//! The producer's `acks`: how many replicas must have a batch before the
//! leader answers.

use serde::Serialize;

/// The producer's `acks` setting. Written as Kafka spells it (`"all"`,
/// `"1"`, `"0"`); read from any spelling Kafka's `ProducerConfig` takes
/// (`"all"`, `"-1"`, `"1"`, `"0"`, or the numbers -1, 1, 0) and from the
/// names older scenario files used (`"All"`, `"Leader"`, `"None"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Acks {
    /// `acks=0`: no response at all.
    None,
    /// `acks=1`: answered once the leader appended.
    Leader,
    /// `acks=all` (`-1`): answered once the high watermark passes the records.
    All,
}

impl Acks {
    /// Reads one of the spellings [`Acks`] accepts.
    pub fn parse(text: &str) -> Option<Acks> {
        match text {
            "all" | "-1" | "All" => Some(Acks::All),
            "1" | "Leader" => Some(Acks::Leader),
            "0" | "None" => Some(Acks::None),
            _ => None,
        }
    }
}

impl std::fmt::Display for Acks {
    /// `all`, `1` or `0`, as in `acks=all`.
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            Acks::All => "all",
            Acks::Leader => "1",
            Acks::None => "0",
        })
    }
}

impl Serialize for Acks {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// `acks` as a scenario file writes it (`"all"`, `"1"`, `"0"`, or the
/// numbers -1, 1, 0), for the format's schema.
#[cfg(feature = "schema")]
impl schemars::JsonSchema for Acks {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Acks".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "The producer's acks: \"all\" (or -1) waits for every in-sync replica, \"1\" for the leader only, \"0\" for nothing.",
            "enum": ["all", "1", "0", -1, 1, 0]
        })
    }
}

impl<'de> serde::Deserialize<'de> for Acks {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Acks, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Acks;
            fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                formatter.write_str("acks: \"all\", \"1\" or \"0\" (or -1, 1, 0)")
            }
            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Acks, E> {
                Acks::parse(text).ok_or_else(|| {
                    E::custom(format!(
                        "Invalid value {text} for configuration acks: String must be one of: all, -1, 0, 1"
                    ))
                })
            }
            fn visit_i64<E: serde::de::Error>(self, number: i64) -> Result<Acks, E> {
                self.visit_str(&number.to_string())
            }
            fn visit_u64<E: serde::de::Error>(self, number: u64) -> Result<Acks, E> {
                self.visit_str(&number.to_string())
            }
            fn visit_f64<E: serde::de::Error>(self, number: f64) -> Result<Acks, E> {
                if number.fract() == 0.0 && number.abs() < 1e9 {
                    self.visit_i64(number as i64)
                } else {
                    self.visit_str(&number.to_string())
                }
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}
