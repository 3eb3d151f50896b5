//! Dialogue tests of the sender: each test is an explicit exchange of
//! segments, in the style of smoltcp's `send!`/`recv!` socket tests. From
//! the sender's side: `send!` asserts what it sends now, `recv!` hands it
//! an ACK, `at!` moves the clock (firing the timers that are due).
//!
//! Sizing: MSS 1000 and ISS 0, so data segment `k` is `seq = 1 + 1000·k`
//! (S0 = 1, S1 = 1001, …); timestamps off (RTT from Karn's timed segment);
//! the handshake takes 100 ms, so SRTT = 100 ms, RTTVAR = 50 ms and RTO =
//! 300 ms (RFC 6298 (2.2)). The controller is the tests' Reno: ssthresh =
//! max(FlightSize/2, 2·SMSS).

use super::testutil::TestReno;
use super::*;
use crate::segment::{Flags, SackBlock, Segment, MAX_SACK_BLOCKS};
use crate::NS_PER_MS;

const MSS: u64 = 1000;

/// The sender and the current time.
struct Dialogue {
    s: TcpSender,
    now: u64,
}

fn cfg(recovery: Recovery) -> TcpConfig {
    let mut c = TcpConfig::ns2();
    c.mss_bytes = MSS as u32;
    c.recovery = recovery;
    c.sack = recovery.uses_sack();
    c.timestamps = false;
    c
}

impl Dialogue {
    /// Connect and answer the SYN 100 ms later with a window of
    /// `rwnd_bytes`: established at t = 100 ms, nothing sent yet.
    fn established(cfg: TcpConfig, app_bytes: Option<u64>, rwnd_bytes: u64) -> Self {
        let mut s = TcpSender::new(cfg, Box::new(TestReno), app_bytes);
        s.connect(0);
        let syn = s.poll_transmit(0).expect("SYN");
        assert!(syn.is_syn() && syn.seq == 0);
        let now = 100 * NS_PER_MS;
        let syn_ack = Segment {
            ack: 1,
            flags: Flags::SYN_ACK,
            rwnd_bytes,
            ..Default::default()
        };
        s.on_segment(now, &syn_ack);
        assert!(s.is_established());
        assert_eq!(s.rto_ns(), 300 * NS_PER_MS);
        Dialogue { s, now }
    }

    fn send(&mut self, seq: u64, len: u32, rexmit: bool) {
        let got = self.s.poll_transmit(self.now);
        let seg = got.unwrap_or_else(|| panic!("t={}: expected seq={seq} len={len}, sent nothing", self.now));
        assert_eq!(
            (seg.seq, seg.payload_bytes, seg.is_retransmit),
            (seq, len, rexmit),
            "t={}: (seq, len, rexmit) sent",
            self.now
        );
    }

    fn send_nothing(&mut self) {
        let got = self.s.poll_transmit(self.now);
        assert!(got.is_none(), "t={}: expected nothing, sent {got:?}", self.now);
    }

    fn recv(&mut self, ack: u64, sack: &[(u64, u64)], rwnd_bytes: u64) {
        assert!(sack.len() <= MAX_SACK_BLOCKS);
        let mut seg = Segment {
            ack,
            flags: Flags::ACK,
            rwnd_bytes,
            sack_len: sack.len() as u8,
            ..Default::default()
        };
        for (i, &(start, end)) in sack.iter().enumerate() {
            seg.sack[i] = SackBlock { start, end };
        }
        self.s.on_segment(self.now, &seg);
    }

    /// Move the clock to `t_ms` and fire whatever timer is due.
    fn at(&mut self, t_ms: u64) {
        let t = t_ms * NS_PER_MS;
        assert!(t >= self.now);
        self.now = t;
        if self.s.next_timeout().is_some_and(|d| d <= t) {
            self.s.on_timeout(t);
        }
    }
}

