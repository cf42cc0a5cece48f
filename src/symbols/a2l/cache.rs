//! The per-build-id cache of what reading an object's DWARF in binutils'
//! order found out: the unit headers `parse_comp_unit` reads, and for each
//! unit decoded, what its decoding did to the reading state (see
//! [`Decode`]). A later run on the same object takes units from here
//! instead of reading them, and decodes a unit's tables only when a lookup
//! lands in it (`Dwarf` in `dwarf.rs` explains why the answers stay the
//! same).
//!
//! Where: `$XDG_CACHE_HOME/pstitch/a2l-<build-id>` (else
//! `$HOME/.cache/pstitch/...`); `PSTITCH_CACHE=off` turns it off. An object
//! without a build-id has no cache. A file is used only if its key (format
//! version, build-id, file size, the size of each debug section) is the
//! object's. Files are written whole to a temporary name and renamed, so a
//! reader sees an old file or a new one, never half of one; deleting one
//! at any time is safe. The inflated debug sections of the same object go
//! to `a2l-<build-id>.sec` beside it ([`super::sections_cache`], which
//! shares this file's key and field writers). The kernel's symbol table
//! (`symbols/ksyms_cache.rs`) uses the directory, the field readers and
//! writers and [`write_atomically`] too.
//!
//! ```text
//!   "PSTITCH-A2L\0"  u32 version
//!   key:   u32 n, n bytes build-id; u64 file size; u32 k, k x u64 section sizes
//!   u8 ended (no unit after these)   u32 units
//!   unit:  header (offsets, sizes, language, comp_dir, stmt_list, bases,
//!          ranges in list order, first child)
//!          u8 decode: 0 not decoded, 1 failed, 2 done + summary
//!   u64 FNV-1a of everything before it
//! ```
//!
//! All numbers little-endian. The reader trusts nothing: every count is a
//! claim, checked against the bytes left before anything is allocated
//! for it, and the file's size is capped before it is read; a file that
//! does not read to its exact end and checksum is ignored.

use std::path::{Path, PathBuf};
use std::sync::Arc;

const MAGIC: &[u8; 12] = b"PSTITCH-A2L\0";
/// Bumped whenever what is stored, or what it means, changes.
const VERSION: u32 = 2;
/// No cache file is read past this size (libc's is about 200 KB).
const MAX_FILE: u64 = 64 << 20;

/// What identifies an object's DWARF.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    pub build_id: Vec<u8>,
    pub file_size: u64,
    /// The size in the file of each debug section read (`u64::MAX`:
    /// missing), in [`super::dwarf::Sections`]' order.
    pub sections: Vec<u64>,
}

/// What `parse_comp_unit` reads of a unit (the fields of
/// `dwarf::Unit` that do not change later).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitHeader {
    pub offset: u64,
    pub end: u64,
    pub version: u16,
    pub addr_size: u8,
    pub offset_size: u8,
    pub abbrev_offset: u64,
    pub lang: u64,
    pub comp_dir: Option<Arc<str>>,
    pub stmt_list: Option<u64>,
    pub base_address: u64,
    pub addr_base: u64,
    pub str_offsets_base: u64,
    /// The unit DIE's ranges, in binutils' list order.
    pub aranges: Vec<(u64, u64)>,
    pub first_child: Option<u64>,
}

/// What decoding a unit did besides building its own tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decode {
    /// The line program could not be read (no stmt_list, or a bad one):
    /// nothing else happened.
    Failed,
    Done(DecodeSummary),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeSummary {
    /// The line sequences' ranges (the unit's ranges grow by them).
    pub seq_ranges: Vec<(u64, u64)>,
    /// The rows after the last end of sequence, which a line lookup sees.
    pub open: Option<(u64, u64)>,
    /// What the function ranges cover (see `ranges::Coverage`).
    pub func_ranges: Vec<(u64, u64)>,
    /// The units the scan asked to be decoded, in order.
    pub deps: Vec<u32>,
    /// How many units the scan's references needed read.
    pub parsed: u32,
    /// The unit has a variable with a static address.
    pub has_vars: bool,
}

/// An object's summaries.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Summary {
    pub units: Vec<UnitHeader>,
    /// Per unit (same length as `units`).
    pub decodes: Vec<Option<Decode>>,
    /// binutils found no unit after these.
    pub ended: bool,
}

impl Summary {
    pub fn decoded(&self) -> usize {
        self.decodes.iter().filter(|d| d.is_some()).count()
    }
}

