//! The inflated bytes of an object's compressed debug sections, kept next
//! to its unit summaries ([`super::cache`]), so that a later run maps them
//! instead of inflating them again.
//!
//! Why: Debian's debug files compress their DWARF (`SHF_COMPRESSED`,
//! zlib). Inflating a section is all or nothing (a zlib or zstd stream
//! cannot be entered in the middle), so the first lookup that needs one
//! unit's bytes inflates all of libc's sections: about 8.5 MB of fresh
//! anonymous memory and 140 M instructions, on every run. A file-backed,
//! read-only mapping of the bytes inflated once costs neither: nothing is
//! inflated, and only the pages lookups touch count in the run's memory
//! (shared with the page cache, given back under pressure like any file).
//!
//! Where: `a2l-<build-id>.sec` in the cache directory (see [`super::cache`]
//! for the directory, `PSTITCH_CACHE=off` and `PSTITCH_CACHE_STATS=1`),
//! written by the run that inflated the sections and replaced whole (a
//! temporary name, renamed). Only sections the object holds compressed are
//! in it, and only successful inflations ([`Elf::data`]'s rules: zlib fills
//! the claimed size exactly, zstd may end early and its real length is
//! stored); sections stored uncompressed stay mapped from the object
//! itself. An object whose sections inflate to more than [`MAX_PAYLOAD`]
//! (512 MiB) gets no file.
//!
//! ```text
//!   "PSTITCH-SEC\0"  u32 version
//!   key:   u32 n, n bytes build-id; u64 file size; u32 k, k x u64 section sizes
//!          (the summaries' key, super::cache::Key)
//!   u32 m, m entries in increasing section order:
//!          u32 section (index into the key's sections), u32 ch_type,
//!          u64 claimed size, u64 offset, u64 length (the inflated bytes)
//!   zero bytes up to the first section's offset
//!   each section's inflated bytes at its offset (4 KiB aligned), zero
//!   bytes between
//!   u32 CRC-32 (IEEE) of every byte before it
//! ```
//!
//! All numbers little-endian. Trust: a file is used only if every byte of
//! it checks out against the CRC, its key is the object's and every entry
//! names a section the object holds compressed with that very header and a
//! length `Elf::data` could have produced. The check reads the file
//! through a small buffer (`read`, not a mapping, so none of it stays in
//! the run's memory), then the same open file is mapped: files are only
//! ever replaced by rename, never written in place, so the bytes mapped
//! are the bytes checked. Every count in the header is a claim, bounded by
//! the header's bytes; offsets and lengths by the file's size. A file that
//! fails any check is ignored (with `PSTITCH_CACHE_STATS=1` the reason is
//! said on stderr), the sections are inflated as without a cache, and the
//! file is written anew.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::Arc;

use super::cache::{self, In, Key, Out};
use crate::symbols::elf::{self, Compression, Elf, FileBytes, SectionBytes};

const MAGIC: &[u8; 12] = b"PSTITCH-SEC\0";
/// Bumped whenever what is stored, or what it means, changes.
const VERSION: u32 = 1;
/// The most inflated bytes one object's file holds.
pub const MAX_PAYLOAD: u64 = 512 << 20;
/// Sections start on this boundary; the header must fit before it.
const ALIGN: u64 = 4096;
/// The bytes the check reads at a time.
const CHUNK: usize = 64 << 10;

/// A compressed section of the object: its index in the key's sections
/// and its compression header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compressed {
    pub section: u32,
    pub header: Compression,
}

/// One section stored in a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    section: u32,
    header: Compression,
    offset: u64,
    len: u64,
}

/// Why a file was not used.
#[derive(Debug)]
pub(in crate::symbols) enum Rejected {
    Missing,
    NotAFile,
    Size(u64),
    Io(std::io::Error),
    Changed,
    Checksum,
    Header,
    Stale,
    NoMap,
}

impl std::fmt::Display for Rejected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rejected::Missing => write!(f, "none yet"),
            Rejected::NotAFile => write!(f, "ignored: not a readable regular file"),
            Rejected::Size(n) => write!(f, "ignored: {n} bytes cannot be a sections file"),
            Rejected::Io(e) => write!(f, "ignored: {e}"),
            Rejected::Changed => write!(f, "ignored: its size changed while read"),
            Rejected::Checksum => write!(f, "ignored: checksum mismatch"),
            Rejected::Header => write!(f, "ignored: bad header"),
            Rejected::Stale => write!(f, "ignored: made for other contents (stale key)"),
            Rejected::NoMap => write!(f, "ignored: cannot be mapped"),
        }
    }
}

