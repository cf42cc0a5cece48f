//! `print fmt:` parsing, as libtraceevent does it: the argument expressions
//! become [`Arg`] trees, and the format string is cut into a list of
//! [`PrintParse`] pieces (literal text, or one conversion with its
//! argument) that the evaluator walks for every record.
//!
//! The expression parser is libtraceevent's, quirks included, because they
//! decide what perf prints:
//! - binary operators get a priority (`*` 6, `+` 7, `<<` 8, `<` 9, `==` 10,
//!   `&` 11, `^` 12, `|` 13, `&&` 14, `||` 15, `?` 16); an operator of equal
//!   priority nests to the right (`a - b - c` is `a - (b - c)`), and a
//!   parenthesised right operand with a looser operator is rotated
//!   (`a * (b + c)` becomes `(a * b) + c`); `?:` binds looser than
//!   whatever follows its last operand;
//! - `(type)x` is a cast, `REC->f` a field, `f(...)` one of the helpers
//!   (`__print_flags`, `__print_symbolic`, `__get_str`, ...); any other
//!   function fails the event (perf loads no plugins);
//! - operations on two constants are folded (`consolidate_op_arg`);
//! - `__print_flags`/`__print_symbolic` values are evaluated at parse time
//!   with a smaller evaluator that knows no `*`, `/`, `%`, `^` or unary `!`.

use super::event::{Arg, Event, FlagSym, ParseKind, PrintFmt, PrintParse};
use super::lexer::{Lexer, Tok, Token, strtoll, strtoull};

const ERR: Token = (Tok::Error, String::new());

fn err() -> Token {
    ERR
}

/// `get_op_prio`; -1 for unknown operators.
pub fn op_prio(op: &str) -> i32 {
    let b = op.as_bytes();
    if b.len() == 1 {
        return match b[0] {
            b'~' | b'!' => 4,
            b'*' | b'/' | b'%' => 6,
            b'+' | b'-' => 7,
            b'<' | b'>' => 9,
            b'&' => 11,
            b'^' => 12,
            b'|' => 13,
            b'?' => 16,
            _ => -1,
        };
    }
    match op {
        "++" | "--" => 3,
        ">>" | "<<" => 8,
        ">=" | "<=" => 9,
        "==" | "!=" => 10,
        "&&" => 14,
        "||" => 15,
        _ => -1,
    }
}

const BINARY_OPS: &[&str] =
    &[">>", "<<", "&", "|", "&&", "||", "-", "+", "*", "^", "/", "%", "<", ">", "<=", ">=", "==", "!="];

/// Which child of an operator a later operator continues from.
#[derive(Clone, Copy)]
enum Side {
    Left,
    Right,
}

fn child(arg: &mut Arg, side: Side) -> Option<&mut Arg> {
    match arg {
        Arg::Op { left, right, .. } => match side {
            Side::Left => left.as_deref_mut(),
            Side::Right => right.as_deref_mut(),
        },
        _ => None,
    }
}

/// How deep expressions may nest. libtraceevent has no limit but C's stack;
/// kernel formats nest a dozen levels. Deeper input fails the event instead
/// of overflowing the stack.
const MAX_DEPTH: u32 = 256;

struct Parser<'l, 'a> {
    lx: &'l mut Lexer<'a>,
    ev: &'l Event,
    long_size: u32,
    depth: u32,
}

impl Parser<'_, '_> {
    fn fail_event(&self) {
        self.ev.set_failed();
    }

    /// `process_arg`.
    fn arg(&mut self, arg: &mut Arg) -> Token {
        let (ty, tok) = self.lx.read();
        self.arg_token(arg, tok, ty)
    }

    /// `process_arg_token`.
    fn arg_token(&mut self, arg: &mut Arg, tok: String, ty: Tok) -> Token {
        if self.depth >= MAX_DEPTH {
            self.fail_event();
            return err();
        }
        self.depth += 1;
        let r = self.arg_token_inner(arg, tok, ty);
        self.depth -= 1;
        r
    }

    fn arg_token_inner(&mut self, arg: &mut Arg, tok: String, ty: Tok) -> Token {
        match ty {
            Tok::Item => {
                if tok == "REC" {
                    return self.entry(arg);
                }
                let mut atom = tok;
                let (mut ty, mut t) = self.lx.read_item();
                if ty == Tok::Delim && t == "(" {
                    return self.function(arg, atom);
                }
                while ty == Tok::Item {
                    atom.push(' ');
                    atom.push_str(&t);
                    (ty, t) = self.lx.read_item();
                }
                *arg = Arg::Atom(atom);
                (ty, t)
            }
            Tok::SQuote => {
                let c = tok.as_bytes().first().map(|&b| b as i8 as i32).unwrap_or(0);
                *arg = Arg::Atom(c.to_string());
                self.lx.read_item()
            }
            Tok::DQuote => {
                *arg = Arg::Atom(tok);
                self.lx.read_item()
            }
            Tok::Delim if tok == "(" => self.paren(arg),
            Tok::Delim | Tok::Op => {
                *arg = Arg::Op { op: tok.clone(), left: None, right: None, prio: 0 };
                self.op(arg, tok)
            }
            _ => err(),
        }
    }

