//! Termination signals. SIGINT (Ctrl-C), SIGTERM and SIGHUP all mean "stop cleanly": each
//! command races its work against [`Signals::received`], then stops the servers (whole process
//! groups) and the bridge (its socket directory) as on any other exit, and exits with
//! `128 + the signal's number` (130, 143, 129).
//!
//! The handlers are installed once, before any command starts a server, so there is no window in
//! which a signal takes the default action and leaves orphans behind.

use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch;

/// The termination signals seen by this process (the first one counts).
#[derive(Clone)]
pub struct Signals {
    rx: watch::Receiver<Option<i32>>,
}

impl Signals {
    /// Installs the handlers (call inside the tokio runtime).
    pub fn install() -> std::io::Result<Signals> {
        let (tx, rx) = watch::channel(None);
        for (kind, number) in [
            (SignalKind::interrupt(), libc::SIGINT),
            (SignalKind::terminate(), libc::SIGTERM),
            (SignalKind::hangup(), libc::SIGHUP),
        ] {
            let mut stream = signal(kind)?;
            let tx = tx.clone();
            tokio::spawn(async move {
                while stream.recv().await.is_some() {
                    tx.send_if_modified(|seen| {
                        if seen.is_none() {
                            *seen = Some(number);
                            true
                        } else {
                            false
                        }
                    });
                }
            });
        }
        Ok(Signals { rx })
    }

    /// Resolves with the signal's number once one has arrived (at once if one already has).
    pub async fn received(&self) -> i32 {
        let mut rx = self.rx.clone();
        let seen = rx.wait_for(Option::is_some).await.map(|seen| *seen);
        match seen {
            Ok(seen) => seen.unwrap_or(libc::SIGINT),
            // The senders live as long as the runtime; without them no signal can come.
            Err(_) => std::future::pending().await,
        }
    }
}

/// Says on stderr why the command stopped and returns its exit code (`128 + signal`).
pub fn exit_after(signal: i32) -> u8 {
    let name = match signal {
        libc::SIGTERM => "terminated (SIGTERM)",
        libc::SIGHUP => "hung up (SIGHUP)",
        _ => "interrupted",
    };
    // A list prompt (an approval, --interactive) hides the cursor while it waits.
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        let _ = dialoguer::console::Term::stderr().show_cursor();
    }
    eprintln!("{name}");
    u8::try_from(128 + signal).unwrap_or(super::EXIT_FAILURE)
}
