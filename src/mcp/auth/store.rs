//! The token store: one file per user, `<config home>/agent/credentials.json`, `0600` in a
//! `0700` directory, replaced atomically under a lock (`credentials.lock`), read and written
//! through the directory's descriptor (a link at the file's name is never followed).
//!
//! Entries are keyed by the server's URL **and** its authorization server's issuer: a server
//! that moves to another authorization server finds no entry, so the user signs in again and
//! gets a new registration; credentials are never sent to an issuer that did not mint them.
//! [`ServerCredentials`] is one entry seen through rmcp's `CredentialStore`; its refresh guard
//! is a second lock (`credentials.refresh.lock`) held across a refresh's load, token request
//! and save, so two `agent` processes refreshing at once run one after the other and the second
//! refreshes with the tokens the first saved.

use std::io::Read as _;
use std::path::PathBuf;
use std::time::Duration;

use rmcp::transport::auth::{AuthError, CredentialRefreshGuard, CredentialStore, StoredCredentials};
use serde::{Deserialize, Serialize};

use crate::util::fs::{Access, Dir};

/// The file's name in the store's directory.
pub const FILE: &str = "credentials.json";
const LOCK: &str = "credentials.lock";
const REFRESH_LOCK: &str = "credentials.refresh.lock";
/// A credentials file larger than this is refused (it holds a few entries of a few KiB).
const MAX_BYTES: u64 = 4 << 20;
/// How long a write waits for another process's write.
const WRITE_WAIT: Duration = Duration::from_secs(10);
/// How long a refresh waits for another process's refresh (a token request, 30 s at most).
const REFRESH_WAIT: Duration = Duration::from_secs(45);

/// One signed-in server: what rmcp keeps ([`StoredCredentials`]) plus the client secret of a
/// registration that came with one.
#[derive(Clone, Serialize, Deserialize)]
pub struct Entry {
    pub url: String,
    /// The authorization server's issuer; `None` for one whose metadata names none.
    pub issuer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    pub credentials: StoredCredentials,
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry").field("url", &self.url).field("issuer", &self.issuer).finish_non_exhaustive()
    }
}

#[derive(Default, Serialize, Deserialize)]
struct Contents {
    version: u32,
    entries: Vec<Entry>,
}

/// The user's credentials file (see the module doc).
#[derive(Debug, Clone)]
pub struct TokenStore {
    dir: PathBuf,
}

impl TokenStore {
    /// The store under the user's configuration directory (`$XDG_CONFIG_HOME/agent`, else
    /// `~/.config/agent`).
    pub fn for_user() -> Result<TokenStore, String> {
        let home = crate::util::dirs::config_home()
            .ok_or("neither XDG_CONFIG_HOME nor HOME is set: no place for the credentials file")?;
        Ok(TokenStore { dir: home.join("agent") })
    }

    /// A store in `dir` (tests).
    pub fn at(dir: impl Into<PathBuf>) -> TokenStore {
        TokenStore { dir: dir.into() }
    }

    /// Where the file is (for messages).
    pub fn path(&self) -> PathBuf {
        self.dir.join(FILE)
    }

