//! TCP endpoint configuration shared by sender and receiver.

use crate::segment::Segment;
use crate::{NS_PER_MS, NS_PER_SEC};

/// Loss recovery algorithm used by the sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recovery {
    /// NewReno fast recovery, RFC 6582 (duplicate ACKs, partial ACKs).
    NewReno,
    /// Conservative SACK-based loss recovery, RFC 6675 (needs `sack`).
    Sack,
    /// Forward acknowledgement (Mathis & Mahdavi, SIGCOMM 1996; ns-2's
    /// `Agent/TCP/Fack` without rampdown): the RFC 6675 machinery with FACK's
    /// loss rule. Every un-SACKed segment below snd.fack (one past the
    /// highest SACKed byte) counts as lost, so the pipe estimate is the
    /// paper's awnd = snd.nxt − snd.fack + retran_data, and recovery starts
    /// once snd.fack − snd.una exceeds DupThresh·SMSS (needs `sack`).
    Fack,
}

impl Recovery {
    /// SACK and FACK keep a SACK scoreboard and recover from it.
    pub fn uses_sack(self) -> bool {
        matches!(self, Recovery::Sack | Recovery::Fack)
    }

    /// The scenario-file name of the algorithm.
    pub fn name(self) -> &'static str {
        match self {
            Recovery::NewReno => "newreno",
            Recovery::Sack => "sack",
            Recovery::Fack => "fack",
        }
    }
}

/// Receiver delayed-ACK policy (RFC 5681 §4.2, RFC 1122 §4.2.3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DelayedAck {
    /// ACK at the latest after this many in-order data segments (2 = RFC 5681).
    pub segments: u32,
    /// ACK at the latest this long after the first unacknowledged segment.
    pub timeout_ns: u64,
}

/// Host pacing: rate = factor · cwnd / srtt (Linux: 2.0 in slow start, 1.2 in
/// congestion avoidance; the ns-2 pacing patch used 1.0).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pacing {
    pub ss_factor: f64,
    pub ca_factor: f64,
}

/// Configuration of a TCP endpoint. Both ends of a connection are normally
/// built from the same value; the sender reads the sender fields and the
/// receiver the receiver fields.
///
/// Laid out in declaration order (`repr(C)`), what an endpoint reads only
/// when it is built or on a rare event first and what it reads on every
/// segment last (the receiver's delayed ACK and window, the flags), so
/// that `TcpSender` and `TcpReceiver`, which put their configuration just
/// before their own per-packet fields, find these in the lines they read
/// anyway.
#[derive(Clone, Debug, PartialEq)]
#[repr(C)]
pub struct TcpConfig {
    /// Payload bytes per full segment (SMSS).
    pub mss_bytes: u32,
    /// Per-packet wire overhead; a pure ACK is `header_bytes` on the wire.
    pub header_bytes: u32,
    /// Initial window in segments (RFC 6928 default 10; studies use 2, 3, 10).
    pub initial_window_segments: u32,
    /// Duplicate-ACK threshold (RFC 5681 / RFC 6675 DupThresh): 3.
    pub dupthresh: u32,
    /// RFC 6298 (2.1): 1 s.
    pub initial_rto_ns: u64,
    /// RFC 6298 (2.4): 1 s; Linux and ns-2 studies use 200 ms.
    pub min_rto_ns: u64,
    /// RFC 6298 (2.5): at least 60 s.
    pub max_rto_ns: u64,
    /// Clock granularity G of RFC 6298 (2.2)/(2.3).
    pub rto_granularity_ns: u64,
    /// Sender host pacing; `None` = send as the window allows.
    pub pacing: Option<Pacing>,
    /// Receiver delayed ACK; `None` = ACK every segment.
    pub delayed_ack: Option<DelayedAck>,
    /// Receive window advertised by the receiver under the fixed policy.
    pub rwnd_bytes: u64,
    pub recovery: Recovery,
    /// The receiver generates SACK blocks (RFC 2018); needed by `Recovery::Sack`.
    pub sack: bool,
    /// RFC 7323 timestamps on every segment (used for RTT measurement).
    pub timestamps: bool,
    /// RFC 5681 §4.1: after an idle period longer than RTO, cwnd = min(IW, cwnd).
    pub idle_restart: bool,
    /// RFC 6675 §4 NextSeg rule (4): one rescue retransmission of the highest
    /// un-SACKed segment per recovery, so a lost tail is repaired without the
    /// RTO. The RFC says SHOULD; ns-3's SACK sender does not do it.
    pub rescue_retransmission: bool,
    /// Restart the retransmission timer when a fast retransmission leaves
    /// (ns-2 `reset_rtx_timer`, Linux). RFC 6298 (5.1) leaves a running
    /// timer alone, and so does ns-3's TcpSocketBase; false follows them.
    pub rto_restart_on_fast_retransmit: bool,
    /// Hand the controller the RFC 6675 pipe (outstanding bytes neither
    /// SACKed nor marked lost, plus retransmissions in flight) instead of
    /// RFC 5681 FlightSize when it sets ssthresh at a fast retransmit and at
    /// a timeout, and recompute ssthresh when the timer fires during fast
    /// recovery instead of keeping the recovery's. This is what ns-3 3.44's
    /// TcpSocketBase::EnterRecovery and ReTxTimeout do (BytesInFlight());
    /// RFC 5681 §3.1 eq. (4) and RFC 6675 (4.2) say FlightSize. Needs a SACK
    /// recovery. Controllers whose rule ignores the flight (CUBIC uses cwnd)
    /// see only the recomputation.
    pub ssthresh_from_pipe: bool,
    /// Drop the timer's exponential backoff on every ACK of new data, so
    /// RTO is SRTT + 4·RTTVAR again although the ACK gave no RTT sample
    /// (Karn: it acknowledges a retransmission), as ns-3 3.44's
    /// TcpSocketBase::NewAck does. RFC 6298 §5 (the note after (5.7)) keeps
    /// the backed-off RTO until a new RTT measurement; false follows it.
    pub rto_backoff_reset_on_ack: bool,
    /// Outside SACK recovery, check the window against the RFC 6675 pipe
    /// instead of RFC 5681 FlightSize (snd_max − snd_una): SACKed bytes do
    /// not count, nor, after a timeout, the un-SACKed bytes the go-back-N has
    /// not resent yet (counted lost). ns-3 3.44's TcpSocketBase::
    /// AvailableWindow is cwnd − BytesInFlight() in every state (Linux's
    /// tcp_packets_in_flight likewise), so with SACK a duplicate ACK that
    /// SACKs a segment releases a new one before fast retransmit (limited
    /// transmit in effect, RFC 3042), and after a timeout new data follows
    /// the retransmissions while SACKed data lies above a hole. Needs a SACK
    /// recovery.
    pub window_from_pipe: bool,
    /// Explicit Congestion Notification (RFC 3168): offer it in the SYN
    /// (the receiver: accept it), send data ECT(0), echo CE marks with ECE
    /// and take an ECE as a congestion event once per window.
    pub ecn: bool,
}

