//! The [`Shape`] of a Rust v0 symbol's demangling (`{:#}`, as
//! `rustc_demangle` prints it), without printing it.
//!
//! perf's choice between same-address aliases compares the demangled
//! names' lengths and leading underscores, and a large Rust library
//! (librustc_driver: 34,000 names at load) has them by the thousand.
//! `rustc_demangle` parses a name twice (to validate it, then to print it
//! through `core::fmt`), some 13,000 instructions for one of these names.
//! This walks the grammar once and only counts:
//!
//! ```text
//!   _R NvMs_NtCs9ltgdHTiPiY_4core3ptrINtB4_7NonNullpE3new
//!      '-- path --------------------------------------'
//!   <core::ptr::NonNull<_>>::new      len 29, no leading '_'
//! ```
//!
//! It takes only what it is sure to print as `rustc_demangle` does: a name
//! with an error anywhere, a `.` suffix, Punycode identifiers, constants
//! other than integers and booleans, pattern types, or depths near
//! `rustc_demangle`'s limit is left to `rustc_demangle` (`None`).

use super::shape::Shape;

/// The depth past which this walk gives up: well before
/// `rustc_demangle`'s recursion limit (500), depths counted alike.
const GIVE_UP_DEPTH: u32 = 400;
/// `rustc_demangle` stops printing at a million bytes; this walk gives up
/// before (backrefs can double the text at every level: a short name can
/// stand for more text than could ever be walked).
const GIVE_UP_LEN: usize = 900_000;

/// Not printed as `rustc_demangle` would, or not sure to be.
struct Unsure;

type R<T = ()> = Result<T, Unsure>;

/// The shape of `{:#}` of `rustc_demangle::demangle(name)` for a v0 name
/// (`_R...`), or `None` if this walk is not sure of it.
pub fn shape(name: &str) -> Option<Shape> {
    let sym = name.as_bytes().strip_prefix(b"_R")?;
    // rustc_demangle: ASCII only, and a path starts with an uppercase tag;
    // a '.' would be a suffix to check (left to it).
    if !sym.first()?.is_ascii_uppercase() || sym.iter().any(|&b| b & 0x80 != 0 || b == b'.') {
        return None;
    }
    let mut p = Walk { sym, next: 0, depth: 0, printing: true, bound: 0, out: Shape::default() };
    p.path(true).ok()?;
    // The instantiating crate: parsed, not printed; nothing may follow.
    p.printing = false;
    if p.peek().is_some_and(|b| b.is_ascii_uppercase()) {
        p.path(false).ok()?;
    }
    if p.next != sym.len() || p.out.len > GIVE_UP_LEN {
        return None;
    }
    Some(p.out)
}

struct Walk<'s> {
    sym: &'s [u8],
    next: usize,
    depth: u32,
    /// Off while `rustc_demangle` skips printing (an impl's own path, and
    /// the validation of the instantiating crate): backrefs are not
    /// followed and lifetimes not checked then.
    printing: bool,
    /// Lifetimes bound by `for<...>` around what is printed.
    bound: u64,
    out: Shape,
}

impl<'s> Walk<'s> {
    fn print(&mut self, s: &str) {
        if self.printing {
            self.out.add(s);
        }
    }

    fn print_bytes(&mut self, s: &[u8]) {
        // Identifiers are ASCII (checked up front).
        if let Ok(s) = std::str::from_utf8(s) {
            self.print(s);
        }
    }

    fn print_u64(&mut self, v: u64) {
        if self.printing {
            let _ = std::fmt::Write::write_fmt(&mut self.out, format_args!("{v}"));
        }
    }

    fn peek(&self) -> Option<u8> {
        self.sym.get(self.next).copied()
    }

    fn eat(&mut self, b: u8) -> bool {
        let hit = self.peek() == Some(b);
        self.next += usize::from(hit);
        hit
    }

