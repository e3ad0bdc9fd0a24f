//! Optional semantic ranking: documents and queries embedded by an OpenAI-compatible
//! `/v1/embeddings` endpoint (Ollama, vLLM, llama.cpp, OpenAI), ranked by cosine similarity, and
//! fused with the lexical ranking by [`fuse`](super::fuse) (reciprocal rank fusion).
//!
//! Document vectors are cached in a file (the workspace's `embeddings.json`) under a hash of the
//! model and the embedded text, so a tool is embedded once until its definition changes; the
//! query is embedded per search. Callers decide what a failure means (`agent` warns once and
//! ranks by words only).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Doc, Hit};
use crate::util::fs::{Access, write_atomic};
use crate::util::read::read_capped;

/// Texts per request.
const BATCH: usize = 64;
/// One request's time limit.
const TIMEOUT: Duration = Duration::from_secs(60);
/// Largest cache file read.
const MAX_CACHE_BYTES: u64 = 256 << 20;

/// A client of one embeddings endpoint and model.
#[derive(Debug, Clone)]
pub struct Embedder {
    endpoint: String,
    model: String,
    api_key: Option<String>,
    cache: Option<PathBuf>,
    client: reqwest::Client,
}

#[derive(Serialize, Deserialize, Default)]
struct CacheFile {
    version: u32,
    vectors: BTreeMap<String, Vec<f32>>,
}

#[derive(Deserialize)]
struct Answer {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    embedding: Vec<f32>,
    #[serde(default)]
    index: Option<usize>,
}

impl Embedder {
    /// `url` is the API base (`http://localhost:11434/v1`) or the endpoint itself (ending in
    /// `/embeddings`); `cache` the file document vectors are kept in (none: not kept).
    pub fn new(url: &str, model: &str, api_key: Option<String>, cache: Option<PathBuf>) -> Embedder {
        let url = url.trim_end_matches('/');
        let endpoint = if url.ends_with("/embeddings") { url.to_string() } else { format!("{url}/embeddings") };
        let client = reqwest::Client::builder().timeout(TIMEOUT).build().unwrap_or_default();
        Embedder { endpoint, model: model.to_string(), api_key, cache, client }
    }

    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// One vector per text, in order.
    pub async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, String> {
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(BATCH) {
            out.extend(self.request(batch).await?);
        }
        Ok(out)
    }

    async fn request(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, String> {
        let mut req = self.client.post(&self.endpoint).json(&json!({"model": self.model, "input": texts}));
        if let Some(key) = &self.api_key {
            req = req.bearer_auth(key);
        }
        let fail = |what: String| format!("{}: {what}", self.endpoint);
        let resp = req.send().await.map_err(|e| fail(format!("no answer ({})", without_url(&e))))?;
        let status = resp.status();
        let body = resp.bytes().await.map_err(|e| fail(format!("answer cut off ({})", without_url(&e))))?;
        if !status.is_success() {
            let text: String = String::from_utf8_lossy(&body).chars().take(200).collect();
            return Err(fail(format!("HTTP {status}: {}", text.trim())));
        }
        let answer: Answer = serde_json::from_slice(&body).map_err(|e| {
            fail(format!("not an embeddings answer ({e}); expected {{\"data\": [{{\"embedding\": [...]}}]}}"))
        })?;
        if answer.data.len() != texts.len() {
            return Err(fail(format!("{} vectors for {} texts", answer.data.len(), texts.len())));
        }
        let mut items = answer.data;
        if items.iter().all(|i| i.index.is_some()) {
            items.sort_by_key(|i| i.index);
        }
        let dims = items.first().map(|i| i.embedding.len()).unwrap_or(0);
        if dims == 0 || items.iter().any(|i| i.embedding.len() != dims) {
            return Err(fail("vectors of different or zero length".into()));
        }
        Ok(items.into_iter().map(|i| i.embedding).collect())
    }

    /// The vectors of `docs`: from the cache file when their text was embedded before with
    /// this model, else from the endpoint (then the cache keeps exactly these documents).
    pub async fn embed_docs(&self, docs: &[Doc]) -> Result<Vec<Vec<f32>>, String> {
        let texts: Vec<String> = docs.iter().map(doc_text).collect();
        let keys: Vec<String> = texts.iter().map(|t| self.key(t)).collect();
        let mut cache = self.read_cache();
        let missing: Vec<usize> = (0..texts.len()).filter(|&i| !cache.vectors.contains_key(&keys[i])).collect();
        if !missing.is_empty() {
            let fresh = self.embed(&missing.iter().map(|&i| texts[i].clone()).collect::<Vec<_>>()).await?;
            for (i, v) in missing.iter().zip(fresh) {
                cache.vectors.insert(keys[*i].clone(), v);
            }
        }
        let out: Vec<Vec<f32>> = keys.iter().map(|k| cache.vectors.get(k).cloned().unwrap_or_default()).collect();
        if !missing.is_empty() {
            let keep: std::collections::HashSet<&String> = keys.iter().collect();
            cache.vectors.retain(|k, _| keep.contains(k));
            cache.version = 1;
            self.write_cache(&cache);
        }
        Ok(out)
    }

    /// The cache key of a text: the stable hash of the model and the text.
    fn key(&self, text: &str) -> String {
        crate::util::hash::stable_hex(&[self.model.as_bytes(), text.as_bytes()])
    }

    fn read_cache(&self) -> CacheFile {
        let Some(path) = &self.cache else { return CacheFile::default() };
        let Ok(f) = std::fs::File::open(path) else { return CacheFile::default() };
        match read_capped(f, MAX_CACHE_BYTES).ok().and_then(|b| serde_json::from_slice::<CacheFile>(&b).ok()) {
            Some(c) if c.version == 1 => c,
            _ => {
                tracing::warn!("the embeddings cache {} is not valid; embedding again", path.display());
                CacheFile::default()
            }
        }
    }

    fn write_cache(&self, cache: &CacheFile) {
        let Some(path) = &self.cache else { return };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            let _ = std::fs::create_dir_all(dir);
        }
        let written = serde_json::to_vec(cache)
            .map_err(|e| e.to_string())
            .and_then(|bytes| write_atomic(path, &bytes, Access::Private).map_err(|e| e.to_string()));
        if let Err(e) = written {
            tracing::warn!("cannot write the embeddings cache {}: {e}", path.display());
        }
    }
}

