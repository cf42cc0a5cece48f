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

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};

use super::dwarf::{Dwarf, Ready};

/// Units decoded ahead and not taken yet at most (a decoder waits then).
/// The loader decodes while the reading side still reads kallsyms and the
/// formatter has no lines yet: at 512 it stopped a quarter of the way
/// through libc's 2,063 units and sat idle until the formatter caught up.
const MAX_READY: usize = 4096;
/// How far a decoder jumps ahead when the session caught up with it.
const JUMP: u32 = 16;

#[derive(Default)]
struct State {
    ready: HashMap<u32, Ready>,
    /// The unit being decoded now.
    working: Option<u32>,
    /// Units the session decodes itself (a bit per unit).
    claimed: Vec<u64>,
    /// The decoder starts no unit below this one: the session, which
    /// needs units in the decoder's order, caught up with it, and each
    /// waiting for the unit the other is on would leave one of them idle.
    from: u32,
    /// The decoder stopped (done, failed or gone).
    over: bool,
    /// How many units the session found before the end of `.debug_info`
    /// (or a unit it could not read), once it got there.
    units: Option<u32>,
}

impl State {
    fn skip_below(&mut self, ui: u32) {
        self.from = self.from.max(ui);
    }

    fn claim(&mut self, ui: u32) {
        let w = ui as usize / 64;
        if self.claimed.len() <= w {
            self.claimed.resize(w + 1, 0);
        }
        self.claimed[w] |= 1 << (ui % 64);
    }

    fn is_claimed(&self, ui: u32) -> bool {
        self.claimed.get(ui as usize / 64).is_some_and(|w| w & 1 << (ui % 64) != 0)
    }

    /// Whether the decoder, at unit `ui`, has nothing left to do: the
    /// session found no units past the `n`th, and claimed every one from
    /// where the decoder may start on.
    fn nothing_left(&self, ui: u32) -> bool {
        let Some(n) = self.units else { return false };
        let mut u = self.from.max(ui);
        while u < n {
            let w = self.claimed.get(u as usize / 64).copied().unwrap_or(0) | ((1u64 << (u % 64)) - 1);
            if w != u64::MAX {
                return u - u % 64 + (!w).trailing_zeros() >= n;
            }
            u = u - u % 64 + 64;
        }
        true
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
                s.claim(ui);
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

    /// The session found no unit after its first `n`: once it has also
    /// claimed its way past them, the decoder's walk would be for nothing.
    pub fn last_unit(&self, n: usize) {
        if let Ok(mut s) = self.state.lock() {
            s.units = Some(n as u32);
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

    /// Units this decoder has read (parsed the header of) so far.
    #[cfg(test)]
    pub fn units_read(&self) -> usize {
        self.dwarf.units.len()
    }

    /// Decodes the next unit in binutils' order that the session has not
    /// claimed, and hands it (and the units it decoded for its references)
    /// over.
    pub fn step(&mut self) -> Step {
        loop {
            let ui = self.next;
            {
                let Ok(mut s) = self.shared.state.lock() else { return Step::Done };
                // Nothing left at or past `from` that the session found.
                if s.over || s.nothing_left(ui as u32) {
                    drop(s);
                    self.shared.end();
                    return Step::Done;
                }
                if ui >= self.dwarf.units.len() {
                    drop(s);
                    if self.dwarf.parse_next().is_none() {
                        self.shared.end();
                        return Step::Done;
                    }
                    continue;
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
                if s.is_claimed(ui as u32) || u.lines_ready || u.error {
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
                    if !s.is_claimed(u as u32) {
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
