//! Side-band records as `--show-task-events`, `--show-mmap-events` and
//! `--show-lost-events` print them: the usual line start (taken from the record's `sample_id`),
//! then perf's `PERF_RECORD_*` text.
//!
//! ```text
//! cwork   13794   748.030657: PERF_RECORD_FORK(13794:13796):(13794:13794)
//! cw-sort 13796   748.030829: PERF_RECORD_COMM: cw-sort:13794/13796
//! swapper     0     0.000000: PERF_RECORD_MMAP -1/0: [0xffffffff81000000(0x1209988) @ 0xffffffff81000000]: x [kernel.kallsyms]_text
//! fe      13825   751.578445: PERF_RECORD_LOST lost 17
//! fe      13825   751.578445: PERF_RECORD_MMAP2 13825/13825: [0x5627aadac000(0x1000) @ 0x1000 fe:00 10010724 3606345327]: r-xp /tmp/...
//! ```


use super::{Script, format};
use crate::session::{Context, Event};
use perf_data::record::{CommRecord, LostRecord, MmapRecord, TaskRecord, kind, misc};

const PROT_READ: u32 = 1;
const PROT_WRITE: u32 = 2;
const PROT_EXEC: u32 = 4;
const MAP_SHARED: u32 = 1;

impl Script {
    /// perf script's `print_event_with_time`: `pid`/`tid` name the thread
    /// whose comm is printed; `time` stands in for the sample_id time when
    /// the event has none.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn print_side_band(&mut self, cx: &mut Context<'_>, ev: &Event<'_>, pid: i32, tid: i32, time: u64) {
        let (evsel, rec, id) = (ev.evsel, &ev.record, &ev.id);
        let trailer = cx.evlist.evsels[evsel].attr.id_hdr_size();
        let attr = &cx.evlist.evsels[evsel].attr;
        let mut s = *id;
        if !attr.sample_id_all() {
            s.cpu = 0;
            s.time = time;
            s.pid = pid;
            s.tid = tid;
        }
        if cx.filter.skip_cpu(s.cpu) {
            return;
        }
        let comm = if tid != -1 { cx.machine.findnew_thread(pid, tid).comm() } else { ":-1".into() };
        let ty = super::fields::output_type(attr);
        let fields = self.opts.fields.types[ty].fields;
        let unpadded = fields & super::f::IP != 0
            && attr.samples(perf_data::attr::sample_type::CALLCHAIN)
            && self.use_callchain;
        self.print_start(fields, &comm, s.pid, s.tid, s.cpu, s.time, rec.header.misc, rec.header.type_, unpadded);
        self.buf.extend_from_slice(b"PERF_RECORD_");
        self.buf.extend_from_slice(kind::name(rec.header.type_).as_bytes());
        let out = &mut self.buf;
        match rec.header.type_ {
            kind::COMM => {
                if let Some(c) = CommRecord::parse(rec, trailer) {
                    out.extend_from_slice(if c.exec { b" exec: " } else { b": " });
                    out.extend_from_slice(c.comm);
                    out.push(b':');
                    format::int(out, c.pid as i64, 0, false);
                    out.push(b'/');
                    format::int(out, c.tid as i64, 0, false);
                }
            }
            kind::FORK | kind::EXIT => {
                if let Some(t) = TaskRecord::parse(rec) {
                    format::text(out, format_args!("({}:{}):({}:{})", t.pid, t.tid, t.ppid, t.ptid));
                }
            }
            kind::MMAP | kind::MMAP2 => {
                if let Some(m) = MmapRecord::parse(rec, trailer) {
                    format::text(out, format_args!(" {}/{}: [", m.pid, m.tid));
                    format::hex_alt(out, m.start);
                    out.push(b'(');
                    format::hex_alt(out, m.len);
                    out.extend_from_slice(b") @ ");
                    format::hex_alt(out, m.pgoff);
                    if rec.header.type_ == kind::MMAP {
                        out.extend_from_slice(if rec.header.misc & misc::MMAP_DATA != 0 { b"]: r " } else { b"]: x " });
                    } else {
                        match m.build_id {
                            Some(bid) => {
                                out.extend_from_slice(b" <");
                                for b in bid {
                                    format::text(out, format_args!("{b:02x}"));
                                }
                                out.push(b'>');
                            }
                            None => {
                                let body = rec.body();
                                let e = rec.endian;
                                let maj = e.read_u32(body, 32).unwrap_or(0);
                                let min = e.read_u32(body, 36).unwrap_or(0);
                                let ino = e.read_u64(body, 40).unwrap_or(0);
                                let generation = e.read_u64(body, 48).unwrap_or(0);
                                format::text(out, format_args!(" {maj:02x}:{min:02x} {ino} {generation}"));
                            }
                        }
                        out.extend_from_slice(b"]: ");
                        out.push(if m.prot & PROT_READ != 0 { b'r' } else { b'-' });
                        out.push(if m.prot & PROT_WRITE != 0 { b'w' } else { b'-' });
                        out.push(if m.prot & PROT_EXEC != 0 { b'x' } else { b'-' });
                        out.push(if m.flags & MAP_SHARED != 0 { b's' } else { b'p' });
                        out.push(b' ');
                    }
                    out.extend_from_slice(m.filename);
                }
            }
            kind::LOST => {
                if let Some(l) = LostRecord::parse(rec) {
                    out.extend_from_slice(b" lost ");
                    format::uint(out, l.lost, 0);
                }
            }
            _ => {}
        }
        self.buf.push(b'\n');
    }
}
