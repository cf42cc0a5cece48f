//! A DSO's symbol table with perf's rules (`tools/perf/util/symbol.c`):
//! symbols kept in address order (equal addresses in insertion order, as
//! perf's rbtree keeps them), zero-sized symbols extended to the next one
//! (`symbols__fixup_end`), same-address aliases reduced to one
//! (`symbols__fixup_duplicate` / `choose_best_symbol`).

use std::rc::Rc;

use super::elf::{STB_GLOBAL, STB_WEAK, STT_GNU_IFUNC, STT_NOTYPE};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sym {
    pub start: u64,
    /// Exclusive; equal to `start` for a zero-sized symbol.
    pub end: u64,
    pub name: Rc<str>,
    pub binding: u8,
    pub typ: u8,
    /// An IFUNC symbol at the same address was dropped in its favour.
    pub ifunc_alias: bool,
}

impl Sym {
    /// perf's `symbol__new`: `len` 0 gives `end == start`.
    pub fn new(start: u64, len: u64, binding: u8, typ: u8, name: Rc<str>) -> Sym {
        Sym { start, end: if len != 0 { start.wrapping_add(len) } else { start }, name, binding, typ, ifunc_alias: false }
    }
}

/// Symbols in perf's rbtree order.
#[derive(Debug, Default, Clone)]
pub struct SymTab {
    pub syms: Vec<Sym>,
}

impl SymTab {
    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }

    pub fn len(&self) -> usize {
        self.syms.len()
    }

    /// Inserts symbols one after the other: each goes after every symbol
    /// already present at the same address.
    pub fn insert_all(&mut self, new: Vec<Sym>) {
        if new.is_empty() {
            return;
        }
        self.syms.extend(new);
        // A stable sort keeps insertion order among equal addresses.
        self.syms.sort_by_key(|s| s.start);
    }

    pub fn insert(&mut self, sym: Sym) {
        let pos = self.syms.partition_point(|s| s.start <= sym.start);
        self.syms.insert(pos, sym);
    }

    /// perf's `symbols__fixup_end`.
    pub fn fixup_end(&mut self, is_kallsyms: bool) {
        let n = self.syms.len();
        if n == 0 {
            return;
        }
        for i in 1..n {
            let (head, tail) = self.syms.split_at_mut(i);
            let prev = &mut head[i - 1];
            let curr = &tail[0];
            if prev.end == prev.start {
                if !is_kallsyms {
                    prev.end = curr.start;
                    continue;
                }
                let prev_mod = prev.name.find('[').map(|p| &prev.name[p..]);
                let curr_mod = curr.name.find('[').map(|p| &curr.name[p..]);
                prev.end = match (prev_mod, curr_mod) {
                    (None, Some(_)) | (Some(_), None) => roundup_page(prev.end.wrapping_add(4096)),
                    (Some(a), Some(b)) if a != b => roundup_page(prev.end.wrapping_add(4096)),
                    _ => curr.start,
                };
            }
        }
        let last = &mut self.syms[n - 1];
        if last.end == last.start {
            last.end = roundup_page(last.start).wrapping_add(4096);
        }
    }

    /// perf's `symbols__fixup_duplicate`.
    pub fn fixup_duplicate(&mut self) {
        let mut out: Vec<Sym> = Vec::with_capacity(self.syms.len());
        for next in self.syms.drain(..) {
            match out.last_mut() {
                Some(curr) if curr.start == next.start => {
                    if choose_best_symbol(curr, &next) {
                        if next.typ == STT_GNU_IFUNC {
                            curr.ifunc_alias = true;
                        }
                    } else {
                        let mut next = next;
                        if curr.typ == STT_GNU_IFUNC {
                            next.ifunc_alias = true;
                        }
                        *curr = next;
                    }
                }
                _ => out.push(next),
            }
        }
        self.syms = out;
    }

    /// perf's `symbols__find`: the symbol containing `ip` (a zero-sized
    /// symbol contains only its own address).
    pub fn find(&self, ip: u64) -> Option<&Sym> {
        self.find_index(ip).map(|i| &self.syms[i])
    }

    pub fn find_index(&self, ip: u64) -> Option<usize> {
        let i = self.syms.partition_point(|s| s.start <= ip).checked_sub(1)?;
        let s = &self.syms[i];
        (ip < s.end || (ip == s.start && s.start == s.end)).then_some(i)
    }

    pub fn remove(&mut self, index: usize) {
        self.syms.remove(index);
    }
}

fn roundup_page(x: u64) -> u64 {
    x.wrapping_add(4095) & !4095
}

fn prefix_underscores(s: &str) -> usize {
    s.bytes().take_while(|&b| b == b'_').count()
}

