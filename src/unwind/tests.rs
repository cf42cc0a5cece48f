//! Tests of the whole unwinder: small processes with hand-built CFI, and
//! every sample of the golden `--call-graph dwarf` recordings against the
//! addresses perf-ref printed for them.

use std::sync::Arc;

use super::cfi::tests::{CIE_X86_FULL, EhBuilder, bytes, entry};
use super::*;

const ET_DYN: u16 = 3;
const PT_LOAD: u32 = 1;

/// perf's x86_64 dwarf mask: AX..SS, R8..R15.
const MASK: u64 = 0xff0fff;

/// Register values in mask order for `ip`, `sp`, `bp` (others 0).
fn regs(ip: u64, sp: u64, bp: u64) -> Vec<u64> {
    let mut v = vec![0u64; 20];
    v[6] = bp;
    v[7] = sp;
    v[8] = ip;
    v
}

/// A fake process: maps, and file words for reads outside the stack.
#[derive(Default)]
struct Fake {
    maps: Vec<MapRef>,
    words: Vec<(u64, u64)>,
}

impl Process for Fake {
    fn find_map(&self, addr: u64) -> Option<MapRef> {
        self.maps.iter().find(|m| m.start <= addr && addr < m.end).cloned()
    }
    fn read_file_word(&self, addr: u64) -> Option<u64> {
        self.words.iter().find(|w| w.0 == addr).map(|w| w.1)
    }
}

/// An object whose code is at file addresses 0x1000..0x10000, with the
/// `.eh_frame` built by `b` (and its `.eh_frame_hdr`).
fn object(b: &EhBuilder, debug_frame: Option<Vec<u8>>) -> Arc<Object> {
    let hdr_addr = b.addr + 0x8000;
    Arc::new(
        Object::from_parts(ObjectParts {
            e_type: ET_DYN,
            elf64: true,
            little_endian: true,
            segments: vec![Segment { p_type: PT_LOAD, p_offset: 0, p_vaddr: 0, p_filesz: 0x10000, p_memsz: 0x10000, p_align: 0x1000 }],
            eh_frame: Some((bytes(b.data.clone()), b.addr)),
            eh_frame_hdr: Some((bytes(b.hdr(hdr_addr)), hdr_addr)),
            debug_frame: debug_frame.map(|d| (bytes(d), 0x10000)),
        })
        .expect("object"),
    )
}

const BASE: u64 = 0x5555_0000_0000;
const SP: u64 = 0x7ffc_0000_1000;

/// The text map of `obj` at BASE (its file offset 0x1000 at BASE+0x1000).
fn text_map(obj: &Arc<Object>) -> MapRef {
    MapRef { start: BASE + 0x1000, end: BASE + 0x10000, pgoff: 0x1000, object: Some(obj.clone()), jitted: false }
}

/// Four functions: f1 (leaf, CFA rsp+8), f2 (CFA rsp+32 after 4 bytes),
/// f3 (CFA rsp+16 after 1 byte), f4 (rip undefined: the outermost).
fn chain_cfi() -> EhBuilder {
    let mut b = EhBuilder::new(0x3000);
    let cie = b.cie(false, &CIE_X86_FULL);
    b.fde(cie, 0x1000, 0x100, &[]);
    b.fde(cie, 0x1100, 0x100, &[0x44, 0x0e, 0x20]);
    b.fde(cie, 0x1200, 0x100, &[0x41, 0x0e, 0x10]);
    b.fde(cie, 0x1300, 0x100, &[0x07, 0x10]);
    b
}

/// The stack of a sample in f1 at 0x1010 called from f2 (0x1150), from
/// f3 (0x1250), from f4 (0x1310).
fn chain_stack() -> Vec<u8> {
    // f1's return address (CFA = SP+8); f2's (CFA = SP+8+32); f3's (CFA = SP+40+16).
    stack_with(64, &[(0, BASE + 0x1150), (32, BASE + 0x1250), (48, BASE + 0x1310)])
}

/// A process with just `obj`'s text map.
fn process(obj: &Arc<Object>) -> Fake {
    Fake { maps: vec![text_map(obj)], ..Default::default() }
}

/// A stack copy of `len` bytes with `words` (offset, value) in it.
fn stack_with(len: usize, words: &[(usize, u64)]) -> Vec<u8> {
    let mut s = vec![0u8; len];
    for &(off, v) in words {
        s[off..off + 8].copy_from_slice(&v.to_le_bytes());
    }
    s
}

