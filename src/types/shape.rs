//! The shape of JSON values, learned from examples: which kinds a value took, the fields of its
//! objects with how often each was present, the shape of array elements, string formats and
//! small enums. Never the values themselves, except the short strings of an enum candidate
//! (at most [`MAX_ENUM_VALUES`] of at most [`MAX_ENUM_CHARS`] characters; the set is dropped
//! when it overflows, and strings that have a format are never kept).
//!
//! Everything is bounded: depth ([`MAX_DEPTH`]), properties per object ([`MAX_PROPS`]), the
//! length of a recorded field name ([`MAX_KEY_BYTES`]), nodes per shape ([`MAX_NODES`]) and
//! elements looked at per array ([`MAX_ARRAY_SAMPLE`]), so a hostile or huge result costs bounded
//! time and bounded space in the registry.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

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
    /// Distinct short values while there are few of them; `None` once they overflowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<BTreeSet<String>>,
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
    /// The shape of one value.
    pub fn of(value: &Value) -> Shape {
        let mut budget = MAX_NODES;
        let mut s = Shape::default();
        s.add(value, 0, &mut budget);
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
    fn add(&mut self, value: &Value, depth: usize, budget: &mut usize) {
        self.count += 1;
        if depth >= MAX_DEPTH {
            self.unrecorded += 1;
            return;
        }
        match value {
            Value::Null => self.null += 1,
            Value::Bool(_) => self.boolean += 1,
            Value::Number(_) => self.number += 1,
            Value::String(s) => self.string.get_or_insert_with(Default::default).add(s),
            Value::Array(items) => {
                let a = self.array.get_or_insert_with(Default::default);
                a.count += 1;
                let step = items.len().div_ceil(MAX_ARRAY_SAMPLE).max(1);
                for item in items.iter().step_by(step) {
                    a.items.add(item, depth + 1, budget);
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
                        rec.add(v, depth + 1, budget);
                    }
                    return;
                }
                for (k, v) in map {
                    if let Some(f) = o.fields.get_mut(k) {
                        f.add(v, depth + 1, budget);
                    } else if o.fields.len() < MAX_PROPS && *budget > 0 && k.len() <= MAX_KEY_BYTES {
                        *budget -= 1;
                        let mut f = Shape::default();
                        f.add(v, depth + 1, budget);
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
}

impl StringShape {
    fn add(&mut self, s: &str) {
        self.count += 1;
        let format = string_format(s);
        self.format = match (self.format.take(), format) {
            (None, Some(f)) if self.count == 1 => Some(f.to_string()),
            (None, _) if self.count == 1 => None,
            (Some(prev), Some(f)) if prev == f => Some(prev),
            (None, None) => None,
            _ => Some("mixed".into()),
        };
        let keep = format.is_none() && s.chars().count() <= MAX_ENUM_CHARS && !s.contains(char::is_control);
        if self.count == 1 {
            self.values = keep.then(|| BTreeSet::from([s.to_string()]));
        } else if let Some(values) = self.values.as_mut() {
            if keep && (values.contains(s) || values.len() < MAX_ENUM_VALUES) {
                values.insert(s.to_string());
            } else {
                self.values = None;
            }
        }
    }

    fn merge(&mut self, other: &StringShape) {
        let was_empty = self.count == 0;
        self.count += other.count;
        self.format = match (self.format.take(), other.format.clone()) {
            (a, b) if a == b => a,
            _ => Some("mixed".into()),
        };
        if was_empty {
            self.values = other.values.clone();
            return;
        }
        self.values = match (self.values.take(), &other.values) {
            (Some(mut mine), Some(theirs)) => {
                mine.extend(theirs.iter().cloned());
                (mine.len() <= MAX_ENUM_VALUES).then_some(mine)
            }
            _ => None,
        };
    }

    /// The format every value had (not `mixed`).
    pub fn known_format(&self) -> Option<&str> {
        self.format.as_deref().filter(|f| *f != "mixed")
    }
}
