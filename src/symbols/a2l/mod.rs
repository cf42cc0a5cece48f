//! An in-process stand-in for the `addr2line -e FILE -a -i -f` process
//! that perf 7.2 talks to for source lines and inline frames (perf-ref has
//! no usable libdw for symfs files, so it falls back to binutils'
//! addr2line, 2.47). The answers follow `bfd/dwarf2.c`, `bfd/elf.c` and
//! `binutils/addr2line.c`, including their state: once `addr2line` has
//! resolved the name of a function that has no linkage name, that name
//! sticks (see [`Session::query`]). One session per DSO, like perf's one
//! process per DSO.
//!
//! A session of an object with a build-id starts from what earlier runs
//! found out about its DWARF ([`cache`]; the argument that the answers
//! stay the same is in [`dwarf`]'s module doc) and writes what it learns
//! back when the run pauses or ends ([`Session::save_now`]), or as soon
//! as binutils' walk over the units reaches the last one. Beside that
//! file, the inflated bytes of the object's compressed debug sections
//! ([`sections_cache`]): a run that needs the sections maps them from
//! there instead of inflating them.

pub mod abbrev;
pub mod ahead;
pub mod bfd;
pub mod cache;
pub mod dwarf;
pub mod lines;
pub mod ranges;
pub mod reader;
pub mod sections_cache;

use std::sync::Arc;

use crate::fasthash::FastMap;
use crate::symbols::elf::Elf;
use bfd::{BfdFile, FoundFn, Section};
use dwarf::{Dwarf, Sections, DW_TAG_INLINED_SUBROUTINE};
use lines::LineHit;

/// perf's `MAX_INLINE_NEST` (util/addr2line.c): after the first record of
/// an address, perf appends at most this many inline records to its inline
/// list and reads the rest of addr2line's answer without keeping it. So an
/// address shows at most 1,025 entries, and when the chain is longer the
/// outermost (the function holding the address) is not among them.
pub const MAX_INLINE_NEST: usize = 1024;

/// One output record of addr2line: function, `file:line` (`None` print as
/// `??`, line 0 as `?`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub function: Option<Arc<str>>,
    pub file: Option<Arc<str>>,
    pub line: u32,
}

/// The part of a lookup that does not depend on addr2line's state.
#[derive(Clone)]
struct Core {
    unit: Option<usize>,
    func: Option<u32>,
    line: Option<LineHit>,
    fun: Option<FoundFn>,
    /// A static variable found by symbol lookup (non-code sections).
    var: Option<(Option<Arc<str>>, u32)>,
}

pub struct Session {
    bfd: BfdFile,
    dwarf: Option<Dwarf>,
    /// Per address: the DWARF generation it was computed at, the section
    /// and the answer (valid while nothing else was read or decoded).
    cache: FastMap<u64, (u64, usize, Core)>,
    /// Where what the DWARF reading finds out is kept for later runs.
    store: Option<Store>,
}

/// A session's cache file (see [`cache`]).
struct Store {
    dir: cache::Dir,
    key: cache::Key,
    path: std::path::PathBuf,
    /// Things learned and written, and learned since.
    written: usize,
    pending: usize,
}

/// Things learned that are worth a write of the cache file before the
/// session ends (later writes wait for as many again: a session that
/// learns unit by unit writes a few times, not once per unit).
const WRITE_AFTER: usize = 64;

impl Session {
    /// A session without a cache.
    pub fn new(elf: Elf) -> Session {
        Session::open(elf, None)
    }

    /// A session that keeps what it finds out in `dir` (if the file has a
    /// build-id), and starts from what is kept there: then the debug
    /// sections are read only when a unit's bytes are needed.
    pub fn open(elf: Elf, dir: Option<&cache::Dir>) -> Session {
        let le = elf.little_endian;
        let store = dir.filter(|_| Sections::present(&elf)).and_then(|dir| {
            let key = Sections::cache_key(&elf)?;
            Some(Store { path: dir.file(&key), dir: dir.clone(), key, written: 0, pending: 0 })
        });
        let summary = store.as_ref().and_then(|s| cache::load(&s.path, &s.key));
        if let Some(s) = store.as_ref().filter(|s| s.dir.stats) {
            match &summary {
                Some(sum) => eprintln!("pstitch: a2l cache: {}: read {} units, {} decoded", s.path.display(), sum.units.len(), sum.decoded()),
                None => eprintln!("pstitch: a2l cache: {}: nothing to read", s.path.display()),
            }
        }
        let place = store.as_ref().map(|s| sections_cache::Place::new(&s.dir, &s.key));
        let mut dwarf = match summary {
            Some(sum) => Some(Dwarf::lazy(elf.clone(), Arc::new(sum), place)),
            None => Sections::load(&elf, place.as_ref()).map(|s| Dwarf::new(s, le)),
        };
        if let (Some(d), Some(_)) = (dwarf.as_mut(), &store) {
            d.learn();
        }
        Session { bfd: BfdFile::new(elf), dwarf, cache: FastMap::default(), store }
    }

