//! perf's command-line parsing (`tools/lib/subcmd/parse-options.c`),
//! reproduced so that `pstitch script` takes what `perf script` takes and
//! says what it says:
//!
//! - short options cluster (`-vG`), and take their value attached or as the
//!   next word (`-Fcomm`, `-F comm`); `-` alone and the first word that is
//!   not an option end the options (perf script's `STOP_AT_NON_OPTION`),
//!   as does `--`;
//! - long options take `--name=value` or `--name value`, and may be
//!   abbreviated to any unambiguous prefix (`--hide-call`); an exact name
//!   wins over the abbreviations it is a prefix of;
//! - every option has a `--no-` form (`--no-inline`, `--no-time`), which
//!   may be abbreviated too (`--no-inl`); it clears a string, zeroes a
//!   number or a counter;
//! - numbers are read like C's `strtol` (leading blanks and a sign, an
//!   empty number is 0, trailing junk is an error);
//! - errors print perf's message and the usage (the `Usage:` lines and the
//!   help of the options concerned) on stderr, exit status 129; `-h` prints
//!   the usage, `--list-opts` the long names (status 130).
//!
//! The engine knows nothing of what an option means: it hands each
//! occurrence, in command-line order, to a handler, which may refuse a
//! value (perf's callbacks that fail: the message, then the option's usage).
//! Nothing is printed here: what perf would print comes back as text.

use std::cmp::Ordering;

/// perf's option types (`enum parse_opt_type`), as perf script uses them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `OPT_BOOLEAN`: on, or off with `--no-`.
    Boolean,
    /// `OPT_INCR`: counts its occurrences; `--no-` resets the count.
    Incr,
    /// `OPT_STRING`: takes a value; `--no-` clears it.
    String,
    /// `OPT_INTEGER`: a C `int` read with `strtol`.
    Integer,
    /// `OPT_UINTEGER`: an `unsigned int` read with `strtol`.
    UInteger,
    /// `OPT_CALLBACK`: takes a value, handed to the option's callback.
    Callback,
    /// `OPT_CALLBACK_NOOPT`: takes no value.
    CallbackNoArg,
    /// `OPT_CALLBACK_OPTARG`: takes a value only as `--name=value`.
    CallbackOptArg,
}

/// One option: perf's `struct option` (the parts perf script uses).
#[derive(Debug, Clone, Copy)]
pub struct Opt {
    pub short: Option<u8>,
    pub long: &'static str,
    pub kind: Kind,
    /// The value's name in the usage (`<file>`); none prints `...`.
    pub argh: Option<&'static str>,
    pub help: &'static str,
}

/// What an occurrence of an option says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A boolean or counter given, a callback without a value.
    On,
    /// The `--no-` form.
    Off,
    /// The value of a string or callback option.
    Arg(String),
    /// A number (already cut to the option's C type).
    Int(i64),
    /// An optional value left out (`--itrace`).
    Absent,
}

/// Parsing ended early: print `stdout` and `stderr`, exit with `status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stop {
    pub status: u8,
    pub stdout: String,
    pub stderr: String,
}

/// perf's exit status for usage errors and `-h`.
pub const USAGE_STATUS: u8 = 129;

/// What a handler says of an occurrence.
pub type Handled = Result<(), String>;

/// The command line (`usage`: the `Usage:` lines) and its options.
pub struct Parser<'a> {
    pub options: &'a [Opt],
    /// pstitch's own long options: parsed like the others, not in perf's
    /// usage text or `--list-opts`.
    pub own: &'a [Opt],
    pub usage: &'a [&'a str],
}

/// Where `parse_options_step` is: the words left (`args[at..]`) and the
/// rest of a short-option cluster or the value after `=`.
struct Step<'s> {
    args: &'s [String],
    /// The words as given (`args` are their text, lossy where a word is
    /// not UTF-8); empty when they are the same.
    raw: &'s [Vec<u8>],
    at: usize,
    /// perf's `ctx->opt`.
    opt: Option<&'s str>,
}

/// How an option was named: as a short option, or long (negated or not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Named {
    Short,
    Long,
    Unset,
}

/// Why `get_value` failed.
enum Fail {
    /// perf's opterror (message printed without a newline) or a callback
    /// that failed (its message ends in one): then the option's usage.
    Usage(String),
}

