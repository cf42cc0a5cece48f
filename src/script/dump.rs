//! `-D` / `--dump-raw-trace` and `--dump-unsorted-raw-trace`: perf's
//! record-by-record dump, interleaved with the usual output.
//!
//! Every record is shown when perf processes it (a user record as it is
//! read, a kernel record when it is delivered: in time order with `-D`, in
//! file order with `--dump-unsorted-raw-trace`):
//!
//! ```text
//!                                         <- an empty line
//! 0x4f28@perf.data [0x28]: event: 3      <- offset @ file [size]: type
//! .
//! . ... raw event: size 40 bytes
//! .  0000:  03 00 00 00 00 20 28 00 e2 35 00 00 e2 35 00 00  ..... (..5...5..
//! ...                                     <- 16 bytes a line, then an empty line
//!
//! 748029284965 0x4f28 [0x28]: PERF_RECORD_COMM exec: cwork:13794/13794
//! ```
//!
//! The decoded line starts with the sample's CPU and time (as far as the
//! events sample them; `-1 -1` for a non-sample record when the events have
//! no `sample_id_all`; a user record shows a zeroed sample), then what
//! perf's handler of that record type prints. A sample's line is followed
//! by its callchain entries, and once the sample is resolved (past the
//! `--time` and `-C` filters) by its thread and DSO, then the usual output.

use super::{Script, format};
use crate::machine::{CpuMode, Machine};
use crate::session::{Context, RawEvent, SampleEvent};
use perf_data::attr::sample_type as st;
use perf_data::bytes::until_nul;
use perf_data::record::{Record, kind};
use perf_data::sample::context;

/// The pipe header (magic and size) before a pipe's first record.
const PIPE_HEADER_SIZE: u64 = 16;

