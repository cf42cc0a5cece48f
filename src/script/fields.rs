//! Output fields (`-F`), per event type, with perf's defaults and rules.
//!
//! perf keeps one field set per output type (hw, sw, trace, hw-cache, raw,
//! breakpoint, synth, other). `-F a,b` without a type prefix replaces all of
//! them; `-F sw:a,b` one; `+f`/`-f` adjust the defaults. Fields a recording
//! cannot supply are silently dropped from the defaults, but are an error
//! when the user asked for them.

use perf_data::attr::{Attr, event_type, sample_type as st};

/// A field bit.
pub type Field = u64;

macro_rules! fields {
    ($($name:ident = $bit:expr, $text:literal;)*) => {
        pub mod f {
            use super::Field;
            $(pub const $name: Field = 1 << $bit;)*
        }
        /// Every field name perf knows, in perf's order.
        pub const ALL: &[(&str, Field)] = &[$(($text, f::$name)),*];
    };
}

fields! {
    COMM = 0, "comm";
    TID = 1, "tid";
    PID = 2, "pid";
    TIME = 3, "time";
    CPU = 4, "cpu";
    EVNAME = 5, "event";
    TRACE = 6, "trace";
    IP = 7, "ip";
    SYM = 8, "sym";
    DSO = 9, "dso";
    DSOFF = 41, "dsoff";
    ADDR = 10, "addr";
    SYMOFFSET = 11, "symoff";
    SRCLINE = 12, "srcline";
    PERIOD = 13, "period";
    IREGS = 14, "iregs";
    UREGS = 15, "uregs";
    BRSTACK = 16, "brstack";
    BRSTACKSYM = 17, "brstacksym";
    DATA_SRC = 18, "data_src";
    WEIGHT = 19, "weight";
    BPF_OUTPUT = 20, "bpf-output";
    CALLINDENT = 21, "callindent";
    INSN = 22, "insn";
    DISASM = 42, "disasm";
    INSNLEN = 23, "insnlen";
    BRSTACKINSN = 24, "brstackinsn";
    BRSTACKOFF = 25, "brstackoff";
    SYNTH = 26, "synth";
    PHYS_ADDR = 27, "phys_addr";
    METRIC = 28, "metric";
    MISC = 29, "misc";
    SRCCODE = 30, "srccode";
    IPC = 31, "ipc";
    TOD = 32, "tod";
    DATA_PAGE_SIZE = 33, "data_page_size";
    CODE_PAGE_SIZE = 34, "code_page_size";
    INS_LAT = 35, "ins_lat";
    BRSTACKINSNLEN = 36, "brstackinsnlen";
    MACHINE_PID = 37, "machine_pid";
    VCPU = 38, "vcpu";
    CGROUP = 39, "cgroup";
    RETIRE_LAT = 40, "retire_lat";
    BRSTACKDISASM = 43, "brstackdisasm";
    BRCNTR = 44, "brcntr";
}

/// Fields pstitch can print. Asking for another one is an error that says so.
pub const SUPPORTED: Field = f::COMM
    | f::INSN
    | f::INSNLEN
    | f::DATA_SRC
    | f::CGROUP
    | f::IREGS
    | f::UREGS
    | f::TID
    | f::PID
    | f::TIME
    | f::CPU
    | f::EVNAME
    | f::TRACE
    | f::IP
    | f::SYM
    | f::DSO
    | f::DSOFF
    | f::ADDR
    | f::SYMOFFSET
    | f::SRCLINE
    | f::SRCCODE
    | f::METRIC
    | f::PERIOD
    | f::WEIGHT
    | f::INS_LAT
    | f::RETIRE_LAT
    | f::BRSTACK
    | f::BRSTACKSYM
    | f::BRSTACKOFF
    | f::BRCNTR
    | f::PHYS_ADDR
    | f::MISC
    | f::DATA_PAGE_SIZE
    | f::CODE_PAGE_SIZE
    | f::BPF_OUTPUT
    | PRINTED_EMPTY
    | REFUSED_WITH_DATA;

/// Fields that print nothing on samples of ordinary recordings (guest,
/// hardware-tracing and synthesized data only): accepted, as perf accepts
/// them (`ipc` needs instruction and cycle counts, which only hardware
/// tracing synthesizes: it prints nothing on branch-stack recordings either).
const PRINTED_EMPTY: Field = f::CALLINDENT | f::SYNTH | f::MACHINE_PID | f::VCPU | f::IPC;

