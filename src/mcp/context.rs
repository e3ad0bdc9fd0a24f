//! One tool call's own context: where its progress goes ([`ProgressSink`]), who is asked when
//! the server elicits during it ([`Asker`]: the downstream client of `serve`), the user's
//! approval given beforehand ([`PreApproved`]), and a token that stops it ([`CallContext`]); and the calls in flight on one connection ([`Calls`]), which the
//! client handler routes progress and server requests by. Nothing here knows who the caller is.
//!
//! Its own file so that both users, the loop that sends a call's rounds (`call`) and the client
//! handler that answers the server (`handler`), depend on it and not on each other.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use rmcp::model::{ElicitRequestParams, ElicitResult, ProgressToken};
use tokio_util::sync::CancellationToken;

use super::approval::PreApproved;

/// One progress notification of a call.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgressUpdate {
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

/// Where a call's progress goes (called in order of arrival; must not block).
pub type ProgressSink = Arc<dyn Fn(ProgressUpdate) + Send + Sync>;

/// Who made a call, asked when the server elicits during it (e.g. `serve`'s downstream client).
pub trait Asker: Send + Sync {
    /// The answer of whoever made the call; `None` when they cannot be asked (then the server's
    /// `elicitation` policy answers), `Some(Err)` when asking failed (the policy answers too).
    fn elicit<'a>(
        &'a self,
        server: &'a str,
        request: ElicitRequestParams,
    ) -> BoxFuture<'a, Option<Result<ElicitResult, String>>>;
    /// Identifies who is asked (one downstream session): calls of one origin may share an asker
    /// when a server's request cannot be tied to one of them.
    fn origin(&self) -> u64;
}

/// The per-call context; `Default` is a plain call (progress only broadcast, the policy answers).
#[derive(Clone, Default)]
pub struct CallContext {
    pub progress: Option<ProgressSink>,
    pub asker: Option<Arc<dyn Asker>>,
    /// Cancelling it stops the call (the server is told).
    pub cancel: Option<CancellationToken>,
    /// The user approved this call before it was made (`agent mcp call --yes`); spent by the
    /// call itself, so copies of this context approve nothing else.
    pub approval: Option<Arc<PreApproved>>,
}

/// The calls in flight on one connection: progress routes by token, and the contexts a classic
/// (non-`input_required`) server request may belong to.
#[derive(Default)]
pub struct Calls {
    routes: Mutex<HashMap<ProgressToken, Arc<CallContext>>>,
    in_flight: Mutex<BTreeMap<u64, Arc<CallContext>>>,
    next: AtomicU64,
}

impl Calls {
    /// The call a progress token belongs to.
    pub fn by_token(&self, token: &ProgressToken) -> Option<Arc<CallContext>> {
        self.routes.lock().ok()?.get(token).cloned()
    }

    /// The context a server's request during a call is answered with, when it can be tied to
    /// one: the one call in flight, or several whose askers share one origin.
    pub fn for_request(&self) -> Option<Arc<CallContext>> {
        let calls = self.in_flight.lock().ok()?;
        let mut it = calls.values();
        let first = it.next()?.clone();
        let origin = first.asker.as_ref().map(|a| a.origin());
        it.all(|c| origin.is_some() && c.asker.as_ref().map(|a| a.origin()) == origin).then_some(first)
    }

    pub(super) fn route(&self, token: ProgressToken, cx: Arc<CallContext>) -> Registered<'_> {
        if let Ok(mut r) = self.routes.lock() {
            r.insert(token.clone(), cx);
        }
        Registered { calls: self, key: Key::Token(token) }
    }

    pub(super) fn enter(&self, cx: Arc<CallContext>) -> Registered<'_> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut c) = self.in_flight.lock() {
            c.insert(id, cx);
        }
        Registered { calls: self, key: Key::Call(id) }
    }
}

enum Key {
    Token(ProgressToken),
    Call(u64),
}

/// Removes a route or an in-flight entry when dropped.
pub(super) struct Registered<'a> {
    calls: &'a Calls,
    key: Key,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        match &self.key {
            Key::Token(t) => {
                if let Ok(mut r) = self.calls.routes.lock() {
                    r.remove(t);
                }
            }
            Key::Call(id) => {
                if let Ok(mut c) = self.calls.in_flight.lock() {
                    c.remove(id);
                }
            }
        }
    }
}
