//! Time series, sampled at the scenario's interval into column vectors
//! (struct of arrays) that become Arrow record batches at the end.

use crate::flow::Flow;
use crate::network::{queue_view, Link, Service, SharedMedium};

/// Delay at access hops, summed since the last sample.
#[derive(Debug, Clone, Copy, Default)]
pub struct AccessDelay {
    pub sum_ns: u64,
    pub count: u64,
    pub max_ns: u64,
}

/// Sub-buckets per power of two in a [`LatencyHistogram`]: a bucket is at
/// most 1/128 (0.78 %) of its lower edge wide (HdrHistogram's log-linear
/// layout), about 1 ms at 150 ms.
const SUB_BUCKET_BITS: u32 = 7;
const SUB_BUCKETS: u64 = 1 << SUB_BUCKET_BITS;

/// What a flow's [`LatencyHistogram`] counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LatencyMetric {
    /// TCP (and MPTCP subflows): every RTT sample the sender's RFC 6298
    /// estimator takes (RFC 7323 timestamps: every ACK of new data; else
    /// Karn's one timed segment per RTT), before smoothing.
    Rtt,
    /// UDP and TFRC/DFlow: every data packet's one-way delay, send to arrival.
    Owd,
}

impl LatencyMetric {
    pub fn name(self) -> &'static str {
        match self {
            LatencyMetric::Rtt => "rtt",
            LatencyMetric::Owd => "owd",
        }
    }
}

/// One sampled flow's latency samples from the start of the measurement
/// window, counted in log-linear buckets. Recording is an index and an
/// increment; only the buckets between the smallest and the largest value
/// seen are held (about 1.5 kB for RTTs between 100 and 300 ms), and
/// unsampled flows never allocate. Percentiles over the buckets are within
/// a bucket's width (≤ 0.78 %) of the exact ones.
#[derive(Debug, Clone, Default)]
pub struct LatencyHistogram {
    /// Bucket index of `counts[0]`.
    first: usize,
    counts: Vec<u64>,
}

impl LatencyHistogram {
    #[inline]
    pub fn record(&mut self, value_ns: u64) {
        let i = latency_bucket(value_ns);
        if self.counts.is_empty() {
            self.first = i;
        } else if i < self.first {
            // Rare: a new smallest value; shift the held range down.
            self.counts.splice(0..0, std::iter::repeat_n(0, self.first - i));
            self.first = i;
        }
        let j = i - self.first;
        if j >= self.counts.len() {
            self.counts.resize(j + 1, 0);
        }
        self.counts[j] += 1;
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The non-empty buckets as (low_ns, high_ns, count), lowest first; a
    /// bucket holds the values low_ns <= v < high_ns.
    pub fn buckets(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(j, &c)| {
                let (low, high) = latency_bucket_bounds(self.first + j);
                (low, high, c)
            })
    }
}

/// Values below 128 ns get a bucket each; above, 128 buckets per power of two.
#[inline]
fn latency_bucket(value_ns: u64) -> usize {
    if value_ns < SUB_BUCKETS {
        return value_ns as usize;
    }
    let shift = 63 - value_ns.leading_zeros() - SUB_BUCKET_BITS;
    let sub = (value_ns >> shift) - SUB_BUCKETS;
    ((u64::from(shift) + 1) * SUB_BUCKETS + sub) as usize
}

fn latency_bucket_bounds(index: usize) -> (u64, u64) {
    let i = index as u64;
    if i < SUB_BUCKETS {
        return (i, i + 1);
    }
    let shift = i / SUB_BUCKETS - 1;
    let low = (SUB_BUCKETS + i % SUB_BUCKETS) << shift;
    (low, low.saturating_add(1 << shift))
}

/// ssthresh is "infinite" before the first loss; samples report it as null.
const SSTHRESH_INFINITE: u64 = u64::MAX / 4;

