//! Where a scenario came from, for errors that name it, and the unit
//! conversions every builder step shares (a bad number names its key path).

use crate::scenario::ScenarioError;

pub struct Ctx<'a> {
    pub source: &'a str,
}

impl Ctx<'_> {
    pub fn err(&self, path: impl Into<String>, message: impl Into<String>) -> ScenarioError {
        ScenarioError {
            source_name: self.source.to_string(),
            path: path.into(),
            message: message.into(),
        }
    }

    /// Milliseconds (finite, ≥ 0) to integer nanoseconds.
    pub fn ms_to_ns(&self, ms: f64, path: &str) -> Result<u64, ScenarioError> {
        self.s_to_ns(ms / 1e3, path).map_err(|mut e| {
            e.message = e.message.replace("seconds", "milliseconds");
            e
        })
    }

    pub fn s_to_ns(&self, s: f64, path: &str) -> Result<u64, ScenarioError> {
        if !s.is_finite() || s < 0.0 {
            return Err(self.err(
                path,
                format!("expected a non-negative number of seconds, got {s}"),
            ));
        }
        if s > 1e9 {
            return Err(self.err(path, format!("{s} seconds is too long (at most 1e9)")));
        }
        Ok((s * 1e9).round() as u64)
    }
}
