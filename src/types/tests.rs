use serde_json::{Value, json};

use super::shape::{MAX_DEPTH, MAX_KEY_BYTES, MAX_NODES, MAX_PROPS, MAX_RESULT_MARKS};
use std::path::Path;

use super::*;

fn profile(i: u64) -> Value {
    let status = ["active", "idle"][(i % 2) as usize];
    let mut v = json!({"id": i, "name": format!("n{i}"), "created": "2026-01-02T03:04:05Z", "status": status});
    if i.is_multiple_of(2) {
        v["email"] = json!("a@example.com");
    }
    v
}

fn key() -> HashKey {
    HashKey::new([9; 16])
}

/// The string shape of field `name` of the top-level object.
fn field<'a>(s: &'a Shape, name: &str) -> &'a shape::StringShape {
    s.object.as_ref().unwrap().fields[name].string.as_ref().unwrap()
}

#[test]
fn shapes_record_kinds_presence_formats_and_candidates_as_keyed_hashes() {
    let mut p = Pending::with_key(key());
    for i in 0..30 {
        p.add("s", "t", "d", &profile(i));
    }
    let s = &p.tools["s.t"].shape;
    let o = s.object.as_ref().unwrap();
    assert_eq!(o.count, 30);
    assert_eq!(o.fields["email"].count, 15);
    assert_eq!(field(s, "created").known_format(), Some("date-time"));
    assert_eq!(field(s, "email").known_format(), Some("email"));
    assert!(field(s, "email").candidates.is_none(), "formatted strings keep no candidates");
    let status = field(s, "status").candidates.as_ref().unwrap();
    assert_eq!(status.len(), 2);
    assert!(status.contains_key(&key().value("active")) && status.contains_key(&key().value("idle")));
    assert_eq!(status[&key().value("idle")].count, 15);
    assert_eq!(status[&key().value("idle")].results, 15, "each profile is a distinct result");
    assert_eq!(status[&key().value("idle")].marks.len(), 15);
    assert!(field(s, "name").candidates.is_none(), "30 distinct names overflow the enum");
    let text = serde_json::to_string(s).unwrap();
    for plain in ["active", "idle", "n17", "a@example.com", "2026-01-02"] {
        assert!(!text.contains(plain), "{plain} leaked into the shape: {text}");
    } // Past the cap only the count stays.
    for i in 30..34 {
        p.add("s", "t", "d", &profile(i));
    }
    let idle = &field(&p.tools["s.t"].shape, "status").candidates.as_ref().unwrap()[&key().value("idle")];
    assert_eq!((idle.results, idle.marks.len()), (MAX_RESULT_MARKS, 0));
}

/// Records `results` of tool `s.t` in one flush and returns the entry as written.
fn record(path: &Path, results: &[Value], t: &Thresholds) -> (Entry, String) {
    let mut p = Pending::with_key(value_key(path).unwrap());
    for r in results {
        p.add("s", "t", "d", r);
    }
    Registry::record(path, &p, t, &mut Vec::new()).unwrap();
    let text = std::fs::read_to_string(path).unwrap();
    let reg = Registry::load(path, &mut Vec::new());
    (reg.tools["s.t"].clone(), text)
}

