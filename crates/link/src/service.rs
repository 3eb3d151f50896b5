//! One link's service rule, written once for the simulator and the
//! emulator: random loss on arrival, the queue discipline, the transmitter
//! (a fixed rate, a trace or rate process, or a member's share of a cell or
//! an AP) and the propagation delay.
//!
//! Sans-IO: a [`LinkService`] never reads a clock and owns no wire. Its
//! driver hands it packets with their arrival time ([`LinkService::arrive`])
//! and calls it back at the deadlines it asked for
//! ([`LinkService::on_tx_done`] when the transmitter frees up,
//! [`LinkService::on_wake`] when a non-work-conserving discipline releases
//! packets). What happens is reported through [`LinkEvents`]: departures
//! (with the time the last byte left and the time the packet reaches the
//! far end), drops, and the deadlines to arm. The simulator turns the arms
//! into events of its agenda; the emulator reads [`LinkService::next_deadline_ns`]
//! and sleeps on a real clock.
//!
//! A link is one of three services ([`Service`]):
//! - `Fixed`: a transmitter of `rate`; a packet takes `bits / rate`,
//!   rounded up, and a `TxDone` is armed only while packets wait, so a
//!   packet crossing an idle link costs its driver nothing but its arrival.
//! - `Varying`: a [`Transmitter`] over a trace or a rate process; every
//!   packet that may start now is sent, then one deadline is armed at the
//!   next instant a packet may start.
//! - `Shared`: a member of a [`Medium`] (an LTE cell or a Wi-Fi AP), which
//!   holds the queues and decides when packets leave; the link keeps its
//!   loss, delay and counters, and its own queue stays empty.

use crate::{Departure, LteCell, Transmitter, WifiAp};
use latlab_qdisc::{Dequeue, DropTail, Enqueue, Qdisc, QdiscStats, QueuedPacket, TimeNs};
use rand::Rng;
use rand_pcg::Pcg64Mcg;

/// A link's nominal rate: its fixed rate, or for a time-varying or shared
/// link its long-run mean.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LinkRate {
    Fixed { rate_bps: u64 },
}

impl LinkRate {
    /// Serialisation time of `wire_bytes` starting at `now_ns`, nanoseconds.
    #[inline]
    pub fn tx_time_ns(&self, _now_ns: u64, wire_bytes: u32) -> u64 {
        match *self {
            LinkRate::Fixed { rate_bps } => {
                // bits · 1e9 / rate, rounded up so that a link never runs faster than its rate.
                (wire_bytes as u64 * 8 * 1_000_000_000).div_ceil(rate_bps)
            }
        }
    }

    pub fn nominal_bps(&self) -> u64 {
        match *self {
            LinkRate::Fixed { rate_bps } => rate_bps,
        }
    }
}

/// A link's queue discipline. DropTail, by far the most common, sits
/// inline: no pointer to chase and no virtual call per packet (at 10k flows
/// a boxed queue is a cache miss of its own on every hop).
pub enum LinkQueue<P> {
    DropTail(DropTail<P>),
    Other(Box<dyn Qdisc<P>>),
}

/// What a link can carry: a queued packet handle that may cross threads
/// (the disciplines are `Send`).
pub trait LinkPacket: QueuedPacket + Send + 'static {}
impl<P: QueuedPacket + Send + 'static> LinkPacket for P {}

impl<P: LinkPacket> LinkQueue<P> {
    /// The queue as a trait object.
    pub fn into_boxed(self) -> Box<dyn Qdisc<P>> {
        match self {
            LinkQueue::DropTail(q) => Box::new(q),
            LinkQueue::Other(q) => q,
        }
    }
}

impl<P: LinkPacket> LinkQueue<P> {
    pub fn as_dyn(&self) -> &dyn Qdisc<P> {
        match self {
            LinkQueue::DropTail(q) => q,
            LinkQueue::Other(q) => q.as_ref(),
        }
    }

