//! The MPTCP-to-TCP proxy (protocol converter) as a sans-IO machine: a split
//! connection at a proxy node for a download, server → proxy → client.
//!
//! - **Upstream** a plain [`TcpReceiver`] takes the server's TCP. The proxy
//!   reads its in-order bytes into a bounded **relay** only while the relay
//!   has room; what it does not read waits in the receiver's buffer, whose
//!   advertised window shrinks accordingly
//!   ([`TcpReceiver::set_application_reads`]), so a slow client side
//!   back-pressures the server as a real proxy that stops reading its socket
//!   does.
//! - **Conversion delay** (the study's user-space proxy: about 15 ms per
//!   data segment, 8 ms from the client's SYN to the proxy's SYN). Data:
//!   bytes read from the upstream socket reach the MPTCP side
//!   `data_delay_ns` later (a delay line of (ready_at, bytes)). SYN: the
//!   server's connection may start `syn_delay_ns` after the client side's
//!   first subflow is established ([`MptcpProxy::upstream_connect_at`]; the
//!   simulator starts the server's [`TcpSender`](crate::tcp::TcpSender)
//!   then). In latlab the data sender opens every connection, so the SYNs
//!   run in the mirrored direction of a real proxy's (there the client's
//!   SYN reaches the proxy, which then connects to the server); the time
//!   between the two connections is the same.
//! - **Downstream** an [`MptcpSender`] with the caller's subflows gets the
//!   bytes (`add_app_bytes`) as the delay line releases them.
//! - **Relay occupancy** counts every byte the proxy holds in memory: in
//!   the delay line, plus handed to the MPTCP sender but not yet DATA_ACKed
//!   by the client. A real proxy's bytes sit in its user-space buffer and
//!   then in the MPTCP socket's send buffer until the client acknowledges
//!   them at the data level, and both come out of the same memory; so the
//!   bound `relay_bytes` covers both, and a relay smaller than the client
//!   side's bandwidth-delay product limits throughput as a small send
//!   buffer does. The upstream socket's unread bytes are not relay (they
//!   are bounded by the upstream receive buffer).
//! - **Per-subflow throttling** ([`ThrottleConfig`]): once at least two
//!   subflows are established, `after_ns` later, every segment of the
//!   chosen subflow leaving the proxy passes a token bucket at `rate_bps`
//!   (burst: one segment on the wire, which is HTB's default with
//!   high-resolution timers) behind a tail-drop FIFO of `queue_bytes`
//!   ([`latlab_qdisc::TokenBucket`]); a drop is a loss the subflow's TCP
//!   recovers, and coupled congestion control moves traffic to the others.
//!
//! Driving it: `connect(now)`, then after every `on_upstream_segment`,
//! `on_subflow_segment` or `on_timeout`, call `poll_transmit(now)` until it
//! returns `None` and arm a timer at `next_timeout()`; start the server's
//! sender at `upstream_connect_at()` once it is `Some`.

use std::collections::VecDeque;

use latlab_qdisc::{Dequeue, Enqueue, Limit, Qdisc, QueuedPacket, TokenBucket, TokenBucketParams};

use super::connection::MptcpSender;
use crate::segment::Segment;
use crate::tcp::TcpReceiver;

/// A rate limit on one subflow of the client side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThrottleConfig {
    /// The throttled subflow's index (chosen by policy: interface/address).
    pub subflow: usize,
    /// The bucket's rate (HTB's ceil), bits per second on the wire.
    pub rate_bps: u64,
    /// Installed this long after the second subflow is established.
    pub after_ns: u64,
    /// The FIFO in front of the bucket, bytes on the wire (tail drop).
    pub queue_bytes: u64,
    /// Header bytes per segment the bucket counts besides the payload.
    pub header_bytes: u32,
}

