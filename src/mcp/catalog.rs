//! The tool catalog: [`ToolInfo`]s as documents of the search index (`crate::search`, which knows
//! nothing of MCP), and the records a search answers with. One home for what `agent mcp search`,
//! the bridge's `GET /search` (code mode's `searchTools`) and progressive mode share, so all three
//! rank and print tools the same way. [`Catalogs`] is the manager's cache of them: it keeps the
//! last one built and builds again only when a tool list changed.
//!
//! A catalog can also hold a server's resources, resource templates and prompts ([`Primitive`],
//! [`Catalogs::with_primitives`]), each found by its name, title, description, arguments, URI
//! and kind, and answered with its [`Kind`] and how to use it (`readResource("s", "uri")`,
//! `getPrompt("s", "name", {...})`). A catalog of tools only is exactly the tool catalog.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::McpError;
use super::tools::{ToolInfo, param_summary};
use super::usage::Usage;
use crate::config::{Config, ExamplesMode};
use crate::search::embed::{self, Embedder};
use crate::search::examples::{self, Examples};
use crate::search::{Doc, Index, RRF_K, fuse};
use crate::util::hash::stable_hex;

/// One ranked tool: the `agent mcp search --json` record, also what `GET /search` answers.
/// A resource, resource template or prompt found beside the tools has the same record with its
/// `kind` (absent for a tool, so tool records stay as they were) and, for resources, its `uri`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchResult {
    pub server: String,
    /// The MCP tool name (or the resource's, template's or prompt's name).
    pub tool: String,
    /// Comparable within one query only (rounded to 3 decimals).
    pub score: f64,
    /// How to use it: `server.tool(a: string, b?: number)` for a tool,
    /// `readResource("server", "uri")` for a resource or template, and
    /// `getPrompt("server", "name", { city: string, state?: string })` for a prompt.
    pub signature: String,
    /// The first sentence of the description.
    pub description: String,
    #[serde(default, skip_serializing_if = "Kind::is_tool")]
    pub kind: Kind,
    /// The URI (or URI template) of a resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
}

/// What a catalog entry is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Kind {
    #[default]
    #[serde(rename = "tool")]
    Tool,
    #[serde(rename = "resource")]
    Resource,
    #[serde(rename = "resource template")]
    ResourceTemplate,
    #[serde(rename = "prompt")]
    Prompt,
}

impl Kind {
    pub fn is_tool(&self) -> bool {
        *self == Kind::Tool
    }

    /// The word records and output use (`tool`, `resource`, `resource template`, `prompt`).
    pub fn as_str(&self) -> &'static str {
        match self {
            Kind::Tool => "tool",
            Kind::Resource => "resource",
            Kind::ResourceTemplate => "resource template",
            Kind::Prompt => "prompt",
        }
    }
}

/// A resource, resource template or prompt of a server, as a catalog holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct Primitive {
    pub server: String,
    pub kind: Kind,
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    /// The URI of a resource, the URI template of a template; `None` for a prompt.
    pub uri: Option<String>,
    /// A prompt's arguments: name, description, required.
    pub arguments: Vec<(String, String, bool)>,
}

impl Primitive {
    /// The entries of one server's resources, templates and prompts.
    pub fn of_server(
        server: &str,
        resources: &[rmcp::model::Resource],
        templates: &[rmcp::model::ResourceTemplate],
        prompts: &[rmcp::model::Prompt],
    ) -> Vec<Primitive> {
        let entry =
            |kind, name: &str, title: &Option<String>, description: &Option<String>, uri: Option<&str>| Primitive {
                server: server.to_string(),
                kind,
                name: name.to_string(),
                title: title.clone(),
                description: description.clone(),
                uri: uri.map(str::to_string),
                arguments: Vec::new(),
            };
        let mut out: Vec<Primitive> = resources
            .iter()
            .map(|r| entry(Kind::Resource, &r.name, &r.title, &r.description, Some(&r.uri)))
            .chain(
                templates
                    .iter()
                    .map(|t| entry(Kind::ResourceTemplate, &t.name, &t.title, &t.description, Some(&t.uri_template))),
            )
            .collect();
        out.extend(prompts.iter().map(|p| {
            Primitive {
                arguments: p
                    .arguments
                    .iter()
                    .flatten()
                    .map(|a| (a.name.clone(), a.description.clone().unwrap_or_default(), a.required == Some(true)))
                    .collect(),
                ..entry(Kind::Prompt, &p.name, &p.title, &p.description, None)
            }
        }));
        out
    }