/// Where cache files go, if anywhere.
#[derive(Debug, Clone)]
pub struct Dir {
    path: PathBuf,
    /// Say on stderr what was read and written (`PSTITCH_CACHE_STATS=1`).
    pub stats: bool,
}

impl Dir {
    /// From the environment (see the module doc); `None`: off.
    pub fn from_env() -> Option<Dir> {
        let var = |n: &str| std::env::var_os(n).filter(|v| !v.is_empty());
        if var("PSTITCH_CACHE").is_some_and(|v| v == "off" || v == "0") {
            return None;
        }
        let base = match var("XDG_CACHE_HOME").map(PathBuf::from).filter(|p| p.is_absolute()) {
            Some(p) => p,
            None => PathBuf::from(var("HOME")?).join(".cache"),
        };
        let stats = var("PSTITCH_CACHE_STATS").is_some_and(|v| v == "1");
        Some(Dir { path: base.join("pstitch"), stats })
    }

    /// Files under `path` (tests).
    #[cfg(test)]
    pub fn at(path: &Path) -> Dir {
        Dir { path: path.to_path_buf(), stats: false }
    }

    /// The file of the kernel's symbols (`super::super::ksyms_cache`).
    pub fn kallsyms_file(&self) -> PathBuf {
        self.path.join("kallsyms")
    }

    /// The file of an object.
    pub fn file(&self, key: &Key) -> PathBuf {
        let hex: String = key.build_id.iter().map(|b| format!("{b:02x}")).collect();
        self.path.join(format!("a2l-{hex}"))
    }

    /// The file of an object's inflated debug sections
    /// ([`super::sections_cache`]).
    pub fn sections_file(&self, key: &Key) -> PathBuf {
        let mut name = self.file(key).into_os_string();
        name.push(".sec");
        name.into()
    }
}

/// The summaries stored for `key`, if a good file holds them.
pub fn load(path: &Path, key: &Key) -> Option<Summary> {
    use std::io::Read;
    let file = std::fs::File::open(path).ok()?;
    let mut bytes = Vec::new();
    // The size is a claim too: read at most the cap, and one more byte to
    // see it was passed.
    file.take(MAX_FILE + 1).read_to_end(&mut bytes).ok()?;
    if bytes.len() as u64 > MAX_FILE {
        return None;
    }
    decode(&bytes, key)
}

/// Writes `summary` for `key` (to a temporary file, renamed into place).
pub fn store(path: &Path, key: &Key, summary: &Summary) -> std::io::Result<()> {
    let bytes = encode(key, summary);
    write_atomically(path, |f| std::io::Write::write_all(f, &bytes))
}

