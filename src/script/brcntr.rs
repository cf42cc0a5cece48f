//! The `brcntr` field: branch counters (Intel's LBR event logging, `perf
//! record -e '{a,b}:S' -j any,counter`), as perf 7.2 prints them.
//!
//! With `PERF_SAMPLE_BRANCH_COUNTERS` in `branch_sample_type`, every branch
//! of a sample's branch stack has a counters word after the entries: how
//! often each counted event of the sample's group occurred since the
//! previous branch, `width` bits per event, in group order (the leader's
//! in the low bits), saturating at `2^width - 1`. The width (and the
//! hardware's number of counters) are not in the record: perf takes them
//! from HEADER_CPU_PMU_CAPS (`branch_counter_width`, `branch_counter_nr`,
//! read with `atoi`), or, without it, from the first PMU of HEADER_PMU_CAPS
//! (hybrid machines).
//!
//! ```text
//! # Branch counter abbr list:          before every line (sample or side
//! # cpu-clock = A                       band) once perf has read a sample
//! # task-clock = B                      with a branch stack: it numbers the
//! # '-' No event occurs                 counted events lazily, then
//! # '+' Event occurrences may be lost due to branch counter saturated
//! ... insn: 74 0c ....(30)\t\t# br_cntr: AAB+  PRED 5 cycles [12]
//! ```
//!
//! Facts of perf 7.2 kept here (perf-ref decides):
//! - Counted events are those with `PERF_SAMPLE_BRANCH_COUNTERS` in their
//!   own attr, numbered in file order; each gets an abbreviation `A`..`Z`,
//!   then `A0`..`Z9`, then `NA`, an event with the name of an earlier one
//!   that one's.
//! - A jump line of `brstackinsn` takes the counters of its entry; its
//!   events are those counted from the sample's group leader on, in file
//!   order, up to the first counted event of another group (GROUP_DESC
//!   gives the groups; without it every event leads its own). Each prints
//!   its abbreviation as often as it occurred, and `+` when the count is
//!   saturated; `-` when nothing was printed.
//! - The mask is a C `unsigned int` of `(1L << width) - 1` and the shifts are
//!   x86's (counts taken modulo 64). pstitch refuses widths over 16 bits
//!   (`BranchCounters::check`): perf would print up to 2^32 letters per
//!   event and branch.

use std::fmt::Write as _;

use perf_data::attr::branch_sample_type::COUNTERS;
use perf_data::env::Env;
use perf_data::evlist::Evlist;
use perf_data::features::{Features, feat};

/// The widest counters pstitch prints (see the module doc).
pub const MAX_WIDTH: u32 = 16;

/// What perf knows of the branch counters of a recording once it has read
/// a sample with a branch stack (its `evlist__update_br_cntr`).
#[derive(Debug, Default)]
pub(super) struct BranchCounters {
    /// perf's abbreviation list (`annotation_br_cntr_abbr_list`), empty
    /// when no event is counted.
    pub list: Vec<u8>,
    /// Bits per event in a counters word, and the hardware's number of
    /// counters (`perf_env__find_br_cntr_info`).
    pub width: u32,
    pub nr: u32,
    /// Per event: the counted events of its group, in the order of the
    /// word's fields (indexes into `abbrs`).
    groups: Vec<Vec<usize>>,
    /// Per event: its abbreviation (empty if not counted).
    abbrs: Vec<String>,
}

