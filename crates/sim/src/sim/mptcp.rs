//! MPTCP flows: the connection-level sender (or an MPTCP-to-TCP proxy with the
//! server behind it) and receiver, each segment on its subflow's path.

use super::Simulation;
use crate::engine::Event;
use crate::flow::{MptcpEnd, MptcpFlow, ProxyEnd, Transport, UPSTREAM_SUBFLOW};
use crate::packet::Payload;
use latlab_link::RouteEcn;
use latlab_proto::mptcp::{MptcpSender, ProxyOutput};
use latlab_proto::Segment;
use latlab_qdisc::Ecn;

impl Simulation {
    pub(super) fn mptcp_mut(&mut self, flow: u32) -> &mut MptcpFlow {
        match &mut self.flows[flow as usize].transport {
            Transport::Mptcp(m) => m,
            _ => unreachable!("MPTCP event for a non-MPTCP flow"),
        }
    }

    pub(super) fn proxy_mut(&mut self, flow: u32) -> &mut ProxyEnd {
        match &mut self.mptcp_mut(flow).end {
            MptcpEnd::Proxy(p) => p,
            MptcpEnd::Direct(_) => unreachable!("proxy event for an MPTCP flow without a proxy"),
        }
    }

    /// A segment on subflow `subflow` reaches its end: the proxy (from the
    /// server upstream or from the client's subflows), the server, the
    /// MPTCP receiver or the MPTCP sender.
    #[inline]
    pub(super) fn deliver_mptcp(
        &mut self,
        flow: u32,
        subflow: u8,
        forward: bool,
        seg: &Segment,
        measured: bool,
    ) {
        let now = self.now_ns;
        let i = subflow as usize;
        let f = &mut self.flows[flow as usize];
        let Transport::Mptcp(m) = &mut f.transport else {
            return;
        };
        match (&mut m.end, forward) {
            (MptcpEnd::Proxy(px), true) if subflow == UPSTREAM_SUBFLOW => {
                px.proxy.on_upstream_segment(now, seg);
                self.poll_proxy(flow);
            }
            (MptcpEnd::Proxy(px), false) if subflow == UPSTREAM_SUBFLOW => {
                px.server.on_segment(now, seg);
                self.poll_server(flow);
            }
            (end, true) => {
                m.receiver.on_segment(now, i, seg);
                // Through a proxy, a finite transfer ends when the client
                // has every byte.
                if let (MptcpEnd::Proxy(_), Some(size), None) = (end, f.size_bytes, m.completed_at_ns) {
                    if m.receiver.bytes_delivered() >= size {
                        m.completed_at_ns = Some(now);
                    }
                }
                self.poll_mptcp_receiver(flow);
            }
            (MptcpEnd::Direct(_), false) => self.deliver_mptcp_ack(flow, i, seg, measured),
            (MptcpEnd::Proxy(px), false) => {
                px.proxy.on_subflow_segment(now, i, seg);
                self.poll_proxy(flow);
            }
        }
    }

    /// An ACK on subflow `i` reaches the MPTCP sender; a new RTT sample of
    /// that subflow of a measured flow is recorded.
    fn deliver_mptcp_ack(&mut self, flow: u32, i: usize, seg: &Segment, measured: bool) {
        let now = self.now_ns;
        let MptcpEnd::Direct(sender) = &mut self.mptcp_mut(flow).end else {
            return;
        };
        let rtt_samples = |s: &MptcpSender| {
            s.subflow(i)
                .map(|sf| (sf.tcp().stats().rtt_samples, sf.tcp().latest_rtt_ns()))
        };
        let before = if measured { rtt_samples(sender) } else { None };
        sender.on_segment(now, i, seg);
        if let (Some((n0, _)), Some((n, rtt_ns))) = (before, rtt_samples(sender)) {
            if n != n0 {
                self.latency[flow as usize].record(rtt_ns);
            }
        }
        self.poll_mptcp_sender(flow);
    }

