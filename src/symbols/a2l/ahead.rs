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

use std::sync::Arc;

use super::dwarf::{Dwarf, Ready};
use crate::engine::board::{Board, Plan};

/// What a session and its decoder share (see [`crate::engine::board`]).
pub type Shared = Board<Ready>;

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
            let units = &self.dwarf.units;
            match self.shared.plan(ui, units.len(), |ui| units[ui].lines_ready || units[ui].error) {
                Plan::End => {
                    self.shared.end();
                    return Step::Done;
                }
                Plan::Parse => {
                    if self.dwarf.parse_next().is_none() {
                        self.shared.end();
                        return Step::Done;
                    }
                }
                Plan::Skip => self.next += 1,
                Plan::Ahead => return Step::Ahead,
                Plan::Decode => {
                    self.next += 1;
                    let guard = self.shared.decoding();
                    let ok = self.dwarf.maybe_decode(ui);
                    drop(guard);
                    if !ok || self.dwarf.failed {
                        self.shared.end();
                        return Step::Done;
                    }
                    self.shared.publish(self.dwarf.take_finished());
                    return Step::Worked;
                }
            }
        }
    }
}

impl Drop for Decoder {
    fn drop(&mut self) {
        self.shared.end();
    }
}
