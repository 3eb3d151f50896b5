//! BBR version 1 as Linux's `net/ipv4/tcp_bbr.c` behaves (Cardwell et al.,
//! "BBR: Congestion-Based Congestion Control", ACM Queue 14(5), 2016).
//!
//! A model-based controller: on every ACK it updates a model of the path
//! from the delivery-rate sample ([`RateSample`], the sender's estimator of
//! draft-cheng-iccrg-delivery-rate-estimation), then sets the pacing rate
//! and cwnd from it:
//!
//!   bw      = windowed max of delivery-rate samples over 10 round trips
//!   min_rtt = windowed min of RTT samples over 10 s
//!   pacing_rate = pacing_gain · bw · 99 %
//!   cwnd        = cwnd_gain · bw · min_rtt + ACK-aggregation allowance
//!                 + quantization budget
//!
//! through the states STARTUP → DRAIN → PROBE_BW ⇄ PROBE_RTT. Every rule
//! below names the `tcp_bbr.c` function it follows (the kernel tree the
//! functions were read from: torvalds/linux, blob of commit 02dc96ef).
//! Units are Linux's: packets (the sender's segments), bandwidth in packets
//! per µs scaled by `BW_UNIT` = 2^24, gains scaled by `BBR_UNIT` = 256.
//!
//! Where latlab differs, and why:
//! - The PROBE_BW start phase is drawn from the flow's own seeded stream
//!   ([`CongestionControl::set_seed`]), so runs repeat; the rule is Linux's
//!   (`bbr_reset_probe_bw_mode`: any phase but the 3/4 one).
//! - `rs->is_ack_delayed` (an RTT sample inflated by a delayed ACK, which
//!   may not refresh an expired min_rtt) is not known to the sender and is
//!   taken as false.
//! - `bbr_undo_cwnd` has no caller: latlab's sender does not undo
//!   spurious recoveries.
//! - Time is ns; Linux's µs and jiffies (`bbr_check_probe_rtt_done`,
//!   `bbr_update_min_rtt`) become ns comparisons.

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

use super::minmax::WindowedMax;
use super::{
    AckSample, CcState, CongestionControl, CongestionEvent, ControllerParams, Knob, ModelSample, RateSample,
};
use crate::knobs::{knob_flag, Knobs};
use crate::tcp::CaState;
use crate::{TimeNs, NS_PER_MS, NS_PER_SEC};

/// Bandwidth unit: packets per µs << 24 (`BW_SCALE`).
const BW_UNIT: u128 = 1 << 24;
/// Gain unit (`BBR_SCALE` = 8).
const BBR_UNIT: u64 = 256;
/// Phases of the PROBE_BW pacing-gain cycle (`CYCLE_LEN`).
const CYCLE_LEN: usize = 8;
/// The bw filter's window in round trips (`bbr_bw_rtts` = CYCLE_LEN + 2).
const BW_RTTS: u64 = CYCLE_LEN as u64 + 2;
/// The min_rtt filter's window (`bbr_min_rtt_win_sec` = 10).
const MIN_RTT_WIN_NS: u64 = 10 * NS_PER_SEC;
/// Least time at the minimum cwnd in PROBE_RTT (`bbr_probe_rtt_mode_ms`).
const PROBE_RTT_MODE_NS: u64 = 200 * NS_PER_MS;
/// Below this pacing rate one segment per TSO burst (`bbr_min_tso_rate`,
/// bit/s).
const MIN_TSO_RATE_BPS: u64 = 1_200_000;
/// Pace about 1 % below the estimated bw (`bbr_pacing_margin_percent`).
const PACING_MARGIN_PERCENT: u64 = 1;
/// 2/ln 2, the smallest gain that doubles the sending rate each round
/// (`bbr_high_gain`).
pub const HIGH_GAIN: u64 = BBR_UNIT * 2885 / 1000 + 1;
/// 1/high_gain, to drain STARTUP's queue in about one round
/// (`bbr_drain_gain`).
pub const DRAIN_GAIN: u64 = BBR_UNIT * 1000 / 2885;
/// PROBE_BW's cwnd gain (`bbr_cwnd_gain`).
pub const CWND_GAIN: u64 = BBR_UNIT * 2;
/// The PROBE_BW pacing-gain cycle (`bbr_pacing_gain`): probe at 5/4,
/// drain at 3/4, cruise at 1 for six phases.
pub const PACING_GAIN: [u64; CYCLE_LEN] = [
    BBR_UNIT * 5 / 4,
    BBR_UNIT * 3 / 4,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
];
/// The start phase is drawn over this many phases (`bbr_cycle_rand`).
const CYCLE_RAND: usize = 7;
/// Least cwnd, and PROBE_RTT's cwnd (`bbr_cwnd_min_target`).
pub const CWND_MIN_TARGET: u64 = 4;
/// bw must grow by 25 % per round to keep STARTUP going
/// (`bbr_full_bw_thresh`)...
const FULL_BW_THRESH: u64 = BBR_UNIT * 5 / 4;
/// ...for this many rounds in a row (`bbr_full_bw_cnt`).
const FULL_BW_CNT: u32 = 3;
/// Long-term sampling: least rounds per interval (`bbr_lt_intvl_min_rtts`),
const LT_INTVL_MIN_RTTS: u32 = 4;
/// lost/delivered ≥ 50/256 ≈ 20 % makes an interval lossy
/// (`bbr_lt_loss_thresh`),
const LT_LOSS_THRESH: u64 = 50;
/// two intervals within 1/8 (`bbr_lt_bw_ratio`)
const LT_BW_RATIO: u64 = BBR_UNIT / 8;
/// or 4 kbit/s (`bbr_lt_bw_diff`, bytes/s) of each other are consistent,
const LT_BW_DIFF_BYTES_PER_S: u64 = 4000 / 8;
/// and lt_bw is then used for 48 rounds (`bbr_lt_bw_max_rtts`).
const LT_BW_MAX_RTTS: u32 = 48;
/// ACK aggregation: gain on extra_acked (`bbr_extra_acked_gain`),
const EXTRA_ACKED_GAIN: u64 = BBR_UNIT;
/// its window in rounds (`bbr_extra_acked_win_rtts`),
const EXTRA_ACKED_WIN_RTTS: u32 = 5;
/// the epoch's reset threshold (`bbr_ack_epoch_acked_reset_thresh`),
const ACK_EPOCH_ACKED_RESET_THRESH: u64 = 1 << 20;
/// and its cap in time of bw (`bbr_extra_acked_max_us`).
const EXTRA_ACKED_MAX_US: u128 = 100 * 1000;
/// Linux's initial window (`TCP_INIT_CWND`).
const TCP_INIT_CWND: u64 = 10;
/// The TSO autosizing cap: `GSO_MAX_SIZE - 1 - MAX_TCP_HEADER` (64 KiB
/// less Linux's 320-byte header reserve on x86-64).
const TSO_MAX_BYTES: u64 = 65_536 - 1 - 320;
/// `sk_pacing_shift`: TSO bursts of about 1 ms of the pacing rate.
const PACING_SHIFT: u32 = 10;

