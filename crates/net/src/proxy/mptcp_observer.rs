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
//! - Releases do not depend on the events alone. Under churn the event
//!   socket can overrun (ENOBUFS: the kernel dropped events, SUB_CLOSED and
//!   CLOSED among them), and a lost release event used to leave its rule on
//!   the device for the proxy's lifetime (~1 % of 7,548 throttles in a
//!   10,000-connection run). So (1) the proxy's own close of a client
//!   connection sends its token to the steering thread, which lifts every
//!   rule of that token and ignores the token's late events; (2) after an
//!   overrun, and every [`RESYNC_INTERVAL`] while connections are tracked,
//!   the thread reconciles: subflows the kernel no longer has
//!   ([`live_tcp_tuples`]) are forgotten and their rules removed, and rules
//!   the bookkeeping no longer asks for are removed too. Overruns, resyncs
//!   and releases by cause are counted ([`SteeringStats`], in `--metrics`
//!   and in the log's final `"kind": "steering_stats"` line).
//!
//! Both write JSON lines into one log (`--mptcp-log FILE`): `"kind":
//! "subflow"` samples, and `"kind": "throttle" | "release" | "pm"` steering
//! records, each throttle with the time from the subflow's SUB_ESTABLISHED
//! event to its rule being active.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::fd::RawFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde::Serialize;
use serde_json::json;

use super::events::ConnectionRecord;
use super::observer::{AcceptedConnection, ConnectionObserver};
use crate::clock::now_ns;
use crate::mptcp::live::{canonical, live_tcp_tuples};
use crate::mptcp::pm_events::{PmError, PmEvent, PmEventSocket};
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
    /// Receive buffer of the event socket, bytes; 0: [`PM_EVENTS_BUFFER_BYTES`].
    pub pm_events_buffer_bytes: usize,
}

/// The event socket's default receive buffer: each event costs about 1 KiB
/// of it (skb overhead included), so about 4,000 events of backlog while the
/// steering thread waits for `tc` (6 events per two-subflow connection).
pub const PM_EVENTS_BUFFER_BYTES: u64 = 4 << 20;

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

/// What lifted a throttle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cause {
    /// The path manager's SUB_CLOSED / CLOSED event.
    PmEvent,
    /// The proxy closed the connection.
    Close,
    /// A resynchronisation found the subflow gone or the rule unwanted.
    Resync,
}

impl Cause {
    const ALL: [Cause; 3] = [Cause::PmEvent, Cause::Close, Cause::Resync];

    fn name(self) -> &'static str {
        match self {
            Cause::PmEvent => "pm_event",
            Cause::Close => "close",
            Cause::Resync => "resync",
        }
    }
}

/// Counters of the steering thread, read by the proxy's loop for `--metrics`.
#[derive(Debug, Default)]
pub struct SteeringStats {
    pub pm_events: AtomicU64,
    /// ENOBUFS on the event socket: events were lost.
    pub pm_overruns: AtomicU64,
    pub resyncs: AtomicU64,
    pub throttles_installed: AtomicU64,
    /// By [`Cause`]: pm_event, close, resync.
    released: [AtomicU64; 3],
    pub throttle_errors: AtomicU64,
    /// Rules on the devices now.
    pub throttles_active: AtomicU64,
}

impl SteeringStats {
    fn count_release(&self, cause: Cause) {
        let i = Cause::ALL.iter().position(|&c| c == cause).unwrap_or(0);
        self.released[i].fetch_add(1, Ordering::Relaxed);
    }

    pub fn released(&self) -> u64 {
        self.released.iter().map(|r| r.load(Ordering::Relaxed)).sum()
    }

    fn json(&self) -> serde_json::Value {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let by_cause: serde_json::Map<String, serde_json::Value> = Cause::ALL
            .iter()
            .zip(&self.released)
            .map(|(c, n)| (c.name().to_string(), get(n).into()))
            .collect();
        json!({"kind": "steering_stats", "t_ns": now_ns(), "pm_events": get(&self.pm_events),
               "pm_overruns": get(&self.pm_overruns), "resyncs": get(&self.resyncs),
               "throttles_installed": get(&self.throttles_installed), "released": self.released(),
               "released_by": by_cause, "throttle_errors": get(&self.throttle_errors),
               "throttles_active": get(&self.throttles_active)})
    }

