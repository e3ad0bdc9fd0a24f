//! OAuth 2.1 for HTTP servers, on rmcp's `auth` feature (discovery, PKCE, client identity,
//! token requests): what rmcp leaves to us. `store` keeps tokens per user; `login` runs the
//! browser flow with a loopback redirect listener; this file prepares a connection's
//! authorization (the stored tokens, refreshed by rmcp's `AuthClient` before expiry and once on
//! a `401`; or a machine identity by `client_credentials`) and says what state a server's
//! sign-in is in. Nothing here prints, opens a browser or logs a token: the CLI prints the URL
//! `login` hands it, and errors name servers and endpoints, never credentials.

pub mod login;
pub mod store;

use std::time::Duration;

use rmcp::transport::auth::{AuthorizationManager, ClientCredentialsConfig, OAuthClientConfig};

use crate::config::{AuthGrant, ServerConfig};
use store::{ServerCredentials, TokenStore};

/// Whether `cfg` sends its own `Authorization` header (static headers win over OAuth).
pub fn has_static_authorization(cfg: &ServerConfig) -> bool {
    cfg.headers.keys().any(|k| k.eq_ignore_ascii_case("authorization"))
}

/// Why a server's authorization could not be prepared: one line, no secrets.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AuthFailure {
    /// No usable tokens: the user must run `agent mcp login`.
    #[error("needs sign-in")]
    NeedsSignIn,
    #[error("{0}")]
    Other(String),
}

/// One line for an rmcp OAuth error, with the step that failed. rmcp's messages name
/// endpoints and reasons, never token values.
pub fn describe(step: &str, e: &rmcp::transport::auth::AuthError) -> String {
    let text = e.to_string();
    let line = text.lines().next().unwrap_or_default().chars().take(300).collect::<String>();
    format!("{step}: {line}")
}

/// A manager for `url` with the metadata discovered (rmcp's rules: protected resource metadata,
/// then authorization server metadata at each location the spec allows), and the issuer that
/// metadata names.
pub(crate) async fn discovered(
    url: &str,
    challenge: Option<&str>,
) -> Result<(AuthorizationManager, rmcp::transport::auth::AuthorizationMetadata), String> {
    let mut manager = AuthorizationManager::new(url).await.map_err(|e| describe("OAuth set-up failed", &e))?;
    let resolution =
        manager.resolve_metadata_from_challenge(challenge).await.map_err(|e| describe("OAuth discovery failed", &e))?;
    manager.set_metadata(resolution.metadata.clone());
    Ok((manager, resolution.metadata))
}

/// The authorization a connection to HTTP server `cfg` uses: `None` for none (static headers,
/// or never signed in: the server's `401` then says whether it needs sign-in), or a manager
/// holding this user's tokens (authorization code) or a fresh machine token (client
/// credentials).
pub async fn for_connect(cfg: &ServerConfig, store: &TokenStore) -> Result<Option<AuthorizationManager>, AuthFailure> {
    if has_static_authorization(cfg) {
        return Ok(None);
    }
    let url = cfg.url.clone().unwrap_or_default();
    if cfg.auth.grant == AuthGrant::ClientCredentials {
        return client_credentials(&url, cfg, store).await.map(Some);
    }
    let entries = store.entries().map_err(|e| AuthFailure::Other(format!("cannot read the credentials file: {e}")))?;
    if !entries.iter().any(|e| e.url == url) {
        return Ok(None);
    }
    let (mut manager, metadata) = discovered(&url, None).await.map_err(AuthFailure::Other)?;
    let issuer = metadata.issuer;
    // Tokens of another issuer (the server moved) are never offered: sign in again.
    let Some(entry) = entries.into_iter().find(|e| e.url == url && e.issuer == issuer) else {
        return Err(AuthFailure::NeedsSignIn);
    };
    let secret = entry.client_secret.clone().or_else(|| cfg.auth.client_secret.clone());
    manager.set_credential_store(ServerCredentials {
        store: store.clone(),
        url: url.clone(),
        issuer,
        client_secret: secret.clone(),
    });
    match manager.initialize_from_store().await {
        Ok(true) => {}
        Ok(false) => return Err(AuthFailure::NeedsSignIn),
        Err(e) => return Err(AuthFailure::Other(describe("cannot load the stored sign-in", &e))),
    }
    // The client as registered (with its secret, for refreshes of a confidential client).
    let mut client = OAuthClientConfig::new(entry.credentials.client_id.clone(), url);
    client.client_secret = secret;
    manager.configure_client(client).map_err(|e| AuthFailure::Other(describe("OAuth set-up failed", &e)))?;
    Ok(Some(manager))
}

