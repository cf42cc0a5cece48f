//! The tokenizer libtraceevent runs over event format files and `print fmt`
//! strings, with its quirks kept (they decide what parses and what fails):
//!
//! - bytes are C `char`s, i.e. signed: a byte >= 0x80 reads as a negative
//!   value and ends the input like EOF does;
//! - operators are one character, or two for `->`, `++`, `--`, `||`, `&&`,
//!   `<<`, `>>`, optionally followed by `=` (`<=`, `>>=`, `!=`, `==`);
//! - `(`, `)` and `,` are delimiters; anything else printable that is not
//!   alphanumeric, `_`, a quote or a space is an operator;
//! - quoted strings keep their backslashes; a string ends at the closing
//!   quote or at the first unprintable character other than a newline; two
//!   double-quoted strings separated only by white space are joined.
//!
//! Also the C number parsers (`strtoull`/`strtoll` with base 0) that the
//! format parser uses on tokens.

/// Token types (`enum tep_event_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tok {
    Error,
    None,
    Space,
    Newline,
    Op,
    Delim,
    Item,
    DQuote,
    SQuote,
}

impl Tok {
    /// `event_item_type`: items and quoted strings.
    pub fn is_item(self) -> bool {
        matches!(self, Tok::Item | Tok::DQuote | Tok::SQuote)
    }
}

/// C `isspace` in the C locale.
pub fn c_isspace(ch: i32) -> bool {
    matches!(ch, 0x20 | 0x09..=0x0d)
}

/// C `isprint` in the C locale.
pub fn c_isprint(ch: i32) -> bool {
    (0x20..0x7f).contains(&ch)
}

fn c_isalnum(ch: i32) -> bool {
    (0x30..=0x39).contains(&ch) || (0x41..=0x5a).contains(&ch) || (0x61..=0x7a).contains(&ch)
}

/// `get_type`: the token type a character starts.
fn get_type(ch: i32) -> Tok {
    if ch == b'\n' as i32 {
        return Tok::Newline;
    }
    if c_isspace(ch) {
        return Tok::Space;
    }
    if c_isalnum(ch) || ch == b'_' as i32 {
        return Tok::Item;
    }
    if ch == b'\'' as i32 {
        return Tok::SQuote;
    }
    if ch == b'"' as i32 {
        return Tok::DQuote;
    }
    if !c_isprint(ch) {
        return Tok::None;
    }
    if ch == b'(' as i32 || ch == b')' as i32 || ch == b',' as i32 {
        return Tok::Delim;
    }
    Tok::Op
}

/// A token: its type and text (empty for `None`/`Error`).
pub type Token = (Tok, String);

