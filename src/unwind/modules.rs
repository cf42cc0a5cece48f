//! The modules libdw knows about in one process: perf's `Dwfl`, its
//! `__report_module` (`unwind-libdw.c`), and libdwfl's module list and
//! address lookup (`dwfl_module.c`, `dwfl_report_elf.c`, `segment.c`),
//! reproduced because they decide which module, and so which CFI and
//! bias, an address unwinds with when reported modules overlap.
//!
//! perf 7.2 keeps one `Dwfl` per process (per `struct maps`) across
//! samples and reports a module to it when a frame needs one:
//!
//! ```text
//! __report_module(addr):
//!   map at addr (none: fine, nothing reported: the frame prints [unknown])
//!   base = map start - pgoff           (map start for /tmp/jitted-*)
//!   mod  = dwfl_addrmodule(addr), kept only if it starts at base
//!   none: dwfl_report_elf(short name, <symfs>/<path>, base)
//!         then the same with the DSO's build-id cache file
//!   ok if dwfl_addrmodule(addr) is now that module
//! ```
//!
//! `dwfl_report_elf` turns the base into a range and a bias from the
//! file's program headers ([`Object::module_range`]), then
//! `dwfl_report_module` looks for a module of the same short name and
//! range. A new one goes after the last live module of the list. An
//! existing one is moved there too, but then libdw sees a file descriptor
//! that is not the module's (perf has libdw open the file each time, and
//! libdw keeps the first one open): it marks the module garbage
//! ("overlap") and the report fails. A garbage module is gone for lookups
//! for good (a later report finds it, and fails the same way); it still
//! counts for `dwfl_attach_state`, which takes the architecture from the
//! first module of the list.
//!
//! `dwfl_addrmodule` looks the address up in a table of segments rebuilt
//! from the live modules, in list order, after any change of the list;
//! the segment boundaries themselves are kept from one rebuild to the
//! next. libdw expects modules not to overlap; when they do (rust-lld's
//! layout puts the writable segments' map at a different `start − pgoff`
//! than the text's, so perf reports the same file again at another base)
//! the table's answers are whatever its insertions and binary search
//! make of it, and perf unwinds with that. [`ModuleSpace`] keeps the same
//! table with the same steps.

use std::rc::Rc;

use super::object::Object;
use super::{MapRef, Met, Process};
use crate::fasthash::{FastMap, is_full_for};

/// A module as libdw keeps it.
#[derive(Debug, Clone)]
pub(crate) struct Module {
    /// The DSO's long name (libdw compares the short names).
    name: Rc<[u8]>,
    pub start: u64,
    pub end: u64,
    pub bias: u64,
    pub object: Rc<Object>,
    /// Marked garbage by a failed report ("overlap").
    gc: bool,
}

