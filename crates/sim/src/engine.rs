//! The event queue, ordered by (time, insertion sequence).
//!
//! Ties in time are broken by the order in which events were scheduled, so a
//! run never depends on heap internals. Events are small `Copy` values; the
//! heap never holds packets (they live in the packet slab).

use crate::wire::Hop;

/// What happens at an instant. Every variant names the component it concerns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A link's transmitter finished sending its current packet.
    TxDone { link: u32 },
    /// Packet `pkt` (slab index), the head of a link's wire, reaches the
    /// far node and goes on to `hop`.
    Arrive { pkt: u32, hop: Hop },
    /// A non-work-conserving queue asked to be polled again.
    LinkWake { link: u32 },
    /// A shared access medium (LTE cell TTI, Wi-Fi AP free) must run.
    MediumWake { medium: u32 },
    /// A flow opens its connection.
    FlowStart { flow: u32 },
    /// A sender's timer: TCP RTO or pacing release, a UDP source's next packet.
    SenderTimer { flow: u32 },
    /// A closed-loop user finished thinking: open the next connection.
    UserNext { flow: u32 },
    /// The server's TCP sender behind an MPTCP proxy (RTO, pacing).
    ServerTimer { flow: u32 },
    /// A TCP receiver's timer (delayed ACK).
    ReceiverTimer { flow: u32 },
    /// Take a measurement sample.
    Sample,
    /// The measurement window opens: snapshot the counters summaries start from.
    MeasureStart,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    time_ns: u64,
    event: Packed,
}

/// An [`Event`] in 8 bytes: `Arrive` as its hop (31 bits, top bit set) and
/// its packet; every other event as its kind and its one index.
#[derive(Clone, Copy, Debug)]
struct Packed {
    word: u32,
    index: u32,
}

const ARRIVE: u32 = 1 << 31;

impl Packed {
    #[inline(always)]
    fn pack(e: Event) -> Packed {
        let (word, index) = match e {
            Event::Arrive { pkt, hop } => (ARRIVE | hop.to_bits(), pkt),
            Event::TxDone { link } => (0, link),
            Event::LinkWake { link } => (1, link),
            Event::MediumWake { medium } => (2, medium),
            Event::FlowStart { flow } => (3, flow),
            Event::SenderTimer { flow } => (4, flow),
            Event::UserNext { flow } => (5, flow),
            Event::ServerTimer { flow } => (6, flow),
            Event::ReceiverTimer { flow } => (7, flow),
            Event::Sample => (8, 0),
            Event::MeasureStart => (9, 0),
        };
        Packed { word, index }
    }

    #[inline(always)]
    fn unpack(self) -> Event {
        let Packed { word, index } = self;
        match word {
            0 => Event::TxDone { link: index },
            1 => Event::LinkWake { link: index },
            2 => Event::MediumWake { medium: index },
            3 => Event::FlowStart { flow: index },
            4 => Event::SenderTimer { flow: index },
            5 => Event::UserNext { flow: index },
            6 => Event::ServerTimer { flow: index },
            7 => Event::ReceiverTimer { flow: index },
            8 => Event::Sample,
            9 => Event::MeasureStart,
            _ => Event::Arrive {
                pkt: index,
                hop: Hop::from_bits(word & !ARRIVE),
            },
        }
    }
}

// Every event goes through the radix heap and is moved on every
// redistribution: an `Event` variant with a payload (a packet, a float) would
// grow every entry. Growing these is a decision to measure (`latlab bench`),
// not an accident.
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<Packed>() == 8);
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<Entry>() == 16);

/// Bits of the time compared per level: a redistribution moves an entry
/// down at least one level, so an entry moves at most `LEVELS - 1` times.
const DIGIT_BITS: u32 = 6;
const DIGITS: usize = 1 << DIGIT_BITS;
const LEVELS: usize = 64usize.div_ceil(DIGIT_BITS as usize);

