//! The code-mode runtime: a deno_core isolate that runs agent-written TypeScript.
