//! The LTE base-station downlink: one queue per user, a radio scheduler
//! serving them every TTI (1 ms), HARQ retransmission delay and frame-timing
//! jitter.
//!
//! Model (docs/models/links.md):
//! - Each user has its own queue (any discipline, own limit): a user's
//!   queue never holds another user's packets, so users compete for radio
//!   time, not for buffer space.
//! - User i's channel offers `c_i(t)` bytes per TTI when it has the whole
//!   cell (a fixed rate or a trace). A TTI has `resource_blocks` blocks; a
//!   user given `k` of them may send `c_i · k / resource_blocks` bytes.
//! - Each TTI the scheduler orders the backlogged users — round robin (a
//!   rotating first user) or proportional fair (largest `c_i / R̄_i`, R̄_i an
//!   EWMA of the bytes it was served per TTI) — and gives each in turn the
//!   blocks it needs for its backlog until the blocks run out.
//! - Packets are segmented as RLC does: a packet larger than a user's grant
//!   continues in its next grant; it is delivered at the end of the TTI that
//!   carries its last byte. Unused grant bytes are lost.
//! - HARQ: a user's transport block fails with probability `harq_error_prob`
//!   and is retransmitted `harq_rtt_ns` later (8 ms in LTE FDD), up to
//!   `harq_max_tx` transmissions; retransmissions are assumed to use spare
//!   blocks (they delay, they do not take capacity). Jitter: a uniform extra
//!   delay in [0, jitter_max_ns] per transport block (frame timing). RLC
//!   delivers in order, so a user's packets never overtake each other.

use crate::transmitter::Transmitter;
use crate::Departure;
use latlab_qdisc::{Dequeue, Enqueue, Qdisc, QueuedPacket};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

/// The radio scheduler.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scheduler {
    RoundRobin,
    /// Proportional fair; R̄ is an EWMA with time constant `window_ttis`.
    ProportionalFair {
        window_ttis: f64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LteConfig {
    pub tti_ns: u64,
    pub resource_blocks: u32,
    pub scheduler: Scheduler,
    pub harq_error_prob: f64,
    pub harq_rtt_ns: u64,
    pub harq_max_tx: u32,
    pub jitter_max_ns: u64,
}

impl Default for LteConfig {
    fn default() -> Self {
        LteConfig {
            tti_ns: 1_000_000,
            resource_blocks: 50,
            scheduler: Scheduler::ProportionalFair { window_ttis: 100.0 },
            harq_error_prob: 0.0,
            harq_rtt_ns: 8_000_000,
            harq_max_tx: 4,
            jitter_max_ns: 0,
        }
    }
}

impl LteConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.tti_ns == 0 {
            return Err("tti_ms: expected a positive TTI".into());
        }
        if self.resource_blocks == 0 {
            return Err("resource_blocks: expected at least 1".into());
        }
        if let Scheduler::ProportionalFair { window_ttis } = self.scheduler {
            if !(window_ttis.is_finite() && window_ttis >= 1.0) {
                return Err(format!(
                    "pf_window_ttis: expected a number ≥ 1, got {window_ttis}"
                ));
            }
        }
        if !(0.0..1.0).contains(&self.harq_error_prob) {
            return Err(format!(
                "harq_error_prob: expected a probability in [0, 1), got {}",
                self.harq_error_prob
            ));
        }
        if self.harq_max_tx == 0 {
            return Err("harq_max_tx: expected at least 1 transmission".into());
        }
        Ok(())
    }
}

/// Per-user counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UserStats {
    /// Bytes carried for this user (segments of packets included).
    pub served_bytes: u64,
    /// TTIs in which the user was given blocks.
    pub scheduled_ttis: u64,
    /// Transport blocks that needed HARQ retransmissions.
    pub harq_retx_blocks: u64,
}

struct User<P> {
    queue: Box<dyn Qdisc<P>>,
    channel: Transmitter,
    /// A packet taken from the queue, and its bytes not yet sent.
    in_transit: Option<(P, u32, u64, u64)>,
    /// R̄: EWMA of bytes served per TTI.
    avg_bytes: f64,
    last_delivery_ns: u64,
    stats: UserStats,
}

