//! Symbolization: from a map and an address to perf's symbol, inline chain
//! and source line.
//!
//! Interface used by [`crate::script`]; all lookups are cached here per
//! (dso, address), and every DSO's symbols and DWARF are loaded once, lazily.
//!
//! | piece | perf | here |
//! |---|---|---|
//! | finding the file, `.symtab`/`.dynsym`, PLT | `dso__load`, `symbol-elf.c` | [`load`] |
//! | symbol order, ends, aliases | `symbol.c` | [`symtab`] |
//! | kernel symbols | `dso__load_kallsyms` | [`kallsyms`] |
//! | the kernel's table (compact) | `struct symbol` in an rbtree | [`ktable`] |
//! | that table kept for the boot | (reads /proc/kallsyms each run) | [`ksyms_cache`] |
//! | kernel symbols from `-k` | `dso__load_vmlinux` | [`vmlinux`] |
//! | names | `demangle_sym` | [`demangle`] |

pub mod a2l;
pub mod demangle;
pub mod elf;
mod itanium;
pub mod kallsyms;
mod ksyms_cache;
mod ktable;
pub mod load;
pub mod loader;
pub mod rbtree;
mod rust_v0;
mod shape;
pub mod symtab;
mod vmlinux;

use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::fasthash::FastMap;
use crate::machine::{DsoKind, DsoName, Dsos, KERNEL_DSO_NAME, Map, name_path};
use perf_data::features::BuildIdEntry;

use load::{Loaded, Search};

/// Where and how to look for symbols.
#[derive(Debug, Clone, Default)]
pub struct SymbolConfig {
    pub symfs: Option<PathBuf>,
    /// `--symfs DIR,flat`: files are looked up in the symfs by their base
    /// name only.
    pub symfs_flat: bool,
    pub kallsyms: Option<PathBuf>,
    /// `-k`: kernel symbols from this vmlinux (an ELF file) rather than
    /// kallsyms.
    pub vmlinux: Option<PathBuf>,
    /// `--show-kernel-path`: the kernel's DSO shown by its long name (the
    /// vmlinux a `-k` load took its symbols from).
    pub show_kernel_path: bool,
    /// The build-id cache (`PERF_BUILDID_DIR`, else `~/.debug`).
    pub buildid_dir: Option<PathBuf>,
    pub demangle: bool,
    pub demangle_kernel: bool,
    pub inline: bool,
    pub full_source_path: bool,
    /// `--stop-bt` (perf's `bt_stop_list`): a callchain ends after the
    /// first line whose symbol (or inline function) has one of these names.
    pub bt_stop: Vec<String>,
}

impl SymbolConfig {
    /// perf script's defaults: names demangled (not the kernel's), inline
    /// frames shown, files found at their recorded paths, kernel symbols
    /// from `/proc/kallsyms`, no build-id cache.
    pub fn perf() -> SymbolConfig {
        SymbolConfig { demangle: true, inline: true, ..SymbolConfig::default() }
    }

    /// Whether the kernel's symbols come from `-k` (perf looks at
    /// `--kallsyms` first).
    pub(crate) fn uses_vmlinux(&self) -> bool {
        self.kallsyms.is_none() && self.vmlinux.is_some()
    }

    /// The symfs as perf uses it (empty or `/` is the same as none).
    pub(crate) fn symfs_dir(&self) -> Option<&Path> {
        self.symfs.as_deref().filter(|s| !s.as_os_str().is_empty() && *s != Path::new("/"))
    }

    /// The build-id cache perf looks in: `<symfs>/.debug` when a symfs is
    /// given (`symbol__config_symfs`), else [`SymbolConfig::buildid_dir`].
    pub(crate) fn buildid_cache(&self) -> Option<PathBuf> {
        match &self.symfs {
            Some(s) => {
                let mut p = s.as_os_str().to_owned();
                p.push("/.debug");
                Some(PathBuf::from(p))
            }
            None => self.buildid_dir.clone(),
        }
    }
}

/// binutils' `addr2line -i -f` on one file, emulated: what perf asks it
/// for inline frames and source lines (see the `a2l` module for why it is an
/// emulation and not a DWARF library's answer).
pub struct Addr2line(a2l::Session);

/// One line of addr2line's answer: the function (innermost first, then
/// its callers) and the source line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Addr2lineRecord {
    pub function: Option<std::sync::Arc<str>>,
    pub file: Option<std::sync::Arc<str>>,
    /// 0 where addr2line prints `?`.
    pub line: u32,
}

impl Addr2line {
    /// `None` if `path` is not an ELF file.
    pub fn open(path: &Path) -> Option<Addr2line> {
        elf::Elf::open(path).map(|e| Addr2line(a2l::Session::new(e)))
    }

    /// What `addr2line -i -f` prints for `pc` (`None`: `??`, `??:0`).
    pub fn query(&mut self, pc: u64) -> Option<Vec<Addr2lineRecord>> {
        let records = self.0.query(pc)?;
        Some(records.into_iter().map(|r| Addr2lineRecord { function: r.function, file: r.file, line: r.line }).collect())
    }
}

/// A symbol as perf prints it: name (demangled per the config) and its
/// DSO-relative range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    pub name: std::sync::Arc<str>,
    pub start: u64,
    /// Exclusive.
    pub end: u64,
}

/// One entry of perf's inline list for an address, innermost first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InlineEntry {
    pub name: std::sync::Arc<str>,
    /// True when the name differs from the ELF symbol's (perf prints
    /// `(inlined)` instead of the dso then).
    pub inlined: bool,
    /// `file:line` of this entry (the call site for callers).
    pub srcline: Rc<str>,
}

/// A source line as perf prints it: `file:line`, or the `dso[addr]`
/// fallback, whose DSO name is bytes (it need not be UTF-8).
pub type Srcline = Rc<[u8]>;