    /// Its index document: the kind and URI as low-weight words beside the name, title,
    /// description and (for a prompt) the arguments.
    pub fn doc(&self) -> Doc {
        let mut annotations = vec![self.kind.as_str().to_string()];
        annotations.extend(self.uri.clone());
        Doc {
            server: self.server.clone(),
            tool: self.name.clone(),
            title: self.title.clone().unwrap_or_default(),
            description: self.description.clone().unwrap_or_default(),
            params: self.arguments.iter().map(|(n, d, _)| (n.clone(), d.clone())).collect(),
            annotations,
            examples: Vec::new(),
        }
    }

    /// How a script uses it: `readResource("s", "uri")` or `getPrompt("s", "name", {...})`.
    pub fn usage(&self) -> String {
        let lit = |s: &str| serde_json::to_string(s).unwrap_or_default();
        match self.kind {
            Kind::Prompt if self.arguments.is_empty() => {
                format!("getPrompt({}, {})", lit(&self.server), lit(&self.name))
            }
            Kind::Prompt => {
                let args: Vec<String> = self
                    .arguments
                    .iter()
                    .map(|(n, _, required)| format!("{}{}: string", lit(n), if *required { "" } else { "?" }))
                    .collect();
                format!("getPrompt({}, {}, {{ {} }})", lit(&self.server), lit(&self.name), args.join(", "))
            }
            _ => format!("readResource({}, {})", lit(&self.server), lit(self.uri.as_deref().unwrap_or_default())),
        }
    }
}

/// The index document of a tool: parameter descriptions carry their enum values (a `method`
/// parameter's values often name what a tool can do), annotations become words.
pub fn doc_for(t: &ToolInfo) -> Doc {
    let params = t
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| {
            props
                .iter()
                .map(|(name, p)| {
                    let mut text = p.get("description").and_then(Value::as_str).unwrap_or("").to_string();
                    let values = p.get("enum").or_else(|| p.get("items").and_then(|i| i.get("enum")));
                    for v in values.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
                        text.push(' ');
                        text.push_str(v);
                    }
                    (name.clone(), text)
                })
                .collect()
        })
        .unwrap_or_default();
    let annotations = t.hint_labels().into_iter().map(String::from).collect();
    Doc {
        server: t.server.clone(),
        tool: t.name.clone(),
        title: t.title.clone().unwrap_or_default(),
        description: t.description.clone().unwrap_or_default(),
        params,
        annotations,
        examples: Vec::new(),
    }
}

/// The hash a tool's cached example queries are kept under (`search::examples`): its name,
/// description and input schema, so a changed tool is asked again.
pub fn definition_hash(t: &ToolInfo) -> String {
    let schema = serde_json::to_string(&t.input_schema).unwrap_or_default();
    stable_hex(&[t.name.as_bytes(), t.description.as_deref().unwrap_or("").as_bytes(), schema.as_bytes()])
}

/// The file of cached example queries searches use (`search.examples: auto`); `None` when off.
pub fn examples_file(config: &Config) -> Option<PathBuf> {
    (config.search.examples == ExamplesMode::Auto).then(|| config.mcp.code_execution.workspace_dir.join(examples::FILE))
}

/// The cached example queries in `path`; a file that is not one is a warning, and none.
fn load_examples(path: &Path) -> Option<Examples> {
    match Examples::load(path) {
        Ok(e) => Some(e).filter(|e| !e.is_empty()),
        Err(why) => {
            tracing::warn!("{why}; searching without it (`agent mcp examples` sets it aside)");
            None
        }
    }
}

/// `server.tool(a: string, b?: number)`.
pub fn signature(t: &ToolInfo) -> String {
    let params = param_summary(&t.input_schema);
    let params = if params == "(none)" { "" } else { params.as_str() };
    format!("{}({params})", t.qualified_name())
}

/// The first sentence of a description (its first non-empty line, up to the first `. `), at
/// most 200 characters.
pub fn first_sentence(description: Option<&str>) -> String {
    let line = description.and_then(|d| d.lines().map(str::trim).find(|l| !l.is_empty())).unwrap_or("");
    let sentence = match line.find(". ") {
        Some(i) => &line[..=i],
        None => line,
    };
    if sentence.chars().count() > 200 {
        let cut: String = sentence.chars().take(199).collect();
        format!("{cut}…")
    } else {
        sentence.to_string()
    }
}

