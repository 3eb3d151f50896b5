//! TFRC (RFC 5348) and DFlow as sans-IO machines: a rate-paced media-like
//! sender ([`TfrcSender`]) and a receiver ([`TfrcReceiver`]) that measures
//! loss (and, for DFlow, one-way delay) and reports once per RTT.
//!
//! Driving either end: after `new`, `on_feedback` / `on_data` or
//! `on_timeout`, call `poll_transmit(now)` / `poll_feedback(now)` until it
//! returns `None`, send what it returned, then arm a timer at
//! `next_timeout()`. `on_timeout` may be called early or spuriously; it acts
//! only on what is due. The sender is a source that always has data: it
//! sends packets of `segment_bytes` paced at the allowed rate X.
//!
//! The pieces:
//! - [`equation`]: the TCP throughput equation (RFC 5348 §3.1) and its
//!   inverse (RFC 5348 §6.3.1).
//! - `history`: the loss-interval history and the loss event rate p
//!   (RFC 5348 §5.3–5.4), shared by loss events and DFlow's delay events.
//! - `delay`: DFlow's one-way-delay filters (base and current delay).
//! - `sender`: RFC 5348 §4 (initial rate, feedback processing, slow start,
//!   X_recv_set, no-feedback timer, pacing) and DFlow's rate law.
//! - `receiver`: RFC 5348 §5–6 (loss detection with NDUPACK, loss events,
//!   X_recv, feedback timing, first-interval seeding) and DFlow's delay
//!   congestion events.
//!
//! DFlow (O'Hanlon & Carlberg, draft-ohanlon-rmcat-dflow) is selected with
//! [`TfrcMode::DFlow`] in the shared config and changes both ends: the
//! receiver turns sustained queueing delay (current − base one-way delay
//! above `cd_thresh`) into congestion events in the same interval history as
//! losses; the sender, in congestion avoidance, moves toward the equation
//! rate by at most one packet per RTT upward and drops to it at once
//! downward. Everything else (slow start, X_recv limit, no-feedback timer)
//! is TFRC's. The delay-variance threshold the DFlow authors tried (and
//! found unfair) is not offered.
//!
//! Units: times are u64 ns on each host's own clock (the two clocks may be
//! offset arbitrarily: the receiver only uses differences of its own clock
//! and differences of the sender's timestamps, and the sender computes RTT
//! from its own echoed timestamp). Rates are f64; the wire carries bits/s,
//! the internals work in bytes/s as RFC 5348 does.

mod delay;
pub mod equation;
mod history;
mod receiver;
mod sender;
#[cfg(test)]
mod tests;

pub use equation::{f_of_p, loss_event_rate_for_rate, throughput_bytes_per_s};
pub use history::{weighted_i_mean, LOSS_INTERVAL_WEIGHTS, N_LOSS_INTERVALS};
pub use receiver::{TfrcReceiver, TfrcReceiverStats, MAX_SEQ, REORDER_WINDOW};
pub use sender::{TfrcSender, TfrcSenderStats};

use crate::{NS_PER_MS, NS_PER_SEC};

/// A data packet (RFC 5348 §3.2.1: sequence number, timestamp, the
/// sender's RTT estimate).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TfrcData {
    pub seq: u64,
    /// Sender's clock when the packet was sent.
    pub send_ts_ns: u64,
    /// The sender's current RTT estimate R, ns (0 before the first feedback).
    pub rtt_ns: u64,
    pub payload_bytes: u32,
}

/// A feedback packet (RFC 5348 §3.2.2).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TfrcFeedback {
    /// `send_ts_ns` of the last data packet received (sender's clock).
    pub t_recvdata_ns: u64,
    /// Time between receiving that packet and sending this report
    /// (receiver's clock difference).
    pub t_delay_ns: u64,
    /// X_recv: rate at which data was received over the last RTT, bits/s.
    pub x_recv_bps: f64,
    /// p: loss event rate (congestion event rate for DFlow), in [0, 1].
    pub p: f64,
}

/// DFlow's delay-based congestion detection (tfrc-dflow spec).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DflowParams {
    /// base_period in RTTs: base_delay = min OWD over the last
    /// `base_period_rtts`·R (at least two current periods). Default 10.
    ///
    /// Beware: a queue that stands longer than base_period is absorbed into
    /// the base delay. With the default, a single flow whose TFRC rate tracks
    /// the link while p decays builds its queue by a few ms per second, the
    /// detector never sees current − base above cd_thresh, and the queue
    /// creeps up as TFRC's would (pinned down by the test
    /// `dflow_default_base_window_drifts_with_a_standing_queue`); a long
    /// base window (e.g. 1000 RTTs) holds the queue below cd_thresh.
    pub base_period_rtts: f64,
    /// current_period, ns: current_delay = min OWD over it. Default 50 ms.
    pub current_period_ns: u64,
    /// cd_thresh, ns: queueing delay (current − base) above which a delay
    /// congestion event is flagged. Default 50 ms.
    pub cd_thresh_ns: u64,
    /// Also require current_delay to have risen since the previous current
    /// period (the optional gradient test; off in the study). Default false.
    pub gradient_test: bool,
}

