//! getsockopt(SOL_MPTCP) on an MPTCP socket (include/uapi/linux/mptcp.h,
//! net/mptcp/sockopt.c):
//!
//! - MPTCP_INFO: struct mptcp_info, the connection's counters and token.
//!   The kernel copies min(our length, its length); fields a kernel does not
//!   fill come back as `None`.
//! - MPTCP_TCPINFO and MPTCP_SUBFLOW_ADDRS: a struct mptcp_subflow_data
//!   header then one element per subflow. We say how big our header and our
//!   element are (size_subflow_data, size_user); the kernel answers with the
//!   number of subflows, its own element size (size_kernel) and the stride it
//!   used (size_user = min(ours, its)). A subflow that did not fit is still
//!   counted in num_subflows, so a too-small buffer is detected and grown.
//!
//! A socket that is plain TCP, or an MPTCP socket that fell back to TCP
//! (the peer did not speak MPTCP), answers EOPNOTSUPP: that is
//! [`SockoptError::NotMptcp`], a value the caller can act on (relay without
//! per-subflow control), not a failure.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::RawFd;

use serde::Serialize;

use super::FourTuple;
use crate::flows::tcp_info::TcpInfo;

/// SOL_MPTCP (include/linux/socket.h), not in the libc crate.
pub const SOL_MPTCP: libc::c_int = 284;
pub const MPTCP_INFO: libc::c_int = 1;
pub const MPTCP_TCPINFO: libc::c_int = 2;
pub const MPTCP_SUBFLOW_ADDRS: libc::c_int = 3;
/// mptcp_info.mptcpi_flags: the connection fell back to plain TCP.
pub const MPTCP_INFO_FLAG_FALLBACK: u32 = 1;

/// sizeof(struct mptcp_subflow_data).
const SUBFLOW_DATA_LEN: usize = 16;
/// sizeof(struct mptcp_subflow_addrs): two __kernel_sockaddr_storage.
const SUBFLOW_ADDRS_LEN: usize = 256;
/// sizeof(struct mptcp_info) as of Linux 6.18 (last_ack_recv ends at 96).
const MPTCP_INFO_LEN: usize = 96;

#[derive(Debug, thiserror::Error)]
pub enum SockoptError {
    /// EOPNOTSUPP: plain TCP, or an MPTCP socket that fell back to TCP.
    #[error("not an MPTCP connection (plain TCP or fallback to TCP)")]
    NotMptcp,
    /// ENOPROTOOPT: this kernel does not know the option.
    #[error("getsockopt(SOL_MPTCP, {0}) is not supported by this kernel")]
    Unsupported(&'static str),
    #[error("getsockopt(SOL_MPTCP, {what}): {source}")]
    Io {
        what: &'static str,
        #[source]
        source: io::Error,
    },
    /// The kernel's answer does not fit the layout (a bug or a kernel
    /// change this code does not know).
    #[error("getsockopt(SOL_MPTCP, {what}): {detail}")]
    Malformed { what: &'static str, detail: String },
}

/// getsockopt into `buf`; the length the kernel wrote.
fn getsockopt(
    fd: RawFd,
    opt: libc::c_int,
    what: &'static str,
    buf: &mut [u8],
) -> Result<usize, SockoptError> {
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `buf`.
    let rc = unsafe { libc::getsockopt(fd, SOL_MPTCP, opt, buf.as_mut_ptr().cast(), &mut len) };
    if rc != 0 {
        let err = io::Error::last_os_error();
        return Err(match err.raw_os_error() {
            Some(libc::EOPNOTSUPP) => SockoptError::NotMptcp,
            Some(libc::ENOPROTOOPT) => SockoptError::Unsupported(what),
            _ => SockoptError::Io { what, source: err },
        });
    }
    Ok((len as usize).min(buf.len()))
}

/// struct mptcp_info. Counters added by later kernels are `None` when the
/// kernel did not fill them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MptcpInfo {
    /// Subflows beyond the initial one.
    pub subflows: u8,
    pub add_addr_signal: u8,
    pub add_addr_accepted: u8,
    pub subflows_max: u8,
    pub add_addr_signal_max: u8,
    pub add_addr_accepted_max: u8,
    pub flags: u32,
    /// The connection token, as in the path manager's events.
    pub token: u32,
    pub write_seq: u64,
    pub snd_una: u64,
    pub rcv_nxt: u64,
    pub local_addr_used: Option<u8>,
    pub local_addr_max: Option<u8>,
    pub csum_enabled: Option<bool>,
    pub retransmits: Option<u32>,
    pub bytes_retrans: Option<u64>,
    pub bytes_sent: Option<u64>,
    pub bytes_received: Option<u64>,
    pub bytes_acked: Option<u64>,
    /// All subflows, the initial one included (6.8+).
    pub subflows_total: Option<u8>,
    pub last_data_sent_ms: Option<u32>,
    pub last_data_recv_ms: Option<u32>,
    pub last_ack_recv_ms: Option<u32>,
    /// Bytes the kernel filled.
    pub len: usize,
}

impl MptcpInfo {
    pub fn fallback(&self) -> bool {
        self.flags & MPTCP_INFO_FLAG_FALLBACK != 0
    }

