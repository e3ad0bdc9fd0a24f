//! Example queries per tool: what someone who needs a tool might type, written once by the
//! configured model (`agent mcp examples`) and cached in `<workspace>/search_examples.json`, so a
//! task that shares no word with a tool's description still finds it. They only steer ranking
//! (the `examples` field of a [`Doc`](super::Doc)); nothing shows them to a model.
//!
//! The file is keyed by server, tool and a hash of the tool's definition (the caller's: name,
//! description, input schema), so a changed tool is asked again. Everything in it is bounded on
//! the way in and again on the way out ([`clean`]: at most [`MAX_PER_TOOL`] printable one-line
//! queries of at most [`MAX_CHARS`] characters per tool; the file at most [`MAX_FILE_BYTES`]).
//! It is read without following a link and with a cap, and written `0600` atomically (a link
//! planted at its path is replaced, never written through); a file that is not one is ignored
//! by readers and set aside by the writer, under a lock, before it writes.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::util::fs::{Access, Dir, create_private_dirs};
use crate::util::read::{CapError, read_capped};

/// The cache's file name in the workspace (beside `type_registry.json`).
pub const FILE: &str = "search_examples.json";
/// Most example queries kept per tool.
pub const MAX_PER_TOOL: usize = 5;
/// Longest example query kept, in characters (a longer one is dropped, not cut).
pub const MAX_CHARS: usize = 200;
/// Largest file read or written (about 7,000 tools at the per-tool caps).
pub const MAX_FILE_BYTES: u64 = 8 << 20;
/// How long a writer waits for another one.
const LOCK_WAIT: Duration = Duration::from_secs(10);
const VERSION: u32 = 1;

/// One tool's cached examples and the definition they were written for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The caller's hash of the tool's definition when the examples were written.
    pub definition: String,
    pub examples: Vec<String>,
}

/// The cached example queries: server → tool → [`Entry`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Examples {
    version: u32,
    tools: BTreeMap<String, BTreeMap<String, Entry>>,
}

/// One example query as kept: control and invisible formatting characters (escape sequences,
/// bidi overrides, zero-width marks) gone, white space runs made one space, trimmed; `None` when
/// nothing is left or it is longer than [`MAX_CHARS`].
pub fn clean(text: &str) -> Option<String> {
    let mut out = String::new();
    let mut space = false;
    for c in text.chars() {
        if c.is_whitespace() || c.is_control() || invisible(c) {
            space = !out.is_empty();
            continue;
        }
        if space {
            out.push(' ');
            space = false;
        }
        out.push(c);
    }
    (!out.is_empty() && out.chars().count() <= MAX_CHARS).then_some(out)
}

/// Formatting characters that change how text shows without showing themselves.
fn invisible(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{206F}' | '\u{FEFF}'
        | '\u{FFF9}'..='\u{FFFB}' | '\u{E0000}'..='\u{E007F}')
}

/// `texts` cleaned ([`clean`]), without repeats (ignoring case), at most [`MAX_PER_TOOL`].
pub fn clean_all<'a>(texts: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in texts {
        if out.len() == MAX_PER_TOOL {
            break;
        }
        if let Some(t) = clean(t)
            && !out.iter().any(|o| o.to_lowercase() == t.to_lowercase())
        {
            out.push(t);
        }
    }
    out
}

impl Examples {
    /// The examples of `server`'s `tool` written for `definition` (none for another definition).
    pub fn get(&self, server: &str, tool: &str, definition: &str) -> Option<&[String]> {
        let e = self.tools.get(server)?.get(tool)?;
        (e.definition == definition).then_some(e.examples.as_slice())
    }

    /// Sets the examples of `server`'s `tool` (cleaned: [`clean_all`]); returns how many were
    /// kept (an entry with none is not stored).
    pub fn set(&mut self, server: &str, tool: &str, definition: &str, examples: &[String]) -> usize {
        let examples = clean_all(examples.iter().map(String::as_str));
        let n = examples.len();
        if n > 0 {
            let entry = Entry { definition: definition.to_string(), examples };
            self.tools.entry(server.to_string()).or_default().insert(tool.to_string(), entry);
        }
        n
    }

