//! `--stitch-lbr`: the callchain of a sample with an LBR call stack, with
//! the frames its thread's previous sample recovers (see
//! [`crate::session::lbr`] for the rule), as perf's
//! `resolve_lbr_callchain_sample` builds it when the thread's
//! `lbr_stitch_enable` is set.
//!
//! perf stitches copies of the callchain nodes an earlier sample resolved,
//! and a node is one printed line: an address with inline frames is one
//! node per inline line. The node perf saved for LBR entry `i` is the one
//! `i + 1` nodes after the kernel part (the first is the sample's ip), so
//! where an address before it printed several lines, the saved node is a
//! line of another address, perhaps one inline line of several:
//!
//! ```text
//! nodes   [kernel ...] ip  from0:a  from0:b  from1  from2 ...   (from0 has 2 inline lines)
//! saved               entry0 -^  entry1 -^ entry2 -^ ...        (entry i: node K + 1 + i)
//! ```
//!
//! So this works out the nodes the way perf's cursor counts them (the
//! reading side looks up symbols and inline frames for that, only with
//! `--stitch-lbr`), keeps each saved node as (address, map as resolved
//! then, which inline line), and prints a stitched inline line alone
//! ([`Other::InlineLine`] before its frame job). The map is the one the
//! earlier sample found, as perf's copy keeps it.
//!
//! State is per thread (perf's `struct thread`, [`Thread::serial`]): a
//! thread made anew for its tid (FORK, or a sample after its EXIT) starts
//! over.
//!
//! [`Thread::serial`]: crate::machine::Thread::serial

use perf_data::bytes::U64Array;
use perf_data::sample::{BranchStack, Sample};

use super::Script;
use super::callchain::{LineStyle, Other, line_code};
use crate::machine::maps::Map;
use crate::machine::{CpuMode, Machine};
use crate::session::lbr::{MAX_STITCHED, Stitch};

/// What a saved node prints: `ip` in `map` (as the saving sample found
/// it), all of its lines, or only inline line `line` of several.
#[derive(Debug, Clone, Copy)]
pub(super) struct Node {
    ip: u64,
    map: Option<Map>,
    line: Option<u32>,
}

/// The stitching state of a run with `--stitch-lbr` on a recording that
/// says its LBR depth.
pub(super) struct LbrStitching {
    max_lbr: u32,
    /// By tid: the thread's serial and its state.
    threads: crate::fasthash::FastMap<i32, (u64, Stitch<Node>)>,
    /// The cut at [`MAX_STITCHED`] was said.
    said_cut: bool,
}

impl LbrStitching {
    /// Stitching with an LBR of `max_branches` entries (none if 0: perf
    /// needs the depth).
    pub(super) fn new(max_branches: u32) -> Option<LbrStitching> {
        (max_branches > 0).then(|| LbrStitching { max_lbr: max_branches, threads: Default::default(), said_cut: false })
    }
}

impl Script {
    /// Prints an LBR callchain (`recorded`: its kernel part, `user`: the
    /// sample's ip and the call stack's `from`s), stitched if the thread's
    /// previous sample allows.
    pub(super) fn print_lbr_callchain(&mut self, machine: &mut Machine, s: &Sample<'_>, recorded: U64Array<'_>, user: &[u64], ty: usize) {
        let stitched = match (&s.branch_stack, self.stitching.is_some()) {
            (Some(stack), true) => self.stitch(machine, s.tid, stack, recorded, user),
            _ => None,
        };
        self.print_callchain(machine, s.tid, recorded.iter(), self.opts.max_stack, ty, None);
        self.print_user_frames(machine, s.tid, user, ty);
        let code = line_code(self.ip_opts[ty], LineStyle::Callchain, false);
        for node in stitched.into_iter().flatten() {
            if let Some(line) = node.line {
                self.out.other(self.buf.len(), Other::InlineLine(line));
            }
            self.mark_loaded(node.map.as_ref());
            self.frame_line(machine, node.ip, node.map.as_ref(), code);
        }
    }

    /// The thread's stitching for this sample: the nodes to print after
    /// its own (`None`: no stitching), its entries' nodes saved.
    fn stitch(&mut self, machine: &mut Machine, tid: i32, stack: &BranchStack<'_>, recorded: U64Array<'_>, user: &[u64]) -> Option<Vec<Node>> {
        let serial = machine.thread(tid).map_or(0, |t| t.serial());
        let stitching = self.stitching.as_mut()?;
        // perf allocates the state at the thread's first sample with an
        // hw_idx and saves nodes from then on; saving before changes
        // nothing (that sample has no previous stack to compare with, and
        // its own saves replace what the next one compares with).
        let mut state = match stitching.threads.remove(&tid) {
            Some((known, state)) if known == serial => state,
            _ => Stitch::new(stitching.max_lbr),
        };
        let stitched = match stack.hw_idx {
            Some(hw_idx) => state.arrive(stack, hw_idx),
            None => false,
        };
        if std::mem::take(&mut state.cut) && !stitching.said_cut {
            stitching.said_cut = true;
            self.warnings.push(format!("--stitch-lbr: the stitched frames of thread {tid} cut at {MAX_STITCHED} (perf carries them all)"));
        }
        // An unknown context marker in the kernel part: perf drops the
        // nodes and falls back to the recorded callchain before the call
        // stack's entries are added (nothing saved).
        if crate::machine::callchain_entries(recorded.iter(), usize::MAX).is_some() {
            self.save_nodes(machine, tid, &mut state, user);
        }
        let nodes = stitched.then(|| state.stitched().copied().collect());
        if let Some(s) = self.stitching.as_mut() {
            s.threads.insert(tid, (serial, state));
        }
        nodes
    }

    /// perf's `save_lbr_cursor_node` for each entry: entry `i` saves the
    /// node `i + 1` nodes after the first user node (the sample's ip's),
    /// whatever the kernel part before it.
    fn save_nodes(&mut self, machine: &mut Machine, tid: i32, state: &mut Stitch<Node>, user: &[u64]) {
        let entries = user.len().saturating_sub(1);
        let mut node = 0usize;
        for &ip in user {
            if node > entries {
                break;
            }
            let map = self.find_map(machine, tid, CpuMode::User, ip);
            let lines = self.node_lines(machine, map.as_ref(), ip);
            for line in 0..lines {
                if (1..=entries).contains(&node) {
                    state.save(node - 1, Some(Node { ip, map, line: (lines > 1).then_some(line) }));
                }
                node += 1;
            }
        }
    }

    /// How many nodes (printed lines) perf's cursor has for user address
    /// `ip`: one per inline line (`append_inlines`), else one.
    fn node_lines(&mut self, machine: &Machine, map: Option<&Map>, ip: u64) -> u32 {
        let Some(m) = map.filter(|_| self.symbolizer.config.inline) else { return 1 };
        let Some(sym) = self.symbolizer.find_symbol(&machine.dsos, m, ip) else { return 1 };
        let inlines = self.symbolizer.inlines(&machine.dsos, m, ip, &sym);
        u32::try_from(inlines.len()).unwrap_or(u32::MAX).max(1)
    }
}
