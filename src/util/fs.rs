//! The one way `agent` replaces a file ([`write_atomic`], [`Dir::write_atomic`]), and [`Dir`], a
//! directory held by its descriptor, under everything scripts keep.
//!
//! The rule, for every file `agent` writes (generated tree, `--output`, caches, snapshots, state):
//! - **Atomic**: the data goes to a temp file in the same directory, which is then renamed over
//!   the target. A reader, a concurrent `agent`, or a crash of `agent` sees the old file or the
//!   new one, never a partial one. A write that fails removes its temp file.
//! - **Not fsynced**: after a power loss a file written just before may be empty or old. Nothing
//!   `agent` writes is a sole copy of anything: the tree is regenerated, caches are checked
//!   before use (snapshots carry a checksum), and `--output` can be run again. An fsync per file
//!   would triple the time to generate a thousand-tool tree.
//! - **Permissions are explicit**: [`Access::Shared`] files are `0644` (sources a user or an
//!   editor reads), [`Access::Private`] files are `0600` (caches and anything that could hold
//!   server data). The mode is set on the temp file before the rename, so the target never has
//!   any other mode, whatever the umask.
//! - **Relative to a descriptor**: the temp file is created, renamed and (on failure) removed
//!   relative to the open directory (`openat` with `O_NOFOLLOW`, `renameat`, `unlinkat`), never
//!   by path again, so a directory swapped for a symbolic link after it was opened changes
//!   nothing. [`Dir::beneath`] opens a directory below another without leaving it
//!   (`openat2` with `RESOLVE_BENEATH`).

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rustix::fs::{AtFlags, FileType, FlockOperation, Mode, OFlags};
use rustix::io::Errno;

/// Who may read a written file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// `0644`: generated sources, files the user asked for.
    Shared,
    /// `0600`: caches, snapshots, anything private to this user.
    Private,
    /// Exactly these permission bits: a file of the user's that is replaced keeps its mode.
    Mode(u32),
}

impl Access {
    fn mode(self) -> u32 {
        match self {
            Access::Shared => 0o644,
            Access::Private => 0o600,
            Access::Mode(m) => m & 0o777,
        }
    }
}

/// Replaces `path` with `data` atomically (see the module doc for the rule). The directory
/// holding `path` is opened by path (links followed), the rest goes through its descriptor.
pub fn write_atomic(path: &Path, data: &[u8], access: Access) -> io::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, format!("{} names no file", path.display())))?;
    Dir::open(dir)?.write_atomic(name, data, access)
}

/// What a name in a directory is. A symbolic link is a link here, never what it leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Node {
    File {
        bytes: u64,
    },
    Dir,
    Link {
        bytes: u64,
    },
    /// A FIFO, socket or device.
    Special,
}

impl Node {
    fn of(stat: &rustix::fs::Stat) -> Node {
        let bytes = u64::try_from(stat.st_size).unwrap_or(0);
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile => Node::File { bytes },
            FileType::Directory => Node::Dir,
            FileType::Symlink => Node::Link { bytes },
            _ => Node::Special,
        }
    }

    pub fn is_file(self) -> bool {
        matches!(self, Node::File { .. })
    }

    /// Bytes it takes as a file or a link (0 for the rest).
    pub fn bytes(self) -> u64 {
        match self {
            Node::File { bytes } | Node::Link { bytes } => bytes,
            Node::Dir | Node::Special => 0,
        }
    }
}

/// A directory held open. Names given to its methods are single components (no `/`, not `.`
/// or `..`), except the relative paths of [`Dir::beneath`].
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
}

/// Held while a [`Dir::lock`] lock is; dropping it unlocks.
#[derive(Debug)]
pub struct Lock {
    _fd: OwnedFd,
}

/// Whether `openat2` answered `ENOSYS` (an old kernel) or `EPERM` (a sandbox that blocks it)
/// once: from then on [`Dir::beneath`] walks one component at a time.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// Whether [`Dir::beneath`] follows links that stay below (it has `openat2`), as far as known.
pub fn beneath_follows_links() -> bool {
    cfg!(any(target_os = "linux", target_os = "android")) && !NO_OPENAT2.load(Ordering::Relaxed)
}

