//! The machine: threads, their comms and address spaces, as perf rebuilds
//! them from COMM, FORK, EXIT and MMAP records.
//!
//! Threads are looked up by tid. Threads of one process share one map group
//! (the leader's); a FORK into a new process copies the parent's maps, a
//! FORK of a thread shares them. An EXIT removes the thread: samples that
//! come later for that tid see a new thread with no comm (printed `:TID`).
//! The kernel's maps are machine-wide and used for kernel-mode addresses.

pub mod dsos;
pub mod maps;

use std::cell::RefCell;
use std::rc::Rc;

pub use dsos::{Dso, DsoKind, DsoName, Dsos, name_path};
pub use maps::{DsoId, Map, MapKind, Maps};

use perf_data::record::{CommRecord, KsymbolRecord, MmapRecord, TaskRecord, misc};

/// The kernel image's DSO (perf's `[kernel.kallsyms]`); its MMAP names
/// it with the reference symbol appended.
pub const KERNEL_DSO_NAME: &str = "[kernel.kallsyms]";

/// `PERF_RECORD_MISC_FORK_EXEC`: a FORK perf record synthesized for an
/// existing task; its maps arrive as MMAP records, so none are copied.
const MISC_FORK_EXEC: u16 = 1 << 13;
const PROT_EXEC: u32 = 4;

/// A thread's comm, shared cheaply with held samples: the bytes the
/// kernel recorded (perf prints them as they are, UTF-8 or not).
pub type Comm = Rc<[u8]>;

/// The comm perf gives a thread no COMM named: `:TID`.
pub fn tid_comm(tid: i32) -> Comm {
    format!(":{tid}").as_bytes().into()
}

#[derive(Debug)]
pub struct Thread {
    pub pid: i32,
    pub tid: i32,
    /// `None` until a COMM (or a FORK from a named parent) sets it.
    comm: Option<Comm>,
    maps: MapGroup,
    /// The number of the map group `maps` is (see [`Thread::map_group`]).
    group: u64,
    /// See [`Thread::serial`].
    serial: u64,
}

/// A process's maps, shared by its threads. The maps themselves are
/// shared copy-on-write between processes: a FORK gives the child its
/// parent's maps without copying them (perf copies; the lookups are the
/// same), and the first map a process adds afterwards makes its own copy.
/// So memory follows the distinct sets of maps, not the forks: 2,000
/// forks of a process with 10,000 maps hold 10,000 maps, not 20 million.
type MapGroup = Rc<RefCell<Rc<Maps>>>;

fn new_group() -> MapGroup {
    Rc::new(RefCell::new(Rc::new(Maps::default())))
}

impl Thread {
    /// The comm perf prints: the latest one set, or `:TID`.
    pub fn comm(&self) -> Comm {
        match &self.comm {
            Some(c) => c.clone(),
            None => tid_comm(self.tid),
        }
    }

    pub fn comm_is_set(&self) -> bool {
        self.comm.is_some()
    }

    pub fn maps(&self) -> std::cell::Ref<'_, Maps> {
        std::cell::Ref::map(self.maps.borrow(), |m| &**m)
    }

    /// Which address space the thread is in (perf's `struct maps`): the
    /// threads of one process share one, a forked process gets a new one,
    /// and no two map groups of a run have the same number. State kept per
    /// address space (the unwinder's modules) is kept by this number.
    pub fn map_group(&self) -> u64 {
        self.group
    }

    /// Which thread this is (perf's `struct thread`): a thread that
    /// exits, or is replaced by a FORK of its tid, and the one made for
    /// the tid afterwards have different numbers; no two threads of a run
    /// have the same. State perf keeps per thread (the `srccode` field's
    /// last line) is kept by this number.
    pub fn serial(&self) -> u64 {
        self.serial
    }
}

/// CPU mode of an address lookup (from `header.misc` or a callchain
/// context marker).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuMode {
    Kernel,
    User,
    Hypervisor,
    GuestKernel,
    GuestUser,
    Unknown,
}

