//! Optional semantic ranking: documents and queries embedded by an OpenAI-compatible
//! `/v1/embeddings` endpoint (Ollama, vLLM, llama.cpp, OpenAI), ranked by cosine similarity, and
//! fused with the lexical ranking by [`fuse`](super::fuse) (reciprocal rank fusion).
//!
//! Document vectors are cached in a file (the workspace's `embeddings.json`) under a hash of the
//! model and the embedded text, so a tool is embedded once until its definition changes; the
//! query is embedded per search. Callers decide what a failure means (`agent` warns once and
//! ranks by words only).
//!
//! The endpoint is not trusted to be reasonable: an answer is read up to [`MAX_ANSWER_BYTES`]
//! (never buffered past it), a vector may have at most [`MAX_DIMS`] dimensions (refused while
//! it is parsed), and one call ([`Embedder::embed`], [`Embedder::embed_docs`]) waits at most the
//! embedder's budget in all, however many batches it takes; vectors embedded before a failure
//! are kept in the cache, so a later search goes on from there.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::json;

use super::{Doc, Hit};
use crate::util::fs::{Access, write_atomic};
use crate::util::read::read_capped;

/// Texts per request.
const BATCH: usize = 64;
/// One request's time limit, and the longest budget of one call.
const TIMEOUT: Duration = Duration::from_secs(60);
/// Largest cache file read.
const MAX_CACHE_BYTES: u64 = 256 << 20;
/// Largest answer read: a batch of [`BATCH`] vectors of [`MAX_DIMS`] dimensions as JSON text
/// (at most ~25 bytes a number) is about 13 MiB.
pub const MAX_ANSWER_BYTES: usize = 32 << 20;
/// Most dimensions a vector may have (common models have 384 to 4,096).
pub const MAX_DIMS: usize = 8192;
/// How a vector over [`MAX_DIMS`] is reported (also found in serde's error to recognise it).
const TOO_MANY_DIMS: &str = "a vector has more than 8192 dimensions (the most accepted)";

/// A client of one embeddings endpoint and model.
#[derive(Debug, Clone)]
pub struct Embedder {
    endpoint: String,
    model: String,
    api_key: Option<String>,
    cache: Option<PathBuf>,
    client: reqwest::Client,
    /// The longest one call waits for the endpoint, all its batches together.
    budget: Duration,
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
    #[serde(deserialize_with = "capped_vector")]
    embedding: Vec<f32>,
    #[serde(default)]
    index: Option<usize>,
}

/// A vector of at most [`MAX_DIMS`] numbers; a longer one is an error as soon as it is seen.
fn capped_vector<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f32>, D::Error> {
    struct Capped;
    impl<'de> serde::de::Visitor<'de> for Capped {
        type Value = Vec<f32>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an array of numbers")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<f32>, A::Error> {
            let mut v = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(MAX_DIMS));
            while let Some(x) = seq.next_element::<f32>()? {
                if v.len() == MAX_DIMS {
                    return Err(serde::de::Error::custom(TOO_MANY_DIMS));
                }
                v.push(x);
            }
            Ok(v)
        }
    }
    d.deserialize_seq(Capped)
}

impl Embedder {
    /// `url` is the API base (`http://localhost:11434/v1`) or the endpoint itself (ending in
    /// `/embeddings`); `cache` the file document vectors are kept in (none: not kept).
    pub fn new(url: &str, model: &str, api_key: Option<String>, cache: Option<PathBuf>) -> Embedder {
        let url = url.trim_end_matches('/');
        let endpoint = if url.ends_with("/embeddings") { url.to_string() } else { format!("{url}/embeddings") };
        let client = reqwest::Client::builder().timeout(TIMEOUT).build().unwrap_or_default();
        Embedder { endpoint, model: model.to_string(), api_key, cache, client, budget: TIMEOUT }
    }

    /// Waits at most `budget` (and never more than a minute) for the endpoint in one call.
    pub fn with_budget(mut self, budget: Duration) -> Embedder {
        self.budget = budget.min(TIMEOUT);
        self
    }

    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// One vector per text, in order, within the budget.
    pub async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, String> {
        let deadline = tokio::time::Instant::now() + self.budget;
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(BATCH) {
            out.extend(self.request_by(batch, deadline).await?);
        }
        Ok(out)
    }

    /// [`Self::request`], failing at `deadline`.
    async fn request_by(&self, texts: &[String], deadline: tokio::time::Instant) -> Result<Vec<Vec<f32>>, String> {
        match tokio::time::timeout_at(deadline, self.request(texts)).await {
            Ok(answer) => answer,
            Err(_) => Err(format!(
                "{}: no answer within {} (the time a search waits for it)",
                self.endpoint,
                humantime::format_duration(self.budget)
            )),
        }
    }

