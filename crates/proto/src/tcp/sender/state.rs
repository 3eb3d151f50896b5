//! The sender's states as enums that carry their own data, so that a
//! combination the protocol cannot be in cannot be written down: the
//! handshake ([`Handshake`]) and loss detection/recovery
//! ([`CongestionState`], after Linux's `icsk_ca_state`).

/// The active open (RFC 793 §3.4), the sender's side only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Handshake {
    Closed,
    /// SYN-SENT: the SYN is due (`syn_due`) or in flight.
    SynSent {
        syn_due: bool,
        /// When the last SYN left (the handshake RTT runs from it).
        sent_ns: u64,
        /// A SYN was sent more than once (Karn: no RTT sample from the SYN).
        retransmitted: bool,
    },
    Established,
}

/// Where the sender is in loss detection and recovery. The names are
/// Linux's `icsk_ca_state` (TCP_CA_Open, _Disorder, _Recovery, _Loss; CWR
/// is not a state here: an ECN reduction's window is `TcpSender::in_ecn_cwr`,
/// which overlaps Open and Disorder). RFC 6582 `recover` / RFC 6675
/// RecoveryPoint outlives an episode (it gates the next fast retransmit),
/// so it is a field of the sender, not of this state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CongestionState {
    /// No duplicate ACK since the last cumulative advance.
    Open,
    /// `dupacks` duplicate ACKs (RFC 5681 §2, or RFC 6675 §2 with SACK) at
    /// the current cumulative ACK, not (yet) a fast retransmit.
    Disorder { dupacks: u32 },
    /// Fast recovery (RFC 6582 / RFC 6675) until `recover` is acknowledged.
    Recovery(Recovery),
    /// After a retransmission timeout (RFC 5681 §3.1, RFC 6298 §5), until
    /// everything outstanding when it fired (`recover`) is acknowledged.
    /// Duplicate ACKs cannot trigger a fast retransmit here: they ack below
    /// `recover` (RFC 6582 §3.2 step 2).
    Loss {
        /// `snd_una` when the timer last fired: ssthresh is held on a
        /// repeated timeout of the same segment (RFC 5681 §3.1).
        una_at_rto: u64,
    },
}

/// One fast recovery episode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Recovery {
    /// A fast retransmission of the segment at `snd_una` is due, regardless
    /// of cwnd: on entry (RFC 5681 §3.2 step 2, RFC 6675 (4.3)) and after a
    /// NewReno partial ACK (RFC 6582 §3.2 step 3).
    pub retransmit_una: bool,
    pub variant: RecoveryVariant,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RecoveryVariant {
    /// RFC 6582: window inflation by duplicate ACKs, partial ACKs.
    NewReno {
        /// The first partial ACK of the episode has been seen (only it
        /// restarts the retransmission timer, RFC 6582 §3.2 step 3).
        partial_ack_seen: bool,
    },
    /// RFC 6675 (and FACK, which differs only in IsLost(), see
    /// `scoreboard::LossRule`).
    Sack(SackRecovery),
}

/// RFC 6675 §2 variables, meaningful only during SACK recovery.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct SackRecovery {
    /// `pipe`: bytes estimated in the network (SetPipe plus (C.4)).
    pub pipe: u64,
    /// HighRxt and RescueRxt (inclusive sequence numbers), set when the
    /// (4.3) retransmission of HighACK + 1 leaves.
    pub high_rxt: Option<u64>,
    pub rescue_rxt: Option<u64>,
}

impl CongestionState {
    pub fn recovery(&self) -> Option<&Recovery> {
        match self {
            CongestionState::Recovery(r) => Some(r),
            _ => None,
        }
    }

    pub fn recovery_mut(&mut self) -> Option<&mut Recovery> {
        match self {
            CongestionState::Recovery(r) => Some(r),
            _ => None,
        }
    }

    pub fn sack(&self) -> Option<&SackRecovery> {
        match self.recovery()?.variant {
            RecoveryVariant::Sack(ref s) => Some(s),
            RecoveryVariant::NewReno { .. } => None,
        }
    }

    pub fn sack_mut(&mut self) -> Option<&mut SackRecovery> {
        match self.recovery_mut()?.variant {
            RecoveryVariant::Sack(ref mut s) => Some(s),
            RecoveryVariant::NewReno { .. } => None,
        }
    }

    /// The public, data-free view.
    pub fn ca_state(&self) -> CaState {
        match self {
            CongestionState::Open => CaState::Open,
            CongestionState::Disorder { .. } => CaState::Disorder,
            CongestionState::Recovery(_) => CaState::Recovery,
            CongestionState::Loss { .. } => CaState::Loss,
        }
    }
}

/// The sender's congestion state for tables and debugging (Linux's
/// `icsk_ca_state` names).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CaState {
    /// No loss suspected.
    #[default]
    Open,
    /// Duplicate ACKs seen, below the fast-retransmit threshold.
    Disorder,
    /// Fast recovery (NewReno, SACK or FACK).
    Recovery,
    /// Go-back-N after a retransmission timeout.
    Loss,
}

impl CaState {
    pub fn as_str(&self) -> &'static str {
        match self {
            CaState::Open => "open",
            CaState::Disorder => "disorder",
            CaState::Recovery => "recovery",
            CaState::Loss => "loss",
        }
    }
}
