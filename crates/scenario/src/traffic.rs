//! Traffic that is not a protocol: open-loop UDP sources and the draws of
//! closed-loop users (docs/models/workloads.md).

use rand::Rng;
use rand_distr::{Distribution, Exp, Pareto};
use rand_pcg::Pcg64Mcg;

/// How a UDP source emits packets.
#[derive(Debug, Clone)]
pub enum UdpPattern {
    /// Constant bit rate: packets of `size_bytes` every size/rate.
    Cbr { rate_bps: f64, size_bytes: u32 },
    /// Poisson arrivals at mean `rate_bps`, sizes uniform in [min, max].
    Poisson {
        rate_bps: f64,
        min_bytes: u32,
        max_bytes: u32,
    },
    /// Long-range dependent: bytes per slot given (e.g. fGn, Norros model);
    /// each slot's packets are spread evenly over the slot.
    PerSlot {
        bytes_per_slot: Vec<u64>,
        slot_ns: u64,
        min_bytes: u32,
        max_bytes: u32,
    },
}

impl UdpPattern {
    fn mean_bytes(&self) -> f64 {
        match *self {
            UdpPattern::Cbr { size_bytes, .. } => size_bytes as f64,
            UdpPattern::Poisson {
                min_bytes, max_bytes, ..
            }
            | UdpPattern::PerSlot {
                min_bytes, max_bytes, ..
            } => (min_bytes as f64 + max_bytes as f64) / 2.0,
        }
    }
}

/// An open-loop UDP source. It never reacts to the network.
#[derive(Debug, Clone)]
pub struct UdpSource {
    pattern: UdpPattern,
    rng: Pcg64Mcg,
    start_ns: u64,
    next_ns: Option<u64>,
    /// CBR: packets sent so far (send times are start + k·gap, no drift).
    /// PerSlot: the current slot and the packets left in it.
    count: u64,
    slot: usize,
    slot_pkts_left: u64,
    slot_gap_ns: u64,
    /// PerSlot: bytes owed to the next slots (fractional packets carry over).
    slot_carry_bytes: f64,
    pub seq: u64,
    pub sent_pkts: u64,
    pub sent_bytes: u64,
}

impl UdpSource {
    pub fn new(pattern: UdpPattern, rng: Pcg64Mcg, start_ns: u64) -> Self {
        UdpSource {
            pattern,
            rng,
            start_ns,
            next_ns: None,
            count: 0,
            slot: 0,
            slot_pkts_left: 0,
            slot_gap_ns: 0,
            slot_carry_bytes: 0.0,
            seq: 0,
            sent_pkts: 0,
            sent_bytes: 0,
        }
    }

    /// Begin emitting at `now_ns` (the flow's start).
    pub fn start(&mut self, now_ns: u64) {
        self.start_ns = now_ns;
        self.next_ns = Some(now_ns);
        if let UdpPattern::PerSlot { .. } = self.pattern {
            self.slot = 0;
            self.open_slot();
        }
    }

    /// When the next packet is due.
    pub fn next_ns(&self) -> Option<u64> {
        self.next_ns
    }

    /// The size of a packet due now, if any; advances the schedule.
    pub fn poll(&mut self, now_ns: u64) -> Option<u32> {
        let due = self.next_ns?;
        if due > now_ns {
            return None;
        }
        let size = match self.pattern {
            UdpPattern::Cbr { rate_bps, size_bytes } => {
                self.count += 1;
                let gap_s = size_bytes as f64 * 8.0 / rate_bps;
                self.next_ns = Some(self.start_ns + (self.count as f64 * gap_s * 1e9).round() as u64);
                size_bytes
            }
            UdpPattern::Poisson {
                rate_bps,
                min_bytes,
                max_bytes,
            } => {
                let mean_gap_s = self.pattern.mean_bytes() * 8.0 / rate_bps;
                let gap_s = Exp::new(1.0 / mean_gap_s)
                    .map(|e| e.sample(&mut self.rng))
                    .unwrap_or(mean_gap_s);
                self.next_ns = Some(due + (gap_s * 1e9).round().max(1.0) as u64);
                self.rng.random_range(min_bytes..=max_bytes)
            }
            UdpPattern::PerSlot {
                min_bytes, max_bytes, ..
            } => {
                let size = self.rng.random_range(min_bytes..=max_bytes);
                self.slot_pkts_left -= 1;
                if self.slot_pkts_left > 0 {
                    self.next_ns = Some(due + self.slot_gap_ns);
                } else {
                    self.slot += 1;
                    self.open_slot();
                }
                size
            }
        };
        self.seq += 1;
        self.sent_pkts += 1;
        self.sent_bytes += size as u64;
        Some(size)
    }

