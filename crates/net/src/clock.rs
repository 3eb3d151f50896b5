//! Real time for the sans-IO machines: a nanosecond clock, and a wait that
//! ends when a socket becomes readable or a deadline passes, whichever is
//! first, with sub-millisecond accuracy.
//!
//! The clock is CLOCK_MONOTONIC in ns (never steps, unlike the wall clock).
//! Both ends put their own clock's readings on the wire; the protocol only
//! uses differences of one side's readings (RFC 5348 §4.3 RTT from the
//! echoed timestamp; DFlow from OWD differences), so the two hosts' clocks
//! need not agree. On one machine (two network namespaces) they happen to
//! agree, which makes the recorded raw one-way delay meaningful there.
//!
//! Waiting: `ppoll` sleeps with a nanosecond timeout (hrtimer based, unlike
//! SO_RCVTIMEO, which the kernel rounds to jiffies) and 1 µs of timer
//! slack, up to [`SPIN_NS`] before the deadline; the rest is a busy poll of
//! the socket. Measured on a 2-core VM (2 Mbit/s, ~200 packets/s): pacing
//! slots are met within ~50–100 µs (p95) when the machine is idle. The spin
//! is short and never yields on purpose: with `sched_yield` in it, two
//! CPU-bound neighbours took the core for whole time slices (median
//! lateness 1.3 ms, 25% less throughput); a task that mostly sleeps is
//! woken promptly by the scheduler instead.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};

/// How long before a deadline the wait stops sleeping and starts spinning
/// (covers the usual hrtimer wake-up latency).
pub const SPIN_NS: u64 = 50_000;

/// Nanoseconds on CLOCK_MONOTONIC.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always
    // exists on Linux, so the call cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

/// Ask the kernel to fire this thread's timers at most 1 µs late (the
/// default slack is 50 µs). Best effort: failure only costs accuracy.
pub fn tighten_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and touches no
    // memory of ours.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1_000 as libc::c_ulong, 0, 0, 0) };
}

/// Why [`wait_readable_until`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wake {
    Readable,
    Deadline,
    /// A signal arrived (check [`stop_requested`]).
    Interrupted,
}

fn poll_once(fd: RawFd, timeout_ns: u64) -> Wake {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: one valid pollfd, a valid timespec, no signal mask change.
    let n = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
    if n > 0 {
        Wake::Readable
    } else if n < 0 {
        Wake::Interrupted
    } else {
        Wake::Deadline
    }
}

/// Wait until `fd` is readable or CLOCK_MONOTONIC reaches `deadline_ns`.
pub fn wait_readable_until(fd: RawFd, deadline_ns: u64) -> Wake {
    loop {
        let now = now_ns();
        if now >= deadline_ns {
            return Wake::Deadline;
        }
        let left = deadline_ns - now;
        if left > SPIN_NS {
            match poll_once(fd, left - SPIN_NS) {
                Wake::Deadline => continue,
                w => return w,
            }
        }
        // The last stretch: check without blocking, keep the core.
        match poll_once(fd, 0) {
            Wake::Deadline => std::hint::spin_loop(),
            w => return w,
        }
    }
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop_signal(_sig: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    STOP.store(true, Ordering::SeqCst);
}

/// SIGINT and SIGTERM end the run cleanly (the loops see
/// [`stop_requested`] and write their summary) instead of killing the
/// process.
pub fn install_stop_handlers() {
    let handler = on_stop_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

pub fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    #[test]
    fn clock_is_monotonic() {
        let a = now_ns();
        let b = now_ns();
        assert!(b >= a && a > 0);
    }

    #[test]
    fn wait_meets_deadlines_and_sees_datagrams() {
        tighten_timer_slack();
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        let fd = sock.as_raw_fd();
        // Deadlines: met, not much late (generous bound: shared CI cores).
        for wait_ns in [0, 50_000, 300_000, 2_000_000] {
            let deadline = now_ns() + wait_ns;
            assert_eq!(wait_readable_until(fd, deadline), Wake::Deadline);
            let late = now_ns() - deadline;
            assert!(late < 20_000_000, "late by {late} ns");
        }
        // A datagram ends the wait early.
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.send_to(b"x", sock.local_addr().unwrap()).unwrap();
        let t0 = now_ns();
        assert_eq!(wait_readable_until(fd, t0 + 5_000_000_000), Wake::Readable);
        assert!(now_ns() - t0 < 1_000_000_000);
    }
}