fn run(p: &Fake, space: &mut ModuleSpace, regs: &[u64], stack: &[u8], max: usize) -> Unwound {
    let sample = Sample { regs: UserRegs { abi: abi::ABI_64, mask: MASK, values: regs }, stack, little_endian: true };
    Unwinder::new(Arch::X86_64).unwind(space, p, &sample, max)
}

fn ips(u: &Unwound) -> Vec<u64> {
    u.frames.iter().map(|f| f.ip - BASE).collect()
}

#[test]
fn a_chain_unwinds_to_its_undefined_return_address() {
    let obj = object(&chain_cfi(), None);
    let p = process(&obj);
    let r = regs(BASE + 0x1010, SP, 0);
    let u = run(&p, &mut ModuleSpace::new(), &r, &chain_stack(), 127);
    // The sampled frame as is, return addresses minus one.
    assert_eq!(ips(&u), vec![0x1010, 0x114f, 0x124f, 0x130f]);
    assert_eq!(u.stop, Stop::End);
    assert!(u.frames[0].activation && !u.frames[1].activation);
    assert_eq!(u.frames[1].pc, BASE + 0x1150);
}

#[test]
fn a_short_stack_copy_ends_the_unwind() {
    let obj = object(&chain_cfi(), None);
    let p = process(&obj);
    let r = regs(BASE + 0x1010, SP, 0);
    let stack = chain_stack();
    // f3's return address (at SP+48) is not in a 48-byte copy: f3 is the
    // last frame, and no error.
    let u = run(&p, &mut ModuleSpace::new(), &r, &stack[..48], 127);
    assert_eq!(ips(&u), vec![0x1010, 0x114f, 0x124f]);
    assert_eq!(u.stop, Stop::End);
    // A 47-byte copy cuts f2's return address too (reads must fit whole).
    let u = run(&p, &mut ModuleSpace::new(), &r, &stack[..39], 127);
    assert_eq!(ips(&u), vec![0x1010, 0x114f]);
    // ... unless the file mapped there has the word (perf reads the DSO).
    let p2 = Fake { maps: p.maps.clone(), words: vec![(SP + 32, BASE + 0x1250)] };
    let u = run(&p2, &mut ModuleSpace::new(), &r, &stack[..39], 127);
    assert_eq!(ips(&u), vec![0x1010, 0x114f, 0x124f]);
}

#[test]
fn max_stack_counts_frames() {
    let obj = object(&chain_cfi(), None);
    let p = process(&obj);
    let r = regs(BASE + 0x1010, SP, 0);
    let u = run(&p, &mut ModuleSpace::new(), &r, &chain_stack(), 2);
    assert_eq!(ips(&u), vec![0x1010, 0x114f]);
    assert_eq!(u.stop, Stop::MaxStack);
    let u = run(&p, &mut ModuleSpace::new(), &r, &chain_stack(), 0);
    assert!(u.frames.is_empty());
}

#[test]
fn nothing_to_unwind() {
    let obj = object(&chain_cfi(), None);
    let p = process(&obj);
    let r = regs(BASE + 0x1010, SP, 0);
    let s = chain_stack();
    let mut space = ModuleSpace::new();
    let mut un = Unwinder::new(Arch::X86_64);
    let mut go = |abi, mask, values: &[u64], stack: &[u8]| {
        un.unwind(&mut space, &p, &Sample { regs: UserRegs { abi, mask, values }, stack, little_endian: true }, 127).stop
    };
    assert_eq!(go(abi::NONE, MASK, &r, &s), Stop::NoUserRegs);
    assert_eq!(go(abi::ABI_64, MASK, &[], &s), Stop::NoUserRegs);
    assert_eq!(go(abi::ABI_64, MASK, &r, &[]), Stop::EmptyStack);
    assert_eq!(go(abi::ABI_32, MASK, &r, &s), Stop::UnsupportedAbi);
    // No IP in the mask.
    assert_eq!(go(abi::ABI_64, 1 << 7, &[SP], &s), Stop::NoUserRegs);
}

#[test]
fn a_sample_in_an_unloadable_map_has_no_user_frames() {
    // Like a sample in [vdso] when perf has no copy of it.
    let p = Fake {
        maps: vec![MapRef { start: 0x7fff_0000_0000, end: 0x7fff_0000_2000, pgoff: 0, object: None, jitted: false }],
        ..Default::default()
    };
    let u = run(&p, &mut ModuleSpace::new(), &regs(0x7fff_0000_0100, SP, 0), &chain_stack(), 127);
    assert_eq!(u, Unwound { frames: vec![], stop: Stop::FirstFrameNotReported });
}