impl<P: QueuedPacket> User<P> {
    fn backlogged(&self) -> bool {
        self.in_transit.is_some() || self.queue.len_pkts() > 0
    }
    fn backlog_bytes(&self) -> u64 {
        self.in_transit.map_or(0, |t| t.1 as u64) + self.queue.len_bytes()
    }
}

/// An LTE cell's downlink.
pub struct LteCell<P> {
    cfg: LteConfig,
    users: Vec<User<P>>,
    rng: Pcg64Mcg,
    rr_next: usize,
    /// Start of the last TTI served.
    last_tti_ns: Option<u64>,
    order: Vec<(usize, u64)>,
    served: Vec<u64>,
}

impl<P: QueuedPacket> LteCell<P> {
    /// A cell; HARQ and jitter draws come from a stream seeded by `seed`.
    pub fn new(cfg: LteConfig, seed: u64) -> Self {
        LteCell {
            cfg,
            users: Vec::new(),
            rng: Pcg64Mcg::seed_from_u64(seed),
            rr_next: 0,
            last_tti_ns: None,
            order: Vec::new(),
            served: Vec::new(),
        }
    }

    /// Add a user with its queue and channel; returns its index.
    pub fn add_user(&mut self, queue: Box<dyn Qdisc<P>>, channel: Transmitter) -> u32 {
        self.users.push(User {
            queue,
            channel,
            in_transit: None,
            avg_bytes: 0.0,
            last_delivery_ns: 0,
            stats: UserStats::default(),
        });
        self.users.len() as u32 - 1
    }

    pub fn config(&self) -> &LteConfig {
        &self.cfg
    }

    pub fn users(&self) -> usize {
        self.users.len()
    }

    pub fn queue(&self, user: u32) -> &dyn Qdisc<P> {
        self.users[user as usize].queue.as_ref()
    }

    /// Packets taken from the user's queue but not yet fully sent (0 or 1).
    pub fn in_transit_pkts(&self, user: u32) -> u64 {
        self.users[user as usize].in_transit.is_some() as u64
    }

    pub fn user_stats(&self, user: u32) -> &UserStats {
        &self.users[user as usize].stats
    }

    pub fn channel_mut(&mut self, user: u32) -> &mut Transmitter {
        &mut self.users[user as usize].channel
    }

    /// A packet for `user` arrives.
    pub fn enqueue(&mut self, now_ns: u64, user: u32, pkt: P) -> Enqueue<P> {
        self.users[user as usize].queue.enqueue(now_ns, pkt)
    }

    /// When the cell must run next (the next TTI boundary ≥ `now_ns` not
    /// yet served), or None while no user has anything to send.
    pub fn next_tti_ns(&self, now_ns: u64) -> Option<u64> {
        if !self.users.iter().any(|u| u.backlogged()) {
            return None;
        }
        let tti = self.cfg.tti_ns;
        let mut t = now_ns.div_ceil(tti) * tti;
        if self.last_tti_ns.is_some_and(|l| t <= l) {
            t = self.last_tti_ns.unwrap_or(0) + tti;
        }
        Some(t)
    }