    /// The directory, created `0700` when missing; one this user owns is tightened to `0700`,
    /// one of another user is refused (they could read or swap the file).
    fn open_dir(&self, create: bool) -> std::io::Result<Option<Dir>> {
        if create && let Err(e) = std::fs::DirBuilder::new().recursive(true).mode_0700().create(&self.dir) {
            return Err(e);
        }
        let dir = match Dir::open(&self.dir) {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !create => return Ok(None),
            Err(e) => return Err(e),
        };
        let (owner, mode) = dir.owner_and_mode()?;
        if owner != effective_uid() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!("{} belongs to another user", self.dir.display()),
            ));
        }
        if mode & 0o077 != 0 {
            dir.set_mode(0o700)?;
        }
        Ok(Some(dir))
    }

    fn read_in(&self, dir: &Dir) -> std::io::Result<Contents> {
        let mut file = match dir.open_file(FILE) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Contents::default()),
            Err(e) => return Err(e),
        };
        let mut bytes = Vec::new();
        file.by_ref().take(MAX_BYTES + 1).read_to_end(&mut bytes)?;
        if bytes.len() as u64 > MAX_BYTES {
            return Err(std::io::Error::other(format!("{} is larger than {MAX_BYTES} bytes", self.path().display())));
        }
        // The error names the position only: the text holds secrets.
        serde_json::from_slice(&bytes).map_err(|e| {
            std::io::Error::other(format!(
                "{} is not a credentials file (line {}, column {}); remove it and sign in again",
                self.path().display(),
                e.line(),
                e.column()
            ))
        })
    }

    /// Every entry (none when there is no file yet).
    pub fn entries(&self) -> std::io::Result<Vec<Entry>> {
        match self.open_dir(false)? {
            Some(dir) => Ok(self.read_in(&dir)?.entries),
            None => Ok(Vec::new()),
        }
    }

    /// The entry of `url` at `issuer`.
    pub fn get(&self, url: &str, issuer: Option<&str>) -> std::io::Result<Option<Entry>> {
        Ok(self.entries()?.into_iter().find(|e| e.url == url && e.issuer.as_deref() == issuer))
    }

    /// Reads, changes and writes the file under the write lock; returns what `change` returned.
    pub fn update<T>(&self, change: impl FnOnce(&mut Vec<Entry>) -> T) -> std::io::Result<T> {
        let Some(dir) = self.open_dir(true)? else { return Err(std::io::ErrorKind::NotFound.into()) };
        let _lock = dir.lock(LOCK, WRITE_WAIT)?;
        let mut contents = self.read_in(&dir)?;
        let out = change(&mut contents.entries);
        contents.version = 1;
        let text = serde_json::to_vec_pretty(&contents).map_err(std::io::Error::other)?;
        dir.write_atomic(FILE, &text, Access::Private)?;
        Ok(out)
    }

    /// Stores `entry` in place of the one with its URL and issuer.
    pub fn put(&self, entry: Entry) -> std::io::Result<()> {
        self.update(|entries| {
            entries.retain(|e| !(e.url == entry.url && e.issuer == entry.issuer));
            entries.push(entry);
        })
    }

    /// Removes every entry of `url`; how many there were.
    pub fn remove_url(&self, url: &str) -> std::io::Result<usize> {
        if self.open_dir(false)?.is_none() {
            return Ok(0);
        }
        self.update(|entries| {
            let before = entries.len();
            entries.retain(|e| e.url != url);
            before - entries.len()
        })
    }

    /// Holds the refresh lock until the returned value is dropped.
    fn refresh_lock(&self) -> std::io::Result<crate::util::fs::Lock> {
        let Some(dir) = self.open_dir(true)? else { return Err(std::io::ErrorKind::NotFound.into()) };
        dir.lock(REFRESH_LOCK, REFRESH_WAIT)
    }
}

/// This process's effective user id.
fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// `mode(0o700)` on a `DirBuilder`, spelled as a method so the call above reads as one chain.
trait Mode0700 {
    fn mode_0700(&mut self) -> &mut Self;
}

impl Mode0700 for std::fs::DirBuilder {
    fn mode_0700(&mut self) -> &mut Self {
        use std::os::unix::fs::DirBuilderExt as _;
        self.mode(0o700)
    }
}

/// One server's entry as rmcp's credential store.
#[derive(Clone)]
pub struct ServerCredentials {
    pub store: TokenStore,
    pub url: String,
    pub issuer: Option<String>,
    /// Kept with the entry on save (a registration's secret, or the configured one).
    pub client_secret: Option<String>,
}

impl std::fmt::Debug for ServerCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerCredentials")
            .field("url", &self.url)
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

fn store_error(e: impl std::fmt::Display) -> AuthError {
    AuthError::CredentialStoreError(e.to_string())
}

impl ServerCredentials {
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(ServerCredentials) -> std::io::Result<T> + Send + 'static,
    ) -> Result<T, AuthError> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || f(this)).await.map_err(store_error)?.map_err(store_error)
    }
}

