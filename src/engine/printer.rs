//! The printing threads. `perf script` spends most of its time on
//! callchain lines; the work is split so that its parts run at once:
//!
//! ```text
//!  reading side (caller's thread)     formatter (thread)          copier (thread)
//!  records, ordering, threads, maps   symbols, inline frames,     kept texts
//!  text of sample lines ──────┐       srclines: the text of  ┌──> text copied through
//!  a job where a line goes ───┴─ Batch ─> each new line ─────┴──> lines copied in
//!                              (channel)  added to the batch       output ──> writer
//!                                  ^
//!            loader (thread) ──────┘ symbol tables, by request number
//! ```
//!
//! A batch is the reading side's text plus the jobs, each at its byte
//! position in the text. The formatter ([`Format`], the program's) goes
//! through the jobs and formats the lines whose text the copier does not
//! keep yet, adding them to the batch; the copier copies the text up to a
//! job, then the job's line (kept, or the next new one), and so on (see
//! [`super::kept`] for how the two agree on what is kept). Rare jobs
//! travel in the same order as the lines, so the formatter sees the
//! program's tables as they were when each line was left.
//!
//! Invariants:
//! - Order: batches go reading side -> formatter -> copier through FIFO
//!   channels, and every job is handled in its batch's order, so the
//!   output is the reading side's text with the lines in place, whatever
//!   the threads' timing. [`Threads::Single`] runs the same per-batch
//!   code on the caller's thread at each send: the same bytes.
//! - Mirrors: map slots ([`MAP_SLOTS`]) are set by `Map` jobs before the
//!   first frame that names them; the reading side remembers what it sent
//!   per slot and the formatter holds the same table. Frames in no map
//!   whose code came before are sent as `Unmapped` and skipped by the
//!   formatter only when both it and the copier know, from the first such
//!   frame's [`FrameText`], that the copier kept its text.
//! - Memory: the channels are bounded (the reading side waits when the
//!   others fall behind, see [`Throttle`]), and batch buffers come back
//!   for reuse.
//! - Failure: a write error (a closed pipe) stops the copier and sets a
//!   flag; the reading side sees it at its next batch and stops too. A
//!   formatter that ends (even by a panic) releases the reading side.
//! - Loads: a load is asked by number; equal requests get equal answers
//!   whenever they are made, so answers taken early (prefetched) or late
//!   print the same.

use std::collections::HashMap;
use std::hash::Hash;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use super::Threads;
use super::kept::{FrameText, KeptTexts, next_new_text};
use super::sys::thread_cpu;

/// The formatting side of the printer: the program's knowledge of what a
/// line says. Made on, and used on, the formatter's thread only.
pub trait Format: 'static {
    /// What an address falls in; frames name one by slot.
    type Map: Copy + PartialEq + Send + 'static;
    /// A rare job: a table change, symbols loaded by the reading side.
    type Other: Send + 'static;
    /// What the loader answers.
    type Loaded: Send + 'static;

    /// The slot (below [`MAP_SLOTS`]) a map is sent in.
    fn slot(map: &Self::Map) -> u8;

    /// Where the text of the line with this code, map and address is; a
    /// new text goes onto `new_texts` (see [`super::kept::KeptIndex::add`]).
    fn format(&mut self, new_texts: &mut Vec<u8>, code: u8, map: Option<&Self::Map>, ip: u64) -> FrameText;

    fn other(&mut self, other: Self::Other);

    /// A load the reading side asked for object `object`.
    fn loaded(&mut self, object: u32, loaded: Self::Loaded);

    /// Moves the names numbered since the last batch to `out`
    /// ([`super::kept::KeptIndex::take_names`]).
    fn take_names(&mut self, out: &mut Vec<u8>);

    /// The reading side asked for everything printed so far (at pauses of
    /// the input and at its end): a moment to keep what later runs can
    /// use (a process that exits may not drop the formatter).
    fn flushed(&mut self) {}
}

/// The loader: the program's slow loads (symbol tables), on a thread of
/// their own, and work to do between them.
pub trait Load: 'static {
    type Request: Clone + Eq + Hash + Send + 'static;
    type Loaded: Send + 'static;

    /// Answers a request; `ahead`: the loader will be given idle time
    /// (threaded), so it may keep work for [`Load::step`].
    fn load(&mut self, request: &Self::Request, ahead: bool) -> Self::Loaded;

    /// How to wait for the next request.
    fn wait(&mut self) -> Wait;

    /// A piece of the idle-time work.
    fn step(&mut self);
}