/// Fields perf refuses, with its messages, for recordings without their
/// data; pstitch refuses them for recordings with it (it cannot print them
/// yet): see [`OutputFields::check_attr`] and `Script::check_output`.
/// (`brstackinsn`, `brstackinsnlen` and `brstackdisasm` are not printed
/// with source lines yet.)
const REFUSED_WITH_DATA: Field = INSN_BLOCKS | f::TOD;

/// The fields that print the code between a sample's branches
/// (`brstackdisasm` prints as `brstackinsn`: see [`OutputFields::parse`]).
pub const INSN_BLOCKS: Field = f::BRSTACKINSN | f::BRSTACKINSNLEN | f::BRSTACKDISASM;

/// "pstitch does not support the '<name>' field" (for `detail`).
fn unsupported(field: Field, detail: &str) -> FieldError {
    FieldError(format!("pstitch does not support the '{}' field{detail}", field_name(field)))
}

pub fn field_name(field: Field) -> &'static str {
    ALL.iter().find(|(_, b)| *b == field).map(|(n, _)| *n).unwrap_or("")
}

/// perf's output types.
pub const TYPE_HW: usize = 0;
pub const TYPE_SW: usize = 1;
pub const TYPE_TRACE: usize = 2;
pub const TYPE_HW_CACHE: usize = 3;
pub const TYPE_RAW: usize = 4;
pub const TYPE_BREAK: usize = 5;
pub const TYPE_SYNTH: usize = 6;
pub const TYPE_OTHER: usize = 7;
pub const NR_TYPES: usize = 8;

/// `PERF_TYPE_SYNTH`: events synthesized by perf (Intel PT and friends).
const PERF_TYPE_SYNTH: u32 = 2_000_000_000;

// The output types of the kernel's event types are their numbers.
const _: () = assert!(
    TYPE_HW == event_type::HARDWARE as usize
        && TYPE_SW == event_type::SOFTWARE as usize
        && TYPE_TRACE == event_type::TRACEPOINT as usize
        && TYPE_HW_CACHE == event_type::HW_CACHE as usize
        && TYPE_RAW == event_type::RAW as usize
        && TYPE_BREAK == event_type::BREAKPOINT as usize
);

pub fn output_type(attr: &Attr) -> usize {
    match attr.type_ {
        PERF_TYPE_SYNTH => TYPE_SYNTH,
        t if t <= event_type::BREAKPOINT => t as usize,
        _ => TYPE_OTHER,
    }
}

/// perf's `event_type()`: how its messages name an output type (synth and
/// other types are "unknown" there).
pub fn type_name(t: usize) -> &'static str {
    ["hardware", "software", "tracepoint", "hardware-cache", "raw", "breakpoint", "unknown", "unknown"][t]
}

/// The field set of one output type.
#[derive(Debug, Clone, Copy, Default)]
pub struct TypeFields {
    pub fields: Field,
    pub invalid: Field,
    pub user_set: bool,
    pub wildcard_set: bool,
    pub user_set_fields: Field,
    pub user_unset_fields: Field,
}

/// Field sets for every output type.
#[derive(Debug, Clone)]
pub struct OutputFields {
    pub types: [TypeFields; NR_TYPES],
    /// `flags` is not a field bit in perf either.
    pub print_flags: bool,
    /// The branch-stack filters of all events ORed (perf's
    /// `evlist__combined_branch_type`), for the `brstackinsn` check.
    pub combined_branch_type: u64,
}

/// `PERF_SAMPLE_BRANCH_ANY`.
const BRANCH_ANY: u64 = 1 << 3;
/// `PERF_SAMPLE_BRANCH_COUNTERS`.
const BRANCH_COUNTERS: u64 = perf_data::attr::branch_sample_type::COUNTERS;

