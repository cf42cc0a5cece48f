//! The `brstackinsn` and `brstackinsnlen` fields: the instructions of the
//! code a sample's branch stack says ran, block by block (perf's
//! `perf_sample__fprintf_brstackinsn`, `grab_bb`, `ip__fprintf_jump`,
//! `ip__fprintf_sym`, and x86's `dump_insn` and `arch_is_uncond_branch`).
//!
//! ```text
//! entries (most recent first)      blocks printed (oldest first)
//!   e[n-1] from ─┐                   the jump at e[n-1].from (its entry unknown)
//!   e[n-2] to .. from  <─ e[n-1]      e[n-1].to .. e[n-2].from, its last line the jump
//!   ...                               ...
//!   e[0]   to .. sample ip            e[0].to .. the sample's ip (the final block)
//! ```
//!
//! ```text
//! \tmain+17:                                  a symbol's first address in the run
//! \t000055ac90d5809d\tinsn: 85 c0 \tilen: 2   an instruction inside a block
//! \t000055ac90d580a2\tinsn: 74 0c ....(30)\tilen: 2\t# PRED 5 cycles [12] 0.60 IPC
//! ```
//!
//! Facts of perf 7.2 kept here (perf-ref decides):
//! - Code is read as `grab_bb` reads it: from the DSO of the map holding the
//!   block's start in the address space its value belongs to (2^63 up:
//!   kernel), `end - start + 15` bytes; nothing for a block whose ends are
//!   in different spaces (then the next entry's `from` is tried as its end),
//!   longer than 16,369 bytes (a negative length too), or starting at 0.
//!   The kernel's code is not read (its symbols come from kallsyms), BPF
//!   programs' is (their JIT image).
//! - The space a block was read in stays for the symbol lookups after it,
//!   also when the next block has a zero address and is not read.
//! - A symbol line is printed when an address is in another symbol than the
//!   last one printed (compared by DSO-relative address, whatever the DSO),
//!   its offset in decimal (`%+d`), none when 0.
//! - Lengths come from the x86 decoder as for `insn` (see `insn.rs`); an
//!   instruction it does not take prints `<bad>` and ends the block,
//!   followed by `mismatch of LBR data and executable` when the block did not
//!   end at its branch.
//! - The final block is not printed when the sample is at the last branch
//!   or the branch aborted; it ends at the sample's ip, or 128 bytes on when
//!   the ip is before the block's start, or at an unconditional branch
//!   (`... not reaching sample ...`; an instruction the decoder does not
//!   take counts as one) when the recording samples all branches. When its
//!   code cannot be read, the instruction at the ip alone is printed.
//! - `--max-blocks N` keeps the N + 1 most recent entries.
//! - `srcline` adds `\tfile:line` to symbol lines and ` srcline: file:line`
//!   and a tab after a jump's instruction (and ilen); `srccode` prints the
//!   source line after every jump and instruction line (not after `<bad>`
//!   or `... not reaching sample ...`), with the thread's memory of the
//!   last line it printed that the sample's own srccode line uses too.
//!   Both are looked up on the printing side, as jobs in the output where
//!   their text goes: addr2line's answers depend on the order it is asked
//!   in (see [`super::callchain`]), and this keeps perf's order between the
//!   sample's ip, the dump and the sample's srccode line. With
//!   `--per-event-dump` perf prints srccode lines to standard output, so
//!   the dump in an event's file has none; the pass over standard output
//!   walks the dump again for them, its text dropped.

use super::callchain::{FrameJob, LineStyle, SrclinePrefix};
use super::fields::{Field, IpOpts, f};
use super::{PerEvent, Script};
use super::format;
use super::insn;
use crate::machine::maps::Map;
use crate::machine::{CpuMode, Machine};
use perf_data::sample::{BranchEntry, BranchStack, Sample};

/// perf's `MAXBB`: the longest block read.
const MAXBB: u64 = 16384;
/// perf's `MAXINSN` (dump-insn.h): the longest x86 instruction.
const MAXINSN: u64 = 15;
/// `PERF_SAMPLE_BRANCH_ANY`.
const BRANCH_ANY: u64 = 1 << 3;

