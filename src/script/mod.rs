//! `perf script` output: the per-sample line and its callchain, printed
//! exactly as perf 7.2 prints them.
//!
//! ```text
//! comm  pid/tid [cpu] time: period event: ip sym+off (dso)        <- no callchain
//! comm  pid/tid [cpu] time: period event:                         <- with callchain
//! \t<ip> sym+off (dso)                                             one line per frame
//! \t<ip> inlined_fn+off (inlined)                                  (inline levels first)
//! <blank line>
//! ```

pub mod fields;
pub mod format;

use std::io::Write;
use std::rc::Rc;

use crate::machine::{CpuMode, Machine, Map};
use crate::perf_data::attr::{Attr, event_type, sample_type as st};
use crate::perf_data::bytes::U64Array;
use crate::perf_data::evlist::Evlist;
use crate::perf_data::record::{CommRecord, MmapRecord, TaskRecord, kind};
use crate::perf_data::sample::Sample;
use crate::perf_data::{Error, Result};
use crate::session::{Context, Event, Tool};
use crate::symbols::{Symbol, Symbolizer};

use fields::{IpOpts, OutputFields, f, output_type};

/// Callchain context markers (`PERF_CONTEXT_*`).
pub mod context {
    pub const HV: u64 = -32i64 as u64;
    pub const KERNEL: u64 = -128i64 as u64;
    pub const USER: u64 = -512i64 as u64;
    pub const USER_DEFERRED: u64 = -640i64 as u64;
    pub const GUEST: u64 = -2048i64 as u64;
    pub const GUEST_KERNEL: u64 = -2176i64 as u64;
    pub const GUEST_USER: u64 = -2560i64 as u64;
    /// Values at or above this are markers, not addresses.
    pub const MAX: u64 = -4095i64 as u64;
}

/// perf's default `--max-stack` (`kernel.perf_event_max_stack`).
pub const DEFAULT_MAX_STACK: usize = 127;

/// Options that shape the output.
#[derive(Debug, Clone)]
pub struct ScriptOptions {
    pub fields: OutputFields,
    pub nanosecs: bool,
    /// `-G` turns callchains off.
    pub hide_call_graph: bool,
    pub max_stack: usize,
}

impl Default for ScriptOptions {
    fn default() -> Self {
        ScriptOptions { fields: OutputFields::default(), nanosecs: false, hide_call_graph: false, max_stack: DEFAULT_MAX_STACK }
    }
}

/// One resolved callchain line.
#[derive(Debug, Clone)]
struct Frame {
    ip: u64,
    map: Option<Map>,
    sym: Option<Symbol>,
    inlined: bool,
    /// An inline-list entry's own `file:line` (perf's `node->srcline`).
    srcline: Option<Rc<str>>,
}

/// The `perf script` tool: keeps the machine current and prints samples.
pub struct Script<W: Write> {
    opts: ScriptOptions,
    pub machine: Machine,
    pub symbolizer: Symbolizer,
    out: W,
    buf: Vec<u8>,
    use_callchain: bool,
    /// Per output type: fields were checked against an event of that type.
    checked: [bool; fields::NR_TYPES],
    ip_opts: [IpOpts; fields::NR_TYPES],
    name_width: Option<usize>,
    frames: Vec<Frame>,
}

const FLUSH_AT: usize = 1 << 20;

impl<W: Write> Script<W> {
    pub fn new(opts: ScriptOptions, symbolizer: Symbolizer, out: W) -> Script<W> {
        let use_callchain = !opts.hide_call_graph;
        Script {
            opts,
            machine: Machine::new(),
            symbolizer,
            out,
            buf: Vec::with_capacity(FLUSH_AT + 64 * 1024),
            use_callchain,
            checked: [false; fields::NR_TYPES],
            ip_opts: [IpOpts::default(); fields::NR_TYPES],
            name_width: None,
            frames: Vec::new(),
        }
    }