/// The proxy's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProxyConfig {
    /// Bound on the bytes the proxy holds (delay line + not yet DATA_ACKed).
    pub relay_bytes: u64,
    /// Each byte reaches the MPTCP side this long after the proxy read it.
    pub data_delay_ns: u64,
    /// The server's connection starts this long after the first subflow
    /// is established.
    pub syn_delay_ns: u64,
    pub throttle: Option<ThrottleConfig>,
}

impl ProxyConfig {
    /// Check every field; the message names the bad one.
    pub fn validate(&self) -> Result<(), String> {
        if self.relay_bytes == 0 {
            return Err("relay_bytes must be greater than 0".to_string());
        }
        if let Some(t) = &self.throttle {
            if t.rate_bps == 0 {
                return Err("throttle.rate_bps must be greater than 0".to_string());
            }
            if t.queue_bytes == 0 {
                return Err("throttle.queue_bytes must be greater than 0".to_string());
            }
        }
        Ok(())
    }
}

/// What the proxy sends: toward the server, or on a client-side subflow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProxyOutput {
    /// An ACK of the server's connection.
    Upstream(Segment),
    /// A segment of subflow `.0` toward the client.
    Subflow(usize, Segment),
}

/// A subflow segment waiting in the throttle's queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShapedSegment {
    pub subflow: usize,
    pub seg: Segment,
    /// Payload plus the throttle's header bytes.
    pub wire_bytes: u32,
}

impl QueuedPacket for ShapedSegment {
    fn size_bytes(&self) -> u32 {
        self.wire_bytes
    }
    fn flow_id(&self) -> u32 {
        self.subflow as u32
    }
}

/// The proxy's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProxyStats {
    /// Bytes held now: delay line + handed to the MPTCP sender and not yet
    /// DATA_ACKed.
    pub relay_occupancy_bytes: u64,
    /// The largest occupancy so far (never above `relay_bytes`).
    pub relay_max_bytes: u64,
    /// ∫ occupancy dt from `connect` to the time asked, byte·ns.
    pub relay_occupancy_byte_ns: u128,
    /// Time-average occupancy from `connect` to the time asked, bytes.
    pub relay_mean_bytes: f64,
    /// Bytes in the delay line now (read, not yet given to the MPTCP side).
    pub delay_line_bytes: u64,
    /// Bytes the upstream receiver delivered in order that the proxy has
    /// not read (the relay was full).
    pub upstream_unread_bytes: u64,
    /// Bytes read from the upstream connection into the relay.
    pub bytes_read_upstream: u64,
    /// Bytes handed to the MPTCP sender.
    pub bytes_to_downstream: u64,
    /// Bytes the client acknowledged at the data level (DATA_ACK).
    pub bytes_relayed: u64,
    pub first_subflow_established_at_ns: Option<u64>,
    pub second_subflow_established_at_ns: Option<u64>,
    pub upstream_connect_at_ns: Option<u64>,
    pub throttle_installed_at_ns: Option<u64>,
    /// Segments the throttle's queue dropped.
    pub shaper_drops_pkts: u64,
    /// Bytes in the throttle's queue now.
    pub shaper_queue_bytes: u64,
    pub shaper_max_queue_bytes: u64,
    /// Segments and wire bytes that left through the throttle.
    pub shaper_departures_pkts: u64,
    pub shaper_departures_bytes: u64,
    /// Window updates the upstream receiver sent because the proxy read.
    pub upstream_window_updates: u64,
}

/// The installed throttle.
struct Throttle {
    subflow: usize,
    bucket: TokenBucket<ShapedSegment>,
    header_bytes: u32,
    max_queue_bytes: u64,
}

/// The MPTCP-to-TCP proxy of one download.
pub struct MptcpProxy {
    cfg: ProxyConfig,
    upstream: TcpReceiver,
    downstream: MptcpSender,
    /// (ready at, bytes), ready times non-decreasing.
    delay_line: VecDeque<(u64, u64)>,
    delay_line_bytes: u64,
    bytes_read: u64,
    bytes_handed: u64,
    started_at_ns: Option<u64>,
    /// Occupancy integral up to `accounted_to_ns`.
    occupancy_byte_ns: u128,
    accounted_to_ns: u64,
    max_occupancy_bytes: u64,
    first_established_ns: Option<u64>,
    second_established_ns: Option<u64>,
    throttle: Option<Throttle>,
    throttle_installed_ns: Option<u64>,
    /// Scratch for the qdisc interface (a token bucket drops nothing at dequeue).
    dequeue_drops: Vec<ShapedSegment>,
}

