//! Congestion control behind a narrow interface, in the spirit of Linux's
//! `struct tcp_congestion_ops`: the sender owns loss detection, recovery and
//! retransmission; a controller owns only its own state and decides how the
//! congestion window grows on ACKs and where ssthresh lands after a
//! congestion event.
//!
//! A controller that needs delay (Vegas, LEDBAT) or bandwidth estimates
//! (Westwood+) gets what it needs from [`AckSample`] and its own fields. A
//! coupled multipath controller (MPTCP LIA, OLIA) also needs a view of the
//! other subflows of its connection: the connection hands it one before
//! an ACK through [`CongestionControl::on_coupling`], before every ACK or
//! only after a window changed, as [`CongestionControl::coupling_refresh`]
//! asks (a single-path controller never gets one, and is then an uncoupled
//! subflow controller).
//!
//! # Choosing a controller: [`CcSpec`]
//!
//! A scenario names a controller and may set its constants
//! (`cc = "cubic"`, `cc_params = { beta = 0.8 }`). [`CcSpec::parse`] turns
//! that into a typed, validated [`CcSpec`] once, when the scenario is built;
//! every error (unknown name, unknown or repeated knob, a value that is not
//! finite or out of range) is reported there. [`CcSpec::build`] then makes a
//! fresh controller for each connection and cannot fail.
//!
//! Each controller's constants are a struct in the controller's own file
//! (`CubicParams` beside `Cubic`, ...) implementing [`ControllerParams`]:
//! its defaults, its knobs with their ranges (the text error messages
//! print), how a knob is set from a scenario number, `validate()` and
//! `build()`. This file only lists the controllers, once, in the
//! `controllers!` invocation below.
//!
//! # Adding a controller
//!
//! 1. Write `cc/NAME.rs`: the controller (a [`CongestionControl`]) and its
//!    parameter struct implementing [`ControllerParams`] (`Default` with the
//!    paper's or RFC's constants, `KNOBS`, `set`, `validate`, `build`). A
//!    controller without constants uses an empty struct (see
//!    [`NewRenoParams`]). Use [`slow_start`] and [`cong_avoid_ai`] for the
//!    standard growth rules rather than writing them again.
//! 2. In this file: `mod NAME;`, a `pub use` of its types, and one line in
//!    `controllers!` giving the [`CcSpec`] variant, its parameter type and
//!    its scenario name(s), e.g. `Htcp(HtcpParams) = "htcp";`.
//!
//! Nothing else changes: the simulator's scenario validation, its error
//! messages (which list the names and the knobs) and the construction of
//! each connection's controller all go through [`CcSpec`]. H-TCP
//! (`htcp.rs`) and Westwood+ (`westwood.rs`) were added exactly this way.

mod bbr;
mod cubic;
mod htcp;
mod ledbat;
mod lia;
mod minmax;
mod newreno;
mod olia;
mod vegas;
mod westwood;

pub use bbr::{Bbr, BbrMode, BbrParams};
pub use cubic::{Cubic, CubicParams};
pub use htcp::{Htcp, HtcpParams};
pub use ledbat::{Ledbat, LedbatParams, LEDBAT_MAX_BASE_HISTORY, LEDBAT_MAX_CURRENT_FILTER};
pub use lia::{lia_alpha, Lia, LiaParams};
pub use minmax::WindowedMax;
pub use newreno::{NewReno, NewRenoParams};
pub use olia::{olia_epsilons, Olia, OliaParams};
pub use vegas::{Vegas, VegasParams};
pub use westwood::{Westwood, WestwoodParams};

use crate::knobs;
pub use crate::knobs::{knob_flag, knob_real, knob_whole, Knob, Knobs};
use crate::TimeNs;

/// The window state a controller may read and write. Bytes throughout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CcState {
    pub cwnd_bytes: u64,
    pub ssthresh_bytes: u64,
    /// Sender maximum segment size (payload bytes).
    pub mss_bytes: u64,
}

impl CcState {
    pub fn in_slow_start(&self) -> bool {
        self.cwnd_bytes < self.ssthresh_bytes
    }
}

