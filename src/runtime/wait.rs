//! How the runner's thread waits for a tool call's answer: while exactly one call is
//! outstanding, and for at most a short window after it went out, the thread keeps polling its
//! event loop (yielding the CPU between polls) instead of sleeping in the kernel. The polling
//! itself is done by the runner's event-loop guard (`isolate::guarded`); this module decides
//! when.
//!
//! Why: a thread that sleeps in `epoll_wait` pays for being woken (on a virtual machine, an
//! interrupt into an idle, often halted, virtual CPU) and resumes with cold caches, and the
//! whole chain (bridge worker, server) ran slower around a sleeping caller. For a local tool
//! that answers in ~120 µs that was a third of the call: sequential `callMCPTool` calls through
//! the bridge took 0.19-0.21 ms each with the thread sleeping and 0.11-0.15 ms with it polling
//! (`cargo bench --bench runtime`, section 3; docs/exec.md has the numbers).
//!
//! Bounds on the busy wait: only a *lone* call (with several in flight, answers keep arriving and
//! the thread has work; polling would only take CPU from the bridge and the servers), only for
//! `mcp.code_execution.call_spin` after the call went out (a slow tool finds the thread asleep as
//! before, having cost at most that much CPU), and never on a machine with one CPU (the polling
//! thread would hold the CPU the bridge and the server need to answer).

use std::cell::Cell;
use std::rc::Rc;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The tool calls of one execution that are on their way to the bridge, shared by the op (which
/// counts them) and the runner's event-loop guard (which asks whether to keep polling).
#[derive(Default)]
pub(crate) struct CallsInFlight {
    count: Cell<u32>,
    /// When the outstanding call became the only one (it went out, or the others finished).
    lone_since: Cell<Option<Instant>>,
}

impl CallsInFlight {
    /// Counts a call until the returned guard is dropped (also when the op is dropped unfinished).
    pub(crate) fn start(self: &Rc<Self>) -> CallInFlight {
        self.set_count(self.count.get() + 1);
        CallInFlight(self.clone())
    }

    fn set_count(&self, n: u32) {
        self.count.set(n);
        self.lone_since.set(if n == 1 { Some(Instant::now()) } else { None });
    }

    /// True while one call is outstanding and became the only one less than `window` ago.
    pub(crate) fn keep_polling(&self, window: Duration) -> bool {
        !window.is_zero() && self.count.get() == 1 && self.lone_since.get().is_some_and(|t| t.elapsed() < window)
    }

    #[cfg(test)]
    fn count(&self) -> u32 {
        self.count.get()
    }
}

/// One call in flight; dropping it ends the call's count.
pub(crate) struct CallInFlight(Rc<CallsInFlight>);

impl Drop for CallInFlight {
    fn drop(&mut self) {
        let calls = &self.0;
        calls.set_count(calls.count.get().saturating_sub(1));
    }
}

/// The polling window to use on this machine: `configured`, or zero when there is a single CPU.
pub(crate) fn effective_window(configured: Duration) -> Duration {
    static CPUS: OnceLock<usize> = OnceLock::new();
    let cpus = *CPUS.get_or_init(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));
    if cpus < 2 { Duration::ZERO } else { configured }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WINDOW: Duration = Duration::from_secs(60);

    #[test]
    fn polls_only_for_a_lone_call() {
        let calls = Rc::new(CallsInFlight::default());
        assert!(!calls.keep_polling(WINDOW), "no call, nothing to wait for");
        let first = calls.start();
        assert!(calls.keep_polling(WINDOW));
        let second = calls.start();
        assert!(!calls.keep_polling(WINDOW), "two in flight: sleep between answers");
        drop(first);
        assert!(calls.keep_polling(WINDOW), "the remaining call is alone again");
        drop(second);
        assert_eq!(calls.count(), 0);
        assert!(!calls.keep_polling(WINDOW));
    }

    #[test]
    fn stops_polling_after_the_window_or_when_disabled() {
        let calls = Rc::new(CallsInFlight::default());
        let _call = calls.start();
        assert!(!calls.keep_polling(Duration::ZERO), "a zero window disables polling");
        std::thread::sleep(Duration::from_millis(5));
        assert!(!calls.keep_polling(Duration::from_millis(1)), "a call older than the window");
        assert!(calls.keep_polling(WINDOW));
    }
}
