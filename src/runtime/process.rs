//! Scripts in a worker process: the runner thread and its warm isolate live in a child process
//! of the `agent` binary (`agent __js-worker`), so a stopped script that does not unwind is
//! ended by killing that process.
//!
//! Why: the engine checks for termination only between bytecode instructions, so a script
//! inside a long native builtin (`a.length = 2**32 - 1; a.includes(2)`, a backtracking regular
//! expression, a huge sort) cannot be interrupted; left on a thread of `agent` it would keep a
//! CPU busy long after its caller was told "timed out". A process can always be killed.
//!
//! What crosses the boundary: a job (the request, with the bridge's socket path and token) and
//! stop requests go in, "started" and the outcome come out, as length-prefixed JSON frames on a
//! Unix socket pair the child gets as its stdin. The script reaches MCP exactly as before, through
//! the bridge socket. The child holds a bootstrapped isolate ready as the thread did; a job the
//! parent stops that has not finished [`UNWIND_GRACE`](super::UNWIND_GRACE) later kills the child,
//! and a fresh one (warming its isolate at once) takes its place.
//!
//! `agent exec` forks its first worker from itself at the start of `main` instead
//! ([`prestart_forked`]): the child skips loading the binary again and is made what a spawned
//! worker is (its own process group, the socket its only descriptor beyond stdin, stdout and
//! stderr, the same emptied environment).
//!
//! The child never outlives `agent`: it reads its socket all the time, and the end of the
//! stream (the parent exited or was killed, even with SIGKILL) ends it at once, whatever its
//! runner thread is doing. Its environment is emptied but for the few variables the engine and
//! its caches read, so no secret of `agent`'s environment sits in a process that runs scripts.

use std::collections::HashMap;
use std::io::{BufReader, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;

use super::isolate::{self, JobControl, StopReason};
use super::{ExecOutcome, ExecRequest, FailureKind, Limits, Script, UNWIND_GRACE};
use crate::bridge::BridgeEndpoint;

/// The hidden first argument that turns `agent` into a script worker (see [`worker_main`]).
pub const WORKER_ARG: &str = "__js-worker";

/// The descriptor the child finds its end of the socket pair on: its stdin.
const CHILD_FD: RawFd = 0;

/// A frame longer than this is a broken peer, not a message (outcomes carry at most the output
/// cap of a script).
const MAX_FRAME: usize = 1 << 30;

/// Environment variables a worker keeps: where the caches live (the snapshot, the engine's
/// bytecode), the time zone scripts' dates use, and logging.
const KEPT_ENV: &[&str] =
    &["HOME", "XDG_CACHE_HOME", "TMPDIR", "TZ", "RUST_LOG", "RUST_BACKTRACE", "AGENT_NO_SNAPSHOT"];
/// ... and the engine's own switches (bytecode cache, debugging).
const KEPT_ENV_PREFIXES: &[&str] = &["V82JSC_", "V82_", "QJS_"];

/// Whether a worker keeps the environment variable `name` ([`KEPT_ENV`], [`KEPT_ENV_PREFIXES`]).
fn kept_env(name: &std::ffi::OsStr) -> bool {
    let name = name.to_string_lossy();
    KEPT_ENV.contains(&name.as_ref()) || KEPT_ENV_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// Names the calling thread (a worker's main thread: the process's name in `/proc/<pid>/comm`)
/// `__js-worker`, whether it was forked (its command line is `agent`'s) or executed from
/// `/proc/self/exe` (it would be named `exe`).
fn name_worker() {
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes.
    unsafe { libc::prctl(libc::PR_SET_NAME, c"__js-worker".as_ptr()) };
}

#[derive(Serialize, Deserialize)]
enum ToWorker {
    Run { id: u64, req: WireRequest, keep: bool },
    Stop { id: u64, timeout: bool },
}

/// [`ToWorker::Run`] as the parent writes it, without copying the request.
#[derive(Serialize)]
enum RunRef<'a> {
    Run { id: u64, req: &'a WireRequest, keep: bool },
}

#[derive(Serialize, Deserialize)]
enum FromWorker {
    Started { id: u64 },
    Done { id: u64, outcome: Box<ExecOutcome>, skills_saved: Vec<String>, isolate: super::IsolateUse },
}

/// An [`ExecRequest`] as it crosses to the worker (paths as bytes: they need not be UTF-8).
#[derive(Serialize, Deserialize)]
struct WireRequest {
    workspace: Vec<u8>,
    script_file: Option<Vec<u8>>,
    script_text: Option<String>,
    timeout_ms: u64,
    memory_limit_mb: u64,
    max_output_bytes: usize,
    max_concurrent_calls: usize,
    call_spin_us: u64,
    state_max_bytes: u64,
    state_max_files: u64,
    storage: bool,
    bridge_socket: Option<Vec<u8>>,
    bridge_token: Option<String>,
}

impl WireRequest {
    fn from_request(req: &ExecRequest) -> WireRequest {
        let bytes = |p: &std::path::Path| p.as_os_str().as_bytes().to_vec();
        let (script_file, script_text) = match &req.script {
            Script::File(p) => (Some(bytes(p)), None),
            Script::Inline(text) => (None, Some(text.clone())),
        };
        let l = &req.limits;
        WireRequest {
            workspace: bytes(&req.workspace),
            script_file,
            script_text,
            timeout_ms: u64::try_from(l.timeout.as_millis()).unwrap_or(u64::MAX),
            memory_limit_mb: l.memory_limit_mb,
            max_output_bytes: l.max_output_bytes,
            max_concurrent_calls: l.max_concurrent_calls,
            call_spin_us: u64::try_from(l.call_spin.as_micros()).unwrap_or(u64::MAX),
            state_max_bytes: l.state.max_bytes,
            state_max_files: l.state.max_files,
            storage: l.storage,
            bridge_socket: req.bridge.as_ref().map(|b| bytes(&b.socket)),
            bridge_token: req.bridge.as_ref().map(|b| b.token.clone()),
        }
    }

    fn into_request(self) -> ExecRequest {
        let path = |b: Vec<u8>| PathBuf::from(std::ffi::OsString::from_vec(b));
        let script = match (self.script_file, self.script_text) {
            (Some(file), _) => Script::File(path(file)),
            (None, text) => Script::Inline(text.unwrap_or_default()),
        };
        let bridge = match (self.bridge_socket, self.bridge_token) {
            (Some(socket), Some(token)) => Some(BridgeEndpoint { socket: path(socket), token }),
            _ => None,
        };
        ExecRequest {
            workspace: path(self.workspace),
            script,
            limits: Limits {
                timeout: Duration::from_millis(self.timeout_ms),
                memory_limit_mb: self.memory_limit_mb,
                max_output_bytes: self.max_output_bytes,
                max_concurrent_calls: self.max_concurrent_calls,
                call_spin: Duration::from_micros(self.call_spin_us),
                state: super::state::Quota { max_bytes: self.state_max_bytes, max_files: self.state_max_files },
                storage: self.storage,
            },
            bridge,
        }
    }
}

fn write_frame(w: &mut impl Write, msg: &impl Serialize) -> std::io::Result<()> {
    let body = serde_json::to_vec(msg).map_err(std::io::Error::other)?;
    let len = u32::try_from(body.len())
        .ok()
        .filter(|&n| n as usize <= MAX_FRAME)
        .ok_or_else(|| std::io::Error::other("a frame too large for the worker protocol"))?;
    let mut frame = Vec::with_capacity(4 + body.len());
    frame.extend_from_slice(&len.to_le_bytes());
    frame.extend_from_slice(&body);
    w.write_all(&frame)
}

fn read_frame<T: for<'de> Deserialize<'de>>(r: &mut impl Read) -> std::io::Result<T> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(std::io::Error::other("a frame too large for the worker protocol"));
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body)?;
    serde_json::from_slice(&body).map_err(std::io::Error::other)
}