    /// `process_op`: `tok` is the operator just read after `arg`.
    fn op(&mut self, arg: &mut Arg, tok: String) -> Token {
        if self.depth >= MAX_DEPTH {
            self.fail_event();
            return err();
        }
        self.depth += 1;
        let r = self.op_inner(arg, tok);
        self.depth -= 1;
        r
    }

    fn op_inner(&mut self, arg: &mut Arg, tok: String) -> Token {
        let unary = matches!(arg, Arg::Op { left: None, .. });
        let (ty, t, side);
        if unary {
            let b = tok.as_bytes();
            if !matches!(b.first(), Some(b'~' | b'!' | b'+' | b'-')) || b.len() != 1 {
                return err();
            }
            let mut right = Box::new(Arg::Null);
            (ty, t) = self.arg(&mut right);
            if let Arg::Op { left, right: r, .. } = arg {
                *left = Some(Box::new(Arg::Null));
                *r = Some(right);
            }
            side = Some(Side::Right);
        } else if tok == "?" {
            let left = std::mem::take(arg);
            *arg = Arg::Op { op: tok, left: Some(Box::new(left)), right: None, prio: 0 };
            (ty, t) = self.cond(arg);
            side = None;
        } else if BINARY_OPS.contains(&tok.as_str()) {
            let left = std::mem::take(arg);
            let prio = if matches!(left, Arg::Null) { 0 } else { op_prio(&tok) };
            let is_mul = tok == "*";
            *arg = Arg::Op { op: tok, left: Some(Box::new(left)), right: None, prio };
            let (ty1, t1) = self.lx.read_item();
            if is_mul && ty1 == Tok::Delim && t1 == ")" {
                // `(type *)`: a pointer type, not a multiplication.
                let Arg::Op { left: Some(left), .. } = std::mem::take(arg) else { unreachable!() };
                let Arg::Atom(mut a) = *left else {
                    return err();
                };
                a.push_str(" *");
                *arg = Arg::Atom(a);
                return (ty1, t1);
            }
            let mut right = Box::new(Arg::Null);
            let (ty2, t2) = self.arg_token(&mut right, t1, ty1);
            if ty2 == Tok::Error {
                return err();
            }
            let Arg::Op { op: aop, .. } = &*arg else { unreachable!() };
            let rotate = matches!(&*right, Arg::Op { op: rop, .. } if op_prio(aop) < op_prio(rop));
            if rotate {
                // a OP1 (b OP2 c) -> (a OP1 b) OP2 c
                let r_left = match &mut *right {
                    Arg::Op { left, .. } => left.take(),
                    _ => None,
                };
                if let Arg::Op { right: r, .. } = arg {
                    *r = r_left;
                }
                std::mem::swap(arg, &mut *right);
                if let Arg::Op { left, .. } = arg {
                    *left = Some(right);
                }
                side = Some(Side::Left);
            } else {
                if let Arg::Op { right: r, .. } = arg {
                    *r = Some(right);
                }
                side = Some(Side::Right);
            }
            (ty, t) = (ty2, t2);
        } else if tok == "[" {
            let left = std::mem::take(arg);
            *arg = Arg::Op { op: tok, left: Some(Box::new(left)), right: None, prio: 0 };
            (ty, t) = self.array(arg);
            side = None;
        } else {
            self.fail_event();
            return err();
        }
        if ty == Tok::Op && t != ":" {
            let prio = op_prio(&t);
            if prio < 0 {
                return err();
            }
            let arg_prio = match arg {
                Arg::Op { prio, .. } => *prio,
                _ => 0,
            };
            if prio > arg_prio {
                return self.op(arg, t);
            }
            return match side.and_then(|s| child(arg, s)) {
                Some(r) => self.op(r, t),
                None => err(),
            };
        }
        (ty, t)
    }

    /// `process_cond`: the `b : c` after `a ?`.
    fn cond(&mut self, top: &mut Arg) -> Token {
        let mut left = Box::new(Arg::Null);
        let mut right = Box::new(Arg::Null);
        let (mut ty, mut t) = self.arg(&mut left);
        loop {
            if ty == Tok::Error {
                return err();
            }
            if ty == Tok::Op && t != ":" {
                (ty, t) = self.op(&mut left, t);
                continue;
            }
            break;
        }
        if ty != Tok::Op || t != ":" {
            return err();
        }
        let (ty, t2) = self.arg(&mut right);
        if let Arg::Op { right: r, .. } = top {
            *r = Some(Box::new(Arg::Op { op: t, left: Some(left), right: Some(right), prio: 0 }));
        }
        (ty, t2)
    }

    /// `process_array`: the index after `[`.
    fn array(&mut self, top: &mut Arg) -> Token {
        let mut a = Box::new(Arg::Null);
        let (ty, t) = self.arg(&mut a);
        if ty != Tok::Op || t != "]" {
            return err();
        }
        if let Arg::Op { right, .. } = top {
            *right = Some(a);
        }
        self.lx.read_item()
    }

