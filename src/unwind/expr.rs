//! DWARF expressions in CFI, decoded and evaluated as libdw does it
//! (`libdw/dwarf_getlocation.c: __libdw_intern_expression` and
//! `libdwfl/frame_unwind.c: expr_eval`).
//!
//! Decoding turns the block into a list of operations, each with its byte
//! offset in the block; a register rule's expression gets a synthetic
//! `DW_OP_call_frame_cfa` in front (offset `u64::MAX`, as in libdw) and a
//! value rule a `DW_OP_stack_value` at the end (offset = block length).
//! Evaluation runs a stack machine of u64 values with libdw's limits:
//! at most 256 values on the stack and 4096 operations executed, so a
//! hostile expression (a loop made of `DW_OP_skip`) ends with an error.
//! Only the operations libdw evaluates are accepted; anything else it can
//! decode but not evaluate is an error here as there.
//!
//! The result is a location to read 8 bytes from when the expression
//! pushed the CFA (`DW_OP_call_frame_cfa`) and did not end with
//! `DW_OP_stack_value`, else the value itself.

use super::read::Reader;

/// At most this many values on the stack (libdw `DWARF_EXPR_STACK_MAX`).
const STACK_MAX: usize = 0x100;
/// At most this many operations executed (libdw `DWARF_EXPR_STEPS_MAX`).
const STEPS_MAX: usize = 0x1000;

/// DWARF opcodes used below.
mod op {
    pub const ADDR: u8 = 0x03;
    pub const DEREF: u8 = 0x06;
    pub const CONST1U: u8 = 0x08;
    pub const CONST1S: u8 = 0x09;
    pub const CONST2U: u8 = 0x0a;
    pub const CONST2S: u8 = 0x0b;
    pub const CONST4U: u8 = 0x0c;
    pub const CONST4S: u8 = 0x0d;
    pub const CONST8U: u8 = 0x0e;
    pub const CONST8S: u8 = 0x0f;
    pub const CONSTU: u8 = 0x10;
    pub const CONSTS: u8 = 0x11;
    pub const DUP: u8 = 0x12;
    pub const DROP: u8 = 0x13;
    pub const OVER: u8 = 0x14;
    pub const PICK: u8 = 0x15;
    pub const SWAP: u8 = 0x16;
    pub const ROT: u8 = 0x17;
    pub const XDEREF: u8 = 0x18;
    pub const ABS: u8 = 0x19;
    pub const AND: u8 = 0x1a;
    pub const DIV: u8 = 0x1b;
    pub const MINUS: u8 = 0x1c;
    pub const MOD: u8 = 0x1d;
    pub const MUL: u8 = 0x1e;
    pub const NEG: u8 = 0x1f;
    pub const NOT: u8 = 0x20;
    pub const OR: u8 = 0x21;
    pub const PLUS: u8 = 0x22;
    pub const PLUS_UCONST: u8 = 0x23;
    pub const SHL: u8 = 0x24;
    pub const SHR: u8 = 0x25;
    pub const SHRA: u8 = 0x26;
    pub const XOR: u8 = 0x27;
    pub const BRA: u8 = 0x28;
    pub const EQ: u8 = 0x29;
    pub const GE: u8 = 0x2a;
    pub const GT: u8 = 0x2b;
    pub const LE: u8 = 0x2c;
    pub const LT: u8 = 0x2d;
    pub const NE: u8 = 0x2e;
    pub const SKIP: u8 = 0x2f;
    pub const LIT0: u8 = 0x30;
    pub const LIT31: u8 = 0x4f;
    pub const REG0: u8 = 0x50;
    pub const REG31: u8 = 0x6f;
    pub const BREG0: u8 = 0x70;
    pub const BREG31: u8 = 0x8f;
    pub const REGX: u8 = 0x90;
    pub const FBREG: u8 = 0x91;
    pub const BREGX: u8 = 0x92;
    pub const PIECE: u8 = 0x93;
    pub const DEREF_SIZE: u8 = 0x94;
    pub const XDEREF_SIZE: u8 = 0x95;
    pub const NOP: u8 = 0x96;
    pub const PUSH_OBJECT_ADDRESS: u8 = 0x97;
    pub const CALL2: u8 = 0x98;
    pub const CALL4: u8 = 0x99;
    pub const CALL_FRAME_CFA: u8 = 0x9c;
    pub const BIT_PIECE: u8 = 0x9d;
    pub const STACK_VALUE: u8 = 0x9f;
    pub const FORM_TLS_ADDRESS: u8 = 0x9b;
    pub const GNU_PUSH_TLS_ADDRESS: u8 = 0xe0;
    pub const GNU_UNINIT: u8 = 0xf0;
    pub const GNU_ENCODED_ADDR: u8 = 0xf1;
}