#[test]
fn a_field_becomes_an_enum_only_when_every_rule_holds() {
    let t = Thresholds::default();
    let kind = |i: usize, v: &str| json!({"i": i, "kind": v});
    let enum_of =
        |e: &Entry| field(&e.shape, "kind").enum_values().map(|v| v.into_iter().map(String::from).collect::<Vec<_>>());
    let case = |results: Vec<Value>| {
        let dir = tempfile::tempdir().unwrap();
        let (e, text) = record(&registry_path(dir.path()), &results, &t);
        (enum_of(&e), text)
    };
    // The same two results twenty times each: two distinct results, not three per value.
    let (values, text) = case((0..40).map(|i| kind(i % 2, ["alpha-state", "beta-state"][i % 2])).collect());
    assert_eq!(values, None);
    assert!(!text.contains("alpha-state"), "{text}");
    // 19 strings: too few observations.
    let (values, text) = case((0..19).map(|i| kind(i, ["alpha-state", "beta-state"][i % 2])).collect());
    assert_eq!(values, None);
    assert!(!text.contains("beta-state"), "{text}");
    // One value, however often.
    let (values, text) = case((0..40).map(|i| kind(i, "alpha-state")).collect());
    assert_eq!(values, None);
    assert!(!text.contains("alpha-state"), "{text}");
    // A value in only two distinct results among 30.
    let (values, text) = case((0..30).map(|i| kind(i, if i < 2 { "rare-state" } else { "alpha-state" })).collect());
    assert_eq!(values, None);
    assert!(!text.contains("rare-state") && !text.contains("alpha-state"), "{text}");
    // A secret-looking value in the set: the place keeps no candidates at all.
    let (values, text) = case((0..30).map(|i| kind(i, if i % 10 == 0 { "ghp_x1" } else { "alpha-state" })).collect());
    assert_eq!(values, None);
    assert!(!text.contains("ghp_x1") && !text.contains("alpha-state"), "{text}");
    // Every rule holds at the 20th string: the values are written, and only then.
    let dir = tempfile::tempdir().unwrap();
    let path = registry_path(dir.path());
    let results: Vec<Value> = (0..20).map(|i| kind(i, ["alpha-state", "beta-state"][i % 2])).collect();
    let (e, text) = record(&path, &results[..19], &t);
    assert_eq!(enum_of(&e), None);
    assert!(!text.contains("alpha-state"), "{text}");
    let (e, text) = record(&path, &results[19..], &t);
    assert!(!text.contains("alpha-state"), "alpha-state was not seen in this flush, so it is not known yet: {text}");
    assert_eq!(enum_of(&e), None, "an enum is complete or not rendered");
    let (e, text) = record(&path, &[kind(20, "alpha-state")], &t);
    assert_eq!(enum_of(&e), Some(vec!["alpha-state".to_string(), "beta-state".to_string()]));
    assert!(text.contains("\"alpha-state\"") && text.contains("\"beta-state\""), "{text}");
    // Stricter rules later: the values are no longer used or written.
    let strict = Thresholds { enums: EnumRules { min_results: 12, ..EnumRules::default() }, ..t };
    let reg = Registry::load(&path, &mut Vec::new()).with_thresholds(&strict);
    assert_eq!(enum_of(&reg.tools["s.t"]), None);
}

#[test]
fn a_result_seen_by_two_processes_counts_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = registry_path(dir.path());
    let same: Vec<Value> = (0..12).map(|i| json!({"kind": (["alpha-state", "beta-state"][i % 2])})).collect();
    record(&path, &same, &Thresholds::default());
    let (e, text) = record(&path, &same, &Thresholds::default());
    let kind = field(&e.shape, "kind").candidates.clone().unwrap();
    assert_eq!(kind.values().map(|c| (c.count, c.results)).collect::<Vec<_>>(), [(12, 1), (12, 1)]);
    assert!(!text.contains("alpha-state"), "{text}");
}

#[test]
fn secrets_and_identifiers_look_sensitive_and_enum_words_do_not() {
    for s in [
        "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
        "sk-proj-abc",
        "eyJhbGciOiJIUzI1NiJ9",
        "AKIAIOSFODNN7EXAMPLE",
        "zed@example.com",
        "a b@corp.io",
        "123e4567-e89b-12d3-a456-426614174000",
        "4111111111111111",
        "acct-00123456",
        "9f86d081884c",
        "Zq8Kx2PmL9vB",
        "Zed-Secret-Value-4711",
    ] {
        assert!(shape::looks_sensitive(s), "{s}");
    }
    for s in ["active", "in_progress", "COMPLETED", "text/plain", "PullRequest", "en-US", "high", "v2", "alpha-state"] {
        assert!(!shape::looks_sensitive(s), "{s}");
    }
}

