//! `latlab-net flows`: a scenario's TCP flows run by the kernel's TCP
//! between two network namespaces, usually the two ends of a
//! `latlab-net emulate --stay` path. Senders live in the client namespace,
//! sinks in the server namespace; every flow starts at the simulator's start
//! time for it, with the scenario's congestion controller set by
//! TCP_CONGESTION, sends bulk data (or `size_bytes`, then FIN) until
//! `duration_s`, and is measured as the simulator measures it: goodput from
//! the bytes the sink read inside [measure_from_s, duration_s], the sender's
//! counters from TCP_INFO (cwnd, srtt, retransmitted segments, RTOs, bytes
//! acknowledged), sampled every `sample_interval_ms`.
//!
//! One thread per sender and one per sink (a few hundred Mbit/s over ≤ ~100
//! flows needs nothing cleverer); the main thread keeps the clock, samples
//! TCP_INFO and writes the files. A socket's namespace is fixed when it is
//! created, so each sender thread enters the client namespace (setns(2) is
//! per thread) before it creates its socket, and the main thread creates the
//! listeners inside the server namespace.
//!
//! Output (`--out DIR`): `flows.csv` (the simulator's `flows` columns plus
//! `handshake_ns`, `min_rtt_ns`, `linux_cc` and the ECN columns below),
//! `flow_samples.csv` (the `flow_samples` columns plus `delivered_ce`) and
//! `flows_summary.json` (the start of the run on the wall clock, to align
//! with the emulator's `link_samples`, and the `tcp_ecn` value set).
//!
//! ECN: the scenario's `tcp.ecn` sets `net.ipv4.tcp_ecn` in both namespaces
//! for the run ([`ecn`]). What the kernel did is read back from TCP_INFO:
//! `ecn` (the sender's connection negotiated ECN, TCPI_OPT_ECN), `ecn_seen`
//! (the sink received ECT or CE data, TCPI_OPT_ECN_SEEN) and `delivered_ce`
//! (tcpi_delivered_ce: segments the sender saw acknowledged by ACKs
//! carrying ECE, i.e. the echo of the path's CE marks; cumulative, also in
//! every sample).
//!
//! UDP flows (`kind = "udp"`) send on the simulator's own source schedule
//! and are measured at the sink: packets, bytes, one-way delay and losses
//! ([`udp`]). Their rows have the simulator's UDP columns (`segments_sent`,
//! `packets_received`, `owd_mean_ns`, `owd_max_ns`, goodput and throughput
//! over the window) and three only a real run has: `lost_pkts` (sequence
//! gaps at the sink), `local_drops` (sends the client's own device queue
//! refused) and `sink_drops` (datagrams the sink's socket buffer dropped).
//! `owd_*` and `lost_pkts` are empty for a source whose datagrams can be
//! shorter than the 16-byte stamp.
//!
//! Modules: [`plan`] (scenario → flows, what fits), [`tcp_info`]
//! (TCP_INFO), [`ecn`] (the namespaces' ECN switch), [`udp`] (UDP sources
//! and sinks), [`args`] (command line).

pub mod args;
pub mod ecn;
pub mod plan;
pub mod tcp_info;
pub mod udp;

use std::fs::File;
use std::io;
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::clock::{now_ns, stop_requested};
use crate::run_files::{write_summary, Recorder};
use args::FlowsOptions;
use plan::{FlowPlan, FlowSpec};
use tcp_info::TcpInfo;
use udp::UdpCounters;

/// How often a blocked sender or sink looks at the stop flag.
const POLL_MS: i32 = 20;
const NOT_YET: u64 = u64::MAX;

/// What the main thread and the flow threads share, per flow.
struct Shared {
    /// Payload bytes the sink has read.
    delivered: AtomicU64,
    /// When the sink had read `size_bytes` (ns since t0), or NOT_YET.
    done_ns: AtomicU64,
    /// When connect() was called and how long it took, ns.
    connect_ns: AtomicU64,
    handshake_ns: AtomicU64,
    /// The sender's socket once connected (−1 before): TCP_INFO reads it.
    fd: AtomicI32,
    /// The sink's socket once accepted (−1 before): its TCP_INFO
    /// `bytes_received` is what the stack delivered in order, whether or not
    /// the sink thread has been scheduled to read it yet.
    sink_fd: AtomicI32,
    /// A UDP flow's counters (unused for TCP).
    udp: UdpCounters,
}

