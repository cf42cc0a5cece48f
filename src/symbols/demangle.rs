//! perf's `demangle_sym` (`symbol-elf.c`): Rust (legacy and v0, shown
//! without the hash, like `{:#}` of rustc-demangle), then C++ as
//! `abi::__cxa_demangle` prints it (with parameters), then OCaml, then Java.
//! `None` means "print the name as it is".

pub fn demangle(name: &str) -> Option<String> {
    if let Some(d) = rust(name) {
        let s = format!("{d:#}");
        return (!s.is_empty()).then_some(s);
    }
    demangle_not_rust(name)
}

/// `rustc_demangle::try_demangle`, without trying where it must fail: it
/// takes a legacy name (`_ZN...E`) only when nothing follows the `E` but a
/// `.` suffix, and a v0 name only when it starts with `_R`, `R` or `__R`.
/// Most C++ names (`_ZN4llvm3fooEv`) are told apart without being parsed.
fn rust(name: &str) -> Option<rustc_demangle::Demangle<'_>> {
    let b = name.as_bytes();
    let may = b.ends_with(b"E") || b.starts_with(b"_R") || b.starts_with(b"R") || b.starts_with(b"__R") || b.contains(&b'.');
    may.then(|| rustc_demangle::try_demangle(name).ok()).flatten()
}

/// [`demangle`] for a name that is not Rust's.
fn demangle_not_rust(name: &str) -> Option<String> {
    if let Some(s) = cxx(name) {
        return Some(s);
    }
    if let Some(s) = ocaml(name) {
        return Some(s);
    }
    java(name)
}

pub use super::shape::Shape;

/// [`Shape::of`] the [`demangle`]d name, without making it when the
/// demangler can stream it (Rust names).
pub fn demangled_shape(name: &str) -> Option<Shape> {
    if let Some(shape) = super::rust_v0::shape(name) {
        return (shape.len > 0).then_some(shape);
    }
    if let Some(d) = rust(name) {
        let mut shape = Shape::default();
        let _ = std::fmt::Write::write_fmt(&mut shape, format_args!("{d:#}"));
        return (shape.len > 0).then_some(shape);
    }
    demangle_not_rust(name).map(|s| Shape::of(&s))
}

/// `abi::__cxa_demangle(name)`, which perf calls for everything that is
/// not Rust: `_Z` encodings, `_GLOBAL_[._$][ID]_` constructors and
/// destructors, and bare type encodings (a symbol named `i` is "int").
/// Reimplemented (module `itanium`) rather than called: the output must
/// not depend on the machine's C++ runtime, and there is no C at run time.
pub fn cxx(name: &str) -> Option<String> {
    super::itanium::demangle(name)
}

