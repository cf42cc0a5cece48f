//! DWARF unwinding of `--call-graph dwarf` samples, frame for frame as
//! perf 7.2 does it with libdw (elfutils 0.196).
//!
//! A sample of such a recording has no user callchain: it carries the user
//! registers (`PERF_SAMPLE_REGS_USER`) and a copy of the user stack from
//! the stack pointer up (`PERF_SAMPLE_STACK_USER`). perf unwinds them
//! through libdw when it prints the sample (research notes:
//! `docs/dwarf-unwinding.md`):
//!
//! ```text
//! callchain = kernel part of PERF_SAMPLE_CALLCHAIN (up to --max-stack entries)
//!           + unwind(user regs, stack copy)       (up to --max-stack entries)
//!
//! unwind:  report the module at the sample's ip        (none: no user frames)
//!          frame 0 = the sampled frame, pc = ip
//!          loop:  caller = step(frame)                  (CFI row or frame pointer)
//!                 ip printed = pc, or pc - 1 for a return address
//!                 the frame's map has a file libdw cannot open: stop, not printed
//!                 max-stack frames: stop
//!                 no caller / return address undefined: stop
//! ```
//!
//! This module reproduces those choices; it knows nothing of sessions or
//! printing. The caller describes the process through [`Process`] (maps
//! with their [`Object`]s, built once per DSO) and keeps a
//! [`ModuleSpace`] per process; [`Unwinder::unwind`] returns the frames
//! as perf adds them to the callchain, and why it stopped.
//!

mod cfi;
mod expr;
mod memory;
mod modules;
mod object;
mod read;
mod regs;
mod step;
#[cfg(test)]
mod tests;
mod trail;
mod user;

use std::rc::Rc;

pub(crate) use modules::ModuleSpace;
pub(crate) use object::Object;
pub(crate) use regs::{Arch, Regs, abi};
pub(crate) use user::UserUnwinder;
pub use user::{UnwindOptions, UnwindStats, UnwindStyles};

use memory::{Memory, ReadLog};
use regs::{InitialLayout, RegFile};
use step::{Ctx, FrameState, PcState, RowCache};
use trail::{At, Trails};

/// The process being unwound, as perf sees it at the sample's time.
pub trait Process {
    /// The map at `addr`, as perf's `thread__find_map` finds it for a user
    /// address (all of the thread's maps, data maps included).
    fn find_map(&self, addr: u64) -> Option<MapRef>;

    /// 8 bytes at `addr` from the file mapped there (perf's
    /// `access_dso_mem`: the DSO's file at `addr - start + pgoff`), for
    /// reads outside the stack copy. `None` where there is no file.
    fn read_file_word(&self, _addr: u64) -> Option<u64> {
        None
    }

    /// The version of the maps: as long as it stays the same, `find_map`
    /// gives the same answer for every address, so the modules' answers
    /// for an address are remembered until it changes (the stamp of the
    /// process's maps, [`crate::machine::Maps::stamp`]).
    fn stamp(&self) -> u64;

    /// Told of every map without an object file, or whose object has no
    /// CFI, that a frame's module report looks at (also when the report's
    /// answer was remembered), for the caller's statistics.
    fn met(&self, _met: &Met) {}
}

/// A map met while unwinding that perf cannot unwind with (see
/// [`Process::met`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Met {
    /// No object file (its DSO's name): a frame there ends the unwind.
    NoObject(Rc<[u8]>),
    /// An object without `.eh_frame` and `.debug_frame`: libdw falls back
    /// to the frame pointer there.
    NoCfi(Rc<[u8]>),
}

impl Met {
    fn of(map: &MapRef) -> Option<Met> {
        match &map.object {
            None => Some(Met::NoObject(map.name.clone())),
            Some(o) if !o.has_cfi() => Some(Met::NoCfi(map.name.clone())),
            Some(_) => None,
        }
    }
}

/// A map of the process.
#[derive(Debug, Clone)]
pub struct MapRef {
    pub start: u64,
    pub pgoff: u64,
    /// The DSO's long name (libdw tells modules apart by the short name).
    pub name: Rc<[u8]>,
    /// The map's file as libdw would open it (perf reports the DSO's path
    /// under the symfs, else its build-id cache file); `None` when there
    /// is none (`[vdso]` outside the build-id cache, `[stack]`, anonymous
    /// memory, a missing file, not an ELF file): a frame there ends the
    /// unwind without being printed.
    pub object: Option<Rc<Object>>,
    /// A `/tmp/jitted-*` DSO: perf reports it at the map's start instead
    /// of start − pgoff.
    pub jitted: bool,
}

