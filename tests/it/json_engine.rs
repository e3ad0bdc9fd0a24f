//! `JSON.stringify` and `JSON.parse` in the embedded engine, checked against `node`: each test
//! runs the same JavaScript with the real `agent exec` and with `node` and compares every line
//! the two print. The engine's JSON code has fast paths (a plain object's keys read from its
//! shape, strings quoted straight into the output, parsed objects made with the shape of an
//! earlier object with the same keys, keys matched in the source text), so the scripts play a
//! hostile script: inputs built to make a fast path differ from the general one (keys that
//! change after the first N objects, keys written with escapes or in other encodings that look
//! like an expected key, objects mutated by `toJSON` and getters while they are serialised).
//! Errors are compared by their name only (the messages are the engine's own).
//!
//! `node` must be on PATH (CI has it: other tests use npm servers); a missing `node` fails.

use crate::support::Project;

use std::process::Command;

/// What both runtimes evaluate first: `show(label, f)` records `label` and `f()` (a string result
/// as JSON, so control characters and lone surrogates compare exactly, or `throws <name>`), and
/// `done()` prints every record.
const PRELUDE: &str = r#"
const out = [];
const show = (label, f) => {
  let r;
  try { r = f(); r = typeof r === 'string' ? JSON.stringify(r) : String(r); }
  catch (e) { r = 'throws ' + (e && e.name); }
  out.push(label + ' ' + r);
};
const S = (v, ...a) => JSON.stringify(v, ...a);
const done = () => console.log(out.join('\n'));
"#;

/// Runs `body` (after [`PRELUDE`], ending with `done()`) in `agent exec` and in `node`, and
/// asserts that both printed the same lines.
#[track_caller]
fn assert_same_as_node(name: &str, body: &str) {
    let script = format!("{PRELUDE}\n{body}\ndone();\n");
    let p = Project::new();
    let js = p.write(&format!("{name}.mjs"), &script);
    let node = Command::new("node").arg(&js).current_dir(p.path()).output().unwrap_or_else(|e| {
        panic!("`node` could not be run ({e}); these tests compare agent's engine with node, which must be on PATH")
    });
    assert!(node.status.success(), "node failed on {name}:\n{}", String::from_utf8_lossy(&node.stderr));
    let node_out = String::from_utf8_lossy(&node.stdout).into_owned();
    let agent = p.run_stdin(&["exec", "--memory-limit", "1GB", "--timeout", "120s", "-"], &script);
    agent.assert_ok();
    let (a, n): (Vec<&str>, Vec<&str>) = (agent.stdout.lines().collect(), node_out.lines().collect());
    assert!(n.len() > 1, "node printed nothing for {name}");
    for (i, (a, n)) in a.iter().zip(&n).enumerate() {
        assert_eq!(a, n, "{name}: line {} differs (left: agent, right: node)", i + 1);
    }
    assert_eq!(a.len(), n.len(), "{name}: agent printed {} lines, node {}", a.len(), n.len());
}

#[test]
fn stringify_escapes_control_characters_and_lone_surrogates_as_node_does() {
    assert_same_as_node(
        "escapes",
        r#"
let all = ''; for (let c = 0; c < 0x100; c++) all += String.fromCharCode(c);
show('latin1', () => S(all));
show('latin1-key', () => S({ [all]: all }));
show('wide', () => S('\u2028\u2029\u0100\uffff\u00e9 caf\u00e9 "q" \\ \n\u0007\u001f'));
show('wide-key', () => S({ ['k\u0101\n"']: 1, ['\u00ff']: 2, ['\u0000']: 3 }));
show('lone', () => S(['\ud800', '\udfff', 'a\ud83dz', '\ude00b', '\ud83d\ude00', '\ude00\ud83d', 'x\ud83d', '\udbff\udfff']));
show('lone-key', () => S({ '\ud800': 1, '\ud83d\ude00': 2, 'a\udc00': 3 }));
// ropes: a surrogate pair split between the two halves of a concatenation is still one pair
const hi = '\ud83d'.repeat(3), lo = '\ude00'.repeat(3);
show('rope-pair', () => S([hi + lo, 'a'.repeat(40) + hi, lo + 'b'.repeat(40), ('x'.repeat(50) + '\ud83d') + ('\ude00' + 'y'.repeat(50))]));
let rope = ''; for (let i = 0; i < 300; i++) rope += i % 2 ? '"\\' : '\u00e9\n';
show('rope-escapes', () => S({ [rope]: rope }));
show('unicode-keys', () => S({ 'ключ': 1, '键': [2], '🔑': { 'é': 3 }, '': 4 }));
"#,
    );
}

