//! Evaluating a parsed `print fmt` against one record, as libtraceevent's
//! `pretty_print` does: numbers through [`Eval::num`] (`eval_num_arg`),
//! strings through [`Eval::str_arg`] (`print_str_arg`), `%p` extensions
//! through [`Eval::pointer`].
//!
//! Reads past the end of the record, which C would do from whatever memory
//! follows, read zeros here; a division by zero, which would kill perf,
//! yields 0.

use std::collections::BTreeMap;

use super::event::{Arg, Field, FlagSym, ParseKind, PrintParse, ff};
use super::print_fmt::eval_type_str;
use super::printf::{self, CArg};
use super::lexer::strtoull;

/// Resolves a kernel address to (symbol, symbol start), as perf's
/// `machine__resolve_kernel_addr` does for `%pS`/`%ps`.
pub type Resolver<'r> = &'r mut dyn FnMut(u64) -> Option<(std::sync::Arc<str>, u64)>;

/// What the whole tracing data shares (the `tep_handle` state printing uses).
#[derive(Debug, Clone, Default)]
pub struct Tep {
    pub big_endian: bool,
    pub long_size: u32,
    /// printk_formats: address -> string (quotes and a final `\n` removed).
    pub printk: BTreeMap<u64, String>,
}

/// One record being printed.
pub struct Eval<'a, 'r> {
    pub tep: &'a Tep,
    pub fields: &'a [Field],
    pub nr_common: usize,
    pub data: &'a [u8],
    pub resolver: Option<Resolver<'r>>,
    /// Set when printing meets a bad length modifier (libtraceevent then
    /// prints later records of the event as `[FAILED TO PARSE]`).
    pub failed: bool,
}

/// `eval_flag`: a flag value from `__print_flags`/`__print_symbolic`.
fn eval_flag(flag: &str) -> i64 {
    if flag.as_bytes().first().is_some_and(|c| c.is_ascii_digit()) {
        return strtoull(flag) as i64;
    }
    const NAMES: &[(&str, i64)] = &[
        ("HI_SOFTIRQ", 0),
        ("TIMER_SOFTIRQ", 1),
        ("NET_TX_SOFTIRQ", 2),
        ("NET_RX_SOFTIRQ", 3),
        ("BLOCK_SOFTIRQ", 4),
        ("IRQ_POLL_SOFTIRQ", 5),
        ("TASKLET_SOFTIRQ", 6),
        ("SCHED_SOFTIRQ", 7),
        ("HRTIMER_SOFTIRQ", 8),
        ("RCU_SOFTIRQ", 9),
        ("HRTIMER_NORESTART", 0),
        ("HRTIMER_RESTART", 1),
    ];
    NAMES.iter().find(|(n, _)| *n == flag).map(|&(_, v)| v).unwrap_or(-1)
}

/// The bytes of `s` up to its first NUL (C string semantics).
fn cstr(s: &[u8]) -> &[u8] {
    &s[..s.iter().position(|&c| c == 0).unwrap_or(s.len())]
}

impl<'a, 'r> Eval<'a, 'r> {
    /// `len` bytes at `off`, zero-filled past the end of the record.
    fn bytes(&self, off: u64, len: usize) -> Vec<u8> {
        let mut v = vec![0u8; len];
        if let Ok(o) = usize::try_from(off)
            && o < self.data.len() {
                let n = (self.data.len() - o).min(len);
                v[..n].copy_from_slice(&self.data[o..o + n]);
            }
        v
    }

