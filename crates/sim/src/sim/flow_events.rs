//! A flow's own events (its start, its endpoints' timers), each handed to
//! its transport's driver.

use super::Simulation;
use crate::flow::{MptcpEnd, Transport};
use latlab_proto::tfrc::TfrcSender;

impl Simulation {
    /// A flow opens: its connection, source or sender starts.
    #[inline]
    pub(super) fn on_flow_start(&mut self, flow: u32) {
        let now = self.now_ns;
        let f = &mut self.flows[flow as usize];
        f.started = true;
        match &mut f.transport {
            Transport::Tcp(t) if t.closed_loop.is_some() => self.next_transfer(flow),
            Transport::Tcp(t) => {
                t.sender.connect(now);
                self.poll_sender(flow);
            }
            Transport::Udp(u) => {
                u.source.start(now);
                self.poll_udp(flow);
            }
            Transport::Tfrc(t) => {
                // The sender's clock (initial rate, no-feedback
                // timer) starts with the flow, not at time zero.
                // TfrcSender holds no heap data: this allocates nothing.
                t.sender = TfrcSender::new(*t.sender.config(), now);
                self.poll_tfrc_sender(flow);
            }
            Transport::Mptcp(m) => {
                match &mut m.end {
                    // Subflows joining now open at connect; later
                    // ones when the sender's timer reaches their
                    // join time.
                    MptcpEnd::Direct(sender) => {
                        sender.connect(now);
                        m.join_due(now, now);
                    }
                    // The client side opens first; the server's
                    // connection when the proxy says.
                    MptcpEnd::Proxy(p) => p.proxy.connect(now),
                }
                self.poll_mptcp_sender(flow);
            }
        }
    }

    /// A sender's timer (RTO, pacing, a UDP source's next packet, an MPTCP join).
    #[inline]
    pub(super) fn on_sender_timer(&mut self, flow: u32) {
        let now = self.now_ns;
        match &mut self.flows[flow as usize].transport {
            Transport::Tcp(t) => {
                if t.sender_timer.fire(now) {
                    t.sender.on_timeout(now);
                    self.poll_sender(flow);
                }
            }
            Transport::Udp(u) => {
                if u.timer.fire(now) {
                    self.poll_udp(flow);
                }
            }
            Transport::Tfrc(t) => {
                if t.sender_timer.fire(now) {
                    t.sender.on_timeout(now);
                    self.poll_tfrc_sender(flow);
                }
            }
            Transport::Mptcp(m) => {
                if m.sender_timer.fire(now) {
                    let start = self.flows[flow as usize].start_ns;
                    let m = self.mptcp_mut(flow);
                    m.join_due(now, start);
                    match &mut m.end {
                        MptcpEnd::Direct(sender) => sender.on_timeout(now),
                        MptcpEnd::Proxy(p) => p.proxy.on_timeout(now),
                    }
                    self.poll_mptcp_sender(flow);
                }
            }
        }
    }

    /// A receiver's timer (delayed ACK, TFRC feedback).
    #[inline]
    pub(super) fn on_receiver_timer(&mut self, flow: u32) {
        let now = self.now_ns;
        match &mut self.flows[flow as usize].transport {
            Transport::Tcp(t) => {
                if t.receiver_timer.fire(now) {
                    t.receiver.on_timeout(now);
                    self.poll_receiver(flow);
                }
            }
            Transport::Tfrc(t) => {
                if t.receiver_timer.fire(now) {
                    t.receiver.on_timeout(now + t.receiver_clock_offset_ns);
                    self.poll_tfrc_receiver(flow);
                }
            }
            Transport::Mptcp(m) => {
                if m.receiver_timer.fire(now) {
                    m.receiver.on_timeout(now);
                    self.poll_mptcp_receiver(flow);
                }
            }
            Transport::Udp(_) => {}
        }
    }

    /// The timer of the server behind an MPTCP proxy.
    #[inline]
    pub(super) fn on_server_timer(&mut self, flow: u32) {
        let now = self.now_ns;
        let p = self.proxy_mut(flow);
        if p.server_timer.fire(now) {
            p.server.on_timeout(now);
            self.poll_server(flow);
        }
    }
}
