//! Tests of the whole unwinder on small processes with hand-built CFI and
//! on the real libc. (Every sample of the golden `--call-graph dwarf`
//! recordings is checked against perf-ref's output through `pstitch
//! script`: tests/golden/dwarf-*.)

use std::rc::Rc;

use super::cfi::tests::{CIE_X86_FULL, EhBuilder, bytes, entry};
use super::regs::tests::{user_regs, words};
use super::object::ObjectParts;
use super::*;
use crate::symbols::elf::Phdr;

/// `PERF_SAMPLE_REGS_ABI_32`.
const ABI_32: u64 = 1;

/// A new object id (the row cache tells objects apart by it).
fn next_id() -> u64 {
    thread_local!(static NEXT: std::cell::Cell<u64> = const { std::cell::Cell::new(1) });
    NEXT.with(|n| n.replace(n.get() + 1))
}

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

/// A fake process: maps (with their ends), and file words for reads
/// outside the stack.
#[derive(Default)]
struct Fake {
    maps: Vec<(u64, MapRef)>,
    words: Vec<(u64, u64)>,
    /// How many times a report met a map without a file or CFI.
    mets: std::cell::Cell<usize>,
}

impl Process for Fake {
    fn find_map(&self, addr: u64) -> Option<MapRef> {
        self.maps.iter().find(|(end, m)| m.start <= addr && addr < *end).map(|(_, m)| m.clone())
    }
    fn read_file_word(&self, addr: u64) -> Option<u64> {
        self.words.iter().find(|w| w.0 == addr).map(|w| w.1)
    }
    /// A fake's maps never change; two fakes are two sets of maps.
    fn stamp(&self) -> u64 {
        std::ptr::from_ref(self) as usize as u64
    }
    fn met(&self, _met: &Met) {
        self.mets.set(self.mets.get() + 1);
    }
}