/// `send!(d, seq = S, len = L)`: the sender sends this new segment now;
/// `send!(d, seq = S, len = L, rexmit)`: a retransmission;
/// `send!(d, nothing)`: it sends nothing.
macro_rules! send {
    ($d:ident, nothing) => {
        $d.send_nothing()
    };
    ($d:ident, seq = $seq:expr, len = $len:expr) => {
        $d.send($seq, $len, false)
    };
    ($d:ident, seq = $seq:expr, len = $len:expr, rexmit) => {
        $d.send($seq, $len, true)
    };
}

/// `recv!(d, ack = A)`, `recv!(d, ack = A, sack = [(start, end), …])`,
/// optionally `rwnd = W` (default: 1 GiB): the sender receives this ACK.
macro_rules! recv {
    ($d:ident, ack = $ack:expr $(, sack = [$(($s:expr, $e:expr)),* $(,)?])? $(, rwnd = $w:expr)?) => {{
        let sack: &[(u64, u64)] = &[$($(($s, $e)),*)?];
        #[allow(unused_mut, unused_assignments)]
        let mut rwnd = LARGE_RWND_BYTES;
        $(rwnd = $w;)?
        $d.recv($ack, sack, rwnd)
    }};
}

/// `at!(d, t_ms)`: the clock moves to `t_ms`; due timers fire.
macro_rules! at {
    ($d:ident, $t_ms:expr) => {
        $d.at($t_ms)
    };
}

/// Data segment `k`'s sequence number.
const fn s(k: u64) -> u64 {
    1 + k * MSS
}

/// The initial window: S0..S9 at t = 100 ms.
fn send_initial_window(d: &mut Dialogue) {
    for k in 0..10 {
        send!(d, seq = s(k), len = 1000);
    }
    send!(d, nothing);
}

/// SACK recovery entered by the third duplicate ACK for S1, S2, S3 with
/// S0 lost: cwnd = ssthresh = 5000, S0 retransmitted (RFC 6675 (4.3)),
/// pipe = S4..S9 + the retransmission = 7000.
fn sack_recovery_after_s0_lost(app_bytes: Option<u64>) -> Dialogue {
    sack_recovery_after_s0_lost_with(cfg(Recovery::Sack), app_bytes)
}

fn sack_recovery_after_s0_lost_with(config: TcpConfig, app_bytes: Option<u64>) -> Dialogue {
    let mut d = Dialogue::established(config, app_bytes, LARGE_RWND_BYTES);
    send_initial_window(&mut d);
    at!(d, 200);
    recv!(d, ack = 1, sack = [(s(1), s(2))]);
    send!(d, nothing);
    recv!(d, ack = 1, sack = [(s(1), s(3))]);
    send!(d, nothing);
    assert_eq!(d.s.ca_state(), CaState::Disorder);
    recv!(d, ack = 1, sack = [(s(1), s(4))]);
    assert_eq!(d.s.ca_state(), CaState::Recovery);
    assert_eq!((d.s.cwnd_bytes(), d.s.ssthresh_bytes()), (5000, 5000));
    send!(d, seq = s(0), len = 1000, rexmit);
    assert_eq!(d.s.flight_bytes(), 7000);
    send!(d, nothing);
    d
}

#[test]
fn nextseg_rule_1_retransmits_the_first_lost_hole_before_new_data() {
    // S0 and S2 lost; S2 becomes lost (IsLost: DupThresh SACKed segments
    // above it) once S3, S4, S5 are SACKed.
    let mut d = Dialogue::established(cfg(Recovery::Sack), None, LARGE_RWND_BYTES);
    send_initial_window(&mut d);
    at!(d, 200);
    recv!(d, ack = 1, sack = [(s(1), s(2))]);
    recv!(d, ack = 1, sack = [(s(3), s(4)), (s(1), s(2))]);
    recv!(d, ack = 1, sack = [(s(3), s(5)), (s(1), s(2))]);
    assert!(d.s.in_recovery());
    send!(d, seq = s(0), len = 1000, rexmit);
    send!(d, nothing);
    // pipe = S5..S9 + S2 (not yet lost) + S0's retransmission = 7000.
    assert_eq!(d.s.flight_bytes(), 7000);
    recv!(d, ack = 1, sack = [(s(3), s(6)), (s(1), s(2))]);
    // S2 lost now: pipe = S6..S9 + S0' = 5000 = cwnd.
    assert_eq!(d.s.flight_bytes(), 5000);
    send!(d, nothing);
    recv!(d, ack = 1, sack = [(s(3), s(7)), (s(1), s(2))]);
    // pipe = 4000: room for one segment; rule 1 (the lost hole S2) wins
    // over rule 2 (new data S10 is waiting).
    send!(d, seq = s(2), len = 1000, rexmit);
    assert_eq!(d.s.flight_bytes(), 5000);
    send!(d, nothing);
}

