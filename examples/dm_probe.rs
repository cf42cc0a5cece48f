fn main() {
    for s in std::env::args().skip(1) {
        match cpp_demangle::Symbol::new(s.as_bytes()) {
            Ok(sym) => println!("{s} => {}", sym.demangle_with_options(&cpp_demangle::DemangleOptions::default()).unwrap_or_else(|e| format!("{e:?}"))),
            Err(e) => println!("{s} => parse error: {e:?}"),
        }
    }
}