impl BranchCounters {
    /// The counted events of `evlist` (`name` is the name perf prints for
    /// an event) and the counters' width and number from the features.
    pub fn new(evlist: &Evlist, features: &Features, name: impl Fn(usize) -> String) -> BranchCounters {
        let mut env = Env::default();
        for bit in [feat::CPU_PMU_CAPS, feat::PMU_CAPS, feat::GROUP_DESC] {
            if let Some(payload) = features.get(bit) {
                // A section perf refuses leaves what it says unknown here too.
                let _ = env.process(bit, payload, features.endian(), evlist);
            }
        }
        let (nr, width) = cntr_info(&env);
        let n = evlist.evsels.len();
        let counted: Vec<bool> = evlist.evsels.iter().map(|e| e.attr.branch_sample_type & COUNTERS != 0).collect();
        let leaders: Vec<usize> = match &env.groups {
            Some(g) if g.len() == n => g.iter().map(|g| g.leader).collect(),
            _ => (0..n).collect(),
        };
        let mut abbrs = vec![String::new(); n];
        let names: Vec<String> = (0..n).map(&name).collect();
        let mut next = 0usize;
        let mut list = String::new();
        for i in (0..n).filter(|&i| counted[i]) {
            abbrs[i] = match (0..i).find(|&j| counted[j] && names[j] == names[i]) {
                Some(j) => abbrs[j].clone(),
                None => {
                    next += 1;
                    abbreviation(next - 1)
                }
            };
            let _ = writeln!(list, "# {} = {}", names[i], abbrs[i]);
        }
        let list = if list.is_empty() {
            Vec::new()
        } else {
            format!("# Branch counter abbr list:\n{list}# '-' No event occurs\n# '+' Event occurrences may be lost due to branch counter saturated\n")
                .into_bytes()
        };
        let groups = (0..n)
            .map(|i| {
                let leader = leaders[i];
                (leader..n).filter(|&j| counted[j]).take_while(|&j| leaders[j] == leader).collect()
            })
            .collect();
        BranchCounters { list, width, nr, groups, abbrs }
    }

    /// Why pstitch cannot print the counters of this recording, if so.
    pub fn check(&self) -> Result<(), String> {
        if self.width > MAX_WIDTH && !self.list.is_empty() {
            return Err(format!(
                "pstitch does not support the 'brcntr' field with a branch_counter_width of {} in the PMU capabilities (at most {MAX_WIDTH})",
                self.width
            ));
        }
        Ok(())
    }

    /// perf's `br_cntr: ...` of a `brstackinsn` jump line of a sample of
    /// event `evsel`, for the counters word `word`; then the blank before
    /// the branch's flags.
    pub fn print(&self, out: &mut Vec<u8>, evsel: usize, word: u64) {
        out.extend_from_slice(b"\t# br_cntr: ");
        let mask = 1u64.wrapping_shl(self.width).wrapping_sub(1) as u32;
        let before = out.len();
        for (i, &e) in self.groups.get(evsel).map(Vec::as_slice).unwrap_or_default().iter().enumerate() {
            // C: unsigned int arithmetic, x86 shift counts.
            let shift = (i as u32).wrapping_mul(self.width);
            let num = (word.wrapping_shr(shift) as u32) & mask;
            let abbr = self.abbrs[e].as_bytes();
            for _ in 0..num.min(1 << MAX_WIDTH) {
                out.extend_from_slice(abbr);
            }
            if num == mask && num != 0 {
                out.push(b'+');
            }
        }
        if out.len() == before {
            out.push(b'-');
        }
        out.push(b' ');
    }
}

/// perf's `perf_env__find_br_cntr_info`: from HEADER_CPU_PMU_CAPS when it
/// lists capabilities, else from the first PMU of HEADER_PMU_CAPS (perf
/// dereferences a null pointer without either: 0 here).
fn cntr_info(env: &Env) -> (u32, u32) {
    let caps = if !env.cpu_pmu_caps.is_empty() { Some(&env.cpu_pmu_caps) } else { env.pmu_caps.first().map(|(_, c)| c) };
    let (mut nr, mut width) = (0, 0);
    for cap in caps.into_iter().flatten() {
        let Some(eq) = cap.iter().position(|&b| b == b'=') else { continue };
        let (name, value) = (&cap[..eq], &cap[eq + 1..]);
        match name {
            b"branch_counter_nr" => nr = atoi(value) as u32,
            b"branch_counter_width" => width = atoi(value) as u32,
            _ => {}
        }
    }
    (nr, width)
}