    /// Send every segment the MPTCP sender (or the proxy) wants to send
    /// now, each on its subflow's path (a proxy's ACKs to the server on
    /// the upstream route), then arm its timer for the earliest of its
    /// deadlines, the next subflow's join time and the server's start.
    pub(super) fn poll_mptcp_sender(&mut self, flow: u32) {
        let now = self.now_ns;
        if let MptcpEnd::Proxy(_) = self.mptcp_mut(flow).end {
            self.poll_proxy(flow);
            return;
        }
        loop {
            let MptcpEnd::Direct(sender) = &mut self.mptcp_mut(flow).end else {
                return;
            };
            let Some((i, seg)) = sender.poll_transmit(now) else {
                break;
            };
            self.send_mptcp(flow, true, i, seg);
        }
        let start = self.flows[flow as usize].start_ns;
        let m = self.mptcp_mut(flow);
        let deadline = match (m.sender().next_timeout(), m.next_join_ns(start)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(d) = m.sender_timer.needs_schedule(deadline.map(|d| d.max(now))) {
            self.queue.schedule(d, Event::SenderTimer { flow });
        }
    }

    /// The proxy's side of [`Self::poll_mptcp_sender`]; starts the server's
    /// connection once the proxy's SYN delay has passed.
    pub(super) fn poll_proxy(&mut self, flow: u32) {
        let now = self.now_ns;
        loop {
            match self.proxy_mut(flow).proxy.poll_transmit(now) {
                Some(ProxyOutput::Upstream(seg)) => self.send_upstream(flow, false, seg),
                Some(ProxyOutput::Subflow(i, seg)) => self.send_mptcp(flow, true, i, seg),
                None => break,
            }
        }
        let p = self.proxy_mut(flow);
        let connect_at = p.proxy.upstream_connect_at().filter(|_| !p.server_connected);
        if connect_at.is_some_and(|t| t <= now) {
            p.server_connected = true;
            p.server.connect(now);
            self.poll_server(flow);
        }
        let m = self.mptcp_mut(flow);
        let MptcpEnd::Proxy(p) = &m.end else { return };
        let connect_at = p.proxy.upstream_connect_at().filter(|_| !p.server_connected);
        let deadline = [p.proxy.next_timeout(), connect_at].into_iter().flatten().min();
        if let Some(d) = m.sender_timer.needs_schedule(deadline.map(|d| d.max(now))) {
            self.queue.schedule(d, Event::SenderTimer { flow });
        }
    }

    /// Send what the server behind a proxy wants to send, arm its timer.
    pub(super) fn poll_server(&mut self, flow: u32) {
        let now = self.now_ns;
        while let Some(seg) = self.proxy_mut(flow).server.poll_transmit(now) {
            self.send_upstream(flow, true, seg);
        }
        let p = self.proxy_mut(flow);
        let deadline = p.server.next_timeout().map(|d| d.max(now));
        if let Some(d) = p.server_timer.needs_schedule(deadline) {
            self.queue.schedule(d, Event::ServerTimer { flow });
        }
    }

    /// Put a segment of the server↔proxy TCP connection on its route.
    pub(super) fn send_upstream(&mut self, flow: u32, forward: bool, seg: latlab_proto::Segment) {
        let p = self.proxy_mut(flow);
        let route_pos = if forward { p.up_fwd_route } else { p.up_rev_route };
        self.send_at(
            flow,
            forward,
            Payload::Tcp(seg),
            seg.payload_bytes,
            RouteEcn::new(route_pos, Ecn::NotEct),
            UPSTREAM_SUBFLOW,
        );
    }

    pub(super) fn poll_mptcp_receiver(&mut self, flow: u32) {
        let now = self.now_ns;
        while let Some((i, seg)) = self.mptcp_mut(flow).receiver.poll_transmit(now) {
            self.send_mptcp(flow, false, i, seg);
        }
        let m = self.mptcp_mut(flow);
        let deadline = m.receiver.next_timeout().map(|d| d.max(now));
        if let Some(d) = m.receiver_timer.needs_schedule(deadline) {
            self.queue.schedule(d, Event::ReceiverTimer { flow });
        }
    }

    /// Put an MPTCP segment of subflow `i` onto the first link of its path.
    // Always inlined into the poll loops, as `send` is into TCP's: with
    // three callers the compiler would keep it apart, and the call with its
    // copy of the segment costs as much as the send itself.
    #[inline(always)]
    pub(super) fn send_mptcp(&mut self, flow: u32, forward: bool, i: usize, seg: latlab_proto::Segment) {
        let (fwd_route, rev_route) = self.mptcp_mut(flow).subflow_routes[i];
        let route_pos = if forward { fwd_route } else { rev_route };
        self.send_at(
            flow,
            forward,
            Payload::Tcp(seg),
            seg.payload_bytes,
            RouteEcn::new(route_pos, Ecn::NotEct),
            i as u8,
        );
    }
}
