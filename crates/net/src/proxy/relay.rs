//! One direction of a relayed connection: bytes from a source socket to a
//! destination socket through a pipe with splice(2), so the payload never
//! enters user space (the kernel moves page references from the source's
//! receive queue into the pipe and from the pipe into the destination's
//! send queue).
//!
//! Back-pressure is the pipe: once it holds its capacity the pump stops
//! reading, the source's receive buffer fills and TCP flow control stops
//! the sender. So a connection never holds more than the two pipes' bytes
//! (or, copying, what its destination did not take of one read, at most
//! the pipe's size) in the proxy, whatever its peers do.
//!
//! Small messages are the exception: for a 64-byte request/response the
//! pipe costs a third syscall per hop (splice in, splice out, and the
//! splice that finds the socket empty) against recv(2)/send(2) through a
//! user buffer. So a pump starts in *copy* mode: recv into the event
//! loop's shared scratch buffer (at most [`COPY_CHUNK_BYTES`]) and send
//! it on. A read of at least [`SPLICE_FROM_BYTES`] means bulk is
//! flowing, and the pump switches to splice (copying every read below
//! 64 KiB measured 3.6 Gbit/s against 6.5 splicing, and below 16 KiB 5.9
//! against 8.1, 100 unshaped connections in benches/proxy_bench.py);
//! a wakeup in splice mode that moves less than [`COPY_BELOW_BYTES`] (in
//! and out) and leaves the pipe empty switches it back.
//! In copy mode a short read ends the turn without the read that would
//! return EAGAIN: for a stream socket a read that returns less than asked
//! has drained the receive queue (epoll(7), "edge-triggered"), and data
//! arriving later raises a new edge. The caller allows this only when the
//! wakeup said the source is readable and not read-closed: a read can
//! consume the FIN behind the data, and then no edge would come for the
//! end of stream (HAProxy reasons the same way in its raw_sock.c).
//!
//! Reading an MPTCP socket always copies: splice(2) from it added about
//! 50 µs to every small exchange through the proxy (loopback, kernel
//! 6.18: 64-byte ping-pong p50 110 µs vs 56 µs with recv(2)), so the
//! upload direction of an MPTCP client never splices; the download
//! direction (server → client), where bulk goes, does.
//!
//! Pipes are lent from a [`PipePool`] while bytes are in them and given
//! back once empty (HAProxy does the same), so an idle connection holds
//! only its two sockets, and a busy one costs no pipe(2)/close(2) per burst.
//!
//! Fairness: one call moves at most [`TURN_BUDGET_BYTES`] and then
//! returns with [`Pump::yielded`] set, before EAGAIN, for the event loop
//! to come back to it after the other ready connections. Without the cap a
//! download whose upstream refilled the socket as fast as the client
//! drained it never reached EAGAIN: strace of the proxy relaying 100 bulk
//! connections showed 464 1-MiB splice pairs of one connection in a second
//! and not one epoll_wait, so the other 99, new accepts and any small
//! exchange waited behind it.
//!
//! Half-close: when the source's read returns 0 (its FIN) and the pipe is
//! empty, the pump shuts the destination's sending side (our FIN), and the
//! other direction carries on.

use std::io;
use std::os::fd::{AsRawFd, RawFd};

use super::sock::{self, Pipe};

/// The scratch buffer of a copying pump (and the most a pump holds in user
/// space when its destination is full), bytes.
pub const COPY_CHUNK_BYTES: usize = 65_536;

/// A copying pump whose read returns at least this many bytes splices from
/// then on.
pub const SPLICE_FROM_BYTES: usize = 4_096;

/// A splicing pump whose wakeup moved fewer bytes than this (and emptied
/// its pipe) goes back to copying.
pub const COPY_BELOW_BYTES: usize = 1_024;

