//! Printing helpers shared by the commands: the one sanitiser for text a server (or a script, or
//! a model) supplies before it reaches a terminal ([`terminal_text`], [`terminal_line`]),
//! one-line error chains, stdout and stderr writes that survive a closed pipe, and a spinner for
//! slow start-ups. (Sizes, suggestions and atomic writes are leaf helpers in `crate::util`.)
//!
//! A terminal obeys the bytes it is sent: ESC and C1 sequences move the cursor, erase lines, set
//! the window title or hide a link behind text (OSC 8), a lone CR rewrites the line. Text from
//! outside is therefore sanitised whenever it is printed to a terminal; written to a pipe or a
//! file (`--json`, redirected stdout) it stays byte-exact, since there it is data.

use std::borrow::Cow;
use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context as _;

/// What a character that a terminal would obey is shown as.
const REPLACEMENT: char = '\u{FFFD}';

/// Whether `c` would act on a terminal rather than be shown: C0 controls (but newline and tab),
/// DEL, C1 controls (U+0080..U+009F: a terminal may read U+009B as CSI), and the bidirectional
/// embeddings, overrides and isolates that reorder what is shown.
fn acts_on_terminal(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// `text` made safe to print on a terminal: every character that would act on it instead of
/// being shown becomes `\u{FFFD}` (so `ESC [2J` shows as `\u{FFFD}[2J`, an OSC 8 link shows its
/// target), except carriage returns, which are dropped (`\r\n` line ends stay line ends).
/// Newlines and tabs are kept. Borrowed when there is nothing to change.
pub fn terminal_text(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| c == '\r' || acts_on_terminal(c)) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.chars().filter(|&c| c != '\r').map(|c| if acts_on_terminal(c) { REPLACEMENT } else { c }).collect())
}

/// [`terminal_text`] on one line: newlines and tabs become spaces too (labels, URLs, notices).
pub fn terminal_line(text: &str) -> Cow<'_, str> {
    match terminal_text(text) {
        Cow::Borrowed(t) if !t.contains(['\n', '\t']) => Cow::Borrowed(t),
        t => Cow::Owned(t.replace(['\n', '\t'], " ")),
    }
}

/// `text` for stderr: [`terminal_text`] when stderr is a terminal, else as it is.
pub fn for_stderr(text: &str) -> Cow<'_, str> {
    if std::io::stderr().is_terminal() { terminal_text(text) } else { Cow::Borrowed(text) }
}

/// `outer: inner: root`, skipping repeated messages (anyhow's `{:#}` repeats wrapped causes).
/// Messages may quote a server (its error, the tail of its stderr), so the chain is sanitised
/// for a terminal ([`for_stderr`]): it is printed on stderr.
pub fn error_chain(err: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in err.chain() {
        let msg = cause.to_string();
        if parts.last().is_some_and(|p| p.contains(&msg)) {
            continue;
        }
        parts.push(msg);
    }
    for_stderr(&parts.join(": ")).into_owned()
}

/// Writes `text` to stdout and flushes; a closed pipe (`agent ... | head`) is not an error. On a
/// terminal the text is sanitised ([`terminal_text`]); to a pipe or file it is written as it is.
pub fn write_stdout(text: &str) -> anyhow::Result<()> {
    let text = if std::io::stdout().is_terminal() { terminal_text(text) } else { Cow::Borrowed(text) };
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e).context("cannot write to stdout"),
        _ => Ok(()),
    }
}

/// Writes `text` to stderr as [`for_stderr`] has it; errors writing are ignored (there is
/// nowhere left to report them).
pub fn write_stderr(text: &str) {
    let text = for_stderr(text);
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes()).and_then(|_| err.flush());
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_shown_not_obeyed() {
        let hostile = "a\x1b[2Jb\r\x1b[2Kc\x1b]8;;file:///x\x07d\x1b]8;;\x07e\u{9b}31mf\u{7f}g\u{202e}h\u{8}i";
        assert_eq!(
            terminal_text(hostile),
            "a\u{FFFD}[2Jb\u{FFFD}[2Kc\u{FFFD}]8;;file:///x\u{FFFD}d\u{FFFD}]8;;\u{FFFD}e\u{FFFD}31mf\u{FFFD}g\u{FFFD}h\u{FFFD}i"
        );
        assert_eq!(terminal_text("two\r\nlines\tand tab\n"), "two\nlines\tand tab\n");
        assert_eq!(terminal_line("two\r\nlines\tand tab"), "two lines and tab");
    }

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        for plain in ["", "plain", "ünïcødé 漢字 🙂", "multi\nline\twith tab"] {
            assert!(matches!(terminal_text(plain), Cow::Borrowed(t) if t == plain), "{plain:?}");
        }
        assert!(matches!(terminal_line("one line"), Cow::Borrowed("one line")));
    }
}
