//! Event format files (`events/<system>/<event>/format`), parsed as
//! libtraceevent parses them:
//!
//! ```text
//! name: sched_switch
//! ID: 372
//! format:
//! 	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
//! 	...                                          (common fields, then a blank line)
//! 	field:char prev_comm[16];	offset:8;	size:16;	signed:0;
//! 	field:__data_loc char[] name;	offset:8;	size:4;	signed:0;
//!
//! print fmt: "prev_comm=%s ...", REC->prev_comm, ...
//! ```
//!
//! A malformed name, ID or field list makes the whole file unusable (and,
//! in perf, the whole tracing data); a `print fmt` that does not parse only
//! marks the event as failed, and its samples print as
//! `[FAILED TO PARSE] field=value ...`.
#![allow(clippy::tabs_in_doc_comments)] // The format files shown above use tabs.

use std::cell::Cell;

use super::event::{Event, Field, PrintFmt, ef, ff};
use super::lexer::{Lexer, Tok, strtoull};
use super::print_fmt;

/// Why a format file was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FormatError {
    Name,
    Id,
    Fields,
}

impl Event {
    /// `parse_format`: a format file of system `sys`. `long_size` is the
    /// traced kernel's `sizeof(long)`.
    pub fn parse(buf: &[u8], sys: &str, long_size: u32) -> Result<Event, FormatError> {
        let mut lx = Lexer::new(buf);
        // name: <item>
        if !lx.expect(Tok::Item, "name", true) || !lx.expect(Tok::Op, ":", true) {
            return Err(FormatError::Name);
        }
        let name = lx.expect_type(Tok::Item).ok_or(FormatError::Name)?;
        let mut flags = 0;
        if sys == "ftrace" {
            flags |= ef::ISFTRACE;
            if name == "bprint" {
                flags |= ef::ISBPRINT;
            }
        }
        // ID: <number>
        if !lx.expect(Tok::Item, "ID", false) || !lx.expect(Tok::Op, ":", true) {
            return Err(FormatError::Id);
        }
        let id = strtoull(&lx.expect_type(Tok::Item).ok_or(FormatError::Id)?) as i32;
        if id < 0 {
            return Err(FormatError::Id);
        }
        // format:\n fields
        if !lx.expect(Tok::Item, "format", false) || !lx.expect(Tok::Op, ":", true) || lx.expect_type(Tok::Newline).is_none() {
            return Err(FormatError::Fields);
        }
        let isftrace = flags & ef::ISFTRACE != 0;
        let mut fields = read_fields(&mut lx, isftrace, long_size).ok_or(FormatError::Fields)?;
        let nr_common = fields.len();
        fields.extend(read_fields(&mut lx, isftrace, long_size).ok_or(FormatError::Fields)?);
        let mut event = Event {
            id,
            name,
            system: sys.to_string(),
            fields,
            nr_common,
            flags: Cell::new(flags),
            print: PrintFmt::default(),
        };
        print_fmt::read_print(&mut lx, &mut event, long_size);
        Ok(event)
    }
}

/// `type_size`: element size of a `type []` array written the old way.
fn type_size(name: &str) -> u32 {
    match name {
        "u8" | "s8" | "char" => 1,
        "u16" | "s16" => 2,
        "u32" | "s32" => 4,
        "u64" | "s64" => 8,
        _ => 0,
    }
}

