//! Log lines on stderr: `warning: <message> (key=value ...)`, one line per event, whatever the
//! message holds. Colour only when stderr is a terminal and `NO_COLOR` is not set; with
//! `-vv` each line also carries the time and the module it came from.
//!
//! `RUST_LOG` overrides the level (`-v` info for agent, `-vv` debug).

use std::fmt::{self, Write as _};
use std::io::IsTerminal;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// Whether stderr may carry ANSI colour codes.
pub fn stderr_color() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Installs the subscriber for the given `-v` count.
pub fn init(verbose: u8) {
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
    fn events_are_folded_into_one_line_without_control_characters() {
        assert_eq!(one_line("a\nb\r\n  c\x1b[31m"), "a b c\u{FFFD}[31m");
        assert_eq!(one_line("  plain  "), "plain");
    }
}