/// perf's `ocaml_demangle_sym`.
fn ocaml(sym: &str) -> Option<String> {
    let b = sym.as_bytes();
    if !(b.starts_with(b"caml") && b.len() > 4 && b[4].is_ascii_uppercase()) {
        return None;
    }
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    let mut i = 4;
    while i < b.len() {
        if b[i] == b'_' && b.get(i + 1) == Some(&b'_') {
            out.push(b'.');
            i += 2;
        } else if b[i] == b'$' && b.get(i + 1).is_some_and(u8::is_ascii_hexdigit) && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit) {
            let h = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
            out.push(h(b[i + 1]) << 4 | h(b[i + 2]));
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    let mut j = out.len();
    if j != 0 && out[j - 1].is_ascii_digit() {
        loop {
            j -= 1;
            if j == 0 || !out[j].is_ascii_digit() {
                break;
            }
        }
        if out[j] == b'_' {
            out.truncate(j);
        }
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// perf's `java_demangle_sym(str, JAVA_DEMANGLE_NORET)`.
fn java(sym: &str) -> Option<String> {
    #[derive(PartialEq, Clone, Copy)]
    enum Mode {
        Prefix,
        Class,
        Func,
        Type,
        CType,
    }
    let b = sym.as_bytes();
    let end = b.iter().rposition(|&c| c == b')')?;
    let base = |c: u8| -> Option<&'static str> {
        Some(match c {
            b'B' => "byte",
            b'C' => "char",
            b'D' => "double",
            b'F' => "float",
            b'I' => "int",
            b'J' => "long",
            b'S' => "short",
            b'Z' => "boolean",
            _ => return None,
        })
    };
    let maxlen = b.len() * 3 + 1;
    let mut out: Vec<u8> = Vec::new();
    let mut mode = Mode::Prefix;
    let (mut array, mut narg) = (0i32, 0);
    let mut q = 0;
    while q != end + 1 {
        if out.len() == maxlen - 1 {
            break;
        }
        let c = b[q];
        match c {
            b'L' => {
                if mode == Mode::Prefix || mode == Mode::Type {
                    if mode == Mode::Type {
                        if narg > 0 {
                            out.extend_from_slice(b", ");
                        }
                        narg += 1;
                    }
                    mode = if mode == Mode::Prefix { Mode::Class } else { Mode::CType };
                } else {
                    out.push(c);
                }
            }
            b'B' | b'C' | b'D' | b'F' | b'I' | b'J' | b'S' | b'Z' => {
                if mode == Mode::Type {
                    if narg > 0 {
                        out.extend_from_slice(b", ");
                    }
                    out.extend_from_slice(base(c)?.as_bytes());
                    while array > 0 {
                        out.extend_from_slice(b"[]");
                        array -= 1;
                    }
                    array = 0;
                    narg += 1;
                } else {
                    out.push(c);
                }
            }
            b'V' => {
                if mode == Mode::Type {
                    out.extend_from_slice(b"void");
                    while array > 0 {
                        out.extend_from_slice(b"[]");
                        array -= 1;
                    }
                    array = 0;
                } else {
                    out.push(c);
                }
            }
            b'[' => {
                if mode != Mode::Type {
                    return None;
                }
                array += 1;
            }
            b'(' => {
                if mode != Mode::Func {
                    return None;
                }
                out.push(c);
                mode = Mode::Type;
            }
            b')' => {
                if mode != Mode::Type {
                    return None;
                }
                out.push(c);
                narg = 0;
            }
            b';' => {
                if mode != Mode::Class && mode != Mode::CType {
                    return None;
                }
                if mode == Mode::Class && b.get(q + 1).is_some_and(u8::is_ascii_alphabetic) {
                    out.push(b'.');
                }
                if mode == Mode::Class {
                    mode = Mode::Func;
                } else if mode == Mode::CType {
                    mode = Mode::Type;
                }
            }
            b'/' => {
                if mode != Mode::Class && mode != Mode::CType {
                    return None;
                }
                out.push(b'.');
            }
            _ => out.push(c),
        }
        q += 1;
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The alias choice sees of a demangled name what the name shows.
    #[test]
    fn shapes_follow_the_demangled_names() {
        let names = [
            "_ZN8rustwork9histogram17h0123456789abcdefE",
            "_RNvNtCs1234_3std2rt10lang_start",
            "_ZN4core3ptr85drop_in_place$LT$std..rt..lang_start$LT$$LP$$RP$$GT$..$u7b$$u7b$closure$u7d$$u7d$$GT$17h1234567890abcdefE",
            "_ZN5__foo3bar17h0123456789abcdefE",
            "_ZN3sim5World6energyEv",
            "_ZNSt10_Head_baseILm0ERKiLb0EE7_M_headERS2_",
            "i",
            "main",
            "__libc_start_main",
            "_R",
        ];
        for n in names {
            assert_eq!(demangled_shape(n), demangle(n).map(|d| Shape::of(&d)), "{n}");
        }
        let shape = Shape::of("__SyS_read");
        assert_eq!((shape.len, shape.underscores), (10, 2));
        assert!(shape.starts_with("__SyS") && !shape.starts_with("SyS"));
        assert!(Shape::of("compat_SyS_x").starts_with("compat_SyS"));
        assert!(!Shape::of("Sy").starts_with("SyS"));
        assert_eq!(Shape::of("___").underscores, 3);
    }

    #[test]
    fn rust_without_hash() {
        assert_eq!(demangle("_ZN8rustwork9histogram17h0123456789abcdefE").as_deref(), Some("rustwork::histogram"));
        assert_eq!(demangle("_RNvNtCs1234_3std2rt10lang_start").as_deref(), Some("std::rt::lang_start"));
    }

    #[test]
    fn cxx_with_params() {
        assert_eq!(demangle("_ZN3sim5World6energyEv").as_deref(), Some("sim::World::energy()"));
        assert_eq!(demangle("_ZNK3sim5World6energyEv").as_deref(), Some("sim::World::energy() const"));
        assert_eq!(demangle("i").as_deref(), Some("int"));
        assert_eq!(demangle("main"), None);
        assert_eq!(demangle("__sort<int>"), None);
        assert_eq!(demangle("operator()"), None);
    }

    #[test]
    fn libiberty_spellings() {
        // As perf prints them through libstdc++'s __cxa_demangle.
        assert_eq!(
            demangle("_ZNSt10_Head_baseILm0ERKiLb0EE7_M_headERS2_").as_deref(),
            Some("std::_Head_base<0ul, int const&, false>::_M_head(std::_Head_base<0ul, int const&, false>&)")
        );
        // g++'s `sr St ...`, from tests/golden/cpp.
        assert_eq!(
            demangle("_ZSt4swapIN3sim8ParticleEENSt9enable_ifIXsrSt6__and_IJSt6__not_ISt15__is_tuple_likeIT_EESt21is_move_constructibleIS6_ESt18is_move_assignableIS6_EEE5valueEvE4typeERS6_SG_").as_deref(),
            Some("std::enable_if<std::__and_<std::__not_<std::__is_tuple_like<sim::Particle> >, std::is_move_constructible<sim::Particle>, std::is_move_assignable<sim::Particle> >::value, void>::type std::swap<sim::Particle>(sim::Particle&, sim::Particle&)")
        );
    }

    #[test]
    fn libiberty_output() {
        // Each expectation is what libiberty prints (c++filt, and perf
        // through __cxa_demangle).
        for (mangled, want) in [
            // pending `*` not taken by a nested-name prefix
            (
                "_ZN4llvm10FoldingSetIN12_GLOBAL__N_120FoldingNodeAllocator10NodeHeaderEE10NodeEqualsEPKNS_14FoldingSetBaseEPNS5_4NodeERKNS_16FoldingSetNodeIDEjRSA_",
                "llvm::FoldingSet<(anonymous namespace)::FoldingNodeAllocator::NodeHeader>::NodeEquals(llvm::FoldingSetBase const*, llvm::FoldingSetBase::Node*, llvm::FoldingSetNodeID const&, unsigned int, llvm::FoldingSetNodeID&)",
            ),
            // pack expansions: per element, nothing for an empty pack
            ("_Z1fIJEEvDpOT_", "void f<>()"),
            ("_Z1fIJicEEvDpOT_", "void f<int, char>(int&&, char&&)"),
            ("_Z1fIiJEEvT_DpOT0_", "void f<int>(int)"),
            // empty packs in template arguments, and libiberty's stale ' '
            ("_ZN1AIiJEE1fEv", "A<int>::f()"),
            ("_ZN1BIN1AIiJEEEJEE1fEv", "B<A<int>>::f()"),
            // clone suffixes as d_clone_suffix takes them
            ("_Z3foov.llvm.12840869331085312698", "foo() [clone .llvm.12840869331085312698]"),
            ("_Z3foov.cold", "foo() [clone .cold]"),
            // local names: the function without its return type
            ("_ZZ1fIiEvvE1x", "f<int>()::x"),
            // function types: a space before the parameters
            ("_Z1fSt8functionIFiiEE", "f(std::function<int (int)>)"),
        ] {
            assert_eq!(demangle(mangled).as_deref(), Some(want), "{mangled}");
        }
    }

    #[test]
    fn ocaml_and_java() {
        assert_eq!(demangle("camlStdlib__list__map_123").as_deref(), Some("Stdlib.list.map"));
        assert_eq!(demangle("Ljava/lang/Object;equals(Ljava/lang/Object;)Z").as_deref(), Some("java.lang.Object.equals(java.lang.Object)"));
    }

    /// The shortcut past rustc_demangle never skips a name it takes: the
    /// symbols of the fixture programs and libraries, and random names
    /// built from the pieces its two grammars turn on.
    #[test]
    fn rust_names_are_tried_whenever_rustc_demangle_takes_them() {
        let same = |name: &str| assert_eq!(rust(name).is_some(), rustc_demangle::try_demangle(name).is_ok(), "{name:?}");
        let symfs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/symfs");
        let mut files = 0;
        for f in ["tmp/pstitch-fixtures/bin/rustwork", "tmp/pstitch-fixtures/bin/cppwork", "usr/lib/x86_64-linux-gnu/libc.so.6"] {
            let data = std::fs::read(symfs.join(f)).expect("fixture");
            let file = object::File::parse(&*data).expect("ELF");
            use object::{Object, ObjectSymbol};
            for sym in file.symbols().chain(file.dynamic_symbols()) {
                same(sym.name().unwrap_or(""));
            }
            files += 1;
        }
        assert_eq!(files, 3);
        let pieces = ["_ZN", "ZN", "__ZN", "_R", "R", "__R", "3foo", "1a", "17h0123456789abcdef", "E", "Ev", ".llvm.A1", ".llvm.x", ".cold", ".", "I", "Nv", "C", "s_", "$LT$", "u"];
        let mut rnd = crate::testing::rng(0x6a09_e667_f3bc_c908);
        for _ in 0..50_000 {
            let name: String = (0..1 + rnd(6)).map(|_| pieces[rnd(pieces.len() as u64) as usize]).collect();
            same(&name);
        }
    }
}
