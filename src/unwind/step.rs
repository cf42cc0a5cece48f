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

use std::rc::Rc;

use super::cfi::{CfaRule, CfiTable, RegRule, Row};
use super::expr::{self, Machine};
use super::memory::Memory;
use super::modules::ModuleSpace;
use super::regs::{Arch, RegFile};
use crate::fasthash::FastMap;

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
pub(crate) struct Plan {
    cfa: CfaPlan,
    /// The frame registers with a same-value rule.
    same: u128,
    /// The other frame registers whose rule can give a value, in register
    /// order.
    rules: Vec<(u8, RulePlan)>,
    /// The expressions of `RulePlan::Ops` rules.
    exprs: Vec<Vec<expr::Op>>,
    /// A rule needs the CFA (computed once, before the rules).
    needs_cfa: bool,
    /// The return-address column (libdw keeps it in an `unsigned`).
    ra: usize,
    /// The return-address column is a frame register whose rule is
    /// unspecified, undefined or an empty expression: the stack ends.
    ra_undefined: bool,
    nregs: usize,
    signal_frame: bool,
}

/// How the CFA is computed.
enum CfaPlan {
    /// register + offset: `DW_OP_bregx`, the register's value plus the
    /// offset, or nothing if the register is not set.
    RegOffset { reg: u64, offset: u64 },
    /// A CFA expression (decoded without a CFA push).
    Ops(Vec<expr::Op>),
    /// No CFA: undefined, invalid, or an expression that does not decode.
    None,
}

/// How one register of the caller is computed (unspecified, undefined
/// and empty-expression rules leave it unset, same-value ones are in
/// [`Plan::same`]).
enum RulePlan {
    Offset(u64),
    ValOffset(u64),
    Register(u64),
    /// A register or value rule's expression, decoded (CFA push first,
    /// `DW_OP_stack_value` last for a value rule): its index in
    /// [`Plan::exprs`].
    Ops(u32),
    /// An expression that cannot be read or decoded: unset.
    Fail,
}

impl Plan {
    fn new(arch: Arch, row: &Row, table: &CfiTable) -> Plan {
        let le = table.little_endian();
        let cfa = match row.cfa {
            CfaRule::Offset { reg, offset } => CfaPlan::RegOffset { reg, offset },
            CfaRule::Expr { pos, len } => table
                .block(pos, len)
                .and_then(|block| expr::decode(block, le, false, false).ok())
                .map_or(CfaPlan::None, CfaPlan::Ops),
            CfaRule::Undefined | CfaRule::Invalid => CfaPlan::None,
        };
        let nregs = arch.frame_nregs();
        let ra = row.ra_reg as u32 as usize;
        let (mut same, mut rules, mut exprs, mut ra_undefined) = (0u128, Vec::new(), Vec::new(), false);
        for regno in 0..nregs {
            let plan = match row.regs.get(regno).copied().unwrap_or(RegRule::Unspecified) {
                RegRule::Unspecified | RegRule::Undefined => None,
                RegRule::SameValue => {
                    same |= 1 << regno;
                    continue;
                }
                RegRule::Offset(n) => Some(RulePlan::Offset(n)),
                RegRule::ValOffset(n) => Some(RulePlan::ValOffset(n)),
                RegRule::Register(r) => Some(RulePlan::Register(r)),
                rule @ (RegRule::Expression(pos) | RegRule::ValExpression(pos)) => {
                    let value = matches!(rule, RegRule::ValExpression(_));
                    match table.rule_block(pos) {
                        // An empty expression reads as "undefined" in libdw.
                        Some([]) => None,
                        Some(block) => Some(expr::decode(block, le, true, value).map_or(RulePlan::Fail, |ops| {
                            exprs.push(ops);
                            RulePlan::Ops(exprs.len() as u32 - 1)
                        })),
                        None => Some(RulePlan::Fail),
                    }
                }
            };
            match plan {
                // (frame_nregs is below 128: see regs::MAX_DWARF_REGS.)
                Some(p) => rules.push((regno as u8, p)),
                None if regno == ra => ra_undefined = true,
                None => {}
            }
        }
        let needs_cfa = rules.iter().any(|(_, r)| !matches!(r, RulePlan::Register(_) | RulePlan::Fail));
        Plan { cfa, same, rules, exprs, needs_cfa, ra, ra_undefined, nregs, signal_frame: row.signal_frame }
    }
}

