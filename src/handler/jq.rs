//! jq result handlers through the `jaq` crates (never a shell-out), and the worker process a
//! filter runs in.
//!
//! jaq has no recursion limit (non-tail recursion such as `def f: 1 + f; f` overflows the
//! native stack, which aborts the whole process) and no way to interrupt a running filter. So a
//! filter is *compiled* in-process (on a thread with a generous stack, input capped at
//! [`MAX_FILTER_BYTES`]) but *run* in a child process: this binary again, with [`WORKER_ARG`],
//! killed at the code-mode timeout. A stack overflow, an exhausted memory limit or a timeout
//! kills only the worker and comes back as a one-line error. Inside, outputs are capped in number
//! ([`MAX_OUTPUTS`]) and in bytes (the code-mode output limit); the worker stops at the first
//! output past a cap.
//!
//! Workers are kept between filters (starting one costs a few milliseconds, a filter usually
//! tens of microseconds): an idle worker waits for its next job on stdin, length-prefixed JSON
//! both ways. One that died, was killed at a timeout, ran [`JOBS_PER_WORKER`] jobs or kept more
//! than [`RETIRE_ABOVE_BYTES`] of heap after a job is not used again; the next filter starts a
//! fresh one. Every job starts from the same state (the filter is compiled anew, nothing is
//! kept between jobs but the allocator's free lists).
//!
//! The worker holds itself to its limits even when `agent` cannot (killed with SIGKILL, hung):
//! its heap is counted by the binary's allocator (`util::alloc`) and held, per job, to the
//! code-mode memory limit on top of what the input takes; `RLIMIT_AS` backs that up,
//! `RLIMIT_CPU` (moved on at each job) stops it a little after each job's timeout's worth of CPU,
//! a watchdog thread ends it a second after a job's timeout or as soon as `agent` is gone, and
//! the kernel kills it when `agent` dies (`PR_SET_PDEATHSIG`).

use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jaq_core::load::{Arena, File, Loader};
use jaq_core::{Compiler, Ctx, Vars, data, unwrap_valr};
use jaq_json::Val;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The hidden first argument that turns `agent` into a jq worker (see [`worker_main`]).
pub const WORKER_ARG: &str = "__jq-worker";
/// Longest jq filter accepted.
pub const MAX_FILTER_BYTES: usize = 64 << 10;
/// Most outputs a filter may produce (more: an error, not a silent cut).
pub const MAX_OUTPUTS: usize = 10_000;
/// Stack of the thread a filter is compiled or run on.
const STACK_BYTES: usize = 256 << 20;
/// Address space the worker may use beyond the memory limit (binary, libraries, the stack).
const AS_SLACK_BYTES: u64 = 768 << 20;
/// How long past its timeout a worker ends itself (`agent` kills it at the timeout).
const WORKER_GRACE: Duration = Duration::from_secs(1);
/// Idle workers kept for the next filters.
const IDLE_WORKERS: usize = 4;
/// Jobs one worker runs before it is replaced (bounds what heap fragmentation can add up to).
pub const JOBS_PER_WORKER: u32 = 1000;
/// Live heap a worker may keep after a job beyond what it held before its first one.
const RETIRE_ABOVE_BYTES: isize = 32 << 20;
/// What the worker's stderr keeps for the error message of a crash.
const STDERR_TAIL_BYTES: usize = 64 << 10;
/// Filters jq scripts may not call: the environment (secrets), stderr/logging, halting.
const DENIED: &[&str] = &["env", "halt", "debug_empty", "stderr_empty", "input", "inputs"];

/// Where a filter runs.
#[derive(Debug, Clone)]
pub enum Isolation {
    /// A child process: the given `agent` binary with [`WORKER_ARG`] (the safe default).
    Process(PathBuf),
    /// A thread of this process with a big stack: a filter that recurses without end aborts the
    /// process, and one that loops is abandoned at the timeout. For tests and benchmarks only.
    Thread,
}

/// What one filter run may use.
#[derive(Debug, Clone)]
pub struct JqLimits {
    pub timeout: Duration,
    pub memory_limit_mb: u64,
    pub max_output_bytes: usize,
}

