//! One direction of a relayed connection: bytes from a source socket to a
//! destination socket through a pipe with splice(2), so the payload never
//! enters user space (the kernel moves page references from the source's
//! receive queue into the pipe and from the pipe into the destination's
//! send queue).
//!
//! Back-pressure is the pipe: once it holds its capacity the pump stops
//! reading, the source's receive buffer fills and TCP flow control stops
//! the sender. So a connection never holds more than the two pipes' bytes
//! in the proxy, whatever its peers do.
//!
//! Reading an MPTCP socket is the exception: splice(2) from it added about
//! 50 µs to every small request/response exchange through the proxy
//! (loopback, kernel 6.18: 64-byte ping-pong p50 110 µs vs 56 µs with
//! recv(2)), so a pump whose source is a live MPTCP connection copies
//! through a user buffer of at most [`COPY_CHUNK_BYTES`] instead. Writing
//! to MPTCP with splice costs nothing extra, and the download direction
//! (server → client), where bulk goes, stays zero-copy.
//!
//! Pipes are lent from a [`PipePool`] while bytes are in them and given
//! back once empty (HAProxy does the same), so an idle connection holds
//! only its two sockets, and a busy one costs no pipe(2)/close(2) per burst.
//!
//! Half-close: when the source's read returns 0 (its FIN) and the pipe is
//! empty, the pump shuts the destination's sending side (our FIN), and the
//! other direction carries on.

use std::io;
use std::os::fd::{AsRawFd, RawFd};

use super::sock::{self, Pipe};

/// The user buffer of a copying pump (and the most it holds), bytes.
pub const COPY_CHUNK_BYTES: usize = 65_536;

/// Why a pump stopped with an error.
#[derive(Debug)]
pub enum PumpError {
    /// Reading the source failed: its peer reset (ECONNRESET) or another error.
    Source(io::Error),
    /// Writing the destination failed: its peer reset (ECONNRESET, EPIPE).
    Destination(io::Error),
    /// The pipe could not be created (out of file descriptors).
    Pipe(io::Error),
}

/// Empty pipes of one capacity, kept for reuse.
pub struct PipePool {
    capacity_bytes: usize,
    spare: Vec<Pipe>,
    max_spare: usize,
}

impl PipePool {
    /// Pipes asking for `capacity_bytes`; at most `max_spare` kept idle.
    pub fn new(capacity_bytes: usize, max_spare: usize) -> PipePool {
        PipePool {
            capacity_bytes,
            spare: Vec::new(),
            max_spare,
        }
    }

    fn take(&mut self) -> io::Result<Pipe> {
        match self.spare.pop() {
            Some(p) => Ok(p),
            None => Pipe::new(self.capacity_bytes),
        }
    }

    /// Give back an empty pipe (closed if enough are spare).
    fn give(&mut self, pipe: Pipe) {
        if self.spare.len() < self.max_spare {
            self.spare.push(pipe);
        }
    }
}

/// One direction's state.
pub struct Pump {
    pipe: Option<Pipe>,
    in_pipe_bytes: usize,
    /// Bytes to write before splicing (a rewritten HTTP request head, a
    /// SOCKS reply, bytes read while parsing), and how many are written.
    prelude: Vec<u8>,
    prelude_sent: usize,
    /// The source's read returned 0.
    pub source_eof: bool,
    /// Our FIN was sent to the destination.
    pub destination_shut: bool,
    /// Read the source with recv(2) into a user buffer, not splice (an
    /// MPTCP source, see the module notes).
    pub copy_source: bool,
    /// Keep the source's FIN while no byte came before it (an HTTP origin
    /// that closes before any response gets a 502, not an empty reply).
    pub hold_fin_until_data: bool,
    /// Bytes read from the source (prelude bytes excluded).
    pub bytes_in: u64,
    /// Bytes written to the destination (prelude included).
    pub bytes_out: u64,
    /// CLOCK_MONOTONIC of the first byte read from the source / written to
    /// the destination (splice returned > 0), ns.
    pub first_in_ns: Option<u64>,
    pub first_out_ns: Option<u64>,
}

impl Pump {
    /// A pump that writes `prelude` first.
    pub fn new(prelude: Vec<u8>) -> Pump {
        Pump {
            pipe: None,
            in_pipe_bytes: 0,
            prelude,
            prelude_sent: 0,
            source_eof: false,
            destination_shut: false,
            copy_source: false,
            hold_fin_until_data: false,
            bytes_in: 0,
            bytes_out: 0,
            first_in_ns: None,
            first_out_ns: None,
        }
    }