// ---------------------------------------------------------------------------------------------
// The parent's side

/// What a job's caller waits for.
struct Waiter {
    started: Option<oneshot::Sender<()>>,
    done: oneshot::Sender<ExecOutcome>,
}

/// The jobs a worker was given and has not answered, shared with the thread reading answers.
#[derive(Default)]
struct Jobs {
    inner: Mutex<JobsInner>,
    changed: Condvar,
}

#[derive(Default)]
struct JobsInner {
    waiting: HashMap<u64, Waiter>,
    /// The worker's stream ended (it exited or was killed); nothing more will be answered.
    gone: bool,
}

/// A job sent to a worker: its id, and where "started" and the outcome arrive.
type Submitted = (u64, oneshot::Receiver<()>, oneshot::Receiver<ExecOutcome>);

/// deno_core's own line when a stack trace is asked of an isolate that is being terminated (a
/// script stopped in the middle of a call): noise about our stop, not about the script.
const TERMINATION_NOISE: &[u8] =
    b"warning: Failed to create JsStackFrame from callsite object: Error: execution terminated";

/// Passes the worker's stderr (its log lines) on to ours, line by line, leaving out deno_core's
/// [`TERMINATION_NOISE`]. Reads to the end whatever happens, so the worker never writes into a
/// closed pipe.
fn relay_stderr(stderr: impl Read + Send + 'static) {
    let relay = move || {
        use std::io::BufRead as _;
        let mut lines = BufReader::new(stderr);
        let mut line = Vec::new();
        while lines.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
            if line.starts_with(TERMINATION_NOISE) {
                tracing::debug!("{}", String::from_utf8_lossy(&line).trim_end());
            } else {
                let _ = std::io::stderr().lock().write_all(&line);
            }
            line.clear();
        }
    };
    if let Err(e) = std::thread::Builder::new().name("agent-js-stderr".into()).spawn(relay) {
        tracing::warn!("cannot relay the script worker's messages: {e}");
    }
}

/// One worker process.
struct WorkerProcess {
    /// The binary it runs and the logging it was started with: a prestarted worker serves only
    /// a runner of the same binary whose logging (set once the command line is read) matches.
    exe: PathBuf,
    verbosity: u8,
    child: Mutex<Child>,
    to_child: Mutex<UnixStream>,
    jobs: Arc<Jobs>,
    next_id: AtomicU64,
}

impl WorkerProcess {
    fn spawn(exe: &std::path::Path, limit_mb: u64) -> std::io::Result<Arc<WorkerProcess>> {
        let (ours, theirs) = UnixStream::pair()?;
        let mut cmd = std::process::Command::new(exe);
        // The socket is the child's stdin and the process group is set through `posix_spawn`'s
        // attributes: with no `pre_exec` hook the standard library starts the child with
        // `posix_spawn` (a vfork) instead of `fork`, which would copy all of `agent`'s page
        // tables and make every page `agent` writes afterwards a copy-on-write fault.
        let verbosity = log_verbosity();
        cmd.arg(WORKER_ARG)
            .arg(limit_mb.to_string())
            .arg(verbosity.to_string())
            .stdin(Stdio::from(std::os::fd::OwnedFd::from(theirs)))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            // A process group of its own, as the MCP servers have: Ctrl-C on the terminal
            // reaches `agent`, which stops the script, not the worker, which would die.
            .process_group(0)
            .env_clear()
            .envs(std::env::vars_os().filter(|(k, _)| kept_env(k)))
            // Its caches are where this process keeps its own (the same directory, named
            // outright; the crate's unit tests keep theirs in the build directory).
            .envs(crate::util::dirs::cache_home().map(|dir| ("XDG_CACHE_HOME", dir)));
        let mut child = cmd.spawn()?;
        // Our copy of the child's end: the child must see the end of the stream when we go.
        drop(cmd);
        if let Some(stderr) = child.stderr.take() {
            relay_stderr(stderr);
        }
        WorkerProcess::attach(exe, verbosity, Child::Spawned(child), ours)
    }

