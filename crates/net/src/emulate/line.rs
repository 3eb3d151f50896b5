//! One direction of an emulated path: a chain of hops, each a link of
//! the scenario served by latlab-link's [`LinkService`] (random loss, queue
//! discipline, transmitter, propagation delay), the same service the
//! simulator drives. This file is only the driver: it holds each hop's
//! wire, chains the hops, and runs the deadlines the services armed in
//! time order.
//!
//! Sans-IO: the line never reads a clock. The caller hands it packets with
//! the time they arrived ([`Line::arrive`]) and asks it to run every
//! internal event due by a time ([`Line::advance`]); the line answers with
//! [`Outcome`]s: which packets left a hop, which were dropped and which are
//! due at the far end, with the time each was *scheduled* for. Internal
//! events are processed at their scheduled times, not at the (later) time
//! the caller got round to them, so a late wake-up delays a packet's
//! write but never the transmissions after it: the link keeps its rate.
//!
//! Times are ns since the emulator started (a trace's time 0).

use std::collections::VecDeque;

pub use latlab_link::DropCause;
use latlab_link::PacketRef;
use latlab_link::{member_queue_view, QueueView};
use latlab_link::{
    Departure, LinkDeparture, LinkEvents, LinkQueue, LinkRate, LinkService, Medium, MediumKind, Service,
    Transmitter,
};
use rand_pcg::Pcg64Mcg;

/// How a hop serves its queue (what [`Hop::new`] is built from).
pub enum HopService {
    Fixed(LinkRate),
    Varying(Box<Transmitter>),
    /// A user's downlink of an LTE cell or a station's of a Wi-Fi AP: the
    /// medium holds the queue and decides when packets leave (HARQ,
    /// retries); the hop's own queue stays empty. Only this member's
    /// packets enter it (the emulated path has one client).
    Shared {
        medium: Box<MediumKind<PacketRef>>,
        member: u32,
    },
}

/// One link of the path.
pub struct Hop {
    /// The link's index in the scenario (the simulator's `link_id`).
    pub link_id: u32,
    /// "from->to", as the simulator names it.
    pub name: String,
    /// The link's service (loss, queue, transmitter, delay, counters).
    pub svc: LinkService<PacketRef>,
    /// A `Shared` hop's medium.
    medium: Option<Box<Medium<PacketRef>>>,
    /// Mean bit rate offered (fixed rate, trace or channel mean).
    nominal_bps: u64,
    /// Packets propagating, with the time they reach the far end.
    wire: VecDeque<(u64, PacketRef)>,
}

/// The service's fields read as the hop's own (`hop.counters`, `hop.delay_ns`).
impl std::ops::Deref for Hop {
    type Target = LinkService<PacketRef>;
    fn deref(&self) -> &LinkService<PacketRef> {
        &self.svc
    }
}

impl std::ops::DerefMut for Hop {
    fn deref_mut(&mut self) -> &mut LinkService<PacketRef> {
        &mut self.svc
    }
}

impl Hop {
    pub fn new(
        link_id: u32,
        name: String,
        service: HopService,
        delay_ns: u64,
        qdisc: LinkQueue<PacketRef>,
        loss_prob: f64,
        loss_rng: Pcg64Mcg,
    ) -> Self {
        let (rate, service, medium) = match service {
            HopService::Fixed(rate) => (rate, Service::Fixed, None),
            HopService::Varying(tx) => {
                let rate_bps = tx.nominal_bps();
                (LinkRate::Fixed { rate_bps }, Service::Varying(tx), None)
            }
            HopService::Shared { mut medium, member } => {
                let rate_bps = match medium.as_mut() {
                    MediumKind::Cell(c) => c.channel_mut(member).nominal_bps(),
                    MediumKind::Ap(ap) => ap.station_tx_mut(member).nominal_bps(),
                };
                let medium = Box::new(Medium::new(*medium));
                let service = Service::Shared { medium: 0, member };
                (LinkRate::Fixed { rate_bps }, service, Some(medium))
            }
        };
        Hop {
            link_id,
            name,
            nominal_bps: rate.nominal_bps(),
            svc: LinkService::new(rate, service, delay_ns, qdisc, loss_prob, loss_rng),
            medium,
            wire: VecDeque::new(),
        }
    }

    /// Packets propagating on this hop.
    pub fn on_wire_pkts(&self) -> usize {
        self.wire.len()
    }

    /// Mean bit rate this hop offers (fixed rate, trace or channel mean).
    pub fn nominal_bps(&self) -> u64 {
        self.nominal_bps
    }

