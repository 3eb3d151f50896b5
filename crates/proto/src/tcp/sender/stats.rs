//! The sender's counters.

/// Counters kept by the sender.
///
/// Laid out in declaration order (`repr(C)`): the five that every ACK or
/// data segment moves come first, so that in `TcpSender`, which puts its
/// counters just after its own per-packet fields, they share those fields'
/// cache lines and the others (rare events) lie beyond.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct SenderStats {
    /// Acceptable ACKs processed.
    pub acks_received: u64,
    /// RTT samples fed to the RFC 6298 estimator.
    pub rtt_samples: u64,
    /// Payload bytes cumulatively acknowledged.
    pub bytes_acked: u64,
    /// Data segments sent, retransmissions included (SYNs not included).
    pub segments_sent: u64,
    /// Payload bytes sent, retransmissions included.
    pub bytes_sent: u64,
    pub retransmitted_segments: u64,
    pub retransmitted_bytes: u64,
    /// Loss recovery episodes entered by fast retransmit (NewReno or SACK).
    pub fast_retransmits: u64,
    /// Retransmission timer expirations with data outstanding.
    pub timeouts: u64,
    /// SYNs sent, retransmissions included.
    pub syns_sent: u64,
    /// SYN retransmission timer expirations.
    pub syn_timeouts: u64,
    /// ACKs counted as duplicate (RFC 5681 §2 or RFC 6675 §2 definition).
    pub dupacks_received: u64,
    /// NewReno partial ACKs (RFC 6582).
    pub partial_acks: u64,
    /// RFC 6675 NextSeg rule 4 rescue retransmissions.
    pub rescue_retransmits: u64,
    /// Zero-window probes sent by the persist timer.
    pub window_probes: u64,
    /// Idle restarts (RFC 5681 §4.1).
    pub idle_restarts: u64,
    /// ACKs carrying ECN-Echo (RFC 3168 §6.1.2).
    pub ece_acks_received: u64,
    /// Window reductions in answer to ECN-Echo, at most one per window.
    pub ecn_reductions: u64,
}

impl SenderStats {
    /// Add another connection's counters (a user's successive connections).
    pub fn accumulate(&mut self, o: &SenderStats) {
        let SenderStats {
            segments_sent,
            bytes_sent,
            retransmitted_segments,
            retransmitted_bytes,
            bytes_acked,
            fast_retransmits,
            timeouts,
            syns_sent,
            syn_timeouts,
            acks_received,
            dupacks_received,
            partial_acks,
            rescue_retransmits,
            rtt_samples,
            window_probes,
            idle_restarts,
            ece_acks_received,
            ecn_reductions,
        } = *o;
        self.segments_sent += segments_sent;
        self.bytes_sent += bytes_sent;
        self.retransmitted_segments += retransmitted_segments;
        self.retransmitted_bytes += retransmitted_bytes;
        self.bytes_acked += bytes_acked;
        self.fast_retransmits += fast_retransmits;
        self.timeouts += timeouts;
        self.syns_sent += syns_sent;
        self.syn_timeouts += syn_timeouts;
        self.acks_received += acks_received;
        self.dupacks_received += dupacks_received;
        self.partial_acks += partial_acks;
        self.rescue_retransmits += rescue_retransmits;
        self.rtt_samples += rtt_samples;
        self.window_probes += window_probes;
        self.idle_restarts += idle_restarts;
        self.ece_acks_received += ece_acks_received;
        self.ecn_reductions += ecn_reductions;
    }
}