#[test]
fn a_first_sample_outside_any_map_cannot_attach() {
    let p = Fake::default();
    let u = run(&p, &mut ModuleSpace::new(), &regs(0x1234, SP, 0), &chain_stack(), 127);
    assert_eq!(u.stop, Stop::NotAttached);
    // Once a module is known (an earlier sample), the same sample prints
    // the unknown frame, then tries the frame pointer.
    let obj = object(&chain_cfi(), None);
    let p = process(&obj);
    let mut space = ModuleSpace::new();
    run(&p, &mut space, &regs(BASE + 0x1010, SP, 0), &chain_stack(), 127);
    let u = run(&p, &mut space, &regs(0x1234, SP, 0), &chain_stack(), 127);
    assert_eq!(u.frames.iter().map(|f| f.ip).collect::<Vec<_>>(), vec![0x1234]);
    assert_eq!(u.stop, Stop::NoCaller);
}

#[test]
fn a_frame_in_an_unloadable_map_is_not_printed() {
    // f2 returns into anonymous memory (a map without a file): perf ends
    // the unwind there, without that frame.
    let obj = object(&chain_cfi(), None);
    let anon = MapRef { start: 0x7000_0000_0000, end: 0x7000_0000_1000, pgoff: 0, object: None, jitted: false };
    let p = Fake { maps: vec![text_map(&obj), anon], ..Default::default() };
    let mut stack = chain_stack();
    stack[32..40].copy_from_slice(&(0x7000_0000_0010u64).to_le_bytes());
    let u = run(&p, &mut ModuleSpace::new(), &regs(BASE + 0x1010, SP, 0), &stack, 127);
    assert_eq!(ips(&u), vec![0x1010, 0x114f]);
    assert_eq!(u.stop, Stop::FrameNotReported);
}

#[test]
fn outside_any_map_the_frame_pointer_takes_over() {
    // f1's caller returns to an address no map covers: perf prints it
    // ([unknown]), and libdw, finding no module, follows rbp.
    let obj = object(&chain_cfi(), None);
    let p = process(&obj);
    let fp = SP + 16;
    // f1 returns to nowhere; [rbp] = 0; [rbp+8] returns into f4.
    let stack = stack_with(64, &[(0, 0x6000_0000), (16, 0), (24, BASE + 0x1310)]);
    let u = run(&p, &mut ModuleSpace::new(), &regs(BASE + 0x1010, SP, fp), &stack, 127);
    assert_eq!(u.frames.iter().map(|f| f.ip).collect::<Vec<_>>(), vec![BASE + 0x1010, 0x6000_0000 - 1, BASE + 0x130f]);
    assert_eq!(u.stop, Stop::End);
    // rbp = 0: the fallback refuses, and the unknown frame is the last.
    let u = run(&p, &mut ModuleSpace::new(), &regs(BASE + 0x1010, SP, 0), &stack, 127);
    assert_eq!(u.frames.len(), 2);
    assert_eq!(u.stop, Stop::NoCaller);
    // rbp below the stack pointer: the sp must move up.
    let u = run(&p, &mut ModuleSpace::new(), &regs(BASE + 0x1010, SP, SP - 64), &stack, 127);
    assert_eq!(u.frames.len(), 2);
    assert_eq!(u.stop, Stop::NoCaller);
}

#[test]
fn no_fde_means_frame_pointer_even_inside_a_module() {
    let mut b = EhBuilder::new(0x3000);
    let cie = b.cie(false, &CIE_X86_FULL);
    b.fde(cie, 0x1300, 0x100, &[0x07, 0x10]);
    let obj = object(&b, None);
    let p = process(&obj);
    let stack = stack_with(64, &[(40, BASE + 0x1310)]);
    let u = run(&p, &mut ModuleSpace::new(), &regs(BASE + 0x1010, SP, SP + 32), &stack, 127);
    assert_eq!(ips(&u), vec![0x1010, 0x130f]);
    assert_eq!(u.stop, Stop::End);
}