impl<'a> Parser<'a> {
    /// Parses `args` (the words after the command name); `handle` gets
    /// every occurrence in order. Returns the words from the first one
    /// that is not an option on (`--` itself dropped).
    ///
    /// Words need not be UTF-8: `args` are their text (lossy), `raw` the
    /// words themselves (or empty: the same); `handle` also gets a value's
    /// own bytes (a path, a DSO name: perf takes them as they
    /// are). Option names are ASCII, so what precedes a value in its word
    /// (`--dsos=`, `-i`) is the same in both: the value's bytes are the
    /// word's from there.
    pub fn parse(&self, args: &[String], raw: &[Vec<u8>], mut handle: impl FnMut(&Opt, Value, Option<&[u8]>) -> Handled) -> Result<Vec<String>, Stop> {
        let raw = if raw.len() == args.len() { raw } else { &[] };
        let mut st = Step { args, raw, at: 0, opt: None };
        while st.at < args.len() {
            let arg = args[st.at].as_str();
            if !arg.starts_with('-') || arg.len() == 1 {
                break;
            }
            if !arg.starts_with("--") {
                self.short_cluster(&mut st, &arg[1..], &mut handle)?;
                st.at += 1;
                continue;
            }
            if arg.len() == 2 {
                st.at += 1;
                break;
            }
            let name = &arg[2..];
            match name {
                "help-all" | "help" => return Err(self.help(&st)),
                "list-opts" => {
                    let mut out: String = self.options.iter().map(|o| format!("--{} ", o.long)).collect();
                    out.push('\n');
                    return Err(Stop { status: 130, stdout: out, stderr: String::new() });
                }
                "list-cmds" => return Err(Stop { status: 130, stdout: "record report \n".into(), stderr: String::new() }),
                _ => {}
            }
            match self.long(&mut st, name, &mut handle) {
                Ok(true) => {}
                Ok(false) => return Err(self.unknown(&format!("unknown option `{name}'"))),
                Err(Fail::Usage(msg)) => return Err(self.usage_error(msg, self.option_usage(name, false))),
            }
            st.at += 1;
        }
        Ok(args[st.at..].to_vec())
    }