impl Default for OutputFields {
    fn default() -> Self {
        use f::*;
        let base = COMM | TID | CPU | TIME | EVNAME | IP | SYM | SYMOFFSET | DSO;
        let t = |fields, invalid| TypeFields { fields, invalid, ..TypeFields::default() };
        OutputFields {
            types: [
                t(base | PERIOD, TRACE | BPF_OUTPUT),
                t(base | PERIOD | BPF_OUTPUT, TRACE),
                t(COMM | TID | CPU | TIME | EVNAME | TRACE, 0),
                t(base | PERIOD, TRACE | BPF_OUTPUT),
                t(
                    base | PERIOD
                        | ADDR
                        | DATA_SRC
                        | WEIGHT
                        | PHYS_ADDR
                        | DATA_PAGE_SIZE
                        | CODE_PAGE_SIZE
                        | INS_LAT
                        | RETIRE_LAT,
                    TRACE | BPF_OUTPUT,
                ),
                t(base | PERIOD, TRACE | BPF_OUTPUT),
                t(base | SYNTH, TRACE | BPF_OUTPUT),
                t(base | PERIOD, TRACE | BPF_OUTPUT),
            ],
            print_flags: false,
            combined_branch_type: 0,
        }
    }
}

/// A problem with a `-F` argument, worded as perf words it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError(pub String);

impl OutputFields {
    fn any_user_set(&self) -> bool {
        self.types.iter().any(|t| t.user_set)
    }

    /// Applies one `-F` argument. Returns warnings perf would print.
    pub fn parse(&mut self, arg: &str) -> Result<Vec<String>, FieldError> {
        let mut warnings = Vec::new();
        let (ty, list) = match arg.split_once(':') {
            Some((prefix, rest)) => {
                let ty = match prefix {
                    "hw" => TYPE_HW,
                    "sw" => TYPE_SW,
                    "trace" => TYPE_TRACE,
                    "raw" => TYPE_RAW,
                    "break" => TYPE_BREAK,
                    "synth" => TYPE_SYNTH,
                    _ => return Err(FieldError("Invalid event type in field string.".into())),
                };
                if self.types[ty].user_set {
                    warnings.push(format!("Overriding previous field request for {} events.", type_name(ty)));
                }
                if !rest.contains(['+', '-']) {
                    let t = &mut self.types[ty];
                    t.fields = 0;
                    t.user_set = true;
                    t.wildcard_set = false;
                }
                (Some(ty), rest)
            }
            None => {
                if arg.is_empty() {
                    return Err(FieldError("Cannot set fields to 'none' for all event types.".into()));
                }
                if !arg.contains(['+', '-']) {
                    if self.any_user_set() {
                        warnings.push("Overriding previous field request for all events.".into());
                    }
                    for t in &mut self.types {
                        t.fields = 0;
                        t.user_set = true;
                        t.wildcard_set = true;
                    }
                }
                (None, arg)
            }
        };

        #[derive(PartialEq)]
        enum Change {
            Default,
            Set,
            Add,
            Remove,
        }
        let mut change = Change::Default;
        for tok in list.split(',').filter(|t| !t.is_empty()) {
            let name = if let Some(n) = tok.strip_prefix('+') {
                if change == Change::Set {
                    return Err(FieldError("Cannot mix +-field with overridden fields".into()));
                }
                change = Change::Add;
                n
            } else if let Some(n) = tok.strip_prefix('-') {
                if change == Change::Set {
                    return Err(FieldError("Cannot mix +-field with overridden fields".into()));
                }
                change = Change::Remove;
                n
            } else {
                if change != Change::Set && change != Change::Default {
                    return Err(FieldError("Cannot mix +-field with overridden fields".into()));
                }
                change = Change::Set;
                tok
            };
            let Some(&(_, field)) = ALL.iter().find(|(n, _)| *n == name) else {
                if name == "flags" {
                    self.print_flags = change != Change::Remove;
                    continue;
                }
                return Err(FieldError("Invalid field requested.".into()));
            };
            // perf 7.2 as Debian builds it has no libcapstone: it refuses
            // `disasm` here, and prints `brstackdisasm` as `brstackinsn`
            // (its disassembler's fallback is the raw bytes).
            if change != Change::Remove && field == f::DISASM {
                return Err(FieldError("Field \"disasm\" requires perf to be built with libcapstone support.".into()));
            }
            if change != Change::Remove && field & SUPPORTED == 0 {
                return Err(unsupported(field, ""));
            }
            match ty {
                None => {
                    for (j, t) in self.types.iter_mut().enumerate() {
                        if t.invalid & field != 0 {
                            warnings.push(format!("'{name}' not valid for {} events. Ignoring.", type_name(j)));
                            continue;
                        }
                        if change == Change::Remove {
                            t.fields &= !field;
                            t.user_set_fields &= !field;
                            t.user_unset_fields |= field;
                        } else {
                            t.fields |= field;
                            t.user_set_fields |= field;
                            t.user_unset_fields &= !field;
                        }
                        t.user_set = true;
                        t.wildcard_set = true;
                    }
                }
                Some(j) => {
                    let t = &mut self.types[j];
                    if t.invalid & field != 0 {
                        return Err(FieldError(format!("'{name}' not valid for {} events.", type_name(j))));
                    }
                    if change == Change::Remove {
                        t.fields &= !field;
                    } else {
                        t.fields |= field;
                    }
                    t.user_set = true;
                    t.wildcard_set = true;
                }
            }
        }
        Ok(warnings)
    }

