//! `latlab-net media recv`: a TFRC / DFlow receiver over UDP.
//!
//! The receiver needs no protocol options: the first well-formed data
//! packet opens the session and carries the sender's configuration (mode,
//! s, NDUPACK, DFlow's detector), from which the sans-IO receiver is built.
//! Data of any other session is counted (`foreign_session`) and dropped;
//! one receiver process serves one sender run. Feedback goes to the address
//! the session's latest data came from.
//!
//! Measurements (all at the receiver, which is where one-way delay and loss
//! are seen):
//! - OWD = arrival time on this host's clock − the packet's send timestamp
//!   on the sender's clock. With unsynchronised clocks this carries their
//!   offset; the queueing delay OWD − min OWD does not (the offset cancels,
//!   as in DFlow's own detector). Rows use the minimum seen so far, the
//!   summary the minimum of the whole run.
//! - Loss: packets declared lost by RFC 5348 §5.1 (NDUPACK later packets
//!   arrived); a loss at the very end of the run, with nothing after it,
//!   is not seen.
//! - Rate: bytes received per interval.

use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::path::PathBuf;

use latlab_proto::tfrc::{TfrcConfig, TfrcMode, TfrcReceiver};
use serde::Serialize;

use super::{bind, say, try_recv, RunError, SocketCounters, MAX_READS_PER_TURN, RECV_BUF_BYTES};
use crate::clock::{self, now_ns};
use crate::media::wire::{self, DataPacket, FeedbackPacket, Packet, ReceiverReport, FEEDBACK_LEN};
use crate::run_files::{ns_to_ms, rate_bps, summary_path, write_summary, Distribution, Recorder, RowClock};

/// Everything `media recv` was asked to do (validated).
#[derive(Clone, Debug)]
pub struct RecvOptions {
    pub listen: SocketAddr,
    /// Stop this long after start (None: run until a signal or idle).
    pub duration_ns: Option<u64>,
    /// Stop once a session has started and no data came for this long.
    pub idle_timeout_ns: Option<u64>,
    /// The summary's `measured` block leaves out this much time after the
    /// first data packet (slow start).
    pub warmup_ns: u64,
    pub interval_ns: u64,
    pub record: Option<PathBuf>,
    pub summary: Option<PathBuf>,
    pub quiet: bool,
}

/// One interval of the receiver's record.
#[derive(Clone, Debug, Serialize)]
pub struct RecvRow {
    /// Seconds since the receiver started.
    pub t_s: f64,
    /// Data packets that arrived in the interval.
    pub packets_received: u64,
    /// Data bytes received in the interval, as bits/s.
    pub rate_bps: f64,
    /// Mean raw OWD in the interval (includes any clock offset).
    pub owd_ms: Option<f64>,
    /// Mean and max of OWD − min OWD so far in the interval.
    pub queueing_delay_ms: Option<f64>,
    pub queueing_delay_max_ms: Option<f64>,
    /// Packets declared lost in the interval (RFC 5348 §5.1), and in all.
    pub lost_packets: u64,
    pub lost_packets_total: u64,
    /// p, as the receiver last computed it.
    pub loss_event_rate: f64,
    pub loss_events: u64,
    pub delay_events: u64,
    pub feedback_sent: u64,
    /// Datagrams dropped so far (malformed, wrong direction, foreign).
    pub malformed: u64,
}