#[derive(Serialize, Deserialize)]
struct Job {
    filter: String,
    input: Value,
    max_output_bytes: usize,
    memory_limit_mb: u64,
    timeout_ms: u64,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Answer {
    Ok(Vec<Value>),
    Error(String),
}

/// The worker's answer to one job, and whether it ends after it.
#[derive(Serialize, Deserialize)]
struct Reply {
    answer: Answer,
    retiring: bool,
}

/// Parses and compiles `filter` (nothing runs); the error is one line with the position.
/// Filters that compiled are remembered (up to [`CHECKED_BYTES`] of their text), so a handler
/// used again (direct mode, `serve`) is not compiled twice per call.
pub fn check(filter: &str) -> Result<(), String> {
    if filter.len() > MAX_FILTER_BYTES {
        return Err(format!("the jq filter is longer than {} KiB", MAX_FILTER_BYTES >> 10));
    }
    let checked = || CHECKED.lock().unwrap_or_else(|e| e.into_inner());
    if checked().iter().any(|f| f == filter) {
        return Ok(());
    }
    let f = filter.to_string();
    on_big_stack(move || compile_with(&f, |_| Ok(())))?;
    let mut list = checked();
    list.push_back(filter.to_string());
    while list.iter().map(String::len).sum::<usize>() > CHECKED_BYTES {
        list.pop_front();
    }
    Ok(())
}

/// Text of the filters [`check`] remembers as compiling, oldest dropped first.
const CHECKED_BYTES: usize = 256 << 10;
static CHECKED: Mutex<std::collections::VecDeque<String>> = Mutex::new(std::collections::VecDeque::new());

/// Runs `filter` over `input`: every output, in order.
pub async fn run(filter: &str, input: &Value, limits: &JqLimits, isolation: &Isolation) -> Result<Vec<Value>, String> {
    let job = Job {
        filter: filter.to_string(),
        input: input.clone(),
        max_output_bytes: limits.max_output_bytes,
        memory_limit_mb: limits.memory_limit_mb,
        timeout_ms: u64::try_from(limits.timeout.as_millis()).unwrap_or(u64::MAX),
    };
    match isolation {
        Isolation::Thread => {
            let (tx, rx) = tokio::sync::oneshot::channel();
            let spawned = std::thread::Builder::new().name("jq".into()).stack_size(STACK_BYTES).spawn(move || {
                let _ = tx.send(eval(&job));
            });
            if let Err(e) = spawned {
                return Err(format!("cannot start the jq thread: {e}"));
            }
            match tokio::time::timeout(limits.timeout, rx).await {
                Ok(Ok(r)) => r,
                Ok(Err(_)) => Err("the jq filter crashed".into()),
                Err(_) => Err(format!("the jq filter timed out after {}", humantime::format_duration(limits.timeout))),
            }
        }
        Isolation::Process(exe) => run_in_worker(exe, &job, limits).await,
    }
}

async fn run_in_worker(exe: &Path, job: &Job, limits: &JqLimits) -> Result<Vec<Value>, String> {
    let payload = serde_json::to_vec(job).map_err(|e| format!("cannot encode the jq input: {e}"))?;
    let mut worker = Worker::take_or_start(exe, limits.memory_limit_mb)?;
    // Answers are capped by the worker itself; this cap only guards against a broken one.
    let cap = (limits.max_output_bytes as u64).saturating_mul(4).saturating_add(1 << 20);
    let killer = worker.killer.clone();
    // Blocking pipes on a blocking thread: a kept worker is used from whichever runtime calls
    // next, and tokio's pipes belong to the runtime that made them.
    let exchange = tokio::task::spawn_blocking(move || {
        let reply = worker.exchange(&payload, cap);
        (worker, reply)
    });
    let (worker, reply) = match tokio::time::timeout(limits.timeout, exchange).await {
        Ok(Ok(done)) => done,
        Ok(Err(_)) => return Err("the jq worker failed (its thread panicked)".into()),
        Err(_) => {
            // The blocking thread sees end of file and drops (reaps) the worker.
            killer.kill();
            return Err(format!("the jq filter timed out after {}", humantime::format_duration(limits.timeout)));
        }
    };
    match reply {
        Ok(Some(reply)) => {
            if !reply.retiring {
                worker.keep();
            }
            match reply.answer {
                Answer::Ok(values) => Ok(values),
                Answer::Error(e) => Err(e),
            }
        }
        Ok(None) | Err(_) => {
            let (status, err) = tokio::task::spawn_blocking(move || worker.post_mortem())
                .await
                .map_err(|_| "the jq worker failed".to_string())?;
            let err = String::from_utf8_lossy(&err);
            if err.contains("overflowed its stack") {
                Err("the jq filter recursed too deeply (stack overflow)".into())
            } else if err.contains("memory allocation") || err.contains("out of memory") {
                Err(format!("the jq filter ran out of memory (limit {} MB)", limits.memory_limit_mb))
            } else if err.contains("timed out") || status.as_ref().is_ok_and(|s| s.signal() == Some(libc::SIGXCPU)) {
                Err(format!("the jq filter timed out after {}", humantime::format_duration(limits.timeout)))
            } else {
                let status = status.map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
                let last = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
                Err(format!(
                    "the jq worker failed ({status}){}",
                    if last.is_empty() { String::new() } else { format!(": {last}") }
                ))
            }
        }
    }
}

/// Idle workers, for the next filter of the same binary and memory limit.
static IDLE: Mutex<Vec<Worker>> = Mutex::new(Vec::new());

/// A running worker process and its pipes. Dropping it kills and reaps the process.
struct Worker {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: std::process::ChildStdout,
    /// The last [`STDERR_TAIL_BYTES`] the worker wrote on stderr (read until it exits).
    stderr: Option<std::thread::JoinHandle<Vec<u8>>>,
    killer: Killer,
    exe: PathBuf,
    memory_limit_mb: u64,
}

/// Kills the worker from another task unless it was already reaped (its pid may be reused).
#[derive(Clone)]
struct Killer {
    pid: i32,
    reaped: Arc<Mutex<bool>>,
}

impl Killer {
    fn kill(&self) {
        let reaped = self.reaped.lock().unwrap_or_else(|e| e.into_inner());
        if !*reaped {
            // SAFETY: kill sends a signal to our own child, not yet reaped (checked under the lock
            // the reaper holds), so the pid is still ours.
            unsafe {
                libc::kill(self.pid, libc::SIGKILL);
            }
        }
    }
}

impl Worker {
    /// An idle worker of `exe` for `memory_limit_mb` that is still alive, or a new one. Called on
    /// the caller's thread: a tokio worker thread lives as long as `agent`, and the kernel's
    /// parent-death signal is tied to the thread that started the child (`util::child::die_with`).
    fn take_or_start(exe: &Path, memory_limit_mb: u64) -> Result<Worker, String> {
        loop {
            let found = {
                let mut idle = IDLE.lock().unwrap_or_else(|e| e.into_inner());
                let at = idle.iter().rposition(|w| w.exe == exe && w.memory_limit_mb == memory_limit_mb);
                at.map(|i| idle.swap_remove(i))
            };
            let Some(mut w) = found else { return Worker::start(exe, memory_limit_mb) };
            if matches!(w.child.try_wait(), Ok(None)) {
                return Ok(w);
            }
            // It died while idle: dropped (already reaped), and the next one is tried.
        }
    }

