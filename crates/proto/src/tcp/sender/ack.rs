//! Processing what the receiver sends: the SYN-ACK, then ACKs. An ACK is
//! handled in steps (`on_ack`), each its own function: acceptance and
//! window update, SACK scoreboard update, RTT sample, duplicate-ACK
//! classification, cumulative advance, the congestion-state step (loss
//! detection, or the recovery variant's step), the controller's hooks and
//! completion.

use super::state::{CongestionState, Handshake, Recovery, RecoveryVariant, SackRecovery};
use super::timers::Timer;
use super::TcpSender;
use crate::cc::{AckSample, CongestionEvent, RateSample};
use crate::segment::{Flags, Segment};
use crate::tcp::config::Recovery as RecoveryConfig;

impl TcpSender {
    /// Process a segment from the receiver (SYN-ACK or ACK).
    pub fn on_segment(&mut self, now_ns: u64, seg: &Segment) {
        self.last_now_ns = self.last_now_ns.max(now_ns);
        if !seg.has_ack() {
            return;
        }
        match self.handshake {
            Handshake::Closed => {}
            Handshake::SynSent {
                sent_ns,
                retransmitted,
                ..
            } => {
                if seg.is_syn() && seg.ack == 1 {
                    self.on_syn_ack(now_ns, seg, sent_ns, retransmitted);
                }
            }
            Handshake::Established => {
                if !seg.is_syn() {
                    self.on_ack(now_ns, seg);
                }
            }
        }
    }

    fn on_syn_ack(&mut self, now_ns: u64, seg: &Segment, syn_sent_ns: u64, syn_retransmitted: bool) {
        self.handshake = Handshake::Established;
        self.snd_una = 1;
        self.snd_nxt = 1;
        self.snd_max = 1;
        self.recover = 0; // RFC 6582: recover = ISS
        self.peer_rwnd = seg.rwnd_bytes;
        self.ecn_on_syn_ack(seg);
        self.timers.stop(Timer::Rto);
        self.handshake_rtt_ns = Some(now_ns.saturating_sub(syn_sent_ns));
        if self.cfg.timestamps {
            self.ts_recent = seg.ts_val_ns;
        }
        // RTT sample from the SYN: from the echoed timestamp when on (it
        // identifies the SYN that was answered), else only if the SYN was
        // not retransmitted (Karn).
        let sample = match seg.ts_ecr_ns {
            Some(ecr) if self.cfg.timestamps && ecr <= now_ns && ecr > 0 => Some(now_ns - ecr),
            _ if !syn_retransmitted => Some(now_ns.saturating_sub(syn_sent_ns)),
            _ => None,
        };
        match sample {
            Some(r) => {
                self.rtt.on_sample(r);
                self.stats.rtt_samples += 1;
                let s = AckSample {
                    now_ns,
                    rtt_ns: Some(r),
                    srtt_ns: self.rtt.srtt_ns(),
                    min_rtt_ns: self.rtt.min_rtt_ns(),
                    ..Default::default()
                };
                self.cc.on_rtt_sample(&self.ccs, &s);
            }
            None if syn_retransmitted => self.rtt.reinit_after_syn_loss(),
            None => {}
        }
        self.check_complete(now_ns);
    }

    fn on_ack(&mut self, now_ns: u64, seg: &Segment) {
        // RFC 793 / 5681: ignore ACKs of data never sent and old ACKs.
        if seg.ack > self.snd_max || seg.ack < self.snd_una {
            return;
        }
        self.stats.acks_received += 1;
        let old_rwnd = self.update_window(seg);
        let prior_flight = self.flight_bytes();
        let acked = seg.ack - self.snd_una;
        let newly_sacked = self.update_scoreboard(seg);
        let rtt_sample = self.take_rtt_sample(now_ns, seg, acked);
        let is_dupack = self.is_dupack(seg, acked, old_rwnd, newly_sacked);
        if acked > 0 {
            self.advance_una(seg.ack, acked);
            if self.cfg.rto_backoff_reset_on_ack {
                self.rtt.reset_backoff();
            }
        }
        if is_dupack && !self.cfg.recovery.uses_sack() {
            if let Some(rate) = self.rate.as_deref_mut() {
                rate.on_reno_dupack();
            }
        }
        let grow = match self.ca {
            CongestionState::Recovery(r) => {
                self.recovery_step(now_ns, r, acked, is_dupack);
                false
            }
            _ => self.detect_loss(now_ns, acked, is_dupack),
        };
        // RFC 3168 §6.1.2: no window growth on an ECN-Echo ACK.
        let grow = !self.on_ecn_echo(now_ns, seg) && grow;
        self.notify_controller(now_ns, seg, acked, prior_flight, rtt_sample, grow);
        self.check_complete(now_ns);
    }

