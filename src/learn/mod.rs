//! Recording result shapes into the type registry: the [`Recorder`] is the manager's
//! [`CallObserver`], so every successful call (`agent mcp call`, direct mode, the bridge's calls
//! from scripts) is observed, whatever the command.
//!
//! The call path only clones the result onto a queue, without waking anyone: on this kind of
//! machine waking a sleeping thread per call costs more than the call's own work (measured: +30 %
//! of a fixture call). A background thread takes the queue every [`BATCH`] (or sooner when it
//! grows long), decodes each result the way scripts see it (`structuredContent`, else text parsed
//! as JSON when it parses, else the text), infers its shape and keeps it pending. Pending observations are merged into the registry file
//! at [`Recorder::flush`] (commands flush before they exit, code mode after each script), every
//! few seconds in the background, and when the recorder is dropped: nothing observed is lost.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;

use crate::config::Config;
use crate::mcp::{CallObserver, McpManager, ToolInfo};
use crate::types::{Change, Pending, Registry, Thresholds, definition_hash};

/// Pending observations are written at least this often.
const AUTO_FLUSH: Duration = Duration::from_secs(5);
/// How often the background thread takes the queue of observed results.
const BATCH: Duration = Duration::from_millis(100);
/// A queue this long wakes the background thread at once (bounds the memory it holds).
const WAKE_AT: usize = 256;

/// The thresholds of `mcp.types`.
pub fn thresholds(config: &Config) -> Thresholds {
    let t = &config.mcp.types;
    Thresholds { low: t.low, medium: t.medium, high: t.high, consistency: t.consistency }
}

/// The registry file of the configured workspace.
pub fn registry_path(config: &Config) -> PathBuf {
    crate::types::registry_path(&config.mcp.code_execution.workspace_dir)
}

/// Reads the registry with the configured thresholds (problems go to the log).
pub fn load_registry(config: &Config) -> Registry {
    load_registry_at(&registry_path(config), &thresholds(config))
}

pub fn load_registry_at(path: &Path, t: &Thresholds) -> Registry {
    let mut warnings = Vec::new();
    let reg = Registry::load(path, &mut warnings);
    for w in warnings {
        tracing::warn!("{w}");
    }
    reg.with_thresholds(t)
}

enum Msg {
    /// The queue is long: take it now.
    Wake,
    Flush(mpsc::SyncSender<Vec<Change>>),
}

/// Results observed and not yet taken by the background thread.
type Queue = Mutex<Vec<(Arc<ToolInfo>, CallToolResult)>>;

/// Records the shapes of the results of a manager's calls (see the module doc).
pub struct Recorder {
    tx: Mutex<Option<mpsc::Sender<Msg>>>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    queue: Arc<Queue>,
    /// The last definition seen per tool, shared so the call path clones a tool only when its
    /// definition changed.
    known: Mutex<HashMap<String, HashMap<String, Arc<ToolInfo>>>>,
}

impl Recorder {
    /// Starts recording `manager`'s calls into the configured registry, unless
    /// `mcp.types.learn` is off (`None` then).
    pub fn install(config: &Config, manager: &McpManager) -> Option<Arc<Recorder>> {
        if !config.mcp.types.learn {
            return None;
        }
        let workspace = std::path::absolute(&config.mcp.code_execution.workspace_dir).ok()?;
        let recorder = Arc::new(Recorder::start(crate::types::registry_path(&workspace), thresholds(config)));
        manager.set_observer(recorder.clone());
        Some(recorder)
    }

    /// A recorder writing to `path`.
    pub fn start(path: PathBuf, t: Thresholds) -> Recorder {
        let (tx, rx) = mpsc::channel::<Msg>();
        let queue: Arc<Queue> = Arc::default();
        let q = queue.clone();
        let thread = std::thread::Builder::new()
            .name("agent-types".into())
            .spawn(move || background(rx, &q, &path, &t))
            .map_err(|e| tracing::warn!("cannot start the type recorder: {e}"))
            .ok();
        Recorder {
            tx: Mutex::new(thread.as_ref().map(|_| tx)),
            thread: Mutex::new(thread),
            queue,
            known: Mutex::default(),
        }
    }

    /// Writes every observation made so far to the registry and returns the tools whose quality
    /// changed. Blocks until it is written.
    pub fn flush(&self) -> Vec<Change> {
        let (reply, answer) = mpsc::sync_channel(1);
        let sent = self.tx.lock().ok().and_then(|tx| tx.as_ref().map(|tx| tx.send(Msg::Flush(reply)).is_ok()));
        if sent != Some(true) {
            return Vec::new();
        }
        answer.recv().unwrap_or_default()
    }

