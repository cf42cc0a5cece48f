//! The `iregs` and `uregs` fields: the registers a sample carries
//! (`PERF_SAMPLE_REGS_INTR`, `PERF_SAMPLE_REGS_USER`), printed as perf 7.2's
//! `perf_sample__fprintf_regs` prints them:
//!
//! ```text
//!  ABI:2    AX:0x124    BX:0x0 ...  FLAGS:0x216    CS:0x33 ...   R15:0x7fc7ecf73020 
//! ```
//!
//! `" ABI:<abi> "`, then for every bit of the event's mask, lowest first,
//! the register's name right-aligned in 5 columns, `:0x`, the value in hex
//! and a blank. A sample whose ABI is 0 (no user state: a kernel thread)
//! prints nothing. Names are perf's for the recording's architecture; only
//! x86's table is here (other architectures print `unknown`, see the man
//! page, COMPATIBILITY).

use super::format;
use perf_data::sample::Regs;

/// Appends `regs` as perf prints them; `x86`: the recording's architecture
/// is x86 (else every name is perf's fallback, `unknown`).
pub fn print(out: &mut Vec<u8>, regs: &Regs<'_>, x86: bool) {
    if regs.abi == 0 {
        return;
    }
    out.extend_from_slice(b" ABI:");
    format::uint(out, regs.abi, 0);
    out.push(b' ');
    for (r, value) in regs.iter() {
        format::pad_left(out, name(r, x86).as_bytes(), 5);
        out.extend_from_slice(b":0x");
        format::hex(out, value, 0);
        out.push(b' ');
    }
}

/// perf's `perf_reg_name`: x86's name of register `r`, or `unknown`.
pub fn name(r: u32, x86: bool) -> &'static str {
    if x86 { x86_name(r) } else { "unknown" }
}

/// perf's `__perf_reg_name_x86` (the kernel's `perf_regs.h` numbering):
/// the general registers, then from 32 the XMM registers, two 64-bit
/// halves each under one name.
fn x86_name(r: u32) -> &'static str {
    const GENERAL: [&str; 24] = [
        "AX", "BX", "CX", "DX", "SI", "DI", "BP", "SP", "IP", "FLAGS", "CS", "SS", "DS", "ES", "FS", "GS", "R8", "R9", "R10", "R11",
        "R12", "R13", "R14", "R15",
    ];
    const XMM: [&str; 16] = [
        "XMM0", "XMM1", "XMM2", "XMM3", "XMM4", "XMM5", "XMM6", "XMM7", "XMM8", "XMM9", "XMM10", "XMM11", "XMM12", "XMM13", "XMM14",
        "XMM15",
    ];
    match r {
        0..24 => GENERAL[r as usize],
        32..64 => XMM[(r as usize - 32) / 2],
        _ => "unknown",
    }
}

/// Whether the recording's architecture (HEADER_ARCH, as `uname -m` gave
/// it; the running machine's when the file does not say) is x86.
pub fn is_x86(arch: Option<&str>) -> bool {
    match arch {
        Some(a) => matches!(a, "x86_64" | "x86" | "i386" | "i486" | "i586" | "i686"),
        None => cfg!(any(target_arch = "x86_64", target_arch = "x86")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_perfs_table() {
        assert_eq!((x86_name(0), x86_name(9), x86_name(23)), ("AX", "FLAGS", "R15"));
        assert_eq!((x86_name(24), x86_name(31)), ("unknown", "unknown"));
        assert_eq!((x86_name(32), x86_name(33), x86_name(62), x86_name(63)), ("XMM0", "XMM0", "XMM15", "XMM15"));
        assert!(is_x86(Some("x86_64")) && !is_x86(Some("aarch64")));
    }
}
