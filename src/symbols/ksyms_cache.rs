//! The kernel's symbol table as built from `/proc/kallsyms`, kept for the
//! rest of the boot, so that a later run maps it instead of having the
//! kernel print the file again.
//!
//! Why: the kernel prints `/proc/kallsyms` a page per `read` (a seq_file;
//! seeking formats every line before the offset too), about 120,000 lines
//! and 40-50 ms of kernel time, then pstitch parses them and builds the
//! table (10-15 ms, and some 4 MB kept for the run). On a small recording
//! that is half of the run. perf pays it on every run too.
//!
//! Why the stored table is the table the file would give: `/proc/kallsyms`
//! lists the kernel's own symbols first (compiled into the kernel image,
//! the same from boot to shutdown), then the symbols of modules, and the
//! ftrace, BPF and kprobe text, each line `name\t[owner]`; those come and
//! go. perf's table for the kernel map takes nothing from them: their
//! symbols go to module maps or are dropped, and the last kernel symbol
//! before them ends a page on (`roundup(start + 4096, 4096)`) just as the
//! last symbol of a file does (`roundup(start, 4096) + 4096`). So the
//! kernel's table depends on the boot, and on what the reader is allowed
//! to see (addresses shown or zeroed, by privilege and `kptr_restrict`),
//! which the first lines show. Hence:
//!
//! - key: the boot (`/proc/sys/kernel/random/boot_id`) and the first
//!   [`HEAD`] bytes the file gives this run (one cheap read);
//! - only a table built with no relocation is stored: the recording's
//!   reference symbol (`_text` or `_stext`) at the address kallsyms gives
//!   (a recording of this boot); the addresses of both are stored and a
//!   run uses the file only when its recording's reference matches;
//! - runs whose recordings have module maps read the file itself (the
//!   modules' symbols are not stored), as do runs with the cache off
//!   (`PSTITCH_CACHE=off`), and a table perf's tree must decide (a generic
//!   one, see [`super::ktable`]) is not stored.
//!
//! Where: `kallsyms` in the cache directory ([`super::a2l::cache::Dir`]),
//! one file, replaced whole (a temporary name, renamed) by a run that read
//! the file itself. The check reads the file through a small buffer
//! against its CRC, then maps the same open file: the arrays are used in
//! place, only the pages lookups touch are read.
//!
//! ```text
//!   "PSTITCH-KSYMS\0\0\0"  u32 version  u32 byte-order mark 0x01020304
//!   key:    bytes boot_id; bytes head
//!   refs:   u32 k, k x (bytes name, u8 found, u64 address)
//!   counts: u64 symbols n, u64 long ends, u64 own names, u64 text bytes
//!   own names: u32 m, m x (u32 index, bytes name)
//!   zero bytes up to ARRAYS
//!   ARRAYS: starts n x u64 | strides ceil(n/64) x u64 | lens n x u32 |
//!           names n x u32 | long ends (u64 index, u64 end) each |
//!           text, each part 8-byte aligned (zero bytes between)
//!   u32 CRC-32 (IEEE) of every byte before it
//! ```
//!
//! Header numbers little-endian ([`Out`]); the arrays in this machine's
//! byte order, which the mark says (a file from the other order is
//! ignored). Every count is a claim: the header is bounded by
//! [`ARRAYS`], the arrays by the file's size.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::a2l::cache::{Dir, In, Out, Pieces, write_atomically};
use super::a2l::sections_cache::{Rejected, Signed, read_checked_up_to};
use super::elf::{self, SectionBytes};
use super::kallsyms::function_start;
use super::ktable::{KernelTable, Parts};
use super::rbtree::NodeId;

const MAGIC: &[u8; 16] = b"PSTITCH-KSYMS\0\0\0";
/// Bumped whenever what is stored, or what it means, changes.
const VERSION: u32 = 1;
const BYTE_ORDER: u32 = 0x0102_0304;
/// Where the arrays start: the header must fit before.
const ARRAYS: u64 = 16 << 10;
/// The bytes of the live file compared with the stored ones.
const HEAD: usize = 4096;
/// No file is read past this size (a /proc/kallsyms gives 2-8 MB).
const MAX_FILE: u64 = 1 << 30;
/// The reference symbols perf relocates kallsyms by.
const REFS: [&str; 2] = ["_text", "_stext"];
/// The kernel's kallsyms file, the only one cached.
pub const PROC_KALLSYMS: &str = "/proc/kallsyms";

/// What this run sees: the boot, and the first bytes of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Live {
    boot_id: Vec<u8>,
    head: Vec<u8>,
}

impl Live {
    /// Reads them now; `None` where either cannot be read.
    pub fn read() -> Option<Live> {
        let boot_id = std::fs::read("/proc/sys/kernel/random/boot_id").ok()?;
        let head = read_start(Path::new(PROC_KALLSYMS), HEAD)?;
        Some(Live { boot_id, head })
    }
}

