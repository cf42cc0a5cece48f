//! One unwinding step: from a frame to its caller, as libdw's
//! `__libdwfl_frame_unwind` does it (`libdwfl/frame_unwind.c`).
//!
//! 1. The address to look up is the frame's pc, minus 1 unless the frame
//!    is the sampled one or was interrupted by a signal (a return address
//!    points after the call, which may be the next function's first byte).
//! 2. The module covering it (reported earlier, see `modules`): its
//!    `.eh_frame` row for the address, else its `.debug_frame` row
//!    (`handle_cfi`). A row gives a rule per register; libdw evaluates all
//!    frame registers in order, each independently: a rule that cannot be
//!    evaluated (an unset register, unreadable memory, a bad expression)
//!    just leaves that register unset in the caller. The caller's pc is
//!    the return-address register's new value; if that register is
//!    undefined, unset or 0, the stack ends here (not an error).
//! 3. No module, or no row in either table: the architecture's fallback
//!    (x86_64: frame pointer — caller's rbp = [rbp], return address =
//!    [rbp + 8], rsp = rbp + 16; it fails unless the stack pointer moves
//!    up). A failure here is the one unwinding error: no caller at all.

use super::cfi::{CfaRule, CfiTable, RegRule, Row};
use super::expr::{self, Machine};
use super::memory::Memory;
use super::modules::{ModuleSpace, Target};
use super::regs::{Arch, RegFile};
use crate::fasthash::{FastMap, is_full_for};

/// libdw's `pc_state` of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PcState {
    Set,
    /// The outermost frame: no caller.
    Undefined,
    /// The return-address register is not a frame register.
    Error,
}

/// A frame being unwound (libdw's `Dwfl_Frame`).
#[derive(Clone)]
pub(crate) struct FrameState {
    pub regs: RegFile,
    pub pc: u64,
    pub pc_state: PcState,
    /// The sampled frame.
    pub initial: bool,
    /// Unwound with a signal frame's CFI ('S' augmentation): this frame
    /// was interrupted, its pc is not a return address.
    pub signal: bool,
}

/// Which table of an object a cached row came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Source {
    Eh,
    Debug,
}

/// A row made ready to apply: the CFA rule and each frame register's rule
/// with its expression block found and decoded once, when the row is
/// first computed, instead of at every frame that uses it. Applying a
/// plan does exactly what `handle_cfi` does with the row: libdw computes
/// each register on its own, from the frame being unwound and memory
/// (neither changes meanwhile), so the order of the rules does not matter
/// and the same-value ones can go in one copy. Decoding is a function of
/// the block's bytes alone; only the module bias, which `DW_OP_addr` adds,
/// is left for the frame (an object may be reported at two bases).
///
/// A plan is kept by value in the row cache, its usual few rules inline:
/// looking a row up and applying it then reads one place in memory past
/// the key, where a plan behind a pointer, its rules behind another, cost
/// a cache miss each on a table of thousands of rows (the row lookup was
/// a tenth of the reading thread's time on the dwarf benchmark).
pub(crate) struct Plan {
    cfa: CfaPlan,
    /// The frame registers with a same-value rule.
    same: u128,
    /// The other frame registers whose rule can give a value, in register
    /// order.
    rules: Rules,
    /// The expressions of `RuleKind::Ops` rules.
    exprs: Box<[Box<[expr::Op]>]>,
    /// A rule needs the CFA (computed once, before the rules).
    needs_cfa: bool,
    /// The return-address column is a frame register whose rule is
    /// unspecified, undefined or an empty expression: the stack ends.
    ra_undefined: bool,
    signal_frame: bool,
    /// The return-address column (libdw keeps it in an `unsigned`).
    ra: u32,
    nregs: u32,
    /// The registers of the frame a step from this row reads (bit `r` for
    /// register `r`; all for an expression, which may read any): the CFA's
    /// register, a register rule's source, the return address where it
    /// keeps its value. What a trail's match compares (see `trail.rs`).
    reads: u128,
    /// The return-address column, as a register mask (see [`Reads`]).
    ra_mask: u128,
}

/// How the CFA is computed.
enum CfaPlan {
    /// register + offset: `DW_OP_bregx`, the register's value plus the
    /// offset, or nothing if the register is not set.
    RegOffset { reg: u64, offset: u64 },
    /// A CFA expression (decoded without a CFA push).
    Ops(Box<[expr::Op]>),
    /// No CFA: undefined, invalid, or an expression that does not decode.
    None,
}

