//! What the proxy does with MPTCP beyond relaying: per-subflow statistics
//! of every client connection, and per-subflow throttling ("force
//! steering") driven by the kernel's path-manager events.
//!
//! - Statistics ride on the proxy's own loop ([`ConnectionObserver`]): every
//!   `stats_interval_ms` each live MPTCP client connection is sampled with
//!   MPTCP_SUBFLOW_ADDRS + MPTCP_TCPINFO (one line per subflow: bytes each
//!   way, retransmissions, srtt, cwnd), and once more just before it closes.
//! - Steering runs on a thread of its own, because it blocks: it reads the
//!   `mptcp_pm` netlink events, feeds them to [`Steering`] (sans-IO: which
//!   subflow to throttle, when, and when to lift it) and carries the actions
//!   out with [`ThrottleSet`] (an HTB class and a u32 filter per subflow
//!   4-tuple, installed with `tc`). Every rule goes when its subflow or
//!   connection closes, and all of them when the proxy stops.
//!
//! Both write JSON lines into one log (`--mptcp-log FILE`): `"kind":
//! "subflow"` samples, and `"kind": "throttle" | "release" | "pm"` steering
//! records, each throttle with the time from the subflow's SUB_ESTABLISHED
//! event to its rule being active.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::fd::RawFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde::Serialize;
use serde_json::json;

use super::events::ConnectionRecord;
use super::observer::{AcceptedConnection, ConnectionObserver};
use crate::clock::now_ns;
use crate::mptcp::pm_events::{PmEvent, PmEventSocket};
use crate::mptcp::policy::Policy;
use crate::mptcp::sockopt::{self, SubflowStats};
use crate::mptcp::steer::{Action, Steering};
use crate::mptcp::throttle::ThrottleSet;
use crate::mptcp::FourTuple;

/// The proxy's MPTCP settings (flags `--throttle`, `--throttle-delay-ms`,
/// `--mptcp-log`, `--stats-interval-ms`).
#[derive(Clone, Debug, Default)]
pub struct MptcpOptions {
    /// Throttle rules, `client=CIDR,interface=DEV,port=N,rate=RATE`.
    pub throttle: Vec<String>,
    /// How long after a connection's second subflow the rules apply, ms.
    pub throttle_delay_ms: u64,
    pub log: Option<std::path::PathBuf>,
    pub stats_interval_ms: u64,
}

impl MptcpOptions {
    pub fn is_active(&self) -> bool {
        !self.throttle.is_empty() || self.log.is_some()
    }
}

/// The shared JSON-lines log.
#[derive(Clone)]
struct Log(Arc<Mutex<Option<BufWriter<File>>>>);

impl Log {
    fn open(path: Option<&Path>) -> Result<Log, String> {
        let w = match path {
            Some(p) => Some(BufWriter::new(
                File::create(p).map_err(|e| format!("--mptcp-log {}: {e}", p.display()))?,
            )),
            None => None,
        };
        Ok(Log(Arc::new(Mutex::new(w))))
    }

    fn line(&self, v: &impl Serialize) {
        if let Ok(mut g) = self.0.lock() {
            if let Some(w) = g.as_mut() {
                // A full disk must not stop the relay: the line is lost, the proxy goes on.
                if serde_json::to_writer(&mut *w, v).is_ok() {
                    let _ = w.write_all(b"\n");
                }
            }
        }
    }

    fn flush(&self) {
        if let Ok(mut g) = self.0.lock() {
            if let Some(w) = g.as_mut() {
                let _ = w.flush();
            }
        }
    }
}

#[derive(Serialize)]
struct SubflowLine<'a> {
    kind: &'static str,
    t_ns: u64,
    conn: u64,
    token: Option<u32>,
    local: String,
    remote: String,
    bytes_sent: u64,
    bytes_acked: u64,
    bytes_received: u64,
    bytes_retrans: u64,
    total_retrans: u32,
    srtt_us: u32,
    cwnd_segments: u32,
    mss_bytes: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    last: Option<&'a str>,
}

