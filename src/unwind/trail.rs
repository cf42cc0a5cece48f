//! A thread's last unwind, kept so that the thread's next sample can take
//! its outer frames from it instead of unwinding them again.
//!
//! Samples of a thread taken a moment apart mostly share their outer
//! frames: the same functions, called from the same places, their frames
//! at the same addresses. When a sample's unwind comes to a frame with the
//! pc and stack pointer of a frame `j` of the thread's previous unwind, the
//! rest of that unwind (from `j` on, its *tail*) is the rest of this one
//! under these conditions, all checked:
//!
//! ```text
//!  previous unwind:  f0 ── f1 ── f2 ── f3 ── f4 ── f5   stop
//!                                 │ tail from j = 2 ────────────┐
//!  this sample:      g0 ── g1 ── g2 ?                           │
//!                                 └─ the same pc and stack pointer, and
//!   - the registers the tail's steps read (`step::reads`: the CFA's, a
//!     register rule's source, an expression's: any) are the same in g2
//!     as in f2 (set with the same value, or unset in both);
//!   - every word that matters which the tail read from the previous
//!     stack copy is the same word at the same address of this copy, and
//!     every such address it read outside the copy (from the files, or a
//!     read that failed) is outside this copy too; a word matters if it
//!     went to the caller's return address or to a register a later step
//!     reads, or could have gone anywhere (an expression's, the
//!     frame-pointer fallback's);
//!   - the module space is the one the previous unwind ended in, at the
//!     same maps (stamp) and memo generation: no module was reported and
//!     nothing forgotten since, so every report the tail made answers the
//!     same and changes nothing;
//!   - the tail's reports met no map without a file or CFI (those tell
//!     the caller, who counts them);
//!   - the frame budget ends the tail as it did (see `Trail::takes`).
//! ```
//!
//! A step computes the caller's registers from the registers it reads
//! (values the tail computed itself, or values kept by same-value rules
//! from `j`, which are compared), from the words it reads and from the
//! module space's answers; the caller's pc is one of those registers. So
//! under those conditions the tail's steps, frames and stop are this
//! sample's. Registers a tail carries along without reading them
//! (callee-saved registers holding the program's values), and the words
//! restored into them, may differ: comparing whole register files, a
//! sample took a tail a tenth as often, and checking every word read cost
//! five times as much.
//!
//! A thread's trail is made by an unwind that took nothing from the one
//! before (or had none); an unwind that takes a tail leaves the trail as
//! it is, which holds as long as the module space does.
//!
//! A trail is kept outermost step first, so that a tail is a prefix of it:
//! taking one costs the new sample's inner steps, not the tail's length.
//!
//! Memory: [`TRAIL_SLOTS`] trails of at most [`MAX_STEPS`] steps; an
//! unwind longer than that, or that read more than its log holds, keeps
//! no trail.

use super::memory::{ANY, Memory, ReadLog};
use super::step::{FrameState, PcState, Reads};
use super::{Frame, ModuleSpace, Stop};

/// Trails kept, direct-mapped by thread.
const TRAIL_SLOTS: usize = 64;

/// The most steps a trail keeps.
const MAX_STEPS: usize = 512;

/// One step of an unwind, in a trail: the frame it started from, and
/// what the steps from it to the outermost one did.
#[derive(Clone, Copy)]
struct Step {
    pc: u64,
    /// The frame's stack pointer, if set.
    sp: Option<u64>,
    pc_state: PcState,
    initial: bool,
    signal: bool,
    /// The registers of the frame that this step and the outer ones read
    /// (a register an outer step reads reaches it unchanged, or was
    /// computed by a step from what it read).
    deps: u128,
    /// The frame's registers: `nregs` values from `regs_at` in
    /// [`Trail::regs`], and the set flags.
    regs_at: u32,
    nregs: u32,
    set: [u64; 2],
    /// The trail's frames, words and outside reads up to this step's,
    /// included (prefix lengths).
    frames_end: u32,
    words_end: u32,
    outside_end: u32,
    /// No report of this step or an outer one met a map without a file or
    /// CFI.
    clean: bool,
}

impl Step {
    /// The frame's register `r`, as `RegFile::get` answers it.
    fn reg(&self, regs: &[u64], r: usize) -> Option<u64> {
        (r < self.nregs as usize && self.set[r / 64] >> (r % 64) & 1 != 0).then(|| regs[self.regs_at as usize + r])
    }
}

