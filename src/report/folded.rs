//! Folded stacks: perf's `stackcollapse.py` (after Brendan Gregg's
//! `stackcollapse-perf.pl`), one line per distinct stack with its count,
//! sorted by the stack:
//!
//! ```text
//! cwork;__libc_start_call_main;main;run_stages;hash_buffer;mix64 6
//! \___/ \_______ frames, root first (inline frames included) ______/ \ samples
//!  comm (optionally -pid/tid, spaces as '_')
//! ```
//!
//! A frame is its symbol name, `[unknown]` without one, with `;` replaced
//! by `:`; `--tidy-java` trims Java signatures and `--kernel` marks kernel
//! frames with `_[k]`. A sample without a callchain is its comm alone (the
//! script looks only at the callchain list, which perf always passes).
//!
//! Samples are counted by their frame numbers; the text of a stack is made
//! once, at the end.

use std::collections::HashMap;
use std::io::Write;

use super::stacks::{FrameId, FrameTable, StackSample, StackSink};

/// `stackcollapse.py`'s options (after `--`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FoldOptions {
    /// `--include-tid`: the root is `comm-tid` (`comm-pid/tid` with pid).
    pub include_tid: bool,
    /// `--include-pid`: the root is `comm-pid`.
    pub include_pid: bool,
    /// `--no-comm` clears it: no root frame for the thread.
    pub include_comm: bool,
    /// `--tidy-java`.
    pub tidy_java: bool,
    /// `--kernel`: frames in `[kernel.kallsyms]` end in `_[k]`.
    pub annotate_kernel: bool,
}

impl Default for FoldOptions {
    fn default() -> FoldOptions {
        FoldOptions { include_tid: false, include_pid: false, include_comm: true, tidy_java: false, annotate_kernel: false }
    }
}

impl FoldOptions {
    /// The script's own checks of its options, with its messages.
    pub fn check(&self) -> Result<(), &'static str> {
        if self.include_tid && !self.include_comm {
            return Err("requesting tid but not comm is invalid");
        }
        if self.include_pid && !self.include_comm {
            return Err("requesting pid but not comm is invalid");
        }
        Ok(())
    }
}

/// A stack: its root text and its frames, leaf first.
type Stack = (Box<str>, Box<[FrameId]>);

/// Counts samples by stack.
pub struct Folded {
    opts: FoldOptions,
    /// (root text, frames leaf first) -> samples.
    counts: HashMap<Stack, u64, foldhash::fast::RandomState>,
    /// Frame texts, made once per frame.
    names: Vec<Option<Box<str>>>,
    root: String,
}

impl Folded {
    pub fn new(opts: FoldOptions) -> Folded {
        Folded { opts, counts: HashMap::default(), names: Vec::new(), root: String::new() }
    }

    fn frame_text(&mut self, frames: &FrameTable, id: FrameId) {
        let i = id as usize;
        if self.names.len() <= i {
            self.names.resize(i + 1, None);
        }
        if self.names[i].is_none() {
            self.names[i] = Some(tidy_function_name(frames.name(id), frames.dso(id), &self.opts).into());
        }
    }

    /// The folded lines, sorted, each `stack count` without a newline.
    pub fn lines(&self) -> Vec<String> {
        let mut lines: Vec<(String, u64)> = self
            .counts
            .iter()
            .map(|((root, frames), n)| {
                let root = self.opts.include_comm.then_some(&**root);
                let names = frames.iter().rev().map(|&f| self.names[f as usize].as_deref().unwrap_or("[unknown]"));
                let parts: Vec<&str> = root.into_iter().chain(names).collect();
                (parts.join(";"), *n)
            })
            .collect();
        // Python's `sorted` on str: code point order, which is UTF-8 byte
        // order. Equal texts (a ';' in a name made `:`) add up.
        lines.sort();
        let mut out: Vec<String> = Vec::with_capacity(lines.len());
        let mut last: Option<(String, u64)> = None;
        for (s, n) in lines {
            match &mut last {
                Some((t, m)) if *t == s => *m += n,
                _ => {
                    if let Some((t, m)) = last.take() {
                        out.push(format!("{t} {m}"));
                    }
                    last = Some((s, n));
                }
            }
        }
        if let Some((t, m)) = last {
            out.push(format!("{t} {m}"));
        }
        out
    }

    /// Writes the lines as the script prints them.
    pub fn write(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let mut w = std::io::BufWriter::with_capacity(1 << 16, out);
        for l in self.lines() {
            w.write_all(l.as_bytes())?;
            w.write_all(b"\n")?;
        }
        w.flush()
    }
}

impl StackSink for Folded {
    fn sample(&mut self, frames: &FrameTable, s: &StackSample<'_>) {
        for &f in s.callchain {
            self.frame_text(frames, f);
        }
        self.root.clear();
        if self.opts.include_comm {
            self.root.push_str(&s.comm.replace(' ', "_"));
            let mut sep = '-';
            if self.opts.include_pid {
                self.root.push(sep);
                self.root.push_str(&s.pid.to_string());
                sep = '/';
            }
            if self.opts.include_tid {
                self.root.push(sep);
                self.root.push_str(&s.tid.to_string());
            }
        }
        // Most samples repeat a stack already counted.
        let key = (std::mem::take(&mut self.root).into_boxed_str(), Box::<[FrameId]>::from(s.callchain));
        *self.counts.entry(key).or_default() += 1;
    }
}

/// The script's `tidy_function_name`.
fn tidy_function_name(sym: Option<&str>, dso: Option<&str>, opts: &FoldOptions) -> String {
    let mut sym = sym.unwrap_or("[unknown]").replace(';', ":");
    if opts.tidy_java {
        // Lorg/mozilla/javascript/MemberBox;.<init>(Ljava/lang/reflect/Method;)V
        //   -> org/mozilla/javascript/MemberBox:.init
        sym = sym.replace(['<', '>'], "");
        // `sym.find('/')` is true unless the name starts with '/', which
        // it cannot when it starts with 'L'.
        if sym.starts_with('L') {
            sym.remove(0);
        }
        if let Some(p) = sym.find('(') {
            sym.truncate(p);
        }
    }
    if opts.annotate_kernel && dso == Some("[kernel.kallsyms]") {
        sym.push_str("_[k]");
    }
    sym
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_tidied_as_the_script_does() {
        let o = FoldOptions::default();
        assert_eq!(tidy_function_name(None, None, &o), "[unknown]");
        assert_eq!(tidy_function_name(Some("a;b"), None, &o), "a:b");
        let java = FoldOptions { tidy_java: true, ..o };
        assert_eq!(
            tidy_function_name(Some("Lorg/mozilla/javascript/MemberBox;.<init>(Ljava/lang/reflect/Method;)V"), None, &java),
            "org/mozilla/javascript/MemberBox:.init"
        );
        let k = FoldOptions { annotate_kernel: true, ..o };
        assert_eq!(tidy_function_name(Some("schedule"), Some("[kernel.kallsyms]"), &k), "schedule_[k]");
        assert_eq!(tidy_function_name(Some("main"), Some("/bin/x"), &k), "main");
    }

    #[test]
    fn option_checks() {
        assert!(FoldOptions { include_tid: true, include_comm: false, ..FoldOptions::default() }.check().is_err());
        assert!(FoldOptions { include_pid: true, include_comm: false, ..FoldOptions::default() }.check().is_err());
        assert!(FoldOptions { include_pid: true, include_tid: true, ..FoldOptions::default() }.check().is_ok());
    }
}