/// What `grab_bb` gives.
enum Grab {
    /// Bytes read (0: none).
    Read(usize),
    /// The block goes from one address space to the other (`-ENXIO`).
    CrossesSpaces,
}

/// The state of one sample's dump, as perf keeps it in `struct perf_insn`
/// and its locals.
struct Walk {
    tid: i32,
    cpumode: CpuMode,
    bitness: u32,
    /// The DSO-relative range of the last symbol printed.
    lastsym: Option<(u64, u64)>,
    total_cycles: u64,
    insnlen: bool,
    /// `brcntr`: the sample's event (its group's counters are printed).
    brcntr: Option<usize>,
    /// `srcline`: on symbol lines and jumps.
    srcline: bool,
    /// `srccode`: after jumps and instructions.
    srccode: bool,
    /// Only the srccode lines: the output's length to cut the text back to.
    quiet: Option<usize>,
    buf: Vec<u8>,
}

impl Script {
    /// perf's `perf_sample__fprintf_brstackinsn` for `brstackinsn` or
    /// `brstackinsnlen` in `fields` (and `brcntr`: the counters of event
    /// `evsel`'s group on each jump); `branch_type` is the event's
    /// `branch_sample_type`.
    pub(super) fn print_brstackinsn(&mut self, machine: &mut Machine, fields: Field, s: &Sample<'_>, evsel: usize, branch_type: u64, stack: &BranchStack<'_>) {
        // With --per-event-dump perf prints srccode lines to standard
        // output, not into the event's file.
        let srccode = fields & f::SRCCODE != 0 && self.opts.per_event == PerEvent::All;
        self.walk_brstackinsn(machine, fields, s, evsel, branch_type, stack, srccode, None);
    }

    /// What the dump prints to standard output with --per-event-dump: its
    /// srccode lines, after the same walk (the text of the dump left out).
    pub(super) fn print_brstackinsn_srccode(&mut self, machine: &mut Machine, fields: Field, s: &Sample<'_>, evsel: usize, branch_type: u64, stack: &BranchStack<'_>) {
        let mark = self.buf.len();
        self.walk_brstackinsn(machine, fields & !f::SRCLINE, s, evsel, branch_type, stack, true, Some(mark));
        self.buf.truncate(mark);
    }