/// Rows computed so far, ready to apply: (object, table, address) → plan,
/// or `None` for "no row" (no FDE, invalid program). The same return
/// addresses come up in sample after sample.
#[derive(Default)]
pub(crate) struct RowCache {
    rows: FastMap<(u64, Source, u64), Option<Rc<Plan>>>,
}

/// Forget everything past this many rows (a bound for garbage addresses
/// from broken stacks).
const MAX_CACHED_ROWS: usize = 1 << 17;

impl RowCache {
    fn get(&mut self, arch: Arch, object: u64, source: Source, table: &CfiTable, addr: u64) -> Option<Rc<Plan>> {
        if let Some(r) = self.rows.get(&(object, source, addr)) {
            return r.clone();
        }
        if self.rows.len() >= MAX_CACHED_ROWS {
            self.rows.clear();
        }
        let plan = table.row(arch, addr).ok().map(|row| Rc::new(Plan::new(arch, &row, table)));
        self.rows.insert((object, source, addr), plan.clone());
        plan
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.rows.len()
    }
}

/// Everything a step reads.
pub(crate) struct Ctx<'a> {
    pub arch: Arch,
    pub mem: &'a Memory<'a>,
}

/// `__libdwfl_frame_unwind`: the caller of `state` into `caller`, or
/// false when libdw has none to offer (its `state->unwound` stays NULL:
/// an error; `caller` is then left in an unspecified state). The module
/// is looked up in `space`.
pub(crate) fn unwind(ctx: &Ctx<'_>, space: &mut ModuleSpace, rows: &mut RowCache, state: &FrameState, caller: &mut FrameState) -> bool {
    let mut pc = state.pc;
    if !state.initial && !state.signal {
        pc = pc.wrapping_sub(1);
    }
    if let Some(module) = space.find(pc) {
        let object = &module.object;
        if let Some(eh) = &object.eh
            && let Some(plan) = rows.get(ctx.arch, object.id(), Source::Eh, eh, pc.wrapping_sub(module.bias))
        {
            apply(ctx, state, &plan, module.bias, caller);
            return true;
        }
        if let (Some((debug, _)), Some(bias)) = (&object.debug, object.debug_bias(module.bias))
            && let Some(plan) = rows.get(ctx.arch, object.id(), Source::Debug, debug, pc.wrapping_sub(bias))
        {
            apply(ctx, state, &plan, bias, caller);
            return true;
        }
    }
    frame_pointer(ctx, state, caller)
}

/// `handle_cfi` once the row is known: the caller's registers.
fn apply(ctx: &Ctx<'_>, state: &FrameState, plan: &Plan, bias: u64, unwound: &mut FrameState) {
    unwound.regs.clear(plan.nregs);
    unwound.pc = 0;
    unwound.pc_state = if plan.ra_undefined { PcState::Undefined } else { PcState::Error };
    unwound.initial = false;
    unwound.signal = plan.signal_frame;
    unwound.regs.copy_set(&state.regs, plan.same);
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
    for &(regno, ref rule) in &plan.rules {
        let val = match *rule {
            RulePlan::Offset(n) => cfa.and_then(|c| ctx.mem.read(c.wrapping_add(n))),
            RulePlan::ValOffset(n) => cfa.map(|c| c.wrapping_add(n)),
            RulePlan::Register(r) => state.regs.get(r),
            RulePlan::Ops(i) => expr::eval(&plan.exprs[i as usize], &eval, bias).ok(),
            RulePlan::Fail => None,
        };
        if let Some(v) = val {
            unwound.regs.set(regno as usize, v);
        }
    }
    let ra = plan.ra;
    if unwound.pc_state == PcState::Error {
        match unwound.regs.get(ra as u64) {
            Some(0) => unwound.pc_state = PcState::Undefined,
            Some(pc) => {
                unwound.pc = pc;
                unwound.pc_state = PcState::Set;
            }
            None if ra < plan.nregs => unwound.pc_state = PcState::Undefined,
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
