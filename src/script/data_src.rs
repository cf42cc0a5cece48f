//! The `data_src` field: `PERF_SAMPLE_DATA_SRC` in hex and decoded as perf
//! 7.2 decodes it (`perf_script__meminfo_scnprintf`), e.g.
//!
//! ```text
//!       1e05080021 |OP N/A|LVL N/A|SNP N/A|TLB N/A|LCK N/A|BLK  N/A
//! ```
//!
//! The word is the kernel's `union perf_mem_data_src`, bit fields from bit 0:
//!
//! ```text
//!  op:5 | lvl:14 | snoop:5 | lock:2 | dtlb:7 | lvl_num:4 | remote:1 | snoopx:2 | blk:3 | hops:3 | rsvd
//!  0      5        19        24       26       33          37         38         40      43
//! ```
//!
//! perf writes the decode into a 100-byte buffer and then `"%16lx %s"` into
//! another (so at most 99 characters), padded on the right to the longest
//! line it printed so far in the run.

use std::fmt::Write as _;

/// Bytes perf's buffers hold, its terminating NUL included.
const BUF: usize = 100;

const MEM_LVL: [&str; 14] = [
    "N/A",
    "HIT",
    "MISS",
    "L1",
    "LFB/MAB",
    "L2",
    "L3",
    "Local RAM",
    "Remote RAM (1 hop)",
    "Remote RAM (2 hops)",
    "Remote Cache (1 hop)",
    "Remote Cache (2 hops)",
    "I/O",
    "Uncached",
];

/// `mem_lvlnum[]` by PERF_MEM_LVLNUM_*; `None` where perf's table has a hole.
const MEM_LVLNUM: [Option<&str>; 16] = [
    None,
    Some("L1"),
    Some("L2"),
    Some("L3"),
    Some("L4"),
    Some("L2 MHB"),
    Some("Memory-side Cache"),
    None,
    Some("Uncached"),
    Some("CXL"),
    Some("I/O"),
    Some("Any cache"),
    Some("LFB/MAB"),
    Some("RAM"),
    Some("PMEM"),
    Some("N/A"),
];

const MEM_HOPS: [&str; 5] = ["N/A", "core, same node", "node, same socket", "socket, same board", "board"];
const SNOOP: [&str; 5] = ["N/A", "None", "Hit", "Miss", "HitM"];
const SNOOPX: [&str; 2] = ["Fwd", "Peer"];
const TLB: [&str; 7] = ["N/A", "HIT", "MISS", "L1", "L2", "Walker", "Fault"];

fn bits(v: u64, at: u32, width: u32) -> u64 {
    (v >> at) & ((1 << width) - 1)
}

/// The names of the bits set in `m`, lowest first, joined by " or ".
fn names(out: &mut String, mut m: u64, table: &[&str]) {
    for name in table {
        if m == 0 {
            break;
        }
        if m & 1 != 0 {
            if !out.is_empty() {
                out.push_str(" or ");
            }
            out.push_str(name);
        }
        m >>= 1;
    }
}

fn op(v: u64) -> &'static str {
    let op = bits(v, 0, 5);
    [(1, "N/A"), (2, "LOAD"), (4, "STORE"), (8, "PFETCH"), (16, "EXEC")].iter().find(|(b, _)| op & b != 0).map_or("No", |(_, n)| n)
}

fn lvl(v: u64) -> String {
    let mem_lvl = bits(v, 5, 14);
    let hit_miss = if mem_lvl & 2 != 0 {
        "hit"
    } else if mem_lvl & 4 != 0 {
        "miss"
    } else {
        ""
    };
    let num = bits(v, 33, 4) as usize;
    let mut out = String::new();
    if num != 0 && num != 0xf {
        if bits(v, 37, 1) != 0 {
            out.push_str("Remote ");
        }
        let hops = bits(v, 43, 3) as usize;
        if hops != 0 {
            // perf indexes its five-entry table with the three-bit field.
            let _ = write!(out, "{} ", MEM_HOPS.get(hops).copied().unwrap_or("N/A"));
        }
        match MEM_LVLNUM[num] {
            Some(n) => out.push_str(n),
            None => {
                let _ = write!(out, "Unknown level {num}");
            }
        }
        let _ = write!(out, " {hit_miss}");
        return out;
    }
    let levels = mem_lvl & !(1 | 2 | 4);
    if levels == 0 {
        return "N/A".into();
    }
    names(&mut out, levels, &MEM_LVL);
    let _ = write!(out, " {hit_miss}");
    out
}

fn snoop(v: u64) -> String {
    let mut out = String::new();
    names(&mut out, bits(v, 19, 5), &SNOOP);
    names(&mut out, bits(v, 38, 2), &SNOOPX);
    if out.is_empty() {
        out.push_str("N/A");
    }
    out
}

fn tlb(v: u64) -> String {
    let m = bits(v, 26, 7);
    let mut out = String::new();
    names(&mut out, m & !(2 | 4), &TLB);
    if out.is_empty() {
        out.push_str("N/A");
    }
    if m & 2 != 0 {
        out.push_str(" hit");
    }
    if m & 4 != 0 {
        out.push_str(" miss");
    }
    out
}

fn lock(v: u64) -> &'static str {
    let m = bits(v, 24, 2);
    if m & 1 != 0 {
        "N/A"
    } else if m & 2 != 0 {
        "Yes"
    } else {
        "No"
    }
}

fn blk(v: u64) -> String {
    let m = bits(v, 40, 3);
    if m == 0 || m & 1 != 0 {
        return " N/A".into();
    }
    let mut out = String::new();
    if m & 2 != 0 {
        out.push_str(" Data");
    }
    if m & 4 != 0 {
        out.push_str(" Addr");
    }
    out
}

/// perf's `perf_script__meminfo_scnprintf`, cut where its buffer ends.
fn decode(v: u64) -> String {
    let mut s = format!("|OP {}|LVL {}|SNP {}|TLB {}|LCK {}|BLK {}", op(v), lvl(v), snoop(v), tlb(v), lock(v), blk(v));
    s.truncate(BUF - 1);
    s
}

/// perf's `data_src__fprintf`; `maxlen` is its static longest-so-far.
pub fn print(out: &mut Vec<u8>, data_src: u64, maxlen: &mut usize) {
    let mut line = format!("{data_src:16x} {}", decode(data_src));
    line.truncate(BUF - 1);
    *maxlen = (*maxlen).max(line.len());
    out.extend_from_slice(line.as_bytes());
    out.extend(std::iter::repeat_n(b' ', *maxlen - line.len()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_not_available_word_of_software_events() {
        assert_eq!(decode(0x1e05080021), "|OP N/A|LVL N/A|SNP N/A|TLB N/A|LCK N/A|BLK  N/A");
    }

    #[test]
    fn levels_by_number_with_hops_and_remote() {
        // lvl_num CXL (9), remote, hops 1, lvl HIT.
        let v = 2 | (2 << 5) | (9 << 33) | (1 << 37) | (1 << 43);
        assert_eq!(lvl(v), "Remote core, same node CXL hit");
        assert_eq!(lvl(7 << 33), "Unknown level 7 ");
    }

    #[test]
    fn output_is_padded_to_the_longest_so_far() {
        let (mut out, mut maxlen) = (Vec::new(), 0);
        print(&mut out, 0x1e05080021 | (3 << 40), &mut maxlen);
        let first = out.len();
        out.clear();
        print(&mut out, 0x1e05080021, &mut maxlen);
        assert_eq!(out.len(), first);
    }
}