impl Default for DflowParams {
    fn default() -> Self {
        Self {
            base_period_rtts: 10.0,
            current_period_ns: 50 * NS_PER_MS,
            cd_thresh_ns: 50 * NS_PER_MS,
            gradient_test: false,
        }
    }
}

impl DflowParams {
    pub fn validate(&self) -> Result<(), String> {
        if !(self.base_period_rtts.is_finite()
            && self.base_period_rtts >= 1.0
            && self.base_period_rtts <= 10_000.0)
        {
            return Err(format!(
                "dflow base_period_rtts must be in [1, 10000], got {}",
                self.base_period_rtts
            ));
        }
        if self.current_period_ns == 0 || self.current_period_ns > 60 * NS_PER_SEC {
            return Err(format!(
                "dflow current_period must be in (0, 60 s], got {} ns",
                self.current_period_ns
            ));
        }
        if self.cd_thresh_ns == 0 || self.cd_thresh_ns > 60 * NS_PER_SEC {
            return Err(format!(
                "dflow cd_thresh must be in (0, 60 s], got {} ns",
                self.cd_thresh_ns
            ));
        }
        Ok(())
    }
}

/// Plain TFRC or DFlow on top of it.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum TfrcMode {
    #[default]
    Tfrc,
    DFlow(DflowParams),
}

/// Configuration shared by both ends (RFC 5348 defaults in [`Default`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TfrcConfig {
    pub mode: TfrcMode,
    /// s: payload of every data packet and the s of the equation, bytes
    /// (RFC 5348 §4.1; fixed here: the media source sends full packets).
    pub segment_bytes: u32,
    /// No-feedback timer before the first feedback, ns (RFC 5348 §4.2: 2 s).
    pub initial_no_feedback_ns: u64,
    /// t_mbi: maximum back-off interval, ns; the rate never falls below
    /// s/t_mbi (RFC 5348 §4.3: 64 s).
    pub t_mbi_ns: u64,
    /// q in R = q·R + (1 − q)·R_sample (RFC 5348 §4.3 step 2: 0.9).
    pub rtt_filter_q: f64,
    /// NDUPACK: a packet is lost once this many later packets arrived
    /// (RFC 5348 §5.1: 3).
    pub ndupack: u32,
    /// RFC 5348 §4.5 oscillation reduction (optional; off by default and
    /// not allowed with DFlow).
    pub oscillation_reduction: bool,
}

impl Default for TfrcConfig {
    fn default() -> Self {
        Self {
            mode: TfrcMode::Tfrc,
            segment_bytes: 1200,
            initial_no_feedback_ns: 2 * NS_PER_SEC,
            t_mbi_ns: 64 * NS_PER_SEC,
            rtt_filter_q: 0.9,
            ndupack: 3,
            oscillation_reduction: false,
        }
    }
}

/// Largest NDUPACK accepted (the receiver's reordering window is larger).
pub const MAX_NDUPACK: u32 = 64;

impl TfrcConfig {
    /// DFlow with its default parameters.
    pub fn dflow() -> Self {
        Self {
            mode: TfrcMode::DFlow(DflowParams::default()),
            ..Self::default()
        }
    }

    /// Check every field; the error names the offending one.
    pub fn validate(&self) -> Result<(), String> {
        if self.segment_bytes == 0 || self.segment_bytes > 65_535 {
            return Err(format!(
                "tfrc segment_bytes must be in 1..=65535, got {}",
                self.segment_bytes
            ));
        }
        if self.initial_no_feedback_ns == 0 || self.initial_no_feedback_ns > 3600 * NS_PER_SEC {
            return Err(format!(
                "tfrc initial_no_feedback must be in (0, 3600 s], got {} ns",
                self.initial_no_feedback_ns
            ));
        }
        if self.t_mbi_ns == 0 || self.t_mbi_ns > 3600 * NS_PER_SEC {
            return Err(format!(
                "tfrc t_mbi must be in (0, 3600 s], got {} ns",
                self.t_mbi_ns
            ));
        }
        if !(self.rtt_filter_q.is_finite() && (0.0..1.0).contains(&self.rtt_filter_q)) {
            return Err(format!(
                "tfrc rtt_filter_q must be in [0, 1), got {}",
                self.rtt_filter_q
            ));
        }
        if self.ndupack == 0 || self.ndupack > MAX_NDUPACK {
            return Err(format!(
                "tfrc ndupack must be in 1..={MAX_NDUPACK}, got {}",
                self.ndupack
            ));
        }
        if let TfrcMode::DFlow(d) = self.mode {
            d.validate()?;
            if self.oscillation_reduction {
                return Err(
                    "dflow disables TFRC's oscillation reduction; set oscillation_reduction = false"
                        .to_string(),
                );
            }
        }
        Ok(())
    }