/// A sample's user state.
#[derive(Debug, Clone, Copy)]
pub struct Sample<'a> {
    pub regs: Regs<'a>,
    /// The valid part of the stack copy (`dyn_size` bytes; perf rejects a
    /// sample whose `dyn_size` exceeds the copy).
    pub stack: &'a [u8],
    /// Byte order of the stack copy (the recording machine's).
    pub little_endian: bool,
}

/// One unwound frame, as perf adds it to the callchain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    /// The address perf records, prints and symbolizes: `pc`, or `pc - 1`
    /// when `pc` is a return address (all frames but the sampled one and
    /// those interrupted by a signal, and a signal trampoline's own frame).
    pub ip: u64,
    /// The frame's program counter.
    pub pc: u64,
    /// `ip == pc` (libdw's "activation").
    pub activation: bool,
}

/// Why the unwind stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stop {
    /// No user registers (ABI none: a kernel thread), or none for the IP.
    NoUserRegs,
    /// An empty stack copy: perf does not unwind.
    EmptyStack,
    /// A register ABI this unwinder has no table for (32-bit tasks).
    UnsupportedAbi,
    /// The sample's own ip is in a map whose file cannot be reported:
    /// no user frame at all (e.g. a sample in `[vdso]`).
    FirstFrameNotReported,
    /// No module could be attached yet (the process's first unwound
    /// sample had its ip outside any map): no user frame.
    NotAttached,
    /// `max_stack` frames were produced.
    MaxStack,
    /// The CFI row gave no return address: it is undefined (the outermost
    /// frame), 0, or could not be read (the stack copy ends before it).
    /// libdw treats all of these as the normal end of a stack.
    End,
    /// No CFI row covers the frame and the frame-pointer fallback failed
    /// (libdw's unwinding error; perf keeps the frames it has).
    NoCaller,
    /// The next frame's address is in a map whose file cannot be reported:
    /// perf stops without printing it.
    FrameNotReported,
}

/// The result of one unwind, as the tests look at it.
#[cfg(test)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unwound {
    pub frames: Vec<Frame>,
    pub stop: Stop,
}

/// Unwinds samples of one architecture; holds caches (CFI rows per object
/// and address, the last unwind of recent threads) and nothing else per
/// process. Not shared between threads: give each thread its own.
pub struct Unwinder {
    arch: Arch,
    rows: RowCache,
    /// The two frames of an unwind (see `unwind_into`).
    slots: [FrameState; 2],
    /// The register layout of the last sample's mask.
    layout: InitialLayout,
    /// The words the current unwind read, for its trail.
    log: ReadLog,
    /// The last unwind of recent threads (see `trail.rs`).
    trails: Trails,
}

/// The most frames one unwind produces, whatever `max_stack` says (perf
/// allocates `max_stack` entries; this bounds a hostile endless stack).
pub const MAX_FRAMES: usize = 1 << 16;

impl Unwinder {
    pub fn new(arch: Arch) -> Unwinder {
        let slot = || FrameState { regs: RegFile::empty(arch.frame_nregs()), pc: 0, pc_state: PcState::Undefined, initial: false, signal: false };
        Unwinder { arch, rows: RowCache::default(), slots: [slot(), slot()], layout: InitialLayout::new(arch, 0), log: ReadLog::default(), trails: Trails::default() }
    }

    /// How many CFI rows are cached.
    #[cfg(test)]
    pub fn cached_rows(&self) -> usize {
        self.rows.len()
    }

    /// [`Unwinder::unwind_into`] into a new vector.
    #[cfg(test)]
    pub fn unwind(&mut self, space: &mut ModuleSpace, process: &dyn Process, sample: &Sample<'_>, max_stack: usize) -> Unwound {
        let mut frames = Vec::new();
        let stop = self.unwind_into(space, process, sample, 0, max_stack, &mut frames);
        Unwound { frames, stop }
    }

    /// How many unwinds took the rest of a trail.
    #[cfg(test)]
    pub fn trails_taken(&self) -> usize {
        self.trails.taken
    }

