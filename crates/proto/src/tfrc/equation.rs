//! The TCP throughput equation of RFC 5348 §3.1 and its inverse.
//!
//! X_Bps = s / (R·sqrt(2bp/3) + t_RTO·(3·sqrt(3bp/8))·p·(1 + 32p²)) with
//! b = 1 and t_RTO = 4R (RFC 5348 §3.1 recommendations), i.e.
//! X_Bps = s / (R·f(p)), f(p) = sqrt(2p/3) + 12·sqrt(3p/8)·p·(1 + 32p²).

use crate::NS_PER_SEC;

/// Smallest loss event rate the inverse returns (an interval of 10¹²
/// packets): below it the equation rate exceeds any real link.
pub const P_MIN: f64 = 1e-12;

/// f(p) = sqrt(2p/3) + 12·sqrt(3p/8)·p·(1 + 32p²) (RFC 5348 §3.1, b = 1,
/// t_RTO = 4R). Increasing in p; 0 for p ≤ 0 or NaN.
pub fn f_of_p(p: f64) -> f64 {
    if p.is_nan() || p <= 0.0 {
        return 0.0;
    }
    let p = p.min(1.0);
    (2.0 * p / 3.0).sqrt() + 12.0 * (3.0 * p / 8.0).sqrt() * p * (1.0 + 32.0 * p * p)
}

/// X_Bps: the TCP-friendly rate in bytes/s for segment size `s_bytes`,
/// round-trip time `rtt_ns` and loss event rate `p` (RFC 5348 §3.1).
/// Infinite for p = 0 or R = 0.
pub fn throughput_bytes_per_s(s_bytes: f64, rtt_ns: f64, p: f64) -> f64 {
    let denom = rtt_ns / NS_PER_SEC as f64 * f_of_p(p);
    if denom > 0.0 && denom.is_finite() {
        s_bytes / denom
    } else if denom.is_finite() {
        f64::INFINITY
    } else {
        0.0
    }
}

/// The loss event rate p for which the equation gives `x_bytes_per_s`
/// (RFC 5348 §6.3.1: the receiver seeds its first loss interval with 1/p).
/// Solves f(p) = s/(R·X) by geometric bisection on [P_MIN, 1]; returns 1 if
/// even p = 1 allows more than X, P_MIN if even P_MIN allows less. A
/// non-positive or NaN rate or RTT gives f(p) = 2, the value RFC 5348
/// §6.3.1 prescribes when no rate is known (X_target = s/(2R)).
pub fn loss_event_rate_for_rate(s_bytes: f64, rtt_ns: f64, x_bytes_per_s: f64) -> f64 {
    let r_s = rtt_ns / NS_PER_SEC as f64;
    let target_f = s_bytes / (r_s * x_bytes_per_s);
    let target_f = if target_f.is_finite() && target_f > 0.0 && r_s > 0.0 && x_bytes_per_s > 0.0 {
        target_f
    } else {
        2.0
    };
    if target_f >= f_of_p(1.0) {
        return 1.0;
    }
    if target_f <= f_of_p(P_MIN) {
        return P_MIN;
    }
    let (mut lo, mut hi) = (P_MIN, 1.0_f64);
    // 200 halvings of the log-interval: far below f64 resolution.
    for _ in 0..200 {
        let mid = (lo * hi).sqrt();
        if mid <= lo || mid >= hi {
            break;
        }
        if f_of_p(mid) < target_f {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: f64 = 1e6;

    #[test]
    fn equation_against_hand_values() {
        // p = 0.1: sqrt(0.2/3) = 0.2581989, 12·sqrt(0.0375)·0.1·1.32 =
        // 0.3067403, f = 0.5649392; s = 1000 B, R = 100 ms:
        // X = 1000/(0.1·0.5649392) = 17701.02 B/s.
        assert!((f_of_p(0.1) - 0.5649392).abs() < 1e-6);
        let x = throughput_bytes_per_s(1000.0, 100.0 * MS, 0.1);
        assert!((x - 17701.02).abs() < 0.01, "{x}");
        // p = 0.01: f = 0.0816497 + 0.0073720 = 0.0890216, X = 112332.2 B/s.
        let x = throughput_bytes_per_s(1000.0, 100.0 * MS, 0.01);
        assert!((x - 112332.2).abs() < 0.1, "{x}");
        // p = 1: f = 0.8164966 + 12·0.6123724·33 = 243.3160.
        assert!((f_of_p(1.0) - 243.3160).abs() < 1e-3);
        // X scales as s/R.
        let x2 = throughput_bytes_per_s(2000.0, 50.0 * MS, 0.01);
        assert!((x2 / x - 4.0).abs() < 1e-12);
        assert_eq!(throughput_bytes_per_s(1000.0, 100.0 * MS, 0.0), f64::INFINITY);
    }

    #[test]
    fn equation_is_monotone_in_p() {
        let mut prev = f64::INFINITY;
        let mut p = 1e-9;
        while p <= 1.0 {
            let x = throughput_bytes_per_s(1200.0, 60.0 * MS, p);
            assert!(x < prev, "p {p}");
            prev = x;
            p *= 1.05;
        }
    }

    #[test]
    fn inverse_round_trips() {
        for &p in &[1e-9, 1e-6, 1e-4, 0.003, 0.05, 0.2064, 0.5, 0.99] {
            for &rtt in &[1.0 * MS, 60.0 * MS, 1000.0 * MS] {
                let x = throughput_bytes_per_s(1200.0, rtt, p);
                let back = loss_event_rate_for_rate(1200.0, rtt, x);
                assert!((back - p).abs() / p < 1e-9, "p {p} rtt {rtt}: {back}");
                let x_back = throughput_bytes_per_s(1200.0, rtt, back);
                assert!((x_back - x).abs() / x < 1e-9);
            }
        }
        // Out of range and degenerate inputs.
        assert_eq!(loss_event_rate_for_rate(1200.0, 60.0 * MS, 1e-3), 1.0);
        assert_eq!(loss_event_rate_for_rate(1200.0, 60.0 * MS, 1e30), P_MIN);
        for (s, r, x) in [
            (1200.0, 0.0, 1e6),
            (1200.0, 60.0 * MS, 0.0),
            (1200.0, f64::NAN, 1e6),
            (0.0, 60.0 * MS, 1e6),
            (1200.0, 60.0 * MS, f64::NAN),
        ] {
            let p = loss_event_rate_for_rate(s, r, x);
            // f(p) = 2: p ≈ 0.2064.
            assert!((f_of_p(p) - 2.0).abs() < 1e-9, "{s} {r} {x}: {p}");
        }
        assert!((loss_event_rate_for_rate(1200.0, 0.0, 1e6) - 0.2064).abs() < 1e-3);
    }
}