    fn byte(&mut self) -> R<u8> {
        let b = self.peek().ok_or(Unsure)?;
        self.next += 1;
        Ok(b)
    }

    /// Every path, type, constant and backref comes through here, and
    /// each prints at most an identifier before the next: checking the
    /// length here bounds the walk by the text it gives up at.
    fn push_depth(&mut self) -> R {
        self.depth += 1;
        if self.depth > GIVE_UP_DEPTH || self.out.len > GIVE_UP_LEN {
            return Err(Unsure);
        }
        Ok(())
    }

    fn integer_62(&mut self) -> R<u64> {
        if self.eat(b'_') {
            return Ok(0);
        }
        let mut x: u64 = 0;
        while !self.eat(b'_') {
            let d = match self.byte()? {
                d @ b'0'..=b'9' => d - b'0',
                d @ b'a'..=b'z' => 10 + d - b'a',
                d @ b'A'..=b'Z' => 36 + d - b'A',
                _ => return Err(Unsure),
            };
            x = x.checked_mul(62).and_then(|x| x.checked_add(u64::from(d))).ok_or(Unsure)?;
        }
        x.checked_add(1).ok_or(Unsure)
    }

    fn opt_integer_62(&mut self, tag: u8) -> R<u64> {
        if !self.eat(tag) {
            return Ok(0);
        }
        self.integer_62()?.checked_add(1).ok_or(Unsure)
    }

    fn disambiguator(&mut self) -> R<u64> {
        self.opt_integer_62(b's')
    }

