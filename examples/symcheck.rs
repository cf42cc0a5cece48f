//! Development aid: loads a DSO the way perf does and reports its symbols
//! (`--list`) or the overlapping ones.
use std::path::Path;

use pstitch::symbols::load::{Search, load_user_dso};

fn main() {
    let mut args = std::env::args().skip(1);
    let symfs = args.next().expect("usage: symcheck SYMFS PATH [--list]");
    let path = args.next().expect("usage: symcheck SYMFS PATH [--list]");
    let list = args.next().is_some();
    let search = Search { symfs: Some(Path::new(&symfs)), buildid_dir: None, demangle: true };
    let mut l = load_user_dso(&path, None, false, &search);
    println!("{} symbols, symsrc {:?}", l.syms.len(), l.symsrc);
    let s: Vec<_> = l.syms.iter().cloned().collect();
    for (i, w) in s.windows(2).enumerate() {
        if list {
            println!("{:x}-{:x} {}", w[0].start, w[0].end, w[0].name());
        }
        if w[0].end > w[1].start {
            println!("overlap #{i}: {:x}-{:x} {} / {:x}-{:x} {}", w[0].start, w[0].end, w[0].name(), w[1].start, w[1].end, w[1].name());
        }
    }
}