    /// `process_entry`: `REC->field`.
    fn entry(&mut self, arg: &mut Arg) -> Token {
        let (ty, t) = self.lx.read_item();
        if ty == Tok::Delim && t == ")" {
            // `(REC)->field`
            return (Tok::Item, t);
        }
        if ty != Tok::Op || t != "->" {
            return err();
        }
        let Some(name) = self.lx.expect_type(Tok::Item) else {
            return err();
        };
        let field = self.ev.find_any_field(&name);
        *arg = Arg::Field { name, field };
        self.lx.read()
    }

    /// `alloc_and_process_delim`: an argument followed by `delim`.
    fn arg_then(&mut self, delim: &str) -> Option<Arg> {
        let mut a = Arg::Null;
        let (mut ty, mut t) = self.arg(&mut a);
        if ty == Tok::Op {
            (ty, t) = self.op(&mut a, t);
            if ty == Tok::Error || !consolidate(&mut a) {
                return None;
            }
        }
        (ty == Tok::Delim && t == delim).then_some(a)
    }

    /// `process_paren`: a parenthesised expression or a cast.
    fn paren(&mut self, arg: &mut Arg) -> Token {
        let (mut ty, mut t) = self.arg(arg);
        if ty == Tok::Error {
            return err();
        }
        if ty == Tok::Op {
            (ty, t) = self.op(arg, t);
        }
        if ty == Tok::Error {
            return err();
        }
        if ty == Tok::Item && t == ")" {
            return self.entry(arg);
        }
        if ty != Tok::Delim || t != ")" {
            return err();
        }
        let (ty, t) = self.lx.read_item();
        if ty.is_item() || (ty == Tok::Delim && t == "(") {
            let Arg::Atom(type_name) = std::mem::take(arg) else {
                return err();
            };
            let mut item = Box::new(Arg::Null);
            let r = self.arg_token(&mut item, t, ty);
            *arg = Arg::Type { ty: type_name, item };
            return r;
        }
        (ty, t)
    }

    /// `process_function`: `name(` was read.
    fn function(&mut self, arg: &mut Arg, name: String) -> Token {
        match name.as_str() {
            "__print_flags" => self.flags(arg, true),
            "__print_symbolic" => self.flags(arg, false),
            "__print_hex" | "__print_hex_str" => {
                let spaced = name == "__print_hex";
                let Some(field) = self.arg_then(",") else { return err() };
                let Some(size) = self.arg_then(")") else { return err() };
                *arg = Arg::Hex { field: Box::new(field), size: Box::new(size), spaced };
                self.lx.read_item()
            }
            "__print_array" => {
                let Some(field) = self.arg_then(",") else { return err() };
                let Some(count) = self.arg_then(",") else { return err() };
                let Some(el_size) = self.arg_then(")") else { return err() };
                *arg = Arg::IntArray { field: Box::new(field), count: Box::new(count), el_size: Box::new(el_size) };
                self.lx.read_item()
            }
            "__get_str" | "__get_rel_str" | "__get_bitmask" | "__get_rel_bitmask" | "__get_cpumask" | "__get_rel_cpumask" => {
                let Some(n) = self.lx.expect_type(Tok::Item) else { return err() };
                *arg = if name.contains("str") {
                    Arg::Str(n)
                } else {
                    Arg::Bitmask { name: n, cpumask: name.contains("cpumask") }
                };
                if !self.lx.expect(Tok::Delim, ")", true) {
                    return err();
                }
                self.lx.read()
            }
            "__get_dynamic_array" | "__get_rel_dynamic_array" | "__get_sockaddr" | "__get_sockaddr_rel" => {
                self.dynamic_array(arg)
            }
            "__get_dynamic_array_len" | "__get_rel_dynamic_array_len" => {
                let Some(n) = self.lx.expect_type(Tok::Item) else { return err() };
                let Some(field) = self.ev.find_field(&n) else { return err() };
                *arg = Arg::DynArrayLen { field };
                if !self.lx.expect(Tok::Delim, ")", true) {
                    return err();
                }
                self.lx.read()
            }
            "__builtin_expect" => {
                let (ty, t) = self.arg(arg);
                if ty != Tok::Delim || !t.starts_with(',') {
                    return err();
                }
                if self.lx.expect_type(Tok::Item).is_none() || !self.lx.expect(Tok::Delim, ")", true) {
                    return err();
                }
                self.lx.read_item()
            }
            "sizeof" => self.sizeof(arg),
            _ => err(),
        }
    }

