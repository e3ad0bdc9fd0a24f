//! The code-mode runtime: runs agent-written TypeScript in an embedded deno_core isolate.
//!
//! [`Executor`] owns a runner that keeps one `JsRuntime` bootstrapped ahead of need (restored
//! from the startup snapshot in `snapshot`, or bootstrapped from source when there is none,
//! ~20-30 ms on QuickJS), so a call to [`Executor::execute`] only loads and runs the script.
//! Every execution gets a fresh isolate: nothing a script does survives into the next one;
//! except in a session ([`Executor::session`]), whose steps share one isolate until a step is
//! stopped (what a step defines at its top level is there in the next: `keep`). In
//! the `agent` binary the runner is a worker process (`process`), killed when a stopped script
//! does not unwind; elsewhere (tests, benches) a dedicated thread ([`Isolation`]).
//!
//! Knows `bridge` (its protocol and client), `config`, `skills` (the skill file format) and
//! `util`. Boundaries: the isolate reaches MCP only through the bridge protocol (`crate::bridge`
//! client over a Unix socket); it never sees the manager, the bridge token, the file system
//! outside the workspace's modules, the network, the environment or processes.
//!
//! - `isolate`: building a runtime (extension, bootstrap, heap limit) and running one script.
//! - `process`: the worker process the runner lives in (`agent __js-worker`), its protocol, and
//!   killing it when a stopped script does not unwind.
//! - `keep`: a session step's top-level bindings carried over to the next step.
//! - `loader`: module resolution confined to the workspace, TypeScript transpiling, source maps.
//! - `ops`: the few ops the bootstrap JS (`runtime-js/bootstrap.js`) is built on.
//! - `output`: captured stdout/stderr under the output cap.
//! - `snapshot`: the bootstrapped isolate, snapshotted once per binary and cached on disk.
//! - `scan`: which MCP servers a script (and its imports) refers to.
//! - `state`: `<workspace>/data/` behind its fence (`store`/`load`, the file API), also used by
//!   `agent state`.
//! - `quota`: the one quota of `data/` and `skills/`, a running total under a lock.
//! - `skill`: the checks before a skill is saved, and the save under `<workspace>/skills/`.
//! - `confine`: opening workspace files only where they really are inside it (the loader and
//!   code mode's discovery tools read through it).

pub(crate) mod confine;
mod isolate;
mod keep;
mod loader;
mod ops;
mod output;
mod process;
pub(crate) mod quota;
pub mod scan;
pub mod skill;
mod snapshot;
pub mod state;
mod wait;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use isolate::phases::{PHASES, engine_floor, phase_profile};
pub use isolate::{MIN_HEAP_MB, use_private_bytecode_cache};
pub use process::{ForkedWorker, WORKER_ARG, worker_main, worker_verbosity};

use crate::bridge::BridgeEndpoint;
use crate::config::CodeExecutionConfig;

/// How long a script may run, how much it may allocate and print, and how many tool calls it
/// may have in flight at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Wall-clock limit for the whole script, tool calls included.
    pub timeout: Duration,
    /// Heap limit of the isolate, in MB (MiB).
    pub memory_limit_mb: u64,
    /// Cap on stdout + stderr (+ the JSON of the default export), in bytes.
    pub max_output_bytes: usize,
    /// Tool calls in flight at once; more wait in a queue.
    pub max_concurrent_calls: usize,
    /// How long the runner's thread polls for the answer of a lone tool call before it sleeps
    /// (zero: sleep at once). See `runtime::wait`.
    pub call_spin: Duration,
    /// Quotas of `<workspace>/data/`.
    pub state: state::Quota,
    /// Whether the script may keep anything: `store`/`load`, the `data/` file API and
    /// `saveSkill` (code mode). Off for result handlers: those globals are absent and their ops
    /// refuse.
    pub storage: bool,
}

