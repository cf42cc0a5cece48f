//! A held sample's record as an ordinary perf.data holds it.
//!
//! ```text
//! recorded (deferred)             delivered by the session       written
//! [KERNEL, k.., USER_DEFERRED,    merged: [KERNEL, k..,          [KERNEL, k.., USER, u..]
//!  cookie]                          USER_DEFERRED, u..]
//!                                 unmerged: as recorded          [KERNEL, k..]
//! [USER_DEFERRED, cookie]         merged: [USER_DEFERRED, u..]   [USER, u..]
//!                                 unmerged: as recorded          []  (no callchain entries)
//! ```
//! That is what a kernel without deferred callchains writes (`KERNEL`
//! part, then `USER` and the user part), so every reader of perf.data
//! understands it. The callchain is replaced in place; the fields after it
//! (raw data, branch stack, registers, user stack) follow unchanged, and
//! the record's size is set anew.

use perf_data::bytes::{Endian, U64Array};
use perf_data::record::HEADER_SIZE;
use perf_data::sample::context;
use perf_data::writer::Put;

use crate::session::{Callchain, SampleEvent};

/// What became of a held sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stitched {
    /// Its user ips were merged in.
    Merged,
    /// No user callchain came: the kernel part only.
    KernelOnly,
    /// Merged, but the record would pass 64 KiB: the user part was cut
    /// to fit.
    Truncated,
}

/// The record to write for a sample the session held for its deferred
/// callchain (`ev.held` is set), appended to `out`, and what became of
/// it. `None` (and nothing appended) when the record is not what the
/// session says it is (no callchain, or one that does not lie in the
/// record): it is written as it was.
pub fn held_sample(ev: &SampleEvent<'_>, endian: Endian, out: &mut Vec<u8>) -> Option<Stitched> {
    let recorded = ev.sample.callchain?;
    let n = recorded.len();
    if n < 2 {
        return None;
    }
    let bytes = ev.record.bytes;
    let (start, end) = callchain_span(bytes, recorded)?;
    // The entries, the marker made USER: a merged chain holds the
    // original entries up to the marker, then the user ips.
    let merged = match ev.callchain {
        Some(Callchain::Merged(m)) if m.len() >= n - 1 && m[n - 2] == context::USER_DEFERRED => Some(m),
        _ => None,
    };
    let mut how = if merged.is_some() { Stitched::Merged } else { Stitched::KernelOnly };
    let mut len = merged.map_or(n - 2, <[u64]>::len);
    // A record's size is 16 bits: cut the user part to fit.
    let rest = bytes.len() - (end - start) + 8;
    let room = (u16::MAX as usize & !7).checked_sub(rest)? / 8;
    if len > room {
        len = room.max(n - 1);
        how = Stitched::Truncated;
    }
    let size = u16::try_from(rest + len * 8).ok()?;
    let p = Put(endian);
    out.reserve(size as usize);
    let at = out.len();
    out.extend_from_slice(&bytes[..start]);
    p.set_u16(out, at + HEADER_SIZE - 2, size);
    p.u64(out, len as u64);
    match merged {
        Some(m) => {
            p.u64s(out, &m[..n - 2]);
            p.u64(out, context::USER);
            p.u64s(out, &m[n - 1..len.max(n - 1)]);
        }
        None => recorded.iter().take(len).for_each(|e| p.u64(out, e)),
    }
    out.extend_from_slice(&bytes[end..]);
    Some(how)
}

/// Where the callchain (its `nr` and entries) lies in the record.
fn callchain_span(record: &[u8], chain: U64Array<'_>) -> Option<(usize, usize)> {
    let entries = chain.as_bytes();
    let at = (entries.as_ptr() as usize).checked_sub(record.as_ptr() as usize)?;
    let start = at.checked_sub(8)?;
    let end = at.checked_add(entries.len())?;
    (start >= HEADER_SIZE && end <= record.len()).then_some((start, end))
}