/// The receiver's end-of-run summary.
#[derive(Clone, Debug, Serialize)]
pub struct RecvSummary {
    pub role: &'static str,
    pub listen: String,
    /// None if no session started.
    pub session_id: Option<u32>,
    pub mode: Option<&'static str>,
    pub peer: Option<String>,
    /// From the first to the last data packet's arrival.
    pub active_s: f64,
    pub packets_received: u64,
    pub bytes_received: u64,
    /// Lost per RFC 5348 §5.1.
    pub lost_packets: u64,
    /// Sequence numbers from the first to the highest seen.
    pub packets_expected: u64,
    /// lost / (received + lost).
    pub loss_fraction: f64,
    pub duplicates: u64,
    pub late_packets: u64,
    pub loss_events: u64,
    pub delay_events: u64,
    pub final_loss_event_rate: f64,
    pub feedback_sent: u64,
    /// Bytes received over the active time.
    pub mean_rate_bps: f64,
    /// Raw OWD (clock offset included): only meaningful between hosts
    /// with one clock.
    pub owd_min_ms: Option<f64>,
    pub owd_ms: Option<Distribution>,
    /// OWD − min OWD over the run, per packet.
    pub queueing_delay_ms: Option<Distribution>,
    /// The same figures after the warm-up.
    pub measured: Measured,
    pub socket: SocketCounters,
}

/// Figures over the packets that arrived after the warm-up (`--warmup-s`
/// after the first data packet), to leave slow start out.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Measured {
    pub warmup_s: f64,
    /// From the first packet after the warm-up to the last.
    pub active_s: f64,
    pub packets_received: u64,
    pub lost_packets: u64,
    /// lost / (received + lost).
    pub loss_fraction: f64,
    pub mean_rate_bps: f64,
    /// OWD − min OWD of the whole run, per packet.
    pub queueing_delay_ms: Option<Distribution>,
}

/// Per-packet OWD samples kept for the summary at most.
const MAX_SAMPLES: usize = 10_000_000;

struct Session {
    id: u32,
    mode: &'static str,
    rx: TfrcReceiver,
    peer: SocketAddr,
    first_seq: u64,
    first_arrival_ns: u64,
    last_arrival_ns: u64,
}

/// Run the receiver until its duration, idle timeout or SIGINT/SIGTERM.
pub fn run(opts: &RecvOptions) -> Result<RecvSummary, RunError> {
    let sock = bind(opts.listen)?;
    let local = sock.local_addr().map_err(RunError::Socket)?;
    let mut recorder = Recorder::create(opts.record.as_deref()).map_err(RunError::Record)?;
    let summary_file = summary_path(opts.summary.as_deref(), opts.record.as_deref());
    clock::tighten_timer_slack();
    say(opts.quiet, format_args!("media recv: listening on {local}"));
    let mut run = RecvLoop::new(opts, sock, &mut recorder);
    run.run()?;
    let summary = run.summary(local);
    say(
        opts.quiet,
        format_args!("summary: {}", serde_json::to_string(&summary).unwrap_or_default()),
    );
    if let Some(path) = summary_file {
        write_summary(&path, &summary).map_err(RunError::Record)?;
    }
    Ok(summary)
}

/// What the receiver accumulates over one row interval.
#[derive(Default)]
struct Interval {
    packets: u64,
    bytes: u64,
    owd_sum_ns: f64,
    qdelay_sum_ns: f64,
    qdelay_max_ns: u64,
    lost_at_start: u64,
}

struct RecvLoop<'a> {
    opts: &'a RecvOptions,
    sock: UdpSocket,
    recorder: &'a mut Recorder,
    session: Option<Session>,
    start_ns: u64,
    recv_buf: Vec<u8>,
    fb_buf: [u8; FEEDBACK_LEN],
    counters: SocketCounters,
    owd_min_ns: Option<i64>,
    /// (arrival, OWD) of every packet received, ns.
    owd_samples_ns: Vec<(u64, i64)>,
    /// Once the warm-up is over: (first arrival after it, packets lost
    /// before it).
    measure_start: Option<(u64, u64)>,
    measured_packets: u64,
    measured_bytes: u64,
    interval: Interval,
    rows: RowClock,
}

