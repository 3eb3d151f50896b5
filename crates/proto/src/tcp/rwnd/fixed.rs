//! A constant advertised window: the receiver's `rwnd_bytes` whatever
//! happens. The default controller; with it the receiver behaves exactly
//! as it did before receiver-window control existed.

use super::{RwndController, RwndParams, SegmentArrival};
use crate::knobs::{Knob, Knobs};
use crate::tcp::config::TcpConfig;
use crate::TimeNs;

/// A constant window, bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FixedRwnd(pub u64);

impl RwndController for FixedRwnd {
    fn name(&self) -> &'static str {
        "fixed"
    }
    fn on_segment(&mut self, _arrival: &SegmentArrival) {}
    fn on_copied(&mut self, _now_ns: TimeNs, _bytes: u64) {}
    fn rwnd_bytes(&self) -> u64 {
        self.0
    }
}

/// The fixed window has no constants of its own: its window is the TCP
/// configuration's `rwnd_bytes` (the scenario's `tcp.rwnd_bytes`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FixedRwndParams;

impl Knobs for FixedRwndParams {
    const KNOBS: &'static [Knob] = &[];

    fn set(&mut self, _key: &str, _value: f64) -> Option<()> {
        None
    }

    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
}

impl RwndParams for FixedRwndParams {
    fn build(&self, cfg: &TcpConfig) -> Box<dyn RwndController> {
        Box::new(FixedRwnd(cfg.rwnd_bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_never_moves() {
        let mut f = FixedRwnd(65_535);
        f.on_segment(&SegmentArrival {
            now_ns: 5,
            payload_bytes: 1448,
            ts_val_ns: Some(5),
            ts_ecr_ns: Some(1),
        });
        f.on_copied(10, 1 << 30);
        assert_eq!(f.rwnd_bytes(), 65_535);
        assert_eq!(f.rtt_ns(), None);
    }
}
