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

/// Rows computed so far: (object, table, address) → row, or `None` for
/// "no row" (no FDE, invalid program). The same return addresses come up
/// in sample after sample.
#[derive(Default)]
pub(crate) struct RowCache {
    rows: FastMap<(u64, Source, u64), Option<Rc<Row>>>,
}

/// Forget everything past this many rows (a bound for garbage addresses
/// from broken stacks).
const MAX_CACHED_ROWS: usize = 1 << 17;

impl RowCache {
    fn get(&mut self, arch: Arch, object: u64, source: Source, table: &CfiTable, addr: u64) -> Option<Rc<Row>> {
        if let Some(r) = self.rows.get(&(object, source, addr)) {
            return r.clone();
        }
        if self.rows.len() >= MAX_CACHED_ROWS {
            self.rows.clear();
        }
        let row = table.row(arch, addr).ok().map(Rc::new);
        self.rows.insert((object, source, addr), row.clone());
        row
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

/// `__libdwfl_frame_unwind`: the caller of `state`, or `None` when libdw
/// has none to offer (its `state->unwound` stays NULL: an error). The
/// module is looked up in `space`.
pub(crate) fn unwind(ctx: &Ctx<'_>, space: &mut ModuleSpace, rows: &mut RowCache, state: &FrameState) -> Option<FrameState> {
    let mut pc = state.pc;
    if !state.initial && !state.signal {
        pc = pc.wrapping_sub(1);
    }
    if let Some(module) = space.find(pc) {
        let object = &module.object;
        if let Some(eh) = &object.eh
            && let Some(row) = rows.get(ctx.arch, object.id(), Source::Eh, eh, pc.wrapping_sub(module.bias))
        {
            return Some(apply_row(ctx, state, &row, eh, module.bias));
        }
        if let (Some((debug, _)), Some(bias)) = (&object.debug, object.debug_bias(module.bias))
            && let Some(row) = rows.get(ctx.arch, object.id(), Source::Debug, debug, pc.wrapping_sub(bias))
        {
            return Some(apply_row(ctx, state, &row, debug, bias));
        }
    }
    frame_pointer(ctx, state)
}

/// `handle_cfi` once the row is known: the caller's registers.
fn apply_row(ctx: &Ctx<'_>, state: &FrameState, row: &Row, table: &CfiTable, bias: u64) -> FrameState {
    let nregs = ctx.arch.frame_nregs();
    let mut unwound = FrameState {
        regs: RegFile::empty(nregs),
        pc: 0,
        pc_state: PcState::Error,
        initial: false,
        signal: row.signal_frame,
    };
    // libdw keeps the return-address column in an `unsigned`.
    let ra = row.ra_reg as u32 as usize;
    let eval = Eval { ctx, state, row, table, bias, cfa: std::cell::OnceCell::new() };
    for regno in 0..nregs {
        let rule = row.regs.get(regno).copied().unwrap_or(RegRule::Unspecified);
        let val = match rule {
            RegRule::Unspecified | RegRule::Undefined => {
                if regno == ra {
                    unwound.pc_state = PcState::Undefined;
                }
                continue;
            }
            RegRule::SameValue => state.regs.get(regno as u64),
            RegRule::Offset(n) => eval.cfa().and_then(|c| ctx.mem.read(c.wrapping_add(n))),
            RegRule::ValOffset(n) => eval.cfa().map(|c| c.wrapping_add(n)),
            RegRule::Register(r) => state.regs.get(r),
            RegRule::Expression(pos) | RegRule::ValExpression(pos) => {
                let value = matches!(rule, RegRule::ValExpression(_));
                match table.rule_block(pos) {
                    // An empty expression reads as "undefined" in libdw.
                    Some([]) => {
                        if regno == ra {
                            unwound.pc_state = PcState::Undefined;
                        }
                        continue;
                    }
                    Some(block) => expr::decode(block, table.little_endian(), true, value)
                        .and_then(|ops| expr::eval(&ops, &eval, bias))
                        .ok(),
                    None => None,
                }
            }
        };
        if let Some(v) = val {
            unwound.regs.set(regno, v);
        }
    }
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
    unwound
}

/// Expression evaluation against the frame being unwound.
struct Eval<'a> {
    ctx: &'a Ctx<'a>,
    state: &'a FrameState,
    row: &'a Row,
    table: &'a CfiTable,
    bias: u64,
    cfa: std::cell::OnceCell<Option<u64>>,
}

impl Eval<'_> {
    /// The CFA (`DW_OP_call_frame_cfa` in libdw: the row's CFA rule
    /// evaluated without a frame, so no nested CFA).
    fn cfa(&self) -> Option<u64> {
        *self.cfa.get_or_init(|| {
            let ops = match self.row.cfa {
                CfaRule::Offset { reg, offset } => {
                    vec![expr::Op { atom: 0x92, number: reg, number2: offset, offset: 0 }]
                }
                CfaRule::Expr { pos, len } => {
                    let block = self.table.block(pos, len)?;
                    expr::decode(block, self.table.little_endian(), false, false).ok()?
                }
                CfaRule::Undefined | CfaRule::Invalid => return None,
            };
            let no_cfa = NoCfa(self);
            expr::eval(&ops, &no_cfa, self.bias).ok()
        })
    }
}

impl Machine for Eval<'_> {
    fn reg(&self, reg: u64) -> Option<u64> {
        self.state.regs.get(reg)
    }
    fn read(&self, addr: u64) -> Option<u64> {
        self.ctx.mem.read(addr)
    }
    fn cfa(&self) -> Option<u64> {
        Eval::cfa(self)
    }
}

/// The machine the CFA expression itself runs on.
struct NoCfa<'a>(&'a Eval<'a>);

impl Machine for NoCfa<'_> {
    fn reg(&self, reg: u64) -> Option<u64> {
        self.0.state.regs.get(reg)
    }
    fn read(&self, addr: u64) -> Option<u64> {
        self.0.ctx.mem.read(addr)
    }
    fn cfa(&self) -> Option<u64> {
        None
    }
}

/// libdw's x86_64 backend `unwind` hook (`backends/x86_64_unwind.c`).
fn frame_pointer(ctx: &Ctx<'_>, state: &FrameState) -> Option<FrameState> {
    let (fp_reg, sp_reg) = ctx.arch.fp_fallback()?;
    let fp = state.regs.get(fp_reg as u64).filter(|&fp| fp != 0)?;
    let sp = state.regs.get(sp_reg as u64).unwrap_or(0);
    let prev_fp = ctx.mem.read(fp).unwrap_or(0);
    let ret = ctx.mem.read(fp.wrapping_add(8))?;
    let mut unwound = FrameState {
        regs: RegFile::empty(ctx.arch.frame_nregs()),
        pc: ret,
        pc_state: PcState::Set,
        initial: false,
        signal: false,
    };
    let new_sp = fp.wrapping_add(16);
    unwound.regs.set(fp_reg, prev_fp);
    unwound.regs.set(sp_reg, new_sp);
    // The stack pointer did not move up: not a frame chain.
    if sp >= new_sp {
        return None;
    }
    Some(unwound)
}
