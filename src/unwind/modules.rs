//! The modules libdw knows about in one process: perf's `Dwfl` and its
//! `__report_module` (`unwind-libdw.c`).
//!
//! perf 7.2 keeps one `Dwfl` per process (per `struct maps`) across
//! samples and reports a module to it the first time a frame needs one:
//! for the map perf finds at the frame's address it reports the map's DSO
//! file at base `map start − pgoff` (`map start` for `/tmp/jitted-*`);
//! libdw turns that into an address range and a bias from the file's
//! program headers ([`Object::module_range`]). A module that is reported
//! stays: later samples of the process find it without a map lookup (for
//! the `pc − 1` CFI lookups, and for "is there a module here at all").
//!
//! Outcome of a report, as perf uses it:
//! - no map at the address: fine, nothing reported (the frame is printed
//!   as `[unknown]`);
//! - a map whose file cannot be opened (`[vdso]` without a build-id cache
//!   copy, `[stack]`, anonymous memory, a deleted or missing file): failure
//!   (the frame is not printed and unwinding stops);
//! - the module covering the address (after reporting) is not the one
//!   reported for this map: failure.

use std::rc::Rc;

use super::object::Object;
use super::{MapRef, Process};

#[derive(Debug, Clone)]
pub(crate) struct Module {
    pub start: u64,
    pub end: u64,
    pub bias: u64,
    pub object: Rc<Object>,
}

/// The modules of one process (perf's per-`maps` `Dwfl`). Keep one per
/// address space for as long as perf keeps its `Dwfl`: a forked process
/// starts with a fresh one (perf clones the maps, without the `Dwfl`);
/// perf drops it when a map is removed from the process (not when a new
/// map overlaps an old one), which for user maps never happens while
/// reading a recording.
#[derive(Debug, Default, Clone)]
pub struct ModuleSpace {
    /// In report order; a module reported again moves to the end.
    modules: Vec<Module>,
    /// `dwfl_attach_state` succeeded once.
    attached: bool,
}

impl ModuleSpace {
    /// `dwfl_addrmodule`: the module covering `addr`. Where reported
    /// modules overlap, the one reported last.
    pub(crate) fn find(&self, addr: u64) -> Option<&Module> {
        self.modules.iter().rev().find(|m| m.start <= addr && addr < m.end)
    }

    /// `dwfl_attach_state`: needs a module to tell the architecture; once
    /// it worked, later samples reuse it.
    pub(crate) fn attach(&mut self) -> bool {
        if !self.attached && !self.modules.is_empty() {
            self.attached = true;
        }
        self.attached
    }

    /// perf's `__report_module` for a frame at `addr`: `Err` where perf
    /// gives up on the frame.
    pub(crate) fn report(&mut self, process: &dyn Process, addr: u64) -> Result<(), ()> {
        let Some(map) = process.find_map(addr) else { return Ok(()) };
        self.report_map(&map, addr)
    }

    pub(crate) fn report_map(&mut self, map: &MapRef, addr: u64) -> Result<(), ()> {
        let base = if map.jitted { map.start } else { map.start.wrapping_sub(map.pgoff) };
        let mut reported = self.find_index(addr).filter(|&i| self.modules[i].start == base);
        if reported.is_none() {
            let object = map.object.as_ref().ok_or(())?;
            let (start, end, bias) = object.module_range(base).ok_or(())?;
            // dwfl_report_module: the same file with the same range is the
            // same module, moved after the others.
            let i = match self.modules.iter().position(|m| m.start == start && m.end == end && m.object.id() == object.id()) {
                Some(i) => {
                    let m = self.modules.remove(i);
                    self.modules.push(m);
                    self.modules.len() - 1
                }
                None => {
                    self.modules.push(Module { start, end, bias, object: object.clone() });
                    self.modules.len() - 1
                }
            };
            reported = Some(i);
        }
        if self.find_index(addr) == reported { Ok(()) } else { Err(()) }
    }

    fn find_index(&self, addr: u64) -> Option<usize> {
        self.modules.iter().rposition(|m| m.start <= addr && addr < m.end)
    }
}
