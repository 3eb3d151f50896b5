//! The socket calls the proxy needs beyond std and mio: an MPTCP listener,
//! splice(2) through a pipe, SO_LINGER 0 (to send a reset), TCP_IS_MPTCP,
//! a fixed send buffer, TCP_NOTSENT_LOWAT, and the open-file limit.
//!
//! Why a raw socket for the listener: std and mio only create IPPROTO_TCP
//! sockets. A listener created with IPPROTO_MPTCP (262) accepts both MPTCP
//! and plain TCP clients: when a client's SYN carries no MP_CAPABLE option
//! the kernel falls back to TCP for that connection (RFC 8684 §3.7), so
//! the proxy serves legacy clients through the same socket.

use crate::sockaddr::sockaddr;
use std::io;
use std::mem::size_of;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// `TCP_IS_MPTCP` (linux/tcp.h, 5.16+): 1 when the socket is an MPTCP
/// connection that has not fallen back to TCP. libc does not define it.
const TCP_IS_MPTCP: libc::c_int = 43;

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn set_int(fd: RawFd, level: libc::c_int, name: libc::c_int, value: libc::c_int) -> io::Result<()> {
    // SAFETY: passes a pointer to a live c_int and its exact size.
    check(unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
    .map(|_| ())
}

fn get_int(fd: RawFd, level: libc::c_int, name: libc::c_int) -> io::Result<libc::c_int> {
    let mut value: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `value`.
    check(unsafe { libc::getsockopt(fd, level, name, (&mut value as *mut libc::c_int).cast(), &mut len) })?;
    Ok(value)
}

/// The transport a listener was created with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListenProtocol {
    Mptcp,
    /// MPTCP was asked for but the kernel refused it (disabled or absent).
    Tcp,
}

impl ListenProtocol {
    pub fn name(self) -> &'static str {
        match self {
            ListenProtocol::Mptcp => "mptcp",
            ListenProtocol::Tcp => "tcp",
        }
    }
}

/// A non-blocking listening socket on `addr`: IPPROTO_MPTCP when `mptcp`
/// and the kernel allows it (`net.mptcp.enabled`), else plain TCP.
pub fn listen(addr: SocketAddr, mptcp: bool, backlog: i32) -> io::Result<(TcpListener, ListenProtocol)> {
    let family = if addr.is_ipv6() {
        libc::AF_INET6
    } else {
        libc::AF_INET
    };
    let kind = libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK;
    let mut protocol = ListenProtocol::Tcp;
    let mut fd = -1;
    if mptcp {
        // SAFETY: plain socket(2).
        fd = unsafe { libc::socket(family, kind, libc::IPPROTO_MPTCP) };
        if fd >= 0 {
            protocol = ListenProtocol::Mptcp;
        }
    }
    if fd < 0 {
        // SAFETY: plain socket(2).
        fd = check(unsafe { libc::socket(family, kind, 0) })?;
    }
    // SAFETY: `fd` is a fresh socket nobody else owns; the listener closes it.
    let listener = unsafe { TcpListener::from_raw_fd(fd) };
    set_int(fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
    let (storage, len) = sockaddr(addr);
    // SAFETY: `storage` holds a sockaddr of `len` bytes for `family`.
    check(unsafe { libc::bind(fd, (&storage as *const libc::sockaddr_storage).cast(), len) })?;
    // SAFETY: listen(2) on a bound socket.
    check(unsafe { libc::listen(fd, backlog) })?;
    Ok((listener, protocol))
}

/// Whether an accepted socket is a live MPTCP connection (false: plain
/// TCP, or MPTCP that fell back; also false on kernels before 5.16).
pub fn is_mptcp(fd: RawFd) -> bool {
    get_int(fd, libc::IPPROTO_TCP, TCP_IS_MPTCP)
        .map(|v| v == 1)
        .unwrap_or(false)
}

/// Fix the send buffer of `fd` at `bytes` (what the kernel stores is
/// twice that, for its bookkeeping, see socket(7)), which also ends the
/// kernel's send-buffer autotuning for it. SO_SNDBUFFORCE first (needs
/// CAP_NET_ADMIN; passes net.core.wmem_max), else SO_SNDBUF (capped at
/// wmem_max). Returns the buffer the kernel now holds, bytes.
pub fn set_send_buffer(fd: RawFd, bytes: usize) -> io::Result<usize> {
    let want = bytes.min(i32::MAX as usize / 2) as libc::c_int;
    if set_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, want).is_err() {
        set_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, want)?;
    }
    Ok(get_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF)? as usize)
}

/// TCP_NOTSENT_LOWAT: `fd` reports writable, and takes more bytes, only
/// while fewer than `bytes` of what it holds are not yet sent.
pub fn set_notsent_lowat(fd: RawFd, bytes: usize) -> io::Result<()> {
    set_int(
        fd,
        libc::IPPROTO_TCP,
        libc::TCP_NOTSENT_LOWAT,
        bytes.min(i32::MAX as usize) as libc::c_int,
    )
}

