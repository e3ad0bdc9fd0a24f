//! Log lines on stderr: `warning: <message> (key=value ...)`, one line per event, whatever the
//! message holds. Colour only when stderr is a terminal and `NO_COLOR` is not set; with
//! `-vv` each line also carries the time and the module it came from.
//!
//! `RUST_LOG` overrides the level (`-v` info for agent, `-vv` debug).
//!
//! At `-v` the servers' own log messages (`notifications/message`) join them, one line each:
//! `server `x`: <level>: <message>` ([`ServerLogs`]), folded, sanitised and capped like any
//! other line here, since every byte of them is the server's.

use std::fmt::{self, Write as _};
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use serde_json::Value;
use tokio::sync::Notify;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// Whether stderr may carry ANSI colour codes.
pub fn stderr_color() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// The `-v` count [`init`] was given (what [`ServerLogs`] goes by).
static VERBOSE: AtomicU8 = AtomicU8::new(0);

/// Installs the subscriber for the given `-v` count.
pub fn init(verbose: u8) {
    VERBOSE.store(verbose, Ordering::Relaxed);
    use tracing_subscriber::EnvFilter;
    let default = match verbose {
        // rmcp logs transport failures with Rust type dumps; they reach the user as one-line
        // errors from the manager, so its own lines wait for -v.
        0 => "warn,rmcp=off",
        1 => "agent=info,warn",
        _ => "agent=debug,info",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let format = OneLine { color: stderr_color(), detailed: verbose >= 2 };
    let _ =
        tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).event_format(format).try_init();
}

/// The one-line event format.
struct OneLine {
    color: bool,
    detailed: bool,
}

impl<S, N> FormatEvent<S, N> for OneLine
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, _ctx: &FmtContext<'_, S, N>, mut w: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        let meta = event.metadata();
        let (label, code) = match *meta.level() {
            Level::ERROR => ("error", "31"),
            Level::WARN => ("warning", "33"),
            Level::INFO => ("info", "2"),
            Level::DEBUG => ("debug", "2"),
            Level::TRACE => ("trace", "2"),
        };
        let mut fields = Fields::default();
        event.record(&mut fields);
        let mut line = String::new();
        if self.detailed {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            let _ = write!(line, "{}.{:03} {} ", now.as_secs(), now.subsec_millis(), meta.target());
        }
        let _ = write!(line, "{label}: {}", fields.message);
        if !fields.rest.is_empty() {
            let _ = write!(line, " ({})", fields.rest.join(", "));
        }
        let line = one_line(&line);
        if self.color { writeln!(w, "\x1b[{code}m{line}\x1b[0m") } else { writeln!(w, "{line}") }
    }
}

/// Whitespace runs folded into one space, so an event is one line, and control characters shown
/// as `\u{FFFD}` (`output::terminal_line`), so a message from a server cannot move the cursor or
/// recolour the terminal.
fn one_line(s: &str) -> String {
    super::output::terminal_line(s.trim()).split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Characters of a server's log message shown before it is cut (`…` marks the cut).
pub const MAX_SERVER_LOG_CHARS: usize = 1000;

/// The line a server's `notifications/message` becomes: `server `x`: <level>: <message>`, the
/// message being the data's text when it is a string, else its compact JSON; on one line,
/// control characters shown as `\u{FFFD}`, at most [`MAX_SERVER_LOG_CHARS`] of it.
pub fn server_log_line(server: &str, level: &str, data: &Value) -> String {
    let text = match data {
        Value::String(s) => one_line(s),
        other => one_line(&other.to_string()),
    };
    let message = match text.char_indices().nth(MAX_SERVER_LOG_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    };
    format!("server `{}`: {}: {message}", one_line(server), one_line(level))
}

/// Prints the servers' log messages on stderr while a command runs, at `-v` (see the module
/// doc). [`ServerLogs::finish`] prints what is still queued and stops.
pub struct ServerLogs {
    stop: Arc<Notify>,
    task: tokio::task::JoinHandle<()>,
}

impl ServerLogs {
    /// Starts printing `manager`'s log events, or nothing below `-v`.
    pub fn show(manager: &crate::mcp::McpManager) -> Option<ServerLogs> {
        if VERBOSE.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let mut rx = manager.events().subscribe();
        let stop = Arc::new(Notify::new());
        let stopped = stop.clone();
        // On a terminal a spinner may be drawn on the line: the log line replaces it.
        let clear = if std::io::stderr().is_terminal() { "\r\x1b[2K" } else { "" };
        let print = move |ev: crate::mcp::handler::ClientEvent| {
            if let crate::mcp::handler::ClientEvent::Log { server, level, data, .. } = ev {
                // The line is sanitised already; `clear` is ours.
                eprintln!("{clear}{}", server_log_line(&server, &level, &data));
            }
        };
        let task = tokio::spawn(async move {
            loop {
                tokio::select! {
                    ev = rx.recv() => match ev {
                        Ok(ev) => print(ev),
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                            eprintln!("{clear}warning: {n} server events were dropped (log messages among them)");
                        }
                        Err(_) => break,
                    },
                    () = stopped.notified() => {
                        while let Ok(ev) = rx.try_recv() {
                            print(ev);
                        }
                        break;
                    }
                }
            }
        });
        Some(ServerLogs { stop, task })
    }

    /// Prints what is queued, then stops.
    pub async fn finish(self) {
        self.stop.notify_one();
        let _ = self.task.await;
    }
}

#[derive(Default)]
struct Fields {
    message: String,
    rest: Vec<String>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message = value.to_string();
        } else {
            self.rest.push(format!("{}={value}", field.name()));
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            self.message = format!("{value:?}");
        } else {
            self.rest.push(format!("{}={value:?}", field.name()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_log_message_is_one_capped_line_of_text_or_compact_json() {
        let line = server_log_line("x", "warning", &Value::String("disk\nfull\x1b[2J".into()));
        assert_eq!(line, "server `x`: warning: disk full\u{FFFD}[2J");
        let line = server_log_line("x", "info", &serde_json::json!({"a": [1, 2], "b": "c"}));
        assert_eq!(line, "server `x`: info: {\"a\":[1,2],\"b\":\"c\"}");
        let long = server_log_line("x", "debug", &Value::String("é".repeat(5000)));
        assert_eq!(long, format!("server `x`: debug: {}…", "é".repeat(MAX_SERVER_LOG_CHARS)));
    }

    #[test]
    fn events_are_folded_into_one_line_without_control_characters() {
        assert_eq!(one_line("a\nb\r\n  c\x1b[31m"), "a b c\u{FFFD}[31m");
        assert_eq!(one_line("  plain  "), "plain");
    }
}
