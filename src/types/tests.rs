use serde_json::{Value, json};

use super::shape::{MAX_DEPTH, MAX_KEY_BYTES, MAX_NODES, MAX_PROPS};
use super::*;

fn profile(i: u64) -> Value {
    let status = ["active", "idle"][(i % 2) as usize];
    let mut v = json!({"id": i, "name": format!("n{i}"), "created": "2026-01-02T03:04:05Z", "status": status});
    if i.is_multiple_of(2) {
        v["email"] = json!("a@example.com");
    }
    v
}

#[test]
fn shapes_record_kinds_presence_formats_and_small_enums_not_values() {
    let mut p = Pending::default();
    for i in 0..30 {
        p.add("s", "t", "d", &profile(i));
    }
    let s = &p.tools["s.t"].shape;
    let o = s.object.as_ref().unwrap();
    assert_eq!(o.count, 30);
    assert_eq!(o.fields["email"].count, 15);
    assert_eq!(o.fields["created"].string.as_ref().unwrap().known_format(), Some("date-time"));
    assert_eq!(o.fields["email"].string.as_ref().unwrap().known_format(), Some("email"));
    assert!(o.fields["email"].string.as_ref().unwrap().values.is_none(), "formatted strings keep no values");
    let status = o.fields["status"].string.as_ref().unwrap().values.as_ref().unwrap();
    assert_eq!(status.len(), 2);
    assert!(o.fields["name"].string.as_ref().unwrap().values.is_none(), "30 distinct names overflow the enum");
    let text = serde_json::to_string(s).unwrap();
    assert!(!text.contains("n17"), "a value leaked into the shape: {text}");
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
    let t = Thresholds { low: 1, medium: 3, high: 5, consistency: 0.8 };
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