/// One decoded operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Op {
    pub atom: u8,
    pub number: u64,
    pub number2: u64,
    /// Byte offset in the block (`u64::MAX` for the synthetic CFA push).
    pub offset: u64,
}

/// Why an expression gave no value (libdw just fails; the kind is kept
/// for tests and diagnostics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExprError {
    /// Not decodable, or an operation libdw does not evaluate.
    Invalid,
    StackOverflow,
    StackUnderflow,
    TooManySteps,
    /// A register that is not set in this frame.
    Register,
    /// Memory outside the stack copy and the mapped files.
    Memory,
    /// `DW_OP_call_frame_cfa` where no CFA can be computed.
    Cfa,
    DivisionByZero,
    BadBranch,
    Empty,
}

/// Decodes `block` (`__libdw_intern_expression`). `cfa_first`: push the
/// CFA first (register rules); `value`: end with `DW_OP_stack_value`
/// (value rules). An empty block decodes to no operations at all, even
/// with `cfa_first` or `value` (libdw returns before adding them).
pub(crate) fn decode(block: &[u8], little_endian: bool, cfa_first: bool, value: bool) -> Result<Vec<Op>, ExprError> {
    let mut ops = Vec::new();
    if block.is_empty() {
        return Ok(ops);
    }
    if cfa_first {
        ops.push(Op { atom: op::CALL_FRAME_CFA, number: 0, number2: 0, offset: u64::MAX });
    }
    let mut r = Reader::new(block, 0, little_endian);
    while !r.at_end() {
        let offset = r.pos as u64;
        let atom = r.u8().ok_or(ExprError::Invalid)?;
        let (mut number, mut number2) = (0u64, 0u64);
        match atom {
            op::ADDR => number = r.uint(8).ok_or(ExprError::Invalid)?,
            op::DEREF | op::DUP | op::DROP | op::OVER | op::SWAP | op::ROT | op::XDEREF | op::ABS | op::AND
            | op::DIV | op::MINUS | op::MOD | op::MUL | op::NEG | op::NOT | op::OR | op::PLUS | op::SHL
            | op::SHR | op::SHRA | op::XOR | op::EQ | op::GE | op::GT | op::LE | op::LT | op::NE
            | op::LIT0..=op::LIT31 | op::REG0..=op::REG31 | op::NOP | op::PUSH_OBJECT_ADDRESS | op::CALL_FRAME_CFA
            | op::FORM_TLS_ADDRESS | op::GNU_PUSH_TLS_ADDRESS | op::STACK_VALUE | op::GNU_UNINIT => {}
            op::CONST1U | op::PICK | op::DEREF_SIZE | op::XDEREF_SIZE => {
                number = r.u8().ok_or(ExprError::Invalid)? as u64
            }
            op::CONST1S => number = r.sint(1).ok_or(ExprError::Invalid)?,
            op::CONST2U => number = r.uint(2).ok_or(ExprError::Invalid)?,
            op::CONST2S | op::SKIP | op::BRA | op::CALL2 => number = r.sint(2).ok_or(ExprError::Invalid)?,
            op::CONST4U => number = r.uint(4).ok_or(ExprError::Invalid)?,
            op::CONST4S | op::CALL4 => number = r.sint(4).ok_or(ExprError::Invalid)?,
            op::CONST8U | op::CONST8S => number = r.uint(8).ok_or(ExprError::Invalid)?,
            op::CONSTU | op::PLUS_UCONST | op::REGX | op::PIECE => number = r.uleb(),
            op::CONSTS | op::BREG0..=op::BREG31 | op::FBREG => number = r.sleb(),
            op::BREGX => {
                number = r.uleb();
                if r.at_end() {
                    return Err(ExprError::Invalid);
                }
                number2 = r.sleb();
            }
            op::BIT_PIECE => {
                number = r.uleb();
                if r.at_end() {
                    return Err(ExprError::Invalid);
                }
                number2 = r.uleb();
            }
            _ => return Err(ExprError::Invalid),
        }
        ops.push(Op { atom, number, number2, offset });
    }
    if value {
        ops.push(Op { atom: op::STACK_VALUE, number: 0, number2: 0, offset: block.len() as u64 });
    }
    Ok(ops)
}

