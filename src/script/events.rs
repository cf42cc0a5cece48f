//! Side-band records as `--show-task-events`, `--show-mmap-events`,
//! `--show-lost-events`, `--show-switch-events`, `--show-namespace-events`,
//! `--show-cgroup-events`, `--show-bpf-events` and `--show-text-poke-events`
//! print them: the usual line start (taken from the record's `sample_id`),
//! then perf's `PERF_RECORD_*` text (`perf_event__fprintf`).
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
use perf_data::bytes::until_nul;
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
        let comm = if tid != -1 { cx.machine.findnew_thread(pid, tid).comm() } else { b":-1"[..].into() };
        let ty = super::fields::output_type(attr);
        let fields = self.opts.fields.types[ty].fields;
        let unpadded = fields & super::f::IP != 0
            && attr.samples(perf_data::attr::sample_type::CALLCHAIN)
            && self.use_callchain;
        self.print_start(fields, &comm, s.pid, s.tid, s.cpu, s.time, rec.header.misc, rec.header.type_, unpadded);
        self.record_text(cx, rec, trailer);
    }

    /// perf's `perf_event__fprintf`: `PERF_RECORD_<name>` and what the
    /// record says, to the end of the line.
    pub(super) fn record_text(&mut self, cx: &mut Context<'_>, rec: &perf_data::record::Record<'_>, trailer: usize) {
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
            kind::SWITCH | kind::SWITCH_CPU_WIDE => switch(out, rec),
            kind::NAMESPACES => return namespaces(out, rec),
            kind::CGROUP => {
                let b = rec.body();
                let id = rec.endian.read_u64(b, 0).unwrap_or(0);
                format::text(out, format_args!(" cgroup: {id} "));
                out.extend_from_slice(until_nul(b.get(8..).unwrap_or(&[])));
            }
            kind::KSYMBOL => {
                let (b, e) = (rec.body(), rec.endian);
                let (addr, len) = (e.read_u64(b, 0).unwrap_or(0), e.read_u32(b, 8).unwrap_or(0));
                let (ty, flags) = (e.read_u16(b, 12).unwrap_or(0), e.read_u16(b, 14).unwrap_or(0));
                format::text(out, format_args!(" addr {addr:x} len {len} type {ty} flags {flags:#x} name "));
                out.extend_from_slice(until_nul(b.get(16..).unwrap_or(&[])));
            }
            kind::BPF_EVENT => {
                let (b, e) = (rec.body(), rec.endian);
                let (ty, flags, id) = (e.read_u16(b, 0).unwrap_or(0), e.read_u16(b, 2).unwrap_or(0), e.read_u32(b, 4).unwrap_or(0));
                format::text(out, format_args!(" type {ty}, flags {flags}, id {id}"));
            }
            kind::TEXT_POKE => return self.text_poke(cx, rec),
            _ => {}
        }
        self.buf.push(b'\n');
    }

    /// perf's `perf_event__fprintf_text_poke`: the address, the kernel
    /// symbol it is in, the lengths, then the old and the new bytes, 16 a
    /// line.
    fn text_poke(&mut self, cx: &mut Context<'_>, rec: &perf_data::record::Record<'_>) {
        let (b, e) = (rec.body(), rec.endian);
        let addr = e.read_u64(b, 0).unwrap_or(0);
        let (old_len, new_len) = (e.read_u16(b, 8).unwrap_or(0) as usize, e.read_u16(b, 10).unwrap_or(0) as usize);
        format::text(&mut self.buf, format_args!(" {addr:x} "));
        if let Some(map) = cx.machine.kernel_maps().find(addr).copied()
            && let Some(sym) = self.symbolizer.find_symbol(&cx.machine.dsos, &map, addr)
        {
            let rel = map.map_ip(addr);
            let off = if rel < sym.end { rel - sym.start } else { rel.wrapping_sub(map.start).wrapping_sub(sym.start) };
            self.buf.extend_from_slice(sym.name.as_bytes());
            format::text(&mut self.buf, format_args!("+{off:#x}"));
        }
        format::text(&mut self.buf, format_args!(" old len {old_len} new len {new_len}\n"));
        // The bytes as the record holds them (never past its end).
        let bytes = b.get(12..).unwrap_or(&[]);
        let old = &bytes[..old_len.min(bytes.len())];
        let new = bytes.get(old_len..).map_or(&[][..], |n| &n[..new_len.min(n.len())]);
        for (what, data) in [("Old", old), ("New", new)] {
            for line in data.chunks(16) {
                format::text(&mut self.buf, format_args!("            {what} bytes:"));
                for byte in line {
                    format::text(&mut self.buf, format_args!(" {byte:02x}"));
                }
                self.buf.push(b'\n');
            }
        }
    }
}

/// perf's `perf_event__fprintf_switch`.
fn switch(out: &mut Vec<u8>, rec: &perf_data::record::Record<'_>) {
    let m = rec.header.misc;
    let switched_out = m & misc::SWITCH_OUT != 0;
    let in_out = match (switched_out, m & misc::SWITCH_OUT_PREEMPT != 0) {
        (false, _) => "IN         ",
        (true, false) => "OUT        ",
        (true, true) => "OUT preempt",
    };
    if rec.header.type_ == kind::SWITCH {
        format::text(out, format_args!(" {in_out}"));
        return;
    }
    let b = rec.body();
    let (pid, tid) = (rec.endian.read_u32(b, 0).unwrap_or(0) as i32, rec.endian.read_u32(b, 4).unwrap_or(0) as i32);
    let next_prev = if switched_out { "next" } else { "prev" };
    format::text(out, format_args!(" {in_out}  {next_prev} pid/tid: {pid:5}/{tid:<5}"));
}

/// perf's `perf_event__fprintf_namespaces` (it ends its own lines).
fn namespaces(out: &mut Vec<u8>, rec: &perf_data::record::Record<'_>) {
    const NAMES: [&str; 7] = ["net", "uts", "ipc", "pid", "user", "mnt", "cgroup"];
    let (b, e) = (rec.body(), rec.endian);
    let (pid, tid) = (e.read_u32(b, 0).unwrap_or(0) as i32, e.read_u32(b, 4).unwrap_or(0) as i32);
    let nr = e.read_u64(b, 8).unwrap_or(0);
    format::text(out, format_args!(" {pid}/{tid} - nr_namespaces: {}\n\t\t[", nr as u32));
    // Only the entries the record holds.
    let held = (b.len().saturating_sub(16) / 16) as u64;
    for idx in 0..nr.min(held) {
        if idx != 0 && idx % 4 == 0 {
            out.extend_from_slice(b"\n\t\t ");
        }
        let at = 16 + idx as usize * 16;
        let (dev, ino) = (e.read_u64(b, at).unwrap_or(0), e.read_u64(b, at + 8).unwrap_or(0));
        let name = NAMES.get(idx as usize).copied().unwrap_or("UNKNOWN");
        let end = if idx + 1 != nr { ", " } else { "]\n" };
        format::text(out, format_args!("{idx}/{name}: {dev}/{ino:#x}{end}"));
    }
}
