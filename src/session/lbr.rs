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
//! claim from the file), and entries beyond it are not saved. The list
//! grows by up to an LBR's depth with every sample that stitches, without
//! end in perf; a real stack is never that deep, so here it keeps the
//! nearest [`MAX_STITCHED`] frames (and says it cut, once).

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

/// Most stitched frames a thread carries.
pub const MAX_STITCHED: usize = 1 << 16;

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
    /// The list was cut at [`MAX_STITCHED`].
    pub cut: bool,
}

impl<N: Clone> Stitch<N> {
    /// perf's `alloc_lbr_stitch` (its array is allocated as it fills).
    pub fn new(max_lbr: u32) -> Stitch<N> {
        Stitch { prev: None, saved: Vec::new(), list: VecDeque::new(), max_lbr, cut: false }
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
        if self.list.len() > MAX_STITCHED {
            self.list.truncate(MAX_STITCHED);
            self.cut = true;
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

    fn branch(entries: &[(u64, u64)], hw_idx: u64) -> Vec<u8> {
        let mut w = vec![entries.len() as u64, hw_idx];
        for &(from, to) in entries {
            w.extend([from, to, 0]);
        }
        words(&w)
    }

    /// Stitch `stacks` (entries most recent first, hw_idx) in turn, each
    /// entry saving its own `from` as its node; what each sample got.
    fn stitch(max: u32, stacks: &[(&[(u64, u64)], u64)]) -> Vec<Option<Vec<u64>>> {
        use perf_data::attr::{Attr, branch_sample_type, sample_type};
        let attr = Attr { sample_type: sample_type::BRANCH_STACK, branch_sample_type: branch_sample_type::HW_INDEX | branch_sample_type::CALL_STACK, ..Attr::default() };
        let mut st = Stitch::new(max);
        let mut got = Vec::new();
        for (entries, hw_idx) in stacks {
            let raw = branch(entries, *hw_idx);
            let sample = Sample::parse(&raw, &attr, Endian::Little).unwrap();
            let stack = sample.branch_stack.unwrap();
            let stitched = st.arrive(&stack, stack.hw_idx.unwrap());
            for (i, e) in stack.iter().enumerate() {
                st.save(i, Some(e.from));
            }
            got.push(stitched.then(|| st.stitched().copied().collect()));
        }
        got
    }

    /// An 8-register ring: call `c` is in register `c % 8`; a stack is
    /// its calls from `newest` down to `oldest` (from `c`, to `c + 100`).
    fn calls(newest: u64, oldest: u64) -> (Vec<(u64, u64)>, u64) {
        ((oldest..=newest).rev().map(|c| (c, c + 100)).collect(), newest % 8)
    }

    /// Branch entries (from, to), most recent first.
    type Calls = Vec<(u64, u64)>;

    /// The module doc's picture: c3..c10, then c10 returned and c10',
    /// c11, c12 called (the second stack has hw_idx 12 % 8).
    fn picture() -> (Calls, u64, Calls) {
        let (prev, prev_hw) = calls(10, 3);
        let mut cur: Vec<(u64, u64)> = vec![(12, 112), (11, 111), (1010, 1110)];
        cur.extend(calls(9, 5).0);
        (prev, prev_hw, cur)
    }

    /// c4 and c3 come back, nearest first.
    #[test]
    fn the_base_shared_with_the_previous_sample_brings_its_older_frames() {
        let (prev, prev_hw, cur) = picture();
        let got = stitch(8, &[(&prev, prev_hw), (&cur, 12 % 8)]);
        assert_eq!(got, [None, Some(vec![4, 3])]);
    }

    /// The list carries on while samples stitch, and empties when one
    /// does not.
    #[test]
    fn the_list_carries_on_until_a_sample_does_not_stitch() {
        let (a, ha) = calls(10, 3);
        let (b, hb) = calls(12, 5);
        let (c, hc) = calls(13, 6);
        let (d, hd) = calls(13, 6);
        let e: Vec<(u64, u64)> = (0..8).map(|k| (500 + k, 600 + k)).collect();
        let got = stitch(8, &[(&a, ha), (&b, hb), (&c, hc), (&d, hd), (&e, 3), (&c, hc)]);
        assert_eq!(got[1], Some(vec![4, 3]));
        assert_eq!(got[2], Some(vec![5, 4, 3]));
        // The same stack again: nothing new, the list still shown.
        assert_eq!(got[3], Some(vec![5, 4, 3]));
        assert_eq!(got[4], None);
        assert_eq!(got[5], None);
    }

    #[test]
    fn a_stack_whose_base_differs_or_a_shorter_previous_one_does_not_stitch() {
        let (a, ha) = calls(10, 3);
        let mut b = calls(12, 5).0;
        b.last_mut().unwrap().1 += 1;
        assert_eq!(stitch(8, &[(&a, ha), (&b, 12 % 8)]), [None, None]);
        // The previous stack does not reach down to the current one's base.
        let (short, hs) = calls(10, 9);
        let (deep, hd) = calls(12, 5);
        assert_eq!(stitch(8, &[(&short, hs), (&deep, hd)]), [None, None]);
        // An empty stack never stitches.
        assert_eq!(stitch(8, &[(&a, ha), (&[], ha)]), [None, None]);
    }

    /// perf's u64 arithmetic: a current base past the previous sample's
    /// register plus the depth wraps to a huge distance (no stitch), and
    /// a distance of u64::MAX wraps `distance + 1` to 0 (no stitch either).
    #[test]
    fn hostile_registers_wrap_as_in_perf() {
        let (a, _) = calls(10, 3);
        for (prev_hw, cur_hw) in [(0, u64::MAX - 3), (u64::MAX, 5), (1 << 40, 7), (0, 8)] {
            let got = stitch(8, &[(&a, prev_hw), (&a, cur_hw)]);
            assert_eq!(got, [None, None], "{prev_hw} {cur_hw}");
        }
    }

    /// `max_branches` bounds the saved nodes: entries past it save
    /// nothing, and come back as nothing.
    #[test]
    fn entries_past_max_branches_are_not_saved() {
        // A depth of 4 claimed for stacks of 8: the picture's registers
        // no longer line up.
        let (prev, prev_hw, cur) = picture();
        assert_eq!(stitch(4, &[(&prev, prev_hw), (&cur, 12 % 8)]), [None, None]);
        // One entry, the previous stack's newest, in the same register:
        // entries 1..=7 would come back, only 1..=4 were saved.
        let (a, _) = calls(10, 3);
        assert_eq!(stitch(4, &[(&a, 0), (&[(10, 110)], 0)]), [None, Some(vec![9, 8, 7, 6])]);
        let mut st: Stitch<u64> = Stitch::new(2);
        for i in 0..100 {
            st.save(i, Some(i as u64));
        }
        assert_eq!(st.saved.len(), 3);
    }

    /// A thread's list keeps the nearest MAX_STITCHED frames.
    #[test]
    fn the_list_is_cut_at_max_stitched() {
        use perf_data::attr::{Attr, branch_sample_type, sample_type};
        let n = MAX_STITCHED + 10;
        let mut st: Stitch<u64> = Stitch::new(1 << 20);
        st.prev = Some(((0..n as u64).map(|k| Entry { from: k, to: k, flags: 0 }).collect(), 7));
        st.saved = (0..n as u64).map(Some).collect();
        let attr = Attr { sample_type: sample_type::BRANCH_STACK, branch_sample_type: branch_sample_type::HW_INDEX | branch_sample_type::CALL_STACK, ..Attr::default() };
        let raw = branch(&[(0, 0)], 7);
        let sample = Sample::parse(&raw, &attr, Endian::Little).unwrap();
        assert!(st.arrive(&sample.branch_stack.unwrap(), 7));
        assert!(st.cut);
        let got: Vec<u64> = st.stitched().copied().collect();
        assert_eq!(got.len(), MAX_STITCHED);
        assert_eq!((got[0], got[MAX_STITCHED - 1]), (1, MAX_STITCHED as u64));
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