#[test]
fn stringify_numbers_and_key_order_match_node() {
    assert_same_as_node(
        "numbers",
        r#"
show('numbers', () => S([0, -0, 1, -1, 2147483647, -2147483648, 2147483648, -2147483649, NaN, Infinity, -Infinity, 1e21, 1e20, 123456789012345680000, 1e-7, 1e-6, 5e-324, 1.5e-10, 0.1 + 0.2, -1e-7, 1.7976931348623157e308]));
show('numbers-obj', () => S({ a: -0, b: NaN, c: 1e21, d: 1e-7, e: new Number(3), f: new String('s'), g: new Boolean(false) }));
show('top-level', () => [S(-0), S(NaN), S('x'), S(null), S(undefined), S(() => 1), S(Symbol('s')), S(true), S(7)].join('|'));
// integer-like keys first, ascending, then the other strings in insertion order
show('int-keys', () => S({ b: 1, 2: 2, a: 3, 1: 4, '-1': 5, '01': 6, 4294967294: 7, 4294967295: 8, 1.5: 9, 0: 10 }));
const late = { z: 1, y: 2 }; late[5] = 3; late.x = 4; late[0] = 5;
show('int-keys-late', () => S(late));
// the same key set, then one with an index key added after the others
const same = []; for (let i = 0; i < 50; i++) { const o = { b: i, a: i }; if (i === 40) o[3] = 'three'; same.push(o); }
show('int-keys-shared', () => S(same.slice(38, 42)));
"#,
    );
}

#[test]
fn stringify_to_json_replacer_and_indent_match_node() {
    assert_same_as_node(
        "replacer",
        r#"
show('toJSON', () => S({ a: { toJSON(k) { return 'key:' + k; } }, b: [{ toJSON(k) { return typeof k + k; } }], d: new Date(0) }));
show('toJSON-top', () => S({ toJSON(k) { return [k, typeof k]; } }));
show('toJSON-proto', () => { class T { constructor(v) { this.v = v; } toJSON(k) { return k + '=' + this.v; } } return S({ x: new T(1), y: [new T(2)] }); });
show('replacer-fn', () => S({ a: 1, b: [1, 2, { c: 3 }], d: 'x' }, function (k, v) { return typeof v === 'number' ? v * 10 + ':' + k + ':' + Array.isArray(this) : v; }));
show('replacer-keys', () => { const keys = []; S({ a: [10, [20]], b: { c: 1 } }, (k, v) => (keys.push(typeof k + ':' + k), v)); return keys.join(','); });
show('replacer-drop', () => S({ a: 1, b: 2, c: [1, 2] }, (k, v) => (k === 'b' || k === '1' ? undefined : v)));
show('replacer-array', () => S({ a: 1, b: 2, c: { a: 3, d: 4 }, 1: 'one' }, ['c', 'a', 1, 'a', new String('b'), {}]));
show('indent-num', () => S({ a: [1, { b: 2 }, []], c: {} }, null, 4));
show('indent-big', () => S({ a: [1] }, null, 20));
show('indent-str', () => S({ a: [1, { b: 2 }], c: 'x' }, null, '--tab--tab--'));
show('indent-obj', () => S([{ a: 1 }], null, new Number(2)));
show('nested', () => S({ a: [[[]], [{}], [{ b: [null, undefined, () => 1, Symbol('x')] }]], u: undefined, f() {}, s: Symbol('t'), [Symbol('k')]: 1 }));
const sp = [1, , 3]; sp.extra = 'no';
show('sparse', () => S(sp));
"#,
    );
}