/// How the loader waits for a request (see [`Load::wait`]).
pub enum Wait {
    /// Nothing to do meanwhile: block.
    Block,
    /// The idle-time work is far enough ahead: wait a little first.
    Briefly,
    /// Take a request if one is there, else step.
    No,
}

/// The low bit of a frame job's code: the line shows the address.
pub const CODE_SHOWS_IP: u8 = 1;
/// The high bit of a frame job's code: the sample line's own address (no
/// tab, no newline), not a callchain line.
pub const CODE_SAMPLE_IP: u8 = 1 << 7;

/// Maps are sent once into one of this many slots (chosen by
/// [`Format::slot`]) and named by slot in the frames after that.
pub const MAP_SLOTS: usize = 64;
const NO_MAP: u8 = u8::MAX;

/// One entry of a batch: 16 bytes, as there is one per callchain line.
/// `at` is the position in the batch's text where it applies.
#[derive(Debug, Clone, Copy)]
struct Job {
    at: u32,
    kind: JobKind,
    /// Frame: the map slot ([`NO_MAP`]: no map). Map: the slot to set.
    slot: u8,
    /// Frame: the program's code for fields, style and such.
    code: u8,
    /// Frame: how many more times the same line comes right after this
    /// one. A callchain whose frame pointers loop repeats one address up
    /// to the stack limit (half the lines of a large system-wide recording).
    repeat: u8,
    /// Frame: the address. Map, Other, Loading: the index in the batch's
    /// list.
    arg: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum JobKind {
    Frame,
    /// A frame in no map whose code came before in no map (see
    /// [`Unmapped`]).
    Unmapped,
    Map,
    Other,
    /// The answer to a load request, to be given to [`Format::loaded`].
    Loading,
}

/// Frames in no map (a third of the lines of a large system-wide
/// recording: frame-pointer walks through code without frame pointers)
/// print the same text after the address for given fields. The formatter
/// places the first of them for each code; if the copier keeps that text,
/// the later ones go by the formatter without a look and the copier
/// prints the text it kept. Both sides tell from the first one's
/// [`FrameText`] whether it was kept, so they agree on what comes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Unmapped {
    /// None yet for this code.
    Unseen,
    /// The text the copier keeps, at this offset of its store (the
    /// formatter knows only that it is kept).
    Kept(u32),
    /// Not kept: placed one by one like other frames.
    Placed,
}

/// Text, and the jobs at their positions in it.
struct Batch<M, O> {
    text: Vec<u8>,
    jobs: Vec<Job>,
    maps: Vec<M>,
    others: Vec<O>,
    /// Loading jobs: (object, request number).
    loads: Vec<(u32, u64)>,
    /// Where the text of each frame job's line is (from the formatter),
    /// and the new texts, end to end.
    frames: Vec<FrameText>,
    new_texts: Vec<u8>,
    /// Names the formatter numbered for this batch's texts.
    names: Vec<u8>,
}

impl<M, O> Batch<M, O> {
    /// A batch with room for what the reading side puts in one (a sample
    /// may take its text or its jobs past the limits), so that it does not
    /// grow by copying.
    fn with_room() -> Batch<M, O> {
        Batch {
            text: Vec::with_capacity(BATCH_TEXT + BATCH_TEXT / 4),
            jobs: Vec::with_capacity(BATCH_JOBS + BATCH_JOBS / 4),
            maps: Vec::new(),
            others: Vec::new(),
            loads: Vec::new(),
            frames: Vec::with_capacity(BATCH_JOBS + BATCH_JOBS / 4),
            new_texts: Vec::new(),
            names: Vec::new(),
        }
    }

    fn clear(&mut self) {
        self.text.clear();
        self.jobs.clear();
        self.maps.clear();
        self.others.clear();
        self.loads.clear();
        self.new_texts.clear();
        self.names.clear();
        self.frames.clear();
    }
}

enum Msg<M, O> {
    Batch(Batch<M, O>),
    /// Write out everything so far and say how that went.
    Flush(SyncSender<std::io::Result<()>>),
}

