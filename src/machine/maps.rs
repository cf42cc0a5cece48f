//! Address-space maps: which DSO (and where in it) backs an address.
//!
//! A process's map group is built from MMAP/MMAP2 records. A new mapping
//! that overlaps older ones replaces the overlapped parts (the kernel just
//! did the same); the pieces of an old map before and after the new one
//! survive, the latter with its file offset moved along:
//!
//! ```text
//! old:  [a ............................ b)  pgoff p
//! new:            [c ........ d)
//! left: [a ...... c)                         pgoff p
//! right:                      [d ...... b)   pgoff p + (d - a)
//! ```

use std::cell::{Cell, OnceCell};
use std::collections::BTreeMap;

/// Index of a DSO in the machine's [`super::Dsos`] table.
pub type DsoId = u32;

/// How a map translates a runtime address into the DSO's address space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapKind {
    /// `addr - start + pgoff`: file-backed user mappings, the vdso.
    Dso,
    /// Addresses are already what the DSO's symbols use (the kernel with
    /// kallsyms).
    Identity,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Map {
    pub start: u64,
    /// Exclusive.
    pub end: u64,
    pub pgoff: u64,
    pub dso: DsoId,
    pub kind: MapKind,
    pub prot: u32,
    pub flags: u32,
}

impl Map {
    /// Runtime address -> DSO-relative address (perf's `map__map_ip`).
    #[inline]
    pub fn map_ip(&self, addr: u64) -> u64 {
        match self.kind {
            MapKind::Dso => addr.wrapping_sub(self.start).wrapping_add(self.pgoff),
            MapKind::Identity => addr,
        }
    }

    /// DSO-relative address -> runtime address (perf's `map__unmap_ip`).
    #[inline]
    pub fn unmap_ip(&self, rel: u64) -> u64 {
        match self.kind {
            MapKind::Dso => rel.wrapping_add(self.start).wrapping_sub(self.pgoff),
            MapKind::Identity => rel,
        }
    }

    #[inline]
    pub fn contains(&self, addr: u64) -> bool {
        self.start <= addr && addr < self.end
    }
}

/// A set of non-overlapping maps keyed by start address.
///
/// Maps change at mmap records and are looked up at every callchain
/// entry: once a set of maps has been looked up more than a few times
/// since it last changed, lookups go to sorted arrays made from the tree
/// (a binary search over the starts alone touches little memory).
#[derive(Debug, Clone, Default)]
pub struct Maps {
    by_start: BTreeMap<u64, Map>,
    index: OnceCell<Index>,
    /// Lookups in the tree since the last change.
    lookups: Cell<u32>,
    /// See [`Maps::stamp`].
    stamp: u64,
}

/// The last stamp given to a change of any set of maps in this process.
static STAMPS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

#[derive(Debug, Clone, Default)]
struct Index {
    starts: Vec<u64>,
    maps: Vec<Map>,
}

/// Lookups in the tree after a change before the arrays are made.
const INDEX_AFTER: u32 = 32;

impl Maps {
    pub fn is_empty(&self) -> bool {
        self.by_start.is_empty()
    }