#[test]
fn debug_frame_is_used_where_eh_frame_has_no_fde() {
    // .eh_frame covers f4 only; .debug_frame covers f1 (file addresses are
    // absolute, encoding udata8).
    let mut b = EhBuilder::new(0x3000);
    let cie = b.cie(false, &CIE_X86_FULL);
    b.fde(cie, 0x1300, 0x100, &[0x07, 0x10]);
    let mut df = Vec::new();
    // CIE: id ~0, version 1, "", code 1, data -8, ra 16, program.
    entry(&mut df, [&[0xff, 0xff, 0xff, 0xff, 1, 0, 1, 0x78, 16][..], &CIE_X86_FULL].concat());
    // FDE: CIE at 0, pc_begin 0x1000, range 0x100, CFA rsp+16 (RA at SP+8).
    let fde = [&[0u8, 0, 0, 0][..], &0x1000u64.to_le_bytes(), &0x100u64.to_le_bytes(), &[0x0e, 0x10]].concat();
    entry(&mut df, fde);
    let obj = object(&b, Some(df));
    let p = process(&obj);
    let stack = stack_with(32, &[(8, BASE + 0x1310)]);
    let u = run(&p, &mut ModuleSpace::new(), &regs(BASE + 0x1010, SP, 0), &stack, 127);
    assert_eq!(ips(&u), vec![0x1010, 0x130f]);
    assert_eq!(u.stop, Stop::End);
}

#[test]
fn signal_frames_are_activations() {
    // f1 (a handler leaf) returns to __restore_rt at 0x1401; its FDE
    // (CIE with 'S') starts one byte earlier, as glibc's does. The saved
    // context is at the trampoline's rsp: rip at +16, rsp at +24 (a
    // simplified sigcontext), found with DW_CFA_expression / a CFA expression.
    let mut b = EhBuilder::new(0x3000);
    let cie = b.cie(false, &CIE_X86_FULL);
    b.fde(cie, 0x1000, 0x100, &[]);
    b.fde(cie, 0x1300, 0x100, &[0x07, 0x10]);
    let scie = b.cie(true, &[]);
    // CFA = [rsp + 24] (def_cfa_expression: breg7 24; deref);
    // rip: expression breg7 16 (a location); rbp: same-value by default.
    b.fde(scie, 0x1400, 0x10, &[0x0f, 0x03, 0x77, 24, 0x06, 0x10, 0x10, 0x02, 0x77, 16]);
    b.fde(cie, 0x1500, 0x100, &[0x0e, 0x10]);
    let obj = object(&b, None);
    let p = process(&obj);
    // The handler returns to the trampoline; the trampoline's rsp = SP+8:
    // rip (interrupted in f5 at 0x1520, not after a call) at SP+24, the
    // interrupted rsp at SP+32; f5: CFA rsp+16 = SP+80, RA (into f4) at SP+72.
    let stack = stack_with(128, &[(0, BASE + 0x1401), (24, BASE + 0x1520), (32, SP + 64), (72, BASE + 0x1310)]);
    let u = run(&p, &mut ModuleSpace::new(), &regs(BASE + 0x1010, SP, 0), &stack, 127);
    assert_eq!(ips(&u), vec![0x1010, 0x1401, 0x1520, 0x130f]);
    let act: Vec<bool> = u.frames.iter().map(|f| f.activation).collect();
    assert_eq!(act, vec![true, true, true, false]);
    assert_eq!(u.stop, Stop::End);
}

#[test]
fn an_endless_stack_is_bounded_by_max_stack() {
    // CFA = rsp + 0 and the return address at CFA + 0: every frame is
    // its own caller. libdw has no loop check; perf's --max-stack ends it.
    let mut b = EhBuilder::new(0x3000);
    let cie = b.cie(false, &[0x0c, 0x07, 0x00, 0x90, 0x00]);
    b.fde(cie, 0x1000, 0x100, &[]);
    let obj = object(&b, None);
    let p = process(&obj);
    let stack = stack_with(16, &[(0, BASE + 0x1011)]);
    let u = run(&p, &mut ModuleSpace::new(), &regs(BASE + 0x1010, SP, 0), &stack, 127);
    assert_eq!(u.frames.len(), 127);
    assert_eq!(u.stop, Stop::MaxStack);
    let u = run(&p, &mut ModuleSpace::new(), &regs(BASE + 0x1010, SP, 0), &stack, usize::MAX);
    assert_eq!(u.frames.len(), MAX_FRAMES);
}

