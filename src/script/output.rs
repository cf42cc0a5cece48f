//! The printing thread. `perf script` spends most of its time on callchain
//! lines; pstitch splits the work so that both halves run at once:
//!
//! ```text
//!  reading side (caller's thread)          printing side (own thread)
//!  records, ordering, threads and maps     symbols, inline frames, srclines
//!  text of sample lines ──────┐            ┌─> text copied through
//!  FrameJob where a line goes ┴─ Batch ───>┴─> FramePrinter fills the line
//!                                 (channel)     output buffer ──> writer
//! ```
//!
//! A batch is the reading side's text plus the jobs, each at its byte
//! position in the text; the printing side copies the text up to a job,
//! prints the job, and so on. DSO table changes travel as jobs too, so the
//! printing side sees the table as it was when each line was left. Batches
//! go through a bounded channel (memory stays bounded; the reading side
//! waits when the printer falls behind), and their buffers come back for
//! reuse. A write error (a closed pipe) stops the printer; the reading side
//! learns of it at its next batch and stops too.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use super::callchain::{FrameJob, FramePrinter};
use crate::machine::dsos::DsoUpdate;
use crate::symbols::{SymbolConfig, Symbolizer};

/// Something the printing side does at a position in the text.
pub enum Job {
    Frame(FrameJob),
    Dso(Box<DsoUpdate>),
}

/// Text and the jobs at their positions in it.
#[derive(Default)]
struct Batch {
    text: Vec<u8>,
    jobs: Vec<(usize, Job)>,
}

enum Msg {
    Batch(Batch),
    /// Write out everything so far and say how that went.
    Flush(SyncSender<std::io::Result<()>>),
}

/// Text past this size goes to the printer.
const BATCH_TEXT: usize = 256 * 1024;
/// As do this many jobs.
const BATCH_JOBS: usize = 16 * 1024;
/// The printer writes when it has this much.
const WRITE_AT: usize = 1 << 20;
/// Batches in flight.
const IN_FLIGHT: usize = 4;

/// The reading side's end.
pub struct Output {
    jobs: Vec<(usize, Job)>,
    to_printer: Option<SyncSender<Msg>>,
    recycled: Receiver<Batch>,
    failed: Arc<AtomicBool>,
    printer: Option<JoinHandle<()>>,
}

impl Output {
    /// Starts the printer thread writing to `out`, with a symbolizer of its
    /// own made from `config` and `build_ids`.
    pub fn start<W: Write + Send + 'static>(out: W, config: SymbolConfig, build_ids: Vec<(Vec<u8>, Vec<u8>)>) -> Output {
        let (to_printer, from_reader) = sync_channel::<Msg>(IN_FLIGHT);
        let (recycle, recycled) = sync_channel::<Batch>(IN_FLIGHT + 2);
        let failed = Arc::new(AtomicBool::new(false));
        let flag = failed.clone();
        let printer = std::thread::Builder::new()
            .name("pstitch-print".into())
            .spawn(move || {
                let mut symbolizer = Symbolizer::new(config);
                symbolizer.set_build_id_pairs(build_ids);
                print_loop(out, FramePrinter::new(symbolizer), from_reader, recycle, flag)
            })
            .expect("spawning the printer thread");
        Output { jobs: Vec::new(), to_printer: Some(to_printer), recycled, failed, printer: Some(printer) }
    }

    /// Leaves `job` at position `at` of the text.
    pub fn push(&mut self, at: usize, job: Job) {
        self.jobs.push((at, job));
    }

    /// Whether `text` (the reading side's buffer) should go now.
    pub fn full(&self, text: &[u8]) -> bool {
        text.len() >= BATCH_TEXT || self.jobs.len() >= BATCH_JOBS
    }

    /// Whether writing failed (the reading side should stop).
    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    /// Hands `text` and the jobs to the printer; `text` comes back empty.
    pub fn send(&mut self, text: &mut Vec<u8>) {
        let mut next = self.recycled.try_recv().unwrap_or_default();
        next.text.clear();
        next.jobs.clear();
        std::mem::swap(text, &mut next.text);
        std::mem::swap(&mut self.jobs, &mut next.jobs);
        if let Some(tx) = &self.to_printer {
            // A printer that is gone has failed; `flush` reports it.
            let _ = tx.send(Msg::Batch(next));
        }
    }

    /// Sends `text` and waits until everything is written.
    pub fn flush(&mut self, text: &mut Vec<u8>) -> std::io::Result<()> {
        self.send(text);
        let (tx, rx) = sync_channel(1);
        let sent = self.to_printer.as_ref().is_some_and(|p| p.send(Msg::Flush(tx)).is_ok());
        let answer = if sent { rx.recv().ok() } else { None };
        answer.unwrap_or_else(|| Err(std::io::Error::other("the printer thread stopped")))
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        self.to_printer = None;
        if let Some(p) = self.printer.take() {
            let _ = p.join();
        }
    }
}

fn print_loop<W: Write>(mut out: W, mut printer: FramePrinter, from_reader: Receiver<Msg>, recycle: SyncSender<Batch>, failed: Arc<AtomicBool>) {
    let mut buf: Vec<u8> = Vec::with_capacity(WRITE_AT + BATCH_TEXT);
    let mut error: Option<std::io::Error> = None;
    while let Ok(msg) = from_reader.recv() {
        match msg {
            Msg::Batch(mut batch) => {
                if error.is_none() {
                    let mut from = 0;
                    for (at, job) in batch.jobs.drain(..) {
                        buf.extend_from_slice(&batch.text[from..at]);
                        from = at;
                        match job {
                            Job::Frame(f) => printer.print(&mut buf, &f),
                            Job::Dso(u) => printer.update_dso(*u),
                        }
                    }
                    buf.extend_from_slice(&batch.text[from..]);
                    if buf.len() >= WRITE_AT {
                        write(&mut out, &mut buf, &mut error, &failed, false);
                    }
                }
                let _ = recycle.try_send(batch);
            }
            Msg::Flush(reply) => {
                write(&mut out, &mut buf, &mut error, &failed, true);
                let answer = match &error {
                    None => Ok(()),
                    Some(e) => Err(std::io::Error::new(e.kind(), e.to_string())),
                };
                let _ = reply.send(answer);
            }
        }
    }
    if error.is_none() {
        write(&mut out, &mut buf, &mut error, &failed, true);
    }
}

fn write<W: Write>(out: &mut W, buf: &mut Vec<u8>, error: &mut Option<std::io::Error>, failed: &AtomicBool, flush: bool) {
    if error.is_some() {
        buf.clear();
        return;
    }
    let r = out.write_all(buf).and_then(|_| if flush { out.flush() } else { Ok(()) });
    buf.clear();
    if let Err(e) = r {
        *error = Some(e);
        failed.store(true, Ordering::Relaxed);
    }
}