    /// A session, and a decoder to run on another thread that decodes its
    /// units ahead of need (see [`ahead`]).
    pub fn with_decoder(elf: Elf, dir: Option<&cache::Dir>) -> (Session, Option<ahead::Decoder>) {
        let mut s = Session::open(elf, dir);
        let decoder = s.dwarf.as_mut().map(|d| {
            let shared = Arc::new(ahead::Shared::default());
            d.take_ahead(shared.clone());
            ahead::Decoder::new(d.twin(), shared)
        });
        (s, decoder)
    }

    /// Writes the cache file if enough was learned since the last write
    /// (`at_end`: if anything was). A file that cannot be written is left.
    fn save(&mut self, at_end: bool) {
        let (Some(store), Some(d)) = (self.store.as_mut(), self.dwarf.as_mut()) else { return };
        store.pending += d.take_news();
        // Once binutils found the last unit, little is left to learn.
        let reached_end = d.take_reached_end();
        if store.pending == 0 || !(at_end || reached_end || store.pending >= WRITE_AFTER.max(store.written)) {
            return;
        }
        let Some(summary) = d.to_store() else { return };
        let wrote = cache::store(&store.path, &store.key, &summary);
        if store.dir.stats {
            match wrote {
                Ok(()) => eprintln!("pstitch: a2l cache: {}: wrote {} units, {} decoded", store.path.display(), summary.units.len(), summary.decoded()),
                Err(e) => eprintln!("pstitch: a2l cache: {}: not written: {e}", store.path.display()),
            }
        }
        store.written += store.pending;
        store.pending = 0;
    }

    /// The state-independent part of `find_nearest_line` for `pc` in `sec`.
    fn core(&mut self, sec: &Section, pc: u64) -> Core {
        let offset = pc.wrapping_sub(sec.vma);
        let mut core = Core { unit: None, func: None, line: None, fun: None, var: None };
        // binutils looks an address of a non-code section up as the symbol
        // sitting exactly there, if any (`comp_unit_find_line`): units
        // already read (most recent first), then the others in order.
        let exact = if sec.code { None } else { self.bfd.symbol_at(sec, offset) };
        if let Some(d) = self.dwarf.as_mut() {
            match exact {
                Some(sym) => {
                    if !sym.function {
                        let mut find = |d: &mut Dwarf, ui: usize| d.maybe_decode(ui) && {
                            core.var = d.lookup_variable(ui, pc, &sym.name);
                            core.var.is_some()
                        };
                        let mut done = false;
                        for ui in (0..d.units.len()).rev() {
                            if find(d, ui) {
                                done = true;
                                break;
                            }
                        }
                        while !done {
                            let Some(ui) = d.parse_next() else { break };
                            done = find(d, ui);
                        }
                    }
                }
                None => {
                    // The address trie over units read so far, then the
                    // units not read yet, in order.
                    let found = |d: &mut Dwarf, ui: usize, core: &mut Core| -> bool {
                        if !d.maybe_decode(ui) {
                            return false;
                        }
                        let func = d.lookup_function(ui, pc);
                        let line = d.lookup_line(ui, pc);
                        if func.is_none() && line.is_none() {
                            return false;
                        }
                        core.unit = Some(ui);
                        core.func = func;
                        core.line = line;
                        true
                    };
                    let mut done = false;
                    for ui in d.trie_candidates(pc) {
                        if found(d, ui, &mut core) {
                            done = true;
                            break;
                        }
                    }
                    while !done {
                        let Some(ui) = d.parse_next() else { break };
                        done = found(d, ui, &mut core);
                    }
                }
            }
        }
        if let Some(d) = self.dwarf.as_mut() {
            d.settle();
        }
        core.fun = self.bfd.find_function(sec, offset);
        core
    }