#[test]
fn a_version_1_registry_loses_its_plaintext_candidates_and_keeps_its_counts() {
    let dir = tempfile::tempdir().unwrap();
    let path = registry_path(dir.path());
    let v1 = json!({
        "format": "agent type registry", "version": 1,
        "tools": {"mem.read_graph": {
            "server": "mem", "tool": "read_graph", "source": "inferred", "quality": "medium",
            "observations": 12, "last_observed": "2026-01-01T00:00:00Z", "definition": "d",
            "consistency": 1.0, "fields": {},
            "shape": {"count": 12, "object": {"count": 12, "fields": {"name": {"count": 12,
                "string": {"count": 12, "values": ["Zed-Secret-Value-4711"]}}}}}
        }}
    });
    std::fs::write(&path, serde_json::to_string_pretty(&v1).unwrap()).unwrap();
    // A reader (no write yet) never sees the old values as an enum.
    let reg = Registry::load(&path, &mut Vec::new());
    assert_eq!(field(&reg.tools["mem.read_graph"].shape, "name").enum_values(), None);
    // The first write drops them; the counts stay and the place collects hashes again.
    let mut p = Pending::with_key(value_key(&path).unwrap());
    p.add("mem", "other", "d", &json!({"x": 1}));
    Registry::record(&path, &p, &Thresholds::default(), &mut Vec::new()).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("Zed-Secret-Value-4711"), "{text}");
    let reg = Registry::load(&path, &mut Vec::new());
    assert_eq!(reg.version, 2);
    let e = &reg.tools["mem.read_graph"];
    assert_eq!((e.observations, field(&e.shape, "name").count), (12, 12));
    assert_eq!(field(&e.shape, "name").candidates.as_ref().map(|c| c.len()), Some(0));
}

/// `n` distinct results whose `kind` alternates between two values: an enum from 20 on.
fn two_kinds(n: usize) -> Vec<Value> {
    (0..n).map(|i| json!({"i": i, "kind": (["alpha-state", "beta-state"][i % 2])})).collect()
}

#[test]
fn the_file_and_key_are_private_and_a_full_reset_forgets_the_key() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let path = registry_path(dir.path());
    let results = two_kinds(24);
    let (e, _) = record(&path, &results, &Thresholds::default());
    assert!(field(&e.shape, "kind").enum_values().is_some());
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(&key::key_path(&path)), 0o600);
    let old = value_key(&path).unwrap();
    Registry::reset(&path, Some(("s", "other")), &mut Vec::new()).unwrap();
    assert_eq!(value_key(&path).unwrap(), old, "resetting one tool keeps the key");
    Registry::reset(&path, None, &mut Vec::new()).unwrap();
    assert!(!key::key_path(&path).exists());
    assert_ne!(value_key(&path).unwrap(), old, "a new key after a full reset");
}

#[test]
fn hashes_made_with_another_key_are_restarted_not_mixed() {
    let dir = tempfile::tempdir().unwrap();
    let path = registry_path(dir.path());
    let results = two_kinds(24);
    let mut p = Pending::with_key(HashKey::new([1; 16]));
    for r in &results {
        p.add("s", "t", "d", r);
    }
    Registry::record(&path, &p, &Thresholds::default(), &mut Vec::new()).unwrap();
    let mut p = Pending::with_key(HashKey::new([2; 16]));
    p.add("s", "t", "d", &results[0]);
    Registry::record(&path, &p, &Thresholds::default(), &mut Vec::new()).unwrap();
    let reg = Registry::load(&path, &mut Vec::new());
    let kind = field(&reg.tools["s.t"].shape, "kind");
    assert_eq!(kind.candidates.as_ref().unwrap().len(), 1, "only the new key's hash");
    assert_eq!(kind.enum_values(), None);
    assert_eq!(reg.key, HashKey::new([2; 16]).id());
}