/// What perf knows about one DSO once it tried to load it.
struct DsoState {
    loaded: Loaded,
    kind: DsoKind,
    kernel: bool,
    long_name: DsoName,
    short_name: DsoName,
    /// The file addr2line would run on has a `.debug_line` section
    /// (`None`: not checked yet).
    has_debug_line: Option<bool>,
    /// The addr2line "process" (perf's `dso->a2l`).
    a2l: Option<a2l::Session>,
    /// perf's `dso->has_srcline` and `dso->a2l_fails`.
    has_srcline: bool,
    a2l_fails: u32,
    /// perf's `dso->inlined_nodes`, by objdump address.
    inlines: FastMap<u64, Rc<[InlineEntry]>>,
    /// Source lines by objdump address, with the addr2line generation they
    /// were computed at (a repeated query in the same state changes
    /// nothing and answers the same).
    srclines: FastMap<u64, (u64, Option<Srcline>)>,
    /// `dso[addr]` fallbacks by objdump address.
    fallbacks: FastMap<u64, Srcline>,
}

/// A DSO's symbols as one symbolizer loaded them, for another (they can
/// cross threads: see `script::output`).
#[derive(Debug)]
pub struct ShippedDso {
    loaded: Loaded,
    /// The addr2line session, started where the symbols were loaded.
    a2l: Option<StartedA2l>,
    kind: DsoKind,
    kernel: bool,
    long_name: Box<[u8]>,
    short_name: Box<[u8]>,
}

/// What [`a2l_session`] finds out when it first runs: whether the file
/// has `.debug_line`, and then the session (as a new one starts, before
/// any query).
struct StartedA2l {
    has_debug_line: bool,
    session: Option<a2l::Session>,
    /// Decodes the session's units ahead, where the session was started.
    decoder: Option<a2l::ahead::Decoder>,
}

impl StartedA2l {
    /// perf starts `addr2line` on a file only if it has `.debug_line`.
    fn start(path: &Path) -> StartedA2l {
        let elf = elf::Elf::open(path);
        let has_debug_line = elf.as_ref().is_some_and(|e| e.section_by_name(".debug_line").is_some());
        let (session, decoder) = match elf.filter(|_| has_debug_line).map(|e| a2l::Session::with_decoder(e, a2l::cache::Dir::from_env().as_ref())) {
            Some((s, d)) => (Some(s), d),
            None => (None, None),
        };
        StartedA2l { has_debug_line, session, decoder }
    }
}

impl ShippedDso {
    /// The decoder of the addr2line session started with the DSO, to run
    /// where it was loaded (see [`a2l::ahead`]).
    pub(crate) fn take_decoder(&mut self) -> Option<a2l::ahead::Decoder> {
        self.a2l.as_mut().and_then(|a| a.decoder.take())
    }
}

impl std::fmt::Debug for StartedA2l {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StartedA2l {{ has_debug_line: {}, session: {} }}", self.has_debug_line, self.session.is_some())
    }
}

impl DsoState {
    fn new(s: ShippedDso) -> DsoState {
        let (has_debug_line, a2l) = match s.a2l {
            Some(started) => (Some(started.has_debug_line), started.session),
            None => (None, None),
        };
        DsoState {
            loaded: s.loaded,
            kind: s.kind,
            kernel: s.kernel,
            long_name: s.long_name.into(),
            short_name: s.short_name.into(),
            has_debug_line,
            a2l,
            has_srcline: true,
            a2l_fails: 0,
            inlines: FastMap::default(),
            srclines: FastMap::default(),
            fallbacks: FastMap::default(),
        }
    }
}

impl DsoState {
    /// A source line lookup failed: perf gives up on the DSO's source
    /// lines after [`A2L_FAIL_LIMIT`] in a row.
    fn a2l_failed(&mut self) {
        self.a2l_fails += 1;
        if self.a2l_fails > A2L_FAIL_LIMIT {
            self.has_srcline = false;
            self.a2l = None;
            self.srclines.clear();
        }
    }
}

/// Room for any kallsyms text up front (/proc/kallsyms is 5-15 MB and says
/// it is empty; pages are taken only as they are written): growing would
/// copy megabytes. A larger one still grows.
const KALLSYMS_ROOM: usize = 32 << 20;

/// A kallsyms file's text, in one allocation when the file says its size
/// or /proc's is under [`KALLSYMS_ROOM`].
fn read_kallsyms(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).ok()?;
    let size = file.metadata().ok().map_or(0, |m| m.len());
    let mut data = Vec::with_capacity(if size == 0 { KALLSYMS_ROOM } else { usize::try_from(size).ok()?.saturating_add(1) });
    file.read_to_end(&mut data).ok()?;
    Some(data)
}

/// perf gives up on a DSO's source lines after this many failures in a row
/// (`A2L_FAIL_LIMIT`).
const A2L_FAIL_LIMIT: u32 = 123;

pub struct Symbolizer {
    pub(crate) config: SymbolConfig,
    build_ids: HashMap<Vec<u8>, Vec<u8>>,
    dsos: Vec<Option<DsoState>>,
    /// The kernel symbol file, read once (`None` inside: unavailable).
    kallsyms: Option<Option<Rc<kallsyms::Kallsyms>>>,
    /// Its kernel table was moved out to a kernel DSO (see
    /// [`Symbolizer::kernel_table`]).
    kernel_taken: bool,
    /// It came from the kernel symbol cache: the kernel's table alone, no
    /// module symbols (see [`ksyms_cache`]).
    kallsyms_cached: bool,
    /// The boot and the first bytes of /proc/kallsyms, once read (`None`
    /// inside: unreadable).
    kallsyms_live: Option<Option<ksyms_cache::Live>>,
    /// The last `find_symbol` answered for a load that failed half-way:
    /// later lookups of the same address may answer differently.
    transient: bool,
    /// `config.symfs`, unless it is empty or `/`.
    symfs: Option<Rc<Path>>,
    /// The empty inline list, shared.
    no_inlines: Rc<[InlineEntry]>,
    /// A kallsyms file being read on another thread, coming in pieces
    /// (`None`: reading failed; see [`Symbolizer::read_kallsyms_ahead`]).
    kallsyms_ahead: Option<(PathBuf, crate::engine::pieces::Pieces)>,
    /// addr2line sessions [`Symbolizer::inlines`] started so far.
    a2l_started: u64,
}

