//! The simulation: the run loop and the packet path.
//!
//! Per packet and hop the engine does: an enqueue into the link's queue
//! discipline; a dequeue when the transmitter is free (a `TxDone` event only
//! if the packet had to wait); a push onto the link's wire; one `Arrive`
//! event when it reaches the far node (only the wire's head has a pending
//! event). Paths are runs of one route table, so forwarding is an index
//! increment; the next link is looked up when a packet leaves, not when it
//! arrives.

use crate::engine::{Event, EventQueue};
use crate::flow::{
    Flow, MptcpEnd, MptcpFlow, ProxyEnd, TcpFlow, TfrcFlow, TimerSlot, Transfer, Transport, UPSTREAM_SUBFLOW,
};
use crate::measure::{AccessDelay, Samples};
use crate::network::{queue_view, Link, Node, Service, SharedMedium};
use crate::packet::{Packet, PacketRef, PacketSlab, Payload};
use crate::routing::RouteTable;
use crate::wire::{Hop, Wires};
use latlab_link::Departure;
use latlab_proto::mptcp::ProxyOutput;
use latlab_proto::tcp::{TcpReceiver, TcpSender};
use latlab_proto::tfrc::TfrcSender;

mod links;
pub use links::{LinkTrace, TraceEvent};

/// Per-link conservation at the end of a run: packets offered to the link
/// must equal packets sent + dropped by the queue + lost at random + held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conservation {
    pub link: String,
    pub arrivals: u64,
    pub departures: u64,
    pub drops: u64,
    pub lost: u64,
    pub queued: u64,
    pub ok: bool,
}

pub struct Simulation {
    pub name: String,
    pub seed: u64,
    pub duration_ns: u64,
    pub sample_interval_ns: u64,
    pub measure_from_ns: u64,
    pub now_ns: u64,
    /// Events taken off the agenda so far (including stale timer entries).
    pub events: u64,
    pub finished: bool,
    pub(crate) queue: EventQueue,
    pub nodes: Vec<Node>,
    pub links: Vec<Link>,
    pub flows: Vec<Flow>,
    /// Every flow's paths (flows hold positions into it).
    pub routes: RouteTable,
    pub group_names: Vec<String>,
    /// LTE cells and Wi-Fi APs; their members are links with `Service::Shared`.
    pub media: Vec<SharedMedium>,
    /// Whether any link is time-varying or shared (the `access` tables exist).
    pub has_access: bool,
    /// Per flow, since the last sample: delay of its data packets at
    /// time-varying and shared hops (queueing + service + HARQ/retries).
    pub access_delay: Vec<AccessDelay>,
    pub(crate) packets: PacketSlab,
    /// Packets propagating on every link's wire.
    wires: Wires,
    drop_scratch: Vec<PacketRef>,
    departures_scratch: Vec<Departure<PacketRef>>,
    medium_drop_scratch: Vec<(u32, PacketRef)>,
    pub samples: Samples,
    /// The first error writing a pcap file (capture stops; the run goes on).
    pub pcap_error: Option<String>,
    /// Some link captures to pcap or keeps a [`LinkTrace`].
    capturing: bool,
}

