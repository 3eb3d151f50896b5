//! The Wi-Fi access point's downlink: one FIFO shared by every station's
//! traffic, served one frame at a time at the destination station's rate,
//! with link-layer retransmissions.
//!
//! Model (docs/models/links.md): a frame to station s takes its airtime at
//! s's rate (fixed or a trace); each attempt fails with the station's
//! `frame_error_prob` (higher as its signal weakens), so the number of
//! attempts is geometric, capped at `max_attempts` (then the frame is lost).
//! Before retry k the AP backs off a uniform number of slots in
//! [0, CW_k], CW doubling from `cw_min` to `cw_max` (802.11 DCF binary
//! exponential backoff). The AP sends nothing else meanwhile, so a weak
//! station's frames hold up every station queued behind them, and all
//! stations compete for the one buffer.

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

/// A packet in the shared queue, tagged with its station.
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
}

/// Per-station share of the shared queue, in the shape of a queue's counters.
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

/// A Wi-Fi AP's downlink.
pub struct WifiAp<P> {
    cfg: WifiConfig,
    queue: Box<dyn Qdisc<Tagged<P>>>,
    stations: Vec<Station>,
    rng: Pcg64Mcg,
    busy_until_ns: u64,
    scratch: Vec<Tagged<P>>,
}

impl<P: QueuedPacket> WifiAp<P> {
    /// An AP with its shared queue; retry draws come from a stream seeded by `seed`.
    pub fn new(cfg: WifiConfig, queue: Box<dyn Qdisc<Tagged<P>>>, seed: u64) -> Self {
        WifiAp {
            cfg,
            queue,
            stations: Vec::new(),
            rng: Pcg64Mcg::seed_from_u64(seed),
            busy_until_ns: 0,
            scratch: Vec::new(),
        }
    }

    /// Add a station (its rate and per-attempt frame error probability).
    pub fn add_station(&mut self, tx: Transmitter, frame_error_prob: f64) -> Result<u32, String> {
        if !(0.0..1.0).contains(&frame_error_prob) {
            return Err(format!(
                "frame_error_prob: expected a probability in [0, 1), got {frame_error_prob}"
            ));
        }
        self.stations.push(Station {
            tx,
            frame_error_prob,
            stats: StationStats::default(),
        });
        Ok(self.stations.len() as u32 - 1)
    }

    pub fn queue(&self) -> &dyn Qdisc<Tagged<P>> {
        self.queue.as_ref()
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
        st.queued_pkts += 1;
        st.queued_bytes += bytes;
        match self.queue.enqueue(now_ns, Tagged { pkt, station: s }) {
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

    /// When the AP must be polled next: when it is free, if anything waits.
    pub fn next_wakeup_ns(&self, now_ns: u64) -> Option<u64> {
        (self.queue.len_pkts() > 0).then_some(self.busy_until_ns.max(now_ns))
    }

    /// If the AP is free at `now_ns`, send the head frame (all its attempts):
    /// push its departure (`lost` if every attempt failed). Frames the
    /// discipline drops while dequeuing go to `dropped` with their station.
    pub fn poll(&mut self, now_ns: u64, out: &mut Vec<Departure<P>>, dropped: &mut Vec<(u32, P)>) {
        if self.busy_until_ns > now_ns {
            return;
        }
        let deq = self.queue.dequeue(now_ns, &mut self.scratch);
        for t in self.scratch.drain(..) {
            let st = &mut self.stations[t.station as usize].stats;
            let b = t.pkt.size_bytes() as u64;
            st.queue.drops_dequeue_pkts += 1;
            st.queue.drops_bytes += b;
            st.queued_pkts -= 1;
            st.queued_bytes -= b;
            dropped.push((t.station, t.pkt));
        }
        let Dequeue::Packet { pkt: t, sojourn_ns } = deq else {
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
        ap.add_station(rate(30_000_000), 0.0).unwrap();
        ap.add_station(rate(7_100_000), p_weak).unwrap();
        ap
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
}