/// Text past this size goes to the formatter.
const BATCH_TEXT: usize = 256 * 1024;
/// As do this many jobs.
const BATCH_JOBS: usize = 16 * 1024;
/// The copier writes when it has this much.
const WRITE_AT: usize = 1 << 20;
/// Batches in flight between the formatter and the copier.
const IN_FLIGHT: usize = 4;
/// Batches the reading side may be ahead of the formatter while the
/// formatter waits for the loader (a large library's symbols take tens of
/// milliseconds): the reading goes on meanwhile.
const AHEAD: usize = 64;
/// Batches the reading side may be ahead otherwise: batches queued are
/// memory held (about 1 MB each), and a formatter that is the slower side
/// gains little from more; but with slack the reading side fills the gaps
/// the other threads leave on the cores. On the DWARF benchmark recording
/// the formatter decodes the units of the libraries' debug files in a
/// burst early on (about 40 ms) and is faster than the reading side after
/// it: with 12 the reading side waited out the burst (84 of its 550 ms,
/// `perf sched timehist`), with 32 it goes on (8-30 ms of waits). Paired
/// runs against 12: 0.92 and 0.97 of the wall time on that recording,
/// 0.91 on the system-wide one; peak RSS +8 and +12 MB (12 rather than 4
/// had been 2% less wall time at the same RSS).
const KEEP_AHEAD: usize = 32;

/// Holds the reading side back to [`KEEP_AHEAD`] batches unless the
/// formatter is waiting for the loader.
#[derive(Default)]
struct Throttle {
    queued: AtomicUsize,
    /// The formatter waits for the loader.
    stalled: AtomicBool,
    lock: Mutex<()>,
    changed: Condvar,
}

impl Throttle {
    /// A batch was sent: waits while too many are queued.
    fn sent(&self, failed: &AtomicBool) {
        let queued = self.queued.fetch_add(1, Ordering::AcqRel);
        if queued > 0 {
            // The formatter has work queued already: where the threads
            // outnumber the free cores, the ones after the reading side
            // (formatter, copier, loader) go first. A yield per batch,
            // ~330 a run; it returns at once if no other thread waits.
            std::thread::yield_now();
        }
        if queued < KEEP_AHEAD {
            return;
        }
        let Ok(mut g) = self.lock.lock() else { return };
        // Timed waits: a formatter that stopped sets `failed`.
        while self.queued.load(Ordering::Acquire) > KEEP_AHEAD && !self.stalled.load(Ordering::Acquire) && !failed.load(Ordering::Relaxed) {
            g = match self.changed.wait_timeout(g, std::time::Duration::from_millis(2)) {
                Ok((g, _)) => g,
                Err(_) => return,
            };
        }
    }

    /// The formatter took a batch.
    fn taken(&self) {
        if self.queued.fetch_sub(1, Ordering::AcqRel) == KEEP_AHEAD + 1 {
            self.wake();
        }
    }

    fn stall(&self, stalled: bool) {
        self.stalled.store(stalled, Ordering::Release);
        if stalled {
            self.wake();
        }
    }

    fn wake(&self) {
        let _g = self.lock.lock();
        self.changed.notify_all();
    }
}

/// Lets the reader go for good when the formatter thread ends.
struct Gone(Arc<Throttle>);

impl Drop for Gone {
    fn drop(&mut self) {
        self.0.stall(true);
    }
}

/// The formatter's state between batches.
struct FormatSide<F: Format> {
    format: F,
    slots: [Option<F::Map>; MAP_SLOTS],
    unmapped: [Unmapped; 256],
}

impl<F: Format> FormatSide<F> {
    fn new(format: F) -> FormatSide<F> {
        FormatSide { format, slots: [None; MAP_SLOTS], unmapped: [Unmapped::Unseen; 256] }
    }

    /// Formats a batch's new lines; `answer(n)` is the loader's answer to
    /// request `n`. After a write error (`stopped`) only the tables are
    /// looked after.
    fn run(&mut self, batch: &mut Batch<F::Map, F::Other>, stopped: bool, answer: &mut dyn FnMut(u64) -> Option<F::Loaded>) {
        let FormatSide { format, slots, unmapped } = self;
        let mut others = batch.others.drain(..);
        let mut loads = batch.loads.iter();
        for job in &batch.jobs {
            match job.kind {
                JobKind::Unmapped if matches!(unmapped[job.code as usize], Unmapped::Kept(_)) => {}
                JobKind::Frame | JobKind::Unmapped if !stopped => {
                    let map = if job.slot == NO_MAP { None } else { slots[job.slot as usize].as_ref() };
                    let at = format.format(&mut batch.new_texts, job.code, map, job.arg);
                    batch.frames.push(at);
                    if job.slot == NO_MAP && unmapped[job.code as usize] == Unmapped::Unseen {
                        unmapped[job.code as usize] = if at.kept() { Unmapped::Kept(0) } else { Unmapped::Placed };
                    }
                    // A repeated line the copier keeps is copied again;
                    // one it does not is made again.
                    if !at.kept() {
                        for _ in 0..job.repeat {
                            let at = format.format(&mut batch.new_texts, job.code, map, job.arg);
                            batch.frames.push(at);
                        }
                    }
                }
                JobKind::Frame | JobKind::Unmapped => {}
                JobKind::Map => slots[job.slot as usize] = Some(batch.maps[job.arg as usize]),
                JobKind::Other => {
                    if let Some(o) = others.next() {
                        format.other(o);
                    }
                }
                // Without an answer (the loader failed) the formatter
                // loads the object itself when it needs it.
                JobKind::Loading => {
                    if let Some(&(object, serial)) = loads.next()
                        && let Some(l) = answer(serial)
                    {
                        format.loaded(object, l);
                    }
                }
            }
        }
        drop(others);
        format.take_names(&mut batch.names);
    }
}

