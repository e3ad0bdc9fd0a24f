//! TypeScript API generation (`agent mcp generate`): turns a list of [`ToolInfo`] into the tree
//! the model reads in code mode (`client.ts`, `servers/<server>/<tool>.ts`, indexes, README...).
//!
//! `schema` converts JSON Schema to TypeScript, `naming` maps MCP names to identifiers and
//! paths, `render` fills the templates, `tree` writes files incrementally, `load` reads saved
//! tool lists. Codegen never talks to servers: callers hand it the tools (from `McpManager` or a
//! file). It writes only files that carry its header, and records what it generated from in
//! `<dir>/.agent-manifest.json`.

pub mod cache;
pub mod learned;
pub mod load;
pub mod naming;
pub mod primitives;
pub mod render;
pub mod schema;
pub mod tree;
pub mod ts;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::mcp::ToolInfo;
pub use load::load_tools_file;
pub use naming::{ServerNames, ToolNames, server_names, tool_names};
pub use primitives::{Primitives, ServerPrimitives};
pub use render::ServerEntry;
use render::{Example, IndexEntry};
use tree::{DeleteScope, PlannedFile};

/// File name of the manifest inside the output directory.
pub const MANIFEST: &str = ".agent-manifest.json";

/// The environment variables through which the generated `client.ts`, run outside agent (Node,
/// Bun, Deno), finds a running bridge: its socket path and its bearer token (rendered into the
/// template from here, so the names live in one place).
pub const ENV_SOCKET: &str = "AGENT_BRIDGE_SOCKET";
pub const ENV_TOKEN: &str = "AGENT_BRIDGE_TOKEN";

/// What to generate and where.
#[derive(Debug, Clone)]
pub struct GenerateOptions {
    pub output_dir: PathBuf,
    /// Rewrite every file even if unchanged, and delete every generated file the new tree lacks.
    pub clean: bool,
    /// Regenerate only these servers; the others' tools come from the manifest (their files are
    /// neither rewritten nor deleted), and the top-level files still list every server.
    pub only_servers: Option<Vec<String>>,
    /// Learned result types of tools without an `outputSchema`, by `(server, tool)` (see
    /// [`crate::types`]); an entry learned against another definition of the tool is ignored.
    pub learned: Learned,
}

/// Learned types to render, by `(server, tool)`.
pub type Learned = BTreeMap<(String, String), crate::types::Entry>;

/// The learned types the tree in `dir` was generated with (from its manifest).
pub fn learned_in_tree(dir: &Path) -> Learned {
    read_cache(dir)
        .map(|h| {
            h.files.into_values().filter_map(|e| e.learned).map(|e| ((e.server.clone(), e.tool.clone()), e)).collect()
        })
        .unwrap_or_default()
}

/// The learned types to generate with, from the registry: the tree's own (so unchanged tools
/// keep their files) except for tools whose quality went up, which take the registry's entry.
/// Returns them and the tools that went up, as `server.tool`. A tool whose manifest copy still
/// holds a version 1 registry's plaintext enum candidates counts as gone up: its file and the
/// manifest are written again, without them.
pub fn learned_for_tree(dir: &Path, registry: &crate::types::Registry) -> (Learned, Vec<String>) {
    let mut learned = learned_in_tree(dir);
    let mut raised = Vec::new();
    for e in registry.tools.values() {
        let k = (e.server.clone(), e.tool.clone());
        let old = learned.get(&k).filter(|old| old.definition == e.definition);
        let before = old.map(|old| old.quality);
        let plaintext = old.is_some_and(|old| old.shape.has_legacy_values());
        if plaintext || before.is_none_or(|b| e.quality > b) {
            if before.is_some() || e.quality > crate::types::Quality::None {
                raised.push(crate::types::key(&e.server, &e.tool));
            }
            learned.insert(k, e.clone());
        }
    }
    (learned, raised)
}