/// A receive window that does not limit anything in practice (1 GiB).
pub const LARGE_RWND_BYTES: u64 = 1 << 30;

impl TcpConfig {
    /// ns-2 style: 1000-byte data packets (960 B payload + 40 B header), 40-byte
    /// ACKs, IW 10, NewReno, ACK every segment, min RTO 200 ms, timestamps on
    /// (they only serve RTT measurement), no idle restart (ns-2 default).
    pub fn ns2() -> Self {
        TcpConfig {
            mss_bytes: 960,
            header_bytes: 40,
            initial_window_segments: 10,
            recovery: Recovery::NewReno,
            sack: false,
            timestamps: true,
            initial_rto_ns: NS_PER_SEC,
            min_rto_ns: 200 * NS_PER_MS,
            max_rto_ns: 60 * NS_PER_SEC,
            rto_granularity_ns: NS_PER_MS,
            delayed_ack: None,
            rwnd_bytes: LARGE_RWND_BYTES,
            pacing: None,
            dupthresh: 3,
            idle_restart: false,
            rescue_retransmission: true,
            rto_restart_on_fast_retransmit: true,
            ssthresh_from_pipe: false,
            rto_backoff_reset_on_ack: false,
            window_from_pipe: false,
            ecn: false,
        }
    }

    /// Linux-like: MSS 1448 with a 52-byte header (IP + TCP + timestamps),
    /// SACK recovery, delayed ACK every 2 segments / 40 ms, min RTO 200 ms,
    /// max RTO 120 s (TCP_RTO_MAX), idle restart on
    /// (net.ipv4.tcp_slow_start_after_idle = 1), no pacing (Linux paces only
    /// with fq or BBR).
    pub fn linux() -> Self {
        TcpConfig {
            mss_bytes: 1448,
            header_bytes: 52,
            initial_window_segments: 10,
            recovery: Recovery::Sack,
            sack: true,
            timestamps: true,
            initial_rto_ns: NS_PER_SEC,
            min_rto_ns: 200 * NS_PER_MS,
            max_rto_ns: 120 * NS_PER_SEC,
            rto_granularity_ns: NS_PER_MS,
            delayed_ack: Some(DelayedAck {
                segments: 2,
                timeout_ns: 40 * NS_PER_MS,
            }),
            rwnd_bytes: LARGE_RWND_BYTES,
            pacing: None,
            dupthresh: 3,
            idle_restart: true,
            rescue_retransmission: true,
            rto_restart_on_fast_retransmit: true,
            ssthresh_from_pipe: false,
            rto_backoff_reset_on_ack: false,
            window_from_pipe: false,
            ecn: false,
        }
    }

