// How an MCP CallToolResult becomes the value a script sees, and the error a tool's failure
// throws: the one source for both places that decode results. agent's isolate loads this file
// as an extension module (bootstrap.js imports it for the `callMCPTool` global), and the
// generated tree ships it verbatim as `result.js` (its `client.ts` imports it; `result.d.ts`
// types it for tsc).
//
// Plain JavaScript (no TypeScript syntax), 7-bit ASCII. The builtins it uses are captured when
// the module is evaluated; in the isolate that is before any script runs, so a script that
// replaces Array.isArray or JSON.parse cannot change how results decode. No prototype methods
// are called on values it did not create.

const ArrayIsArray = Array.isArray;
const JSONParse = JSON.parse;
const ErrorBase = Error;

/** The text blocks joined by newlines; with `only`, undefined unless every block is text. */
export function joinText(content, only) {
  let joined;
  let count = 0;
  for (let i = 0; i < content.length; i++) {
    const b = content[i];
    if (b !== null && typeof b === "object" && b.type === "text" && typeof b.text === "string") {
      joined = count === 0 ? b.text : joined + "\n" + b.text;
      count++;
    }
  }
  if (count === 0 || (only && count !== content.length)) return undefined;
  return joined;
}

/** False when JSON.parse would certainly throw: no JSON value starts the text. Plain-text
 * answers then skip a thrown SyntaxError (and the stack it builds) per call. */
export function mayBeJSON(text) {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) continue;
    // { [ " - 0-9 t f n
    return c === 0x7b || c === 0x5b || c === 0x22 || c === 0x2d || (c >= 0x30 && c <= 0x39) ||
      c === 0x74 || c === 0x66 || c === 0x6e;
  }
  return false;
}

/** The value of a successful result: `structuredContent` when present; otherwise, when every
 * content block is text, the joined text parsed as JSON when it parses, else the text itself;
 * otherwise (images, resources, no content) the content blocks. */
export function decodeResult(result) {
  if (result.structuredContent !== undefined && result.structuredContent !== null) {
    return result.structuredContent;
  }
  const content = ArrayIsArray(result.content) ? result.content : [];
  const text = joinText(content, true);
  if (text === undefined) return content;
  if (!mayBeJSON(text)) return text;
  try {
    return JSONParse(text);
  } catch {
    return text;
  }
}

/** Thrown when a tool reports an error (`isError: true`): the call reached the tool, and it failed. */
export class MCPToolError extends ErrorBase {
  constructor(server, tool, result) {
    const content = ArrayIsArray(result.content) ? result.content : [];
    const text = joinText(content, false);
    super(`${server}.${tool} failed: ${text !== undefined && text.trim() !== "" ? text : "the tool reported an error"}`);
    this.name = "MCPToolError";
    this.server = server;
    this.tool = tool;
    this.content = content;
    this.structuredContent = result.structuredContent;
  }
}
