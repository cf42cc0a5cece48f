//! The texts of frame lines, kept once and copied many times, and the
//! two sides that keep them in step: the formatter, which makes a line's
//! text the first time its key comes ([`KeptIndex`]), and the copier,
//! which stores the texts it is told to keep and copies them into the
//! output ([`KeptTexts`]).
//!
//! The formatter knows where each kept text is in the copier's store
//! without asking: the copier appends the new texts it is told to keep in
//! the order they come, so both sides compute the same offsets. Their
//! invariant: the copier sees the formatter's places and new texts in the
//! order the formatter made them (the printer's batches carry both), so
//! that after each batch `KeptIndex`'s idea of the store's size is the
//! store's size. DSO names in texts are numbered the same way ([`NameIds`]
//! on the formatter's side, [`KeptTexts::add_names`] on the copier's).

use crate::fasthash::FastMap;
use perf_data::bytes::find_byte;

use super::fast::{hex16, hex16_words, put_frame_line};

/// Marks where a line starts (and the address is printed) in text being
/// formatted; no symbol, file or DSO name can contain it.
pub const LINE: u8 = 0;

/// The key of a line's text: (the line's code, its object's number or
/// [`NO_OBJECT`], the address in the object).
pub type LineKey = (u8, u32, u64);
/// The object number of lines in no object.
pub const NO_OBJECT: u32 = u32::MAX;

/// Where a kept text is in [`KeptTexts`]' store.
pub type Text = u32;

/// Where the copier finds the text of a line: in its store, at an offset
/// below 2^31; or next in the batch's new texts, to be stored or not.
/// Four bytes, one per callchain line: the formatter writes them and the
/// copier on another core reads them, so their cache lines change hands
/// once per batch, and the fewer the better.
///
/// ```text
///   0 | offset (31 bits)          kept: the store at `offset`
///   1 | 0 ... 0 | keep (1 bit)    new: next in the batch
/// ```
///
/// A text, stored or new, is its length (4 bytes) and its [`encode`]d
/// lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameText(u32);

const NEW: u32 = 1 << 31;

impl FrameText {
    pub fn stored(off: Text) -> FrameText {
        debug_assert!(off < NEW);
        FrameText(off)
    }

    fn new(keep: bool) -> FrameText {
        FrameText(NEW | u32::from(keep))
    }

    /// The offset of a stored text.
    pub fn offset(self) -> Option<Text> {
        (self.0 & NEW == 0).then_some(self.0)
    }

    /// Whether the copier has (or keeps) this text, so that the same line
    /// again is the same text.
    pub fn kept(self) -> bool {
        self.0 & NEW == 0 || self.0 & 1 != 0
    }

    /// Next in the batch's new texts.
    pub fn is_new(self) -> bool {
        self.0 & NEW != 0
    }

    /// A new text, to be stored.
    pub fn keeps(self) -> bool {
        self.0 == NEW | 1
    }
}


/// DSO names by number, the formatter's side. It numbers each name the
/// first time a text shows it and hands the new ones to the copier with
/// the batch ([`KeptIndex::take_names`], [`KeptTexts::add_names`]): a kept
/// text then holds a 4-byte number instead of a path that may be 100
/// bytes long, for every address of the DSO (kept texts are pstitch's
/// largest table). The table holds each name as the copier prints it, with
/// the [`NAME_END`] of the line.
#[derive(Default)]
pub struct NameIds {
    names: Vec<Box<[u8]>>,
    by_name: FastMap<Box<[u8]>, u32>,
    /// The number of each DSO's name as last seen ([`NO_NAME`]: none).
    by_dso: Vec<u32>,
    /// Names numbered since the last batch: each its length (4 bytes) and
    /// bytes.
    new: Vec<u8>,
}

const NO_NAME: u32 = u32::MAX;
/// Names shorter than this stay in the text (a reference takes 4 bytes).
pub const SHORTEST_REF: usize = 12;
/// Names numbered at most (a bound on a hostile input's table).
const MAX_NAMES: usize = 1 << 24;

