//! Receiver-window controllers: how a TCP receiver chooses the window it
//! advertises. The sender sends min(cwnd, rwnd), so a receiver that
//! advertises less than the sender's cwnd bounds the data in flight (and so
//! the queue the flow builds) without touching the sender or the routers.
//!
//! A controller sees what a receiver can see, through [`RwndController`]:
//! data segments as they arrive (size and RFC 7323 timestamps), bytes as
//! they are copied to the application, and the time of each. It answers
//! one question, the window to advertise now. It owns only its own state;
//! the receiver (`TcpReceiver`) keeps sequence space, SACK and ACK timing,
//! and a socket driver (latlab-net) can feed the same controller from
//! `TCP_INFO` and apply its answer with `TCP_WINDOW_CLAMP`.
//!
//! The controllers, one file each:
//! - [`FixedRwnd`] (`fixed.rs`): a constant window (the scenario's
//!   `rwnd_bytes`); the default, and what every result before receiver
//!   control was made with.
//! - [`Autotuning`] (`autotuning.rs`): Linux receive-buffer auto-tuning
//!   (Dynamic Right-Sizing, `tcp_rcv_space_adjust`): twice the largest
//!   per-RTT delivery, capped by `tcp_rmem_max`.
//! - [`Drwa`] (`drwa.rs`): Dynamic Receive Window Adjustment (Jiang et
//!   al., IMC 2012): λ·(RTT_min/RTT)·(EWMA of per-RTT delivery).
//! - [`Rtac`] (`rtac.rs`): receiver-side TCP adaptive queue control (Im,
//!   Joo, Lee, Bahk), Algorithm 1: the window a Reno sender would hold
//!   under an emulated AQM price.
//!
//! All three adaptive controllers measure the RTT with [`ReceiverRtt`]
//! (`rtt.rs`): from timestamps when the sender sends them, else from the
//! time the stream takes to advance one window (Linux
//! `tcp_rcv_rtt_measure`).
//!
//! # Choosing a controller: [`RwndSpec`]
//!
//! As with congestion controllers (`crate::cc::CcSpec`), a scenario names
//! a controller and may set its constants (`rwnd_controller = "rtac"`,
//! `rwnd_params = { theta = 1.38, link_rate_bps = 40e6 }`).
//! [`RwndSpec::parse`] checks them once; [`RwndSpec::build`] makes a fresh
//! controller per connection and cannot fail. Each controller's constants
//! are a struct beside it implementing [`RwndParams`] (defaults, knobs with
//! ranges for error messages, `set`, `validate`, `build`).

mod autotuning;
mod drwa;
mod fixed;
mod rtac;
mod rtt;

pub use autotuning::{Autotuning, AutotuningParams};
pub use drwa::{Drwa, DrwaParams};
pub use fixed::{FixedRwnd, FixedRwndParams};
pub use rtac::{Rtac, RtacParams};
pub use rtt::ReceiverRtt;

use super::config::TcpConfig;
use crate::knobs::{self, Knob, Knobs};
use crate::TimeNs;

/// Linux's `tcp_rmem[2]` default in the study (2560 KB): the largest
/// receive buffer, and so the largest window, auto-tuning may reach.
pub const DEFAULT_RMEM_MAX_BYTES: u64 = 2560 * 1024;

/// The window advertised before a controller has its first RTT estimate:
/// 64 KB, the largest window without scaling (RFC 7323 §2.2), which is
/// what a Linux receiver with the default `tcp_rmem[1]` (128 KB) opens
/// with.
pub const DEFAULT_INITIAL_RWND_BYTES: u64 = 65_535;

/// One data segment as the receiver saw it arrive.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SegmentArrival {
    pub now_ns: TimeNs,
    /// Payload bytes carried (new or not).
    pub payload_bytes: u32,
    /// The sender's RFC 7323 TSval, when timestamps are on.
    pub ts_val_ns: Option<u64>,
    /// The echo of the receiver's own TSval (TSecr): the receiver's clock
    /// when it sent the ACK this segment answers. `now − TSecr` is an RTT.
    pub ts_ecr_ns: Option<u64>,
}

/// A receiver-window controller (sans-IO).
///
/// The receiver calls [`on_segment`](Self::on_segment) for every data
/// segment, then [`on_copied`](Self::on_copied) when in-order bytes reach
/// the application (in the simulator the application reads at once, so on
/// the same segment), and reads [`rwnd_bytes`](Self::rwnd_bytes) whenever it
/// builds an ACK.
pub trait RwndController: Send {
    /// The scenario name ("fixed", "autotuning", "drwa", "rtac").
    fn name(&self) -> &'static str;
    /// A data segment arrived.
    fn on_segment(&mut self, arrival: &SegmentArrival);
    /// `bytes` more were copied to the application at `now_ns`.
    fn on_copied(&mut self, now_ns: TimeNs, bytes: u64);
    /// The window to advertise now, bytes.
    fn rwnd_bytes(&self) -> u64;
    /// The receiver's RTT estimate, ns, once it has one (for measurement).
    fn rtt_ns(&self) -> Option<u64> {
        None
    }
    /// The receiver's estimate of the sender's window, bytes per RTT, once
    /// it has one (for measurement: set beside the sender's cwnd, it is
    /// what the study checked of a receiver's estimates).
    fn window_est_bytes(&self) -> Option<f64> {
        None
    }
}

