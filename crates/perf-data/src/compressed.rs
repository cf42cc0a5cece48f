//! Records compressed by `perf record -z`.
//!
//! ```text
//! COMPRESSED  (81): { header; u8 data[header.size - 8] }
//! COMPRESSED2 (83): { header; u64 data_size; u8 data[data_size]; pad to 8 }
//! ```
//! All chunks of a file form ONE zstd stream: perf record compresses with a
//! single context and flushes (not ends) the frame after every chunk, so
//! each chunk decodes completely on arrival but only with the decoder state
//! left by the chunks before it. The decoded bytes are ordinary records; a
//! record may straddle two chunks, so the tail of one chunk's output is
//! carried over to the next.

use zstd::stream::raw::{Decoder, InBuffer, Operation, OutBuffer};

use super::bytes::Endian;
use super::record::{HEADER_SIZE, RecordHeader, kind};

/// The zstd payload of a COMPRESSED/COMPRESSED2 record, or `None` if the
/// record is too short for what it claims.
pub fn payload(rec_type: u32, body: &[u8], endian: Endian) -> Option<&[u8]> {
    match rec_type {
        kind::COMPRESSED => Some(body),
        kind::COMPRESSED2 => {
            let size = usize::try_from(endian.read_u64(body, 0)?).ok()?;
            body.get(8..8usize.checked_add(size)?)
        }
        _ => None,
    }
}

/// About how much decoded data [`Decompressor::decompress_blocks`] hands
/// out at a time.
pub const BLOCK: usize = 4 << 20;

/// Stream state across the compressed chunks of one input.
pub struct Decompressor {
    decoder: Decoder<'static>,
    /// Decoded bytes not yet handed out as whole records.
    carry: Vec<u8>,
    /// Upper bound on what one chunk may decode to; guards against
    /// decompression bombs.
    max_chunk_output: usize,
}

/// Why a chunk could not be decoded.
#[derive(Debug)]
pub struct DecompressError(pub String);

impl Decompressor {
    /// A decoder whose chunks (with what is carried over from the chunk
    /// before) may decode to at most `max_chunk_output` bytes — perf's
    /// buffer for them is HEADER_COMPRESSED's mmap_len — so that a small
    /// hostile chunk cannot decode to gigabytes.
    pub fn new(max_chunk_output: usize) -> Result<Decompressor, DecompressError> {
        Ok(Decompressor {
            decoder: Decoder::new().map_err(|e| DecompressError(e.to_string()))?,
            carry: Vec::new(),
            max_chunk_output,
        })
    }

    /// Decodes one chunk and hands the whole records it holds to `emit`,
    /// in blocks of about [`BLOCK`] bytes as they are decoded (with their
    /// offset in the chunk's decoded data), so that a chunk that decodes to
    /// hundreds of megabytes never is in memory at once. A partial record
    /// at the end is kept for the next chunk. `Ok(Err(e))`: `emit` failed.
    pub fn decompress_blocks<E>(
        &mut self,
        data: &[u8],
        endian: Endian,
        mut emit: impl FnMut(&[u8], u64) -> Result<(), E>,
    ) -> Result<Result<(), E>, DecompressError> {
        let mut out = std::mem::take(&mut self.carry);
        let mut input = InBuffer::around(data);
        let mut buf = vec![0u8; 256 * 1024];
        // Bytes of this chunk's output handed out or held so far.
        let mut total = out.len();
        let mut emitted = 0u64;
        loop {
            let before = input.pos();
            let mut output = OutBuffer::around(&mut buf[..]);
            self.decoder.run(&mut input, &mut output).map_err(|e| DecompressError(e.to_string()))?;
            let n = output.pos();
            total += n;
            if total > self.max_chunk_output {
                return Err(DecompressError(format!(
                    "chunk decompresses to more than {} bytes (the most perf allows for this file)",
                    self.max_chunk_output
                )));
            }
            out.extend_from_slice(&buf[..n]);
            let done = (input.pos() == data.len() && n < buf.len()) || (n == 0 && input.pos() == before);
            if out.len() >= BLOCK || done {
                let whole = whole_records_len(&out, endian);
                if whole > 0 {
                    if let Err(e) = emit(&out[..whole], emitted) {
                        return Ok(Err(e));
                    }
                    emitted += whole as u64;
                    out.drain(..whole);
                }
            }
            // Done when all input is consumed and the decoder has nothing
            // more to flush (it filled less than the whole buffer), or when
            // it makes no progress at all.
            if done {
                break;
            }
        }
        self.carry = out;
        Ok(Ok(()))
    }