/// A machine token for `url` (client credentials, no person): the stored one while it is
/// fresh, else a new one from the token endpoint (rmcp saves it in the store).
async fn client_credentials(
    url: &str,
    cfg: &ServerConfig,
    store: &TokenStore,
) -> Result<AuthorizationManager, AuthFailure> {
    let other = AuthFailure::Other;
    let auth = &cfg.auth;
    let client_id = auth.client_id.clone().ok_or_else(|| {
        other(
            "`auth.grant: client_credentials` needs `auth.client_id` (and a client_secret or private_key_file)".into(),
        )
    })?;
    let (mut manager, metadata) = discovered(url, None).await.map_err(other)?;
    let issuer = metadata.issuer;
    let config = match (&auth.private_key_file, &auth.client_secret) {
        (Some(path), _) => {
            let key = crate::util::read::read_text_file(path, 1 << 20)
                .map_err(|e| other(format!("auth.private_key_file: {}", e.message("private key file"))))?;
            let algorithm = signing_algorithm(auth.signing_algorithm.as_deref()).map_err(other)?;
            ClientCredentialsConfig::PrivateKeyJwt {
                client_id,
                signing_key: key.into_bytes(),
                signing_algorithm: algorithm,
                token_endpoint_audience: None,
                scopes: auth.scopes.clone().unwrap_or_default(),
                resource: Some(url.to_string()),
            }
        }
        (None, Some(secret)) => ClientCredentialsConfig::ClientSecret {
            client_id,
            client_secret: secret.clone(),
            scopes: auth.scopes.clone().unwrap_or_default(),
            resource: Some(url.to_string()),
        },
        (None, None) => {
            return Err(other(
                "`auth.grant: client_credentials` needs `auth.client_secret` or `auth.private_key_file`".into(),
            ));
        }
    };
    manager.set_credential_store(ServerCredentials {
        store: store.clone(),
        url: url.to_string(),
        issuer,
        client_secret: None,
    });
    manager.validate_client_credentials_metadata(&config).map_err(|e| other(describe("client credentials", &e)))?;
    manager.configure_client_credentials(&config).map_err(|e| other(describe("client credentials", &e)))?;
    if manager.get_access_token().await.is_ok() {
        return Ok(manager);
    }
    // rmcp's private_key_jwt exchange is not `Send` (it keeps a URL serializer across an
    // await), so it runs on a blocking thread of its own, driven by this runtime's handle.
    let handle = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        handle.block_on(manager.exchange_client_credentials(&config))?;
        Ok(manager)
    })
    .await
    .map_err(|e| other(format!("client credentials token request failed: {e}")))?
    .map_err(|e: rmcp::transport::auth::AuthError| other(describe("client credentials token request failed", &e)))
}

fn signing_algorithm(name: Option<&str>) -> Result<rmcp::transport::auth::JwtSigningAlgorithm, String> {
    use rmcp::transport::auth::JwtSigningAlgorithm as A;
    Ok(match name.unwrap_or("ES256").to_ascii_uppercase().as_str() {
        "RS256" => A::RS256,
        "RS384" => A::RS384,
        "RS512" => A::RS512,
        "ES256" => A::ES256,
        "ES384" => A::ES384,
        other => {
            return Err(format!(
                "auth.signing_algorithm: unknown algorithm `{other}` (RS256, RS384, RS512, ES256, ES384)"
            ));
        }
    })
}

/// The scopes to ask for when the server at `url` wants `required` on top of what this user was
/// granted: the union, granted first (a step-up never drops a scope the user has).
pub fn step_up_scopes(store: &TokenStore, url: &str, required: &str) -> String {
    let granted = store
        .entries()
        .ok()
        .and_then(|entries| {
            entries
                .into_iter()
                .filter(|e| e.url == url)
                .max_by_key(|e| e.credentials.token_received_at.unwrap_or(0))
                .map(|e| e.credentials.granted_scopes)
        })
        .unwrap_or_default();
    let mut union: Vec<String> = granted;
    for scope in required.split_whitespace() {
        if !union.iter().any(|s| s == scope) {
            union.push(scope.to_string());
        }
    }
    union.join(" ")
}

