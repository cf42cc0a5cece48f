//! Bounded readers for CFI bytes, with libdw's exact reading rules.
//!
//! libdw's LEB128 readers never fail: past the end of the data, or after
//! the most bytes a 64-bit value can take (10 for unsigned, 9 plus one
//! for signed) without a terminating byte, they return `UINT64_MAX` /
//! `INT64_MAX` and the caller goes on with that value. The CFI interpreter
//! depends on this (an operand missing at the end of an FDE becomes a huge
//! register number, which is then an error), so the readers here do the
//! same rather than reporting truncation.

/// A position in a byte slice.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reader<'a> {
    pub data: &'a [u8],
    pub pos: usize,
    pub little_endian: bool,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(data: &'a [u8], pos: usize, little_endian: bool) -> Reader<'a> {
        Reader { data, pos, little_endian }
    }

    pub(crate) fn at_end(&self) -> bool {
        self.pos >= self.data.len()
    }

    pub(crate) fn remaining(&self) -> usize {
        self.data.len().saturating_sub(self.pos)
    }

    pub(crate) fn u8(&mut self) -> Option<u8> {
        let b = *self.data.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    /// An unsigned value of `n` (≤ 8) bytes.
    pub(crate) fn uint(&mut self, n: usize) -> Option<u64> {
        let end = self.pos.checked_add(n)?;
        let b = self.data.get(self.pos..end)?;
        self.pos = end;
        let mut v = 0u64;
        for i in 0..n {
            let byte = if self.little_endian { b[n - 1 - i] } else { b[i] };
            v = (v << 8) | byte as u64;
        }
        Some(v)
    }

    /// A signed value of `n` (1, 2, 4 or 8) bytes, sign-extended.
    pub(crate) fn sint(&mut self, n: usize) -> Option<u64> {
        let v = self.uint(n)?;
        let shift = 64 - 8 * n as u32;
        Some((((v << shift) as i64) >> shift) as u64)
    }

    /// libdw's `get_uleb128`.
    pub(crate) fn uleb(&mut self) -> u64 {
        let max = self.remaining().min(10);
        if max == 0 {
            return u64::MAX;
        }
        let mut acc = 0u64;
        for i in 0..max {
            let b = self.data[self.pos];
            self.pos += 1;
            acc |= ((b & 0x7f) as u64).wrapping_shl(7 * i as u32);
            if b & 0x80 == 0 {
                return acc;
            }
        }
        u64::MAX
    }

    /// libdw's `get_sleb128`, as the two's complement bits of the value.
    pub(crate) fn sleb(&mut self) -> u64 {
        let max = self.remaining().min(9);
        if max == 0 {
            return i64::MAX as u64;
        }
        let mut acc = 0u64;
        for i in 0..max {
            let b = self.data[self.pos];
            self.pos += 1;
            acc |= ((b & 0x7f) as u64) << (7 * i);
            if b & 0x80 == 0 {
                if b & 0x40 != 0 {
                    acc |= (1u64 << (7 * (i + 1))).wrapping_neg();
                }
                return acc;
            }
        }
        let Some(&b) = self.data.get(self.pos) else { return i64::MAX as u64 };
        self.pos += 1;
        if b & 0x80 == 0 {
            return acc | ((b as u64) << (7 * max));
        }
        i64::MAX as u64
    }
}

/// `DW_EH_PE_*` pointer encodings.
pub(crate) mod pe {
    pub const ABSPTR: u8 = 0x00;
    pub const ULEB128: u8 = 0x01;
    pub const UDATA2: u8 = 0x02;
    pub const UDATA4: u8 = 0x03;
    pub const UDATA8: u8 = 0x04;
    pub const SIGNED: u8 = 0x08;
    pub const SLEB128: u8 = 0x09;
    pub const SDATA2: u8 = 0x0a;
    pub const SDATA4: u8 = 0x0b;
    pub const SDATA8: u8 = 0x0c;
    pub const PCREL: u8 = 0x10;
    pub const TEXTREL: u8 = 0x20;
    pub const DATAREL: u8 = 0x30;
    pub const FUNCREL: u8 = 0x40;
    pub const ALIGNED: u8 = 0x50;
    pub const INDIRECT: u8 = 0x80;
    pub const OMIT: u8 = 0xff;
}

/// The bases an encoded pointer may be relative to (libdw's `Dwarf_CFI`
/// fields read by `read_encoded_value`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Bases {
    /// Address of the data's first byte (`frame_vaddr`): the base of
    /// `pcrel` values (plus their offset) and of `indirect` ones.
    pub vaddr: u64,
    pub textrel: u64,
    pub datarel: u64,
    pub elf64: bool,
}

