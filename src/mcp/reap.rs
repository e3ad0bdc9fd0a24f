//! Processes of stdio servers that outlive the server, or `agent` itself.
//!
//! Every stdio server of one manager (a [`Run`]) gets the variable [`RUN_VAR`] set to the
//! run's random marker, which its children inherit, and the run keeps a private record file
//! (`<log dir>/.running/<agent pid>-<marker>.json`, 0600 in a 0700 directory: the marker, and
//! each server's pid and start time) while servers may be running. Stopping the servers also
//! stops every process of ours that carries the marker, so a grandchild that left the server's
//! process group (`setsid`) does not outlive `agent`. When `agent` itself is killed (SIGKILL),
//! nothing runs at its exit: the next run in the same log directory finds the record of a run
//! whose `agent` is gone and stops what is left of it.
//!
//! A process is ours when it runs as our user and either carries the dead run's marker, or is
//! in the process group of a recorded server whose leader still runs with the recorded start
//! time (a pid is never trusted alone: a reused pid has another start time). What cannot be
//! found: a process that dropped the variable from its environment and left the server's group
//! (or outlived the group's leader), and anything of another user. Signals go through pidfds,
//! so a process that exits between the check and the signal is never confused with a new one.

use std::collections::HashSet;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::util::fs::{Access, write_atomic};

/// The variable that marks the processes of one run (inherited by the servers' children).
pub const RUN_VAR: &str = "AGENT_SERVER_RUN";
/// How long leftovers of a dead run get between SIGTERM and SIGKILL (it delays a start).
const SWEEP_GRACE: Duration = Duration::from_millis(500);
/// Record files larger than this are not records.
const MAX_RECORD_BYTES: u64 = 256 << 10;
/// The part of a process's environment searched for the marker.
const MAX_ENVIRON_BYTES: u64 = 4 << 20;

/// A process as `/proc` knew it: the pid and its start time (clock ticks after boot).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Proc {
    pid: i32,
    start: u64,
}

/// The record file of a run.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    version: u32,
    /// `/proc/sys/kernel/random/boot_id`: pids and start times mean nothing after a reboot.
    boot: String,
    agent: Proc,
    marker: String,
    servers: Vec<Proc>,
}

/// One manager's run: its marker and its record of the servers it started.
pub struct Run {
    marker: String,
    dir: PathBuf,
    record: Mutex<RecordState>,
}

#[derive(Default)]
struct RecordState {
    servers: Vec<Proc>,
    /// Whether a server was spawned (so there may be marked processes to stop).
    spawned: bool,
    /// Whether the record file is on disk.
    written: bool,
}

impl Run {
    /// A run whose record lives under `log_dir`. First stops what runs of `agent` that were
    /// killed left there (see the module doc).
    pub fn new(log_dir: &Path) -> Run {
        let dir = log_dir.join(".running");
        sweep(&dir);
        let marker = format!("{:016x}{:016x}", rand::random::<u64>(), rand::random::<u64>());
        Run { marker, dir, record: Mutex::new(RecordState::default()) }
    }

    /// The marker's value (what [`RUN_VAR`] is set to for this run's servers).
    pub fn marker(&self) -> &str {
        &self.marker
    }

    /// Before a server is spawned: the record (with the marker) is on disk, so a child that
    /// outlives a killed `agent` can be found even before its pid is recorded.
    pub fn before_spawn(&self) {
        let Ok(mut st) = self.record.lock() else { return };
        st.spawned = true;
        if !st.written {
            st.written = self.write(&st.servers);
        }
    }

    /// A server was spawned as `pid` (the leader of its own process group).
    pub fn spawned(&self, pid: i32) {
        let Some(start) = stat(pid).map(|s| s.start) else { return };
        let Ok(mut st) = self.record.lock() else { return };
        st.servers.push(Proc { pid, start });
        st.written = self.write(&st.servers);
    }

    fn write(&self, servers: &[Proc]) -> bool {
        let Some(agent) = stat(std::process::id() as i32).map(|s| Proc { pid: s.pid, start: s.start }) else {
            return false;
        };
        if !private_dir(&self.dir) {
            return false;
        }
        let record =
            Record { version: 1, boot: boot_id(), agent, marker: self.marker.clone(), servers: servers.to_vec() };
        let Ok(bytes) = serde_json::to_vec(&record) else { return false };
        match write_atomic(&self.record_path(), &bytes, Access::Private) {
            Ok(()) => true,
            Err(e) => {
                tracing::info!("cannot record the running servers in {}: {e}", self.dir.display());
                false
            }
        }
    }

