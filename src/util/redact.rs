//! Secrets in what `agent` shows of a configuration: [`mask`] a value, [`secret_name`] to tell a
//! credential's name (`Authorization`, `X-Api-Key`, `GITHUB_TOKEN`), [`url`] for a server URL
//! with a password or an `?api_key=` in it. Used by `agent mcp get` and the connection errors
//! that name a server's URL.

/// Whether a header, variable, flag or query parameter name says its value is a credential.
pub fn secret_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    ["auth", "key", "token", "secret", "password", "passwd", "cookie", "session", "credential", "signature"]
        .iter()
        .any(|w| n.contains(w))
}

/// A value as output shows it: its first 2 characters and `***` when it is long enough that
/// they give nothing away (12 or more characters), else `***`.
pub fn mask(value: &str) -> String {
    if value.chars().count() >= 12 { format!("{}***", value.chars().take(2).collect::<String>()) } else { "***".into() }
}

/// `raw` with its password and the values of secret-looking query parameters masked; as it is
/// when it does not parse as a URL or holds neither.
pub fn url(raw: &str) -> String {
    let Ok(mut u) = url::Url::parse(raw) else { return raw.to_string() };
    let pairs: Vec<(String, String)> = u.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
    let secret_query = pairs.iter().any(|(k, _)| secret_name(k));
    if u.password().is_none() && !secret_query {
        return raw.to_string();
    }
    if u.password().is_some() {
        let _ = u.set_password(Some("***"));
    }
    if secret_query {
        let mut q = u.query_pairs_mut();
        q.clear();
        for (k, v) in &pairs {
            q.append_pair(k, &if secret_name(k) { mask(v) } else { v.clone() });
        }
    }
    u.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_urls_and_names() {
        assert_eq!(mask("ghp_0123456789abcdef"), "gh***");
        assert_eq!(mask("short"), "***");
        let u = url("https://me:pw@h.example/mcp?api_key=0123456789abcdef&region=eu");
        assert_eq!(u, "https://me:***@h.example/mcp?api_key=01***&region=eu");
        assert_eq!(url("http://h/mcp?x=1 2"), "http://h/mcp?x=1 2", "untouched when nothing is secret");
        assert!(secret_name("Authorization") && secret_name("X-Api-Key") && !secret_name("Accept"));
    }
}
