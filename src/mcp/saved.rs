//! The servers' tool lists saved between commands, in `<workspace>/.tools_cache.json` (0600): what
//! `agent mcp search` answers from without starting a server, and what shell completion offers
//! (`agent __complete tools`). Every command that started servers merges the lists it got into
//! the file when its session closes ([`super::McpManager::save_tool_lists`]).
//!
//! Each entry carries the [`fingerprint`] of the server's configuration it was listed under and
//! when: an entry is stale ([`Freshness`]) once that configuration changed or it is older than
//! [`MAX_AGE`]. The fingerprint covers what decides which server runs (command, args, cwd, URL,
//! transport, tool white list, the names of env variables and headers) but never a value of
//! `env` or `headers`: a hash of a secret written to disk could be guessed back by brute force.
//!
//! Format: `{"version": 1, "servers": {"<name>": {"config": "<hex>", "listedAt": <unix s>,
//! "tools": [<ToolInfo>...]}}}`. Tool lists are server text: they are only ever read back as data.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::tools::ToolInfo;
use crate::config::ServerConfig;
use crate::util::fs::{Access, write_atomic};
use crate::util::read::{FileError, read_text_file};

/// The file name inside the workspace (a dotfile: code mode's discovery tools do not show it to
/// the model, and it is no part of the generated tree).
pub const FILE: &str = ".tools_cache.json";
/// An entry older than this is stale: a day, so a server updated upstream (an `npx -y` package)
/// shows its new tools by the next day without any server starting on every search before.
pub const MAX_AGE: Duration = Duration::from_secs(24 * 60 * 60);
/// Larger files are not read (the GitHub server's 100 tools take about 200 KB).
const MAX_FILE_BYTES: u64 = 64 << 20;

/// One server's saved tool list.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// [`fingerprint`] of the configuration it was listed under.
    pub config: String,
    /// Seconds since the Unix epoch.
    pub listed_at: u64,
    pub tools: Vec<ToolInfo>,
}

#[derive(Serialize, Deserialize)]
struct File {
    version: u32,
    servers: BTreeMap<String, Entry>,
}

/// Whether a saved entry still describes the server as configured now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Freshness {
    Fresh,
    /// The server's configuration changed since it was listed.
    ConfigChanged,
    /// Listed longer ago than [`MAX_AGE`] (how long ago).
    Old(Duration),
}

/// The part of a server's configuration that decides which tools it has (see the module doc).
pub fn fingerprint(cfg: &ServerConfig) -> String {
    let mut parts: Vec<Vec<u8>> = Vec::new();
    let opt = |s: Option<&str>| s.unwrap_or("\u{0}none").as_bytes().to_vec();
    parts.push(opt(cfg.command.as_deref()));
    parts.push(cfg.args.len().to_le_bytes().to_vec());
    parts.extend(cfg.args.iter().map(|a| a.as_bytes().to_vec()));
    parts.push(opt(cfg.cwd.as_deref().and_then(Path::to_str)));
    parts.push(opt(cfg.url.as_deref()));
    parts.push(opt(cfg.transport.as_deref()));
    match &cfg.tool_white_list {
        Some(l) => {
            parts.push(l.len().to_le_bytes().to_vec());
            parts.extend(l.iter().map(|t| t.as_bytes().to_vec()));
        }
        None => parts.push(b"\0all".to_vec()),
    }
    parts.push(b"\0env".to_vec());
    parts.extend(cfg.envs.keys().map(|k| k.as_bytes().to_vec()));
    parts.push(b"\0headers".to_vec());
    parts.extend(cfg.headers.keys().map(|k| k.to_ascii_lowercase().into_bytes()));
    let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    crate::util::hash::stable_hex(&refs)
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

impl Entry {
    /// An entry for `tools` listed now under `cfg`.
    pub fn new(cfg: &ServerConfig, tools: Vec<ToolInfo>) -> Entry {
        Entry { config: fingerprint(cfg), listed_at: now(), tools }
    }

    /// Whether this entry still describes `cfg`.
    pub fn freshness(&self, cfg: &ServerConfig) -> Freshness {
        if self.config != fingerprint(cfg) {
            return Freshness::ConfigChanged;
        }
        let age = Duration::from_secs(now().saturating_sub(self.listed_at));
        if age > MAX_AGE { Freshness::Old(age) } else { Freshness::Fresh }
    }
}

/// The saved entries; empty when the file is missing, and when it cannot be read or parsed
/// (with a warning: the next command that lists servers writes it again).
pub fn load(path: &Path) -> BTreeMap<String, Entry> {
    let text = match read_text_file(path, MAX_FILE_BYTES) {
        Ok(t) => t,
        Err(FileError::Missing(_)) => return BTreeMap::new(),
        Err(e) => {
            tracing::warn!("{}; ignoring it", e.message(&format!("tool list cache {}", path.display())));
            return BTreeMap::new();
        }
    };
    match serde_json::from_str::<File>(&text) {
        Ok(f) if f.version == 1 => f.servers,
        Ok(_) => BTreeMap::new(),
        Err(e) => {
            tracing::warn!("tool list cache {}: {e}; ignoring it", path.display());
            BTreeMap::new()
        }
    }
}

/// Merges `entries` into the file (the others are kept, an entry of a server that is no longer
/// in `configured` is dropped) and replaces it atomically, 0600.
pub fn save(path: &Path, entries: BTreeMap<String, Entry>, configured: &[String]) -> std::io::Result<()> {
    if entries.is_empty() {
        return Ok(());
    }
    let mut servers = load(path);
    servers.retain(|name, _| configured.contains(name));
    servers.extend(entries);
    let data = serde_json::to_vec(&File { version: 1, servers }).map_err(std::io::Error::other)?;
    if let Some(dir) = path.parent() {
        crate::util::fs::create_private_dirs(dir)?;
    }
    write_atomic(path, &data, Access::Private)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_follows_what_decides_the_tools_but_never_a_secret_value() {
        let mut a =
            ServerConfig { command: Some("npx".into()), args: vec!["-y".into(), "pkg".into()], ..Default::default() };
        a.envs.insert("TOKEN".into(), "one".into());
        let base = fingerprint(&a);
        let mut b = a.clone();
        b.envs.insert("TOKEN".into(), "two".into());
        assert_eq!(fingerprint(&b), base, "a changed secret value is not a changed server");
        b.args.push("--toolsets=issues".into());
        assert_ne!(fingerprint(&b), base);
        let mut c = a.clone();
        c.envs.insert("OTHER".into(), "x".into());
        assert_ne!(fingerprint(&c), base, "a new variable is a change");
        let entry = Entry::new(&a, Vec::new());
        assert_eq!(entry.freshness(&a), Freshness::Fresh);
        assert_eq!(entry.freshness(&c), Freshness::ConfigChanged);
        let old = Entry { listed_at: entry.listed_at - MAX_AGE.as_secs() - 60, ..entry };
        assert!(matches!(old.freshness(&a), Freshness::Old(_)));
    }
}