    /// The discipline's short name ("droptail", "red", "codel", …).
    pub fn name(&self) -> &'static str {
        match self {
            LinkQueue::DropTail(q) => q.name(),
            LinkQueue::Other(q) => q.name(),
        }
    }

    #[inline]
    pub fn enqueue(&mut self, now_ns: TimeNs, pkt: P) -> Enqueue<P> {
        match self {
            LinkQueue::DropTail(q) => q.enqueue(now_ns, pkt),
            LinkQueue::Other(q) => q.enqueue(now_ns, pkt),
        }
    }

    #[inline]
    pub fn dequeue(&mut self, now_ns: TimeNs, dropped: &mut Vec<P>) -> Dequeue<P> {
        match self {
            LinkQueue::DropTail(q) => q.dequeue(now_ns, dropped),
            LinkQueue::Other(q) => q.dequeue(now_ns, dropped),
        }
    }

    #[inline]
    pub fn len_pkts(&self) -> usize {
        match self {
            LinkQueue::DropTail(q) => q.len_pkts(),
            LinkQueue::Other(q) => q.len_pkts(),
        }
    }

    pub fn len_bytes(&self) -> u64 {
        match self {
            LinkQueue::DropTail(q) => q.len_bytes(),
            LinkQueue::Other(q) => q.len_bytes(),
        }
    }

    pub fn stats(&self) -> &QdiscStats {
        match self {
            LinkQueue::DropTail(q) => q.stats(),
            LinkQueue::Other(q) => q.stats(),
        }
    }
}

impl<P> From<Box<dyn Qdisc<P>>> for LinkQueue<P> {
    fn from(q: Box<dyn Qdisc<P>>) -> Self {
        LinkQueue::Other(q)
    }
}

/// Per-link counters kept outside the queue discipline. `repr(C)`, the
/// rarely counted loss first: [`LinkService`] lays out what every hop
/// touches in as few cache lines as it can.
#[derive(Debug, Clone, Copy, Default)]
#[repr(C)]
pub struct LinkCounters {
    /// Packets removed by the link's random-loss model, given up by a
    /// medium's link layer, or caught by a rate that fell to zero for ever.
    pub lost_pkts: u64,
    /// Packets offered to the link (before random loss and the queue).
    pub arrivals_pkts: u64,
    pub arrivals_bytes: u64,
    /// Packets whose serialisation started (they are on the wire from then).
    pub departures_pkts: u64,
    pub departures_bytes: u64,
    /// Since the last sample: sojourn times of dequeued packets.
    pub sojourn_sum_ns: u64,
    pub sojourn_count: u64,
    pub sojourn_max_ns: u64,
}

impl LinkCounters {
    #[inline]
    fn sojourn(&mut self, sojourn_ns: u64) {
        self.sojourn_sum_ns += sojourn_ns;
        self.sojourn_count += 1;
        self.sojourn_max_ns = self.sojourn_max_ns.max(sojourn_ns);
    }

    #[inline]
    fn departure(&mut self, wire_bytes: u32) {
        self.departures_pkts += 1;
        self.departures_bytes += wire_bytes as u64;
    }
}

/// How a link serves its queue.
pub enum Service {
    /// A fixed-rate transmitter (`LinkService::rate`): the hot path.
    Fixed,
    /// A transmitter over a trace or a rate process, serving the link's
    /// own queue.
    Varying(Box<Transmitter>),
    /// Member `member` of the driver's medium `medium` (see [`Medium`]).
    Shared { medium: u32, member: u32 },
}

/// Why a packet did not make it across.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropCause {
    /// The queue discipline dropped it (tail drop, RED, CoDel, pacer or
    /// shared-buffer limit).
    Queue,
    /// Random loss, a medium's link layer giving up, or a rate that fell
    /// to zero for ever.
    Lost,
}

/// A packet leaving a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkDeparture<P> {
    pub pkt: P,
    /// Time it waited in the queue, ns.
    pub sojourn_ns: u64,
    /// When it entered the queue.
    pub enqueued_ns: u64,
    /// When its last byte left the transmitter.
    pub leave_ns: u64,
    /// When the far end's radio has it (after HARQ or retries; equals
    /// `leave_ns` on a wired link).
    pub deliver_ns: u64,
    /// When it reaches the far end: `deliver_ns` + the propagation delay.
    pub arrive_ns: u64,
    /// The link is time-varying or shared (its access delay is measured).
    pub access: bool,
}

