//! The `insn` and `insnlen` fields: the bytes of the instruction at a
//! sample's ip, read from the object file (perf's `arch_fetch_insn` on
//! x86, `thread__memcpy`, `sample__fprintf_insn_raw`).
//!
//! ```text
//! cwork 13794  7ff770e06bc2 msort_with_tmp.part.0 (.../libc.so.6) ilen: 4 insn: 48 83 ed 01
//!                                                                 ^^^^^^^       ^^^^^^^^^^^
//!                                     x86 length of the bytes at the ip   the bytes (none if 0)
//! ```
//!
//! perf reads up to 16 bytes (`MAX_INSN`) at the ip's file offset
//! (`map__map_ip`: `ip - start + pgoff`) from the DSO's data file (see
//! `Symbolizer::open_data`) and decodes one instruction with the kernel's
//! x86 decoder, in 32-bit mode only for a DSO whose symbols came from a
//! 32-bit ELF file (`dso__is_64_bit`): its length is
//! `ilen` when the decoder accepts the bytes and they hold the whole
//! instruction, else `ilen: 0` and no bytes. Addresses from 2^63 up are
//! kernel addresses (`machine__kernel_ip`; x86 leaves the kernel start
//! there), and the kernel's bytes are never read: its symbols come from
//! kallsyms, which names no file. A JIT-compiled BPF program is read from
//! its code in HEADER_BPF_PROG_INFO once a BPF_EVENT record has named its
//! DSO (perf's `bpf_read`: at the ip's offset from the map's start, into
//! the program's whole image, whichever function the map is). An address
//! in no map, or a DSO whose file is missing or ends before the ip, gives
//! `ilen: 0` too.
//!
//! The length comes from `iced-x86`'s decoder rather than a port of the
//! kernel's table-driven one: for every encoding the kernel's decoder
//! accepts both give the same length (checked against perf-ref on the
//! golden recordings, and on random bytes: tests/golden/insn-random).

use std::fs::File;
use std::os::unix::fs::FileExt;

use crate::fasthash::FastMap;
use crate::machine::{CpuMode, DsoId, Machine, Map};
use crate::symbols::Symbolizer;

use super::fields::{Field, f};
use super::format;

const HEX: &[u8; 16] = b"0123456789abcdef";

/// perf's `MAX_INSN`: the bytes read at an ip.
const MAX_INSN: usize = 16;

/// A DSO's data file, opened once.
struct DataFile {
    file: File,
    /// The DSO's symbols came from a 32-bit object: decoded in 32-bit mode.
    is_32_bit: bool,
}

/// The data files opened so far, by DSO (`None`: perf's
/// `DSO_DATA_STATUS_ERROR`, not tried again).
#[derive(Default)]
pub(super) struct InsnReader {
    files: FastMap<DsoId, Option<DataFile>>,
}

impl InsnReader {
    /// The instruction at `ip` of thread `tid`: its bytes, as many as
    /// its length (empty when perf's decoder would not take them).
    fn fetch(&mut self, symbolizer: &mut Symbolizer, machine: &mut Machine, tid: i32, ip: u64) -> ([u8; MAX_INSN], usize) {
        let mut buf = [0u8; MAX_INSN];
        if ip == 0 {
            return (buf, 0);
        }
        let mode = if ip >= 1 << 63 { CpuMode::Kernel } else { CpuMode::User };
        let Ok(map) = symbolizer.find_map(machine, tid, mode, ip) else { return (buf, 0) };
        let Some((n, bitness)) = self.read(symbolizer, machine, &map, ip, &mut buf) else { return (buf, 0) };
        let len = insn_len(&buf[..n], bitness);
        (buf, len)
    }

    /// perf's `dso__data_read_offset` at `addr` of `map`: how many bytes of
    /// `buf` were filled and the decoding mode of the DSO (`dso__is_64_bit`),
    /// or `None` when the DSO has no data to read (its file is missing;
    /// kernel maps other than BPF programs, whose code comes from their
    /// JIT image in HEADER_BPF_PROG_INFO).
    pub(super) fn read(&mut self, symbolizer: &mut Symbolizer, machine: &Machine, map: &Map, addr: u64, buf: &mut [u8]) -> Option<(usize, u32)> {
        if addr >= 1 << 63 {
            let code = machine.bpf_code(map.dso)?;
            let at = usize::try_from(map.map_ip(addr)).unwrap_or(usize::MAX);
            let bytes = code.get(at..).unwrap_or_default();
            let n = bytes.len().min(buf.len());
            buf[..n].copy_from_slice(&bytes[..n]);
            return Some((n, 64));
        }
        let data = self.files.entry(map.dso).or_insert_with(|| {
            let (file, is_32_bit) = symbolizer.open_data(&machine.dsos, map.dso)?;
            Some(DataFile { file, is_32_bit })
        });
        let data = data.as_ref()?;
        Some((read_at(&data.file, map.map_ip(addr), buf), if data.is_32_bit { 32 } else { 64 }))
    }