/// Tools and their index, searched together; with the tools' embedding vectors when semantic
/// ranking is on.
#[derive(Debug, Clone)]
pub struct Catalog {
    tools: Vec<ToolInfo>,
    /// Resources, templates and prompts: documents `tools.len()..` of the index.
    primitives: Vec<Primitive>,
    index: Index,
    vectors: Option<Vec<Vec<f32>>>,
}

/// The embeddings client `search.embeddings` configures (vectors cached in
/// `<workspace>/embeddings.json`), if any. A search waits for it at most a quarter of the
/// script timeout for the tools' vectors and as long for the query's, so a script's first
/// `searchTools` answers (by words, if need be) within half of its own timeout.
pub fn embedder(config: &Config) -> Option<Embedder> {
    let e = config.search.embeddings.as_ref()?;
    let key = e.api_key_env.as_deref().and_then(|var| std::env::var(var).ok()).filter(|k| !k.is_empty());
    let cache = config.mcp.code_execution.workspace_dir.join("embeddings.json");
    Some(Embedder::new(&e.url, &e.model, key, Some(cache)).with_budget(config.mcp.code_execution.timeout / 4))
}

impl Catalog {
    /// Indexes `tools` with the shipped ranking and no usage prior.
    pub fn build(tools: Vec<ToolInfo>) -> Catalog {
        Catalog::build_with_examples(tools, Vec::new(), None)
    }

    /// Indexes `tools` and `primitives` together (no usage prior, no vectors).
    pub fn build_with(tools: Vec<ToolInfo>, primitives: Vec<Primitive>) -> Catalog {
        Catalog::build_with_examples(tools, primitives, None)
    }

    /// [`Catalog::build_with`], each tool's document with its cached example queries (those
    /// written for its current definition).
    pub fn build_with_examples(
        tools: Vec<ToolInfo>,
        primitives: Vec<Primitive>,
        examples: Option<&Examples>,
    ) -> Catalog {
        let docs = tools
            .iter()
            .map(|t| {
                let mut doc = doc_for(t);
                if let Some(found) = examples.and_then(|e| e.get(&t.server, &t.name, &definition_hash(t))) {
                    doc.examples = found.to_vec();
                }
                doc
            })
            .chain(primitives.iter().map(Primitive::doc))
            .collect();
        Catalog { tools, primitives, index: Index::build(docs), vectors: None }
    }

    /// The resources, templates and prompts it holds besides the tools.
    pub fn primitives(&self) -> &[Primitive] {
        &self.primitives
    }

    /// The server of document `i`.
    fn server_of(&self, i: usize) -> &str {
        match self.tools.get(i) {
            Some(t) => &t.server,
            None => self.primitives.get(i - self.tools.len()).map(|p| p.server.as_str()).unwrap_or_default(),
        }
    }

    /// Embeds the tools (cached by their text) for semantic ranking.
    pub async fn embed(&mut self, embedder: &Embedder) -> Result<(), String> {
        self.vectors = Some(embedder.embed_docs(self.index.docs()).await?);
        Ok(())
    }

    pub fn has_vectors(&self) -> bool {
        self.vectors.is_some()
    }

    /// [`Catalog::search`] fused (reciprocal rank fusion) with the ranking by similarity to
    /// `query_vector`; the score is the fused one. Lexical only without tool vectors.
    pub fn search_fused(
        &self,
        query: &str,
        query_vector: &[f32],
        limit: usize,
        servers: &[String],
    ) -> Vec<SearchResult> {
        let Some(vectors) = &self.vectors else { return self.search(query, limit, servers) };
        let pool = (limit * 4).max(50);
        let lexical: Vec<usize> = self.index.search(query, pool, servers).into_iter().map(|h| h.doc).collect();
        let eligible = |i: usize| servers.is_empty() || servers.iter().any(|s| s == self.server_of(i));
        let semantic: Vec<usize> =
            embed::rank(vectors, query_vector, eligible, pool).into_iter().map(|h| h.doc).collect();
        fuse(&[lexical, semantic], RRF_K).into_iter().take(limit).map(|h| self.result(h.doc, h.score)).collect()
    }

    /// Adds the usage prior (successful calls per `(server, tool)`).
    pub fn with_usage(mut self, counts: &HashMap<(String, String), u64>) -> Catalog {
        self.index = self.index.with_usage(counts);
        self
    }