impl Shared {
    fn new() -> Self {
        Shared {
            delivered: AtomicU64::new(0),
            done_ns: AtomicU64::new(NOT_YET),
            connect_ns: AtomicU64::new(NOT_YET),
            handshake_ns: AtomicU64::new(NOT_YET),
            fd: AtomicI32::new(-1),
            sink_fd: AtomicI32::new(-1),
            udp: UdpCounters::default(),
        }
    }
}

/// A `flows.csv` row: the simulator's `flows` columns (python/latlab/
/// schema.py), plus what only a real socket knows. As in the simulator,
/// TCP-only columns are empty for UDP flows and UDP-only ones for TCP.
#[derive(Debug, Serialize)]
pub struct FlowRow {
    pub flow_id: u32,
    pub group: String,
    pub kind: String,
    pub src: String,
    pub dst: String,
    pub cc: String,
    pub start_ns: u64,
    pub size_bytes: Option<u64>,
    pub completed: bool,
    pub fct_ns: Option<u64>,
    pub bytes_acked: Option<u64>,
    pub bytes_delivered: u64,
    pub goodput_bps: f64,
    pub throughput_bps: f64,
    /// TCP data segments, or UDP datagrams sent.
    pub segments_sent: u64,
    pub retransmitted_segments: Option<u64>,
    /// RTOs (tcpi_total_rto, Linux ≥ 6.7).
    pub timeouts: Option<u64>,
    pub cwnd_bytes: Option<u64>,
    pub srtt_ns: Option<u64>,
    /// UDP: datagrams received, and their one-way delay.
    pub packets_received: Option<u64>,
    pub owd_mean_ns: Option<u64>,
    pub owd_max_ns: Option<u64>,
    pub handshake_ns: Option<u64>,
    pub min_rtt_ns: Option<u64>,
    pub linux_cc: String,
    /// UDP: sends the client namespace's device queue refused.
    pub local_drops: Option<u64>,
    /// UDP: sequence numbers missing below the highest one received.
    pub lost_pkts: Option<u64>,
    /// UDP: datagrams the sink's socket dropped (a full receive buffer).
    pub sink_drops: Option<u64>,
    /// TCP: the connection negotiated ECN (the sender's TCPI_OPT_ECN).
    pub ecn: Option<bool>,
    /// TCP: the sink received ECT or CE data (its TCPI_OPT_ECN_SEEN).
    pub ecn_seen: Option<bool>,
    /// TCP: segments acknowledged by ACKs with ECE (tcpi_delivered_ce).
    pub delivered_ce: Option<u64>,
}

/// A `flow_samples.csv` row: the simulator's columns.
#[derive(Debug, Serialize)]
pub struct FlowSampleRow {
    pub time_ns: u64,
    pub flow_id: u32,
    pub cwnd_bytes: u64,
    pub ssthresh_bytes: Option<u64>,
    pub srtt_ns: u64,
    pub rwnd_bytes: u64,
    pub flight_bytes: u64,
    pub bytes_acked: u64,
    pub bytes_delivered: u64,
    pub retransmitted_segments: u64,
    /// tcpi_delivered_ce so far: the sender's count of ECE-acknowledged segments.
    pub delivered_ce: u64,
}

#[derive(Debug, Serialize)]
struct RunSummary<'a> {
    scenario: &'a str,
    seed: u64,
    /// CLOCK_REALTIME at t = 0 of the run, ns.
    t0_unix_ns: u64,
    elapsed_ns: u64,
    duration_ns: u64,
    measure_from_ns: u64,
    stopped_early: bool,
    /// Packets the client namespace's devices dropped during the run before
    /// the emulator read them (the TUN ring overflowed: see [`udp`]); any
    /// flow's, not counted in any link's drops.
    client_device_drops: u64,
    /// `net.ipv4.tcp_ecn` in both namespaces during the run (1: ECN, 0: none).
    tcp_ecn: u8,
    kernel: String,
    client_ns: &'a str,
    server_ns: &'a str,
    notes: &'a [String],
    errors: Vec<String>,
}

fn os_err(what: &str) -> String {
    format!("{what}: {}", io::Error::last_os_error())
}

