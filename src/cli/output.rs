//! Printing helpers shared by the commands: one-line error chains, stdout writes that survive a
//! closed pipe, and a spinner for slow start-ups. (Sizes, suggestions and atomic writes are
//! leaf helpers in `crate::util`.)

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context as _;

/// `outer: inner: root`, skipping repeated messages (anyhow's `{:#}` repeats wrapped causes).
pub fn error_chain(err: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in err.chain() {
        let msg = cause.to_string();
        if parts.last().is_some_and(|p| p.contains(&msg)) {
            continue;
        }
        parts.push(msg);
    }
    parts.join(": ")
}

/// Writes `text` to stdout and flushes; a closed pipe (`agent ... | head`) is not an error.
pub fn write_stdout(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e).context("cannot write to stdout"),
        _ => Ok(()),
    }
}

/// A spinner on stderr for work that may take more than a moment (starting servers). It draws
/// only when stderr is a terminal and only after 400 ms, so quick runs and pipes see nothing.
pub struct Spinner {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Spinner {
    pub fn start(message: impl Into<String>) -> Spinner {
        let stop = Arc::new(AtomicBool::new(false));
        if !std::io::stderr().is_terminal() {
            return Spinner { stop, thread: None };
        }
        let message = message.into();
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
            let mut waited = Duration::ZERO;
            let mut frame = 0usize;
            let mut drawn = false;
            while !flag.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(80));
                waited += Duration::from_millis(80);
                if waited >= Duration::from_millis(400) {
                    eprint!("\r\x1b[2K{} {message} ({:.1}s)", FRAMES[frame % FRAMES.len()], waited.as_secs_f32());
                    frame += 1;
                    drawn = true;
                }
            }
            if drawn {
                eprint!("\r\x1b[2K");
            }
        });
        Spinner { stop, thread: Some(thread) }
    }

    /// Stops and erases the spinner.
    pub fn finish(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.stop_now();
    }
}