    /// perf's `evsel__check_attr`: drop default fields the event cannot
    /// supply; refuse user-requested ones. `event_name` is for messages.
    pub fn check_attr(&mut self, attr: &Attr, event_name: &str, is_dummy: bool) -> Result<bool, FieldError> {
        if is_dummy {
            return Ok(false);
        }
        // perf names the event in its debug message when it drops a field
        // the samples lack (`evsel__do_check_stype`), and `evsel__name`
        // keeps that name: in a pipe, a HEADER_EVENT_DESC that comes later
        // does not rename the event then.
        let mut named = false;
        let ty = output_type(attr);
        let has = |field: Field, types: &Self| types.types[ty].fields & field != 0;
        let check = |s: &mut Self, bits: u64, msg: &str, field: Field| -> Result<bool, FieldError> {
            if attr.sample_type & bits != 0 {
                return Ok(false);
            }
            let t = &mut s.types[ty];
            if t.user_set_fields & field != 0 {
                return Err(FieldError(format!(
                    "Samples for '{event_name}' event do not have {msg} attribute set. Cannot print '{}' field.",
                    field_name(field)
                )));
            }
            t.fields &= !field;
            Ok(true)
        };
        if has(f::IP, self) {
            named |= check(self, st::IP, "IP", f::IP)?;
        }
        if has(f::ADDR, self) {
            named |= check(self, st::ADDR, "ADDR", f::ADDR)?;
        }
        if has(f::DATA_SRC, self) {
            named |= check(self, st::DATA_SRC, "DATA_SRC", f::DATA_SRC)?;
        }
        if has(f::WEIGHT, self) {
            named |= check(self, st::WEIGHT | st::WEIGHT_STRUCT, "WEIGHT", f::WEIGHT)?;
        }
        if has(f::SYM, self) && attr.sample_type & (st::IP | st::ADDR) == 0 {
            return Err(FieldError(
                "Display of symbols requested but neither sample IP nor sample address\navailable. Hence, no addresses to convert to symbols."
                    .into(),
            ));
        }
        if has(f::SYMOFFSET, self) && !has(f::SYM, self) {
            return Err(FieldError("Display of offsets requested but symbol is notselected.".into()));
        }
        if has(f::DSO, self) && attr.sample_type & (st::IP | st::ADDR) == 0 {
            return Err(FieldError("Display of DSO requested but no address to convert.".into()));
        }
        if (has(f::SRCLINE, self) || has(f::SRCCODE, self)) && !has(f::IP, self) {
            return Err(FieldError(
                "Display of source line number requested but sample IP is not\nselected. Hence, no address to lookup the source line number."
                    .into(),
            ));
        }
        let insn = self.types[ty].fields & INSN_BLOCKS;
        if insn != 0 {
            // perf checks the branch filters of all events together.
            if self.combined_branch_type & BRANCH_ANY == 0 {
                return Err(FieldError(
                    "Display of branch stack assembler requested, but non all-branch filter set\nHint: run 'perf record -b ...'".into(),
                ));
            }
        }
        if has(f::BRCNTR, self) && self.combined_branch_type & BRANCH_COUNTERS == 0 {
            return Err(FieldError(
                "Display of branch counter requested but it's not enabled\nHint: run 'perf record -j any,counter ...'".into(),
            ));
        }
        if has(f::PID, self) || has(f::TID, self) {
            named |= check(self, st::TID, "TID", f::TID | f::PID)?;
        }
        if has(f::TIME, self) {
            named |= check(self, st::TIME, "TIME", f::TIME)?;
        }
        if has(f::CPU, self) {
            named |= check(self, st::CPU, "CPU", f::CPU)?;
        }
        if has(f::IREGS, self) {
            named |= check(self, st::REGS_INTR, "IREGS", f::IREGS)?;
        }
        if has(f::UREGS, self) {
            named |= check(self, st::REGS_USER, "UREGS", f::UREGS)?;
        }
        if has(f::PHYS_ADDR, self) {
            named |= check(self, st::PHYS_ADDR, "PHYS_ADDR", f::PHYS_ADDR)?;
        }
        if has(f::DATA_PAGE_SIZE, self) {
            named |= check(self, st::DATA_PAGE_SIZE, "DATA_PAGE_SIZE", f::DATA_PAGE_SIZE)?;
        }
        if has(f::CODE_PAGE_SIZE, self) {
            named |= check(self, st::CODE_PAGE_SIZE, "CODE_PAGE_SIZE", f::CODE_PAGE_SIZE)?;
        }
        if has(f::INS_LAT, self) {
            named |= check(self, st::WEIGHT_STRUCT, "WEIGHT_STRUCT", f::INS_LAT)?;
        }
        if has(f::CGROUP, self) {
            named |= check(self, st::CGROUP, "CGROUP", f::CGROUP).map_err(|e| FieldError(format!("{}\nHint: run 'perf record --all-cgroups ...'", e.0)))?;
        }
        if has(f::RETIRE_LAT, self) {
            named |= check(self, st::WEIGHT_STRUCT, "WEIGHT_STRUCT", f::RETIRE_LAT)?;
        }
        if has(f::SYNTH | f::CALLINDENT, self) && ty == TYPE_SYNTH {
            return Err(unsupported(f::SYNTH, " of synthesized events"));
        }
        Ok(named)
    }
}