/// The modules of one process (perf's per-`maps` `Dwfl`). Keep one per
/// address space for as long as perf keeps its `Dwfl`: a forked process
/// starts with a fresh one (perf clones the maps, without the `Dwfl`);
/// perf drops it when a map is removed from the process (not when a new
/// map overlaps an old one), which for user maps never happens while
/// reading a recording.
#[derive(Debug, Default)]
pub struct ModuleSpace {
    /// Which space this is, for the trails of its threads (see
    /// [`ModuleSpace::serial`]; 0: none given yet).
    serial: u64,
    /// Reports that met a map without a file or CFI (each tells the
    /// process, [`Process::met`]): a trail replays no report, so it is
    /// taken only over frames that met nothing.
    mets: u64,
    /// Every module reported, never removed (libdw frees none while perf
    /// reports without `dwfl_report_begin`/`_end`).
    modules: Vec<Module>,
    /// The module list: indices into `modules`, in libdw's list order.
    list: Vec<u32>,
    /// The segment table (`lookup_addr`): boundaries, kept across rebuilds.
    bounds: Vec<u64>,
    /// The module of each segment (`lookup_module`); `None` once the list
    /// changed, until the next lookup rebuilds it.
    owners: Option<Vec<Option<u32>>>,
    /// The segments the last two searches found, `[start, end)`, and
    /// their modules, the latest first: consecutive frames are mostly in
    /// one module, or go back and forth between a program and a library.
    /// Kept only while the table is sorted, where the search finds a
    /// segment for exactly the addresses in it (in an unsorted one, which
    /// segment an address finds depends on the search's path); forgotten
    /// with the table.
    last: [Option<(u64, u64, u32)>; 2],
    /// The boundaries rise strictly (no modules overlap).
    sorted: bool,
    /// `dwfl_attach_state` succeeded once.
    attached: bool,
    /// Changes whenever the module list does (a report that reported).
    version: u64,
    /// Reports answered at the maps' stamp `memo_stamp` and this version
    /// of the modules, by address: the answer, and what the report met.
    /// Slot 0 of an address holds the report at it, slot 1 the report at
    /// the address below (a return address's lookup address: asked for
    /// right after the return address itself, so found in the same
    /// place in memory). The map holds the index of the address's
    /// slots in `remembered`.
    memo: FastMap<u64, u32>,
    remembered: Vec<[Option<Remembered>; 2]>,
    /// The address last looked up in the memo and its slots' index: a
    /// frame asks about its return address twice in a row (the report,
    /// then the report below).
    memo_last: Option<(u64, u32)>,
    memo_stamp: Option<u64>,
    /// Changes whenever the memo is forgotten (0: never in use).
    memo_gen: u32,
    /// Return frames answered whole, from the memo's ([`FrameMemo`]),
    /// once the memo holds [`FRAMES_AFTER`] addresses: a power of two of
    /// slots, about one per address the memo has held, up to
    /// [`MAX_FRAME_SLOTS`].
    frames: Option<Box<[FrameMemo]>>,
    /// Tests: remember no frame, so that every frame takes the long way.
    #[cfg(test)]
    pub(crate) long_way: bool,
}

/// How a step from a frame is taken (`step::target`): with a CFI row's
/// plan (its index in the row cache, and the bias of the module the row
/// came from), or with the architecture's frame-pointer fallback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    Plan { index: u32, bias: u64 },
    FramePointer,
}

/// What the unwinding of a return frame at `pc` asks of a process's
/// modules, answered whole: the report at `pc` and at `pc - 1` (the
/// memo's two slots of `pc`), and how the step to its caller is taken
/// (the module covering `pc - 1` and its row). The report at `pc`, asked
/// before the step, changes nothing here (it is the memo's, and met no
/// map without a file or CFI); the step's target depends on the module
/// list, which the memo's generation follows, and on the row cache's
/// generation.
///
/// Those lookups (two reports, the module, the row) cost a frame about
/// 150 instructions and several places in memory; most frames of a
/// recording are return frames seen before (2.2 of 2.7 million on the
/// dwarf benchmark), and one slot here answers them (the reading thread's
/// instructions −9%). The slot is indexed by a multiply hash of `pc` and
/// holds the full key: frames that share a slot, by chance or crafted,
/// take the lookups above, as every frame did without the slots.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FrameMemo {
    pc: u64,
    pub target: Target,
    memo_gen: u32,
    rows_gen: u32,
    /// The report at `pc` succeeded (what the frame's entry asks when a
    /// signal frame's row makes it an activation).
    pub at: bool,
    /// The report at `pc - 1` succeeded (what a return address's entry
    /// asks).
    pub below: bool,
}

const EMPTY_FRAME: FrameMemo = FrameMemo { pc: 0, target: Target::FramePointer, memo_gen: 0, rows_gen: 0, at: false, below: false };

/// At most 512 slots of 40 bytes for a process (1,024 would answer 2% more
/// of the benchmark's frames for twice the memory).
const MAX_FRAME_SLOTS: usize = 512;

/// A process gets frame slots once its memo holds this many addresses,
/// and as many slots as its memo has held addresses (a power of two): the
/// many processes of a system-wide recording that are sampled a few times
/// cost no slots, and none costs more than its memo does.
const FRAMES_AFTER: usize = 64;

/// The slot of `pc` among `n` (a power of two).
fn frame_slot_of(pc: u64, n: usize) -> usize {
    pc.wrapping_mul(0x9e37_79b9_7f4a_7c15).checked_shr(64 - n.trailing_zeros()).unwrap_or(0) as usize
}

/// A report's answer and the map it met.
#[derive(Debug, Clone)]
struct Remembered {
    answer: Result<(), ()>,
    met: Option<Met>,
}

