//! Leaf helpers with no knowledge of the rest of `agent`: every layer may use them, they use
//! nothing of the crate. One home each: `suggest` ("did you mean"), `size` (byte sizes and
//! durations as users type them), `fs` (the one atomic file write), `json` (JSON value kinds and
//! local `$ref`s), `read` (input and files read with a cap), `hash` (the one stable hash),
//! `dirs` (the user's cache directory, `PATH` look-ups), `bearer` (`Authorization: Bearer`
//! checked in constant time), `clock` (time spent waiting for the user, left out of timeouts),
//! `alloc` (the binary's allocator, which a worker process can hold to a memory limit), `child`
//! (worker processes of this binary that do not outlive it), `jsonedit` (editing one member of a
//! JSON file's text, every other byte kept), `redact` (secrets masked in what is shown of a
//! configuration), `sched` (background threads that run only on an idle CPU).

pub mod alloc;
pub mod bearer;
pub mod child;
pub mod clock;
pub mod dirs;
pub mod fs;
pub mod hash;
pub mod json;
pub mod jsonedit;
pub mod read;
pub mod redact;
pub mod sched;
pub mod size;
pub mod suggest;
