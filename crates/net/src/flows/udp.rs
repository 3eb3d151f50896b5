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
//! `local_drops` and the schedule goes on. Linux drops such a datagram
//! silently unless the socket has IP_RECVERR (net/ipv4/udp.c,
//! `udp_send_skb`: ENOBUFS becomes 0 and only the namespace's
//! `SndbufErrors` counts it), so the sender sets it. On the emulated path
//! that queue never refuses, though: the TUN driver takes every packet and
//! drops it itself when the emulator has not read its ring in time
//! (drivers/net/tun.c, `tun_net_xmit`), and the send still succeeds. Those
//! drops are the device's `tx_dropped`, for all flows together; the run
//! records them ([`device_tx_drops`], `client_device_drops` in the
//! summary). Measured (kernel 6.18): 2,000 datagrams sent with IP_RECVERR
//! off, then 2,000 with it on, to a TUN device with a ten-packet ring that
//! nobody reads: all 4,000 sends succeeded and `tx_dropped` rose by 3,991.
//!
//! Loss is measured two ways at the sink, neither of them needing the
//! sender's counters: `lost_pkts` are the sequence numbers missing below the
//! highest one received (the path is one FIFO, so a gap is a loss, never a
//! reordering; datagrams still in flight at the end are not counted), and
//! `sink_drops` are datagrams the sink's own socket dropped for want of
//! buffer space (SO_MEMINFO `SK_MEMINFO_DROPS`). The sink's buffer is made
//! large (SO_RCVBUFFORCE, [`SINK_RCVBUF_BYTES`]) so that a sink thread
//! descheduled on a busy machine does not drop; `sink_drops` shows whether
//! it did, since such drops are not the emulated link's.
//!
//! The sender sleeps until each datagram is due with a 1 µs timer slack
//! (PR_SET_TIMERSLACK; the default 50 µs would bunch datagrams at a few
//! hundred Mbit/s); when it wakes late it sends every datagram already due at
//! once, stamped with the real send time, so the schedule never drifts.

use std::fs::File;
use std::io;
use std::net::{SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::plan::{FlowSpec, STAMP_BYTES};
use super::{enter, os_err, set_opt, sleep_until, timeout_opt};
use crate::clock::now_ns;

/// The sink socket's receive buffer: 0.3 s of 100 Mbit/s, far more than a
/// descheduled sink thread falls behind (the kernel doubles the value for
/// its bookkeeping).
pub const SINK_RCVBUF_BYTES: i32 = 4 << 20;

/// The sender thread's timer slack, ns (PR_SET_TIMERSLACK).
const SENDER_TIMER_SLACK_NS: libc::c_ulong = 1_000;

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
    /// The highest sequence number received (the first datagram is 1).
    pub max_seq: AtomicU64,
    /// Datagrams the sink's socket dropped (SK_MEMINFO_DROPS), read when
    /// the sink stops.
    pub sink_drops: AtomicU64,
}

impl UdpCounters {
    /// Mean one-way delay so far, ns (0 before any sample).
    pub fn owd_mean_ns(&self) -> u64 {
        self.owd_sum_ns
            .load(Ordering::SeqCst)
            .checked_div(self.owd_samples.load(Ordering::SeqCst))
            .unwrap_or(0)
    }

    /// Datagrams missing below the highest sequence number received.
    pub fn lost_pkts(&self) -> u64 {
        self.max_seq
            .load(Ordering::SeqCst)
            .saturating_sub(self.owd_samples.load(Ordering::SeqCst))
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

/// The sequence number and send time in a received datagram, if it is long
/// enough to carry them.
pub fn stamp_of(datagram: &[u8]) -> Option<(u64, u64)> {
    let seq: [u8; 8] = datagram.get(..8)?.try_into().ok()?;
    let sent: [u8; 8] = datagram.get(8..STAMP_BYTES)?.try_into().ok()?;
    Some((u64::from_le_bytes(seq), u64::from_le_bytes(sent)))
}

/// The sender's socket options: see the module notes.
fn sender_options(sock: &UdpSocket) -> Result<(), String> {
    set_opt(
        sock.as_raw_fd(),
        libc::IPPROTO_IP,
        libc::IP_RECVERR,
        &1i32,
        "IP_RECVERR",
    )?;
    // SAFETY: prctl(2) on this thread's own timer slack.
    if unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, SENDER_TIMER_SLACK_NS) } != 0 {
        return Err(os_err("PR_SET_TIMERSLACK"));
    }
    Ok(())
}

