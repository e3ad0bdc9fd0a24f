// The code-mode bootstrap, the extension's ESM entry point. It installs the globals a script may
// use (console, timers, TextEncoder/Decoder, URL, structuredClone, callMCPTool, searchTools,
// describeTool, listResources, readResource, listPrompts, getPrompt, decodeBase64) on top of the raw deno_core ops, keeping the ops in this module's closure. It
// runs once to build the runtime snapshot (or once per isolate when there is none); finalize.js
// then runs in every isolate before any script and removes every path to the ops (`Deno`,
// `__bootstrap`) from the global object. Everything a script can reach is defined here.
//
// Script code runs after this module and may replace any builtin (Array.prototype.map,
// JSON.parse, ...). Code here therefore captures the builtins it needs up front and never hands
// an internal object to a function a script could have replaced.
//
// This file is embedded in the binary and must stay 7-bit ASCII.

import { decodeResult, MCPToolError } from "ext:agent_runtime/result.js";

const core = globalThis.Deno.core;
const {
  op_agent_call_tool,
  op_agent_bridge_post,
  op_agent_bridge_get,
  op_agent_write,
  op_agent_url_parse,
  op_agent_url_set,
  op_agent_utf8_valid,
  op_agent_stack_prefix,
  op_agent_state_get,
  op_agent_state_put,
  op_agent_state_list,
  op_agent_save_skill,
} = core.ops;
const coreEncode = core.encode;
const coreDecode = core.decode;
const coreStructuredClone = core.structuredClone;
const coreCreateTimer = core.createTimer;
const coreCancelTimer = core.cancelTimer;

const {
  Array: ArrayCtor,
  ArrayBuffer: ArrayBufferCtor,
  DataView: DataViewCtor,
  Date: DateCtor,
  Error: ErrorCtor,
  JSON: JSONObj,
  Map: MapCtor,
  Number: NumberCtor,
  Object: ObjectCtor,
  Promise: PromiseCtor,
  RangeError: RangeErrorCtor,
  Reflect: ReflectObj,
  RegExp: RegExpCtor,
  Set: SetCtor,
  String: StringCtor,
  Symbol: SymbolCtor,
  TypeError: TypeErrorCtor,
  Uint8Array: Uint8ArrayCtor,
  WeakMap: WeakMapCtor,
  encodeURIComponent: encodeURIComponentFn,
  decodeURIComponent: decodeURIComponentFn,
} = globalThis;
const ArrayIsArray = ArrayCtor.isArray;
const ObjectDefineProperty = ObjectCtor.defineProperty;
const ObjectFreeze = ObjectCtor.freeze;
const ObjectKeys = ObjectCtor.keys;
const ObjectIs = ObjectCtor.is;
const ObjectGetPrototypeOf = ObjectCtor.getPrototypeOf;
const ObjectPrototypeToString = ObjectCtor.prototype.toString;
const JSONStringify = JSONObj.stringify;
const JSONParse = JSONObj.parse;
const ReflectApply = ReflectObj.apply;
const ArrayBufferIsView = ArrayBufferCtor.isView;
const StringPrototypeSlice = StringCtor.prototype.slice;
const StringPrototypeReplaceAll = StringCtor.prototype.replaceAll;
const StringPrototypeSplit = StringCtor.prototype.split;
const StringPrototypeIndexOf = StringCtor.prototype.indexOf;
const StringPrototypeRepeat = StringCtor.prototype.repeat;
const StringPrototypeCharCodeAt = StringCtor.prototype.charCodeAt;
const StringPrototypeTrim = StringCtor.prototype.trim;
const ArrayPrototypeJoin = ArrayCtor.prototype.join;
const ArrayPrototypePush = ArrayCtor.prototype.push;
const ArrayPrototypeSplice = ArrayCtor.prototype.splice;
const MapPrototypeGet = MapCtor.prototype.get;
const MapPrototypeSet = MapCtor.prototype.set;
const MapPrototypeDelete = MapCtor.prototype.delete;
const MapPrototypeEntries = MapCtor.prototype.entries;
const SetPrototypeValues = SetCtor.prototype.values;
const SetPrototypeHas = SetCtor.prototype.has;
const SetPrototypeAdd = SetCtor.prototype.add;
const SetPrototypeDelete = SetCtor.prototype.delete;
const WeakMapPrototypeGet = WeakMapCtor.prototype.get;
const WeakMapPrototypeSet = WeakMapCtor.prototype.set;
const DatePrototypeToISOString = DateCtor.prototype.toISOString;
const DatePrototypeGetTime = DateCtor.prototype.getTime;
const RegExpPrototypeToString = RegExpCtor.prototype.toString;
const SymbolPrototypeToString = SymbolCtor.prototype.toString;
const ErrorCaptureStackTrace = ErrorCtor.captureStackTrace;
const NumberIsNaN = NumberCtor.isNaN;
const mapSizeGetter = ObjectCtor.getOwnPropertyDescriptor(MapCtor.prototype, "size").get;
const setSizeGetter = ObjectCtor.getOwnPropertyDescriptor(SetCtor.prototype, "size").get;
const typedArrayProto = ObjectGetPrototypeOf(Uint8ArrayCtor.prototype);
const typedArrayLengthGetter = ObjectCtor.getOwnPropertyDescriptor(typedArrayProto, "length").get;
const typedArrayTag = ObjectCtor.getOwnPropertyDescriptor(typedArrayProto, SymbolCtor.toStringTag).get;

