//! The DSO table: every object file (or pseudo-file) a map points to, by
//! the name perf prints for it.
//!
//! Names are bytes, as the MMAP/MMAP2 record holds them: a path need not
//! be UTF-8, and perf prints it, opens it and compares it as the bytes it
//! is. A name becomes a file path only through [`name_path`] (the bytes
//! as an `OsStr`), never through a lossy conversion.

use std::collections::HashMap;
use std::rc::Rc;

use super::maps::DsoId;

/// What kind of object a DSO name denotes (perf's `is_anon_memory`,
/// `is_no_dso_memory`, `is_vdso_map`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DsoKind {
    /// A file on disk.
    File,
    /// `[kernel.kallsyms]`.
    Kernel,
    /// A kernel module or another kernel-side map.
    KernelModule,
    /// `[vdso]` and its 32-bit siblings.
    Vdso,
    /// Anonymous memory: `//anon`, `[anon:...]`, `/dev/zero`, `/anon_hugepage`.
    Anon,
    /// Memory no file backs: `[stack...]`, `[heap]`, `/SYSV...`.
    NoDso,
    /// Other bracketed pseudo-files (`[vsyscall]`, `[uprobes]`, ...).
    Pseudo,
    /// Kernel text announced by a KSYMBOL record (a JIT-compiled BPF
    /// program, a trampoline): no file holds it; its one symbol, named
    /// like the DSO, covers the record's length from the map's start.
    Ksymbol,
}

/// A DSO's name: the bytes of the record, shared.
pub type DsoName = Rc<[u8]>;

/// A DSO name (or any path bytes from a record) as a path to open: the
/// bytes themselves, no conversion (Unix paths are bytes).
pub fn name_path(name: &[u8]) -> &std::path::Path {
    use std::os::unix::ffi::OsStrExt;
    std::path::Path::new(std::ffi::OsStr::from_bytes(name))
}

/// Classifies a mapping's file name as perf does.
pub fn classify(name: &[u8]) -> DsoKind {
    if name == b"//anon" || name.starts_with(b"[anon:") || name.starts_with(b"/dev/zero") || name.starts_with(b"/anon_hugepage") {
        DsoKind::Anon
    } else if name.starts_with(b"[stack") || name.starts_with(b"/SYSV") || name == b"[heap]" {
        DsoKind::NoDso
    } else if matches!(name, b"[vdso]" | b"[vdso32]" | b"[vdsox32]") {
        DsoKind::Vdso
    } else if name.starts_with(b"[") {
        DsoKind::Pseudo
    } else {
        DsoKind::File
    }
}

/// perf's `perf_pid_map_tid`: the tid in a `/tmp/perf-TID.map` name, the
/// map file a JIT writes for its anonymous code. perf matches the name with
/// `sscanf(name, "/tmp/perf-%d.map", &tid) == 1`, so only the prefix and a
/// number count: blanks and a sign may come before the digits, and nothing
/// after them is checked (`/tmp/perf-12x.map` is tid 12's, `/tmp/perf-.map`
/// no one's). The number is read as `strtol` reads it (saturating) and cut
/// to an `int`.
pub fn perf_pid_map_tid(name: &[u8]) -> Option<i32> {
    let rest = name.strip_prefix(b"/tmp/perf-")?;
    let mut i = rest.iter().take_while(|&&b| matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')).count();
    let negative = rest.get(i) == Some(&b'-');
    if matches!(rest.get(i), Some(b'+' | b'-')) {
        i += 1;
    }
    let digits = rest[i..].iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    let mut v: i64 = 0;
    for &d in &rest[i..i + digits] {
        let d = i64::from(d - b'0');
        v = if negative { v.saturating_mul(10).saturating_sub(d) } else { v.saturating_mul(10).saturating_add(d) };
    }
    Some(v as i32)
}

/// perf's `dso__set_basename`: the short name of a DSO, which perf prints
/// in `dso[addr]` source-line fallbacks and matches `--dsos` against. A
/// JIT map (`/tmp/perf-TID.map`) is `[JIT] tid TID`; the kernel keeps its
/// long name; any other file its base name.
pub fn short_name(long: &[u8], kind: DsoKind) -> std::borrow::Cow<'_, [u8]> {
    if kind == DsoKind::Kernel {
        return long.into();
    }
    match perf_pid_map_tid(long) {
        Some(tid) => format!("[JIT] tid {tid}").into_bytes().into(),
        None => long.rsplit(|&b| b == b'/').next().unwrap_or(long).into(),
    }
}