    /// Invalid fields replaced by defaults, so the machines never divide by
    /// zero or index out of bounds whatever they are given.
    pub(crate) fn sanitized(self) -> Self {
        let d = Self::default();
        let mode = match self.mode {
            TfrcMode::DFlow(p) if p.validate().is_err() => {
                let dp = DflowParams::default();
                TfrcMode::DFlow(DflowParams {
                    base_period_rtts: if p.base_period_rtts.is_finite()
                        && (1.0..=10_000.0).contains(&p.base_period_rtts)
                    {
                        p.base_period_rtts
                    } else {
                        dp.base_period_rtts
                    },
                    current_period_ns: if p.current_period_ns == 0 || p.current_period_ns > 60 * NS_PER_SEC {
                        dp.current_period_ns
                    } else {
                        p.current_period_ns
                    },
                    cd_thresh_ns: if p.cd_thresh_ns == 0 || p.cd_thresh_ns > 60 * NS_PER_SEC {
                        dp.cd_thresh_ns
                    } else {
                        p.cd_thresh_ns
                    },
                    gradient_test: p.gradient_test,
                })
            }
            m => m,
        };
        let dflow = matches!(mode, TfrcMode::DFlow(_));
        Self {
            mode,
            segment_bytes: if self.segment_bytes == 0 || self.segment_bytes > 65_535 {
                d.segment_bytes
            } else {
                self.segment_bytes
            },
            initial_no_feedback_ns: if self.initial_no_feedback_ns == 0 {
                d.initial_no_feedback_ns
            } else {
                self.initial_no_feedback_ns.min(3600 * NS_PER_SEC)
            },
            t_mbi_ns: if self.t_mbi_ns == 0 {
                d.t_mbi_ns
            } else {
                self.t_mbi_ns.min(3600 * NS_PER_SEC)
            },
            rtt_filter_q: if self.rtt_filter_q.is_finite() && (0.0..1.0).contains(&self.rtt_filter_q) {
                self.rtt_filter_q
            } else {
                d.rtt_filter_q
            },
            ndupack: if self.ndupack == 0 || self.ndupack > MAX_NDUPACK {
                d.ndupack
            } else {
                self.ndupack
            },
            oscillation_reduction: self.oscillation_reduction && !dflow,
        }
    }

    /// The DFlow parameters, if DFlow is selected.
    pub fn dflow_params(&self) -> Option<DflowParams> {
        match self.mode {
            TfrcMode::DFlow(p) => Some(p),
            TfrcMode::Tfrc => None,
        }
    }
}

#[cfg(test)]
mod config_tests {
    use super::*;

    #[test]
    fn defaults_validate_and_bad_fields_are_named() {
        assert!(TfrcConfig::default().validate().is_ok());
        assert!(TfrcConfig::dflow().validate().is_ok());
        let e = TfrcConfig {
            segment_bytes: 0,
            ..TfrcConfig::default()
        }
        .validate()
        .unwrap_err();
        assert!(e.contains("segment_bytes"), "{e}");
        let e = TfrcConfig {
            rtt_filter_q: 1.0,
            ..TfrcConfig::default()
        }
        .validate()
        .unwrap_err();
        assert!(e.contains("rtt_filter_q"), "{e}");
        let e = TfrcConfig {
            oscillation_reduction: true,
            ..TfrcConfig::dflow()
        }
        .validate()
        .unwrap_err();
        assert!(e.contains("oscillation"), "{e}");
        let e = TfrcConfig {
            mode: TfrcMode::DFlow(DflowParams {
                cd_thresh_ns: 0,
                ..DflowParams::default()
            }),
            ..TfrcConfig::default()
        }
        .validate()
        .unwrap_err();
        assert!(e.contains("cd_thresh"), "{e}");
    }

    #[test]
    fn sanitized_is_always_valid() {
        let bad = TfrcConfig {
            mode: TfrcMode::DFlow(DflowParams {
                base_period_rtts: f64::NAN,
                current_period_ns: 0,
                cd_thresh_ns: u64::MAX,
                gradient_test: true,
            }),
            segment_bytes: 0,
            initial_no_feedback_ns: 0,
            t_mbi_ns: 0,
            rtt_filter_q: f64::INFINITY,
            ndupack: 0,
            oscillation_reduction: true,
        };
        assert!(bad.validate().is_err());
        assert!(bad.sanitized().validate().is_ok());
    }
}