impl Remembered {
    /// The report again: the process meets what it met (counted in
    /// `mets`), and the answer.
    #[inline]
    fn replay(&self, process: &dyn Process, mets: &mut u64) -> Result<(), ()> {
        if let Some(met) = &self.met {
            process.met(met);
            *mets += 1;
        }
        self.answer
    }
}

/// Remembered reports kept before all are forgotten (a bound for garbage
/// addresses from broken stacks).
const MAX_MEMO: usize = 1 << 16;

/// perf's `dso__short_name` of a long name.
fn short_name(long: &[u8]) -> &[u8] {
    long.rsplit(|&b| b == b'/').next().unwrap_or(long)
}

impl ModuleSpace {
    /// `dwfl_addrmodule`: the module covering `addr`.
    #[inline]
    pub(crate) fn find(&mut self, addr: u64) -> Option<&Module> {
        let i = self.find_index(addr)?;
        Some(&self.modules[i as usize])
    }

    /// `dwfl_attach_state`: needs a module (any, even garbage) to tell the
    /// architecture; once it worked, later samples reuse it.
    pub(crate) fn attach(&mut self) -> bool {
        if !self.attached && !self.modules.is_empty() {
            self.attached = true;
        }
        self.attached
    }

    /// perf's `__report_module` for a frame at `addr`: `Err` where perf
    /// gives up on the frame.
    ///
    /// The answer depends on the maps (the same while the process's stamp
    /// is) and on the module list (the same while no report reports a
    /// module): a report that changed neither is remembered, and the
    /// same address asked again gets the same answer (and the same map
    /// met) without looking anything up — in a recording the same return
    /// addresses come back sample after sample.
    pub(crate) fn report(&mut self, process: &dyn Process, addr: u64) -> Result<(), ()> {
        self.report_memo(process, addr, 0)
    }

    /// [`ModuleSpace::report`] at `pc - 1`, the address a frame whose `pc`
    /// is a return address is printed and looked up at.
    pub(crate) fn report_below(&mut self, process: &dyn Process, pc: u64) -> Result<(), ()> {
        self.report_memo(process, pc, 1)
    }

    /// The report at `key - slot`, remembered in `key`'s slot.
    #[inline]
    fn report_memo(&mut self, process: &dyn Process, key: u64, slot: usize) -> Result<(), ()> {
        let stamp = process.stamp();
        if self.memo_stamp == Some(stamp)
            && let Some((last, index)) = self.memo_last
            && last == key
            && let Some(r) = &self.remembered[index as usize][slot]
        {
            return r.replay(process, &mut self.mets);
        }
        self.report_lookup(process, key, slot, stamp)
    }

    /// [`ModuleSpace::report_memo`] past the last address asked about.
    #[inline(never)]
    fn report_lookup(&mut self, process: &dyn Process, key: u64, slot: usize, stamp: u64) -> Result<(), ()> {
        if self.memo_stamp != Some(stamp) {
            self.forget();
            self.memo_stamp = Some(stamp);
        }
        if let Some(index) = self.memo.get(&key).copied() {
            self.memo_last = Some((key, index));
            if let Some(r) = &self.remembered[index as usize][slot] {
                return r.replay(process, &mut self.mets);
            }
        }
        let addr = key.wrapping_sub(slot as u64);
        let version = self.version;
        let map = process.find_map(addr);
        let met = map.as_ref().and_then(Met::of);
        if let Some(met) = &met {
            process.met(met);
            self.mets += 1;
        }
        let answer = match &map {
            None => Ok(()),
            Some(map) => self.report_map(map, addr),
        };
        if self.version != version {
            self.forget();
        } else {
            if is_full_for(&self.memo, &key, MAX_MEMO) {
                self.forget();
            }
            let remembered = &mut self.remembered;
            let index = *self.memo.entry(key).or_insert_with(|| {
                remembered.push(Default::default());
                (remembered.len() - 1) as u32
            });
            self.remembered[index as usize][slot] = Some(Remembered { answer, met });
            self.memo_last = Some((key, index));
        }
        answer
    }