impl NameIds {
    /// The number of `dso`'s name, `name` (numbered now if new).
    fn id(&mut self, dso: u32, name: &[u8]) -> Option<u32> {
        let slot = dso as usize;
        if let Some(&id) = self.by_dso.get(slot)
            && id != NO_NAME
            && self.names[id as usize].strip_suffix(NAME_END) == Some(name)
        {
            return Some(id);
        }
        let id = match self.by_name.get(name) {
            Some(&id) => id,
            None => {
                if self.names.len() >= MAX_NAMES {
                    return None;
                }
                let id = self.names.len() as u32;
                let shown = [name, NAME_END].concat();
                self.new.extend_from_slice(&(shown.len() as u32).to_le_bytes());
                self.new.extend_from_slice(&shown);
                self.names.push(shown.into());
                self.by_name.insert(name.into(), id);
                id
            }
        };
        if self.by_dso.len() <= slot {
            self.by_dso.resize(slot + 1, NO_NAME);
        }
        self.by_dso[slot] = id;
        Some(id)
    }
}


/// A DSO name at `at` in a text being formatted: name number `id`.
#[derive(Debug, Clone, Copy)]
struct NameRef {
    at: usize,
    len: usize,
    id: u32,
}

/// The formatter's side: where the copier keeps each kept text, by key.
pub struct KeptIndex {
    /// Kept texts by key, as places in the copier's store.
    cache: FastMap<LineKey, Text>,
    /// Size of the copier's store.
    kept_bytes: u64,
    /// The first release point (see [`RELEASE_MAX`]).
    release_min: u64,
    /// A small direct-mapped copy of recently used `cache` entries: the
    /// hot addresses of a recording (kernel entry paths, a program's main
    /// loop) are looked up without touching the large table.
    front: Box<[(LineKey, Text)]>,
    /// DSO names in the text being formatted that its encoding refers to
    /// instead of holding.
    refs: Vec<NameRef>,
    names: NameIds,
}

/// Entries in [`KeptIndex::front`] (a power of two; 384 KiB).
const FRONT: usize = 16384;
const NO_KEY: LineKey = (u8::MAX, NO_OBJECT, u64::MAX);

