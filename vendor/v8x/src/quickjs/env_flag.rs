//! Environment switches read once per process.
//!
//! The backend has debug and behaviour switches named by environment
//! variables (`QJS_DEBUG_TMPL`, `QJS_NO_WASM`, ...). Several were read on
//! paths taken per template, per function or per context, and `getenv` (a
//! linear scan of the environment under a lock) showed up in the profile of
//! a fresh isolate. Each switch is now read the first time it is asked for
//! and remembered, so setting one after the process has started is not seen
//! (they are meant to be set when the process is launched).

/// `true` when the environment variable `$name` is set (to anything),
/// read once per process.
macro_rules! env_flag {
  ($name:literal) => {{
    static FLAG: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *FLAG.get_or_init(|| std::env::var_os($name).is_some())
  }};
}

/// `true` when the environment variable `$name` is set to valid Unicode
/// (what `std::env::var(..).is_ok()` answers), read once per process.
macro_rules! env_flag_unicode {
  ($name:literal) => {{
    static FLAG: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *FLAG.get_or_init(|| std::env::var($name).is_ok())
  }};
}