impl Limits {
    pub fn from_config(c: &CodeExecutionConfig) -> Limits {
        Limits {
            timeout: c.timeout,
            memory_limit_mb: c.memory_limit_mb,
            max_output_bytes: c.max_output_bytes,
            max_concurrent_calls: c.max_concurrent_calls,
            call_spin: c.call_spin,
            state: state::Quota::from_config(&c.state),
            storage: true,
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits::from_config(&CodeExecutionConfig::default())
    }
}

/// The script to run.
#[derive(Debug, Clone)]
pub enum Script {
    /// A file anywhere on disk; what it imports must still resolve inside the workspace.
    File(PathBuf),
    /// Source text, run as if it were `<workspace>/main.ts` (so `./servers/<server>/index.ts`
    /// and `./client.ts` resolve).
    Inline(String),
}

/// One execution.
#[derive(Debug, Clone)]
pub struct ExecRequest {
    /// The generated tree's directory; modules may only be imported from inside it.
    pub workspace: PathBuf,
    pub script: Script,
    pub limits: Limits,
    /// Where tool calls go. Without one, every tool call fails with `bridge_unreachable`.
    pub bridge: Option<BridgeEndpoint>,
}

/// What an execution produced. `error` is `None` when the script ran to completion.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ExecOutcome {
    /// `console.log/info/debug/dir/table` output.
    pub stdout: String,
    /// `console.warn/error/trace/assert` output.
    pub stderr: String,
    /// The default export's value as JSON (a function is called and awaited first); `None` when
    /// there is no default export or it is `undefined`.
    pub value: Option<serde_json::Value>,
    pub error: Option<ExecFailure>,
    /// Tool calls the script made (successful or not), resource and prompt requests included.
    pub tool_calls: u64,
    /// Wall-clock time of the script itself (module loading included, isolate creation not).
    pub duration_ms: f64,
    /// Bytes of output dropped by the output cap (0 when nothing was cut).
    pub output_truncated_bytes: u64,
    /// Skills the script saved (`saveSkill`), by name; not part of the JSON result.
    #[serde(skip)]
    pub skills_saved: Vec<String>,
    /// What the step did to its session ([`Executor::session`] only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionNote>,
    /// How the script used its isolate (the runner tells the executor).
    #[serde(skip)]
    pub(crate) isolate: IsolateUse,
}

/// What a session step did to its session: the model and the client are told both plainly.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionNote {
    /// The step ran in a fresh isolate because the session's previous one ended: why it ended.
    /// Earlier definitions are gone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restarted: Option<String>,
    /// The session ended with this step (a limit stopped it): why. The next step starts fresh.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<String>,
}

impl SessionNote {
    /// The line a step's output starts with when it runs in a fresh session.
    pub fn restarted_line(why: &str) -> String {
        format!("[a fresh session: the previous one ended ({why}); its definitions are gone]")
    }

    /// The line after a step's output when the step ended its session.
    pub fn ended_line(why: &str) -> String {
        format!("[the session ended: {why}; the next step starts in a fresh isolate, earlier definitions are gone]")
    }
}

/// How a script used its isolate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct IsolateUse {
    /// It ran in an isolate (it did not fail before one was there).
    pub ran: bool,
    /// That isolate was new (not left by a previous session step).
    pub fresh: bool,
    /// The isolate is kept for the next session step.
    pub kept: bool,
}

/// Why an execution failed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExecFailure {
    pub kind: FailureKind,
    /// One line: `Error: boom at main.ts:3:9`, `timed out after 2s`, ...
    pub message: String,
    /// The stack, with positions mapped back to the TypeScript source.
    pub stack: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FailureKind {
    /// The script threw (or rejected) and did not catch it.
    Script,
    /// A module did not parse or transpile.
    Compile,
    /// A module could not be resolved or loaded (outside the workspace, not found, forbidden).
    Import,
    /// The wall-clock limit was hit.
    Timeout,
    /// The heap limit was hit.
    Memory,
    /// The script did not type-check (`agent exec --check`, `typecheck: true`); it did not run.
    Typecheck,
}

