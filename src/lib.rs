//! pstitch: a fast, exact reimplementation of `perf script`, with
//! first-class support for deferred user callchains.
//!
//! The pipeline, one module per stage, data flowing one way:
//!
//! ```text
//! perf_data (the pstitch-perf-data crate: header, attrs, features, records)
//!   -> session (ordering, deferred stitching, filters; keeps the machine)
//!     -> machine (threads, comms, maps)
//!       -> symbols (ELF, DWARF inline frames, kallsyms, demangling)
//!       -> unwind (user stacks of --call-graph dwarf samples, libdw's way)
//!         -> a tool: script (perf script's text), or yours
//! ```
//!
//! Threads, hand-offs between them and `unsafe` code live in one private
//! module (`engine`); everything else is single-threaded, safe Rust.
//!
//! # Example
//!
//! Print each sample's thread and the symbol of its address, with the
//! machine (threads, maps) the session keeps and a symbolizer of your own:
//!
//! ```
//! use pstitch::{Context, CpuMode, SampleEvent, Session, SessionOptions, SymbolConfig, Symbolizer, Threads, Tool};
//!
//! struct Symbols {
//!     symbolizer: Symbolizer,
//!     lines: Vec<String>,
//! }
//!
//! impl Tool for Symbols {
//!     fn sample(&mut self, cx: &mut Context<'_>, ev: &SampleEvent<'_>) -> pstitch::Result<()> {
//!         let s = ev.sample;
//!         let mode = CpuMode::from_misc(ev.record.header.misc);
//!         let name = match self.symbolizer.resolve(cx.machine, s.tid, mode, s.ip) {
//!             Some((_, sym)) => sym.name.to_string(),
//!             None => "[unknown]".to_string(),
//!         };
//!         // A comm is the bytes the kernel recorded (UTF-8 or not).
//!         let comm = String::from_utf8_lossy(ev.comm);
//!         self.lines.push(format!("{comm} {} {:x} {name}", s.tid, s.ip));
//!         Ok(())
//!     }
//! }
//!
//! let dir = std::path::Path::new("tests/golden/c-threads");
//! let mut input = pstitch::open(&dir.join("perf.data"), Threads::Single)?;
//! let (evlist, features, _warnings) = input.take_header();
//! let pipe = input.pipe;
//! let mut session = Session::new(input.records(), evlist, features, pipe, SessionOptions::default());
//! let config = SymbolConfig { symfs: Some(dir.join("symfs")), kallsyms: Some(dir.join("kallsyms")), ..SymbolConfig::perf() };
//! let mut tool = Symbols { symbolizer: Symbolizer::new(config), lines: Vec::new() };
//! session.run(&mut tool)?;
//! assert!(tool.lines.iter().any(|l| l.starts_with("cw-sort ") && l.ends_with(" cmp_u32")));
//! # Ok::<(), pstitch::Error>(())
//! ```
//!
//! [`script::run`] is all of `pstitch script` as one call; [`inject::run`]
//! all of `pstitch inject`.

mod engine;
mod error;
mod fasthash;
pub mod inject;
mod machine;
pub mod report;
pub mod script;
mod session;
mod symbols;
mod tracepoint;
mod unwind;

pub use perf_data;

pub use engine::{Threads, open_input as open};
pub use error::{Error, Result};
pub use machine::{Comm, CpuMode, Dso, DsoId, DsoKind, Dsos, Machine, Map, MapKind, Maps, Thread};
pub use session::{
    Callchain, Consumed, Context, DeferredEvent, Event, HeldEvent, Limits, Progress, SampleEvent, SampleFilter, Session, SessionOptions, SideBand,
    Stats, StitchStats, Tool, UnwindStats, Why,
};
pub use unwind::{UnwindOptions, UnwindStyles};
pub use symbols::demangle::{cxx as demangle_cxx, demangle};
pub use symbols::{Addr2line, Addr2lineRecord, InlineEntry, Symbol, SymbolConfig, Symbolizer};

/// Helpers for the unit tests.
#[cfg(test)]
pub(crate) mod testing {
    /// Deterministic pseudo-random numbers below `n` (xorshift64; `seed`
    /// must not be 0).
    pub fn rng(seed: u64) -> impl FnMut(u64) -> u64 {
        let mut x = seed;
        move |n| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        }
    }
}