    /// Nothing left to move and the FIN forwarded.
    pub fn finished(&self) -> bool {
        self.destination_shut
    }

    /// Bytes read but not yet written.
    pub fn buffered_bytes(&self) -> usize {
        self.in_pipe_bytes + (self.prelude.len() - self.prelude_sent)
    }

    /// Move what can be moved now without blocking. Returns whether any
    /// byte moved (or the FIN was forwarded).
    pub fn run(
        &mut self,
        src: RawFd,
        dst: RawFd,
        now_ns: u64,
        pool: &mut PipePool,
    ) -> Result<bool, PumpError> {
        let result = self.run_inner(src, dst, now_ns, pool);
        if self.in_pipe_bytes == 0 {
            if let Some(pipe) = self.pipe.take() {
                pool.give(pipe);
            }
        }
        result
    }

    fn run_inner(
        &mut self,
        src: RawFd,
        dst: RawFd,
        now_ns: u64,
        pool: &mut PipePool,
    ) -> Result<bool, PumpError> {
        // The prelude goes first, from user space.
        let had_prelude = !self.prelude.is_empty();
        if !self.write_prelude(dst, now_ns)? {
            return Ok(self.prelude_sent > 0);
        }
        let mut moved = had_prelude;
        if self.destination_shut {
            return Ok(moved);
        }
        if self.copy_source {
            return self.copy(src, dst, now_ns).map(|m| m || moved);
        }
        loop {
            let mut progress = false;
            let room = self
                .pipe
                .as_ref()
                .map_or(usize::MAX, |p| p.capacity_bytes - self.in_pipe_bytes);
            if !self.source_eof && room > 0 {
                if self.pipe.is_none() {
                    self.pipe = Some(pool.take().map_err(PumpError::Pipe)?);
                }
                let pipe = self.pipe.as_ref().expect("taken above");
                match sock::splice(
                    src,
                    pipe.write.as_raw_fd(),
                    pipe.capacity_bytes - self.in_pipe_bytes,
                ) {
                    Ok(0) => {
                        self.source_eof = true;
                        progress = true;
                    }
                    Ok(n) => {
                        self.in_pipe_bytes += n;
                        self.bytes_in += n as u64;
                        self.first_in_ns.get_or_insert_with(|| stamp(now_ns));
                        progress = true;
                    }
                    Err(e) if would_block(&e) => {}
                    Err(e) => return Err(PumpError::Source(e)),
                }
            }
            if self.in_pipe_bytes > 0 {
                let pipe = self.pipe.as_ref().expect("bytes are in it");
                match sock::splice(pipe.read.as_raw_fd(), dst, self.in_pipe_bytes) {
                    Ok(n) => {
                        self.in_pipe_bytes -= n;
                        self.bytes_out += n as u64;
                        self.first_out_ns.get_or_insert_with(|| stamp(now_ns));
                        progress = n > 0;
                    }
                    Err(e) if would_block(&e) => {}
                    Err(e) => return Err(PumpError::Destination(e)),
                }
            }
            if self.source_eof && self.in_pipe_bytes == 0 {
                if self.hold_fin_until_data && self.bytes_in == 0 {
                    return Ok(true);
                }
                sock::shutdown_write(dst);
                self.destination_shut = true;
                return Ok(true);
            }
            if !progress {
                return Ok(moved);
            }
            moved = true;
        }
    }
}