    /// Serve the TTI starting at `now_ns` (a time `next_tti_ns` gave).
    /// Packets that complete are pushed onto `out`; packets a discipline
    /// drops while dequeuing go to `dropped` with their user.
    pub fn run_tti(&mut self, now_ns: u64, out: &mut Vec<Departure<P>>, dropped: &mut Vec<(u32, P)>) {
        if self.last_tti_ns.is_some_and(|l| now_ns <= l) {
            return;
        }
        self.last_tti_ns = Some(now_ns);
        let end = now_ns + self.cfg.tti_ns;
        let n = self.users.len();
        // Backlogged users with their channel capacity this TTI, in service order.
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        for k in 0..n {
            let i = match self.cfg.scheduler {
                Scheduler::RoundRobin => (self.rr_next + k) % n,
                Scheduler::ProportionalFair { .. } => k,
            };
            let u = &mut self.users[i];
            if u.backlogged() {
                let c = u.channel.capacity_bytes(now_ns, end);
                order.push((i, c));
            }
        }
        let pf = matches!(self.cfg.scheduler, Scheduler::ProportionalFair { .. });
        let rbs_total = self.cfg.resource_blocks as u64;
        let mut rbs_left = rbs_total;
        let mut served = std::mem::take(&mut self.served);
        served.clear();
        served.resize(n, 0);
        let mut first_served = None;
        let mut remaining = order.len();
        let mut next = 0;
        while rbs_left > 0 && remaining > 0 {
            let (i, cap) = if pf {
                // The largest c_i / R̄_i among those left (R̄ floored so a new
                // user's metric is finite; ties to the lower index). A linear
                // pick, not a sort: the blocks usually run out after a user or two.
                let users = &self.users;
                let metric = |&(i, c): &(usize, u64)| c as f64 / users[i].avg_bytes.max(1e-3);
                let mut best = 0;
                for j in 1..remaining {
                    let (a, b) = (&order[j], &order[best]);
                    if metric(a).total_cmp(&metric(b)).then(b.0.cmp(&a.0)).is_gt() {
                        best = j;
                    }
                }
                order.swap(best, remaining - 1);
                order[remaining - 1]
            } else {
                next += 1;
                order[next - 1]
            };
            remaining -= 1;
            if cap == 0 {
                continue;
            }
            let need = self.users[i].backlog_bytes();
            // Blocks to carry the backlog: ceil(need · R / cap), at most what is left.
            let rbs = ((need as u128 * rbs_total as u128).div_ceil(cap as u128) as u64).clamp(1, rbs_left);
            rbs_left -= rbs;
            let grant = (cap as u128 * rbs as u128 / rbs_total as u128) as u64;
            first_served.get_or_insert(i);
            served[i] = self.serve(i, now_ns, end, grant, out, dropped);
        }
        match self.cfg.scheduler {
            Scheduler::RoundRobin => {
                if let Some(i) = first_served {
                    self.rr_next = (i + 1) % n.max(1);
                }
            }
            Scheduler::ProportionalFair { window_ttis } => {
                let a = 1.0 / window_ttis;
                for (u, s) in self.users.iter_mut().zip(&served) {
                    u.avg_bytes = (1.0 - a) * u.avg_bytes + a * *s as f64;
                }
            }
        }
        self.order = order;
        self.served = served;
    }