/// Enter the network namespace `ns_file` refers to, for this thread only.
fn enter(ns_file: &File) -> Result<(), String> {
    // SAFETY: setns on an fd we own; it changes this thread's namespace.
    if unsafe { libc::setns(ns_file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(os_err("setns"));
    }
    Ok(())
}

fn open_ns(name: &str) -> Result<File, String> {
    let path = format!("/var/run/netns/{name}");
    File::open(&path).map_err(|e| format!("network namespace {name:?} ({path}): {e}"))
}

fn set_opt<T>(fd: RawFd, level: i32, name: i32, value: &T, what: &str) -> Result<(), String> {
    // SAFETY: `value` points at a live T of the given size.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (value as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(os_err(what));
    }
    Ok(())
}

fn timeout_opt(fd: RawFd, name: i32, what: &str) -> Result<(), String> {
    let tv = libc::timeval {
        tv_sec: 0,
        tv_usec: (POLL_MS * 1000) as libc::suseconds_t,
    };
    set_opt(fd, libc::SOL_SOCKET, name, &tv, what)
}

/// A TCP socket in this thread's namespace, with the flow's controller.
fn sender_socket(flow: &FlowSpec) -> Result<OwnedFd, String> {
    // SAFETY: plain socket(2); the fd is owned below.
    let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(os_err("socket"));
    }
    // SAFETY: `raw` is a new fd nobody else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let cc = flow.linux_cc.as_bytes();
    // SAFETY: the name's bytes, its length.
    let rc = unsafe {
        libc::setsockopt(
            raw,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            cc.as_ptr().cast(),
            cc.len() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(os_err(&format!("TCP_CONGESTION {:?}", flow.linux_cc)));
    }
    if let Some(mss) = flow.mss_bytes {
        set_opt(
            raw,
            libc::IPPROTO_TCP,
            libc::TCP_MAXSEG,
            &(mss as i32),
            "TCP_MAXSEG",
        )?;
    }
    timeout_opt(raw, libc::SO_SNDTIMEO, "SO_SNDTIMEO")?;
    Ok(fd)
}

/// connect(2) that gives up when `stop` is set (a lost SYN would otherwise
/// block for minutes): non-blocking connect, then poll for writability.
fn connect(fd: RawFd, to: SocketAddrV4, stop: &AtomicBool) -> io::Result<()> {
    let addr = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: to.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(*to.ip()).to_be(),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: fcntl on our socket.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) };
    // SAFETY: a valid sockaddr_in of the given length.
    let rc = unsafe {
        libc::connect(
            fd,
            (&addr as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(e);
        }
        loop {
            if stop.load(Ordering::Relaxed) {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "not connected by the end of the run",
                ));
            }
            let mut p = libc::pollfd {
                fd,
                events: libc::POLLOUT,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            if unsafe { libc::poll(&mut p, 1, POLL_MS) } > 0 {
                break;
            }
        }
        let mut err: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: SO_ERROR into a c_int.
        unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_ERROR,
                (&mut err as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        if err != 0 {
            return Err(io::Error::from_raw_os_error(err));
        }
    }
    // SAFETY: back to blocking sends (bounded by SO_SNDTIMEO).
    unsafe { libc::fcntl(fd, libc::F_SETFL, flags) };
    Ok(())
}

/// Sleep until `t0 + at_ns` or a stop; false if stopped first.
fn sleep_until(t0: u64, at_ns: u64, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = now_ns().saturating_sub(t0);
        if now >= at_ns {
            return true;
        }
        std::thread::sleep(Duration::from_nanos(
            (at_ns - now).min(POLL_MS as u64 * 1_000_000),
        ));
    }
}

