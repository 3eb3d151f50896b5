//! The sender's timers as one table of deadlines (the shape of quinn-proto's
//! `TimerTable`): each timer is armed with an absolute deadline or stopped,
//! and the earliest armed deadline is what the driver must wake up for.

/// The sender's timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Timer {
    /// RFC 6298 retransmission timer (the SYN's too, RFC 6298 §2).
    Rto = 0,
    /// Persist timer for a zero window (RFC 1122 §4.2.2.17).
    Persist = 1,
}

/// Deadlines (ns) of the [`Timer`]s; `None` = stopped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Timers([Option<u64>; 2]);

impl Timers {
    pub fn get(&self, t: Timer) -> Option<u64> {
        self.0[t as usize]
    }

    pub fn is_armed(&self, t: Timer) -> bool {
        self.get(t).is_some()
    }

    pub fn set(&mut self, t: Timer, deadline_ns: u64) {
        self.0[t as usize] = Some(deadline_ns);
    }

    pub fn stop(&mut self, t: Timer) {
        self.0[t as usize] = None;
    }

    /// Stop `t` and return true if it was armed and due at `now_ns`; leave it
    /// alone otherwise (an early or spurious wake-up).
    pub fn take_expired(&mut self, t: Timer, now_ns: u64) -> bool {
        match self.get(t) {
            Some(d) if now_ns >= d => {
                self.stop(t);
                true
            }
            _ => false,
        }
    }

    /// The earliest armed deadline.
    pub fn next_deadline(&self) -> Option<u64> {
        self.0.iter().flatten().copied().min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_deadline_and_expiry() {
        let mut t = Timers::default();
        assert_eq!(t.next_deadline(), None);
        t.set(Timer::Rto, 300);
        t.set(Timer::Persist, 200);
        assert_eq!(t.next_deadline(), Some(200));
        assert!(!t.take_expired(Timer::Persist, 199));
        assert!(t.is_armed(Timer::Persist));
        assert!(t.take_expired(Timer::Persist, 200));
        assert!(!t.is_armed(Timer::Persist));
        assert_eq!(t.next_deadline(), Some(300));
        t.stop(Timer::Rto);
        assert!(!t.take_expired(Timer::Rto, u64::MAX));
        assert_eq!(t.next_deadline(), None);
    }
}
