fn main() -> std::process::ExitCode {
    pstitch::cli::main()
}
