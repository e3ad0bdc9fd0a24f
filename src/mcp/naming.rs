//! A tool's name where MCP names must become other names: direct mode's LLM tools
//! (`mcp_<server>_<tool>`) and `serve`'s proxied tools (`<server>_<tool>`). One rule for both, so
//! a tool reads the same to a model whichever way it reaches it.

use std::collections::HashSet;

/// Longest tool name Anthropic and OpenAI accept (and MCP clients show without cutting).
pub const MAX_NAME_LEN: usize = 64;

/// `<prefix><server>_<tool>`, sanitised, at most [`MAX_NAME_LEN`] characters (a long one keeps
/// a prefix plus a hash of the original names), unique within `taken` (`_2`, `_3`, ...).
pub fn unique_name(prefix: &str, server: &str, tool: &str, taken: &mut HashSet<String>) -> String {
    let base = sanitize(&format!("{prefix}{server}_{tool}"));
    let base = if base.len() > MAX_NAME_LEN {
        // Keep it recognisable and still distinct: a prefix plus a hash of the original names.
        let hash = crate::util::hash::stable_hex(&[server.as_bytes(), tool.as_bytes()]);
        format!("{}_{}", &base[..MAX_NAME_LEN - 9], &hash[..8])
    } else {
        base
    };
    let mut name = base.clone();
    let mut n = 2;
    while taken.contains(&name) {
        let suffix = format!("_{n}");
        let keep = base.len().min(MAX_NAME_LEN - suffix.len());
        name = format!("{}{suffix}", &base[..keep]);
        n += 1;
    }
    taken.insert(name.clone());
    name
}

/// Every character outside `[a-zA-Z0-9_-]` becomes `_` (the result is ASCII).
pub fn sanitize(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_names_keep_a_prefix_and_a_hash_and_collisions_get_a_number() {
        let mut taken = HashSet::new();
        let long = "x".repeat(80);
        let a = unique_name("mcp_", "s", &long, &mut taken);
        let b = unique_name("mcp_", "s", &format!("{long}y"), &mut taken);
        assert_eq!((a.len(), b.len()), (MAX_NAME_LEN, MAX_NAME_LEN));
        assert_ne!(a, b, "the hash tells them apart");
        assert!(a.starts_with("mcp_s_xxx"), "{a}");
        assert_eq!(unique_name("", "f", "a.b", &mut taken), "f_a_b");
        assert_eq!(unique_name("", "f", "a_b", &mut taken), "f_a_b_2");
        assert_eq!(unique_name("", "my server", "café", &mut taken), "my_server_caf_");
    }
}
