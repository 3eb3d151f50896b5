//! A tiny deterministic "wire" for the TCP tests: one sender, one receiver,
//! a fixed-rate FIFO link with fixed propagation delay in each direction,
//! optional drop-tail buffer and scripted drops.

use std::collections::VecDeque;

use super::{FixedRwnd, RwndController, TcpConfig, TcpReceiver, TcpSender};
use crate::cc::{slow_start, AckSample, CcState, CongestionControl, CongestionEvent};
use crate::segment::Segment;
use crate::TimeNs;

/// RFC 5681 Reno window growth and halving, for tests independent of the
/// production controllers.
pub struct TestReno;

impl CongestionControl for TestReno {
    fn name(&self) -> &'static str {
        "test-reno"
    }

    fn on_ack(&mut self, s: &mut CcState, a: &AckSample) {
        if s.in_slow_start() {
            slow_start(s, a.acked_bytes);
        } else {
            s.cwnd_bytes += (s.mss_bytes * s.mss_bytes / s.cwnd_bytes).max(1);
        }
    }

    fn ssthresh_on_loss(&mut self, s: &CcState, _e: CongestionEvent, flight: u64, _now: TimeNs) -> u64 {
        (flight / 2).max(2 * s.mss_bytes)
    }
}

/// One direction: serialization at `rate_bps`, then `prop_ns` of delay.
pub struct Link {
    pub rate_bps: u64,
    pub prop_ns: u64,
    /// Drop-tail limit on packets waiting or in serialization.
    pub limit_pkts: Option<usize>,
    busy_until: u64,
    /// (serialization end, arrival, segment), FIFO.
    inflight: VecDeque<(u64, u64, Segment)>,
    pub drops: u64,
}

impl Link {
    pub fn new(rate_bps: u64, prop_ns: u64) -> Self {
        Link {
            rate_bps,
            prop_ns,
            limit_pkts: None,
            busy_until: 0,
            inflight: VecDeque::new(),
            drops: 0,
        }
    }

    pub fn tx_ns(&self, wire_bytes: u32) -> u64 {
        (wire_bytes as u64 * 8 * 1_000_000_000).div_ceil(self.rate_bps)
    }

    pub fn send(&mut self, now: u64, seg: Segment, wire_bytes: u32) {
        if let Some(limit) = self.limit_pkts {
            // Serialization ends are increasing: binary search.
            let queued = self.inflight.len() - self.inflight.partition_point(|p| p.0 <= now);
            if queued >= limit {
                self.drops += 1;
                return;
            }
        }
        let start = self.busy_until.max(now);
        let finish = start + self.tx_ns(wire_bytes);
        self.busy_until = finish;
        self.inflight.push_back((finish, finish + self.prop_ns, seg));
    }

    pub fn next_arrival(&self) -> Option<u64> {
        self.inflight.front().map(|p| p.1)
    }

    pub fn pop_due(&mut self, now: u64) -> Option<Segment> {
        if self.inflight.front()?.1 <= now {
            self.inflight.pop_front().map(|p| p.2)
        } else {
            None
        }
    }
}

pub type DropFn = Box<dyn FnMut(u64, &Segment) -> bool>;

/// A sender event worth checking in tests.
#[derive(Clone, Copy, Debug)]
pub struct RecoveryEvent {
    pub t: u64,
    pub entering: bool,
    pub cwnd_before: u64,
    pub flight_before: u64,
    pub cwnd_after: u64,
    pub ssthresh_after: u64,
    /// RFC 5681 FlightSize after the event.
    pub flight_after: u64,
}

pub struct Harness {
    pub now: u64,
    pub cfg: TcpConfig,
    pub snd: TcpSender,
    pub rcv: TcpReceiver,
    pub fwd: Link,
    pub rev: Link,
    pub drop_fwd: DropFn,
    pub drop_rev: DropFn,
    /// Every segment the sender emitted (dropped ones included).
    pub sent: Vec<(u64, Segment)>,
    /// Every segment the receiver emitted.
    pub acks: Vec<(u64, Segment)>,
    pub recovery: Vec<RecoveryEvent>,
    /// (time, cwnd after) for every RTO.
    pub timeouts: Vec<(u64, u64, u64)>,
    pub steps: u64,
    pub max_steps: u64,
}

impl Harness {
    pub fn new(cfg: TcpConfig, app_bytes: Option<u64>, rate_bps: u64, one_way_ns: u64) -> Self {
        Self::with(
            cfg.clone(),
            Box::new(TestReno),
            Box::new(FixedRwnd(cfg.rwnd_bytes)),
            app_bytes,
            rate_bps,
            one_way_ns,
        )
    }

