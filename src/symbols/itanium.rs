//! C++ names as libstdc++'s `abi::__cxa_demangle` prints them, which is
//! what perf shows for every symbol its Rust demangler does not take.
//!
//! `__cxa_demangle` is libiberty's Itanium-ABI demangler (`cp-demangle.c`)
//! run with `DMGL_PARAMS | DMGL_TYPES`. This module follows the same two
//! steps, written anew in Rust: the name is parsed into a tree of
//! components (with the ABI's substitution table), then the tree is printed
//! with libiberty's stack of pending type modifiers and template scopes.
//! Byte-identical output is the goal, quirks included; comments name the
//! spellings and rules that matter for that. `None` means `__cxa_demangle`
//! fails and perf prints the raw name.
//!
//! What the options imply:
//! - `DMGL_PARAMS`: function parameters are printed, clone suffixes
//!   (`.cold`, `.llvm.123`) are taken after a function encoding, and the
//!   whole string must be consumed (a data name with a clone suffix fails).
//! - `DMGL_TYPES`: a string that is neither `_Z...` nor `_GLOBAL_[._$][ID]_`
//!   is parsed as a bare type (a symbol `Pi` reads "int*").
//! - no `DMGL_NO_RECURSE_LIMIT`: strings over 1024 bytes fail, and so do
//!   function types nested over 2048 deep and trees printed over 1024 deep.

type Id = u32;
type P = Option<Id>;

/// libiberty's `DEMANGLE_RECURSION_LIMIT`.
const RECURSION_LIMIT: usize = 2048;
/// libiberty's `MAX_RECURSION_COUNT` (printing depth).
const MAX_PRINT_DEPTH: i32 = 1024;
/// The longest name printed. libiberty has no limit of its own: its output
/// grows until `realloc` fails, and `__cxa_demangle` then returns NULL (so
/// perf prints the mangled name). A name of at most 1,024 bytes whose
/// substitutions nest (`S_IS0_S0_E`, again and again) doubles its output
/// with every level: 32 levels ask for ~36 GB, which perf-ref, with the
/// memory of this machine, gives up on after 16 GB and two minutes. The
/// longest names real programs have are a few KB (8.4 KB, 28 times its
/// 613-byte mangled form, among the 247,604 `_Z` symbols of a Debian
/// system with LLVM), so here the line is drawn at 64 KiB: a longer name
/// fails as if memory had run out, at once.
const MAX_OUTPUT: usize = 64 << 10;
/// Components printed for one name at most: the same bound for the work
/// (substitutions that nest over parts that print nothing would spend
/// exponential time without output).
const MAX_PRINT_CALLS: u32 = 1 << 20;

