//! Tracepoint samples: reading the tracing data perf record saves (event
//! formats, printk strings) and printing a sample's `PERF_SAMPLE_RAW` data
//! the way perf 7.2 prints it through libtraceevent — reimplemented here,
//! quirks included, without libtraceevent.
//!
//! ```text
//! tracing_data  the TRACING_DATA section / HEADER_TRACING_DATA payload
//!   format      one event format file: fields (offset, size, flags)
//!     lexer     libtraceevent's tokenizer
//!     print_fmt `print fmt:` -> argument trees + format pieces
//! eval          a record through the format pieces (+ printf: C printf)
//! fields        `[FAILED TO PARSE] field=value ...` for unparsable formats
//! ```
//!
//! Entry points: [`TracingData::parse`], [`TracingData::event_name`] (perf
//! names tracepoint events `system:name`) and [`TracingData::print`]
//! (perf's `event_format__fprintf`).

pub mod eval;
pub mod fields;
pub mod format;
pub mod lexer;
pub mod print_fmt;
pub mod printf;
pub mod tracing_data;

pub use eval::Resolver;
pub use tracing_data::{TracingData, TracingDataError};

use eval::Eval;
use format::ef;

impl TracingData {
    /// The event format for a tracepoint attr's `config` (the event id).
    pub fn event_for_config(&self, config: u64) -> Option<&format::Event> {
        self.find_event(config as i32).map(|i| &self.events[i])
    }

    /// perf's name for a tracepoint event: `system:name`.
    pub fn event_name(&self, config: u64) -> Option<String> {
        self.event_for_config(config).map(|e| format!("{}:{}", e.system, e.name))
    }

    /// The event id of a record (its `common_type`, located through the
    /// event with the lowest id, as libtraceevent does).
    fn record_type(&self, raw: &[u8]) -> i32 {
        let Some(first) = self.events.first() else { return -1 };
        let Some(idx) = first.find_common_field("common_type") else { return -1 };
        let f = &first.fields[idx];
        let ev = Eval { tep: &self.tep, fields: &[], nr_common: 0, data: raw, resolver: None, failed: false };
        ev.read_number(f.offset as u64, f.size) as i32
    }

    /// perf's `event_format__fprintf`: appends the text libtraceevent
    /// prints for the raw data of one sample. `resolver` names kernel
    /// addresses for `%pS` (perf has none in pipe mode).
    pub fn print(&mut self, out: &mut Vec<u8>, raw: &[u8], resolver: Option<Resolver<'_>>) {
        let mut s = Vec::with_capacity(128);
        let ty = self.record_type(raw);
        match self.find_event(ty) {
            None => s.extend_from_slice(b"[UNKNOWN EVENT]"),
            Some(i) => {
                let event = &mut self.events[i];
                let flags = event.flags.get();
                let (fields, parse) = (&event.fields, &mut event.print.parse);
                let mut ev = Eval { tep: &self.tep, fields, nr_common: event.nr_common, data: raw, resolver, failed: false };
                if flags & ef::FAILED != 0 {
                    s.extend_from_slice(b"[FAILED TO PARSE]");
                    fields::print_fields(&ev, &mut s);
                } else if flags & ef::ISBPRINT == 0 {
                    for p in parse.iter_mut() {
                        ev.piece(&mut s, p);
                    }
                }
                if ev.failed {
                    event.set_failed();
                }
            }
        }
        // perf writes the buffer with "%.*s": it stops at a NUL.
        let n = s.iter().position(|&c| c == 0).unwrap_or(s.len());
        out.extend_from_slice(&s[..n]);
    }
}
