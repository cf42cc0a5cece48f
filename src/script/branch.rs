//! The branch-stack fields: `brstack`, `brstacksym`, `brstackoff` (perf's
//! `perf_sample__fprintf_brstack*` and `print_bstack_flags`).
//!
//! Each entry of the sample's branch stack (most recent first) prints as
//! one space-separated item, the flags last:
//!
//! ```text
//! brstack     ␣0x55ac90d58081 (/bin/x)/0xffffffff815097b3 ([kernel.kallsyms])/P/X/-/28831/RET/NON_SPEC_CORRECT_PATH␣
//! brstackoff  ␣0x1081 (/bin/x)/0x5097b3 ([kernel.kallsyms])/...flags...␣
//! brstacksym  main+0x11 (/bin/x)/bpf_check+0x2a83 ([kernel.kallsyms])/...flags...␣
//!              \_ from, (dso) with -F dso _/ \_ to _______________/
//! flags:      /mispred/in_tx/abort/cycles/type/spec
//! ```
//!
//! Facts from perf 7.2 (`perf-ref` decides):
//! - `brstacksym` has no blank before its first entry, the other two have one
//!   before each; every entry ends with a blank, so entries are two blanks apart.
//! - Addresses are found as `thread__find_map_fb` finds them: in the sample's
//!   address space, else in the one their value belongs to.
//! - mispred is `P` (predicted) or `M` (mispredicted), `-` for neither; a
//!   not-taken branch (BRBE) adds `N`, and is `M` unless predicted.
//! - The type is empty for `PERF_BR_UNKNOWN`; `PERF_BR_EXTEND_ABI` (15) takes
//!   the name of `new_type`, printed `(null)` past perf's table (glibc's
//!   `%s` of a null pointer); the speculation outcome is `-` for none.
//! - `brstackoff` prints an address as an offset into its DSO
//!   (`map__dso_map_ip`: start and pgoff, also for the kernel) unless the
//!   DSO's symbols are already loaded and say `adjust_symbols` (an ELF user
//!   DSO: perf loads it at the first symbol lookup in it). So the same
//!   address prints as an offset before that lookup and as itself after it;
//!   [`LoadedDsos`] follows perf's lookups.

use super::Script;
use super::fields::{Field, f};
use super::format;
use crate::machine::{CpuMode, DsoId, DsoKind, Machine, Map};
use perf_data::sample::{BranchFlags, BranchStack};

impl Script {
    /// The first of `brstack`, `brstacksym`, `brstackoff` in `fields` (perf
    /// prints one), for the sample of thread `tid` taken in `mode`.
    pub(super) fn print_branch_stack(&mut self, machine: &mut Machine, fields: Field, tid: i32, mode: CpuMode, stack: &BranchStack<'_>) {
        let dso = fields & f::DSO != 0;
        let dsoff = fields & f::DSOFF != 0;
        let (addresses, symbols) = (fields & f::BRSTACK != 0, fields & f::BRSTACKSYM != 0);
        for e in stack.iter() {
            let from = self.find_map_fb(machine, tid, mode, e.from);
            let to = self.find_map_fb(machine, tid, mode, e.to);
            for (i, (addr, map)) in [(e.from, from), (e.to, to)].into_iter().enumerate() {
                if symbols && !addresses {
                    if i == 1 {
                        self.buf.push(b'/');
                    }
                    let sym = map.as_ref().and_then(|m| self.symbolizer.find_symbol(&machine.dsos, m, addr));
                    if let Some(m) = &map {
                        self.loaded_dsos.mark(m.dso);
                    }
                    let rel = map.map_or(addr, |m| m.map_ip(addr));
                    super::callchain::symname(&mut self.buf, sym.as_ref(), map.as_ref(), rel, true);
                } else {
                    // brstackoff: an offset into the DSO, unless perf has
                    // loaded its symbols and they say adjust_symbols (see
                    // the module doc).
                    let shown = match &map {
                        Some(m) if !(addresses || (self.loaded_dsos.has(m.dso) && self.symbolizer.adjusts_symbols(&machine.dsos, m.dso))) => {
                            // perf's kernel map has pgoff 0 (the MMAP record's
                            // pgoff names the reference symbol's address).
                            let pgoff = if machine.dsos.get(m.dso).kind == DsoKind::Kernel { 0 } else { m.pgoff };
                            addr.wrapping_sub(m.start).wrapping_add(pgoff)
                        }
                        _ => addr,
                    };
                    self.buf.extend_from_slice(if i == 0 { b" 0x" } else { b"/0x" });
                    format::hex(&mut self.buf, shown, 0);
                }
                if dso {
                    self.branch_dso(machine, map.as_ref(), dsoff, addr);
                }
            }
            flags(&mut self.buf, e.flags);
        }
    }

