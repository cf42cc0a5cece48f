//! `.debug_line` decoding with binutils' semantics (`bfd/dwarf2.c`:
//! `decode_line_info`, `add_line_info`, `sort_line_sequences`,
//! `lookup_address_in_line_info_table`): every row is kept (is_stmt is
//! ignored), a row at the same address as the previous one replaces it,
//! file names are built by `concat_filename`, sequences are sorted and
//! trimmed so that they do not overlap.

use std::sync::Arc;

use super::reader::Reader;
use crate::fasthash::FastMap;

#[derive(Debug, Clone, Copy)]
struct Row {
    address: u64,
    op_index: u8,
    /// Index into `LineTable::names` (`u32::MAX`: no file name).
    file: u32,
    line: u32,
    end_sequence: bool,
    /// Next lower row (binutils' `prev_line`), `u32::MAX` for none.
    prev: u32,
}

const NONE: u32 = u32::MAX;

/// A row as lookups need it: address, line, and the file name index
/// (`FILE_NONE` for none) with [`END`] set on an end-of-sequence row.
#[derive(Debug, Clone, Copy)]
struct Packed {
    address: u64,
    line: u32,
    file_end: u32,
}

const END: u32 = 1 << 31;
const FILE_NONE: u32 = END - 1;

#[derive(Debug, Clone)]
struct Sequence {
    low_pc: u64,
    /// The address of the highest row (set once the table is sorted).
    high: u64,
    /// The highest row (binutils' `last_line`).
    last: u32,
    order: u32,
}

/// What `lookup_address_in_line_info_table` returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineHit {
    pub file: Option<Arc<str>>,
    pub line: u32,
}

/// One unit's decoded line table.
#[derive(Debug, Default)]
pub struct LineTable {
    pub use_dir_and_file_0: bool,
    comp_dir: Option<Arc<str>>,
    dirs: Vec<Option<Arc<str>>>,
    files: Vec<(Option<Arc<str>>, u64)>,
    /// Interned `concat_filename` results.
    pub names: Vec<Arc<str>>,
    /// Where each name is in `names`, while decoding: a program may switch
    /// files on every row, among tens of thousands of names, so finding a
    /// name must not depend on how many there are.
    name_ids: FastMap<Arc<str>, u32>,
    /// Names looked at to intern one (for the tests' bound on the work).
    #[cfg(test)]
    probes: u64,
    /// Every row, while decoding (see [`LineTable::pack`]).
    rows: Vec<Row>,
    seqs: Vec<Sequence>,
    /// Every sequence's rows in ascending order, end to end (`rows` go
    /// then).
    ordered: Vec<Packed>,
    /// Where each sequence starts in `ordered`, and where the last ends.
    starts: Vec<u32>,
    lcl_head: u32,
    /// [low, high] of each sequence, for the unit's address ranges.
    pub seq_ranges: Vec<(u64, u64)>,
    /// Decoded with [`Rows::Skip`]: no rows were kept. Then `open` is the
    /// [low, high] of the rows after the last end of sequence (a program
    /// that stops inside a sequence), which lookups see but `seq_ranges`
    /// does not hold.
    skipped: bool,
    open: Option<(u64, u64)>,
    /// [`LineTable::filename`] answers by file number.
    memo: std::cell::RefCell<Vec<Option<Arc<str>>>>,
}

/// Whether [`LineTable::decode`] keeps the rows. Every unit binutils reads
/// before the one holding an address is decoded, but only the sequences'
/// ranges of most of them are ever used (they go into the address trie);
/// their rows are looked at only if a lookup's address falls in one of
/// their sequences. Decoding is a function of the section's bytes alone, so
/// the rows can be decoded when first needed with the same result: the
/// program is run the same way, with the same checks and failures, minus
/// the rows and their file names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rows {
    Keep,
    Skip,
}

/// String sections a line table header may refer to.
pub struct StrSections<'a> {
    pub debug_str: &'a [u8],
    pub debug_line_str: &'a [u8],
    /// `.debug_str_offsets` base for strx forms, with the offset size.
    pub str_offsets: Option<(&'a [u8], u64, u8)>,
    /// Names already read from `.debug_str` / `.debug_line_str`.
    pub memo: &'a NameMemo,
}