/// libdw's `encoded_value_size`: bytes of a value in `encoding` (0 when
/// unknown; for uleb128, measured at `r` if given).
pub(crate) fn encoded_size(encoding: u8, elf64: bool, r: Option<&Reader<'_>>) -> usize {
    if encoding == pe::OMIT {
        return 0;
    }
    match encoding & 0x07 {
        pe::UDATA2 => 2,
        pe::UDATA4 => 4,
        pe::UDATA8 => 8,
        pe::ABSPTR => {
            if elf64 {
                8
            } else {
                4
            }
        }
        pe::ULEB128 => match r {
            Some(r) => {
                let rest = &r.data[r.pos.min(r.data.len())..];
                rest.iter().position(|b| b & 0x80 != 0).map_or(0, |i| i + 1)
            }
            None => 0,
        },
        _ => 0,
    }
}

/// libdw's `read_encoded_value`; `None` where it reports an error.
pub(crate) fn read_encoded(r: &mut Reader<'_>, encoding: u8, bases: &Bases) -> Option<u64> {
    let mut result = match encoding & 0x70 {
        pe::ABSPTR | pe::FUNCREL => 0,
        pe::PCREL => bases.vaddr.wrapping_add(r.pos as u64),
        pe::TEXTREL => bases.textrel,
        pe::DATAREL => bases.datarel,
        pe::ALIGNED => {
            let size = encoded_size(encoding, bases.elf64, Some(r));
            if size == 0 {
                return None;
            }
            let align = (bases.vaddr.wrapping_add(r.pos as u64) as usize) & (size - 1);
            if align != 0 {
                r.pos += size - align;
            }
            0
        }
        _ => return None,
    };
    let value = match encoding & 0x0f {
        pe::UDATA2 => r.uint(2)?,
        pe::SDATA2 => r.sint(2)?,
        pe::UDATA4 => r.uint(4)?,
        pe::SDATA4 => r.sint(4)?,
        pe::UDATA8 | pe::SDATA8 => r.uint(8)?,
        pe::ABSPTR => r.uint(if bases.elf64 { 8 } else { 4 })?,
        pe::ULEB128 => {
            if r.at_end() {
                return None;
            }
            r.uleb()
        }
        pe::SLEB128 => {
            if r.at_end() {
                return None;
            }
            r.sleb()
        }
        _ => return None,
    };
    result = result.wrapping_add(value);
    if encoding & pe::INDIRECT != 0 {
        let off = result.checked_sub(bases.vaddr)?;
        let size = if bases.elf64 { 8 } else { 4 };
        let off = usize::try_from(off).ok().filter(|&o| r.data.len() >= size && o <= r.data.len() - size)?;
        let mut p = Reader::new(r.data, off, r.little_endian);
        result = p.uint(size)?;
    }
    Some(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rd(b: &[u8]) -> Reader<'_> {
        Reader::new(b, 0, true)
    }

    #[test]
    fn leb128_like_libdw() {
        assert_eq!(rd(&[0x02]).uleb(), 2);
        assert_eq!(rd(&[0xe5, 0x8e, 0x26]).uleb(), 624485);
        assert_eq!(rd(&[0x7f]).sleb() as i64, -1);
        assert_eq!(rd(&[0x80, 0x7f]).sleb() as i64, -128);
        assert_eq!(rd(&[0x3f]).sleb() as i64, 63);
        // Nothing left: the maximum value, nothing consumed.
        let mut r = rd(&[]);
        assert_eq!(r.uleb(), u64::MAX);
        assert_eq!(r.pos, 0);
        assert_eq!(r.sleb(), i64::MAX as u64);
        // Unterminated: the maximum value, everything up to the limit consumed.
        let mut r = rd(&[0x80, 0x80]);
        assert_eq!(r.uleb(), u64::MAX);
        assert_eq!(r.pos, 2);
        let b = [0xffu8; 12];
        let mut r = rd(&b);
        assert_eq!(r.uleb(), u64::MAX);
        assert_eq!(r.pos, 10);
        let mut r = rd(&b);
        assert_eq!(r.sleb(), i64::MAX as u64);
        assert_eq!(r.pos, 10);
        // The widest values.
        let max = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(rd(&max).uleb(), u64::MAX);
        let min = [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f];
        assert_eq!(rd(&min).sleb() as i64, i64::MIN);
    }

    #[test]
    fn fixed_size_values_respect_endianness_and_bounds() {
        let b = [0x01, 0x02, 0x03, 0x04, 0xff];
        assert_eq!(rd(&b).uint(4), Some(0x04030201));
        assert_eq!(Reader::new(&b, 0, false).uint(4), Some(0x01020304));
        assert_eq!(Reader::new(&b, 4, true).sint(1), Some(u64::MAX));
        assert_eq!(Reader::new(&b, 3, true).uint(4), None);
        assert_eq!(Reader::new(&b, usize::MAX, true).uint(2), None);
    }

    #[test]
    fn encoded_pointers() {
        let bases = Bases { vaddr: 0x1000, textrel: 0, datarel: 0x5000, elf64: true };
        // pcrel sdata4: field address + value.
        let b = [0, 0, 0, 0, 0xf0, 0xff, 0xff, 0xff];
        let mut r = Reader::new(&b, 4, true);
        assert_eq!(read_encoded(&mut r, pe::PCREL | pe::SDATA4, &bases), Some(0x1000 + 4 - 16));
        assert_eq!(r.pos, 8);
        // datarel sdata4.
        let b = 0x10i32.to_le_bytes();
        assert_eq!(read_encoded(&mut rd(&b), pe::DATAREL | pe::SDATA4, &bases), Some(0x5010));
        // absptr is 8 bytes in ELFCLASS64.
        let b = 0x1234_5678_9abc_def0u64.to_le_bytes();
        assert_eq!(read_encoded(&mut rd(&b), pe::ABSPTR, &bases), Some(0x1234_5678_9abc_def0));
        // Unknown application or format: an error.
        assert_eq!(read_encoded(&mut rd(&b), 0x60 | pe::UDATA4, &bases), None);
        assert_eq!(read_encoded(&mut rd(&b), 0x07, &bases), None);
        // Truncated.
        assert_eq!(read_encoded(&mut rd(&b[..3]), pe::UDATA4, &bases), None);
        assert_eq!(read_encoded(&mut rd(&[]), pe::ULEB128, &bases), None);
        // indirect: the value is the address of a pointer in the data.
        let mut d = vec![0u8; 16];
        d[..8].copy_from_slice(&(0x1008u64).to_le_bytes());
        d[8..].copy_from_slice(&(0xdeadu64).to_le_bytes());
        assert_eq!(read_encoded(&mut rd(&d), pe::INDIRECT | pe::UDATA8, &bases), Some(0xdead));
        // ... and one that points outside it.
        d[..8].copy_from_slice(&(0x1010u64).to_le_bytes());
        assert_eq!(read_encoded(&mut rd(&d), pe::INDIRECT | pe::UDATA8, &bases), None);
        d[..8].copy_from_slice(&(0x10u64).to_le_bytes());
        assert_eq!(read_encoded(&mut rd(&d), pe::INDIRECT | pe::UDATA8, &bases), None);
        assert_eq!(encoded_size(pe::OMIT, true, None), 0);
        assert_eq!(encoded_size(pe::SDATA4, true, None), 4);
        assert_eq!(encoded_size(pe::ABSPTR, false, None), 4);
        assert_eq!(encoded_size(pe::ULEB128, true, Some(&rd(&[0x80, 0x80, 0x01]))), 1);
    }
}
