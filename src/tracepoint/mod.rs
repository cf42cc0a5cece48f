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
pub mod event;
pub mod fields;
pub mod format;
pub mod lexer;
pub mod print_fmt;
pub mod printf;
pub mod tracing_data;

pub use eval::Resolver;
pub use tracing_data::{TracingData, TracingDataError};

use eval::Eval;
use event::ef;

impl TracingData {
    /// The event format for a tracepoint attr's `config` (the event id).
    pub fn event_for_config(&self, config: u64) -> Option<&event::Event> {
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

#[cfg(test)]
mod tests {
    use super::*;

    const COMMON: &str = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n";

    fn format_file(name: &str, id: i32, fields: &str, print: &str) -> String {
        format!("name: {name}\nID: {id}\nformat:\n{COMMON}{fields}\nprint fmt: {print}\n")
    }

    /// Tracing data as perf 6.1 writes it (little endian).
    fn tracing_data(events: &[(&str, String)], printk: &str) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&[23, 8, 68]);
        v.extend_from_slice(b"tracing0.6\0");
        v.push(0);
        v.push(8);
        v.extend_from_slice(&4096u32.to_le_bytes());
        let page = b"\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
        v.extend_from_slice(b"header_page\0");
        v.extend_from_slice(&(page.len() as u64).to_le_bytes());
        v.extend_from_slice(page);
        v.extend_from_slice(b"header_event\0");
        v.extend_from_slice(&3u64.to_le_bytes());
        v.extend_from_slice(b"abc");
        v.extend_from_slice(&0u32.to_le_bytes()); // ftrace files
        v.extend_from_slice(&(events.len() as u32).to_le_bytes());
        for (sys, text) in events {
            v.extend_from_slice(sys.as_bytes());
            v.push(0);
            v.extend_from_slice(&1u32.to_le_bytes());
            v.extend_from_slice(&(text.len() as u64).to_le_bytes());
            v.extend_from_slice(text.as_bytes());
        }
        v.extend_from_slice(&0u32.to_le_bytes()); // kallsyms
        v.extend_from_slice(&(printk.len() as u32).to_le_bytes());
        v.extend_from_slice(printk.as_bytes());
        v.extend_from_slice(&0u64.to_le_bytes()); // saved cmdlines
        v
    }

    fn sample_data() -> Vec<u8> {
        let demo = format_file(
            "demo",
            300,
            "\tfield:char comm[8];\toffset:8;\tsize:8;\tsigned:0;\n\tfield:int state;\toffset:16;\tsize:4;\tsigned:1;\n\tfield:__data_loc char[] name;\toffset:20;\tsize:4;\tsigned:0;\n\tfield:const char * msg;\toffset:24;\tsize:8;\tsigned:0;\n\tfield:void * ptr;\toffset:32;\tsize:8;\tsigned:0;\n",
            "\"comm=%s state=%s name=%s msg=%s ptr=%p big=%s\", REC->comm, REC->state ? __print_flags(REC->state, \"|\", { 1, \"S\" }, { 2, \"D\" }) : \"R\", __get_str(name), REC->msg, REC->ptr, REC->state > 2 ? \"yes\" : \"no\"",
        );
        let bad = format_file("bad", 301, "\tfield:int x;\toffset:8;\tsize:4;\tsigned:1;\n\tfield:char s[4];\toffset:12;\tsize:4;\tsigned:0;\n", "\"x=%d\", frob(REC->x)");
        tracing_data(&[("test", demo), ("test", bad)], "0xffffffff81000010 : \"hello\\n\"\n")
    }

    fn record_demo(state: i32, name: &[u8], msg: u64, ptr: u64) -> Vec<u8> {
        let mut r = vec![0u8; 40];
        r[0..2].copy_from_slice(&300u16.to_le_bytes());
        r[4..8].copy_from_slice(&42i32.to_le_bytes());
        r[8..12].copy_from_slice(b"work");
        r[16..20].copy_from_slice(&state.to_le_bytes());
        let loc = ((name.len() as u32) << 16) | 40;
        r[20..24].copy_from_slice(&loc.to_le_bytes());
        r[24..32].copy_from_slice(&msg.to_le_bytes());
        r[32..40].copy_from_slice(&ptr.to_le_bytes());
        r.extend_from_slice(name);
        r
    }