#[derive(Debug, Clone)]
pub struct Dso {
    /// The long name: the path as recorded, or a bracketed pseudo-name.
    pub name: DsoName,
    pub kind: DsoKind,
    /// From an MMAP2 record or the BUILD_ID table.
    pub build_id: Option<Vec<u8>>,
    /// The kernel's relocation reference symbol (`_text` at the address the
    /// kernel MMAP record gives as pgoff), used to shift kallsyms addresses.
    pub ref_reloc: Option<(Rc<str>, u64)>,
    /// [`DsoKind::Ksymbol`]: the length of its symbol.
    pub ksym_len: u64,
}

#[derive(Debug, Default)]
pub struct Dsos {
    list: Vec<Dso>,
    by_name: HashMap<DsoName, DsoId>,
    /// The DSOs added or changed, in order: copies of the table kept
    /// elsewhere follow it, each with its own position in it.
    journal: Vec<DsoId>,
}

/// A DSO entry as plain data, to bring a copy of the table up to date.
#[derive(Debug, Clone)]
pub struct DsoUpdate {
    pub id: DsoId,
    pub name: Box<[u8]>,
    pub kind: DsoKind,
    pub build_id: Option<Vec<u8>>,
    pub ref_reloc: Option<(String, u64)>,
    pub ksym_len: u64,
}

impl Dsos {
    pub(crate) fn findnew(&mut self, name: &[u8], kind: DsoKind) -> DsoId {
        if let Some(&id) = self.by_name.get(name) {
            return id;
        }
        self.push(name, kind, 0)
    }

    /// A new entry; the name finds it unless an older entry has the name.
    fn push(&mut self, name: &[u8], kind: DsoKind, ksym_len: u64) -> DsoId {
        let id = self.list.len() as DsoId;
        let name: DsoName = name.into();
        self.list.push(Dso { name: name.clone(), kind, build_id: None, ref_reloc: None, ksym_len });
        self.by_name.entry(name).or_insert(id);
        self.journal.push(id);
        id
    }

    /// The DSO of a KSYMBOL record's symbol. perf makes a new one for
    /// every record that maps new text (`machine__process_ksymbol_register`);
    /// here one of the same name and length is shared, which prints the
    /// same.
    pub(crate) fn ksymbol(&mut self, name: &[u8], len: u64) -> DsoId {
        match self.by_name.get(name).map(|&id| (id, &self.list[id as usize])) {
            Some((id, d)) if d.kind == DsoKind::Ksymbol && d.ksym_len == len => id,
            _ => self.push(name, DsoKind::Ksymbol, len),
        }
    }

    /// How many additions and changes the table has seen: a copy that has
    /// applied the updates up to here is current.
    #[inline]
    pub(crate) fn journal_len(&self) -> usize {
        self.journal.len()
    }

    /// The entries added or changed since the journal was `from` long, as
    /// they are now.
    pub(crate) fn updates_since(&self, from: usize) -> Vec<DsoUpdate> {
        let mut ids = self.journal.get(from..).unwrap_or_default().to_vec();
        ids.sort_unstable();
        ids.dedup();
        ids.into_iter()
            .map(|id| {
                let d = &self.list[id as usize];
                DsoUpdate {
                    id,
                    name: d.name.as_ref().into(),
                    kind: d.kind,
                    build_id: d.build_id.clone(),
                    ref_reloc: d.ref_reloc.as_ref().map(|(n, a)| (n.to_string(), *a)),
                    ksym_len: d.ksym_len,
                }
            })
            .collect()
    }

