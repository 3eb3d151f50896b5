//! Results as Arrow record batches, serialised as Arrow IPC streams.
//!
//! Tables: `flows` (one row per flow), `flow_samples`, `links` (one row per
//! link), `link_samples`, and `run` (one row describing the run). Scenarios
//! with MPTCP flows add `subflows`, `subflow_samples`, `mptcp` and
//! `mptcp_samples`.

use crate::flow::{Flow, MptcpFlow, MptcpPath, ProxyEnd, TcpFlow, TfrcFlow, Transfer, Transport, UdpFlow};
use crate::measure::LatencyMetric;
use crate::network::{queue_view, MediumKind, QueueView, Service};
use crate::sim::Simulation;
use arrow_array::{ArrayRef, BooleanArray, Float64Array, RecordBatch, StringArray, UInt32Array, UInt64Array};
use arrow_ipc::writer::StreamWriter;
use latlab_proto::mptcp::{MptcpSenderStats, ProxyStats, RecvBufferStats};
use latlab_proto::tcp::SenderStats;
use std::sync::Arc;

fn u64s(v: impl IntoIterator<Item = u64>) -> ArrayRef {
    Arc::new(UInt64Array::from_iter_values(v))
}
fn opt_u64s(v: impl IntoIterator<Item = Option<u64>>) -> ArrayRef {
    Arc::new(UInt64Array::from_iter(v))
}
fn u32s(v: impl IntoIterator<Item = u32>) -> ArrayRef {
    Arc::new(UInt32Array::from_iter_values(v))
}
fn f64s(v: impl IntoIterator<Item = f64>) -> ArrayRef {
    Arc::new(Float64Array::from_iter_values(v))
}
fn opt_f64s(v: impl IntoIterator<Item = Option<f64>>) -> ArrayRef {
    Arc::new(Float64Array::from_iter(v))
}
fn strs<'a>(v: impl IntoIterator<Item = &'a str>) -> ArrayRef {
    Arc::new(StringArray::from_iter_values(v))
}
fn bools(v: impl IntoIterator<Item = bool>) -> ArrayRef {
    Arc::new(BooleanArray::from_iter(v.into_iter().map(Some)))
}

fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
    RecordBatch::try_from_iter(columns).expect("columns of one table have equal lengths")
}

// TCP-only, UDP-only and TFRC-only columns are null for the other kinds.
fn tcp_column(f: &[Flow], g: fn(&TcpFlow) -> Option<u64>) -> ArrayRef {
    opt_u64s(f.iter().map(move |x| x.tcp().and_then(g)))
}
/// Sender counters summed over a closed-loop user's connections.
fn sender_column(f: &[Flow], g: fn(&SenderStats) -> u64) -> ArrayRef {
    opt_u64s(f.iter().map(move |x| x.sender_totals().map(|s| g(&s))))
}
fn udp_column(f: &[Flow], g: fn(&UdpFlow) -> u64) -> ArrayRef {
    opt_u64s(f.iter().map(move |x| x.udp().map(g)))
}
fn tfrc_column(f: &[Flow], g: fn(&TfrcFlow) -> u64) -> ArrayRef {
    opt_u64s(f.iter().map(move |x| x.tfrc().map(g)))
}
fn tfrc_f64_column(f: &[Flow], g: fn(&TfrcFlow) -> f64) -> ArrayRef {
    opt_f64s(f.iter().map(move |x| x.tfrc().map(g)))
}

/// What the receivers saw: UDP's packets and one-way delay, TFRC's and
/// DFlow's congestion events and rate.
fn flow_receiver_columns(f: &[Flow]) -> Vec<(&'static str, ArrayRef)> {
    vec![
        (
            "packets_received",
            opt_u64s(f.iter().map(|x| match &x.transport {
                Transport::Udp(u) => Some(u.received_pkts),
                Transport::Tfrc(t) => Some(t.receiver.stats().packets_received),
                Transport::Tcp(_) | Transport::Mptcp(_) => None,
            })),
        ),
        (
            "owd_mean_ns",
            udp_column(f, |u| u.owd_sum_ns.checked_div(u.received_pkts).unwrap_or(0)),
        ),
        ("owd_max_ns", udp_column(f, |u| u.owd_max_ns)),
        // TFRC/DFlow only. p as the receiver last computed it (for DFlow a
        // congestion event rate: loss and delay events).
        (
            "loss_event_rate",
            tfrc_f64_column(f, |t| t.receiver.loss_event_rate()),
        ),
        ("loss_events", tfrc_column(f, |t| t.receiver.stats().loss_events)),
        (
            "delay_events",
            tfrc_column(f, |t| t.receiver.stats().delay_events),
        ),
        // The sender's allowed rate X at the end of the run.
        ("rate_bps", tfrc_f64_column(f, |t| t.sender.rate_bps())),
        // DFlow only: latest one-way delay above the receiver's base delay
        // (min OWD over the base window).
        (
            "queueing_delay_ns",
            opt_u64s(f.iter().map(|x| x.tfrc().and_then(|t| t.queueing_delay_ns()))),
        ),
    ]
}

