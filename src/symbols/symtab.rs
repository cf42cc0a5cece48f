//! A DSO's symbol table with perf's rules (`tools/perf/util/symbol.c`):
//! symbols in perf's red-black tree (equal addresses in insertion order),
//! zero-sized symbols extended to the next one (`symbols__fixup_end`),
//! same-address aliases reduced to one (`symbols__fixup_duplicate` /
//! `choose_best_symbol`), lookups walking the tree as perf's do.

use std::cell::OnceCell;
use std::rc::Rc;

use super::demangle::demangle;
use super::elf::{STB_GLOBAL, STB_WEAK, STT_GNU_IFUNC, STT_NOTYPE};
use super::rbtree::{NodeId, RbTree};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sym {
    pub start: u64,
    /// Exclusive; equal to `start` for a zero-sized symbol.
    pub end: u64,
    name: SymName,
    pub binding: u8,
    pub typ: u8,
    /// An IFUNC symbol at the same address was dropped in its favour.
    pub ifunc_alias: bool,
}

/// A symbol's name as perf shows it. perf demangles every ELF symbol as it
/// loads it; pstitch keeps the name from the object file and demangles it
/// the first time it is needed (printing, or choosing between aliases):
/// most symbols of a large library are never printed.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SymName {
    raw: Rc<str>,
    form: NameForm,
    shown: OnceCell<Rc<str>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NameForm {
    /// `raw` is the name.
    AsIs,
    /// The demangled `raw` (or `raw` when it does not demangle).
    Demangled,
    /// The same followed by `@plt` (a PLT entry named after its target).
    DemangledPlt,
}

impl Sym {
    /// perf's `symbol__new`: `len` 0 gives `end == start`.
    pub fn new(start: u64, len: u64, binding: u8, typ: u8, name: Rc<str>) -> Sym {
        Sym::with_name(start, len, binding, typ, SymName { raw: name, form: NameForm::AsIs, shown: OnceCell::new() })
    }

    /// A symbol whose name is shown demangled (`plt`: with `@plt` after it).
    pub fn mangled(start: u64, len: u64, binding: u8, typ: u8, raw: Rc<str>, plt: bool) -> Sym {
        let form = if plt { NameForm::DemangledPlt } else { NameForm::Demangled };
        Sym::with_name(start, len, binding, typ, SymName { raw, form, shown: OnceCell::new() })
    }

    fn with_name(start: u64, len: u64, binding: u8, typ: u8, name: SymName) -> Sym {
        Sym { start, end: if len != 0 { start.wrapping_add(len) } else { start }, name, binding, typ, ifunc_alias: false }
    }

    /// Renames the symbol (to a name shown as it is).
    pub fn set_name(&mut self, name: Rc<str>) {
        self.name = SymName { raw: name, form: NameForm::AsIs, shown: OnceCell::new() };
    }

    /// The name perf prints.
    pub fn name(&self) -> &str {
        self.shared_name()
    }

    /// The same, to keep.
    pub fn shared_name(&self) -> &Rc<str> {
        let n = &self.name;
        match n.form {
            NameForm::AsIs => &n.raw,
            NameForm::Demangled => n.shown.get_or_init(|| demangle(&n.raw).map_or_else(|| n.raw.clone(), Into::into)),
            NameForm::DemangledPlt => n.shown.get_or_init(|| {
                let base = demangle(&n.raw);
                format!("{}@plt", base.as_deref().unwrap_or(&n.raw)).into()
            }),
        }
    }
}

/// A DSO's symbols in perf's red-black tree (see [`super::rbtree`] for why
/// the tree's shape matters), with perf's insertion, fixups and lookup.
#[derive(Debug, Default, Clone)]
pub struct SymTab {
    tree: RbTree<Sym>,
}

impl SymTab {
    pub fn is_empty(&self) -> bool {
        self.tree.is_empty()
    }

    pub fn len(&self) -> usize {
        self.tree.len()
    }

    /// perf's `symbols__insert`: descend left while the new start is below
    /// the node's, so equal addresses end up after the ones present.
    pub fn insert(&mut self, sym: Sym) -> NodeId {
        self.tree.insert(sym.start, sym)
    }

    /// Inserts symbols one after the other, in the order given.
    pub fn insert_all(&mut self, new: Vec<Sym>) {
        for s in new {
            self.insert(s);
        }
    }