/// What one arriving ACK told the sender.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AckSample {
    pub now_ns: TimeNs,
    /// Bytes newly acknowledged cumulatively by this ACK.
    pub acked_bytes: u64,
    /// Bytes in flight before this ACK was processed.
    pub prior_flight_bytes: u64,
    /// Bytes in flight after it.
    pub flight_bytes: u64,
    /// RTT measured from this ACK (Karn's rule or timestamps), if any.
    pub rtt_ns: Option<u64>,
    /// Smoothed RTT after this ACK (0 before the first sample).
    pub srtt_ns: u64,
    /// Smallest RTT seen on the connection (0 before the first sample).
    pub min_rtt_ns: u64,
    /// One-way delay from timestamps: peer's TSval minus our echoed TSval.
    /// Only differences are meaningful (the clocks may be offset).
    pub one_way_delay_ns: Option<i64>,
    /// True when the sender is limited by the application, not by cwnd:
    /// growing cwnd then is not justified (RFC 7661).
    pub app_limited: bool,
}

/// One delivery-rate sample (draft-cheng-iccrg-delivery-rate-estimation,
/// Linux `struct rate_sample` filled by `tcp_rate_gen`), given on every ACK
/// to a controller that asks for samples
/// ([`CongestionControl::wants_rate_samples`]). Counts are in segments (the
/// sender's packets), times in ns.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RateSample {
    pub now_ns: TimeNs,
    /// Segments delivered over [`interval_ns`](Self::interval_ns):
    /// connection `delivered` now minus `delivered` when the newest
    /// acknowledged segment was sent.
    pub delivered_segs: u64,
    /// The sample's interval, max(send phase, ACK phase); 0 when this ACK
    /// gives no valid sample (nothing newly delivered with timing, or an
    /// interval shorter than min_rtt: `tcp_rate_gen`'s `interval_us = -1`).
    pub interval_ns: u64,
    /// Connection `delivered` when the newest acknowledged segment was sent
    /// (`rs->prior_delivered`); the round-trip counter keys on it.
    pub prior_delivered_segs: u64,
    /// Segments newly cumulatively acknowledged or SACKed by this ACK.
    pub acked_sacked_segs: u64,
    /// Segments newly counted lost since the previous ACK.
    pub losses_segs: u64,
    /// Some moment of the sampled flight was application-limited.
    pub is_app_limited: bool,
    /// RTT measured from this ACK, if any.
    pub rtt_ns: Option<u64>,
    /// Smoothed RTT after this ACK (0 before the first sample).
    pub srtt_ns: u64,
    /// Segments in flight before and after this ACK.
    pub prior_in_flight_segs: u64,
    pub in_flight_segs: u64,
    /// The connection's totals (Linux `tp->delivered`, `tp->lost`) and the
    /// time of the latest delivery (`tp->delivered_mstamp`).
    pub conn_delivered_segs: u64,
    pub conn_lost_segs: u64,
    pub delivered_ns: TimeNs,
    /// When the pacer lets the next segment leave (Linux's earliest
    /// departure time `tcp_wstamp_ns`); at most `now_ns` when not waiting.
    pub next_send_ns: TimeNs,
    /// The sender's loss state after this ACK (Linux `icsk_ca_state`).
    pub ca_state: crate::tcp::CaState,
}

impl RateSample {
    /// `tcp_rate_gen`'s validity: a delivery count over a positive interval.
    pub fn is_valid(&self) -> bool {
        self.interval_ns > 0
    }
}

/// What a coupled multipath controller sees of one subflow of its
/// connection (RFC 6356 §3; Khalili et al., OLIA). The connection builds
/// one per established subflow with an RTT estimate whenever it gives a
/// controller a view ([`CongestionControl::on_coupling`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SubflowCoupling {
    /// The subflow's congestion window; during fast recovery its ssthresh,
    /// because the window inflated by duplicate ACKs is not its rate (Linux
    /// OLIA's `mptcp_get_crt_cwnd`).
    pub cwnd_bytes: u64,
    /// Smoothed RTT (RFC 6298), positive.
    pub srtt_ns: u64,
    /// OLIA's ℓ_r: bytes acknowledged between the subflow's last two loss
    /// events, or since the last one if that is more (Linux
    /// `max(loss3 − loss2, loss2 − loss1)`).
    pub loss_interval_bytes: u64,
}