impl Script {
    /// perf's `dump_event` and the record handler's own dump.
    pub(super) fn dump_record(&mut self, cx: &mut Context<'_>, ev: &RawEvent<'_>) {
        let Some(file) = self.dump.as_ref().and_then(|names| names.get(ev.part as usize).or(names.first())).cloned() else { return };
        let rec = &ev.record;
        let (t, size) = (rec.header.type_, rec.header.size);
        // perf counts a pipe's offsets from the end of its 16-byte header.
        let offset = if cx.pipe { ev.offset.saturating_sub(PIPE_HEADER_SIZE) } else { ev.offset };
        if matches!(t, kind::HEADER_ATTR | kind::HEADER_FEATURE) && self.dump_features.is_none() {
            // As with `-I`: full_only features are printed whole.
            self.dump_features = Some(super::header::FeatureStream::new(true, super::header::Pmus::system()));
        }
        let x86 = t == kind::SAMPLE && self.is_x86(cx.features);
        let cntr_info = self.brcntr.as_ref().map_or((0, 0), |c| (c.width, c.nr));
        let out = &mut self.buf;
        out.push(b'\n');
        format::hex_alt(out, offset);
        format::text(out, format_args!("@{file} ["));
        format::hex_alt(out, size as u64);
        format::text(out, format_args!("]: event: {t}\n"));
        raw_bytes(out, rec.bytes);
        // evlist__print_tstamp
        let combined = cx.evlist.evsels.iter().fold(0, |a, e| a | e.attr.sample_type);
        if t != kind::SAMPLE && !cx.evlist.sample_id_all() {
            out.extend_from_slice(b"-1 -1 ");
        } else {
            if combined & st::CPU != 0 {
                format::text(out, format_args!("{} ", ev.id.cpu));
            }
            if combined & st::TIME != 0 {
                format::text(out, format_args!("{} ", ev.id.time));
            }
        }
        format::hex_alt(out, offset);
        out.extend_from_slice(b" [");
        format::hex_alt(out, size as u64);
        out.extend_from_slice(b"]: ");
        let (b, e) = (rec.body(), rec.endian);
        match t {
            kind::SAMPLE => {
                if let (Some(s), Some(evsel)) = (ev.sample, ev.evsel) {
                    let attr = &cx.evlist.evsels[evsel].attr;
                    out.extend_from_slice(b"PERF_RECORD_SAMPLE");
                    sample(out, rec, s, attr, x86, cntr_info);
                }
            }
            kind::CALLCHAIN_DEFERRED => {
                out.extend_from_slice(b"PERF_RECORD_CALLCHAIN_DEFERRED");
                let (cookie, nr) = (e.read_u64(b, 0).unwrap_or(0), e.read_u64(b, 8).unwrap_or(0));
                format::text(out, format_args!("(IP, {:#x}): {}/{}: ", rec.header.misc, ev.id.pid, ev.id.tid));
                format::hex_alt(out, cookie);
                format::text(out, format_args!("\n... FP chain: nr:{nr}\n"));
                let held = (b.len().saturating_sub(16) / 8) as u64;
                for i in 0..nr.min(held) {
                    let ip = e.read_u64(b, 16 + i as usize * 8).unwrap_or(0);
                    format::text(out, format_args!("..... {i:2}: {ip:016x}{}\n", context_name(ip)));
                }
            }
            kind::LOST => {
                let (id, lost) = (e.read_u64(b, 0).unwrap_or(0), e.read_u64(b, 8).unwrap_or(0));
                format::text(out, format_args!("PERF_RECORD_LOST: id:{id}: lost:{lost}\n"));
            }
            kind::LOST_SAMPLES => {
                format::text(out, format_args!("PERF_RECORD_LOST_SAMPLES: lost:{}\n", e.read_u64(b, 0).unwrap_or(0)));
            }
            kind::MMAP | kind::MMAP2 | kind::COMM | kind::FORK | kind::EXIT | kind::SWITCH | kind::SWITCH_CPU_WIDE
            | kind::NAMESPACES | kind::CGROUP | kind::KSYMBOL | kind::BPF_EVENT | kind::TEXT_POKE => {
                let trailer = ev.evsel.map_or(0, |i| cx.evlist.evsels[i].attr.id_hdr_size());
                self.record_text(cx, rec, trailer);
            }
            kind::FINISHED_ROUND => {
                // Ordered, perf's handler ends the line; `--show-round-events`
                // prints its own line right after; otherwise there is none.
                out.extend_from_slice(b"PERF_RECORD_FINISHED_ROUND");
                if !self.opts.show_round_events {
                    out.extend_from_slice(if self.dump_unordered { b": unhandled!\n" } else { b"\n" });
                }
            }
            // A pipe's header records: perf's handlers print the attr and
            // the feature (as `--header` would) on the same line, with no
            // newline of their own; a feature perf rejects prints nothing,
            // and tracing data no more than its name.
            kind::HEADER_TRACING_DATA => out.extend_from_slice(b"PERF_RECORD_TRACING_DATA"),
            kind::HEADER_ATTR => {
                out.extend_from_slice(b"PERF_RECORD_ATTR");
                if let (Some(attr), Some(stream)) = (perf_data::attr::Attr::parse(b, e), self.dump_features.as_ref()) {
                    super::header::attr_fprintf(out, &attr, stream.pmus());
                }
            }
            kind::HEADER_FEATURE => {
                out.extend_from_slice(b"PERF_RECORD_FEATURE");
                let mut text = Vec::new();
                if let (Some(stream), Some(bit)) = (self.dump_features.as_mut(), e.read_u64(b, 0))
                    && stream.feature(&mut text, bit, b.get(8..).unwrap_or(&[]), e, cx.evlist).is_ok()
                {
                    out.extend_from_slice(b", ");
                    out.extend_from_slice(&text);
                }
            }
            _ => {
                out.extend_from_slice(b"PERF_RECORD_");
                out.extend_from_slice(kind::name(t).as_bytes());
                user_record(out, rec);
            }
        }
    }