    /// perf's `perf_sample__fprintf_insn` for ordinary samples, for the
    /// fields asked for: ` ilen: N` (`insnlen`), then ` insn: xx xx ..`
    /// (`insn`, when N > 0).
    pub(super) fn print(&mut self, out: &mut Vec<u8>, symbolizer: &mut Symbolizer, machine: &mut Machine, tid: i32, ip: u64, fields: Field) {
        let (buf, len) = self.fetch(symbolizer, machine, tid, ip);
        if fields & f::INSNLEN != 0 {
            out.extend_from_slice(b" ilen: ");
            format::uint(out, len as u64, 0);
        }
        if fields & f::INSN != 0 && len > 0 {
            out.extend_from_slice(b" insn: ");
            for (i, b) in buf[..len].iter().enumerate() {
                if i > 0 {
                    out.push(b' ');
                }
                hex_byte(out, *b);
            }
        }
    }
}

/// perf's x86 `dump_insn`: `insn: ` and each byte of the instruction at the
/// start of `bytes` as `xx `, or `<bad>`; the instruction's length (0 for
/// `<bad>`).
pub(super) fn dump(out: &mut Vec<u8>, bytes: &[u8], bitness: u32) -> usize {
    let len = insn_len(bytes, bitness);
    if len == 0 {
        out.extend_from_slice(b"<bad>");
        return 0;
    }
    out.extend_from_slice(b"insn: ");
    for &b in &bytes[..len] {
        hex_byte(out, b);
        out.push(b' ');
    }
    len
}