/// The sender: enter the client namespace, wait for the start time, connect,
/// write until `size_bytes` or the stop. Returns its socket (kept open so
/// that TCP_INFO can still be read until every thread has been joined) and
/// the error that ended it early, if any.
fn sender(
    flow: &FlowSpec,
    to: SocketAddrV4,
    client_ns: &File,
    t0: u64,
    shared: &Shared,
    stop: &AtomicBool,
) -> (Option<OwnedFd>, Option<String>) {
    let fd = match enter(client_ns).and_then(|()| sender_socket(flow)) {
        Ok(fd) => fd,
        Err(e) => return (None, Some(format!("flow {}: {e}", flow.flow_id))),
    };
    if !sleep_until(t0, flow.start_ns, stop) {
        return (Some(fd), None);
    }
    let started = now_ns();
    shared.connect_ns.store(started - t0, Ordering::SeqCst);
    if let Err(e) = connect(fd.as_raw_fd(), to, stop) {
        return (
            Some(fd),
            Some(format!("flow {}: connect to {to}: {e}", flow.flow_id)),
        );
    }
    shared.handshake_ns.store(now_ns() - started, Ordering::SeqCst);
    shared.fd.store(fd.as_raw_fd(), Ordering::SeqCst);
    let chunk = vec![0u8; 64 * 1024];
    let mut left = flow.size_bytes.unwrap_or(u64::MAX);
    while left > 0 && !stop.load(Ordering::Relaxed) {
        let n = chunk.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        // SAFETY: sending from a live buffer of at least n bytes.
        let sent = unsafe { libc::send(fd.as_raw_fd(), chunk.as_ptr().cast(), n, libc::MSG_NOSIGNAL) };
        if sent >= 0 {
            left -= sent as u64;
            continue;
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => {}
            _ => return (Some(fd), Some(format!("flow {}: send: {e}", flow.flow_id))),
        }
    }
    if left == 0 {
        // SAFETY: shutdown(2) on our socket: FIN after the last byte.
        unsafe { libc::shutdown(fd.as_raw_fd(), libc::SHUT_WR) };
    }
    (Some(fd), None)
}

fn wait_readable(fd: RawFd) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut p, 1, POLL_MS) > 0 }
}

/// The sink: accept the flow's connection and read until EOF or the stop.
/// Returns the connection (kept open until every thread has been joined, as
/// its TCP_INFO may still be read).
fn sink(
    flow: &FlowSpec,
    listener: &TcpListener,
    t0: u64,
    shared: &Shared,
    stop: &AtomicBool,
) -> (Option<TcpStream>, Option<String>) {
    while !wait_readable(listener.as_raw_fd()) {
        if stop.load(Ordering::Relaxed) {
            return (None, None);
        }
    }
    let conn = match listener.accept() {
        Ok((c, _)) => c,
        Err(e) => return (None, Some(format!("flow {}: accept: {e}", flow.flow_id))),
    };
    shared.sink_fd.store(conn.as_raw_fd(), Ordering::SeqCst);
    let err = sink_read(flow, &conn, t0, shared, stop).err();
    (Some(conn), err)
}

