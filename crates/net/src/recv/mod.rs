//! `latlab-net recv`: a TCP sink whose advertised window is set by one of
//! `latlab_proto`'s receiver-window controllers (Linux auto-tuning, DRWA or
//! RTAC; docs/models/receiver-window.md), the same code the simulator runs.
//!
//! The sink accepts one connection and reads everything it sends. It owns
//! the receive buffer (`SO_RCVBUF`, twice the controller's largest window,
//! set before the handshake; see `socket`), which turns the kernel's own
//! auto-tuning off, and moves `TCP_WINDOW_CLAMP` to the controller's
//! window whenever it changes, and back to it whenever the kernel has
//! replaced it (`clamp`).
//!
//! How the controller is fed from the socket (the real-world counterparts
//! of the simulator's calls):
//! - `on_copied(now, n)` after every `read` of n bytes: user space sees
//!   exactly the copy to the application.
//! - `on_segment`: user space sees no segments or timestamps. The kernel
//!   measures the receiver RTT itself (`tcpi_rcv_rtt`: from timestamps, or
//!   the window method without them, the same two methods as the
//!   controllers' own estimator). After each turn that read data, the sink
//!   reports one full-size arrival whose echo is `now − tcpi_rcv_rtt`, so
//!   the controller's sample is the kernel's estimate. The controller's
//!   EWMA then smooths an already smoothed value (Linux's gain is also
//!   1/8), and its minimum RTT is the smallest kernel estimate.
//!
//! Per interval it records goodput, the kernel's RTT estimate, the
//! controller's RTT and window, and the clamp and window the kernel holds.

mod clamp;
pub mod socket;

use std::io::{self, Read};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::path::PathBuf;

use latlab_proto::tcp::{RwndController, RwndSpec, SegmentArrival, TcpConfig};
use serde::Serialize;

use crate::clock::{self, now_ns};
use crate::media::{say, RunError};
use crate::run_files::{rate_bps, summary_path, write_summary, Distribution, Recorder, RowClock};
use clamp::WindowClamp;

/// Bytes read per `read` call at most.
const READ_BYTES: usize = 256 * 1024;
/// Reads per loop turn at most, so rows and the clamp keep up under load.
const MAX_READS_PER_TURN: usize = 64;
/// How often the loop looks at the listener or the connection when idle.
const IDLE_POLL_NS: u64 = 100_000_000;

/// Everything `recv` was asked to do (validated).
#[derive(Clone, Debug)]
pub struct RecvOptions {
    pub listen: SocketAddr,
    /// The controller and its constants (never `Fixed`).
    pub controller: RwndSpec,
    /// Stop this long after start (None: at the sender's EOF or a signal).
    pub duration_ns: Option<u64>,
    pub interval_ns: u64,
    pub record: Option<PathBuf>,
    pub summary: Option<PathBuf>,
    pub quiet: bool,
}

/// One interval of the record.
#[derive(Clone, Debug, Serialize)]
pub struct RecvRow {
    /// Seconds since the connection was accepted.
    pub t_s: f64,
    /// When the row's values were read (on time or, under load, late), on
    /// CLOCK_MONOTONIC, seconds: the clock a sender on the same host (in any
    /// namespace) reads, so its samples can be set beside these rows.
    pub mono_s: f64,
    /// Bytes read in the interval, as bits/s.
    pub goodput_bps: f64,
    /// The kernel's receiver RTT estimate (`tcpi_rcv_rtt`), ms.
    pub rcv_rtt_ms: Option<f64>,
    /// The controller's RTT estimate, ms.
    pub controller_rtt_ms: Option<f64>,
    /// The controller's window, bytes.
    pub rwnd_bytes: u64,
    /// The controller's estimate of the sender's window (bytes per RTT).
    pub window_est_bytes: Option<f64>,
    /// `TCP_WINDOW_CLAMP` read back (and set again first if the kernel
    /// had replaced it; see `clamp`), bytes.
    pub window_clamp_bytes: u64,
    /// Times so far the kernel had replaced the clamp and the sink set it
    /// again.
    pub clamp_restores: u64,
    /// The window the kernel last advertised (`tcpi_rcv_wnd`), bytes.
    pub rcv_wnd_bytes: u64,
    pub bytes_total: u64,
}