impl ExecOutcome {
    /// This outcome of a script that had started in its isolate (which is gone now).
    fn ran(mut self) -> ExecOutcome {
        self.isolate = IsolateUse { ran: true, fresh: false, kept: false };
        self
    }

    fn failed(kind: FailureKind, message: String) -> ExecOutcome {
        ExecOutcome { error: Some(ExecFailure { kind, message, stack: None }), ..ExecOutcome::default() }
    }
}

/// After a stop (the timeout, a cancellation), how long the isolate gets to unwind before its
/// runner is given up: a worker process is killed, a thread abandoned (a native call that never
/// returns to the interpreter cannot be interrupted). A script that can be stopped unwinds in
/// milliseconds; this bounds how long one that cannot keeps a CPU busy.
const UNWIND_GRACE: Duration = Duration::from_secs(1);

/// Where an executor runs scripts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Isolation {
    /// A worker process of the given `agent` binary ([`WORKER_ARG`]), killed (and replaced) when
    /// a stopped script does not unwind: nothing a script does keeps a CPU busy after its stop.
    Process(PathBuf),
    /// A thread of this process. A script stuck in a native builtin keeps its (abandoned) thread
    /// busy until it returns. For library users that are not the `agent` binary: tests, benches.
    Thread,
}

static WORKER_BINARY: OnceLock<PathBuf> = OnceLock::new();

/// Makes executors created from now on run scripts in worker processes of this binary (see
/// [`Isolation::Process`]). The `agent` binary calls it first thing; a library user that is
/// not `agent` cannot host the worker and keeps [`Isolation::Thread`].
pub fn run_scripts_in_worker_processes() {
    match crate::util::child::this_binary() {
        Ok(exe) => {
            let _ = WORKER_BINARY.set(exe);
        }
        Err(e) => {
            tracing::warn!("cannot find the agent binary to run scripts in worker processes ({e}); using threads")
        }
    }
}

/// Starts the first script worker now (see [`run_scripts_in_worker_processes`]), prepared for the
/// default limits, for a command that will run a script: the first executor takes it. The
/// `agent` binary calls it first thing for `agent exec`, so the worker's start overlaps
/// `agent`'s own; a configuration with other limits still works (the worker prepares a runtime
/// for the limits each job carries).
pub fn prestart_worker() {
    if let Some(exe) = WORKER_BINARY.get() {
        process::prestart(exe, Limits::default().memory_limit_mb);
    }
}

/// [`prestart_worker`] by forking this process ([`process::prestart_forked`]): in the child it
/// returns the worker, which the caller runs (and then exits with its status); in `agent` it
/// returns `None`.
///
/// # Safety
///
/// Call it while this process has a single thread (first thing in `main`); with more it starts
/// the worker as [`prestart_worker`] does.
pub unsafe fn prestart_forked_worker() -> Option<ForkedWorker> {
    let exe = WORKER_BINARY.get()?;
    // SAFETY: passed on from the caller.
    unsafe { process::prestart_forked(exe, Limits::default().memory_limit_mb) }
}

impl Isolation {
    /// What [`run_scripts_in_worker_processes`] decided: a worker process when it was called.
    pub fn configured() -> Isolation {
        WORKER_BINARY.get().map_or(Isolation::Thread, |exe| Isolation::Process(exe.clone()))
    }
}

/// Runs scripts, one at a time, in a runner (a worker process or a dedicated thread) that keeps
/// a runtime ready.
pub struct Executor {
    backend: Backend,
    /// A session's executor: its steps share an isolate ([`Executor::session`]).
    session: Option<Mutex<SessionTrack>>,
}

/// What a session executor knows of its session between steps.
#[derive(Default)]
struct SessionTrack {
    /// Steps that ran in an isolate.
    steps: u64,
    /// Why the last isolate ended, when a step ended it.
    ended: Option<String>,
}

