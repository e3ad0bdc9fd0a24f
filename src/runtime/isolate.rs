//! One isolate, one script: the runner thread, runtime creation, the limits, and turning what
//! the engine reports into an [`ExecOutcome`].
//!
//! The runner thread owns a current-thread tokio runtime (the ops' futures and the bridge
//! client's connections run on it) and holds the next `JsRuntime`, bootstrapped before the job
//! that will use it arrives (only the first, in the worker a cold `agent exec` ends once
//! answered: [`Ahead`]). A runtime runs exactly one script (or one session's steps) and is then
//! dropped. The runner reports each job's start and outcome itself ([`Report`]).
//!
//! Stopping a script (timeout, heap limit, cancellation) goes through [`JobControl::stop`], callable
//! from any thread: it flags the reason, asks the engine to terminate (a busy loop unwinds at its
//! next interrupt check), and wakes the event loop (a script idle on a hung tool call stops too).
//! It also registers an "external op" with deno_core first: after a termination the module
//! evaluation stays pending forever, and without a pending op deno_core would print TLA-stall
//! warnings to the process's stderr while we wind down.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};

use deno_core::error::{CoreError, CoreErrorKind, JsError};
use deno_core::futures::task::AtomicWaker;
use deno_core::{ExternalOpsTracker, JsRuntime, ModuleSpecifier, RuntimeOptions, v8};
use tokio::sync::oneshot;

use super::loader::{TranspileCache, WorkspaceLoader, normalize};
use super::ops::{DropStorageFn, JobState, SettleFn};
use super::output::OutputSink;
use super::wait::{CallsInFlight, effective_window};
use super::{ExecFailure, ExecOutcome, ExecRequest, FailureKind, Script};
use crate::bridge::LocalBridgeClient;

const MIB: usize = 1024 * 1024;

/// Heap limits below this leave no room for the bootstrap (`agent exec` and the configuration
/// refuse them up front; the number lives in `config`, the lower layer).
pub const MIN_HEAP_MB: u64 = crate::config::MIN_HEAP_MB;

/// Once the heap limit is hit, the isolate gets this much more to unwind in (allocations past
/// it fail inside the script, which is already being terminated).
const UNWIND_HEADROOM: usize = 16 * MIB;

/// A job for the runner thread, with where its start and outcome go.
pub(crate) struct Job {
    req: ExecRequest,
    /// A session step: run in the isolate the previous step left (when there is one) and keep
    /// it afterwards unless the step was stopped.
    keep: bool,
    report: Box<dyn Report>,
}

/// Where a runner reports on a job, from the runner thread: that it started (with the control
/// that stops it) and then its outcome. A job that could not start gets an inert control.
pub(crate) trait Report: Send {
    fn started(&mut self, control: JobControl);
    fn done(self: Box<Self>, outcome: ExecOutcome);
}

/// [`Report`] through channels a caller awaits (a thread of this process). Dropped unanswered
/// (the runner thread died), the caller's receivers see the senders gone.
struct Channels {
    started: Option<oneshot::Sender<JobControl>>,
    done: oneshot::Sender<ExecOutcome>,
}

impl Report for Channels {
    fn started(&mut self, control: JobControl) {
        if let Some(tx) = self.started.take() {
            let _ = tx.send(control);
        }
    }

    fn done(self: Box<Self>, outcome: ExecOutcome) {
        let _ = self.done.send(outcome);
    }
}

impl Job {
    pub(crate) fn new(
        req: ExecRequest,
        keep: bool,
    ) -> (Box<Job>, oneshot::Receiver<JobControl>, oneshot::Receiver<ExecOutcome>) {
        let (started, started_rx) = oneshot::channel();
        let (done, done_rx) = oneshot::channel();
        (Job::reporting(req, keep, Box::new(Channels { started: Some(started), done })), started_rx, done_rx)
    }

    /// A job whose start and outcome go to `report`, called on the runner thread.
    pub(crate) fn reporting(req: ExecRequest, keep: bool, report: Box<dyn Report>) -> Box<Job> {
        Box::new(Job { req, keep, report })
    }

    /// Answers a job that never got an isolate: an inert control, then the failure.
    fn refuse(self: Box<Self>, kind: FailureKind, message: String) {
        let mut report = self.report;
        report.started(JobControl::inert());
        report.done(ExecOutcome::failed(kind, message));
    }
}

/// The handle to the runner threads. Dropping it ends them once the jobs already queued are done.
pub(crate) struct Worker {
    queue: Arc<Queue>,
}

/// The job queue the runner threads of one [`Worker`] share. A job wakes one waiting runner, the
/// one that went idle last: after a pause the runner that ran the last script takes the next one
/// (as a lone runner did), and the other takes a job only while that one is busy. (A channel
/// behind a lock woke the other runner too, to take the lock, on every job; one condition
/// variable for both handed jobs to them in turn: a script after a pause was slower either way.)
struct Queue {
    jobs: Mutex<Jobs>,
    limit_mb: Arc<AtomicU64>,
    /// Runner threads started and not yet ended (a thread handing over counts its successor).
    runners: AtomicUsize,
    /// Jobs of a single script (not a session step) taken so far.
    scripts: AtomicUsize,
    /// What the runners prepare before a job asks for it.
    ahead: Ahead,
    /// Isolates the runners started making, ahead or on demand.
    made: AtomicUsize,
}

/// Which isolates a runner makes before a job needs them.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Ahead {
    /// Every one: the next isolate is made as soon as a script is answered (and the used one is
    /// dropped then), so a script that comes later finds it ready.
    Always,
    /// Only the first; after that each is made when its job arrives, and a used isolate is
    /// dropped only then. For a worker that is ended once its one script is answered (a cold
    /// `agent exec`): making an isolate nobody will use, or freeing one, competes for the CPU
    /// with sending the answer and with `agent` printing it and exiting.
    First,
}

#[derive(Default)]
struct Jobs {
    waiting: std::collections::VecDeque<Box<Job>>,
    /// The runners waiting for a job, each on its own condition variable; the last one is the
    /// one that went idle last.
    idle: Vec<Arc<Condvar>>,
    /// The worker was dropped: runners end once the queue is empty.
    closed: bool,
}

impl Queue {
    /// The next job, waiting for one on `me`; `None` once the worker is gone and nothing is left.
    fn take(&self, me: &Arc<Condvar>) -> Option<Box<Job>> {
        let mut jobs = self.jobs.lock().ok()?;
        loop {
            // Woken (or woken spuriously): no longer counted as idle.
            jobs.idle.retain(|c| !Arc::ptr_eq(c, me));
            if let Some(job) = jobs.waiting.pop_front() {
                return Some(job);
            }
            if jobs.closed {
                return None;
            }
            jobs.idle.push(me.clone());
            jobs = me.wait(jobs).ok()?;
        }
    }
}

/// Runner threads per worker once scripts come one after another: while one runs a script, the
/// other's fresh isolate is ready or being made on the other core, so a script that comes right
/// behind another does not wait for a whole isolate to be made. Session steps stay on one thread
/// (the session's isolate lives there), and a worker that runs a single script (a cold
/// `agent exec`) never starts the second.
const RUNNERS: usize = 2;

impl Worker {
    pub(crate) fn spawn(limit_mb: Arc<AtomicU64>) -> Worker {
        Worker::spawn_preparing(limit_mb, Ahead::Always)
    }

    /// A worker whose runners prepare isolates as `ahead` says.
    pub(crate) fn spawn_preparing(limit_mb: Arc<AtomicU64>, ahead: Ahead) -> Worker {
        let queue = Arc::new(Queue {
            jobs: Mutex::new(Jobs::default()),
            limit_mb,
            runners: AtomicUsize::new(1),
            scripts: AtomicUsize::new(0),
            ahead,
            made: AtomicUsize::new(0),
        });
        if let Err(e) = spawn_runner(queue.clone()) {
            // `send` will fail and the executor reports the runner as unavailable.
            tracing::error!("cannot start the script runner thread: {e}");
        }
        Worker { queue }
    }

    /// Queues `job` for a runner; gives it back when no runner thread is left (they died in a
    /// panic of the engine, or none could be started).
    pub(crate) fn send(&self, job: Box<Job>) -> Result<(), Box<Job>> {
        let Ok(mut jobs) = self.queue.jobs.lock() else { return Err(job) };
        // Checked under the lock the last runner takes to drop what is queued.
        if self.queue.runners.load(Ordering::Acquire) == 0 {
            return Err(job);
        }
        jobs.waiting.push_back(job);
        if let Some(runner) = jobs.idle.pop() {
            runner.notify_one();
        }
        Ok(())
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Ok(mut jobs) = self.queue.jobs.lock() {
            jobs.closed = true;
            for runner in jobs.idle.drain(..) {
                runner.notify_one();
            }
        }
    }
}

/// Starts a runner thread on `queue`, which already counts it.
fn spawn_runner(queue: Arc<Queue>) -> std::io::Result<()> {
    let counted = queue.clone();
    std::thread::Builder::new().name("agent-js".into()).spawn(move || runner_thread(queue)).map(drop).inspect_err(
        |_| {
            counted.runners.fetch_sub(1, Ordering::AcqRel);
        },
    )
}

/// Ends a runner thread's count on its queue however the thread ends.
struct Counted(Arc<Queue>);

impl Drop for Counted {
    fn drop(&mut self) {
        let mut jobs = self.0.jobs.lock().unwrap_or_else(|p| p.into_inner());
        if self.0.runners.fetch_sub(1, Ordering::AcqRel) == 1 {
            // The last runner is gone (a panic in the engine): the jobs still queued are dropped,
            // so their callers hear that the runner stopped instead of waiting forever.
            jobs.waiting.clear();
        }
    }
}

/// Isolates one runner thread creates before handing its queue to a fresh thread. The QuickJS
/// backend keeps per-thread state that grows with every isolate created on the thread; after a
/// few hundred (about 150 restored from the snapshot, 250 bootstrapped from source, measured)
/// new isolates fail to evaluate modules or to bootstrap. A new thread starts clean.
const ISOLATES_PER_THREAD: usize = 64;

