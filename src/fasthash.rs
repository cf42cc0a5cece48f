//! A hasher for the small integer keys of pstitch's hot tables (thread ids,
//! event ids, (DSO, address) pairs): SipHash costs a lot for lookups done
//! once per callchain entry. The state starts from a per-process random
//! seed, so a hostile perf.data cannot be built to make all its addresses
//! collide and turn every lookup into a scan; output never depends on it.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;

/// A multiply-rotate hasher, one round per integer written.
#[derive(Clone, Copy)]
pub struct FastHasher(u64);

/// Builds [`FastHasher`]s from the process's seed.
#[derive(Clone, Copy)]
pub struct FastState(u64);

impl Default for FastState {
    fn default() -> FastState {
        static SEED: OnceLock<u64> = OnceLock::new();
        FastState(*SEED.get_or_init(|| std::collections::hash_map::RandomState::new().hash_one(0x5eed_u64)))
    }
}

impl BuildHasher for FastState {
    type Hasher = FastHasher;

    fn build_hasher(&self) -> FastHasher {
        FastHasher(self.0)
    }
}

impl Hasher for FastHasher {
    fn finish(&self) -> u64 {
        let h = self.0.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        h ^ (h >> 29)
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(b));
        }
    }

    fn write_u8(&mut self, v: u8) {
        self.write_u64(u64::from(v));
    }

    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }

    fn write_i32(&mut self, v: i32) {
        self.write_u64(v as u32 as u64);
    }

    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(23) ^ v).wrapping_mul(0x2545_f491_4f6c_dd1d);
    }
}

/// A `HashMap` with [`FastHasher`].
pub type FastMap<K, V> = HashMap<K, V, FastState>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spreads_small_keys() {
        let mut m: FastMap<(u8, u32, u64), u32> = FastMap::default();
        for i in 0..10_000u64 {
            m.insert((1, 7, i * 4), i as u32);
        }
        assert!((0..10_000u64).all(|i| m[&(1, 7, i * 4)] == i as u32));
        let h = |k: u64| {
            let mut s = FastState::default().build_hasher();
            s.write_u64(k);
            s.finish()
        };
        // Neighbouring keys land far apart in the top bits (table index).
        let tops: std::collections::HashSet<u64> = (0..64).map(|k| h(k) >> 58).collect();
        assert!(tops.len() > 32);
    }
}