impl<'a> RecvLoop<'a> {
    fn new(opts: &'a RecvOptions, sock: UdpSocket, recorder: &'a mut Recorder) -> Self {
        let start_ns = now_ns();
        Self {
            opts,
            sock,
            recorder,
            session: None,
            start_ns,
            recv_buf: vec![0; RECV_BUF_BYTES],
            fb_buf: [0; FEEDBACK_LEN],
            counters: SocketCounters::default(),
            owd_min_ns: None,
            owd_samples_ns: Vec::new(),
            measure_start: None,
            measured_packets: 0,
            measured_bytes: 0,
            interval: Interval::default(),
            rows: RowClock::new(start_ns, opts.interval_ns),
        }
    }

    fn end_ns(&self) -> u64 {
        let by_duration = self
            .opts
            .duration_ns
            .map_or(u64::MAX, |d| self.start_ns.saturating_add(d));
        let by_idle = match (&self.session, self.opts.idle_timeout_ns) {
            (Some(s), Some(idle)) => s.last_arrival_ns.saturating_add(idle),
            _ => u64::MAX,
        };
        by_duration.min(by_idle)
    }

    fn run(&mut self) -> Result<(), RunError> {
        let fd = self.sock.as_raw_fd();
        loop {
            let now = now_ns();
            let end_ns = self.end_ns();
            if now >= end_ns || clock::stop_requested() {
                // The rows due by the end (the last one falls on it).
                while let Some(t) = self.rows.take_due(now.min(end_ns)) {
                    self.write_row(t)?;
                }
                break;
            }
            self.read_datagrams();
            let now = now_ns();
            if let Some(s) = self.session.as_mut() {
                s.rx.on_timeout(now);
            }
            self.send_feedback(now);
            while let Some(t) = self.rows.take_due(now) {
                self.write_row(t)?;
            }
            let timer = self
                .session
                .as_ref()
                .and_then(|s| s.rx.next_timeout())
                .unwrap_or(u64::MAX);
            let deadline = timer.min(self.rows.next_ns()).min(self.end_ns());
            clock::wait_readable_until(fd, deadline);
        }
        Ok(())
    }

    fn read_datagrams(&mut self) {
        for _ in 0..MAX_READS_PER_TURN {
            let Some((n, from)) = try_recv(&self.sock, &mut self.recv_buf, &mut self.counters.recv_errors)
            else {
                break;
            };
            // Arrival time as close to the read as possible: it is half of
            // the one-way delay.
            let now = now_ns();
            self.counters.datagrams_received += 1;
            match wire::parse(&self.recv_buf[..n]) {
                Ok(Packet::Data(d)) => {
                    if self.on_data(now, from, &d) {
                        // RFC 5348 §6.1: a report may be due at once (first
                        // packet, p increased, new congestion event).
                        self.send_feedback(now);
                    }
                }
                Ok(Packet::Feedback(_)) => self.counters.dropped.wrong_direction += 1,
                Err(e) => self.counters.dropped.count(e.kind()),
            }
        }
    }

    /// Feed a data packet; false if it belongs to another session.
    fn on_data(&mut self, now: u64, from: SocketAddr, d: &DataPacket) -> bool {
        let s = self.session.get_or_insert_with(|| {
            let mode = match d.config.mode {
                TfrcMode::DFlow(_) => "dflow",
                TfrcMode::Tfrc => "tfrc",
            };
            say(
                self.opts.quiet,
                format_args!(
                    "session {:08x} from {from}: {mode}, {} B packets",
                    d.session_id, d.config.segment_bytes
                ),
            );
            Session {
                id: d.session_id,
                mode,
                rx: TfrcReceiver::new(receiver_config(&d.config)),
                peer: from,
                first_seq: d.data.seq,
                first_arrival_ns: now,
                last_arrival_ns: now,
            }
        });
        if s.id != d.session_id {
            self.counters.dropped.foreign_session += 1;
            return false;
        }
        s.peer = from;
        s.last_arrival_ns = now;
        s.first_seq = s.first_seq.min(d.data.seq);
        let before = s.rx.stats();
        if self.measure_start.is_none() && now >= s.first_arrival_ns.saturating_add(self.opts.warmup_ns) {
            self.measure_start = Some((now, before.packets_lost));
        }
        s.rx.on_data(now, &d.data);
        if s.rx.stats().packets_received == before.packets_received {
            // A duplicate, or a sequence number the machine refuses.
            return true;
        }
        if self.measure_start.is_some() {
            self.measured_packets += 1;
            self.measured_bytes += d.data.payload_bytes as u64;
        }
        let owd_ns =
            (now as i128 - d.data.send_ts_ns as i128).clamp(i64::MIN as i128, i64::MAX as i128) as i64;
        let min = *self.owd_min_ns.get_or_insert(owd_ns);
        let min = min.min(owd_ns);
        self.owd_min_ns = Some(min);
        if self.owd_samples_ns.len() < MAX_SAMPLES {
            self.owd_samples_ns.push((now, owd_ns));
        }
        let qdelay_ns = (owd_ns as i128 - min as i128) as u64;
        let iv = &mut self.interval;
        iv.packets += 1;
        iv.bytes += d.data.payload_bytes as u64;
        iv.owd_sum_ns += owd_ns as f64;
        iv.qdelay_sum_ns += qdelay_ns as f64;
        iv.qdelay_max_ns = iv.qdelay_max_ns.max(qdelay_ns);
        true
    }

