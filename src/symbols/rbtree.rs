//! A red-black tree that rebalances exactly like the Linux kernel's
//! `lib/rbtree.c`, which perf uses for symbol tables.
//!
//! Why not a `BTreeMap`: perf looks symbols up by walking its tree from the
//! root (`symbols__find`), comparing the address with each node's range.
//! When ranges overlap (sized symbols in a table perf never fixed up, e.g.
//! after it stopped reading a damaged `.symtab`), which symbol the walk
//! meets first — or whether it finds one at all — depends on the tree's
//! shape. Reproducing perf's answer means reproducing the shape: the same
//! insertions and erasures, rebalanced the same way.
//!
//! Nodes live in an arena and are addressed by index; erased slots are not
//! reused. The links and the key of a node are kept apart from its value
//! (24 bytes a node), so that a descent through a tree of a few hundred
//! thousand symbols touches one cache line per level.

/// Index of a node.
pub type NodeId = u32;
const NIL: NodeId = NodeId::MAX;

#[derive(Debug, Clone)]
struct Node {
    key: u64,
    left: NodeId,
    right: NodeId,
    parent: NodeId,
    red: bool,
}

#[derive(Debug, Clone)]
pub struct RbTree<T> {
    nodes: Vec<Node>,
    vals: Vec<T>,
    root: NodeId,
    len: usize,
}

impl<T> Default for RbTree<T> {
    fn default() -> Self {
        RbTree { nodes: Vec::new(), vals: Vec::new(), root: NIL, len: 0 }
    }
}

impl<T> RbTree<T> {
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    #[cfg(test)]
    pub fn get(&self, id: NodeId) -> &T {
        &self.vals[id as usize]
    }

    pub fn root(&self) -> Option<NodeId> {
        opt(self.root)
    }

    pub fn left(&self, id: NodeId) -> Option<NodeId> {
        opt(self.n(id).left)
    }

    pub fn right(&self, id: NodeId) -> Option<NodeId> {
        opt(self.n(id).right)
    }

    #[cfg(test)]
    /// The leftmost node (`rb_first`).
    pub fn first(&self) -> Option<NodeId> {
        let mut n = opt(self.root)?;
        while let Some(l) = opt(self.n(n).left) {
            n = l;
        }
        Some(n)
    }

    #[cfg(test)]
    /// The in-order successor (`rb_next`).
    pub fn next(&self, id: NodeId) -> Option<NodeId> {
        if let Some(mut n) = opt(self.n(id).right) {
            while let Some(l) = opt(self.n(n).left) {
                n = l;
            }
            return Some(n);
        }
        let mut node = id;
        loop {
            let p = opt(self.n(node).parent)?;
            if self.n(p).left == node {
                return Some(p);
            }
            node = p;
        }
    }