    /// What perf's `machine__resolve` says about a sample that gets that
    /// far: its thread and the DSO of its ip.
    pub(super) fn dump_resolved(&mut self, machine: &mut Machine, ev: &SampleEvent<'_>) {
        if self.dump.is_none() {
            return;
        }
        let s = ev.sample;
        let map = self.find_map(machine, s.tid, CpuMode::from_misc(ev.record.header.misc), s.ip);
        self.buf.extend_from_slice(b" ... thread: ");
        self.buf.extend_from_slice(ev.comm);
        format::text(&mut self.buf, format_args!(":{}\n ...... dso: ", s.tid));
        match map {
            Some(m) => self.buf.extend_from_slice(&machine.dsos.get(m.dso).name),
            None if CpuMode::from_misc(ev.record.header.misc) == CpuMode::Hypervisor => self.buf.extend_from_slice(b"[hypervisor]"),
            None => self.buf.extend_from_slice(b"<not found>"),
        }
        self.buf.push(b'\n');
    }
}

/// perf's `trace_event`: the record's bytes, 16 a line, in hex and as
/// characters.
fn raw_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    format::text(out, format_args!(".\n. ... raw event: size {} bytes\n", bytes.len()));
    for (i, line) in bytes.chunks(16).enumerate() {
        format::text(out, format_args!(".  {:04x}: ", i * 16));
        for b in line {
            format::text(out, format_args!(" {b:02x}"));
        }
        for _ in line.len()..16 {
            out.extend_from_slice(b"   ");
        }
        out.extend_from_slice(b"  ");
        for &b in line {
            out.push(if b.is_ascii_graphic() || b == b' ' { b } else { b'.' });
        }
        for _ in line.len()..16 {
            out.push(b' ');
        }
        out.push(b'\n');
    }
    out.push(b'\n');
}

/// perf's `callchain_context_str`.
fn context_name(ip: u64) -> &'static str {
    match ip {
        context::HV => " (PERF_CONTEXT_HV)",
        context::KERNEL => " (PERF_CONTEXT_KERNEL)",
        context::USER => " (PERF_CONTEXT_USER)",
        context::USER_DEFERRED => " (PERF_CONTEXT_USER_DEFERRED)",
        context::GUEST => " (PERF_CONTEXT_GUEST)",
        context::GUEST_KERNEL => " (PERF_CONTEXT_GUEST_KERNEL)",
        context::GUEST_USER => " (PERF_CONTEXT_GUEST_USER)",
        _ => "",
    }
}

/// perf's `branch_stack__printf` (for branch stacks that are not call
/// stacks): each entry's addresses, cycles, `M`ispredicted, `P`redicted,
/// `A`bort and in-`T`ransaction flags, the reserved bits (from bit 34),
/// type and speculation outcome.
fn branch_stack(out: &mut Vec<u8>, stack: &perf_data::sample::BranchStack<'_>) {
    format::text(out, format_args!("... branch stack: nr:{}\n", stack.len()));
    for (i, e) in stack.iter().enumerate() {
        let fl = e.flags;
        let mark = |on: bool, c: char| if on { c } else { ' ' };
        format::text(
            out,
            format_args!(
                "..... {i:2}: {:016x} -> {:016x} {} cycles {}{}{}{} {:x} {} {}\n",
                e.from,
                e.to,
                fl.cycles(),
                mark(fl.mispred(), 'M'),
                mark(fl.predicted(), 'P'),
                mark(fl.abort(), 'A'),
                mark(fl.in_tx(), 'T'),
                fl.0 >> 34,
                super::branch::branch_type_name(fl),
                super::branch::spec_name(fl).unwrap_or(""),
            ),
        );
    }
}

