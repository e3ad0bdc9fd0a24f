//! Reading input a user hands over (a script on stdin, a task, a file named on the command line)
//! with a cap, so `agent exec - < /dev/zero` ends with a clear error instead of filling memory.

use std::io::Read;

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
}