    /// `process_flags` / `process_symbols`.
    fn flags(&mut self, arg: &mut Arg, is_flags: bool) -> Token {
        let mut field = Arg::Null;
        let (mut ty, mut t) = self.arg(&mut field);
        while ty == Tok::Op {
            (ty, t) = self.op(&mut field, t);
        }
        if ty != Tok::Delim || t != "," {
            return err();
        }
        let mut delim = None;
        if is_flags {
            (ty, t) = self.lx.read_item();
            if ty.is_item() {
                delim = Some(t);
                (ty, t) = self.lx.read_item();
            }
            if ty != Tok::Delim || t != "," {
                return err();
            }
        }
        let mut list = Vec::new();
        let (ty, t) = self.fields(&mut list);
        if ty != Tok::Delim || t != ")" {
            return err();
        }
        *arg = if is_flags {
            Arg::Flags { field: Box::new(field), delim, flags: list }
        } else {
            Arg::Symbol { field: Box::new(field), symbols: list }
        };
        self.lx.read_item()
    }

    /// `process_fields`: `{ value, "str" }, ...`.
    fn fields(&mut self, list: &mut Vec<FlagSym>) -> Token {
        loop {
            let (ty, t) = self.lx.read_item();
            if ty != Tok::Op || t != "{" {
                return (ty, t);
            }
            let mut a = Arg::Null;
            let (mut ty, mut t) = self.arg(&mut a);
            if ty == Tok::Op {
                (ty, t) = self.op(&mut a, t);
            }
            if ty == Tok::Error || ty != Tok::Delim || t != "," {
                return err();
            }
            let Some(value) = arg_eval(&a) else { return err() };
            let mut s = Arg::Null;
            let (ty, t) = self.arg(&mut s);
            if ty != Tok::Op || t != "}" {
                return err();
            }
            let Some(str_) = arg_eval(&s) else { return err() };
            list.push(FlagSym { value, str_ });
            let (ty, t) = self.lx.read_item();
            if ty != Tok::Delim || t != "," {
                return (ty, t);
            }
        }
    }

    /// `process_dynamic_array`.
    fn dynamic_array(&mut self, arg: &mut Arg) -> Token {
        let (ty, t) = self.lx.read();
        if ty != Tok::Item {
            return err();
        }
        let Some(field) = self.ev.find_field(&t) else { return err() };
        *arg = Arg::DynArray { field };
        if !self.lx.expect(Tok::Delim, ")", true) {
            return err();
        }
        let (ty, t) = self.lx.read_item();
        if ty != Tok::Op || t != "[" {
            return (ty, t);
        }
        // libtraceevent parses an index but then fails when it is closed
        // by `]` (an inverted test), and drops it otherwise.
        let mut index = Arg::Null;
        let (ty, t) = self.arg(&mut index);
        if ty == Tok::Error || (ty == Tok::Op && t == "]") {
            return err();
        }
        self.lx.read_item()
    }

    /// `process_sizeof`.
    fn sizeof(&mut self, arg: &mut Arg) -> Token {
        let (mut ty, mut t) = self.lx.read_item();
        let mut has_paren = false;
        if t == "unsigned" {
            (ty, t) = self.lx.read_item();
            if ty == Tok::Error {
                return err();
            }
            if ty != Tok::Item {
                has_paren = true;
            }
        }
        let atom = if has_paren || t == "int" {
            "4".to_string()
        } else if t == "long" {
            (ty, t) = self.lx.read_item();
            if t == "long" {
                "8".to_string()
            } else {
                has_paren = true;
                match self.long_size {
                    4 => "4".to_string(),
                    8 => "8".to_string(),
                    _ => return err(),
                }
            }
        } else if matches!(t.as_str(), "__u64" | "u64" | "__s64" | "s64") {
            "8".to_string()
        } else if matches!(t.as_str(), "__u32" | "u32" | "__s32" | "s32") {
            "4".to_string()
        } else if matches!(t.as_str(), "__u16" | "u16" | "__s16" | "s16") {
            "2".to_string()
        } else if matches!(t.as_str(), "__u8" | "u8" | "__8" | "s8") {
            "1".to_string()
        } else if t == "REC" {
            (ty, t) = self.lx.read_item();
            if ty != Tok::Op || t != "->" {
                return err();
            }
            let Some(n) = self.lx.expect_type(Tok::Item) else { return err() };
            match self.ev.find_any_field(&n).map(|i| &self.ev.fields[i]) {
                Some(f) if !f.has(super::event::ff::ARRAY) => f.size.to_string(),
                _ => return err(),
            }
        } else {
            return err();
        };
        *arg = Arg::Atom(atom);
        if !has_paren {
            (ty, t) = self.lx.read_item();
        }
        if ty != Tok::Delim || t != ")" {
            return err();
        }
        self.lx.read_item()
    }

    /// `event_read_print_args`. `None` on a parse error.
    fn print_args(&mut self) -> Option<Vec<Arg>> {
        let mut args = Vec::new();
        let mut ty = Tok::Error;
        let mut t;
        loop {
            if ty == Tok::Newline {
                (ty, _) = self.lx.read_item();
            } else {
                let mut a = Arg::Null;
                (ty, t) = self.arg(&mut a);
                if ty == Tok::Error {
                    return None;
                }
                if ty == Tok::Op {
                    (ty, _) = self.op(&mut a, t);
                    if ty == Tok::Error || !consolidate(&mut a) {
                        return None;
                    }
                    args.push(a);
                } else {
                    args.push(a);
                    if !(ty == Tok::Delim && t == ",") {
                        break;
                    }
                }
            }
            if ty == Tok::None {
                break;
            }
        }
        Some(args)
    }
}

