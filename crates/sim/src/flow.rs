//! A flow: one transport connection between two nodes and the bookkeeping
//! the simulator keeps around its state machines.
//!
//! TCP flows are either one connection (bulk or finite) or a closed-loop
//! user who opens a new connection per file, thinking in between. UDP
//! flows are open-loop sources with a counting sink.

use crate::traffic::{UdpSource, UserDraws};
use latlab_proto::cc::{self, CongestionControl};
use latlab_proto::tcp::{SenderStats, TcpConfig, TcpReceiver, TcpSender};

/// A congestion controller by scenario name and parameters. Names and
/// parameters are validated when the scenario is built, so this cannot
/// fail for a running simulation; NewReno stands in if it ever did.
pub fn make_cc(name: &str, mss_bytes: u32, params: &[(String, f64)]) -> Box<dyn CongestionControl> {
    cc::build(name, mss_bytes as u64, params).unwrap_or_else(|_| Box::new(cc::NewReno::new()))
}

/// Timer bookkeeping for one sans-IO endpoint.
///
/// At most one agenda entry per endpoint is "live": the one at `armed_at`.
/// When the endpoint's deadline moves earlier, a new entry is scheduled and
/// the old one goes stale (ignored when it fires); when it moves later the
/// live entry is kept and simply re-armed when it fires. So restarting the
/// RTO on every ACK costs no agenda operation.
#[derive(Debug, Clone, Copy, Default)]
pub struct TimerSlot {
    pub armed_at: Option<u64>,
}

impl TimerSlot {
    /// Whether an entry must be scheduled for `deadline`.
    #[inline]
    pub fn needs_schedule(&mut self, deadline: Option<u64>) -> Option<u64> {
        let t = deadline?;
        match self.armed_at {
            Some(armed) if armed <= t => None,
            _ => {
                self.armed_at = Some(t);
                Some(t)
            }
        }
    }

    /// An entry for time `t` fired: is it the live one?
    #[inline]
    pub fn fire(&mut self, t: u64) -> bool {
        if self.armed_at == Some(t) {
            self.armed_at = None;
            true
        } else {
            false
        }
    }
}

/// One completed transfer of a closed-loop user.
#[derive(Debug, Clone, Copy)]
pub struct Transfer {
    pub start_ns: u64,
    pub size_bytes: u64,
    pub fct_ns: u64,
}

/// A closed-loop user: the next file, the think time, what was done.
pub struct ClosedLoop {
    pub draws: UserDraws,
    pub cfg: TcpConfig,
    pub cc_params: Vec<(String, f64)>,
    pub transfers: Vec<Transfer>,
    /// Start and size of the transfer in progress.
    pub current_start_ns: u64,
    pub current_size_bytes: u64,
    /// Totals over finished connections (the live one is added when read).
    pub past_bytes_delivered: u64,
    pub past_bytes_sent: u64,
    pub past_sender: SenderStats,
}

pub struct TcpFlow {
    pub sender: TcpSender,
    pub receiver: TcpReceiver,
    pub sender_timer: TimerSlot,
    pub receiver_timer: TimerSlot,
    pub closed_loop: Option<ClosedLoop>,
}

pub struct UdpFlow {
    pub source: UdpSource,
    pub timer: TimerSlot,
    pub received_pkts: u64,
    pub received_bytes: u64,
    /// One-way delays of received packets (for mean and max).
    pub owd_sum_ns: u64,
    pub owd_max_ns: u64,
}

pub enum Transport {
    Tcp(TcpFlow),
    Udp(UdpFlow),
}

pub struct Flow {
    pub group: u32,
    pub src: u32,
    pub dst: u32,
    /// "newreno", "cubic", ... for TCP; "udp" for UDP.
    pub cc_name: String,
    pub start_ns: u64,
    pub size_bytes: Option<u64>,
    pub transport: Transport,
    /// Link indices sender→receiver and receiver→sender.
    pub fwd_path: Box<[u32]>,
    pub rev_path: Box<[u32]>,
    pub header_bytes: u32,
    /// Connection generation: packets of an earlier connection of a
    /// closed-loop user are discarded on arrival.
    pub conn: u32,
    pub started: bool,
    /// Counters at the start of the measurement window.
    pub window_start_delivered: u64,
    pub window_start_sent: u64,
    pub sampled: bool,
}

impl Flow {
    /// Payload bytes delivered in order to the receiving application.
    pub fn bytes_delivered(&self) -> u64 {
        match &self.transport {
            Transport::Tcp(t) => {
                let past = t.closed_loop.as_ref().map_or(0, |c| c.past_bytes_delivered);
                past + t.receiver.stats().bytes_delivered
            }
            Transport::Udp(u) => u.received_bytes,
        }
    }

    /// Payload bytes sent, retransmissions included.
    pub fn bytes_sent(&self) -> u64 {
        match &self.transport {
            Transport::Tcp(t) => {
                let past = t.closed_loop.as_ref().map_or(0, |c| c.past_bytes_sent);
                past + t.sender.stats().bytes_sent
            }
            Transport::Udp(u) => u.source.sent_bytes,
        }
    }

    /// Sender counters over all of the flow's connections.
    pub fn sender_totals(&self) -> Option<SenderStats> {
        let t = self.tcp()?;
        let mut s = t.sender.stats();
        if let Some(c) = &t.closed_loop {
            let p = &c.past_sender;
            s.segments_sent += p.segments_sent;
            s.bytes_sent += p.bytes_sent;
            s.retransmitted_segments += p.retransmitted_segments;
            s.retransmitted_bytes += p.retransmitted_bytes;
            s.bytes_acked += p.bytes_acked;
            s.fast_retransmits += p.fast_retransmits;
            s.timeouts += p.timeouts;
        }
        Some(s)
    }

    pub fn tcp(&self) -> Option<&TcpFlow> {
        match &self.transport {
            Transport::Tcp(t) => Some(t),
            Transport::Udp(_) => None,
        }
    }

    pub fn udp(&self) -> Option<&UdpFlow> {
        match &self.transport {
            Transport::Udp(u) => Some(u),
            Transport::Tcp(_) => None,
        }
    }
}
