//! The event queue: a binary min-heap keyed by (time, insertion sequence).
//!
//! Ties in time are broken by the order in which events were scheduled, so a
//! run never depends on heap internals. Events are small `Copy` values; the
//! heap never holds packets (they live in the packet slab).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// What happens at an instant. Every variant names the component it concerns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A link's transmitter finished sending its current packet.
    TxDone { link: u32 },
    /// The packet at the head of a link's wire reaches the far node.
    Arrive { link: u32 },
    /// A non-work-conserving queue asked to be polled again.
    LinkWake { link: u32 },
    /// A flow opens its connection.
    FlowStart { flow: u32 },
    /// A TCP sender's timer (RTO or pacing release).
    SenderTimer { flow: u32 },
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
    seq: u64,
    event: Event,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.time_ns == other.time_ns && self.seq == other.seq
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    /// Reversed so that `BinaryHeap` (a max-heap) pops the earliest event.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.time_ns, other.seq).cmp(&(self.time_ns, self.seq))
    }
}

/// The simulator's agenda.
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Entry>,
    next_seq: u64,
}

impl EventQueue {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn schedule(&mut self, time_ns: u64, event: Event) {
        self.heap.push(Entry {
            time_ns,
            seq: self.next_seq,
            event,
        });
        self.next_seq += 1;
    }

    /// Time of the earliest event.
    pub fn peek_time(&self) -> Option<u64> {
        self.heap.peek().map(|e| e.time_ns)
    }

    pub fn pop(&mut self) -> Option<(u64, Event)> {
        self.heap.pop().map(|e| (e.time_ns, e.event))
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
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
}