impl Simulation {
    /// Length of the measurement window in seconds (never zero).
    fn window_s(&self) -> f64 {
        (self.duration_ns.saturating_sub(self.measure_from_ns).max(1)) as f64 / 1e9
    }

    pub fn flows_table(&self) -> RecordBatch {
        let mut columns = self.flow_identity_columns();
        columns.extend(self.flow_progress_columns());
        columns.extend(self.flow_sender_columns());
        columns.extend(flow_receiver_columns(&self.flows));
        batch(columns)
    }

    /// Which flow: its id, group, kind, ends, controller, start and size.
    fn flow_identity_columns(&self) -> Vec<(&'static str, ArrayRef)> {
        let f = &self.flows;
        let node = |n: u32| self.nodes[n as usize].name.as_str();
        vec![
            ("flow_id", u32s(0..f.len() as u32)),
            (
                "group",
                strs(f.iter().map(|x| self.group_names[x.group as usize].as_str())),
            ),
            ("kind", strs(f.iter().map(|x| x.kind_name()))),
            ("src", strs(f.iter().map(|x| node(x.src)))),
            ("dst", strs(f.iter().map(|x| node(x.dst)))),
            ("cc", strs(f.iter().map(|x| x.cc_name.as_str()))),
            ("start_ns", u64s(f.iter().map(|x| x.start_ns))),
            ("size_bytes", opt_u64s(f.iter().map(|x| x.size_bytes))),
        ]
    }

    /// How far each flow got: completion, bytes, goodput and throughput
    /// over the measurement window.
    fn flow_progress_columns(&self) -> Vec<(&'static str, ArrayRef)> {
        let w = self.window_s();
        let f = &self.flows;
        vec![
            (
                "completed",
                bools(f.iter().map(|x| {
                    x.size_bytes.is_some()
                        && (x.tcp().is_some_and(|t| t.sender.is_complete())
                            || x.mptcp().is_some_and(|m| m.completed_at().is_some()))
                })),
            ),
            (
                "fct_ns",
                opt_u64s(f.iter().map(|x| {
                    x.size_bytes?;
                    let done = match &x.transport {
                        Transport::Mptcp(m) => m.completed_at(),
                        _ => x.tcp()?.sender.completed_at_ns(),
                    };
                    done.map(|t| t.saturating_sub(x.start_ns))
                })),
            ),
            ("handshake_rtt_ns", tcp_column(f, |t| t.sender.handshake_rtt_ns())),
            ("bytes_acked", sender_column(f, |s| s.bytes_acked)),
            ("bytes_delivered", u64s(f.iter().map(|x| x.bytes_delivered()))),
            (
                "goodput_bps",
                f64s(
                    f.iter()
                        .map(|x| (x.bytes_delivered() - x.window_start_delivered) as f64 * 8.0 / w),
                ),
            ),
            (
                "throughput_bps",
                f64s(
                    f.iter()
                        .map(|x| (x.bytes_sent() - x.window_start_sent) as f64 * 8.0 / w),
                ),
            ),
        ]
    }

