//! The engine's only source of randomness: a small, named, portable
//! generator, owned by whoever drives a run and seeded from the scenario.
//!
//! PCG-XSH-RR 64/32 (O'Neill, 2014): 64-bit state, 32-bit output. It is
//! tiny, well studied, and gives the same sequence on every platform and in
//! wasm, so a seed reproduces a run exactly. (Kafka itself uses
//! `ThreadLocalRandom`; where Kafka draws a random `int`, we draw one here.)

/// A seeded PCG32 generator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rng {
    state: u64,
    increment: u64,
}

const MULTIPLIER: u64 = 6_364_136_223_846_793_005;

impl Rng {
    /// A generator for `seed` on `stream` (different streams give
    /// independent sequences from the same seed).
    pub fn new(seed: u64, stream: u64) -> Rng {
        let mut rng = Rng {
            state: 0,
            increment: (stream << 1) | 1,
        };
        rng.next_u32();
        rng.state = rng.state.wrapping_add(seed);
        rng.next_u32();
        rng
    }

    /// A generator for a named subsystem, derived from this one's seed
    /// material without disturbing this generator's own sequence.
    pub fn derive(&self, label: &str) -> Rng {
        let mut stream = 0xcbf2_9ce4_8422_2325u64;
        for byte in label.bytes() {
            stream = (stream ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        Rng::new(self.state ^ stream.rotate_left(17), stream)
    }

    /// The next 32 random bits.
    pub fn next_u32(&mut self) -> u32 {
        let old = self.state;
        self.state = old.wrapping_mul(MULTIPLIER).wrapping_add(self.increment);
        let xorshifted = (((old >> 18) ^ old) >> 27) as u32;
        let rotation = (old >> 59) as u32;
        xorshifted.rotate_right(rotation)
    }

    /// A random Java `int` (`ThreadLocalRandom#nextInt()`'s range).
    pub fn next_java_int(&mut self) -> i32 {
        self.next_u32() as i32
    }
}

#[cfg(test)]
mod tests {
    use super::Rng;

    #[test]
    fn matches_the_pcg32_reference_sequence() {
        // pcg32_srandom(42, 54) from the PCG reference implementation.
        let mut rng = Rng::new(42, 54);
        let first: Vec<u32> = (0..6).map(|_| rng.next_u32()).collect();
        assert_eq!(
            first,
            vec![0xa15c02b7, 0x7b47f409, 0xba1d3330, 0x83d2f293, 0xbfa4784b, 0xcbed606e]
        );
    }

    #[test]
    fn derived_streams_are_independent_and_reproducible() {
        let root = Rng::new(7, 0);
        let mut a = root.derive("partitioner");
        let mut b = root.derive("network");
        let mut a_again = root.derive("partitioner");
        let a_values: Vec<u32> = (0..4).map(|_| a.next_u32()).collect();
        assert_eq!(a_values, (0..4).map(|_| a_again.next_u32()).collect::<Vec<_>>());
        assert_ne!(a_values, (0..4).map(|_| b.next_u32()).collect::<Vec<_>>());
    }
}
