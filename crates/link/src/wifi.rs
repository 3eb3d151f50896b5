//! The Wi-Fi access point's downlink: one FIFO shared by every station's
//! traffic (or one queue per station), served one frame at a time at the
//! destination station's rate, with link-layer retransmissions.
//!
//! Model (docs/models/links.md): a frame to station s takes its airtime at
//! s's rate (fixed or a trace); each attempt fails with the station's
//! `frame_error_prob` (higher as its signal weakens), so the number of
//! attempts is geometric, capped at `max_attempts` (then the frame is lost).
//! Before retry k the AP backs off a uniform number of slots in
//! [0, CW_k], CW doubling from `cw_min` to `cw_max` (802.11 DCF binary
//! exponential backoff). The AP sends nothing else meanwhile, so a weak
//! station's frames hold up every station queued behind them.
//!
//! Buffering ([`ApBuffer`]): by default all stations compete for the one
//! buffer, so one station's backlog can fill it and drop every other
//! station's packets. With per-station queues each station has its own
//! queue of the same discipline and limit (as Linux mac80211's per-station
//! TXQs and vendor firmware keep them), and the AP takes one frame per
//! transmission opportunity from the backlogged stations in turn (round
//! robin by frame, not by airtime: a slow station's frame still takes
//! longer). A station's backlog then fills only its own queue.

use crate::transmitter::Transmitter;
use crate::Departure;
use latlab_qdisc::{Dequeue, Enqueue, Qdisc, QdiscStats, QueuedPacket};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WifiConfig {
    pub slot_ns: u64,
    pub cw_min: u32,
    pub cw_max: u32,
    pub max_attempts: u32,
}

impl Default for WifiConfig {
    /// 802.11n/ac (OFDM): 9 µs slots, CW 15..1023, 7 attempts.
    fn default() -> Self {
        WifiConfig {
            slot_ns: 9_000,
            cw_min: 15,
            cw_max: 1023,
            max_attempts: 7,
        }
    }
}

impl WifiConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.max_attempts == 0 {
            return Err("max_attempts: expected at least 1".into());
        }
        if self.cw_min > self.cw_max {
            return Err(format!(
                "cw_min: expected cw_min ≤ cw_max, got {} > {}",
                self.cw_min, self.cw_max
            ));
        }
        Ok(())
    }
}

/// How the AP buffers its stations' packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ApBuffer {
    /// One queue for every station's packets, served in arrival order.
    #[default]
    Shared,
    /// One queue per station, served round robin, one frame per turn.
    PerStation,
}

/// The AP's queues: one shared, or one per station with the station to
/// serve next.
enum Queues<P> {
    Shared(Box<dyn Qdisc<Tagged<P>>>),
    PerStation {
        queues: Vec<Box<dyn Qdisc<Tagged<P>>>>,
        next: usize,
    },
}

/// A packet in the AP's queue, tagged with its station.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tagged<P> {
    pub pkt: P,
    pub station: u32,
}

impl<P: QueuedPacket> QueuedPacket for Tagged<P> {
    fn size_bytes(&self) -> u32 {
        self.pkt.size_bytes()
    }
    fn flow_id(&self) -> u32 {
        self.pkt.flow_id()
    }
    fn ecn(&self) -> latlab_qdisc::Ecn {
        self.pkt.ecn()
    }
    fn set_ce(&mut self) {
        self.pkt.set_ce();
    }
}

/// A station's share of the AP's queue (or its own queue), in the shape of
/// a queue's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StationStats {
    pub queue: QdiscStats,
    pub queued_pkts: u64,
    pub queued_bytes: u64,
    /// Frames sent more than once.
    pub retried_frames: u64,
    /// Attempts beyond the first.
    pub retries: u64,
    /// Frames given up after `max_attempts`.
    pub lost_frames: u64,
    /// Air time spent on this station's frames (retries included), ns.
    pub airtime_ns: u64,
}

struct Station {
    tx: Transmitter,
    frame_error_prob: f64,
    stats: StationStats,
}