/// How one register of the caller is computed (unspecified, undefined
/// and empty-expression rules leave it unset, same-value ones are in
/// [`Plan::same`]).
#[derive(Clone, Copy)]
enum RuleKind {
    Offset,
    ValOffset,
    Register,
    /// A register or value rule's expression, decoded (CFA push first,
    /// `DW_OP_stack_value` last for a value rule): `value` is its index in
    /// [`Plan::exprs`].
    Ops,
    /// An expression that cannot be read or decoded: unset.
    Fail,
}

/// One frame register's rule: 16 bytes.
#[derive(Clone, Copy)]
struct Rule {
    reg: u8,
    kind: RuleKind,
    value: u64,
}

/// Rules that fit (x86_64 rows rarely save more than a few registers)
/// are kept inline.
const INLINE_RULES: usize = 4;

enum Rules {
    Inline { len: u8, rules: [Rule; INLINE_RULES] },
    Heap(Box<[Rule]>),
}

impl Rules {
    fn new(all: &[Rule]) -> Rules {
        if all.len() <= INLINE_RULES {
            let mut rules = [Rule { reg: 0, kind: RuleKind::Fail, value: 0 }; INLINE_RULES];
            rules[..all.len()].copy_from_slice(all);
            Rules::Inline { len: all.len() as u8, rules }
        } else {
            Rules::Heap(all.into())
        }
    }

    fn as_slice(&self) -> &[Rule] {
        match self {
            Rules::Inline { len, rules } => &rules[..*len as usize],
            Rules::Heap(rules) => rules,
        }
    }
}

impl Plan {
    fn new(arch: Arch, row: &Row, table: &CfiTable) -> Plan {
        let le = table.little_endian();
        let cfa = match row.cfa {
            CfaRule::Offset { reg, offset } => CfaPlan::RegOffset { reg, offset },
            CfaRule::Expr { pos, len } => table
                .block(pos, len)
                .and_then(|block| expr::decode(block, le, false, false).ok())
                .map_or(CfaPlan::None, |ops| CfaPlan::Ops(ops.into())),
            CfaRule::Undefined | CfaRule::Invalid => CfaPlan::None,
        };
        let nregs = arch.frame_nregs();
        let ra = row.ra_reg as u32;
        let (mut same, mut rules, mut exprs, mut ra_undefined) = (0u128, Vec::new(), Vec::<Box<[expr::Op]>>::new(), false);
        for regno in 0..nregs {
            let rule = |kind, value| Some((kind, value));
            let plan = match row.regs.get(regno).copied().unwrap_or(RegRule::Unspecified) {
                RegRule::Unspecified | RegRule::Undefined => None,
                RegRule::SameValue => {
                    same |= 1 << regno;
                    continue;
                }
                RegRule::Offset(n) => rule(RuleKind::Offset, n),
                RegRule::ValOffset(n) => rule(RuleKind::ValOffset, n),
                RegRule::Register(r) => rule(RuleKind::Register, r),
                r @ (RegRule::Expression(pos) | RegRule::ValExpression(pos)) => {
                    let value = matches!(r, RegRule::ValExpression(_));
                    match table.rule_block(pos) {
                        // An empty expression reads as "undefined" in libdw.
                        Some([]) => None,
                        Some(block) => match expr::decode(block, le, true, value) {
                            Ok(ops) => {
                                exprs.push(ops.into());
                                rule(RuleKind::Ops, exprs.len() as u64 - 1)
                            }
                            Err(_) => rule(RuleKind::Fail, 0),
                        },
                        None => rule(RuleKind::Fail, 0),
                    }
                }
            };
            match plan {
                // (frame_nregs is below 128: see regs::MAX_DWARF_REGS.)
                Some((kind, value)) => rules.push(Rule { reg: regno as u8, kind, value }),
                None if regno == ra as usize => ra_undefined = true,
                None => {}
            }
        }
        let needs_cfa = rules.iter().any(|r| !matches!(r.kind, RuleKind::Register | RuleKind::Fail));
        let bit = |r: u64| if r < 128 { 1u128 << r } else { 0 };
        let mut reads = match &cfa {
            CfaPlan::RegOffset { reg, .. } if needs_cfa => bit(*reg),
            CfaPlan::Ops(_) if needs_cfa => u128::MAX,
            _ => 0,
        };
        for r in &rules {
            reads |= match r.kind {
                RuleKind::Register => bit(r.value),
                RuleKind::Ops => u128::MAX,
                _ => 0,
            };
        }
        // The return address is read from the caller's registers: a
        // same-value rule keeps this frame's.
        if same & bit(u64::from(ra)) != 0 {
            reads |= bit(u64::from(ra));
        }
        Plan {
            cfa,
            same,
            rules: Rules::new(&rules),
            exprs: exprs.into(),
            needs_cfa,
            ra_undefined,
            signal_frame: row.signal_frame,
            ra,
            nregs: nregs as u32,
            reads,
            ra_mask: bit(u64::from(ra)),
        }
    }
}

