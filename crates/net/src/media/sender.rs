//! `latlab-net media send`: a TFRC / DFlow sender over UDP.
//!
//! The source is media-like: it always has data and sends packets of one
//! size, s = `packet_bytes` (the whole UDP payload, header included: RFC
//! 5348 §4.1's segment size excludes only IP and transport headers). The
//! pacer is the sans-IO sender's: `poll_transmit(now)` hands out a packet
//! once its slot s/X after the previous one has come (RFC 5348 §4.6), and
//! `next_timeout()` says when to ask next (that slot, or the no-feedback
//! timer of §4.4). The loop wakes within microseconds of the slot (see
//! `clock`); a late wake sends at once and the next slot follows one
//! interval later, without a catch-up burst.
//!
//! `--max-rate-bps` gives the source a ceiling (a codec's top rate): the
//! pacer is then asked only when the source has a packet, and the flow is
//! application-limited below the ceiling (the receive limit 2·X_recv of
//! RFC 5348 §4.3 keeps X within twice it).

use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::path::PathBuf;

use latlab_proto::tfrc::{TfrcConfig, TfrcMode, TfrcSender};
use serde::Serialize;

use super::{
    bind, new_session_id, say, try_recv, RunError, SocketCounters, MAX_READS_PER_TURN, RECV_BUF_BYTES,
};
use crate::clock::{self, now_ns};
use crate::media::wire::{self, DataPacket, Packet, ReceiverReport};
use crate::run_files::{ns_to_ms, rate_bps, summary_path, write_summary, Distribution, Recorder, RowClock};

/// Everything `media send` was asked to do (validated).
#[derive(Clone, Debug)]
pub struct SendOptions {
    pub to: SocketAddr,
    pub bind: SocketAddr,
    /// `segment_bytes` is the datagram size.
    pub config: TfrcConfig,
    pub duration_ns: u64,
    /// The source's own maximum bit rate (a codec's ceiling), if any.
    pub max_rate_bps: Option<f64>,
    pub interval_ns: u64,
    pub record: Option<PathBuf>,
    pub summary: Option<PathBuf>,
    pub quiet: bool,
}

/// One interval of the sender's record.
#[derive(Clone, Debug, Serialize)]
pub struct SendRow {
    /// Seconds since the sender started.
    pub t_s: f64,
    /// X, the allowed rate, at the end of the interval.
    pub rate_bps: f64,
    /// What was actually sent during the interval.
    pub send_rate_bps: f64,
    /// R, the sender's RTT estimate.
    pub rtt_ms: f64,
    /// p from the latest feedback.
    pub loss_event_rate: f64,
    /// X_recv from the latest feedback.
    pub x_recv_bps: f64,
    pub packets_sent: u64,
    pub feedback_received: u64,
    pub no_feedback_timeouts: u64,
    /// The receiver's latest report (see `wire::ReceiverReport`).
    pub rx_packets_received: u64,
    pub rx_lost_packets: u64,
    pub rx_queueing_delay_ms: f64,
    pub rx_delay_events: u32,
    /// Datagrams the sender dropped (malformed, wrong direction, foreign).
    pub malformed: u64,
}

/// The sender's end-of-run summary.
#[derive(Clone, Debug, Serialize)]
pub struct SendSummary {
    pub role: &'static str,
    pub mode: &'static str,
    pub to: String,
    pub local: String,
    pub session_id: u32,
    pub packet_bytes: u32,
    pub cd_thresh_ms: Option<f64>,
    pub base_period_rtts: Option<f64>,
    pub current_period_ms: Option<f64>,
    pub duration_s: f64,
    pub max_rate_bps: Option<f64>,
    pub packets_sent: u64,
    pub bytes_sent: u64,
    /// Bytes sent over the run's duration.
    pub mean_send_rate_bps: f64,
    /// X sampled at each interval end.
    pub rate_bps: Option<Distribution>,
    pub final_rate_bps: f64,
    pub final_rtt_ms: f64,
    pub final_loss_event_rate: f64,
    pub feedback_received: u64,
    pub feedback_ignored: u64,
    pub no_feedback_timeouts: u64,
    /// The receiver's last report (it may miss the last RTT of packets).
    pub rx_packets_received: u64,
    pub rx_lost_packets: u64,
    pub rx_loss_fraction: f64,
    /// Receiver-reported queueing delay, one sample per feedback.
    pub rx_queueing_delay_ms: Option<Distribution>,
    /// How late packets left after their pacing slot, µs.
    pub pacing_lateness_us: Option<Distribution>,
    pub socket: SocketCounters,
}

fn mode_name(cfg: &TfrcConfig) -> &'static str {
    match cfg.mode {
        TfrcMode::DFlow(_) => "dflow",
        TfrcMode::Tfrc => "tfrc",
    }
}