    /// An identifier's bytes (Punycode ones are left to rustc_demangle).
    fn ident(&mut self) -> R<&'s [u8]> {
        if self.peek() == Some(b'u') {
            return Err(Unsure);
        }
        let mut len = match self.byte()? {
            d @ b'0'..=b'9' => usize::from(d - b'0'),
            _ => return Err(Unsure),
        };
        if len != 0 {
            while let Some(d @ b'0'..=b'9') = self.peek() {
                self.next += 1;
                len = len.checked_mul(10).and_then(|l| l.checked_add(usize::from(d - b'0'))).ok_or(Unsure)?;
            }
        }
        self.eat(b'_');
        let start = self.next;
        let end = start.checked_add(len).filter(|&e| e <= self.sym.len()).ok_or(Unsure)?;
        self.next = end;
        Ok(&self.sym[start..end])
    }

    /// Runs `f` at a backref's target (when printing; else only parses it,
    /// as rustc_demangle does).
    fn backref(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        let at = self.next - 1;
        let i = self.integer_62()?;
        if i >= at as u64 {
            return Err(Unsure);
        }
        if !self.printing {
            return Ok(());
        }
        let (next, depth) = (self.next, self.depth);
        self.next = i as usize;
        self.push_depth()?;
        let r = f(self);
        (self.next, self.depth) = (next, depth);
        r
    }

    fn sep_list(&mut self, sep: &str, mut f: impl FnMut(&mut Self) -> R) -> R<usize> {
        let mut i = 0;
        while !self.eat(b'E') {
            if i > 0 {
                self.print(sep);
            }
            f(self)?;
            i += 1;
        }
        Ok(i)
    }

    fn path(&mut self, in_value: bool) -> R {
        self.push_depth()?;
        match self.byte()? {
            b'C' => {
                self.disambiguator()?;
                let name = self.ident()?;
                self.print_bytes(name);
            }
            b'N' => {
                let ns = match self.byte()? {
                    ns @ b'A'..=b'Z' => Some(ns),
                    b'a'..=b'z' => None,
                    _ => return Err(Unsure),
                };
                self.path(in_value)?;
                let dis = self.disambiguator()?;
                let name = self.ident()?;
                match ns {
                    Some(ns) => {
                        self.print("::{");
                        match ns {
                            b'C' => self.print("closure"),
                            b'S' => self.print("shim"),
                            _ => self.print_bytes(&[ns]),
                        }
                        if !name.is_empty() {
                            self.print(":");
                            self.print_bytes(name);
                        }
                        self.print("#");
                        self.print_u64(dis);
                        self.print("}");
                    }
                    None => {
                        if !name.is_empty() {
                            self.print("::");
                            self.print_bytes(name);
                        }
                    }
                }
            }
            tag @ (b'M' | b'X' | b'Y') => {
                if tag != b'Y' {
                    self.disambiguator()?;
                    let printing = std::mem::replace(&mut self.printing, false);
                    let r = self.path(false);
                    self.printing = printing;
                    r?;
                }
                self.print("<");
                self.ty()?;
                if tag != b'M' {
                    self.print(" as ");
                    self.path(false)?;
                }
                self.print(">");
            }
            b'I' => {
                self.path(in_value)?;
                if in_value {
                    self.print("::");
                }
                self.print("<");
                self.sep_list(", ", Self::generic_arg)?;
                self.print(">");
            }
            b'B' => self.backref(|w| w.path(in_value))?,
            _ => return Err(Unsure),
        }
        self.depth -= 1;
        Ok(())
    }

    fn generic_arg(&mut self) -> R {
        if self.eat(b'L') {
            let lt = self.integer_62()?;
            self.lifetime(lt)
        } else if self.eat(b'K') {
            self.constant()
        } else {
            self.ty()
        }
    }

    fn lifetime(&mut self, lt: u64) -> R {
        if !self.printing {
            return Ok(());
        }
        self.print("'");
        if lt == 0 {
            self.print("_");
            return Ok(());
        }
        let depth = self.bound.checked_sub(lt).ok_or(Unsure)?;
        if depth < 26 {
            self.print_bytes(&[b'a' + depth as u8]);
        } else {
            self.print("_");
            self.print_u64(depth);
        }
        Ok(())
    }

    fn in_binder(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        let bound = self.opt_integer_62(b'G')?;
        if !self.printing {
            return f(self);
        }
        // rustc_demangle counts bound lifetimes in a u32.
        if bound > 1000 {
            return Err(Unsure);
        }
        if bound > 0 {
            self.print("for<");
            for i in 0..bound {
                if i > 0 {
                    self.print(", ");
                }
                self.bound += 1;
                self.lifetime(1)?;
            }
            self.print("> ");
        }
        let r = f(self);
        self.bound -= bound;
        r
    }

    fn ty(&mut self) -> R {
        let tag = self.byte()?;
        if let Some(name) = basic_type(tag) {
            self.print(name);
            return Ok(());
        }
        self.push_depth()?;
        match tag {
            b'R' | b'Q' => {
                self.print("&");
                if self.eat(b'L') {
                    let lt = self.integer_62()?;
                    if lt != 0 {
                        self.lifetime(lt)?;
                        self.print(" ");
                    }
                }
                if tag != b'R' {
                    self.print("mut ");
                }
                self.ty()?;
            }
            b'P' | b'O' => {
                self.print(if tag == b'P' { "*const " } else { "*mut " });
                self.ty()?;
            }
            b'A' | b'S' => {
                self.print("[");
                self.ty()?;
                if tag == b'A' {
                    self.print("; ");
                    self.constant()?;
                }
                self.print("]");
            }
            b'T' => {
                self.print("(");
                if self.sep_list(", ", Self::ty)? == 1 {
                    self.print(",");
                }
                self.print(")");
            }
            b'F' => self.in_binder(|w| {
                let is_unsafe = w.eat(b'U');
                let abi = if w.eat(b'K') {
                    if w.eat(b'C') {
                        Some(&b"C"[..])
                    } else {
                        let abi = w.ident()?;
                        if abi.is_empty() {
                            return Err(Unsure);
                        }
                        Some(abi)
                    }
                } else {
                    None
                };
                if is_unsafe {
                    w.print("unsafe ");
                }
                if let Some(abi) = abi {
                    w.print("extern \"");
                    // '-' in an ABI name was mangled to '_'.
                    for (i, part) in abi.split(|&b| b == b'_').enumerate() {
                        if i > 0 {
                            w.print("-");
                        }
                        w.print_bytes(part);
                    }
                    w.print("\" ");
                }
                w.print("fn(");
                w.sep_list(", ", Self::ty)?;
                w.print(")");
                if !w.eat(b'u') {
                    w.print(" -> ");
                    w.ty()?;
                }
                Ok(())
            })?,
            b'D' => {
                self.print("dyn ");
                self.in_binder(|w| w.sep_list(" + ", Self::dyn_trait).map(|_| ()))?;
                if !self.eat(b'L') {
                    return Err(Unsure);
                }
                let lt = self.integer_62()?;
                if lt != 0 {
                    self.print(" + ");
                    self.lifetime(lt)?;
                }
            }
            b'B' => self.backref(Self::ty)?,
            // Pattern types, splats: left to rustc_demangle.
            b'W' | b'w' => return Err(Unsure),
            _ => {
                self.next -= 1;
                self.path(false)?;
            }
        }
        self.depth -= 1;
        Ok(())
    }

    /// A path, its generic arguments' `<` left open if it has some.
    fn path_maybe_open_generics(&mut self) -> R<bool> {
        if self.eat(b'B') {
            let mut open = false;
            self.backref(|w| {
                open = w.path_maybe_open_generics()?;
                Ok(())
            })?;
            Ok(open)
        } else if self.eat(b'I') {
            self.path(false)?;
            self.print("<");
            self.sep_list(", ", Self::generic_arg)?;
            Ok(true)
        } else {
            self.path(false)?;
            Ok(false)
        }
    }

    fn dyn_trait(&mut self) -> R {
        let mut open = self.path_maybe_open_generics()?;
        while self.eat(b'p') {
            self.print(if open { ", " } else { "<" });
            open = true;
            let name = self.ident()?;
            self.print_bytes(name);
            self.print(" = ");
            if self.eat(b'K') {
                self.constant()?;
            } else {
                self.ty()?;
            }
        }
        if open {
            self.print(">");
        }
        Ok(())
    }

    /// Integer and boolean constants (and `_`); the others (the ones that
    /// take braces outside an expression among them) are left to
    /// rustc_demangle.
    fn constant(&mut self) -> R {
        let tag = self.byte()?;
        self.push_depth()?;
        match tag {
            b'p' => self.print("_"),
            b'h' | b't' | b'm' | b'y' | b'o' | b'j' => self.uint()?,
            b'a' | b's' | b'l' | b'x' | b'n' | b'i' => {
                if self.eat(b'n') {
                    self.print("-");
                }
                self.uint()?;
            }
            b'b' => match self.hex_value()? {
                (Some(0), _) => self.print("false"),
                (Some(1), _) => self.print("true"),
                _ => return Err(Unsure),
            },
            b'B' => self.backref(Self::constant)?,
            _ => return Err(Unsure),
        }
        self.depth -= 1;
        Ok(())
    }

    /// Hex nibbles up to `_`: their value if it fits a u64, and the nibbles.
    fn hex_value(&mut self) -> R<(Option<u64>, &'s [u8])> {
        let start = self.next;
        loop {
            match self.byte()? {
                b'0'..=b'9' | b'a'..=b'f' => {}
                b'_' => break,
                _ => return Err(Unsure),
            }
        }
        let nibbles = &self.sym[start..self.next - 1];
        let digits = &nibbles[nibbles.iter().position(|&b| b != b'0').unwrap_or(nibbles.len())..];
        if digits.len() > 16 {
            return Ok((None, nibbles));
        }
        let v = digits.iter().fold(0u64, |v, &d| v << 4 | u64::from((d as char).to_digit(16).unwrap_or(0)));
        Ok((Some(v), nibbles))
    }

    fn uint(&mut self) -> R {
        match self.hex_value()? {
            (Some(v), _) => self.print_u64(v),
            (None, nibbles) => {
                self.print("0x");
                self.print_bytes(nibbles);
            }
        }
        Ok(())
    }
}