impl MptcpProxy {
    /// A proxy relaying what `upstream` receives onto `downstream`.
    /// `downstream` must be a finite connection with no data yet
    /// (`MptcpSender::new(cfg, Some(0))`), not connected, with its subflows
    /// added; `upstream` is switched to on-demand reads here.
    pub fn new(cfg: ProxyConfig, mut upstream: TcpReceiver, downstream: MptcpSender) -> Result<Self, String> {
        cfg.validate()?;
        if downstream.app_bytes() != Some(0) || downstream.data_nxt() != 0 {
            return Err(
                "the proxy's MPTCP sender must be finite and empty: MptcpSender::new(cfg, Some(0))"
                    .to_string(),
            );
        }
        if downstream.subflows().is_empty() {
            return Err("the proxy's MPTCP sender has no subflows".to_string());
        }
        if let Some(t) = &cfg.throttle {
            let n = downstream.subflows().len();
            if t.subflow >= n {
                return Err(format!(
                    "throttle.subflow must be below the number of subflows ({n}), got {}",
                    t.subflow
                ));
            }
            let mss = downstream.subflows()[t.subflow].tcp().config().mss_bytes;
            let segment = u64::from(mss) + u64::from(t.header_bytes);
            if t.queue_bytes < segment {
                return Err(format!(
                    "throttle.queue_bytes must hold one segment of the subflow ({segment} bytes), got {}",
                    t.queue_bytes
                ));
            }
        }
        upstream.set_application_reads(true);
        Ok(MptcpProxy {
            cfg,
            upstream,
            downstream,
            delay_line: VecDeque::new(),
            delay_line_bytes: 0,
            bytes_read: 0,
            bytes_handed: 0,
            started_at_ns: None,
            occupancy_byte_ns: 0,
            accounted_to_ns: 0,
            max_occupancy_bytes: 0,
            first_established_ns: None,
            second_established_ns: None,
            throttle: None,
            throttle_installed_ns: None,
            dequeue_drops: Vec::new(),
        })
    }

    // ----- accessors -------------------------------------------------------

    pub fn config(&self) -> &ProxyConfig {
        &self.cfg
    }

    /// The receiver of the server's connection.
    pub fn upstream(&self) -> &TcpReceiver {
        &self.upstream
    }

    /// The client side's MPTCP sender (per-subflow cwnd, srtt, counters).
    pub fn downstream(&self) -> &MptcpSender {
        &self.downstream
    }

    /// The throttle's token bucket, once installed.
    pub fn shaper(&self) -> Option<&TokenBucket<ShapedSegment>> {
        self.throttle.as_ref().map(|t| &t.bucket)
    }

    /// When the simulator should start the server's connection: the first
    /// subflow's establishment + `syn_delay_ns`; `None` until then.
    pub fn upstream_connect_at(&self) -> Option<u64> {
        self.first_established_ns
            .map(|t| t.saturating_add(self.cfg.syn_delay_ns))
    }

    /// Bytes the proxy holds now (delay line + not yet DATA_ACKed).
    pub fn relay_occupancy_bytes(&self) -> u64 {
        self.delay_line_bytes + self.bytes_handed - self.downstream.data_una().min(self.bytes_handed)
    }