#[test]
fn quality_levels_follow_the_thresholds() {
    let t = Thresholds::default();
    assert_eq!(quality(0, 1.0, &t), Quality::None);
    assert_eq!(quality(1, 1.0, &t), Quality::Low);
    assert_eq!(quality(9, 1.0, &t), Quality::Low);
    assert_eq!(quality(10, 1.0, &t), Quality::Medium);
    assert_eq!(quality(99, 1.0, &t), Quality::Medium);
    assert_eq!(quality(100, 0.8, &t), Quality::High);
    assert_eq!(quality(500, 0.79, &t), Quality::Medium);
}

#[test]
fn hostile_results_stay_within_the_caps() {
    // Deep nesting (as deep as serde_json parses a server's answer: 128 levels).
    let mut deep = json!(1);
    for _ in 0..120 {
        deep = json!({ "a": deep });
    }
    let s = Shape::of(&deep);
    let mut depth = 0;
    let mut cur = &s;
    while let Some(o) = &cur.object {
        cur = &o.fields["a"];
        depth += 1;
    }
    assert!(depth <= MAX_DEPTH, "{depth}");
    assert_eq!(cur.unrecorded, 1);
    // 10k keys that are not ids.
    let wide: serde_json::Map<String, Value> = (0..10_000).map(|i| (format!("field_{i}_x"), json!(i))).collect();
    let s = Shape::of(&Value::Object(wide));
    let o = s.object.as_ref().unwrap();
    assert!(o.fields.len() <= MAX_PROPS);
    // 10k keys are a record anyway (more than the property cap).
    assert!(o.record.is_some() || o.overflow);
    // A huge array of varied objects.
    let huge: Vec<Value> = (0..200_000).map(|i| json!({ format!("k{}", i % 5000): i })).collect();
    let s = Shape::of(&Value::Array(huge));
    assert!(s.nodes() <= MAX_NODES + 1, "{}", s.nodes());
    // Merging many hostile shapes stays bounded too.
    let mut acc = Shape::default();
    for j in 0..50 {
        let obj: serde_json::Map<String, Value> =
            (0..150).map(|i| (format!("f{j}_{i}_name"), json!({"x": i}))).collect();
        acc.merge(&Shape::of(&Value::Object(obj)));
    }
    assert!(acc.nodes() <= MAX_NODES + 1, "{}", acc.nodes());
    assert!(serde_json::to_string(&acc).unwrap().len() < 400_000);
}

#[test]
fn id_keyed_objects_become_records() {
    let obj: serde_json::Map<String, Value> =
        (0..20).map(|i| (format!("{}", 1000 + i), json!({"title": "x", "done": i % 2 == 0}))).collect();
    let s = Shape::of(&Value::Object(obj));
    let o = s.object.as_ref().unwrap();
    assert!(o.fields.is_empty());
    let rec = o.record.as_ref().unwrap();
    assert!(rec.object.as_ref().unwrap().fields.contains_key("done"));
}

