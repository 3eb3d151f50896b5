//! One direction of an emulated path: a chain of hops, each a queue
//! discipline (latlab-qdisc), a transmitter (a fixed rate, or a trace or
//! rate process from latlab-link), a propagation delay and random loss,
//! exactly as the simulator's links (crates/sim/src/sim.rs: `link_enqueue`,
//! `service`, `service_varying`, `depart`).
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

use latlab_link::{Departure, Transmitter};
use latlab_qdisc::{Dequeue, Enqueue, Qdisc};
use latlab_sim::network::{LinkCounters, LinkRate, MediumKind, QueueView};
use latlab_sim::packet::PacketRef;
use rand::Rng;
use rand_pcg::Pcg64Mcg;

/// How a hop serves its queue.
pub enum HopService {
    Fixed(LinkRate),
    Varying(Box<Transmitter>),
    /// A user's downlink of an LTE cell or a station's of a Wi-Fi AP: the
    /// medium holds the queue and decides when packets leave (HARQ,
    /// retries); the hop's own `qdisc` stays empty. Only this member's
    /// packets enter it (the emulated path has one client).
    Shared {
        medium: Box<MediumKind>,
        member: u32,
    },
}

/// One link of the path.
pub struct Hop {
    /// The link's index in the scenario (the simulator's `link_id`).
    pub link_id: u32,
    /// "from->to", as the simulator names it.
    pub name: String,
    pub service: HopService,
    pub delay_ns: u64,
    pub qdisc: Box<dyn Qdisc<PacketRef>>,
    pub loss_prob: f64,
    pub loss_rng: Pcg64Mcg,
    pub counters: LinkCounters,
    /// Mean bit rate offered (fixed rate, trace or channel mean).
    nominal_bps: u64,
    busy_until_ns: u64,
    /// A service call is due at this time (the transmitter frees up, or
    /// the next opportunity of a varying link).
    tx_at: Option<u64>,
    /// The discipline asked to be woken at this time (a pacer).
    wake_at: Option<u64>,
    /// Packets propagating, with the time they reach the far end.
    wire: VecDeque<(u64, PacketRef)>,
}

impl Hop {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        link_id: u32,
        name: String,
        mut service: HopService,
        delay_ns: u64,
        qdisc: Box<dyn Qdisc<PacketRef>>,
        loss_prob: f64,
        loss_rng: Pcg64Mcg,
    ) -> Self {
        let nominal_bps = match &mut service {
            HopService::Fixed(r) => r.nominal_bps(),
            HopService::Varying(tx) => tx.nominal_bps(),
            HopService::Shared { medium, member } => match medium.as_mut() {
                MediumKind::Cell(c) => c.channel_mut(*member).nominal_bps(),
                MediumKind::Ap(ap) => ap.station_tx_mut(*member).nominal_bps(),
            },
        };
        Hop {
            link_id,
            name,
            service,
            nominal_bps,
            delay_ns,
            qdisc,
            loss_prob,
            loss_rng,
            counters: LinkCounters::default(),
            busy_until_ns: 0,
            tx_at: None,
            wake_at: None,
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
        match &self.service {
            HopService::Fixed(_) => "fixed",
            HopService::Varying(tx) => tx.kind(),
            HopService::Shared { medium, .. } => match medium.as_ref() {
                MediumKind::Cell(_) => "lte",
                MediumKind::Ap(_) => "wifi",
            },
        }
    }

    /// The hop's queue, as the simulator's tables see a link's.
    pub fn queue_view(&self) -> QueueView {
        match &self.service {
            HopService::Shared { medium, member } => medium.member_queue_view(*member),
            _ => QueueView::of(self.qdisc.as_ref(), 0),
        }
    }

    fn next_event_ns(&self) -> Option<u64> {
        let wire = self.wire.front().map(|&(t, _)| t);
        [self.tx_at, self.wake_at, wire].into_iter().flatten().min()
    }
}

/// Why a packet did not make it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropCause {
    /// The queue discipline dropped it (tail drop, RED, CoDel, pacer limit).
    Queue,
    /// The link's random loss, or a rate that fell to zero for ever.
    Lost,
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

/// A direction of the path: hops in order.
pub struct Line {
    pub hops: Vec<Hop>,
    drop_scratch: Vec<PacketRef>,
    departures_scratch: Vec<Departure<PacketRef>>,
    medium_drop_scratch: Vec<(u32, PacketRef)>,
}

