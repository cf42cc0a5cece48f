//! Symbol names as an ELF file could hold them: the C++ demangler (and the
//! Rust, OCaml and Java ones perf tries first or after) must answer or give
//! up, never panic, overflow the stack or loop. Names are capped like the
//! longest real ones seen (libiberty itself refuses over 1 KiB for C++).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() > 4096 {
        return;
    }
    let name = String::from_utf8_lossy(data);
    let _ = pstitch::demangle(&name);
    let _ = pstitch::demangle_cxx(&name);
});
