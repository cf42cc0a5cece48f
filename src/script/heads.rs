//! The start of a sample line, remembered.
//!
//! Every sample line starts with the same few fields in perf's layout:
//!
//! ```text
//!   rustc   16061 [000]  2294.344835:      50000 cpu-clock:pppH:
//!   '----- head -----''--- time ---' '------- tail --------'
//!   comm, pid/tid, cpu                period, event name
//! ```
//!
//! The head depends only on the thread, its comm and the CPU, and a
//! recording's samples come in runs of a few threads on a few CPUs; the
//! tail depends on the period and the event, which a fixed-period event
//! (or a frequency that settled) repeats. So both are formatted once and
//! copied after, and only the time is formatted for every line.

use super::fields::f;
use super::format;

/// Heads by (tid, cpu), direct-mapped.
pub struct Heads {
    /// `-L`: perf's latency layout (`%8.8s` comm, `%3d` cpu).
    latency: bool,
    slots: Box<[Head]>,
    /// The last tail: (period, event, field bits) and its text.
    tail: Option<(u64, usize, u64)>,
    tail_text: Vec<u8>,
}

#[derive(Default)]
struct Head {
    /// (fields shown, comm unpadded, pid, tid, cpu); `None` while empty.
    key: Option<(u64, bool, i32, i32, u32)>,
    comm: Vec<u8>,
    text: Vec<u8>,
}

/// The fields a head holds.
const HEAD: u64 = f::COMM | f::PID | f::TID | f::CPU;

impl Default for Heads {
    fn default() -> Heads {
        Heads { latency: false, slots: (0..64).map(|_| Head::default()).collect(), tail: None, tail_text: Vec::new() }
    }
}

impl Heads {
    /// `latency`: `-L`'s layout.
    pub fn new(latency: bool) -> Heads {
        Heads { latency, ..Heads::default() }
    }

    /// Appends the head of a line (see [`head`]).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn head(&mut self, out: &mut Vec<u8>, fields: u64, comm: &[u8], pid: i32, tid: i32, cpu: u32, comm_unpadded: bool) {
        let key = (fields & HEAD, comm_unpadded, pid, tid, cpu);
        let h = (tid as u32).wrapping_mul(0x9e37_79b9) ^ cpu.wrapping_mul(0x85eb_ca6b);
        let slot = &mut self.slots[(h >> 26) as usize];
        if slot.key != Some(key) || slot.comm != comm {
            slot.text.clear();
            head(&mut slot.text, fields, comm, pid, tid, cpu, comm_unpadded, self.latency);
            slot.comm.clear();
            slot.comm.extend_from_slice(comm);
            slot.key = Some(key);
        }
        format::put_short(out, &slot.text);
    }

    /// Appends the period and event name fields of a sample line if they
    /// are the last line's (`event` stands for the name and its width);
    /// false if they need formatting, then [`Heads::keep_tail`].
    #[inline]
    pub fn tail(&mut self, out: &mut Vec<u8>, fields: u64, period: u64, event: usize) -> bool {
        if self.tail != Some((period, event, fields)) {
            return false;
        }
        format::put_short(out, &self.tail_text);
        true
    }

    pub fn keep_tail(&mut self, fields: u64, period: u64, event: usize, text: &[u8]) {
        self.tail = Some((period, event, fields));
        self.tail_text.clear();
        self.tail_text.extend_from_slice(text);
    }
}

/// perf's comm, pid/tid and cpu fields of a line (`fprintf_sample_start`);
/// `latency`: `-L`'s layout.
#[allow(clippy::too_many_arguments)]
pub fn head(out: &mut Vec<u8>, fields: u64, comm: &[u8], pid: i32, tid: i32, cpu: u32, comm_unpadded: bool, latency: bool) {
    if fields & f::COMM != 0 {
        if latency {
            // `%8.8s`: at most 8 bytes, right-aligned in 8 columns.
            let b = comm;
            format::pad_left(out, &b[..b.len().min(8)], 8);
        } else if comm_unpadded {
            out.extend_from_slice(comm);
        } else {
            format::pad_left(out, comm, 16);
        }
        out.push(b' ');
    }
    let (show_pid, show_tid) = (fields & f::PID != 0, fields & f::TID != 0);
    if show_pid && show_tid {
        format::int(out, pid as i64, 7, false);
        out.push(b'/');
        format::int(out, tid as i64, 7, true);
        out.push(b' ');
    } else if show_pid {
        format::int(out, pid as i64, 7, false);
        out.push(b' ');
    } else if show_tid {
        format::int(out, tid as i64, 7, false);
        out.push(b' ');
    }
    if fields & f::CPU != 0 && latency {
        format::int(out, cpu as i32 as i64, 3, false);
        out.push(b' ');
    } else if fields & f::CPU != 0 {
        out.push(b'[');
        let cpu = cpu as i32 as i64;
        if cpu < 0 {
            format::int(out, cpu, 3, false);
        } else {
            format::uint_zero(out, cpu as u64, 3);
        }
        out.extend_from_slice(b"] ");
    }
}