/// Writes a file whole: `write` fills a temporary file in the same
/// directory (made if missing), which is then renamed to `path`, so a
/// reader sees the old file or the new one, never a part. The temporary
/// name is this process's and thread's own; it is removed on failure.
pub fn write_atomically(path: &Path, write: impl FnOnce(&mut Pieces) -> std::io::Result<()>) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("a2l");
    let thread: String = format!("{:?}", std::thread::current().id()).chars().filter(char::is_ascii_digit).collect();
    let tmp = path.with_file_name(format!(".{name}.{}.{thread}.tmp", std::process::id()));
    let written = std::fs::File::create(&tmp).and_then(|f| write(&mut Pieces(f))).and_then(|_| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// A cache file being written, at most [`Pieces::MAX`] bytes a `write`.
///
/// Why: the page cache keeps a file's pages in folios as large as the
/// writes that brought them (Linux 6.x, large folios), and a fault in a
/// mapping of the file maps the whole folio. A file written a megabyte at
/// a time costs a later run that maps it and looks up one name a megabyte
/// of resident memory; written in pieces of the kernel's fault-around size
/// (64 KiB), it costs 64 KiB. (Pages read back after the file left the
/// page cache come in the folios readahead makes.)
pub struct Pieces(std::fs::File);

impl Pieces {
    pub const MAX: usize = 64 << 10;
}

impl std::io::Write for Pieces {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(&buf[..buf.len().min(Pieces::MAX)])
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

fn fnv(bytes: &[u8]) -> u64 {
    let mut h = 0xcbf29ce484222325u64;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

/// A writer of the little-endian fields of a cache file.
pub(in crate::symbols) struct Out(pub(in crate::symbols) Vec<u8>);

impl Out {
    pub(in crate::symbols) fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub(in crate::symbols) fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(in crate::symbols) fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(in crate::symbols) fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(in crate::symbols) fn len(&mut self, n: usize) {
        self.u32(u32::try_from(n).unwrap_or(u32::MAX));
    }
    pub(in crate::symbols) fn bytes(&mut self, b: &[u8]) {
        self.len(b.len());
        self.0.extend_from_slice(b);
    }
    pub(in crate::symbols) fn opt(&mut self, v: Option<u64>) {
        match v {
            None => self.u8(0),
            Some(v) => {
                self.u8(1);
                self.u64(v);
            }
        }
    }
    pub(in crate::symbols) fn range(&mut self, r: Option<(u64, u64)>) {
        match r {
            None => self.u8(0),
            Some((l, h)) => {
                self.u8(1);
                self.u64(l);
                self.u64(h);
            }
        }
    }
    /// An object's key: u32 n, n bytes build-id; u64 file size; u32 k,
    /// k x u64 section sizes.
    pub(in crate::symbols) fn key(&mut self, key: &Key) {
        self.bytes(&key.build_id);
        self.u64(key.file_size);
        self.len(key.sections.len());
        for &v in &key.sections {
            self.u64(v);
        }
    }
    pub(in crate::symbols) fn ranges(&mut self, rs: &[(u64, u64)]) {
        self.len(rs.len());
        for &(l, h) in rs {
            self.u64(l);
            self.u64(h);
        }
    }
}

pub fn encode(key: &Key, s: &Summary) -> Vec<u8> {
    let mut o = Out(Vec::with_capacity(64 + s.units.len() * 96));
    o.0.extend_from_slice(MAGIC);
    o.u32(VERSION);
    o.key(key);
    o.u8(s.ended as u8);
    o.len(s.units.len());
    for (h, d) in s.units.iter().zip(s.decodes.iter().chain(std::iter::repeat(&None))) {
        o.u64(h.offset);
        o.u64(h.end);
        o.u16(h.version);
        o.u8(h.addr_size);
        o.u8(h.offset_size);
        o.u64(h.abbrev_offset);
        o.u64(h.lang);
        match &h.comp_dir {
            None => o.u8(0),
            Some(d) => {
                o.u8(1);
                o.bytes(d.as_bytes());
            }
        }
        o.opt(h.stmt_list);
        o.u64(h.base_address);
        o.u64(h.addr_base);
        o.u64(h.str_offsets_base);
        o.ranges(&h.aranges);
        o.opt(h.first_child);
        match d {
            None => o.u8(0),
            Some(Decode::Failed) => o.u8(1),
            Some(Decode::Done(d)) => {
                o.u8(2);
                o.ranges(&d.seq_ranges);
                o.range(d.open);
                o.ranges(&d.func_ranges);
                o.len(d.deps.len());
                for &u in &d.deps {
                    o.u32(u);
                }
                o.u32(d.parsed);
                o.u8(d.has_vars as u8);
            }
        }
    }
    let sum = fnv(&o.0);
    o.u64(sum);
    o.0
}

/// A reader that fails (`None`) at the end of its bytes.
pub(in crate::symbols) struct In<'a>(pub(in crate::symbols) &'a [u8]);

impl In<'_> {
    pub(in crate::symbols) fn take(&mut self, n: usize) -> Option<&[u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
    pub(in crate::symbols) fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    pub(in crate::symbols) fn u16(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes(self.take(2)?.try_into().ok()?))
    }
    pub(in crate::symbols) fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    pub(in crate::symbols) fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    /// A count of items of at least `each` bytes: no more than the bytes
    /// left can hold.
    pub(in crate::symbols) fn count(&mut self, each: usize) -> Option<usize> {
        let n = self.u32()? as usize;
        (n.checked_mul(each)? <= self.0.len()).then_some(n)
    }
    pub(in crate::symbols) fn bytes(&mut self) -> Option<&[u8]> {
        let n = self.count(1)?;
        self.take(n)
    }
    pub(in crate::symbols) fn flag(&mut self) -> Option<bool> {
        match self.u8()? {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }
    pub(in crate::symbols) fn opt(&mut self) -> Option<Option<u64>> {
        Some(if self.flag()? { Some(self.u64()?) } else { None })
    }
    pub(in crate::symbols) fn range(&mut self) -> Option<Option<(u64, u64)>> {
        Some(if self.flag()? { Some((self.u64()?, self.u64()?)) } else { None })
    }
    /// See [`Out::key`].
    pub(in crate::symbols) fn key(&mut self) -> Option<Key> {
        let build_id = self.bytes()?.to_vec();
        let file_size = self.u64()?;
        let n = self.count(8)?;
        let sections = (0..n).map(|_| self.u64()).collect::<Option<Vec<_>>>()?;
        Some(Key { build_id, file_size, sections })
    }
    pub(in crate::symbols) fn ranges(&mut self) -> Option<Vec<(u64, u64)>> {
        let n = self.count(16)?;
        (0..n).map(|_| Some((self.u64()?, self.u64()?))).collect()
    }
}

/// The summary in `bytes` if they are a whole, good file for `key`.
pub fn decode(bytes: &[u8], key: &Key) -> Option<Summary> {
    let body_len = bytes.len().checked_sub(8)?;
    let (body, sum) = bytes.split_at(body_len);
    if fnv(body) != u64::from_le_bytes(sum.try_into().ok()?) {
        return None;
    }
    let mut r = In(body);
    if r.take(MAGIC.len())? != MAGIC || r.u32()? != VERSION {
        return None;
    }
    if r.key()? != *key {
        return None;
    }
    let ended = r.flag()?;
    // A unit takes at least 68 bytes here.
    let n = r.count(68)?;
    let mut s = Summary { units: Vec::with_capacity(n), decodes: Vec::with_capacity(n), ended };
    for _ in 0..n {
        let offset = r.u64()?;
        let end = r.u64()?;
        let (version, addr_size, offset_size) = (r.u16()?, r.u8()?, r.u8()?);
        let abbrev_offset = r.u64()?;
        let lang = r.u64()?;
        let comp_dir = if r.flag()? { Some(std::str::from_utf8(r.bytes()?).ok()?.into()) } else { None };
        let h = UnitHeader {
            offset,
            end,
            version,
            addr_size,
            offset_size,
            abbrev_offset,
            lang,
            comp_dir,
            stmt_list: r.opt()?,
            base_address: r.u64()?,
            addr_base: r.u64()?,
            str_offsets_base: r.u64()?,
            aranges: r.ranges()?,
            first_child: r.opt()?,
        };
        // Units follow one another from the section's start, as read.
        let expected = s.units.last().map(|u: &UnitHeader| u.end).unwrap_or(0);
        let sane = h.offset == expected
            && h.offset < h.end
            && (2..=5).contains(&h.version)
            && matches!(h.addr_size, 2 | 4 | 8)
            && matches!(h.offset_size, 4 | 8)
            && h.first_child.is_none_or(|c| c < h.end - h.offset);
        if !sane {
            return None;
        }
        let d = match r.u8()? {
            0 => None,
            1 => Some(Decode::Failed),
            2 => {
                let seq_ranges = r.ranges()?;
                let open = r.range()?;
                let func_ranges = r.ranges()?;
                let k = r.count(4)?;
                let deps = (0..k).map(|_| r.u32()).collect::<Option<Vec<_>>>()?;
                let parsed = r.u32()?;
                let has_vars = r.flag()?;
                Some(Decode::Done(DecodeSummary { seq_ranges, open, func_ranges, deps, parsed, has_vars }))
            }
            _ => return None,
        };
        s.units.push(h);
        s.decodes.push(d);
    }
    if !r.0.is_empty() {
        return None;
    }
    // References name units of this file only.
    let known = s.units.len() as u64;
    let refs_ok = s.decodes.iter().flatten().all(|d| match d {
        Decode::Failed => true,
        Decode::Done(d) => u64::from(d.parsed) <= known && d.deps.iter().all(|&u| u64::from(u) < known),
    });
    refs_ok.then_some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cache files go to the kernel a piece at a time (see [`Pieces`]),
    /// and whole.
    #[test]
    fn files_are_written_in_pieces() {
        let path = std::env::temp_dir().join(format!("pstitch-pieces-{}", std::process::id()));
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        write_atomically(&path, |f| {
            assert_eq!(std::io::Write::write(f, &data)?, Pieces::MAX);
            std::io::Write::write_all(f, &data[Pieces::MAX..])
        })
        .expect("written");
        assert_eq!(std::fs::read(&path).expect("read"), data);
        let _ = std::fs::remove_file(path);
    }

    fn key() -> Key {
        Key { build_id: vec![0xab, 0xcd, 0x01], file_size: 123_456, sections: vec![10, 20, u64::MAX, 40] }
    }

    fn summary() -> Summary {
        let header = |offset: u64, end: u64, dir: Option<&str>| UnitHeader {
            offset,
            end,
            version: 5,
            addr_size: 8,
            offset_size: 4,
            abbrev_offset: offset * 3,
            lang: 0x1d,
            comp_dir: dir.map(Into::into),
            stmt_list: Some(offset * 7),
            base_address: 0x1000,
            addr_base: 8,
            str_offsets_base: 0,
            aranges: vec![(0x1000, 0x2000), (0x3000, 0x3010)],
            first_child: Some(12),
        };
        Summary {
            units: vec![header(0, 100, Some("/tmp/x")), header(100, 250, None), header(250, 400, Some("é"))],
            decodes: vec![
                Some(Decode::Done(DecodeSummary {
                    seq_ranges: vec![(0x1000, 0x1800)],
                    open: Some((5, 6)),
                    func_ranges: vec![(0x1000, 0x1700), (0x1900, 0x1a00)],
                    deps: vec![0, 2],
                    parsed: 3,
                    has_vars: true,
                })),
                None,
                Some(Decode::Failed),
            ],
            ended: true,
        }
    }

    #[test]
    fn round_trip() {
        let bytes = encode(&key(), &summary());
        assert_eq!(decode(&bytes, &key()), Some(summary()));
        let empty = Summary::default();
        assert_eq!(decode(&encode(&key(), &empty), &key()), Some(empty));
    }

    #[test]
    fn every_truncation_is_rejected() {
        let bytes = encode(&key(), &summary());
        for cut in 0..bytes.len() {
            assert_eq!(decode(&bytes[..cut], &key()), None, "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(decode(&longer, &key()), None);
    }

    #[test]
    fn another_key_is_not_read() {
        let bytes = encode(&key(), &summary());
        let mut k = key();
        k.file_size += 1;
        assert_eq!(decode(&bytes, &k), None);
        let mut k = key();
        k.sections[2] = 30;
        assert_eq!(decode(&bytes, &k), None);
        let mut k = key();
        k.build_id[0] ^= 1;
        assert_eq!(decode(&bytes, &k), None);
    }

    /// Re-signs a body (as a hostile writer would) so that only the
    /// checks behind the checksum stand in the way.
    fn signed(mut body: Vec<u8>) -> Vec<u8> {
        let s = fnv(&body);
        body.extend_from_slice(&s.to_le_bytes());
        body
    }

    #[test]
    fn damaged_files_are_ignored_without_panic() {
        let bytes = encode(&key(), &summary());
        let body = &bytes[..bytes.len() - 8];
        // Every byte flipped: the checksum rejects it; re-signed, the
        // reader must not panic or allocate what the bytes cannot hold.
        for i in 0..body.len() {
            for x in [0x01u8, 0x80, 0xff] {
                let mut b = bytes.clone();
                b[i] ^= x;
                assert_eq!(decode(&b, &key()), None);
                let mut v = body.to_vec();
                v[i] ^= x;
                let _ = decode(&signed(v), &key());
            }
        }
        // Huge counts, signed.
        let units_at = MAGIC.len() + 4 + 4 + 3 + 8 + 4 + 4 * 8 + 1;
        let mut v = body.to_vec();
        v[units_at..units_at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(decode(&signed(v), &key()), None);
        // Units that do not follow one another, signed.
        let mut s = summary();
        s.units[1].offset = 99;
        assert_eq!(decode(&encode(&key(), &s), &key()), None);
        let mut s = summary();
        if let Some(Decode::Done(d)) = &mut s.decodes[0] {
            d.deps.push(3);
        }
        assert_eq!(decode(&encode(&key(), &s), &key()), None);
        assert_eq!(decode(b"", &key()), None);
        assert_eq!(decode(&[0u8; 8], &key()), None);
    }

    #[test]
    fn stored_atomically_and_read_back() {
        let dir = std::env::temp_dir().join(format!("pstitch-a2l-cache-{}", std::process::id()));
        let path = dir.join("sub").join("a2l-abcd01");
        store(&path, &key(), &summary()).expect("writes");
        assert_eq!(load(&path, &key()), Some(summary()));
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 1, "no temporary file left: {names:?}");
        std::fs::write(&path, b"junk").unwrap();
        assert_eq!(load(&path, &key()), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
