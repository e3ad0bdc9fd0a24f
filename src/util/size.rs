//! Sizes and durations as people write them (`100KB`, `5 MiB`, `30s`, `1m 30s`, bare numbers)
//! and as `agent` prints them (`5.0 MB`).

use std::time::Duration;

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

/// The bytes a base64 text stands for, from its length (padding left out; not validated).
pub fn base64_decoded_len(b64: &str) -> u64 {
    let b64 = b64.trim();
    let padding = b64.bytes().rev().take_while(|&b| b == b'=').count();
    ((b64.len() - padding) * 3 / 4) as u64
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

/// `256MB`, `1GB`, `512 MiB`; a bare number is MB.
pub fn parse_memory_mb(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if let Ok(mb) = t.parse::<u64>() {
        return Ok(mb);
    }
    let bytes = parse_bytes(t)?;
    Ok(bytes.div_ceil(1024 * 1024))
}

/// A positive duration: `30s`, `2m`, `1h 30m`; a bare number is seconds (fractions allowed).
pub fn parse_timeout(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let d = match t.parse::<f64>() {
        Ok(secs) if (0.0..1e9).contains(&secs) => Duration::from_secs_f64(secs),
        Ok(_) => return Err(format!("invalid duration {s:?}")),
        Err(_) => {
            humantime::parse_duration(t).map_err(|e| format!("invalid duration {s:?} ({e}); use e.g. 30s, 2m"))?
        }
    };
    if d.is_zero() {
        return Err("the timeout must be greater than zero".into());
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_lengths_give_the_bytes_they_stand_for() {
        assert_eq!(base64_decoded_len("AJ+SlhtbAA=="), 7);
        assert_eq!(base64_decoded_len("aGVsbG8="), 5);
        assert_eq!(base64_decoded_len("aGVsbG8h"), 6);
        assert_eq!(base64_decoded_len(" \n"), 0);
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_bytes("100KB").unwrap(), 102_400);
        assert_eq!(parse_bytes("5 mb").unwrap(), 5 << 20);
        assert_eq!(parse_bytes("123").unwrap(), 123);
        assert!(parse_bytes("5 parsecs").is_err());
        assert_eq!(human_bytes(5 << 20), "5.0 MB");
        assert_eq!(human_bytes(812), "812 B");
    }

    #[test]
    fn timeouts() {
        assert_eq!(parse_timeout("2").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_timeout("0.5").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_timeout("1m 30s").unwrap(), Duration::from_secs(90));
        assert!(parse_timeout("0").is_err());
        assert!(parse_timeout("soon").is_err());
        assert!(parse_timeout("-1").is_err());
    }

    #[test]
    fn memory_limits() {
        assert_eq!(parse_memory_mb("64").unwrap(), 64);
        assert_eq!(parse_memory_mb("64MB").unwrap(), 64);
        assert_eq!(parse_memory_mb("1GB").unwrap(), 1024);
        assert!(parse_memory_mb("lots").is_err());
    }
}
