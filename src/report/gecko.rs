//! perf's `gecko.py`: the samples as a Gecko profile, the format the
//! Firefox Profiler (profiler.firefox.com) reads.
//!
//! One thread entry per tid, in the order threads first had a sample, each
//! with tables that intern what repeats:
//!
//! ```text
//! stringTable  ["main (in /bin/cwork)", ...]      frame texts: "sym (in dso)"
//! frameTable   [[string, false, 0, null, null, null, null, category, null], ...]
//! stackTable   [[prefix stack or null, frame], ...]    a stack is its leaf frame
//!                                                      on top of a prefix stack
//! samples      [[stack, time in ms, 0], ...]
//! ```
//!
//! Frames without a symbol are left out; a sample without a callchain is
//! its own `symbol (in dso)` (`[unknown]` for what is missing). A frame is
//! in the kernel category if its text names `kallsyms` or a `vmlinux`, or
//! ends in `.ko)`. Times are microseconds cut, in milliseconds; the thread's
//! name is its latest comm.

use std::collections::HashMap;
use std::io::{self, Write};

use super::json::JsonWriter;
use super::stacks::{FrameId, FrameTable, StackSample, StackSink};

/// The colors the profiler knows for a category (`--user-color`,
/// `--kernel-color`).
pub const COLORS: [&str; 8] = ["yellow", "blue", "purple", "green", "orange", "red", "grey", "magenta"];

/// `gecko.py`'s options.
#[derive(Debug, Clone)]
pub struct GeckoOptions {
    pub user_color: String,
    pub kernel_color: String,
    /// The `meta.product` text: what `uname -op` prints.
    pub product: String,
}

impl Default for GeckoOptions {
    fn default() -> GeckoOptions {
        GeckoOptions { user_color: "yellow".into(), kernel_color: "orange".into(), product: String::new() }
    }
}

const USER: u8 = 0;
const KERNEL: u8 = 1;

#[derive(Default)]
struct Thread {
    comm: String,
    pid: u32,
    tid: u32,
    /// (stack, time in ms).
    samples: Vec<(u32, f64)>,
    /// (string, category).
    frame_table: Vec<(u32, u8)>,
    strings: Vec<u32>,
    string_map: HashMap<u32, u32, foldhash::fast::RandomState>,
    /// (prefix, frame).
    stack_table: Vec<(Option<u32>, u32)>,
    stack_map: HashMap<(u32, Option<u32>), u32, foldhash::fast::RandomState>,
    /// Frame ids by global text id.
    frame_map: HashMap<u32, u32, foldhash::fast::RandomState>,
}

/// The profile being built.
pub struct Gecko {
    opts: GeckoOptions,
    threads: Vec<Thread>,
    by_tid: HashMap<u32, usize, foldhash::fast::RandomState>,
    start_time: Option<f64>,
    /// Frame texts, global: interned once, numbered.
    texts: Vec<Box<str>>,
    text_ids: HashMap<Box<str>, u32, foldhash::fast::RandomState>,
    /// Per frame of the frame table: its text id, or none (no symbol).
    frame_texts: Vec<Option<Option<u32>>>,
    stack: Vec<u32>,
}

impl Gecko {
    pub fn new(opts: GeckoOptions) -> Gecko {
        Gecko {
            opts,
            threads: Vec::new(),
            by_tid: HashMap::default(),
            start_time: None,
            texts: Vec::new(),
            text_ids: HashMap::default(),
            frame_texts: Vec::new(),
            stack: Vec::new(),
        }
    }

    fn text_id(&mut self, text: String) -> u32 {
        if let Some(&id) = self.text_ids.get(text.as_str()) {
            return id;
        }
        let id = self.texts.len() as u32;
        let text: Box<str> = text.into();
        self.texts.push(text.clone());
        self.text_ids.insert(text, id);
        id
    }