    /// Forgets every remembered report (and so every frame memo).
    fn forget(&mut self) {
        self.memo.clear();
        self.remembered.clear();
        self.memo_last = None;
        self.memo_gen = self.memo_gen.wrapping_add(1);
        if self.memo_gen == 0 {
            // After 2^32 changes, generations come round again: empty the
            // slots before one is used.
            if let Some(frames) = &mut self.frames {
                frames.fill(EMPTY_FRAME);
            }
            // (and the trails kept under this space's serial.)
            self.serial = 0;
            self.memo_gen = 1;
        }
    }

    /// How many frames the slots hold for the memo as it is.
    #[cfg(test)]
    pub(crate) fn frames_remembered(&self) -> usize {
        self.frames.as_ref().map_or(0, |f| f.iter().filter(|f| f.memo_gen == self.memo_gen).count())
    }

    /// How many frame slots the process has.
    #[cfg(test)]
    pub(crate) fn frame_slots(&self) -> usize {
        self.frames.as_ref().map_or(0, |f| f.len())
    }

    /// This space's serial, unique in the run (given at first use, and
    /// again when the memo's generations come round): a thread's trail
    /// holds only in the space it was made in.
    pub(crate) fn serial(&mut self) -> u64 {
        if self.serial == 0 {
            static SERIALS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
            self.serial = SERIALS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        self.serial
    }

    /// How many reports met a map without a file or CFI so far.
    pub(crate) fn mets(&self) -> u64 {
        self.mets
    }

    /// The memo's generation, for [`ModuleSpace::remember_frame`].
    pub(crate) fn memo_generation(&self) -> u32 {
        self.memo_gen
    }

    /// The return frame at `pc`, answered whole, if a slot holds it under
    /// the maps' `stamp`, this memo and the row cache's generation
    /// `rows_gen`.
    #[inline]
    pub(crate) fn frame(&self, pc: u64, stamp: u64, rows_gen: u32) -> Option<FrameMemo> {
        let frames = self.frames.as_deref()?;
        let f = frames[frame_slot_of(pc, frames.len())];
        (f.pc == pc && f.memo_gen == self.memo_gen && f.rows_gen == rows_gen && self.memo_stamp == Some(stamp)).then_some(f)
    }

    /// After a return frame at `pc` was unwound the long way, from the
    /// memo's generation `memo_gen` on, with `target` found under the row
    /// cache's generation `rows_gen`: keeps it whole if nothing was
    /// forgotten meanwhile and both its reports are remembered without a
    /// map met.
    pub(crate) fn remember_frame(&mut self, pc: u64, memo_gen: u32, target: Target, rows_gen: u32) {
        if memo_gen != self.memo_gen {
            return;
        }
        #[cfg(test)]
        if self.long_way {
            return;
        }
        let Some(&index) = self.memo.get(&pc) else { return };
        let [Some(at), Some(below)] = &self.remembered[index as usize] else { return };
        if at.met.is_some() || below.met.is_some() {
            return;
        }
        let f = FrameMemo { pc, target, memo_gen, rows_gen, at: at.answer.is_ok(), below: below.answer.is_ok() };
        // More slots as the memo grows (what the smaller table held goes:
        // it is found again the long way).
        let want = self.memo.len().next_power_of_two().min(MAX_FRAME_SLOTS);
        let have = self.frames.as_ref().map_or(0, |f| f.len());
        if want > have && self.memo.len() >= FRAMES_AFTER {
            self.frames = Some(vec![EMPTY_FRAME; want].into_boxed_slice());
        }
        if let Some(frames) = &mut self.frames {
            frames[frame_slot_of(pc, frames.len())] = f;
        }
    }

    pub(crate) fn report_map(&mut self, map: &MapRef, addr: u64) -> Result<(), ()> {
        let base = if map.jitted { map.start } else { map.start.wrapping_sub(map.pgoff) };
        let mut reported = self.find_index(addr).filter(|&i| self.modules[i as usize].start == base);
        if reported.is_none() {
            // The symfs file, else the build-id cache's: the caller found
            // the first of them that libdw can report.
            let object = map.object.as_ref().ok_or(())?;
            reported = self.report_elf(&map.name, object, base);
        }
        match reported {
            Some(m) if self.find_index(addr) == Some(m) => Ok(()),
            _ => Err(()),
        }
    }

    /// `dwfl_report_elf`: the module reported, or `None` (no range, or an
    /// existing module of that name and range: "overlap").
    fn report_elf(&mut self, name: &Rc<[u8]>, object: &Rc<Object>, base: u64) -> Option<u32> {
        let (start, end, bias) = object.module_range(base)?;
        // dwfl_report_module: the place after the last live module before
        // a match (or in the whole list), where the module goes.
        let mut tail = 0;
        let mut found = None;
        for (pos, &i) in self.list.iter().enumerate() {
            let m = &self.modules[i as usize];
            if m.start == start && m.end == end && short_name(&m.name) == short_name(name) {
                found = Some((pos, i));
                break;
            }
            if !m.gc {
                tail = pos + 1;
            }
        }
        self.owners = None;
        self.last = [None; 2];
        self.version += 1;
        match found {
            Some((pos, i)) => {
                self.list.remove(pos);
                self.list.insert(tail, i);
                // libdw opened the file again: not the module's descriptor.
                self.modules[i as usize].gc = true;
                None
            }
            None => {
                let i = self.modules.len() as u32;
                self.modules.push(Module { name: name.clone(), start, end, bias, object: object.clone(), gc: false });
                self.list.insert(tail, i);
                Some(i)
            }
        }
    }

    /// `dwfl_addrsegment`'s module for `addr`.
    #[inline]
    fn find_index(&mut self, addr: u64) -> Option<u32> {
        let holds = |l: Option<(u64, u64, u32)>| l.filter(|&(start, end, _)| start <= addr && addr < end).map(|l| l.2);
        if let Some(m) = holds(self.last[0]).or_else(|| holds(self.last[1])) {
            return Some(m);
        }
        self.find_index_search(addr)
    }

    /// [`ModuleSpace::find_index`] by the segment table.
    #[inline(never)]
    fn find_index_search(&mut self, addr: u64) -> Option<u32> {
        if self.owners.is_none() {
            self.rebuild();
        }
        let owners = self.owners.as_ref()?;
        let idx = lookup(&self.bounds, addr, None)?;
        match owners[idx] {
            Some(m) => {
                if self.sorted {
                    self.last = [Some((self.bounds[idx], self.bounds.get(idx + 1).copied().unwrap_or(u64::MAX), m)), self.last[0]];
                }
                Some(m)
            }
            // The upper end of the segment before's module.
            None if idx > 0 && self.bounds[idx] == addr => {
                owners[idx - 1].filter(|&m| self.modules[m as usize].end == addr)
            }
            None => None,
        }
    }

    /// `reify_segments`: the segment table for the live modules, in list
    /// order, each owning the segments from its start up to its end.
    fn rebuild(&mut self) {
        let mut owners = vec![None; self.bounds.len()];
        let mut hint = None;
        for &i in &self.list {
            let m = &self.modules[i as usize];
            if m.gc {
                continue;
            }
            let (start, end) = (m.start, m.end);
            let mut idx = match lookup(&self.bounds, start, hint) {
                None => {
                    insert(&mut self.bounds, &mut owners, 0, start, end);
                    0
                }
                // Past the start of the segment it falls in: a new one.
                // (lookup never answers a segment starting above `start`.)
                Some(idx) if self.bounds[idx] < start => {
                    insert(&mut self.bounds, &mut owners, idx + 1, start, end);
                    idx + 1
                }
                Some(idx) => idx,
            };
            if idx + 1 < self.bounds.len() && end < self.bounds[idx + 1] {
                // Ends inside the next segment: split it.
                let next = self.bounds[idx + 1];
                insert(&mut self.bounds, &mut owners, idx + 1, end, next);
            }
            loop {
                owners[idx] = Some(i);
                idx += 1;
                if idx >= self.bounds.len() || self.bounds[idx] >= end {
                    break;
                }
            }
            hint = (idx < self.bounds.len()).then_some(idx);
        }
        self.owners = Some(owners);
        self.sorted = self.bounds.is_sorted_by(|a, b| a < b);
        self.last = [None; 2];
    }
}

/// libdwfl's segment `lookup`: the index whose segment holds `addr`, by
/// the hint if it holds it, else by binary search (over a table that
/// overlapping modules may have left unsorted: the search then answers
/// what libdw's answers).
fn lookup(bounds: &[u64], addr: u64, hint: Option<usize>) -> Option<usize> {
    if let Some(h) = hint
        && addr >= bounds[h]
        && (h + 1 == bounds.len() || addr < bounds[h + 1])
    {
        return Some(h);
    }
    let (mut l, mut u) = (0, bounds.len());
    while l < u {
        let idx = (l + u) / 2;
        if addr < bounds[idx] {
            u = idx;
        } else {
            l = idx + 1;
            if l == bounds.len() || addr < bounds[l] {
                return Some(idx);
            }
        }
    }
    None
}

/// libdwfl's segment `insert` at `i` of `[start, end)`: the boundaries
/// not already there, with no module.
fn insert(bounds: &mut Vec<u64>, owners: &mut Vec<Option<u32>>, mut i: usize, start: u64, end: u64) {
    let need_start = i == 0 || bounds[i - 1] != start;
    let need_end = i + 1 >= bounds.len() || bounds[i + 1] != end;
    if need_start {
        bounds.insert(i, start);
        owners.insert(i, None);
        i += 1;
    }
    if need_end {
        bounds.insert(i, end);
        owners.insert(i, None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbols::elf::Phdr;
    use std::cell::{Cell, RefCell};

    /// An ET_DYN object loaded over [0, 0x8000).
    fn object() -> Rc<Object> {
        let load = Phdr { p_type: 1, p_offset: 0, p_vaddr: 0, p_filesz: 0x8000, p_memsz: 0x8000, p_align: 0x1000 };
        let parts = super::super::object::ObjectParts {
            e_type: 3,
            elf64: true,
            little_endian: true,
            segments: vec![load],
            eh_frame: None,
            eh_frame_hdr: None,
            debug_frame: None,
        };
        Rc::new(Object::from_parts(1, parts).expect("object"))
    }

    fn map(start: u64, pgoff: u64, object: &Rc<Object>) -> MapRef {
        MapRef { start, pgoff, name: "/bin/prog".as_bytes().into(), object: Some(object.clone()), jitted: false }
    }

    fn at(space: &mut ModuleSpace, addr: u64) -> Option<u64> {
        space.find(addr).map(|m| m.start)
    }

    /// The same file reported at two bases (maps of one file whose
    /// `start - pgoff` differ, as rust-lld's layout makes them): libdw's
    /// segment table, worked out by hand from `reify_segments`, answers
    /// the later module in its first segment, nothing past it; and a
    /// report of the first module again kills it.
    #[test]
    fn overlapping_modules_answer_as_libdws_segment_table() {
        let obj = object();
        let mut space = ModuleSpace::default();
        // The text map: module T = [0x1000, 0x9000).
        assert_eq!(space.report_map(&map(0x2000, 0x1000, &obj), 0x2800), Ok(()));
        assert_eq!(at(&mut space, 0x8800), Some(0x1000));
        // A map of the same file based at 0x2000: R = [0x2000, 0xa000),
        // reported (T starts elsewhere). Segments [0x1000 T, 0x2000 R,
        // 0xa000 -, 0x9000 -]: the table is no longer sorted.
        assert_eq!(space.report_map(&map(0x8000, 0x6000, &obj), 0x8800), Ok(()));
        assert_eq!(space.bounds, [0x1000, 0x2000, 0xa000, 0x9000]);
        assert_eq!(at(&mut space, 0x1800), Some(0x1000));
        assert_eq!(at(&mut space, 0x8800), Some(0x2000));
        assert_eq!(at(&mut space, 0x9800), Some(0x2000));
        assert_eq!(at(&mut space, 0xa800), None);
        // A text address now finds R, which does not start at the text
        // map's base: perf reports T's file again, libdw finds T and
        // marks it garbage ("overlap"): the frame fails, and T is gone.
        assert_eq!(space.report_map(&map(0x2000, 0x1000, &obj), 0x3000), Err(()));
        assert_eq!(at(&mut space, 0x1800), None);
        assert_eq!(at(&mut space, 0x3000), Some(0x2000));
        assert_eq!(space.report_map(&map(0x2000, 0x1000, &obj), 0x1800), Err(()));
        // Garbage modules still let libdw attach.
        assert!(space.attach());
    }

    /// A process whose maps change when the test says so (a new stamp).
    struct Changing {
        map: RefCell<Option<MapRef>>,
        stamp: Cell<u64>,
        met: RefCell<Vec<Met>>,
    }

    impl Process for Changing {
        fn find_map(&self, addr: u64) -> Option<MapRef> {
            self.map.borrow().clone().filter(|m| m.start <= addr && addr < m.start + 0x8000)
        }
        fn stamp(&self) -> u64 {
            self.stamp.get()
        }
        fn met(&self, met: &Met) {
            self.met.borrow_mut().push(met.clone());
        }
    }

    #[test]
    fn reports_are_remembered_until_the_maps_or_modules_change() {
        let obj = object();
        let p = Changing { map: RefCell::new(None), stamp: Cell::new(1), met: RefCell::new(Vec::new()) };
        let mut space = ModuleSpace::default();
        // No map: fine, nothing reported.
        assert_eq!(space.report(&p, 0x2800), Ok(()));
        // A new stamp with a map without a file: the frame fails, and the
        // map met is told again when the answer is remembered.
        let anon = MapRef { start: 0x2000, pgoff: 0, name: "//anon".as_bytes().into(), object: None, jitted: false };
        *p.map.borrow_mut() = Some(anon.clone());
        p.stamp.set(2);
        assert_eq!(space.report(&p, 0x2800), Err(()));
        assert_eq!(space.memo.len(), 1);
        assert_eq!(space.report(&p, 0x2800), Err(()));
        assert_eq!(*p.met.borrow(), [Met::NoObject("//anon".as_bytes().into()), Met::NoObject("//anon".as_bytes().into())]);
        // The file's map: reported (the module list changed, so nothing is
        // remembered from that report), then remembered.
        *p.map.borrow_mut() = Some(map(0x2000, 0x1000, &obj));
        p.stamp.set(3);
        assert_eq!(space.report(&p, 0x2800), Ok(()));
        assert!(space.memo.is_empty());
        assert_eq!(space.report(&p, 0x2800), Ok(()));
        assert_eq!(space.memo.len(), 1);
        // Under one stamp the maps are taken to be the same: the answer is
        // the remembered one; under the next they are looked at again.
        *p.map.borrow_mut() = Some(anon);
        assert_eq!(space.report(&p, 0x2800), Ok(()));
        p.stamp.set(4);
        assert_eq!(space.report(&p, 0x2800), Err(()));
        // (The test object has no CFI: each report of its map met that.)
        let (anon, no_cfi) = (Met::NoObject("//anon".as_bytes().into()), Met::NoCfi("/bin/prog".as_bytes().into()));
        assert_eq!(*p.met.borrow(), [anon.clone(), anon.clone(), no_cfi.clone(), no_cfi.clone(), no_cfi, anon.clone()]);
        // The report below an address is the report at the address below,
        // remembered beside the address itself: an anonymous map's first
        // byte reports in it, the byte below (no map) reports fine.
        p.met.borrow_mut().clear();
        assert_eq!(space.report(&p, 0x2000), Err(()));
        assert_eq!(space.report_below(&p, 0x2000), Ok(()));
        assert_eq!(space.report_below(&p, 0x2801), Err(()));
        assert_eq!(space.report_below(&p, 0x2801), Err(()));
        assert!(space.memo.contains_key(&0x2801) && !space.memo.contains_key(&0x1fff));
        assert_eq!(space.remembered[space.memo[&0x2000] as usize].iter().filter(|s| s.is_some()).count(), 2);
        assert_eq!(*p.met.borrow(), [anon.clone(), anon.clone(), anon]);
    }

    /// The last segment found answers only while the table it came from
    /// stands and is sorted: a module reported over it is found at once,
    /// and overlapping modules are looked up by the search each time.
    #[test]
    fn the_last_segment_found_is_forgotten_when_the_modules_change() {
        let obj = object();
        let mut space = ModuleSpace::default();
        assert_eq!(space.report_map(&map(0x2000, 0x1000, &obj), 0x2800), Ok(()));
        assert_eq!(at(&mut space, 0x8800), Some(0x1000));
        assert_eq!(space.last[0].map(|(start, end, _)| (start, end)), Some((0x1000, 0x9000)));
        // A module of its own further up: the table stays sorted.
        let other = MapRef { start: 0x20000, pgoff: 0, name: "/lib/other".as_bytes().into(), object: Some(obj.clone()), jitted: false };
        assert_eq!(space.report_map(&other, 0x20800), Ok(()));
        assert!(space.sorted);
        assert_eq!(at(&mut space, 0x27000), Some(0x20000));
        // A module's end finds it too (libdw's segment lookup), though
        // it is past the segment found last.
        assert_eq!(at(&mut space, 0x28000), Some(0x20000));
        assert_eq!(at(&mut space, 0x28001), None);
        assert_eq!(at(&mut space, 0x1800), Some(0x1000));
        assert_eq!(at(&mut space, 0x27000), Some(0x20000));
        // Both modules' segments are kept: going back and forth between
        // them searches nothing.
        let kept = |space: &ModuleSpace| space.last.map(|l| l.map(|(start, _, _)| start));
        assert_eq!(kept(&space), [Some(0x1000), Some(0x20000)]);
        assert_eq!((at(&mut space, 0x1800), at(&mut space, 0x27800)), (Some(0x1000), Some(0x20000)));
        assert_eq!(kept(&space), [Some(0x1000), Some(0x20000)]);
        // The text's file again at another base, over the segment found
        // last: the new module answers, and the unsorted table is searched.
        assert_eq!(at(&mut space, 0x8800), Some(0x1000));
        assert_eq!(space.report_map(&map(0x8000, 0x6000, &obj), 0x8800), Ok(()));
        assert_eq!(at(&mut space, 0x8800), Some(0x2000));
        assert!(!space.sorted && space.last == [None; 2]);
        assert_eq!(at(&mut space, 0x1800), Some(0x1000));
        assert_eq!(at(&mut space, 0xa800), None);
        assert_eq!(space.last, [None; 2]);
    }

    /// A report asked again for the last address is answered from its
    /// slots only under the same maps and modules.
    #[test]
    fn the_last_report_is_asked_again_after_a_change() {
        let obj = object();
        let anon = MapRef { start: 0x2000, pgoff: 0, name: "//anon".as_bytes().into(), object: None, jitted: false };
        let p = Changing { map: RefCell::new(Some(anon)), stamp: Cell::new(1), met: RefCell::new(Vec::new()) };
        let mut space = ModuleSpace::default();
        assert_eq!(space.report(&p, 0x2800), Err(()));
        assert_eq!(space.memo_last, Some((0x2800, 0)));
        assert_eq!(space.report(&p, 0x2800), Err(()));
        // The report below is not the report at: asked of the maps.
        assert_eq!(space.report_below(&p, 0x2000), Ok(()));
        assert_eq!(space.report(&p, 0x2000), Err(()));
        assert_eq!(space.report_below(&p, 0x2000), Ok(()));
        assert_eq!((space.memo.len(), space.remembered.len()), (2, 2));
        // The file's map under a new stamp: reported, the module list
        // changed, and nothing of before is remembered.
        *p.map.borrow_mut() = Some(map(0x2000, 0x1000, &obj));
        p.stamp.set(2);
        assert_eq!(space.report(&p, 0x2800), Ok(()));
        assert!(space.memo_last.is_none() && space.memo.is_empty() && space.remembered.is_empty());
        assert_eq!(space.report(&p, 0x2800), Ok(()));
        assert_eq!(space.memo_last, Some((0x2800, 0)));
        // The maps change back: under the next stamp the last address is
        // asked of the maps again.
        *p.map.borrow_mut() = None;
        p.stamp.set(3);
        p.met.borrow_mut().clear();
        assert_eq!(space.report(&p, 0x2800), Ok(()));
        assert!(p.met.borrow().is_empty());
        assert_eq!(space.report(&p, 0x2000), Ok(()));
    }

    #[test]
    fn lookup_finds_the_segment() {
        let b = [0x1000, 0x2000, 0x3000];
        assert_eq!(lookup(&b, 0xfff, None), None);
        assert_eq!(lookup(&b, 0x1000, None), Some(0));
        assert_eq!(lookup(&b, 0x2fff, None), Some(1));
        assert_eq!(lookup(&b, u64::MAX, None), Some(2));
        assert_eq!(lookup(&b, 0x2500, Some(1)), Some(1));
        assert_eq!(lookup(&b, 0x1500, Some(1)), Some(0));
    }
}