#[test]
fn nextseg_rule_2_sends_new_data_when_no_hole_is_lost() {
    let mut d = sack_recovery_after_s0_lost(None);
    recv!(d, ack = 1, sack = [(s(1), s(5))]);
    recv!(d, ack = 1, sack = [(s(1), s(6))]);
    send!(d, nothing);
    recv!(d, ack = 1, sack = [(s(1), s(7))]);
    // pipe = S7..S9 + S0' = 4000: no hole below the highest SACK, so new data.
    send!(d, seq = s(10), len = 1000);
    send!(d, nothing);
    assert_eq!(d.s.snd_max(), s(11));
}

#[test]
fn nextseg_rule_3_retransmits_a_hole_not_yet_lost_when_no_new_data() {
    // Ten segments only; S0 and S7 lost. S7 has only S8 SACKed above it:
    // not lost by IsLost(), but with nothing new to send rule 3 resends it.
    let mut d = sack_recovery_after_s0_lost(Some(10 * MSS));
    recv!(d, ack = 1, sack = [(s(1), s(5))]);
    recv!(d, ack = 1, sack = [(s(1), s(6))]);
    recv!(d, ack = 1, sack = [(s(1), s(7))]);
    // Room for a segment (pipe 4000) but no hole, no data; rule 4 waits for
    // HighACK > RescueRxt.
    send!(d, nothing);
    recv!(d, ack = 1, sack = [(s(8), s(9)), (s(1), s(7))]);
    assert_eq!(d.s.flight_bytes(), 3000);
    send!(d, seq = s(7), len = 1000, rexmit);
    assert_eq!(d.s.flight_bytes(), 4000);
    // HighRxt is now S7: no hole above it, no data, no rescue yet.
    send!(d, nothing);
    assert_eq!(d.s.stats().rescue_retransmits, 0);
}

#[test]
fn nextseg_rule_4_rescues_the_tail_once_per_episode() {
    // Ten segments only; S0 and the last, S9, lost.
    let mut d = sack_recovery_after_s0_lost(Some(10 * MSS));
    for k in 5..=9 {
        recv!(d, ack = 1, sack = [(s(1), s(k))]);
        send!(d, nothing);
    }
    // S0's retransmission arrives: ack = S9, a partial ACK below the
    // RecoveryPoint (S10). HighACK (S9 − 1) > RescueRxt (S1 − 1): rule 4
    // retransmits the highest un-SACKed segment, once.
    at!(d, 300);
    recv!(d, ack = s(9));
    assert!(d.s.in_recovery());
    send!(d, seq = s(9), len = 1000, rexmit);
    assert_eq!(d.s.stats().rescue_retransmits, 1);
    send!(d, nothing);
    recv!(d, ack = s(10));
    assert_eq!(d.s.ca_state(), CaState::Open);
    assert!(d.s.is_complete());
}