    /// "fixed", "trace", "constant", "schedule", "markov", "per-interval",
    /// "lte" or "wifi".
    pub fn kind(&self) -> &'static str {
        match (&self.svc.service, self.medium.as_deref()) {
            (Service::Varying(tx), _) => tx.kind(),
            (_, Some(m)) => match m.kind {
                MediumKind::Cell(_) => "lte",
                MediumKind::Ap(_) => "wifi",
            },
            _ => "fixed",
        }
    }

    /// The hop's queue, as the simulator's tables see a link's.
    pub fn queue_view(&self) -> QueueView {
        match (&self.svc.service, self.medium.as_deref()) {
            (Service::Shared { member, .. }, Some(m)) => member_queue_view(&m.kind, *member),
            _ => QueueView::of(self.svc.qdisc.as_dyn(), 0),
        }
    }

    fn next_event_ns(&self) -> Option<u64> {
        let wire = self.wire.front().map(|&(t, _)| t);
        let medium = self.medium.as_ref().and_then(|m| m.wake_at);
        [self.svc.next_deadline_ns(), medium, wire]
            .into_iter()
            .flatten()
            .min()
    }
}

/// What happened inside the line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The packet's last byte left hop `hop`'s transmitter at `leave_ns`
    /// after `sojourn_ns` in its queue.
    Left {
        hop: usize,
        pkt: PacketRef,
        leave_ns: u64,
        sojourn_ns: u64,
    },
    Dropped {
        hop: usize,
        pkt: PacketRef,
        cause: DropCause,
    },
    /// The packet reaches the far end: write it out at `due_ns`.
    Delivered { pkt: PacketRef, due_ns: u64 },
}

/// Where one hop's departures, drops and medium arrivals go. Deadlines are
/// not pushed anywhere: the line reads them back ([`Hop::next_event_ns`]).
struct HopCx<'a> {
    hop: usize,
    wire: &'a mut VecDeque<(u64, PacketRef)>,
    medium: Option<&'a mut Medium<PacketRef>>,
    out: &'a mut Vec<Outcome>,
    scratch: &'a mut Vec<PacketRef>,
}

impl LinkEvents<PacketRef> for HopCx<'_> {
    fn depart(&mut self, d: LinkDeparture<PacketRef>) {
        // FIFO, and a cell delivers each user's packets in order: the wire stays sorted.
        self.wire.push_back((d.arrive_ns, d.pkt));
        self.out.push(Outcome::Left {
            hop: self.hop,
            pkt: d.pkt,
            leave_ns: d.leave_ns,
            sojourn_ns: d.sojourn_ns,
        });
    }

    fn drop_pkt(&mut self, pkt: PacketRef, cause: DropCause) {
        self.out.push(Outcome::Dropped {
            hop: self.hop,
            pkt,
            cause,
        });
    }

    fn arm_tx(&mut self, _at_ns: u64) {}

    fn arm_wake(&mut self, _at_ns: u64) {}

    fn to_medium(&mut self, now_ns: u64, _medium: u32, member: u32, pkt: PacketRef) {
        let Some(m) = self.medium.as_deref_mut() else {
            return self.drop_pkt(pkt, DropCause::Lost);
        };
        if let Err(p) = m.arrive(now_ns, member, pkt) {
            self.drop_pkt(p, DropCause::Queue);
        }
    }

    fn scratch(&mut self) -> &mut Vec<PacketRef> {
        self.scratch
    }
}

/// Split hop `h` of `line` into its service and the [`HopCx`] beside it.
macro_rules! hop_cx {
    ($line:ident, $h:expr, $out:expr) => {{
        let hop = $h;
        let Hop {
            svc, medium, wire, ..
        } = &mut $line.hops[hop];
        let cx = HopCx {
            hop,
            wire,
            medium: medium.as_deref_mut(),
            out: $out,
            scratch: &mut $line.scratch,
        };
        (svc, cx)
    }};
}

/// A direction of the path: hops in order.
pub struct Line {
    pub hops: Vec<Hop>,
    scratch: Vec<PacketRef>,
    departures_scratch: Vec<Departure<PacketRef>>,
    medium_drop_scratch: Vec<(u32, PacketRef)>,
}

impl Line {
    pub fn new(hops: Vec<Hop>) -> Self {
        Line {
            hops,
            scratch: Vec::new(),
            departures_scratch: Vec::new(),
            medium_drop_scratch: Vec::new(),
        }
    }

