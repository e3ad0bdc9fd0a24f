//! Text normalisation for the tool index: tokenising (identifiers and prose alike), light
//! stemming, a few stop words, and the abbreviations and verb synonyms people use when they look
//! for a tool ("PR", "repo", "show" for get).

/// Splits `text` into lower-case words: on anything that is not a letter or digit (`_`, `-`,
/// `.`, `/`, spaces, punctuation), on camelCase and acronym boundaries (`getHTTPServer` → get,
/// http, server) and between letters and digits (`v2beta` → v, 2, beta).
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_word(text, |w| out.push(w.to_string()));
    out
}

/// [`words`] without collecting them: `f` gets each word in turn.
pub fn for_each_word(text: &str, mut f: impl FnMut(&str)) {
    let mut cur = String::new();
    let mut flush = |cur: &mut String| {
        if !cur.is_empty() {
            f(cur);
            cur.clear();
        }
    };
    let mut it = text.chars().peekable();
    let mut prev: Option<char> = None;
    while let Some(c) = it.next() {
        if !c.is_alphanumeric() {
            flush(&mut cur);
            prev = None;
            continue;
        }
        if let Some(prev) = prev.filter(|_| !cur.is_empty()) {
            let mut ahead = it.clone();
            let next = ahead.next();
            let after = ahead.next();
            // `PRs`, `URLs`: an acronym's plural `s` stays with it.
            let plural_s = next == Some('s') && !after.is_some_and(|n| n.is_lowercase());
            let next_lower = next.is_some_and(|n| n.is_lowercase()) && !plural_s;
            let boundary = (prev.is_lowercase() && c.is_uppercase())
                || (prev.is_uppercase() && c.is_uppercase() && next_lower)
                || (prev.is_ascii_digit() != c.is_ascii_digit());
            if boundary {
                flush(&mut cur);
            }
        }
        cur.extend(c.to_lowercase());
        prev = Some(c);
    }
    flush(&mut cur);
}

/// Words that carry no meaning for finding a tool; left out of queries and documents.
const STOP_WORDS: &[&str] = &[
    "a", "about", "am", "an", "and", "are", "as", "at", "be", "by", "can", "could", "do", "does", "for", "from", "how",
    "i", "if", "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "our", "please", "should", "so", "some",
    "that", "the", "their", "them", "then", "there", "these", "this", "those", "to", "up", "us", "want", "was", "we",
    "were", "what", "when", "where", "which", "will", "with", "would", "you", "your",
];

/// Chatter of tasks as people write them ("I'm looking for help with any specific ..."): no
/// tool is about these words, but tool descriptions use them too ("helps you", "provides"), so
/// they only add noise. Also the pieces contractions split into (`I'm` → `i`, `m`).
const CHATTER: &[&str] = &[
    "any",
    "assist",
    "available",
    "comprehensive",
    "d",
    "detailed",
    "give",
    "have",
    "help",
    "including",
    "interested",
    "know",
    "ll",
    "looking",
    "m",
    "need",
    "re",
    "specific",
    "specifically",
    "such",
    "t",
    "ve",
];

pub fn is_stop_word(w: &str) -> bool {
    STOP_WORDS.contains(&w) || CHATTER.contains(&w)
}

/// Abbreviations expanded wherever they appear (documents and queries), so `PR` finds
/// `pull_request` and `repo` finds `repository`.
const ABBREVIATIONS: &[(&str, &[&str])] = &[
    ("pr", &["pull", "request"]),
    ("prs", &["pull", "requests"]),
    ("repo", &["repository"]),
    ("repos", &["repositories"]),
    ("org", &["organization"]),
    ("orgs", &["organizations"]),
    ("dir", &["directory"]),
    ("dirs", &["directories"]),
    ("msg", &["message"]),
    ("config", &["configuration"]),
    ("env", &["environment"]),
    ("info", &["information"]),
    ("db", &["database"]),
    ("auth", &["authentication"]),
    ("ci", &["workflow"]),
];

