//! Callchain lines: perf's `thread__resolve_callchain_sample` followed by
//! `sample__fprintf_callchain`, with the text of each address cached.
//!
//! A callchain line is the address, then what the address resolves to:
//!
//! ```text
//! \t    7f3e1a2b3c4d  main+0x1d (/tmp/pstitch-fixtures/bin/cwork)
//!  \____ ip ______/ \___________ the same for every sample _________/
//! ```
//!
//! The part after the address depends only on the DSO, the address inside
//! it and the output fields, so it is formatted once and kept in a cache
//! keyed by (output type, DSO, DSO address). An address with inline frames
//! prints several lines, each starting with the same address; the cached
//! text marks the start of every line with a NUL byte (which no symbol,
//! file or DSO name can contain), where the address goes.
//!
//! Some text must not be cached: the `(cookie)` frame of a deferred
//! sample, `srcline` (binutils' answers depend on which compilation units
//! it has read so far), a symbol offset that perf computes from the map's
//! start (an address past its symbol's end), and the first lookup after a
//! symbol table failed to load half-way (perf reports the failure to that
//! lookup only).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::Write;

use super::fields::IpOpts;
use super::{Script, context, format};
use crate::machine::maps::{DsoId, Map};
use crate::machine::CpuMode;
use crate::symbols::Symbol;

/// Marks where a line starts (and the address is printed).
const LINE: u8 = 0;

/// (output type, DSO or `NO_DSO`, address in the DSO).
type FrameKey = (u8, DsoId, u64);
const NO_DSO: DsoId = DsoId::MAX;

/// Formatted frames by [`FrameKey`].
pub(super) type FrameCache = HashMap<FrameKey, Box<[u8]>, BuildHasherDefault<KeyHasher>>;

/// A multiply-xorshift hasher for the small fixed-size keys of the frame
/// cache: SipHash's DoS resistance buys nothing here and costs a lot per
/// callchain entry.
#[derive(Default)]
pub(super) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        let h = self.0.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        h ^ (h >> 29)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u8(&mut self, v: u8) {
        self.write_u64(u64::from(v));
    }

    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(23) ^ v).wrapping_mul(0x2545_f491_4f6c_dd1d);
    }
}

impl<W: Write> Script<W> {
    /// Prints the lines of a callchain (after the sample line's `\n`).
    /// Context markers switch the address space; an unknown marker makes
    /// perf discard what it resolved and print an empty callchain.
    /// `ty`: the output type whose `ip_opts` apply.
    pub(super) fn print_callchain(&mut self, tid: i32, chain: impl Iterator<Item = u64> + Clone, ty: usize, cookie: Option<u64>) {
        let max = self.opts.max_stack;
        // perf stops at max_stack entries: markers past them are not seen.
        let mut seen = 0;
        for ip in chain.clone() {
            if seen >= max {
                break;
            }
            if ip < context::MAX {
                seen += 1;
            } else if !matches!(ip, context::HV | context::KERNEL | context::USER | context::USER_DEFERRED) {
                return;
            }
        }
        let opts = self.ip_opts[ty];
        let mut mode = CpuMode::User;
        let mut seen = 0;
        for ip in chain {
            if seen >= max {
                break;
            }
            if ip >= context::MAX {
                mode = match ip {
                    context::HV => CpuMode::Hypervisor,
                    context::KERNEL => CpuMode::Kernel,
                    _ => CpuMode::User,
                };
                continue;
            }
            seen += 1;
            self.print_frame(tid, mode, ip, ty, opts, cookie);
        }
    }

    /// The line(s) of one callchain address: the inline chain when perf
    /// would show one, else the symbol.
    fn print_frame(&mut self, tid: i32, mode: CpuMode, ip: u64, ty: usize, opts: IpOpts, cookie: Option<u64>) {
        let map = self.find_map(tid, mode, ip);
        let key: FrameKey = match &map {
            Some(m) => (ty as u8, m.dso, m.map_ip(ip)),
            None => (ty as u8, NO_DSO, 0),
        };
        let cacheable = cookie != Some(ip) && !opts.srcline;
        if cacheable && let Some(text) = self.frame_cache.get(&key) {
            expand(&mut self.buf, text, ip, opts.ip);
            return;
        }
        let mut text = std::mem::take(&mut self.frame_text);
        text.clear();
        let stable = self.format_frame(&mut text, map.as_ref(), ip, opts, cookie);
        let encoded = encode(&text);
        expand(&mut self.buf, &encoded, ip, opts.ip);
        if cacheable && stable {
            self.frame_cache.insert(key, encoded);
        }
        self.frame_text = text;
    }

