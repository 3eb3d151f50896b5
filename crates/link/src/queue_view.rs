//! A link's queue as tables and samples see it: its own discipline, or its
//! share of a shared medium's queues.

use crate::service::{LinkPacket, MediumKind};
use latlab_qdisc::{Qdisc, QdiscStats, QueuedPacket};

#[derive(Debug, Clone, Copy)]
pub struct QueueView {
    pub name: &'static str,
    pub stats: QdiscStats,
    pub len_pkts: u64,
    pub len_bytes: u64,
    /// Packets taken from the queue but not on the wire yet (a cell user's
    /// packet whose bytes are partly sent).
    pub in_service_pkts: u64,
    /// The discipline marks ECT packets CE (`stats.marks_pkts` counts them).
    pub ecn_marking: bool,
}

impl QueueView {
    /// A discipline of the link's own (or a member's queue in a cell), with
    /// `in_service_pkts` taken from it and not yet on the wire.
    pub fn of<P: QueuedPacket>(q: &dyn Qdisc<P>, in_service_pkts: u64) -> Self {
        QueueView {
            name: q.name(),
            stats: *q.stats(),
            len_pkts: q.len_pkts() as u64,
            len_bytes: q.len_bytes(),
            in_service_pkts,
            ecn_marking: q.ecn_marking(),
        }
    }
}

/// Member `member`'s share of the medium's queues.
pub fn member_queue_view<P: LinkPacket>(kind: &MediumKind<P>, member: u32) -> QueueView {
    match kind {
        MediumKind::Cell(c) => QueueView::of(c.queue(member), c.in_transit_pkts(member)),
        MediumKind::Ap(ap) => {
            let st = ap.station_stats(member);
            QueueView {
                name: ap.queue_name(),
                stats: st.queue,
                len_pkts: st.queued_pkts,
                len_bytes: st.queued_bytes,
                in_service_pkts: 0,
                ecn_marking: ap.ecn_marking(),
            }
        }
    }
}
