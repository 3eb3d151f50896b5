//! LEDBAT, RFC 6817: a "less than best effort" controller that keeps the
//! queueing delay it causes near a TARGET and yields to standard TCP.
//!
//! Delay signal (RFC 6817 §3.4.2):
//! - With TCP timestamps every ACK carries a one-way delay sample
//!   ([`AckSample::one_way_delay_ns`]: the receiver's TSval minus our echoed
//!   TSval). Only differences matter, so a constant clock offset between the
//!   hosts cancels in `queuing_delay = current − base`.
//! - Without timestamps (no OWD) the controller falls back to RTT samples fed
//!   through the same filters: queuing delay = min(recent RTTs) − min(RTT over
//!   the base history), i.e. RTT − min RTT. The RTT also carries reverse-path
//!   queueing and the receiver's delayed-ACK time, so the fallback reacts to
//!   those as well; with Karn's rule there is one sample per RTT, so the
//!   estimate is refreshed only once per RTT. Once an OWD sample has been
//!   seen the controller uses OWD only (the filters are reset on the switch).
//!
//! Filters:
//! - Base delay: BASE_HISTORY one-minute buckets, each the minimum delay
//!   seen in its minute; base = min over the buckets (RFC 6817 §3.4.2
//!   `update_base_delay`). The RFC rolls one bucket per sample that falls in a
//!   new minute; here the history is rolled by the number of minutes that
//!   actually elapsed (capped at BASE_HISTORY), so after a long silence old
//!   minima expire as the RFC intends.
//! - Current delay: the minimum of the last `current_filter` samples
//!   (default 4), leaving out samples older than one SRTT (the newest sample
//!   always counts; before the first SRTT there is no age limit). RFC 6817
//!   §3.4.2 asks for a small MIN filter that covers at least a few samples and
//!   no more than an RTT.
//!
//! Window (RFC 6817 §2.4.2, per ACK outside loss recovery):
//! `off_target = (TARGET − queuing_delay)/TARGET`,
//! `cwnd += GAIN·off_target·bytes_acked·MSS/cwnd`,
//! `cwnd = min(cwnd, flightsize + ALLOWED_INCREASE·MSS)` with flightsize
//! the bytes in flight before the ACK, `cwnd = max(cwnd, MIN_CWND·MSS)`.
//! The estimate used is the latest filtered one (every ACK that carries a
//! sample refreshes it first, via `on_rtt_sample`), so with timestamps this is
//! exactly "per ACK with a delay sample". A fractional byte remainder is
//! carried so that small increments are not lost to rounding.
//!
//! Slow start (choice; RFC 6817 §2.4.2 allows TCP-style slow start as long as
//! it does not grow faster than TCP): RFC 5681 slow start while
//! cwnd < ssthresh, left as soon as the filtered queuing delay exceeds TARGET
//! (ssthresh is then set to cwnd). With `slow_start = false` the first ACK
//! sets ssthresh = cwnd and LEDBAT's law governs from the start. The flight
//! cap and the MIN_CWND floor apply in slow start too. Outside slow start
//! ssthresh follows cwnd down (ssthresh = min(ssthresh, cwnd), as Vegas
//! does), so a window LEDBAT shrinks does not fall back into slow start.
//!
//! Loss (RFC 6817 §2.4.2 "on data loss, at most once per RTT:
//! cwnd = min(cwnd, max(cwnd/2, MIN_CWND·MSS))"): `ssthresh_on_loss`
//! returns max(cwnd/2, MIN_CWND·MSS) (cwnd, not flight, as in the RFC); a
//! second call within one SRTT of the last reduction returns the same value
//! again (no second halving). The sender then sets cwnd from it:
//! - SACK recovery (RFC 6675 step (4.2)): cwnd = ssthresh immediately, i.e.
//!   exactly the RFC 6817 halving.
//! - NewReno (RFC 6582 §3.2): cwnd = ssthresh + 3·MSS, inflated by one MSS
//!   per duplicate ACK, and on the full ACK cwnd = min(ssthresh,
//!   flight + MSS) — the halving, applied when recovery ends.
//! - Timeout: the sender sets cwnd = 1·MSS (RFC 5681 loss window) and slow
//!   starts back toward ssthresh (if slow start is enabled); the next ACK
//!   raises cwnd to MIN_CWND·MSS.

use super::{
    knob_flag, knob_real, knob_whole, slow_start, AckSample, CcState, CongestionControl, CongestionEvent,
    ControllerParams, Knob,
};
use crate::knobs::Knobs;
use crate::{TimeNs, NS_PER_MS, NS_PER_SEC};

/// Largest BASE_HISTORY accepted (one-minute buckets).
pub const LEDBAT_MAX_BASE_HISTORY: usize = 60;
/// Largest current-delay filter length accepted (samples).
pub const LEDBAT_MAX_CURRENT_FILTER: usize = 32;

const NS_PER_MINUTE: u64 = 60 * NS_PER_SEC;

