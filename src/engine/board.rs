//! The hand-off between an addr2line session and the decoder that decodes
//! its DWARF units ahead on the loader thread (see `symbols::a2l::ahead`
//! for why): a board of units decoded and waiting, shared by the two.
//!
//! Invariants:
//! - Each unit is decoded once, by one side: the decoder publishes what
//!   it decoded as ready, unless the session claimed the unit meanwhile;
//!   the session takes a ready unit, or claims it and decodes it itself.
//! - The session waits only for the unit the decoder is on right now, and
//!   never for one nobody decodes: once the decoder ends (done, failed,
//!   dropped, or panicked), every unit is the session's.
//! - When the session catches up with the decoder, the decoder jumps
//!   [`JUMP`] units ahead rather than have the two wait for each other
//!   unit by unit.
//! - Memory: at most [`MAX_READY`] units wait; the decoder pauses then.

use std::collections::HashMap;
use std::sync::{Condvar, Mutex};

/// Units decoded ahead and not taken yet at most (a decoder waits then).
/// The loader decodes while the reading side still reads kallsyms and the
/// formatter has no lines yet: at 512 it stopped a quarter of the way
/// through libc's 2,063 units and sat idle until the formatter caught up.
const MAX_READY: usize = 4096;
/// How far a decoder jumps ahead when the session caught up with it.
const JUMP: u32 = 16;

struct State<T> {
    ready: HashMap<u32, T>,
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

impl<T> Default for State<T> {
    fn default() -> State<T> {
        State { ready: HashMap::new(), working: None, claimed: Vec::new(), from: 0, over: false, units: None }
    }
}

impl<T> State<T> {
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
pub struct Board<T> {
    state: Mutex<State<T>>,
    changed: Condvar,
}

impl<T> Default for Board<T> {
    fn default() -> Board<T> {
        Board { state: Mutex::new(State::default()), changed: Condvar::new() }
    }
}

/// What the decoder should do about a unit (see [`Board::plan`]).
#[derive(Debug, PartialEq, Eq)]
pub enum Plan {
    /// Nothing more to do: end.
    End,
    /// The unit is past those read so far: read the next header first.
    Parse,
    /// Go on to the next unit.
    Skip,
    /// Far enough ahead of the session for now.
    Ahead,
    /// Decode it (it is marked as being decoded).
    Decode,
}

impl<T> Board<T> {
    /// The session's side: unit `ui` decoded ahead, waiting if it is being
    /// decoded right now; else `None`, and the unit is the session's.
    pub fn take(&self, ui: usize) -> Option<T> {
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

    /// The session's side: it found no unit after its first `n`; once it
    /// has also claimed its way past them, the decoder's walk would be for
    /// nothing.
    pub fn last_unit(&self, n: usize) {
        if let Ok(mut s) = self.state.lock() {
            s.units = Some(n as u32);
        }
    }

    /// Has the decoder start no unit below `ui` (see [`State::from`]).
    #[cfg(test)]
    pub fn skip_below(&self, ui: u32) {
        if let Ok(mut s) = self.state.lock() {
            s.skip_below(ui);
        }
    }

    /// The decoder's side: what to do about unit `ui`, having read `read`
    /// unit headers; `done(ui)`: the decoder's own state has the unit
    /// decoded or failed already.
    pub fn plan(&self, ui: usize, read: usize, done: impl FnOnce(usize) -> bool) -> Plan {
        let Ok(mut s) = self.state.lock() else { return Plan::End };
        if s.over || s.nothing_left(ui as u32) {
            return Plan::End;
        }
        if ui >= read {
            return Plan::Parse;
        }
        // Units are found one after the other: read one per turn up to
        // where the decoder may start.
        if ui < s.from as usize {
            return Plan::Skip;
        }
        if s.ready.len() >= MAX_READY {
            return Plan::Ahead;
        }
        if s.is_claimed(ui as u32) || done(ui) {
            return Plan::Skip;
        }
        s.working = Some(ui as u32);
        Plan::Decode
    }

    /// The decoder's side: units decoded (the one planned, and those it
    /// decoded for its references), handed over unless claimed.
    pub fn publish(&self, done: impl IntoIterator<Item = (usize, T)>) {
        if let Ok(mut s) = self.state.lock() {
            for (u, r) in done {
                if !s.is_claimed(u as u32) {
                    s.ready.insert(u as u32, r);
                }
            }
            s.working = None;
        }
        self.changed.notify_all();
    }

    /// The decoder's side: it stops. Units handed over so far stay good.
    pub fn end(&self) {
        if let Ok(mut s) = self.state.lock() {
            s.over = true;
            s.working = None;
        }
        self.changed.notify_all();
    }

    /// The decoder's side: ends the board if decoding panics before the
    /// guard is dropped (the session must not wait for it then).
    pub fn decoding(&self) -> Decoding<'_, T> {
        Decoding(self)
    }
}

/// See [`Board::decoding`].
pub struct Decoding<'a, T>(&'a Board<T>);

impl<T> Drop for Decoding<'_, T> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.end();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A unit goes to one side only: published and taken, or claimed and
    /// then neither published nor waited for.
    #[test]
    fn each_unit_goes_to_one_side() {
        let b: Board<&str> = Board::default();
        assert_eq!(b.plan(0, 0, |_| false), Plan::Parse);
        assert_eq!(b.plan(0, 2, |_| false), Plan::Decode);
        b.publish([(0, "zero")]);
        assert_eq!(b.take(0), Some("zero"));
        assert_eq!(b.take(1), None, "not decoded: the session's");
        assert_eq!(b.plan(1, 2, |_| false), Plan::Skip, "claimed");
        b.publish([(1, "late")]);
        assert_eq!(b.take(1), None, "a claimed unit is not handed over");
        b.last_unit(2);
        assert_eq!(b.plan(2, 2, |_| false), Plan::End, "nothing left");
    }

    /// The session waits for the unit being decoded, and not after the
    /// decoder ended.
    #[test]
    fn the_session_waits_only_for_the_unit_under_way() {
        let b = std::sync::Arc::new(Board::<u32>::default());
        assert_eq!(b.plan(0, 1, |_| false), Plan::Decode);
        let decoder = b.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            decoder.publish([(0, 7)]);
        });
        assert_eq!(b.take(0), Some(7));
        t.join().unwrap();
        assert_eq!(b.plan(1, 2, |_| false), Plan::Skip, "the session caught up: the decoder jumps ahead");
        assert_eq!(b.plan(JUMP as usize, JUMP as usize + 1, |_| false), Plan::Decode);
        b.end();
        assert_eq!(b.take(JUMP as usize), None, "an ended decoder is not waited for");
        assert_eq!(b.plan(JUMP as usize + 1, JUMP as usize + 2, |_| false), Plan::End);
    }
}
