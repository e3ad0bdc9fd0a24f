//! The render cache: lets a re-run with unchanged tools skip schema conversion and rendering,
//! which is most of the cost of generating a thousand tools.
//!
//! The manifest records, per tool file, a key over everything the file is made from (the tool's
//! JSON, its names, and a salt over this agent version, the codegen sources and the templates)
//! and a hash of the content written. A file is reused only if its key matches and the file on
//! disk still hashes to the recorded content; anything else (an edited or missing file, another
//! agent build, `--clean`) renders it again. Only deterministic values are recorded (no mtimes):
//! the manifest is part of the tree and must be byte-identical for the same tools.

use crate::util::hash::stable_hex;
use std::collections::BTreeMap;
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
        stable_hex(&parts)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_salt_is_stable_within_a_build() {
        assert_eq!(salt(), salt());
    }
}
