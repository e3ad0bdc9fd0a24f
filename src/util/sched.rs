//! Scheduling of the calling thread: background work that must never delay the work it
//! prepares for (warming a cache while the caller's isolate restores) runs only on a CPU that
//! would otherwise be idle.

/// Puts the calling thread in Linux's `SCHED_IDLE` class: it runs only when no other thread
/// wants the CPU, so on a busy machine it takes no time from the threads it shares a process
/// (or two cores) with. Lowering one's own class needs no privilege; if it fails the thread
/// keeps its class.
pub fn only_when_idle() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 is the calling thread; `param` is a valid sched_param for SCHED_IDLE.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_calling_thread_alone_goes_idle() {
        let idle = std::thread::spawn(|| {
            only_when_idle();
            // SAFETY: pid 0 is the calling thread.
            unsafe { libc::sched_getscheduler(0) }
        })
        .join()
        .unwrap();
        assert_eq!(idle, libc::SCHED_IDLE);
        // SAFETY: as above.
        assert_ne!(unsafe { libc::sched_getscheduler(0) }, libc::SCHED_IDLE, "the caller's class changed");
    }
}