/// Charge the marks a dequeue made to the station of the packet it
/// returned: CoDel and FQ-CoDel mark the packet they dequeue (RFC 8289
/// §5.5), so a mark is counted beside the drops of the station it was for.
fn count_marks<P>(stations: &mut [Station], t: &Tagged<P>, marked: u64) {
    stations[t.station as usize].stats.queue.marks_pkts += marked;
}

/// A Wi-Fi AP's downlink.
pub struct WifiAp<P> {
    cfg: WifiConfig,
    queues: Queues<P>,
    stations: Vec<Station>,
    rng: Pcg64Mcg,
    busy_until_ns: u64,
    /// Every backlogged queue answered "wait" (a non-work-conserving
    /// discipline, the edge pacer): nothing leaves before this time unless a
    /// new packet arrives. Without it a free AP with a held queue would ask
    /// to be polled again at once, for ever.
    held_until_ns: Option<u64>,
    scratch: Vec<Tagged<P>>,
}

impl<P: QueuedPacket> WifiAp<P> {
    /// An AP with its shared queue; retry draws come from a stream seeded by `seed`.
    pub fn new(cfg: WifiConfig, queue: Box<dyn Qdisc<Tagged<P>>>, seed: u64) -> Self {
        Self::with_queues(cfg, Queues::Shared(queue), seed)
    }

    /// An AP with one queue per station, each given with its station
    /// ([`WifiAp::add_station`]).
    pub fn per_station(cfg: WifiConfig, seed: u64) -> Self {
        let queues = Queues::PerStation {
            queues: Vec::new(),
            next: 0,
        };
        Self::with_queues(cfg, queues, seed)
    }

    fn with_queues(cfg: WifiConfig, queues: Queues<P>, seed: u64) -> Self {
        WifiAp {
            cfg,
            queues,
            stations: Vec::new(),
            rng: Pcg64Mcg::seed_from_u64(seed),
            busy_until_ns: 0,
            held_until_ns: None,
            scratch: Vec::new(),
        }
    }

    /// How the AP buffers.
    pub fn buffer(&self) -> ApBuffer {
        match self.queues {
            Queues::Shared(_) => ApBuffer::Shared,
            Queues::PerStation { .. } => ApBuffer::PerStation,
        }
    }

    /// Add a station (its rate and per-attempt frame error probability),
    /// with its own queue on a per-station AP (`None` on a shared one).
    pub fn add_station(
        &mut self,
        tx: Transmitter,
        frame_error_prob: f64,
        own_queue: Option<Box<dyn Qdisc<Tagged<P>>>>,
    ) -> Result<u32, String> {
        if !(0.0..1.0).contains(&frame_error_prob) {
            return Err(format!(
                "frame_error_prob: expected a probability in [0, 1), got {frame_error_prob}"
            ));
        }
        match (&mut self.queues, own_queue) {
            (Queues::Shared(_), None) => {}
            (Queues::PerStation { queues, .. }, Some(q)) => queues.push(q),
            (Queues::Shared(_), Some(_)) => {
                return Err("queue: a station of a shared-buffer AP has no queue of its own".into())
            }
            (Queues::PerStation { .. }, None) => {
                return Err("queue: a station of a per-station AP needs its own queue".into())
            }
        }
        self.stations.push(Station {
            tx,
            frame_error_prob,
            stats: StationStats::default(),
        });
        Ok(self.stations.len() as u32 - 1)
    }