/// One row per sampled TCP or TFRC/DFlow flow and sample time. Window
/// columns (cwnd, rwnd, flight, acked, retransmissions) are TCP's and null
/// on TFRC rows; rate is TFRC's and queueing delay DFlow's, null on TCP rows.
#[derive(Debug, Default)]
pub struct FlowSamples {
    pub time_ns: Vec<u64>,
    pub flow_id: Vec<u32>,
    pub cwnd_bytes: Vec<Option<u64>>,
    pub ssthresh_bytes: Vec<Option<u64>>,
    /// TCP's srtt; TFRC's smoothed RTT R (0 before the first feedback).
    pub srtt_ns: Vec<u64>,
    pub rwnd_bytes: Vec<Option<u64>>,
    pub flight_bytes: Vec<Option<u64>>,
    pub bytes_acked: Vec<Option<u64>>,
    pub bytes_delivered: Vec<u64>,
    pub retransmitted_segments: Vec<Option<u64>>,
    /// TFRC: the sender's allowed rate X, bits/s.
    pub rate_bps: Vec<Option<f64>>,
    /// DFlow: the receiver's latest OWD above its base delay, ns (null for
    /// TCP and plain TFRC).
    pub queueing_delay_ns: Vec<Option<u64>>,
}

#[derive(Debug, Default)]
pub struct LinkSamples {
    pub time_ns: Vec<u64>,
    pub link_id: Vec<u32>,
    pub queue_bytes: Vec<u64>,
    pub queue_pkts: Vec<u64>,
    pub arrivals_pkts: Vec<u64>,
    pub drops_pkts: Vec<u64>,
    pub departures_bytes: Vec<u64>,
    /// Over the interval since the previous sample; 0 when nothing left the queue.
    pub sojourn_mean_ns: Vec<u64>,
    pub sojourn_max_ns: Vec<u64>,
}

/// One row per time-varying or shared link and sample time (the
/// `access_samples` table): the capacity its trace or channel offered
/// beside what it carried, both cumulative from the start.
#[derive(Debug, Default)]
pub struct AccessSamples {
    pub time_ns: Vec<u64>,
    pub link_id: Vec<u32>,
    pub offered_bytes: Vec<u64>,
    pub departures_bytes: Vec<u64>,
    pub queue_bytes: Vec<u64>,
    pub queue_pkts: Vec<u64>,
}

/// One row per sampled flow and sample time (the `access_flow_samples`
/// table): the sender's srtt beside the delay its data packets saw at
/// access hops since the previous sample (null when none crossed one).
#[derive(Debug, Default)]
pub struct AccessFlowSamples {
    pub time_ns: Vec<u64>,
    pub flow_id: Vec<u32>,
    pub srtt_ns: Vec<Option<u64>>,
    pub access_delay_mean_ns: Vec<Option<u64>>,
    pub access_delay_max_ns: Vec<Option<u64>>,
    pub access_packets: Vec<u64>,
}

/// One row per joined subflow of a sampled MPTCP connection and sample
/// time (the `subflow_samples` table). `subflow` is the path's index in the
/// scenario; bytes acknowledged are cumulative (rate = difference).
#[derive(Debug, Default)]
pub struct SubflowSamples {
    pub time_ns: Vec<u64>,
    pub flow_id: Vec<u32>,
    pub subflow: Vec<u32>,
    pub bytes_acked: Vec<u64>,
    pub cwnd_bytes: Vec<u64>,
    pub srtt_ns: Vec<u64>,
}

/// One row per sampled MPTCP connection and sample time (the
/// `mptcp_samples` table): the data-level receive buffer's out-of-order
/// occupancy and the bytes delivered in data order (cumulative).
#[derive(Debug, Default)]
pub struct MptcpSamples {
    pub time_ns: Vec<u64>,
    pub flow_id: Vec<u32>,
    pub buffer_occupancy_bytes: Vec<u64>,
    pub bytes_delivered: Vec<u64>,
}

/// One row per sampled TCP flow whose receiver runs an adaptive window
/// controller (autotuning, DRWA, RTAC) and sample time (the
/// `receiver_samples` table): the receiver's own estimates beside the
/// sender's state at the same instant, so a study can check how well a
/// receiver sees its sender (the receiver's RTT against srtt, its window
/// estimate against cwnd) without any clock between them.
#[derive(Debug, Default)]
pub struct ReceiverSamples {
    pub time_ns: Vec<u64>,
    pub flow_id: Vec<u32>,
    /// The window the receiver advertises now.
    pub rwnd_bytes: Vec<u64>,
    /// The receiver's RTT estimate (null before its first).
    pub rcv_rtt_ns: Vec<Option<u64>>,
    /// The receiver's estimate of the sender's window, bytes per RTT (null
    /// before its first).
    pub rcv_window_est_bytes: Vec<Option<f64>>,
    pub cwnd_bytes: Vec<u64>,
    pub flight_bytes: Vec<u64>,
    pub srtt_ns: Vec<u64>,
}