/// An object whose code is at file addresses 0x1000..0x10000, with the
/// `.eh_frame` built by `b` (and its `.eh_frame_hdr`).
fn object(b: &EhBuilder, debug_frame: Option<Vec<u8>>) -> Rc<Object> {
    let hdr_addr = b.addr + 0x8000;
    Rc::new(
        Object::from_parts(next_id(), ObjectParts {
            e_type: ET_DYN,
            elf64: true,
            little_endian: true,
            segments: vec![Phdr { p_type: PT_LOAD, p_offset: 0, p_vaddr: 0, p_filesz: 0x10000, p_memsz: 0x10000, p_align: 0x1000 }],
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
fn text_map(obj: &Rc<Object>) -> (u64, MapRef) {
    (BASE + 0x10000, MapRef { start: BASE + 0x1000, pgoff: 0x1000, name: "/bin/test".as_bytes().into(), object: Some(obj.clone()), jitted: false })
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
fn process(obj: &Rc<Object>) -> Fake {
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
    let bytes = words(regs);
    let sample = Sample { regs: user_regs(abi::ABI_64, MASK, &bytes), stack, little_endian: true };
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
    let u = run(&p, &mut ModuleSpace::default(), &r, &chain_stack(), 127);
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
    let u = run(&p, &mut ModuleSpace::default(), &r, &stack[..48], 127);
    assert_eq!(ips(&u), vec![0x1010, 0x114f, 0x124f]);
    assert_eq!(u.stop, Stop::End);
    // A 47-byte copy cuts f2's return address too (reads must fit whole).
    let u = run(&p, &mut ModuleSpace::default(), &r, &stack[..39], 127);
    assert_eq!(ips(&u), vec![0x1010, 0x114f]);
    // ... unless the file mapped there has the word (perf reads the DSO).
    let p2 = Fake { maps: p.maps.clone(), words: vec![(SP + 32, BASE + 0x1250)], ..Default::default() };
    let u = run(&p2, &mut ModuleSpace::default(), &r, &stack[..39], 127);
    assert_eq!(ips(&u), vec![0x1010, 0x114f, 0x124f]);
}

#[test]
fn max_stack_counts_frames() {
    let obj = object(&chain_cfi(), None);
    let p = process(&obj);
    let r = regs(BASE + 0x1010, SP, 0);
    let u = run(&p, &mut ModuleSpace::default(), &r, &chain_stack(), 2);
    assert_eq!(ips(&u), vec![0x1010, 0x114f]);
    assert_eq!(u.stop, Stop::MaxStack);
    let u = run(&p, &mut ModuleSpace::default(), &r, &chain_stack(), 0);
    assert!(u.frames.is_empty());
}

#[test]
fn nothing_to_unwind() {
    let obj = object(&chain_cfi(), None);
    let p = process(&obj);
    let r = regs(BASE + 0x1010, SP, 0);
    let s = chain_stack();
    let mut space = ModuleSpace::default();
    let mut un = Unwinder::new(Arch::X86_64);
    let mut go = |abi, mask, values: &[u64], stack: &[u8]| {
        let bytes = words(values);
        un.unwind(&mut space, &p, &Sample { regs: user_regs(abi, mask, &bytes), stack, little_endian: true }, 127).stop
    };
    assert_eq!(go(abi::NONE, MASK, &r, &s), Stop::NoUserRegs);
    assert_eq!(go(abi::ABI_64, MASK, &[], &s), Stop::NoUserRegs);
    assert_eq!(go(abi::ABI_64, MASK, &r, &[]), Stop::EmptyStack);
    assert_eq!(go(ABI_32, MASK, &r, &s), Stop::UnsupportedAbi);
    // No IP in the mask.
    assert_eq!(go(abi::ABI_64, 1 << 7, &[SP], &s), Stop::NoUserRegs);
}

#[test]
fn a_sample_in_an_unloadable_map_has_no_user_frames() {
    // Like a sample in [vdso] when perf has no copy of it.
    let p = Fake {
        maps: vec![(0x7fff_0000_2000, MapRef { start: 0x7fff_0000_0000, pgoff: 0, name: "//anon".as_bytes().into(), object: None, jitted: false })],
        ..Default::default()
    };
    let u = run(&p, &mut ModuleSpace::default(), &regs(0x7fff_0000_0100, SP, 0), &chain_stack(), 127);
    assert_eq!(u, Unwound { frames: vec![], stop: Stop::FirstFrameNotReported });
}

#[test]
fn a_first_sample_outside_any_map_cannot_attach() {
    let p = Fake::default();
    let u = run(&p, &mut ModuleSpace::default(), &regs(0x1234, SP, 0), &chain_stack(), 127);
    assert_eq!(u.stop, Stop::NotAttached);
    // Once a module is known (an earlier sample), the same sample prints
    // the unknown frame, then tries the frame pointer.
    let obj = object(&chain_cfi(), None);
    let p = process(&obj);
    let mut space = ModuleSpace::default();
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
    let anon = (0x7000_0000_1000, MapRef { start: 0x7000_0000_0000, pgoff: 0, name: "//anon".as_bytes().into(), object: None, jitted: false });
    let p = Fake { maps: vec![text_map(&obj), anon], ..Default::default() };
    let mut stack = chain_stack();
    stack[32..40].copy_from_slice(&(0x7000_0000_0010u64).to_le_bytes());
    let u = run(&p, &mut ModuleSpace::default(), &regs(BASE + 0x1010, SP, 0), &stack, 127);
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
    let u = run(&p, &mut ModuleSpace::default(), &regs(BASE + 0x1010, SP, fp), &stack, 127);
    assert_eq!(u.frames.iter().map(|f| f.ip).collect::<Vec<_>>(), vec![BASE + 0x1010, 0x6000_0000 - 1, BASE + 0x130f]);
    assert_eq!(u.stop, Stop::End);
    // rbp = 0: the fallback refuses, and the unknown frame is the last.
    let u = run(&p, &mut ModuleSpace::default(), &regs(BASE + 0x1010, SP, 0), &stack, 127);
    assert_eq!(u.frames.len(), 2);
    assert_eq!(u.stop, Stop::NoCaller);
    // rbp below the stack pointer: the sp must move up.
    let u = run(&p, &mut ModuleSpace::default(), &regs(BASE + 0x1010, SP, SP - 64), &stack, 127);
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
    let u = run(&p, &mut ModuleSpace::default(), &regs(BASE + 0x1010, SP, SP + 32), &stack, 127);
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
    let u = run(&p, &mut ModuleSpace::default(), &regs(BASE + 0x1010, SP, 0), &stack, 127);
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
    let u = run(&p, &mut ModuleSpace::default(), &regs(BASE + 0x1010, SP, 0), &stack, 127);
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
    let u = run(&p, &mut ModuleSpace::default(), &regs(BASE + 0x1010, SP, 0), &stack, 127);
    assert_eq!(u.frames.len(), 127);
    assert_eq!(u.stop, Stop::MaxStack);
    let u = run(&p, &mut ModuleSpace::default(), &regs(BASE + 0x1010, SP, 0), &stack, usize::MAX);
    assert_eq!(u.frames.len(), MAX_FRAMES);
}

#[test]
fn a_return_address_of_zero_ends_the_stack_and_ip_zero_is_not_printed() {
    let obj = object(&chain_cfi(), None);
    let p = process(&obj);
    let mut stack = chain_stack();
    stack[0..8].copy_from_slice(&0u64.to_le_bytes());
    let u = run(&p, &mut ModuleSpace::default(), &regs(BASE + 0x1010, SP, 0), &stack, 127);
    assert_eq!(ips(&u), vec![0x1010]);
    assert_eq!(u.stop, Stop::End);
    // A sampled ip of 0 (a call through a null pointer): not printed.
    let mut space = ModuleSpace::default();
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
        let u = run(&p, &mut ModuleSpace::default(), &r, &stack, 127);
        assert!(u.frames.len() <= 127);
    }
}

#[test]
fn random_stacks_through_real_libc_never_panic() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/symfs");
    let elf = crate::symbols::elf::Elf::open(&dir.join("usr/lib/x86_64-linux-gnu/libc.so.6")).expect("libc");
    let libc = Rc::new(Object::from_elf(next_id(), &elf, None).expect("libc object"));
    let p = Fake {
        maps: vec![(BASE + 0x17c000, MapRef { start: BASE + 0x26000, pgoff: 0x26000, name: "/usr/lib/x86_64-linux-gnu/libc.so.6".as_bytes().into(), object: Some(libc), jitted: false })],
        ..Default::default()
    };
    let mut rng = crate::testing::rng(0x1bad_b002);
    let mut unwinder = Unwinder::new(Arch::X86_64);
    let mut space = ModuleSpace::default();
    for _ in 0..2000 {
        // Return addresses into libc's text mixed with garbage.
        let stack: Vec<u8> = (0..rng(64))
            .flat_map(|_| if rng(3) == 0 { BASE + 0x26000 + rng(0x156000) } else { rng(u64::MAX) }.to_le_bytes())
            .collect();
        let mut r: Vec<u64> = (0..20).map(|_| rng(u64::MAX)).collect();
        r[7] = SP;
        r[8] = BASE + 0x26000 + rng(0x156000);
        let bytes = words(&r);
        let sample = Sample { regs: user_regs(abi::ABI_64, MASK, &bytes), stack: &stack, little_endian: true };
        let u = unwinder.unwind(&mut space, &p, &sample, 127);
        assert!(u.frames.len() <= 127);
    }
    assert!(unwinder.cached_rows() > 0);
}

/// Two processes with the fixtures' libc mapped: whole, and with the
/// upper half of its text mapped over by an anonymous map (another stamp,
/// and frames there are not reported).
fn libc_processes() -> (Fake, Fake) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/symfs");
    let elf = crate::symbols::elf::Elf::open(&dir.join("usr/lib/x86_64-linux-gnu/libc.so.6")).expect("libc");
    let libc = Rc::new(Object::from_elf(next_id(), &elf, None).expect("libc object"));
    let libc_map = |end: u64| {
        (end, MapRef { start: BASE + 0x26000, pgoff: 0x26000, name: "/usr/lib/x86_64-linux-gnu/libc.so.6".as_bytes().into(), object: Some(libc.clone()), jitted: false })
    };
    let whole = Fake { maps: vec![libc_map(BASE + 0x17c000)], ..Default::default() };
    let anon = MapRef { start: BASE + 0xd0000, pgoff: 0, name: "//anon".as_bytes().into(), object: None, jitted: false };
    let cut = Fake { maps: vec![libc_map(BASE + 0xd0000), (BASE + 0x17c000, anon)], ..Default::default() };
    (whole, cut)
}

/// Return frames answered whole from a process's frame memo unwind as
/// the long way does: libc return addresses from a small pool, so that
/// they come back sample after sample, unwound with one module space and
/// unwinder throughout, and with another pair that sees the same samples
/// but remembers no frame. The maps change now and then (a new stamp),
/// the module list with them.
#[test]
fn frames_answered_whole_unwind_as_the_long_way() {
    let (whole, cut) = libc_processes();
    let mut rng = crate::testing::rng(0x00f4_a3e5);
    let pool: Vec<u64> = (0..300).map(|_| BASE + 0x26000 + rng(0x156000)).collect();
    let mut unwinder = Unwinder::new(Arch::X86_64);
    let mut space = ModuleSpace::default();
    let (mut long_unwinder, mut long_space) = (Unwinder::new(Arch::X86_64), ModuleSpace::default());
    long_space.long_way = true;
    let mut deep = 0;
    for i in 0..3000 {
        let p = if (300..400).contains(&(i % 500)) { &cut } else { &whole };
        let stack: Vec<u8> = (0..rng(96))
            .flat_map(|_| if rng(4) == 0 { rng(u64::MAX) } else { pool[rng(pool.len() as u64) as usize] }.to_le_bytes())
            .collect();
        let mut r: Vec<u64> = (0..20).map(|_| rng(u64::MAX)).collect();
        r[7] = SP;
        r[8] = pool[rng(pool.len() as u64) as usize];
        let bytes = words(&r);
        let sample = Sample { regs: user_regs(abi::ABI_64, MASK, &bytes), stack: &stack, little_endian: true };
        let kept = unwinder.unwind(&mut space, p, &sample, 127);
        let long = long_unwinder.unwind(&mut long_space, p, &sample, 127);
        assert_eq!(kept, long, "sample {i}");
        deep += usize::from(kept.frames.len() > 2);
    }
    assert!(deep > 300, "{deep} samples with more than two frames");
    assert!(space.frames_remembered() > 50, "{} frames remembered", space.frames_remembered());
    assert_eq!(space.frame_slots(), 512, "at most 512 slots");
}

/// A return frame is kept whole only once the process's memo is large
/// enough, only with both its reports remembered without a map met, and
/// answers only under the maps, the memo and the row cache it was kept
/// under.
#[test]
fn a_frame_is_answered_whole_only_under_what_it_was_kept_under() {
    use modules::Target;
    let obj = object(&chain_cfi(), None);
    let p = process(&obj);
    let mut space = ModuleSpace::default();
    let pc = BASE + 0x1150;
    let keep = |space: &mut ModuleSpace, pc: u64, rows_gen: u32| {
        let _ = space.report(&p, pc);
        let memo_gen = space.memo_generation();
        let _ = space.report_below(&p, pc);
        space.remember_frame(pc, memo_gen, Target::FramePointer, rows_gen);
    };
    // A small memo keeps no frame.
    keep(&mut space, pc, 0);
    assert!(space.frame(pc, p.stamp(), 0).is_none());
    for a in 0..64 {
        let _ = space.report(&p, BASE + 0x2000 + a);
    }
    keep(&mut space, pc, 0);
    // As many slots as the memo has addresses (65), to a power of two.
    assert_eq!(space.frame_slots(), 128);
    let f = space.frame(pc, p.stamp(), 0).expect("kept");
    assert!(f.at && f.below && f.target == Target::FramePointer);
    // Another row cache generation, other maps.
    assert!(space.frame(pc, p.stamp(), 1).is_none());
    assert!(space.frame(pc, p.stamp() + 1, 0).is_none());
    // Kept from a memo generation that is not the memo's any more.
    let stale = space.memo_generation().wrapping_sub(1);
    space.remember_frame(BASE + 0x1250, stale, Target::FramePointer, 0);
    assert!(space.frame(BASE + 0x1250, p.stamp(), 0).is_none());
    // Other maps (a new stamp) forget the memo, and the frames with it.
    let other = Fake { maps: p.maps.clone(), ..Default::default() };
    let _ = space.report(&other, BASE + 0x2000);
    assert!(space.frame(pc, p.stamp(), 0).is_none() && space.frame(pc, other.stamp(), 0).is_none());
    // A frame whose report meets a map without a file is never kept.
    let anon = MapRef { start: BASE + 0x10000, pgoff: 0, name: "//anon".as_bytes().into(), object: None, jitted: false };
    let with_anon = Fake { maps: vec![text_map(&obj), (BASE + 0x20000, anon)], ..Default::default() };
    let mut space = ModuleSpace::default();
    for a in 0..64 {
        let _ = space.report(&with_anon, BASE + 0x2000 + a);
    }
    let in_anon = BASE + 0x10800;
    let _ = space.report(&with_anon, in_anon);
    let memo_gen = space.memo_generation();
    let _ = space.report_below(&with_anon, in_anon);
    space.remember_frame(in_anon, memo_gen, Target::FramePointer, 0);
    assert!(space.frame(in_anon, with_anon.stamp(), 0).is_none());
}

/// Samples of a few threads whose stacks change a little from one sample
/// to the next (a word here and there, the stack grown or shrunk, other
/// registers, another budget, and now and then other maps), unwound with
/// the threads' trails, unwind as they do without them: a second unwinder
/// sees each sample as a thread of its own.
#[test]
fn trails_unwind_as_the_long_way() {
    let (whole, cut) = libc_processes();
    let mut rng = crate::testing::rng(0x7a11_5eed);
    let pool: Vec<u64> = (0..200).map(|_| BASE + 0x26000 + rng(0x156000)).collect();
    let word = |rng: &mut dyn FnMut(u64) -> u64| if rng(4) == 0 { rng(u64::MAX) } else { pool[rng(pool.len() as u64) as usize] };
    let mut stacks: Vec<(u64, Vec<u64>)> = (0..4).map(|_| (SP, (0..64).map(|_| word(&mut rng)).collect())).collect();
    // Each thread samples mostly a few places.
    let places: Vec<Vec<u64>> = (0..4).map(|_| (0..3).map(|_| pool[rng(pool.len() as u64) as usize]).collect()).collect();
    let (mut unwinder, mut space) = (Unwinder::new(Arch::X86_64), ModuleSpace::default());
    let (mut long_unwinder, mut long_space) = (Unwinder::new(Arch::X86_64), ModuleSpace::default());
    let (mut kept, mut long) = (Vec::new(), Vec::new());
    let mut deep = 0;
    for i in 0..6000u64 {
        let p = if (300..400).contains(&(i % 1000)) { &cut } else { &whole };
        let t = rng(4);
        let (sp, stack) = &mut stacks[t as usize];
        match rng(5) {
            0 => {
                let k = rng(stack.len() as u64) as usize;
                stack[k] = word(&mut rng);
            }
            1 if *sp > SP - 0x100 => {
                let n = 1 + rng(3) as usize;
                *sp -= 8 * n as u64;
                stack.splice(0..0, (0..n).map(|_| word(&mut rng)).collect::<Vec<_>>());
            }
            2 if *sp < SP + 0x100 => {
                let n = 1 + rng(3) as usize;
                *sp += 8 * n as u64;
                stack.drain(..n);
            }
            _ => {}
        }
        let mut r: Vec<u64> = (0..20).map(|_| if rng(2) == 0 { rng(u64::MAX) } else { 7 }).collect();
        r[7] = *sp;
        r[8] = if rng(8) == 0 { pool[rng(pool.len() as u64) as usize] } else { places[t as usize][rng(3) as usize] };
        let bytes = words(&r);
        let copy: Vec<u8> = stack.iter().flat_map(|w| w.to_le_bytes()).collect();
        let sample = Sample { regs: user_regs(abi::ABI_64, MASK, &bytes), stack: &copy, little_endian: true };
        let max = if rng(8) == 0 { 1 + rng(8) as usize } else { 127 };
        let before = p.mets.get();
        let a = unwinder.unwind_into(&mut space, p, &sample, t, max, &mut kept);
        let (between, b) = (p.mets.get(), long_unwinder.unwind_into(&mut long_space, p, &sample, 100 + i, max, &mut long));
        assert_eq!((a, &kept, between - before), (b, &long, p.mets.get() - between), "sample {i}: stop, frames, maps met");
        deep += usize::from(kept.len() > 2);
    }
    assert!(deep > 500, "{deep} samples with more than two frames");
    assert!(unwinder.trails_taken() > 300, "{} trails taken", unwinder.trails_taken());
}

/// A tail is taken only where the registers it reads are the same: f2's
/// CFA is rbp + 16, and f1 keeps rbp, so two samples in f1 with the same
/// stack but another rbp part at f2; another rbx (read by no step) does
/// not stop a tail from being taken.
#[test]
fn a_tail_is_taken_only_with_the_registers_it_reads() {
    let mut b = EhBuilder::new(0x3000);
    let cie = b.cie(false, &CIE_X86_FULL);
    b.fde(cie, 0x1000, 0x100, &[]);
    // def_cfa rbp+16, rbp saved at CFA-16.
    b.fde(cie, 0x1100, 0x100, &[0x0c, 0x06, 0x10, 0x86, 0x02]);
    b.fde(cie, 0x1200, 0x100, &[0x07, 0x10]);
    let obj = object(&b, None);
    let p = process(&obj);
    // f1's return address at SP; with rbp = SP+0x20, f2's at SP+0x28;
    // with rbp = SP+0x40, at SP+0x48.
    let stack = stack_with(0x80, &[(0, BASE + 0x1150), (0x28, BASE + 0x1250), (0x48, BASE + 0x1260)]);
    let mut space = ModuleSpace::default();
    let mut unwinder = Unwinder::new(Arch::X86_64);
    let mut unwind = |r: &[u64]| {
        let bytes = words(r);
        let sample = Sample { regs: user_regs(abi::ABI_64, MASK, &bytes), stack: &stack, little_endian: true };
        let mut frames = Vec::new();
        let stop = unwinder.unwind_into(&mut space, &p, &sample, 7, 127, &mut frames);
        let fresh = run(&p, &mut ModuleSpace::default(), r, &stack, 127);
        assert_eq!(Unwound { frames: frames.clone(), stop }, fresh);
        (frames.iter().map(|f| f.ip - BASE).collect::<Vec<_>>(), unwinder.trails_taken())
    };
    let mut r = regs(BASE + 0x1010, SP, SP + 0x20);
    assert_eq!(unwind(&r), (vec![0x1010, 0x114f, 0x124f], 0));
    r[3] = 0x1234;
    assert_eq!(unwind(&r), (vec![0x1010, 0x114f, 0x124f], 1), "another rbx: the tail taken");
    r[6] = SP + 0x40;
    assert_eq!(unwind(&r), (vec![0x1010, 0x114f, 0x125f], 1), "another rbp: unwound");
}
