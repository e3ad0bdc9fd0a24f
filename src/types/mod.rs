//! Learned output types: the shapes of the results tools actually return, kept in the type
//! registry (`<workspace>/type_registry.json`), with a quality level per tool.
//!
//! This module is plain data and file handling: [`shape`] infers and merges shapes from JSON
//! values (shape only, never values, within caps); [`Registry`] is the file (read, merged and
//! written under a lock file, so several `agent` processes never lose each other's
//! observations; a corrupt or foreign file is set aside with a warning). It knows nothing of
//! MCP: `learn` feeds it from the manager's finished calls, `codegen` renders its shapes as
//! TypeScript, `agent mcp types` reports it.

pub mod shape;

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use shape::Shape;

/// File name of the registry inside the workspace.
pub const REGISTRY_FILE: &str = "type_registry.json";
/// What the registry file says it is (a file without it is foreign and set aside).
const FORMAT: &str = "agent type registry";
const VERSION: u32 = 1;
/// Registry files over this size are not read (set aside as corrupt).
const MAX_FILE_BYTES: u64 = 64 << 20;

/// How good a tool's result type is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Quality {
    #[default]
    None,
    Low,
    Medium,
    High,
}

impl Quality {
    pub fn as_str(self) -> &'static str {
        match self {
            Quality::None => "none",
            Quality::Low => "low",
            Quality::Medium => "medium",
            Quality::High => "high",
        }
    }
}

/// Where a tool's result type comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Declared,
    Inferred,
    #[default]
    None,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Declared => "declared",
            Source::Inferred => "inferred",
            Source::None => "none",
        }
    }
}

/// Observation counts at which the quality levels start (`mcp.types.*`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    pub low: u64,
    pub medium: u64,
    pub high: u64,
    /// Mean field consistency a tool needs for `high`.
    pub consistency: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds { low: 1, medium: 10, high: 100, consistency: 0.8 }
    }
}

/// The quality of an inferred type from its observation count and mean field consistency.
pub fn quality(observations: u64, consistency: f64, t: &Thresholds) -> Quality {
    if observations == 0 || observations < t.low {
        Quality::None
    } else if observations < t.medium {
        Quality::Low
    } else if observations >= t.high && consistency >= t.consistency {
        Quality::High
    } else {
        Quality::Medium
    }
}

/// The hash of a tool definition (its `agent mcp list --json` form): a type learned against
/// one definition is dropped when the definition changes.
pub fn definition_hash(definition_json: &[u8]) -> String {
    crate::util::hash::stable_hex(&[definition_json])
}

/// Presence and type consistency of one top-level field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldStat {
    pub presence: f64,
    pub consistency: f64,
}

/// What the registry knows about one tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub server: String,
    pub tool: String,
    pub source: Source,
    pub quality: Quality,
    pub observations: u64,
    /// RFC 3339, UTC, seconds.
    pub last_observed: String,
    /// [`definition_hash`] of the tool definition the shape was learned against.
    pub definition: String,
    /// Mean field consistency (1.0 without fields).
    pub consistency: f64,
    /// Top-level fields (for reading; the shape is the truth).
    #[serde(default)]
    pub fields: BTreeMap<String, FieldStat>,
    pub shape: Shape,
}

