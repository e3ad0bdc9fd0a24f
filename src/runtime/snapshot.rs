//! A startup snapshot of the bootstrapped runtime, cached on disk.
//!
//! Creating the first isolate in a process costs tens of ms on QuickJS: the engine compiles
//! deno_core's own JS before our bootstrap runs. Restoring a snapshot of an isolate that already
//! ran all of it takes a few ms. Making the snapshot takes ~0.5-1 s, so
//! it is made once per binary and kept in `$XDG_CACHE_HOME/agent/` (or `~/.cache/agent/`),
//! keyed by the executable's identity (path, size, modification time) and the bootstrap source:
//! a rebuilt or upgraded binary makes a new one. The file is framed with a length and checksum,
//! written atomically (0600, directory 0700; an existing directory or file that is looser is
//! tightened on use), and only read back when owned by us and not writable by others. Any problem means no snapshot: the isolate is bootstrapped from source,
//! as it would be without this module. `AGENT_NO_SNAPSHOT=1` turns it off.

use std::hash::{Hash, Hasher};
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use deno_core::{JsRuntimeForSnapshot, RuntimeOptions};

use crate::util::fs::{Access, write_atomic};

/// The file format: the magic, the body's length, its checksum ([`checksum`]), the body.
const MAGIC: &[u8; 8] = b"AGSNAP02";
/// The engine build, part of the cache key beside the binary's identity: a snapshot holds what the
/// engine put in a context, and one made by an engine that put in other globals (the crates.io
/// v8x with its Temporal polyfill and WebAssembly) must never be restored by this one. Change it
/// with every change to vendor/v8x that alters what a context holds.
const ENGINE: &str = "v8x 149.4.0-rc.4, vendored: no Temporal, no WebAssembly; snapshot v6 (module scans recorded, fast arrays as runs, no function sources)";
/// Snapshots of other builds kept around (a debug and a release binary, a few worktrees).
const KEEP: usize = 6;

static SNAPSHOT: OnceLock<Option<&'static [u8]>> = OnceLock::new();

/// The format of the walks file beside a snapshot: the engine's record of where, in a restored
/// context, each native function and prototype a snapshot refers to is found (see
/// [`remember_walks`]); framed as the snapshot is.
const WALKS_MAGIC: &[u8; 8] = b"AGWALK01";

/// The frame's header before a cached file's body: magic, body length, checksum (8 bytes each).
const HEADER_LEN: usize = 24;

/// Largest file [`read_framed`] reads, framing included: far above what either holds (the
/// snapshot ~0.4 MB, the walks ~50 KB), so a file that size is damage, not a cache.
const MAX_SNAPSHOT_BYTES: u64 = 64 << 20;
const MAX_WALKS_BYTES: u64 = 4 << 20;

/// The walks file beside this process's snapshot, and the checksum of what was read from it
/// (`None`: nothing usable was).
static WALKS: OnceLock<(PathBuf, Option<u64>)> = OnceLock::new();

/// The snapshot for this binary, loaded or made on first use; `None` when unavailable.
pub(crate) fn startup_snapshot() -> Option<&'static [u8]> {
    *SNAPSHOT.get_or_init(|| {
        // One per process, alive as long as any isolate restored from it.
        load_or_create()
    })
}

fn load_or_create() -> Option<&'static [u8]> {
    let path = cache_file()?;
    if let Some(dir) = path.parent()
        && let Err(e) = make_private(dir)
    {
        tracing::info!("cannot make {} private: {e}", dir.display());
    }
    if let Some(bytes) = read_trusted(&path) {
        read_walks(path.with_extension("walks"));
        return Some(bytes);
    }
    let _ = WALKS.set((path.with_extension("walks"), None));
    let started = std::time::Instant::now();
    let bytes = create()?;
    tracing::info!("made the runtime snapshot ({} KB) in {:?}", bytes.len() / 1024, started.elapsed());
    if let Err(e) = store(&path, &bytes) {
        tracing::info!("cannot cache the runtime snapshot in {}: {e}", path.display());
    }
    Some(Box::leak(bytes))
}