/// Up to `n` bytes from the start of `path` (of /proc/kallsyms, the
/// kernel gives a page a `read`, whole lines).
fn read_start(path: &Path, n: usize) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut head = Vec::with_capacity(n);
    std::fs::File::open(path).ok()?.take(n as u64).read_to_end(&mut head).ok()?;
    Some(head)
}

/// The addresses of the reference symbols in a kallsyms text, as perf
/// finds them (`kallsyms__get_function_start`).
pub fn refs(text: &[u8]) -> Vec<(String, Option<u64>)> {
    REFS.iter().map(|&name| (name.to_string(), function_start(text, name))).collect()
}

/// Whether a table whose reference symbols are at `refs` fits a
/// recording whose reference symbol is `ref_reloc` (none: any table).
pub fn fits(refs: &[(String, Option<u64>)], ref_reloc: Option<(&str, u64)>) -> bool {
    match ref_reloc {
        None => true,
        Some((name, addr)) => refs.iter().any(|(n, a)| n == name && *a == Some(addr)),
    }
}

/// The cache file.
#[derive(Debug, Clone)]
pub struct Place {
    path: PathBuf,
    stats: bool,
}

impl Place {
    /// The file, unless the cache is off.
    pub fn from_env() -> Option<Place> {
        Dir::from_env().map(|d| Place { path: d.kallsyms_file(), stats: d.stats })
    }

    #[cfg(test)]
    fn at(path: &Path) -> Place {
        Place { path: path.to_path_buf(), stats: false }
    }

    fn say(&self, what: std::fmt::Arguments<'_>) {
        if self.stats {
            eprintln!("pstitch: kallsyms cache: {}: {what}", self.path.display());
        }
    }

    /// Whether the file holds a table for `live` (its header read, not
    /// checked: to decide whether to start reading the kallsyms file ahead).
    pub fn holds(&self, live: &Live) -> bool {
        read_start(&self.path, ARRAYS as usize).is_some_and(|h| parse_header(&h).is_some_and(|hd| hd.live == *live))
    }

    /// The stored table, if the file is good, was made for `live`, and
    /// fits the recording's reference symbol `ref_reloc`.
    pub fn open(&self, live: &Live, ref_reloc: Option<(&str, u64)>) -> Option<KernelTable> {
        match self.try_open(live, ref_reloc) {
            Ok((table, n)) => {
                self.say(format_args!("mapped the kernel's table ({n} symbols)"));
                Some(table)
            }
            Err(why) => {
                self.say(format_args!("{why}"));
                None
            }
        }
    }

    fn try_open(&self, live: &Live, ref_reloc: Option<(&str, u64)>) -> Result<(KernelTable, u64), Rejected> {
        let file = elf::open_regular(&self.path).ok_or_else(|| match std::fs::metadata(&self.path) {
            Ok(_) => Rejected::NotAFile,
            Err(_) => Rejected::Missing,
        })?;
        let len = file.metadata().map_err(Rejected::Io)?.len();
        let head = read_checked_up_to(&file, len, MAX_FILE, ARRAYS as usize)?;
        let header = parse_header(&head).ok_or(Rejected::Header)?;
        if header.live != *live || !fits(&header.refs, ref_reloc) {
            return Err(Rejected::Stale);
        }
        let places = header.places(len).ok_or(Rejected::Header)?;
        let bytes = elf::map_opened(&file).ok_or(Rejected::NoMap)?;
        if bytes.len() as u64 != len {
            return Err(Rejected::Changed);
        }
        let part = |(start, end): (u64, u64)| SectionBytes::Mapped(bytes.clone(), start as usize, end as usize);
        let parts = Parts {
            starts: part(places[0]),
            strides: part(places[1]),
            lens: part(places[2]),
            names: part(places[3]),
            long_ends: long_ends(&part(places[4])).ok_or(Rejected::Header)?,
            own_names: header.own_names,
            text: part(places[5]),
        };
        let table = KernelTable::from_parts(parts).ok_or(Rejected::Header)?;
        Ok((table, header.n))
    }

