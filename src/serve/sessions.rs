//! rmcp's in-memory session manager under a cap: `serve.max_sessions` sessions at once, each
//! closed after `serve.session_idle_timeout` without a request. Creating a session over the cap
//! fails (the HTTP layer has already answered such an `initialize` with 503 in all but a race);
//! the sessions already open are not touched. A session that ends (DELETE, idle, its worker
//! gone) leaves the table, so the count and the memory come back.

use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, LocalSessionManagerError};
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};

/// Why a session was not created or found.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("too many sessions: {0} are open (serve.max_sessions)")]
    Full(usize),
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

/// [`LocalSessionManager`] with a cap on open sessions.
#[derive(Debug)]
pub struct Sessions {
    inner: LocalSessionManager,
    max: usize,
    /// Makes "count, then create" one step.
    creating: tokio::sync::Mutex<()>,
}

impl Sessions {
    pub fn new(max: usize, idle: Duration) -> Sessions {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = Some(idle);
        Sessions { inner, max: max.max(1), creating: tokio::sync::Mutex::new(()) }
    }

    pub fn max(&self) -> usize {
        self.max
    }

    /// Sessions open now.
    pub async fn open(&self) -> usize {
        self.inner.sessions.read().await.len()
    }
}

impl SessionManager for Sessions {
    type Error = Error;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let _one = self.creating.lock().await;
        let open = self.open().await;
        if open >= self.max {
            return Err(Error::Full(open));
        }
        Ok(self.inner.create_session().await?)
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_stream(id, message).await?)
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.resume(id, last_event_id).await?)
    }

    async fn restore_session(&self, _id: SessionId) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        // No external session store: an unknown session is a 404, never re-created.
        Ok(RestoreOutcome::NotSupported)
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        None
    }
}
