//! Learned output types: the shapes of the results tools actually return, kept in the type
//! registry (`<workspace>/type_registry.json`), with a quality level per tool.
//!
//! This module is plain data and file handling: [`shape`] infers and merges shapes from JSON
//! values (shape only, never values, within caps; short strings as keyed hashes made with the
//! workspace's [`key`], in clear only once their place earned an enum); [`Registry`] is the
//! file (`0600`; read, merged and
//! written under a lock file, so several `agent` processes never lose each other's
//! observations; a corrupt or foreign file is set aside with a warning). It knows nothing of
//! MCP: `learn` feeds it from the manager's finished calls, `codegen` renders its shapes as
//! TypeScript, `agent mcp types` reports it.
//!
//! Results are untrusted (a hostile server, or a script that makes a tool echo what it likes),
//! so what they can make the file hold is bounded: a tool's shape at most [`MAX_SHAPE_BYTES`]
//! (a result that would push it further is skipped, not recorded), and the whole file never
//! past [`MAX_FILE_BYTES`], the most that is read back (the tools whose observations would push
//! it further are skipped for that write). A file over that cap would be set aside, taking
//! everything learned with it.

pub mod key;
pub mod shape;

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use key::HashKey;
pub use shape::{EnumRules, Shape};

/// File name of the registry inside the workspace.
pub const REGISTRY_FILE: &str = "type_registry.json";
/// What the registry file says it is (a file without it is foreign and set aside).
const FORMAT: &str = "agent type registry";
const VERSION: u32 = 2;
/// Version 1 kept enum candidates in clear; such a file is read, its candidates restarted.
const VERSION_PLAINTEXT_CANDIDATES: u32 = 1;
/// Registry files over this size are not read (set aside as corrupt), and no write makes the
/// file larger.
pub const MAX_FILE_BYTES: u64 = 64 << 20;
/// Most bytes one tool's learned shape may take as compact JSON; an observation that would make
/// it larger is skipped.
pub const MAX_SHAPE_BYTES: usize = 256 << 10;

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
    /// When a string field becomes an enum.
    pub enums: EnumRules,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds { low: 1, medium: 10, high: 100, consistency: 0.8, enums: EnumRules::default() }
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
        self.shape.promote(&t.enums);
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
    /// The id of the value key the candidates' hashes were made with ([`HashKey::id`]).
    #[serde(default)]
    pub key: String,
    /// `server.tool` → entry.
    #[serde(default)]
    pub tools: BTreeMap<String, Entry>,
}

/// Observations not written yet (one process's, merged into the file at a flush).
#[derive(Debug, Clone, Default)]
pub struct Pending {
    /// The value key strings are hashed with (`None`: no enum candidate is recorded).
    key: Option<HashKey>,
    pub tools: BTreeMap<String, PendingTool>,
    /// Results not recorded because their shape would have passed [`MAX_SHAPE_BYTES`], per tool.
    pub skipped: BTreeMap<String, u64>,
}

#[derive(Debug, Clone)]
pub struct PendingTool {
    pub server: String,
    pub tool: String,
    pub definition: String,
    pub observations: u64,
    pub shape: Shape,
    /// At least the length of `shape` as compact JSON (the sum of what was merged into it).
    bytes: usize,
}

impl Pending {
    /// Observations whose short strings are kept as enum candidates hashed with `key`.
    pub fn with_key(key: HashKey) -> Pending {
        Pending { key: Some(key), ..Pending::default() }
    }

