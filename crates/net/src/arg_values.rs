//! Value parsers for command-line flags that more than one subcommand uses
//! (clap `value_parser`s): each names what it expected.

/// A finite number ≥ 0.
pub fn non_negative_finite(s: &str) -> Result<f64, String> {
    let v: f64 = s.trim().parse().map_err(|_| format!("'{s}' is not a number"))?;
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(format!("must be a finite number ≥ 0, got {s}"))
    }
}

/// A finite number > 0.
pub fn positive_finite(s: &str) -> Result<f64, String> {
    let v: f64 = s.trim().parse().map_err(|_| format!("'{s}' is not a number"))?;
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(format!("must be a positive finite number, got {s}"))
    }
}