    /// perf's `perf_session__check_output_opt`, for file mode: check each
    /// output type's fields against its first (non-dummy) event.
    pub fn check_output(&mut self, evlist: &Evlist) -> std::result::Result<(), fields::FieldError> {
        for ty in 0..fields::NR_TYPES {
            let first = evlist.evsels.iter().find(|e| !is_dummy(&e.attr) && output_type(&e.attr) == ty);
            let t = self.opts.fields.types[ty];
            let Some(ev) = first else {
                if t.user_set && !t.wildcard_set && ty != fields::TYPE_SYNTH {
                    return Err(fields::FieldError(format!(
                        "{} events do not exist. Remove corresponding -F option to proceed.",
                        fields::type_name(ty)
                    )));
                }
                continue;
            };
            if t.fields != 0 {
                self.opts.fields.check_attr(&ev.attr, &ev.name(), false)?;
            }
            let t = &mut self.opts.fields.types[ty];
            if t.fields & f::DSOFF != 0 {
                t.fields |= f::DSO;
            }
            self.ip_opts[ty] = IpOpts::from_fields(t.fields);
            self.checked[ty] = true;
        }
        if !self.opts.hide_call_graph && !evlist.is_empty() {
            self.use_callchain = evlist.evsels.iter().any(|e| e.attr.samples(st::CALLCHAIN));
        }
        // Tracepoints with callchains print symbols unless -F said otherwise.
        if self.use_callchain && !self.opts.fields.types[fields::TYPE_TRACE].user_set {
            let has = evlist.evsels.iter().any(|e| e.attr.type_ == event_type::TRACEPOINT && e.attr.samples(st::CALLCHAIN));
            if has {
                let t = &mut self.opts.fields.types[fields::TYPE_TRACE];
                t.fields |= f::IP | f::SYM | f::SYMOFFSET | f::DSO;
                self.ip_opts[fields::TYPE_TRACE] = IpOpts::from_fields(t.fields);
            }
        }
        Ok(())
    }