    /// The parent's side of a started worker `child` whose socket end is `ours`: starts reading
    /// its answers.
    fn attach(
        exe: &std::path::Path,
        verbosity: u8,
        child: Child,
        ours: UnixStream,
    ) -> std::io::Result<Arc<WorkerProcess>> {
        let jobs = Arc::new(Jobs::default());
        let reader = ours.try_clone();
        let worker = Arc::new(WorkerProcess {
            exe: exe.to_path_buf(),
            verbosity,
            child: Mutex::new(child),
            to_child: Mutex::new(ours),
            jobs,
            next_id: AtomicU64::new(1),
        });
        let answers = worker.jobs.clone();
        let spawned = reader.and_then(|reader| {
            std::thread::Builder::new()
                .name("agent-js-answers".into())
                .spawn(move || read_answers(BufReader::new(reader), &answers))
        });
        if let Err(e) = spawned {
            worker.kill();
            return Err(e);
        }
        Ok(worker)
    }

    fn gone(&self) -> bool {
        self.jobs.inner.lock().map(|j| j.gone).unwrap_or(true)
    }

    /// Sends a job. `Err` when the worker is gone (its answers could never come).
    fn submit(&self, req: &WireRequest, keep: bool) -> Result<Submitted, ()> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (started_tx, started) = oneshot::channel();
        let (done_tx, done) = oneshot::channel();
        {
            let mut jobs = self.jobs.inner.lock().map_err(|_| ())?;
            if jobs.gone {
                return Err(());
            }
            jobs.waiting.insert(id, Waiter { started: Some(started_tx), done: done_tx });
        }
        let sent = match self.to_child.lock() {
            Ok(mut s) => write_frame(&mut *s, &RunRef::Run { id, req, keep }).is_ok(),
            Err(_) => false,
        };
        if !sent {
            if let Ok(mut jobs) = self.jobs.inner.lock() {
                jobs.waiting.remove(&id);
            }
            return Err(());
        }
        Ok((id, started, done))
    }

    fn stop(&self, id: u64, reason: StopReason) {
        if let Ok(mut s) = self.to_child.lock() {
            let _ = write_frame(&mut *s, &ToWorker::Stop { id, timeout: matches!(reason, StopReason::Timeout) });
        }
    }

    /// Waits up to `grace` for job `id` to be answered; `false` if it was not (nor the worker gone).
    fn finishes_within(&self, id: u64, grace: Duration) -> bool {
        let Ok(jobs) = self.jobs.inner.lock() else { return false };
        match self.jobs.changed.wait_timeout_while(jobs, grace, |j| !j.gone && j.waiting.contains_key(&id)) {
            Ok((j, _)) => j.gone || !j.waiting.contains_key(&id),
            Err(_) => false,
        }
    }

    /// Kills the process (SIGKILL). It stops running at once; reaping it (waiting for the
    /// kernel to take its memory down, ~1 ms) happens on a thread of its own, so a caller that
    /// drops its executor to print a result and exit does not wait for it.
    fn kill(&self) {
        if let Ok(mut child) = self.child.lock() {
            std::mem::replace(&mut *child, Child::Reaped).kill_and_reap();
        }
    }
}

/// A worker process as its parent holds it: started through `posix_spawn` ([`WorkerProcess::spawn`])
/// or forked at the start of `main` ([`prestart_forked`]).
enum Child {
    Spawned(std::process::Child),
    Forked(libc::pid_t),
    Reaped,
}

impl Child {
    fn kill_and_reap(mut self) {
        match &mut self {
            Child::Spawned(c) => {
                let _ = c.kill();
            }
            // SAFETY: kill with the pid of our own child, which nothing has reaped yet (only
            // this type waits for it), so the pid is still its.
            Child::Forked(pid) => unsafe {
                libc::kill(*pid, libc::SIGKILL);
            },
            Child::Reaped => return,
        }
        let reap = Arc::new(Mutex::new(Some(self)));
        let theirs = reap.clone();
        let spawned = std::thread::Builder::new().name("agent-js-reap".into()).spawn(move || {
            if let Some(child) = theirs.lock().ok().and_then(|mut c| c.take()) {
                child.wait();
            }
        });
        // No thread: reap here rather than leave a zombie behind.
        if spawned.is_err()
            && let Some(child) = reap.lock().ok().and_then(|mut c| c.take())
        {
            child.wait();
        }
    }