    /// The dump; `quiet`: its text is dropped at each srccode line (the
    /// buffer cut back to that length).
    #[allow(clippy::too_many_arguments)]
    fn walk_brstackinsn(&mut self, machine: &mut Machine, fields: Field, s: &Sample<'_>, evsel: usize, branch_type: u64, stack: &BranchStack<'_>, srccode: bool, quiet: Option<usize>) {
        let mut entries: Vec<BranchEntry> = stack.iter().collect();
        if entries.is_empty() {
            return;
        }
        if self.opts.max_blocks > 0 {
            entries.truncate(self.opts.max_blocks as usize + 1);
        }
        let nr = entries.len();
        let brcntr = (fields & f::BRCNTR != 0).then_some(evsel);
        let mut w = Walk {
            tid: s.tid,
            cpumode: CpuMode::User,
            bitness: 64,
            lastsym: None,
            total_cycles: 0,
            insnlen: fields & f::BRSTACKINSNLEN != 0,
            brcntr,
            srcline: fields & f::SRCLINE != 0,
            srccode,
            quiet,
            buf: Vec::new(),
        };
        // A sample without counters shows none occurred (perf's 0).
        let counter = |i: usize| stack.counters.and_then(|c| c.get(i)).unwrap_or(0);
        self.buf.push(b'\n');

        // The first branch: where its block started is not known.
        let first = entries[nr - 1];
        if let Grab::Read(len @ 1..) = self.grab(machine, &mut w, first.from, first.from) {
            self.insn_sym(machine, &mut w, first.from);
            self.insn_jump(machine, &mut w, first.from, &first, counter(nr - 1), 0, len, 0);
            self.insn_srccode(machine, &w, first.from);
        }

        let mut i = nr as isize - 2;
        while i >= 0 {
            let start = entries[i as usize + 1].to;
            let mut end = entries[i as usize].from;
            let mut grabbed = self.grab(machine, &mut w, start, end);
            // perf patches up a kernel entry the ring filter left out.
            if matches!(grabbed, Grab::CrossesSpaces) && i > 0 {
                i -= 1;
                end = entries[i as usize].from;
                grabbed = self.grab(machine, &mut w, start, end);
            }
            let len = match grabbed {
                Grab::Read(len @ 1..) => len,
                _ => {
                    i -= 1;
                    continue;
                }
            };
            let entry = entries[i as usize];
            let mut insns = 0u32;
            let mut off = 0usize;
            while off < len {
                let ip = start.wrapping_add(off as u64);
                self.insn_sym(machine, &mut w, ip);
                if ip == end {
                    insns += 1;
                    self.insn_jump(machine, &mut w, ip, &entry, counter(i as usize), off, len, insns);
                    self.insn_srccode(machine, &w, ip);
                    break;
                }
                let ilen = self.insn_line(&mut w, ip, off, len);
                if ilen == 0 {
                    break;
                }
                self.insn_srccode(machine, &w, ip);
                insns += 1;
                off += ilen;
            }
            if off as u64 != end.wrapping_sub(start) {
                self.buf.extend_from_slice(b"\tmismatch of LBR data and executable\n");
            }
            i -= 1;
        }

        // The final block, up to the sample, unless the sample is at the
        // last branch or that branch aborted.
        let last = entries[0];
        if last.from == s.ip || last.flags.abort() {
            return;
        }
        let start = last.to;
        let mut end = s.ip;
        if end < start {
            // A branch or two missing: the next 128 bytes.
            end = start.wrapping_add(128);
        }
        let grabbed = self.grab(machine, &mut w, start, end);
        self.insn_sym(machine, &mut w, start);
        let len = match grabbed {
            Grab::Read(len @ 1..) => len,
            _ => {
                if let Grab::Read(len @ 1..) = self.grab(machine, &mut w, s.ip, s.ip) {
                    self.insn_line(&mut w, s.ip, 0, len);
                    self.insn_srccode(machine, &w, s.ip);
                }
                return;
            }
        };
        let mut off = 0u64;
        while off <= end.wrapping_sub(start) {
            let at = start.wrapping_add(off);
            let o = usize::try_from(off).unwrap_or(usize::MAX);
            let ilen = self.insn_line(&mut w, at, o, len);
            if ilen == 0 {
                break;
            }
            if (branch_type == 0 || branch_type & BRANCH_ANY != 0) && uncond_branch(w.buf.get(o..len).unwrap_or_default(), w.bitness) && at != s.ip {
                self.buf.extend_from_slice(b"\t... not reaching sample ...\n");
                break;
            }
            self.insn_srccode(machine, &w, at);
            off += ilen as u64;
        }
    }

    /// perf's `grab_bb`: the code from `start` to `end` (and one
    /// instruction more) into `w.buf`.
    fn grab(&mut self, machine: &mut Machine, w: &mut Walk, start: u64, end: u64) -> Grab {
        if start == 0 || end == 0 {
            return Grab::Read(0);
        }
        let kernel = start >= 1 << 63;
        w.cpumode = if kernel { CpuMode::Kernel } else { CpuMode::User };
        if kernel != (end >= 1 << 63) {
            return Grab::CrossesSpaces;
        }
        let size = end.wrapping_sub(start);
        if size > MAXBB - MAXINSN {
            return Grab::Read(0);
        }
        let Ok(map) = self.symbolizer.find_map(machine, w.tid, w.cpumode, start) else { return Grab::Read(0) };
        if self.track_loads {
            // perf loads the map's symbols here (`map__load`).
            self.loaded_dsos.mark(map.dso);
        }
        w.buf.clear();
        w.buf.resize((size + MAXINSN) as usize, 0);
        match self.insn.read(&mut self.symbolizer, machine, &map, start, &mut w.buf) {
            Some((n, bitness)) => {
                w.bitness = bitness;
                Grab::Read(n)
            }
            None => Grab::Read(0),
        }
    }