/// The directory and file names of DWARF 5 headers read so far, by their
/// place in `.debug_str` / `.debug_line_str`. Every unit's header lists the
/// headers it includes, mostly the same few hundred paths (the linker
/// merges equal strings), so each is made into a string once and shared by
/// the tables that name it.
#[derive(Default)]
pub struct NameMemo(std::cell::RefCell<FastMap<u64, Option<Arc<str>>>>);

impl NameMemo {
    /// `non_empty` of the string at `off` in `d` (`line_str`: which section).
    fn get(&self, d: &[u8], off: u64, line_str: bool) -> Option<Arc<str>> {
        let key = off | (u64::from(line_str) << 63);
        if off >> 63 == 0
            && let Some(n) = self.0.borrow().get(&key)
        {
            return n.clone();
        }
        let n = non_empty(cstr(d, off));
        if off >> 63 == 0 {
            self.0.borrow_mut().insert(key, n.clone());
        }
        n
    }
}

fn cstr(d: &[u8], off: u64) -> Option<&[u8]> {
    let rest = d.get(usize::try_from(off).ok()?..)?;
    let n = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
    Some(&rest[..n])
}

fn non_empty(b: Option<&[u8]>) -> Option<Arc<str>> {
    match b {
        Some(s) if !s.is_empty() => Some(String::from_utf8_lossy(s).into()),
        _ => None,
    }
}

fn is_absolute(p: &str) -> bool {
    p.starts_with('/')
}

impl LineTable {
    /// binutils' `concat_filename`.
    pub fn concat_filename(&self, file: u64) -> Arc<str> {
        let mut file = file;
        if !self.use_dir_and_file_0 {
            if file == 0 {
                return "<unknown>".into();
            }
            file -= 1;
        }
        let Some((name, dir)) = usize::try_from(file).ok().and_then(|f| self.files.get(f)) else {
            return "<unknown>".into();
        };
        let Some(name) = name else { return "<unknown>".into() };
        if is_absolute(name) {
            return name.clone();
        }
        let mut dir = *dir;
        if !self.use_dir_and_file_0 {
            dir = dir.wrapping_sub(1);
        }
        let subdir = usize::try_from(dir).ok().and_then(|d| self.dirs.get(d)).cloned().flatten();
        let mut dir_name = None;
        if subdir.as_deref().is_none_or(|s| !is_absolute(s)) {
            dir_name = self.comp_dir.clone();
        }
        let (dir_name, subdir) = match dir_name {
            Some(d) => (Some(d), subdir),
            None => (subdir, None),
        };
        match (dir_name, subdir) {
            (None, _) => name.clone(),
            (Some(d), Some(s)) => format!("{d}/{s}/{name}").into(),
            (Some(d), None) => format!("{d}/{name}").into(),
        }
    }

    /// [`LineTable::concat_filename`] for a decoded table (its file list
    /// no longer changes), each answer made once: DIEs name their files by
    /// number, many times over.
    pub fn filename(&self, file: u64) -> Arc<str> {
        let Some(i) = usize::try_from(file).ok().filter(|&i| i <= self.files.len()) else {
            return self.concat_filename(file);
        };
        if let Some(Some(n)) = self.memo.borrow().get(i) {
            return n.clone();
        }
        let n = self.concat_filename(file);
        let mut memo = self.memo.borrow_mut();
        if memo.len() <= i {
            memo.resize(i + 1, None);
        }
        memo[i] = Some(n.clone());
        n
    }

    fn intern(&mut self, name: Arc<str>) -> u32 {
        #[cfg(test)]
        {
            self.probes += 1;
        }
        let next = self.names.len() as u32;
        let id = *self.name_ids.entry(name.clone()).or_insert(next);
        if id == next {
            self.names.push(name);
        }
        id
    }

    fn sorts_after(&self, a: &Row, b: u32) -> bool {
        let b = &self.rows[b as usize];
        a.address > b.address || (a.address == b.address && a.op_index > b.op_index)
    }

