//! Small printing helpers shared by the commands: one-line error chains, byte sizes, and
//! atomic file writes (temp file in the same directory + rename, so readers never see half a file).

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// `outer: inner: root`, skipping repeated messages (anyhow's `{:#}` repeats wrapped causes).
pub fn error_chain(err: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in err.chain() {
        let msg = cause.to_string();
        if parts.last().is_some_and(|p| p.contains(&msg)) {
            continue;
        }
        parts.push(msg);
    }
    parts.join(": ")
}

/// `5.0 MB`, `812 B`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

/// Writes `data` to `path` atomically: a temp file next to it, fsync, then rename.
pub fn write_atomic(path: &Path, data: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new().prefix(".agent-tmp-").tempfile_in(dir)?;
    tmp.write_all(data)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Parses a byte size: `100000`, `100KB`, `100 KiB`, `5MB`, `1g` (K/M/G are powers of 1024).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().map_err(|_| format!("invalid size {s:?}; use e.g. 100KB, 5MB"))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return Err(format!("invalid size unit in {s:?}; use B, KB, MB or GB")),
    };
    let v = n * mult as f64;
    if !v.is_finite() || v < 0.0 || v > u64::MAX as f64 {
        return Err(format!("invalid size {s:?}"));
    }
    Ok(v as u64)
}

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

/// A spinner on stderr for work that may take more than a moment (starting servers). It draws
/// only when stderr is a terminal and only after 400 ms, so quick runs and pipes see nothing.
pub struct Spinner {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Spinner {
    pub fn start(message: impl Into<String>) -> Spinner {
        let stop = Arc::new(AtomicBool::new(false));
        if !std::io::stderr().is_terminal() {
            return Spinner { stop, thread: None };
        }
        let message = message.into();
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
            let mut waited = Duration::ZERO;
            let mut frame = 0usize;
            let mut drawn = false;
            while !flag.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(80));
                waited += Duration::from_millis(80);
                if waited >= Duration::from_millis(400) {
                    eprint!("\r\x1b[2K{} {message} ({:.1}s)", FRAMES[frame % FRAMES.len()], waited.as_secs_f32());
                    frame += 1;
                    drawn = true;
                }
            }
            if drawn {
                eprint!("\r\x1b[2K");
            }
        });
        Spinner { stop, thread: Some(thread) }
    }

    /// Stops and erases the spinner.
    pub fn finish(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.stop_now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_bytes("100KB").unwrap(), 102_400);
        assert_eq!(parse_bytes("5 mb").unwrap(), 5 << 20);
        assert_eq!(parse_bytes("123").unwrap(), 123);
        assert!(parse_bytes("5 parsecs").is_err());
        assert_eq!(human_bytes(5 << 20), "5.0 MB");
    }

    #[test]
    fn suggestions() {
        assert_eq!(suggest("ech", ["echo", "add", "big"]), vec!["echo"]);
        assert!(suggest("zzz", ["echo", "add"]).is_empty());
        assert_eq!(did_you_mean(&["a".into(), "b".into()]), "; did you mean `a` or `b`?");
    }
}