    fn record_path(&self) -> PathBuf {
        self.dir.join(format!("{}-{}.json", std::process::id(), &self.marker[..8]))
    }

    /// This run's processes that carry its marker (the servers, and their children that kept
    /// their environment), excluding `agent` and its ancestors. Empty when nothing was spawned.
    pub fn marked(&self) -> Vec<Target> {
        if !self.record.lock().is_ok_and(|st| st.spawned) {
            return Vec::new();
        }
        let markers: HashSet<&str> = [self.marker.as_str()].into();
        scan(|_, environ| carries_marker(environ, &markers), &HashSet::new())
    }

    /// Everything this run started has been stopped: the record goes.
    pub fn finished(&self) {
        let Ok(mut st) = self.record.lock() else { return };
        if st.written {
            let _ = std::fs::remove_file(self.record_path());
        }
        *st = RecordState::default();
    }
}

/// A process to signal: its pid, and a pidfd that stays bound to it (none on old kernels).
pub struct Target {
    proc_: Proc,
    pidfd: Option<OwnedFd>,
}

impl Target {
    pub fn pid(&self) -> i32 {
        self.proc_.pid
    }

    /// Sends `signal` to this very process (never to another that got its pid since).
    pub fn signal(&self, signal: i32) {
        match &self.pidfd {
            Some(fd) => {
                // SAFETY: pidfd_send_signal with a valid pidfd, no siginfo, no flags.
                unsafe {
                    libc::syscall(libc::SYS_pidfd_send_signal, fd.as_raw_fd(), signal, std::ptr::null::<u8>(), 0u32);
                }
            }
            // Without pidfds: only while the pid still has the start time we saw.
            None if stat(self.proc_.pid).is_some_and(|s| s.start == self.proc_.start) => {
                // SAFETY: kill has no memory-safety preconditions.
                unsafe {
                    libc::kill(self.proc_.pid, signal);
                }
            }
            None => {}
        }
    }

    /// Whether it still runs (a zombie does not).
    pub fn alive(&self) -> bool {
        stat(self.proc_.pid).is_some_and(|s| s.start == self.proc_.start && !s.zombie)
    }
}

/// SIGTERM to each target, SIGKILL after `grace` to those still running (blocking).
fn stop_blocking(targets: &[Target], grace: Duration) {
    for t in targets {
        t.signal(libc::SIGTERM);
    }
    let deadline = Instant::now() + grace;
    while targets.iter().any(Target::alive) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    for t in targets.iter().filter(|t| t.alive()) {
        t.signal(libc::SIGKILL);
    }
}

/// Stops what dead runs recorded in `dir` left running, and removes their records.
fn sweep(dir: &Path) {
    let Some(dir_fd) = open_private_dir(dir) else { return };
    let boot = boot_id();
    let mut dead: Vec<(std::ffi::OsString, Record)> = Vec::new();
    let Ok(entries) = std::fs::read_dir(format!("/proc/self/fd/{}", dir_fd.as_raw_fd())) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().ends_with(".json") {
            continue;
        }
        let Some(record) = read_record(&dir_fd, &name) else { continue };
        let agent_runs = stat(record.agent.pid).is_some_and(|s| s.start == record.agent.start && !s.zombie);
        if record.boot == boot && agent_runs {
            continue;
        }
        dead.push((name, record));
    }
    if dead.is_empty() {
        return;
    }
    // Records of an earlier boot name nothing that runs now.
    let this_boot: Vec<&Record> = dead.iter().map(|(_, r)| r).filter(|r| r.boot == boot).collect();
    let markers: HashSet<&str> = this_boot.iter().map(|r| r.marker.as_str()).collect();
    // Groups whose leader still runs as recorded; a leader with another start time is a reused pid.
    let groups: HashSet<i32> = this_boot
        .iter()
        .flat_map(|r| r.servers.iter())
        .filter(|s| stat(s.pid).is_some_and(|now| now.start == s.start && now.pgrp == s.pid))
        .map(|s| s.pid)
        .collect();
    let targets = if markers.is_empty() {
        Vec::new()
    } else {
        scan(|st, environ| groups.contains(&st.pgrp) || carries_marker(environ, &markers), &groups)
    };
    if !targets.is_empty() {
        let pids: Vec<String> = this_boot.iter().map(|r| r.agent.pid.to_string()).collect();
        tracing::info!(
            "stopping {} process(es) left by agent (pid {}), which was killed before it could stop its servers",
            targets.len(),
            pids.join(", ")
        );
        stop_blocking(&targets, SWEEP_GRACE);
    }
    for (name, _) in dead {
        unlink_at(&dir_fd, &name);
    }
}