    /// Decode the kernel's bytes (any length; fields past it are `None`).
    pub fn from_bytes(b: &[u8]) -> Result<MptcpInfo, SockoptError> {
        // The first version (5.7) ends at rcv_nxt: 40 bytes.
        if b.len() < 40 {
            return Err(SockoptError::Malformed {
                what: "MPTCP_INFO",
                detail: format!("{} bytes, the first struct version has 40", b.len()),
            });
        }
        let u8_at = |o: usize| b.get(o).copied();
        let u32_at = |o: usize| {
            b.get(o..o + 4)
                .map(|s| u32::from_ne_bytes(s.try_into().expect("4")))
        };
        let u64_at = |o: usize| {
            b.get(o..o + 8)
                .map(|s| u64::from_ne_bytes(s.try_into().expect("8")))
        };
        Ok(MptcpInfo {
            subflows: b[0],
            add_addr_signal: b[1],
            add_addr_accepted: b[2],
            subflows_max: b[3],
            add_addr_signal_max: b[4],
            add_addr_accepted_max: b[5],
            flags: u32_at(8).unwrap_or(0),
            token: u32_at(12).unwrap_or(0),
            write_seq: u64_at(16).unwrap_or(0),
            snd_una: u64_at(24).unwrap_or(0),
            rcv_nxt: u64_at(32).unwrap_or(0),
            local_addr_used: u8_at(40),
            local_addr_max: u8_at(41),
            csum_enabled: u8_at(42).map(|c| c != 0),
            retransmits: u32_at(44),
            bytes_retrans: u64_at(48),
            bytes_sent: u64_at(56),
            bytes_received: u64_at(64),
            bytes_acked: u64_at(72),
            subflows_total: u8_at(80),
            last_data_sent_ms: u32_at(84),
            last_data_recv_ms: u32_at(88),
            last_ack_recv_ms: u32_at(92),
            len: b.len(),
        })
    }
}

/// getsockopt(MPTCP_INFO).
pub fn mptcp_info(fd: RawFd) -> Result<MptcpInfo, SockoptError> {
    // Room beyond today's struct, so a longer future struct is still read
    // (its extra fields ignored).
    let mut buf = [0u8; MPTCP_INFO_LEN + 64];
    let n = getsockopt(fd, MPTCP_INFO, "MPTCP_INFO", &mut buf)?;
    MptcpInfo::from_bytes(&buf[..n])
}

/// The connection token (`mptcpi_token`), the key of the path manager's
/// events: map an event to the accepted socket with it.
pub fn token(fd: RawFd) -> Result<u32, SockoptError> {
    mptcp_info(fd).map(|i| i.token)
}

/// The elements of a struct mptcp_subflow_data answer.
#[derive(Debug)]
struct SubflowData {
    /// Subflows the connection has (all of them, copied or not).
    num_subflows: usize,
    /// The kernel's element size.
    size_kernel: usize,
    /// One byte slice per copied subflow, `stride` bytes each.
    elems: Vec<Vec<u8>>,
}

fn subflow_data_request(elem_len: usize, capacity: usize) -> Vec<u8> {
    let mut buf = vec![0u8; SUBFLOW_DATA_LEN + elem_len * capacity];
    buf[0..4].copy_from_slice(&(SUBFLOW_DATA_LEN as u32).to_ne_bytes());
    // num_subflows and size_kernel must be 0 (set by the kernel).
    buf[12..16].copy_from_slice(&(elem_len as u32).to_ne_bytes());
    buf
}

/// Decode an answer of `len` bytes: header then `num` elements of the stride
/// the kernel chose.
fn parse_subflow_data(buf: &[u8], what: &'static str) -> Result<SubflowData, SockoptError> {
    let bad = |detail: String| SockoptError::Malformed { what, detail };
    if buf.len() < SUBFLOW_DATA_LEN {
        return Err(bad(format!(
            "{} bytes, shorter than struct mptcp_subflow_data",
            buf.len()
        )));
    }
    let word = |i: usize| u32::from_ne_bytes(buf[i * 4..i * 4 + 4].try_into().expect("4")) as usize;
    let (hdr_len, num, size_kernel, stride) = (word(0), word(1), word(2), word(3));
    if hdr_len < SUBFLOW_DATA_LEN || hdr_len > buf.len() {
        return Err(bad(format!(
            "size_subflow_data {hdr_len} outside [16, {}]",
            buf.len()
        )));
    }
    let data = &buf[hdr_len..];
    if stride == 0 {
        if num > 0 && !data.is_empty() {
            return Err(bad(format!("{num} subflows with an element size of 0")));
        }
        return Ok(SubflowData {
            num_subflows: num,
            size_kernel,
            elems: Vec::new(),
        });
    }
    let copied = num.min(data.len() / stride);
    let elems = data
        .chunks_exact(stride)
        .take(copied)
        .map(<[u8]>::to_vec)
        .collect();
    Ok(SubflowData {
        num_subflows: num,
        size_kernel,
        elems,
    })
}

/// getsockopt of a subflow_data option, growing the buffer until every
/// subflow fits (subflows can come and go between two calls).
fn subflow_data(
    fd: RawFd,
    opt: libc::c_int,
    what: &'static str,
    elem_len: usize,
) -> Result<SubflowData, SockoptError> {
    let mut capacity = 8;
    for _ in 0..4 {
        let mut buf = subflow_data_request(elem_len, capacity);
        let n = getsockopt(fd, opt, what, &mut buf)?;
        let data = parse_subflow_data(&buf[..n], what)?;
        if data.elems.len() >= data.num_subflows {
            return Ok(data);
        }
        capacity = data.num_subflows + 4;
    }
    Err(SockoptError::Malformed {
        what,
        detail: "the number of subflows kept changing".into(),
    })
}

/// getsockopt(MPTCP_TCPINFO): each subflow's TCP_INFO, in the kernel's
/// subflow order (the same order as [`subflow_addrs`]).
pub fn subflow_tcp_info(fd: RawFd) -> Result<Vec<TcpInfo>, SockoptError> {
    let ours = std::mem::size_of::<TcpInfo>();
    let data = subflow_data(fd, MPTCP_TCPINFO, "MPTCP_TCPINFO", ours)?;
    Ok(data
        .elems
        .iter()
        .map(|e| {
            let mut info = TcpInfo::default();
            let n = e.len().min(ours);
            // SAFETY: TcpInfo is a repr(C) struct of integers (any bit
            // pattern is valid); we copy at most its size. A shorter kernel
            // struct leaves the later fields zero.
            unsafe {
                std::ptr::copy_nonoverlapping(e.as_ptr(), (&mut info as *mut TcpInfo).cast::<u8>(), n);
            }
            info
        })
        .collect())
}

/// Decode a struct sockaddr_in / sockaddr_in6 from a sockaddr_storage.
fn sockaddr(b: &[u8]) -> Result<SocketAddr, String> {
    let family = u16::from_ne_bytes(b.get(0..2).ok_or("short sockaddr")?.try_into().expect("2"));
    let port = u16::from_be_bytes(b.get(2..4).ok_or("short sockaddr")?.try_into().expect("2"));
    match i32::from(family) {
        libc::AF_INET => {
            let a: [u8; 4] = b.get(4..8).ok_or("short sockaddr_in")?.try_into().expect("4");
            Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::from(a)), port))
        }
        libc::AF_INET6 => {
            let a: [u8; 16] = b.get(8..24).ok_or("short sockaddr_in6")?.try_into().expect("16");
            Ok(SocketAddr::new(IpAddr::V6(Ipv6Addr::from(a)), port))
        }
        f => Err(format!("address family {f}")),
    }
}