    /// binutils' `add_line_info`.
    fn add(&mut self, r: Row) {
        let idx = self.rows.len() as u32;
        self.rows.push(r);
        let info = r;
        let seq_last = self.seqs.last().map(|s| s.last);
        match seq_last {
            Some(last)
                if self.rows[last as usize].address == info.address
                    && self.rows[last as usize].op_index == info.op_index
                    && self.rows[last as usize].end_sequence == info.end_sequence =>
            {
                if self.lcl_head == last {
                    self.lcl_head = idx;
                }
                self.rows[idx as usize].prev = self.rows[last as usize].prev;
                self.seqs.last_mut().expect("some").last = idx;
            }
            Some(last) if !self.rows[last as usize].end_sequence => {
                if info.end_sequence || self.sorts_after(&info, last) {
                    self.rows[idx as usize].prev = last;
                    self.seqs.last_mut().expect("some").last = idx;
                    if self.lcl_head == NONE {
                        self.lcl_head = idx;
                    }
                } else if self.lcl_head != NONE
                    && !self.sorts_after(&info, self.lcl_head)
                    && (self.rows[self.lcl_head as usize].prev == NONE
                        || self.sorts_after(&info, self.rows[self.lcl_head as usize].prev))
                {
                    let h = self.lcl_head as usize;
                    self.rows[idx as usize].prev = self.rows[h].prev;
                    self.rows[h].prev = idx;
                } else {
                    let mut li2 = last;
                    let mut li1 = self.rows[li2 as usize].prev;
                    while li1 != NONE {
                        if !self.sorts_after(&info, li2) && self.sorts_after(&info, li1) {
                            break;
                        }
                        li2 = li1;
                        li1 = self.rows[li1 as usize].prev;
                    }
                    self.lcl_head = li2;
                    self.rows[idx as usize].prev = self.rows[li2 as usize].prev;
                    self.rows[li2 as usize].prev = idx;
                    let seq = self.seqs.last_mut().expect("some");
                    if info.address < seq.low_pc {
                        seq.low_pc = info.address;
                    }
                }
            }
            _ => {
                let order = self.seqs.len() as u32;
                self.seqs.push(Sequence { low_pc: info.address, high: 0, last: idx, order });
                self.lcl_head = idx;
            }
        }
    }

