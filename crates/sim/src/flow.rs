//! A flow: one transport connection between two nodes and the bookkeeping
//! the simulator keeps around its state machines.
//!
//! TCP flows are either one connection (bulk or finite) or a closed-loop
//! user who opens a new connection per file, thinking in between. UDP
//! flows are open-loop sources with a counting sink. TFRC and DFlow flows
//! are rate-paced datagram sources (always backlogged) whose receiver
//! reports loss (and, for DFlow, queueing delay) once per RTT.

use crate::traffic::{UdpSource, UserDraws};
use latlab_proto::cc::CcSpec;
use latlab_proto::mptcp::{MptcpProxy, MptcpReceiver, MptcpSender};
use latlab_proto::tcp::{RwndSpec, SenderStats, TcpConfig, TcpReceiver, TcpSender};
use latlab_proto::tfrc::{TfrcMode, TfrcReceiver, TfrcSender};

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
    /// The group's controller: each new connection gets a fresh one.
    pub cc: CcSpec,
    /// The group's receiver-window controller: fresh per connection too.
    pub rwnd: RwndSpec,
    pub transfers: Vec<Transfer>,
    /// Start and size of the transfer in progress.
    pub current_start_ns: u64,
    pub current_size_bytes: u64,
    /// Totals over finished connections (the live one is added when read).
    pub past_bytes_delivered: u64,
    pub past_sender: SenderStats,
}

// Laid out in declaration order (`repr(C)`): the sender's timer slot, read
// on every ACK, comes first, in the flow's first line with the fields every
// packet reads (see `Flow`); the receiver's, read only while it holds a
// delayed ACK, after the receiver.
#[repr(C)]
pub struct TcpFlow {
    pub sender_timer: TimerSlot,
    pub receiver: TcpReceiver,
    pub receiver_timer: TimerSlot,
    pub sender: TcpSender,
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

/// A TFRC (RFC 5348) or DFlow flow: the two sans-IO machines of
/// `latlab_proto::tfrc` and a timer slot each.
pub struct TfrcFlow {
    /// Created (again) at the flow's start, so its clock starts there.
    pub sender: TfrcSender,
    pub receiver: TfrcReceiver,
    pub sender_timer: TimerSlot,
    pub receiver_timer: TimerSlot,
    /// Receiver clock minus simulation clock, ns. DFlow only uses
    /// differences of one-way delays, so its closed loop must not depend on
    /// this; a non-zero value lets a scenario check that.
    pub receiver_clock_offset_ns: u64,
}

impl TfrcFlow {
    /// "dflow" or "tfrc", from the configured mode.
    pub fn kind_name(&self) -> &'static str {
        match self.sender.config().mode {
            TfrcMode::DFlow(_) => "dflow",
            TfrcMode::Tfrc => "tfrc",
        }
    }

    /// DFlow's latest queueing delay (OWD above the base delay), ns. None
    /// for plain TFRC: its receiver tracks OWD against the default 10-RTT
    /// base window, which absorbs TFRC's standing queue, so the figure
    /// would read near zero while the buffer is full.
    pub fn queueing_delay_ns(&self) -> Option<u64> {
        matches!(self.sender.config().mode, TfrcMode::DFlow(_))
            .then(|| self.receiver.stats().last_queueing_delay_ns)
    }
}

/// One path of an MPTCP connection: where its subflow runs and when it opens.
pub struct MptcpPath {
    pub name: String,
    pub backup: bool,
    /// When the subflow opens, ns after the flow's start.
    pub join_after_ns: u64,
    /// Positions in the route table of the path's two directions.
    pub fwd_route: u32,
    pub rev_route: u32,
    /// The subflow's index in the sender and receiver once it has joined
    /// (subflows are numbered in the order they join).
    pub subflow: Option<u8>,
    /// The subflow's bytes acknowledged when the measurement window opened.
    pub window_start_acked: u64,
}

/// The `subflow` byte of packets on a proxied connection's plain-TCP leg
/// (server ↔ proxy); subflow indices stop below it.
pub const UPSTREAM_SUBFLOW: u8 = u8::MAX;

/// The sending end of an MPTCP connection: the flow's source itself, or a
/// proxy node that relays a plain TCP connection from the source.
// Kept inline: the direct sender is the common case and is reached per
// packet; boxing it would add a pointer chase on the hot path to save
// memory only for the rarer proxied connections.
#[allow(clippy::large_enum_variant)]
pub enum MptcpEnd {
    Direct(MptcpSender),
    Proxy(Box<ProxyEnd>),
}