/// The end-of-run summary.
#[derive(Clone, Debug, Serialize)]
pub struct RecvSummary {
    pub role: &'static str,
    pub controller: &'static str,
    pub peer: Option<String>,
    /// The receive buffer the kernel granted, bytes.
    pub rcvbuf_bytes: u64,
    pub mss_bytes: Option<u64>,
    pub bytes_received: u64,
    pub duration_s: f64,
    pub goodput_bps: f64,
    /// Over the rows: the kernel's RTT estimate (ms) and the window (bytes).
    pub rcv_rtt_ms: Option<Distribution>,
    pub rwnd_bytes: Option<Distribution>,
    /// Window changes applied with `TCP_WINDOW_CLAMP`.
    pub clamp_updates: u64,
    /// Times the kernel had replaced the clamp and the sink set it again.
    pub clamp_restores: u64,
    /// How the transfer ended: "eof" (the sender's FIN), "reset" (the
    /// sender aborted), "duration" (--duration-s) or "signal".
    pub end: &'static str,
}

/// Run the sink until the sender closes, the duration passes or a signal.
pub fn run(opts: &RecvOptions) -> Result<RecvSummary, RunError> {
    let max_window = opts.controller.max_window_bytes().unwrap_or(1 << 30);
    let (listener, rcvbuf_bytes) =
        socket::listen(opts.listen, 2 * max_window).map_err(|source| RunError::Bind {
            addr: opts.listen,
            source,
        })?;
    listener.set_nonblocking(true).map_err(RunError::Socket)?;
    let start_ns = now_ns();
    let end_ns = opts.duration_ns.map(|d| start_ns.saturating_add(d));
    let mut summary = RecvSummary {
        role: "recv",
        controller: opts.controller.name(),
        peer: None,
        rcvbuf_bytes,
        mss_bytes: None,
        bytes_received: 0,
        duration_s: 0.0,
        goodput_bps: 0.0,
        rcv_rtt_ms: None,
        rwnd_bytes: None,
        clamp_updates: 0,
        clamp_restores: 0,
        end: "eof",
    };
    let past_end = |now: u64| end_ns.is_some_and(|e| now >= e);
    // Wait for the one connection.
    let (stream, peer) = loop {
        match listener.accept() {
            Ok(x) => break x,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(RunError::Socket(e)),
        }
        let now = now_ns();
        if clock::stop_requested() || past_end(now) {
            write_out(opts, &summary)?;
            return Ok(summary);
        }
        let wake = end_ns.map_or(now + IDLE_POLL_NS, |e| e.min(now + IDLE_POLL_NS));
        clock::wait_readable_until(listener.as_raw_fd(), wake);
    };
    drop(listener);
    summary.peer = Some(peer.to_string());
    session(opts, stream, end_ns, summary)
}

