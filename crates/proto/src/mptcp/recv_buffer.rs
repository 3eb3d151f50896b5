//! The connection-level receive buffer (RFC 8684 §3.3.4): data from all
//! subflows, delivered to the application in data-sequence order.
//!
//! The application reads in-order data at once (as the TCP receiver's
//! does), so the buffer holds what waits behind a hole: data that arrived
//! on a fast subflow while an earlier data byte is still on a slow one. That
//! occupancy is the head-of-line blocking the buffer measures: bytes held,
//! the time during which anything is held, and the byte·time integral.
//!
//! The receive window is `capacity_bytes` relative to the Data ACK (RFC 8684
//! §3.3.4: the right edge is DATA_ACK + window), so everything in the window
//! always fits. A segment reaching beyond the right edge does not fit and
//! is dropped before its subflow's receiver sees it (RFC 8684 §3.3.4 / RFC
//! 793: data outside the window is discarded); the subflow then recovers it
//! as a loss.

/// What became of data offered to the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// Stored or delivered; `new_bytes` were not held before.
    Accepted { new_bytes: u64 },
    /// Entirely below the Data ACK or already held.
    Duplicate,
    /// Beyond the window: discarded.
    Dropped,
}

/// Counters of the data-level receive buffer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecvBufferStats {
    /// Bytes delivered in data-sequence order to the application.
    pub bytes_delivered: u64,
    /// Segments (and their bytes) discarded because they did not fit.
    pub segments_dropped: u64,
    pub bytes_dropped: u64,
    /// Bytes that arrived again (on another subflow, or retransmitted).
    pub duplicate_bytes: u64,
    /// Largest number of bytes held out of order.
    pub max_occupancy_bytes: u64,
    /// Time during which some data waited behind a hole.
    pub blocked_ns: u64,
    /// ∫ occupancy dt, in byte·ns (divide by elapsed time for the mean).
    pub occupancy_byte_ns: u128,
}

/// The data-level reassembly buffer.
#[derive(Clone, Debug)]
pub struct RecvBuffer {
    capacity_bytes: u64,
    /// Next data sequence number expected: the Data ACK.
    data_ack: u64,
    /// Out-of-order data: sorted, disjoint, non-adjacent `[start, end)`.
    ooo: Vec<(u64, u64)>,
    held_bytes: u64,
    last_change_ns: u64,
    stats: RecvBufferStats,
}

impl RecvBuffer {
    pub fn new(capacity_bytes: u64) -> Self {
        RecvBuffer {
            capacity_bytes,
            data_ack: 0,
            ooo: Vec::new(),
            held_bytes: 0,
            last_change_ns: 0,
            stats: RecvBufferStats::default(),
        }
    }

