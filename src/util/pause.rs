//! A process-wide clock that stands still while the user is asked something (an approval
//! prompt): [`hold`] pauses it until the returned guard drops, and [`sleep_unpaused`] sleeps
//! for a duration of running time only. Script timeouts use it, so a script does not time out
//! while its tool call waits for the user.

use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;

#[derive(Debug, Clone, Copy, Default)]
struct State {
    /// Holds in force.
    holds: usize,
    /// When the current pause began (`holds > 0`).
    since: Option<Instant>,
    /// Paused time of the pauses that ended.
    total: Duration,
}

impl State {
    fn paused_total(&self, now: Instant) -> Duration {
        self.total + self.since.map_or(Duration::ZERO, |s| now.saturating_duration_since(s))
    }
}

static CLOCK: LazyLock<(Mutex<State>, watch::Sender<u64>)> =
    LazyLock::new(|| (Mutex::new(State::default()), watch::channel(0).0));

fn changed() {
    CLOCK.1.send_modify(|n| *n = n.wrapping_add(1));
}

/// Pauses the clock until the guard drops (holds nest: it runs again when the last one drops).
pub fn hold() -> PauseGuard {
    if let Ok(mut s) = CLOCK.0.lock() {
        if s.holds == 0 {
            s.since = Some(Instant::now());
        }
        s.holds += 1;
    }
    changed();
    PauseGuard(())
}

/// See [`hold`].
#[must_use]
pub struct PauseGuard(());

impl Drop for PauseGuard {
    fn drop(&mut self) {
        if let Ok(mut s) = CLOCK.0.lock() {
            s.holds = s.holds.saturating_sub(1);
            if s.holds == 0
                && let Some(since) = s.since.take()
            {
                s.total += since.elapsed();
            }
        }
        changed();
    }
}

fn snapshot() -> (bool, Duration) {
    let now = Instant::now();
    CLOCK.0.lock().map(|s| (s.holds > 0, s.paused_total(now))).unwrap_or((false, Duration::ZERO))
}

/// Sleeps until `duration` of unpaused time has passed since the call.
pub async fn sleep_unpaused(duration: Duration) {
    let start = Instant::now();
    let (_, paused_at_start) = snapshot();
    let mut rx = CLOCK.1.subscribe();
    loop {
        rx.borrow_and_update();
        let (paused, total) = snapshot();
        let ran = start.elapsed().saturating_sub(total.saturating_sub(paused_at_start));
        if !paused && ran >= duration {
            return;
        }
        if paused {
            // Wait for the pause to end.
            if rx.changed().await.is_err() {
                return;
            }
        } else {
            tokio::select! {
                () = tokio::time::sleep(duration - ran) => {}
                r = rx.changed() => if r.is_err() { return },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_hold_stops_the_clock_until_it_drops() {
        let guard = hold();
        let sleeper = tokio::spawn(sleep_unpaused(Duration::from_millis(50)));
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!sleeper.is_finished(), "the clock ran during a hold");
        let released = Instant::now();
        drop(guard);
        sleeper.await.unwrap();
        assert!(released.elapsed() >= Duration::from_millis(40));
    }
}