/// The driver's side of a link: where departures and drops go, and the
/// deadlines it must keep. Calls come in the order the simulator has
/// always made them (a departure before the deadline it arms).
pub trait LinkEvents<P> {
    /// `d.pkt` left the link; it belongs on the wire until `d.arrive_ns`.
    fn depart(&mut self, d: LinkDeparture<P>);
    /// `pkt` is gone.
    fn drop_pkt(&mut self, pkt: P, cause: DropCause);
    /// Call [`LinkService::on_tx_done`] at `at_ns` (one call per arm).
    fn arm_tx(&mut self, at_ns: u64);
    /// Call [`LinkService::on_wake`] at `at_ns` (a later arm may supersede it).
    fn arm_wake(&mut self, at_ns: u64);
    /// A packet for member `member` of medium `medium` (a `Shared` link)
    /// passed the link's random loss: hand it to [`Medium::arrive`].
    fn to_medium(&mut self, now_ns: u64, medium: u32, member: u32, pkt: P);
    /// A scratch vector for packets a discipline drops at dequeue (left empty).
    fn scratch(&mut self) -> &mut Vec<P>;
}

/// One unidirectional link's service state.
///
/// `repr(C)`, in the order a packet's hop touches the fields, so that a
/// driver that embeds it first in a 64-byte aligned struct (the
/// simulator's `Link`) keeps a hop through an idle fixed-rate DropTail
/// link (most hops at scale) in three cache lines: line 0 from
/// `busy_until_ns` to the loss and arrival counters, line 1 the other
/// counters and the DropTail limit, line 2 the FIFO's length and the
/// discipline's arrival and departure counters (`DropTail`, its `Fifo` and
/// `QdiscStats` are `repr(C)` to match). `tx_scheduled` is not read on that
/// path: an empty DropTail queue has no transmission armed.
#[repr(C)]
pub struct LinkService<P> {
    /// The transmitter is busy until this time.
    pub busy_until_ns: u64,
    pub delay_ns: u64,
    pub rate: LinkRate,
    /// Random independent loss probability (its stream is `loss_rng`).
    pub loss_prob: f64,
    pub service: Service,
    pub counters: LinkCounters,
    pub qdisc: LinkQueue<P>,
    /// An `on_tx_done` is armed (at `busy_until_ns`).
    pub tx_scheduled: bool,
    /// An `on_wake` is armed at this time.
    pub wake_at: Option<u64>,
    pub loss_rng: Pcg64Mcg,
}

impl<P: LinkPacket> LinkService<P> {
    pub fn new(
        rate: LinkRate,
        service: Service,
        delay_ns: u64,
        qdisc: LinkQueue<P>,
        loss_prob: f64,
        loss_rng: Pcg64Mcg,
    ) -> Self {
        LinkService {
            busy_until_ns: 0,
            delay_ns,
            rate,
            loss_prob,
            service,
            counters: LinkCounters::default(),
            qdisc,
            tx_scheduled: false,
            wake_at: None,
            loss_rng,
        }
    }

