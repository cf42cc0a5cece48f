//! The printing threads. `perf script` spends most of its time on callchain
//! lines; pstitch splits the work so that its parts run at once:
//!
//! ```text
//!  reading side (caller's thread)    formatter (thread)          copier (thread)
//!  records, ordering, threads, maps  symbols, inline frames,     kept texts
//!  text of sample lines ──────┐      srclines: the text of  ┌──> text copied through
//!  FrameJob where a line goes ┴─ Batch ─> each new line ────┴──> lines copied in
//!                              (channel)  added to the batch      output ──> writer
//! ```
//!
//! A batch is the reading side's text plus the jobs, each at its byte
//! position in the text. The formatter goes through the jobs and formats
//! the lines whose text the copier does not keep yet (the first time an
//! address comes, in the order perf formats them), adding them to the
//! batch; the copier copies the text up to a job, then the job's line
//! (kept, or the next new one), and so on. DSO table changes travel as jobs
//! too, so the formatter sees the table as it was when each line was left.
//! Batches go through bounded channels (memory stays bounded; the reading
//! side waits when the others fall behind), and their buffers come back
//! for reuse. A write error (a closed pipe) stops the copier; the reading
//! side learns of it at its next batch and stops too.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use super::callchain::{FrameCopier, FrameFormatter, FrameText, LineStyle, code_shows_ip, code_style};
use crate::machine::Map;
use crate::machine::dsos::DsoUpdate;
use crate::symbols::{ShippedDso, SymbolConfig, Symbolizer};

/// One entry of a batch: 16 bytes, as there is one per callchain line.
/// `at` is the position in the batch's text where it applies.
#[derive(Debug, Clone, Copy)]
struct Job {
    at: u32,
    kind: JobKind,
    /// Frame: the map slot ([`NO_MAP`]: no map). Map: the slot to set.
    slot: u8,
    /// Frame: fields, style and cookie flag ([`super::callchain::FrameJob::code`]).
    code: u8,
    /// Frame: how many more times the same line comes right after this
    /// one. A callchain whose frame pointers loop repeats one address up
    /// to the stack limit (half the lines of a large system-wide recording).
    repeat: u8,
    /// Frame: the address. Map, Other: the index in the batch's list.
    arg: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum JobKind {
    Frame,
    /// A frame in no map whose fields came before in no map (see
    /// [`Unmapped`]).
    Unmapped,
    Map,
    Other,
}

/// Frames in no map (a third of the lines of a large system-wide
/// recording: frame-pointer walks through code without frame pointers)
/// print the same text after the address for given fields. The formatter
/// places the first of them for each set of fields; if the copier keeps
/// that text, the later ones go by the formatter without a look and the
/// copier prints the text it kept. Both sides tell from the first one's
/// [`FrameText`] whether it was kept, so they agree on what comes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Unmapped {
    /// None yet for these fields.
    Unseen,
    /// The text the copier keeps, at this offset of its store
    /// (the formatter knows only that it is kept).
    Kept(u32),
    /// Not kept: placed one by one like other frames.
    Placed,
}

const NO_MAP: u8 = u8::MAX;

/// Maps are sent once into one of these slots (chosen by the map's start)
/// and named by slot in the frames after that: both sides keep the same
/// table.
const MAP_SLOTS: usize = 64;

fn map_slot(m: &Map) -> u8 {
    ((m.start >> 12).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58) as u8
}

/// The rare jobs.
pub enum Other {
    Dso(Box<DsoUpdate>),
    /// A DSO's symbols, loaded by the reading side when a line first needed
    /// them (the reading side has time to spare, the printer has not).
    Loaded(crate::machine::DsoId, Box<ShippedDso>),
    /// A DSO's symbols, coming from the loader thread as the answer to
    /// request number `.1` (the printer keeps answers that come early).
    Loading(crate::machine::DsoId, u64),
}

