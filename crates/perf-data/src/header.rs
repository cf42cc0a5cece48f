//! The perf.data file header (file mode) and the pipe header.
//!
//! ```text
//! file mode                                   pipe mode (perf record -o -)
//! +--------------------------+ 0              +------------------+ 0
//! | u64 magic "PERFILE2"     |                | u64 magic        |
//! | u64 size (104)           |                | u64 size (16)    |
//! | u64 attr_size            |                +------------------+ 16
//! | section attrs   {off,sz} |---+            | records ...      |
//! | section data    {off,sz} |-+ |            | (HEADER_ATTR,    |
//! | section types   {off,sz} | | |            |  HEADER_FEATURE, |
//! | u64 features[4] (bitmap) | | |            |  samples, ...)   |
//! +--------------------------+ | |
//! | attrs: { attr, ids {off,sz} } ...
//! | id arrays ...                |
//! +------------------------------+ data.offset
//! | records ...                  |
//! +------------------------------+ data.offset + data.size
//! | one {off,sz} per set feature bit, in bit order
//! | feature payloads ...
//! ```
//! The magic is the string `PERFILE2`; read as a number in the wrong byte
//! order it comes out byte-swapped, which is how a cross-endian file is
//! recognised.

use super::bytes::{Cursor, Endian};
use super::error::{Error, Result};

/// "PERFILE2" read as a little-endian u64.
pub const MAGIC: u64 = 0x3245_4c49_4652_4550;
pub const FILE_HEADER_SIZE: usize = 104;
pub const PIPE_HEADER_SIZE: usize = 16;

/// A `{offset, size}` pair pointing into the file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Section {
    pub offset: u64,
    pub size: u64,
}

impl Section {
    pub(crate) fn read(c: &mut Cursor<'_>) -> Option<Section> {
        Some(Section { offset: c.u64().ok()?, size: c.u64().ok()? })
    }

    /// The byte range, checked against the file length.
    pub fn range(&self, file_len: usize) -> Option<std::ops::Range<usize>> {
        let start = usize::try_from(self.offset).ok()?;
        let end = start.checked_add(usize::try_from(self.size).ok()?)?;
        (end <= file_len).then_some(start..end)
    }
}

/// What the first 8 bytes say about a file.
pub fn detect_magic(bytes: &[u8]) -> Option<Endian> {
    let m = Endian::Little.read_u64(bytes, 0)?;
    if m == MAGIC {
        Some(Endian::Little)
    } else if m == MAGIC.swap_bytes() {
        Some(Endian::Big)
    } else {
        None
    }
}

/// The file-mode header.
#[derive(Debug, Clone)]
pub struct FileHeader {
    pub endian: Endian,
    pub header_size: u64,
    pub attr_size: u64,
    pub attrs: Section,
    pub data: Section,
    pub event_types: Section,
    pub features: [u64; 4],
}

impl FileHeader {
    pub fn parse(bytes: &[u8]) -> Result<FileHeader> {
        let endian = detect_magic(bytes).ok_or_else(|| Error::at(0, "not a perf.data file (bad magic)"))?;
        if bytes.len() < FILE_HEADER_SIZE {
            return Err(Error::at(0, format!("file header truncated ({} of {FILE_HEADER_SIZE} bytes)", bytes.len())));
        }
        let mut c = Cursor::new(&bytes[8..FILE_HEADER_SIZE], endian);
        let header_size = c.u64().unwrap_or(0);
        if header_size == PIPE_HEADER_SIZE as u64 {
            return Err(Error::at(8, "pipe-mode header in a file-mode read"));
        }
        let attr_size = c.u64().unwrap_or(0);
        let attrs = Section::read(&mut c).unwrap_or_default();
        let data = Section::read(&mut c).unwrap_or_default();
        let event_types = Section::read(&mut c).unwrap_or_default();
        let mut features = [0u64; 4];
        for f in &mut features {
            *f = c.u64().unwrap_or(0);
        }
        Ok(FileHeader { endian, header_size, attr_size, attrs, data, event_types, features })
    }

    pub fn has_feature(&self, bit: u32) -> bool {
        bit < 256 && self.features[(bit / 64) as usize] & (1 << (bit % 64)) != 0
    }

    /// Set feature bits in ascending order.
    pub fn feature_bits(&self) -> impl Iterator<Item = u32> + '_ {
        (0..256u32).filter(|&b| self.has_feature(b))
    }
}

/// True if the first 16 bytes are a pipe-mode header.
pub fn is_pipe_header(bytes: &[u8]) -> Option<Endian> {
    let endian = detect_magic(bytes)?;
    (endian.read_u64(bytes, 8)? == PIPE_HEADER_SIZE as u64).then_some(endian)
}
