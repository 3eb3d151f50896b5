//! A windowed running maximum kept in three samples (Kathleen Nichols'
//! algorithm, Linux `lib/minmax.c`): the best, second-best and third-best
//! values from successive parts of the window, so the maximum over the
//! last `win` time units is known in O(1) space and time. BBR's bottleneck
//! bandwidth filter uses it with round-trip counts as time.

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Sample {
    t: u64,
    v: u64,
}

/// The maximum of the values measured over the last `win` units of `t`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WindowedMax {
    s: [Sample; 3],
}

impl WindowedMax {
    /// The current windowed maximum.
    pub fn get(&self) -> u64 {
        self.s[0].v
    }

    /// Forget everything: `meas` at `t` is the only sample (`minmax_reset`).
    pub fn reset(&mut self, t: u64, meas: u64) -> u64 {
        self.s = [Sample { t, v: meas }; 3];
        meas
    }

    /// `minmax_running_max`: take `meas` measured at `t` (non-decreasing)
    /// and return the maximum over (t − win, t].
    pub fn update(&mut self, win: u64, t: u64, meas: u64) -> u64 {
        let val = Sample { t, v: meas };
        // A new maximum, or nothing left in the window: start over.
        if val.v >= self.s[0].v || val.t.saturating_sub(self.s[2].t) > win {
            return self.reset(t, meas);
        }
        if val.v >= self.s[1].v {
            self.s[2] = val;
            self.s[1] = val;
        } else if val.v >= self.s[2].v {
            self.s[2] = val;
        }
        self.subwin_update(win, val)
    }

    /// `minmax_subwin_update`: age the best samples out as the window moves.
    fn subwin_update(&mut self, win: u64, val: Sample) -> u64 {
        let dt = val.t.saturating_sub(self.s[0].t);
        if dt > win {
            // The best sample left the window: the 2nd and 3rd move up.
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = val;
            if val.t.saturating_sub(self.s[0].t) > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = val;
            }
        } else if self.s[1].t == self.s[0].t && dt > win / 4 {
            // A quarter of the window passed without a new 2nd choice:
            // take one from the second quarter.
            self.s[2] = val;
            self.s[1] = val;
        } else if self.s[2].t == self.s[1].t && dt > win / 2 {
            // Half the window passed without a new 3rd choice.
            self.s[2] = val;
        }
        self.s[0].v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_maximum_holds_for_the_window_then_ages_out() {
        let mut m = WindowedMax::default();
        assert_eq!(m.update(10, 0, 100), 100);
        // Smaller values do not lower it inside the window...
        for t in 1..=10 {
            assert_eq!(m.update(10, t, 50), 100, "t={t}");
        }
        // ...and it leaves once more than `win` has passed.
        assert_eq!(m.update(10, 11, 50), 50);
        // A larger value replaces it at once.
        assert_eq!(m.update(10, 12, 70), 70);
    }

    #[test]
    fn a_decreasing_series_keeps_the_best_of_the_last_window() {
        let mut m = WindowedMax::default();
        let mut got = Vec::new();
        for t in 0..30u64 {
            got.push(m.update(10, t, 1000 - t * 10));
        }
        // After the first window the maximum trails the series by at most
        // the window (the three-sample filter is approximate, never above
        // the true windowed maximum).
        for (t, &v) in got.iter().enumerate().skip(11) {
            let exact = 1000 - (t as u64 - 10) * 10;
            assert!(v <= exact && v >= 1000 - t as u64 * 10, "t={t} v={v}");
        }
    }
}
