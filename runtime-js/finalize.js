// Runs in every isolate after the bootstrap (fresh, or restored from the runtime snapshot) and
// before any script: hands the bootstrap's private "settle the default export" and "drop the
// storage globals" functions to Rust, then cuts every path from script code to the ops. Also removed: WebAssembly (scripts have
// nothing to instantiate, and its memory would sit outside the heap accounting),
// SharedArrayBuffer (scripts are single-threaded, and the engine allocates its memory with
// calloc, outside the heap limit), the engine's `gc` hook, and ShadowRealm (deno_core sets up no
// host hook for it, so it can only throw).
//
// This file is embedded in the binary and must stay 7-bit ASCII.
((globalThis) => {
  const { op_agent_register } = globalThis.Deno.core.ops;
  op_agent_register(globalThis.__agentSettle, globalThis.__agentDropStorage);
  delete globalThis.__agentSettle;
  delete globalThis.__agentDropStorage;
  delete globalThis.Deno;
  delete globalThis.__bootstrap;
  delete globalThis.WebAssembly;
  delete globalThis.SharedArrayBuffer;
  delete globalThis.gc;
  delete globalThis.ShadowRealm;
})(globalThis);
