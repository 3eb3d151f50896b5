//! Time series, sampled at the scenario's interval into column vectors
//! (struct of arrays) that become Arrow record batches at the end.

use crate::flow::Flow;
use crate::network::Link;

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

#[derive(Debug, Default)]
pub struct Samples {
    pub flows: FlowSamples,
    pub links: LinkSamples,
}

impl Samples {
    pub fn record(&mut self, now_ns: u64, flows: &[Flow], links: &mut [Link]) {
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
            let q = l.qdisc.stats();
            let c = &mut l.counters;
            ls.time_ns.push(now_ns);
            ls.link_id.push(i as u32);
            ls.queue_bytes.push(l.qdisc.len_bytes());
            ls.queue_pkts.push(l.qdisc.len_pkts() as u64);
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
