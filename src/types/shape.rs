//! The shape of JSON values, learned from examples: which kinds a value took, the fields of its
//! objects with how often each was present, the shape of array elements, string formats and
//! small enums. Never the values themselves: a short string that could be an enum member is
//! kept as its keyed hash ([`super::key`]) with how often it was seen and in how many distinct
//! results ([`Candidate`]); at most [`MAX_ENUM_VALUES`] of at most [`MAX_ENUM_CHARS`]
//! characters per place, and none once a string there overflowed the set, had a format or looked
//! like a secret or an identifier ([`looks_sensitive`]). A value is written in clear only when
//! its place has earned an enum ([`EnumRules`]), by [`Shape::promote`].
//!
//! Everything is bounded: depth ([`MAX_DEPTH`]), properties per object ([`MAX_PROPS`]), the
//! length of a recorded field name ([`MAX_KEY_BYTES`]), nodes per shape ([`MAX_NODES`]) and
//! elements looked at per array ([`MAX_ARRAY_SAMPLE`]), so a hostile or huge result costs bounded
//! time and bounded space in the registry.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::key::HashKey;

/// Deeper values are recorded as "not recorded" (`unknown` in TypeScript).
pub const MAX_DEPTH: usize = 8;
/// Fields beyond this many per object are not recorded (the object is marked `overflow`).
pub const MAX_PROPS: usize = 200;
/// Nodes (shapes) per recorded result shape; new fields beyond it are not recorded.
pub const MAX_NODES: usize = 2_000;
/// Longer field names are not recorded (the object is marked `overflow`): a name is part of the
/// shape, and a result with megabyte-long names would otherwise copy them into the registry.
pub const MAX_KEY_BYTES: usize = 256;
/// Array elements looked at per array (evenly spaced over the array).
pub const MAX_ARRAY_SAMPLE: usize = 64;
/// A string enum candidate keeps at most this many distinct values...
pub const MAX_ENUM_VALUES: usize = 8;
/// ... of at most this many characters each.
pub const MAX_ENUM_CHARS: usize = 24;
/// Distinct results counted per candidate (past it the count stays, the marks are dropped);
/// `mcp.types.enum_min_results` is at most this.
pub const MAX_RESULT_MARKS: usize = 16;
/// An object with at least this many keys, nearly all of them id-like, is a record.
const RECORD_MIN_KEYS: usize = 8;

/// The shape of the values seen at one place of a result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Shape {
    /// Values merged into this shape.
    pub count: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub null: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub boolean: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub number: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub string: Option<StringShape>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array: Option<Box<ArrayShape>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<ObjectShape>,
    /// Values that were not looked at (deeper than [`MAX_DEPTH`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unrecorded: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What the strings at one place had in common.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StringShape {
    pub count: u64,
    /// The format every string matched (`date-time`, `date`, `uri`, `email`, `uuid`), or
    /// `mixed` once two differed; absent while none had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// Enum candidates by the keyed hash of their value, while there are few of them and none
    /// looked sensitive; `None` once not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidates: Option<BTreeMap<String, Candidate>>,
    /// The plaintext candidates of a version 1 registry: read only to know the place still had
    /// candidates (they restart, counted from scratch), never written again.
    #[serde(default, rename = "values", skip_serializing)]
    legacy_values: Option<serde::de::IgnoredAny>,
    /// The plaintexts of candidates this process saw, by hash: in memory until [`Shape::promote`]
    /// decides, never written.
    #[serde(skip)]
    plain: BTreeMap<String, String>,
}

/// One enum candidate of a string place.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// Strings seen with this value here.
    pub count: u64,
    /// Distinct results it was seen in, counted up to [`MAX_RESULT_MARKS`].
    #[serde(default)]
    pub results: usize,
    /// Marks (keyed hashes) of those results while there are fewer than [`MAX_RESULT_MARKS`]
    /// (then the count is all that is needed).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub marks: BTreeSet<String>,
    /// The value in clear, once the place earned an enum ([`Shape::promote`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

