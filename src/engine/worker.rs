//! A worker thread that takes batches of work, in order, from the calling
//! thread: the caller fills a batch, hands it over and fills the next while
//! the worker applies the last one to its state (`pstitch inject`: the
//! reading side stitches, the worker puts records in place and writes).
//!
//! ```text
//!  caller (reading side)                 worker (thread)
//!  fills a batch ──── send ──> [queue of QUEUED] ──> apply(state, batch)
//!        ^                                               │ cleared
//!        └──────────── empty batches back ◄──────────────┘
//! ```
//!
//! Invariants:
//! - Order: batches go through one FIFO channel and the worker applies
//!   them one at a time, so the state sees the batches in the order they
//!   were sent, whatever the timing. [`Threads::Single`] applies each
//!   batch on the caller's thread when it is sent: the same calls in the
//!   same order, so the same result.
//! - Memory: `QUEUED + 2` batches exist, all made at the start (so the
//!   memory they take does not depend on the timing): the caller's, and
//!   the others queued (at most [`QUEUED`]), being applied, or back for
//!   reuse. A send takes a batch back, waiting for one if the worker has
//!   them all: the caller waits when the worker falls behind.
//! - Failure: an error from `apply` ends the worker; the caller's next
//!   send finds the channel closed, joins the thread and gets that error
//!   (a closed output pipe stays a broken pipe for the caller). A worker
//!   that panics ends the same way, with an error saying so.
//! - State: the worker owns the state while it runs; [`Worker::finish`]
//!   hands it back once every batch sent was applied.

use std::io;
use std::sync::mpsc::{Receiver, SyncSender, channel, sync_channel};
use std::thread::JoinHandle;

use super::Threads;

/// A batch of work: made empty, filled by the caller, cleared by the
/// worker for reuse.
pub trait Batch: Default + Send + 'static {
    fn clear(&mut self);
}

/// Batches queued for the worker besides the one it applies.
const QUEUED: usize = 2;

/// How a worker's batches are applied.
type Apply<S, B> = fn(&mut S, &mut B) -> io::Result<()>;

/// A worker applying batches to a state `S` (see the module doc).
pub struct Worker<S, B> {
    mode: Mode<S, B>,
}

enum Mode<S, B> {
    /// [`Threads::Single`]: each batch is applied when it is sent.
    Inline { state: S, apply: Apply<S, B> },
    Thread { to: SyncSender<B>, back: Receiver<B>, handle: JoinHandle<Option<(S, io::Result<()>)>> },
    /// The worker ended with an error, which was returned.
    Stopped,
}