/// perf's `branch_stack__printf` for an LBR call stack: the first entry's
/// `to`, then every `from` (one more line than entries).
fn branch_callstack(out: &mut Vec<u8>, stack: &perf_data::sample::BranchStack<'_>) {
    format::text(out, format_args!("... branch callstack: nr:{}\n", stack.len() + 1));
    for (i, ip) in callstack_ips(stack).enumerate() {
        format::text(out, format_args!("..... {i:2}: {ip:016x}\n"));
    }
}

/// The frames an LBR call stack gives: the first entry's `to`, then every
/// `from` (none for an empty stack).
fn callstack_ips<'a>(stack: &perf_data::sample::BranchStack<'a>) -> impl Iterator<Item = u64> + 'a {
    stack.iter().take(1).map(|e| e.to).chain(stack.iter().map(|e| e.from))
}

/// perf's `callchain__lbr_callstack_printf`: the callchain as the LBR call
/// stack makes it (the kernel part up to the `PERF_CONTEXT_USER` marker,
/// the first entry's `to`, every `from`), when there is a marker and an
/// entry.
fn lbr_call_chain(out: &mut Vec<u8>, ips: &[u64], stack: &perf_data::sample::BranchStack<'_>) {
    let Some(marker) = ips.iter().position(|&ip| ip == context::USER) else { return };
    if stack.is_empty() {
        return;
    }
    format::text(out, format_args!("... LBR call chain: nr:{}\n", marker + 2 + stack.len()));
    for (i, ip) in ips[..=marker].iter().copied().chain(callstack_ips(stack)).enumerate() {
        format::text(out, format_args!("..... {i:2}: {ip:016x}\n"));
    }
}

/// perf's `dump_sample`, for the sample fields pstitch decodes.
/// `cntr_info` is the counters' width and number (see [`super::brcntr`]).
fn sample(out: &mut Vec<u8>, rec: &Record<'_>, s: &perf_data::sample::Sample<'_>, attr: &perf_data::attr::Attr, x86: bool, cntr_info: (u32, u32)) {
    let sample_type = attr.sample_type;
    let callstack = attr.branch_sample_type & perf_data::attr::branch_sample_type::CALL_STACK != 0;
    format::text(out, format_args!("(IP, {:#x}): {}/{}: ", rec.header.misc, s.pid, s.tid));
    format::hex_alt(out, s.ip);
    format::text(out, format_args!(" period: {} addr: ", s.period));
    format::hex_alt(out, s.addr);
    out.push(b'\n');
    if let Some(chain) = s.callchain {
        let ips: Vec<u64> = chain.iter().collect();
        if callstack && let Some(stack) = &s.branch_stack {
            lbr_call_chain(out, &ips, stack);
        }
        format::text(out, format_args!("... FP chain: nr:{}\n", ips.len()));
        for (i, ip) in ips.iter().enumerate() {
            format::text(out, format_args!("..... {i:2}: {ip:016x}{}\n", context_name(*ip)));
        }
        if ips.len() >= 2 && ips[ips.len() - 2] == context::USER_DEFERRED {
            out.extend_from_slice(b"...... (deferred)\n");
        }
    }
    match &s.branch_stack {
        Some(stack) if callstack => branch_callstack(out, stack),
        Some(stack) => branch_stack(out, stack),
        None => {}
    }
    if let Some(counters) = s.branch_stack.and_then(|b| b.counters) {
        let (width, nr) = cntr_info;
        format::text(out, format_args!("... branch stack counters: nr:{} (counter width: {width} max counter nr:{nr})\n", counters.len()));
        for (i, c) in counters.iter().enumerate() {
            format::text(out, format_args!("..... {i:2}: {c:016x}\n"));
        }
    }
    for (kind, regs) in [("user", &s.user_regs), ("intr", &s.intr_regs)] {
        if let Some(r) = regs
            && r.abi != 0
        {
            let abi = ["none", "32-bit", "64-bit"].get(r.abi as usize).copied().unwrap_or("unknown");
            format::text(out, format_args!("... {kind} regs: mask {:#x} ABI {abi}\n", r.mask));
            for (id, v) in r.iter() {
                format::text(out, format_args!(".... {:<5} 0x{v:016x}\n", super::regs::name(id, x86)));
            }
        }
    }
    if let Some(stack) = s.user_stack {
        // dyn_size, and the size word's place in the record.
        let at = s.user_stack_at + perf_data::record::HEADER_SIZE;
        format::text(out, format_args!("... ustack: size {}, offset {at:#x}\n", stack.len()));
    }
    if sample_type & (st::WEIGHT | st::WEIGHT_STRUCT) != 0 {
        format::text(out, format_args!("... weight: {}", s.weight));
        if sample_type & st::WEIGHT_STRUCT != 0 {
            format::text(out, format_args!(",{:#x},{:#x}", s.ins_lat, s.retire_lat));
        }
        out.push(b'\n');
    }
    if sample_type & st::DATA_SRC != 0 {
        format::text(out, format_args!(" . data_src: 0x{:x}\n", s.data_src));
    }
    if sample_type & st::PHYS_ADDR != 0 {
        format::text(out, format_args!(" .. phys_addr: 0x{:x}\n", s.phys_addr));
    }
    if sample_type & st::DATA_PAGE_SIZE != 0 {
        format::text(out, format_args!(" .. data page size: {}\n", super::page_size_name(s.data_page_size)));
    }
    if sample_type & st::CODE_PAGE_SIZE != 0 {
        format::text(out, format_args!(" .. code page size: {}\n", super::page_size_name(s.code_page_size)));
    }
    if sample_type & st::TRANSACTION != 0 {
        format::text(out, format_args!("... transaction: {:x}\n", s.transaction));
    }
    if let Some(read) = &s.read {
        sample_read(out, read);
    }
}

