//! The tracing data perf record stores (the TRACING_DATA feature section in
//! file mode, the payload of a HEADER_TRACING_DATA record in pipe mode):
//!
//! ```text
//! "\x17\x08\x44tracing" version "\0"        (perf writes "0.6")
//! u8 big_endian, u8 long_size, u32 page_size
//! "header_page\0"  u64 size, text           (its "commit" field gives sizeof(long))
//! "header_event\0" u64 size, text           (skipped)
//! u32 count, count x { u64 size, ftrace format file }
//! u32 systems, systems x { "name\0", u32 count, count x { u64 size, format file } }
//! u32 size, kallsyms text                   (skipped: perf resolves %pS itself)
//! u32 size, printk_formats text             (`0xaddr : "string"` lines)
//! u64 size, saved_cmdlines text             (version >= 0.6)
//! ```
//! Numbers are in the byte order the second part announces. Any error
//! makes the whole tracing data unusable, as in perf, with one exception:
//! perf seeks over the kallsyms text without reading it, so a kallsyms
//! size past the end only loses what follows it (see
//! [`TracingData::damage`]).

use std::collections::HashMap;

use super::eval::Tep;
use super::event::Event;
use super::format::FormatError;
use super::lexer::{Lexer, Tok, atoi, strtoull};

/// Parsed tracing data: the events (sorted by id) and the shared state.
#[derive(Debug, Default)]
pub struct TracingData {
    pub version: String,
    pub tep: Tep,
    pub events: Vec<Event>,
    pub cmdlines: HashMap<i32, String>,
    /// Bytes the parse consumed (perf checks it against the record size in
    /// pipe mode).
    pub size: usize,
    /// Damage the parse stepped over (the rest was used), to be reported.
    pub damage: Option<String>,
}

/// Why tracing data could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TracingDataError(pub String);

impl std::fmt::Display for TracingDataError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    big_endian: bool,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: u64, what: &str) -> Result<&'a [u8], TracingDataError> {
        let n = usize::try_from(n).map_err(|_| TracingDataError(format!("{what}: size {n} too large")))?;
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len()).ok_or_else(|| {
            TracingDataError(format!("{what}: {n} bytes at offset {} run past the end ({} bytes)", self.pos, self.buf.len()))
        })?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn u8(&mut self, what: &str) -> Result<u8, TracingDataError> {
        Ok(self.take(1, what)?[0])
    }

    fn u32(&mut self, what: &str) -> Result<u32, TracingDataError> {
        let b: [u8; 4] = self.take(4, what)?.try_into().expect("4 bytes");
        Ok(if self.big_endian { u32::from_be_bytes(b) } else { u32::from_le_bytes(b) })
    }

    fn u64(&mut self, what: &str) -> Result<u64, TracingDataError> {
        let b: [u8; 8] = self.take(8, what)?.try_into().expect("8 bytes");
        Ok(if self.big_endian { u64::from_be_bytes(b) } else { u64::from_le_bytes(b) })
    }

    /// A NUL-terminated string (NUL consumed).
    fn string(&mut self, what: &str) -> Result<String, TracingDataError> {
        let rest = &self.buf[self.pos..];
        let n = rest.iter().position(|&c| c == 0).ok_or_else(|| TracingDataError(format!("{what}: unterminated string")))?;
        let s = String::from_utf8_lossy(&rest[..n]).into_owned();
        self.pos += n + 1;
        Ok(s)
    }
}

/// `header_page`: the size of its `commit` field (the kernel's long).
fn header_page_long_size(text: &[u8]) -> u32 {
    let mut lx = Lexer::new(text);
    let mut commit_size = 0;
    // parse_header_field for timestamp, commit, overwrite (optional), data.
    for (name, mandatory) in [("timestamp", true), ("commit", true), ("overwrite", false), ("data", true)] {
        let Some(size) = header_field(&mut lx, name, mandatory) else { continue };
        if name == "commit" {
            commit_size = size;
        }
    }
    commit_size
}

