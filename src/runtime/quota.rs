//! The one quota of what scripts keep: `data/` (state) and `skills/` together, against
//! `mcp.code_execution.state` (`max_bytes` of file contents, `max_files` entries: files,
//! directories and links alike, so a flood of directories is stopped like a flood of files).
//!
//! The running total lives in `<workspace>/state_quota.json` (`{"bytes", "entries"}`), read and
//! replaced only while holding an exclusive `flock` on `<workspace>/state_quota.json.lock`. A
//! write takes the lock, checks its [`Change`] (entries it adds, bytes it adds less the bytes it
//! replaces) against the total before it creates anything, writes, adds the change and lets go:
//! writers in any number of processes take turns, so together they never pass the quota. A write
//! costs the same with 10 or 10,000 files present.
//!
//! Without a readable total (first use, a corrupt file, one removed by hand) both directories
//! are counted once ([`count`]: by descriptor, links not followed) and the total written;
//! `agent state ls`, `agent state rm` and `--fresh-state` count again, so files changed by hand
//! are taken into account there.

use std::ffi::OsString;
use std::io;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config::StateConfig;
use crate::util::fs::{Access, Dir, Lock, Node};
use crate::util::size::human_bytes;

/// What scripts keep as state, under the workspace (`runtime::state` works in it).
pub const DATA_DIR: &str = "data";
/// The running total, in the workspace.
pub const USAGE_FILE: &str = "state_quota.json";
/// Its lock, in the workspace.
pub const LOCK_FILE: &str = "state_quota.json.lock";
/// How long a writer waits for another one to finish (a write of the largest file takes well
/// under a second).
const LOCK_WAIT: Duration = Duration::from_secs(10);
/// Deepest directory [`count`] descends into (one descriptor per level); script paths are
/// shallower (`state::MAX_COMPONENTS`).
pub const MAX_DEPTH: usize = 128;

/// The quota of `data/` and `skills/` together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    pub max_bytes: u64,
    /// Entries: files, directories and links.
    pub max_files: u64,
}

impl Quota {
    pub fn from_config(c: &StateConfig) -> Quota {
        Quota { max_bytes: c.max_bytes, max_files: c.max_files }
    }
}

impl Default for Quota {
    fn default() -> Self {
        Quota::from_config(&StateConfig::default())
    }
}

/// What `data/` and `skills/` hold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Bytes of files and links (directories count as entries only).
    pub bytes: u64,
    /// Files, directories and links.
    pub entries: u64,
}

/// What one write or removal does to the total.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Change {
    pub added_bytes: u64,
    pub freed_bytes: u64,
    pub new_entries: u64,
    pub gone_entries: u64,
}

impl Change {
    /// Removing something of `bytes` bytes.
    pub fn removal(bytes: u64) -> Change {
        Change { freed_bytes: bytes, gone_entries: 1, ..Change::default() }
    }
}

/// The total, held under the lock until dropped.
pub struct Ledger<'a> {
    ws: &'a Dir,
    usage: Usage,
    _lock: Lock,
}

