//! Bounds-checked, endian-aware reads from borrowed byte slices.
//!
//! Every multi-byte value in a perf.data file is written in the byte order of
//! the machine that recorded it. The file magic tells which one it is (see
//! [`super::header`]); from then on all reads go through [`Endian`].
//!
//! Nothing here panics: a read past the end returns [`Truncated`], which the
//! caller turns into an error naming the file offset.

/// Byte order of a perf.data file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endian {
    Little,
    Big,
}

/// A read ran past the end of its slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Truncated;

impl Endian {
    /// The byte order of the machine pstitch runs on.
    pub const NATIVE: Endian = if cfg!(target_endian = "big") { Endian::Big } else { Endian::Little };

    #[inline]
    pub fn u16(self, b: [u8; 2]) -> u16 {
        match self {
            Endian::Little => u16::from_le_bytes(b),
            Endian::Big => u16::from_be_bytes(b),
        }
    }

    #[inline]
    pub fn u32(self, b: [u8; 4]) -> u32 {
        match self {
            Endian::Little => u32::from_le_bytes(b),
            Endian::Big => u32::from_be_bytes(b),
        }
    }

    #[inline]
    pub fn u64(self, b: [u8; 8]) -> u64 {
        match self {
            Endian::Little => u64::from_le_bytes(b),
            Endian::Big => u64::from_be_bytes(b),
        }
    }

    /// Reads a `u16` at `off`, or `None` if it does not fit.
    #[inline]
    pub fn read_u16(self, data: &[u8], off: usize) -> Option<u16> {
        let b = data.get(off..off.checked_add(2)?)?;
        Some(self.u16(b.try_into().ok()?))
    }

    /// Reads a `u32` at `off`, or `None` if it does not fit.
    #[inline]
    pub fn read_u32(self, data: &[u8], off: usize) -> Option<u32> {
        let b = data.get(off..off.checked_add(4)?)?;
        Some(self.u32(b.try_into().ok()?))
    }

    /// Reads a `u64` at `off`, or `None` if it does not fit.
    #[inline]
    pub fn read_u64(self, data: &[u8], off: usize) -> Option<u64> {
        let b = data.get(off..off.checked_add(8)?)?;
        Some(self.u64(b.try_into().ok()?))
    }
}

/// A forward cursor over a borrowed slice.
#[derive(Debug, Clone)]
pub struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
    endian: Endian,
}

impl<'a> Cursor<'a> {
    pub fn new(data: &'a [u8], endian: Endian) -> Self {
        Cursor { data, pos: 0, endian }
    }

    /// Bytes consumed so far.
    #[inline]
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Bytes left.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    #[inline]
    pub fn endian(&self) -> Endian {
        self.endian
    }

    #[inline]
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], Truncated> {
        if n > self.remaining() {
            return Err(Truncated);
        }
        let b = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(b)
    }

    #[inline]
    pub fn skip(&mut self, n: usize) -> Result<(), Truncated> {
        self.bytes(n).map(|_| ())
    }

    #[inline]
    fn array<const N: usize>(&mut self) -> Result<[u8; N], Truncated> {
        let b = self.bytes(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(b);
        Ok(a)
    }

    #[inline]
    pub fn u8(&mut self) -> Result<u8, Truncated> {
        Ok(self.array::<1>()?[0])
    }

    #[inline]
    pub fn u16(&mut self) -> Result<u16, Truncated> {
        Ok(self.endian.u16(self.array()?))
    }

    #[inline]
    pub fn u32(&mut self) -> Result<u32, Truncated> {
        Ok(self.endian.u32(self.array()?))
    }

    #[inline]
    pub fn u64(&mut self) -> Result<u64, Truncated> {
        Ok(self.endian.u64(self.array()?))
    }

    /// A `u64` count followed by that many `u64`s, as a borrowed [`U64Array`].
    /// The count is checked against the bytes left before anything is
    /// allocated or sliced.
    pub fn u64_array(&mut self, nr: u64) -> Result<U64Array<'a>, Truncated> {
        let len = usize::try_from(nr).ok().and_then(|n| n.checked_mul(8)).ok_or(Truncated)?;
        Ok(U64Array { bytes: self.bytes(len)?, endian: self.endian })
    }

    /// A perf header string: `u32 len` then `len` bytes, NUL-padded.
    /// Returns the bytes before the first NUL.
    pub fn perf_string(&mut self) -> Result<&'a [u8], Truncated> {
        let len = self.u32()? as usize;
        let b = self.bytes(len)?;
        Ok(until_nul(b))
    }
}

/// The bytes before the first NUL (all of them if there is none).
#[inline]
pub fn until_nul(b: &[u8]) -> &[u8] {
    match b.iter().position(|&c| c == 0) {
        Some(i) => &b[..i],
        None => b,
    }
}