    /// perf's `ip__fprintf_sym`: `\tname+off:` when `addr` is in another
    /// symbol than the last one printed.
    fn insn_sym(&mut self, machine: &mut Machine, w: &mut Walk, addr: u64) {
        let Ok(map) = self.symbolizer.find_map(machine, w.tid, w.cpumode, addr) else { return };
        let rel = map.map_ip(addr);
        if let Some((start, end)) = w.lastsym
            && (start..end).contains(&rel)
        {
            return;
        }
        let Some(sym) = self.symbolizer.find_symbol(&machine.dsos, &map, addr) else { return };
        let off = if rel < sym.end { rel.wrapping_sub(sym.start) } else { rel.wrapping_sub(map.start).wrapping_sub(sym.start) };
        self.buf.push(b'\t');
        self.buf.extend_from_slice(sym.name.as_bytes());
        // A C int, printed with %+d.
        let off = off as i32;
        if off != 0 {
            format::text(&mut self.buf, format_args!("{off:+}"));
        }
        self.buf.push(b':');
        if w.srcline {
            self.insn_srcline(machine, &map, addr, SrclinePrefix::Symbol);
        }
        self.buf.push(b'\n');
        w.lastsym = Some((sym.start, sym.end));
    }

    /// perf's `map__fprintf_srcline` in the dump: the line of `addr` in
    /// `map`, looked up on the printing side in the order perf asks
    /// addr2line (see [`super::callchain`]).
    fn insn_srcline(&mut self, machine: &Machine, map: &Map, addr: u64, prefix: SrclinePrefix) {
        self.frame(machine, FrameJob { ip: addr, map: Some(*map), opts: IpOpts::default(), style: LineStyle::InsnSrcline(prefix), cookie: false });
    }

    /// perf's `print_srccode` after an instruction of the dump: its source
    /// line if the thread did not print that line last.
    fn insn_srccode(&mut self, machine: &mut Machine, w: &Walk, ip: u64) {
        if w.srccode {
            if let Some(mark) = w.quiet {
                self.buf.truncate(mark);
            }
            self.print_srccode(machine, w.tid, w.cpumode, ip);
        }
    }

    /// An instruction of a block: `\taddress\tinsn: ..` (and `\tilen: N`);
    /// its length (0: `<bad>`).
    fn insn_line(&mut self, w: &mut Walk, ip: u64, off: usize, len: usize) -> usize {
        let (ilen, _) = self.insn_text(w, ip, off, len);
        if w.insnlen {
            format::text(&mut self.buf, format_args!("\tilen: {ilen}"));
        }
        self.buf.push(b'\n');
        ilen
    }

    /// `\taddress\t` and perf's `dump_insn` of the instruction at `off` of
    /// the block read; its length, and where its text starts in the output.
    fn insn_text(&mut self, w: &Walk, ip: u64, off: usize, len: usize) -> (usize, usize) {
        format::text(&mut self.buf, format_args!("\t{ip:016x}\t"));
        let at = self.buf.len();
        (insn::dump(&mut self.buf, w.buf.get(off..len).unwrap_or_default(), w.bitness), at)
    }

    /// perf's `ip__fprintf_jump`: the branch instruction ending a block,
    /// its text padded to 30 columns, then (`brcntr`) the events counted
    /// in `counters`, the branch's flags, cycles and the IPC of the block
    /// (`insns` instructions).
    #[allow(clippy::too_many_arguments)]
    fn insn_jump(&mut self, machine: &mut Machine, w: &mut Walk, ip: u64, entry: &BranchEntry, counters: u64, off: usize, len: usize, insns: u32) {
        let (ilen, at) = self.insn_text(w, ip, off, len);
        if self.buf.len() - at < 30 {
            self.buf.resize(at + 30, b' ');
        }
        self.buf.push(b'\t');
        if w.insnlen {
            format::text(&mut self.buf, format_args!("ilen: {ilen}\t"));
        }
        if w.srcline {
            if let Ok(map) = self.symbolizer.find_map(machine, w.tid, w.cpumode, ip) {
                self.insn_srcline(machine, &map, ip, SrclinePrefix::Jump);
            }
            self.buf.push(b'\t');
        }
        let fl = entry.flags;
        match (w.brcntr, &self.brcntr) {
            (Some(evsel), Some(c)) => c.print(&mut self.buf, evsel, counters),
            _ => self.buf.push(b'#'),
        }
        for (on, text) in [(fl.predicted(), " PRED"), (fl.mispred(), " MISPRED"), (fl.in_tx(), " INTX"), (fl.abort(), " ABORT")] {
            if on {
                self.buf.extend_from_slice(text.as_bytes());
            }
        }
        let cycles = fl.cycles();
        if cycles != 0 {
            w.total_cycles += u64::from(cycles);
            // C ints.
            format::text(&mut self.buf, format_args!(" {} cycles [{}]", cycles as i32, w.total_cycles as i32));
            if insns != 0 {
                let ipc = insns as f32 / cycles as f32;
                format::text(&mut self.buf, format_args!(" {:.2} IPC", f64::from(ipc)));
            }
        }
        self.buf.push(b'\n');
    }
}

