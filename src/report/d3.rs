//! perf's `flamegraph.py`: the samples as a tree for d3-flame-graph
//! (`stacks.json`), written alone or into an HTML template.
//!
//! ```text
//! {"n": "all", "l": "root", "v": 0, "c": [            the root
//!   {"n": "cwork (13794)", "l": "", "v": 0, "c": [     a process: "comm (pid)";
//!     {"n": "main", "l": "", "v": 3, "c": [...]}       pid 0 is "comm", "kernel"
//! ```
//!
//! `n` is the name (a frame's symbol, `[unknown]` without one), `l` the
//! kind ("kernel" for frames in `[kernel.kallsyms]` or a `vmlinux`, else
//! ""), `v` the samples that ended there, `c` the children in the order
//! they first came. A child is found by name alone, so a name keeps the
//! kind it first came with.

use std::collections::HashMap;
use std::io::{self, Write};

use super::json::JsonWriter;
use super::stacks::{FrameId, FrameTable, StackSample, StackSink};

/// Where the script looks for the d3-flame-graph template (Debian's
/// `libjs-d3-flame-graph` package puts it there).
pub const DEFAULT_TEMPLATE: &str = "/usr/share/d3-flame-graph/d3-flamegraph-base.html";

/// The page the script writes when the template cannot be read: it loads
/// d3 and d3-flame-graph from their CDNs.
pub const MINIMAL_HTML: &str = r##"<head>
  <link rel="stylesheet" type="text/css" href="https://cdn.jsdelivr.net/npm/d3-flame-graph@4.1.3/dist/d3-flamegraph.css">
</head>
<body>
  <div id="chart"></div>
  <script type="text/javascript" src="https://d3js.org/d3.v7.js"></script>
  <script type="text/javascript" src="https://cdn.jsdelivr.net/npm/d3-flame-graph@4.1.3/dist/d3-flamegraph.min.js"></script>
  <script type="text/javascript">
  const stacks = [/** @flamegraph_json **/];
  // Note, options is unused.
  const options = [/** @options_json **/];

  var chart = flamegraph();
  d3.select("#chart")
        .datum(stacks[0])
        .call(chart);
  </script>
</body>
"##;

struct Node {
    name: Box<str>,
    kernel: bool,
    value: u64,
    children: Vec<usize>,
    /// Children by name, once there are many.
    index: Option<HashMap<Box<str>, usize, foldhash::fast::RandomState>>,
}

/// The tree of samples.
pub struct D3Tree {
    nodes: Vec<Node>,
    /// Only samples of this event (`-e`), if set.
    event: Option<String>,
    /// Per frame: its name and whether it is a kernel frame.
    frames: Vec<Option<(Box<str>, bool)>>,
    /// Process nodes by (comm, pid) text.
    name: String,
}

/// Past this many children a node indexes them by name.
const INDEX_AT: usize = 16;

impl D3Tree {
    pub fn new(event: Option<String>) -> D3Tree {
        let root = Node { name: "all".into(), kernel: false, value: 0, children: Vec::new(), index: None };
        D3Tree { nodes: vec![root], event: event.filter(|e| !e.is_empty()), frames: Vec::new(), name: String::new() }
    }

    /// The script's `find_or_create_node`.
    fn child(&mut self, parent: usize, name: &str, kernel: bool) -> usize {
        let p = &self.nodes[parent];
        let found = match &p.index {
            Some(ix) => ix.get(name).copied(),
            None => p.children.iter().copied().find(|&c| &*self.nodes[c].name == name),
        };
        if let Some(c) = found {
            return c;
        }
        let id = self.nodes.len();
        self.nodes.push(Node { name: name.into(), kernel, value: 0, children: Vec::new(), index: None });
        let p = &mut self.nodes[parent];
        p.children.push(id);
        if let Some(ix) = &mut p.index {
            ix.insert(name.into(), id);
        } else if p.children.len() > INDEX_AT {
            let children = p.children.clone();
            let ix = children.iter().map(|&c| (self.nodes[c].name.clone(), c)).collect();
            self.nodes[parent].index = Some(ix);
        }
        id
    }

    fn frame(&mut self, frames: &FrameTable, id: FrameId) -> (Box<str>, bool) {
        let i = id as usize;
        if self.frames.len() <= i {
            self.frames.resize(i + 1, None);
        }
        self.frames[i]
            .get_or_insert_with(|| {
                let name = frames.name(id).unwrap_or("[unknown]").into();
                (name, is_kernel_dso(frames.dso(id)))
            })
            .clone()
    }

