//! Which units have a known range holding an address: the question
//! binutils' address trie answers. Ranges arrive unit by unit as units are
//! read and decoded, and lookups come in between, so the ranges are kept
//! in sorted runs of halving sizes (a log-structured merge): adding a
//! unit's ranges sorts just those and merges runs of similar size, and a
//! lookup searches each of the few runs.
//!
//! ```text
//!  runs   [ 4096 ranges ][ 1024 ][ 512 ][ 40 ]     each sorted by low,
//!  tree   [ max high per subtree, per run    ]     to skip what ends before
//! ```

/// (low, high, unit).
type Range = (u64, u64, u32);

#[derive(Default)]
struct Run {
    ranges: Vec<Range>,
    /// The highest `high` under each node of a complete binary tree over
    /// `ranges` (root at 1, leaves from `leaves`): a lookup goes down only
    /// where some range ends past the address. A running maximum would
    /// make one wide range (a unit's whole span) send every lookup to the
    /// start of the run.
    max_high: Vec<u64>,
    leaves: usize,
}

impl Run {
    fn new(ranges: Vec<Range>) -> Run {
        let leaves = ranges.len().next_power_of_two();
        let mut max_high = vec![0u64; 2 * leaves];
        for (i, r) in ranges.iter().enumerate() {
            max_high[leaves + i] = r.1;
        }
        for n in (1..leaves).rev() {
            max_high[n] = max_high[2 * n].max(max_high[2 * n + 1]);
        }
        Run { ranges, max_high, leaves }
    }

    fn merge(a: Run, b: Run) -> Run {
        let mut out = Vec::with_capacity(a.ranges.len() + b.ranges.len());
        let (mut i, mut j) = (0, 0);
        while i < a.ranges.len() && j < b.ranges.len() {
            if a.ranges[i].0 <= b.ranges[j].0 {
                out.push(a.ranges[i]);
                i += 1;
            } else {
                out.push(b.ranges[j]);
                j += 1;
            }
        }
        out.extend_from_slice(&a.ranges[i..]);
        out.extend_from_slice(&b.ranges[j..]);
        Run::new(out)
    }

    fn holding(&self, addr: u64, out: &mut Vec<usize>) {
        // Ranges starting at or before `addr` are the first `end`.
        let end = self.ranges.partition_point(|r| r.0 <= addr);
        if end == 0 {
            return;
        }
        // (node, first leaf under it, leaves under it)
        let mut stack = vec![(1usize, 0usize, self.leaves)];
        while let Some((node, first, width)) = stack.pop() {
            if first >= end || self.max_high[node] <= addr {
                continue;
            }
            if width == 1 {
                out.push(self.ranges[first].2 as usize);
                continue;
            }
            let half = width / 2;
            stack.push((2 * node + 1, first + half, half));
            stack.push((2 * node, first, half));
        }
    }
}

#[derive(Default)]
pub struct RangeIndex {
    runs: Vec<Run>,
}

impl RangeIndex {
    /// Adds `unit`'s ranges (ranges may repeat ones added before).
    pub fn add(&mut self, unit: usize, ranges: impl Iterator<Item = (u64, u64)>) {
        let mut batch: Vec<Range> = ranges.filter(|&(l, h)| l < h).map(|(l, h)| (l, h, unit as u32)).collect();
        if batch.is_empty() {
            return;
        }
        batch.sort_unstable_by_key(|r| r.0);
        let mut run = Run::new(batch);
        while let Some(last) = self.runs.last() {
            if last.ranges.len() > 2 * run.ranges.len() {
                break;
            }
            let last = self.runs.pop().expect("a run");
            run = Run::merge(last, run);
        }
        self.runs.push(run);
    }

    /// The units with a range holding `addr`, in reading order, each once.
    pub fn holding(&self, addr: u64) -> Vec<usize> {
        let mut out = Vec::new();
        for r in &self.runs {
            r.holding(addr, &mut out);
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// The addresses a unit's functions cover: their ranges, sorted, with
/// overlapping and touching ones merged. binutils puts each function's
/// ranges in its address trie, and a lookup asks a unit's function table
/// only where one of them holds the address; knowing them without the
/// table (from a cache summary, before the unit's DIEs are scanned) keeps
/// a lookup that lands between a unit's functions from building it (a
/// span from the lowest to the highest address, kept before, sent a
/// seventh of the dwarf benchmark's unit scans to units that held
/// nothing there).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Coverage(Box<[(u64, u64)]>);

impl Coverage {
    /// The cover of `ranges` (empty and inverted ones hold nothing).
    pub fn of(ranges: impl Iterator<Item = (u64, u64)>) -> Coverage {
        let mut all: Vec<(u64, u64)> = ranges.filter(|&(l, h)| l < h).collect();
        all.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(all.len());
        for (l, h) in all {
            match merged.last_mut() {
                Some(last) if l <= last.1 => last.1 = last.1.max(h),
                _ => merged.push((l, h)),
            }
        }
        Coverage(merged.into_boxed_slice())
    }

    pub fn contains(&self, addr: u64) -> bool {
        let after = self.0.partition_point(|r| r.0 <= addr);
        after > 0 && addr < self.0[after - 1].1
    }

    pub fn ranges(&self) -> &[(u64, u64)] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cover holds an address exactly where one of its ranges does.
    #[test]
    fn a_cover_holds_what_its_ranges_hold() {
        let ranges = [(10, 20), (15, 30), (30, 35), (50, 60), (70, 70), (90, 80), (0, 1)];
        let cover = Coverage::of(ranges.iter().copied());
        assert_eq!(cover.ranges(), &[(0, 1), (10, 35), (50, 60)]);
        for a in 0..100 {
            assert_eq!(cover.contains(a), ranges.iter().any(|&(l, h)| a >= l && a < h), "{a}");
        }
        assert!(!Coverage::of(std::iter::empty()).contains(0));
        assert!(Coverage::of([(u64::MAX - 1, u64::MAX)].into_iter()).contains(u64::MAX - 1));
    }

    #[test]
    fn finds_what_a_scan_of_every_range_finds() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut index = RangeIndex::default();
        let mut all: Vec<Range> = Vec::new();
        for unit in 0..300usize {
            let n = (next() % 40) as usize;
            let ranges: Vec<(u64, u64)> = (0..n)
                .map(|_| {
                    let l = next() % 100_000;
                    // Some empty and inverted ranges: they hold nothing.
                    (l, (l + next() % 3000).wrapping_sub(20))
                })
                .collect();
            index.add(unit, ranges.iter().copied());
            all.extend(ranges.iter().map(|&(l, h)| (l, h, unit as u32)));
            for _ in 0..20 {
                let a = next() % 103_000;
                let mut want: Vec<usize> = all.iter().filter(|r| a >= r.0 && a < r.1).map(|r| r.2 as usize).collect();
                want.sort_unstable();
                want.dedup();
                assert_eq!(index.holding(a), want, "at {a} after unit {unit}");
            }
        }
        assert!(index.runs.len() < 12, "{} runs", index.runs.len());
    }
}