/// Query-only synonyms of the verbs tool names use (`get`, `list`, `create`, ...): a query word
/// also matches these terms, at [`SYNONYM_WEIGHT`] of its own weight.
const SYNONYMS: &[(&str, &[&str])] = &[
    ("show", &["get", "list"]),
    ("view", &["get", "read"]),
    ("see", &["get", "list"]),
    ("fetch", &["get"]),
    ("read", &["get"]),
    ("display", &["get", "list"]),
    ("retrieve", &["get"]),
    ("look", &["get", "search"]),
    ("find", &["search", "get"]),
    ("lookup", &["search", "get"]),
    ("query", &["search"]),
    ("all", &["list"]),
    ("enumerate", &["list"]),
    ("make", &["create"]),
    ("new", &["create"]),
    ("open", &["create"]),
    ("add", &["create"]),
    ("start", &["create", "run"]),
    ("remove", &["delete"]),
    ("erase", &["delete"]),
    ("drop", &["delete"]),
    ("edit", &["update"]),
    ("change", &["update"]),
    ("modify", &["update"]),
    ("rename", &["update", "title"]),
    ("set", &["update"]),
    ("close", &["update", "state"]),
    ("reopen", &["update", "state"]),
    ("download", &["get"]),
    ("upload", &["create", "push"]),
    ("write", &["create", "update"]),
    ("bug", &["issue"]),
    ("ticket", &["issue"]),
    ("who", &["user", "me"]),
];

/// Words that say what to do rather than what to do it to: the verbs tool names start with and
/// the ones people use for them.
const VERBS: &[&str] = &[
    "add",
    "analyse",
    "analyze",
    "append",
    "calculate",
    "call",
    "cancel",
    "capture",
    "change",
    "check",
    "click",
    "close",
    "compare",
    "compute",
    "convert",
    "copy",
    "count",
    "create",
    "delete",
    "display",
    "download",
    "draw",
    "drop",
    "edit",
    "enumerate",
    "erase",
    "execute",
    "export",
    "extract",
    "fetch",
    "fill",
    "find",
    "follow",
    "generate",
    "get",
    "give",
    "import",
    "insert",
    "install",
    "kill",
    "launch",
    "list",
    "load",
    "look",
    "lookup",
    "make",
    "merge",
    "modify",
    "move",
    "navigate",
    "open",
    "plot",
    "post",
    "press",
    "print",
    "publish",
    "push",
    "put",
    "query",
    "read",
    "remove",
    "rename",
    "reopen",
    "replace",
    "restart",
    "retrieve",
    "run",
    "save",
    "scan",
    "search",
    "see",
    "select",
    "send",
    "set",
    "share",
    "show",
    "start",
    "stop",
    "summarise",
    "summarize",
    "take",
    "tell",
    "track",
    "translate",
    "type",
    "update",
    "upload",
    "view",
    "watch",
    "write",
];

/// Whether a lower-case word is a verb of [`VERBS`] (or one of its `-s`, `-ing`, `-ed` forms).
pub fn is_verb(word: &str) -> bool {
    static STEMS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let stems = STEMS.get_or_init(|| VERBS.iter().map(|v| stem(v)).collect());
    VERBS.contains(&word) || stems.contains(&stem(word))
}

/// Weight of a synonym term relative to the query word it came from.
pub const SYNONYM_WEIGHT: f32 = 0.35;

/// The normalised terms of a text (tokenised, stop words dropped, abbreviations expanded,
/// stemmed), in order.
pub fn terms(text: &str) -> Vec<String> {
    normalise(text, true)
}

/// Stop words that are only glue in a tool name (`create_or_update_file`); the others mean
/// something there (`get_me`).
const NAME_GLUE: &[&str] =
    &["a", "an", "and", "by", "for", "from", "in", "into", "of", "on", "or", "the", "to", "with"];

/// The terms of `text`: its words, those [`skipped`] left out (prose: every stop word; a tool
/// name: only glue words), each as its [`word_terms`] (the index builds its fields the same way).
fn normalise(text: &str, prose: bool) -> Vec<String> {
    let mut out = Vec::new();
    for w in words(text) {
        if !skipped(&w, prose) {
            out.extend(word_terms(&w));
        }
    }
    out
}

/// Whether a word is left out: a stop word in prose (`prose`), a glue word in a tool name.
pub fn skipped(word: &str, prose: bool) -> bool {
    if prose { is_stop_word(word) } else { NAME_GLUE.contains(&word) }
}

/// The terms of one lower-case word: its abbreviation's expansion, or its stem.
pub fn word_terms(word: &str) -> Vec<String> {
    match ABBREVIATIONS.iter().find(|(a, _)| *a == word) {
        Some((_, full)) => full.iter().map(|f| stem(f)).collect(),
        None => vec![stem(word)],
    }
}

/// The stemmed synonyms a query word (already lower-case, unstemmed) also stands for. A plural
/// noun also stands for `list` (`my gists` → `list_gists`).
pub fn synonyms(word: &str) -> Vec<String> {
    let mut out: Vec<String> =
        SYNONYMS.iter().find(|(w, _)| *w == word).map(|(_, s)| s.iter().map(|x| stem(x)).collect()).unwrap_or_default();
    if word.len() > 3 && word.ends_with('s') && stem(word).len() < word.len() && !out.iter().any(|s| s == "list") {
        out.push("list".to_string());
    }
    out
}