/// LEDBAT constants (RFC 6817 §3.2 defaults in [`Default`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LedbatParams {
    /// TARGET queuing delay, ns. RFC 6817: 100 ms (the maximum it allows);
    /// studies commonly use 25 or 50 ms.
    pub target_ns: u64,
    /// GAIN: cwnd change per RTT at the maximum off_target (RFC 6817: 1).
    pub gain: f64,
    /// BASE_HISTORY: number of one-minute base-delay buckets (RFC 6817: 10).
    pub base_history: usize,
    /// CURRENT_FILTER: samples in the current-delay MIN filter (4).
    pub current_filter: usize,
    /// MIN_CWND in segments (RFC 6817: 2).
    pub min_cwnd_segments: u64,
    /// ALLOWED_INCREASE in segments (RFC 6817: 1).
    pub allowed_increase_segments: u64,
    /// Use slow start until the queuing delay exceeds TARGET (see module docs).
    pub slow_start: bool,
}

impl Default for LedbatParams {
    fn default() -> Self {
        Self {
            target_ns: 100 * NS_PER_MS,
            gain: 1.0,
            base_history: 10,
            current_filter: 4,
            min_cwnd_segments: 2,
            allowed_increase_segments: 1,
            slow_start: true,
        }
    }
}

impl Knobs for LedbatParams {
    const KNOBS: &'static [Knob] = &[
        Knob {
            key: "target_ms",
            about: "TARGET queuing delay in ms, (0, 10000]; default 100",
        },
        Knob {
            key: "gain",
            about: "GAIN, (0, 100]; default 1",
        },
        Knob {
            key: "base_history",
            about: "one-minute base-delay buckets, integer 1..=60; default 10",
        },
        Knob {
            key: "current_filter",
            about: "current-delay MIN filter samples, integer 1..=32; default 4",
        },
        Knob {
            key: "min_cwnd",
            about: "MIN_CWND in segments, integer 1..=1000; default 2",
        },
        Knob {
            key: "allowed_increase",
            about: "ALLOWED_INCREASE in segments, integer 1..=1000; default 1",
        },
        Knob {
            key: "slow_start",
            about: "0 or 1; default 1",
        },
    ];

    fn set(&mut self, key: &str, value: f64) -> Option<()> {
        match key {
            "target_ms" => {
                let ms = knob_real(value, |ms| ms > 0.0 && ms <= 10_000.0)?;
                self.target_ns = ((ms * 1e6).round() as u64).max(1);
            }
            "gain" => self.gain = knob_real(value, |g| g > 0.0 && g <= 100.0)?,
            "base_history" => {
                self.base_history = knob_whole(value, 1, LEDBAT_MAX_BASE_HISTORY as u64)? as usize
            }
            "current_filter" => {
                self.current_filter = knob_whole(value, 1, LEDBAT_MAX_CURRENT_FILTER as u64)? as usize
            }
            "min_cwnd" => self.min_cwnd_segments = knob_whole(value, 1, 1000)?,
            "allowed_increase" => self.allowed_increase_segments = knob_whole(value, 1, 1000)?,
            "slow_start" => self.slow_start = knob_flag(value)?,
            _ => return None,
        }
        Some(())
    }

    /// Check every constant; the error names the offending one.
    fn validate(&self) -> Result<(), String> {
        if self.target_ns == 0 || self.target_ns > 10 * NS_PER_SEC {
            return Err(format!(
                "ledbat target must be in (0, 10000] ms, got {} ns",
                self.target_ns
            ));
        }
        if !(self.gain.is_finite() && self.gain > 0.0 && self.gain <= 100.0) {
            return Err(format!("ledbat gain must be in (0, 100], got {}", self.gain));
        }
        if self.base_history == 0 || self.base_history > LEDBAT_MAX_BASE_HISTORY {
            return Err(format!(
                "ledbat base_history must be in 1..={LEDBAT_MAX_BASE_HISTORY}, got {}",
                self.base_history
            ));
        }
        if self.current_filter == 0 || self.current_filter > LEDBAT_MAX_CURRENT_FILTER {
            return Err(format!(
                "ledbat current_filter must be in 1..={LEDBAT_MAX_CURRENT_FILTER}, got {}",
                self.current_filter
            ));
        }
        if self.min_cwnd_segments == 0 || self.min_cwnd_segments > 1000 {
            return Err(format!(
                "ledbat min_cwnd must be in 1..=1000 segments, got {}",
                self.min_cwnd_segments
            ));
        }
        if self.allowed_increase_segments == 0 || self.allowed_increase_segments > 1000 {
            return Err(format!(
                "ledbat allowed_increase must be in 1..=1000 segments, got {}",
                self.allowed_increase_segments
            ));
        }
        Ok(())
    }
}

impl ControllerParams for LedbatParams {
    fn build(&self, mss_bytes: u64) -> Box<dyn CongestionControl> {
        Box::new(Ledbat::new(*self, mss_bytes))
    }
}

