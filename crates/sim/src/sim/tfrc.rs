//! TFRC and DFlow flows: the rate-based sender and the receiver's feedback
//! (RFC 5348), the receiver on its own offset clock.

use super::Simulation;
use crate::engine::Event;
use crate::flow::{TfrcFlow, Transport};
use crate::packet::Payload;
use latlab_proto::tfrc::{TfrcData, TfrcFeedback};
use latlab_qdisc::Ecn;

impl Simulation {
    pub(super) fn tfrc_mut(&mut self, flow: u32) -> &mut TfrcFlow {
        match &mut self.flows[flow as usize].transport {
            Transport::Tfrc(t) => t,
            _ => unreachable!("TFRC event for a non-TFRC flow"),
        }
    }

    // Each machine is polled after it is fed: data can only make the
    // receiver report, feedback can only change the sender's rate (and so
    // its next pacing slot).

    /// A data packet reaches the receiver; a measured flow records its
    /// one-way delay (the sender stamps with the simulation's clock).
    #[inline]
    pub(super) fn deliver_tfrc_data(&mut self, flow: u32, d: &TfrcData, measured: bool) {
        let now = self.now_ns;
        if measured {
            self.latency[flow as usize].record(now.saturating_sub(d.send_ts_ns));
        }
        let t = self.tfrc_mut(flow);
        t.receiver.on_data(now + t.receiver_clock_offset_ns, d);
        self.poll_tfrc_receiver(flow);
    }

    /// Feedback reaches the sender.
    #[inline]
    pub(super) fn deliver_tfrc_feedback(&mut self, flow: u32, fb: &TfrcFeedback) {
        let now = self.now_ns;
        self.tfrc_mut(flow).sender.on_feedback(now, fb);
        self.poll_tfrc_sender(flow);
    }

    /// Send the data packets the TFRC sender's pacer allows now, then arm
    /// its timer (the next pacing slot or the no-feedback timer).
    pub(super) fn poll_tfrc_sender(&mut self, flow: u32) {
        let now = self.now_ns;
        while let Some(d) = self.tfrc_mut(flow).sender.poll_transmit(now) {
            self.send_sized(flow, true, Payload::TfrcData(d), d.payload_bytes, Ecn::NotEct);
        }
        let t = self.tfrc_mut(flow);
        let deadline = t.sender.next_timeout().map(|d| d.max(now));
        if let Some(d) = t.sender_timer.needs_schedule(deadline) {
            self.queue.schedule(d, Event::SenderTimer { flow });
        }
    }

    /// Send the TFRC receiver's due feedback, then arm its feedback timer.
    /// The receiver runs on its own (offset) clock; its deadlines are
    /// converted back to simulation time.
    pub(super) fn poll_tfrc_receiver(&mut self, flow: u32) {
        let now = self.now_ns;
        loop {
            let t = self.tfrc_mut(flow);
            let Some(fb) = t.receiver.poll_feedback(now + t.receiver_clock_offset_ns) else {
                break;
            };
            // Feedback carries no payload: its fields fit in the header
            // bytes every TFRC packet has (TFRC_DEFAULT_HEADER_BYTES in
            // assemble/groups.rs).
            self.send_sized(flow, false, Payload::TfrcFeedback(fb), 0, Ecn::NotEct);
        }
        let t = self.tfrc_mut(flow);
        let offset = t.receiver_clock_offset_ns;
        let deadline = t
            .receiver
            .next_timeout()
            .map(|d| d.saturating_sub(offset).max(now));
        if let Some(d) = t.receiver_timer.needs_schedule(deadline) {
            self.queue.schedule(d, Event::ReceiverTimer { flow });
        }
    }
}