#[inline]
fn front_slot(k: &LineKey) -> usize {
    let h = (k.2 ^ (u64::from(k.1) << 40) ^ (u64::from(k.0) << 56)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (h >> (64 - FRONT.trailing_zeros())) as usize
}

/// [`KeptIndex::add`] says when the kept text crossed a point where the
/// formatter lets object files' pages go: every 2 MiB, or on a small
/// input ([`KeptIndex::small_input`]) every 8 KiB at first, then ever
/// more seldom (see [`super::mapping::release_due`]).
const RELEASE_MAX: u64 = 2 << 20;
const RELEASE_MIN_SMALL: u64 = 8 << 10;

impl Default for KeptIndex {
    fn default() -> KeptIndex {
        KeptIndex { cache: FastMap::default(), kept_bytes: 0, release_min: RELEASE_MAX, front: vec![(NO_KEY, 0); FRONT].into_boxed_slice(), refs: Vec::new(), names: NameIds::default() }
    }
}

impl KeptIndex {
    /// Pages go often while the kept text is small: a small input's run
    /// (one thread, see [`super::Threads`]) keeps its peak memory small
    /// (`bench/small.py`: 2-5 MB less on its recordings). A large input's
    /// run does not: there the releases cost time (some 45 of them on the
    /// benchmark's 92 MB recording with inline frames, 7-10% of its wall
    /// time in paired runs, faulting the same pages in again), and its
    /// peak is far below perf's anyway.
    pub fn small_input(&mut self) {
        self.release_min = RELEASE_MIN_SMALL;
    }

    /// The place of `key`'s text if it was used recently.
    #[inline]
    pub fn front(&self, key: &LineKey) -> Option<FrameText> {
        let (k, t) = self.front[front_slot(key)];
        (k == *key).then_some(FrameText::stored(t))
    }

    /// The place of `key`'s text if it is kept.
    pub fn get(&mut self, key: &LineKey) -> Option<FrameText> {
        let &t = self.cache.get(key)?;
        self.front[front_slot(key)] = (*key, t);
        Some(FrameText::stored(t))
    }

    /// A new text is being formatted: forget the names of the last one.
    pub fn begin(&mut self) {
        self.refs.clear();
    }

    /// The text being formatted shows object `object`'s name `name` at
    /// `at`: long names are referred to by number.
    pub fn name_at(&mut self, at: usize, object: u32, name: &[u8]) {
        if name.len() >= SHORTEST_REF
            && let Some(id) = self.names.id(object, name)
        {
            self.refs.push(NameRef { at, len: name.len(), id });
        }
    }

    /// Appends the new `text` (lines after [`LINE`] marks), [`encode`]d
    /// with its length first, to `out`; keeps it under `key` if `keep` and
    /// the store has room. Its place, and whether the store crossed
    /// another release point.
    pub fn add(&mut self, out: &mut Vec<u8>, text: &[u8], key: LineKey, keep: bool) -> (FrameText, bool) {
        let start = out.len();
        out.extend_from_slice(&[0; 4]);
        encode(out, text, &self.refs);
        // Texts larger than 4 GiB do not fit their length: an empty line
        // then (nothing that large can be printed anyway).
        let Ok(body) = u32::try_from(out.len() - start - 4) else {
            out.truncate(start);
            out.extend_from_slice(&[0; 4]);
            return (FrameText::new(false), false);
        };
        out[start..start + 4].copy_from_slice(&body.to_le_bytes());
        let len = u64::from(body) + 4;
        // Offsets are 31-bit: past 2 GiB of text, lines are made each time.
        let off = self.kept_bytes;
        if !(keep && off + len < u64::from(NEW)) {
            return (FrameText::new(false), false);
        }
        let crossed = super::mapping::release_due(off, len, self.release_min, RELEASE_MAX);
        self.kept_bytes += len;
        self.cache.insert(key, off as Text);
        self.front[front_slot(&key)] = (key, off as Text);
        (FrameText::new(true), crossed)
    }

    /// Moves the DSO names numbered since the last call to `out` (for
    /// [`KeptTexts::add_names`]).
    pub fn take_names(&mut self, out: &mut Vec<u8>) {
        out.clear();
        std::mem::swap(out, &mut self.names.new);
    }
}

/// The copier's side: every kept text, and the DSO names they refer to.
#[derive(Default)]
pub struct KeptTexts {
    /// Every kept text, end to end ([`encode`]d): neighbours in time are
    /// neighbours in memory, and there is no allocation per text.
    texts: Vec<u8>,
    /// The DSO names the texts refer to, by number, each with the
    /// [`NAME_END`] of its line.
    names: Vec<Box<[u8]>>,
}

impl KeptTexts {
    /// Takes the names numbered since the last batch
    /// ([`KeptIndex::take_names`]).
    pub fn add_names(&mut self, mut new: &[u8]) {
        while let Some((len, rest)) = new.split_first_chunk::<4>() {
            let (name, rest) = rest.split_at(u32::from_le_bytes(*len) as usize);
            self.names.push(name.into());
            new = rest;
        }
    }

    /// Where the next text kept goes in the store.
    pub fn kept_len(&self) -> Text {
        self.texts.len() as Text
    }

    /// Appends the line(s) of a frame at `ip` to `out`; `new` has the
    /// text (its length first) when `at` says it is new. `callchain`: a
    /// callchain line (a tab first), else the sample line's own address.
    #[inline]
    pub fn print(&mut self, out: &mut Vec<u8>, ip: u64, show_ip: bool, callchain: bool, at: FrameText, new: &[u8]) {
        match at.offset() {
            Some(off) => expand(out, lines(self.texts.get(off as usize..).unwrap_or_default()), &self.names, ip, show_ip, callchain),
            None => {
                if at.keeps() {
                    self.texts.extend_from_slice(new);
                }
                expand(out, lines(new), &self.names, ip, show_ip, callchain);
            }
        }
    }
}

/// The text of a new line in a batch's new texts, which are end to end,
/// each its length (4 bytes) and bytes: the next one from `pos` on.
#[inline]
pub fn next_new_text<'a>(texts: &'a [u8], pos: &mut usize, place: FrameText) -> &'a [u8] {
    if !place.is_new() {
        return &[];
    }
    let rest = texts.get(*pos..).unwrap_or_default();
    let len = rest.first_chunk::<4>().map_or(0, |l| 4 + u32::from_le_bytes(*l) as usize);
    let t = rest.get(..len).unwrap_or(rest);
    *pos += t.len();
    t
}