fn basic_type(tag: u8) -> Option<&'static str> {
    Some(match tag {
        b'b' => "bool",
        b'c' => "char",
        b'e' => "str",
        b'u' => "()",
        b'a' => "i8",
        b's' => "i16",
        b'l' => "i32",
        b'x' => "i64",
        b'n' => "i128",
        b'i' => "isize",
        b'h' => "u8",
        b't' => "u16",
        b'm' => "u32",
        b'y' => "u64",
        b'o' => "u128",
        b'j' => "usize",
        b'f' => "f32",
        b'd' => "f64",
        b'z' => "!",
        b'p' => "_",
        b'v' => "...",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slow(name: &str) -> Option<Shape> {
        let d = rustc_demangle::try_demangle(name).ok()?;
        let mut s = Shape::default();
        let _ = std::fmt::Write::write_fmt(&mut s, format_args!("{d:#}"));
        Some(s)
    }

    /// Known demanglings, each walked (not left to rustc_demangle).
    #[test]
    fn shapes_of_known_names() {
        for (name, shown) in [
            ("_RNvCs1234_7mycrate3foo", "mycrate::foo"),
            ("_RNvNtCs9ltgdHTiPiY_4core3ptr13drop_in_place", "core::ptr::drop_in_place"),
            ("_RNvMs_NtCs9ltgdHTiPiY_4core3ptrINtB4_7NonNullpE3new", "<core::ptr::NonNull<_>>::new"),
            ("_RNCNvC7mycrate4main0", "mycrate::main::{closure#0}"),
            ("_RINvCs1234_7mycrate3fooRShEB2_", "mycrate::foo::<&[u8]>"),
            ("_RINvC7mycrate1fDNtC3std2Fmp6OutputReEL_E", "mycrate::f::<dyn std::Fm<Output = &str>>"),
            ("_RINvC7mycrate1fFG_KCRL0_hEuE", "mycrate::f::<for<'a> extern \"C\" fn(&'a u8)>"),
            ("_RINvC7mycrate1fKj2a_E", "mycrate::f::<42>"),
            ("_RINvC7mycrate1fAhj10_E", "mycrate::f::<[u8; 16]>"),
            ("_RINvC7mycrate1fKanff_Kb1_E", "mycrate::f::<-255, true>"),
            ("_RNvXs_C7mycrateNtB4_3FooNtNtC4core3fmt5Debug3fmt", "<mycrate::Foo as core::fmt::Debug>::fmt"),
            ("_RINvC7mycrate1fTlmEE", "mycrate::f::<(i32, u32)>"),
            ("_RINvC7mycrate1fTlEE", "mycrate::f::<(i32,)>"),
        ] {
            assert_eq!(slow(name), Some(Shape::of(shown)), "{name}: rustc_demangle says {:#}", rustc_demangle::demangle(name));
            assert_eq!(shape(name), Some(Shape::of(shown)), "{name}");
        }
    }

    /// A short name whose backrefs double its printing at every level
    /// (2^60 bytes here) is given up on past rustc_demangle's size limit,
    /// not walked to the end.
    #[test]
    fn exponential_backrefs_are_given_up_on() {
        let b62 = |v: usize| {
            let (mut x, mut d) = (v - 1, Vec::new());
            loop {
                d.push(b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"[x % 62]);
                x /= 62;
                if x == 0 {
                    break;
                }
            }
            d.reverse();
            format!("{}_", String::from_utf8(d).unwrap())
        };
        let k = 60;
        // `INvC1a1f` is 8 bytes: tuple i starts at 8 + i, `p` at 8 + k;
        // each tuple holds the one inside it twice.
        let mut name = format!("_RINvC1a1f{}p", "T".repeat(k));
        for target in (9..=8 + k).rev() {
            name += &format!("B{}E", b62(target));
        }
        name += "E";
        let started = std::time::Instant::now();
        assert_eq!(shape(&name), None);
        assert_eq!(slow(&name), Some(Shape::of(&format!("{:#}", rustc_demangle::demangle(&name)))));
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
    }

    /// Random names from the v0 grammar (backrefs to earlier paths and
    /// types, binders, lifetimes, constants, some of them invalid):
    /// whatever the walk takes, it shapes as rustc_demangle prints.
    #[test]
    fn random_names_shape_as_rustc_demangle_prints_them() {
        let mut rnd = crate::testing::rng(0x3c6e_f372_fe94_f82b);
        let (mut taken, mut total) = (0, 0);
        for _ in 0..20_000 {
            let mut g = Gen { s: "_R".into(), paths: Vec::new(), types: Vec::new(), rnd: &mut rnd };
            g.path(4);
            if g.r(4) == 0 {
                g.path(1);
            }
            total += 1;
            if let Some(s) = shape(&g.s) {
                taken += 1;
                assert_eq!(Some(s), slow(&g.s), "{}: {:#}", g.s, rustc_demangle::demangle(&g.s));
            }
        }
        // Most are walked, not left to rustc_demangle.
        assert!(taken * 2 > total, "{taken} of {total}");
    }

    struct Gen<'a, F: FnMut(u64) -> u64> {
        s: String,
        paths: Vec<usize>,
        types: Vec<usize>,
        rnd: &'a mut F,
    }

    impl<F: FnMut(u64) -> u64> Gen<'_, F> {
        fn r(&mut self, n: u64) -> u64 {
            (self.rnd)(n)
        }

        fn b62(&mut self, v: u64) {
            if v == 0 {
                self.s.push('_');
                return;
            }
            let mut digits = Vec::new();
            let mut x = v - 1;
            loop {
                digits.push(b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"[(x % 62) as usize] as char);
                x /= 62;
                if x == 0 {
                    break;
                }
            }
            self.s.extend(digits.iter().rev());
            self.s.push('_');
        }

        /// `L` and a lifetime index (bound or not).
        fn lifetime(&mut self) {
            self.s.push('L');
            let v = self.r(3);
            self.b62(v);
        }

        /// Maybe a `for<...>` binder of a few lifetimes.
        fn binder(&mut self) {
            if self.r(2) == 0 {
                self.s.push('G');
                let v = self.r(3);
                self.b62(v);
            }
        }

        fn ident(&mut self) {
            let names = ["foo", "_bar", "x", "", "0digit", "Vec", "fmt", "__x"];
            let n = names[self.r(names.len() as u64) as usize];
            self.s.push_str(&n.len().to_string());
            if n.starts_with(|c: char| c.is_ascii_digit() || c == '_') || self.r(3) == 0 {
                self.s.push('_');
            }
            self.s.push_str(n);
        }

        fn dis(&mut self) {
            if self.r(3) == 0 {
                self.s.push('s');
                let v = self.r(70);
                self.b62(v);
            }
        }

        fn backref(&mut self, to: &[usize]) -> bool {
            if to.is_empty() || self.r(3) != 0 {
                return false;
            }
            let at = to[self.r(to.len() as u64) as usize] - 2;
            self.s.push('B');
            self.b62(at as u64);
            true
        }

        fn path(&mut self, depth: u32) {
            let start = self.s.len();
            let paths = self.paths.clone();
            if depth == 0 || self.r(5) == 0 {
                if !self.backref(&paths) {
                    self.s.push('C');
                    self.dis();
                    self.ident();
                }
            } else {
                match self.r(6) {
                    0 | 1 => {
                        self.s.push('N');
                        let ns = ['v', 't', 'C', 'S', 'Q'][self.r(5) as usize];
                        self.s.push(ns);
                        self.path(depth - 1);
                        self.dis();
                        self.ident();
                    }
                    2 => {
                        self.s.push('I');
                        self.path(depth - 1);
                        for _ in 0..self.r(3) + 1 {
                            self.generic_arg(depth - 1);
                        }
                        self.s.push('E');
                    }
                    3 => {
                        self.s.push('M');
                        self.dis();
                        self.path(depth - 1);
                        self.ty(depth - 1);
                    }
                    4 => {
                        self.s.push('X');
                        self.dis();
                        self.path(depth - 1);
                        self.ty(depth - 1);
                        self.path(depth - 1);
                    }
                    _ => {
                        self.s.push('Y');
                        self.ty(depth - 1);
                        self.path(depth - 1);
                    }
                }
            }
            self.paths.push(start);
        }

        fn generic_arg(&mut self, depth: u32) {
            match self.r(5) {
                0 => self.lifetime(),
                1 => {
                    self.s.push('K');
                    self.constant();
                }
                _ => self.ty(depth),
            }
        }

        fn constant(&mut self) {
            let consts = ["p", "j2a_", "hff_", "an7f_", "x_", "b0_", "b1_", "b2_", "o123456789abcdef0123_", "c61_", "e616263_", "m0000_"];
            let c = consts[self.r(consts.len() as u64) as usize];
            self.s.push_str(c);
        }

        fn ty(&mut self, depth: u32) {
            let start = self.s.len();
            let types = self.types.clone();
            if depth == 0 || self.r(4) == 0 {
                if !self.backref(&types) {
                    let basic = "bceuaslxnihtmyojfdzpv";
                    let i = self.r(basic.len() as u64) as usize;
                    self.s.push_str(&basic[i..i + 1]);
                }
            } else {
                match self.r(9) {
                    0 => {
                        let c = ['R', 'Q'][self.r(2) as usize];
                        self.s.push(c);
                        if self.r(2) == 0 {
                            self.lifetime();
                        }
                        self.ty(depth - 1);
                    }
                    1 => {
                        let c = ['P', 'O'][self.r(2) as usize];
                        self.s.push(c);
                        self.ty(depth - 1);
                    }
                    2 => {
                        self.s.push('A');
                        self.ty(depth - 1);
                        self.constant();
                    }
                    3 => {
                        self.s.push('S');
                        self.ty(depth - 1);
                    }
                    4 => {
                        self.s.push('T');
                        for _ in 0..self.r(3) {
                            self.ty(depth - 1);
                        }
                        self.s.push('E');
                    }
                    5 => {
                        self.s.push('F');
                        self.binder();
                        if self.r(2) == 0 {
                            self.s.push('U');
                        }
                        match self.r(3) {
                            0 => self.s.push_str("KC"),
                            1 => self.s.push_str("K4rust_call"),
                            _ => {}
                        }
                        for _ in 0..self.r(3) {
                            self.ty(depth - 1);
                        }
                        self.s.push('E');
                        if self.r(2) == 0 {
                            self.s.push('u');
                        } else {
                            self.ty(depth - 1);
                        }
                    }
                    6 => {
                        self.s.push('D');
                        self.binder();
                        for _ in 0..self.r(2) + 1 {
                            if self.r(2) == 0 {
                                self.s.push('I');
                                self.path(depth - 1);
                                self.generic_arg(depth - 1);
                                self.s.push('E');
                            } else {
                                self.path(depth - 1);
                            }
                            if self.r(2) == 0 {
                                self.s.push('p');
                                self.ident();
                                self.ty(depth - 1);
                            }
                        }
                        self.s.push('E');
                        self.lifetime();
                    }
                    _ => self.path(depth - 1),
                }
            }
            self.types.push(start);
        }
    }
}