#[test]
fn without_rescue_retransmission_the_lost_tail_waits_for_the_rto() {
    // The rule 4 dialogue above with `rescue_retransmission = false` (ns-3's
    // SACK sender): after the partial ACK nothing is sent, S9 goes out only
    // when the retransmission timer fires.
    let mut config = cfg(Recovery::Sack);
    config.rescue_retransmission = false;
    let mut d = sack_recovery_after_s0_lost_with(config, Some(10 * MSS));
    for k in 5..=9 {
        recv!(d, ack = 1, sack = [(s(1), s(k))]);
        send!(d, nothing);
    }
    at!(d, 300);
    recv!(d, ack = s(9));
    assert!(d.s.in_recovery());
    send!(d, nothing);
    assert_eq!(d.s.stats().rescue_retransmits, 0);
    let rto_ns = d.s.next_timeout().expect("the RTO is armed");
    at!(d, rto_ns.div_ceil(NS_PER_MS) - 1);
    send!(d, nothing);
    at!(d, rto_ns.div_ceil(NS_PER_MS));
    // Go-back-N from HighACK: the RTO resends S9, the one segment outstanding.
    send!(d, seq = s(9), len = 1000, rexmit);
    assert_eq!(d.s.stats().timeouts, 1);
}

#[test]
fn the_fast_retransmit_restarts_the_timer_unless_told_to_follow_rfc_6298() {
    // The deadline armed when the initial window left (RFC 6298 (5.1)).
    let mut fresh = Dialogue::established(cfg(Recovery::Sack), Some(10 * MSS), LARGE_RWND_BYTES);
    send_initial_window(&mut fresh);
    let armed_ns = fresh.s.next_timeout().expect("the RTO is armed");
    // Default (ns-2, Linux): the fast retransmission at 200 ms restarts it.
    let d = sack_recovery_after_s0_lost_with(cfg(Recovery::Sack), Some(10 * MSS));
    let restarted_ns = d.s.next_timeout().expect("the RTO is armed");
    assert!(restarted_ns > armed_ns && restarted_ns >= 200 * NS_PER_MS);
    // `rto_restart_on_fast_retransmit = false` (RFC 6298, ns-3): the
    // running timer is left alone and fires during the recovery, although
    // the retransmission is only just on its way.
    let mut config = cfg(Recovery::Sack);
    config.rto_restart_on_fast_retransmit = false;
    let mut d = sack_recovery_after_s0_lost_with(config, Some(10 * MSS));
    assert_eq!(d.s.next_timeout(), Some(armed_ns));
    at!(d, armed_ns.div_ceil(NS_PER_MS));
    send!(d, seq = s(0), len = 1000, rexmit);
    assert_eq!(d.s.stats().timeouts, 1);
}

#[test]
fn ssthresh_from_pipe_halves_the_pipe_and_is_recomputed_at_a_timeout_in_recovery() {
    // Default (RFC 5681 eq. (4), RFC 6675 (4.2)): ssthresh = FlightSize / 2
    // = 5000 on entry, and held when the timer fires during the recovery.
    let mut d = sack_recovery_after_s0_lost(Some(10 * MSS));
    let rto_ns = d.s.next_timeout().expect("the RTO is armed");
    at!(d, rto_ns.div_ceil(NS_PER_MS));
    send!(d, seq = s(0), len = 1000, rexmit);
    assert_eq!(d.s.stats().timeouts, 1);
    assert_eq!((d.s.cwnd_bytes(), d.s.ssthresh_bytes()), (1000, 5000));
    // `ssthresh_from_pipe` (ns-3 3.44's BytesInFlight()): at the third
    // duplicate ACK the pipe is S4..S9 = 6000 (S0 lost, S1..S3 SACKed), so
    // ssthresh = cwnd = 3000 ...
    let mut config = cfg(Recovery::Sack);
    config.ssthresh_from_pipe = true;
    let mut d = Dialogue::established(config, Some(10 * MSS), LARGE_RWND_BYTES);
    send_initial_window(&mut d);
    at!(d, 200);
    recv!(d, ack = 1, sack = [(s(1), s(2))]);
    recv!(d, ack = 1, sack = [(s(1), s(3))]);
    recv!(d, ack = 1, sack = [(s(1), s(4))]);
    assert_eq!(d.s.ca_state(), CaState::Recovery);
    assert_eq!((d.s.cwnd_bytes(), d.s.ssthresh_bytes()), (3000, 3000));
    send!(d, seq = s(0), len = 1000, rexmit);
    assert_eq!(d.s.flight_bytes(), 7000);
    send!(d, nothing);
    // ... and when the timer fires in the recovery it is recomputed from
    // the pipe then, S4..S9 + S0's retransmission: 7000 / 2.
    let rto_ns = d.s.next_timeout().expect("the RTO is armed");
    at!(d, rto_ns.div_ceil(NS_PER_MS));
    send!(d, seq = s(0), len = 1000, rexmit);
    assert_eq!(d.s.stats().timeouts, 1);
    assert_eq!((d.s.cwnd_bytes(), d.s.ssthresh_bytes()), (1000, 3500));
}