    fn start(exe: &Path, memory_limit_mb: u64) -> Result<Worker, String> {
        let mut cmd = std::process::Command::new(exe);
        // The worker's first act is to tie its life to ours (`util::child::die_with`).
        cmd.arg(WORKER_ARG)
            .arg(std::process::id().to_string())
            .arg(memory_limit_mb.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env_clear();
        let mut child = cmd.spawn().map_err(|e| format!("cannot start the jq worker {}: {e}", exe.display()))?;
        let pid = i32::try_from(child.id()).unwrap_or(i32::MAX);
        let (Some(stdin), Some(stdout), Some(mut stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            let _ = child.wait();
            return Err("cannot talk to the jq worker".into());
        };
        let tail = std::thread::Builder::new().name("jq-stderr".into()).stack_size(64 << 10).spawn(move || {
            let mut tail = Vec::new();
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = stderr.read(&mut buf) {
                tail.extend_from_slice(&buf[..n]);
                if tail.len() > STDERR_TAIL_BYTES {
                    tail.drain(..tail.len() - STDERR_TAIL_BYTES);
                }
            }
            tail
        });
        Ok(Worker {
            child,
            stdin,
            stdout,
            stderr: tail.ok(),
            killer: Killer { pid, reaped: Arc::new(Mutex::new(false)) },
            exe: exe.to_path_buf(),
            memory_limit_mb,
        })
    }

    /// Sends one job and reads its reply; `None` when the worker ended without one.
    fn exchange(&mut self, payload: &[u8], cap: u64) -> std::io::Result<Option<Reply>> {
        write_frame(&mut self.stdin, payload)?;
        let Some(frame) = read_frame(&mut self.stdout, cap)? else { return Ok(None) };
        serde_json::from_slice(&frame).map(Some).map_err(std::io::Error::other)
    }

    /// Back to the idle list (the oldest beyond [`IDLE_WORKERS`] is dropped).
    fn keep(self) {
        let mut idle = IDLE.lock().unwrap_or_else(|e| e.into_inner());
        idle.push(self);
        if idle.len() > IDLE_WORKERS {
            let oldest = idle.remove(0);
            drop(idle);
            drop(oldest);
        }
    }

    /// After a worker ended without a reply: how it ended and the end of what it wrote on stderr.
    fn post_mortem(mut self) -> (std::io::Result<std::process::ExitStatus>, Vec<u8>) {
        let status = {
            let mut reaped = self.killer.reaped.lock().unwrap_or_else(|e| e.into_inner());
            // It closed its stdout, so it is exiting; one that only broke the protocol is killed.
            let status = match self.child.try_wait() {
                Ok(Some(s)) => Ok(s),
                _ => {
                    std::thread::sleep(Duration::from_millis(20));
                    if !matches!(self.child.try_wait(), Ok(Some(_))) {
                        let _ = self.child.kill();
                    }
                    self.child.wait()
                }
            };
            *reaped = true;
            status
        };
        let err = self.stderr.take().and_then(|t| t.join().ok()).unwrap_or_default();
        (status, err)
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let mut reaped = self.killer.reaped.lock().unwrap_or_else(|e| e.into_inner());
        if !*reaped {
            let _ = self.child.kill();
            let _ = self.child.wait();
            *reaped = true;
        }
    }
}

fn write_frame(w: &mut impl Write, payload: &[u8]) -> std::io::Result<()> {
    let len = u32::try_from(payload.len()).map_err(|_| std::io::Error::other("the jq job is larger than 4 GiB"))?;
    w.write_all(&len.to_le_bytes())?;
    w.write_all(payload)?;
    w.flush()
}

/// One length-prefixed frame, at most `cap` bytes; `None` at end of file before its first byte.
fn read_frame(r: &mut impl Read, cap: u64) -> std::io::Result<Option<Vec<u8>>> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u64::from(u32::from_le_bytes(len));
    if len > cap {
        return Err(std::io::Error::other(format!("a jq frame of {len} bytes is over the cap of {cap}")));
    }
    let mut frame = vec![0u8; len as usize];
    r.read_exact(&mut frame)?;
    Ok(Some(frame))
}

/// When the running job must be over (milliseconds since [`worker_epoch`]; 0: no job running).
static DEADLINE_MS: AtomicU64 = AtomicU64::new(0);

fn worker_epoch() -> Instant {
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// The jq worker: runs jobs read on stdin, one at a time, until stdin ends, answering each on
/// stdout. Called by `main` when the first argument is [`WORKER_ARG`] (the second is the pid of
/// the `agent` that started it, the third the memory limit in MB); returns the exit code.
pub fn worker_main() -> u8 {
    match std::env::args_os().nth(2).and_then(|p| p.to_str()?.parse().ok()) {
        Some(parent) => crate::util::child::die_with(parent),
        None => return 2,
    }
    let Some(memory_limit_mb) = std::env::args_os().nth(3).and_then(|p| p.to_str()?.parse::<u64>().ok()) else {
        return 2;
    };
    crate::util::alloc::count();
    // Large blocks straight from and back to the kernel: a freed buffer (a vector that grew by
    // reallocation) leaves the process at once instead of staying resident in the heap, so the
    // resident size follows the counted one.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes glibc's tuning; it is called before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 << 10);
    }
    limit_address_space(memory_limit_mb);
    no_core_dumps();
    watchdog();
    // The jobs run on one thread with the big stack (parsing and running filters recurse).
    let served = std::thread::Builder::new()
        .name("jq".into())
        .stack_size(STACK_BYTES)
        .spawn(move || serve_jobs(memory_limit_mb));
    match served.map(|t| t.join()) {
        Ok(Ok(code)) => code,
        _ => 1,
    }
}

fn serve_jobs(memory_limit_mb: u64) -> u8 {
    let (mut stdin, mut stdout) = (std::io::stdin().lock(), std::io::stdout().lock());
    let at_start = crate::util::alloc::used();
    for n in 1..=JOBS_PER_WORKER {
        let frame = match read_frame(&mut stdin, u64::from(u32::MAX)) {
            Ok(Some(f)) => f,
            Ok(None) => return 0,
            Err(_) => return 2,
        };
        let answer = match serde_json::from_slice::<Job>(&frame) {
            Ok(job) if job.memory_limit_mb == memory_limit_mb => {
                drop(frame);
                let timeout = Duration::from_millis(job.timeout_ms);
                let deadline = worker_epoch().elapsed().saturating_add(timeout).saturating_add(WORKER_GRACE);
                DEADLINE_MS.store(u64::try_from(deadline.as_millis()).unwrap_or(u64::MAX).max(1), Ordering::SeqCst);
                limit_cpu(timeout);
                // The filter's own memory: the limit on top of what the input already takes.
                let held = usize::try_from(crate::util::alloc::used()).unwrap_or(0);
                let limit = usize::try_from(memory_limit_mb.saturating_mul(1 << 20)).unwrap_or(usize::MAX);
                crate::util::alloc::limit(held.saturating_add(limit));
                let answer = eval(&job);
                drop(job);
                crate::util::alloc::limit(usize::MAX);
                DEADLINE_MS.store(0, Ordering::SeqCst);
                answer.map_or_else(Answer::Error, Answer::Ok)
            }
            Ok(_) => Answer::Error("bad jq job: a memory limit other than the worker's".into()),
            Err(e) => Answer::Error(format!("bad jq job: {e}")),
        };
        let retiring = n == JOBS_PER_WORKER || crate::util::alloc::used() > at_start.saturating_add(RETIRE_ABOVE_BYTES);
        let text = serde_json::to_vec(&Reply { answer, retiring }).unwrap_or_default();
        if write_frame(&mut stdout, &text).is_err() || retiring {
            return 0;
        }
    }
    0
}

/// A thread that ends the worker (`_exit`, no clean-up: the job may be stuck in code that never
/// returns) a grace period after a job's timeout, or once `agent` is gone.
fn watchdog() {
    let _ = worker_epoch();
    // SAFETY: getppid has no preconditions.
    let parent = unsafe { libc::getppid() };
    let spawned = std::thread::Builder::new().name("watchdog".into()).stack_size(64 << 10).spawn(move || {
        loop {
            std::thread::sleep(Duration::from_millis(50));
            // SAFETY: as above.
            let orphaned = unsafe { libc::getppid() } != parent;
            let deadline = DEADLINE_MS.load(Ordering::SeqCst);
            let late = deadline != 0 && worker_epoch().elapsed().as_millis() >= u128::from(deadline);
            if orphaned || late {
                if late && !orphaned {
                    const MSG: &str = "the jq filter timed out\n";
                    // SAFETY: write to fd 2 of a static buffer; `_exit` ends the process at once.
                    unsafe {
                        libc::write(2, MSG.as_ptr().cast(), MSG.len());
                    }
                }
                // SAFETY: as above.
                unsafe { libc::_exit(3) }
            }
        }
    });
    if spawned.is_err() {
        // No watchdog thread: the process must not run unwatched.
        // SAFETY: as above.
        unsafe { libc::_exit(3) }
    }
}

/// CPU seconds past which the kernel stops the worker: what it has used so far, the timeout's
/// worth and two more (the filter is single-threaded, so it never uses more CPU than wall-clock
/// time). Moved on at each job; the hard limit is left alone so the next job can move it again.
fn limit_cpu(timeout: Duration) {
    // SAFETY: getrusage and getrlimit write into valid, initialised structs of ours.
    let (used, hard) = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        let mut lim: libc::rlimit = std::mem::zeroed();
        libc::getrlimit(libc::RLIMIT_CPU, &mut lim);
        let used = (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec + 1).max(0) as u64;
        (used, lim.rlim_max)
    };
    let soft = used.saturating_add(timeout.as_secs()).saturating_add(3) as libc::rlim_t;
    let lim = libc::rlimit { rlim_cur: soft.min(hard), rlim_max: hard };
    // SAFETY: setrlimit reads a valid, initialised struct; the hard limit is unchanged.
    unsafe {
        libc::setrlimit(libc::RLIMIT_CPU, &lim);
    }
}

/// A filter that runs out of memory aborts the worker; that must not write a core file of its
/// heap wherever the user's shell allows core dumps.
fn no_core_dumps() {
    let lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: as above.
    unsafe {
        libc::setrlimit(libc::RLIMIT_CORE, &lim);
    }
}

fn limit_address_space(memory_limit_mb: u64) {
    let bytes = memory_limit_mb.saturating_mul(1 << 20).saturating_add(AS_SLACK_BYTES + STACK_BYTES as u64);
    let lim = libc::rlimit { rlim_cur: bytes as libc::rlim_t, rlim_max: bytes as libc::rlim_t };
    // SAFETY: setrlimit reads a valid, initialised struct; it only lowers this process's limit.
    unsafe {
        libc::setrlimit(libc::RLIMIT_AS, &lim);
    }
}

/// Runs `f` on a fresh thread with a [`STACK_BYTES`] stack (parsing and running are recursive).
fn on_big_stack<T: Send + 'static>(f: impl FnOnce() -> Result<T, String> + Send + 'static) -> Result<T, String> {
    std::thread::Builder::new()
        .name("jq".into())
        .stack_size(STACK_BYTES)
        .spawn(f)
        .map_err(|e| format!("cannot start the jq thread: {e}"))?
        .join()
        .unwrap_or_else(|_| Err("the jq filter crashed".into()))
}

