//! Unit tests of the ranking: field weights, the extra signals, the usage prior, filters.

use std::collections::HashMap;

use super::*;

fn doc(server: &str, tool: &str, description: &str) -> Doc {
    Doc { server: server.into(), tool: tool.into(), description: description.into(), ..Default::default() }
}

fn names(index: &Index, hits: &[Hit]) -> Vec<String> {
    hits.iter().map(|h| format!("{}.{}", index.docs()[h.doc].server, index.docs()[h.doc].tool)).collect()
}

fn top(index: &Index, query: &str) -> String {
    names(index, &index.search(query, 1, &[])).into_iter().next().unwrap_or_default()
}

#[test]
fn a_name_match_outweighs_title_params_and_description() {
    let docs = vec![
        doc("s", "fetch_thing", "Returns the deployment of a service."),
        Doc { title: "Deployment".into(), ..doc("s", "fetch_other", "Returns another object.") },
        Doc { params: vec![("deployment".into(), "which one".into())], ..doc("s", "fetch_third", "Returns a third.") },
        doc("s", "deployment", "Returns something else."),
    ];
    let index = Index::build(docs);
    let hits = index.search("deployment", 10, &[]);
    assert_eq!(
        names(&index, &hits),
        ["s.deployment", "s.fetch_other", "s.fetch_third", "s.fetch_thing"],
        "name > title > params > description"
    );
}

#[test]
fn the_field_weights_decide_without_the_extra_signals() {
    let docs = vec![
        doc("s", "one", "Returns the deployment."),
        Doc { title: "Deployment".into(), ..doc("s", "two", "Returns it.") },
    ];
    let plain = Ranking { boosts: false, ..Ranking::default() };
    let index = Index::build(docs.clone()).with_ranking(plain.clone());
    assert_eq!(top(&index, "deployment"), "s.two");
    let mut weights = plain.weights;
    weights[DESCRIPTION] = 10.0;
    let index = Index::build(docs).with_ranking(Ranking { weights, ..plain });
    assert_eq!(top(&index, "deployment"), "s.one");
}

#[test]
fn stemming_and_identifier_splitting_reach_the_name() {
    let index = Index::build(vec![
        doc("gh", "get_job_logs", "Download output of a workflow job."),
        doc("gh", "list_labels", "Labels of a repository."),
        doc("kube", "kubectl_get", "Get resources."),
        doc("api", "API-getUser", "Get the user."),
    ]);
    assert_eq!(top(&index, "job log"), "gh.get_job_logs");
    assert_eq!(top(&index, "listing labelled things"), "gh.list_labels");
    assert_eq!(top(&index, "get user"), "api.API-getUser");
    assert_eq!(top(&index, "kubectl"), "kube.kubectl_get");
}

#[test]
fn an_exact_and_a_partial_name_match_are_boosted_on_top_of_bm25() {
    // Without the signals, the long description that repeats the words wins; with them, the
    // tool whose name is the query.
    let docs = vec![
        doc(
            "s",
            "search_pull_requests",
            "Search pull requests. Pull requests by author; list pull requests with a query.",
        ),
        doc("s", "list_pull_requests", "Pull requests of a repository."),
        doc("s", "get_me", "The user."),
    ];
    let plain = Index::build(docs.clone()).with_ranking(Ranking { boosts: false, ..Ranking::default() });
    let plain_hits = plain.search("list pull requests", 3, &[]);
    let boosted = Index::build(docs);
    let hits = boosted.search("list pull requests", 3, &[]);
    assert_eq!(names(&boosted, &hits)[0], "s.list_pull_requests");
    let ratio = |hs: &[Hit], d: usize| hs.iter().find(|h| h.doc == d).map(|h| h.score).unwrap_or(0.0);
    assert!(
        ratio(&hits, 1) / ratio(&hits, 0) > ratio(&plain_hits, 1) / ratio(&plain_hits, 0),
        "the exact name gains on the partial one"
    );
    assert_eq!(hits.len(), 2, "get_me matches no word");
}

#[test]
fn synonyms_of_verbs_and_abbreviations_match() {
    let index = Index::build(vec![
        doc("gh", "get_file_contents", "Contents of a file."),
        doc("gh", "delete_file", "Remove a file."),
        doc("gh", "create_pull_request", "Open a new pull request."),
        doc("gh", "list_branches", "Branches."),
    ]);
    assert_eq!(top(&index, "show me a file"), "gh.get_file_contents");
    assert_eq!(top(&index, "make a PR"), "gh.create_pull_request");
    let plain = index.clone().with_ranking(Ranking { synonyms: false, ..Ranking::default() });
    assert!(plain.search("fetch", 5, &[]).is_empty(), "`fetch` alone is only a synonym");
    assert_eq!(top(&index, "fetch"), "gh.get_file_contents");
}

#[test]
fn the_category_is_the_server_and_a_shared_prefix() {
    let index = Index::build(vec![
        doc("kube", "kubectl_get", "Resources."),
        doc("kube", "kubectl_apply", "Resources."),
        doc("kube", "kubectl_logs", "Resources."),
        doc("kube", "helm_install", "Chart."),
        doc("other", "get", "Resources."),
    ]);
    let in_category = |doc: usize, term: &str| index.info[doc].category_terms.contains(&index.vocab[term]);
    assert!(in_category(0, "kube") && in_category(0, "kubectl"));
    assert!(!in_category(3, "helm"), "a prefix of one tool is no category");
    // The server's name in the query prefers its tools.
    assert_eq!(top(&index, "get resources kube"), "kube.kubectl_get");
}

