//! Exact fractional Gaussian noise and Norros long-range-dependent traffic
//! (docs/models/workloads.md, "Long-range-dependent traffic").
//!
//! [`fgn`] draws N samples of unit-variance fGn with Hurst parameter H by
//! circulant embedding (Davies & Harte 1987; Wood & Chan 1994; Dietrich &
//! Newsam 1997), in O(N log N): embed the N×N Toeplitz covariance in a
//! 2N-periodic circulant whose first row is
//! c = [γ(0), …, γ(N−1), γ(N), γ(N−1), …, γ(1)], with the fGn
//! autocovariance γ(k) = ½(|k+1|^2H − 2|k|^2H + |k−1|^2H). Its eigenvalues
//! are λ = FFT(c), real and non-negative for fGn. With M = 2N and standard
//! normal draws Z, Z':
//!   W_0 = √(λ_0/M)·Z_0,  W_N = √(λ_N/M)·Z_N,
//!   W_k = √(λ_k/(2M))·(Z_k + i·Z'_k),  W_(M−k) = conj(W_k)  (0 < k < N),
//! and X = Re(FFT(W))[0..N] has covariance exactly γ (up to rounding): the
//! method is exact, not an approximation in N.
//!
//! [`norros_bytes_per_slot`] scales fGn to Norros's model of aggregate
//! traffic, A(t) = m·t + √(a·m)·Z(t) with Z fractional Brownian motion
//! (Norros 1995, "On the use of fractional Brownian motion in the theory of
//! connectionless networks").

use rand::Rng;
use rand_distr::StandardNormal;
use rustfft::num_complex::Complex;
use rustfft::FftPlanner;

/// Why a draw was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FgnError {
    #[error("hurst must be in (0, 1), got {0}")]
    Hurst(f64),
    #[error("circulant embedding is not non-negative definite: eigenvalue {index} = {value:e}")]
    NegativeEigenvalue { index: usize, value: f64 },
    #[error("{0}")]
    Parameter(String),
}

/// The autocovariance of unit-variance fGn at lag k:
/// γ(k) = ½(|k+1|^2H − 2|k|^2H + |k−1|^2H).
pub fn fgn_autocovariance(k: u64, hurst: f64) -> f64 {
    let h2 = 2.0 * hurst;
    let k = k as f64;
    0.5 * ((k + 1.0).powf(h2) - 2.0 * k.powf(h2) + (k - 1.0).abs().powf(h2))
}

/// N samples of unit-variance fractional Gaussian noise with Hurst
/// parameter `hurst` in (0, 1), drawn exactly by circulant embedding
/// (module docs). H = 0.5 is white noise; H > 0.5 is long-range dependent.
/// Uses 2N + 2 standard normal draws from `rng` (fewer for N ≤ 1).
pub fn fgn(n: usize, hurst: f64, rng: &mut impl Rng) -> Result<Vec<f64>, FgnError> {
    if !(hurst > 0.0 && hurst < 1.0) {
        return Err(FgnError::Hurst(hurst));
    }
    let cov: Vec<f64> = (0..=n as u64).map(|k| fgn_autocovariance(k, hurst)).collect();
    circulant_gaussian(&cov, rng)
}