#[async_trait::async_trait]
impl CredentialStore for ServerCredentials {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        self.blocking(|s| Ok(s.store.get(&s.url, s.issuer.as_deref())?.map(|e| e.credentials))).await
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.blocking(move |s| {
            let entry =
                Entry { url: s.url.clone(), issuer: s.issuer.clone(), client_secret: s.client_secret, credentials };
            s.store.put(entry)
        })
        .await
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.blocking(|s| s.store.update(|entries| entries.retain(|e| !(e.url == s.url && e.issuer == s.issuer)))).await
    }

    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let lock = self.blocking(|s| s.store.refresh_lock()).await?;
        Ok(Some(CredentialRefreshGuard::new(lock)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    fn creds(client: &str) -> StoredCredentials {
        StoredCredentials::new(client.into(), None, vec!["read".into()], Some(1))
    }

    fn entry(url: &str, issuer: Option<&str>, client: &str) -> Entry {
        Entry { url: url.into(), issuer: issuer.map(Into::into), client_secret: None, credentials: creds(client) }
    }

    #[test]
    fn the_file_is_0600_in_a_0700_directory_whatever_the_umask_and_an_open_directory_is_tightened() {
        let tmp = tempfile::tempdir().unwrap();
        let store = TokenStore::at(tmp.path().join("agent"));
        store.put(entry("https://a/mcp", Some("https://as"), "c1")).unwrap();
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&store.path()), 0o600);
        assert_eq!(mode(&tmp.path().join("agent")), 0o700);
        // A directory another program left open to the group is tightened on the next write.
        std::fs::set_permissions(tmp.path().join("agent"), std::fs::Permissions::from_mode(0o755)).unwrap();
        store.put(entry("https://b/mcp", None, "c2")).unwrap();
        assert_eq!(mode(&tmp.path().join("agent")), 0o700);
        assert_eq!(store.entries().unwrap().len(), 2);
    }

    #[test]
    fn entries_are_keyed_by_url_and_issuer() {
        let tmp = tempfile::tempdir().unwrap();
        let store = TokenStore::at(tmp.path());
        store.put(entry("https://a/mcp", Some("https://old-as"), "old")).unwrap();
        // The same server at a new authorization server: another entry, the old one untouched.
        assert!(store.get("https://a/mcp", Some("https://new-as")).unwrap().is_none());
        store.put(entry("https://a/mcp", Some("https://new-as"), "new")).unwrap();
        assert_eq!(store.get("https://a/mcp", Some("https://old-as")).unwrap().unwrap().credentials.client_id, "old");
        assert_eq!(store.get("https://a/mcp", Some("https://new-as")).unwrap().unwrap().credentials.client_id, "new");
        assert_eq!(store.remove_url("https://a/mcp").unwrap(), 2);
        assert!(store.entries().unwrap().is_empty());
    }

    #[test]
    fn a_link_at_the_files_name_is_replaced_never_written_through() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("agent");
        std::fs::create_dir(&dir).unwrap();
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        std::os::unix::fs::symlink(&victim, dir.join(FILE)).unwrap();
        let store = TokenStore::at(&dir);
        // Reading through the link is refused, and a write never reaches the victim.
        assert!(store.entries().is_err());
        assert!(store.put(entry("https://a/mcp", None, "c")).is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    }

    #[test]
    fn a_write_racing_others_loses_no_entry_and_leaves_no_temp_file() {
        let tmp = tempfile::tempdir().unwrap();
        let store = TokenStore::at(tmp.path());
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let store = store.clone();
                std::thread::spawn(move || store.put(entry(&format!("https://s{i}/mcp"), None, "c")).unwrap())
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(store.entries().unwrap().len(), 8);
        let names: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(names.iter().all(|n| !n.to_string_lossy().starts_with(".agent-tmp")), "{names:?}");
    }

    #[test]
    fn a_corrupt_file_is_an_error_that_quotes_none_of_it() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join(FILE), "{\"secret-token-value\": ").unwrap();
        let err = TokenStore::at(tmp.path()).entries().unwrap_err().to_string();
        assert!(err.contains("is not a credentials file"), "{err}");
        assert!(!err.contains("secret-token-value"), "{err}");
    }
}
