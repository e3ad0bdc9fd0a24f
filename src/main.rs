//! The `agent` binary: everything lives in the library; this only hands over to the CLI, or,
//! with a hidden first argument, runs a worker process: `__jq-worker` one jq result handler
//! (`handler::jq`), `__js-worker` the script runner (`runtime`). It installs the allocator a
//! worker can hold to its memory limit (`util::alloc`), and has executors run scripts in worker
//! processes of this binary.

#[global_allocator]
static ALLOCATOR: agent::util::alloc::Counting = agent::util::alloc::Counting;

fn main() -> std::process::ExitCode {
    // SAFETY: first thing in main, before any thread exists.
    unsafe { agent::runtime::use_private_bytecode_cache() };
    let first = std::env::args_os().nth(1);
    if first.as_ref().is_some_and(|a| a == agent::handler::jq::WORKER_ARG) {
        return std::process::ExitCode::from(agent::handler::jq::worker_main());
    }
    if first.as_ref().is_some_and(|a| a == agent::runtime::WORKER_ARG) {
        agent::cli::log::init(agent::runtime::worker_verbosity());
        return std::process::ExitCode::from(agent::runtime::worker_main());
    }
    agent::runtime::run_scripts_in_worker_processes();
    // `agent exec` always runs a script: its worker starts while the arguments and the
    // configuration are read, forked from this process so it need not load the binary again.
    if subcommand().is_some_and(|c| c == "exec") {
        // SAFETY: no thread has been started yet.
        if let Some(worker) = unsafe { agent::runtime::prestart_forked_worker() } {
            // Logging is not set up in `agent` yet: the worker logs as a default run does (a
            // command that asks for more, `-v`, starts a worker of its own instead of this one).
            agent::cli::log::init(0);
            return std::process::ExitCode::from(worker.run());
        }
    }
    std::process::ExitCode::from(agent::cli::main())
}

/// The first argument that is not an option (nor `--config`'s value): the subcommand, as far as
/// `main` needs to know it before the command line is parsed.
fn subcommand() -> Option<std::ffi::OsString> {
    let mut args = std::env::args_os().skip(1);
    while let Some(a) = args.next() {
        if a == "--config" {
            args.next();
        } else if !a.as_encoded_bytes().starts_with(b"-") {
            return Some(a);
        }
    }
    None
}