impl Line {
    pub fn new(hops: Vec<Hop>) -> Self {
        Line {
            hops,
            drop_scratch: Vec::new(),
            departures_scratch: Vec::new(),
            medium_drop_scratch: Vec::new(),
        }
    }

    /// A packet enters the first hop at `now_ns` (≥ every time the line
    /// was advanced to).
    pub fn arrive(&mut self, now_ns: u64, pkt: PacketRef, out: &mut Vec<Outcome>) {
        self.enqueue(0, now_ns, pkt, out);
    }

    /// The earliest internal event, if any.
    pub fn next_due_ns(&self) -> Option<u64> {
        self.hops.iter().filter_map(Hop::next_event_ns).min()
    }

    /// Run every internal event due at or before `now_ns`, in time order
    /// (ties: the earlier hop first).
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
                    self.enqueue(h + 1, t, pkt, out);
                }
            } else if hop.tx_at == Some(t) {
                hop.tx_at = None;
                self.service(h, t, out);
            } else {
                // The pacer's wake-up; a pending transmission takes care
                // of the queue by itself (as the simulator's LinkWake).
                hop.wake_at = None;
                if hop.tx_at.is_none() {
                    self.service(h, t, out);
                }
            }
        }
    }

    fn enqueue(&mut self, h: usize, now: u64, pkt: PacketRef, out: &mut Vec<Outcome>) {
        let hop = &mut self.hops[h];
        hop.counters.arrivals_pkts += 1;
        hop.counters.arrivals_bytes += u64::from(pkt.wire_bytes);
        if hop.loss_prob > 0.0 && hop.loss_rng.random::<f64>() < hop.loss_prob {
            hop.counters.lost_pkts += 1;
            out.push(Outcome::Dropped {
                hop: h,
                pkt,
                cause: DropCause::Lost,
            });
            return;
        }
        if let HopService::Shared { medium, member } = &mut hop.service {
            let res = match medium.as_mut() {
                MediumKind::Cell(c) => c.enqueue(now, *member, pkt),
                MediumKind::Ap(ap) => ap.enqueue(now, *member, pkt),
            };
            if let Enqueue::Dropped(p) = res {
                out.push(Outcome::Dropped {
                    hop: h,
                    pkt: p,
                    cause: DropCause::Queue,
                });
            } else {
                arm_medium(hop, now);
            }
            return;
        }
        if let Enqueue::Dropped(p) = hop.qdisc.enqueue(now, pkt) {
            out.push(Outcome::Dropped {
                hop: h,
                pkt: p,
                cause: DropCause::Queue,
            });
            return;
        }
        if hop.tx_at.is_none() {
            self.service(h, now, out);
        }
    }

    /// Start every transmission that may start at `now`, and arm the next
    /// service call.
    fn service(&mut self, h: usize, now: u64, out: &mut Vec<Outcome>) {
        if matches!(self.hops[h].service, HopService::Shared { .. }) {
            self.run_medium(h, now, out);
            return;
        }
        loop {
            let hop = &mut self.hops[h];
            if hop.qdisc.len_pkts() == 0 {
                break;
            }
            let start = match &mut hop.service {
                HopService::Fixed(_) => Some(hop.busy_until_ns.max(now)),
                HopService::Varying(tx) => tx.earliest_start_ns(hop.busy_until_ns.max(now)),
                HopService::Shared { .. } => None,
            };
            let Some(start) = start else {
                break; // the rate is zero for ever: packets stay queued
            };
            if start > now {
                hop.tx_at = Some(start);
                break;
            }
            match hop.qdisc.dequeue(now, &mut self.drop_scratch) {
                Dequeue::Packet { pkt, sojourn_ns } => {
                    let c = &mut hop.counters;
                    c.sojourn_sum_ns += sojourn_ns;
                    c.sojourn_count += 1;
                    c.sojourn_max_ns = c.sojourn_max_ns.max(sojourn_ns);
                    let end = match &mut hop.service {
                        HopService::Fixed(rate) => Some(now + rate.tx_time_ns(now, pkt.wire_bytes)),
                        HopService::Varying(tx) => tx.transmit(now, pkt.wire_bytes),
                        HopService::Shared { .. } => None,
                    };
                    let Some(end) = end else {
                        // The rate fell to zero for ever mid-packet.
                        hop.counters.lost_pkts += 1;
                        out.push(Outcome::Dropped {
                            hop: h,
                            pkt,
                            cause: DropCause::Lost,
                        });
                        continue;
                    };
                    hop.busy_until_ns = end;
                    hop.counters.departures_pkts += 1;
                    hop.counters.departures_bytes += u64::from(pkt.wire_bytes);
                    hop.wire.push_back((end + hop.delay_ns, pkt));
                    out.push(Outcome::Left {
                        hop: h,
                        pkt,
                        leave_ns: end,
                        sojourn_ns,
                    });
                }
                Dequeue::Empty => break,
                Dequeue::Wait(t) => {
                    if hop.wake_at.is_none_or(|w| t < w) {
                        hop.wake_at = Some(t);
                    }
                    break;
                }
            }
        }
        for p in self.drop_scratch.drain(..) {
            out.push(Outcome::Dropped {
                hop: h,
                pkt: p,
                cause: DropCause::Queue,
            });
        }
    }
}

