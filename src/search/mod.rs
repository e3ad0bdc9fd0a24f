//! Search over the tool catalog: an in-memory index of plain documents (one per tool) ranked by
//! BM25F over weighted fields, with name-match, category, parameter and usage signals on top.
//!
//! Callers build [`Doc`]s from whatever tool records they hold (this module knows nothing of
//! MCP, rmcp or the CLI), then [`Index::build`] and [`Index::search`]. The index is immutable:
//! when a server's tool list changes, build a new one (1,000 tools take a few milliseconds).
//!
//! Ranking, for each query:
//! - the query is tokenised and normalised like the documents ([`text::terms`]: identifiers split
//!   on `_ - . /`, camelCase and digits; stop words dropped; `PR`, `repo`, ... expanded; light
//!   stemming), and a few verbs add their synonyms at a lower weight (`show` → `get`, `list`);
//! - BM25F over the fields, by weight: tool name > title > category (server, shared name
//!   prefix) = parameter names > description = example queries > parameter descriptions >
//!   annotations;
//! - multiplied by the extra signals: the query covers the tool's name (partial, F1 of name
//!   words and query words) or equals it (exact), names its category, names a parameter, and
//!   the usage prior (how often the tool was called; off unless counts are given).
//!
//! Scores are only comparable within one query.

pub mod embed;
pub mod examples;
pub mod text;

use std::collections::HashMap;

/// One tool as the index sees it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Doc {
    /// The server (also the tool's category).
    pub server: String,
    /// The tool name as the server spells it (`get_job_logs`, `API-getUser`, `text.upper`).
    pub tool: String,
    /// Human title; empty when there is none.
    pub title: String,
    pub description: String,
    /// Parameter names and their descriptions (callers may append enum values to the latter).
    pub params: Vec<(String, String)>,
    /// Annotation labels, as words (`read-only`, `destructive`).
    pub annotations: Vec<String>,
    /// Example queries someone needing this tool might type (written once by a model and
    /// cached: `search::examples`); empty when there are none. They only steer ranking.
    pub examples: Vec<String>,
}

/// A search result: the position of its document in the list given to [`Index::build`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    pub doc: usize,
    pub score: f32,
}

const NAME: usize = 0;
const TITLE: usize = 1;
const CATEGORY: usize = 2;
const PARAM_NAMES: usize = 3;
const DESCRIPTION: usize = 4;
const PARAM_DESCRIPTIONS: usize = 5;
const ANNOTATIONS: usize = 6;
const EXAMPLES: usize = 7;
const FIELDS: usize = 8;

/// How results are ranked. [`Ranking::default`] is what `agent` ships.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranking {
    /// BM25F field weights: name, title, category, parameter names, description, parameter
    /// descriptions, annotations, example queries.
    pub weights: [f32; FIELDS],
    /// BM25 length normalisation per field (same order).
    pub b: [f32; FIELDS],
    /// BM25 term-frequency saturation.
    pub k1: f32,
    /// Apply the name, category and parameter signals.
    pub boosts: bool,
    /// Let query verbs match their synonyms (`show` → `get`).
    pub synonyms: bool,
    /// How much the usage prior can add (0 turns it off): a tool called most often gets
    /// `1 + usage_weight` times its score, one never called ×1.
    pub usage_weight: f32,
    /// Per-field multipliers of `weights` for query words that are verbs (what to do: `show`,
    /// `delete`, [`text::is_verb`]) and for the other words (what to do it to). All 1.0: words
    /// weigh the same whatever they are.
    pub verb_fields: [f32; FIELDS],
    pub object_fields: [f32; FIELDS],
    /// Vocabulary expansion learned from the catalogue: each query word that is not a verb also
    /// matches the [`Ranking::expand_terms`] terms that share the most tools with it (cosine of
    /// the tools that hold each in their name, title, description or parameter names; at
    /// least two tools in common), at `expand_weight` times that cosine. 0 turns it off.
    pub expand_weight: f32,
    pub expand_terms: usize,
}