/// BBR's state machine (`enum bbr_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BbrMode {
    /// Ramp up the sending rate rapidly to fill the pipe.
    Startup,
    /// Drain the queue STARTUP created.
    Drain,
    /// Pace around the estimated bw, cycling the gain to probe and share.
    ProbeBw,
    /// Cut inflight to the minimum to measure min_rtt afresh.
    ProbeRtt,
}

/// BBR's constants are Linux's module constants; the one switch turns off
/// the long-term (policer) bandwidth sampling, which ns-3's TcpBbr lacks,
/// to compare with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BbrParams {
    /// `bbr_lt_bw_sampling` runs (Linux); false: never (ns-3's TcpBbr).
    pub lt_bw: bool,
}

impl Default for BbrParams {
    fn default() -> Self {
        BbrParams { lt_bw: true }
    }
}

impl Knobs for BbrParams {
    const KNOBS: &'static [Knob] = &[Knob {
        key: "lt_bw",
        about: "0 or 1; default 1 (long-term bw sampling for policers, as Linux; 0: none, as ns-3's TcpBbr)",
    }];

    fn set(&mut self, key: &str, value: f64) -> Option<()> {
        match key {
            "lt_bw" => self.lt_bw = knob_flag(value)?,
            _ => return None,
        }
        Some(())
    }

    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
}

impl ControllerParams for BbrParams {
    fn build(&self, mss_bytes: u64) -> Box<dyn CongestionControl> {
        let mut b = Bbr::new(mss_bytes);
        b.lt_bw_enabled = self.lt_bw;
        Box::new(b)
    }
}

/// The sender's view BBR reads and writes while handling one event (the
/// `tcp_sock` fields `tcp_bbr.c` uses), in packets and ns.
#[derive(Clone, Copy, Debug, Default)]
struct Conn {
    now_ns: TimeNs,
    cwnd: u64,
    in_flight: u64,
    delivered: u64,
    delivered_ns: TimeNs,
    lost: u64,
    srtt_ns: u64,
    next_send_ns: TimeNs,
}

/// BBR congestion control (`struct bbr`).
#[derive(Clone, Debug)]
pub struct Bbr {
    mss_bytes: u64,
    conn: Conn,
    rng: Pcg64Mcg,
    /// The handshake's RTT (or the first ACK) has set min_rtt and the
    /// pacing rate (`bbr_init` at connection establishment).
    initialized: bool,
    mode: BbrMode,
    /// ns; `u64::MAX` until the first sample.
    min_rtt_ns: u64,
    min_rtt_stamp_ns: TimeNs,
    probe_rtt_done_stamp_ns: Option<TimeNs>,
    probe_rtt_round_done: bool,
    bw: WindowedMax,
    rtt_cnt: u64,
    next_rtt_delivered: u64,
    round_start: bool,
    cycle_stamp_ns: TimeNs,
    cycle_idx: usize,
    prev_ca_state: CaState,
    packet_conservation: bool,
    idle_restart: bool,
    /// Long-term sampling runs ([`BbrParams::lt_bw`]).
    lt_bw_enabled: bool,
    lt_is_sampling: bool,
    lt_rtt_cnt: u32,
    lt_use_bw: bool,
    lt_bw: u64,
    lt_last_delivered: u64,
    lt_last_stamp_ms: u64,
    lt_last_lost: u64,
    pacing_gain: u64,
    cwnd_gain: u64,
    full_bw_reached: bool,
    full_bw_cnt: u32,
    full_bw: u64,
    has_seen_rtt: bool,
    prior_cwnd: u64,
    ack_epoch_ns: TimeNs,
    extra_acked: [u64; 2],
    ack_epoch_acked: u64,
    extra_acked_win_rtts: u32,
    extra_acked_win_idx: usize,
    /// TCP payload bytes per second (`sk_pacing_rate`).
    pacing_rate: u64,
    /// A new ssthresh for the sender, in packets (`bbr_check_drain`).
    ssthresh: Option<u64>,
}

