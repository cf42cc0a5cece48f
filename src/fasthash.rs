//! The hash tables of pstitch's hot paths (thread ids, event ids, (DSO,
//! address) keys, names): `foldhash`, seeded per process. SipHash costs
//! too much for lookups made once per callchain entry; a hand-made
//! multiply hash let a crafted perf.data send keys that differ only in
//! their high bits to one bucket whatever the seed (500,000 sample ids of
//! the form `i << 45`: 7.8 s instead of 0.11 s). Output never depends on
//! the hash.

/// A `HashMap` with a fast, seeded hasher.
pub type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::quality::RandomState>;

/// Before `key` goes into a memo bounded to `max` entries: forgets every
/// entry if the memo is full and `key` is not among them (the bound for
/// keys a damaged recording can make up). The size is looked at first:
/// on the usual call, a memo below its bound, that costs no lookup.
pub fn make_room<K: std::hash::Hash + Eq, V>(map: &mut FastMap<K, V>, key: &K, max: usize) {
    if is_full_for(map, key, max) {
        map.clear();
    }
}

/// Whether `key` going into a memo bounded to `max` entries must first
/// make room (see [`make_room`]), for a memo that forgets more than the map.
pub fn is_full_for<K: std::hash::Hash + Eq, V>(map: &FastMap<K, V>, key: &K, max: usize) -> bool {
    map.len() >= max && !map.contains_key(key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{BuildHasher, Hash};

    /// How many of a table's buckets the keys fall in, against what
    /// random placement would give: a table of `2^bits` buckets indexes
    /// by the hash's low bits (hashbrown's probe start), and keys that
    /// share a bucket are probed past one by one.
    fn spread<K: Hash>(keys: impl Iterator<Item = K>, bits: u32) -> f64 {
        let state = foldhash::quality::RandomState::default();
        let mask = (1u64 << bits) - 1;
        let mut used = vec![false; 1 << bits];
        let mut n = 0u64;
        for k in keys {
            used[(state.hash_one(k) & mask) as usize] = true;
            n += 1;
        }
        let buckets = (1u64 << bits) as f64;
        let expected = buckets * (1.0 - (-(n as f64) / buckets).exp());
        used.iter().filter(|&&u| u).count() as f64 / expected
    }

    /// Keys a hostile file can choose (high bits only, one bit each,
    /// strides of pages) spread as random ones do: no probe sequence is
    /// longer than chance makes it.
    #[test]
    fn crafted_keys_spread_like_random_ones() {
        let n = 500_000u64;
        type Family = (&'static str, Box<dyn Fn(u64) -> u64>);
        let families: [Family; 5] = [
            ("i << 45", Box::new(|i| i << 45)),
            ("i << 32", Box::new(|i| i << 32)),
            ("bits reversed", Box::new(|i| i.reverse_bits())),
            ("pages", Box::new(|i| 0x7f00_0000_0000 + (i << 12))),
            ("small", Box::new(|i| i)),
        ];
        for (what, key) in &families {
            let s = spread((0..n).map(key), 20);
            assert!(s > 0.95, "{what}: {s:.3} of the buckets random keys would use");
        }
        // The frame cache's (code, DSO, address) keys and thread ids.
        let s = spread((0..n).map(|i| (1u8, (i % 7) as u32, i << 40)), 20);
        assert!(s > 0.95, "(code, dso, address): {s:.3}");
        let s = spread((0..n as i32).map(|i| i.wrapping_mul(1 << 12)), 20);
        assert!(s > 0.95, "tids: {s:.3}");
        let mut m: FastMap<u64, u64> = FastMap::default();
        for i in 0..10_000 {
            m.insert(i << 45, i);
        }
        assert!((0..10_000).all(|i| m[&(i << 45)] == i));
    }

    /// A full memo keeps its entries for a key it holds, and forgets them
    /// all for a new one; below the bound nothing goes.
    #[test]
    fn make_room_forgets_only_for_a_new_key_when_full() {
        let mut m: FastMap<u64, u64> = (0..4).map(|i| (i, i)).collect();
        make_room(&mut m, &9, 5);
        assert_eq!(m.len(), 4);
        make_room(&mut m, &2, 4);
        assert_eq!(m.len(), 4);
        make_room(&mut m, &9, 4);
        assert!(m.is_empty());
    }
}
