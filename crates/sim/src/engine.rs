//! The event queue, ordered by (time, insertion sequence).
//!
//! Ties in time are broken by the order in which events were scheduled, so a
//! run never depends on heap internals. Events are small `Copy` values; the
//! heap never holds packets (they live in the packet slab).

/// What happens at an instant. Every variant names the component it concerns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A link's transmitter finished sending its current packet.
    TxDone { link: u32 },
    /// The packet at the head of a link's wire reaches the far node.
    Arrive { link: u32 },
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
    /// A TCP receiver's timer (delayed ACK).
    ReceiverTimer { flow: u32 },
    /// Take a measurement sample.
    Sample,
    /// The measurement window opens: snapshot the counters summaries start from.
    MeasureStart,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    /// (time, insertion sequence) packed as `time << 64 | seq`: one integer
    /// comparison orders by time, then by insertion.
    key: u128,
    event: Event,
}

// Every event goes through the radix heap and is moved on every
// redistribution: an `Event` variant with a payload (a packet, a float) would
// grow every entry. Growing these is a decision to measure (`latlab bench`),
// not an accident.
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<Event>() == 8);
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<Entry>() == 32);

const BUCKETS: usize = 129;

/// The simulator's agenda: a radix heap (Ahuja, Mehlhorn, Orlin & Tarjan
/// 1990) on the 128-bit key (time, insertion sequence).
///
/// A radix heap needs a monotone workload: nothing may be scheduled before
/// the last event taken off. A discrete-event simulator is exactly that
/// (events are only scheduled while handling one, never in its past), and
/// for it the radix heap beats a binary heap: a push is O(1) (the bucket is
/// the bit length of `key XOR last`), and a pop redistributes one bucket,
/// each entry moving down at most 128 times over its life.
#[derive(Debug)]
pub struct EventQueue {
    /// Bucket 0 holds entries whose key equals `last` (at most one: keys are
    /// unique); bucket i > 0 holds keys whose highest bit differing from
    /// `last` is bit i − 1.
    buckets: Vec<Vec<Entry>>,
    /// Bit i set when bucket i is non-empty.
    occupied: u128,
    occupied_top: bool,
    last: u128,
    len: usize,
    next_seq: u64,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue {
            buckets: (0..BUCKETS).map(|_| Vec::new()).collect(),
            occupied: 0,
            occupied_top: false,
            last: 0,
            len: 0,
            next_seq: 0,
        }
    }
}

impl EventQueue {
    pub fn new() -> Self {
        Self::default()
    }

    #[inline(always)]
    fn bucket_of(&self, key: u128) -> usize {
        (128 - (key ^ self.last).leading_zeros()) as usize
    }

    #[inline(always)]
    fn put(&mut self, e: Entry) {
        let b = self.bucket_of(e.key);
        self.buckets[b].push(e);
        if b < 128 {
            self.occupied |= 1 << b;
        } else {
            self.occupied_top = true;
        }
    }

    /// Schedule `event` at `time_ns`. Times before the last event taken off
    /// would break the agenda's order; the engine never asks for one, and
    /// in a release build such a time is treated as that event's time.
    pub fn schedule(&mut self, time_ns: u64, event: Event) {
        let last_time = (self.last >> 64) as u64;
        debug_assert!(time_ns >= last_time, "event scheduled in the past");
        let time_ns = time_ns.max(last_time);
        let key = ((time_ns as u128) << 64) | self.next_seq as u128;
        self.next_seq += 1;
        self.len += 1;
        self.put(Entry { key, event });
    }

    /// Make bucket 0 hold the minimum entry (if any).
    fn settle(&mut self) {
        if self.occupied & 1 != 0 || self.len == 0 {
            return;
        }
        let b = if self.occupied != 0 {
            self.occupied.trailing_zeros() as usize
        } else {
            128
        };
        let mut bucket = std::mem::take(&mut self.buckets[b]);
        if b < 128 {
            self.occupied &= !(1 << b);
        } else {
            self.occupied_top = false;
        }
        self.last = bucket.iter().map(|e| e.key).min().unwrap_or(self.last);
        for e in bucket.drain(..) {
            self.put(e);
        }
        // Give the emptied vector back so its capacity is reused.
        self.buckets[b] = bucket;
    }

    /// Time of the earliest event.
    #[inline]
    pub fn peek_time(&mut self) -> Option<u64> {
        self.settle();
        self.buckets[0].last().map(|e| (e.key >> 64) as u64)
    }

    pub fn pop(&mut self) -> Option<(u64, Event)> {
        self.settle();
        let e = self.buckets[0].pop()?;
        self.occupied &= !1;
        self.len -= 1;
        Some(((e.key >> 64) as u64, e.event))
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
                let t = match rnd() % 4 {
                    0 => now,
                    1 => now + rnd() % 50,
                    2 => now + rnd() % 1_000_000_000,
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
