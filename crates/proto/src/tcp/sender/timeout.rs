//! Timer expiry: the persist timer's zero-window probe, the SYN's
//! retransmission, and the data retransmission timeout (RFC 6298 §5, RFC
//! 5681 §3.1).

use super::state::{CongestionState, Handshake};
use super::timers::Timer;
use super::TcpSender;
use crate::cc::CongestionEvent;

impl TcpSender {
    /// Handle expired timers; does nothing if nothing is due.
    pub fn on_timeout(&mut self, now_ns: u64) {
        self.last_now_ns = self.last_now_ns.max(now_ns);
        if self.timers.take_expired(Timer::Persist, now_ns) {
            self.persist.backoff = self.persist.backoff.saturating_add(1);
            if self.handshake == Handshake::Established && self.snd_max == self.snd_una {
                self.persist.probe_due = true;
            }
        }
        if !self.timers.take_expired(Timer::Rto, now_ns) {
            return;
        }
        match &mut self.handshake {
            Handshake::Closed => {}
            Handshake::SynSent { syn_due, .. } => {
                // RFC 6298 (5.4)-(5.6) for the SYN.
                *syn_due = true;
                self.stats.syn_timeouts += 1;
                self.rtt.backoff();
                self.timers
                    .set(Timer::Rto, now_ns.saturating_add(self.rtt.rto_ns()));
            }
            Handshake::Established => self.on_rto(now_ns),
        }
    }

    fn on_rto(&mut self, now_ns: u64) {
        if self.snd_una >= self.snd_max {
            return; // RFC 6298 (5.2): nothing outstanding, timer off.
        }
        self.stats.timeouts += 1;
        // RFC 5681 §3.1 eq. (4), unless this segment was already
        // retransmitted by the timer, in which case ssthresh is held. Held
        // too when the timer fires during fast recovery, whose entry already
        // reduced ssthresh for this loss (as Linux's tcp_enter_loss does):
        // FlightSize then still spans the window that overflowed, and half of
        // it would raise ssthresh above the recovery's, so that slow start
        // overshoots again and the flow cycles through loss and timeout.
        // With `ssthresh_from_pipe` (ns-3's ReTxTimeout) it is recomputed
        // there, from the pipe, which in recovery is about cwnd.
        // Held as well within the window of an ECN reduction (RFC 3168
        // §6.1.2: "should not decrease the slow-start threshold, ssthresh, if
        // it has been decreased within the last round trip time"; Linux's
        // tcp_enter_loss in TCP_CA_CWR before high_seq is acked).
        let hold_ssthresh = match self.ca {
            CongestionState::Recovery(_) => !self.cfg.ssthresh_from_pipe,
            CongestionState::Loss { una_at_rto } => una_at_rto == self.snd_una,
            CongestionState::Open | CongestionState::Disorder { .. } => {
                self.in_ecn_cwr() && !self.cfg.ssthresh_from_pipe
            }
        };
        if let Some(rate) = self.rate.as_deref_mut() {
            rate.mark_all_lost();
        }
        // A rate-based controller hears of every timeout (Linux calls BBR's
        // `set_state(TCP_CA_Loss)` on each).
        if !hold_ssthresh || self.rate.is_some() {
            let flight = if self.cfg.ssthresh_from_pipe {
                self.pipe_for_ssthresh()
            } else {
                self.flight_size()
            };
            self.ccs.ssthresh_bytes =
                self.cc
                    .ssthresh_on_loss(&self.ccs, CongestionEvent::Timeout, flight, now_ns);
        }
        // Loss window LW = 1 SMSS.
        self.ccs.cwnd_bytes = self.mss;
        // RFC 6582 §4 / RFC 6675 §5.1: recover = RecoveryPoint = HighData;
        // any recovery (and its pending fast retransmit) ends.
        self.recover = self.snd_max;
        self.ca = CongestionState::Loss {
            una_at_rto: self.snd_una,
        };
        // Go-back-N from snd_una, in slow start.
        self.snd_nxt = self.snd_una;
        self.timed = None;
        if self.cfg.recovery.uses_sack() && self.sb.front().is_some_and(|r| r.sacked()) {
            self.sb.clear_sacks(); // the receiver reneged (RFC 2018 §8)
        }
        // RFC 6298 (5.5), (5.6).
        self.rtt.backoff();
        self.timers
            .set(Timer::Rto, now_ns.saturating_add(self.rtt.rto_ns()));
    }
}