/// Linux's order of `icsk_ca_state` (Open < Disorder < CWR < Recovery <
/// Loss), for `bbr_set_cwnd_to_recover_or_restore` and `bbr_save_cwnd`.
fn ca_rank(s: CaState) -> u8 {
    match s {
        CaState::Open => 0,
        CaState::Disorder => 1,
        CaState::Recovery => 3,
        CaState::Loss => 4,
    }
}

impl Bbr {
    /// `bbr_init`, before the connection has an RTT sample.
    pub fn new(mss_bytes: u64) -> Self {
        let mut b = Bbr {
            mss_bytes: mss_bytes.max(1),
            conn: Conn {
                cwnd: TCP_INIT_CWND,
                ..Conn::default()
            },
            rng: Pcg64Mcg::seed_from_u64(0),
            initialized: false,
            mode: BbrMode::Startup,
            min_rtt_ns: u64::MAX,
            min_rtt_stamp_ns: 0,
            probe_rtt_done_stamp_ns: None,
            probe_rtt_round_done: false,
            bw: WindowedMax::default(),
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            round_start: false,
            cycle_stamp_ns: 0,
            cycle_idx: 0,
            prev_ca_state: CaState::Open,
            packet_conservation: false,
            idle_restart: false,
            lt_bw_enabled: true,
            lt_is_sampling: false,
            lt_rtt_cnt: 0,
            lt_use_bw: false,
            lt_bw: 0,
            lt_last_delivered: 0,
            lt_last_stamp_ms: 0,
            lt_last_lost: 0,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            full_bw_reached: false,
            full_bw_cnt: 0,
            full_bw: 0,
            has_seen_rtt: false,
            prior_cwnd: 0,
            ack_epoch_ns: 0,
            extra_acked: [0; 2],
            ack_epoch_acked: 0,
            extra_acked_win_rtts: 0,
            extra_acked_win_idx: 0,
            pacing_rate: 0,
            ssthresh: None,
        };
        b.init_pacing_rate_from_rtt();
        b
    }

    pub fn mode(&self) -> BbrMode {
        self.mode
    }

    /// Gains ×256 (`BBR_UNIT`).
    pub fn pacing_gain(&self) -> u64 {
        self.pacing_gain
    }

    pub fn cwnd_gain(&self) -> u64 {
        self.cwnd_gain
    }