/// Cached form of frame text: each line as a 4-byte length and its bytes,
/// so that copying it out needs no search. A line that ends in a DSO name
/// of `refs` and `)` + newline (most callchain lines) holds the name's
/// number instead, and the copier's table holds the name with that end:
///
/// ```text
///   plain:     | len (u32)                 | bytes ...
///   with name: | REF | len before the name | bytes before | id (u32)
/// ```
fn encode(out: &mut Vec<u8>, text: &[u8], refs: &[NameRef]) {
    let Some(first) = find_byte(text, LINE) else { return };
    let mut at = first + 1;
    let mut refs = refs.iter().peekable();
    loop {
        let end = find_byte(&text[at..], LINE).map(|e| at + e);
        let line_end = end.unwrap_or(text.len());
        while refs.next_if(|r| r.at < at).is_some() {}
        match refs.next_if(|r| r.at + r.len <= line_end) {
            Some(r) if text[r.at + r.len..line_end] == *NAME_END => {
                out.extend_from_slice(&(REF | (r.at - at) as u32).to_le_bytes());
                out.extend_from_slice(&text[at..r.at]);
                out.extend_from_slice(&r.id.to_le_bytes());
            }
            _ => {
                out.extend_from_slice(&((line_end - at) as u32).to_le_bytes());
                out.extend_from_slice(&text[at..line_end]);
            }
        }
        match end {
            Some(e) => at = e + 1,
            None => return,
        }
    }
}

/// Marks an encoded line that refers to a DSO name (see [`encode`]).
const REF: u32 = 1 << 31;
/// What follows a DSO name at the end of a callchain line.
const NAME_END: &[u8] = b")\n";

/// The next encoded line of `text`: its bytes, or the bytes before a DSO
/// name and the name's number; and the rest.
#[inline]
fn next_line(text: &[u8]) -> Option<(&[u8], Option<u32>, &[u8])> {
    let (head, rest) = text.split_first_chunk::<4>()?;
    let head = u32::from_le_bytes(*head);
    let (line, rest) = rest.split_at((head & !REF) as usize);
    if head & REF == 0 {
        return Some((line, None, rest));
    }
    let (id, rest) = rest.split_first_chunk::<4>()?;
    Some((line, Some(u32::from_le_bytes(*id)), rest))
}

/// Appends an encoded line (see [`next_line`]); `names` end in
/// [`NAME_END`].
#[inline]
fn put_line(out: &mut Vec<u8>, names: &[Box<[u8]>], line: &[u8], name: Option<u32>) {
    out.extend_from_slice(line);
    if let Some(id) = name {
        out.extend_from_slice(names.get(id as usize).map_or(&[][..], |n| n));
    }
}

/// The encoded lines of the text (its length first) at the start of `at`.
fn lines(at: &[u8]) -> &[u8] {
    let Some((len, rest)) = at.split_first_chunk::<4>() else { return &[] };
    rest.get(..u32::from_le_bytes(*len) as usize).unwrap_or_default()
}

/// Copies encoded frame text to `out`, each line after the address when
/// the `ip` field is shown (`\t` first on callchain lines).
#[inline]
fn expand(out: &mut Vec<u8>, mut text: &[u8], names: &[Box<[u8]>], ip: u64, show_ip: bool, callchain: bool) {
    if show_ip && callchain {
        // Most lines: the tab and the address's two words stored straight
        // into the output, without a copy through the stack.
        let words = hex16_words(ip);
        while let Some((line, name, rest)) = next_line(text) {
            let name = name.map_or(&[][..], |id| names.get(id as usize).map_or(&[][..], |n| n));
            put_frame_line(out, words, line, name);
            text = rest;
        }
        return;
    }
    let mut prefix = [b'\t'; 17];
    if show_ip {
        hex16(&mut prefix[1..], ip);
    }
    let prefix = match (show_ip, callchain) {
        (false, _) => &[][..],
        (true, true) => &prefix[..],
        (true, false) => &prefix[1..],
    };
    while let Some((line, name, rest)) = next_line(text) {
        out.extend_from_slice(prefix);
        put_line(out, names, line, name);
        text = rest;
    }
}


#[cfg(test)]
mod tests {
    use super::*;

    /// A place says what it was made to say, and a text's lines come back
    /// from behind its length.
    #[test]
    fn frame_texts_pack_into_four_bytes() {
        assert_eq!(std::mem::size_of::<FrameText>(), 4);
        for off in [0, 1, 4096, NEW - 1] {
            let t = FrameText::stored(off);
            assert_eq!((t.offset(), t.kept(), t.is_new(), t.keeps()), (Some(off), true, false, false));
        }
        for keep in [false, true] {
            let t = FrameText::new(keep);
            assert_eq!((t.offset(), t.kept(), t.is_new(), t.keeps()), (None, keep, true, keep));
        }
        let mut body = Vec::new();
        encode(&mut body, b"\0 main (x)\0 f (inlined)", &[]);
        let mut text = (body.len() as u32).to_le_bytes().to_vec();
        text.extend_from_slice(&body);
        text.extend_from_slice(b"next");
        assert_eq!(lines(&text), &body[..]);
        assert_eq!(lines(&text[..6]), b"");
        assert_eq!(lines(b"ab"), b"");
    }