/// Rows computed so far, ready to apply: (object, table, address) → plan,
/// or `None` for "no row" (no FDE, invalid program). The same return
/// addresses come up in sample after sample.
///
/// Nearly every lookup finds its row (99.5% of 2.6 million on the dwarf
/// benchmark, 12,500 rows), and hashing the key and probing the map cost
/// about 130 instructions a time: a direct-mapped table of slots, indexed
/// by a multiply hash of the key and holding the full key, answers most
/// of them in a few tens, and the map stays the one place rows are kept
/// (a slot only points into [`RowCache::plans`], which grows and is
/// forgotten with the map). Keys that share a slot, whether by chance or
/// crafted, each fall through to the map: they cost what every lookup
/// did without the slots.
pub(crate) struct RowCache {
    /// (object, table, address) → index in `plans`.
    rows: FastMap<(u64, Source, u64), u32>,
    plans: Vec<Option<Plan>>,
    slots: Box<[Slot; 1 << SLOT_BITS]>,
    /// Changes whenever the plans are forgotten: an index into `plans`
    /// kept elsewhere (a module space's frame memo) is good only while
    /// this is what it was.
    generation: u32,
}

/// A key of [`RowCache::rows`] and its index in [`RowCache::plans`];
/// `source` is `None` in a slot that holds nothing.
#[derive(Clone, Copy)]
struct Slot {
    object: u64,
    addr: u64,
    source: Option<Source>,
    plan: u32,
}

const EMPTY_SLOT: Slot = Slot { object: 0, addr: 0, source: None, plan: 0 };

/// 8,192 slots of 24 bytes.
const SLOT_BITS: u32 = 13;

/// Forget everything past this many rows (a bound for garbage addresses
/// from broken stacks).
const MAX_CACHED_ROWS: usize = 1 << 17;

impl Default for RowCache {
    fn default() -> RowCache {
        // Through a Vec: `Box::new` of the array may build it on the stack
        // first (192 KiB).
        let slots = vec![EMPTY_SLOT; 1 << SLOT_BITS].into_boxed_slice().try_into().unwrap_or_else(|_| unreachable!());
        RowCache { rows: FastMap::default(), plans: Vec::new(), slots, generation: 0 }
    }
}

impl RowCache {
    /// The index of the plan for `addr` in the table, if it has a row.
    fn get(&mut self, arch: Arch, object: u64, source: Source, table: &CfiTable, addr: u64) -> Option<u32> {
        let i = slot_of(object, source, addr);
        let slot = self.slots[i];
        let plan = if slot.addr == addr && slot.object == object && slot.source == Some(source) {
            slot.plan
        } else {
            self.get_slow(arch, object, source, table, addr, i)
        };
        self.plans[plan as usize].is_some().then_some(plan)
    }

    /// A plan [`RowCache::get`] gave under the current generation.
    #[inline]
    pub(crate) fn plan(&self, index: u32) -> Option<&Plan> {
        self.plans.get(index as usize)?.as_ref()
    }

    pub(crate) fn generation(&self) -> u32 {
        self.generation
    }