/// A thread's unwind, outermost step first.
#[derive(Default)]
struct Trail {
    /// The module space's serial and the thread.
    key: (u64, u64),
    /// Complete: every step, word and frame is here.
    valid: bool,
    stamp: u64,
    /// The space's memo generation when the unwind ended.
    memo_gen: u32,
    stop: Option<Stop>,
    /// The budget at the innermost step, and whether the last step used
    /// one (all do but one that stopped at a frame not reported).
    budget0: usize,
    last_used: bool,
    /// The steps' stack pointers fall from the first step to the last
    /// (the match looks for a frame with a cursor then).
    falling: bool,
    /// The thread's last unwind found no tail here: the next one makes
    /// its own trail.
    missed: bool,
    steps: Vec<Step>,
    /// Each step's stack pointer (0 where unset) and pc, for the match.
    marks: Vec<(u64, u64)>,
    regs: Vec<u64>,
    /// The words read from the copy, and where.
    addrs: Vec<u64>,
    words: Vec<u64>,
    /// The addresses read outside the copy.
    outside: Vec<u64>,
    frames: Vec<Frame>,
}

impl Trail {
    /// The step `j` from the innermost one.
    fn step(&self, j: usize) -> &Step {
        &self.steps[self.steps.len() - 1 - j]
    }

    /// The step from the innermost one whose frame has stack pointer `sp`
    /// and `pc`, from `cursor` on (moved past steps below the stack
    /// pointer when the stack pointers rise from the innermost step).
    #[inline]
    fn find(&self, pc: u64, sp: u64, cursor: &mut usize) -> Option<usize> {
        let marks = &self.marks;
        let n = marks.len();
        if self.falling {
            while *cursor < n && marks[n - 1 - *cursor].0 < sp {
                *cursor += 1;
            }
            let &(s, p) = marks.get(n.checked_sub(*cursor + 1)?)?;
            (s == sp && p == pc).then_some(*cursor)
        } else {
            (0..n).find(|&j| marks[n - 1 - j] == (sp, pc))
        }
    }

    /// Whether the tail from step `j` is the rest of an unwind at `state`
    /// (see the module doc), where the unwind is at `at` with `mem`.
    fn takes(&self, j: usize, state: &FrameState, sp_reg: u64, mem: &Memory<'_>, at: At) -> bool {
        let s = self.step(j);
        if s.pc != state.pc || s.sp != state.regs.get(sp_reg) || s.pc_state != state.pc_state || s.initial != state.initial || s.signal != state.signal {
            return false;
        }
        if at.memo_gen != self.memo_gen || !s.clean {
            return false;
        }
        // The budget: a tail that used it up needs as much; one that
        // stopped otherwise, more than it used.
        let budget_j = self.budget0 - j;
        let used = (self.steps.len() - 1 - j) + usize::from(self.last_used);
        let budget_ok = if self.stop == Some(Stop::MaxStack) { at.budget == budget_j } else { at.budget > used };
        if !budget_ok {
            return false;
        }
        let mut deps = s.deps;
        while deps != 0 {
            let r = deps.trailing_zeros() as usize;
            if s.reg(&self.regs, r) != state.regs.get(r as u64) {
                return false;
            }
            deps &= deps - 1;
        }
        let (w, o) = (s.words_end as usize, s.outside_end as usize);
        mem.holds(&self.addrs[..w], &self.words[..w]) && mem.holds_none(&self.outside[..o])
    }

    /// Drops every step (the vectors keep their room).
    fn clear(&mut self) {
        self.steps.clear();
        self.marks.clear();
        self.regs.clear();
        self.addrs.clear();
        self.words.clear();
        self.outside.clear();
        self.frames.clear();
    }

    /// Drops the steps inside step `j` (from the innermost one): the tail.
    fn truncate_to(&mut self, j: usize) {
        let r = self.steps.len() - 1 - j;
        let s = self.steps[r];
        self.steps.truncate(r + 1);
        self.marks.truncate(r + 1);
        self.regs.truncate(s.regs_at as usize + s.nregs as usize);
        self.frames.truncate(s.frames_end as usize);
        self.addrs.truncate(s.words_end as usize);
        self.words.truncate(s.words_end as usize);
        self.outside.truncate(s.outside_end as usize);
    }