/// The copier's state between batches.
struct CopySide {
    kept: KeptTexts,
    unmapped: [Unmapped; 256],
    buf: Vec<u8>,
    out: Box<dyn Write + Send>,
    error: Option<std::io::Error>,
}

impl CopySide {
    fn new(out: Box<dyn Write + Send>) -> CopySide {
        CopySide { kept: KeptTexts::default(), unmapped: [Unmapped::Unseen; 256], buf: Vec::with_capacity(WRITE_AT + BATCH_TEXT), out, error: None }
    }

    /// Copies a batch into the output: its text with each job's line in
    /// place.
    fn run<M, O>(&mut self, batch: &Batch<M, O>, failed: &AtomicBool) {
        let CopySide { kept, unmapped, buf, error, .. } = self;
        kept.add_names(&batch.names);
        let mut from = 0;
        let mut pos = 0;
        let mut frames = batch.frames.iter();
        for job in &batch.jobs {
            if error.is_some() {
                break;
            }
            let at = job.at as usize;
            // Between the lines of a callchain there is no text.
            if at != from {
                buf.extend_from_slice(&batch.text[from..at]);
                from = at;
            }
            let place = match job.kind {
                JobKind::Map | JobKind::Other | JobKind::Loading => continue,
                JobKind::Unmapped if let Unmapped::Kept(off) = unmapped[job.code as usize] => FrameText::stored(off),
                // The formatter placed every other frame (unless writing
                // failed).
                _ => match frames.next() {
                    Some(&place) => place,
                    None => break,
                },
            };
            if job.slot == NO_MAP && unmapped[job.code as usize] == Unmapped::Unseen {
                unmapped[job.code as usize] = match place.offset() {
                    Some(off) => Unmapped::Kept(off),
                    None if place.keeps() => Unmapped::Kept(kept.kept_len()),
                    None => Unmapped::Placed,
                };
            }
            let (show_ip, callchain) = (job.code & CODE_SHOWS_IP != 0, job.code & CODE_SAMPLE_IP == 0);
            let start = buf.len();
            kept.print(buf, job.arg, show_ip, callchain, place, next_new_text(&batch.new_texts, &mut pos, place));
            if place.kept() {
                let end = buf.len();
                for _ in 0..job.repeat {
                    buf.extend_from_within(start..end);
                }
            } else {
                for _ in 0..job.repeat {
                    let Some(&place) = frames.next() else { break };
                    kept.print(buf, job.arg, show_ip, callchain, place, next_new_text(&batch.new_texts, &mut pos, place));
                }
            }
        }
        if error.is_none() {
            buf.extend_from_slice(&batch.text[from..]);
            if buf.len() >= WRITE_AT {
                self.write(failed, false);
            }
        }
    }

    fn write(&mut self, failed: &AtomicBool, flush: bool) {
        if self.error.is_some() {
            self.buf.clear();
            return;
        }
        let out = &mut self.out;
        let r = out.write_all(&self.buf).and_then(|_| if flush { out.flush() } else { Ok(()) });
        self.buf.clear();
        if let Err(e) = r {
            self.error = Some(e);
            failed.store(true, Ordering::Relaxed);
        }
    }

    /// Writes out everything; how writing went.
    fn flush(&mut self, failed: &AtomicBool) -> std::io::Result<()> {
        self.write(failed, true);
        match &self.error {
            None => Ok(()),
            Some(e) => Err(std::io::Error::new(e.kind(), e.to_string())),
        }
    }
}

/// The threads and their ends, in threaded mode.
struct Threaded<M, O, R> {
    to_printer: Option<SyncSender<Msg<M, O>>>,
    recycled: Receiver<Batch<M, O>>,
    /// CPU time of the formatter and the copier up to the last flush, in ns.
    printer_cpu: Arc<[AtomicU64; 2]>,
    formatter: Option<JoinHandle<()>>,
    copier: Option<JoinHandle<()>>,
    /// The loader thread: symbol tables of large libraries take long to
    /// read, and the reading side is the busier one.
    to_loader: Option<Sender<(u64, R)>>,
    loader: Option<JoinHandle<()>>,
    throttle: Arc<Throttle>,
}

