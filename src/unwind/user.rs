//! The user part of a `--call-graph dwarf` sample's callchain, unwound
//! against the machine: perf's `thread__resolve_callchain_unwind`.
//!
//! perf unwinds a sample when it resolves its callchain, if the event
//! samples both `REGS_USER` and `STACK_USER` and the sample has user
//! registers and a non-empty stack copy. The process it unwinds in is the
//! sample's thread's address space at that moment (the machine's maps),
//! each map's object file found as perf finds it:
//!
//! ```text
//! map at an address  ──> its DSO ──> the file libdw is given:
//!                                      <symfs>/<recorded path>, else the
//!                                      DSO's build-id cache entry
//!                                  └─> .debug_frame from the file the
//!                                      symbols come from (debuglink,
//!                                      build-id, ...) if the file has no
//!                                      DWARF of its own
//! read outside the stack copy ──> the DSO's data file (build-id cache
//!                                 entry, else <symfs>/<path>) at
//!                                 addr - start + pgoff
//! ```
//!
//! Kept across samples: one [`Object`] per DSO (its CFI, parsed once),
//! one [`ModuleSpace`] per address space (perf's per-`maps` `Dwfl`, which
//! lives as long as the maps do: perf drops it only when a map is removed,
//! which the machine never does for user maps), and the unwinder's CFI
//! rows. What could not be unwound is counted ([`UnwindStats`]) so that
//! the caller can say so: perf prints such samples without user frames,
//! silently.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::rc::Rc;

use super::{Arch, Frame, MapRef, Met, ModuleSpace, Object, Process, Sample, Stop, Unwinder};
use crate::fasthash::{FastMap, make_room};
use crate::machine::{DsoId, DsoKind, Dsos, Machine, Maps};
use crate::symbols::SymbolConfig;
use crate::symbols::elf::{self, Elf, SectionBytes};
use crate::symbols::load::{self, Search};
use perf_data::bytes::Endian;
use perf_data::sample::Sample as PerfSample;

/// What unwinding needs to know besides the recording.
#[derive(Debug, Clone)]
pub struct UnwindOptions {
    /// perf's `--max-stack` for the user part (the kernel part is cut
    /// separately, by whoever prints it).
    pub max_stack: usize,
    /// Where the object files are: the symfs and the build-id cache, as
    /// the symbolizer looks for them.
    pub files: SymbolConfig,
    /// `--unwind-style`: the unwinders asked for.
    pub styles: UnwindStyles,
}

/// perf's `--unwind-style` list (the last one given): perf 7.2 (Debian's
/// build) has libdw only; asking for libunwind gets an error when the first
/// sample is unwound, and a list without libdw unwinds nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnwindStyles {
    pub libdw: bool,
    pub libunwind: bool,
}

impl Default for UnwindStyles {
    fn default() -> Self {
        UnwindStyles { libdw: true, libunwind: false }
    }
}

/// What perf 7.2 says when libunwind is asked for.
const NO_LIBUNWIND: &str = "Error: libunwind dwarf unwinding not built into perf";

/// What became of the samples that were to be unwound.
#[derive(Debug, Default, Clone)]
pub struct UnwindStats {
    /// Samples with user registers and a stack copy to unwind.
    pub samples: u64,
    /// User frames produced.
    pub frames: u64,
    /// Samples whose stack copy was empty (`dyn_size` 0): no user frames.
    pub empty_stack: u64,
    /// Samples whose own address is in a map with no object file to
    /// unwind with (`[vdso]`, anonymous memory, a file not found): no user
    /// frames.
    pub no_object: u64,
    /// Samples whose unwinding stopped at a return address into such a
    /// map (the frames before it are kept).
    pub cut_at_no_object: u64,
    /// Samples whose unwinding went through an object without any CFI
    /// (`.eh_frame`, `.debug_frame`): libdw falls back to frame pointers
    /// there.
    pub through_no_cfi: u64,
    /// Samples of a register ABI or architecture this unwinder has no
    /// tables for (32-bit tasks, recordings of other machines): no user
    /// frames.
    pub unsupported: u64,
    /// The DSOs those samples met without an object file, and those
    /// without CFI (at most [`MAX_NAMES`] each).
    pub missing_objects: BTreeSet<String>,
    pub objects_without_cfi: BTreeSet<String>,
}