/// Same-user processes (not us, not our ancestors) that `wanted` accepts, given their stat and
/// their environment (read only when the stat alone does not decide: pgrp in `by_group`).
fn scan(wanted: impl Fn(&Stat, &[u8]) -> bool, by_group: &HashSet<i32>) -> Vec<Target> {
    let me = std::process::id() as i32;
    let ancestors = ancestors(me);
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        if pid <= 1 || pid == me || ancestors.contains(&pid) {
            continue;
        }
        if !entry.metadata().is_ok_and(|m| m.uid() == uid) {
            continue;
        }
        // Bind to the process first, then check it: the checks are then about this process.
        let pidfd = pidfd_open(pid);
        let Some(st) = stat(pid) else { continue };
        if st.zombie {
            continue;
        }
        let environ = if by_group.contains(&st.pgrp) { Vec::new() } else { environ(pid) };
        if wanted(&st, &environ) {
            out.push(Target { proc_: Proc { pid, start: st.start }, pidfd });
        }
    }
    out
}

/// Whether a NUL-separated environment has `RUN_VAR=<one of markers>`.
fn carries_marker(environ: &[u8], markers: &HashSet<&str>) -> bool {
    let prefix = format!("{RUN_VAR}=");
    environ.split(|&b| b == 0).any(|entry| {
        entry
            .strip_prefix(prefix.as_bytes())
            .and_then(|v| std::str::from_utf8(v).ok())
            .is_some_and(|v| markers.contains(v))
    })
}

/// The fields of `/proc/<pid>/stat` used here.
#[derive(Debug, Clone, Copy)]
pub(super) struct Stat {
    pid: i32,
    pub zombie: bool,
    ppid: i32,
    pub pgrp: i32,
    start: u64,
}

/// `/proc/<pid>/stat`, in one read (procfs reports a size of 0, so `read_to_string` would take
/// several).
pub(super) fn stat(pid: i32) -> Option<Stat> {
    let mut buf = [0u8; 1024];
    let n = std::fs::File::open(format!("/proc/{pid}/stat")).ok()?.read(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf[..n]);
    // After `pid (comm)`: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
    // utime stime cutime cstime priority nice threads itrealvalue starttime ...
    let fields: Vec<&str> = text.rsplit_once(')')?.1.split_whitespace().collect();
    Some(Stat {
        pid,
        zombie: matches!(fields.first(), Some(&"Z") | Some(&"X")),
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

fn ancestors(mut pid: i32) -> HashSet<i32> {
    let mut out = HashSet::new();
    while let Some(st) = stat(pid) {
        if st.ppid <= 1 || !out.insert(st.ppid) {
            break;
        }
        pid = st.ppid;
    }
    out
}

fn environ(pid: i32) -> Vec<u8> {
    let Ok(f) = std::fs::File::open(format!("/proc/{pid}/environ")) else { return Vec::new() };
    let mut buf = Vec::new();
    let _ = f.take(MAX_ENVIRON_BYTES).read_to_end(&mut buf);
    buf
}

fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").map(|s| s.trim().to_string()).unwrap_or_default()
}

#[cfg(target_os = "linux")]
fn pidfd_open(pid: i32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0u32) };
    // SAFETY: a non-negative result is a descriptor this process now owns.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

#[cfg(not(target_os = "linux"))]
fn pidfd_open(_pid: i32) -> Option<OwnedFd> {
    None
}

/// Creates `dir` (0700) when missing; whether it is a directory of ours that nobody else may
/// write to (the only kind whose records are written or believed).
fn private_dir(dir: &Path) -> bool {
    use std::os::unix::fs::DirBuilderExt;
    if let Some(parent) = dir.parent() {
        let _ = crate::util::fs::create_private_dirs(parent);
    }
    let _ = std::fs::DirBuilder::new().mode(0o700).create(dir);
    open_private_dir(dir).is_some()
}

/// `dir` opened without following a link, when it is ours and not writable by others.
fn open_private_dir(dir: &Path) -> Option<OwnedFd> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: a NUL-terminated path and flags; the result is checked.
    let fd =
        unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    // SAFETY: a descriptor just opened by this process.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let meta = std::fs::File::from(fd.try_clone().ok()?).metadata().ok()?;
    // SAFETY: getuid has no preconditions.
    (meta.uid() == unsafe { libc::getuid() } && meta.mode() & 0o022 == 0).then_some(fd)
}

