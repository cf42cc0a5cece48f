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
    let s = l.syms.listing();
    for (i, w) in s.windows(2).enumerate() {
        if list {
            println!("{:x}-{:x} {}", w[0].0, w[0].1, w[0].2);
        }
        if w[0].1 > w[1].0 {
            println!("overlap #{i}: {:x}-{:x} {} / {:x}-{:x} {}", w[0].0, w[0].1, w[0].2, w[1].0, w[1].1, w[1].2);
        }
    }
}
