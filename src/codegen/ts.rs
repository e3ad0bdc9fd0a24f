//! TypeScript text primitives: string literals, comment-safe text, TSDoc blocks, identifiers.
//!
//! Tool metadata comes from servers the user may not control, so every piece of server text
//! that reaches a generated file goes through one of these functions: a string literal that
//! escapes everything that could end it, or comment text in which `*/` and line terminators can
//! no longer end the comment. Nothing else in codegen splices raw server text into a file.

use std::fmt::Write as _;

/// A double-quoted JS/TS string literal denoting exactly `s`.
///
/// Escapes quotes, backslashes, every control character, the JS line terminators U+2028/U+2029,
/// and bidirectional-override characters (so the text cannot visually reorder the code around it).
pub fn string_literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if needs_unicode_escape(c) => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Characters never written raw into a generated file: C0/C1 controls, DEL, line/paragraph
/// separators, bidi controls, BOM / zero-width no-break space.
pub(crate) fn needs_unicode_escape(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        | '\u{2028}' | '\u{2029}'
        | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        | '\u{feff}')
}

/// Text for the inside of a `/* */` comment: `*/` cannot occur, line terminators become `\n`
/// (the caller prefixes each line), and invisible/control characters are shown as `\uXXXX`.
pub fn block_comment_text(s: &str) -> String {
    // Fast path: plain ASCII text with nothing to escape (most descriptions).
    let bytes = s.as_bytes();
    if bytes.iter().all(|&b| (0x20..0x7f).contains(&b) || b == b'\n' || b == b'\t') && !s.contains("*/") {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut prev_star = false;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if prev_star => out.push_str("\\/"),
            '\r' => {
                if chars.peek() != Some(&'\n') {
                    out.push('\n');
                }
            }
            '\n' | '\u{2028}' | '\u{2029}' => out.push('\n'),
            '\t' => out.push('\t'),
            c if needs_unicode_escape(c) => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
        prev_star = c == '*';
    }
    out
}

/// Text for a `//` comment: one line whatever the input (every line terminator becomes a space).
pub fn line_comment_text(s: &str) -> String {
    let mut out = block_comment_text(s);
    if out.contains('\n') {
        out = out.replace('\n', " ");
    }
    out
}

/// Text for one line of Markdown (the generated README): the first line of `s`, at most 200
/// characters, control characters shown as `\uXXXX` and Markdown/HTML syntax backslash-escaped,
/// so the text can neither start a block, a link, a code span nor an HTML tag.
pub fn markdown_text(s: &str) -> String {
    let line = first_line(s);
    let mut out = String::with_capacity(line.len());
    for (i, c) in line.chars().enumerate() {
        if i == 200 {
            out.push('…');
            break;
        }
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '#' | '!' | '&' | '(' | ')' | '~' => {
                out.push('\\');
                out.push(c);
            }
            c if needs_unicode_escape(c) => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// The first non-empty line of a description, for one-line summaries.
pub fn first_line(s: &str) -> &str {
    s.split(['\n', '\r', '\u{2028}', '\u{2029}']).map(str::trim).find(|l| !l.is_empty()).unwrap_or("")
}

/// A TSDoc comment under construction: lines of raw text, escaped when rendered.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Doc {
    lines: Vec<String>,
}

impl Doc {
    pub fn new() -> Doc {
        Doc::default()
    }

    pub fn is_empty(&self) -> bool {
        self.lines.iter().all(|l| l.trim().is_empty())
    }

    /// Adds text (which may span several lines); trailing whitespace and blank edges are trimmed.
    pub fn text(&mut self, text: &str) -> &mut Doc {
        let escaped = block_comment_text(text);
        let lines: Vec<&str> = escaped.lines().map(str::trim_end).collect();
        let start = lines.iter().position(|l| !l.trim().is_empty());
        let end = lines.iter().rposition(|l| !l.trim().is_empty());
        if let (Some(s), Some(e)) = (start, end) {
            self.lines.extend(lines[s..=e].iter().map(|l| l.to_string()));
        }
        self
    }

    /// Adds an empty line unless the comment is empty or already ends with one.
    pub fn blank(&mut self) -> &mut Doc {
        if self.lines.last().is_some_and(|l| !l.is_empty()) {
            self.lines.push(String::new());
        }
        self
    }

    /// Adds `@tag value` (value made single-line).
    pub fn tag(&mut self, tag: &str, value: &str) -> &mut Doc {
        let v = line_comment_text(value);
        if v.is_empty() {
            self.lines.push(format!("@{tag}"));
        } else {
            self.lines.push(format!("@{tag} {v}"));
        }
        self
    }

    /// Appends another comment's lines.
    pub fn extend(&mut self, other: &Doc) -> &mut Doc {
        self.lines.extend(other.lines.iter().cloned());
        self
    }

    /// `/** ... */` indented by `indent` spaces, ending with a newline; empty when there is nothing.
    pub fn render(&self, indent: usize) -> String {
        let mut lines: Vec<&str> = self.lines.iter().map(String::as_str).collect();
        while lines.last().is_some_and(|l| l.is_empty()) {
            lines.pop();
        }
        if lines.iter().all(|l| l.trim().is_empty()) {
            return String::new();
        }
        let pad = " ".repeat(indent);
        if lines.len() == 1 {
            return format!("{pad}/** {} */\n", lines[0]);
        }
        let mut out = format!("{pad}/**\n");
        for l in lines {
            if l.is_empty() {
                let _ = writeln!(out, "{pad} *");
            } else {
                let _ = writeln!(out, "{pad} * {l}");
            }
        }
        let _ = writeln!(out, "{pad} */");
        out
    }
}

/// An ASCII identifier (`[A-Za-z_$][A-Za-z0-9_$]*`) usable as a bare property name.
pub fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// A property key: bare when it is an identifier, otherwise a quoted string literal.
pub fn property_key(name: &str) -> String {
    if is_identifier(name) { name.to_string() } else { string_literal(name) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_literals_escape_everything_that_could_end_them() {
        assert_eq!(string_literal(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(string_literal("x\ny\u{2028}z\u{202e}"), r#""x\ny\u2028z\u202e""#);
        assert_eq!(string_literal("${x}`"), r#""${x}`""#);
        assert_eq!(string_literal("\u{0}"), r#""\u0000""#);
    }

    #[test]
    fn comment_text_cannot_close_the_comment() {
        assert_eq!(block_comment_text("a */ b"), "a *\\/ b");
        assert_eq!(block_comment_text("**/"), "**\\/");
        assert_eq!(block_comment_text("a\r\nb\rc\u{2028}d"), "a\nb\nc\nd");
        assert!(!block_comment_text("*/*/").contains("*/"));
        assert_eq!(line_comment_text("one\ntwo\u{2029}three"), "one two three");
    }

    #[test]
    fn docs_render_as_tsdoc() {
        let mut d = Doc::new();
        d.text("\nHello */\n\nworld  \n").tag("default", "\"x\"");
        assert_eq!(d.render(2), "  /**\n   * Hello *\\/\n   *\n   * world\n   * @default \"x\"\n   */\n");
        let mut one = Doc::new();
        one.text("only");
        assert_eq!(one.render(0), "/** only */\n");
        assert_eq!(Doc::new().render(0), "");
    }

    #[test]
    fn identifiers_and_keys() {
        assert!(is_identifier("a_b$1"));
        assert!(!is_identifier("1a"));
        assert!(!is_identifier("a-b"));
        assert!(!is_identifier(""));
        assert_eq!(property_key("a-b"), "\"a-b\"");
        assert_eq!(property_key("default"), "default");
    }
}