impl Candidate {
    /// Counts the result marked `m` (once).
    fn mark(&mut self, m: &str) {
        if self.results >= MAX_RESULT_MARKS || self.marks.contains(m) {
            return;
        }
        self.marks.insert(m.to_string());
        self.results = self.marks.len();
        if self.results >= MAX_RESULT_MARKS {
            self.saturate();
        }
    }

    fn saturate(&mut self) {
        self.results = MAX_RESULT_MARKS;
        self.marks.clear();
    }

    fn absorb(&mut self, other: &Candidate) {
        self.count += other.count;
        if self.results >= MAX_RESULT_MARKS || other.results >= MAX_RESULT_MARKS {
            self.saturate();
        } else {
            for m in &other.marks {
                self.mark(m);
            }
        }
        if self.value.is_none() {
            self.value = other.value.clone();
        }
    }
}

/// When a string place becomes an enum (`mcp.types.enum_min_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnumRules {
    /// Distinct values.
    pub min_values: usize,
    /// Strings observed there (all of them candidates).
    pub min_observations: u64,
    /// Distinct results each value was seen in (a result seen twice counts once).
    pub min_results: usize,
}

impl Default for EnumRules {
    fn default() -> Self {
        EnumRules { min_values: 2, min_observations: 20, min_results: 3 }
    }
}

impl EnumRules {
    fn hold(&self, candidates: &BTreeMap<String, Candidate>) -> bool {
        candidates.len() >= self.min_values.max(1)
            && candidates.values().map(|c| c.count).sum::<u64>() >= self.min_observations
            && candidates.values().all(|c| c.results >= self.min_results)
    }
}

/// Whether a string looks like a secret or an identifier, which no enum may hold: an e-mail
/// address, a UUID, a JWT or a known key prefix, a long run of digits, a long hex string, or a
/// token-like mix of letters and digits (high entropy).
pub fn looks_sensitive(s: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "eyJ",
        "sk-",
        "sk_",
        "pk_",
        "rk_",
        "ghp_",
        "gho_",
        "ghu_",
        "ghs_",
        "ghr_",
        "github_pat_",
        "glpat-",
        "xox",
        "xapp-",
        "AKIA",
        "ASIA",
        "AIza",
        "ya29.",
        "npm_",
        "hf_",
        "pypi-",
        "shpat_",
        "sq0",
        "-----BEGIN",
        "Bearer ",
        "Basic ",
        "SG.",
        "key-",
        "tok_",
        "token_",
        "secret_",
        "whsec_",
        "dapi",
        "lin_",
    ];
    if PREFIXES.iter().any(|p| s.starts_with(p)) || matches!(string_format(s), Some("email" | "uuid")) {
        return true;
    }
    if s.split_once('@').is_some_and(|(u, d)| !u.trim().is_empty() && d.contains('.')) {
        return true;
    }
    let b = s.as_bytes();
    let digits = b.iter().filter(|c| c.is_ascii_digit()).count();
    let longest_run = b.split(|c| !c.is_ascii_digit()).map(<[u8]>::len).max().unwrap_or(0);
    if longest_run >= 6 || (b.len() >= 6 && digits * 2 >= b.len()) {
        return true;
    }
    if b.len() >= 8 && digits > 0 && b.iter().all(u8::is_ascii_hexdigit) {
        return true;
    }
    // Token-like: long enough, no spaces, letters and digits mixed, and high entropy per character.
    let upper = b.iter().any(u8::is_ascii_uppercase);
    let lower = b.iter().any(u8::is_ascii_lowercase);
    let classes = usize::from(upper) + usize::from(lower) + usize::from(digits > 0);
    b.len() >= 10 && !s.contains(' ') && digits > 0 && classes >= 2 && entropy(b) >= 3.0
}