impl LedbatParams {
    /// Out-of-range constants replaced by the RFC defaults, so no input can
    /// index out of bounds or divide by zero.
    fn sanitized(self) -> Self {
        let d = Self::default();
        Self {
            target_ns: if self.target_ns == 0 {
                d.target_ns
            } else {
                self.target_ns
            },
            gain: if self.gain.is_finite() && self.gain > 0.0 {
                self.gain
            } else {
                d.gain
            },
            base_history: if (1..=LEDBAT_MAX_BASE_HISTORY).contains(&self.base_history) {
                self.base_history
            } else {
                d.base_history
            },
            current_filter: if (1..=LEDBAT_MAX_CURRENT_FILTER).contains(&self.current_filter) {
                self.current_filter
            } else {
                d.current_filter
            },
            min_cwnd_segments: self.min_cwnd_segments.max(1),
            allowed_increase_segments: self.allowed_increase_segments.max(1),
            slow_start: self.slow_start,
        }
    }
}

/// Which delay the filters currently hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Signal {
    None,
    OneWay,
    Rtt,
}

/// LEDBAT (RFC 6817) window control.
#[derive(Clone, Debug)]
pub struct Ledbat {
    params: LedbatParams,
    /// SMSS given at construction; used only if the state's MSS is 0.
    mss_bytes: u64,
    signal: Signal,
    /// Per-minute minima, oldest first in ring order ending at `base_tail`;
    /// i64::MAX = no sample (RFC 6817's +infinity).
    base_delays_ns: [i64; LEDBAT_MAX_BASE_HISTORY],
    base_tail: usize,
    /// Minute index (now / 60 s) of the tail bucket.
    base_minute: Option<u64>,
    /// Current-delay ring: (sample time, delay).
    current_ns: [(TimeNs, i64); LEDBAT_MAX_CURRENT_FILTER],
    current_len: usize,
    current_next: usize,
    /// Latest filtered queuing delay (current − base), ns.
    queuing_delay_ns: Option<u64>,
    /// Latest smoothed RTT the sender reported (0 before the first).
    srtt_ns: u64,
    /// When the window was last halved, and the ssthresh returned then.
    last_reduction: Option<(TimeNs, u64)>,
    /// Fraction of a byte of growth not yet added to cwnd, in (−1, 1).
    cwnd_remainder_bytes: f64,
}

impl Ledbat {
    pub fn new(params: LedbatParams, mss_bytes: u64) -> Self {
        Self {
            params: params.sanitized(),
            mss_bytes,
            signal: Signal::None,
            base_delays_ns: [i64::MAX; LEDBAT_MAX_BASE_HISTORY],
            base_tail: 0,
            base_minute: None,
            current_ns: [(0, 0); LEDBAT_MAX_CURRENT_FILTER],
            current_len: 0,
            current_next: 0,
            queuing_delay_ns: None,
            srtt_ns: 0,
            last_reduction: None,
            cwnd_remainder_bytes: 0.0,
        }
    }

    /// The constants in use (after sanitising).
    pub fn params(&self) -> &LedbatParams {
        &self.params
    }

    /// Latest filtered queuing delay estimate, ns (None before any sample).
    pub fn queuing_delay_ns(&self) -> Option<u64> {
        self.queuing_delay_ns
    }

    /// min over the base history (None before any sample).
    pub fn base_delay_ns(&self) -> Option<i64> {
        let m = self.base_delays_ns[..self.params.base_history]
            .iter()
            .copied()
            .min()
            .unwrap_or(i64::MAX);
        (m != i64::MAX).then_some(m)
    }

    /// True if the delay signal is RTT − min RTT (no one-way delay seen).
    pub fn uses_rtt_fallback(&self) -> bool {
        self.signal == Signal::Rtt
    }

    fn mss_of(&self, state: &CcState) -> u64 {
        if state.mss_bytes > 0 {
            state.mss_bytes
        } else {
            self.mss_bytes.max(1)
        }
    }

    fn reset_filters(&mut self) {
        self.base_delays_ns = [i64::MAX; LEDBAT_MAX_BASE_HISTORY];
        self.base_tail = 0;
        self.base_minute = None;
        self.current_len = 0;
        self.current_next = 0;
        self.queuing_delay_ns = None;
    }

    /// RFC 6817 §3.4.2 `update_base_delay`, rolled by elapsed minutes.
    fn update_base_delay(&mut self, now_ns: TimeNs, delay_ns: i64) {
        let n = self.params.base_history;
        let minute = now_ns / NS_PER_MINUTE;
        match self.base_minute {
            Some(m) if minute > m => {
                // Open one new bucket per elapsed minute (at most n).
                let steps = (minute - m).min(n as u64) as usize;
                for _ in 0..steps {
                    self.base_tail = (self.base_tail + 1) % n;
                    self.base_delays_ns[self.base_tail] = i64::MAX;
                }
                self.base_minute = Some(minute);
            }
            Some(_) => {} // same minute, or time went backwards: keep the tail
            None => self.base_minute = Some(minute),
        }
        let tail = &mut self.base_delays_ns[self.base_tail];
        *tail = (*tail).min(delay_ns);
    }

    /// RFC 6817 §3.4.2 `update_current_delay` plus FILTER(): MIN filter.
    fn update_current_delay(&mut self, now_ns: TimeNs, delay_ns: i64) -> i64 {
        let cap = self.params.current_filter;
        self.current_ns[self.current_next] = (now_ns, delay_ns);
        self.current_next = (self.current_next + 1) % cap;
        self.current_len = (self.current_len + 1).min(cap);
        let mut min = delay_ns;
        for &(t, d) in &self.current_ns[..self.current_len] {
            // None older than one RTT (no limit before the first SRTT).
            let fresh = self.srtt_ns == 0 || now_ns.saturating_sub(t) <= self.srtt_ns;
            if fresh && t <= now_ns {
                min = min.min(d);
            }
        }
        min
    }

