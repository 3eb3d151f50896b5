//! A flow: one TCP connection (sender at `src`, receiver at `dst`) and the
//! bookkeeping the simulator keeps around its two state machines.

use latlab_proto::tcp::{TcpReceiver, TcpSender};

/// Timer bookkeeping for one sans-IO endpoint.
///
/// At most one agenda entry per endpoint is "live": the one at `armed_at`.
/// When the endpoint's deadline moves earlier, a new entry is scheduled and
/// the old one goes stale (ignored when it fires); when it moves later the
/// live entry is kept and simply re-armed when it fires. So restarting the
/// RTO on every ACK costs no agenda operation.
#[derive(Debug, Clone, Copy, Default)]
pub struct TimerSlot {
    pub armed_at: Option<u64>,
}

impl TimerSlot {
    /// Whether an entry must be scheduled for `deadline`.
    #[inline]
    pub fn needs_schedule(&mut self, deadline: Option<u64>) -> Option<u64> {
        let t = deadline?;
        match self.armed_at {
            Some(armed) if armed <= t => None,
            _ => {
                self.armed_at = Some(t);
                Some(t)
            }
        }
    }

    /// An entry for time `t` fired: is it the live one?
    #[inline]
    pub fn fire(&mut self, t: u64) -> bool {
        if self.armed_at == Some(t) {
            self.armed_at = None;
            true
        } else {
            false
        }
    }
}

pub struct Flow {
    pub group: u32,
    pub src: u32,
    pub dst: u32,
    pub cc_name: String,
    pub start_ns: u64,
    pub size_bytes: Option<u64>,
    pub sender: TcpSender,
    pub receiver: TcpReceiver,
    /// Link indices sender→receiver and receiver→sender.
    pub fwd_path: Box<[u32]>,
    pub rev_path: Box<[u32]>,
    pub header_bytes: u32,
    pub sender_timer: TimerSlot,
    pub receiver_timer: TimerSlot,
    pub started: bool,
    /// Counters at the start of the measurement window.
    pub window_start_delivered: u64,
    pub window_start_sent: u64,
    pub sampled: bool,
}
