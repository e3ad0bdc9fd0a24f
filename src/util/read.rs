//! Reading input a user hands over (a script on stdin, a task, a file named on the command line)
//! with a cap, so `agent exec - < /dev/zero` ends with a clear error instead of filling memory:
//! [`read_capped`] for any reader, [`read_text_file`] for a file that must be UTF-8 text.

use std::io::Read;
use std::path::Path;

/// Reads all of `input`, failing once more than `max` bytes have come (the caller names the
/// input and the limit in its error).
pub fn read_capped(input: impl Read, max: u64) -> Result<Vec<u8>, CapError> {
    let mut out = Vec::new();
    input.take(max.saturating_add(1)).read_to_end(&mut out).map_err(CapError::Io)?;
    if out.len() as u64 > max {
        return Err(CapError::TooLarge);
    }
    Ok(out)
}

/// Why [`read_capped`] failed.
#[derive(Debug)]
pub enum CapError {
    Io(std::io::Error),
    /// More than the cap.
    TooLarge,
}

/// Why [`read_text_file`] failed.
#[derive(Debug)]
pub enum FileError {
    /// There is no such file.
    Missing(std::io::Error),
    Io(std::io::Error),
    /// More than the cap (in bytes).
    TooLarge(u64),
    NotUtf8,
}

impl FileError {
    /// One line about the file called `name` (`config file /x/agent.yaml`, `skill `a``):
    /// `cannot read NAME: ...`, `NAME is larger than N MB`, `NAME is not valid UTF-8`.
    pub fn message(&self, name: &str) -> String {
        match self {
            FileError::Missing(e) | FileError::Io(e) => format!("cannot read {name}: {e}"),
            FileError::TooLarge(max) if max % (1 << 20) == 0 && *max > 0 => {
                format!("{name} is larger than {} MB", max >> 20)
            }
            FileError::TooLarge(max) => format!("{name} is larger than {}", super::size::human_bytes(*max)),
            FileError::NotUtf8 => format!("{name} is not valid UTF-8"),
        }
    }
}

/// The text of the file at `path`, refused past `max` bytes or when it is not UTF-8.
pub fn read_text_file(path: &Path, max: u64) -> Result<String, FileError> {
    let file = std::fs::File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => FileError::Missing(e),
        _ => FileError::Io(e),
    })?;
    let bytes = read_capped(file, max).map_err(|e| match e {
        CapError::TooLarge => FileError::TooLarge(max),
        CapError::Io(e) => FileError::Io(e),
    })?;
    String::from_utf8(bytes).map_err(|_| FileError::NotUtf8)
}

/// Reads `r` to its end through a buffer of `chunk` bytes, as a peer's small reads would: tests
/// of readers that cut and count across every boundary.
#[cfg(test)]
pub(crate) async fn in_small_reads(r: &mut (impl tokio::io::AsyncRead + Unpin), chunk: usize) -> Vec<u8> {
    use tokio::io::AsyncReadExt as _;
    let (mut out, mut buf) = (Vec::new(), vec![0u8; chunk]);
    loop {
        match r.read(&mut buf).await {
            Ok(0) => return out,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) => panic!("read failed: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stops_past_the_cap() {
        assert_eq!(read_capped(&b"abc"[..], 3).unwrap(), b"abc");
        assert!(matches!(read_capped(&b"abcd"[..], 3), Err(CapError::TooLarge)));
        // An endless input ends too.
        assert!(matches!(read_capped(std::io::repeat(0), 1 << 20), Err(CapError::TooLarge)));
    }

    #[test]
    fn files_are_read_with_a_cap_and_must_be_text() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "hé").unwrap();
        assert_eq!(read_text_file(&path, 3).unwrap(), "hé");
        let e = read_text_file(&path, 2).unwrap_err();
        assert_eq!(e.message("f"), "f is larger than 2 B");
        std::fs::write(&path, [0xff]).unwrap();
        assert_eq!(read_text_file(&path, 3).unwrap_err().message("f"), "f is not valid UTF-8");
        assert!(matches!(read_text_file(&dir.path().join("none"), 3), Err(FileError::Missing(_))));
    }
}