/// `consolidate_op_arg`: folds operations on two constants. `false` only
/// for allocation failures in C, so never here.
fn consolidate(arg: &mut Arg) -> bool {
    let Arg::Op { op, left, right, .. } = arg else { return true };
    if let Some(l) = left {
        consolidate(l);
    }
    if let Some(r) = right {
        consolidate(r);
    }
    let (Some(l), Some(r)) = (left.as_deref(), right.as_deref()) else { return true };
    let (Arg::Atom(la), Arg::Atom(ra)) = (l, r) else { return true };
    let (a, b) = (strtoull(la), strtoull(ra));
    let ob = op.as_bytes();
    let second = ob.get(1).copied().unwrap_or(0);
    let val: u64 = match ob[0] {
        b'>' => match second {
            b'>' => a.checked_shr(b as u32).unwrap_or(0),
            b'=' => (a >= b) as u64,
            _ => (a > b) as u64,
        },
        b'<' => match second {
            b'<' => a.wrapping_shl(b as u32),
            b'=' => (a <= b) as u64,
            _ => (a < b) as u64,
        },
        b'&' => {
            if second == b'&' {
                (a != 0 && b != 0) as u64
            } else {
                a & b
            }
        }
        b'|' => {
            if second == b'|' {
                (a != 0 || b != 0) as u64
            } else {
                a | b
            }
        }
        b'-' => a.wrapping_sub(b),
        b'+' => a.wrapping_add(b),
        b'*' => a.wrapping_mul(b),
        b'^' => a ^ b,
        // C would trap on a zero divisor; leave such an operation alone.
        b'/' if b != 0 => a / b,
        b'%' if b != 0 => a % b,
        b'=' => (a == b) as u64,
        b'!' => (a != b) as u64,
        _ => return true,
    };
    *arg = Arg::Atom((val as i64).to_string());
    true
}

/// `eval_type_str`: the value cast to a C type (the "unsigned" handling is
/// libtraceevent's: plain `char`/`short`/`int` are masked, not sign-extended).
pub fn eval_type_str(val: u64, ty: &str, pointer: bool) -> u64 {
    let len = ty.len();
    if len < 2 {
        return val;
    }
    if pointer {
        if !ty.ends_with('*') {
            return val;
        }
        return eval_type_str(val, &ty[..len - 2], false);
    }
    if ty.ends_with('*') || ty.starts_with("struct") {
        return val;
    }
    match ty {
        "u8" | "s8" => return val & 0xff,
        "u16" | "s16" => return val & 0xffff,
        "u32" | "s32" => return val & 0xffff_ffff,
        "u64" | "s64" => return val,
        _ => {}
    }
    let base = ty.strip_prefix("unsigned ").unwrap_or(ty);
    match base {
        "char" => val & 0xff,
        "short" => val & 0xffff,
        "int" => val & 0xffff_ffff,
        _ => val,
    }
}

/// `arg_num_eval`: the parse-time evaluator for flag values.
fn arg_num_eval(arg: &Arg) -> Option<i64> {
    match arg {
        Arg::Atom(a) => Some(strtoll(a)),
        Arg::Type { ty, item } => Some(eval_type_str(arg_num_eval(item)? as u64, ty, false) as i64),
        Arg::Op { op, left, right, .. } => {
            let ob = op.as_bytes();
            let second = ob.get(1).copied().unwrap_or(0);
            let l = || left.as_deref().and_then(arg_num_eval);
            let r = || right.as_deref().and_then(arg_num_eval);
            match ob[0] {
                b'|' => {
                    let (a, b) = (l()?, r()?);
                    Some(if second != 0 { (a != 0 || b != 0) as i64 } else { a | b })
                }
                b'&' => {
                    let (a, b) = (l()?, r()?);
                    Some(if second != 0 { (a != 0 && b != 0) as i64 } else { a & b })
                }
                b'<' => {
                    let (a, b) = (l()?, r()?);
                    match second {
                        0 => Some((a < b) as i64),
                        b'<' => Some(a.wrapping_shl(b as u32)),
                        b'=' => Some((a <= b) as i64),
                        _ => None,
                    }
                }
                b'>' => {
                    let (a, b) = (l()?, r()?);
                    match second {
                        0 => Some((a > b) as i64),
                        b'>' => Some(a.wrapping_shr(b as u32)),
                        b'=' => Some((a >= b) as i64),
                        _ => None,
                    }
                }
                b'=' => {
                    let (a, b) = (l()?, r()?);
                    (second == b'=').then_some((a == b) as i64)
                }
                b'!' => {
                    let (a, b) = (l()?, r()?);
                    (second == b'=').then_some((a != b) as i64)
                }
                b'-' | b'+' => {
                    let a = if matches!(left.as_deref(), Some(Arg::Null)) { 0 } else { l()? };
                    let b = r()?;
                    Some(if ob[0] == b'-' { a.wrapping_sub(b) } else { a.wrapping_add(b) })
                }
                b'~' => Some(!r()?),
                _ => None,
            }
        }
        _ => None,
    }
}