    /// Makes `server` part of this set even with no entry, so [`Examples::save`] replaces the
    /// file's entries of it (none left: all dropped).
    pub fn touch_server(&mut self, server: &str) {
        self.tools.entry(server.to_string()).or_default();
    }

    /// Drops every entry of `server` (of every server when `None`); returns how many tools had one.
    pub fn remove_server(&mut self, server: Option<&str>) -> usize {
        match server {
            Some(s) => self.tools.remove(s).map(|t| t.len()).unwrap_or(0),
            None => std::mem::take(&mut self.tools).values().map(BTreeMap::len).sum(),
        }
    }

    /// Keeps of `server`'s entries only the tools `keep` says yes to (tools it no longer has go).
    pub fn retain_tools(&mut self, server: &str, keep: impl Fn(&str) -> bool) {
        if let Some(tools) = self.tools.get_mut(server) {
            tools.retain(|t, _| keep(t));
            if tools.is_empty() {
                self.tools.remove(server);
            }
        }
    }

    /// How many tools have examples.
    pub fn len(&self) -> usize {
        self.tools.values().map(BTreeMap::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Every entry bounded again (a file edited by hand or by someone else is held to the
    /// same caps as what `set` stores).
    fn bounded(mut self) -> Examples {
        for tools in self.tools.values_mut() {
            for e in tools.values_mut() {
                e.examples = clean_all(e.examples.iter().map(String::as_str));
            }
            // A definition hash is 16 hex digits; anything else can match no tool.
            tools.retain(|_, e| !e.examples.is_empty() && e.definition.len() <= 64);
        }
        self.tools.retain(|_, t| !t.is_empty());
        self
    }

    /// Reads the file at `path`: empty when there is none; `Err` (one line saying why, to warn
    /// with) when it is not a cache file (a link, too large, corrupt, another version). Changes
    /// nothing on disk.
    pub fn load(path: &Path) -> Result<Examples, String> {
        let (dir, name) = match open_parent(path, false) {
            Ok(Some(x)) => x,
            Ok(None) => return Ok(Examples::default()),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        read_in(&dir, name, path)
    }

    /// Merges `update` into the file at `path` under its lock: the file is read again, each of
    /// `update`'s servers replaced by `update`'s entries for it (other servers kept), then
    /// written `0600` atomically. A file that is not a cache file
    /// is first renamed to `<file>.corrupt-<n>`, with a warning pushed to `warnings`. Past
    /// [`MAX_FILE_BYTES`], the servers not in `update` are dropped, largest first.
    pub fn save(path: &Path, update: &Examples, warnings: &mut Vec<String>) -> io::Result<()> {
        Self::edit(path, warnings, |file| {
            for (server, tools) in &update.tools {
                file.tools.insert(server.clone(), tools.clone());
            }
            file.tools.retain(|_, t| !t.is_empty());
            let others: Vec<String> = file.tools.keys().filter(|s| !update.tools.contains_key(*s)).cloned().collect();
            let mut others = others.into_iter().map(|s| (file.tools[&s].len(), s)).collect::<Vec<_>>();
            others.sort();
            while serialised_len(file) > MAX_FILE_BYTES {
                let Some((_, s)) = others.pop() else { break };
                file.tools.remove(&s);
            }
        })
    }

    /// Applies `change` to the file at `path` under its lock (see [`Examples::save`]).
    pub fn edit(path: &Path, warnings: &mut Vec<String>, change: impl FnOnce(&mut Examples)) -> io::Result<()> {
        let Some((dir, name)) = open_parent(path, true)? else {
            return Err(io::Error::new(io::ErrorKind::NotFound, "no workspace directory"));
        };
        let mut lock_name = name.to_os_string();
        lock_name.push(".lock");
        let _lock = dir.lock(&lock_name, LOCK_WAIT)?;
        let mut file = match read_in(&dir, name, path) {
            Ok(f) => f,
            Err(why) => {
                match set_aside(&dir, name) {
                    Ok(aside) => warnings.push(format!("{why}; moved it to {aside} and started a new one")),
                    Err(e) => warnings.push(format!("{why}; cannot move it aside ({e}); replacing it")),
                }
                Examples::default()
            }
        };
        change(&mut file);
        file.version = VERSION;
        let bytes = serde_json::to_vec_pretty(&file).map_err(io::Error::other)?;
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(io::Error::other(format!("the examples would take more than {} MiB", MAX_FILE_BYTES >> 20)));
        }
        dir.write_atomic(name, &bytes, Access::Private)
    }
}

fn serialised_len(e: &Examples) -> u64 {
    serde_json::to_vec_pretty(e).map(|b| b.len() as u64).unwrap_or(u64::MAX)
}

/// The directory holding `path` (created `0700` when `create`) and the file's name in it.
fn open_parent(path: &Path, create: bool) -> io::Result<Option<(Dir, &OsStr)>> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, format!("{} names no file", path.display())))?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if create {
        create_private_dirs(parent)?;
    }
    match Dir::open(parent) {
        Ok(d) => Ok(Some((d, name))),
        Err(e) if e.kind() == io::ErrorKind::NotFound && !create => Ok(None),
        Err(e) => Err(e),
    }
}