    #[cold]
    #[inline(never)]
    fn get_slow(&mut self, arch: Arch, object: u64, source: Source, table: &CfiTable, addr: u64, i: usize) -> u32 {
        let key = (object, source, addr);
        let plan = match self.rows.get(&key) {
            Some(&plan) => plan,
            None => {
                if is_full_for(&self.rows, &key, MAX_CACHED_ROWS) {
                    self.clear();
                }
                self.plans.push(table.row(arch, addr).ok().map(|row| Plan::new(arch, &row, table)));
                let plan = (self.plans.len() - 1) as u32;
                self.rows.insert(key, plan);
                plan
            }
        };
        self.slots[i] = Slot { object, addr, source: Some(source), plan };
        plan
    }

    /// Forgets every row: the map, the plans its indices point at, and
    /// the slots that point at them.
    fn clear(&mut self) {
        self.rows.clear();
        self.plans.clear();
        self.slots.fill(EMPTY_SLOT);
        self.generation = self.generation.wrapping_add(1);
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.rows.len()
    }
}

/// The slot of a key: the high bits of a multiply hash (the addresses of
/// one object differ in their low bits, the objects in small ids).
fn slot_of(object: u64, source: Source, addr: u64) -> usize {
    let k = (addr ^ object.rotate_right(17) ^ ((source as u64) << 63)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (k >> (64 - SLOT_BITS)) as usize
}

/// Everything a step reads.
pub(crate) struct Ctx<'a> {
    pub arch: Arch,
    pub mem: &'a Memory<'a>,
}

/// `__libdwfl_frame_unwind`: the caller of `state` into `caller`, or
/// false when libdw has none to offer (its `state->unwound` stays NULL:
/// an error; `caller` is then left in an unspecified state). The module
/// is looked up in `space`. Also the step's [`Target`] (for the frame
/// memo, and for what the step read: [`reads`]).
pub(crate) fn unwind(ctx: &Ctx<'_>, space: &mut ModuleSpace, rows: &mut RowCache, state: &FrameState, caller: &mut FrameState) -> (bool, Target) {
    let target = target(ctx.arch, space, rows, state);
    (step_with(ctx, rows, target, state, caller), target)
}

/// What a step reads, for a trail (see `trail.rs`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Reads {
    /// The registers of the frame it reads ([`Plan::reads`]).
    pub frame: u128,
    /// The caller's registers whose words always matter: the return
    /// address, which is the caller's pc.
    pub caller: u128,
}

impl std::ops::BitOrAssign for Reads {
    fn bitor_assign(&mut self, o: Reads) {
        self.frame |= o.frame;
        self.caller |= o.caller;
    }
}

/// What a step with `target` reads; the frame-pointer fallback reads the
/// frame and stack pointers (and its reads of memory always matter).
pub(crate) fn reads(arch: Arch, rows: &RowCache, target: Target) -> Reads {
    match target {
        Target::Plan { index, .. } => rows.plan(index).map_or(Reads::default(), |p| Reads { frame: p.reads, caller: p.ra_mask }),
        Target::FramePointer => Reads { frame: arch.fp_fallback().map_or(0, |(fp, sp)| 1u128 << fp | 1u128 << sp), caller: 0 },
    }
}

/// The [`Target`] of a step from `state`: the row of the module covering
/// its lookup address, `.eh_frame` first. A function of the address, the
/// module list and the row cache's generation alone.
pub(crate) fn target(arch: Arch, space: &mut ModuleSpace, rows: &mut RowCache, state: &FrameState) -> Target {
    let mut pc = state.pc;
    if !state.initial && !state.signal {
        pc = pc.wrapping_sub(1);
    }
    if let Some(module) = space.find(pc) {
        let object = &module.object;
        if let Some(eh) = &object.eh
            && let Some(index) = rows.get(arch, object.id(), Source::Eh, eh, pc.wrapping_sub(module.bias))
        {
            return Target::Plan { index, bias: module.bias };
        }
        if let (Some((debug, _)), Some(bias)) = (&object.debug, object.debug_bias(module.bias))
            && let Some(index) = rows.get(arch, object.id(), Source::Debug, debug, pc.wrapping_sub(bias))
        {
            return Target::Plan { index, bias };
        }
    }
    Target::FramePointer
}

/// The step itself, to a target [`target`] found under the row cache's
/// current generation (the frame memo checks the generation before it
/// gives a target back; a plan index of another one would fail the step,
/// never take another row's).
#[inline]
pub(crate) fn step_with(ctx: &Ctx<'_>, rows: &RowCache, target: Target, state: &FrameState, caller: &mut FrameState) -> bool {
    match target {
        Target::Plan { index, bias } => match rows.plan(index) {
            Some(plan) => {
                apply(ctx, state, plan, bias, caller);
                true
            }
            None => false,
        },
        Target::FramePointer => frame_pointer(ctx, state, caller),
    }
}