#[test]
fn stringify_of_objects_mutated_while_serialised_and_of_cycles_matches_node() {
    assert_same_as_node(
        "mutation",
        r#"
const g = Object.create({ inherited: 1 }, { hidden: { value: 2, enumerable: false }, shown: { value: 3, enumerable: true } });
Object.defineProperty(g, 'getter', { get() { return 'got'; }, enumerable: true });
show('props', () => S(g));
// keys are taken before values are read: a deleted key is skipped, an added one is not written
const del = { a: 1, b: { toJSON() { delete del.c; del.d = 9; return 'b'; } }, c: 3 };
show('delete-during', () => S(del));
const proto = { c: 'from-proto' }; const del2 = Object.create(proto); del2.a = { toJSON() { delete del2.c; return 1; } }; del2.c = 'own';
show('delete-proto', () => S(del2));
const hide = { a: { toJSON() { Object.defineProperty(hide, 'b', { enumerable: false }); return 0; } }, b: 'still' };
show('unenumerable-during', () => S(hide));
const getters = { get a() { delete this.b; return 'a'; }, b: 'b', get c() { this.e = 1; return 'c'; }, d: 'd' };
show('getter-mutates', () => S(getters));
const cyc = { a: 1 }; cyc.self = cyc;
show('cycle', () => S(cyc));
const cyca = [1]; cyca.push([cyca]);
show('cycle-array', () => S(cyca));
show('cycle-toJSON', () => { const o = {}; o.x = { toJSON() { return o; } }; return S(o); });
show('not-cycle', () => { const o = { x: 1 }; return S([o, o, { o }]); });
show('bigint', () => S({ a: 1n }));
class P { constructor() { this.b = 1; this.a = 2; } get c() { return 3; } }
show('class', () => S([new P(), new Map([[1, 2]]), new Set([1]), /re/g, new Error('e')]));
show('proxy', () => S(new Proxy({ a: 1, b: 2 }, { get: (t, k) => (k === 'toJSON' ? undefined : t[k] * 2) })));
show('typed', () => S([new Uint8Array([1, 2]), new Float64Array([0.5])]));
show('arguments', () => (function () { return S(arguments); })(1, 'two'));
"#,
    );
}

#[test]
fn parse_reviver_duplicates_and_malformed_input_match_node() {
    assert_same_as_node(
        "parse",
        r#"
show('reviver', () => S(JSON.parse('{"a":1,"b":[1,2,{"c":3}],"d":{"e":"x"}}', function (k, v) { return typeof v === 'number' ? v + 1 : k === 'e' ? undefined : v; })));
show('reviver-order', () => { const seen = []; JSON.parse('{"b":1,"2":[1],"a":{"1":0,"z":0}}', (k, v) => (seen.push(k), v)); return seen.join(','); });
show('reviver-shared', () => S(JSON.parse('[{"a":1,"b":2},{"a":3,"b":4},{"a":5,"b":6,"a":7}]', (k, v) => (k === 'b' ? v * 100 : v))));
show('duplicate', () => S(JSON.parse('{"a":1,"b":2,"a":3,"c":{"x":1,"x":[2]},"b":null}')));
show('dup-order', () => Object.keys(JSON.parse('{"z":1,"y":2,"z":3}')).join());
show('proto-key', () => { const o = JSON.parse('{"__proto__":{"x":1},"a":2}'); return S([Object.getPrototypeOf(o) === Object.prototype, Object.keys(o), o.__proto__]); });
show('proto-key-shared', () => { const a = JSON.parse('[{"__proto__":1,"b":2},{"__proto__":3,"b":4}]'); return S(a.map((o) => [Object.getPrototypeOf(o) === Object.prototype, Object.keys(o), o.__proto__])); });
show('parse-num', () => S(JSON.parse('[0,-0,1e21,1E-7,-0.0,123456789012345678901234567890,5e-324,1e400,-1e400,0.1,2147483647,2147483648,-2147483649]').map((x) => (Object.is(x, -0) ? '-0' : x))));
show('parse-str', () => S(JSON.parse('["\\u0000\\ud800\\udc00\\ud83d\\\\\\/\\b\\f\\n\\r\\t","é\u2028😀","\\u00e9","\u007f"]')));
show('parse-keys', () => S(Object.keys(JSON.parse('{"b":1,"10":2,"a":3,"2":4,"é":5,"":6,"\\u0061x":7}'))));
for (const bad of ['', ' ', '{', '[1,]', '{"a":1,}', "{'a':1}", '01', '1.', '.5', '+1', 'NaN', '"\\x41"', '"a\nb"', '[1]x', '{"a"1}', 'tru', '"\\ud800', '{"a":1 "b":2}', '\u00a01', '{"a":1,"a"}', '[{"a":1},{"a":}]', '{,}', '{"a":1,,"b":2}', '"\\u12"', '{"a":[}'])
  show('parse-bad ' + JSON.stringify(bad), () => JSON.parse(bad));
show('parse-ws', () => S(JSON.parse(' \t\r\n[ 1 , { "a" : [ ] , "b"\n:\t{ } } ]\n ')));
"#,
    );
}