/// One row per sampled TCP flow whose controller keeps a path model (BBR)
/// and sample time (the `cc_samples` table): the model as the controller
/// holds it ([`latlab_proto::cc::ModelSample`]) beside the pacing rate it
/// sets, so a run can be compared with another BBR's traces (ns-3's
/// TcpBbr, Linux's `ss -i` bbr fields).
#[derive(Debug, Default)]
pub struct CcSamples {
    pub time_ns: Vec<u64>,
    pub flow_id: Vec<u32>,
    pub mode: Vec<&'static str>,
    pub pacing_gain: Vec<f64>,
    pub cwnd_gain: Vec<f64>,
    pub bw_bps: Vec<u64>,
    pub min_rtt_ns: Vec<Option<u64>>,
    pub target_cwnd_bytes: Vec<u64>,
    pub pacing_rate_bps: Vec<u64>,
    pub lt_bw_in_use: Vec<bool>,
}

impl CcSamples {
    fn record(&mut self, now_ns: u64, flow_id: u32, s: &latlab_proto::tcp::TcpSender) {
        let cc = s.cc();
        let Some(m) = cc.model_sample() else {
            return;
        };
        self.time_ns.push(now_ns);
        self.flow_id.push(flow_id);
        self.mode.push(m.mode);
        self.pacing_gain.push(m.pacing_gain);
        self.cwnd_gain.push(m.cwnd_gain);
        self.bw_bps.push(m.bw_bytes_per_s.saturating_mul(8));
        self.min_rtt_ns.push(m.min_rtt_ns);
        self.target_cwnd_bytes
            .push(m.target_cwnd_segments.saturating_mul(s.mss_bytes()));
        self.pacing_rate_bps
            .push(cc.pacing_rate_bytes_per_s().saturating_mul(8));
        self.lt_bw_in_use.push(m.lt_bw_in_use);
    }
}

#[derive(Debug, Default)]
pub struct Samples {
    pub flows: FlowSamples,
    pub links: LinkSamples,
    pub access: AccessSamples,
    pub access_flows: AccessFlowSamples,
    pub subflows: SubflowSamples,
    pub mptcp: MptcpSamples,
    pub receivers: ReceiverSamples,
    pub cc: CcSamples,
}

impl Samples {
    /// Access-link and per-flow access-delay rows (scenarios with
    /// time-varying or shared links only).
    pub fn record_access(
        &mut self,
        now_ns: u64,
        flows: &[Flow],
        links: &mut [Link],
        media: &mut [SharedMedium],
        delays: &mut [AccessDelay],
    ) {
        for (i, l) in links.iter_mut().enumerate() {
            if matches!(l.service, Service::Fixed) || !l.sampled {
                continue;
            }
            let offered = l.offered_bytes_until(media, now_ns).unwrap_or(0);
            let v = queue_view(l, media);
            let a = &mut self.access;
            a.time_ns.push(now_ns);
            a.link_id.push(i as u32);
            a.offered_bytes.push(offered);
            a.departures_bytes.push(l.counters.departures_bytes);
            a.queue_bytes.push(v.len_bytes);
            a.queue_pkts.push(v.len_pkts);
        }
        let fs = &mut self.access_flows;
        for (i, (f, d)) in flows.iter().zip(delays.iter_mut()).enumerate() {
            if !f.sampled || !f.started {
                continue;
            }
            fs.time_ns.push(now_ns);
            fs.flow_id.push(i as u32);
            fs.srtt_ns.push(match (f.tcp(), f.tfrc()) {
                (Some(t), _) => Some(t.sender.srtt_ns()),
                (_, Some(t)) => Some(t.sender.rtt_ns()),
                _ => None,
            });
            fs.access_delay_mean_ns.push(d.sum_ns.checked_div(d.count));
            fs.access_delay_max_ns.push((d.count > 0).then_some(d.max_ns));
            fs.access_packets.push(d.count);
            *d = AccessDelay::default();
        }
    }

