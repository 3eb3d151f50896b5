//! The simulator's driver of the link service (latlab-link): it moves
//! packets from the service onto the links' wires and turns the deadlines
//! the service arms into agenda events (`TxDone`, `LinkWake`,
//! `MediumWake`). The service rule itself (loss, queue, transmitter) is
//! not here: it is `latlab_link::LinkService`, which the emulator drives too.

use super::Simulation;
use crate::engine::{Event, EventQueue};
use crate::flow::{Flow, UPSTREAM_SUBFLOW};
use crate::measure::AccessDelay;
use crate::network::{Link, SharedMedium};
use crate::packet::{PacketRef, PacketSlab, Payload};
use crate::pcap::PcapWriter;
use crate::routing::RouteTable;
use crate::wire::{Hop, Wires};
use latlab_link::{DropCause, LinkDeparture, LinkEvents};

/// A per-packet record of one link: what arrived, left and was dropped,
/// with the times the simulator gave them. Opt-in ([`Simulation::trace_link`]),
/// like a pcap capture; the differential test of the link service
/// compares it with the emulator's driver.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LinkTrace {
    /// In the order they happened (a packet handle's slab index is reused
    /// only after the packet is gone, so it names one packet from its
    /// arrival to its departure or drop).
    pub events: Vec<TraceEvent>,
}

/// One entry of a [`LinkTrace`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceEvent {
    /// At the link's input, before random loss.
    Arrival {
        at_ns: u64,
        pkt: PacketRef,
    },
    Departure(LinkDeparture<PacketRef>),
    Drop {
        pkt: PacketRef,
        cause: DropCause,
    },
}

/// Where a link's departures, drops and deadlines go in the simulator.
/// Borrows only the parts of the simulation a link touches, beside the
/// link itself.
pub(super) struct LinkCx<'a> {
    link: u32,
    queue: &'a mut EventQueue,
    wires: &'a mut Wires,
    routes: &'a RouteTable,
    packets: &'a mut PacketSlab,
    // Thin references (`&mut Vec`, not slices) and the records only while
    // some link captures: this context is built on every link event, and
    // each word of it is a store on the hot path.
    media: &'a mut Vec<SharedMedium>,
    scratch: &'a mut Vec<PacketRef>,
    access_delay: &'a mut Vec<AccessDelay>,
    /// Some link captures or traces (`Simulation::capturing`): this one's
    /// records, to look at.
    record: Option<Record<'a>>,
}

/// A link's opt-in records (pcap, trace).
struct Record<'a> {
    pcap: &'a mut Option<Box<PcapWriter>>,
    trace: &'a mut Option<Box<LinkTrace>>,
    /// A reference to the link's name, not the name itself: making a
    /// `&str` would read the `String` (a line no hop otherwise touches)
    /// on every link event; the name is read only to report an error.
    name: &'a String,
    flows: &'a Vec<Flow>,
    pcap_error: &'a mut Option<String>,
}

/// Split `$sim` into link `$link`'s service and the [`LinkCx`] beside it.
macro_rules! link_cx {
    ($sim:ident, $link:expr) => {{
        let link = $link;
        let Link {
            svc,
            pcap,
            trace,
            name,
            ..
        } = &mut $sim.links[link as usize];
        let cx = LinkCx {
            link,
            queue: &mut $sim.queue,
            wires: &mut $sim.wires,
            routes: &$sim.routes,
            packets: &mut $sim.packets,
            media: &mut $sim.media,
            scratch: &mut $sim.drop_scratch,
            access_delay: &mut $sim.access_delay,
            record: if $sim.capturing {
                Some(Record {
                    pcap,
                    trace,
                    name,
                    flows: &$sim.flows,
                    pcap_error: &mut $sim.pcap_error,
                })
            } else {
                None
            },
        };
        (svc, cx)
    }};
}

impl LinkEvents<PacketRef> for LinkCx<'_> {
    /// The packet goes on the link's wire (one `Arrive` event pending for
    /// the wire's head only).
    #[inline(always)]
    fn depart(&mut self, d: LinkDeparture<PacketRef>) {
        let hop = Hop::after(self.routes, d.pkt);
        if self.wires.push(self.link, d.pkt, d.arrive_ns, hop) {
            self.queue
                .schedule(d.arrive_ns, Event::Arrive { pkt: d.pkt.idx, hop });
        }
        if let Some(record) = self.record.as_mut() {
            record.departure(self.packets, d);
        }
        if d.access {
            let p = self.packets.get(d.pkt);
            if p.forward {
                // Time at this hop: from entering the queue to reaching the receiver's radio.
                let delay = d.deliver_ns.saturating_sub(d.enqueued_ns);
                let a = &mut self.access_delay[p.flow as usize];
                a.sum_ns += delay;
                a.count += 1;
                a.max_ns = a.max_ns.max(delay);
            }
        }
    }

    #[inline]
    fn drop_pkt(&mut self, pkt: PacketRef, cause: DropCause) {
        if let Some(record) = self.record.as_mut() {
            if let Some(t) = record.trace.as_mut() {
                t.events.push(TraceEvent::Drop { pkt, cause });
            }
        }
        self.packets.free(pkt);
    }

    #[inline]
    fn arm_tx(&mut self, at_ns: u64) {
        self.queue.schedule(at_ns, Event::TxDone { link: self.link });
    }

    fn arm_wake(&mut self, at_ns: u64) {
        self.queue.schedule(at_ns, Event::LinkWake { link: self.link });
    }

    fn to_medium(&mut self, now_ns: u64, medium: u32, member: u32, pkt: PacketRef) {
        match self.media[medium as usize].medium.arrive(now_ns, member, pkt) {
            Err(p) => self.drop_pkt(p, DropCause::Queue),
            Ok(Some(t)) => self.queue.schedule(t, Event::MediumWake { medium }),
            Ok(None) => {}
        }
    }

    #[inline]
    fn scratch(&mut self) -> &mut Vec<PacketRef> {
        self.scratch
    }
}