type Filter = jaq_core::compile::Filter<jaq_core::Native<data::JustLut<Val>>>;

/// Loads and compiles `code`, then hands the filter to `then`.
fn compile_with<T>(code: &str, then: impl FnOnce(&Filter) -> Result<T, String>) -> Result<T, String> {
    let defs = jaq_core::defs().chain(jaq_std::defs()).chain(jaq_json::defs());
    let funs =
        jaq_core::funs::<data::JustLut<Val>>().chain(jaq_std::funs()).chain(jaq_json::funs()).map(|(name, args, f)| {
            if DENIED.contains(&name) {
                (name, args, jaq_core::Native::<data::JustLut<Val>>::new(denied))
            } else {
                (name, args, f)
            }
        });
    let arena = Arena::default();
    let modules = Loader::new(defs).load(&arena, File { code, path: () }).map_err(|errs| {
        let first = errs.into_iter().next().map(|(_, e)| e);
        match first {
            Some(jaq_core::load::Error::Lex(v)) => match v.first() {
                Some((expect, at)) => at_pos(code, at, &format!("expected {}", expect.as_str())),
                None => "the jq filter does not parse".into(),
            },
            Some(jaq_core::load::Error::Parse(v)) => match v.first() {
                Some((expect, at)) => at_pos(code, at, &format!("expected {}", expect.as_str())),
                None => "the jq filter does not parse".into(),
            },
            Some(jaq_core::load::Error::Io(v)) => match v.first() {
                Some((_, why)) => format!("jq filter: {why}"),
                None => "the jq filter does not load".into(),
            },
            None => "the jq filter does not parse".into(),
        }
    })?;
    let filter = Compiler::default().with_funs(funs).compile(modules).map_err(|errs| {
        match errs.into_iter().next().and_then(|(_, v)| v.into_iter().next()) {
            Some((name, undefined)) => at_pos(code, name, &format!("undefined {} `{name}`", undefined.as_str())),
            None => "the jq filter does not compile".into(),
        }
    })?;
    then(&filter)
}

