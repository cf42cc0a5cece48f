//! Sample filters: `--comms`, `--pid`, `--tid`, `--cpu` and `--time`,
//! applied by the session before a sample reaches a tool.
//!
//! perf applies comm/pid/tid filters when it resolves a sample's thread
//! (with the comm current at that point), the CPU filter to samples and
//! side-band records alike, and time ranges to samples only.

use std::collections::BTreeSet;

/// A time range in ns; `None` ends are open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeRange {
    pub start: Option<u64>,
    pub end: Option<u64>,
}

#[derive(Debug, Clone, Default)]
pub struct SampleFilter {
    /// `--comms`: comms as bytes (a comm need not be UTF-8).
    pub comms: Option<BTreeSet<Vec<u8>>>,
    pub pids: Option<BTreeSet<i32>>,
    pub tids: Option<BTreeSet<i32>>,
    pub cpus: Option<BTreeSet<u32>>,
    pub time: Vec<TimeRange>,
}

impl SampleFilter {
    /// Whether no filter is set.
    pub fn is_empty(&self) -> bool {
        self.comms.is_none() && self.pids.is_none() && self.tids.is_none() && self.cpus.is_none() && self.time.is_empty()
    }

    /// `--comms`: a comma-separated list (perf's strlist).
    pub fn parse_list(s: &[u8]) -> BTreeSet<Vec<u8>> {
        parse_list(s)
    }

    /// `--pid`, `--tid`: comma-separated numbers (perf's intlist).
    pub fn parse_int_list(s: &str) -> Result<BTreeSet<i32>, String> {
        parse_int_list(s)
    }

    /// `-C`: perf's CPU list syntax, `0,2-4`.
    pub fn parse_cpu_list(s: &str) -> Result<BTreeSet<u32>, String> {
        parse_cpu_list(s)
    }

    /// perf's `filter_cpu`: samples without a CPU are never filtered.
    pub fn skip_cpu(&self, cpu: u32) -> bool {
        match &self.cpus {
            Some(set) if cpu != u32::MAX => !set.contains(&cpu),
            _ => false,
        }
    }

    /// perf's `perf_time__ranges_skip_sample`.
    pub fn skip_time(&self, time: u64) -> bool {
        if self.time.is_empty() || time == 0 {
            return false;
        }
        !self.time.iter().any(|r| r.start.is_none_or(|s| time >= s) && r.end.is_none_or(|e| time <= e))
    }

    /// The thread filters of `machine__resolve`.
    pub fn skip_thread(&self, comm: &[u8], pid: i32, tid: i32) -> bool {
        self.comms.as_ref().is_some_and(|c| !c.contains(comm))
            || self.pids.as_ref().is_some_and(|p| !p.contains(&pid))
            || self.tids.as_ref().is_some_and(|t| !t.contains(&tid))
    }
}

/// A comma-separated list (perf's strlist: entries are trimmed of blanks,
/// empty ones dropped), as bytes.
pub fn parse_list(s: &[u8]) -> BTreeSet<Vec<u8>> {
    list_entries(s).map(<[u8]>::to_vec).collect()
}

/// The entries of a perf strlist, in order.
pub(crate) fn list_entries(s: &[u8]) -> impl Iterator<Item = &[u8]> {
    s.split(|&b| b == b',').map(<[u8]>::trim_ascii).filter(|x| !x.is_empty())
}

/// A comma-separated list of integers, as perf's `intlist__parse_list`
/// reads it: each entry is C's `strtol` (leading blanks and a sign; an
/// empty entry is 0) and must end at a comma or the end.
pub fn parse_int_list(s: &str) -> Result<BTreeSet<i32>, String> {
    let mut set = BTreeSet::new();
    for entry in s.split(',') {
        let (n, rest) = strtol_prefix(entry, 10);
        if !rest.is_empty() {
            return Err(format!("invalid number '{entry}'"));
        }
        set.insert(n as i32);
    }
    Ok(set)
}

