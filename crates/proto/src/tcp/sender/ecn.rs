//! The sender's half of ECN (RFC 3168 §6.1): offer it in the SYN, send new
//! data ECT(0), answer ECN-Echo with one window reduction per window and
//! CWR on the next new data segment.
//!
//! The reduction goes through the controller's loss hook
//! ([`CongestionControl::ssthresh_on_loss`](crate::cc::CongestionControl::ssthresh_on_loss)
//! with [`CongestionEvent::Ecn`]): ssthresh as for a loss, cwnd set to it
//! at once (ns-2's `ecn_` response; Linux reaches the same window through
//! its CWR state gradually), nothing retransmitted. A rate-based controller
//! (BBR) sets cwnd itself and, as Linux's BBR v1, does not answer ECE.

use super::state::CongestionState;
use super::TcpSender;
use crate::cc::CongestionEvent;
use crate::segment::{Flags, Segment};
use crate::Ecn;

/// ECN state of one sender.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct EcnSender {
    /// Both ends agreed in the handshake (RFC 3168 §6.1.1).
    on: bool,
    /// snd_max at the last reduction: ECE on ACKs up to here is the echo
    /// of marks in the window already answered (§6.1.2).
    recover: u64,
    /// The next new data segment carries CWR (§6.1.2).
    cwr_due: bool,
}

impl TcpSender {
    /// The IP ECN field for `seg`, a segment this sender just returned from
    /// `poll_transmit`: ECT(0) for new data once ECN is agreed; Not-ECT for
    /// the SYN (§6.1.1) and for retransmissions (§6.1.5: "the TCP data
    /// sender MUST NOT set either an ECT codepoint or the CWR bit on
    /// retransmitted data packets").
    pub fn ecn_codepoint(&self, seg: &Segment) -> Ecn {
        if self.ecn.on && seg.payload_bytes > 0 && !seg.is_retransmit && !seg.is_syn() {
            Ecn::Ect0
        } else {
            Ecn::NotEct
        }
    }

    /// ECN was agreed in the handshake.
    pub fn ecn_on(&self) -> bool {
        self.ecn.on
    }

    /// An ECN-setup SYN carries ECE and CWR (§6.1.1).
    pub(super) fn ecn_syn_flags(&self) -> Flags {
        if self.cfg.ecn {
            Flags::SYN | Flags::ECE | Flags::CWR
        } else {
            Flags::SYN
        }
    }

    /// An ECN-setup SYN-ACK has ECE and not CWR (§6.1.1).
    pub(super) fn ecn_on_syn_ack(&mut self, seg: &Segment) {
        self.ecn.on = self.cfg.ecn && seg.flags.contains(Flags::ECE) && !seg.flags.contains(Flags::CWR);
    }

    /// CWR on the first new data segment after a reduction (§6.1.2).
    pub(super) fn ecn_mark_cwr(&mut self, seg: &mut Segment) {
        if self.ecn.cwr_due {
            seg.flags = seg.flags | Flags::CWR;
            self.ecn.cwr_due = false;
        }
    }

    /// RFC 3168 §6.1.2: an ACK with ECE is a congestion event for the
    /// controller, answered "at most once per window of data": not while
    /// the data outstanding at the last reduction (by ECE, or by a loss:
    /// fast recovery or a timeout has already reduced this window) is not
    /// yet all acknowledged. Nothing is retransmitted. Returns whether the
    /// ACK carried ECE (then it must not grow the window).
    pub(super) fn on_ecn_echo(&mut self, now_ns: u64, seg: &Segment) -> bool {
        if !self.ecn.on || !seg.flags.contains(Flags::ECE) {
            return false;
        }
        self.stats.ece_acks_received += 1;
        let answered = self.snd_una <= self.ecn.recover.max(self.recover);
        let in_loss = matches!(
            self.ca,
            CongestionState::Recovery(_) | CongestionState::Loss { .. }
        );
        if answered || in_loss || self.cc_sets_cwnd() {
            return true;
        }
        let flight = self.flight_size();
        self.ccs.ssthresh_bytes = self
            .cc
            .ssthresh_on_loss(&self.ccs, CongestionEvent::Ecn, flight, now_ns);
        self.ccs.cwnd_bytes = self.ccs.ssthresh_bytes.max(self.mss);
        self.ecn.recover = self.snd_max;
        self.ecn.cwr_due = true;
        self.stats.ecn_reductions += 1;
        true
    }
}