/// What a [`DENIED`] filter does: fail (the standard library's definitions still refer to it).
fn denied(_: jaq_core::Cv<'_, data::JustLut<Val>>) -> jaq_core::ValXs<'_, Val> {
    jaq_core::box_iter::box_once(Err(jaq_core::Error::str("not available in result handlers").into()))
}

/// `jq filter: <what> at line L, column C` (`at` is a slice of `code`).
fn at_pos(code: &str, at: &str, what: &str) -> String {
    let start = (at.as_ptr() as usize).wrapping_sub(code.as_ptr() as usize);
    if start > code.len() {
        return format!("jq filter: {what}");
    }
    let before = &code[..start];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    if at.is_empty() {
        format!("jq filter: {what} at the end (line {line}, column {col})")
    } else {
        format!("jq filter: {what} at line {line}, column {col}")
    }
}

/// Compiles and runs a job in this thread: every output, under the caps.
fn eval(job: &Job) -> Result<Vec<Value>, String> {
    let text = serde_json::to_string(&job.input).map_err(|e| format!("cannot encode the jq input: {e}"))?;
    let input = jaq_json::read::parse_single(text.as_bytes()).map_err(|e| format!("cannot read the jq input: {e}"))?;
    drop(text);
    compile_with(&job.filter, |filter| {
        let ctx = Ctx::<data::JustLut<Val>>::new(&filter.lut, Vars::new([]));
        let mut out = Vec::new();
        let mut bytes = 0usize;
        for r in filter.id.run((ctx, input)).map(unwrap_valr) {
            let v = r.map_err(|e| {
                let text = e.into_val().to_string();
                match serde_json::from_str::<Value>(&text) {
                    Ok(Value::String(s)) => format!("jq error: {s}"),
                    _ => format!("jq error: {text}"),
                }
            })?;
            if out.len() >= MAX_OUTPUTS {
                return Err(format!("the jq filter produced more than {MAX_OUTPUTS} outputs"));
            }
            let text = v.to_string();
            bytes = bytes.saturating_add(text.len());
            if bytes > job.max_output_bytes {
                return Err(format!(
                    "the jq output is larger than the output limit ({})",
                    crate::util::size::human_bytes(job.max_output_bytes as u64)
                ));
            }
            out.push(serde_json::from_str(&text).map_err(|_| format!("jq produced a value JSON cannot hold: {text}"))?);
        }
        Ok(out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn limits() -> JqLimits {
        JqLimits { timeout: Duration::from_secs(5), memory_limit_mb: 64, max_output_bytes: 1 << 20 }
    }

    async fn go(filter: &str, input: Value) -> Result<Vec<Value>, String> {
        check(filter)?;
        run(filter, &input, &limits(), &Isolation::Thread).await
    }

    #[tokio::test]
    async fn filters_run_over_json() {
        assert_eq!(go(".a + 1", json!({"a": 2})).await.unwrap(), vec![json!(3)]);
        assert_eq!(go(".[] | .n", json!([{"n": 1}, {"n": "x"}])).await.unwrap(), vec![json!(1), json!("x")]);
        assert_eq!(
            go("{n: length, keys: keys}", json!({"b": 1, "a": 2})).await.unwrap(),
            vec![json!({"n": 2, "keys": ["a", "b"]})]
        );
        assert_eq!(go("map(select(. > 1)) | add", json!([1, 2, 3])).await.unwrap(), vec![json!(5)]);
        assert_eq!(go("empty", json!(1)).await.unwrap(), Vec::<Value>::new());
    }

    #[test]
    fn compile_errors_are_one_line_with_a_position() {
        let e = check(".a |").unwrap_err();
        assert!(e.starts_with("jq filter: expected term"), "{e}");
        let e = check("{a: .b").unwrap_err();
        assert!(e.contains("expected"), "{e}");
        let e = check(".a | nosuchfn(1)").unwrap_err();
        assert_eq!(e, "jq filter: undefined filter `nosuchfn` at line 1, column 6");
        assert!(check(&"1+".repeat(MAX_FILTER_BYTES)).unwrap_err().contains("longer than"));
        check("def f: 1 + f; f").unwrap();
        assert!(!check(&"[".repeat(20_000)).unwrap_err().is_empty(), "deep nesting is an error, not a crash");
    }

    #[tokio::test]
    async fn outputs_are_capped_in_number_and_size() {
        let e = go("repeat(1)", json!(null)).await.unwrap_err();
        assert_eq!(e, format!("the jq filter produced more than {MAX_OUTPUTS} outputs"));
        let e = go("[range(200000)] | tostring", json!(null)).await.unwrap_err();
        assert!(e.starts_with("the jq output is larger"), "{e}");
        let e = go("error(\"boom\")", json!(null)).await.unwrap_err();
        assert_eq!(e, "jq error: boom");
        let e = go("env", json!(null)).await.unwrap_err();
        assert_eq!(e, "jq error: not available in result handlers");
        let e = go("1 | stderr", json!(null)).await.unwrap_err();
        assert_eq!(e, "jq error: not available in result handlers");
    }
}