    /// Writes `table` (built from a whole kallsyms file read by this run,
    /// whose reference symbols are `refs`) for `live`. Never fails the
    /// run: a file that cannot be written (a read-only directory) is left
    /// out.
    pub fn store(&self, live: &Live, refs: &[(String, Option<u64>)], table: &KernelTable) {
        let Some(p) = table.parts() else {
            self.say(format_args!("not written: the table is not a compact one"));
            return;
        };
        let Some(header) = header(live, refs, &p) else {
            self.say(format_args!("not written: its header would not fit"));
            return;
        };
        let long: Vec<[u64; 2]> = p.long_ends.iter().map(|&(i, end)| [u64::from(i), end]).collect();
        let arrays: [&[u8]; 6] = [
            bytemuck::cast_slice(p.starts),
            bytemuck::cast_slice(p.strides),
            bytemuck::cast_slice(p.lens),
            bytemuck::cast_slice(p.names),
            bytemuck::cast_slice(&long),
            p.text,
        ];
        let written = write_atomically(&self.path, |f| {
            let mut w = Signed::new(std::io::BufWriter::with_capacity(Pieces::MAX, f));
            w.put(&header)?;
            w.pad_to(ARRAYS)?;
            for a in arrays {
                w.put(a)?;
                w.pad_to(w.at().next_multiple_of(8))?;
            }
            w.finish()
        });
        match written {
            Ok(()) => self.say(format_args!("wrote the kernel's table ({} symbols)", p.starts.len())),
            Err(e) => self.say(format_args!("not written: {e}")),
        }
    }
}

/// A file's header, read.
struct Header {
    live: Live,
    refs: Vec<(String, Option<u64>)>,
    n: u64,
    long: u64,
    text: u64,
    own_names: Vec<(NodeId, Arc<str>)>,
}

impl Header {
    /// Where each array lies: (start, end) of starts, strides, lens,
    /// names, long ends, text; `None` unless all fit in a file of `len`
    /// bytes (its CRC after them).
    fn places(&self, len: u64) -> Option<[(u64, u64); 6]> {
        let n = self.n;
        let sizes = [n.checked_mul(8)?, n.div_ceil(64).checked_mul(8)?, n.checked_mul(4)?, n.checked_mul(4)?, self.long.checked_mul(16)?, self.text];
        let mut at = ARRAYS;
        let mut places = [(0, 0); 6];
        for (place, size) in places.iter_mut().zip(sizes) {
            let end = at.checked_add(size)?;
            *place = (at, end);
            at = end.checked_next_multiple_of(8)?;
        }
        (at.checked_add(4)? == len).then_some(places)
    }
}

/// The header of a file for `live`, `refs` and `p`; `None` if it would not
/// fit before [`ARRAYS`].
fn header(live: &Live, refs: &[(String, Option<u64>)], p: &Parts<&[u64], &[u32], &[u8]>) -> Option<Vec<u8>> {
    let mut o = Out(Vec::with_capacity(8 << 10));
    o.0.extend_from_slice(MAGIC);
    o.u32(VERSION);
    o.0.extend_from_slice(&BYTE_ORDER.to_ne_bytes());
    o.bytes(&live.boot_id);
    o.bytes(&live.head);
    o.len(refs.len());
    for (name, addr) in refs {
        o.bytes(name.as_bytes());
        o.opt(*addr);
    }
    for count in [p.starts.len(), p.long_ends.len(), p.own_names.len(), p.text.len()] {
        o.u64(count as u64);
    }
    o.len(p.own_names.len());
    for (i, name) in &p.own_names {
        o.u32(*i);
        o.bytes(name.as_bytes());
    }
    (o.0.len() as u64 <= ARRAYS).then_some(o.0)
}

/// The header in a file's first bytes, if whole and sound.
fn parse_header(head: &[u8]) -> Option<Header> {
    let mut i = In(head);
    if i.take(MAGIC.len())? != MAGIC || i.u32()? != VERSION || i.take(4)? != BYTE_ORDER.to_ne_bytes() {
        return None;
    }
    let live = Live { boot_id: i.bytes()?.to_vec(), head: i.bytes()?.to_vec() };
    let k = i.count(6)?;
    let mut refs = Vec::with_capacity(k);
    for _ in 0..k {
        let name = String::from_utf8(i.bytes()?.to_vec()).ok()?;
        refs.push((name, i.opt()?));
    }
    let (n, long, own, text) = (i.u64()?, i.u64()?, i.u64()?, i.u64()?);
    let m = i.count(8)?;
    if m as u64 != own {
        return None;
    }
    let mut own_names = Vec::with_capacity(m);
    for _ in 0..m {
        let index = i.u32()?;
        own_names.push((index, Arc::from(std::str::from_utf8(i.bytes()?).ok()?)));
    }
    Some(Header { live, refs, n, long, text, own_names })
}