/// Everything on the caller's thread.
struct Inline<F: Format, L: Load> {
    format: FormatSide<F>,
    copy: CopySide,
    load: L,
    /// Requests by number, answered when the formatter comes to them.
    requests: HashMap<u64, L::Request>,
    spare: Option<Batch<F::Map, F::Other>>,
}

enum Mode<F: Format, L: Load> {
    Threaded(Threaded<F::Map, F::Other, L::Request>),
    Inline(Box<Inline<F, L>>),
}

/// The reading side's end of the printer.
pub struct Printer<F: Format, L: Load<Loaded = F::Loaded>> {
    batch: Batch<F::Map, F::Other>,
    /// What the formatter's map slots hold.
    slots: [Option<F::Map>; MAP_SLOTS],
    /// The codes of the frames in no map sent so far.
    unmapped_seen: [bool; 256],
    failed: Arc<AtomicBool>,
    /// Requests made so far.
    requests: u64,
    /// Requests made ahead of need ([`Printer::prefetch`]), not yet used.
    prefetched: HashMap<L::Request, u64>,
    mode: Mode<F, L>,
}

impl<F: Format, L: Load<Loaded = F::Loaded>> Printer<F, L> {
    /// Starts the printer writing to `out`: the formatter, the copier and
    /// the loader on threads of their own, or (`Threads::Single`) all on
    /// the caller's. `format` and `load` are made where they will run.
    pub fn start<W: Write + Send + 'static>(
        out: W,
        threads: Threads,
        format: impl FnOnce() -> F + Send + 'static,
        load: impl FnOnce() -> L + Send + 'static,
    ) -> Printer<F, L> {
        let failed = Arc::new(AtomicBool::new(false));
        let mode = match threads {
            Threads::Single => Mode::Inline(Box::new(Inline {
                format: FormatSide::new(format()),
                copy: CopySide::new(Box::new(out)),
                load: load(),
                requests: HashMap::new(),
                spare: None,
            })),
            Threads::Parallel => Mode::Threaded(spawn(Box::new(out), failed.clone(), format, load)),
        };
        Printer {
            batch: Batch::with_room(),
            slots: [None; MAP_SLOTS],
            unmapped_seen: [false; 256],
            failed,
            requests: 0,
            prefetched: HashMap::new(),
            mode,
        }
    }

    /// Leaves a line at position `at` of the text.
    #[inline]
    pub fn frame(&mut self, at: usize, ip: u64, map: Option<&F::Map>, code: u8) {
        let at = at as u32;
        let slot = match map {
            None if self.unmapped_seen[code as usize] => return self.push_job(at, JobKind::Unmapped, NO_MAP, code, ip),
            None => {
                self.unmapped_seen[code as usize] = true;
                NO_MAP
            }
            Some(m) => {
                let slot = F::slot(m);
                if self.slots[slot as usize].as_ref() != Some(m) {
                    self.slots[slot as usize] = Some(*m);
                    let arg = self.batch.maps.len() as u64;
                    self.batch.maps.push(*m);
                    self.batch.jobs.push(Job { at, kind: JobKind::Map, slot, code: 0, repeat: 0, arg });
                }
                slot
            }
        };
        self.push_job(at, JobKind::Frame, slot, code, ip);
    }

    /// [`Printer::frame`] for a line in the map of the line just left.
    #[inline]
    pub fn frame_same_map(&mut self, at: usize, ip: u64, code: u8) {
        if let Some(last) = self.batch.jobs.last() {
            debug_assert!(last.kind == JobKind::Frame && last.slot != NO_MAP);
            self.push_job(at as u32, JobKind::Frame, last.slot, code, ip);
        }
    }

    /// A frame job, or one more repeat of the job before if it is the same.
    #[inline]
    fn push_job(&mut self, at: u32, kind: JobKind, slot: u8, code: u8, ip: u64) {
        if let Some(last) = self.batch.jobs.last_mut()
            && (last.kind, last.at, last.slot, last.code, last.arg) == (kind, at, slot, code, ip)
            && last.repeat < u8::MAX
        {
            last.repeat += 1;
            return;
        }
        self.batch.jobs.push(Job { at, kind, slot, code, repeat: 0, arg: ip });
    }

    /// Has the loader load `request` for `object` (unless it already is);
    /// the formatter takes the answer at position `at`.
    pub fn load(&mut self, at: usize, object: u32, request: L::Request) {
        if let Some(serial) = self.prefetched.remove(&request).or_else(|| self.request(request)) {
            let arg = self.batch.loads.len() as u64;
            self.batch.loads.push((object, serial));
            self.batch.jobs.push(Job { at: at as u32, kind: JobKind::Loading, slot: 0, code: 0, repeat: 0, arg });
        }
    }

    /// Has the loader start on `request` before a line needs it (it is
    /// idle while the reading side works on other things). Nothing in
    /// single-threaded mode.
    pub fn prefetch(&mut self, request: L::Request) {
        if matches!(self.mode, Mode::Threaded(_))
            && !self.prefetched.contains_key(&request)
            && let Some(serial) = self.request(request.clone())
        {
            self.prefetched.insert(request, serial);
        }
    }

    /// Jobs in the batch being filled.
    #[cfg(test)]
    pub fn jobs_queued(&self) -> usize {
        self.batch.jobs.len()
    }

    /// Requests made so far.
    #[cfg(test)]
    pub fn requests_made(&self) -> u64 {
        self.requests
    }

    /// Whether `request` was made ahead of need.
    pub fn is_prefetched(&self, request: &L::Request) -> bool {
        self.prefetched.contains_key(request)
    }

    /// Makes a request; its number.
    fn request(&mut self, request: L::Request) -> Option<u64> {
        let serial = self.requests;
        match &mut self.mode {
            Mode::Threaded(t) => t.to_loader.as_ref()?.send((serial, request)).ok()?,
            Mode::Inline(i) => {
                i.requests.insert(serial, request);
            }
        }
        self.requests += 1;
        Some(serial)
    }

    /// Leaves a rare job at position `at` of the text.
    pub fn other(&mut self, at: usize, o: F::Other) {
        let arg = self.batch.others.len() as u64;
        self.batch.others.push(o);
        self.batch.jobs.push(Job { at: at as u32, kind: JobKind::Other, slot: 0, code: 0, repeat: 0, arg });
    }

    /// Whether `text` (the reading side's buffer) should go now.
    #[inline]
    pub fn full(&self, text: &[u8]) -> bool {
        text.len() >= BATCH_TEXT || self.batch.jobs.len() >= BATCH_JOBS
    }

    /// Whether writing failed (the reading side should stop).
    #[inline]
    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    /// Hands `text` and the jobs to the printer; `text` comes back empty.
    pub fn send(&mut self, text: &mut Vec<u8>) {
        match &mut self.mode {
            Mode::Threaded(t) => {
                let mut next = t.recycled.try_recv().unwrap_or_else(|_| Batch::with_room());
                next.clear();
                std::mem::swap(&mut self.batch, &mut next);
                std::mem::swap(text, &mut next.text);
                // A printer that is gone has failed; `flush` reports it.
                if let Some(tx) = &t.to_printer
                    && tx.send(Msg::Batch(next)).is_ok()
                {
                    t.throttle.sent(&self.failed);
                }
            }
            Mode::Inline(i) => {
                let mut next = i.spare.take().unwrap_or_else(Batch::with_room);
                next.clear();
                std::mem::swap(&mut self.batch, &mut next);
                std::mem::swap(text, &mut next.text);
                let Inline { format, copy, load, requests, .. } = &mut **i;
                let stopped = self.failed.load(Ordering::Relaxed);
                format.run(&mut next, stopped, &mut |serial| requests.remove(&serial).map(|r| load.load(&r, false)));
                copy.run(&next, &self.failed);
                i.spare = Some(next);
            }
        }
    }

    /// CPU time of the formatter and copier threads up to the last
    /// [`Printer::flush`] (nothing in single-threaded mode: it is the
    /// caller's).
    pub fn printer_cpu(&self) -> std::time::Duration {
        match &self.mode {
            Mode::Threaded(t) => std::time::Duration::from_nanos(t.printer_cpu.iter().map(|c| c.load(Ordering::Relaxed)).sum()),
            Mode::Inline(_) => std::time::Duration::ZERO,
        }
    }

    /// Sends `text` and waits until everything is written.
    pub fn flush(&mut self, text: &mut Vec<u8>) -> std::io::Result<()> {
        self.send(text);
        match &mut self.mode {
            Mode::Threaded(t) => {
                let (tx, rx) = sync_channel(1);
                let sent = t.to_printer.as_ref().is_some_and(|p| p.send(Msg::Flush(tx)).is_ok());
                let answer = if sent { rx.recv().ok() } else { None };
                answer.unwrap_or_else(|| Err(std::io::Error::other("the printer thread stopped")))
            }
            Mode::Inline(i) => {
                i.format.format.flushed();
                i.copy.flush(&self.failed)
            }
        }
    }
}