    /// A packet enters the first hop at `now_ns` (≥ every time the line
    /// was advanced to).
    pub fn arrive(&mut self, now_ns: u64, pkt: PacketRef, out: &mut Vec<Outcome>) {
        let (svc, mut cx) = hop_cx!(self, 0, out);
        svc.arrive(now_ns, pkt, &mut cx);
    }

    /// The earliest internal event, if any.
    pub fn next_due_ns(&self) -> Option<u64> {
        self.hops.iter().filter_map(Hop::next_event_ns).min()
    }

    /// Run every internal event due at or before `now_ns`, in time order
    /// (ties: the earlier hop first; within a hop, the wire's head, then
    /// the transmitter, then a pacer's or medium's wake-up).
    pub fn advance(&mut self, now_ns: u64, out: &mut Vec<Outcome>) {
        loop {
            let Some((h, t)) = self
                .hops
                .iter()
                .enumerate()
                .filter_map(|(i, hop)| hop.next_event_ns().map(|t| (i, t)))
                .min_by_key(|&(i, t)| (t, i))
            else {
                return;
            };
            if t > now_ns {
                return;
            }
            let hop = &mut self.hops[h];
            if hop.wire.front().is_some_and(|&(a, _)| a == t) {
                let (_, pkt) = hop.wire.pop_front().expect("front checked");
                if h + 1 == self.hops.len() {
                    out.push(Outcome::Delivered { pkt, due_ns: t });
                } else {
                    let (svc, mut cx) = hop_cx!(self, h + 1, out);
                    svc.arrive(t, pkt, &mut cx);
                }
            } else if hop.svc.tx_scheduled && hop.svc.busy_until_ns == t {
                let (svc, mut cx) = hop_cx!(self, h, out);
                svc.on_tx_done(t, &mut cx);
            } else if hop.svc.wake_at == Some(t) {
                let (svc, mut cx) = hop_cx!(self, h, out);
                svc.on_wake(t, &mut cx);
            } else {
                self.run_medium(h, t, out);
            }
        }
    }

