//! User callchains from LBR call stacks (`perf record --call-graph lbr`),
//! as perf's `resolve_lbr_callchain_sample` builds them.
//!
//! Such an event samples its branch stack with `PERF_SAMPLE_BRANCH_CALL_STACK`:
//! the hardware keeps the calls that have not returned yet, most recent
//! first. perf then ignores the user part of the recorded callchain and
//! shows the call stack instead:
//!
//! ```text
//! recorded callchain   KERNEL k0 k1 ... USER u0 u1 u2 ...      (u.. ignored)
//! branch stack         e0 {from, to}  e1 {from, to} ...        (most recent first)
//! shown                k0 k1 ... | ip  e0.from  e1.from ...     (every entry)
//! ```
//!
//! `ip` is the sample's (perf 7.2 takes it where earlier versions took
//! `e0.to`, where the last call went), each `from` a call site one frame
//! further out. Only when the recorded
//! callchain has a `PERF_CONTEXT_USER` marker among its first `--max-stack`
//! entries (markers count here, unlike on the usual path); otherwise perf
//! takes the recorded callchain as it is. The kernel part is cut by that
//! search alone and the call stack is not cut at all: perf appends every
//! entry, whatever `--max-stack` says.
//!
//! # Stitching (`--stitch-lbr`)
//!
//! The LBR holds only the most recent calls (`max_branches` of them, the
//! `branches` capability of HEADER_CPU_PMU_CAPS; perf 7.2 does not look at
//! HEADER_PMU_CAPS for it, so a hybrid recording is never stitched). When
//! a thread's stack is deeper, its samples see only its top; perf's
//! `has_stitched_lbr` recovers the rest from the thread's previous sample
//! ([`Stitch`]). The LBR is a ring of `max_branches` registers and each
//! sample says which holds its most recent entry (`hw_idx`); the oldest
//! entry of a sample with `nr` entries sits in register
//! `hw_idx - nr + 1`. If the previous sample's entry in that same register
//! is the same call (from, to and flags equal), the two stacks share their
//! base, and the previous sample's entries older than it (further down the
//! stack) are frames this sample lost:
//!
//! ```text
//! registers      0    1    2    3    4    5    6    7       max_branches 8
//! previous      c3   c4   c5   c6   c7   c8   c9  c10       hw_idx 7 (c10 newest)
//! current      c11  c12   c5   c6   c7   c8   c9  c10'      hw_idx 1, nr 8:
//!                          ^ base of current (register 2)    oldest entry c5
//! previous entries older than c5 in its stack: c4, c3 -> appended, nearest first
//! ```
//!
//! Those frames are appended after the sample's own, followed by whatever
//! the previous sample had appended itself (the list carries on from sample
//! to sample while each stitches); a sample that does not stitch empties
//! it. perf appends copies of the previous sample's resolved callchain
//! nodes (symbol, map, source line as that sample resolved them), which it
//! saved by position: entry `i` saved the node that came `i + 1` nodes after
//! the kernel part. A node is one line as printed, so where an address
//! printed several lines (inline frames), the node saved for entry `i` is
//! not entry `i`'s own: the caller works out the nodes
//! ([`Stitch::save`] takes whatever it saves). perf's formula for the
//! register distance is kept as it is, u64 wrap-around included.
//!
//! perf keeps the saved nodes in an array of `max_branches + 1` allocated
//! up front and writes past it for a sample with more entries; here the
//! array grows with the entries seen, never past `max_branches + 1` (a
//! claim from the file), and entries beyond it are not saved.

use std::collections::VecDeque;

use perf_data::bytes::U64Array;
use perf_data::sample::{BranchStack, context};

/// The kernel part of `chain` (the entries before its `PERF_CONTEXT_USER`
/// marker) and the user frames of `stack` pushed onto `user`; `None` when
/// perf takes the recorded callchain instead (no marker among the first
/// `max_stack` entries).
///
/// The first user frame is the sample's ip, whatever the first entry's
/// `to` says (perf 7.2; its `-D` dump still shows `to` there), even when
/// the sample is in the kernel (the ip then resolves in the user address
/// space: `[unknown]`).
pub fn user_frames<'a>(chain: U64Array<'a>, ip: u64, stack: &BranchStack<'_>, max_stack: usize, user: &mut Vec<u64>) -> Option<U64Array<'a>> {
    let marker = chain.iter().take(max_stack).position(|ip| ip == context::USER)?;
    user.clear();
    user.push(ip);
    user.extend(stack.iter().map(|e| e.from));
    Some(chain.prefix(marker))
}

/// One LBR entry as `has_stitched_lbr` compares them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    from: u64,
    to: u64,
    flags: u64,
}

/// A thread's stitching state (perf's `struct lbr_stitch`): the previous
/// sample's call stack, the nodes its entries saved, and the frames being
/// carried from sample to sample (`N`: a node as the caller prints it).
#[derive(Debug)]
pub struct Stitch<N> {
    /// The previous sample's entries (most recent first) and `hw_idx`.
    prev: Option<(Vec<Entry>, u64)>,
    /// `prev_lbr_cursor`: the node each entry saved (`None`: not valid).
    saved: Vec<Option<N>>,
    /// The stitched frames, in the order they are printed.
    list: VecDeque<N>,
    max_lbr: u32,
}

