//! What a run leaves behind: per-interval rows in a CSV file (one column
//! per field of a row struct, units in the column names) and a JSON summary,
//! plus the distribution statistics the summaries use.
//!
//! Rows are flushed as they are written, so a run that is killed leaves
//! every completed interval on disk and another program can follow the
//! file while the run goes on.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

/// When per-interval rows fall due: at start + k·interval, k = 1, 2, ...
#[derive(Clone, Copy, Debug)]
pub struct RowClock {
    next_ns: u64,
    interval_ns: u64,
}

impl RowClock {
    /// `interval_ns` must be positive (the CLI guarantees at least 1 ns).
    pub fn new(start_ns: u64, interval_ns: u64) -> Self {
        let interval_ns = interval_ns.max(1);
        Self {
            next_ns: start_ns.saturating_add(interval_ns),
            interval_ns,
        }
    }

    /// The time of the next row.
    pub fn next_ns(&self) -> u64 {
        self.next_ns
    }

    /// The next row time if it is at or before `now_ns`, moving past it;
    /// call until `None` to write every row that is due.
    pub fn take_due(&mut self, now_ns: u64) -> Option<u64> {
        if self.next_ns > now_ns {
            return None;
        }
        let t = self.next_ns;
        self.next_ns = t.saturating_add(self.interval_ns);
        Some(t)
    }
}

/// A CSV file of rows of one type, or nothing when no path was given.
pub struct Recorder {
    writer: Option<csv::Writer<File>>,
}

impl Recorder {
    /// Create (truncate) `path`; `None` records nothing.
    pub fn create(path: Option<&Path>) -> io::Result<Self> {
        let writer = match path {
            Some(p) => Some(csv::Writer::from_writer(
                File::create(p).map_err(|e| with_path(e, p))?,
            )),
            None => None,
        };
        Ok(Self { writer })
    }

    /// Append one row (the header comes from the first row's field names).
    pub fn row<R: Serialize>(&mut self, row: &R) -> io::Result<()> {
        if let Some(w) = self.writer.as_mut() {
            w.serialize(row).map_err(io::Error::other)?;
            w.flush()?;
        }
        Ok(())
    }
}

fn with_path(e: io::Error, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// Write `summary` as pretty JSON to `path`.
pub fn write_summary<S: Serialize>(path: &Path, summary: &S) -> io::Result<()> {
    let file = File::create(path).map_err(|e| with_path(e, path))?;
    let mut w = BufWriter::new(file);
    serde_json::to_writer_pretty(&mut w, summary).map_err(io::Error::other)?;
    w.write_all(b"\n")?;
    w.flush()
}

/// The summary's path: the one given, else the record's path with its
/// extension replaced by `.summary.json`, else none.
pub fn summary_path(summary: Option<&Path>, record: Option<&Path>) -> Option<PathBuf> {
    summary
        .map(Path::to_path_buf)
        .or_else(|| record.map(|r| r.with_extension("summary.json")))
}

/// Count, mean, median, 95th percentile and maximum of a sample, in the
/// unit of the field it is stored in (e.g. `queueing_delay_ms`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Distribution {
    pub count: u64,
    pub mean: f64,
    pub p50: f64,
    pub p95: f64,
    pub max: f64,
}

impl Distribution {
    /// None for an empty sample. NaNs are ignored. Percentiles are the
    /// nearest-rank ones.
    pub fn of(samples: &[f64]) -> Option<Self> {
        let mut v: Vec<f64> = samples.iter().copied().filter(|x| !x.is_nan()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let rank = |q: f64| v[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
        Some(Self {
            count: n as u64,
            mean: v.iter().sum::<f64>() / n as f64,
            p50: rank(0.5),
            p95: rank(0.95),
            max: v[n - 1],
        })
    }
}

/// Bits/s from bytes over ns (0 for an empty span).
pub fn rate_bps(bytes: u64, span_ns: u64) -> f64 {
    if span_ns == 0 {
        0.0
    } else {
        bytes as f64 * 8.0 * 1e9 / span_ns as f64
    }
}

pub fn ns_to_ms(ns: f64) -> f64 {
    ns / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distribution_uses_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        let d = Distribution::of(&v).unwrap();
        assert_eq!(
            (d.count, d.mean, d.p50, d.p95, d.max),
            (100, 50.5, 50.0, 95.0, 100.0)
        );
        let d = Distribution::of(&[3.0, f64::NAN]).unwrap();
        assert_eq!((d.count, d.p50, d.p95, d.max), (1, 3.0, 3.0, 3.0));
        assert!(Distribution::of(&[]).is_none());
    }

    #[test]
    fn recorder_writes_a_header_and_rows() {
        #[derive(Serialize)]
        struct Row {
            t_s: f64,
            owd_ms: Option<f64>,
        }
        let dir = std::env::temp_dir().join(format!("latlab-net-record-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.csv");
        let mut r = Recorder::create(Some(&path)).unwrap();
        r.row(&Row {
            t_s: 0.1,
            owd_ms: Some(2.5),
        })
        .unwrap();
        r.row(&Row {
            t_s: 0.2,
            owd_ms: None,
        })
        .unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "t_s,owd_ms\n0.1,2.5\n0.2,\n"
        );
        assert_eq!(summary_path(None, Some(&path)), Some(dir.join("r.summary.json")));
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(Recorder::create(Some(Path::new("/nonexistent/dir/x.csv"))).is_err());
    }

    #[test]
    fn rates() {
        assert_eq!(rate_bps(250_000, 1_000_000_000), 2e6);
        assert_eq!(rate_bps(1, 0), 0.0);
    }
}

#[cfg(test)]
mod row_clock_tests {
    use super::RowClock;

    #[test]
    fn rows_fall_on_whole_intervals_and_catch_up() {
        let mut c = RowClock::new(1_000, 100);
        assert_eq!(c.next_ns(), 1_100);
        assert_eq!(c.take_due(1_099), None);
        // A late turn writes every row it missed, in order.
        let due: Vec<u64> = std::iter::from_fn(|| c.take_due(1_350)).collect();
        assert_eq!(due, vec![1_100, 1_200, 1_300]);
        assert_eq!(c.next_ns(), 1_400);
    }
}