#[test]
fn an_ack_of_a_retransmission_keeps_the_backoff_unless_told_to_reset_it() {
    for reset in [false, true] {
        let mut config = cfg(Recovery::NewReno);
        config.rto_backoff_reset_on_ack = reset;
        let mut d = Dialogue::established(config, Some(10 * MSS), LARGE_RWND_BYTES);
        send_initial_window(&mut d);
        // RTO 300 ms from 100 ms: the timer fires at 400 ms, S0 goes again
        // and RTO backs off to 600 ms.
        at!(d, 400);
        send!(d, seq = s(0), len = 1000, rexmit);
        assert_eq!(d.s.rto_ns(), 600 * NS_PER_MS);
        // The ACK of the retransmission gives no RTT sample (Karn). RFC
        // 6298 keeps the backed-off 600 ms; ns-3's NewAck drops it to 300.
        at!(d, 500);
        recv!(d, ack = s(1));
        let want_ms = if reset { 300 } else { 600 };
        assert_eq!(d.s.rto_ns(), want_ms * NS_PER_MS);
        assert_eq!(d.s.next_timeout(), Some((500 + want_ms) * NS_PER_MS));
    }
}

#[test]
fn newreno_partial_acks_retransmit_deflate_and_restart_the_timer_once() {
    // Ten segments only; S0, S5 and S7 lost.
    let mut d = Dialogue::established(cfg(Recovery::NewReno), Some(10 * MSS), LARGE_RWND_BYTES);
    send_initial_window(&mut d);
    at!(d, 200);
    recv!(d, ack = 1);
    recv!(d, ack = 1);
    send!(d, nothing);
    at!(d, 202);
    recv!(d, ack = 1);
    // RFC 6582 §3.2 step 2: ssthresh = 5000, cwnd = ssthresh + 3·SMSS,
    // retransmit, and the timer restarts with the retransmission.
    assert_eq!((d.s.ssthresh_bytes(), d.s.cwnd_bytes()), (5000, 8000));
    send!(d, seq = s(0), len = 1000, rexmit);
    assert_eq!(d.s.next_timeout(), Some(502 * NS_PER_MS));
    // Duplicates for S4, S6, S8, S9 inflate cwnd (RFC 5681 §3.2 step 4).
    for _ in 0..4 {
        recv!(d, ack = 1);
    }
    assert_eq!(d.s.cwnd_bytes(), 12_000);
    send!(d, nothing);
    // First partial ACK (S0 filled the hole up to S5): retransmit S5,
    // deflate by the 5000 acked and add back one SMSS, restart the timer.
    at!(d, 300);
    recv!(d, ack = s(5));
    assert!(d.s.in_recovery());
    assert_eq!(d.s.cwnd_bytes(), 12_000 - 5000 + 1000);
    send!(d, seq = s(5), len = 1000, rexmit);
    send!(d, nothing);
    assert_eq!(d.s.next_timeout(), Some(600 * NS_PER_MS));
    // Second partial ACK: retransmit S7, deflate, the timer is left alone
    // (RFC 6582 §3.2 step 3: reset on the first partial ACK only).
    at!(d, 400);
    recv!(d, ack = s(7));
    assert_eq!(d.s.cwnd_bytes(), 8000 - 2000 + 1000);
    send!(d, seq = s(7), len = 1000, rexmit);
    assert_eq!(d.s.next_timeout(), Some(600 * NS_PER_MS));
    assert_eq!(d.s.stats().partial_acks, 2);
    // Full ACK: cwnd = min(ssthresh, max(FlightSize, SMSS) + SMSS); the
    // timer stops with nothing outstanding.
    at!(d, 500);
    recv!(d, ack = s(10));
    assert_eq!(d.s.ca_state(), CaState::Open);
    assert_eq!(d.s.cwnd_bytes(), 2000);
    assert_eq!(d.s.next_timeout(), None);
    assert_eq!(d.s.stats().retransmitted_segments, 3);
}