fn sink_read(
    flow: &FlowSpec,
    conn: &TcpStream,
    t0: u64,
    shared: &Shared,
    stop: &AtomicBool,
) -> Result<(), String> {
    timeout_opt(conn.as_raw_fd(), libc::SO_RCVTIMEO, "SO_RCVTIMEO")?;
    let mut buf = vec![0u8; 256 * 1024];
    let mut total = 0u64;
    while !stop.load(Ordering::Relaxed) {
        // SAFETY: reading into a live buffer of buf.len() bytes.
        let n = unsafe { libc::recv(conn.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n > 0 {
            total += n as u64;
            shared.delivered.store(total, Ordering::SeqCst);
            if flow.size_bytes == Some(total) {
                shared.done_ns.store(now_ns() - t0, Ordering::SeqCst);
            }
            continue;
        }
        if n == 0 {
            break; // EOF
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => {}
            _ => return Err(format!("flow {}: recv: {e}", flow.flow_id)),
        }
    }
    Ok(())
}

/// In-order payload bytes at the sink: the stack's count (TCP_INFO
/// `bytes_received`) once the sink has accepted, and before that (the
/// connection waiting in the accept queue already receives data) at least
/// what the sender has seen acknowledged (`bytes_acked`). The stack counts
/// a FIN as one byte, hence the cap at the flow's size.
fn delivered_now(s: &Shared, size_bytes: Option<u64>) -> u64 {
    let mut n = s
        .delivered
        .load(Ordering::SeqCst)
        .max(s.udp.received_bytes.load(Ordering::SeqCst));
    for (fd, sink_side) in [
        (s.sink_fd.load(Ordering::SeqCst), true),
        (s.fd.load(Ordering::SeqCst), false),
    ] {
        if fd < 0 {
            continue;
        }
        if let Ok(i) = TcpInfo::of(fd) {
            n = n.max(if sink_side {
                i.bytes_received
            } else {
                i.bytes_acked.saturating_sub(1)
            });
        }
    }
    n.min(size_bytes.unwrap_or(u64::MAX))
}

/// Payload bytes acknowledged: `tcpi_bytes_acked` counts the SYN (and a
/// FIN) as one byte each.
fn payload_acked(i: &TcpInfo, size_bytes: Option<u64>) -> u64 {
    i.bytes_acked
        .saturating_sub(1)
        .min(size_bytes.unwrap_or(u64::MAX))
}

/// Counters at one instant, per flow.
#[derive(Clone, Copy, Default)]
struct Snapshot {
    delivered: u64,
    bytes_sent: u64,
    /// When these were read, ns since t0: rates divide by the time between
    /// the actual reads, so a late wake-up of the main thread (a busy
    /// machine) does not inflate them.
    at_ns: u64,
}

fn snapshot(shared: &[Shared], flows: &[FlowSpec], t0: u64) -> Vec<Snapshot> {
    shared
        .iter()
        .zip(flows)
        .map(|(s, f)| {
            let fd = s.fd.load(Ordering::SeqCst);
            Snapshot {
                delivered: delivered_now(s, f.size_bytes),
                bytes_sent: if f.is_udp() {
                    s.udp.sent_bytes.load(Ordering::SeqCst)
                } else if fd >= 0 {
                    TcpInfo::of(fd).map(|i| i.bytes_sent).unwrap_or(0)
                } else {
                    0
                },
                at_ns: now_ns() - t0,
            }
        })
        .collect()
}

fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Where a flow's sink waits in the server namespace.
enum Listener {
    Tcp(TcpListener),
    Udp(UdpSocket),
}

/// What the main thread and the flow threads read during a run.
struct Run<'a> {
    plan: &'a FlowPlan,
    shared: &'a [Shared],
    client_ns: &'a File,
    stop: &'a AtomicBool,
    /// The run's time 0 (`now_ns()`).
    t0: u64,
}

/// A sender thread: its socket (kept open until the end) and its error.
type SenderThread<'scope> = ScopedJoinHandle<'scope, (Option<OwnedFd>, Option<String>)>;
/// A sink thread: its connection and its error.
type SinkThread<'scope> = ScopedJoinHandle<'scope, (Option<TcpStream>, Option<String>)>;

/// What the main thread measured.
struct Measured {
    /// Per flow, at the start of the measurement window and at the end.
    window_start: Vec<Snapshot>,
    end: Vec<Snapshot>,
    /// When the run ended, ns since t0.
    end_ns: u64,
    /// The senders' last TCP_INFO (None for UDP or a sender not connected).
    infos: Vec<Option<TcpInfo>>,
    /// The sinks' last TCP_INFO (None for UDP or a flow not accepted).
    sink_infos: Vec<Option<TcpInfo>>,
    stopped_early: bool,
}

/// Run the plan's flows; Err on setup failure, Ok(false) if a flow failed.
pub fn run(opts: &FlowsOptions) -> Result<bool, String> {
    let plan: FlowPlan = plan::load(&opts.scenario)?;
    let (client_ns_name, server_ns_name) = check_options(opts, &plan)?;
    let client_ns = open_ns(client_ns_name)?;
    let server_ns = open_ns(server_ns_name)?;
    // Before any socket: a SYN reads its namespace's setting when it is sent or received.
    let ecn_switch = ecn::NamespaceEcn::set(&[&client_ns, &server_ns], plan.tcp_ecn)?;
    std::fs::create_dir_all(&opts.out).map_err(|e| format!("--out {}: {e}", opts.out.display()))?;
    let listeners = open_listeners(opts, &plan, &server_ns, server_ns_name)?;
    let shared: Vec<Shared> = plan.flows.iter().map(|_| Shared::new()).collect();
    let stop = AtomicBool::new(false);
    let mut samples =
        Recorder::create(Some(&opts.out.join("flow_samples.csv"))).map_err(|e| e.to_string())?;
    let device_drops_before = udp::device_tx_drops(&client_ns)?;
    let t0_unix_ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let run = Run {
        plan: &plan,
        shared: &shared,
        client_ns: &client_ns,
        stop: &stop,
        t0: now_ns(),
    };
    let (measured, errors) = std::thread::scope(|scope| -> Result<_, String> {
        let (senders, sinks) = spawn_flows(scope, opts, &run, &listeners);
        let measured = keep_clock(&run, &mut samples)?;
        stop.store(true, Ordering::SeqCst);
        Ok((measured, join_flows(senders, sinks)))
    })?;
    write_flow_rows(opts, &run, &measured)?;
    let client_device_drops = udp::device_tx_drops(&client_ns)?.saturating_sub(device_drops_before);
    let ok = errors.is_empty();
    let summary = RunSummary {
        scenario: &plan.scenario_name,
        seed: plan.seed,
        t0_unix_ns,
        elapsed_ns: measured.end_ns,
        duration_ns: plan.duration_ns,
        measure_from_ns: plan.measure_from_ns,
        stopped_early: measured.stopped_early,
        client_device_drops,
        tcp_ecn: ecn_switch.value,
        kernel: kernel_release(),
        client_ns: client_ns_name,
        server_ns: server_ns_name,
        notes: &plan.notes,
        errors,
    };
    write_summary(&opts.out.join("flows_summary.json"), &summary).map_err(|e| e.to_string())?;
    if !opts.quiet {
        for e in &summary.errors {
            eprintln!("error: {e}");
        }
    }
    Ok(ok)
}

/// The two namespaces' names, and a port for every flow above --base-port.
fn check_options<'a>(opts: &'a FlowsOptions, plan: &FlowPlan) -> Result<(&'a str, &'a str), String> {
    let names = match (&opts.client_ns, &opts.server_ns) {
        (Some(c), Some(s)) => (c.as_str(), s.as_str()),
        _ => return Err("--client-ns and --server-ns are required to run flows".into()),
    };
    if plan.flows.len() + usize::from(opts.base_port) > 65_535 {
        return Err(format!(
            "--base-port {} leaves no port for {} flows",
            opts.base_port,
            plan.flows.len()
        ));
    }
    Ok(names)
}