    /// The senders' counters and state at the end of the run.
    fn flow_sender_columns(&self) -> Vec<(&'static str, ArrayRef)> {
        let f = &self.flows;
        vec![
            (
                "segments_sent",
                u64s(f.iter().map(|x| match &x.transport {
                    Transport::Tcp(_) | Transport::Mptcp(_) => {
                        x.sender_totals().map_or(0, |s| s.segments_sent)
                    }
                    Transport::Udp(u) => u.source.sent_pkts,
                    Transport::Tfrc(t) => t.sender.stats().packets_sent,
                })),
            ),
            (
                "retransmitted_segments",
                sender_column(f, |s| s.retransmitted_segments),
            ),
            ("timeouts", sender_column(f, |s| s.timeouts)),
            ("fast_recoveries", sender_column(f, |s| s.fast_retransmits)),
            // MPTCP: the sum of the subflows' windows.
            (
                "cwnd_bytes",
                opt_u64s(f.iter().map(|x| match &x.transport {
                    Transport::Tcp(t) => Some(t.sender.cwnd_bytes()),
                    Transport::Mptcp(m) => {
                        Some(m.sender().subflows().iter().map(|s| s.tcp().cwnd_bytes()).sum())
                    }
                    _ => None,
                })),
            ),
            // TCP's srtt, or TFRC's smoothed RTT estimate R (RFC 5348 §4.3).
            (
                "srtt_ns",
                opt_u64s(f.iter().map(|x| match &x.transport {
                    Transport::Tcp(t) => Some(t.sender.srtt_ns()),
                    Transport::Tfrc(t) => Some(t.sender.rtt_ns()),
                    // Per subflow in the `subflows` table.
                    Transport::Udp(_) | Transport::Mptcp(_) => None,
                })),
            ),
            (
                "transfers_completed",
                tcp_column(f, |t| t.closed_loop.as_ref().map(|c| c.transfers.len() as u64)),
            ),
        ]
    }
    /// One row per file a closed-loop user finished.
    pub fn transfers_table(&self) -> RecordBatch {
        let rows: Vec<(u32, &Transfer)> = self
            .flows
            .iter()
            .enumerate()
            .filter_map(|(i, f)| Some((i as u32, f.tcp()?.closed_loop.as_ref()?)))
            .flat_map(|(i, c)| c.transfers.iter().map(move |t| (i, t)))
            .collect();
        batch(vec![
            ("flow_id", u32s(rows.iter().map(|r| r.0))),
            ("start_ns", u64s(rows.iter().map(|r| r.1.start_ns))),
            ("size_bytes", u64s(rows.iter().map(|r| r.1.size_bytes))),
            ("fct_ns", u64s(rows.iter().map(|r| r.1.fct_ns))),
            (
                "goodput_bps",
                f64s(
                    rows.iter()
                        .map(|r| r.1.size_bytes as f64 * 8.0 / (r.1.fct_ns.max(1) as f64 / 1e9)),
                ),
            ),
        ])
    }

    pub fn links_table(&self) -> RecordBatch {
        let w = self.window_s();
        let l = &self.links;
        let cons = self.conservation();
        let node = |n: u32| self.nodes[n as usize].name.as_str();
        let views: Vec<QueueView> = l.iter().map(|x| queue_view(x, &self.media)).collect();
        let mut columns = vec![
            ("link_id", u32s(0..l.len() as u32)),
            ("name", strs(l.iter().map(|x| x.name.as_str()))),
            ("src", strs(l.iter().map(|x| node(x.src)))),
            ("dst", strs(l.iter().map(|x| node(x.dst)))),
            ("rate_bps", u64s(l.iter().map(|x| x.rate.nominal_bps()))),
            ("delay_ns", u64s(l.iter().map(|x| x.delay_ns))),
            ("qdisc", strs(views.iter().map(|v| v.name))),
            ("arrivals_pkts", u64s(l.iter().map(|x| x.counters.arrivals_pkts))),
            (
                "arrivals_bytes",
                u64s(l.iter().map(|x| x.counters.arrivals_bytes)),
            ),
            (
                "departures_pkts",
                u64s(l.iter().map(|x| x.counters.departures_pkts)),
            ),
            (
                "departures_bytes",
                u64s(l.iter().map(|x| x.counters.departures_bytes)),
            ),
            ("drops_pkts", u64s(views.iter().map(|v| v.stats.drops_pkts()))),
            ("drops_bytes", u64s(views.iter().map(|v| v.stats.drops_bytes))),
            (
                "drops_early_pkts",
                u64s(views.iter().map(|v| v.stats.drops_early_pkts)),
            ),
            ("lost_pkts", u64s(l.iter().map(|x| x.counters.lost_pkts))),
            (
                "queued_pkts",
                u64s(views.iter().map(|v| v.len_pkts + v.in_service_pkts)),
            ),
            (
                "utilization",
                f64s(l.iter().map(|x| {
                    (x.counters.departures_bytes - x.window_start_departures_bytes) as f64 * 8.0
                        / (x.rate.nominal_bps() as f64 * w)
                })),
            ),
            ("conservation_ok", bools(cons.iter().map(|c| c.ok))),
        ];
        // ECN marks beside the drops, only where a queue marks: a scenario
        // without ECN keeps the table (and its golden digest) as it was.
        if views.iter().any(|v| v.ecn_marking) {
            let at = columns
                .iter()
                .position(|(name, _)| *name == "drops_early_pkts")
                .map_or(0, |i| i + 1);
            columns.insert(at, ("marks_pkts", u64s(views.iter().map(|v| v.stats.marks_pkts))));
        }
        batch(columns)
    }