function call(fn, self, ...args) {
  return ReflectApply(fn, self, args);
}

function defineGlobal(name, value, writable = true) {
  ObjectDefineProperty(globalThis, name, {
    value,
    writable,
    enumerable: false,
    configurable: writable,
  });
}

// ---------------------------------------------------------------------------------------------
// Formatting values for console output.
//
// Strings print as they are at the top level; everything else prints like JSON.stringify(value)
// (compact) where JSON has an answer, so `console.log(obj)` and `console.log(JSON.stringify(obj))`
// agree on plain data. Values JSON cannot express get a readable form: undefined, NaN, 12n,
// [Function: f], Map(1) {"a" => 1}, Set(2) {1, 2}, [Circular], errors with their stack.

const MAX_DEPTH = 8;

function stackOf(err) {
  let stack;
  try {
    stack = err.stack;
  } catch {
    stack = undefined;
  }
  if (typeof stack !== "string" || stack === "") {
    return `${safeString(err?.name ?? "Error")}: ${safeString(err?.message ?? "")}`;
  }
  const prefix = op_agent_stack_prefix();
  return prefix === "" ? stack : call(StringPrototypeReplaceAll, stack, prefix, "");
}

function safeString(v) {
  try {
    return StringCtor(v);
  } catch {
    return "[object]";
  }
}

function isError(v) {
  return v instanceof ErrorCtor || call(ObjectPrototypeToString, v) === "[object Error]";
}

function typedArrayName(v) {
  try {
    return call(typedArrayTag, v);
  } catch {
    return undefined;
  }
}

function formatValue(v, depth, seen) {
  switch (typeof v) {
    case "string":
      return JSONStringify(v);
    case "number":
      if (NumberIsNaN(v) || v === Infinity || v === -Infinity) return StringCtor(v);
      return ObjectIs(v, -0) ? "-0" : StringCtor(v);
    case "boolean":
      return v ? "true" : "false";
    case "undefined":
      return "undefined";
    case "bigint":
      return `${v}n`;
    case "symbol":
      return call(SymbolPrototypeToString, v);
    case "function": {
      const name = safeString(v.name ?? "");
      return name === "" ? "[Function (anonymous)]" : `[Function: ${name}]`;
    }
  }
  if (v === null) return "null";
  if (call(SetPrototypeHas, seen, v)) return "[Circular]";
  if (isError(v)) {
    return depth === 0 ? stackOf(v) : `[${safeString(v.name ?? "Error")}: ${safeString(v.message ?? "")}]`;
  }
  if (v instanceof DateCtor) {
    const t = call(DatePrototypeGetTime, v);
    return NumberIsNaN(t) ? "Invalid Date" : JSONStringify(call(DatePrototypeToISOString, v));
  }
  if (v instanceof RegExpCtor) return call(RegExpPrototypeToString, v);
  if (v instanceof PromiseCtor) return "Promise {}";
  if (v instanceof WeakMapCtor) return "WeakMap {}";
  if (typeof v.toJSON === "function") {
    let j;
    try {
      j = v.toJSON();
    } catch {
      j = undefined;
    }
    if (typeof j !== "object" || j === null) return formatValue(j, depth, seen);
    v = j;
  }
  if (depth >= MAX_DEPTH) return ArrayIsArray(v) ? "[Array]" : "[Object]";
  call(SetPrototypeAdd, seen, v);
  try {
    const parts = [];
    if (ArrayIsArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const item = v[i];
        const s = item === undefined || typeof item === "function" || typeof item === "symbol"
          ? (item === undefined ? "null" : formatValue(item, depth + 1, seen))
          : formatValue(item, depth + 1, seen);
        call(ArrayPrototypePush, parts, s);
      }
      return `[${call(ArrayPrototypeJoin, parts, ",")}]`;
    }
    if (v instanceof MapCtor) {
      const it = call(MapPrototypeEntries, v);
      for (let e = it.next(); !e.done; e = it.next()) {
        call(
          ArrayPrototypePush,
          parts,
          `${formatValue(e.value[0], depth + 1, seen)} => ${formatValue(e.value[1], depth + 1, seen)}`,
        );
      }
      return `Map(${call(mapSizeGetter, v)}) {${call(ArrayPrototypeJoin, parts, ", ")}}`;
    }
    if (v instanceof SetCtor) {
      const it = call(SetPrototypeValues, v);
      for (let e = it.next(); !e.done; e = it.next()) {
        call(ArrayPrototypePush, parts, formatValue(e.value, depth + 1, seen));
      }
      return `Set(${call(setSizeGetter, v)}) {${call(ArrayPrototypeJoin, parts, ", ")}}`;
    }
    const taName = typedArrayName(v);
    if (taName !== undefined) {
      const n = call(typedArrayLengthGetter, v);
      const shown = n > 100 ? 100 : n;
      for (let i = 0; i < shown; i++) call(ArrayPrototypePush, parts, formatValue(v[i], depth + 1, seen));
      if (n > shown) call(ArrayPrototypePush, parts, `... ${n - shown} more`);
      return `${taName}(${n}) [${call(ArrayPrototypeJoin, parts, ",")}]`;
    }
    if (v instanceof ArrayBufferCtor) return `ArrayBuffer { byteLength: ${v.byteLength} }`;
    const keys = ObjectKeys(v);
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      let item;
      try {
        item = v[key];
      } catch (e) {
        item = e;
      }
      // Like JSON.stringify: properties holding undefined or functions are left out.
      if (item === undefined || typeof item === "function" || typeof item === "symbol") continue;
      call(ArrayPrototypePush, parts, `${JSONStringify(key)}:${formatValue(item, depth + 1, seen)}`);
    }
    return `{${call(ArrayPrototypeJoin, parts, ",")}}`;
  } finally {
    call(SetPrototypeDelete, seen, v);
  }
}

