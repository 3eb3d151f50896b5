//! One subflow of the sending connection: an unmodified [`TcpSender`] (its
//! own sequence space, RTT estimator, recovery and RTO) plus what the
//! connection keeps about it: the data-sequence mappings of what it carries,
//! its backup flag, and the loss history coupled controllers read.

use super::dss::DssMap;
use super::scheduler::SubflowView;
use crate::cc::{CouplingRefresh, SubflowCoupling};
use crate::tcp::{CaState, NewChunk, TcpSender};

/// A sending subflow.
pub struct SenderSubflow {
    pub(super) tcp: TcpSender,
    pub(super) map: DssMap,
    /// RFC 8684 §3.3.8: used only when no regular subflow is usable.
    pub(super) backup: bool,
    /// One past the last subflow sequence number handed to the sender.
    pub(super) assigned_end: u64,
    /// OLIA's loss marks (Linux `mptcp_loss1..3`): bytes acknowledged at
    /// the second-to-last and the last loss event.
    loss1_bytes: u64,
    loss2_bytes: u64,
    /// Loss events (fast retransmits plus timeouts) and timeouts seen so far.
    loss_events: u64,
    timeouts: u64,
    /// When this subflow, having room, last penalised a slower one for
    /// holding the connection's window (Linux `last_rbuf_opti`).
    pub(super) last_penalised_ns: Option<u64>,
    /// When its controller wants the coupling view (fixed by the
    /// controller), and for [`CouplingRefresh::OnWindowChange`] the
    /// connection's coupling generation it last had a view at.
    pub(super) coupling_refresh: CouplingRefresh,
    pub(super) coupling_seen: u64,
}

/// What of a subflow, when it changes, makes a coupled controller's view
/// stale under [`CouplingRefresh::OnWindowChange`]: its window as coupled
/// (see [`SenderSubflow::coupling`]), its congestion state, and whether it
/// is a path yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct CouplingKey {
    cwnd_bytes: u64,
    ca_state: CaState,
    path: bool,
}

impl SenderSubflow {
    pub(super) fn new(tcp: TcpSender, backup: bool) -> Self {
        let tcp_refresh = tcp.cc().coupling_refresh();
        SenderSubflow {
            tcp,
            map: DssMap::default(),
            backup,
            // The SYN takes subflow sequence number 0; data starts at 1.
            assigned_end: 1,
            loss1_bytes: 0,
            loss2_bytes: 0,
            loss_events: 0,
            timeouts: 0,
            last_penalised_ns: None,
            coupling_refresh: tcp_refresh,
            // No generation yet: the first ACK gets a view.
            coupling_seen: u64::MAX,
        }
    }

    /// The subflow's TCP sender (read-only: cwnd, srtt, counters).
    pub fn tcp(&self) -> &TcpSender {
        &self.tcp
    }

    pub fn is_backup(&self) -> bool {
        self.backup
    }

    /// Not failed: neither in timeout loss (Linux marks a subflow whose
    /// retransmission timer fired "potentially failed") nor still without
    /// an answer to a retransmitted SYN. A subflow still in its first
    /// handshake is alive: backups wait for it.
    pub fn is_alive(&self) -> bool {
        if self.tcp.is_established() {
            self.tcp.ca_state() != CaState::Loss
        } else {
            self.tcp.stats().syn_timeouts == 0
        }
    }

    /// Established and alive: it may be given data.
    pub fn is_usable(&self) -> bool {
        self.tcp.is_established() && self.is_alive()
    }

    /// Mappings not yet acknowledged at the subflow level.
    pub fn outstanding_mappings(&self) -> usize {
        self.map.len()
    }

    /// After every event on the subflow: drop acknowledged mappings and
    /// move the loss marks when a new loss event began (Linux OLIA's
    /// `set_state`, which ignores repeated timeouts of one episode).
    /// Returns whether the retransmission timer fired.
    // Inlined into the connection's ACK path, as it was until the
    // compiler's choice moved with unrelated code: a call per ACK.
    #[inline]
    pub(super) fn after_event(&mut self) -> bool {
        self.map.ack_to(self.tcp.snd_una());
        let st = self.tcp.stats();
        let events = st.fast_retransmits + st.timeouts;
        let timed_out = st.timeouts > self.timeouts;
        self.timeouts = st.timeouts;
        if events > self.loss_events {
            self.loss_events = events;
            let now_bytes = st.bytes_acked;
            if now_bytes != self.loss2_bytes {
                self.loss1_bytes = self.loss2_bytes;
                self.loss2_bytes = now_bytes;
            }
        }
        timed_out
    }

    /// OLIA's ℓ_r: `max(loss3 − loss2, loss2 − loss1)` with loss3 = bytes
    /// acknowledged now.
    pub fn loss_interval_bytes(&self) -> u64 {
        let now_bytes = self.tcp.stats().bytes_acked;
        (now_bytes - self.loss2_bytes).max(self.loss2_bytes - self.loss1_bytes)
    }

    /// What a coupled controller sees of this subflow, if it is a path yet
    /// (established with an RTT estimate).
    pub(super) fn coupling(&self) -> Option<SubflowCoupling> {
        let srtt_ns = self.tcp.srtt_ns();
        if !self.tcp.is_established() || srtt_ns == 0 {
            return None;
        }
        let cwnd_bytes = if self.tcp.in_recovery() {
            self.tcp.ssthresh_bytes()
        } else {
            self.tcp.cwnd_bytes()
        };
        Some(SubflowCoupling {
            cwnd_bytes,
            srtt_ns,
            loss_interval_bytes: self.loss_interval_bytes(),
        })
    }

    /// See [`CouplingKey`].
    #[inline]
    pub(super) fn coupling_key(&self) -> CouplingKey {
        let in_recovery = self.tcp.in_recovery();
        CouplingKey {
            cwnd_bytes: if in_recovery {
                self.tcp.ssthresh_bytes()
            } else {
                self.tcp.cwnd_bytes()
            },
            ca_state: self.tcp.ca_state(),
            path: self.tcp.is_established() && self.tcp.srtt_ns() > 0,
        }
    }

    pub(super) fn view(&self, now_ns: u64, want_bytes: u64) -> (SubflowView, Option<NewChunk>) {
        let room = if self.is_usable() && want_bytes > 0 {
            self.tcp.new_chunk(now_ns, want_bytes)
        } else {
            None
        };
        (
            SubflowView {
                alive: self.is_alive(),
                usable: self.is_usable(),
                backup: self.backup,
                has_room: room.is_some(),
                srtt_ns: self.tcp.srtt_ns(),
            },
            room,
        )
    }
}