/// perf's time field without `--ns`: "secs.usecs", right-aligned in 12
/// columns, then ": ".
#[inline]
pub fn time_usecs(out: &mut Vec<u8>, time: u64) {
    let secs = time / 1_000_000_000;
    let usecs = (time % 1_000_000_000) / 1000;
    // Written backwards into a buffer large enough for any u64.
    let mut b = [b' '; 32];
    let mut i = b.len() - 2;
    b[i..].copy_from_slice(b": ");
    let (hi, lo) = (usecs / 10_000, usecs % 10_000);
    i -= 6;
    b[i..i + 2].copy_from_slice(&format::PAIRS[hi as usize]);
    b[i + 2..i + 4].copy_from_slice(&format::PAIRS[(lo / 100) as usize]);
    b[i + 4..i + 6].copy_from_slice(&format::PAIRS[(lo % 100) as usize]);
    i -= 1;
    b[i] = b'.';
    let mut digits = [0u8; 20];
    let s = format::fmt_u64(&mut digits, secs);
    i -= s.len();
    b[i..i + s.len()].copy_from_slice(s);
    // 12 columns for the number, 14 with ": ".
    let from = i.min(b.len() - 14);
    format::put_short(out, &b[from..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The head and tail copied equal the ones formatted each time, as
    /// threads, comms, CPUs and periods change in any order.
    #[test]
    fn remembered_heads_and_tails_are_the_formatted_ones() {
        let mut rnd = crate::testing::rng(0x51_7cc1_b727_220a);
        let comms: [&[u8]; 6] = [b"rustc", b"a comm with spaces", b"", "é".as_bytes(), b":123", b"bad\xff\xfeutf8"];
        let mut heads = Heads::default();
        for _ in 0..20_000 {
            let fields = [HEAD, f::COMM | f::TID, f::PID | f::TID | f::CPU, f::CPU, 0][rnd(5) as usize];
            let comm = comms[rnd(comms.len() as u64) as usize];
            let (pid, tid, cpu) = (rnd(4) as i32 - 1, rnd(300) as i32 - 1, [0, 1, 7, 123, u32::MAX][rnd(5) as usize]);
            let unpadded = rnd(2) == 0;
            let (mut cached, mut fresh) = (b"x".to_vec(), b"x".to_vec());
            heads.head(&mut cached, fields, comm, pid, tid, cpu, unpadded);
            head(&mut fresh, fields, comm, pid, tid, cpu, unpadded, false);
            assert_eq!(cached, fresh);
            let (period, event) = (rnd(3) * 25_000, rnd(2) as usize);
            let tail = |o: &mut Vec<u8>| format::text(o, format_args!("{period:>10} ev{event}: "));
            if !heads.tail(&mut cached, fields, period, event) {
                let from = cached.len();
                tail(&mut cached);
                heads.keep_tail(fields, period, event, &cached[from..]);
            }
            tail(&mut fresh);
            assert_eq!(cached, fresh);
        }
    }

    #[test]
    fn times_print_as_perf_does() {
        let t = |time: u64| {
            let mut o = Vec::new();
            time_usecs(&mut o, time);
            String::from_utf8(o).unwrap()
        };
        for time in [0, 999, 1_000, 2_294_344_835_123, 999_999_999_999, 1_000_000_000_000_000, u64::MAX] {
            let (secs, usecs) = (time / 1_000_000_000, time % 1_000_000_000 / 1000);
            assert_eq!(t(time), format!("{:>12}: ", format!("{secs}.{usecs:06}")), "{time}");
        }
    }
}