function formatArg(v) {
  if (typeof v === "string") return v;
  // A value standing for a string (the generated tree's ToolResponse around a text result)
  // prints as that string too.
  if (v !== null && typeof v === "object" && !(v instanceof DateCtor) && typeof v.toJSON === "function") {
    try {
      const j = v.toJSON();
      if (typeof j === "string") return j;
    } catch {
      // formatValue reports it.
    }
  }
  return formatValue(v, 0, new SetCtor());
}

// printf-style directives in a leading string argument, as Node and browsers do.
function formatArgs(args) {
  if (args.length === 0) return "";
  let first = args[0];
  let rest = 1;
  if (typeof first === "string" && call(StringPrototypeIndexOf, first, "%") !== -1 && args.length > 1) {
    let out = "";
    let i = 0;
    while (i < first.length) {
      const c = first[i];
      if (c === "%" && i + 1 < first.length) {
        const d = first[i + 1];
        if (d === "%") {
          out += "%";
          i += 2;
          continue;
        }
        if (rest < args.length && "sdifjoOc".includes(d)) {
          const a = args[rest++];
          if (d === "s") out += typeof a === "string" ? a : formatArg(a);
          else if (d === "d" || d === "i") {
            out += typeof a === "bigint" ? `${a}n` : StringCtor(d === "i" ? NumberCtor.parseInt(a) : NumberCtor(a));
          } else if (d === "f") out += StringCtor(NumberCtor.parseFloat(a));
          else if (d === "c") out += "";
          else out += formatValue(a, 0, new SetCtor());
          i += 2;
          continue;
        }
      }
      out += c;
      i++;
    }
    first = out;
  } else {
    first = formatArg(first);
  }
  const parts = [first];
  for (let i = rest; i < args.length; i++) call(ArrayPrototypePush, parts, formatArg(args[i]));
  return call(ArrayPrototypeJoin, parts, " ");
}

// ---------------------------------------------------------------------------------------------
// console: log/info/debug/dir/table go to stdout, warn/error/trace/assert to stderr. The Rust
// side applies the output cap.

const STDOUT = 1;
const STDERR = 2;
let groupIndent = "";
const counts = new MapCtor();
const timers = new MapCtor();

function emit(stream, text) {
  if (groupIndent !== "") {
    text = groupIndent + call(ArrayPrototypeJoin, call(StringPrototypeSplit, text, "\n"), "\n" + groupIndent);
  }
  op_agent_write(stream, text + "\n");
}

const consoleObject = {
  log: (...args) => emit(STDOUT, formatArgs(args)),
  info: (...args) => emit(STDOUT, formatArgs(args)),
  debug: (...args) => emit(STDOUT, formatArgs(args)),
  dir: (value) => emit(STDOUT, formatArg(value)),
  dirxml: (...args) => emit(STDOUT, formatArgs(args)),
  table: (data) => emit(STDOUT, formatArg(data)),
  warn: (...args) => emit(STDERR, formatArgs(args)),
  error: (...args) => emit(STDERR, formatArgs(args)),
  trace: (...args) => {
    const err = new ErrorCtor(formatArgs(args));
    ErrorCaptureStackTrace(err, consoleObject.trace);
    const stack = stackOf(err);
    emit(STDERR, "Trace" + call(StringPrototypeSlice, stack, 5));
  },
  assert: (condition, ...args) => {
    if (!condition) {
      emit(STDERR, args.length === 0 ? "Assertion failed" : "Assertion failed: " + formatArgs(args));
    }
  },
  count: (label = "default") => {
    const key = StringCtor(label);
    const n = (call(MapPrototypeGet, counts, key) ?? 0) + 1;
    call(MapPrototypeSet, counts, key, n);
    emit(STDOUT, `${key}: ${n}`);
  },
  countReset: (label = "default") => {
    call(MapPrototypeDelete, counts, StringCtor(label));
  },
  group: (...args) => {
    if (args.length > 0) emit(STDOUT, formatArgs(args));
    groupIndent += "  ";
  },
  groupCollapsed: (...args) => consoleObject.group(...args),
  groupEnd: () => {
    groupIndent = call(StringPrototypeSlice, groupIndent, 2);
  },
  time: (label = "default") => {
    call(MapPrototypeSet, timers, StringCtor(label), globalThis.performance.now());
  },
  timeLog: (label = "default", ...args) => {
    const start = call(MapPrototypeGet, timers, StringCtor(label));
    if (start === undefined) return;
    const ms = globalThis.performance.now() - start;
    emit(STDOUT, `${label}: ${ms.toFixed(3)}ms${args.length ? " " + formatArgs(args) : ""}`);
  },
  timeEnd: (label = "default") => {
    consoleObject.timeLog(label);
    call(MapPrototypeDelete, timers, StringCtor(label));
  },
  clear: () => {},
};
defineGlobal("console", consoleObject);

// ---------------------------------------------------------------------------------------------
// Timers, on deno_core's timer queue (driven by the event loop, so a pending timer keeps the
// script alive like in Node or Deno).

