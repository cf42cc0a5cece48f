//! `pstitch-defer`: turn a frame-pointer recording into the deferred
//! user-callchain form (see `pstitch::fixture::defer`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use pstitch::fixture::defer::{DeferOptions, convert};

/// Convert a frame-pointer perf.data into the deferred-callchain form a
/// kernel with defer_callchain writes (file or pipe mode, same byte order).
#[derive(Parser, Debug)]
#[command(name = "pstitch-defer", version)]
struct Args {
    /// The original recording (perf record -g, frame pointers).
    input: PathBuf,
    /// Where to write the deferred form.
    output: PathBuf,
    /// Write each deferred record this many records later than the kernel would.
    #[arg(long, default_value_t = 0)]
    delay_records: usize,
    /// Lose every Nth deferred record (a PERF_RECORD_LOST takes its place).
    #[arg(long, default_value_t = 0)]
    lose_every: usize,
    /// Add this many deferred records with cookies no sample has.
    #[arg(long, default_value_t = 0)]
    orphans: usize,
    /// Write deferred records on another CPU than their samples.
    #[arg(long)]
    cross_cpu: bool,
    /// Seed for the variants' choices.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

fn main() -> ExitCode {
    let a = Args::parse();
    let opts = DeferOptions { delay_records: a.delay_records, lose_every: a.lose_every, orphans: a.orphans, cross_cpu: a.cross_cpu, seed: a.seed };
    let input = match std::fs::read(&a.input) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("pstitch-defer: {}: {e}", a.input.display());
            return ExitCode::FAILURE;
        }
    };
    match convert(&input, &opts) {
        Ok((out, report)) => {
            if let Err(e) = std::fs::write(&a.output, out) {
                eprintln!("pstitch-defer: {}: {e}", a.output.display());
                return ExitCode::FAILURE;
            }
            eprintln!("pstitch-defer: {report:?}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("pstitch-defer: {}: {e}", a.input.display());
            ExitCode::FAILURE
        }
    }
}