/// A split connection (docs/models/mptcp-proxy.md): the server's TCP
/// sender at the flow's source, the proxy machine at `node` (its upstream
/// receiver and its MPTCP sender toward the client).
pub struct ProxyEnd {
    pub proxy: MptcpProxy,
    pub server: TcpSender,
    pub server_timer: TimerSlot,
    pub server_connected: bool,
    pub node: u32,
    /// Route positions of server→proxy and proxy→server.
    pub up_fwd_route: u32,
    pub up_rev_route: u32,
}

/// A Multipath TCP connection (RFC 8684): the sans-IO sender and receiver
/// of `latlab_proto::mptcp`, one subflow per path, a timer slot each (the
/// sender's serves the proxy when there is one).
pub struct MptcpFlow {
    pub end: MptcpEnd,
    pub receiver: MptcpReceiver,
    pub sender_timer: TimerSlot,
    pub receiver_timer: TimerSlot,
    /// Every subflow's TCP settings and controller.
    pub cfg: TcpConfig,
    pub cc: CcSpec,
    /// In the scenario's order.
    pub paths: Vec<MptcpPath>,
    /// Path index of each joined subflow (inverse of `MptcpPath::subflow`).
    pub path_of: Vec<u8>,
    /// Route positions (forward, reverse) of each joined subflow's path:
    /// `paths[path_of[i]]`'s, kept by subflow so that sending a segment
    /// looks its route up in one step.
    pub subflow_routes: Vec<(u32, u32)>,
    /// The receive buffer's occupancy integral (byte·ns) when the
    /// measurement window opened, for the window's mean occupancy.
    pub window_start_occupancy_byte_ns: u128,
    /// Proxied finite transfers: when the client had every byte.
    pub completed_at_ns: Option<u64>,
}

impl MptcpFlow {
    /// The MPTCP sender (the proxy's, when there is one).
    pub fn sender(&self) -> &MptcpSender {
        match &self.end {
            MptcpEnd::Direct(s) => s,
            MptcpEnd::Proxy(p) => p.proxy.downstream(),
        }
    }

    pub fn proxy(&self) -> Option<&ProxyEnd> {
        match &self.end {
            MptcpEnd::Proxy(p) => Some(p),
            MptcpEnd::Direct(_) => None,
        }
    }

    /// When a finite transfer finished: acknowledged at the data level
    /// (direct), or delivered to the client (through a proxy, whose own
    /// sender only ever knows the bytes relayed so far).
    pub fn completed_at(&self) -> Option<u64> {
        match &self.end {
            MptcpEnd::Direct(s) => s.completed_at_ns(),
            MptcpEnd::Proxy(_) => self.completed_at_ns,
        }
    }

    /// Earliest pending join, absolute ns, for a flow that started at `start_ns`.
    pub fn next_join_ns(&self, start_ns: u64) -> Option<u64> {
        // Every path joined (the usual case, asked after every event).
        if self.path_of.len() == self.paths.len() {
            return None;
        }
        self.paths
            .iter()
            .filter(|p| p.subflow.is_none())
            .map(|p| start_ns + p.join_after_ns)
            .min()
    }

    /// Open the subflows whose join time has come (in scenario order among
    /// equal times): each gets the next index in sender and receiver.
    pub fn join_due(&mut self, now_ns: u64, start_ns: u64) {
        // A proxy's subflows are all added at build time.
        let MptcpEnd::Direct(sender) = &mut self.end else {
            return;
        };
        for k in 0..self.paths.len() {
            let p = &self.paths[k];
            if p.subflow.is_some() || start_ns + p.join_after_ns > now_ns {
                continue;
            }
            let cc = self.cc.build(self.cfg.mss_bytes as u64);
            let i = sender.add_subflow(now_ns, self.cfg.clone(), cc, p.backup);
            let j = self.receiver.add_subflow(self.cfg.clone());
            debug_assert_eq!(i, j, "sender and receiver number subflows alike");
            self.paths[k].subflow = Some(i as u8);
            self.path_of.push(k as u8);
            self.subflow_routes
                .push((self.paths[k].fwd_route, self.paths[k].rev_route));
        }
    }

    /// Sum of the subflows' sender counters.
    pub fn sender_totals(&self) -> SenderStats {
        let mut s = SenderStats::default();
        for sf in self.sender().subflows() {
            s.accumulate(&sf.tcp().stats());
        }
        s
    }
}