fn cache_file() -> Option<PathBuf> {
    if !cfg!(feature = "quickjs") || std::env::var_os("AGENT_NO_SNAPSHOT").is_some() {
        return None;
    }
    let base = crate::util::dirs::cache_home()?;
    let exe = std::env::current_exe().ok()?;
    let meta = std::fs::metadata(&exe).ok()?;
    let mut h = std::hash::DefaultHasher::new();
    exe.hash(&mut h);
    meta.len().hash(&mut h);
    meta.modified().ok()?.hash(&mut h);
    super::ops::BOOTSTRAP.as_str().hash(&mut h);
    super::ops::RESULT.as_str().hash(&mut h);
    env!("CARGO_PKG_VERSION").hash(&mut h);
    ENGINE.hash(&mut h);
    Some(base.join("agent").join(format!("runtime-{:016x}.snap", h.finish())))
}

/// CRC-32 of the body (hardware-assisted: ~0.03 ms for the 389 KB snapshot, where SipHash took
/// ~0.3 ms of every cold start). It catches a torn or damaged file; trust comes from ownership and
/// permissions, checked on the open descriptor.
fn checksum(bytes: &[u8]) -> u64 {
    u64::from(crc32fast::hash(bytes))
}

/// Gives the engine the walks an earlier process of this binary recorded beside the snapshot
/// (`walks`), so this process's first isolate follows them instead of walking every object of a
/// fresh context (~0.7 ms of a cold `agent exec`). When there is no such file, or it is damaged
/// or not ours, this process records them and [`remember_walks`] writes them.
fn read_walks(walks: PathBuf) {
    #[cfg(feature = "quickjs")]
    let read = read_framed(&walks, WALKS_MAGIC, MAX_WALKS_BYTES).and_then(|data| {
        let body = &data[HEADER_LEN..];
        deno_core::v8::import_intrinsics_walks(body)?;
        Some(checksum(body))
    });
    #[cfg(not(feature = "quickjs"))]
    let read = None;
    let _ = WALKS.set((walks, read));
}

/// Called after each isolate restored from the snapshot: the first time, writes the walks the
/// engine holds beside the snapshot for later processes, unless they are what was read from
/// there (a walk read that did not hold was recorded again, and the file is rewritten).
pub(crate) fn remember_walks() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        #[cfg(feature = "quickjs")]
        if let Some((path, read)) = WALKS.get() {
            let walks = deno_core::v8::export_intrinsics_walks();
            if walks.is_empty() || *read == Some(checksum(&walks)) {
                return;
            }
            if let Err(e) = write_framed(path, WALKS_MAGIC, &walks) {
                tracing::info!("cannot cache the runtime's walks in {}: {e}", path.display());
            }
        }
    });
}

/// The snapshot in `path`, if it is ours, intact, and nobody else could have written it (see
/// [`read_framed`]). The body is returned in place, in the buffer read (kept for the life of the
/// process): copying it out took ~0.2 ms of a cold start, most of it faulting in fresh pages.
fn read_trusted(path: &Path) -> Option<&'static [u8]> {
    read_framed(path, MAGIC, MAX_SNAPSHOT_BYTES).map(|data| &data.leak()[HEADER_LEN..])
}

/// The file `path` framed with `magic` (header included; the body starts at [`HEADER_LEN`]), if it is
/// ours, intact, no longer than `max` bytes, and nobody else could have written it. Checked and
/// read through one descriptor opened without following a symlink, so the file checked is the
/// file read (and no more than `max` bytes of it, even if it grows meanwhile).
fn read_framed(path: &Path, magic: &[u8; 8], max: u64) -> Option<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file =
        std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(path).ok()?;
    let meta = file.metadata().ok()?;
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    if !meta.is_file() || meta.uid() != uid || meta.mode() & 0o022 != 0 || meta.len() > max {
        return None;
    }
    let mut data = Vec::with_capacity(usize::try_from(meta.len()).ok()?);
    file.take(max + 1).read_to_end(&mut data).ok()?;
    if data.len() as u64 > max {
        return None;
    }
    let (header, body) = data.split_at_checked(HEADER_LEN)?;
    let len = u64::from_le_bytes(header[8..16].try_into().ok()?);
    let sum = u64::from_le_bytes(header[16..HEADER_LEN].try_into().ok()?);
    if &header[..8] != magic || len != body.len() as u64 || sum != checksum(body) {
        return None;
    }
    Some(data)
}