    /// An MPTCP connection: a `flow_samples` row for the connection
    /// (windows, acknowledged bytes and retransmissions summed over the
    /// subflows, the lowest subflow srtt), a row per joined subflow, and the
    /// data-level buffer.
    #[allow(clippy::too_many_arguments)]
    fn record_mptcp(
        fs: &mut FlowSamples,
        ss: &mut SubflowSamples,
        ms: &mut MptcpSamples,
        now_ns: u64,
        flow_id: u32,
        f: &Flow,
        m: &crate::flow::MptcpFlow,
    ) {
        let subs = m.sender().subflows();
        let tot = m.sender_totals();
        fs.time_ns.push(now_ns);
        fs.flow_id.push(flow_id);
        fs.cwnd_bytes
            .push(Some(subs.iter().map(|s| s.tcp().cwnd_bytes()).sum()));
        fs.ssthresh_bytes.push(None);
        fs.srtt_ns.push(
            subs.iter()
                .map(|s| s.tcp().srtt_ns())
                .filter(|&r| r > 0)
                .min()
                .unwrap_or(0),
        );
        fs.rwnd_bytes.push(None);
        fs.flight_bytes
            .push(Some(subs.iter().map(|s| s.tcp().flight_bytes()).sum()));
        fs.bytes_acked.push(Some(tot.bytes_acked));
        fs.bytes_delivered.push(f.bytes_delivered());
        fs.retransmitted_segments.push(Some(tot.retransmitted_segments));
        fs.rate_bps.push(None);
        fs.queueing_delay_ns.push(None);
        for (i, sf) in subs.iter().enumerate() {
            let tcp = sf.tcp();
            ss.time_ns.push(now_ns);
            ss.flow_id.push(flow_id);
            ss.subflow.push(m.path_of[i] as u32);
            ss.bytes_acked.push(tcp.stats().bytes_acked);
            ss.cwnd_bytes.push(tcp.cwnd_bytes());
            ss.srtt_ns.push(tcp.srtt_ns());
        }
        ms.time_ns.push(now_ns);
        ms.flow_id.push(flow_id);
        ms.buffer_occupancy_bytes
            .push(m.receiver.buffer().occupancy_bytes());
        ms.bytes_delivered.push(m.receiver.bytes_delivered());
    }

