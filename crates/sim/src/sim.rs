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
use crate::flow::{Flow, Transport};
use crate::measure::{AccessDelay, LatencyHistogram, Samples};
use crate::network::{queue_view, Link, Node, Service, SharedMedium};
use crate::packet::{Packet, PacketRef, PacketSlab, Payload};
use crate::routing::RouteTable;
use crate::wire::{Hop, Wires};
use latlab_link::{Departure, RouteEcn};
use latlab_qdisc::Ecn;

mod flow_events;
mod links;
mod mptcp;
mod sampling;
mod tcp;
mod tfrc;
mod udp;
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
    /// Per flow: its RTT (TCP, MPTCP) or one-way delay (UDP, TFRC/DFlow)
    /// samples in the measurement window; filled for sampled flows only.
    pub latency: Vec<LatencyHistogram>,
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
        let latency = vec![LatencyHistogram::default(); flows.len()];
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
            latency,
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
            Event::FlowStart { flow } => self.on_flow_start(flow),
            Event::SenderTimer { flow } => self.on_sender_timer(flow),
            Event::ReceiverTimer { flow } => self.on_receiver_timer(flow),
            Event::ServerTimer { flow } => self.on_server_timer(flow),
            Event::UserNext { flow } => self.next_transfer(flow),
            Event::Sample => self.on_sample(),
            Event::MeasureStart => self.on_measure_start(),
        }
    }

    /// Put a packet with `payload_bytes` of payload onto its first link.
    #[inline(always)]
    fn send_sized(&mut self, flow: u32, forward: bool, payload: Payload, payload_bytes: u32, ecn: Ecn) {
        let f = &self.flows[flow as usize];
        let route_pos = if forward { f.fwd_route } else { f.rev_route };
        self.send_at(
            flow,
            forward,
            payload,
            payload_bytes,
            RouteEcn::new(route_pos, ecn),
            0,
        );
    }

    /// Put a packet onto the first link of its route at `route.pos()`, its
    /// IP ECN field `route.ecn()`.
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
        route: RouteEcn,
        subflow: u8,
    ) {
        let f = &self.flows[flow as usize];
        let first = self.routes.link_at(route.pos());
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
            route,
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
        r.route = r.route.advance();
        match hop {
            Hop::Link(next) => self.link_enqueue(next, r),
            Hop::Deliver { flow } => self.deliver(flow, r),
        }
    }

    /// Hand packet `r`, at the end of its route, to its flow's endpoint.
    fn deliver(&mut self, flow: u32, r: PacketRef) {
        let f = &self.flows[flow as usize];
        let p = self.packets.remove(r);
        let forward = p.forward;
        if p.conn != f.conn {
            return; // a late packet of a closed-loop user's earlier connection
        }
        // Latency samples: sampled flows, inside the measurement window.
        let measured = f.sampled && self.now_ns >= self.measure_from_ns;
        match (&f.transport, p.payload) {
            (Transport::Tcp(_), Payload::Tcp(seg)) => {
                self.deliver_tcp(flow, forward, &seg, r.route.ecn(), measured)
            }
            (Transport::Tfrc(_), Payload::TfrcData(d)) => self.deliver_tfrc_data(flow, &d, measured),
            (Transport::Tfrc(_), Payload::TfrcFeedback(fb)) => self.deliver_tfrc_feedback(flow, &fb),
            (Transport::Mptcp(_), Payload::Tcp(seg)) => {
                self.deliver_mptcp(flow, p.subflow, forward, &seg, measured)
            }
            (Transport::Udp(_), Payload::Udp { sent_ns, .. }) => {
                let payload_bytes = p.wire_bytes - f.header_bytes;
                self.deliver_udp(flow, sent_ns, payload_bytes, measured)
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
