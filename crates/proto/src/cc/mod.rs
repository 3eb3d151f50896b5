//! Congestion control behind a narrow interface, in the spirit of Linux's
//! `struct tcp_congestion_ops`: the sender owns loss detection, recovery and
//! retransmission; a controller owns only its own state and decides how the
//! congestion window grows on ACKs and where ssthresh lands after a
//! congestion event.
//!
//! A controller that needs delay (Vegas, LEDBAT), bandwidth estimates
//! (Westwood+) or state shared with other subflows (MPTCP LIA/OLIA) gets what
//! it needs from [`AckSample`] and its own fields; the trait need not grow.

mod cubic;
mod ledbat;
mod newreno;
mod vegas;

pub use cubic::{Cubic, CubicParams};
pub use ledbat::{Ledbat, LedbatParams, LEDBAT_MAX_BASE_HISTORY, LEDBAT_MAX_CURRENT_FILTER};
pub use newreno::NewReno;
pub use vegas::{Vegas, VegasParams};

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

/// The kind of congestion event that led the sender to call
/// [`CongestionControl::ssthresh_on_loss`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CongestionEvent {
    /// Loss detected by duplicate ACKs or SACK; fast recovery follows.
    FastRetransmit,
    /// The retransmission timer expired; cwnd falls to one segment.
    Timeout,
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

/// Names of the controllers this build knows, for scenario validation.
pub const CONTROLLERS: &[&str] = &["newreno", "reno", "cubic", "ledbat", "vegas"];

/// Build a controller by scenario name with default constants.
pub fn by_name(name: &str, mss_bytes: u64) -> Option<Box<dyn CongestionControl>> {
    build(name, mss_bytes, &[]).ok()
}

/// Knobs each controller accepts in [`build`], with the accepted range, for
/// error messages and documentation.
pub fn controller_params(name: &str) -> Option<&'static [(&'static str, &'static str)]> {
    match name {
        "newreno" | "reno" => Some(&[]),
        "cubic" => Some(&[
            ("c", "C in segments/s^3, (0, 100]; default 0.4"),
            ("beta", "multiplicative decrease factor, (0, 1); default 0.7"),
            ("fast_convergence", "0 or 1; default 1"),
            ("tcp_friendliness", "0 or 1; default 1"),
        ]),
        "ledbat" => Some(&[
            ("target_ms", "TARGET queuing delay in ms, (0, 10000]; default 100"),
            ("gain", "GAIN, (0, 100]; default 1"),
            (
                "base_history",
                "one-minute base-delay buckets, integer 1..=60; default 10",
            ),
            (
                "current_filter",
                "current-delay MIN filter samples, integer 1..=32; default 4",
            ),
            ("min_cwnd", "MIN_CWND in segments, integer 1..=1000; default 2"),
            (
                "allowed_increase",
                "ALLOWED_INCREASE in segments, integer 1..=1000; default 1",
            ),
            ("slow_start", "0 or 1; default 1"),
        ]),
        "vegas" => Some(&[
            (
                "alpha",
                "packets queued below which cwnd grows, [0, 10000], <= beta; default 2",
            ),
            (
                "beta",
                "packets queued above which cwnd shrinks, [0, 10000]; default 4",
            ),
            (
                "gamma",
                "packets queued that end slow start, [0, 10000]; default 1",
            ),
        ]),
        _ => None,
    }
}