impl<F: Format, L: Load<Loaded = F::Loaded>> Drop for Printer<F, L> {
    fn drop(&mut self) {
        if let Mode::Threaded(t) = &mut self.mode {
            t.to_printer = None;
            t.to_loader = None;
            // The formatter ends first, and its end ends the copier.
            for h in [t.formatter.take(), t.copier.take()].into_iter().flatten() {
                let _ = h.join();
            }
            if let Some(l) = t.loader.take() {
                let _ = l.join();
            }
        }
    }
}

/// Starts the formatter, the copier and the loader.
fn spawn<F: Format, L: Load<Loaded = F::Loaded>>(
    out: Box<dyn Write + Send>,
    failed: Arc<AtomicBool>,
    format: impl FnOnce() -> F + Send + 'static,
    load: impl FnOnce() -> L + Send + 'static,
) -> Threaded<F::Map, F::Other, L::Request> {
    let (to_printer, from_reader) = sync_channel::<Msg<F::Map, F::Other>>(AHEAD);
    let throttle = Arc::new(Throttle::default());
    let (to_copier, from_formatter) = sync_channel::<Msg<F::Map, F::Other>>(IN_FLIGHT);
    let (recycle, recycled) = sync_channel(KEEP_AHEAD + IN_FLIGHT + 2);
    let printer_cpu = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
    let (to_loader, requests) = channel::<(u64, L::Request)>();
    let (loaded, from_loader) = channel::<(u64, F::Loaded)>();
    let loader = std::thread::Builder::new()
        .name("pstitch-load".into())
        .spawn(move || load_loop(load(), &requests, &loaded))
        .expect("spawning the loader thread");
    let (format_throttle, format_failed, format_cpu) = (throttle.clone(), failed.clone(), printer_cpu.clone());
    let formatter = std::thread::Builder::new()
        .name("pstitch-format".into())
        // Demangling a name at libiberty's limits nests ~1,000 deep; the
        // main thread's 8 MiB, not a spawned thread's 2 MiB default.
        .stack_size(8 << 20)
        .spawn(move || {
            // However the formatter ends (a panic too), the reader must
            // not wait for it to take batches.
            let _gone = Gone(format_throttle.clone());
            let ends = Ends { from_reader, to_copier, from_loader, failed: format_failed, throttle: format_throttle };
            format_loop(FormatSide::new(format()), ends, &format_cpu[0])
        })
        .expect("spawning the formatter thread");
    let copy_cpu = printer_cpu.clone();
    let copier = std::thread::Builder::new()
        .name("pstitch-print".into())
        .spawn(move || copy_loop(CopySide::new(out), from_formatter, recycle, failed, &copy_cpu[1]))
        .expect("spawning the copier thread");
    Threaded {
        to_printer: Some(to_printer),
        recycled,
        printer_cpu,
        formatter: Some(formatter),
        copier: Some(copier),
        to_loader: Some(to_loader),
        loader: Some(loader),
        throttle,
    }
}