impl<'a> Ledger<'a> {
    /// Takes the lock in the workspace `ws` and reads the total (counting when there is none).
    pub fn open(ws: &'a Dir) -> Result<Ledger<'a>, String> {
        let lock = ws.lock(LOCK_FILE, LOCK_WAIT).map_err(|e| match e.kind() {
            io::ErrorKind::WouldBlock => format!(
                "the state quota is busy: another process has held {LOCK_FILE} for over {}s",
                LOCK_WAIT.as_secs()
            ),
            _ => format!("cannot lock {LOCK_FILE}: {e}"),
        })?;
        let saved = ws
            .open_file(USAGE_FILE)
            .ok()
            .and_then(|f| crate::util::read::read_capped(f, 4096).ok())
            .and_then(|bytes| serde_json::from_slice::<Usage>(&bytes).ok());
        let mut ledger = Ledger { ws, usage: saved.unwrap_or_default(), _lock: lock };
        if saved.is_none() {
            ledger.recount()?;
        }
        Ok(ledger)
    }

    /// Counts both directories again and keeps that as the total.
    pub fn recount(&mut self) -> Result<Usage, String> {
        self.usage = count(self.ws).map_err(|e| format!("cannot count what data/ and skills/ hold: {e}"))?;
        self.save();
        Ok(self.usage)
    }

    /// Whether `change` fits; `what` names what is written (`data/a/b.txt`, `skill `x``).
    /// A change that adds no bytes (or no entries) always fits on that count, so shrinking or
    /// replacing works even over a quota that was lowered.
    pub fn check(&self, quota: Quota, change: Change, what: &str) -> Result<(), String> {
        let bytes = self.usage.bytes.saturating_sub(change.freed_bytes).saturating_add(change.added_bytes);
        if change.added_bytes > change.freed_bytes && bytes > quota.max_bytes {
            return Err(format!(
                "state quota exceeded: writing {} ({}) would bring data/ and skills/ to {} of {} (mcp.code_execution.state.max_bytes)",
                what,
                human_bytes(change.added_bytes),
                human_bytes(bytes),
                human_bytes(quota.max_bytes)
            ));
        }
        let entries = self.usage.entries.saturating_sub(change.gone_entries).saturating_add(change.new_entries);
        if change.new_entries > change.gone_entries && entries > quota.max_files {
            return Err(format!(
                "state quota exceeded: data/ and skills/ hold {} of {} files and directories and writing {what} adds {} (mcp.code_execution.state.max_files)",
                self.usage.entries,
                quota.max_files,
                change.new_entries - change.gone_entries,
            ));
        }
        Ok(())
    }

    /// Adds `change` to the total and saves it.
    pub fn commit(&mut self, change: Change) {
        if change == Change::default() {
            return;
        }
        let u = &mut self.usage;
        u.bytes = u.bytes.saturating_sub(change.freed_bytes).saturating_add(change.added_bytes);
        u.entries = u.entries.saturating_sub(change.gone_entries).saturating_add(change.new_entries);
        self.save();
    }

    fn save(&self) {
        let text = serde_json::json!({"bytes": self.usage.bytes, "entries": self.usage.entries}).to_string();
        if let Err(e) = self.ws.write_atomic(USAGE_FILE, text.as_bytes(), Access::Private) {
            // A total that could not be saved must not be trusted later: without the file the
            // next writer counts again.
            tracing::warn!("cannot save {USAGE_FILE}: {e}; the next write counts data/ and skills/ again");
            let _ = self.ws.remove_file(USAGE_FILE);
        }
    }
}

/// What `data/` and `skills/` in the workspace `ws` hold, counted entry by entry through
/// descriptors (links are entries of their own size, never followed; a link at `data` or
/// `skills` itself counts as one entry).
pub fn count(ws: &Dir) -> io::Result<Usage> {
    let mut usage = Usage::default();
    for area in [DATA_DIR, crate::skills::SKILLS_DIR] {
        match ws.node(area)? {
            Some(Node::Dir) => walk(&ws.sub(area)?, &mut Vec::new(), &mut |_, node| {
                usage.bytes = usage.bytes.saturating_add(node.bytes());
                usage.entries += 1;
            })?,
            Some(node) => {
                usage.bytes = usage.bytes.saturating_add(node.bytes());
                usage.entries += 1;
            }
            None => {}
        }
    }
    Ok(usage)
}

/// Calls `f(path below the directory, node)` for everything below `dir`, a directory before
/// what it holds, names sorted; links are not followed, and directories deeper than
/// [`MAX_DEPTH`] are reported but not entered.
pub fn walk(dir: &Dir, rel: &mut Vec<OsString>, f: &mut dyn FnMut(&[OsString], Node)) -> io::Result<()> {
    for (name, node) in dir.entries()? {
        rel.push(name);
        f(rel, node);
        if node == Node::Dir && rel.len() < MAX_DEPTH {
            // A directory removed or swapped for a link since it was listed is left out.
            if let Ok(sub) = dir.sub(&rel[rel.len() - 1]) {
                walk(&sub, rel, f)?;
            }
        }
        rel.pop();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_total_is_counted_once_then_kept_and_checked() {
        let base = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(base.path().join("data/a/b")).unwrap();
        std::fs::write(base.path().join("data/a/b/f"), b"12345").unwrap();
        std::fs::create_dir_all(base.path().join("skills")).unwrap();
        std::fs::write(base.path().join("skills/s.ts"), b"123").unwrap();
        std::os::unix::fs::symlink("/etc", base.path().join("data/l")).unwrap();
        let ws = Dir::open(base.path()).unwrap();
        let quota = Quota { max_bytes: 20, max_files: 7 };
        {
            let mut ledger = Ledger::open(&ws).unwrap();
            // a, a/b, a/b/f, l (4 bytes of link text), s.ts
            assert_eq!(ledger.usage, Usage { bytes: 12, entries: 5 });
            let two = Change { new_entries: 2, added_bytes: 8, ..Change::default() };
            ledger.check(quota, two, "x").unwrap();
            ledger.commit(two);
            let err = ledger.check(quota, Change { new_entries: 1, ..Change::default() }, "data/y").unwrap_err();
            assert!(err.contains("hold 7 of 7 files and directories and writing data/y adds 1"), "{err}");
            let err = ledger.check(quota, Change { added_bytes: 1, ..Change::default() }, "data/y").unwrap_err();
            assert!(err.contains("would bring data/ and skills/ to 21 B of 20 B"), "{err}");
            // Replacing with less always fits.
            ledger.check(quota, Change { added_bytes: 1, freed_bytes: 5, ..Change::default() }, "data/a/b/f").unwrap();
        }
        // The total is kept between openings (no second count: what is on disk is not looked at).
        std::fs::write(base.path().join("data/uncounted"), b"zz").unwrap();
        assert_eq!(Ledger::open(&ws).unwrap().usage, Usage { bytes: 20, entries: 7 });
        // A corrupt total is counted again.
        std::fs::write(base.path().join(USAGE_FILE), b"{not json").unwrap();
        assert_eq!(Ledger::open(&ws).unwrap().usage, Usage { bytes: 14, entries: 6 });
    }

    #[test]
    fn a_second_writer_waits_for_the_first() {
        let base = tempfile::tempdir().unwrap();
        let ws = Dir::open(base.path()).unwrap();
        let first = Ledger::open(&ws).unwrap();
        let path = base.path().to_path_buf();
        let (tx, rx) = std::sync::mpsc::channel();
        let second = std::thread::spawn(move || {
            let ws = Dir::open(&path).unwrap();
            let mut second = Ledger::open(&ws).unwrap();
            second.commit(Change { new_entries: 1, ..Change::default() });
            tx.send(second.usage).unwrap();
        });
        assert!(
            rx.recv_timeout(Duration::from_millis(200)).is_err(),
            "the second writer waits while the first holds the lock"
        );
        drop(first);
        assert_eq!(rx.recv().unwrap().entries, 1);
        second.join().unwrap();
    }
}