    pub fn record(&mut self, now_ns: u64, flows: &[Flow], links: &mut [Link], media: &[SharedMedium]) {
        let fs = &mut self.flows;
        for (i, f) in flows.iter().enumerate() {
            if !f.sampled || !f.started {
                continue;
            }
            // UDP flows are open-loop and summarised in `flows` only.
            if let Some(tcp) = f.tcp() {
                let s = &tcp.sender;
                let st = s.stats();
                fs.time_ns.push(now_ns);
                fs.flow_id.push(i as u32);
                fs.cwnd_bytes.push(Some(s.cwnd_bytes()));
                let ssthresh = s.ssthresh_bytes();
                fs.ssthresh_bytes
                    .push((ssthresh < SSTHRESH_INFINITE).then_some(ssthresh));
                fs.srtt_ns.push(s.srtt_ns());
                fs.rwnd_bytes.push(Some(s.peer_rwnd_bytes()));
                fs.flight_bytes.push(Some(s.flight_bytes()));
                fs.bytes_acked.push(Some(st.bytes_acked));
                fs.bytes_delivered.push(f.bytes_delivered());
                fs.retransmitted_segments.push(Some(st.retransmitted_segments));
                fs.rate_bps.push(None);
                fs.queueing_delay_ns.push(None);
                self.cc.record(now_ns, i as u32, s);
                let ctl = tcp.receiver.rwnd_controller();
                if ctl.name() != "fixed" {
                    let rs = &mut self.receivers;
                    rs.time_ns.push(now_ns);
                    rs.flow_id.push(i as u32);
                    rs.rwnd_bytes.push(ctl.rwnd_bytes());
                    rs.rcv_rtt_ns.push(ctl.rtt_ns());
                    rs.rcv_window_est_bytes.push(ctl.window_est_bytes());
                    rs.cwnd_bytes.push(s.cwnd_bytes());
                    rs.flight_bytes.push(s.flight_bytes());
                    rs.srtt_ns.push(s.srtt_ns());
                }
            } else if let Some(m) = f.mptcp() {
                Self::record_mptcp(fs, &mut self.subflows, &mut self.mptcp, now_ns, i as u32, f, m);
            } else if let Some(t) = f.tfrc() {
                fs.time_ns.push(now_ns);
                fs.flow_id.push(i as u32);
                fs.cwnd_bytes.push(None);
                fs.ssthresh_bytes.push(None);
                fs.srtt_ns.push(t.sender.rtt_ns());
                fs.rwnd_bytes.push(None);
                fs.flight_bytes.push(None);
                fs.bytes_acked.push(None);
                fs.bytes_delivered.push(f.bytes_delivered());
                fs.retransmitted_segments.push(None);
                fs.rate_bps.push(Some(t.sender.rate_bps()));
                fs.queueing_delay_ns.push(t.queueing_delay_ns());
            }
        }
        let ls = &mut self.links;
        for (i, l) in links.iter_mut().enumerate() {
            if !l.sampled {
                continue;
            }
            let v = queue_view(l, media);
            let q = v.stats;
            let c = &mut l.counters;
            ls.time_ns.push(now_ns);
            ls.link_id.push(i as u32);
            ls.queue_bytes.push(v.len_bytes);
            ls.queue_pkts.push(v.len_pkts);
            ls.arrivals_pkts.push(c.arrivals_pkts);
            ls.drops_pkts.push(q.drops_pkts());
            ls.departures_bytes.push(c.departures_bytes);
            ls.sojourn_mean_ns
                .push(c.sojourn_sum_ns.checked_div(c.sojourn_count).unwrap_or(0));
            ls.sojourn_max_ns.push(c.sojourn_max_ns);
            c.sojourn_sum_ns = 0;
            c.sojourn_count = 0;
            c.sojourn_max_ns = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_falls_in_its_buckets_bounds_and_buckets_are_narrow() {
        let mut v = 1u64;
        let mut values = vec![0, 127, 128, 129, 255, 256, 257, u64::MAX];
        while v < u64::MAX / 3 {
            values.extend([v, v + 1, v * 3 / 2]);
            v = v * 3 + 1;
        }
        for v in values {
            let i = latency_bucket(v);
            let (low, high) = latency_bucket_bounds(i);
            assert!(low <= v && (v < high || high == u64::MAX), "{v}: [{low}, {high})");
            assert!(
                (high - low) * SUB_BUCKETS <= low.max(SUB_BUCKETS),
                "{v}: [{low}, {high}) too wide"
            );
        }
        // Adjacent buckets tile the line: no gaps, no overlaps.
        for i in 0..7000 {
            assert_eq!(
                latency_bucket_bounds(i).1,
                latency_bucket_bounds(i + 1).0,
                "bucket {i}"
            );
        }
    }

    /// A TCP and a UDP flow measured from t = 0: the TCP histogram holds
    /// exactly the RTT samples its sender took (handshake included), the
    /// UDP one every datagram that arrived, and the flows past
    /// `max_sampled_flows` nothing.
    #[test]
    fn histograms_hold_every_sample_of_the_sampled_flows() {
        let toml = r#"
name = "latency"
seed = 5
duration_s = 3
[tcp]
preset = "linux"
[outputs]
max_sampled_flows = 2
[topology]
kind = "dumbbell"
pairs = 3
access_rate_bps = 100e6
access_delay_ms = 1
core_rate_bps = 10e6
core_delay_ms = 10
core_queue = { kind = "droptail", limit_packets = 30 }
[[flows]]
src = "s0"
dst = "d0"
cc = "cubic"
[[flows]]
src = "s1"
dst = "d1"
kind = "udp"
udp = { pattern = "cbr", rate_bps = 1e6, size_bytes = 1000 }
[[flows]]
src = "s2"
dst = "d2"
cc = "newreno"
"#;
        let sc = crate::parse(toml, "latency").unwrap();
        let mut sim = crate::assemble::build(&sc, "latency", None).unwrap();
        sim.run();
        let tcp = sim.flows[0].tcp().unwrap().sender.stats().rtt_samples;
        assert!(tcp > 100, "{tcp} RTT samples");
        assert_eq!(sim.latency[0].total(), tcp);
        let udp = sim.flows[1].udp().unwrap().received_pkts;
        assert_eq!(sim.latency[1].total(), udp);
        assert_eq!(sim.latency[2].total(), 0, "flow 2 is not sampled");
        let table = sim.latency_table();
        assert_eq!(
            table.num_rows(),
            sim.latency[0].buckets().count() + sim.latency[1].buckets().count()
        );
    }

    #[test]
    fn histogram_counts_each_sample_once() {
        let mut h = LatencyHistogram::default();
        // The smallest value comes last: the held range grows downwards too.
        for ms in [20u64, 10, 150, 10] {
            h.record(ms * 1_000_000);
        }
        let b: Vec<_> = h.buckets().collect();
        assert_eq!(h.total(), 4);
        assert_eq!(b.len(), 3);
        assert_eq!(b[0].2, 2);
        assert!(b[0].0 <= 10_000_000 && 10_000_000 < b[0].1);
        assert!(b[1].0 <= 20_000_000 && 20_000_000 < b[1].1);
        assert!(b[2].0 <= 150_000_000 && 150_000_000 < b[2].1);
    }
}