/// What a generation did (`agent mcp generate --json` prints it).
#[derive(Debug, Clone, Serialize)]
pub struct GenerateReport {
    pub output_dir: PathBuf,
    /// Servers in the tree (a server with no tools has no directory and is not counted).
    pub servers: usize,
    /// Tools in the tree.
    pub tools: usize,
    /// Tools whose result type comes from an `outputSchema`.
    pub with_output_schema: usize,
    /// Tools generated untyped, as `"server.tool: reason"`.
    pub degraded: Vec<String>,
    pub warnings: Vec<String>,
    pub files_written: usize,
    pub files_unchanged: usize,
    pub files_deleted: usize,
    /// Per server: its names in the tree and its tool count, sorted by server name.
    pub per_server: Vec<ServerSummary>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ServerSummary {
    pub name: String,
    /// Directory under `servers/`.
    pub directory: String,
    /// Namespace identifier in `index.ts`.
    pub namespace: String,
    pub tools: usize,
}

/// `.agent-manifest.json` as read back (written by [`manifest_text`]).
#[derive(Debug, Deserialize)]
struct Manifest {
    generator: String,
    tools: Vec<ToolInfo>,
    /// Servers' resources, templates and prompts (absent when no server offers any).
    #[serde(default)]
    primitives: Primitives,
}

fn generator_id() -> String {
    format!("agent {}", render::VERSION)
}

fn read_manifest(dir: &Path) -> Option<Manifest> {
    let text = std::fs::read_to_string(dir.join(MANIFEST)).ok()?;
    serde_json::from_str(&text).ok()
}

/// The servers as the code-mode prompt and the token estimate list them: directory name in the generated tree (the generator's
/// own naming, so the prompt and the tree agree) and tool count.
pub fn server_entries(servers: &[String], tools: &[ToolInfo]) -> Vec<ServerEntry> {
    // Name over every server the tools mention too: collision suffixes depend on the whole set.
    let mut all: Vec<&str> =
        servers.iter().map(String::as_str).chain(tools.iter().map(|t| t.server.as_str())).collect();
    all.sort_unstable();
    all.dedup();
    let names = server_names(all);
    servers
        .iter()
        .map(|name| ServerEntry {
            name: name.clone(),
            names: names
                .get(name)
                .cloned()
                .unwrap_or_else(|| ServerNames { dir: name.clone(), namespace: name.clone() }),
            tools: tools.iter().filter(|t| &t.server == name).count(),
        })
        .collect()
}

/// The tools the tree in `dir` was last generated from, if it was generated by this version of
/// agent (a tree from another version is due for regeneration anyway).
pub fn generated_tools(dir: &Path) -> Option<Vec<ToolInfo>> {
    read_manifest(dir).filter(|m| m.generator == generator_id()).map(|m| m.tools)
}

/// The resources, templates and prompts the tree in `dir` lists (empty without a tree of this
/// version).
pub fn generated_primitives(dir: &Path) -> Primitives {
    read_manifest(dir).filter(|m| m.generator == generator_id()).map(|m| m.primitives).unwrap_or_default()
}

/// Re-renders the top-level files (the README lists the skills in `<dir>/skills/`) from the
/// manifest's tools, leaving the tool files alone. Does nothing when `dir` holds no tree
/// generated by this version. Returns whether it re-rendered.
pub fn refresh_readme(dir: &Path) -> anyhow::Result<bool> {
    if generated_tools(dir).is_none() {
        return Ok(false);
    }
    let opts = GenerateOptions {
        output_dir: dir.to_path_buf(),
        clean: false,
        only_servers: Some(Vec::new()),
        learned: Default::default(),
    };
    generate(&[], &opts)?;
    Ok(true)
}

/// Where the tool list starts in the manifest.
const TOOLS_LINE: &str = "\n  \"tools\": [";

/// The manifest as JSON, one entry per line (readable diffs, and much faster than pretty-printing
/// every schema); starts with the JSON form of the generated header.
fn manifest_text(
    files: &BTreeMap<String, cache::Entry>,
    tool_lines: &[String],
    primitives: &Primitives,
) -> anyhow::Result<String> {
    let mut out = format!(
        "{{\n  \"//\": {},\n  \"generator\": {},\n  \"salt\": {},\n  \"files\": {{",
        serde_json::to_string(&render::json_header_value())?,
        serde_json::to_string(&generator_id())?,
        serde_json::to_string(cache::salt())?,
    );
    for (i, (path, entry)) in files.iter().enumerate() {
        out.push_str(if i == 0 { "\n    " } else { ",\n    " });
        out.push_str(&serde_json::to_string(path)?);
        out.push_str(": ");
        out.push_str(&serde_json::to_string(entry)?);
    }
    out.push_str(if files.is_empty() { "}," } else { "\n  }," });
    out.push_str(TOOLS_LINE);
    for (i, line) in tool_lines.iter().enumerate() {
        out.push_str(if i == 0 { "\n    " } else { ",\n    " });
        out.push_str(line);
    }
    out.push_str(if tool_lines.is_empty() { "]" } else { "\n  ]" });
    // Only trees with resources or prompts have the key: tool-only manifests stay as they were.
    if !primitives.is_empty() {
        out.push_str(",\n  \"primitives\": ");
        out.push_str(&serde_json::to_string(primitives)?);
    }
    out.push_str("\n}\n");
    Ok(out)
}

/// One tool file to produce.
struct Job<'a> {
    tool: &'a ToolInfo,
    names: &'a ToolNames,
    path: String,
    key: String,
    cached: Option<&'a cache::Entry>,
    learned: Option<&'a crate::types::Entry>,
}