    /// binutils' `decode_line_info` for the program at `offset`; `None`
    /// where binutils fails (the unit is then marked in error).
    pub fn decode(
        section: &[u8],
        offset: u64,
        little_endian: bool,
        addr_size: u8,
        comp_dir: Option<Arc<str>>,
        strs: &StrSections<'_>,
        keep: Rows,
    ) -> Option<LineTable> {
        let keep = keep == Rows::Keep;
        if section.len() < 16 {
            return None;
        }
        let start = usize::try_from(offset).ok()?;
        if offset != 0 && start >= section.len() {
            return None;
        }
        let mut r = Reader::new(section, little_endian);
        r.seek(start);
        let mut total_length = r.u32() as u64;
        let mut offset_size = 4u8;
        if total_length == 0xffff_ffff {
            total_length = r.u64();
            offset_size = 8;
        } else if total_length == 0 && addr_size == 8 {
            total_length = r.u32() as u64;
            offset_size = 8;
        }
        if total_length > r.remaining() as u64 {
            return None;
        }
        let end = r.pos() + total_length as usize;
        r.set_end(end);
        let version = r.u16();
        if !(2..=5).contains(&version) {
            return None;
        }
        let need = offset_size as usize + if version >= 5 { 8 } else if version >= 4 { 6 } else { 5 };
        if r.pos() + need >= end {
            return None;
        }
        if version >= 5 {
            r.u8();
            if r.u8() != 0 {
                return None;
            }
        }
        let _prologue_length = if offset_size == 4 { r.u32() as u64 } else { r.u64() };
        let min_insn = r.u8();
        let max_ops = if version >= 4 { r.u8() } else { 1 };
        if max_ops == 0 {
            return None;
        }
        let _default_is_stmt = r.u8();
        let line_base = r.u8() as i8 as i64;
        let line_range = r.u8();
        let opcode_base = r.u8();
        if r.pos() + (opcode_base as usize).saturating_sub(1) >= end {
            return None;
        }
        let mut std_lens = vec![1u8; opcode_base.max(1) as usize];
        for l in std_lens.iter_mut().skip(1) {
            *l = r.u8();
        }
        let mut t = LineTable { comp_dir, lcl_head: NONE, skipped: !keep, ..Default::default() };
        if version >= 5 {
            // Directory table, then file table.
            let dirs = read_formatted(&mut r, offset_size, strs)?;
            t.dirs = dirs.into_iter().map(|(n, _)| n).collect();
            t.files = read_formatted(&mut r, offset_size, strs)?;
            t.use_dir_and_file_0 = true;
        } else {
            while let Some(d) = r.cstr_nonempty() {
                t.dirs.push(non_empty(Some(d)));
            }
            while let Some(f) = r.cstr_nonempty() {
                let dir = r.uleb();
                r.uleb();
                r.uleb();
                t.files.push((non_empty(Some(f)), dir));
            }
            t.use_dir_and_file_0 = false;
        }
        // The name of each file number once made (a file number not in the
        // table yet is "<unknown>" until DW_LNE_define_file adds it: not
        // kept).
        let mut name_cache: FastMap<u64, u32> = FastMap::default();
        let mut file_name = |t: &mut LineTable, f: u64| -> u32 {
            if !keep {
                return NONE;
            }
            if let Some(&n) = name_cache.get(&f) {
                return n;
            }
            let name = t.concat_filename(f);
            let known = &*name != "<unknown>";
            let n = t.intern(name);
            if known {
                name_cache.insert(f, n);
            }
            n
        };
        // What each special opcode adds to the address and the line, worked
        // out once per table rather than with two divisions per row (most
        // rows come from special opcodes). Only for `max_ops` 1 (all but
        // VLIW targets); the others divide as they go.
        let special: Vec<(u64, i64)> = if max_ops == 1 && line_range != 0 {
            (opcode_base as u64..256)
                .map(|op| {
                    let adj = op - opcode_base as u64;
                    (adj / line_range as u64 * min_insn as u64, line_base + (adj % line_range as u64) as i64)
                })
                .collect()
        } else {
            Vec::new()
        };
        // A row per two or three bytes of program, about.
        if keep {
            t.rows.reserve((end - r.pos()) / 3);
        }
        let add = |t: &mut LineTable, row: Row| {
            if keep {
                t.add(row)
            }
        };
        while r.pos() < end {
            let mut address: u64 = 0;
            let mut op_index: u8 = 0;
            let mut file = NONE;
            let mut line: u32 = 1;
            let mut end_sequence = false;
            let (mut low_pc, mut high_pc) = (u64::MAX, 0u64);
            if !t.files.is_empty() {
                // The file register starts at 1 in every DWARF version
                // (binutils 2.47; older ones used entry 0 for DWARF 5).
                file = file_name(&mut t, 1);
            }
            let file_id = |t: &LineTable, f: u32| if f != NONE && !t.names[f as usize].is_empty() { f } else { NONE };
            while !end_sequence && r.pos() < end {
                let op = r.u8();
                if op >= opcode_base {
                    let adj = (op - opcode_base) as u64;
                    if let Some(&(addr_adv, line_adv)) = special.get(adj as usize) {
                        address = address.wrapping_add(addr_adv);
                        line = (line as i64 + line_adv) as u32;
                    } else {
                        if line_range == 0 {
                            return None;
                        }
                        let v = op_index as u64 + adj / line_range as u64;
                        address = address.wrapping_add(v / max_ops as u64 * min_insn as u64);
                        op_index = (v % max_ops as u64) as u8;
                        line = (line as i64 + line_base + (adj % line_range as u64) as i64) as u32;
                    }
                    let f = file_id(&t, file);
                    add(&mut t, Row { address, op_index, file: f, line, end_sequence: false, prev: NONE });
                    low_pc = low_pc.min(address);
                    high_pc = high_pc.max(address);
                    continue;
                }
                match op {
                    0 => {
                        let len = r.uleb();
                        let ext = r.u8();
                        match ext {
                            1 => {
                                end_sequence = true;
                                let f = file_id(&t, file);
                                add(&mut t, Row { address, op_index, file: f, line, end_sequence: true, prev: NONE });
                                low_pc = low_pc.min(address);
                                high_pc = high_pc.max(address);
                                if low_pc != high_pc {
                                    t.seq_ranges.push((low_pc, high_pc));
                                }
                            }
                            2 => {
                                address = r.addr(addr_size);
                                op_index = 0;
                            }
                            3 => {
                                let name = r.cstr_nonempty();
                                let dir = r.uleb();
                                r.uleb();
                                r.uleb();
                                t.files.push((non_empty(name), dir));
                            }
                            // Discriminators: addr2line prints them, perf
                            // drops them.
                            4 => {
                                r.uleb();
                            }
                            0x80 => r.skip(len.saturating_sub(1) as usize),
                            _ => return None,
                        }
                    }
                    1 => {
                        let f = file_id(&t, file);
                        add(&mut t, Row { address, op_index, file: f, line, end_sequence: false, prev: NONE });
                        low_pc = low_pc.min(address);
                        high_pc = high_pc.max(address);
                    }
                    2 => {
                        let adv = r.uleb();
                        if max_ops == 1 {
                            address = address.wrapping_add(min_insn as u64 * adv);
                        } else {
                            let v = op_index as u64 + adv;
                            address = v / max_ops as u64 * min_insn as u64;
                            op_index = (v % max_ops as u64) as u8;
                        }
                    }
                    3 => line = (line as i64 + r.sleb()) as u32,
                    4 => {
                        let f = r.uleb();
                        file = file_name(&mut t, f);
                    }
                    5 => {
                        r.uleb();
                    }
                    6 | 7 => {}
                    8 => {
                        if line_range == 0 {
                            return None;
                        }
                        let adj = (255 - opcode_base as u64) / line_range as u64;
                        if max_ops == 1 {
                            address = address.wrapping_add(min_insn as u64 * adj);
                        } else {
                            let v = op_index as u64 + adj;
                            address = address.wrapping_add(min_insn as u64 * (v / max_ops as u64));
                            op_index = (v % max_ops as u64) as u8;
                        }
                    }
                    9 => {
                        address = address.wrapping_add(r.u16() as u64);
                        op_index = 0;
                    }
                    _ => {
                        let n = std_lens.get(op as usize).copied().unwrap_or(0);
                        for _ in 0..n {
                            r.uleb();
                        }
                    }
                }
            }
            if !end_sequence && low_pc <= high_pc {
                t.open = Some((low_pc, high_pc));
            }
        }
        t.name_ids = FastMap::default();
        t.sort_sequences();
        Some(t)
    }