    /// The peer's window (RFC 793 SND.WND) and TS.Recent (RFC 7323 §4.3).
    /// A window that opens stops the persist timer and its backoff. Returns
    /// the previous window (a window update is not a duplicate ACK).
    fn update_window(&mut self, seg: &Segment) -> u64 {
        let old_rwnd = self.peer_rwnd;
        self.peer_rwnd = seg.rwnd_bytes;
        if self.peer_rwnd > 0 {
            self.timers.stop(Timer::Persist);
            self.persist.backoff = 0;
        }
        if self.cfg.timestamps {
            if let Some(v) = seg.ts_val_ns {
                self.ts_recent = Some(self.ts_recent.map_or(v, |r| r.max(v)));
            }
        }
        old_rwnd
    }

    /// RFC 6675 Update(): record SACK blocks (clamped to the outstanding
    /// range). Returns the bytes newly SACKed.
    fn update_scoreboard(&mut self, seg: &Segment) -> u64 {
        if !self.cfg.recovery.uses_sack() {
            return 0;
        }
        let mut newly_sacked = 0;
        for b in seg.sack_blocks() {
            let start = b.start.max(seg.ack);
            let end = b.end.min(self.snd_max);
            newly_sacked += self.sb.mark_sacked(start, end);
        }
        newly_sacked
    }

    /// RTT sample: RFC 7323 §4 (every ACK of new data, from TSecr) or
    /// Karn's rule with one timed segment (RFC 6298 §3), fed to the RFC
    /// 6298 estimator.
    fn take_rtt_sample(&mut self, now_ns: u64, seg: &Segment, acked: u64) -> Option<u64> {
        if acked == 0 {
            return None;
        }
        let sample = if self.cfg.timestamps {
            seg.ts_ecr_ns
                .filter(|&ecr| ecr <= now_ns && ecr > 0)
                .map(|ecr| now_ns - ecr)
        } else {
            match self.timed {
                Some((end, sent)) if seg.ack >= end => {
                    self.timed = None;
                    Some(now_ns.saturating_sub(sent))
                }
                _ => None,
            }
        };
        if let Some(r) = sample {
            self.rtt.on_sample(r);
            self.stats.rtt_samples += 1;
        }
        sample
    }

    /// Duplicate ACK: RFC 5681 §2, or for SACK recovery RFC 6675 §2 (an ACK
    /// carrying SACK information for new octets).
    fn is_dupack(&mut self, seg: &Segment, acked: u64, old_rwnd: u64, newly_sacked: u64) -> bool {
        let dup_5681 = acked == 0
            && seg.payload_bytes == 0
            && !seg.flags.contains(Flags::FIN)
            && seg.rwnd_bytes == old_rwnd
            && self.snd_max > self.snd_una;
        let is_dupack = if self.cfg.recovery.uses_sack() {
            newly_sacked > 0 || (seg.sack_len == 0 && dup_5681)
        } else {
            dup_5681
        };
        if is_dupack {
            self.stats.dupacks_received += 1;
        }
        is_dupack
    }

    /// The cumulative ACK moves `snd_una` (RFC 793) and frees the
    /// scoreboard below it.
    fn advance_una(&mut self, ack: u64, acked: u64) {
        self.sb.ack_to(ack);
        self.snd_una = ack;
        self.snd_nxt = self.snd_nxt.max(ack);
        self.stats.bytes_acked += acked;
    }