/// Reads `name` in `dir` (never through a link), capped and bounded; `path` names it in errors.
fn read_in(dir: &Dir, name: &OsStr, path: &Path) -> Result<Examples, String> {
    let file = match dir.open_file(name) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Examples::default()),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(format!("the search examples file {} is a symbolic link", path.display()));
        }
        Err(e) => return Err(format!("the search examples file {} cannot be read ({e})", path.display())),
    };
    let bytes = match read_capped(file, MAX_FILE_BYTES) {
        Ok(b) => b,
        Err(CapError::TooLarge) => {
            return Err(format!(
                "the search examples file {} is larger than {} MiB",
                path.display(),
                MAX_FILE_BYTES >> 20
            ));
        }
        Err(CapError::Io(e)) => {
            return Err(format!("the search examples file {} cannot be read ({e})", path.display()));
        }
    };
    match serde_json::from_slice::<Examples>(&bytes) {
        Ok(e) if e.version == VERSION => Ok(e.bounded()),
        Ok(e) => {
            Err(format!("the search examples file {} has version {} (expected {VERSION})", path.display(), e.version))
        }
        Err(e) => Err(format!("the search examples file {} is corrupt ({e})", path.display())),
    }
}

/// Renames `name` to `<name>.corrupt-<n>` (the first free `n`), never over another file.
fn set_aside(dir: &Dir, name: &OsStr) -> io::Result<String> {
    for n in 1..=100 {
        let mut aside = name.to_os_string();
        aside.push(format!(".corrupt-{n}"));
        match dir.rename_no_replace(name, &aside) {
            Ok(()) => return Ok(aside.to_string_lossy().into_owned()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(io::ErrorKind::AlreadyExists, "100 set-aside files are there already"))
}

#[cfg(test)]
mod tests {
    use super::super::{Doc, Index};
    use super::*;

    #[test]
    fn a_query_sharing_words_only_with_an_example_finds_the_tool() {
        let doc = |tool: &str, description: &str| Doc {
            server: "s".into(),
            tool: tool.into(),
            description: description.into(),
            ..Default::default()
        };
        let mut docs = vec![
            doc("browser_emulate", "Changes the CPU and network throttling of the page."),
            doc("take_snapshot", "Captures the accessibility tree."),
        ];
        let query = "pretend to be on a slow 3G connection";
        assert!(Index::build(docs.clone()).search(query, 5, &[]).is_empty(), "no shared word without examples");
        docs[0].examples = vec!["simulate a slow 3G connection".into(), "test the site on a bad phone".into()];
        let index = Index::build(docs);
        let hits = index.search(query, 5, &[]);
        assert_eq!(hits.len(), 1);
        assert_eq!(index.docs()[hits[0].doc].tool, "browser_emulate");
    }

    #[test]
    fn examples_are_one_printable_line_bounded_in_length_and_number() {
        assert_eq!(clean("  find\tmy\n\nopen  bugs ").as_deref(), Some("find my open bugs"));
        assert_eq!(clean("\x1b[2J\x1b]0;owned\x07clear").as_deref(), Some("[2J ]0;owned clear"));
        assert_eq!(clean("a\u{202E}b\u{200B}c\u{9b}d").as_deref(), Some("a b c d"));
        assert_eq!(clean(" \x07 "), None);
        assert_eq!(clean(&"x".repeat(MAX_CHARS)).map(|s| s.len()), Some(MAX_CHARS));
        assert_eq!(clean(&"x".repeat(MAX_CHARS + 1)), None, "too long: dropped, not cut");
        let many: Vec<String> = (0..20).map(|i| format!("query {i}")).collect();
        assert_eq!(clean_all(many.iter().map(String::as_str)).len(), MAX_PER_TOOL);
        assert_eq!(clean_all(["Same", "same", "SAME "]), ["Same"]);
    }

    #[test]
    fn a_changed_definition_has_no_examples_and_the_file_round_trips_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ws").join(FILE);
        assert!(Examples::load(&path).unwrap().is_empty(), "no file, no examples");
        let mut e = Examples::default();
        assert_eq!(e.set("s", "t", "d1", &["one".into(), "\x1b".into()]), 1);
        assert_eq!(e.set("s", "empty", "d1", &["\n".into()]), 0);
        let mut warnings = Vec::new();
        Examples::save(&path, &e, &mut warnings).unwrap();
        assert!(warnings.is_empty());
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        let back = Examples::load(&path).unwrap();
        assert_eq!(back.get("s", "t", "d1").unwrap(), ["one"]);
        assert_eq!(back.get("s", "t", "d2"), None, "another definition is asked again");
        assert_eq!(back.len(), 1);
    }

    #[test]
    fn a_corrupt_file_is_ignored_by_readers_and_set_aside_by_the_writer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        std::fs::write(&path, "{not json").unwrap();
        assert!(Examples::load(&path).unwrap_err().contains("corrupt"));
        assert!(path.exists(), "a reader moves nothing");
        let mut e = Examples::default();
        e.set("s", "t", "d", &["q".into()]);
        let mut warnings = Vec::new();
        Examples::save(&path, &e, &mut warnings).unwrap();
        assert!(warnings[0].contains(".corrupt-1"), "{warnings:?}");
        assert_eq!(std::fs::read_to_string(dir.path().join(format!("{FILE}.corrupt-1"))).unwrap(), "{not json");
        assert_eq!(Examples::load(&path).unwrap().len(), 1);
        // A second bad file is kept beside the first, never over it.
        std::fs::write(&path, "[]").unwrap();
        Examples::save(&path, &e, &mut warnings).unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join(format!("{FILE}.corrupt-2"))).unwrap(), "[]");
        assert_eq!(std::fs::read_to_string(dir.path().join(format!("{FILE}.corrupt-1"))).unwrap(), "{not json");
    }

    #[test]
    fn the_writer_keeps_other_servers_and_a_hand_edited_file_is_bounded_on_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        let long = "y".repeat(MAX_CHARS + 1);
        let six: Vec<String> = (0..6).map(|i| format!("\"q{i}\"")).collect();
        std::fs::write(
            &path,
            format!(
                r#"{{"version": 1, "tools": {{"a": {{"t": {{"definition": "d", "examples": [{}, "{long}", "\u001b[31mred"]}}}},
                    "b": {{"u": {{"definition": "d", "examples": ["kept"]}}}}}}}}"#,
                six.join(", ")
            ),
        )
        .unwrap();
        let read = Examples::load(&path).unwrap();
        assert_eq!(read.get("a", "t", "d").unwrap(), ["q0", "q1", "q2", "q3", "q4"]);
        let mut update = Examples::default();
        update.set("a", "new", "d", &["fresh".into()]);
        Examples::save(&path, &update, &mut Vec::new()).unwrap();
        let read = Examples::load(&path).unwrap();
        assert_eq!(read.get("a", "t", "d"), None, "a whole server is replaced");
        assert_eq!(read.get("a", "new", "d").unwrap(), ["fresh"]);
        assert_eq!(read.get("b", "u", "d").unwrap(), ["kept"], "other servers stay");
    }
}