fn runner_thread(queue: Arc<Queue>) {
    let counted = Counted(queue.clone());
    let limit_mb = queue.limit_mb.clone();
    let waiting = Arc::new(Condvar::new());
    let tokio_rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!("cannot start the script runner's event loop: {e}");
            return;
        }
    };
    let _enter = tokio_rt.enter();
    super::loader::warm_transpiler();
    // Private before the engine first writes to it (it compiles while creating the first
    // runtime below). Trimming it (a `stat` per file, up to ~1 ms) runs only when files were
    // added or removed since the last trim, beside that first runtime's restore instead of
    // before it, and is waited for before the first answer: a cold `agent exec` kills its
    // worker once answered, and a trim cut short every time would leave the cache unbounded.
    let mut trimming = None;
    if let Some(dir) = engine_bytecode_cache_dir() {
        if let Err(e) = super::snapshot::private_dir(&dir) {
            tracing::info!("cannot make the bytecode cache {} private: {e}", dir.display());
        }
        if bytecode_cache_changed(&dir) {
            let trim = move || prune_bytecode_cache(&dir, BYTECODE_CACHE_KEEP, BYTECODE_CACHE_MAX_BYTES);
            match std::thread::Builder::new().name("agent-js-trim".into()).spawn(trim.clone()) {
                Ok(t) => trimming = Some(t),
                Err(_) => trim(),
            }
        }
    }
    let cache = TranspileCache::default();
    let mut next: Option<Result<Prepared, String>> = None;
    // A session's isolate between its steps; while there is one, no other is prepared (it would
    // hold a second heap for nothing) and the thread is not handed over (the isolate lives here).
    let mut live: Option<Prepared> = None;
    // A used isolate not dropped yet ([`Ahead::First`]: dropped when the next job arrives).
    let mut spent: Option<Prepared> = None;
    let mut created = 0usize;
    loop {
        if next.is_none() && live.is_none() && (queue.ahead == Ahead::Always || created == 0) {
            if created >= ISOLATES_PER_THREAD {
                // A fresh thread takes this one's place on the queue; without one, carry on here
                // rather than stop serving.
                queue.runners.fetch_add(1, Ordering::Relaxed);
                match spawn_runner(queue.clone()) {
                    Ok(()) => {
                        drop(counted);
                        return;
                    }
                    Err(e) => {
                        tracing::warn!("cannot start a fresh script runner thread: {e}");
                        created = 0;
                    }
                }
            }
            if created == 0 {
                prefault_heap(FIRST_RESTORE_BYTES);
            }
            queue.made.fetch_add(1, Ordering::Relaxed);
            next = Some(Prepared::new(limit_mb.load(Ordering::Relaxed).max(MIN_HEAP_MB), &cache));
            created += 1;
        }
        let Some(job) = queue.take(&waiting) else { return };
        drop(spent.take());
        // The second script of a worker: from now on a second runner keeps an isolate ready.
        if !job.keep
            && queue.ahead == Ahead::Always
            && queue.scripts.fetch_add(1, Ordering::Relaxed) >= 1
            && queue
                .runners
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| (n < RUNNERS).then_some(n + 1))
                .is_ok()
            && let Err(e) = spawn_runner(queue.clone())
        {
            tracing::info!("cannot start a second script runner thread: {e}");
        }
        let wanted = job.req.limits.memory_limit_mb;
        if wanted < MIN_HEAP_MB {
            // The engine cannot even start in that little memory (and deno_core panics trying).
            job.refuse(
                FailureKind::Memory,
                format!("{} while starting the runtime (it needs at least {MIN_HEAP_MB} MB)", memory_message(wanted)),
            );
            continue;
        }
        let (prepared, fresh) = match live.take() {
            Some(p) if job.keep && p.limit_mb == wanted => (Ok(p), false),
            other => {
                drop(other);
                let prepared = match next.take() {
                    Some(Ok(p)) if p.limit_mb == wanted => Ok(p),
                    other => {
                        drop(other);
                        created += 1;
                        queue.made.fetch_add(1, Ordering::Relaxed);
                        Prepared::new(wanted, &cache)
                    }
                };
                (prepared, true)
            }
        };
        let mut prepared = match prepared {
            Ok(p) => p,
            Err(e) => {
                job.refuse(FailureKind::Script, format!("internal error: cannot create a JavaScript runtime: {e}"));
                continue;
            }
        };
        let Job { req, keep, mut report } = *job;
        prepared.keeps = keep;
        let mut outcome = tokio_rt.block_on(prepared.run(req, |control| report.started(control)));
        let kept = keep && prepared.usable();
        outcome.isolate = super::IsolateUse { ran: true, fresh, kept };
        if let Some(t) = trimming.take() {
            let _ = t.join();
        }
        report.done(outcome);
        // Freeing the isolate (possibly a full heap) happens after the caller has its answer.
        if kept {
            live = Some(prepared);
        } else if queue.ahead == Ahead::First {
            spent = Some(prepared);
        } else {
            drop(prepared);
        }
    }
}

/// About what a runner thread's first restore, and the script after it, write of the thread's
/// fresh heap (counted: page faults of a cold `agent exec` stop falling past 2 MB).
const FIRST_RESTORE_BYTES: usize = 2 << 20;

/// Makes up to `bytes` of this thread's heap above its newest allocation resident in one call,
/// instead of one page fault at a time as the first restore writes each page: populating costs
/// about half of what the faults do (0.4 against 0.85 µs a page on the development VM), and a
/// cold `agent exec` takes ~0.3 ms less (`perf stat -r 40`, interleaved). Best effort: it stops,
/// without error, where the heap's writable part ends, and does nothing on a kernel without
/// `MADV_POPULATE_WRITE` (before Linux 5.14).
fn prefault_heap(bytes: usize) {
    // The allocator hands this thread's next blocks from just above this one.
    let probe = Box::new(0u64);
    let start = (&*probe as *const u64 as usize + 4095) & !4095;
    // SAFETY: MADV_POPULATE_WRITE only faults in pages of mappings this process already has
    // (private heap memory here), as writing to each would, without changing their contents;
    // it fails at the first page that is not mapped writable.
    unsafe {
        libc::madvise(start as *mut libc::c_void, bytes, libc::MADV_POPULATE_WRITE);
    }
    drop(probe);
}

/// The QuickJS backend (v8x) keeps compiled bytecode of every script and module it compiles, one
/// file per distinct source, which speeds up creating isolates by ~15 ms (the runtime's own
/// modules) but would grow by one file per distinct script forever. The `agent` binary points it
/// at a directory of its own cache ([`use_private_bytecode_cache`]); each runner thread trims it
/// when it starts (every [`ISOLATES_PER_THREAD`] isolates) and files were added or removed since
/// the last trim ([`bytecode_cache_changed`]), to the most recently used entries, by count and
/// by size; a temporary file is removed once it is a minute old (younger, it may be
/// the engine's write in progress in another process). It holds compiled scripts (their string
/// literals included), so it is kept private: 0700, files 0600.
const BYTECODE_CACHE_KEEP: usize = 512;
const BYTECODE_CACHE_MAX_BYTES: u64 = 32 << 20;

/// The engine reads this variable once, when it first compiles; `agent` sets it first thing.
const BYTECODE_DIR_VAR: &str = "V82JSC_BC_CACHE_DIR";
const NO_BYTECODE_VAR: &str = "V82JSC_NO_BC_CACHE";

/// Points the engine's bytecode cache at `<cache>/agent/quickjs-bytecode`, unless the user chose a
/// directory or turned the cache off. Without it (or without a cache directory: no
/// `XDG_CACHE_HOME`, no `HOME`) the engine caches no bytecode at all.
///
/// # Safety
///
/// Sets a process environment variable: call it before any other thread exists (first thing in
/// `main`), as the `agent` binary does.
pub unsafe fn use_private_bytecode_cache() {
    if !cfg!(feature = "quickjs")
        || std::env::var_os(NO_BYTECODE_VAR).is_some()
        || std::env::var_os(BYTECODE_DIR_VAR).is_some()
    {
        return;
    }
    if let Some(base) = crate::util::dirs::cache_home() {
        // SAFETY: the caller guarantees no other thread reads or writes the environment.
        unsafe { std::env::set_var(BYTECODE_DIR_VAR, base.join("agent/quickjs-bytecode")) };
    }
}

/// The directory the engine writes compiled bytecode to, as it will decide it.
fn engine_bytecode_cache_dir() -> Option<PathBuf> {
    if !cfg!(feature = "quickjs") || std::env::var_os(NO_BYTECODE_VAR).is_some() {
        return None;
    }
    // Without the variable (a library user that did not call `use_private_bytecode_cache`, or no
    // cache directory to put it in) the engine caches nothing.
    std::env::var_os(BYTECODE_DIR_VAR).filter(|dir| !dir.is_empty()).map(PathBuf::from)
}

/// The file in the bytecode cache directory whose modification time is the directory's as the
/// last trim left it: while the two are equal, no file was added to or removed from the cache
/// since, and a runner thread skips the pass over it (a directory listing and a `stat` per file,
/// on the way to a cold `agent exec`'s answer).
const TRIMMED_STAMP: &str = ".trimmed";

/// A trim runs anyway once the last one is this old: it removes a temporary file left by a write
/// that died after the last trim, and bounds the cache on a file system that does not update a
/// directory's modification time when an entry is added.
const TRIM_AT_LEAST_EVERY: Duration = Duration::from_secs(3600);

/// Whether the bytecode cache in `dir` needs a trim: anything was added or removed since the
/// last one (the directory's modification time moved past the stamp's), there is no stamp, or
/// the last trim is older than [`TRIM_AT_LEAST_EVERY`]. A file added while a trim runs, after it
/// listed the directory, or within one tick of the file system's clock after it ended, can wait
/// for the next addition to be counted: the bound is off by one run's files at most.
fn bytecode_cache_changed(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let (Ok(d), Ok(stamp)) = (std::fs::metadata(dir), std::fs::symlink_metadata(dir.join(TRIMMED_STAMP))) else {
        return true;
    };
    // The stamp's change time is when the last trim set its modification time.
    let last = std::time::UNIX_EPOCH
        + Duration::new(stamp.ctime().max(0) as u64, stamp.ctime_nsec().clamp(0, 999_999_999) as u32);
    let stale = last.elapsed().map_or(true, |age| age > TRIM_AT_LEAST_EVERY);
    stale || !stamp.is_file() || d.mtime() != stamp.mtime() || d.mtime_nsec() != stamp.mtime_nsec()
}