/// reqwest's message without the URL it repeats (the caller names the endpoint once).
fn without_url(e: &reqwest::Error) -> String {
    let mut e = e.to_string();
    if let Some(i) = e.find(" for url (") {
        e.truncate(i);
    }
    e
}

/// What is embedded of a document: its names, title, description and parameter names.
pub fn doc_text(d: &Doc) -> String {
    let mut s = format!("{}.{}", d.server, d.tool);
    for part in [d.title.as_str(), d.description.as_str()] {
        if !part.trim().is_empty() {
            s.push('\n');
            s.push_str(part.trim());
        }
    }
    if !d.params.is_empty() {
        s.push_str("\nparameters: ");
        s.push_str(&d.params.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", "));
    }
    s
}

/// Cosine similarity (0 when either vector is zero or their lengths differ).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() || a.is_empty() {
        return 0.0;
    }
    let (mut dot, mut na, mut nb) = (0.0f32, 0.0f32, 0.0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 { 0.0 } else { dot / (na.sqrt() * nb.sqrt()) }
}

/// The documents most similar to `query` (positive similarity only), best first, among those
/// `eligible` says yes to.
pub fn rank(vectors: &[Vec<f32>], query: &[f32], eligible: impl Fn(usize) -> bool, limit: usize) -> Vec<Hit> {
    let mut hits: Vec<Hit> = vectors
        .iter()
        .enumerate()
        .filter(|(i, _)| eligible(*i))
        .map(|(doc, v)| Hit { doc, score: cosine(v, query) })
        .filter(|h| h.score > 0.0)
        .collect();
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.doc.cmp(&b.doc)));
    hits.truncate(limit);
    hits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cosine_rank_and_endpoint_urls() {
        assert!((cosine(&[1.0, 0.0], &[2.0, 0.0]) - 1.0).abs() < 1e-6);
        assert_eq!(cosine(&[1.0, 0.0], &[0.0, 3.0]), 0.0);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
        assert_eq!(cosine(&[1.0], &[1.0, 0.0]), 0.0);
        let v = vec![vec![1.0, 0.0], vec![0.7, 0.7], vec![-1.0, 0.0], vec![0.9, 0.1]];
        let order: Vec<usize> = rank(&v, &[1.0, 0.0], |i| i != 3, 10).iter().map(|h| h.doc).collect();
        assert_eq!(order, [0, 1], "negative similarity and ineligible documents are left out");
        assert_eq!(Embedder::new("http://h/v1/", "m", None, None).endpoint(), "http://h/v1/embeddings");
        assert_eq!(Embedder::new("http://h/v1/embeddings", "m", None, None).endpoint(), "http://h/v1/embeddings");
        let e = Embedder::new("http://h/v1", "m", None, None);
        assert_ne!(e.key("a"), Embedder::new("http://h/v1", "other", None, None).key("a"));
        assert_eq!(e.key("a"), e.key("a"));
    }
}