#[test]
fn the_file_merges_across_writers_and_a_changed_definition_starts_over() {
    let dir = tempfile::tempdir().unwrap();
    let path = registry_path(dir.path());
    let t = Thresholds { low: 1, medium: 3, high: 5, consistency: 0.8, enums: EnumRules::default() };
    let mut warnings = Vec::new();
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let path = path.clone();
            std::thread::spawn(move || {
                for i in 0..5 {
                    let mut p = Pending::default();
                    p.add("s", "t", "d1", &profile(i));
                    Registry::record(&path, &p, &t, &mut Vec::new()).unwrap();
                }
            })
        })
        .collect();
    for th in threads {
        th.join().unwrap();
    }
    let reg = Registry::load(&path, &mut warnings);
    let e = reg.get("s", "t", Some("d1")).unwrap();
    assert_eq!(e.observations, 20);
    assert_eq!(e.quality, Quality::High);
    assert_eq!(e.source, Source::Inferred);
    assert_eq!(e.fields["email"].presence, 0.6);
    let mut p = Pending::default();
    p.add("s", "t", "d2", &json!("text"));
    let changes = Registry::record(&path, &p, &t, &mut warnings).unwrap();
    assert_eq!(changes[0].after, Quality::Low);
    let reg = Registry::load(&path, &mut warnings);
    assert!(reg.get("s", "t", Some("d1")).is_none());
    assert_eq!(reg.get("s", "t", Some("d2")).unwrap().observations, 1);
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn a_corrupt_or_foreign_file_is_set_aside_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let path = registry_path(dir.path());
    for bad in ["{not json", r#"{"something": "else"}"#] {
        std::fs::write(&path, bad).unwrap();
        let mut warnings = Vec::new();
        let mut p = Pending::default();
        p.add("s", "t", "d", &json!({"a": 1}));
        Registry::record(&path, &p, &Thresholds::default(), &mut warnings).unwrap();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("moved it to"), "{warnings:?}");
        let reg = Registry::load(&path, &mut warnings);
        assert_eq!(reg.tools.len(), 1);
        std::fs::remove_file(&path).unwrap();
    }
    let aside = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".corrupt-"));
    assert!(aside.count() >= 1);
}

#[test]
fn long_field_names_are_not_recorded() {
    let long = "k".repeat(MAX_KEY_BYTES + 1);
    let fits = "f".repeat(MAX_KEY_BYTES);
    let s = Shape::of(&json!({ long.clone(): 1, fits.clone(): 2 }));
    let o = s.object.as_ref().unwrap();
    assert!(o.overflow, "the object is marked as having more fields than recorded");
    assert_eq!(o.fields.keys().collect::<Vec<_>>(), vec![&fits]);
    // Nor through a merge of a shape that has one (a registry written before the cap).
    let mut foreign = Shape::of(&json!({ "a": 1 }));
    foreign.object.as_mut().unwrap().fields.insert(long.clone(), Shape::of(&json!(1)));
    let mut mine = Shape::of(&json!({ "a": 2 }));
    mine.merge(&foreign);
    assert!(!mine.object.as_ref().unwrap().fields.contains_key(&long));
    assert!(mine.object.as_ref().unwrap().overflow);
}

/// A field name of exactly `MAX_KEY_BYTES` starting with `prefix`.
fn at_cap(prefix: String) -> String {
    let mut name = prefix;
    name.extend(std::iter::repeat_n('k', MAX_KEY_BYTES.saturating_sub(name.len())));
    name
}

/// 2,000 fields with names at the cap, with enum values: a shape over `MAX_SHAPE_BYTES`.
fn wide(seed: &str) -> Value {
    let outer: serde_json::Map<String, Value> = (0..200)
        .map(|i| {
            let inner: serde_json::Map<String, Value> =
                (0..9).map(|j| (at_cap(format!("{seed}{i}-{j}-")), json!("enum-ish value"))).collect();
            (at_cap(format!("{seed}{i}-")), Value::Object(inner))
        })
        .collect();
    Value::Object(outer)
}

