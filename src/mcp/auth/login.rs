//! `agent mcp login`: the authorization code flow with PKCE for one HTTP server. [`start`]
//! reads the server's `401` challenge (on `initialize`, or on `tools/list` for a server that
//! lets anyone initialize), discovers the metadata, picks the client identity in the spec's
//! order (a configured `client_id` → a client ID metadata document when the authorization server
//! supports them → dynamic registration → an error saying what to configure), binds the
//! loopback redirect listener (`127.0.0.1`, a random port or `auth.redirect_port`) and hands
//! back the authorization URL; the CLI opens or prints it. [`Pending::finish`] waits for the
//! redirect (rmcp checks `state` and the RFC 9207 `iss`), exchanges the code (PKCE verifier and
//! `resource` on the token request) and stores the tokens keyed by URL and issuer.

use std::time::Duration;

use rmcp::transport::auth::{AuthorizationCallback, AuthorizationRequest, AuthorizationSession};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

use super::describe;
use super::store::{ServerCredentials, TokenStore};
use crate::config::ServerConfig;

/// How long [`Pending::finish`] waits for the browser's redirect.
pub const WAIT: Duration = Duration::from_secs(300);
/// The client name sent with a dynamic registration.
const CLIENT_NAME: &str = "agent";
/// The most bytes read of a request to the loopback listener (its request line and headers).
const MAX_REQUEST: usize = 16 << 10;

/// A flow waiting for the user: open [`Pending::auth_url`], then [`Pending::finish`].
pub struct Pending {
    server: String,
    session: AuthorizationSession,
    listener: TcpListener,
    /// The `state` of the authorization URL: a redirect must carry it.
    state: Option<String>,
    pub auth_url: String,
}

/// What a finished sign-in got.
#[derive(Debug)]
pub struct SignedIn {
    pub scopes: Vec<String>,
}

/// The challenge of an unauthenticated connection: `initialize`, then `tools/list`. `None`
/// when the server answered both without asking (it needs no sign-in).
async fn challenge(url: &str, timeout: Duration) -> Result<Option<String>, String> {
    use rmcp::ServiceExt as _;
    use rmcp::transport::StreamableHttpClientTransport;
    let transport = StreamableHttpClientTransport::from_uri(url.to_string());
    let connected = match tokio::time::timeout(timeout, ().serve(transport)).await {
        Err(_) => return Err(format!("no answer from {url} within {}", humantime::format_duration(timeout))),
        Ok(Err(e)) => {
            return match e.auth_challenge() {
                Some(c) => Ok(Some(c.to_string())),
                None if e.is_authorization_required() => Ok(Some(String::new())),
                None => Err(format!("cannot connect to {url}: {}", super::super::error::init_error(&e))),
            };
        }
        Ok(Ok(service)) => service,
    };
    let listed = tokio::time::timeout(timeout, connected.list_all_tools()).await;
    connected.cancellation_token().cancel();
    match listed {
        Ok(Err(e)) => {
            Ok(e.auth_challenge().map(str::to_string).or_else(|| e.is_authorization_required().then(String::new)))
        }
        _ => Ok(None),
    }
}

/// Starts signing in to server `name` (see the module doc). `scopes` (from `--scopes`) win over
/// `auth.scopes`, which win over what the server's challenge and metadata say.
pub async fn start(
    name: &str,
    cfg: &ServerConfig,
    store: &TokenStore,
    scopes: Option<Vec<String>>,
) -> Result<Pending, String> {
    let url = cfg
        .url
        .clone()
        .ok_or_else(|| format!("server `{name}` is not an HTTP server: sign-in is for servers with a `url`"))?;
    let challenge = challenge(&url, cfg.connect_timeout).await?;
    let Some(challenge) = challenge else {
        return Err(format!("server `{name}` did not ask for sign-in (it answered without a token)"));
    };
    let (mut manager, metadata) = super::discovered(&url, Some(challenge.as_str()).filter(|c| !c.is_empty())).await?;
    let listener = TcpListener::bind(("127.0.0.1", cfg.auth.redirect_port.unwrap_or(0)))
        .await
        .map_err(|e| format!("cannot listen for the sign-in redirect on 127.0.0.1: {e}"))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let redirect_uri = format!("http://127.0.0.1:{port}/callback");

    let scopes = match scopes.or_else(|| cfg.auth.scopes.clone()) {
        Some(s) => s,
        None => manager.select_initial_scopes(&[]).await,
    };
    let mut request = AuthorizationRequest::new(redirect_uri.clone())
        .with_scopes(scopes.clone())
        .with_initial_scope_selection()
        .with_client_name(CLIENT_NAME);
    let supports_cimd = metadata
        .additional_fields
        .get("client_id_metadata_document_supported")
        .and_then(|v| v.as_bool())
        .unwrap_or(false);
    let mut secret = cfg.auth.client_secret.clone();
    if let Some(id) = &cfg.auth.client_id {
        request = request.with_preregistered_client(id);
        if let Some(s) = &secret {
            request = request.with_client_secret(s);
        }
    } else if let Some(doc) = cfg.auth.client_metadata_url.as_ref().filter(|_| supports_cimd) {
        request = request.with_client_metadata_url(doc);
        secret = None;
    } else if metadata.registration_endpoint.is_some() {
        // Registered here rather than inside rmcp's session so a secret the server issues is
        // kept with the tokens (a later process needs it to refresh).
        let refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
        let registered = manager
            .register_client(CLIENT_NAME, &redirect_uri, &refs)
            .await
            .map_err(|e| describe("dynamic client registration failed", &e))?;
        request = request.with_preregistered_client(&registered.client_id);
        secret = registered.client_secret.clone();
        if let Some(s) = &secret {
            request = request.with_client_secret(s);
        }
    } else {
        return Err(format!(
            "the authorization server of `{name}` offers no way to register `agent` (no dynamic registration{}): \
             set `auth.client_id` (and `auth.client_secret`) for it",
            if supports_cimd { "; set `auth.client_metadata_url` to use a client metadata document" } else { "" }
        ));
    }
    manager.set_credential_store(ServerCredentials {
        store: store.clone(),
        url,
        issuer: metadata.issuer.clone(),
        client_secret: secret,
    });
    let session =
        AuthorizationSession::new(manager, request).await.map_err(|(_, e)| describe("cannot start sign-in", &e))?;
    let auth_url = session.get_authorization_url().to_string();
    let state = url::Url::parse(&auth_url)
        .ok()
        .and_then(|u| u.query_pairs().find(|(k, _)| k == "state").map(|(_, v)| v.into_owned()));
    Ok(Pending { server: name.to_string(), session, listener, state, auth_url })
}