    /// `stacks.json` (`json.dumps` of the tree).
    pub fn write_json(&self, out: impl Write) -> io::Result<()> {
        let mut w = JsonWriter::new(io::BufWriter::with_capacity(1 << 16, out), None);
        // Depth first, without recursion: (node, next child).
        let mut stack: Vec<(usize, usize)> = Vec::new();
        self.open_node(&mut w, 0)?;
        stack.push((0, 0));
        while let Some((n, next)) = stack.last_mut() {
            let node = &self.nodes[*n];
            if let Some(&c) = node.children.get(*next) {
                *next += 1;
                self.open_node(&mut w, c)?;
                stack.push((c, 0));
            } else {
                w.end_array()?;
                w.end_object()?;
                stack.pop();
            }
        }
        w.into_inner().flush()
    }

    fn open_node<W: Write>(&self, w: &mut JsonWriter<W>, n: usize) -> io::Result<()> {
        let node = &self.nodes[n];
        w.begin_object()?;
        w.key_str("n", &node.name)?;
        w.key_str("l", if n == 0 { "root" } else if node.kernel { "kernel" } else { "" })?;
        w.key_int("v", node.value as i64)?;
        w.key("c")?;
        w.begin_array()
    }

    /// The template filled as the script fills it: the options, then the
    /// tree, each in place of its marker.
    pub fn fill_template(&self, template: &str, colorscheme: &str, context: &str) -> io::Result<String> {
        let mut options = JsonWriter::new(Vec::new(), None);
        options.begin_object()?;
        options.key_str("colorscheme", colorscheme)?;
        options.key_str("context", context)?;
        options.end_object()?;
        let options = String::from_utf8(options.into_inner()).expect("JSON is ASCII");
        let mut stacks = Vec::new();
        self.write_json(&mut stacks)?;
        let stacks = String::from_utf8(stacks).expect("JSON is ASCII");
        Ok(template.replace("/** @options_json **/", &options).replace("/** @flamegraph_json **/", &stacks))
    }
}

/// The script's `get_libtype_from_dso`.
fn is_kernel_dso(dso: Option<&str>) -> bool {
    dso.is_some_and(|d| d == "[kernel.kallsyms]" || d.ends_with("/vmlinux"))
}

impl StackSink for D3Tree {
    fn sample(&mut self, frames: &FrameTable, s: &StackSample<'_>) {
        if self.event.as_deref().is_some_and(|e| e != s.event) {
            return;
        }
        // `event["dso"]` may name a vmlinux for user processes: the pid
        // decides.
        self.name.clear();
        self.name.push_str(s.comm);
        if s.pid != 0 {
            self.name.push_str(&format!(" ({})", s.pid));
        }
        let name = std::mem::take(&mut self.name);
        let mut node = self.child(0, &name, s.pid == 0);
        self.name = name;
        for &f in s.callchain.iter().rev() {
            let (name, kernel) = self.frame(frames, f);
            node = self.child(node, &name, kernel);
        }
        self.nodes[node].value += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_dsos() {
        assert!(is_kernel_dso(Some("[kernel.kallsyms]")));
        assert!(is_kernel_dso(Some("/usr/lib/debug/lib/modules/6.1/vmlinux")));
        assert!(!is_kernel_dso(Some("/bin/x")));
        assert!(!is_kernel_dso(None));
    }

    /// Children found by name, before and after they are indexed, keep
    /// their first order; the JSON is `json.dumps`'.
    #[test]
    fn tree_in_first_seen_order() {
        let mut t = D3Tree::new(None);
        let p = t.child(0, "p (1)", false);
        let names: Vec<String> = (0..40).map(|i| format!("f{}", (i * 7) % 23)).collect();
        for n in &names {
            let c = t.child(p, n, false);
            t.nodes[c].value += 1;
        }
        let order: Vec<&str> = t.nodes[p].children.iter().map(|&c| &*t.nodes[c].name).collect();
        let mut want: Vec<&str> = Vec::new();
        for n in &names {
            if !want.contains(&n.as_str()) {
                want.push(n);
            }
        }
        assert_eq!(order, want);
        let mut small = D3Tree::new(None);
        let p = small.child(0, "swapper", true);
        small.nodes[p].value = 2;
        let mut out = Vec::new();
        small.write_json(&mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"n": "all", "l": "root", "v": 0, "c": [{"n": "swapper", "l": "kernel", "v": 2, "c": []}]}"#
        );
    }
}