    pub fn capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }

    /// The Data ACK: the next data sequence number expected.
    pub fn data_ack(&self) -> u64 {
        self.data_ack
    }

    /// The window to advertise on every subflow, relative to the Data ACK.
    pub fn window_bytes(&self) -> u64 {
        self.capacity_bytes
    }

    /// Bytes held out of order now.
    pub fn occupancy_bytes(&self) -> u64 {
        self.held_bytes
    }

    /// Counters, with the blocked time and occupancy integral brought up
    /// to `now_ns`.
    pub fn stats(&self, now_ns: u64) -> RecvBufferStats {
        let mut s = self.stats;
        let dt = now_ns.saturating_sub(self.last_change_ns);
        if self.held_bytes > 0 {
            s.blocked_ns += dt;
        }
        s.occupancy_byte_ns += self.held_bytes as u128 * dt as u128;
        s
    }

    fn advance_clock(&mut self, now_ns: u64) {
        let now_ns = now_ns.max(self.last_change_ns);
        // Nothing held: both integrals grow by zero.
        if self.held_bytes > 0 {
            let dt = now_ns - self.last_change_ns;
            self.stats.blocked_ns += dt;
            self.stats.occupancy_byte_ns += self.held_bytes as u128 * dt as u128;
        }
        self.last_change_ns = now_ns;
    }

    /// Data bytes `[data_seq, data_seq + len)` arrived on some subflow.
    #[inline]
    pub fn offer(&mut self, now_ns: u64, data_seq: u64, len: u64) -> Arrival {
        let Some(end) = data_seq.checked_add(len) else {
            return Arrival::Dropped;
        };
        // The usual arrival: the next data in order, nothing held, within
        // the window. The general path below gives the same result (no
        // duplicate bytes, every byte delivered, the clock moved without
        // adding to integrals that grow by zero while nothing is held).
        if data_seq == self.data_ack && self.held_bytes == 0 && len > 0 && len <= self.capacity_bytes {
            self.last_change_ns = now_ns.max(self.last_change_ns);
            self.stats.bytes_delivered += len;
            self.data_ack = end;
            return Arrival::Accepted { new_bytes: len };
        }
        if end <= self.data_ack || len == 0 {
            self.stats.duplicate_bytes += len;
            return Arrival::Duplicate;
        }
        if end > self.data_ack.saturating_add(self.capacity_bytes) {
            self.stats.segments_dropped += 1;
            self.stats.bytes_dropped += len;
            return Arrival::Dropped;
        }
        self.advance_clock(now_ns);
        let start = data_seq.max(self.data_ack);
        if start == self.data_ack && self.ooo.first().is_none_or(|&(s, _)| end < s) {
            // In order and clear of everything held: delivered at once
            // (what `insert` then `deliver` do, without touching `ooo`).
            self.stats.duplicate_bytes += len - (end - start);
            self.stats.bytes_delivered += end - start;
            self.data_ack = end;
            self.stats.max_occupancy_bytes = self.stats.max_occupancy_bytes.max(self.held_bytes);
            return Arrival::Accepted {
                new_bytes: end - start,
            };
        }
        let new_bytes = self.insert(start, end);
        self.stats.duplicate_bytes += len - new_bytes;
        if new_bytes == 0 {
            return Arrival::Duplicate;
        }
        self.deliver();
        self.stats.max_occupancy_bytes = self.stats.max_occupancy_bytes.max(self.held_bytes);
        Arrival::Accepted { new_bytes }
    }

    /// Insert `[start, end)` (start ≥ data_ack); returns the bytes not held
    /// before.
    fn insert(&mut self, start: u64, end: u64) -> u64 {
        // Data from the faster subflow runs ahead of a hole: it usually
        // continues the last range held, or starts a new one past it. The
        // general case below gives the same result, after a search.
        if let Some(last) = self.ooo.last_mut() {
            if start > last.1 {
                self.ooo.push((start, end));
                self.held_bytes += end - start;
                return end - start;
            }
            if start == last.1 {
                last.1 = end;
                self.held_bytes += end - start;
                return end - start;
            }
        }
        let i = self.ooo.partition_point(|&(_, e)| e < start);
        let mut j = i;
        let mut covered = 0;
        while j < self.ooo.len() && self.ooo[j].0 <= end {
            let (s, e) = self.ooo[j];
            covered += e.min(end).saturating_sub(s.max(start));
            j += 1;
        }
        let new_bytes = (end - start) - covered;
        if i == j {
            self.ooo.insert(i, (start, end));
        } else {
            let merged = (start.min(self.ooo[i].0), end.max(self.ooo[j - 1].1));
            self.ooo[i] = merged;
            self.ooo.drain(i + 1..j);
        }
        self.held_bytes += new_bytes;
        new_bytes
    }

    /// Hand the in-order prefix to the application.
    fn deliver(&mut self) {
        if let Some(&(s, e)) = self.ooo.first() {
            if s <= self.data_ack {
                self.ooo.remove(0);
                self.held_bytes -= e - s;
                self.stats.bytes_delivered += e - self.data_ack;
                self.data_ack = e;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reassembles_in_data_order_and_measures_blocking() {
        let mut b = RecvBuffer::new(10_000);
        assert_eq!(b.offer(0, 0, 1_000), Arrival::Accepted { new_bytes: 1_000 });
        assert_eq!(b.data_ack(), 1_000);
        // 1000..2000 is on a slow subflow; 2000..4000 arrives first.
        assert_eq!(b.offer(10, 2_000, 1_000), Arrival::Accepted { new_bytes: 1_000 });
        assert_eq!(b.offer(20, 3_000, 1_000), Arrival::Accepted { new_bytes: 1_000 });
        assert_eq!(b.data_ack(), 1_000);
        assert_eq!(b.occupancy_bytes(), 2_000);
        // The hole fills at t = 50: everything is delivered at once.
        assert_eq!(b.offer(50, 1_000, 1_000), Arrival::Accepted { new_bytes: 1_000 });
        assert_eq!(b.data_ack(), 4_000);
        assert_eq!(b.occupancy_bytes(), 0);
        let s = b.stats(100);
        assert_eq!(s.bytes_delivered, 4_000);
        assert_eq!(s.max_occupancy_bytes, 2_000);
        assert_eq!(s.blocked_ns, 40, "held from t=10 to t=50");
        assert_eq!(s.occupancy_byte_ns, 1_000 * 10 + 2_000 * 30);
        // Old and repeated data.
        assert_eq!(b.offer(110, 0, 1_000), Arrival::Duplicate);
        assert_eq!(b.offer(120, 5_000, 1_000), Arrival::Accepted { new_bytes: 1_000 });
        assert_eq!(b.offer(130, 4_500, 1_000), Arrival::Accepted { new_bytes: 500 });
        assert_eq!(b.offer(140, 4_600, 100), Arrival::Duplicate);
        assert_eq!(b.occupancy_bytes(), 1_500);
    }

    #[test]
    fn data_beyond_the_window_is_dropped() {
        let mut b = RecvBuffer::new(3_000);
        assert_eq!(b.offer(0, 1_000, 1_000), Arrival::Accepted { new_bytes: 1_000 });
        assert_eq!(b.offer(0, 2_000, 1_000), Arrival::Accepted { new_bytes: 1_000 });
        assert_eq!(b.offer(0, 3_000, 1_000), Arrival::Dropped);
        let s = b.stats(0);
        assert_eq!((s.segments_dropped, s.bytes_dropped), (1, 1_000));
        // The head always fits: the buffer cannot deadlock.
        assert_eq!(b.offer(5, 0, 1_000), Arrival::Accepted { new_bytes: 1_000 });
        assert_eq!(b.data_ack(), 3_000);
        assert_eq!(b.offer(6, 3_000, 1_000), Arrival::Accepted { new_bytes: 1_000 });
    }
}
