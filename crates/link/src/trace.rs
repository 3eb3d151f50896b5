//! Mahimahi packet-delivery traces.
//!
//! A trace is text, one integer per line: a millisecond at which one
//! delivery opportunity of [`OPPORTUNITY_BYTES`] occurs (a repeated
//! timestamp is several opportunities in that millisecond). Timestamps are
//! non-decreasing and the trace loops with period = its last timestamp, as
//! Mahimahi's `LinkQueue` does (`base_timestamp_ += schedule_.back()` on
//! wrap-around). Opportunity `n` (counted from 0 over all loops) happens at
//! `(n / len) · period + ms[n % len]` milliseconds; the next opportunity at
//! or after any instant is found arithmetically, by a binary search over one
//! period, never by stepping through idle opportunities.

use std::path::Path;
use thiserror::Error;

/// Bytes one delivery opportunity carries (Mahimahi's `PACKET_SIZE`, an MTU).
pub const OPPORTUNITY_BYTES: u32 = 1500;

const NS_PER_MS: u64 = 1_000_000;

/// The largest timestamp a trace may hold: its nanoseconds must fit the
/// simulator's u64 clock (about 584 years).
pub const MAX_TIMESTAMP_MS: u64 = u64::MAX / NS_PER_MS;

/// What is wrong with a trace; every variant names the file.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TraceError {
    #[error("{file}: cannot read the trace: {message}")]
    Io { file: String, message: String },
    #[error("{file}: line {line}: expected a non-negative integer number of milliseconds, got {text:?}")]
    Malformed { file: String, line: usize, text: String },
    #[error("{file}: line {line}: timestamp {text} ms is past the end of the simulator's clock (at most {MAX_TIMESTAMP_MS} ms, about 584 years)")]
    TooLarge { file: String, line: usize, text: String },
    #[error("{file}: line {line}: timestamp {ms} ms is before the previous one ({previous_ms} ms); timestamps must be non-decreasing")]
    NonMonotone {
        file: String,
        line: usize,
        ms: u64,
        previous_ms: u64,
    },
    #[error("{file}: the trace holds no timestamps")]
    Empty { file: String },
    #[error("{file}: the trace must last a nonzero time (its last timestamp is 0 ms)")]
    ZeroLength { file: String },
}

/// A parsed, looping Mahimahi trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceSchedule {
    /// Opportunity times within one period, ms, non-decreasing; the last is the period.
    ms: Vec<u64>,
}

