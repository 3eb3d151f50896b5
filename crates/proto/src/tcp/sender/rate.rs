//! The delivery-rate estimator (draft-cheng-iccrg-delivery-rate-estimation;
//! Linux `net/ipv4/tcp_rate.c`), kept only for a controller that asks for
//! rate samples (`CongestionControl::wants_rate_samples`): the sender of
//! any other controller holds `None` and pays nothing.
//!
//! Every transmission of a segment records the connection's `delivered`,
//! `delivered_ns` (time of the latest delivery), `first_sent_ns` (send time
//! of the newest delivered segment when this flight began) and whether the
//! connection was application-limited (`tcp_rate_skb_sent`). When an ACK
//! acknowledges or SACKs segments, the most recently sent of them gives the
//! sample (`tcp_rate_skb_delivered`): delivered now minus delivered then,
//! over max(send phase, ACK phase) (`tcp_rate_gen`).
//!
//! Counting choices where latlab differs from the kernel's bookkeeping:
//! - A segment counts delivered when an ACK covers it entirely (SACK blocks
//!   from latlab's receiver align with segments; a cumulative ACK ending
//!   inside a segment waits for the rest).
//! - "Lost" (Linux `tp->lost`, `rs->losses`) counts a segment when the
//!   sender resends it (fast retransmit, RFC 6675 NextSeg): it was judged
//!   lost. Linux counts it when it is marked lost, usually just before it
//!   is resent; here the count reaches the controller with the next ACK.
//!   A retransmission timeout marks every un-SACKed segment lost at once
//!   (Linux `tcp_timeout_mark_lost`, before BBR hears of the timeout), so
//!   the go-back-N that follows counts nothing more: resending a segment
//!   already counted lost does not count it again.
//!
//! The estimator also gives each ACK its RTT as Linux does (`tcp_ack`'s
//! `ca_rtt_us`, which becomes `rs->rtt_us`, BBR's min_rtt input): from the
//! send time of the newest segment the ACK newly delivers that was never
//! resent, the SACKed one first (`tcp_sacktag_one`'s `last_sackt`), else
//! the cumulatively acknowledged one (`tcp_clean_rtx_queue`'s
//! `last_ackt`), which Karn's rule drops when the cumulative ACK covers a
//! resent segment (`FLAG_RETRANS_DATA_ACKED`). So every ACK that delivers
//! data sent once is timed, not one segment per round trip (RFC 6298's
//! Karn timing, which the sender's RTO estimator keeps).

use std::collections::VecDeque;

use crate::cc::RateSample;
use crate::segment::SackBlock;

/// What one transmission of a segment recorded (Linux `tcp_skb_cb.tx`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct TxRecord {
    seq: u64,
    end: u64,
    sent_ns: u64,
    /// Connection `delivered` when sent.
    delivered: u64,
    /// Connection `delivered_ns` when sent.
    delivered_ns: u64,
    /// Connection `first_sent_ns` when sent.
    first_sent_ns: u64,
    is_app_limited: bool,
    is_retransmit: bool,
    /// Counted lost since its last transmission (by a timeout).
    lost: bool,
    /// Already counted delivered by a SACK (Linux zeroes
    /// `tx.delivered_mstamp` so the cumulative ACK does not count it again).
    sacked: bool,
}

/// The newest delivered segment's data, while one ACK is processed.
#[derive(Clone, Copy, Debug, Default)]
struct Newest {
    prior_delivered: u64,
    prior_delivered_ns: u64,
    send_interval_ns: u64,
    is_app_limited: bool,
}

/// The send times behind one ACK's RTT, while the ACK is processed.
#[derive(Clone, Copy, Debug, Default)]
struct AckTiming {
    /// The newest cumulatively acknowledged segment, not SACKed before and
    /// never resent (`last_ackt`).
    acked_sent_ns: Option<u64>,
    /// A cumulatively acknowledged segment was resent: the cumulative ACK
    /// is ambiguous (Karn; Linux `FLAG_RETRANS_DATA_ACKED`).
    resent_acked: bool,
    /// The highest newly SACKed segment never resent: (seq, send time)
    /// (`last_sackt`; Linux walks SACK blocks sorted by sequence).
    sacked: Option<(u64, u64)>,
}

