//! Open-loop UDP sources.

use super::Simulation;
use crate::engine::Event;
use crate::flow::Transport;
use crate::packet::Payload;
use latlab_qdisc::Ecn;

impl Simulation {
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