/// Demangles `mangled` as `abi::__cxa_demangle` does; `None` when it fails.
pub fn demangle(mangled: &str) -> Option<String> {
    let s = mangled.as_bytes();
    let what = if s.starts_with(b"_Z") {
        What::Mangled
    } else if s.len() >= 11 && s.starts_with(b"_GLOBAL_") && matches!(s[8], b'.' | b'_' | b'$') && matches!(s[9], b'D' | b'I') && s[10] == b'_' {
        if s[9] == b'I' { What::GlobalCtors } else { What::GlobalDtors }
    } else {
        What::Type
    };
    // The component array holds 2 components per input byte, and libiberty
    // refuses arrays over its recursion limit.
    if 2 * s.len() > RECURSION_LIMIT {
        return None;
    }
    // `sr <prefix>` is first read with the newer grammar; if the whole name
    // then fails, it is read again with the older one (d_unresolved_name).
    let mut unresolved_name_state = 1;
    loop {
        let mut p = Parser::new(s, unresolved_name_state);
        let mut dc = match what {
            What::Type => p.ty(),
            What::Mangled => p.mangled_name(true),
            What::GlobalCtors | What::GlobalDtors => {
                p.advance(11);
                let inner = p.demangle_mangled_name_rest();
                let k = if what == What::GlobalCtors { K::GlobalConstructors } else { K::GlobalDestructors };
                let g = p.make(k, inner, None);
                // Whatever follows the keyed encoding is ignored.
                p.n = s.len();
                g
            }
        };
        if p.peek() != 0 {
            dc = None;
        }
        if dc.is_none() && p.unresolved_name_state == -1 {
            unresolved_name_state = 0;
            continue;
        }
        let dc = dc?;
        return Printer::new(&mut p.nodes, s).run(dc);
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum What {
    Type,
    Mangled,
    GlobalCtors,
    GlobalDtors,
}

/// Component kinds, libiberty's `demangle_component_type`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum K {
    Name,
    QualName,
    LocalName,
    TypedName,
    Template,
    TemplateParam,
    FunctionParam,
    Ctor,
    Dtor,
    Vtable,
    Vtt,
    ConstructionVtable,
    Typeinfo,
    TypeinfoName,
    TypeinfoFn,
    Thunk,
    VirtualThunk,
    CovariantThunk,
    JavaClass,
    Guard,
    TlsInit,
    TlsWrapper,
    Reftemp,
    HiddenAlias,
    SubStd,
    Restrict,
    Volatile,
    Const,
    RestrictThis,
    VolatileThis,
    ConstThis,
    ReferenceThis,
    RvalueReferenceThis,
    XobjMemberFunction,
    TransactionSafe,
    Noexcept,
    ThrowSpec,
    VendorTypeQual,
    Pointer,
    Reference,
    RvalueReference,
    Complex,
    Imaginary,
    BuiltinType,
    ExtendedBuiltinType,
    VendorType,
    FunctionType,
    ArrayType,
    PtrmemType,
    VectorType,
    Arglist,
    TemplateArglist,
    TparmObj,
    InitializerList,
    Operator,
    ExtendedOperator,
    Cast,
    Conversion,
    Nullary,
    Unary,
    Binary,
    BinaryArgs,
    Trinary,
    TrinaryArg1,
    TrinaryArg2,
    Literal,
    LiteralNeg,
    VendorExpr,
    JavaResource,
    CompoundName,
    Character,
    Number,
    Decltype,
    GlobalConstructors,
    GlobalDestructors,
    Lambda,
    PackExpansion,
    TaggedName,
    TransactionClone,
    NontransactionClone,
    DefaultArg,
    UnnamedType,
    Clone,
    StructuredBinding,
    ModuleName,
    ModulePartition,
    ModuleEntity,
    ModuleInit,
    TemplateHead,
    TemplateTypeParm,
    TemplateNonTypeParm,
    TemplateTemplateParm,
    TemplatePackParm,
    Friend,
    Constraints,
}

/// Qualifiers of a function type (they apply to `this`), printed after the
/// parameter list.
fn is_fnqual(k: K) -> bool {
    matches!(
        k,
        K::RestrictThis | K::VolatileThis | K::ConstThis | K::ReferenceThis | K::RvalueReferenceThis | K::XobjMemberFunction | K::TransactionSafe | K::Noexcept | K::ThrowSpec
    )
}

#[derive(Clone, Copy)]
enum Text {
    None,
    Input(u32, u32),
    Static(&'static str),
}

/// One component. `l` and `r` are libiberty's left and right subtrees (the
/// name of a ctor/dtor/vendor operator and the body of a lambda or default
/// argument scope are kept in `l`); `num` holds numbers, table indices,
/// ctor/dtor kinds and characters.
#[derive(Clone, Copy)]
struct Node {
    k: K,
    l: P,
    r: P,
    num: i32,
    text: Text,
}

/// How a builtin type prints as a literal's type.
#[derive(Clone, Copy, PartialEq, Eq)]
enum LitStyle {
    Default,
    Int,
    Unsigned,
    Long,
    UnsignedLong,
    LongLong,
    UnsignedLongLong,
    Bool,
    Float,
    Void,
}

/// The builtin types: `a`..`z` by letter, then the `D` codes.
const BUILTINS: [(&str, LitStyle); 36] = [
    ("signed char", LitStyle::Default),
    ("bool", LitStyle::Bool),
    ("char", LitStyle::Default),
    ("double", LitStyle::Float),
    ("long double", LitStyle::Float),
    ("float", LitStyle::Float),
    ("__float128", LitStyle::Float),
    ("unsigned char", LitStyle::Default),
    ("int", LitStyle::Int),
    ("unsigned int", LitStyle::Unsigned),
    ("", LitStyle::Default),
    ("long", LitStyle::Long),
    ("unsigned long", LitStyle::UnsignedLong),
    ("__int128", LitStyle::Default),
    ("unsigned __int128", LitStyle::Default),
    ("", LitStyle::Default),
    ("", LitStyle::Default),
    ("", LitStyle::Default),
    ("short", LitStyle::Default),
    ("unsigned short", LitStyle::Default),
    ("", LitStyle::Default),
    ("void", LitStyle::Void),
    ("wchar_t", LitStyle::Default),
    ("long long", LitStyle::LongLong),
    ("unsigned long long", LitStyle::UnsignedLongLong),
    ("...", LitStyle::Default),
    ("decimal32", LitStyle::Default),
    ("decimal64", LitStyle::Default),
    ("decimal128", LitStyle::Default),
    ("half", LitStyle::Float),
    ("char8_t", LitStyle::Default),
    ("char16_t", LitStyle::Default),
    ("char32_t", LitStyle::Default),
    ("decltype(nullptr)", LitStyle::Default),
    ("_Float", LitStyle::Float),
    ("std::bfloat16_t", LitStyle::Float),
];
const BUILTIN_NULLPTR: i32 = 33;
const BUILTIN_FLOAT_N: i32 = 34;

/// Operators: code, spelling, operand count. A spelling that is a word
/// ends in a space (`sizeof `), dropped after `operator`.
const OPERATORS: &[(&[u8; 2], &str, i32)] = &[
    (b"aN", "&=", 2),
    (b"aS", "=", 2),
    (b"aa", "&&", 2),
    (b"ad", "&", 1),
    (b"an", "&", 2),
    (b"at", "alignof ", 1),
    (b"aw", "co_await ", 1),
    (b"az", "alignof ", 1),
    (b"cc", "const_cast", 2),
    (b"cl", "()", 2),
    (b"cm", ",", 2),
    (b"co", "~", 1),
    (b"dV", "/=", 2),
    (b"dX", "[...]=", 3),
    (b"da", "delete[] ", 1),
    (b"dc", "dynamic_cast", 2),
    (b"de", "*", 1),
    (b"di", "=", 2),
    (b"dl", "delete ", 1),
    (b"ds", ".*", 2),
    (b"dt", ".", 2),
    (b"dv", "/", 2),
    (b"dx", "]=", 2),
    (b"eO", "^=", 2),
    (b"eo", "^", 2),
    (b"eq", "==", 2),
    (b"fL", "...", 3),
    (b"fR", "...", 3),
    (b"fl", "...", 2),
    (b"fr", "...", 2),
    (b"ge", ">=", 2),
    (b"gs", "::", 1),
    (b"gt", ">", 2),
    (b"ix", "[]", 2),
    (b"lS", "<<=", 2),
    (b"le", "<=", 2),
    (b"li", "operator\"\" ", 1),
    (b"ls", "<<", 2),
    (b"lt", "<", 2),
    (b"mI", "-=", 2),
    (b"mL", "*=", 2),
    (b"mi", "-", 2),
    (b"ml", "*", 2),
    (b"mm", "--", 1),
    (b"na", "new[]", 3),
    (b"ne", "!=", 2),
    (b"ng", "-", 1),
    (b"nt", "!", 1),
    (b"nw", "new", 3),
    (b"nx", "noexcept", 1),
    (b"oR", "|=", 2),
    (b"oo", "||", 2),
    (b"or", "|", 2),
    (b"pL", "+=", 2),
    (b"pl", "+", 2),
    (b"pm", "->*", 2),
    (b"pp", "++", 1),
    (b"ps", "+", 1),
    (b"pt", "->", 2),
    (b"qu", "?", 3),
    (b"rM", "%=", 2),
    (b"rS", ">>=", 2),
    (b"rc", "reinterpret_cast", 2),
    (b"rm", "%", 2),
    (b"rs", ">>", 2),
    (b"sP", "sizeof...", 1),
    (b"sZ", "sizeof...", 1),
    (b"sc", "static_cast", 2),
    (b"ss", "<=>", 2),
    (b"st", "sizeof ", 1),
    (b"sz", "sizeof ", 1),
    (b"tr", "throw", 0),
    (b"tw", "throw ", 1),
];

fn operator(i: i32) -> (&'static [u8; 2], &'static str, i32) {
    OPERATORS[i as usize]
}

fn find_operator(c1: u8, c2: u8) -> Option<i32> {
    OPERATORS.iter().position(|o| *o.0 == [c1, c2]).map(|i| i as i32)
}

/// The standard substitutions: code, plain spelling, spelling before a
/// constructor or destructor (the full template), and the name such a
/// constructor takes.
const STANDARD_SUBS: [(u8, &str, &str, Option<&str>); 7] = [
    (b't', "std", "std", None),
    (b'a', "std::allocator", "std::allocator", Some("allocator")),
    (b'b', "std::basic_string", "std::basic_string", Some("basic_string")),
    (b's', "std::string", "std::basic_string<char, std::char_traits<char>, std::allocator<char> >", Some("basic_string")),
    (b'i', "std::istream", "std::basic_istream<char, std::char_traits<char> >", Some("basic_istream")),
    (b'o', "std::ostream", "std::basic_ostream<char, std::char_traits<char> >", Some("basic_ostream")),
    (b'd', "std::iostream", "std::basic_iostream<char, std::char_traits<char> >", Some("basic_iostream")),
];

// ---------------------------------------------------------------- parsing

struct Parser<'a> {
    s: &'a [u8],
    n: usize,
    nodes: Vec<Node>,
    max_nodes: usize,
    subs: Vec<Id>,
    max_subs: usize,
    /// The last source name (or standard substitution) seen: the name a
    /// following `C1`/`D1` constructs or destroys.
    last_name: P,
    is_expression: bool,
    is_conversion: bool,
    recursion_level: usize,
    unresolved_name_state: i32,
}

fn is_digit(c: u8) -> bool {
    c.is_ascii_digit()
}
fn is_lower(c: u8) -> bool {
    c.is_ascii_lowercase()
}
fn is_upper(c: u8) -> bool {
    c.is_ascii_uppercase()
}

impl<'a> Parser<'a> {
    fn new(s: &'a [u8], unresolved_name_state: i32) -> Self {
        Parser {
            s,
            n: 0,
            nodes: Vec::with_capacity(s.len()),
            max_nodes: 2 * s.len(),
            subs: Vec::new(),
            max_subs: s.len(),
            last_name: None,
            is_expression: false,
            is_conversion: false,
            recursion_level: 0,
            unresolved_name_state,
        }
    }

    fn peek(&self) -> u8 {
        self.s.get(self.n).copied().unwrap_or(0)
    }
    fn peek_next(&self) -> u8 {
        self.s.get(self.n + 1).copied().unwrap_or(0)
    }
    fn advance(&mut self, i: usize) {
        self.n = (self.n + i).min(self.s.len());
    }
    fn next_char(&mut self) -> u8 {
        let c = self.peek();
        if c != 0 {
            self.n += 1;
        }
        c
    }
    fn check(&mut self, c: u8) -> bool {
        if self.peek() == c {
            self.n += 1;
            true
        } else {
            false
        }
    }

    fn k(&self, id: Id) -> K {
        self.nodes[id as usize].k
    }
    fn l(&self, id: Id) -> P {
        self.nodes[id as usize].l
    }
    fn r(&self, id: Id) -> P {
        self.nodes[id as usize].r
    }
    fn set_l(&mut self, id: Id, v: P) {
        self.nodes[id as usize].l = v;
    }
    fn set_r(&mut self, id: Id, v: P) {
        self.nodes[id as usize].r = v;
    }

    fn push(&mut self, node: Node) -> P {
        if self.nodes.len() >= self.max_nodes {
            return None;
        }
        self.nodes.push(node);
        Some((self.nodes.len() - 1) as Id)
    }

    fn leaf(&mut self, k: K, num: i32, text: Text) -> P {
        self.push(Node { k, l: None, r: None, num, text })
    }

    /// `d_make_comp`: a composite component, refused when a required
    /// subtree is missing (which is how most parse failures propagate).
    fn make(&mut self, k: K, l: P, r: P) -> P {
        use K::*;
        let ok = match k {
            QualName | LocalName | TypedName | TaggedName | Template | ConstructionVtable | VendorTypeQual | PtrmemType | Unary | Binary | BinaryArgs | Trinary | TrinaryArg1
            | Literal | LiteralNeg | VendorExpr | CompoundName | VectorType | Clone | ModuleEntity | Constraints => l.is_some() && r.is_some(),
            Vtable | Vtt | Typeinfo | TypeinfoName | TypeinfoFn | Thunk | VirtualThunk | CovariantThunk | JavaClass | Guard | TlsInit | TlsWrapper | Reftemp | HiddenAlias
            | TransactionClone | NontransactionClone | Pointer | Reference | RvalueReference | Complex | Imaginary | VendorType | Cast | Conversion | JavaResource | Decltype
            | PackExpansion | GlobalConstructors | GlobalDestructors | Nullary | TrinaryArg2 | TparmObj | StructuredBinding | ModuleInit | TemplateHead
            | TemplateNonTypeParm | TemplateTemplateParm | TemplatePackParm | Friend => l.is_some(),
            ArrayType | InitializerList | ModuleName | ModulePartition => r.is_some(),
            FunctionType | Restrict | Volatile | Const | Arglist | TemplateArglist | TemplateTypeParm => true,
            _ if is_fnqual(k) => true,
            _ => false,
        };
        if !ok {
            return None;
        }
        self.push(Node { k, l, r, num: 0, text: Text::None })
    }

    /// A name from the input; empty names are refused.
    fn name_at(&mut self, start: usize, len: usize) -> P {
        if len == 0 {
            return None;
        }
        self.leaf(K::Name, 0, Text::Input(start as u32, len as u32))
    }

    fn static_name(&mut self, s: &'static str) -> P {
        self.leaf(K::Name, 0, Text::Static(s))
    }

    fn add_sub(&mut self, dc: P) -> bool {
        match dc {
            Some(d) if self.subs.len() < self.max_subs => {
                self.subs.push(d);
                true
            }
            _ => false,
        }
    }

    /// `<mangled-name> ::= _Z <encoding> [<clone-suffix>]*`
    fn mangled_name(&mut self, top_level: bool) -> P {
        // A missing `_` is allowed inside expressions (an old g++ bug).
        if !self.check(b'_') && top_level {
            return None;
        }
        if !self.check(b'Z') {
            return None;
        }
        let mut p = self.encoding(top_level);
        if top_level {
            while self.peek() == b'.' && {
                let c = self.peek_next();
                is_lower(c) || c == b'_' || is_digit(c)
            } {
                p = self.clone_suffix(p);
            }
        }
        p
    }

    /// The rest of a `_GLOBAL__I_` name: an encoding, or else a plain name.
    fn demangle_mangled_name_rest(&mut self) -> P {
        if self.peek() != b'_' || self.peek_next() != b'Z' {
            let start = self.n;
            return self.name_at(start, self.s.len() - start);
        }
        self.advance(2);
        self.encoding(false)
    }

    fn has_return_type(&self, dc: P) -> bool {
        let Some(d) = dc else { return false };
        match self.k(d) {
            K::LocalName => self.has_return_type(self.r(d)),
            K::Template => !self.is_ctor_dtor_or_conversion(self.l(d)),
            k if is_fnqual(k) => self.has_return_type(self.l(d)),
            _ => false,
        }
    }

    fn is_ctor_dtor_or_conversion(&self, dc: P) -> bool {
        let Some(d) = dc else { return false };
        match self.k(d) {
            K::QualName | K::LocalName => self.is_ctor_dtor_or_conversion(self.r(d)),
            K::Ctor | K::Dtor | K::Conversion => true,
            _ => false,
        }
    }

    /// `[Q <constraint-expression>]`
    fn maybe_constraints(&mut self, dc: P) -> P {
        if self.peek() == b'Q' {
            self.advance(1);
            let expr = self.expression()?;
            return self.make(K::Constraints, dc, Some(expr));
        }
        dc
    }

    /// `<encoding> ::= <function name> <bare-function-type> | <data name> | <special-name>`
    fn encoding(&mut self, top_level: bool) -> P {
        let peek = self.peek();
        if peek == b'G' || peek == b'T' {
            return self.special_name();
        }
        let dc = self.name(false)?;
        let peek = self.peek();
        if peek == 0 || peek == b'E' {
            return Some(dc);
        }
        // Anything else must be a function's parameters (a `.suffix` after
        // a data name is not, so such names fail).
        let has_ret = self.has_return_type(Some(dc));
        let ftype = self.bare_function_type(has_ret)?;
        // A local name's function does not show its return type.
        if !top_level && self.k(dc) == K::LocalName && self.k(ftype) == K::FunctionType {
            self.set_l(ftype, None);
        }
        let ftype = self.maybe_constraints(Some(ftype));
        self.make(K::TypedName, Some(dc), ftype)
    }

    /// `<name> B <source-name>`...; the tags do not change the last name.
    fn abi_tags(&mut self, mut dc: P) -> P {
        let hold = self.last_name;
        while self.peek() == b'B' {
            self.advance(1);
            let tag = self.source_name();
            dc = self.make(K::TaggedName, dc, tag);
        }
        self.last_name = hold;
        dc
    }

    /// `<name>`: nested, local, unscoped (maybe `St`), or an unscoped
    /// template name with its arguments.
    fn name(&mut self, substable: bool) -> P {
        let mut dc: P = None;
        let mut module: P = None;
        let mut subst = false;
        match self.peek() {
            b'N' => dc = self.nested_name(),
            b'Z' => dc = self.local_name(),
            b'U' => dc = self.unqualified_name(None, None),
            c => {
                if c == b'S' {
                    if self.peek_next() == b't' {
                        self.advance(2);
                        dc = self.static_name("std");
                    }
                    if self.peek() == b'S' {
                        let m = self.substitution(false)?;
                        if !matches!(self.k(m), K::ModuleName | K::ModulePartition) {
                            if dc.is_some() {
                                return None;
                            }
                            subst = true;
                            dc = Some(m);
                        } else {
                            module = Some(m);
                        }
                    }
                }
                if !subst {
                    dc = self.unqualified_name(dc, module);
                }
                if self.peek() == b'I' {
                    // An <unscoped-template-name>: a substitution candidate.
                    if !subst && !self.add_sub(dc) {
                        return None;
                    }
                    let args = self.template_args();
                    dc = self.make(K::Template, dc, args);
                    subst = false;
                }
            }
        }
        if substable && !subst && !self.add_sub(dc) {
            return None;
        }
        dc
    }

    /// `N [<CV-qualifiers>] [<ref-qualifier>] <prefix> E`, or `N H ... E`
    /// (explicit object member function).
    fn nested_name(&mut self) -> P {
        if !self.check(b'N') {
            return None;
        }
        let (head, slot, rqual);
        if self.peek() == b'H' {
            self.advance(1);
            head = None;
            slot = None;
            rqual = self.make(K::XobjMemberFunction, None, None);
        } else {
            (head, slot) = self.cv_qualifiers(true)?;
            rqual = self.ref_qualifier(None);
        }
        let inner = self.prefix(true)?;
        let mut ret = match slot {
            Some(q) => {
                self.set_l(q, Some(inner));
                head
            }
            None => Some(inner),
        };
        if let Some(rq) = rqual {
            self.set_l(rq, ret);
            ret = Some(rq);
        }
        if !self.check(b'E') {
            return None;
        }
        ret
    }

    /// `<prefix>`: the scopes of a nested name, each one a substitution
    /// candidate (unless `substable` is off, in an unresolved name).
    fn prefix(&mut self, substable: bool) -> P {
        let mut ret: P = None;
        loop {
            let peek = self.peek();
            if peek == b'D' && matches!(self.peek_next(), b'T' | b't') {
                if ret.is_some() {
                    return None;
                }
                ret = self.ty();
            } else if peek == b'I' {
                ret?;
                let args = self.template_args()?;
                ret = self.make(K::Template, ret, Some(args));
            } else if peek == b'T' {
                if ret.is_some() {
                    return None;
                }
                ret = self.template_param();
            } else if peek == b'M' {
                // Initializer scope of a lambda, already a candidate.
                self.advance(1);
                continue;
            } else {
                let mut module = None;
                if peek == b'S' {
                    let m = self.substitution(true)?;
                    if !matches!(self.k(m), K::ModuleName | K::ModulePartition) {
                        if ret.is_some() {
                            return None;
                        }
                        ret = Some(m);
                        continue;
                    }
                    module = Some(m);
                }
                ret = self.unqualified_name(ret, module);
            }
            if ret.is_none() || self.peek() == b'E' {
                break;
            }
            if substable && !self.add_sub(ret) {
                return None;
            }
        }
        ret
    }

    fn maybe_module_name(&mut self, name: &mut P) -> bool {
        while self.peek() == b'W' {
            self.advance(1);
            let mut code = K::ModuleName;
            if self.peek() == b'P' {
                code = K::ModulePartition;
                self.advance(1);
            }
            let sn = self.source_name();
            *name = self.make(code, *name, sn);
            if name.is_none() || !self.add_sub(*name) {
                return false;
            }
        }
        true
    }

    /// `<unqualified-name>`, qualified by `scope` when given.
    fn unqualified_name(&mut self, scope: P, mut module: P) -> P {
        if !self.maybe_module_name(&mut module) {
            return None;
        }
        let mut peek = self.peek();
        let mut friend = false;
        if peek == b'F' {
            friend = true;
            self.advance(1);
            peek = self.peek();
        }
        let mut ret;
        if is_digit(peek) {
            ret = self.source_name();
        } else if is_lower(peek) {
            let was_expr = self.is_expression;
            if peek == b'o' && self.peek_next() == b'n' {
                self.advance(2);
                // `cv` here names a conversion operator.
                self.is_expression = false;
            }
            ret = self.operator_name();
            self.is_expression = was_expr;
            if let Some(op) = ret
                && self.k(op) == K::Operator
                && operator(self.nodes[op as usize].num).0 == b"li"
            {
                let sn = self.source_name();
                ret = self.make(K::Unary, ret, sn);
            }
        } else if peek == b'D' && self.peek_next() == b'C' {
            // A structured binding: `DC <source-name>+ E`.
            self.advance(2);
            ret = None;
            let mut prev: P = None;
            loop {
                let sn = self.source_name();
                let next = self.make(K::StructuredBinding, sn, None);
                match prev {
                    Some(p) => self.set_r(p, next),
                    None => ret = next,
                }
                prev = next;
                if prev.is_none() || self.peek() == b'E' {
                    break;
                }
            }
            if prev.is_some() {
                self.advance(1);
            } else {
                ret = None;
            }
        } else if peek == b'C' || peek == b'D' {
            ret = self.ctor_dtor_name();
        } else if peek == b'L' {
            self.advance(1);
            ret = self.source_name();
            ret?;
            if !self.discriminator() {
                return None;
            }
        } else if peek == b'U' {
            ret = match self.peek_next() {
                b'l' => self.lambda(),
                b't' => self.unnamed_type(),
                _ => return None,
            };
        } else {
            return None;
        }
        if module.is_some() {
            ret = self.make(K::ModuleEntity, ret, module);
        }
        if self.peek() == b'B' {
            ret = self.abi_tags(ret);
        }
        if friend {
            ret = self.make(K::Friend, ret, None);
        }
        if scope.is_some() {
            ret = self.make(K::QualName, scope, ret);
        }
        ret
    }

    /// `<source-name> ::= <positive length> <identifier>`
    fn source_name(&mut self) -> P {
        let len = self.number();
        if len <= 0 {
            return None;
        }
        let ret = self.identifier(len as usize);
        self.last_name = ret;
        ret
    }

    /// `[n] <decimal>`; -1 on overflow of an `int`.
    fn number(&mut self) -> i32 {
        let mut negative = false;
        let mut peek = self.peek();
        if peek == b'n' {
            negative = true;
            self.advance(1);
            peek = self.peek();
        }
        let mut ret: i32 = 0;
        loop {
            if !is_digit(peek) {
                return if negative { -ret } else { ret };
            }
            let d = (peek - b'0') as i32;
            if ret > (i32::MAX - d) / 10 {
                return -1;
            }
            ret = ret * 10 + d;
            self.advance(1);
            peek = self.peek();
        }
    }

    fn number_component(&mut self) -> P {
        let n = self.number();
        self.leaf(K::Number, n, Text::None)
    }

    /// An identifier of `len` bytes. g++'s names for anonymous namespaces
    /// (`_GLOBAL_[._$]N...`) read "(anonymous namespace)".
    fn identifier(&mut self, len: usize) -> P {
        let start = self.n;
        if self.s.len() - start < len {
            return None;
        }
        self.advance(len);
        let name = &self.s[start..start + len];
        if len >= 10 && name.starts_with(b"_GLOBAL_") && matches!(name[8], b'.' | b'_' | b'$') && name[9] == b'N' {
            return self.static_name("(anonymous namespace)");
        }
        self.name_at(start, len)
    }

    /// `<operator-name>`: a two-letter code, `cv <type>`, or `v <digit> <source-name>`.
    fn operator_name(&mut self) -> P {
        let c1 = self.next_char();
        let c2 = self.next_char();
        if c1 == b'v' && is_digit(c2) {
            let name = self.source_name();
            name?;
            let node = self.leaf(K::ExtendedOperator, (c2 - b'0') as i32, Text::None)?;
            self.set_l(node, name);
            Some(node)
        } else if c1 == b'c' && c2 == b'v' {
            let was_conversion = self.is_conversion;
            self.is_conversion = !self.is_expression;
            let ty = self.ty();
            let res = if self.is_conversion { self.make(K::Conversion, ty, None) } else { self.make(K::Cast, ty, None) };
            self.is_conversion = was_conversion;
            res
        } else {
            let i = find_operator(c1, c2)?;
            self.leaf(K::Operator, i, Text::None)
        }
    }

    fn java_resource(&mut self) -> P {
        let mut len = self.number();
        if len <= 1 {
            return None;
        }
        if self.next_char() != b'_' {
            return None;
        }
        len -= 1;
        let mut p: P = None;
        while len > 0 {
            let c = self.peek();
            if c == 0 {
                return None;
            }
            let next;
            if c == b'$' {
                let ch = match self.s.get(self.n + 1).copied().unwrap_or(0) {
                    b'S' => b'/',
                    b'_' => b'.',
                    b'$' => b'$',
                    _ => return None,
                };
                next = self.leaf(K::Character, ch as i32, Text::None);
                self.advance(2);
                len -= 2;
            } else {
                let start = self.n;
                let mut i = 0usize;
                while (i as i32) < len && start + i < self.s.len() && self.s[start + i] != b'$' {
                    i += 1;
                }
                next = self.name_at(start, i);
                self.advance(i);
                len -= i as i32;
            }
            next?;
            p = match p {
                None => next,
                Some(_) => Some(self.make(K::CompoundName, p, next)?),
            };
        }
        self.make(K::JavaResource, p, None)
    }

    /// `<special-name>`: vtables, typeinfo, thunks, guard variables...
    fn special_name(&mut self) -> P {
        if self.check(b'T') {
            let c = self.next_char();
            let one = |p: &mut Self, k: K, sub: P| p.make(k, sub, None);
            // The special names of a type: vtable, VTT, typeinfo and its
            // name, typeinfo function, Java class.
            let of_type = match c {
                b'V' => Some(K::Vtable),
                b'T' => Some(K::Vtt),
                b'I' => Some(K::Typeinfo),
                b'S' => Some(K::TypeinfoName),
                b'F' => Some(K::TypeinfoFn),
                b'J' => Some(K::JavaClass),
                _ => None,
            };
            if let Some(k) = of_type {
                let t = self.ty();
                return one(self, k, t);
            }
            match c {
                b'h' | b'v' => {
                    if !self.call_offset(c) {
                        return None;
                    }
                    let e = self.encoding(false);
                    one(self, if c == b'h' { K::Thunk } else { K::VirtualThunk }, e)
                }
                b'c' => {
                    if !self.call_offset(0) || !self.call_offset(0) {
                        return None;
                    }
                    let e = self.encoding(false);
                    one(self, K::CovariantThunk, e)
                }
                b'C' => {
                    let derived = self.ty();
                    if self.number() < 0 || !self.check(b'_') {
                        return None;
                    }
                    let base = self.ty();
                    self.make(K::ConstructionVtable, base, derived)
                }
                b'H' => {
                    let n = self.name(false);
                    one(self, K::TlsInit, n)
                }
                b'W' => {
                    let n = self.name(false);
                    one(self, K::TlsWrapper, n)
                }
                b'A' => {
                    let a = self.template_arg();
                    one(self, K::TparmObj, a)
                }
                _ => None,
            }
        } else if self.check(b'G') {
            match self.next_char() {
                b'V' => {
                    let n = self.name(false);
                    self.make(K::Guard, n, None)
                }
                b'R' => {
                    let n = self.name(false);
                    let num = self.number_component();
                    self.make(K::Reftemp, n, num)
                }
                b'A' => {
                    let e = self.encoding(false);
                    self.make(K::HiddenAlias, e, None)
                }
                b'I' => {
                    let mut module = None;
                    if !self.maybe_module_name(&mut module) || module.is_none() {
                        return None;
                    }
                    self.make(K::ModuleInit, module, None)
                }
                b'T' => {
                    let k = if self.next_char() == b'n' { K::NontransactionClone } else { K::TransactionClone };
                    let e = self.encoding(false);
                    self.make(k, e, None)
                }
                b'r' => self.java_resource(),
                _ => None,
            }
        } else {
            None
        }
    }

    /// `h <offset> _` or `v <offset> _ <virtual offset> _`; the offsets are
    /// not shown. `c` is the letter if already read.
    fn call_offset(&mut self, c: u8) -> bool {
        let c = if c == 0 { self.next_char() } else { c };
        if c == b'h' {
            self.number();
        } else if c == b'v' {
            self.number();
            if !self.check(b'_') {
                return false;
            }
            self.number();
        } else {
            return false;
        }
        self.check(b'_')
    }

    /// `C1`..`C5`, `CI1 <type>`.., `D0`..`D5`: the constructed class is the
    /// last name seen.
    fn ctor_dtor_name(&mut self) -> P {
        match self.peek() {
            b'C' => {
                let mut inheriting = false;
                if self.peek_next() == b'I' {
                    inheriting = true;
                    self.advance(1);
                }
                let kind = match self.peek_next() {
                    c @ b'1'..=b'5' => (c - b'0') as i32,
                    _ => return None,
                };
                self.advance(2);
                if inheriting {
                    self.ty();
                }
                let name = self.last_name?;
                let node = self.leaf(K::Ctor, kind, Text::None)?;
                self.set_l(node, Some(name));
                Some(node)
            }
            b'D' => {
                let kind = match self.peek_next() {
                    c @ (b'0' | b'1' | b'2' | b'4' | b'5') => (c - b'0') as i32,
                    _ => return None,
                };
                self.advance(2);
                let name = self.last_name?;
                let node = self.leaf(K::Dtor, kind, Text::None)?;
                self.set_l(node, Some(name));
                Some(node)
            }
            _ => None,
        }
    }

    fn next_is_type_qual(&self) -> bool {
        match self.peek() {
            b'r' | b'V' | b'K' => true,
            b'D' => matches!(self.peek_next(), b'x' | b'o' | b'O' | b'w'),
            _ => false,
        }
    }

    /// `<type>`. Every type but a builtin one (and a few `D` codes) is a
    /// substitution candidate; a cv-qualified type is one candidate with
    /// all its qualifiers, besides its unqualified type.
    fn ty(&mut self) -> P {
        if self.next_is_type_qual() {
            let (head, slot) = self.cv_qualifiers(false)?;
            let inner = if self.peek() == b'F' { self.function_type() } else { self.ty() };
            let inner = inner?;
            let slot = slot.expect("at least one qualifier");
            self.set_l(slot, Some(inner));
            let mut ret = head;
            if matches!(self.k(inner), K::RvalueReferenceThis | K::ReferenceThis) {
                // The ref-qualifier goes outside the cv-qualifiers so that
                // they print in the right order.
                let f = self.l(inner);
                self.set_l(inner, head);
                ret = Some(inner);
                self.set_l(slot, f);
            }
            if !self.add_sub(ret) {
                return None;
            }
            return ret;
        }
        let mut can_subst = true;
        let peek = self.peek();
        let ret: P = match peek {
            b'a'..=b'j' | b'l'..=b'o' | b's' | b't' | b'v'..=b'z' => {
                can_subst = false;
                self.advance(1);
                self.leaf(K::BuiltinType, (peek - b'a') as i32, Text::None)
            }
            b'u' => {
                self.advance(1);
                let sn = self.source_name();
                self.make(K::VendorType, sn, None)
            }
            b'F' => self.function_type(),
            b'A' => self.array_type(),
            b'M' => self.pointer_to_member_type(),
            b'T' => {
                let mut ret = self.template_param();
                if self.peek() == b'I' {
                    // A <template-template-param> <template-args>, except in
                    // a conversion operator's type when another argument
                    // list does not follow (the one here is then the
                    // operator's own).
                    if !self.is_conversion {
                        if !self.add_sub(ret) {
                            return None;
                        }
                        let args = self.template_args();
                        ret = self.make(K::Template, ret, args);
                    } else {
                        let cp = (self.n, self.nodes.len(), self.subs.len());
                        let args = self.template_args();
                        if self.peek() == b'I' {
                            if !self.add_sub(ret) {
                                return None;
                            }
                            ret = self.make(K::Template, ret, args);
                        } else {
                            self.n = cp.0;
                            self.nodes.truncate(cp.1);
                            self.subs.truncate(cp.2);
                        }
                    }
                }
                ret
            }
            b'O' | b'P' | b'R' | b'C' | b'G' => {
                self.advance(1);
                let k = match peek {
                    b'O' => K::RvalueReference,
                    b'P' => K::Pointer,
                    b'R' => K::Reference,
                    b'C' => K::Complex,
                    _ => K::Imaginary,
                };
                let t = self.ty();
                self.make(k, t, None)
            }
            // A closure or unnamed type (libstdc++ 6.0.36 reads these as
            // class types here; older libiberty took every `U` as a vendor
            // qualifier).
            b'U' if matches!(self.peek_next(), b'l' | b't') => return self.name(true),
            b'U' => {
                self.advance(1);
                let mut q = self.source_name();
                if self.peek() == b'I' {
                    let args = self.template_args();
                    q = self.make(K::Template, q, args);
                }
                let t = self.ty();
                self.make(K::VendorTypeQual, t, q)
            }
            b'D' => {
                can_subst = false;
                self.advance(1);
                let builtin = |p: &mut Self, i: i32| p.leaf(K::BuiltinType, i, Text::None);
                match self.next_char() {
                    b'T' | b't' => {
                        let e = self.expression();
                        let mut r = self.make(K::Decltype, e, None);
                        if r.is_some() && self.next_char() != b'E' {
                            r = None;
                        }
                        can_subst = true;
                        r
                    }
                    b'p' => {
                        let t = self.ty();
                        can_subst = true;
                        self.make(K::PackExpansion, t, None)
                    }
                    b'a' => self.static_name("auto"),
                    b'c' => self.static_name("decltype(auto)"),
                    b'f' => builtin(self, 26),
                    b'd' => builtin(self, 27),
                    b'e' => builtin(self, 28),
                    b'h' => builtin(self, 29),
                    b'u' => builtin(self, 30),
                    b's' => builtin(self, 31),
                    b'i' => builtin(self, 32),
                    b'F' => {
                        // DF<n>_ is _Float<n>, DF<n>x _Float<n>x, DF16b std::bfloat16_t.
                        let arg = self.number();
                        if self.peek() == b'b' {
                            if arg != 16 {
                                return None;
                            }
                            self.advance(1);
                            builtin(self, 35)
                        } else {
                            let suffix = if self.peek() == b'x' { Text::Static("x") } else { Text::None };
                            if matches!(suffix, Text::None) && self.peek() != b'_' {
                                return None;
                            }
                            let r = self.leaf(K::ExtendedBuiltinType, arg, suffix);
                            self.advance(1);
                            r
                        }
                    }
                    b'v' => {
                        can_subst = true;
                        self.vector_type()
                    }
                    b'n' => builtin(self, BUILTIN_NULLPTR),
                    _ => return None,
                }
            }
            _ => return self.name(true),
        };
        if can_subst && !self.add_sub(ret) {
            return None;
        }
        ret
    }

    /// `<CV-qualifiers>`, and the function qualifiers `Dx`, `Do`, `DO...E`,
    /// `Dw...E`. Returns the outermost qualifier and the innermost one,
    /// whose left is still to be filled (`(None, None)` without any).
    fn cv_qualifiers(&mut self, member_fn: bool) -> Option<(P, P)> {
        let mut head: P = None;
        let mut last: P = None;
        let mut quals: Vec<Id> = Vec::new();
        let mut peek = self.peek();
        while self.next_is_type_qual() {
            let mut right = None;
            self.advance(1);
            let t = match peek {
                b'r' => {
                    if member_fn { K::RestrictThis } else { K::Restrict }
                }
                b'V' => {
                    if member_fn { K::VolatileThis } else { K::Volatile }
                }
                b'K' => {
                    if member_fn { K::ConstThis } else { K::Const }
                }
                _ => {
                    peek = self.next_char();
                    match peek {
                        b'x' => K::TransactionSafe,
                        b'o' | b'O' => {
                            if peek == b'O' {
                                right = Some(self.expression()?);
                                if !self.check(b'E') {
                                    return None;
                                }
                            }
                            K::Noexcept
                        }
                        b'w' => {
                            right = Some(self.parmlist()?);
                            if !self.check(b'E') {
                                return None;
                            }
                            K::ThrowSpec
                        }
                        _ => return None,
                    }
                }
            };
            let q = self.make(t, None, right)?;
            match last {
                Some(prev) => self.set_l(prev, Some(q)),
                None => head = Some(q),
            }
            last = Some(q);
            quals.push(q);
            peek = self.peek();
        }
        if !member_fn && peek == b'F' {
            // Qualifiers before a function type apply to `this`.
            for q in quals {
                let k = &mut self.nodes[q as usize].k;
                *k = match *k {
                    K::Restrict => K::RestrictThis,
                    K::Volatile => K::VolatileThis,
                    K::Const => K::ConstThis,
                    other => other,
                };
            }
        }
        Some((head, last))
    }

    /// `R` or `O` after a function type or in a nested name.
    fn ref_qualifier(&mut self, sub: P) -> P {
        let k = match self.peek() {
            b'R' => K::ReferenceThis,
            b'O' => K::RvalueReferenceThis,
            _ => return sub,
        };
        self.advance(1);
        self.make(k, sub, None)
    }

    /// `F [Y] <bare-function-type> [<ref-qualifier>] E`
    fn function_type(&mut self) -> P {
        if self.recursion_level > RECURSION_LIMIT {
            return None;
        }
        self.recursion_level += 1;
        let mut ret = None;
        if self.check(b'F') {
            if self.peek() == b'Y' {
                // extern "C": not shown.
                self.advance(1);
            }
            ret = self.bare_function_type(true);
            ret = self.ref_qualifier(ret);
            if !self.check(b'E') {
                ret = None;
            }
        }
        self.recursion_level -= 1;
        ret
    }

    /// Links `node` after `last` through its right child (the lists of
    /// template arguments, parameters and expressions are chains).
    fn append(&mut self, first: &mut P, last: &mut P, node: Id) {
        match *last {
            Some(prev) => self.set_r(prev, Some(node)),
            None => *first = Some(node),
        }
        *last = Some(node);
    }

    /// `<type>+`; a lone `void` stands for no parameters.
    fn parmlist(&mut self) -> P {
        let mut first: P = None;
        let mut last: P = None;
        loop {
            let peek = self.peek();
            if matches!(peek, 0 | b'E' | b'.' | b'Q') {
                break;
            }
            if matches!(peek, b'R' | b'O') && self.peek_next() == b'E' {
                // A function ref-qualifier.
                break;
            }
            let t = self.ty()?;
            let a = self.make(K::Arglist, Some(t), None)?;
            self.append(&mut first, &mut last, a);
        }
        let first = first?;
        if self.r(first).is_none()
            && let Some(t) = self.l(first)
            && self.k(t) == K::BuiltinType
            && BUILTINS[self.nodes[t as usize].num as usize].1 == LitStyle::Void
        {
            self.set_l(first, None);
        }
        Some(first)
    }

    /// `[J] <type>+`, the first type being the return type when there is one.
    fn bare_function_type(&mut self, mut has_return_type: bool) -> P {
        if self.peek() == b'J' {
            self.advance(1);
            has_return_type = true;
        }
        let rt = if has_return_type { Some(self.ty()?) } else { None };
        let tl = self.parmlist()?;
        self.make(K::FunctionType, rt, Some(tl))
    }

    /// `A <number> _ <type>` or `A [<expression>] _ <type>`
    fn array_type(&mut self) -> P {
        if !self.check(b'A') {
            return None;
        }
        let peek = self.peek();
        let dim = if peek == b'_' {
            None
        } else if is_digit(peek) {
            let start = self.n;
            while is_digit(self.peek()) {
                self.advance(1);
            }
            Some(self.name_at(start, self.n - start)?)
        } else {
            Some(self.expression()?)
        };
        if !self.check(b'_') {
            return None;
        }
        let t = self.ty();
        self.make(K::ArrayType, dim, t)
    }

    /// `Dv <number> _ <type>` or `Dv _ <expression> _ <type>`
    fn vector_type(&mut self) -> P {
        let dim = if self.peek() == b'_' {
            self.advance(1);
            self.expression()
        } else {
            self.number_component()
        };
        dim?;
        if !self.check(b'_') {
            return None;
        }
        let t = self.ty();
        self.make(K::VectorType, dim, t)
    }

    /// `M <class type> <member type>`
    fn pointer_to_member_type(&mut self) -> P {
        if !self.check(b'M') {
            return None;
        }
        let cl = self.ty()?;
        let mem = self.ty()?;
        self.make(K::PtrmemType, Some(cl), Some(mem))
    }

    /// `_` is 0, `<number> _` is number + 1; -1 on error.
    fn compact_number(&mut self) -> i32 {
        let num = match self.peek() {
            b'_' => 0,
            b'n' => return -1,
            _ => self.number().wrapping_add(1),
        };
        if num < 0 || !self.check(b'_') {
            return -1;
        }
        num
    }

    /// `T_`, `T <number> _`
    fn template_param(&mut self) -> P {
        if !self.check(b'T') {
            return None;
        }
        let param = self.compact_number();
        if param < 0 {
            return None;
        }
        self.leaf(K::TemplateParam, param, Text::None)
    }

    /// `I <template-arg>* E` (or `J ... E`, an argument pack)
    fn template_args(&mut self) -> P {
        if !matches!(self.peek(), b'I' | b'J') {
            return None;
        }
        self.advance(1);
        self.template_args_1()
    }

    /// `<template-arg>* [Q <constraint>] E`; the arguments do not change
    /// the last name.
    fn template_args_1(&mut self) -> P {
        let hold = self.last_name;
        if self.peek() == b'E' {
            // An empty argument pack.
            self.advance(1);
            return self.make(K::TemplateArglist, None, None);
        }
        let mut first: P = None;
        let mut last: P = None;
        loop {
            let a = self.template_arg()?;
            let node = self.make(K::TemplateArglist, Some(a), None)?;
            self.append(&mut first, &mut last, node);
            if matches!(self.peek(), b'E' | b'Q') {
                break;
            }
        }
        let al = self.maybe_constraints(first);
        if self.peek() != b'E' {
            return None;
        }
        self.advance(1);
        self.last_name = hold;
        al
    }

    /// `<type>`, `X <expression> E`, `<expr-primary>` or an argument pack.
    fn template_arg(&mut self) -> P {
        match self.peek() {
            b'X' => {
                self.advance(1);
                let ret = self.expression();
                if !self.check(b'E') {
                    return None;
                }
                ret
            }
            b'L' => self.expr_primary(),
            b'I' | b'J' => self.template_args(),
            _ => self.ty(),
        }
    }

    /// Expressions up to `terminator`.
    fn exprlist(&mut self, terminator: u8) -> P {
        if self.peek() == terminator {
            self.advance(1);
            return self.make(K::Arglist, None, None);
        }
        let mut first: P = None;
        let mut last: P = None;
        loop {
            let e = self.expression()?;
            let node = self.make(K::Arglist, Some(e), None)?;
            self.append(&mut first, &mut last, node);
            if self.peek() == terminator {
                self.advance(1);
                break;
            }
        }
        first
    }

    /// `sr ...`: a name with a dependent scope.
    fn unresolved_name(&mut self) -> P {
        self.advance(2);
        let peek = self.peek();
        let ty;
        if self.unresolved_name_state != 0 && (is_digit(peek) || is_lower(peek) || matches!(peek, b'C' | b'U' | b'L')) {
            // The newer `sr <qualifier-level>+ E <base-name>`; if the name
            // fails, it is read again as the older `sr <type> <base-name>`.
            self.unresolved_name_state = -1;
            ty = self.prefix(false);
            if self.peek() == b'E' {
                self.advance(1);
            }
        } else {
            ty = self.ty();
        }
        let mut name = self.unqualified_name(ty, None);
        if self.peek() == b'I' {
            let args = self.template_args();
            name = self.make(K::Template, name, args);
        }
        name
    }

    fn op_code(&self, op: Id) -> Option<&'static [u8; 2]> {
        (self.k(op) == K::Operator).then(|| operator(self.nodes[op as usize].num).0)
    }

    /// `<expression>` (d_expression_1).
    fn expression_1(&mut self) -> P {
        let peek = self.peek();
        let next = self.peek_next();
        if peek == b'L' {
            return self.expr_primary();
        }
        if peek == b'T' {
            return self.template_param();
        }
        if peek == b's' && next == b'r' {
            return self.unresolved_name();
        }
        if peek == b's' && next == b'p' {
            self.advance(2);
            let e = self.expression_1();
            return self.make(K::PackExpansion, e, None);
        }
        if peek == b'f' && next == b'p' {
            // A function parameter: `fpT` is `this`.
            self.advance(2);
            let index = if self.peek() == b'T' {
                self.advance(1);
                0
            } else {
                let i = self.compact_number();
                if i == i32::MAX || i == -1 {
                    return None;
                }
                i + 1
            };
            return self.leaf(K::FunctionParam, index, Text::None);
        }
        if is_digit(peek) || (peek == b'o' && next == b'n') {
            // An unqualified name, as in a dependent call `f(t)`.
            if peek == b'o' {
                self.advance(2);
            }
            let name = self.unqualified_name(None, None)?;
            if self.peek() == b'I' {
                let args = self.template_args();
                return self.make(K::Template, Some(name), args);
            }
            return Some(name);
        }
        if matches!(peek, b'i' | b't') && next == b'l' {
            // A braced initializer list, untyped or typed.
            self.advance(2);
            let ty = if peek == b't' { self.ty() } else { None };
            if self.peek() == 0 || self.peek_next() == 0 {
                return None;
            }
            let list = self.exprlist(b'E');
            return self.make(K::InitializerList, ty, list);
        }
        if peek == b'u' {
            // A vendor extended expression.
            self.advance(1);
            let name = self.source_name();
            let args = self.template_args_1();
            return self.make(K::VendorExpr, name, args);
        }
        let op = self.operator_name()?;
        let code = self.op_code(op);
        if code == Some(b"st") {
            let t = self.ty();
            return self.make(K::Unary, Some(op), t);
        }
        let args = match self.k(op) {
            K::Operator => operator(self.nodes[op as usize].num).2,
            K::ExtendedOperator => self.nodes[op as usize].num,
            K::Cast => 1,
            _ => return None,
        };
        match args {
            0 => self.make(K::Nullary, Some(op), None),
            1 => {
                let mut suffix = false;
                if let Some(c) = code
                    && matches!(c[0], b'p' | b'm')
                    && c[1] == c[0]
                {
                    // `pp_`/`mm_` are the prefix forms.
                    suffix = !self.check(b'_');
                }
                let mut operand = if self.k(op) == K::Cast && self.check(b'_') {
                    self.exprlist(b'E')
                } else if code == Some(b"sP") {
                    self.template_args_1()
                } else {
                    self.expression_1()
                };
                if suffix {
                    operand = self.make(K::BinaryArgs, operand, operand);
                }
                self.make(K::Unary, Some(op), operand)
            }
            2 => {
                let code = code?;
                let left = if is_new_cast(code) {
                    self.ty()
                } else if code[0] == b'f' {
                    // A fold expression's operator.
                    self.operator_name()
                } else if code == b"di" {
                    self.unqualified_name(None, None)
                } else {
                    self.expression_1()
                };
                let right = if code == b"cl" {
                    self.exprlist(b'E')
                } else if code == b"dt" || code == b"pt" {
                    let (p, n) = (self.peek(), self.peek_next());
                    if (p == b'g' && n == b's') || (p == b's' && n == b'r') {
                        self.expression_1()
                    } else {
                        let mut r = self.unqualified_name(None, None);
                        if self.peek() == b'I' {
                            let args = self.template_args();
                            r = self.make(K::Template, r, args);
                        }
                        r
                    }
                } else {
                    self.expression_1()
                };
                let args = self.make(K::BinaryArgs, left, right);
                self.make(K::Binary, Some(op), args)
            }
            3 => {
                let code = code?;
                let (first, second, third);
                if code == b"qu" || code == b"dX" {
                    first = self.expression_1();
                    second = self.expression_1();
                    third = Some(self.expression_1()?);
                } else if code[0] == b'f' {
                    first = self.operator_name();
                    second = self.expression_1();
                    third = Some(self.expression_1()?);
                } else if code[0] == b'n' {
                    // new / new[]
                    if code[1] != b'w' && code[1] != b'a' {
                        return None;
                    }
                    first = self.exprlist(b'_');
                    second = self.ty();
                    if self.peek() == b'E' {
                        self.advance(1);
                        third = None;
                    } else if self.peek() == b'p' && self.peek_next() == b'i' {
                        self.advance(2);
                        third = self.exprlist(b'E');
                    } else if self.peek() == b'i' && self.peek_next() == b'l' {
                        third = self.expression_1();
                    } else {
                        return None;
                    }
                } else {
                    return None;
                }
                let a2 = self.make(K::TrinaryArg2, second, third);
                let a1 = self.make(K::TrinaryArg1, first, a2);
                self.make(K::Trinary, Some(op), a1)
            }
            _ => None,
        }
    }

    fn expression(&mut self) -> P {
        let was = self.is_expression;
        self.is_expression = true;
        let ret = self.expression_1();
        self.is_expression = was;
        ret
    }

    /// `L <type> <value> E`, `L <mangled-name> E`. The value is kept as
    /// written.
    fn expr_primary(&mut self) -> P {
        if !self.check(b'L') {
            return None;
        }
        let ret;
        if self.peek() == b'_' || self.peek() == b'Z' {
            ret = self.mangled_name(false);
        } else {
            let ty = self.ty()?;
            if self.k(ty) == K::BuiltinType && self.nodes[ty as usize].num == BUILTIN_NULLPTR && self.peek() == b'E' {
                self.advance(1);
                return Some(ty);
            }
            let mut k = K::Literal;
            if self.peek() == b'n' {
                k = K::LiteralNeg;
                self.advance(1);
            }
            let start = self.n;
            while self.peek() != b'E' {
                if self.peek() == 0 {
                    return None;
                }
                self.advance(1);
            }
            let value = self.name_at(start, self.n - start);
            ret = self.make(k, Some(ty), value);
        }
        if !self.check(b'E') {
            return None;
        }
        ret
    }

    /// `Z <encoding> E <name> [<discriminator>]`, `Z <encoding> E s ...`
    /// (a string literal), `Z <encoding> E d [<number>] _ <name>` (a
    /// default argument's scope).
    fn local_name(&mut self) -> P {
        if !self.check(b'Z') {
            return None;
        }
        let function = self.encoding(false)?;
        if !self.check(b'E') {
            return None;
        }
        let name;
        if self.peek() == b's' {
            self.advance(1);
            if !self.discriminator() {
                return None;
            }
            name = self.static_name("string literal");
        } else {
            let mut num = -1;
            if self.peek() == b'd' {
                self.advance(1);
                num = self.compact_number();
                if num < 0 {
                    return None;
                }
            }
            let mut n = self.name(false);
            if let Some(nn) = n
                && !matches!(self.k(nn), K::Lambda | K::UnnamedType)
                && !self.discriminator()
            {
                return None;
            }
            if num >= 0 {
                let d = self.leaf(K::DefaultArg, num, Text::None)?;
                self.set_l(d, n);
                n = Some(d);
            }
            name = n;
        }
        // The function's return type is not shown.
        if self.k(function) == K::TypedName
            && let Some(ft) = self.r(function)
            && self.k(ft) == K::FunctionType
        {
            self.set_l(ft, None);
        }
        self.make(K::LocalName, Some(function), name)
    }

    /// `_ <digit>`, `__ <number> _`; read, not shown.
    fn discriminator(&mut self) -> bool {
        if self.peek() != b'_' {
            return true;
        }
        self.advance(1);
        let mut underscores = 1;
        if self.peek() == b'_' {
            underscores += 1;
            self.advance(1);
        }
        let d = self.number();
        if d < 0 {
            return false;
        }
        if underscores > 1 && d >= 10 {
            if self.peek() == b'_' {
                self.advance(1);
            } else {
                return false;
            }
        }
        true
    }

    /// `Ty`, `Tn <type>`, `Tt <template-head> E`, `Tp <template-parm>`
    fn template_parm(&mut self, bad: &mut bool) -> P {
        if self.peek() != b'T' {
            return None;
        }
        let (op, k);
        match self.peek_next() {
            b'p' => {
                self.advance(2);
                op = self.template_parm(bad);
                k = K::TemplatePackParm;
                if op.is_none() {
                    *bad = true;
                    return None;
                }
            }
            b'y' => {
                self.advance(2);
                op = None;
                k = K::TemplateTypeParm;
            }
            b'n' => {
                self.advance(2);
                op = self.ty();
                k = K::TemplateNonTypeParm;
                if op.is_none() {
                    *bad = true;
                    return None;
                }
            }
            b't' => {
                self.advance(2);
                op = self.template_head(bad);
                k = K::TemplateTemplateParm;
                if op.is_none() || !self.check(b'E') {
                    *bad = true;
                    return None;
                }
            }
            _ => return None,
        }
        self.make(k, op, None)
    }

    fn template_head(&mut self, bad: &mut bool) -> P {
        let mut first: P = None;
        let mut last: P = None;
        while let Some(op) = self.template_parm(bad) {
            self.append(&mut first, &mut last, op);
        }
        first?;
        self.make(K::TemplateHead, first, None)
    }

    /// `Ul <template-head>? <lambda-sig> E [<number>] _`
    fn lambda(&mut self) -> P {
        if !self.check(b'U') || !self.check(b'l') {
            return None;
        }
        let mut bad = false;
        let head = self.template_head(&mut bad);
        if bad {
            return None;
        }
        let mut tl = self.parmlist()?;
        if let Some(h) = head {
            self.set_r(h, Some(tl));
            tl = h;
        }
        if !self.check(b'E') {
            return None;
        }
        let num = self.compact_number();
        if num < 0 {
            return None;
        }
        let ret = self.leaf(K::Lambda, num, Text::None)?;
        self.set_l(ret, Some(tl));
        Some(ret)
    }

    /// `Ut [<number>] _`, itself a substitution candidate.
    fn unnamed_type(&mut self) -> P {
        if !self.check(b'U') || !self.check(b't') {
            return None;
        }
        let num = self.compact_number();
        if num < 0 {
            return None;
        }
        let ret = self.leaf(K::UnnamedType, num, Text::None);
        if !self.add_sub(ret) {
            return None;
        }
        ret
    }

    /// `[.<lowercase, digits, _>+] [.<digits>+]*`, shown as `[clone ...]`.
    fn clone_suffix(&mut self, encoding: P) -> P {
        let start = self.n;
        let s = self.s;
        let at = |i: usize| s.get(i).copied().unwrap_or(0);
        let mut end = start;
        if at(end) == b'.' && (is_lower(at(end + 1)) || is_digit(at(end + 1)) || at(end + 1) == b'_') {
            end += 2;
            while is_lower(at(end)) || is_digit(at(end)) || at(end) == b'_' {
                end += 1;
            }
        }
        while at(end) == b'.' && is_digit(at(end + 1)) {
            end += 2;
            while is_digit(at(end)) {
                end += 1;
            }
        }
        self.advance(end - start);
        let n = self.name_at(start, end - start);
        self.make(K::Clone, encoding, n)
    }

    /// `S_`, `S <seq-id> _`, or a standard abbreviation (`St`, `Sa`, ...).
    /// In a prefix followed by a constructor or destructor, `Ss` and its
    /// kin spell out the full template (`std::basic_string<char, ...>`), so
    /// that the constructor reads `basic_string`.
    fn substitution(&mut self, prefix: bool) -> P {
        if !self.check(b'S') {
            return None;
        }
        let mut c = self.next_char();
        if c == b'_' || is_digit(c) || is_upper(c) {
            let mut id: u32 = 0;
            if c != b'_' {
                loop {
                    let new_id = if is_digit(c) {
                        id.wrapping_mul(36).wrapping_add((c - b'0') as u32)
                    } else if is_upper(c) {
                        id.wrapping_mul(36).wrapping_add((c - b'A') as u32 + 10)
                    } else {
                        return None;
                    };
                    if new_id < id {
                        return None;
                    }
                    id = new_id;
                    c = self.next_char();
                    if c == b'_' {
                        break;
                    }
                }
                id = id.wrapping_add(1);
            }
            return self.subs.get(id as usize).copied();
        }
        let verbose = prefix && matches!(self.peek(), b'C' | b'D');
        let &(_, simple, full, last) = STANDARD_SUBS.iter().find(|s| s.0 == c)?;
        if let Some(l) = last {
            self.last_name = self.leaf(K::SubStd, 0, Text::Static(l));
        }
        let mut dc = self.leaf(K::SubStd, 0, Text::Static(if verbose { full } else { simple }));
        if self.peek() == b'B' {
            // With ABI tags the abbreviation becomes a candidate.
            dc = self.abi_tags(dc);
            if !self.add_sub(dc) {
                return None;
            }
        }
        dc
    }
}

