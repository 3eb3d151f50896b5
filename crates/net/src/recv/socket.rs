//! The TCP socket calls `recv` needs that std does not offer: a listening
//! socket whose receive buffer is set (and so locked) before it accepts,
//! `TCP_INFO`, `TCP_MAXSEG` and `TCP_WINDOW_CLAMP`.
//!
//! Why the buffer is set by hand: Linux receive auto-tuning
//! (`tcp_rcv_space_adjust`) raises the window clamp as it grows the buffer,
//! overwriting a clamp set from user space within a fraction of a second.
//! Setting `SO_RCVBUF` locks the buffer (`SOCK_RCVBUF_LOCK`), which turns
//! kernel auto-tuning off (one other kernel writer remains; see `clamp`). The buffer must be set
//! on the listening socket, before the handshake, so the window scale
//! negotiated in the SYN-ACK covers it; accepted sockets inherit it.

use crate::sockaddr::sockaddr;
use std::io;
use std::mem::size_of;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};

fn check(ret: libc::c_int) -> io::Result<()> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
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
}

fn get_int(fd: RawFd, level: libc::c_int, name: libc::c_int) -> io::Result<libc::c_int> {
    let mut value: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `value`.
    check(unsafe { libc::getsockopt(fd, level, name, (&mut value as *mut libc::c_int).cast(), &mut len) })?;
    Ok(value)
}

/// A listening TCP socket on `addr` with a receive buffer of `rcvbuf_bytes`
/// (the kernel doubles the value for its bookkeeping). `SO_RCVBUFFORCE`
/// (root) is tried first so `net.core.rmem_max` does not cap it; then
/// `SO_RCVBUF`. Returns the listener and the buffer the kernel reports.
pub fn listen(addr: SocketAddr, rcvbuf_bytes: u64) -> io::Result<(TcpListener, u64)> {
    let family = if addr.is_ipv6() {
        libc::AF_INET6
    } else {
        libc::AF_INET
    };
    // SAFETY: plain socket(2); the fd is owned by the TcpListener below.
    let fd = unsafe { libc::socket(family, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    check(fd)?;
    // SAFETY: `fd` is a fresh socket nobody else owns; the listener closes it.
    let listener = unsafe { TcpListener::from_raw_fd(fd) };
    set_int(fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
    let want = rcvbuf_bytes.min(i32::MAX as u64 / 2) as libc::c_int;
    if set_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, want).is_err() {
        set_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, want)?;
    }
    let (storage, len) = sockaddr(addr);
    // SAFETY: `storage` holds a sockaddr of `len` bytes for `family`.
    check(unsafe { libc::bind(fd, (&storage as *const libc::sockaddr_storage).cast(), len) })?;
    // SAFETY: listen(2) on a bound socket.
    check(unsafe { libc::listen(fd, 1) })?;
    let got = get_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF)?;
    Ok((listener, got.max(0) as u64))
}

/// What `recv` reads from `TCP_INFO`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpInfo {
    /// The kernel's receiver RTT estimate (`tcpi_rcv_rtt`), µs; 0 before one.
    pub rcv_rtt_us: u32,
    /// The kernel's per-RTT delivery estimate (`tcpi_rcv_space`), bytes.
    pub rcv_space_bytes: u32,
    /// The window last advertised (`tcpi_rcv_wnd`, Linux 6.2+; 0 before).
    pub rcv_wnd_bytes: u32,
    /// Payload bytes received (`tcpi_bytes_received`).
    pub bytes_received: u64,
    /// Estimated peer MSS (`tcpi_rcv_mss`).
    pub rcv_mss_bytes: u32,
}

/// `TCP_INFO` of a connected socket.
pub fn tcp_info(stream: &TcpStream) -> io::Result<TcpInfo> {
    // SAFETY: tcp_info is plain old data; all-zero is valid.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `info` (fewer on
    // an older kernel, leaving the newer fields zero).
    check(unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    })?;
    Ok(TcpInfo {
        rcv_rtt_us: info.tcpi_rcv_rtt,
        rcv_space_bytes: info.tcpi_rcv_space,
        rcv_wnd_bytes: info.tcpi_rcv_wnd,
        bytes_received: info.tcpi_bytes_received,
        rcv_mss_bytes: info.tcpi_rcv_mss,
    })
}

/// The connection's MSS (`TCP_MAXSEG`), bytes.
pub fn mss_bytes(stream: &TcpStream) -> io::Result<u64> {
    Ok(get_int(stream.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_MAXSEG)?.max(1) as u64)
}

/// Bound the advertised window (`TCP_WINDOW_CLAMP`), bytes.
pub fn set_window_clamp(stream: &TcpStream, bytes: u64) -> io::Result<()> {
    let v = bytes.min(i32::MAX as u64) as libc::c_int;
    set_int(stream.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_WINDOW_CLAMP, v)
}

/// The clamp the kernel holds now, bytes.
pub fn window_clamp(stream: &TcpStream) -> io::Result<u64> {
    Ok(get_int(stream.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_WINDOW_CLAMP)?.max(0) as u64)
}
