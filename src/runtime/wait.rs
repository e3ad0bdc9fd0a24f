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
//!
//! And only while it pays: each lone call the thread polled for counts as a hit when its answer
//! came inside the window, a miss when it did not (the polling was then pure cost). When misses
//! outnumber hits by more than one over the recent calls of a script (a tool, or a machine,
//! slower than the window), the thread sleeps at once, polling only every [`PROBE_EVERY`]th lone
//! call to notice when answers come quickly again. On a machine where a round trip takes longer
//! than `call_spin` this turns the polling off by itself instead of burning the window on every
//! call.
//!
//! Only polled calls are judged. A call the thread slept through is slower by the very wake-up
//! polling saves, so judging it too kept polling off once it was off: on a VM whose round trip
//! sat near the window, a few slow answers turned polling off for the rest of a script and every
//! call then cost ~1.6× instead of ~1.0× (`cargo bench --bench runtime`, section 3). One miss is
//! forgiven because a script's first call also opens its connection to the bridge.

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
    /// Whether the thread polls for the current lone call (decided when it became lone).
    poll_this: Cell<bool>,
    /// Recent lone calls answered inside / outside the window (halved when they add up to
    /// [`HISTORY`], so old calls fade).
    hits: Cell<u32>,
    misses: Cell<u32>,
    /// Lone calls started while polling was off (every [`PROBE_EVERY`]th polls anyway).
    skipped: Cell<u32>,
    /// The window the hits and misses were judged against.
    window: Cell<Duration>,
}

/// How many recent lone calls judge whether polling pays.
const HISTORY: u32 = 16;
/// While polling does not pay, every this-many-th lone call polls anyway, to notice a change.
pub(crate) const PROBE_EVERY: u32 = 16;

impl CallsInFlight {
    /// Counts a call until the returned guard is dropped (also when the op is dropped unfinished).
    pub(crate) fn start(self: &Rc<Self>) -> CallInFlight {
        self.set_count(self.count.get() + 1);
        CallInFlight(self.clone())
    }

    fn set_count(&self, n: u32) {
        let before = self.count.get();
        // A lone call the thread polled for just ended: judge whether its answer came inside
        // the window.
        if before == 1
            && n == 0
            && let Some(since) = self.lone_since.get()
            && self.poll_this.get()
        {
            self.record(since.elapsed() < self.window.get());
        }
        self.count.set(n);
        if n == 1 {
            self.lone_since.set(Some(Instant::now()));
            self.poll_this.set(self.pays() || self.probe());
        } else {
            self.lone_since.set(None);
        }
    }

    fn record(&self, hit: bool) {
        let (mut h, mut m) = (self.hits.get(), self.misses.get());
        if hit {
            h += 1;
        } else {
            m += 1;
        }
        if h + m >= HISTORY {
            h /= 2;
            m /= 2;
        }
        self.hits.set(h);
        self.misses.set(m);
    }

    /// Polling pays while recent polled calls were answered inside the window at least as often
    /// as not, give or take one (and always at the start, with nothing recorded).
    fn pays(&self) -> bool {
        self.misses.get() <= self.hits.get() + 1
    }

    /// Counts a lone call that would not poll; true for every [`PROBE_EVERY`]th.
    fn probe(&self) -> bool {
        let n = self.skipped.get().wrapping_add(1);
        self.skipped.set(n);
        n.is_multiple_of(PROBE_EVERY)
    }

    /// Sets the window hits and misses are judged against (the runner's effective `call_spin`).
    pub(crate) fn set_window(&self, window: Duration) {
        self.window.set(window);
    }

    /// True while one call is outstanding, became the only one less than `window` ago, and
    /// polling pays (or this call probes whether it does again).
    pub(crate) fn keep_polling(&self, window: Duration) -> bool {
        !window.is_zero()
            && self.count.get() == 1
            && self.poll_this.get()
            && self.lone_since.get().is_some_and(|t| t.elapsed() < window)
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

    /// One lone call that takes `took`, judged against `window`.
    fn lone_call(calls: &Rc<CallsInFlight>, took: Duration) -> bool {
        lone_call_taking(calls, |_| took)
    }

    /// One lone call whose answer takes `took(polled)`; answers whether the thread polled.
    fn lone_call_taking(calls: &Rc<CallsInFlight>, took: impl Fn(bool) -> Duration) -> bool {
        let call = calls.start();
        let polled = calls.keep_polling(WINDOW);
        std::thread::sleep(took(polled));
        drop(call);
        polled
    }

    /// Slow answers (past a 2 ms window) after one fast one, until polling stops.
    fn turn_polling_off(calls: &Rc<CallsInFlight>) {
        calls.set_window(Duration::from_millis(2));
        assert!(lone_call(calls, Duration::ZERO), "with nothing recorded, polling is tried");
        // One miss more than hits is forgiven (a script's first call also opens a connection)...
        assert!(lone_call(calls, Duration::from_millis(3)));
        assert!(lone_call(calls, Duration::from_millis(3)));
        // ...two are not: this is the last call polled for.
        assert!(lone_call(calls, Duration::from_millis(3)));
        assert!(!calls.pays());
    }

    #[test]
    fn stops_polling_while_answers_come_after_the_window_and_probes_for_a_change() {
        let calls = Rc::new(CallsInFlight::default());
        turn_polling_off(&calls);
        let polled: Vec<bool> = (0..PROBE_EVERY).map(|_| lone_call(&calls, Duration::from_millis(3))).collect();
        // Only one probe in every PROBE_EVERY lone calls polls.
        assert_eq!(polled.iter().filter(|p| **p).count(), 1, "{polled:?}");
        // Fast answers again: the probes record hits until polling pays once more.
        let mut resumed = false;
        for _ in 0..(HISTORY * PROBE_EVERY) {
            if lone_call(&calls, Duration::ZERO) && calls.pays() {
                resumed = true;
                break;
            }
        }
        assert!(resumed, "polling never resumed once answers were fast again");
    }

    /// A call the thread slept through is slower by the wake-up polling saves. Judged, such calls
    /// kept polling off for good where answers come inside the window only when polled for.
    #[test]
    fn calls_slept_through_are_not_judged() {
        let calls = Rc::new(CallsInFlight::default());
        turn_polling_off(&calls);
        let polled_for = |polled| if polled { Duration::ZERO } else { Duration::from_millis(3) };
        let resumed_after = (1..=4 * PROBE_EVERY).find(|_| lone_call_taking(&calls, polled_for) && calls.pays());
        assert_eq!(resumed_after, Some(PROBE_EVERY), "polling resumes at the first probe that hits");
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