fn create() -> Option<Box<[u8]>> {
    // deno_core panics rather than returning some errors; a snapshot is never worth a crash.
    std::panic::catch_unwind(|| {
        let runtime = JsRuntimeForSnapshot::try_new(RuntimeOptions {
            extensions: vec![super::ops::extension(true)],
            ..Default::default()
        })
        .ok()?;
        Some(runtime.snapshot())
    })
    .ok()
    .flatten()
}

/// Makes a cache directory of ours private and the (few) files in it 0600; see [`private_dir`].
pub(crate) fn make_private(dir: &Path) -> std::io::Result<()> {
    private_dir(dir)?;
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    for entry in std::fs::read_dir(dir)?.flatten() {
        tighten_file(&entry.path(), uid);
    }
    Ok(())
}

/// Makes a cache directory of ours private: created 0700 when missing (parents included), set to
/// 0700 when it is looser. One owned by someone else is an error. (The files in a 0700
/// directory are out of other users' reach whatever their own mode.)
pub(crate) fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let meta = std::fs::metadata(dir)?;
    if meta.uid() != uid {
        return Err(std::io::Error::other("it is not owned by you"));
    }
    if meta.mode() & 0o777 != 0o700 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Sets a regular file of ours (not followed if it is a link) to 0600 if it is looser.
pub(crate) fn tighten_file(path: &Path, uid: u32) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(m) = std::fs::symlink_metadata(path)
        && m.is_file()
        && m.uid() == uid
        && m.mode() & 0o077 != 0
    {
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
    }
}

fn store(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_framed(path, MAGIC, bytes)?;
    prune(path.parent().unwrap_or(Path::new(".")), path);
    Ok(())
}

/// Writes `bytes` to `path` framed with `magic`, its length and checksum, atomically and private.
fn write_framed(path: &Path, magic: &[u8; 8], bytes: &[u8]) -> std::io::Result<()> {
    make_private(path.parent().unwrap_or(Path::new(".")))?;
    let mut data = Vec::with_capacity(HEADER_LEN + bytes.len());
    data.extend_from_slice(magic);
    data.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    data.extend_from_slice(&checksum(bytes).to_le_bytes());
    data.extend_from_slice(bytes);
    write_atomic(path, &data, Access::Private)
}