/// `arg_eval`: a flag value or string as text.
fn arg_eval(arg: &Arg) -> Option<String> {
    match arg {
        Arg::Atom(a) => Some(a.clone()),
        Arg::Type { item, .. } => arg_eval(item),
        Arg::Op { .. } => arg_num_eval(arg).map(|v| v.to_string()),
        _ => None,
    }
}

/// `event_read_print`: the `print fmt:` line; marks the event failed if it
/// does not parse.
pub fn read_print(lx: &mut Lexer<'_>, event: &mut Event, long_size: u32) {
    let result = {
        let mut p = Parser { lx, ev: event, long_size, depth: 0 };
        read_print_inner(&mut p)
    };
    match result {
        Some((format, args)) => {
            let parse = parse_args(event, format.as_bytes(), args);
            event.print = PrintFmt { parse };
        }
        None => event.set_failed(),
    }
}

fn read_print_inner(p: &mut Parser<'_, '_>) -> Option<(String, Vec<Arg>)> {
    if !p.lx.expect(Tok::Item, "print", false) || !p.lx.expect(Tok::Item, "fmt", true) || !p.lx.expect(Tok::Op, ":", true) {
        return None;
    }
    let mut format = p.lx.expect_type(Tok::DQuote)?;
    loop {
        let (ty, t) = p.lx.read_item();
        if ty == Tok::None {
            return Some((format, Vec::new()));
        }
        if ty == Tok::DQuote {
            format.push_str(&t);
            continue;
        }
        if ty != Tok::Delim || t != "," {
            return None;
        }
        break;
    }
    let args = p.print_args()?;
    Some((format, args))
}

/// `parse_args`: cuts the format into pieces, giving each conversion the
/// next argument.
fn parse_args(event: &Event, format: &[u8], args: Vec<Arg>) -> Vec<PrintParse> {
    let mut out = Vec::new();
    let mut args = args.into_iter();
    let mut pos = 0;
    let mut len = format.len() as isize;
    while pos < format.len() {
        let ret = if format[pos] == b'%' && format.get(pos + 1) != Some(&b'%') {
            parse_arg_format(event, &format[pos..], &mut args, &mut out)
        } else {
            parse_arg_string(&format[pos..], &mut out)
        };
        len -= ret as isize;
        if len > 0 {
            pos += ret;
        } else {
            break;
        }
    }
    out
}

/// `parse_arg_string`: literal text up to the next conversion.
fn parse_arg_string(format: &[u8], out: &mut Vec<PrintParse>) -> usize {
    let mut s = Vec::new();
    let mut ret = 0;
    let mut i = 0;
    while i < format.len() {
        let c = format[i];
        if c == b'\\' {
            i += 1;
            ret += 1;
            match format.get(i) {
                Some(b'n') => s.push(b'\n'),
                Some(b't') => s.push(b'\t'),
                Some(b'r') => s.push(b'\r'),
                Some(b'\\') => s.push(b'\\'),
                Some(&c) => s.push(c),
                None => break,
            }
        } else if c == b'%' {
            if format.get(i + 1) == Some(&b'%') {
                s.push(b'%');
                i += 1;
                ret += 1;
            } else {
                break;
            }
        } else {
            s.push(c);
        }
        ret += 1;
        i += 1;
    }
    out.push(PrintParse { kind: ParseKind::Text, format: s, arg: None, len_arg: None, ls: 0 });
    ret
}

/// `parse_arg_format_pointer`: how many characters after `%p` belong to it.
fn parse_arg_format_pointer(f: &[u8]) -> usize {
    let at = |i: usize| f.get(i).copied().unwrap_or(0);
    let mut ret = 0;
    match at(0) {
        b'F' | b'S' | b'f' | b's' => ret += 1,
        b'M' | b'm' => {
            if matches!(at(1), b'R' | b'F') {
                ret += 1;
            }
            ret += 1;
        }
        b'I' | b'i' => {
            let mut index = 2;
            let c1 = at(1);
            if c1 == b'S' {
                while matches!(at(index), b'p' | b'f' | b's') {
                    ret += 1;
                    index += 1;
                }
            }
            if (c1 == b'S' || c1 == b'4')
                && matches!(at(index), b'h' | b'n' | b'l' | b'b') {
                    ret += 1;
                    index += 1;
                }
            if c1 == b'4' {
                ret += 1;
            } else if c1 == b'S' || c1 == b'6' {
                if at(index) == b'c' {
                    ret += 1;
                }
                ret += 1;
            }
            ret += 1;
        }
        b'U' => {
            if matches!(at(1), b'L' | b'l' | b'B' | b'b') {
                ret += 1;
            }
            ret += 1;
        }
        b'h' => {
            if matches!(at(1), b'C' | b'D' | b'N') {
                ret += 1;
            }
            ret += 1;
        }
        _ => {}
    }
    ret
}