/// Records that `dir` was just trimmed: the stamp (created 0600, not following a link, if
/// missing) takes the directory's modification time, through its own descriptor.
fn stamp_trimmed(dir: &Path) {
    use std::os::unix::fs::OpenOptionsExt;
    let Ok(f) = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(dir.join(TRIMMED_STAMP))
    else {
        return;
    };
    // Read after the stamp exists: creating it moved the directory's time.
    if let Ok(modified) = std::fs::metadata(dir).and_then(|d| d.modified()) {
        let _ = f.set_modified(modified);
    }
}

/// [`trim_bytecode_cache`], then the stamp that lets later runner threads skip the next trim
/// while nothing changes ([`bytecode_cache_changed`]).
pub(crate) fn prune_bytecode_cache(dir: &Path, keep: usize, max_bytes: u64) {
    trim_bytecode_cache(dir, keep, max_bytes);
    stamp_trimmed(dir);
}

/// Once the `.qbc` files number more than `keep` or weigh more than `max_bytes`, deletes the least
/// recently used (last read or written, whichever is later) until at most half of each is left,
/// so trimming happens rarely and hot entries are rebuilt rarely; a `.tmp` file over a minute old
/// (a write that died) always goes. Files an older build of the engine wrote with the umask (0644;
/// it now writes 0600) are set to 0600 on the way, from the metadata this pass reads anyway (the
/// 0700 directory already keeps them from other users; no extra pass over the directory). A cache
/// left by a build from before the stamp ([`TRIMMED_STAMP`]) has none, so this pass runs on its
/// first use.
fn trim_bytecode_cache(dir: &Path, keep: usize, max_bytes: u64) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let mut files: Vec<(std::time::SystemTime, u64, PathBuf)> = Vec::new();
    let mut total = 0u64;
    for e in entries.flatten() {
        let path = e.path();
        match path.extension().and_then(|x| x.to_str()) {
            Some("qbc") => {
                // Not followed: a link here is not the engine's and is not ours to chmod.
                let Ok(m) = std::fs::symlink_metadata(&path) else { continue };
                if !m.is_file() {
                    continue;
                }
                if m.uid() == uid && m.mode() & 0o077 != 0 {
                    tighten(&path, &m);
                }
                total += m.len();
                // Reads update the access time at most daily on `relatime` mounts (the Linux
                // default), which is fine-grained enough to tell a hot entry from a one-off script.
                let used = m.accessed().ok().max(m.modified().ok()).unwrap_or(std::time::UNIX_EPOCH);
                files.push((used, m.len(), path));
            }
            Some("tmp") => {
                let stale = std::fs::symlink_metadata(&path)
                    .and_then(|m| m.modified())
                    .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > Duration::from_secs(60)));
                if stale {
                    let _ = std::fs::remove_file(&path);
                }
            }
            _ => {}
        }
    }
    if files.len() <= keep && total <= max_bytes {
        return;
    }
    files.sort_by_key(|f| std::cmp::Reverse(f.0));
    let (mut kept, mut kept_bytes) = (0usize, 0u64);
    for (_, len, path) in files {
        if kept < keep / 2 && kept_bytes + len <= max_bytes / 2 {
            kept += 1;
            kept_bytes += len;
        } else {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Makes the cache file `path` (seen as `seen`) 0600 through a descriptor opened without
/// following a link, and only if it is still the file that was seen: a file swapped for a link
/// between the look and the change is left alone, and nothing a link points at is changed.
fn tighten(path: &Path, seen: &std::fs::Metadata) {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
    let Ok(f) = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(path)
    else {
        return;
    };
    let Ok(now) = f.metadata() else { return };
    if now.is_file() && now.dev() == seen.dev() && now.ino() == seen.ino() {
        let _ = f.set_permissions(std::fs::Permissions::from_mode(0o600));
    }
}

/// Why a script is being stopped from outside.
#[derive(Debug, Clone, Copy)]
pub(crate) enum StopReason {
    Timeout,
    Cancelled,
}

#[derive(Default)]
struct Flags {
    timed_out: AtomicBool,
    cancelled: AtomicBool,
    out_of_memory: AtomicBool,
}

impl Flags {
    fn any(&self) -> bool {
        self.timed_out.load(Ordering::SeqCst)
            || self.cancelled.load(Ordering::SeqCst)
            || self.out_of_memory.load(Ordering::SeqCst)
    }
}

/// Stops a running script from any thread.
#[derive(Clone)]
pub(crate) struct JobControl {
    inner: Option<Arc<ControlInner>>,
}

struct ControlInner {
    flags: Arc<Flags>,
    isolate: v8::IsolateHandle,
    tracker: ExternalOpsTracker,
    waker: Arc<AtomicWaker>,
    stopped: AtomicBool,
}

impl JobControl {
    /// A control for a job that never got an isolate.
    pub(crate) fn inert() -> JobControl {
        JobControl { inner: None }
    }

    pub(crate) fn stop(&self, reason: StopReason) {
        let Some(c) = &self.inner else { return };
        match reason {
            StopReason::Timeout => c.flags.timed_out.store(true, Ordering::SeqCst),
            StopReason::Cancelled => c.flags.cancelled.store(true, Ordering::SeqCst),
        }
        c.terminate();
    }
}

impl ControlInner {
    fn terminate(&self) {
        if !self.stopped.swap(true, Ordering::SeqCst) {
            self.tracker.ref_op();
        }
        self.isolate.terminate_execution();
        self.waker.wake();
    }
}

/// A runtime restored from the startup snapshot (or bootstrapped without one) under a heap limit
/// of `heap_limit` bytes, loading modules through `loader`.
fn new_runtime(loader: Rc<WorkspaceLoader>, heap_limit: usize) -> Result<JsRuntime, String> {
    let snapshot = super::snapshot::startup_snapshot();
    let runtime = JsRuntime::try_new(RuntimeOptions {
        module_loader: Some(loader),
        extensions: vec![super::ops::extension(snapshot.is_none())],
        startup_snapshot: snapshot,
        // The snapshot holds the op functions the bootstrap bound, each naming its op by its
        // index among the external references, which a restore maps to this runtime's op state
        // (the binary that made the snapshot has the same ops: the cache key names the binary).
        // Binding every op again would make ~110 functions per isolate (~11 % of a restore) that
        // only `Deno.core.ops` holds, and finalize.js removes `Deno` before any script runs.
        skip_op_registration: snapshot.is_some(),
        create_params: Some(v8::CreateParams::default().heap_limits(0, heap_limit)),
        ..Default::default()
    })
    .map_err(|e| e.to_string())?;
    if snapshot.is_some() {
        super::snapshot::remember_walks();
    }
    Ok(runtime)
}

/// The finalize step every runtime takes before its script (finalize.js: no path to the ops).
fn finalize(runtime: &mut JsRuntime) -> Result<(), String> {
    runtime
        .execute_script("ext:agent_runtime/finalize.js", super::ops::FINALIZE)
        .map(drop)
        .map_err(|e| format!("the runtime's finalize step failed: {e}"))
}

/// A bootstrapped runtime waiting for its script.
struct Prepared {
    runtime: JsRuntime,
    loader: Rc<WorkspaceLoader>,
    control: Arc<ControlInner>,
    limit_mb: u64,
    /// Scripts this runtime ran (a session's steps): the first is its main module, the others
    /// side modules with a name of their own.
    steps: u64,
    /// A session's runtime: each script's top-level bindings are carried over to the next
    /// (`keep`).
    keeps: bool,
}

impl Prepared {
    fn new(limit_mb: u64, cache: &TranspileCache) -> Result<Prepared, String> {
        // deno_core panics on some creation failures; they must not take the runner thread down.
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| Prepared::create(limit_mb, cache)))
            .unwrap_or_else(|_| Err("the engine failed while starting".to_string()))
    }

    fn create(limit_mb: u64, cache: &TranspileCache) -> Result<Prepared, String> {
        let loader = Rc::new(WorkspaceLoader::new(cache.clone()));
        let heap_limit = usize::try_from(limit_mb).unwrap_or(usize::MAX / MIB).saturating_mul(MIB);
        let mut runtime = new_runtime(loader.clone(), heap_limit)?;
        finalize(&mut runtime)?;
        let flags = Arc::new(Flags::default());
        let (tracker, waker) = {
            let state = runtime.op_state();
            let state = state.borrow();
            (state.external_ops_tracker.clone(), state.waker.clone())
        };
        let control = Arc::new(ControlInner {
            flags: flags.clone(),
            isolate: runtime.v8_isolate().thread_safe_handle(),
            tracker,
            waker,
            stopped: AtomicBool::new(false),
        });
        let on_limit = control.clone();
        runtime.add_near_heap_limit_callback(move |current, _initial| {
            // Terminate once, with some room to unwind; later calls keep the limit where it is so
            // memory stays bounded while the script is being stopped.
            if on_limit.flags.out_of_memory.swap(true, Ordering::SeqCst) {
                return current;
            }
            on_limit.terminate();
            current.saturating_add(UNWIND_HEADROOM)
        });
        Ok(Prepared { runtime, loader, control, limit_mb, steps: 0, keeps: false })
    }

    /// Whether another script may run here: nothing stopped it (a stopped isolate stays
    /// terminated, and a full heap stays full).
    fn usable(&self) -> bool {
        !self.control.flags.any() && !self.control.stopped.load(Ordering::SeqCst)
    }

    async fn run(&mut self, req: ExecRequest, started: impl FnOnce(JobControl)) -> ExecOutcome {
        self.run_dropping(req, started, true).await
    }

    /// [`Prepared::run`]; `drop_globals: false` leaves the storage globals in place for a script
    /// without storage (only the test of the ops' own refusal does that).
    async fn run_dropping(
        &mut self,
        req: ExecRequest,
        started: impl FnOnce(JobControl),
        drop_globals: bool,
    ) -> ExecOutcome {
        let start = Instant::now();
        let workspace = absolute(&req.workspace);
        self.loader.set_root(workspace.clone());
        let stack_prefix = ModuleSpecifier::from_directory_path(&workspace).map(|u| u.to_string()).unwrap_or_default();
        let waiting = Waiting { calls: Rc::default(), window: effective_window(req.limits.call_spin) };
        waiting.calls.set_window(waiting.window);
        self.runtime.op_state().borrow_mut().put(JobState {
            bridge: req.bridge.clone().map(|endpoint| Rc::new(LocalBridgeClient::new(endpoint))),
            call_slots: Rc::new(tokio::sync::Semaphore::new(req.limits.max_concurrent_calls.max(1))),
            in_flight: waiting.calls.clone(),
            tool_calls: 0,
            output: OutputSink::new(req.limits.max_output_bytes),
            stack_prefix: stack_prefix.clone(),
            request_bytes: Rc::default(),
            max_request_bytes: usize::try_from(req.limits.memory_limit_mb)
                .unwrap_or(usize::MAX / MIB)
                .saturating_mul(MIB),
            state: super::state::State::new(&workspace, req.limits.state),
            storage: req.limits.storage,
            skills_saved: Vec::new(),
            out_of_memory: {
                let control = self.control.clone();
                Rc::new(move || {
                    control.flags.out_of_memory.store(true, Ordering::SeqCst);
                    control.terminate();
                })
            },
        });
        started(JobControl { inner: Some(self.control.clone()) });

        // A session's later steps are side modules named `main.ts#step-N`; messages name them
        // `main.ts`, as the step's author wrote it.
        let step = self.steps;
        self.steps += 1;
        let step_name = (step > 0).then(|| format!("#step-{}", step + 1));
        let dropped = if drop_globals { self.drop_storage(&req) } else { Ok(()) };
        let result = match dropped {
            Ok(()) => self.run_script(&req, &workspace, &waiting, step_name.as_deref()).await,
            Err(e) => Err(e),
        };

        let flags = &self.control.flags;
        let error = if flags.out_of_memory.load(Ordering::SeqCst) {
            Some(plain_failure(FailureKind::Memory, memory_message(req.limits.memory_limit_mb)))
        } else if flags.timed_out.load(Ordering::SeqCst) {
            Some(plain_failure(FailureKind::Timeout, timeout_message(req.limits.timeout)))
        } else if flags.cancelled.load(Ordering::SeqCst) {
            Some(plain_failure(FailureKind::Script, "the script was cancelled".into()))
        } else {
            match result.as_ref().err() {
                // One allocation past the hard limit fails inside the engine before the
                // near-limit callback would fire; that is the heap limit too.
                Some(e) if e.kind == FailureKind::Script && e.message.starts_with("InternalError: out of memory") => {
                    Some(plain_failure(FailureKind::Memory, memory_message(req.limits.memory_limit_mb)))
                }
                other => other.cloned(),
            }
        };
        let json = result.ok().flatten();

        let state = self.runtime.op_state();
        let mut state = state.borrow_mut();
        let Some(mut job) = state.try_take::<JobState>() else {
            return ExecOutcome::failed(FailureKind::Script, "internal error: the script state is gone".into());
        };
        let value = match json {
            Some(text) if error.is_none() => {
                if job.output.reserve(text.len()) {
                    serde_json::from_str(&text).ok()
                } else {
                    None
                }
            }
            _ => None,
        };
        let (stdout, stderr, omitted) = job.output.finish();
        ExecOutcome {
            stdout,
            stderr,
            value,
            error: error.map(|e| rewrite_failure(e, &stack_prefix, step_name.as_deref())),
            tool_calls: job.tool_calls,
            duration_ms: start.elapsed().as_secs_f64() * 1000.0,
            output_truncated_bytes: omitted,
            skills_saved: std::mem::take(&mut job.skills_saved),
            ..ExecOutcome::default()
        }
    }

    /// Removes the storage globals before a script without storage loads (the ops refuse it
    /// as well; this makes them absent, as the handler contract says).
    fn drop_storage(&mut self, req: &ExecRequest) -> Result<(), ExecFailure> {
        if req.limits.storage {
            return Ok(());
        }
        let f = self.runtime.op_state().borrow().try_borrow::<DropStorageFn>().map(|d| d.0.clone());
        let Some(f) = f else {
            return Err(plain_failure(FailureKind::Script, "internal error: the runtime cannot drop storage".into()));
        };
        // The function is synchronous: the call has happened when `call_with_args` returns.
        drop(self.runtime.call_with_args(&f, &[]));
        Ok(())
    }

    /// Loads, evaluates and settles the script. `Ok(Some(json))` is the default export's value.
    async fn run_script(
        &mut self,
        req: &ExecRequest,
        workspace: &Path,
        waiting: &Waiting,
        step_name: Option<&str>,
    ) -> Result<Option<String>, ExecFailure> {
        let (path, source) = match &req.script {
            Script::Inline(code) => (workspace.join("main.ts"), code.clone()),
            Script::File(path) => {
                let path = absolute(path);
                let path = std::fs::canonicalize(&path).unwrap_or(path);
                match std::fs::read_to_string(&path) {
                    Ok(text) => (path, text),
                    Err(e) => {
                        return Err(plain_failure(FailureKind::Import, format!("cannot read {}: {e}", path.display())));
                    }
                }
            }
        };
        let mut specifier = ModuleSpecifier::from_file_path(&path)
            .map_err(|()| plain_failure(FailureKind::Import, format!("{} is not a valid path", path.display())))?;
        if let Some(name) = step_name {
            specifier.set_fragment(Some(name.trim_start_matches('#')));
        }
        let code = self
            .loader
            .transpile_script(&specifier, source, self.keeps)
            .map_err(|f| plain_failure(f.kind, f.message))?;

        let flags = self.control.flags.clone();
        let loaded = match step_name {
            None => guarded(&flags, waiting, self.runtime.load_main_es_module_from_code(&specifier, code)).await?,
            Some(_) => guarded(&flags, waiting, self.runtime.load_side_es_module_from_code(&specifier, code)).await?,
        };
        let module = match loaded {
            Ok(id) => id,
            Err(e) => {
                return Err(match self.loader.take_failure() {
                    Some(f) => plain_failure(f.kind, f.message),
                    None => core_failure(FailureKind::Import, e, workspace),
                });
            }
        };
        let evaluation = self.runtime.mod_evaluate(module);
        if let Err(e) = guarded(&flags, waiting, self.runtime.run_event_loop(Default::default())).await? {
            return Err(core_failure(FailureKind::Script, e, workspace));
        }
        if let Err(e) = guarded(&flags, waiting, evaluation).await? {
            return Err(core_failure(FailureKind::Script, e, workspace));
        }

        // The default export: a function is called, a promise awaited, then JSON.
        let settle = self.runtime.op_state().borrow().try_borrow::<SettleFn>().map(|s| s.0.clone());
        let Some(settle) = settle else { return Ok(None) };
        let namespace =
            self.runtime.get_module_namespace(module).map_err(|e| core_failure(FailureKind::Script, e, workspace))?;
        let namespace: v8::Global<v8::Value> = {
            deno_core::scope!(scope, &mut self.runtime);
            let local = v8::Local::new(scope, namespace);
            v8::Global::new(scope, v8::Local::<v8::Value>::from(local))
        };
        let call = self.runtime.call_with_args(&settle, &[namespace]);
        let settled =
            guarded(&flags, waiting, self.runtime.with_event_loop_promise(Box::pin(call), Default::default())).await?;
        let value = settled.map_err(|e| core_failure(FailureKind::Script, e, workspace))?;
        deno_core::scope!(scope, &mut self.runtime);
        let local = v8::Local::new(scope, value);
        if local.is_undefined() {
            return Ok(None);
        }
        Ok(Some(local.to_rust_string_lossy(scope)))
    }
}

