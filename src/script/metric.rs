//! The `metric` field, as perf 7.2's `perf_sample__fprint_metric` prints it.
//!
//! perf treats each printed sample as a reading of a counter and, after
//! the sample (and its callchain), prints one line for every metric whose
//! events the recording has:
//!
//! ```text
//!            cwork   23040 [001] <TAB>metric:      nan faults/sec  page_faults_per_second
//! ```
//! that is the sample's own start of line (its comm, tid, cpu, time
//! columns), `\tmetric: `, the value as `%8.1f`, and `" %s  %s"` of the
//! metric's unit and name.
//!
//! What perf 7.2 does, and what pstitch keeps of it (found by running
//! perf 7.2 on recordings made for it, software and crafted hardware
//! events, per-task and system-wide; see `docs/metric.md`):
//! - **Which metrics.** On the first sample perf parses every metric of the
//!   metric table of the machine that runs it and keeps those whose events
//!   (matched by attr type and config) are all in the recording. Only the
//!   software metrics of perf's common table are the same on every
//!   machine: `cs_per_second`, `migrations_per_second` and
//!   `page_faults_per_second`, each `event × 10⁹ / clock`, the clock being
//!   task-clock, or cpu-clock for a system-wide recording (a thread map
//!   whose first entry is -1: perf's `#target_cpu`). The common table's
//!   hardware metrics (`insn_per_cycle`, `cycles_frequency`, ...) come
//!   with the metrics of the reading machine's CPU table, and what perf
//!   prints for them changes with the recording's other events, so pstitch
//!   says once that it leaves them out.
//! - **Which line where.** A metric hangs off one of its events, and after
//!   each sample the metrics print in evlist order of those events: the
//!   metric's own event, except `migrations_per_second` of a per-task
//!   recording, which hangs off task-clock (the order in which perf's id
//!   hash map lists the metric's two events decides).
//! - **The thread map.** perf keeps its counts per thread of the map that
//!   THREAD_MAP sets (the first one, and only once a CPU_MAP came too). A
//!   sample whose tid is not in it (unless the map's first entry is -1, any
//!   thread) makes perf say `Missing thread map entry for thread N` at once
//!   and print no metric for that sample.
//! - **The value.** perf 7.2 adds each sample's period to a count kept per
//!   CPU and thread of those maps and evaluates the metric over the counts.
//!   It prints nan on almost every recording (samples without the CPU,
//!   system-wide recordings, page-faults and context-switches always);
//!   where it prints numbers (`migrations_per_second` of a per-task
//!   recording with the CPU in its samples) they are not the ratio of the
//!   periods and change with the recording's other events. pstitch prints
//!   `nan`, perf's value in all other cases (a deliberate difference, in the
//!   man page's COMPATIBILITY and `docs/metric.md`).

use std::io::Write;

use perf_data::evlist::Evlist;

use super::format;

const PERF_TYPE_HARDWARE: u32 = 0;
const PERF_TYPE_SOFTWARE: u32 = 1;
const SW_CPU_CLOCK: u64 = 0;
const SW_TASK_CLOCK: u64 = 1;
const SW_CPU_MIGRATIONS: u64 = 4;

/// A software metric of perf's common table (`pmu-events/arch/common`),
/// with its `ScaleUnit`'s unit.
pub(super) struct Metric {
    name: &'static str,
    /// The software event's config.
    event: u64,
    unit: &'static str,
}

const METRICS: [Metric; 3] = [
    Metric { name: "cs_per_second", event: 3, unit: "cs/sec" },
    Metric { name: "migrations_per_second", event: SW_CPU_MIGRATIONS, unit: "migrations/sec" },
    Metric { name: "page_faults_per_second", event: 2, unit: "faults/sec" },
];

/// Hardware events of the common table's metrics (cycles, instructions,
/// branches, branch-misses, stalled-cycles-frontend and -backend).
const HARDWARE_METRIC_EVENTS: [u64; 6] = [0, 1, 4, 5, 7, 8];

