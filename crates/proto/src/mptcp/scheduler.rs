//! The packet scheduler: which subflow carries the next chunk of data.
//!
//! Backup subflows (RFC 8684 §3.3.8, the MP_PRIO B flag) are used only when
//! no regular subflow is alive (a regular subflow still in its handshake is
//! alive; one in retransmission-timeout loss, Linux's "potentially failed",
//! is not); among the subflows allowed, only established ones with room in
//! their windows now are candidates.

/// How the connection picks a subflow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Scheduler {
    /// The candidate with the lowest smoothed RTT (Linux's default
    /// scheduler, `mptcp_sched` "default"); ties go to the lower index.
    #[default]
    MinRtt,
    /// Candidates in turn, a baseline (Linux's "roundrobin").
    RoundRobin,
}

impl Scheduler {
    pub fn name(self) -> &'static str {
        match self {
            Scheduler::MinRtt => "minrtt",
            Scheduler::RoundRobin => "roundrobin",
        }
    }

    /// The scheduler a scenario names.
    pub fn parse(name: &str) -> Result<Self, String> {
        match name {
            "minrtt" | "default" => Ok(Scheduler::MinRtt),
            "roundrobin" => Ok(Scheduler::RoundRobin),
            _ => Err(format!(
                "unknown MPTCP scheduler {name:?}; known: minrtt (alias default), roundrobin"
            )),
        }
    }
}

/// What the scheduler needs to know of one subflow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SubflowView {
    /// Not failed (see the module documentation).
    pub alive: bool,
    /// Established and alive.
    pub usable: bool,
    pub backup: bool,
    /// It would send a new chunk now (window and pacing permitting).
    pub has_room: bool,
    pub srtt_ns: u64,
}

/// Round-robin position kept between calls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedulerState {
    next: usize,
}

impl SchedulerState {
    /// The subflow for the next chunk, or `None` when no allowed subflow has
    /// room (the connection then waits for an ACK).
    pub fn pick(&mut self, sched: Scheduler, subflows: &[SubflowView]) -> Option<usize> {
        let any_regular = subflows.iter().any(|s| s.alive && !s.backup);
        let allowed = |s: &SubflowView| s.usable && s.has_room && s.backup != any_regular;
        let n = subflows.len();
        let chosen = match sched {
            Scheduler::MinRtt => subflows
                .iter()
                .enumerate()
                .filter(|(_, s)| allowed(s))
                .min_by_key(|(i, s)| (s.srtt_ns, *i))
                .map(|(i, _)| i),
            Scheduler::RoundRobin => (0..n)
                .map(|k| (self.next + k) % n)
                .find(|&i| allowed(&subflows[i])),
        }?;
        self.note_pick(chosen, n);
        Some(chosen)
    }

    /// Subflow `chosen` of `n` took the chunk: round robin goes on after it.
    pub fn note_pick(&mut self, chosen: usize, n: usize) {
        // (chosen + 1) mod n without a division (chosen < n).
        self.next = if chosen + 1 >= n { 0 } else { chosen + 1 };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(usable: bool, backup: bool, has_room: bool, srtt_ms: u64) -> SubflowView {
        SubflowView {
            alive: usable,
            usable,
            backup,
            has_room,
            srtt_ns: srtt_ms * 1_000_000,
        }
    }

    #[test]
    fn min_rtt_prefers_the_fastest_with_room() {
        let mut st = SchedulerState::default();
        let subs = [v(true, false, true, 40), v(true, false, true, 10)];
        assert_eq!(st.pick(Scheduler::MinRtt, &subs), Some(1));
        let subs = [v(true, false, true, 40), v(true, false, false, 10)];
        assert_eq!(st.pick(Scheduler::MinRtt, &subs), Some(0));
        let subs = [v(true, false, false, 40), v(true, false, false, 10)];
        assert_eq!(st.pick(Scheduler::MinRtt, &subs), None);
    }

    #[test]
    fn backup_only_when_no_regular_subflow_is_usable() {
        let mut st = SchedulerState::default();
        // The regular subflow is full: wait for it, do not spill to backup.
        let subs = [v(true, false, false, 40), v(true, true, true, 5)];
        assert_eq!(st.pick(Scheduler::MinRtt, &subs), None);
        // It failed (timeout loss): the backup takes over.
        let subs = [v(false, false, true, 40), v(true, true, true, 5)];
        assert_eq!(st.pick(Scheduler::MinRtt, &subs), Some(1));
        // Still in its handshake: alive, not usable; the backup waits.
        let mut connecting = v(false, false, false, 40);
        connecting.alive = true;
        assert_eq!(
            st.pick(Scheduler::MinRtt, &[connecting, v(true, true, true, 5)]),
            None
        );
    }

    #[test]
    fn round_robin_takes_turns() {
        let mut st = SchedulerState::default();
        let subs = [
            v(true, false, true, 40),
            v(true, false, true, 10),
            v(true, false, true, 20),
        ];
        let picks: Vec<_> = (0..4)
            .map(|_| st.pick(Scheduler::RoundRobin, &subs).unwrap())
            .collect();
        assert_eq!(picks, vec![0, 1, 2, 0]);
        assert!(Scheduler::parse("roundrobin").is_ok());
        assert!(Scheduler::parse("blest").unwrap_err().contains("minrtt"));
    }
}