/// Shannon entropy of the bytes of `b`, in bits per byte.
fn entropy(b: &[u8]) -> f64 {
    let mut counts = [0u32; 256];
    for &c in b {
        counts[c as usize] += 1;
    }
    let n = b.len() as f64;
    counts.iter().filter(|&&c| c > 0).map(|&c| c as f64 / n).map(|p| -p * p.log2()).sum()
}

/// What adding one result needs beyond the value: the key to hash strings with (none: no
/// candidate is recorded) and the result's mark, computed once a candidate needs it.
pub struct Observe<'a> {
    key: Option<&'a HashKey>,
    result: &'a Value,
    mark: Option<String>,
}

impl<'a> Observe<'a> {
    pub fn new(key: Option<&'a HashKey>, result: &'a Value) -> Observe<'a> {
        Observe { key, result, mark: None }
    }

    fn mark(&mut self, key: &HashKey) -> String {
        self.mark.get_or_insert_with(|| key.result(self.result)).clone()
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ArrayShape {
    pub count: u64,
    /// The shape of the elements looked at.
    pub items: Shape,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ObjectShape {
    pub count: u64,
    /// Field name → its shape (`count` = how many objects had it).
    #[serde(default)]
    pub fields: BTreeMap<String, Shape>,
    /// Set when the object is a record (id-like keys): the shape of its values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<Box<Shape>>,
    /// Some fields were not recorded (the property or node cap).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub overflow: bool,
}

/// The string formats worth knowing.
pub fn string_format(s: &str) -> Option<&'static str> {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| b.get(r).is_some_and(|x| x.iter().all(u8::is_ascii_digit));
    let is_date = b.len() >= 10 && digits(0..4) && b[4] == b'-' && digits(5..7) && b[7] == b'-' && digits(8..10);
    if is_date && b.len() == 10 {
        return Some("date");
    }
    if is_date && matches!(b[10], b'T' | b't' | b' ') && b.len() >= 19 && digits(11..13) && b[13] == b':' {
        return Some("date-time");
    }
    if b.len() == 36
        && b.iter()
            .enumerate()
            .all(|(i, c)| if matches!(i, 8 | 13 | 18 | 23) { *c == b'-' } else { c.is_ascii_hexdigit() })
    {
        return Some("uuid");
    }
    if s.len() <= 2048 && !s.contains(char::is_whitespace) {
        if let Some((scheme, rest)) = s.split_once("://")
            && !scheme.is_empty()
            && scheme.chars().all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '-' || c == '.')
            && !rest.is_empty()
        {
            return Some("uri");
        }
        if let Some((user, domain)) = s.split_once('@')
            && !user.is_empty()
            && domain.contains('.')
            && !domain.starts_with('.')
            && !domain.ends_with('.')
            && !domain.contains('@')
            && s.len() <= 254
        {
            return Some("email");
        }
    }
    None
}

/// A key that names an entity rather than a field: digits, a uuid, a long hex string.
fn id_like(key: &str) -> bool {
    (!key.is_empty() && key.len() <= 64 && key.bytes().all(|c| c.is_ascii_digit()))
        || string_format(key) == Some("uuid")
        || (key.len() >= 8 && key.bytes().all(|c| c.is_ascii_hexdigit()))
        || (key.len() >= 6
            && key.bytes().any(|c| c.is_ascii_digit())
            && key.bytes().filter(u8::is_ascii_digit).count() * 2 >= key.len())
}

fn record_like(map: &serde_json::Map<String, Value>) -> bool {
    map.len() > MAX_PROPS
        || (map.len() >= RECORD_MIN_KEYS && map.keys().filter(|k| id_like(k)).count() * 10 >= map.len() * 9)
}

impl Shape {
    /// The shape of one value, without enum candidates.
    pub fn of(value: &Value) -> Shape {
        Shape::observe(value, None)
    }

