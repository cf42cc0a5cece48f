//! pstitch: a fast, exact reimplementation of `perf script`, with
//! first-class support for deferred user callchains.
//!
//! The pipeline, one module per stage, data flowing one way:
//!
//! ```text
//! perf_data (records, attrs, features)
//!   -> session (ordering, attrs/features from the stream, deferred stitching)
//!     -> machine (threads, comms, maps)  +  symbols (ELF, DWARF, kallsyms)
//!       -> script (perf script's text)
//! ```

pub mod cli;
pub mod fasthash;
pub mod fixture;
pub mod input;
pub mod machine;
pub mod perf_data;
pub mod script;
pub mod session;
pub mod symbols;
pub mod tracepoint;
pub mod unwind;

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