    /// Decodes one chunk and returns the whole records now available (any
    /// partial record at the end is kept for the next chunk).
    pub fn decompress(&mut self, data: &[u8], endian: Endian) -> Result<Vec<u8>, DecompressError> {
        let mut out = Vec::new();
        let Ok(()) = self.decompress_blocks(data, endian, |block, _| -> Result<(), std::convert::Infallible> {
            out.extend_from_slice(block);
            Ok(())
        })?;
        Ok(out)
    }

    /// Bytes of a record left incomplete at the end of the stream.
    pub fn leftover(&self) -> usize {
        self.carry.len()
    }
}

/// Length of the longest prefix of `buf` made of whole records. A record
/// header with size < 8 ends the prefix too (the caller reports it).
fn whole_records_len(buf: &[u8], endian: Endian) -> usize {
    let mut off = 0;
    while let Some(h) = buf.get(off..).and_then(|b| RecordHeader::parse(b, endian)) {
        let size = h.size as usize;
        if size < HEADER_SIZE {
            // Hand the malformed record to the reader so it can say where.
            return buf.len();
        }
        if off + size > buf.len() {
            break;
        }
        off += size;
    }
    off
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(t: u32, body_words: u16) -> Vec<u8> {
        let size = 8 + body_words * 8;
        let mut v = Vec::new();
        v.extend(t.to_le_bytes());
        v.extend(0u16.to_le_bytes());
        v.extend(size.to_le_bytes());
        v.extend(std::iter::repeat_n(0xab, body_words as usize * 8));
        v
    }

    #[test]
    fn records_straddling_chunks_are_carried_over() {
        let mut plain = Vec::new();
        for i in 0..100 {
            plain.extend(record(9, i % 7));
        }
        // One stream, flushed at an arbitrary point inside a record.
        let cut = plain.len() / 2 + 3;
        let mut enc = zstd::stream::raw::Encoder::new(1).unwrap();
        let mut chunks = Vec::new();
        for part in [&plain[..cut], &plain[cut..]] {
            let mut out = vec![0u8; 1 << 16];
            let mut ob = OutBuffer::around(&mut out[..]);
            let mut ib = InBuffer::around(part);
            enc.run(&mut ib, &mut ob).unwrap();
            enc.flush(&mut ob).unwrap();
            let n = ob.pos();
            chunks.push(out[..n].to_vec());
        }
        let mut d = Decompressor::new(1 << 20).unwrap();
        let a = d.decompress(&chunks[0], Endian::Little).unwrap();
        assert!(a.len() <= cut && a.len().is_multiple_of(8));
        let b = d.decompress(&chunks[1], Endian::Little).unwrap();
        assert_eq!([a, b].concat(), plain);
        assert_eq!(d.leftover(), 0);
    }

    #[test]
    fn a_large_chunk_comes_in_blocks_of_whole_records_with_their_offsets() {
        let mut plain = Vec::new();
        for i in 0..40_000u32 {
            plain.extend(record(9 + i % 3, (i % 200) as u16));
        }
        assert!(plain.len() > 3 * BLOCK);
        let packed = zstd::bulk::compress(&plain, 1).unwrap();
        let mut d = Decompressor::new(64 << 20).unwrap();
        let mut got = Vec::new();
        let mut blocks = 0;
        let Ok(()) = d
            .decompress_blocks(&packed, Endian::Little, |block, at| -> Result<(), std::convert::Infallible> {
                assert_eq!(at as usize, got.len());
                assert_eq!(whole_records_len(block, Endian::Little), block.len());
                assert!(block.len() < BLOCK + (256 << 10));
                got.extend_from_slice(block);
                blocks += 1;
                Ok(())
            })
            .unwrap();
        assert!(blocks > 3);
        assert_eq!(got, plain);
        assert_eq!(d.leftover(), 0);
    }

    #[test]
    fn output_is_bounded() {
        let plain = vec![0u8; 4 << 20];
        let packed = zstd::bulk::compress(&plain, 3).unwrap();
        assert!(packed.len() < 4096);
        let mut d = Decompressor::new(1 << 20).unwrap();
        assert!(d.decompress(&packed, Endian::Little).unwrap_err().0.contains("more than"));
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let mut d = Decompressor::new(1 << 20).unwrap();
        assert!(d.decompress(&[0xff; 64], Endian::Little).is_err());
    }
}