/// Listeners (UDP: bound sockets) in the server namespace, then back to our own.
fn open_listeners(
    opts: &FlowsOptions,
    plan: &FlowPlan,
    server_ns: &File,
    server_ns_name: &str,
) -> Result<Vec<Listener>, String> {
    let home =
        File::open("/proc/thread-self/ns/net").map_err(|e| format!("/proc/thread-self/ns/net: {e}"))?;
    enter(server_ns)?;
    let listeners: Result<Vec<Listener>, String> = plan
        .flows
        .iter()
        .map(|f| {
            let addr = SocketAddrV4::new(opts.server_addr, opts.base_port + f.flow_id as u16);
            let fail = |e: String| format!("listen on {addr} in {server_ns_name}: {e}");
            if f.is_udp() {
                let s = UdpSocket::bind(addr).map_err(|e| fail(e.to_string()))?;
                udp::sink_options(&s).map_err(fail)?;
                Ok(Listener::Udp(s))
            } else {
                TcpListener::bind(addr)
                    .map(Listener::Tcp)
                    .map_err(|e| fail(e.to_string()))
            }
        })
        .collect();
    enter(&home)?;
    listeners
}

/// A sender and a sink thread per flow.
fn spawn_flows<'scope, 'env>(
    scope: &'scope Scope<'scope, 'env>,
    opts: &'env FlowsOptions,
    run: &'env Run<'env>,
    listeners: &'env [Listener],
) -> (Vec<SenderThread<'scope>>, Vec<SinkThread<'scope>>) {
    let (t0, duration_ns) = (run.t0, run.plan.duration_ns);
    let mut senders = Vec::new();
    let mut sinks = Vec::new();
    for ((flow, listener), sh) in run.plan.flows.iter().zip(listeners).zip(run.shared) {
        let to = SocketAddrV4::new(opts.server_addr, opts.base_port + flow.flow_id as u16);
        let (client_ns, stop) = (run.client_ns, run.stop);
        match listener {
            Listener::Tcp(l) => {
                senders.push(scope.spawn(move || sender(flow, to, client_ns, t0, sh, stop)));
                sinks.push(scope.spawn(move || sink(flow, l, t0, sh, stop)));
            }
            Listener::Udp(s) => {
                senders.push(scope.spawn(move || {
                    (
                        None,
                        udp::sender(flow, to, client_ns, t0, duration_ns, &sh.udp, stop),
                    )
                }));
                sinks.push(scope.spawn(move || (None, udp::sink(flow, s, t0, &sh.udp, stop))));
            }
        }
    }
    (senders, sinks)
}

