//! The scenario's clock settings in integer nanoseconds, checked once for
//! every driver.

use crate::ctx::Ctx;
use crate::scenario::{Scenario, ScenarioError};

#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub duration_ns: u64,
    pub sample_interval_ns: u64,
    pub measure_from_ns: u64,
}

impl Timing {
    /// `duration_s` positive, `sample_interval_ms` non-negative and
    /// `measure_from_s` before the end, each error naming its key.
    pub fn of(cx: &Ctx, sc: &Scenario) -> Result<Timing, ScenarioError> {
        let duration_ns = cx.s_to_ns(sc.duration_s, "duration_s")?;
        if duration_ns == 0 {
            return Err(cx.err("duration_s", "expected a positive duration in seconds"));
        }
        let sample_interval_ns = cx.ms_to_ns(sc.sample_interval_ms, "sample_interval_ms")?;
        let measure_from_ns = cx.s_to_ns(sc.measure_from_s, "measure_from_s")?;
        if measure_from_ns >= duration_ns {
            return Err(cx.err(
                "measure_from_s",
                format!("must be less than duration_s ({})", sc.duration_s),
            ));
        }
        Ok(Timing {
            duration_ns,
            sample_interval_ns,
            measure_from_ns,
        })
    }
}