    /// Writes out what is buffered.
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.write_all(&self.buf)?;
        self.buf.clear();
        self.out.flush()
    }

    fn maybe_flush(&mut self) -> Result<()> {
        if self.buf.len() >= FLUSH_AT {
            self.out.write_all(&self.buf).map_err(Error::io)?;
            self.buf.clear();
        }
        Ok(())
    }

    fn name_width(&mut self, evlist: &Evlist) -> usize {
        *self.name_width.get_or_insert_with(|| evlist.max_name_len())
    }

    /// Prints one sample.
    fn print_sample(&mut self, evlist: &Evlist, evsel: usize, misc: u16, s: &Sample<'_>) -> Result<()> {
        let ev = &evlist.evsels[evsel];
        let attr = &ev.attr;
        let ty = output_type(attr);
        let fields = self.opts.fields.types[ty].fields;
        if fields == 0 {
            return Ok(());
        }
        let ip_opts = self.ip_opts[ty];
        let comm = self.machine.findnew_thread(s.pid, s.tid).comm();
        let with_callchain = self.use_callchain && attr.samples(st::CALLCHAIN);
        self.print_start(fields, &comm, s, misc, with_callchain && fields & f::IP != 0);

        if fields & f::PERIOD != 0 {
            format::uint(&mut self.buf, s.period, 10);
            self.buf.push(b' ');
        }
        if fields & f::EVNAME != 0 {
            let width = self.name_width(evlist);
            format::pad_left(&mut self.buf, ev.name().as_bytes(), width);
            self.buf.extend_from_slice(b": ");
        }
        if fields & f::ADDR != 0 {
            format::hex(&mut self.buf, s.addr, 16);
        }
        if fields & f::WEIGHT != 0 {
            format::uint(&mut self.buf, s.weight, 16);
        }
        if fields & f::IP != 0 {
            let mode = CpuMode::from_misc(misc);
            let resolved = match (with_callchain, s.callchain) {
                (true, Some(chain)) => self.resolve_callchain(s.tid, chain),
                _ => false,
            };
            if resolved {
                self.buf.push(b'\n');
                self.print_frames(ip_opts);
            } else {
                self.buf.push(b' ');
                self.print_ip_line(s.tid, mode, s.ip, ip_opts);
            }
        }
        if fields & f::PHYS_ADDR != 0 {
            format::hex(&mut self.buf, s.phys_addr, 16);
        }
        if fields & f::DATA_PAGE_SIZE != 0 {
            self.buf.push(b' ');
            self.buf.extend_from_slice(page_size_name(s.data_page_size).as_bytes());
        }
        if fields & f::CODE_PAGE_SIZE != 0 {
            self.buf.push(b' ');
            self.buf.extend_from_slice(page_size_name(s.code_page_size).as_bytes());
        }
        self.buf.push(b'\n');
        self.maybe_flush()
    }

    /// perf's `perf_sample__fprintf_start`: comm, pid/tid, cpu, misc, time.
    fn print_start(&mut self, fields: u64, comm: &str, s: &Sample<'_>, misc: u16, comm_unpadded: bool) {
        let out = &mut self.buf;
        if fields & f::COMM != 0 {
            if comm_unpadded {
                out.extend_from_slice(comm.as_bytes());
            } else {
                format::pad_left(out, comm.as_bytes(), 16);
            }
            out.push(b' ');
        }
        let (pid, tid) = (fields & f::PID != 0, fields & f::TID != 0);
        if pid && tid {
            format::int(out, s.pid as i64, 7, false);
            out.push(b'/');
            format::int(out, s.tid as i64, 7, true);
            out.push(b' ');
        } else if pid {
            format::int(out, s.pid as i64, 7, false);
            out.push(b' ');
        } else if tid {
            format::int(out, s.tid as i64, 7, false);
            out.push(b' ');
        }
        if fields & f::CPU != 0 {
            out.push(b'[');
            let cpu = s.cpu as i32 as i64;
            if cpu < 0 {
                format::int(out, cpu, 3, false);
            } else {
                format::uint_zero(out, cpu as u64, 3);
            }
            out.extend_from_slice(b"] ");
        }
        if fields & f::MISC != 0 {
            let mut n = 0;
            let mode = misc & crate::perf_data::record::misc::CPUMODE_MASK;
            for (m, c) in [(1u16, b'K'), (2, b'U'), (3, b'H'), (4, b'G'), (5, b'g')] {
                // perf tests `(misc & M) == M`, so e.g. HYPERVISOR (3) also
                // matches KERNEL (1) and USER (2).
                if mode & m == m {
                    out.push(c);
                    n += 1;
                }
            }
            for _ in n..6 {
                out.push(b' ');
            }
        }
        if fields & f::TIME != 0 {
            let secs = s.time / 1_000_000_000;
            let nsecs = s.time % 1_000_000_000;
            if self.opts.nanosecs {
                format::uint(out, secs, 5);
                out.push(b'.');
                format::uint_zero(out, nsecs, 9);
            } else {
                let mut t = Vec::with_capacity(24);
                format::uint(&mut t, secs, 0);
                t.push(b'.');
                format::uint_zero(&mut t, nsecs / 1000, 6);
                format::pad_left(out, &t, 12);
            }
            out.extend_from_slice(b": ");
        }
    }

    /// perf's `thread__resolve_callchain_sample` (callee order, no LBR):
    /// context markers switch the address space; an unknown marker discards
    /// the whole chain (then perf prints the sample's ip on one line).
    fn resolve_callchain(&mut self, tid: i32, chain: U64Array<'_>) -> bool {
        self.frames.clear();
        let mut mode = CpuMode::User;
        let mut entries = 0;
        for ip in chain.iter() {
            if entries >= self.opts.max_stack {
                break;
            }
            if ip >= context::MAX {
                mode = match ip {
                    context::HV => CpuMode::Hypervisor,
                    context::KERNEL => CpuMode::Kernel,
                    context::USER | context::USER_DEFERRED => CpuMode::User,
                    _ => {
                        self.frames.clear();
                        return false;
                    }
                };
                continue;
            }
            entries += 1;
            self.push_frames(tid, mode, ip);
        }
        true
    }

    /// Adds the line(s) for one callchain address: the inline chain when
    /// perf would show one, else the symbol.
    fn push_frames(&mut self, tid: i32, mode: CpuMode, ip: u64) {
        let map = self.find_map(tid, mode, ip);
        let sym = map.as_ref().and_then(|m| self.symbolizer.find_symbol(&self.machine.dsos, m, ip));
        if self.symbolizer.config.inline {
            if let (Some(m), Some(s)) = (map.as_ref(), sym.as_ref()) {
                let inlines = self.symbolizer.inlines(&self.machine.dsos, m, ip, s);
                if !inlines.is_empty() {
                    for e in inlines.iter() {
                        let sym = Symbol { name: e.name.clone(), start: s.start, end: s.end };
                        self.frames.push(Frame { ip, map: Some(*m), sym: Some(sym), inlined: e.inlined, srcline: Some(e.srcline.clone()) });
                    }
                    return;
                }
            }
        }
        self.frames.push(Frame { ip, map, sym, inlined: false, srcline: None });
    }

    /// perf's `thread__find_map`: a kernel map is loaded when first used,
    /// which resizes it to its symbols.
    fn find_map(&mut self, tid: i32, mode: CpuMode, ip: u64) -> Option<Map> {
        let map = self.machine.find_map(tid, mode, ip)?;
        if self.machine.kernel_map_unloaded(&map) {
            let range = self.symbolizer.kernel_map_range(&self.machine.dsos, map.dso);
            return Some(self.machine.fixup_kernel_map(&map, range));
        }
        Some(map)
    }

    /// perf's `sample__fprintf_callchain`.
    fn print_frames(&mut self, opts: IpOpts) {
        let frames = std::mem::take(&mut self.frames);
        for fr in &frames {
            let addr = fr.map.map(|m| m.map_ip(fr.ip)).unwrap_or(0);
            if opts.ip {
                self.buf.push(b'\t');
                format::hex(&mut self.buf, fr.ip, 16);
            }
            if opts.sym {
                self.buf.push(b' ');
                self.symname(fr.sym.as_ref(), fr.map.as_ref(), addr, opts.symoff);
            }
            if opts.dso && !fr.inlined {
                self.dsoname(fr.map.as_ref(), opts.dsoff, addr);
            }
            if opts.srcline {
                match &fr.srcline {
                    Some(line) => {
                        self.buf.extend_from_slice(b"\n  ");
                        self.buf.extend_from_slice(line.as_bytes());
                    }
                    None => self.srcline(fr.map.as_ref(), fr.ip, None),
                }
            }
            if fr.inlined {
                self.buf.extend_from_slice(b" (inlined)");
            }
            self.buf.push(b'\n');
        }
        self.frames = frames;
    }

    /// perf's `sample__fprintf_sym` without a callchain: the sample ip.
    fn print_ip_line(&mut self, tid: i32, mode: CpuMode, ip: u64, opts: IpOpts) {
        let map = self.find_map(tid, mode, ip);
        let sym = map.as_ref().and_then(|m| self.symbolizer.find_symbol(&self.machine.dsos, m, ip));
        let addr = map.map(|m| m.map_ip(ip)).unwrap_or(ip);
        if opts.ip {
            format::hex(&mut self.buf, ip, 16);
        }
        if opts.sym {
            self.buf.push(b' ');
            self.symname(sym.as_ref(), map.as_ref(), addr, opts.symoff);
        }
        if opts.dso {
            self.dsoname(map.as_ref(), opts.dsoff, addr);
        }
        if opts.srcline {
            self.srcline(map.as_ref(), ip, sym.as_ref());
        }
    }

    /// perf's `__symbol__fprintf_symname_offs`.
    fn symname(&mut self, sym: Option<&Symbol>, map: Option<&Map>, addr: u64, offsets: bool) {
        match sym {
            Some(s) => {
                self.buf.extend_from_slice(s.name.as_bytes());
                if offsets {
                    let off = if addr < s.end {
                        addr.wrapping_sub(s.start)
                    } else {
                        addr.wrapping_sub(map.map(|m| m.start).unwrap_or(0)).wrapping_sub(s.start)
                    };
                    self.buf.extend_from_slice(b"+0x");
                    format::hex(&mut self.buf, off, 0);
                }
            }
            None => self.buf.extend_from_slice(b"[unknown]"),
        }
    }

    /// perf's `map__fprintf_dsoname_dsoff`: ` (name)` or ` (name+0xoff)`.
    fn dsoname(&mut self, map: Option<&Map>, dsoff: bool, addr: u64) {
        self.buf.extend_from_slice(b" (");
        match map {
            Some(m) => {
                let dso = self.machine.dsos.get(m.dso);
                self.buf.extend_from_slice(dso.name.as_bytes());
                if dsoff && self.symbolizer.is_object_file(&self.machine.dsos, m.dso) {
                    self.buf.extend_from_slice(b"+0x");
                    format::hex(&mut self.buf, addr, 0);
                }
            }
            None => self.buf.extend_from_slice(b"[unknown]"),
        }
        self.buf.push(b')');
    }

    /// perf's `map__fprintf_srcline` with the `"\n  "` prefix.
    fn srcline(&mut self, map: Option<&Map>, ip: u64, sym: Option<&Symbol>) {
        if let Some(m) = map {
            if let Some(line) = self.symbolizer.srcline(&self.machine.dsos, m, ip, sym) {
                self.buf.extend_from_slice(b"\n  ");
                self.buf.extend_from_slice(line.as_bytes());
            }
        }
    }
}

