//! The `agent` binary: everything lives in the library; this only hands over to the CLI (or,
//! with the hidden first argument `__jq-worker`, runs one jq result handler: `handler::jq`),
//! and installs the allocator a worker can hold to its memory limit (`util::alloc`).

#[global_allocator]
static ALLOCATOR: agent::util::alloc::Counting = agent::util::alloc::Counting;

fn main() -> std::process::ExitCode {
    if std::env::args_os().nth(1).is_some_and(|a| a == agent::handler::jq::WORKER_ARG) {
        return std::process::ExitCode::from(agent::handler::jq::worker_main());
    }
    std::process::ExitCode::from(agent::cli::main())
}