/// perf's `env->max_branches`: the `branches` capability of
/// HEADER_CPU_PMU_CAPS, read with `atoi` (0 without it: perf 7.2 does not
/// take it from HEADER_PMU_CAPS).
pub(super) fn max_branches(evlist: &Evlist, features: &Features) -> u32 {
    let mut env = Env::default();
    let Some(payload) = features.get(feat::CPU_PMU_CAPS) else { return 0 };
    let _ = env.process(feat::CPU_PMU_CAPS, payload, features.endian(), evlist);
    let value = env.cpu_pmu_caps.iter().rev().find_map(|c| c.strip_prefix(b"branches="));
    value.map_or(0, |v| atoi(v) as u32)
}

/// C's `atoi`: blanks, a sign, digits; 0 without digits (the value wraps
/// like glibc's `strtol` cast to int).
fn atoi(s: &[u8]) -> i32 {
    let s = &s[s.iter().position(|b| !b" \t\n\x0b\x0c\r".contains(b)).unwrap_or(s.len())..];
    let (neg, digits) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let mut v: i64 = 0;
    for &d in digits.iter().take_while(|d| d.is_ascii_digit()) {
        v = v.saturating_mul(10).saturating_add(i64::from(d - b'0'));
    }
    (if neg { v.wrapping_neg() } else { v }) as i32
}

/// perf's `evlist__new_abbr_name`: `A`..`Z`, `A0`..`Z9`, then `NA`.
fn abbreviation(idx: usize) -> String {
    if idx >= 26 * 11 {
        return "NA".into();
    }
    let letter = char::from(b'A' + (idx % 26) as u8);
    match idx / 26 {
        0 => letter.to_string(),
        i => format!("{letter}{}", i - 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abbreviations_run_a_to_z_then_with_a_digit() {
        assert_eq!(abbreviation(0), "A");
        assert_eq!(abbreviation(25), "Z");
        assert_eq!(abbreviation(26), "A0");
        assert_eq!(abbreviation(26 * 11 - 1), "Z9");
        assert_eq!(abbreviation(26 * 11), "NA");
    }

    #[test]
    fn atoi_reads_as_c_does() {
        assert_eq!(atoi(b"2"), 2);
        assert_eq!(atoi(b"  12abc"), 12);
        assert_eq!(atoi(b"-3"), -3);
        assert_eq!(atoi(b"x"), 0);
        assert_eq!(atoi(b""), 0);
    }

    fn counters(width: u32, group: &[&str]) -> BranchCounters {
        let n = group.len();
        BranchCounters {
            list: b"x".to_vec(),
            width,
            nr: 4,
            groups: vec![(0..n).collect(); n],
            abbrs: group.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn printed(c: &BranchCounters, word: u64) -> String {
        let mut out = Vec::new();
        c.print(&mut out, 0, word);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn counts_print_as_repeated_abbreviations_saturated_ones_with_a_plus() {
        // perf-ref on tests/golden/brcntr: 0x83 -> "AAA+", 0x21 -> "ACC",
        // 0x23 -> "AAA+CC", 0 -> "-", 0x3f -> "AAA+BBB+CCC+".
        let c = counters(2, &["A", "B", "C"]);
        assert_eq!(printed(&c, 0x83), "\t# br_cntr: AAA+ ");
        assert_eq!(printed(&c, 0x21), "\t# br_cntr: ACC ");
        assert_eq!(printed(&c, 0x23), "\t# br_cntr: AAA+CC ");
        assert_eq!(printed(&c, 0), "\t# br_cntr: - ");
        assert_eq!(printed(&c, 0x3f), "\t# br_cntr: AAA+BBB+CCC+ ");
        // An event of no group (a sample of an uncounted event).
        let mut out = Vec::new();
        c.print(&mut out, 7, 0x3f);
        assert_eq!(out, b"\t# br_cntr: - ");
    }

    #[test]
    fn hostile_widths_do_not_overflow() {
        for width in [0, 1, 31, 32, 63, 64, 65, u32::MAX] {
            let c = counters(width, &["A", "B"]);
            let s = printed(&c, u64::MAX);
            assert!(s.len() < 2 * (1 << MAX_WIDTH) + 40, "width {width}");
        }
        assert!(counters(17, &["A"]).check().is_err());
        assert!(counters(16, &["A"]).check().is_ok());
    }
}