    #[cfg(test)]
    /// Values in order.
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        std::iter::successors(self.first(), move |&id| self.next(id)).map(move |id| self.get(id))
    }

    /// Inserts `val` under `key`, descending left while `key` is below a
    /// node's (so equal keys go after the ones present, as perf's
    /// `__symbols__insert` does), then rebalances (`rb_insert_color`).
    pub fn insert(&mut self, key: u64, val: T) -> NodeId {
        let (parent, left) = self.descend(key);
        self.link(key, val, parent, left)
    }

    /// Where [`RbTree::insert`] hangs a new node with `key`: the parent and
    /// which side.
    fn descend(&self, key: u64) -> (NodeId, bool) {
        let mut parent = NIL;
        let mut left = false;
        let mut cur = self.root;
        while cur != NIL {
            parent = cur;
            let n = self.n(cur);
            left = key < n.key;
            cur = if left { n.left } else { n.right };
        }
        (parent, left)
    }

    /// [`RbTree::insert`] given the nodes that will come just before and
    /// just after the new one in order (`None`: none). A binary search
    /// tree has one free slot between two neighbours in order: the right
    /// of the one before, if free, else the left of the one after. So the
    /// new leaf goes where the descent from the root would put it, without
    /// the descent (a cache miss at most levels of a large tree).
    ///
    /// ```text
    ///        before              after
    ///       /      \            /     \
    ///     ...      (free)     (free)   ...
    /// ```
    pub fn insert_between(&mut self, key: u64, val: T, before: Option<NodeId>, after: Option<NodeId>) -> NodeId {
        let slot = match (before, after) {
            (Some(b), _) if self.n(b).right == NIL => Some((b, false)),
            (_, Some(a)) if self.n(a).left == NIL => Some((a, true)),
            (None, None) if self.root == NIL => Some((NIL, false)),
            _ => None,
        };
        // Neighbours that are not neighbours: the descent decides.
        let (parent, left) = slot.unwrap_or_else(|| self.descend(key));
        self.link(key, val, parent, left)
    }

    /// Adds a red leaf under `parent` and rebalances.
    fn link(&mut self, key: u64, val: T, parent: NodeId, left: bool) -> NodeId {
        let id = self.nodes.len() as NodeId;
        self.nodes.push(Node { key, left: NIL, right: NIL, parent, red: true });
        self.vals.push(val);
        if parent == NIL {
            self.root = id;
        } else if left {
            self.m(parent).left = id;
        } else {
            self.m(parent).right = id;
        }
        self.len += 1;
        self.insert_color(id);
        id
    }

    fn n(&self, id: NodeId) -> &Node {
        &self.nodes[id as usize]
    }

    fn m(&mut self, id: NodeId) -> &mut Node {
        &mut self.nodes[id as usize]
    }

    fn is_red(&self, id: NodeId) -> bool {
        id != NIL && self.n(id).red
    }

    fn set_parent(&mut self, id: NodeId, parent: NodeId) {
        if id != NIL {
            self.m(id).parent = parent;
        }
    }

    fn set_parent_color(&mut self, id: NodeId, parent: NodeId, red: bool) {
        let n = self.m(id);
        n.parent = parent;
        n.red = red;
    }

    /// Makes `new` take `old`'s place under `parent` (or as root).
    fn change_child(&mut self, old: NodeId, new: NodeId, parent: NodeId) {
        if parent == NIL {
            self.root = new;
        } else if self.n(parent).left == old {
            self.m(parent).left = new;
        } else {
            self.m(parent).right = new;
        }
    }

    /// `new` takes `old`'s parent and color; `old` goes under `new` with
    /// `red` as its color.
    fn rotate_set_parents(&mut self, old: NodeId, new: NodeId, red: bool) {
        let parent = self.n(old).parent;
        let old_red = self.n(old).red;
        self.set_parent_color(new, parent, old_red);
        self.set_parent_color(old, new, red);
        self.change_child(old, new, parent);
    }

    fn insert_color(&mut self, mut node: NodeId) {
        let mut parent = self.n(node).parent;
        loop {
            if parent == NIL {
                // The root is black.
                self.set_parent_color(node, NIL, false);
                break;
            }
            if !self.n(parent).red {
                break;
            }
            let gparent = self.n(parent).parent;
            let uncle = self.n(gparent).right;
            if parent != uncle {
                // parent is gparent's left child.
                if self.is_red(uncle) {
                    // Uncle red: flip colors, continue from gparent.
                    self.set_parent_color(uncle, gparent, false);
                    self.set_parent_color(parent, gparent, false);
                    node = gparent;
                    parent = self.n(node).parent;
                    self.set_parent_color(node, parent, true);
                    continue;
                }
                let mut tmp = self.n(parent).right;
                if node == tmp {
                    // Left rotate at parent.
                    tmp = self.n(node).left;
                    self.m(parent).right = tmp;
                    self.m(node).left = parent;
                    if tmp != NIL {
                        self.set_parent_color(tmp, parent, false);
                    }
                    self.set_parent_color(parent, node, true);
                    parent = node;
                    tmp = self.n(node).right;
                }
                // Right rotate at gparent.
                self.m(gparent).left = tmp;
                self.m(parent).right = gparent;
                if tmp != NIL {
                    self.set_parent_color(tmp, gparent, false);
                }
                self.rotate_set_parents(gparent, parent, true);
                break;
            } else {
                let uncle = self.n(gparent).left;
                if self.is_red(uncle) {
                    self.set_parent_color(uncle, gparent, false);
                    self.set_parent_color(parent, gparent, false);
                    node = gparent;
                    parent = self.n(node).parent;
                    self.set_parent_color(node, parent, true);
                    continue;
                }
                let mut tmp = self.n(parent).left;
                if node == tmp {
                    // Right rotate at parent.
                    tmp = self.n(node).right;
                    self.m(parent).left = tmp;
                    self.m(node).right = parent;
                    if tmp != NIL {
                        self.set_parent_color(tmp, parent, false);
                    }
                    self.set_parent_color(parent, node, true);
                    parent = node;
                    tmp = self.n(node).left;
                }
                // Left rotate at gparent.
                self.m(gparent).right = tmp;
                self.m(parent).left = gparent;
                if tmp != NIL {
                    self.set_parent_color(tmp, gparent, false);
                }
                self.rotate_set_parents(gparent, parent, true);
                break;
            }
        }
    }

    /// Removes a node (`rb_erase`): unlink, then rebalance from the node
    /// the kernel's algorithm names.
    pub fn erase(&mut self, node: NodeId) {
        let child = self.n(node).right;
        let mut tmp = self.n(node).left;
        let rebalance;
        if tmp == NIL {
            // At most one child, on the right.
            let (pc_parent, pc_red) = (self.n(node).parent, self.n(node).red);
            self.change_child(node, child, pc_parent);
            if child != NIL {
                self.set_parent_color(child, pc_parent, pc_red);
                rebalance = NIL;
            } else {
                rebalance = if pc_red { NIL } else { pc_parent };
            }
        } else if child == NIL {
            // Only a left child.
            let (pc_parent, pc_red) = (self.n(node).parent, self.n(node).red);
            self.set_parent_color(tmp, pc_parent, pc_red);
            self.change_child(node, tmp, pc_parent);
            rebalance = NIL;
        } else {
            let mut successor = child;
            let parent;
            let child2;
            tmp = self.n(child).left;
            if tmp == NIL {
                // The successor is the right child.
                parent = successor;
                child2 = self.n(successor).right;
            } else {
                // The successor is leftmost under the right child.
                let mut p;
                loop {
                    p = successor;
                    successor = tmp;
                    tmp = self.n(tmp).left;
                    if tmp == NIL {
                        break;
                    }
                }
                parent = p;
                child2 = self.n(successor).right;
                self.m(parent).left = child2;
                self.m(successor).right = child;
                self.set_parent(child, successor);
            }
            let left = self.n(node).left;
            self.m(successor).left = left;
            self.set_parent(left, successor);
            let (pc_parent, pc_red) = (self.n(node).parent, self.n(node).red);
            self.change_child(node, successor, pc_parent);
            if child2 != NIL {
                self.set_parent_color(child2, parent, false);
                rebalance = NIL;
            } else {
                rebalance = if self.n(successor).red { NIL } else { parent };
            }
            self.set_parent_color(successor, pc_parent, pc_red);
        }
        self.len -= 1;
        let n = self.m(node);
        n.left = NIL;
        n.right = NIL;
        n.parent = NIL;
        if rebalance != NIL {
            self.erase_color(rebalance);
        }
    }

    fn erase_color(&mut self, mut parent: NodeId) {
        let mut node = NIL;
        loop {
            let mut sibling = self.n(parent).right;
            if node != sibling {
                // node is parent's left child.
                if self.is_red(sibling) {
                    // Left rotate at parent.
                    let tmp1 = self.n(sibling).left;
                    self.m(parent).right = tmp1;
                    self.m(sibling).left = parent;
                    self.set_parent_color(tmp1, parent, false);
                    self.rotate_set_parents(parent, sibling, true);
                    sibling = tmp1;
                }
                let mut tmp1 = self.n(sibling).right;
                if !self.is_red(tmp1) {
                    let tmp2 = self.n(sibling).left;
                    if !self.is_red(tmp2) {
                        // Sibling color flip.
                        self.set_parent_color(sibling, parent, true);
                        if self.n(parent).red {
                            self.m(parent).red = false;
                        } else {
                            node = parent;
                            parent = self.n(node).parent;
                            if parent != NIL {
                                continue;
                            }
                        }
                        break;
                    }
                    // Right rotate at sibling.
                    tmp1 = self.n(tmp2).right;
                    self.m(sibling).left = tmp1;
                    self.m(tmp2).right = sibling;
                    self.m(parent).right = tmp2;
                    if tmp1 != NIL {
                        self.set_parent_color(tmp1, sibling, false);
                    }
                    tmp1 = sibling;
                    sibling = tmp2;
                }
                // Left rotate at parent, color flips.
                let tmp2 = self.n(sibling).left;
                self.m(parent).right = tmp2;
                self.m(sibling).left = parent;
                self.set_parent_color(tmp1, sibling, false);
                self.set_parent(tmp2, parent);
                self.rotate_set_parents(parent, sibling, false);
                break;
            } else {
                sibling = self.n(parent).left;
                if self.is_red(sibling) {
                    // Right rotate at parent.
                    let tmp1 = self.n(sibling).right;
                    self.m(parent).left = tmp1;
                    self.m(sibling).right = parent;
                    self.set_parent_color(tmp1, parent, false);
                    self.rotate_set_parents(parent, sibling, true);
                    sibling = tmp1;
                }
                let mut tmp1 = self.n(sibling).left;
                if !self.is_red(tmp1) {
                    let tmp2 = self.n(sibling).right;
                    if !self.is_red(tmp2) {
                        self.set_parent_color(sibling, parent, true);
                        if self.n(parent).red {
                            self.m(parent).red = false;
                        } else {
                            node = parent;
                            parent = self.n(node).parent;
                            if parent != NIL {
                                continue;
                            }
                        }
                        break;
                    }
                    // Left rotate at sibling.
                    tmp1 = self.n(tmp2).left;
                    self.m(sibling).right = tmp1;
                    self.m(tmp2).left = sibling;
                    self.m(parent).left = tmp2;
                    if tmp1 != NIL {
                        self.set_parent_color(tmp1, sibling, false);
                    }
                    tmp1 = sibling;
                    sibling = tmp2;
                }
                // Right rotate at parent, color flips.
                let tmp2 = self.n(sibling).right;
                self.m(parent).left = tmp2;
                self.m(sibling).right = parent;
                self.set_parent_color(tmp1, sibling, false);
                self.set_parent(tmp2, parent);
                self.rotate_set_parents(parent, sibling, false);
                break;
            }
        }
    }

    /// Checks the red-black invariants; returns the black height.
    #[cfg(test)]
    fn check(&self, id: NodeId, parent: NodeId) -> usize {
        if id == NIL {
            return 1;
        }
        let n = self.n(id);
        assert_eq!(n.parent, parent, "parent link of {id}");
        if n.red {
            assert!(!self.is_red(n.left) && !self.is_red(n.right), "red node {id} has a red child");
        }
        let l = self.check(n.left, id);
        let r = self.check(n.right, id);
        assert_eq!(l, r, "black heights differ under {id}");
        l + usize::from(!n.red)
    }
}

