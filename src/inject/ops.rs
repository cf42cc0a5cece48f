//! What the inject tool hands the writing side, in batches.
//!
//! The reading side (the session and the tool) decides what is written
//! and where; the writing side puts held samples back in their places
//! (reorder.rs) and writes (output.rs). The two meet in [`Ops`]: the
//! bytes of the records end to end, and what to do with them, in order:
//!
//! ```text
//! ops:   Push(n)      Hole(seq)   Fill(seq, n)       Push(n) ...  Header(attr, feature, build-id)
//! data:  |records..|              |stitched sample|  |records..|
//! ```
//! Consecutive records for the stream are one `Push`, so the writing side
//! copies them at once. A batch goes over when it holds [`BATCH_BYTES`] or
//! [`BATCH_OPS`]; the engine's worker (`engine::worker`) applies batches in
//! the order they were made, on a thread of its own or (single-threaded)
//! at once, so the output is the same either way.

use std::io;

use perf_data::writer::AttrEntry;

use super::output::Sink;
use super::reorder::Reorder;
use crate::engine::worker::Batch;

/// A batch goes over past this many bytes of records...
const BATCH_BYTES: usize = 256 << 10;
/// ... or this many operations.
const BATCH_OPS: usize = 8 << 10;

/// A batch of operations for the writing side.
pub struct Ops {
    data: Vec<u8>,
    ops: Vec<Op>,
}

enum Op {
    /// The next bytes of `data`: records for the stream, in order.
    Push(u32),
    /// A place for the held sample numbered so.
    Hole(u64),
    /// The next bytes of `data`: the record of a held sample.
    Fill { seq: u64, len: u32 },
    /// A change to the output file's header.
    Header(Box<HeaderOp>),
}

/// What a file's header gets from records met on the way (a stream gets
/// those records as they are).
pub enum HeaderOp {
    Attr(AttrEntry),
    Feature(u32, Vec<u8>),
    BuildId(Vec<u8>),
}

impl Default for Ops {
    /// With room for a full batch and its last record, so that it does
    /// not grow by copying (and its memory does not depend on where
    /// batches end).
    fn default() -> Ops {
        Ops { data: Vec::with_capacity(BATCH_BYTES + (64 << 10)), ops: Vec::with_capacity(BATCH_OPS) }
    }
}

impl Batch for Ops {
    fn clear(&mut self) {
        self.data.clear();
        self.ops.clear();
    }
}

impl Ops {
    /// Time to hand the batch over.
    #[inline]
    pub fn full(&self) -> bool {
        self.data.len() >= BATCH_BYTES || self.ops.len() >= BATCH_OPS
    }

    /// Appends a record (or any bytes) to the stream.
    #[inline]
    pub fn push(&mut self, bytes: &[u8]) {
        self.data.extend_from_slice(bytes);
        let n = bytes.len() as u32;
        match self.ops.last_mut() {
            Some(Op::Push(len)) if len.checked_add(n).is_some() => *len += n,
            _ => self.ops.push(Op::Push(n)),
        }
    }

    pub fn hole(&mut self, seq: u64) {
        self.ops.push(Op::Hole(seq));
    }

    /// The record for hole `seq`, as `write` appends it to the batch.
    pub fn fill_with<T>(&mut self, seq: u64, write: impl FnOnce(&mut Vec<u8>) -> T) -> T {
        let start = self.data.len();
        let r = write(&mut self.data);
        self.ops.push(Op::Fill { seq, len: (self.data.len() - start) as u32 });
        r
    }

    pub fn header(&mut self, op: HeaderOp) {
        self.ops.push(Op::Header(Box::new(op)));
    }
}

/// The writing side: the output, with held samples put in place.
pub struct Writing {
    pub out: Reorder<Sink>,
}

impl Writing {
    /// Carries out a batch (`engine::worker`'s apply).
    pub fn apply(&mut self, batch: &mut Ops) -> io::Result<()> {
        let mut at = 0usize;
        let data = &batch.data;
        for op in batch.ops.drain(..) {
            match op {
                Op::Push(n) => {
                    let end = at + n as usize;
                    self.out.push(&data[at..end])?;
                    at = end;
                }
                Op::Hole(seq) => self.out.hole(seq),
                Op::Fill { seq, len } => {
                    let end = at + len as usize;
                    self.out.fill(seq, &data[at..end])?;
                    at = end;
                }
                Op::Header(h) => {
                    if let Sink::File(f) = self.out.get_mut() {
                        match *h {
                            HeaderOp::Attr(a) => f.add_attr(a),
                            HeaderOp::Feature(bit, payload) => f.set_feature(bit, payload),
                            HeaderOp::BuildId(entry) => f.add_build_id(&entry),
                        }
                    }
                }
            }
        }
        Ok(())
    }
}
