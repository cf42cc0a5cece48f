//! The whole pipeline in-process: bytes -> Input (memory and, for pipe
//! data, streaming) -> Session -> Script printing to a sink. Any panic,
//! abort, overflow (debug assertions are on) or timeout is a finding.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/common/mod.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    common::script_bytes(data);
});