/// A controller's constants: the typed form of a scenario's `rwnd_params`
/// (its knobs: [`Knobs`]).
pub trait RwndParams: Knobs + Clone + std::fmt::Debug + PartialEq {
    /// A fresh controller for a receiver configured by `cfg` (its MSS, and
    /// for the fixed window its `rwnd_bytes`).
    fn build(&self, cfg: &TcpConfig) -> Box<dyn RwndController>;
}

/// Why [`RwndSpec::parse`] refused a scenario's receiver controller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RwndSpecError {
    /// The name is not one of [`RwndSpec::NAMES`].
    UnknownController(String),
    /// A knob is unknown, repeated, not finite or out of range; the message
    /// names it and lists the controller's knobs.
    Param(String),
}

impl std::fmt::Display for RwndSpecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::UnknownController(name) => write!(
                f,
                "unknown receiver-window controller {name:?}; known: {}",
                RwndSpec::NAMES.join(", ")
            ),
            Self::Param(msg) => f.write_str(msg),
        }
    }
}

impl std::error::Error for RwndSpecError {}

/// A receiver-window controller with validated constants, as a scenario
/// chose it.
#[derive(Clone, Debug, PartialEq)]
pub enum RwndSpec {
    /// A constant window (`rwnd_bytes`); the default.
    Fixed(FixedRwndParams),
    /// Linux receive-buffer auto-tuning (Dynamic Right-Sizing).
    Autotuning(AutotuningParams),
    /// DRWA (Jiang et al., IMC 2012).
    Drwa(DrwaParams),
    /// RTAC (Im, Joo, Lee, Bahk), Algorithm 1.
    Rtac(RtacParams),
}

impl Default for RwndSpec {
    fn default() -> Self {
        RwndSpec::Fixed(FixedRwndParams)
    }
}

impl RwndSpec {
    /// Scenario names, for error messages and documentation.
    pub const NAMES: &'static [&'static str] = &["fixed", "autotuning", "drwa", "rtac"];

    /// The controller `name` with the scenario's `rwnd_params`.
    pub fn parse(name: &str, params: &[(String, f64)]) -> Result<Self, RwndSpecError> {
        let p = |r: Result<Self, String>| r.map_err(RwndSpecError::Param);
        match name {
            "fixed" => p(knobs::parse(name, params).map(Self::Fixed)),
            "autotuning" => p(knobs::parse(name, params).map(Self::Autotuning)),
            "drwa" => p(knobs::parse(name, params).map(Self::Drwa)),
            "rtac" => p(knobs::parse(name, params).map(Self::Rtac)),
            _ => Err(RwndSpecError::UnknownController(name.to_string())),
        }
    }

    /// A fresh controller for a receiver configured by `cfg`.
    pub fn build(&self, cfg: &TcpConfig) -> Box<dyn RwndController> {
        match self {
            Self::Fixed(p) => p.build(cfg),
            Self::Autotuning(p) => p.build(cfg),
            Self::Drwa(p) => p.build(cfg),
            Self::Rtac(p) => p.build(cfg),
        }
    }

    /// The controller's scenario name.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Fixed(_) => "fixed",
            Self::Autotuning(_) => "autotuning",
            Self::Drwa(_) => "drwa",
            Self::Rtac(_) => "rtac",
        }
    }

    /// The largest window the controller will advertise (its
    /// `rmem_max_bytes`), None for the fixed window (its window is the
    /// configuration's). A socket driver sizes the receive buffer from it.
    pub fn max_window_bytes(&self) -> Option<u64> {
        match self {
            Self::Fixed(_) => None,
            Self::Autotuning(p) => Some(p.rmem_max_bytes),
            Self::Drwa(p) => Some(p.rmem_max_bytes),
            Self::Rtac(p) => Some(p.rmem_max_bytes),
        }
    }

    /// The knobs controller `name` accepts (None for an unknown name).
    pub fn knobs(name: &str) -> Option<&'static [Knob]> {
        match name {
            "fixed" => Some(FixedRwndParams::KNOBS),
            "autotuning" => Some(AutotuningParams::KNOBS),
            "drwa" => Some(DrwaParams::KNOBS),
            "rtac" => Some(RtacParams::KNOBS),
            _ => None,
        }
    }
}

/// Check a window cap and an initial window (bytes) shared by the adaptive
/// controllers; `who` names the controller in the message.
fn validate_windows(who: &str, rmem_max_bytes: u64, initial_rwnd_bytes: u64) -> Result<(), String> {
    if rmem_max_bytes == 0 {
        return Err(format!("{who} rmem_max_bytes must be positive"));
    }
    if initial_rwnd_bytes == 0 || initial_rwnd_bytes > rmem_max_bytes {
        return Err(format!(
            "{who} initial_rwnd_bytes ({initial_rwnd_bytes}) must be in [1, rmem_max_bytes = {rmem_max_bytes}]"
        ));
    }
    Ok(())
}