/// The position of the first `byte` in `b`, eight bytes at a time.
#[inline]
pub fn find_byte(b: &[u8], byte: u8) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let mut chunks = b.chunks_exact(8);
    for (k, c) in chunks.by_ref().enumerate() {
        let x = u64::from_le_bytes(c.try_into().expect("8 bytes")) ^ (ONES * u64::from(byte));
        // A zero byte of x, the lowest one found exactly.
        let zero = x.wrapping_sub(ONES) & !x & (ONES << 7);
        if zero != 0 {
            return Some(8 * k + zero.trailing_zeros() as usize / 8);
        }
    }
    let rest = chunks.remainder();
    rest.iter().position(|&c| c == byte).map(|p| b.len() - rest.len() + p)
}

/// A borrowed array of `u64`s in file byte order (callchains, id lists).
#[derive(Clone, Copy)]
pub struct U64Array<'a> {
    bytes: &'a [u8],
    endian: Endian,
}

impl<'a> U64Array<'a> {
    pub const EMPTY: U64Array<'static> = U64Array { bytes: &[], endian: Endian::NATIVE };

    #[inline]
    pub fn new(bytes: &'a [u8], endian: Endian) -> Self {
        debug_assert!(bytes.len().is_multiple_of(8));
        U64Array { bytes, endian }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.bytes.len() / 8
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    #[inline]
    pub fn get(&self, i: usize) -> Option<u64> {
        self.endian.read_u64(self.bytes, i.checked_mul(8)?)
    }

    /// The first `n` entries (all of them if there are fewer).
    #[inline]
    pub fn prefix(&self, n: usize) -> U64Array<'a> {
        let n = n.min(self.len());
        U64Array { bytes: &self.bytes[..n * 8], endian: self.endian }
    }

    #[inline]
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = u64> + ExactSizeIterator + Clone + 'a {
        let endian = self.endian;
        self.bytes.chunks_exact(8).map(move |c| endian.u64(c.try_into().unwrap_or([0; 8])))
    }

    #[inline]
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    pub fn endian(&self) -> Endian {
        self.endian
    }
}

impl std::fmt::Debug for U64Array<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter().map(|v| format!("{v:#x}"))).finish()
    }
}

/// C's `%#llx`, as perf prints ids and offsets: `0x` and hex digits, but
/// a bare `0` for zero.
pub fn alt_hex(v: u64) -> String {
    if v == 0 { "0".to_string() } else { format!("{v:#x}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_found_where_they_are() {
        for len in 0..40 {
            for at in 0..=len {
                let mut b = vec![b'x'; len];
                // Bytes that differ from '\n' by one bit, or borrow into it.
                for (i, c) in b.iter_mut().enumerate() {
                    *c = [b'x', b'\x0b', b'\x09', b'\x8a', b'\x0a' ^ 0x80][i % 5];
                }
                if at < len {
                    b[at] = b'\n';
                    b[at + 1..].iter_mut().step_by(3).for_each(|c| *c = b'\n');
                }
                let want = b.iter().position(|&c| c == b'\n');
                assert_eq!(find_byte(&b, b'\n'), want, "len {len}, at {at}");
            }
        }
    }

    #[test]
    fn reads_both_orders() {
        let b = [1, 2, 3, 4, 5, 6, 7, 8];
        assert_eq!(Endian::Little.read_u32(&b, 0), Some(0x04030201));
        assert_eq!(Endian::Big.read_u32(&b, 0), Some(0x01020304));
        assert_eq!(Endian::Big.read_u64(&b, 0), Some(0x0102030405060708));
        assert_eq!(Endian::Little.read_u64(&b, 1), None);
        assert_eq!(Endian::Little.read_u16(&b, usize::MAX), None);
    }

    #[test]
    fn cursor_never_reads_past_end() {
        let b = [0u8; 12];
        let mut c = Cursor::new(&b, Endian::Little);
        assert!(c.u64().is_ok());
        assert!(c.u64().is_err());
        assert!(c.u32().is_ok());
        assert!(c.u8().is_err());
        let mut c = Cursor::new(&b, Endian::Little);
        assert!(c.u64_array(u64::MAX).is_err());
        assert!(c.u64_array(2).is_err());
        assert_eq!(c.u64_array(1).unwrap().len(), 1);
    }

    #[test]
    fn perf_string_stops_at_nul() {
        let b = [8, 0, 0, 0, b'a', b'b', 0, 0, 0, 0, 0, 0];
        let mut c = Cursor::new(&b, Endian::Little);
        assert_eq!(c.perf_string().unwrap(), b"ab");
        assert_eq!(c.remaining(), 0);
    }
}
