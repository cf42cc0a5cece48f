//! An event's format as parsed: its fields and its `print fmt` (the model
//! [`super::format`] and [`super::print_fmt`] build, and the evaluator
//! reads).

use std::cell::Cell;

/// Field flags (`TEP_FIELD_IS_*`).
pub mod ff {
    pub const ARRAY: u32 = 1;
    pub const POINTER: u32 = 2;
    pub const SIGNED: u32 = 4;
    pub const STRING: u32 = 8;
    pub const DYNAMIC: u32 = 16;
    pub const LONG: u32 = 32;
    pub const RELATIVE: u32 = 256;
}

/// Event flags (`TEP_EVENT_FL_*`).
pub mod ef {
    pub const ISFTRACE: u32 = 1;
    pub const ISBPRINT: u32 = 4;
    pub const FAILED: u32 = 0x8000_0000;
}

/// One field of an event record.
#[derive(Debug, Clone)]
pub struct Field {
    pub name: String,
    pub offset: u32,
    pub size: u32,
    pub elementsize: u32,
    /// libtraceevent clears `STRING` the first time an unprintable string
    /// field is printed raw; that sticks for later records.
    pub flags: Cell<u32>,
}

impl Field {
    pub fn has(&self, flag: u32) -> bool {
        self.flags.get() & flag != 0
    }
}

/// An event format.
#[derive(Debug)]
pub struct Event {
    pub id: i32,
    pub name: String,
    pub system: String,
    /// Common fields first, then the event's own.
    pub fields: Vec<Field>,
    pub nr_common: usize,
    pub flags: Cell<u32>,
    pub print: PrintFmt,
}

impl Event {
    #[cfg(test)]
    pub fn failed(&self) -> bool {
        self.flags.get() & ef::FAILED != 0
    }

    pub fn set_failed(&self) {
        self.flags.set(self.flags.get() | ef::FAILED);
    }

    /// `tep_find_common_field`.
    pub fn find_common_field(&self, name: &str) -> Option<usize> {
        self.fields[..self.nr_common].iter().position(|f| f.name == name)
    }

    /// `tep_find_field`: only the event's own fields.
    pub fn find_field(&self, name: &str) -> Option<usize> {
        self.fields[self.nr_common..].iter().position(|f| f.name == name).map(|i| i + self.nr_common)
    }

    /// `tep_find_any_field`: common fields first.
    pub fn find_any_field(&self, name: &str) -> Option<usize> {
        self.find_common_field(name).or_else(|| self.find_field(name))
    }
}

/// One `{ value, "string" }` of `__print_flags`/`__print_symbolic`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlagSym {
    pub value: String,
    pub str_: String,
}

/// A print argument (`struct tep_print_arg`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Arg {
    #[default]
    Null,
    Atom(String),
    /// `REC->name`; the field index is looked up when parsed.
    Field { name: String, field: Option<usize> },
    Flags { field: Box<Arg>, delim: Option<String>, flags: Vec<FlagSym> },
    Symbol { field: Box<Arg>, symbols: Vec<FlagSym> },
    /// `__print_hex` (`spaced`) and `__print_hex_str`.
    Hex { field: Box<Arg>, size: Box<Arg>, spaced: bool },
    IntArray { field: Box<Arg>, count: Box<Arg>, el_size: Box<Arg> },
    Type { ty: String, item: Box<Arg> },
    /// `__get_str(name)`.
    Str(String),
    Bitmask { name: String, cpumask: bool },
    DynArray { field: usize },
    DynArrayLen { field: usize },
    Op { op: String, left: Option<Box<Arg>>, right: Option<Box<Arg>>, prio: i32 },
}

/// What a piece of the format string is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseKind {
    /// Literal text (already unescaped).
    Text,
    Digit,
    Pointer,
    String,
}

/// One piece of the format (`struct tep_print_parse`).
#[derive(Debug, Clone)]
pub struct PrintParse {
    pub kind: ParseKind,
    /// The text, or the conversion (`%08lx`).
    pub format: Vec<u8>,
    pub arg: Option<Arg>,
    /// The argument a `*` in the conversion takes.
    pub len_arg: Option<Arg>,
    /// Length modifier count: -2 `hh`, -1 `h`, 0, 1 `l`, 2 `ll`.
    pub ls: i32,
}

/// A parsed `print fmt`.
#[derive(Debug, Clone, Default)]
pub struct PrintFmt {
    pub parse: Vec<PrintParse>,
}