    /// The PROBE_BW phase index into `PACING_GAIN`.
    pub fn cycle_idx(&self) -> usize {
        self.cycle_idx
    }

    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }

    /// The bandwidth estimate in use (`bbr_bw`), bytes per second.
    pub fn bw_bytes_per_s(&self) -> u64 {
        self.bw_to_bytes_per_s(self.bbr_bw())
    }

    /// min_rtt in ns (`u64::MAX` before any sample).
    pub fn min_rtt_ns(&self) -> u64 {
        self.min_rtt_ns
    }

    /// Whether the policer estimate lt_bw is in use, and its value in bytes
    /// per second.
    pub fn lt_bw_bytes_per_s(&self) -> Option<u64> {
        self.lt_use_bw.then(|| self.bw_to_bytes_per_s(self.lt_bw))
    }

    fn bw_to_bytes_per_s(&self, bw: u64) -> u64 {
        (bw as u128 * self.mss_bytes as u128 * 1_000_000 / BW_UNIT) as u64
    }

    // ----- bandwidth, BDP and rates -----------------------------------

    /// `bbr_max_bw`.
    fn max_bw(&self) -> u64 {
        self.bw.get()
    }

    /// `bbr_bw`: lt_bw while policed, else the windowed max.
    fn bbr_bw(&self) -> u64 {
        if self.lt_use_bw {
            self.lt_bw
        } else {
            self.max_bw()
        }
    }

    /// `bbr_extra_acked`: the larger of the two windows' maxima.
    fn extra_acked_max(&self) -> u64 {
        self.extra_acked[0].max(self.extra_acked[1])
    }

    /// `bbr_rate_bytes_per_sec`: bw·mss·gain less the 1 % margin.
    fn rate_bytes_per_sec(&self, bw: u64, gain: u64) -> u64 {
        let rate = bw as u128 * self.mss_bytes as u128 * gain as u128 / BBR_UNIT as u128;
        let rate = rate * (1_000_000 / 100 * (100 - PACING_MARGIN_PERCENT) as u128);
        (rate / BW_UNIT).min(u64::MAX as u128) as u64
    }

    /// `bbr_init_pacing_rate_from_rtt`: high_gain · cwnd / RTT, with a
    /// nominal 1 ms before any RTT sample.
    fn init_pacing_rate_from_rtt(&mut self) {
        let rtt_us = if self.conn.srtt_ns > 0 {
            self.has_seen_rtt = true;
            (self.conn.srtt_ns / 1000).max(1)
        } else {
            1000
        };
        let bw = self.conn.cwnd as u128 * BW_UNIT / rtt_us as u128;
        self.pacing_rate = self.rate_bytes_per_sec(bw.min(u64::MAX as u128) as u64, HIGH_GAIN);
    }

    /// `bbr_set_pacing_rate`: never lower the rate before the pipe is full.
    fn set_pacing_rate(&mut self, bw: u64, gain: u64) {
        let rate = self.rate_bytes_per_sec(bw, gain);
        if !self.has_seen_rtt && self.conn.srtt_ns > 0 {
            self.init_pacing_rate_from_rtt();
        }
        if self.full_bw_reached || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    /// `bbr_tso_segs_goal` with `bbr_min_tso_segs`: the segments Linux
    /// budgets per TSO burst, about 1 ms of the pacing rate (at least 2
    /// above 1.2 Mbit/s). latlab sends one segment per packet, but Linux
    /// sizes cwnd with this budget whatever the device does, and so does
    /// latlab, so that cwnd (and the standing queue) match the kernel's.
    fn tso_segs_goal(&self) -> u64 {
        let bytes = (self.pacing_rate >> PACING_SHIFT).min(TSO_MAX_BYTES);
        let min_segs = if self.pacing_rate < MIN_TSO_RATE_BPS >> 3 {
            1
        } else {
            2
        };
        (bytes / self.mss_bytes).max(min_segs).min(0x7F)
    }

    /// `bbr_bdp`: ceil(bw · min_rtt · gain); the initial window before any
    /// RTT sample.
    fn bdp(&self, bw: u64, gain: u64) -> u64 {
        if self.min_rtt_ns == u64::MAX {
            return TCP_INIT_CWND;
        }
        let num = bw as u128 * self.min_rtt_ns as u128 * gain as u128;
        let den = BBR_UNIT as u128 * 1000 * BW_UNIT;
        num.div_ceil(den).min(u64::MAX as u128) as u64
    }

    /// `bbr_quantization_budget`: three TSO bursts, rounded up to even,
    /// and 2 more in the 5/4 phase so small BDPs still probe.
    fn quantization_budget(&self, cwnd: u64) -> u64 {
        let mut cwnd = cwnd + 3 * self.tso_segs_goal();
        cwnd = (cwnd + 1) & !1;
        if self.mode == BbrMode::ProbeBw && self.cycle_idx == 0 {
            cwnd += 2;
        }
        cwnd
    }

    /// `bbr_inflight`.
    fn inflight(&self, bw: u64, gain: u64) -> u64 {
        self.quantization_budget(self.bdp(bw, gain))
    }

    /// `bbr_packets_in_net_at_edt`: inflight when the next paced packet
    /// leaves, less what bw delivers until then.
    fn packets_in_net_at_edt(&self, inflight_now: u64) -> u64 {
        let edt = self.conn.next_send_ns.max(self.conn.now_ns);
        let interval_us = (edt - self.conn.now_ns) / 1000;
        let interval_delivered = (self.bbr_bw() as u128 * interval_us as u128 / BW_UNIT) as u64;
        let mut inflight_at_edt = inflight_now;
        if self.pacing_gain > BBR_UNIT {
            inflight_at_edt += self.tso_segs_goal();
        }
        inflight_at_edt.saturating_sub(interval_delivered)
    }

    /// `bbr_ack_aggregation_cwnd`: extra_acked, capped at 100 ms of bw, once
    /// the pipe is full.
    fn ack_aggregation_cwnd(&self) -> u64 {
        if !self.full_bw_reached {
            return 0;
        }
        let max_aggr = (self.bbr_bw() as u128 * EXTRA_ACKED_MAX_US / BW_UNIT) as u64;
        let aggr = EXTRA_ACKED_GAIN * self.extra_acked_max() / BBR_UNIT;
        aggr.min(max_aggr)
    }

    // ----- cwnd ----------------------------------------------------------

    /// `bbr_save_cwnd`: the last good cwnd, to restore after recovery or
    /// PROBE_RTT.
    fn save_cwnd(&mut self) {
        if ca_rank(self.prev_ca_state) < ca_rank(CaState::Recovery) && self.mode != BbrMode::ProbeRtt {
            self.prior_cwnd = self.conn.cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(self.conn.cwnd);
        }
    }

    /// `bbr_set_cwnd_to_recover_or_restore`: packet conservation in the
    /// first round of recovery, the saved cwnd restored when it ends.
    /// Returns the cwnd and whether conservation decides it.
    fn recover_or_restore(&mut self, rs: &RateSample, acked: u64) -> (u64, bool) {
        let (prev, state) = (self.prev_ca_state, rs.ca_state);
        let mut cwnd = self.conn.cwnd;
        if rs.losses_segs > 0 {
            cwnd = cwnd.saturating_sub(rs.losses_segs).max(1);
        }
        let recovery = ca_rank(CaState::Recovery);
        if state == CaState::Recovery && prev != CaState::Recovery {
            // First round of recovery: send one packet per packet acked.
            self.packet_conservation = true;
            self.next_rtt_delivered = self.conn.delivered;
            cwnd = self.conn.in_flight + acked;
        } else if ca_rank(prev) >= recovery && ca_rank(state) < recovery {
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            return (cwnd.max(self.conn.in_flight + acked), true);
        }
        (cwnd, false)
    }

    /// `bbr_set_cwnd`: slow-start toward the target (cwnd_gain·BDP +
    /// aggregation allowance + quantization budget), or snap down to it
    /// once the pipe is full; 4 packets at most in PROBE_RTT.
    fn set_cwnd(&mut self, rs: &RateSample, acked: u64, bw: u64, gain: u64) {
        let mut cwnd = self.conn.cwnd;
        if acked > 0 {
            let (c, conserving) = self.recover_or_restore(rs, acked);
            cwnd = c;
            if !conserving {
                let target = self.bdp(bw, gain) + self.ack_aggregation_cwnd();
                let target = self.quantization_budget(target);
                if self.full_bw_reached {
                    cwnd = (cwnd + acked).min(target);
                } else if cwnd < target || self.conn.delivered < TCP_INIT_CWND {
                    cwnd += acked;
                }
                cwnd = cwnd.max(CWND_MIN_TARGET);
            }
        }
        self.conn.cwnd = cwnd;
        if self.mode == BbrMode::ProbeRtt {
            self.conn.cwnd = self.conn.cwnd.min(CWND_MIN_TARGET);
        }
    }

    // ----- PROBE_BW gain cycle -----------------------------------------

    /// `bbr_is_next_cycle_phase`: a phase lasts min_rtt; the 5/4 phase
    /// until inflight reaches 5/4·BDP (or a loss), the 3/4 phase ends early
    /// once inflight is down to BDP.
    fn is_next_cycle_phase(&self, rs: &RateSample) -> bool {
        let is_full_length = self.conn.delivered_ns.saturating_sub(self.cycle_stamp_ns) > self.min_rtt_ns;
        if self.pacing_gain == BBR_UNIT {
            return is_full_length;
        }
        let inflight = self.packets_in_net_at_edt(rs.prior_in_flight_segs);
        let bw = self.max_bw();
        if self.pacing_gain > BBR_UNIT {
            return is_full_length && (rs.losses_segs > 0 || inflight >= self.inflight(bw, self.pacing_gain));
        }
        is_full_length || inflight <= self.inflight(bw, BBR_UNIT)
    }

    /// `bbr_advance_cycle_phase`.
    fn advance_cycle_phase(&mut self) {
        self.cycle_idx = (self.cycle_idx + 1) % CYCLE_LEN;
        self.cycle_stamp_ns = self.conn.delivered_ns;
    }

    /// `bbr_update_cycle_phase`.
    fn update_cycle_phase(&mut self, rs: &RateSample) {
        if self.mode == BbrMode::ProbeBw && self.is_next_cycle_phase(rs) {
            self.advance_cycle_phase();
        }
    }

    /// `bbr_reset_probe_bw_mode`: enter PROBE_BW at a random phase, never
    /// the 3/4 one (index = CYCLE_LEN − 1 − rand(7), then advance).
    fn reset_probe_bw_mode(&mut self) {
        self.mode = BbrMode::ProbeBw;
        self.cycle_idx = CYCLE_LEN - 1 - self.rng.random_range(0..CYCLE_RAND);
        self.advance_cycle_phase();
    }

    /// `bbr_reset_mode`: STARTUP if the pipe was never full, else PROBE_BW.
    fn reset_mode(&mut self) {
        if self.full_bw_reached {
            self.reset_probe_bw_mode();
        } else {
            self.mode = BbrMode::Startup;
        }
    }

    // ----- long-term bandwidth (policer detection) -----------------------

    /// `bbr_reset_lt_bw_sampling_interval`.
    fn reset_lt_interval(&mut self) {
        self.lt_last_stamp_ms = self.conn.delivered_ns / NS_PER_MS;
        self.lt_last_delivered = self.conn.delivered;
        self.lt_last_lost = self.conn.lost;
        self.lt_rtt_cnt = 0;
    }

    /// `bbr_reset_lt_bw_sampling`.
    fn reset_lt_sampling(&mut self) {
        self.lt_bw = 0;
        self.lt_use_bw = false;
        self.lt_is_sampling = false;
        self.reset_lt_interval();
    }

    /// `bbr_lt_bw_interval_done`: two consecutive lossy intervals with
    /// bw within 1/8 or 4 kbit/s of each other mean a policer; use their
    /// average.
    fn lt_interval_done(&mut self, bw: u64) {
        if self.lt_bw > 0 {
            let diff = bw.abs_diff(self.lt_bw);
            if diff * BBR_UNIT <= LT_BW_RATIO * self.lt_bw
                || self.rate_bytes_per_sec(diff, BBR_UNIT) <= LT_BW_DIFF_BYTES_PER_S
            {
                self.lt_bw = (bw + self.lt_bw) / 2;
                self.lt_use_bw = true;
                self.pacing_gain = BBR_UNIT;
                self.lt_rtt_cnt = 0;
                return;
            }
        }
        self.lt_bw = bw;
        self.reset_lt_interval();
    }

    /// `bbr_lt_bw_sampling`: intervals of 4 to 16 rounds from the first
    /// loss, ended by a loss, with loss ≥ 20 %.
    fn lt_bw_sampling(&mut self, rs: &RateSample) {
        if !self.lt_bw_enabled {
            return;
        }
        if self.lt_use_bw {
            if self.mode == BbrMode::ProbeBw && self.round_start {
                self.lt_rtt_cnt += 1;
                if self.lt_rtt_cnt >= LT_BW_MAX_RTTS {
                    self.reset_lt_sampling();
                    self.reset_probe_bw_mode();
                }
            }
            return;
        }
        // Wait for a first loss: the policer's tokens are then exhausted.
        if !self.lt_is_sampling {
            if rs.losses_segs == 0 {
                return;
            }
            self.reset_lt_interval();
            self.lt_is_sampling = true;
        }
        if rs.is_app_limited {
            self.reset_lt_sampling();
            return;
        }
        if self.round_start {
            self.lt_rtt_cnt += 1;
        }
        if self.lt_rtt_cnt < LT_INTVL_MIN_RTTS {
            return;
        }
        if self.lt_rtt_cnt > 4 * LT_INTVL_MIN_RTTS {
            self.reset_lt_sampling();
            return;
        }
        if rs.losses_segs == 0 {
            return;
        }
        self.lt_interval_end()
    }

    /// The end of a long-term interval at a loss (the second half of
    /// `bbr_lt_bw_sampling`): its loss rate and average delivery rate.
    fn lt_interval_end(&mut self) {
        let lost = self.conn.lost - self.lt_last_lost;
        let delivered = self.conn.delivered - self.lt_last_delivered;
        if delivered == 0 || (lost << 8) < LT_LOSS_THRESH * delivered {
            return;
        }
        let t_ms = (self.conn.delivered_ns / NS_PER_MS) as i64 - self.lt_last_stamp_ms as i64;
        if t_ms < 1 {
            return;
        }
        if t_ms as u64 >= u32::MAX as u64 / 1000 {
            self.reset_lt_sampling();
            return;
        }
        let bw = delivered as u128 * BW_UNIT / (t_ms as u128 * 1000);
        self.lt_interval_done(bw as u64);
    }

    // ----- the model ---------------------------------------------------

    /// `bbr_update_bw`: count round trips and feed the max filter;
    /// app-limited samples only raise it.
    fn update_bw(&mut self, rs: &RateSample) {
        self.round_start = false;
        if !rs.is_valid() {
            return;
        }
        if rs.prior_delivered_segs >= self.next_rtt_delivered {
            self.next_rtt_delivered = self.conn.delivered;
            self.rtt_cnt += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        self.lt_bw_sampling(rs);
        let bw = rs.delivered_segs as u128 * BW_UNIT * 1000 / rs.interval_ns as u128;
        let bw = bw.min(u64::MAX as u128) as u64;
        if !rs.is_app_limited || bw >= self.max_bw() {
            self.bw.update(BW_RTTS, self.rtt_cnt, bw);
        }
    }

    /// `bbr_update_ack_aggregation`: the most data ACKed beyond bw over an
    /// epoch, kept as the max of two 5-round windows.
    fn update_ack_aggregation(&mut self, rs: &RateSample) {
        if rs.acked_sacked_segs == 0 || !rs.is_valid() {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(0x1F);
            if self.extra_acked_win_rtts >= EXTRA_ACKED_WIN_RTTS {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx = 1 - self.extra_acked_win_idx;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }
        let epoch_us = self.conn.delivered_ns.saturating_sub(self.ack_epoch_ns) / 1000;
        let mut expected = (self.bbr_bw() as u128 * epoch_us as u128 / BW_UNIT) as u64;
        if self.ack_epoch_acked <= expected
            || self.ack_epoch_acked + rs.acked_sacked_segs >= ACK_EPOCH_ACKED_RESET_THRESH
        {
            self.ack_epoch_acked = 0;
            self.ack_epoch_ns = self.conn.delivered_ns;
            expected = 0;
        }
        self.ack_epoch_acked = (self.ack_epoch_acked + rs.acked_sacked_segs).min(0xFFFFF);
        let extra = (self.ack_epoch_acked - expected).min(self.conn.cwnd);
        let slot = &mut self.extra_acked[self.extra_acked_win_idx];
        *slot = (*slot).max(extra);
    }

    /// `bbr_check_full_bw_reached`: once per round, not app-limited: the
    /// pipe is full after 3 rounds without 25 % growth.
    fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_reached || !self.round_start || rs.is_app_limited {
            return;
        }
        let bw_thresh = self.full_bw * FULL_BW_THRESH / BBR_UNIT;
        if self.max_bw() >= bw_thresh {
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= FULL_BW_CNT;
    }

    /// `bbr_check_drain`: STARTUP → DRAIN when the pipe is full; DRAIN →
    /// PROBE_BW once inflight is down to BDP.
    fn check_drain(&mut self) {
        if self.mode == BbrMode::Startup && self.full_bw_reached {
            self.mode = BbrMode::Drain;
            self.ssthresh = Some(self.inflight(self.max_bw(), BBR_UNIT));
        }
        if self.mode == BbrMode::Drain
            && self.packets_in_net_at_edt(self.conn.in_flight) <= self.inflight(self.max_bw(), BBR_UNIT)
        {
            self.reset_probe_bw_mode();
        }
    }

    /// `bbr_check_probe_rtt_done`: after 200 ms and a round at 4 packets,
    /// refresh min_rtt's stamp, restore cwnd and leave PROBE_RTT.
    fn check_probe_rtt_done(&mut self) {
        match self.probe_rtt_done_stamp_ns {
            Some(done) if self.conn.now_ns > done => {}
            _ => return,
        }
        self.min_rtt_stamp_ns = self.conn.now_ns;
        self.conn.cwnd = self.conn.cwnd.max(self.prior_cwnd);
        self.reset_mode();
    }

    /// `bbr_update_min_rtt`: the 10 s min filter, and PROBE_RTT entry and
    /// progress. Returns whether to mark the connection app-limited
    /// (PROBE_RTT's low-rate samples must not lower bw).
    fn update_min_rtt(&mut self, rs: &RateSample) -> bool {
        let now = self.conn.now_ns;
        let filter_expired = now > self.min_rtt_stamp_ns.saturating_add(MIN_RTT_WIN_NS);
        if let Some(rtt) = rs.rtt_ns {
            if rtt <= self.min_rtt_ns || filter_expired {
                self.min_rtt_ns = rtt;
                self.min_rtt_stamp_ns = now;
            }
        }
        if filter_expired && !self.idle_restart && self.mode != BbrMode::ProbeRtt {
            self.mode = BbrMode::ProbeRtt;
            self.save_cwnd();
            self.probe_rtt_done_stamp_ns = None;
        }
        let in_probe_rtt = self.mode == BbrMode::ProbeRtt;
        if in_probe_rtt {
            if self.probe_rtt_done_stamp_ns.is_none() && self.conn.in_flight <= CWND_MIN_TARGET {
                self.probe_rtt_done_stamp_ns = Some(now + PROBE_RTT_MODE_NS);
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered = self.conn.delivered;
            } else if self.probe_rtt_done_stamp_ns.is_some() {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done();
                }
            }
        }
        if rs.delivered_segs > 0 {
            self.idle_restart = false;
        }
        in_probe_rtt
    }

    /// `bbr_update_gains`.
    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            BbrMode::Startup => (HIGH_GAIN, HIGH_GAIN),
            BbrMode::Drain => (DRAIN_GAIN, HIGH_GAIN),
            BbrMode::ProbeBw if self.lt_use_bw => (BBR_UNIT, CWND_GAIN),
            BbrMode::ProbeBw => (PACING_GAIN[self.cycle_idx], CWND_GAIN),
            BbrMode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
        };
    }

    /// `bbr_update_model`.
    fn update_model(&mut self, rs: &RateSample) -> bool {
        self.update_bw(rs);
        self.update_ack_aggregation(rs);
        self.update_cycle_phase(rs);
        self.check_full_bw_reached(rs);
        self.check_drain();
        let mark_app_limited = self.update_min_rtt(rs);
        self.update_gains();
        mark_app_limited
    }

    /// `bbr_init`'s RTT-dependent part, at the first RTT sample (the
    /// handshake's, when Linux initialises the controller).
    fn init_from_rtt(&mut self, min_rtt_ns: u64, now_ns: TimeNs) {
        self.initialized = true;
        if min_rtt_ns > 0 {
            self.min_rtt_ns = min_rtt_ns;
        }
        self.min_rtt_stamp_ns = now_ns;
        self.ack_epoch_ns = now_ns;
        self.has_seen_rtt = false;
        self.init_pacing_rate_from_rtt();
    }

    /// Take the sender's state into `conn` for one event.
    fn load(&mut self, state: &CcState, now_ns: TimeNs) {
        self.mss_bytes = state.mss_bytes.max(1);
        self.conn.cwnd = state.cwnd_bytes / self.mss_bytes;
        self.conn.now_ns = now_ns;
    }

    /// Give cwnd (and ssthresh when DRAIN set it) back to the sender.
    fn store(&mut self, state: &mut CcState) {
        state.cwnd_bytes = self.conn.cwnd.saturating_mul(self.mss_bytes);
        if let Some(ss) = self.ssthresh.take() {
            state.ssthresh_bytes = ss.saturating_mul(self.mss_bytes);
        }
    }
}

