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
//! Not done: `--stitch-lbr` joins call stacks of consecutive samples of a
//! thread, which perf does only when the recording says how deep the
//! hardware's LBR is (`max_branches` from the PMU capabilities); the
//! recordings this was checked on do not, and perf shows them unstitched.

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