impl Default for Ranking {
    fn default() -> Self {
        let mut weights = [0.0; FIELDS];
        let mut b = [0.0; FIELDS];
        for (field, w, norm) in [
            (NAME, 5.0, 0.3),
            (TITLE, 3.0, 0.3),
            (CATEGORY, 1.5, 0.0),
            (PARAM_NAMES, 1.5, 0.5),
            (DESCRIPTION, 1.0, 0.75),
            (PARAM_DESCRIPTIONS, 0.4, 0.75),
            (ANNOTATIONS, 0.3, 0.0),
            // Written as a user states a task, so their words are the ones queries use; as
            // strong as the description, length-normalised like prose (up to 5 of them).
            (EXAMPLES, 1.0, 0.75),
        ] {
            weights[field] = w;
            b[field] = norm;
        }
        Ranking {
            weights,
            b,
            k1: 1.2,
            boosts: true,
            synonyms: true,
            usage_weight: 0.1,
            verb_fields: [1.0; FIELDS],
            object_fields: [1.0; FIELDS],
            expand_weight: 0.0,
            expand_terms: 3,
        }
    }
}

// Extra signals (multipliers on the BM25F score).
const NAME_PARTIAL: f32 = 0.8;
const NAME_EXACT: f32 = 1.0;
const CATEGORY_MATCH: f32 = 0.1;
const PARAM_MATCH: f32 = 0.05;
const PARAM_MATCH_MAX: f32 = 0.15;
/// Tools sharing a name prefix with at least this many others of their server get the prefix
/// as a category.
const PREFIX_MIN_TOOLS: usize = 3;

#[derive(Debug, Clone)]
struct Posting {
    doc: u32,
    tf: [u16; FIELDS],
}

#[derive(Debug, Clone)]
struct DocInfo {
    /// Term ids of the tool name, in order.
    name_terms: Vec<u32>,
    category_terms: Vec<u32>,
    param_terms: Vec<u32>,
    /// The distinct terms of the fields [`CONTENT`] (vocabulary expansion counts them).
    content_terms: Vec<u32>,
    len: [u16; FIELDS],
}

/// The fields whose words say what a tool does, for vocabulary expansion.
const CONTENT: [usize; 4] = [NAME, TITLE, PARAM_NAMES, DESCRIPTION];
/// Query terms held by more tools than this are not expanded (too common to say much).
const EXPAND_MAX_DF: usize = 64;

/// The index over a list of [`Doc`]s.
#[derive(Debug, Clone)]
pub struct Index {
    docs: Vec<Doc>,
    info: Vec<DocInfo>,
    /// Term → id; `postings[id]` lists the documents that contain it.
    vocab: HashMap<String, u32>,
    postings: Vec<Vec<Posting>>,
    /// Per term: how many tools hold it in a [`CONTENT`] field.
    content_df: Vec<u32>,
    avg_len: [f32; FIELDS],
    ranking: Ranking,
    usage: Vec<u64>,
    max_usage: u64,
}

/// The raw shared prefix of a tool name: up to and including its first `_`, `-` or `.`
/// (`kubectl_`, `API-`), if the name has one with something after it.
fn name_prefix(name: &str) -> Option<&str> {
    let pos = name.find(['_', '-', '.'])?;
    (pos > 0 && pos + 1 < name.len()).then(|| &name[..=pos])
}

/// Turns text into term ids while the index is built, remembering each word's terms (catalogs
/// repeat their words a lot).
#[derive(Default)]
struct Analyzer {
    vocab: HashMap<String, u32>,
    words: HashMap<String, Vec<u32>>,
}

impl Analyzer {
    fn add(&mut self, text: &str, prose: bool, out: &mut Vec<u32>) {
        let Analyzer { vocab, words } = self;
        text::for_each_word(text, |w| {
            if text::skipped(w, prose) {
                return;
            }
            if let Some(ids) = words.get(w) {
                out.extend_from_slice(ids);
                return;
            }
            let ids: Vec<u32> = text::word_terms(w)
                .into_iter()
                .map(|t| {
                    let next = vocab.len() as u32;
                    *vocab.entry(t).or_insert(next)
                })
                .collect();
            out.extend_from_slice(&ids);
            words.insert(w.to_string(), ids);
        });
    }
}

