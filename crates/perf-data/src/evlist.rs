//! The recorded events (perf's "evlist"): attrs, names and sample ids, and
//! the lookup from a record to the event that wrote it.
//!
//! With several events, each sample carries an id (`PERF_SAMPLE_IDENTIFIER`
//! as its first word, or `PERF_SAMPLE_ID` at a position that depends on the
//! sample_type), and each non-sample record carries it in its `sample_id`
//! trailer. Every event owns a set of ids (one per CPU or thread it was
//! opened on); the attr section (file mode) or HEADER_ATTR records (pipe
//! mode) list them.

use std::collections::BTreeMap;

use super::attr::{Attr, event_type, flag};
use super::bytes::Endian;
use super::record::{Record, kind};

/// One recorded event.
#[derive(Debug, Clone)]
pub struct Evsel {
    pub attr: Attr,
    /// From EVENT_DESC / EVENT_UPDATE; `None` means "derive from the attr".
    pub name: Option<String>,
    pub ids: Vec<u64>,
}

impl Evsel {
    /// The event name as perf prints it.
    pub fn name(&self) -> String {
        match &self.name {
            Some(n) => n.clone(),
            None => default_name(&self.attr),
        }
    }
}

/// All events, in file order.
///
/// Change names through [`Evlist::set_name`] (or [`Evlist::name_if_unset`]):
/// the list keeps the lengths of all names so that the widest one is known
/// at once even when a stream adds or renames events one by one.
#[derive(Debug, Clone, Default)]
pub struct Evlist {
    pub evsels: Vec<Evsel>,
    /// Event ids come from the file: a seeded hash of good quality, so
    /// that crafted ids cannot pile into a few buckets.
    by_id: std::collections::HashMap<u64, usize, foldhash::quality::RandomState>,
    /// Length of each evsel's printed name.
    name_lens: Vec<usize>,
    /// How many evsels have a name of each length.
    lens_count: BTreeMap<usize, usize>,
}

impl Evlist {
    pub fn push(&mut self, evsel: Evsel) -> usize {
        let idx = self.evsels.len();
        for &id in &evsel.ids {
            self.by_id.entry(id).or_insert(idx);
        }
        let len = evsel.name().len();
        self.name_lens.push(len);
        *self.lens_count.entry(len).or_default() += 1;
        self.evsels.push(evsel);
        idx
    }

    /// Names event `idx` (from EVENT_DESC or EVENT_UPDATE).
    pub fn set_name(&mut self, idx: usize, name: String) {
        let Some(ev) = self.evsels.get_mut(idx) else { return };
        ev.name = Some(name);
        let new = ev.name().len();
        let old = std::mem::replace(&mut self.name_lens[idx], new);
        if let Some(n) = self.lens_count.get_mut(&old) {
            *n -= 1;
            if *n == 0 {
                self.lens_count.remove(&old);
            }
        }
        *self.lens_count.entry(new).or_default() += 1;
    }

    /// Names event `idx` unless it already has a name.
    pub fn name_if_unset(&mut self, idx: usize, name: String) {
        if self.evsels.get(idx).is_some_and(|e| e.name.is_none()) {
            self.set_name(idx, name);
        }
    }

