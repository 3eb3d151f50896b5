//! What the connection's poll loop and its scheduler read of each subflow
//! on every call, kept compact beside the subflows and refreshed whenever a
//! subflow's TCP sender changes (an event on it, a segment it owed, a
//! penalty), so that picking a subflow does not walk every full
//! [`TcpSender`](crate::tcp::TcpSender): only the one that may take the
//! chunk is asked.
//!
//! Every field is what the sender itself would answer at the time (the
//! refresh points are all the places its state can change), so decisions
//! are the same as asking it; the room memory is the one part learnt from
//! the scheduler's own questions (see [`SubflowSummary::may_have_room`]).

use super::subflow::{CouplingKey, SenderSubflow};

/// The scheduler's view of one subflow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct SubflowSummary {
    /// [`SenderSubflow::is_usable`].
    pub usable: bool,
    /// [`SenderSubflow::is_backup`] (fixed when the subflow is added).
    pub backup: bool,
    /// Smoothed RTT of the subflow's sender, ns.
    pub srtt_ns: u64,
    /// The sender may owe a segment of its own (a SYN, a retransmission):
    /// `TcpSender::owes_nothing` was false, or the sender paces (then
    /// `poll_owed` also keeps its clock, which the pacer reads).
    pub may_owe: bool,
    /// The sender paces: its room depends on the time, never remembered.
    paced: bool,
    /// `poll_owed` at this time found nothing since the last refresh. At
    /// the same time and with the sender unchanged, asking again would
    /// find nothing and change nothing (an idle restart or a persist timer
    /// it started is not started twice), so the poll loop does not ask
    /// again for each segment the other subflows send.
    owed_nothing_at_ns: Option<u64>,
    /// The sender refused a new chunk of this many bytes (its
    /// `new_chunk` said `None`) since the last refresh; `u64::MAX` when
    /// unknown.
    no_room_from_bytes: u64,
    /// [`SenderSubflow::coupling_key`]: when it changes, coupled views
    /// are stale.
    pub coupling_key: CouplingKey,
}

impl SubflowSummary {
    /// The summary of `sf` as it is now.
    pub fn of(sf: &SenderSubflow) -> Self {
        let tcp = sf.tcp();
        let paced = tcp.config().pacing.is_some();
        SubflowSummary {
            usable: sf.is_usable(),
            backup: sf.is_backup(),
            srtt_ns: tcp.srtt_ns(),
            may_owe: paced || !tcp.owes_nothing(),
            paced,
            no_room_from_bytes: u64::MAX,
            owed_nothing_at_ns: None,
            coupling_key: sf.coupling_key(),
        }
    }

    /// Whether the sender might send a new chunk of `want_bytes` now,
    /// without asking it: `false` when it already refused `want_bytes` or
    /// fewer since its state last changed. Sound because, without pacing,
    /// `TcpSender::new_chunk` is a pure function of the sender's state and
    /// the bytes offered, and a refusal of `w` bytes implies one of every
    /// `w' ≥ w` (a longer segment fits neither cwnd nor the peer's window
    /// better). Spares the min-RTT scheduler the question for a subflow
    /// whose window is full while ACKs arrive on the other.
    pub fn may_have_room(&self, want_bytes: u64) -> bool {
        want_bytes < self.no_room_from_bytes
    }

    /// Whether the poll loop must ask the sender for a segment it owes
    /// at `now_ns`.
    pub fn may_owe_at(&self, now_ns: u64) -> bool {
        self.may_owe && self.owed_nothing_at_ns != Some(now_ns)
    }

    /// `poll_owed(now_ns)` returned nothing (the summary just refreshed).
    pub fn note_owed_nothing(&mut self, now_ns: u64) {
        self.owed_nothing_at_ns = Some(now_ns);
    }

    /// The sender refused a chunk of `want_bytes`.
    pub fn note_no_room(&mut self, want_bytes: u64) {
        if !self.paced {
            self.no_room_from_bytes = self.no_room_from_bytes.min(want_bytes);
        }
    }

    /// The sender's window changed without an event (new data sent, a
    /// penalty): what its room was, and that it owed nothing, no longer
    /// hold.
    pub fn forget_room(&mut self) {
        self.no_room_from_bytes = u64::MAX;
        self.owed_nothing_at_ns = None;
    }
}