/// One `field: type name; offset:N; size:N; [signed:N;]` line; its size, or
/// `None` when it is not there or does not parse (the rest of the line is
/// then left where the parse stopped, as in libtraceevent).
fn header_field(lx: &mut Lexer<'_>, name: &str, mandatory: bool) -> Option<u32> {
    let save = lx.clone();
    if !lx.expect(Tok::Item, "field", true) || !lx.expect(Tok::Op, ":", true) {
        return None;
    }
    lx.expect_type(Tok::Item)?;
    if mandatory {
        if !lx.expect(Tok::Item, name, true) {
            return None;
        }
    } else {
        let t = lx.expect_type(Tok::Item)?;
        if t != name {
            *lx = save;
            return None;
        }
    }
    if !lx.expect(Tok::Op, ";", true) || !lx.expect(Tok::Item, "offset", true) || !lx.expect(Tok::Op, ":", true) {
        return None;
    }
    lx.expect_type(Tok::Item)?;
    if !lx.expect(Tok::Op, ";", true) || !lx.expect(Tok::Item, "size", true) || !lx.expect(Tok::Op, ":", true) {
        return None;
    }
    let size = atoi(&lx.expect_type(Tok::Item)?) as u32;
    if !lx.expect(Tok::Op, ";", true) {
        return Some(size);
    }
    let (ty, t) = lx.read();
    if ty != Tok::Newline && ty == Tok::Item && t == "signed" && lx.expect(Tok::Op, ":", true) && lx.expect_type(Tok::Item).is_some() && lx.expect(Tok::Op, ";", true) {
        lx.expect_type(Tok::Newline);
    }
    Some(size)
}

impl TracingData {
    pub fn parse(buf: &[u8]) -> Result<TracingData, TracingDataError> {
        let mut r = Reader { buf, pos: 0, big_endian: false };
        if r.take(3, "magic")? != [23, 8, 68] {
            return Err(TracingDataError("no trace data in the file".into()));
        }
        if r.take(7, "magic")? != b"tracing" {
            return Err(TracingDataError("not a trace file (missing 'tracing' tag)".into()));
        }
        let version = r.string("version")?;
        let big_endian = r.u8("endianness")? != 0;
        r.big_endian = big_endian;
        let mut long_size = r.u8("long size")? as u32;
        let page_size = r.u32("page size")?;
        if page_size == 0 {
            return Err(TracingDataError("page size 0".into()));
        }
        // header_page / header_event
        if r.take(12, "header_page")? != b"header_page\0" {
            return Err(TracingDataError("did not read header page".into()));
        }
        let n = r.u64("header_page size")?;
        let page = r.take(n, "header_page")?;
        if !page.is_empty() {
            long_size = header_page_long_size(page);
        }
        if r.take(13, "header_event")? != b"header_event\0" {
            return Err(TracingDataError("did not read header event".into()));
        }
        let n = r.u64("header_event size")?;
        r.take(n, "header_event")?;

        let mut td = TracingData {
            version,
            tep: Tep { big_endian, long_size, ..Tep::default() },
            ..TracingData::default()
        };
        let add = |td: &mut TracingData, text: &[u8], sys: &str| -> Result<(), TracingDataError> {
            match Event::parse(text, sys, long_size) {
                Ok(e) => {
                    // Sorted by id; a later event with an equal id goes after.
                    let at = td.events.iter().position(|x| x.id > e.id).unwrap_or(td.events.len());
                    td.events.insert(at, e);
                    Ok(())
                }
                Err(e) => Err(TracingDataError(format!(
                    "error parsing event file of system {sys}: {}",
                    match e {
                        FormatError::Name => "bad name",
                        FormatError::Id => "bad ID",
                        FormatError::Fields => "bad field list",
                    }
                ))),
            }
        };
        let count = r.u32("ftrace count")?;
        for _ in 0..count {
            let n = r.u64("ftrace file size")?;
            let text = r.take(n, "ftrace file")?;
            add(&mut td, text, "ftrace")?;
        }
        let systems = r.u32("system count")?;
        for _ in 0..systems {
            let sys = r.string("system name")?;
            let count = r.u32("event count")?;
            for _ in 0..count {
                let n = r.u64("event file size")?;
                let text = r.take(n, "event file")?;
                add(&mut td, text, &sys)?;
            }
        }
        // kallsyms: skipped (perf resolves addresses with its own maps).
        // perf seeks over it without reading, so a size running past the
        // end is no error there: its next reads find the end of the file
        // and give sizes of 0, which means no printk formats and no saved
        // cmdlines. The events read so far are kept, here too.
        let n = r.u32("kallsyms size")?;
        let left = r.buf.len() - r.pos;
        if n as usize > left {
            td.damage = Some(format!("kallsyms size {n} runs past the end of the tracing data ({left} bytes left); printk formats and saved cmdlines skipped"));
            td.size = r.buf.len();
            return Ok(td);
        }
        r.take(n as u64, "kallsyms")?;
        let n = r.u32("printk size")?;
        if n > 0 {
            let text = r.take(n as u64, "printk formats")?;
            td.parse_printk(text);
        }
        if version_at_least_0_6(&td.version) {
            let n = r.u64("saved cmdlines size")?;
            if n > 0 {
                let text = r.take(n, "saved cmdlines")?;
                td.parse_cmdlines(text);
            }
        }
        td.size = r.pos;
        Ok(td)
    }