    /// PerSlot: move to the first slot from `self.slot` that has a packet.
    fn open_slot(&mut self) {
        let mean = self.pattern.mean_bytes();
        let UdpPattern::PerSlot {
            ref bytes_per_slot,
            slot_ns,
            ..
        } = self.pattern
        else {
            return;
        };
        while self.slot < bytes_per_slot.len() {
            self.slot_carry_bytes += bytes_per_slot[self.slot] as f64;
            let n = (self.slot_carry_bytes / mean).floor();
            if n >= 1.0 {
                self.slot_carry_bytes -= n * mean;
                self.slot_pkts_left = n as u64;
                self.slot_gap_ns = slot_ns / self.slot_pkts_left;
                self.next_ns = Some(self.start_ns + self.slot as u64 * slot_ns);
                return;
            }
            self.slot += 1;
        }
        self.next_ns = None;
    }
}

/// What a closed-loop user transfers (docs/models/workloads.md, "Open versus closed").
#[derive(Debug, Clone, Copy)]
pub enum FileSize {
    Fixed(u64),
    /// Pareto with the given mean and shape (> 1): scale = mean·(shape − 1)/shape.
    Pareto {
        mean_bytes: f64,
        shape: f64,
    },
}

/// The draws of one closed-loop user: file sizes and think times.
#[derive(Debug, Clone)]
pub struct UserDraws {
    pub size: FileSize,
    pub think_mean_s: f64,
    pub rng: Pcg64Mcg,
}

impl UserDraws {
    pub fn file_bytes(&mut self) -> u64 {
        match self.size {
            FileSize::Fixed(b) => b.max(1),
            FileSize::Pareto { mean_bytes, shape } => {
                let scale = mean_bytes * (shape - 1.0) / shape;
                let x = Pareto::new(scale, shape)
                    .map(|p| p.sample(&mut self.rng))
                    .unwrap_or(mean_bytes);
                // Bounded so that one draw cannot exceed any simulated run.
                x.clamp(1.0, 1e12).round() as u64
            }
        }
    }

    pub fn think_ns(&mut self) -> u64 {
        if self.think_mean_s <= 0.0 {
            return 0;
        }
        let s = Exp::new(1.0 / self.think_mean_s)
            .map(|e| e.sample(&mut self.rng))
            .unwrap_or(self.think_mean_s);
        (s * 1e9).round() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn drain(src: &mut UdpSource, until_ns: u64) -> (u64, u64) {
        src.start(0);
        let (mut pkts, mut bytes) = (0, 0);
        while let Some(t) = src.next_ns() {
            if t > until_ns {
                break;
            }
            if let Some(size) = src.poll(t) {
                pkts += 1;
                bytes += size as u64;
            }
        }
        (pkts, bytes)
    }

    #[test]
    fn cbr_and_poisson_hit_their_mean_rates() {
        let rng = Pcg64Mcg::seed_from_u64(1);
        let mut cbr = UdpSource::new(
            UdpPattern::Cbr {
                rate_bps: 1e6,
                size_bytes: 125,
            },
            rng.clone(),
            0,
        );
        let (pkts, bytes) = drain(&mut cbr, 10_000_000_000 - 1);
        assert_eq!(pkts, 10_000);
        assert_eq!(bytes, 1_250_000);
        let mut poisson = UdpSource::new(
            UdpPattern::Poisson {
                rate_bps: 5.5e6,
                min_bytes: 100,
                max_bytes: 300,
            },
            rng,
            0,
        );
        let (_, bytes) = drain(&mut poisson, 100_000_000_000);
        let rate = bytes as f64 * 8.0 / 100.0;
        assert!((rate / 5.5e6 - 1.0).abs() < 0.01, "poisson rate {rate}");
    }

    #[test]
    fn per_slot_source_carries_its_bytes() {
        let slots: Vec<u64> = (0..1000).map(|k| (k % 7) * 1000).collect();
        let total: u64 = slots.iter().sum();
        let rng = Pcg64Mcg::seed_from_u64(2);
        let mut src = UdpSource::new(
            UdpPattern::PerSlot {
                bytes_per_slot: slots,
                slot_ns: 10_000_000,
                min_bytes: 100,
                max_bytes: 300,
            },
            rng,
            0,
        );
        let (pkts, _) = drain(&mut src, u64::MAX);
        // Whole packets of the mean size: at most one packet's bytes left over.
        assert!(
            (total as f64 / 200.0 - pkts as f64).abs() <= 1.0,
            "{pkts} packets for {total} bytes"
        );
    }

    #[test]
    fn pareto_sizes_have_the_requested_mean() {
        let mut u = UserDraws {
            size: FileSize::Pareto {
                mean_bytes: 100_000.0,
                shape: 2.5,
            },
            think_mean_s: 1.0,
            rng: Pcg64Mcg::seed_from_u64(3),
        };
        let n = 200_000;
        let mean = (0..n).map(|_| u.file_bytes() as f64).sum::<f64>() / n as f64;
        assert!((mean / 100_000.0 - 1.0).abs() < 0.03, "mean {mean}");
        let think = (0..n).map(|_| u.think_ns() as f64).sum::<f64>() / n as f64 / 1e9;
        assert!((think - 1.0).abs() < 0.02, "think {think}");
    }
}