impl CpuMode {
    pub fn from_misc(m: u16) -> CpuMode {
        match m & misc::CPUMODE_MASK {
            misc::KERNEL => CpuMode::Kernel,
            misc::USER => CpuMode::User,
            misc::HYPERVISOR => CpuMode::Hypervisor,
            misc::GUEST_KERNEL => CpuMode::GuestKernel,
            misc::GUEST_USER => CpuMode::GuestUser,
            _ => CpuMode::Unknown,
        }
    }
}

/// perf's walk of a sample's callchain (`thread__resolve_callchain_sample`):
/// each address with the CPU mode the context marker before it gives
/// (user before any), at most `max` addresses. An unknown marker makes perf
/// drop what it resolved: then `None`, an empty chain.
pub fn callchain_entries<I>(chain: I, max: usize) -> Option<impl Iterator<Item = (CpuMode, u64)>>
where
    I: Iterator<Item = u64> + Clone,
{
    use perf_data::sample::context;
    // Markers past the `max` addresses are not seen.
    let mut seen = 0;
    for ip in chain.clone() {
        if seen >= max {
            break;
        }
        if ip < context::MAX {
            seen += 1;
        } else if !matches!(ip, context::HV | context::KERNEL | context::USER | context::USER_DEFERRED) {
            return None;
        }
    }
    let mut mode = CpuMode::User;
    let entries = chain
        .filter_map(move |ip| {
            if ip < context::MAX {
                return Some((mode, ip));
            }
            mode = match ip {
                context::HV => CpuMode::Hypervisor,
                context::KERNEL => CpuMode::Kernel,
                _ => CpuMode::User,
            };
            None
        })
        .take(max);
    Some(entries)
}

/// Most map entries all FORKs of one input may copy from parent to child
/// (16M entries, about 1 GiB).
const MAX_FORK_MAP_COPIES: u64 = 1 << 24;

#[derive(Debug)]
pub struct Machine {
    threads: crate::fasthash::FastMap<i32, Thread>,
    pub dsos: Dsos,
    kernel_maps: Maps,
    /// Kernel DSOs whose map was already resized to their symbols.
    kernel_loaded: Vec<DsoId>,
    /// Map entries copied into forked processes so far.
    pub(crate) fork_maps_copied: u64,
    /// Forked processes that did not get their parent's maps because
    /// `fork_map_budget` was reached.
    pub(crate) forks_without_maps: u64,
    /// Most map entries FORKs may copy ([`MAX_FORK_MAP_COPIES`]).
    pub(crate) fork_map_budget: u64,
    /// Changes whenever a lookup could find something else than before: a
    /// map added, removed or resized, a thread created, gone or moved to
    /// another map group. What was found at one epoch holds until the next.
    epoch: u64,
    /// Map groups made so far (the next one's number).
    groups: u64,
    /// Threads made so far (the last [`Thread::serial`]).
    serials: u64,
    /// Cgroup paths by id, from CGROUP records (perf's `env->cgroups`):
    /// the first path given for an id stays, as in perf's `cgroup__findnew`.
    cgroups: crate::fasthash::FastMap<u64, Box<[u8]>>,
    /// The code of KSYMBOL DSOs that a BPF program load named (perf's
    /// DSO_BINARY_TYPE__BPF_PROG_INFO): the program's whole JIT image.
    bpf_code: crate::fasthash::FastMap<DsoId, Rc<[u8]>>,
}

impl Default for Machine {
    fn default() -> Self {
        Machine::new()
    }
}

impl Machine {
    /// A machine that knows the idle task (0/0) as `swapper`, as perf
    /// registers it before reading.
    pub fn new() -> Machine {
        let mut m = Machine {
            threads: Default::default(),
            dsos: Dsos::default(),
            kernel_maps: Maps::default(),
            kernel_loaded: Vec::new(),
            fork_maps_copied: 0,
            forks_without_maps: 0,
            fork_map_budget: MAX_FORK_MAP_COPIES,
            epoch: 0,
            groups: 0,
            serials: 0,
            cgroups: Default::default(),
            bpf_code: Default::default(),
        };
        m.findnew_thread(0, 0).comm = Some(b"swapper"[..].into());
        m
    }