/// The sections of a good file, mapped.
pub struct Mapped {
    file: Arc<FileBytes>,
    entries: Vec<Entry>,
}

impl Mapped {
    /// The inflated bytes of section `section`, if the file holds them.
    pub fn section(&self, section: u32) -> Option<SectionBytes> {
        let e = self.entries.iter().find(|e| e.section == section)?;
        let start = usize::try_from(e.offset).ok()?;
        let end = start.checked_add(usize::try_from(e.len).ok()?)?;
        self.file.get(start..end)?;
        Some(SectionBytes::Mapped(self.file.clone(), start, end))
    }
}

/// Where an object's sections file is.
#[derive(Debug, Clone)]
pub struct Place {
    path: PathBuf,
    key: Key,
    stats: bool,
}

impl Place {
    pub fn new(dir: &cache::Dir, key: &Key) -> Place {
        Place { path: dir.sections_file(key), key: key.clone(), stats: dir.stats }
    }

    fn say(&self, what: std::fmt::Arguments<'_>) {
        if self.stats {
            eprintln!("pstitch: a2l sections: {}: {what}", self.path.display());
        }
    }

    /// The file's sections, mapped, if it is a good file for `elf`'s
    /// sections `wanted` (each entry must be one of them).
    pub fn open(&self, elf: &Elf, wanted: &[Compressed]) -> Option<Mapped> {
        match self.try_open(elf, wanted) {
            Ok(m) => {
                let bytes: u64 = m.entries.iter().map(|e| e.len).sum();
                self.say(format_args!("mapped {} sections ({bytes} bytes)", m.entries.len()));
                Some(m)
            }
            Err(why) => {
                self.say(format_args!("{why}"));
                None
            }
        }
    }

    /// The file this run has just written, mapped (see [`Place::open`];
    /// nothing said: the run said it wrote it).
    pub fn open_written(&self, elf: &Elf, wanted: &[Compressed]) -> Option<Mapped> {
        self.try_open(elf, wanted).ok()
    }

    fn try_open(&self, elf: &Elf, wanted: &[Compressed]) -> Result<Mapped, Rejected> {
        // Opened without waiting (a FIFO at the name), the type checked
        // on the open file.
        let file = elf::open_regular(&self.path).ok_or_else(|| match std::fs::metadata(&self.path) {
            Ok(_) => Rejected::NotAFile,
            Err(_) => Rejected::Missing,
        })?;
        let len = file.metadata().map_err(Rejected::Io)?.len();
        let head = read_checked(&file, len)?;
        let entries = parse_header(&head, len, &self.key)?;
        for e in &entries {
            let known = wanted.iter().any(|w| w.section == e.section && w.header == e.header);
            if !known || !elf.inflated_len_ok(e.header, e.len) {
                return Err(Rejected::Stale);
            }
        }
        let file = elf::map_opened(&file).ok_or(Rejected::NoMap)?;
        if file.len() as u64 != len {
            return Err(Rejected::Changed);
        }
        Ok(Mapped { file, entries })
    }

    /// Writes a file holding `sections` (their inflated bytes), `inflated`
    /// of which this run inflated. Never fails the run: a file that cannot
    /// be written (a read-only directory) is left out.
    pub fn store(&self, sections: &[(Compressed, &[u8])], inflated: usize) {
        let total: u64 = sections.iter().map(|(_, b)| b.len() as u64).sum();
        if total > MAX_PAYLOAD {
            self.say(format_args!("inflated {inflated} sections; not written: {total} bytes, more than {MAX_PAYLOAD}"));
            return;
        }
        let (header, entries) = layout(&self.key, sections);
        let written = cache::write_atomically(&self.path, |f| {
            let mut w = Signed::new(std::io::BufWriter::with_capacity(CHUNK, f));
            w.put(&header)?;
            for (e, (_, bytes)) in entries.iter().zip(sections) {
                w.pad_to(e.offset)?;
                w.put(bytes)?;
            }
            w.finish()
        });
        match written {
            Ok(()) => self.say(format_args!("inflated {inflated} sections; wrote {} sections ({total} bytes)", sections.len())),
            Err(e) => self.say(format_args!("inflated {inflated} sections; not written: {e}")),
        }
    }
}

/// A cache file's writer that keeps the CRC of what went through it, for
/// the CRC-32 the file ends with ([`read_checked_up_to`] checks it). The
/// kernel symbol cache writes its file with it too.
pub(in crate::symbols) struct Signed<W: Write> {
    out: W,
    crc: crc32fast::Hasher,
    at: u64,
}

