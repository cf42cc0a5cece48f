//! printf-style helpers that match C's byte-counting padding (Rust's `{:>16}`
//! pads by chars, which differs for non-ASCII comms).

use std::io::Write;

/// `%*s`: right-aligned in `width` bytes.
#[inline]
pub fn pad_left(out: &mut Vec<u8>, s: &[u8], width: usize) {
    for _ in s.len()..width {
        out.push(b' ');
    }
    out.extend_from_slice(s);
}

/// `%-*s`: left-aligned in `width` bytes.
#[inline]
pub fn pad_right(out: &mut Vec<u8>, s: &[u8], width: usize) {
    out.extend_from_slice(s);
    for _ in s.len()..width {
        out.push(b' ');
    }
}

/// `%*d` / `%-*d` for signed values.
#[inline]
pub fn int(out: &mut Vec<u8>, v: i64, width: usize, left: bool) {
    let mut buf = itoa_buf();
    let digits = fmt_u64(&mut buf, v.unsigned_abs());
    let mut s = [0u8; 21];
    let n = if v < 0 {
        s[0] = b'-';
        s[1..1 + digits.len()].copy_from_slice(digits);
        digits.len() + 1
    } else {
        s[..digits.len()].copy_from_slice(digits);
        digits.len()
    };
    if left { pad_right(out, &s[..n], width) } else { pad_left(out, &s[..n], width) }
}

/// `%*lu` for unsigned values.
#[inline]
pub fn uint(out: &mut Vec<u8>, v: u64, width: usize) {
    let mut buf = itoa_buf();
    let s = fmt_u64(&mut buf, v);
    pad_left(out, s, width);
}

/// `%0*lu`.
#[inline]
pub fn uint_zero(out: &mut Vec<u8>, v: u64, width: usize) {
    let mut buf = itoa_buf();
    let s = fmt_u64(&mut buf, v);
    for _ in s.len()..width {
        out.push(b'0');
    }
    out.extend_from_slice(s);
}

/// `%*llx`: lower-case hex, space padded.
#[inline]
pub fn hex(out: &mut Vec<u8>, v: u64, width: usize) {
    let mut buf = [0u8; 16];
    let s = fmt_hex(&mut buf, v);
    pad_left(out, s, width);
}

pub use crate::engine::fast::put_short;

/// `%#llx`: `0x` prefix, except for 0 which prints as `0`.
#[inline]
pub fn hex_alt(out: &mut Vec<u8>, v: u64) {
    if v == 0 {
        out.push(b'0');
    } else {
        out.extend_from_slice(b"0x");
        hex(out, v, 0);
    }
}

fn itoa_buf() -> [u8; 20] {
    [0u8; 20]
}

/// "00" to "99".
pub(super) const PAIRS: [[u8; 2]; 100] = {
    let mut p = [[0; 2]; 100];
    let mut i = 0;
    while i < 100 {
        p[i] = [b'0' + (i / 10) as u8, b'0' + (i % 10) as u8];
        i += 1;
    }
    p
};

/// Two digits at a time: sample lines print four or five numbers each.
pub(super) fn fmt_u64(buf: &mut [u8; 20], mut v: u64) -> &[u8] {
    let mut i = buf.len();
    while v >= 100 {
        i -= 2;
        buf[i..i + 2].copy_from_slice(&PAIRS[(v % 100) as usize]);
        v /= 100;
    }
    if v >= 10 {
        i -= 2;
        buf[i..i + 2].copy_from_slice(&PAIRS[v as usize]);
    } else {
        i -= 1;
        buf[i] = b'0' + v as u8;
    }
    &buf[i..]
}

fn fmt_hex(buf: &mut [u8; 16], mut v: u64) -> &[u8] {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = DIGITS[(v & 15) as usize];
        v >>= 4;
        if v == 0 {
            break;
        }
    }
    &buf[i..]
}

/// Appends formatted text (for the rare, non-hot cases).
pub fn text(out: &mut Vec<u8>, args: std::fmt::Arguments<'_>) {
    let _ = out.write_fmt(args);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::fast::hex16;

    fn s(f: impl FnOnce(&mut Vec<u8>)) -> String {
        let mut v = Vec::new();
        f(&mut v);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn matches_printf() {
        assert_eq!(s(|o| int(o, 42, 7, false)), "     42");
        assert_eq!(s(|o| int(o, 42, 7, true)), "42     ");
        assert_eq!(s(|o| int(o, -1, 3, false)), " -1");
        assert_eq!(s(|o| uint(o, 250000, 10)), "    250000");
        assert_eq!(s(|o| uint_zero(o, 5, 6)), "000005");
        for v in [0, 7, 9, 10, 42, 99, 100, 101, 999, 1000, 12345, 1_000_000_000, u64::MAX / 7, u64::MAX] {
            assert_eq!(s(|o| uint(o, v, 0)), v.to_string());
        }
        assert_eq!(s(|o| int(o, i64::MIN, 0, false)), i64::MIN.to_string());
        assert_eq!(s(|o| hex(o, 0xffffffff81000000, 16)), "ffffffff81000000");
        assert_eq!(s(|o| hex(o, 0, 16)), "               0");
        for v in [0, 1, 0xf, 0x10, 0x9a, 0xffff_ffff, 0x1_0000_0000, 0x1_2345_6789, 0x7f3e1a2b3c4d, 0xffffffff81000000, 0x0123456789abcdef, u64::MAX] {
            let mut b = [0u8; 16];
            hex16(&mut b, v);
            assert_eq!(b.as_slice(), s(|o| hex(o, v, 16)).as_bytes(), "{v:#x}");
        }
        assert_eq!(s(|o| hex_alt(o, 0x1f)), "0x1f");
        assert_eq!(s(|o| hex_alt(o, 0)), "0");
        assert_eq!(s(|o| pad_left(o, "é".as_bytes(), 4)), "  é");
    }
}