impl Symbolizer {
    pub fn new(config: SymbolConfig) -> Symbolizer {
        let symfs = config.symfs_dir().map(Rc::from);
        Symbolizer {
            config,
            build_ids: HashMap::new(),
            dsos: Vec::new(),
            kallsyms: None,
            kernel_taken: false,
            kallsyms_cached: false,
            kallsyms_live: None,
            transient: false,
            symfs,
            no_inlines: Rc::new([]),
            kallsyms_ahead: None,
            a2l_started: 0,
        }
    }

    /// How many addr2line sessions inline lookups started: perf starts an
    /// `addr2line` process per DSO at its first inline lookup, and flushes
    /// its standard output before it does.
    pub(crate) fn a2l_started(&self) -> u64 {
        self.a2l_started
    }

    /// Starts reading the kallsyms file the kernel's symbols will likely
    /// come from, on another thread: the kernel takes tens of milliseconds
    /// to print `/proc/kallsyms`, time in which the reading side can look
    /// ahead and the loader start. The text comes in pieces, parsed as they
    /// arrive by the side that needs the symbols (see [`kallsyms::Parser`]).
    /// Which file is read is decided again when the symbols are needed; the
    /// early text is used only if it is the same file. Call after
    /// [`Symbolizer::set_build_ids`].
    pub(crate) fn read_kallsyms_ahead(&mut self) {
        const PIECE: usize = 256 << 10;
        let bid = self.build_ids.get(KERNEL_DSO_NAME.as_bytes()).cloned();
        let Some(path) = self.kallsyms_path(bid.as_deref()) else { return };
        if let Some((place, live)) = self.kallsyms_cache(&path)
            && place.holds(&live)
        {
            return;
        }
        if let Some(pieces) = crate::engine::pieces::Pieces::start(path.clone(), PIECE) {
            self.kallsyms_ahead = Some((path, pieces));
        }
    }

    /// Lets the kernel drop the pages of every mapped object file. Names
    /// and DWARF are read where they lie in the files, on demand: over a
    /// long run the pages touched add up (tens of MB, counted in the
    /// process's resident size although the page cache holds them anyway).
    /// Pages needed again come back from the page cache.
    pub(crate) fn release_pages(&self) {
        for st in self.dsos.iter().flatten() {
            st.loaded.syms.release_pages();
            if let Some(s) = &st.a2l {
                s.release_pages();
            }
        }
    }

    /// Writes what the addr2line sessions learned to their caches (see
    /// `a2l::cache`): called where the run pauses or ends.
    pub(crate) fn save_caches(&mut self) {
        for st in self.dsos.iter_mut().flatten() {
            if let Some(s) = &mut st.a2l {
                s.save_now();
            }
        }
    }

    /// Whether the last [`Symbolizer::find_symbol`] answer holds for this
    /// call only.
    pub(crate) fn last_lookup_transient(&self) -> bool {
        self.transient
    }

    /// The BUILD_ID table of the input (file mode: a feature section; pipe
    /// mode: HEADER_BUILD_ID records).
    pub fn set_build_ids(&mut self, entries: Vec<BuildIdEntry>) {
        for e in entries.into_iter().filter(|e| perf_data::features::build_id_is_defined(&e.build_id)) {
            self.build_ids.insert(e.filename, e.build_id);
        }
    }