#[test]
fn a_result_whose_shape_is_too_large_is_skipped_not_recorded() {
    let big = Shape::of(&wide("a"));
    assert!(big.encoded_len() > MAX_SHAPE_BYTES, "{}", big.encoded_len());
    let mut p = Pending::default();
    assert!(p.add("s", "t", "d", &json!({"ok": 1})));
    assert!(!p.add("s", "t", "d", &wide("a")), "an oversized result was recorded");
    assert_eq!(p.tools["s.t"].observations, 1);
    assert_eq!(p.skipped["s.t"], 1);
    assert!(p.tools["s.t"].shape.encoded_len() <= MAX_SHAPE_BYTES);
    // Results that fit one by one but not together: the one that would pass the cap is skipped.
    let half = |seed: &str| {
        let Value::Object(m) = wide(seed) else { unreachable!() };
        Value::Object(m.into_iter().take(60).collect())
    };
    let mut p = Pending::default();
    let mut recorded = 0;
    for seed in ["a", "b", "c", "d", "e"] {
        recorded += usize::from(p.add("s", "t", "d", &half(seed)));
    }
    assert!((1..5).contains(&recorded), "{recorded}");
    assert!(p.tools["s.t"].shape.encoded_len() <= MAX_SHAPE_BYTES);
    // And when merged into a file entry near the cap, the file keeps its entry.
    let dir = tempfile::tempdir().unwrap();
    let path = registry_path(dir.path());
    let mut warnings = Vec::new();
    Registry::record(&path, &p, &Thresholds::default(), &mut warnings).unwrap();
    let before = Registry::load(&path, &mut warnings).tools["s.t"].clone();
    let mut again = Pending::default();
    assert!(again.add("s", "t", "d", &half("z")));
    Registry::record(&path, &again, &Thresholds::default(), &mut warnings).unwrap();
    let after = Registry::load(&path, &mut warnings).tools["s.t"].clone();
    assert!(after.shape.encoded_len() <= MAX_SHAPE_BYTES);
    assert!(after.observations == before.observations || after.observations == before.observations + 1);
    assert!(warnings.iter().any(|w| w.contains("s.t") && w.contains("not recorded")), "{warnings:?}");
}

#[test]
fn the_file_never_grows_past_what_is_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = registry_path(dir.path());
    let t = Thresholds::default();
    let cap = 64 << 10;
    let mut warnings = Vec::new();
    let mut p = Pending::default();
    for i in 0..20 {
        p.add("s", "kept", "d", &profile(i));
    }
    Registry::record_within(&path, &p, &t, &mut warnings, cap).unwrap();
    // Tools whose shapes together pass the cap: the ones that grow the file most are left out.
    let mut p = Pending::default();
    for n in 0..8 {
        let fields: serde_json::Map<String, Value> = (0..150).map(|i| (format!("field_{n}_{i}"), json!(i))).collect();
        p.add("s", &format!("t{n}"), "d", &Value::Object(fields));
    }
    p.add("s", "kept", "d", &profile(20));
    Registry::record_within(&path, &p, &t, &mut warnings, cap).unwrap();
    assert!(std::fs::metadata(&path).unwrap().len() <= cap);
    let reg = Registry::load(&path, &mut warnings);
    assert_eq!(reg.tools["s.kept"].observations, 21, "what was learned before is kept");
    assert!(reg.tools.len() < 9, "every tool fitted: {}", reg.tools.len());
    assert!(warnings.iter().any(|w| w.contains("not recorded")), "{warnings:?}");
    assert!(!warnings.iter().any(|w| w.contains("moved it")), "{warnings:?}");
}

#[test]
fn two_bad_files_in_one_second_are_both_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = registry_path(dir.path());
    for bad in ["{first", "{second"] {
        std::fs::write(&path, bad).unwrap();
        let mut p = Pending::default();
        p.add("s", "t", "d", &json!({"a": 1}));
        Registry::record(&path, &p, &Thresholds::default(), &mut Vec::new()).unwrap();
    }
    let mut kept: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".corrupt-"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    kept.sort();
    assert_eq!(kept, ["{first", "{second"]);
}

#[test]
fn a_reader_without_the_lock_moves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = registry_path(dir.path());
    std::fs::write(&path, "{bad").unwrap();
    let mut warnings = Vec::new();
    assert!(Registry::load(&path, &mut warnings).tools.is_empty());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "{bad");
    assert!(warnings[0].contains("is corrupt") && warnings[0].contains("ignoring it"), "{warnings:?}");
}
