//! The fast paths that need `unsafe`: short copies into output buffers
//! without a `memcpy` call, the SSSE3 hex conversion of addresses, and
//! prefetch hints. Every callchain line goes through here, so each of
//! these was kept only for what the benchmark showed (see
//! docs/performance.md). The functions outside are safe: each checks or
//! makes the room it writes to.

/// Copies `src` to `dst` in a few unaligned moves, overlapping where the
/// length is not a multiple of theirs: the text of a callchain line is
/// some tens of bytes, and a `memcpy` call costs more than the copy.
///
/// # Safety
/// `dst` must be valid for `src.len()` bytes of writes and not overlap
/// `src`.
#[inline(always)]
unsafe fn copy_short(src: &[u8], dst: *mut u8) {
    let n = src.len();
    let s = src.as_ptr();
    // SAFETY: every read is within `src`, every write within the first
    // `n` bytes at `dst`.
    unsafe {
        let mv16 = |i: usize| dst.add(i).cast::<[u8; 16]>().write_unaligned(s.add(i).cast::<[u8; 16]>().read_unaligned());
        // No loop: the compiler would make it a `memcpy` call again.
        if n > 64 {
            std::ptr::copy_nonoverlapping(s, dst, n);
        } else if n >= 32 {
            mv16(0);
            mv16(16);
            mv16(n - 32);
            mv16(n - 16);
        } else if n >= 16 {
            mv16(0);
            mv16(n - 16);
        } else if n >= 8 {
            let (a, b) = (s.cast::<[u8; 8]>().read_unaligned(), s.add(n - 8).cast::<[u8; 8]>().read_unaligned());
            dst.cast::<[u8; 8]>().write_unaligned(a);
            dst.add(n - 8).cast::<[u8; 8]>().write_unaligned(b);
        } else if n >= 4 {
            let (a, b) = (s.cast::<[u8; 4]>().read_unaligned(), s.add(n - 4).cast::<[u8; 4]>().read_unaligned());
            dst.cast::<[u8; 4]>().write_unaligned(a);
            dst.add(n - 4).cast::<[u8; 4]>().write_unaligned(b);
        } else if n > 0 {
            let (a, b) = (*s, *s.add(n - 1));
            if n == 3 {
                *dst.add(1) = *s.add(1);
            }
            *dst = a;
            *dst.add(n - 1) = b;
        }
    }
}

/// Appends a short text (a line's head or tail, a time) with
/// [`copy_short`] rather than a `memcpy` call.
#[inline(always)]
pub fn put_short(out: &mut Vec<u8>, src: &[u8]) {
    out.reserve(src.len());
    // SAFETY: `reserve` made room for `src.len()` bytes past the length;
    // `src` cannot overlap the spare capacity of `out`.
    unsafe {
        let len = out.len();
        copy_short(src, out.as_mut_ptr().add(len));
        out.set_len(len + src.len());
    }
}

/// `%16llx` into exactly 16 bytes: right-aligned, space-padded.
#[inline]
pub fn hex16(out: &mut [u8], v: u64) {
    let [hi, lo] = hex16_words(v);
    out[..8].copy_from_slice(&hi);
    out[8..16].copy_from_slice(&lo);
}

/// [`hex16`] as two 8-byte words, for callers that store them straight
/// where they go (a 16-byte copy of freshly written bytes waits for the
/// writes to land).
#[inline]
pub fn hex16_words(v: u64) -> [[u8; 8]; 2] {
    #[cfg(target_arch = "x86_64")]
    // The answer is cached after the first ask.
    if std::arch::is_x86_feature_detected!("ssse3") {
        // SAFETY: the CPU has SSSE3.
        return unsafe { hex16_ssse3(v) };
    }
    hex16_swar(v)
}

fn hex16_swar(v: u64) -> [[u8; 8]; 2] {
    // Leading zeros become spaces; the last digit always stays.
    let pad = (v.leading_zeros() / 4).min(15);
    [hex8(v >> 32, pad.min(8)).to_be_bytes(), hex8(v & 0xffff_ffff, pad.saturating_sub(8)).to_be_bytes()]
}

