//! Client byte-rate quotas (`ClientQuotaManager`): a broker measures each
//! client id's bytes over a sliding window of samples (`SampledStat`,
//! `Rate`) and, when the rate passes the quota, answers with a throttle
//! time long enough to bring the rate back to the quota
//! (`QuotaUtils#throttleTime`), and mutes the connection for that long
//! (KIP-219).

use serde::Serialize;

/// `quota.window.num`: samples kept (11).
pub const QUOTA_WINDOW_NUM_DEFAULT: usize = 11;
/// `quota.window.size.seconds` (1 s), in ms.
pub const QUOTA_WINDOW_SIZE_MS_DEFAULT: i64 = 1_000;

/// The most a fetch answer may hold under a byte-rate quota, per byte a
/// second: what the quota lets through over the window count less one
/// (`ClientQuotaManager#getMaxValueInQuotaWindow`: quota ×
/// (samples − 1) × window seconds).
pub fn max_bytes_in_quota_window(quota_bytes_per_second: u64) -> u64 {
    let seconds = (QUOTA_WINDOW_NUM_DEFAULT as u64 - 1) * (QUOTA_WINDOW_SIZE_MS_DEFAULT as u64) / 1_000;
    quota_bytes_per_second.saturating_mul(seconds)
}

/// One sample window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
struct Sample {
    start_ms: i64,
    last_event_ms: i64,
    value: f64,
}

/// A byte rate over `samples` windows of `window_ms` (`Rate` over a
/// `WindowedSum`), in bytes per second.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ByteRate {
    samples: Vec<Sample>,
    current: usize,
    window_count: usize,
    window_ms: i64,
}

impl ByteRate {
    /// A rate with Kafka's quota windows (11 × 1 s).
    pub fn new() -> Self {
        ByteRate::with_windows(QUOTA_WINDOW_NUM_DEFAULT, QUOTA_WINDOW_SIZE_MS_DEFAULT)
    }

    /// A rate over `window_count` windows of `window_ms`.
    pub fn with_windows(window_count: usize, window_ms: i64) -> Self {
        ByteRate {
            samples: Vec::new(),
            current: 0,
            window_count: window_count.max(1),
            window_ms: window_ms.max(1),
        }
    }

    /// Counts `bytes` at `now_ms` (`SampledStat#record`): a new window
    /// starts when the current one is a window old.
    pub fn record(&mut self, bytes: f64, now_ms: i64) {
        if self.samples.is_empty() {
            self.samples.push(Sample {
                start_ms: now_ms,
                last_event_ms: now_ms,
                value: 0.0,
            });
        }
        if now_ms - self.samples[self.current].start_ms >= self.window_ms {
            // One spare sample for a window overlapping the oldest.
            self.current = (self.current + 1) % (self.window_count + 1);
            let fresh = Sample {
                start_ms: now_ms,
                last_event_ms: now_ms,
                value: 0.0,
            };
            if self.current >= self.samples.len() {
                self.samples.push(fresh);
            } else {
                self.samples[self.current] = fresh;
            }
        }
        let sample = &mut self.samples[self.current];
        sample.value += bytes;
        sample.last_event_ms = now_ms;
    }

    /// Forgets windows older than all of them together (`purgeObsoleteSamples`).
    fn purge(&mut self, now_ms: i64) {
        let expire_age = self.window_count as i64 * self.window_ms;
        for sample in &mut self.samples {
            if now_ms - sample.last_event_ms >= expire_age {
                *sample = Sample {
                    start_ms: now_ms,
                    last_event_ms: now_ms,
                    value: 0.0,
                };
            }
        }
    }

    /// The time the rate is measured over (`Rate#windowSize`): from the
    /// oldest sample's start, but never less than `samples - 1` whole
    /// windows, so that a client's first burst is not measured over a
    /// few milliseconds.
    pub fn window_size_ms(&mut self, now_ms: i64) -> i64 {
        self.purge(now_ms);
        let oldest = self
            .samples
            .iter()
            .map(|sample| sample.start_ms)
            .min()
            .unwrap_or(now_ms);
        let mut elapsed = now_ms - oldest;
        let full_windows = elapsed / self.window_ms;
        let min_full_windows = self.window_count as i64 - 1;
        if full_windows < min_full_windows {
            elapsed += (min_full_windows - full_windows) * self.window_ms;
        }
        elapsed.max(1)
    }

    /// Bytes per second at `now_ms` (`Rate#measure`).
    pub fn measure(&mut self, now_ms: i64) -> f64 {
        self.purge(now_ms);
        let total: f64 = self.samples.iter().map(|sample| sample.value).sum();
        total / (self.window_size_ms(now_ms) as f64 / 1_000.0)
    }

    /// Records `bytes` and returns the throttle time the broker answers
    /// with, 0 when the rate stays within `quota_bytes_per_second`
    /// (`ClientQuotaManager#recordAndGetThrottleTimeMs`,
    /// `QuotaUtils#throttleTime`).
    pub fn record_and_throttle_ms(&mut self, bytes: f64, now_ms: i64, quota_bytes_per_second: f64) -> u64 {
        self.record(bytes, now_ms);
        let rate = self.measure(now_ms);
        if rate <= quota_bytes_per_second {
            return 0;
        }
        let window = self.window_size_ms(now_ms) as f64;
        ((rate - quota_bytes_per_second) / quota_bytes_per_second * window).round() as u64
    }

    /// Takes back bytes recorded for a fetch that was throttled and so
    /// answered empty (`ClientQuotaManager#unrecordQuotaSensor`).
    pub fn unrecord(&mut self, bytes: f64, now_ms: i64) {
        self.record(-bytes, now_ms);
    }
}

/// Rates are compared exactly; they are never NaN.
impl Eq for ByteRate {}

impl Default for ByteRate {
    fn default() -> Self {
        ByteRate::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ClientQuotaManagerTest#testQuotaViolation`: 500 B/s, ten 400-byte
    /// requests a second apart, then 2300 bytes 1.5 s after the last:
    /// 6300 bytes over 10.5 s is 600 B/s, so 100/500 × 10.5 s = 2100 ms.
    /// Ten more seconds at 400 B/s and the burst has rolled out.
    #[test]
    fn kafka_quota_violation_vector() {
        let mut rate = ByteRate::new();
        let mut now = 0;
        for _ in 0..10 {
            assert_eq!(rate.record_and_throttle_ms(400.0, now, 500.0), 0);
            now += 1_000;
        }
        now += 500;
        let throttle = rate.record_and_throttle_ms(2_300.0, now, 500.0);
        assert_eq!(throttle, 2_100);
        now += throttle as i64;
        for _ in 0..10 {
            rate.record_and_throttle_ms(400.0, now, 500.0);
            now += 1_000;
        }
        assert_eq!(rate.record_and_throttle_ms(0.0, now, 500.0), 0);
    }
}