    /// Outside recovery: restart the timer on new data acked (RFC 6298
    /// (5.3)), count duplicate ACKs and enter fast recovery at the
    /// threshold. Returns whether the ACK may grow cwnd.
    fn detect_loss(&mut self, now_ns: u64, acked: u64, is_dupack: bool) -> bool {
        if acked > 0 {
            self.restart_rto(now_ns);
            self.ca = match self.ca {
                // Loss lasts until everything outstanding at the RTO is acked.
                CongestionState::Loss { una_at_rto } if self.snd_una < self.recover => {
                    CongestionState::Loss { una_at_rto }
                }
                // A cumulative advance ends a run of duplicates.
                _ => CongestionState::Open,
            };
        }
        if !is_dupack {
            return acked > 0;
        }
        let dupacks = match self.ca {
            CongestionState::Open => 1,
            CongestionState::Disorder { dupacks } => dupacks.saturating_add(1),
            // Duplicates of an ACK below `recover` (RFC 6582 §3.2 step 2).
            CongestionState::Loss { .. } | CongestionState::Recovery(_) => return acked > 0,
        };
        self.ca = CongestionState::Disorder { dupacks };
        // RFC 6582 §3.2 step 2 / RFC 6675 §5: only for an ACK above
        // `recover`. RFC 5681 counts DupThresh duplicates; RFC 6675 also
        // enters when IsLost(HighACK + 1).
        let above_recover = self.snd_una > self.recover;
        let threshold = self.cfg.dupthresh;
        match self.cfg.recovery {
            RecoveryConfig::NewReno if dupacks == threshold && above_recover => {
                self.enter_newreno_recovery(now_ns);
                false
            }
            RecoveryConfig::Sack | RecoveryConfig::Fack
                if (dupacks >= threshold || self.sb.front_is_lost(self.loss_rule())) && above_recover =>
            {
                self.enter_sack_recovery(now_ns);
                false
            }
            _ => acked > 0,
        }
    }

    /// During fast recovery: the variant's step for this ACK. cwnd does not
    /// grow by the controller in recovery.
    fn recovery_step(&mut self, now_ns: u64, r: Recovery, acked: u64, is_dupack: bool) {
        match r.variant {
            RecoveryVariant::NewReno { partial_ack_seen } => {
                if acked == 0 {
                    if is_dupack && !self.cc_sets_cwnd() {
                        // RFC 5681 §3.2 step 4: inflate.
                        self.ccs.cwnd_bytes = self.ccs.cwnd_bytes.saturating_add(self.mss);
                    }
                } else if self.snd_una >= self.recover {
                    self.newreno_full_ack(now_ns);
                } else {
                    self.newreno_partial_ack(now_ns, acked, partial_ack_seen);
                }
            }
            RecoveryVariant::Sack(SackRecovery { high_rxt, .. }) => {
                if acked > 0 {
                    self.restart_rto(now_ns);
                }
                if self.snd_una >= self.recover {
                    // RFC 6675 §5 (A): leave recovery; keep the scoreboard.
                    self.exit_recovery(now_ns);
                } else {
                    // (B.1) done above; (B.2) SetPipe.
                    let pipe = self.sb.set_pipe(self.loss_rule(), high_rxt);
                    if let Some(s) = self.ca.sack_mut() {
                        s.pipe = pipe;
                    }
                }
            }
        }
    }

    /// RFC 6582 §3.2 step 3, full ACK, option (1): cwnd =
    /// min(ssthresh, max(FlightSize, SMSS) + SMSS).
    fn newreno_full_ack(&mut self, now_ns: u64) {
        if !self.cc_sets_cwnd() {
            let fs = self.flight_size().max(self.mss);
            self.ccs.cwnd_bytes = self.ccs.ssthresh_bytes.min(fs.saturating_add(self.mss));
        }
        self.exit_recovery(now_ns);
        self.restart_rto(now_ns);
    }

    /// RFC 6582 §3.2 step 3, partial ACK: retransmit the first unacked
    /// segment, deflate cwnd by the amount acked (adding back one SMSS if
    /// that was at least one), restart the timer on the first partial ACK
    /// only (the "Impatient" variant, RFC 6582 §4).
    fn newreno_partial_ack(&mut self, now_ns: u64, acked: u64, partial_ack_seen: bool) {
        self.stats.partial_acks += 1;
        if !self.cc_sets_cwnd() {
            let mut cwnd = self.ccs.cwnd_bytes.saturating_sub(acked);
            if acked >= self.mss {
                cwnd += self.mss;
            }
            self.ccs.cwnd_bytes = cwnd.max(self.mss);
        }
        self.ca = CongestionState::Recovery(Recovery {
            retransmit_una: true,
            variant: RecoveryVariant::NewReno {
                partial_ack_seen: true,
            },
        });
        if !partial_ack_seen {
            self.restart_rto(now_ns);
        }
    }