impl<W: Write> Signed<W> {
    pub(in crate::symbols) fn new(out: W) -> Signed<W> {
        Signed { out, crc: crc32fast::Hasher::new(), at: 0 }
    }

    /// Bytes written so far.
    pub(in crate::symbols) fn at(&self) -> u64 {
        self.at
    }

    pub(in crate::symbols) fn put(&mut self, b: &[u8]) -> std::io::Result<()> {
        self.crc.update(b);
        self.at += b.len() as u64;
        self.out.write_all(b)
    }

    /// Zero bytes up to `offset`.
    pub(in crate::symbols) fn pad_to(&mut self, offset: u64) -> std::io::Result<()> {
        const ZEROS: [u8; ALIGN as usize] = [0; ALIGN as usize];
        while self.at < offset {
            let n = (offset - self.at).min(ALIGN) as usize;
            self.put(&ZEROS[..n])?;
        }
        Ok(())
    }

    /// Ends the file: the CRC-32 of every byte before it.
    pub(in crate::symbols) fn finish(mut self) -> std::io::Result<()> {
        let crc = self.crc.finalize();
        self.out.write_all(&crc.to_le_bytes())?;
        self.out.flush()
    }
}

/// The header of a file holding `sections` (in the order given), and
/// where each goes.
fn layout(key: &Key, sections: &[(Compressed, &[u8])]) -> (Vec<u8>, Vec<Entry>) {
    let mut o = Out(Vec::with_capacity(256));
    o.0.extend_from_slice(MAGIC);
    o.u32(VERSION);
    o.key(key);
    o.len(sections.len());
    let entries_at = o.0.len();
    let header_len = (entries_at + sections.len() * 32) as u64;
    let mut at = header_len;
    let mut entries = Vec::with_capacity(sections.len());
    for (c, bytes) in sections {
        let offset = at.next_multiple_of(ALIGN);
        let e = Entry { section: c.section, header: c.header, offset, len: bytes.len() as u64 };
        o.u32(e.section);
        o.u32(e.header.ch_type);
        o.u64(e.header.claim);
        o.u64(e.offset);
        o.u64(e.len);
        entries.push(e);
        at = offset + e.len;
    }
    (o.0, entries)
}

/// Reads all `len` bytes of a file through a small buffer, checks them
/// against the CRC at its end and returns the first bytes (where the
/// header is: at most [`ALIGN`]).
fn read_checked(file: impl Read, len: u64) -> Result<Vec<u8>, Rejected> {
    read_checked_up_to(file, len, ALIGN + MAX_PAYLOAD + 4, ALIGN as usize)
}

/// Reads a cache file of `len` bytes (at most `max_len`) that ends in the
/// CRC-32 of the rest, through a small buffer; its first `head_len` bytes
/// if the CRC matches and the file was `len` bytes long.
pub(in crate::symbols) fn read_checked_up_to(mut file: impl Read, len: u64, max_len: u64, head_len: usize) -> Result<Vec<u8>, Rejected> {
    let sizes_ok = (4..=max_len).contains(&len);
    if !sizes_ok {
        return Err(Rejected::Size(len));
    }
    let body = len - 4;
    let mut head = Vec::with_capacity(body.min(head_len as u64) as usize);
    let mut crc = crc32fast::Hasher::new();
    let mut tail = Vec::with_capacity(4);
    let mut buf = vec![0u8; CHUNK];
    let mut at = 0u64;
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Rejected::Io(e)),
        };
        let chunk = &buf[..n];
        if at + n as u64 > len {
            return Err(Rejected::Changed);
        }
        let in_body = (body.saturating_sub(at) as usize).min(n);
        let (b, t) = chunk.split_at(in_body);
        crc.update(b);
        let room = (head_len - head.len()).min(b.len());
        head.extend_from_slice(&b[..room]);
        tail.extend_from_slice(t);
        at += n as u64;
    }
    if at != len {
        return Err(Rejected::Changed);
    }
    if crc.finalize().to_le_bytes()[..] != tail[..] {
        return Err(Rejected::Checksum);
    }
    Ok(head)
}