/// A cursor over a format file (or a piece of one).
#[derive(Clone)]
pub struct Lexer<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Lexer<'a> {
    pub fn new(buf: &'a [u8]) -> Lexer<'a> {
        Lexer { buf, pos: 0 }
    }

    /// The next character as a signed C char, -1 at the end.
    fn read_char(&mut self) -> i32 {
        match self.buf.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                b as i8 as i32
            }
            None => -1,
        }
    }

    fn peek_char(&self) -> i32 {
        self.buf.get(self.pos).map(|&b| b as i8 as i32).unwrap_or(-1)
    }

    /// `__read_token`: one token, spaces and newlines included.
    pub fn read_raw(&mut self) -> Token {
        let mut ch = self.read_char();
        if ch < 0 {
            return (Tok::None, String::new());
        }
        let mut ty = get_type(ch);
        if ty == Tok::None {
            return (ty, String::new());
        }
        let mut buf: Vec<u8> = vec![ch as u8];
        match ty {
            Tok::Newline | Tok::Delim => return (ty, bytes_to_string(buf)),
            Tok::Op => {
                let mut test_equal = false;
                match ch as u8 {
                    b'-' if self.peek_char() == b'>' as i32 => {
                        buf.push(self.read_char() as u8);
                    }
                    b'-' | b'+' | b'|' | b'&' | b'>' | b'<' => {
                        let last = ch;
                        if self.peek_char() != last {
                            test_equal = true;
                        } else {
                            buf.push(self.read_char() as u8);
                            if last == b'>' as i32 || last == b'<' as i32 {
                                test_equal = true;
                            }
                        }
                    }
                    b'!' | b'=' => test_equal = true,
                    _ => {}
                }
                if test_equal && self.peek_char() == b'=' as i32 {
                    buf.push(self.read_char() as u8);
                }
                return (ty, bytes_to_string(buf));
            }
            Tok::DQuote | Tok::SQuote => {
                buf.pop();
                let quote = ch;
                loop {
                    // concat:
                    loop {
                        let mut last = ch;
                        ch = self.read_char();
                        buf.push(ch as u8);
                        // "\\" cancels itself (for this test only).
                        if ch == b'\\' as i32 && last == b'\\' as i32 {
                            last = 0;
                        }
                        if ch <= 0 {
                            break;
                        }
                        let go_on = (ch != quote && c_isprint(ch)) || last == b'\\' as i32 || ch == b'\n' as i32;
                        if !go_on {
                            break;
                        }
                    }
                    buf.pop();
                    if ch <= 0 {
                        ty = Tok::None;
                    }
                    if ty == Tok::DQuote {
                        let save = self.pos;
                        loop {
                            ch = self.read_char();
                            if !c_isspace(ch) {
                                break;
                            }
                        }
                        if ch == b'"' as i32 {
                            continue;
                        }
                        self.pos = save;
                    }
                    break;
                }
                return (ty, bytes_to_string(buf));
            }
            _ => {}
        }
        while get_type(self.peek_char()) == ty {
            buf.push(self.read_char() as u8);
        }
        let tok = bytes_to_string(buf);
        if ty == Tok::Item {
            // Workarounds for bad kernel format strings (mac80211).
            let forced = match tok.as_str() {
                "LOCAL_PR_FMT" => Some("\"%s\" "),
                "STA_PR_FMT" => Some("\" sta:%pM\" "),
                "VIF_PR_FMT" => Some("\" vif:%p(%d)\" "),
                _ => None,
            };
            if let Some(f) = forced {
                return Lexer::new(f.as_bytes()).read_raw();
            }
        }
        (ty, tok)
    }

    /// `tep_read_token`: skips spaces (not newlines).
    pub fn read(&mut self) -> Token {
        loop {
            let t = self.read_raw();
            if t.0 != Tok::Space {
                return t;
            }
        }
    }

    /// `read_token_item`: skips spaces and newlines.
    pub fn read_item(&mut self) -> Token {
        loop {
            let t = self.read_raw();
            if t.0 != Tok::Space && t.0 != Tok::Newline {
                return t;
            }
        }
    }

    /// `read_expected` (`newline_ok`: use [`Lexer::read`], else
    /// [`Lexer::read_item`]).
    pub fn expect(&mut self, ty: Tok, text: &str, newline_ok: bool) -> bool {
        let t = if newline_ok { self.read() } else { self.read_item() };
        t.0 == ty && t.1 == text
    }

    /// `read_expect_type`: a token of type `ty` (newlines are tokens).
    pub fn expect_type(&mut self, ty: Tok) -> Option<String> {
        let t = self.read();
        (t.0 == ty).then_some(t.1)
    }
}