impl TraceSchedule {
    /// Parse trace text. `file` names it in errors. As Mahimahi's reader:
    /// every line holds one integer (digits only; an empty line is an
    /// error); LF or CRLF line ends; the final line end is optional. Unlike
    /// it, a timestamp past [`MAX_TIMESTAMP_MS`] is an error: its
    /// opportunities could never happen on the simulator's clock.
    pub fn parse(text: &str, file: &str) -> Result<Self, TraceError> {
        let mut ms: Vec<u64> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let digits = !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit());
            if !digits {
                return Err(TraceError::Malformed {
                    file: file.to_string(),
                    line: i + 1,
                    text: line.to_string(),
                });
            }
            // All digits: only a value past the clock (or past u64) fails here.
            let v = line
                .parse::<u64>()
                .ok()
                .filter(|&v| v <= MAX_TIMESTAMP_MS)
                .ok_or_else(|| TraceError::TooLarge {
                    file: file.to_string(),
                    line: i + 1,
                    text: line.to_string(),
                })?;
            if let Some(&prev) = ms.last() {
                if v < prev {
                    return Err(TraceError::NonMonotone {
                        file: file.to_string(),
                        line: i + 1,
                        ms: v,
                        previous_ms: prev,
                    });
                }
            }
            ms.push(v);
        }
        Self::from_ms(ms, file)
    }

    /// Read and parse a trace file.
    pub fn load(path: &Path) -> Result<Self, TraceError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| TraceError::Io {
            file: file.clone(),
            message: e.to_string(),
        })?;
        Self::parse(&text, &file)
    }

    /// A trace from opportunity times in milliseconds (non-decreasing, at
    /// most [`MAX_TIMESTAMP_MS`]).
    pub fn from_ms(ms: Vec<u64>, file: &str) -> Result<Self, TraceError> {
        match ms.last() {
            None => Err(TraceError::Empty {
                file: file.to_string(),
            }),
            Some(0) => Err(TraceError::ZeroLength {
                file: file.to_string(),
            }),
            Some(_) => {
                if let Some(i) = ms.iter().position(|&m| m > MAX_TIMESTAMP_MS) {
                    return Err(TraceError::TooLarge {
                        file: file.to_string(),
                        line: i + 1,
                        text: ms[i].to_string(),
                    });
                }
                if let Some(i) = ms.windows(2).position(|w| w[1] < w[0]) {
                    return Err(TraceError::NonMonotone {
                        file: file.to_string(),
                        line: i + 2,
                        ms: ms[i + 1],
                        previous_ms: ms[i],
                    });
                }
                Ok(TraceSchedule { ms })
            }
        }
    }

    /// Opportunities in one period.
    pub fn len(&self) -> usize {
        self.ms.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ms.is_empty()
    }

    pub fn period_ms(&self) -> u64 {
        *self.ms.last().expect("a trace is never empty")
    }

    /// Mean capacity over one period, bits per second.
    pub fn mean_rate_bps(&self) -> f64 {
        self.len() as f64 * OPPORTUNITY_BYTES as f64 * 8.0 / (self.period_ms() as f64 / 1e3)
    }

    /// Time of opportunity `n`, nanoseconds; u64::MAX ("never") for an
    /// opportunity past the end of the u64 nanosecond clock (about 584
    /// years), which a plain product would wrap to an early time.
    #[inline]
    pub fn time_ns(&self, n: u64) -> u64 {
        let len = self.ms.len() as u64;
        (n / len)
            .checked_mul(self.period_ms())
            .and_then(|ms| ms.checked_add(self.ms[(n % len) as usize]))
            .and_then(|ms| ms.checked_mul(NS_PER_MS))
            .unwrap_or(u64::MAX)
    }

    /// Index of the first opportunity at or after `t_ns`; u64::MAX if that
    /// index does not fit a u64 (more than 10^6 opportunities per ms, asked
    /// about a time centuries away).
    pub fn first_at_or_after(&self, t_ns: u64) -> u64 {
        let len = self.ms.len() as u64;
        let period = self.period_ms();
        let t_ms = t_ns.div_ceil(NS_PER_MS);
        let (k, r) = (t_ms / period, t_ms % period);
        let index = |loops: u64, j: usize| {
            loops
                .checked_mul(len)
                .and_then(|n| n.checked_add(j as u64))
                .unwrap_or(u64::MAX)
        };
        // r < period = the last timestamp, so loop k holds an opportunity ≥ t.
        let mut n = index(k, self.ms.partition_point(|&m| m < r));
        if r == 0 && k > 0 {
            // Loop k − 1 ends exactly at k·period: its last opportunities count.
            let j = self.ms.partition_point(|&m| m < period);
            n = n.min(index(k - 1, j));
        }
        n
    }

    /// Opportunities in [t0_ns, t1_ns).
    pub fn count_between(&self, t0_ns: u64, t1_ns: u64) -> u64 {
        self.first_at_or_after(t1_ns)
            .saturating_sub(self.first_at_or_after(t0_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Opportunity times by brute force over a few loops.
    fn brute(ms: &[u64], loops: u64) -> Vec<u64> {
        let p = *ms.last().unwrap();
        (0..loops)
            .flat_map(|k| ms.iter().map(move |m| (k * p + m) * NS_PER_MS))
            .collect()
    }

    #[test]
    fn next_opportunity_matches_brute_force() {
        for ms in [vec![1], vec![0, 0, 3, 3, 7], vec![2, 2, 2, 5], vec![0, 10]] {
            let tr = TraceSchedule::from_ms(ms.clone(), "t").unwrap();
            let times = brute(&ms, 6);
            for (n, &t) in times.iter().enumerate() {
                assert_eq!(tr.time_ns(n as u64), t, "{ms:?} n={n}");
            }
            let horizon = times[times.len() - ms.len()];
            for t in (0..horizon).step_by(250_000) {
                let want = times.iter().position(|&x| x >= t).unwrap() as u64;
                assert_eq!(tr.first_at_or_after(t), want, "{ms:?} t={t}");
            }
        }
    }

    #[test]
    fn parse_errors_name_file_and_line() {
        let e = TraceSchedule::parse("1\n2\nx3\n", "a.trace").unwrap_err();
        assert_eq!(
            e,
            TraceError::Malformed {
                file: "a.trace".into(),
                line: 3,
                text: "x3".into()
            }
        );
        assert!(e.to_string().starts_with("a.trace: line 3:"));
        assert!(matches!(
            TraceSchedule::parse("1\n\n2\n", "e").unwrap_err(),
            TraceError::Malformed { line: 2, .. }
        ));
        assert!(TraceSchedule::parse("1\r\n3\r\n", "crlf").is_ok());
        let e = TraceSchedule::parse("1\n5\n4\n", "b.trace").unwrap_err();
        assert!(matches!(
            e,
            TraceError::NonMonotone {
                line: 3,
                ms: 4,
                previous_ms: 5,
                ..
            }
        ));
        assert!(e.to_string().contains("non-decreasing"));
        assert!(matches!(
            TraceSchedule::parse("", "c").unwrap_err(),
            TraceError::Empty { .. }
        ));
        assert!(matches!(
            TraceSchedule::parse("0\n0\n", "d").unwrap_err(),
            TraceError::ZeroLength { .. }
        ));
        let e = TraceSchedule::load(Path::new("/nonexistent/x.trace")).unwrap_err();
        assert!(e.to_string().starts_with("/nonexistent/x.trace: cannot read"));
    }

    /// Found by `latlab-fuzz traces`: past the end of the u64 nanosecond
    /// clock, time_ns wrapped to an early time (14.65 s for this trace's
    /// first opportunity after u64::MAX ns) instead of saturating.
    #[test]
    fn times_past_the_clock_saturate_instead_of_wrapping() {
        let tr = TraceSchedule::parse("33251\n", "t").unwrap();
        let n = tr.first_at_or_after(u64::MAX);
        assert_eq!(n, 554_772_610);
        assert_eq!(tr.time_ns(n), u64::MAX);
        assert_eq!(tr.time_ns(n - 1), 554_772_610 * 33_251 * NS_PER_MS);
        assert_eq!(tr.time_ns(u64::MAX), u64::MAX);
        // 2·10^6 opportunities per ms: the index of an opportunity
        // centuries away does not fit a u64, and saturates too.
        let dense = TraceSchedule::from_ms(vec![1; 2_000_000], "dense").unwrap();
        assert_eq!(dense.first_at_or_after(u64::MAX), u64::MAX);
        assert_eq!(dense.first_at_or_after(2_000_000), 2_000_000);
        assert_eq!(dense.count_between(0, u64::MAX), u64::MAX);
    }

    /// Seen in `latlab-fuzz traces` inputs: a timestamp whose nanoseconds do not
    /// fit a u64 parsed, and its opportunities were all "never" (or a
    /// number past u64 was called not a non-negative integer).
    #[test]
    fn timestamps_past_the_clock_are_refused_with_their_line() {
        assert!(TraceSchedule::parse("1\n18446744073709\n", "t").is_ok());
        for big in [
            "18446744073710",
            "18446744073709551615",
            "99999999999999999999999",
        ] {
            let e = TraceSchedule::parse(&format!("1\n{big}\n"), "big.trace").unwrap_err();
            assert_eq!(
                e,
                TraceError::TooLarge {
                    file: "big.trace".into(),
                    line: 2,
                    text: big.into()
                }
            );
            assert!(e.to_string().starts_with("big.trace: line 2: timestamp"), "{e}");
        }
        assert!(matches!(
            TraceSchedule::from_ms(vec![1, u64::MAX], "v").unwrap_err(),
            TraceError::TooLarge { line: 2, .. }
        ));
    }

    #[test]
    fn one_opportunity_per_ms_is_12_mbps() {
        let tr = TraceSchedule::parse("1\n", "t").unwrap();
        assert_eq!(tr.mean_rate_bps(), 12e6);
        // Opportunities at 1, 2, ... ms: 1000 of them in (0, 1000 ms].
        assert_eq!(tr.count_between(1, 1_000_000_001), 1000);
    }
}