    /// `-abc`: each letter an option, until one takes the rest as its value.
    fn short_cluster<'s>(&self, st: &mut Step<'s>, cluster: &'s str, handle: &mut impl FnMut(&Opt, Value, Option<&[u8]>) -> Handled) -> Result<(), Stop> {
        let mut rest = cluster;
        let mut first = true;
        loop {
            if rest.starts_with('h') {
                return Err(self.help(st));
            }
            let c = rest.as_bytes()[0];
            let Some(o) = self.options.iter().find(|o| o.short == Some(c)) else {
                // perf names the unknown letter; in a cluster it shows the
                // word from that letter on.
                return Err(self.unknown(&format!("unknown switch `{}'", c as char)));
            };
            let tail = &rest[1..];
            st.opt = (!tail.is_empty()).then_some(tail);
            if let Err(Fail::Usage(msg)) = self.get_value(st, o, Named::Short, handle) {
                return Err(self.usage_error(msg, self.option_usage(&rest[..1], true)));
            }
            if first
                && st.opt.is_some()
                && let Some(stop) = self.check_typos(cluster)
            {
                return Err(stop);
            }
            first = false;
            match st.opt.take() {
                Some(more) => rest = more,
                None => return Ok(()),
            }
        }
    }

    /// perf's `check_typos`: `-force` was probably meant as `--force`.
    fn check_typos(&self, arg: &str) -> Option<Stop> {
        if arg.len() < 3 {
            return None;
        }
        let typo = arg.starts_with("no-") || self.options.iter().any(|o| o.long.starts_with(arg));
        typo.then(|| Stop { status: USAGE_STATUS, stdout: String::new(), stderr: format!(" Error: did you mean `--{arg}` (with two dashes ?)\n") })
    }

    /// perf's `parse_long_opt`: `Ok(false)` if no option has that name.
    fn long<'s>(&self, st: &mut Step<'s>, arg: &'s str, handle: &mut impl FnMut(&Opt, Value, Option<&[u8]>) -> Handled) -> Result<bool, Fail> {
        let arg_end = arg.find('=').unwrap_or(arg.len());
        let mut abbrev: Option<(&Opt, Named)> = None;
        let mut ambiguous: Option<(&Opt, Named)> = None;
        for o in self.options.iter().chain(self.own) {
            let name = o.long;
            let mut named = Named::Long;
            let rest = match arg.strip_prefix(name) {
                Some(rest) => Some(rest),
                None => {
                    let mut abbreviated = false;
                    let mut rest = None;
                    if let Some(positive) = name.strip_prefix("no-") {
                        // `--inline` for an option called `no-inline`.
                        if let Some(r) = arg.strip_prefix(positive) {
                            named = Named::Unset;
                            rest = Some(r);
                        } else if positive.starts_with(arg) {
                            named = Named::Unset;
                            abbreviated = true;
                        }
                    }
                    if rest.is_none() && !abbreviated {
                        if name.as_bytes().starts_with(&arg.as_bytes()[..arg_end]) {
                            abbreviated = true;
                        } else if "no-".starts_with(arg) {
                            named = Named::Unset;
                            abbreviated = true;
                        } else if let Some(negated) = arg.strip_prefix("no-") {
                            named = Named::Unset;
                            match negated.strip_prefix(name) {
                                Some(r) => rest = Some(r),
                                None if name.starts_with(negated) => abbreviated = true,
                                None => continue,
                            }
                        } else {
                            continue;
                        }
                    }
                    if abbreviated {
                        if abbrev.is_some() {
                            ambiguous = abbrev;
                        }
                        if named != Named::Unset && arg_end < arg.len() {
                            st.opt = Some(&arg[arg_end + 1..]);
                        }
                        abbrev = Some((o, named));
                        continue;
                    }
                    rest
                }
            };
            let Some(rest) = rest else { continue };
            if !rest.is_empty() {
                let Some(value) = rest.strip_prefix('=') else { continue };
                st.opt = Some(value);
            }
            self.get_value(st, o, named, handle)?;
            return Ok(true);
        }
        if let (Some((a, an)), Some((b, bn))) = (ambiguous, abbrev) {
            let no = |n| if n == Named::Unset { "no-" } else { "" };
            return Err(Fail::Usage(format!(
                " Error: Ambiguous option: {arg} (could be --{}{} or --{}{})\n",
                no(an),
                a.long,
                no(bn),
                b.long
            )));
        }
        match abbrev {
            Some((o, named)) => self.get_value(st, o, named, handle).map(|_| true),
            None => Ok(false),
        }
    }

    /// perf's `get_value`: checks the form, reads the value, hands it on.
    fn get_value(&self, st: &mut Step<'_>, o: &Opt, named: Named, handle: &mut impl FnMut(&Opt, Value, Option<&[u8]>) -> Handled) -> Result<(), Fail> {
        let unset = named == Named::Unset;
        let error = |reason: &str| {
            Fail::Usage(match named {
                Named::Short => format!(" Error: switch `{}' {reason}", o.short.unwrap_or(b'?') as char),
                Named::Unset => format!(" Error: option `no-{}' {reason}", o.long),
                Named::Long => format!(" Error: option `{}' {reason}", o.long),
            })
        };
        if unset && st.opt.is_some() {
            return Err(error("takes no value"));
        }
        let takes_no_value = matches!(o.kind, Kind::Boolean | Kind::Incr | Kind::CallbackNoArg);
        if named != Named::Short && st.opt.is_some() && takes_no_value {
            return Err(error("takes no value"));
        }
        let mut raw = None;
        let value = match o.kind {
            _ if unset => Value::Off,
            Kind::Boolean | Kind::Incr | Kind::CallbackNoArg => Value::On,
            Kind::CallbackOptArg if st.opt.is_none() => Value::Absent,
            Kind::String | Kind::Callback | Kind::CallbackOptArg => {
                let (text, bytes) = self.get_arg(st).ok_or_else(|| error("requires a value"))?;
                raw = Some(bytes);
                Value::Arg(text)
            }
            Kind::Integer | Kind::UInteger => {
                let (arg, _) = self.get_arg(st).ok_or_else(|| error("requires a value"))?;
                let n = strtol(&arg).ok_or_else(|| error("expects a numerical value"))?;
                Value::Int(if o.kind == Kind::Integer { n as i32 as i64 } else { n as u32 as i64 })
            }
        };
        let value = match (o.kind, value) {
            (Kind::Integer | Kind::UInteger, Value::Off) => Value::Int(0),
            (_, v) => v,
        };
        handle(o, value, raw.as_deref()).map_err(Fail::Usage)
    }

    /// perf's `get_arg`: the rest of the word, or the next word; as text
    /// and as the word's bytes (see [`Parser::parse`]).
    fn get_arg(&self, st: &mut Step<'_>) -> Option<(String, Vec<u8>)> {
        let raw_tail = |st: &Step<'_>, text: &str| match st.raw.get(st.at) {
            // What precedes the value in its word (ASCII) is as long in both.
            Some(word) => word.get(st.args[st.at].len() - text.len()..).unwrap_or_default().to_vec(),
            None => text.as_bytes().to_vec(),
        };
        if let Some(v) = st.opt.take() {
            return Some((v.to_string(), raw_tail(st, v)));
        }
        if st.at + 1 < st.args.len() {
            st.at += 1;
            let text = st.args[st.at].clone();
            let bytes = raw_tail(st, &text);
            return Some((text, bytes));
        }
        None
    }

    /// `-h` (or `--help` after other options): the usage, with only the
    /// options named in the words after it when there are any (perf's
    /// `option__in_argv`).
    fn help(&self, st: &Step<'_>) -> Stop {
        let after = &st.args[st.at + 1..];
        let shown: Vec<&Opt> = self.sorted().into_iter().filter(|o| after.is_empty() || in_argv(o, after)).collect();
        Stop { status: USAGE_STATUS, stdout: String::new(), stderr: self.usage_text(None, &shown) }
    }

    /// An unknown option: perf's `usage_with_options` with the error.
    fn unknown(&self, error: &str) -> Stop {
        Stop { status: USAGE_STATUS, stdout: String::new(), stderr: self.usage_text(Some(error), &self.sorted()) }
    }

    /// A bad value: perf prints the message, then the `Usage:` lines and
    /// the help of the options it concerns (`parse_options_usage`).
    fn usage_error(&self, msg: String, help: String) -> Stop {
        Stop { status: USAGE_STATUS, stdout: String::new(), stderr: format!("{msg}{}{help}", self.usage_lines()) }
    }

    /// The whole usage, as `-h` prints it.
    pub fn full_usage(&self) -> String {
        self.usage_text(None, &self.sorted())
    }

    /// The `Usage:` lines, with the blank lines around them.
    fn usage_lines(&self) -> String {
        let mut s = String::new();
        for (i, u) in self.usage.iter().enumerate() {
            s += &format!("{}{u}\n", if i == 0 { "\n Usage: " } else { "    or: " });
        }
        s.push('\n');
        s
    }

    /// perf's `usage_with_options_internal`.
    fn usage_text(&self, error: Option<&str>, shown: &[&Opt]) -> String {
        let mut s = error.map(|e| format!("  Error: {e}\n")).unwrap_or_default();
        s += &self.usage_lines();
        for o in shown {
            s += &option_help(o);
        }
        s.push('\n');
        s
    }

    /// The help lines `parse_options_usage` prints after an error: the
    /// option with that letter, or every option whose long name starts
    /// with `optstr` (with or without `no-`).
    fn option_usage(&self, optstr: &str, short: bool) -> String {
        if short {
            let c = optstr.as_bytes().first().copied();
            return self.options.iter().find(|o| o.short.is_some() && o.short == c).map(option_help).unwrap_or_default();
        }
        let mut s = String::new();
        for o in self.options {
            if o.long.starts_with(optstr) {
                s += &option_help(o);
            }
            // perf tests whether "no-" starts with `optstr` here (not the
            // other way round), so a `--no-x` error shows no help line.
            if "no-".starts_with(optstr) && o.long.starts_with(optstr.get(3..).unwrap_or("")) {
                s += &option_help(o);
            }
        }
        s
    }

    /// The options in usage order (perf's `option__cmp`: by short name,
    /// case folded, options without one last; then by long name).
    fn sorted(&self) -> Vec<&'a Opt> {
        let key = |o: &Opt| match o.short {
            Some(c) => c.to_ascii_lowercase() as u32,
            None => b'z' as u32 + 1,
        };
        let mut v: Vec<&Opt> = self.options.iter().collect();
        v.sort_by(|a, b| match key(a).cmp(&key(b)) {
            Ordering::Equal => a.long.cmp(b.long),
            o => o,
        });
        v
    }
}