/// `handle_cfi` once the row is known: the caller's registers.
fn apply(ctx: &Ctx<'_>, state: &FrameState, plan: &Plan, bias: u64, unwound: &mut FrameState) {
    unwound.regs.clear_keeping(plan.nregs as usize, &state.regs, plan.same);
    unwound.pc = 0;
    unwound.pc_state = if plan.ra_undefined { PcState::Undefined } else { PcState::Error };
    unwound.initial = false;
    unwound.signal = plan.signal_frame;
    // libdw computes the CFA when a rule first needs it; computing it
    // before the rules gives the same values (it only reads).
    let mut eval = Eval { ctx, state, cfa: None };
    if plan.needs_cfa {
        eval.cfa = match &plan.cfa {
            // expr_eval of a lone DW_OP_bregx: the value, not a location.
            CfaPlan::RegOffset { reg, offset } => state.regs.get(*reg).map(|v| v.wrapping_add(*offset)),
            // Evaluated without a CFA: no nested DW_OP_call_frame_cfa.
            CfaPlan::Ops(ops) => expr::eval(ops, &eval, bias).ok(),
            CfaPlan::None => None,
        };
    }
    let cfa = eval.cfa;
    for rule in plan.rules.as_slice() {
        let n = rule.value;
        let val = match rule.kind {
            RuleKind::Offset => cfa.and_then(|c| ctx.mem.read_for(c.wrapping_add(n), rule.reg)),
            RuleKind::ValOffset => cfa.map(|c| c.wrapping_add(n)),
            RuleKind::Register => state.regs.get(n),
            RuleKind::Ops => plan.exprs.get(n as usize).and_then(|ops| expr::eval(ops, &eval, bias).ok()),
            RuleKind::Fail => None,
        };
        if let Some(v) = val {
            unwound.regs.set(rule.reg as usize, v);
        }
    }
    let (ra, nregs) = (plan.ra as usize, plan.nregs as usize);
    if unwound.pc_state == PcState::Error {
        match unwound.regs.get(ra as u64) {
            Some(0) => unwound.pc_state = PcState::Undefined,
            Some(pc) => {
                unwound.pc = pc;
                unwound.pc_state = PcState::Set;
            }
            None if ra < nregs => unwound.pc_state = PcState::Undefined,
            None => {}
        }
    }
}

/// Expression evaluation against the frame being unwound, with its CFA
/// (`None` while the CFA itself is computed, or where it cannot be).
struct Eval<'a> {
    ctx: &'a Ctx<'a>,
    state: &'a FrameState,
    cfa: Option<u64>,
}

impl Machine for Eval<'_> {
    fn reg(&self, reg: u64) -> Option<u64> {
        self.state.regs.get(reg)
    }
    fn read(&self, addr: u64) -> Option<u64> {
        self.ctx.mem.read(addr)
    }
    fn cfa(&self) -> Option<u64> {
        self.cfa
    }
}

/// libdw's x86_64 backend `unwind` hook (`backends/x86_64_unwind.c`).
fn frame_pointer(ctx: &Ctx<'_>, state: &FrameState, unwound: &mut FrameState) -> bool {
    let Some((fp_reg, sp_reg)) = ctx.arch.fp_fallback() else { return false };
    let Some(fp) = state.regs.get(fp_reg as u64).filter(|&fp| fp != 0) else { return false };
    let sp = state.regs.get(sp_reg as u64).unwrap_or(0);
    let prev_fp = ctx.mem.read(fp).unwrap_or(0);
    let Some(ret) = ctx.mem.read(fp.wrapping_add(8)) else { return false };
    let new_sp = fp.wrapping_add(16);
    // The stack pointer did not move up: not a frame chain.
    if sp >= new_sp {
        return false;
    }
    unwound.regs.clear(ctx.arch.frame_nregs());
    unwound.pc = ret;
    unwound.pc_state = PcState::Set;
    unwound.initial = false;
    unwound.signal = false;
    unwound.regs.set(fp_reg, prev_fp);
    unwound.regs.set(sp_reg, new_sp);
    true
}

