//! Worker processes of this binary (the jq worker, the script worker): how to start one so that
//! it never outlives `agent`, even when `agent` is killed with SIGKILL and runs no clean-up.

use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The binary to re-execute as a worker: `/proc/self/exe`, which names this very binary even
/// after the file on disk was replaced or deleted (an upgrade while `serve` runs); the path it
/// was started from where there is no `/proc`.
pub fn this_binary() -> std::io::Result<PathBuf> {
    let proc_exe = PathBuf::from("/proc/self/exe");
    if proc_exe.exists() { Ok(proc_exe) } else { std::env::current_exe() }
}

/// In a worker, first thing: the kernel kills this process (SIGKILL) when `parent` (the `agent`
/// that started it, passed on the command line) dies; a parent already gone ends it at once.
/// Linux ties the signal to the *thread* that spawned the worker, so spawn from a thread that
/// lives as long as the process (a tokio worker thread, the main thread).
///
/// Done by the worker rather than in a `pre_exec` hook: a hook makes the standard library start
/// the child with `fork` instead of `posix_spawn`, which copies all of `agent`'s page tables on
/// every start (about 35 ms per jq handler in `cargo bench --bench runtime`).
pub fn die_with(parent: u32) {
    // SAFETY: prctl with PR_SET_PDEATHSIG takes a signal number and touches no memory of ours.
    let set = unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) } == 0;
    // SAFETY: getppid has no preconditions.
    let orphaned = u32::try_from(unsafe { libc::getppid() }).ok() != Some(parent);
    if !set || orphaned {
        // SAFETY: `_exit` ends the process at once; nothing of the worker has started yet.
        unsafe { libc::_exit(3) }
    }
}

/// In a worker: a thread that ends the process (`_exit`, no clean-up: the process may be busy in
/// code that never returns) once its parent is gone or `deadline` has passed, checking every
/// `every`. Backs up [`die_with_parent`] (whose signal depends on the spawning thread) and bounds
/// a worker whose parent hangs.
pub fn exit_when_orphaned(deadline: Option<Instant>, every: Duration, on_deadline: &'static str) {
    // SAFETY: getppid has no preconditions.
    let parent = unsafe { libc::getppid() };
    let spawned = std::thread::Builder::new().name("watchdog".into()).stack_size(64 << 10).spawn(move || {
        loop {
            std::thread::sleep(every);
            // SAFETY: as above.
            let orphaned = unsafe { libc::getppid() } != parent;
            let late = deadline.is_some_and(|d| Instant::now() >= d);
            if orphaned || late {
                if late && !orphaned {
                    // SAFETY: write to fd 2 of a static buffer; `_exit` ends the process at once.
                    unsafe {
                        libc::write(2, on_deadline.as_ptr().cast(), on_deadline.len());
                    }
                }
                // SAFETY: as above.
                unsafe { libc::_exit(3) }
            }
        }
    });
    if spawned.is_err() {
        // No watchdog thread: the process must not run unwatched.
        // SAFETY: as above.
        unsafe { libc::_exit(3) }
    }
}
