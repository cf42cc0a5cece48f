//! Finding and reading the symbols of a user-space DSO the way perf's
//! `dso__load` does: candidate files in `binary_type_symtab[]` order
//! (debuglink, build-id cache, distro debug directories, the file itself,
//! ...), each rejected on a build-id mismatch; the first with `.symtab`
//! gives the symbols, the first with `.dynsym` is the "runtime" image whose
//! program headers turn symbol values into file offsets; `.symtab` and
//! `.dynsym` both loaded (`dso__load_sym`), then the PLT synthesized.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::elf::{self, Elf, Sym as ElfSym};
use super::ktable::KernelTable;
use super::symtab::{Sym, SymTab};

/// Where to look.
pub struct Search<'a> {
    pub symfs: Option<&'a Path>,
    /// `--symfs DIR,flat`: only the base name of a path is looked up.
    pub flat: bool,
    /// The build-id cache (`<symfs>/.debug` when a symfs is given).
    pub buildid_dir: Option<&'a Path>,
    pub demangle: bool,
}

impl Search<'_> {
    /// perf's `__symbol__join_symfs`: `symfs + "/" + path` (a symfs of `/`
    /// counts as none), or with the flat layout `symfs + "/" +
    /// basename(path)`. `path` is the DSO's name as recorded: bytes, not
    /// necessarily UTF-8, joined as they are.
    pub fn join(&self, path: &[u8]) -> PathBuf {
        match self.symfs {
            Some(s) if !s.as_os_str().is_empty() && s != Path::new("/") => {
                let mut p = s.as_os_str().to_owned();
                p.push("/");
                p.push(std::ffi::OsStr::from_bytes(if self.flat { basename(path) } else { path }));
                PathBuf::from(p)
            }
            _ => path_of(path.to_vec()),
        }
    }
}

/// Path bytes as a path (Unix paths are bytes: no conversion).
fn path_of(bytes: Vec<u8>) -> PathBuf {
    PathBuf::from(OsString::from_vec(bytes))
}

/// The parts one after the other, as one path's bytes.
fn concat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

/// glibc's `basename` (the GNU one perf gets with `_GNU_SOURCE`): what
/// follows the last `/`, empty for a path ending in one.
fn basename(path: &[u8]) -> &[u8] {
    path.rsplit(|&b| b == b'/').next().unwrap_or(path)
}

/// The result of loading a DSO.
#[derive(Debug, Default, Clone)]
pub struct Loaded {
    pub syms: SymTab,
    /// The kernel's symbols from kallsyms, in their own layout (`syms`
    /// is empty then); see [`Loaded::find`].
    pub kallsyms: Option<KernelTable>,
    /// `dso->adjust_symbols`: symbol values are file offsets.
    pub adjust_symbols: bool,
    /// `.text` `sh_addr - sh_offset` of the runtime image.
    pub text_offset: u64,
    /// The file the symbols came from (perf's `symsrc_filename`, set only
    /// for a file with `.symtab`); addr2line runs on it.
    pub symsrc: Option<PathBuf>,
    /// perf's `dso__load` failed after inserting symbols (a symbol table it
    /// stopped reading midway). The DSO is still marked loaded, so the
    /// symbols stay; only the lookup that triggered the load finds nothing.
    pub failed_midway: bool,
    /// The kernel map as a vmlinux's `.text` sets it (see [`KernelText`]);
    /// `None` for every other load.
    pub kernel_text: Option<KernelText>,
    /// The symbols came from a 32-bit ELF file (perf's `dso->is_64_bit`,
    /// set from the symbol source by `dso__load_sym`; true until then).
    pub is_32_bit: bool,
}

impl Loaded {
    /// The symbol holding `ip` (perf's `symbols__find` on the DSO's
    /// symbols): its start, (exclusive) end and name.
    pub fn find(&mut self, ip: u64) -> Option<(u64, u64, std::sync::Arc<str>)> {
        if let Some(k) = &mut self.kallsyms {
            let i = k.find(ip)?;
            let (start, end) = k.bounds(i);
            return Some((start, end, k.name(i)));
        }
        let id = self.syms.find_id(ip)?;
        let s = self.syms.get(id);
        Some((s.start, s.end, self.syms.name(id)))
    }

    /// The first symbol's start and the last one's end, in address order.
    pub fn span(&mut self) -> Option<(u64, u64)> {
        if let Some(k) = &mut self.kallsyms {
            return k.span();
        }
        Some((self.syms.first()?.start, self.syms.last()?.end))
    }

    pub fn has_symbols(&self) -> bool {
        self.kallsyms.as_ref().map_or(!self.syms.is_empty(), |k| !k.is_empty())
    }
}

/// Where a vmlinux puts the kernel map (perf's remap of the kernel map in
/// `dso__process_kernel_symbol`): `.text`'s address moved by the boot
/// relocation, its size, and its file offset, to which the map's
/// addresses now translate (symbol values are file offsets then).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelText {
    pub start: u64,
    /// Exclusive.
    pub end: u64,
    pub pgoff: u64,
}