/// The most one [`Pump::run`] moves (bytes in plus out) before it yields
/// (see the module notes): four 1-MiB pipes' worth, so a bulk turn still
/// amortises its wakeup over megabytes.
pub const TURN_BUDGET_BYTES: u64 = 8 << 20;

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
    /// Always read the source with recv(2) into a user buffer, never
    /// splice (an MPTCP source, see the module notes).
    pub copy_source: bool,
    /// Bulk mode: splice through a pipe (else copy through the scratch buffer).
    splicing: bool,
    /// The last run stopped on its budget, not on EAGAIN: the caller must
    /// run it again without waiting for an event.
    pub yielded: bool,
    /// Bytes (in plus out) one run may move: [`TURN_BUDGET_BYTES`].
    pub turn_budget_bytes: u64,
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
            splicing: false,
            yielded: false,
            turn_budget_bytes: TURN_BUDGET_BYTES,
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

    /// Whether the pump splices now (bulk) rather than copies.
    pub fn splicing(&self) -> bool {
        self.splicing
    }

    /// Move what can be moved now without blocking. Returns whether any
    /// byte moved (or the FIN was forwarded). `scratch` is the copy
    /// buffer (shared: it holds nothing between calls);
    /// `short_read_drains`: the wakeup said the source is readable and
    /// not read-closed, so a short read in copy mode ends the turn (see
    /// the module notes).
    pub fn run(
        &mut self,
        src: RawFd,
        dst: RawFd,
        now_ns: u64,
        pool: &mut PipePool,
        scratch: &mut [u8],
        short_read_drains: bool,
    ) -> Result<bool, PumpError> {
        self.yielded = false;
        let result = self.run_inner(src, dst, now_ns, pool, scratch, short_read_drains);
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
        scratch: &mut [u8],
        short_read_drains: bool,
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
        if !self.splicing || self.copy_source {
            let copied = self.copy(src, dst, now_ns, scratch, short_read_drains)?;
            moved |= copied;
            if !self.splicing || self.destination_shut || self.buffered_bytes() > 0 || self.yielded {
                return Ok(moved);
            }
        }
        let moved_before = self.bytes_in + self.bytes_out;
        let result = self.splice_loop(src, dst, now_ns, pool).map(|m| m || moved);
        // A small wakeup that left nothing behind: back to copying. (Bytes
        // in and out: a pump held back by its destination drains its pipe
        // in a wakeup that reads little, and is still bulk.)
        if self.in_pipe_bytes == 0 && self.bytes_in + self.bytes_out - moved_before < COPY_BELOW_BYTES as u64
        {
            self.splicing = false;
        }
        result
    }

    fn splice_loop(
        &mut self,
        src: RawFd,
        dst: RawFd,
        now_ns: u64,
        pool: &mut PipePool,
    ) -> Result<bool, PumpError> {
        let mut moved = false;
        let budget_end = self.bytes_in + self.bytes_out + self.turn_budget_bytes;
        loop {
            if self.bytes_in + self.bytes_out >= budget_end {
                self.yielded = true;
                return Ok(true);
            }
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
    /// The copying variant of the fill/drain loop: recv into `scratch`,
    /// send it on; what the destination does not take waits in the
    /// prelude buffer (and reading stops until it is written). A large
    /// read switches to splicing (unless
    /// `copy_source`) and returns, for the caller to splice on.
    fn copy(
        &mut self,
        src: RawFd,
        dst: RawFd,
        now_ns: u64,
        scratch: &mut [u8],
        short_read_drains: bool,
    ) -> Result<bool, PumpError> {
        let mut moved = false;
        let chunk = scratch.len();
        let budget_end = self.bytes_in + self.bytes_out + self.turn_budget_bytes;
        loop {
            if self.bytes_in + self.bytes_out >= budget_end {
                self.yielded = true;
                return Ok(true);
            }
            if self.source_eof {
                if self.hold_fin_until_data && self.bytes_in == 0 {
                    return Ok(moved);
                }
                sock::shutdown_write(dst);
                self.destination_shut = true;
                return Ok(true);
            }
            // SAFETY: reads into a live buffer of `chunk` bytes.
            let n = unsafe { libc::recv(src, scratch.as_mut_ptr().cast(), chunk, 0) };
            if n < 0 {
                let e = io::Error::last_os_error();
                match e.kind() {
                    io::ErrorKind::WouldBlock => return Ok(moved),
                    io::ErrorKind::Interrupted => continue,
                    _ => return Err(PumpError::Source(e)),
                }
            }
            moved = true;
            let n = n as usize;
            if n == 0 {
                self.source_eof = true;
                continue;
            }
            self.bytes_in += n as u64;
            self.first_in_ns.get_or_insert_with(|| stamp(now_ns));
            let sent = self.send_some(dst, &scratch[..n], now_ns)?;
            if sent < n {
                // The destination is full: keep the rest, stop reading.
                self.prelude = scratch[sent..n].to_vec();
                self.prelude_sent = 0;
                return Ok(true);
            }
            if n >= SPLICE_FROM_BYTES.min(chunk) && !self.copy_source {
                self.splicing = true;
                return Ok(true);
            }
            if n < chunk && short_read_drains {
                return Ok(true);
            }
        }
    }

    /// send(2) as much of `bytes` as the destination takes now.
    fn send_some(&mut self, dst: RawFd, bytes: &[u8], now_ns: u64) -> Result<usize, PumpError> {
        let mut sent = 0;
        while sent < bytes.len() {
            let rest = &bytes[sent..];
            // SAFETY: writes from a live slice of `rest.len()` bytes.
            let n = unsafe { libc::send(dst, rest.as_ptr().cast(), rest.len(), libc::MSG_NOSIGNAL) };
            if n < 0 {
                let e = io::Error::last_os_error();
                match e.kind() {
                    io::ErrorKind::WouldBlock => break,
                    io::ErrorKind::Interrupted => continue,
                    _ => return Err(PumpError::Destination(e)),
                }
            }
            sent += n as usize;
            self.bytes_out += n as u64;
            self.first_out_ns.get_or_insert_with(|| stamp(now_ns));
        }
        Ok(sent)
    }

    /// Write the prelude; Ok(false) if the destination is full.
    fn write_prelude(&mut self, dst: RawFd, now_ns: u64) -> Result<bool, PumpError> {
        if self.prelude_sent < self.prelude.len() {
            let prelude = std::mem::take(&mut self.prelude);
            let sent = self.send_some(dst, &prelude[self.prelude_sent..], now_ns);
            self.prelude = prelude;
            self.prelude_sent += sent?;
            if self.prelude_sent < self.prelude.len() {
                return Ok(false);
            }
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

    /// client_w → [client_r ==pump==> server_w] → server_r, the pump's two ends non-blocking as the proxy's are.
    fn relay_path() -> (TcpStream, TcpStream, TcpStream, TcpStream) {
        let (client_w, client_r) = pair();
        let (server_w, server_r) = pair();
        client_r.set_nonblocking(true).unwrap();
        server_w.set_nonblocking(true).unwrap();
        (client_w, client_r, server_w, server_r)
    }

    #[test]
    fn moves_prelude_then_payload_then_forwards_the_fin() {
        // client_w → [client_r ==pump==> server_w] → server_r
        let (mut client_w, client_r, server_w, mut server_r) = relay_path();
        let mut pool = PipePool::new(4096, 1);
        let mut scratch = vec![0; 4096];
        let mut pump = Pump::new(b"HEAD ".to_vec());
        // The splice path (a small payload would be copied, see below).
        pump.splicing = true;
        client_w.write_all(b"payload").unwrap();
        client_w.shutdown(Shutdown::Write).unwrap();
        let mut out = Vec::new();
        for _ in 0..1000 {
            pump.run(
                client_r.as_raw_fd(),
                server_w.as_raw_fd(),
                7,
                &mut pool,
                &mut scratch,
                false,
            )
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
    fn small_reads_copy_a_full_read_splices_and_a_small_wakeup_copies_again() {
        let (mut client_w, client_r, server_w, mut server_r) = relay_path();
        let mut pool = PipePool::new(65_536, 1);
        let mut scratch = vec![0; 4096];
        let mut pump = Pump::new(Vec::new());
        let (src, dst) = (client_r.as_raw_fd(), server_w.as_raw_fd());
        let run = |pump: &mut Pump, pool: &mut PipePool, scratch: &mut Vec<u8>| {
            for _ in 0..1000 {
                if pump.run(src, dst, 0, pool, scratch, false).unwrap() {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            panic!("nothing moved");
        };
        // 64 bytes: copied, no pipe taken.
        client_w.write_all(&[1; 64]).unwrap();
        run(&mut pump, &mut pool, &mut scratch);
        assert!(!pump.splicing() && pump.pipe.is_none() && pool.spare.is_empty());
        let mut got = vec![0; 64];
        server_r.read_exact(&mut got).unwrap();
        assert_eq!(got, [1; 64]);
        // 256 KiB at once: a large read → splicing.
        client_w.write_all(&vec![2; 262_144]).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        run(&mut pump, &mut pool, &mut scratch);
        let mut got = vec![0; 262_144];
        let mut have = 0;
        let mut was_splicing = pump.splicing();
        while have < got.len() {
            server_r.set_nonblocking(true).unwrap();
            match server_r.read(&mut got[have..]) {
                Ok(n) => have += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    let _ = pump.run(src, dst, 0, &mut pool, &mut scratch, false).unwrap();
                    was_splicing |= pump.splicing();
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                Err(e) => panic!("{e}"),
            }
        }
        assert!(was_splicing, "bulk did not switch to splice");
        assert!(got.iter().all(|&b| b == 2));
        // A small wakeup with the pipe empty: copying again.
        client_w.write_all(&[3; 10]).unwrap();
        run(&mut pump, &mut pool, &mut scratch);
        assert!(!pump.splicing() && pump.buffered_bytes() == 0);
        assert_eq!(
            (pump.bytes_in, pump.bytes_out),
            (64 + 262_144 + 10, 64 + 262_144 + 10)
        );
    }

    #[test]
    fn a_run_yields_at_its_budget_and_the_next_one_goes_on() {
        let (mut client_w, client_r, server_w, mut server_r) = relay_path();
        let mut pool = PipePool::new(4096, 1);
        let mut scratch = vec![0; 4096];
        let (src, dst) = (client_r.as_raw_fd(), server_w.as_raw_fd());
        for splicing in [true, false] {
            let mut pump = Pump::new(Vec::new());
            pump.splicing = splicing;
            pump.copy_source = !splicing;
            pump.turn_budget_bytes = 16_384;
            client_w.write_all(&[5; 65_536]).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(20));
            pump.run(src, dst, 0, &mut pool, &mut scratch, false).unwrap();
            assert!(pump.yielded, "splicing {splicing}: ran past its budget");
            let first = pump.bytes_in + pump.bytes_out;
            assert!((16_384..16_384 + 2 * 4096).contains(&first), "{first}");
            // The rest comes in later runs, while the reader drains.
            let mut got = vec![0; 65_536];
            let mut have = 0;
            server_r.set_nonblocking(true).unwrap();
            while have < got.len() {
                match server_r.read(&mut got[have..]) {
                    Ok(n) => have += n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        pump.run(src, dst, 0, &mut pool, &mut scratch, false).unwrap();
                    }
                    Err(e) => panic!("{e}"),
                }
            }
            assert!(got.iter().all(|&b| b == 5));
        }
    }

    #[test]
    fn a_full_pipe_stops_reading() {
        // Nobody reads server_r: the pump may hold at most its pipe.
        let (mut client_w, client_r, server_w, _server_r) = relay_path();
        client_w.set_nonblocking(true).unwrap();
        let mut pool = PipePool::new(4096, 1);
        let mut scratch = vec![0; 4096];
        let mut pump = Pump::new(Vec::new());
        let chunk = vec![7u8; 65536];
        for _ in 0..400 {
            let _ = client_w.write(&chunk);
            pump.run(
                client_r.as_raw_fd(),
                server_w.as_raw_fd(),
                0,
                &mut pool,
                &mut scratch,
                false,
            )
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