/// How the runner waits while `fut` is pending (see `runtime::wait`).
struct Waiting {
    calls: Rc<CallsInFlight>,
    window: Duration,
}

/// Polls `fut` until it finishes or the job is stopped (flags set by [`JobControl::stop`] or
/// the heap-limit callback); the stop wins, since a terminated isolate never settles. While a
/// lone tool call is young, a pending poll yields the CPU and asks to be polled again at once
/// (tokio then checks for I/O without sleeping) instead of leaving the thread to sleep until the
/// answer wakes it.
async fn guarded<F: Future>(flags: &Flags, waiting: &Waiting, fut: F) -> Result<F::Output, ExecFailure> {
    let mut fut = pin!(fut);
    std::future::poll_fn(|cx| {
        if flags.any() {
            return Poll::Ready(Err(plain_failure(FailureKind::Script, "stopped".into())));
        }
        match fut.as_mut().poll(cx) {
            Poll::Ready(v) if !flags.any() => Poll::Ready(Ok(v)),
            Poll::Ready(_) => Poll::Ready(Err(plain_failure(FailureKind::Script, "stopped".into()))),
            Poll::Pending => {
                if waiting.calls.keep_polling(waiting.window) {
                    // Let a thread the answer depends on go first if it shares this CPU.
                    std::thread::yield_now();
                    cx.waker().wake_by_ref();
                }
                Poll::Pending
            }
        }
    })
    .await
}

fn plain_failure(kind: FailureKind, message: String) -> ExecFailure {
    ExecFailure { kind, message, stack: None }
}

pub(crate) fn timeout_message(timeout: Duration) -> String {
    format!("timed out after {}", humantime::format_duration(timeout))
}

fn memory_message(limit_mb: u64) -> String {
    format!("memory limit of {limit_mb} MB exceeded")
}

/// A deno_core error as one line plus the mapped stack.
fn core_failure(kind: FailureKind, e: CoreError, workspace: &Path) -> ExecFailure {
    match e.into_kind() {
        CoreErrorKind::Js(js) => js_failure(kind, &js, workspace),
        other => plain_failure(kind, other.to_string()),
    }
}

