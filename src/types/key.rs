//! The workspace's value key: a random 128-bit key in `<workspace>/type_registry.key` (`0600`),
//! with which string values seen in results are hashed (keyed SipHash-2-4, 128 bits) before
//! anything about them is kept. The registry holds these hashes, never the values: without the
//! key a hash confirms no guess, and `agent mcp types --reset` deletes the key with everything
//! learned.
//!
//! The file is created once, under the registry's lock, by an atomic rename (a reader sees no
//! file or the whole key). It is read through a descriptor opened without following links and
//! used only when it is a regular file of this user that nobody else may read or write and
//! holds exactly 32 hex digits; otherwise the recorder learns shapes without enum candidates
//! (and says so), rather than trusting a key someone else chose or could read.

use std::hash::Hasher as _;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use siphasher::sip128::{Hasher128 as _, SipHasher24};

/// File name of the key beside the registry.
pub const KEY_FILE: &str = "type_registry.key";

/// A workspace's value key (never printed: `Debug` shows only its id).
#[derive(Clone, PartialEq, Eq)]
pub struct HashKey([u8; 16]);

impl std::fmt::Debug for HashKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HashKey({})", self.id())
    }
}

impl HashKey {
    /// A key of the given bytes (tests; the recorder reads its key with [`load_or_create`]).
    pub fn new(bytes: [u8; 16]) -> HashKey {
        HashKey(bytes)
    }

    fn random() -> HashKey {
        HashKey(rand::random::<[u8; 16]>())
    }

    /// The keyed hash of `parts` under a domain (`value`, `result`, `id`): 32 hex digits.
    fn hash(&self, domain: &str, parts: &[&[u8]]) -> String {
        let mut h = SipHasher24::new_with_key(&self.0);
        for p in std::iter::once(domain.as_bytes()).chain(parts.iter().copied()) {
            h.write(&(p.len() as u64).to_le_bytes());
            h.write(p);
        }
        format!("{:032x}", h.finish128().as_u128())
    }

    /// The hash a string value is kept as.
    pub fn value(&self, s: &str) -> String {
        self.hash("value", &[s.as_bytes()])
    }

    /// A short mark of one whole result (its compact JSON), to count the distinct results a
    /// value appeared in: 16 hex digits.
    pub fn result(&self, value: &serde_json::Value) -> String {
        /// Feeds the JSON text to the hasher as it is produced, without a copy of the result.
        struct Feed(SipHasher24);
        impl std::io::Write for Feed {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0.write(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut feed = Feed(SipHasher24::new_with_key(&self.0));
        feed.0.write(b"result");
        // Writing a JSON value to a hasher cannot fail.
        let _ = serde_json::to_writer(&mut feed, value);
        format!("{:016x}", feed.0.finish128().h1)
    }

    /// What the registry records to know which key its hashes were made with.
    pub fn id(&self) -> String {
        self.hash("id", &[])[..16].to_string()
    }

    fn encode(&self) -> String {
        let mut s: String = self.0.iter().map(|b| format!("{b:02x}")).collect();
        s.push('\n');
        s
    }

    fn decode(text: &str) -> Option<HashKey> {
        let hex = text.strip_suffix('\n').unwrap_or(text);
        if hex.len() != 32 || !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        let mut out = [0u8; 16];
        for (i, b) in out.iter_mut().enumerate() {
            *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(HashKey(out))
    }
}

/// The key file beside the registry at `registry`.
pub fn key_path(registry: &Path) -> PathBuf {
    registry.with_file_name(KEY_FILE)
}

/// Reads the key of the registry at `registry` (see the module doc): `Ok(None)` when there is none.
pub fn load(registry: &Path) -> Result<Option<HashKey>, String> {
    use std::os::unix::fs::MetadataExt as _;
    let path = key_path(registry);
    let shown = path.display();
    let dir = match registry.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let dir = match crate::util::fs::Dir::open(dir) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot open the directory of {shown}: {e}")),
    };
    let file = match dir.open_file(KEY_FILE) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("the value key {shown} is not a regular file ({e})")),
    };
    let meta = file.metadata().map_err(|e| format!("cannot read the value key {shown}: {e}"))?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me || meta.mode() & 0o077 != 0 {
        return Err(format!(
            "the value key {shown} is not private to this user (owner {}, mode {:o})",
            meta.uid(),
            meta.mode() & 0o777
        ));
    }
    let mut text = String::new();
    file.take(64).read_to_string(&mut text).map_err(|e| format!("cannot read the value key {shown}: {e}"))?;
    HashKey::decode(&text).map(Some).ok_or_else(|| format!("the value key {shown} is not 32 hex digits"))
}

/// The key of the registry at `registry`, created (random, `0600`) when there is none. The
/// caller holds the registry's lock, so two processes never create two keys.
pub(super) fn load_or_create_locked(registry: &Path) -> Result<HashKey, String> {
    if let Some(k) = load(registry)? {
        return Ok(k);
    }
    let key = HashKey::random();
    crate::util::fs::write_atomic(&key_path(registry), key.encode().as_bytes(), crate::util::fs::Access::Private)
        .map_err(|e| format!("cannot write the value key {}: {e}", key_path(registry).display()))?;
    Ok(key)
}

/// Deletes the key (under the registry's lock): every hash made with it means nothing from now.
pub(super) fn forget_locked(registry: &Path) -> Result<(), String> {
    match std::fs::remove_file(key_path(registry)) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("cannot delete the value key {}: {e}", key_path(registry).display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_hashes_depend_on_the_key() {
        let k = HashKey::new([1; 16]);
        assert_eq!(HashKey::decode(&k.encode()), Some(k.clone()));
        assert_eq!(HashKey::decode("zz"), None);
        let other = HashKey::new([2; 16]);
        assert_ne!(k.value("active"), other.value("active"));
        assert_eq!(k.value("active"), k.value("active"));
        assert_ne!(k.value("active"), k.hash("result", &[b"active"]), "domains are separate");
        assert_eq!(k.value("x").len(), 32);
        assert_eq!(k.result(&serde_json::json!({"a": 1})).len(), 16);
        assert!(!format!("{k:?}").contains("0101"), "Debug shows no key bytes");
    }

    #[test]
    fn a_key_file_another_user_could_read_or_a_link_is_refused() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let reg = dir.path().join("type_registry.json");
        assert_eq!(load(&reg).unwrap(), None);
        let k = load_or_create_locked(&reg).unwrap();
        let path = key_path(&reg);
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(load(&reg).unwrap(), Some(k.clone()));
        assert_eq!(load_or_create_locked(&reg).unwrap(), k, "an existing key is kept");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(load(&reg).unwrap_err().contains("not private"));
        std::fs::remove_file(&path).unwrap();
        let elsewhere = dir.path().join("planted");
        std::fs::write(&elsewhere, HashKey::new([3; 16]).encode()).unwrap();
        std::fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
        assert!(load(&reg).unwrap_err().contains("not a regular file"));
        forget_locked(&reg).unwrap();
        assert_eq!(load(&reg).unwrap(), None);
    }
}
