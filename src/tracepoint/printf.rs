//! glibc `printf` for the single conversions libtraceevent hands it: one
//! `%[flags][width][.precision][length]conv` spec (width or precision may
//! be `*`, taken from `star`) applied to one integer or string argument.
//! A spec glibc would not accept is copied out as it is.

/// A C argument as passed through varargs.
#[derive(Debug, Clone, Copy)]
pub enum CArg<'a> {
    /// An `int` (or anything promoted to one).
    Int(i32),
    /// A `long` / `long long`.
    Long(i64),
    /// A `char *` (the bytes up to the first NUL are the string).
    Str(&'a [u8]),
}

#[derive(Debug, Default, Clone, Copy)]
struct Spec {
    left: bool,
    plus: bool,
    space: bool,
    alt: bool,
    zero: bool,
    width: Option<i64>,
    prec: Option<i64>,
    /// -2 hh, -1 h, 0, 1 l, 2 ll/L/q, 3 j/z/t (64-bit anyway)
    len: i32,
    conv: u8,
}

/// A spec glibc does not accept: what it prints instead.
enum Parsed {
    Ok(Spec),
    /// Unknown conversion character: glibc prints `%`, the flags, width and
    /// precision it parsed and the character (length modifiers dropped),
    /// then the rest of the format as text.
    Unknown(Vec<u8>),
}

fn parse_spec(spec: &[u8], star: Option<i32>) -> Parsed {
    let mut s = Spec::default();
    let mut i = 1;
    if spec.first() != Some(&b'%') {
        return Parsed::Unknown(spec.to_vec());
    }
    let mut star = star;
    let at = |i: usize| spec.get(i).copied().unwrap_or(0);
    while let c @ (b'-' | b'+' | b' ' | b'#' | b'0') = at(i) {
        match c {
            b'-' => s.left = true,
            b'+' => s.plus = true,
            b' ' => s.space = true,
            b'#' => s.alt = true,
            _ => s.zero = true,
        }
        i += 1;
    }
    if at(i) == b'*' {
        let w = star.take().unwrap_or(0) as i64;
        if w < 0 {
            s.left = true;
            s.width = Some(-w);
        } else {
            s.width = Some(w);
        }
        i += 1;
    } else {
        let mut w: Option<i64> = None;
        while at(i).is_ascii_digit() {
            w = Some(w.unwrap_or(0).saturating_mul(10).saturating_add((at(i) - b'0') as i64));
            i += 1;
        }
        s.width = w;
    }
    if at(i) == b'.' {
        i += 1;
        if at(i) == b'*' {
            let p = star.take().unwrap_or(0) as i64;
            s.prec = if p < 0 { None } else { Some(p) };
            i += 1;
        } else {
            let mut p = 0i64;
            while at(i).is_ascii_digit() {
                p = p.saturating_mul(10).saturating_add((at(i) - b'0') as i64);
                i += 1;
            }
            s.prec = Some(p);
        }
    }
    match at(i) {
        b'h' if at(i + 1) == b'h' => {
            s.len = -2;
            i += 2;
        }
        b'h' => {
            s.len = -1;
            i += 1;
        }
        b'l' if at(i + 1) == b'l' => {
            s.len = 2;
            i += 2;
        }
        b'l' => {
            s.len = 1;
            i += 1;
        }
        b'L' | b'q' => {
            s.len = 2;
            i += 1;
        }
        b'j' | b'z' | b'Z' | b't' => {
            s.len = 3;
            i += 1;
        }
        _ => {}
    }
    s.conv = at(i);
    if !matches!(s.conv, b'd' | b'i' | b'u' | b'x' | b'X' | b'o' | b'c' | b's') || i + 1 != spec.len() {
        if i >= spec.len() {
            return Parsed::Unknown(spec.to_vec());
        }
        let mut out = vec![b'%'];
        if s.alt {
            out.push(b'#');
        }
        if s.plus {
            out.push(b'+');
        } else if s.space {
            out.push(b' ');
        }
        if s.left {
            out.push(b'-');
        }
        if s.zero {
            out.push(b'0');
        }
        if let Some(w) = s.width.filter(|&w| w != 0) {
            out.extend_from_slice(w.to_string().as_bytes());
        }
        if let Some(p) = s.prec {
            out.extend_from_slice(format!(".{p}").as_bytes());
        }
        out.push(s.conv);
        out.extend_from_slice(&spec[i + 1..]);
        return Parsed::Unknown(out);
    }
    // Widths beyond what glibc would format are not worth honouring.
    if s.width.is_some_and(|w| w > 1 << 20) || s.prec.is_some_and(|p| p > 1 << 20) {
        return Parsed::Unknown(spec.to_vec());
    }
    Parsed::Ok(s)
}