/// The main thread: samples, the measurement window, the end (the
/// duration, or a stop signal); then the counters at the end.
fn keep_clock(run: &Run, samples: &mut Recorder) -> Result<Measured, String> {
    let (plan, t0) = (run.plan, run.t0);
    let interval = plan.sample_interval_ns;
    let mut next_sample = if interval > 0 { interval } else { NOT_YET };
    let mut window_start: Option<Vec<Snapshot>> =
        (plan.measure_from_ns == 0).then(|| snapshot(run.shared, &plan.flows, t0));
    let mut end_ns = plan.duration_ns;
    let mut stopped_early = false;
    loop {
        let now = now_ns() - t0;
        if stop_requested() {
            stopped_early = true;
            end_ns = now;
            break;
        }
        if window_start.is_none() && now >= plan.measure_from_ns {
            window_start = Some(snapshot(run.shared, &plan.flows, t0));
        }
        if now >= plan.duration_ns {
            break;
        }
        if now >= next_sample {
            sample_flows(run, samples, next_sample)?;
            next_sample += interval;
        }
        let wake = next_sample.min(plan.duration_ns).min(if window_start.is_none() {
            plan.measure_from_ns
        } else {
            NOT_YET
        });
        let now = now_ns() - t0;
        if wake > now {
            std::thread::sleep(Duration::from_nanos((wake - now).min(POLL_MS as u64 * 1_000_000)));
        }
    }
    let end = snapshot(run.shared, &plan.flows, t0);
    let info_of = |fd: &AtomicI32| {
        let fd = fd.load(Ordering::SeqCst);
        (fd >= 0).then(|| TcpInfo::of(fd).ok()).flatten()
    };
    Ok(Measured {
        window_start: window_start.unwrap_or_else(|| end.clone()),
        end,
        end_ns,
        infos: run.shared.iter().map(|s| info_of(&s.fd)).collect(),
        sink_infos: run.shared.iter().map(|s| info_of(&s.sink_fd)).collect(),
        stopped_early,
    })
}