/// A model-based controller's path model at one instant
/// ([`CongestionControl::model_sample`]): what it estimates and what it
/// aims for, to compare with another implementation's traces.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModelSample {
    /// The controller's state ([`CongestionControl::mode_name`]).
    pub mode: &'static str,
    /// The bandwidth estimate in use, TCP payload bytes per second.
    pub bw_bytes_per_s: u64,
    /// The windowed minimum RTT; None before the first sample.
    pub min_rtt_ns: Option<u64>,
    /// The gains in force (1.0 = pace at bw, cwnd at one BDP).
    pub pacing_gain: f64,
    pub cwnd_gain: f64,
    /// The congestion window the controller grows toward, segments.
    pub target_cwnd_segments: u64,
    /// A long-term (policer) estimate replaces the windowed max bw.
    pub lt_bw_in_use: bool,
}

/// The kind of congestion event that led the sender to call
/// [`CongestionControl::ssthresh_on_loss`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CongestionEvent {
    /// Loss detected by duplicate ACKs or SACK; fast recovery follows.
    FastRetransmit,
    /// The retransmission timer expired; cwnd falls to one segment.
    Timeout,
    /// An ACK carried ECN-Echo (RFC 3168 §6.1.2): the same reduction as
    /// a loss, with nothing to retransmit; cwnd falls to the new ssthresh.
    Ecn,
}

/// A pluggable congestion controller.
pub trait CongestionControl: Send {
    /// Short name as used in scenario files ("newreno", "cubic", ...).
    fn name(&self) -> &'static str;

    /// An ACK advanced `snd_una` while the sender was not in loss recovery:
    /// grow the window (slow start and congestion avoidance both live here,
    /// as in Linux `cong_avoid`).
    fn on_ack(&mut self, state: &mut CcState, ack: &AckSample);

    /// Every ACK that carries an RTT or delay sample, in or out of recovery,
    /// before `on_ack`. Delay-based controllers track their filters here.
    fn on_rtt_sample(&mut self, _state: &CcState, _ack: &AckSample) {}

    /// A congestion event: return the new ssthresh in bytes. The sender then
    /// sets cwnd as its recovery algorithm prescribes (RFC 5681 / 6582 / 6675)
    /// or to one segment after a timeout.
    fn ssthresh_on_loss(
        &mut self,
        state: &CcState,
        event: CongestionEvent,
        flight_bytes: u64,
        now_ns: TimeNs,
    ) -> u64;

    /// Fast recovery ended (a full ACK). The sender has already set cwnd per
    /// RFC 6582 §3.2 step 3; a controller may adjust it.
    fn on_recovery_exit(&mut self, _state: &mut CcState, _now_ns: TimeNs) {}

    /// The connection restarts after an idle period longer than the RTO
    /// (RFC 5681 §4.1); the sender has already reduced cwnd.
    fn on_idle_restart(&mut self, _state: &mut CcState, _now_ns: TimeNs) {}

    /// A multipath connection's view of all its established subflows, given
    /// before an ACK on this subflow is processed, as often as
    /// [`coupling_refresh`](Self::coupling_refresh) asks; `me` is this
    /// subflow's index in `subflows`. Coupled controllers (LIA, OLIA) keep
    /// what they need of it; every other controller ignores it and runs
    /// uncoupled.
    fn on_coupling(&mut self, _subflows: &[SubflowCoupling], _me: usize) {}

    /// A rate-based controller (Linux `cong_control`, BBR): asked once,
    /// when the sender is built. When true the sender keeps the delivery-rate
    /// estimator, calls [`on_rate_sample`](Self::on_rate_sample) on every
    /// ACK instead of `on_ack`, leaves cwnd to the controller in every state
    /// (no RFC 5681/6582/6675 recovery window) and paces at
    /// [`pacing_rate_bytes_per_s`](Self::pacing_rate_bytes_per_s). Other
    /// controllers pay nothing for the estimator.
    fn wants_rate_samples(&self) -> bool {
        false
    }

    /// Every ACK of a rate-based controller, after the sender's loss
    /// detection and recovery step: update the model and set cwnd. Returns
    /// true to mark the connection application-limited from now (Linux BBR
    /// sets `tp->app_limited` in PROBE_RTT so its low-rate samples do not
    /// lower the bandwidth estimate).
    fn on_rate_sample(&mut self, _state: &mut CcState, _rs: &RateSample) -> bool {
        false
    }

    /// A rate-based controller's pacing rate, TCP payload bytes per second
    /// (Linux `sk_pacing_rate`, which paces each segment's payload length).
    /// 0: no pacing.
    fn pacing_rate_bytes_per_s(&self) -> u64 {
        0
    }