impl AckTiming {
    /// `ca_rtt_us`: the SACK's sample first, else the cumulative ACK's.
    fn rtt_ns(&self, now_ns: u64) -> Option<u64> {
        let cumulative = self.acked_sent_ns.filter(|_| !self.resent_acked);
        let sent = self.sacked.map(|(_, sent)| sent).or(cumulative)?;
        Some(now_ns.saturating_sub(sent))
    }
}

/// Per-connection delivery-rate state (Linux `tcp_sock`'s `delivered`,
/// `delivered_mstamp`, `first_tx_mstamp`, `app_limited`, `lost`) and the
/// per-segment records.
#[derive(Clone, Debug)]
pub(super) struct RateEstimator {
    records: VecDeque<TxRecord>,
    /// Segments delivered (cumulatively ACKed or SACKed) so far.
    delivered: u64,
    /// When `delivered` last grew.
    delivered_ns: u64,
    /// Send time of the newest delivered segment: the start of the current
    /// send phase.
    first_sent_ns: u64,
    /// 0, or the `delivered` count past which the connection stops being
    /// application-limited (the "bubble" is acknowledged and gone).
    app_limited_until: u64,
    /// Segments judged lost (retransmitted) so far, and at the last ACK.
    lost: u64,
    lost_reported: u64,
    /// Without SACK: segments announced by duplicate ACKs and not yet
    /// cumulatively acknowledged (Linux `sacked_out` of a Reno connection).
    reno_sacked: u64,
    /// Delivered by duplicate ACKs since the last sample.
    reno_delivered: u64,
    /// The least RTT any ACK gave (Linux `tcp_min_rtt`, a 300 s window,
    /// longer than any run); `u64::MAX` before the first.
    min_rtt_ns: u64,
}

impl Default for RateEstimator {
    /// Nothing sent, no RTT yet.
    fn default() -> Self {
        Self {
            records: VecDeque::new(),
            delivered: 0,
            delivered_ns: 0,
            first_sent_ns: 0,
            app_limited_until: 0,
            lost: 0,
            lost_reported: 0,
            reno_sacked: 0,
            reno_delivered: 0,
            min_rtt_ns: u64::MAX,
        }
    }
}

impl RateEstimator {
    #[cfg(test)]
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    pub fn is_app_limited(&self) -> bool {
        self.app_limited_until != 0
    }

    /// `tcp_rate_skb_sent`: a segment `[seq, end)` leaves at `now_ns`, new
    /// or resent. With nothing outstanding the send and delivery clocks
    /// restart now, so the idle time before is not counted as delivery time.
    pub fn on_send(&mut self, seq: u64, end: u64, now_ns: u64, is_retransmit: bool) {
        // Linux tests `packets_out`: nothing sent is unacknowledged.
        if self.records.is_empty() {
            self.first_sent_ns = now_ns;
            self.delivered_ns = now_ns;
        }
        let rec = TxRecord {
            seq,
            end,
            sent_ns: now_ns,
            delivered: self.delivered,
            delivered_ns: self.delivered_ns,
            first_sent_ns: self.first_sent_ns,
            is_app_limited: self.is_app_limited(),
            is_retransmit,
            lost: false,
            sacked: false,
        };
        if is_retransmit {
            let idx = self.records.partition_point(|r| r.end <= seq);
            if let Some(r) = self.records.get_mut(idx) {
                if r.seq <= seq {
                    if !r.lost {
                        self.lost += 1;
                    }
                    *r = TxRecord {
                        seq: r.seq,
                        end: r.end,
                        ..rec
                    };
                }
            }
        } else {
            self.records.push_back(rec);
        }
    }

    /// A retransmission timeout (Linux `tcp_timeout_mark_lost`): every
    /// un-SACKed outstanding segment counts lost now, not in any ACK's
    /// sample.
    pub fn mark_all_lost(&mut self) {
        for r in self.records.iter_mut().filter(|r| !r.sacked && !r.lost) {
            r.lost = true;
            self.lost += 1;
        }
        self.lost_reported = self.lost;
    }