struct Live {
    fd: RawFd,
    token: Option<u32>,
}

/// The [`ConnectionObserver`] the proxy runs with MPTCP options.
pub struct MptcpObserver {
    log: Log,
    interval_ns: u64,
    next_ns: u64,
    conns: BTreeMap<u64, Live>,
    steering: Option<SteeringThread>,
}

impl MptcpObserver {
    /// Starts the steering thread when there are throttle rules; errors on a
    /// bad rule, an unwritable log, or a kernel without the `mptcp_pm`
    /// netlink family.
    pub fn start(opts: &MptcpOptions) -> Result<MptcpObserver, String> {
        let log = Log::open(opts.log.as_deref())?;
        let steering = if opts.throttle.is_empty() {
            None
        } else {
            let policy = Policy::from_flags(&opts.throttle, opts.throttle_delay_ms)?;
            Some(SteeringThread::start(policy, log.clone())?)
        };
        Ok(MptcpObserver {
            log,
            interval_ns: opts.stats_interval_ms.max(10) * 1_000_000,
            next_ns: 0,
            conns: BTreeMap::new(),
            steering,
        })
    }

    fn sample(&self, now: u64, id: u64, live: &Live, last: Option<&str>) {
        let Ok(stats) = sockopt::subflow_stats(live.fd) else {
            return; // fell back to TCP, or already gone: nothing per subflow
        };
        for s in stats {
            self.log.line(&subflow_line(now, id, live.token, &s, last));
        }
    }

    /// Stop the steering thread (its rules are removed) and flush the log.
    pub fn stop(&mut self) -> Result<(), String> {
        let r = match self.steering.take() {
            Some(t) => t.stop(),
            None => Ok(()),
        };
        self.log.flush();
        r
    }
}

fn subflow_line<'a>(
    now: u64,
    id: u64,
    token: Option<u32>,
    s: &SubflowStats,
    last: Option<&'a str>,
) -> SubflowLine<'a> {
    SubflowLine {
        kind: "subflow",
        t_ns: now,
        conn: id,
        token,
        local: s.tuple.local.to_string(),
        remote: s.tuple.remote.to_string(),
        bytes_sent: s.bytes_sent,
        bytes_acked: s.bytes_acked,
        bytes_received: s.bytes_received,
        bytes_retrans: s.bytes_retrans,
        total_retrans: s.total_retrans,
        srtt_us: s.srtt_us,
        cwnd_segments: s.cwnd_segments,
        mss_bytes: s.mss_bytes,
        last,
    }
}

impl ConnectionObserver for MptcpObserver {
    fn on_accept(&mut self, conn: &AcceptedConnection) {
        if conn.client_mptcp {
            let token = sockopt::token(conn.client_fd).ok();
            self.conns.insert(
                conn.id,
                Live {
                    fd: conn.client_fd,
                    token,
                },
            );
        }
    }

    fn on_tick(&mut self, now: u64) {
        if now < self.next_ns {
            return;
        }
        self.next_ns = now + self.interval_ns;
        for (&id, live) in &self.conns {
            self.sample(now, id, live, None);
        }
        self.log.flush();
    }

    fn on_close(&mut self, id: u64, _client_fd: RawFd, _record: &ConnectionRecord) {
        if let Some(live) = self.conns.remove(&id) {
            self.sample(now_ns(), id, &live, Some("close"));
        }
    }
}

impl Drop for MptcpObserver {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// The thread that reads path-manager events and installs/removes throttles.
struct SteeringThread {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Result<(), String>>,
}

/// How long the steering thread blocks in one read, so it sees the stop flag.
const PM_WAIT: Duration = Duration::from_millis(100);

impl SteeringThread {
    fn start(policy: Policy, log: Log) -> Result<SteeringThread, String> {
        // Opened here, on the caller's thread (and so in its namespace), so
        // a missing mptcp_pm family is an error at start, not later.
        let sock = PmEventSocket::open().map_err(|e| format!("MPTCP path-manager events: {e}"))?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("mptcp-steering".into())
            .spawn(move || steer_loop(sock, policy, log, &flag))
            .map_err(|e| format!("steering thread: {e}"))?;
        Ok(SteeringThread { stop, handle })
    }