    /// The part of `off..off + len` that lies in the record. libtraceevent
    /// reads arrays for as long as their length says, past the end of the
    /// record into whatever memory follows (a length of 0x7fffffff reads
    /// until it crashes); pstitch stops at the end of the record, so that
    /// no field prints more than its record holds.
    pub(super) fn within(&self, off: u64, len: u64) -> &'a [u8] {
        let data: &'a [u8] = self.data;
        match usize::try_from(off) {
            Ok(o) if o < data.len() => &data[o..o + (data.len() - o).min(usize::try_from(len).unwrap_or(usize::MAX))],
            _ => &[],
        }
    }

    /// The C string at `off` (ending at a NUL or the end of the record).
    fn str_at(&self, off: u64) -> &'a [u8] {
        match usize::try_from(off) {
            Ok(o) if o < self.data.len() => cstr(&self.data[o..]),
            _ => b"",
        }
    }

    /// `tep_read_number`: 1, 2, 4 or 8 bytes in the file's byte order.
    pub fn read_number(&self, off: u64, size: u32) -> u64 {
        if !matches!(size, 1 | 2 | 4 | 8) {
            return 0;
        }
        let b = self.bytes(off, size as usize);
        let mut v = 0u64;
        if self.tep.big_endian {
            for &x in &b {
                v = (v << 8) | x as u64;
            }
        } else {
            for &x in b.iter().rev() {
                v = (v << 8) | x as u64;
            }
        }
        v
    }

    fn field(&self, idx: usize) -> &'a Field {
        &self.fields[idx]
    }

    fn find_any_field(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }

    /// `dynamic_offset_field`: (offset, length) of a `__data_loc` field's data.
    pub(super) fn dynamic_offset(&self, f: &Field) -> (u32, u32) {
        let size = self.data.len() as u64;
        if f.offset as u64 + f.size as u64 > size {
            return (0, 0);
        }
        let val = self.read_number(f.offset as u64, f.size);
        let size = size as u32;
        let o = (val & 0xffff) as u32;
        let l = if f.size == 2 { size.wrapping_sub(o) } else { ((val >> 16) & 0xffff) as u32 };
        let mut offset = if o > size { 0 } else { o };
        let len = if o.wrapping_add(l) > size { 0 } else { l };
        if f.has(ff::RELATIVE) {
            offset = offset.wrapping_add(f.offset).wrapping_add(f.size);
        }
        (offset, len)
    }

    /// `check_data_offset_size`: does the range run past the record?
    fn beyond(&self, off: u64, size: u64) -> bool {
        off.saturating_add(size) > self.data.len() as u64
    }

    /// `eval_num_arg`.
    pub fn num(&mut self, arg: &mut Arg) -> u64 {
        match arg {
            Arg::Null => 0,
            Arg::Atom(a) => {
                let v = strtoull(a);
                if v != 0 {
                    return v;
                }
                // test_for_symbol: perf gives libtraceevent no symbol list,
                // so a name evaluates to 0 and is replaced by "0" for good.
                if !a.as_bytes().first().is_some_and(|c| c.is_ascii_digit()) {
                    *a = "0".to_string();
                }
                0
            }
            Arg::Field { name, field } => {
                if field.is_none() {
                    *field = self.find_any_field(name);
                }
                let Some(idx) = *field else { return 0 };
                let f = self.field(idx);
                if self.beyond(f.offset as u64, f.size as u64) {
                    return 0;
                }
                self.read_number(f.offset as u64, f.size)
            }
            Arg::Flags { .. } | Arg::Symbol { .. } | Arg::IntArray { .. } | Arg::Hex { .. } => 0,
            Arg::Type { ty, item } => {
                let v = self.num(item);
                eval_type_str(v, ty, false)
            }
            Arg::Str(_) | Arg::Bitmask { .. } => 0,
            Arg::DynArrayLen { field } => self.dynamic_offset(self.field(*field)).1 as u64,
            Arg::DynArray { field } => {
                // C yields the address of the data in perf's memory; the
                // offset is the closest deterministic stand-in.
                self.dynamic_offset(self.field(*field)).0 as u64
            }
            Arg::Op { op, left, right, .. } => {
                if op == "[" {
                    if let Some(v) = self.index(left.as_deref_mut(), right.as_deref_mut()) {
                        return v;
                    }
                } else if op == "?" {
                    let l = left.as_deref_mut().map(|a| self.num(a)).unwrap_or(0);
                    let Some(Arg::Op { left: tl, right: tr, .. }) = right.as_deref_mut() else { return 0 };
                    let branch = if l != 0 { tl } else { tr };
                    return branch.as_deref_mut().map(|a| self.num(a)).unwrap_or(0);
                }
                let l = left.as_deref_mut().map(|a| self.num(a)).unwrap_or(0);
                let r = right.as_deref_mut().map(|a| self.num(a)).unwrap_or(0);
                let ob = op.as_bytes();
                let second = ob.get(1).copied().unwrap_or(0);
                match ob[0] {
                    b'!' => match second {
                        0 => (r == 0) as u64,
                        b'=' => (l != r) as u64,
                        _ => 0,
                    },
                    b'~' => !r,
                    b'|' => {
                        if second != 0 {
                            (l != 0 || r != 0) as u64
                        } else {
                            l | r
                        }
                    }
                    b'&' => {
                        if second != 0 {
                            (l != 0 && r != 0) as u64
                        } else {
                            l & r
                        }
                    }
                    b'<' => match second {
                        0 => (l < r) as u64,
                        b'<' => l.wrapping_shl(r as u32),
                        b'=' => (l <= r) as u64,
                        _ => 0,
                    },
                    b'>' => match second {
                        0 => (l > r) as u64,
                        b'>' => l.wrapping_shr(r as u32),
                        b'=' => (l >= r) as u64,
                        _ => 0,
                    },
                    b'=' if second == b'=' => (l == r) as u64,
                    b'-' => l.wrapping_sub(r),
                    b'+' => l.wrapping_add(r),
                    b'/' => l.checked_div(r).unwrap_or(0),
                    b'%' => l.checked_rem(r).unwrap_or(0),
                    b'*' => l.wrapping_mul(r),
                    _ => 0,
                }
            }
        }
    }

    /// `x[i]` on a field or dynamic array; `None` when the left side is
    /// neither (libtraceevent then treats `[` as an unknown operator).
    fn index(&mut self, left: Option<&mut Arg>, right: Option<&mut Arg>) -> Option<u64> {
        let i = right.map(|a| self.num(a)).unwrap_or(0);
        let mut larg = left?;
        let mut typecast: Option<String> = None;
        while let Arg::Type { ty, item } = larg {
            if typecast.is_none() {
                typecast = Some(ty.clone());
            }
            larg = item;
        }
        let mut size = self.tep.long_size;
        let offset: u32 = match larg {
            Arg::DynArray { field } => {
                let f = self.field(*field);
                let (o, _) = self.dynamic_offset(f);
                if f.elementsize != 0 {
                    size = f.elementsize;
                }
                o.wrapping_add(i as u32)
            }
            Arg::Field { name, field } => {
                if field.is_none() {
                    *field = self.find_any_field(name);
                }
                let Some(idx) = *field else { return Some(0) };
                let f = self.field(idx);
                size = f.elementsize;
                f.offset.wrapping_add((i as u32).wrapping_mul(f.elementsize))
            }
            _ => return None,
        };
        if self.beyond(offset as u64, size as u64) {
            return Some(0);
        }
        let v = self.read_number(offset as u64, size);
        Some(match typecast {
            Some(t) => eval_type_str(v, &t, true),
            None => v,
        })
    }

    /// `print_str_arg`: `arg` printed with the string conversion `format`.
    pub fn str_arg(&mut self, out: &mut Vec<u8>, format: &[u8], len_arg: Option<i32>, arg: &mut Arg) {
        match arg {
            Arg::Null | Arg::Type { .. } | Arg::DynArray { .. } | Arg::DynArrayLen { .. } => {}
            Arg::Atom(a) => printf::format(out, format, len_arg, CArg::Str(a.as_bytes())),
            Arg::Field { name, field } => {
                if field.is_none() {
                    *field = self.find_any_field(name);
                }
                let Some(idx) = *field else { return };
                let f = self.field(idx);
                if !f.has(ff::ARRAY) && f.size == self.tep.long_size {
                    let b = self.bytes(f.offset as u64, 8);
                    let addr = if self.tep.long_size == 8 {
                        u64::from_le_bytes(b.try_into().expect("8 bytes"))
                    } else {
                        u32::from_le_bytes(b[..4].try_into().expect("4 bytes")) as u64
                    };
                    match self.tep.printk.get(&addr) {
                        Some(s) => out.extend_from_slice(s.as_bytes()),
                        None => out.extend_from_slice(format!("{addr:x}").as_bytes()),
                    }
                    return;
                }
                let len = if f.size != 0 { f.size as u64 } else { (self.data.len() as u64).saturating_sub(f.offset as u64) };
                let b = self.within(f.offset as u64, len);
                printf::format(out, format, len_arg, CArg::Str(b));
            }
            Arg::Flags { field, delim, flags } => {
                let mut val = self.num(field) as i64;
                let mut printed = false;
                for FlagSym { value, str_ } in flags.iter() {
                    let fval = eval_flag(value);
                    if val == 0 && fval < 0 {
                        printf::format(out, format, len_arg, CArg::Str(str_.as_bytes()));
                        break;
                    }
                    if fval > 0 && (val & fval) == fval {
                        if printed
                            && let Some(d) = delim {
                                out.extend_from_slice(cstr(d.as_bytes()));
                            }
                        printf::format(out, format, len_arg, CArg::Str(str_.as_bytes()));
                        printed = true;
                        val &= !fval;
                    }
                }
                if val != 0 {
                    if printed
                        && let Some(d) = delim {
                            out.extend_from_slice(cstr(d.as_bytes()));
                        }
                    out.extend_from_slice(format!("0x{:x}", val as u64).as_bytes());
                }
            }
            Arg::Symbol { field, symbols } => {
                let val = self.num(field) as i64;
                match symbols.iter().find(|s| eval_flag(&s.value) == val) {
                    Some(s) => printf::format(out, format, len_arg, CArg::Str(s.str_.as_bytes())),
                    None => out.extend_from_slice(format!("0x{:x}", val as u64).as_bytes()),
                }
            }
            Arg::Hex { field, size, spaced } => {
                let Some(start) = self.array_start(field) else { return };
                let len = self.num(size) as u32;
                let b = self.within(start, len as u64);
                for (i, x) in b.iter().enumerate() {
                    if i > 0 && *spaced {
                        out.push(b' ');
                    }
                    out.extend_from_slice(format!("{x:02x}").as_bytes());
                }
            }
            Arg::IntArray { field, count, el_size } => {
                let Some(start) = self.array_start(field) else { return };
                let len = self.num(count) as u32;
                let mut el = self.num(el_size) as i32;
                out.push(b'{');
                let mut pos = start;
                for i in 0..len {
                    // Elements past the end of the record are not read.
                    let width = if matches!(el, 1 | 2 | 4 | 8) { el as u64 } else { 1 };
                    if pos.checked_add(width).is_none_or(|end| end > self.data.len() as u64) {
                        break;
                    }
                    if i > 0 {
                        out.push(b',');
                    }
                    let b = self.bytes(pos, 8);
                    match el {
                        1 => out.extend_from_slice(format!("0x{:x}", b[0]).as_bytes()),
                        2 => out.extend_from_slice(format!("0x{:x}", u16::from_le_bytes([b[0], b[1]])).as_bytes()),
                        4 => out.extend_from_slice(
                            format!("0x{:x}", u32::from_le_bytes(b[..4].try_into().expect("4"))).as_bytes(),
                        ),
                        8 => out.extend_from_slice(
                            format!("0x{:x}", u64::from_le_bytes(b[..8].try_into().expect("8"))).as_bytes(),
                        ),
                        _ => {
                            out.extend_from_slice(format!("BAD SIZE:{el} 0x{:x}", b[0]).as_bytes());
                            el = 1;
                        }
                    }
                    pos = pos.wrapping_add(el as i64 as u64);
                }
                out.push(b'}');
            }
            Arg::Str(name) => {
                let Some(idx) = self.find_any_field(name) else { return };
                let (off, len) = self.dynamic_offset(self.field(idx));
                if len == 0 {
                    return;
                }
                let s = self.str_at(off as u64);
                printf::format(out, format, len_arg, CArg::Str(s));
            }
            Arg::Bitmask { name, cpumask } => {
                let Some(idx) = self.find_any_field(name) else { return };
                let (off, len) = self.dynamic_offset(self.field(idx));
                let b = self.bytes(off as u64, len as usize);
                let s = if *cpumask { self.cpumask(&b) } else { self.bitmask(&b) };
                printf::format(out, format, len_arg, CArg::Str(s.as_bytes()));
            }
            Arg::Op { op, left, right, .. } => {
                if !op.starts_with('?') {
                    return;
                }
                let v = left.as_deref_mut().map(|a| self.num(a)).unwrap_or(0);
                let Some(Arg::Op { left: tl, right: tr, .. }) = right.as_deref_mut() else { return };
                let branch = if v != 0 { tl } else { tr };
                if let Some(b) = branch.as_deref_mut() {
                    self.str_arg(out, format, len_arg, b);
                }
            }
        }
    }

    /// Start offset of the data of a `__print_hex`/`__print_array` argument.
    fn array_start(&mut self, field: &mut Arg) -> Option<u64> {
        match field {
            Arg::DynArray { field } => Some(self.dynamic_offset(self.field(*field)).0 as u64),
            Arg::Field { name, field } => {
                if field.is_none() {
                    *field = self.find_any_field(name);
                }
                field.map(|i| self.field(i).offset as u64)
            }
            // C reads the field of a non-field argument: garbage; print nothing.
            _ => None,
        }
    }

    /// `print_bitmask_to_seq`: hex, most significant first, a comma every
    /// 32 bits.
    fn bitmask(&self, data: &[u8]) -> String {
        let size = data.len() as i64;
        let nr_bits = size * 8;
        let mut str_size = (nr_bits + 3) / 4;
        str_size += (nr_bits - 1) / 32;
        if str_size <= 0 {
            return String::new();
        }
        let mut s = vec![b' '; str_size as usize];
        let mut len = 0i64;
        let mut i = str_size - 2;
        while i >= 0 {
            let index = if self.tep.big_endian { size - (len + 1) } else { len };
            let byte = data.get(index as usize).copied().unwrap_or(0);
            let hex = format!("{byte:02x}");
            s[i as usize] = hex.as_bytes()[0];
            s[i as usize + 1] = hex.as_bytes()[1];
            len += 1;
            if len & 3 == 0 && i > 0 {
                i -= 1;
                s[i as usize] = b',';
            }
            i -= 2;
        }
        String::from_utf8_lossy(&s).into_owned()
    }

    /// `print_cpumask_to_seq`: CPU ranges such as `0-3,8`.
    fn cpumask(&self, data: &[u8]) -> String {
        let size = data.len();
        let mut bits = Vec::with_capacity(size * 8);
        for i in 0..size {
            let index = if self.tep.big_endian { size - (i + 1) } else { i };
            let byte = data[index];
            for b in 0..8 {
                bits.push(byte & (1 << b) != 0);
            }
        }
        let mut out = String::new();
        let mut i = 0;
        while i < bits.len() {
            if !bits[i] {
                i += 1;
                continue;
            }
            let start = i;
            while i < bits.len() && bits[i] {
                i += 1;
            }
            if !out.is_empty() {
                out.push(',');
            }
            out.push_str(&start.to_string());
            if i > start + 1 {
                out.push_str(&format!("-{}", i - 1));
            }
        }
        out
    }

    /// `print_arg_pointer`: `%p` and its extensions. `spec` is the whole
    /// conversion (`%pS`, `%pI4`, ...).
    fn pointer(&mut self, out: &mut Vec<u8>, spec: &[u8], plen: i32, arg: &mut Arg) {
        let after = spec.iter().position(|&c| c == b'p').map(|i| &spec[i + 1..]).unwrap_or(b"");
        match after.first().copied().unwrap_or(0) {
            b'F' | b'f' | b'S' | b's' => {
                let val = self.num(arg);
                let found = self.resolver.as_mut().and_then(|r| r(val));
                match found {
                    Some((name, start)) => {
                        out.extend_from_slice(name.as_bytes());
                        if matches!(after[0], b'F' | b'S') {
                            out.extend_from_slice(format!("+0x{:x}", val.wrapping_sub(start)).as_bytes());
                        }
                    }
                    None => out.extend_from_slice(format!("0x{val:x}").as_bytes()),
                }
            }
            b'M' | b'm' => self.mac(out, after, arg),
            b'I' | b'i' => self.ip(out, after, arg),
            b'U' => self.uuid(out, after, arg),
            b'h' => self.raw_buff(out, after, arg, plen),
            _ => {
                let v = self.num(arg);
                printf::pointer(out, v);
            }
        }
    }

    /// The field an address-printing extension reads (through casts).
    fn field_of<'x>(&mut self, out: &mut Vec<u8>, mut arg: &'x mut Arg) -> Option<&'a Field> {
        while let Arg::Type { item, .. } = arg {
            arg = item;
        }
        match arg {
            Arg::Field { name, field } => {
                if field.is_none() {
                    *field = self.find_any_field(name);
                }
                field.map(|i| self.field(i))
            }
            other => {
                out.extend_from_slice(format!("ARG TYPE NOT FIELD BUT {}", arg_type_number(other)).as_bytes());
                None
            }
        }
    }

    fn mac(&mut self, out: &mut Vec<u8>, f: &[u8], arg: &mut Arg) {
        let Some(field) = self.field_of(out, arg) else { return };
        let sep = if f.first() == Some(&b'm') {
            ""
        } else if f.get(1) == Some(&b'F') {
            "-"
        } else {
            ":"
        };
        let reverse = f.get(1) == Some(&b'R');
        if field.size != 6 {
            out.extend_from_slice(b"INVALIDMAC");
            return;
        }
        let mut b = self.bytes(field.offset as u64, 6);
        if reverse {
            b.reverse();
        }
        let parts: Vec<String> = b.iter().map(|x| format!("{x:02x}")).collect();
        out.extend_from_slice(parts.join(sep).as_bytes());
    }

    fn ip4(&self, out: &mut Vec<u8>, leading_zeros: bool, reverse: bool, b: &[u8]) {
        let mut v = [b[0], b[1], b[2], b[3]];
        if reverse {
            v.reverse();
        }
        let s = if leading_zeros {
            format!("{:03}.{:03}.{:03}.{:03}", v[0], v[1], v[2], v[3])
        } else {
            format!("{}.{}.{}.{}", v[0], v[1], v[2], v[3])
        };
        out.extend_from_slice(s.as_bytes());
    }

    fn ip6(&self, out: &mut Vec<u8>, compressed: bool, colons: bool, b: &[u8]) {
        if !compressed {
            for j in (0..16).step_by(2) {
                out.extend_from_slice(format!("{:02x}{:02x}", b[j], b[j + 1]).as_bytes());
                if colons && j < 14 {
                    out.push(b':');
                }
            }
            return;
        }
        let words: Vec<u16> = (0..8).map(|i| u16::from_be_bytes([b[2 * i], b[2 * i + 1]])).collect();
        let v4mapped = words[..5].iter().all(|&w| w == 0) && words[5] == 0xffff;
        let isatap = (words[4] | 0x0200) == 0x0200 && words[5] == 0x5efe;
        let use_v4 = v4mapped || isatap;
        let range = if use_v4 { 6 } else { 8 };
        let mut zerolen = [0usize; 8];
        for (i, run) in zerolen.iter_mut().enumerate().take(range) {
            *run = words[i..range].iter().take_while(|&&w| w == 0).count();
        }
        let (mut longest, mut colonpos) = (1, None);
        for (i, &z) in zerolen.iter().enumerate().take(range) {
            if z > longest {
                longest = z;
                colonpos = Some(i);
            }
        }
        let mut needcolon = false;
        let mut i = 0;
        while i < range {
            if Some(i) == colonpos {
                if needcolon || i == 0 {
                    out.push(b':');
                }
                out.push(b':');
                needcolon = false;
                i += longest;
                continue;
            }
            if needcolon {
                out.push(b':');
            }
            out.extend_from_slice(format!("{:x}", words[i]).as_bytes());
            needcolon = true;
            i += 1;
        }
        if use_v4 {
            if needcolon {
                out.push(b':');
            }
            self.ip4(out, false, false, &b[12..16]);
        }
    }

    fn ip(&mut self, out: &mut Vec<u8>, f: &[u8], arg: &mut Arg) {
        let i = f[0];
        let at = |k: usize| f.get(k).copied().unwrap_or(0);
        let order = |c: u8, big_endian: bool| match c {
            b'h' => !big_endian,
            b'l' => true,
            _ => false,
        };
        match at(1) {
            b'4' => {
                let reverse = order(at(2), self.tep.big_endian);
                let Some(field) = self.field_of(out, arg) else { return };
                if field.size != 4 {
                    out.extend_from_slice(b"INVALIDIPv4");
                    return;
                }
                let b = self.bytes(field.offset as u64, 4);
                self.ip4(out, i == b'i', reverse, &b);
            }
            b'6' => {
                let compressed = i == b'I' && at(2) == b'c';
                let Some(field) = self.field_of(out, arg) else { return };
                if field.size != 16 {
                    out.extend_from_slice(b"INVALIDIPv6");
                    return;
                }
                let b = self.bytes(field.offset as u64, 16);
                self.ip6(out, compressed, i == b'I', &b);
            }
            b'S' => {
                let mut k = 2;
                let (mut have_p, mut have_c) = (false, false);
                if i == b'I' {
                    if at(k) == b'p' {
                        have_p = true;
                        k += 1;
                    }
                    if at(k) == b'c' {
                        have_c = true;
                        k += 1;
                    }
                }
                let reverse = order(at(k), self.tep.big_endian);
                let mut a = &mut *arg;
                while let Arg::Type { item, .. } = a {
                    a = item;
                }
                let (off, len) = match a {
                    Arg::Field { .. } => {
                        let Some(field) = self.field_of(out, a) else { return };
                        (field.offset as u64, field.size)
                    }
                    Arg::DynArray { field } => {
                        let (o, l) = self.dynamic_offset(self.field(*field));
                        (o as u64, l)
                    }
                    other => {
                        out.extend_from_slice(
                            format!("ARG NOT FIELD NOR DYNAMIC ARRAY BUT TYPE {}", arg_type_number(other)).as_bytes(),
                        );
                        return;
                    }
                };
                let sa = self.bytes(off, 28);
                let family = u16::from_le_bytes([sa[0], sa[1]]);
                if family == 2 {
                    if len < 16 {
                        out.extend_from_slice(b"INVALIDIPv4");
                        return;
                    }
                    self.ip4(out, i == b'i', reverse, &sa[4..8]);
                    if have_p {
                        out.extend_from_slice(format!(":{}", u16::from_be_bytes([sa[2], sa[3]])).as_bytes());
                    }
                } else if family == 10 {
                    if len < 28 {
                        out.extend_from_slice(b"INVALIDIPv6");
                        return;
                    }
                    if have_p {
                        out.push(b'[');
                    }
                    self.ip6(out, have_c, i == b'I', &sa[8..24]);
                    if have_p {
                        out.extend_from_slice(format!("]:{}", u16::from_be_bytes([sa[2], sa[3]])).as_bytes());
                    }
                }
            }
            _ => {}
        }
    }

    fn uuid(&mut self, out: &mut Vec<u8>, f: &[u8], arg: &mut Arg) {
        let upper = matches!(f.get(1), Some(b'L' | b'B'));
        let guid = matches!(f.get(1), Some(b'L' | b'l'));
        let Some(field) = self.field_of(out, arg) else { return };
        if field.size != 16 {
            out.extend_from_slice(b"INVALIDUUID");
            return;
        }
        let b = self.bytes(field.offset as u64, 16);
        const GUID: [usize; 16] = [3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15];
        for i in 0..16 {
            let x = b[if guid { GUID[i] } else { i }];
            let s = if upper { format!("{x:02X}") } else { format!("{x:02x}") };
            out.extend_from_slice(s.as_bytes());
            if matches!(i, 3 | 5 | 7 | 9) {
                out.push(b'-');
            }
        }
    }

    fn raw_buff(&mut self, out: &mut Vec<u8>, f: &[u8], arg: &mut Arg, plen: i32) {
        let delim: &[u8] = match f.get(1) {
            Some(b'C') => b":",
            Some(b'D') => b"-",
            Some(b'N') => b"",
            _ => b" ",
        };
        let Arg::DynArray { field } = arg else {
            out.extend_from_slice(format!("ARG TYPE NOT FIELD BUT {}", arg_type_number(arg)).as_bytes());
            return;
        };
        let (off, len) = self.dynamic_offset(self.field(*field));
        let n = (plen as i64).min(len as i64);
        if n < 1 {
            return;
        }
        let b = self.bytes(off as u64, n as usize);
        for (i, x) in b.iter().enumerate() {
            if i > 0 {
                out.extend_from_slice(delim);
            }
            out.extend_from_slice(format!("{x:02x}").as_bytes());
        }
    }

    /// `print_parse_data` for one piece of the format.
    pub fn piece(&mut self, out: &mut Vec<u8>, p: &mut PrintParse) {
        let len_arg = p.len_arg.as_mut().map(|a| self.num(a) as i32);
        match p.kind {
            ParseKind::Text => out.extend_from_slice(cstr(&p.format)),
            ParseKind::Digit => {
                let Some(arg) = p.arg.as_mut() else { return };
                let v = self.num(arg);
                let carg = match p.ls {
                    -2 => CArg::Int(v as i8 as i32),
                    -1 => CArg::Int(v as i16 as i32),
                    0 => CArg::Int(v as i32),
                    1 | 2 => CArg::Long(v as i64),
                    _ => {
                        self.failed = true;
                        return;
                    }
                };
                let star = len_arg.filter(|&l| l >= 0);
                printf::format(out, &p.format, star, carg);
            }
            ParseKind::Pointer => {
                let Some(arg) = p.arg.as_mut() else { return };
                let spec = p.format.clone();
                self.pointer(out, &spec, len_arg.unwrap_or(1), arg);
            }
            ParseKind::String => {
                let Some(arg) = p.arg.as_mut() else { return };
                let mut tmp = Vec::new();
                let star = len_arg.filter(|&l| l >= 0);
                self.str_arg(&mut tmp, &p.format, star, arg);
                out.extend_from_slice(cstr(&tmp));
            }
        }
    }
}

/// The C enum value of an argument type, for libtraceevent's error texts.
fn arg_type_number(a: &Arg) -> i32 {
    match a {
        Arg::Null => 0,
        Arg::Atom(_) => 1,
        Arg::Field { .. } => 2,
        Arg::Flags { .. } => 3,
        Arg::Symbol { .. } => 4,
        Arg::Hex { spaced: true, .. } => 5,
        Arg::Type { .. } => 6,
        Arg::Str(_) => 7,
        Arg::DynArray { .. } => 9,
        Arg::Op { .. } => 10,
        Arg::Bitmask { cpumask: false, .. } => 12,
        Arg::DynArrayLen { .. } => 13,
        Arg::Hex { spaced: false, .. } => 14,
        Arg::IntArray { .. } => 15,
        Arg::Bitmask { cpumask: true, .. } => 16,
    }
}