impl Entry {
    fn refresh(&mut self, t: &Thresholds) {
        self.consistency = round3(self.shape.consistency());
        self.quality = quality(self.observations, self.consistency, t);
        self.source = if self.observations > 0 { Source::Inferred } else { Source::None };
        let mut per_field = BTreeMap::new();
        if let Some(o) = &self.shape.object {
            for (k, f) in &o.fields {
                let presence = if o.count == 0 { 0.0 } else { f.count as f64 / o.count as f64 };
                let consistency = f.type_consistency().unwrap_or(1.0);
                per_field.insert(k.clone(), FieldStat { presence: round3(presence), consistency: round3(consistency) });
            }
        }
        self.fields = per_field;
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The registry key of a tool.
pub fn key(server: &str, tool: &str) -> String {
    format!("{server}.{tool}")
}

/// The registry file's content.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Registry {
    #[serde(default)]
    pub format: String,
    #[serde(default)]
    pub version: u32,
    /// `server.tool` → entry.
    #[serde(default)]
    pub tools: BTreeMap<String, Entry>,
}

/// Observations not written yet (one process's, merged into the file at a flush).
#[derive(Debug, Clone, Default)]
pub struct Pending {
    pub tools: BTreeMap<String, PendingTool>,
}

#[derive(Debug, Clone)]
pub struct PendingTool {
    pub server: String,
    pub tool: String,
    pub definition: String,
    pub observations: u64,
    pub shape: Shape,
}

impl Pending {
    /// Adds one observed result of `server.tool` (defined as `definition`).
    pub fn add(&mut self, server: &str, tool: &str, definition: &str, value: &serde_json::Value) {
        let shape = Shape::of(value);
        let entry = self.tools.entry(key(server, tool)).or_insert_with(|| PendingTool {
            server: server.into(),
            tool: tool.into(),
            definition: definition.into(),
            observations: 0,
            shape: Shape::default(),
        });
        if entry.definition != definition {
            entry.definition = definition.into();
            entry.observations = 0;
            entry.shape = Shape::default();
        }
        entry.observations += 1;
        entry.shape.merge(&shape);
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    pub fn observations(&self) -> u64 {
        self.tools.values().map(|t| t.observations).sum()
    }
}

/// A tool whose quality changed at a flush.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub server: String,
    pub tool: String,
    pub before: Quality,
    pub after: Quality,
}

/// The registry file of a workspace.
pub fn registry_path(workspace: &Path) -> PathBuf {
    workspace.join(REGISTRY_FILE)
}

/// An exclusive lock on `<file>.lock`, released on drop.
struct FileLock(std::fs::File);

impl FileLock {
    fn acquire(file: &Path) -> Result<FileLock, String> {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::OpenOptionsExt;
        let mut name = file.as_os_str().to_owned();
        name.push(".lock");
        let path = PathBuf::from(name);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o644)
            .open(&path)
            .map_err(|e| format!("cannot open the lock file {}: {e}", path.display()))?;
        loop {
            // SAFETY: flock on a file descriptor we own; no memory is involved.
            let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) };
            if rc == 0 {
                return Ok(FileLock(f));
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(format!("cannot lock {}: {e}", path.display()));
            }
        }
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        use std::os::fd::AsRawFd;
        // SAFETY: as above.
        unsafe {
            libc::flock(self.0.as_raw_fd(), libc::LOCK_UN);
        }
    }
}

fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