    /// Flushes and stops the background thread (also done on drop).
    pub fn finish(&self) {
        let tx = self.tx.lock().ok().and_then(|mut tx| tx.take());
        drop(tx);
        if let Some(handle) = self.thread.lock().ok().and_then(|mut t| t.take()) {
            let _ = handle.join();
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.finish();
    }
}

impl CallObserver for Recorder {
    fn finished(&self, tool: &ToolInfo, result: &CallToolResult) {
        // A declared output schema is already a `high` type: nothing to learn.
        if tool.output_schema.is_some() {
            return;
        }
        // No allocation when the tool is known (the usual case): look up by borrowed names.
        let Ok(mut known) = self.known.lock() else { return };
        let info = match known.get(&tool.server).and_then(|m| m.get(&tool.name)) {
            Some(k) if **k == *tool => k.clone(),
            _ => {
                let k = Arc::new(tool.clone());
                known.entry(tool.server.clone()).or_default().insert(tool.name.clone(), k.clone());
                k
            }
        };
        drop(known);
        let len = match self.queue.lock() {
            Ok(mut q) => {
                q.push((info, result.clone()));
                q.len()
            }
            Err(_) => return,
        };
        if len == WAKE_AT
            && let Ok(tx) = self.tx.lock()
            && let Some(tx) = tx.as_ref()
        {
            let _ = tx.send(Msg::Wake);
        }
    }
}

fn background(rx: mpsc::Receiver<Msg>, queue: &Queue, path: &Path, t: &Thresholds) {
    lowest_priority();
    let mut pending = Pending::default();
    // The definition hash per tool, recomputed only when the definition changes.
    let mut hashes: HashMap<(String, String), (Arc<ToolInfo>, String)> = HashMap::new();
    let mut take = |pending: &mut Pending| {
        let batch = queue.lock().map(|mut q| std::mem::take(&mut *q)).unwrap_or_default();
        for (tool, result) in batch {
            let k = (tool.server.clone(), tool.name.clone());
            let def = match hashes.get(&k) {
                Some((known, hash)) if Arc::ptr_eq(known, &tool) || **known == *tool => hash.clone(),
                _ => {
                    let hash = definition_hash(&serde_json::to_vec(&*tool).unwrap_or_default());
                    hashes.insert(k, (tool.clone(), hash.clone()));
                    hash
                }
            };
            pending.add(&tool.server, &tool.name, &def, &decoded(&result));
        }
    };
    let write = |pending: &mut Pending| -> Vec<Change> {
        if pending.is_empty() {
            return Vec::new();
        }
        let mut warnings = Vec::new();
        let out = match Registry::record(path, pending, t, &mut warnings) {
            Ok(changes) => {
                *pending = Pending::default();
                changes
            }
            Err(e) => {
                tracing::warn!("the type registry was not updated: {e}");
                Vec::new()
            }
        };
        for w in warnings {
            tracing::warn!("{w}");
        }
        out
    };
    let mut written = std::time::Instant::now();
    loop {
        let msg = rx.recv_timeout(BATCH);
        take(&mut pending);
        match msg {
            Ok(Msg::Wake) => {}
            Ok(Msg::Flush(reply)) => {
                let _ = reply.send(write(&mut pending));
                written = std::time::Instant::now();
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if written.elapsed() >= AUTO_FLUSH {
                    write(&mut pending);
                    written = std::time::Instant::now();
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                write(&mut pending);
                return;
            }
        }
    }
}

/// Runs this thread only when a CPU would otherwise idle (Linux `SCHED_IDLE`), so learning never
/// competes with tool calls for a core; elsewhere, or if refused, it runs at normal priority.
fn lowest_priority() {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: plain syscall on the calling thread (pid 0) with a valid, initialised param.
        let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
        if rc != 0 {
            tracing::debug!("the type recorder runs at normal priority: {}", std::io::Error::last_os_error());
        }
    }
}

/// The value a script sees for a successful result (as `runtime-js/result.js` decodes it).
pub fn decoded(result: &CallToolResult) -> Value {
    if let Some(sc) = result.structured_content.as_ref().filter(|v| !v.is_null()) {
        return sc.clone();
    }
    let texts: Vec<&str> = result
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    if texts.is_empty() || texts.len() != result.content.len() {
        return serde_json::to_value(&result.content).unwrap_or(Value::Null);
    }
    let text = texts.join("\n");
    serde_json::from_str(&text).unwrap_or(Value::String(text))
}