    /// Send up to `grant` bytes of user `i`'s backlog in this TTI.
    fn serve(
        &mut self,
        i: usize,
        now_ns: u64,
        end_ns: u64,
        mut grant: u64,
        out: &mut Vec<Departure<P>>,
        dropped: &mut Vec<(u32, P)>,
    ) -> u64 {
        // The transport block's fate: HARQ transmissions and frame jitter.
        let mut failures = 0u64;
        if self.cfg.harq_error_prob > 0.0 {
            while failures + 1 < self.cfg.harq_max_tx as u64
                && self.rng.random::<f64>() < self.cfg.harq_error_prob
            {
                failures += 1;
            }
        }
        let jitter = if self.cfg.jitter_max_ns > 0 {
            self.rng.random_range(0..=self.cfg.jitter_max_ns)
        } else {
            0
        };
        let deliver_at = end_ns + failures * self.cfg.harq_rtt_ns + jitter;
        let u = &mut self.users[i];
        u.stats.scheduled_ttis += 1;
        u.stats.harq_retx_blocks += (failures > 0) as u64;
        let mut sent = 0u64;
        let mut scratch = Vec::new();
        while grant > 0 {
            let (pkt, left, sojourn, enqueued) = match u.in_transit.take() {
                Some(t) => t,
                None => match u.queue.dequeue(now_ns, &mut scratch) {
                    Dequeue::Packet { pkt, sojourn_ns } => {
                        (pkt, pkt.size_bytes(), sojourn_ns, now_ns - sojourn_ns)
                    }
                    Dequeue::Empty | Dequeue::Wait(_) => break,
                },
            };
            let take = (left as u64).min(grant);
            grant -= take;
            sent += take;
            let left = left - take as u32;
            if left > 0 {
                u.in_transit = Some((pkt, left, sojourn, enqueued));
                break;
            }
            // RLC in-order delivery: never before the user's previous packet.
            let deliver_ns = deliver_at.max(u.last_delivery_ns);
            u.last_delivery_ns = deliver_ns;
            out.push(Departure {
                dest: i as u32,
                pkt,
                sojourn_ns: sojourn,
                enqueued_ns: enqueued,
                leave_ns: end_ns,
                deliver_ns,
                lost: false,
            });
        }
        dropped.extend(scratch.into_iter().map(|p| (i as u32, p)));
        u.stats.served_bytes += sent;
        sent
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rate::RateSource;
    use latlab_qdisc::{DropTail, Limit};

    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Pkt(u32, u32);
    impl QueuedPacket for Pkt {
        fn size_bytes(&self) -> u32 {
            self.1
        }
        fn flow_id(&self) -> u32 {
            self.0
        }
    }

    fn cell(sched: Scheduler, rates: &[u64]) -> LteCell<Pkt> {
        let cfg = LteConfig {
            scheduler: sched,
            ..LteConfig::default()
        };
        let mut c = LteCell::new(cfg, 1);
        for &r in rates {
            c.add_user(
                Box::new(DropTail::new(Limit::Packets(100_000))),
                Transmitter::rate(RateSource::Constant { rate_bps: r }, 0),
            );
        }
        c
    }

    /// Keep every user's queue full for `ttis` TTIs; bytes served per user.
    fn saturate(c: &mut LteCell<Pkt>, ttis: u64) -> Vec<u64> {
        let mut out = Vec::new();
        let mut dropped = Vec::new();
        let mut got = vec![0u64; c.users()];
        for k in 0..ttis {
            let now = k * 1_000_000;
            for u in 0..c.users() as u32 {
                while c.queue(u).len_pkts() < 20 {
                    c.enqueue(now, u, Pkt(u, 1500));
                }
            }
            assert_eq!(c.next_tti_ns(now), Some(now));
            c.run_tti(now, &mut out, &mut dropped);
            for d in out.drain(..) {
                assert!(d.deliver_ns >= d.leave_ns);
                got[d.dest as usize] += d.pkt.1 as u64;
            }
        }
        got
    }

    #[test]
    fn pf_with_equal_channels_is_fair_and_work_conserving() {
        let mut c = cell(
            Scheduler::ProportionalFair { window_ttis: 100.0 },
            &[12_000_000, 12_000_000],
        );
        let got = saturate(&mut c, 2000);
        let (a, b) = (got[0] as f64, got[1] as f64);
        assert!((a - b).abs() / (a + b) < 0.025, "{got:?}");
        // 12 Mbit/s = 1500 B per TTI, all of it used.
        assert!((a + b - 2000.0 * 1500.0).abs() <= 2.0 * 1500.0, "{got:?}");
    }

    #[test]
    fn round_robin_shares_ttis_equally() {
        let mut c = cell(Scheduler::RoundRobin, &[24_000_000, 6_000_000]);
        let got = saturate(&mut c, 1000);
        // Equal TTIs: bytes in the ratio of the channel rates (4:1).
        let ratio = got[0] as f64 / got[1] as f64;
        assert!((ratio - 4.0).abs() < 0.1, "{got:?}");
    }

    #[test]
    fn harq_delays_in_steps_and_keeps_order() {
        let cfg = LteConfig {
            harq_error_prob: 0.3,
            jitter_max_ns: 0,
            ..LteConfig::default()
        };
        let mut c: LteCell<Pkt> = LteCell::new(cfg, 5);
        c.add_user(
            Box::new(DropTail::new(Limit::Packets(1000))),
            Transmitter::rate(RateSource::Constant { rate_bps: 12_000_000 }, 0),
        );
        let (mut out, mut dropped) = (Vec::new(), Vec::new());
        for k in 0..400u64 {
            c.enqueue(k * 1_000_000, 0, Pkt(0, 1500));
            c.run_tti(k * 1_000_000, &mut out, &mut dropped);
        }
        let extra: Vec<u64> = out.iter().map(|d| d.deliver_ns - d.leave_ns).collect();
        assert!(out.windows(2).all(|w| w[0].deliver_ns <= w[1].deliver_ns));
        assert!(extra.iter().any(|&e| e >= 8_000_000));
        assert!(c.user_stats(0).harq_retx_blocks > 50);
    }
}