// Kept inline: flows live in one Vec that the engine indexes per packet,
// and most flows are TCP, the largest variant; boxing would add a pointer
// chase per packet to save memory only for the smaller UDP flows. The tag
// is a byte of its own at the start (`repr(u8)`), not a niche somewhere in
// a variant's fields, so that it shares the flow's first line with the
// fields every packet reads (see `Flow`).
#[allow(clippy::large_enum_variant)]
#[repr(u8)]
pub enum Transport {
    Tcp(TcpFlow),
    Udp(UdpFlow),
    Tfrc(TfrcFlow),
    Mptcp(MptcpFlow),
}

// Cache-line aligned, as the packet slab (see `Packet`), and laid out in
// declaration order (`repr(C)`): what sending and delivering every packet
// reads (routes, header size, connection generation, the sampled flag, the
// transport's tag) is in the first line; the rest of the flow's own fields
// come after the transport.
#[repr(C, align(64))]
pub struct Flow {
    /// Positions in the simulation's [`crate::routing::RouteTable`] of the
    /// paths sender→receiver and receiver→sender.
    pub fwd_route: u32,
    pub rev_route: u32,
    pub header_bytes: u32,
    /// Connection generation: packets of an earlier connection of a
    /// closed-loop user are discarded on arrival.
    pub conn: u32,
    pub sampled: bool,
    pub started: bool,
    pub transport: Transport,
    pub group: u32,
    pub src: u32,
    pub dst: u32,
    /// "newreno", "cubic", ... for TCP; "udp" for UDP; "tfrc" or "dflow".
    pub cc_name: String,
    pub start_ns: u64,
    pub size_bytes: Option<u64>,
    /// Counters at the start of the measurement window.
    pub window_start_delivered: u64,
    pub window_start_sent: u64,
}

// The transport's tag (its first byte) and a TCP flow's first field, the
// sender's timer slot (at the flow's alignment past the tag, `repr(u8)`),
// lie in the flow's first line.
const _: () = assert!(
    std::mem::offset_of!(Flow, transport)
        + std::mem::align_of::<TcpFlow>()
        + std::mem::size_of::<TimerSlot>()
        <= 64
);

impl Flow {
    /// Payload bytes delivered in order to the receiving application.
    pub fn bytes_delivered(&self) -> u64 {
        match &self.transport {
            Transport::Tcp(t) => {
                let past = t.closed_loop.as_ref().map_or(0, |c| c.past_bytes_delivered);
                past + t.receiver.stats().bytes_delivered
            }
            Transport::Udp(u) => u.received_bytes,
            Transport::Tfrc(t) => t.receiver.stats().bytes_received,
            Transport::Mptcp(m) => m.receiver.bytes_delivered(),
        }
    }

    /// Payload bytes sent, retransmissions included.
    pub fn bytes_sent(&self) -> u64 {
        match &self.transport {
            Transport::Tcp(t) => {
                let past = t.closed_loop.as_ref().map_or(0, |c| c.past_sender.bytes_sent);
                past + t.sender.stats().bytes_sent
            }
            Transport::Udp(u) => u.source.sent_bytes,
            Transport::Tfrc(t) => t.sender.stats().bytes_sent,
            Transport::Mptcp(m) => m.sender_totals().bytes_sent,
        }
    }

    /// Sender counters over all of the flow's connections.
    pub fn sender_totals(&self) -> Option<SenderStats> {
        if let Transport::Mptcp(m) = &self.transport {
            return Some(m.sender_totals());
        }
        let t = self.tcp()?;
        let mut s = t.sender.stats();
        if let Some(c) = &t.closed_loop {
            s.accumulate(&c.past_sender);
        }
        Some(s)
    }

    pub fn tcp(&self) -> Option<&TcpFlow> {
        match &self.transport {
            Transport::Tcp(t) => Some(t),
            _ => None,
        }
    }

    pub fn udp(&self) -> Option<&UdpFlow> {
        match &self.transport {
            Transport::Udp(u) => Some(u),
            _ => None,
        }
    }

    pub fn mptcp(&self) -> Option<&MptcpFlow> {
        match &self.transport {
            Transport::Mptcp(m) => Some(m),
            _ => None,
        }
    }

    pub fn tfrc(&self) -> Option<&TfrcFlow> {
        match &self.transport {
            Transport::Tfrc(t) => Some(t),
            _ => None,
        }
    }

    /// "tcp", "udp", "tfrc", "dflow" or "mptcp" (the scenario's flow kind).
    pub fn kind_name(&self) -> &'static str {
        match &self.transport {
            Transport::Tcp(_) => "tcp",
            Transport::Udp(_) => "udp",
            Transport::Tfrc(t) => t.kind_name(),
            Transport::Mptcp(_) => "mptcp",
        }
    }
}
