//! `execute_code` sessions: a client that names a `session` keeps one isolate across its calls.
//!
//! A code session is a [`CodeMode`] of its own (a session executor with its worker process, and
//! a bridge), keyed by the MCP session that opened it and the name it gave: another client that
//! names the same session gets one of its own, never this one. At most
//! `serve.code_sessions_per_client` per MCP session and `serve.max_code_sessions` in all; a call
//! that would open one more is refused, and nothing another client holds is evicted. A code
//! session unused for `serve.code_session_idle_timeout` ends, and all of a client's end with its
//! MCP session; ending one drops its executor, which kills its worker process.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::codemode::CodeMode;

/// Longest `session` name.
pub const MAX_NAME: usize = 64;

/// Checks a `session` name: 1 to 64 letters, digits, `.`, `_`, `:` or `-`.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = (1..=MAX_NAME).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(format!("execute_code: `session` must be 1 to {MAX_NAME} letters, digits, `.`, `_`, `:` or `-`"))
    }
}

/// The caps (`serve.*`).
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    pub per_client: usize,
    pub total: usize,
    pub idle: Duration,
}

/// One code session: its code mode (made on first use) and when it was last used.
pub struct CodeSession {
    /// Held while a step runs; `None` until the first step made the code mode.
    pub mode: tokio::sync::Mutex<Option<CodeMode>>,
    last_used: Mutex<Instant>,
    /// Why this name's previous session ended, for the first step of this one to say so.
    pub restarted: Mutex<Option<String>>,
}

impl CodeSession {
    /// Marks it used now (after a step: its idle time counts from the end of its last step).
    pub fn touch(&self) {
        if let Ok(mut t) = self.last_used.lock() {
            *t = Instant::now();
        }
    }
}

type Key = (u64, String);

/// The open code sessions of every client.
pub struct CodeSessions {
    caps: Caps,
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    open: HashMap<Key, Arc<CodeSession>>,
    /// Names whose session ended while its client was still there (idle): the reason, for the
    /// next session under that name. Bounded: at most four times `caps.total` entries.
    ended: HashMap<Key, String>,
}

impl CodeSessions {
    pub fn new(caps: Caps) -> CodeSessions {
        CodeSessions { caps, table: Mutex::new(Table::default()) }
    }

    /// How often the sweeper looks for idle sessions.
    pub fn sweep_every(&self) -> Duration {
        (self.caps.idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(30))
    }

    /// The session `name` of client `owner`: the open one, or a new one when the caps allow.
    /// `Err` is the message for the client.
    pub fn open(&self, owner: u64, name: &str) -> Result<Arc<CodeSession>, String> {
        let mut t = self.table.lock().map_err(|_| "execute_code: the session table is unusable".to_string())?;
        let key = (owner, name.to_string());
        if let Some(s) = t.open.get(&key) {
            s.touch();
            return Ok(s.clone());
        }
        let Caps { per_client, total, idle } = self.caps;
        if per_client == 0 {
            return Err("execute_code: sessions are off on this server (serve.code_sessions_per_client is 0)".into());
        }
        let mine = t.open.keys().filter(|(o, _)| *o == owner).count();
        if mine >= per_client {
            return Err(format!(
                "execute_code: this client has {mine} sessions open, the most it may (serve.code_sessions_per_client); \
                 reuse one of them, or call without `session` (a session ends after {} unused)",
                humantime::format_duration(idle)
            ));
        }
        if t.open.len() >= total {
            return Err(format!(
                "execute_code: {} sessions are open on this server, the most it holds (serve.max_code_sessions); \
                 try again later, or call without `session`",
                t.open.len()
            ));
        }
        let restarted = t.ended.remove(&key);
        let s = Arc::new(CodeSession {
            mode: tokio::sync::Mutex::new(None),
            last_used: Mutex::new(Instant::now()),
            restarted: Mutex::new(restarted),
        });
        t.open.insert(key, s.clone());
        Ok(s)
    }

    /// Takes out the sessions unused for longer than the idle time (none with a step running);
    /// the caller stops them.
    pub fn expire(&self) -> Vec<Arc<CodeSession>> {
        let Ok(mut t) = self.table.lock() else { return Vec::new() };
        let idle = self.caps.idle;
        let stale: Vec<Key> = t
            .open
            .iter()
            .filter(|(_, s)| s.last_used.lock().is_ok_and(|u| u.elapsed() >= idle) && s.mode.try_lock().is_ok())
            .map(|(k, _)| k.clone())
            .collect();
        let why = format!("unused for {}", humantime::format_duration(idle));
        let mut out = Vec::new();
        for k in stale {
            if let Some(s) = t.open.remove(&k) {
                out.push(s);
            }
            if t.ended.len() < self.caps.total.saturating_mul(4) {
                t.ended.insert(k, why.clone());
            }
        }
        out
    }

    /// Takes out every session of client `owner` (its MCP session ended); the caller stops them.
    pub fn end_client(&self, owner: u64) -> Vec<Arc<CodeSession>> {
        let Ok(mut t) = self.table.lock() else { return Vec::new() };
        t.ended.retain(|(o, _), _| *o != owner);
        let keys: Vec<Key> = t.open.keys().filter(|(o, _)| *o == owner).cloned().collect();
        keys.into_iter().filter_map(|k| t.open.remove(&k)).collect()
    }

    /// Takes out every session (serve is stopping).
    pub fn end_all(&self) -> Vec<Arc<CodeSession>> {
        let Ok(mut t) = self.table.lock() else { return Vec::new() };
        t.ended.clear();
        t.open.drain().map(|(_, s)| s).collect()
    }
}

/// Stops sessions taken out of the table: each one's bridge once its running step (if any) is
/// done; its executor (and worker process) goes with it.
pub async fn stop(sessions: Vec<Arc<CodeSession>>) {
    for s in sessions {
        let code = s.mode.lock().await.take();
        if let Some(code) = code {
            code.stop().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_short_and_plain() {
        for ok in ["a", "work-1", "x.y:z_2", &"n".repeat(MAX_NAME)] {
            assert!(check_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", "with space", "new\nline", "é", &"n".repeat(MAX_NAME + 1), "\u{1b}[31m"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn caps_count_per_client_and_in_all_and_one_clients_name_is_not_anothers() {
        let s = CodeSessions::new(Caps { per_client: 2, total: 3, idle: Duration::from_secs(60) });
        let a1 = s.open(1, "x").unwrap();
        assert!(Arc::ptr_eq(&a1, &s.open(1, "x").unwrap()), "the same client gets its own session back");
        let b1 = s.open(2, "x").unwrap();
        assert!(!Arc::ptr_eq(&a1, &b1), "another client naming it gets another session");
        s.open(1, "y").unwrap();
        assert!(s.open(1, "z").err().unwrap_or_default().contains("serve.code_sessions_per_client"));
        assert!(s.open(2, "y").err().unwrap_or_default().contains("serve.max_code_sessions"));
        assert_eq!(s.end_client(1).len(), 2);
        s.open(2, "y").unwrap();
    }
}
