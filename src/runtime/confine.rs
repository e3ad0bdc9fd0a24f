//! Opening files and directories only where they really are inside a root directory.
//!
//! Checking a path with `canonicalize` and opening it afterwards leaves a window in which a
//! component can be swapped for a symlink. Here the path is opened first (non-blocking, so a
//! FIFO cannot hang the caller), then the kernel says where the open file really is
//! (`/proc/self/fd/N`, every link resolved); it is used only when that real path lies inside the
//! root and it is a regular file or a directory. Directories are listed through the same open
//! descriptor, so what is listed is what was checked. The module loader and code mode's
//! discovery tools read the workspace only through here.

use std::ffi::OsString;
use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Why a path was not opened.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// It does not exist or cannot be opened.
    Missing(io::Error),
    /// It really is outside the root (through a symlink or `..`). Where it leads is not kept,
    /// so no message can print it.
    Outside,
    /// Neither a regular file nor a directory (a FIFO, socket or device).
    Special,
}

/// An open file or directory that really is inside the root.
#[derive(Debug)]
pub(crate) struct Confined {
    file: File,
    /// Where it really is (no symlinks left), inside the root.
    pub real: PathBuf,
    pub meta: Metadata,
}

impl Confined {
    pub(crate) fn is_dir(&self) -> bool {
        self.meta.is_dir()
    }

    /// The names in this directory (not `.` and `..`), sorted, read through the open descriptor.
    pub(crate) fn names(&self) -> io::Result<Vec<OsString>> {
        let listing = match std::fs::read_dir(fd_path(&self.file)) {
            Ok(rd) => rd,
            // No /proc: list by the real path just checked.
            Err(_) => std::fs::read_dir(&self.real)?,
        };
        let mut names: Vec<OsString> = listing.flatten().map(|e| e.file_name()).collect();
        names.sort();
        Ok(names)
    }

    /// The file's bytes; an error past `max` bytes.
    pub(crate) fn read_bytes(mut self, max: u64) -> io::Result<Vec<u8>> {
        let mut bytes = Vec::with_capacity(self.meta.len().min(max) as usize);
        (&mut self.file).take(max + 1).read_to_end(&mut bytes)?;
        if bytes.len() as u64 > max {
            return Err(io::Error::other(format!("it is larger than {}", crate::util::size::human_bytes(max))));
        }
        Ok(bytes)
    }

    /// The file's text (lossy UTF-8); an error past `max` bytes.
    pub(crate) fn read_text(mut self, max: u64) -> io::Result<String> {
        if self.meta.len() > max {
            return Err(io::Error::other(format!("it is larger than {} MB", max / (1024 * 1024))));
        }
        let mut bytes = Vec::with_capacity(self.meta.len() as usize);
        (&mut self.file).take(max + 1).read_to_end(&mut bytes)?;
        if bytes.len() as u64 > max {
            return Err(io::Error::other(format!("it is larger than {} MB", max / (1024 * 1024))));
        }
        Ok(match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        })
    }
}

/// Opens `path` (following links as the system does) and keeps it only if where it really is
/// lies inside `root`, which must itself be a real path (canonical).
pub(crate) fn open_inside(root: &Path, path: &Path) -> Result<Confined, Refusal> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)
        .map_err(Refusal::Missing)?;
    let real = match std::fs::read_link(fd_path(&file)) {
        Ok(real) => real,
        // No /proc: the best the system offers without it.
        Err(_) => std::fs::canonicalize(path).map_err(Refusal::Missing)?,
    };
    if !real.starts_with(root) {
        return Err(Refusal::Outside);
    }
    let meta = file.metadata().map_err(Refusal::Missing)?;
    if !(meta.is_file() || meta.is_dir()) {
        return Err(Refusal::Special);
    }
    Ok(Confined { file, real, meta })
}

fn fd_path(file: &File) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn links_are_followed_only_inside_the_root() {
        let base = tempfile::tempdir().unwrap();
        let base_real = std::fs::canonicalize(base.path()).unwrap();
        let root = base_real.join("root");
        std::fs::create_dir_all(root.join("dir")).unwrap();
        std::fs::write(root.join("dir/a.ts"), "inside").unwrap();
        std::fs::write(base_real.join("secret.ts"), "outside").unwrap();
        symlink("dir/a.ts", root.join("alias.ts")).unwrap();
        symlink("../secret.ts", root.join("out.ts")).unwrap();
        symlink("..", root.join("up")).unwrap();
        symlink("/etc/passwd", root.join("pw.ts")).unwrap();

        let ok = open_inside(&root, &root.join("alias.ts")).unwrap();
        assert_eq!(ok.real, root.join("dir/a.ts"));
        assert_eq!(ok.read_text(1024).unwrap(), "inside");
        for bad in ["out.ts", "pw.ts", "up", "up/secret.ts", "dir/../../secret.ts"] {
            assert!(matches!(open_inside(&root, &root.join(bad)), Err(Refusal::Outside)), "{bad}");
        }
        assert!(matches!(open_inside(&root, &root.join("nope.ts")), Err(Refusal::Missing(_))));
        let dir = open_inside(&root, &root.join("dir")).unwrap();
        assert!(dir.is_dir());
        assert_eq!(dir.names().unwrap(), vec![OsString::from("a.ts")]);
        assert!(open_inside(&root, &root.join("dir/a.ts")).unwrap().read_text(3).is_err(), "over the cap");
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let root = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(root.path()).unwrap();
        let fifo = root.join("pipe.ts");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(matches!(open_inside(&root, &fifo), Err(Refusal::Special)));
    }
}