    /// perf's `unwind__get_entries` (libdw) for one sample of a process
    /// whose modules are in `space`, limited to `max_stack` frames (perf
    /// script's `--max-stack`, 127 by default): the frames go to `frames`
    /// (cleared first), leaf first; frames whose `ip` is 0 are left out,
    /// as perf leaves them out of the callchain (they still count for
    /// `max_stack`). The caller keeps `frames` from sample to sample: a
    /// new vector for each sample grew two or three times on a typical
    /// stack. `thread`: the sample's thread, whose last unwind in `space`
    /// may give this one its outer frames (see `trail.rs`).
    pub fn unwind_into(&mut self, space: &mut ModuleSpace, process: &dyn Process, sample: &Sample<'_>, thread: u64, max_stack: usize, frames: &mut Vec<Frame>) -> Stop {
        frames.clear();
        let regs = &sample.regs;
        if regs.abi == abi::NONE || regs.values.is_empty() {
            return Stop::NoUserRegs;
        }
        if sample.stack.is_empty() {
            return Stop::EmptyStack;
        }
        if regs.abi != abi::ABI_64 {
            return Stop::UnsupportedAbi;
        }
        let Some(ip) = regs.get(self.arch.perf_ip()) else { return Stop::NoUserRegs };
        if space.report(process, ip).is_err() {
            return Stop::FirstFrameNotReported;
        }
        if !space.attach() {
            return Stop::NotAttached;
        }
        let mut budget = max_stack.min(MAX_FRAMES);
        if budget == 0 {
            return Stop::MaxStack;
        }
        // The frame being unwound and its caller, in two slots that swap
        // roles at each step (a frame's registers are not copied around).
        // The slots are the unwinder's, kept from sample to sample: the
        // first is set up here, the other is written whole by a step
        // before anything reads it (a step that fails leaves it alone, and
        // its caller is never looked at).
        let Unwinder { arch, rows, slots, layout, log, trails } = self;
        let arch = *arch;
        log.clear();
        // The maps do not change during a sample.
        let stamp = process.stamp();
        // Only an unwind that makes a trail needs its reads noted.
        let noting = trails.start((space.serial(), thread), stamp);
        let mem = Memory::new(sample.stack, regs.get(arch.perf_sp()), sample.little_endian, process, noting.then_some(&*log));
        if layout.mask != regs.mask {
            *layout = InitialLayout::new(arch, regs.mask);
        }
        let first = &mut slots[0];
        first.regs.set_initial_by(layout, regs);
        first.pc = ip;
        first.pc_state = PcState::Set;
        first.initial = true;
        first.signal = false;
        let mut cur = 0;
        let ctx = Ctx { arch, mem: &mem };
        let sp_reg = arch.sp();
        let stop = loop {
            let (a, b) = slots.split_at_mut(1);
            let (state, caller) = if cur == 0 { (&a[0], &mut b[0]) } else { (&b[0], &mut a[0]) };
            let pc = state.pc;
            // The rest of the thread's previous unwind, where it is this
            // one's (see `trail.rs`); else the step is noted for the
            // thread's next sample.
            let at = At::now(frames.len(), budget, space);
            if let Some(stop) = trails.take(state, sp_reg, &mem, log, frames, at) {
                return stop;
            }
            trails.push(state, sp_reg, at, log);
            // Whether the caller was computed (Some) and with success.
            let mut unwound = None;
            let (activation, reported) = if state.initial || state.signal {
                // perf reports the module before asking whether the frame
                // is an activation.
                let _ = space.report(process, pc);
                (true, space.report(process, pc))
            } else if let Some(f) = space.frame(pc, stamp, rows.generation()) {
                // A return frame answered whole: the same reports and the
                // same row as the long way below (see `FrameMemo`).
                trails.read(|| step::reads(arch, rows, f.target));
                let ok = step::step_with(&ctx, rows, f.target, state, caller);
                unwound = Some(ok);
                let activation = ok && caller.pc_state == PcState::Set && caller.signal;
                let reported = if activation { f.at } else { f.below };
                (activation, if reported { Ok(()) } else { Err(()) })
            } else {
                // perf reports the module before asking whether the frame
                // is an activation (which unwinds it).
                let _ = space.report(process, pc);
                let memo_gen = space.memo_generation();
                let (ok, target) = step::unwind(&ctx, space, rows, state, caller);
                trails.read(|| step::reads(arch, rows, target));
                unwound = Some(ok);
                let activation = ok && caller.pc_state == PcState::Set && caller.signal;
                let reported = if activation { space.report(process, pc) } else { space.report_below(process, pc) };
                if !activation {
                    space.remember_frame(pc, memo_gen, target, rows.generation());
                }
                (activation, reported)
            };
            let ip = if activation { pc } else { pc.wrapping_sub(1) };
            if reported.is_err() {
                break Stop::FrameNotReported;
            }
            if ip != 0 {
                frames.push(Frame { ip, pc, activation });
            }
            budget -= 1;
            if budget == 0 {
                break Stop::MaxStack;
            }
            // libdw keeps a caller it computed; a failed attempt is retried
            // (the entry above may have reported the module it lacked).
            let ok = match unwound {
                Some(true) => true,
                _ => {
                    let (ok, target) = step::unwind(&ctx, space, rows, state, caller);
                    trails.read(|| step::reads(arch, rows, target));
                    ok
                }
            };
            match caller.pc_state {
                _ if !ok => break Stop::NoCaller,
                PcState::Set => cur = 1 - cur,
                PcState::Undefined => break Stop::End,
                PcState::Error => break Stop::NoCaller,
            }
        };
        let end = At::now(frames.len(), budget, space);
        trails.finish(stop, frames, end, log);
        stop
    }
}
