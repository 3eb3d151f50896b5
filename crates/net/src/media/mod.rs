//! The media transport over UDP: TFRC (RFC 5348) or DFlow from
//! `latlab_proto::tfrc`, driven in real time.
//!
//! - `sender`: a media-like source (constant packet size, always data)
//!   paced by [`latlab_proto::tfrc::TfrcSender`]; records rate, RTT, p and
//!   what the receiver reports.
//! - `receiver`: [`latlab_proto::tfrc::TfrcReceiver`] fed from the socket;
//!   answers with feedback and records rate, one-way delay and loss.
//!
//! Both are single-threaded loops: read every waiting datagram, feed the
//! machine, send what it asks for, then sleep until the socket is readable
//! or the next deadline (pacing slot, protocol timer, report, end) comes
//! (see `clock`). The loops mirror how the simulator drives the same
//! machines (crates/sim, `poll_tfrc_sender` / `poll_tfrc_receiver`): each
//! machine is polled right after it is fed.

pub mod receiver;
pub mod sender;
pub mod wire;

use std::io;
use std::net::{SocketAddr, UdpSocket};

use crate::media::wire::{MalformedCounts, MAX_PACKET_BYTES};

/// The largest datagram read: anything longer is truncated by the kernel
/// and then fails to parse with a length error.
pub const RECV_BUF_BYTES: usize = MAX_PACKET_BYTES + 1;

/// Datagrams read per loop turn at most, so that a flood cannot starve the
/// pacer or the timers.
pub const MAX_READS_PER_TURN: usize = 256;

/// Errors that end a run early.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("cannot bind {addr}: {source}")]
    Bind { addr: SocketAddr, source: io::Error },
    #[error("socket setup: {0}")]
    Socket(io::Error),
    #[error("record: {0}")]
    Record(io::Error),
}

/// Bind a nonblocking UDP socket.
pub fn bind(addr: SocketAddr) -> Result<UdpSocket, RunError> {
    let sock = UdpSocket::bind(addr).map_err(|source| RunError::Bind { addr, source })?;
    sock.set_nonblocking(true).map_err(RunError::Socket)?;
    Ok(sock)
}

/// One datagram if one is waiting. Read errors other than "nothing there"
/// (e.g. an ICMP error reported on the socket) are counted, not fatal.
pub fn try_recv(sock: &UdpSocket, buf: &mut [u8], recv_errors: &mut u64) -> Option<(usize, SocketAddr)> {
    match sock.recv_from(buf) {
        Ok(x) => Some(x),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => None,
        Err(e) if e.kind() == io::ErrorKind::Interrupted => None,
        Err(_) => {
            *recv_errors += 1;
            None
        }
    }
}

/// A random session id (the kernel's generator; the clock if that fails).
pub fn new_session_id() -> u32 {
    let mut b = [0u8; 4];
    // SAFETY: writes at most 4 bytes into `b`.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    if n == 4 {
        u32::from_ne_bytes(b)
    } else {
        let t = crate::clock::now_ns() ^ ((std::process::id() as u64) << 32);
        (t ^ (t >> 29)) as u32
    }
}

/// Print one interval line unless quiet.
pub fn say(quiet: bool, line: std::fmt::Arguments) {
    if !quiet {
        println!("{line}");
    }
}

/// Counters common to both ends' summaries.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct SocketCounters {
    pub datagrams_received: u64,
    pub recv_errors: u64,
    pub send_errors: u64,
    pub dropped: MalformedCounts,
}

#[cfg(test)]
mod tests {
    use super::receiver::{self, RecvOptions};
    use super::sender::{self, SendOptions};
    use latlab_proto::tfrc::TfrcConfig;

    /// A short DFlow session over loopback, both loops in this process:
    /// packets flow, feedback comes back, the two ends agree.
    #[test]
    fn loopback_session() {
        let listen = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = listen.local_addr().unwrap();
        drop(listen);
        let rx = std::thread::spawn(move || {
            receiver::run(&RecvOptions {
                listen: addr,
                duration_ns: Some(10_000_000_000),
                idle_timeout_ns: Some(500_000_000),
                warmup_ns: 500_000_000,
                interval_ns: 100_000_000,
                record: None,
                summary: None,
                quiet: true,
            })
            .unwrap()
        });
        std::thread::sleep(std::time::Duration::from_millis(100));
        let tx = sender::run(&SendOptions {
            to: addr,
            bind: "127.0.0.1:0".parse().unwrap(),
            config: TfrcConfig {
                segment_bytes: 300,
                ..TfrcConfig::dflow()
            },
            duration_ns: 1_500_000_000,
            max_rate_bps: Some(480_000.0),
            interval_ns: 100_000_000,
            record: None,
            summary: None,
            quiet: true,
        })
        .unwrap();
        let rx = rx.join().unwrap();
        assert_eq!(rx.session_id, Some(tx.session_id));
        assert_eq!(rx.mode, Some("dflow"));
        // 480 kbit/s of 300-byte packets is 200 per second; slow start
        // reaches the ceiling within a few RTTs.
        assert!(
            tx.packets_sent > 150 && tx.packets_sent <= 301,
            "{}",
            tx.packets_sent
        );
        assert_eq!(rx.packets_received + rx.lost_packets, tx.packets_sent);
        assert!(tx.feedback_received > 10);
        assert!(rx.measured.packets_received > 100 && rx.measured.queueing_delay_ms.is_some());
        assert_eq!(rx.socket.dropped.dropped() + tx.socket.dropped.dropped(), 0);
    }
}
