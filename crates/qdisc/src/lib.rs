//! Sans-IO queue disciplines: DropTail, RED, CoDel, FQ-CoDel, PIE, the edge
//! pacer and a token bucket.
//!
//! A queue discipline holds packets between their arrival at a link and the
//! start of their transmission. The driving contract ([`Qdisc`]):
//!
//! - `enqueue(now_ns, pkt)` on arrival: [`Enqueue::Queued`], or
//!   [`Enqueue::Dropped`] handing the packet back for accounting;
//! - `dequeue(now_ns, &mut dropped)` whenever the transmitter is free:
//!   [`Dequeue::Packet`] (with its sojourn time), [`Dequeue::Empty`], or, from a
//!   non-work-conserving discipline (a pacer, a shaper), [`Dequeue::Wait`] with
//!   the time to ask again; packets dropped at dequeue (CoDel) go to `dropped`;
//! - [`QdiscStats`] keeps arrivals = departures + drops + queued.
//!
//! Nothing here reads a clock: the simulator passes virtual time, the emulator
//! wall time. Disciplines are generic over the packet handle so that the
//! simulator can queue small `Copy` handles (a slab index plus the few fields a
//! discipline needs) and a real-network tool can queue its own buffers.

mod codel;
mod droptail;
mod edge_pacer;
mod fq_codel;
mod pie;
mod red;
mod token_bucket;

#[cfg(test)]
mod ecn_tests;

pub use codel::{CoDel, CoDelParams};
pub use droptail::{DropTail, Limit};
pub use edge_pacer::{EdgePacer, EdgePacerParams};
pub use fq_codel::{FlowList, FqCoDel, FqCoDelParams, FQ_CODEL_MAX_FLOWS};
pub use pie::{Pie, PieParams};
pub use red::{Red, RedParams};
pub use token_bucket::{TokenBucket, TokenBucketParams};

/// Nanoseconds on the caller's clock.
pub type TimeNs = u64;

/// The ECN field of the IP header (RFC 3168 §5): two bits, the values
/// as on the wire.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Ecn {
    /// Not ECN-Capable Transport (00): a queue drops it.
    #[default]
    NotEct = 0b00,
    /// ECT(1) (01).
    Ect1 = 0b01,
    /// ECT(0) (10), what an RFC 3168 sender sets on its data.
    Ect0 = 0b10,
    /// Congestion Experienced (11), set by a queue instead of a drop.
    Ce = 0b11,
}

impl Ecn {
    /// The codepoint from the two low bits of `bits` (e.g. the IP TOS byte).
    pub fn from_bits(bits: u8) -> Ecn {
        match bits & 0b11 {
            0b00 => Ecn::NotEct,
            0b01 => Ecn::Ect1,
            0b10 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }

    pub const fn bits(self) -> u8 {
        self as u8
    }

    /// ECT(0) or ECT(1): a queue may mark it instead of dropping it.
    pub fn is_ect(self) -> bool {
        matches!(self, Ecn::Ect0 | Ecn::Ect1)
    }
}

/// What a discipline needs to know about a packet.
pub trait QueuedPacket: Copy {
    /// Size on the wire, bytes.
    fn size_bytes(&self) -> u32;
    /// Flow identifier, for disciplines that classify (per-flow queues).
    fn flow_id(&self) -> u32;
    /// The packet's ECN codepoint (RFC 3168 §5). Handles that do not carry
    /// one are Not-ECT: a marking queue drops them as before.
    fn ecn(&self) -> Ecn {
        Ecn::NotEct
    }
    /// Set Congestion Experienced. Called only on a packet whose `ecn()`
    /// is ECT, by a queue that marks it instead of dropping it.
    fn set_ce(&mut self) {}
}

/// Mark `pkt` CE if it is ECN-capable and the discipline marks
/// (RFC 3168 §7: "instead of dropping the packet, the router MAY instead
/// set the CE codepoint"). Returns whether it was marked.
pub(crate) fn try_mark<P: QueuedPacket>(ecn_on: bool, pkt: &mut P) -> bool {
    if ecn_on && pkt.ecn().is_ect() {
        pkt.set_ce();
        true
    } else {
        false
    }
}

/// Result of an enqueue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enqueue<P> {
    /// The packet is now queued.
    Queued,
    /// The packet was dropped on arrival (and is handed back for accounting).
    Dropped(P),
}

/// An active queue manager's decision about one packet, taken at one
/// place per discipline (PIE's `verdict`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Enqueue,
    Drop,
    /// Enqueue with CE set: the congestion signal of an ECT packet where a
    /// Not-ECT one would be dropped (RFC 3168 §7).
    Mark,
}

/// Result of a dequeue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dequeue<P> {
    /// Transmit this packet now. `sojourn_ns` = now − its enqueue time.
    Packet { pkt: P, sojourn_ns: u64 },
    /// Nothing to send.
    Empty,
    /// Packets are held until this time (non-work-conserving disciplines).
    Wait(TimeNs),
}

/// Counters every discipline keeps. Invariant (checked by the simulator at
/// the end of every run): arrivals = departures + drops + queued.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)] // the four counters every packet updates first
pub struct QdiscStats {
    pub arrivals_pkts: u64,
    pub arrivals_bytes: u64,
    pub departures_pkts: u64,
    pub departures_bytes: u64,
    /// Dropped on arrival (tail drop, RED early and forced drops).
    pub drops_enqueue_pkts: u64,
    /// The part of `drops_enqueue_pkts` that RED or PIE dropped early: a
    /// random drop with room left in the buffer (RED: the average queue
    /// between its thresholds; PIE: its drop probability). Zero for every
    /// other discipline. Forced drops (buffer full, or RED's average above
    /// `max_th`) are the rest.
    pub drops_early_pkts: u64,
    /// Dropped at dequeue (CoDel).
    pub drops_dequeue_pkts: u64,
    pub drops_bytes: u64,
    /// ECT packets marked CE where a Not-ECT packet would have been
    /// dropped (RFC 3168 §7). A marked packet stays a departure (or is
    /// still queued): marks are not part of the conservation sum.
    pub marks_pkts: u64,
}

impl QdiscStats {
    pub fn drops_pkts(&self) -> u64 {
        self.drops_enqueue_pkts + self.drops_dequeue_pkts
    }
}

/// A queue discipline.
pub trait Qdisc<P: QueuedPacket>: Send {
    /// Short name ("droptail", "red", "codel").
    fn name(&self) -> &'static str;

    /// A packet arrives at `now_ns`.
    fn enqueue(&mut self, now_ns: TimeNs, pkt: P) -> Enqueue<P>;

    /// The transmitter is free at `now_ns`. Packets the discipline drops
    /// while dequeuing (CoDel) are pushed onto `dropped` for accounting.
    fn dequeue(&mut self, now_ns: TimeNs, dropped: &mut Vec<P>) -> Dequeue<P>;

    /// Packets currently queued.
    fn len_pkts(&self) -> usize;

    /// Bytes currently queued.
    fn len_bytes(&self) -> u64;

    fn stats(&self) -> &QdiscStats;

    /// The discipline marks ECT packets instead of dropping them (its
    /// `ecn` parameter): its marks are worth a column in the results.
    fn ecn_marking(&self) -> bool {
        false
    }
}