impl SessionTrack {
    /// Notes what `o` did to the session; `None` when nothing changed.
    fn step(&mut self, o: &ExecOutcome) -> Option<SessionNote> {
        let u = o.isolate;
        if !u.ran {
            return None;
        }
        let mut note = SessionNote::default();
        if u.fresh && self.steps > 0 {
            // No reason known: the step that ended it was dropped by its caller (a cancel).
            let why = self.ended.take().unwrap_or_else(|| "its isolate was stopped".to_string());
            note.restarted = Some(why);
        }
        self.steps += 1;
        self.ended = None;
        if !u.kept {
            let why = match &o.error {
                Some(e) if matches!(e.kind, FailureKind::Timeout | FailureKind::Memory) => e.message.clone(),
                Some(e) => e.message.trim_start_matches("internal error: ").to_string(),
                None => "its isolate was given up".to_string(),
            };
            note.ended = Some(why.clone());
            self.ended = Some(why);
        }
        (note != SessionNote::default()).then_some(note)
    }
}

enum Backend {
    Thread(ThreadRunner),
    Process(process::Runner),
}

impl Default for Executor {
    fn default() -> Self {
        Executor::new()
    }
}

impl Executor {
    /// Starts the runner, which immediately prepares a runtime with the default limits.
    pub fn new() -> Executor {
        Executor::with_limits(&Limits::default())
    }

    /// Like [`Executor::new`], preparing the first runtime for `limits` (the heap limit is fixed
    /// when an isolate is created; a request with another limit pays for a fresh one), where
    /// [`Isolation::configured`] says.
    pub fn with_limits(limits: &Limits) -> Executor {
        Executor::with_isolation(limits, Isolation::configured())
    }

    /// Like [`Executor::with_limits`], running scripts where `isolation` says.
    pub fn with_isolation(limits: &Limits, isolation: Isolation) -> Executor {
        Executor { backend: Backend::start(limits, isolation, false), session: None }
    }

    /// An executor for a session: its scripts (steps) run one after the other in one isolate, so
    /// what a step defines at its top level is there in the next (`keep`). The timeout applies
    /// to each step, the heap limit to the session. A step that is stopped (timeout, heap limit,
    /// cancelled, its worker killed) ends the session: its outcome says so
    /// ([`SessionNote::ended`]), and the next step runs in a fresh isolate and says that
    /// ([`SessionNote::restarted`]). The runner (a worker process of its own with
    /// [`Isolation::Process`]) ends when the executor is dropped.
    pub fn session(limits: &Limits, isolation: Isolation) -> Executor {
        Executor {
            backend: Backend::start(limits, isolation, true),
            session: Some(Mutex::new(SessionTrack::default())),
        }
    }

    /// Runs one script to completion, failure or limit. Never panics; every problem ends up in
    /// [`ExecOutcome::error`]. Dropping the returned future stops the script.
    ///
    /// Must be awaited inside a tokio runtime: the timeout runs on it.
    pub async fn execute(&self, req: ExecRequest) -> ExecOutcome {
        if tokio::runtime::Handle::try_current().is_err() {
            return ExecOutcome::failed(
                FailureKind::Script,
                "internal error: Executor::execute must run inside a tokio runtime".into(),
            );
        }
        let mut outcome = match &self.backend {
            Backend::Thread(t) => t.execute(req).await,
            Backend::Process(p) => p.execute(req).await,
        };
        if let Some(track) = &self.session {
            outcome.session = track.lock().unwrap_or_else(|p| p.into_inner()).step(&outcome);
        }
        outcome
    }
}

impl Backend {
    fn start(limits: &Limits, isolation: Isolation, keep: bool) -> Backend {
        match isolation {
            Isolation::Process(exe) => Backend::Process(process::Runner::start(exe, limits.memory_limit_mb, keep)),
            Isolation::Thread => Backend::Thread(ThreadRunner::start(limits, keep)),
        }
    }
}

/// The in-process runner: a dedicated thread of this process.
struct ThreadRunner {
    worker: Mutex<isolate::Worker>,
    /// Session steps: the runner keeps the isolate between them.
    keep: bool,
    /// The heap limit the next runtime is prepared with (the last one asked for).
    prepared_limit_mb: Arc<std::sync::atomic::AtomicU64>,
}