/// What to print for each address (perf's `print_ip_opts`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct IpOpts {
    pub ip: bool,
    pub sym: bool,
    pub dso: bool,
    pub dsoff: bool,
    pub symoff: bool,
    pub srcline: bool,
}

impl IpOpts {
    pub fn from_fields(fields: Field) -> IpOpts {
        IpOpts {
            ip: fields & f::IP != 0,
            sym: fields & f::SYM != 0,
            dso: fields & f::DSO != 0,
            dsoff: fields & f::DSOFF != 0,
            symoff: fields & f::SYMOFFSET != 0,
            srcline: fields & f::SRCLINE != 0,
        }
    }

    /// The options from [`IpOpts::bits`].
    pub fn from_bits(b: u8) -> IpOpts {
        let bit = |i: u8| b & (1 << i) != 0;
        IpOpts { ip: bit(0), sym: bit(1), dso: bit(2), dsoff: bit(3), symoff: bit(4), srcline: bit(5) }
    }

    /// The options as six bits (for cache keys).
    pub const fn bits(self) -> u8 {
        self.ip as u8 | (self.sym as u8) << 1 | (self.dso as u8) << 2 | (self.dsoff as u8) << 3 | (self.symoff as u8) << 4 | (self.srcline as u8) << 5
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcard_list_replaces_all_types() {
        let mut o = OutputFields::default();
        o.parse("comm,tid,ip").unwrap();
        assert_eq!(o.types[TYPE_SW].fields, f::COMM | f::TID | f::IP);
        assert!(o.types[TYPE_HW].user_set);
    }

    #[test]
    fn plus_minus_adjust_defaults() {
        let mut o = OutputFields::default();
        o.parse("-period,+addr").unwrap();
        assert_eq!(o.types[TYPE_SW].fields & f::PERIOD, 0);
        assert_ne!(o.types[TYPE_SW].fields & f::ADDR, 0);
        assert_ne!(o.types[TYPE_SW].fields & f::COMM, 0);
        assert!(o.parse("comm,+ip").is_err());
    }

    #[test]
    fn errors_are_perfs() {
        let mut o = OutputFields::default();
        assert_eq!(o.parse("bogus").unwrap_err().0, "Invalid field requested.");
        assert_eq!(o.parse("xx:comm").unwrap_err().0, "Invalid event type in field string.");
        assert!(o.parse("sw:trace").is_err());
    }

    #[test]
    fn check_drops_defaults_but_refuses_requests() {
        let attr = Attr { type_: 1, sample_type: st::IP | st::TID | st::TIME | st::PERIOD, ..Attr::default() };
        let mut o = OutputFields::default();
        // Dropping a default field names the event, as perf's message does.
        assert!(o.check_attr(&attr, "cpu-clock", false).unwrap());
        assert_eq!(o.types[TYPE_SW].fields & f::CPU, 0);
        let mut o = OutputFields::default();
        o.parse("comm,tid,time,ip").unwrap();
        assert!(!o.check_attr(&attr, "cpu-clock", false).unwrap(), "nothing dropped, the name not read");
        let mut o = OutputFields::default();
        o.parse("comm,cpu").unwrap();
        let e = o.check_attr(&attr, "cpu-clock", false).unwrap_err();
        assert!(e.0.contains("Cannot print 'cpu' field"), "{}", e.0);
    }

    #[test]
    fn fields_without_their_data_are_refused_as_perf_refuses_them_and_with_it_by_pstitch() {
        let plain = Attr { type_: 1, sample_type: st::IP | st::TID | st::TIME | st::PERIOD, ..Attr::default() };
        let refuse = |fields: &str, attr: &Attr| {
            let mut o = OutputFields::default();
            o.parse(fields).unwrap();
            o.check_attr(attr, "cpu-clock", false).map(|_| o.types[TYPE_SW].fields)
        };
        let e = refuse("comm,iregs", &plain).unwrap_err().0;
        assert_eq!(e, "Samples for 'cpu-clock' event do not have IREGS attribute set. Cannot print 'iregs' field.");
        let e = refuse("+cgroup", &plain).unwrap_err().0;
        assert!(e.ends_with("Cannot print 'cgroup' field.\nHint: run 'perf record --all-cgroups ...'"), "{e}");
        let e = refuse("+brstackinsn", &plain).unwrap_err().0;
        assert!(e.starts_with("Display of branch stack assembler requested"), "{e}");
        // Printed empty where the data cannot be: accepted.
        let fields = refuse("comm,ip,brstack,ipc,callindent,vcpu", &plain).unwrap();
        assert_ne!(fields & f::BRSTACK, 0);
        let e = refuse("ip,brcntr", &plain).unwrap_err().0;
        assert!(e.starts_with("Display of branch counter requested but it's not enabled"), "{e}");
        // With the data.
        let lat = Attr { sample_type: plain.sample_type | st::WEIGHT_STRUCT, ..plain.clone() };
        assert_ne!(refuse("comm,ins_lat,retire_lat", &lat).unwrap() & f::RETIRE_LAT, 0);
        let regs = Attr { sample_type: plain.sample_type | st::REGS_INTR, ..plain.clone() };
        assert_ne!(refuse("comm,iregs", &regs).unwrap() & f::IREGS, 0);
        let branches = Attr { sample_type: plain.sample_type | st::BRANCH_STACK, ..plain.clone() };
        assert_ne!(refuse("comm,ip,ipc,brstacksym", &branches).unwrap() & f::BRSTACKSYM, 0);
        let mut o = OutputFields { combined_branch_type: BRANCH_ANY | BRANCH_COUNTERS, ..OutputFields::default() };
        o.parse("ip,brcntr").unwrap();
        o.check_attr(&branches, "cpu-clock", false).unwrap();
        assert_ne!(o.types[TYPE_SW].fields & f::BRCNTR, 0);
        let mut o = OutputFields { combined_branch_type: BRANCH_ANY, ..OutputFields::default() };
        o.parse("ip,brstackinsnlen").unwrap();
        o.check_attr(&branches, "cpu-clock", false).unwrap();
        assert_ne!(o.types[TYPE_SW].fields & f::BRSTACKINSNLEN, 0);
        let mut o = OutputFields { combined_branch_type: BRANCH_ANY, ..OutputFields::default() };
        o.parse("ip,srcline,srccode,brstackinsn,brstackinsnlen,brstackdisasm").unwrap();
        o.check_attr(&branches, "cpu-clock", false).unwrap();
        let want = f::SRCLINE | f::SRCCODE | INSN_BLOCKS;
        assert_eq!(o.types[TYPE_SW].fields & want, want);
        let mut o = OutputFields { combined_branch_type: BRANCH_ANY, ..OutputFields::default() };
        o.parse("ip,brstackdisasm").unwrap();
        o.check_attr(&branches, "cpu-clock", false).unwrap();
        let mut o = OutputFields::default();
        assert_eq!(o.parse("ip,disasm").unwrap_err().0, "Field \"disasm\" requires perf to be built with libcapstone support.");
        OutputFields::default().parse("-disasm").unwrap();
    }
}
