//! The controller's window held as the kernel's `TCP_WINDOW_CLAMP`.
//!
//! Locking the receive buffer (`SO_RCVBUF`) stops the kernel's auto-tuning
//! from moving the clamp, but not every writer: Linux's
//! `tcp_measure_rcv_mss` (net/ipv4/tcp_input.c, since 6.x) sets the clamp
//! to the whole buffer's window, `tcp_win_from_space(sk_rcvbuf)`, whenever
//! its payload-to-truesize estimate (`scaling_ratio`) changes, which a new
//! segment size can cause at any time, buffer lock or not. On a loopback
//! run it replaced an autotuning clamp of 65,535 B with 1,181,250 B (a
//! 1.2 MB buffer × 252/256). So the sink reads the clamp back each turn
//! and sets it again when the kernel has replaced it, and counts how often.

use std::io;
use std::net::TcpStream;

use super::socket;

/// The window the sink holds as the clamp.
#[derive(Debug)]
pub struct WindowClamp {
    /// The controller's window last set, bytes.
    window_bytes: u64,
    /// What the kernel reported right after that set: the window itself,
    /// or the kernel's floor (`SOCK_MIN_RCVBUF / 2`) for a smaller one.
    held_bytes: u64,
    /// Windows set because the controller changed its window.
    pub updates: u64,
    /// Times the kernel had replaced the clamp and the sink set it again.
    pub restores: u64,
}

impl WindowClamp {
    /// Set `window_bytes` as the connection's clamp.
    pub fn new(stream: &TcpStream, window_bytes: u64) -> io::Result<Self> {
        let mut clamp = WindowClamp {
            window_bytes,
            held_bytes: 0,
            updates: 0,
            restores: 0,
        };
        clamp.apply(stream)?;
        clamp.updates = 1;
        Ok(clamp)
    }

    /// The controller's window last set, bytes.
    pub fn window_bytes(&self) -> u64 {
        self.window_bytes
    }

    /// Move the clamp to the controller's `window_bytes` if it changed.
    pub fn update(&mut self, stream: &TcpStream, window_bytes: u64) -> io::Result<()> {
        if window_bytes != self.window_bytes {
            self.window_bytes = window_bytes;
            self.apply(stream)?;
            self.updates += 1;
        }
        Ok(())
    }

    /// Read the clamp back and set it again if the kernel replaced it.
    /// Returns the clamp the kernel holds afterwards, bytes.
    pub fn hold(&mut self, stream: &TcpStream) -> io::Result<u64> {
        let now = socket::window_clamp(stream)?;
        if now == self.held_bytes {
            return Ok(now);
        }
        self.restores += 1;
        self.apply(stream)
    }

    fn apply(&mut self, stream: &TcpStream) -> io::Result<u64> {
        socket::set_window_clamp(stream, self.window_bytes)?;
        self.held_bytes = socket::window_clamp(stream)?;
        Ok(self.held_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        (l.accept().unwrap().0, c)
    }

    /// A clamp the kernel replaced (here, as the kernel does, with a larger
    /// window written behind the sink's back) is set again and counted; an
    /// untouched one costs only the read.
    #[test]
    fn a_replaced_clamp_is_set_again_and_counted() {
        let (rx, _tx) = pair();
        let mut clamp = WindowClamp::new(&rx, 65_535).unwrap();
        assert_eq!(clamp.hold(&rx).unwrap(), 65_535);
        assert_eq!((clamp.updates, clamp.restores), (1, 0));
        socket::set_window_clamp(&rx, 1_181_250).unwrap();
        assert_eq!(clamp.hold(&rx).unwrap(), 65_535);
        assert_eq!(socket::window_clamp(&rx).unwrap(), 65_535);
        assert_eq!((clamp.updates, clamp.restores), (1, 1));
        clamp.update(&rx, 100_000).unwrap();
        clamp.update(&rx, 100_000).unwrap();
        assert_eq!((clamp.window_bytes(), clamp.updates), (100_000, 2));
        assert_eq!(clamp.hold(&rx).unwrap(), 100_000);
    }

    /// A window under the kernel's floor is held at the floor, not set
    /// again on every turn.
    #[test]
    fn a_window_under_the_kernels_floor_is_held_at_the_floor() {
        let (rx, _tx) = pair();
        let mut clamp = WindowClamp::new(&rx, 100).unwrap();
        let floor = socket::window_clamp(&rx).unwrap();
        assert!(floor > 100, "the kernel's floor: {floor}");
        for _ in 0..3 {
            assert_eq!(clamp.hold(&rx).unwrap(), floor);
        }
        assert_eq!(clamp.restores, 0);
    }
}