    /// The text of a callchain frame: `sym (in dso)`, none without a symbol.
    fn frame_text(&mut self, frames: &FrameTable, id: FrameId) -> Option<u32> {
        let i = id as usize;
        if self.frame_texts.len() <= i {
            self.frame_texts.resize(i + 1, None);
        }
        if let Some(t) = self.frame_texts[i] {
            return t;
        }
        let t = frames.name(id).map(|n| format!("{n} (in {})", frames.dso(id).unwrap_or("None")));
        let t = t.map(|t| self.text_id(t));
        self.frame_texts[i] = Some(t);
        t
    }

    /// Writes the profile as `json.dump(..., indent=2)` does.
    pub fn write(&self, out: impl Write) -> io::Result<()> {
        let mut w = JsonWriter::new(io::BufWriter::with_capacity(1 << 16, out), Some(2));
        w.begin_object()?;
        w.key("meta")?;
        w.begin_object()?;
        w.key_int("interval", 1)?;
        w.key_int("processType", 0)?;
        w.key_str("product", &self.opts.product)?;
        w.key_int("stackwalk", 1)?;
        w.key_int("debug", 0)?;
        w.key_int("gcpoison", 0)?;
        w.key_int("asyncstack", 1)?;
        w.key("startTime")?;
        match self.start_time {
            Some(t) => w.float(t)?,
            None => w.null()?,
        }
        w.key("shutdownTime")?;
        w.null()?;
        w.key_int("version", 24)?;
        w.key("presymbolicated")?;
        w.bool(true)?;
        w.key("categories")?;
        w.begin_array()?;
        for (name, color) in [("User", &self.opts.user_color), ("Kernel", &self.opts.kernel_color)] {
            w.begin_object()?;
            w.key_str("name", name)?;
            w.key_str("color", color)?;
            w.key("subcategories")?;
            w.begin_array()?;
            w.str("Other")?;
            w.end_array()?;
            w.end_object()?;
        }
        w.end_array()?;
        w.key_empty_array("markerSchema")?;
        w.end_object()?;
        w.key_empty_array("libs")?;
        w.key("threads")?;
        w.begin_array()?;
        for t in &self.threads {
            self.write_thread(&mut w, t)?;
        }
        w.end_array()?;
        for k in ["processes", "pausedRanges"] {
            w.key_empty_array(k)?;
        }
        w.end_object()?;
        w.into_inner().flush()
    }

    fn write_thread<W: Write>(&self, w: &mut JsonWriter<W>, t: &Thread) -> io::Result<()> {
        fn schema<W: Write>(w: &mut JsonWriter<W>, keys: &[&str]) -> io::Result<()> {
            w.key("schema")?;
            w.begin_object()?;
            for (i, k) in keys.iter().enumerate() {
                w.key_int(k, i as i64)?;
            }
            w.end_object()
        }
        w.begin_object()?;
        w.key_int("tid", t.tid.into())?;
        w.key_int("pid", t.pid.into())?;
        w.key_str("name", &t.comm)?;
        w.key("markers")?;
        w.begin_object()?;
        schema(w, &["name", "startTime", "endTime", "phase", "category", "data"])?;
        w.key_empty_array("data")?;
        w.end_object()?;

        w.key("samples")?;
        w.begin_object()?;
        schema(w, &["stack", "time", "responsiveness"])?;
        w.key("data")?;
        w.begin_array()?;
        for &(stack, time) in &t.samples {
            w.begin_array()?;
            w.int(stack.into())?;
            w.float(time)?;
            w.int(0)?;
            w.end_array()?;
        }
        w.end_array()?;
        w.end_object()?;

        w.key("frameTable")?;
        w.begin_object()?;
        schema(w, &["location", "relevantForJS", "innerWindowID", "implementation", "optimizations", "line", "column", "category", "subcategory"])?;
        w.key("data")?;
        w.begin_array()?;
        for &(string, category) in &t.frame_table {
            w.begin_array()?;
            w.int(string.into())?;
            w.bool(false)?;
            w.int(0)?;
            for _ in 0..4 {
                w.null()?;
            }
            w.int(category.into())?;
            w.null()?;
            w.end_array()?;
        }
        w.end_array()?;
        w.end_object()?;

        w.key("stackTable")?;
        w.begin_object()?;
        schema(w, &["prefix", "frame"])?;
        w.key("data")?;
        w.begin_array()?;
        for &(prefix, frame) in &t.stack_table {
            w.begin_array()?;
            match prefix {
                Some(p) => w.int(p.into())?,
                None => w.null()?,
            }
            w.int(frame.into())?;
            w.end_array()?;
        }
        w.end_array()?;
        w.end_object()?;

        w.key("stringTable")?;
        w.begin_array()?;
        for &s in &t.strings {
            w.str(&self.texts[s as usize])?;
        }
        w.end_array()?;
        w.key_int("registerTime", 0)?;
        w.key("unregisterTime")?;
        w.null()?;
        w.key_str("processType", "default")?;
        w.end_object()
    }
}