/// Token bytes as a string; bytes are ASCII except the sentinel a string
/// cut short by a high byte leaves (that token is of type `None` anyway).
fn bytes_to_string(b: Vec<u8>) -> String {
    match String::from_utf8(b) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

/// C `strtoull(s, NULL, 0)`: leading spaces, optional sign, `0x` hex, `0`
/// octal, else decimal; stops at the first invalid character; saturates on
/// overflow; a minus sign negates (mod 2^64).
pub fn strtoull(s: &str) -> u64 {
    let (neg, digits, base) = split_number(s);
    let mut v: u64 = 0;
    let mut overflow = false;
    for c in digits.bytes() {
        let d = match c {
            b'0'..=b'9' => (c - b'0') as u64,
            b'a'..=b'f' => (c - b'a' + 10) as u64,
            b'A'..=b'F' => (c - b'A' + 10) as u64,
            _ => break,
        };
        if d >= base {
            break;
        }
        match v.checked_mul(base).and_then(|x| x.checked_add(d)) {
            Some(x) => v = x,
            None => overflow = true,
        }
    }
    if overflow {
        return u64::MAX;
    }
    if neg { v.wrapping_neg() } else { v }
}

/// C `strtoll(s, NULL, 0)`: like [`strtoull`] but clamps to the i64 range.
pub fn strtoll(s: &str) -> i64 {
    let (neg, digits, base) = split_number(s);
    let mut v: u128 = 0;
    for c in digits.bytes() {
        let d = match c {
            b'0'..=b'9' => (c - b'0') as u128,
            b'a'..=b'f' => (c - b'a' + 10) as u128,
            b'A'..=b'F' => (c - b'A' + 10) as u128,
            _ => break,
        };
        if d >= base as u128 {
            break;
        }
        v = (v * base as u128 + d).min(1 << 64);
    }
    if neg {
        if v > 1 << 63 { i64::MIN } else { (v as i128).wrapping_neg() as i64 }
    } else if v > i64::MAX as u128 {
        i64::MAX
    } else {
        v as i64
    }
}

/// C `atoi`: `strtol` truncated to int.
pub fn atoi(s: &str) -> i32 {
    strtoll(s) as i32
}

fn split_number(s: &str) -> (bool, &str, u64) {
    let s = s.trim_start_matches(|c: char| c.is_ascii() && c_isspace(c as i32));
    let (neg, s) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let b = s.as_bytes();
    if b.len() >= 2 && b[0] == b'0' && (b[1] == b'x' || b[1] == b'X') && b.get(2).is_some_and(|c| c.is_ascii_hexdigit()) {
        (neg, &s[2..], 16)
    } else if b.first() == Some(&b'0') {
        (neg, s, 8)
    } else {
        (neg, s, 10)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(s: &str) -> Vec<(Tok, String)> {
        let mut l = Lexer::new(s.as_bytes());
        let mut v = Vec::new();
        loop {
            let t = l.read_raw();
            if t.0 == Tok::None {
                break;
            }
            v.push(t);
        }
        v
    }

    #[test]
    fn operators_and_items() {
        let t = all("REC->prev_state & 0x1 >= b<<2 != !x");
        let texts: Vec<&str> = t.iter().filter(|t| t.0 != Tok::Space).map(|t| t.1.as_str()).collect();
        assert_eq!(texts, ["REC", "->", "prev_state", "&", "0x1", ">=", "b", "<<", "2", "!=", "!", "x"]);
    }

    #[test]
    fn strings_join_and_keep_escapes() {
        let mut l = Lexer::new(br#""a\"b" "c\n" ,"#);
        assert_eq!(l.read(), (Tok::DQuote, r#"a\"bc\n"#.to_string()));
        assert_eq!(l.read(), (Tok::Delim, ",".to_string()));
        // A double backslash does not protect the quote that follows.
        let mut l = Lexer::new(br#""x\\" y"#);
        assert_eq!(l.read().0, Tok::None);
        // A tab ends a string (not printable) and is dropped.
        let mut l = Lexer::new(b"\"a\tb\"");
        assert_eq!(l.read(), (Tok::DQuote, "a".to_string()));
    }

    #[test]
    fn high_bytes_end_input() {
        let mut l = Lexer::new("ab\u{e9}cd".as_bytes());
        assert_eq!(l.read(), (Tok::Item, "ab".to_string()));
        assert_eq!(l.read().0, Tok::None);
        let mut l = Lexer::new("\"\u{e9}\"".as_bytes());
        assert_eq!(l.read().0, Tok::None);
    }

    #[test]
    fn c_numbers() {
        assert_eq!(strtoull("0x1f;"), 31);
        assert_eq!(strtoull("017"), 15);
        assert_eq!(strtoull("1UL"), 1);
        assert_eq!(strtoull("-1"), u64::MAX);
        assert_eq!(strtoull("abc"), 0);
        assert_eq!(strtoull("99999999999999999999999"), u64::MAX);
        assert_eq!(strtoll("-5"), -5);
        assert_eq!(strtoll("0xffffffffffffffff"), i64::MAX);
        assert_eq!(strtoull("0x"), 0);
    }
}
