//! Usage counts: successful calls per `server.tool`, kept in `<workspace>/usage.json` so the
//! catalog search ranks tools that were actually used a little higher (`search.usage`, on by
//! default; see `search::Index::with_usage`).
//!
//! This process counts the calls that succeed through the manager (it is the manager's first
//! [`CallObserver`]) and merges
//! them into the file when the command ends ([`Usage::save`]): the file is read again, this
//! process's counts are added and it is written atomically, so runs side by side keep each
//! other's counts (short of two saving at the same instant). The search uses the counts of
//! earlier runs, read once. A file that cannot be read or parsed is a warning and is ignored.
//!
//! Format: `{"version": 1, "counts": {"<server>": {"<tool>": <calls>}}}`.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use serde::{Deserialize, Serialize};

use super::observe::CallObserver;
use super::tools::ToolInfo;
use crate::util::fs::{Access, write_atomic};
use crate::util::read::{FileError, read_text_file};

/// Calls per `(server, tool)`.
pub type Counts = HashMap<(String, String), u64>;

/// The file name inside the workspace.
pub const FILE: &str = "usage.json";
/// Larger files are not read (a counts file of a few thousand tools is a few hundred KB).
const MAX_FILE_BYTES: u64 = 16 << 20;

#[derive(Serialize, Deserialize)]
struct File {
    version: u32,
    counts: BTreeMap<String, BTreeMap<String, u64>>,
}

/// The usage counts of one process (see the module doc).
#[derive(Debug, Default)]
pub struct Usage {
    /// `None`: counting is off (`search.usage: false`).
    path: Option<PathBuf>,
    earlier: OnceLock<Counts>,
    session: Mutex<Counts>,
}

impl Usage {
    /// Counts kept in `path`; `None` turns counting off.
    pub fn new(path: Option<PathBuf>) -> Usage {
        Usage { path, ..Default::default() }
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// One successful call.
    pub fn record(&self, server: &str, tool: &str) {
        if self.path.is_none() {
            return;
        }
        if let Ok(mut s) = self.session.lock() {
            *s.entry((server.to_string(), tool.to_string())).or_default() += 1;
        }
    }

    /// The calls this process counted so far.
    pub fn session(&self) -> Counts {
        self.session.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// The counts of earlier runs, as the file held them when first asked (empty when off,
    /// missing or unreadable).
    pub fn earlier(&self) -> &Counts {
        self.earlier.get_or_init(|| match &self.path {
            Some(path) => read(path).unwrap_or_else(|e| {
                tracing::warn!("{e}; ignoring it");
                Counts::new()
            }),
            None => Counts::new(),
        })
    }

    /// Adds this process's counts to the file (read again first). `Ok(false)` when there was
    /// nothing to add or counting is off. Counts saved are not saved again by a later call.
    pub fn save(&self) -> Result<bool, String> {
        let Some(path) = &self.path else { return Ok(false) };
        let session = match self.session.lock() {
            Ok(mut s) => std::mem::take(&mut *s),
            Err(_) => return Ok(false),
        };
        if session.is_empty() {
            return Ok(false);
        }
        let mut merged = read(path).unwrap_or_else(|e| {
            tracing::warn!("{e}; starting it afresh");
            Counts::new()
        });
        for (key, n) in session {
            *merged.entry(key).or_default() += n;
        }
        let mut file = File { version: 1, counts: BTreeMap::new() };
        for ((server, tool), n) in merged {
            file.counts.entry(server).or_default().insert(tool, n);
        }
        let mut text = serde_json::to_string_pretty(&file).map_err(|e| format!("cannot encode usage counts: {e}"))?;
        text.push('\n');
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            crate::util::fs::create_private_dirs(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        write_atomic(path, text.as_bytes(), Access::Shared)
            .map_err(|e| format!("cannot write the usage counts {}: {e}", path.display()))?;
        Ok(true)
    }
}

impl CallObserver for Usage {
    fn finished(&self, tool: &ToolInfo, _: &rmcp::model::CallToolResult) {
        self.record(&tool.server, &tool.name);
    }
}

/// The counts in `path`: empty when there is no file; `Err` (one line naming the file) when it
/// cannot be read or is not a usage file.
pub fn read(path: &Path) -> Result<Counts, String> {
    let text = match read_text_file(path, MAX_FILE_BYTES) {
        Ok(text) => text,
        Err(FileError::Missing(_)) => return Ok(Counts::new()),
        Err(e) => return Err(e.message(&format!("the usage file {}", path.display()))),
    };
    let file: File =
        serde_json::from_str(&text).map_err(|e| format!("the usage counts {} are not valid ({e})", path.display()))?;
    Ok(file
        .counts
        .into_iter()
        .flat_map(|(server, tools)| tools.into_iter().map(move |(tool, n)| ((server.clone(), tool), n)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str, t: &str) -> (String, String) {
        (s.to_string(), t.to_string())
    }

    #[test]
    fn counts_merge_into_the_file_and_a_corrupt_file_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ws").join(FILE);
        let a = Usage::new(Some(path.clone()));
        assert!(a.earlier().is_empty());
        assert!(!a.save().unwrap(), "nothing to save");
        a.record("github", "get_me");
        a.record("github", "get_me");
        a.record("fixture", "text.upper");
        // Another run, side by side, saves first.
        let b = Usage::new(Some(path.clone()));
        b.record("github", "get_me");
        assert!(b.save().unwrap());
        assert!(a.save().unwrap());
        assert!(!a.save().unwrap(), "saved counts are not added twice");
        let counts = read(&path).unwrap();
        assert_eq!(counts[&key("github", "get_me")], 3);
        assert_eq!(counts[&key("fixture", "text.upper")], 1);
        assert_eq!(Usage::new(Some(path.clone())).earlier(), &counts);

        std::fs::write(&path, "{not json").unwrap();
        assert!(read(&path).unwrap_err().contains("are not valid"));
        let c = Usage::new(Some(path.clone()));
        assert!(c.earlier().is_empty());
        c.record("s", "t");
        assert!(c.save().unwrap());
        assert_eq!(read(&path).unwrap(), HashMap::from([(key("s", "t"), 1)]));

        let off = Usage::new(None);
        off.record("s", "t");
        assert!(off.session().is_empty());
        assert!(!off.save().unwrap());
    }
}