/// getsockopt(MPTCP_SUBFLOW_ADDRS): each subflow's local and remote address.
pub fn subflow_addrs(fd: RawFd) -> Result<Vec<FourTuple>, SockoptError> {
    let data = subflow_data(fd, MPTCP_SUBFLOW_ADDRS, "MPTCP_SUBFLOW_ADDRS", SUBFLOW_ADDRS_LEN)?;
    decode_addrs(&data)
}

fn decode_addrs(data: &SubflowData) -> Result<Vec<FourTuple>, SockoptError> {
    let half = SUBFLOW_ADDRS_LEN / 2;
    data.elems
        .iter()
        .map(|e| {
            let bad = |detail: String| SockoptError::Malformed {
                what: "MPTCP_SUBFLOW_ADDRS",
                detail,
            };
            if e.len() < SUBFLOW_ADDRS_LEN {
                return Err(bad(format!(
                    "element of {} bytes (kernel's: {}), expected {SUBFLOW_ADDRS_LEN}",
                    e.len(),
                    data.size_kernel
                )));
            }
            Ok(FourTuple {
                local: sockaddr(&e[..half]).map_err(bad)?,
                remote: sockaddr(&e[half..]).map_err(bad)?,
            })
        })
        .collect()
}

/// One subflow's counters: TCP_INFO joined with its 4-tuple.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SubflowStats {
    pub tuple: FourTuple,
    /// Payload bytes sent, retransmissions included (tcpi_bytes_sent).
    pub bytes_sent: u64,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub bytes_retrans: u64,
    /// Retransmitted segments over the subflow's life.
    pub total_retrans: u32,
    pub srtt_us: u32,
    pub cwnd_segments: u32,
    pub mss_bytes: u32,
}