    /// The BUILD_ID table as (file name, build id) pairs, to give another
    /// symbolizer.
    pub(crate) fn build_id_pairs(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        self.build_ids.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    pub(crate) fn set_build_id_pairs(&mut self, pairs: Vec<(Vec<u8>, Vec<u8>)>) {
        self.build_ids.extend(pairs);
    }

    fn buildid_dir(&self) -> Option<PathBuf> {
        self.config.buildid_cache()
    }

    /// Where addr2line's files are (the symfs and its layout).
    fn search<'a>(&self, symfs: Option<&'a Path>) -> Search<'a> {
        Search { symfs, flat: self.config.symfs_flat, buildid_dir: None, demangle: false }
    }

    /// The symfs as perf uses it (`/` is the same as none).
    fn symfs(&self) -> Option<Rc<Path>> {
        self.symfs.clone()
    }

    fn state(&mut self, dsos: &Dsos, id: crate::machine::DsoId) -> &mut DsoState {
        self.state_for(dsos, id, None)
    }

    fn state_for(&mut self, dsos: &Dsos, id: crate::machine::DsoId, map: Option<&Map>) -> &mut DsoState {
        let i = id as usize;
        if self.dsos.len() <= i {
            self.dsos.resize_with(i + 1, || None);
        }
        if self.dsos[i].is_none() {
            let st = self.load(dsos, id, map);
            self.dsos[i] = Some(st);
        }
        self.dsos[i].as_mut().expect("just loaded")
    }

    /// The kernel symbol cache and what this run sees of the boot, when
    /// the kallsyms file is `/proc/kallsyms` and the cache is on.
    fn kallsyms_cache(&mut self, path: &Path) -> Option<(ksyms_cache::Place, ksyms_cache::Live)> {
        if path != Path::new(ksyms_cache::PROC_KALLSYMS) {
            return None;
        }
        let place = ksyms_cache::Place::from_env()?;
        let live = self.kallsyms_live.get_or_insert_with(ksyms_cache::Live::read).clone()?;
        Some((place, live))
    }

    /// The kallsyms file, parsed once with the kernel's relocation
    /// reference; the kernel's table alone from the kernel symbol cache
    /// when it holds the table and no module map needs the rest.
    fn kallsyms(&mut self, dsos: &Dsos) -> Option<Rc<kallsyms::Kallsyms>> {
        if let Some(k) = &self.kallsyms {
            return k.clone();
        }
        let kernel = (0..dsos.len() as u32).map(|i| dsos.get(i)).find(|d| d.kind == DsoKind::Kernel);
        let bid = kernel.and_then(|d| d.build_id.clone().or_else(|| self.build_ids.get(&*d.name).cloned()));
        let rr = kernel.and_then(|d| d.ref_reloc.clone());
        let ref_reloc = rr.as_ref().map(|(n, a)| (&**n, *a));
        let path = self.kallsyms_path(bid.as_deref());
        let modules = (0..dsos.len() as u32).any(|i| dsos.get(i).kind == DsoKind::KernelModule);
        let cache = path.as_deref().and_then(|p| self.kallsyms_cache(p));
        if !modules
            && let Some((place, live)) = &cache
            && let Some(table) = place.open(live, ref_reloc)
        {
            let k = Some(Rc::new(kallsyms::Kallsyms { kernel: table, modules: Default::default() }));
            self.kallsyms = Some(k.clone());
            self.kallsyms_cached = true;
            self.kallsyms_ahead = None;
            return k;
        }
        self.kallsyms_cached = false;
        let parsed = match (self.kallsyms_ahead.take(), &path) {
            (Some((early, pieces)), Some(p)) if early == *p => {
                let mut data = Vec::with_capacity(KALLSYMS_ROOM);
                let mut parser = kallsyms::Parser::default();
                pieces
                    .into_iter()
                    .try_for_each(|piece| {
                        data.extend_from_slice(&piece.ok()?);
                        parser.parse(&data, false);
                        Some(())
                    })
                    .map(|()| (data, parser))
            }
            _ => path.and_then(|p| read_kallsyms(&p)).map(|data| (data, kallsyms::Parser::default())),
        };
        let mut refs = None;
        let k = parsed
            .and_then(|(data, mut parser)| {
                parser.parse(&data, true);
                // Stored only when the table needs no relocation (see
                // `ksyms_cache`).
                refs = cache.as_ref().map(|_| ksyms_cache::refs(&data)).filter(|refs| ksyms_cache::fits(refs, ref_reloc));
                kallsyms::load_parsed(data, &mut parser, ref_reloc)
            })
            .map(Rc::new);
        if let (Some((place, live)), Some(refs), Some(k)) = (&cache, &refs, &k) {
            place.store(live, refs, &k.kernel);
        }
        self.kallsyms = Some(k.clone());
        k
    }

    /// The kernel's symbol table from kallsyms, for a kernel DSO. The
    /// parsed table moves to the DSO rather than being copied (copies of
    /// the compact layout share it, but a generic table's copy of
    /// /proc/kallsyms is 7 MB, kept beside the original to the end); the
    /// modules' symbols stay. A second kernel DSO (a guest's) gets the
    /// file read and parsed again, as perf loads kallsyms for each.
    fn kernel_table(&mut self, dsos: &Dsos) -> Option<ktable::KernelTable> {
        if self.kernel_taken {
            self.kallsyms = None;
            self.kernel_taken = false;
        }
        let k = self.kallsyms(dsos)?;
        let copy = |k: &kallsyms::Kallsyms| k.kernel.clone();
        let Some(Some(cached)) = self.kallsyms.as_mut() else { return Some(copy(&k)) };
        drop(k);
        match Rc::get_mut(cached) {
            Some(own) => {
                self.kernel_taken = true;
                Some(std::mem::take(&mut own.kernel))
            }
            None => Some(copy(cached)),
        }
    }

    fn load(&mut self, dsos: &Dsos, id: crate::machine::DsoId, map: Option<&Map>) -> DsoState {
        DsoState::new(self.load_symbols(dsos, id, map))
    }

    /// Loads `id`'s symbols now (if not yet), for [`Symbolizer::install`]
    /// in another thread's symbolizer, which then needs no file access for
    /// them. What this symbolizer keeps is an empty table, unless `keep`.
    pub(crate) fn ship(&mut self, dsos: &Dsos, id: crate::machine::DsoId, map: Option<&Map>, keep: bool) -> ShippedDso {
        let st = self.state_for(dsos, id, map);
        let loaded = if keep { st.loaded.clone() } else { std::mem::take(&mut st.loaded) };
        ShippedDso { loaded, a2l: None, kind: st.kind, kernel: st.kernel, long_name: st.long_name.as_ref().into(), short_name: st.short_name.as_ref().into() }
    }

    /// Takes a DSO's symbols loaded by another symbolizer (see
    /// [`Symbolizer::ship`]).
    pub(crate) fn install(&mut self, id: crate::machine::DsoId, shipped: ShippedDso) {
        let i = id as usize;
        if self.dsos.len() <= i {
            self.dsos.resize_with(i + 1, || None);
        }
        self.dsos[i] = Some(DsoState::new(shipped));
    }

    /// Whether a DSO of `kind` is loaded from its file alone (no kernel
    /// symbols, no other DSO): such loads can run on any thread, see
    /// [`Symbolizer::load_file`].
    pub(crate) fn loads_from_file(kind: DsoKind) -> bool {
        matches!(kind, DsoKind::Vdso | DsoKind::File | DsoKind::Pseudo)
    }

    /// [`Symbolizer::ship`] for a DSO of a kind [`Symbolizer::loads_from_file`]
    /// accepts, from its name and build-id alone.
    pub(crate) fn load_file(&self, long_name: &[u8], kind: DsoKind, build_id: Option<&[u8]>) -> ShippedDso {
        let short_name = crate::machine::dsos::short_name(long_name, kind);
        let bid = build_id.map(<[u8]>::to_vec).or_else(|| self.build_ids.get(long_name).cloned());
        let symfs = self.symfs();
        let bdir = self.buildid_dir();
        let search = Search { symfs: symfs.as_deref(), flat: self.config.symfs_flat, buildid_dir: bdir.as_deref(), demangle: self.config.demangle };
        let loaded = if is_perf_pid_map_name(long_name) {
            Loaded { syms: load::load_perf_map(name_path(long_name)), ..Default::default() }
        } else {
            load::load_user_dso(long_name, bid.as_deref(), kind == DsoKind::Vdso, &search)
        };
        ShippedDso { loaded, a2l: None, kind, kernel: false, long_name: long_name.into(), short_name: short_name.into() }
    }

    /// [`Symbolizer::load_file`] with the table made ready for lookups
    /// ([`SymTab::prepare`]) and, when inline frames are shown, the
    /// addr2line session started (reading and decompressing its sections
    /// takes the printer ~0.1 s on a large recording otherwise).
    pub(crate) fn load_file_prepared(&self, long_name: &[u8], kind: DsoKind, build_id: Option<&[u8]>) -> ShippedDso {
        let mut shipped = self.load_file(long_name, kind, build_id);
        shipped.loaded.syms.prepare();
        // Choosing between aliases read names all over the string table.
        shipped.loaded.syms.release_pages();
        if self.config.inline
            && let Some(path) = a2l_path(shipped.loaded.symsrc.as_deref(), &shipped.long_name, &self.search(self.symfs().as_deref()))
        {
            shipped.a2l = Some(StartedA2l::start(&path));
        }
        shipped
    }

    fn load_symbols(&mut self, dsos: &Dsos, id: crate::machine::DsoId, map: Option<&Map>) -> ShippedDso {
        let dso = dsos.get(id);
        if Self::loads_from_file(dso.kind) {
            return self.load_file(&dso.name, dso.kind, dso.build_id.as_deref());
        }
        let mut long_name = dso.name.clone();
        let short_name: DsoName = crate::machine::dsos::short_name(&long_name, dso.kind).into();
        let mut kernel = false;
        let loaded = match dso.kind {
            DsoKind::Kernel if self.config.uses_vmlinux() => {
                kernel = true;
                let given = self.config.vmlinux.as_deref().expect("matched").as_os_str().as_bytes();
                // perf: an absolute path as it is, a relative one in the symfs.
                let path = if given.starts_with(b"/") { name_path(given).to_path_buf() } else { self.search(self.symfs().as_deref()).join(given) };
                let bid = dso.build_id.clone().or_else(|| self.build_ids.get(&*dso.name).cloned());
                let rr = dso.ref_reloc.as_ref().map(|(n, a)| (&**n, *a));
                match vmlinux::load(&path, bid.as_deref(), rr, self.config.demangle_kernel) {
                    Some(l) => {
                        long_name = given.into();
                        l
                    }
                    None => Loaded::default(),
                }
            }
            DsoKind::Kernel => {
                kernel = true;
                Loaded { kallsyms: self.kernel_table(dsos), ..Loaded::default() }
            }
            DsoKind::KernelModule => {
                // Module symbols from kallsyms, relative to the module map
                // (loading the .ko itself is not supported).
                kernel = true;
                let mut l = Loaded::default();
                if self.kallsyms_cached {
                    // The cache holds no module symbols: read the file.
                    self.kallsyms = None;
                    self.kernel_taken = false;
                }
                if let (Some(k), Some(m)) = (self.kallsyms(dsos), map)
                    && let Some(syms) = k.modules.get(&kallsyms::module_name(&String::from_utf8_lossy(&long_name))) {
                        l.syms.insert_all(
                            syms.iter()
                                .map(|s| {
                                    let mut s = s.clone();
                                    (s.start, s.end) = (m.map_ip(s.start), m.map_ip(s.end));
                                    s
                                })
                                .collect(),
                        );
                    }
                l
            }
            DsoKind::Anon | DsoKind::NoDso => {
                if is_perf_pid_map_name(&long_name) {
                    Loaded { syms: load::load_perf_map(name_path(&long_name)), ..Default::default() }
                } else {
                    Loaded::default()
                }
            }
            DsoKind::Ksymbol => {
                kernel = true;
                let mut l = Loaded::default();
                l.syms.insert_all(vec![symtab::Sym::new(0, dso.ksym_len, elf::STB_GLOBAL, elf::STT_FUNC, String::from_utf8_lossy(&long_name).into())]);
                l
            }
            // Loaded by `load_file` above.
            DsoKind::Vdso | DsoKind::File | DsoKind::Pseudo => Loaded::default(),
        };
        ShippedDso { loaded, a2l: None, kind: dso.kind, kernel, long_name: long_name.as_ref().into(), short_name: short_name.as_ref().into() }
    }

    /// perf's choice of the kernel symbol file: `--kallsyms`, else (with no
    /// symfs) /proc/kallsyms when the build-id matches the running kernel or
    /// is unknown, else a kallsyms copy in the build-id cache.
    fn kallsyms_path(&self, bid: Option<&[u8]>) -> Option<PathBuf> {
        if let Some(k) = &self.config.kallsyms {
            return Some(k.clone());
        }
        if self.config.symfs.is_some() {
            return None;
        }
        let Some(bid) = bid else { return Some(PathBuf::from("/proc/kallsyms")) };
        let host = std::fs::read("/sys/kernel/notes").ok().and_then(|d| notes_build_id(&d));
        if host.as_deref().is_some_and(|h| load::build_id_equal(bid, h)) {
            return Some(PathBuf::from("/proc/kallsyms"));
        }
        let dir = self.buildid_dir()?;
        let h: String = bid.iter().map(|b| format!("{b:02x}")).collect();
        let base = dir.join(KERNEL_DSO_NAME).join(&h);
        let new = base.join("kallsyms");
        if new.exists() {
            return Some(new);
        }
        base.exists().then_some(base)
    }

    /// Loads a kernel DSO and returns its map `map` as the load leaves it:
    /// on the vmlinux's `.text`, or (from kallsyms) from the first symbol's
    /// start to the last one's end, if it has symbols.
    pub(crate) fn kernel_map_fixed(&mut self, dsos: &Dsos, map: &Map) -> Option<Map> {
        let vmlinux = self.config.uses_vmlinux();
        let st = self.state(dsos, map.dso);
        if let Some(t) = st.loaded.kernel_text {
            return Some(Map { start: t.start, end: t.end, pgoff: t.pgoff, kind: crate::machine::MapKind::Dso, ..*map });
        }
        if vmlinux {
            return None; // a vmlinux refused or without .text symbols
        }
        let (start, end) = st.loaded.span()?;
        Some(Map { start, end, ..*map })
    }

    /// The name the kernel's DSO is printed with when it is not the
    /// recording's: its long name (a `-k` vmlinux, once loaded) with
    /// `--show-kernel-path`, or when its offset is printed (`dsoff`, the
    /// name being a `[...]` one: perf's `prefer_dso_long_name`).
    pub(crate) fn shown_kernel_name(&self, id: crate::machine::DsoId, offset_printed: bool) -> Option<&[u8]> {
        if !self.config.show_kernel_path && !offset_printed {
            return None;
        }
        let st = self.dsos.get(id as usize)?.as_ref()?;
        st.kernel.then_some(&*st.long_name)
    }

    /// perf's `thread__find_map`: the map of `ip` for thread `tid` in
    /// `mode`, or the gap around `ip` that no map covers. A kernel map is
    /// loaded the first time it is used, which resizes it to its symbols.
    pub fn find_map(&mut self, machine: &mut crate::machine::Machine, tid: i32, mode: crate::machine::CpuMode, ip: u64) -> Result<Map, (u64, u64)> {
        let map = machine.find_map_or_gap(tid, mode, ip)?;
        if machine.kernel_map_unloaded(&map) {
            let fixed = self.kernel_map_fixed(&machine.dsos, &map);
            return Ok(machine.fixup_kernel_map(&map, fixed));
        }
        Ok(map)
    }

    /// The map and the symbol `ip` falls in, for thread `tid` in `mode`
    /// (perf's `thread__find_symbol`).
    pub fn resolve(&mut self, machine: &mut crate::machine::Machine, tid: i32, mode: crate::machine::CpuMode, ip: u64) -> Option<(Map, Symbol)> {
        let map = self.find_map(machine, tid, mode, ip).ok()?;
        let sym = self.find_symbol(&machine.dsos, &map, ip)?;
        Some((map, sym))
    }

    /// The file perf reads a DSO's bytes from (`dso__data_fd`, opened as
    /// `try_to_open_dso` opens it before anything set the DSO's binary
    /// type): its entry in the build-id cache, else its path under the
    /// symfs; none for the kernel and its modules, whose symbols come from
    /// kallsyms (perf has no file name for that binary type). perf-ref
    /// reads libc's bytes from `libc.so.6`, not from the `.debug` file its
    /// symbols come from (tests/golden/*/insn*).
    ///
    /// With the file: whether its instructions are 32-bit ones (perf's
    /// `dso__is_64_bit`: from the ELF class of the file the symbols came
    /// from, after loading them; 64-bit otherwise).
    pub(crate) fn open_data(&mut self, dsos: &Dsos, id: crate::machine::DsoId) -> Option<(std::fs::File, bool)> {
        if matches!(dsos.get(id).kind, DsoKind::Kernel | DsoKind::KernelModule) {
            return None;
        }
        let is_32_bit = self.state(dsos, id).loaded.is_32_bit;
        let dso = dsos.get(id);
        let bid = dso.build_id.clone().or_else(|| self.build_ids.get(&*dso.name).cloned());
        let cached = bid.as_deref().and_then(|b| load::build_id_cache_file(&self.buildid_dir()?, b, dso.kind == DsoKind::Vdso));
        let symfs = self.symfs();
        let file = [cached, Some(self.search(symfs.as_deref()).join(&dso.name))].into_iter().flatten().find_map(|p| elf::open_regular(&p))?;
        Some((file, is_32_bit))
    }

    /// perf's `dso__is_object_file`: false only for DSOs whose symbols came
    /// from kallsyms (not a vmlinux) or a KSYMBOL record (`-F dsoff` prints
    /// no offset for them). perf decides by the DSO's *binary* type, which
    /// loading a perf map (a symbol-table type) leaves unset: JIT maps get
    /// their offset (tests/golden/jit-map).
    pub(crate) fn is_object_file(&mut self, dsos: &Dsos, dso: crate::machine::DsoId) -> bool {
        let st = self.state(dsos, dso);
        let from_text = (st.kind == DsoKind::Kernel && st.loaded.kernel_text.is_none()) || st.kind == DsoKind::Ksymbol;
        !from_text || !st.loaded.has_symbols()
    }

    /// perf's `dso__adjust_symbols` once the DSO is loaded: its symbol
    /// values are addresses in the file (a user ELF DSO), not offsets.
    pub(crate) fn adjusts_symbols(&mut self, dsos: &Dsos, dso: crate::machine::DsoId) -> bool {
        self.state(dsos, dso).loaded.adjust_symbols
    }

    /// The symbol containing runtime address `addr` of `map`.
    pub fn find_symbol(&mut self, dsos: &Dsos, map: &Map, addr: u64) -> Option<Symbol> {
        let st = self.state_for(dsos, map.dso, Some(map));
        let failed = std::mem::take(&mut st.loaded.failed_midway);
        let rel = map.map_ip(addr);
        // perf's map__load reports the failed load to the lookup that
        // triggered it; later lookups see the symbols it kept.
        let found = if failed { None } else { st.loaded.find(rel).map(|(start, end, name)| Symbol { name, start, end }) };
        self.transient = failed;
        found
    }

    /// perf's inline list for a callchain address (empty: print `sym`
    /// alone): `append_inlines` / `dso__parse_addr_inlines`, cached per
    /// (dso, address) like perf's `inlined_nodes`.
    pub fn inlines(&mut self, dsos: &Dsos, map: &Map, addr: u64, sym: &Symbol) -> Rc<[InlineEntry]> {
        let demangle = self.config.demangle;
        let full = self.config.full_source_path;
        let symfs = self.symfs();
        let flat = self.config.symfs_flat;
        let search = Search { symfs: symfs.as_deref(), flat, buildid_dir: None, demangle: false };
        let st = self.state_for(dsos, map.dso, Some(map));
        let objdump = rip_2objdump(st, map.map_ip(addr));
        if let Some(v) = st.inlines.get(&objdump) {
            return v.clone();
        }
        // Without an addr2line session (no `.debug_line`, the kernel) the
        // list is empty every time: nothing to remember. Most frames of a
        // system-wide recording are such.
        let had_session = st.a2l.is_some();
        let Some(session) = a2l_session(st, &search) else {
            return self.no_inlines.clone();
        };
        let started = !had_session;
        let mut out = Vec::new();
        if let Some(records) = session.query(objdump) {
            for r in &records {
                let (func, file, line) = perf_record(r);
                let mut name: std::sync::Arc<str> = func.into();
                if demangle && !st.kernel
                    && let Some(d) = demangle::demangle(&name) {
                        name = d.into();
                    }
                let inlined = *name != *sym.name;
                if !inlined {
                    name = sym.name.clone();
                }
                out.push(InlineEntry { name, inlined, srcline: srcline_from_fileline(&file, line, full) });
            }
        }
        let v: Rc<[InlineEntry]> = out.into();
        st.inlines.insert(objdump, v.clone());
        self.a2l_started += u64::from(started);
        v
    }

    /// The source line perf prints for `addr` (`map__fprintf_srcline`:
    /// `__get_srcline` with its fallback `dso[addr]`), or `None` when perf
    /// prints nothing.
    pub fn srcline(&mut self, dsos: &Dsos, map: &Map, addr: u64, _sym: Option<&Symbol>) -> Option<Srcline> {
        let full = self.config.full_source_path;
        let symfs = self.symfs();
        let flat = self.config.symfs_flat;
        let search = Search { symfs: symfs.as_deref(), flat, buildid_dir: None, demangle: false };
        let st = self.state_for(dsos, map.dso, Some(map));
        let objdump = rip_2objdump(st, map.map_ip(addr));
        if st.has_srcline {
            let cached = match (st.srclines.get(&objdump), st.a2l.as_ref()) {
                (Some((g, r)), Some(sess)) if *g == sess.generation() => Some(r.clone()),
                _ => None,
            };
            let line = match cached {
                Some(r) => r,
                None => {
                    let generation = st.a2l.as_ref().map(|s| s.generation());
                    let r = a2l_first(st, &search, objdump).map(|rec| {
                        let (_, file, line) = perf_record(&rec);
                        srcline_from_fileline(&file, line, full).into()
                    });
                    if let (Some(g), Some(_)) = (generation, st.a2l.as_ref()) {
                        st.srclines.insert(objdump, (g, r.clone()));
                    }
                    r
                }
            };
            if let Some(line) = line {
                st.a2l_fails = 0;
                return Some(line);
            }
            st.a2l_failed();
        }
        let short = &st.short_name;
        Some(st.fallbacks.entry(objdump).or_insert_with(|| [&short[..], format!("[{objdump:x}]").as_bytes()].concat().into()).clone())
    }

    /// perf's `get_srcline_split` (the `srccode` field): the file and line
    /// addr2line gives first for `addr` (the innermost inline level, as for
    /// `srcline`), the file's path in full. Not cached, as in perf; a
    /// failure counts towards the DSO's `A2L_FAIL_LIMIT` like a failed
    /// `srcline`.
    pub fn srcline_split(&mut self, dsos: &Dsos, map: &Map, addr: u64) -> Option<(String, u32)> {
        let symfs = self.symfs();
        let search = Search { symfs: symfs.as_deref(), flat: self.config.symfs_flat, buildid_dir: None, demangle: false };
        let st = self.state_for(dsos, map.dso, Some(map));
        if !st.has_srcline {
            return None;
        }
        let objdump = rip_2objdump(st, map.map_ip(addr));
        match a2l_first(st, &search, objdump) {
            Some(rec) => {
                let (_, file, line) = perf_record(&rec);
                st.a2l_fails = 0;
                Some((file, line))
            }
            None => {
                st.a2l_failed();
                None
            }
        }
    }
}