/// perf's `get_page_size_name`.
fn page_size_name(size: u64) -> String {
    if size == 0 {
        return "N/A".to_string();
    }
    let units = ["B", "K", "M", "G", "T", "P", "E"];
    let mut s = size;
    let mut i = 0;
    while s >= 1024 && s % 1024 == 0 && i + 1 < units.len() {
        s /= 1024;
        i += 1;
    }
    format!("{s}{}", units[i])
}

/// perf's `evsel__is_dummy_event`.
fn is_dummy(attr: &Attr) -> bool {
    attr.type_ == event_type::SOFTWARE && attr.config == 9
}

impl<W: Write> Tool for Script<W> {
    fn event(&mut self, ctx: &Context<'_>, ev: &Event<'_>) -> Result<()> {
        let rec = &ev.record;
        let trailer = ctx.evlist.evsels[ev.evsel].attr.id_hdr_size();
        let bad = |what: &str| Error::in_record(ev.offset, rec.header.type_, format!("{what} record truncated"));
        match rec.header.type_ {
            kind::SAMPLE => {
                if let Some(s) = &ev.sample {
                    self.print_sample(ctx.evlist, ev.evsel, rec.header.misc, s)?;
                }
            }
            kind::MMAP | kind::MMAP2 => {
                let m = MmapRecord::parse(rec, trailer).ok_or_else(|| bad("MMAP"))?;
                self.machine.process_mmap(&m, rec.header.type_, rec.header.misc);
            }
            kind::COMM => {
                let c = CommRecord::parse(rec, trailer).ok_or_else(|| bad("COMM"))?;
                self.machine.process_comm(&c);
            }
            kind::FORK => {
                let t = TaskRecord::parse(rec).ok_or_else(|| bad("FORK"))?;
                self.machine.process_fork(&t, rec.header.misc);
            }
            kind::EXIT => {
                let t = TaskRecord::parse(rec).ok_or_else(|| bad("EXIT"))?;
                self.machine.process_exit(&t);
            }
            _ => {}
        }
        Ok(())
    }