/// What `agent mcp auth status` and `agent mcp list` say of a server's sign-in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// A token valid for about this long (`None`: the server gave no lifetime).
    SignedIn(Option<Duration>),
    /// The token expired; a refresh token will renew it on the next use.
    ExpiredWillRefresh,
    NeedsSignIn,
    StaticHeaders,
    /// A machine identity (`auth.grant: client_credentials`), fetched when needed.
    ClientCredentials,
    NoAuth,
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Status::SignedIn(Some(left)) => {
                let mins = left.as_secs() / 60;
                if mins >= 120 {
                    write!(f, "signed in (expires in {} h)", mins / 60)
                } else if mins >= 1 {
                    write!(f, "signed in (expires in {mins} min)")
                } else {
                    write!(f, "signed in (expires in {} s)", left.as_secs())
                }
            }
            Status::SignedIn(None) => f.write_str("signed in"),
            Status::ExpiredWillRefresh => f.write_str("expired (will refresh)"),
            Status::NeedsSignIn => f.write_str("needs sign-in"),
            Status::StaticHeaders => f.write_str("static headers"),
            Status::ClientCredentials => f.write_str("client credentials"),
            Status::NoAuth => f.write_str("no auth"),
        }
    }
}

impl Status {
    /// The stable word of `--json`.
    pub fn key(&self) -> &'static str {
        match self {
            Status::SignedIn(_) => "signed_in",
            Status::ExpiredWillRefresh => "expired",
            Status::NeedsSignIn => "needs_sign_in",
            Status::StaticHeaders => "static_headers",
            Status::ClientCredentials => "client_credentials",
            Status::NoAuth => "no_auth",
        }
    }
}

/// The sign-in state of HTTP server `cfg` from the store alone, without the network; `None`
/// when the store says nothing (the server's answer decides: [`probe`]).
pub fn stored_status(cfg: &ServerConfig, store: &TokenStore) -> Result<Option<Status>, String> {
    if has_static_authorization(cfg) {
        return Ok(Some(Status::StaticHeaders));
    }
    if cfg.auth.grant == AuthGrant::ClientCredentials {
        return Ok(Some(Status::ClientCredentials));
    }
    let url = cfg.url.clone().unwrap_or_default();
    let entries = store.entries().map_err(|e| format!("cannot read the credentials file: {e}"))?;
    // The newest entry of this server (another issuer's is kept until logout).
    let Some(entry) = entries
        .iter()
        .filter(|e| e.url == url && e.credentials.token_response.is_some())
        .max_by_key(|e| e.credentials.token_received_at.unwrap_or(0))
    else {
        return Ok(None);
    };
    // The token response as its JSON fields (`expires_in`, `refresh_token`).
    let token = serde_json::to_value(&entry.credentials.token_response).unwrap_or_default();
    let (Some(lifetime), Some(received)) = (token["expires_in"].as_u64(), entry.credentials.token_received_at) else {
        return Ok(Some(Status::SignedIn(None)));
    };
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let left = lifetime.saturating_sub(now.saturating_sub(received));
    Ok(Some(if left > 0 {
        Status::SignedIn(Some(Duration::from_secs(left)))
    } else if token["refresh_token"].is_string() {
        Status::ExpiredWillRefresh
    } else {
        Status::NeedsSignIn
    }))
}

/// Whether the server at `url` asks for sign-in: an unauthenticated `initialize` answered `401`.
pub async fn probe(url: &str, timeout: Duration) -> Result<Status, String> {
    let client = reqwest::Client::builder()
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| e.to_string())?;
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "agent", "version": env!("CARGO_PKG_VERSION")}}});
    let answer = client
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .map_err(|e| format!("cannot reach {url}: {}", e.without_url()))?;
    Ok(if answer.status() == reqwest::StatusCode::UNAUTHORIZED { Status::NeedsSignIn } else { Status::NoAuth })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::transport::auth::StoredCredentials;

    #[test]
    fn a_step_up_asks_for_the_granted_scopes_and_the_required_ones() {
        let tmp = tempfile::tempdir().unwrap();
        let store = TokenStore::at(tmp.path());
        assert_eq!(step_up_scopes(&store, "https://a/mcp", "write"), "write");
        let credentials = StoredCredentials::new("c".into(), None, vec!["read".into(), "write".into()], Some(1));
        store
            .put(store::Entry { url: "https://a/mcp".into(), issuer: None, client_secret: None, credentials })
            .unwrap();
        assert_eq!(step_up_scopes(&store, "https://a/mcp", "write admin"), "read write admin");
        assert_eq!(step_up_scopes(&store, "https://other/mcp", "admin"), "admin");
    }
}