    /// See [`Machine::epoch`](Machine#structfield.epoch).
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch
    }

    pub fn thread(&self, tid: i32) -> Option<&Thread> {
        self.threads.get(&tid)
    }

    /// perf's `machine__findnew_thread`: find by tid (learning the pid if it
    /// was unknown) or create, joining the leader's map group.
    pub fn findnew_thread(&mut self, pid: i32, tid: i32) -> &mut Thread {
        if let Some(known_pid) = self.threads.get(&tid).map(|t| t.pid) {
            if pid != -1 && known_pid == -1 && pid != known_pid {
                self.epoch += 1;
                self.threads.get_mut(&tid).expect("present").pid = pid;
                if pid != tid {
                    let leader = self.findnew_thread(pid, pid);
                    let (maps, group) = (leader.maps.clone(), leader.group);
                    let t = self.threads.get_mut(&tid).expect("present");
                    (t.maps, t.group) = (maps, group);
                }
            }
            return self.threads.get_mut(&tid).expect("present");
        }
        self.epoch += 1;
        let (maps, group) = if pid == tid || pid == -1 {
            self.groups += 1;
            (new_group(), self.groups)
        } else {
            let leader = self.findnew_thread(pid, pid);
            (leader.maps.clone(), leader.group)
        };
        self.serials += 1;
        let serial = self.serials;
        self.threads.entry(tid).or_insert(Thread { pid, tid, comm: None, maps, group, serial })
    }

    /// A CGROUP record: cgroup `id` is at `path` (bytes, as recorded).
    pub(crate) fn process_cgroup(&mut self, id: u64, path: &[u8]) {
        self.cgroups.entry(id).or_insert_with(|| path.into());
    }

    /// The path of cgroup `id` (PERF_SAMPLE_CGROUP), if a CGROUP record
    /// named it.
    pub fn cgroup(&self, id: u64) -> Option<&[u8]> {
        self.cgroups.get(&id).map(|p| &p[..])
    }

    pub(crate) fn process_comm(&mut self, c: &CommRecord<'_>) {
        let comm: Comm = c.comm.into();
        self.findnew_thread(c.pid, c.tid).comm = Some(comm);
    }

    pub(crate) fn process_fork(&mut self, f: &TaskRecord, record_misc: u16) {
        self.epoch += 1;
        // A thread by the parent's tid that is not of the parent's process
        // is stale (its EXIT was lost): start over.
        if self.threads.get(&f.ptid).is_some_and(|p| p.pid != f.ppid) {
            self.threads.remove(&f.ptid);
        }
        let (parent_comm, parent_maps, parent_pid) = {
            let p = self.findnew_thread(f.ppid, f.ptid);
            (p.comm.clone(), p.maps.clone(), p.pid)
        };
        self.threads.remove(&f.tid);
        let do_maps_clone = record_misc & MISC_FORK_EXEC == 0;
        let child = self.findnew_thread(f.pid, f.tid);
        if let Some(c) = parent_comm {
            child.comm = Some(c);
        }
        if child.pid != parent_pid && !Rc::ptr_eq(&child.maps, &parent_maps) && do_maps_clone {
            let child_maps = child.maps.clone();
            let parent = parent_maps.borrow().clone();
            if child_maps.borrow().is_empty() {
                // The usual case: the child's process is new.
                *child_maps.borrow_mut() = parent;
                return;
            }
            // The child's process had maps already: the parent's go in
            // one by one, as perf's maps__clone does. A hostile file can
            // do that over and over: such copies are bounded, beyond that
            // children do not get their parent's maps (counted, the
            // caller warns).
            let n = parent.len() as u64;
            if self.fork_maps_copied.saturating_add(n) > self.fork_map_budget {
                self.forks_without_maps += 1;
                return;
            }
            self.fork_maps_copied += n;
            let mut group = child_maps.borrow_mut();
            let maps = Rc::make_mut(&mut group);
            for m in parent.iter() {
                maps.insert(*m);
            }
        }
    }

    pub(crate) fn process_exit(&mut self, e: &TaskRecord) {
        self.epoch += 1;
        self.threads.remove(&e.tid);
    }

    /// MMAP/MMAP2 of a user process (kernel-mode ones go to the kernel maps).
    pub(crate) fn process_mmap(&mut self, m: &MmapRecord<'_>, record_type: u32, record_misc: u16) {
        self.epoch += 1;
        let cpumode = CpuMode::from_misc(record_misc);
        let mut prot = m.prot;
        if record_type == perf_data::record::kind::MMAP && record_misc & misc::MMAP_DATA == 0 {
            prot = PROT_EXEC;
        }
        let filename = m.filename;
        if matches!(cpumode, CpuMode::Kernel | CpuMode::GuestKernel) {
            self.process_kernel_mmap(m, filename);
            return;
        }
        let pid = {
            let t = self.findnew_thread(m.pid, m.tid);
            t.pid
        };
        let kind = dsos::classify(filename);
        let jit_map;
        let (name, map_kind, pgoff) = match kind {
            DsoKind::Anon | DsoKind::NoDso if prot & PROT_EXEC != 0 => {
                jit_map = format!("/tmp/perf-{pid}.map");
                (jit_map.as_bytes(), MapKind::Identity, m.pgoff)
            }
            DsoKind::Anon | DsoKind::NoDso => (filename, MapKind::Identity, m.pgoff),
            DsoKind::Vdso => (filename, MapKind::Dso, 0),
            _ => (filename, MapKind::Dso, m.pgoff),
        };
        let dso = self.dsos.findnew(name, kind);
        if let Some(bid) = m.build_id.filter(|b| perf_data::features::build_id_is_defined(b)) {
            self.dsos.set_build_id(dso, bid.to_vec());
        }
        let map = Map { start: m.start, end: m.start.wrapping_add(m.len), pgoff, dso, kind: map_kind, prot, flags: m.flags };
        let t = self.findnew_thread(m.pid, m.tid);
        Rc::make_mut(&mut t.maps.borrow_mut()).insert(map);
    }

    fn process_kernel_mmap(&mut self, m: &MmapRecord<'_>, filename: &[u8]) {
        // "[kernel.kallsyms]_text" (or "_stext") names the kernel image;
        // anything else kernel-side is a module or an extra kernel map.
        let (name, kind, map_kind) = if filename.starts_with(KERNEL_DSO_NAME.as_bytes()) {
            (KERNEL_DSO_NAME.as_bytes(), DsoKind::Kernel, MapKind::Identity)
        } else {
            (filename, DsoKind::KernelModule, MapKind::Dso)
        };
        let dso = self.dsos.findnew(name, kind);
        // perf's machine__process_kernel_mmap_event: "[kernel.kallsyms]_text"
        // names the reference symbol, pgoff is its address (0 under
        // kptr_restrict, then unused).
        if kind == DsoKind::Kernel && m.pgoff != 0 {
            // A symbol name (kallsyms' text), not a path.
            let sym = String::from_utf8_lossy(&filename[KERNEL_DSO_NAME.len()..]);
            self.dsos.set_ref_reloc(dso, &sym, m.pgoff);
        }
        let end = if m.start == 0 && m.len == 0 { u64::MAX } else { m.start.wrapping_add(m.len) };
        let end = if end < m.start { u64::MAX } else { end };
        // Module maps start at file offset 0 (perf's map__new2).
        let pgoff = if kind == DsoKind::Kernel { m.pgoff } else { 0 };
        self.kernel_maps.insert(Map { start: m.start, end, pgoff, dso, kind: map_kind, prot: PROT_EXEC, flags: 0 });
    }

    /// A KSYMBOL record (perf's `machine__process_ksymbol`). Registering
    /// text no kernel map holds yet gives it a map of its own, `len`
    /// bytes from `addr`, whose DSO has one symbol of that length named
    /// like the record (`bpf_prog_<tag>_<name>+0x1e
    /// (bpf_prog_<tag>_<name>)`). Unregistering removes the map holding
    /// `addr` unless it is the kernel's own. Records of length 0 (BPF
    /// programs not JIT-compiled: no sample can land in them) change
    /// nothing.
    ///
    /// When registered text falls in a map that exists already, perf adds
    /// the symbol to that map's DSO at the map's start (not at `addr`):
    /// that is not followed; the map keeps what it had.
    pub(crate) fn process_ksymbol(&mut self, k: &KsymbolRecord<'_>) {
        if k.len == 0 {
            return;
        }
        let found = self.kernel_maps.find(k.addr).copied();
        if k.flags & KsymbolRecord::FLAG_UNREGISTER != 0 {
            if let Some(m) = found.filter(|m| self.dsos.get(m.dso).kind != DsoKind::Kernel) {
                self.epoch += 1;
                self.kernel_maps.remove(m.start);
            }
            return;
        }
        if found.is_some() {
            return;
        }
        self.epoch += 1;
        let dso = self.dsos.ksymbol(k.name, k.len.into());
        let end = k.addr.saturating_add(k.len.into());
        self.kernel_maps.insert(Map { start: k.addr, end, pgoff: 0, dso, kind: MapKind::Dso, prot: PROT_EXEC, flags: 0 });
    }

    /// A BPF_EVENT record of a program load (perf's
    /// `machine__process_bpf_event_load`), with the program as
    /// HEADER_BPF_PROG_INFO describes it: the DSO of the kernel map at each
    /// of its functions reads its data from the program's JIT image.
    pub(crate) fn process_bpf_prog_load(&mut self, prog: &perf_data::bpf::BpfProg) {
        let code: Rc<[u8]> = prog.jited.as_slice().into();
        for f in &prog.funcs {
            if let Some(m) = self.kernel_maps.find(f.addr) {
                self.bpf_code.insert(m.dso, code.clone());
            }
        }
    }

    /// The bytes a KSYMBOL DSO's data reads come from (see
    /// [`Machine::process_bpf_prog_load`]), at offsets from its map's start.
    pub fn bpf_code(&self, dso: DsoId) -> Option<&[u8]> {
        self.bpf_code.get(&dso).map(|c| &c[..])
    }

    /// True until the kernel map of `dso` was loaded (see
    /// [`Machine::fixup_kernel_map`]).
    pub(crate) fn kernel_map_unloaded(&self, map: &Map) -> bool {
        self.dsos.get(map.dso).kind == DsoKind::Kernel && !self.kernel_loaded.contains(&map.dso)
    }

    /// perf loads the kernel DSO the first time one of its maps is used
    /// (`thread__find_map`), then changes the map as the load says: from
    /// kallsyms, resized to cover its symbols (`map__fixup_start`,
    /// `map__fixup_end`); from a vmlinux, moved onto its `.text`. `fixed`:
    /// the map as the load left it (`None`: unchanged). Returns the map as
    /// it is now.
    pub(crate) fn fixup_kernel_map(&mut self, map: &Map, fixed: Option<Map>) -> Map {
        self.epoch += 1;
        self.kernel_loaded.push(map.dso);
        let Some(new) = fixed else { return *map };
        self.kernel_maps.remove(map.start);
        self.kernel_maps.insert(new);
        new
    }

    pub fn kernel_maps(&self) -> &Maps {
        &self.kernel_maps
    }

    /// The map that holds `addr` for `tid` in `mode` (perf's `thread__find_map`).
    pub fn find_map(&self, tid: i32, mode: CpuMode, addr: u64) -> Option<Map> {
        self.find_map_or_gap(tid, mode, addr).ok()
    }

    /// [`Machine::find_map`], or the range around `addr` that is in no map
    /// of `tid` in `mode` (see [`Maps::find_or_gap`]).
    pub fn find_map_or_gap(&self, tid: i32, mode: CpuMode, addr: u64) -> Result<Map, (u64, u64)> {
        const EVERYWHERE: (u64, u64) = (0, u64::MAX);
        match mode {
            CpuMode::Kernel => self.kernel_maps.find_or_gap(addr).copied(),
            CpuMode::User => match self.threads.get(&tid) {
                Some(t) => t.maps.borrow().find_or_gap(addr).copied(),
                None => Err(EVERYWHERE),
            },
            _ => Err(EVERYWHERE),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(pid: i32, ppid: i32, tid: i32, ptid: i32) -> TaskRecord {
        TaskRecord { pid, ppid, tid, ptid, time: 0 }
    }

    /// Every change a lookup could see moves the epoch; finding a thread
    /// that is there does not.
    #[test]
    fn epoch_moves_with_what_lookups_see() {
        let mut m = Machine::new();
        let mut last = m.epoch();
        let mut moved = |m: &Machine, what: &str, want: bool| {
            assert_eq!(m.epoch() != last, want, "{what}");
            last = m.epoch();
        };
        m.findnew_thread(10, 10);
        moved(&m, "new thread", true);
        m.findnew_thread(10, 10);
        moved(&m, "known thread", false);
        m.findnew_thread(-1, 12);
        moved(&m, "thread without pid", true);
        m.findnew_thread(10, 12);
        moved(&m, "thread joins its process", true);
        let mm = MmapRecord { pid: 10, tid: 10, start: 0x1000, len: 0x1000, pgoff: 0, prot: 5, flags: 0, build_id: None, filename: b"/bin/x" };
        m.process_mmap(&mm, perf_data::record::kind::MMAP2, misc::USER);
        moved(&m, "mmap", true);
        m.process_fork(&task(11, 10, 11, 10), 0);
        moved(&m, "fork", true);
        m.process_exit(&task(11, 10, 11, 10));
        moved(&m, "exit", true);
        let map = m.find_map(10, CpuMode::User, 0x1000).expect("mapped");
        m.fixup_kernel_map(&map, None);
        moved(&m, "kernel map resized", true);
    }

    /// A process's maps keep their stamp through everything but a change
    /// of their own: other processes' mmaps, forks and exits move the
    /// epoch, not the stamp. A forked child shares its parent's maps and
    /// stamp until one of them maps something, and then both stamps
    /// differ from every stamp before.
    #[test]
    fn maps_stamps_follow_their_own_changes() {
        let mut m = Machine::new();
        let mmap = |m: &mut Machine, pid: i32, start: u64| {
            let mm = MmapRecord { pid, tid: pid, start, len: 0x1000, pgoff: 0, prot: 5, flags: 0, build_id: None, filename: b"/bin/x" };
            m.process_mmap(&mm, perf_data::record::kind::MMAP2, misc::USER);
        };
        let stamp = |m: &Machine, tid: i32| m.thread(tid).expect("known").maps().stamp();
        m.findnew_thread(10, 10);
        assert_eq!(stamp(&m, 10), 0, "empty maps never changed");
        mmap(&mut m, 10, 0x1000);
        let first = stamp(&m, 10);
        assert_ne!(first, 0);
        m.findnew_thread(20, 20);
        mmap(&mut m, 20, 0x1000);
        m.findnew_thread(10, 11);
        m.process_exit(&task(20, 20, 20, 20));
        assert_eq!(stamp(&m, 10), first, "other processes' changes");
        assert_eq!(stamp(&m, 11), first, "a thread of the process");
        m.process_fork(&task(30, 10, 30, 10), 0);
        assert_eq!(stamp(&m, 30), first, "a child shares its parent's maps");
        mmap(&mut m, 30, 0x3000);
        let child = stamp(&m, 30);
        assert_eq!(stamp(&m, 10), first, "the child's change is its own");
        mmap(&mut m, 10, 0x5000);
        let parent = stamp(&m, 10);
        let seen = [0, first, child];
        assert!(!seen.contains(&parent) && child != first, "every change a new stamp");
        // A map that maps nothing changes nothing.
        let empty = MmapRecord { pid: 10, tid: 10, start: 0x9000, len: 0, pgoff: 0, prot: 5, flags: 0, build_id: None, filename: b"/bin/x" };
        m.process_mmap(&empty, perf_data::record::kind::MMAP2, misc::USER);
        assert_eq!(stamp(&m, 10), parent);
    }

    #[test]
    fn unknown_threads_print_tid() {
        let mut m = Machine::new();
        assert_eq!(&*m.findnew_thread(5, 7).comm(), b":7");
        assert_eq!(&*m.thread(0).unwrap().comm(), b"swapper");
    }

    #[test]
    fn fork_inherits_comm_and_exit_forgets() {
        let mut m = Machine::new();
        m.process_comm(&CommRecord { pid: 10, tid: 10, comm: b"work", exec: false });
        m.process_fork(&task(11, 10, 11, 10), 0);
        assert_eq!(&*m.thread(11).unwrap().comm(), b"work");
        m.process_exit(&task(11, 10, 11, 10));
        assert_eq!(&*m.findnew_thread(11, 11).comm(), b":11");
    }

    /// 2,000 forks of a process with 10,000 maps: every child finds its
    /// parent's maps, and holds them without a copy (before, the copies
    /// took 1.58 GB and ran out of budget: 323 children had no maps).
    #[test]
    fn forked_processes_share_their_parents_maps() {
        let mut m = Machine::new();
        for i in 0..10_000u64 {
            let mm = MmapRecord { pid: 10, tid: 10, start: 0x10_0000 + i * 0x1000, len: 0x800, pgoff: 0, prot: 5, flags: 0, build_id: None, filename: b"/bin/x" };
            m.process_mmap(&mm, perf_data::record::kind::MMAP2, misc::USER);
        }
        for child in 100..2_100 {
            m.process_fork(&task(child, 10, child, 10), 0);
        }
        assert_eq!((m.fork_maps_copied, m.forks_without_maps), (0, 0));
        let parent = m.thread(10).unwrap().maps.borrow().clone();
        for child in 100..2_100 {
            let t = m.thread(child).unwrap();
            assert!(Rc::ptr_eq(&t.maps.borrow(), &parent), "child {child} shares its parent's maps");
            assert!(m.find_map(child, CpuMode::User, 0x10_0000 + 9_999 * 0x1000).is_some());
        }
        // A child that maps something gets its own copy; the others keep
        // sharing, and the parent does not see the child's map.
        let mm = MmapRecord { pid: 100, tid: 100, start: 0x1, len: 0x10, pgoff: 0, prot: 5, flags: 0, build_id: None, filename: b"/bin/y" };
        m.process_mmap(&mm, perf_data::record::kind::MMAP2, misc::USER);
        assert!(m.find_map(100, CpuMode::User, 0x8).is_some());
        assert!(m.find_map(10, CpuMode::User, 0x8).is_none());
        assert!(Rc::ptr_eq(&m.thread(101).unwrap().maps.borrow(), &parent));
    }

    /// Forks into a process that has maps already copy the parent's in,
    /// within a budget.
    #[test]
    fn fork_copies_into_existing_processes_are_bounded() {
        let mut m = Machine::new();
        m.fork_map_budget = 10;
        for (pid, start) in [(10, 0x1000), (20, 0x100_0000)] {
            for i in 0..4 {
                let mm = MmapRecord { pid, tid: pid, start: start + 0x1000 * i, len: 0x800, pgoff: 0, prot: 5, flags: 0, build_id: None, filename: b"/bin/x" };
                m.process_mmap(&mm, perf_data::record::kind::MMAP2, misc::USER);
            }
        }
        // Threads of process 20 forked from process 10: copies into 20's maps.
        for child in 21..26 {
            m.process_fork(&task(20, 10, child, 10), 0);
        }
        assert_eq!((m.fork_maps_copied, m.forks_without_maps), (8, 3));
        assert!(m.find_map(20, CpuMode::User, 0x1000).is_some(), "process 20 has 10's maps as well");
        assert!(m.find_map(20, CpuMode::User, 0x100_0000).is_some(), "and its own");
    }

    /// Threads of a process are in its map group; a forked process, a
    /// process whose pid comes back after an exit, get new ones.
    #[test]
    fn map_groups_follow_address_spaces() {
        let mut m = Machine::new();
        let g10 = m.findnew_thread(10, 10).map_group();
        assert_eq!(m.findnew_thread(10, 11).map_group(), g10);
        m.process_fork(&task(20, 10, 20, 10), 0);
        let g20 = m.thread(20).unwrap().map_group();
        assert_ne!(g20, g10);
        m.process_fork(&task(20, 20, 21, 20), 0);
        assert_eq!(m.thread(21).unwrap().map_group(), g20);
        // A thread seen before its pid: it joins the leader's group.
        m.findnew_thread(-1, 30);
        assert_eq!(m.findnew_thread(10, 30).map_group(), g10);
        m.process_exit(&task(20, 10, 20, 10));
        m.process_exit(&task(20, 20, 21, 20));
        assert!(![g10, g20].contains(&m.findnew_thread(20, 20).map_group()));
    }

    #[test]
    fn threads_share_the_leaders_maps() {
        let mut m = Machine::new();
        m.process_fork(&task(10, 10, 12, 10), 0);
        let mm = MmapRecord { pid: 10, tid: 10, start: 0x1000, len: 0x1000, pgoff: 0, prot: 5, flags: 0, build_id: None, filename: b"/bin/x" };
        m.process_mmap(&mm, perf_data::record::kind::MMAP2, misc::USER);
        assert!(m.find_map(12, CpuMode::User, 0x1800).is_some());
        // A new process gets a copy, not a share.
        m.process_fork(&task(20, 10, 20, 10), 0);
        let mm2 = MmapRecord { start: 0x5000, ..mm };
        m.process_mmap(&mm2, perf_data::record::kind::MMAP2, misc::USER);
        assert!(m.find_map(20, CpuMode::User, 0x1800).is_some());
        assert!(m.find_map(20, CpuMode::User, 0x5800).is_none());
    }

    /// KSYMBOL text gets a map of its own unless a map holds it already;
    /// unregistering removes such a map, never the kernel's.
    #[test]
    fn ksymbols_map_and_unmap() {
        let mut m = Machine::new();
        let kernel = MmapRecord { pid: -1, tid: 0, start: 0xffff_0000, len: 0x1000, pgoff: 0xffff_0000, prot: 5, flags: 0, build_id: None, filename: b"[kernel.kallsyms]_text" };
        m.process_mmap(&kernel, perf_data::record::kind::MMAP, misc::KERNEL);
        let reg = |addr, len, flags| KsymbolRecord { addr, len, ksym_type: 1, flags, name: b"bpf_prog_1_f" };
        let dso_at = |m: &Machine, addr| m.find_map(0, CpuMode::Kernel, addr).map(|map| (m.dsos.get(map.dso).kind, map.map_ip(addr)));
        m.process_ksymbol(&reg(0x1_0000_0000, 0x40, 0));
        assert_eq!(dso_at(&m, 0x1_0000_003f), Some((DsoKind::Ksymbol, 0x3f)));
        assert_eq!(dso_at(&m, 0x1_0000_0040), None);
        // Zero length (not JIT-compiled), or inside the kernel's map: no map.
        m.process_ksymbol(&reg(0x2_0000_0000, 0, 0));
        assert_eq!(dso_at(&m, 0x2_0000_0000), None);
        m.process_ksymbol(&reg(0xffff_0010, 0x10, 0));
        assert_eq!(dso_at(&m, 0xffff_0010).map(|d| d.0), Some(DsoKind::Kernel));
        // Unregistering: the KSYMBOL map goes, the kernel's stays.
        let epoch = m.epoch();
        m.process_ksymbol(&reg(0x1_0000_0010, 0x40, KsymbolRecord::FLAG_UNREGISTER));
        assert_eq!(dso_at(&m, 0x1_0000_0000), None);
        assert_ne!(m.epoch(), epoch);
        m.process_ksymbol(&reg(0xffff_0010, 0x10, KsymbolRecord::FLAG_UNREGISTER));
        assert_eq!(dso_at(&m, 0xffff_0010).map(|d| d.0), Some(DsoKind::Kernel));
        // The same text again shares its DSO; another length gets another.
        m.process_ksymbol(&reg(0x1_0000_0000, 0x40, 0));
        let first = m.find_map(0, CpuMode::Kernel, 0x1_0000_0000).unwrap().dso;
        m.process_ksymbol(&reg(0x1_0000_0000, 0x40, KsymbolRecord::FLAG_UNREGISTER));
        m.process_ksymbol(&reg(0x1_0000_0000, 0x40, 0));
        assert_eq!(m.find_map(0, CpuMode::Kernel, 0x1_0000_0000).unwrap().dso, first);
        m.process_ksymbol(&reg(0x1_0000_0000, 0x40, KsymbolRecord::FLAG_UNREGISTER));
        m.process_ksymbol(&reg(0x1_0000_0000, 0x80, 0));
        let other = m.find_map(0, CpuMode::Kernel, 0x1_0000_0000).unwrap().dso;
        assert_ne!(other, first);
        assert_eq!(m.dsos.get(other).ksym_len, 0x80);
    }
}
