//! Time series, sampled at the scenario's interval into column vectors
//! (struct of arrays) that become Arrow record batches at the end.

use crate::flow::Flow;
use crate::network::Link;

/// ssthresh is "infinite" before the first loss; samples report it as null.
const SSTHRESH_INFINITE: u64 = u64::MAX / 4;

#[derive(Debug, Default)]
pub struct FlowSamples {
    pub time_ns: Vec<u64>,
    pub flow_id: Vec<u32>,
    pub cwnd_bytes: Vec<u64>,
    pub ssthresh_bytes: Vec<Option<u64>>,
    pub srtt_ns: Vec<u64>,
    pub rwnd_bytes: Vec<u64>,
    pub flight_bytes: Vec<u64>,
    pub bytes_acked: Vec<u64>,
    pub bytes_delivered: Vec<u64>,
    pub retransmitted_segments: Vec<u64>,
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
            // Window samples describe TCP; UDP flows are summarised in `flows`.
            let Some(tcp) = f.tcp() else { continue };
            let s = &tcp.sender;
            let st = s.stats();
            fs.time_ns.push(now_ns);
            fs.flow_id.push(i as u32);
            fs.cwnd_bytes.push(s.cwnd_bytes());
            let ssthresh = s.ssthresh_bytes();
            fs.ssthresh_bytes
                .push((ssthresh < SSTHRESH_INFINITE).then_some(ssthresh));
            fs.srtt_ns.push(s.srtt_ns());
            fs.rwnd_bytes.push(s.peer_rwnd_bytes());
            fs.flight_bytes.push(s.flight_bytes());
            fs.bytes_acked.push(st.bytes_acked);
            fs.bytes_delivered.push(f.bytes_delivered());
            fs.retransmitted_segments.push(st.retransmitted_segments);
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