    /// `_bfd_elf_find_nearest_line` for one section: `None` if nothing is
    /// known; else the first record and where the inline chain starts.
    fn nearest_line(&mut self, sec: &Section, core: &Core) -> Option<(Record, Option<(usize, u32)>)> {
        let Some(d) = self.dwarf.as_mut() else {
            // No DWARF: the ELF symbol and its STT_FILE name, line 0.
            let f = core.fun.as_ref()?;
            return Some((Record { function: Some(f.name.clone()), file: f.file.clone(), line: 0 }, None));
        };
        let mut found = core.func.is_some() || core.line.is_some() || core.var.is_some();
        let mut file = core.line.as_ref().and_then(|l| l.file.clone());
        let mut line = core.line.as_ref().map(|l| l.line).unwrap_or(0);
        if let Some((f, l)) = &core.var {
            file = f.clone();
            line = *l;
        }
        let mut name = None;
        let mut chain = None;
        match (core.unit, core.func) {
            (Some(ui), Some(fi)) if d.func(ui, fi).is_linkage => {
                name = d.name(d.func(ui, fi).name);
            }
            _ => {
                let fun = core.fun.as_ref();
                if let Some(f) = fun {
                    name = Some(f.name.clone());
                    if file.is_none() {
                        file = f.file.clone();
                    }
                    found = true;
                }
                if let (Some(ui), Some(fi)) = (core.unit, core.func) {
                    let func = d.func(ui, fi);
                    match fun {
                        None => name = d.name(func.name),
                        Some(f) if f.value == func.aranges.first_low() => {
                            let own = d.own(name.clone());
                            d.func_mut(ui, fi).name = own;
                        }
                        Some(_) => {}
                    }
                    d.func_mut(ui, fi).is_linkage = true;
                }
            }
        }
        if let (Some(ui), Some(fi)) = (core.unit, core.func)
            && d.func(ui, fi).tag == DW_TAG_INLINED_SUBROUTINE {
                chain = Some((ui, fi));
            }
        let _ = sec;
        found.then_some((Record { function: name, file, line }, chain))
    }

    /// What perf keeps of what `addr2line -a -i -f` prints for `pc`: `None`
    /// for `??`/`??:0`, else the first record and the inline callers,
    /// innermost first, at most [`MAX_INLINE_NEST`] of them.
    pub fn query(&mut self, pc: u64) -> Option<Vec<Record>> {
        let (first, chain) = self.first(pc)?;
        let mut out = vec![first];
        if let (Some((ui, mut fi)), Some(d)) = (chain, self.dwarf.as_ref()) {
            while out.len() <= MAX_INLINE_NEST {
                let f = d.func(ui, fi);
                if f.caller == u32::MAX {
                    break;
                }
                let caller = d.func(ui, f.caller);
                out.push(Record { function: d.name(caller.name), file: d.caller_file(ui, fi), line: f.caller_line });
                fi = f.caller;
            }
        }
        Some(out)
    }

    /// Lets the kernel drop the pages of the mapped files: the object and
    /// the files its debug sections lie in (see
    /// [`crate::symbols::Symbolizer::release_pages`]).
    pub fn release_pages(&self) {
        self.bfd.elf.release_pages();
        if let Some(d) = &self.dwarf {
            d.s.release_pages(Some(&self.bfd.elf));
        }
    }

    /// Bumped whenever the answers may change (more DWARF was read).
    pub fn generation(&self) -> u64 {
        self.dwarf.as_ref().map(|d| d.generation).unwrap_or(0)
    }

    /// The first record for `pc` (with its side effects on addr2line's
    /// state) and where the inline chain starts.
    pub fn first(&mut self, pc: u64) -> Option<(Record, Option<(usize, u32)>)> {
        let secs = self.bfd.sections.iter().filter(|s| pc >= s.vma && pc < s.vma.wrapping_add(s.size));
        let secs: smallvec_like::Few<Section> = secs.copied().collect();
        for sec in secs.iter() {
            let generation = self.generation();
            let core = match self.cache.get(&pc) {
                Some((g, s, c)) if *g == generation && *s == sec.index => c.clone(),
                _ => {
                    let c = self.core(sec, pc);
                    self.cache.insert(pc, (generation, sec.index, c.clone()));
                    c
                }
            };
            if let Some(r) = self.nearest_line(sec, &core) {
                self.save(false);
                return Some(r);
            }
        }
        self.save(false);
        None
    }
}