    /// The shape of one result, its short strings kept as enum candidates hashed with `key`.
    pub fn observe(value: &Value, key: Option<&HashKey>) -> Shape {
        let mut budget = MAX_NODES;
        let mut s = Shape::default();
        s.add(value, 0, &mut budget, &mut Observe::new(key, value));
        s
    }

    /// Nodes in this shape (itself, its fields, elements and record values, recursively).
    pub fn nodes(&self) -> usize {
        1 + self.array.as_ref().map_or(0, |a| a.items.nodes())
            + self.object.as_ref().map_or(0, |o| {
                o.fields.values().map(Shape::nodes).sum::<usize>() + o.record.as_ref().map_or(0, |r| r.nodes())
            })
    }

    /// Adds one value to this shape. `budget` is the number of new nodes still allowed.
    fn add(&mut self, value: &Value, depth: usize, budget: &mut usize, obs: &mut Observe) {
        self.count += 1;
        if depth >= MAX_DEPTH {
            self.unrecorded += 1;
            return;
        }
        match value {
            Value::Null => self.null += 1,
            Value::Bool(_) => self.boolean += 1,
            Value::Number(_) => self.number += 1,
            Value::String(s) => self.string.get_or_insert_with(Default::default).add(s, obs),
            Value::Array(items) => {
                let a = self.array.get_or_insert_with(Default::default);
                a.count += 1;
                let step = items.len().div_ceil(MAX_ARRAY_SAMPLE).max(1);
                for item in items.iter().step_by(step) {
                    a.items.add(item, depth + 1, budget, obs);
                }
            }
            Value::Object(map) => {
                let o = self.object.get_or_insert_with(Default::default);
                o.count += 1;
                if o.record.is_none() && o.fields.is_empty() && record_like(map) {
                    o.record = Some(Box::default());
                }
                if let Some(rec) = o.record.as_mut() {
                    let step = map.len().div_ceil(MAX_ARRAY_SAMPLE).max(1);
                    for v in map.values().step_by(step) {
                        rec.add(v, depth + 1, budget, obs);
                    }
                    return;
                }
                for (k, v) in map {
                    if let Some(f) = o.fields.get_mut(k) {
                        f.add(v, depth + 1, budget, obs);
                    } else if o.fields.len() < MAX_PROPS && *budget > 0 && k.len() <= MAX_KEY_BYTES {
                        *budget -= 1;
                        let mut f = Shape::default();
                        f.add(v, depth + 1, budget, obs);
                        o.fields.insert(k.clone(), f);
                    } else {
                        o.overflow = true;
                    }
                }
            }
        }
    }