fn js_failure(kind: FailureKind, js: &JsError, workspace: &Path) -> ExecFailure {
    let name = js.name.clone().unwrap_or_default();
    let message = js.message.clone().unwrap_or_default();
    let mut line = match (name.is_empty(), message.is_empty()) {
        (false, false) => format!("{name}: {message}"),
        (false, true) => name.clone(),
        _ => js.exception_message.trim_start_matches("Uncaught ").to_string(),
    };
    // The line to blame: the first frame in the script's own code. Errors raised inside the
    // runtime (fetch, callMCPTool) or the generated tree (client.ts wrapping a bridge error) are
    // about the script line that called them; the full stack still has every frame.
    let in_file = |f: &&deno_core::error::JsStackFrame| f.file_name.as_deref().is_some_and(|n| !n.starts_with("ext:"));
    let generated = generated_paths(workspace);
    let own_code = |f: &&deno_core::error::JsStackFrame| {
        let name = f.file_name.as_deref().unwrap_or_default();
        !generated.iter().any(|g| name.starts_with(g.as_str()))
    };
    let script_frame = js.frames.iter().filter(in_file).find(own_code).or_else(|| js.frames.iter().find(in_file));
    if let Some(frame) = script_frame {
        let file = frame.file_name.as_deref().unwrap_or_default();
        match (frame.line_number, frame.column_number) {
            (Some(l), Some(c)) => line.push_str(&format!(" at {file}:{l}:{c}")),
            (Some(l), None) => line.push_str(&format!(" at {file}:{l}")),
            _ => {}
        }
    }
    if name == "ReferenceError"
        && let Some(hint) = missing_global_hint(&message)
    {
        line.push_str(&format!(" ({hint})"));
    }
    let stack = js.stack.as_deref().map(|s| s.lines().filter(|l| !is_internal_frame(l)).collect::<Vec<_>>().join("\n"));
    ExecFailure { kind, message: line, stack }
}

/// File URL prefixes of the generated tree's own modules (`client.ts`, `servers/...`, `index.ts`).
fn generated_paths(workspace: &Path) -> Vec<String> {
    ["client.ts", "index.ts", "servers/"]
        .iter()
        .filter_map(|rel| ModuleSpecifier::from_directory_path(workspace).ok()?.join(rel).ok())
        .map(|u| u.to_string())
        .collect()
}

/// A stack line inside the runtime's own JS, which tells a script author nothing.
fn is_internal_frame(line: &str) -> bool {
    let l = line.trim_start();
    l.starts_with("at ") && (l.contains("(ext:") || l.starts_with("at ext:"))
}

/// Scripts written for Node or Deno reach for globals that deliberately do not exist here.
fn missing_global_hint(message: &str) -> Option<&'static str> {
    let name = message.strip_suffix(" is not defined")?;
    match name {
        "process" | "Deno" | "require" | "module" | "__dirname" | "__filename" | "Buffer" | "Bun" => Some(
            "scripts run without file system, network, environment or process access; \
             call MCP tools through ./servers/<server>/index.ts",
        ),
        "SharedArrayBuffer" | "WebAssembly" | "Worker" => {
            Some("scripts run single-threaded, without shared memory, workers or WebAssembly")
        }
        // Left out of the engine: every isolate would pay for the 436 KB polyfill (docs/exec.md).
        "Temporal" => Some("scripts have no Temporal; use Date"),
        _ => None,
    }
}

/// Workspace file URLs read as paths relative to the workspace; other file URLs as paths; a
/// session step's own name (`#step-N`) is left out.
fn rewrite_failure(mut f: ExecFailure, prefix: &str, step_name: Option<&str>) -> ExecFailure {
    let rewrite = |s: &str| {
        let s = if prefix.is_empty() { s.to_string() } else { s.replace(prefix, "") };
        let s = match step_name {
            Some(name) => s.replace(name, ""),
            None => s,
        };
        s.replace("file://", "")
    };
    f.message = rewrite(&f.message);
    f.stack = f.stack.map(|s| rewrite(&s));
    f
}

fn absolute(path: &Path) -> PathBuf {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().map(|d| d.join(path)).unwrap_or_else(|_| path.to_path_buf())
    };
    std::fs::canonicalize(&abs).unwrap_or_else(|_| normalize(&abs))
}

#[doc(hidden)]
pub mod phases;

#[cfg(test)]
mod tests {
    use super::*;

    /// Scripts sent to a [`Worker`] as jobs from a test, each in the same workspace.
    struct TestJobs {
        ws: tempfile::TempDir,
        rt: tokio::runtime::Runtime,
    }

    impl TestJobs {
        fn new() -> TestJobs {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            TestJobs { ws: tempfile::tempdir().unwrap(), rt }
        }

        /// Runs `script` on `worker` (a session step when `keep`) and returns its outcome, which
        /// must be a success.
        fn run(&self, worker: &Worker, keep: bool, script: &str) -> ExecOutcome {
            let req = ExecRequest {
                workspace: self.ws.path().to_path_buf(),
                script: Script::Inline(script.into()),
                limits: super::super::Limits::default(),
                bridge: None,
            };
            let (job, _started, done) = Job::new(req, keep);
            assert!(worker.send(job).is_ok(), "no runner took the job");
            let outcome = self.rt.block_on(done).expect("the runner answers");
            assert!(outcome.error.is_none(), "{:?}", outcome.error);
            outcome
        }
    }

    /// One runner thread for a lone script (a cold `agent exec` makes one isolate, not two); a
    /// second once scripts come one after another, each with a fresh isolate; never a second for
    /// session steps, whose isolate lives on one thread (they keep what the last step defined);
    /// and dropping the worker ends them.
    #[test]
    fn a_second_runner_starts_for_scripts_in_a_row_but_not_for_one_or_for_a_session() {
        let jobs = TestJobs::new();
        let run = |worker: &Worker, keep: bool, script: &str| jobs.run(worker, keep, script);
        let runners = |worker: &Worker| worker.queue.runners.load(Ordering::Acquire);

        let scripts = Worker::spawn(Arc::new(AtomicU64::new(64)));
        let first = run(&scripts, false, "globalThis.mark = 1; console.log('one');");
        assert!(first.isolate.fresh);
        assert_eq!(runners(&scripts), 1, "a lone script started a second runner");
        for i in 0..6 {
            // Each script gets a fresh isolate, whichever runner takes it.
            let o = run(&scripts, false, "console.log(typeof globalThis.mark);");
            assert_eq!(o.stdout, "undefined\n", "script {i} saw another's global");
            assert!(o.isolate.fresh && !o.isolate.kept);
        }
        assert_eq!(runners(&scripts), 2);
        let queue = scripts.queue.clone();
        drop(scripts);
        let deadline = Instant::now() + Duration::from_secs(20);
        while queue.runners.load(Ordering::Acquire) != 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(queue.runners.load(Ordering::Acquire), 0, "runners outlived their worker");

        let session = Worker::spawn(Arc::new(AtomicU64::new(64)));
        run(&session, true, "globalThis.count = 1;");
        for step in 2..8 {
            let o = run(&session, true, "globalThis.count += 1; console.log(globalThis.count);");
            assert_eq!(o.stdout, format!("{step}\n"), "a session step lost its state");
        }
        assert_eq!(runners(&session), 1, "session steps started a second runner");
    }

