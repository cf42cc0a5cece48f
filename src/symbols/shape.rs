//! The shape of a shown symbol name: what perf's choice between
//! same-address aliases looks at, kept without the name itself (both the
//! demanglers and the Rust v0 walker produce it).

/// What perf's alias choice (`choose_best_symbol`) looks at in a shown
/// name: its length in bytes, its leading underscores and its first bytes.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub len: usize,
    pub underscores: usize,
    head: [u8; 10],
}

impl Shape {
    pub fn of(s: &str) -> Shape {
        let mut shape = Shape::default();
        shape.add(s);
        shape
    }

    #[inline]
    pub fn add(&mut self, s: &str) {
        if self.len < self.head.len() {
            let n = s.len().min(self.head.len() - self.len);
            self.head[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        }
        if self.underscores == self.len {
            self.underscores += s.bytes().take_while(|&b| b == b'_').count();
        }
        self.len += s.len();
    }

    pub fn starts_with(&self, p: &str) -> bool {
        p.len() <= self.head.len().min(self.len) && self.head.starts_with(p.as_bytes())
    }
}

impl std::fmt::Write for Shape {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.add(s);
        Ok(())
    }
}