/// perf's `option__in_argv`: is `o` named by one of `words`?
fn in_argv(o: &Opt, words: &[String]) -> bool {
    words.iter().any(|w| {
        let b = w.as_bytes();
        if b.first() != Some(&b'-') {
            if b.len() == 1 {
                return o.short == Some(b[0]);
            }
            return o.long == w || o.help.to_lowercase().contains(&w.to_lowercase());
        }
        b.get(1).is_some_and(|c| o.short == Some(*c)) || (b.get(1) == Some(&b'-') && o.long == &w[2..])
    })
}

/// perf's `print_option_help`: the option's names and value, its help at
/// column 26 (on the next line when the names reach past column 24).
pub fn option_help(o: &Opt) -> String {
    let mut s = String::from("    ");
    match o.short {
        Some(c) => {
            s.push('-');
            s.push(c as char);
            s.push_str(", ");
        }
        None => s.push_str("    "),
    }
    s.push_str("--");
    s.push_str(o.long);
    match o.kind {
        Kind::Integer | Kind::UInteger => s.push_str(" <n>"),
        Kind::String | Kind::Callback => match o.argh {
            Some(a) => s += &format!(" <{a}>"),
            None => s.push_str(" ..."),
        },
        Kind::CallbackOptArg => match o.argh {
            Some(a) => s += &format!("[=<{a}>]"),
            None => s.push_str("[=...]"),
        },
        Kind::Boolean | Kind::Incr | Kind::CallbackNoArg => {}
    }
    const WIDTH: usize = 24;
    let pad = if s.len() <= WIDTH {
        WIDTH - s.len()
    } else {
        s.push('\n');
        WIDTH
    };
    s += &format!("{:pad$}{}\n", "", o.help, pad = pad + 2);
    s
}