/// Names kept per list in [`UnwindStats`].
pub const MAX_NAMES: usize = 16;

impl UnwindStats {
    /// Samples printed without any user frame although they had a user
    /// stack to unwind.
    pub fn without_user_frames(&self) -> u64 {
        self.empty_stack + self.no_object + self.unsupported
    }
}

/// Address spaces whose modules are kept before all are forgotten (a
/// bound for recordings of endless short-lived processes; perf frees a
/// process's `Dwfl` with its maps).
const MAX_SPACES: usize = 1 << 16;

/// The unwinding state of one run.
pub(crate) struct UserUnwinder {
    unwinder: Option<Unwinder>,
    /// The architecture was looked at (from the recording's `ARCH`
    /// feature, at the first sample).
    arch_known: bool,
    max_stack: usize,
    files: RefCell<Files>,
    /// perf's per-maps `Dwfl`, by the machine's map group.
    spaces: FastMap<u64, ModuleSpace>,
    /// The frames of the last sample unwound, as unwound and as ips.
    unwound: Vec<Frame>,
    frames: Vec<u64>,
    pub stats: UnwindStats,
    styles: UnwindStyles,
    /// perf's error about libunwind: `Some(Some(_))` to be said,
    /// `Some(None)` said.
    said: Option<Option<&'static str>>,
}

/// The object files of the recording's DSOs, found and parsed once each.
struct Files {
    symfs: Option<PathBuf>,
    /// `--symfs DIR,flat`.
    symfs_flat: bool,
    buildid_cache: Option<PathBuf>,
    /// The recording's BUILD_ID table: recorded path -> build-id.
    build_ids: HashMap<Vec<u8>, Vec<u8>>,
    by_dso: Vec<Option<DsoFiles>>,
}

/// What was found for one DSO.
struct DsoFiles {
    object: Option<Rc<Object>>,
    /// The file perf reads memory from (`dso__data_read_addr`), opened
    /// when first needed.
    data: Option<Option<SectionBytes>>,
}

impl UserUnwinder {
    pub(crate) fn new(options: &UnwindOptions, build_ids: Vec<perf_data::features::BuildIdEntry>) -> UserUnwinder {
        let files = Files {
            symfs: options.files.symfs_dir().map(PathBuf::from),
            symfs_flat: options.files.symfs_flat,
            buildid_cache: options.files.buildid_cache(),
            // A build-id of zeros or of no bytes is none (as the symbolizer
            // takes them: perf's build_id__is_defined).
            build_ids: build_ids
                .into_iter()
                .filter(|e| perf_data::features::build_id_is_defined(&e.build_id))
                .map(|e| (e.filename, e.build_id))
                .collect(),
            by_dso: Vec::new(),
        };
        UserUnwinder {
            unwinder: None,
            arch_known: false,
            max_stack: options.max_stack,
            files: RefCell::new(files),
            spaces: FastMap::default(),
            unwound: Vec::new(),
            frames: Vec::new(),
            stats: UnwindStats::default(),
            styles: options.styles,
            said: None,
        }
    }