impl Pending {
    /// Waits up to `wait` for the redirect to the loopback listener, then exchanges the code and
    /// stores the tokens.
    pub async fn finish(self, wait: Duration) -> Result<SignedIn, String> {
        let server = self.server.clone();
        let callback = tokio::time::timeout(wait, self.redirect()).await.map_err(|_| {
            format!("no sign-in within {}: run `agent mcp login {server}` again", humantime::format_duration(wait))
        })??;
        let token = self
            .session
            .handle_callback_with_issuer(&callback.code, &callback.csrf_token, callback.issuer.as_deref())
            .await
            .map_err(|e| describe("sign-in failed", &e))?;
        let scopes = match serde_json::to_value(&token).ok().and_then(|t| t["scope"].as_str().map(str::to_string)) {
            Some(s) => s.split_whitespace().map(str::to_string).collect(),
            None => self.session.auth_manager.get_current_scopes().await,
        };
        Ok(SignedIn { scopes })
    }

    /// The first request to `/callback` that carries a code or an error; other requests (a
    /// browser's `/favicon.ico`) get a 404 and are ignored.
    async fn redirect(&self) -> Result<AuthorizationCallback, String> {
        loop {
            let Ok((mut conn, _)) = self.listener.accept().await else { continue };
            let Some(target) = read_target(&mut conn).await else { continue };
            if !target.starts_with("/callback") {
                let _ = respond(&mut conn, "404 Not Found", "Not found.").await;
                continue;
            }
            let full = format!("http://127.0.0.1{target}");
            let query: Vec<(String, String)> = url::Url::parse(&full)
                .map(|u| u.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect())
                .unwrap_or_default();
            let get = |k: &str| query.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
            if let Some(error) = get("error").filter(|_| get("state") == self.state) {
                let _ = respond(&mut conn, "400 Bad Request", "Sign-in was refused; see the terminal.").await;
                let error: String = error.chars().filter(|c| c.is_ascii_graphic()).take(80).collect();
                return Err(format!("the authorization server refused the sign-in: {error}"));
            }
            match AuthorizationCallback::from_redirect_url(&full) {
                // Another local process can reach the listener too: a redirect that does not
                // carry this flow's `state` is refused and the wait goes on.
                Ok(cb) if Some(cb.csrf_token.as_str()) != self.state.as_deref() => {
                    tracing::warn!("ignored a request to the sign-in listener without this sign-in's state");
                    let _ = respond(&mut conn, "400 Bad Request", "This is not this sign-in's redirect.").await;
                }
                Ok(cb) => {
                    let _ =
                        respond(&mut conn, "200 OK", &format!("Signed in to {}. You can close this tab.", self.server))
                            .await;
                    return Ok(cb);
                }
                Err(_) => {
                    let _ = respond(&mut conn, "400 Bad Request", "This is not a sign-in redirect.").await;
                }
            }
        }
    }
}

/// The request target of an HTTP request (`/callback?code=...`), read with a cap and a deadline.
async fn read_target(conn: &mut tokio::net::TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 2048];
    let read = async {
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < MAX_REQUEST {
            let n = conn.read(&mut chunk).await.ok()?;
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        Some(())
    };
    tokio::time::timeout(Duration::from_secs(10), read).await.ok()??;
    let head = String::from_utf8_lossy(&buf);
    let mut parts = head.lines().next()?.split(' ');
    match (parts.next(), parts.next()) {
        (Some("GET"), Some(target)) => Some(target.to_string()),
        _ => None,
    }
}

async fn respond(conn: &mut tokio::net::TcpStream, status: &str, text: &str) -> std::io::Result<()> {
    let body = format!("<!doctype html><meta charset=utf-8><title>agent</title><p>{text}</p>\n");
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    conn.write_all(head.as_bytes()).await?;
    conn.write_all(body.as_bytes()).await?;
    conn.shutdown().await
}
