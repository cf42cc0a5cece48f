//! `pstitch-swap`: write the other byte order's form of a perf.data file
//! (see `pstitch::perf_data::swap`), e.g. a big-endian copy of a recording
//! made on x86.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use pstitch::perf_data::swap;

/// Byte-swap a perf.data file (file or pipe mode) as perf record on a
/// machine of the other byte order would have written it.
#[derive(Parser, Debug)]
#[command(name = "pstitch-swap", version)]
struct Args {
    input: PathBuf,
    output: PathBuf,
    /// Replace compressed records (perf record -z) by the records they
    /// hold first; compressed data cannot be swapped otherwise.
    #[arg(long)]
    decompress: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let run = || -> Result<Vec<String>, String> {
        let mut bytes = std::fs::read(&args.input).map_err(|e| format!("{}: {e}", args.input.display()))?;
        if args.decompress {
            bytes = swap::decompress(&bytes).map_err(|e| format!("{}: {e}", args.input.display()))?;
        }
        let s = swap::swap(&bytes).map_err(|e| format!("{}: {e}", args.input.display()))?;
        std::fs::write(&args.output, &s.bytes).map_err(|e| format!("{}: {e}", args.output.display()))?;
        Ok(s.untouched)
    };
    match run() {
        Ok(untouched) => {
            for u in untouched {
                eprintln!("pstitch-swap: left as it was: {u}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("pstitch-swap: {e}");
            ExitCode::FAILURE
        }
    }
}