    /// perf's error about libunwind, once, after the first sample it
    /// unwound (see [`UnwindStyles`]).
    pub(crate) fn take_said(&mut self) -> Option<&'static str> {
        let said = self.said?;
        self.said = Some(None);
        said
    }

    /// Whether perf unwinds samples of an event with this `sample_type`.
    pub(crate) fn applies(sample_type: u64) -> bool {
        use perf_data::attr::sample_type::{REGS_USER, STACK_USER};
        sample_type & REGS_USER != 0 && sample_type & STACK_USER != 0
    }

    /// The user frames of sample `s` (of an event [`UserUnwinder::applies`]
    /// to), leaf first, as perf appends them to the callchain: each the
    /// address perf prints and symbolizes. `arch`: the recording's `ARCH`
    /// feature, if known (asked for once).
    pub(crate) fn unwind(&mut self, machine: &Machine, s: &PerfSample<'_>, endian: Endian, arch: impl FnOnce() -> Option<String>) -> &[u64] {
        self.frames.clear();
        let (Some(regs), Some(stack)) = (s.user_regs, s.user_stack) else { return &self.frames };
        if self.styles.libunwind && self.said.is_none() {
            self.said = Some(Some(NO_LIBUNWIND));
        }
        if !self.styles.libdw {
            return &self.frames;
        }
        // perf: no user registers (a kernel thread), nothing captured.
        if regs.abi == super::abi::NONE || regs.values.is_empty() {
            return &self.frames;
        }
        self.stats.samples += 1;
        if stack.is_empty() {
            self.stats.empty_stack += 1;
            return &self.frames;
        }
        if !self.arch_known {
            self.arch_known = true;
            self.unwinder = arch_of(arch().as_deref()).map(Unwinder::new);
        }
        let Some(unwinder) = self.unwinder.as_mut() else {
            self.stats.unsupported += 1;
            return &self.frames;
        };
        let Some(thread) = machine.thread(s.tid) else { return &self.frames };
        let group = thread.map_group();
        // A process already here keeps its modules: forgetting them could
        // change how its later samples unwind (see `modules`).
        make_room(&mut self.spaces, &group, MAX_SPACES);
        let space = self.spaces.entry(group).or_default();
        let maps = thread.maps();
        let little_endian = endian == Endian::Little;
        let view = View {
            maps: &maps,
            dsos: &machine.dsos,
            files: &self.files,
            little_endian,
            stamp: maps.stamp(),
            no_object: RefCell::new(None),
            no_cfi: RefCell::new(None),
        };
        let sample = Sample { regs, stack, little_endian };
        let stop = unwinder.unwind_into(space, &view, &sample, s.tid as u32 as u64, self.max_stack, &mut self.unwound);
        self.frames.extend(self.unwound.iter().map(|f| f.ip));
        let st = &mut self.stats;
        st.frames += self.frames.len() as u64;
        let mut no_object = false;
        match stop {
            Stop::FirstFrameNotReported | Stop::NotAttached => {
                st.no_object += 1;
                no_object = true;
            }
            Stop::FrameNotReported => {
                st.cut_at_no_object += 1;
                no_object = true;
            }
            Stop::UnsupportedAbi => st.unsupported += 1,
            _ => {}
        }
        if let Some(name) = view.no_object.take().filter(|_| no_object) {
            remember(&mut st.missing_objects, &name);
        }
        if let Some(name) = view.no_cfi.take() {
            st.through_no_cfi += 1;
            remember(&mut st.objects_without_cfi, &name);
        }
        &self.frames
    }
}

/// Keeps a DSO's name for pstitch's own summary on stderr (a message,
/// written as text: a name that is not UTF-8 shows with U+FFFD there).
fn remember(names: &mut BTreeSet<String>, name: &[u8]) {
    if names.len() < MAX_NAMES {
        names.insert(String::from_utf8_lossy(name).into_owned());
    }
}

/// The unwinder's architecture for a recording whose `ARCH` feature is
/// `arch` (perf's `perf_env__arch`: the running machine's when the
/// recording does not say).
fn arch_of(arch: Option<&str>) -> Option<Arch> {
    match arch {
        Some("x86_64") => Some(Arch::X86_64),
        Some(_) => None,
        None if cfg!(target_arch = "x86_64") => Some(Arch::X86_64),
        None => None,
    }
}