impl Index {
    /// Indexes `docs` with the shipped [`Ranking`] and no usage prior.
    pub fn build(docs: Vec<Doc>) -> Index {
        let mut prefix_count: HashMap<(&str, &str), usize> = HashMap::new();
        for d in &docs {
            if let Some(p) = name_prefix(&d.tool) {
                *prefix_count.entry((d.server.as_str(), p)).or_default() += 1;
            }
        }
        let mut an = Analyzer::default();
        let mut postings: Vec<Vec<Posting>> = Vec::new();
        let mut content_df: Vec<u32> = Vec::new();
        let mut info = Vec::with_capacity(docs.len());
        let mut total = [0f64; FIELDS];
        let mut fields: [Vec<u32>; FIELDS] = Default::default();
        let mut tfs: HashMap<u32, [u16; FIELDS]> = HashMap::new();
        for (i, d) in docs.iter().enumerate() {
            for f in &mut fields {
                f.clear();
            }
            an.add(&d.tool, false, &mut fields[NAME]);
            an.add(&d.title, true, &mut fields[TITLE]);
            an.add(&d.server, true, &mut fields[CATEGORY]);
            if let Some(p) = name_prefix(&d.tool)
                .filter(|p| prefix_count.get(&(d.server.as_str(), *p)).is_some_and(|n| *n >= PREFIX_MIN_TOOLS))
            {
                an.add(p, true, &mut fields[CATEGORY]);
            }
            for (name, desc) in &d.params {
                an.add(name, true, &mut fields[PARAM_NAMES]);
                an.add(desc, true, &mut fields[PARAM_DESCRIPTIONS]);
            }
            an.add(&d.description, true, &mut fields[DESCRIPTION]);
            for a in &d.annotations {
                an.add(a, true, &mut fields[ANNOTATIONS]);
            }
            for e in &d.examples {
                an.add(e, true, &mut fields[EXAMPLES]);
            }
            tfs.clear();
            let mut len = [0u16; FIELDS];
            for (f, terms) in fields.iter().enumerate() {
                len[f] = terms.len().min(u16::MAX as usize) as u16;
                total[f] += len[f] as f64;
                for &t in terms {
                    let e = tfs.entry(t).or_default();
                    e[f] = e[f].saturating_add(1);
                }
            }
            if postings.len() < an.vocab.len() {
                postings.resize_with(an.vocab.len(), Vec::new);
            }
            let mut content_terms = Vec::new();
            if content_df.len() < an.vocab.len() {
                content_df.resize(an.vocab.len(), 0);
            }
            for (&t, &tf) in &tfs {
                postings[t as usize].push(Posting { doc: i as u32, tf });
                if CONTENT.iter().any(|&f| tf[f] > 0) {
                    content_terms.push(t);
                    content_df[t as usize] += 1;
                }
            }
            content_terms.sort_unstable();
            let set = |v: &Vec<u32>| {
                let mut v = v.clone();
                v.sort_unstable();
                v.dedup();
                v
            };
            info.push(DocInfo {
                name_terms: fields[NAME].clone(),
                category_terms: set(&fields[CATEGORY]),
                param_terms: set(&fields[PARAM_NAMES]),
                content_terms,
                len,
            });
        }
        let n = docs.len().max(1) as f64;
        let avg_len = total.map(|t| ((t / n) as f32).max(1.0));
        let usage = vec![0; docs.len()];
        Index {
            docs,
            info,
            vocab: an.vocab,
            postings,
            content_df,
            avg_len,
            ranking: Ranking::default(),
            usage,
            max_usage: 0,
        }
    }

    /// The same index ranked differently (benchmarks and tests compare rankings).
    pub fn with_ranking(mut self, ranking: Ranking) -> Index {
        self.ranking = ranking;
        self
    }