/// A large receive buffer (SO_RCVBUFFORCE needs CAP_NET_ADMIN, which an
/// emulated run has; SO_RCVBUF, capped by net.core.rmem_max, otherwise).
pub fn sink_options(sock: &UdpSocket) -> Result<(), String> {
    let fd = sock.as_raw_fd();
    set_opt(
        fd,
        libc::SOL_SOCKET,
        libc::SO_RCVBUFFORCE,
        &SINK_RCVBUF_BYTES,
        "SO_RCVBUFFORCE",
    )
    .or_else(|_| {
        set_opt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            &SINK_RCVBUF_BYTES,
            "SO_RCVBUF",
        )
    })?;
    timeout_opt(fd, libc::SO_RCVTIMEO, "SO_RCVTIMEO")
}

/// Packets the network devices of namespace `ns` dropped on transmit
/// (`tx_dropped`, summed over every device but `lo`), read from
/// /proc/thread-self/net/dev by a thread inside it.
pub fn device_tx_drops(ns: &File) -> Result<u64, String> {
    std::thread::scope(|s| {
        s.spawn(|| {
            enter(ns)?;
            let text = std::fs::read_to_string("/proc/thread-self/net/dev")
                .map_err(|e| format!("/proc/thread-self/net/dev: {e}"))?;
            parse_tx_dropped(&text)
        })
        .join()
        .unwrap_or_else(|_| Err("the thread reading /proc/net/dev panicked".into()))
    })
}

/// The sum of the transmit `drop` column of /proc/net/dev, `lo` left out.
fn parse_tx_dropped(text: &str) -> Result<u64, String> {
    let mut total = 0;
    // Two header lines; then "name: 8 receive counters, 8 transmit counters",
    // the transmit ones being bytes, packets, errs, drop, ...
    for line in text.lines().skip(2) {
        let Some((name, counters)) = line.split_once(':') else {
            continue;
        };
        if name.trim() == "lo" {
            continue;
        }
        let drop = counters
            .split_whitespace()
            .nth(11)
            .and_then(|v| v.parse::<u64>().ok())
            .ok_or_else(|| format!("/proc/net/dev: no transmit drop count in {line:?}"))?;
        total += drop;
    }
    Ok(total)
}

/// Datagrams the socket dropped (SO_MEMINFO's SK_MEMINFO_DROPS: a full
/// receive buffer, mostly).
fn socket_drops(sock: &UdpSocket) -> Result<u64, String> {
    // Every kernel since 4.x returns at least up to the drops counter (the
    // last entry, SK_MEMINFO_VARS = 9 in include/uapi/linux/sock_diag.h).
    let mut info = [0u32; libc::SK_MEMINFO_DROPS as usize + 1];
    let mut len = std::mem::size_of_val(&info) as libc::socklen_t;
    // SAFETY: SO_MEMINFO into a u32 array of `len` bytes.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_MEMINFO,
            info.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(os_err("SO_MEMINFO"));
    }
    Ok(u64::from(info[libc::SK_MEMINFO_DROPS as usize]))
}

