//! Decoding a DSO's DWARF units ahead, on another thread.
//!
//! binutils decodes units lazily and in order: the first lookup of an
//! address reads and decodes units one after the other until one holds it,
//! and on a large recording a session ends up decoding nearly every unit,
//! which is most of the work behind inline frames. What decoding a unit
//! builds (its line table, functions and variables) depends only on the
//! file; what it does to the session's state (ranges added, units read and
//! decoded for its references) is recorded as a [`Trail`]. So a
//! [`Decoder`] with its own copy of the reading state decodes units in
//! binutils' order ahead of need, and a session that needs a unit takes
//! its tables and replays the trail, which leaves it exactly as decoding
//! the unit itself would have:
//!
//! ```text
//!   loader thread                       formatter thread
//!   Decoder: unit 0, 1, 2, ...  --->   Session::maybe_decode(1)
//!            publishes Ready{tables,      takes Ready 1, replays its trail
//!            trail} per unit              (reads/decodes units it names)
//!            skips units claimed <---    or claims unit 7 and decodes it
//! ```
//!
//! Units a session decoded itself are claimed, and the decoder skips them.
//! A decoder that meets a unit it cannot decode stops: with errors, what a
//! unit's decoding does can depend on the order (a failed reference fails
//! the unit that made it), so only error-free decoding is handed over.
//!
//! [`Trail`]: super::dwarf::Trail

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Condvar, Mutex};

use super::dwarf::{Dwarf, Ready};

/// Units decoded ahead and not taken yet at most (a decoder waits then).
const MAX_READY: usize = 512;
/// How far a decoder jumps ahead when the session caught up with it.
const JUMP: u32 = 16;

#[derive(Default)]
struct State {
    ready: HashMap<u32, Ready>,
    /// The unit being decoded now.
    working: Option<u32>,
    /// Units the session decodes itself.
    claimed: HashSet<u32>,
    /// The decoder starts no unit below this one: the session, which
    /// needs units in the decoder's order, caught up with it, and each
    /// waiting for the unit the other is on would leave one of them idle.
    from: u32,
    /// The decoder stopped (done, failed or gone).
    over: bool,
}

impl State {
    fn skip_below(&mut self, ui: u32) {
        self.from = self.from.max(ui);
    }
}

/// What a session and its decoder share.
#[derive(Default)]
pub struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    /// Unit `ui` decoded ahead, waiting if it is being decoded right now;
    /// else `None`, and the unit is the session's to decode.
    pub fn take(&self, ui: usize) -> Option<Ready> {
        let ui = ui as u32;
        let mut s = self.state.lock().ok()?;
        loop {
            if let Some(r) = s.ready.remove(&ui) {
                return Some(r);
            }
            if s.working != Some(ui) || s.over {
                s.claimed.insert(ui);
                return None;
            }
            // The units right after this one are the session's to decode.
            s.skip_below(ui.saturating_add(JUMP));
            s = self.changed.wait(s).ok()?;
        }
    }

    /// Has the decoder start no unit below `ui` (see [`State::from`]).
    #[cfg(test)]
    pub fn skip_below(&self, ui: u32) {
        if let Ok(mut s) = self.state.lock() {
            s.skip_below(ui);
        }
    }

    fn end(&self) {
        if let Ok(mut s) = self.state.lock() {
            // Units handed over so far stay good.
            s.over = true;
            s.working = None;
        }
        self.changed.notify_all();
    }
}

/// What [`Decoder::step`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Decoded a unit (or skipped units decoded already).
    Worked,
    /// Far enough ahead of the session for now.
    Ahead,
    /// Nothing more to do.
    Done,
}

/// Decodes a DSO's units ahead of a session (see the module doc).
pub struct Decoder {
    dwarf: Dwarf,
    shared: Arc<Shared>,
    next: usize,
}

/// Marks the unit being decoded; ends the decoder if decoding panics (the
/// session must not wait for it then).
struct Working<'a>(&'a Shared);

impl Drop for Working<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.end();
        }
    }
}

impl Decoder {
    pub fn new(mut dwarf: Dwarf, shared: Arc<Shared>) -> Decoder {
        dwarf.record();
        Decoder { dwarf, shared, next: 0 }
    }

    #[cfg(test)]
    pub fn shared(&self) -> &Shared {
        &self.shared
    }

    /// Decodes the next unit in binutils' order that the session has not
    /// claimed, and hands it (and the units it decoded for its references)
    /// over.
    pub fn step(&mut self) -> Step {
        loop {
            let ui = self.next;
            if ui >= self.dwarf.units.len() && self.dwarf.parse_next().is_none() {
                self.shared.end();
                return Step::Done;
            }
            {
                let Ok(mut s) = self.shared.state.lock() else { return Step::Done };
                if s.over {
                    return Step::Done;
                }
                if ui < s.from as usize {
                    // Units are found one after the other: parsed one per
                    // turn up to there.
                    self.next += 1;
                    continue;
                }
                if s.ready.len() >= MAX_READY {
                    return Step::Ahead;
                }
                self.next += 1;
                let u = &self.dwarf.units[ui];
                if s.claimed.contains(&(ui as u32)) || u.lines_ready || u.error {
                    continue;
                }
                s.working = Some(ui as u32);
            }
            let guard = Working(&self.shared);
            let ok = self.dwarf.maybe_decode(ui);
            drop(guard);
            if !ok || self.dwarf.failed {
                self.shared.end();
                return Step::Done;
            }
            let done = self.dwarf.take_finished();
            if let Ok(mut s) = self.shared.state.lock() {
                for (u, r) in done {
                    if !s.claimed.contains(&(u as u32)) {
                        s.ready.insert(u as u32, r);
                    }
                }
                s.working = None;
            }
            self.shared.changed.notify_all();
            return Step::Worked;
        }
    }
}

impl Drop for Decoder {
    fn drop(&mut self) {
        self.shared.end();
    }
}