    /// perf's `map__fprintf_dsoname_dsoff` for a branch address:
    /// ` (name)`, ` (name+0xoffset)` with `dsoff` in an object file.
    fn branch_dso(&mut self, machine: &Machine, map: Option<&Map>, dsoff: bool, addr: u64) {
        self.buf.extend_from_slice(b" (");
        match map {
            Some(m) => {
                self.buf.extend_from_slice(&machine.dsos.get(m.dso).name);
                if dsoff && self.symbolizer.is_object_file(&machine.dsos, m.dso) {
                    self.buf.extend_from_slice(b"+0x");
                    format::hex(&mut self.buf, m.map_ip(addr), 0);
                }
            }
            None => self.buf.extend_from_slice(b"[unknown]"),
        }
        self.buf.push(b')');
    }
}

/// The DSOs perf has loaded so far (looked a symbol up in: the sample's
/// ip, callchain entries, `brstacksym` addresses), for `brstackoff`.
#[derive(Debug, Default)]
pub(super) struct LoadedDsos(Vec<bool>);

impl LoadedDsos {
    pub(super) fn mark(&mut self, dso: DsoId) {
        let i = dso as usize;
        if self.0.len() <= i {
            self.0.resize(i + 1, false);
        }
        self.0[i] = true;
    }

    fn has(&self, dso: DsoId) -> bool {
        self.0.get(dso as usize).copied().unwrap_or(false)
    }
}

/// perf's `print_bstack_flags`: `/mispred/in_tx/abort/cycles/type/spec `.
fn flags(out: &mut Vec<u8>, fl: BranchFlags) {
    out.push(b'/');
    match (fl.not_taken(), fl.predicted(), fl.mispred()) {
        (true, true, _) => out.extend_from_slice(b"PN"),
        (true, false, _) => out.extend_from_slice(b"MN"),
        (false, true, _) => out.push(b'P'),
        (false, false, true) => out.push(b'M'),
        (false, false, false) => out.push(b'-'),
    }
    out.extend_from_slice(if fl.in_tx() { b"/X/" } else { b"/-/" });
    out.push(if fl.abort() { b'A' } else { b'-' });
    out.push(b'/');
    format::uint(out, fl.cycles() as u64, 0);
    out.push(b'/');
    out.extend_from_slice(branch_type_name(fl).as_bytes());
    out.push(b'/');
    out.extend_from_slice(spec_name(fl).unwrap_or("-").as_bytes());
    out.push(b' ');
}

/// perf's `branch_spec_desc` (`None` for `PERF_BR_SPEC_NA`, which perf
/// does not name where it prints the field).
pub(super) fn spec_name(fl: BranchFlags) -> Option<&'static str> {
    match fl.spec() {
        0 => None,
        1 => Some("SPEC_WRONG_PATH"),
        2 => Some("NON_SPEC_CORRECT_PATH"),
        _ => Some("SPEC_CORRECT_PATH"),
    }
}

/// perf's `get_branch_type` (x86 names for the architecture-specific new
/// types, as perf built for x86 has them).
pub(super) fn branch_type_name(fl: BranchFlags) -> &'static str {
    const TYPES: [&str; 15] =
        ["", "COND", "UNCOND", "IND", "CALL", "IND_CALL", "RET", "SYSCALL", "SYSRET", "COND_CALL", "COND_RET", "ERET", "IRQ", "SERROR", "NO_TX"];
    const NEW_TYPES: [&str; 8] = ["FAULT_ALGN", "FAULT_DATA", "FAULT_INST", "ARCH_1", "ARCH_2", "ARCH_3", "ARCH_4", "ARCH_5"];
    match fl.branch_type() {
        15 => NEW_TYPES.get(fl.new_type() as usize).copied().unwrap_or("(null)"),
        t => TYPES[t as usize],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(v: u64) -> String {
        let mut out = Vec::new();
        flags(&mut out, BranchFlags(v));
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn flags_print_as_perf_prints_them() {
        assert_eq!(text(0), "/-/-/-/0//- ");
        assert_eq!(text(1), "/M/-/-/0//- ");
        assert_eq!(text(3), "/P/-/-/0//- ");
        assert_eq!(text(1 << 33), "/MN/-/-/0//- ");
        assert_eq!(text(1 << 33 | 2), "/PN/-/-/0//- ");
        assert_eq!(text(0xffff << 4 | 4 | 8), "/-/X/A/65535//- ");
        assert_eq!(text(15 << 20 | 7 << 26), "/-/-/-/0/ARCH_5/- ");
        assert_eq!(text(15 << 20 | 8 << 26), "/-/-/-/0/(null)/- ");
        assert_eq!(text(1 << 20 | 1 << 24), "/-/-/-/0/COND/SPEC_WRONG_PATH ");
        assert_eq!(text(14 << 20 | 3 << 24), "/-/-/-/0/NO_TX/SPEC_CORRECT_PATH ");
        // Reserved bits and priv print nothing.
        assert_eq!(text(7 << 30 | 1 << 34 | 1 << 63), "/-/-/-/0//- ");
    }

    #[test]
    fn loaded_dsos_remember_marks() {
        let mut l = LoadedDsos::default();
        assert!(!l.has(3));
        l.mark(3);
        assert!(l.has(3) && !l.has(2) && !l.has(40));
    }
}