impl Pump {
    /// The copying variant of the fill/drain loop: the prelude buffer is
    /// the user buffer (written out in full before the next read).
    fn copy(&mut self, src: RawFd, dst: RawFd, now_ns: u64) -> Result<bool, PumpError> {
        let mut moved = false;
        loop {
            if self.source_eof {
                if self.hold_fin_until_data && self.bytes_in == 0 {
                    return Ok(moved);
                }
                sock::shutdown_write(dst);
                self.destination_shut = true;
                return Ok(true);
            }
            let mut buf = std::mem::take(&mut self.prelude);
            buf.resize(COPY_CHUNK_BYTES, 0);
            // SAFETY: reads into a live buffer of `buf.len()` bytes.
            let n = unsafe { libc::recv(src, buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n < 0 {
                let e = io::Error::last_os_error();
                if would_block(&e) {
                    return Ok(moved);
                }
                return Err(PumpError::Source(e));
            }
            moved = true;
            if n == 0 {
                self.source_eof = true;
                continue;
            }
            buf.truncate(n as usize);
            self.bytes_in += n as u64;
            self.first_in_ns.get_or_insert_with(|| stamp(now_ns));
            self.prelude = buf;
            self.prelude_sent = 0;
            if !self.write_prelude(dst, now_ns)? {
                return Ok(true);
            }
        }
    }

    /// Write the prelude; Ok(false) if the destination is full.
    fn write_prelude(&mut self, dst: RawFd, now_ns: u64) -> Result<bool, PumpError> {
        while self.prelude_sent < self.prelude.len() {
            let rest = &self.prelude[self.prelude_sent..];
            // SAFETY: writes from a live slice of `rest.len()` bytes.
            let n = unsafe { libc::send(dst, rest.as_ptr().cast(), rest.len(), libc::MSG_NOSIGNAL) };
            if n < 0 {
                let e = io::Error::last_os_error();
                match e.kind() {
                    io::ErrorKind::WouldBlock => return Ok(false),
                    io::ErrorKind::Interrupted => continue,
                    _ => return Err(PumpError::Destination(e)),
                }
            }
            self.prelude_sent += n as usize;
            self.bytes_out += n as u64;
            self.first_out_ns.get_or_insert_with(|| stamp(now_ns));
        }
        // Written out: free the buffer (an idle connection holds none).
        self.prelude = Vec::new();
        self.prelude_sent = 0;
        Ok(true)
    }
}

/// The clock at a first byte: read afresh (a vDSO call, once per
/// direction), since `now_ns` is the time the loop woke up; 0 in tests
/// means "use `now_ns`".
fn stamp(now_ns: u64) -> u64 {
    if cfg!(test) {
        now_ns
    } else {
        crate::clock::now_ns().max(now_ns)
    }
}

fn would_block(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted)
}

/// Whether an error means the peer reset the connection.
pub fn is_reset(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ECONNRESET) | Some(libc::EPIPE) | Some(libc::ECONNABORTED)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{Shutdown, TcpListener, TcpStream};

    fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        (a, b)
    }

    #[test]
    fn moves_prelude_then_payload_then_forwards_the_fin() {
        // client_w → [client_r ==pump==> server_w] → server_r
        let (mut client_w, client_r) = pair();
        let (server_w, mut server_r) = pair();
        client_r.set_nonblocking(true).unwrap();
        server_w.set_nonblocking(true).unwrap();
        let mut pool = PipePool::new(4096, 1);
        let mut pump = Pump::new(b"HEAD ".to_vec());
        client_w.write_all(b"payload").unwrap();
        client_w.shutdown(Shutdown::Write).unwrap();
        let mut out = Vec::new();
        for _ in 0..1000 {
            pump.run(client_r.as_raw_fd(), server_w.as_raw_fd(), 7, &mut pool)
                .unwrap();
            if pump.finished() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(pump.finished(), "the FIN was not forwarded");
        server_r.read_to_end(&mut out).unwrap();
        assert_eq!(out, b"HEAD payload");
        assert_eq!((pump.bytes_in, pump.bytes_out), (7, 12));
        assert_eq!((pump.first_in_ns, pump.first_out_ns), (Some(7), Some(7)));
        assert_eq!(pump.buffered_bytes(), 0);
        // The empty pipe went back to the pool.
        assert!(pump.pipe.is_none() && pool.spare.len() == 1);
    }

    #[test]
    fn a_full_pipe_stops_reading() {
        // Nobody reads server_r: the pump may hold at most its pipe.
        let (mut client_w, client_r) = pair();
        let (server_w, _server_r) = pair();
        client_r.set_nonblocking(true).unwrap();
        server_w.set_nonblocking(true).unwrap();
        client_w.set_nonblocking(true).unwrap();
        let mut pool = PipePool::new(4096, 1);
        let mut pump = Pump::new(Vec::new());
        let chunk = vec![7u8; 65536];
        for _ in 0..400 {
            let _ = client_w.write(&chunk);
            pump.run(client_r.as_raw_fd(), server_w.as_raw_fd(), 0, &mut pool)
                .unwrap();
        }
        let capacity = pump.pipe.as_ref().map_or(0, |p| p.capacity_bytes);
        assert!(
            capacity >= 4096 && pump.buffered_bytes() <= capacity,
            "{}",
            pump.buffered_bytes()
        );
        assert!(pump.bytes_in < 400 * 65536, "read everything: no back-pressure");
    }
}
