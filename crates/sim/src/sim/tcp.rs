//! TCP flows: the sender and receiver state machines (latlab-proto) driven on
//! the agenda, and closed-loop users opening one connection per file.

use super::Simulation;
use crate::engine::Event;
use crate::flow::{TcpFlow, TimerSlot, Transfer, Transport};
use crate::packet::Payload;
use latlab_proto::tcp::{TcpReceiver, TcpSender};
use latlab_proto::Segment;
use latlab_qdisc::Ecn;

impl Simulation {
    pub(super) fn tcp_mut(&mut self, flow: u32) -> &mut TcpFlow {
        match &mut self.flows[flow as usize].transport {
            Transport::Tcp(t) => t,
            _ => unreachable!("TCP event for a non-TCP flow"),
        }
    }

    /// A segment reaches the receiver (`forward`, with its IP ECN field) or
    /// the sender; a new RTT sample of a measured flow is recorded.
    #[inline]
    pub(super) fn deliver_tcp(&mut self, flow: u32, forward: bool, seg: &Segment, ecn: Ecn, measured: bool) {
        let now = self.now_ns;
        let t = self.tcp_mut(flow);
        if forward {
            t.receiver.on_segment_ecn(now, seg, ecn);
            self.poll_receiver(flow);
        } else {
            let samples_before = measured.then(|| t.sender.stats().rtt_samples);
            t.sender.on_segment(now, seg);
            if samples_before.is_some_and(|n| t.sender.stats().rtt_samples != n) {
                let rtt_ns = t.sender.latest_rtt_ns();
                self.latency[flow as usize].record(rtt_ns);
            }
            self.poll_sender(flow);
        }
    }

    /// Send everything the sender wants to send now, then re-arm its timer.
    pub(super) fn poll_sender(&mut self, flow: u32) {
        let now = self.now_ns;
        while let Some(seg) = self.tcp_mut(flow).sender.poll_transmit(now) {
            let ecn = self.tcp_mut(flow).sender.ecn_codepoint(&seg);
            self.send(flow, true, Payload::Tcp(seg), ecn);
        }
        let t = self.tcp_mut(flow);
        let deadline = t.sender.next_timeout().map(|d| d.max(now));
        let schedule = t.sender_timer.needs_schedule(deadline);
        let user_done = t.closed_loop.is_some() && t.sender.is_complete();
        if let Some(d) = schedule {
            self.queue.schedule(d, Event::SenderTimer { flow });
        }
        if user_done {
            self.finish_transfer(flow);
        }
    }

    pub(super) fn poll_receiver(&mut self, flow: u32) {
        let now = self.now_ns;
        while let Some(seg) = self.tcp_mut(flow).receiver.poll_transmit(now) {
            // RFC 3168 §6.1.4: pure ACKs are Not-ECT.
            self.send(flow, false, Payload::Tcp(seg), Ecn::NotEct);
        }
        let t = self.tcp_mut(flow);
        let deadline = t.receiver.next_timeout().map(|d| d.max(now));
        if let Some(d) = t.receiver_timer.needs_schedule(deadline) {
            self.queue.schedule(d, Event::ReceiverTimer { flow });
        }
    }

    /// A closed-loop user's file is fully acknowledged: record it, think.
    pub(super) fn finish_transfer(&mut self, flow: u32) {
        let now = self.now_ns;
        let t = self.tcp_mut(flow);
        let (delivered, sender) = (t.receiver.stats().bytes_delivered, t.sender.stats());
        let completed = t.sender.completed_at_ns().unwrap_or(now);
        let Some(cl) = t.closed_loop.as_mut() else { return };
        cl.transfers.push(Transfer {
            start_ns: cl.current_start_ns,
            size_bytes: cl.current_size_bytes,
            fct_ns: completed.saturating_sub(cl.current_start_ns),
        });
        cl.past_bytes_delivered += delivered;
        cl.past_sender.accumulate(&sender);
        let think = cl.draws.think_ns();
        // A new connection replaces the old one; its late packets are
        // discarded by generation, its stale timers by their slots.
        let cfg = cl.cfg.clone();
        let cc = cl.cc.build(cfg.mss_bytes as u64);
        let rwnd = cl.rwnd.build(&cfg);
        let f = &mut self.flows[flow as usize];
        f.conn = f.conn.wrapping_add(1);
        let Transport::Tcp(t) = &mut f.transport else {
            return;
        };
        // While the user thinks, an unconnected sender holds the place: it
        // sends nothing, and the finished connection's counters (now in the
        // `past_*` totals) are not counted twice.
        t.sender = TcpSender::new(cfg.clone(), cc, Some(1));
        t.receiver = TcpReceiver::new(cfg.clone(), rwnd);
        t.sender_timer = TimerSlot::default();
        t.receiver_timer = TimerSlot::default();
        self.queue.schedule(now + think, Event::UserNext { flow });
    }

    /// A closed-loop user opens the connection for its next file.
    pub(super) fn next_transfer(&mut self, flow: u32) {
        let now = self.now_ns;
        let t = self.tcp_mut(flow);
        let Some(cl) = t.closed_loop.as_mut() else { return };
        let size = cl.draws.file_bytes();
        cl.current_start_ns = now;
        cl.current_size_bytes = size;
        let cfg = cl.cfg.clone();
        let cc = cl.cc.build(cfg.mss_bytes as u64);
        let t = self.tcp_mut(flow);
        t.sender = TcpSender::new(cfg, cc, Some(size));
        t.sender.connect(now);
        self.poll_sender(flow);
    }

    /// Put a TCP segment from an endpoint onto the first link of its path.
    // Always inlined, as `send_at` (see there).
    #[inline(always)]
    pub(super) fn send(&mut self, flow: u32, forward: bool, payload: Payload, ecn: Ecn) {
        let Payload::Tcp(seg) = payload else { return };
        self.send_sized(flow, forward, payload, seg.payload_bytes, ecn);
    }
}
