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
mod newreno;

pub use cubic::{Cubic, CubicParams};
pub use newreno::NewReno;

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
pub const CONTROLLERS: &[&str] = &["newreno", "reno", "cubic"];

/// Build a controller by scenario name.
pub fn by_name(name: &str, mss_bytes: u64) -> Option<Box<dyn CongestionControl>> {
    match name {
        "newreno" | "reno" => Some(Box::new(NewReno::new())),
        "cubic" => Some(Box::new(Cubic::new(CubicParams::default(), mss_bytes))),
        _ => None,
    }
}