    fn wait(self) {
        match self {
            Child::Spawned(mut c) => {
                let _ = c.wait();
            }
            Child::Forked(pid) => loop {
                let mut status = 0;
                // SAFETY: waitpid on our own child's pid with a valid out-pointer.
                let r = unsafe { libc::waitpid(pid, &mut status, 0) };
                if r >= 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                    break;
                }
            },
            Child::Reaped => {}
        }
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The `-v` count the worker logs with: the parent's level.
fn log_verbosity() -> u8 {
    let level = tracing::level_filters::LevelFilter::current();
    if level >= tracing::level_filters::LevelFilter::DEBUG {
        2
    } else if level >= tracing::level_filters::LevelFilter::INFO {
        1
    } else {
        0
    }
}

/// The parent's thread per worker: hands each answer to its waiter; when the stream ends, marks
/// the worker gone and drops every waiter (their callers see the runner stopped).
fn read_answers(mut stream: BufReader<UnixStream>, jobs: &Jobs) {
    loop {
        let Ok(answer) = read_frame::<FromWorker>(&mut stream) else { break };
        let Ok(mut j) = jobs.inner.lock() else { break };
        match answer {
            FromWorker::Started { id } => {
                if let Some(tx) = j.waiting.get_mut(&id).and_then(|w| w.started.take()) {
                    let _ = tx.send(());
                }
            }
            FromWorker::Done { id, mut outcome, skills_saved, isolate } => {
                if let Some(w) = j.waiting.remove(&id) {
                    outcome.skills_saved = skills_saved;
                    outcome.isolate = isolate;
                    let _ = w.done.send(*outcome);
                }
                jobs.changed.notify_all();
            }
        }
    }
    if let Ok(mut j) = jobs.inner.lock() {
        j.gone = true;
        j.waiting.clear();
    }
    jobs.changed.notify_all();
}

/// The worker slot of an executor, held by the job that runs (one at a time) and, after a job
/// was stopped, by the watch that waits for it to unwind.
type Slot = Arc<tokio::sync::Mutex<Option<Arc<WorkerProcess>>>>;
type SlotGuard = tokio::sync::OwnedMutexGuard<Option<Arc<WorkerProcess>>>;

/// The worker [`prestart`] started, until the first [`Runner`] takes it.
static PRESTARTED: Mutex<Option<Arc<WorkerProcess>>> = Mutex::new(None);

/// Starts a script worker of `exe` now, for the first executor this process makes to take: the
/// worker's own start (loading the binary, restoring its first isolate) then overlaps what
/// `agent` does before it has a script to run (parsing its arguments and configuration, reading
/// the script), which is most of a cold `agent exec`. A worker no executor takes ends with
/// `agent` (it sees the end of its socket).
pub fn prestart(exe: &std::path::Path, limit_mb: u64) {
    match WorkerProcess::spawn(exe, limit_mb) {
        Ok(w) => {
            if let Ok(mut p) = PRESTARTED.lock() {
                *p = Some(w);
            }
        }
        Err(e) => tracing::debug!("cannot start a script worker early: {e}"),
    }
}

/// The worker [`prestart_forked`] made of this process, in the child: [`ForkedWorker::run`]
/// serves the parent's jobs until it goes.
pub struct ForkedWorker {
    socket: UnixStream,
    limit_mb: u64,
}

impl ForkedWorker {
    /// Serves jobs on the socket, as [`worker_main`] does; the exit status. Only its first
    /// isolate is made ahead: `agent exec` runs one script and ends the worker once answered.
    pub fn run(self) -> u8 {
        serve_jobs(self.socket, self.limit_mb, isolate::Ahead::First)
    }
}

/// Starts the first script worker of `exe` as [`prestart`] does, but by forking this process
/// instead of executing the binary again: the child is `agent` as it is now, already loaded and
/// linked, so it skips the ~2 ms a process start of this binary takes (mapping it, the dynamic
/// loader's relocations, the libraries' constructors) and restores its isolate that much sooner.
/// Returns the worker in the child (the caller runs it and exits), `None` in the parent.
///
/// The child is made what [`WorkerProcess::spawn`] makes: its own process group, the socket its
/// only descriptor besides stdin and stdout (`/dev/null`) and stderr (a pipe the parent relays),
/// the environment emptied but for [`KEPT_ENV`], and the name `__js-worker` (`/proc/<pid>/comm`;
/// its command line stays `agent`'s). It shares `agent`'s address-space layout (a fork is not
/// re-randomised); a script that took over its worker runs as the user either way.
///
/// # Safety
///
/// Only while this process has a single thread (first thing in `main`): the child of a fork
/// has only the forking thread, and anything another thread held (a lock, the allocator's) would
/// stay held in it forever. It checks `/proc/self/status` and falls back to [`prestart`] when
/// another thread exists.
pub unsafe fn prestart_forked(exe: &std::path::Path, limit_mb: u64) -> Option<ForkedWorker> {
    if !single_threaded() {
        prestart(exe, limit_mb);
        return None;
    }
    let verbosity = log_verbosity();
    let started = (|| {
        let (ours, theirs) = UnixStream::pair()?;
        let null = std::fs::OpenOptions::new().read(true).write(true).open("/dev/null")?;
        let (err_read, err_write) = std::io::pipe()?;
        // SAFETY: the caller guarantees no other thread exists (checked above too).
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if pid == 0 {
            drop((ours, err_read));
            become_worker(&theirs, null, err_write.into());
            return Ok(Some(ForkedWorker { socket: theirs, limit_mb }));
        }
        drop((theirs, null, err_write));
        relay_stderr(err_read);
        let worker = WorkerProcess::attach(exe, verbosity, Child::Forked(pid), ours)?;
        if let Ok(mut p) = PRESTARTED.lock() {
            *p = Some(worker);
        }
        Ok(None)
    })();
    match started {
        Ok(child) => child,
        Err(e) => {
            tracing::debug!("cannot fork a script worker early ({e}); starting one");
            prestart(exe, limit_mb);
            None
        }
    }
}

/// Whether this process has one thread, as `/proc/self/status` says.
fn single_threaded() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .is_ok_and(|s| s.lines().any(|l| l.strip_prefix("Threads:").is_some_and(|n| n.trim() == "1")))
}