    /// The length of this shape as compact JSON (what it adds to the registry, before indentation).
    pub fn encoded_len(&self) -> usize {
        struct Count(usize);
        impl std::io::Write for Count {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0 += buf.len();
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut count = Count(0);
        // Writing plain data to a counter cannot fail; were it to, the shape counts as too large.
        match serde_json::to_writer(&mut count, self) {
            Ok(()) => count.0,
            Err(_) => usize::MAX,
        }
    }

    /// Merges `other` (learned elsewhere, e.g. by another process) into this shape, within the caps.
    pub fn merge(&mut self, other: &Shape) {
        let mut budget = MAX_NODES.saturating_sub(self.nodes());
        self.merge_within(other, &mut budget);
    }

    fn merge_within(&mut self, other: &Shape, budget: &mut usize) {
        self.count += other.count;
        self.null += other.null;
        self.boolean += other.boolean;
        self.number += other.number;
        self.unrecorded += other.unrecorded;
        if let Some(s) = &other.string {
            match &mut self.string {
                Some(mine) => mine.merge(s),
                None => self.string = Some(s.clone()),
            }
        }
        if let Some(a) = &other.array {
            let mine = self.array.get_or_insert_with(Default::default);
            mine.count += a.count;
            mine.items.merge_within(&a.items, budget);
        }
        if let Some(o) = &other.object {
            let mine = self.object.get_or_insert_with(Default::default);
            mine.count += o.count;
            mine.overflow |= o.overflow;
            if o.record.is_some() && mine.record.is_none() {
                // The other side saw a record: the fields seen here are its values.
                let mut rec = Shape::default();
                for f in std::mem::take(&mut mine.fields).values() {
                    rec.merge_within(f, budget);
                }
                mine.record = Some(Box::new(rec));
            }
            match mine.record.as_mut() {
                Some(rec) => {
                    if let Some(r) = &o.record {
                        rec.merge_within(r, budget);
                    }
                    for f in o.fields.values() {
                        rec.merge_within(f, budget);
                    }
                }
                None => {
                    for (k, f) in &o.fields {
                        if let Some(m) = mine.fields.get_mut(k) {
                            m.merge_within(f, budget);
                        } else if mine.fields.len() < MAX_PROPS && *budget >= f.nodes() && k.len() <= MAX_KEY_BYTES {
                            *budget -= f.nodes();
                            mine.fields.insert(k.clone(), f.clone());
                        } else {
                            mine.overflow = true;
                        }
                    }
                }
            }
        }
    }

    /// How many kinds of non-null value were seen here, and the count of the most frequent.
    fn dominant(&self) -> u64 {
        [
            self.boolean,
            self.number,
            self.string.as_ref().map_or(0, |s| s.count),
            self.array.as_ref().map_or(0, |a| a.count),
            self.object.as_ref().map_or(0, |o| o.count),
        ]
        .into_iter()
        .max()
        .unwrap_or(0)
    }

    /// The share of the non-null values seen here that had the most frequent kind (`None`
    /// when all were null or not recorded).
    pub fn type_consistency(&self) -> Option<f64> {
        let non_null = self.count.saturating_sub(self.null + self.unrecorded);
        (non_null > 0).then(|| self.dominant() as f64 / non_null as f64)
    }

    /// The type consistency of every field (recursively). Empty when the shape has no fields.
    pub fn field_consistencies(&self, out: &mut Vec<f64>) {
        if let Some(o) = &self.object {
            for f in o.fields.values() {
                out.extend(f.type_consistency());
                f.field_consistencies(out);
            }
            if let Some(r) = &o.record {
                r.field_consistencies(out);
            }
        }
        if let Some(a) = &self.array {
            a.items.field_consistencies(out);
        }
    }

    /// The mean field consistency (1.0 for a shape without fields).
    pub fn consistency(&self) -> f64 {
        let mut v = Vec::new();
        self.field_consistencies(&mut v);
        if v.is_empty() { 1.0 } else { v.iter().sum::<f64>() / v.len() as f64 }
    }

    /// Every string place of this shape, recursively.
    fn strings_mut(&mut self, f: &mut impl FnMut(&mut StringShape)) {
        if let Some(st) = self.string.as_mut() {
            f(st);
        }
        if let Some(a) = self.array.as_mut() {
            a.items.strings_mut(f);
        }
        if let Some(o) = self.object.as_mut() {
            o.fields.values_mut().for_each(|s| s.strings_mut(f));
            if let Some(r) = o.record.as_mut() {
                r.strings_mut(f);
            }
        }
    }

    /// Decides the enums: where `rules` hold, the candidates this process saw get their value
    /// written; where they do not (any more), no value stays. The plaintexts kept in memory
    /// are dropped either way.
    pub fn promote(&mut self, rules: &EnumRules) {
        self.strings_mut(&mut |st| {
            let plain = std::mem::take(&mut st.plain);
            let Some(cands) = st.candidates.as_mut() else { return };
            let hold = rules.hold(cands);
            for (h, c) in cands.iter_mut() {
                if !hold {
                    c.value = None;
                } else if c.value.is_none() {
                    c.value = plain.get(h).cloned();
                }
            }
        });
    }

    /// Whether a string place was read with plaintext candidates of a version 1 registry (a
    /// copy of such an entry, e.g. in the generated tree's manifest, is to be written again).
    pub fn has_legacy_values(&self) -> bool {
        self.string.as_ref().is_some_and(|st| st.legacy_values.is_some())
            || self.array.as_ref().is_some_and(|a| a.items.has_legacy_values())
            || self.object.as_ref().is_some_and(|o| {
                o.fields.values().any(Shape::has_legacy_values)
                    || o.record.as_ref().is_some_and(|r| r.has_legacy_values())
            })
    }

    /// Drops every candidate's counts and value (the places keep collecting): for hashes made
    /// with another key, and for version 1 registries, whose candidates were plaintext.
    pub fn restart_candidates(&mut self) {
        self.strings_mut(&mut |st| {
            if st.legacy_values.take().is_some() || st.candidates.is_some() {
                st.candidates = Some(BTreeMap::new());
            }
            st.plain.clear();
        });
    }
}

impl StringShape {
    fn add(&mut self, s: &str, obs: &mut Observe) {
        self.count += 1;
        let format = string_format(s);
        self.format = match (self.format.take(), format) {
            (None, Some(f)) if self.count == 1 => Some(f.to_string()),
            (None, _) if self.count == 1 => None,
            (Some(prev), Some(f)) if prev == f => Some(prev),
            (None, None) => None,
            _ => Some("mixed".into()),
        };
        // A place that keeps no candidates any more never will: nothing more to look at.
        if self.count > 1 && self.candidates.is_none() {
            return;
        }
        let keep = format.is_none()
            && s.chars().count() <= MAX_ENUM_CHARS
            && !s.contains(char::is_control)
            && !looks_sensitive(s);
        if self.count == 1 {
            self.candidates = keep.then(BTreeMap::new);
        }
        let Some(cands) = self.candidates.as_mut() else { return };
        if !keep {
            self.candidates = None;
            self.plain.clear();
            return;
        }
        // Without a key nothing is recorded about the value; the place keeps collecting.
        let Some(key) = obs.key else { return };
        let h = key.value(s);
        if !cands.contains_key(&h) && cands.len() >= MAX_ENUM_VALUES {
            self.candidates = None;
            self.plain.clear();
            return;
        }
        let mark = obs.mark(key);
        let c = cands.entry(h.clone()).or_default();
        c.count += 1;
        c.mark(&mark);
        self.plain.entry(h).or_insert_with(|| s.to_string());
    }

