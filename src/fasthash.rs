//! A hasher for the small integer keys of pstitch's hot tables (thread ids,
//! event ids, (DSO, address) pairs): SipHash's resistance to crafted keys
//! buys nothing for lookups done once per callchain entry and costs a lot.
//! Hostile input cannot make these tables degrade badly either: their keys
//! are bounded by the input's size like everything else.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A multiply-rotate hasher, one round per integer written.
#[derive(Default, Clone, Copy)]
pub struct FastHasher(u64);

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
pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

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
            let mut s = FastHasher::default();
            s.write_u64(k);
            s.finish()
        };
        // Neighbouring keys land far apart in the top bits (table index).
        let tops: std::collections::HashSet<u64> = (0..64).map(|k| h(k) >> 58).collect();
        assert!(tops.len() > 32);
    }
}