/// The simulator's agenda: a radix heap (Ahuja, Mehlhorn, Orlin & Tarjan
/// 1990) with `DIGITS`-way buckets per level (the multi-level form of
/// Denardo & Fox 1979) on the event time, FIFO among equal times.
///
/// A radix heap needs a monotone workload: nothing may be scheduled before
/// the last event taken off. A discrete-event simulator is exactly that
/// (events are only scheduled while handling one, never in its past). A
/// push is O(1): relative to `last` (the time of the latest minimum), an
/// entry goes to the level of the highest `DIGIT_BITS`-bit digit in which
/// its time differs from `last`, into the bucket of its own digit there.
/// Taking the minimum redistributes the lowest non-empty bucket, each entry
/// moving at least one level down; at level 0 a bucket holds one exact time.
///
/// Ties need no sequence number in the key: every bucket holds its entries
/// in insertion order. A push appends the newest entry; a redistribution
/// empties one bucket into buckets that are all empty at that moment (every
/// bucket below the minimum one is), keeping its order. So a level-0 bucket,
/// one time, is a FIFO of the events scheduled at that time, and popping
/// from its front orders events by (time, insertion sequence).
#[derive(Debug)]
pub struct EventQueue {
    /// `LEVELS * DIGITS` buckets, level-major.
    buckets: Vec<Vec<Entry>>,
    /// Per level, bit d set when that level's bucket d is non-empty.
    occupied: [u64; LEVELS],
    /// Bit l set when level l has a non-empty bucket.
    levels: u32,
    /// Per level-0 bucket: index of its first entry not yet taken.
    heads: [u32; DIGITS],
    last: u64,
    len: usize,
}

const _: () = assert!(DIGITS <= 64 && LEVELS <= 32);

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue {
            buckets: (0..LEVELS * DIGITS).map(|_| Vec::new()).collect(),
            occupied: [0; LEVELS],
            levels: 0,
            heads: [0; DIGITS],
            last: 0,
            len: 0,
        }
    }
}

impl EventQueue {
    pub fn new() -> Self {
        Self::default()
    }

    #[inline(always)]
    fn put(&mut self, e: Entry) {
        let diff = e.time_ns ^ self.last;
        let level = if diff == 0 {
            0
        } else {
            (63 - diff.leading_zeros()) / DIGIT_BITS
        };
        let digit = (e.time_ns >> (level * DIGIT_BITS)) as usize & (DIGITS - 1);
        let level = level as usize;
        // SAFETY-free indexing: level < LEVELS and digit < DIGITS by construction.
        self.buckets[level * DIGITS + digit].push(e);
        self.occupied[level] |= 1 << digit;
        self.levels |= 1 << level;
    }

    /// Schedule `event` at `time_ns`. Times before the last event taken off
    /// would break the agenda's order; the engine never asks for one, and
    /// in a release build such a time is treated as that event's time.
    #[inline]
    pub fn schedule(&mut self, time_ns: u64, event: Event) {
        debug_assert!(time_ns >= self.last, "event scheduled in the past");
        let time_ns = time_ns.max(self.last);
        self.len += 1;
        self.put(Entry {
            time_ns,
            event: Packed::pack(event),
        });
    }

    /// Make the minimum entry (if any) the front of a level-0 bucket, and
    /// return that bucket's digit.
    #[inline]
    fn settle(&mut self) -> Option<usize> {
        if self.levels & 1 == 0 {
            if self.levels == 0 {
                return None;
            }
            self.redistribute();
        }
        Some(self.occupied[0].trailing_zeros() as usize)
    }

    /// Empty the lowest non-empty bucket (above level 0) into lower levels,
    /// relative to its minimum time.
    #[cold]
    #[inline(never)]
    fn redistribute(&mut self) {
        let level = self.levels.trailing_zeros() as usize;
        let digit = self.occupied[level].trailing_zeros() as usize;
        let b = level * DIGITS + digit;
        let mut bucket = std::mem::take(&mut self.buckets[b]);
        self.occupied[level] &= !(1 << digit);
        if self.occupied[level] == 0 {
            self.levels &= !(1 << level);
        }
        self.last = bucket.iter().map(|e| e.time_ns).min().unwrap_or(self.last);
        for &e in &bucket {
            self.put(e);
        }
        // Give the emptied vector back so its capacity is reused.
        bucket.clear();
        self.buckets[b] = bucket;
    }

    /// Time of the earliest event.
    #[inline]
    pub fn peek_time(&mut self) -> Option<u64> {
        let d = self.settle()?;
        Some(self.buckets[d][self.heads[d] as usize].time_ns)
    }