    pub fn tools(&self) -> &[ToolInfo] {
        &self.tools
    }

    pub fn index(&self) -> &Index {
        &self.index
    }

    /// The best `limit` tools for `query`, best first; only tools of `servers` unless it is empty.
    pub fn search(&self, query: &str, limit: usize, servers: &[String]) -> Vec<SearchResult> {
        self.index.search(query, limit, servers).into_iter().map(|h| self.result(h.doc, h.score)).collect()
    }

    /// The record of document `i` (a position in [`Catalog::tools`], then in
    /// [`Catalog::primitives`]) with a score.
    pub fn result(&self, i: usize, score: f32) -> SearchResult {
        if let Some(t) = self.tools.get(i) {
            return SearchResult {
                server: t.server.clone(),
                tool: t.name.clone(),
                score: round(score),
                signature: signature(t),
                description: first_sentence(t.description.as_deref()),
                kind: Kind::Tool,
                uri: None,
            };
        }
        let p = &self.primitives[i - self.tools.len()];
        SearchResult {
            server: p.server.clone(),
            tool: p.name.clone(),
            score: round(score),
            signature: p.usage(),
            description: first_sentence(p.description.as_deref()),
            kind: p.kind,
            uri: p.uri.clone(),
        }
    }
}

/// A score as records show it: 3 significant decimals (fused scores are small numbers).
fn round(score: f32) -> f64 {
    let s = score as f64;
    if s.abs() >= 1.0 { (s * 1000.0).round() / 1000.0 } else { format!("{s:.3e}").parse().unwrap_or(s) }
}

/// Searches `catalog`, fused with semantic ranking when it has tool vectors and `embedder` can
/// embed the query; `Err` (with the lexical results) when the embedding failed.
pub async fn search_with(
    catalog: &Catalog,
    embedder: Option<&Embedder>,
    query: &str,
    limit: usize,
    servers: &[String],
) -> Result<Vec<SearchResult>, (String, Vec<SearchResult>)> {
    let Some(embedder) = embedder.filter(|_| catalog.has_vectors()) else {
        return Ok(catalog.search(query, limit, servers));
    };
    match embedder.embed(&[query.to_string()]).await {
        Ok(mut v) => Ok(catalog.search_fused(query, &v.pop().unwrap_or_default(), limit, servers)),
        Err(e) => Err((e, catalog.search(query, limit, servers))),
    }
}

/// A catalog and the tool lists it was built from (kept, so their pointers identify them).
type Built = (Vec<Arc<Vec<ToolInfo>>>, Arc<Catalog>);

/// A tool catalog with primitives added, the tool catalog it was made from and those primitives.
type WithPrimitives = (Arc<Catalog>, Vec<Primitive>, Arc<Catalog>);

/// The servers left out of a catalog, and why.
pub type LeftOut = Vec<(String, McpError)>;

/// The manager's catalog cache: the last catalog built, the servers that failed to start for one
/// (later catalogs skip them, so a broken server does not slow every search; a call still tries
/// to start it), the embeddings client until it fails once (then words only, with one warning),
/// and tools that are not any server's (`agent mcp search` adds the saved skills).
pub struct Catalogs {
    built: Mutex<Option<Built>>,
    failed: Mutex<BTreeMap<String, McpError>>,
    usage: Arc<Usage>,
    embedder: Option<Embedder>,
    embeddings_failed: AtomicBool,
    extra: Mutex<Vec<ToolInfo>>,
    with_primitives: Mutex<Option<WithPrimitives>>,
    /// The file of cached example queries (`search.examples: auto`), and what it held when the
    /// first catalog was built (read once per process).
    examples_file: Option<PathBuf>,
    examples: OnceLock<Option<Examples>>,
}

impl Catalogs {
    /// The cache for `config` (`search.embeddings`), ranking with the counts of `usage`.
    pub fn new(config: &Config, usage: Arc<Usage>) -> Catalogs {
        Catalogs {
            built: Mutex::new(None),
            failed: Mutex::new(BTreeMap::new()),
            usage,
            embedder: embedder(config),
            embeddings_failed: AtomicBool::new(false),
            extra: Mutex::new(Vec::new()),
            with_primitives: Mutex::new(None),
            examples_file: examples_file(config),
            examples: OnceLock::new(),
        }
    }