#[cfg(test)]
mod tests {
    use super::super::cfi::tests::{CIE_X86_FULL, EhBuilder};
    use super::*;

    /// One FDE, 0x1000..0x1100: a row there, none elsewhere.
    fn table() -> CfiTable {
        let mut b = EhBuilder::new(0x3000);
        let cie = b.cie(false, &CIE_X86_FULL);
        b.fde(cie, 0x1000, 0x100, &[]);
        b.table(true)
    }

    fn get(rows: &mut RowCache, table: &CfiTable, object: u64, addr: u64) -> bool {
        rows.get(Arch::X86_64, object, Source::Eh, table, addr).is_some()
    }

    /// The slot of (object, `.eh_frame`, addr), if it holds that key: its
    /// plan index.
    fn slotted(rows: &RowCache, object: u64, addr: u64) -> Option<u32> {
        let s = rows.slots[slot_of(object, Source::Eh, addr)];
        (s.object == object && s.addr == addr && s.source == Some(Source::Eh)).then_some(s.plan)
    }

    /// A second lookup is answered by the slot the first one filled, with
    /// the same plan; "no row" is kept as well.
    #[test]
    fn a_row_looked_up_again_comes_from_its_slot() {
        let (t, mut rows) = (table(), RowCache::default());
        assert!(get(&mut rows, &t, 1, 0x1010));
        assert!(!get(&mut rows, &t, 1, 0x5000));
        assert_eq!((slotted(&rows, 1, 0x1010), slotted(&rows, 1, 0x5000)), (Some(0), Some(1)));
        assert!(get(&mut rows, &t, 1, 0x1010));
        assert!(!get(&mut rows, &t, 1, 0x5000));
        // The same address in another object or table is another key.
        assert_ne!(slot_of(1, Source::Eh, 0x1010), slot_of(2, Source::Eh, 0x1010));
        assert_ne!(slot_of(1, Source::Eh, 0x1010), slot_of(1, Source::Debug, 0x1010));
        assert_eq!(rows.len(), 2);
    }

    /// Two keys of one slot: the later takes the slot, the earlier is
    /// still found (in the map) with its own row, and takes it back.
    #[test]
    fn keys_sharing_a_slot_replace_each_other() {
        let (t, mut rows) = (table(), RowCache::default());
        let a = 0x1010;
        let b = (0x5000u64..).find(|&b| slot_of(1, Source::Eh, b) == slot_of(1, Source::Eh, a)).unwrap();
        assert!(get(&mut rows, &t, 1, a));
        assert!(!get(&mut rows, &t, 1, b));
        assert_eq!((slotted(&rows, 1, a), slotted(&rows, 1, b)), (None, Some(1)));
        assert!(get(&mut rows, &t, 1, a));
        assert_eq!((slotted(&rows, 1, a), slotted(&rows, 1, b)), (Some(0), None));
        assert!(!get(&mut rows, &t, 1, b));
        assert_eq!(rows.len(), 2);
    }

    /// When the map is full and forgets its rows, the slots forget theirs:
    /// a slot still pointing at plan 0 would give the next key's row.
    #[test]
    fn forgetting_the_rows_empties_the_slots() {
        let (t, mut rows) = (table(), RowCache::default());
        assert!(get(&mut rows, &t, 1, 0x1010));
        // Fill the map to its bound without computing rows.
        for i in 1..MAX_CACHED_ROWS as u64 {
            rows.rows.insert((9, Source::Debug, i), 0);
        }
        assert_eq!(rows.len(), MAX_CACHED_ROWS);
        // A key already in the map keeps everything.
        assert!(get(&mut rows, &t, 1, 0x1010));
        assert_eq!(rows.len(), MAX_CACHED_ROWS);
        // A new one: everything goes, and it is plan 0.
        assert!(!get(&mut rows, &t, 1, 0x5000));
        assert_eq!((rows.len(), rows.plans.len()), (1, 1));
        assert_eq!((slotted(&rows, 1, 0x1010), slotted(&rows, 1, 0x5000)), (None, Some(0)));
        assert!(rows.slots.iter().filter(|s| s.source.is_some()).count() == 1);
        assert!(get(&mut rows, &t, 1, 0x1010));
        assert_eq!(slotted(&rows, 1, 0x1010), Some(1));
    }
}