    fn exit_recovery(&mut self, now_ns: u64) {
        self.ca = CongestionState::Open;
        self.cc.on_recovery_exit(&mut self.ccs, now_ns);
    }

    /// RFC 6582 §3.2 steps 1-2 / RFC 5681 §3.2 steps 2-3. Within the window
    /// of an ECN reduction (`in_ecn_cwr`) the loss is retransmitted and
    /// recovered from, but ssthresh stays where the ECN-Echo put it and the
    /// episode ends with that window: RFC 3168 §6.1.2 reduces the window once
    /// per window of data for drops and CE marks together (Linux
    /// `tcp_enter_recovery`: no new ssthresh, and CWR's `high_seq` kept,
    /// while `tcp_in_cwnd_reduction`).
    fn enter_newreno_recovery(&mut self, now_ns: u64) {
        let in_ecn_cwr = self.in_ecn_cwr();
        self.recover = self.loss_recovery_point();
        if !in_ecn_cwr {
            self.ccs.ssthresh_bytes = self.cc.ssthresh_on_loss(
                &self.ccs,
                CongestionEvent::FastRetransmit,
                self.flight_size(),
                now_ns,
            );
        }
        if !self.cc_sets_cwnd() {
            self.ccs.cwnd_bytes = self
                .ccs
                .ssthresh_bytes
                .saturating_add(3u64.saturating_mul(self.mss));
        }
        self.ca = CongestionState::Recovery(Recovery {
            retransmit_una: true,
            variant: RecoveryVariant::NewReno {
                partial_ack_seen: false,
            },
        });
        self.restart_rto_for_fast_retransmit(now_ns);
        self.stats.fast_retransmits += 1;
    }

    /// RFC 6675 §5 step (4). ssthresh as in `enter_newreno_recovery`.
    fn enter_sack_recovery(&mut self, now_ns: u64) {
        // (4.1) RecoveryPoint = HighData (the ECN reduction's window end
        // within it, see `loss_recovery_point`).
        let in_ecn_cwr = self.in_ecn_cwr();
        self.recover = self.loss_recovery_point();
        // (4.2) ssthresh = cwnd = the controller's reduction of FlightSize;
        // with `ssthresh_from_pipe`, of the pipe with HighACK + 1 counted
        // lost (ns-3's EnterRecovery marks the head lost, then reads
        // BytesInFlight()).
        let flight = if self.cfg.ssthresh_from_pipe {
            let pipe = self.sb.set_pipe(self.loss_rule(), None);
            match self.sb.front() {
                Some(f) if !f.sacked() && !f.lost() => pipe.saturating_sub(f.len as u64),
                _ => pipe,
            }
        } else {
            self.flight_size()
        };
        if !in_ecn_cwr {
            self.ccs.ssthresh_bytes =
                self.cc
                    .ssthresh_on_loss(&self.ccs, CongestionEvent::FastRetransmit, flight, now_ns);
        }
        if !self.cc_sets_cwnd() {
            self.ccs.cwnd_bytes = self.ccs.ssthresh_bytes.max(self.mss);
        }
        // (4.3) retransmit HighACK + 1 (HighRxt and RescueRxt set when sent);
        // (4.4) SetPipe; the retransmission then adds its length (C.4).
        let pipe = self.sb.set_pipe(self.loss_rule(), None);
        self.ca = CongestionState::Recovery(Recovery {
            retransmit_una: true,
            variant: RecoveryVariant::Sack(SackRecovery {
                pipe,
                high_rxt: None,
                rescue_rxt: None,
            }),
        });
        self.restart_rto_for_fast_retransmit(now_ns);
        self.stats.fast_retransmits += 1;
    }