/// x86's `arch_is_uncond_branch` (perf's Intel PT instruction decoder):
/// whether the instruction at the start of `bytes` is an unconditional or
/// indirect branch, call, return, interrupt or system call; also true for
/// bytes the decoder does not take (perf returns -1 there, which its
/// caller takes as true).
fn uncond_branch(bytes: &[u8], bitness: u32) -> bool {
    if insn::insn_len(bytes, bitness) == 0 {
        return true;
    }
    // (VEX, EVEX and XOP encodings, never branches for perf, start with
    // 0xc4, 0xc5, 0x62 or 0x8f after the legacy prefixes: no case below.)
    let p = insn::Prefixes::of(bytes, bitness);
    let byte = |k: usize| bytes.get(p.opcode + k).copied().unwrap_or(0);
    match byte(0) {
        0x0f => match byte(1) {
            0x01 => match byte(2) {
                0xc2 | 0xc3 => true,
                0xca => matches!(p.last_legacy, 0xf2 | 0xf3),
                _ => false,
            },
            0x05 | 0x34 | 0x07 | 0x35 => true,
            _ => false,
        },
        0xc2 | 0xc3 | 0xca | 0xcb | 0xcf | 0xcc..=0xce | 0xe8 | 0x9a | 0xe9 | 0xeb | 0xea => true,
        0xff => matches!((byte(1) >> 3) & 7, 2..=5),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branches_as_perfs_decoder_classes_them() {
        let cases: &[(&[u8], bool)] = &[
            (&[0xe8, 0, 0, 0, 0], true),        // call rel32
            (&[0xe9, 0, 0, 0, 0], true),        // jmp rel32
            (&[0xeb, 0x10], true),              // jmp rel8
            (&[0x74, 0x10], false),             // je
            (&[0x0f, 0x84, 0, 0, 0, 0], false), // je rel32
            (&[0xe3, 0x10], false),             // jrcxz
            (&[0xe2, 0x10], false),             // loop
            (&[0xc3], true),                    // ret
            (&[0xf3, 0xc3], true),              // repz ret
            (&[0xff, 0xd0], true),              // call rax
            (&[0xff, 0xe0], true),              // jmp rax
            (&[0x41, 0xff, 0xe3], true),        // jmp r11
            (&[0xff, 0xc0], false),             // inc eax
            (&[0x0f, 0x05], true),              // syscall
            (&[0xcc], true),                    // int3
            (&[0x0f, 0x01, 0xc3], true),        // vmresume
            (&[0x0f, 0x01, 0xca], false),       // clac
            (&[0xf2, 0x0f, 0x01, 0xca], true),  // erets
            (&[0x48, 0x89, 0xe5], false),       // mov rbp, rsp
            (&[0xc5, 0xf8, 0x77], false),       // vzeroupper
            (&[0x0f, 0x0b], false),             // ud2
            (&[0x0f], true),                    // cut short: not decoded
        ];
        for (bytes, want) in cases {
            assert_eq!(uncond_branch(bytes, 64), *want, "{bytes:02x?}");
        }
    }

    #[test]
    fn dumps_as_perf_does() {
        let mut out = Vec::new();
        assert_eq!(insn::dump(&mut out, &[0x48, 0x89, 0xe5, 0x90], 64), 3);
        assert_eq!(out, b"insn: 48 89 e5 ");
        out.clear();
        assert_eq!(insn::dump(&mut out, &[0x0f], 64), 0);
        assert_eq!(out, b"<bad>");
    }
}