/// perf's `dso__build_id_equal`.
pub fn build_id_equal(dso_bid: &[u8], file_bid: &[u8]) -> bool {
    if dso_bid.len() > file_bid.len() && dso_bid.len() == 20 {
        return dso_bid.starts_with(file_bid) && dso_bid[file_bid.len()..].iter().all(|&b| b == 0);
    }
    dso_bid == file_bid
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The build-id cache entry for a build-id: `<dir>/.build-id/xx/rest`, a
/// file (old layout) or a directory holding `elf`/`debug`/`vdso`.
fn build_id_cache_path(dir: &Path, bid: &[u8], basename: &str) -> Option<PathBuf> {
    if bid.is_empty() {
        return None;
    }
    let h = hex(bid);
    let link = dir.join(".build-id").join(&h[..2]).join(&h[2..]);
    if elf::is_regular_file(&link) {
        return Some(link);
    }
    Some(link.join(basename))
}

/// The candidate file names, in perf's order.
fn candidates(long_name: &[u8], bid: Option<&[u8]>, is_vdso: bool, search: &Search<'_>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    // DSO_BINARY_TYPE__DEBUGLINK (the debuglink name is bytes too)
    let full = search.join(long_name);
    if elf::is_regular_file(&full)
        && let Some(link) = Elf::open(&full).and_then(|e| e.debuglink()) {
            let full_b = full.as_os_str().as_bytes();
            let dir = full_b.iter().rposition(|&b| b == b'/').map_or(&b""[..], |p| &full_b[..p]);
            let link = &link[..];
            for cand in [link.to_vec(), concat(&[dir, b"/", link]), concat(&[dir, b"/.debug/", link]), concat(&[b"/usr/lib/debug", dir, b"/", link])] {
                let p = path_of(cand);
                if elf::is_regular_file(&p) {
                    out.push(p);
                    break;
                }
            }
        }
    // BUILD_ID_CACHE, BUILD_ID_CACHE_DEBUGINFO
    if let (Some(dir), Some(bid)) = (search.buildid_dir, bid) {
        let base = if is_vdso { "vdso" } else { "elf" };
        out.extend(build_id_cache_path(dir, bid, base));
        out.extend(build_id_cache_path(dir, bid, "debug"));
    }
    // FEDORA_DEBUGINFO, UBUNTU_DEBUGINFO
    out.push(search.join(&concat(&[b"/usr/lib/debug", long_name, b".debug"])));
    out.push(search.join(&concat(&[b"/usr/lib/debug", long_name])));
    // BUILDID_DEBUGINFO (an empty build-id, as a damaged file can carry,
    // names no file)
    if let Some(bid) = bid.filter(|b| !b.is_empty()) {
        let h = hex(bid);
        out.push(search.join(format!("/usr/lib/debug/.build-id/{}/{}.debug", &h[..2], &h[2..]).as_bytes()));
    }
    // SYSTEM_PATH_DSO
    out.push(full);
    // OPENEMBEDDED_DEBUGINFO: <dir>/.debug/<base>
    let (dir, base) = match long_name.iter().rposition(|&b| b == b'/') {
        Some(p) => (&long_name[..p], &long_name[p..]),
        None => (&b""[..], long_name),
    };
    out.push(search.join(&concat(&[dir, b"/.debug", base])));
    // MIXEDUP_UBUNTU_DEBUGINFO
    if let Some(rest) = long_name.strip_prefix(b"/usr/lib/") {
        out.push(search.join(&concat(&[b"/usr/lib/debug/lib/", rest])));
    }
    out
}

/// An opened candidate (perf's `struct symsrc`).
struct SymSrc {
    path: PathBuf,
    elf: Elf,
    symtab: Option<usize>,
    dynsym: Option<usize>,
}

fn symsrc_init(path: &Path, bid: Option<&[u8]>) -> Option<SymSrc> {
    let elf = Elf::open(path)?;
    if let Some(bid) = bid {
        let file_bid = elf.build_id()?;
        if !build_id_equal(bid, &file_bid) {
            return None;
        }
    }
    let symtab = elf.section_by_name(".symtab").filter(|(_, s)| s.sh_type == elf::SHT_SYMTAB).map(|(i, _)| i);
    let dynsym = elf.section_by_name(".dynsym").filter(|(_, s)| s.sh_type == elf::SHT_DYNSYM).map(|(i, _)| i);
    Some(SymSrc { path: path.to_path_buf(), elf, symtab, dynsym })
}

/// The files `dso__load` chooses for a user-space file DSO: the first
/// candidate with `.symtab` (the symbols) and the first with `.dynsym` (the
/// runtime image), either standing in for the other when only one was
/// found.
struct Chosen {
    files: Option<(Rc<SymSrc>, Rc<SymSrc>)>,
}

fn choose(long_name: &[u8], bid: Option<&[u8]>, is_vdso: bool, search: &Search<'_>) -> Chosen {
    let mut bid: Option<Vec<u8>> = bid.map(<[u8]>::to_vec);
    // "Read the build id if possible" (perf checks the path outside the
    // symfs; pstitch also accepts the symfs copy, see NOTES.md).
    if bid.is_none() {
        let full = search.join(long_name);
        if elf::is_regular_file(Path::new(std::ffi::OsStr::from_bytes(long_name))) || elf::is_regular_file(&full) {
            bid = Elf::open(&full).and_then(|e| e.build_id());
        }
    }
    let mut syms_ss: Option<Rc<SymSrc>> = None;
    let mut runtime_ss: Option<Rc<SymSrc>> = None;
    for cand in candidates(long_name, bid.as_deref(), is_vdso, search) {
        if !elf::is_regular_file(&cand) {
            continue;
        }
        let Some(ss) = symsrc_init(&cand, bid.as_deref()) else { continue };
        let ss = Rc::new(ss);
        let mut used = false;
        if syms_ss.is_none() && ss.symtab.is_some() {
            syms_ss = Some(ss.clone());
            used = true;
        }
        if runtime_ss.is_none() && ss.dynsym.is_some() {
            runtime_ss = Some(ss.clone());
            used = true;
        }
        if used && syms_ss.is_some() && runtime_ss.is_some() {
            break;
        }
    }
    let files = match (syms_ss, runtime_ss) {
        (None, None) => None,
        (Some(s), None) => Some((s.clone(), s)),
        (None, Some(r)) => Some((r.clone(), r)),
        (Some(s), Some(r)) => Some((s, r)),
    };
    Chosen { files }
}

/// perf's `dso__load` for a user-space file DSO.
pub fn load_user_dso(long_name: &[u8], bid: Option<&[u8]>, is_vdso: bool, search: &Search<'_>) -> Loaded {
    let chosen = choose(long_name, bid, is_vdso, search);
    let mut loaded = Loaded::default();
    let Some((syms_ss, runtime_ss)) = chosen.files else { return loaded };
    if syms_ss.symtab.is_some() {
        loaded.symsrc = Some(syms_ss.path.clone());
    }
    loaded.is_32_bit = !syms_ss.elf.is_64;
    let loaded = load_tables(loaded, &syms_ss, &runtime_ss, search);
    // The symbol table keeps the file mapped for its names.
    syms_ss.elf.release_pages();
    runtime_ss.elf.release_pages();
    loaded
}

/// The file `dso__load` would take a user-space DSO's symbols from (perf's
/// `symsrc_filename`: the first candidate with `.symtab`), without loading
/// them.
pub fn symsrc_path(long_name: &[u8], bid: Option<&[u8]>, is_vdso: bool, search: &Search<'_>) -> Option<PathBuf> {
    let (syms_ss, _) = choose(long_name, bid, is_vdso, search).files?;
    syms_ss.symtab.is_some().then(|| syms_ss.path.clone())
}

/// perf's `dso__build_id_filename` (not the debug file): the DSO's entry in
/// the build-id cache, `<dir>/.build-id/xx/rest[/elf|/vdso]`.
pub fn build_id_cache_file(dir: &Path, bid: &[u8], is_vdso: bool) -> Option<PathBuf> {
    build_id_cache_path(dir, bid, if is_vdso { "vdso" } else { "elf" })
}

/// The symbol tables of a DSO, from the files chosen for it.
fn load_tables(mut loaded: Loaded, syms_ss: &SymSrc, runtime_ss: &SymSrc, search: &Search<'_>) -> Loaded {
    let mut nr = 0;
    if let Some(idx) = syms_ss.symtab {
        match load_sym_table(&mut loaded, syms_ss, runtime_ss, idx, search) {
            TableLoad::Done(n) => nr += n,
            TableLoad::Failed => return failed(loaded),
            TableLoad::Partial => return failed_midway(loaded),
        }
    } else {
        // A user DSO without .symtab still gets adjust_symbols/text_offset
        // from its .dynsym pass below.
    }
    if let Some(idx) = syms_ss.dynsym {
        match load_sym_table(&mut loaded, syms_ss, runtime_ss, idx, search) {
            TableLoad::Done(n) => nr += n,
            TableLoad::Failed => return failed(loaded),
            TableLoad::Partial => return failed_midway(loaded),
        }
    }
    if nr > 0 {
        synthesize_plt(&mut loaded, &runtime_ss.elf, runtime_ss.dynsym, runtime_ss.symtab, search);
    }
    loaded
}

fn failed_midway(mut loaded: Loaded) -> Loaded {
    loaded.failed_midway = true;
    loaded
}

/// A load that failed half-way: perf reports no symbols for it.
fn failed(mut loaded: Loaded) -> Loaded {
    loaded.syms = SymTab::default();
    loaded
}

/// A symbol named `raw` in the object file, its name demangled (when
/// asked for) once it is needed; `plt`: the PLT entry for it.
pub(super) fn named_sym(start: u64, len: u64, binding: u8, typ: u8, raw: &[u8], plt: bool, search: &Search<'_>) -> Sym {
    let raw = crate::symbols::symtab::shared_str(raw);
    if search.demangle {
        Sym::mangled(start, len, binding, typ, raw, plt)
    } else if plt {
        Sym::new(start, len, binding, typ, format!("{raw}@plt").into())
    } else {
        Sym::new(start, len, binding, typ, raw)
    }
}

/// perf's `dso__load_sym_internal` for one table of `syms_ss`; `None` on
/// the errors that make perf give up on the DSO.
/// How reading one symbol table ended.
enum TableLoad {
    Done(usize),
    /// perf gave up before inserting anything.
    Failed,
    /// perf gave up midway (`goto out_elf_end`, e.g. at a symbol whose
    /// section index does not exist, as BOLT leaves in Rust toolchain
    /// libraries): what it inserted stays, without the end and duplicate
    /// fixups, and nothing else is loaded.
    Partial,
}

fn load_sym_table(loaded: &mut Loaded, syms_ss: &SymSrc, runtime_ss: &SymSrc, sec_idx: usize, search: &Search<'_>) -> TableLoad {
    match read_sym_table(loaded, syms_ss, runtime_ss, sec_idx, search) {
        Ok(n) => TableLoad::Done(n),
        Err(None) => TableLoad::Failed,
        Err(Some(partial)) => {
            loaded.syms.insert_all(partial);
            TableLoad::Partial
        }
    }
}

/// The symbols of one table, or `Err(Some(read so far))` when perf would
/// stop midway, `Err(None)` when it would stop before the first symbol.
fn read_sym_table(loaded: &mut Loaded, syms_ss: &SymSrc, runtime_ss: &SymSrc, sec_idx: usize, search: &Search<'_>) -> Result<usize, Option<Vec<Sym>>> {
    let elf = &syms_ss.elf;
    let run = &runtime_ss.elf;
    if let Some((_, t)) = run.section_by_name(".text") {
        loaded.text_offset = t.sh_addr.wrapping_sub(t.sh_offset);
    }
    // Symbol table, string table and both section name tables must be there.
    let sec = elf.sections.get(sec_idx).ok_or(None)?;
    elf.raw_data(sec).ok_or(None)?;
    elf.sections.get(sec.sh_link as usize).ok_or(None)?;
    if !elf.names_ok || !run.names_ok {
        return Err(None);
    }
    loaded.adjust_symbols = true;
    let strtab = elf.linked_strtab(sec_idx).and_then(|t| loaded.syms.use_strtab(t));
    // Room for every entry: pages of capacity never written cost nothing,
    // while growing by copying writes the table twice over.
    let mut new = Vec::with_capacity(elf.symbol_iter(sec_idx).size_hint().0);
    for sym in elf.symbol_iter(sec_idx) {
        let typ = sym.typ();
        let Some(is_label) = kept_symbol(&sym) else { continue };
        let Some(mut shdr) = elf.sections.get(sym.st_shndx as usize) else {
            return Err(Some(new));
        };
        if shdr.sh_flags & elf::SHF_ALLOC == 0 {
            continue;
        }
        if shdr.sh_type == elf::SHT_NOBITS {
            let Some(r) = run.sections.get(sym.st_shndx as usize) else {
                return Err(Some(new));
            };
            shdr = r;
        }
        if is_label && !label_section(shdr) {
            continue;
        }
        let value = adjust_value(run, &sym, shdr.sh_addr, shdr.sh_offset);
        new.push(match strtab {
            Some(t) => Sym::in_strtab(value, sym.st_size, sym.bind(), typ, (t, sym.st_name), search.demangle),
            None => named_sym(value, sym.st_size, sym.bind(), typ, sym.name(), false, search),
        });
    }
    let nr = new.len();
    loaded.syms.insert_all(new);
    if nr > 0 {
        loaded.syms.fixup_end(false);
        loaded.syms.fixup_duplicate();
    }
    Ok(nr)
}

/// Whether perf's `dso__load_sym_internal` takes `sym` at all: a named,
/// defined function (`elf_sym__filter`) or object, or a label (a visible
/// `STT_NOTYPE` symbol, then only in a text or data section: see
/// [`label_section`]); never an absolute symbol. `Some(is_label)` if so.
pub(super) fn kept_symbol(sym: &ElfSym<'_>) -> Option<bool> {
    let typ = sym.typ();
    let is_label = typ == elf::STT_NOTYPE
        && sym.st_name != 0
        && sym.st_shndx != elf::SHN_UNDEF
        && sym.st_shndx != elf::SHN_ABS
        && sym.visibility() != elf::STV_HIDDEN
        && sym.visibility() != elf::STV_INTERNAL;
    let is_func = (typ == elf::STT_FUNC || typ == elf::STT_GNU_IFUNC) && sym.st_name != 0 && sym.st_shndx != elf::SHN_UNDEF;
    let is_object = typ == elf::STT_OBJECT && sym.st_name != 0 && sym.st_shndx != elf::SHN_UNDEF;
    ((is_label || is_func || is_object) && sym.st_shndx != elf::SHN_ABS).then_some(is_label)
}

/// perf's `elf_sec__filter` for labels: the section's name has "text" or
/// "data" in it.
pub(super) fn label_section(shdr: &elf::Section) -> bool {
    let has = |w: &[u8]| shdr.name.windows(w.len()).any(|x| x == w);
    has(b"text") || has(b"data")
}

fn adjust_value(run: &Elf, sym: &ElfSym<'_>, sh_addr: u64, sh_offset: u64) -> u64 {
    match run.load_segment_for(sym.st_value) {
        Some(p) => sym.st_value.wrapping_sub(p.p_vaddr.wrapping_sub(p.p_offset)),
        None => sym.st_value.wrapping_sub(sh_addr.wrapping_sub(sh_offset)),
    }
}

/// perf's `get_plt_sizes` for x86 (other machines: the section entry size).
fn plt_sizes(elf: &Elf, s: &elf::Section) -> Option<(u64, u64)> {
    let (header, entry) = if elf.e_machine == elf::EM_X86_64 || elf.e_machine == elf::EM_386 {
        let mut e = s.sh_entsize;
        if e != 8 && e != 16 {
            e = if s.sh_addralign == 8 { 8 } else { 16 };
        }
        (e, e)
    } else {
        (s.sh_entsize, s.sh_entsize)
    };
    (entry != 0).then_some((header, entry))
}

fn is_x86(elf: &Elf) -> bool {
    elf.e_machine == elf::EM_X86_64 || elf.e_machine == elf::EM_386
}

/// perf's `dso__synthesize_plt_symbols` (with `.plt.got` and `.plt.sec`).
fn synthesize_plt(loaded: &mut Loaded, elf: &Elf, dynsym_idx: Option<usize>, symtab_idx: Option<usize>, search: &Search<'_>) {
    let Some((_, plt)) = elf.section_by_name(".plt") else { return };
    let plt = plt.clone();
    if let Some(i) = loaded.syms.find_id(plt.sh_offset) {
        let f = loaded.syms.get_mut(i);
        if f.start < plt.sh_offset && f.end > plt.sh_offset {
            f.end = plt.sh_offset;
        }
    }
    let Some((header_size, mut entry_size)) = plt_sizes(elf, &plt) else { return };
    let plt_name: std::sync::Arc<str> = ".plt".into();
    loaded.syms.insert(Sym::new(plt.sh_offset, header_size, elf::STB_GLOBAL, elf::STT_FUNC, plt_name.clone()));
    let plt_sym_key = |t: &mut super::symtab::SymTab| t.position(|s| s.start == plt.sh_offset && s.plain_name().is_some_and(|n| std::sync::Arc::ptr_eq(n, &plt_name)));
    if is_x86(elf) && !synthesize_plt_got(loaded, elf, search) {
        return;
    }
    let (mut plt_offset, lazy) = match elf.section_by_name(".plt.sec").filter(|_| is_x86(elf)) {
        Some((_, sec)) => {
            let sec = sec.clone();
            let Some((_, e)) = plt_sizes(elf, &sec) else { return };
            entry_size = e;
            if let Some(i) = plt_sym_key(&mut loaded.syms) {
                loaded.syms.get_mut(i).end = plt.sh_offset.wrapping_add(plt.sh_size);
            }
            (sec.sh_offset, false)
        }
        None => (plt.sh_offset, true),
    };
    let Some((_, rel)) = elf.section_by_name(".rela.plt").or_else(|| elf.section_by_name(".rel.plt")) else { return };
    let rel = rel.clone();
    if rel.sh_type != elf::SHT_RELA && rel.sh_type != elf::SHT_REL {
        return;
    }
    if rel.sh_link == 0 {
        return;
    }
    let link = rel.sh_link as usize;
    let sym_sec = if Some(link) == dynsym_idx {
        dynsym_idx
    } else if Some(link) == symtab_idx {
        symtab_idx
    } else {
        return;
    };
    let Some(sym_sec) = sym_sec else { return };
    let syms = elf.symbols(sym_sec);
    let strtab_ok = elf
        .sections
        .get(elf.sections[sym_sec].sh_link as usize)
        .and_then(|s| elf.raw_data(s))
        .is_some_and(|d| !d.is_empty());
    if !strtab_ok || rel.sh_entsize == 0 {
        return;
    }
    let nr_entries = rel.sh_size / rel.sh_entsize;
    let mut relocs = elf.relocations(&rel);
    if lazy {
        if nr_entries.wrapping_mul(entry_size) == plt.sh_size {
            if let Some(i) = plt_sym_key(&mut loaded.syms) {
                loaded.syms.remove(i);
            }
        } else {
            plt_offset = plt_offset.wrapping_add(header_size);
        }
    }
    if is_x86(elf) {
        relocs.sort_by_key(|r| r.r_offset);
    }
    let is_rela = rel.sh_type == elf::SHT_RELA;
    for r in relocs.iter().take(nr_entries as usize) {
        let name = syms.get(r.r_sym as usize).map(|s| s.name()).unwrap_or(&[]);
        let sym = if !name.is_empty() {
            named_sym(plt_offset, entry_size, elf::STB_GLOBAL, elf::STT_FUNC, name, true, search)
        } else {
            let name = ifunc_name(loaded, elf, r, is_rela).unwrap_or_else(|| format!("offset_{:#x}@plt", plt_offset));
            Sym::new(plt_offset, entry_size, elf::STB_GLOBAL, elf::STT_FUNC, name.into())
        };
        loaded.syms.insert(sym);
        plt_offset = plt_offset.wrapping_add(entry_size);
    }
}

/// perf's `get_ifunc_name`: an IRELATIVE PLT slot is named after the IFUNC
/// symbol its addend points to.
fn ifunc_name(loaded: &mut Loaded, elf: &Elf, r: &elf::Reloc, is_rela: bool) -> Option<String> {
    if !(elf.e_machine == elf::EM_X86_64 && is_rela && r.r_type == elf::R_X86_64_IRELATIVE) {
        return None;
    }
    let addr = r.r_addend as u64;
    let p = elf.load_segment_for(addr)?;
    let addr = addr.wrapping_sub(p.p_vaddr.wrapping_sub(p.p_offset));
    let id = loaded.syms.find_id(addr)?;
    let sym = loaded.syms.get(id);
    if sym.start != addr || (sym.typ != elf::STT_GNU_IFUNC && !sym.ifunc_alias) {
        return None;
    }
    Some(format!("{}@plt", loaded.syms.name(id)))
}

/// perf's `dso__synthesize_plt_got_symbols`; false on the error that makes
/// perf stop synthesizing.
fn synthesize_plt_got(loaded: &mut Loaded, elf: &Elf, search: &Search<'_>) -> bool {
    let Some((_, got)) = elf.section_by_name(".plt.got") else { return true };
    let got = got.clone();
    if got.sh_entsize == 0 {
        return true;
    }
    let got_data = elf.raw_data(&got).unwrap_or(&[]);
    // get_rela_dyn_info: (r_offset, symbol) of .rela.dyn entries with a symbol.
    type Sorted<'a> = (Vec<(u64, u32)>, Vec<ElfSym<'a>>);
    let mut sorted: Option<Sorted<'_>> = None;
    if elf.e_machine == elf::EM_X86_64
        && let Some((_, rd)) = elf.section_by_name(".rela.dyn")
            && rd.sh_link != 0 && rd.sh_entsize != 0
                && let Some(dynsym) = elf.sections.get(rd.sh_link as usize) {
                    let ok = dynsym.sh_link != 0
                        && elf.raw_data(dynsym).is_some()
                        && elf.sections.get(dynsym.sh_link as usize).and_then(|s| elf.raw_data(s)).is_some()
                        && elf.raw_data(rd).is_some()
                        && !got_data.is_empty();
                    if ok {
                        let mut v: Vec<(u64, u32)> =
                            elf.relocations(rd).iter().filter(|r| r.r_sym != 0).map(|r| (r.r_offset, r.r_sym)).collect();
                        v.sort_by_key(|e| e.0);
                        sorted = Some((v, elf.symbols(rd.sh_link as usize)));
                    }
                }
    // perf reads each entry from the section data; do not run past it.
    let limit = got.sh_size.min(got_data.len() as u64);
    let mut i = 0u64;
    while i < limit {
        let start = got.sh_offset.wrapping_add(i);
        let mut sym = None;
        if let Some((v, dynsyms)) = &sorted {
            let disp = x86_64_plt_disp(got_data.get(i as usize..).unwrap_or(&[]));
            if disp != 0 {
                let target = start.wrapping_add(disp as u64);
                if let Ok(pos) = v.binary_search_by_key(&target, |e| e.0)
                    && let Some(s) = dynsyms.get(v[pos].1 as usize)
                    && !s.name().is_empty()
                {
                    sym = Some(named_sym(start, got.sh_entsize, elf::STB_GLOBAL, elf::STT_FUNC, s.name(), true, search));
                }
            }
        }
        let sym = sym.unwrap_or_else(|| Sym::new(start, got.sh_entsize, elf::STB_GLOBAL, elf::STT_FUNC, format!("offset_{start:#x}@plt").into()));
        loaded.syms.insert(sym);
        i += got.sh_entsize;
    }
    true
}