#[test]
fn zero_window_persist_probe_backs_off_and_window_update_resumes() {
    // The SYN-ACK opens a 3000-byte window: S0..S2 fill it.
    let mut d = Dialogue::established(cfg(Recovery::NewReno), Some(6 * MSS), 3 * MSS);
    for k in 0..3 {
        send!(d, seq = s(k), len = 1000);
    }
    send!(d, nothing);
    // All acked at t = 200 ms (RTT 100 ms: RTO 250 ms), window closed.
    at!(d, 200);
    recv!(d, ack = s(3), rwnd = 0);
    assert_eq!(d.s.rto_ns(), 250 * NS_PER_MS);
    send!(d, nothing);
    // Nothing outstanding, no retransmission timer: the persist timer.
    assert_eq!(d.s.next_timeout(), Some(450 * NS_PER_MS));
    at!(d, 449);
    send!(d, nothing);
    // It fires: one full segment goes regardless of the window.
    at!(d, 450);
    send!(d, seq = s(3), len = 1000);
    send!(d, nothing);
    assert_eq!(d.s.stats().window_probes, 1);
    // The receiver takes it but the window stays closed (sample 100 ms:
    // RTTVAR 28.125 ms, RTO 212.5 ms). The next probe waits twice the RTO.
    at!(d, 550);
    recv!(d, ack = s(4), rwnd = 0);
    send!(d, nothing);
    assert_eq!(d.s.rto_ns(), 212_500_000);
    assert_eq!(d.s.next_timeout(), Some(550 * NS_PER_MS + 2 * 212_500_000));
    at!(d, 974);
    send!(d, nothing);
    at!(d, 975);
    send!(d, seq = s(4), len = 1000);
    assert_eq!(d.s.stats().window_probes, 2);
    // The window opens: backoff reset, the last segment goes within it.
    at!(d, 1075);
    recv!(d, ack = s(5), rwnd = 2 * MSS);
    send!(d, seq = s(5), len = 1000);
    send!(d, nothing);
    recv!(d, ack = s(6), rwnd = 2 * MSS);
    assert!(d.s.is_complete());
    assert_eq!(d.s.stats().timeouts, 0);
}

