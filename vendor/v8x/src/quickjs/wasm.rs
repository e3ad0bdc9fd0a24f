//! WebAssembly compiled out (agent's vendored copy).
//!
//! Upstream implements `globalThis.WebAssembly` over a vendored
//! wasm-micro-runtime (WAMR) here. agent's scripts never need WebAssembly,
//! and installing it cost every context an object graph that the startup
//! snapshot then had to carry, so this copy builds without WAMR: no
//! `WebAssembly` global is installed (a script that uses it gets a
//! `ReferenceError`), and the embedder entry points below behave as if no
//! WebAssembly module ever exists. They keep the signatures of the real
//! module so the rest of the backend is unchanged.

use std::ffi::{c_char, c_void};
use std::ptr;

use crate::quickjs::quickjs_sys::*;
use crate::{RealIsolate, Value};

type StreamingCallback =
  unsafe extern "C" fn(*const crate::FunctionCallbackInfo);

/// No WebAssembly global: nothing to install.
pub(crate) fn install_webassembly(_ctx: *mut JSContext) {}

/// No WebAssembly call can be running.
pub(crate) fn terminate_active_call(_iso: *mut RealIsolate) {}

/// `WebAssembly.compileStreaming` does not exist, so no callback is kept.
pub(crate) fn set_streaming_callback(_cb: Option<StreamingCallback>) {}

/// No streaming compilation can be pending.
pub(crate) fn has_pending_streaming_task() -> bool {
  false
}

/// No value is a WebAssembly.Module.
pub(crate) fn is_module_object(_this: *const Value) -> bool {
  false
}

/// No value is a WebAssembly.Module.
pub(crate) fn is_module_value(_ctx: *mut JSContext, _value: JSValue) -> bool {
  false
}

/// No compiled module behind any object.
pub(crate) fn module_object_get_compiled_module(
  _this: *const c_void,
) -> *mut c_void {
  ptr::null_mut()
}

/// A compiled module cannot be turned back into an object (none exist).
pub(crate) fn module_object_from_compiled_module(
  _isolate: *mut c_void,
  _compiled_module: *const c_void,
) -> *const c_void {
  ptr::null()
}

/// Compiling a module throws the `CompileError`-like `TypeError` V8 gives
/// when WebAssembly is disabled.
pub(crate) unsafe fn compile_module_object(
  ctx: *mut JSContext,
  _bytes: &[u8],
) -> JSValue {
  unsafe {
    JS_ThrowTypeError(
      ctx,
      c"WebAssembly is not available in this build".as_ptr(),
    )
  }
}

/// Never handed out, so nothing to free.
pub(crate) fn compiled_module_delete(_this: *mut c_void) {}

/// No bytes: there is no compiled module.
pub(crate) fn compiled_module_wire_bytes(
  _this: *mut c_void,
  length: *mut c_void,
) -> *const c_void {
  if !length.is_null() {
    unsafe { *(length as *mut isize) = 0 };
  }
  ptr::null()
}

/// No URL: there is no compiled module.
pub(crate) fn compiled_module_source_url(
  _this: *mut c_void,
  length: *mut c_void,
) -> *const c_void {
  if !length.is_null() {
    unsafe { *(length as *mut usize) = 0 };
  }
  ptr::null()
}

/// A compilation handle that never compiles anything.
pub(crate) fn module_compilation_new() -> *mut c_void {
  ptr::null_mut()
}

pub(crate) fn module_compilation_delete(_this: *mut c_void) {}

pub(crate) fn module_compilation_on_bytes_received(
  _this: *mut c_void,
  _bytes: *const c_void,
  _size: usize,
) {
}

pub(crate) fn module_compilation_set_url(
  _this: *mut c_void,
  _url: *const c_void,
  _length: usize,
) {
}

pub(crate) fn module_compilation_abort(_this: *mut c_void) {}

/// Never resolves: no module can be compiled.
pub(crate) fn module_compilation_finish(
  _this: *mut c_void,
  _isolate: *mut c_void,
  _caching_callback: *const c_void,
  _resolution_callback: *const c_void,
  _resolution_data: *mut c_void,
  _drop_resolution_data: *const c_void,
) {
}

/// The shared pointer a streaming handle fills: left empty.
pub(crate) fn streaming_unpack(_value: *const Value, that: *mut c_void) {
  if !that.is_null() {
    unsafe { ptr::write_bytes(that as *mut *mut c_void, 0, 2) };
  }
}

pub(crate) fn streaming_shared_ptr_destruct(_this: *mut c_void) {}

pub(crate) fn streaming_on_bytes_received(
  _this: *mut c_void,
  _data: *const u8,
  _len: usize,
) {
}

pub(crate) fn streaming_set_url(
  _this: *mut c_void,
  _url: *const c_char,
  _len: usize,
) {
}

pub(crate) fn streaming_finish(
  _this: *mut c_void,
  _callback: Option<unsafe extern "C" fn(*mut c_void)>,
) {
}

pub(crate) fn streaming_abort(_this: *mut c_void, _exception: *const Value) {}