impl Session {
    /// Writes the cache file now if anything was learned since the last
    /// write.
    pub fn save_now(&mut self) {
        self.save(true);
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.save(true);
    }
}

/// A tiny inline vector for the (almost always one) section holding an
/// address.
mod smallvec_like {
    pub struct Few<T: Copy> {
        first: Option<T>,
        rest: Vec<T>,
    }

    impl<T: Copy> FromIterator<T> for Few<T> {
        fn from_iter<I: IntoIterator<Item = T>>(it: I) -> Self {
            let mut it = it.into_iter();
            let first = it.next();
            Few { first, rest: it.collect() }
        }
    }

    impl<T: Copy> Few<T> {
        pub fn iter(&self) -> impl Iterator<Item = &T> {
            self.first.iter().chain(self.rest.iter())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbols::elf::FileBytes;

    fn fixture(rel: &str) -> Vec<u8> {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/symfs").join(rel);
        std::fs::read(p).expect("fixture")
    }

    fn session(bytes: Vec<u8>) -> Option<Session> {
        Elf::parse(std::sync::Arc::new(FileBytes::Owned(bytes))).map(Session::new)
    }

    fn text_range(s: &Session) -> (u64, u64) {
        let (_, t) = s.bfd.elf.section_by_name(".text").expect(".text");
        (t.sh_addr, t.sh_addr + t.sh_size)
    }

    #[test]
    fn inline_chain_of_cwork() {
        // rotl inlined in mix64 inlined in hash_buffer.constprop.0, as
        // `addr2line -a -i -f` prints it.
        let mut s = session(fixture("tmp/pstitch-fixtures/bin/cwork")).unwrap();
        let r = s.query(0x14fe).expect("found");
        let names: Vec<_> = r.iter().map(|r| r.function.as_deref().unwrap_or("??")).collect();
        assert_eq!(names, ["rotl", "mix64", "hash_buffer"]);
        assert_eq!(r[0].file.as_deref(), Some("/tmp/pstitch-fixtures/src/cwork.c"));
        assert_eq!((r[0].line, r[1].line, r[2].line), (31, 37, 73));
        assert!(s.query(0x1234567).is_none());
    }

    #[test]
    fn function_name_state_sticks() {
        // A function without linkage name whose range does not start at an
        // ELF symbol: the first answer is the ELF symbol, later ones the
        // DWARF name (binutils marks it as resolved).
        let mut s = session(fixture("tmp/pstitch-fixtures/bin/cppwork")).unwrap();
        let a = s.query(0x2659).unwrap();
        let b = s.query(0x2659).unwrap();
        assert_eq!(a[0].function.as_deref(), Some("_ZN3sim5World13sort_by_speedEv"));
        assert!(b[0].function.as_deref().unwrap().starts_with("__final_insertion_sort<"));
        assert_eq!(a.len(), b.len());
    }

    #[test]
    fn units_decoded_ahead_answer_as_decoded_in_place() {
        // The decoder runs ahead by different amounts, between queries in
        // different orders; every answer is the plain session's.
        for rel in ["cwork", "cppwork", "rustwork"] {
            let bytes = fixture(&format!("tmp/pstitch-fixtures/bin/{rel}"));
            let (lo, hi) = text_range(&session(bytes.clone()).unwrap());
            let addrs: Vec<u64> = (lo..hi).step_by(5).collect();
            // Also single addresses: units decoded only for the references
            // of the one holding it must be decoded all the same.
            // With `skip`, the decoder starts no unit below that one (as
            // when the session caught up with it) and leaves a gap.
            let mut runs: Vec<(usize, usize, bool, u32, Vec<u64>)> =
                [(0, 1, false, 0), (1, 3, false, 0), (2, 0, true, 0), (1000, 0, false, 0), (0, 7, true, 0), (1, 1, false, 2), (0, 2, true, 5), (1000, 0, false, 3)]
                    .into_iter()
                    .map(|(a, e, r, skip)| (a, e, r, skip, addrs.clone()))
                    .collect();
            for &a in addrs.iter().step_by(addrs.len() / 5 + 1) {
                runs.push((1000, 0, false, 0, vec![a]));
                runs.push((1000, 0, false, 2, vec![a]));
            }
            for (ahead, every, reverse, skip, addrs) in runs {
                let elf = Elf::parse(Arc::new(FileBytes::Owned(bytes.clone()))).unwrap();
                let (mut s, decoder) = Session::with_decoder(elf, None);
                let mut decoder = decoder.expect("DWARF");
                decoder.shared().skip_below(skip);
                let mut plain = session(bytes.clone()).unwrap();
                let step = |d: &mut ahead::Decoder, n: usize| {
                    for _ in 0..n {
                        if d.step() == ahead::Step::Done {
                            break;
                        }
                    }
                };
                step(&mut decoder, ahead);
                let order: Vec<u64> = if reverse { addrs.iter().rev().copied().collect() } else { addrs.clone() };
                for (i, &a) in order.iter().enumerate() {
                    assert_eq!(s.query(a), plain.query(a), "{rel} ahead {ahead} every {every} skip {skip} at {a:#x}");
                    if every != 0 && i % every == 0 {
                        step(&mut decoder, 1);
                    }
                }
                let d = s.dwarf.as_ref().unwrap();
                let p = plain.dwarf.as_ref().unwrap();
                assert_eq!(d.units.len(), p.units.len());
                for (a, b) in d.units.iter().zip(&p.units) {
                    assert_eq!((a.lines_ready, a.error), (b.lines_ready, b.error));
                }
            }
        }
    }

    /// Sessions that start from a cache written by an earlier one answer
    /// every address as a session without a cache: queried in another
    /// order than the cache was made in, with a decoder, and from a cache
    /// that holds only the first units.
    #[test]
    fn sessions_from_a_cache_answer_as_without() {
        let dir = std::env::temp_dir().join(format!("pstitch-a2l-session-cache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cache = cache::Dir::at(&dir);
        let open = |bytes: &[u8]| Elf::parse(Arc::new(FileBytes::Owned(bytes.to_vec()))).unwrap();
        for rel in ["cwork", "cppwork", "rustwork"] {
            let bytes = fixture(&format!("tmp/pstitch-fixtures/bin/{rel}"));
            let (lo, hi) = text_range(&session(bytes.clone()).unwrap());
            let addrs: Vec<u64> = (lo..hi).step_by(7).chain([hi + 0x1000]).collect();
            let path = {
                let elf = open(&bytes);
                let key = Sections::cache_key(&elf).expect("build-id");
                cache.file(&key)
            };
            let _ = std::fs::remove_file(&path);
            // A few addresses first: a cache of the first units only.
            let partial: Vec<u64> = addrs.iter().step_by(addrs.len() / 3).copied().take(2).collect();
            for (cold_addrs, reverse) in [(partial.clone(), false), (partial, true), (addrs.clone(), true), (addrs.clone(), false)] {
                {
                    let mut cold = Session::open(open(&bytes), Some(&cache));
                    for &a in &cold_addrs {
                        cold.query(a);
                    }
                }
                let stored = cache::load(&path, &Sections::cache_key(&open(&bytes)).expect("build-id")).expect("a cache file");
                assert!(stored.decoded() > 0, "{rel}");
                let mut plain = session(bytes.clone()).unwrap();
                let mut warm = Session::open(open(&bytes), Some(&cache));
                assert!(warm.dwarf.as_ref().unwrap().s.info.is_empty(), "{rel}: sections read before a unit needs them");
                let (mut ahead, decoder) = Session::with_decoder(open(&bytes), Some(&cache));
                let mut decoder = decoder.expect("DWARF");
                let order: Vec<u64> = if reverse { addrs.iter().rev().copied().collect() } else { addrs.clone() };
                for (i, &a) in order.iter().enumerate() {
                    let want = plain.query(a);
                    assert_eq!(warm.query(a), want, "{rel} at {a:#x}");
                    assert_eq!(ahead.query(a), want, "{rel} at {a:#x} (decoder)");
                    if i % 3 == 0 {
                        decoder.step();
                    }
                }
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_decoder_stops_once_the_session_decoded_past_the_last_unit() {
        let mut stopped = 0;
        for rel in ["cwork", "cppwork", "rustwork"] {
            let bytes = fixture(&format!("tmp/pstitch-fixtures/bin/{rel}"));
            let (lo, hi) = text_range(&session(bytes.clone()).unwrap());
            let (mut s, decoder) = Session::with_decoder(Elf::parse(Arc::new(FileBytes::Owned(bytes.clone()))).unwrap(), None);
            let mut decoder = decoder.expect("DWARF");
            let mut plain = session(bytes).unwrap();
            // An address past every unit has the session read them all.
            for a in (lo..hi).step_by(16).chain([hi + 0x10_0000]) {
                assert_eq!(s.query(a), plain.query(a), "{rel} {a:#x}");
            }
            let d = s.dwarf.as_ref().unwrap();
            if d.units.iter().all(|u| u.lines_ready || u.error) {
                assert_eq!(decoder.step(), ahead::Step::Done, "{rel}");
                assert_eq!(decoder.units_read(), 0, "{rel}: the decoder read units no one needs");
                stopped += 1;
            } else {
                // Units left for it: it decodes them.
                assert_eq!(decoder.step(), ahead::Step::Worked, "{rel}");
            }
        }
        assert!(stopped > 0);
    }

    #[test]
    fn a_decoder_on_another_thread() {
        let bytes = fixture("tmp/pstitch-fixtures/bin/rustwork");
        let (lo, hi) = text_range(&session(bytes.clone()).unwrap());
        let (mut s, decoder) = Session::with_decoder(Elf::parse(Arc::new(FileBytes::Owned(bytes.clone()))).unwrap(), None);
        let mut decoder = decoder.expect("DWARF");
        let worker = std::thread::spawn(move || while decoder.step() != ahead::Step::Done {});
        let mut plain = session(bytes).unwrap();
        for a in (lo..hi).step_by(3) {
            assert_eq!(s.query(a), plain.query(a), "{a:#x}");
        }
        worker.join().unwrap();
    }

    #[test]
    fn answers_hold_after_the_pages_go() {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/symfs/tmp/pstitch-fixtures/bin/cppwork");
        let mapped = crate::symbols::elf::map_file(&p).expect("maps");
        assert!(matches!(*mapped, FileBytes::Shared(_)));
        let mut s = Session::new(Elf::parse(mapped).expect("elf"));
        let mut fresh = session(fixture("tmp/pstitch-fixtures/bin/cppwork")).unwrap();
        let (lo, hi) = text_range(&s);
        for (i, a) in (lo..hi).step_by(7).enumerate() {
            if i % 50 == 0 {
                s.release_pages();
            }
            assert_eq!(s.query(a), fresh.query(a), "{a:#x}");
        }
    }

    #[test]
    fn damaged_files_never_panic() {
        for rel in ["tmp/pstitch-fixtures/bin/cwork", "tmp/pstitch-fixtures/bin/rustwork"] {
            let orig = fixture(rel);
            let (lo, hi) = text_range(&session(orig.clone()).unwrap());
            let addrs: Vec<u64> = (lo..hi).step_by(((hi - lo) / 300).max(1) as usize).collect();
            let mut variants: Vec<Vec<u8>> = Vec::new();
            for cut in [64, 1000, orig.len() / 4, orig.len() / 2, orig.len() * 3 / 4, orig.len() - 100] {
                variants.push(orig[..cut].to_vec());
            }
            // Scribble over the debug sections.
            let elf = Elf::parse(std::sync::Arc::new(FileBytes::Owned(orig.clone()))).unwrap();
            for name in [".debug_info", ".debug_line", ".debug_abbrev", ".debug_ranges", ".debug_rnglists", ".debug_str"] {
                if let Some((_, s)) = elf.section_by_name(name) {
                    for seed in 0..3u64 {
                        let mut v = orig.clone();
                        let (start, len) = (s.sh_offset as usize, s.sh_size as usize);
                        let mut x = 0x9e3779b97f4a7c15u64.wrapping_mul(seed + 1);
                        for _ in 0..(len / 50).max(8) {
                            x ^= x << 13;
                            x ^= x >> 7;
                            x ^= x << 17;
                            let i = start + (x as usize % len.max(1));
                            if i < v.len() {
                                v[i] = (x >> 32) as u8;
                            }
                        }
                        variants.push(v);
                    }
                }
            }
            for v in variants {
                let Some(mut s) = session(v.clone()) else { continue };
                // The same with units decoded ahead (a decoder stops at
                // the first unit it cannot decode).
                let elf = Elf::parse(Arc::new(FileBytes::Owned(v))).unwrap();
                let (mut t, decoder) = Session::with_decoder(elf, None);
                if let Some(mut d) = decoder {
                    for _ in 0..3 {
                        d.step();
                    }
                }
                for &a in &addrs {
                    assert_eq!(s.query(a), t.query(a), "{rel} at {a:#x}");
                }
            }
        }
    }
}
