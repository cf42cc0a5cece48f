//! JSON as Python's `json` module writes it, streamed: perf's report
//! scripts write with `json.dumps(obj)` (`, ` and `: ` between items, one
//! line) or `json.dump(obj, f, indent=2)` (items on lines of their own,
//! `,` at their ends; empty containers as `[]` and `{}`). Strings are
//! ASCII with `\uXXXX` escapes (`ensure_ascii`), floats are Python's
//! `repr`. Writing the same bytes keeps outputs comparable with `diff`.

use std::io::{self, Write};

pub struct JsonWriter<W: Write> {
    out: W,
    /// Spaces per level (`indent=`), or `None` for one line.
    indent: Option<usize>,
    /// Per open container: whether it has an item yet.
    open: Vec<bool>,
    /// A key was just written: the value follows on the same line.
    after_key: bool,
}

impl<W: Write> JsonWriter<W> {
    pub fn new(out: W, indent: Option<usize>) -> JsonWriter<W> {
        JsonWriter { out, indent, open: Vec::new(), after_key: false }
    }

    pub fn into_inner(self) -> W {
        self.out
    }

    /// The separator and line break before an item.
    fn item(&mut self) -> io::Result<()> {
        if std::mem::take(&mut self.after_key) {
            return Ok(());
        }
        let Some(first) = self.open.last_mut().map(|has| !std::mem::replace(has, true)) else { return Ok(()) };
        match self.indent {
            Some(n) => {
                if !first {
                    self.out.write_all(b",")?;
                }
                self.out.write_all(b"\n")?;
                for _ in 0..n * self.open.len() {
                    self.out.write_all(b" ")?;
                }
            }
            None if !first => self.out.write_all(b", ")?,
            None => {}
        }
        Ok(())
    }

    fn open(&mut self, c: u8) -> io::Result<()> {
        self.item()?;
        self.out.write_all(&[c])?;
        self.open.push(false);
        Ok(())
    }

    fn close(&mut self, c: u8) -> io::Result<()> {
        let had = self.open.pop().unwrap_or(false);
        if let (Some(n), true) = (self.indent, had) {
            self.out.write_all(b"\n")?;
            for _ in 0..n * self.open.len() {
                self.out.write_all(b" ")?;
            }
        }
        self.out.write_all(&[c])
    }

    pub fn begin_object(&mut self) -> io::Result<()> {
        self.open(b'{')
    }

    pub fn end_object(&mut self) -> io::Result<()> {
        self.close(b'}')
    }

    pub fn begin_array(&mut self) -> io::Result<()> {
        self.open(b'[')
    }

    pub fn end_array(&mut self) -> io::Result<()> {
        self.close(b']')
    }

    pub fn key(&mut self, k: &str) -> io::Result<()> {
        self.item()?;
        write_str(&mut self.out, k)?;
        self.out.write_all(b": ")?;
        self.after_key = true;
        Ok(())
    }

    pub fn str(&mut self, s: &str) -> io::Result<()> {
        self.item()?;
        write_str(&mut self.out, s)
    }

    pub fn int(&mut self, v: i64) -> io::Result<()> {
        self.item()?;
        write!(self.out, "{v}")
    }

    pub fn float(&mut self, v: f64) -> io::Result<()> {
        self.item()?;
        self.out.write_all(py_float(v).as_bytes())
    }

    pub fn bool(&mut self, v: bool) -> io::Result<()> {
        self.item()?;
        self.out.write_all(if v { b"true" } else { b"false" })
    }

    pub fn null(&mut self) -> io::Result<()> {
        self.item()?;
        self.out.write_all(b"null")
    }

    /// `"key": "value"`.
    pub fn key_str(&mut self, k: &str, v: &str) -> io::Result<()> {
        self.key(k)?;
        self.str(v)
    }

    /// `"key": n`.
    pub fn key_int(&mut self, k: &str, v: i64) -> io::Result<()> {
        self.key(k)?;
        self.int(v)
    }

    /// `"key": []`.
    pub fn key_empty_array(&mut self, k: &str) -> io::Result<()> {
        self.key(k)?;
        self.begin_array()?;
        self.end_array()
    }
}

/// A string as `json.dumps` writes it with `ensure_ascii`.
pub fn write_str(out: &mut impl Write, s: &str) -> io::Result<()> {
    let mut buf = Vec::with_capacity(s.len() + 2);
    buf.push(b'"');
    for c in s.chars() {
        match c {
            '"' => buf.extend_from_slice(b"\\\""),
            '\\' => buf.extend_from_slice(b"\\\\"),
            '\n' => buf.extend_from_slice(b"\\n"),
            '\r' => buf.extend_from_slice(b"\\r"),
            '\t' => buf.extend_from_slice(b"\\t"),
            '\u{8}' => buf.extend_from_slice(b"\\b"),
            '\u{c}' => buf.extend_from_slice(b"\\f"),
            ' '..='~' => buf.push(c as u8),
            _ => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    buf.extend_from_slice(format!("\\u{u:04x}").as_bytes());
                }
            }
        }
    }
    buf.push(b'"');
    out.write_all(&buf)
}

/// Python's `repr` of a float: the shortest text that reads back the same,
/// with `.0` on whole numbers, and exponent form below 1e-4 and from 1e16.
pub fn py_float(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Infinity".into() } else { "-Infinity".into() };
    }
    let a = v.abs();
    if a == 0.0 || (1e-4..1e16).contains(&a) {
        // Rust's shortest digits, in positional form with ".0" for whole
        // numbers, in this range.
        return format!("{v:?}");
    }
    // 1e+16, 1.5e-05: Rust writes 1e16 and 1.5e-5.
    let s = format!("{v:e}");
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    format!("{mantissa}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_as_python_repr() {
        for (v, want) in [
            (748030.303, "748030.303"),
            (1.0, "1.0"),
            (0.0, "0.0"),
            (-2.5, "-2.5"),
            (1e16, "1e+16"),
            (1.5e-5, "1.5e-05"),
            (0.0001, "0.0001"),
            (123456789012345.6, "123456789012345.6"),
            (1.234e300, "1.234e+300"),
        ] {
            assert_eq!(py_float(v), want, "{v}");
        }
    }

    #[test]
    fn strings_as_ensure_ascii() {
        let mut out = Vec::new();
        write_str(&mut out, "a\"b\\c\n\u{1}é😀").unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), r#""a\"b\\c\n\u0001\u00e9\ud83d\ude00""#);
    }

    fn sample(indent: Option<usize>) -> String {
        let mut w = JsonWriter::new(Vec::new(), indent);
        w.begin_object().unwrap();
        w.key_str("n", "all").unwrap();
        w.key("c").unwrap();
        w.begin_array().unwrap();
        w.int(1).unwrap();
        w.begin_array().unwrap();
        w.end_array().unwrap();
        w.null().unwrap();
        w.end_array().unwrap();
        w.key("e").unwrap();
        w.begin_object().unwrap();
        w.end_object().unwrap();
        w.end_object().unwrap();
        String::from_utf8(w.into_inner()).unwrap()
    }

    /// `json.dumps({"n": "all", "c": [1, [], None], "e": {}})`, and with
    /// `indent=2`.
    #[test]
    fn layout_as_python() {
        assert_eq!(sample(None), r#"{"n": "all", "c": [1, [], null], "e": {}}"#);
        assert_eq!(sample(Some(2)), "{\n  \"n\": \"all\",\n  \"c\": [\n    1,\n    [],\n    null\n  ],\n  \"e\": {}\n}");
    }
}