/// A `flow_samples` row at `time_ns` for each sampled flow whose sender is connected.
fn sample_flows(run: &Run, samples: &mut Recorder, time_ns: u64) -> Result<(), String> {
    for (flow, sh) in run.plan.flows.iter().zip(run.shared).filter(|(f, _)| f.sampled) {
        let fd = sh.fd.load(Ordering::SeqCst);
        if fd < 0 {
            continue;
        }
        let Ok(i) = TcpInfo::of(fd) else { continue };
        samples
            .row(&FlowSampleRow {
                time_ns,
                flow_id: flow.flow_id,
                cwnd_bytes: i.cwnd_bytes(),
                ssthresh_bytes: i.ssthresh_bytes(),
                srtt_ns: i.srtt_ns(),
                rwnd_bytes: u64::from(i.snd_wnd),
                flight_bytes: i.flight_bytes(),
                bytes_acked: payload_acked(&i, flow.size_bytes),
                bytes_delivered: delivered_now(sh, flow.size_bytes),
                retransmitted_segments: u64::from(i.total_retrans),
                delivered_ce: u64::from(i.delivered_ce),
            })
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Join the flow threads (once told to stop), then abort the senders'
/// connections; the threads' errors.
fn join_flows(senders: Vec<SenderThread>, sinks: Vec<SinkThread>) -> Vec<String> {
    let mut errors = Vec::new();
    let mut sockets = Vec::new();
    for h in senders {
        match h.join() {
            Ok((fd, err)) => {
                sockets.push(fd);
                errors.extend(err);
            }
            Err(_) => errors.push("a sender thread panicked".into()),
        }
    }
    let mut conns = Vec::new();
    for h in sinks {
        match h.join() {
            Ok((conn, err)) => {
                conns.push(conn);
                errors.extend(err);
            }
            Err(_) => errors.push("a sink thread panicked".into()),
        }
    }
    drop(conns);
    // Abort rather than drain: a bulk sender's buffer would otherwise
    // keep the path busy after the run (SO_LINGER 0 sends RST on close).
    for fd in sockets.into_iter().flatten() {
        let linger = libc::linger {
            l_onoff: 1,
            l_linger: 0,
        };
        let _ = set_opt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            &linger,
            "SO_LINGER",
        );
    }
    errors
}

/// `flows.csv`: a row per flow.
fn write_flow_rows(opts: &FlowsOptions, run: &Run, m: &Measured) -> Result<(), String> {
    let mut rows = Recorder::create(Some(&opts.out.join("flows.csv"))).map_err(|e| e.to_string())?;
    for (i, flow) in run.plan.flows.iter().enumerate() {
        let row = flow_row(flow, &run.shared[i], m.infos[i], &m.window_start[i], &m.end[i]);
        let row = with_ecn(row, m.infos[i], m.sink_infos[i]);
        rows.row(&row).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// A TCP row's ECN columns from the two ends' TCP_INFO (empty for UDP, and
/// for an end that never connected).
fn with_ecn(row: FlowRow, sender: Option<TcpInfo>, sink: Option<TcpInfo>) -> FlowRow {
    if row.kind != "tcp" {
        return row;
    }
    FlowRow {
        ecn: sender.map(|i| i.ecn_negotiated()),
        ecn_seen: sink.map(|i| i.ecn_seen()),
        delivered_ce: sender.map(|i| u64::from(i.delivered_ce)),
        ..row
    }
}

/// A flow's row: its counters over the window from `start` to `end`.
fn flow_row(
    flow: &FlowSpec,
    sh: &Shared,
    info: Option<TcpInfo>,
    start: &Snapshot,
    end: &Snapshot,
) -> FlowRow {
    let info = info.unwrap_or_default();
    let done = sh.done_ns.load(Ordering::SeqCst);
    let connect = sh.connect_ns.load(Ordering::SeqCst);
    let handshake = sh.handshake_ns.load(Ordering::SeqCst);
    let completed = done != NOT_YET;
    let window_ns = end.at_ns.saturating_sub(start.at_ns).max(1);
    let rate = |bytes: u64| bytes as f64 * 8.0 / (window_ns as f64 / 1e9);
    let (tcp, udp) = if flow.is_udp() {
        (None, Some(&sh.udp))
    } else {
        (Some(info), None)
    };
    // Only datagrams that carry the whole stamp give delays and gaps.
    let stamped = udp.filter(|_| {
        flow.udp
            .as_ref()
            .is_some_and(|u| u.min_bytes as usize >= plan::STAMP_BYTES)
    });
    FlowRow {
        flow_id: flow.flow_id,
        group: flow.group.clone(),
        kind: flow.kind.clone(),
        src: flow.src.clone(),
        dst: flow.dst.clone(),
        cc: flow.cc.clone(),
        start_ns: flow.start_ns,
        size_bytes: flow.size_bytes,
        completed,
        fct_ns: completed.then(|| done.saturating_sub(connect)),
        bytes_acked: tcp.map(|i| payload_acked(&i, flow.size_bytes)),
        bytes_delivered: end.delivered,
        goodput_bps: rate(end.delivered.saturating_sub(start.delivered)),
        throughput_bps: rate(end.bytes_sent.saturating_sub(start.bytes_sent)),
        segments_sent: match udp {
            Some(u) => u.sent_pkts.load(Ordering::SeqCst),
            None => u64::from(info.data_segs_out),
        },
        retransmitted_segments: tcp.map(|i| u64::from(i.total_retrans)),
        timeouts: tcp.map(|i| u64::from(i.total_rto)),
        cwnd_bytes: tcp.map(|i| i.cwnd_bytes()),
        srtt_ns: tcp.map(|i| i.srtt_ns()),
        packets_received: udp.map(|u| u.received_pkts.load(Ordering::SeqCst)),
        owd_mean_ns: stamped.map(UdpCounters::owd_mean_ns),
        owd_max_ns: stamped.map(|u| u.owd_max_ns.load(Ordering::SeqCst)),
        handshake_ns: (handshake != NOT_YET).then_some(handshake),
        min_rtt_ns: tcp.map(|i| u64::from(i.min_rtt_us) * 1000),
        linux_cc: flow.linux_cc.clone(),
        local_drops: udp.map(|u| u.local_drops.load(Ordering::SeqCst)),
        lost_pkts: stamped.map(UdpCounters::lost_pkts),
        sink_drops: udp.map(|u| u.sink_drops.load(Ordering::SeqCst)),
        ecn: None,
        ecn_seen: None,
        delivered_ce: None,
    }
}

/// `Ipv4Addr` of the emulator's server end (crate::emulate::netns).
pub fn default_server_addr() -> Ipv4Addr {
    crate::emulate::netns::SERVER_ADDR
        .parse()
        .expect("a literal address")
}
