//! Recording result shapes into the type registry: the [`Recorder`] is the manager's
//! [`CallObserver`], so every successful call (`agent mcp call`, direct mode, the bridge's calls
//! from scripts) is observed, whatever the command.
//!
//! The call path only clones the result onto a queue and bumps a counter, without waking anyone:
//! on this kind of machine waking a sleeping thread per call costs more than the call's own work
//! (measured: +30 % of a fixture call). Whoever flushes does the rest in its own thread: it takes
//! the queue, decodes each result the way scripts see it (`structuredContent`, else text parsed
//! as JSON when it parses, else the text), infers its shape and merges it into the registry
//! file. [`Recorder::flush`] is called by commands before they exit and by code mode after each
//! script; a background thread flushes every few seconds (and at once when the queue grows long),
//! and the last flush happens when the recorder is dropped: nothing observed is lost.
//!
//! A flush with nothing observed since the last one returns at once (one atomic load): a script
//! that called no tool pays nothing. Nobody ever waits for a low-priority thread: a first version
//! flushed through a `SCHED_IDLE` thread and, under load (`agent mcp serve` with 16 clients), each
//! script waited for the CPU to go idle.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use rmcp::model::CallToolResult;

use crate::config::Config;
use crate::mcp::{CallObserver, McpManager, ToolInfo};
use crate::types::{Change, Pending, Registry, Thresholds, definition_hash};

/// Pending observations are written at least this often.
const AUTO_FLUSH: Duration = Duration::from_secs(5);
/// A queue this long wakes the background thread at once (bounds the memory it holds).
const WAKE_AT: usize = 256;

// The configuration accepts no more distinct results than the registry counts.
const _: () = assert!(crate::config::MAX_ENUM_MIN_RESULTS == crate::types::shape::MAX_RESULT_MARKS);

/// The thresholds of `mcp.types`.
pub fn thresholds(config: &Config) -> Thresholds {
    let t = &config.mcp.types;
    Thresholds {
        low: t.low,
        medium: t.medium,
        high: t.high,
        consistency: t.consistency,
        enums: crate::types::EnumRules {
            min_values: t.enum_min_values,
            min_observations: t.enum_min_observations,
            min_results: t.enum_min_results,
        },
    }
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

/// Results observed and not yet taken by a flush.
type Queue = Mutex<Vec<(Arc<ToolInfo>, CallToolResult)>>;

/// The definition hash per tool, recomputed only when the definition changes.
type Hashes = HashMap<(String, String), (Arc<ToolInfo>, String)>;

/// What the call path, the flushers and the background thread share.
struct Shared {
    queue: Queue,
    /// Results pushed and not yet written (0: a flush has nothing to do).
    unwritten: AtomicUsize,
    /// Held by a flush from taking the queue to writing the file, so flushes write in order.
    hashes: Mutex<Hashes>,
    path: PathBuf,
    thresholds: Thresholds,
    /// Whether the value key's problem was reported (once per process, not at every flush).
    key_warned: std::sync::atomic::AtomicBool,
    /// The background thread's alarm: `(woken, stopping)`.
    alarm: Mutex<(bool, bool)>,
    bell: Condvar,
}

impl Shared {
    fn flush(&self) -> Vec<Change> {
        if self.unwritten.load(Ordering::Acquire) == 0 {
            return Vec::new();
        }
        let Ok(mut hashes) = self.hashes.lock() else { return Vec::new() };
        let batch = self.queue.lock().map(|mut q| std::mem::take(&mut *q)).unwrap_or_default();
        if batch.is_empty() {
            return Vec::new();
        }
        let taken = batch.len();
        // Read at every flush: a reset in between (which deletes it) is seen.
        let mut pending = match crate::types::value_key(&self.path) {
            Ok(k) => Pending::with_key(k),
            Err(e) => {
                if !self.key_warned.swap(true, Ordering::Relaxed) {
                    tracing::warn!("short strings are not recorded as enum candidates: {e}");
                }
                Pending::default()
            }
        };
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
            pending.add(&tool.server, &tool.name, &def, &crate::mcp::tools::decode(&result));
        }
        let mut warnings = Vec::new();
        let changes = match Registry::record(&self.path, &pending, &self.thresholds, &mut warnings) {
            Ok(changes) => changes,
            Err(e) => {
                tracing::warn!("the type registry was not updated: {e}");
                Vec::new()
            }
        };
        for w in warnings {
            tracing::warn!("{w}");
        }
        self.unwritten.fetch_sub(taken, Ordering::AcqRel);
        changes
    }
}

/// Records the shapes of the results of a manager's calls (see the module doc).
pub struct Recorder {
    shared: Arc<Shared>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
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
        manager.add_observer(recorder.clone());
        Some(recorder)
    }

    /// A recorder writing to `path`.
    pub fn start(path: PathBuf, t: Thresholds) -> Recorder {
        let shared = Arc::new(Shared {
            queue: Mutex::default(),
            unwritten: AtomicUsize::new(0),
            hashes: Mutex::default(),
            path,
            thresholds: t,
            key_warned: std::sync::atomic::AtomicBool::new(false),
            alarm: Mutex::new((false, false)),
            bell: Condvar::new(),
        });
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("agent-types".into())
            .spawn(move || background(&s))
            .map_err(|e| tracing::warn!("cannot start the type recorder's background flush: {e}"))
            .ok();
        Recorder { shared, thread: Mutex::new(thread), known: Mutex::default() }
    }

    /// Writes every observation made so far to the registry and returns the tools whose quality
    /// changed. Runs in the caller's thread; returns at once when nothing was observed since the
    /// last flush.
    pub fn flush(&self) -> Vec<Change> {
        self.shared.flush()
    }

    /// Flushes and stops the background thread (also done on drop).
    pub fn finish(&self) {
        if let Ok(mut a) = self.shared.alarm.lock() {
            a.1 = true;
        }
        self.shared.bell.notify_all();
        if let Some(handle) = self.thread.lock().ok().and_then(|mut t| t.take()) {
            let _ = handle.join();
        }
        self.shared.flush();
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
        let len = match self.shared.queue.lock() {
            Ok(mut q) => {
                // Counted under the queue's lock: a flush never takes more than it counts.
                self.shared.unwritten.fetch_add(1, Ordering::AcqRel);
                q.push((info, result.clone()));
                q.len()
            }
            Err(_) => return,
        };
        if len == WAKE_AT {
            if let Ok(mut a) = self.shared.alarm.lock() {
                a.0 = true;
            }
            self.shared.bell.notify_one();
        }
    }
}

/// Flushes every [`AUTO_FLUSH`], when the queue grows long, and stops when told.
fn background(shared: &Shared) {
    loop {
        let stopping = {
            let Ok(alarm) = shared.alarm.lock() else { return };
            let Ok((mut alarm, _)) = shared.bell.wait_timeout_while(alarm, AUTO_FLUSH, |a| !a.0 && !a.1) else {
                return;
            };
            alarm.0 = false;
            alarm.1
        };
        shared.flush();
        if stopping {
            return;
        }
    }
}