const DIR_FLAGS: OFlags = OFlags::RDONLY.union(OFlags::DIRECTORY).union(OFlags::CLOEXEC);

impl Dir {
    /// Opens the directory at `path`; links on the way are followed (the path is the user's).
    pub fn open(path: &Path) -> io::Result<Dir> {
        let fd = rustix::fs::open(path, DIR_FLAGS, Mode::empty())?;
        Ok(Dir { fd })
    }

    /// The directory's owner (uid) and permission bits, as it is held (not as its path now is).
    pub fn owner_and_mode(&self) -> io::Result<(u32, u32)> {
        let st = rustix::fs::fstat(&self.fd)?;
        Ok((st.st_uid, st.st_mode & 0o7777))
    }

    /// Sets the directory's permission bits (as it is held, not by path).
    pub fn set_mode(&self, mode: u32) -> io::Result<()> {
        rustix::fs::fchmod(&self.fd, Mode::from_raw_mode(mode))?;
        Ok(())
    }

    /// Opens directory `name` in this one; a link at `name` is refused (`ELOOP` or `ENOTDIR`).
    pub fn sub(&self, name: impl AsRef<OsStr>) -> io::Result<Dir> {
        let name = component(name.as_ref())?;
        let fd = rustix::fs::openat(&self.fd, name, DIR_FLAGS | OFlags::NOFOLLOW, Mode::empty())?;
        Ok(Dir { fd })
    }

    /// Opens the directory `rel` (components, `..` allowed) below this one, never leaving it:
    /// a link on the way is followed only while it stays below (`openat2` with
    /// `RESOLVE_BENEATH`: an absolute link, or one or `..` that climbs out, fails with `EXDEV`).
    /// Where the kernel has no `openat2`, components are opened one at a time and any link or
    /// `..` is refused (`ELOOP`, `EXDEV`). An empty `rel` opens this directory again.
    pub fn beneath<S: AsRef<OsStr>>(&self, rel: &[S]) -> io::Result<Dir> {
        self.beneath_with(rel, !NO_OPENAT2.load(Ordering::Relaxed))
    }

    fn beneath_with<S: AsRef<OsStr>>(&self, rel: &[S], openat2: bool) -> io::Result<Dir> {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        if openat2 {
            let mut path = Vec::new();
            for (i, part) in rel.iter().enumerate() {
                if i > 0 {
                    path.push(b'/');
                }
                path.extend_from_slice(part.as_ref().as_bytes());
            }
            if path.is_empty() {
                path.push(b'.');
            }
            let resolve = rustix::fs::ResolveFlags::BENEATH | rustix::fs::ResolveFlags::NO_MAGICLINKS;
            match rustix::fs::openat2(&self.fd, OsStr::from_bytes(&path), DIR_FLAGS, Mode::empty(), resolve) {
                Ok(fd) => return Ok(Dir { fd }),
                Err(Errno::NOSYS | Errno::PERM) => NO_OPENAT2.store(true, Ordering::Relaxed),
                Err(e) => return Err(e.into()),
            }
        }
        let _ = openat2;
        let mut cur = rustix::fs::openat(&self.fd, ".", DIR_FLAGS, Mode::empty())?;
        for part in rel {
            let part = part.as_ref();
            if part.is_empty() || part == "." {
                continue;
            }
            if part == ".." || part.as_bytes().contains(&b'/') {
                return Err(Errno::XDEV.into());
            }
            cur = rustix::fs::openat(&cur, part, DIR_FLAGS | OFlags::NOFOLLOW, Mode::empty())?;
        }
        Ok(Dir { fd: cur })
    }

    /// What `name` is; `None` when there is nothing of that name.
    pub fn node(&self, name: impl AsRef<OsStr>) -> io::Result<Option<Node>> {
        let name = component(name.as_ref())?;
        match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => Ok(Some(Node::of(&stat))),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The text of the link `name`.
    pub fn read_link(&self, name: impl AsRef<OsStr>) -> io::Result<OsString> {
        let name = component(name.as_ref())?;
        let target = rustix::fs::readlinkat(&self.fd, name, Vec::new())?;
        Ok(OsString::from(OsStr::from_bytes(target.as_bytes())))
    }

    /// Creates directory `name` (the umask applies to `mode`).
    pub fn create_dir(&self, name: impl AsRef<OsStr>, mode: u32) -> io::Result<()> {
        let name = component(name.as_ref())?;
        rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(mode))?;
        Ok(())
    }