/// perf's `srcline_dso_name`: the file addr2line runs on.
///
/// Without a `.symtab` file perf falls back to the recorded path itself,
/// outside the symfs; pstitch looks it up under the symfs, so that results
/// do not depend on the files of the machine it runs on (perf-ref, in a
/// chroot, does not see the host's files either).
fn srcline_dso_name(st: &DsoState, symfs: &Search<'_>) -> Option<PathBuf> {
    a2l_path(st.loaded.symsrc.as_deref(), &st.long_name, symfs)
}

/// The file addr2line runs on for a DSO whose symbols came from `symsrc`.
fn a2l_path(symsrc: Option<&Path>, long_name: &[u8], symfs: &Search<'_>) -> Option<PathBuf> {
    if let Some(p) = symsrc {
        return Some(p.to_path_buf());
    }
    if long_name.starts_with(b"[") || is_perf_pid_map_name(long_name) {
        return None;
    }
    Some(symfs.join(long_name))
}

/// perf's `is_perf_pid_map_name` (see [`crate::machine::dsos::perf_pid_map_tid`]).
fn is_perf_pid_map_name(n: &[u8]) -> bool {
    crate::machine::dsos::perf_pid_map_tid(n).is_some()
}

/// perf's `cmd__addr2line` session for a DSO: started on first use, if the
/// file has a `.debug_line` section.
fn a2l_session<'a>(st: &'a mut DsoState, symfs: &Search<'_>) -> Option<&'a mut a2l::Session> {
    if st.a2l.is_none() && st.has_debug_line != Some(false) {
        let path = srcline_dso_name(st, symfs)?;
        let started = StartedA2l::start(&path);
        st.has_debug_line = Some(started.has_debug_line);
        st.a2l = started.session;
    }
    st.a2l.as_mut()
}