    /// perf script's `process_attr` (pipe mode): check the first event of
    /// each output type, and turn on ip and sym for callchains.
    fn attr_added(&mut self, evlist: &Evlist, idx: usize) -> Result<()> {
        let ev = &evlist.evsels[idx];
        let ty = output_type(&ev.attr);
        if evlist.evsels.iter().enumerate().any(|(i, e)| i != idx && e.attr.type_ == ev.attr.type_) {
            return Ok(());
        }
        self.name_width = None;
        if ev.attr.sample_type != 0 {
            self.opts
                .fields
                .check_attr(&ev.attr, &ev.name(), is_dummy(&ev.attr))
                .map_err(|e| Error::msg(e.0))?;
        }
        let combined = evlist.evsels.iter().fold(0, |a, e| a | e.attr.sample_type);
        if self.use_callchain
            && (combined & st::CALLCHAIN != 0
                || combined & st::BRANCH_STACK != 0
                || (combined & st::REGS_USER != 0 && combined & st::STACK_USER != 0))
        {
            let t = &mut self.opts.fields.types[ty];
            if t.user_unset_fields & f::IP == 0 {
                t.fields |= f::IP;
            }
            if t.user_unset_fields & f::SYM == 0 {
                t.fields |= f::SYM;
            }
        }
        self.ip_opts[ty] = IpOpts::from_fields(self.opts.fields.types[ty].fields);
        self.checked[ty] = true;
        Ok(())
    }
}

impl<W: Write> Script<W> {
    pub fn comm_of(&self, tid: i32) -> Option<Rc<str>> {
        self.machine.thread(tid).map(|t| t.comm())
    }
}