#[test]
fn parse_of_objects_whose_keys_change_after_the_first_ones_matches_node() {
    assert_same_as_node(
        "shapes",
        r#"
// one key set for many objects (the path that reuses an earlier object's shape) ...
const shared = []; for (let i = 0; i < 2000; i++) shared.push({ id: i, name: 'n' + i, tags: ['t' + (i % 3)], ok: i % 2 === 0, v: i / 8 });
const sharedText = S(shared);
show('shared', () => { const b = JSON.parse(sharedText); return sharedText.length + ':' + (S(b) === sharedText) + ':' + S(b[1999]) + S(Object.keys(b[7])); });
// ... then key sets that differ after the first N: a key more, a key fewer, reordered, renamed
const keyed = '[' + Array.from({ length: 3000 }, (_, i) =>
  i < 1000 ? '{"a":1,"b":2,"c":3}' : i < 1500 ? '{"a":1,"b":2,"d":3}' : i < 2000 ? '{"a":1,"b":2}' : i < 2500 ? '{"a":1,"b":2,"c":3,"e":4}' : '{"a":1,"c":3,"b":2,"a":4}').join(',') + ']';
show('keyed', () => { const b = JSON.parse(keyed); return S([0, 999, 1000, 1499, 1500, 1999, 2000, 2499, 2500, 2999].map((i) => Object.keys(b[i]).join('') + S(b[i]))); });
// a key equal to the expected one once unescaped, a key the expected one is a prefix of, keys
// whose UTF-8 bytes spell the Latin-1 characters of an expected key, an index key
const tricky = '[' + ['{"id":1,"\\u00c3\\u00a9":2}', '{"id":1,"Ã©":2}', '{"id":1,"é":2}', '{"\\u0069d":3,"Ã©":4}', '{"idx":5,"Ã©":6}', '{"id":7,"Ã":8}',
  '{"id":9,"Ã©\\u0000":10}', '{"id":11,"Ã©":12,"7":13}', '{"id":14,"Ã©":15}', '{"id":16,"\\"":17}', '{"id":18,"\\\\":19}', '{"id":20,"Ã©": 21 }'].join(',') + ']';
show('tricky', () => { const b = JSON.parse(tricky); return S(b.map((o) => [Object.keys(o), Object.values(o)])); });
// keys past the number collected before the object is made, shared and not
const wide = (n, extra) => '{' + Array.from({ length: n }, (_, i) => '"k' + i + '":' + i).join(',') + extra + '}';
show('many-keys', () => S(JSON.parse('[' + [wide(15, ''), wide(16, ''), wide(17, ''), wide(40, ''), wide(40, ''), wide(17, ',"k3":"dup"'), wide(16, ',"k0":"dup"')].join(',') + ']').map((o) => S(o))));
// objects nested in objects at several depths, the inner key sets varying by depth
const nest = (d) => (d === 0 ? { leaf: true } : { depth: d, child: nest(d - 1), ['k' + (d % 3)]: d });
const nested = Array.from({ length: 50 }, (_, i) => nest(i % 7));
const nestedText = S(nested);
show('nested-shapes', () => { const b = JSON.parse(nestedText); return (S(b) === nestedText) + ':' + S(b[13]); });
// stringify of objects that share a shape, then get a key deleted, an index key, a getter
const varying = []; for (let i = 0; i < 3000; i++) {
  const o = { id: i, name: 'n' + i };
  if (i >= 1000) o.extra = i;
  if (i >= 2000) { delete o.name; o.name = 'moved'; }
  if (i % 777 === 0) o[i] = 'index-key';
  if (i === 2500) Object.defineProperty(o, 'id', { enumerable: false });
  if (i === 2600) Object.defineProperty(o, 'late', { get() { return 'getter'; }, enumerable: true });
  if (i > 2900) { o.last = 1; o.id = 'x'; }
  varying.push(o);
}
const varyingText = S(varying);
show('varying', () => varyingText.length + ':' + S(varying.slice(995, 1005)) + S(varying.slice(1995, 2005)) + S(varying[1554]) + S(varying[2500]) + S(varying[2600]) + S(varying.slice(2998)));
show('varying-parse', () => { const b = JSON.parse(varyingText); return S([b[0], b[999], b[1000], b[1554], b[2000], b[2331], b[2600], b[2999]].map((o) => [o, Object.keys(o)])); });
"#,
    );
}

