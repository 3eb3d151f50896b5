//! `getsockopt(TCP_INFO)`: the kernel's per-connection counters, laid out
//! as in include/uapi/linux/tcp.h (Linux 5.x/6.x). The libc crate's
//! `tcp_info` stops at `tcpi_total_retrans`; the fields after it
//! (`tcpi_bytes_acked`, `tcpi_bytes_sent`, `tcpi_snd_wnd`, ...) are the ones
//! the flow tables need, so the struct is spelled out here. A kernel that
//! fills fewer bytes leaves the rest zero (`getsockopt` reports the length).

use std::io;
use std::os::fd::RawFd;

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct TcpInfo {
    pub state: u8,
    pub ca_state: u8,
    pub retransmits: u8,
    pub probes: u8,
    pub backoff: u8,
    pub options: u8,
    pub wscale: u8,
    pub flags: u8,
    pub rto_us: u32,
    pub ato_us: u32,
    pub snd_mss: u32,
    pub rcv_mss: u32,
    /// Segments sent and not yet cumulatively acknowledged.
    pub unacked: u32,
    pub sacked: u32,
    pub lost: u32,
    pub retrans: u32,
    pub fackets: u32,
    pub last_data_sent_ms: u32,
    pub last_ack_sent_ms: u32,
    pub last_data_recv_ms: u32,
    pub last_ack_recv_ms: u32,
    pub pmtu: u32,
    pub rcv_ssthresh: u32,
    /// Smoothed RTT, µs.
    pub rtt_us: u32,
    pub rttvar_us: u32,
    /// Segments; 0x7fffffff (TCP_INFINITE_SSTHRESH) before the first loss.
    pub snd_ssthresh: u32,
    /// Segments.
    pub snd_cwnd: u32,
    pub advmss: u32,
    pub reordering: u32,
    pub rcv_rtt_us: u32,
    pub rcv_space: u32,
    /// Retransmitted segments over the connection's life.
    pub total_retrans: u32,
    pub pacing_rate: u64,
    pub max_pacing_rate: u64,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub segs_out: u32,
    pub segs_in: u32,
    pub notsent_bytes: u32,
    pub min_rtt_us: u32,
    pub data_segs_in: u32,
    pub data_segs_out: u32,
    pub delivery_rate: u64,
    pub busy_time_us: u64,
    pub rwnd_limited_us: u64,
    pub sndbuf_limited_us: u64,
    pub delivered: u32,
    pub delivered_ce: u32,
    /// Payload bytes sent, retransmissions included.
    pub bytes_sent: u64,
    pub bytes_retrans: u64,
    pub dsack_dups: u32,
    pub reord_seen: u32,
    pub rcv_ooopack: u32,
    /// The peer's advertised receive window after scaling, bytes.
    pub snd_wnd: u32,
    pub rcv_wnd: u32,
    pub rehash: u32,
    pub total_rto: u16,
    pub total_rto_recoveries: u16,
    pub total_rto_time: u32,
}

/// TCP_INFINITE_SSTHRESH (include/net/tcp.h).
pub const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;

/// `tcpi_options` bits (include/uapi/linux/tcp.h): the connection
/// negotiated ECN, and it has received ECT or CE packets.
pub const TCPI_OPT_ECN: u8 = 8;
pub const TCPI_OPT_ECN_SEEN: u8 = 16;

impl TcpInfo {
    /// The socket's counters now.
    pub fn of(fd: RawFd) -> io::Result<TcpInfo> {
        let mut info = TcpInfo::default();
        let mut len = std::mem::size_of::<TcpInfo>() as libc::socklen_t;
        // SAFETY: `info` is a plain repr(C) struct of `len` bytes; the kernel
        // writes at most `len` bytes.
        let rc = unsafe {
            libc::getsockopt(
                fd,
                libc::IPPROTO_TCP,
                libc::TCP_INFO,
                (&mut info as *mut TcpInfo).cast(),
                &mut len,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(info)
    }

    pub fn cwnd_bytes(&self) -> u64 {
        u64::from(self.snd_cwnd) * u64::from(self.snd_mss)
    }

    /// None before the first congestion event (the kernel's "infinite").
    pub fn ssthresh_bytes(&self) -> Option<u64> {
        (self.snd_ssthresh < INFINITE_SSTHRESH)
            .then(|| u64::from(self.snd_ssthresh) * u64::from(self.snd_mss))
    }

    /// The SYN exchange agreed on ECN (RFC 3168 §6.1.1).
    pub fn ecn_negotiated(&self) -> bool {
        self.options & TCPI_OPT_ECN != 0
    }

    /// This end has received a packet marked ECT or CE.
    pub fn ecn_seen(&self) -> bool {
        self.options & TCPI_OPT_ECN_SEEN != 0
    }

    pub fn srtt_ns(&self) -> u64 {
        u64::from(self.rtt_us) * 1000
    }

    /// The kernel's packets in flight (tcp_packets_in_flight: unacked −
    /// sacked − lost + retransmitted), in bytes.
    pub fn flight_bytes(&self) -> u64 {
        let pkts = (u64::from(self.unacked) + u64::from(self.retrans))
            .saturating_sub(u64::from(self.sacked) + u64::from(self.lost));
        pkts * u64::from(self.snd_mss)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_matches_the_kernel_header() {
        // Offsets from include/uapi/linux/tcp.h: tcpi_total_retrans at 100,
        // tcpi_bytes_acked at 120, tcpi_bytes_sent at 200, tcpi_snd_wnd at 228.
        let i = TcpInfo::default();
        let base = &i as *const TcpInfo as usize;
        assert_eq!(&i.total_retrans as *const u32 as usize - base, 100);
        assert_eq!(&i.bytes_acked as *const u64 as usize - base, 120);
        assert_eq!(&i.bytes_sent as *const u64 as usize - base, 200);
        assert_eq!(&i.snd_wnd as *const u32 as usize - base, 228);
        // tcpi_options at 5, tcpi_delivered_ce at 196.
        assert_eq!(&i.options as *const u8 as usize - base, 5);
        assert_eq!(&i.delivered_ce as *const u32 as usize - base, 196);
    }

    #[test]
    fn a_live_loopback_connection_reports_its_counters() {
        use std::io::{Read, Write};
        use std::os::fd::AsRawFd;
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        c.write_all(&[7u8; 10_000]).unwrap();
        let mut buf = vec![0u8; 10_000];
        s.read_exact(&mut buf).unwrap();
        let i = TcpInfo::of(c.as_raw_fd()).unwrap();
        assert_eq!(i.bytes_sent, 10_000);
        assert!(i.snd_mss > 0 && i.snd_cwnd > 0);
        let r = TcpInfo::of(s.as_raw_fd()).unwrap();
        assert_eq!(r.bytes_received, 10_000);
    }
}