/// Build a controller by scenario name, with optional constants.
///
/// `params` are (knob, value) pairs such as `("target_ms", 50.0)` for
/// LEDBAT, `("alpha", 1.0)` for Vegas or `("beta", 0.7)` for CUBIC; see
/// [`controller_params`]. Boolean knobs take 0 or 1. An unknown name, an
/// unknown or repeated knob, or a value out of range is an error that names
/// it and lists what the controller accepts. NewReno takes no knobs.
pub fn build(
    name: &str,
    mss_bytes: u64,
    params: &[(String, f64)],
) -> Result<Box<dyn CongestionControl>, String> {
    let Some(accepted) = controller_params(name) else {
        return Err(format!(
            "unknown congestion controller {name:?}; known: {}",
            CONTROLLERS.join(", ")
        ));
    };
    let accepted_list = || {
        if accepted.is_empty() {
            format!("{name} accepts no parameters")
        } else {
            let knobs: Vec<String> = accepted.iter().map(|(k, d)| format!("{k} ({d})")).collect();
            format!("{name} accepts: {}", knobs.join("; "))
        }
    };
    for (i, (key, value)) in params.iter().enumerate() {
        if !accepted.iter().any(|(k, _)| k == key) {
            return Err(format!(
                "unknown parameter {key:?} for {name}; {}",
                accepted_list()
            ));
        }
        if params[..i].iter().any(|(k, _)| k == key) {
            return Err(format!("parameter {key:?} given twice for {name}"));
        }
        if !value.is_finite() {
            return Err(format!(
                "parameter {key:?} for {name} must be finite, got {value}; {}",
                accepted_list()
            ));
        }
    }
    let get = |key: &str| params.iter().find(|(k, _)| k == key).map(|(_, v)| *v);
    let range_err = |key: &str, v: f64| {
        format!(
            "parameter {key:?} = {v} out of range for {name}; {}",
            accepted_list()
        )
    };
    let flag = |key: &str, default: bool| -> Result<bool, String> {
        match get(key) {
            None => Ok(default),
            Some(0.0) => Ok(false),
            Some(1.0) => Ok(true),
            Some(v) => Err(range_err(key, v)),
        }
    };
    let whole = |key: &str, default: u64, lo: u64, hi: u64| -> Result<u64, String> {
        match get(key) {
            None => Ok(default),
            Some(v) if v.fract() == 0.0 && v >= lo as f64 && v <= hi as f64 => Ok(v as u64),
            Some(v) => Err(range_err(key, v)),
        }
    };
    match name {
        "newreno" | "reno" => Ok(Box::new(NewReno::new())),
        "cubic" => {
            let d = CubicParams::default();
            let c = get("c").unwrap_or(d.c);
            if !(c > 0.0 && c <= 100.0) {
                return Err(range_err("c", c));
            }
            let beta = get("beta").unwrap_or(d.beta);
            if !(beta > 0.0 && beta < 1.0) {
                return Err(range_err("beta", beta));
            }
            let p = CubicParams {
                c,
                beta,
                fast_convergence: flag("fast_convergence", d.fast_convergence)?,
                tcp_friendliness: flag("tcp_friendliness", d.tcp_friendliness)?,
            };
            Ok(Box::new(Cubic::new(p, mss_bytes)))
        }
        "ledbat" => {
            let d = LedbatParams::default();
            let target_ms = get("target_ms").unwrap_or(d.target_ns as f64 / 1e6);
            if !(target_ms > 0.0 && target_ms <= 10_000.0) {
                return Err(range_err("target_ms", target_ms));
            }
            let gain = get("gain").unwrap_or(d.gain);
            if !(gain > 0.0 && gain <= 100.0) {
                return Err(range_err("gain", gain));
            }
            let p = LedbatParams {
                target_ns: ((target_ms * 1e6).round() as u64).max(1),
                gain,
                base_history: whole(
                    "base_history",
                    d.base_history as u64,
                    1,
                    LEDBAT_MAX_BASE_HISTORY as u64,
                )? as usize,
                current_filter: whole(
                    "current_filter",
                    d.current_filter as u64,
                    1,
                    LEDBAT_MAX_CURRENT_FILTER as u64,
                )? as usize,
                min_cwnd_segments: whole("min_cwnd", d.min_cwnd_segments, 1, 1000)?,
                allowed_increase_segments: whole("allowed_increase", d.allowed_increase_segments, 1, 1000)?,
                slow_start: flag("slow_start", d.slow_start)?,
            };
            p.validate().map_err(|e| format!("{e}; {}", accepted_list()))?;
            Ok(Box::new(Ledbat::new(p, mss_bytes)))
        }
        "vegas" => {
            let d = VegasParams::default();
            let p = VegasParams {
                alpha: get("alpha").unwrap_or(d.alpha),
                beta: get("beta").unwrap_or(d.beta),
                gamma: get("gamma").unwrap_or(d.gamma),
            };
            p.validate().map_err(|e| format!("{e}; {}", accepted_list()))?;
            Ok(Box::new(Vegas::new(p, mss_bytes)))
        }
        _ => Err(format!(
            "unknown congestion controller {name:?}; known: {}",
            CONTROLLERS.join(", ")
        )),
    }
}

#[cfg(test)]
mod build_tests {
    use super::*;

    fn kv(pairs: &[(&str, f64)]) -> Vec<(String, f64)> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn every_listed_controller_builds_with_defaults() {
        for name in CONTROLLERS {
            let cc = by_name(name, 1448).unwrap_or_else(|| panic!("{name}"));
            let expect = if *name == "reno" { "newreno" } else { name };
            assert_eq!(cc.name(), expect);
        }
        assert!(by_name("bbr", 1448).is_none());
    }

    #[test]
    fn knobs_are_accepted_in_range() {
        assert!(build("ledbat", 1448, &kv(&[("target_ms", 50.0)])).is_ok());
        assert!(build(
            "vegas",
            1448,
            &kv(&[("alpha", 1.0), ("beta", 3.0), ("gamma", 1.0)])
        )
        .is_ok());
        assert!(build("cubic", 1448, &kv(&[("c", 0.4), ("beta", 0.7)])).is_ok());
        assert!(build("ledbat", 1448, &kv(&[("slow_start", 0.0), ("base_history", 5.0)])).is_ok());
    }

    #[test]
    fn bad_knobs_are_named_with_what_is_accepted() {
        let err = |name: &str, p: &[(&str, f64)]| build(name, 1448, &kv(p)).err().unwrap();
        let e = err("newreno", &[("beta", 0.5)]);
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