    /// Formats the lines of `ip` into `out`, each starting with [`LINE`];
    /// false if the text may differ next time (see the module doc).
    fn format_frame(&mut self, out: &mut Vec<u8>, map: Option<&Map>, ip: u64, opts: IpOpts, cookie: Option<u64>) -> bool {
        let sym = map.and_then(|m| self.symbolizer.find_symbol(&self.machine.dsos, m, ip));
        let mut stable = !self.symbolizer.last_lookup_transient();
        let addr = map.map(|m| m.map_ip(ip)).unwrap_or(0);
        if self.symbolizer.config.inline
            && let (Some(m), Some(s)) = (map, sym.as_ref())
        {
            let inlines = self.symbolizer.inlines(&self.machine.dsos, m, ip, s);
            if !inlines.is_empty() {
                for e in inlines.iter() {
                    out.push(LINE);
                    if opts.sym {
                        out.push(b' ');
                        if cookie == Some(ip) {
                            out.extend_from_slice(b"(cookie)");
                        } else {
                            let sym = Symbol { name: e.name.clone(), start: s.start, end: s.end };
                            stable &= symname(out, Some(&sym), map, addr, opts.symoff);
                        }
                    }
                    if opts.dso && !e.inlined {
                        self.dsoname(out, map, opts.dsoff, addr);
                    }
                    if opts.srcline {
                        out.extend_from_slice(b"\n  ");
                        out.extend_from_slice(e.srcline.as_bytes());
                    }
                    if e.inlined {
                        out.extend_from_slice(b" (inlined)");
                    }
                    out.push(b'\n');
                }
                return stable;
            }
        }
        out.push(LINE);
        if opts.sym {
            out.push(b' ');
            if cookie == Some(ip) {
                out.extend_from_slice(b"(cookie)");
            } else {
                stable &= symname(out, sym.as_ref(), map, addr, opts.symoff);
            }
        }
        if opts.dso {
            self.dsoname(out, map, opts.dsoff, addr);
        }
        if opts.srcline
            && let Some(m) = map
            && let Some(line) = self.symbolizer.srcline(&self.machine.dsos, m, ip, None)
        {
            out.extend_from_slice(b"\n  ");
            out.extend_from_slice(line.as_bytes());
        }
        out.push(b'\n');
        stable
    }

    /// perf's `map__fprintf_dsoname_dsoff`: ` (name)` or ` (name+0xoff)`.
    pub(super) fn dsoname(&mut self, out: &mut Vec<u8>, map: Option<&Map>, dsoff: bool, addr: u64) {
        out.extend_from_slice(b" (");
        match map {
            Some(m) => {
                let dso = self.machine.dsos.get(m.dso);
                out.extend_from_slice(dso.name.as_bytes());
                if dsoff && self.symbolizer.is_object_file(&self.machine.dsos, m.dso) {
                    out.extend_from_slice(b"+0x");
                    format::hex(out, addr, 0);
                }
            }
            None => out.extend_from_slice(b"[unknown]"),
        }
        out.push(b')');
    }
}

/// perf's `__symbol__fprintf_symname_offs`; false if the offset was taken
/// from the map's start (so the text belongs to this map only).
pub(super) fn symname(out: &mut Vec<u8>, sym: Option<&Symbol>, map: Option<&Map>, addr: u64, offsets: bool) -> bool {
    match sym {
        Some(s) => {
            out.extend_from_slice(s.name.as_bytes());
            if offsets {
                let off = if addr < s.end {
                    addr.wrapping_sub(s.start)
                } else {
                    addr.wrapping_sub(map.map(|m| m.start).unwrap_or(0)).wrapping_sub(s.start)
                };
                out.extend_from_slice(b"+0x");
                format::hex(out, off, 0);
                return addr < s.end;
            }
            true
        }
        None => {
            out.extend_from_slice(b"[unknown]");
            true
        }
    }
}

/// Cached form of frame text: each line as a 4-byte length and its bytes,
/// so that copying it out needs no search.
fn encode(text: &[u8]) -> Box<[u8]> {
    let mut out = Vec::with_capacity(text.len() + 8);
    for line in text.split(|&b| b == LINE).skip(1) {
        out.extend_from_slice(&(line.len() as u32).to_le_bytes());
        out.extend_from_slice(line);
    }
    out.into_boxed_slice()
}

/// Copies encoded frame text to `buf`, with `\t` and the address at the
/// start of each line when the `ip` field is shown.
fn expand(buf: &mut Vec<u8>, mut text: &[u8], ip: u64, show_ip: bool) {
    let mut prefix = [b'\t'; 17];
    if show_ip {
        format::hex16(&mut prefix[1..], ip);
    }
    let prefix = if show_ip { &prefix[..] } else { &[][..] };
    while let Some((len, rest)) = text.split_first_chunk::<4>() {
        let (line, rest) = rest.split_at(u32::from_le_bytes(*len) as usize);
        buf.reserve(prefix.len() + line.len());
        buf.extend_from_slice(prefix);
        buf.extend_from_slice(line);
        text = rest;
    }
}