/// The sender: enter the client namespace, then send on the source's
/// schedule from the flow's start until the run's end (`end_ns`, as the
/// simulator's source stops there). The stop ends the wait for a datagram
/// not yet due; one already due is sent first.
pub fn sender(
    flow: &FlowSpec,
    to: SocketAddrV4,
    client_ns: &File,
    t0: u64,
    end_ns: u64,
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
    if let Err(e) = sender_options(&sock) {
        return err(e);
    }
    let mut source = plan.source.clone();
    if !sleep_until(t0, flow.start_ns, stop) {
        return None;
    }
    source.start(flow.start_ns);
    let mut buf = vec![0u8; 64 * 1024];
    while let Some(due) = source.next_ns() {
        // Datagrams due at or after the end are not sent, whenever the
        // main thread (late on a loaded machine) raises the stop. Those
        // due before it are, even once the stop is up: on a loaded machine
        // this thread may still be catching up with the schedule when the
        // main thread raises it at the end, and the simulator's source
        // sends everything due before the end. Only a datagram not yet due
        // waits, and the stop ends that wait.
        if due >= end_ns {
            break;
        }
        if now_ns().saturating_sub(t0) < due && !sleep_until(t0, due, stop) {
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

/// The sink: a socket bound in the server namespace (the caller binds it
/// and sets [`sink_options`]), read until the stop.
pub fn sink(
    flow: &FlowSpec,
    sock: &UdpSocket,
    t0: u64,
    c: &UdpCounters,
    stop: &AtomicBool,
) -> Option<String> {
    let mut buf = vec![0u8; 64 * 1024];
    while !stop.load(Ordering::Relaxed) {
        match sock.recv(&mut buf) {
            Ok(n) => {
                let now = now_ns().saturating_sub(t0);
                c.received_pkts.fetch_add(1, Ordering::SeqCst);
                c.received_bytes.fetch_add(n as u64, Ordering::SeqCst);
                if let Some((seq, sent)) = stamp_of(&buf[..n]) {
                    let owd = now.saturating_sub(sent);
                    c.owd_sum_ns.fetch_add(owd, Ordering::SeqCst);
                    c.owd_max_ns.fetch_max(owd, Ordering::SeqCst);
                    c.owd_samples.fetch_add(1, Ordering::SeqCst);
                    c.max_seq.fetch_max(seq, Ordering::SeqCst);
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
    match socket_drops(sock) {
        Ok(n) => {
            c.sink_drops.store(n, Ordering::SeqCst);
            None
        }
        Err(e) => Some(format!("flow {}: {e}", flow.flow_id)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_round_trips_and_short_datagrams_carry_none() {
        let mut buf = [0xffu8; 40];
        stamp(&mut buf, 7, 123_456_789);
        assert_eq!(stamp_of(&buf), Some((7, 123_456_789)));
        assert_eq!(&buf[..8], &7u64.to_le_bytes());
        assert_eq!(buf[16], 0xff, "bytes after the stamp are left alone");
        let mut short = [0u8; 10];
        stamp(&mut short, 1, 2);
        assert_eq!(stamp_of(&short), None);
        assert_eq!(stamp_of(&[]), None);
    }

    #[test]
    fn device_drops_are_the_transmit_drop_column_without_lo() {
        let dev = "Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:     100       2    0    0    0     0          0         0      100       2    0    9    0     0       0          0
  tun0: 5000000    4000    0    3    0     0          0         0  9000000    7000    0   17    0     0       0          0
  eth1:       0       0    0    0    0     0          0         0        0       0    0    4    0     0       0          0
";
        assert_eq!(parse_tx_dropped(dev), Ok(21));
        assert!(parse_tx_dropped(&dev.replace("   17 ", " x ")).is_err());
    }

    #[test]
    fn losses_are_the_gaps_below_the_highest_sequence_number() {
        let c = UdpCounters::default();
        assert_eq!(c.lost_pkts(), 0);
        // Datagrams 1, 2, 4 and 7 arrive: 3, 5 and 6 are lost.
        for seq in [1, 2, 4, 7] {
            c.max_seq.fetch_max(seq, Ordering::SeqCst);
            c.owd_samples.fetch_add(1, Ordering::SeqCst);
        }
        assert_eq!(c.lost_pkts(), 3);
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
