//! Development aid: times loading each DSO given (perf's symbol loading).
use std::path::Path;
use std::time::Instant;

use pstitch::symbols::load::{Search, load_user_dso};

fn main() {
    let search = Search { symfs: Some(Path::new("/")), buildid_dir: None, demangle: true };
    for path in std::env::args().skip(1) {
        let t = Instant::now();
        let l = load_user_dso(&path, None, false, &search);
        println!("{:>8.1} ms {:>7} symbols {path}", t.elapsed().as_secs_f64() * 1e3, l.syms.len());
    }
}