fn session(
    opts: &RecvOptions,
    mut stream: TcpStream,
    end_ns: Option<u64>,
    mut summary: RecvSummary,
) -> Result<RecvSummary, RunError> {
    stream.set_nonblocking(true).map_err(RunError::Socket)?;
    let mss = socket::mss_bytes(&stream).map_err(RunError::Socket)?;
    summary.mss_bytes = Some(mss);
    let cfg = TcpConfig {
        mss_bytes: mss.min(u32::MAX as u64) as u32,
        ..TcpConfig::linux()
    };
    let mut ctrl: Box<dyn RwndController> = opts.controller.build(&cfg);
    let mut clamp = WindowClamp::new(&stream, ctrl.rwnd_bytes()).map_err(RunError::Socket)?;

    let mut record = RecvRecord::start(opts)?;
    let mut buf = vec![0u8; READ_BYTES];
    let mut total = 0u64;
    loop {
        if clock::stop_requested() {
            summary.end = "signal";
            break;
        }
        if end_ns.is_some_and(|e| now_ns() >= e) {
            summary.end = "duration";
            break;
        }
        let turn = read_turn(&mut stream, &mut buf, &cfg, ctrl.as_mut())?;
        total += turn.bytes;
        if let Some(end) = turn.end {
            summary.end = end;
        }
        if turn.end.is_none() && turn.bytes > 0 {
            clamp
                .update(&stream, ctrl.rwnd_bytes())
                .map_err(RunError::Socket)?;
            clamp.hold(&stream).map_err(RunError::Socket)?;
        }
        record.write_due(now_ns(), total, &stream, ctrl.as_ref(), &mut clamp)?;
        if turn.end.is_some() {
            break;
        }
        if turn.bytes == 0 {
            let mut wake = record.clock.next_ns();
            if let Some(e) = end_ns {
                wake = wake.min(e);
            }
            clock::wait_readable_until(stream.as_raw_fd(), wake);
        }
    }
    let span = now_ns().saturating_sub(record.accepted_ns);
    summary.bytes_received = total;
    summary.duration_s = span as f64 / 1e9;
    summary.goodput_bps = rate_bps(total, span);
    summary.rcv_rtt_ms = Distribution::of(&record.rtts_ms);
    summary.rwnd_bytes = Distribution::of(&record.windows);
    summary.clamp_updates = clamp.updates;
    summary.clamp_restores = clamp.restores;
    write_out(opts, &summary)?;
    Ok(summary)
}

/// The per-interval record of a session and what its rows add up to.
struct RecvRecord {
    recorder: Recorder,
    clock: RowClock,
    accepted_ns: u64,
    interval_ns: u64,
    quiet: bool,
    /// Bytes read when the last row was written.
    row_start_total: u64,
    /// Over the rows: the kernel's RTT estimate (ms), the window (bytes).
    rtts_ms: Vec<f64>,
    windows: Vec<f64>,
}

impl RecvRecord {
    /// Rows from now on (the connection was just accepted).
    fn start(opts: &RecvOptions) -> Result<Self, RunError> {
        let accepted_ns = now_ns();
        Ok(RecvRecord {
            recorder: Recorder::create(opts.record.as_deref()).map_err(RunError::Record)?,
            clock: RowClock::new(accepted_ns, opts.interval_ns),
            accepted_ns,
            interval_ns: opts.interval_ns,
            quiet: opts.quiet,
            row_start_total: 0,
            rtts_ms: Vec::new(),
            windows: Vec::new(),
        })
    }

    /// Write every row due by `now`, `total` bytes read so far.
    fn write_due(
        &mut self,
        now: u64,
        total: u64,
        stream: &TcpStream,
        ctrl: &dyn RwndController,
        clamp: &mut WindowClamp,
    ) -> Result<(), RunError> {
        while let Some(t) = self.clock.take_due(now) {
            let info = socket::tcp_info(stream).map_err(RunError::Socket)?;
            let rcv_rtt_ms = (info.rcv_rtt_us > 0).then(|| info.rcv_rtt_us as f64 / 1e3);
            let row = RecvRow {
                t_s: (t - self.accepted_ns) as f64 / 1e9,
                mono_s: now as f64 / 1e9,
                goodput_bps: rate_bps(total - self.row_start_total, self.interval_ns),
                rcv_rtt_ms,
                controller_rtt_ms: ctrl.rtt_ns().map(|r| r as f64 / 1e6),
                rwnd_bytes: clamp.window_bytes(),
                window_est_bytes: ctrl.window_est_bytes(),
                window_clamp_bytes: clamp.hold(stream).map_err(RunError::Socket)?,
                clamp_restores: clamp.restores,
                rcv_wnd_bytes: info.rcv_wnd_bytes as u64,
                bytes_total: total,
            };
            self.row_start_total = total;
            if let Some(r) = rcv_rtt_ms {
                self.rtts_ms.push(r);
            }
            self.windows.push(row.rwnd_bytes as f64);
            show_row(self.quiet, &row);
            self.recorder.row(&row).map_err(RunError::Record)?;
        }
        Ok(())
    }
}

