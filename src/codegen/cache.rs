//! The render cache: lets a re-run with unchanged tools skip schema conversion and rendering,
//! which is most of the cost of generating a thousand tools.
//!
//! The manifest records, per tool file, a key over everything the file is made from (the tool's
//! JSON, its names, and a salt over this agent version, the codegen sources and the templates)
//! and a hash of the content written. A file is reused only if its key matches and the file on
//! disk still hashes to the recorded content; anything else (an edited or missing file, another
//! agent build, `--clean`) renders it again. Only deterministic values are recorded (no mtimes):
//! the manifest is part of the tree and must be byte-identical for the same tools.

use std::collections::BTreeMap;
use std::hash::Hasher;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// What the cache keeps about one tool file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// Hash of the inputs of the file.
    pub key: String,
    /// Hash of the content written.
    pub content: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The tool's output type comes from its `outputSchema`.
    #[serde(default)]
    pub typed_output: bool,
    /// The function's argument may be omitted.
    #[serde(default)]
    pub input_optional: bool,
    /// The learned result type the file was rendered with (see `types`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learned: Option<crate::types::Entry>,
}

/// The cache part of the manifest (the tool list is skipped when reading it).
#[derive(Debug, Default, Deserialize)]
pub struct Head {
    pub generator: String,
    #[serde(default)]
    pub salt: String,
    #[serde(default)]
    pub files: BTreeMap<String, Entry>,
}

/// The manifest's hash: SipHash-1-3 with the keys (0, 0), each part fed as its length (u64,
/// little-endian) then its bytes, the 64-bit result as 16 hex digits.
///
/// Stable by construction: the algorithm is the published one (the `siphasher` crate), unlike
/// std's `DefaultHasher`, whose algorithm may change between Rust releases and would make every
/// manifest churn. Not cryptographic: it only has to notice that a tool or a file changed; a
/// false match needs a 2^-64 collision between two versions of the same file.
pub fn hash_hex(parts: &[&[u8]]) -> String {
    let mut h = siphasher::sip::SipHasher13::new_with_keys(0, 0);
    for p in parts {
        h.write(&(p.len() as u64).to_le_bytes());
        h.write(p);
    }
    format!("{:016x}", h.finish())
}

/// Changes whenever anything that shapes a tool file may have changed: the agent version, the
/// codegen sources (embedded at compile time) and the templates.
pub fn salt() -> &'static str {
    static SALT: OnceLock<String> = OnceLock::new();
    SALT.get_or_init(|| {
        let sources: [&str; 8] = [
            env!("CARGO_PKG_VERSION"),
            include_str!("mod.rs"),
            include_str!("cache.rs"),
            include_str!("naming.rs"),
            include_str!("render.rs"),
            include_str!("schema.rs"),
            include_str!("ts.rs"),
            include_str!("learned.rs"),
        ];
        let mut parts: Vec<&[u8]> = sources.iter().map(|s| s.as_bytes()).collect();
        let templates = super::render::template_sources();
        parts.extend(templates.iter().map(|s| s.as_bytes()));
        hash_hex(&parts)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOLDEN_EMPTY: &str = "d1fba762150c532c";
    const GOLDEN_TWO: &str = "943d3cf601e1abc7";

    #[test]
    fn hashes_are_stable_and_sensitive() {
        assert_eq!(hash_hex(&[b"a", b"b"]), hash_hex(&[b"a", b"b"]));
        assert_ne!(hash_hex(&[b"a", b"b"]), hash_hex(&[b"ab"]), "part boundaries count");
        assert_eq!(hash_hex(&[b"x"]).len(), 16);
        // Fixed values: a change here means every generated manifest changes.
        assert_eq!(hash_hex(&[]), GOLDEN_EMPTY);
        assert_eq!(hash_hex(&[b"agent", b"manifest"]), GOLDEN_TWO);
        assert_eq!(salt(), salt());
    }
}
