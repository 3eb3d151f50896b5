//! Open-loop UDP flows over the emulated path: the sender follows the
//! simulator's own `UdpSource` (same pattern, same seeded stream, so the
//! same packet times and sizes as the simulated run), the sink counts what
//! arrives and its one-way delay.
//!
//! Each datagram's payload starts with a 16-byte stamp: the sequence number
//! and the send time (ns since the run's t0), both little-endian u64. Both
//! ends run in this process on CLOCK_MONOTONIC, which network namespaces
//! share, so the one-way delay is exact up to scheduling (no clock offset).
//! A datagram shorter than the stamp is counted but has no delay sample.
//!
//! The sender never reacts to the network, as in the simulator: a send that
//! the client namespace's own device queue refuses (ENOBUFS) is counted as
//! `local_drops` and the schedule goes on.

use std::fs::File;
use std::io;
use std::net::{SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::plan::FlowSpec;
use super::{enter, sleep_until, timeout_opt};
use crate::clock::now_ns;

/// Bytes of the per-datagram stamp: seq (u64) and send time (u64).
pub const STAMP_BYTES: usize = 16;

/// What a UDP flow's threads share with the main thread.
#[derive(Default)]
pub struct UdpCounters {
    pub sent_pkts: AtomicU64,
    /// Payload bytes handed to the socket.
    pub sent_bytes: AtomicU64,
    /// Sends the client namespace's device queue refused (ENOBUFS).
    pub local_drops: AtomicU64,
    pub received_pkts: AtomicU64,
    pub received_bytes: AtomicU64,
    /// One-way delays of stamped datagrams: sum, max and how many.
    pub owd_sum_ns: AtomicU64,
    pub owd_max_ns: AtomicU64,
    pub owd_samples: AtomicU64,
}

impl UdpCounters {
    /// Mean one-way delay so far, ns (0 before any sample).
    pub fn owd_mean_ns(&self) -> u64 {
        self.owd_sum_ns
            .load(Ordering::SeqCst)
            .checked_div(self.owd_samples.load(Ordering::SeqCst))
            .unwrap_or(0)
    }
}

/// Write the stamp into the start of `buf` (as much of it as fits).
pub fn stamp(buf: &mut [u8], seq: u64, sent_ns: u64) {
    let mut s = [0u8; STAMP_BYTES];
    s[..8].copy_from_slice(&seq.to_le_bytes());
    s[8..].copy_from_slice(&sent_ns.to_le_bytes());
    let n = buf.len().min(STAMP_BYTES);
    buf[..n].copy_from_slice(&s[..n]);
}

/// The send time in a received datagram, if it is long enough to carry it.
pub fn sent_ns_of(datagram: &[u8]) -> Option<u64> {
    let b: [u8; 8] = datagram.get(8..STAMP_BYTES)?.try_into().ok()?;
    Some(u64::from_le_bytes(b))
}

/// The sender: enter the client namespace, then send on the source's
/// schedule from the flow's start until the stop.
pub fn sender(
    flow: &FlowSpec,
    to: SocketAddrV4,
    client_ns: &File,
    t0: u64,
    c: &UdpCounters,
    stop: &AtomicBool,
) -> Option<String> {
    let err = |e: String| Some(format!("flow {}: {e}", flow.flow_id));
    let Some(plan) = &flow.udp else {
        return err("not a UDP flow".into());
    };
    if let Err(e) = enter(client_ns) {
        return err(e);
    }
    let sock = match UdpSocket::bind("0.0.0.0:0").and_then(|s| s.connect(to).map(|()| s)) {
        Ok(s) => s,
        Err(e) => return err(format!("UDP socket to {to}: {e}")),
    };
    let mut source = plan.source.clone();
    if !sleep_until(t0, flow.start_ns, stop) {
        return None;
    }
    source.start(flow.start_ns);
    let mut buf = vec![0u8; 64 * 1024];
    while let Some(due) = source.next_ns() {
        if !sleep_until(t0, due, stop) {
            break;
        }
        let now = now_ns().saturating_sub(t0);
        while let Some(size) = source.poll(now) {
            let size = (size as usize).min(buf.len());
            stamp(&mut buf[..size], source.seq, now);
            match sock.send(&buf[..size]) {
                Ok(n) => {
                    c.sent_pkts.fetch_add(1, Ordering::SeqCst);
                    c.sent_bytes.fetch_add(n as u64, Ordering::SeqCst);
                }
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                    c.local_drops.fetch_add(1, Ordering::SeqCst);
                }
                // Nothing listens yet or any more (an ICMP port
                // unreachable came back): the source goes on, as in the
                // simulator, where a UDP source never hears of it.
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {}
                Err(e) => return err(format!("UDP send: {e}")),
            }
        }
    }
    None
}

/// The sink: a socket bound in the server namespace (the caller binds it),
/// read until the stop.
pub fn sink(
    flow: &FlowSpec,
    sock: &UdpSocket,
    t0: u64,
    c: &UdpCounters,
    stop: &AtomicBool,
) -> Option<String> {
    if let Err(e) = timeout_opt(sock.as_raw_fd(), libc::SO_RCVTIMEO, "SO_RCVTIMEO") {
        return Some(format!("flow {}: {e}", flow.flow_id));
    }
    let mut buf = vec![0u8; 64 * 1024];
    while !stop.load(Ordering::Relaxed) {
        match sock.recv(&mut buf) {
            Ok(n) => {
                let now = now_ns().saturating_sub(t0);
                c.received_pkts.fetch_add(1, Ordering::SeqCst);
                c.received_bytes.fetch_add(n as u64, Ordering::SeqCst);
                if let Some(sent) = sent_ns_of(&buf[..n]) {
                    let owd = now.saturating_sub(sent);
                    c.owd_sum_ns.fetch_add(owd, Ordering::SeqCst);
                    c.owd_max_ns.fetch_max(owd, Ordering::SeqCst);
                    c.owd_samples.fetch_add(1, Ordering::SeqCst);
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Some(format!("flow {}: UDP recv: {e}", flow.flow_id)),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_round_trips_and_short_datagrams_carry_none() {
        let mut buf = [0xffu8; 40];
        stamp(&mut buf, 7, 123_456_789);
        assert_eq!(sent_ns_of(&buf), Some(123_456_789));
        assert_eq!(&buf[..8], &7u64.to_le_bytes());
        assert_eq!(buf[16], 0xff, "bytes after the stamp are left alone");
        let mut short = [0u8; 10];
        stamp(&mut short, 1, 2);
        assert_eq!(sent_ns_of(&short), None);
        assert_eq!(sent_ns_of(&[]), None);
    }

    #[test]
    fn the_mean_delay_is_zero_before_any_sample() {
        let c = UdpCounters::default();
        assert_eq!(c.owd_mean_ns(), 0);
        c.owd_sum_ns.store(30, Ordering::SeqCst);
        c.owd_samples.store(3, Ordering::SeqCst);
        assert_eq!(c.owd_mean_ns(), 10);
    }
}
