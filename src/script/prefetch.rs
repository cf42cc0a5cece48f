//! Symbol loads requested ahead of need.
//!
//! The reading side loads the kernel's symbols itself, at the first kernel
//! address it meets, and nothing else runs meanwhile: the loader thread
//! gets its first request (a large library's symbol table, often the
//! longest load of all) only after that. So before the first records go
//! out, and until [`LOOKAHEAD_SAMPLES`] samples were seen, the reading side
//! looks at the queued samples' user-space callchain entries and has the
//! loader start on the DSOs many of them fall in.
//!
//! ```text
//!  queued records ──> MMAPs (not applied yet) + the machine's maps
//!                 ──> user entries per DSO ──> the busiest ones: LoadRequest
//!  later, the first line in such a DSO ──> Loading(dso, request number)
//! ```
//!
//! A load depends only on its [`LoadRequest`] (name, kind, build-id), so
//! an answer obtained early is the answer obtained late; a DSO whose
//! request differs by then is simply requested again. Nothing printed
//! depends on the lookahead. With sample filters it is off: filtered
//! samples load nothing.

use std::collections::HashMap;

use super::fields::{f, output_type};
use super::output::LoadRequest;
use super::{Script, context};
use crate::machine::{CpuMode, DsoKind, dsos};
use crate::perf_data::attr::sample_type as st;
use crate::perf_data::record::{MmapRecord, Record, RecordHeader, kind};
use crate::perf_data::sample::Sample;
use crate::session::Context;

/// Samples looked at ahead in all.
pub(super) const LOOKAHEAD_SAMPLES: u32 = 20_000;
/// User-space entries in one DSO that make it worth loading ahead.
const WORTH: u32 = 64;
/// DSOs requested ahead at each look.
const MAX_AHEAD: usize = 8;

/// A user-space MMAP still in the queue.
struct QueuedMap<'a> {
    start: u64,
    end: u64,
    filename: &'a [u8],
    build_id: Option<&'a [u8]>,
}

impl Script {
    /// See the module doc; `records` as [`crate::session::Tool::lookahead`]
    /// gives them.
    pub(super) fn prefetch_symbols(&mut self, ctx: &Context<'_>, records: &mut dyn Iterator<Item = (usize, &[u8])>) {
        if self.lookahead_left == 0 || !self.filters.is_empty() || !self.use_callchain {
            return;
        }
        let records: Vec<(usize, Record<'_>)> = records
            .filter_map(|(evsel, bytes)| {
                let header = RecordHeader::parse(bytes, ctx.endian)?;
                Some((evsel, Record { header, bytes: bytes.get(..header.size as usize)?, endian: ctx.endian }))
            })
            .collect();
        // By pid, sorted by start.
        let mut queued: HashMap<i32, Vec<QueuedMap<'_>>> = HashMap::new();
        for (evsel, r) in &records {
            if !matches!(r.header.type_, kind::MMAP | kind::MMAP2) || CpuMode::from_misc(r.header.misc) != CpuMode::User {
                continue;
            }
            let trailer = ctx.evlist.evsels.get(*evsel).map_or(0, |e| e.attr.id_hdr_size());
            if let Some(m) = MmapRecord::parse(r, trailer) {
                let map = QueuedMap { start: m.start, end: m.start.wrapping_add(m.len), filename: m.filename, build_id: m.build_id };
                queued.entry(m.pid).or_default().push(map);
            }
        }
        for maps in queued.values_mut() {
            maps.sort_by_key(|m| m.start);
        }
        let mut hits: HashMap<LoadRequest, u32> = HashMap::new();
        for (evsel, r) in &records {
            if self.lookahead_left == 0 {
                break;
            }
            let Some(attr) = ctx.evlist.evsels.get(*evsel).map(|e| &e.attr) else { continue };
            if r.header.type_ != kind::SAMPLE || !attr.samples(st::CALLCHAIN) || self.opts.fields.types[output_type(attr)].fields & f::IP == 0 {
                continue;
            }
            let Ok(s) = Sample::parse(r.body(), attr, ctx.endian) else { continue };
            self.lookahead_left -= 1;
            let Some(chain) = s.callchain else { continue };
            let mut user = false;
            for ip in chain.iter() {
                if ip >= context::MAX {
                    user = ip == context::USER;
                } else if user && let Some(request) = self.request_for(&queued, s.pid, s.tid, ip) {
                    *hits.entry(request).or_default() += 1;
                }
            }
        }
        let mut worth: Vec<(u32, LoadRequest)> = hits.into_iter().filter(|&(_, n)| n >= WORTH).map(|(r, n)| (n, r)).collect();
        worth.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.long_name.cmp(&b.1.long_name)));
        for (_, request) in worth.into_iter().take(MAX_AHEAD) {
            self.out.prefetch(request);
        }
    }

    /// What the loader would be asked for the DSO that user-space `ip` of
    /// `pid`/`tid` falls in, if it is a file whose symbols are not loaded
    /// or asked for yet.
    fn request_for(&self, queued: &HashMap<i32, Vec<QueuedMap<'_>>>, pid: i32, tid: i32, ip: u64) -> Option<LoadRequest> {
        let in_queue = queued.get(&pid).and_then(|maps| {
            let i = maps.partition_point(|m| m.start <= ip).checked_sub(1)?;
            let m = &maps[i];
            (ip < m.end).then_some(m)
        });
        let request = match in_queue {
            Some(m) => {
                let long_name = String::from_utf8_lossy(m.filename).into_owned();
                if let Some(id) = self.machine.dsos.find(&long_name)
                    && self.shipped.get(id as usize).copied().unwrap_or(false)
                {
                    return None;
                }
                LoadRequest { kind: dsos::classify(&long_name), long_name, build_id: m.build_id.map(<[u8]>::to_vec) }
            }
            None => {
                let map = self.machine.find_map(tid, CpuMode::User, ip)?;
                if self.shipped.get(map.dso as usize).copied().unwrap_or(false) {
                    return None;
                }
                LoadRequest::of(self.machine.dsos.get(map.dso))
            }
        };
        (request.kind == DsoKind::File && !self.out.is_prefetched(&request)).then_some(request)
    }
}
