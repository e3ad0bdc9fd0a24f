//! The `agent` binary: everything lives in the library; this only hands over to the CLI.

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(agent::cli::main())
}