impl CongestionControl for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
    }

    /// Never called: a rate-based controller gets `on_rate_sample`.
    fn on_ack(&mut self, _state: &mut CcState, _ack: &AckSample) {}

    /// The handshake's RTT sample initialises min_rtt and the pacing rate
    /// (Linux runs `bbr_init` when the connection is established).
    fn on_rtt_sample(&mut self, state: &CcState, ack: &AckSample) {
        if !self.initialized {
            self.load(state, ack.now_ns);
            self.conn.srtt_ns = ack.srtt_ns;
            self.init_from_rtt(ack.min_rtt_ns, ack.now_ns);
        }
    }

    /// `bbr_ssthresh` (save cwnd, keep ssthresh); on a timeout also
    /// `bbr_set_state(TCP_CA_Loss)`: the RTO ends a round, restarts
    /// full-pipe growth counting and is a loss for long-term sampling.
    fn ssthresh_on_loss(
        &mut self,
        state: &CcState,
        event: CongestionEvent,
        _flight: u64,
        now_ns: TimeNs,
    ) -> u64 {
        self.load(state, now_ns);
        self.save_cwnd();
        if event == CongestionEvent::Timeout {
            self.prev_ca_state = CaState::Loss;
            self.full_bw = 0;
            self.round_start = true;
            let rs = RateSample {
                losses_segs: 1,
                ..RateSample::default()
            };
            self.lt_bw_sampling(&rs);
        }
        state.ssthresh_bytes
    }

    fn wants_rate_samples(&self) -> bool {
        true
    }

    /// `bbr_main`: update the model, then the pacing rate and cwnd.
    fn on_rate_sample(&mut self, state: &mut CcState, rs: &RateSample) -> bool {
        self.load(state, rs.now_ns);
        self.conn.in_flight = rs.in_flight_segs;
        self.conn.delivered = rs.conn_delivered_segs;
        self.conn.delivered_ns = rs.delivered_ns;
        self.conn.lost = rs.conn_lost_segs;
        self.conn.srtt_ns = rs.srtt_ns;
        self.conn.next_send_ns = rs.next_send_ns;
        if !self.initialized {
            self.init_from_rtt(rs.rtt_ns.unwrap_or(0), rs.now_ns);
        }
        let mark_app_limited = self.update_model(rs);
        let bw = self.bbr_bw();
        self.set_pacing_rate(bw, self.pacing_gain);
        self.set_cwnd(rs, rs.acked_sacked_segs, bw, self.cwnd_gain);
        self.store(state);
        mark_app_limited
    }

    fn pacing_rate_bytes_per_s(&self) -> u64 {
        self.pacing_rate
    }

    /// `bbr_cwnd_event(CA_EVENT_TX_START)` after an application-limited
    /// pause: no PROBE_RTT until data is delivered again, a fresh
    /// aggregation epoch, and in PROBE_BW pace at bw (no need for more).
    fn on_tx_start(&mut self, state: &mut CcState, now_ns: TimeNs, app_limited: bool) {
        if !app_limited {
            return;
        }
        self.load(state, now_ns);
        self.idle_restart = true;
        self.ack_epoch_ns = now_ns;
        self.ack_epoch_acked = 0;
        match self.mode {
            BbrMode::ProbeBw => self.set_pacing_rate(self.bbr_bw(), BBR_UNIT),
            BbrMode::ProbeRtt => self.check_probe_rtt_done(),
            BbrMode::Startup | BbrMode::Drain => {}
        }
        self.store(state);
    }

    fn set_seed(&mut self, seed: u64) {
        self.rng = Pcg64Mcg::seed_from_u64(seed);
    }

    fn mode_name(&self) -> Option<&'static str> {
        Some(match self.mode {
            BbrMode::Startup => "startup",
            BbrMode::Drain => "drain",
            BbrMode::ProbeBw => "probe_bw",
            BbrMode::ProbeRtt => "probe_rtt",
        })
    }

    /// What `bbr_get_info` reports (bw, min_rtt, gains), with the mode and
    /// the target `bbr_set_cwnd` grows cwnd toward.
    fn model_sample(&self) -> Option<ModelSample> {
        let bw = self.bbr_bw();
        let target = self.quantization_budget(self.bdp(bw, self.cwnd_gain) + self.ack_aggregation_cwnd());
        Some(ModelSample {
            mode: self.mode_name()?,
            bw_bytes_per_s: self.bw_to_bytes_per_s(bw),
            min_rtt_ns: (self.min_rtt_ns != u64::MAX).then_some(self.min_rtt_ns),
            pacing_gain: self.pacing_gain as f64 / BBR_UNIT as f64,
            cwnd_gain: self.cwnd_gain as f64 / BBR_UNIT as f64,
            target_cwnd_segments: target,
            lt_bw_in_use: self.lt_use_bw,
        })
    }
}

#[cfg(test)]
#[path = "bbr_tests.rs"]
mod tests;