/// Largest window a scenario may cap a controller at (1 GiB, the window
/// scale limit of RFC 7323 §2.3).
const MAX_WINDOW_BYTES: u64 = 1 << 30;

/// Knob texts shared by the adaptive controllers.
const RMEM_MAX_ABOUT: &str = "tcp_rmem_max: largest window, bytes, [1, 2^30]; default 2621440 (2560 KB)";
const INITIAL_RWND_ABOUT: &str =
    "window before the first RTT estimate, bytes, [1, rmem_max_bytes]; default 65535";

/// Set one of the two shared window knobs; `None` if `key` is another knob
/// or the value is out of range.
fn set_window_knob(
    key: &str,
    value: f64,
    rmem_max_bytes: &mut u64,
    initial_rwnd_bytes: &mut u64,
) -> Option<()> {
    let bytes = knobs::knob_whole(value, 1, MAX_WINDOW_BYTES)?;
    match key {
        "rmem_max_bytes" => *rmem_max_bytes = bytes,
        "initial_rwnd_bytes" => *initial_rwnd_bytes = bytes,
        _ => return None,
    }
    Some(())
}

/// A window in bytes from a window in (fractional) segments, within
/// [2 segments, cap]: a receiver never advertises less than two segments,
/// so a delayed-ACK receiver always gets an ACK-clocking pair.
fn window_bytes(bytes: f64, mss_bytes: u64, cap_bytes: u64) -> u64 {
    let floor = (2 * mss_bytes).min(cap_bytes);
    if !bytes.is_finite() {
        return cap_bytes;
    }
    (bytes.max(0.0).round() as u64).clamp(floor, cap_bytes)
}

/// A full-size data segment with timestamps, as the controllers' tests feed them.
#[cfg(test)]
pub(crate) fn timestamped_arrival(now_ns: TimeNs, ts_ecr_ns: TimeNs) -> SegmentArrival {
    SegmentArrival {
        now_ns,
        payload_bytes: 1000,
        ts_val_ns: Some(now_ns),
        ts_ecr_ns: Some(ts_ecr_ns),
    }
}

#[cfg(test)]
mod spec_tests {
    use super::*;

    fn kv(pairs: &[(&str, f64)]) -> Vec<(String, f64)> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn every_name_builds_with_defaults() {
        let cfg = TcpConfig::linux();
        for name in RwndSpec::NAMES {
            let spec = RwndSpec::parse(name, &[]).unwrap();
            assert_eq!(spec.name(), *name);
            assert_eq!(spec.build(&cfg).name(), *name);
            assert!(RwndSpec::knobs(name).is_some());
        }
        assert_eq!(RwndSpec::default().build(&cfg).rwnd_bytes(), cfg.rwnd_bytes);
    }

    #[test]
    fn bad_input_is_named_with_what_is_accepted() {
        let err = |name: &str, p: &[(&str, f64)]| RwndSpec::parse(name, &kv(p)).err().unwrap().to_string();
        let e = err("cubic", &[]);
        assert!(e.contains("autotuning") && e.contains("rtac"), "{e}");
        let e = err("fixed", &[("lambda", 3.0)]);
        assert!(e.contains("accepts no parameters"), "{e}");
        let e = err("drwa", &[("lamda", 3.0)]);
        assert!(e.contains("\"lamda\"") && e.contains("lambda"), "{e}");
        let e = err("drwa", &[("alpha", 1.5)]);
        assert!(e.contains("alpha") && e.contains("out of range"), "{e}");
        let e = err("rtac", &[("theta", 1.38)]);
        assert!(e.contains("link_rate_bps"), "{e}");
        let e = err("rtac", &[("k", 1e-7), ("theta", 1.38), ("link_rate_bps", 1e7)]);
        assert!(e.contains("either"), "{e}");
        let e = err(
            "autotuning",
            &[("rmem_max_bytes", 1000.0), ("initial_rwnd_bytes", 5000.0)],
        );
        assert!(e.contains("initial_rwnd_bytes"), "{e}");
        let e = err("autotuning", &[("rmem_max_bytes", f64::INFINITY)]);
        assert!(e.contains("finite"), "{e}");
        let e = err("rtac", &[("beta", 0.5), ("beta", 0.25)]);
        assert!(e.contains("twice"), "{e}");
    }

    #[test]
    fn window_bytes_clamps_to_two_segments_and_the_cap() {
        assert_eq!(window_bytes(100.0, 1000, 1 << 20), 2000);
        assert_eq!(window_bytes(1e12, 1000, 50_000), 50_000);
        assert_eq!(window_bytes(f64::NAN, 1000, 50_000), 50_000);
        assert_eq!(window_bytes(12_345.4, 1000, 50_000), 12_345);
    }
}
