//! The loss-interval history and the loss event rate (RFC 5348 §5.3–5.4).
//!
//! A congestion event (a loss event, or a DFlow delay event) starts at a
//! packet; a loss interval is the number of packets from the start of one
//! event up to (not including) the start of the next. I_0 is the open
//! interval since the most recent event (counted to the highest sequence
//! number received, inclusive); I_1..I_k are the closed ones, k ≤ n = 8.
//! The first closed interval is synthetic, seeded from the receive rate
//! (RFC 5348 §6.3.1; done by the receiver, which passes it in).

/// n: closed intervals kept (RFC 5348 §5.4).
pub const N_LOSS_INTERVALS: usize = 8;

/// w_0..w_7 (RFC 5348 §5.4).
pub const LOSS_INTERVAL_WEIGHTS: [f64; N_LOSS_INTERVALS] = [1.0, 1.0, 1.0, 1.0, 0.8, 0.6, 0.4, 0.2];

/// I_mean from the open interval I_0 and the closed ones I_1..I_k (most
/// recent first, at most n are used), RFC 5348 §5.4 with n replaced by k
/// when fewer than n closed intervals exist (as Linux `tfrc_lh_calc_i_mean`):
/// I_tot0 = Σ_{i=0}^{k−1} I_i·w_i, I_tot1 = Σ_{i=1}^{k} I_i·w_{i−1},
/// W_tot = Σ_{i=0}^{k−1} w_i, I_mean = max(I_tot0, I_tot1)/W_tot.
/// None with no closed interval.
pub fn weighted_i_mean(i0: f64, closed: &[f64]) -> Option<f64> {
    let k = closed.len().min(N_LOSS_INTERVALS);
    if k == 0 {
        return None;
    }
    let interval = |i: usize| if i == 0 { i0 } else { closed[i - 1] };
    let (mut i_tot0, mut i_tot1, mut w_tot) = (0.0, 0.0, 0.0);
    for (i, w) in LOSS_INTERVAL_WEIGHTS.iter().enumerate().take(k) {
        i_tot0 += interval(i) * w;
        w_tot += w;
    }
    for i in 1..=k {
        i_tot1 += interval(i) * LOSS_INTERVAL_WEIGHTS[i - 1];
    }
    Some(i_tot0.max(i_tot1) / w_tot)
}

/// Receiver-side history of congestion (loss and delay) events.
#[derive(Clone, Debug, Default)]
pub(crate) struct LossIntervalHistory {
    /// I_1..I_k, most recent first, packets.
    closed: [f64; N_LOSS_INTERVALS],
    k: usize,
    /// (sequence number, sender timestamp) of the packet that started the
    /// most recent event: I_0 starts there.
    last_event: Option<(u64, u64)>,
}

impl LossIntervalHistory {
    /// True when a congestion at a packet sent at `send_ts_ns` is a new
    /// event: no event yet, or sent more than one RTT after the start of the
    /// current one (RFC 5348 §5.2).
    pub fn is_new_event(&self, send_ts_ns: u64, rtt_ns: u64) -> bool {
        match self.last_event {
            None => true,
            Some((_, t0)) => send_ts_ns > t0 && send_ts_ns - t0 > rtt_ns,
        }
    }

    /// The sender timestamp at which the current event started.
    pub fn last_event_ts(&self) -> Option<u64> {
        self.last_event.map(|(_, t)| t)
    }

    /// Start a new event at packet `seq` sent at `send_ts_ns`. The first
    /// event ever closes the synthetic interval `seed_interval()`.
    pub fn start_event(&mut self, seq: u64, send_ts_ns: u64, seed_interval: impl FnOnce() -> f64) {
        let closed = match self.last_event {
            None => {
                let seed = seed_interval();
                if seed.is_finite() && seed >= 1.0 {
                    seed
                } else {
                    1.0
                }
            }
            Some((start, _)) => seq.saturating_sub(start).max(1) as f64,
        };
        self.closed.copy_within(0..N_LOSS_INTERVALS - 1, 1);
        self.closed[0] = closed;
        self.k = (self.k + 1).min(N_LOSS_INTERVALS);
        self.last_event = Some((seq, send_ts_ns));
    }

