//! The one way `agent` replaces a file: [`write_atomic`].
//!
//! The rule, for every file `agent` writes (generated tree, `--output`, caches, snapshots):
//! - **Atomic**: the data goes to a temp file in the same directory, which is then renamed over
//!   the target. A reader, a concurrent `agent`, or a crash of `agent` sees the old file or the
//!   new one, never a partial one.
//! - **Not fsynced**: after a power loss a file written just before may be empty or old. Nothing
//!   `agent` writes is a sole copy of anything: the tree is regenerated, caches are checked
//!   before use (snapshots carry a checksum), and `--output` can be run again. An fsync per file
//!   would triple the time to generate a thousand-tool tree.
//! - **Permissions are explicit**: [`Access::Shared`] files are `0644` (sources a user or an
//!   editor reads), [`Access::Private`] files are `0600` (caches and anything that could hold
//!   server data). The mode is set on the temp file before the rename, so the target never has
//!   any other mode, whatever the umask.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Who may read a written file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// `0644`: generated sources, files the user asked for.
    Shared,
    /// `0600`: caches, snapshots, anything private to this user.
    Private,
}

impl Access {
    fn mode(self) -> u32 {
        match self {
            Access::Shared => 0o644,
            Access::Private => 0o600,
        }
    }
}

/// Replaces `path` with `data` atomically (see the module doc for the rule).
pub fn write_atomic(path: &Path, data: &[u8], access: Access) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new().prefix(".agent-tmp-").tempfile_in(dir)?;
    tmp.write_all(data)?;
    tmp.as_file().set_permissions(std::fs::Permissions::from_mode(access.mode()))?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode_of(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn replaces_whole_files_with_the_mode_asked_for() {
        let dir = tempfile::tempdir().unwrap();
        let shared = dir.path().join("a.ts");
        write_atomic(&shared, b"one", Access::Shared).unwrap();
        write_atomic(&shared, b"two", Access::Shared).unwrap();
        assert_eq!(std::fs::read(&shared).unwrap(), b"two");
        assert_eq!(mode_of(&shared), 0o644);
        let private = dir.path().join("cache.bin");
        std::fs::write(&private, b"old").unwrap();
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o666)).unwrap();
        write_atomic(&private, b"new", Access::Private).unwrap();
        assert_eq!(mode_of(&private), 0o600);
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with(".agent-tmp-"))
            .collect();
        assert!(leftovers.is_empty(), "no temp files left behind");
    }

    #[test]
    fn a_failed_write_leaves_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("sub");
        std::fs::create_dir(&target).unwrap();
        // Renaming a file over a directory fails: the directory and its contents stay.
        std::fs::write(target.join("keep"), b"x").unwrap();
        assert!(write_atomic(&target, b"data", Access::Shared).is_err());
        assert_eq!(std::fs::read(target.join("keep")).unwrap(), b"x");
    }
}