    pub fn add_ids(&mut self, idx: usize, ids: &[u64]) {
        if let Some(ev) = self.evsels.get_mut(idx) {
            ev.ids.extend_from_slice(ids);
            for &id in ids {
                self.by_id.entry(id).or_insert(idx);
            }
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.evsels.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.evsels.is_empty()
    }

    #[inline]
    pub fn by_id(&self, id: u64) -> Option<usize> {
        self.by_id.get(&id).copied()
    }

    /// Does the first event have `sample_id_all`? perf decides from it alone.
    #[inline]
    pub fn sample_id_all(&self) -> bool {
        self.evsels.first().is_some_and(|e| e.attr.sample_id_all())
    }

    /// The event that wrote `rec`, as perf's `evlist__event2evsel` finds it:
    /// the only event if there is one; the first one for non-sample records
    /// without `sample_id_all` and for synthesized records (id 0); otherwise
    /// the owner of the record's id. `None` when the id is unknown.
    #[inline]
    pub fn evsel_for(&self, rec: &Record<'_>) -> Option<usize> {
        let first = self.evsels.first()?;
        if self.evsels.len() == 1 {
            return Some(0);
        }
        let is_sample = rec.header.type_ == kind::SAMPLE;
        if !first.attr.sample_id_all() && !is_sample {
            return Some(0);
        }
        let body = rec.body();
        let n = body.len() / 8;
        let id = if is_sample {
            let pos = first.attr.sample_id_pos()?;
            if pos >= n {
                return None;
            }
            rec.endian.read_u64(body, pos * 8)?
        } else {
            let pos = first.attr.trailer_id_pos()?;
            if pos > n {
                return None;
            }
            rec.endian.read_u64(body, (n - pos) * 8)?
        };
        if id == 0 {
            return Some(0);
        }
        self.by_id(id)
    }

    /// Width of the widest event name (perf pads event names to it).
    pub fn max_name_len(&self) -> usize {
        self.lens_count.keys().next_back().copied().unwrap_or(0)
    }
}

const HW_NAMES: [&str; 10] = [
    "cycles",
    "instructions",
    "cache-references",
    "cache-misses",
    "branches",
    "branch-misses",
    "bus-cycles",
    "stalled-cycles-frontend",
    "stalled-cycles-backend",
    "ref-cycles",
];

const SW_NAMES: [&str; 12] = [
    "cpu-clock",
    "task-clock",
    "page-faults",
    "context-switches",
    "cpu-migrations",
    "minor-faults",
    "major-faults",
    "alignment-faults",
    "emulation-faults",
    "dummy",
    "bpf-output",
    "cgroup-switches",
];

/// perf 7.2's modifier suffix (`:u`, `:k`, `:ppp`, `:H`, ...) for an attr
/// (`evsel__add_modifiers`; checked against perf-ref for every combination
/// of the exclude bits and precise_ip): `k`/`u`/`h` for the contexts not
/// excluded when one is, then the precision, then `H`/`G` for host/guest
/// not excluded when one of them is.
fn modifiers(attr: &Attr) -> String {
    let mut m = String::new();
    let unless = |m: &mut String, excluded: bool, c: char| {
        if !excluded {
            m.push(c);
        }
    };
    let (k, u, h) = (attr.has(flag::EXCLUDE_KERNEL), attr.has(flag::EXCLUDE_USER), attr.has(flag::EXCLUDE_HV));
    if k || u || h {
        unless(&mut m, k, 'k');
        unless(&mut m, u, 'u');
        unless(&mut m, h, 'h');
    }
    m.push_str(&"ppp"[..attr.precise_ip() as usize]);
    let (host, guest) = (attr.has(flag::EXCLUDE_HOST), attr.has(flag::EXCLUDE_GUEST));
    if host || guest {
        unless(&mut m, host, 'H');
        unless(&mut m, guest, 'G');
    }
    if m.is_empty() { m } else { format!(":{m}") }
}

/// The name perf derives from an attr when the file does not name the event.
pub fn default_name(attr: &Attr) -> String {
    match attr.type_ {
        event_type::HARDWARE => match HW_NAMES.get(attr.config as usize) {
            Some(n) => format!("{n}{}", modifiers(attr)),
            None => format!("unknown-hardware{}", modifiers(attr)),
        },
        event_type::SOFTWARE => match SW_NAMES.get(attr.config as usize) {
            Some(n) => format!("{n}{}", modifiers(attr)),
            None => format!("unknown-software{}", modifiers(attr)),
        },
        event_type::RAW => format!("raw {:#x}{}", attr.config, modifiers(attr)),
        // The format (and so the name) comes with the tracing data; perf
        // 7.2 names the event by its id until then.
        event_type::TRACEPOINT => format!("unknown tracepoint id={}", crate::bytes::alt_hex(attr.config)),
        event_type::BREAKPOINT => format!("mem:{:#x}{}", attr.config1, modifiers(attr)),
        _ => format!("unknown attr type: {}", attr.type_),
    }
}

/// Decodes the ids of a HEADER_ATTR record body after its attr.
pub fn ids_after_attr(body: &[u8], attr_len: usize, endian: Endian) -> Vec<u64> {
    body.get(attr_len..)
        .map(|rest| rest.chunks_exact(8).map(|c| endian.u64(c.try_into().unwrap_or([0; 8]))).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ids a hostile file can choose spread over a table's buckets (the
    /// low bits of the hash, where a probe starts) as random ones do:
    /// 500,000 ids of the form `i << 45` are not 500,000 probes each.
    #[test]
    fn crafted_ids_spread_like_random_ones() {
        use std::hash::BuildHasher;
        let ev = Evlist::default();
        let n = 500_000u64;
        let bits = 20;
        let mut used = vec![false; 1 << bits];
        for i in 0..n {
            used[(ev.by_id.hasher().hash_one(i << 45) & ((1 << bits) - 1)) as usize] = true;
        }
        let buckets = (1u64 << bits) as f64;
        let random = buckets * (1.0 - (-(n as f64) / buckets).exp());
        let spread = used.iter().filter(|&&u| u).count() as f64 / random;
        assert!(spread > 0.95, "{spread:.3} of the buckets random ids would use");
    }

    #[test]
    fn default_names_follow_perf() {
        // Expected names from perf-ref (perf 7.2) on recordings without
        // EVENT_DESC, where the name comes from the attr.
        let mut a = Attr { type_: event_type::SOFTWARE, config: 0, flags: flag::EXCLUDE_GUEST, ..Attr::default() };
        assert_eq!(default_name(&a), "cpu-clock:H");
        a.flags |= flag::EXCLUDE_KERNEL | flag::EXCLUDE_HV;
        assert_eq!(default_name(&a), "cpu-clock:uH");
        a.flags = flag::EXCLUDE_USER | flag::EXCLUDE_HOST | (2 << flag::PRECISE_IP_SHIFT);
        assert_eq!(default_name(&a), "cpu-clock:khppG");
        a.flags = flag::EXCLUDE_HOST | flag::EXCLUDE_GUEST;
        assert_eq!(default_name(&a), "cpu-clock");
        a.config = 9;
        a.flags = 0;
        assert_eq!(default_name(&a), "dummy");
        let b = Attr { type_: event_type::HARDWARE, config: 0, flags: 2 << flag::PRECISE_IP_SHIFT, ..Attr::default() };
        assert_eq!(default_name(&b), "cycles:pp");
    }

    #[test]
    fn widest_name_follows_pushes_and_renames() {
        let mut l = Evlist::default();
        let a = Attr { type_: event_type::SOFTWARE, config: 0, ..Attr::default() };
        l.push(Evsel { attr: a.clone(), name: None, ids: vec![] });
        assert_eq!(l.max_name_len(), "cpu-clock".len());
        l.push(Evsel { attr: a, name: None, ids: vec![] });
        l.set_name(1, "a-much-longer-name".into());
        assert_eq!(l.max_name_len(), 18);
        l.set_name(1, "x".into());
        assert_eq!(l.max_name_len(), 9);
        l.name_if_unset(1, "ignored-because-set".into());
        assert_eq!(l.max_name_len(), 9);
    }
}