/// In a forked child: what `posix_spawn`'s file actions, process group and environment make of a
/// spawned worker. stdin and stdout become `null`, stderr `err`, every other descriptor but
/// `socket` is closed (the parent's end of the socket among them: the child must see the end
/// of the stream when the parent goes).
fn become_worker(socket: &UnixStream, null: std::fs::File, err: std::os::fd::OwnedFd) {
    let keep = socket.as_raw_fd();
    // SAFETY: plain system calls on descriptors of this (single-threaded) process.
    unsafe {
        libc::setpgid(0, 0);
        libc::dup2(null.as_raw_fd(), 0);
        libc::dup2(null.as_raw_fd(), 1);
        libc::dup2(err.as_raw_fd(), 2);
    }
    drop((null, err));
    // SAFETY: no descriptor above 2 other than `socket` is owned by anything alive in this
    // process (the parent's ends were dropped above; any other is the parent's, which this copy
    // must not hold).
    unsafe {
        if keep > 3 {
            libc::close_range(3, (keep - 1) as libc::c_uint, 0);
        }
        libc::close_range((keep + 1) as libc::c_uint, libc::c_uint::MAX, 0);
    }
    name_worker();
    scrub_environment();
}

/// Empties a forked worker's environment but for [`KEPT_ENV`], as `env_clear` does for a spawned
/// one, including the strings the process started with: removing a variable only unlinks it,
/// and its bytes (an API key of `agent`'s environment) would stay in memory and in
/// `/proc/<pid>/environ`. That area is rewritten with the kept variables alone.
fn scrub_environment() {
    // Only the names are read from the environment (and the values of the variables kept):
    // reading every value would leave a copy of each secret in freed memory.
    let names = environment_names();
    let kept: Vec<_> =
        names.iter().filter(|k| kept_env(k)).filter_map(|k| Some((k.clone(), std::env::var_os(k)?))).collect();
    for k in &names {
        // SAFETY: this process has a single thread, so nothing reads the environment meanwhile.
        unsafe { std::env::remove_var(k) };
    }
    if let Some(area) = initial_environment() {
        let mut packed = Vec::new();
        for (k, v) in &kept {
            packed.extend_from_slice(k.as_bytes());
            packed.push(b'=');
            packed.extend_from_slice(v.as_bytes());
            packed.push(0);
        }
        area.fill(0);
        if let Some(head) = area.get_mut(..packed.len()) {
            head.copy_from_slice(&packed);
        }
    }
    for (k, v) in kept {
        // SAFETY: as above.
        unsafe { std::env::set_var(k, v) };
    }
}

/// The names of this process's environment variables, read from `environ` without copying any
/// value.
fn environment_names() -> Vec<std::ffi::OsString> {
    unsafe extern "C" {
        static environ: *const *const libc::c_char;
    }
    let mut names = Vec::new();
    // SAFETY: `environ` is the C library's NULL-terminated array of NUL-terminated strings; this
    // process has a single thread, so nothing changes it while it is read.
    unsafe {
        let mut entry = environ;
        while !entry.is_null() && !(*entry).is_null() {
            let bytes = std::ffi::CStr::from_ptr(*entry).to_bytes();
            let name = bytes.split(|&b| b == b'=').next().unwrap_or_default();
            if !name.is_empty() {
                names.push(std::ffi::OsStr::from_bytes(name).to_os_string());
            }
            entry = entry.add(1);
        }
    }
    names
}

/// The area the kernel wrote this process's environment strings to when it started (on its
/// stack, between `env_start` and `env_end` of `/proc/self/stat`).
fn initial_environment() -> Option<&'static mut [u8]> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name start at the third (the state); env_start is the 50th.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let start: usize = fields.get(47)?.parse().ok()?;
    let end: usize = fields.get(48)?.parse().ok()?;
    let len = end.checked_sub(start).filter(|&l| l > 0)?;
    // SAFETY: the kernel maps this area writable for the life of the process and nothing else
    // points into it once every variable has been removed from the environment (the caller
    // does that first); this process has a single thread.
    Some(unsafe { std::slice::from_raw_parts_mut(start as *mut u8, len) })
}

/// Runs jobs in a worker process of `exe` (the executor's process mode).
pub(crate) struct Runner {
    exe: PathBuf,
    slot: Slot,
    prepared_limit_mb: Arc<AtomicU64>,
    /// Session steps: the worker keeps the isolate between them.
    keep: bool,
}

impl Runner {
    /// Starts the first worker at once (its isolate warms while the caller does other work), or
    /// takes the one [`prestart`] started for this binary.
    pub(crate) fn start(exe: PathBuf, limit_mb: u64, keep: bool) -> Runner {
        let early = PRESTARTED
            .lock()
            .ok()
            .and_then(|mut p| p.take())
            .filter(|w| w.exe == exe && w.verbosity == log_verbosity() && !w.gone());
        let first = match early {
            Some(w) => Some(w),
            None => match WorkerProcess::spawn(&exe, limit_mb) {
                Ok(w) => Some(w),
                Err(e) => {
                    tracing::warn!("cannot start the script worker {}: {e}", exe.display());
                    None
                }
            },
        };
        Runner {
            exe,
            slot: Arc::new(tokio::sync::Mutex::new(first)),
            prepared_limit_mb: Arc::new(AtomicU64::new(limit_mb)),
            keep,
        }
    }