/// Appends what `printf(spec, [star,] arg)` prints.
pub fn format(out: &mut Vec<u8>, spec: &[u8], star: Option<i32>, arg: CArg<'_>) {
    let s = match parse_spec(spec, star) {
        Parsed::Ok(s) => s,
        Parsed::Unknown(text) => {
            out.extend_from_slice(&text);
            return;
        }
    };
    match s.conv {
        // Wide strings: perf passes narrow ones, whose bytes read as wide
        // characters are not ASCII, so the conversion fails and prints
        // nothing (an empty string prints as empty anyway).
        b's' if s.len == 1 => {}
        b's' => {
            let bytes = match arg {
                CArg::Str(b) => b,
                _ => b"(null)",
            };
            let bytes = &bytes[..bytes.iter().position(|&c| c == 0).unwrap_or(bytes.len())];
            let bytes = match s.prec {
                Some(p) if (p as usize) < bytes.len() => &bytes[..p as usize],
                _ => bytes,
            };
            pad(out, &s, b"", bytes, false);
        }
        b'c' => {
            let v = match arg {
                CArg::Int(v) => v as i64,
                CArg::Long(v) => v,
                CArg::Str(_) => 0,
            };
            if s.len == 1 {
                // %lc: a wint_t; in the C locale only ASCII converts, anything
                // else fails and prints nothing.
                let wc = v as u32;
                if wc < 0x80 {
                    pad(out, &s, b"", &[wc as u8], false);
                }
            } else {
                pad(out, &s, b"", &[v as u8], false);
            }
        }
        _ => {
            let raw: i64 = match arg {
                CArg::Int(v) => v as i64,
                CArg::Long(v) => v,
                CArg::Str(p) => p.as_ptr() as i64,
            };
            let signed = matches!(s.conv, b'd' | b'i');
            // What glibc reads for the length modifier, then converts.
            let (neg, mag): (bool, u64) = if signed {
                let v = match s.len {
                    -2 => raw as i8 as i64,
                    -1 => raw as i16 as i64,
                    0 => raw as i32 as i64,
                    _ => raw,
                };
                (v < 0, v.unsigned_abs())
            } else {
                let v = match s.len {
                    -2 => raw as u8 as u64,
                    -1 => raw as u16 as u64,
                    0 => raw as u32 as u64,
                    _ => raw as u64,
                };
                (false, v)
            };
            let mut digits = match s.conv {
                b'x' => format!("{mag:x}").into_bytes(),
                b'X' => format!("{mag:X}").into_bytes(),
                b'o' => format!("{mag:o}").into_bytes(),
                _ => mag.to_string().into_bytes(),
            };
            if s.prec == Some(0) && mag == 0 {
                digits.clear();
            }
            if let Some(p) = s.prec {
                while (digits.len() as i64) < p {
                    digits.insert(0, b'0');
                }
            }
            if s.alt && s.conv == b'o' && digits.first() != Some(&b'0') {
                digits.insert(0, b'0');
            }
            let prefix: &[u8] = if neg {
                b"-"
            } else if signed && s.plus {
                b"+"
            } else if signed && s.space {
                b" "
            } else if s.alt && mag != 0 && s.conv == b'x' {
                b"0x"
            } else if s.alt && mag != 0 && s.conv == b'X' {
                b"0X"
            } else {
                b""
            };
            let zero = s.zero && !s.left && s.prec.is_none();
            pad(out, &s, prefix, &digits, zero);
        }
    }
}