/// A tool file, rendered or found up to date on disk.
struct Produced {
    rendered: render::RenderedTool,
    entry: cache::Entry,
    verified: bool,
}

fn produce(dir: &Path, job: &Job) -> anyhow::Result<Produced> {
    if let Some(c) = job.cached.filter(|c| c.key == job.key)
        && std::fs::read(dir.join(&job.path)).is_ok_and(|bytes| crate::util::hash::stable_hex(&[&bytes]) == c.content)
    {
        let rendered = render::RenderedTool {
            content: String::new(),
            degraded: c.degraded.clone(),
            warnings: c.warnings.clone(),
            has_output_schema: c.typed_output,
            input_optional: c.input_optional,
        };
        return Ok(Produced { rendered, entry: c.clone(), verified: true });
    }
    let rendered = render::tool_file(job.tool, job.names, job.learned)?;
    let entry = cache::Entry {
        key: job.key.clone(),
        content: crate::util::hash::stable_hex(&[rendered.content.as_bytes()]),
        degraded: rendered.degraded.clone(),
        warnings: rendered.warnings.clone(),
        typed_output: rendered.has_output_schema,
        input_optional: rendered.input_optional,
        learned: job.learned.filter(|_| !rendered.has_output_schema).cloned(),
    };
    Ok(Produced { rendered, entry, verified: false })
}

/// Produces the tool files on every available core (order preserved: output stays deterministic).
fn produce_all(dir: &Path, jobs: &[Job]) -> anyhow::Result<Vec<Produced>> {
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(8);
    if threads <= 1 || jobs.len() < 64 {
        return jobs.iter().map(|j| produce(dir, j)).collect();
    }
    let chunk = jobs.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = jobs
            .chunks(chunk)
            .map(|c| scope.spawn(move || c.iter().map(|j| produce(dir, j)).collect::<anyhow::Result<Vec<_>>>()))
            .collect();
        let mut out = Vec::with_capacity(jobs.len());
        for h in handles {
            out.extend(h.join().map_err(|_| anyhow::anyhow!("a code generation thread panicked"))??);
        }
        Ok(out)
    })
}

fn read_cache(dir: &Path) -> Option<cache::Head> {
    let text = std::fs::read_to_string(dir.join(MANIFEST)).ok()?;
    // The tool list (most of the file) is not needed here: parse only what precedes it, as
    // `manifest_text` lays it out; anything unexpected falls back to parsing the whole file.
    let head: cache::Head = text
        .find(TOOLS_LINE)
        .and_then(|end| serde_json::from_str(&format!("{}\n}}", text[..end].trim_end_matches(','))).ok())
        .or_else(|| serde_json::from_str(&text).ok())?;
    (head.generator == generator_id() && head.salt == cache::salt()).then_some(head)
}

/// Generates the tree for `tools` into `opts.output_dir`. Deterministic: the same tools give
/// byte-identical files whatever their order. One bad tool never fails the batch (it is
/// generated untyped and listed in `degraded`); errors are I/O failures only. The README keeps
/// listing the resources and prompts the manifest has for the servers in the tree.
pub fn generate(tools: &[ToolInfo], opts: &GenerateOptions) -> anyhow::Result<GenerateReport> {
    generate_with(tools, opts, None)
}