    /// Decoded with [`Rows::Skip`]: lookups need the rows decoded first
    /// (where [`LineTable::may_hold`] says they can find something).
    pub fn rows_skipped(&self) -> bool {
        self.skipped
    }

    /// Whether a lookup of `addr` can find a row. A lookup answers only
    /// inside a sequence, between its lowest row (or above, where sorting
    /// trimmed it) and its highest; these bounds are the sequence's
    /// `seq_ranges` entry, or `open` for one the program did not end.
    /// The rows after the last end of sequence (see `open`).
    pub fn open_range(&self) -> Option<(u64, u64)> {
        self.open
    }

    pub fn may_hold(&self, addr: u64) -> bool {
        self.seq_ranges.iter().chain(self.open.iter()).any(|&(l, h)| addr >= l && addr < h)
    }

    /// binutils' `sort_line_sequences`.
    fn sort_sequences(&mut self) {
        if self.seqs.is_empty() {
            return;
        }
        let rows = &self.rows;
        let n = self.seqs.len() as u32;
        // binutils numbers sequences from the most recent one.
        for s in self.seqs.iter_mut() {
            s.order = n - 1 - s.order;
            s.high = rows[s.last as usize].address;
        }
        self.seqs.sort_by(|a, b| {
            let (la, lb) = (&rows[a.last as usize], &rows[b.last as usize]);
            a.low_pc
                .cmp(&b.low_pc)
                .then(lb.address.cmp(&la.address))
                .then(lb.op_index.cmp(&la.op_index))
                .then(a.order.cmp(&b.order))
        });
        let mut out: Vec<Sequence> = Vec::with_capacity(n as usize);
        let mut last_high = self.seqs[0].high;
        let mut iter = std::mem::take(&mut self.seqs).into_iter();
        out.push(iter.next().expect("non-empty"));
        for mut s in iter {
            let high = s.high;
            if s.low_pc < last_high {
                if high <= last_high {
                    continue;
                }
                s.low_pc = last_high;
            }
            last_high = high;
            out.push(s);
        }
        self.seqs = out;
    }