    /// Adds one observed result of `server.tool` (defined as `definition`). Returns `false` when
    /// the result was skipped: the tool's shape would have passed [`MAX_SHAPE_BYTES`].
    pub fn add(&mut self, server: &str, tool: &str, definition: &str, value: &serde_json::Value) -> bool {
        let k = key(server, tool);
        let shape = Shape::observe(value, self.key.as_ref());
        let bytes = shape.encoded_len();
        if bytes > MAX_SHAPE_BYTES {
            *self.skipped.entry(k).or_default() += 1;
            return false;
        }
        let entry = self.tools.entry(k).or_insert_with(|| PendingTool {
            server: server.into(),
            tool: tool.into(),
            definition: definition.into(),
            observations: 0,
            shape: Shape::default(),
            bytes: 0,
        });
        if entry.definition != definition {
            entry.definition = definition.into();
            entry.observations = 0;
            entry.shape = Shape::default();
            entry.bytes = 0;
        }
        // A merge is never longer than its two sides together; only near the cap is it measured.
        if entry.bytes.saturating_add(bytes) <= MAX_SHAPE_BYTES {
            entry.shape.merge(&shape);
            entry.bytes += bytes;
        } else {
            let mut merged = entry.shape.clone();
            merged.merge(&shape);
            let merged_bytes = merged.encoded_len();
            if merged_bytes > MAX_SHAPE_BYTES {
                *self.skipped.entry(key(server, tool)).or_default() += 1;
                return false;
            }
            entry.shape = merged;
            entry.bytes = merged_bytes;
        }
        entry.observations += 1;
        true
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
            crate::util::fs::create_private_dirs(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
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
    /// Reads the registry at `path`, changing nothing: empty when there is none or it is not a
    /// registry (corrupt, foreign, too large; reported in `warnings`). The next write, under
    /// the lock, sets such a file aside.
    pub fn load(path: &Path, warnings: &mut Vec<String>) -> Registry {
        Registry::read(path, warnings, false)
    }

    /// [`Registry::load`] for a writer holding the lock: a file that is not a registry is renamed
    /// to `<file>.corrupt-<unix time>` (never over an earlier one) and the registry starts empty.
    /// Only a lock holder may move it: a reader without the lock could move a good file another
    /// process has just written in place of the bad one.
    fn load_locked(path: &Path, warnings: &mut Vec<String>) -> Registry {
        Registry::read(path, warnings, true)
    }

    fn read(path: &Path, warnings: &mut Vec<String>, locked: bool) -> Registry {
        let mut bad = |why: String| {
            if !locked {
                warnings.push(format!("{why}; ignoring it (the next recording sets it aside)"));
            } else {
                match set_aside(path) {
                    Ok(aside) => {
                        warnings.push(format!("{why}; moved it to {} and started a new registry", aside.display()))
                    }
                    Err(e) => warnings.push(format!("{why}; cannot move it aside ({e}), ignoring it")),
                }
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
            return bad(format!("the type registry {} is larger than 64 MiB", path.display()));
        }
        match serde_json::from_slice::<Registry>(&bytes) {
            Ok(r) if r.format == FORMAT && r.version == VERSION => r,
            Ok(mut r) if r.format == FORMAT && r.version == VERSION_PLAINTEXT_CANDIDATES => {
                // The candidates were values in clear: dropped here, so nothing reads them, and
                // gone from the file at the next write; the counts stay.
                r.tools.values_mut().for_each(|e| e.shape.restart_candidates());
                r.version = VERSION;
                r
            }
            Ok(_) => bad(format!("{} is not an agent type registry (version {VERSION})", path.display())),
            Err(e) => bad(format!("the type registry {} is corrupt ({e})", path.display())),
        }
    }

    pub fn empty() -> Registry {
        Registry { format: FORMAT.into(), version: VERSION, key: String::new(), tools: BTreeMap::new() }
    }

    /// The entry of `server.tool`, if it was learned against `definition` (any definition when `None`).
    pub fn get(&self, server: &str, tool: &str, definition: Option<&str>) -> Option<&Entry> {
        self.tools
            .get(&key(server, tool))
            .filter(|e| e.server == server && e.tool == tool && definition.is_none_or(|d| d == e.definition))
    }

    /// Merges `pending` into the entries. A tool whose merged shape would pass
    /// [`MAX_SHAPE_BYTES`] keeps its entry as it was (named in `skipped`). `replaced` gets the
    /// entries as they were before (`None`: new), so a merge can be undone.
    fn merge_pending(
        &mut self,
        pending: &Pending,
        t: &Thresholds,
        now: &str,
        replaced: &mut Vec<(String, Option<Entry>)>,
        skipped: &mut Vec<String>,
    ) -> Vec<Change> {
        let mut changes = Vec::new();
        for (k, p) in &pending.tools {
            let old = self.tools.get(k);
            let before = match old {
                Some(e) if e.definition == p.definition => e.quality,
                _ => Quality::None,
            };
            let mut entry = match old {
                Some(e) if e.definition == p.definition && e.server == p.server && e.tool == p.tool => e.clone(),
                _ => Entry {
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
                },
            };
            // A merge is never longer than its two sides together; only near the cap is it measured.
            let near_cap = entry.shape.encoded_len().saturating_add(p.bytes) > MAX_SHAPE_BYTES;
            entry.shape.merge(&p.shape);
            if near_cap && entry.shape.encoded_len() > MAX_SHAPE_BYTES {
                skipped.push(k.clone());
                continue;
            }
            entry.observations += p.observations;
            entry.last_observed = now.to_string();
            entry.refresh(t);
            if entry.quality != before {
                changes.push(Change { server: p.server.clone(), tool: p.tool.clone(), before, after: entry.quality });
            }
            replaced.push((k.clone(), self.tools.insert(k.clone(), entry)));
        }
        changes
    }

    /// Merges `pending` into the file at `path` under its lock (read, merge, atomic write), and
    /// returns the tools whose quality changed. Problems with the existing file, and results
    /// that were not recorded (see the module doc), go to `warnings`.
    pub fn record(
        path: &Path,
        pending: &Pending,
        t: &Thresholds,
        warnings: &mut Vec<String>,
    ) -> Result<Vec<Change>, String> {
        Registry::record_within(path, pending, t, warnings, MAX_FILE_BYTES)
    }

    /// [`Registry::record`] with the file held to `max_bytes`.
    fn record_within(
        path: &Path,
        pending: &Pending,
        t: &Thresholds,
        warnings: &mut Vec<String>,
        max_bytes: u64,
    ) -> Result<Vec<Change>, String> {
        let mut skipped: Vec<String> = pending.skipped.keys().cloned().collect();
        if pending.is_empty() {
            note_skipped(&skipped, warnings);
            return Ok(Vec::new());
        }
        let _lock = FileLock::acquire(path)?;
        let mut reg = Registry::load_locked(path, warnings);
        if let Some(k) = &pending.key {
            let id = k.id();
            if reg.key != id {
                // Hashes made with another key (before a reset, or a replaced key file) match
                // nothing any more: their places start collecting again.
                reg.tools.values_mut().for_each(|e| e.shape.restart_candidates());
                reg.key = id;
            }
        }
        let mut replaced = Vec::new();
        let mut changes = reg.merge_pending(pending, t, &now_rfc3339(), &mut replaced, &mut skipped);
        let mut text = reg.encode()?;
        if text.len() as u64 > max_bytes {
            // Undo the merges that grew the file most until it fits again.
            let size = |e: Option<&Entry>| e.map_or(0, |e| serde_json::to_vec_pretty(e).map_or(0, |v| v.len()));
            let mut growth: Vec<(usize, String, Option<Entry>)> = replaced
                .into_iter()
                .map(|(k, old)| (size(reg.tools.get(&k)).saturating_sub(size(old.as_ref())), k, old))
                .collect();
            growth.sort_by_key(|g| std::cmp::Reverse(g.0));
            for (_, k, old) in growth {
                match old {
                    Some(e) => reg.tools.insert(k.clone(), e),
                    None => reg.tools.remove(&k),
                };
                changes.retain(|c| key(&c.server, &c.tool) != k);
                skipped.push(k);
                text = reg.encode()?;
                if text.len() as u64 <= max_bytes {
                    break;
                }
            }
        }
        note_skipped(&skipped, warnings);
        if text.len() as u64 > max_bytes {
            return Err(format!("the type registry {} would pass {} bytes", path.display(), max_bytes));
        }
        write(path, &text)?;
        Ok(changes)
    }

    /// Forgets `only` (`(server, tool)`; everything when `None`, the value key too) under the
    /// lock. Returns how many entries were removed.
    pub fn reset(path: &Path, only: Option<(&str, &str)>, warnings: &mut Vec<String>) -> Result<usize, String> {
        let _lock = FileLock::acquire(path)?;
        let mut reg = Registry::load_locked(path, warnings);
        let before = reg.tools.len();
        match only {
            Some((s, t)) => reg.tools.retain(|_, e| !(e.server == s && e.tool == t)),
            None => {
                reg.tools.clear();
                reg.key.clear();
                key::forget_locked(path)?;
            }
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
        write(path, &self.encode()?)
    }

    fn encode(&self) -> Result<String, String> {
        serde_json::to_string_pretty(self).map_err(|e| format!("cannot encode the type registry: {e}"))
    }
}

/// The value key of the registry at `path`, created under the registry's lock when there is none
/// (see [`key`]).
pub fn value_key(path: &Path) -> Result<HashKey, String> {
    if let Some(k) = key::load(path)? {
        return Ok(k);
    }
    let _lock = FileLock::acquire(path)?;
    key::load_or_create_locked(path)
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    crate::util::fs::write_atomic(path, text.as_bytes(), crate::util::fs::Access::Private)
        .map_err(|e| format!("cannot write the type registry {}: {e}", path.display()))
}

/// One warning naming the tools whose results were not recorded.
fn note_skipped(skipped: &[String], warnings: &mut Vec<String>) {
    if skipped.is_empty() {
        return;
    }
    const SHOWN: usize = 5;
    let mut names: Vec<&str> = skipped.iter().map(String::as_str).collect();
    names.sort_unstable();
    names.dedup();
    let more = names.len().saturating_sub(SHOWN);
    let mut list: String =
        names.iter().take(SHOWN).map(|n| n.chars().take(100).collect::<String>()).collect::<Vec<_>>().join(", ");
    if more > 0 {
        list.push_str(&format!(" and {more} more"));
    }
    warnings
        .push(format!("results of {list} were not recorded: their learned type would pass the registry's size caps"));
}

/// Renames `path` to `<path>.corrupt-<unix time>`, or `...-2`, `...-3` when that name is taken:
/// two bad files in one second both stay for the user to look at.
fn set_aside(path: &Path) -> std::io::Result<PathBuf> {
    let mut base = path.as_os_str().to_owned();
    base.push(format!(".corrupt-{}", unix_now()));
    for n in 1..=1000 {
        let mut aside = base.clone();
        if n > 1 {
            aside.push(format!("-{n}"));
        }
        let aside = PathBuf::from(aside);
        match rename_no_replace(path, &aside) {
            Ok(()) => return Ok(aside),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::new(std::io::ErrorKind::AlreadyExists, "every set-aside name of this second is taken"))
}

/// `rename` that fails with `AlreadyExists` instead of replacing `to` (`renameat2` with
/// `RENAME_NOREPLACE`; a hard link and an unlink where the file system lacks it).
fn rename_no_replace(from: &Path, to: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt as _;
    let c = |p: &Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes())
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "a path with a NUL byte"))
    };
    let (f, t) = (c(from)?, c(to)?);
    // SAFETY: both are valid NUL-terminated paths that outlive the call.
    let rc = unsafe { libc::renameat2(libc::AT_FDCWD, f.as_ptr(), libc::AT_FDCWD, t.as_ptr(), libc::RENAME_NOREPLACE) };
    if rc == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    if !matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS)) {
        return Err(e);
    }
    std::fs::hard_link(from, to)?;
    std::fs::remove_file(from)
}

fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

#[cfg(test)]
mod tests;