fn pad(out: &mut Vec<u8>, s: &Spec, prefix: &[u8], body: &[u8], zero: bool) {
    let len = prefix.len() + body.len();
    let fill = (s.width.unwrap_or(0) as usize).saturating_sub(len);
    if s.left {
        out.extend_from_slice(prefix);
        out.extend_from_slice(body);
        out.resize(out.len() + fill, b' ');
    } else if zero {
        out.extend_from_slice(prefix);
        out.resize(out.len() + fill, b'0');
        out.extend_from_slice(body);
    } else {
        out.resize(out.len() + fill, b' ');
        out.extend_from_slice(prefix);
        out.extend_from_slice(body);
    }
}

/// glibc's `%p`.
pub fn pointer(out: &mut Vec<u8>, v: u64) {
    if v == 0 {
        out.extend_from_slice(b"(nil)");
    } else {
        out.extend_from_slice(format!("0x{v:x}").as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(spec: &str, star: Option<i32>, arg: CArg<'_>) -> String {
        let mut v = Vec::new();
        format(&mut v, spec.as_bytes(), star, arg);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn integers() {
        assert_eq!(p("%d", None, CArg::Int(-5)), "-5");
        assert_eq!(p("%u", None, CArg::Int(-1)), "4294967295");
        assert_eq!(p("%03d", None, CArg::Int(1)), "001");
        assert_eq!(p("%08lx", None, CArg::Long(0x1f)), "0000001f");
        assert_eq!(p("%lu", None, CArg::Long(-1)), "18446744073709551615");
        assert_eq!(p("%ld", None, CArg::Long(-1)), "-1");
        assert_eq!(p("%#x", None, CArg::Int(255)), "0xff");
        assert_eq!(p("%#x", None, CArg::Int(0)), "0");
        assert_eq!(p("%#o", None, CArg::Int(8)), "010");
        assert_eq!(p("%-5d", None, CArg::Int(42)), "42   ");
        assert_eq!(p("%+d", None, CArg::Int(3)), "+3");
        assert_eq!(p("%.3d", None, CArg::Int(7)), "007");
        assert_eq!(p("%5.3d", None, CArg::Int(-7)), " -007");
        assert_eq!(p("%hhu", None, CArg::Int(-1)), "255");
        assert_eq!(p("%hd", None, CArg::Int(70000)), "4464");
        assert_eq!(p("%*d", Some(4), CArg::Int(1)), "   1");
        assert_eq!(p("%*d", Some(-4), CArg::Int(1)), "1   ");
        assert_eq!(p("%Lu", None, CArg::Long(5)), "5");
        assert_eq!(p("%zu", None, CArg::Long(5)), "5");
        assert_eq!(p("%X", None, CArg::Int(0xab)), "AB");
        assert_eq!(p("%c", None, CArg::Int(0x41)), "A");
    }

    #[test]
    fn strings() {
        assert_eq!(p("%s", None, CArg::Str(b"abc\0def")), "abc");
        assert_eq!(p("%5s", None, CArg::Str(b"ab")), "   ab");
        assert_eq!(p("%-5s", None, CArg::Str(b"ab")), "ab   ");
        assert_eq!(p("%.*s", Some(2), CArg::Str(b"abcd")), "ab");
        assert_eq!(p("%.2s", None, CArg::Str(b"abcd")), "ab");
    }

    #[test]
    fn odd_specs_print_like_glibc() {
        // Unknown conversion: flags/width/precision rebuilt, length dropped.
        assert_eq!(p("%0hlx", None, CArg::Int(1)), "%0lx");
        assert_eq!(p("%l-5d", None, CArg::Int(1)), "%-5d");
        assert_eq!(p("%5.3.2d", None, CArg::Int(1)), "%5.3.2d");
        assert_eq!(p("%99999999d", None, CArg::Int(1)), "%99999999d");
        assert_eq!(p("%lc", None, CArg::Long(0x41)), "A");
        assert_eq!(p("%lc", None, CArg::Long(0x1200000)), "");
        assert_eq!(p("%ls", None, CArg::Str(b"abc")), "");
    }
}