/// [`hex16_words`] with one table lookup for all 16 digits: the nibbles
/// spread to bytes in printing order, `pshufb` through "0123456789abcdef",
/// and the leading zeros but the last replaced by spaces. (Every callchain
/// line starts with an address; this is a tenth of the copier's work.)
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "ssse3")]
unsafe fn hex16_ssse3(v: u64) -> [[u8; 8]; 2] {
    use std::arch::x86_64::*;
    let pad = (v.leading_zeros() / 4).min(15) as i8;
    let x = _mm_cvtsi64_si128(v.swap_bytes() as i64);
    let low = _mm_set1_epi8(0x0f);
    let nibbles = _mm_unpacklo_epi8(_mm_and_si128(_mm_srli_epi16(x, 4), low), _mm_and_si128(x, low));
    let digits = _mm_shuffle_epi8(_mm_setr_epi8(48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 97, 98, 99, 100, 101, 102), nibbles);
    let spaces = _mm_cmpgt_epi8(_mm_set1_epi8(pad), _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    let out = _mm_or_si128(_mm_andnot_si128(spaces, digits), _mm_and_si128(spaces, _mm_set1_epi8(b' ' as i8)));
    let mut words = [[0u8; 8]; 2];
    // SAFETY: `words` is 16 bytes.
    unsafe { _mm_storeu_si128(words.as_mut_ptr().cast(), out) };
    words
}

/// The 8 hex digits of `x` (< 2^32) as the bytes of a u64, most significant
/// digit in the highest byte, the highest `pad` bytes spaces.
#[inline]
fn hex8(x: u64, pad: u32) -> u64 {
    const LOW: u64 = 0x0f0f_0f0f_0f0f_0f0f;
    const ONES: u64 = LOW / 0x0f;
    // Each nibble spread to a byte of its own (lowest nibble in the lowest
    // byte), then turned into its digit in all 8 bytes at once.
    let mut x = (x | x << 16) & 0x0000_ffff_0000_ffff;
    x = (x | x << 8) & 0x00ff_00ff_00ff_00ff;
    x = (x | x << 4) & LOW;
    // Bytes of 10 and above get 'a' - '9' - 1 more than '0' + n.
    let letters = ((x + 6 * ONES) >> 4) & ONES;
    let digits = x + b'0' as u64 * ONES + letters * (b'a' - b'9' - 1) as u64;
    // The low 8 - pad bytes.
    const KEEP: [u64; 9] = {
        let mut k = [0; 9];
        let mut i = 0;
        while i < 8 {
            k[i] = u64::MAX >> (8 * i);
            i += 1;
        }
        k
    };
    let keep = KEEP[(pad as usize).min(8)];
    (digits & keep) | ((b' ' as u64 * ONES) & !keep)
}

/// Appends a callchain line: a tab, the address as [`hex16_words`]
/// gives it, then `line` and `name`, in a few unaligned stores rather than
/// copies through the stack.
#[inline(always)]
pub fn put_frame_line(out: &mut Vec<u8>, [hi, lo]: [[u8; 8]; 2], line: &[u8], name: &[u8]) {
    let n = 17 + line.len() + name.len();
    out.reserve(n);
    // SAFETY: `reserve` made room for the `n` bytes written past the
    // length, which then covers exactly them; `line` and `name` cannot
    // overlap the spare capacity of `out`.
    unsafe {
        let len = out.len();
        let at = out.as_mut_ptr().add(len);
        at.write(b'\t');
        at.add(1).cast::<[u8; 8]>().write_unaligned(hi);
        at.add(9).cast::<[u8; 8]>().write_unaligned(lo);
        copy_short(line, at.add(17));
        copy_short(name, at.add(17 + line.len()));
        out.set_len(len + n);
    }
}

/// Asks for the cache lines of the 192 bytes at address `addr` ahead of
/// use: a hint, never a fault, whatever the address (so it may name
/// memory the caller no longer borrows).
#[inline(always)]
pub fn prefetch(addr: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it does not fault on any address.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(addr as *const i8);
        _mm_prefetch::<_MM_HINT_T0>(addr.wrapping_add(64) as *const i8);
        _mm_prefetch::<_MM_HINT_T0>(addr.wrapping_add(128) as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = addr;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table lookup and the arithmetic print every address alike.
    #[test]
    fn hex16_ways_agree() {
        let mut x: u64 = 0x1234_5678_9abc_def1;
        let mut values = vec![0, 1, 0xf, 0x10, 0xff, u64::MAX, 1 << 63, 0xffff_ffff, 0x1_0000_0000, 0xffffffff81000e06, 0x7fac67c02bb4];
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push(x >> (x % 64));
        }
        for v in values {
            let want = format!("{v:16x}");
            assert_eq!(hex16_swar(v).concat(), want.as_bytes(), "{v:#x}");
            assert_eq!(hex16_words(v).concat(), want.as_bytes(), "{v:#x}");
        }
    }

    /// Every length copies exactly its bytes, and nothing around them.
    #[test]
    fn short_copies_write_exactly_their_bytes() {
        let src: Vec<u8> = (0..300u32).map(|i| (i * 7 + 1) as u8).collect();
        for n in 0..=300 {
            for off in [0, 3] {
                let mut dst = vec![0xeeu8; n + 40];
                // SAFETY: `dst` has room for `n` bytes at `off + 16`.
                unsafe { copy_short(&src[off..off + n.min(300 - off)], dst.as_mut_ptr().add(16)) };
                let m = n.min(300 - off);
                assert_eq!(&dst[16..16 + m], &src[off..off + m], "{n} at {off}");
                assert!(dst[..16].iter().chain(&dst[16 + m..]).all(|&b| b == 0xee), "{n} at {off}");
            }
        }
    }

    /// A frame line is the tab, the address and the two parts, whatever
    /// their lengths.
    #[test]
    fn frame_lines_are_written_whole() {
        let text: Vec<u8> = (0..200u32).map(|i| b'a' + (i % 26) as u8).collect();
        for (n, m) in [(0, 0), (1, 0), (3, 2), (17, 33), (64, 65), (130, 70)] {
            let mut out = b"head".to_vec();
            put_frame_line(&mut out, hex16_words(0x7f00_1234), &text[..n], &text[..m]);
            let want = [format!("head\t{:16x}", 0x7f00_1234).as_bytes(), &text[..n], &text[..m]].concat();
            assert_eq!(out, want, "{n} + {m}");
        }
    }
}