    /// The earliest deadline the link has armed, if any.
    pub fn next_deadline_ns(&self) -> Option<u64> {
        let tx = self.tx_scheduled.then_some(self.busy_until_ns);
        match (tx, self.wake_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// A packet arrives at the link's input at `now`.
    #[inline(always)]
    pub fn arrive(&mut self, now: u64, pkt: P, ev: &mut impl LinkEvents<P>) {
        self.counters.arrivals_pkts += 1;
        self.counters.arrivals_bytes += pkt.size_bytes() as u64;
        if self.loss_prob > 0.0 && self.loss_rng.random::<f64>() < self.loss_prob {
            self.counters.lost_pkts += 1;
            ev.drop_pkt(pkt, DropCause::Lost);
            return;
        }
        if let Service::Shared { medium, member } = self.service {
            ev.to_medium(now, medium, member, pkt);
            return;
        }
        // An idle fixed-rate DropTail link (most hops at scale: the path
        // has one bottleneck): the packet starts serialisation at once.
        // Exactly what enqueue + `service` would do, without the queue's storage.
        if let (Service::Fixed, LinkQueue::DropTail(q)) = (&self.service, &mut self.qdisc) {
            if self.busy_until_ns <= now && q.len_pkts() == 0 {
                // A transmission is armed only while packets wait.
                debug_assert!(!self.tx_scheduled);
                match q.enqueue_and_dequeue_empty(now, pkt) {
                    Dequeue::Packet { pkt, sojourn_ns } => self.start_tx(now, pkt, sojourn_ns, ev),
                    _ => ev.drop_pkt(pkt, DropCause::Queue),
                }
                return;
            }
        }
        if let Enqueue::Dropped(p) = self.qdisc.enqueue(now, pkt) {
            ev.drop_pkt(p, DropCause::Queue);
            return;
        }
        if !self.tx_scheduled {
            self.service(now, ev);
        }
    }

    /// The deadline of [`LinkEvents::arm_tx`] is reached.
    #[inline]
    pub fn on_tx_done(&mut self, now: u64, ev: &mut impl LinkEvents<P>) {
        self.tx_scheduled = false;
        self.service(now, ev);
    }

    /// The deadline of [`LinkEvents::arm_wake`] at `now` is reached. A
    /// superseded wake-up does nothing, and a pending transmission takes
    /// care of the queue by itself.
    pub fn on_wake(&mut self, now: u64, ev: &mut impl LinkEvents<P>) {
        if self.wake_at == Some(now) {
            self.wake_at = None;
            if !self.tx_scheduled {
                self.service(now, ev);
            }
        }
    }

    /// Start the next transmission if the transmitter is free, else make
    /// sure a deadline is armed for when it frees up.
    #[inline(always)]
    fn service(&mut self, now: u64, ev: &mut impl LinkEvents<P>) {
        if !matches!(self.service, Service::Fixed) {
            self.service_varying(now, ev);
            return;
        }
        if self.busy_until_ns > now {
            if !self.tx_scheduled {
                self.tx_scheduled = true;
                ev.arm_tx(self.busy_until_ns);
            }
            return;
        }
        match self.qdisc.dequeue(now, ev.scratch()) {
            Dequeue::Packet { pkt, sojourn_ns } => self.start_tx(now, pkt, sojourn_ns, ev),
            Dequeue::Empty => {}
            Dequeue::Wait(t) => self.arm_wake(t, ev),
        }
        self.drop_dequeued(ev);
    }

    fn arm_wake(&mut self, t: u64, ev: &mut impl LinkEvents<P>) {
        if self.wake_at.is_none_or(|w| t < w) {
            self.wake_at = Some(t);
            ev.arm_wake(t);
        }
    }

    /// Report what the discipline dropped at dequeue (left in the
    /// driver's scratch), in the order it dropped them. Most dequeues drop
    /// nothing: then the scratch is not moved at all.
    #[inline]
    fn drop_dequeued(&mut self, ev: &mut impl LinkEvents<P>) {
        if ev.scratch().is_empty() {
            return;
        }
        let mut dropped = std::mem::take(ev.scratch());
        for p in dropped.drain(..) {
            ev.drop_pkt(p, DropCause::Queue);
        }
        *ev.scratch() = dropped;
    }

    /// A fixed-rate link's transmitter takes `pkt` (just dequeued after
    /// `sojourn_ns`): it departs, and a `TxDone` is armed if more packets wait.
    #[inline(always)]
    fn start_tx(&mut self, now: u64, pkt: P, sojourn_ns: u64, ev: &mut impl LinkEvents<P>) {
        self.counters.sojourn(sojourn_ns);
        self.counters.departure(pkt.size_bytes());
        let end = now + self.rate.tx_time_ns(now, pkt.size_bytes());
        self.busy_until_ns = end;
        ev.depart(LinkDeparture {
            pkt,
            sojourn_ns,
            enqueued_ns: now - sojourn_ns,
            leave_ns: end,
            deliver_ns: end,
            arrive_ns: end + self.delay_ns,
            access: false,
        });
        if self.qdisc.len_pkts() > 0 {
            self.tx_scheduled = true;
            ev.arm_tx(end);
        }
    }

    /// A time-varying link (trace or rate process): send every packet that
    /// may leave now, then arm one deadline for the next instant a packet
    /// may start. Idle opportunities are skipped arithmetically by the
    /// transmitter, so the link costs one deadline per instant that
    /// carries a packet.
    fn service_varying(&mut self, now: u64, ev: &mut impl LinkEvents<P>) {
        while let Service::Varying(tx) = &mut self.service {
            if self.qdisc.len_pkts() == 0 {
                break;
            }
            let Some(start) = tx.earliest_start_ns(self.busy_until_ns.max(now)) else {
                break; // the rate is zero for ever: packets stay queued
            };
            if start > now {
                self.busy_until_ns = start;
                self.tx_scheduled = true;
                ev.arm_tx(start);
                break;
            }
            match self.qdisc.dequeue(now, ev.scratch()) {
                Dequeue::Packet { pkt, sojourn_ns } => {
                    self.counters.sojourn(sojourn_ns);
                    let Some(end) = tx.transmit(now, pkt.size_bytes()) else {
                        // The rate fell to zero for ever mid-packet.
                        self.counters.lost_pkts += 1;
                        ev.drop_pkt(pkt, DropCause::Lost);
                        continue;
                    };
                    self.busy_until_ns = end;
                    self.counters.departure(pkt.size_bytes());
                    ev.depart(LinkDeparture {
                        pkt,
                        sojourn_ns,
                        enqueued_ns: now - sojourn_ns,
                        leave_ns: end,
                        deliver_ns: end,
                        arrive_ns: end + self.delay_ns,
                        access: true,
                    });
                }
                Dequeue::Empty => break,
                Dequeue::Wait(t) => {
                    self.arm_wake(t, ev);
                    break;
                }
            }
        }
        self.drop_dequeued(ev);
    }

    /// This member link's medium let `d` go (see [`Medium::run`]): count
    /// it, and it departs unless the link layer gave up on it.
    pub fn medium_departure(&mut self, d: Departure<P>, ev: &mut impl LinkEvents<P>) {
        self.counters.sojourn(d.sojourn_ns);
        if d.lost {
            self.counters.lost_pkts += 1;
            ev.drop_pkt(d.pkt, DropCause::Lost);
            return;
        }
        self.counters.departure(d.pkt.size_bytes());
        ev.depart(LinkDeparture {
            pkt: d.pkt,
            sojourn_ns: d.sojourn_ns,
            enqueued_ns: d.enqueued_ns,
            leave_ns: d.leave_ns,
            deliver_ns: d.deliver_ns,
            arrive_ns: d.deliver_ns + self.delay_ns,
            access: true,
        });
    }
}

/// A shared access medium's scheduler.
pub enum MediumKind<P> {
    Cell(LteCell<P>),
    Ap(WifiAp<P>),
}

/// A shared access medium (an LTE cell or a Wi-Fi AP) and the single
/// deadline it keeps: its next TTI, or when the AP is free to send.
pub struct Medium<P> {
    pub kind: MediumKind<P>,
    /// A wake-up is armed at this time.
    pub wake_at: Option<u64>,
}

impl<P: LinkPacket> Medium<P> {
    pub fn new(kind: MediumKind<P>) -> Self {
        Medium { kind, wake_at: None }
    }

    /// A packet for `member` arrives (after its link's random loss).
    /// Returns the packet if the medium's queue drops it, else the
    /// deadline to arm if a new one is needed.
    pub fn arrive(&mut self, now: u64, member: u32, pkt: P) -> Result<Option<u64>, P> {
        let res = match &mut self.kind {
            MediumKind::Cell(c) => c.enqueue(now, member, pkt),
            MediumKind::Ap(ap) => ap.enqueue(now, member, pkt),
        };
        match res {
            Enqueue::Dropped(p) => Err(p),
            Enqueue::Queued => Ok(self.arm(now)),
        }
    }

    /// Arm the medium's next instant if it has one earlier than the
    /// armed one; returns it when the driver must schedule it.
    pub fn arm(&mut self, now: u64) -> Option<u64> {
        let next = match &self.kind {
            MediumKind::Cell(c) => c.next_tti_ns(now),
            MediumKind::Ap(ap) => ap.next_wakeup_ns(now),
        }?;
        if self.wake_at.is_none_or(|w| next < w) {
            self.wake_at = Some(next);
            return Some(next);
        }
        None
    }

    /// The deadline at `now` is reached: run a cell's TTI or let a free AP
    /// send its head frame. Departures (to each member's link, see
    /// [`LinkService::medium_departure`]) go to `out`, frames the shared
    /// queue dropped to `dropped`; a superseded deadline does nothing.
    pub fn run(&mut self, now: u64, out: &mut Vec<Departure<P>>, dropped: &mut Vec<(u32, P)>) -> bool {
        if self.wake_at != Some(now) {
            return false;
        }
        self.wake_at = None;
        match &mut self.kind {
            MediumKind::Cell(c) => {
                if c.next_tti_ns(now) == Some(now) {
                    c.run_tti(now, out, dropped);
                }
            }
            MediumKind::Ap(ap) => ap.poll(now, out, dropped),
        }
        true
    }
}