    fn show(td: &mut TracingData, raw: &[u8]) -> String {
        let mut out = Vec::new();
        td.print(&mut out, raw, None);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn parses_and_prints() {
        let mut td = TracingData::parse(&sample_data()).unwrap();
        assert_eq!(td.tep.long_size, 8);
        assert_eq!(td.event_name(300).as_deref(), Some("test:demo"));
        assert_eq!(td.tep.printk.get(&0xffffffff81000010).map(String::as_str), Some("hello"));
        let r = record_demo(3, b"abc\0", 0xffffffff81000010, 0);
        assert_eq!(show(&mut td, &r), "comm=work state=S|D name=abc msg=hello ptr=(nil) big=yes");
        let r = record_demo(0, b"x\0", 0x1234, 0xff);
        assert_eq!(show(&mut td, &r), "comm=work state=R name=x msg=1234 ptr=0xff big=no");
        let r = record_demo(5, b"", 0, 0);
        assert_eq!(show(&mut td, &r), "comm=work state=S|0x4 name= msg=0 ptr=(nil) big=yes");
    }

    #[test]
    fn failed_events_print_raw_fields() {
        let mut td = TracingData::parse(&sample_data()).unwrap();
        let mut r = vec![0u8; 16];
        r[0..2].copy_from_slice(&301u16.to_le_bytes());
        r[8..12].copy_from_slice(&(-7i32).to_le_bytes());
        r[12..16].copy_from_slice(b"ok\0\0");
        assert_eq!(show(&mut td, &r), "[FAILED TO PARSE] x=-7 s=ok");
        // An unprintable string prints as bytes, and from then on always does.
        r[12..16].copy_from_slice(&[1, 2, 0, 0]);
        assert_eq!(show(&mut td, &r), "[FAILED TO PARSE] x=-7 s=ARRAY[01, 02, 00, 00]");
        r[12..16].copy_from_slice(b"ok\0\0");
        assert_eq!(show(&mut td, &r), "[FAILED TO PARSE] x=-7 s=ARRAY[6f, 6b, 00, 00]");
    }

    #[test]
    fn hostile_records_never_panic() {
        let mut td = TracingData::parse(&sample_data()).unwrap();
        assert_eq!(show(&mut td, &[]), "[UNKNOWN EVENT]");
        assert_eq!(show(&mut td, &[0x2c, 0x01]), "comm= state=R name= msg=0 ptr=(nil) big=no");
        let full = record_demo(3, b"abcdef\0", 1, 2);
        for n in 0..full.len() {
            let _ = show(&mut td, &full[..n]);
        }
        // Dynamic location pointing outside the record.
        let mut r = record_demo(1, b"abc\0", 0, 0);
        r[20..24].copy_from_slice(&0xffff_ffffu32.to_le_bytes());
        assert!(show(&mut td, &r).contains("name= "));
        let mut r = record_demo(1, b"abc\0", 0, 0);
        r[0..2].copy_from_slice(&999u16.to_le_bytes());
        assert_eq!(show(&mut td, &r), "[UNKNOWN EVENT]");
    }

    /// Array lengths far past the record (a static array of 4 GiB, counts
    /// of 0x7fffffff): only what the record holds is printed, and memory
    /// stays within the record's size.
    #[test]
    fn arrays_print_no_more_than_their_record_holds() {
        let big = format_file("big", 310, "\tfield:char big[4294967280];\toffset:8;\tsize:4294967280;\tsigned:0;\n", "\"x\", frob(REC->big)");
        let arr = format_file(
            "arr",
            311,
            "\tfield:unsigned long vals[2];\toffset:8;\tsize:16;\tsigned:0;\n",
            &format!("\"{}\", {}", "%s ".repeat(300), "__print_array(REC->vals, 0x7fffffff, 8), __print_hex(REC->vals, 0x7fffffff), ".repeat(150).trim_end_matches(", ")),
        );
        let mut td = TracingData::parse(&tracing_data(&[("test", big), ("test", arr)], "")).unwrap();
        let mut r = vec![0u8; 24];
        r[0..2].copy_from_slice(&310u16.to_le_bytes());
        r[8..24].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]);
        assert_eq!(show(&mut td, &r), "[FAILED TO PARSE] big=ARRAY[01, 02, 03, 04, 05, 06, 07, 08, 09, 0a, 0b, 0c, 0d, 0e, 0f, 10]");
        r[0..2].copy_from_slice(&311u16.to_le_bytes());
        r[8..24].copy_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0]);
        let one = "{0x1,0x2} 01 00 00 00 00 00 00 00 02 00 00 00 00 00 00 00 ";
        assert!(show(&mut td, &r) == one.repeat(150));
        // One byte short of the second element: it is not printed.
        assert!(show(&mut td, &r[..23]) == "{0x1} 01 00 00 00 00 00 00 00 02 00 00 00 00 00 00 ".repeat(150));
    }

    /// A kallsyms size past the end (perf only seeks over it) loses the
    /// printk formats and saved cmdlines after it, not the events.
    #[test]
    fn kallsyms_size_past_the_end_keeps_the_events() {
        let good = sample_data();
        let printk = "0xffffffff81000010 : \"hello\\n\"\n";
        let at = good.len() - 8 - printk.len() - 4 - 4;
        assert_eq!(&good[at..at + 8], &[0, 0, 0, 0, printk.len() as u8, 0, 0, 0]);
        for size in [u32::MAX, (good.len() - at - 4 + 1) as u32] {
            let mut bad = good.clone();
            bad[at..at + 4].copy_from_slice(&size.to_le_bytes());
            let mut td = TracingData::parse(&bad).expect("events kept");
            assert!(td.damage.as_deref().is_some_and(|d| d.contains("kallsyms size")), "{:?}", td.damage);
            assert!(td.tep.printk.is_empty());
            let r = record_demo(3, b"abc\0", 0xffffffff81000010, 0);
            assert_eq!(show(&mut td, &r), "comm=work state=S|D name=abc msg=ffffffff81000010 ptr=(nil) big=yes");
        }
        // A size that fits is skipped as before.
        let td = TracingData::parse(&good).unwrap();
        assert!(td.damage.is_none() && !td.tep.printk.is_empty());
    }

    #[test]
    fn hostile_tracing_data_is_an_error_not_a_panic() {
        let good = sample_data();
        for n in 0..good.len() {
            let _ = TracingData::parse(&good[..n]);
        }
        assert!(TracingData::parse(&good[..good.len() - 1]).is_err());
        let mut huge = good.clone();
        // A system name followed by an absurd event count and size.
        let at = huge.windows(5).position(|w| w == b"test\0").unwrap() + 5;
        huge[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        huge[at + 4..at + 12].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(TracingData::parse(&huge).is_err());
        let mut bad = good.clone();
        bad[0] = 0;
        assert!(TracingData::parse(&bad).is_err());
        // Every single-byte corruption: Ok or Err, never a panic.
        for i in 0..good.len() {
            let mut v = good.clone();
            v[i] ^= 0x5a;
            if let Ok(mut td) = TracingData::parse(&v) {
                let _ = show(&mut td, &record_demo(3, b"abc\0", 0, 0));
            }
        }
    }
}