/// What the formatter thread talks to.
struct Ends<M, O, A> {
    from_reader: Receiver<Msg<M, O>>,
    to_copier: SyncSender<Msg<M, O>>,
    from_loader: Receiver<(u64, A)>,
    failed: Arc<AtomicBool>,
    throttle: Arc<Throttle>,
}

fn format_loop<F: Format>(mut side: FormatSide<F>, ends: Ends<F::Map, F::Other, F::Loaded>, cpu: &AtomicU64) {
    let Ends { from_reader, to_copier, from_loader, failed, throttle } = ends;
    // Answers to requests made ahead of need, by request number.
    let mut early: HashMap<u64, F::Loaded> = HashMap::new();
    while let Ok(msg) = from_reader.recv() {
        match msg {
            Msg::Batch(mut batch) => {
                throttle.taken();
                let stopped = failed.load(Ordering::Relaxed);
                side.run(&mut batch, stopped, &mut |serial| {
                    throttle.stall(true);
                    let answer = answer(&mut early, &from_loader, serial);
                    throttle.stall(false);
                    answer
                });
                // A copier that is gone has failed; the reading side learns
                // of it from the flag or at its flush.
                let _ = to_copier.send(Msg::Batch(batch));
            }
            Msg::Flush(reply) => {
                side.format.flushed();
                cpu.store(thread_cpu().as_nanos() as u64, Ordering::Relaxed);
                if let Err(std::sync::mpsc::SendError(Msg::Flush(reply))) = to_copier.send(Msg::Flush(reply)) {
                    let _ = reply.send(Err(std::io::Error::other("the printer thread stopped")));
                }
            }
        }
    }
}

