//! What `serve` tells its clients carries no absolute path of this machine: a remote client
//! learns nothing of where the workspace, the project or the home directory are. The texts serve
//! writes itself (script outcomes, errors, search reports) pass through [`Scrubber::text`]; the
//! results of proxied tools that succeeded are the upstream server's data and pass untouched.
//!
//! The workspace becomes `<workspace>` (`file://` URLs of its files become their relative path,
//! as script stacks show them), its ancestors `<workspace>/..`, `<workspace>/../..`, and so on
//! (down to two components: `/home/me` is one, `/home` is not), the home directory `~`.

use std::borrow::Cow;
use std::path::{Component, Path};

/// Replaces the paths it was made with (longest first, whole path components only).
#[derive(Debug, Clone, Default)]
pub struct Scrubber {
    pairs: Vec<(String, String)>,
}

impl Scrubber {
    pub fn new(workspace: &Path, home: Option<&Path>) -> Scrubber {
        let mut pairs = Vec::new();
        // First, so that home is `~` also when it is one of the workspace's ancestors.
        if let Some(h) = home.and_then(Path::to_str).map(|h| h.trim_end_matches('/'))
            && Path::new(h).components().count() > 1
        {
            pairs.push((h.to_string(), "~".into()));
        }
        if let Some(ws) = workspace.to_str().filter(|_| workspace.is_absolute()) {
            let ws = ws.trim_end_matches('/');
            pairs.push((format!("file://{ws}/"), String::new()));
            let mut up = String::from("<workspace>");
            let mut dir = Some(Path::new(ws));
            while let Some(d) = dir {
                if d.components().filter(|c| matches!(c, Component::Normal(_))).count() < 2 {
                    break;
                }
                if let Some(s) = d.to_str() {
                    pairs.push((s.to_string(), up.clone()));
                }
                up.push_str("/..");
                dir = d.parent();
            }
        }
        pairs.sort_by_key(|p| std::cmp::Reverse(p.0.len()));
        pairs.dedup_by(|a, b| a.0 == b.0);
        Scrubber { pairs }
    }

    /// `text` with every known path replaced.
    pub fn text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for (from, to) in &self.pairs {
            if out.contains(from.as_str()) {
                out = Cow::Owned(replace_paths(&out, from, to));
            }
        }
        out
    }

    /// Every string in `value`, scrubbed in place.
    pub fn json(&self, value: &mut serde_json::Value) {
        match value {
            serde_json::Value::String(s) => {
                if let Cow::Owned(t) = self.text(s) {
                    *s = t;
                }
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(|v| self.json(v)),
            serde_json::Value::Object(m) => m.values_mut().for_each(|v| self.json(v)),
            _ => {}
        }
    }
}

/// A byte that may continue a path component (so `/tmp/ab` is no match for `/tmp/a`).
fn name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'~' | b'+' | b'@') || b >= 0x80
}

/// `text` with each occurrence of the path `from` that stands on its own replaced by `to`.
fn replace_paths(text: &str, from: &str, to: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (i, _) in text.match_indices(from) {
        if i < last {
            continue;
        }
        let end = i + from.len();
        let before_ok = from.starts_with("file://")
            || i == 0
            || !(name_byte(bytes[i - 1]) || bytes[i - 1] == b'/')
            || text[..i].ends_with("file://");
        let after_ok = from.ends_with('/') || end == bytes.len() || !name_byte(bytes[end]);
        if before_ok && after_ok {
            out.push_str(&text[last..i]);
            out.push_str(to);
            last = end;
        }
    }
    out.push_str(&text[last..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workspace_its_ancestors_and_home_are_replaced() {
        let s = Scrubber::new(Path::new("/home/me/proj/.kodelet/mcp"), Some(Path::new("/home/me")));
        assert_eq!(
            s.text("/etc/x is outside the workspace /home/me/proj/.kodelet/mcp; see /home/me/proj/../x.ts"),
            "/etc/x is outside the workspace <workspace>; see <workspace>/../../../x.ts"
        );
        assert_eq!(s.text("at file:///home/me/proj/.kodelet/mcp/main.ts:1:7"), "at main.ts:1:7");
        assert_eq!(s.text("cannot read /home/me/.config/agent/config.yaml"), "cannot read ~/.config/agent/config.yaml");
        assert_eq!(s.text("/home/me/projects, /home/mex; /x/home/me"), "~/projects, /home/mex; /x/home/me");
        assert_eq!(s.text("(/home/me/proj)"), "(<workspace>/../..)");
        assert!(matches!(s.text("nothing here"), Cow::Borrowed(_)));
        let mut v = serde_json::json!({"a": ["in /home/me/proj/.kodelet/mcp/data"], "n": 1});
        s.json(&mut v);
        assert_eq!(v, serde_json::json!({"a": ["in <workspace>/data"], "n": 1}));
    }

    #[test]
    fn shallow_ancestors_are_kept() {
        let s = Scrubber::new(Path::new("/srv/ws"), None);
        assert_eq!(s.text("/srv/ws/a /srv/b"), "<workspace>/a /srv/b");
    }
}