/// perf's `get_x86_64_plt_disp`: offset from the entry to the GOT slot of a
/// `jmp *disp32(%rip)` (after optional endbr64 and bnd prefixes).
fn x86_64_plt_disp(p: &[u8]) -> u32 {
    let mut n = 0;
    if p.starts_with(&[0xf3, 0x0f, 0x1e, 0xfa]) {
        n += 4;
    }
    if p.get(n) == Some(&0xf2) {
        n += 1;
    }
    if p.get(n) == Some(&0xff) && p.get(n + 1) == Some(&0x25) {
        n += 2;
        let Some(d) = p.get(n..n + 4) else { return 0 };
        let disp = u32::from_le_bytes([d[0], d[1], d[2], d[3]]);
        return (n as u32 + 4).wrapping_add(disp);
    }
    0
}

/// perf's `dso__load_perf_map`: `START SIZE name` lines (hex).
pub fn load_perf_map(path: &Path) -> SymTab {
    let mut t = SymTab::default();
    // Never a FIFO or a device: reading one could wait forever.
    let mut data = Vec::new();
    let Some(mut file) = elf::open_regular(path) else { return t };
    if std::io::Read::read_to_end(&mut file, &mut data).is_err() {
        return t;
    }
    let hex_prefix = |s: &[u8]| -> (u64, usize) {
        // strtoull(.., 16): optional whitespace, sign, 0x prefix.
        let mut i = 0;
        while i < s.len() && s[i].is_ascii_whitespace() {
            i += 1;
        }
        let mut j = i;
        if s.get(j) == Some(&b'0') && matches!(s.get(j + 1), Some(b'x') | Some(b'X')) && s.get(j + 2).is_some_and(u8::is_ascii_hexdigit) {
            j += 2;
        }
        let start = j;
        let mut v: u64 = 0;
        while let Some(d) = s.get(j).and_then(|c| (*c as char).to_digit(16)) {
            v = v.wrapping_mul(16).wrapping_add(d as u64);
            j += 1;
        }
        if j == start {
            return (0, 0);
        }
        (v, j)
    };
    let mut new = Vec::new();
    let mut lines: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
    // perf overwrites the last character of every line it reads, which is
    // the newline except on an unterminated last line.
    match lines.last() {
        Some([]) => {
            lines.pop();
        }
        Some(l) => {
            let n = lines.len();
            lines[n - 1] = &l[..l.len() - 1];
        }
        None => {}
    }
    for line in lines {
        let line_len = line.len();
        let (start, mut len) = hex_prefix(line);
        len += 1;
        if len + 2 >= line_len {
            continue;
        }
        let (size, l2) = hex_prefix(&line[len..]);
        len += l2 + 1;
        if len + 2 >= line_len {
            continue;
        }
        let name = String::from_utf8_lossy(&line[len..]);
        new.push(Sym::new(start, size, elf::STB_GLOBAL, elf::STT_FUNC, name.into()));
    }
    t.insert_all(new);
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symfs_join_like_perf() {
        let s = Search { symfs: Some(Path::new("/sym")), flat: false, buildid_dir: None, demangle: true };
        assert_eq!(s.join(b"/usr/lib/x"), PathBuf::from("/sym//usr/lib/x"));
        assert_eq!(s.join(b"[vdso]"), PathBuf::from("/sym/[vdso]"));
        let root = Search { symfs: Some(Path::new("/")), ..s };
        let flat = Search { flat: true, ..s };
        assert_eq!(flat.join(b"/usr/lib/libc.so.6"), Path::new("/sym/libc.so.6"));
        assert_eq!(root.join(b"/usr/lib/x"), PathBuf::from("/usr/lib/x"));
        // A name that is not UTF-8 is joined as its bytes.
        assert_eq!(s.join(b"/bin/byte\xffwork").as_os_str().as_bytes(), b"/sym//bin/byte\xffwork");
        assert_eq!(flat.join(b"/d\xfe/x\xe9").as_os_str().as_bytes(), b"/sym/x\xe9");
    }

    #[test]
    fn build_id_trailing_zeros() {
        let mut a = vec![1u8; 16];
        a.resize(20, 0);
        assert!(build_id_equal(&a, &[1u8; 16]));
        assert!(!build_id_equal(&[1u8; 20], &[1u8; 16]));
        assert!(build_id_equal(&[7u8; 20], &[7u8; 20]));
        assert!(!build_id_equal(&[7u8; 20], &[8u8; 20]));
    }

    #[test]
    fn plt_disp() {
        assert_eq!(x86_64_plt_disp(&[0xff, 0x25, 0x10, 0, 0, 0]), 6 + 0x10);
        assert_eq!(x86_64_plt_disp(&[0xf3, 0x0f, 0x1e, 0xfa, 0xf2, 0xff, 0x25, 1, 0, 0, 0]), 11 + 1);
        assert_eq!(x86_64_plt_disp(&[0x90]), 0);
    }

    #[test]
    fn perf_map_lines() {
        let dir = std::env::temp_dir().join(format!("pstitch-perfmap-{}", std::process::id()));
        std::fs::write(&dir, "1000 20 jitted_fn\n2000 8 other one\nbad\n").unwrap();
        let mut t = load_perf_map(&dir);
        std::fs::remove_file(&dir).ok();
        let v: Vec<_> = t.listing().into_iter().map(|(s, e, n)| (s, e, n.to_string())).collect();
        assert_eq!(v, vec![(0x1000, 0x1020, "jitted_fn".into()), (0x2000, 0x2008, "other one".into())]);
    }

    fn fixtures() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/symfs")
    }

    #[test]
    fn libc_symbols_come_from_the_build_id_debug_file() {
        // libc.so.6 has only .dynsym; its .gnu_debuglink names a file that
        // is nowhere perf looks, so the local symbols come from
        // /usr/lib/debug/.build-id/xx/yyyy.debug (found through the build-id
        // of the symfs copy when the perf.data has none).
        let symfs = fixtures();
        let search = Search { symfs: Some(&symfs), flat: false, buildid_dir: None, demangle: true };
        let mut l = load_user_dso(b"/usr/lib/x86_64-linux-gnu/libc.so.6", None, false, &search);
        let src = l.symsrc.as_ref().expect("symsrc").to_string_lossy().into_owned();
        assert!(src.ends_with("//usr/lib/debug/.build-id/93/ac61ec5a8eb1396f9fbd350e3169a558528a40.debug"), "{src}");
        let listing = l.syms.listing();
        let names: Vec<&str> = listing.iter().map(|(_, _, n)| &**n).collect();
        assert!(names.contains(&"msort_with_tmp.part.0"));
        assert!(names.contains(&"__GI___libc_write"));
        // IRELATIVE PLT slots are named after their IFUNC symbol.
        assert!(names.contains(&"memcpy@@GLIBC_2.14@plt"), "plt names");
        // A recorded build-id that matches no file: perf skips every
        // candidate and has no symbols.
        let l = load_user_dso(b"/usr/lib/x86_64-linux-gnu/libc.so.6", Some(&[0x11; 20]), false, &search);
        assert!(l.syms.is_empty() && l.symsrc.is_none());
    }

    #[test]
    fn executable_symbols_and_plt() {
        let symfs = fixtures();
        let search = Search { symfs: Some(&symfs), flat: false, buildid_dir: None, demangle: true };
        let mut l = load_user_dso(b"/tmp/pstitch-fixtures/bin/cppwork", None, false, &search);
        let all = l.syms.listing();
        let find = |n: &str| all.iter().find(|s| &*s.2 == n).cloned();
        assert!(find("sim::World::energy() const").is_some());
        assert!(find("memcmp@plt").is_some());
        let main = find("main").expect("main");
        // Symbols are file offsets (ET_DYN, p_vaddr == p_offset here).
        let id = l.syms.find_id(main.0 + 1).expect("a symbol at main+1");
        assert_eq!(&*l.syms.name(id), "main");
        let mut raw = load_user_dso(b"/tmp/pstitch-fixtures/bin/cppwork", None, false, &Search { demangle: false, ..search });
        assert!(raw.syms.listing().iter().any(|s| &*s.2 == "_ZNK3sim5World6energyEv"));
    }

    #[test]
    fn unreadable_files_give_no_symbols() {
        let dir = std::env::temp_dir().join(format!("pstitch-load-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("notelf"), b"hello world, not an ELF").unwrap();
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        std::fs::write(dir.join("trunc"), &exe[..exe.len() / 2]).unwrap();
        std::fs::write(dir.join("tiny"), &exe[..40]).unwrap();
        let search = Search { symfs: Some(&dir), flat: false, buildid_dir: None, demangle: true };
        for f in ["/notelf", "/trunc", "/tiny", "/missing"] {
            let l = load_user_dso(f.as_bytes(), None, false, &search);
            let _ = l.syms.len();
        }
        let l = load_user_dso(b"/notelf", None, false, &search);
        assert!(l.syms.is_empty() && l.symsrc.is_none());
        std::fs::remove_dir_all(&dir).ok();
    }

    /// Symbol tables and string tables with damaged entries (names past
    /// the table's end, odd sizes, section indexes, bindings) load, look up
    /// and name their symbols without panicking.
    #[test]
    fn damaged_symbol_tables_load() {
        let orig = std::fs::read(fixtures().join("tmp/pstitch-fixtures/bin/cppwork")).unwrap();
        let elf = Elf::parse(std::sync::Arc::new(perf_data::FileBytes::Owned(orig.clone()))).unwrap();
        // The byte ranges of .symtab, .strtab, .dynsym and .dynstr.
        let ranges: Vec<(usize, usize)> = [".symtab", ".strtab", ".dynsym", ".dynstr"]
            .iter()
            .filter_map(|n| elf.section_by_name(n).map(|(_, s)| (s.sh_offset as usize, s.sh_size as usize)))
            .collect();
        assert_eq!(ranges.len(), 4);
        let dir = std::env::temp_dir().join(format!("pstitch-damaged-syms-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let search = Search { symfs: Some(&dir), flat: false, buildid_dir: None, demangle: true };
        let mut rnd = crate::testing::rng(0x2545_f491_4f6c_dd1d);
        let mut named = 0;
        for round in 0..150 {
            let mut bytes = orig.clone();
            for _ in 0..1 + rnd(40) {
                let (off, len) = ranges[rnd(ranges.len() as u64) as usize];
                let i = off + rnd(len as u64) as usize;
                bytes[i] = match rnd(3) {
                    0 => 0xff,
                    1 => 0,
                    _ => rnd(256) as u8,
                };
            }
            let name = format!("/bin-{round}");
            std::fs::write(dir.join(&name[1..]), &bytes).unwrap();
            let mut l = load_user_dso(name.as_bytes(), None, false, &search);
            named += l.syms.listing().len();
            for ip in (0..0x4000).step_by(0x40) {
                if let Some(id) = l.syms.find_id(ip) {
                    let _ = l.syms.name(id);
                }
            }
            std::fs::remove_file(dir.join(&name[1..])).ok();
        }
        std::fs::remove_dir_all(&dir).ok();
        assert!(named > 0);
    }
}