/// The record `name` in the directory `dir`: a regular file of ours, not writable by others.
fn read_record(dir: &OwnedFd, name: &std::ffi::OsStr) -> Option<Record> {
    use std::os::unix::ffi::OsStrExt;
    let cname = std::ffi::CString::new(name.as_bytes()).ok()?;
    // SAFETY: a valid directory descriptor and a NUL-terminated name; the result is checked.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            cname.as_ptr(),
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return None;
    }
    // SAFETY: a descriptor just opened by this process.
    let file = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    let meta = file.metadata().ok()?;
    // SAFETY: getuid has no preconditions.
    if !meta.is_file() || meta.uid() != unsafe { libc::getuid() } || meta.mode() & 0o022 != 0 {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(MAX_RECORD_BYTES).read_to_end(&mut bytes).ok()?;
    let record: Record = serde_json::from_slice(&bytes).ok()?;
    (record.version == 1 && !record.marker.is_empty()).then_some(record)
}

fn unlink_at(dir: &OwnedFd, name: &std::ffi::OsStr) {
    use std::os::unix::ffi::OsStrExt;
    let Ok(cname) = std::ffi::CString::new(name.as_bytes()) else { return };
    // SAFETY: a valid directory descriptor and a NUL-terminated name.
    unsafe {
        libc::unlinkat(dir.as_raw_fd(), cname.as_ptr(), 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_match_whole_entries_only() {
        let markers: HashSet<&str> = ["abc"].into();
        assert!(carries_marker(b"A=1\0AGENT_SERVER_RUN=abc\0B=2\0", &markers));
        assert!(carries_marker(b"AGENT_SERVER_RUN=abc", &markers));
        assert!(!carries_marker(b"AGENT_SERVER_RUN=abcd\0", &markers));
        assert!(!carries_marker(b"XAGENT_SERVER_RUN=abc\0", &markers));
        assert!(!carries_marker(b"OTHER=AGENT_SERVER_RUN=abc\0", &markers));
        assert!(!carries_marker(b"", &markers));
    }

    #[test]
    fn our_own_stat_is_read() {
        let me = stat(std::process::id() as i32).unwrap();
        assert!(!me.zombie && me.start > 0);
        assert!(stat(-5).is_none());
    }

    #[test]
    fn records_are_believed_only_in_a_private_directory_of_ours() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("logs/.running");
        assert!(private_dir(&dir));
        assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(open_private_dir(&dir).is_none(), "world-writable");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        assert!(open_private_dir(&link).is_none(), "a link is not followed");
        let fd = open_private_dir(&dir).unwrap();
        let record = Record {
            version: 1,
            boot: boot_id(),
            agent: Proc { pid: 1, start: 1 },
            marker: "m".into(),
            servers: Vec::new(),
        };
        std::fs::write(dir.join("a.json"), serde_json::to_vec(&record).unwrap()).unwrap();
        assert_eq!(read_record(&fd, "a.json".as_ref()).unwrap().marker, "m");
        std::fs::set_permissions(dir.join("a.json"), std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(read_record(&fd, "a.json".as_ref()).is_none(), "writable by others");
        std::os::unix::fs::symlink(dir.join("a.json"), dir.join("b.json")).unwrap();
        assert!(read_record(&fd, "b.json".as_ref()).is_none(), "a link is not followed");
    }
}