    /// Restart the retransmission timer as the fast retransmission leaves,
    /// as ns-2 (tcp-reno.cc `dupack_action`: `reset_rtx_timer`) and Linux
    /// (`tcp_xmit_retransmit_queue` re-arms it when the head is resent) do.
    /// RFC 6298 leaves a running timer alone, but then the timer, last
    /// restarted by the ACK before the hole, must outlast DupThresh
    /// duplicate ACKs plus the retransmission's trip through the queue: on a
    /// path whose standing queue keeps the RTT smooth, RTO ≈ SRTT and the
    /// timer fires first, a spurious timeout (and a go-back-N of the whole
    /// window) after the fast retransmit.
    /// With `rto_restart_on_fast_retransmit` false the timer keeps running
    /// as RFC 6298 (5.1) says (ns-3's behaviour).
    fn restart_rto_for_fast_retransmit(&mut self, now_ns: u64) {
        if self.cfg.rto_restart_on_fast_retransmit {
            self.restart_rto(now_ns);
        } else {
            self.arm_rto_if_idle(now_ns);
        }
    }

    /// The controller's hooks (Linux `tcp_congestion_ops`): an RTT or
    /// one-way-delay sample, and window growth for an ACK of new data
    /// outside recovery.
    fn notify_controller(
        &mut self,
        now_ns: u64,
        seg: &Segment,
        acked: u64,
        prior_flight: u64,
        rtt_sample: Option<u64>,
        grow: bool,
    ) {
        let one_way = match (seg.ts_val_ns, seg.ts_ecr_ns) {
            (Some(v), Some(e)) if self.cfg.timestamps && e > 0 => {
                Some((v as i128 - e as i128).clamp(i64::MIN as i128, i64::MAX as i128) as i64)
            }
            _ => None,
        };
        if self.rate.is_some() {
            self.notify_rate_controller(now_ns, seg, prior_flight, rtt_sample);
            return;
        }
        let grow = grow && acked > 0;
        if rtt_sample.is_none() && one_way.is_none() && !grow {
            return;
        }
        let sample = AckSample {
            now_ns,
            acked_bytes: acked,
            prior_flight_bytes: prior_flight,
            flight_bytes: self.flight_bytes(),
            rtt_ns: rtt_sample,
            srtt_ns: self.rtt.srtt_ns(),
            min_rtt_ns: self.rtt.min_rtt_ns(),
            one_way_delay_ns: one_way,
            app_limited: self.not_cwnd_limited(prior_flight),
        };
        if rtt_sample.is_some() || one_way.is_some() {
            self.cc.on_rtt_sample(&self.ccs, &sample);
        }
        if grow {
            self.cc.on_ack(&mut self.ccs, &sample);
            self.ccs.cwnd_bytes = self.ccs.cwnd_bytes.max(self.mss);
        }
    }

    /// A rate-based controller's ACK (Linux `tcp_cong_control` calling
    /// `cong_control` after `tcp_rate_gen`): the delivery-rate sample of
    /// this ACK, then the controller sets cwnd (and its pacing rate); it may
    /// mark the connection application-limited.
    #[cold]
    fn notify_rate_controller(
        &mut self,
        now_ns: u64,
        seg: &Segment,
        prior_flight: u64,
        rtt_sample: Option<u64>,
    ) {
        let min_rtt_ns = self.rtt.min_rtt_ns();
        let mut rs = RateSample {
            now_ns,
            // The echoed timestamp's RTT, kept only when no segment sent
            // once is delivered (the estimator times the ACK first; Linux
            // `tcp_ack_update_rtt`); Karn's timed segment is the RTO's.
            rtt_ns: rtt_sample.filter(|_| self.cfg.timestamps),
            srtt_ns: self.rtt.srtt_ns(),
            prior_in_flight_segs: prior_flight.div_ceil(self.mss),
            next_send_ns: self.pacer.release_ns(),
            ca_state: self.ca.ca_state(),
            ..Default::default()
        };
        let Some(rate) = self.rate.as_deref_mut() else {
            return;
        };
        rate.on_ack(seg.ack, seg.sack_blocks(), now_ns, min_rtt_ns, &mut rs);
        // Without SACK, segments the duplicate ACKs announced have left the
        // network (Linux's `sacked_out` of a Reno connection).
        let reno_sacked = rate.reno_sacked();
        rs.in_flight_segs = self.in_flight_segs().saturating_sub(reno_sacked);
        let mark_app_limited = self.cc.on_rate_sample(&mut self.ccs, &rs);
        self.ccs.cwnd_bytes = self.ccs.cwnd_bytes.max(self.mss);
        if mark_app_limited {
            let in_flight = self.in_flight_segs();
            if let Some(rate) = self.rate.as_deref_mut() {
                rate.mark_app_limited(in_flight);
            }
        }
    }
}
