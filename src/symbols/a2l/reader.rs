//! A bounds-checked byte reader with binutils' forgiving semantics: reading
//! past the end yields zeros and leaves the cursor at the end.

pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    end: usize,
    le: bool,
}

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8], little_endian: bool) -> Reader<'a> {
        Reader { data, pos: 0, end: data.len(), le: little_endian }
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn seek(&mut self, pos: usize) {
        self.pos = pos.min(self.end);
    }

    pub fn set_end(&mut self, end: usize) {
        self.end = end.min(self.data.len());
        self.pos = self.pos.min(self.end);
    }

    pub fn remaining(&self) -> usize {
        self.end - self.pos
    }

    pub fn skip(&mut self, n: usize) {
        self.pos = self.pos.saturating_add(n).min(self.end);
    }

    fn bytes<const N: usize>(&mut self) -> Option<[u8; N]> {
        if self.end - self.pos < N {
            self.pos = self.end;
            return None;
        }
        let b: [u8; N] = self.data[self.pos..self.pos + N].try_into().ok()?;
        self.pos += N;
        Some(b)
    }

    pub fn u8(&mut self) -> u8 {
        self.bytes::<1>().map(|b| b[0]).unwrap_or(0)
    }

    pub fn u16(&mut self) -> u16 {
        self.bytes::<2>().map(|b| if self.le { u16::from_le_bytes(b) } else { u16::from_be_bytes(b) }).unwrap_or(0)
    }

    pub fn u24(&mut self) -> u32 {
        let (a, b, c) = (self.u8() as u32, self.u8() as u32, self.u8() as u32);
        if self.le { a | b << 8 | c << 16 } else { a << 16 | b << 8 | c }
    }

    pub fn u32(&mut self) -> u32 {
        self.bytes::<4>().map(|b| if self.le { u32::from_le_bytes(b) } else { u32::from_be_bytes(b) }).unwrap_or(0)
    }

    pub fn u64(&mut self) -> u64 {
        self.bytes::<8>().map(|b| if self.le { u64::from_le_bytes(b) } else { u64::from_be_bytes(b) }).unwrap_or(0)
    }

    pub fn addr(&mut self, size: u8) -> u64 {
        match size {
            8 => self.u64(),
            4 => self.u32() as u64,
            2 => self.u16() as u64,
            _ => {
                self.pos = self.end;
                0
            }
        }
    }

    pub fn uleb(&mut self) -> u64 {
        let (mut result, mut shift) = (0u64, 0u32);
        while self.pos < self.end {
            let b = self.data[self.pos];
            self.pos += 1;
            if shift < 64 {
                result |= ((b & 0x7f) as u64) << shift;
            }
            shift += 7;
            if b & 0x80 == 0 {
                break;
            }
        }
        result
    }

    pub fn sleb(&mut self) -> i64 {
        let (mut result, mut shift) = (0i64, 0u32);
        let mut byte = 0u8;
        while self.pos < self.end {
            byte = self.data[self.pos];
            self.pos += 1;
            if shift < 64 {
                result |= ((byte & 0x7f) as i64) << shift;
            }
            shift += 7;
            if byte & 0x80 == 0 {
                break;
            }
        }
        if shift < 64 && byte & 0x40 != 0 {
            result |= -1i64 << shift;
        }
        result
    }

    /// binutils' `read_string`: a NUL-terminated string, `None` when empty
    /// or unterminated (the cursor moves past what was scanned either way).
    pub fn cstr_nonempty(&mut self) -> Option<&'a [u8]> {
        let s = self.cstr_any()?;
        (!s.is_empty()).then_some(s)
    }

    /// A NUL-terminated string (possibly empty); `None` if unterminated.
    pub fn cstr_any(&mut self) -> Option<&'a [u8]> {
        let rest = &self.data[self.pos..self.end];
        match rest.iter().position(|&b| b == 0) {
            Some(n) => {
                self.pos += n + 1;
                Some(&rest[..n])
            }
            None => {
                self.pos = self.end;
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leb_and_bounds() {
        let mut r = Reader::new(&[0xe5, 0x8e, 0x26, 0x7f, 1], true);
        assert_eq!(r.uleb(), 624485);
        assert_eq!(r.sleb(), -1);
        assert_eq!(r.u32(), 0);
        assert_eq!(r.remaining(), 0);
        let mut r = Reader::new(b"ab\0\0x", true);
        assert_eq!(r.cstr_nonempty(), Some(&b"ab"[..]));
        assert_eq!(r.cstr_nonempty(), None);
        assert_eq!(r.cstr_any(), None);
    }
}