/// What an expression needs from the frame being unwound.
pub(crate) trait Machine {
    /// A register of the current frame (libdw `dwfl_frame_reg`).
    fn reg(&self, reg: u64) -> Option<u64>;
    /// 8 bytes of the process's memory (perf's `memory_read`).
    fn read(&self, addr: u64) -> Option<u64>;
    /// The CFA, for `DW_OP_call_frame_cfa` (`None` while computing the
    /// CFA itself, or when it cannot be computed).
    fn cfa(&self) -> Option<u64>;
}

/// `expr_eval`: the value of `ops`. `bias` is added to `DW_OP_addr`.
pub(crate) fn eval(ops: &[Op], m: &dyn Machine, bias: u64) -> Result<u64, ExprError> {
    if ops.is_empty() {
        return Err(ExprError::Empty);
    }
    let mut stack: Vec<u64> = Vec::new();
    let push = |stack: &mut Vec<u64>, v: u64| -> Result<(), ExprError> {
        if stack.len() >= STACK_MAX {
            return Err(ExprError::StackOverflow);
        }
        stack.push(v);
        Ok(())
    };
    let pop = |stack: &mut Vec<u64>| stack.pop().ok_or(ExprError::StackUnderflow);
    let mut is_location = false;
    let mut steps = 0usize;
    let mut i = 0usize;
    while i < ops.len() {
        steps += 1;
        if steps > STEPS_MAX {
            return Err(ExprError::TooManySteps);
        }
        let o = ops[i];
        i += 1;
        match o.atom {
            op::LIT0..=op::LIT31 => push(&mut stack, (o.atom - op::LIT0) as u64)?,
            op::ADDR => push(&mut stack, o.number.wrapping_add(bias))?,
            op::GNU_ENCODED_ADDR => return Err(ExprError::Invalid),
            op::CONST1U | op::CONST1S | op::CONST2U | op::CONST2S | op::CONST4U | op::CONST4S | op::CONST8U
            | op::CONST8S | op::CONSTU | op::CONSTS => push(&mut stack, o.number)?,
            op::REG0..=op::REG31 => {
                let v = m.reg((o.atom - op::REG0) as u64).ok_or(ExprError::Register)?;
                push(&mut stack, v)?
            }
            op::REGX => {
                let v = m.reg(o.number).ok_or(ExprError::Register)?;
                push(&mut stack, v)?
            }
            op::BREG0..=op::BREG31 => {
                let v = m.reg((o.atom - op::BREG0) as u64).ok_or(ExprError::Register)?;
                push(&mut stack, v.wrapping_add(o.number))?
            }
            op::BREGX => {
                let v = m.reg(o.number).ok_or(ExprError::Register)?;
                push(&mut stack, v.wrapping_add(o.number2))?
            }
            op::DUP => {
                let v = pop(&mut stack)?;
                push(&mut stack, v)?;
                push(&mut stack, v)?
            }
            op::DROP => {
                pop(&mut stack)?;
            }
            op::PICK => {
                let n = stack.len();
                if (n as u64) <= o.number {
                    return Err(ExprError::StackUnderflow);
                }
                let v = stack[n - 1 - o.number as usize];
                push(&mut stack, v)?
            }
            op::OVER => {
                let v1 = pop(&mut stack)?;
                let v2 = pop(&mut stack)?;
                push(&mut stack, v2)?;
                push(&mut stack, v1)?;
                push(&mut stack, v2)?
            }
            op::SWAP => {
                let v1 = pop(&mut stack)?;
                let v2 = pop(&mut stack)?;
                push(&mut stack, v1)?;
                push(&mut stack, v2)?
            }
            op::ROT => {
                let v1 = pop(&mut stack)?;
                let v2 = pop(&mut stack)?;
                let v3 = pop(&mut stack)?;
                push(&mut stack, v1)?;
                push(&mut stack, v3)?;
                push(&mut stack, v2)?
            }
            op::DEREF | op::DEREF_SIZE => {
                let a = pop(&mut stack)?;
                let mut v = m.read(a).ok_or(ExprError::Memory)?;
                if o.atom == op::DEREF_SIZE {
                    if o.number > 8 {
                        return Err(ExprError::Invalid);
                    }
                    if o.number < 8 {
                        v &= (1u64 << (o.number * 8)) - 1;
                    }
                }
                push(&mut stack, v)?
            }
            op::ABS => {
                let v = pop(&mut stack)?;
                push(&mut stack, (v as i64).wrapping_abs() as u64)?
            }
            op::NEG => {
                let v = pop(&mut stack)?;
                push(&mut stack, (v as i64).wrapping_neg() as u64)?
            }
            op::NOT => {
                let v = pop(&mut stack)?;
                push(&mut stack, !v)?
            }
            op::PLUS_UCONST => {
                let v = pop(&mut stack)?;
                push(&mut stack, v.wrapping_add(o.number))?
            }
            op::AND | op::MINUS | op::MUL | op::OR | op::PLUS | op::SHL | op::SHR | op::SHRA | op::XOR | op::LE
            | op::GE | op::EQ | op::LT | op::GT | op::NE | op::DIV | op::MOD => {
                let v2 = pop(&mut stack)?;
                let v1 = pop(&mut stack)?;
                let (s1, s2) = (v1 as i64, v2 as i64);
                let r = match o.atom {
                    op::AND => v1 & v2,
                    op::MINUS => v1.wrapping_sub(v2),
                    op::MUL => v1.wrapping_mul(v2),
                    op::OR => v1 | v2,
                    op::PLUS => v1.wrapping_add(v2),
                    // x86 shifts use the count modulo 64, as C's do there.
                    op::SHL => v1.wrapping_shl(v2 as u32),
                    op::SHR => v1.wrapping_shr(v2 as u32),
                    op::SHRA => s1.wrapping_shr(v2 as u32) as u64,
                    op::XOR => v1 ^ v2,
                    op::LE => (s1 <= s2) as u64,
                    op::GE => (s1 >= s2) as u64,
                    op::EQ => (s1 == s2) as u64,
                    op::LT => (s1 < s2) as u64,
                    op::GT => (s1 > s2) as u64,
                    op::NE => (s1 != s2) as u64,
                    op::DIV => {
                        if v2 == 0 {
                            return Err(ExprError::DivisionByZero);
                        }
                        s1.wrapping_div(s2) as u64
                    }
                    _ => {
                        // MOD: unsigned in libdw.
                        if v2 == 0 {
                            return Err(ExprError::DivisionByZero);
                        }
                        v1 % v2
                    }
                };
                push(&mut stack, r)?
            }
            op::BRA | op::SKIP => {
                if o.atom == op::BRA && pop(&mut stack)? == 0 {
                    continue;
                }
                let target = o.offset.wrapping_add(3).wrapping_add(o.number as i16 as i64 as u64);
                i = bsearch_offset(ops, target).ok_or(ExprError::BadBranch)?;
            }
            op::NOP => {}
            op::CALL_FRAME_CFA => {
                let cfa = m.cfa().ok_or(ExprError::Cfa)?;
                push(&mut stack, cfa)?;
                is_location = true;
            }
            op::STACK_VALUE => is_location = false,
            _ => return Err(ExprError::Invalid),
        }
    }
    let result = pop(&mut stack)?;
    if is_location {
        return m.read(result).ok_or(ExprError::Memory);
    }
    Ok(result)
}

