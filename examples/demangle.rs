//! Development aid: demangles the names on standard input, one per line, as
//! pstitch shows them (compare with `c++filt`). With `--cxx`, only the C++
//! demangler runs, for comparison with `abi::__cxa_demangle` (see
//! tests/demangle/).
use std::io::{BufRead, Write};

fn main() {
    let cxx_only = std::env::args().any(|a| a == "--cxx");
    let stdin = std::io::stdin();
    let mut out = std::io::BufWriter::new(std::io::stdout());
    for line in stdin.lock().lines() {
        let line = line.expect("reading standard input");
        let shown = if cxx_only { pstitch::demangle_cxx(&line) } else { pstitch::demangle(&line) };
        writeln!(out, "{}", shown.as_deref().unwrap_or(&line)).expect("writing");
    }
}