/// [`generate`] with the resources, templates and prompts of the servers generated (those of
/// `opts.only_servers`, or all): the README lists them, the manifest keeps them. `None` keeps
/// what the manifest has.
pub fn generate_with(
    tools: &[ToolInfo],
    opts: &GenerateOptions,
    primitives: Option<&Primitives>,
) -> anyhow::Result<GenerateReport> {
    let dir = opts.output_dir.as_path();
    let mut warnings = Vec::new();

    // The tools of the tree, keyed (server, name): fresh ones first, then the manifest's for
    // servers this run does not regenerate.
    let manifest = read_manifest(dir);
    let previous = match opts.only_servers {
        Some(_) => manifest.as_ref().map(|m| m.tools.clone()).unwrap_or_default(),
        None => Vec::new(),
    };
    let kept = manifest.map(|m| m.primitives).unwrap_or_default();
    let mut all: BTreeMap<(&str, &str), &ToolInfo> = BTreeMap::new();
    let selected = |server: &str| opts.only_servers.as_ref().is_none_or(|o| o.iter().any(|s| s == server));
    for t in tools.iter().filter(|t| selected(&t.server)) {
        let key = (t.server.as_str(), t.name.as_str());
        if all.contains_key(&key) {
            warnings.push(format!("{}: listed twice; the first definition is used", t.qualified_name()));
            continue;
        }
        all.insert(key, t);
    }
    for t in previous.iter().filter(|t| !selected(&t.server)) {
        all.entry((t.server.as_str(), t.name.as_str())).or_insert(t);
    }

    let mut by_server: BTreeMap<&str, Vec<&ToolInfo>> = BTreeMap::new();
    for t in all.values().copied() {
        by_server.entry(t.server.as_str()).or_default().push(t);
    }
    // Name servers that lost all their tools too, so a partial run can delete their directory.
    let mut name_set: BTreeSet<&str> = by_server.keys().copied().collect();
    if let Some(only) = &opts.only_servers {
        name_set.extend(only.iter().map(String::as_str));
    }
    let snames = server_names(name_set.iter().copied());

    let mut files: Vec<PlannedFile> = Vec::new();
    let mut index_files: Vec<PlannedFile> = Vec::new();
    let mut degraded = Vec::new();
    let mut with_output_schema = 0;
    let mut entries: Vec<ServerEntry> = Vec::new();
    let mut example: Option<Example> = None;
    let mut readme_example: Option<Example> = None;

    let tnames: BTreeMap<&str, BTreeMap<String, ToolNames>> =
        by_server.iter().map(|(s, list)| (*s, tool_names(list.iter().map(|t| t.name.as_str())))).collect();
    let head = if opts.clean { None } else { read_cache(dir) };
    let mut jobs: Vec<Job> = Vec::new();
    let mut tool_lines: Vec<String> = Vec::new();
    for (s, list) in &by_server {
        let (Some(sn), Some(names)) = (snames.get(*s), tnames.get(s)) else { continue };
        for t in list {
            let Some(names) = names.get(&t.name) else { continue };
            let line = serde_json::to_string(t)?;
            let path = format!("servers/{}/{}", sn.dir, names.file);
            let key = crate::util::hash::stable_hex(&[
                cache::salt().as_bytes(),
                path.as_bytes(),
                names.function.as_bytes(),
                names.input_type.as_bytes(),
                names.output_type.as_bytes(),
                line.as_bytes(),
            ]);
            let cached = head.as_ref().and_then(|h| h.files.get(&path));
            let learned = if t.output_schema.is_some() {
                None
            } else {
                let def = crate::types::definition_hash(line.as_bytes());
                opts.learned.get(&(t.server.clone(), t.name.clone())).filter(|e| e.definition == def)
            };
            let key = match learned {
                Some(e) => crate::util::hash::stable_hex(&[
                    key.as_bytes(),
                    serde_json::to_string(&e.shape)?.as_bytes(),
                    e.quality.as_str().as_bytes(),
                    &e.observations.to_le_bytes(),
                ]),
                None => key,
            };
            jobs.push(Job { tool: t, names, path, key, cached, learned });
            tool_lines.push(line);
        }
    }
    let mut produced = produce_all(dir, &jobs)?.into_iter();
    let mut cache_entries: BTreeMap<String, cache::Entry> = BTreeMap::new();

    for (server, list) in &by_server {
        let (Some(sn), Some(tnames)) = (snames.get(*server), tnames.get(server)) else { continue };
        let mut index: Vec<IndexEntry> = Vec::new();
        for t in list {
            let Some(names) = tnames.get(&t.name) else { continue };
            let Some(Produced { rendered: r, entry, verified }) = produced.next() else { continue };
            if let Some(reason) = &r.degraded {
                degraded.push(format!("{}: {reason}", t.qualified_name()));
            }
            warnings.extend(r.warnings.iter().map(|w| format!("{}: {w}", t.qualified_name())));
            if r.has_output_schema {
                with_output_schema += 1;
            }
            let ex = || Example {
                namespace: sn.namespace.clone(),
                dir: sn.dir.clone(),
                function: names.function.clone(),
                tool: t.name.clone(),
            };
            if readme_example.is_none() {
                readme_example = Some(ex());
            }
            let read_only = t.annotations.as_ref().and_then(|a| a.get("readOnlyHint")).and_then(|v| v.as_bool());
            if example.is_none() && r.degraded.is_none() && r.input_optional && read_only == Some(true) {
                example = Some(ex());
            }
            let path = format!("servers/{}/{}", sn.dir, names.file);
            cache_entries.insert(path.clone(), entry);
            files.push(PlannedFile { path, content: r.content, verified });
            index.push(IndexEntry { tool: t, names });
        }
        index_files
            .push(PlannedFile::new(format!("servers/{}/index.ts", sn.dir), render::server_index(server, sn, &index)?));
        entries.push(ServerEntry { name: server.to_string(), names: sn.clone(), tools: list.len() });
    }
    files.extend(index_files);

    // Resources and prompts: the given ones for the servers generated, the manifest's otherwise
    // (only for servers still in the tree).
    let mut offered: Primitives = kept
        .into_iter()
        .filter(|(s, _)| match primitives {
            Some(_) => !selected(s) && by_server.contains_key(s.as_str()),
            None => by_server.contains_key(s.as_str()),
        })
        .collect();
    if let Some(given) = primitives {
        offered.extend(given.iter().filter(|(s, p)| selected(s) && !p.is_empty()).map(|(s, p)| (s.clone(), p.clone())));
    }

    let example_path = dir.join("example.ts").display().to_string();
    files.push(PlannedFile::new("client.ts", render::client()?));
    files.push(PlannedFile::new("result.mjs", render::result_module()));
    files.push(PlannedFile::new("result.d.mts", render::result_types()?));
    files.push(PlannedFile::new("globals.d.ts", render::globals()?));
    files.push(PlannedFile::new("index.ts", render::top_index(&entries)?));
    files.push(PlannedFile::new("example.ts", render::example(&example_path, example.as_ref())?));
    files.push(PlannedFile::new("tsconfig.json", render::tsconfig()?));
    files.push(PlannedFile::new(
        "README.md",
        render::readme(&entries, readme_example.as_ref(), &crate::skills::list(dir), &offered)?,
    ));

    let mut outcome = tree::write(dir, &files, opts.clean)?;
    let manifest = [PlannedFile::new(MANIFEST, manifest_text(&cache_entries, &tool_lines, &offered)?)];
    let m = tree::write(dir, &manifest, opts.clean)?;

    let scope = match &opts.only_servers {
        None => DeleteScope::All,
        Some(only) => DeleteScope::Dirs(only.iter().filter_map(|s| snames.get(s)).map(|n| n.dir.clone()).collect()),
    };
    let keep: BTreeSet<&str> = files.iter().chain(manifest.iter()).map(|f| f.path.as_str()).collect();
    let d = tree::delete_stale(dir, &keep, &scope);
    outcome.written += m.written;
    outcome.unchanged += m.unchanged;
    outcome.deleted = d.deleted;
    warnings.extend(outcome.warnings.into_iter().chain(m.warnings).chain(d.warnings));

    Ok(GenerateReport {
        output_dir: dir.to_path_buf(),
        servers: entries.len(),
        tools: all.len(),
        with_output_schema,
        degraded,
        warnings,
        files_written: outcome.written,
        files_unchanged: outcome.unchanged,
        files_deleted: outcome.deleted,
        per_server: entries
            .into_iter()
            .map(|e| ServerSummary {
                name: e.name,
                directory: e.names.dir,
                namespace: e.names.namespace,
                tools: e.tools,
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests;