    /// Lays every sequence's rows out in ascending order (binutils builds
    /// each sequence's array on its first lookup; the answers are the same)
    /// and drops the decoding-time rows.
    fn freeze(&mut self) {
        let mut chain: Vec<u32> = Vec::new();
        let mut ordered = Vec::new();
        let mut starts = Vec::with_capacity(self.seqs.len() + 1);
        for s in &self.seqs {
            starts.push(ordered.len() as u32);
            chain.clear();
            let mut i = s.last;
            while i != NONE {
                chain.push(i);
                i = self.rows[i as usize].prev;
            }
            ordered.extend(chain.iter().rev().map(|&i| {
                let r = &self.rows[i as usize];
                let file = if r.file == NONE { FILE_NONE } else { r.file.min(FILE_NONE - 1) };
                Packed { address: r.address, line: r.line, file_end: file | if r.end_sequence { END } else { 0 } }
            }));
        }
        starts.push(ordered.len() as u32);
        ordered.shrink_to_fit();
        self.ordered = ordered;
        self.starts = starts;
        self.rows = Vec::new();
    }

    /// The table's file names only (what references from other units can
    /// ask for).
    pub fn file_names(&self) -> LineTable {
        LineTable {
            use_dir_and_file_0: self.use_dir_and_file_0,
            comp_dir: self.comp_dir.clone(),
            dirs: self.dirs.clone(),
            files: self.files.clone(),
            ..Default::default()
        }
    }

    /// Packs the table for lookups (see [`LineTable::freeze`]; no-op if
    /// done): a unit's rows take a third of the memory then.
    pub fn pack(&mut self) {
        if self.starts.is_empty() {
            self.freeze();
        }
    }

    /// binutils' `lookup_address_in_line_info_table`.
    pub fn lookup(&mut self, addr: u64) -> Option<LineHit> {
        let (mut low, mut high) = (0usize, self.seqs.len());
        let mut found = None;
        while low < high {
            let mid = (low + high) / 2;
            let s = &self.seqs[mid];
            found = Some(mid);
            if addr < s.low_pc {
                high = mid;
            } else if addr >= s.high {
                low = mid + 1;
            } else {
                break;
            }
        }
        let si = found?;
        let s = &self.seqs[si];
        if addr < s.low_pc || addr >= s.high {
            return None;
        }
        self.pack();
        let lines = &self.ordered[self.starts[si] as usize..self.starts[si + 1] as usize];
        let (mut low, mut high) = (0usize, lines.len());
        let mut mid = 0;
        let mut info = None;
        while low < high {
            mid = (low + high) / 2;
            let r = &lines[mid];
            info = Some(mid);
            if addr < r.address {
                high = mid;
            } else if mid + 1 < lines.len() && addr >= lines[mid + 1].address {
                low = mid + 1;
            } else {
                break;
            }
        }
        let i = info?;
        let r = &lines[i];
        let next = lines.get(mid + 1).map(|n| n.address)?;
        if addr >= r.address && addr < next && !(r.file_end & END != 0 || i + 1 == lines.len()) {
            let file = r.file_end & !END;
            return Some(LineHit { file: (file != FILE_NONE).then(|| self.names[file as usize].clone()), line: r.line });
        }
        None
    }
}