fn is_new_cast(code: &[u8; 2]) -> bool {
    code[1] == b'c' && matches!(code[0], b's' | b'd' | b'c' | b'r')
}

// --------------------------------------------------------------- printing

/// An entry of the template scope list: the template whose arguments
/// template parameters refer to (none for a lambda without a head).
#[derive(Clone, Copy)]
struct Tpl {
    next: Option<u32>,
    decl: P,
}

/// A pending type modifier (pointer, reference, cv-qualifier, function or
/// array declarator...), printed where the declarator goes.
#[derive(Clone, Copy)]
struct Mod {
    next: Option<u32>,
    m: Id,
    printed: bool,
    templates: Option<u32>,
}

struct Printer<'a> {
    nodes: &'a mut [Node],
    input: &'a [u8],
    out: Vec<u8>,
    /// The last byte appended; not rolled back when an empty pack's ", "
    /// is taken back, which libiberty's `> >` rule then sees.
    last: u8,
    failed: bool,
    tpls: Vec<Tpl>,
    templates: Option<u32>,
    mods: Vec<Mod>,
    modifiers: Option<u32>,
    recursion: i32,
    /// Components printed so far (see [`MAX_PRINT_CALLS`]).
    calls: u32,
    lambda_tpl_parms: i32,
    pack_index: i32,
    stack: Vec<Id>,
    printing: Vec<u8>,
    counting: Vec<u8>,
    scopes: Vec<(Id, Option<u32>)>,
    num_saved_scopes: usize,
    next_copy_template: usize,
    num_copy_templates: usize,
    current_template: P,
}