impl<S: Send + 'static, B: Batch> Worker<S, B> {
    /// Starts a worker for `state` (on a thread of its own if `threads`
    /// allows and one can be started).
    pub fn start(state: S, apply: Apply<S, B>, threads: Threads, name: &str) -> Worker<S, B> {
        if threads == Threads::Single {
            return Worker { mode: Mode::Inline { state, apply } };
        }
        let (to, from) = sync_channel::<B>(QUEUED);
        let (give_back, back) = channel::<B>();
        let give_back_first = give_back.clone();
        // The state goes to the thread once it runs: if it cannot be
        // started, the state is still here and the batches are applied
        // inline.
        let (hand_state, take_state) = sync_channel::<S>(1);
        let spawned = std::thread::Builder::new().name(name.to_string()).spawn(move || {
            let mut state = take_state.recv().ok()?;
            for mut batch in from {
                if let Err(e) = apply(&mut state, &mut batch) {
                    return Some((state, Err(e)));
                }
                batch.clear();
                // The caller may be gone (finished or failed).
                let _ = give_back.send(batch);
            }
            Some((state, Ok(())))
        });
        match spawned {
            Ok(handle) => {
                // The thread waits for it: the send does not fail.
                let _ = hand_state.send(state);
                // The batches besides the caller's, made now: the memory
                // they take does not depend on the timing.
                for _ in 0..QUEUED + 1 {
                    let _ = give_back_first.send(B::default());
                }
                Worker { mode: Mode::Thread { to, back, handle } }
            }
            Err(_) => Worker { mode: Mode::Inline { state, apply } },
        }
    }

    /// Hands `batch` over and leaves an empty one in its place. An error
    /// is the worker's: it has stopped.
    pub fn send(&mut self, batch: &mut B) -> io::Result<()> {
        match &mut self.mode {
            Mode::Inline { state, apply } => {
                let r = apply(state, batch);
                batch.clear();
                if r.is_err() {
                    self.mode = Mode::Stopped;
                }
                r
            }
            Mode::Thread { to, back, .. } => {
                // One comes back once the worker is done with it (a worker
                // that ended sends none: then a new one, whose send fails).
                let empty = back.recv().unwrap_or_default();
                let full = std::mem::replace(batch, empty);
                if to.send(full).is_ok() {
                    return Ok(());
                }
                // The worker ended: its error.
                match self.join() {
                    Ok(_) => Err(io::Error::other("the worker thread ended early")),
                    Err(e) => Err(e),
                }
            }
            Mode::Stopped => Err(io::Error::other("the worker stopped after an error")),
        }
    }

    /// Hands `last` over, waits until every batch was applied, and returns
    /// the state.
    pub fn finish(mut self, last: &mut B) -> io::Result<S> {
        self.send(last)?;
        self.join()
    }

    fn join(&mut self) -> io::Result<S> {
        match std::mem::replace(&mut self.mode, Mode::Stopped) {
            Mode::Inline { state, .. } => Ok(state),
            Mode::Thread { to, handle, .. } => {
                drop(to);
                match handle.join() {
                    Ok(Some((state, Ok(())))) => Ok(state),
                    Ok(Some((_, Err(e)))) => Err(e),
                    Ok(None) => Err(io::Error::other("the worker thread ended without its state")),
                    Err(_) => Err(io::Error::other("the worker thread panicked")),
                }
            }
            Mode::Stopped => Err(io::Error::other("the worker stopped after an error")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Numbers(Vec<u32>);

    impl Batch for Numbers {
        fn clear(&mut self) {
            self.0.clear();
        }
    }

    fn append(out: &mut Vec<u32>, b: &mut Numbers) -> io::Result<()> {
        if b.0.contains(&u32::MAX) {
            return Err(io::Error::new(io::ErrorKind::BrokenPipe, "closed"));
        }
        out.extend_from_slice(&b.0);
        Ok(())
    }

    /// Both ways the state sees every batch in order.
    #[test]
    fn batches_are_applied_in_order() {
        for threads in [Threads::Single, Threads::Parallel] {
            let mut w = Worker::start(Vec::new(), append, threads, "test");
            let mut b = Numbers::default();
            for i in 0..10_000u32 {
                b.0.push(i);
                if i % 7 == 0 {
                    w.send(&mut b).unwrap();
                    assert!(b.0.is_empty());
                }
            }
            b.0.push(10_000);
            let got = w.finish(&mut b).unwrap();
            assert_eq!(got, (0..=10_000).collect::<Vec<_>>(), "{threads:?}");
        }
    }

    /// The worker's error reaches the caller, with its kind.
    #[test]
    fn an_error_stops_the_worker_and_reaches_the_caller() {
        for threads in [Threads::Single, Threads::Parallel] {
            let mut w = Worker::start(Vec::new(), append, threads, "test");
            let mut b = Numbers(vec![1, u32::MAX]);
            let mut kind = w.send(&mut b).err().map(|e| e.kind());
            // Threaded, the error comes at a later send.
            for _ in 0..100 {
                if kind.is_some() {
                    break;
                }
                b.0.push(2);
                kind = w.send(&mut b).err().map(|e| e.kind());
            }
            assert_eq!(kind, Some(io::ErrorKind::BrokenPipe), "{threads:?}");
            assert!(w.finish(&mut b).is_err());
        }
    }
}