    /// Opens the regular file `name` for reading; a link, FIFO, socket or device is refused
    /// (without blocking on a FIFO).
    pub fn open_file(&self, name: impl AsRef<OsStr>) -> io::Result<File> {
        let name = component(name.as_ref())?;
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&self.fd, name, flags, Mode::empty())?;
        if !Node::of(&rustix::fs::fstat(&fd)?).is_file() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a regular file"));
        }
        // Reads block again as usual.
        rustix::fs::fcntl_setfl(&fd, OFlags::RDONLY)?;
        Ok(File::from(fd))
    }

    /// The names in this directory (not `.` and `..`) with what each is, sorted by name.
    pub fn entries(&self) -> io::Result<Vec<(OsString, Node)>> {
        let mut out = Vec::new();
        for entry in rustix::fs::Dir::read_from(&self.fd)? {
            let entry = entry?;
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            let name = OsStr::from_bytes(name);
            // Gone since it was listed: left out.
            if let Some(node) = self.node(name)? {
                out.push((name.to_os_string(), node));
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// Replaces `name` in this directory with `data` atomically (see the module doc). A link at
    /// `name` is replaced, never written through.
    pub fn write_atomic(&self, name: impl AsRef<OsStr>, data: &[u8], access: Access) -> io::Result<()> {
        let name = component(name.as_ref())?;
        let (tmp, fd) = self.create_temp()?;
        let written = (|| {
            let mut file = File::from(fd);
            file.write_all(data)?;
            rustix::fs::fchmod(&file, Mode::from_raw_mode(access.mode()))?;
            rustix::fs::renameat(&self.fd, &tmp, &self.fd, name)?;
            Ok(())
        })();
        if written.is_err() {
            let _ = rustix::fs::unlinkat(&self.fd, &tmp, AtFlags::empty());
        }
        written
    }

    fn create_temp(&self) -> io::Result<(OsString, OwnedFd)> {
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let mut tries = 0;
        loop {
            let tmp = OsString::from(format!(".agent-tmp-{:016x}", rand::random::<u64>()));
            match rustix::fs::openat(&self.fd, &tmp, flags, Mode::from_raw_mode(0o600)) {
                Ok(fd) => return Ok((tmp, fd)),
                Err(Errno::EXIST) if tries < 16 => tries += 1,
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Renames `from` to `to` in this directory, failing with `AlreadyExists` instead of
    /// replacing `to` (`renameat2` with `RENAME_NOREPLACE`); a link is renamed, not followed.
    pub fn rename_no_replace(&self, from: impl AsRef<OsStr>, to: impl AsRef<OsStr>) -> io::Result<()> {
        let (from, to) = (component(from.as_ref())?, component(to.as_ref())?);
        rustix::fs::renameat_with(&self.fd, from, &self.fd, to, rustix::fs::RenameFlags::NOREPLACE)?;
        Ok(())
    }

    /// Removes the file or link `name` (a directory is refused).
    pub fn remove_file(&self, name: impl AsRef<OsStr>) -> io::Result<()> {
        let name = component(name.as_ref())?;
        rustix::fs::unlinkat(&self.fd, name, AtFlags::empty())?;
        Ok(())
    }

    /// Removes directory `name` and everything in it; links inside are removed, never followed.
    pub fn remove_dir_all(&self, name: impl AsRef<OsStr>) -> io::Result<()> {
        let name = component(name.as_ref())?;
        let sub = self.sub(name)?;
        for (entry, node) in sub.entries()? {
            match node {
                Node::Dir => sub.remove_dir_all(&entry)?,
                _ => sub.remove_file(&entry)?,
            }
        }
        rustix::fs::unlinkat(&self.fd, name, AtFlags::REMOVEDIR)?;
        Ok(())
    }

    /// Takes an exclusive `flock` on this directory itself (no lock file left in it), waiting at
    /// most `wait` for another holder; past it the error is `WouldBlock`. For read-modify-write
    /// of a file someone else owns the directory of (a project's `.mcp.json`).
    pub fn lock_self(&self, wait: Duration) -> io::Result<Lock> {
        let fd = rustix::io::fcntl_dupfd_cloexec(&self.fd, 0)?;
        flock_within(fd, wait)
    }

    /// Takes an exclusive `flock` on file `name` (created `0600` when missing, never through a
    /// link), waiting at most `wait` for another holder; past it the error is `WouldBlock`.
    pub fn lock(&self, name: impl AsRef<OsStr>, wait: Duration) -> io::Result<Lock> {
        let name = component(name.as_ref())?;
        let flags = OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&self.fd, name, flags, Mode::from_raw_mode(0o600))?;
        flock_within(fd, wait)
    }
}

/// An exclusive `flock` on `fd`, waiting at most `wait`.
fn flock_within(fd: OwnedFd, wait: Duration) -> io::Result<Lock> {
    let deadline = Instant::now() + wait;
    let mut pause = Duration::from_micros(50);
    loop {
        match rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(Lock { _fd: fd }),
            Err(Errno::WOULDBLOCK) if Instant::now() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(5));
            }
            Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// `create_dir_all` whose missing directories are created `0700` (existing ones are left as they
/// are): the workspace and the caches hold logs, learned types and saved results, which other
/// users have no business reading.
pub fn create_private_dirs(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(path)
}

/// The directory at `path` for this user's private files: created `0700` with its missing parents
/// when `create`; one this user owns is tightened to `0700`; one of another user is refused (they
/// could read or swap what is in it). `None`: it is missing and `create` is off.
pub fn private_dir(path: &Path, create: bool) -> io::Result<Option<Dir>> {
    if create {
        use std::os::unix::fs::DirBuilderExt as _;
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(path)?;
    }
    let dir = match Dir::open(path) {
        Ok(d) => d,
        Err(e) if e.kind() == io::ErrorKind::NotFound && !create => return Ok(None),
        Err(e) => return Err(e),
    };
    let (owner, mode) = dir.owner_and_mode()?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    if owner != unsafe { libc::geteuid() } {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{} belongs to another user", path.display()),
        ));
    }
    if mode & 0o077 != 0 {
        dir.set_mode(0o700)?;
    }
    Ok(Some(dir))
}

/// `name` when it is one path component.
fn component(name: &OsStr) -> io::Result<&OsStr> {
    let b = name.as_bytes();
    if b.is_empty() || b == b"." || b == b".." || b.contains(&b'/') || b.contains(&0) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{name:?} is not a file name")));
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{PermissionsExt, symlink};

    fn mode_of(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    fn temps_in(dir: &Path) -> usize {
        std::fs::read_dir(dir)
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with(".agent-tmp-"))
            .count()
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
        assert_eq!(temps_in(dir.path()), 0, "no temp files left behind");
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("sub");
        std::fs::create_dir(&target).unwrap();
        // Renaming a file over a directory fails: the directory and its contents stay.
        std::fs::write(target.join("keep"), b"x").unwrap();
        assert!(write_atomic(&target, b"data", Access::Shared).is_err());
        assert_eq!(std::fs::read(target.join("keep")).unwrap(), b"x");
        assert_eq!(temps_in(dir.path()), 0, "the temp file of the failed write was removed");
    }

    #[test]
    fn writes_go_where_the_directory_is_not_where_its_path_now_leads() {
        let base = tempfile::tempdir().unwrap();
        let inside = base.path().join("inside");
        let outside = base.path().join("outside");
        std::fs::create_dir(&inside).unwrap();
        std::fs::create_dir(&outside).unwrap();
        let dir = Dir::open(&inside).unwrap();
        // The directory is moved and its name becomes a link to somewhere else.
        std::fs::rename(&inside, base.path().join("moved")).unwrap();
        symlink(&outside, &inside).unwrap();
        dir.write_atomic("f.txt", b"x", Access::Private).unwrap();
        dir.create_dir("d", 0o700).unwrap();
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
        assert_eq!(std::fs::read(base.path().join("moved/f.txt")).unwrap(), b"x");
        assert!(base.path().join("moved/d").is_dir());
        // A link at the name is replaced, not written through.
        symlink(outside.join("target"), base.path().join("moved/l")).unwrap();
        dir.write_atomic("l", b"y", Access::Private).unwrap();
        assert!(!outside.join("target").exists());
        assert_eq!(dir.node("l").unwrap(), Some(Node::File { bytes: 1 }));
        // Names are single components.
        for bad in ["", ".", "..", "a/b"] {
            assert_eq!(dir.write_atomic(bad, b"z", Access::Private).unwrap_err().kind(), io::ErrorKind::InvalidInput);
        }
    }

    #[test]
    fn beneath_never_leaves_the_directory_with_or_without_openat2() {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("root");
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::create_dir(base.path().join("out")).unwrap();
        symlink("a/b", root.join("inner")).unwrap();
        symlink("../out", root.join("up")).unwrap();
        symlink(base.path().join("out"), root.join("abs")).unwrap();
        symlink("/etc", root.join("etc")).unwrap();
        let dir = Dir::open(&root).unwrap();
        let errno = |r: io::Result<Dir>| r.unwrap_err().raw_os_error();
        for openat2 in [true, false] {
            assert!(dir.beneath_with(&["a", "b"], openat2).is_ok());
            assert!(dir.beneath_with::<&str>(&[], openat2).is_ok());
            for escape in [&["up"][..], &["abs"], &["etc"], &["a", "..", ".."]] {
                let e = errno(dir.beneath_with(escape, openat2));
                assert!(
                    [Some(libc::EXDEV), Some(libc::ELOOP), Some(libc::ENOTDIR)].contains(&e),
                    "{escape:?} (openat2: {openat2}): {e:?}"
                );
            }
            assert_eq!(errno(dir.beneath_with(&["a", "nope"], openat2)), Some(libc::ENOENT));
        }
        // With openat2 a link that stays below is followed, and `..` that stays below works.
        if !NO_OPENAT2.load(Ordering::Relaxed) {
            assert!(dir.beneath_with(&["inner"], true).is_ok());
            assert!(dir.beneath_with(&["a", "..", "a", "b"], true).is_ok());
        }
        // Without it no link is followed at all.
        assert!(dir.beneath_with(&["inner"], false).is_err());
    }

    #[test]
    fn removal_and_listing_never_follow_links() {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("root");
        std::fs::create_dir_all(root.join("d/e")).unwrap();
        std::fs::write(root.join("d/e/f"), b"abc").unwrap();
        std::fs::create_dir(base.path().join("out")).unwrap();
        std::fs::write(base.path().join("out/keep"), b"k").unwrap();
        symlink(base.path().join("out"), root.join("d/link")).unwrap();
        let dir = Dir::open(&root).unwrap();
        let d = dir.sub("d").unwrap();
        let names: Vec<_> = d.entries().unwrap().into_iter().map(|(n, k)| (n.into_string().unwrap(), k)).collect();
        assert_eq!(names[0], ("e".to_string(), Node::Dir));
        assert!(matches!(names[1], (ref n, Node::Link { .. }) if n == "link"));
        assert!(dir.sub("d").unwrap().sub("link").is_err(), "a link is not opened as a directory");
        assert!(d.open_file("link").is_err());
        dir.remove_dir_all("d").unwrap();
        assert!(!root.join("d").exists());
        assert_eq!(std::fs::read(base.path().join("out/keep")).unwrap(), b"k");
    }

    #[test]
    fn a_lock_is_exclusive_and_waits_a_bounded_time() {
        let base = tempfile::tempdir().unwrap();
        let dir = Dir::open(base.path()).unwrap();
        let held = dir.lock("x.lock", Duration::ZERO).unwrap();
        let e = dir.lock("x.lock", Duration::from_millis(20)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
        drop(held);
        assert!(dir.lock("x.lock", Duration::ZERO).is_ok());
        symlink(base.path().join("elsewhere"), base.path().join("l.lock")).unwrap();
        assert!(dir.lock("l.lock", Duration::ZERO).is_err(), "never created through a link");
        assert!(!base.path().join("elsewhere").exists());
    }
}