/// A stationary Gaussian sequence of length N = cov.len() − 1 with
/// autocovariance `cov` = [γ(0), …, γ(N)], by circulant embedding. Fails if
/// the embedding has an eigenvalue below zero by more than rounding.
fn circulant_gaussian(cov: &[f64], rng: &mut impl Rng) -> Result<Vec<f64>, FgnError> {
    let n = cov.len().saturating_sub(1);
    if n == 0 {
        return Ok(Vec::new());
    }
    let m = 2 * n;
    // c = [γ0..γ(N−1), γN, γ(N−1)..γ1]
    let mut buf: Vec<Complex<f64>> = (0..m)
        .map(|j| Complex::new(cov[if j <= n { j } else { m - j }], 0.0))
        .collect();
    let fft = FftPlanner::<f64>::new().plan_fft_forward(m);
    fft.process(&mut buf);

    // λ is real (c is symmetric); rounding leaves tiny imaginary parts and
    // possibly tiny negative values, |error| ≲ M·ε·Σ|c|.
    let scale: f64 = cov.iter().map(|g| g.abs()).sum::<f64>() * 2.0;
    let tol = 1e-9 * scale.max(f64::MIN_POSITIVE);
    let mut lambda = Vec::with_capacity(m);
    for (index, z) in buf.iter().enumerate() {
        if z.re < -tol || !z.re.is_finite() {
            return Err(FgnError::NegativeEigenvalue { index, value: z.re });
        }
        lambda.push(z.re.max(0.0));
    }

    let mf = m as f64;
    let mut normal = || -> f64 { rng.sample(StandardNormal) };
    buf[0] = Complex::new((lambda[0] / mf).sqrt() * normal(), 0.0);
    buf[n] = Complex::new((lambda[n] / mf).sqrt() * normal(), 0.0);
    for k in 1..n {
        let s = (lambda[k] / (2.0 * mf)).sqrt();
        let w = Complex::new(s * normal(), s * normal());
        buf[k] = w;
        buf[m - k] = w.conj();
    }
    fft.process(&mut buf);
    buf.truncate(n);
    Ok(buf.into_iter().map(|z| z.re).collect())
}