    pub fn flow_samples_table(&self) -> RecordBatch {
        let s = &self.samples.flows;
        batch(vec![
            ("time_ns", u64s(s.time_ns.iter().copied())),
            ("flow_id", u32s(s.flow_id.iter().copied())),
            ("cwnd_bytes", opt_u64s(s.cwnd_bytes.iter().copied())),
            ("ssthresh_bytes", opt_u64s(s.ssthresh_bytes.iter().copied())),
            ("srtt_ns", u64s(s.srtt_ns.iter().copied())),
            ("rwnd_bytes", opt_u64s(s.rwnd_bytes.iter().copied())),
            ("flight_bytes", opt_u64s(s.flight_bytes.iter().copied())),
            ("bytes_acked", opt_u64s(s.bytes_acked.iter().copied())),
            ("bytes_delivered", u64s(s.bytes_delivered.iter().copied())),
            (
                "retransmitted_segments",
                opt_u64s(s.retransmitted_segments.iter().copied()),
            ),
            ("rate_bps", opt_f64s(s.rate_bps.iter().copied())),
            ("queueing_delay_ns", opt_u64s(s.queueing_delay_ns.iter().copied())),
        ])
    }

    pub fn link_samples_table(&self) -> RecordBatch {
        let s = &self.samples.links;
        batch(vec![
            ("time_ns", u64s(s.time_ns.iter().copied())),
            ("link_id", u32s(s.link_id.iter().copied())),
            ("queue_bytes", u64s(s.queue_bytes.iter().copied())),
            ("queue_pkts", u64s(s.queue_pkts.iter().copied())),
            ("arrivals_pkts", u64s(s.arrivals_pkts.iter().copied())),
            ("drops_pkts", u64s(s.drops_pkts.iter().copied())),
            ("departures_bytes", u64s(s.departures_bytes.iter().copied())),
            ("sojourn_mean_ns", u64s(s.sojourn_mean_ns.iter().copied())),
            ("sojourn_max_ns", u64s(s.sojourn_max_ns.iter().copied())),
        ])
    }

    pub fn run_table(&self) -> RecordBatch {
        batch(vec![
            ("name", strs([self.name.as_str()])),
            ("seed", u64s([self.seed])),
            ("duration_ns", u64s([self.duration_ns])),
            ("measure_from_ns", u64s([self.measure_from_ns])),
            ("events", u64s([self.events])),
            ("flows", u64s([self.flows.len() as u64])),
            ("links", u64s([self.links.len() as u64])),
            ("conservation_ok", bools([self.conservation_ok()])),
        ])
    }