    /// The cached example queries, read on first use.
    fn examples(&self) -> Option<&Examples> {
        self.examples.get_or_init(|| self.examples_file.as_deref().and_then(load_examples)).as_ref()
    }

    /// Adds tools that are no server's to every catalog built from now on.
    pub fn add_extra(&self, tools: Vec<ToolInfo>) {
        if let Ok(mut e) = self.extra.lock() {
            e.extend(tools);
        }
        if let Ok(mut b) = self.built.lock() {
            *b = None;
        }
    }

    /// The catalog of the servers whose `lists` are given (the failures of those that did not
    /// start are remembered by [`Catalogs::skip`]): the last one when built from the same lists.
    pub async fn of_lists(&self, lists: Vec<Arc<Vec<ToolInfo>>>) -> Arc<Catalog> {
        if let Ok(cache) = self.built.lock()
            && let Some((built_from, catalog)) = cache.as_ref()
            && built_from.len() == lists.len()
            && built_from.iter().zip(&lists).all(|(a, b)| Arc::ptr_eq(a, b))
        {
            return catalog.clone();
        }
        let mut tools: Vec<ToolInfo> = lists.iter().flat_map(|l| l.iter().cloned()).collect();
        if let Ok(extra) = self.extra.lock() {
            tools.extend(extra.iter().cloned());
        }
        let mut catalog =
            Catalog::build_with_examples(tools, Vec::new(), self.examples()).with_usage(self.usage.earlier());
        if let Some(embedder) = self.embedder()
            && let Err(e) = catalog.embed(embedder).await
        {
            self.embeddings_failed(&e);
        }
        let catalog = Arc::new(catalog);
        if let Ok(mut cache) = self.built.lock() {
            *cache = Some((lists, catalog.clone()));
        }
        catalog
    }

    /// `base` (a tool catalog of [`Catalogs::of_lists`]) with `primitives` added, with the same
    /// usage prior and embeddings; `base` itself when there are none, so a catalog of tools only
    /// ranks exactly as before. The last one is kept and reused for the same inputs.
    pub async fn with_primitives(&self, base: Arc<Catalog>, primitives: Vec<Primitive>) -> Arc<Catalog> {
        if primitives.is_empty() {
            return base;
        }
        if let Ok(cache) = self.with_primitives.lock()
            && let Some((from, prims, catalog)) = cache.as_ref()
            && Arc::ptr_eq(from, &base)
            && *prims == primitives
        {
            return catalog.clone();
        }
        let mut catalog = Catalog::build_with_examples(base.tools.clone(), primitives.clone(), self.examples())
            .with_usage(self.usage.earlier());
        if let Some(embedder) = self.embedder()
            && let Err(e) = catalog.embed(embedder).await
        {
            self.embeddings_failed(&e);
        }
        let catalog = Arc::new(catalog);
        if let Ok(mut cache) = self.with_primitives.lock() {
            *cache = Some((base, primitives, catalog.clone()));
        }
        catalog
    }

