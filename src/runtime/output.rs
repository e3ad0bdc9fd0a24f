//! Captured script output under one byte budget shared by stdout and stderr.
//!
//! Past the budget, output is counted but dropped, and the stream where the cut happened ends
//! with `[output truncated: N bytes omitted]`. The cap protects the model's context (and the
//! process's memory) from a script that prints without bound; the script itself keeps running.

/// Which stream a write goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stream {
    Stdout,
    Stderr,
}

#[derive(Debug)]
pub(crate) struct OutputSink {
    stdout: String,
    stderr: String,
    budget: usize,
    used: usize,
    omitted: u64,
    cut_in: Option<Stream>,
}

impl OutputSink {
    pub(crate) fn new(budget: usize) -> OutputSink {
        OutputSink { stdout: String::new(), stderr: String::new(), budget, used: 0, omitted: 0, cut_in: None }
    }

    pub(crate) fn write(&mut self, stream: Stream, text: &str) {
        if self.cut_in.is_some() {
            self.omitted += text.len() as u64;
            return;
        }
        let room = self.budget - self.used;
        let keep = if text.len() <= room { text.len() } else { floor_char_boundary(text, room) };
        let target = match stream {
            Stream::Stdout => &mut self.stdout,
            Stream::Stderr => &mut self.stderr,
        };
        target.push_str(&text[..keep]);
        self.used += keep;
        if keep < text.len() {
            self.omitted += (text.len() - keep) as u64;
            self.cut_in = Some(stream);
        }
    }

    /// Takes `len` bytes of budget for something that is not printed by the script itself
    /// (the default export's JSON). Returns false, and counts it as omitted, if it does not fit.
    pub(crate) fn reserve(&mut self, len: usize) -> bool {
        if self.cut_in.is_none() && len <= self.budget - self.used {
            self.used += len;
            return true;
        }
        self.omitted += len as u64;
        self.cut_in.get_or_insert(Stream::Stdout);
        false
    }

    /// The captured (stdout, stderr, omitted bytes), the marker appended where the cut happened.
    pub(crate) fn finish(mut self) -> (String, String, u64) {
        if let Some(stream) = self.cut_in {
            let target = match stream {
                Stream::Stdout => &mut self.stdout,
                Stream::Stderr => &mut self.stderr,
            };
            if !target.is_empty() && !target.ends_with('\n') {
                target.push('\n');
            }
            target.push_str(&format!("[output truncated: {} bytes omitted]\n", self.omitted));
        }
        (self.stdout, self.stderr, self.omitted)
    }
}

/// The largest index `<= max` that is a char boundary of `s`.
fn floor_char_boundary(s: &str, max: usize) -> usize {
    let mut i = max.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn under_the_cap_nothing_is_cut() {
        let mut o = OutputSink::new(100);
        o.write(Stream::Stdout, "hello\n");
        o.write(Stream::Stderr, "oops\n");
        assert_eq!(o.finish(), ("hello\n".into(), "oops\n".into(), 0));
    }

    #[test]
    fn the_cut_is_marked_where_it_happened_and_counts_everything_dropped() {
        let mut o = OutputSink::new(10);
        o.write(Stream::Stdout, "12345");
        o.write(Stream::Stderr, "abcdefgh");
        o.write(Stream::Stdout, "more");
        let (out, err, omitted) = o.finish();
        assert_eq!(out, "12345");
        assert_eq!(err, "abcde\n[output truncated: 7 bytes omitted]\n");
        assert_eq!(omitted, 7);
    }

    #[test]
    fn never_splits_a_character() {
        let mut o = OutputSink::new(4);
        o.write(Stream::Stdout, "aé€"); // 1 + 2 + 3 bytes
        let (out, _, omitted) = o.finish();
        assert!(out.starts_with("aé\n[output truncated: 3 bytes omitted]"), "{out}");
        assert_eq!(omitted, 3);
    }

    #[test]
    fn a_value_that_does_not_fit_is_counted() {
        let mut o = OutputSink::new(10);
        o.write(Stream::Stdout, "1234567");
        assert!(!o.reserve(5));
        let (out, _, omitted) = o.finish();
        assert_eq!(omitted, 5);
        assert!(out.ends_with("[output truncated: 5 bytes omitted]\n"));
    }
}