    /// Symbols in address order (equal addresses in insertion order).
    pub fn iter(&self) -> impl Iterator<Item = &Sym> + '_ {
        self.tree.iter()
    }

    pub fn first(&self) -> Option<&Sym> {
        self.tree.first().map(|id| self.tree.get(id))
    }

    pub fn last(&self) -> Option<&Sym> {
        self.tree.last().map(|id| self.tree.get(id))
    }

    pub fn get_mut(&mut self, id: NodeId) -> &mut Sym {
        self.tree.get_mut(id)
    }

    /// The node of the first symbol (in address order) matching `f`.
    pub fn position(&self, mut f: impl FnMut(&Sym) -> bool) -> Option<NodeId> {
        self.tree.ids().find(|&id| f(self.tree.get(id)))
    }

    pub fn remove(&mut self, id: NodeId) {
        self.tree.erase(id);
    }

    /// perf's `symbols__fixup_end`: a zero-sized symbol ends where the next
    /// one starts (kallsyms: not across the kernel/module boundary), the
    /// last one at the page after its start.
    pub fn fixup_end(&mut self, is_kallsyms: bool) {
        let ids: Vec<NodeId> = self.tree.ids().collect();
        let Some(&last) = ids.last() else { return };
        for w in ids.windows(2) {
            let curr = self.tree.get(w[1]);
            let (curr_start, curr_name) = (curr.start, is_kallsyms.then(|| curr.shared_name().clone()));
            let prev = self.tree.get_mut(w[0]);
            if prev.end != prev.start {
                continue;
            }
            let Some(curr_name) = curr_name else {
                prev.end = curr_start;
                continue;
            };
            let prev_name = prev.name();
            let prev_mod = prev_name.find('[').map(|p| &prev_name[p..]);
            let curr_mod = curr_name.find('[').map(|p| &curr_name[p..]);
            prev.end = match (prev_mod, curr_mod) {
                (None, Some(_)) | (Some(_), None) => roundup_page(prev.end.wrapping_add(4096)),
                (Some(a), Some(b)) if a != b => roundup_page(prev.end.wrapping_add(4096)),
                _ => curr_start,
            };
        }
        let l = self.tree.get_mut(last);
        if l.end == l.start {
            l.end = roundup_page(l.start).wrapping_add(4096);
        }
    }

    /// perf's `symbols__fixup_duplicate`: of symbols at one address, keep
    /// the one `choose_best_symbol` prefers, erasing the others from the
    /// tree in the order perf does.
    pub fn fixup_duplicate(&mut self) {
        let mut nd = self.tree.first();
        while let Some(curr) = nd {
            loop {
                nd = self.tree.next(curr);
                let Some(next) = nd else { return };
                if self.tree.get(curr).start != self.tree.get(next).start {
                    break;
                }
                if choose_best_symbol(self.tree.get(curr), self.tree.get(next)) {
                    if self.tree.get(next).typ == STT_GNU_IFUNC {
                        self.tree.get_mut(curr).ifunc_alias = true;
                    }
                    self.tree.erase(next);
                    // Compare the same symbol with its new successor.
                    continue;
                }
                if self.tree.get(curr).typ == STT_GNU_IFUNC {
                    self.tree.get_mut(next).ifunc_alias = true;
                }
                self.tree.erase(curr);
                break;
            }
        }
    }

    /// perf's `symbols__find`: walk down from the root, left while the
    /// address is below a node's start, right while it is at or past its
    /// end; a zero-sized symbol matches its own address only. With
    /// overlapping symbols this is what perf finds, not necessarily the
    /// innermost or nearest symbol.
    pub fn find_id(&self, ip: u64) -> Option<NodeId> {
        let mut n = self.tree.root();
        while let Some(id) = n {
            let s = self.tree.get(id);
            if ip < s.start {
                n = self.tree.left(id);
            } else if ip > s.end || (ip == s.end && ip != s.start) {
                n = self.tree.right(id);
            } else {
                return Some(id);
            }
        }
        None
    }

    pub fn find(&self, ip: u64) -> Option<&Sym> {
        self.find_id(ip).map(|id| self.tree.get(id))
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
    // The same name in .symtab and .dynsym: the demangled names tie too,
    // and a demangled name can only start with "SyS" if the raw one holds it.
    if a.name.raw == b.name.raw && a.name.form == b.name.form && !a.name.raw.contains("SyS") {
        return true;
    }
    let (an, bn) = (a.name(), b.name());
    let (ua, ub) = (prefix_underscores(an), prefix_underscores(bn));
    if ub > ua {
        return true;
    } else if ua > ub {
        return false;
    }
    let (na, nb) = (an.len(), bn.len());
    if na > nb {
        return true;
    } else if na < nb {
        return false;
    }
    // arch__choose_best_symbol: avoid "SyS" syscall aliases.
    if an.starts_with("SyS") || an.starts_with("compat_SyS") {
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
        let v: Vec<_> = t.iter().map(|s| (s.name(), s.start, s.end)).collect();
        assert_eq!(v, vec![("a", 0x100, 0x120), ("b", 0x120, 0x130), ("label", 0x140, 0x2010), ("last", 0x2010, 0x4000)]);
        assert_eq!(t.find(0x11f).unwrap().name(), "a");
        assert_eq!(t.find(0x141).unwrap().name(), "label");
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
        let v: Vec<_> = t.iter().map(|s| (s.name().to_string(), s.start, s.end)).collect();
        assert_eq!(v[0], ("_text".to_string(), 0x1000, 0x1100));
        assert_eq!(v[1], ("y".to_string(), 0x1100, 0x3000));
        assert_eq!(v[2], ("m\t[mod]".to_string(), 0x5000, 0x6000));
        assert_eq!(v[3], ("n\t[mod2]".to_string(), 0x6000, 0x7000));
    }
}