    /// A duplicate ACK on a connection without SACK: one more segment has
    /// left the network (Linux `tcp_add_reno_sack`, which counts it
    /// delivered; at most the segments outstanding).
    pub fn on_reno_dupack(&mut self) {
        if self.reno_sacked < self.records.len() as u64 {
            self.reno_sacked += 1;
            self.reno_delivered += 1;
        }
    }

    pub fn reno_sacked(&self) -> u64 {
        self.reno_sacked
    }

    /// `tcp_rate_check_app_limited`: the sender had nothing to send while
    /// the window had room; samples until what is in flight now is
    /// delivered are application-limited. `in_flight_segs` is the sender's
    /// flight in segments.
    pub fn mark_app_limited(&mut self, in_flight_segs: u64) {
        self.app_limited_until = (self.delivered + in_flight_segs).max(1);
    }

    /// The ACK `ack` with SACK blocks `sack` arrives at `now_ns`: count the
    /// newly delivered segments, time the ACK and make the sample
    /// (`tcp_rate_gen`). `min_rtt_ns` is the sender's minimum RTT (the
    /// handshake's and its timed segments'); with the ACKs' own RTTs it
    /// bounds the interval: a shorter one is no valid sample. Fills the
    /// delivery fields of `rs` and its `rtt_ns`, keeping the caller's
    /// `rtt_ns` (the echoed timestamp's) when no segment sent once was
    /// delivered (`tcp_ack_update_rtt`).
    pub fn on_ack(
        &mut self,
        ack: u64,
        sack: &[SackBlock],
        now_ns: u64,
        min_rtt_ns: u64,
        rs: &mut RateSample,
    ) {
        let mut newest: Option<Newest> = None;
        let mut timing = AckTiming::default();
        let mut newly = 0u64;
        while let Some(r) = self.records.front().copied() {
            if r.end > ack {
                break;
            }
            self.records.pop_front();
            timing.resent_acked |= r.is_retransmit;
            if !r.sacked {
                newly += 1;
                self.take_newest(&r, &mut newest);
                if !r.is_retransmit {
                    timing.acked_sent_ns = Some(r.sent_ns);
                }
            }
        }
        for b in sack {
            newly += self.mark_sacked(b.start.max(ack), b.end, &mut newest, &mut timing);
        }
        newly = self.take_reno_sacked(newly);
        rs.rtt_ns = timing.rtt_ns(now_ns).or(rs.rtt_ns);
        if let Some(rtt) = rs.rtt_ns {
            self.min_rtt_ns = self.min_rtt_ns.min(rtt);
        }
        self.generate(newly, newest, now_ns, min_rtt_ns.min(self.min_rtt_ns), rs);
    }

    /// Without SACK, `acked` segments cumulatively acknowledged include
    /// those duplicate ACKs already counted (Linux `tcp_remove_reno_sacks`:
    /// delivered += max(acked − sacked_out, 1)); plus the duplicate ACKs'
    /// own deliveries since the last sample.
    fn take_reno_sacked(&mut self, acked: u64) -> u64 {
        let mut newly = std::mem::take(&mut self.reno_delivered);
        if acked > 0 {
            newly += acked.saturating_sub(self.reno_sacked).max(1);
            self.reno_sacked = self.reno_sacked.saturating_sub(acked - 1);
        }
        newly
    }

    /// Records entirely inside `[start, end)` become delivered.
    fn mark_sacked(
        &mut self,
        start: u64,
        end: u64,
        newest: &mut Option<Newest>,
        timing: &mut AckTiming,
    ) -> u64 {
        let mut idx = self.records.partition_point(|r| r.end <= start);
        let mut newly = 0;
        while let Some(r) = self.records.get(idx).copied() {
            if r.seq >= end {
                break;
            }
            if r.seq >= start && r.end <= end && !r.sacked {
                self.records[idx].sacked = true;
                newly += 1;
                self.take_newest(&r, newest);
                if !r.is_retransmit && timing.sacked.is_none_or(|(seq, _)| r.seq > seq) {
                    timing.sacked = Some((r.seq, r.sent_ns));
                }
            }
            idx += 1;
        }
        newly
    }