/// TCP_NOTSENT_LOWAT of an MPTCP socket whose send buffer is held: the
/// large buffer is there for bytes sent but not yet acknowledged at the
/// MPTCP level; without this mark it also filled with unsent bytes, and the
/// first subflow took a whole 5 MB download into its queue before a second
/// subflow joined (tests/python/test_mptcp_real.py: one subflow, nothing to
/// throttle).
pub const MPTCP_NOTSENT_LOWAT_BYTES: usize = 1 << 20;

/// Hold an MPTCP sender's send buffer at `bytes` (the kernel doubles it)
/// with [`MPTCP_NOTSENT_LOWAT_BYTES`]. With autotuning's 4 MiB a bulk
/// transfer stalls 200 ms at a time: the DATA_ACK the sender sees lags the
/// receiver, the full buffer stops the sender, and only the MPTCP
/// retransmission timer restarts it (benches/README.md, "proxy").
pub fn hold_mptcp_send_buffer(fd: RawFd, bytes: usize) -> io::Result<usize> {
    let held = set_send_buffer(fd, bytes)?;
    set_notsent_lowat(fd, MPTCP_NOTSENT_LOWAT_BYTES)?;
    Ok(held)
}

/// Make the next close(2) of `fd` abort the connection with a reset
/// (SO_LINGER on, timeout 0), as when its peer reset the other side.
pub fn set_linger_zero(fd: RawFd) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: passes a pointer to a live linger and its exact size. A
    // failure (socket already gone) leaves a normal close, which is fine.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            size_of::<libc::linger>() as libc::socklen_t,
        )
    };
}

/// A pipe for splice(2): both ends non-blocking, its capacity set (the
/// kernel rounds up to a power of two pages and caps an unprivileged
/// request at /proc/sys/fs/pipe-max-size).
pub struct Pipe {
    pub read: OwnedFd,
    pub write: OwnedFd,
    pub capacity_bytes: usize,
}

impl Pipe {
    pub fn new(capacity_bytes: usize) -> io::Result<Pipe> {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: pipe2 writes two fds into the array.
        check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) })?;
        // SAFETY: both fds are fresh and owned only here.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let want = capacity_bytes.min(i32::MAX as usize) as libc::c_int;
        // SAFETY: fcntl on an fd we own. A refusal (EPERM above the
        // unprivileged maximum) keeps the default 64 KiB.
        unsafe { libc::fcntl(write.as_raw_fd(), libc::F_SETPIPE_SZ, want) };
        // SAFETY: as above.
        let got = check(unsafe { libc::fcntl(write.as_raw_fd(), libc::F_GETPIPE_SZ) })?;
        Ok(Pipe {
            read,
            write,
            capacity_bytes: got as usize,
        })
    }
}

/// splice(2) up to `len` bytes from `from` to `to` without blocking; one of
/// them must be a pipe. Ok(0) from a socket is end of stream.
pub fn splice(from: RawFd, to: RawFd, len: usize) -> io::Result<usize> {
    // SAFETY: null offsets (both are streams); the kernel moves page
    // references, touching no memory of ours.
    let n = unsafe {
        libc::splice(
            from,
            std::ptr::null_mut(),
            to,
            std::ptr::null_mut(),
            len,
            libc::SPLICE_F_MOVE | libc::SPLICE_F_NONBLOCK,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// shutdown(2) of the sending direction (our FIN), ignoring "not connected".
pub fn shutdown_write(fd: RawFd) {
    // SAFETY: shutdown on a socket fd; errors only mean it is already gone.
    unsafe { libc::shutdown(fd, libc::SHUT_WR) };
}

/// Raise the soft limit on open files to the hard limit: every connection
/// holds six (two sockets, two pipes). Returns the new soft limit.
pub fn raise_nofile_limit() -> u64 {
    // SAFETY: getrlimit/setrlimit with a valid struct.
    unsafe {
        let mut lim: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return 0;
        }
        if lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
        lim.rlim_cur as u64
    }
}

/// The pending socket error (SO_ERROR), taken.
pub fn take_error(fd: RawFd) -> Option<io::Error> {
    match get_int(fd, libc::SOL_SOCKET, libc::SO_ERROR) {
        Ok(0) => None,
        Ok(e) => Some(io::Error::from_raw_os_error(e)),
        Err(e) => Some(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixed_send_buffer_is_what_the_kernel_reports() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let s = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        // 64 KiB is below every wmem_max, so privileged or not the kernel
        // takes it, and keeps twice it.
        let got = set_send_buffer(s.as_raw_fd(), 65_536).unwrap();
        assert_eq!(got, 2 * 65_536);
        assert_eq!(
            get_int(s.as_raw_fd(), libc::SOL_SOCKET, libc::SO_SNDBUF).unwrap(),
            2 * 65_536
        );
    }
}