/// Run the sender until the duration has passed or SIGINT/SIGTERM.
pub fn run(opts: &SendOptions) -> Result<SendSummary, RunError> {
    let sock = bind(opts.bind)?;
    let local = sock.local_addr().map_err(RunError::Socket)?;
    let mut recorder = Recorder::create(opts.record.as_deref()).map_err(RunError::Record)?;
    let summary_file = summary_path(opts.summary.as_deref(), opts.record.as_deref());
    clock::tighten_timer_slack();
    let session_id = new_session_id();
    say(
        opts.quiet,
        format_args!(
            "media send: {} session {session_id:08x} from {local} to {}, {} B packets, {:.1} s",
            mode_name(&opts.config),
            opts.to,
            opts.config.segment_bytes,
            opts.duration_ns as f64 / 1e9
        ),
    );
    let mut run = SendLoop::new(opts, sock, session_id, &mut recorder);
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

struct SendLoop<'a> {
    opts: &'a SendOptions,
    sock: UdpSocket,
    session_id: u32,
    recorder: &'a mut Recorder,
    tx: TfrcSender,
    start_ns: u64,
    end_ns: u64,
    send_buf: Vec<u8>,
    recv_buf: Vec<u8>,
    counters: SocketCounters,
    report: ReceiverReport,
    rx_qdelay_ms: Vec<f64>,
    lateness_us: Vec<f64>,
    rate_samples_bps: Vec<f64>,
    rows: RowClock,
    last_row: (u64, u64),
    stopped_ns: u64,
    /// With `max_rate_bps`: the source has nothing to send before this.
    source_ready_ns: u64,
    /// s·8/max_rate, ns (0: no ceiling).
    source_ipi_ns: u64,
}

/// Per-sample vectors stop growing here (memory bound for long runs).
const MAX_SAMPLES: usize = 10_000_000;

impl<'a> SendLoop<'a> {
    fn new(opts: &'a SendOptions, sock: UdpSocket, session_id: u32, recorder: &'a mut Recorder) -> Self {
        let start_ns = now_ns();
        Self {
            opts,
            sock,
            session_id,
            recorder,
            tx: TfrcSender::new(opts.config, start_ns),
            start_ns,
            end_ns: start_ns.saturating_add(opts.duration_ns),
            send_buf: vec![0; opts.config.segment_bytes as usize],
            recv_buf: vec![0; RECV_BUF_BYTES],
            counters: SocketCounters::default(),
            report: ReceiverReport::default(),
            rx_qdelay_ms: Vec::new(),
            lateness_us: Vec::new(),
            rate_samples_bps: Vec::new(),
            rows: RowClock::new(start_ns, opts.interval_ns),
            last_row: (start_ns, 0),
            stopped_ns: start_ns,
            source_ready_ns: start_ns,
            source_ipi_ns: opts.max_rate_bps.map_or(0, |r| {
                (opts.config.segment_bytes as f64 * 8.0 * 1e9 / r).round() as u64
            }),
        }
    }

    fn run(&mut self) -> Result<(), RunError> {
        let fd = self.sock.as_raw_fd();
        loop {
            let now = now_ns();
            if now >= self.end_ns || clock::stop_requested() {
                self.stopped_ns = now.min(self.end_ns).max(self.start_ns);
                // The rows due by the end (the last one falls on it).
                while let Some(t) = self.rows.take_due(self.stopped_ns) {
                    self.write_row(t)?;
                }
                break;
            }
            // The slot this turn was planned for: lateness is measured
            // against it, not against a slot that feedback just moved into
            // the past (a rate increase), which is no timing error.
            let planned_ns = self
                .tx
                .next_timeout()
                .unwrap_or(u64::MAX)
                .max(self.source_ready_ns);
            self.read_feedback();
            let now = now_ns();
            self.tx.on_timeout(now);
            // Ask the pacer only when the source has a packet: with a rate
            // ceiling the flow becomes application-limited below it, and
            // X_recv (hence 2·X_recv, RFC 5348 §4.3) keeps X near it.
            let packet = if now >= self.source_ready_ns {
                self.tx.poll_transmit(now)
            } else {
                None
            };
            if let Some(d) = packet {
                self.source_ready_ns = now.saturating_add(self.source_ipi_ns);
                if self.lateness_us.len() < MAX_SAMPLES {
                    self.lateness_us.push(now.saturating_sub(planned_ns) as f64 / 1e3);
                }
                let pkt = DataPacket {
                    session_id: self.session_id,
                    data: d,
                    config: self.opts.config,
                };
                match wire::encode_data(&pkt, &mut self.send_buf) {
                    Ok(n) => {
                        // A full socket buffer or a local error is a lost
                        // packet as far as the protocol is concerned.
                        if self.sock.send_to(&self.send_buf[..n], self.opts.to).is_err() {
                            self.counters.send_errors += 1;
                        }
                    }
                    Err(_) => self.counters.send_errors += 1,
                }
            }
            while let Some(t) = self.rows.take_due(now) {
                self.write_row(t)?;
            }
            // next_timeout() is min(pacing slot, no-feedback timer); the
            // source's ceiling can only push the pacing slot later.
            let timer = self.tx.next_timeout().unwrap_or(u64::MAX);
            let wake = timer
                .max(self.source_ready_ns)
                .min(self.tx.no_feedback_deadline_ns());
            let deadline = wake.min(self.rows.next_ns()).min(self.end_ns);
            clock::wait_readable_until(fd, deadline);
        }
        Ok(())
    }

