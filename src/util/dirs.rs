//! Where per-user files go and where commands are found: [`cache_home`], [`config_home`] and
//! [`find_on_path`], each read from the environment in one place.

use std::path::PathBuf;

/// The user's cache directory: `$XDG_CACHE_HOME` when it is an absolute path (the XDG spec says
/// to ignore a relative one), else `$HOME/.cache`; `None` without either.
///
/// The crate's own unit tests get the build's `test-cache` directory instead (the one the
/// integration tests give every `agent` they run), so they never write into the home of whoever
/// runs them.
pub fn cache_home() -> Option<PathBuf> {
    if cfg!(test) {
        return Some(build_target_dir().join("test-cache"));
    }
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
}

/// The build's target directory (`$CARGO_TARGET_DIR`, else `target` in the crate), where the
/// tests keep their caches and the tools they install.
#[doc(hidden)]
pub fn build_target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"))
}

/// The user's configuration directory: `$XDG_CONFIG_HOME` when it is an absolute path, else
/// `$HOME/.config`; `None` without either.
pub fn config_home() -> Option<PathBuf> {
    std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
}

/// The first executable file called `name` in a `PATH` directory.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shell_is_found_and_a_nonsense_name_is_not() {
        // `sh` is on PATH on every machine this runs on.
        assert!(find_on_path("sh").is_some_and(|p| p.is_absolute() || p.exists()));
        assert!(find_on_path("agent-no-such-command-7f3a").is_none());
    }
}