    /// Applies an update taken from another table (entries arrive in id
    /// order, so a new one is always the next id).
    pub(crate) fn apply(&mut self, u: DsoUpdate) {
        let id = if (u.id as usize) < self.list.len() { u.id } else { self.push(&u.name, u.kind, u.ksym_len) };
        let d = &mut self.list[id as usize];
        d.build_id = u.build_id;
        d.ref_reloc = u.ref_reloc.map(|(n, a)| (n.into(), a));
    }

    pub fn find(&self, name: &[u8]) -> Option<DsoId> {
        self.by_name.get(name).copied()
    }

    pub fn get(&self, id: DsoId) -> &Dso {
        &self.list[id as usize]
    }

    pub(crate) fn set_build_id(&mut self, id: DsoId, build_id: Vec<u8>) {
        let d = &mut self.list[id as usize];
        if d.build_id.as_deref() != Some(&build_id[..]) {
            d.build_id = Some(build_id);
            self.journal.push(id);
        }
    }

    pub(crate) fn set_ref_reloc(&mut self, id: DsoId, name: &str, addr: u64) {
        self.list[id as usize].ref_reloc = Some((name.into(), addr));
        self.journal.push(id);
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_like_perf() {
        assert_eq!(classify(b"//anon"), DsoKind::Anon);
        assert_eq!(classify(b"[anon:rust]"), DsoKind::Anon);
        assert_eq!(classify(b"[stack]"), DsoKind::NoDso);
        assert_eq!(classify(b"[heap]"), DsoKind::NoDso);
        assert_eq!(classify(b"[vdso]"), DsoKind::Vdso);
        assert_eq!(classify(b"[vsyscall]"), DsoKind::Pseudo);
        assert_eq!(classify(b"/usr/lib/libc.so.6"), DsoKind::File);
        assert_eq!(classify(b"/tmp/byte\xffwork\xe9"), DsoKind::File);
    }

    #[test]
    fn jit_maps_are_named_as_perf_reads_them() {
        assert_eq!(perf_pid_map_tid(b"/tmp/perf-123.map"), Some(123));
        assert_eq!(perf_pid_map_tid(b"/tmp/perf-12x.map"), Some(12));
        assert_eq!(perf_pid_map_tid(b"/tmp/perf- -7.map"), Some(-7));
        assert_eq!(perf_pid_map_tid(b"/tmp/perf-99999999999999999999.map"), Some(-1));
        assert_eq!(perf_pid_map_tid(b"/tmp/perf-.map"), None);
        assert_eq!(perf_pid_map_tid(b"/tmp/perf-x1.map"), None);
        assert_eq!(perf_pid_map_tid(b"/tmp/perf-7\xff.map"), Some(7));
        assert_eq!(perf_pid_map_tid(b"/usr/lib/libc.so.6"), None);
        assert_eq!(&*short_name(b"/tmp/perf-4242.map", DsoKind::Anon), b"[JIT] tid 4242");
        assert_eq!(&*short_name(b"/usr/lib/libc.so.6", DsoKind::File), b"libc.so.6");
        assert_eq!(&*short_name(b"/tmp/d\xfe/byte\xffwork\xe9", DsoKind::File), b"byte\xffwork\xe9");
        assert_eq!(&*short_name(b"[kernel.kallsyms]", DsoKind::Kernel), b"[kernel.kallsyms]");
        assert_eq!(&*short_name(b"/boot/vmlinux", DsoKind::Kernel), b"/boot/vmlinux");
    }

    #[test]
    fn one_entry_per_name() {
        let mut d = Dsos::default();
        let a = d.findnew(b"/a", DsoKind::File);
        assert_eq!(d.findnew(b"/a", DsoKind::File), a);
        assert_ne!(d.findnew(b"/b", DsoKind::File), a);
        // Two names that one lossy conversion would make equal stay apart.
        let x = d.findnew(b"/x\xff", DsoKind::File);
        assert_ne!(d.findnew(b"/x\xfe", DsoKind::File), x);
        assert_eq!(d.find(b"/x\xff"), Some(x));
    }
}
