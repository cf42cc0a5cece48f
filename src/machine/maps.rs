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
#[derive(Debug, Clone, Default)]
pub struct Maps {
    by_start: BTreeMap<u64, Map>,
}

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
        let (_, m) = self.by_start.range(..=addr).next_back()?;
        m.contains(addr).then_some(m)
    }

    /// Inserts `map`, trimming or splitting the maps it overlaps.
    pub fn insert(&mut self, map: Map) {
        if map.end <= map.start {
            return;
        }
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
    pub fn remove(&mut self, start: u64) -> Option<Map> {
        self.by_start.remove(&start)
    }

    /// Removes every map that overlaps `[start, end)` entirely (used when a
    /// kernel symbol goes away).
    pub fn remove_range(&mut self, start: u64, end: u64) {
        let keys: Vec<u64> = self.by_start.range(..end).filter(|(_, m)| m.end > start).map(|(&s, _)| s).collect();
        for k in keys {
            self.by_start.remove(&k);
        }
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
}
