//! The one stable hash: [`stable_hex`], for anything written to disk or shown to a model that
//! must come out the same from one build of `agent` to the next (manifest and registry hashes,
//! cache keys, the suffix of a shortened tool name).
//!
//! SipHash-1-3 with the keys (0, 0), each part fed as its length (u64, little-endian) then its
//! bytes, the 64-bit result as 16 hex digits. Stable by construction: the algorithm is the
//! published one (the `siphasher` crate), unlike std's `DefaultHasher`, whose algorithm may change
//! between Rust releases and would make every manifest churn. Not cryptographic: it only has to
//! notice that something changed; a false match needs a 2^-64 collision.

use std::hash::Hasher as _;

/// The stable hash of `parts` as 16 lowercase hex digits (see the module doc).
pub fn stable_hex(parts: &[&[u8]]) -> String {
    let mut h = siphasher::sip::SipHasher13::new_with_keys(0, 0);
    for p in parts {
        h.write(&(p.len() as u64).to_le_bytes());
        h.write(p);
    }
    format!("{:016x}", h.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_framed_and_the_value_is_pinned() {
        assert_eq!(stable_hex(&[b"a", b"b"]), stable_hex(&[b"a", b"b"]));
        assert_ne!(stable_hex(&[b"a", b"b"]), stable_hex(&[b"ab"]), "part boundaries count");
        assert_eq!(stable_hex(&[b"x"]).len(), 16);
        // Fixed values: a change here would churn every manifest, registry and cache on disk.
        assert_eq!(stable_hex(&[]), "d1fba762150c532c");
        assert_eq!(stable_hex(&[b"agent", b"manifest"]), "943d3cf601e1abc7");
    }
}