    /// The counters in the Prometheus text format.
    pub fn render(&self, out: &mut String) {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        for (name, kind, help, value) in [
            (
                "latlab_proxy_mptcp_pm_events_total",
                "counter",
                "MPTCP path-manager events read.",
                get(&self.pm_events),
            ),
            (
                "latlab_proxy_mptcp_pm_overruns_total",
                "counter",
                "Overruns (ENOBUFS) of the path-manager event socket: events lost, then a resync.",
                get(&self.pm_overruns),
            ),
            (
                "latlab_proxy_mptcp_resyncs_total",
                "counter",
                "Reconciliations of the throttles against the kernel's live subflows.",
                get(&self.resyncs),
            ),
            (
                "latlab_proxy_throttles_installed_total",
                "counter",
                "Per-subflow throttle rules installed.",
                get(&self.throttles_installed),
            ),
            (
                "latlab_proxy_throttle_errors_total",
                "counter",
                "Throttle rules that could not be installed or removed.",
                get(&self.throttle_errors),
            ),
            (
                "latlab_proxy_throttles_active",
                "gauge",
                "Per-subflow throttle rules on the devices now.",
                get(&self.throttles_active),
            ),
        ] {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}");
        }
        let _ = writeln!(
            out,
            "# HELP latlab_proxy_throttles_released_total Per-subflow throttle rules removed, by what removed them.\n\
             # TYPE latlab_proxy_throttles_released_total counter"
        );
        for (c, n) in Cause::ALL.iter().zip(&self.released) {
            let _ = writeln!(
                out,
                "latlab_proxy_throttles_released_total{{cause=\"{}\"}} {}",
                c.name(),
                get(n)
            );
        }
    }
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
            let buffer = match opts.pm_events_buffer_bytes {
                0 => PM_EVENTS_BUFFER_BYTES as usize,
                n => n,
            };
            Some(SteeringThread::start(policy, log.clone(), buffer)?)
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

    /// The steering thread's counters (None without throttle rules).
    pub fn steering_stats(&self) -> Option<Arc<SteeringStats>> {
        self.steering.as_ref().map(|t| Arc::clone(&t.stats))
    }

    /// Stop the steering thread (its rules are removed) and flush the log.
    pub fn stop(&mut self) -> Result<(), String> {
        let r = match self.steering.take() {
            Some(t) => {
                let stats = Arc::clone(&t.stats);
                let r = t.stop();
                self.log.line(&stats.json());
                r
            }
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
            if let (Some(token), Some(steering)) = (live.token, &self.steering) {
                // The thread is gone only after stop(); then nothing is left to release.
                let _ = steering.closed.send(token);
            }
        }
    }

    fn render_metrics(&self, out: &mut String) {
        if let Some(t) = &self.steering {
            t.stats.render(out);
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
    /// Tokens of the connections the proxy closed.
    closed: Sender<u32>,
    stats: Arc<SteeringStats>,
    handle: JoinHandle<Result<(), String>>,
}

/// How long the steering thread blocks in one read, so it sees the stop
/// flag and the proxy's closes.
const PM_WAIT: Duration = Duration::from_millis(50);

/// Event datagrams read per turn of the steering loop before it acts (and
/// sees the stop flag again).
const MAX_DATAGRAMS_PER_TURN: usize = 1024;

/// Reconcile this often while connections are tracked, overrun or not: a
/// backstop for any other way a close goes unreported.
pub const RESYNC_INTERVAL: Duration = Duration::from_secs(5);

impl SteeringThread {
    fn start(policy: Policy, log: Log, buffer_bytes: usize) -> Result<SteeringThread, String> {
        // Opened here, on the caller's thread (and so in its namespace), so
        // a missing mptcp_pm family is an error at start, not later.
        let sock = PmEventSocket::open().map_err(|e| format!("MPTCP path-manager events: {e}"))?;
        sock.set_recv_buffer_bytes(buffer_bytes)
            .map_err(|e| format!("--pm-events-buffer-bytes {buffer_bytes}: {e}"))?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let stats = Arc::new(SteeringStats::default());
        let (closed, closed_rx) = mpsc::channel();
        let thread_stats = Arc::clone(&stats);
        let handle = std::thread::Builder::new()
            .name("mptcp-steering".into())
            .spawn(move || steer_loop(sock, policy, log, &flag, &closed_rx, &thread_stats))
            .map_err(|e| format!("steering thread: {e}"))?;
        Ok(SteeringThread {
            stop,
            closed,
            stats,
            handle,
        })
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

/// Lift what the kernel no longer has: subflows whose close events were
/// lost, and rules the bookkeeping no longer asks for.
fn resync(steering: &mut Steering, set: &ThrottleSet) -> Result<Vec<Action>, String> {
    let live = live_tcp_tuples().map_err(|e| format!("live subflows: {e}"))?;
    let mut actions = steering.reconcile(|t| live.contains(&canonical(t)));
    let wanted = steering.throttled();
    actions.extend(
        set.active()
            .map(|h| *h.tuple())
            .filter(|t| !wanted.contains(t))
            .map(|tuple| Action::Release { token: 0, tuple }),
    );
    Ok(actions)
}

fn steer_loop(
    mut sock: PmEventSocket,
    policy: Policy,
    log: Log,
    stop: &AtomicBool,
    closed: &Receiver<u32>,
    stats: &SteeringStats,
) -> Result<(), String> {
    let mut steering = Steering::new(policy);
    let mut set = ThrottleSet::new(None);
    // When each subflow's SUB_ESTABLISHED was read, for the install latency.
    let mut established_ns: HashMap<FourTuple, u64> = HashMap::new();
    let mut result = Ok(());
    let mut resync_due = false;
    let mut next_resync_ns = now_ns() + RESYNC_INTERVAL.as_nanos() as u64;
    while !stop.load(Ordering::SeqCst) {
        let now = now_ns();
        let wait = steering.next_deadline_ns().map_or(PM_WAIT, |d| {
            Duration::from_nanos(d.saturating_sub(now)).min(PM_WAIT)
        });
        let mut actions: Vec<(Action, Cause)> = Vec::new();
        // Everything queued, up to a bound, before acting: events read one
        // datagram per turn fall behind the proxy's closes under churn
        // (and a lagging reader is what overruns the socket).
        let mut first = true;
        for _ in 0..MAX_DATAGRAMS_PER_TURN {
            let read = if first {
                sock.recv_timeout(wait)
            } else {
                sock.recv()
            };
            first = false;
            match read {
                Ok(events) if events.is_empty() => break,
                Ok(events) => {
                    for ev in events {
                        let t = now_ns();
                        stats.pm_events.fetch_add(1, Ordering::Relaxed);
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
                        actions.extend(steering.on_event(t, &ev).into_iter().map(|a| (a, Cause::PmEvent)));
                    }
                }
                Err(e) if e.is_would_block() => break,
                Err(PmError::Overrun) => {
                    // Events were dropped, closes among them: resynchronise below.
                    stats.pm_overruns.fetch_add(1, Ordering::Relaxed);
                    log.line(&json!({"kind": "pm_overrun", "t_ns": now_ns(), "error": PmError::Overrun.to_string()}));
                    resync_due = true;
                }
                Err(e) => {
                    // One bad message loses that message; the socket stays usable.
                    log.line(&json!({"kind": "pm_error", "t_ns": now_ns(), "error": e.to_string()}));
                }
            }
        }
        // The proxy's own closes, after this turn's events: a connection
        // closed here is never throttled below.
        let t = now_ns();
        for token in closed.try_iter() {
            actions.extend(
                steering
                    .on_local_close(t, token)
                    .into_iter()
                    .map(|a| (a, Cause::Close)),
            );
        }
        let tracked = steering.connections() > 0 || set.active().next().is_some();
        if resync_due || (tracked && t >= next_resync_ns) {
            resync_due = false;
            next_resync_ns = t + RESYNC_INTERVAL.as_nanos() as u64;
            stats.resyncs.fetch_add(1, Ordering::Relaxed);
            match resync(&mut steering, &set) {
                Ok(found) => {
                    if !found.is_empty() {
                        log.line(&json!({"kind": "resync", "t_ns": t, "releases": found.len()}));
                    }
                    let known: HashSet<FourTuple> = steering.all_subflows().collect();
                    established_ns.retain(|tuple, _| known.contains(tuple));
                    actions.extend(found.into_iter().map(|a| (a, Cause::Resync)));
                }
                Err(e) => log.line(&json!({"kind": "resync_error", "t_ns": t, "error": e})),
            }
        }
        actions.extend(
            steering
                .poll(now_ns(), |t| set.egress_device(t).ok())
                .into_iter()
                .map(|a| (a, Cause::PmEvent)),
        );
        for (a, cause) in &actions {
            let t = now_ns();
            // A release of a subflow whose throttle failed to go in is no release.
            let had_rule = match a {
                Action::Release { tuple, .. } => set.is_throttled(tuple),
                Action::Throttle { .. } => true,
            };
            match (a, set.apply(a)) {
                (
                    Action::Throttle {
                        token,
                        tuple,
                        rate_bps,
                    },
                    Ok(latency),
                ) => {
                    stats.throttles_installed.fetch_add(1, Ordering::Relaxed);
                    let since = established_ns.get(tuple).map(|&e| now_ns().saturating_sub(e));
                    log.line(
                        &json!({"kind": "throttle", "t_ns": t, "token": token, "subflow": tuple_json(tuple),
                                     "rate_bps": rate_bps,
                                     "install_ms": latency.map(|d| d.as_secs_f64() * 1e3),
                                     "after_sub_established_ms": since.map(|n| n as f64 / 1e6)}),
                    );
                }
                (Action::Release { token, tuple }, Ok(_)) => {
                    if had_rule {
                        stats.count_release(*cause);
                        log.line(
                            &json!({"kind": "release", "t_ns": t, "token": token, "subflow": tuple_json(tuple),
                                         "cause": cause.name()}),
                        );
                    }
                }
                (_, Err(e)) => {
                    stats.throttle_errors.fetch_add(1, Ordering::Relaxed);
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
        stats
            .throttles_active
            .store(set.active().count() as u64, Ordering::Relaxed);
        log.flush();
    }
    // Dropping the set removes every rule and, with the last one, the root qdisc.
    drop(set);
    stats.throttles_active.store(0, Ordering::Relaxed);
    log.flush();
    // A failed rule is logged and reported at the end; it never stops the proxy.
    result.or_else(|e| {
        eprintln!("latlab-net proxy: {e}");
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steering_counters_render_as_prometheus_text_and_a_log_line() {
        let stats = SteeringStats::default();
        stats.pm_overruns.fetch_add(3, Ordering::Relaxed);
        stats.throttles_installed.fetch_add(5, Ordering::Relaxed);
        stats.count_release(Cause::Close);
        stats.count_release(Cause::Close);
        stats.count_release(Cause::Resync);
        let mut text = String::new();
        stats.render(&mut text);
        assert!(
            text.contains("\nlatlab_proxy_mptcp_pm_overruns_total 3\n"),
            "{text}"
        );
        assert!(
            text.contains("\nlatlab_proxy_throttles_installed_total 5\n"),
            "{text}"
        );
        assert!(text.contains("latlab_proxy_throttles_released_total{cause=\"close\"} 2\n"));
        assert!(text.contains("latlab_proxy_throttles_released_total{cause=\"resync\"} 1\n"));
        assert!(text.contains("latlab_proxy_throttles_released_total{cause=\"pm_event\"} 0\n"));
        let line = stats.json();
        assert_eq!(line["kind"], "steering_stats");
        assert_eq!(line["released"], 3);
        assert_eq!(line["released_by"]["close"], 2);
        assert_eq!(line["pm_overruns"], 3);
    }
}