/// The first record addr2line prints for `addr` (`None`: nothing, or it
/// cannot run).
fn a2l_first(st: &mut DsoState, symfs: &Search<'_>, addr: u64) -> Option<a2l::Record> {
    a2l_session(st, symfs)?.first(addr).map(|(r, _)| r)
}

/// What perf makes of one addr2line record (`read_addr2line_record`,
/// `filename_split`): function (trimmed), file, line.
fn perf_record(r: &a2l::Record) -> (String, String, u32) {
    let func = r.function.as_deref().unwrap_or("??").trim().to_string();
    let file = r.file.as_deref().unwrap_or("??");
    let text = if r.line != 0 { format!("{file}:{}", r.line) } else { format!("{file}:?") };
    // The first ':' splits, whatever the file name contains.
    let (f, rest) = text.split_once(':').unwrap_or((&text, ""));
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    let line = digits.parse::<u64>().map(|v| v as u32).unwrap_or(0);
    (func, f.to_string(), line)
}

/// perf's `srcline_from_fileline`.
fn srcline_from_fileline(file: &str, line: u32, full: bool) -> Rc<str> {
    let f = if full { file } else { file.rsplit('/').next().unwrap_or(file) };
    format!("{f}:{line}").into()
}

/// perf's `map__rip_2objdump` for user DSOs and kallsyms.
fn rip_2objdump(st: &DsoState, rel: u64) -> u64 {
    if !st.loaded.adjust_symbols {
        return rel;
    }
    rel.wrapping_add(st.loaded.text_offset)
}

