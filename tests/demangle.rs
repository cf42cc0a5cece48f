//! pstitch's C++ demangler against `abi::__cxa_demangle`, name by name
//! (tests/demangle/README.md says where the names and answers come from).

use std::io::Read;

#[test]
fn cxx_names_match_cxa_demangle() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/demangle/cases.tsv.zst");
    let file = std::fs::File::open(path).expect("opening the cases");
    let mut text = String::new();
    zstd::stream::read::Decoder::new(file).expect("zstd").read_to_string(&mut text).expect("reading the cases");
    // The deepest names need more stack than a test thread's default in
    // unoptimised builds; libiberty's own limits bound the depth.
    let handle = std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(move || {
            let (mut total, mut failed) = (0, Vec::new());
            for line in text.lines() {
                let (name, want) = line.split_once('\t').expect("name<TAB>expected");
                let want = (!want.is_empty()).then_some(want);
                let got = pstitch::demangle_cxx(name);
                total += 1;
                if got.as_deref() != want {
                    failed.push(format!("{name}\n  __cxa_demangle: {want:?}\n  pstitch:        {got:?}"));
                }
            }
            (total, failed)
        })
        .expect("spawning");
    let (total, failed) = handle.join().expect("the demangler panicked");
    assert!(total > 25_000, "only {total} cases");
    assert!(failed.is_empty(), "{} of {total} names differ:\n{}", failed.len(), failed.iter().take(20).cloned().collect::<Vec<_>>().join("\n"));
}
