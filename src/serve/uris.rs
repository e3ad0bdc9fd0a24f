//! The reversible form serve gives a resource URI (or URI template) that more than one upstream
//! server could answer: `agent:<server>/<original>`, the server name percent-encoded outside
//! `[A-Za-z0-9._~-]`. The result is still a URI (scheme `agent`, the original as its path) and
//! a template stays a template: its expansions carry the same prefix, so a read of one goes
//! back to the server that listed the template.

/// The scheme of rewritten URIs.
pub const SCHEME: &str = "agent:";

/// `agent:<server>/<uri>`.
pub fn wrap(server: &str, uri: &str) -> String {
    let mut out = String::with_capacity(SCHEME.len() + server.len() + uri.len() + 1);
    out.push_str(SCHEME);
    for b in server.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out.push('/');
    out.push_str(uri);
    out
}

/// The server and original URI of a [`wrap`]ped URI; `None` for any other URI.
pub fn unwrap(uri: &str) -> Option<(String, &str)> {
    let rest = uri.strip_prefix(SCHEME)?;
    let (server, original) = rest.split_once('/')?;
    let mut bytes = Vec::with_capacity(server.len());
    let raw = server.as_bytes();
    let mut i = 0;
    while i < raw.len() {
        match raw[i] {
            b'%' => {
                let hex = std::str::from_utf8(raw.get(i + 1..i + 3)?).ok()?;
                bytes.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b if b.is_ascii_alphanumeric() || b"-._~".contains(&b) => {
                bytes.push(b);
                i += 1;
            }
            _ => return None,
        }
    }
    if bytes.is_empty() {
        return None;
    }
    Some((String::from_utf8(bytes).ok()?, original))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapped_uris_and_templates_come_back_whole() {
        for (server, uri) in [
            ("everything", "demo://resource/static/document/architecture.md"),
            ("my server/ü", "file:///a b/c?x=1#f"),
            ("a", "agent:b/x"),
            ("t", "demo://resource/dynamic/text/{resourceId}"),
        ] {
            let w = wrap(server, uri);
            assert!(w.starts_with(SCHEME), "{w}");
            assert_eq!(unwrap(&w), Some((server.to_string(), uri)), "{w}");
        }
        assert_eq!(wrap("my server", "x://y"), "agent:my%20server/x://y");
        // A template's expansion unwraps to the expansion of the original template.
        let t = wrap("t", "demo://resource/dynamic/text/{resourceId}");
        let expanded = t.replace("{resourceId}", "3");
        assert_eq!(unwrap(&expanded), Some(("t".into(), "demo://resource/dynamic/text/3")));
        for bad in ["demo://x", "agent:", "agent:/x", "agent:a b/x", "agent:%zz/x", "agent:%ff/x", "agent:noslash"] {
            assert_eq!(unwrap(bad), None, "{bad}");
        }
    }
}
