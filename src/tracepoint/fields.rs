//! Printing fields raw, for events whose `print fmt` libtraceevent could
//! not parse: `[FAILED TO PARSE] name=value name=value ...`
//! (`tep_print_fields` / `print_field_raw`):
//!
//! - numbers: pointers `0x%llx`; signed: 4 bytes `%d` (`0x%x` if a long),
//!   2 bytes `%2d`, 1 byte `%1d`, else `%lld`; unsigned longs `0x%llx`,
//!   other unsigned `%llu`;
//! - arrays (static or `__data_loc`): strings as text when printable, else
//!   `ARRAY[xx, xx, ...]` — and from then on that field is never printed as
//!   text again.

use super::eval::Eval;
use super::event::{Field, ff};
use super::lexer::{c_isprint, c_isspace};

/// `is_printable_array`.
fn printable(p: &[u8]) -> bool {
    p.iter().take_while(|&&c| c != 0).all(|&c| {
        let c = c as i8 as i32;
        c_isprint(c) || c_isspace(c)
    })
}

/// `print_field_raw`.
pub fn print_field_raw(ev: &Eval<'_, '_>, out: &mut Vec<u8>, f: &Field) {
    if f.has(ff::ARRAY) {
        let (offset, len) = if f.has(ff::DYNAMIC) {
            ev.dynamic_offset(f)
        } else {
            (f.offset, f.size)
        };
        let data = ev.data;
        let at = |i: u64| usize::try_from(i).ok().and_then(|i| data.get(i)).copied().unwrap_or(0);
        // Only what lies in the record (a static array's size is the
        // format's claim: libtraceevent reads it all, past the record).
        let region = ev.within(offset as u64, len as u64);
        if f.has(ff::STRING) && printable(region) {
            // "%s" of the data at the offset: up to a NUL, even past `len`.
            let mut i = offset as u64;
            loop {
                let c = at(i);
                if c == 0 || i >= data.len() as u64 {
                    break;
                }
                out.push(c);
                i += 1;
            }
        } else {
            out.extend_from_slice(b"ARRAY[");
            for (i, b) in region.iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(b", ");
                }
                out.extend_from_slice(format!("{b:02x}").as_bytes());
            }
            out.push(b']');
            f.flags.set(f.flags.get() & !ff::STRING);
        }
        return;
    }
    let val = ev.read_number(f.offset as u64, f.size);
    let s = if f.has(ff::POINTER) {
        format!("0x{val:x}")
    } else if f.has(ff::SIGNED) {
        match f.size {
            4 if f.has(ff::LONG) => format!("0x{:x}", val as u32),
            4 => format!("{}", val as i32),
            2 => format!("{:2}", val as i16),
            1 => format!("{}", val as i8),
            _ => format!("{}", val as i64),
        }
    } else if f.has(ff::LONG) {
        format!("0x{val:x}")
    } else {
        format!("{val}")
    };
    out.extend_from_slice(s.as_bytes());
}

/// `tep_print_fields`: ` name=value` for each of the event's own fields.
pub fn print_fields(ev: &Eval<'_, '_>, out: &mut Vec<u8>) {
    for f in &ev.fields[ev.nr_common..] {
        out.push(b' ');
        out.extend_from_slice(f.name.as_bytes());
        out.push(b'=');
        print_field_raw(ev, out, f);
    }
}