    /// Adds the steps of `head` inside the steps kept, innermost last
    /// (their frames from `frames`, their reads from `log`); false if
    /// that makes too many.
    fn add_head(&mut self, head: &Head, frames: &[Frame], log: &ReadLog, end_mets: u64) -> bool {
        if self.steps.len() + head.steps.len() > MAX_STEPS || !log.complete() {
            return false;
        }
        let (mut deps, mut clean, mut sp) = self.steps.last().map_or((0, true, None), |s| (s.deps, s.clean, s.sp));
        for (i, h) in head.steps.iter().enumerate().rev() {
            let next = head.steps.get(i + 1);
            // The words that matter: those that went to the caller's
            // return address or to a register the outer steps read, and
            // those that may have gone anywhere; a word in a register no
            // later step reads changes nothing.
            let matter = deps | h.reads.caller;
            deps |= h.reads.frame;
            clean &= h.mets == end_mets;
            if h.sp.is_none() || (sp.is_some() && h.sp > sp) {
                self.falling = false;
            }
            sp = h.sp;
            let frames_to = next.map_or(frames.len(), |n| n.frames as usize);
            self.frames.extend(frames[h.frames as usize..frames_to].iter().rev());
            let log_to = next.map_or(log.len(), |n| n.log as usize);
            for r in log.reads(h.log as usize..log_to) {
                if r.reg != ANY && matter >> r.reg & 1 == 0 {
                    continue;
                }
                if r.in_copy {
                    self.addrs.push(r.addr);
                    self.words.push(r.word);
                } else {
                    self.outside.push(r.addr);
                }
            }
            let regs_at = self.regs.len() as u32;
            self.regs.extend_from_slice(&head.regs[h.regs_at as usize..][..h.nregs as usize]);
            self.marks.push((h.sp.unwrap_or(0), h.pc));
            self.steps.push(Step {
                pc: h.pc,
                sp: h.sp,
                pc_state: h.pc_state,
                initial: h.initial,
                signal: h.signal,
                deps,
                regs_at,
                nregs: h.nregs,
                set: h.set,
                frames_end: self.frames.len() as u32,
                words_end: self.words.len() as u32,
                outside_end: self.outside.len() as u32,
                clean,
            });
        }
        true
    }
}

/// A step of the unwind being made, innermost first: where the unwind
/// was before it.
#[derive(Clone, Copy)]
struct HeadStep {
    pc: u64,
    sp: Option<u64>,
    pc_state: PcState,
    initial: bool,
    signal: bool,
    /// What the step read (all of its attempts).
    reads: Reads,
    regs_at: u32,
    nregs: u32,
    set: [u64; 2],
    /// Frames produced, reads noted and maps met before the step.
    frames: u32,
    log: u32,
    mets: u64,
}

/// The steps of the unwind being made.
#[derive(Default)]
struct Head {
    steps: Vec<HeadStep>,
    regs: Vec<u64>,
}

/// Where an unwind is when a step starts.
#[derive(Clone, Copy)]
pub(crate) struct At {
    pub frames: usize,
    pub budget: usize,
    /// The space's count of maps met, and its memo generation.
    pub mets: u64,
    pub memo_gen: u32,
}

impl At {
    /// An unwind with `frames` produced and `budget` left, in `space`.
    pub(crate) fn now(frames: usize, budget: usize, space: &ModuleSpace) -> At {
        At { frames, budget, mets: space.mets(), memo_gen: space.memo_generation() }
    }
}

/// The trails of the threads last unwound, and the steps of the unwind
/// being made.
pub(crate) struct Trails {
    slots: Box<[Trail]>,
    head: Head,
    /// The unwind's key and maps.
    key: (u64, u64),
    stamp: u64,
    /// The slot of the previous unwind of the thread, if it holds one
    /// under the same maps, and the match's cursor in it.
    previous: Option<usize>,
    cursor: usize,
    /// The unwind notes its steps, to make its own trail: the thread has
    /// none, or its last unwind took no tail from it (an unwind that
    /// takes a tail leaves the trail as it is, which holds as long as
    /// the module space does).
    noting: bool,
    /// The unwind has more steps than a trail keeps.
    long: bool,
    /// Tails taken (for the tests).
    #[cfg(test)]
    pub(crate) taken: usize,
}

impl Default for Trails {
    fn default() -> Trails {
        Trails {
            slots: (0..TRAIL_SLOTS).map(|_| Trail::default()).collect(),
            head: Head::default(),
            key: (0, 0),
            stamp: 0,
            previous: None,
            cursor: 0,
            noting: false,
            long: false,
            #[cfg(test)]
            taken: 0,
        }
    }
}

impl Trails {
    fn slot_of(key: (u64, u64)) -> usize {
        ((key.0.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ key.1.wrapping_mul(0xc2b2_ae3d_27d4_eb4f)) >> 40) as usize & (TRAIL_SLOTS - 1)
    }

