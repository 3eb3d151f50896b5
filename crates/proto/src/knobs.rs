//! A controller's constants as a scenario sets them: named numeric knobs
//! (`cc_params`, `rwnd_params`), each with its range and default, parsed
//! into a typed parameter set that rejects an unknown, repeated, non-finite
//! or out-of-range knob with a message naming it and listing the accepted
//! ones. Congestion controllers ([`crate::cc::ControllerParams`]) and
//! receiver-window controllers ([`crate::tcp::rwnd::RwndParams`]) share it.

/// One knob a controller accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Knob {
    /// The key, e.g. `"beta"`.
    pub key: &'static str,
    /// What it sets, its range and its default, e.g.
    /// `"multiplicative decrease factor, (0, 1); default 0.7"`.
    pub about: &'static str,
}

/// A controller's constants: the typed form of a scenario's knobs.
/// Implemented beside each controller.
pub trait Knobs: Default {
    /// The knobs a scenario may set, with range and default: the one list
    /// that error messages and documentation print.
    const KNOBS: &'static [Knob];

    /// Set knob `key` (one of [`Self::KNOBS`]) from a finite scenario
    /// number. `None` when the value is outside the knob's range (the
    /// caller names the knob and lists the accepted ones).
    fn set(&mut self, key: &str, value: f64) -> Option<()>;

    /// Check the whole set (ranges of constants built in code, and
    /// constraints between knobs); the error names the offending constant.
    fn validate(&self) -> Result<(), String>;
}

/// A boolean knob: exactly 0 or 1.
pub fn knob_flag(value: f64) -> Option<bool> {
    if value == 0.0 {
        Some(false)
    } else if value == 1.0 {
        Some(true)
    } else {
        None
    }
}

/// A whole-number knob in `lo..=hi`.
pub fn knob_whole(value: f64, lo: u64, hi: u64) -> Option<u64> {
    (value.fract() == 0.0 && value >= lo as f64 && value <= hi as f64).then_some(value as u64)
}

/// A real knob accepted when `ok(value)`.
pub fn knob_real(value: f64, ok: impl FnOnce(f64) -> bool) -> Option<f64> {
    ok(value).then_some(value)
}

/// `(key, value)` pairs into `P` for the controller called `name`: every
/// key must be one of `P::KNOBS`, given once, finite and in range, and the
/// whole set must pass `validate`.
pub fn parse<P: Knobs>(name: &str, params: &[(String, f64)]) -> Result<P, String> {
    let accepted_list = || {
        if P::KNOBS.is_empty() {
            format!("{name} accepts no parameters")
        } else {
            let knobs: Vec<String> = P::KNOBS
                .iter()
                .map(|k| format!("{} ({})", k.key, k.about))
                .collect();
            format!("{name} accepts: {}", knobs.join("; "))
        }
    };
    for (i, (key, value)) in params.iter().enumerate() {
        if !P::KNOBS.iter().any(|k| k.key == key) {
            return Err(format!(
                "unknown parameter {key:?} for {name}; {}",
                accepted_list()
            ));
        }
        if params[..i].iter().any(|(k, _)| k == key) {
            return Err(format!("parameter {key:?} given twice for {name}"));
        }
        if !value.is_finite() {
            return Err(format!(
                "parameter {key:?} for {name} must be finite, got {value}; {}",
                accepted_list()
            ));
        }
    }
    let mut p = P::default();
    // Knobs in the controller's order, not the scenario's, so the first
    // error reported does not depend on key order.
    for knob in P::KNOBS {
        if let Some((key, value)) = params.iter().find(|(k, _)| k == knob.key) {
            p.set(key, *value).ok_or_else(|| {
                format!(
                    "parameter {key:?} = {value} out of range for {name}; {}",
                    accepted_list()
                )
            })?;
        }
    }
    p.validate().map_err(|e| format!("{e}; {}", accepted_list()))?;
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default, Debug, PartialEq)]
    struct Two {
        a: f64,
        b: u64,
    }

    impl Knobs for Two {
        const KNOBS: &'static [Knob] = &[
            Knob {
                key: "a",
                about: "(0, 1); default 0",
            },
            Knob {
                key: "b",
                about: "1..=4; default 0",
            },
        ];

        fn set(&mut self, key: &str, value: f64) -> Option<()> {
            match key {
                "a" => self.a = knob_real(value, |v| v > 0.0 && v < 1.0)?,
                "b" => self.b = knob_whole(value, 1, 4)?,
                _ => return None,
            }
            Some(())
        }

        fn validate(&self) -> Result<(), String> {
            if self.a > 0.5 && self.b > 2 {
                return Err("a > 0.5 needs b <= 2".into());
            }
            Ok(())
        }
    }

    fn kv(pairs: &[(&str, f64)]) -> Vec<(String, f64)> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn accepts_known_knobs_in_range() {
        let p: Two = parse("two", &kv(&[("b", 3.0), ("a", 0.25)])).unwrap();
        assert_eq!(p, Two { a: 0.25, b: 3 });
    }

    #[test]
    fn each_mistake_is_named_with_what_is_accepted() {
        let err = |pairs: &[(&str, f64)]| parse::<Two>("two", &kv(pairs)).unwrap_err();
        let list = "two accepts: a ((0, 1); default 0); b (1..=4; default 0)";
        assert_eq!(
            err(&[("c", 1.0)]),
            format!("unknown parameter \"c\" for two; {list}")
        );
        assert_eq!(
            err(&[("a", 0.1), ("a", 0.2)]),
            "parameter \"a\" given twice for two"
        );
        assert_eq!(
            err(&[("a", f64::NAN)]),
            format!("parameter \"a\" for two must be finite, got NaN; {list}")
        );
        assert_eq!(
            err(&[("b", 2.5)]),
            format!("parameter \"b\" = 2.5 out of range for two; {list}")
        );
        assert_eq!(
            err(&[("a", 0.75), ("b", 3.0)]),
            format!("a > 0.5 needs b <= 2; {list}")
        );
        // Two knobs out of range: the first in the controller's order is named.
        assert_eq!(
            err(&[("b", 9.0), ("a", 7.0)]),
            format!("parameter \"a\" = 7 out of range for two; {list}")
        );
    }

    #[test]
    fn flags_and_whole_numbers() {
        assert_eq!(knob_flag(1.0), Some(true));
        assert_eq!(knob_flag(0.0), Some(false));
        assert_eq!(knob_flag(0.5), None);
        assert_eq!(knob_whole(4.0, 1, 4), Some(4));
        assert_eq!(knob_whole(0.0, 1, 4), None);
    }
}