/// C's `strtol`/`strtoul` as far as they read: the value and what is left
/// (all of `s` when no digits were read). Base 0 takes `0x` (hex) and `0`
/// (octal) prefixes.
fn strtol_prefix(s: &str, base: u32) -> (i64, &str) {
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let (radix, digits) = match base {
        0 if (t.starts_with("0x") || t.starts_with("0X")) && t[2..].starts_with(|c: char| c.is_ascii_hexdigit()) => (16, &t[2..]),
        0 if t.starts_with('0') => (8, t),
        0 => (10, t),
        b => (b, t),
    };
    let end = digits.find(|c: char| !c.is_digit(radix)).unwrap_or(digits.len());
    if end == 0 {
        return (0, s);
    }
    let mut n: i64 = 0;
    for c in digits[..end].chars() {
        n = n.saturating_mul(radix as i64).saturating_add(c.to_digit(radix).unwrap_or(0) as i64);
    }
    (if neg { n.saturating_neg() } else { n }, &digits[end..])
}

/// A CPU list as libperf's `perf_cpu_map__new` reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuMap {
    /// The CPUs, sorted.
    pub cpus: Vec<u32>,
    /// A CPU at or above perf's MAX_NR_CPUS (4096) was named (perf warns).
    pub warned: bool,
}

/// libperf's `perf_cpu_map__new`: `N` and `N-M` entries (C's `strtoul`,
/// base 0) separated by commas; reading stops at anything else (an empty
/// entry ends the list). A CPU named twice, a range running backwards or a
/// CPU past 32766 make the list invalid (`Err`, with what perf warned
/// before). A list that names no CPU at all is empty here (perf then
/// means every CPU).
pub fn parse_cpu_map(s: &str) -> Result<CpuMap, Vec<String>> {
    const INT16_MAX: i64 = i16::MAX as i64;
    let mut cpus: Vec<u32> = Vec::new();
    let mut warned = false;
    let mut rest = s;
    if !rest.is_empty() && !rest.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(Vec::new());
    }
    let said = |warned: bool| if warned { vec!["Perf can support 4096 CPUs. Consider raising MAX_NR_CPUS".to_string()] } else { Vec::new() };
    while rest.starts_with(|c: char| c.is_ascii_digit()) {
        let (start, p) = strtol_prefix(rest, 0);
        if start >= INT16_MAX || !(p.is_empty() || p.starts_with([',', '-', '\n'])) {
            return Err(said(warned));
        }
        let (end, p) = match p.strip_prefix('-') {
            Some(r) => {
                let (end, p) = strtol_prefix(r, 0);
                if end >= INT16_MAX || !(p.is_empty() || p.starts_with([',', '\n'])) || end < start {
                    return Err(said(warned));
                }
                (end, p)
            }
            None => (start, p),
        };
        warned |= end >= 4096;
        for cpu in start..=end {
            if cpus.contains(&(cpu as u32)) {
                return Err(said(warned));
            }
            cpus.push(cpu as u32);
        }
        rest = p.get(1..).unwrap_or("");
    }
    cpus.sort_unstable();
    Ok(CpuMap { cpus, warned })
}

/// perf's CPU list syntax: `0,2-4`.
pub fn parse_cpu_list(s: &str) -> Result<BTreeSet<u32>, String> {
    let mut set = BTreeSet::new();
    for part in s.split(',').map(str::trim).filter(|x| !x.is_empty()) {
        let bad = || format!("Invalid cpu_list: {s}");
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.trim().parse().map_err(|_| bad())?, b.trim().parse().map_err(|_| bad())?);
                if a > b || b - a > 1 << 16 {
                    return Err(bad());
                }
                set.extend(a..=b);
            }
            None => {
                set.insert(part.parse().map_err(|_| bad())?);
            }
        }
    }
    Ok(set)
}