/// perf's `choose_best_symbol`: true to keep `a`, false to keep `b`.
pub fn choose_best_symbol(a: &Sym, b: &Sym) -> bool {
    let la = a.end.wrapping_sub(a.start) as i64;
    let lb = b.end.wrapping_sub(b.start) as i64;
    if lb == 0 && la > 0 {
        return true;
    } else if la == 0 && lb > 0 {
        return false;
    }
    // Prefer a real symbol over a label at the same address.
    if a.typ != b.typ {
        if a.typ == STT_NOTYPE {
            return false;
        }
        if b.typ == STT_NOTYPE {
            return true;
        }
    }
    let (wa, wb) = (a.binding == STB_WEAK, b.binding == STB_WEAK);
    if wb && !wa {
        return true;
    }
    if wa && !wb {
        return false;
    }
    let (ga, gb) = (a.binding == STB_GLOBAL, b.binding == STB_GLOBAL);
    if ga && !gb {
        return true;
    }
    if gb && !ga {
        return false;
    }
    let (ua, ub) = (prefix_underscores(&a.name), prefix_underscores(&b.name));
    if ub > ua {
        return true;
    } else if ua > ub {
        return false;
    }
    let (na, nb) = (a.name.len(), b.name.len());
    if na > nb {
        return true;
    } else if na < nb {
        return false;
    }
    // arch__choose_best_symbol: avoid "SyS" syscall aliases.
    if a.name.starts_with("SyS") || a.name.starts_with("compat_SyS") {
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbols::elf::{STB_LOCAL, STT_FUNC};

    fn s(start: u64, len: u64, bind: u8, name: &str) -> Sym {
        Sym::new(start, len, bind, STT_FUNC, name.into())
    }

    #[test]
    fn alias_choice_follows_perf() {
        // Non-weak beats weak, global beats local, fewer underscores, longer name.
        assert!(choose_best_symbol(&s(0, 8, STB_GLOBAL, "read"), &s(0, 8, STB_WEAK, "__read")));
        assert!(!choose_best_symbol(&s(0, 8, STB_WEAK, "read"), &s(0, 8, STB_GLOBAL, "__libc_read")));
        assert!(choose_best_symbol(&s(0, 8, STB_GLOBAL, "__libc_write"), &s(0, 8, STB_LOCAL, "__GI___libc_write")));
        assert!(choose_best_symbol(&s(0, 8, STB_LOCAL, "__GI___libc_write"), &s(0, 8, STB_LOCAL, "__libc_write")));
        assert!(choose_best_symbol(&s(0, 8, STB_GLOBAL, "mmap64"), &s(0, 8, STB_GLOBAL, "mmap")));
        // A function beats a label.
        let mut label = s(0, 8, STB_GLOBAL, "label");
        label.typ = STT_NOTYPE;
        assert!(!choose_best_symbol(&label, &s(0, 8, STB_LOCAL, "__f")));
        // Sized beats zero-sized.
        assert!(!choose_best_symbol(&s(0, 0, STB_GLOBAL, "a"), &s(0, 4, STB_LOCAL, "__b")));
        assert!(!choose_best_symbol(&s(0, 8, STB_GLOBAL, "SyS_read"), &s(0, 8, STB_GLOBAL, "sys_read")));
    }

    #[test]
    fn fixups() {
        let mut t = SymTab::default();
        t.insert_all(vec![s(0x100, 0, STB_GLOBAL, "a"), s(0x120, 0x10, STB_GLOBAL, "b"), s(0x120, 0x10, STB_WEAK, "c")]);
        let mut label = s(0x140, 0, STB_GLOBAL, "label");
        label.typ = STT_NOTYPE;
        t.insert(label);
        t.insert(s(0x2010, 0, STB_GLOBAL, "last"));
        t.fixup_end(false);
        t.fixup_duplicate();
        let v: Vec<_> = t.syms.iter().map(|s| (&*s.name, s.start, s.end)).collect();
        assert_eq!(v, vec![("a", 0x100, 0x120), ("b", 0x120, 0x130), ("label", 0x140, 0x2010), ("last", 0x2010, 0x4000)]);
        assert_eq!(t.find(0x11f).unwrap().name.as_ref(), "a");
        assert_eq!(t.find(0x141).unwrap().name.as_ref(), "label");
        assert!(t.find(0x130).is_none());
        assert!(t.find(0xff).is_none());
    }

    #[test]
    fn kallsyms_style_ends() {
        let mut t = SymTab::default();
        let k = |start, name: &str| Sym::new(start, 0, STB_GLOBAL, STT_FUNC, name.into());
        t.insert_all(vec![k(0x1000, "x"), k(0x1000, "_text"), k(0x1100, "y"), k(0x5000, "m\t[mod]"), k(0x6000, "n\t[mod2]")]);
        t.fixup_end(true);
        t.fixup_duplicate();
        let v: Vec<_> = t.syms.iter().map(|s| (s.name.to_string(), s.start, s.end)).collect();
        assert_eq!(v[0], ("_text".to_string(), 0x1000, 0x1100));
        assert_eq!(v[1], ("y".to_string(), 0x1100, 0x3000));
        assert_eq!(v[2], ("m\t[mod]".to_string(), 0x5000, 0x6000));
        assert_eq!(v[3], ("n\t[mod2]".to_string(), 0x6000, 0x7000));
    }
}