impl ThreadRunner {
    fn start(limits: &Limits, keep: bool) -> ThreadRunner {
        let prepared_limit_mb = Arc::new(std::sync::atomic::AtomicU64::new(limits.memory_limit_mb));
        ThreadRunner { worker: Mutex::new(isolate::Worker::spawn(prepared_limit_mb.clone())), keep, prepared_limit_mb }
    }

    async fn execute(&self, req: ExecRequest) -> ExecOutcome {
        let timeout = req.limits.timeout;
        self.prepared_limit_mb.store(req.limits.memory_limit_mb, Ordering::Relaxed);
        let (job, started, done) = isolate::Job::new(req, self.keep);
        let Some(started) = self.submit(job, started) else {
            return ExecOutcome::failed(
                FailureKind::Script,
                "internal error: the script runner is not available".into(),
            );
        };
        let control = match started.await {
            Ok(control) => control,
            Err(_) => {
                self.respawn();
                return ExecOutcome::failed(FailureKind::Script, "internal error: the script runner stopped".into());
            }
        };
        // From here on, dropping this future (Ctrl-C, a caller's own timeout) stops the script.
        let guard = StopOnDrop { control: control.clone(), armed: AtomicBool::new(true) };
        let mut done = done;
        let outcome = tokio::select! {
            r = &mut done => r.ok(),
            // Time a tool call spent waiting for the user (elicitation, sampling, approvals) is not counted.
            () = crate::util::clock::user_wait().sleep(timeout) => {
                control.stop(isolate::StopReason::Timeout);
                match tokio::time::timeout(UNWIND_GRACE, &mut done).await {
                    Ok(r) => r.ok(),
                    Err(_) => {
                        // The isolate is stuck in native code: abandon its thread.
                        tracing::warn!("the script did not stop after its timeout; abandoning its runner thread");
                        self.respawn();
                        let mut o = ExecOutcome::failed(FailureKind::Timeout, isolate::timeout_message(timeout)).ran();
                        o.duration_ms = timeout.as_secs_f64() * 1000.0;
                        Some(o)
                    }
                }
            }
        };
        guard.armed.store(false, Ordering::Relaxed);
        match outcome {
            Some(o) => o,
            None => {
                self.respawn();
                ExecOutcome::failed(FailureKind::Script, "internal error: the script runner stopped".into()).ran()
            }
        }
    }

    fn submit(
        &self,
        job: Box<isolate::Job>,
        started: tokio::sync::oneshot::Receiver<isolate::JobControl>,
    ) -> Option<tokio::sync::oneshot::Receiver<isolate::JobControl>> {
        let mut worker = self.worker.lock().unwrap_or_else(|p| p.into_inner());
        match worker.send(job) {
            Ok(()) => Some(started),
            Err(job) => {
                // The thread died (a panic in the engine): start another and retry once.
                *worker = isolate::Worker::spawn(self.prepared_limit_mb.clone());
                worker.send(job).ok().map(|()| started)
            }
        }
    }

    fn respawn(&self) {
        let mut worker = self.worker.lock().unwrap_or_else(|p| p.into_inner());
        *worker = isolate::Worker::spawn(self.prepared_limit_mb.clone());
    }
}

// `agent run` shares one executor across tasks.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Executor>();
};

struct StopOnDrop {
    control: isolate::JobControl,
    armed: AtomicBool,
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if self.armed.load(Ordering::Relaxed) {
            self.control.stop(isolate::StopReason::Cancelled);
        }
    }
}

/// Checks that `source` (a module named `name`) parses and transpiles, without running it; the
/// error is the diagnostic's first line and its position (result handlers use it before a call).
pub fn check_syntax(name: &str, source: &str) -> Result<(), String> {
    loader::check_transpiles(name, source).map_err(|e| {
        let first = e.lines().next().unwrap_or("").trim();
        match e.lines().map(str::trim).rfind(|l| l.starts_with("at ")) {
            Some(at) => format!("{first} {at}"),
            None => first.to_string(),
        }
    })
}