    /// Feed one delay sample of the chosen signal.
    fn on_delay_sample(&mut self, now_ns: TimeNs, delay_ns: i64) {
        self.update_base_delay(now_ns, delay_ns);
        let current = self.update_current_delay(now_ns, delay_ns);
        let base = self.base_delay_ns().unwrap_or(current);
        // base ≤ every sample in the window, so this is ≥ 0 except when the
        // base bucket rolled away from older current samples; clamp.
        let q = (current as i128 - base as i128).max(0);
        self.queuing_delay_ns = Some(q.min(u64::MAX as i128) as u64);
    }

    /// Store a window given as (fractional) bytes, keeping the remainder.
    fn set_cwnd(&mut self, state: &mut CcState, cwnd_bytes: f64) {
        if !cwnd_bytes.is_finite() || cwnd_bytes < 0.0 {
            return;
        }
        let whole = cwnd_bytes.floor();
        state.cwnd_bytes = whole as u64; // `as` saturates
        self.cwnd_remainder_bytes = if whole >= u64::MAX as f64 {
            0.0
        } else {
            cwnd_bytes - whole
        };
    }

    /// cwnd = min(cwnd, flight + ALLOWED_INCREASE·MSS), then
    /// cwnd = max(cwnd, MIN_CWND·MSS) (RFC 6817 §2.4.2).
    fn apply_caps(&mut self, state: &mut CcState, mss: u64, prior_flight_bytes: u64) {
        let max_allowed =
            prior_flight_bytes.saturating_add(self.params.allowed_increase_segments.saturating_mul(mss));
        if state.cwnd_bytes >= max_allowed {
            state.cwnd_bytes = max_allowed;
            self.cwnd_remainder_bytes = 0.0;
        }
        let min_cwnd = self.params.min_cwnd_segments.saturating_mul(mss);
        if state.cwnd_bytes < min_cwnd {
            state.cwnd_bytes = min_cwnd;
            self.cwnd_remainder_bytes = 0.0;
        }
    }
}

impl CongestionControl for Ledbat {
    fn name(&self) -> &'static str {
        "ledbat"
    }

    fn on_rtt_sample(&mut self, _state: &CcState, ack: &AckSample) {
        if ack.srtt_ns > 0 {
            self.srtt_ns = ack.srtt_ns;
        }
        match (ack.one_way_delay_ns, ack.rtt_ns) {
            (Some(owd), _) => {
                if self.signal != Signal::OneWay {
                    self.reset_filters();
                    self.signal = Signal::OneWay;
                }
                self.on_delay_sample(ack.now_ns, owd);
            }
            // (Not the handshake's sample, acked_bytes = 0: a bare SYN's RTT
            // lacks a data segment's serialization time.)
            (None, Some(rtt)) if self.signal != Signal::OneWay && ack.acked_bytes > 0 => {
                // Fallback: RTT − min RTT through the same filters.
                self.signal = Signal::Rtt;
                self.on_delay_sample(ack.now_ns, rtt.min(i64::MAX as u64) as i64);
            }
            _ => {}
        }
    }

    fn on_ack(&mut self, state: &mut CcState, ack: &AckSample) {
        if ack.acked_bytes == 0 {
            return;
        }
        let mss = self.mss_of(state);
        let target = self.params.target_ns;
        // No sample yet: no queue seen, full increase (off_target = 1).
        let queuing_delay = self.queuing_delay_ns.unwrap_or(0);
        if state.in_slow_start() {
            if self.params.slow_start && queuing_delay <= target {
                slow_start(state, ack.acked_bytes);
                self.apply_caps(state, mss, ack.prior_flight_bytes);
                return;
            }
            // Leave slow start (delay above target, or slow start disabled).
            state.ssthresh_bytes = state.cwnd_bytes;
        }
        // RFC 6817 §2.4.2.
        let off_target = (target as f64 - queuing_delay as f64) / target as f64;
        let cwnd = state.cwnd_bytes as f64 + self.cwnd_remainder_bytes;
        let delta = self.params.gain * off_target * ack.acked_bytes as f64 * mss as f64 / cwnd.max(1.0);
        self.set_cwnd(state, (cwnd + delta).max(0.0));
        self.apply_caps(state, mss, ack.prior_flight_bytes);
        // Out of slow start, stay out when the window shrinks (only a
        // timeout, via the sender's cwnd = 1 MSS, brings slow start back).
        state.ssthresh_bytes = state.ssthresh_bytes.min(state.cwnd_bytes);
    }

    fn ssthresh_on_loss(
        &mut self,
        state: &CcState,
        _event: CongestionEvent,
        _flight_bytes: u64,
        now_ns: TimeNs,
    ) -> u64 {
        // At most once per RTT (RFC 6817 §2.4.2).
        if let Some((t, ssthresh)) = self.last_reduction {
            if now_ns >= t && now_ns - t < self.srtt_ns {
                return ssthresh;
            }
        }
        let mss = self.mss_of(state);
        let min_cwnd = self.params.min_cwnd_segments.saturating_mul(mss);
        let ssthresh = (state.cwnd_bytes / 2).max(min_cwnd);
        self.last_reduction = Some((now_ns, ssthresh));
        self.cwnd_remainder_bytes = 0.0;
        ssthresh
    }

    fn on_idle_restart(&mut self, _state: &mut CcState, _now_ns: TimeNs) {
        self.cwnd_remainder_bytes = 0.0;
    }
}