    /// A worker that prepares only its first isolate ahead (a cold `agent exec`'s) makes no
    /// other until a job asks for one, while an ordinary worker makes the next as soon as it has
    /// answered; a later job on it still runs, in an isolate of its own.
    #[test]
    fn a_one_script_worker_makes_no_isolate_after_its_answer_until_a_job_asks() {
        let jobs = TestJobs::new();
        let run = |worker: &Worker, script: &str| jobs.run(worker, false, script);
        let made = |worker: &Worker| worker.queue.made.load(Ordering::Relaxed);

        // Prepared with the limit the jobs ask for, so each job takes the isolate made for it.
        let limit = || Arc::new(AtomicU64::new(super::super::Limits::default().memory_limit_mb));
        let always = Worker::spawn(limit());
        let first = Worker::spawn_preparing(limit(), Ahead::First);
        run(&always, "globalThis.mark = 1;");
        run(&first, "globalThis.mark = 1;");
        // The ordinary worker starts its next isolate once it has answered: how long that takes
        // here bounds how long the other is watched.
        let answered = Instant::now();
        while made(&always) < 2 && answered.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(2));
        }
        assert_eq!(made(&always), 2, "an ordinary worker did not prepare its next isolate");
        std::thread::sleep(answered.elapsed() * 3 + Duration::from_millis(50));
        assert_eq!(made(&first), 1, "a one-script worker made an isolate nobody asked for");

        let later = run(&first, "console.log(typeof globalThis.mark);");
        assert_eq!(later.stdout, "undefined\n", "the later script ran in the used isolate");
        assert!(later.isolate.fresh);
        assert_eq!(made(&first), 2);
    }

    /// The heap a runner thread's first restore will write is made resident, and asking for far
    /// more than the heap has stops at its end instead of failing or mapping anything new.
    #[test]
    fn prefaulting_the_heap_makes_its_next_pages_resident_and_stops_at_its_end() {
        fn resident_kb() -> u64 {
            let status = std::fs::read_to_string("/proc/self/status").unwrap();
            let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
            line.split_whitespace().nth(1).unwrap().parse().unwrap()
        }
        std::thread::spawn(|| {
            let probe = Box::new(0u64);
            let next = (&*probe as *const u64 as usize + 4095) & !4095;
            prefault_heap(1 << 20);
            // Page by page up to where the heap's mapping ends (here the allocator's default
            // growth, ~128 KB; a worker grows it by 8 MB): each one mapped is resident.
            let mut mapped = 0;
            for page in 0..256 {
                let mut resident = 0u8;
                // SAFETY: mincore reads one page's residency into one byte.
                let r = unsafe { libc::mincore((next + page * 4096) as *mut libc::c_void, 4096, &mut resident) };
                if r != 0 {
                    break;
                }
                assert_eq!(resident & 1, 1, "page {page} above the newest block is not resident");
                mapped += 1;
            }
            assert!(mapped >= 8, "only {mapped} pages of heap above the newest block");

            let before = resident_kb();
            prefault_heap(1 << 30);
            let grew = resident_kb().saturating_sub(before);
            assert!(grew < 128 << 10, "a prefault grew the process by {grew} KB: it went past the heap");
            drop(probe);
        })
        .join()
        .unwrap();
    }

    /// A script without storage whose globals were somehow still there (a bug in the bootstrap,
    /// a future global) is refused by the ops themselves: nothing lands in the workspace.
    #[test]
    fn the_storage_ops_refuse_a_script_without_storage() {
        let ws = tempfile::tempdir().unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let _enter = rt.enter();
        let mut prepared = Prepared::new(64, &TranspileCache::default()).unwrap();
        let script = "for (const f of [() => writeText('a.txt', 'x'), () => store('k', 1), () => load('k'), \
                      () => readText('a.txt'), () => list(''), () => saveSkill('planted', 'export const x = 1;', 'x')]) {\n\
                        try { f(); console.log('ALLOWED'); } catch (e) { console.log(e.message); }\n\
                      }\n";
        let limits = super::super::Limits { storage: false, ..Default::default() };
        let req = ExecRequest {
            workspace: ws.path().to_path_buf(),
            script: Script::Inline(script.into()),
            limits,
            bridge: None,
        };
        let outcome = rt.block_on(prepared.run_dropping(req, drop, false));
        assert!(outcome.error.is_none(), "{:?}", outcome.error);
        let lines: Vec<&str> = outcome.stdout.lines().collect();
        assert_eq!(lines.len(), 6, "{}", outcome.stdout);
        for line in lines {
            assert_eq!(line, "this script may not keep state or save skills (result handlers have no storage)");
        }
        assert_eq!(std::fs::read_dir(ws.path()).unwrap().count(), 0, "something was written");
    }

    /// A restored context's intrinsics registry (the native functions and prototypes a snapshot
    /// names by number) is rebuilt by following the paths the process's first walk recorded;
    /// threads racing to record and follow them still get a registry equal to a full walk's. A
    /// debug build (the test suite's) checks each followed walk against a full walk and panics
    /// on a difference (under the engine's C entry points, so the test binary aborts), so a
    /// wrong registry fails the run before a script could misread it.
    #[cfg(debug_assertions)]
    #[test]
    fn isolates_restored_on_racing_threads_find_the_intrinsics_the_snapshot_names() {
        let threads: Vec<_> = (0..4)
            .map(|t| {
                std::thread::spawn(move || {
                    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                    let _enter = rt.enter();
                    let cache = TranspileCache::default();
                    let ws = tempfile::tempdir().unwrap();
                    for round in 0..3 {
                        let mut prepared = Prepared::new(64, &cache).unwrap();
                        let script = format!(
                            "console.log(JSON.stringify([1, 2, {t}].map((x) => x * 2)), [...'ab'].join('-'), \
                             typeof Promise.resolve, await Promise.resolve({round}), Object.keys({{ k: 1 }}));\n"
                        );
                        let req = ExecRequest {
                            workspace: ws.path().to_path_buf(),
                            script: Script::Inline(script),
                            limits: super::super::Limits::default(),
                            bridge: None,
                        };
                        let outcome = rt.block_on(prepared.run_dropping(req, drop, false));
                        assert!(outcome.error.is_none(), "{:?}", outcome.error);
                        assert_eq!(outcome.stdout, format!("[2,4,{}] a-b function {round} [\"k\"]\n", 2 * t));
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().expect("a thread's isolates found their intrinsics");
        }
    }

    /// The walk's fallback: a context whose walk finds a recorded path leading to an object of
    /// another kind (the state it was recorded in no longer holds) walks in full instead, and
    /// its registry is still the one a full walk builds; a walk that follows intact paths does
    /// not fall back. Played in a runtime of its own, at a call site only this check uses, so the
    /// recipes other tests' isolates follow are not touched.
    #[test]
    fn a_walk_whose_recorded_path_no_longer_holds_walks_in_full() {
        assert_eq!(v8::intrinsics_walk_selftest(), Ok(()));
    }

    /// What a script can reach from `globalThis` in a runtime restored from the snapshot (after
    /// the finalize step, as every script gets it) is what it reaches in one that ran the same
    /// bootstrap from source: every own key of every object (names and symbols), its
    /// attributes, each value's type, a function's name and arity, and which paths lead to one
    /// and the same object (keys taken in sorted order: a restored object's key order may
    /// differ). The restore rebuilds that graph from the snapshot's bytes, naming the engine's
    /// native functions and prototypes through the intrinsics registry: a wrong registry entry,
    /// a property defined with other attributes or a lost one shows here.
    ///
    /// Except for what the engine's snapshot is known to get wrong (vendor/v8x/VENDORED.md,
    /// "What should change upstream"), listed in `KNOWN`: a native function that shares its C
    /// function and magic with another is restored as that other one (`String.prototype.toString`
    /// as `valueOf`, the `Symbol.species` getters as `Array`'s), two native error constructors
    /// lose `Error` as their prototype, `Object.defineProperty` comes back under another name,
    /// and `Date.prototype.toLocaleString` is the engine's native one where a bootstrap from
    /// source gets its `Intl` stub's.
    #[test]
    fn a_restored_runtime_reaches_what_a_bootstrapped_one_reaches() {
        const FINGERPRINT: &str = "(() => {
            const seen = new Map(); const out = []; const queue = [[globalThis, 'globalThis']];
            seen.set(globalThis, 'globalThis');
            while (queue.length) {
                const [obj, path] = queue.shift();
                const proto = Object.getPrototypeOf(obj);
                out.push(`${path} proto=${proto === null ? 'null' : seen.get(proto) ?? 'unseen'}`);
                const keys = Reflect.ownKeys(obj).map((k) => [String(k), k]).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
                for (const [, key] of keys) {
                    // the engine's own bookkeeping for making and restoring snapshots
                    if (typeof key === 'string' && key.startsWith('__v8x_snapshot_')) continue;
                    const d = Object.getOwnPropertyDescriptor(obj, key);
                    const name = `${path}.${String(key)}`;
                    const attrs = `${d.enumerable ? 'e' : '-'}${d.configurable ? 'c' : '-'}${'value' in d ? (d.writable ? 'w' : '-') : 'a'}`;
                    for (const [part, v] of 'value' in d ? [['', d.value]] : [[':get', d.get], [':set', d.set]]) {
                        let kind = typeof v;
                        if (kind === 'function') kind += `(${v.name}/${v.length})`;
                        if (v !== null && (typeof v === 'object' || typeof v === 'function')) {
                            const first = seen.get(v);
                            if (first !== undefined) { out.push(`${name}${part} ${attrs} ${kind} =${first}`); continue; }
                            seen.set(v, name + part); queue.push([v, name + part]);
                        }
                        out.push(`${name}${part} ${attrs} ${kind}`);
                    }
                }
            }
            return out.join('\\n');
        })()";
        let fingerprint = |restored: bool| {
            // Restored as `new_runtime` restores (the snapshot's op functions kept).
            let mut runtime = if restored {
                restored_runtime()
            } else {
                JsRuntime::new(RuntimeOptions {
                    extensions: vec![super::super::ops::extension(true)],
                    ..Default::default()
                })
            };
            finalize(&mut runtime).unwrap();
            eval_to_string(&mut runtime, FINGERPRINT)
        };
        let bootstrapped = fingerprint(false);
        let restored = fingerprint(true);
        assert!(bootstrapped.lines().count() > 1000, "{bootstrapped}");
        const KNOWN: &[&str] = &[
            "globalThis.ArrayBuffer.Symbol(Symbol.species):get",
            "globalThis.Map.Symbol(Symbol.species):get",
            "globalThis.Promise.Symbol(Symbol.species):get",
            "globalThis.RegExp.Symbol(Symbol.species):get",
            "globalThis.Set.Symbol(Symbol.species):get",
            "globalThis.String.prototype.toString ",
            "globalThis.String.prototype.toLowerCase ",
            "globalThis.String.prototype.toUpperCase ",
            "globalThis.TypeError proto=",
            "globalThis.InternalError proto=",
            "globalThis.Object.defineProperty ",
            "globalThis.Date.prototype.toLocaleString",
        ];
        let known = |line: &&str| KNOWN.iter().any(|k| line.starts_with(k));
        let (b, r): (std::collections::BTreeSet<_>, std::collections::BTreeSet<_>) =
            (bootstrapped.lines().filter(|l| !known(l)).collect(), restored.lines().filter(|l| !known(l)).collect());
        // Each known difference is still there: when the engine gets one right, it leaves the list.
        for k in KNOWN {
            let differs =
                bootstrapped.lines().filter(|l| l.starts_with(k)).ne(restored.lines().filter(|l| l.starts_with(k)));
            assert!(differs, "{k}: no longer differs; take it out of KNOWN");
        }
        let only_bootstrapped: Vec<_> = b.difference(&r).collect();
        let only_restored: Vec<_> = r.difference(&b).collect();
        assert!(
            only_bootstrapped.is_empty() && only_restored.is_empty(),
            "bootstrapped only: {only_bootstrapped:#?}\nrestored only: {only_restored:#?}"
        );
    }

    /// The snapshot's modules (the ops module among them) keep their exports in a registry the
    /// engine restores them from. From the moment a runtime is restored, no script reaches that
    /// registry: not before any module ran (when the engine has not restored a module yet, since
    /// no module asked), and not after a module ran.
    #[test]
    fn no_script_reaches_the_snapshots_module_exports() {
        let mut runtime = restored_runtime();
        finalize(&mut runtime).unwrap();
        const PROBE: &str = "String(Reflect.ownKeys(globalThis).filter((k) => String(k).includes('module_exports')))";
        assert_eq!(eval_to_string(&mut runtime, PROBE), "");
        run_module(&mut runtime, "file:///probe.js", "export const x = 1;\n", true);
        assert_eq!(eval_to_string(&mut runtime, PROBE), "");
    }

    /// A snapshot module's exports are restored when a module first imports it (only deno_core's
    /// own `ext:` modules may), and they are the objects the snapshot holds: the class the
    /// bootstrap made global is the one the import gets, not a second evaluation's.
    #[test]
    fn a_module_importing_a_snapshot_module_gets_the_snapshots_exports() {
        let mut runtime = restored_runtime();
        let code = "import { MCPToolError, decodeResult } from 'ext:agent_runtime/result.js';\n\
                    globalThis.probe = [MCPToolError === globalThis.MCPToolError, typeof decodeResult].join();\n";
        // A `node:` module may import `ext:` ones; a `file:` one may not.
        run_module(&mut runtime, "node:agent_probe", code, false);
        assert_eq!(eval_to_string(&mut runtime, "globalThis.probe"), "true,function");
    }

    /// A runtime restored from the snapshot as `new_runtime` makes one, without its loader.
    fn restored_runtime() -> JsRuntime {
        let snapshot = super::super::snapshot::startup_snapshot();
        assert!(snapshot.is_some(), "the snapshot could not be made");
        JsRuntime::new(RuntimeOptions {
            extensions: vec![super::super::ops::extension(false)],
            startup_snapshot: snapshot,
            skip_op_registration: true,
            ..Default::default()
        })
    }

    /// Loads `code` as the module `url` (the main module, or a side one) and evaluates it.
    fn run_module(runtime: &mut JsRuntime, url: &str, code: &'static str, main: bool) {
        let tokio = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        tokio.block_on(async {
            let url = ModuleSpecifier::parse(url).unwrap();
            let id = if main {
                runtime.load_main_es_module_from_code(&url, code).await.unwrap()
            } else {
                runtime.load_side_es_module_from_code(&url, code).await.unwrap()
            };
            let done = runtime.mod_evaluate(id);
            runtime.run_event_loop(Default::default()).await.unwrap();
            done.await.unwrap();
        });
    }

    /// The engine itself (vendor/v8x) gives a context neither the Temporal polyfill nor
    /// WebAssembly: not deleted by our bootstrap afterwards, never there, so the snapshot does not
    /// carry them either. A runtime with deno_core's own JS and none of ours shows it.
    #[test]
    fn the_engine_gives_contexts_no_temporal_and_no_webassembly() {
        let text = bare_runtime_eval(
            "[typeof Temporal, typeof WebAssembly, typeof Date.prototype.toTemporalInstant, typeof Date].join()",
        );
        assert_eq!(text, "undefined,undefined,undefined,function");
    }

    /// `code`'s value as a string, evaluated in a runtime with deno_core's own JS and none of ours.
    fn bare_runtime_eval(code: &'static str) -> String {
        eval_to_string(&mut JsRuntime::new(RuntimeOptions::default()), code)
    }

    /// `code`'s value as a string, evaluated as a classic script in `runtime`.
    /// The snapshot writes a fast array's elements as one run of values and the restore appends
    /// them at once; properties an array already has (its `length`), and those of functions the
    /// fresh context already made (`name`, `length`), are set in place. Arrays of every shape
    /// (dense, holey, extended, frozen, cyclic, sharing an element) must come back as a context
    /// that ran the same script has them, and still behave as arrays.
    #[test]
    fn arrays_come_back_from_a_snapshot_as_a_script_made_them() {
        const SETUP: &str = "globalThis.arrays = (() => {
            const ring = new Array(4096).fill(null);
            const mixed = [1, 'two', { three: 3 }, [4, [5]], null, undefined, 6.5, true, 2n ** 70n];
            const holey = [1, , 3]; holey[10] = 11;
            const extended = [1, 2, 3]; extended.extra = 'x';
            Object.defineProperty(extended, 'hidden', { value: 1, enumerable: false });
            const cyclic = [0]; cyclic.push(cyclic);
            const frozen = Object.freeze([1, 2]);
            const fixedLength = [1, 2, 3]; Object.defineProperty(fixedLength, 'length', { writable: false });
            const shared = { s: 1 }; const twice = [shared, shared, [shared]];
            const longer = [1, 2]; longer.length = 5;
            const readOnlyElement = [1, 2]; Object.defineProperty(readOnlyElement, 0, { writable: false });
            const named = function named(a, b) {}; named.tag = 'kept';
            return { ring, mixed, holey, extended, cyclic, frozen, fixedLength, twice, longer, empty: [], readOnlyElement, named };
        })();";
        const DESCRIBE: &str = "(() => {
            const a = globalThis.arrays; const out = [];
            for (const [k, v] of Object.entries(a)) {
                const keys = Reflect.ownKeys(v).map((key) => {
                    const d = Object.getOwnPropertyDescriptor(v, key);
                    const value = typeof d.value === 'object' && d.value !== null ? (Array.isArray(d.value) ? 'array' : 'object') : String(d.value);
                    return `${String(key)}:${d.enumerable ? 'e' : '-'}${d.configurable ? 'c' : '-'}${d.writable ? 'w' : '-'}=${value}`;
                });
                out.push(`${k} isArray=${Array.isArray(v)} proto=${Object.getPrototypeOf(v) === Array.prototype} frozen=${Object.isFrozen(v)} ext=${Object.isExtensible(v)} ${keys.join(',')}`);
            }
            out.push(`cyclic=${a.cyclic[1] === a.cyclic} twice=${a.twice[0] === a.twice[1] && a.twice[2][0] === a.twice[0]}`);
            out.push(`mixed=${JSON.stringify(a.mixed, (k, v) => typeof v === 'bigint' ? String(v) : v)} hole=${1 in a.holey}`);
            out.push(`named=${a.named.name}/${a.named.length}/${a.named.tag}`);
            a.ring.push('pushed'); a.ring[0] = 'first'; a.longer.push(6); a.empty.push(1, 2);
            out.push(`after=${a.ring.length},${a.ring[0]},${a.ring[4096]},${a.ring.indexOf(null)},${a.longer.length},${a.empty.join('+')}`);
            try { a.fixedLength.push(4); out.push('fixed pushed'); } catch (e) { out.push(`fixed ${e.constructor.name}`); }
            return out.join('\\n');
        })()";
        let mut maker = deno_core::JsRuntimeForSnapshot::new(RuntimeOptions::default());
        maker.execute_script("<setup>", SETUP).unwrap();
        let snapshot: &'static [u8] = Box::leak(maker.snapshot());
        let mut restored = JsRuntime::new(RuntimeOptions { startup_snapshot: Some(snapshot), ..Default::default() });
        let mut fresh = JsRuntime::new(RuntimeOptions::default());
        fresh.execute_script("<setup>", SETUP).unwrap();
        let expected = eval_to_string(&mut fresh, DESCRIBE);
        assert!(
            expected.contains("ring isArray=true") && expected.contains("after=4097,first,pushed,1,6,1+2"),
            "{expected}"
        );
        assert_eq!(eval_to_string(&mut restored, DESCRIBE), expected);
    }

    fn eval_to_string(runtime: &mut JsRuntime, code: &'static str) -> String {
        let value = runtime.execute_script("<eval>", code).unwrap();
        deno_core::scope!(scope, runtime);
        let local = v8::Local::new(scope, value);
        local.to_rust_string_lossy(scope)
    }

    /// The engine's per-thread maps keyed by address (native functions by object, templates,
    /// external strings by handle) hold what live isolates recorded, and lose it when the isolate
    /// goes: a thread that runs isolate after isolate (a runner thread, `serve`'s warm pool) does
    /// not keep every address it ever used, nor the templates (one per op) each isolate made.
    #[test]
    fn the_engines_address_maps_hold_only_live_isolates() {
        on_a_thread_of_its_own(|cache| {
            assert_eq!(v8::thread_address_map_entries(), 0);
            for round in 0..12 {
                let prepared = Prepared::new(64, cache).unwrap();
                let live = v8::thread_address_map_entries();
                assert!(live > 0, "round {round}: a live isolate recorded nothing");
                drop(prepared);
                assert_eq!(v8::thread_address_map_entries(), 0, "round {round}: kept after dispose");
            }
        });
    }

    /// Runs `f` on a new thread, inside an event loop as a runner thread makes its isolates: the
    /// engine's per-thread records start empty there.
    fn on_a_thread_of_its_own(f: impl FnOnce(&TranspileCache) + Send + 'static) {
        std::thread::spawn(|| {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            let _enter = rt.enter();
            f(&TranspileCache::default());
        })
        .join()
        .unwrap();
    }

    /// A disposed isolate gives back every block it took from the system allocator: a runner
    /// thread or a worker that makes isolate after isolate does not keep any of each one's memory
    /// (the templates of every op once held thousands of objects alive, ~40 KB per script a worker
    /// never gave back). The engine frees a runtime's arenas and large blocks whole at its end,
    /// whatever objects are still in them.
    #[test]
    fn a_disposed_isolate_gives_back_every_block_it_took() {
        on_a_thread_of_its_own(|cache| {
            for round in 0..3 {
                drop(Prepared::new(64, cache).unwrap());
                let left = v8::last_runtime_blocks_left();
                assert_eq!(left, 0, "round {round}: {left} blocks of the runtime still allocated after its end");
            }
        });
    }

    /// An op function, as a script sees it: V8's `toString` text with its name, its name and
    /// arity, the same own properties; two ops print their own names through the `toString`
    /// they share.
    #[test]
    fn an_op_function_looks_as_it_did_to_a_script() {
        let text = bare_runtime_eval(
                "const ops = Deno.core.ops; const names = Object.keys(ops).filter((k) => typeof ops[k] === 'function').slice(0, 2);
                 names.map((k) => { const f = ops[k]; const d = Object.getOwnPropertyDescriptor(f, 'name');
                   return [f.toString() === `function ${k}() { [native code] }`, f.name === k, typeof f.length,
                           d.configurable, d.writable, d.enumerable, Object.getOwnPropertyNames(f).join(' ')].join(); }).join(';')",
        );
        let rows: Vec<&str> = text.split(';').collect();
        assert_eq!(rows.len(), 2, "{text}");
        for row in rows {
            assert_eq!(row, "true,true,number,true,false,false,length name toString prototype", "{text}");
        }
    }

    /// A handle's slot is freed with its scope and a later handle takes its address: a string a
    /// script makes afterwards is neither taken for the external string that had the address
    /// nor given that string's bytes.
    #[test]
    fn a_string_at_a_freed_handle_address_is_not_taken_for_an_external_string() {
        let mut runtime = JsRuntime::new(RuntimeOptions::default());
        deno_core::scope!(scope, &mut runtime);
        let external_at = {
            v8::scope!(let inner, scope);
            let s = v8::String::new_external_onebyte_static(inner, b"engine-owned").unwrap();
            assert!(s.is_external_onebyte());
            &*s as *const v8::String as usize
        };
        let mut reused = 0;
        for _ in 0..1000 {
            v8::scope!(let inner, scope);
            let s = v8::String::new(inner, "a script's own string").unwrap();
            if &*s as *const v8::String as usize == external_at {
                reused += 1;
                assert!(!s.is_external_onebyte(), "a script's string taken for an external one");
                assert!(s.get_external_string_resource_base().0.is_none(), "given the external string's bytes");
            }
        }
        assert!(reused > 0, "no later handle took the freed address");
    }

    /// The object a `v8::Value` handle holds, by the address QuickJS gave it (the first word of
    /// the engine's value; only compared, never followed).
    fn object_address(value: &v8::Value) -> usize {
        // SAFETY: a handle points at the engine's value, whose first word is the object pointer.
        unsafe { *(value as *const v8::Value as *const usize) }
    }

    /// Makes `count` objects by a script and returns those whose address is in `addresses`.
    fn script_objects_at<'s>(
        scope: &mut v8::PinScope<'s, '_>,
        count: usize,
        addresses: &std::collections::HashSet<usize>,
    ) -> Vec<v8::Local<'s, v8::Value>> {
        let code = format!("Array.from({{ length: {count} }}, (_, i) => ({{ i }}))");
        let code = v8::String::new(scope, &code).unwrap();
        let made = v8::Script::compile(scope, code, None).unwrap().run(scope).unwrap();
        let made = v8::Local::<v8::Array>::try_from(made).unwrap();
        (0..made.length())
            .map(|i| made.get_index(scope, i).unwrap())
            .filter(|object| addresses.contains(&object_address(object)))
            .collect()
    }

    /// `v8::External`s are freed and the objects a script makes afterwards take their addresses:
    /// none of them is taken for an external (`is_external`, what an op that takes a pointer
    /// checks before reading one), so a script cannot hand an op an object that reads as a freed
    /// external's pointer.
    #[test]
    fn an_object_at_a_freed_externals_address_is_not_an_external() {
        let mut runtime = JsRuntime::new(RuntimeOptions::default());
        deno_core::scope!(scope, &mut runtime);
        let mut pointee = 0u64;
        let freed: std::collections::HashSet<usize> = {
            v8::scope!(let inner, scope);
            (0..1000)
                .map(|_| {
                    let external = v8::External::new(inner, &mut pointee as *mut u64 as *mut std::ffi::c_void);
                    assert!(external.is_external());
                    object_address(&external)
                })
                .collect()
        };
        let reused = script_objects_at(scope, 20_000, &freed);
        assert!(!reused.is_empty(), "no object took a freed external's address");
        for object in reused {
            assert!(!object.is_external(), "a script's object taken for a freed external");
        }
    }

    unsafe extern "C" fn no_op_callback(_: *const v8::FunctionCallbackInfo) {}

    /// An isolate is dropped while function templates still hold `v8::External`s (as every op's
    /// template does: one per op per isolate): those externals are never finalized, and the
    /// engine's record of them goes with their isolate, so a long-lived process (`serve`, a
    /// runner thread) does not keep one entry per op of every isolate it ever made, each naming
    /// an address the allocator has since handed to someone else.
    #[test]
    fn a_dropped_isolates_externals_leave_no_record() {
        let mut pointee = 0u64;
        let pointer = &mut pointee as *mut u64 as *mut std::ffi::c_void;
        {
            let mut first = JsRuntime::new(RuntimeOptions::default());
            deno_core::scope!(scope, &mut first);
            for _ in 0..100 {
                let external = v8::External::new(scope, pointer);
                let _held = v8::FunctionTemplate::builder_raw(no_op_callback).data(external.into()).build(scope);
            }
            assert_eq!(v8::process_externals_holding(pointer), 100);
        }
        assert_eq!(v8::process_externals_holding(pointer), 0, "kept after the isolate was dropped");
    }

    /// A racing process swaps a cache file it saw loose for a link to another file of the user:
    /// neither the link's target nor anything else is tightened through it.
    #[test]
    fn a_cache_file_swapped_for_a_link_is_not_changed_through_it() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let entry = dir.path().join("0000000000000001.qbc");
        std::fs::write(&entry, b"compiled").unwrap();
        std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(0o644)).unwrap();
        let seen = std::fs::symlink_metadata(&entry).unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, b"the user's").unwrap();
        std::fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::remove_file(&entry).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &entry).unwrap();
        tighten(&entry, &seen);
        let mode = std::fs::metadata(&elsewhere).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644, "changed through the link");
        // The file as seen, still in place, is tightened.
        std::fs::remove_file(&entry).unwrap();
        std::fs::write(&entry, b"compiled").unwrap();
        std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(0o644)).unwrap();
        tighten(&entry, &std::fs::symlink_metadata(&entry).unwrap());
        assert_eq!(std::fs::metadata(&entry).unwrap().permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn the_bytecode_cache_is_trimmed_to_the_most_recently_used_entries_by_count_and_size() {
        let dir = tempfile::tempdir().unwrap();
        let old = std::time::SystemTime::now() - Duration::from_secs(3600);
        let older = std::time::SystemTime::now() - Duration::from_secs(7200);
        for i in 0..10 {
            let p = dir.path().join(format!("{i:016x}.qbc"));
            std::fs::write(&p, [0u8; 100]).unwrap();
            // Files 0..5 were last used an hour or two ago, 5..10 now.
            if i < 5 {
                let t = std::fs::FileTimes::new().set_accessed(older).set_modified(old);
                std::fs::File::options().write(true).open(&p).unwrap().set_times(t).unwrap();
            }
        }
        // File 0 was written long ago but read a moment ago: recently used, it stays.
        let p0 = dir.path().join(format!("{:016x}.qbc", 0));
        let t = std::fs::FileTimes::new().set_accessed(std::time::SystemTime::now()).set_modified(older);
        std::fs::File::options().write(true).open(&p0).unwrap().set_times(t).unwrap();
        // A temporary file an hour old is a write that died; a new one may be in progress.
        let stale = dir.path().join("stale.tmp");
        std::fs::write(&stale, b"x").unwrap();
        std::fs::File::options().write(true).open(&stale).unwrap().set_modified(old).unwrap();
        std::fs::write(dir.path().join("in-progress.tmp"), b"x").unwrap();
        std::fs::write(dir.path().join("other.txt"), b"x").unwrap();
        prune_bytecode_cache(dir.path(), 20, 1 << 20);
        assert!(!stale.exists(), "a stale temporary file was kept");
        assert!(dir.path().join("in-progress.tmp").exists(), "a write in progress was removed");
        let entries = std::fs::read_dir(dir.path()).unwrap().flatten().filter(|e| e.file_name() != TRIMMED_STAMP);
        assert_eq!(entries.count(), 12, "under both limits only the stale .tmp goes");
        let qbc = |dir: &Path| -> Vec<u64> {
            let mut v: Vec<u64> = std::fs::read_dir(dir)
                .unwrap()
                .flatten()
                .filter_map(|e| {
                    e.file_name().to_str()?.strip_suffix(".qbc").map(|n| u64::from_str_radix(n, 16).unwrap())
                })
                .collect();
            v.sort();
            v
        };
        prune_bytecode_cache(dir.path(), 8, 1 << 20);
        let kept = qbc(dir.path());
        assert_eq!(kept.len(), 4, "{kept:?}");
        assert!(kept.contains(&0), "the entry read a moment ago was dropped: {kept:?}");
        assert!(kept.iter().all(|&i| i == 0 || i >= 5), "an unused entry survived: {kept:?}");
        assert!(dir.path().join("other.txt").exists(), "only cache files are touched");
        // Over the size limit (4 x 100 bytes > 300): down to at most half of it, newest first.
        prune_bytecode_cache(dir.path(), 100, 300);
        assert_eq!(qbc(dir.path()).len(), 1, "{:?}", qbc(dir.path()));
    }

    /// After a trim the cache needs none until a file is added or removed (by anyone), the stamp
    /// is damaged, or an hour has passed; the stamp is private and a link in its place is not
    /// followed.
    #[test]
    fn the_bytecode_cache_is_trimmed_again_only_once_it_changed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(format!("{:016x}.qbc", 1)), b"compiled").unwrap();
        assert!(bytecode_cache_changed(dir.path()), "never trimmed");
        prune_bytecode_cache(dir.path(), 20, 1 << 20);
        let stamp = dir.path().join(TRIMMED_STAMP);
        assert_eq!(std::fs::symlink_metadata(&stamp).unwrap().permissions().mode() & 0o777, 0o600);
        assert!(!bytecode_cache_changed(dir.path()), "nothing changed since the trim");
        // Reading an entry (the engine's cache hit) is no change.
        std::fs::read(dir.path().join(format!("{:016x}.qbc", 1))).unwrap();
        assert!(!bytecode_cache_changed(dir.path()));

        // A directory's time moves in steps of the file system's clock (a few ms on some):
        // each change below comes after such a step.
        let step = || std::thread::sleep(Duration::from_millis(20));
        // An entry written (through a temporary file, as the engine does) is a change.
        step();
        let tmp = dir.path().join("2.tmp");
        std::fs::write(&tmp, b"compiled").unwrap();
        std::fs::rename(&tmp, dir.path().join(format!("{:016x}.qbc", 2))).unwrap();
        assert!(bytecode_cache_changed(dir.path()), "a new entry went unnoticed");
        prune_bytecode_cache(dir.path(), 20, 1 << 20);
        assert!(!bytecode_cache_changed(dir.path()));

        // So is one removed.
        step();
        std::fs::remove_file(dir.path().join(format!("{:016x}.qbc", 2))).unwrap();
        assert!(bytecode_cache_changed(dir.path()), "a removed entry went unnoticed");
        prune_bytecode_cache(dir.path(), 20, 1 << 20);

        // A stamp from more than an hour ago: trimmed anyway. (Its change time cannot be set
        // back, so the hour is played by a stamp set to another time: not what a trim left.)
        let f = std::fs::File::options().write(true).open(&stamp).unwrap();
        f.set_modified(std::time::SystemTime::now() - Duration::from_secs(7200)).unwrap();
        assert!(bytecode_cache_changed(dir.path()), "a stamp that does not match was trusted");
        prune_bytecode_cache(dir.path(), 20, 1 << 20);
        assert!(!bytecode_cache_changed(dir.path()));

        // A link in the stamp's place is neither trusted nor followed.
        std::fs::remove_file(&stamp).unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let target = elsewhere.path().join("target");
        std::fs::write(&target, b"not ours to touch").unwrap();
        let before = std::fs::metadata(&target).unwrap().modified().unwrap();
        std::os::unix::fs::symlink(&target, &stamp).unwrap();
        assert!(bytecode_cache_changed(dir.path()));
        prune_bytecode_cache(dir.path(), 20, 1 << 20);
        assert_eq!(std::fs::metadata(&target).unwrap().modified().unwrap(), before, "the link was followed");
        assert!(bytecode_cache_changed(dir.path()), "a link was taken for the stamp");
    }
}