    #[inline]
    pub fn pop(&mut self) -> Option<(u64, Event)> {
        let d = self.settle()?;
        let bucket = &mut self.buckets[d];
        let head = self.heads[d] as usize;
        let e = bucket[head];
        if head + 1 == bucket.len() {
            bucket.clear();
            self.heads[d] = 0;
            self.occupied[0] &= !(1 << d);
            if self.occupied[0] == 0 {
                self.levels &= !1;
            }
        } else {
            self.heads[d] = head as u32 + 1;
        }
        // Later pushes at this time must land in this bucket: `last` moves
        // within level 0, which leaves every other entry's bucket unchanged.
        self.last = e.time_ns;
        self.len -= 1;
        Some((e.time_ns, e.event.unpack()))
    }

    /// The event the next [`Self::pop`] returns, when finding it costs
    /// nothing (it is already in level 0: no redistribution pending). For
    /// prefetching what that event will touch while this one runs.
    #[inline]
    pub fn peek_settled(&self) -> Option<Event> {
        let occupied = self.occupied[0];
        if occupied == 0 {
            return None;
        }
        let d = occupied.trailing_zeros() as usize;
        Some(self.buckets[d][self.heads[d] as usize].event.unpack())
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_time_then_insertion_order() {
        let mut q = EventQueue::new();
        q.schedule(20, Event::Sample);
        q.schedule(10, Event::FlowStart { flow: 1 });
        q.schedule(10, Event::FlowStart { flow: 2 });
        q.schedule(5, Event::TxDone { link: 0 });
        q.schedule(10, Event::FlowStart { flow: 3 });
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (5, Event::TxDone { link: 0 }),
                (10, Event::FlowStart { flow: 1 }),
                (10, Event::FlowStart { flow: 2 }),
                (10, Event::FlowStart { flow: 3 }),
                (20, Event::Sample),
            ]
        );
    }

    #[test]
    fn every_event_survives_packing() {
        let max = u32::MAX;
        for e in [
            Event::TxDone { link: max },
            Event::Arrive {
                pkt: max,
                hop: Hop::Link(0),
            },
            Event::Arrive {
                pkt: 3,
                hop: Hop::Link(Hop::MAX_INDEX),
            },
            Event::Arrive {
                pkt: 0,
                hop: Hop::Deliver { flow: Hop::MAX_INDEX },
            },
            Event::LinkWake { link: 4 },
            Event::MediumWake { medium: max },
            Event::FlowStart { flow: max },
            Event::SenderTimer { flow: 1 },
            Event::UserNext { flow: 2 },
            Event::ServerTimer { flow: 3 },
            Event::ReceiverTimer { flow: max },
            Event::Sample,
            Event::MeasureStart,
        ] {
            assert_eq!(Packed::pack(e).unpack(), e);
        }
    }

    #[test]
    fn matches_a_sorted_reference_under_random_interleaving() {
        // Random monotone pushes and pops, many equal times and far-future
        // entries: the order must be exactly (time, insertion order).
        let mut state = 0x1234_5678_9abc_def0u64;
        let mut rnd = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut q = EventQueue::new();
        let mut reference = std::collections::BTreeSet::new(); // (time, id)
        let mut id = 0u64;
        let mut now = 0u64;
        for _ in 0..50_000 {
            if rnd() % 3 != 0 || reference.is_empty() {
                let t = match rnd() % 5 {
                    0 => now,
                    1 => now + rnd() % 50,
                    2 => now + rnd() % 1_000_000_000,
                    // Equal future times scheduled from different instants:
                    // ties whose entries meet only after redistributions.
                    3 => (now / 1_000_000 + 1 + rnd() % 3) * 1_000_000,
                    _ => now + (rnd() % 1000) * 1_000_000_000,
                };
                q.schedule(t, Event::FlowStart { flow: id as u32 });
                reference.insert((t, id));
                id += 1;
            } else {
                assert_eq!(q.peek_time(), reference.first().map(|r| r.0));
                let (t, ev) = q.pop().unwrap();
                let (rt, rid) = reference.pop_first().unwrap();
                assert_eq!((t, ev), (rt, Event::FlowStart { flow: rid as u32 }));
                now = t;
            }
            assert_eq!(q.len(), reference.len());
        }
        while let Some((rt, rid)) = reference.pop_first() {
            assert_eq!(q.pop(), Some((rt, Event::FlowStart { flow: rid as u32 })));
        }
        assert_eq!(q.pop(), None);
    }
}