#[test]
fn a_return_address_of_zero_ends_the_stack_and_ip_zero_is_not_printed() {
    let obj = object(&chain_cfi(), None);
    let p = process(&obj);
    let mut stack = chain_stack();
    stack[0..8].copy_from_slice(&0u64.to_le_bytes());
    let u = run(&p, &mut ModuleSpace::new(), &regs(BASE + 0x1010, SP, 0), &stack, 127);
    assert_eq!(ips(&u), vec![0x1010]);
    assert_eq!(u.stop, Stop::End);
    // A sampled ip of 0 (a call through a null pointer): not printed.
    let mut space = ModuleSpace::new();
    run(&p, &mut space, &regs(BASE + 0x1010, SP, 0), &chain_stack(), 127);
    let mut s = chain_stack();
    s[0..8].copy_from_slice(&(BASE + 0x1150).to_le_bytes());
    let u = run(&p, &mut space, &regs(0, SP, 0), &s, 127);
    assert!(u.frames.iter().all(|f| f.ip != 0));
}

#[test]
fn hostile_cfi_and_stacks_never_panic() {
    let mut rng = crate::testing::rng(0x51ed_2701);
    for _ in 0..400 {
        let mut b = EhBuilder::new(0x3000);
        let cie_prog: Vec<u8> = (0..rng(12)).map(|_| rng(256) as u8).collect();
        let cie = b.cie(rng(2) == 0, &cie_prog);
        for i in 0..4 {
            let prog: Vec<u8> = (0..rng(24)).map(|_| rng(256) as u8).collect();
            b.fde(cie, 0x1000 + i * 0x100, 0x100, &prog);
        }
        let obj = object(&b, None);
        let p = process(&obj);
        let stack: Vec<u8> = (0..rng(256)).map(|_| rng(256) as u8).collect();
        let mut r: Vec<u64> = (0..20).map(|_| rng(u64::MAX)).collect();
        r[8] = BASE + 0x1000 + rng(0x400);
        r[7] = SP;
        let u = run(&p, &mut ModuleSpace::new(), &r, &stack, 127);
        assert!(u.frames.len() <= 127);
    }
}

#[test]
fn random_stacks_through_real_libc_never_panic() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/symfs");
    let elf = crate::symbols::elf::Elf::open(&dir.join("usr/lib/x86_64-linux-gnu/libc.so.6")).expect("libc");
    let libc = Arc::new(Object::from_elf(&elf, None).expect("libc object"));
    let p = Fake {
        maps: vec![MapRef { start: BASE + 0x26000, end: BASE + 0x17c000, pgoff: 0x26000, object: Some(libc), jitted: false }],
        ..Default::default()
    };
    let mut rng = crate::testing::rng(0x1bad_b002);
    let mut unwinder = Unwinder::new(Arch::X86_64);
    let mut space = ModuleSpace::new();
    for _ in 0..2000 {
        // Return addresses into libc's text mixed with garbage.
        let stack: Vec<u8> = (0..rng(64))
            .flat_map(|_| if rng(3) == 0 { BASE + 0x26000 + rng(0x156000) } else { rng(u64::MAX) }.to_le_bytes())
            .collect();
        let mut r: Vec<u64> = (0..20).map(|_| rng(u64::MAX)).collect();
        r[7] = SP;
        r[8] = BASE + 0x26000 + rng(0x156000);
        let sample = Sample { regs: UserRegs { abi: abi::ABI_64, mask: MASK, values: &r }, stack: &stack, little_endian: true };
        let u = unwinder.unwind(&mut space, &p, &sample, 127);
        assert!(u.frames.len() <= 127);
    }
    assert!(unwinder.cached_rows() > 0);
}

// --- the golden recordings --------------------------------------------------

mod recordings {
    //! Every sample of `tests/golden/dwarf-*/perf.data` is unwound here and
    //! its user frames compared with the user part of the callchain perf-ref
    //! printed for it (`fields.out`: `--no-inline -F ...,ip`, bare
    //! addresses). The recordings' maps come from their MMAP2 records; the
    //! objects from the shared symfs, as perf-ref was given them.

    use std::collections::HashMap;
    use std::path::{Path, PathBuf};
    use std::sync::Arc;

    use crate::perf_data::FileInfo;
    use crate::symbols::elf::Elf;
    use crate::unwind::*;

    const SAMPLE: u32 = 9;
    const MMAP: u32 = 1;
    const MMAP2: u32 = 10;
    const COMM: u32 = 3;
    const FORK: u32 = 7;
    const COMM_EXEC: u16 = 1 << 13;
    const CONTEXT_MAX: u64 = (-4095i64) as u64;

    #[derive(Clone)]
    struct Map {
        start: u64,
        end: u64,
        pgoff: u64,
        file: String,
    }