    /// Encoding finds the lines as splitting at LINE does.
    #[test]
    fn encode_splits_at_line_marks() {
        let by_split = |text: &[u8]| {
            let mut out = Vec::new();
            for line in text.split(|&b| b == LINE).skip(1) {
                out.extend_from_slice(&(line.len() as u32).to_le_bytes());
                out.extend_from_slice(line);
            }
            out
        };
        let texts: [&[u8]; 6] = [b"", b"\0 main+0x1 (/bin/x)\n", b"\0a\n\0b (inlined)\n\0c\n", b"junk\0a", b"\0\0", b"\0 a very long name that takes more than eight bytes\0x"];
        for text in texts {
            let mut out = Vec::new();
            encode(&mut out, text, &[]);
            assert_eq!(out, by_split(text), "{text:?}");
        }
    }

    /// A text that refers to DSO names prints as the text holding them,
    /// whatever the lines around the names are.
    #[test]
    fn dso_name_references_print_the_names() {
        let long_tail = format!(")\n  {}\n", "x".repeat(300));
        let mut names = NameIds::default();
        let mut copier = KeptTexts::default();
        let lines: Vec<(String, Option<&str>, String)> = vec![
            (" main+0x1d (".into(), Some("/tmp/pstitch-fixtures/bin/cwork"), ")\n".into()),
            (" f (inlined)\n".into(), None, String::new()),
            (" g+0x2 (".into(), Some("/usr/lib/x86_64-linux-gnu/libc.so.6"), "+0x1234)\n".into()),
            (" h (".into(), Some("/usr/lib/x86_64-linux-gnu/libc.so.6"), long_tail),
            (" [unknown] (".into(), Some("[unknown]"), ")\n".into()),
            (String::new(), Some("/a/dso/name/with/nothing/before"), String::new()),
        ];
        for n in 1..=lines.len() {
            for first in 0..lines.len() {
                let mut text = Vec::new();
                let mut refs = Vec::new();
                for (i, (before, name, after)) in lines.iter().cycle().skip(first).take(n).enumerate() {
                    text.push(LINE);
                    text.extend_from_slice(before.as_bytes());
                    if let Some(name) = name {
                        if name.len() >= SHORTEST_REF {
                            let id = names.id(i as u32, name.as_bytes()).unwrap();
                            refs.push(NameRef { at: text.len(), len: name.len(), id });
                        }
                        text.extend_from_slice(name.as_bytes());
                    }
                    text.extend_from_slice(after.as_bytes());
                }
                let (mut with, mut without) = (Vec::new(), Vec::new());
                encode(&mut with, &text, &refs);
                encode(&mut without, &text, &[]);
                if !refs.is_empty() && n == 1 && first == 0 {
                    assert!(with.len() < without.len(), "a reference saves the name");
                }
                // As a batch brings them.
                copier.add_names(&std::mem::take(&mut names.new));
                for (ip, show, style) in [(0x7f00_1234, true, true), (0x55, true, false), (0, false, true)] {
                    let (mut a, mut b) = (Vec::new(), Vec::new());
                    expand(&mut a, &with, &copier.names, ip, show, style);
                    expand(&mut b, &without, &[], ip, show, style);
                    assert_eq!(String::from_utf8_lossy(&a), String::from_utf8_lossy(&b), "{n} lines from {first}");
                }
            }
        }
        // Names come to the copier as the formatter numbered them.
        let mut f = NameIds::default();
        assert_eq!(f.id(3, b"/x/one/long/name"), Some(0));
        assert_eq!(f.id(4, b"/x/two/long/name"), Some(1));
        assert_eq!(f.id(3, b"/x/one/long/name"), Some(0));
        assert_eq!(f.id(3, b"/x/renamed/dso/name"), Some(2), "a DSO renamed gets its new name");
        assert_eq!(f.id(5, b"/x/two/long/name"), Some(1), "equal names share a number");
        let mut copier = KeptTexts::default();
        copier.add_names(&f.new);
        assert_eq!(copier.names, f.names);
    }
}