/// Per-subflow statistics: MPTCP_SUBFLOW_ADDRS and MPTCP_TCPINFO read
/// back to back and joined by position (retried when a subflow came or went
/// in between).
pub fn subflow_stats(fd: RawFd) -> Result<Vec<SubflowStats>, SockoptError> {
    for _ in 0..3 {
        let addrs = subflow_addrs(fd)?;
        let infos = subflow_tcp_info(fd)?;
        if addrs.len() != infos.len() || subflow_addrs(fd)? != addrs {
            continue;
        }
        return Ok(addrs
            .into_iter()
            .zip(infos)
            .map(|(tuple, i)| SubflowStats {
                tuple,
                bytes_sent: i.bytes_sent,
                bytes_acked: i.bytes_acked,
                bytes_received: i.bytes_received,
                bytes_retrans: i.bytes_retrans,
                total_retrans: i.total_retrans,
                srtt_us: i.rtt_us,
                cwnd_segments: i.snd_cwnd,
                mss_bytes: i.snd_mss,
            })
            .collect());
    }
    Err(SockoptError::Malformed {
        what: "MPTCP_SUBFLOW_ADDRS/MPTCP_TCPINFO",
        detail: "the subflows kept changing between the two reads".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(num: u32, size_kernel: u32, stride: u32, elems: &[Vec<u8>]) -> Vec<u8> {
        let mut b = Vec::new();
        for w in [16, num, size_kernel, stride] {
            b.extend_from_slice(&w.to_ne_bytes());
        }
        for e in elems {
            b.extend_from_slice(e);
        }
        b
    }

    fn sockaddr_in(addr: [u8; 4], port: u16) -> Vec<u8> {
        let mut s = vec![0u8; 128];
        s[0..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
        s[2..4].copy_from_slice(&port.to_be_bytes());
        s[4..8].copy_from_slice(&addr);
        s
    }

    #[test]
    fn request_header_says_our_sizes_and_zeroes_the_kernels() {
        let r = subflow_data_request(256, 2);
        assert_eq!(r.len(), 16 + 512);
        assert_eq!(&r[0..4], &16u32.to_ne_bytes());
        assert_eq!(&r[4..12], &[0; 8]);
        assert_eq!(&r[12..16], &256u32.to_ne_bytes());
    }

    #[test]
    fn subflow_addrs_decode_ipv4_and_ipv6() {
        let mut e1 = sockaddr_in([10, 0, 1, 1], 5001);
        e1.extend(sockaddr_in([10, 0, 2, 2], 40000));
        let mut e2 = vec![0u8; 256];
        e2[0..2].copy_from_slice(&(libc::AF_INET6 as u16).to_ne_bytes());
        e2[2..4].copy_from_slice(&443u16.to_be_bytes());
        e2[8..24].copy_from_slice(&"fd00::1".parse::<Ipv6Addr>().unwrap().octets());
        e2[128..130].copy_from_slice(&(libc::AF_INET6 as u16).to_ne_bytes());
        e2[130..132].copy_from_slice(&50000u16.to_be_bytes());
        e2[136..152].copy_from_slice(&"fd00::2".parse::<Ipv6Addr>().unwrap().octets());
        let buf = answer(2, 256, 256, &[e1, e2]);
        let data = parse_subflow_data(&buf, "t").unwrap();
        let tuples = decode_addrs(&data).unwrap();
        assert_eq!(tuples[0].local, "10.0.1.1:5001".parse().unwrap());
        assert_eq!(tuples[0].remote, "10.0.2.2:40000".parse().unwrap());
        assert_eq!(tuples[1].local, "[fd00::1]:443".parse().unwrap());
        assert_eq!(tuples[1].remote, "[fd00::2]:50000".parse().unwrap());
    }

    #[test]
    fn a_shorter_kernel_element_is_read_with_its_stride() {
        // A kernel whose tcp_info is 8 bytes shorter than ours: stride 8
        // bytes less; each element lands at the kernel's stride.
        let stride = std::mem::size_of::<TcpInfo>() - 8;
        let mut e = vec![0u8; stride];
        e[0] = 1; // tcpi_state = TCP_ESTABLISHED
        let buf = answer(3, stride as u32, stride as u32, &[e.clone(), e.clone(), e]);
        let data = parse_subflow_data(&buf, "t").unwrap();
        assert_eq!(data.elems.len(), 3);
        assert!(data.elems.iter().all(|x| x.len() == stride && x[0] == 1));
    }

    #[test]
    fn subflows_that_did_not_fit_are_counted_and_detected() {
        let buf = answer(5, 256, 256, &[vec![0; 256]]);
        let data = parse_subflow_data(&buf, "t").unwrap();
        assert_eq!((data.num_subflows, data.elems.len()), (5, 1));
    }

    #[test]
    fn malformed_answers_are_errors() {
        assert!(parse_subflow_data(&[0; 8], "t").is_err());
        let mut buf = answer(1, 256, 256, &[]);
        buf[0..4].copy_from_slice(&64u32.to_ne_bytes()); // header longer than the answer
        assert!(parse_subflow_data(&buf, "t").is_err());
        let buf = answer(1, 0, 0, &[vec![1, 2, 3]]);
        assert!(parse_subflow_data(&buf, "t").is_err());
        let mut bad = vec![0u8; 256];
        bad[0..2].copy_from_slice(&(libc::AF_UNIX as u16).to_ne_bytes());
        let data = parse_subflow_data(&answer(1, 256, 256, &[bad]), "t").unwrap();
        let err = decode_addrs(&data).unwrap_err().to_string();
        assert!(err.contains("address family 1"), "{err}");
    }

    #[test]
    fn mptcp_info_versions() {
        let mut b = vec![0u8; MPTCP_INFO_LEN];
        b[0] = 1;
        b[8..12].copy_from_slice(&MPTCP_INFO_FLAG_FALLBACK.to_ne_bytes());
        b[12..16].copy_from_slice(&0xabcdu32.to_ne_bytes());
        b[56..64].copy_from_slice(&12345u64.to_ne_bytes());
        b[80] = 2;
        let full = MptcpInfo::from_bytes(&b).unwrap();
        assert_eq!(
            (full.token, full.subflows, full.subflows_total),
            (0xabcd, 1, Some(2))
        );
        assert_eq!(full.bytes_sent, Some(12345));
        assert!(full.fallback());
        // A 5.7 kernel: 40 bytes; the later counters are absent, not zero.
        let old = MptcpInfo::from_bytes(&b[..40]).unwrap();
        assert_eq!(
            (old.token, old.bytes_sent, old.subflows_total),
            (0xabcd, None, None)
        );
        assert!(MptcpInfo::from_bytes(&b[..39]).is_err());
    }
}