fn copy_loop<M, O>(mut side: CopySide, from_formatter: Receiver<Msg<M, O>>, recycle: SyncSender<Batch<M, O>>, failed: Arc<AtomicBool>, cpu: &AtomicU64) {
    while let Ok(msg) = from_formatter.recv() {
        match msg {
            Msg::Batch(batch) => {
                side.run(&batch, &failed);
                let _ = recycle.try_send(batch);
            }
            Msg::Flush(reply) => {
                let answer = side.flush(&failed);
                cpu.store(thread_cpu().as_nanos() as u64, Ordering::Relaxed);
                let _ = reply.send(answer);
            }
        }
    }
    if side.error.is_none() {
        side.write(&failed, true);
    }
}

/// The loader thread: answers requests in order and, between them, does
/// the loader's idle-time work.
fn load_loop<L: Load>(mut load: L, requests: &Receiver<(u64, L::Request)>, loaded: &Sender<(u64, L::Loaded)>) {
    use std::sync::mpsc::{RecvTimeoutError, TryRecvError};
    loop {
        let request = match load.wait() {
            Wait::Block => match requests.recv() {
                Ok(r) => Some(r),
                Err(_) => return,
            },
            Wait::Briefly => match requests.recv_timeout(std::time::Duration::from_millis(2)) {
                Ok(r) => Some(r),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => return,
            },
            Wait::No => match requests.try_recv() {
                Ok(r) => Some(r),
                Err(TryRecvError::Empty) => None,
                Err(TryRecvError::Disconnected) => return,
            },
        };
        match request {
            Some((serial, r)) => {
                let answer = load.load(&r, true);
                if loaded.send((serial, answer)).is_err() {
                    return;
                }
            }
            None => load.step(),
        }
    }
}

/// The loader's answer to request `serial`: kept from before, or the next
/// ones received until it comes (keeping those that come before it).
/// `None` if the loader is gone.
fn answer<T>(early: &mut HashMap<u64, T>, from_loader: &Receiver<(u64, T)>, serial: u64) -> Option<T> {
    if let Some(a) = early.remove(&serial) {
        return Some(a);
    }
    loop {
        let (n, a) = from_loader.recv().ok()?;
        if n == serial {
            return Some(a);
        }
        early.insert(n, a);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reading_side_runs_far_ahead_only_while_the_formatter_waits_for_the_loader() {
        use std::time::Duration;
        let t = Arc::new(Throttle::default());
        let failed = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicUsize::new(0));
        let (t2, f2, d2) = (t.clone(), failed.clone(), done.clone());
        let reader = std::thread::spawn(move || {
            for _ in 0..KEEP_AHEAD + 10 {
                t2.sent(&f2);
                d2.fetch_add(1, Ordering::SeqCst);
            }
        });
        let settle = |n: usize| {
            for _ in 0..500 {
                if done.load(Ordering::SeqCst) == n {
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            std::thread::sleep(Duration::from_millis(20));
            assert_eq!(done.load(Ordering::SeqCst), n);
        };
        // KEEP_AHEAD batches go; the next one waits for the formatter.
        settle(KEEP_AHEAD);
        t.taken();
        settle(KEEP_AHEAD + 1);
        // The formatter waits for the loader: the reader goes on.
        t.stall(true);
        settle(KEEP_AHEAD + 10);
        reader.join().unwrap();
        t.stall(false);
        // A formatter that stopped does not hold the reader.
        failed.store(true, Ordering::SeqCst);
        t.sent(&failed);
        failed.store(false, Ordering::SeqCst);
        // Nor one whose thread ended (a panic included).
        t.stall(false);
        let t3 = t.clone();
        let _ = std::thread::spawn(move || {
            let _gone = Gone(t3);
            panic!("formatter panics");
        })
        .join();
        for _ in 0..3 {
            t.sent(&failed);
        }
    }

    /// Answers to requests made ahead of need wait until asked for.
    #[test]
    fn loader_answers_are_taken_by_number() {
        let (tx, rx) = std::sync::mpsc::channel();
        let mut early = std::collections::HashMap::new();
        for (n, a) in [(0, "prefetched"), (1, "also"), (2, "needed")] {
            tx.send((n, a)).expect("open");
        }
        assert_eq!(answer(&mut early, &rx, 2), Some("needed"));
        assert_eq!(early.len(), 2);
        assert_eq!(answer(&mut early, &rx, 0), Some("prefetched"));
        drop(tx);
        assert_eq!(answer(&mut early, &rx, 1), Some("also"));
        assert_eq!(answer(&mut early, &rx, 3), None, "the loader is gone");
    }
}