/// A bulk TCP flow (the real [`crate::tcp::TcpSender`] /
/// [`crate::tcp::TcpReceiver`]) through a fixed-rate drop-tail bottleneck,
/// for validating delay-based controllers end to end. Test-only.
#[cfg(test)]
pub(crate) mod tcp_loop {
    use std::collections::VecDeque;

    use crate::cc::CongestionControl;
    use crate::segment::Segment;
    use crate::tcp::{FixedRwnd, TcpConfig, TcpReceiver, TcpSender};

    pub struct LoopOutcome {
        /// Payload bits/s leaving the bottleneck after the warm-up.
        pub throughput_bps: f64,
        /// Mean time data segments waited in the queue after the warm-up.
        pub mean_wait_ns: f64,
        pub drops_after_warmup: u64,
        pub cwnd_bytes: u64,
        pub fast_retransmits: u64,
    }

    pub fn run(
        cfg: TcpConfig,
        cc: Box<dyn CongestionControl>,
        rate_bps: u64,
        one_way_ns: u64,
        limit_pkts: usize,
        duration_ns: u64,
        warmup_ns: u64,
    ) -> LoopOutcome {
        let tx_ns = |seg: &Segment| (cfg.wire_bytes(seg) as u64 * 8_000_000_000).div_ceil(rate_bps);
        let mut snd = TcpSender::new(cfg.clone(), cc, None);
        let mut rcv = TcpReceiver::new(cfg.clone(), Box::new(FixedRwnd(cfg.rwnd_bytes)));
        let mut queue: VecDeque<(Segment, u64)> = VecDeque::new();
        let mut head_done: Option<u64> = None;
        let mut fwd: VecDeque<(u64, Segment)> = VecDeque::new();
        let mut rev: VecDeque<(u64, Segment)> = VecDeque::new();
        let (mut waits, mut n_waits, mut bytes, mut drops) = (0u128, 0u64, 0u64, 0u64);
        let mut now = 0;
        snd.connect(0);
        loop {
            while rev.front().is_some_and(|(t, _)| *t <= now) {
                let (_, seg) = rev.pop_front().unwrap();
                snd.on_segment(now, &seg);
            }
            while let Some(done) = head_done.filter(|d| *d <= now) {
                let (seg, enq) = queue.pop_front().unwrap();
                if done >= warmup_ns && seg.payload_bytes > 0 {
                    waits += (done - tx_ns(&seg) - enq) as u128;
                    n_waits += 1;
                    bytes += seg.payload_bytes as u64;
                }
                fwd.push_back((done + one_way_ns, seg));
                head_done = queue.front().map(|(s, _)| done + tx_ns(s));
            }
            while fwd.front().is_some_and(|(t, _)| *t <= now) {
                let (_, seg) = fwd.pop_front().unwrap();
                rcv.on_segment(now, &seg);
            }
            if rcv.next_timeout().is_some_and(|t| t <= now) {
                rcv.on_timeout(now);
            }
            while let Some(ack) = rcv.poll_transmit(now) {
                rev.push_back((now + one_way_ns, ack));
            }
            if snd.next_timeout().is_some_and(|t| t <= now) {
                snd.on_timeout(now);
            }
            while let Some(seg) = snd.poll_transmit(now) {
                if queue.len() >= limit_pkts {
                    if now >= warmup_ns {
                        drops += 1;
                    }
                    continue;
                }
                if queue.is_empty() {
                    head_done = Some(now + tx_ns(&seg));
                }
                queue.push_back((seg, now));
            }
            let next = [
                snd.next_timeout(),
                rcv.next_timeout(),
                head_done,
                fwd.front().map(|f| f.0),
                rev.front().map(|r| r.0),
            ]
            .into_iter()
            .flatten()
            .min();
            match next {
                Some(t) if t <= duration_ns => now = t.max(now + 1),
                _ => break,
            }
        }
        LoopOutcome {
            throughput_bps: bytes as f64 * 8e9 / (duration_ns - warmup_ns) as f64,
            mean_wait_ns: waits as f64 / n_waits.max(1) as f64,
            drops_after_warmup: drops,
            cwnd_bytes: snd.cwnd_bytes(),
            fast_retransmits: snd.stats().fast_retransmits,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1448;
    const MS: u64 = NS_PER_MS;

    fn params_50ms() -> LedbatParams {
        LedbatParams {
            target_ns: 50 * MS,
            slow_start: false,
            ..LedbatParams::default()
        }
    }

    fn state(cwnd_segments: u64) -> CcState {
        CcState {
            cwnd_bytes: cwnd_segments * MSS,
            ssthresh_bytes: cwnd_segments * MSS,
            mss_bytes: MSS,
        }
    }

    /// An ACK with a one-way delay sample (clock offset included in `owd`).
    fn owd_ack(now_ns: u64, owd_ns: i64, acked: u64, flight: u64) -> AckSample {
        AckSample {
            now_ns,
            acked_bytes: acked,
            prior_flight_bytes: flight,
            flight_bytes: flight.saturating_sub(acked),
            rtt_ns: Some(100 * MS),
            srtt_ns: 100 * MS,
            min_rtt_ns: 100 * MS,
            one_way_delay_ns: Some(owd_ns),
            app_limited: false,
        }
    }

    /// One round of a cwnd-limited sender: the window open at the start of
    /// the round comes back as ACKs of (at most) one MSS, spread over
    /// 100 ms, each with OWD `base + queue`.
    fn round(cc: &mut Ledbat, st: &mut CcState, t0: u64, base: i64, queue_ns: u64) -> u64 {
        let mut left = st.cwnd_bytes;
        let acks = st.cwnd_bytes.div_ceil(MSS).max(1);
        let mut i = 0;
        while left > 0 {
            let acked = left.min(MSS);
            let now = t0 + i * 100 * MS / acks;
            let a = owd_ack(now, base + queue_ns as i64, acked, st.cwnd_bytes);
            cc.on_rtt_sample(st, &a);
            cc.on_ack(st, &a);
            left -= acked;
            i += 1;
        }
        t0 + 100 * MS
    }

    /// Establish the base delay with a few zero-queue samples.
    fn prime(cc: &mut Ledbat, st: &CcState, base: i64) {
        for i in 0..4 {
            cc.on_rtt_sample(st, &owd_ack(i * MS, base, 0, 0));
        }
    }

    #[test]
    fn grows_one_segment_per_rtt_with_no_queue() {
        let mut cc = Ledbat::new(params_50ms(), MSS);
        let mut st = state(20);
        prime(&mut cc, &st, 5 * MS as i64);
        let mut t = 10 * MS;
        for r in 1..=10 {
            t = round(&mut cc, &mut st, t, 5 * MS as i64, 0);
            let cwnd = st.cwnd_bytes as f64 / MSS as f64;
            // off_target = 1: +GAIN·MSS per cwnd of ACKed data (a little
            // less, ~0.975, because cwnd grows during the round).
            assert!(
                (cwnd - (20 + r) as f64).abs() < 0.05 * r as f64,
                "round {r}: {cwnd}"
            );
        }
        assert_eq!(cc.queuing_delay_ns(), Some(0));
    }

    #[test]
    fn grows_below_target_proportionally() {
        let mut cc = Ledbat::new(params_50ms(), MSS);
        let mut st = state(20);
        prime(&mut cc, &st, 0);
        // Queue 25 ms = half the target: +0.5 segment per RTT.
        let mut t = 10 * MS;
        for _ in 0..10 {
            t = round(&mut cc, &mut st, t, 0, 25 * MS);
        }
        let cwnd = st.cwnd_bytes as f64 / MSS as f64;
        assert!((cwnd - 25.0).abs() < 0.2, "{cwnd}");
    }

    #[test]
    fn shrinks_additively_above_target() {
        let mut cc = Ledbat::new(params_50ms(), MSS);
        let mut st = state(41);
        prime(&mut cc, &st, 0);
        // Queue 100 ms = 2·target: off_target = −1, −1 segment per RTT (no
        // multiplicative backoff). The first round warms the MIN filter.
        let mut t = round(&mut cc, &mut st, 10 * MS, 0, 100 * MS);
        st.cwnd_bytes = 40 * MSS;
        let mut prev = st.cwnd_bytes as f64 / MSS as f64;
        for r in 1..=10 {
            t = round(&mut cc, &mut st, t, 0, 100 * MS);
            let cwnd = st.cwnd_bytes as f64 / MSS as f64;
            assert!((prev - cwnd - 1.0).abs() < 0.1, "round {r}: {prev} -> {cwnd}");
            prev = cwnd;
        }
        assert!((prev - 30.0).abs() < 0.5);
        // At the target exactly: no change.
        let mut st2 = state(30);
        let mut cc2 = Ledbat::new(params_50ms(), MSS);
        prime(&mut cc2, &st2, 50 * MS as i64);
        // The base is the minimum seen: one sample at the path minimum.
        cc2.on_rtt_sample(&st2, &owd_ack(4 * MS, 0, 0, 0));
        let t = round(&mut cc2, &mut st2, 200 * MS, 0, 50 * MS);
        st2.cwnd_bytes = 30 * MSS;
        round(&mut cc2, &mut st2, t, 0, 50 * MS);
        assert_eq!(st2.cwnd_bytes, 30 * MSS);
    }

    #[test]
    fn respects_flight_cap_and_min_cwnd() {
        let mut cc = Ledbat::new(params_50ms(), MSS);
        let mut st = state(20);
        prime(&mut cc, &st, 0);
        // Application-limited: only 5 segments in flight. cwnd may not
        // exceed flight + ALLOWED_INCREASE·MSS.
        for i in 0..50 {
            let a = owd_ack(10 * MS + i * MS, 0, MSS, 5 * MSS);
            cc.on_rtt_sample(&st, &a);
            cc.on_ack(&mut st, &a);
            assert!(st.cwnd_bytes <= 6 * MSS);
        }
        assert_eq!(st.cwnd_bytes, 6 * MSS);
        // Huge queue: cwnd falls but never below MIN_CWND = 2 segments.
        let mut st = state(10);
        for i in 0..1000 {
            let a = owd_ack(100 * MS + i * MS, 10_000 * MS as i64, MSS, st.cwnd_bytes);
            cc.on_rtt_sample(&st, &a);
            cc.on_ack(&mut st, &a);
            assert!(st.cwnd_bytes >= 2 * MSS);
        }
        assert_eq!(st.cwnd_bytes, 2 * MSS);
    }

    #[test]
    fn constant_clock_offset_is_ignored() {
        let run = |offset: i64| {
            let mut cc = Ledbat::new(params_50ms(), MSS);
            let mut st = state(20);
            prime(&mut cc, &st, offset);
            let mut t = 10 * MS;
            let mut trace = Vec::new();
            for (i, q) in [0u64, 10, 30, 60, 90, 40, 0, 70].iter().enumerate() {
                t = round(&mut cc, &mut st, t, offset, q * MS + i as u64);
                trace.push((st.cwnd_bytes, cc.queuing_delay_ns()));
            }
            trace
        };
        let reference = run(0);
        for offset in [
            1_000_000_000_000i64,
            -1_000_000_000_000,
            i64::MAX / 4,
            -(i64::MAX / 4),
        ] {
            assert_eq!(run(offset), reference, "offset {offset}");
        }
    }

    #[test]
    fn current_filter_takes_min_of_recent_samples_and_base_rolls_by_minute() {
        let mut cc = Ledbat::new(params_50ms(), MSS);
        let st = state(10);
        let a = |t: u64, d: i64| owd_ack(t, d, 0, 0);
        cc.on_rtt_sample(&st, &a(0, 10 * MS as i64));
        for (i, d) in [40, 30, 50, 60].iter().enumerate() {
            cc.on_rtt_sample(&st, &a((i as u64 + 1) * MS, (10 + d) * MS as i64));
        }
        // Last 4 samples: 40, 30, 50, 60 ms above base → min 30 ms.
        assert_eq!(cc.queuing_delay_ns(), Some(30 * MS));
        // Samples older than one SRTT (100 ms) drop out of the filter.
        cc.on_rtt_sample(&st, &a(200 * MS, 80 * MS as i64));
        assert_eq!(cc.queuing_delay_ns(), Some(70 * MS));
        // The base delay of minute 0 survives 9 more minutes, then expires.
        cc.on_rtt_sample(&st, &a(9 * NS_PER_MINUTE + 1, 50 * MS as i64));
        assert_eq!(cc.base_delay_ns(), Some(10 * MS as i64));
        cc.on_rtt_sample(&st, &a(10 * NS_PER_MINUTE + 1, 50 * MS as i64));
        assert_eq!(cc.base_delay_ns(), Some(50 * MS as i64));
        assert_eq!(cc.queuing_delay_ns(), Some(0));
    }

    #[test]
    fn slow_start_exits_when_delay_exceeds_target() {
        let mut cc = Ledbat::new(
            LedbatParams {
                target_ns: 50 * MS,
                ..LedbatParams::default()
            },
            MSS,
        );
        let mut st = CcState {
            cwnd_bytes: 10 * MSS,
            ssthresh_bytes: u64::MAX,
            mss_bytes: MSS,
        };
        prime(&mut cc, &st, 0);
        let t = round(&mut cc, &mut st, 10 * MS, 0, 10 * MS);
        assert_eq!(st.cwnd_bytes, 20 * MSS); // doubled
        assert!(st.in_slow_start());
        // The MIN filter lets three more slow-start ACKs through before the
        // 60 ms samples dominate it; then LEDBAT's law takes over.
        let t = round(&mut cc, &mut st, t, 0, 60 * MS);
        assert!(!st.in_slow_start());
        let after_exit = st.cwnd_bytes;
        assert!(after_exit <= 23 * MSS, "{after_exit}");
        round(&mut cc, &mut st, t, 0, 60 * MS);
        assert!(st.cwnd_bytes < after_exit); // above target: shrinking
    }

    #[test]
    fn loss_halves_once_per_rtt() {
        let mut cc = Ledbat::new(params_50ms(), MSS);
        let st = state(40);
        prime(&mut cc, &st, 0);
        let e = CongestionEvent::FastRetransmit;
        assert_eq!(cc.ssthresh_on_loss(&st, e, 40 * MSS, 1_000 * MS), 20 * MSS);
        let st2 = state(20);
        // Within one SRTT (100 ms): no second halving.
        assert_eq!(cc.ssthresh_on_loss(&st2, e, 20 * MSS, 1_050 * MS), 20 * MSS);
        assert_eq!(cc.ssthresh_on_loss(&st2, e, 20 * MSS, 1_200 * MS), 10 * MSS);
        assert_eq!(
            cc.ssthresh_on_loss(&state(3), CongestionEvent::Timeout, 0, 5_000 * MS),
            2 * MSS
        );
    }

    #[test]
    fn rtt_fallback_without_timestamps() {
        let mut cc = Ledbat::new(params_50ms(), MSS);
        let mut st = state(20);
        let ack = |t: u64, rtt: u64| AckSample {
            now_ns: t,
            acked_bytes: MSS,
            prior_flight_bytes: 20 * MSS,
            rtt_ns: Some(rtt),
            srtt_ns: 100 * MS,
            ..AckSample::default()
        };
        cc.on_rtt_sample(&st, &ack(0, 40 * MS));
        assert!(cc.uses_rtt_fallback());
        for i in 1..10 {
            cc.on_rtt_sample(&st, &ack(i * 200 * MS, 140 * MS));
        }
        assert_eq!(cc.queuing_delay_ns(), Some(100 * MS));
        let before = st.cwnd_bytes;
        cc.on_ack(&mut st, &ack(3 * NS_PER_SEC, 140 * MS));
        assert!(st.cwnd_bytes < before);
        // A one-way sample switches the signal and resets the filters.
        let mut a = ack(4 * NS_PER_SEC, 140 * MS);
        a.one_way_delay_ns = Some(-7);
        cc.on_rtt_sample(&st, &a);
        assert!(!cc.uses_rtt_fallback());
        assert_eq!(cc.queuing_delay_ns(), Some(0));
    }

    #[test]
    fn degenerate_inputs_do_not_panic() {
        let weird = LedbatParams {
            target_ns: 0,
            gain: f64::NAN,
            base_history: 0,
            current_filter: 1000,
            min_cwnd_segments: 0,
            allowed_increase_segments: 0,
            slow_start: true,
        };
        assert!(weird.validate().is_err());
        let mut cc = Ledbat::new(weird, 0);
        assert!(cc.params().validate().is_ok());
        for st0 in [
            CcState {
                cwnd_bytes: 0,
                ssthresh_bytes: 0,
                mss_bytes: 0,
            },
            CcState {
                cwnd_bytes: u64::MAX,
                ssthresh_bytes: u64::MAX,
                mss_bytes: u64::MAX,
            },
        ] {
            let mut st = st0;
            for (t, d) in [(0, i64::MIN), (u64::MAX, i64::MAX), (5, 0), (0, -1)] {
                let a = AckSample {
                    now_ns: t,
                    acked_bytes: u64::MAX,
                    prior_flight_bytes: u64::MAX,
                    rtt_ns: Some(u64::MAX),
                    srtt_ns: u64::MAX,
                    one_way_delay_ns: Some(d),
                    ..AckSample::default()
                };
                cc.on_rtt_sample(&st, &a);
                cc.on_ack(&mut st, &a);
                let _ = cc.ssthresh_on_loss(&st, CongestionEvent::Timeout, u64::MAX, t);
            }
        }
    }

    /// Through the real TCP sender (timestamps on, SACK, delayed ACKs):
    /// a 10 Mb/s bottleneck with a 250 ms buffer, 20 ms each way. LEDBAT
    /// holds the queueing delay near TARGET and fills the link; NewReno
    /// fills the buffer.
    #[test]
    fn end_to_end_holds_queueing_delay_near_target() {
        use crate::tcp::TcpConfig;
        let cfg = TcpConfig::linux();
        let rate_bps = 10_000_000;
        let limit_pkts = 210; // ≈ 250 ms of 1500 B packets
        for target_ms in [25u64, 50, 100] {
            let params = LedbatParams {
                target_ns: target_ms * MS,
                ..LedbatParams::default()
            };
            let o = tcp_loop::run(
                cfg.clone(),
                Box::new(Ledbat::new(params, 1448)),
                rate_bps,
                20 * MS,
                limit_pkts,
                40 * NS_PER_SEC,
                10 * NS_PER_SEC,
            );
            eprintln!(
                "LEDBAT target {target_ms} ms: {:.2} Mb/s, mean wait {:.1} ms, drops {}, cwnd {}",
                o.throughput_bps / 1e6,
                o.mean_wait_ns / 1e6,
                o.drops_after_warmup,
                o.cwnd_bytes / 1448
            );
            assert!(o.throughput_bps > 0.9 * rate_bps as f64);
            let wait_ms = o.mean_wait_ns / 1e6;
            assert!(
                wait_ms > 0.6 * target_ms as f64 && wait_ms < 1.2 * target_ms as f64 + 5.0,
                "target {target_ms}: {wait_ms} ms"
            );
            assert_eq!(o.drops_after_warmup, 0);
        }
        let reno = tcp_loop::run(
            cfg,
            Box::new(crate::cc::NewReno::new()),
            rate_bps,
            20 * MS,
            limit_pkts,
            40 * NS_PER_SEC,
            10 * NS_PER_SEC,
        );
        eprintln!("NewReno: mean wait {:.1} ms", reno.mean_wait_ns / 1e6);
        assert!(reno.mean_wait_ns > 100.0 * MS as f64);
    }
}
