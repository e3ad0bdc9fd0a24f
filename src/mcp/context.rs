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
    routes: Mutex<HashMap<ProgressToken, Route>>,
    in_flight: Mutex<BTreeMap<u64, Arc<CallContext>>>,
    next: AtomicU64,
}

impl Calls {
    /// Where a progress notification of `token` carrying `progress` goes: its call's sink, unless
    /// the value does not pass the last one passed on. rmcp handles each notification in a task of
    /// its own, so two can arrive swapped; the spec wants a call's progress to increase, and a
    /// stale value after a newer one says nothing the newer did not.
    pub fn progress_sink(&self, token: &ProgressToken, progress: f64) -> Option<ProgressSink> {
        let mut routes = self.routes.lock().ok()?;
        let route = routes.get_mut(token)?;
        if route.last.is_some_and(|last| progress <= last) {
            return None;
        }
        route.last = Some(progress);
        route.cx.progress.clone()
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
            r.insert(token.clone(), Route { cx, last: None });
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

/// A call's progress route: its context and the last progress value passed on.
struct Route {
    cx: Arc<CallContext>,
    last: Option<f64>,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_gets_its_own_progress_only_increasing() {
        let calls = Calls::default();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink: ProgressSink = {
            let seen = seen.clone();
            Arc::new(move |u: ProgressUpdate| seen.lock().unwrap().push(u.progress))
        };
        let token = ProgressToken(rmcp::model::NumberOrString::Number(7));
        let other = ProgressToken(rmcp::model::NumberOrString::Number(8));
        let cx = Arc::new(CallContext { progress: Some(sink), ..Default::default() });
        let route = calls.route(token.clone(), cx);
        // As two notifications handled in their own tasks can arrive: 3 before 2.
        for p in [1.0, 3.0, 2.0, 3.0, 4.0] {
            if let Some(sink) = calls.progress_sink(&token, p) {
                sink(ProgressUpdate { progress: p, total: None, message: None });
            }
        }
        assert!(calls.progress_sink(&other, 9.0).is_none(), "another token has no route");
        assert_eq!(*seen.lock().unwrap(), vec![1.0, 3.0, 4.0]);
        drop(route);
        assert!(calls.progress_sink(&token, 5.0).is_none(), "the route ends with the call");
    }
}
