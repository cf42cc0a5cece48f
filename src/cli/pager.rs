//! The pager: in a terminal, perf script's output goes through a pager, as
//! perf's `setup_pager` does it.
//!
//! - only when standard output is a terminal (never into a file or pipe),
//!   and not with `pstitch --no-pager` (perf's `--no-pager`);
//! - the program: `PERF_PAGER`, else `PAGER`, else `/usr/bin/pager` or
//!   `/usr/bin/less` if executable, else none; empty or `cat` means none;
//!   it runs as `sh -c "$PAGER"`, with `LESS=FRSX` unless `LESS` is set
//!   (quit at once if the output fits the screen, keep colours, chop long
//!   lines, leave the screen as it was);
//! - the messages that would go to a terminal's stderr go into the pager
//!   too, after the output (perf sends its stderr there when it is a
//!   terminal);
//! - pstitch waits for the pager before it exits.
//!
//! A reader that quits early (`q` in less) closes the pipe: pstitch stops
//! quietly, as with `| head`.

use std::io::IsTerminal;
use std::process::{Child, Command, Stdio};

/// A running pager and the pipe into it.
pub struct Pager {
    child: Child,
    pipe: std::fs::File,
}

/// The pager perf would run (`None`: no pager).
fn program() -> Option<String> {
    let env = |k: &str| std::env::var(k).ok();
    let executable = |p: &str| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let pager = env("PERF_PAGER").or_else(|| env("PAGER")).or_else(|| {
        ["/usr/bin/pager", "/usr/bin/less"].into_iter().find(|p| executable(p)).map(str::to_string)
    })?;
    (!pager.is_empty() && pager != "cat").then_some(pager)
}

impl Pager {
    /// Starts the pager if standard output is a terminal and one is
    /// configured.
    pub fn start(disabled: bool) -> Option<Pager> {
        if disabled || !std::io::stdout().is_terminal() {
            return None;
        }
        let pager = program()?;
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(&pager).stdin(Stdio::piped());
        if std::env::var_os("LESS").is_none() {
            cmd.env("LESS", "FRSX");
        }
        let mut child = cmd.spawn().ok()?;
        let stdin = child.stdin.take()?;
        let pipe = std::fs::File::from(std::os::fd::OwnedFd::from(stdin));
        Some(Pager { child, pipe })
    }

    /// A handle on the pipe for the output.
    pub fn output(&self) -> Option<std::fs::File> {
        self.pipe.try_clone().ok()
    }

    /// Where messages go: the pager when standard error is a terminal
    /// too (perf redirects it there), else standard error.
    pub fn messages(&self) -> Option<&std::fs::File> {
        std::io::stderr().is_terminal().then_some(&self.pipe)
    }

    /// Closes the pipe and waits for the reader to quit.
    pub fn finish(self) {
        let Pager { mut child, pipe } = self;
        drop(pipe);
        let _ = child.wait();
    }
}