    /// Send every report the machine has due.
    fn send_feedback(&mut self, now: u64) {
        let Some(s) = self.session.as_mut() else {
            return;
        };
        while let Some(fb) = s.rx.poll_feedback(now) {
            let st = s.rx.stats();
            let latest_qdelay_ns = match (self.owd_samples_ns.last(), self.owd_min_ns) {
                (Some(&(_, owd)), Some(min)) => (owd as i128 - min as i128) as u64,
                _ => 0,
            };
            let pkt = FeedbackPacket {
                session_id: s.id,
                feedback: fb,
                report: ReceiverReport {
                    packets_received: st.packets_received,
                    packets_lost: st.packets_lost,
                    queueing_delay_ns: latest_qdelay_ns,
                    delay_events: st.delay_events.min(u32::MAX as u64) as u32,
                    malformed: self.counters.dropped.dropped().min(u32::MAX as u64) as u32,
                },
            };
            let sent = wire::encode_feedback(&pkt, &mut self.fb_buf)
                .ok()
                .and_then(|n| self.sock.send_to(&self.fb_buf[..n], s.peer).ok());
            if sent.is_none() {
                self.counters.send_errors += 1;
            }
        }
    }

    fn write_row(&mut self, t_ns: u64) -> Result<(), RunError> {
        let st = self.session.as_ref().map(|s| s.rx.stats()).unwrap_or_default();
        let iv = std::mem::take(&mut self.interval);
        let n = iv.packets as f64;
        let mean_ms = |sum_ns: f64| (iv.packets > 0).then(|| ns_to_ms(sum_ns / n));
        let row = RecvRow {
            t_s: (t_ns - self.start_ns) as f64 / 1e9,
            packets_received: iv.packets,
            rate_bps: rate_bps(iv.bytes, self.opts.interval_ns),
            owd_ms: mean_ms(iv.owd_sum_ns),
            queueing_delay_ms: mean_ms(iv.qdelay_sum_ns),
            queueing_delay_max_ms: (iv.packets > 0).then(|| ns_to_ms(iv.qdelay_max_ns as f64)),
            lost_packets: st.packets_lost - iv.lost_at_start,
            lost_packets_total: st.packets_lost,
            loss_event_rate: st.p,
            loss_events: st.loss_events,
            delay_events: st.delay_events,
            feedback_sent: st.feedback_sent,
            malformed: self.counters.dropped.dropped(),
        };
        self.interval.lost_at_start = st.packets_lost;
        say(
            self.opts.quiet,
            format_args!(
                "t={:7.2}s rate={:6.3} Mb/s owd={} qdelay={} ms (max {}) lost={} p={:.5} delay_events={} malformed={}",
                row.t_s,
                row.rate_bps / 1e6,
                fmt_ms(row.owd_ms),
                fmt_ms(row.queueing_delay_ms),
                fmt_ms(row.queueing_delay_max_ms),
                row.lost_packets_total,
                row.loss_event_rate,
                row.delay_events,
                row.malformed
            ),
        );
        self.recorder.row(&row).map_err(RunError::Record)
    }