    /// Feed every waiting feedback packet to the sender.
    fn read_feedback(&mut self) {
        for _ in 0..MAX_READS_PER_TURN {
            let Some((n, _from)) = try_recv(&self.sock, &mut self.recv_buf, &mut self.counters.recv_errors)
            else {
                break;
            };
            let now = now_ns();
            self.counters.datagrams_received += 1;
            match wire::parse(&self.recv_buf[..n]) {
                Ok(Packet::Feedback(f)) if f.session_id == self.session_id => {
                    self.tx.on_feedback(now, &f.feedback);
                    self.report = f.report;
                    if self.rx_qdelay_ms.len() < MAX_SAMPLES {
                        self.rx_qdelay_ms
                            .push(ns_to_ms(f.report.queueing_delay_ns as f64));
                    }
                }
                Ok(Packet::Feedback(_)) => self.counters.dropped.foreign_session += 1,
                Ok(Packet::Data(_)) => self.counters.dropped.wrong_direction += 1,
                Err(e) => self.counters.dropped.count(e.kind()),
            }
        }
    }

    fn write_row(&mut self, t_ns: u64) -> Result<(), RunError> {
        let st = self.tx.stats();
        let (last_t, last_bytes) = self.last_row;
        let row = SendRow {
            t_s: (t_ns - self.start_ns) as f64 / 1e9,
            rate_bps: self.tx.rate_bps(),
            send_rate_bps: rate_bps(st.bytes_sent - last_bytes, t_ns.saturating_sub(last_t)),
            rtt_ms: ns_to_ms(self.tx.rtt_ns() as f64),
            loss_event_rate: self.tx.loss_event_rate(),
            x_recv_bps: self.tx.x_recv_bps(),
            packets_sent: st.packets_sent,
            feedback_received: st.feedback_received,
            no_feedback_timeouts: st.no_feedback_timeouts,
            rx_packets_received: self.report.packets_received,
            rx_lost_packets: self.report.packets_lost,
            rx_queueing_delay_ms: ns_to_ms(self.report.queueing_delay_ns as f64),
            rx_delay_events: self.report.delay_events,
            malformed: self.counters.dropped.dropped(),
        };
        self.last_row = (t_ns, st.bytes_sent);
        self.rate_samples_bps.push(row.rate_bps);
        say(
            self.opts.quiet,
            format_args!(
                "t={:7.2}s X={:6.3} Mb/s sent={:6.3} Mb/s R={:6.1} ms p={:.5} qdelay(rx)={:6.1} ms lost(rx)={} malformed={}",
                row.t_s,
                row.rate_bps / 1e6,
                row.send_rate_bps / 1e6,
                row.rtt_ms,
                row.loss_event_rate,
                row.rx_queueing_delay_ms,
                row.rx_lost_packets,
                row.malformed
            ),
        );
        self.recorder.row(&row).map_err(RunError::Record)
    }

    fn summary(&self, local: SocketAddr) -> SendSummary {
        let st = self.tx.stats();
        let dflow = self.opts.config.dflow_params();
        let duration_ns = self.stopped_ns - self.start_ns;
        let rx_total = self.report.packets_received + self.report.packets_lost;
        SendSummary {
            role: "send",
            mode: mode_name(&self.opts.config),
            to: self.opts.to.to_string(),
            local: local.to_string(),
            session_id: self.session_id,
            packet_bytes: self.opts.config.segment_bytes,
            cd_thresh_ms: dflow.map(|d| ns_to_ms(d.cd_thresh_ns as f64)),
            base_period_rtts: dflow.map(|d| d.base_period_rtts),
            current_period_ms: dflow.map(|d| ns_to_ms(d.current_period_ns as f64)),
            duration_s: duration_ns as f64 / 1e9,
            max_rate_bps: self.opts.max_rate_bps,
            packets_sent: st.packets_sent,
            bytes_sent: st.bytes_sent,
            mean_send_rate_bps: rate_bps(st.bytes_sent, duration_ns),
            rate_bps: Distribution::of(&self.rate_samples_bps),
            final_rate_bps: self.tx.rate_bps(),
            final_rtt_ms: ns_to_ms(self.tx.rtt_ns() as f64),
            final_loss_event_rate: self.tx.loss_event_rate(),
            feedback_received: st.feedback_received,
            feedback_ignored: st.feedback_ignored,
            no_feedback_timeouts: st.no_feedback_timeouts,
            rx_packets_received: self.report.packets_received,
            rx_lost_packets: self.report.packets_lost,
            rx_loss_fraction: if rx_total == 0 {
                0.0
            } else {
                self.report.packets_lost as f64 / rx_total as f64
            },
            rx_queueing_delay_ms: Distribution::of(&self.rx_qdelay_ms),
            pacing_lateness_us: Distribution::of(&self.lateness_us),
            socket: self.counters,
        }
    }
}