#[test]
fn the_usage_prior_breaks_near_ties_and_can_be_off() {
    let docs = vec![doc("a", "read_file", "Read a file."), doc("b", "read_file", "Read a file.")];
    let index = Index::build(docs.clone());
    assert_eq!(top(&index, "read file"), "a.read_file", "ties go to the first document");
    let counts = HashMap::from([(("b".to_string(), "read_file".to_string()), 7u64)]);
    let used = Index::build(docs.clone()).with_usage(&counts);
    assert_eq!(top(&used, "read file"), "b.read_file");
    let hits = used.search("read file", 2, &[]);
    assert!(hits[0].score / hits[1].score <= 1.0 + Ranking::default().usage_weight + 1e-6, "a small boost");
    let off = Index::build(docs).with_usage(&counts).with_ranking(Ranking { usage_weight: 0.0, ..Ranking::default() });
    assert_eq!(top(&off, "read file"), "a.read_file");
}

#[test]
fn server_filter_limit_and_empty_queries() {
    let index = Index::build(vec![doc("a", "echo", "Echo."), doc("b", "echo", "Echo."), doc("c", "echo", "Echo.")]);
    assert_eq!(names(&index, &index.search("echo", 10, &["b".into()])), ["b.echo"]);
    assert_eq!(index.search("echo", 2, &[]).len(), 2);
    assert!(index.search("", 10, &[]).is_empty());
    assert!(index.search("the of !!", 10, &[]).is_empty());
    assert!(!Index::has_terms(" -- "));
    assert!(Index::has_terms("echo"));
    assert!(Index::build(Vec::new()).search("echo", 5, &[]).is_empty());
}

#[test]
fn reciprocal_rank_fusion_rewards_agreement() {
    // 7 is 2nd and 1st: it beats 3, first in one ranking only.
    let fused = fuse(&[vec![3, 7, 5], vec![7, 9]], RRF_K);
    let order: Vec<usize> = fused.iter().map(|h| h.doc).collect();
    assert_eq!(order, [7, 3, 9, 5]);
    assert!((fused[0].score - (1.0 / 62.0 + 1.0 / 61.0)).abs() < 1e-6);
    // Equal scores: the earlier ranking decides.
    let tie: Vec<usize> = fuse(&[vec![1], vec![2]], RRF_K).iter().map(|h| h.doc).collect();
    assert_eq!(tie, [1, 2]);
    // A smaller k lets the top of one ranking outweigh the middle of both.
    let sharp: Vec<usize> = fuse(&[vec![4, 8], vec![0, 1, 8]], 0.1).iter().map(|h| h.doc).collect();
    assert_eq!(sharp, [4, 0, 8, 1]);
    let usual: Vec<usize> = fuse(&[vec![4, 8], vec![0, 1, 8]], RRF_K).iter().map(|h| h.doc).collect();
    assert_eq!(usual[0], 8, "with k = 60, being in both rankings wins");
    assert!(fuse(&[], RRF_K).is_empty());
}

#[test]
fn verbs_and_objects_can_weigh_fields_differently() {
    // "delete" is a verb, "invoice" an object. The first tool names the verb, the second only
    // mentions the object in its description.
    let docs = vec![
        doc("s", "delete_item", "Removes something."),
        doc("s", "archive", "Files an invoice away; the invoice is kept."),
    ];
    let index = Index::build(docs);
    assert!(text::is_verb("delete") && text::is_verb("deleting") && !text::is_verb("invoice"));
    assert_eq!(top(&index, "delete invoice"), "s.delete_item", "the name match wins by default");
    let mut verb_fields = [1.0; FIELDS];
    verb_fields[NAME] = 0.1;
    let mut object_fields = [1.0; FIELDS];
    object_fields[DESCRIPTION] = 4.0;
    let by_kind = index.with_ranking(Ranking { verb_fields, object_fields, ..Ranking::default() });
    assert_eq!(top(&by_kind, "delete invoice"), "s.archive", "objects in descriptions now count more");
}

#[test]
fn expansion_finds_a_tool_through_words_that_go_together_in_the_catalogue() {
    // "forecast" and "weather" go together in three tools; the fourth says only "forecast".
    let docs = vec![
        doc("w", "today", "Weather forecast for today."),
        doc("w", "week", "Weather forecast for the week."),
        doc("w", "alerts", "Severe weather alerts with the forecast."),
        doc("w", "outlook", "A forecast of rain and sun."),
        doc("x", "pollen", "Pollen counts."),
    ];
    let off = Index::build(docs);
    let hits = off.search("weather", 10, &[]);
    assert!(!names(&off, &hits).contains(&"w.outlook".to_string()), "no shared word without expansion");
    let on = off.with_ranking(Ranking { expand_weight: 0.5, expand_terms: 2, ..Ranking::default() });
    let hits = on.search("weather", 10, &[]);
    let found = names(&on, &hits);
    assert!(found.contains(&"w.outlook".to_string()), "found through `forecast`: {found:?}");
    assert_eq!(found.last().map(String::as_str), Some("w.outlook"), "below the tools that say `weather`");
    assert!(!found.contains(&"x.pollen".to_string()));
    // A word held by one tool only is not expanded (nothing to learn from one tool).
    assert_eq!(names(&on, &on.search("pollen", 10, &[])), ["x.pollen"]);
}