    /// Of `servers`, those a catalog skips (they failed to start for one before), with why.
    pub fn skipped(&self, servers: &[String]) -> LeftOut {
        self.failed
            .lock()
            .map(|f| f.iter().filter(|(k, _)| servers.contains(k)).map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default()
    }

    /// Remembers that `server` failed to start for a catalog.
    pub fn skip(&self, server: &str, e: &McpError) {
        if let Ok(mut f) = self.failed.lock() {
            f.insert(server.to_string(), e.clone());
        }
    }

    /// Searches `catalog` for `query` (see [`search_with`]); an embeddings failure turns
    /// semantic ranking off for the rest of the process.
    pub async fn search(&self, catalog: &Catalog, query: &str, limit: usize, only: &[String]) -> Vec<SearchResult> {
        match search_with(catalog, self.embedder(), query, limit, only).await {
            Ok(r) => r,
            Err((e, lexical)) => {
                self.embeddings_failed(&e);
                lexical
            }
        }
    }

    fn embedder(&self) -> Option<&Embedder> {
        self.embedder.as_ref().filter(|_| !self.embeddings_failed.load(Ordering::Acquire))
    }

    fn embeddings_failed(&self, e: &str) {
        if !self.embeddings_failed.swap(true, Ordering::AcqRel) {
            tracing::warn!("the embeddings endpoint failed ({e}); searching by words only");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn first_sentence_and_signature() {
        assert_eq!(first_sentence(Some("\n  Get a file. Then more.\nSecond line.")), "Get a file.");
        assert_eq!(first_sentence(Some("v1.2 is out")), "v1.2 is out");
        assert_eq!(first_sentence(None), "");
        let t = ToolInfo {
            server: "github".into(),
            name: "get_job_logs".into(),
            title: None,
            description: Some("Get the logs of a job. More.".into()),
            input_schema: json!({
                "type": "object",
                "properties": {"owner": {"type": "string"}, "job_id": {"type": "number"}},
                "required": ["owner"]
            }),
            output_schema: None,
            annotations: Some(json!({"readOnlyHint": true})),
        };
        assert_eq!(signature(&t), "github.get_job_logs(owner: string, job_id?: number)");
        let d = doc_for(&t);
        assert_eq!(d.annotations, ["read-only"]);
        assert_eq!(d.params[0].0, "owner");
        let catalog = Catalog::build(vec![t.clone()]);
        let found = catalog.search("job logs", 5, &[]);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].description, "Get the logs of a job.");
        assert!(catalog.search("job logs", 5, &["other".to_string()]).is_empty());
        let none = ToolInfo { input_schema: json!({"type": "object"}), ..t };
        assert_eq!(signature(&none), "github.get_job_logs()");
    }

    #[test]
    fn primitives_are_found_with_their_kind_and_usage_and_leave_tool_records_alone() {
        let tool = |name: &str, d: &str| ToolInfo {
            server: "s".into(),
            name: name.into(),
            title: None,
            description: Some(d.into()),
            input_schema: json!({"type": "object"}),
            output_schema: None,
            annotations: None,
        };
        let tools = vec![tool("echo", "Echoes the message back."), tool("add", "Adds two numbers.")];
        let mut doc = rmcp::model::Resource::new("demo://doc/architecture.md", "architecture.md");
        doc.description = Some("How the server is built.".into());
        let template = rmcp::model::ResourceTemplate::new("demo://blob/{id}", "blob");
        let mut city = rmcp::model::PromptArgument::new("city");
        city.required = Some(true);
        let prompt = rmcp::model::Prompt::new("weather", Some("Asks for the weather of a city"), Some(vec![city]));
        let prims = Primitive::of_server("s", &[doc], &[template], &[prompt]);
        assert_eq!(
            prims.iter().map(|p| p.kind).collect::<Vec<_>>(),
            [Kind::Resource, Kind::ResourceTemplate, Kind::Prompt]
        );
        let plain = Catalog::build(tools.clone());
        let both = Catalog::build_with(tools, prims);
        let found = both.search("weather of a city", 1, &[]);
        assert_eq!(found[0].kind, Kind::Prompt);
        assert_eq!(found[0].signature, "getPrompt(\"s\", \"weather\", { \"city\": string })");
        let found = both.search("how is the server built", 1, &[]);
        assert_eq!((found[0].kind, found[0].uri.as_deref()), (Kind::Resource, Some("demo://doc/architecture.md")));
        assert_eq!(found[0].signature, "readResource(\"s\", \"demo://doc/architecture.md\")");
        assert_eq!(both.search("blob template", 1, &[])[0].kind, Kind::ResourceTemplate);
        assert!(both.search("weather", 5, &["other".to_string()]).is_empty());
        // A tool's record has no `kind` or `uri`: the same JSON as a catalog of tools only.
        let echo = plain.search("echo message", 1, &[]);
        assert_eq!(serde_json::to_value(&echo[0]).unwrap().as_object().unwrap().len(), 5);
        assert_eq!(echo[0].tool, "echo");
    }

    #[tokio::test]
    async fn a_catalog_without_primitives_is_the_tool_catalog_itself() {
        let config = crate::config::Config::default();
        let catalogs = Catalogs::new(&config, Arc::new(Usage::default()));
        let base = Arc::new(Catalog::build(Vec::new()));
        assert!(Arc::ptr_eq(&catalogs.with_primitives(base.clone(), Vec::new()).await, &base));
        let prompt = rmcp::model::Prompt::new("p", Some("a prompt"), None);
        let prims = Primitive::of_server("s", &[], &[], &[prompt]);
        let first = catalogs.with_primitives(base.clone(), prims.clone()).await;
        assert_eq!(first.primitives().len(), 1);
        assert!(Arc::ptr_eq(&catalogs.with_primitives(base.clone(), prims).await, &first), "kept for the same input");
    }
}