/// What the loader thread needs to load a DSO's symbols: its name and
/// build-id (see [`Symbolizer::load_file`]). Equal requests get equal
/// answers, whenever they are made.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LoadRequest {
    pub long_name: String,
    pub kind: crate::machine::DsoKind,
    pub build_id: Option<Vec<u8>>,
}

impl LoadRequest {
    /// The request for a DSO as the machine knows it now.
    pub fn of(dso: &crate::machine::Dso) -> LoadRequest {
        LoadRequest { long_name: dso.name.to_string(), kind: dso.kind, build_id: dso.build_id.clone() }
    }
}

/// Text, and the jobs at their positions in it.
#[derive(Default)]
struct Batch {
    text: Vec<u8>,
    jobs: Vec<Job>,
    maps: Vec<Map>,
    others: Vec<Other>,
    /// Where the text of each frame job's line is (from the formatter),
    /// and the new texts, end to end.
    frames: Vec<FrameText>,
    new_texts: Vec<u8>,
    /// DSO names the formatter numbered for this batch's texts.
    names: Vec<u8>,
}

impl Batch {
    /// A batch with room for what the reading side puts in one (a sample
    /// may take its text or its jobs past the limits), so that it does not
    /// grow by copying.
    fn with_room() -> Batch {
        Batch {
            text: Vec::with_capacity(BATCH_TEXT + BATCH_TEXT / 4),
            jobs: Vec::with_capacity(BATCH_JOBS + BATCH_JOBS / 4),
            frames: Vec::with_capacity(BATCH_JOBS + BATCH_JOBS / 4),
            ..Batch::default()
        }
    }
}