    /// A rate-based controller's sender starts sending with nothing in
    /// flight (Linux `CA_EVENT_TX_START`); `app_limited` when the
    /// connection was application-limited.
    fn on_tx_start(&mut self, _state: &mut CcState, _now_ns: TimeNs, _app_limited: bool) {}

    /// A controller with named states reports the current one (BBR:
    /// "startup", "drain", "probe_bw", "probe_rtt"), for tests and traces.
    fn mode_name(&self) -> Option<&'static str> {
        None
    }

    /// A model-based controller's estimates now (BBR: what Linux's
    /// `bbr_get_info` reports, with the mode and the cwnd target), for
    /// traces; None for a window-based controller.
    fn model_sample(&self) -> Option<ModelSample> {
        None
    }

    /// The flow's own random stream seed, given once after construction by
    /// a driver that has one (the simulator derives it from the scenario
    /// seed). Controllers that draw random numbers use it; others ignore it.
    fn set_seed(&mut self, _seed: u64) {}

    /// When the connection gives [`on_coupling`](Self::on_coupling) a
    /// fresh view. Asked once, when the subflow is added: the answer is
    /// fixed for the controller. Uncoupled controllers: never.
    fn coupling_refresh(&self) -> CouplingRefresh {
        CouplingRefresh::Never
    }
}

/// How often a coupled controller needs the connection's view of its
/// subflows ([`CongestionControl::on_coupling`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CouplingRefresh {
    /// An uncoupled controller: no view is built.
    Never,
    /// Before every ACK on the subflow (OLIA, whose increase reads every
    /// path's current window and RTT).
    EveryAck,
    /// Before the first ACK on the subflow after any subflow's coupled
    /// window (cwnd, or ssthresh in fast recovery), congestion state
    /// (Linux `icsk_ca_state`) or establishment changed, and never when
    /// only RTT estimates moved: Linux LIA's recalculation points (see
    /// `lia.rs`).
    OnWindowChange,
}

/// RFC 5681 §3.1 eq. (4): after a loss, ssthresh = max(FlightSize / 2,
/// 2·SMSS). Reno's rule, also LIA's and OLIA's per subflow (RFC 6356 §3).
pub fn halve_flight(state: &CcState, flight_bytes: u64) -> u64 {
    (flight_bytes / 2).max(state.mss_bytes.saturating_mul(2))
}

/// RFC 5681 §3.1 slow start with appropriate byte counting limited to one
/// SMSS per ACK (L = 1): `cwnd += min(N, SMSS)`. Returns bytes not used
/// because cwnd reached ssthresh, so a controller can spend them in
/// congestion avoidance (as Linux `tcp_slow_start` does).
pub fn slow_start(state: &mut CcState, acked_bytes: u64) -> u64 {
    let grow = acked_bytes.min(state.mss_bytes);
    let room = state.ssthresh_bytes.saturating_sub(state.cwnd_bytes);
    if grow <= room {
        state.cwnd_bytes += grow;
        0
    } else {
        state.cwnd_bytes += room;
        acked_bytes - room
    }
}

/// RFC 5681 §3.1 congestion avoidance in its byte-counting form (RFC 3465
/// §2.1), the additive increase Linux writes as `tcp_cong_avoid_ai(tp, w,
/// acked)`: one SMSS of growth per `w_bytes` of acknowledged data.
///
/// `credit_bytes` is the controller's accumulator (RFC 5681 `bytes_acked`,
/// Linux `snd_cwnd_cnt`): acknowledged bytes are added to it, and when it
/// reaches `w_bytes` it is reduced by `w_bytes` and cwnd grows by one SMSS.
/// With `w_bytes = cwnd` this is Reno's +1 SMSS per RTT independent of ACK
/// size and without the rounding loss of `cwnd += SMSS·SMSS/cwnd`; a
/// controller with a larger per-RTT increase α passes `cwnd/α` (H-TCP).
///
/// Differences from Linux `tcp_cong_avoid_ai`, kept so results stay those of
/// latlab's NewReno: at most one SMSS is added per ACK (RFC 5681 §3.1's
/// "SHOULD NOT increase by more than SMSS"; Linux adds `credit/w` segments at
/// once), and credit left from a larger `w` is kept and spent on later ACKs
/// (Linux, when `credit ≥ w` on entry, drops it and adds one segment), so
/// growth is delayed rather than lost. A zero `w_bytes` is treated as one
/// byte.
pub fn cong_avoid_ai(state: &mut CcState, credit_bytes: &mut u64, w_bytes: u64, acked_bytes: u64) {
    let w_bytes = w_bytes.max(1);
    *credit_bytes = credit_bytes.saturating_add(acked_bytes);
    if *credit_bytes >= w_bytes {
        *credit_bytes -= w_bytes;
        state.cwnd_bytes = state.cwnd_bytes.saturating_add(state.mss_bytes);
    }
}