/// Parses one time stamp of perf's range syntax: `seconds[.fraction]`,
/// the fraction up to nanoseconds.
fn parse_timestamp(s: &str) -> Option<u64> {
    let s = s.trim();
    let (secs, frac) = match s.split_once('.') {
        Some((a, b)) => (a, b),
        None => (s, ""),
    };
    if secs.is_empty() && frac.is_empty() {
        return None;
    }
    if !secs.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) || frac.len() > 9 {
        return None;
    }
    let secs: u64 = if secs.is_empty() { 0 } else { secs.parse().ok()? };
    let mut ns: u64 = 0;
    for (i, d) in frac.bytes().enumerate() {
        ns += (d - b'0') as u64 * 10u64.pow(8 - i as u32);
    }
    secs.checked_mul(1_000_000_000)?.checked_add(ns)
}

/// perf's `--time` syntax: one or more `start,stop` pairs separated by
/// spaces (either end may be empty; times are `seconds[.fraction]`; ranges
/// must not overlap), or percentage ranges (`10%/2`, `0%-10%`, lists of
/// either separated by commas) of the span between the first and last
/// sample times recorded in the file.
pub fn parse_time(s: &str, first: u64, last: u64) -> Result<Vec<TimeRange>, String> {
    let bad = || "Invalid time string".to_string();
    if s.contains('%') {
        return parse_percent(s, first, last).ok_or_else(bad);
    }
    if !s.contains(',') {
        return Err(bad());
    }
    let mut out = Vec::new();
    for pair in s.split_whitespace() {
        let (a, b) = pair.split_once(',').ok_or_else(bad)?;
        if b.contains(',') {
            return Err(bad());
        }
        let start = if a.is_empty() { None } else { Some(parse_timestamp(a).ok_or_else(bad)?) };
        let end = if b.is_empty() { None } else { Some(parse_timestamp(b).ok_or_else(bad)?) };
        if let (Some(x), Some(y)) = (start, end)
            && x > y {
                return Err(bad());
            }
        out.push(TimeRange { start, end });
    }
    let overlapping = out.windows(2).any(|w| w[0].end.unwrap_or(u64::MAX) >= w[1].start.unwrap_or(0));
    if out.is_empty() || overlapping {
        return Err(bad());
    }
    Ok(out)
}