/// `event_read_fields`: fields up to a blank line. `None` on a syntax error.
fn read_fields(lx: &mut Lexer<'_>, isftrace: bool, long_size: u32) -> Option<Vec<Field>> {
    let mut fields = Vec::new();
    loop {
        let (ty, tok) = lx.read();
        if ty == Tok::Newline {
            return Some(fields);
        }
        if ty != Tok::Item || tok != "field" {
            return None;
        }
        let (mut ty, mut tok) = lx.read();
        if isftrace && ty == Tok::Item && tok == "special" {
            (ty, tok) = lx.read();
        }
        if ty != Tok::Op || tok != ":" {
            return None;
        }
        let mut last = lx.expect_type(Tok::Item)?;
        let mut ftype: Option<String> = None;
        let mut flags = 0u32;
        let mut delim = " ";
        // The type: every item (and `*`) up to the one before the name.
        loop {
            (ty, tok) = lx.read();
            if ty == Tok::Item || (ty == Tok::Op && tok == "*") || (isftrace && ty == Tok::Op && tok == ".") {
                if tok == "*" {
                    flags |= ff::POINTER;
                }
                match &mut ftype {
                    Some(t) => {
                        t.push_str(delim);
                        t.push_str(&last);
                    }
                    None => ftype = Some(last),
                }
                last = tok;
                delim = " ";
                continue;
            }
            if ty == Tok::Delim && last == "__attribute__" && tok.starts_with('(') {
                let t = ftype.as_mut()?;
                t.push(' ');
                t.push_str(&last);
                t.push('(');
                delim = " ";
                let mut depth = 1;
                loop {
                    let (ty2, tok2) = lx.read();
                    if ty2 == Tok::None {
                        break;
                    }
                    if ty2 == Tok::Delim {
                        if tok2.starts_with('(') {
                            depth += 1;
                        } else if tok2.starts_with(')') {
                            depth -= 1;
                        }
                        if depth == 0 {
                            break;
                        }
                        t.push_str(&tok2);
                        delim = "";
                    } else {
                        t.push_str(delim);
                        t.push_str(&tok2);
                        delim = " ";
                    }
                    last = tok2;
                }
                continue;
            }
            break;
        }
        let mut ftype = ftype?;
        let mut name = last;
        if ty != Tok::Op {
            return None;
        }
        let mut arraylen = 0u32;
        let mut size_dynamic = 0u32;
        if tok == "[" {
            let mut last_type = ty;
            let mut brackets = tok.clone();
            flags |= ff::ARRAY;
            (ty, tok) = lx.read();
            arraylen = if ty == Tok::Item { strtoull(&tok) as u32 } else { 0 };
            while tok != "]" {
                if last_type == Tok::Item && ty == Tok::Item {
                    brackets.push(' ');
                }
                last_type = ty;
                brackets.push_str(&tok);
                arraylen = strtoull(&tok) as u32;
                (ty, tok) = lx.read();
                if ty == Tok::None {
                    return None;
                }
            }
            brackets.push(']');
            (ty, tok) = lx.read();
            if ty == Tok::Item {
                // `type [] name`: what we took for the name is the type.
                ftype.push(' ');
                ftype.push_str(&name);
                ftype.push_str(&brackets);
                size_dynamic = type_size(&name);
                name = tok;
                (ty, tok) = lx.read();
            } else {
                ftype.push_str(&brackets);
            }
        }
        if flags & ff::ARRAY != 0 && (ftype.contains("char") || ftype.contains("u8") || ftype.contains("s8")) {
            flags |= ff::STRING;
        }
        if ftype.starts_with("__data_loc") {
            flags |= ff::DYNAMIC;
        }
        if ftype.starts_with("__rel_loc") {
            flags |= ff::DYNAMIC | ff::RELATIVE;
        }
        if ftype.contains("long") {
            flags |= ff::LONG;
        }
        if ty != Tok::Op || tok != ";" {
            return None;
        }
        if !lx.expect(Tok::Item, "offset", true) || !lx.expect(Tok::Op, ":", true) {
            return None;
        }
        let offset = strtoull(&lx.expect_type(Tok::Item)?) as u32;
        if !lx.expect(Tok::Op, ";", true) || !lx.expect(Tok::Item, "size", true) || !lx.expect(Tok::Op, ":", true) {
            return None;
        }
        let size = strtoull(&lx.expect_type(Tok::Item)?) as u32;
        if flags & ff::DYNAMIC != 0 && size == 2 {
            flags |= ff::STRING | ff::ARRAY;
        }
        if !lx.expect(Tok::Op, ";", true) {
            return None;
        }
        let (ty, tok) = lx.read();
        if ty != Tok::Newline {
            if ty != Tok::Item || tok != "signed" || !lx.expect(Tok::Op, ":", true) {
                return None;
            }
            if strtoull(&lx.expect_type(Tok::Item)?) != 0 {
                flags |= ff::SIGNED;
            }
            if !lx.expect(Tok::Op, ";", true) {
                return None;
            }
            lx.expect_type(Tok::Newline)?;
        }
        let elementsize = if flags & (ff::ARRAY | ff::DYNAMIC) != 0 {
            if let Some(each) = size.checked_div(arraylen) {
                each
            } else if flags & ff::DYNAMIC != 0 {
                size_dynamic
            } else if flags & ff::STRING != 0 {
                1
            } else if flags & ff::LONG != 0 {
                long_size
            } else {
                0
            }
        } else {
            size
        };
        fields.push(Field { name, offset, size, elementsize, flags: Cell::new(flags) });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub const SWITCH: &str = "name: sched_switch\nID: 372\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\tfield:__data_loc char[] name;\toffset:28;\tsize:4;\tsigned:0;\n\tfield:const char * ptr;\toffset:32;\tsize:8;\tsigned:0;\n\tfield:unsigned long args[6];\toffset:40;\tsize:48;\tsigned:0;\n\nprint fmt: \"prev_comm=%s prev_pid=%d\", REC->prev_comm, REC->prev_pid\n";

    #[test]
    fn parses_fields() {
        let e = Event::parse(SWITCH.as_bytes(), "sched", 8).unwrap();
        assert_eq!((e.id, e.name.as_str(), e.nr_common, e.fields.len()), (372, "sched_switch", 4, 9));
        let comm = &e.fields[4];
        assert_eq!((comm.name.as_str(), comm.offset, comm.size, comm.elementsize), ("prev_comm", 8, 16, 1));
        assert!(comm.has(ff::ARRAY) && comm.has(ff::STRING));
        assert!(e.fields[5].has(ff::SIGNED));
        let dl = &e.fields[6];
        assert_eq!((dl.name.as_str(), dl.elementsize), ("name", 1));
        assert!(dl.has(ff::DYNAMIC) && dl.has(ff::STRING));
        assert!(e.fields[7].has(ff::POINTER));
        assert_eq!(e.fields[8].elementsize, 8);
        assert!(e.fields[8].has(ff::LONG));
        assert!(!e.failed());
        assert_eq!(e.find_any_field("common_pid"), Some(3));
        assert_eq!(e.find_field("common_pid"), None);
    }

    #[test]
    fn rejects_broken_headers() {
        assert_eq!(Event::parse(b"", "x", 8).unwrap_err(), FormatError::Name);
        assert_eq!(Event::parse(b"name: a\nID: -3\n", "x", 8).unwrap_err(), FormatError::Id);
        assert_eq!(Event::parse(b"name: a\nID: 3\nformat:\n\tfield:int;\n", "x", 8).unwrap_err(), FormatError::Fields);
        let trunc = &SWITCH[..SWITCH.find("prev_pid;").unwrap()];
        assert!(Event::parse(trunc.as_bytes(), "x", 8).is_err());
    }

    #[test]
    fn bad_print_fmt_only_fails_the_event() {
        let s = SWITCH.replace("print fmt: \"", "print fmt: ");
        let e = Event::parse(s.as_bytes(), "sched", 8).unwrap();
        assert!(e.failed());
    }
}