/// The same additive increase for a window kept in fractional segments,
/// where the window itself is the fraction accumulator: the growth, in
/// segments, that `acked_segments` newly acknowledged segments earn when the
/// window gains `increase_segments` per `window_segments` acknowledged (per
/// RTT when cwnd-limited): `increase·acked/window`. CUBIC's Reno-friendly
/// estimate W_est (RFC 9438 §4.3 eq. 4, increase α_cubic) uses it.
pub fn cong_avoid_ai_segments(increase_segments: f64, acked_segments: f64, window_segments: f64) -> f64 {
    increase_segments * acked_segments / window_segments
}

/// A controller's constants: the typed form of a scenario's `cc_params`
/// (its knobs: [`Knobs`]). Implemented beside each controller; [`CcSpec`]
/// holds one per variant.
pub trait ControllerParams: Knobs + Clone + std::fmt::Debug + PartialEq {
    /// A fresh controller with these constants for a sender of `mss_bytes`.
    fn build(&self, mss_bytes: u64) -> Box<dyn CongestionControl>;
}

/// Why [`CcSpec::parse`] refused a scenario's controller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CcSpecError {
    /// The name is not one of [`CcSpec::NAMES`] (a scenario's `cc` key).
    UnknownController(String),
    /// A knob is unknown, repeated, not finite or out of range (a
    /// scenario's `cc_params`); the message names it and lists the
    /// controller's knobs.
    Param(String),
}

impl std::fmt::Display for CcSpecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::UnknownController(name) => write!(
                f,
                "unknown congestion controller {name:?}; known: {}",
                CcSpec::NAMES.join(", ")
            ),
            Self::Param(msg) => f.write_str(msg),
        }
    }
}

impl std::error::Error for CcSpecError {}