/// perf's `perf_time__percent_parse_str`: `10%/2` (the 2nd tenth) and
/// `0%-10%` (the first tenth), in comma-separated lists of one kind (a `/`
/// anywhere makes every part a slice, else a `-` every part a range), or
/// one `10%` alone (the first tenth, as `10%/1`). Ranges are rounded to
/// the nanosecond, and end a nanosecond early unless they end at the last
/// sample, as in perf.
fn parse_percent(s: &str, first: u64, last: u64) -> Option<Vec<TimeRange>> {
    let total = last.checked_sub(first)?;
    // perf's parse_percent: the number before the first '%' (what
    // follows the '%' is not looked at), as a fraction.
    let pct = |x: &str| -> Option<f64> { x.split_once('%')?.0.parse::<f64>().ok().map(|d| d / 100.0) };
    let set = |lo: f64, hi: f64| {
        let start = first.wrapping_add((lo * total as f64).round() as u64);
        let mut end = first.wrapping_add((hi * total as f64).round() as u64);
        if end > start && end != last {
            end -= 1;
        }
        TimeRange { start: Some(start), end: Some(end) }
    };
    let slice = |part: &str| -> Option<TimeRange> {
        let (p, n) = part.split_once('/')?;
        let p = pct(p)?;
        let n: i64 = n.parse().ok()?;
        let (lo, hi) = (p * (n - 1) as f64, p * n as f64);
        let ok = |v: f64| (0.0..=1.0).contains(&v);
        (p > 0.0 && ok(lo) && ok(hi)).then(|| set(lo, hi))
    };
    let range = |part: &str| -> Option<TimeRange> {
        let (a, b) = part.split_once('-')?;
        let (lo, hi) = (pct(a)?, pct(b)?);
        let ok = |v: f64| (0.0..=1.0).contains(&v);
        (ok(lo) && ok(hi)).then(|| set(lo, hi))
    };
    let list = |each: &dyn Fn(&str) -> Option<TimeRange>| -> Option<Vec<TimeRange>> {
        // A trailing comma ends the list; any other empty part is an error.
        let s = s.strip_suffix(',').unwrap_or(s);
        s.split(',').map(each).collect()
    };
    if s.contains('/') {
        list(&slice)
    } else if s.contains('-') {
        list(&range)
    } else if s.find('%') == Some(s.len() - 1) {
        slice(&format!("{s}/1")).map(|r| vec![r])
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0,2-4").unwrap().into_iter().collect::<Vec<_>>(), vec![0, 2, 3, 4]);
        assert!(parse_cpu_list("4-2").is_err());
        assert!(parse_cpu_list("x").is_err());
        let m = |s: &str| parse_cpu_map(s).map(|m| m.cpus);
        assert_eq!(m("1,,2"), Ok(vec![1]));
        assert_eq!(m("3,0x1,2-2"), Ok(vec![1, 2, 3]));
        assert_eq!(m("010"), Ok(vec![8]));
        assert!(m("1,1").is_err() && m("3-1").is_err() && m("x").is_err() && m("1x").is_err());
        assert!(parse_cpu_map("4096").unwrap().warned);
        assert_eq!(parse_int_list("1,,-2").unwrap().into_iter().collect::<Vec<_>>(), vec![-2, 0, 1]);
        assert!(parse_int_list("1,x").is_err() && parse_int_list("2 ").is_err());
    }

    #[test]
    fn time_ranges() {
        assert!(parse_time("748.1", 0, 0).is_err());
        assert_eq!(parse_time("1,2 3,4", 0, 0).unwrap().len(), 2);
        assert!(parse_time("1,3 2,4", 0, 0).is_err());
        let r = parse_time("748.1,748.2", 0, 0).unwrap();
        assert_eq!(r, vec![TimeRange { start: Some(748_100_000_000), end: Some(748_200_000_000) }]);
        let f = SampleFilter { time: r, ..Default::default() };
        assert!(!f.skip_time(748_150_000_000));
        assert!(f.skip_time(748_250_000_000));
        let open = parse_time(",748.000000123", 0, 0).unwrap();
        assert_eq!(open[0], TimeRange { start: None, end: Some(748_000_000_123) });
        assert!(parse_time("b,a", 0, 0).is_err());
        assert!(parse_time("2,1", 0, 0).is_err());
        let p = parse_time("10%/2", 0, 1000).unwrap();
        assert_eq!(p[0], TimeRange { start: Some(100), end: Some(199) });
        // One percentage alone: the first slice of that size; up to the
        // last sample, the end is not pulled in.
        assert_eq!(parse_time("100%", 10, 1010).unwrap(), vec![TimeRange { start: Some(10), end: Some(1010) }]);
        assert_eq!(parse_time("10%", 0, 1000).unwrap(), vec![TimeRange { start: Some(0), end: Some(99) }]);
        assert!(parse_time("10%,20%", 0, 1000).is_err() && parse_time("200%", 0, 1000).is_err());
        assert!(parse_time("5%/30", 0, 1000).is_err() && parse_time("10%/2,,20%/1", 0, 1000).is_err());
        assert_eq!(parse_time("0%-5%,90%-100%,", 0, 1000).unwrap().len(), 2);
    }

    #[test]
    fn thread_filters() {
        let f = SampleFilter { comms: Some(parse_list(b"a, b,\xffw\xe9")), ..Default::default() };
        assert!(!f.skip_thread(b"b", 1, 1));
        assert!(f.skip_thread(b"c", 1, 1));
        assert!(!f.skip_thread(b"\xffw\xe9", 1, 1));
        assert!(f.skip_thread(b"\xffw", 1, 1));
        let f = SampleFilter { tids: Some(parse_int_list("5").unwrap()), cpus: Some(parse_cpu_list("1").unwrap()), ..Default::default() };
        assert!(f.skip_thread(b"x", 5, 6));
        assert!(f.skip_cpu(0));
        assert!(!f.skip_cpu(u32::MAX));
    }
}