impl Record<'_> {
    /// A departure of a link that some capture may be watching.
    #[cold]
    fn departure(&mut self, packets: &PacketSlab, d: LinkDeparture<PacketRef>) {
        if let Some(t) = self.trace.as_mut() {
            t.events.push(TraceEvent::Departure(d));
        }
        if self.pcap.is_some() {
            self.capture(packets, d.pkt, d.leave_ns);
        }
    }

    /// Write a packet to the link's pcap, stamped with the end of its serialisation.
    fn capture(&mut self, packets: &PacketSlab, r: PacketRef, time_ns: u64) {
        let p = *packets.get(r);
        let Payload::Tcp(seg) = p.payload else { return };
        let f = &self.flows[p.flow as usize];
        // A proxied connection's legs: server↔proxy and proxy↔client.
        let (near, far) = match f.mptcp().and_then(|m| m.proxy()) {
            Some(px) if p.subflow == UPSTREAM_SUBFLOW => (f.src, px.node),
            Some(px) => (px.node, f.dst),
            None => (f.src, f.dst),
        };
        let (src, dst) = if p.forward { (near, far) } else { (far, near) };
        if let Some(w) = self.pcap.as_mut() {
            let res = w.write_tcp_subflow(
                time_ns,
                src,
                dst,
                p.flow,
                p.subflow,
                p.forward,
                &seg,
                p.wire_bytes,
                r.route.ecn(),
            );
            if let Err(e) = res {
                self.pcap_error
                    .get_or_insert_with(|| format!("pcap for link {}: {e}", self.name));
                *self.pcap = None;
            }
        }
    }
}

impl Simulation {
    /// Record every packet of `link` in its [`LinkTrace`] from now on.
    pub fn trace_link(&mut self, link: u32) {
        self.links[link as usize]
            .trace
            .get_or_insert_with(Default::default);
        self.capturing = true;
    }

    /// A packet arrives at a link's input.
    #[inline]
    pub(super) fn link_enqueue(&mut self, link: u32, r: PacketRef) {
        let now = self.now_ns;
        let (svc, mut cx) = link_cx!(self, link);
        if let Some(record) = cx.record.as_mut() {
            if let Some(t) = record.trace.as_mut() {
                t.events.push(TraceEvent::Arrival { at_ns: now, pkt: r });
            }
        }
        svc.arrive(now, r, &mut cx);
    }

    /// A `TxDone`: the link's transmitter is free.
    #[inline]
    pub(super) fn on_tx_done(&mut self, link: u32) {
        let now = self.now_ns;
        let (svc, mut cx) = link_cx!(self, link);
        svc.on_tx_done(now, &mut cx);
    }

    /// A `LinkWake`: a pacer's hold time is up.
    pub(super) fn on_link_wake(&mut self, link: u32) {
        let now = self.now_ns;
        let (svc, mut cx) = link_cx!(self, link);
        svc.on_wake(now, &mut cx);
    }

    /// A `MediumWake`: run a cell's TTI or let a free AP send its head
    /// frame; each departure leaves by its member's link.
    pub(super) fn on_medium_wake(&mut self, medium: u32) {
        let now = self.now_ns;
        let mut out = std::mem::take(&mut self.departures_scratch);
        let mut dropped = std::mem::take(&mut self.medium_drop_scratch);
        if self.media[medium as usize]
            .medium
            .run(now, &mut out, &mut dropped)
        {
            for (member, p) in dropped.drain(..) {
                let link = self.media[medium as usize].links[member as usize];
                let (_, mut cx) = link_cx!(self, link);
                cx.drop_pkt(p, DropCause::Queue);
            }
            for d in out.drain(..) {
                let link = self.media[medium as usize].links[d.dest as usize];
                let (svc, mut cx) = link_cx!(self, link);
                svc.medium_departure(d, &mut cx);
            }
            if let Some(t) = self.media[medium as usize].medium.arm(now) {
                self.queue.schedule(t, Event::MediumWake { medium });
            }
        }
        self.departures_scratch = out;
        self.medium_drop_scratch = dropped;
    }
}