/// The entries of a file of `len` bytes whose first bytes are `head`, if
/// its header is whole and sound and its key is `key`.
fn parse_header(head: &[u8], len: u64, key: &Key) -> Result<Vec<Entry>, Rejected> {
    let mut r = In(head);
    let bad = Rejected::Header;
    if r.take(MAGIC.len()).ok_or(Rejected::Header)? != MAGIC || r.u32().ok_or(Rejected::Header)? != VERSION {
        return Err(bad);
    }
    if r.key().ok_or(Rejected::Header)? != *key {
        return Err(Rejected::Stale);
    }
    let n = r.count(32).ok_or(Rejected::Header)?;
    let header_len = (head.len() - r.0.len() + n * 32) as u64;
    let body = len.saturating_sub(4);
    let mut entries: Vec<Entry> = Vec::with_capacity(n);
    for _ in 0..n {
        let e = (|| {
            Some(Entry {
                section: r.u32()?,
                header: Compression { ch_type: r.u32()?, claim: r.u64()? },
                offset: r.u64()?,
                len: r.u64()?,
            })
        })()
        .ok_or(Rejected::Header)?;
        let after = entries.last().map(|p| (p.section, p.offset + p.len));
        let in_order = after.is_none_or(|(s, end)| e.section > s && e.offset >= end);
        let fits = e.offset >= header_len && e.offset.checked_add(e.len).is_some_and(|end| end <= body);
        if !in_order || !fits || e.section as usize >= key.sections.len() {
            return Err(bad);
        }
        entries.push(e);
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> Key {
        Key { build_id: vec![0xab, 0xcd, 0x01], file_size: 123_456, sections: vec![10, 20, u64::MAX, 40] }
    }

    fn zlib(claim: u64) -> Compression {
        Compression { ch_type: 1, claim }
    }

    fn sections() -> Vec<(Compressed, Vec<u8>)> {
        vec![
            (Compressed { section: 0, header: zlib(5000) }, (0..5000u32).map(|i| (i * 7) as u8).collect()),
            (Compressed { section: 3, header: Compression { ch_type: 2, claim: 100 } }, vec![9; 60]),
        ]
    }

    /// The bytes a file would have (as `Place::store` writes them).
    fn file_bytes(key: &Key, sections: &[(Compressed, Vec<u8>)]) -> Vec<u8> {
        let refs: Vec<(Compressed, &[u8])> = sections.iter().map(|(c, b)| (*c, &b[..])).collect();
        let (header, entries) = layout(key, &refs);
        let mut out = Vec::new();
        let mut w = Signed::new(&mut out);
        w.put(&header).unwrap();
        for (e, (_, b)) in entries.iter().zip(&refs) {
            w.pad_to(e.offset).unwrap();
            w.put(b).unwrap();
        }
        w.finish().unwrap();
        out
    }

    fn read(bytes: &[u8], key: &Key) -> Result<Vec<Entry>, Rejected> {
        let head = read_checked(bytes, bytes.len() as u64)?;
        parse_header(&head, bytes.len() as u64, key)
    }

    /// Every byte where the header says.
    fn contents(bytes: &[u8], entries: &[Entry]) -> Vec<(u32, Vec<u8>)> {
        entries.iter().map(|e| (e.section, bytes[e.offset as usize..(e.offset + e.len) as usize].to_vec())).collect()
    }

    #[test]
    fn round_trip() {
        let s = sections();
        let bytes = file_bytes(&key(), &s);
        let entries = read(&bytes, &key()).expect("reads back");
        assert_eq!(contents(&bytes, &entries), s.iter().map(|(c, b)| (c.section, b.clone())).collect::<Vec<_>>());
        assert!(entries.iter().all(|e| e.offset % ALIGN == 0));
        assert_eq!(entries.iter().map(|e| e.header).collect::<Vec<_>>(), vec![zlib(5000), Compression { ch_type: 2, claim: 100 }]);
        // No sections at all.
        let bytes = file_bytes(&key(), &[]);
        assert_eq!(read(&bytes, &key()).unwrap(), Vec::new());
    }

    #[test]
    fn read_in_small_pieces() {
        /// A reader that hands out at most 7 bytes a call.
        struct Drip<'a>(&'a [u8]);
        impl Read for Drip<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let n = buf.len().min(7).min(self.0.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let bytes = file_bytes(&key(), &sections());
        let head = read_checked(Drip(&bytes), bytes.len() as u64).expect("checks");
        assert_eq!(head, bytes[..ALIGN as usize]);
        assert_eq!(parse_header(&head, bytes.len() as u64, &key()).unwrap().len(), 2);
    }

    #[test]
    fn every_truncation_and_extension_is_rejected() {
        let bytes = file_bytes(&key(), &sections());
        for cut in 0..bytes.len() {
            assert!(read(&bytes[..cut], &key()).is_err(), "cut at {cut}");
            // A file that says it is whole but ends early (or runs on).
            assert!(matches!(read_checked(&bytes[..cut], bytes.len() as u64), Err(Rejected::Changed)), "short at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(read(&longer, &key()).is_err());
        assert!(matches!(read_checked(&longer[..], bytes.len() as u64), Err(Rejected::Changed)));
    }

    #[test]
    fn every_flipped_byte_is_rejected() {
        let bytes = file_bytes(&key(), &sections());
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x10;
            assert!(read(&b, &key()).is_err(), "byte {i}");
        }
    }

    #[test]
    fn another_key_is_stale() {
        let bytes = file_bytes(&key(), &sections());
        for change in 0..3 {
            let mut k = key();
            match change {
                0 => k.file_size += 1,
                1 => k.sections[1] += 1,
                _ => k.build_id[2] ^= 1,
            }
            assert!(matches!(read(&bytes, &k), Err(Rejected::Stale)), "change {change}");
        }
    }

    /// Re-signs a body (as a hostile writer would) so that only the
    /// checks behind the checksum stand in the way.
    fn signed(mut body: Vec<u8>) -> Vec<u8> {
        let crc = crc32fast::hash(&body);
        body.extend_from_slice(&crc.to_le_bytes());
        body
    }

    /// Where the entry count is.
    fn count_at() -> usize {
        MAGIC.len() + 4 + 4 + key().build_id.len() + 8 + 4 + 8 * key().sections.len()
    }

    fn set_u64(b: &mut [u8], at: usize, v: u64) {
        b[at..at + 8].copy_from_slice(&v.to_le_bytes());
    }

    #[test]
    fn hostile_headers_are_rejected_without_panic() {
        let bytes = file_bytes(&key(), &sections());
        let body = &bytes[..bytes.len() - 4];
        let first = count_at() + 4;
        type Damage = Box<dyn Fn(&mut Vec<u8>)>;
        let cases: Vec<(&str, Damage)> = vec![
            ("huge entry count", Box::new(|b| b[count_at()..count_at() + 4].copy_from_slice(&u32::MAX.to_le_bytes()))),
            ("huge build-id length", Box::new(|b| b[16..20].copy_from_slice(&u32::MAX.to_le_bytes()))),
            ("huge key section count", Box::new(|b| {
                let at = 20 + key().build_id.len() + 8;
                b[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
            })),
            ("offset past the end", Box::new(move |b| set_u64(b, first + 16, u64::MAX - 3))),
            ("length past the end", Box::new(move |b| set_u64(b, first + 24, 1 << 40))),
            ("offset inside the header", Box::new(move |b| set_u64(b, first + 16, 8))),
            ("overlapping sections", Box::new(move |b| set_u64(b, first + 32 + 16, ALIGN + 100))),
            ("sections out of order", Box::new(move |b| b[first + 32..first + 36].copy_from_slice(&0u32.to_le_bytes()))),
            ("section beyond the key", Box::new(move |b| b[first + 32..first + 36].copy_from_slice(&9u32.to_le_bytes()))),
            ("bad magic", Box::new(|b| b[0] = b'X')),
            ("other version", Box::new(|b| b[12] ^= 1)),
        ];
        for (what, damage) in &cases {
            let mut v = body.to_vec();
            damage(&mut v);
            assert!(read(&signed(v), &key()).is_err(), "{what}");
        }
        // Every byte of the header changed and re-signed: never a panic,
        // and what reads must lie inside the file.
        for i in 0..first + 64 {
            for x in [0x01u8, 0x80, 0xff] {
                let mut v = body.to_vec();
                v[i] ^= x;
                let b = signed(v);
                if let Ok(entries) = read(&b, &key()) {
                    assert!(entries.iter().all(|e| e.offset + e.len <= b.len() as u64 - 4));
                }
            }
        }
        for n in 0..16 {
            assert!(read(&vec![0u8; n], &key()).is_err());
            assert!(read(&signed(vec![0u8; n]), &key()).is_err());
        }
    }

    #[test]
    fn sizes_are_claims() {
        // A file that says it is larger than any sections file is not read
        // at all; the buffers are bounded whatever the length.
        assert!(matches!(read_checked(&[][..], ALIGN + MAX_PAYLOAD + 5), Err(Rejected::Size(_))));
        assert!(matches!(read_checked(&[][..], 3), Err(Rejected::Size(3))));
        assert!(matches!(read_checked(&[][..], 1 << 20), Err(Rejected::Changed)));
    }
}