    /// The medium's deadline: run a cell's TTI or let a free AP send its
    /// head frame, as the simulator's `MediumWake`.
    fn run_medium(&mut self, h: usize, now: u64, out: &mut Vec<Outcome>) {
        let (mut deps, mut dropped) = (
            std::mem::take(&mut self.departures_scratch),
            std::mem::take(&mut self.medium_drop_scratch),
        );
        let Some(m) = self.hops[h].medium.as_deref_mut() else {
            return;
        };
        if m.run(now, &mut deps, &mut dropped) {
            let (svc, mut cx) = hop_cx!(self, h, out);
            for (_, p) in dropped.drain(..) {
                cx.drop_pkt(p, DropCause::Queue);
            }
            for d in deps.drain(..) {
                svc.medium_departure(d, &mut cx);
            }
            if let Some(m) = cx.medium {
                m.arm(now);
            }
        }
        self.departures_scratch = deps;
        self.medium_drop_scratch = dropped;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_link::{RateSource, TraceSchedule};
    use latlab_qdisc::{DropTail, Limit};
    use rand::SeedableRng;
    use rand_pcg::Pcg64Mcg;
    use std::sync::Arc;

    fn pkt(idx: u32, bytes: u32) -> PacketRef {
        PacketRef {
            idx,
            wire_bytes: bytes,
            flow: 0,
            route: Default::default(),
        }
    }

    fn fixed_hop(rate_bps: u64, delay_ns: u64, limit_pkts: u64) -> Hop {
        Hop::new(
            0,
            "a->b".into(),
            HopService::Fixed(LinkRate::Fixed { rate_bps }),
            delay_ns,
            LinkQueue::DropTail(DropTail::new(Limit::Packets(limit_pkts))),
            0.0,
            Pcg64Mcg::seed_from_u64(1),
        )
    }

    fn run_until(line: &mut Line, t: u64) -> Vec<Outcome> {
        let mut out = Vec::new();
        line.advance(t, &mut out);
        out
    }

    fn delivered(out: &[Outcome]) -> Vec<(u32, u64)> {
        out.iter()
            .filter_map(|o| match o {
                Outcome::Delivered { pkt, due_ns } => Some((pkt.idx, *due_ns)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn fixed_rate_serialises_then_delays_in_order() {
        // 12 Mbit/s: 1500 bytes take 1 ms; 10 ms propagation.
        let mut line = Line::new(vec![fixed_hop(12_000_000, 10_000_000, 100)]);
        let mut out = Vec::new();
        for i in 0..3 {
            line.arrive(0, pkt(i, 1500), &mut out);
        }
        assert_eq!(line.next_due_ns(), Some(1_000_000));
        // Advancing late (at 20 ms) still schedules each packet on time.
        let out = run_until(&mut line, 20_000_000);
        assert_eq!(
            delivered(&out),
            vec![(0, 11_000_000), (1, 12_000_000), (2, 13_000_000)]
        );
        assert_eq!(line.next_due_ns(), None);
        assert_eq!(line.hops[0].counters.departures_pkts, 3);
    }

    #[test]
    fn a_full_queue_drops_and_counts() {
        let mut line = Line::new(vec![fixed_hop(12_000_000, 0, 2)]);
        let mut out = Vec::new();
        // The first is on the transmitter at once; two fill the queue.
        for i in 0..5 {
            line.arrive(0, pkt(i, 1500), &mut out);
        }
        let drops: Vec<u32> = out
            .iter()
            .filter_map(|o| match o {
                Outcome::Dropped {
                    pkt,
                    cause: DropCause::Queue,
                    ..
                } => Some(pkt.idx),
                _ => None,
            })
            .collect();
        assert_eq!(drops, vec![3, 4]);
        let q = line.hops[0].svc.qdisc.stats();
        assert_eq!((q.arrivals_pkts, q.drops_pkts()), (5, 2));
    }

    #[test]
    fn two_hops_chain_their_delays() {
        let mut line = Line::new(vec![
            fixed_hop(12_000_000, 1_000_000, 10),
            fixed_hop(6_000_000, 2_000_000, 10),
        ]);
        let mut out = Vec::new();
        line.arrive(0, pkt(7, 1500), &mut out);
        // 1 ms + 1 ms on hop 0, then 2 ms + 2 ms on hop 1.
        assert_eq!(
            delivered(&run_until(&mut line, 100_000_000)),
            vec![(7, 6_000_000)]
        );
    }

    #[test]
    fn trace_link_departs_at_opportunities() {
        let trace = Arc::new(TraceSchedule::from_ms(vec![2, 4], "t").unwrap());
        let hop = Hop::new(
            0,
            "a->b".into(),
            HopService::Varying(Box::new(Transmitter::trace(trace))),
            5_000_000,
            LinkQueue::DropTail(DropTail::new(Limit::Packets(10))),
            0.0,
            Pcg64Mcg::seed_from_u64(1),
        );
        let mut line = Line::new(vec![hop]);
        let mut out = Vec::new();
        for i in 0..3 {
            line.arrive(0, pkt(i, 1500), &mut out);
        }
        // Opportunities at 2, 4, 6 ms (the trace loops with period 4 ms).
        assert_eq!(
            delivered(&run_until(&mut line, 1_000_000_000)),
            vec![(0, 7_000_000), (1, 9_000_000), (2, 11_000_000)]
        );
    }

    #[test]
    fn rate_schedule_changes_the_service_time() {
        // 12 Mbit/s for 1 ms, then 1.2 Mbit/s.
        let src = RateSource::Schedule(vec![(0, 12_000_000), (1_000_000, 1_200_000)].into());
        let hop = Hop::new(
            0,
            "a->b".into(),
            HopService::Varying(Box::new(Transmitter::rate(src, 1))),
            0,
            LinkQueue::DropTail(DropTail::new(Limit::Packets(10))),
            0.0,
            Pcg64Mcg::seed_from_u64(1),
        );
        let mut line = Line::new(vec![hop]);
        let mut out = Vec::new();
        line.arrive(0, pkt(0, 1500), &mut out);
        line.arrive(0, pkt(1, 1500), &mut out);
        assert_eq!(
            delivered(&run_until(&mut line, 1_000_000_000)),
            vec![(0, 1_000_000), (1, 11_000_000)]
        );
    }

    #[test]
    fn random_loss_is_seeded_and_counted() {
        let run = |seed| {
            let mut hop = fixed_hop(1_000_000_000, 0, 10_000);
            hop.loss_prob = 0.1;
            hop.loss_rng = Pcg64Mcg::seed_from_u64(seed);
            let mut line = Line::new(vec![hop]);
            let mut out = Vec::new();
            for i in 0..10_000 {
                line.arrive(u64::from(i) * 1_000_000, pkt(i, 100), &mut out);
                line.advance(u64::from(i) * 1_000_000, &mut out);
            }
            line.hops[0].counters.lost_pkts
        };
        let lost = run(3);
        assert_eq!(lost, run(3));
        assert!((800..1200).contains(&lost), "{lost}");
    }
}