/// `parse_arg_format`: one conversion at `format[0] == '%'`.
fn parse_arg_format(
    event: &Event,
    format: &[u8],
    args: &mut std::vec::IntoIter<Arg>,
    out: &mut Vec<PrintParse>,
) -> usize {
    let mut len_arg: Option<Arg> = None;
    let mut ls = 0i32;
    let mut ret = 1;
    let mut i = 1;
    let spec = |end: usize, cap: usize| -> Vec<u8> {
        let len = (end + 1).min(cap);
        format[..len.min(format.len())].to_vec()
    };
    while i < format.len() {
        let c = format[i];
        match c {
            b'#' | b'.' | b'0'..=b'9' | b'-' | b'+' => {}
            b'h' => ls -= 1,
            b'l' => ls += 1,
            b'L' => ls = 2,
            b'z' | b'Z' => ls = 1,
            b'*' => {
                let Some(a) = args.next() else {
                    event.set_failed();
                    return ret;
                };
                if len_arg.is_some() {
                    event.set_failed();
                    return ret;
                }
                len_arg = Some(a);
            }
            b'p' => {
                let Some(a) = args.next() else {
                    event.set_failed();
                    return ret;
                };
                let res = parse_arg_format_pointer(&format[i + 1..]);
                i += res;
                ret += res;
                if i + 1 > 31 {
                    event.set_failed();
                }
                out.push(PrintParse { kind: ParseKind::Pointer, format: spec(i, 31), arg: Some(a), len_arg, ls });
                return ret + 1;
            }
            b'c' | b'd' | b'u' | b'i' | b'x' | b'X' | b'o' => {
                let Some(a) = args.next() else {
                    event.set_failed();
                    return ret;
                };
                if i + 1 > 30 {
                    event.set_failed();
                }
                if !(-2..=2).contains(&ls) {
                    event.set_failed();
                }
                out.push(PrintParse { kind: ParseKind::Digit, format: spec(i, 31), arg: Some(a), len_arg, ls });
                return ret + 1;
            }
            b's' => {
                let Some(a) = args.next() else {
                    event.set_failed();
                    return ret;
                };
                if i + 1 > 31 {
                    event.set_failed();
                }
                out.push(PrintParse { kind: ParseKind::String, format: spec(i, 31), arg: Some(a), len_arg, ls: 0 });
                return ret + 1;
            }
            _ => {
                out.push(PrintParse { kind: ParseKind::Text, format: vec![b'>', c, b'<'], arg: None, len_arg: None, ls: 0 });
                return ret + 1;
            }
        }
        ret += 1;
        i += 1;
    }
    ret
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(print: &str) -> Event {
        let text = format!(
            "name: t\nID: 7\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n\tfield:int a;\toffset:8;\tsize:4;\tsigned:1;\n\tfield:int b;\toffset:12;\tsize:4;\tsigned:1;\n\tfield:unsigned long arr[2];\toffset:16;\tsize:16;\tsigned:0;\n\tfield:__data_loc char[] s;\toffset:32;\tsize:4;\tsigned:0;\n\nprint fmt: {print}\n"
        );
        Event::parse(text.as_bytes(), "test", 8).unwrap()
    }

    fn args(e: &Event) -> Vec<&Arg> {
        e.print.parse.iter().filter_map(|p| p.arg.as_ref()).collect()
    }

    fn atom(s: &str) -> Box<Arg> {
        Box::new(Arg::Atom(s.into()))
    }

    fn field(name: &str, idx: usize) -> Box<Arg> {
        Box::new(Arg::Field { name: name.into(), field: Some(idx) })
    }

    fn op(o: &str, l: Box<Arg>, r: Box<Arg>, prio: i32) -> Arg {
        Arg::Op { op: o.into(), left: Some(l), right: Some(r), prio }
    }

    #[test]
    fn precedence_and_folding() {
        let e = event("\"%d %d %d\", REC->a + REC->b * 2, REC->a * REC->b + 1, (1 + 2) << 3");
        let a = args(&e);
        assert_eq!(*a[0], op("+", field("a", 1), Box::new(op("*", field("b", 2), atom("2"), 6)), 7));
        assert_eq!(*a[1], op("+", Box::new(op("*", field("a", 1), field("b", 2), 6)), atom("1"), 7));
        assert_eq!(*a[2], Arg::Atom("24".into()));
        assert!(!e.failed());
    }

    #[test]
    fn quirks_are_kept() {
        // Right-nesting of equal priorities and rotation of parenthesised operands.
        let e = event("\"%d %d\", REC->a - REC->b - 1, REC->a * (REC->b + 1)");
        let a = args(&e);
        assert_eq!(*a[0], op("-", field("a", 1), Box::new(op("-", field("b", 2), atom("1"), 7)), 7));
        assert_eq!(*a[1], op("+", Box::new(op("*", field("a", 1), field("b", 2), 6)), atom("1"), 7));
    }

    #[test]
    fn casts_ternaries_helpers() {
        let e = event(
            "\"%s %lx %s %d\", REC->a ? \"yes\" : \"no\", ((unsigned long)(REC->arr[1])), __get_str(s), __print_symbolic(REC->a, { 0, \"Z\" }, { 1 << 2, \"F\" })",
        );
        let a = args(&e);
        assert!(matches!(a[0], Arg::Op { op, .. } if op == "?"));
        assert!(matches!(a[1], Arg::Type { ty, .. } if ty == "unsigned long"));
        assert_eq!(*a[2], Arg::Str("s".into()));
        match a[3] {
            Arg::Symbol { symbols, .. } => {
                assert_eq!(symbols[1], FlagSym { value: "4".into(), str_: "F".into() });
            }
            other => panic!("{other:?}"),
        }
        assert!(!e.failed());
    }

    #[test]
    fn unsupported_things_fail_the_event() {
        for bad in [
            "\"%d\", jiffies_to_msecs(REC->a)",
            "\"%d\", __print_flags(REC->a, \"|\", { 2 * 3, \"X\" })",
            "\"%d %d\", REC->a",
            "\"%d\", REC->a @ 3",
            "\"%d\", __get_dynamic_array(s)[0]",
            "\"unterminated",
            "\"%d\", (",
        ] {
            assert!(event(bad).failed(), "{bad}");
        }
    }

    #[test]
    fn format_pieces() {
        let e = event("\"a=%-5d\\t%% b=%08lx %pS %k end\\n\", REC->a, REC->b, REC->a");
        let p = &e.print.parse;
        let shown: Vec<(ParseKind, String)> =
            p.iter().map(|p| (p.kind, String::from_utf8_lossy(&p.format).into_owned())).collect();
        assert_eq!(
            shown,
            vec![
                (ParseKind::Text, "a=".into()),
                (ParseKind::Digit, "%-5d".into()),
                (ParseKind::Text, "\t% b=".into()),
                (ParseKind::Digit, "%08lx".into()),
                (ParseKind::Text, " ".into()),
                (ParseKind::Pointer, "%pS".into()),
                (ParseKind::Text, " ".into()),
                (ParseKind::Text, ">k<".into()),
                (ParseKind::Text, " end\n".into()),
            ]
        );
        assert_eq!(p[3].ls, 1);
    }

    #[test]
    fn deep_nesting_fails_instead_of_overflowing() {
        let deep = format!("\"%d\", {}REC->a{}", "(".repeat(20000), ")".repeat(20000));
        assert!(event(&deep).failed());
        let long = format!("\"%d\", REC->a{}", " - 1".repeat(20000));
        assert!(event(&long).failed());
        let unary = format!("\"%d\", {}REC->a", "-".repeat(20000));
        assert!(event(&unary).failed());
        // Realistic depth still parses.
        let ok = format!("\"%d\", {}REC->a{}", "(".repeat(40), ")".repeat(40));
        assert!(!event(&ok).failed());
    }

    #[test]
    fn garbage_never_panics() {
        let samples = [
            "", "\"", "\"%", "\"%*\"", "\"%*d\", 1", "\"%p\"", "\"%s\", __get_str(", "\"x\", ?", "\"x\", : :",
            "\"x\", REC->", "\"x\", (REC)", "\"x\", ((((", "\"x\", ))))", "\"x\", [1]", "\"x\", REC->a[",
            "\"x\", __print_flags(", "\"x\", __print_symbolic(REC->a, {", "\"x\", sizeof(", "\"x\", sizeof(REC->arr)",
            "\"x\", __print_hex(REC->a,", "\"x\", __print_array(REC->a, 2, 4)", "\"x\", \"a\" \"b\" \"c",
            "\"%-+ #0123456789.123456789lllhhLzZd\", 1", "\"x\", 1 ? 2 : 3 ? 4 : 5", "\"x\", (int)(char)(void *)",
        ];
        for s in samples {
            let _ = event(s);
        }
        // Every byte value at every position of a real format.
        let base = "\"a=%d s=%s\", REC->a ? (long)REC->b : -1, __print_flags(REC->a, \"|\", {1, \"A\"})";
        for i in 0..base.len() {
            for b in [b'(', b')', b',', b'"', b'%', b'\\', 0u8, 0xff, b'{', b'}', b'?', b':'] {
                let mut v = base.as_bytes().to_vec();
                v[i] = b;
                let _ = event(&String::from_utf8_lossy(&v));
            }
        }
    }

    #[test]
    fn eval_type_masks() {
        assert_eq!(eval_type_str(u64::MAX, "int", false), 0xffff_ffff);
        assert_eq!(eval_type_str(u64::MAX, "unsigned char", false), 0xff);
        assert_eq!(eval_type_str(u64::MAX, "long", false), u64::MAX);
        assert_eq!(eval_type_str(u64::MAX, "u16 *", true), 0xffff);
    }
}