impl Simulation {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        name: String,
        seed: u64,
        duration_ns: u64,
        sample_interval_ns: u64,
        measure_from_ns: u64,
        nodes: Vec<Node>,
        links: Vec<Link>,
        flows: Vec<Flow>,
        routes: RouteTable,
        group_names: Vec<String>,
        media: Vec<SharedMedium>,
    ) -> Self {
        let has_access = links.iter().any(|l| !matches!(l.service, Service::Fixed));
        let access_delay = if has_access {
            vec![AccessDelay::default(); flows.len()]
        } else {
            Vec::new()
        };
        let mut queue = EventQueue::new();
        for (i, f) in flows.iter().enumerate() {
            queue.schedule(f.start_ns, Event::FlowStart { flow: i as u32 });
        }
        if measure_from_ns > 0 {
            queue.schedule(measure_from_ns, Event::MeasureStart);
        }
        if sample_interval_ns > 0 {
            queue.schedule(0, Event::Sample);
        }
        let wires = Wires::new(links.len());
        let capturing = links.iter().any(|l| l.pcap.is_some());
        Simulation {
            name,
            seed,
            duration_ns,
            sample_interval_ns,
            measure_from_ns,
            now_ns: 0,
            events: 0,
            finished: false,
            queue,
            nodes,
            links,
            flows,
            routes,
            group_names,
            media,
            has_access,
            access_delay,
            packets: PacketSlab::default(),
            wires,
            drop_scratch: Vec::new(),
            departures_scratch: Vec::new(),
            medium_drop_scratch: Vec::new(),
            samples: Samples::default(),
            pcap_error: None,
            capturing,
        }
    }

    /// Run to the end of the scenario.
    pub fn run(&mut self) {
        self.run_until(self.duration_ns);
    }

    /// Advance simulated time to `min(t_ns, duration)`, processing every
    /// event due by then. Finishes the run when the end is reached.
    pub fn run_until(&mut self, t_ns: u64) {
        if self.finished {
            return;
        }
        let end = t_ns.min(self.duration_ns);
        while let Some(t) = self.queue.peek_time() {
            if t > end {
                break;
            }
            let Some((t, ev)) = self.queue.pop() else { break };
            self.now_ns = t;
            self.events += 1;
            // What the next event reads, if the agenda already knows it:
            // its misses overlap with this event's work.
            if let Some(next) = self.queue.peek_settled() {
                self.prefetch(next);
            }
            self.dispatch(ev);
        }
        self.now_ns = end;
        if end >= self.duration_ns {
            self.finish();
        }
    }

    /// Ask the cache for the first lines `ev` will read, while the event
    /// before it runs (see [`crate::prefetch`]).
    #[inline(always)]
    fn prefetch(&self, ev: Event) {
        match ev {
            Event::Arrive { pkt, hop } => {
                self.wires.prefetch(pkt);
                match hop {
                    // `link_enqueue` reads the first four lines.
                    Hop::Link(link) => {
                        if let Some(l) = self.links.get(link as usize) {
                            crate::prefetch::lines(l, 4);
                        }
                    }
                    Hop::Deliver { flow } => {
                        self.packets.prefetch(pkt);
                        if let Some(f) = self.flows.get(flow as usize) {
                            crate::prefetch::line(&f.conn);
                        }
                    }
                }
            }
            Event::TxDone { link } => {
                if let Some(l) = self.links.get(link as usize) {
                    crate::prefetch::lines(l, 4);
                }
            }
            _ => {}
        }
    }

    #[inline]
    fn dispatch(&mut self, ev: Event) {
        match ev {
            Event::TxDone { link } => self.on_tx_done(link),
            Event::Arrive { pkt, hop } => self.on_arrive(pkt, hop),
            Event::MediumWake { medium } => self.on_medium_wake(medium),
            Event::LinkWake { link } => self.on_link_wake(link),
            Event::FlowStart { flow } => {
                let now = self.now_ns;
                let f = &mut self.flows[flow as usize];
                f.started = true;
                match &mut f.transport {
                    Transport::Tcp(t) if t.closed_loop.is_some() => self.next_transfer(flow),
                    Transport::Tcp(t) => {
                        t.sender.connect(now);
                        self.poll_sender(flow);
                    }
                    Transport::Udp(u) => {
                        u.source.start(now);
                        self.poll_udp(flow);
                    }
                    Transport::Tfrc(t) => {
                        // The sender's clock (initial rate, no-feedback
                        // timer) starts with the flow, not at time zero.
                        // TfrcSender holds no heap data: this allocates nothing.
                        t.sender = TfrcSender::new(*t.sender.config(), now);
                        self.poll_tfrc_sender(flow);
                    }
                    Transport::Mptcp(m) => {
                        match &mut m.end {
                            // Subflows joining now open at connect; later
                            // ones when the sender's timer reaches their
                            // join time.
                            MptcpEnd::Direct(sender) => {
                                sender.connect(now);
                                m.join_due(now, now);
                            }
                            // The client side opens first; the server's
                            // connection when the proxy says.
                            MptcpEnd::Proxy(p) => p.proxy.connect(now),
                        }
                        self.poll_mptcp_sender(flow);
                    }
                }
            }
            Event::SenderTimer { flow } => {
                let now = self.now_ns;
                match &mut self.flows[flow as usize].transport {
                    Transport::Tcp(t) => {
                        if t.sender_timer.fire(now) {
                            t.sender.on_timeout(now);
                            self.poll_sender(flow);
                        }
                    }
                    Transport::Udp(u) => {
                        if u.timer.fire(now) {
                            self.poll_udp(flow);
                        }
                    }
                    Transport::Tfrc(t) => {
                        if t.sender_timer.fire(now) {
                            t.sender.on_timeout(now);
                            self.poll_tfrc_sender(flow);
                        }
                    }
                    Transport::Mptcp(m) => {
                        if m.sender_timer.fire(now) {
                            let start = self.flows[flow as usize].start_ns;
                            let m = self.mptcp_mut(flow);
                            m.join_due(now, start);
                            match &mut m.end {
                                MptcpEnd::Direct(sender) => sender.on_timeout(now),
                                MptcpEnd::Proxy(p) => p.proxy.on_timeout(now),
                            }
                            self.poll_mptcp_sender(flow);
                        }
                    }
                }
            }
            Event::ReceiverTimer { flow } => {
                let now = self.now_ns;
                match &mut self.flows[flow as usize].transport {
                    Transport::Tcp(t) => {
                        if t.receiver_timer.fire(now) {
                            t.receiver.on_timeout(now);
                            self.poll_receiver(flow);
                        }
                    }
                    Transport::Tfrc(t) => {
                        if t.receiver_timer.fire(now) {
                            t.receiver.on_timeout(now + t.receiver_clock_offset_ns);
                            self.poll_tfrc_receiver(flow);
                        }
                    }
                    Transport::Mptcp(m) => {
                        if m.receiver_timer.fire(now) {
                            m.receiver.on_timeout(now);
                            self.poll_mptcp_receiver(flow);
                        }
                    }
                    Transport::Udp(_) => {}
                }
            }
            Event::ServerTimer { flow } => {
                let now = self.now_ns;
                let p = self.proxy_mut(flow);
                if p.server_timer.fire(now) {
                    p.server.on_timeout(now);
                    self.poll_server(flow);
                }
            }
            Event::UserNext { flow } => self.next_transfer(flow),
            Event::Sample => {
                self.samples
                    .record(self.now_ns, &self.flows, &mut self.links, &self.media);
                if self.has_access {
                    self.samples.record_access(
                        self.now_ns,
                        &self.flows,
                        &mut self.links,
                        &mut self.media,
                        &mut self.access_delay,
                    );
                }
                let next = self.now_ns + self.sample_interval_ns;
                if next <= self.duration_ns {
                    self.queue.schedule(next, Event::Sample);
                }
            }
            Event::MeasureStart => {
                let now = self.now_ns;
                for f in &mut self.flows {
                    f.window_start_delivered = f.bytes_delivered();
                    f.window_start_sent = f.bytes_sent();
                    if let Transport::Mptcp(m) = &mut f.transport {
                        m.window_start_occupancy_byte_ns = m.receiver.buffer_stats(now).occupancy_byte_ns;
                        for k in 0..m.paths.len() {
                            let acked = m.paths[k]
                                .subflow
                                .and_then(|i| m.sender().subflow(i as usize))
                                .map_or(0, |s| s.tcp().stats().bytes_acked);
                            m.paths[k].window_start_acked = acked;
                        }
                    }
                }
                for l in &mut self.links {
                    l.window_start_departures_bytes = l.counters.departures_bytes;
                    if let Some(b) = l.offered_bytes_until(&mut self.media, self.now_ns) {
                        l.access.window_start_offered_bytes = b;
                    }
                }
            }
        }
    }

    fn tcp_mut(&mut self, flow: u32) -> &mut TcpFlow {
        match &mut self.flows[flow as usize].transport {
            Transport::Tcp(t) => t,
            _ => unreachable!("TCP event for a non-TCP flow"),
        }
    }

    fn mptcp_mut(&mut self, flow: u32) -> &mut MptcpFlow {
        match &mut self.flows[flow as usize].transport {
            Transport::Mptcp(m) => m,
            _ => unreachable!("MPTCP event for a non-MPTCP flow"),
        }
    }

    fn proxy_mut(&mut self, flow: u32) -> &mut ProxyEnd {
        match &mut self.mptcp_mut(flow).end {
            MptcpEnd::Proxy(p) => p,
            MptcpEnd::Direct(_) => unreachable!("proxy event for an MPTCP flow without a proxy"),
        }
    }

    /// Send every segment the MPTCP sender (or the proxy) wants to send
    /// now, each on its subflow's path (a proxy's ACKs to the server on
    /// the upstream route), then arm its timer for the earliest of its
    /// deadlines, the next subflow's join time and the server's start.
    fn poll_mptcp_sender(&mut self, flow: u32) {
        let now = self.now_ns;
        if let MptcpEnd::Proxy(_) = self.mptcp_mut(flow).end {
            self.poll_proxy(flow);
            return;
        }
        loop {
            let MptcpEnd::Direct(sender) = &mut self.mptcp_mut(flow).end else {
                return;
            };
            let Some((i, seg)) = sender.poll_transmit(now) else {
                break;
            };
            self.send_mptcp(flow, true, i, seg);
        }
        let start = self.flows[flow as usize].start_ns;
        let m = self.mptcp_mut(flow);
        let deadline = match (m.sender().next_timeout(), m.next_join_ns(start)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(d) = m.sender_timer.needs_schedule(deadline.map(|d| d.max(now))) {
            self.queue.schedule(d, Event::SenderTimer { flow });
        }
    }

    /// The proxy's side of [`Self::poll_mptcp_sender`]; starts the server's
    /// connection once the proxy's SYN delay has passed.
    fn poll_proxy(&mut self, flow: u32) {
        let now = self.now_ns;
        loop {
            match self.proxy_mut(flow).proxy.poll_transmit(now) {
                Some(ProxyOutput::Upstream(seg)) => self.send_upstream(flow, false, seg),
                Some(ProxyOutput::Subflow(i, seg)) => self.send_mptcp(flow, true, i, seg),
                None => break,
            }
        }
        let p = self.proxy_mut(flow);
        let connect_at = p.proxy.upstream_connect_at().filter(|_| !p.server_connected);
        if connect_at.is_some_and(|t| t <= now) {
            p.server_connected = true;
            p.server.connect(now);
            self.poll_server(flow);
        }
        let m = self.mptcp_mut(flow);
        let MptcpEnd::Proxy(p) = &m.end else { return };
        let connect_at = p.proxy.upstream_connect_at().filter(|_| !p.server_connected);
        let deadline = [p.proxy.next_timeout(), connect_at].into_iter().flatten().min();
        if let Some(d) = m.sender_timer.needs_schedule(deadline.map(|d| d.max(now))) {
            self.queue.schedule(d, Event::SenderTimer { flow });
        }
    }

    /// Send what the server behind a proxy wants to send, arm its timer.
    fn poll_server(&mut self, flow: u32) {
        let now = self.now_ns;
        while let Some(seg) = self.proxy_mut(flow).server.poll_transmit(now) {
            self.send_upstream(flow, true, seg);
        }
        let p = self.proxy_mut(flow);
        let deadline = p.server.next_timeout().map(|d| d.max(now));
        if let Some(d) = p.server_timer.needs_schedule(deadline) {
            self.queue.schedule(d, Event::ServerTimer { flow });
        }
    }

    /// Put a segment of the server↔proxy TCP connection on its route.
    fn send_upstream(&mut self, flow: u32, forward: bool, seg: latlab_proto::Segment) {
        let p = self.proxy_mut(flow);
        let route_pos = if forward { p.up_fwd_route } else { p.up_rev_route };
        self.send_at(
            flow,
            forward,
            Payload::Tcp(seg),
            seg.payload_bytes,
            route_pos,
            UPSTREAM_SUBFLOW,
        );
    }

    fn poll_mptcp_receiver(&mut self, flow: u32) {
        let now = self.now_ns;
        while let Some((i, seg)) = self.mptcp_mut(flow).receiver.poll_transmit(now) {
            self.send_mptcp(flow, false, i, seg);
        }
        let m = self.mptcp_mut(flow);
        let deadline = m.receiver.next_timeout().map(|d| d.max(now));
        if let Some(d) = m.receiver_timer.needs_schedule(deadline) {
            self.queue.schedule(d, Event::ReceiverTimer { flow });
        }
    }

    /// Put an MPTCP segment of subflow `i` onto the first link of its path.
    // Always inlined into the poll loops, as `send` is into TCP's: with
    // three callers the compiler would keep it apart, and the call with its
    // copy of the segment costs as much as the send itself.
    #[inline(always)]
    fn send_mptcp(&mut self, flow: u32, forward: bool, i: usize, seg: latlab_proto::Segment) {
        let (fwd_route, rev_route) = self.mptcp_mut(flow).subflow_routes[i];
        let route_pos = if forward { fwd_route } else { rev_route };
        self.send_at(
            flow,
            forward,
            Payload::Tcp(seg),
            seg.payload_bytes,
            route_pos,
            i as u8,
        );
    }

    fn tfrc_mut(&mut self, flow: u32) -> &mut TfrcFlow {
        match &mut self.flows[flow as usize].transport {
            Transport::Tfrc(t) => t,
            _ => unreachable!("TFRC event for a non-TFRC flow"),
        }
    }

    /// Send the data packets the TFRC sender's pacer allows now, then arm
    /// its timer (the next pacing slot or the no-feedback timer).
    fn poll_tfrc_sender(&mut self, flow: u32) {
        let now = self.now_ns;
        while let Some(d) = self.tfrc_mut(flow).sender.poll_transmit(now) {
            self.send_sized(flow, true, Payload::TfrcData(d), d.payload_bytes);
        }
        let t = self.tfrc_mut(flow);
        let deadline = t.sender.next_timeout().map(|d| d.max(now));
        if let Some(d) = t.sender_timer.needs_schedule(deadline) {
            self.queue.schedule(d, Event::SenderTimer { flow });
        }
    }

    /// Send the TFRC receiver's due feedback, then arm its feedback timer.
    /// The receiver runs on its own (offset) clock; its deadlines are
    /// converted back to simulation time.
    fn poll_tfrc_receiver(&mut self, flow: u32) {
        let now = self.now_ns;
        loop {
            let t = self.tfrc_mut(flow);
            let Some(fb) = t.receiver.poll_feedback(now + t.receiver_clock_offset_ns) else {
                break;
            };
            // Feedback carries no payload: its fields fit in the header
            // bytes every TFRC packet has (see build.rs).
            self.send_sized(flow, false, Payload::TfrcFeedback(fb), 0);
        }
        let t = self.tfrc_mut(flow);
        let offset = t.receiver_clock_offset_ns;
        let deadline = t
            .receiver
            .next_timeout()
            .map(|d| d.saturating_sub(offset).max(now));
        if let Some(d) = t.receiver_timer.needs_schedule(deadline) {
            self.queue.schedule(d, Event::ReceiverTimer { flow });
        }
    }

    /// Send everything the sender wants to send now, then re-arm its timer.
    fn poll_sender(&mut self, flow: u32) {
        let now = self.now_ns;
        while let Some(seg) = self.tcp_mut(flow).sender.poll_transmit(now) {
            self.send(flow, true, Payload::Tcp(seg));
        }
        let t = self.tcp_mut(flow);
        let deadline = t.sender.next_timeout().map(|d| d.max(now));
        let schedule = t.sender_timer.needs_schedule(deadline);
        let user_done = t.closed_loop.is_some() && t.sender.is_complete();
        if let Some(d) = schedule {
            self.queue.schedule(d, Event::SenderTimer { flow });
        }
        if user_done {
            self.finish_transfer(flow);
        }
    }

    fn poll_receiver(&mut self, flow: u32) {
        let now = self.now_ns;
        while let Some(seg) = self.tcp_mut(flow).receiver.poll_transmit(now) {
            self.send(flow, false, Payload::Tcp(seg));
        }
        let t = self.tcp_mut(flow);
        let deadline = t.receiver.next_timeout().map(|d| d.max(now));
        if let Some(d) = t.receiver_timer.needs_schedule(deadline) {
            self.queue.schedule(d, Event::ReceiverTimer { flow });
        }
    }

    /// Emit the UDP packets due now and arm the source's timer.
    fn poll_udp(&mut self, flow: u32) {
        let now = self.now_ns;
        loop {
            let Transport::Udp(u) = &mut self.flows[flow as usize].transport else {
                return;
            };
            let Some(size) = u.source.poll(now) else { break };
            let seq = u.source.seq;
            self.send_sized(flow, true, Payload::Udp { seq, sent_ns: now }, size);
        }
        let Transport::Udp(u) = &mut self.flows[flow as usize].transport else {
            return;
        };
        let next = u.source.next_ns().map(|d| d.max(now));
        if let Some(d) = u.timer.needs_schedule(next) {
            self.queue.schedule(d, Event::SenderTimer { flow });
        }
    }

    /// A closed-loop user's file is fully acknowledged: record it, think.
    fn finish_transfer(&mut self, flow: u32) {
        let now = self.now_ns;
        let t = self.tcp_mut(flow);
        let (delivered, sender) = (t.receiver.stats().bytes_delivered, t.sender.stats());
        let completed = t.sender.completed_at_ns().unwrap_or(now);
        let Some(cl) = t.closed_loop.as_mut() else { return };
        cl.transfers.push(Transfer {
            start_ns: cl.current_start_ns,
            size_bytes: cl.current_size_bytes,
            fct_ns: completed.saturating_sub(cl.current_start_ns),
        });
        cl.past_bytes_delivered += delivered;
        cl.past_sender.accumulate(&sender);
        let think = cl.draws.think_ns();
        // A new connection replaces the old one; its late packets are
        // discarded by generation, its stale timers by their slots.
        let cfg = cl.cfg.clone();
        let cc = cl.cc.build(cfg.mss_bytes as u64);
        let rwnd = cl.rwnd.build(&cfg);
        let f = &mut self.flows[flow as usize];
        f.conn = f.conn.wrapping_add(1);
        let Transport::Tcp(t) = &mut f.transport else {
            return;
        };
        // While the user thinks, an unconnected sender holds the place: it
        // sends nothing, and the finished connection's counters (now in the
        // `past_*` totals) are not counted twice.
        t.sender = TcpSender::new(cfg.clone(), cc, Some(1));
        t.receiver = TcpReceiver::new(cfg.clone(), rwnd);
        t.sender_timer = TimerSlot::default();
        t.receiver_timer = TimerSlot::default();
        self.queue.schedule(now + think, Event::UserNext { flow });
    }

    /// A closed-loop user opens the connection for its next file.
    fn next_transfer(&mut self, flow: u32) {
        let now = self.now_ns;
        let t = self.tcp_mut(flow);
        let Some(cl) = t.closed_loop.as_mut() else { return };
        let size = cl.draws.file_bytes();
        cl.current_start_ns = now;
        cl.current_size_bytes = size;
        let cfg = cl.cfg.clone();
        let cc = cl.cc.build(cfg.mss_bytes as u64);
        let t = self.tcp_mut(flow);
        t.sender = TcpSender::new(cfg, cc, Some(size));
        t.sender.connect(now);
        self.poll_sender(flow);
    }

    /// Put a TCP segment from an endpoint onto the first link of its path.
    // Always inlined, as `send_at` (see there).
    #[inline(always)]
    fn send(&mut self, flow: u32, forward: bool, payload: Payload) {
        let Payload::Tcp(seg) = payload else { return };
        self.send_sized(flow, forward, payload, seg.payload_bytes);
    }

    /// Put a packet with `payload_bytes` of payload onto its first link.
    #[inline(always)]
    fn send_sized(&mut self, flow: u32, forward: bool, payload: Payload, payload_bytes: u32) {
        let f = &self.flows[flow as usize];
        let route_pos = if forward { f.fwd_route } else { f.rev_route };
        self.send_at(flow, forward, payload, payload_bytes, route_pos, 0);
    }

    /// Put a packet onto the first link of the route at `route_pos`.
    // Always inlined: every endpoint's send loop runs it once per packet,
    // and whether the compiler inlines it otherwise depends on how many
    // callers it has.
    #[inline(always)]
    fn send_at(
        &mut self,
        flow: u32,
        forward: bool,
        payload: Payload,
        payload_bytes: u32,
        route_pos: u32,
        subflow: u8,
    ) {
        let f = &self.flows[flow as usize];
        let first = self.routes.link_at(route_pos);
        let wire_bytes = f.header_bytes + payload_bytes;
        let r = self.packets.insert(
            Packet {
                payload,
                conn: f.conn,
                flow,
                forward,
                subflow,
                wire_bytes,
            },
            route_pos,
        );
        self.link_enqueue(first, r);
    }

    /// Packet `pkt`, the head of a link's wire, reaches the link's far end.
    fn on_arrive(&mut self, pkt: u32, hop: Hop) {
        let popped = self.wires.pop(pkt);
        if let Some((t, pkt, hop)) = popped.following {
            self.queue.schedule(t, Event::Arrive { pkt, hop });
        }
        let mut r = popped.pkt;
        r.route_pos += 1;
        let flow = match hop {
            Hop::Link(next) => {
                self.link_enqueue(next, r);
                return;
            }
            Hop::Deliver { flow } => flow,
        };
        let f = &mut self.flows[flow as usize];
        let p = self.packets.remove(r);
        let forward = p.forward;
        let now = self.now_ns;
        if p.conn != f.conn {
            return; // a late packet of a closed-loop user's earlier connection
        }
        match (&mut f.transport, p.payload) {
            (Transport::Tcp(t), Payload::Tcp(seg)) => {
                if forward {
                    t.receiver.on_segment(now, &seg);
                    self.poll_receiver(flow);
                } else {
                    t.sender.on_segment(now, &seg);
                    self.poll_sender(flow);
                }
            }
            // Each machine is polled after it is fed: data can only make
            // the receiver report, feedback can only change the sender's
            // rate (and so its next pacing slot).
            (Transport::Tfrc(t), Payload::TfrcData(d)) => {
                t.receiver.on_data(now + t.receiver_clock_offset_ns, &d);
                self.poll_tfrc_receiver(flow);
            }
            (Transport::Tfrc(t), Payload::TfrcFeedback(fb)) => {
                t.sender.on_feedback(now, &fb);
                self.poll_tfrc_sender(flow);
            }
            (Transport::Mptcp(m), Payload::Tcp(seg)) => {
                let i = p.subflow as usize;
                match (&mut m.end, forward) {
                    (MptcpEnd::Proxy(px), true) if p.subflow == UPSTREAM_SUBFLOW => {
                        px.proxy.on_upstream_segment(now, &seg);
                        self.poll_proxy(flow);
                    }
                    (MptcpEnd::Proxy(px), false) if p.subflow == UPSTREAM_SUBFLOW => {
                        px.server.on_segment(now, &seg);
                        self.poll_server(flow);
                    }
                    (end, true) => {
                        m.receiver.on_segment(now, i, &seg);
                        // Through a proxy, a finite transfer ends when the
                        // client has every byte.
                        if let (MptcpEnd::Proxy(_), Some(size), None) = (end, f.size_bytes, m.completed_at_ns)
                        {
                            if m.receiver.bytes_delivered() >= size {
                                m.completed_at_ns = Some(now);
                            }
                        }
                        self.poll_mptcp_receiver(flow);
                    }
                    (MptcpEnd::Direct(sender), false) => {
                        sender.on_segment(now, i, &seg);
                        self.poll_mptcp_sender(flow);
                    }
                    (MptcpEnd::Proxy(px), false) => {
                        px.proxy.on_subflow_segment(now, i, &seg);
                        self.poll_proxy(flow);
                    }
                }
            }
            (Transport::Udp(u), Payload::Udp { sent_ns, .. }) => {
                let owd = now.saturating_sub(sent_ns);
                u.received_pkts += 1;
                u.received_bytes += (p.wire_bytes - f.header_bytes) as u64;
                u.owd_sum_ns += owd;
                u.owd_max_ns = u.owd_max_ns.max(owd);
            }
            _ => {}
        }
    }

    fn finish(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        let end = self.now_ns;
        for l in &mut self.links {
            if let Some(b) = l.offered_bytes_until(&mut self.media, end) {
                l.access.offered_bytes = b;
            }
        }
        for l in &mut self.links {
            if let Some(w) = l.pcap.take() {
                if let Err(e) = w.finish() {
                    self.pcap_error
                        .get_or_insert_with(|| format!("pcap for link {}: {e}", l.name));
                }
            }
        }
    }

    /// Per-link packet conservation (valid at any time, reported at the end).
    pub fn conservation(&self) -> Vec<Conservation> {
        self.links
            .iter()
            .map(|l| {
                let v = queue_view(l, &self.media);
                let q = v.stats;
                let c = &l.counters;
                let queued = v.len_pkts + v.in_service_pkts;
                let drops = q.drops_pkts();
                let ok = c.arrivals_pkts == c.departures_pkts + drops + c.lost_pkts + queued
                    && q.arrivals_pkts == q.departures_pkts + drops + v.len_pkts;
                Conservation {
                    link: l.name.clone(),
                    arrivals: c.arrivals_pkts,
                    departures: c.departures_pkts,
                    drops,
                    lost: c.lost_pkts,
                    queued,
                    ok,
                }
            })
            .collect()
    }

    /// Packets propagating on `link`'s wire.
    pub fn on_wire_pkts(&self, link: u32) -> u64 {
        self.wires.len(link) as u64
    }

    /// Every live packet is held by some link (queued, serialising or on a wire).
    pub fn packets_accounted(&self) -> bool {
        let held: u64 = self
            .links
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let v = queue_view(l, &self.media);
                v.len_pkts + v.in_service_pkts + self.wires.len(i as u32) as u64
            })
            .sum();
        held == self.packets.live() as u64
    }

    pub fn conservation_ok(&self) -> bool {
        self.packets_accounted() && self.conservation().iter().all(|c| c.ok)
    }

    /// Pending agenda entries (diagnostics).
    pub fn pending_events(&self) -> usize {
        self.queue.len()
    }
}
