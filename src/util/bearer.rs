//! `Authorization: Bearer <token>`, read the one way both of `agent`'s servers (the bridge and
//! `agent mcp serve --http`) read it: the scheme in any case (RFC 7235 makes it
//! case-insensitive: `Bearer`, `bearer`, `BEARER`), the token compared in constant time so its
//! bytes cannot be guessed from how long a refusal takes.

/// Whether an `Authorization` header value carries `expected` as its bearer token.
pub fn matches(header: Option<&[u8]>, expected: &str) -> bool {
    let Some(given) = header.and_then(token) else { return false };
    constant_time_eq(given, expected.as_bytes())
}

/// The token of a `Bearer` credential (`None` for another scheme or no token).
pub fn token(header: &[u8]) -> Option<&[u8]> {
    let space = header.iter().position(|&b| b == b' ')?;
    let (scheme, rest) = header.split_at(space);
    if !scheme.eq_ignore_ascii_case(b"bearer") {
        return None;
    }
    let start = rest.iter().position(|&b| b != b' ')?;
    Some(rest[start..].trim_ascii_end())
}

/// Equal bytes, in time that depends only on the lengths.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scheme_is_case_insensitive_and_the_token_exact() {
        for h in ["Bearer s3", "bearer s3", "BEARER s3", "Bearer  s3 "] {
            assert!(matches(Some(h.as_bytes()), "s3"), "{h}");
        }
        for h in ["Bearer s4", "Bearer s3x", "Basic s3", "Bearer", "Bearer ", "s3", "Bearers3"] {
            assert!(!matches(Some(h.as_bytes()), "s3"), "{h}");
        }
        assert!(!matches(None, "s3"));
    }
}