    /// I_0 = packets from the start of the latest event to `highest_seq`.
    pub fn open_interval(&self, highest_seq: u64) -> f64 {
        match self.last_event {
            Some((start, _)) => highest_seq.saturating_sub(start).saturating_add(1) as f64,
            None => 0.0,
        }
    }

    /// p = 1/I_mean (RFC 5348 §5.4); 0 before the first event.
    pub fn loss_event_rate(&self, highest_seq: u64) -> f64 {
        match weighted_i_mean(self.open_interval(highest_seq), &self.closed[..self.k]) {
            Some(i_mean) if i_mean >= 1.0 => 1.0 / i_mean,
            Some(_) => 1.0,
            None => 0.0,
        }
    }

    /// The closed intervals, most recent first.
    #[cfg(test)]
    pub fn closed(&self) -> &[f64] {
        &self.closed[..self.k]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn i_mean_with_a_hand_computed_history() {
        let closed = [100.0, 200.0, 100.0, 300.0, 100.0, 100.0, 100.0, 100.0];
        // I_tot0 = 50 + 100 + 200 + 100 + 0.8·300 + 0.6·100 + 0.4·100 +
        // 0.2·100 = 810; I_tot1 = 100 + 200 + 100 + 300 + 0.8·100 + 0.6·100
        // + 0.4·100 + 0.2·100 = 900; W_tot = 6 → I_mean = 150.
        assert_eq!(weighted_i_mean(50.0, &closed), Some(150.0));
        // A long open interval counts once it beats the history:
        // I_tot0 = 1000 + 760 = 1760 → 293.33.
        let m = weighted_i_mean(1000.0, &closed).unwrap();
        assert!((m - 1760.0 / 6.0).abs() < 1e-9);
        // Fewer than n closed intervals: k = 2, W_tot = 2,
        // I_tot0 = 10 + 40 = 50, I_tot1 = 40 + 20 = 60 → 30.
        assert_eq!(weighted_i_mean(10.0, &[40.0, 20.0]), Some(30.0));
        assert_eq!(weighted_i_mean(10.0, &[]), None);
        // Only the n most recent closed intervals count.
        let mut nine = closed.to_vec();
        nine.push(1e9);
        assert_eq!(weighted_i_mean(50.0, &nine), Some(150.0));
    }

    #[test]
    fn history_shifts_and_computes_p() {
        let mut h = LossIntervalHistory::default();
        assert_eq!(h.loss_event_rate(1000), 0.0);
        assert!(h.is_new_event(5, 100));
        h.start_event(100, 1_000, || 250.0);
        assert_eq!(h.closed(), &[250.0]);
        // I_0 = 100..=149 = 50 packets; I_mean = max(50, 250) = 250.
        assert_eq!(h.loss_event_rate(149), 1.0 / 250.0);
        // Within one RTT of the event start: same event.
        assert!(!h.is_new_event(1_100, 100));
        assert!(h.is_new_event(1_101, 100));
        h.start_event(300, 2_000, || unreachable!());
        h.start_event(350, 3_000, || unreachable!());
        assert_eq!(h.closed(), &[50.0, 200.0, 250.0]);
        // k = 3: I_tot0 = I_0 + 50 + 200, I_tot1 = 50 + 200 + 250.
        assert!((h.loss_event_rate(359) - 3.0 / 500.0).abs() < 1e-15);
        for i in 0..20 {
            h.start_event(400 + 10 * i, 4_000 + 1_000 * i, || unreachable!());
        }
        assert_eq!(h.closed().len(), N_LOSS_INTERVALS);
        assert_eq!(h.closed()[0], 10.0);
        // Degenerate: an event "before" the current one counts as 1 packet.
        h.start_event(0, u64::MAX, || unreachable!());
        assert_eq!(h.closed()[0], 1.0);
        assert!(h.loss_event_rate(0) > 0.0 && h.loss_event_rate(u64::MAX) <= 1.0);
    }
}