    /// The queue discipline's short name ("droptail", "codel", …).
    pub fn queue_name(&self) -> &'static str {
        match &self.queues {
            Queues::Shared(q) => q.name(),
            // Every station's queue is of one discipline.
            Queues::PerStation { queues, .. } => queues.first().map_or("none", |q| q.name()),
        }
    }

    /// The AP's discipline marks ECT packets (see [`Qdisc::ecn_marking`]).
    pub fn ecn_marking(&self) -> bool {
        match &self.queues {
            Queues::Shared(q) => q.ecn_marking(),
            Queues::PerStation { queues, .. } => queues.first().is_some_and(|q| q.ecn_marking()),
        }
    }

    pub fn station_stats(&self, s: u32) -> &StationStats {
        &self.stations[s as usize].stats
    }

    pub fn station_tx_mut(&mut self, s: u32) -> &mut Transmitter {
        &mut self.stations[s as usize].tx
    }

    /// A packet for station `s` arrives.
    pub fn enqueue(&mut self, now_ns: u64, s: u32, pkt: P) -> Enqueue<P> {
        let bytes = pkt.size_bytes() as u64;
        let st = &mut self.stations[s as usize].stats;
        st.queue.arrivals_pkts += 1;
        st.queue.arrivals_bytes += bytes;
        // A new packet may be sendable before a held queue's release (a
        // pacer's fluid rate rises, or another station's queue is not held):
        // ask the disciplines again at the next poll.
        self.held_until_ns = None;
        st.queued_pkts += 1;
        st.queued_bytes += bytes;
        let queue = match &mut self.queues {
            Queues::Shared(q) => q,
            Queues::PerStation { queues, .. } => &mut queues[s as usize],
        };
        let marks_before = queue.stats().marks_pkts;
        let result = queue.enqueue(now_ns, Tagged { pkt, station: s });
        // A discipline that marks on arrival (RED, PIE) marks the arrival.
        st.queue.marks_pkts += queue.stats().marks_pkts - marks_before;
        match result {
            Enqueue::Queued => Enqueue::Queued,
            Enqueue::Dropped(t) => {
                // The dropped frame may be another one than the arrival,
                // of another station (FQ-CoDel drops the head of its
                // fattest queue): charge it to its own station. For a
                // tail drop this nets out to the arrival's drop.
                let victim = &mut self.stations[t.station as usize].stats;
                let b = t.pkt.size_bytes() as u64;
                victim.queued_pkts -= 1;
                victim.queued_bytes -= b;
                victim.queue.drops_enqueue_pkts += 1;
                victim.queue.drops_bytes += b;
                Enqueue::Dropped(t.pkt)
            }
        }
    }

    /// When the AP must be polled next: when it is free and its queues
    /// release a frame (at once unless they said they hold them), if
    /// anything waits.
    pub fn next_wakeup_ns(&self, now_ns: u64) -> Option<u64> {
        let backlog = match &self.queues {
            Queues::Shared(q) => q.len_pkts() > 0,
            Queues::PerStation { queues, .. } => queues.iter().any(|q| q.len_pkts() > 0),
        };
        let ready_ns = self.busy_until_ns.max(self.held_until_ns.unwrap_or(0));
        backlog.then_some(ready_ns.max(now_ns))
    }

    /// The next frame to send: the shared queue's head, or the head of the
    /// next backlogged station's queue in turn. Frames the discipline drops
    /// while dequeuing go to `self.scratch`.
    fn dequeue(&mut self, now_ns: u64) -> Option<(Tagged<P>, u64)> {
        self.held_until_ns = None;
        let (queues, next) = match &mut self.queues {
            Queues::Shared(q) => {
                let marks_before = q.stats().marks_pkts;
                let deq = q.dequeue(now_ns, &mut self.scratch);
                let marked = q.stats().marks_pkts - marks_before;
                return match deq {
                    Dequeue::Packet { pkt, sojourn_ns } => {
                        count_marks(&mut self.stations, &pkt, marked);
                        Some((pkt, sojourn_ns))
                    }
                    Dequeue::Empty => None,
                    Dequeue::Wait(release_ns) => {
                        self.held_until_ns = Some(release_ns);
                        None
                    }
                };
            }
            Queues::PerStation { queues, next } => (queues, next),
        };
        let n = queues.len();
        let mut wait_ns: Option<u64> = None;
        for k in 0..n {
            let s = (*next + k) % n;
            if queues[s].len_pkts() == 0 {
                continue;
            }
            let marks_before = queues[s].stats().marks_pkts;
            let deq = queues[s].dequeue(now_ns, &mut self.scratch);
            let marked = queues[s].stats().marks_pkts - marks_before;
            match deq {
                Dequeue::Packet { pkt, sojourn_ns } => {
                    count_marks(&mut self.stations, &pkt, marked);
                    *next = (s + 1) % n;
                    return Some((pkt, sojourn_ns));
                }
                Dequeue::Wait(t) => wait_ns = Some(wait_ns.map_or(t, |w| w.min(t))),
                Dequeue::Empty => {}
            }
        }
        self.held_until_ns = wait_ns;
        None
    }

    /// If the AP is free at `now_ns`, send the head frame (all its attempts):
    /// push its departure (`lost` if every attempt failed). Frames the
    /// discipline drops while dequeuing go to `dropped` with their station.
    pub fn poll(&mut self, now_ns: u64, out: &mut Vec<Departure<P>>, dropped: &mut Vec<(u32, P)>) {
        if self.busy_until_ns > now_ns {
            return;
        }
        let deq = self.dequeue(now_ns);
        for t in self.scratch.drain(..) {
            let st = &mut self.stations[t.station as usize].stats;
            let b = t.pkt.size_bytes() as u64;
            st.queue.drops_dequeue_pkts += 1;
            st.queue.drops_bytes += b;
            st.queued_pkts -= 1;
            st.queued_bytes -= b;
            dropped.push((t.station, t.pkt));
        }
        let Some((t, sojourn_ns)) = deq else {
            return;
        };
        let bytes = t.pkt.size_bytes();
        let s = t.station as usize;
        let cfg = self.cfg;
        let station = &mut self.stations[s];
        let st = &mut station.stats;
        st.queue.departures_pkts += 1;
        st.queue.departures_bytes += bytes as u64;
        st.queued_pkts -= 1;
        st.queued_bytes -= bytes as u64;
        let mut t_ns = now_ns;
        let mut cw = cfg.cw_min as u64;
        let mut delivered = false;
        let mut attempts = 0;
        while attempts < cfg.max_attempts {
            if attempts > 0 {
                t_ns += self.rng.random_range(0..=cw) * cfg.slot_ns;
                cw = (2 * cw + 1).min(cfg.cw_max as u64);
            }
            attempts += 1;
            let Some(end) = station.tx.transmit(t_ns, bytes) else {
                // The station's rate is zero for ever: the frame never leaves.
                t_ns = u64::MAX;
                break;
            };
            t_ns = end;
            if station.frame_error_prob == 0.0 || self.rng.random::<f64>() >= station.frame_error_prob {
                delivered = true;
                break;
            }
        }
        let st = &mut station.stats;
        if attempts > 1 {
            st.retried_frames += 1;
            st.retries += attempts as u64 - 1;
        }
        st.lost_frames += (!delivered) as u64;
        st.airtime_ns += t_ns.saturating_sub(now_ns);
        self.busy_until_ns = t_ns;
        out.push(Departure {
            dest: t.station,
            pkt: t.pkt,
            sojourn_ns,
            enqueued_ns: now_ns - sojourn_ns,
            leave_ns: t_ns,
            deliver_ns: t_ns,
            lost: !delivered,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rate::RateSource;
    use latlab_qdisc::{DropTail, Limit};

    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Pkt(u32);
    impl QueuedPacket for Pkt {
        fn size_bytes(&self) -> u32 {
            1500
        }
        fn flow_id(&self) -> u32 {
            self.0
        }
    }

    fn ap(p_weak: f64) -> WifiAp<Pkt> {
        let mut ap = WifiAp::new(
            WifiConfig::default(),
            Box::new(DropTail::new(Limit::Packets(200))),
            9,
        );
        let rate = |r| Transmitter::rate(RateSource::Constant { rate_bps: r }, 0);
        ap.add_station(rate(30_000_000), 0.0, None).unwrap();
        ap.add_station(rate(7_100_000), p_weak, None).unwrap();
        ap
    }

    /// Two stations at 10 Mbit/s, 20 packets of DropTail each (per
    /// station) or in all (shared).
    fn two_stations(buffer: ApBuffer) -> WifiAp<Pkt> {
        let queue = || -> Box<dyn Qdisc<Tagged<Pkt>>> { Box::new(DropTail::new(Limit::Packets(20))) };
        let mut ap = match buffer {
            ApBuffer::Shared => WifiAp::new(WifiConfig::default(), queue(), 9),
            ApBuffer::PerStation => WifiAp::per_station(WifiConfig::default(), 9),
        };
        for _ in 0..2 {
            let tx = Transmitter::rate(RateSource::Constant { rate_bps: 10_000_000 }, 0);
            let own = (buffer == ApBuffer::PerStation).then(queue);
            ap.add_station(tx, 0.0, own).unwrap();
        }
        ap
    }

    /// Station 0 floods the AP (a burst of 100 packets every millisecond,
    /// far above the 10 Mbit/s it gets) while station 1 sends one packet
    /// every 5 ms; returns station 1's drops and frames delivered.
    fn light_station_fate(ap: &mut WifiAp<Pkt>) -> (u64, u64) {
        let (mut out, mut dropped) = (Vec::new(), Vec::new());
        let mut delivered_1 = 0;
        for ms in 0..1000u64 {
            let now = ms * 1_000_000;
            while let Some(t) = ap.next_wakeup_ns(now).filter(|&t| t <= now) {
                ap.poll(t, &mut out, &mut dropped);
            }
            for _ in 0..100 {
                ap.enqueue(now, 0, Pkt(0));
            }
            if ms % 5 == 0 {
                ap.enqueue(now, 1, Pkt(1));
            }
            delivered_1 += out.drain(..).filter(|d| d.dest == 1 && !d.lost).count() as u64;
        }
        (ap.station_stats(1).queue.drops_enqueue_pkts, delivered_1)
    }

    #[test]
    fn a_backlogged_station_drops_the_others_packets_only_in_a_shared_buffer() {
        let (shared_drops, shared_delivered) = light_station_fate(&mut two_stations(ApBuffer::Shared));
        let (own_drops, own_delivered) = light_station_fate(&mut two_stations(ApBuffer::PerStation));
        // Shared: station 0's burst fills the 20 packets before station 1's
        // packet arrives each time, so nearly all of station 1's are dropped.
        assert!(
            shared_drops > 150,
            "shared buffer: station 1 lost {shared_drops} of 200"
        );
        assert!(
            shared_delivered < 50,
            "shared buffer: station 1 got {shared_delivered}"
        );
        // Per station: station 1's own queue is never full, and round robin
        // sends its packet within one of station 0's frames.
        assert_eq!(own_drops, 0, "per-station queues: station 1 lost packets");
        assert!(
            own_delivered >= 199,
            "per-station queues: station 1 got {own_delivered}"
        );
    }

    #[test]
    fn per_station_queues_take_turns_frame_by_frame() {
        let mut ap = two_stations(ApBuffer::PerStation);
        for _ in 0..5 {
            ap.enqueue(0, 0, Pkt(0));
        }
        ap.enqueue(0, 1, Pkt(1));
        ap.enqueue(0, 1, Pkt(1));
        let (mut out, mut dropped) = (Vec::new(), Vec::new());
        while let Some(t) = ap.next_wakeup_ns(0) {
            ap.poll(t, &mut out, &mut dropped);
        }
        let order: Vec<u32> = out.iter().map(|d| d.dest).collect();
        assert_eq!(order, [0, 1, 0, 1, 0, 0, 0]);
        // The shared FIFO sends in arrival order.
        let mut ap = two_stations(ApBuffer::Shared);
        for s in [0, 0, 1, 1] {
            ap.enqueue(0, s, Pkt(s));
        }
        out.clear();
        while let Some(t) = ap.next_wakeup_ns(0) {
            ap.poll(t, &mut out, &mut dropped);
        }
        assert_eq!(out.iter().map(|d| d.dest).collect::<Vec<_>>(), [0, 0, 1, 1]);
    }

    #[test]
    fn a_station_must_match_the_buffering() {
        let tx = || Transmitter::rate(RateSource::Constant { rate_bps: 1_000_000 }, 0);
        let mut shared = two_stations(ApBuffer::Shared);
        let own: Box<dyn Qdisc<Tagged<Pkt>>> = Box::new(DropTail::new(Limit::Packets(5)));
        assert!(shared.add_station(tx(), 0.0, Some(own)).is_err());
        let mut per = two_stations(ApBuffer::PerStation);
        assert!(per.add_station(tx(), 0.0, None).is_err());
    }

    /// Alternate frames for both stations; the mean time a strong-station frame spends in the AP.
    fn strong_delay(ap: &mut WifiAp<Pkt>) -> f64 {
        let (mut out, mut dropped) = (Vec::new(), Vec::new());
        let mut now = 0;
        let mut delays = Vec::new();
        for k in 0..2000u64 {
            now = now.max(k * 4_000_000);
            for s in 0..2 {
                ap.enqueue(now, s, Pkt(s));
            }
            while let Some(t) = ap.next_wakeup_ns(now) {
                if t > (k + 1) * 4_000_000 {
                    break;
                }
                ap.poll(t, &mut out, &mut dropped);
                now = t;
            }
            for d in out.drain(..) {
                if d.dest == 0 {
                    delays.push(d.sojourn_ns as f64);
                }
            }
        }
        delays.iter().sum::<f64>() / delays.len() as f64
    }

    #[test]
    fn a_weak_station_delays_the_strong_one() {
        let good = strong_delay(&mut ap(0.0));
        let weak = strong_delay(&mut ap(0.5));
        assert!(
            weak > 2.0 * good,
            "strong station's delay: {good} ns vs {weak} ns"
        );
    }

    #[test]
    fn retries_are_geometric() {
        let mut ap = ap(0.5);
        let (mut out, mut dropped) = (Vec::new(), Vec::new());
        for k in 0..4000u64 {
            ap.enqueue(k * 10_000_000, 1, Pkt(1));
            ap.poll(k * 10_000_000, &mut out, &mut dropped);
        }
        let st = ap.station_stats(1);
        // Mean attempts of a geometric(0.5) capped at 7 ≈ 1.98.
        let mean_attempts = 1.0 + st.retries as f64 / 4000.0;
        assert!((mean_attempts - 1.98).abs() < 0.06, "{mean_attempts}");
        assert!(st.lost_frames > 10 && st.lost_frames < 60, "{}", st.lost_frames);
    }

    /// An ECT(0) frame for a station (its flow id is the station).
    #[derive(Clone, Copy, Debug, PartialEq)]
    struct EctPkt {
        station: u32,
        ecn: latlab_qdisc::Ecn,
    }
    impl QueuedPacket for EctPkt {
        fn size_bytes(&self) -> u32 {
            1500
        }
        fn flow_id(&self) -> u32 {
            self.station
        }
        fn ecn(&self) -> latlab_qdisc::Ecn {
            self.ecn
        }
        fn set_ce(&mut self) {
            self.ecn = latlab_qdisc::Ecn::Ce;
        }
    }

    /// Two stations at 10 Mbit/s behind one shared marking queue, each
    /// offered 0.6 ECT(0) frames per ms for 3 s (1.4 times the air the two
    /// share), then the AP drained. Returns, per station, the marks the AP
    /// counted and the CE frames that came out of it (delivered or dropped).
    fn marks_by_station(queue: Box<dyn Qdisc<Tagged<EctPkt>>>) -> [(u64, u64); 2] {
        let mut ap = WifiAp::new(WifiConfig::default(), queue, 9);
        for _ in 0..2 {
            let tx = Transmitter::rate(RateSource::Constant { rate_bps: 10_000_000 }, 0);
            ap.add_station(tx, 0.0, None).unwrap();
        }
        let (mut out, mut dropped) = (Vec::new(), Vec::new());
        let mut ce_frames = [0u64; 2];
        let mut count_ce = |pkt: &EctPkt| {
            ce_frames[pkt.station as usize] += u64::from(pkt.ecn == latlab_qdisc::Ecn::Ce);
        };
        let mut now = 0;
        for k in 0..3000u64 {
            now = k * 1_000_000;
            for s in 0..2 {
                if k % 5 < 3 {
                    let pkt = EctPkt {
                        station: s,
                        ecn: latlab_qdisc::Ecn::Ect0,
                    };
                    if let Enqueue::Dropped(p) = ap.enqueue(now, s, pkt) {
                        count_ce(&p);
                    }
                }
            }
            while let Some(t) = ap.next_wakeup_ns(now).filter(|&t| t <= now) {
                ap.poll(t, &mut out, &mut dropped);
            }
        }
        while let Some(t) = ap.next_wakeup_ns(now) {
            now = t;
            ap.poll(t, &mut out, &mut dropped);
        }
        out.iter().for_each(|d| count_ce(&d.pkt));
        dropped.iter().for_each(|(_, p)| count_ce(p));
        [0, 1].map(|s| (ap.station_stats(s).queue.marks_pkts, ce_frames[s as usize]))
    }

    /// Marks are counted per station beside the drops, whether the
    /// discipline marks at dequeue (CoDel) or at arrival (RED).
    #[test]
    fn a_shared_marking_queue_counts_each_stations_marks() {
        use latlab_qdisc::{CoDel, CoDelParams, Red, RedParams};
        let codel = CoDel::new(CoDelParams {
            ecn: true,
            ..CoDelParams::default()
        });
        // Early marks while the average queue is between 5 and 900 frames.
        let red = Red::new(
            RedParams {
                limit: Limit::Packets(1000),
                min_th: 5.0,
                max_th: 900.0,
                max_p: 1.0,
                w_q: 0.02,
                gentle: false,
                byte_mode: false,
                mean_pkt_size_bytes: 1500,
                link_rate_bps: 10_000_000,
                wait: true,
                ecn: true,
            },
            3,
        );
        for (name, marks) in [
            ("codel", marks_by_station(Box::new(codel))),
            ("red", marks_by_station(Box::new(red))),
        ] {
            for (s, (counted, ce)) in marks.into_iter().enumerate() {
                assert!(ce > 20, "{name}: station {s} got {ce} CE frames");
                assert_eq!(counted, ce, "{name}: station {s}'s marks");
            }
        }
    }

    /// An AP whose queue is the edge pacer: a lone frame is held until its
    /// deadline, and the AP must say so rather than ask to be polled again
    /// at once (which made a simulation spin at one instant for ever).
    #[test]
    fn a_paced_queue_wakes_the_ap_at_its_release_time() {
        use latlab_qdisc::{EdgePacer, EdgePacerParams};
        let d_ns = 20_000_000;
        let pacer = EdgePacer::new(EdgePacerParams {
            delay_bound_ns: d_ns,
            link_rate_bps: 10_000_000,
            limit: Limit::Packets(200),
        });
        let mut ap = WifiAp::new(WifiConfig::default(), Box::new(pacer), 9);
        let rate = Transmitter::rate(RateSource::Constant { rate_bps: 10_000_000 }, 0);
        ap.add_station(rate, 0.0, None).unwrap();
        let (mut out, mut dropped) = (Vec::new(), Vec::new());
        ap.enqueue(0, 0, Pkt(0));
        assert_eq!(ap.next_wakeup_ns(0), Some(0));
        ap.poll(0, &mut out, &mut dropped);
        assert!(out.is_empty(), "a lone paced frame left at once");
        let release = ap.next_wakeup_ns(0).expect("a frame waits");
        assert!(release > 0 && release <= d_ns, "wake-up at {release} ns");
        ap.poll(release, &mut out, &mut dropped);
        assert_eq!(out.len(), 1, "the frame leaves at its release time");
        assert_eq!(out[0].sojourn_ns, release);
        assert_eq!(ap.next_wakeup_ns(release), None);
    }
}
