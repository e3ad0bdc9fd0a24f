//! The bearer token of `serve --http` when none is given (`--token-env`): 32 random bytes,
//! written as hex into a file only this user can read, as Jupyter does. Loopback is no user
//! boundary: without a token any local user could run code with this user's rights. The file is
//! `$XDG_RUNTIME_DIR/agent/serve-<port>.token` (a per-user tmpfs), else
//! `<cache home>/agent/serve-<port>.token`, mode 0600 in a directory that must be this user's
//! and closed to others; it is removed when serve stops.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use crate::util::fs::{Access, Dir};

/// A fresh token: 32 random bytes as 64 hex digits.
pub fn generate() -> String {
    rand::random::<[u8; 32]>().iter().map(|b| format!("{b:02x}")).collect()
}

/// The directory token files go to (`None`: neither `XDG_RUNTIME_DIR` nor a home).
pub fn dir() -> Option<PathBuf> {
    std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(crate::util::dirs::cache_home)
        .map(|d| d.join("agent"))
}

/// Writes `token` for the server on `port` and returns the file's path.
///
/// Through descriptors: the directory is opened without following a link and checked as opened
/// (this user's, closed to others), and the file is created in it exclusively (mode 0600, a
/// temporary name) and renamed over the final name, so no one can swap either on the way.
pub fn write(port: u16, token: &str) -> Result<PathBuf, String> {
    let dir = dir().ok_or("no directory for the token file (set XDG_RUNTIME_DIR or HOME, or use --token-env)")?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let name = format!("serve-{port}.token");
    write_private(&dir, &name, format!("{token}\n").as_bytes())
        .map_err(|e| format!("cannot write the token file {}: {e}", dir.join(&name).display()))?;
    Ok(dir.join(name))
}

/// `data` as `dir/name`, mode 0600, written through a descriptor of `dir` (see [`write`]).
fn write_private(dir: &Path, name: &str, data: &[u8]) -> std::io::Result<()> {
    let held = match (dir.parent(), dir.file_name()) {
        // The directory itself is opened without following a link; its parents are the user's.
        (Some(parent), Some(last)) => Dir::open(parent)?.sub(last)?,
        _ => Dir::open(dir)?,
    };
    let (owner, mode) = held.owner_and_mode()?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if owner != me || mode & 0o022 != 0 {
        return Err(std::io::Error::other(format!(
            "refusing: {} must be a directory of this user that others cannot write to",
            dir.display()
        )));
    }
    held.write_atomic(name, data, Access::Private)
}

/// Removes the token file (when serve stops); a file already gone is fine.
pub fn remove(path: &Path) {
    if let Err(e) = std::fs::remove_file(path)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!("cannot remove the token file {}: {e}", path.display());
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn tokens_are_long_random_and_hex() {
        let (a, b) = (generate(), generate());
        assert_eq!(a.len(), 64);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn the_file_is_private_and_a_shared_or_linked_directory_is_refused() {
        let d = tempfile::tempdir().unwrap();
        write_private(d.path(), "t.token", b"abc\n").unwrap();
        let meta = std::fs::metadata(d.path().join("t.token")).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::read(d.path().join("t.token")).unwrap(), b"abc\n");
        write_private(d.path(), "t.token", b"new\n").unwrap();
        assert_eq!(std::fs::read(d.path().join("t.token")).unwrap(), b"new\n", "replaced whole");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1, "no temporary file left");
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(write_private(d.path(), "u.token", b"x").unwrap_err().to_string().contains("refusing"));
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let link = d.path().join("link");
        std::os::unix::fs::symlink(d.path(), &link).unwrap();
        assert!(write_private(&link, "v.token", b"x").is_err(), "a link is not the directory");
    }
}