fn hex_byte(out: &mut Vec<u8>, b: u8) {
    out.extend_from_slice(&[HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
}

/// Reads from `offset` until `buf` is full or the file ends (perf's
/// `dso__data_read_offset`); how many bytes were read.
fn read_at(file: &File, offset: u64, buf: &mut [u8]) -> usize {
    let mut n = 0;
    while n < buf.len() {
        match file.read_at(&mut buf[n..], offset.saturating_add(n as u64)) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    n
}

/// The length of the instruction `bytes` start with, in `bitness`-bit
/// mode; 0 when it is not a whole, valid instruction.
pub(super) fn insn_len(bytes: &[u8], bitness: u32) -> usize {
    if bytes.is_empty() {
        return 0;
    }
    if let Some(len) = rex_then_prefix(bytes, bitness) {
        return len;
    }
    // The kernel's decoder does not check where a LOCK prefix may go.
    let decode = |bytes: &[u8]| {
        let mut decoder = iced_x86::Decoder::new(bitness, bytes, iced_x86::DecoderOptions::NO_INVALID_CHECK);
        let insn = decoder.decode();
        if insn.is_invalid() { 0 } else { insn.len() }
    };
    match decode(bytes) {
        0 => undefined_len(bytes, bitness, decode),
        len => len,
    }
}

/// The length the kernel's table-driven decoder gives bytes that are no
/// valid instruction but whose length its tables know: one-byte opcodes
/// invalid in 64-bit mode (`1f`, `pop %ds`; also `d4` and `82`, whose
/// operands it does not read there), the x87 escapes' undefined forms
/// (decoded as `d8`, which defines every ModRM form), and the reserved `reg`
/// fields of the `fe`, `ff`, `c6` and `c7` groups (decoded as `/0`, whose
/// operands are the same). 0 for anything else. Checked against perf-ref on
/// random bytes (tests/hostile.rs).
fn undefined_len(bytes: &[u8], bitness: u32, decode: impl Fn(&[u8]) -> usize) -> usize {
    let i = Prefixes::of(bytes, bitness).opcode;
    let Some(&op) = bytes.get(i) else { return 0 };
    let with = |k: usize, b: u8| {
        let mut v = bytes.to_vec();
        v[k] = b;
        decode(&v)
    };
    match op {
        0x06 | 0x07 | 0x0e | 0x16 | 0x17 | 0x1e | 0x1f | 0x27 | 0x2f | 0x37 | 0x3f | 0x60 | 0x61 | 0xce | 0xd6 if bitness == 64 => i + 1,
        0xd4 if bitness == 64 && bytes.len() > i + 1 => i + 1,
        0x82 if bitness == 64 => i + 1,
        0xd8..=0xdf => with(i, 0xd8),
        0xfe | 0xff | 0xc6 | 0xc7 => match bytes.get(i + 1) {
            Some(&modrm) if modrm & 0x38 != 0 => with(i + 1, modrm & !0x38),
            _ => 0,
        },
        _ => 0,
    }
}

/// The kernel's decoder takes legacy prefixes, then one REX prefix, then
/// the opcode: a legacy prefix or a second REX after the REX is read as a
/// one-byte opcode without operands (a CPU ignores such a REX instead;
/// compilers never emit one). The length it gives then.
fn rex_then_prefix(bytes: &[u8], bitness: u32) -> Option<usize> {
    let p = Prefixes::of(bytes, bitness);
    let next = *bytes.get(p.opcode)?;
    (p.rex && (is_legacy_prefix(next) || is_rex(next))).then_some(p.opcode + 1)
}

fn is_legacy_prefix(b: u8) -> bool {
    matches!(b, 0x26 | 0x2e | 0x36 | 0x3e | 0x64 | 0x65 | 0x66 | 0x67 | 0xf0 | 0xf2 | 0xf3)
}

fn is_rex(b: u8) -> bool {
    b & 0xf0 == 0x40
}

/// The prefixes the kernel's decoder reads before an opcode: legacy ones,
/// then (in 64-bit mode) one REX.
pub(super) struct Prefixes {
    /// Where the opcode starts.
    pub opcode: usize,
    /// The last legacy prefix (0: none), which selects some opcodes.
    pub last_legacy: u8,
    rex: bool,
}

impl Prefixes {
    pub fn of(bytes: &[u8], bitness: u32) -> Prefixes {
        let legacy = bytes.iter().take_while(|&&b| is_legacy_prefix(b)).count();
        let last_legacy = legacy.checked_sub(1).map_or(0, |i| bytes[i]);
        let rex = bitness == 64 && bytes.get(legacy).is_some_and(|&b| is_rex(b));
        Prefixes { opcode: legacy + usize::from(rex), last_legacy, rex }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_of_the_instructions_perf_printed() {
        // From perf-ref's output on tests/golden/c-threads (-F ip,insn,insnlen).
        for bytes in [&[0x41, 0x83, 0xfa, 0x01][..], &[0x8b, 0x03], &[0x48, 0x29, 0x6c, 0x24, 0x28], &[0xc3], &[0xc5, 0xfa, 0x6f, 0x4c, 0x16, 0xf0]] {
            let mut padded = bytes.to_vec();
            padded.extend_from_slice(&[0x90; 10]);
            assert_eq!(insn_len(&padded, 64), bytes.len(), "{bytes:02x?}");
        }
    }

    #[test]
    fn cut_or_missing_bytes_give_no_length() {
        assert_eq!(insn_len(&[], 64), 0);
        // mov rax, imm64 needs 10 bytes.
        assert_eq!(insn_len(&[0x48, 0xb8, 1, 2, 3], 64), 0);
        assert_eq!(insn_len(&[0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8], 64), 10);
    }

    #[test]
    fn a_prefix_after_rex_ends_the_instruction_as_for_perf() {
        // perf-ref on random bytes (tests/hostile.rs, insn-random).
        assert_eq!(insn_len(&[0x4d, 0x66, 0x94, 0xbf, 0x45], 64), 2);
        assert_eq!(insn_len(&[0x43, 0x4e, 0x3b, 0x66, 0xf3], 64), 2);
        assert_eq!(insn_len(&[0x66, 0x48, 0x89, 0xe5], 64), 4);
    }

    #[test]
    fn the_mode_changes_lengths() {
        // 0x48 is a REX prefix in 64-bit mode, `dec eax` in 32-bit mode.
        assert_eq!(insn_len(&[0x48, 0x89, 0xe5], 64), 3);
        assert_eq!(insn_len(&[0x48, 0x89, 0xe5], 32), 1);
    }
}