/// perf's `sample_read__printf`: the counts a sample read (each member's
/// of a group), with their ids (perf reads a group's values as if every
/// one had an id: 0 here where there is none).
fn sample_read(out: &mut Vec<u8>, read: &perf_data::sample::ReadValues<'_>) {
    out.extend_from_slice(b"... sample_read:\n");
    if let Some(t) = read.time_enabled {
        format::text(out, format_args!("...... time enabled {t:016x}\n"));
    }
    if let Some(t) = read.time_running {
        format::text(out, format_args!("...... time running {t:016x}\n"));
    }
    if read.group {
        format::text(out, format_args!(".... group nr {}\n", read.iter().count()));
    }
    for ((id, value), lost) in read.iter().zip(read.lost()) {
        format::text(out, format_args!("..... id {:016x}, value {value:016x}", id.unwrap_or(0)));
        if let Some(lost) = lost {
            format::text(out, format_args!(", lost {lost}"));
        }
        out.push(b'\n');
    }
}

/// What perf prints for the user records of a file (its handlers'
/// dumps); `: unhandled!` where perf script has no handler.
fn user_record(out: &mut Vec<u8>, rec: &Record<'_>) {
    let (b, e) = (rec.body(), rec.endian);
    match rec.header.type_ {
        kind::ID_INDEX => {
            let nr = e.read_u64(b, 0).unwrap_or(0);
            format::text(out, format_args!(" nr: {nr}\n"));
            let held = (b.len().saturating_sub(8) / 32) as u64;
            for i in 0..nr.min(held) {
                let at = 8 + i as usize * 32;
                let v = |k: usize| e.read_u64(b, at + k * 8).unwrap_or(0);
                format::text(out, format_args!(" ... id: {}  idx: {}  cpu: {}  tid: {}\n", v(0), v(1), v(2) as i64, v(3) as i64));
            }
        }
        kind::EVENT_UPDATE => {
            let (ty, id) = (e.read_u64(b, 0).unwrap_or(0), e.read_u64(b, 8).unwrap_or(0));
            format::text(out, format_args!("\n... id:    {id}\n"));
            let payload = b.get(16..).unwrap_or(&[]);
            match ty {
                0 => {
                    out.extend_from_slice(b"... unit:  ");
                    out.extend_from_slice(until_nul(payload));
                    out.push(b'\n');
                }
                1 => format::text(out, format_args!("... scale: {:.6}\n", f64::from_bits(e.read_u64(payload, 0).unwrap_or(0)))),
                2 => {
                    out.extend_from_slice(b"... name:  ");
                    out.extend_from_slice(until_nul(payload));
                    out.push(b'\n');
                }
                3 => {
                    out.extend_from_slice(b"... ");
                    cpu_map(out, payload, e);
                }
                _ => out.extend_from_slice(b"... unknown type\n"),
            }
        }
        kind::THREAD_MAP => {
            let pids = perf_data::record::thread_map_pids(b, e);
            let nr = pids.len();
            format::text(out, format_args!(" nr: {nr} thread{}: ", if nr > 1 { "s" } else { "" }));
            for (i, pid) in pids.iter().enumerate() {
                format::text(out, format_args!("{}{pid}", if i > 0 { ", " } else { "" }));
            }
            out.push(b'\n');
        }
        kind::CPU_MAP => {
            out.extend_from_slice(b": ");
            cpu_map(out, b, e);
        }
        _ => out.extend_from_slice(b": unhandled!\n"),
    }
}