    pub(crate) async fn execute(&self, req: ExecRequest) -> ExecOutcome {
        let timeout = req.limits.timeout;
        self.prepared_limit_mb.store(req.limits.memory_limit_mb, Ordering::Relaxed);
        let wire = WireRequest::from_request(&req);
        let mut slot = self.slot.clone().lock_owned().await;
        // A worker that died since (or never started) is replaced; a send that fails gets one more try.
        let mut submitted = None;
        for _ in 0..2 {
            let worker = match slot.as_ref().filter(|w| !w.gone()) {
                Some(w) => w.clone(),
                None => match WorkerProcess::spawn(&self.exe, req.limits.memory_limit_mb) {
                    Ok(w) => {
                        *slot = Some(w.clone());
                        w
                    }
                    Err(e) => {
                        return ExecOutcome::failed(
                            FailureKind::Script,
                            format!("internal error: cannot start the script worker: {e}"),
                        );
                    }
                },
            };
            match worker.submit(&wire, self.keep) {
                Ok((id, started, done)) => {
                    submitted = Some((worker, id, started, done));
                    break;
                }
                Err(()) => *slot = None,
            }
        }
        let Some((worker, id, started, mut done)) = submitted else {
            return ExecOutcome::failed(
                FailureKind::Script,
                "internal error: the script worker is not available".into(),
            );
        };
        // From here on, dropping this future (Ctrl-C, a caller's own timeout) stops the script,
        // and kills the worker if it does not unwind.
        let mut watch = Watch {
            job: Some((worker.clone(), id, slot)),
            exe: self.exe.clone(),
            limit: self.prepared_limit_mb.clone(),
        };
        if started.await.is_err() {
            // The job never started: its outcome says why, unless the worker died.
            if let Ok(o) = done.try_recv() {
                watch.done();
                return o;
            }
            watch.replace_worker();
            return ExecOutcome::failed(FailureKind::Script, "internal error: the script runner stopped".into()).ran();
        }
        let outcome = tokio::select! {
            r = &mut done => r.ok(),
            // Time a tool call spent waiting for the user (elicitation, sampling, approvals) is not counted.
            () = crate::util::clock::user_wait().sleep(timeout) => {
                worker.stop(id, StopReason::Timeout);
                match tokio::time::timeout(UNWIND_GRACE, &mut done).await {
                    Ok(r) => r.ok(),
                    Err(_) => {
                        // Stuck where the engine cannot interrupt it: end the process.
                        tracing::warn!("the script did not stop after its timeout; killing its worker process");
                        watch.replace_worker();
                        let mut o = ExecOutcome::failed(FailureKind::Timeout, isolate::timeout_message(timeout)).ran();
                        o.duration_ms = timeout.as_secs_f64() * 1000.0;
                        Some(o)
                    }
                }
            }
        };
        match outcome {
            Some(o) => {
                watch.done();
                o
            }
            None => {
                watch.replace_worker();
                ExecOutcome::failed(FailureKind::Script, "internal error: the script runner stopped".into()).ran()
            }
        }
    }
}

/// A running job's worker and slot: released when the job ended; when the job's future is
/// dropped first, the job is stopped and, if it does not unwind within the grace, its worker
/// killed and replaced (on a thread of its own, holding the slot so no job queues behind it).
struct Watch {
    job: Option<(Arc<WorkerProcess>, u64, SlotGuard)>,
    exe: PathBuf,
    limit: Arc<AtomicU64>,
}

impl Watch {
    fn done(&mut self) {
        self.job = None;
    }

    /// Kills the job's worker and puts a fresh one (warming at once) in the slot.
    fn replace_worker(&mut self) {
        if let Some((worker, _, mut slot)) = self.job.take() {
            worker.kill();
            *slot = fresh_worker(&self.exe, self.limit.load(Ordering::Relaxed));
        }
    }
}

fn fresh_worker(exe: &std::path::Path, limit_mb: u64) -> Option<Arc<WorkerProcess>> {
    WorkerProcess::spawn(exe, limit_mb).map_err(|e| tracing::warn!("cannot start a fresh script worker: {e}")).ok()
}