/// C's `strtol(arg, &end, 10)` where perf requires `*end == 0`: blanks,
/// a sign, digits (none is 0); out-of-range values saturate.
pub fn strtol(arg: &str) -> Option<i64> {
    let t = arg.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty() {
        // strtol consumed nothing: the end is the start of the word.
        return arg.is_empty().then_some(0);
    }
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut n: i64 = 0;
    for d in digits.bytes() {
        n = n.saturating_mul(10).saturating_add((d - b'0') as i64);
    }
    Some(if neg { n.checked_neg().unwrap_or(i64::MIN) } else { n })
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPTS: &[Opt] = &[
        Opt { short: Some(b'D'), long: "dump-raw-trace", kind: Kind::Boolean, argh: None, help: "dump raw trace in ASCII" },
        Opt { short: Some(b'v'), long: "verbose", kind: Kind::Incr, argh: None, help: "be more verbose" },
        Opt { short: Some(b'i'), long: "input", kind: Kind::String, argh: Some("file"), help: "input file name" },
        Opt { short: None, long: "header", kind: Kind::Boolean, argh: None, help: "Show data header." },
        Opt { short: None, long: "header-only", kind: Kind::Boolean, argh: None, help: "Show only data header." },
        Opt { short: Some(b'F'), long: "fields", kind: Kind::Callback, argh: Some("str"), help: "fields" },
        Opt { short: Some(b'f'), long: "force", kind: Kind::Boolean, argh: None, help: "don't complain, do it" },
        Opt { short: None, long: "max-stack", kind: Kind::UInteger, argh: None, help: "stack" },
        Opt { short: None, long: "show-info", kind: Kind::Boolean, argh: None, help: "info" },
        Opt { short: None, long: "show-task-events", kind: Kind::Boolean, argh: None, help: "tasks" },
        Opt { short: None, long: "itrace", kind: Kind::CallbackOptArg, argh: Some("opts"), help: "itrace" },
        Opt { short: None, long: "inline", kind: Kind::Boolean, argh: None, help: "Show inline function" },
    ];
    const USAGE: &[&str] = &["perf script [<options>]", "perf script [<options>] record <script> [<record-options>] <command>"];

    /// The options seen (name, value) and the words left over.
    type Parsed = (Vec<(String, Value)>, Vec<String>);

    fn run(args: &[&str]) -> Result<Parsed, Stop> {
        let p = Parser { options: OPTS, own: &[], usage: USAGE };
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let mut seen = Vec::new();
        let rest = p.parse(&args, &[], |o, v, _| {
            if o.long == "fields" && v == Value::Arg("bad".into()) {
                return Err("Invalid field requested.\n".into());
            }
            seen.push((o.long.to_string(), v));
            Ok(())
        })?;
        Ok((seen, rest))
    }

    fn names(args: &[&str]) -> Vec<String> {
        run(args).unwrap().0.into_iter().map(|(n, v)| format!("{n}={v:?}")).collect()
    }

    #[test]
    fn forms() {
        assert_eq!(names(&["-vv", "-Fcomm", "-F", "tid", "--input=x"]), ["verbose=On", "verbose=On", "fields=Arg(\"comm\")", "fields=Arg(\"tid\")", "input=Arg(\"x\")"]);
        assert_eq!(names(&["--header"]), ["header=On"]);
        assert_eq!(names(&["--header-o", "--show-t", "--no-inl", "--no-input"]), ["header-only=On", "show-task-events=On", "inline=Off", "input=Off"]);
        assert_eq!(names(&["--max-stack", " -3"]), ["max-stack=Int(4294967293)"]);
        assert_eq!(names(&["--max-stack="]), ["max-stack=Int(0)"]);
        assert_eq!(names(&["--itrace", "--itrace=i"]), ["itrace=Absent", "itrace=Arg(\"i\")"]);
        let (_, rest) = run(&["-v", "report", "-i", "x"]).unwrap();
        assert_eq!(rest, ["report", "-i", "x"]);
        let (_, rest) = run(&["-v", "--", "-i"]).unwrap();
        assert_eq!(rest, ["-i"]);
    }

    /// Values that are not UTF-8 reach the handler as the bytes given, in
    /// every form (`--opt=v`, `--opt v`, `-Xv`, `-X v`, abbreviated).
    #[test]
    fn raw_values() {
        let p = Parser { options: OPTS, own: &[], usage: USAGE };
        let raw: Vec<Vec<u8>> = [&b"--input=a\xffb"[..], b"--inp", b"\xe9x", b"-Fco\xfe", b"-i", b"\xc3(", b"-v"].iter().map(|w| w.to_vec()).collect();
        let args: Vec<String> = raw.iter().map(|w| String::from_utf8_lossy(w).into_owned()).collect();
        let mut seen = Vec::new();
        let rest = p.parse(&args, &raw, |o, _, bytes| {
            seen.push((o.long, bytes.map(<[u8]>::to_vec)));
            Ok(())
        });
        assert_eq!(rest.unwrap(), Vec::<String>::new());
        let want: Vec<(&str, Option<Vec<u8>>)> = vec![
            ("input", Some(b"a\xffb".to_vec())),
            ("input", Some(b"\xe9x".to_vec())),
            ("fields", Some(b"co\xfe".to_vec())),
            ("input", Some(b"\xc3(".to_vec())),
            ("verbose", None),
        ];
        assert_eq!(seen, want);
    }

    #[test]
    fn errors() {
        let e = run(&["--bogus"]).unwrap_err();
        assert_eq!(e.status, 129);
        assert!(e.stderr.starts_with("  Error: unknown option `bogus'\n\n Usage: perf script [<options>]\n    or: perf script [<options>] record"));
        let e = run(&["--show", "x"]).unwrap_err();
        assert!(e.stderr.starts_with(" Error: Ambiguous option: show (could be --show-info or --show-task-events)\n\n Usage:"), "{}", e.stderr);
        assert!(e.stderr.ends_with("        --show-info       info\n        --show-task-events\n                          tasks\n"), "{}", e.stderr);
        let e = run(&["--max-stack", "x"]).unwrap_err();
        assert!(e.stderr.starts_with(" Error: option `max-stack' expects a numerical value\n Usage:"));
        let e = run(&["--header=1"]).unwrap_err();
        assert!(e.stderr.starts_with(" Error: option `header' takes no value\n"));
        let e = run(&["-i"]).unwrap_err();
        assert!(e.stderr.starts_with(" Error: switch `i' requires a value\n"));
        assert!(e.stderr.ends_with("    -i, --input <file>    input file name\n"), "{}", e.stderr);
        let e = run(&["-Fbad"]).unwrap_err();
        assert!(e.stderr.starts_with("Invalid field requested.\n\n Usage:"));
        assert_eq!(run(&["-force"]).unwrap_err().stderr, " Error: did you mean `--force` (with two dashes ?)\n");
        assert!(run(&["-x"]).unwrap_err().stderr.starts_with("  Error: unknown switch `x'\n"));
        let h = run(&["-h"]).unwrap_err();
        assert_eq!(h.status, 129);
        assert!(h.stderr.contains("    -D, --dump-raw-trace  dump raw trace in ASCII\n    -F, --fields <str>    fields\n    -f, --force"));
        assert_eq!(run(&["--list-opts"]).unwrap_err().status, 130);
    }

    #[test]
    fn strtol_like_c() {
        assert_eq!(strtol("12"), Some(12));
        assert_eq!(strtol("  -7"), Some(-7));
        assert_eq!(strtol(""), Some(0));
        assert_eq!(strtol("-"), None);
        assert_eq!(strtol("1x"), None);
        assert_eq!(strtol("99999999999999999999999"), Some(i64::MAX));
    }
}
