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
//!
//! Until the data outstanding at the reduction is acknowledged the sender
//! is in Linux's CWR state (`TcpSender::in_ecn_cwr`): a loss detected
//! then is retransmitted as usual but does not reduce the window again
//! (§6.1.2, "reduced only once in response to a series of dropped and/or
//! CE packets from a single window of data").

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
    /// Sequence number of the last zero-window probe sent as new data: it
    /// goes Not-ECT and without CWR (§6.1.6).
    window_probe_seq: Option<u64>,
}

impl TcpSender {
    /// The IP ECN field for `seg`, a segment this sender just returned from
    /// `poll_transmit`: ECT(0) for new data once ECN is agreed; Not-ECT for
    /// the SYN (§6.1.1), for retransmissions (§6.1.5: "the TCP data
    /// sender MUST NOT set either an ECT codepoint or the CWR bit on
    /// retransmitted data packets") and for zero-window probes (§6.1.6:
    /// "the TCP data sender MUST NOT set either an ECT codepoint or the CWR
    /// bit on window probe packets"). Pure ACKs are Not-ECT too (§6.1.4);
    /// the sender sends none, the receiver's are Not-ECT by its driver.
    pub fn ecn_codepoint(&self, seg: &Segment) -> Ecn {
        // Asked of every segment sent: without ECN, answer at once.
        if !self.ecn.on {
            return Ecn::NotEct;
        }
        let probe = self.ecn.window_probe_seq == Some(seg.seq);
        if seg.payload_bytes > 0 && !seg.is_retransmit && !seg.is_syn() && !probe {
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

    /// CWR on the first new data segment after a reduction (§6.1.2), but
    /// not on a zero-window probe (§6.1.6): a probe is remembered as one
    /// (Not-ECT) and leaves CWR to the next new segment.
    pub(super) fn ecn_mark_new_data(&mut self, seg: &mut Segment, window_probe: bool) {
        if window_probe {
            self.ecn.window_probe_seq = Some(seg.seq);
        } else if self.ecn.cwr_due {
            seg.flags = seg.flags | Flags::CWR;
            self.ecn.cwr_due = false;
        }
    }

    /// Linux's CWR state (`tcp_in_cwnd_reduction` with TCP_CA_CWR): an ECN
    /// reduction was made and the data outstanding then is not all
    /// acknowledged. A fast retransmit or a timeout now finds the window
    /// already reduced for this window of data (RFC 3168 §6.1.2) and does
    /// not reduce ssthresh again, as Linux's `tcp_enter_recovery` and
    /// `tcp_enter_loss` do not.
    pub(super) fn in_ecn_cwr(&self) -> bool {
        self.snd_una < self.ecn.recover
    }

    /// The recovery point (RFC 6582 `recover`, RFC 6675 RecoveryPoint) of a
    /// fast retransmit starting now: HighData, or within the window of an
    /// ECN reduction that window's end. Linux enters Recovery from CWR
    /// keeping CWR's `high_seq`: the loss belongs to the window already
    /// answered, and a loss of data sent after the reduction is a new
    /// congestion event with its own reduction (§6.1.2).
    pub(super) fn loss_recovery_point(&self) -> u64 {
        if self.in_ecn_cwr() {
            self.ecn.recover
        } else {
            self.snd_max
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
