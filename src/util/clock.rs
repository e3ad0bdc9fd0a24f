//! Time spent waiting for the user: [`PauseClock`] counts it, so a timeout can leave it out.
//!
//! A call's `call_timeout` and a script's timeout measure work, not the minutes a person takes to
//! answer a form or approve a call. Each server connection has its own clock; [`user_wait`] is
//! the process's (there is one terminal), paused whenever any connection's clock is.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Time spent waiting for the user (or the host's model) on one connection.
#[derive(Default)]
pub struct PauseClock {
    state: Mutex<(usize, Duration, Option<Instant>)>,
}

/// Ends a pause when dropped.
pub struct Paused<'a>(&'a PauseClock);

impl Drop for Paused<'_> {
    fn drop(&mut self) {
        if let Ok(mut s) = self.0.state.lock() {
            s.0 = s.0.saturating_sub(1);
            if s.0 == 0
                && let Some(since) = s.2.take()
            {
                s.1 += since.elapsed();
            }
        }
    }
}

impl PauseClock {
    /// Pauses until the guard is dropped (pauses may nest and overlap).
    pub fn pause(&self) -> Paused<'_> {
        if let Ok(mut s) = self.state.lock() {
            if s.0 == 0 {
                s.2 = Some(Instant::now());
            }
            s.0 += 1;
        }
        Paused(self)
    }

    /// Total paused time so far, including a pause in progress.
    pub fn total(&self) -> Duration {
        self.state.lock().map(|s| s.1 + s.2.map(|t| t.elapsed()).unwrap_or_default()).unwrap_or_default()
    }

    /// Resolves once `timeout` has passed, paused time not counted.
    pub async fn sleep(&self, timeout: Duration) {
        self.timeout(timeout, std::future::pending::<()>()).await;
    }

    /// Runs `fut` with a `timeout` that does not count paused time; `None` when it ran out.
    pub async fn timeout<T>(&self, timeout: Duration, fut: impl Future<Output = T>) -> Option<T> {
        let start = Instant::now();
        let paused_before = self.total();
        let mut fut = std::pin::pin!(fut);
        loop {
            let deadline = start + timeout + self.total().saturating_sub(paused_before);
            tokio::select! {
                v = &mut fut => return Some(v),
                () = tokio::time::sleep_until(deadline.into()) => {
                    let now_deadline = start + timeout + self.total().saturating_sub(paused_before);
                    if Instant::now() >= now_deadline {
                        return None;
                    }
                }
            }
        }
    }
}

/// The process's time waiting for the user (there is one terminal): a script's timeout
/// (`runtime`) does not count it. Every pause of a connection's clock pauses this one too.
pub fn user_wait() -> &'static PauseClock {
    static CLOCK: std::sync::OnceLock<PauseClock> = std::sync::OnceLock::new();
    CLOCK.get_or_init(PauseClock::default)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[tokio::test]
    async fn paused_time_does_not_count() {
        let clock = Arc::new(PauseClock::default());
        let c = clock.clone();
        let r = clock
            .timeout(Duration::from_millis(100), async move {
                let _p = c.pause();
                tokio::time::sleep(Duration::from_millis(300)).await;
                7
            })
            .await;
        assert_eq!(r, Some(7));
        let r = clock.timeout(Duration::from_millis(50), tokio::time::sleep(Duration::from_secs(5))).await;
        assert_eq!(r, None);
    }
}