/// What one turn of reads found.
struct Turn {
    bytes: u64,
    /// How the transfer ended in this turn, if it did ("eof", "reset").
    end: Option<&'static str>,
}

/// Read what the socket holds (at most `MAX_READS_PER_TURN` reads), feeding
/// the controller each copy and, once per turn, the kernel's RTT estimate.
fn read_turn(
    stream: &mut TcpStream,
    buf: &mut [u8],
    cfg: &TcpConfig,
    ctrl: &mut dyn RwndController,
) -> Result<Turn, RunError> {
    let mut turn = Turn { bytes: 0, end: None };
    for _ in 0..MAX_READS_PER_TURN {
        match stream.read(buf) {
            Ok(0) => {
                turn.end = Some("eof");
                break;
            }
            Ok(n) => {
                if turn.bytes == 0 {
                    feed_kernel_rtt(stream, cfg, ctrl)?;
                }
                turn.bytes += n as u64;
                ctrl.on_copied(now_ns(), n as u64);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // The sender aborted (RST): the transfer is over, as at EOF;
            // what arrived is measured and the summary says how it ended.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted
                ) =>
            {
                turn.end = Some("reset");
                break;
            }
            Err(e) => return Err(RunError::Socket(e)),
        }
    }
    Ok(turn)
}

/// The kernel's RTT estimate as one full-size arrival (see the module doc).
fn feed_kernel_rtt(
    stream: &TcpStream,
    cfg: &TcpConfig,
    ctrl: &mut dyn RwndController,
) -> Result<(), RunError> {
    let info = socket::tcp_info(stream).map_err(RunError::Socket)?;
    if info.rcv_rtt_us > 0 {
        let now = now_ns();
        ctrl.on_segment(&SegmentArrival {
            now_ns: now,
            payload_bytes: cfg.mss_bytes,
            ts_val_ns: None,
            ts_ecr_ns: Some(now.saturating_sub(info.rcv_rtt_us as u64 * 1000).max(1)),
        });
    }
    Ok(())
}

fn show_row(quiet: bool, row: &RecvRow) {
    say(
        quiet,
        format_args!(
            "{:8.2} s  {:9.3} Mb/s  rcv_rtt {:>8}  rwnd {:>9} B  clamp {:>9} B",
            row.t_s,
            row.goodput_bps / 1e6,
            row.rcv_rtt_ms.map_or("-".to_string(), |r| format!("{r:.2} ms")),
            row.rwnd_bytes,
            row.window_clamp_bytes
        ),
    );
}