impl<N: Clone> Stitch<N> {
    /// perf's `alloc_lbr_stitch` (its array is allocated as it fills).
    pub fn new(max_lbr: u32) -> Stitch<N> {
        Stitch { prev: None, saved: Vec::new(), list: VecDeque::new(), max_lbr }
    }

    /// A sample's call stack arrives: perf's `has_stitched_lbr` against
    /// the previous one, then the list emptied if it does not stitch, and
    /// the stack kept as the previous one. Whether it stitched (then the
    /// frames of [`Stitch::stitched`] follow the sample's own).
    pub fn arrive(&mut self, stack: &BranchStack<'_>, hw_idx: u64) -> bool {
        let cur: Vec<Entry> = stack.iter().map(|e| Entry { from: e.from, to: e.to, flags: e.flags.0 }).collect();
        let stitched = self.stitches(&cur, hw_idx);
        if !stitched {
            self.list.clear();
        }
        self.prev = Some((cur, hw_idx));
        stitched
    }

    fn stitches(&mut self, cur: &[Entry], cur_hw_idx: u64) -> bool {
        let Some((prev, prev_hw_idx)) = &self.prev else { return false };
        let (max_lbr, cur_nr, prev_nr) = (u64::from(self.max_lbr), cur.len() as u64, prev.len() as u64);
        // The register of the current stack's base, and how far from the
        // previous sample's newest entry it is (perf's arithmetic, in u64).
        let cur_base = max_lbr.wrapping_sub(cur_nr).wrapping_add(cur_hw_idx).wrapping_add(1);
        let distance = if *prev_hw_idx > cur_base { prev_hw_idx - cur_base } else { max_lbr.wrapping_add(*prev_hw_idx).wrapping_sub(cur_base) };
        if distance.wrapping_add(1) > prev_nr {
            return false;
        }
        // distance + 1 wrapped to 0: perf's int index is -1, nothing matches.
        let Ok(distance) = usize::try_from(distance) else { return false };
        if distance >= prev.len() {
            return false;
        }
        // Identical entries from the base of the current stack up.
        let identical = prev[..=distance].iter().rev().zip(cur.iter().rev()).take_while(|(p, c)| p == c).count();
        if identical == 0 {
            return false;
        }
        for i in (distance + 1..prev.len()).rev() {
            if let Some(Some(node)) = self.saved.get(i) {
                self.list.push_front(node.clone());
            }
        }
        true
    }

    /// perf's `save_lbr_cursor_node`: entry `i` of the sample being
    /// resolved saved `node` (`None`: no node there).
    pub fn save(&mut self, i: usize, node: Option<N>) {
        if i > self.max_lbr as usize {
            return;
        }
        if self.saved.len() <= i {
            self.saved.resize(i + 1, None);
        }
        self.saved[i] = node;
    }

    /// The frames stitched after the sample's own, nearest first.
    pub fn stitched(&self) -> impl Iterator<Item = &N> {
        self.list.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use perf_data::bytes::Endian;
    use perf_data::sample::Sample;

    fn words(w: &[u64]) -> Vec<u8> {
        w.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    /// A branch stack as a sample holds it (`nr`, `hw_idx`, entries).
    fn stack(entries: &[(u64, u64)]) -> Vec<u8> {
        let mut w = vec![entries.len() as u64, 3];
        for &(from, to) in entries {
            w.extend([from, to, 0]);
        }
        words(&w)
    }

    fn run(chain: &[u64], entries: &[(u64, u64)], max: usize) -> Option<(Vec<u64>, Vec<u64>)> {
        use perf_data::attr::{Attr, branch_sample_type, sample_type};
        let chain_bytes = words(chain);
        let chain = U64Array::new(&chain_bytes, Endian::Little);
        let attr = Attr { sample_type: sample_type::BRANCH_STACK, branch_sample_type: branch_sample_type::HW_INDEX | branch_sample_type::CALL_STACK, ..Attr::default() };
        let raw = stack(entries);
        let sample = Sample::parse(&raw, &attr, Endian::Little).unwrap();
        let mut user = Vec::new();
        user_frames(chain, 0x99, &sample.branch_stack.unwrap(), max, &mut user).map(|k| (k.iter().collect(), user))
    }

    #[test]
    fn the_call_stack_replaces_the_user_part() {
        let chain = [context::KERNEL, 0xffff1, 0xffff2, context::USER, 0x10, 0x20, 0x30];
        let got = run(&chain, &[(0x205, 0x100), (0x305, 0x200)], 127).unwrap();
        assert_eq!(got, (vec![context::KERNEL, 0xffff1, 0xffff2], vec![0x99, 0x205, 0x305]));
    }

    #[test]
    fn markers_count_for_max_stack() {
        let chain = [context::KERNEL, 0xffff1, 0xffff2, context::USER, 0x10];
        assert!(run(&chain, &[(1, 2)], 3).is_none());
        // Found within the first four: the call stack is not cut.
        let got = run(&chain, &[(0x205, 0x100), (0x305, 0x200), (0x405, 0x300)], 4).unwrap();
        assert_eq!(got.1, [0x99, 0x205, 0x305, 0x405]);
    }

    #[test]
    fn kernel_only_chains_stay_as_recorded() {
        assert!(run(&[context::KERNEL, 0xffff1], &[(1, 2)], 127).is_none());
    }

    #[test]
    fn an_empty_stack_gives_the_ip_alone() {
        let got = run(&[context::USER, 0x10], &[], 127).unwrap();
        assert_eq!(got, (vec![], vec![0x99]));
    }
}