/// Bytes offered in each of `n_slots` consecutive slots by Norros's
/// fractional-Brownian traffic: A_k = m·Δ + √(a·m)·Δ^H·X_k, X fGn
/// ([`fgn`]).
///
/// Units: `mean_rate_bps` is the mean rate in **bits** per second, so
/// m = mean_rate_bps / 8 bytes per second; Δ = `slot_ns`·10⁻⁹ seconds;
/// `variance_coef` is Norros's a, in bytes·s^(1−2H), so that
/// Var A_k = a·m·Δ^2H bytes². Negative slots are clipped to 0 (which
/// raises the mean by E[max(0, −A_k)], negligible when the per-slot
/// coefficient of variation √(a/m)·Δ^(H−1) is well below ½). Slots are
/// rounded to whole bytes with the remainder carried to the next slot, so
/// the total is the sum of the clipped values to within one byte.
pub fn norros_bytes_per_slot(
    mean_rate_bps: f64,
    slot_ns: u64,
    hurst: f64,
    variance_coef: f64,
    n_slots: usize,
    rng: &mut impl Rng,
) -> Result<Vec<u64>, FgnError> {
    if !(mean_rate_bps.is_finite() && mean_rate_bps >= 0.0) {
        return Err(FgnError::Parameter(format!(
            "mean_rate_bps must be finite and non-negative, got {mean_rate_bps}"
        )));
    }
    if slot_ns == 0 {
        return Err(FgnError::Parameter("slot_ns must be greater than 0".to_string()));
    }
    if !(variance_coef.is_finite() && variance_coef >= 0.0) {
        return Err(FgnError::Parameter(format!(
            "variance_coef (a) must be finite and non-negative, got {variance_coef}"
        )));
    }
    let x = fgn(n_slots, hurst, rng)?;
    let m = mean_rate_bps / 8.0;
    let slot_s = slot_ns as f64 * 1e-9;
    let mean = m * slot_s;
    let sd = (variance_coef * m).sqrt() * slot_s.powf(hurst);
    let mut cum = 0.0f64;
    let mut emitted = 0u64;
    Ok(x.iter()
        .map(|&xk| {
            cum += (mean + sd * xk).max(0.0);
            // `as` saturates: never panics on huge values.
            let target = cum.round() as u64;
            let out = target.saturating_sub(emitted);
            emitted = emitted.max(target);
            out
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_pcg::Pcg64Mcg;

    fn mean(x: &[f64]) -> f64 {
        x.iter().sum::<f64>() / x.len() as f64
    }

    /// Least-squares slope of y on x.
    fn ls_slope(x: &[f64], y: &[f64]) -> f64 {
        let (mx, my) = (mean(x), mean(y));
        let sxy: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
        let sxx: f64 = x.iter().map(|a| (a - mx).powi(2)).sum();
        sxy / sxx
    }

    /// Variance-time plot: the variance of the means of blocks of m
    /// samples, for m = 1, 2, 4, …, 1024, and its least-squares log-log
    /// slope. The classical estimator (sample variance of the block means
    /// about the grand mean) is biased for a long-range-dependent series:
    /// E S²_m = σ²·(m^(2H−2) − N^(2H−2)), the second term being the
    /// variance of the grand mean. Adding σ²·N^(2H−2) back removes the bias
    /// (over 40 seeds at H = 0.85, N = 2^16: slope −0.301 ± 0.018, against
    /// −0.343 ± 0.025 uncorrected and −0.300 ± 0.036 about the true mean 0).
    fn variance_time_slope(x: &[f64], hurst: f64, sigma2: f64) -> f64 {
        let mu = mean(x);
        let bias = sigma2 * (x.len() as f64).powf(2.0 * hurst - 2.0);
        let (mut lx, mut ly) = (Vec::new(), Vec::new());
        for p in 0..=10 {
            let m = 1usize << p;
            let blocks: Vec<f64> = x.chunks_exact(m).map(mean).collect();
            let var = blocks.iter().map(|b| (b - mu).powi(2)).sum::<f64>() / blocks.len() as f64;
            lx.push((m as f64).ln());
            ly.push((var + bias).ln());
        }
        ls_slope(&lx, &ly)
    }

    fn autocorrelation(x: &[f64], lag: usize) -> f64 {
        let mu = mean(x);
        let var: f64 = x.iter().map(|v| (v - mu).powi(2)).sum();
        let cov: f64 = x.windows(lag + 1).map(|w| (w[0] - mu) * (w[lag] - mu)).sum();
        cov / var
    }

    #[test]
    fn variance_time_slope_is_2h_minus_2() {
        let mut rng = Pcg64Mcg::seed_from_u64(0x5eed_0085);
        let h = 0.85;
        let x = fgn(1 << 16, h, &mut rng).unwrap();
        let slope = variance_time_slope(&x, h, 1.0);
        println!(
            "H = {h}: variance-time slope {slope:.4} (expected {:.2})",
            2.0 * h - 2.0
        );
        assert!((slope - (2.0 * h - 2.0)).abs() <= 0.05, "slope {slope}");
        // One long series: the sample mean has sd N^(H−1) = 0.19 and the
        // sample variance is biased low by about N^(2H−2) = 0.04.
        let mu = mean(&x);
        let var = x.iter().map(|v| (v - mu).powi(2)).sum::<f64>() / x.len() as f64;
        println!("mean {mu:.4}, variance {var:.4}");
        assert!(mu.abs() < 4.0 * (x.len() as f64).powf(h - 1.0), "mean {mu}");
        assert!((var - 1.0).abs() < 0.1, "variance {var}");
    }

    #[test]
    fn variance_time_slope_over_seeds_and_hursts() {
        for (seed, h) in [(1, 0.6), (2, 0.7), (3, 0.85), (4, 0.9), (5, 0.85), (6, 0.3)] {
            let mut rng = Pcg64Mcg::seed_from_u64(seed);
            let slope = variance_time_slope(&fgn(1 << 16, h, &mut rng).unwrap(), h, 1.0);
            assert!(
                (slope - (2.0 * h - 2.0)).abs() <= 0.05,
                "H {h} seed {seed}: slope {slope}"
            );
        }
    }

    #[test]
    fn ensemble_mean_variance_and_covariance_are_exact() {
        // 400 independent series of 1024: E X = 0, E X² = 1 and
        // E X_j X_(j+k) = γ(k) at every position, not only asymptotically.
        let (h, n, reps) = (0.85, 1024, 400);
        let mut rng = Pcg64Mcg::seed_from_u64(7);
        let lags = [0usize, 1, 2, 5, 10, 100];
        let mut sum = 0.0;
        let mut acc = vec![0.0; lags.len()];
        let mut count = vec![0usize; lags.len()];
        for _ in 0..reps {
            let x = fgn(n, h, &mut rng).unwrap();
            sum += x.iter().sum::<f64>();
            for (i, &lag) in lags.iter().enumerate() {
                for w in x.windows(lag + 1) {
                    acc[i] += w[0] * w[lag];
                    count[i] += 1;
                }
            }
        }
        let mu = sum / (n * reps) as f64;
        // sd of the grand mean: N^(H−1)/√reps ≈ 0.018.
        println!("ensemble mean {mu:.4}");
        assert!(mu.abs() < 0.07, "mean {mu}");
        for (i, &lag) in lags.iter().enumerate() {
            let got = acc[i] / count[i] as f64;
            let want = fgn_autocovariance(lag as u64, h);
            println!("lag {lag}: ensemble covariance {got:.4}, γ = {want:.4}");
            assert!((got - want).abs() < 0.03, "lag {lag}: {got} vs γ = {want}");
        }
    }

    #[test]
    fn hurst_one_half_is_white_noise() {
        let n = 1 << 16;
        let mut rng = Pcg64Mcg::seed_from_u64(11);
        let x = fgn(n, 0.5, &mut rng).unwrap();
        let r1 = autocorrelation(&x, 1);
        println!("H = 0.5: lag-1 autocorrelation {r1:.5}");
        assert!(r1.abs() < 4.0 / (n as f64).sqrt(), "r1 {r1}");
        assert_eq!(fgn_autocovariance(0, 0.5), 1.0);
        assert_eq!(fgn_autocovariance(1, 0.5), 0.0);
        assert_eq!(fgn_autocovariance(7, 0.5), 0.0);
        let slope = variance_time_slope(&x, 0.5, 1.0);
        assert!((slope + 1.0).abs() < 0.05, "slope {slope}");
        // H = 0.85: lag-1 correlation 2^(2H−1) − 1 = 0.6245.
        let x = fgn(n, 0.85, &mut rng).unwrap();
        let r1 = autocorrelation(&x, 1);
        assert!((r1 - (2f64.powf(0.7) - 1.0)).abs() < 0.03, "r1 {r1}");
    }

    #[test]
    fn same_seed_same_noise_and_small_sizes() {
        let a = fgn(1000, 0.85, &mut Pcg64Mcg::seed_from_u64(3)).unwrap();
        let b = fgn(1000, 0.85, &mut Pcg64Mcg::seed_from_u64(3)).unwrap();
        assert_eq!(a, b);
        let mut rng = Pcg64Mcg::seed_from_u64(3);
        assert!(fgn(0, 0.85, &mut rng).unwrap().is_empty());
        assert_eq!(fgn(1, 0.85, &mut rng).unwrap().len(), 1);
        assert_eq!(fgn(3, 0.85, &mut rng).unwrap().len(), 3);
        // Sizes that are not powers of two go through the same FFT.
        assert_eq!(fgn(1001, 0.05, &mut rng).unwrap().len(), 1001);
        assert_eq!(fgn(997, 0.99, &mut rng).unwrap().len(), 997);
    }

    #[test]
    fn bad_hurst_is_an_error() {
        let mut rng = Pcg64Mcg::seed_from_u64(0);
        for h in [0.0, 1.0, -0.1, 1.5, f64::NAN, f64::INFINITY] {
            assert!(matches!(fgn(16, h, &mut rng), Err(FgnError::Hurst(_))), "{h}");
            assert!(norros_bytes_per_slot(1e6, 1_000_000, h, 1.0, 16, &mut rng).is_err());
        }
    }

    #[test]
    fn a_covariance_without_a_valid_embedding_is_an_error() {
        // γ = [1, 2, 0] is no covariance (|γ(1)| > γ(0)): its circulant
        // [1, 2, 0, 2] has eigenvalues 5, 1, −3, 1.
        let mut rng = Pcg64Mcg::seed_from_u64(0);
        let e = circulant_gaussian(&[1.0, 2.0, 0.0], &mut rng).unwrap_err();
        assert!(matches!(e, FgnError::NegativeEigenvalue { .. }), "{e:?}");
        assert!(e.to_string().contains("eigenvalue"));
    }

    #[test]
    fn norros_mean_rate_is_the_requested_one() {
        // 10 Mb/s in 1 ms slots: m·Δ = 1250 bytes. a = 300 bytes·s^(1−2H)
        // gives a per-slot sd of √(a·m)·Δ^H ≈ 54 bytes (CoV 0.043, no
        // clipping); the mean of 2^16 slots then has a relative sd of
        // 0.043·N^(H−1) ≈ 0.8 %.
        let (rate, slot, h, a, n) = (10e6, 1_000_000u64, 0.85, 300.0, 1 << 16);
        let mut rng = Pcg64Mcg::seed_from_u64(21);
        let slots = norros_bytes_per_slot(rate, slot, h, a, n, &mut rng).unwrap();
        let total: u64 = slots.iter().sum();
        let got_bps = total as f64 * 8.0 / (n as f64 * slot as f64 * 1e-9);
        println!("Norros: requested {rate} b/s, got {got_bps:.0} b/s");
        assert!((got_bps / rate - 1.0).abs() < 0.04, "{got_bps}");
        // Per-slot variance ≈ a·m·Δ^2H (about the known mean).
        let want_sd = (a * rate / 8.0).sqrt() * 1e-3f64.powf(h);
        let var = slots.iter().map(|&s| (s as f64 - 1250.0).powi(2)).sum::<f64>() / n as f64;
        assert!(
            (var.sqrt() / want_sd - 1.0).abs() < 0.1,
            "sd {} vs {want_sd}",
            var.sqrt()
        );
        // Variance-time slope of the slot series: 2H − 2.
        let x: Vec<f64> = slots.iter().map(|&s| s as f64).collect();
        let slope = variance_time_slope(&x, h, want_sd * want_sd);
        assert!((slope - (2.0 * h - 2.0)).abs() <= 0.05, "slope {slope}");
    }

    #[test]
    fn norros_without_variance_is_constant_and_totals_are_exact() {
        let mut rng = Pcg64Mcg::seed_from_u64(1);
        // 1 Mb/s in 0.3 ms slots: 37.5 bytes per slot, carried exactly.
        let slots = norros_bytes_per_slot(1e6, 300_000, 0.85, 0.0, 1000, &mut rng).unwrap();
        assert_eq!(slots.iter().sum::<u64>(), 37_500);
        assert!(slots.iter().all(|&s| s == 37 || s == 38));
        // Heavy variance: clipping keeps every slot ≥ 0 and raises the mean.
        let slots = norros_bytes_per_slot(1e6, 1_000_000, 0.85, 1e6, 4096, &mut rng).unwrap();
        assert!(slots.contains(&0));
        assert!(slots.iter().sum::<u64>() as f64 > 125.0 * 4096.0 * 0.9);
    }

    #[test]
    fn norros_rejects_bad_parameters() {
        let mut rng = Pcg64Mcg::seed_from_u64(0);
        let cases = [
            (-1.0, 1_000_000, 1.0, "mean_rate_bps"),
            (f64::NAN, 1_000_000, 1.0, "mean_rate_bps"),
            (1e6, 0, 1.0, "slot_ns"),
            (1e6, 1_000_000, -1.0, "variance_coef"),
            (1e6, 1_000_000, f64::INFINITY, "variance_coef"),
        ];
        for (rate, slot, a, field) in cases {
            let e = norros_bytes_per_slot(rate, slot, 0.85, a, 8, &mut rng).unwrap_err();
            assert!(e.to_string().contains(field), "{e}");
        }
    }
}