    /// `tcp_rate_skb_delivered`: the most recently sent delivered segment
    /// (highest `delivered` at send time) gives the sample; its send time
    /// starts the next send phase.
    fn take_newest(&mut self, r: &TxRecord, newest: &mut Option<Newest>) {
        if newest.is_some_and(|n| r.delivered <= n.prior_delivered) {
            return;
        }
        self.first_sent_ns = r.sent_ns;
        *newest = Some(Newest {
            prior_delivered: r.delivered,
            prior_delivered_ns: r.delivered_ns,
            send_interval_ns: r.sent_ns.saturating_sub(r.first_sent_ns),
            is_app_limited: r.is_app_limited,
        });
    }

    /// `tcp_rate_gen`.
    fn generate(
        &mut self,
        newly: u64,
        newest: Option<Newest>,
        now_ns: u64,
        min_rtt_ns: u64,
        rs: &mut RateSample,
    ) {
        self.delivered += newly;
        // The application-limited bubble is acknowledged and gone.
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        if newly > 0 {
            self.delivered_ns = now_ns;
        }
        rs.acked_sacked_segs = newly;
        rs.losses_segs = self.lost - self.lost_reported;
        self.lost_reported = self.lost;
        rs.conn_delivered_segs = self.delivered;
        rs.conn_lost_segs = self.lost;
        rs.delivered_ns = self.delivered_ns;
        rs.interval_ns = 0;
        let Some(n) = newest else {
            rs.delivered_segs = 0;
            return;
        };
        rs.prior_delivered_segs = n.prior_delivered;
        rs.is_app_limited = n.is_app_limited;
        rs.delivered_segs = self.delivered - n.prior_delivered;
        // Sending and ACKing a flight are two pipeline phases; the longer
        // one bounds the rate (ACK compression shortens the ACK phase).
        let ack_interval_ns = now_ns.saturating_sub(n.prior_delivered_ns);
        let interval = n.send_interval_ns.max(ack_interval_ns);
        if interval >= min_rtt_ns {
            rs.interval_ns = interval;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn ack(e: &mut RateEstimator, ack: u64, now: u64, min_rtt: u64) -> RateSample {
        let mut rs = RateSample::default();
        e.on_ack(ack, &[], now, min_rtt, &mut rs);
        rs
    }

    /// Ten segments sent back to back at t = 0, ACKed one per ms from
    /// t = 100 ms: each sample is k segments over 100 ms + (k−1) ms.
    #[test]
    fn samples_delivered_over_the_longer_phase() {
        let mut e = RateEstimator::default();
        for k in 0..10 {
            e.on_send(k * 1000, (k + 1) * 1000, 0, false);
        }
        let rs = ack(&mut e, 1000, 100 * MS, 50 * MS);
        assert_eq!((rs.delivered_segs, rs.interval_ns), (1, 100 * MS));
        assert_eq!(rs.acked_sacked_segs, 1);
        let rs = ack(&mut e, 5000, 104 * MS, 50 * MS);
        // Newest acknowledged: segment 4 (delivered 0 when sent).
        assert_eq!((rs.delivered_segs, rs.interval_ns), (5, 104 * MS));
        assert_eq!(rs.prior_delivered_segs, 0);
        assert!(rs.is_valid());
        // A segment sent now carries delivered = 5 and the ACK phase from
        // the latest delivery (104 ms).
        e.on_send(10_000, 11_000, 110 * MS, false);
        let rs = ack(&mut e, 11_000, 214 * MS, 50 * MS);
        assert_eq!(rs.prior_delivered_segs, 5);
        assert_eq!((rs.delivered_segs, rs.interval_ns), (6, 110 * MS));
    }

    #[test]
    fn interval_shorter_than_min_rtt_is_no_sample() {
        let mut e = RateEstimator::default();
        // Resent, so the ACK has no RTT of its own to lower min_rtt.
        e.on_send(0, 1000, 0, false);
        e.on_send(0, 1000, 5 * MS, true);
        let rs = ack(&mut e, 1000, 10 * MS, 20 * MS);
        assert_eq!(rs.rtt_ns, None);
        assert!(!rs.is_valid());
        assert_eq!(rs.acked_sacked_segs, 1);
        assert_eq!(e.delivered(), 1);
    }

    #[test]
    fn a_sacked_segment_is_delivered_once() {
        let mut e = RateEstimator::default();
        for k in 0..4 {
            e.on_send(k * 1000, (k + 1) * 1000, 0, false);
        }
        let mut rs = RateSample::default();
        e.on_ack(
            0,
            &[SackBlock {
                start: 2000,
                end: 4000,
            }],
            100 * MS,
            0,
            &mut rs,
        );
        assert_eq!(rs.acked_sacked_segs, 2);
        let rs = ack(&mut e, 4000, 101 * MS, 0);
        assert_eq!(rs.acked_sacked_segs, 2);
        assert_eq!(e.delivered(), 4);
    }

    #[test]
    fn app_limited_marks_samples_until_the_bubble_is_delivered() {
        let mut e = RateEstimator::default();
        e.on_send(0, 1000, 0, false);
        e.mark_app_limited(1); // one segment in flight, nothing more to send
        e.on_send(1000, 2000, MS, false);
        let rs = ack(&mut e, 1000, 100 * MS, 0);
        assert!(!rs.is_app_limited, "sent before the mark");
        assert!(e.is_app_limited(), "delivered 1 is not past the mark 1");
        let rs = ack(&mut e, 2000, 101 * MS, 0);
        assert!(rs.is_app_limited, "sent while application-limited");
        assert!(!e.is_app_limited(), "delivered 2 passed the mark");
        e.on_send(2000, 3000, 102 * MS, false);
        let rs = ack(&mut e, 3000, 202 * MS, 0);
        assert!(!rs.is_app_limited);
    }

    #[test]
    fn retransmissions_count_as_losses_and_restamp_the_segment() {
        let mut e = RateEstimator::default();
        e.on_send(0, 1000, 0, false);
        e.on_send(1000, 2000, 0, false);
        e.on_send(0, 1000, 300 * MS, true);
        let rs = ack(&mut e, 2000, 400 * MS, 0);
        assert_eq!(rs.losses_segs, 1);
        assert_eq!(rs.conn_lost_segs, 1);
        // Newest sent: the retransmission (send phase 300 ms); the ACK
        // phase runs from the last delivery before it was sent (t = 0).
        assert_eq!(rs.delivered_segs, 2);
        assert_eq!(rs.interval_ns, 400 * MS);
        let rs = ack(&mut e, 2000, 401 * MS, 0);
        assert_eq!(rs.losses_segs, 0);
    }

    #[test]
    fn reno_duplicate_acks_count_delivered_once() {
        let mut e = RateEstimator::default();
        for k in 0..4 {
            e.on_send(k * 1000, (k + 1) * 1000, 0, false);
        }
        // Segment 0 lost: three duplicate ACKs for segments 1-3.
        for _ in 0..3 {
            e.on_reno_dupack();
            let rs = ack(&mut e, 0, 100 * MS, 0);
            assert_eq!(rs.acked_sacked_segs, 1);
        }
        assert_eq!(e.reno_sacked(), 3);
        e.on_send(0, 1000, 100 * MS, true);
        // The retransmission's ACK covers all four: one more delivered.
        let rs = ack(&mut e, 4000, 200 * MS, 0);
        assert_eq!(rs.acked_sacked_segs, 1);
        assert_eq!((e.delivered(), e.reno_sacked()), (4, 0));
    }

    #[test]
    fn a_timeout_counts_the_flight_lost_once_and_the_go_back_n_nothing_more() {
        let mut e = RateEstimator::default();
        for k in 0..4 {
            e.on_send(k * 1000, (k + 1) * 1000, 0, false);
        }
        e.mark_all_lost();
        for k in 0..4 {
            e.on_send(k * 1000, (k + 1) * 1000, 300 * MS, true);
        }
        let rs = ack(&mut e, 4000, 400 * MS, 0);
        assert_eq!((rs.conn_lost_segs, rs.losses_segs), (4, 0));
        // A segment resent once more after that is lost again.
        e.on_send(4000, 5000, 400 * MS, false);
        e.on_send(4000, 5000, 700 * MS, true);
        let rs = ack(&mut e, 5000, 800 * MS, 0);
        assert_eq!((rs.conn_lost_segs, rs.losses_segs), (5, 1));
    }

    #[test]
    fn every_ack_of_data_sent_once_is_timed_from_the_newest_segment() {
        let mut e = RateEstimator::default();
        for k in 0..4 {
            e.on_send(k * 1000, (k + 1) * 1000, k * MS, false);
        }
        // Segments 0 and 1 (sent at 0 and 1 ms) acknowledged at 50 ms:
        // the newest gives the RTT.
        assert_eq!(ack(&mut e, 2000, 50 * MS, 0).rtt_ns, Some(49 * MS));
        assert_eq!(ack(&mut e, 3000, 52 * MS, 0).rtt_ns, Some(50 * MS));
        // No newly delivered segment: no RTT.
        assert_eq!(ack(&mut e, 3000, 53 * MS, 0).rtt_ns, None);
    }

    #[test]
    fn the_highest_newly_sacked_segment_times_the_ack_before_the_cumulative_one() {
        let mut e = RateEstimator::default();
        for k in 0..6 {
            e.on_send(k * 1000, (k + 1) * 1000, k * MS, false);
        }
        let blocks = [
            SackBlock {
                start: 4000,
                end: 5000,
            },
            SackBlock {
                start: 2000,
                end: 3000,
            },
        ];
        let mut rs = RateSample::default();
        e.on_ack(1000, &blocks, 60 * MS, 0, &mut rs);
        // Segment 4 (sent at 4 ms) is the highest SACKed; the cumulative
        // ACK's segment 0 (sent at 0) would read 60 ms.
        assert_eq!(rs.rtt_ns, Some(56 * MS));
        // SACKed before: the cumulative ACK of 1..5 times only segment 3.
        assert_eq!(ack(&mut e, 5000, 70 * MS, 0).rtt_ns, Some(67 * MS));
    }

    #[test]
    fn karn_a_cumulative_ack_over_a_resent_segment_keeps_the_callers_rtt() {
        let mut e = RateEstimator::default();
        e.on_send(0, 1000, 0, false);
        e.on_send(1000, 2000, MS, false);
        e.on_send(0, 1000, 300 * MS, true);
        let mut rs = RateSample {
            rtt_ns: Some(123 * MS), // the echoed timestamp's, say
            ..RateSample::default()
        };
        e.on_ack(2000, &[], 400 * MS, 0, &mut rs);
        assert_eq!(rs.rtt_ns, Some(123 * MS));
        // Without a timestamp: no RTT at all.
        e.on_send(2000, 3000, 400 * MS, false);
        e.on_send(2000, 3000, 700 * MS, true);
        assert_eq!(ack(&mut e, 3000, 800 * MS, 0).rtt_ns, None);
    }

    #[test]
    fn the_acks_own_rtt_lowers_min_rtt_before_the_interval_check() {
        let mut e = RateEstimator::default();
        e.on_send(0, 1000, 0, false);
        // The sender's min_rtt (20 ms) is above this ACK's RTT (10 ms):
        // Linux updates `tcp_min_rtt` first, so the 10 ms interval counts.
        let rs = ack(&mut e, 1000, 10 * MS, 20 * MS);
        assert_eq!((rs.rtt_ns, rs.interval_ns), (Some(10 * MS), 10 * MS));
    }

    #[test]
    fn sending_after_idle_restarts_the_clocks() {
        let mut e = RateEstimator::default();
        e.on_send(0, 1000, 0, false);
        let _ = ack(&mut e, 1000, 100 * MS, 0);
        e.on_send(1000, 2000, 5000 * MS, false);
        let rs = ack(&mut e, 2000, 5100 * MS, 0);
        assert_eq!((rs.delivered_segs, rs.interval_ns), (1, 100 * MS));
    }
}