    /// One row per time-varying or shared link: what its trace or channel
    /// offered over the measurement window beside what it carried.
    pub fn access_links_table(&self) -> RecordBatch {
        let w = self.window_s();
        let rows: Vec<(u32, &crate::network::Link)> = self
            .links
            .iter()
            .enumerate()
            .filter(|(_, l)| !matches!(l.service, Service::Fixed))
            .map(|(i, l)| (i as u32, l))
            .collect();
        let kind = |l: &crate::network::Link| -> &'static str {
            match &l.service {
                Service::Fixed => "fixed",
                Service::Varying(tx) => tx.kind(),
                Service::Shared { medium, .. } => match self.media[*medium as usize].kind {
                    MediumKind::Cell(_) => "lte-user",
                    MediumKind::Ap(_) => "wifi-station",
                },
            }
        };
        // Medium-specific counters, null where they do not apply.
        let cell = |g: fn(&latlab_link::lte::UserStats) -> u64| {
            opt_u64s(rows.iter().map(move |(_, l)| match l.service {
                Service::Shared { medium, member } => match &self.media[medium as usize].kind {
                    MediumKind::Cell(c) => Some(g(c.user_stats(member))),
                    MediumKind::Ap(_) => None,
                },
                _ => None,
            }))
        };
        let ap = |g: fn(&latlab_link::wifi::StationStats) -> u64| {
            opt_u64s(rows.iter().map(move |(_, l)| match l.service {
                Service::Shared { medium, member } => match &self.media[medium as usize].kind {
                    MediumKind::Ap(a) => Some(g(a.station_stats(member))),
                    MediumKind::Cell(_) => None,
                },
                _ => None,
            }))
        };
        let offered = |l: &crate::network::Link| l.access.offered_bytes - l.access.window_start_offered_bytes;
        let used = |l: &crate::network::Link| l.counters.departures_bytes - l.window_start_departures_bytes;
        batch(vec![
            ("link_id", u32s(rows.iter().map(|r| r.0))),
            ("name", strs(rows.iter().map(|r| r.1.name.as_str()))),
            ("service", strs(rows.iter().map(|r| kind(r.1)))),
            (
                "nominal_rate_bps",
                u64s(rows.iter().map(|r| r.1.rate.nominal_bps())),
            ),
            ("offered_bytes", u64s(rows.iter().map(|r| offered(r.1)))),
            ("departures_bytes", u64s(rows.iter().map(|r| used(r.1)))),
            (
                "offered_bps",
                f64s(rows.iter().map(|r| offered(r.1) as f64 * 8.0 / w)),
            ),
            (
                "capacity_utilization",
                opt_f64s(rows.iter().map(|r| {
                    let o = offered(r.1);
                    (o > 0).then(|| used(r.1) as f64 / o as f64)
                })),
            ),
            ("scheduled_ttis", cell(|u| u.scheduled_ttis)),
            ("harq_retx_blocks", cell(|u| u.harq_retx_blocks)),
            ("retried_frames", ap(|s| s.retried_frames)),
            ("retries", ap(|s| s.retries)),
            ("lost_frames", ap(|s| s.lost_frames)),
            ("airtime_ns", ap(|s| s.airtime_ns)),
        ])
    }

    pub fn access_samples_table(&self) -> RecordBatch {
        let s = &self.samples.access;
        batch(vec![
            ("time_ns", u64s(s.time_ns.iter().copied())),
            ("link_id", u32s(s.link_id.iter().copied())),
            ("offered_bytes", u64s(s.offered_bytes.iter().copied())),
            ("departures_bytes", u64s(s.departures_bytes.iter().copied())),
            ("queue_bytes", u64s(s.queue_bytes.iter().copied())),
            ("queue_pkts", u64s(s.queue_pkts.iter().copied())),
        ])
    }

    pub fn access_flow_samples_table(&self) -> RecordBatch {
        let s = &self.samples.access_flows;
        batch(vec![
            ("time_ns", u64s(s.time_ns.iter().copied())),
            ("flow_id", u32s(s.flow_id.iter().copied())),
            ("srtt_ns", opt_u64s(s.srtt_ns.iter().copied())),
            (
                "access_delay_mean_ns",
                opt_u64s(s.access_delay_mean_ns.iter().copied()),
            ),
            (
                "access_delay_max_ns",
                opt_u64s(s.access_delay_max_ns.iter().copied()),
            ),
            ("access_packets", u64s(s.access_packets.iter().copied())),
        ])
    }

    /// One row per MPTCP path (subflow) of every MPTCP connection; `subflow`
    /// is the path's index in the scenario. A path whose join time was not
    /// reached has `joined` false and zero counters.
    pub fn subflows_table(&self) -> RecordBatch {
        let w = self.window_s();
        let rows: Vec<(u32, u32, &MptcpFlow, &MptcpPath)> = self
            .flows
            .iter()
            .enumerate()
            .filter_map(|(i, f)| Some((i as u32, f.mptcp()?)))
            .flat_map(|(i, m)| m.paths.iter().enumerate().map(move |(k, p)| (i, k as u32, m, p)))
            .collect();
        fn tcp<'a>(m: &'a MptcpFlow, p: &MptcpPath) -> Option<&'a latlab_proto::tcp::TcpSender> {
            p.subflow
                .and_then(|i| m.sender().subflow(i as usize))
                .map(|s| s.tcp())
        }
        let stat = |g: fn(&SenderStats) -> u64| {
            u64s(
                rows.iter()
                    .map(move |r| tcp(r.2, r.3).map_or(0, |t| g(&t.stats()))),
            )
        };
        batch(vec![
            ("flow_id", u32s(rows.iter().map(|r| r.0))),
            ("subflow", u32s(rows.iter().map(|r| r.1))),
            ("path", strs(rows.iter().map(|r| r.3.name.as_str()))),
            ("backup", bools(rows.iter().map(|r| r.3.backup))),
            ("joined", bools(rows.iter().map(|r| r.3.subflow.is_some()))),
            ("join_after_ns", u64s(rows.iter().map(|r| r.3.join_after_ns))),
            ("bytes_sent", stat(|s| s.bytes_sent)),
            ("bytes_acked", stat(|s| s.bytes_acked)),
            (
                "goodput_bps",
                f64s(rows.iter().map(|r| {
                    let acked = tcp(r.2, r.3).map_or(0, |t| t.stats().bytes_acked);
                    acked.saturating_sub(r.3.window_start_acked) as f64 * 8.0 / w
                })),
            ),
            ("segments_sent", stat(|s| s.segments_sent)),
            ("retransmitted_segments", stat(|s| s.retransmitted_segments)),
            ("timeouts", stat(|s| s.timeouts)),
            ("fast_recoveries", stat(|s| s.fast_retransmits)),
            (
                "cwnd_bytes",
                u64s(rows.iter().map(|r| tcp(r.2, r.3).map_or(0, |t| t.cwnd_bytes()))),
            ),
            (
                "srtt_ns",
                u64s(rows.iter().map(|r| tcp(r.2, r.3).map_or(0, |t| t.srtt_ns()))),
            ),
        ])
    }

    pub fn subflow_samples_table(&self) -> RecordBatch {
        let s = &self.samples.subflows;
        batch(vec![
            ("time_ns", u64s(s.time_ns.iter().copied())),
            ("flow_id", u32s(s.flow_id.iter().copied())),
            ("subflow", u32s(s.subflow.iter().copied())),
            ("bytes_acked", u64s(s.bytes_acked.iter().copied())),
            ("cwnd_bytes", u64s(s.cwnd_bytes.iter().copied())),
            ("srtt_ns", u64s(s.srtt_ns.iter().copied())),
        ])
    }

    /// One row per MPTCP connection: data-level delivery, the shared
    /// receive buffer (occupancy is data held out of order behind a hole:
    /// mean over the measurement window, max and blocked time over the
    /// run), and the sender's data-level counters.
    pub fn mptcp_table(&self) -> RecordBatch {
        let w = self.window_s();
        let end = self.now_ns;
        let rows: Vec<(u32, &Flow, &MptcpFlow)> = self
            .flows
            .iter()
            .enumerate()
            .filter_map(|(i, f)| Some((i as u32, f, f.mptcp()?)))
            .collect();
        let buf: Vec<RecvBufferStats> = rows.iter().map(|r| r.2.receiver.buffer_stats(end)).collect();
        let snd = |g: fn(&MptcpSenderStats) -> u64| u64s(rows.iter().map(move |r| g(&r.2.sender().stats())));
        let window_ns = (self.duration_ns.saturating_sub(self.measure_from_ns)).max(1) as f64;
        batch(vec![
            ("flow_id", u32s(rows.iter().map(|r| r.0))),
            ("paths", u32s(rows.iter().map(|r| r.2.paths.len() as u32))),
            (
                "subflows_joined",
                u32s(rows.iter().map(|r| r.2.path_of.len() as u32)),
            ),
            (
                "scheduler",
                strs(rows.iter().map(|r| r.2.sender().config().scheduler.name())),
            ),
            (
                "recv_buffer_bytes",
                u64s(rows.iter().map(|r| r.2.receiver.buffer().capacity_bytes())),
            ),
            (
                "bytes_delivered",
                u64s(rows.iter().map(|r| r.2.receiver.bytes_delivered())),
            ),
            (
                "goodput_bps",
                f64s(
                    rows.iter()
                        .map(|r| (r.1.bytes_delivered() - r.1.window_start_delivered) as f64 * 8.0 / w),
                ),
            ),
            (
                "buffer_occupancy_mean_bytes",
                f64s(rows.iter().zip(&buf).map(|(r, b)| {
                    b.occupancy_byte_ns
                        .saturating_sub(r.2.window_start_occupancy_byte_ns) as f64
                        / window_ns
                })),
            ),
            (
                "buffer_occupancy_max_bytes",
                u64s(buf.iter().map(|b| b.max_occupancy_bytes)),
            ),
            ("hol_blocked_ns", u64s(buf.iter().map(|b| b.blocked_ns))),
            (
                "buffer_drops_segments",
                u64s(buf.iter().map(|b| b.segments_dropped)),
            ),
            ("buffer_drops_bytes", u64s(buf.iter().map(|b| b.bytes_dropped))),
            ("duplicate_bytes", u64s(buf.iter().map(|b| b.duplicate_bytes))),
            ("reinjected_segments", snd(|s| s.reinjected_segments)),
            ("reinjected_bytes", snd(|s| s.reinjected_bytes)),
            ("opportunistic_retransmits", snd(|s| s.opportunistic_retransmits)),
            ("penalisations", snd(|s| s.penalisations)),
            ("window_limited", snd(|s| s.window_limited)),
        ])
    }

    /// One row per proxied MPTCP connection (docs/models/mptcp-proxy.md):
    /// the relay, the conversion delays' effect, the throttle, the server's
    /// TCP connection.
    pub fn mptcp_proxy_table(&self) -> RecordBatch {
        let end = self.now_ns;
        let rows: Vec<(u32, &ProxyEnd, ProxyStats)> = self
            .flows
            .iter()
            .enumerate()
            .filter_map(|(i, f)| {
                let p = f.mptcp()?.proxy()?;
                Some((i as u32, p, p.proxy.stats(end)))
            })
            .collect();
        let st = |g: fn(&ProxyStats) -> u64| u64s(rows.iter().map(move |r| g(&r.2)));
        let opt = |g: fn(&ProxyStats) -> Option<u64>| opt_u64s(rows.iter().map(move |r| g(&r.2)));
        let server = |g: fn(&SenderStats) -> u64| u64s(rows.iter().map(move |r| g(&r.1.server.stats())));
        batch(vec![
            ("flow_id", u32s(rows.iter().map(|r| r.0))),
            (
                "node",
                strs(rows.iter().map(|r| self.nodes[r.1.node as usize].name.as_str())),
            ),
            (
                "relay_bytes",
                u64s(rows.iter().map(|r| r.1.proxy.config().relay_bytes)),
            ),
            ("relay_max_bytes", st(|s| s.relay_max_bytes)),
            (
                "relay_mean_bytes",
                f64s(rows.iter().map(|r| r.2.relay_mean_bytes)),
            ),
            ("bytes_read_upstream", st(|s| s.bytes_read_upstream)),
            ("bytes_relayed", st(|s| s.bytes_relayed)),
            ("upstream_unread_bytes", st(|s| s.upstream_unread_bytes)),
            (
                "first_subflow_established_ns",
                opt(|s| s.first_subflow_established_at_ns),
            ),
            ("upstream_connect_ns", opt(|s| s.upstream_connect_at_ns)),
            ("throttle_installed_ns", opt(|s| s.throttle_installed_at_ns)),
            ("shaper_drops_pkts", st(|s| s.shaper_drops_pkts)),
            ("shaper_max_queue_bytes", st(|s| s.shaper_max_queue_bytes)),
            ("server_segments_sent", server(|s| s.segments_sent)),
            (
                "server_retransmitted_segments",
                server(|s| s.retransmitted_segments),
            ),
            ("server_timeouts", server(|s| s.timeouts)),
        ])
    }

    pub fn mptcp_samples_table(&self) -> RecordBatch {
        let s = &self.samples.mptcp;
        batch(vec![
            ("time_ns", u64s(s.time_ns.iter().copied())),
            ("flow_id", u32s(s.flow_id.iter().copied())),
            (
                "buffer_occupancy_bytes",
                u64s(s.buffer_occupancy_bytes.iter().copied()),
            ),
            ("bytes_delivered", u64s(s.bytes_delivered.iter().copied())),
        ])
    }

    /// The `latency_histogram` table: per sampled flow, its latency
    /// samples in the measurement window (RTT for TCP and MPTCP, one-way
    /// delay for UDP and TFRC/DFlow) as non-empty log-linear buckets
    /// [low_ns, high_ns) with their counts. Percentiles come from the
    /// cumulative counts, within a bucket's width (≤ 3.1 %).
    ///
    /// Kept out of [`Simulation::tables`], which the golden digests hash
    /// whole: adding it there would add a digest per golden case.
    pub fn latency_table(&self) -> RecordBatch {
        let metric = |f: &Flow| match f.transport {
            Transport::Tcp(_) | Transport::Mptcp(_) => LatencyMetric::Rtt,
            Transport::Udp(_) | Transport::Tfrc(_) => LatencyMetric::Owd,
        };
        let rows: Vec<(u32, &'static str, (u64, u64, u64))> = self
            .flows
            .iter()
            .zip(&self.latency)
            .enumerate()
            .flat_map(|(i, (f, h))| h.buckets().map(move |b| (i as u32, metric(f).name(), b)))
            .collect();
        batch(vec![
            ("flow_id", u32s(rows.iter().map(|r| r.0))),
            ("metric", strs(rows.iter().map(|r| r.1))),
            ("low_ns", u64s(rows.iter().map(|r| r.2 .0))),
            ("high_ns", u64s(rows.iter().map(|r| r.2 .1))),
            ("count", u64s(rows.iter().map(|r| r.2 .2))),
        ])
    }

    pub fn receiver_samples_table(&self) -> RecordBatch {
        let s = &self.samples.receivers;
        batch(vec![
            ("time_ns", u64s(s.time_ns.iter().copied())),
            ("flow_id", u32s(s.flow_id.iter().copied())),
            ("rwnd_bytes", u64s(s.rwnd_bytes.iter().copied())),
            ("rcv_rtt_ns", opt_u64s(s.rcv_rtt_ns.iter().copied())),
            (
                "rcv_window_est_bytes",
                opt_f64s(s.rcv_window_est_bytes.iter().copied()),
            ),
            ("cwnd_bytes", u64s(s.cwnd_bytes.iter().copied())),
            ("flight_bytes", u64s(s.flight_bytes.iter().copied())),
            ("srtt_ns", u64s(s.srtt_ns.iter().copied())),
        ])
    }

    pub fn cc_samples_table(&self) -> RecordBatch {
        let s = &self.samples.cc;
        batch(vec![
            ("time_ns", u64s(s.time_ns.iter().copied())),
            ("flow_id", u32s(s.flow_id.iter().copied())),
            ("mode", strs(s.mode.iter().copied())),
            ("pacing_gain", f64s(s.pacing_gain.iter().copied())),
            ("cwnd_gain", f64s(s.cwnd_gain.iter().copied())),
            ("bw_bps", u64s(s.bw_bps.iter().copied())),
            ("min_rtt_ns", opt_u64s(s.min_rtt_ns.iter().copied())),
            ("target_cwnd_bytes", u64s(s.target_cwnd_bytes.iter().copied())),
            ("pacing_rate_bps", u64s(s.pacing_rate_bps.iter().copied())),
            ("lt_bw_in_use", bools(s.lt_bw_in_use.iter().copied())),
        ])
    }

    /// All result tables, by name. Scenarios with time-varying or shared
    /// links add `access_links`, `access_samples` and `access_flow_samples`;
    /// with an adaptive receiver-window controller, `receiver_samples`;
    /// with a model-based controller (BBR), `cc_samples`.
    pub fn tables(&self) -> Vec<(&'static str, RecordBatch)> {
        let mut t = vec![
            ("flows", self.flows_table()),
            ("flow_samples", self.flow_samples_table()),
            ("links", self.links_table()),
            ("link_samples", self.link_samples_table()),
            ("transfers", self.transfers_table()),
            ("run", self.run_table()),
        ];
        if self.has_access {
            t.push(("access_links", self.access_links_table()));
            t.push(("access_samples", self.access_samples_table()));
            t.push(("access_flow_samples", self.access_flow_samples_table()));
        }
        if self.flows.iter().any(|f| {
            f.tcp()
                .is_some_and(|t| t.receiver.rwnd_controller().name() != "fixed")
        }) {
            t.push(("receiver_samples", self.receiver_samples_table()));
        }
        if self
            .flows
            .iter()
            .any(|f| f.tcp().is_some_and(|t| t.sender.cc().model_sample().is_some()))
        {
            t.push(("cc_samples", self.cc_samples_table()));
        }
        if self.flows.iter().any(|f| f.mptcp().is_some()) {
            t.push(("subflows", self.subflows_table()));
            t.push(("subflow_samples", self.subflow_samples_table()));
            t.push(("mptcp", self.mptcp_table()));
            t.push(("mptcp_samples", self.mptcp_samples_table()));
        }
        if self
            .flows
            .iter()
            .any(|f| f.mptcp().is_some_and(|m| m.proxy().is_some()))
        {
            t.push(("mptcp_proxy", self.mptcp_proxy_table()));
        }
        t
    }
}

/// Serialise a record batch as an Arrow IPC stream.
pub fn to_ipc_stream(batch: &RecordBatch) -> Result<Vec<u8>, arrow_schema::ArrowError> {
    let mut buf = Vec::new();
    {
        let mut w = StreamWriter::try_new(&mut buf, &batch.schema())?;
        w.write(batch)?;
        w.finish()?;
    }
    Ok(buf)
}