#[test]
fn deep_and_big_inputs_match_node() {
    assert_same_as_node(
        "big",
        r#"
let deep = 'x'; for (let i = 0; i < 500; i++) deep = [deep, { k: deep === 'x' ? 1 : i }];
const deepText = S(deep);
show('deep', () => deepText.length + ':' + (S(JSON.parse(deepText)) === deepText));
show('deep-parse', () => { const t = '['.repeat(1000) + ']'.repeat(1000); return S(JSON.parse(t)).length; });
show('deep-objects', () => { const t = '{"a":'.repeat(1000) + '1' + '}'.repeat(1000); return S(JSON.parse(t)) === t; });
// a few MB: strings with escapes and non-ASCII, floats, nested arrays, indent
const big = []; for (let i = 0; i < 40000; i++) big.push({ i, s: 'v\u00e9\n"' + i, d: i * 0.37, a: [i, -i, 'x' + (i % 10)], n: null, t: i % 2 === 0, u: i % 5 === 0 ? '\u4e2d' : 'ascii', ['k' + (i % 3)]: i });
for (const indent of [undefined, 1, '\t']) {
  const text = S(big, null, indent);
  let h = 0; for (let i = 0; i < text.length; i++) h = (h * 31 + text.charCodeAt(i)) | 0;
  show('big ' + S(indent), () => text.length + ':' + h + ':' + (S(JSON.parse(text), null, indent) === text));
}
"#,
    );
}

/// The collector's threshold grows with the heap, but with a memory limit the next collection
/// comes before the limit: a script (a hostile or just a careless one) that keeps most of its
/// heap live and makes garbage in cycles (which only the collector frees) runs to the end. With
/// the threshold at twice the heap and no cap, the garbage reached the limit before any
/// collection and the script failed with "memory limit of 64 MB exceeded".
#[test]
fn cyclic_garbage_near_the_memory_limit_is_collected_before_the_limit() {
    let p = Project::new();
    let script = "const live = []; for (let i = 0; i < 165000; i++) live.push({ i, s: 'x' + i, a: [i] });\n\
                  let made = 0;\n\
                  for (let round = 0; round < 2000000; round++) { const o = { round, pad: [round, round + 1] }; o.self = o; made++; }\n\
                  console.log(live.length, made);\n";
    let r = p.run_stdin(&["exec", "--memory-limit", "64MB", "--timeout", "120s", "-"], script);
    r.assert_ok();
    assert_eq!(r.stdout, "165000 2000000\n");
}