    pub fn with(
        cfg: TcpConfig,
        cc: Box<dyn CongestionControl>,
        rwnd: Box<dyn RwndController>,
        app_bytes: Option<u64>,
        rate_bps: u64,
        one_way_ns: u64,
    ) -> Self {
        Harness {
            now: 0,
            snd: TcpSender::new(cfg.clone(), cc, app_bytes),
            rcv: TcpReceiver::new(cfg.clone(), rwnd),
            cfg,
            fwd: Link::new(rate_bps, one_way_ns),
            rev: Link::new(rate_bps, one_way_ns),
            drop_fwd: Box::new(|_, _| false),
            drop_rev: Box::new(|_, _| false),
            sent: Vec::new(),
            acks: Vec::new(),
            recovery: Vec::new(),
            timeouts: Vec::new(),
            steps: 0,
            max_steps: 50_000_000,
        }
    }

    pub fn start(&mut self) {
        self.snd.connect(self.now);
        self.flush_snd();
    }

    /// Let the sender send what it can now (after an external change).
    pub fn poll_sender(&mut self) {
        self.flush_snd();
    }

    fn flush_snd(&mut self) {
        while let Some(s) = self.snd.poll_transmit(self.now) {
            self.sent.push((self.now, s));
            if !(self.drop_fwd)(self.now, &s) {
                let w = self.cfg.wire_bytes(&s);
                self.fwd.send(self.now, s, w);
            }
        }
    }

    fn flush_rcv(&mut self) {
        while let Some(s) = self.rcv.poll_transmit(self.now) {
            self.acks.push((self.now, s));
            if !(self.drop_rev)(self.now, &s) {
                let w = self.cfg.wire_bytes(&s);
                self.rev.send(self.now, s, w);
            }
        }
    }

    fn sender_event(&mut self, f: impl FnOnce(&mut TcpSender, u64)) {
        let was = self.snd.in_recovery();
        let cwnd_before = self.snd.cwnd_bytes();
        let flight_before = self.snd.snd_max() - self.snd.snd_una();
        let timeouts = self.snd.stats().timeouts;
        f(&mut self.snd, self.now);
        if self.snd.in_recovery() != was {
            self.recovery.push(RecoveryEvent {
                t: self.now,
                entering: !was,
                cwnd_before,
                flight_before,
                cwnd_after: self.snd.cwnd_bytes(),
                ssthresh_after: self.snd.ssthresh_bytes(),
                flight_after: self.snd.snd_max() - self.snd.snd_una(),
            });
        }
        if self.snd.stats().timeouts != timeouts {
            self.timeouts
                .push((self.now, self.snd.cwnd_bytes(), self.snd.ssthresh_bytes()));
        }
        self.flush_snd();
    }

    /// Advance to the next event and process everything due then.
    pub fn step(&mut self) -> bool {
        self.steps += 1;
        assert!(self.steps < self.max_steps, "harness: too many steps");
        let t = [
            self.fwd.next_arrival(),
            self.rev.next_arrival(),
            self.snd.next_timeout(),
            self.rcv.next_timeout(),
        ]
        .into_iter()
        .flatten()
        .min();
        let Some(t) = t else { return false };
        self.now = self.now.max(t);
        while let Some(seg) = self.fwd.pop_due(self.now) {
            self.rcv.on_segment(self.now, &seg);
            self.flush_rcv();
        }
        while let Some(seg) = self.rev.pop_due(self.now) {
            self.sender_event(|s, now| s.on_segment(now, &seg));
        }
        if self.snd.next_timeout().is_some_and(|d| d <= self.now) {
            self.sender_event(|s, now| s.on_timeout(now));
        }
        if self.rcv.next_timeout().is_some_and(|d| d <= self.now) {
            let now = self.now;
            self.rcv.on_timeout(now);
            self.flush_rcv();
        }
        true
    }

    /// Run until the sender completes (finite flows) or `limit_ns` passes.
    pub fn run_until_complete(&mut self, limit_ns: u64) -> Option<u64> {
        while !self.snd.is_complete() && self.now <= limit_ns {
            if !self.step() {
                break;
            }
        }
        self.snd.completed_at_ns()
    }

    /// Process every event up to and including `until_ns`.
    pub fn run_until(&mut self, until_ns: u64) {
        loop {
            let t = [
                self.fwd.next_arrival(),
                self.rev.next_arrival(),
                self.snd.next_timeout(),
                self.rcv.next_timeout(),
            ]
            .into_iter()
            .flatten()
            .min();
            match t {
                Some(t) if t <= until_ns => {
                    self.step();
                }
                _ => break,
            }
        }
        self.now = self.now.max(until_ns);
    }

    /// Data segments (payload > 0) the sender emitted.
    pub fn data_sent(&self) -> impl Iterator<Item = &(u64, Segment)> {
        self.sent.iter().filter(|(_, s)| s.payload_bytes > 0)
    }
}

/// Deterministic xorshift64* for the fuzz tests.
pub struct XorShift(pub u64);

impl XorShift {
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}