    pub fn len(&self) -> usize {
        self.by_start.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Map> {
        self.by_start.values()
    }

    /// The map containing `addr`.
    pub fn find(&self, addr: u64) -> Option<&Map> {
        self.find_or_gap(addr).ok()
    }

    /// The map holding `addr`, or the gap around it: `[end of the map
    /// below, start of the map above)`, where every address is in no map.
    pub fn find_or_gap(&self, addr: u64) -> Result<&Map, (u64, u64)> {
        let index = match self.index.get() {
            Some(index) => index,
            None if self.lookups.get() < INDEX_AFTER => {
                self.lookups.set(self.lookups.get() + 1);
                let below = self.by_start.range(..=addr).next_back().map(|(_, m)| m);
                if let Some(m) = below.filter(|m| m.contains(addr)) {
                    return Ok(m);
                }
                let above = self.by_start.range(addr..).next().map(|(_, m)| m.start);
                return Err((below.map_or(0, |m| m.end), above.unwrap_or(u64::MAX)));
            }
            None => self.index.get_or_init(|| Index { starts: self.by_start.keys().copied().collect(), maps: self.by_start.values().copied().collect() }),
        };
        let i = index.starts.partition_point(|&s| s <= addr);
        let above = index.starts.get(i).copied().unwrap_or(u64::MAX);
        let Some(m) = i.checked_sub(1).map(|i| &index.maps[i]) else { return Err((0, above)) };
        if m.contains(addr) { Ok(m) } else { Err((m.end, above)) }
    }

    /// Which change made these maps: every change gives a set of maps a
    /// stamp no other change in this process had, and a copy keeps it. So
    /// two sets with the same stamp hold the same maps, and a lookup
    /// remembered at one stamp holds as long as the stamp does (an empty
    /// set never changed has stamp 0). State kept per address space can
    /// follow its own process's maps this way, where the machine's epoch
    /// moves with every other process's mmap too.
    pub fn stamp(&self) -> u64 {
        self.stamp
    }

    /// Forgets the arrays after a change.
    fn changed(&mut self) {
        self.index.take();
        self.lookups.set(0);
        self.stamp = STAMPS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
    }

    /// Inserts `map`, trimming or splitting the maps it overlaps.
    pub(crate) fn insert(&mut self, map: Map) {
        if map.end <= map.start {
            return;
        }
        self.changed();
        let overlapping: Vec<u64> = self
            .by_start
            .range(..map.end)
            .rev()
            .take_while(|(_, m)| m.end > map.start)
            .map(|(&s, _)| s)
            .collect();
        for s in overlapping {
            let old = self.by_start.remove(&s).expect("key from range");
            if old.start < map.start {
                self.by_start.insert(old.start, Map { end: map.start, ..old });
            }
            if old.end > map.end {
                let pgoff = match old.kind {
                    MapKind::Dso => old.pgoff.wrapping_add(map.end - old.start),
                    MapKind::Identity => old.pgoff,
                };
                self.by_start.insert(map.end, Map { start: map.end, pgoff, ..old });
            }
        }
        self.by_start.insert(map.start, map);
    }

    /// Removes the map starting at `start`.
    pub(crate) fn remove(&mut self, start: u64) -> Option<Map> {
        self.changed();
        self.by_start.remove(&start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(start: u64, end: u64, pgoff: u64, dso: DsoId) -> Map {
        Map { start, end, pgoff, dso, kind: MapKind::Dso, prot: 0, flags: 0 }
    }

    #[test]
    fn finds_by_address() {
        let mut maps = Maps::default();
        maps.insert(m(0x1000, 0x2000, 0, 1));
        maps.insert(m(0x3000, 0x4000, 0x1000, 2));
        assert_eq!(maps.find(0x1fff).map(|m| m.dso), Some(1));
        assert_eq!(maps.find(0x2000), None);
        assert_eq!(maps.find(0x3000).unwrap().map_ip(0x3010), 0x1010);
        assert_eq!(maps.find(0xfff), None);
    }

    #[test]
    fn overlap_splits_old_map() {
        let mut maps = Maps::default();
        maps.insert(m(0x1000, 0x5000, 0x100, 1));
        maps.insert(m(0x2000, 0x3000, 0, 2));
        let v: Vec<_> = maps.iter().map(|m| (m.start, m.end, m.pgoff, m.dso)).collect();
        assert_eq!(v, vec![(0x1000, 0x2000, 0x100, 1), (0x2000, 0x3000, 0, 2), (0x3000, 0x5000, 0x2100, 1)]);
        // The right-hand piece's file offset wraps like perf's u64 does
        // (fuzz finding: a hostile pgoff overflowed here).
        let mut w = Maps::default();
        w.insert(m(0x1000, 0x5000, u64::MAX - 0x10, 1));
        w.insert(m(0x2000, 0x3000, 0, 2));
        assert_eq!(w.find(0x3000).unwrap().pgoff, (u64::MAX - 0x10).wrapping_add(0x2000));
        // A map covering everything replaces all of it.
        maps.insert(m(0, 0x10000, 0, 3));
        assert_eq!(maps.len(), 1);
    }

    /// Lookups through the arrays (made after INDEX_AFTER lookups) answer
    /// what the tree answers, through insertions and removals.
    #[test]
    fn array_lookups_follow_changes() {
        let mut maps = Maps::default();
        let mut rnd = crate::testing::rng(0x9e37_79b9_7f4a_7c15);
        let mut via_arrays = 0;
        for round in 0..200u64 {
            match round % 3 {
                0 | 1 => {
                    let start = rnd(64) * 0x1000;
                    maps.insert(m(start, start + (1 + rnd(4)) * 0x1000, 0, round as DsoId));
                }
                _ => {
                    let nth = rnd(4) as usize;
                    let start = maps.iter().nth(nth).map(|m| m.start);
                    if let Some(start) = start {
                        maps.remove(start);
                    }
                }
            }
            for _ in 0..rnd(80) {
                let addr = rnd(70 * 0x1000);
                let want = maps.by_start.range(..=addr).next_back().map(|(_, m)| *m).filter(|m| m.contains(addr));
                assert_eq!(maps.find(addr).copied(), want, "round {round}, addr {addr:#x}");
                // A gap holds the address, meets no map, and ends at maps
                // (or the ends of the address space).
                if let Err((lo, hi)) = maps.find_or_gap(addr) {
                    assert!(lo <= addr && addr < hi, "round {round}, addr {addr:#x}: gap {lo:#x}-{hi:#x}");
                    assert!(maps.iter().all(|m| m.end <= lo || m.start >= hi), "round {round}: gap {lo:#x}-{hi:#x} meets a map");
                    assert!(lo == 0 || maps.iter().any(|m| m.end == lo), "round {round}: gap starts at {lo:#x}");
                    assert!(hi == u64::MAX || maps.iter().any(|m| m.start == hi), "round {round}: gap ends at {hi:#x}");
                }
            }
            via_arrays += usize::from(maps.index.get().is_some());
        }
        assert!(via_arrays > 50, "only {via_arrays} rounds used the arrays");
    }
}
