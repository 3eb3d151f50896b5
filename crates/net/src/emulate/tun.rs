//! A TUN device: IP packets in and out of the kernel through a file
//! descriptor (Documentation/networking/tuntap.rst).
//!
//! Opened with IFF_TUN | IFF_NO_PI (no 4-byte packet-information prefix:
//! every read is exactly one IP packet) and O_NONBLOCK (the event loop
//! reads until EAGAIN, then waits in ppoll). The device is created in the
//! caller's network namespace; it may then be moved to another namespace
//! (`ip link set DEV netns NS`) and the descriptor keeps working. It is not
//! persistent: it disappears when the descriptor is closed, so a killed
//! emulator leaves no device behind.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Longest interface name (IFNAMSIZ − 1).
pub const MAX_NAME_LEN: usize = 15;

#[repr(C)]
struct IfReq {
    name: [libc::c_char; libc::IFNAMSIZ],
    flags: libc::c_short,
    /// The rest of `struct ifreq`'s union (24 bytes in all on 64-bit).
    _pad: [u8; 22],
}

pub struct Tun {
    fd: OwnedFd,
    name: String,
}

impl Tun {
    /// Create the TUN device `name` in the current network namespace.
    pub fn create(name: &str) -> io::Result<Tun> {
        if name.is_empty() || name.len() > MAX_NAME_LEN || !name.is_ascii() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("TUN device name {name:?} must be 1 to {MAX_NAME_LEN} ASCII characters"),
            ));
        }
        // SAFETY: a NUL-terminated path literal; the flags are plain ints.
        let raw = unsafe {
            libc::open(
                c"/dev/net/tun".as_ptr(),
                libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        if raw < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("/dev/net/tun: {e}")));
        }
        // SAFETY: `raw` is a descriptor we just opened and own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let mut req = IfReq {
            name: [0; libc::IFNAMSIZ],
            flags: (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short,
            _pad: [0; 22],
        };
        for (d, s) in req.name.iter_mut().zip(name.bytes()) {
            *d = s as libc::c_char;
        }
        // SAFETY: TUNSETIFF reads and writes one `struct ifreq`, which
        // `IfReq` lays out (name, then the flags member of the union).
        let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &mut req as *mut IfReq) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("TUNSETIFF {name}: {e}")));
        }
        Ok(Tun {
            fd,
            name: name.to_string(),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Read one packet: its length, or None when none is waiting. A packet
    /// longer than `buf` is truncated to it, but the length returned is
    /// the packet's own (drivers/net/tun.c, `tun_put_user`): a result above
    /// `buf.len()` means an oversized packet.
    pub fn read(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        // SAFETY: `buf` is valid for `buf.len()` writable bytes.
        let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n >= 0 {
            return Ok(Some(n as usize));
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
            _ => Err(e),
        }
    }

    /// Hand one IP packet to the kernel (it arrives as if received on the
    /// device).
    pub fn write(&self, packet: &[u8]) -> io::Result<()> {
        // SAFETY: `packet` is valid for `packet.len()` readable bytes.
        let n = unsafe { libc::write(self.fd.as_raw_fd(), packet.as_ptr().cast(), packet.len()) };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }
}

impl AsRawFd for Tun {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ifreq_has_the_kernel_layout() {
        assert_eq!(std::mem::size_of::<IfReq>(), 40);
    }

    #[test]
    fn bad_names_are_refused_before_any_syscall() {
        assert!(Tun::create("").is_err());
        assert!(Tun::create("a-name-far-too-long").is_err());
    }
}