/// DWARF 5 directory/file entry tables (binutils' `read_formatted_entries`):
/// (name, directory index) per entry.
fn read_formatted(r: &mut Reader<'_>, offset_size: u8, strs: &StrSections<'_>) -> Option<Vec<(Option<Arc<str>>, u64)>> {
    let format_count = r.u8();
    let mut formats = Vec::with_capacity(format_count as usize);
    for _ in 0..format_count {
        let ct = r.uleb();
        let form = r.uleb();
        formats.push((ct, form));
    }
    let count = r.uleb();
    if format_count == 0 && count != 0 {
        return None;
    }
    if count > r.remaining() as u64 {
        return None;
    }
    let mut out = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let (mut name, mut dir) = (None, 0u64);
        for &(ct, form) in &formats {
            if !matches!(ct, 1..=5) {
                return None;
            }
            let (s, v) = read_form(r, form, offset_size, strs)?;
            match ct {
                1 => {
                    if let Some(s) = s {
                        name = s;
                    }
                }
                2 => {
                    if let Some(v) = v {
                        dir = v;
                    }
                }
                _ => {}
            }
        }
        out.push((name, dir));
    }
    Some(out)
}

/// A value of a line-table entry form: (string if a string form, integer
/// if a data form).
#[allow(clippy::type_complexity)]
fn read_form(r: &mut Reader<'_>, form: u64, offset_size: u8, strs: &StrSections<'_>) -> Option<(Option<Option<Arc<str>>>, Option<u64>)> {
    let off = |r: &mut Reader<'_>| if offset_size == 4 { r.u32() as u64 } else { r.u64() };
    let strx = |idx: u64| -> Option<Arc<str>> {
        let (d, base, osz) = strs.str_offsets?;
        let at = base.checked_add(idx.checked_mul(osz as u64)?)?;
        let mut rr = Reader::new(d, true);
        rr.seek(usize::try_from(at).ok()?);
        let o = if osz == 4 { rr.u32() as u64 } else { rr.u64() };
        cstr(strs.debug_str, o).map(|s| String::from_utf8_lossy(s).into())
    };
    Some(match form {
        0x08 => (Some(non_empty(r.cstr_any())), None),
        0x0e => {
            let o = off(r);
            (Some(strs.memo.get(strs.debug_str, o, false)), None)
        }
        0x1f => {
            let o = off(r);
            (Some(strs.memo.get(strs.debug_line_str, o, true)), None)
        }
        0x1a => {
            let i = r.uleb();
            (Some(strx(i)), None)
        }
        0x25 => {
            let i = r.u8() as u64;
            (Some(strx(i)), None)
        }
        0x26 => {
            let i = r.u16() as u64;
            (Some(strx(i)), None)
        }
        0x27 => {
            let i = r.u24() as u64;
            (Some(strx(i)), None)
        }
        0x28 => {
            let i = r.u32() as u64;
            (Some(strx(i)), None)
        }
        0x0b => (None, Some(r.u8() as u64)),
        0x05 => (None, Some(r.u16() as u64)),
        0x06 => (None, Some(r.u32() as u64)),
        0x07 => (None, Some(r.u64())),
        0x0f => (None, Some(r.uleb())),
        0x1e => {
            r.skip(16);
            (None, None)
        }
        0x0a => {
            let n = r.u8() as usize;
            r.skip(n);
            (None, None)
        }
        0x09 => {
            let n = r.uleb() as usize;
            r.skip(n);
            (None, None)
        }
        0x0d => {
            r.sleb();
            (None, None)
        }
        0x17 => {
            off(r);
            (None, None)
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A DWARF 4 line program (64-bit addresses, `line_range` 14,
    /// `opcode_base` 13) over `files` file names, `/src/f<i>.c`, with one
    /// sequence: a row one byte further on after each `DW_LNS_set_file` of
    /// `switches`.
    fn program(files: usize, switches: &[u64]) -> Vec<u8> {
        fn uleb(v: &mut Vec<u8>, mut x: u64) {
            loop {
                let b = (x & 0x7f) as u8;
                x >>= 7;
                if x == 0 {
                    v.push(b);
                    return;
                }
                v.push(b | 0x80);
            }
        }
        let mut head = vec![1, 1, 1, (-5i8) as u8, 14, 13, 0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1];
        head.extend_from_slice(b"/src\0\0");
        for i in 0..files {
            head.extend_from_slice(format!("f{i}.c\0").as_bytes());
            head.extend_from_slice(&[1, 0, 0]);
        }
        head.push(0);
        let mut prog = vec![0, 9, 2];
        prog.extend_from_slice(&0x1000u64.to_le_bytes());
        for &f in switches {
            prog.push(4);
            uleb(&mut prog, f);
            // Special opcode: address +1, line +0.
            prog.push(5 + 14 + 13);
        }
        prog.extend_from_slice(&[0, 1, 1]);
        let mut unit = 4u16.to_le_bytes().to_vec();
        unit.extend_from_slice(&(head.len() as u32).to_le_bytes());
        unit.extend(head);
        unit.extend(prog);
        let mut out = (unit.len() as u32).to_le_bytes().to_vec();
        out.extend(unit);
        out
    }

    /// 50,000 file names and 300,000 file switches, to known names and to
    /// numbers past the table ("<unknown>"): each switch interns its name
    /// with one look, not a search through the names seen so far.
    #[test]
    fn switching_files_is_constant_work_per_row() {
        let files = 50_000u64;
        let mut switches: Vec<u64> = vec![files + 7];
        switches.extend(1..=files);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for i in 0..250_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            switches.push(if i % 2 == 0 { files + 1 + x % 1000 } else { 1 + x % files });
        }
        let data = program(files as usize, &switches);
        let memo = NameMemo::default();
        let strs = StrSections { debug_str: &[], debug_line_str: &[], str_offsets: None, memo: &memo };
        let mut t = LineTable::decode(&data, 0, true, 8, Some("/cu".into()), &strs, Rows::Keep).expect("decodes");
        assert!(t.probes <= switches.len() as u64 + 1, "{} names looked at for {} switches", t.probes, switches.len());
        assert_eq!(t.names.len(), files as usize + 1);
        t.pack();
        // Row k (address 0x1001 + k) is in the file of switch k.
        for k in [0usize, 1, 2, 49_999, 50_000, 50_001, 50_002, switches.len() - 2] {
            let hit = t.lookup(0x1001 + k as u64).expect("a row");
            let want = if switches[k] > files { "<unknown>".to_string() } else { format!("/src/f{}.c", switches[k] - 1) };
            assert_eq!(hit.file.as_deref(), Some(&*want), "row {k}");
        }
    }

    /// Rows skipped: the same sequences and file table, and no address a
    /// full decode finds a row for is outside what `may_hold` admits, also
    /// for a program that stops inside a sequence (no end of sequence).
    #[test]
    fn skipped_rows_cover_every_hit() {
        let memo = NameMemo::default();
        let strs = StrSections { debug_str: &[], debug_line_str: &[], str_offsets: None, memo: &memo };
        let switches: Vec<u64> = (1..=40).map(|i| 1 + i % 7).collect();
        let closed = program(8, &switches);
        let mut open = closed[..closed.len() - 3].to_vec();
        let len = u32::from_le_bytes(open[..4].try_into().expect("4 bytes")) - 3;
        open[..4].copy_from_slice(&len.to_le_bytes());
        for (data, ended) in [(closed, true), (open, false)] {
            let mut full = LineTable::decode(&data, 0, true, 8, None, &strs, Rows::Keep).expect("decodes");
            let skipped = LineTable::decode(&data, 0, true, 8, None, &strs, Rows::Skip).expect("decodes");
            assert!(skipped.rows_skipped() && !full.rows_skipped());
            assert_eq!(skipped.seq_ranges, full.seq_ranges);
            assert_eq!(skipped.seq_ranges.is_empty(), !ended);
            assert_eq!(skipped.files, full.files);
            let mut hits = 0;
            for addr in 0xff0..0x1040 {
                let hit = full.lookup(addr);
                assert!(hit.is_none() || skipped.may_hold(addr), "{addr:#x}: a hit outside the ranges");
                hits += usize::from(hit.is_some());
            }
            assert!(hits >= 30, "{hits}");
        }
    }

}