/// Keeps the newest few snapshots (other builds of agent share the directory), and the walks
/// files of those kept.
fn prune(dir: &Path, keep_path: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let named = |p: &Path, ext: &str| {
        p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("runtime-") && n.ends_with(ext))
    };
    let paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    let mut snaps: Vec<(std::time::SystemTime, &PathBuf)> = paths
        .iter()
        .filter(|p| named(p, ".snap") && *p != keep_path)
        .filter_map(|p| Some((std::fs::metadata(p).ok()?.modified().ok()?, p)))
        .collect();
    snaps.sort_by_key(|s| std::cmp::Reverse(s.0));
    for (_, p) in snaps.into_iter().skip(KEEP - 1) {
        let _ = std::fs::remove_file(p);
    }
    for walks in paths.iter().filter(|p| named(p, ".walks")) {
        if !walks.with_extension("snap").exists() {
            let _ = std::fs::remove_file(walks);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What every fresh isolate deserialises: without the engine's Temporal polyfill and
    /// WebAssembly (vendor/v8x) it is about a third of the 1,093,849 bytes it was with them.
    #[test]
    fn the_snapshot_carries_no_temporal_polyfill_and_no_webassembly() {
        let bytes = create().expect("the snapshot is made");
        let has = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
        assert!(!has(b"PlainDateTime"), "the Temporal polyfill is in the snapshot");
        assert!(!has(b"instantiateStreaming"), "WebAssembly is in the snapshot");
        assert!(has(b"__agentSettle"), "not our bootstrap's snapshot");
        assert!(bytes.len() < 512 * 1024, "the snapshot grew to {} bytes", bytes.len());
    }

    #[test]
    fn only_intact_files_of_ours_are_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agent/runtime-1.snap");
        store(&path, b"snapshot bytes").unwrap();
        assert_eq!(read_trusted(&path), Some(&b"snapshot bytes"[..]));
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(path.parent().unwrap()).unwrap().mode() & 0o777, 0o700);
        // Truncated, flipped or group-writable: not used.
        let data = std::fs::read(&path).unwrap();
        std::fs::write(&path, &data[..data.len() - 1]).unwrap();
        assert!(read_trusted(&path).is_none());
        let mut flipped = data.clone();
        *flipped.last_mut().unwrap() ^= 1;
        std::fs::write(&path, &flipped).unwrap();
        assert!(read_trusted(&path).is_none());
        std::fs::write(&path, &data).unwrap();
        assert!(read_trusted(&path).is_some());
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o620)).unwrap();
        assert!(read_trusted(&path).is_none());
        // A symlink to an intact snapshot of ours: not followed.
        let elsewhere = dir.path().join("elsewhere.snap");
        std::fs::write(&elsewhere, &data).unwrap();
        std::fs::set_permissions(&elsewhere, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        assert!(read_trusted(&elsewhere).is_some());
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
        assert!(read_trusted(&path).is_none());
    }

    /// A framed file over its bound is not read, whatever its frame says: an intact walks file
    /// stretched past the bound (a sparse tail, so the test writes nothing large) is refused,
    /// and the same bytes within the bound are read.
    #[test]
    fn a_cache_file_over_its_bound_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agent/runtime-1.walks");
        write_framed(&path, WALKS_MAGIC, b"walks").unwrap();
        assert!(read_framed(&path, WALKS_MAGIC, MAX_WALKS_BYTES).is_some());
        assert!(read_framed(&path, WALKS_MAGIC, HEADER_LEN as u64 + 4).is_none(), "one byte over the bound");
        std::fs::File::options().write(true).open(&path).unwrap().set_len(MAX_WALKS_BYTES + 1).unwrap();
        assert!(read_framed(&path, WALKS_MAGIC, MAX_WALKS_BYTES).is_none());
    }

    #[test]
    fn an_existing_cache_directory_is_made_private_on_use() {
        use std::os::unix::fs::PermissionsExt;
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join("agent");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let old = dir.join("runtime-0.snap");
        std::fs::write(&old, b"x").unwrap();
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).unwrap();
        store(&dir.join("runtime-1.snap"), b"snapshot bytes").unwrap();
        assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        assert_eq!(std::fs::metadata(&old).unwrap().mode() & 0o777, 0o600);
        // Created from nothing, parents included.
        let fresh = base.path().join("a/b/c");
        make_private(&fresh).unwrap();
        for d in [base.path().join("a"), fresh] {
            assert_eq!(std::fs::metadata(&d).unwrap().mode() & 0o777, 0o700, "{}", d.display());
        }
    }

    /// Storing a snapshot keeps the newest few of other builds, and the walks files of the
    /// snapshots kept; a walks file whose snapshot is gone goes too.
    #[test]
    fn old_snapshots_and_the_walks_of_removed_ones_are_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let at = |i: usize, ext: &str| dir.path().join(format!("runtime-{i}.{ext}"));
        let start = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        for i in 0..KEEP + 2 {
            for ext in ["snap", "walks"] {
                std::fs::write(at(i, ext), b"x").unwrap();
                let f = std::fs::File::options().write(true).open(at(i, ext)).unwrap();
                f.set_modified(start + std::time::Duration::from_secs(i as u64)).unwrap();
            }
        }
        std::fs::write(dir.path().join("runtime-orphan.walks"), b"x").unwrap();
        store(&at(99, "snap"), b"snapshot bytes").unwrap();
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        let mut expected: Vec<String> = (KEEP + 2 - (KEEP - 1)..KEEP + 2)
            .flat_map(|i| [format!("runtime-{i}.snap"), format!("runtime-{i}.walks")])
            .collect();
        expected.push("runtime-99.snap".into());
        expected.sort();
        assert_eq!(left, expected);
    }
}