    /// Adds the usage prior: how often each `(server, tool)` was called. Tools not in the map
    /// count as never called.
    pub fn with_usage(mut self, counts: &HashMap<(String, String), u64>) -> Index {
        for (i, d) in self.docs.iter().enumerate() {
            self.usage[i] = counts.get(&(d.server.clone(), d.tool.clone())).copied().unwrap_or(0);
        }
        self.max_usage = self.usage.iter().copied().max().unwrap_or(0);
        self
    }

    pub fn docs(&self) -> &[Doc] {
        &self.docs
    }

    pub fn len(&self) -> usize {
        self.docs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// Whether a query has any searchable words (an empty or all-punctuation query has none).
    pub fn has_terms(query: &str) -> bool {
        !text::terms(query).is_empty()
    }

    /// The best `limit` tools for `query`, best first; only tools of `servers` unless it is
    /// empty. Tools that match no query term are never returned.
    pub fn search(&self, query: &str, limit: usize, servers: &[String]) -> Vec<Hit> {
        let r = &self.ranking;
        // Query terms with their weights and whether they are verbs: the words themselves, then
        // synonyms (lower weight).
        let mut q: Vec<(String, f32, bool)> = Vec::new();
        for w in text::words(query) {
            if text::is_stop_word(&w) {
                continue;
            }
            // Only the verbs-vs-objects weights and the expansion tell verbs apart.
            let verb = (r.verb_fields != r.object_fields || r.expand_weight > 0.0) && text::is_verb(&w);
            for t in text::terms(&w) {
                match q.iter_mut().find(|(x, _, _)| *x == t) {
                    Some(e) => e.1 = e.1.max(1.0),
                    None => q.push((t, 1.0, verb)),
                }
            }
            if r.synonyms {
                for s in text::synonyms(&w) {
                    if !q.iter().any(|(x, _, _)| *x == s) {
                        q.push((s, text::SYNONYM_WEIGHT, verb));
                    }
                }
            }
        }
        if q.is_empty() || limit == 0 {
            return Vec::new();
        }
        // Terms the catalog does not have can match nothing.
        let mut q: Vec<(u32, f32, bool)> =
            q.iter().filter_map(|(t, w, v)| self.vocab.get(t).map(|id| (*id, *w, *v))).collect();
        let primary: Vec<u32> = q.iter().filter(|(_, w, _)| *w >= 1.0).map(|(t, _, _)| *t).collect();
        if r.expand_weight > 0.0 {
            self.expand(&mut q);
        }
        let n = self.docs.len() as f32;
        let mut scores = vec![0f32; self.docs.len()];
        for &(term, qw, verb) in &q {
            let list = &self.postings[term as usize];
            let df = list.len() as f32;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            let kind = if verb { &r.verb_fields } else { &r.object_fields };
            for p in list {
                let len = &self.info[p.doc as usize].len;
                let mut tf = 0.0;
                for (f, &n) in p.tf.iter().enumerate() {
                    if n > 0 {
                        let norm = 1.0 - r.b[f] + r.b[f] * len[f] as f32 / self.avg_len[f];
                        tf += r.weights[f] * kind[f] * n as f32 / norm;
                    }
                }
                scores[p.doc as usize] += qw * idf * tf * (r.k1 + 1.0) / (r.k1 + tf);
            }
        }
        let q: Vec<(u32, f32)> = q.iter().map(|(t, w, _)| (*t, *w)).collect();
        let mut hits: Vec<Hit> = scores
            .iter()
            .enumerate()
            .filter(|(i, s)| **s > 0.0 && (servers.is_empty() || servers.contains(&self.docs[*i].server)))
            .map(|(i, &s)| Hit { doc: i, score: s * self.signals(i, &q, &primary) })
            .collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.doc.cmp(&b.doc)));
        hits.truncate(limit);
        hits
    }

    /// Vocabulary expansion: adds to `q`, for each of its words that is not a verb and is held
    /// by at most [`EXPAND_MAX_DF`] tools, the terms that share the most tools with it.
    fn expand(&self, q: &mut Vec<(u32, f32, bool)>) {
        let r = &self.ranking;
        let mut added: Vec<(u32, f32)> = Vec::new();
        let mut counts: HashMap<u32, u32> = HashMap::new();
        for &(t, w, verb) in q.iter() {
            let df_t = self.content_df[t as usize];
            if verb || w < 1.0 || df_t < 2 || df_t as usize > EXPAND_MAX_DF {
                continue;
            }
            counts.clear();
            for p in &self.postings[t as usize] {
                if CONTENT.iter().all(|&f| p.tf[f] == 0) {
                    continue;
                }
                for &u in &self.info[p.doc as usize].content_terms {
                    if u != t {
                        *counts.entry(u).or_default() += 1;
                    }
                }
            }
            let mut best: Vec<(u32, f32)> = counts
                .iter()
                .filter(|(_, c)| **c >= 2)
                .map(|(&u, &c)| (u, c as f32 / ((df_t as f32) * self.content_df[u as usize] as f32).sqrt()))
                .collect();
            best.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            for (u, cos) in best.into_iter().take(r.expand_terms) {
                let weight = r.expand_weight * cos * w;
                match added.iter_mut().find(|(x, _)| *x == u) {
                    Some(e) => e.1 = e.1.max(weight),
                    None => added.push((u, weight)),
                }
            }
        }
        for (u, weight) in added {
            if !q.iter().any(|(x, _, _)| *x == u) {
                q.push((u, weight, false));
            }
        }
    }

    /// The multiplier of the extra signals for document `i` (1.0 when they are off).
    fn signals(&self, i: usize, q: &[(u32, f32)], primary: &[u32]) -> f32 {
        let r = &self.ranking;
        let info = &self.info[i];
        let mut m = 1.0;
        if r.boosts {
            // Name coverage: F1 of name words found in the query and query words in the name
            // (a synonym counts at its weight).
            let mut hit = 0.0;
            for t in &info.name_terms {
                if let Some((_, w)) = q.iter().find(|(x, _)| x == t) {
                    hit += w;
                }
            }
            let denom = (info.name_terms.len() + primary.len()) as f32;
            if denom > 0.0 {
                m += NAME_PARTIAL * 2.0 * hit / denom;
            }
            if info.name_terms.len() == primary.len() && info.name_terms.iter().zip(primary).all(|(a, b)| a == b) {
                m += NAME_EXACT;
            }
            if primary.iter().any(|t| info.category_terms.contains(t) && !info.name_terms.contains(t)) {
                m += CATEGORY_MATCH;
            }
            let params = primary.iter().filter(|t| info.param_terms.contains(t)).count() as f32;
            m += (params * PARAM_MATCH).min(PARAM_MATCH_MAX);
        }
        if r.usage_weight > 0.0 && self.max_usage > 0 && self.usage[i] > 0 {
            m += r.usage_weight * ((1 + self.usage[i]) as f32).ln() / ((1 + self.max_usage) as f32).ln();
        }
        m
    }
}

/// The `k` of reciprocal rank fusion: how much the top ranks dominate (60 is the usual choice).
pub const RRF_K: f32 = 60.0;

/// Reciprocal rank fusion of several rankings (document positions, best first): a document
/// scores the sum of `1 / (k + rank)` over the rankings that hold it (ranks from 1). Best
/// first; ties go to the document that appears first in the earlier rankings.
pub fn fuse(rankings: &[Vec<usize>], k: f32) -> Vec<Hit> {
    let mut scores: Vec<(usize, f32, usize)> = Vec::new(); // (doc, score, first seen)
    let mut at: HashMap<usize, usize> = HashMap::new();
    for ranking in rankings {
        for (rank, &doc) in ranking.iter().enumerate() {
            let add = 1.0 / (k + rank as f32 + 1.0);
            match at.get(&doc) {
                Some(&i) => scores[i].1 += add,
                None => {
                    at.insert(doc, scores.len());
                    scores.push((doc, add, scores.len()));
                }
            }
        }
    }
    scores.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)));
    scores.into_iter().map(|(doc, score, _)| Hit { doc, score }).collect()
}

#[cfg(test)]
mod tests;
