//! Leaf helpers with no knowledge of the rest of `agent`: every layer may use them, they use
//! nothing of the crate. `suggest` ("did you mean"), `size` (byte sizes and durations as users
//! type them), `fs` (the one atomic file write), `json` (JSON value kinds and local `$ref`s), `read`
//! (input read with a cap), `pause` (a clock that stops while the user is asked).

pub mod fs;
pub mod json;
pub mod pause;
pub mod read;
pub mod size;
pub mod suggest;