/// The sample's address space, as the unwinder sees it.
struct View<'a> {
    maps: &'a Maps,
    dsos: &'a Dsos,
    files: &'a RefCell<Files>,
    /// Byte order of the recorded machine (of its files too).
    little_endian: bool,
    /// The maps' stamp: they are the same as long as it is.
    stamp: u64,
    /// The last DSO met without an object file, and without CFI.
    no_object: RefCell<Option<Rc<[u8]>>>,
    no_cfi: RefCell<Option<Rc<[u8]>>>,
}

impl Process for View<'_> {
    fn find_map(&self, addr: u64) -> Option<MapRef> {
        let map = self.maps.find(addr)?;
        let dso = self.dsos.get(map.dso);
        let object = self.files.borrow_mut().object(map.dso, self.dsos);
        Some(MapRef { start: map.start, pgoff: map.pgoff, name: dso.name.clone(), object, jitted: dso.name.starts_with(b"/tmp/jitted-") })
    }

    fn stamp(&self) -> u64 {
        self.stamp
    }

    fn met(&self, met: &Met) {
        match met {
            Met::NoObject(name) => *self.no_object.borrow_mut() = Some(name.clone()),
            Met::NoCfi(name) => *self.no_cfi.borrow_mut() = Some(name.clone()),
        }
    }

    fn read_file_word(&self, addr: u64) -> Option<u64> {
        let map = self.maps.find(addr)?;
        let data = self.files.borrow_mut().data(map.dso, self.dsos)?;
        let off = usize::try_from(map.map_ip(addr)).ok()?;
        let b: [u8; 8] = data.get(off..off.checked_add(8)?)?.try_into().ok()?;
        Some(if self.little_endian { u64::from_le_bytes(b) } else { u64::from_be_bytes(b) })
    }
}