    fn stop(self) -> Result<(), String> {
        self.stop.store(true, Ordering::SeqCst);
        self.handle
            .join()
            .unwrap_or_else(|_| Err("the steering thread panicked".into()))
    }
}

fn tuple_json(t: &FourTuple) -> serde_json::Value {
    json!({"local": t.local.to_string(), "remote": t.remote.to_string()})
}

fn steer_loop(mut sock: PmEventSocket, policy: Policy, log: Log, stop: &AtomicBool) -> Result<(), String> {
    let _ = sock.set_recv_buffer_bytes(1 << 20);
    let mut steering = Steering::new(policy);
    let mut set = ThrottleSet::new(None);
    // When each subflow's SUB_ESTABLISHED was read, for the install latency.
    let mut established_ns: HashMap<FourTuple, u64> = HashMap::new();
    let mut result = Ok(());
    while !stop.load(Ordering::SeqCst) {
        let now = now_ns();
        let wait = steering.next_deadline_ns().map_or(PM_WAIT, |d| {
            Duration::from_nanos(d.saturating_sub(now)).min(PM_WAIT)
        });
        let mut actions = Vec::new();
        match sock.recv_timeout(wait) {
            Ok(events) => {
                for ev in events {
                    let t = now_ns();
                    match &ev {
                        PmEvent::SubEstablished(s) => {
                            established_ns.insert(s.tuple, t);
                        }
                        PmEvent::SubClosed(s) => {
                            established_ns.remove(&s.tuple);
                        }
                        _ => {}
                    }
                    log.line(&json!({"kind": "pm", "t_ns": t, "event": format!("{ev:?}")}));
                    actions.extend(steering.on_event(t, &ev));
                }
            }
            Err(e) if e.is_would_block() => {}
            Err(e) => {
                // An overrun loses events but the socket stays usable; say so and go on.
                log.line(&json!({"kind": "pm_error", "t_ns": now_ns(), "error": e.to_string()}));
            }
        }
        actions.extend(steering.poll(now_ns(), |t| set.egress_device(t).ok()));
        for a in &actions {
            let t = now_ns();
            match (a, set.apply(a)) {
                (
                    Action::Throttle {
                        token,
                        tuple,
                        rate_bps,
                    },
                    Ok(latency),
                ) => {
                    let since = established_ns.get(tuple).map(|&e| now_ns().saturating_sub(e));
                    log.line(
                        &json!({"kind": "throttle", "t_ns": t, "token": token, "subflow": tuple_json(tuple),
                                     "rate_bps": rate_bps,
                                     "install_ms": latency.map(|d| d.as_secs_f64() * 1e3),
                                     "after_sub_established_ms": since.map(|n| n as f64 / 1e6)}),
                    );
                }
                (Action::Release { token, tuple }, Ok(_)) => {
                    log.line(
                        &json!({"kind": "release", "t_ns": t, "token": token, "subflow": tuple_json(tuple)}),
                    );
                }
                (_, Err(e)) => {
                    log.line(
                        &json!({"kind": "throttle_error", "t_ns": t, "action": format!("{a:?}"),
                                     "error": e.to_string()}),
                    );
                    if result.is_ok() {
                        result = Err(format!("throttle: {e}"));
                    }
                }
            }
        }
        log.flush();
    }
    // Dropping the set removes every rule and, with the last one, the root qdisc.
    drop(set);
    log.flush();
    // A failed rule is logged and reported at the end; it never stops the proxy.
    result.or_else(|e| {
        eprintln!("latlab-net proxy: {e}");
        Ok(())
    })
}