    /// Check the configuration; the error names the field and what is expected.
    pub fn validate(&self) -> Result<(), String> {
        if self.mss_bytes == 0 || self.mss_bytes > 1 << 20 {
            return Err(format!(
                "mss_bytes must be between 1 and 1048576, got {}",
                self.mss_bytes
            ));
        }
        if self.header_bytes > 1 << 16 {
            return Err(format!(
                "header_bytes must be at most 65536, got {}",
                self.header_bytes
            ));
        }
        if self.initial_window_segments == 0 || self.initial_window_segments > 1 << 20 {
            return Err(format!(
                "initial_window_segments must be between 1 and 1048576, got {}",
                self.initial_window_segments
            ));
        }
        if self.recovery.uses_sack() && !self.sack {
            return Err(
                "recovery = Sack needs sack = true (the receiver must generate SACK blocks)".to_string(),
            );
        }
        if self.ssthresh_from_pipe && !self.recovery.uses_sack() {
            return Err(
                "ssthresh_from_pipe needs a SACK recovery (recovery = Sack or Fack): the pipe is the SACK scoreboard's"
                    .to_string(),
            );
        }
        if self.window_from_pipe && !self.recovery.uses_sack() {
            return Err(
                "window_from_pipe needs a SACK recovery (recovery = Sack or Fack): the pipe is the SACK scoreboard's"
                    .to_string(),
            );
        }
        if self.initial_rto_ns == 0 {
            return Err("initial_rto_ns must be positive".to_string());
        }
        if self.max_rto_ns == 0 {
            return Err("max_rto_ns must be positive".to_string());
        }
        if self.min_rto_ns > self.max_rto_ns {
            return Err(format!(
                "min_rto_ns ({}) must not exceed max_rto_ns ({})",
                self.min_rto_ns, self.max_rto_ns
            ));
        }
        if self.initial_rto_ns > self.max_rto_ns {
            return Err(format!(
                "initial_rto_ns ({}) must not exceed max_rto_ns ({})",
                self.initial_rto_ns, self.max_rto_ns
            ));
        }
        if let Some(d) = self.delayed_ack {
            if d.segments == 0 {
                return Err("delayed_ack.segments must be at least 1".to_string());
            }
            // RFC 5681 §4.2: an ACK MUST be generated within 500 ms.
            if d.timeout_ns == 0 || d.timeout_ns > 500 * NS_PER_MS {
                return Err(format!(
                    "delayed_ack.timeout_ns must be in (0, 500 ms] (RFC 5681 §4.2), got {}",
                    d.timeout_ns
                ));
            }
        }
        if self.rwnd_bytes == 0 {
            return Err("rwnd_bytes must be positive".to_string());
        }
        if let Some(p) = self.pacing {
            if !(p.ss_factor.is_finite() && p.ss_factor > 0.0) {
                return Err(format!(
                    "pacing.ss_factor must be a positive finite number, got {}",
                    p.ss_factor
                ));
            }
            if !(p.ca_factor.is_finite() && p.ca_factor > 0.0) {
                return Err(format!(
                    "pacing.ca_factor must be a positive finite number, got {}",
                    p.ca_factor
                ));
            }
        }
        if self.dupthresh == 0 {
            return Err("dupthresh must be at least 1".to_string());
        }
        Ok(())
    }

    /// Bytes the segment occupies on the wire: header plus payload.
    pub fn wire_bytes(&self, seg: &Segment) -> u32 {
        self.header_bytes.saturating_add(seg.payload_bytes)
    }

    /// The initial window in bytes (IW · SMSS).
    pub fn initial_window_bytes(&self) -> u64 {
        self.initial_window_segments as u64 * self.mss_bytes as u64
    }
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig::ns2()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_validate() {
        assert!(TcpConfig::ns2().validate().is_ok());
        assert!(TcpConfig::linux().validate().is_ok());
        assert_eq!(TcpConfig::default(), TcpConfig::ns2());
    }

    #[test]
    fn validate_names_field() {
        let mut c = TcpConfig::ns2();
        c.mss_bytes = 0;
        assert!(c.validate().unwrap_err().contains("mss_bytes"));
        let mut c = TcpConfig::ns2();
        c.recovery = Recovery::Sack;
        assert!(c.validate().unwrap_err().contains("sack"));
        let mut c = TcpConfig::ns2();
        c.ssthresh_from_pipe = true;
        assert!(c.validate().unwrap_err().contains("ssthresh_from_pipe"));
        let mut c = TcpConfig::ns2();
        c.window_from_pipe = true;
        assert!(c.validate().unwrap_err().contains("window_from_pipe"));
        let mut c = TcpConfig::ns2();
        c.min_rto_ns = 100 * NS_PER_SEC;
        assert!(c.validate().unwrap_err().contains("min_rto_ns"));
        let mut c = TcpConfig::ns2();
        c.pacing = Some(Pacing {
            ss_factor: 0.0,
            ca_factor: 1.0,
        });
        assert!(c.validate().unwrap_err().contains("ss_factor"));
    }

    #[test]
    fn wire_bytes_adds_header() {
        let c = TcpConfig::ns2();
        let seg = Segment {
            payload_bytes: 960,
            ..Default::default()
        };
        assert_eq!(c.wire_bytes(&seg), 1000);
        assert_eq!(c.wire_bytes(&Segment::default()), 40);
    }
}
