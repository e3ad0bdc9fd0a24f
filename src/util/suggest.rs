//! "Did you mean" suggestions for names a user or a model typed: unknown servers, tools,
//! modules, LLM tool names.

/// The candidates closest to `name` (Jaro-Winkler ≥ 0.8, or a prefix/substring match), best first.
pub fn suggest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let lower = name.to_ascii_lowercase();
    let mut scored: Vec<(f64, &str)> = candidates
        .into_iter()
        .filter_map(|c| {
            let cl = c.to_ascii_lowercase();
            let mut score = strsim::jaro_winkler(&lower, &cl);
            if !lower.is_empty() && (cl.contains(&lower) || lower.contains(&cl)) {
                score = score.max(0.85);
            }
            (score >= 0.8).then_some((score, c))
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    scored.into_iter().take(3).map(|(_, c)| c.to_string()).collect()
}

/// `; did you mean `a` or `b`?` or the empty string.
pub fn did_you_mean(suggestions: &[String]) -> String {
    match suggestions {
        [] => String::new(),
        [one] => format!("; did you mean `{one}`?"),
        many => {
            let quoted: Vec<String> = many.iter().map(|s| format!("`{s}`")).collect();
            format!("; did you mean {}?", quoted.join(" or "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        assert_eq!(suggest("ech", ["echo", "add", "big"]), vec!["echo"]);
        assert!(suggest("zzz", ["echo", "add"]).is_empty());
        assert_eq!(did_you_mean(&["a".into(), "b".into()]), "; did you mean `a` or `b`?");
        assert_eq!(did_you_mean(&[]), "");
    }
}