#[test]
fn rto_during_sack_recovery_keeps_ssthresh_and_goes_back_n() {
    // S0 lost and its retransmission lost too: the timer fires in recovery.
    let mut d = sack_recovery_after_s0_lost(None);
    assert_eq!(d.s.next_timeout(), Some(500 * NS_PER_MS));
    for k in 5..=9 {
        recv!(d, ack = 1, sack = [(s(1), s(k))]);
    }
    // pipe = S9 + S0' = 2000: rule 2 sends S10..S12 until pipe = cwnd.
    for k in 10..=12 {
        send!(d, seq = s(k), len = 1000);
    }
    send!(d, nothing);
    at!(d, 499);
    send!(d, nothing);
    at!(d, 500);
    // RFC 5681 §3.1 LW = 1 SMSS; ssthresh held at the recovery's (Linux
    // tcp_enter_loss); recovery over; RTO doubled (RFC 6298 (5.5)).
    assert_eq!(d.s.ca_state(), CaState::Loss);
    assert_eq!((d.s.cwnd_bytes(), d.s.ssthresh_bytes()), (1000, 5000));
    assert_eq!(d.s.stats().timeouts, 1);
    assert_eq!(d.s.next_timeout(), Some(1100 * NS_PER_MS));
    // Go-back-N from snd_una in slow start.
    send!(d, seq = s(0), len = 1000, rexmit);
    send!(d, nothing);
    // S0 arrives; S10..S12 had arrived too. Still in Loss (below the
    // RecoveryPoint S13); go-back-N resends S9 and skips the SACKed
    // S10..S12; new data S13 would exceed cwnd (FlightSize 4000).
    at!(d, 600);
    recv!(d, ack = s(9), sack = [(s(10), s(13))]);
    assert_eq!(d.s.ca_state(), CaState::Loss);
    assert_eq!(d.s.cwnd_bytes(), 2000);
    send!(d, seq = s(9), len = 1000, rexmit);
    send!(d, nothing);
    // Everything outstanding at the timeout acked: open again.
    at!(d, 700);
    recv!(d, ack = s(13));
    assert_eq!(d.s.ca_state(), CaState::Open);
    assert_eq!(d.s.ssthresh_bytes(), 5000);
    assert_eq!(d.s.stats().timeouts, 1);
}

#[test]
fn rto_during_newreno_recovery_keeps_ssthresh_and_goes_back_n() {
    let mut d = Dialogue::established(cfg(Recovery::NewReno), None, LARGE_RWND_BYTES);
    send_initial_window(&mut d);
    at!(d, 200);
    for _ in 0..3 {
        recv!(d, ack = 1);
    }
    send!(d, seq = s(0), len = 1000, rexmit);
    send!(d, nothing);
    assert_eq!((d.s.ssthresh_bytes(), d.s.cwnd_bytes()), (5000, 8000));
    // The retransmission is lost; the timer fires in recovery.
    at!(d, 500);
    assert_eq!(d.s.ca_state(), CaState::Loss);
    assert_eq!((d.s.cwnd_bytes(), d.s.ssthresh_bytes()), (1000, 5000));
    send!(d, seq = s(0), len = 1000, rexmit);
    send!(d, nothing);
    // Lost again: a second timeout of the same segment holds ssthresh too
    // (RFC 5681 §3.1) and backs off again (600 ms, then 1200 ms).
    at!(d, 1100);
    assert_eq!(d.s.stats().timeouts, 2);
    assert_eq!((d.s.cwnd_bytes(), d.s.ssthresh_bytes()), (1000, 5000));
    assert_eq!(d.s.next_timeout(), Some(2300 * NS_PER_MS));
    send!(d, seq = s(0), len = 1000, rexmit);
    send!(d, nothing);
    // Go-back-N without SACK: every segment again, as slow start opens
    // the window.
    at!(d, 1200);
    recv!(d, ack = s(1));
    assert_eq!(d.s.ca_state(), CaState::Loss);
    send!(d, seq = s(1), len = 1000, rexmit);
    send!(d, seq = s(2), len = 1000, rexmit);
    send!(d, nothing);
}