/// The metrics of a recording in print order, then `None`s: a copy for
/// each printed sample costs no allocation.
pub(super) type Found = [Option<&'static Metric>; METRICS.len()];

#[derive(Default)]
pub(super) struct Metrics {
    /// The pids of the first THREAD_MAP record.
    threads: Option<Vec<i32>>,
    /// A CPU_MAP record came: perf applies the maps once it has both.
    cpu_map: bool,
    /// The metrics found on the first sample, in print order.
    found: Option<Found>,
    /// The hardware metrics left out, to be said once (see the module doc).
    pub left_out: Option<String>,
}

impl Metrics {
    /// A THREAD_MAP record; perf ignores all but the first.
    pub fn thread_map(&mut self, pids: Vec<i32>) {
        self.threads.get_or_insert(pids);
    }

    /// A CPU_MAP record.
    pub fn cpu_map(&mut self) {
        self.cpu_map = true;
    }

    /// perf's thread map, once it applies one: without it, every sample
    /// counts as of any thread.
    fn applied_threads(&self) -> Option<&[i32]> {
        self.threads.as_deref().filter(|_| self.cpu_map)
    }

    /// The metric lines to print after a sample of thread `tid`, or
    /// nothing after saying (as perf does, at once) that the thread is not
    /// in the thread map.
    pub fn sample(&mut self, evlist: &Evlist, tid: i32) -> Option<Found> {
        if self.found.is_none() {
            self.found = Some(self.find(evlist));
        }
        if let Some(threads) = self.applied_threads()
            && !threads.contains(&tid)
            && threads.first() != Some(&-1)
        {
            let _ = writeln!(std::io::stderr().lock(), "Missing thread map entry for thread {tid}");
            return None;
        }
        self.found
    }

    fn find(&mut self, evlist: &Evlist) -> Found {
        let evsels = &evlist.evsels;
        if evsels.iter().any(|e| e.attr.type_ == PERF_TYPE_HARDWARE && HARDWARE_METRIC_EVENTS.contains(&e.attr.config)) {
            self.left_out = Some("the 'metric' field: metrics of hardware events are not printed (perf takes them from the metric table of the CPU that reads the file)".into());
        }
        let first = |config: u64| evsels.iter().position(|e| e.attr.type_ == PERF_TYPE_SOFTWARE && e.attr.config == config);
        let system_wide = self.applied_threads().is_none_or(|t| t.first() == Some(&-1));
        let Some(clock) = first(if system_wide { SW_CPU_CLOCK } else { SW_TASK_CLOCK }) else { return Found::default() };
        let mut found: Vec<(usize, &'static Metric)> = METRICS
            .iter()
            .filter_map(|m| {
                let event = first(m.event)?;
                let display = if m.event == SW_CPU_MIGRATIONS && !system_wide { clock } else { event };
                Some((display, m))
            })
            .collect();
        found.sort_by_key(|&(display, _)| display);
        let mut metrics = Found::default();
        for (slot, (_, m)) in metrics.iter_mut().zip(found) {
            *slot = Some(m);
        }
        metrics
    }
}

/// perf's `"\tmetric: "`, `%8.1f` of the value (NaN: glibc's `nan`) and
/// `" %s  %s\n"` of the unit and name.
pub(super) fn print_line(out: &mut Vec<u8>, metric: &Metric) {
    out.extend_from_slice(b"\tmetric: ");
    format::pad_left(out, b"nan", 8);
    format::text(out, format_args!(" {}  {}\n", metric.unit, metric.name));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_as_perf_does() {
        let mut out = Vec::new();
        print_line(&mut out, &METRICS[2]);
        assert_eq!(String::from_utf8(out).unwrap(), "\tmetric:      nan faults/sec  page_faults_per_second\n");
    }

    fn evlist(events: &[(u32, u64)]) -> Evlist {
        let mut evlist = Evlist::default();
        for &(type_, config) in events {
            let attr = perf_data::attr::Attr { type_, config, ..Default::default() };
            evlist.push(perf_data::evlist::Evsel { attr, name: None, ids: Vec::new() });
        }
        evlist
    }

    fn names(m: &mut Metrics, evlist: &Evlist) -> Vec<&'static str> {
        m.find(evlist).iter().flatten().map(|m| m.name).collect()
    }

    const SW: u32 = PERF_TYPE_SOFTWARE;

    #[test]
    fn per_task_metrics_need_task_clock_and_migrations_hang_off_it() {
        // cpu-migrations, page-faults, context-switches, task-clock (per-task map)
        let ev = evlist(&[(SW, 4), (SW, 2), (SW, 3), (SW, 1)]);
        let mut m = Metrics::default();
        m.thread_map(vec![26346]);
        m.cpu_map();
        assert_eq!(names(&mut m, &ev), ["page_faults_per_second", "cs_per_second", "migrations_per_second"]);
        // cpu-clock alone is not the per-task clock.
        assert!(names(&mut m, &evlist(&[(SW, 0), (SW, 2)])).is_empty());
        assert!(m.left_out.is_none());
    }

    #[test]
    fn system_wide_metrics_use_cpu_clock_and_hang_off_their_event() {
        let ev = evlist(&[(SW, 4), (SW, 2), (SW, 0), (SW, 3)]);
        let mut m = Metrics::default();
        m.thread_map(vec![-1]);
        m.cpu_map();
        assert_eq!(names(&mut m, &ev), ["migrations_per_second", "page_faults_per_second", "cs_per_second"]);
        assert!(names(&mut m, &evlist(&[(SW, 1), (SW, 2)])).is_empty());
    }

    #[test]
    fn hardware_metrics_are_said_to_be_left_out() {
        let mut m = Metrics::default();
        // cycles and instructions: perf's insn_per_cycle.
        assert!(names(&mut m, &evlist(&[(PERF_TYPE_HARDWARE, 0), (PERF_TYPE_HARDWARE, 1)])).is_empty());
        assert!(m.left_out.is_some());
    }

    #[test]
    fn the_thread_map_counts_only_with_a_cpu_map() {
        let mut m = Metrics::default();
        m.thread_map(vec![100]);
        assert_eq!(m.applied_threads(), None);
        m.cpu_map();
        assert_eq!(m.applied_threads(), Some(&[100][..]));
        // Later maps are ignored, as perf ignores them.
        m.thread_map(vec![-1]);
        assert_eq!(m.applied_threads(), Some(&[100][..]));
    }
}