impl Files {
    fn search(&self) -> Search<'_> {
        Search { symfs: self.symfs.as_deref(), flat: self.symfs_flat, buildid_dir: self.buildid_cache.as_deref(), demangle: false }
    }

    fn entry(&mut self, id: DsoId, dsos: &Dsos) -> &mut DsoFiles {
        let i = id as usize;
        if self.by_dso.len() <= i {
            self.by_dso.resize_with(i + 1, || None);
        }
        if self.by_dso[i].is_none() {
            let object = self.load_object(id, dsos).map(Rc::new);
            self.by_dso[i] = Some(DsoFiles { object, data: None });
        }
        self.by_dso[i].as_mut().expect("just filled")
    }

    fn object(&mut self, id: DsoId, dsos: &Dsos) -> Option<Rc<Object>> {
        self.entry(id, dsos).object.clone()
    }

    fn build_id(&self, id: DsoId, dsos: &Dsos) -> Option<Vec<u8>> {
        let dso = dsos.get(id);
        dso.build_id.clone().or_else(|| self.build_ids.get(&*dso.name).cloned())
    }

    /// `__report_module`'s file: `<symfs>/<long name>`, else the DSO's
    /// build-id cache entry; `None` where libdw could not report one.
    fn load_object(&self, id: DsoId, dsos: &Dsos) -> Option<Object> {
        let dso = dsos.get(id);
        let search = self.search();
        let bid = self.build_id(id, dsos);
        let is_vdso = dso.kind == DsoKind::Vdso;
        let main = Elf::open(&search.join(&dso.name)).or_else(|| {
            let file = load::build_id_cache_file(self.buildid_cache.as_deref()?, bid.as_deref()?, is_vdso)?;
            Elf::open(&file)
        })?;
        // libdw reads `.debug_frame` from the file perf loaded the symbols
        // from (its find_debuginfo callback) when the file has no DWARF.
        let debug = if Object::needs_debug_file(&main) {
            load::symsrc_path(&dso.name, bid.as_deref(), is_vdso, &search).and_then(|p| Elf::open(&p))
        } else {
            None
        };
        Object::from_elf(u64::from(id), &main, debug.as_ref())
    }

    /// The file perf reads a DSO's memory from (`dso__data_fd`: the
    /// build-id cache entry, else `<symfs>/<long name>`).
    fn data(&mut self, id: DsoId, dsos: &Dsos) -> Option<SectionBytes> {
        if self.entry(id, dsos).data.is_none() {
            let dso = dsos.get(id);
            let is_vdso = dso.kind == DsoKind::Vdso;
            let cached = match (&self.buildid_cache, self.build_id(id, dsos)) {
                (Some(dir), Some(bid)) => load::build_id_cache_file(dir, &bid, is_vdso),
                _ => None,
            };
            let path = self.search().join(&dso.name);
            let file = cached.and_then(|f| elf::map_file(&f)).or_else(|| elf::map_file(&path)).map(|f| {
                let len = f.len();
                SectionBytes::Mapped(f, 0, len)
            });
            self.entry(id, dsos).data = Some(file);
        }
        self.entry(id, dsos).data.clone().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use perf_data::bytes::{Endian, U64Array};
    use perf_data::record::{MmapRecord, kind, misc};

    const BIN: &str = "/tmp/pstitch-fixtures/bin/dwarfwork";

    /// A sample of thread 10 at `ip` (registers bp, sp and ip; a stack copy
    /// of zeros).
    fn unwind_at(u: &mut UserUnwinder, m: &Machine, ip: u64, regs: &mut Vec<u8>, stack: &[u8]) -> Vec<u64> {
        regs.clear();
        for v in [0u64, 0x7ff0_0000, ip] {
            regs.extend_from_slice(&v.to_le_bytes());
        }
        let values = U64Array::new(regs, Endian::Little);
        let s = PerfSample {
            pid: 10,
            tid: 10,
            user_regs: Some(perf_data::sample::Regs { abi: super::super::abi::ABI_64, mask: 0b1_1100_0000, values }),
            user_stack: Some(stack),
            ..Default::default()
        };
        u.unwind(m, &s, Endian::Little, || Some("x86_64".into())).to_vec()
    }

    /// What a process's module reports remember holds only while its own
    /// maps stay the same: an address asked for before a library was mapped
    /// there is asked again once it is (see `Maps::stamp`).
    #[test]
    fn reports_follow_the_process_maps() {
        let symfs = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/symfs");
        let elf = std::fs::read(format!("{symfs}{BIN}")).expect("fixture binary");
        let entry = u64::from_le_bytes(elf[0x18..0x20].try_into().expect("e_entry"));
        let options = UnwindOptions {
            max_stack: 127,
            files: SymbolConfig { symfs: Some(symfs.into()), ..Default::default() },
            styles: UnwindStyles::default(),
        };
        let mut u = UserUnwinder::new(&options, Vec::new());
        let mut m = Machine::new();
        m.findnew_thread(10, 10);
        let base = 0x5555_5555_4000u64;
        let (mut regs, stack) = (Vec::new(), vec![0u8; 64]);
        assert!(unwind_at(&mut u, &m, base + entry, &mut regs, &stack).is_empty(), "nothing mapped there yet");
        // Another process's mmap changes nothing for this one.
        m.findnew_thread(20, 20);
        let other = MmapRecord { pid: 20, tid: 20, start: base, len: elf.len() as u64, pgoff: 0, prot: 5, flags: 0, build_id: None, filename: BIN.as_bytes() };
        m.process_mmap(&other, kind::MMAP2, misc::USER);
        assert!(unwind_at(&mut u, &m, base + entry, &mut regs, &stack).is_empty(), "mapped in another process");
        let own = MmapRecord { pid: 10, tid: 10, ..other };
        m.process_mmap(&own, kind::MMAP2, misc::USER);
        assert_eq!(unwind_at(&mut u, &m, base + entry, &mut regs, &stack).first(), Some(&(base + entry)), "mapped in this process");
    }
}