    /// printk_formats lines `0xaddr : "string"`: split at the first `:`,
    /// skip one character, drop a leading `"`, a trailing `"` and then a
    /// trailing `\n` (the two characters).
    fn parse_printk(&mut self, text: &[u8]) {
        let text = &text[..text.iter().position(|&c| c == 0).unwrap_or(text.len())];
        for line in text.split(|&c| c == b'\n').filter(|l| !l.is_empty()) {
            let (addr, fmt) = match line.iter().position(|&c| c == b':') {
                Some(0) => {
                    // strtok skips leading delimiters.
                    let rest = &line[1..];
                    match rest.iter().position(|&c| c == b':') {
                        Some(p) => (&rest[..p], &rest[p + 1..]),
                        None => (rest, &b""[..]),
                    }
                }
                Some(p) => (&line[..p], &line[p + 1..]),
                None => (line, &b""[..]),
            };
            let addr = strtoull_hex(addr);
            let mut s: &[u8] = fmt.get(1..).unwrap_or(b"");
            if s.first() == Some(&b'"') {
                s = &s[1..];
            }
            let mut s = s.to_vec();
            if s.last() == Some(&b'"') {
                s.pop();
            }
            if s.ends_with(b"\\n") {
                s.truncate(s.len() - 2);
            }
            self.tep.printk.insert(addr, String::from_utf8_lossy(&s).into_owned());
        }
    }

    /// saved_cmdlines lines `pid comm`.
    fn parse_cmdlines(&mut self, text: &[u8]) {
        for line in String::from_utf8_lossy(text).lines() {
            let mut it = line.split_whitespace();
            if let (Some(pid), Some(comm)) = (it.next(), it.next())
                && let Ok(pid) = pid.parse::<i32>() {
                    let comm: String = comm.chars().take(16).collect();
                    self.cmdlines.entry(pid).or_insert(comm);
                }
        }
    }

    /// `tep_find_event`.
    pub fn find_event(&self, id: i32) -> Option<usize> {
        self.events.binary_search_by(|e| e.id.cmp(&id)).ok()
    }
}

/// `strtoull(s, NULL, 16)`.
fn strtoull_hex(s: &[u8]) -> u64 {
    let s = String::from_utf8_lossy(s);
    let t = s.trim_start();
    let t = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")).unwrap_or(t);
    strtoull(&format!("0x{}", t.split(|c: char| !c.is_ascii_hexdigit()).next().unwrap_or("")))
}

/// `atof(version) >= 0.6`.
fn version_at_least_0_6(v: &str) -> bool {
    let t: String = v.trim_start().chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
    let mut parts = t.splitn(2, '.');
    let int: u64 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let frac: String = parts.next().unwrap_or("").chars().take_while(|c| c.is_ascii_digit()).collect();
    let f: f64 = format!("{int}.{}", if frac.is_empty() { "0" } else { &frac }).parse().unwrap_or(0.0);
    f >= 0.6
}