fn opt(id: NodeId) -> Option<NodeId> {
    (id != NIL).then_some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(t: &RbTree<u64>, id: Option<NodeId>) -> String {
        match id {
            None => ".".into(),
            Some(i) => format!(
                "({}{} {} {})",
                t.get(i),
                if t.is_red(i) { "r" } else { "b" },
                shape(t, t.left(i)),
                shape(t, t.right(i))
            ),
        }
    }

    #[test]
    fn textbook_insertions() {
        // Ascending inserts rotate left at the grandparent: 1,2,3 -> 2(1,3).
        let mut t = RbTree::default();
        for k in [1u64, 2, 3] {
            t.insert(k, k);
        }
        assert_eq!(shape(&t, t.root()), "(2b (1r . .) (3r . .))");
        // A fourth key recolors: the uncle is red.
        t.insert(4, 4);
        assert_eq!(shape(&t, t.root()), "(2b (1b . .) (3b . (4r . .)))");
        t.check(t.root, NIL);
    }

    #[test]
    fn stays_balanced_and_ordered_through_inserts_and_erases() {
        let mut t = RbTree::default();
        let mut x: u64 = 12345;
        let mut ids = Vec::new();
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ids.push(t.insert(x % 500, x % 500));
            t.check(t.root, NIL);
        }
        let sorted: Vec<u64> = t.iter().copied().collect();
        assert!(sorted.windows(2).all(|w| w[0] <= w[1]));
        for (k, id) in ids.iter().enumerate() {
            if k % 3 == 0 {
                t.erase(*id);
                t.check(t.root, NIL);
            }
        }
        assert_eq!(t.len(), 2000 - 667);
        assert_eq!(t.iter().count(), t.len());
        let after: Vec<u64> = t.iter().copied().collect();
        assert!(after.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn equal_keys_keep_insertion_order() {
        let mut t = RbTree::default();
        for (i, k) in [5u64, 5, 3, 5, 3].into_iter().enumerate() {
            t.insert(k, (k, i));
        }
        let order: Vec<usize> = t.iter().map(|v| v.1).collect();
        assert_eq!(order, vec![2, 4, 0, 1, 3]);
    }
}