    fn summary(&self, local: SocketAddr) -> RecvSummary {
        let st = self.session.as_ref().map(|s| s.rx.stats()).unwrap_or_default();
        let s = self.session.as_ref();
        let active_ns = s.map_or(0, |s| s.last_arrival_ns - s.first_arrival_ns);
        let expected = match (s, s.and_then(|s| s.rx.highest_seq())) {
            (Some(s), Some(h)) => h.saturating_sub(s.first_seq).saturating_add(1),
            _ => 0,
        };
        let seen = st.packets_received + st.packets_lost;
        let owd_ms: Vec<f64> = self
            .owd_samples_ns
            .iter()
            .map(|&(_, o)| ns_to_ms(o as f64))
            .collect();
        let min = self.owd_min_ns.unwrap_or(0);
        let qdelay_ms = |from_ns: u64| -> Vec<f64> {
            self.owd_samples_ns
                .iter()
                .filter(|&&(t, _)| t >= from_ns)
                .map(|&(_, o)| ns_to_ms((o as i128 - min as i128) as f64))
                .collect()
        };
        let measured = match (s, self.measure_start) {
            (Some(s), Some((from_ns, lost_before))) => {
                let lost = st.packets_lost - lost_before;
                let seen = self.measured_packets + lost;
                let active_ns = s.last_arrival_ns - from_ns;
                Measured {
                    warmup_s: self.opts.warmup_ns as f64 / 1e9,
                    active_s: active_ns as f64 / 1e9,
                    packets_received: self.measured_packets,
                    lost_packets: lost,
                    loss_fraction: if seen == 0 { 0.0 } else { lost as f64 / seen as f64 },
                    mean_rate_bps: rate_bps(self.measured_bytes, active_ns),
                    queueing_delay_ms: Distribution::of(&qdelay_ms(from_ns)),
                }
            }
            _ => Measured {
                warmup_s: self.opts.warmup_ns as f64 / 1e9,
                ..Measured::default()
            },
        };
        RecvSummary {
            role: "recv",
            listen: local.to_string(),
            session_id: s.map(|s| s.id),
            mode: s.map(|s| s.mode),
            peer: s.map(|s| s.peer.to_string()),
            active_s: active_ns as f64 / 1e9,
            packets_received: st.packets_received,
            bytes_received: st.bytes_received,
            lost_packets: st.packets_lost,
            packets_expected: expected,
            loss_fraction: if seen == 0 {
                0.0
            } else {
                st.packets_lost as f64 / seen as f64
            },
            duplicates: st.duplicates,
            late_packets: st.late_packets,
            loss_events: st.loss_events,
            delay_events: st.delay_events,
            final_loss_event_rate: st.p,
            feedback_sent: st.feedback_sent,
            mean_rate_bps: rate_bps(st.bytes_received, active_ns),
            owd_min_ms: self.owd_min_ns.map(|o| ns_to_ms(o as f64)),
            owd_ms: Distribution::of(&owd_ms),
            queueing_delay_ms: Distribution::of(&qdelay_ms(0)),
            measured,
            socket: self.counters,
        }
    }
}

/// The receiver's machine takes the sender's mode, s and NDUPACK; the rest
/// of the config is the sender's business.
fn receiver_config(sender: &TfrcConfig) -> TfrcConfig {
    TfrcConfig {
        mode: sender.mode,
        segment_bytes: sender.segment_bytes,
        ndupack: sender.ndupack,
        ..TfrcConfig::default()
    }
}

fn fmt_ms(v: Option<f64>) -> String {
    v.map_or_else(|| "    -".to_string(), |x| format!("{x:6.1}"))
}