    fn merge(&mut self, other: &StringShape) {
        let was_empty = self.count == 0;
        self.count += other.count;
        self.format = match (self.format.take(), other.format.clone()) {
            (a, b) if a == b => a,
            _ => Some("mixed".into()),
        };
        if was_empty {
            self.candidates = other.candidates.clone();
            self.plain = other.plain.clone();
            return;
        }
        self.candidates = match (self.candidates.take(), &other.candidates) {
            (Some(mut mine), Some(theirs)) => {
                for (h, c) in theirs {
                    mine.entry(h.clone()).or_default().absorb(c);
                }
                (mine.len() <= MAX_ENUM_VALUES).then_some(mine)
            }
            _ => None,
        };
        if self.candidates.is_some() {
            self.plain.extend(other.plain.iter().map(|(h, v)| (h.clone(), v.clone())));
        } else {
            self.plain.clear();
        }
    }

    /// The enum this place earned: every candidate's value, sorted (`None` while one is not
    /// written, or there are none).
    pub fn enum_values(&self) -> Option<BTreeSet<&str>> {
        let cands = self.candidates.as_ref().filter(|c| !c.is_empty())?;
        cands.values().map(|c| c.value.as_deref()).collect()
    }

    /// The format every value had (not `mixed`).
    pub fn known_format(&self) -> Option<&str> {
        self.format.as_deref().filter(|f| *f != "mixed")
    }
}