/// The controller registry: one line per controller, `Variant(ParamsType) =
/// "name" | "alias";`. Generates [`CcSpec`], its names, `parse`, `build`,
/// `name` and `knobs`.
macro_rules! controllers {
    ($( $(#[$doc:meta])* $variant:ident($params:ty) = $name:literal $(| $alias:literal)* ; )+) => {
        /// A congestion controller with validated constants, as a scenario
        /// chose it: parsed once by [`CcSpec::parse`], then built for every
        /// connection by [`CcSpec::build`].
        #[derive(Clone, Debug, PartialEq)]
        pub enum CcSpec {
            $( $(#[$doc])* $variant($params), )+
        }

        impl CcSpec {
            /// Scenario names of the controllers this build knows (aliases
            /// included), for error messages and documentation.
            pub const NAMES: &'static [&'static str] = &[$( $name, $($alias,)* )+];

            /// The controller `name` with the scenario's `cc_params`
            /// (`("beta", 0.7)`, ...; boolean knobs take 0 or 1). An unknown
            /// name, an unknown or repeated knob, or a value that is not
            /// finite or out of range is an error that names it and lists
            /// what is accepted.
            pub fn parse(name: &str, params: &[(String, f64)]) -> Result<Self, CcSpecError> {
                match name {
                    $( $name $(| $alias)* => knobs::parse::<$params>(name, params)
                        .map(Self::$variant)
                        .map_err(CcSpecError::Param), )+
                    _ => Err(CcSpecError::UnknownController(name.to_string())),
                }
            }

            /// A fresh controller for a sender of `mss_bytes`.
            pub fn build(&self, mss_bytes: u64) -> Box<dyn CongestionControl> {
                match self {
                    $( Self::$variant(p) => p.build(mss_bytes), )+
                }
            }

            /// The controller's canonical name (an alias maps to it).
            pub fn name(&self) -> &'static str {
                match self {
                    $( Self::$variant(_) => $name, )+
                }
            }

            /// The knobs controller `name` accepts (None for an unknown name).
            pub fn knobs(name: &str) -> Option<&'static [Knob]> {
                match name {
                    $( $name $(| $alias)* => Some(<$params as Knobs>::KNOBS), )+
                    _ => None,
                }
            }
        }
    };
}

controllers! {
    /// NewReno (RFC 5681, RFC 6582); "reno" is an alias.
    NewReno(NewRenoParams) = "newreno" | "reno";
    /// CUBIC (RFC 9438).
    Cubic(CubicParams) = "cubic";
    /// LEDBAT (RFC 6817).
    Ledbat(LedbatParams) = "ledbat";
    /// TCP Vegas (Brakmo & Peterson 1995).
    Vegas(VegasParams) = "vegas";
    /// H-TCP (Leith & Shorten 2004).
    Htcp(HtcpParams) = "htcp";
    /// TCP Westwood+ (Mascolo et al. 2001; Grieco & Mascolo 2004).
    Westwood(WestwoodParams) = "westwood";
    /// MPTCP Linked Increases (RFC 6356); NewReno on a single path.
    Lia(LiaParams) = "lia";
    /// MPTCP Opportunistic Linked Increases (Khalili et al. 2013); NewReno
    /// on a single path.
    Olia(OliaParams) = "olia";
    /// BBR v1 (Cardwell et al. 2016), as Linux's `tcp_bbr.c`.
    Bbr(BbrParams) = "bbr";
}

/// Build a controller by scenario name with default constants (None for an
/// unknown name).
pub fn by_name(name: &str, mss_bytes: u64) -> Option<Box<dyn CongestionControl>> {
    CcSpec::parse(name, &[]).ok().map(|spec| spec.build(mss_bytes))
}

#[cfg(test)]
mod build_tests {
    use super::*;

    fn kv(pairs: &[(&str, f64)]) -> Vec<(String, f64)> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn every_listed_controller_builds_with_defaults() {
        for name in CcSpec::NAMES {
            let cc = by_name(name, 1448).unwrap_or_else(|| panic!("{name}"));
            let expect = if *name == "reno" { "newreno" } else { name };
            assert_eq!(cc.name(), expect);
        }
        assert!(by_name("bbr2", 1448).is_none());
    }

    #[test]
    fn knobs_are_accepted_in_range() {
        assert!(CcSpec::parse("ledbat", &kv(&[("target_ms", 50.0)])).is_ok());
        assert!(CcSpec::parse("vegas", &kv(&[("alpha", 1.0), ("beta", 3.0), ("gamma", 1.0)])).is_ok());
        assert!(CcSpec::parse("cubic", &kv(&[("c", 0.4), ("beta", 0.7)])).is_ok());
        assert!(CcSpec::parse("ledbat", &kv(&[("slow_start", 0.0), ("base_history", 5.0)])).is_ok());
    }

    #[test]
    fn bad_knobs_are_named_with_what_is_accepted() {
        let err = |name: &str, p: &[(&str, f64)]| CcSpec::parse(name, &kv(p)).err().unwrap().to_string();
        let e = err("newreno", &[("beta", 0.5)]);
        assert!(e.contains("\"beta\"") && e.contains("per_ack_increase"), "{e}");
        let e = err("westwood", &[("beta", 0.5)]);
        assert!(
            e.contains("\"beta\"") && e.contains("accepts no parameters"),
            "{e}"
        );
        let e = err("ledbat", &[("target", 50.0)]);
        assert!(e.contains("\"target\"") && e.contains("target_ms"), "{e}");
        let e = err("ledbat", &[("target_ms", 0.0)]);
        assert!(e.contains("target_ms") && e.contains("out of range"), "{e}");
        let e = err("vegas", &[("alpha", 5.0)]);
        assert!(e.contains("alpha") && e.contains("gamma"), "{e}");
        let e = err("cubic", &[("beta", 1.0)]);
        assert!(e.contains("beta") && e.contains("fast_convergence"), "{e}");
        let e = err("cubic", &[("c", f64::NAN)]);
        assert!(e.contains("finite"), "{e}");
        let e = err("ledbat", &[("base_history", 2.5)]);
        assert!(e.contains("base_history"), "{e}");
        let e = err("ledbat", &[("gain", 1.0), ("gain", 0.5)]);
        assert!(e.contains("twice"), "{e}");
        let e = err("nope", &[]);
        assert!(e.contains("ledbat") && e.contains("vegas"), "{e}");
    }
}
