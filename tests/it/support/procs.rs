//! Processes as `/proc` shows them: the descendants of a process, whether one still runs, its
//! CPU time and peak resident size (tests that check what a stopped script or worker leaves).

use std::time::Duration;

/// The fields of `/proc/<pid>/stat` after the command name (state is index 0, ppid 1, utime 11,
/// stime 12).
fn stat(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(stat.rsplit_once(')')?.1.split_whitespace().map(str::to_string).collect())
}

/// Every process below `pid` (children, their children, ...), by pid.
pub fn descendants(pid: u32) -> Vec<u32> {
    let all: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter_map(|e| {
                    let p: u32 = e.file_name().to_str()?.parse().ok()?;
                    Some((p, stat(p)?.get(1)?.parse().ok()?))
                })
                .collect()
        })
        .unwrap_or_default();
    let mut below = vec![pid];
    let mut grew = true;
    while grew {
        grew = false;
        for &(p, parent) in &all {
            if !below.contains(&p) && below.contains(&parent) {
                below.push(p);
                grew = true;
            }
        }
    }
    below.remove(0);
    below
}

/// Whether the command line or the name (`/proc/<pid>/comm`) of `pid` contains `needle`: a
/// script worker `agent exec` forks keeps `agent`'s command line but is named `__js-worker`.
fn named(pid: u32, needle: &str) -> bool {
    ["cmdline", "comm"]
        .iter()
        .any(|f| std::fs::read(format!("/proc/{pid}/{f}")).is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle)))
}

/// The processes below `pid` whose command line or name contains `needle`.
pub fn descendants_with(pid: u32, needle: &str) -> Vec<u32> {
    descendants(pid).into_iter().filter(|&p| named(p, needle)).collect()
}

/// The direct children of `pid` whose command line or name contains `needle`.
pub fn children_with(pid: u32, needle: &str) -> Vec<u32> {
    descendants_with(pid, needle)
        .into_iter()
        .filter(|&p| stat(p).and_then(|f| f.get(1)?.parse::<u32>().ok()) == Some(pid))
        .collect()
}

/// The process group of `pid`.
pub fn group(pid: u32) -> Option<u32> {
    stat(pid)?.get(2)?.parse().ok()
}

/// Whether `pid` is still running (a zombie nobody reaped is not).
pub fn running(pid: u32) -> bool {
    stat(pid).is_some_and(|f| f.first().is_some_and(|s| s != "Z"))
}

/// CPU time (user + system) of `pid`, in seconds.
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let f = stat(pid)?;
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    // SAFETY: sysconf only reads a constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    Some(ticks / hz)
}

/// CPU time of `pid` and every live process below it, in seconds (children that ended and were
/// reaped count in their parent's own figure only once it waited for them; live ones are added).
pub fn tree_cpu_seconds(pid: u32) -> f64 {
    std::iter::once(pid).chain(descendants(pid)).filter_map(cpu_seconds).sum()
}

/// Peak resident size (`VmHWM`) of `pid` so far, in KiB.
pub fn peak_rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Waits until the CPU time of `pid`'s tree grows by less than `idle` over `window`; the growth
/// of the last window when `within` passes first.
pub fn cpu_settles(pid: u32, window: Duration, idle: f64, within: Duration) -> Result<(), f64> {
    let started = std::time::Instant::now();
    let mut before = tree_cpu_seconds(pid);
    loop {
        std::thread::sleep(window);
        let now = tree_cpu_seconds(pid);
        let grew = now - before;
        if grew < idle {
            return Ok(());
        }
        if started.elapsed() > within {
            return Err(grew);
        }
        before = now;
    }
}

/// Kills `pid` when dropped (what a failed assertion left running).
pub struct KillOnDrop(pub u32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        // SAFETY: kill with a pid a test saw below its own process; at worst it is gone already.
        unsafe {
            libc::kill(self.0 as i32, libc::SIGKILL);
        }
    }
}

/// Every running process whose command line or name contains `needle` and whose environment holds the
/// entry `var` exactly (`HOME=/tmp/...`): finds a test's processes after their parent is gone.
pub fn with_env(needle: &str, var: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&p| {
            named(p, needle)
                && std::fs::read(format!("/proc/{p}/environ"))
                    .is_ok_and(|e| e.split(|&b| b == 0).any(|entry| entry == var.as_bytes()))
                && running(p)
        })
        .collect()
}