impl Drop for Watch {
    fn drop(&mut self) {
        let Some((worker, id, mut slot)) = self.job.take() else { return };
        worker.stop(id, StopReason::Cancelled);
        let (exe, limit) = (self.exe.clone(), self.limit.load(Ordering::Relaxed));
        let spawned = std::thread::Builder::new().name("agent-js-stop".into()).spawn(move || {
            if !worker.finishes_within(id, UNWIND_GRACE) {
                // Not a warning: the caller gave up on the script (Ctrl-C, a signal, a client's
                // cancel) and is often exiting; replacing the worker is nothing to act on.
                tracing::debug!("a cancelled script did not stop; killing its worker process");
                worker.kill();
                *slot = fresh_worker(&exe, limit);
            }
        });
        if let Err(e) = spawned {
            tracing::warn!("cannot watch a cancelled script ({e}); killing its worker process");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The worker's side

/// The `-v` count a worker was started with (its third argument), for `main` to set up logging.
pub fn worker_verbosity() -> u8 {
    std::env::args().nth(3).and_then(|a| a.parse().ok()).unwrap_or(0)
}

/// What a worker knows of the jobs it was given: the running one's control, or a stop that came
/// before the job started.
#[derive(Default)]
struct Controls {
    running: HashMap<u64, JobControl>,
    stop_first: HashMap<u64, StopReason>,
    /// Jobs up to this one are finished (ids grow, jobs run in order): late stops are ignored.
    finished: u64,
}

impl Controls {
    fn stop(&mut self, id: u64, reason: StopReason) {
        if id <= self.finished {
            return;
        }
        match self.running.get(&id) {
            Some(c) => c.stop(reason),
            None => {
                self.stop_first.insert(id, reason);
            }
        }
    }

    fn started(&mut self, id: u64, control: JobControl) {
        if let Some(reason) = self.stop_first.remove(&id) {
            control.stop(reason);
        }
        self.running.insert(id, control);
    }

    fn finished(&mut self, id: u64) {
        self.running.remove(&id);
        self.stop_first.remove(&id);
        self.finished = self.finished.max(id);
    }
}

/// The script worker: runs the jobs that come on its stdin (a socket), one at a time on its runner thread, and
/// answers on the same socket; ends as soon as the parent's end closes. Called by `main` when
/// the first argument is [`WORKER_ARG`]; returns the exit code.
pub fn worker_main() -> u8 {
    let Some(socket) = inherited_socket() else {
        tracing::error!("{WORKER_ARG}: stdin is not the socket this worker is started with");
        return 2;
    };
    let limit_mb = std::env::args().nth(2).and_then(|a| a.parse().ok()).unwrap_or(super::MIN_HEAP_MB);
    name_worker();
    serve_jobs(socket, limit_mb, isolate::Ahead::Always)
}

/// The worker's loop: runs the jobs that arrive on `socket`; the runner answers on it itself
/// ([`Answer`]), so an answer wakes no other thread of the worker on its way out.
fn serve_jobs(socket: UnixStream, limit_mb: u64, ahead: isolate::Ahead) -> u8 {
    // The runner's heap grows by at least 8 MiB at a time instead of glibc's 128 KiB: restoring
    // the first isolate otherwise grows it with an `mprotect` call every few pages. Nothing more is
    // made resident (peak RSS unchanged), and a cold `agent exec` takes ~1.5 ms less CPU
    // (`perf stat -e task-clock -r 30 agent exec trivial.ts`). Before any thread exists.
    // SAFETY: mallopt takes two integers and changes only the allocator's parameters.
    unsafe {
        libc::mallopt(libc::M_TOP_PAD, 8 << 20);
    }
    let limit = Arc::new(AtomicU64::new(limit_mb));
    let mut runner = isolate::Worker::spawn_preparing(limit.clone(), ahead);
    let Ok(writer) = socket.try_clone() else { return 2 };
    let out = Arc::new(Mutex::new(writer));
    let controls = Arc::new(Mutex::new(Controls::default()));
    let mut input = BufReader::new(socket);
    loop {
        match read_frame::<ToWorker>(&mut input) {
            Ok(ToWorker::Run { id, req, keep }) => {
                let req = req.into_request();
                limit.store(req.limits.memory_limit_mb, Ordering::Relaxed);
                let answer = Answer { id, out: out.clone(), controls: controls.clone(), answered: false };
                let job = isolate::Job::reporting(req, keep, Box::new(answer));
                if let Err(job) = runner.send(job) {
                    // The runner thread died (a panic in the engine): start another. A job no
                    // runner takes is answered as failed when it is dropped.
                    runner = isolate::Worker::spawn_preparing(limit.clone(), ahead);
                    let _ = runner.send(job);
                }
            }
            Ok(ToWorker::Stop { id, timeout }) => {
                let reason = if timeout { StopReason::Timeout } else { StopReason::Cancelled };
                if let Ok(mut c) = controls.lock() {
                    c.stop(id, reason);
                }
            }
            // The parent is gone (or talks nonsense): end now, whatever the runner is doing.
            Err(_) => end_now(),
        }
    }
}

/// A job's answers to the parent, written by the runner thread: "started" once the runner took
/// it (applying a stop that came first), then its outcome. Dropped without an outcome (the
/// runner thread died with the job queued or running), it answers that the runner stopped, so
/// the parent never waits for an answer that cannot come.
struct Answer {
    id: u64,
    out: Arc<Mutex<UnixStream>>,
    controls: Arc<Mutex<Controls>>,
    answered: bool,
}

impl Answer {
    fn send(&self, frame: &FromWorker) {
        let written = match self.out.lock() {
            Ok(mut out) => write_frame(&mut *out, frame).is_ok(),
            Err(_) => false,
        };
        if !written {
            // The parent is gone.
            end_now();
        }
    }

    fn finish(&mut self, mut outcome: ExecOutcome) {
        self.answered = true;
        if let Ok(mut c) = self.controls.lock() {
            c.finished(self.id);
        }
        let skills_saved = std::mem::take(&mut outcome.skills_saved);
        let isolate = outcome.isolate;
        self.send(&FromWorker::Done { id: self.id, outcome: Box::new(outcome), skills_saved, isolate });
    }
}

impl isolate::Report for Answer {
    fn started(&mut self, control: JobControl) {
        if let Ok(mut c) = self.controls.lock() {
            c.started(self.id, control);
        }
        self.send(&FromWorker::Started { id: self.id });
    }

    fn done(mut self: Box<Self>, outcome: ExecOutcome) {
        self.finish(outcome);
    }
}

impl Drop for Answer {
    fn drop(&mut self) {
        if !self.answered {
            self.finish(ExecOutcome::failed(FailureKind::Script, "internal error: the script runner stopped".into()));
        }
    }
}

/// Ends the worker at once: no destructors, no waiting for a runner stuck in the engine.
fn end_now() -> ! {
    // SAFETY: `_exit` has no preconditions and does not return.
    unsafe { libc::_exit(0) }
}

/// The socket on stdin, as the parent leaves it, moved to a descriptor of its own that is owned
/// from here on; stdin becomes `/dev/null`, so nothing that reads stdin can take its frames.
fn inherited_socket() -> Option<UnixStream> {
    // SAFETY: fstat on a descriptor number with a zeroed out-buffer; fails cleanly if it is not open.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(CHILD_FD, &mut st) } != 0 || st.st_mode & libc::S_IFMT != libc::S_IFSOCK {
        return None;
    }
    // Close-on-exec: the worker starts no processes, but nothing else should see it.
    // SAFETY: duplicates an open descriptor; the copy is owned by nothing else in this process.
    let fd = unsafe { libc::fcntl(CHILD_FD, libc::F_DUPFD_CLOEXEC, 3) };
    if fd < 0 {
        return None;
    }
    // SAFETY: `fd` was just created by the call above and is owned here alone.
    let socket = unsafe { UnixStream::from_raw_fd(fd) };
    let null = std::fs::File::open("/dev/null").ok()?;
    // SAFETY: dup2 of an open descriptor onto stdin, which closes our other copy of the socket.
    if unsafe { libc::dup2(null.as_raw_fd(), CHILD_FD) } < 0 {
        return None;
    }
    Some(socket)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The check that keeps `prestart_forked` from forking a process with other threads (whose
    /// locks would stay held in the child): with a second thread alive it answers no, and
    /// `prestart_forked` starts the worker with `posix_spawn` instead. (That a single-threaded
    /// `agent exec` does fork is `exec::agent_exec_runs_its_script_in_a_worker_forked_from_itself`.)
    #[test]
    fn a_process_with_another_thread_is_not_single_threaded() {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let other = std::thread::spawn(move || stopped.recv());
        assert!(!single_threaded());
        drop(stop);
        let _ = other.join();
    }

    /// The environment a worker keeps: the caches' and the engine's variables, no secret.
    #[test]
    fn a_worker_keeps_only_the_engines_environment() {
        for kept in ["HOME", "XDG_CACHE_HOME", "TZ", "V82JSC_BC_CACHE_DIR", "QJS_NO_WASM"] {
            assert!(kept_env(kept.as_ref()), "{kept}");
        }
        for dropped in ["ANTHROPIC_API_KEY", "AGENT_TOKEN", "PATH", "HOMEX", "XV82JSC_"] {
            assert!(!kept_env(dropped.as_ref()), "{dropped}");
        }
    }

    /// The runner's answers reach the parent in order: "started" (the job's control registered
    /// for a stop), then the outcome, once. A job dropped unanswered (its runner thread died)
    /// is answered as failed, so the parent does not wait forever.
    #[test]
    fn a_job_is_answered_once_even_when_its_runner_drops_it() {
        use isolate::Report;
        let (parent, child) = UnixStream::pair().unwrap();
        let out = Arc::new(Mutex::new(child));
        let controls = Arc::new(Mutex::new(Controls::default()));
        let answer = |id| Box::new(Answer { id, out: out.clone(), controls: controls.clone(), answered: false });

        let mut lost = answer(3);
        lost.started(JobControl::inert());
        assert!(controls.lock().unwrap().running.contains_key(&3), "a stop could not reach the job");
        drop(lost);
        assert!(!controls.lock().unwrap().running.contains_key(&3));
        let mut kept = answer(4);
        kept.started(JobControl::inert());
        kept.done(ExecOutcome { stdout: "hello\n".into(), ..ExecOutcome::default() });
        drop(out);

        let mut frames = BufReader::new(parent);
        assert!(matches!(read_frame::<FromWorker>(&mut frames).unwrap(), FromWorker::Started { id: 3 }));
        let FromWorker::Done { id: 3, outcome, .. } = read_frame::<FromWorker>(&mut frames).unwrap() else {
            panic!("the dropped job was not answered");
        };
        assert!(outcome.error.is_some_and(|e| e.message.contains("the script runner stopped")));
        assert!(matches!(read_frame::<FromWorker>(&mut frames).unwrap(), FromWorker::Started { id: 4 }));
        let FromWorker::Done { id: 4, outcome, .. } = read_frame::<FromWorker>(&mut frames).unwrap() else {
            panic!("the answered job's outcome is missing");
        };
        assert_eq!(outcome.stdout, "hello\n");
        assert!(read_frame::<FromWorker>(&mut frames).is_err(), "a job was answered twice");
    }

    /// What the parent writes is what the worker reads, paths that are not UTF-8 included.
    #[test]
    fn a_request_crosses_the_socket_unchanged() {
        use std::os::unix::ffi::OsStrExt;
        let odd = PathBuf::from(std::ffi::OsStr::from_bytes(b"/tmp/ws-\xff"));
        let req = ExecRequest {
            workspace: odd.clone(),
            script: Script::File(odd.join("main.ts")),
            limits: Limits { timeout: Duration::from_millis(1500), storage: false, ..Limits::default() },
            bridge: Some(BridgeEndpoint { socket: odd.join("bridge.sock"), token: "t0k".into() }),
        };
        let wire = WireRequest::from_request(&req);
        let mut frame = Vec::new();
        write_frame(&mut frame, &RunRef::Run { id: 7, req: &wire, keep: true }).unwrap();
        let ToWorker::Run { id, req: back, keep } = read_frame::<ToWorker>(&mut frame.as_slice()).unwrap() else {
            panic!("not a run")
        };
        assert_eq!((id, keep), (7, true));
        let back = back.into_request();
        assert_eq!(back.workspace, req.workspace);
        assert!(matches!(&back.script, Script::File(p) if *p == odd.join("main.ts")));
        assert_eq!(back.limits, req.limits);
        assert_eq!(
            back.bridge.as_ref().map(|b| (&b.socket, &b.token)),
            Some((&odd.join("bridge.sock"), &"t0k".to_string()))
        );
        // A length past the cap is refused before anything is allocated for it.
        let huge = (u32::MAX).to_le_bytes();
        assert!(read_frame::<ToWorker>(&mut huge.as_slice()).is_err());
    }
}
