//! The tool catalog: [`ToolInfo`]s as documents of the search index (`crate::search`, which knows
//! nothing of MCP), and the records a search answers with. One home for what `agent mcp search`,
//! the bridge's `GET /search` (code mode's `searchTools`) and progressive mode share, so all three
//! rank and print tools the same way. [`Catalogs`] is the manager's cache of them: it keeps the
//! last one built and builds again only when a tool list changed.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::McpError;
use super::tools::{ToolInfo, param_summary};
use super::usage::Usage;
use crate::config::Config;
use crate::search::embed::{self, Embedder};
use crate::search::{Doc, Index, RRF_K, fuse};

/// One ranked tool: the `agent mcp search --json` record, also what `GET /search` answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchResult {
    pub server: String,
    /// The MCP tool name.
    pub tool: String,
    /// Comparable within one query only (rounded to 3 decimals).
    pub score: f64,
    /// `server.tool(a: string, b?: number)`.
    pub signature: String,
    /// The first sentence of the description.
    pub description: String,
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
        let index = Index::build(tools.iter().map(doc_for).collect());
        Catalog { tools, index, vectors: None }
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
        let eligible = |i: usize| servers.is_empty() || servers.contains(&self.tools[i].server);
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

    /// The record of tool `i` (a position in [`Catalog::tools`]) with a score.
    pub fn result(&self, i: usize, score: f32) -> SearchResult {
        let t = &self.tools[i];
        SearchResult {
            server: t.server.clone(),
            tool: t.name.clone(),
            score: round(score),
            signature: signature(t),
            description: first_sentence(t.description.as_deref()),
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
        }
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
        let mut catalog = Catalog::build(tools).with_usage(self.usage.earlier());
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
}
