//! Development aid: prints what pstitch's addr2line emulation answers, in
//! the format of `addr2line -a -i -f -e FILE` (addresses in hex on stdin).
//! Compare with the real thing: `... | addr2line -a -i -f -e FILE`.

use std::io::BufRead;

use pstitch::Addr2line;

fn main() {
    let path = std::env::args().nth(1).expect("usage: a2l FILE < addresses");
    let mut s = Addr2line::open(std::path::Path::new(&path)).expect("an ELF file");
    for line in std::io::stdin().lock().lines() {
        let line = line.unwrap();
        let t = line.trim().trim_start_matches("0x");
        let Ok(pc) = u64::from_str_radix(t, 16) else { continue };
        println!("0x{pc:016x}");
        match s.query(pc) {
            None => println!("??\n??:0"),
            Some(recs) => {
                for r in recs {
                    println!("{}", r.function.as_deref().filter(|f| !f.is_empty()).unwrap_or("??"));
                    let f = r.file.as_deref().unwrap_or("??");
                    if r.line != 0 { println!("{f}:{}", r.line) } else { println!("{f}:?") }
                }
            }
        }
    }
}
