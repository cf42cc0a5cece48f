//! The recorded events (perf's "evlist"): attrs, names and sample ids, and
//! the lookup from a record to the event that wrote it.
//!
//! With several events, each sample carries an id (`PERF_SAMPLE_IDENTIFIER`
//! as its first word, or `PERF_SAMPLE_ID` at a position that depends on the
//! sample_type), and each non-sample record carries it in its `sample_id`
//! trailer. Every event owns a set of ids (one per CPU or thread it was
//! opened on); the attr section (file mode) or HEADER_ATTR records (pipe
//! mode) list them.

use std::collections::HashMap;

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
#[derive(Debug, Clone, Default)]
pub struct Evlist {
    pub evsels: Vec<Evsel>,
    by_id: HashMap<u64, usize>,
}

impl Evlist {
    pub fn push(&mut self, evsel: Evsel) -> usize {
        let idx = self.evsels.len();
        for &id in &evsel.ids {
            self.by_id.entry(id).or_insert(idx);
        }
        self.evsels.push(evsel);
        idx
    }

    pub fn add_ids(&mut self, idx: usize, ids: &[u64]) {
        if let Some(ev) = self.evsels.get_mut(idx) {
            ev.ids.extend_from_slice(ids);
            for &id in ids {
                self.by_id.entry(id).or_insert(idx);
            }
        }
    }

    pub fn len(&self) -> usize {
        self.evsels.len()
    }

    pub fn is_empty(&self) -> bool {
        self.evsels.is_empty()
    }

    pub fn by_id(&self, id: u64) -> Option<usize> {
        self.by_id.get(&id).copied()
    }

    /// Does the first event have `sample_id_all`? perf decides from it alone.
    pub fn sample_id_all(&self) -> bool {
        self.evsels.first().is_some_and(|e| e.attr.sample_id_all())
    }

    /// The event that wrote `rec`, as perf's `evlist__event2evsel` finds it:
    /// the only event if there is one; the first one for non-sample records
    /// without `sample_id_all` and for synthesized records (id 0); otherwise
    /// the owner of the record's id. `None` when the id is unknown.
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
        self.evsels.iter().map(|e| e.name().len()).max().unwrap_or(0)
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

/// perf's modifier suffix (`:u`, `:k`, `:ppp`, `:H`, ...) for an attr.
fn modifiers(attr: &Attr) -> String {
    let mut m = String::new();
    let mut unless = |excluded: bool, c: char| {
        if !excluded {
            m.push(c);
        }
    };
    let (k, u, h) = (attr.has(flag::EXCLUDE_KERNEL), attr.has(flag::EXCLUDE_USER), attr.has(flag::EXCLUDE_HV));
    if k || u || h {
        unless(k, 'k');
        unless(u, 'u');
        unless(h, 'h');
    }
    let (host, guest) = (attr.has(flag::EXCLUDE_HOST), attr.has(flag::EXCLUDE_GUEST));
    let hg = host || guest == host;
    m.push_str(&"ppp"[..attr.precise_ip() as usize]);
    if hg {
        if !host {
            m.push('H');
        }
        if !guest {
            m.push('G');
        }
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
        event_type::TRACEPOINT => "unknown tracepoint".to_string(),
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

    #[test]
    fn default_names_follow_perf() {
        let mut a = Attr { type_: event_type::SOFTWARE, config: 0, flags: flag::EXCLUDE_GUEST, ..Attr::default() };
        assert_eq!(default_name(&a), "cpu-clock");
        a.flags |= flag::EXCLUDE_KERNEL | flag::EXCLUDE_HV;
        assert_eq!(default_name(&a), "cpu-clock:u");
        a.config = 9;
        a.flags = 0;
        assert_eq!(default_name(&a), "dummy:HG");
        let b = Attr { type_: event_type::HARDWARE, config: 0, flags: 2 << flag::PRECISE_IP_SHIFT, ..Attr::default() };
        assert_eq!(default_name(&b), "cycles:ppHG");
    }
}