/// The script's category of a frame text.
fn category(text: &str) -> u8 {
    if text.contains("kallsyms") || text.contains("/vmlinux") || text.ends_with(".ko)") { KERNEL } else { USER }
}

impl Thread {
    /// `_intern_frame`: the thread's frame for a text (and its string).
    fn frame(&mut self, text_id: u32, text: &str) -> u32 {
        if let Some(&f) = self.frame_map.get(&text_id) {
            return f;
        }
        let f = self.frame_table.len() as u32;
        self.frame_map.insert(text_id, f);
        let next = self.strings.len() as u32;
        let s = *self.string_map.entry(text_id).or_insert_with(|| {
            self.strings.push(text_id);
            next
        });
        self.frame_table.push((s, category(text)));
        f
    }

    /// `_intern_stack`.
    fn stack(&mut self, frame: u32, prefix: Option<u32>) -> u32 {
        let next = self.stack_table.len() as u32;
        *self.stack_map.entry((frame, prefix)).or_insert_with(|| {
            self.stack_table.push((prefix, frame));
            next
        })
    }
}

impl StackSink for Gecko {
    fn wants_ip_frame(&self) -> bool {
        true
    }

    fn sample(&mut self, frames: &FrameTable, s: &StackSample<'_>) {
        let time = (s.time / 1000) as f64 / 1000.0;
        // `if not start_time`: a first time of 0 is taken again.
        if self.start_time.is_none_or(|t| t == 0.0) {
            self.start_time = Some(time);
        }
        let mut stack = std::mem::take(&mut self.stack);
        stack.clear();
        if !s.callchain.is_empty() {
            for &f in s.callchain.iter().rev() {
                if let Some(t) = self.frame_text(frames, f) {
                    stack.push(t);
                }
            }
        } else {
            let (func, dso) = match s.ip_frame {
                Some(f) => (frames.name(f), frames.dso(f)),
                None => (None, None),
            };
            let text = format!("{} (in {})", func.unwrap_or("[unknown]"), dso.unwrap_or("[unknown]"));
            stack.push(self.text_id(text));
        }
        let i = match self.by_tid.get(&s.tid) {
            Some(&i) => i,
            None => {
                self.threads.push(Thread { comm: s.comm.to_string(), pid: s.pid, tid: s.tid, ..Thread::default() });
                self.by_tid.insert(s.tid, self.threads.len() - 1);
                self.threads.len() - 1
            }
        };
        let t = &mut self.threads[i];
        if t.comm != s.comm {
            t.comm = s.comm.to_string();
        }
        let mut prefix = None;
        for &text in &stack {
            let f = t.frame(text, &self.texts[text as usize]);
            prefix = Some(t.stack(f, prefix));
        }
        if let Some(p) = prefix {
            t.samples.push((p, time));
        }
        self.stack = stack;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories() {
        assert_eq!(category("schedule (in [kernel.kallsyms])"), KERNEL);
        assert_eq!(category("f (in /usr/lib/debug/vmlinux)"), KERNEL);
        assert_eq!(category("f (in /lib/modules/x/kvm.ko)"), KERNEL);
        assert_eq!(category("main (in /bin/cwork)"), USER);
    }
}