impl<'a> Printer<'a> {
    fn new(nodes: &'a mut [Node], input: &'a [u8]) -> Self {
        let n = nodes.len();
        Printer {
            nodes,
            input,
            out: Vec::with_capacity(input.len() * 2),
            last: 0,
            failed: false,
            tpls: Vec::new(),
            templates: None,
            mods: Vec::new(),
            modifiers: None,
            recursion: 0,
            calls: 0,
            lambda_tpl_parms: 0,
            pack_index: 0,
            stack: Vec::new(),
            printing: vec![0; n],
            counting: vec![0; n],
            scopes: Vec::new(),
            num_saved_scopes: 0,
            next_copy_template: 0,
            num_copy_templates: 0,
            current_template: None,
        }
    }

    fn run(mut self, dc: Id) -> Option<String> {
        // libiberty sizes its saved-scope arrays from a first walk; running
        // out of them is an error, so the walk is reproduced.
        self.count(Some(dc));
        self.recursion = 0;
        self.num_copy_templates *= self.num_saved_scopes;
        self.print(Some(dc));
        if self.failed {
            return None;
        }
        Some(match String::from_utf8(self.out) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        })
    }

    fn k(&self, id: Id) -> K {
        self.nodes[id as usize].k
    }
    fn l(&self, id: Id) -> P {
        self.nodes[id as usize].l
    }
    fn r(&self, id: Id) -> P {
        self.nodes[id as usize].r
    }
    fn num(&self, id: Id) -> i32 {
        self.nodes[id as usize].num
    }

    fn count(&mut self, dc: P) {
        use K::*;
        let Some(d) = dc else { return };
        if self.counting[d as usize] > 1 || self.recursion > MAX_PRINT_DEPTH {
            return;
        }
        self.counting[d as usize] += 1;
        match self.k(d) {
            Name | TemplateParam | FunctionParam | SubStd | BuiltinType | ExtendedBuiltinType | Operator | Character | Number | UnnamedType | StructuredBinding | ModuleName
            | ModulePartition | ModuleInit | TemplateHead | TemplateTypeParm | TemplateNonTypeParm | TemplateTemplateParm | TemplatePackParm => {}
            Ctor | Dtor | ExtendedOperator | GlobalConstructors | GlobalDestructors | ModuleEntity | Friend | Lambda | DefaultArg => self.count(self.l(d)),
            k => {
                if k == Template {
                    self.num_copy_templates += 1;
                }
                if matches!(k, Reference | RvalueReference) && self.l(d).is_some_and(|s| self.k(s) == TemplateParam) {
                    self.num_saved_scopes += 1;
                }
                if self.recursion > RECURSION_LIMIT as i32 {
                    return;
                }
                self.recursion += 1;
                self.count(self.l(d));
                self.count(self.r(d));
                self.recursion -= 1;
            }
        }
    }

    /// Whether `n` more bytes fit within [`MAX_OUTPUT`] (else printing
    /// has failed).
    fn room(&mut self, n: usize) -> bool {
        if self.out.len() + n > MAX_OUTPUT {
            self.failed = true;
        } else if self.out.len() + n > self.out.capacity() {
            // Doubling, but never past the limit.
            let more = self.out.capacity().max(n).min(MAX_OUTPUT - self.out.len());
            self.out.reserve_exact(more);
        }
        !self.failed
    }
    fn ch(&mut self, c: u8) {
        if self.room(1) {
            self.out.push(c);
            self.last = c;
        }
    }
    fn s(&mut self, s: &[u8]) {
        if let Some(&c) = s.last()
            && self.room(s.len())
        {
            self.out.extend_from_slice(s);
            self.last = c;
        }
    }
    fn num_str(&mut self, n: i32) {
        self.s(n.to_string().as_bytes());
    }
    fn text(&mut self, t: Text) {
        match t {
            Text::None => {}
            Text::Input(start, len) => {
                let input = self.input;
                self.s(&input[start as usize..(start + len) as usize]);
            }
            Text::Static(s) => self.s(s.as_bytes()),
        }
    }

    fn push_tpl(&mut self, decl: P) -> Option<u32> {
        let prev = self.templates;
        self.tpls.push(Tpl { next: prev, decl });
        self.templates = Some((self.tpls.len() - 1) as u32);
        prev
    }

    fn push_mod(&mut self, m: Id) -> u32 {
        self.mods.push(Mod { next: self.modifiers, m, printed: false, templates: self.templates });
        let id = (self.mods.len() - 1) as u32;
        self.modifiers = Some(id);
        id
    }

    fn print(&mut self, dc: P) {
        let Some(d) = dc else {
            self.failed = true;
            return;
        };
        self.calls += 1;
        if self.printing[d as usize] > 1 || self.recursion > MAX_PRINT_DEPTH || self.calls > MAX_PRINT_CALLS {
            self.failed = true;
            return;
        }
        self.printing[d as usize] += 1;
        self.recursion += 1;
        self.stack.push(d);
        self.print_inner(d);
        self.stack.pop();
        self.printing[d as usize] -= 1;
        self.recursion -= 1;
    }

    /// The argument a template parameter names in the innermost template
    /// scope.
    fn lookup_template_argument(&mut self, dc: Id) -> P {
        let Some(t) = self.templates else {
            self.failed = true;
            return None;
        };
        let Some(decl) = self.tpls[t as usize].decl else {
            self.failed = true;
            return None;
        };
        self.index_template_argument(self.r(decl), self.num(dc))
    }

    fn index_template_argument(&self, args: P, mut i: i32) -> P {
        if i < 0 {
            // The whole pack.
            return args;
        }
        let mut a = args;
        while let Some(x) = a {
            if self.k(x) != K::TemplateArglist {
                return None;
            }
            if i <= 0 {
                break;
            }
            i -= 1;
            a = self.r(x);
        }
        if i != 0 {
            return None;
        }
        self.l(a?)
    }

    /// A template argument pack used in `dc`, if any.
    fn find_pack(&mut self, dc: P) -> P {
        use K::*;
        let d = dc?;
        match self.k(d) {
            TemplateParam => {
                let a = self.lookup_template_argument(d)?;
                (self.k(a) == TemplateArglist).then_some(a)
            }
            PackExpansion | Lambda | Name | TaggedName | Operator | BuiltinType | ExtendedBuiltinType | SubStd | Character | FunctionParam | UnnamedType | DefaultArg | Number => None,
            ExtendedOperator | Ctor | Dtor => self.find_pack(self.l(d)),
            _ => self.find_pack(self.l(d)).or_else(|| self.find_pack(self.r(d))),
        }
    }

    fn pack_length(&self, mut dc: P) -> i32 {
        let mut count = 0;
        while let Some(d) = dc {
            if self.k(d) != K::TemplateArglist || self.l(d).is_none() {
                break;
            }
            count += 1;
            dc = self.r(d);
        }
        count
    }

    fn args_length(&mut self, mut dc: P) -> i32 {
        let mut count = 0;
        while let Some(d) = dc {
            if self.k(d) != K::TemplateArglist {
                break;
            }
            let Some(elt) = self.l(d) else { break };
            if self.k(elt) == K::PackExpansion {
                let a = self.find_pack(self.l(elt));
                count += self.pack_length(a);
            } else {
                count += 1;
            }
            dc = self.r(d);
        }
        count
    }

    /// An operand, in parentheses unless it is a plain name.
    fn subexpr(&mut self, dc: P) {
        let Some(d) = dc else {
            self.failed = true;
            return;
        };
        let simple = matches!(self.k(d), K::Name | K::QualName | K::InitializerList | K::FunctionParam);
        if !simple {
            self.ch(b'(');
        }
        self.print(dc);
        if !simple {
            self.ch(b')');
        }
    }

    fn save_scope(&mut self, container: Id) {
        if self.scopes.len() >= self.num_saved_scopes {
            self.failed = true;
            return;
        }
        let mut t = self.templates;
        while let Some(i) = t {
            if self.next_copy_template >= self.num_copy_templates {
                self.failed = true;
                return;
            }
            self.next_copy_template += 1;
            t = self.tpls[i as usize].next;
        }
        self.scopes.push((container, self.templates));
    }

    fn op_code(&self, op: Id) -> &'static [u8; 2] {
        if self.k(op) == K::Operator { operator(self.num(op)).0 } else { b"\0\0" }
    }

    fn fold_expression(&mut self, dc: Id) -> bool {
        let Some(opnode) = self.l(dc) else { return false };
        let code = self.op_code(opnode);
        if code[0] != b'f' {
            return false;
        }
        let Some(ops) = self.r(dc) else { return false };
        let operator_ = self.l(ops);
        let mut op1 = self.r(ops);
        let mut op2 = None;
        if let Some(o) = op1
            && self.k(o) == K::TrinaryArg2
        {
            op2 = self.r(o);
            op1 = self.l(o);
        }
        // The whole pack is printed.
        let save = self.pack_index;
        self.pack_index = -1;
        match code[1] {
            b'l' => {
                self.s(b"(...");
                self.expr_op(operator_);
                self.subexpr(op1);
                self.ch(b')');
            }
            b'r' => {
                self.ch(b'(');
                self.subexpr(op1);
                self.expr_op(operator_);
                self.s(b"...)");
            }
            b'L' | b'R' => {
                self.ch(b'(');
                self.subexpr(op1);
                self.expr_op(operator_);
                self.s(b"...");
                self.expr_op(operator_);
                self.subexpr(op2);
                self.ch(b')');
            }
            _ => {}
        }
        self.pack_index = save;
        true
    }

    fn is_designated_init(&self, dc: P) -> bool {
        let Some(d) = dc else { return false };
        if !matches!(self.k(d), K::Binary | K::Trinary) {
            return false;
        }
        let Some(op) = self.l(d) else { return false };
        let code = self.op_code(op);
        code[0] == b'd' && matches!(code[1], b'i' | b'x' | b'X')
    }

    fn designated_init(&mut self, dc: Id) -> bool {
        if !self.is_designated_init(Some(dc)) {
            return false;
        }
        let code = self.op_code(self.l(dc).unwrap());
        let Some(operands) = self.r(dc) else { return false };
        let op1 = self.l(operands);
        let mut op2 = self.r(operands);
        self.ch(if code[1] == b'i' { b'.' } else { b'[' });
        self.print(op1);
        if code[1] == b'X' {
            self.s(b" ... ");
            let Some(o) = op2 else {
                self.failed = true;
                return true;
            };
            self.print(self.l(o));
            op2 = self.r(o);
        }
        if code[1] != b'i' {
            self.ch(b']');
        }
        if self.is_designated_init(op2) {
            // Chained designators: no `=` between them.
            self.print(op2);
        } else {
            self.ch(b'=');
            self.subexpr(op2);
        }
        true
    }

    fn lambda_parm_name(&mut self, k: K, index: i32) {
        let s: &[u8] = match k {
            K::TemplateTypeParm => b"$T",
            K::TemplateNonTypeParm => b"$N",
            K::TemplateTemplateParm => b"$TT",
            _ => {
                self.failed = true;
                b""
            }
        };
        self.s(s);
        self.num_str(index);
    }

    fn print_inner(&mut self, dc: Id) {
        use K::*;
        if self.failed {
            return;
        }
        let node = self.nodes[dc as usize];
        match node.k {
            Name => self.text(node.text),
            TaggedName => {
                self.print(node.l);
                self.s(b"[abi:");
                self.print(node.r);
                self.ch(b']');
            }
            StructuredBinding => {
                self.ch(b'[');
                let mut d = Some(dc);
                while let Some(x) = d {
                    self.print(self.l(x));
                    d = self.r(x);
                    if d.is_some() {
                        self.s(b", ");
                    }
                }
                self.ch(b']');
            }
            ModuleEntity => {
                self.print(node.l);
                self.ch(b'@');
                self.print(node.r);
            }
            ModuleName | ModulePartition => {
                if node.l.is_some() {
                    self.print(node.l);
                }
                if node.k == ModulePartition {
                    self.ch(b':');
                } else if node.l.is_some() {
                    self.ch(b'.');
                }
                self.print(node.r);
            }
            QualName | LocalName => {
                self.print(node.l);
                self.s(b"::");
                let mut local = node.r;
                if let Some(x) = local
                    && self.k(x) == DefaultArg
                {
                    self.s(b"{default arg#");
                    self.num_str(self.num(x) + 1);
                    self.s(b"}::");
                    local = self.l(x);
                }
                self.print(local);
            }
            TypedName => self.print_typed_name(dc),
            Template => {
                // Modifiers are not pushed into a template's arguments.
                let hold_current = self.current_template;
                self.current_template = Some(dc);
                let hold_mods = self.modifiers.take();
                self.print(node.l);
                if self.last == b'<' {
                    self.ch(b' ');
                }
                self.ch(b'<');
                self.print(node.r);
                // No `>>`: the closing brackets of nested templates are
                // kept apart, as in C++03.
                if self.last == b'>' {
                    self.ch(b' ');
                }
                self.ch(b'>');
                self.modifiers = hold_mods;
                self.current_template = hold_current;
            }
            TemplateParam => {
                let n = node.num;
                if self.lambda_tpl_parms > n + 1 {
                    // A lambda's own template parameter: $T0, $N1, $TT2.
                    let Some(t) = self.templates else {
                        self.failed = true;
                        return;
                    };
                    let mut a = self.tpls[t as usize].decl.and_then(|h| self.l(h));
                    let mut c = n;
                    while let Some(x) = a {
                        if c == 0 {
                            break;
                        }
                        a = self.r(x);
                        c -= 1;
                    }
                    if let Some(x) = a
                        && self.k(x) == TemplatePackParm
                    {
                        a = self.l(x);
                    }
                    match a {
                        None => self.failed = true,
                        Some(x) => self.lambda_parm_name(self.k(x), n),
                    }
                } else if self.lambda_tpl_parms != 0 {
                    // A generic lambda's `auto` parameter.
                    self.s(b"auto:");
                    self.num_str(n + 1);
                } else {
                    let mut a = self.lookup_template_argument(dc);
                    if let Some(x) = a
                        && self.k(x) == TemplateArglist
                    {
                        a = self.index_template_argument(Some(x), self.pack_index);
                    }
                    if a.is_none() {
                        self.failed = true;
                        return;
                    }
                    // The argument is printed in the enclosing scope: it
                    // may name an outer template's parameter.
                    let hold = self.templates;
                    self.templates = hold.and_then(|t| self.tpls[t as usize].next);
                    self.print(a);
                    self.templates = hold;
                }
            }
            TparmObj => self.prefixed(b"template parameter object for ", node.l),
            Ctor => self.print(node.l),
            Dtor => {
                self.ch(b'~');
                self.print(node.l);
            }
            ModuleInit => self.prefixed(b"initializer for module ", node.l),
            Vtable => self.prefixed(b"vtable for ", node.l),
            Vtt => self.prefixed(b"VTT for ", node.l),
            ConstructionVtable => {
                self.prefixed(b"construction vtable for ", node.l);
                self.s(b"-in-");
                self.print(node.r);
            }
            Typeinfo => self.prefixed(b"typeinfo for ", node.l),
            TypeinfoName => self.prefixed(b"typeinfo name for ", node.l),
            TypeinfoFn => self.prefixed(b"typeinfo fn for ", node.l),
            Thunk => self.prefixed(b"non-virtual thunk to ", node.l),
            VirtualThunk => self.prefixed(b"virtual thunk to ", node.l),
            CovariantThunk => self.prefixed(b"covariant return thunk to ", node.l),
            JavaClass => self.prefixed(b"java Class for ", node.l),
            Guard => self.prefixed(b"guard variable for ", node.l),
            TlsInit => self.prefixed(b"TLS init function for ", node.l),
            TlsWrapper => self.prefixed(b"TLS wrapper function for ", node.l),
            Reftemp => {
                self.prefixed(b"reference temporary #", node.r);
                self.prefixed(b" for ", node.l);
            }
            HiddenAlias => self.prefixed(b"hidden alias for ", node.l),
            TransactionClone => self.prefixed(b"transaction clone for ", node.l),
            NontransactionClone => self.prefixed(b"non-transaction clone for ", node.l),
            SubStd => self.text(node.text),
            Restrict | Volatile | Const => {
                // The same qualifier already pending (as array element
                // qualifiers, or a const template argument made const
                // again) is printed once.
                let mut p = self.modifiers;
                while let Some(i) = p {
                    let m = self.mods[i as usize];
                    if !m.printed {
                        let mk = self.k(m.m);
                        if !matches!(mk, Restrict | Volatile | Const) {
                            break;
                        }
                        if mk == node.k {
                            self.print(node.l);
                            return;
                        }
                    }
                    p = m.next;
                }
                self.modifier(dc, None, None);
            }
            Reference | RvalueReference => {
                // Reference collapsing: & + && is &. A template parameter
                // is looked up in the scope of its first printing, kept for
                // when it is printed again through a substitution.
                let mut sub = node.l;
                let mut mod_inner = None;
                let mut saved = None;
                let mut d = dc;
                if let Some(s) = sub
                    && self.lambda_tpl_parms == 0
                    && self.k(s) == TemplateParam
                {
                    match self.scopes.iter().find(|x| x.0 == s).copied() {
                        None => {
                            self.save_scope(s);
                            if self.failed {
                                return;
                            }
                        }
                        Some(scope) => {
                            let top = self.stack.len() - 1;
                            let found = self.stack.iter().enumerate().rev().any(|(i, &e)| e == s || (e == dc && i != top));
                            if !found {
                                saved = Some(self.templates);
                                self.templates = scope.1;
                            }
                        }
                    }
                    let mut a = self.lookup_template_argument(s);
                    if let Some(x) = a
                        && self.k(x) == TemplateArglist
                    {
                        a = self.index_template_argument(Some(x), self.pack_index);
                    }
                    let Some(a) = a else {
                        if let Some(t) = saved {
                            self.templates = t;
                        }
                        self.failed = true;
                        return;
                    };
                    sub = Some(a);
                }
                if let Some(s) = sub {
                    let sk = self.k(s);
                    if sk == Reference || sk == node.k {
                        d = s;
                    } else if sk == RvalueReference {
                        // (without an operand, the reference's own is used)
                        mod_inner = self.l(s);
                    }
                }
                self.modifier(d, mod_inner, saved);
            }
            VendorTypeQual | Pointer | Complex | Imaginary => self.modifier(dc, None, None),
            k if is_fnqual(k) => self.modifier(dc, None, None),
            BuiltinType => {
                let name = BUILTINS[node.num as usize].0;
                self.s(name.as_bytes());
            }
            ExtendedBuiltinType => {
                self.s(BUILTINS[BUILTIN_FLOAT_N as usize].0.as_bytes());
                self.num_str(node.num);
                self.text(node.text);
            }
            VendorType => self.print(node.l),
            FunctionType => {
                if node.l.is_some() {
                    // The return type goes first, with the rest of the type
                    // passed down as a modifier to go after it.
                    let m = self.push_mod(dc);
                    self.print(node.l);
                    self.modifiers = self.mods[m as usize].next;
                    if self.mods[m as usize].printed {
                        return;
                    }
                    self.ch(b' ');
                }
                let mods = self.modifiers;
                self.function_type(dc, mods);
            }
            ArrayType => {
                // Multi-dimensional arrays, and cv-qualifiers on an array
                // (they are the element's), go down as modifiers.
                let hold = self.modifiers;
                let first = self.push_mod(dc);
                let mut adpm = vec![first];
                let mut p = hold;
                while let Some(i) = p {
                    let m = self.mods[i as usize];
                    if !matches!(self.k(m.m), Restrict | Volatile | Const) {
                        break;
                    }
                    if !m.printed {
                        if adpm.len() >= 4 {
                            self.failed = true;
                            return;
                        }
                        self.mods.push(Mod { next: self.modifiers, ..m });
                        let id = (self.mods.len() - 1) as u32;
                        self.modifiers = Some(id);
                        self.mods[i as usize].printed = true;
                        adpm.push(id);
                    }
                    p = m.next;
                }
                self.print(node.r);
                self.modifiers = hold;
                if self.mods[first as usize].printed {
                    return;
                }
                for &i in adpm[1..].iter().rev() {
                    let m = self.mods[i as usize].m;
                    self.print_mod(m);
                }
                let mods = self.modifiers;
                self.array_type(dc, mods);
            }
            PtrmemType | VectorType => {
                let m = self.push_mod(dc);
                self.print(node.r);
                if !self.mods[m as usize].printed {
                    self.print_mod(dc);
                }
                self.modifiers = self.mods[m as usize].next;
            }
            Arglist | TemplateArglist => {
                if node.l.is_some() {
                    self.print(node.l);
                }
                if node.r.is_some() {
                    self.s(b", ");
                    let len = self.out.len();
                    self.print(node.r);
                    // An empty pack prints nothing: the ", " is taken back
                    // (the last character stays the space).
                    if self.out.len() == len && !self.failed {
                        self.out.truncate(len - 2);
                    }
                }
            }
            InitializerList => {
                if node.l.is_some() {
                    self.print(node.l);
                }
                self.ch(b'{');
                self.print(node.r);
                self.ch(b'}');
            }
            Operator => {
                let (_, name, _) = operator(node.num);
                let name = name.as_bytes();
                self.s(b"operator");
                // `operator new`, but `operator+`.
                if is_lower(name[0]) {
                    self.ch(b' ');
                }
                let name = name.strip_suffix(b" ").unwrap_or(name);
                self.s(name);
            }
            ExtendedOperator => self.prefixed(b"operator ", node.l),
            Conversion => {
                self.s(b"operator ");
                self.conversion(dc);
            }
            Nullary => self.expr_op(node.l),
            Unary => self.print_unary(dc),
            Binary => self.print_binary(dc),
            BinaryArgs | TrinaryArg1 | TrinaryArg2 => self.failed = true,
            Trinary => self.print_trinary(dc),
            Literal | LiteralNeg => self.print_literal(dc),
            VendorExpr => {
                self.print(node.l);
                self.ch(b'(');
                self.print(node.r);
                self.ch(b')');
            }
            Number => self.num_str(node.num),
            JavaResource => self.prefixed(b"java resource ", node.l),
            CompoundName => {
                self.print(node.l);
                self.print(node.r);
            }
            Character => self.ch(node.num as u8),
            Decltype => {
                self.prefixed(b"decltype (", node.l);
                self.ch(b')');
            }
            PackExpansion => {
                let a = if self.lambda_tpl_parms == 0 { self.find_pack(node.l) } else { None };
                match a {
                    None => {
                        // Only function parameter packs: the pattern and "...".
                        self.subexpr(node.l);
                        self.s(b"...");
                    }
                    Some(a) => {
                        let len = self.pack_length(Some(a));
                        for i in 0..len {
                            if i != 0 {
                                self.s(b", ");
                            }
                            // (libiberty leaves the index as it is afterwards)
                            self.pack_index = i;
                            self.print(node.l);
                        }
                    }
                }
            }
            FunctionParam => {
                if node.num == 0 {
                    self.s(b"this");
                } else {
                    self.s(b"{parm#");
                    self.num_str(node.num);
                    self.ch(b'}');
                }
            }
            GlobalConstructors => self.prefixed(b"global constructors keyed to ", node.l),
            GlobalDestructors => self.prefixed(b"global destructors keyed to ", node.l),
            Lambda => self.print_lambda(dc),
            UnnamedType => {
                self.s(b"{unnamed type#");
                self.num_str(node.num + 1);
                self.ch(b'}');
            }
            Clone => {
                self.print(node.l);
                self.s(b" [clone ");
                self.print(node.r);
                self.ch(b']');
            }
            Friend => {
                self.print(node.l);
                self.s(b"[friend]");
            }
            TemplateHead => {
                self.ch(b'<');
                let mut parm = node.l;
                let mut first = true;
                while let Some(p) = parm {
                    if !first {
                        self.s(b", ");
                    }
                    first = false;
                    self.print(Some(p));
                    parm = self.r(p);
                }
                self.ch(b'>');
            }
            TemplateTypeParm => self.s(b"typename"),
            TemplateNonTypeParm => self.print(node.l),
            TemplateTemplateParm => {
                self.prefixed(b"template", node.l);
                self.s(b" class");
            }
            TemplatePackParm => {
                self.print(node.l);
                self.s(b"...");
            }
            Constraints => {
                self.print(node.l);
                self.s(b" requires ");
                self.print(node.r);
            }
            _ => self.failed = true,
        }
    }

    fn prefixed(&mut self, s: &[u8], dc: P) {
        self.s(s);
        self.print(dc);
    }

    /// Pushes `dc` as a pending modifier, prints what it modifies, and then
    /// the modifier itself unless something printed it already.
    fn modifier(&mut self, dc: Id, mod_inner: P, saved_templates: Option<Option<u32>>) {
        let m = self.push_mod(dc);
        let inner = mod_inner.or_else(|| self.l(dc));
        self.print(inner);
        if !self.mods[m as usize].printed {
            self.print_mod(dc);
        }
        self.modifiers = self.mods[m as usize].next;
        if let Some(t) = saved_templates {
            self.templates = t;
        }
    }

    /// A name with its type: the function's qualifiers and the name itself
    /// go down as modifiers so the name lands inside the declarator.
    fn print_typed_name(&mut self, dc: Id) {
        let hold_modifiers = self.modifiers.take();
        let mut adpm: Vec<u32> = Vec::with_capacity(4);
        let mut typed_name = self.l(dc);
        while let Some(t) = typed_name {
            if adpm.len() >= 4 {
                self.failed = true;
                return;
            }
            adpm.push(self.push_mod(t));
            if !is_fnqual(self.k(t)) {
                break;
            }
            typed_name = self.l(t);
        }
        let Some(mut tn) = typed_name else {
            self.failed = true;
            return;
        };
        // A class local to a function: qualifiers on the local name's
        // entity apply here too.
        if self.k(tn) == K::LocalName {
            let Some(mut t) = self.r(tn) else {
                self.failed = true;
                return;
            };
            if self.k(t) == K::DefaultArg {
                match self.l(t) {
                    Some(x) => t = x,
                    None => {
                        self.failed = true;
                        return;
                    }
                }
            }
            let mut cur = Some(t);
            while let Some(c) = cur {
                if !is_fnqual(self.k(c)) {
                    break;
                }
                if adpm.len() >= 4 {
                    self.failed = true;
                    return;
                }
                // The qualifier goes just under the top entry.
                let top = *adpm.last().unwrap();
                let copy = Mod { next: Some(top), ..self.mods[top as usize] };
                self.mods.push(copy);
                let id = (self.mods.len() - 1) as u32;
                self.modifiers = Some(id);
                let tm = &mut self.mods[top as usize];
                tm.m = c;
                tm.printed = false;
                tm.templates = self.templates;
                adpm.push(id);
                cur = self.l(c);
            }
            let Some(c) = cur else {
                self.failed = true;
                return;
            };
            tn = c;
        }
        // A template's arguments are in scope for the function type.
        let mut pushed = None;
        if self.k(tn) == K::Template {
            pushed = Some(self.push_tpl(Some(tn)));
            // Constraints wrap the template's argument list; they are moved
            // onto the function type (printed like a trailing
            // requires-clause) so that the arguments can be looked up.
            if let Some(tnr) = self.r(tn)
                && self.k(tnr) == K::Constraints
            {
                let args = self.l(tnr);
                let ftype = self.r(dc);
                self.nodes[tn as usize].r = args;
                self.nodes[tnr as usize].l = ftype;
                self.nodes[dc as usize].r = Some(tnr);
            }
        }
        self.print(self.r(dc));
        if let Some(prev) = pushed {
            self.templates = prev;
        }
        for &i in adpm.iter().rev() {
            if !self.mods[i as usize].printed {
                self.ch(b' ');
                let m = self.mods[i as usize].m;
                self.print_mod(m);
            }
        }
        self.modifiers = hold_modifiers;
    }

    fn print_unary(&mut self, dc: Id) {
        let (Some(op), Some(mut operand)) = (self.l(dc), self.r(dc)) else {
            self.failed = true;
            return;
        };
        let mut code = None;
        if self.k(op) == K::Operator {
            let c = operator(self.num(op)).0;
            code = Some(c);
            if c == b"ad" {
                // `&f`, not `&f(int)`: no parameters for the address of a
                // qualified function.
                if self.k(operand) == K::TypedName
                    && self.l(operand).is_some_and(|l| self.k(l) == K::QualName)
                    && self.r(operand).is_some_and(|r| self.k(r) == K::FunctionType)
                {
                    operand = self.l(operand).unwrap();
                }
            }
            if self.k(operand) == K::BinaryArgs {
                // A postfix `++`/`--`.
                self.subexpr(self.l(operand));
                self.expr_op(Some(op));
                return;
            }
        }
        if code == Some(b"sZ") {
            // sizeof...(pack): the pack's length.
            let a = self.find_pack(Some(operand));
            let len = self.pack_length(a);
            self.num_str(len);
            return;
        }
        if code == Some(b"sP") {
            let len = self.args_length(Some(operand));
            self.num_str(len);
            return;
        }
        if self.k(op) != K::Cast {
            self.expr_op(Some(op));
        } else {
            self.ch(b'(');
            self.print(self.l(op));
            self.ch(b')');
        }
        if code == Some(b"gs") {
            // No parentheses after `::`.
            self.print(Some(operand));
        } else if code == Some(b"st") || code == Some(b"nx") {
            // sizeof (type) and noexcept(expr) always have them.
            self.ch(b'(');
            self.print(Some(operand));
            self.ch(b')');
        } else {
            self.subexpr(Some(operand));
        }
    }

    fn print_binary(&mut self, dc: Id) {
        let (Some(op), Some(args)) = (self.l(dc), self.r(dc)) else {
            self.failed = true;
            return;
        };
        if self.k(args) != K::BinaryArgs {
            self.failed = true;
            return;
        }
        let code = self.op_code(op);
        if self.k(op) == K::Operator && is_new_cast(code) {
            self.expr_op(Some(op));
            self.ch(b'<');
            self.print(self.l(args));
            self.s(b">(");
            self.print(self.r(args));
            self.ch(b')');
            return;
        }
        if self.fold_expression(dc) || self.designated_init(dc) {
            return;
        }
        // `>` is wrapped in parentheses so as not to end a template
        // argument list.
        let gt = self.k(op) == K::Operator && operator(self.num(op)).1 == ">";
        if gt {
            self.ch(b'(');
        }
        let left = self.l(args);
        if code == b"cl"
            && let Some(f) = left
            && self.k(f) == K::TypedName
        {
            // A call shows the function's name, not its parameter types.
            if self.r(f).is_none_or(|r| self.k(r) != K::FunctionType) {
                self.failed = true;
            }
            self.subexpr(self.l(f));
        } else {
            self.subexpr(left);
        }
        if code == b"ix" {
            self.ch(b'[');
            self.print(self.r(args));
            self.ch(b']');
        } else {
            if code != b"cl" {
                self.expr_op(Some(op));
            }
            self.subexpr(self.r(args));
        }
        if gt {
            self.ch(b')');
        }
    }

    fn print_trinary(&mut self, dc: Id) {
        let (Some(op), Some(a1)) = (self.l(dc), self.r(dc)) else {
            self.failed = true;
            return;
        };
        let a2 = self.r(a1);
        if self.k(a1) != K::TrinaryArg1 || a2.is_none_or(|a| self.k(a) != K::TrinaryArg2) {
            self.failed = true;
            return;
        }
        if self.fold_expression(dc) || self.designated_init(dc) {
            return;
        }
        let a2 = a2.unwrap();
        let (first, second, third) = (self.l(a1), self.l(a2), self.r(a2));
        if self.op_code(op) == b"qu" {
            self.subexpr(first);
            self.expr_op(Some(op));
            self.subexpr(second);
            self.s(b" : ");
            self.subexpr(third);
        } else {
            self.s(b"new ");
            if first.is_some_and(|f| self.l(f).is_some()) {
                self.subexpr(first);
                self.ch(b' ');
            }
            self.print(second);
            if third.is_some() {
                self.subexpr(third);
            }
        }
    }

    /// A literal: `42`, `42u`, `42ul`, `-1l`, `true`; other types print as
    /// a cast, `(char)97`, and floating ones as `(double)[40091eb8...]`.
    fn print_literal(&mut self, dc: Id) {
        let node = self.nodes[dc as usize];
        let (Some(ty), Some(value)) = (node.l, node.r) else {
            self.failed = true;
            return;
        };
        let mut style = LitStyle::Default;
        if self.k(ty) == K::BuiltinType {
            style = BUILTINS[self.num(ty) as usize].1;
            let value_is_name = self.k(value) == K::Name;
            match style {
                LitStyle::Int | LitStyle::Unsigned | LitStyle::Long | LitStyle::UnsignedLong | LitStyle::LongLong | LitStyle::UnsignedLongLong if value_is_name => {
                    if node.k == K::LiteralNeg {
                        self.ch(b'-');
                    }
                    self.print(Some(value));
                    let suffix: &[u8] = match style {
                        LitStyle::Unsigned => b"u",
                        LitStyle::Long => b"l",
                        LitStyle::UnsignedLong => b"ul",
                        LitStyle::LongLong => b"ll",
                        LitStyle::UnsignedLongLong => b"ull",
                        _ => b"",
                    };
                    self.s(suffix);
                    return;
                }
                LitStyle::Bool if value_is_name && node.k == K::Literal => {
                    if let Text::Input(start, 1) = self.nodes[value as usize].text {
                        match self.input[start as usize] {
                            b'0' => return self.s(b"false"),
                            b'1' => return self.s(b"true"),
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        self.ch(b'(');
        self.print(Some(ty));
        self.ch(b')');
        if node.k == K::LiteralNeg {
            self.ch(b'-');
        }
        if style == LitStyle::Float {
            self.ch(b'[');
        }
        self.print(Some(value));
        if style == LitStyle::Float {
            self.ch(b']');
        }
    }

    fn print_lambda(&mut self, dc: Id) {
        // `{lambda(int)#1}`; a generic lambda's `auto` parameters are its
        // synthetic template parameters, and an explicit template head
        // shows as `<typename $T0>`.
        self.s(b"{lambda");
        let mut parms = self.l(dc);
        let saved_tpl_parms = self.lambda_tpl_parms;
        self.lambda_tpl_parms = 0;
        let head = parms.filter(|&p| self.k(p) == K::TemplateHead);
        let prev = self.push_tpl(head);
        if let Some(h) = head {
            self.ch(b'<');
            let mut parm = self.l(h);
            while let Some(p) = parm {
                if self.lambda_tpl_parms != 0 {
                    self.s(b", ");
                }
                self.lambda_tpl_parms += 1;
                self.print(Some(p));
                self.ch(b' ');
                let named = if self.k(p) == K::TemplatePackParm { self.l(p) } else { Some(p) };
                match named {
                    Some(x) => self.lambda_parm_name(self.k(x), self.lambda_tpl_parms - 1),
                    None => self.failed = true,
                }
                parm = self.r(p);
            }
            self.ch(b'>');
            parms = self.r(h);
        }
        self.lambda_tpl_parms += 1;
        self.ch(b'(');
        self.print(parms);
        self.lambda_tpl_parms = saved_tpl_parms;
        self.templates = prev;
        self.s(b")#");
        self.num_str(self.num(dc) + 1);
        self.ch(b'}');
    }

    fn print_mod_list(&mut self, mods: Option<u32>, suffix: bool) {
        let Some(mi) = mods else { return };
        if self.failed {
            return;
        }
        let m = self.mods[mi as usize];
        if m.printed || (!suffix && is_fnqual(self.k(m.m))) {
            self.print_mod_list(m.next, suffix);
            return;
        }
        self.mods[mi as usize].printed = true;
        let hold = self.templates;
        self.templates = m.templates;
        match self.k(m.m) {
            K::FunctionType => {
                self.function_type(m.m, m.next);
                self.templates = hold;
            }
            K::ArrayType => {
                self.array_type(m.m, m.next);
                self.templates = hold;
            }
            K::LocalName => {
                // The function (without modifiers), `::`, and the entity
                // without the qualifiers already taken off it.
                let hold_mods = self.modifiers.take();
                self.print(self.l(m.m));
                self.modifiers = hold_mods;
                self.s(b"::");
                let mut d = self.r(m.m);
                if let Some(x) = d
                    && self.k(x) == K::DefaultArg
                {
                    self.s(b"{default arg#");
                    self.num_str(self.num(x) + 1);
                    self.s(b"}::");
                    d = self.l(x);
                }
                while let Some(x) = d {
                    if !is_fnqual(self.k(x)) {
                        break;
                    }
                    d = self.l(x);
                }
                self.print(d);
                self.templates = hold;
            }
            _ => {
                self.print_mod(m.m);
                self.templates = hold;
                self.print_mod_list(m.next, suffix);
            }
        }
    }

    fn print_mod(&mut self, m: Id) {
        use K::*;
        match self.k(m) {
            Restrict | RestrictThis => self.s(b" restrict"),
            Volatile | VolatileThis => self.s(b" volatile"),
            Const | ConstThis => self.s(b" const"),
            TransactionSafe => self.s(b" transaction_safe"),
            Noexcept | ThrowSpec => {
                self.s(if self.k(m) == Noexcept { b" noexcept" } else { b" throw" });
                if let Some(r) = self.r(m) {
                    self.ch(b'(');
                    self.print(Some(r));
                    self.ch(b')');
                }
            }
            VendorTypeQual => {
                self.ch(b' ');
                self.print(self.r(m));
            }
            Pointer => self.ch(b'*'),
            ReferenceThis => self.s(b" &"),
            Reference => self.ch(b'&'),
            RvalueReferenceThis => self.s(b" &&"),
            RvalueReference => self.s(b"&&"),
            XobjMemberFunction => {}
            Complex => self.s(b" _Complex"),
            Imaginary => self.s(b" _Imaginary"),
            PtrmemType => {
                if self.last != b'(' {
                    self.ch(b' ');
                }
                self.print(self.l(m));
                self.s(b"::*");
            }
            TypedName => self.print(self.l(m)),
            VectorType => {
                self.s(b" __vector(");
                self.print(self.l(m));
                self.ch(b')');
            }
            _ => self.print(Some(m)),
        }
    }

    /// A function type without its return type: the pending modifiers in
    /// parentheses where needed (`int (*)(int)`), the parameters, and the
    /// function's own qualifiers.
    fn function_type(&mut self, dc: Id, mods: Option<u32>) {
        use K::*;
        let mut need_paren = false;
        let mut need_space = false;
        let mut xobj = false;
        let mut p = mods;
        while let Some(i) = p {
            let m = self.mods[i as usize];
            if m.printed {
                break;
            }
            match self.k(m.m) {
                Pointer | Reference | RvalueReference => need_paren = true,
                Restrict | Volatile | Const | VendorTypeQual | Complex | Imaginary | PtrmemType => {
                    need_space = true;
                    need_paren = true;
                }
                XobjMemberFunction => xobj = true,
                _ => {}
            }
            if need_paren {
                break;
            }
            p = m.next;
        }
        if need_paren {
            if !need_space && self.last != b'(' && self.last != b'*' {
                need_space = true;
            }
            if need_space && self.last != b' ' {
                self.ch(b' ');
            }
            self.ch(b'(');
        }
        let hold = self.modifiers.take();
        self.print_mod_list(mods, false);
        if need_paren {
            self.ch(b')');
        }
        self.ch(b'(');
        if xobj {
            self.s(b"this ");
        }
        if let Some(r) = self.r(dc) {
            self.print(Some(r));
        }
        self.ch(b')');
        self.print_mod_list(mods, true);
        self.modifiers = hold;
    }

    /// An array type without its element type.
    fn array_type(&mut self, dc: Id, mods: Option<u32>) {
        let mut need_space = true;
        if mods.is_some() {
            let mut need_paren = false;
            let mut p = mods;
            while let Some(i) = p {
                let m = self.mods[i as usize];
                if !m.printed {
                    if self.k(m.m) == K::ArrayType {
                        need_space = false;
                    } else {
                        need_paren = true;
                        need_space = true;
                    }
                    break;
                }
                p = m.next;
            }
            if need_paren {
                self.s(b" (");
            }
            self.print_mod_list(mods, false);
            if need_paren {
                self.ch(b')');
            }
        }
        if need_space {
            self.ch(b' ');
        }
        self.ch(b'[');
        if let Some(l) = self.l(dc) {
            self.print(Some(l));
        }
        self.ch(b']');
    }

    fn expr_op(&mut self, dc: P) {
        match dc {
            Some(d) if self.k(d) == K::Operator => {
                let name = operator(self.num(d)).1;
                self.s(name.as_bytes());
            }
            _ => self.print(dc),
        }
    }

    /// A conversion operator's type sees the enclosing template's
    /// arguments.
    fn conversion(&mut self, dc: Id) {
        let mut prev = None;
        if self.current_template.is_some() {
            prev = Some(self.push_tpl(self.current_template));
        }
        self.print(self.l(dc));
        if let Some(p) = prev {
            self.templates = p;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::demangle;

    #[test]
    fn basics() {
        for (m, want) in [
            ("_Z1fv", Some("f()")),
            ("i", Some("int")),
            ("Pi", Some("int*")),
            ("main", None),
            ("_ZNSsC2Ev", Some("std::basic_string<char, std::char_traits<char>, std::allocator<char> >::basic_string()")),
            ("_ZTVN12_GLOBAL__N_116ARMMCCodeEmitterE", Some("vtable for (anonymous namespace)::ARMMCCodeEmitter")),
            ("_ZL10DisableCGP.llvm.12963298279573946436", None),
            ("_Z3foov.llvm.12840869331085312698", Some("foo() [clone .llvm.12840869331085312698]")),
            ("_Z1fSt8functionIFN4llvm5APIntERKS1_EE", Some("f(std::function<llvm::APInt (llvm::APInt const&)>)")),
            ("_ZNSbIwSt11char_traitsIwESaIwEEC1IPwEET_S5_RKS1_", Some("std::basic_string<wchar_t, std::char_traits<wchar_t>, std::allocator<wchar_t> >::basic_string<wchar_t*>(wchar_t*, wchar_t*, std::allocator<wchar_t> const&)")),
            ("_GLOBAL__I_foo", Some("global constructors keyed to foo")),
        ] {
            assert_eq!(demangle(m).as_deref(), want, "{m}");
        }
    }
}

#[cfg(test)]
mod deep {
    use super::demangle;

    /// Names at the length limit that nest as deeply as the grammar allows
    /// fail or succeed; they do not overflow the stack.
    #[test]
    fn deep_nesting_fits_a_small_stack() {
        let rep = |p: &str, n: usize, tail: &str| format!("{}{}", p.repeat(n), tail);
        let names = vec![
            rep("P", 1020, "i"),
            format!("_Z1f{}", rep("P", 1015, "i")),
            format!("_Z1f{}{}", "I".repeat(500), "E".repeat(500)),
            format!("_Z1f{}", rep("F", 1000, "vE")),
            format!("_Z1f{}i", "A1_".repeat(330)),
            format!("_Z1f{}", rep("PFv", 330, "")),
            format!("_ZN{}E", "1a".repeat(500)),
            format!("_Z{}", rep("N1a", 330, "")),
            format!("_Z1fIL_Z{}", rep("1fIL_Z", 165, "")),
            format!("_Z1fDT{}", "ps".repeat(500)),
            format!("_Z1fDT{}fp_", "ngngngng".repeat(120)),
            format!("_Z1f{}", "Dp".repeat(500)),
            format!("_Z1f{}S_", "PKS_".repeat(250)),
            format!("_Z1fI{}EvT_", "T_".repeat(500)),
            format!("_ZZ{}", rep("Z1fvE", 200, "")),
        ];
        let h = std::thread::Builder::new()
            // Measured need: under 512 KiB optimised, under 4 MiB in a
            // debug build. Threads that demangle get at least 2 MiB.
            .stack_size(if cfg!(debug_assertions) { 8 << 20 } else { 1 << 20 })
            .spawn(move || {
                for n in &names {
                    let _ = demangle(n);
                }
            })
            .unwrap();
        h.join().unwrap();
    }
}