/// perf's `cpu_map__fprintf` of a `perf_record_cpu_map_data`: the CPUs
/// as a list of ranges (`0-3,8`).
fn cpu_map(out: &mut Vec<u8>, data: &[u8], e: perf_data::bytes::Endian) {
    let Some(mut cpus) = perf_data::record::cpu_map_cpus(data, e) else {
        out.extend_from_slice(b"failed to get cpumap from event\n");
        return;
    };
    cpus.sort_unstable();
    cpus.dedup();
    let mut first = true;
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 && cpus[i] >= 0 {
            j += 1;
        }
        let sep = if first { "" } else { "," };
        if j > i {
            format::text(out, format_args!("{sep}{}-{}", cpus[i], cpus[j]));
        } else {
            format::text(out, format_args!("{sep}{}", cpus[i]));
        }
        first = false;
        i = j + 1;
    }
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use perf_data::bytes::Endian;

    fn cpus(data: &[u8]) -> String {
        let mut out = Vec::new();
        cpu_map(&mut out, data, Endian::Little);
        String::from_utf8(out).unwrap()
    }

    /// The three encodings of a CPU map, printed as perf's ranges.
    #[test]
    fn cpu_maps_print_as_ranges() {
        // CPUS: nr 5: 0 1 2 5 7
        assert_eq!(cpus(&[0, 0, 5, 0, 0, 0, 1, 0, 2, 0, 5, 0, 7, 0]), "0-2,5,7\n");
        // MASK of 64-bit words: nr 1, long size 8: bits 0, 1, 3
        assert_eq!(cpus(&[1, 0, 1, 0, 8, 0, 0, 0, 0, 0, 0b1011, 0, 0, 0, 0, 0, 0, 0]), "0-1,3\n");
        // RANGE: any_cpu, 2..4
        assert_eq!(cpus(&[2, 0, 1, 0, 2, 0, 4, 0]), "-1,2-4\n");
        assert_eq!(cpus(&[9, 0]), "failed to get cpumap from event\n");
    }

    /// perf's `trace_event` layout: 16 bytes a line, the last one padded.
    #[test]
    fn raw_bytes_are_dumped_16_a_line() {
        let mut out = Vec::new();
        raw_bytes(&mut out, b"D\0\0\0\0\0\x08\0abcdefgh~\x7f");
        let want = ".\n. ... raw event: size 18 bytes\n\
                    .  0000:  44 00 00 00 00 00 08 00 61 62 63 64 65 66 67 68  D.......abcdefgh\n\
                    .  0010:  7e 7f                                            ~.              \n\n";
        assert_eq!(String::from_utf8(out).unwrap(), want);
    }
}