/// glibc's `bsearch` over the ops by offset, as libdw calls it: the ops
/// are in block order except a synthetic CFA push at index 0 (offset
/// `u64::MAX`), which can make the search miss a target it would find in
/// a sorted list. Same probes, same misses.
fn bsearch_offset(ops: &[Op], target: u64) -> Option<usize> {
    let (mut l, mut u) = (0usize, ops.len());
    while l < u {
        let idx = (l + u) / 2;
        let off = ops[idx].offset;
        match target.cmp(&off) {
            std::cmp::Ordering::Less => u = idx,
            std::cmp::Ordering::Greater => l = idx + 1,
            std::cmp::Ordering::Equal => return Some(idx),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    struct M {
        regs: Vec<Option<u64>>,
        mem: Vec<(u64, u64)>,
        cfa: Option<u64>,
    }

    impl Machine for M {
        fn reg(&self, reg: u64) -> Option<u64> {
            *self.regs.get(reg as usize)?
        }
        fn read(&self, addr: u64) -> Option<u64> {
            self.mem.iter().find(|(a, _)| *a == addr).map(|(_, v)| *v)
        }
        fn cfa(&self) -> Option<u64> {
            self.cfa
        }
    }

    fn m() -> M {
        let mut regs = vec![None; 17];
        regs[7] = Some(0x1000);
        regs[16] = Some(0x401005);
        M { regs, mem: vec![(0x1008, 0xabcd), (0x2000, 0x1122_3344_5566_7788)], cfa: Some(0x2000) }
    }

    fn run(block: &[u8], cfa_first: bool, value: bool) -> Result<u64, ExprError> {
        let ops = decode(block, true, cfa_first, value)?;
        eval(&ops, &m(), 0x10_0000)
    }

    #[test]
    fn the_plt_cfa_expression() {
        // DW_OP_breg7 8; DW_OP_breg16 0; DW_OP_lit15; DW_OP_and; DW_OP_lit11;
        // DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus (gcc's .plt CFA).
        let plt = [0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22];
        // rip & 15 = 5 < 11: CFA = rsp + 8.
        assert_eq!(run(&plt, false, false), Ok(0x1008));
        let mut mm = m();
        mm.regs[16] = Some(0x40100c); // & 15 = 12 >= 11: rsp + 16
        assert_eq!(eval(&decode(&plt, true, false, false).unwrap(), &mm, 0), Ok(0x1010));
    }

    #[test]
    fn register_rules_push_the_cfa_and_read_unless_a_value() {
        // DW_CFA_expression body "DW_OP_lit8 DW_OP_minus": [CFA - 8]... here
        // CFA = 0x2000, so CFA + 0 with lit0/plus reads 0x2000.
        assert_eq!(run(&[0x30, 0x22], true, false), Ok(0x1122_3344_5566_7788));
        // val_expression: the address itself.
        assert_eq!(run(&[0x30, 0x22], true, true), Ok(0x2000));
        // An empty block has no operations at all: an error to evaluate.
        assert_eq!(decode(&[], true, true, true).unwrap(), vec![]);
        assert_eq!(run(&[], true, true), Err(ExprError::Empty));
        // deref_size masks what an 8-byte read gave.
        assert_eq!(run(&[0x0a, 0x00, 0x20, 0x94, 0x02], false, false), Ok(0x7788));
        assert_eq!(run(&[0x0a, 0x00, 0x20, 0x94, 0x09], false, false), Err(ExprError::Invalid));
        assert_eq!(run(&[0x0a, 0x00, 0x20, 0x94, 0x00], false, false), Ok(0));
        // DW_OP_addr gets the module bias.
        let mut b = vec![0x03];
        b.extend_from_slice(&0x1234u64.to_le_bytes());
        assert_eq!(run(&b, false, false), Ok(0x10_1234));
    }

    #[test]
    fn arithmetic_matches_libdw() {
        // 7 - 9 (wrapping), signed compare, unsigned mod, signed div.
        assert_eq!(run(&[0x37, 0x39, 0x1c], false, false), Ok(u64::MAX - 1));
        assert_eq!(run(&[0x37, 0x39, 0x1c, 0x30, 0x2d], false, false), Ok(1)); // -2 < 0
        assert_eq!(run(&[0x37, 0x39, 0x1c, 0x33, 0x1d], false, false), Ok((u64::MAX - 1) % 3));
        assert_eq!(run(&[0x37, 0x39, 0x1c, 0x32, 0x1b], false, false), Ok((-1i64) as u64));
        assert_eq!(run(&[0x37, 0x30, 0x1b], false, false), Err(ExprError::DivisionByZero));
        assert_eq!(run(&[0x37, 0x30, 0x1d], false, false), Err(ExprError::DivisionByZero));
        // i64::MIN / -1 does not trap.
        let mut b = vec![0x0e];
        b.extend_from_slice(&(i64::MIN as u64).to_le_bytes());
        b.extend_from_slice(&[0x31, 0x1f, 0x1b]);
        assert_eq!(run(&b, false, false), Ok(i64::MIN as u64));
        // Shifts by 64 or more use the count modulo 64, like x86.
        assert_eq!(run(&[0x31, 0x08, 65, 0x24], false, false), Ok(2));
        // pick, over, swap, rot.
        assert_eq!(run(&[0x31, 0x32, 0x33, 0x15, 0x02], false, false), Ok(1));
        assert_eq!(run(&[0x31, 0x32, 0x15, 0x02], false, false), Err(ExprError::StackUnderflow));
        assert_eq!(run(&[0x31, 0x32, 0x14], false, false), Ok(1));
        assert_eq!(run(&[0x31, 0x32, 0x16], false, false), Ok(1));
        assert_eq!(run(&[0x31, 0x32, 0x33, 0x17], false, false), Ok(2));
        assert_eq!(run(&[0x22], false, false), Err(ExprError::StackUnderflow));
    }

    #[test]
    fn registers_must_be_set() {
        assert_eq!(run(&[0x50], false, false), Err(ExprError::Register)); // reg0 unset
        assert_eq!(run(&[0x57], false, false), Ok(0x1000)); // reg7
        assert_eq!(run(&[0x92, 0x07, 0x78], false, false), Ok(0x1000 - 8)); // bregx 7, -8
        assert_eq!(run(&[0x92, 0x80, 0x01, 0x00], false, false), Err(ExprError::Register)); // bregx 128
        assert_eq!(run(&[0x92, 0x07], false, false), Err(ExprError::Invalid)); // truncated
        // call_frame_cfa without a CFA (while computing the CFA itself).
        let mut mm = m();
        mm.cfa = None;
        assert_eq!(eval(&decode(&[0x9c], true, false, false).unwrap(), &mm, 0), Err(ExprError::Cfa));
    }

    #[test]
    fn branches_land_on_operations_only() {
        // lit1; bra +1 (skips lit5: a 1-byte op); lit2 -> 2
        assert_eq!(run(&[0x31, 0x28, 0x01, 0x00, 0x35, 0x32], false, false), Ok(2));
        // lit0; bra: not taken -> lit5 lit2 -> top 2
        assert_eq!(run(&[0x30, 0x28, 0x01, 0x00, 0x35, 0x32], false, false), Ok(2));
        // skip into the middle of an operation: an error.
        assert_eq!(run(&[0x2f, 0x01, 0x00, 0x0a, 0x00, 0x00], false, false), Err(ExprError::BadBranch));
        // skip to the end of a value rule lands on its DW_OP_stack_value.
        assert_eq!(run(&[0x2f, 0x00, 0x00], true, true), Ok(0x2000));
        // ... and to the end of a plain one finds nothing.
        assert_eq!(run(&[0x31, 0x2f, 0x00, 0x00], false, false), Err(ExprError::BadBranch));
    }

    #[test]
    fn hostile_expressions_are_bounded() {
        // skip -3: an endless loop.
        assert_eq!(run(&[0x2f, 0xfd, 0xff], false, false), Err(ExprError::TooManySteps));
        // lit0 dup dup ... 300 times: the stack limit.
        let mut b = vec![0x30];
        b.extend(std::iter::repeat_n(0x12, 300));
        assert_eq!(run(&b, false, false), Err(ExprError::StackOverflow));
        // dup-loop that grows the stack: whichever limit comes first.
        assert!(run(&[0x30, 0x12, 0x2f, 0xfc, 0xff], false, false).is_err());
        // Unknown and unevaluated operations.
        assert_eq!(run(&[0xff], false, false), Err(ExprError::Invalid));
        assert_eq!(run(&[0x93, 0x08], false, false), Err(ExprError::Invalid)); // DW_OP_piece
        assert_eq!(run(&[0xf1], false, false), Err(ExprError::Invalid));
        // Truncated operands.
        assert_eq!(decode(&[0x0c, 0x01], true, false, false), Err(ExprError::Invalid));
        assert_eq!(decode(&[0x03, 0x01], true, false, false), Err(ExprError::Invalid));
    }
}