fn is_vowel(c: u8) -> bool {
    matches!(c, b'a' | b'e' | b'i' | b'o' | b'u' | b'y')
}

/// Light English stemming for a lower-case word: plurals (`logs` → `log`, `branches` →
/// `branch`, `entries` → `entry`), `-ing` and `-ed` (`listing` → `list`, `running` → `run`,
/// `labelled` → `label`), a final silent `e` (`create`, `created`, `creating` → `creat`) and a
/// final `ll` in longer words. Conservative: short words and non-ASCII words are kept as they are.
pub fn stem(word: &str) -> String {
    if word.len() <= 3 || !word.is_ascii() || word.bytes().any(|b| b.is_ascii_digit()) {
        return word.to_string();
    }
    let mut w = word.to_string();
    // Plurals.
    if w.len() > 4 && (w.ends_with("ies") || w.ends_with("ied")) {
        w.truncate(w.len() - 3);
        w.push('y');
    } else if ["sses", "xes", "ches", "shes", "zes"].iter().any(|s| w.ends_with(s)) && w.len() > 4 {
        w.truncate(w.len() - 2);
    } else if w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") && !w.ends_with("is") {
        w.truncate(w.len() - 1);
    }
    // -ing / -ed, when what is left still has a vowel.
    for suffix in ["ing", "ed"] {
        if w.len() >= suffix.len() + 3 && w.ends_with(suffix) {
            let base = &w[..w.len() - suffix.len()];
            if base.bytes().any(is_vowel) {
                let b = base.as_bytes();
                let n = b.len();
                let doubled =
                    n >= 2 && b[n - 1] == b[n - 2] && !is_vowel(b[n - 1]) && !matches!(b[n - 1], b'l' | b's' | b'z');
                w = if doubled { base[..n - 1].to_string() } else { base.to_string() };
            }
            break;
        }
    }
    if w.len() >= 5 && w.ends_with('e') {
        w.pop();
    }
    if w.len() >= 5 && w.ends_with("ll") {
        w.pop();
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tool name's terms: only glue words are dropped (`get_me` is `get`, `me`).
    fn name_terms(name: &str) -> Vec<String> {
        normalise(name, false)
    }

    #[test]
    fn words_split_identifiers_and_prose() {
        assert_eq!(words("get_job_logs"), ["get", "job", "logs"]);
        assert_eq!(words("API-getUser"), ["api", "get", "user"]);
        assert_eq!(words("text.upper"), ["text", "upper"]);
        assert_eq!(words("repos/owner/name"), ["repos", "owner", "name"]);
        assert_eq!(words("getHTTPServer v2beta"), ["get", "http", "server", "v", "2", "beta"]);
        assert_eq!(words("perPage"), ["per", "page"]);
        assert_eq!(words("  List the PRs, please! "), ["list", "the", "prs", "please"]);
        assert_eq!(words("kubectl_get"), ["kubectl", "get"]);
        assert_eq!(words(""), Vec::<String>::new());
        assert_eq!(words("Größe ändern"), ["größe", "ändern"]);
    }

    #[test]
    fn stemming_is_light_and_consistent() {
        for (w, s) in [
            ("logs", "log"),
            ("log", "log"),
            ("labelled", "label"),
            ("label", "label"),
            ("labels", "label"),
            ("listing", "list"),
            ("running", "run"),
            ("branches", "branch"),
            ("entries", "entry"),
            ("repositories", "repository"),
            ("issues", "issu"),
            ("issue", "issu"),
            ("create", "creat"),
            ("created", "creat"),
            ("creating", "creat"),
            ("status", "status"),
            ("access", "access"),
            ("pulled", "pull"),
            ("pull", "pull"),
            ("string", "string"),
            ("gets", "get"),
            ("get", "get"),
            ("me", "me"),
        ] {
            assert_eq!(stem(w), s, "{w}");
        }
    }

    #[test]
    fn terms_drop_stop_words_and_expand_abbreviations() {
        assert_eq!(terms("Show me the open PRs of a repo"), ["show", "open", "pull", "request", "repository"]);
        assert_eq!(name_terms("get_me"), ["get", "me"]);
        assert_eq!(synonyms("show"), ["get", "list"]);
        assert!(synonyms("owner").is_empty());
        assert_eq!(synonyms("gists"), ["list"]);
        assert_eq!(name_terms("create_or_update_file"), ["creat", "updat", "file"]);
        assert_eq!(terms("I'm looking for help with any specific gif, I don't know"), ["gif", "don"]);
        assert_eq!(name_terms("get_help"), ["get", "help"], "a tool name keeps them");
    }
}