fn write_out(opts: &RecvOptions, summary: &RecvSummary) -> Result<(), RunError> {
    if let Some(p) = summary_path(opts.summary.as_deref(), opts.record.as_deref()) {
        write_summary(&p, summary).map_err(RunError::Record)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn free_port() -> SocketAddr {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    }

    /// A loopback transfer through each controller: every byte arrives,
    /// the kernel holds the controller's window as its clamp, and the
    /// buffer the sink owns is at least the largest window.
    #[test]
    fn loopback_transfer_runs_the_controller_and_holds_its_clamp() {
        for name in ["autotuning", "drwa", "rtac"] {
            let addr = free_port();
            let dir = std::env::temp_dir().join(format!("latlab-net-recv-{}-{name}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let record = dir.join("recv.csv");
            let params = vec![("rmem_max_bytes".to_string(), 300_000.0)];
            let opts = RecvOptions {
                listen: addr,
                controller: RwndSpec::parse(name, &params).unwrap(),
                duration_ns: Some(20_000_000_000),
                interval_ns: 20_000_000,
                record: Some(record.clone()),
                summary: None,
                quiet: true,
            };
            let rx = std::thread::spawn(move || run(&opts).unwrap());
            let sent: u64 = 40 << 20;
            let mut conn = None;
            for _ in 0..100 {
                if let Ok(c) = TcpStream::connect(addr) {
                    conn = Some(c);
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            let mut conn = conn.expect("connect to the sink");
            let chunk = vec![7u8; 1 << 20];
            // Paced, so the run spans several 20 ms rows.
            for _ in 0..(sent >> 20) {
                conn.write_all(&chunk).unwrap();
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            drop(conn);
            let s = rx.join().unwrap();
            assert_eq!(s.bytes_received, sent, "{name}");
            assert_eq!(s.controller, name);
            assert!(s.rcvbuf_bytes >= 300_000, "{name}: {s:?}");
            let text = std::fs::read_to_string(&record).unwrap();
            let mut lines = text.lines();
            let header: Vec<&str> = lines.next().unwrap().split(',').collect();
            let col = |n: &str| header.iter().position(|h| *h == n).unwrap();
            let (rwnd, clamp) = (col("rwnd_bytes"), col("window_clamp_bytes"));
            let rows: Vec<Vec<String>> = lines.map(|l| l.split(',').map(String::from).collect()).collect();
            assert!(!rows.is_empty(), "{name}: no rows");
            for r in &rows {
                let (w, c): (u64, u64) = (r[rwnd].parse().unwrap(), r[clamp].parse().unwrap());
                assert!(w <= 300_000, "{name}: window {w} above the cap");
                assert_eq!(c, w, "{name}: the kernel's clamp is not the controller's window");
            }
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }

    /// A sender that aborts (RST, SO_LINGER 0) ends the transfer like a FIN:
    /// the sink measures what arrived, writes its summary and says "reset".
    #[test]
    fn a_sender_that_resets_ends_the_run_cleanly() {
        let addr = free_port();
        let dir = std::env::temp_dir().join(format!("latlab-net-recv-reset-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let record = dir.join("recv.csv");
        let opts = RecvOptions {
            listen: addr,
            controller: RwndSpec::parse("autotuning", &[]).unwrap(),
            duration_ns: Some(20_000_000_000),
            interval_ns: 20_000_000,
            record: Some(record.clone()),
            summary: None,
            quiet: true,
        };
        let rx = std::thread::spawn(move || run(&opts));
        let mut conn = (0..100)
            .find_map(|_| {
                TcpStream::connect(addr).ok().or_else(|| {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                    None
                })
            })
            .expect("connect to the sink");
        conn.write_all(&vec![1u8; 1 << 20]).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
        // Unread data in our receive queue is not needed: SO_LINGER 0 makes close send RST.
        let linger = libc::linger {
            l_onoff: 1,
            l_linger: 0,
        };
        // SAFETY: setsockopt on our own socket with a live linger struct of its size.
        let rc = unsafe {
            libc::setsockopt(
                std::os::fd::AsRawFd::as_raw_fd(&conn),
                libc::SOL_SOCKET,
                libc::SO_LINGER,
                (&linger as *const libc::linger).cast(),
                std::mem::size_of::<libc::linger>() as libc::socklen_t,
            )
        };
        assert_eq!(rc, 0);
        drop(conn);
        let s = rx
            .join()
            .unwrap()
            .expect("a reset is the end of the transfer, not an error");
        assert_eq!(s.end, "reset");
        assert!(s.bytes_received > 0 && s.bytes_received <= 1 << 20, "{s:?}");
        assert!(
            dir.join("recv.summary.json").exists()
                || summary_path(None, Some(&record)).is_some_and(|p| p.exists())
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