#[test]
fn window_from_pipe_lets_sacked_data_release_new_segments() {
    for pipe in [false, true] {
        let mut config = cfg(Recovery::Sack);
        config.window_from_pipe = pipe;
        // Before fast retransmit: a duplicate ACK SACKs S1. FlightSize is
        // still 10 000 = cwnd; the pipe (ns-3's BytesInFlight()) is 9000, so
        // with `window_from_pipe` S10 goes out (limited transmit in effect).
        let mut d = Dialogue::established(config.clone(), Some(20 * MSS), LARGE_RWND_BYTES);
        send_initial_window(&mut d);
        at!(d, 200);
        recv!(d, ack = 1, sack = [(s(1), s(2))]);
        if pipe {
            send!(d, seq = s(10), len = 1000);
        }
        send!(d, nothing);

        // After a timeout: S0 and S5 lost, no ACK before the timer fires at
        // 400 ms (RTO 300 ms); S0 goes again with cwnd = 1 SMSS.
        let mut d = Dialogue::established(config, Some(20 * MSS), LARGE_RWND_BYTES);
        send_initial_window(&mut d);
        at!(d, 400);
        send!(d, seq = s(0), len = 1000, rexmit);
        send!(d, nothing);
        assert_eq!(d.s.ca_state(), CaState::Loss);
        // Its ACK covers S1..S4 and SACKs S6..S9: cwnd 2000 in slow start,
        // the go-back-N resends S5. FlightSize from S5 to S10 (5000) then
        // holds new data back; the pipe (S5's retransmission, 1000) lets S10
        // follow.
        at!(d, 500);
        recv!(d, ack = s(5), sack = [(s(6), s(10))]);
        assert_eq!(d.s.cwnd_bytes(), 2000);
        send!(d, seq = s(5), len = 1000, rexmit);
        if pipe {
            send!(d, seq = s(10), len = 1000);
        }
        send!(d, nothing);
    }
}

/// BBR on a fixed path (10 Mbit/s, 20 ms each way, a FIFO without limit),
/// from the sender's side: the states it passes through, in order, and
/// what it sends in each. STARTUP → DRAIN → PROBE_BW, pacing at the
/// model's rate once past the first 10 segments, with the bottleneck's
/// rate as the bandwidth estimate and a standing queue of at most about
/// one BDP once in PROBE_BW.
#[test]
fn bbr_goes_startup_drain_probe_bw_on_a_fixed_path() {
    use super::testutil::Harness;
    use crate::cc::BbrParams;
    use crate::cc::ControllerParams;

    let mut cfg = TcpConfig::linux();
    cfg.delayed_ack = None;
    let rate_bps = 10_000_000;
    let one_way = 20 * NS_PER_MS;
    let cc = BbrParams::default().build(cfg.mss_bytes as u64);
    let rwnd = Box::new(crate::tcp::FixedRwnd(cfg.rwnd_bytes));
    let mut h = Harness::with(cfg.clone(), cc, rwnd, None, rate_bps, one_way);
    h.start();
    let mut modes: Vec<(&str, u64)> = vec![("startup", 0)];
    while h.now < 3 * crate::NS_PER_SEC {
        assert!(h.step());
        let m = h.snd.cc().mode_name().expect("BBR names its mode");
        if modes.last().is_some_and(|(last, _)| *last != m) {
            modes.push((m, h.now));
        }
    }
    let names: Vec<&str> = modes.iter().map(|(m, _)| *m).collect();
    assert_eq!(&names[..3], &["startup", "drain", "probe_bw"], "{modes:?}");
    assert!(names[3..].iter().all(|m| *m == "probe_bw"), "{modes:?}");
    // DRAIN lasts a few rounds at most (its gain, 1/high_gain, drains
    // STARTUP's queue in about one).
    let drain_ns = modes[2].1 - modes[1].1;
    assert!(drain_ns < 5 * 2 * one_way, "drain took {drain_ns} ns");
    // The bottleneck's rate in payload bytes: 10 Mbit/s · 1448/1500.
    let link_payload_bps = rate_bps as f64 / 8.0 * 1448.0 / 1500.0;
    let pacing = h.snd.cc().pacing_rate_bytes_per_s() as f64;
    assert!(
        pacing > 0.7 * link_payload_bps && pacing < 1.3 * link_payload_bps,
        "pacing {pacing} vs link {link_payload_bps}"
    );
    // In PROBE_BW the sender is paced: data segments after the first 10
    // never leave back to back at line rate in a burst of more than the
    // cwnd budget, and the RTT stays within one BDP of queue of the
    // propagation delay (2·20 ms + serialization).
    let srtt = h.snd.srtt_ns();
    assert!(srtt < 2 * (2 * one_way + 2 * NS_PER_MS), "srtt {srtt}");
    let sent = h.data_sent().count();
    assert!(sent > 2000, "sent {sent}");
}
