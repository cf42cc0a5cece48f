//! Symbol loads requested ahead of need.
//!
//! The reading side loads the kernel's symbols itself, at the first kernel
//! address it meets, and nothing else runs meanwhile: the loader thread
//! gets its first request (a large library's symbol table, often the
//! longest load of all) only after that. So before the first records go
//! out, and until [`LOOKAHEAD_SAMPLES`] samples were seen, the reading side
//! looks at the user-space callchain entries of the samples queued and, in
//! a mapped file, of those after them (the first rounds of a recording
//! hold a few hundred samples: too few to tell), and has the loader start
//! on the DSOs many of them fall in.
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

use crate::symbols::loader::LoadRequest;
use super::{Script, context};
use crate::fasthash::FastMap;
use crate::machine::{CpuMode, DsoId, DsoKind, Machine, dsos};
use perf_data::record::{MmapRecord, Record, RecordHeader, kind};
use perf_data::sample::Sample;
use crate::session::{Context, Tool};

/// Samples looked at ahead in all.
pub(super) const LOOKAHEAD_SAMPLES: u32 = 20_000;
/// User-space entries in one DSO that make it worth loading ahead.
const WORTH: u32 = 64;
/// DSOs requested ahead at each look.
const MAX_AHEAD: usize = 8;

/// A user-space MMAP still in the queue, and the DSO it would load.
struct QueuedMap {
    start: u64,
    end: u64,
    candidate: u32,
}

/// The DSOs the looked-at entries fall in, each counted once however many
/// maps and entries name it (the per-entry work is a map lookup and an
/// increment: the lookahead runs while the loader waits for it).
#[derive(Default)]
struct Candidates<'a> {
    /// The request to make, `None` where none is worth making (not a
    /// file, loaded or asked for already), and the entries seen in it.
    list: Vec<(Option<LoadRequest>, u32)>,
    by_file: FastMap<(&'a [u8], Option<&'a [u8]>), u32>,
    by_dso: FastMap<DsoId, u32>,
}

impl<'a> Candidates<'a> {
    fn add(&mut self, request: Option<LoadRequest>) -> u32 {
        self.list.push((request, 0));
        self.list.len() as u32 - 1
    }
}

impl Script {
    /// See the module doc; `records` as [`crate::session::Tool::lookahead`]
    /// gives them.
    pub(super) fn prefetch_symbols(&mut self, ctx: &Context<'_>, records: &mut dyn Iterator<Item = (usize, &[u8])>) {
        // Only samples whose callchain is printed count towards the budget
        // (`shows_callchain` includes `use_callchain`): without one, every
        // flush would collect its records for nothing.
        if self.lookahead_left == 0 || !ctx.filter.is_empty() || !ctx.evlist.evsels.iter().any(|e| self.shows_callchain(&e.attr)) {
            return;
        }
        let records: Vec<(usize, Record<'_>)> = records
            .filter_map(|(evsel, bytes)| {
                let header = RecordHeader::parse(bytes, ctx.endian)?;
                Some((evsel, Record { header, bytes: bytes.get(..header.size as usize)?, endian: ctx.endian }))
            })
            .collect();
        let mut candidates = Candidates::default();
        // By pid, sorted by start.
        let mut queued: FastMap<i32, Vec<QueuedMap>> = FastMap::default();
        for (evsel, r) in &records {
            if !matches!(r.header.type_, kind::MMAP | kind::MMAP2) || CpuMode::from_misc(r.header.misc) != CpuMode::User {
                continue;
            }
            let trailer = ctx.evlist.evsels.get(*evsel).map_or(0, |e| e.attr.id_hdr_size());
            if let Some(m) = MmapRecord::parse(r, trailer) {
                let candidate = match candidates.by_file.get(&(m.filename, m.build_id)) {
                    Some(&c) => c,
                    None => {
                        let c = candidates.add(self.queued_request(ctx.machine, m.filename, m.build_id));
                        candidates.by_file.insert((m.filename, m.build_id), c);
                        c
                    }
                };
                queued.entry(m.pid).or_default().push(QueuedMap { start: m.start, end: m.start.wrapping_add(m.len), candidate });
            }
        }
        for maps in queued.values_mut() {
            maps.sort_by_key(|m| m.start);
        }
        for (evsel, r) in &records {
            if self.lookahead_left == 0 {
                break;
            }
            let Some(attr) = ctx.evlist.evsels.get(*evsel).map(|e| &e.attr) else { continue };
            if r.header.type_ != kind::SAMPLE || !self.shows_callchain(attr) {
                continue;
            }
            let Ok(s) = Sample::parse(r.body(), attr, ctx.endian) else { continue };
            self.lookahead_left -= 1;
            let Some(chain) = s.callchain else { continue };
            let mut user = false;
            for ip in chain.iter() {
                if ip >= context::MAX {
                    user = ip == context::USER;
                } else if user && let Some(c) = self.candidate_for(ctx.machine, &mut candidates, &queued, s.pid, s.tid, ip) {
                    candidates.list[c as usize].1 += 1;
                }
            }
        }
        // A file may be a candidate twice: as a queued MMAP and as a map
        // the machine has.
        let mut hits: std::collections::HashMap<LoadRequest, u32> = std::collections::HashMap::new();
        for (request, n) in candidates.list {
            if let Some(r) = request {
                *hits.entry(r).or_default() += n;
            }
        }
        let mut worth: Vec<(u32, LoadRequest)> = hits.into_iter().filter(|&(_, n)| n >= WORTH).map(|(r, n)| (n, r)).collect();
        worth.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.long_name.cmp(&b.1.long_name)));
        for (_, request) in worth.into_iter().take(MAX_AHEAD) {
            self.out.prefetch(request);
        }
    }

    /// Which candidate the DSO that user-space `ip` of `pid`/`tid` falls
    /// in is: a map still queued, else the thread's map now.
    fn candidate_for<'a>(&self, machine: &Machine, candidates: &mut Candidates<'a>, queued: &FastMap<i32, Vec<QueuedMap>>, pid: i32, tid: i32, ip: u64) -> Option<u32> {
        let in_queue = queued.get(&pid).and_then(|maps| {
            let i = maps.partition_point(|m| m.start <= ip).checked_sub(1)?;
            let m = &maps[i];
            (ip < m.end).then_some(m.candidate)
        });
        if in_queue.is_some() {
            return in_queue;
        }
        let dso = machine.find_map(tid, CpuMode::User, ip)?.dso;
        if let Some(&c) = candidates.by_dso.get(&dso) {
            return Some(c);
        }
        let request = (!self.shipped.get(dso as usize).copied().unwrap_or(false))
            .then(|| LoadRequest::of(machine.dsos.get(dso)))
            .filter(|r| self.worth_asking(r));
        let c = candidates.add(request);
        candidates.by_dso.insert(dso, c);
        Some(c)
    }

    /// The request for a file a queued MMAP maps, if its symbols are not
    /// loaded or asked for yet.
    fn queued_request(&self, machine: &Machine, filename: &[u8], build_id: Option<&[u8]>) -> Option<LoadRequest> {
        if let Some(id) = machine.dsos.find(filename)
            && self.shipped.get(id as usize).copied().unwrap_or(false)
        {
            return None;
        }
        let request = LoadRequest { kind: dsos::classify(filename), long_name: filename.into(), build_id: build_id.map(<[u8]>::to_vec) };
        self.worth_asking(&request).then_some(request)
    }

    fn worth_asking(&self, request: &LoadRequest) -> bool {
        request.kind == DsoKind::File && !self.out.is_prefetched(request)
    }
}