let nextTimerId = 1;
const activeTimers = new MapCtor();

function schedule(callback, delay, args, repeat) {
  if (typeof callback !== "function") {
    throw new TypeErrorCtor("the callback passed to setTimeout/setInterval must be a function");
  }
  const id = nextTimerId++;
  const wrapped = repeat ? () => ReflectApply(callback, globalThis, args) : () => {
    call(MapPrototypeDelete, activeTimers, id);
    ReflectApply(callback, globalThis, args);
  };
  const timer = coreCreateTimer(wrapped, NumberCtor(delay) || 0, undefined, repeat, true);
  call(MapPrototypeSet, activeTimers, id, timer);
  return id;
}

function cancel(id) {
  const timer = call(MapPrototypeGet, activeTimers, id);
  if (timer !== undefined) {
    call(MapPrototypeDelete, activeTimers, id);
    coreCancelTimer(timer);
  }
}

defineGlobal("setTimeout", (callback, delay = 0, ...args) => schedule(callback, delay, args, false));
defineGlobal("setInterval", (callback, delay = 0, ...args) => schedule(callback, delay, args, true));
defineGlobal("clearTimeout", (id) => cancel(id));
defineGlobal("clearInterval", (id) => cancel(id));

// ---------------------------------------------------------------------------------------------
// TextEncoder / TextDecoder (UTF-8 only, which is what the WHATWG encoder supports anyway).

function toBytes(input) {
  if (input === undefined) return new Uint8ArrayCtor(0);
  if (input instanceof ArrayBufferCtor) return new Uint8ArrayCtor(input);
  if (ArrayBufferIsView(input)) return new Uint8ArrayCtor(input.buffer, input.byteOffset, input.byteLength);
  throw new TypeErrorCtor("TextDecoder.decode expects an ArrayBuffer or an ArrayBufferView");
}

class TextEncoder {
  get encoding() {
    return "utf-8";
  }
  encode(input = "") {
    return coreEncode(StringCtor(input));
  }
  encodeInto(source, destination) {
    const bytes = coreEncode(StringCtor(source));
    // Copy whole characters only: stop before a UTF-8 sequence that does not fit.
    let written = bytes.length;
    if (written > destination.length) {
      written = destination.length;
      while (written > 0 && (bytes[written] & 0xc0) === 0x80) written--;
    }
    for (let i = 0; i < written; i++) destination[i] = bytes[i];
    const text = coreDecode(bytes.subarray(0, written));
    return { read: text.length, written };
  }
}

class TextDecoder {
  #fatal;
  #ignoreBOM;
  constructor(label = "utf-8", options = {}) {
    const l = StringCtor(label).trim().toLowerCase();
    if (l !== "utf-8" && l !== "utf8" && l !== "unicode-1-1-utf-8") {
      throw new RangeErrorCtor(`TextDecoder: only utf-8 is supported, not "${label}"`);
    }
    this.#fatal = !!options?.fatal;
    this.#ignoreBOM = !!options?.ignoreBOM;
  }
  get encoding() {
    return "utf-8";
  }
  get fatal() {
    return this.#fatal;
  }
  get ignoreBOM() {
    return this.#ignoreBOM;
  }
  decode(input = undefined, _options = undefined) {
    const bytes = toBytes(input);
    if (this.#fatal && !op_agent_utf8_valid(bytes)) {
      throw new TypeErrorCtor("TextDecoder: the encoded data is not valid UTF-8");
    }
    const hasBOM = bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf;
    const text = coreDecode(bytes);
    // deno_core strips a leading BOM; put it back when asked to keep it.
    return hasBOM && this.#ignoreBOM ? "\ufeff" + text : text;
  }
}

defineGlobal("TextEncoder", TextEncoder);
defineGlobal("TextDecoder", TextDecoder);

// ---------------------------------------------------------------------------------------------
// URL and URLSearchParams. Parsing and the component setters are the `url` crate's WHATWG
// implementation (an op); URLSearchParams is plain JS over application/x-www-form-urlencoded.

const URL_HREF = 0;
const URL_PARTS = ["href", "origin", "protocol", "username", "password", "host", "hostname", "port", "pathname", "search", "hash"];
const urlParts = new WeakMapCtor();
const urlSearch = new WeakMapCtor();

function formDecode(s) {
  const plus = call(StringPrototypeReplaceAll, s, "+", " ");
  try {
    return decodeURIComponentFn(plus);
  } catch {
    return plus;
  }
}

function formEncode(s) {
  let out = "";
  const enc = encodeURIComponentFn(s);
  for (let i = 0; i < enc.length; i++) {
    const c = enc[i];
    if (c === "!") out += "%21";
    else if (c === "'") out += "%27";
    else if (c === "(") out += "%28";
    else if (c === ")") out += "%29";
    else if (c === "~") out += "%7E";
    else if (c === "%" && enc[i + 1] === "2" && enc[i + 2] === "0") {
      out += "+";
      i += 2;
    } else out += c;
  }
  return out;
}