    async fn request(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, String> {
        let mut req = self.client.post(&self.endpoint).json(&json!({"model": self.model, "input": texts}));
        if let Some(key) = &self.api_key {
            req = req.bearer_auth(key);
        }
        let fail = |what: String| format!("{}: {what}", self.endpoint);
        let resp = req.send().await.map_err(|e| fail(format!("no answer ({})", without_url(&e))))?;
        let status = resp.status();
        let body = read_answer(resp).await.map_err(fail)?;
        if !status.is_success() {
            let text: String = String::from_utf8_lossy(&body).chars().take(200).collect();
            return Err(fail(format!("HTTP {status}: {}", text.trim())));
        }
        let answer: Answer = serde_json::from_slice(&body).map_err(|e| {
            if e.to_string().contains(TOO_MANY_DIMS) {
                return fail(TOO_MANY_DIMS.into());
            }
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
    /// this model, else from the endpoint, within the budget (then the cache keeps exactly these
    /// documents; after a failure, those embedded so far).
    pub async fn embed_docs(&self, docs: &[Doc]) -> Result<Vec<Vec<f32>>, String> {
        let deadline = tokio::time::Instant::now() + self.budget;
        let texts: Vec<String> = docs.iter().map(doc_text).collect();
        let keys: Vec<String> = texts.iter().map(|t| self.key(t)).collect();
        let mut cache = self.read_cache();
        let missing: Vec<usize> = (0..texts.len()).filter(|&i| !cache.vectors.contains_key(&keys[i])).collect();
        let (mut failed, mut added) = (None, false);
        for batch in missing.chunks(BATCH) {
            let batch_texts: Vec<String> = batch.iter().map(|&i| texts[i].clone()).collect();
            match self.request_by(&batch_texts, deadline).await {
                Ok(fresh) => {
                    for (i, v) in batch.iter().zip(fresh) {
                        cache.vectors.insert(keys[*i].clone(), v);
                    }
                    added = true;
                }
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        if added {
            let keep: std::collections::HashSet<&String> = keys.iter().collect();
            cache.vectors.retain(|k, _| keep.contains(k));
            cache.version = 1;
            self.write_cache(&cache);
        }
        if let Some(e) = failed {
            return Err(e);
        }
        Ok(keys.iter().map(|k| cache.vectors.get(k).cloned().unwrap_or_default()).collect())
    }

    /// The cache key of a text: the stable hash of the model and the text.
    fn key(&self, text: &str) -> String {
        crate::util::hash::stable_hex(&[self.model.as_bytes(), text.as_bytes()])
    }

    fn read_cache(&self) -> CacheFile {
        let Some(path) = &self.cache else { return CacheFile::default() };
        let Ok(f) = std::fs::File::open(path) else { return CacheFile::default() };
        match read_capped(f, MAX_CACHE_BYTES).ok().and_then(|b| serde_json::from_slice::<CacheFile>(&b).ok()) {
            Some(c) if c.version == 1 && c.vectors.values().all(|v| v.len() <= MAX_DIMS) => c,
            _ => {
                tracing::warn!("the embeddings cache {} is not valid; embedding again", path.display());
                CacheFile::default()
            }
        }
    }

    fn write_cache(&self, cache: &CacheFile) {
        let Some(path) = &self.cache else { return };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            let _ = crate::util::fs::create_private_dirs(dir);
        }
        let written = serde_json::to_vec(cache)
            .map_err(|e| e.to_string())
            .and_then(|bytes| write_atomic(path, &bytes, Access::Private).map_err(|e| e.to_string()));
        if let Err(e) = written {
            tracing::warn!("cannot write the embeddings cache {}: {e}", path.display());
        }
    }
}

/// The body of `resp`, refused (without reading on) once it is over [`MAX_ANSWER_BYTES`].
async fn read_answer(mut resp: reqwest::Response) -> Result<Vec<u8>, String> {
    let too_large = || format!("the answer is larger than {} MiB (the most read)", MAX_ANSWER_BYTES >> 20);
    if resp.content_length().is_some_and(|n| n > MAX_ANSWER_BYTES as u64) {
        return Err(too_large());
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| format!("answer cut off ({})", without_url(&e)))? {
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
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

    /// An endpoint that answers its first request with `BATCH` vectors and never answers again.
    async fn first_batch_then_silence() -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let mut served = 0;
            loop {
                let Ok((mut s, _)) = listener.accept().await else { return };
                served += 1;
                let first = served == 1;
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 1 << 20];
                    let _ = s.read(&mut buf).await;
                    if !first {
                        tokio::time::sleep(Duration::from_secs(3600)).await;
                    }
                    let data: Vec<serde_json::Value> =
                        (0..BATCH).map(|i| json!({"index": i, "embedding": [1.0, i as f32]})).collect();
                    let body = json!({"data": data}).to_string();
                    let head =
                        format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n", body.len());
                    let _ = s.write_all(head.as_bytes()).await;
                    let _ = s.write_all(body.as_bytes()).await;
                });
            }
        });
        format!("http://{addr}/v1")
    }

    #[tokio::test]
    async fn a_call_waits_its_budget_in_all_and_keeps_what_was_embedded() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("embeddings.json");
        let url = first_batch_then_silence().await;
        let e = Embedder::new(&url, "m", None, Some(cache.clone())).with_budget(Duration::from_millis(500));
        let docs: Vec<Doc> =
            (0..BATCH + 10).map(|i| Doc { server: "s".into(), tool: format!("t{i}"), ..Default::default() }).collect();
        let started = std::time::Instant::now();
        let err = e.embed_docs(&docs).await.unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
        assert_eq!(err, format!("{}: no answer within 500ms (the time a search waits for it)", e.endpoint()));
        let kept: CacheFile = serde_json::from_slice(&std::fs::read(&cache).unwrap()).unwrap();
        assert_eq!(kept.vectors.len(), BATCH, "the first batch is kept for the next search");
        // A minute at most, whatever is asked.
        assert_eq!(Embedder::new(&url, "m", None, None).with_budget(Duration::from_secs(3600)).budget, TIMEOUT);
    }

    #[test]
    fn vectors_are_refused_past_the_dimension_cap_while_parsing() {
        let ok = format!(r#"{{"data":[{{"embedding":[{}]}}]}}"#, vec!["0.5"; MAX_DIMS].join(","));
        assert_eq!(serde_json::from_str::<Answer>(&ok).unwrap().data[0].embedding.len(), MAX_DIMS);
        let over = format!(r#"{{"data":[{{"embedding":[{}]}}]}}"#, vec!["0"; MAX_DIMS + 1].join(","));
        let err = serde_json::from_str::<Answer>(&over).err().unwrap();
        assert!(err.to_string().contains(TOO_MANY_DIMS), "{err}");
    }

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