    /// Starts an unwind of thread `key.1` in the space of serial `key.0`,
    /// under the maps' `stamp`; true if it notes its steps (and needs
    /// the log of its reads for that).
    pub(crate) fn start(&mut self, key: (u64, u64), stamp: u64) -> bool {
        let slot = Trails::slot_of(key);
        let t = &self.slots[slot];
        self.previous = (t.valid && t.key == key && t.stamp == stamp).then_some(slot);
        self.noting = self.previous.is_none() || t.missed;
        self.key = key;
        self.stamp = stamp;
        self.cursor = 0;
        self.long = false;
        self.head.steps.clear();
        self.head.regs.clear();
        self.noting
    }

    /// Notes the step from `state` about to be taken.
    #[inline]
    pub(crate) fn push(&mut self, state: &FrameState, sp_reg: u64, at: At, log: &ReadLog) {
        if self.noting {
            self.note(state, sp_reg, at, log);
        }
    }

    fn note(&mut self, state: &FrameState, sp_reg: u64, at: At, log: &ReadLog) {
        let sp = state.regs.get(sp_reg);
        if self.head.steps.len() >= MAX_STEPS {
            self.long = true;
            return;
        }
        let (vals, set, nregs) = state.regs.kept();
        let h = &mut self.head;
        h.steps.push(HeadStep {
            pc: state.pc,
            sp,
            pc_state: state.pc_state,
            initial: state.initial,
            signal: state.signal,
            reads: Reads::default(),
            regs_at: h.regs.len() as u32,
            nregs: nregs as u32,
            set,
            frames: at.frames as u32,
            log: log.len() as u32,
            mets: at.mets,
        });
        h.regs.extend_from_slice(vals);
    }

    /// What the current step read (asked only while noting).
    #[inline]
    pub(crate) fn read(&mut self, reads: impl FnOnce() -> Reads) {
        if self.noting
            && let Some(s) = self.head.steps.last_mut()
        {
            s.reads |= reads();
        }
    }

    /// If the thread's previous unwind has a tail that is the rest of
    /// this one at `state` (whose step is not noted yet; `sp_reg` its
    /// stack pointer's number): its frames added to `frames`, the trail
    /// made this unwind's if it notes its steps, and its stop. `at`: where
    /// the unwind is.
    #[inline]
    pub(crate) fn take(&mut self, state: &FrameState, sp_reg: u64, mem: &Memory<'_>, log: &ReadLog, frames: &mut Vec<Frame>, at: At) -> Option<Stop> {
        let slot = self.previous?;
        let sp = state.regs.get(sp_reg)?;
        let j = self.slots[slot].find(state.pc, sp, &mut self.cursor)?;
        self.take_at(slot, j, state, sp_reg, mem, log, frames, at)
    }

    #[allow(clippy::too_many_arguments)]
    fn take_at(&mut self, slot: usize, j: usize, state: &FrameState, sp_reg: u64, mem: &Memory<'_>, log: &ReadLog, frames: &mut Vec<Frame>, at: At) -> Option<Stop> {
        let old = &mut self.slots[slot];
        if self.long || !old.takes(j, state, sp_reg, mem, at) {
            return None;
        }
        #[cfg(test)]
        {
            self.taken += 1;
        }
        let stop = old.stop;
        let fe = old.step(j).frames_end as usize;
        frames.extend(old.frames[..fe].iter().rev());
        old.missed = false;
        if self.noting {
            // The trail becomes this unwind's: its steps, then the tail.
            old.truncate_to(j);
            old.valid = old.add_head(&self.head, &frames[..at.frames], log, at.mets);
            old.budget0 = at.budget + self.head.steps.len();
        }
        stop
    }

    /// Ends the unwind, which stopped with `stop` after producing
    /// `frames`, and keeps its trail as the thread's.
    pub(crate) fn finish(&mut self, stop: Stop, frames: &[Frame], at: At, log: &ReadLog) {
        if !self.noting {
            if let Some(slot) = self.previous {
                self.slots[slot].missed = true;
            }
            return;
        }
        let n = self.head.steps.len();
        let t = &mut self.slots[Trails::slot_of(self.key)];
        t.key = self.key;
        t.stamp = self.stamp;
        t.memo_gen = at.memo_gen;
        t.stop = Some(stop);
        t.falling = true;
        t.missed = false;
        t.clear();
        t.valid = n > 0 && !self.long && t.add_head(&self.head, frames, log, at.mets);
        // Every step but the last used one of the budget; the last, unless
        // it stopped before (at a frame not reported).
        t.budget0 = at.budget + n - 1 + usize::from(stop != Stop::FrameNotReported);
        t.last_used = stop != Stop::FrameNotReported;
    }
}