class URLSearchParams {
  #list = [];
  #url = null;
  constructor(init = undefined) {
    if (init === undefined || init === null) return;
    if (typeof init === "string") {
      this.#parse(init);
    } else if (typeof init === "object" && typeof init[SymbolCtor.iterator] === "function") {
      for (const pair of init) {
        const p = [...pair];
        if (p.length !== 2) throw new TypeErrorCtor("URLSearchParams: each pair must have exactly two items");
        call(ArrayPrototypePush, this.#list, [StringCtor(p[0]), StringCtor(p[1])]);
      }
    } else if (typeof init === "object") {
      for (const key of ObjectKeys(init)) call(ArrayPrototypePush, this.#list, [key, StringCtor(init[key])]);
    } else {
      this.#parse(StringCtor(init));
    }
  }
  #parse(s) {
    this.#list = [];
    if (s[0] === "?") s = call(StringPrototypeSlice, s, 1);
    if (s === "") return;
    for (const part of call(StringPrototypeSplit, s, "&")) {
      if (part === "") continue;
      const eq = call(StringPrototypeIndexOf, part, "=");
      const name = eq === -1 ? part : call(StringPrototypeSlice, part, 0, eq);
      const value = eq === -1 ? "" : call(StringPrototypeSlice, part, eq + 1);
      call(ArrayPrototypePush, this.#list, [formDecode(name), formDecode(value)]);
    }
  }
  #update() {
    if (this.#url !== null) {
      const q = this.toString();
      setUrlComponent(this.#url, "search", q === "" ? "" : "?" + q, false);
    }
  }
  static _attach(params, url) {
    params.#url = url;
  }
  static _reparse(params, search) {
    params.#parse(search);
  }
  get size() {
    return this.#list.length;
  }
  append(name, value) {
    call(ArrayPrototypePush, this.#list, [StringCtor(name), StringCtor(value)]);
    this.#update();
  }
  delete(name, value = undefined) {
    name = StringCtor(name);
    for (let i = this.#list.length - 1; i >= 0; i--) {
      const [n, v] = this.#list[i];
      if (n === name && (value === undefined || v === StringCtor(value))) call(ArrayPrototypeSplice, this.#list, i, 1);
    }
    this.#update();
  }
  get(name) {
    name = StringCtor(name);
    for (const [n, v] of this.#list) if (n === name) return v;
    return null;
  }
  getAll(name) {
    name = StringCtor(name);
    const out = [];
    for (const [n, v] of this.#list) if (n === name) call(ArrayPrototypePush, out, v);
    return out;
  }
  has(name, value = undefined) {
    name = StringCtor(name);
    for (const [n, v] of this.#list) if (n === name && (value === undefined || v === StringCtor(value))) return true;
    return false;
  }
  set(name, value) {
    name = StringCtor(name);
    value = StringCtor(value);
    let found = false;
    for (let i = 0; i < this.#list.length; i++) {
      if (this.#list[i][0] !== name) continue;
      if (found) {
        call(ArrayPrototypeSplice, this.#list, i, 1);
        i--;
      } else {
        this.#list[i][1] = value;
        found = true;
      }
    }
    if (!found) call(ArrayPrototypePush, this.#list, [name, value]);
    this.#update();
  }
  sort() {
    const sorted = [...this.#list].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    this.#list = sorted;
    this.#update();
  }
  forEach(callback, thisArg = undefined) {
    for (const [n, v] of [...this.#list]) ReflectApply(callback, thisArg, [v, n, this]);
  }
  *entries() {
    for (const [n, v] of [...this.#list]) yield [n, v];
  }
  *keys() {
    for (const [n] of [...this.#list]) yield n;
  }
  *values() {
    for (const [, v] of [...this.#list]) yield v;
  }
  [SymbolCtor.iterator]() {
    return this.entries();
  }
  toString() {
    const parts = [];
    for (const [n, v] of this.#list) call(ArrayPrototypePush, parts, formEncode(n) + "=" + formEncode(v));
    return call(ArrayPrototypeJoin, parts, "&");
  }
}

function setUrlComponent(url, name, value, reparseSearch) {
  const parts = call(WeakMapPrototypeGet, urlParts, url);
  const next = op_agent_url_set(parts[URL_HREF], name, StringCtor(value));
  if (next === null) {
    if (name === "href") throw new TypeErrorCtor(`Invalid URL: ${value}`);
    return;
  }
  call(WeakMapPrototypeSet, urlParts, url, next);
  if (reparseSearch) {
    const params = call(WeakMapPrototypeGet, urlSearch, url);
    if (params !== undefined) URLSearchParams._reparse(params, next[9]);
  }
}

class URL {
  constructor(url, base = undefined) {
    const parts = op_agent_url_parse(StringCtor(url), base === undefined ? undefined : StringCtor(base));
    if (parts === null) {
      throw new TypeErrorCtor(`Invalid URL: ${StringCtor(url)}${base === undefined ? "" : ` (base ${StringCtor(base)})`}`);
    }
    call(WeakMapPrototypeSet, urlParts, this, parts);
  }
  static canParse(url, base = undefined) {
    return op_agent_url_parse(StringCtor(url), base === undefined ? undefined : StringCtor(base)) !== null;
  }
  static parse(url, base = undefined) {
    return URL.canParse(url, base) ? new URL(url, base) : null;
  }
  get searchParams() {
    let params = call(WeakMapPrototypeGet, urlSearch, this);
    if (params === undefined) {
      params = new URLSearchParams(call(WeakMapPrototypeGet, urlParts, this)[9]);
      URLSearchParams._attach(params, this);
      call(WeakMapPrototypeSet, urlSearch, this, params);
    }
    return params;
  }
  toString() {
    return call(WeakMapPrototypeGet, urlParts, this)[URL_HREF];
  }
  toJSON() {
    return call(WeakMapPrototypeGet, urlParts, this)[URL_HREF];
  }
}
for (let i = 0; i < URL_PARTS.length; i++) {
  const name = URL_PARTS[i];
  const desc = {
    get() {
      return call(WeakMapPrototypeGet, urlParts, this)[i];
    },
    enumerable: true,
    configurable: true,
  };
  if (name !== "origin") {
    desc.set = function (value) {
      setUrlComponent(this, name, value, name === "search" || name === "href");
    };
  }
  ObjectDefineProperty(URL.prototype, name, desc);
}
defineGlobal("URL", URL);
defineGlobal("URLSearchParams", URLSearchParams);

// ---------------------------------------------------------------------------------------------
// structuredClone (the engine's serializer, as in browsers).

defineGlobal("structuredClone", (value, options = undefined) => {
  if (options !== undefined && options?.transfer?.length) {
    throw new TypeErrorCtor("structuredClone: transfer lists are not supported");
  }
  return coreStructuredClone(value);
});

// ---------------------------------------------------------------------------------------------
// Tool calls. `__agentCallTool` returns the bridge's raw CallToolResult; `callMCPTool` unwraps it
// the way the generated client.ts does. The op owns the bridge socket and token; script code
// only ever sees JSON text going in and coming out.

class BridgeError extends ErrorCtor {
  constructor(message, detail) {
    super(message);
    this.name = "BridgeError";
    this.code = detail.code;
    this.status = detail.status ?? null;
    this.suggestions = detail.suggestions ?? [];
    this.server = detail.server;
    this.tool = detail.tool;
    if (detail.uri !== undefined) this.uri = detail.uri;
    if (detail.prompt !== undefined) this.prompt = detail.prompt;
  }
}

// The call's JSON body, after checking what the script passed.
function encodeCall(server, tool, args) {
  if (typeof server !== "string" || server === "") {
    throw new TypeErrorCtor("__agentCallTool: `server` must be a non-empty string");
  }
  if (typeof tool !== "string" || tool === "") {
    throw new TypeErrorCtor("__agentCallTool: `tool` must be a non-empty string");
  }
  if (args === undefined || args === null) args = {};
  if (typeof args !== "object" || ArrayIsArray(args)) {
    throw new TypeErrorCtor(`${server}.${tool}: arguments must be an object`);
  }
  try {
    return JSONStringify({ server, tool, arguments: args });
  } catch (e) {
    throw new TypeErrorCtor(`${server}.${tool}: arguments are not JSON-serialisable: ${safeString(e?.message)}`);
  }
}

// The op answers "1<CallToolResult JSON>" or "0<error JSON>"; the latter throws a BridgeError
// whose stack starts at `caller`.
function decodeAnswer(answer, server, tool, caller, extra = undefined) {
  const payload = JSONParse(call(StringPrototypeSlice, answer, 1));
  if (answer[0] === "1") return payload;
  const err = new BridgeError(payload.message, { ...payload, ...extra, server, tool });
  ErrorCaptureStackTrace(err, caller);
  throw err;
}

// Both entry points are single async functions around the op (no async wrapper in between:
// each extra await level costs a microtask round on every call).
async function agentCallTool(server, tool, args = {}) {
  const answer = await op_agent_call_tool(encodeCall(server, tool, args));
  return decodeAnswer(answer, server, tool, agentCallTool);
}

// Same contract as the generated client.ts (both decode with result.js): structuredContent when
// present; otherwise, when every content block is text, the joined text parsed as JSON when it
// parses, else the text itself; otherwise the content blocks. `isError` throws MCPToolError.
async function callMCPTool(server, tool, args = {}) {
  const answer = await op_agent_call_tool(encodeCall(server, tool, args));
  const result = decodeAnswer(answer, server, tool, callMCPTool);
  if (result.isError === true) {
    const err = new MCPToolError(server, tool, result);
    ErrorCaptureStackTrace(err, callMCPTool);
    throw err;
  }
  return decodeResult(result);
}

// The tool catalog. `searchTools(query, { limit })` ranks the tools of every enabled server
// (the records of `agent mcp search --json`: server, tool, score, signature, description);
// `describeTool("server.tool")` answers that tool's TypeScript (import line, TSDoc, signature,
// types). Both are GETs through the bridge; failures reject with BridgeError.
const NumberIsInteger = NumberCtor.isInteger;

async function searchTools(query, options = undefined) {
  if (typeof query !== "string" || call(StringPrototypeTrim, query) === "") {
    throw new TypeErrorCtor("searchTools: `query` must be a non-empty string, e.g. searchTools(\"list issues\")");
  }
  let path = "/search?q=" + encodeURIComponentFn(query);
  const limit = options === undefined || options === null ? undefined : options.limit;
  if (limit !== undefined) {
    if (typeof limit !== "number" || !NumberIsInteger(limit) || limit < 1 || limit > 100) {
      throw new TypeErrorCtor("searchTools: `limit` must be a whole number from 1 to 100");
    }
    path += "&limit=" + limit;
  }
  const answer = await op_agent_bridge_get(path);
  return decodeAnswer(answer, undefined, undefined, searchTools);
}

async function describeTool(name, tool = undefined) {
  let server = name;
  if (tool === undefined) {
    const dot = typeof name === "string" ? call(StringPrototypeIndexOf, name, ".") : -1;
    if (dot <= 0 || dot === name.length - 1) {
      throw new TypeErrorCtor(`describeTool: expected "server.tool" (as searchTools reports it), got ${safeString(name)}`);
    }
    server = call(StringPrototypeSlice, name, 0, dot);
    tool = call(StringPrototypeSlice, name, dot + 1);
  }
  if (typeof server !== "string" || server === "" || typeof tool !== "string" || tool === "") {
    throw new TypeErrorCtor("describeTool: expected describeTool(\"server.tool\") or describeTool(server, tool)");
  }
  const answer = await op_agent_bridge_get("/tools/" + encodeURIComponentFn(server) + "/" + encodeURIComponentFn(tool));
  return decodeAnswer(answer, server, tool, describeTool).typescript;
}

// MCP's other primitives: resources (and templates) and prompts. Each is one POST through the
// bridge (op_agent_bridge_post, fenced like a tool call: counted, under the cap on calls in
// flight, dropped with the script); failures reject with BridgeError as callMCPTool's do.
const LIST_RESOURCES = 0;
const READ_RESOURCE = 1;
const LIST_PROMPTS = 2;
const GET_PROMPT = 3;

function nonEmpty(fn, what, value) {
  if (typeof value !== "string" || value === "") {
    const err = new TypeErrorCtor(`${fn}: \`${what}\` must be a non-empty string`);
    ErrorCaptureStackTrace(err, nonEmpty);
    throw err;
  }
}

function listBody(fn, server) {
  if (server === undefined || server === null) return "{}";
  nonEmpty(fn, "server", server);
  return JSONStringify({ server });
}

// { resources: [{server, uri, name, ...}], resourceTemplates: [{server, uriTemplate, name, ...}] }
async function listResources(server = undefined) {
  const answer = await op_agent_bridge_post(LIST_RESOURCES, listBody("listResources", server));
  return decodeAnswer(answer, server, undefined, listResources);
}

// The MCP ReadResourceResult: { contents: [{uri, mimeType?, text} | {uri, mimeType?, blob}] },
// `blob` in base64 (decodeBase64 turns it into bytes).
async function readResource(server, uri) {
  nonEmpty("readResource", "server", server);
  nonEmpty("readResource", "uri", uri);
  const answer = await op_agent_bridge_post(READ_RESOURCE, JSONStringify({ server, uri }));
  return decodeAnswer(answer, server, undefined, readResource, { uri });
}

// [{server, name, title?, description?, arguments: [{name, description?, required}]}]
async function listPrompts(server = undefined) {
  const answer = await op_agent_bridge_post(LIST_PROMPTS, listBody("listPrompts", server));
  return decodeAnswer(answer, server, undefined, listPrompts);
}

// The MCP GetPromptResult: { description?, messages: [{role, content}] }.
async function getPrompt(server, name, args = undefined) {
  nonEmpty("getPrompt", "server", server);
  nonEmpty("getPrompt", "name", name);
  if (args === undefined || args === null) args = {};
  if (typeof args !== "object" || ArrayIsArray(args)) {
    throw new TypeErrorCtor(`getPrompt(${JSONStringify(server)}, ${JSONStringify(name)}): arguments must be an object`);
  }
  let body;
  try {
    body = JSONStringify({ server, name, arguments: args });
  } catch (e) {
    throw new TypeErrorCtor(`getPrompt: arguments are not JSON-serialisable: ${safeString(e?.message)}`);
  }
  const answer = await op_agent_bridge_post(GET_PROMPT, body);
  return decodeAnswer(answer, server, undefined, getPrompt, { prompt: name });
}

// Base64 (a resource's `blob`, an image block's `data`) to bytes; throws on anything else.
const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const B64_VALUES = new Uint8ArrayCtor(128).fill(255);
for (let i = 0; i < 64; i++) B64_VALUES[call(StringPrototypeCharCodeAt, B64, i)] = i;
B64_VALUES[45] = 62; // "-" and "_": the URL-safe alphabet
B64_VALUES[95] = 63;

function decodeBase64(text) {
  if (typeof text !== "string") throw new TypeErrorCtor("decodeBase64: expected a base64 string");
  let end = text.length;
  while (end > 0 && text[end - 1] === "=") end--;
  if (text.length - end > 2 || end % 4 === 1) throw new TypeErrorCtor("decodeBase64: not base64 (bad length)");
  const out = new Uint8ArrayCtor((end * 3) >> 2);
  let acc = 0;
  let bits = 0;
  let o = 0;
  for (let i = 0; i < end; i++) {
    const c = call(StringPrototypeCharCodeAt, text, i);
    const v = c < 128 ? B64_VALUES[c] : 255;
    if (v === 255) throw new TypeErrorCtor(`decodeBase64: not base64 (character ${i})`);
    acc = ((acc << 6) | v) & 0xffffff;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (acc >> bits) & 0xff;
    }
  }
  return out;
}

defineGlobal("__agentCallTool", agentCallTool, false);
defineGlobal("listResources", listResources, false);
defineGlobal("readResource", readResource, false);
defineGlobal("listPrompts", listPrompts, false);
defineGlobal("getPrompt", getPrompt, false);
defineGlobal("decodeBase64", decodeBase64, false);
defineGlobal("searchTools", searchTools, false);
defineGlobal("describeTool", describeTool, false);
defineGlobal("callMCPTool", callMCPTool, false);
defineGlobal("BridgeError", BridgeError);
defineGlobal("MCPToolError", MCPToolError);

// ---------------------------------------------------------------------------------------------
// State across executions and skills (src/runtime/state.rs). Everything lives under
// <workspace>/data/ (store/load keys in data/.store/) and <workspace>/skills/; the ops fence the
// paths. The ops are synchronous; they answer "1<payload>", "2" (nothing there) or "0<message>",
// and a message becomes an Error thrown from the script's own call.

function stateAnswer(answer, caller) {
  if (answer[0] === "1") return call(StringPrototypeSlice, answer, 1);
  if (answer[0] === "2") return undefined;
  const err = new ErrorCtor(call(StringPrototypeSlice, answer, 1));
  ErrorCaptureStackTrace(err, caller);
  throw err;
}

function checkString(fn, what, value) {
  if (typeof value !== "string" || value === "") {
    const err = new TypeErrorCtor(`${fn}: \`${what}\` must be a non-empty string`);
    ErrorCaptureStackTrace(err, checkString);
    throw err;
  }
}

function toJson(fn, value) {
  let text;
  try {
    text = JSONStringify(value);
  } catch (e) {
    throw new TypeErrorCtor(`${fn}: the value is not JSON-serialisable: ${safeString(e?.message)}`);
  }
  if (text === undefined) throw new TypeErrorCtor(`${fn}: the value is not JSON-serialisable`);
  return text;
}

function store(key, value) {
  checkString("store", "key", key);
  const text = value === undefined ? null : toJson(`store(${JSONStringify(key)})`, value);
  stateAnswer(op_agent_state_put(0, key, text), store);
}

function load(key) {
  checkString("load", "key", key);
  const text = stateAnswer(op_agent_state_get(0, key), load);
  return text === undefined ? undefined : JSONParse(text);
}

function readText(path) {
  checkString("readText", "path", path);
  return stateAnswer(op_agent_state_get(1, path), readText);
}

function writeText(path, text) {
  checkString("writeText", "path", path);
  if (typeof text !== "string") throw new TypeErrorCtor("writeText: `text` must be a string");
  stateAnswer(op_agent_state_put(1, path, text), writeText);
}

function readJson(path) {
  checkString("readJson", "path", path);
  const text = stateAnswer(op_agent_state_get(1, path), readJson);
  try {
    return JSONParse(text);
  } catch (e) {
    const err = new ErrorCtor(`data/${path} is not JSON: ${safeString(e?.message)}`);
    ErrorCaptureStackTrace(err, readJson);
    throw err;
  }
}

function writeJson(path, value) {
  checkString("writeJson", "path", path);
  stateAnswer(op_agent_state_put(1, path, toJson("writeJson", value)), writeJson);
}

function list(dir = "") {
  if (typeof dir !== "string") throw new TypeErrorCtor("list: `dir` must be a string");
  return JSONParse(stateAnswer(op_agent_state_list(dir), list));
}

function saveSkill(name, source, description = "") {
  checkString("saveSkill", "name", name);
  if (typeof source !== "string") throw new TypeErrorCtor("saveSkill: `source` must be a string");
  if (description === undefined || description === null) description = "";
  if (typeof description !== "string") throw new TypeErrorCtor("saveSkill: `description` must be a string");
  return stateAnswer(op_agent_save_skill(name, source, description), saveSkill);
}

// Read-only, but removable: a script that may not keep anything (a result handler) runs without
// them. Rust calls dropStorage (handed over by finalize.js) before such a script loads; the ops
// refuse it too.
const storage = [
  ["store", store],
  ["load", load],
  ["readText", readText],
  ["writeText", writeText],
  ["readJson", readJson],
  ["writeJson", writeJson],
  ["list", list],
  ["saveSkill", saveSkill],
];
for (let i = 0; i < storage.length; i++) {
  ObjectDefineProperty(globalThis, storage[i][0], { value: storage[i][1], writable: false, configurable: true });
}

function dropStorage() {
  for (let i = 0; i < storage.length; i++) delete globalThis[storage[i][0]];
}

ObjectDefineProperty(globalThis, "__agentDropStorage", { value: dropStorage, configurable: true });

// ---------------------------------------------------------------------------------------------
// No network: a clear error instead of "fetch is not defined", since models reach for it first.

defineGlobal("fetch", function fetch() {
  return PromiseCtor.reject(
    new TypeErrorCtor(
      "fetch() is not available: scripts have no network access; call MCP tools through ./servers/<server>/index.ts",
    ),
  );
});

// Atomics.wait blocks the thread in native code where a timeout cannot interrupt it. Without
// shared memory (finalize.js removes SharedArrayBuffer) there is nobody to wait for, and
// Atomics.waitAsync would only park waiters in the engine's own registry, outside the heap limit.
if (globalThis.Atomics !== undefined) {
  for (const name of ["wait", "waitAsync"]) {
    ObjectDefineProperty(globalThis.Atomics, name, {
      value: function unavailable() {
        throw new TypeErrorCtor(`Atomics.${name} is not available in scripts`);
      },
      writable: false,
      configurable: false,
    });
  }
}

// ---------------------------------------------------------------------------------------------
// What Rust calls after the main module finished: settle the default export into JSON text.
// finalize.js hands it to Rust through an op and removes it from the global object.

async function settleDefault(namespace) {
  let value = namespace.default;
  if (typeof value === "function") value = await value();
  else value = await value;
  if (value === undefined) return undefined;
  const json = JSONStringify(value, (_key, v) => (typeof v === "bigint" ? StringCtor(v) : v));
  return json;
}

ObjectDefineProperty(globalThis, "__agentSettle", { value: settleDefault, configurable: true });