    /// The counters, the occupancy integral taken up to `now_ns`.
    pub fn stats(&self, now_ns: u64) -> ProxyStats {
        let occ = self.relay_occupancy_bytes();
        let to = now_ns.max(self.accounted_to_ns);
        let integral = self.occupancy_byte_ns + u128::from(occ) * u128::from(to - self.accounted_to_ns);
        let elapsed = self.started_at_ns.map_or(0, |s| to.saturating_sub(s));
        let q = self.throttle.as_ref();
        let qs = q.map(|t| *t.bucket.stats()).unwrap_or_default();
        ProxyStats {
            relay_occupancy_bytes: occ,
            relay_max_bytes: self.max_occupancy_bytes,
            relay_occupancy_byte_ns: integral,
            relay_mean_bytes: if elapsed > 0 {
                integral as f64 / elapsed as f64
            } else {
                0.0
            },
            delay_line_bytes: self.delay_line_bytes,
            upstream_unread_bytes: self.upstream.unread_bytes(),
            bytes_read_upstream: self.bytes_read,
            bytes_to_downstream: self.bytes_handed,
            bytes_relayed: self.downstream.data_una().min(self.bytes_handed),
            first_subflow_established_at_ns: self.first_established_ns,
            second_subflow_established_at_ns: self.second_established_ns,
            upstream_connect_at_ns: self.upstream_connect_at(),
            throttle_installed_at_ns: self.throttle_installed_ns,
            shaper_drops_pkts: qs.drops_pkts(),
            shaper_queue_bytes: q.map_or(0, |t| t.bucket.len_bytes()),
            shaper_max_queue_bytes: q.map_or(0, |t| t.max_queue_bytes),
            shaper_departures_pkts: qs.departures_pkts,
            shaper_departures_bytes: qs.departures_bytes,
            upstream_window_updates: self.upstream.window_updates_sent(),
        }
    }

    // ----- events ----------------------------------------------------------

    /// Open the client side's subflows (the MPTCP connection's SYNs).
    pub fn connect(&mut self, now_ns: u64) {
        if self.started_at_ns.is_none() {
            self.started_at_ns = Some(now_ns);
            self.accounted_to_ns = now_ns;
        }
        self.downstream.connect(now_ns);
    }

    /// A segment of the server's connection arrived.
    pub fn on_upstream_segment(&mut self, now_ns: u64, seg: &Segment) {
        self.account(now_ns);
        self.upstream.on_segment(now_ns, seg);
        self.advance(now_ns);
    }

    /// A segment from the client arrived on subflow `i`.
    pub fn on_subflow_segment(&mut self, now_ns: u64, i: usize, seg: &Segment) {
        self.account(now_ns);
        self.downstream.on_segment(now_ns, i, seg);
        self.note_establishment(now_ns);
        self.advance(now_ns);
    }

    /// Handle whatever is due: delayed ACKs, subflow timers, bytes leaving
    /// the delay line, the throttle's installation.
    pub fn on_timeout(&mut self, now_ns: u64) {
        self.account(now_ns);
        self.upstream.on_timeout(now_ns);
        self.downstream.on_timeout(now_ns);
        self.advance(now_ns);
    }

    /// The next segment to send now.
    pub fn poll_transmit(&mut self, now_ns: u64) -> Option<ProxyOutput> {
        loop {
            if let Some(seg) = self.upstream.poll_transmit(now_ns) {
                return Some(ProxyOutput::Upstream(seg));
            }
            if let Some(t) = &mut self.throttle {
                if let Dequeue::Packet { pkt, .. } = t.bucket.dequeue(now_ns, &mut self.dequeue_drops) {
                    return Some(ProxyOutput::Subflow(pkt.subflow, pkt.seg));
                }
            }
            let (i, seg) = self.downstream.poll_transmit(now_ns)?;
            match &mut self.throttle {
                Some(t) if t.subflow == i => {
                    let shaped = ShapedSegment {
                        subflow: i,
                        seg,
                        wire_bytes: seg.payload_bytes.saturating_add(t.header_bytes),
                    };
                    if let Enqueue::Queued = t.bucket.enqueue(now_ns, shaped) {
                        t.max_queue_bytes = t.max_queue_bytes.max(t.bucket.len_bytes());
                    }
                    // Dropped: lost, as at a full router queue; the
                    // subflow's TCP recovers it.
                }
                _ => return Some(ProxyOutput::Subflow(i, seg)),
            }
        }
    }

