//! Development aid: prints perf's demangling of each name on stdin
//! (`<<FAIL>>` when perf would print it as it is).

use std::io::BufRead;

fn main() {
    for line in std::io::stdin().lock().lines() {
        let line = line.unwrap();
        match pstitch::symbols::demangle::demangle(&line) {
            Some(d) => println!("{d}"),
            None => println!("<<FAIL>>"),
        }
    }
}