    /// A process's maps with perf's overlap rule: a new map replaces the
    /// parts of older ones it covers.
    #[derive(Clone, Default)]
    struct Maps(Vec<Map>);

    impl Maps {
        fn insert(&mut self, m: Map) {
            let mut out = Vec::new();
            for old in self.0.drain(..) {
                if old.end <= m.start || old.start >= m.end {
                    out.push(old);
                    continue;
                }
                if old.start < m.start {
                    out.push(Map { end: m.start, ..old.clone() });
                }
                if old.end > m.end {
                    out.push(Map { start: m.end, pgoff: old.pgoff + (m.end - old.start), ..old.clone() });
                }
            }
            out.push(m);
            out.sort_by_key(|m| m.start);
            self.0 = out;
        }
    }

    /// Objects and file bytes from the symfs, by recorded path.
    struct Files {
        symfs: PathBuf,
        objects: HashMap<String, Option<Arc<Object>>>,
        bytes: HashMap<String, Option<Vec<u8>>>,
    }

    impl Files {
        fn object(&mut self, file: &str) -> Option<Arc<Object>> {
            let symfs = self.symfs.clone();
            self.objects
                .entry(file.to_string())
                .or_insert_with(|| {
                    // perf joins the symfs and the recorded path; "[vdso]",
                    // "[stack]", "//anon" are not files there.
                    let elf = Elf::open(&symfs.join(file.trim_start_matches('/')))?;
                    Object::from_elf(&elf, None).map(Arc::new)
                })
                .clone()
        }

        fn word(&mut self, file: &str, off: u64) -> Option<u64> {
            let symfs = self.symfs.clone();
            let b = self
                .bytes
                .entry(file.to_string())
                .or_insert_with(|| std::fs::read(symfs.join(file.trim_start_matches('/'))).ok());
            let b = b.as_ref()?;
            let off = usize::try_from(off).ok()?;
            Some(u64::from_le_bytes(b.get(off..off.checked_add(8)?)?.try_into().ok()?))
        }
    }