/// perf's `sysfs__read_build_id` on /sys/kernel/notes.
fn notes_build_id(d: &[u8]) -> Option<Vec<u8>> {
    let mut off = 0;
    let rd = |o: usize| -> Option<u32> { Some(u32::from_ne_bytes(d.get(o..o + 4)?.try_into().ok()?)) };
    while off + 12 <= d.len() {
        let (namesz, descsz, ntype) = (rd(off)? as usize, rd(off + 4)? as usize, rd(off + 8)?);
        let a = |n: usize| (n + 3) & !3;
        let name = d.get(off + 12..off + 12 + a(namesz))?;
        let desc_off = off + 12 + a(namesz);
        if ntype == 3 && namesz == 4 && name.starts_with(b"GNU\0") {
            let n = a(descsz).min(20);
            return d.get(desc_off..desc_off + n).map(<[u8]>::to_vec);
        }
        off = desc_off + a(descsz);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(f: Option<&str>, file: Option<&str>, line: u32) -> a2l::Record {
        a2l::Record { function: f.map(Into::into), file: file.map(Into::into), line }
    }

    #[test]
    fn addr2line_records_as_perf_reads_them() {
        assert_eq!(perf_record(&rec(Some(" f "), Some("/a/b.c"), 12)), ("f".into(), "/a/b.c".into(), 12));
        // No line: "file:?" parses as line 0; no file: "??".
        assert_eq!(perf_record(&rec(None, None, 0)), ("??".into(), "??".into(), 0));
        // The first ':' splits, even inside a file name.
        assert_eq!(perf_record(&rec(Some("f"), Some("C:/x.c"), 3)), ("f".into(), "C".into(), 0));
        assert_eq!(&*srcline_from_fileline("/a/b.c", 7, false), "b.c:7");
        assert_eq!(&*srcline_from_fileline("/a/b.c", 7, true), "/a/b.c:7");
        assert_eq!(&*srcline_from_fileline("", 0, false), ":0");
    }

    /// The first kernel DSO takes the parsed table; a second one (a
    /// guest's) gets the file parsed again, with the same symbols.
    #[test]
    fn every_kernel_dso_gets_the_kernel_table() {
        let dir = std::env::temp_dir().join(format!("pstitch-kernel-table-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("kallsyms");
        std::fs::write(&path, "ffffffff81000000 T _text\nffffffff81000100 T first\nffffffff81000200 t second\nffffffffc0000000 t modfn\t[mod]\n")
            .expect("kallsyms");
        let mut dsos = Dsos::default();
        let host = dsos.findnew(KERNEL_DSO_NAME.as_bytes(), DsoKind::Kernel);
        let guest = dsos.findnew(b"[guest.kernel.kallsyms]", DsoKind::Kernel);
        let mut s = Symbolizer::new(SymbolConfig { kallsyms: Some(path), ..SymbolConfig::perf() });
        let names = |d: &mut ShippedDso| {
            [0xffff_ffff_8100_0150u64, 0xffff_ffff_8100_0250].map(|ip| d.loaded.find(ip).map(|s| s.0))
        };
        let mut a = s.load_symbols(&dsos, host, None);
        let mut b = s.load_symbols(&dsos, guest, None);
        let want = [Some(0xffff_ffff_8100_0100), Some(0xffff_ffff_8100_0200)];
        assert_eq!(names(&mut a), want);
        assert_eq!(names(&mut b), want);
        assert!(s.kernel_taken, "the second table moved too");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn perf_map_names() {
        assert!(is_perf_pid_map_name(b"/tmp/perf-123.map"));
        assert!(!is_perf_pid_map_name(b"/tmp/perf-.map"));
        // sscanf("/tmp/perf-%d.map") checks nothing after the number.
        assert!(is_perf_pid_map_name(b"/tmp/perf-12x.map"));
        assert!(!is_perf_pid_map_name(b"/usr/lib/libc.so.6"));
    }
}