    /// The earliest time something is due.
    pub fn next_timeout(&self) -> Option<u64> {
        let install = match (&self.cfg.throttle, self.second_established_ns) {
            (Some(t), Some(s)) if self.throttle.is_none() => Some(s.saturating_add(t.after_ns)),
            _ => None,
        };
        [
            self.upstream.next_timeout(),
            self.downstream.next_timeout(),
            self.delay_line.front().map(|&(t, _)| t),
            install,
            self.throttle.as_ref().and_then(|t| t.bucket.next_wakeup()),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    // ----- internals -------------------------------------------------------

    /// Integrate the occupancy, constant since the last event, up to `now`.
    fn account(&mut self, now_ns: u64) {
        if self.started_at_ns.is_none() || now_ns <= self.accounted_to_ns {
            return;
        }
        let occ = u128::from(self.relay_occupancy_bytes());
        self.occupancy_byte_ns += occ * u128::from(now_ns - self.accounted_to_ns);
        self.accounted_to_ns = now_ns;
    }

    /// Record when the first and the second subflow became established.
    fn note_establishment(&mut self, now_ns: u64) {
        if self.second_established_ns.is_some() {
            return;
        }
        let n = self
            .downstream
            .subflows()
            .iter()
            .filter(|s| s.tcp().is_established())
            .count();
        if n >= 1 && self.first_established_ns.is_none() {
            self.first_established_ns = Some(now_ns);
        }
        if n >= 2 {
            self.second_established_ns = Some(now_ns);
        }
    }

    /// After every event: install the throttle when due, release the delay
    /// line, and read from the upstream socket what the relay has room for.
    fn advance(&mut self, now_ns: u64) {
        self.maybe_install_throttle(now_ns);
        while let Some(&(t, bytes)) = self.delay_line.front() {
            if t > now_ns {
                break;
            }
            self.delay_line.pop_front();
            self.delay_line_bytes -= bytes;
            self.hand_down(bytes);
        }
        let room = self.cfg.relay_bytes.saturating_sub(self.relay_occupancy_bytes());
        let n = self.upstream.read(now_ns, room);
        if n > 0 {
            self.bytes_read += n;
            if self.cfg.data_delay_ns == 0 {
                self.hand_down(n);
            } else {
                let ready = now_ns.saturating_add(self.cfg.data_delay_ns);
                match self.delay_line.back_mut() {
                    Some((t, b)) if *t == ready => *b += n,
                    _ => self.delay_line.push_back((ready, n)),
                }
                self.delay_line_bytes += n;
            }
        }
        self.max_occupancy_bytes = self.max_occupancy_bytes.max(self.relay_occupancy_bytes());
    }

    fn hand_down(&mut self, bytes: u64) {
        self.bytes_handed += bytes;
        self.downstream.add_app_bytes(bytes);
    }

    fn maybe_install_throttle(&mut self, now_ns: u64) {
        let (Some(t), Some(second)) = (self.cfg.throttle, self.second_established_ns) else {
            return;
        };
        if self.throttle.is_some() || now_ns < second.saturating_add(t.after_ns) {
            return;
        }
        // Burst: one full segment of this subflow on the wire.
        let mss = self
            .downstream
            .subflow(t.subflow)
            .map_or(1500, |s| s.tcp().config().mss_bytes);
        let burst = u64::from(mss) + u64::from(t.header_bytes);
        let params = TokenBucketParams {
            rate_bps: t.rate_bps,
            burst_bytes: burst,
            limit: Limit::Bytes(t.queue_bytes),
        };
        self.throttle = Some(Throttle {
            subflow: t.subflow,
            // Full at installation: tokens are capped at the burst.
            bucket: TokenBucket::new(params),
            header_bytes: t.header_bytes,
            max_queue_bytes: 0,
        });
        self.throttle_installed_ns = Some(now_ns);
    }
}