enum Msg {
    Batch(Batch),
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
const AHEAD: usize = 32;
/// Batches the reading side may be ahead otherwise: batches queued are
/// memory held (about 1 MB each), and a formatter that is the slower side
/// gains little from more; but with some slack the reading side fills
/// the gaps the other threads leave on the cores (12 rather than 4: 2% less
/// wall time on the benchmark recording, the same peak RSS).
const KEEP_AHEAD: usize = 12;

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

/// The reading side's end.
pub struct Output {
    batch: Batch,
    /// What the printer's map slots hold.
    slots: [Option<Map>; MAP_SLOTS],
    /// The fields (line codes) of the frames in no map sent so far.
    unmapped_seen: [bool; 256],
    to_printer: Option<SyncSender<Msg>>,
    recycled: Receiver<Batch>,
    failed: Arc<AtomicBool>,
    /// CPU time of the formatter and the copier up to the last flush, in ns.
    printer_cpu: Arc<[AtomicU64; 2]>,
    formatter: Option<JoinHandle<()>>,
    copier: Option<JoinHandle<()>>,
    /// The loader thread: symbol tables of large libraries take long to
    /// read, and the reading side is the busier one.
    to_loader: Option<std::sync::mpsc::Sender<(u64, LoadRequest)>>,
    loader: Option<JoinHandle<()>>,
    /// Requests sent so far.
    requests: u64,
    /// Requests sent ahead of need ([`Output::prefetch`]), not yet used.
    prefetched: std::collections::HashMap<LoadRequest, u64>,
    throttle: Arc<Throttle>,
}

/// CPU time the calling thread has used.
pub fn thread_cpu() -> std::time::Duration {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    std::time::Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

impl Output {
    /// Starts the loader, the formatter (with a symbolizer of its own made
    /// from `config` and `build_ids`) and the copier writing to `out`.
    pub fn start<W: Write + Send + 'static>(out: W, config: SymbolConfig, build_ids: Vec<(Vec<u8>, Vec<u8>)>) -> Output {
        let (to_printer, from_reader) = sync_channel::<Msg>(AHEAD);
        let throttle = Arc::new(Throttle::default());
        let format_throttle = throttle.clone();
        let (to_copier, from_formatter) = sync_channel::<Msg>(IN_FLIGHT);
        let (recycle, recycled) = sync_channel::<Batch>(KEEP_AHEAD + IN_FLIGHT + 2);
        let failed = Arc::new(AtomicBool::new(false));
        let flag = failed.clone();
        let printer_cpu = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
        let (format_cpu, copy_cpu) = (printer_cpu.clone(), printer_cpu.clone());
        let format_flag = failed.clone();
        let (to_loader, requests) = std::sync::mpsc::channel::<(u64, LoadRequest)>();
        let (loaded, from_loader) = std::sync::mpsc::channel::<(u64, ShippedDso)>();
        let loader_config = config.clone();
        let loader_ids = build_ids.clone();
        let loader = std::thread::Builder::new()
            .name("pstitch-load".into())
            .spawn(move || {
                let mut symbolizer = Symbolizer::new(loader_config);
                symbolizer.set_build_id_pairs(loader_ids);
                load_loop(&mut symbolizer, &requests, &loaded);
            })
            .expect("spawning the loader thread");
        let formatter = std::thread::Builder::new()
            .name("pstitch-format".into())
            // Demangling a name at libiberty's limits nests ~1,000 deep; the
            // main thread's 8 MiB, not a spawned thread's 2 MiB default.
            .stack_size(8 << 20)
            .spawn(move || {
                // However the formatter ends (a panic too), the reader must
                // not wait for it to take batches.
                let _gone = Gone(format_throttle.clone());
                let mut symbolizer = Symbolizer::new(config);
                symbolizer.set_build_id_pairs(build_ids);
                let ends = Ends { from_reader, to_copier, from_loader, failed: format_flag, throttle: format_throttle };
                format_loop(FrameFormatter::new(symbolizer), ends, &format_cpu[0])
            })
            .expect("spawning the formatter thread");
        let copier = std::thread::Builder::new()
            .name("pstitch-print".into())
            .spawn(move || copy_loop(out, from_formatter, recycle, flag, &copy_cpu[1]))
            .expect("spawning the copier thread");
        Output {
            batch: Batch::with_room(),
            slots: [None; MAP_SLOTS],
            unmapped_seen: [false; 256],
            to_printer: Some(to_printer),
            recycled,
            failed,
            printer_cpu,
            formatter: Some(formatter),
            copier: Some(copier),
            to_loader: Some(to_loader),
            loader: Some(loader),
            requests: 0,
            prefetched: Default::default(),
            throttle,
        }
    }

    /// Leaves a line at position `at` of the text.
    /// (`code`: [`super::callchain::FrameJob::code`].)
    #[inline]
    pub fn frame(&mut self, at: usize, ip: u64, map: Option<&Map>, code: u8) {
        let at = at as u32;
        let slot = match map {
            None if self.unmapped_seen[code as usize] => return self.push_job(at, JobKind::Unmapped, NO_MAP, code, ip),
            None => {
                self.unmapped_seen[code as usize] = true;
                NO_MAP
            }
            Some(m) => {
                let slot = map_slot(m);
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

    /// [`Output::frame`] for a line in the map of the line just left.
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

    /// Has the loader thread load `dso`'s symbols (unless it already is);
    /// the printer installs them at position `at`.
    pub fn load(&mut self, at: usize, dso: crate::machine::DsoId, request: LoadRequest) {
        if let Some(serial) = self.prefetched.remove(&request).or_else(|| self.request(request)) {
            self.other(at, Other::Loading(dso, serial));
        }
    }

    /// Has the loader thread load a DSO's symbols before a line needs them
    /// (the loader is idle while the reading side loads the kernel's).
    pub fn prefetch(&mut self, request: LoadRequest) {
        if !self.prefetched.contains_key(&request)
            && let Some(serial) = self.request(request.clone())
        {
            self.prefetched.insert(request, serial);
        }
    }

    /// Whether `request` was sent ahead of need.
    pub fn is_prefetched(&self, request: &LoadRequest) -> bool {
        self.prefetched.contains_key(request)
    }

    /// Sends a request to the loader thread; its number.
    fn request(&mut self, request: LoadRequest) -> Option<u64> {
        let serial = self.requests;
        self.to_loader.as_ref()?.send((serial, request)).ok()?;
        self.requests += 1;
        Some(serial)
    }

    /// Leaves a rare job at position `at` of the text.
    pub fn other(&mut self, at: usize, o: Other) {
        let arg = self.batch.others.len() as u64;
        self.batch.others.push(o);
        self.batch.jobs.push(Job { at: at as u32, kind: JobKind::Other, slot: 0, code: 0, repeat: 0, arg });
    }

    /// Whether `text` (the reading side's buffer) should go now.
    pub fn full(&self, text: &[u8]) -> bool {
        text.len() >= BATCH_TEXT || self.batch.jobs.len() >= BATCH_JOBS
    }

    /// Whether writing failed (the reading side should stop).
    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    /// Hands `text` and the jobs to the printer; `text` comes back empty.
    pub fn send(&mut self, text: &mut Vec<u8>) {
        let mut next = self.recycled.try_recv().unwrap_or_else(|_| Batch::with_room());
        next.text.clear();
        next.jobs.clear();
        next.maps.clear();
        next.others.clear();
        next.new_texts.clear();
        next.names.clear();
        next.frames.clear();
        std::mem::swap(&mut self.batch, &mut next);
        std::mem::swap(text, &mut next.text);
        if let Some(tx) = &self.to_printer {
            // A printer that is gone has failed; `flush` reports it.
            if tx.send(Msg::Batch(next)).is_ok() {
                self.throttle.sent(&self.failed);
            }
        }
    }

    /// CPU time of the formatter and copier threads up to the last
    /// [`Output::flush`].
    pub fn printer_cpu(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.printer_cpu.iter().map(|c| c.load(Ordering::Relaxed)).sum())
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
        self.to_loader = None;
        // The formatter ends first, and its end ends the copier.
        for t in [self.formatter.take(), self.copier.take()].into_iter().flatten() {
            let _ = t.join();
        }
        if let Some(l) = self.loader.take() {
            let _ = l.join();
        }
    }
}

impl Job {
    /// A frame job's line style.
    fn style(&self) -> LineStyle {
        code_style(self.code)
    }

    /// A frame job's map, from the slots as they are at the job.
    fn map<'a>(&self, slots: &'a [Option<Map>; MAP_SLOTS]) -> Option<&'a Map> {
        if self.slot == NO_MAP { None } else { slots[self.slot as usize].as_ref() }
    }
}

/// What the formatter thread talks to.
struct Ends {
    from_reader: Receiver<Msg>,
    to_copier: SyncSender<Msg>,
    from_loader: Receiver<(u64, ShippedDso)>,
    failed: Arc<AtomicBool>,
    throttle: Arc<Throttle>,
}

fn format_loop(mut formatter: FrameFormatter, ends: Ends, cpu: &AtomicU64) {
    let Ends { from_reader, to_copier, from_loader, failed, throttle } = ends;
    let mut slots: [Option<Map>; MAP_SLOTS] = [None; MAP_SLOTS];
    // Answers to requests made ahead of need, by request number.
    let mut early: std::collections::HashMap<u64, ShippedDso> = Default::default();
    let mut unmapped = [Unmapped::Unseen; 256];
    while let Ok(msg) = from_reader.recv() {
        match msg {
            Msg::Batch(mut batch) => {
                throttle.taken();
                // After a write error only the DSO table is still looked after.
                let stopped = failed.load(Ordering::Relaxed);
                let mut others = batch.others.drain(..);
                for job in &batch.jobs {
                    match job.kind {
                        JobKind::Unmapped if matches!(unmapped[job.code as usize], Unmapped::Kept(_)) => {}
                        JobKind::Frame | JobKind::Unmapped if !stopped => {
                            let map = job.map(&slots);
                            let at = formatter.format_job(&mut batch.new_texts, job.code, map, job.arg);
                            batch.frames.push(at);
                            if job.slot == NO_MAP && unmapped[job.code as usize] == Unmapped::Unseen {
                                unmapped[job.code as usize] = if at.kept() { Unmapped::Kept(0) } else { Unmapped::Placed };
                            }
                            // A repeated line the copier keeps is copied
                            // again; one it does not is made again.
                            if !at.kept() {
                                for _ in 0..job.repeat {
                                    let at = formatter.format_job(&mut batch.new_texts, job.code, map, job.arg);
                                    batch.frames.push(at);
                                }
                            }
                        }
                        JobKind::Frame | JobKind::Unmapped => {}
                        JobKind::Map => slots[job.slot as usize] = Some(batch.maps[job.arg as usize]),
                        JobKind::Other => match others.next() {
                            Some(Other::Dso(u)) => formatter.update_dso(*u),
                            Some(Other::Loaded(dso, shipped)) => formatter.install(dso, *shipped),
                            // Without an answer (the loader failed) the
                            // formatter loads the DSO itself when it needs it.
                            Some(Other::Loading(dso, serial)) => {
                                throttle.stall(true);
                                let shipped = answer(&mut early, &from_loader, serial);
                                throttle.stall(false);
                                if let Some(shipped) = shipped {
                                    formatter.install(dso, shipped);
                                }
                            }
                            None => {}
                        },
                    }
                }
                drop(others);
                formatter.take_names(&mut batch.names);
                // A copier that is gone has failed; the reading side learns
                // of it from the flag or at its flush.
                let _ = to_copier.send(Msg::Batch(batch));
            }
            Msg::Flush(reply) => {
                cpu.store(thread_cpu().as_nanos() as u64, Ordering::Relaxed);
                if let Err(std::sync::mpsc::SendError(Msg::Flush(reply))) = to_copier.send(Msg::Flush(reply)) {
                    let _ = reply.send(Err(std::io::Error::other("the printer thread stopped")));
                }
            }
        }
    }
}

/// The loader thread: loads DSOs as asked and, between requests, decodes
/// the DWARF units of their addr2line sessions ahead (oldest DSO first; see
/// `symbols::a2l::ahead`).
fn load_loop(symbolizer: &mut Symbolizer, requests: &Receiver<(u64, LoadRequest)>, loaded: &std::sync::mpsc::Sender<(u64, ShippedDso)>) {
    use crate::symbols::a2l::ahead::Step;
    use std::sync::mpsc::{RecvTimeoutError, TryRecvError};
    let mut decoders: std::collections::VecDeque<crate::symbols::a2l::ahead::Decoder> = Default::default();
    // Decoders in a row that were far enough ahead.
    let mut idle = 0;
    loop {
        let request = if decoders.is_empty() {
            match requests.recv() {
                Ok(r) => Some(r),
                Err(_) => return,
            }
        } else if idle >= decoders.len() {
            idle = 0;
            match requests.recv_timeout(std::time::Duration::from_millis(2)) {
                Ok(r) => Some(r),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => return,
            }
        } else {
            match requests.try_recv() {
                Ok(r) => Some(r),
                Err(TryRecvError::Empty) => None,
                Err(TryRecvError::Disconnected) => return,
            }
        };
        if let Some((serial, r)) = request {
            let mut shipped = symbolizer.load_file_prepared(&r.long_name, r.kind, r.build_id.as_deref());
            decoders.extend(shipped.take_decoder());
            if loaded.send((serial, shipped)).is_err() {
                return;
            }
            continue;
        }
        let Some(d) = decoders.front_mut() else { continue };
        match d.step() {
            Step::Worked => idle = 0,
            Step::Done => {
                decoders.pop_front();
            }
            Step::Ahead => {
                idle += 1;
                decoders.rotate_left(1);
            }
        }
    }
}

fn copy_loop<W: Write>(mut out: W, from_formatter: Receiver<Msg>, recycle: SyncSender<Batch>, failed: Arc<AtomicBool>, cpu: &AtomicU64) {
    let mut copier = FrameCopier::new();
    let mut unmapped = [Unmapped::Unseen; 256];
    let mut buf: Vec<u8> = Vec::with_capacity(WRITE_AT + BATCH_TEXT);
    let mut error: Option<std::io::Error> = None;
    while let Ok(msg) = from_formatter.recv() {
        match msg {
            Msg::Batch(batch) => {
                copier.add_names(&batch.names);
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
                        JobKind::Map | JobKind::Other => continue,
                        JobKind::Unmapped if let Unmapped::Kept(off) = unmapped[job.code as usize] => FrameText::stored(off),
                        // The formatter placed every other frame (unless
                        // writing failed).
                        _ => match frames.next() {
                            Some(&place) => place,
                            None => break,
                        },
                    };
                    if job.slot == NO_MAP && unmapped[job.code as usize] == Unmapped::Unseen {
                        unmapped[job.code as usize] = match place.offset() {
                            Some(off) => Unmapped::Kept(off),
                            None if place.keeps() => Unmapped::Kept(copier.kept_len()),
                            None => Unmapped::Placed,
                        };
                    }
                    let start = buf.len();
                    copier.print(&mut buf, job.arg, code_shows_ip(job.code), job.style(), place, new_text(&batch.new_texts, &mut pos, place));
                    if place.kept() {
                        let end = buf.len();
                        for _ in 0..job.repeat {
                            buf.extend_from_within(start..end);
                        }
                    } else {
                        for _ in 0..job.repeat {
                            let Some(&place) = frames.next() else { break };
                            copier.print(&mut buf, job.arg, code_shows_ip(job.code), job.style(), place, new_text(&batch.new_texts, &mut pos, place));
                        }
                    }
                }
                if error.is_none() {
                    buf.extend_from_slice(&batch.text[from..]);
                    if buf.len() >= WRITE_AT {
                        write(&mut out, &mut buf, &mut error, &failed, false);
                    }
                }
                let _ = recycle.try_send(batch);
            }
            Msg::Flush(reply) => {
                write(&mut out, &mut buf, &mut error, &failed, true);
                cpu.store(thread_cpu().as_nanos() as u64, Ordering::Relaxed);
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

/// The loader's answer to request `serial`: kept from before, or the next
/// ones received until it comes (keeping those that come before it).
/// `None` if the loader is gone.
fn answer<T>(early: &mut std::collections::HashMap<u64, T>, from_loader: &Receiver<(u64, T)>, serial: u64) -> Option<T> {
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

/// The text of a new line: the next `len` bytes of the batch's new texts.
fn new_text<'a>(texts: &'a [u8], pos: &mut usize, place: FrameText) -> &'a [u8] {
    if !place.is_new() {
        return &[];
    }
    let rest = texts.get(*pos..).unwrap_or_default();
    let len = rest.first_chunk::<4>().map_or(0, |l| 4 + u32::from_le_bytes(*l) as usize);
    let t = rest.get(..len).unwrap_or(rest);
    *pos += t.len();
    t
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

#[cfg(test)]
mod tests {
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

    use super::*;
    use crate::script::callchain::FrameJob;
    use crate::script::fields::IpOpts;
    use std::sync::Mutex;

    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("unpoisoned").extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
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

    /// A request made ahead is used by the load that asks the same, once;
    /// a different one goes out on its own, and the printer takes each
    /// answer for its own request whatever the order they come in.
    #[test]
    fn prefetched_requests_are_used_once() {
        let mut out = Output::start(std::io::sink(), SymbolConfig::default(), Vec::new());
        let request = |name: &str| LoadRequest { long_name: name.into(), kind: crate::machine::DsoKind::File, build_id: None };
        out.prefetch(request("/nonexistent/a"));
        out.prefetch(request("/nonexistent/a"));
        assert_eq!(out.requests, 1, "asked once");
        out.load(0, 1, request("/nonexistent/b"));
        assert!(out.is_prefetched(&request("/nonexistent/a")));
        out.load(0, 2, request("/nonexistent/a"));
        assert!(!out.is_prefetched(&request("/nonexistent/a")));
        assert_eq!(out.requests, 2);
        out.load(0, 3, request("/nonexistent/a"));
        assert_eq!(out.requests, 3, "a used request is not used again");
        // The printer installs all three (b's answer waits behind a's).
        out.flush(&mut Vec::new()).expect("written");
    }

    /// Frames in no map print as each would alone, whether the formatter
    /// saw them (the first per fields, and those whose text is not kept)
    /// or let them by (see [`Unmapped`]), across batches and fields.
    #[test]
    fn frames_in_no_map_print_as_alone() {
        let opts = [
            IpOpts { ip: true, sym: true, dso: true, ..IpOpts::default() },
            IpOpts { ip: true, sym: true, dso: true, srcline: true, ..IpOpts::default() },
            IpOpts { ip: true, sym: true, ..IpOpts::default() },
            IpOpts { ip: true, dso: true, symoff: true, ..IpOpts::default() },
        ];
        let code = |i: usize, ip| FrameJob { ip, map: None, opts: opts[i % opts.len()], style: LineStyle::Callchain, cookie: false }.code();
        let run = |frames: &[(usize, u64)], batch: usize| {
            let written = Arc::new(Mutex::new(Vec::new()));
            let mut out = Output::start(Shared(written.clone()), SymbolConfig::default(), Vec::new());
            let mut text = Vec::new();
            for (n, &(i, ip)) in frames.iter().enumerate() {
                text.extend_from_slice(format!("sample {n}\n").as_bytes());
                out.frame(text.len(), ip, None, code(i, ip));
                out.frame(text.len(), ip, None, code(i, ip));
                if n % batch == batch - 1 {
                    out.send(&mut text);
                }
            }
            out.flush(&mut text).expect("written");
            written.lock().expect("unpoisoned").clone()
        };
        let frames: Vec<(usize, u64)> = (0..40).map(|n| (n * 7 % 5, 0x1000 + (n as u64 % 3) * 0x10)).collect();
        let alone: Vec<u8> = frames.iter().enumerate().flat_map(|(n, &f)| {
            let mut one = run(&[f], 1);
            let head = format!("sample {n}\n");
            one.splice(..b"sample 0\n".len(), head.bytes());
            one
        }).collect();
        for batch in [1, 3, 40] {
            assert_eq!(String::from_utf8_lossy(&run(&frames, batch)), String::from_utf8_lossy(&alone), "batches of {batch}");
        }
    }

    /// A line that comes many times in a row travels once, and prints as
    /// often as it came: kept text is copied again, text that is not kept
    /// (srcline fields) is made again each time.
    #[test]
    fn repeated_lines_print_each_time() {
        for srcline in [false, true] {
            let written = Arc::new(Mutex::new(Vec::new()));
            let mut out = Output::start(Shared(written.clone()), SymbolConfig::default(), Vec::new());
            let opts = IpOpts { ip: true, sym: true, dso: true, srcline, ..IpOpts::default() };
            let job = |ip| FrameJob { ip, map: None, opts, style: LineStyle::Callchain, cookie: false };
            let mut text = b"head\n".to_vec();
            let ips = [[0x20u64; 300].as_slice(), &[0x30, 0x20, 0x20]].concat();
            for &ip in &ips {
                out.frame(text.len(), ip, None, job(ip).code());
            }
            assert!(out.batch.jobs.len() < 10, "{} jobs for {} lines", out.batch.jobs.len(), ips.len());
            text.extend_from_slice(b"tail\n");
            out.flush(&mut text).expect("written");
            let line = |ip| format!("\t{ip:16x} [unknown] ([unknown])\n");
            let want = format!("head\n{}tail\n", ips.iter().map(|&ip| line(ip)).collect::<String>());
            assert_eq!(String::from_utf8_lossy(&written.lock().expect("unpoisoned")), want, "srcline {srcline}");
        }
    }
}