impl Line {
    /// Run a cell's TTI or let a free AP send its head frame, as the
    /// simulator's `run_medium`: departures go onto the hop's wire (after
    /// HARQ or retries), frames given up are lost.
    fn run_medium(&mut self, h: usize, now: u64, out: &mut Vec<Outcome>) {
        let hop = &mut self.hops[h];
        let HopService::Shared { medium, .. } = &mut hop.service else {
            return;
        };
        let deps = &mut self.departures_scratch;
        let dropped = &mut self.medium_drop_scratch;
        match medium.as_mut() {
            MediumKind::Cell(c) => {
                if c.next_tti_ns(now) == Some(now) {
                    c.run_tti(now, deps, dropped);
                }
            }
            MediumKind::Ap(ap) => ap.poll(now, deps, dropped),
        }
        for (_, p) in dropped.drain(..) {
            out.push(Outcome::Dropped {
                hop: h,
                pkt: p,
                cause: DropCause::Queue,
            });
        }
        for d in deps.drain(..) {
            let c = &mut hop.counters;
            c.sojourn_sum_ns += d.sojourn_ns;
            c.sojourn_count += 1;
            c.sojourn_max_ns = c.sojourn_max_ns.max(d.sojourn_ns);
            if d.lost {
                c.lost_pkts += 1;
                out.push(Outcome::Dropped {
                    hop: h,
                    pkt: d.pkt,
                    cause: DropCause::Lost,
                });
                continue;
            }
            c.departures_pkts += 1;
            c.departures_bytes += u64::from(d.pkt.wire_bytes);
            // A cell delivers each user's packets in order: the wire stays sorted.
            hop.wire.push_back((d.deliver_ns + hop.delay_ns, d.pkt));
            out.push(Outcome::Left {
                hop: h,
                pkt: d.pkt,
                leave_ns: d.leave_ns,
                sojourn_ns: d.sojourn_ns,
            });
        }
        arm_medium(hop, now);
    }
}

/// Make sure the medium is run at its next instant (the next TTI, or when
/// the AP frees up), if it has anything to send.
fn arm_medium(hop: &mut Hop, now: u64) {
    let HopService::Shared { medium, .. } = &hop.service else {
        return;
    };
    let next = match medium.as_ref() {
        MediumKind::Cell(c) => c.next_tti_ns(now),
        MediumKind::Ap(ap) => ap.next_wakeup_ns(now),
    };
    if let Some(t) = next {
        if hop.tx_at.is_none_or(|w| t < w) {
            hop.tx_at = Some(t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_link::{RateSource, TraceSchedule};
    use latlab_qdisc::{DropTail, Limit};
    use rand::SeedableRng;
    use std::sync::Arc;

    fn pkt(idx: u32, bytes: u32) -> PacketRef {
        PacketRef {
            idx,
            wire_bytes: bytes,
            flow: 0,
            route_pos: 0,
        }
    }

    fn fixed_hop(rate_bps: u64, delay_ns: u64, limit_pkts: u64) -> Hop {
        Hop::new(
            0,
            "a->b".into(),
            HopService::Fixed(LinkRate::Fixed { rate_bps }),
            delay_ns,
            Box::new(DropTail::new(Limit::Packets(limit_pkts))),
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
        let q = line.hops[0].qdisc.stats();
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
            Box::new(DropTail::new(Limit::Packets(10))),
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
            Box::new(DropTail::new(Limit::Packets(10))),
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