/// The long ends' (index, end) pairs from their array.
fn long_ends(bytes: &[u8]) -> Option<Vec<(NodeId, u64)>> {
    bytes
        .chunks_exact(16)
        .map(|c| {
            let index = u64::from_ne_bytes(c[..8].try_into().ok()?);
            Some((NodeId::try_from(index).ok()?, u64::from_ne_bytes(c[8..].try_into().ok()?)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbols::kallsyms;

    fn fixture() -> Vec<u8> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kallsyms/6.18.44-fc-v657.kallsyms");
        std::fs::read(path).expect("fixture kallsyms")
    }

    fn live(head: &[u8]) -> Live {
        Live { boot_id: b"0b7c2a7e-1111-2222-3333-444455556666\n".to_vec(), head: head[..HEAD.min(head.len())].to_vec() }
    }

    fn listing(mut t: KernelTable) -> Vec<(u64, u64, Arc<str>)> {
        t.listing()
    }

    fn dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("pstitch-ksyms-{}-{:?}", std::process::id(), std::thread::current().id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("dir");
        d
    }

    /// The kernel's table of a text with module, ftrace and BPF lines at
    /// its end is the table of the text without them (what makes a table
    /// from one read good for the boot), and a stored table answers as
    /// the one built.
    #[test]
    fn stored_table_is_the_built_one_and_the_tail_does_not_matter() {
        let text = fixture();
        let core_end = text.iter().position(|&b| b == b'\t').map_or(text.len(), |t| text[..t].iter().rposition(|&b| b == b'\n').map_or(0, |n| n + 1));
        let mut core = text[..core_end].to_vec();
        let whole = kallsyms::load_all(text.clone(), None).expect("loads").kernel;
        let alone = kallsyms::load_all(core.clone(), None).expect("loads").kernel;
        let want = listing(whole.clone());
        assert!(want.len() > 10_000);
        assert_eq!(listing(alone), want, "the tail changes nothing");
        core.extend_from_slice(b"ffffffffc0201000 t ftrace_trampoline\t[__builtin__ftrace]\nffffffffc0300000 t bpf_prog_6deef7357e7b4530\t[bpf]\n");
        assert_eq!(listing(kallsyms::load_all(core, None).expect("loads").kernel), want);

        let d = dir();
        let place = Place::at(&d.join("kallsyms"));
        let l = live(&text);
        let r = refs(&text);
        place.store(&l, &r, &whole);
        let got = place.open(&l, None).expect("a good file");
        assert_eq!(listing(got), want);
        let text_at = r.iter().find(|(n, _)| n == "_text").and_then(|(_, a)| *a).expect("_text");
        assert!(place.open(&l, Some(("_text", text_at))).is_some());
        assert!(place.holds(&l));
        let _ = std::fs::remove_dir_all(d);
    }

    /// Another boot, other first lines (addresses hidden), a relocated
    /// recording, a reference symbol not stored, and every damage: no
    /// table. Never a panic.
    #[test]
    fn stale_or_damaged_files_are_ignored() {
        let text = fixture();
        let table = kallsyms::load_all(text.clone(), None).expect("loads").kernel;
        let d = dir();
        let path = d.join("kallsyms");
        let place = Place::at(&path);
        let l = live(&text);
        place.store(&l, &refs(&text), &table);
        let good = std::fs::read(&path).expect("written");
        let other_boot = Live { boot_id: b"other\n".to_vec(), ..l.clone() };
        let hidden = Live { head: l.head.iter().map(|&b| if b.is_ascii_hexdigit() { b'0' } else { b }).collect(), ..l.clone() };
        assert!(place.open(&other_boot, None).is_none() && !place.holds(&other_boot));
        assert!(place.open(&hidden, None).is_none());
        assert!(place.open(&l, Some(("_text", 0x1000))).is_none(), "a relocation");
        assert!(place.open(&l, Some(("_etext", 0))).is_none(), "a reference not stored");
        let mut rnd = crate::testing::rng(0x3c6e_f372_fe94_f82b);
        for round in 0..40 {
            let mut bad = good.clone();
            match round % 4 {
                0 => bad.truncate(rnd(good.len() as u64) as usize),
                1 => {
                    let at = rnd(good.len() as u64) as usize;
                    bad[at] ^= 1 << rnd(8);
                }
                2 => bad.extend_from_slice(&[0; 8]),
                _ => {
                    // Damage that keeps the CRC right: the header's
                    // checks alone stand between the file and a panic.
                    let at = 16 + rnd(ARRAYS - 16) as usize;
                    bad[at] = rnd(256) as u8;
                    let crc = crc32fast::hash(&bad[..bad.len() - 4]);
                    let n = bad.len();
                    bad[n - 4..].copy_from_slice(&crc.to_le_bytes());
                }
            }
            std::fs::write(&path, &bad).expect("write");
            if let Some(mut t) = place.open(&l, None) {
                assert_eq!(round % 4, 3, "only a re-signed file can pass");
                for ip in [0, 0xffffffff81000000, 0xffffffff81234567, u64::MAX] {
                    if let Some(i) = t.find(ip) {
                        let _ = (t.bounds(i), t.name(i));
                    }
                }
            }
        }
        std::fs::write(&path, b"").expect("write");
        assert!(place.open(&l, None).is_none());
        let _ = std::fs::remove_dir_all(d);
    }
}