impl Registry {
    /// Reads the registry at `path`: empty when there is none; a file that is not a registry
    /// (corrupt, foreign, too large) is renamed to `<file>.corrupt-<unix time>` and reported in
    /// `warnings`, and the registry starts empty.
    pub fn load(path: &Path, warnings: &mut Vec<String>) -> Registry {
        let mut set_aside = |why: String| {
            let aside = format!("{}.corrupt-{}", path.display(), unix_now());
            match std::fs::rename(path, &aside) {
                Ok(()) => warnings.push(format!("{why}; moved it to {aside} and started a new registry")),
                Err(e) => warnings.push(format!("{why}; cannot move it aside ({e}), ignoring it")),
            }
            Registry::empty()
        };
        let file = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Registry::empty(),
            Err(e) => {
                warnings.push(format!("cannot read the type registry {}: {e}", path.display()));
                return Registry::empty();
            }
        };
        let mut bytes = Vec::new();
        if let Err(e) = file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes) {
            warnings.push(format!("cannot read the type registry {}: {e}", path.display()));
            return Registry::empty();
        }
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return set_aside(format!("the type registry {} is larger than 64 MiB", path.display()));
        }
        match serde_json::from_slice::<Registry>(&bytes) {
            Ok(r) if r.format == FORMAT && r.version == VERSION => r,
            Ok(_) => set_aside(format!("{} is not an agent type registry (version {VERSION})", path.display())),
            Err(e) => set_aside(format!("the type registry {} is corrupt ({e})", path.display())),
        }
    }

    pub fn empty() -> Registry {
        Registry { format: FORMAT.into(), version: VERSION, tools: BTreeMap::new() }
    }

    /// The entry of `server.tool`, if it was learned against `definition` (any definition when `None`).
    pub fn get(&self, server: &str, tool: &str, definition: Option<&str>) -> Option<&Entry> {
        self.tools
            .get(&key(server, tool))
            .filter(|e| e.server == server && e.tool == tool && definition.is_none_or(|d| d == e.definition))
    }

    fn merge_pending(&mut self, pending: &Pending, t: &Thresholds, now: &str) -> Vec<Change> {
        let mut changes = Vec::new();
        for (k, p) in &pending.tools {
            let fresh = || Entry {
                server: p.server.clone(),
                tool: p.tool.clone(),
                source: Source::None,
                quality: Quality::None,
                observations: 0,
                last_observed: String::new(),
                definition: p.definition.clone(),
                consistency: 1.0,
                fields: BTreeMap::new(),
                shape: Shape::default(),
            };
            let entry = self.tools.entry(k.clone()).or_insert_with(fresh);
            let before = if entry.definition == p.definition { entry.quality } else { Quality::None };
            if entry.definition != p.definition || entry.server != p.server || entry.tool != p.tool {
                *entry = fresh();
            }
            entry.observations += p.observations;
            entry.shape.merge(&p.shape);
            entry.last_observed = now.to_string();
            entry.refresh(t);
            if entry.quality != before {
                changes.push(Change { server: p.server.clone(), tool: p.tool.clone(), before, after: entry.quality });
            }
        }
        changes
    }

    /// Merges `pending` into the file at `path` under its lock (read, merge, atomic write), and
    /// returns the tools whose quality changed. Problems with the existing file go to `warnings`.
    pub fn record(
        path: &Path,
        pending: &Pending,
        t: &Thresholds,
        warnings: &mut Vec<String>,
    ) -> Result<Vec<Change>, String> {
        if pending.is_empty() {
            return Ok(Vec::new());
        }
        let _lock = FileLock::acquire(path)?;
        let mut reg = Registry::load(path, warnings);
        let changes = reg.merge_pending(pending, t, &now_rfc3339());
        reg.save(path)?;
        Ok(changes)
    }

    /// Forgets `only` (`(server, tool)`; everything when `None`) under the lock. Returns how
    /// many entries were removed.
    pub fn reset(path: &Path, only: Option<(&str, &str)>, warnings: &mut Vec<String>) -> Result<usize, String> {
        let _lock = FileLock::acquire(path)?;
        let mut reg = Registry::load(path, warnings);
        let before = reg.tools.len();
        match only {
            Some((s, t)) => reg.tools.retain(|_, e| !(e.server == s && e.tool == t)),
            None => reg.tools.clear(),
        }
        let removed = before - reg.tools.len();
        reg.save(path)?;
        Ok(removed)
    }

    /// Recomputes qualities with `t` (thresholds are configuration, the file may be older).
    pub fn with_thresholds(mut self, t: &Thresholds) -> Registry {
        for e in self.tools.values_mut() {
            e.refresh(t);
        }
        self
    }

    fn save(&self, path: &Path) -> Result<(), String> {
        let text = serde_json::to_string_pretty(self).map_err(|e| format!("cannot encode the type registry: {e}"))?;
        crate::util::fs::write_atomic(path, text.as_bytes(), crate::util::fs::Access::Shared)
            .map_err(|e| format!("cannot write the type registry {}: {e}", path.display()))
    }
}

fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

#[cfg(test)]
mod tests;
