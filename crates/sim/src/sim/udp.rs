//! Open-loop UDP sources.

use super::Simulation;
use crate::engine::Event;
use crate::flow::Transport;
use crate::packet::Payload;
use latlab_qdisc::Ecn;

impl Simulation {
    /// A packet sent at `sent_ns` with `payload_bytes` reaches the sink:
    /// count it and its one-way delay.
    #[inline]
    pub(super) fn deliver_udp(&mut self, flow: u32, sent_ns: u64, payload_bytes: u32, measured: bool) {
        let now = self.now_ns;
        let Transport::Udp(u) = &mut self.flows[flow as usize].transport else {
            return;
        };
        let owd = now.saturating_sub(sent_ns);
        u.received_pkts += 1;
        u.received_bytes += payload_bytes as u64;
        u.owd_sum_ns += owd;
        u.owd_max_ns = u.owd_max_ns.max(owd);
        if measured {
            self.latency[flow as usize].record(owd);
        }
    }

    /// Emit the UDP packets due now and arm the source's timer.
    pub(super) fn poll_udp(&mut self, flow: u32) {
        let now = self.now_ns;
        loop {
            let Transport::Udp(u) = &mut self.flows[flow as usize].transport else {
                return;
            };
            let Some(size) = u.source.poll(now) else { break };
            let seq = u.source.seq;
            self.send_sized(flow, true, Payload::Udp { seq, sent_ns: now }, size, Ecn::NotEct);
        }
        let Transport::Udp(u) = &mut self.flows[flow as usize].transport else {
            return;
        };
        let next = u.source.next_ns().map(|d| d.max(now));
        if let Some(d) = u.timer.needs_schedule(next) {
            self.queue.schedule(d, Event::SenderTimer { flow });
        }
    }
}