    struct View<'a> {
        maps: &'a Maps,
        files: std::cell::RefCell<&'a mut Files>,
    }

    impl Process for View<'_> {
        fn find_map(&self, addr: u64) -> Option<MapRef> {
            let m = self.maps.0.iter().find(|m| m.start <= addr && addr < m.end)?;
            let object = self.files.borrow_mut().object(&m.file);
            Some(MapRef { start: m.start, end: m.end, pgoff: m.pgoff, object, jitted: m.file.starts_with("/tmp/jitted-") })
        }
        fn read_file_word(&self, addr: u64) -> Option<u64> {
            let m = self.maps.0.iter().find(|m| m.start <= addr && addr < m.end)?;
            self.files.borrow_mut().word(&m.file, addr - m.start + m.pgoff)
        }
    }

    /// One event of the recording, in time order.
    enum Event {
        Map { pid: u32, map: Map },
        Exec { pid: u32 },
        Fork { pid: u32, ppid: u32 },
        Sample(Sample),
    }

    struct Sample {
        pid: u32,
        tid: u32,
        time: u64,
        kernel: usize,
        abi: u64,
        regs: Vec<u64>,
        stack: Vec<u8>,
    }

    fn u32_at(b: &[u8], o: usize) -> u32 {
        u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
    }
    fn u64_at(b: &[u8], o: usize) -> u64 {
        u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
    }

    /// The records of `path` this test needs, sorted by time as perf
    /// processes them.
    fn events(path: &Path) -> (Vec<(u64, Event)>, u64) {
        let bytes = std::fs::read(path).expect("perf.data");
        let info = FileInfo::parse(&bytes).expect("header");
        assert_eq!(info.evlist.len(), 1, "one event");
        let attr = info.evlist.evsels[0].attr.clone();
        let st = attr.sample_type;
        // IP TID TIME ADDR ID STREAM_ID CPU PERIOD READ CALLCHAIN RAW BRANCH REGS STACK
        assert_eq!(st & ((1 << 4) | (1 << 10) | (1 << 11)), 0, "no READ/RAW/BRANCH_STACK in these recordings");
        let trailer_time = {
            // sample_id: TID, TIME, ID, STREAM_ID, CPU, IDENTIFIER (each if sampled)
            let after: u32 = [(1u64 << 6), 1 << 9, 1 << 7, 1 << 16].iter().map(|b| if st & b != 0 { 8 } else { 0 }).sum();
            after as usize + 8
        };
        let mut out = Vec::new();
        let mut pos = info.data.start;
        let mut seq = 0u64;
        while pos + 8 <= info.data.end {
            let ty = u32_at(&bytes, pos);
            let misc = u16::from_le_bytes(bytes[pos + 4..pos + 6].try_into().unwrap());
            let size = u16::from_le_bytes(bytes[pos + 6..pos + 8].try_into().unwrap()) as usize;
            assert!(size >= 8);
            let rec = &bytes[pos..pos + size];
            let body = &rec[8..];
            pos += size;
            seq += 1;
            let rec_time = || u64_at(rec, rec.len() - trailer_time);
            match ty {
                SAMPLE => {
                    let mut o = 0;
                    if st & (1 << 16) != 0 {
                        o += 8;
                    }
                    if st & 1 != 0 {
                        o += 8;
                    }
                    let (pid, tid) = (u32_at(body, o), u32_at(body, o + 4));
                    o += 8;
                    let time = u64_at(body, o);
                    o += 8;
                    for bit in [3, 6, 9, 7, 8] {
                        if st & (1 << bit) != 0 {
                            o += 8;
                        }
                    }
                    let mut kernel = 0;
                    if st & (1 << 5) != 0 {
                        let nr = u64_at(body, o) as usize;
                        o += 8;
                        kernel = (0..nr).filter(|i| u64_at(body, o + 8 * i) < CONTEXT_MAX).count();
                        o += 8 * nr;
                    }
                    let abi = u64_at(body, o);
                    o += 8;
                    let mut regs = Vec::new();
                    if abi != 0 {
                        for _ in 0..attr.sample_regs_user.count_ones() {
                            regs.push(u64_at(body, o));
                            o += 8;
                        }
                    }
                    let size = u64_at(body, o) as usize;
                    o += 8;
                    let mut stack = Vec::new();
                    if size != 0 {
                        let data = &body[o..o + size];
                        let dyn_size = u64_at(body, o + size) as usize;
                        assert!(dyn_size <= size);
                        stack = data[..dyn_size].to_vec();
                    }
                    out.push((time, seq, Event::Sample(Sample { pid, tid, time, kernel, abi, regs, stack })));
                }
                MMAP | MMAP2 => {
                    let pid = u32_at(body, 0);
                    let (start, len, pgoff) = (u64_at(body, 8), u64_at(body, 16), u64_at(body, 24));
                    let name_at = if ty == MMAP2 { 32 + 24 + 8 } else { 32 };
                    let name = &body[name_at..];
                    let name = String::from_utf8_lossy(&name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())]).into_owned();
                    out.push((rec_time(), seq, Event::Map { pid, map: Map { start, end: start + len, pgoff, file: name } }));
                }
                COMM if misc & COMM_EXEC != 0 => out.push((rec_time(), seq, Event::Exec { pid: u32_at(body, 0) })),
                FORK => {
                    let (pid, ppid) = (u32_at(body, 0), u32_at(body, 4));
                    out.push((rec_time(), seq, Event::Fork { pid, ppid }));
                }
                _ => {}
            }
        }
        out.sort_by_key(|(t, s, _)| (*t, *s));
        (out.into_iter().map(|(t, _, e)| (t, e)).collect(), attr.sample_regs_user)
    }

    /// A perf-ref output with `ip` and without inline expansion: per sample
    /// (tid, time as printed, callchain addresses).
    fn expected(path: &Path) -> Vec<(u32, String, Vec<u64>)> {
        let text = std::fs::read_to_string(path).expect("perf-ref output");
        let mut out: Vec<(u32, String, Vec<u64>)> = Vec::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix('\t') {
                // "<addr>" or "<addr> sym (dso)"
                let addr = rest.split_whitespace().next().expect("address");
                let a = u64::from_str_radix(addr, 16).expect("address");
                out.last_mut().expect("a sample line first").2.push(a);
            } else if !line.is_empty() {
                // "comm [pid/]tid time: ...": the tid is the word before the time.
                let words: Vec<&str> = line.split_whitespace().collect();
                let t = words.iter().position(|w| w.ends_with(':') && w.contains('.')).expect("time");
                let tid = words[t - 1].rsplit('/').next().unwrap().parse().expect("tid");
                out.push((tid, words[t].trim_end_matches(':').to_string(), Vec::new()));
            }
        }
        out
    }

    struct Tally {
        samples: usize,
        frames: usize,
        stops: HashMap<Stop, usize>,
    }

    /// Unwinds every sample of `case` with `max_stack` and compares with
    /// perf-ref's `variant` output (kernel entries: also up to `max_stack`).
    fn compare_with(case: &str, variant: &str, max_stack: usize) -> Tally {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(case);
        let (events, mask) = events(&dir.join("perf.data"));
        let want = expected(&dir.join(format!("{variant}.out")));
        let mut files = Files { symfs: dir.join("symfs"), objects: HashMap::new(), bytes: HashMap::new() };
        let mut maps: HashMap<u32, Maps> = HashMap::new();
        let mut spaces: HashMap<u32, ModuleSpace> = HashMap::new();
        let mut unwinder = Unwinder::new(Arch::X86_64);
        let mut want = want.into_iter();
        let mut tally = Tally { samples: 0, frames: 0, stops: HashMap::new() };
        let mut mismatches = Vec::new();
        for (_, e) in events {
            match e {
                Event::Map { pid, map } => maps.entry(pid).or_default().insert(map),
                Event::Exec { pid } => {
                    maps.insert(pid, Maps::default());
                    spaces.insert(pid, ModuleSpace::new());
                }
                Event::Fork { pid, ppid } => {
                    if pid != ppid {
                        let parent = maps.get(&ppid).cloned().unwrap_or_default();
                        maps.insert(pid, parent);
                        spaces.insert(pid, ModuleSpace::new());
                    }
                }
                Event::Sample(s) => {
                    let (tid, time, chain) = want.next().expect("perf-ref printed as many samples");
                    let printed = format!("{}.{:06}", s.time / 1_000_000_000, s.time % 1_000_000_000 / 1000);
                    assert_eq!((tid, &time), (s.tid, &printed), "{case}: samples out of step");
                    let user_want = &chain[s.kernel.min(max_stack).min(chain.len())..];
                    let pid_maps = maps.entry(s.pid).or_default().clone();
                    let view = View { maps: &pid_maps, files: std::cell::RefCell::new(&mut files) };
                    let space = spaces.entry(s.pid).or_default();
                    let sample = crate::unwind::Sample {
                        regs: UserRegs { abi: s.abi, mask, values: &s.regs },
                        stack: &s.stack,
                        little_endian: true,
                    };
                    let got = unwinder.unwind(space, &view, &sample, max_stack);
                    let got_ips: Vec<u64> = got.frames.iter().map(|f| f.ip).collect();
                    *tally.stops.entry(got.stop).or_default() += 1;
                    tally.samples += 1;
                    if got_ips == user_want {
                        tally.frames += got_ips.len();
                    } else if mismatches.len() < 5 {
                        mismatches.push(format!(
                            "{case} tid {tid} at {time}: perf-ref {:x?}\n   pstitch {:x?} ({:?})",
                            user_want, got_ips, got.stop
                        ));
                    } else {
                        mismatches.push(String::new());
                    }
                }
            }
        }
        assert!(want.next().is_none(), "{case}: perf-ref printed more samples");
        assert!(mismatches.is_empty(), "{} of {} samples differ:\n{}", mismatches.len(), tally.samples, mismatches.join("\n"));
        eprintln!(
            "{case}/{variant}: {} samples, {} user frames equal to perf-ref's; stops {:?}",
            tally.samples, tally.frames, tally.stops
        );
        tally
    }

    /// `fields.out` (perf script's default --max-stack, 127), then
    /// `max-stack-10.out`.
    fn compare(case: &str) -> Tally {
        let t = compare_with(case, "max-stack-10", 10);
        assert!(t.stops.values().sum::<usize>() == t.samples);
        compare_with(case, "fields", 127)
    }

    #[test]
    fn dwarf_c() {
        let t = compare("dwarf-c");
        assert!(t.samples > 150 && t.frames > 1000);
        // Samples in the vdso, signal frames, the end of the stack.
        assert!(t.stops.contains_key(&Stop::FirstFrameNotReported));
        assert!(t.stops.contains_key(&Stop::End));
    }

    #[test]
    fn dwarf_c_1024() {
        let t = compare("dwarf-c-1024");
        assert!(t.samples > 1000);
    }

    #[test]
    fn dwarf_cpp() {
        compare("dwarf-cpp");
    }

    #[test]
    fn dwarf_rust() {
        compare("dwarf-rust");
    }

    #[test]
    fn dwarf_libc() {
        compare("dwarf-libc");
    }

    #[test]
    fn dwarf_python() {
        compare("dwarf-python");
    }
}
