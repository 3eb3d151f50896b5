//! The sending side of an MPTCP connection (sans-IO): one data-level byte
//! stream spread over N subflows, each an unmodified [`TcpSender`].
//!
//! Driving it is the TCP sender's loop per subflow, with a subflow index:
//! after `connect`, `on_segment(now, i, seg)` or `on_timeout(now)`, call
//! `poll_transmit(now)` until it returns `None` (each `Some((i, seg))` is a
//! segment for subflow i's path), then arm a timer at `next_timeout()`.
//!
//! Data level (RFC 8684 §3.3): the application's bytes have data sequence
//! numbers from 0. `poll_transmit` first lets every subflow send what it
//! already owes (SYN, retransmissions of its own sequence space); when none
//! does, the scheduler hands one segment's worth of data to a subflow with
//! room (the next new data, or data queued for reinjection) and records the
//! mapping; every data segment carries its mapping in a DSS option. ACKs
//! carry the Data ACK and the connection-level window: new data is sent
//! only below DATA_ACK + window (RFC 8684 §3.3.4), unless
//! [`MptcpConfig::enforce_data_window`] is off, in which case each subflow
//! applies the advertised window only in its own sequence space, as a
//! plain TCP stack per path would, and the receiver drops what overflows.
//!
//! Coupled congestion control: before an ACK reaches subflow i's sender,
//! its controller receives the connection's view of all subflows
//! ([`CongestionControl::on_coupling`](crate::cc::CongestionControl::on_coupling)),
//! before every ACK or only when a subflow's window or congestion state
//! changed since its last view, as the controller asks
//! ([`CouplingRefresh`]).
//!
//! Mitigations of a small receive buffer (Raiciu et al., "How hard can it
//! be? Designing and implementing a deployable multipath TCP", NSDI'12
//! §4.2), both off by default: when the connection-level window blocks new
//! data, *opportunistic retransmission* resends the data at the Data ACK
//! (the head of the window, held by a slower subflow) on a subflow with
//! room, once per Data ACK value; *penalisation* halves the window of the
//! subflow holding that head, at most once per its RTT.
//!
//! Reinjection (RFC 8684 §3.3.6): when a subflow's retransmission timer
//! fires, the data it carries that is not yet DATA_ACKed is queued to be
//! sent again on the other subflows.

use std::collections::VecDeque;

use super::scheduler::{Scheduler, SchedulerState, SubflowView};
use super::subflow::SenderSubflow;
use super::summary::SubflowSummary;
use crate::cc::{CongestionControl, CouplingRefresh, SubflowCoupling};
use crate::segment::{Dss, Segment};
use crate::tcp::{NewChunk, TcpConfig, TcpSender};

/// Data sequence number beyond which an infinite connection never gets.
const INFINITE_DATA_END: u64 = u64::MAX / 4;

/// Sender-side options of an MPTCP connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MptcpConfig {
    pub scheduler: Scheduler,
    /// Send new data only below DATA_ACK + window (RFC 8684 §3.3.4).
    /// Off: each subflow applies the window only in its own sequence space.
    pub enforce_data_window: bool,
    /// NSDI'12 opportunistic retransmission of the window's head.
    pub opportunistic_retransmit: bool,
    /// NSDI'12 penalisation of the subflow holding the window's head.
    pub penalise_slow_subflows: bool,
}

impl Default for MptcpConfig {
    fn default() -> Self {
        MptcpConfig {
            scheduler: Scheduler::MinRtt,
            enforce_data_window: true,
            opportunistic_retransmit: false,
            penalise_slow_subflows: false,
        }
    }
}

/// Connection-level counters of the sender.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MptcpSenderStats {
    /// Chunks of new data scheduled (one segment each).
    pub chunks_scheduled: u64,
    /// Data-level retransmissions on another subflow after an RTO.
    pub reinjected_segments: u64,
    pub reinjected_bytes: u64,
    /// Opportunistic retransmissions of the window's head.
    pub opportunistic_retransmits: u64,
    /// Times a subflow's window was halved for holding the head.
    pub penalisations: u64,
    /// Scheduling attempts refused by the connection-level window.
    pub window_limited: u64,
}

/// The sending side of an MPTCP connection.
pub struct MptcpSender {
    cfg: MptcpConfig,
    subflows: Vec<SenderSubflow>,
    /// One per subflow, same index: what the poll loop and the scheduler
    /// read, refreshed after every change to the subflow's sender.
    summaries: Vec<SubflowSummary>,
    /// How many summaries say `may_owe`: the poll loop looks for a
    /// subflow that owes a segment only while this is not zero.
    owing: usize,
    /// Some subflow is a backup (the scheduler's backup rule applies).
    any_backup: bool,
    /// The largest MSS of any subflow: a chunk is offered at most this
    /// many bytes (no subflow takes more in one segment, see
    /// [`TcpSender::new_chunk`]), so that while the data and the window
    /// last, every chunk is offered the same amount.
    max_mss_bytes: u64,
    connected: bool,
    finite: bool,
    /// One past the application's last byte (data sequence space from 0).
    data_end: u64,
    /// Next new data sequence number.
    data_nxt: u64,
    /// Data ACK received: everything below is delivered.
    data_una: u64,
    /// DATA_ACK + window from the receiver (never moved left).
    right_edge: u64,
    /// Data queued for sending again on another subflow: (data seq, len).
    reinject: VecDeque<(u64, u32)>,
    /// The Data ACK value for which the head was opportunistically resent.
    opportunistic_for: Option<u64>,
    sched: SchedulerState,
    /// The last min-RTT pick, while it holds (see [`Streak`]).
    streak: Option<Streak>,
    /// Reused buffers (no allocation per segment in steady state).
    views: Vec<SubflowView>,
    rooms: Vec<Option<NewChunk>>,
    coupling: Vec<SubflowCoupling>,
    /// Bumped whenever a subflow's [`CouplingKey`](super::subflow::CouplingKey)
    /// changes: a controller that asks for
    /// [`CouplingRefresh::OnWindowChange`] gets a view when its subflow
    /// last had one at an older generation.
    coupling_gen: u64,
    completed_at_ns: Option<u64>,
    stats: MptcpSenderStats,
}

impl MptcpSender {
    /// A connection for `app_bytes` of data (`None` = infinite bulk data),
    /// without subflows yet.
    pub fn new(cfg: MptcpConfig, app_bytes: Option<u64>) -> Self {
        let (data_end, finite) = match app_bytes {
            Some(n) => (n.min(INFINITE_DATA_END), true),
            None => (INFINITE_DATA_END, false),
        };
        MptcpSender {
            cfg,
            subflows: Vec::new(),
            summaries: Vec::new(),
            owing: 0,
            any_backup: false,
            max_mss_bytes: 0,
            connected: false,
            finite,
            data_end,
            data_nxt: 0,
            data_una: 0,
            right_edge: 0,
            reinject: VecDeque::new(),
            opportunistic_for: None,
            sched: SchedulerState::default(),
            streak: None,
            views: Vec::new(),
            rooms: Vec::new(),
            coupling: Vec::new(),
            coupling_gen: 0,
            completed_at_ns: None,
            stats: MptcpSenderStats::default(),
        }
    }

    /// Add a subflow with its own TCP configuration and controller; it
    /// opens (sends its SYN) at `connect`, or at once if the connection is
    /// already connected. Returns its index.
    pub fn add_subflow(
        &mut self,
        now_ns: u64,
        cfg: TcpConfig,
        cc: Box<dyn CongestionControl>,
        backup: bool,
    ) -> usize {
        let mut tcp = TcpSender::new(cfg, cc, Some(0));
        if self.connected {
            tcp.connect(now_ns);
        }
        self.any_backup |= backup;
        self.max_mss_bytes = self.max_mss_bytes.max(tcp.mss_bytes());
        self.streak = None;
        let sf = SenderSubflow::new(tcp, backup);
        let summary = SubflowSummary::of(&sf);
        self.owing += usize::from(summary.may_owe);
        self.summaries.push(summary);
        self.subflows.push(sf);
        self.subflows.len() - 1
    }

    /// Open every subflow (MP_CAPABLE and MP_JOIN are not modelled: each
    /// subflow's handshake is a TCP handshake, all at once).
    pub fn connect(&mut self, now_ns: u64) {
        self.connected = true;
        self.streak = None;
        for i in 0..self.subflows.len() {
            self.subflows[i].tcp.connect(now_ns);
            self.refresh_summary(i);
        }
    }

    /// More application data for a finite connection.
    pub fn add_app_bytes(&mut self, bytes: u64) {
        if !self.finite || bytes == 0 {
            return;
        }
        self.data_end = self.data_end.saturating_add(bytes).min(INFINITE_DATA_END);
        self.completed_at_ns = None;
    }

    // ----- accessors -------------------------------------------------------

    pub fn subflows(&self) -> &[SenderSubflow] {
        &self.subflows
    }

    pub fn subflow(&self, i: usize) -> Option<&SenderSubflow> {
        self.subflows.get(i)
    }

    pub fn stats(&self) -> MptcpSenderStats {
        self.stats
    }

    pub fn config(&self) -> &MptcpConfig {
        &self.cfg
    }

    /// The Data ACK received: bytes delivered to the peer application.
    pub fn data_una(&self) -> u64 {
        self.data_una
    }

    /// Next new data sequence number (bytes scheduled so far).
    pub fn data_nxt(&self) -> u64 {
        self.data_nxt
    }

    /// The application's bytes so far (one past its last data sequence
    /// number); `None` for infinite bulk data.
    pub fn app_bytes(&self) -> Option<u64> {
        self.finite.then_some(self.data_end)
    }

    pub fn is_complete(&self) -> bool {
        self.completed_at_ns.is_some()
    }

    pub fn completed_at_ns(&self) -> Option<u64> {
        self.completed_at_ns
    }

    // ----- events ----------------------------------------------------------

    /// A segment from the receiver arrived on subflow `i`.
    pub fn on_segment(&mut self, now_ns: u64, i: usize, seg: &Segment) {
        if i >= self.subflows.len() {
            return;
        }
        if let Some(ack) = seg.dss().and_then(|d| d.data_ack) {
            // RFC 8684 §3.3.2: a Data ACK of data never sent is ignored.
            if ack <= self.data_nxt && ack >= self.data_una {
                self.data_una = ack;
                self.right_edge = self.right_edge.max(ack.saturating_add(seg.rwnd_bytes));
            }
        }
        self.streak = None;
        let sf = &mut self.subflows[i];
        let give_view = match sf.coupling_refresh {
            CouplingRefresh::Never => false,
            CouplingRefresh::EveryAck => true,
            CouplingRefresh::OnWindowChange => sf.coupling_seen != self.coupling_gen,
        };
        if give_view {
            sf.coupling_seen = self.coupling_gen;
            self.give_coupling_view(i);
        }
        let more = self.has_data_for_subflows();
        let sf = &mut self.subflows[i];
        sf.tcp.set_app_has_more(more);
        sf.tcp.on_segment(now_ns, seg);
        let timed_out = sf.after_event();
        self.refresh_summary(i);
        if timed_out {
            self.queue_reinjection(i);
        }
        self.check_complete(now_ns);
    }

    /// Handle expired timers of all subflows.
    pub fn on_timeout(&mut self, now_ns: u64) {
        self.streak = None;
        for i in 0..self.subflows.len() {
            let sf = &mut self.subflows[i];
            sf.tcp.on_timeout(now_ns);
            let timed_out = sf.after_event();
            self.refresh_summary(i);
            if timed_out {
                self.queue_reinjection(i);
            }
        }
    }

    /// The earliest deadline of any subflow.
    #[inline]
    pub fn next_timeout(&self) -> Option<u64> {
        self.subflows.iter().filter_map(|sf| sf.tcp.next_timeout()).min()
    }

    /// The next segment to send now and the subflow it leaves on.
    // Inlined into the driver's loop (called once per segment and once more):
    // the call and the copy of the segment it returns cost as much as the
    // loop's own work.
    #[inline]
    pub fn poll_transmit(&mut self, now_ns: u64) -> Option<(usize, Segment)> {
        // What the subflows already owe: SYNs, their own retransmissions,
        // a chunk the pacer held back. A subflow that owed nothing at its
        // last change still owes nothing (and, unpaced, `poll_owed` would
        // not touch it), nor does one that owed nothing when asked earlier
        // in this poll (see `SubflowSummary::may_owe_at`).
        for i in 0..self.summaries.len() {
            if self.owing == 0 {
                break;
            }
            if !self.summaries[i].may_owe_at(now_ns) {
                continue;
            }
            // Asking may change the sender (an idle restart, a segment).
            self.streak = None;
            let owed = self.subflows[i].tcp.poll_owed(now_ns);
            self.refresh_summary(i);
            match owed {
                Some(mut seg) => {
                    self.stamp(i, &mut seg);
                    return Some((i, seg));
                }
                None => self.summaries[i].note_owed_nothing(now_ns),
            }
        }
        let (i, data_seq, chunk) = self.schedule(now_ns)?;
        // New data leaves the summary true but for the room (the sender
        // then owes nothing: all it was given is sent, see `send_chunk`).
        self.summaries[i].forget_room();
        let sf = &mut self.subflows[i];
        let len = chunk.len_bytes();
        let subflow_seq = sf.assigned_end;
        sf.map.push(subflow_seq, data_seq, len);
        sf.assigned_end += len as u64;
        // The scheduler's decision, sent as is (`add_app_bytes` then
        // `poll_transmit` would decide it again); the segment is the chunk,
        // so its mapping is known without a lookup.
        let mut seg = sf.tcp.send_chunk(now_ns, chunk);
        debug_assert_eq!((seg.seq, seg.payload_bytes), (subflow_seq, len));
        seg.set_dss(Dss {
            data_seq: Some(data_seq),
            data_ack: None,
        });
        Some((i, seg))
    }

    // ----- internals -------------------------------------------------------

    /// Subflow `i`'s sender changed: summarise it again.
    // Always inlined: after every ACK, where the call cost a fifth as much
    // as the summary.
    #[inline(always)]
    fn refresh_summary(&mut self, i: usize) {
        let summary = SubflowSummary::of(&self.subflows[i]);
        self.coupling_gen += u64::from(summary.coupling_key != self.summaries[i].coupling_key);
        self.owing = self.owing - usize::from(self.summaries[i].may_owe) + usize::from(summary.may_owe);
        self.summaries[i] = summary;
    }

    /// Data is waiting that the connection-level window lets go: a subflow
    /// with an idle window is then not application-limited.
    fn has_data_for_subflows(&self) -> bool {
        let new_data = self.data_nxt < self.data_end
            && (!self.cfg.enforce_data_window || self.data_nxt < self.right_edge);
        new_data || !self.reinject.is_empty()
    }

    /// Attach the DSS mapping of a data segment.
    fn stamp(&self, i: usize, seg: &mut Segment) {
        if seg.payload_bytes > 0 {
            let data_seq = self.subflows[i].map.data_seq_of(seg.seq);
            debug_assert!(data_seq.is_some(), "a data segment outside every mapping");
            seg.set_dss(Dss {
                data_seq,
                data_ack: None,
            });
        }
    }

    /// RFC 6356 / OLIA: the controller of subflow `i` sees all subflows.
    fn give_coupling_view(&mut self, i: usize) {
        self.coupling.clear();
        let mut me = None;
        for (k, sf) in self.subflows.iter().enumerate() {
            if let Some(c) = sf.coupling() {
                if k == i {
                    me = Some(self.coupling.len());
                }
                self.coupling.push(c);
            }
        }
        if let Some(me) = me {
            self.subflows[i].tcp.cc_mut().on_coupling(&self.coupling, me);
        }
    }

    /// Queue for reinjection the data subflow `i` carries that is not yet
    /// DATA_ACKed (RFC 8684 §3.3.6), once per mapping, if another subflow
    /// exists to carry it.
    fn queue_reinjection(&mut self, i: usize) {
        if self.subflows.len() < 2 {
            return;
        }
        let data_una = self.data_una;
        for m in self.subflows[i].map.iter_mut() {
            if !m.reinjected && m.data_end() > data_una {
                m.reinjected = true;
                self.reinject.push_back((m.data_seq, m.len));
            }
        }
    }

    /// The subflow for a chunk of `want` bytes and the bytes it takes;
    /// `exclude` gets no room. The same choice as [`SchedulerState::pick`]
    /// over every subflow's view, but for MinRtt the (costly) room of a
    /// subflow is asked only when it would beat the best candidate with
    /// room found so far in (srtt, index) order, and no view is built: the
    /// subflows' summaries answer all but the room, and a subflow that
    /// refused as much since its last change is not asked again; while the
    /// last pick holds (a [`Streak`]) it is asked alone.
    // Inlined: called once or twice per segment sent; the call and its
    // register spills cost as much as the choice.
    #[inline(always)]
    fn pick_chunk(&mut self, now_ns: u64, want: u64, exclude: Option<usize>) -> Option<(usize, NewChunk)> {
        // The same answers, see `max_mss_bytes`.
        let want = want.min(self.max_mss_bytes);
        if self.cfg.scheduler != Scheduler::MinRtt {
            return self.pick_from_views(now_ns, want, exclude);
        }
        if want == 0 {
            return None;
        }
        // With a subflow excluded the question differs: no streak is used
        // or kept.
        let streak = self
            .streak
            .take()
            .filter(|s| exclude.is_none() && s.holds(now_ns, want));
        if let Some(s) = streak {
            match self.subflows[s.subflow].tcp.new_chunk(now_ns, want) {
                Some(chunk) => {
                    self.streak = Some(s);
                    return Some((s.subflow, chunk));
                }
                None => {
                    self.summaries[s.subflow].note_no_room(want);
                    // No other subflow had room when the streak began,
                    // and none has changed since: none has room now.
                    if s.alone {
                        return None;
                    }
                }
            }
        }
        // Without backup subflows every usable subflow is an alive regular
        // one, so the backup rule filters nothing: skip the extra pass.
        let any_regular = !self.any_backup || self.subflows.iter().any(|sf| !sf.backup && sf.is_alive());
        // Best candidate with room so far: ((srtt, index), chunk).
        let mut best: Option<((u64, usize), NewChunk)> = None;
        // Candidates that had room or were not asked (the best among them).
        let mut contenders = 0u32;
        for k in 0..self.summaries.len() {
            let s = &self.summaries[k];
            // Known to lack room first: after an ACK, every subflow but the
            // acknowledged one usually is.
            if !s.may_have_room(want) || !s.usable || s.backup == any_regular || exclude == Some(k) {
                continue;
            }
            contenders += 1;
            let key = (s.srtt_ns, k);
            if best.is_some_and(|(b, _)| b <= key) {
                continue;
            }
            match self.subflows[k].tcp.new_chunk(now_ns, want) {
                Some(chunk) => best = Some((key, chunk)),
                None => {
                    contenders -= 1;
                    self.summaries[k].note_no_room(want);
                }
            }
        }
        // The round-robin position `sched` keeps is left alone: only round
        // robin reads it.
        let ((_, i), chunk) = best?;
        if exclude.is_none() {
            self.streak = Some(Streak {
                subflow: i,
                now_ns,
                want_bytes: want,
                alone: contenders == 1,
            });
        }
        Some((i, chunk))
    }

    /// [`pick_chunk`](Self::pick_chunk) for a scheduler other than min-RTT:
    /// every subflow's view built and handed to [`SchedulerState::pick`].
    // Kept apart from min-RTT's inlined path, which it would only crowd.
    #[inline(never)]
    fn pick_from_views(
        &mut self,
        now_ns: u64,
        want: u64,
        exclude: Option<usize>,
    ) -> Option<(usize, NewChunk)> {
        self.fill_views(now_ns, want, exclude);
        let i = self.sched.pick(self.cfg.scheduler, &self.views)?;
        Some((i, self.rooms[i]?))
    }

    /// Fill `views`/`rooms` for a chunk of `want` bytes; `exclude` gets no room.
    fn fill_views(&mut self, now_ns: u64, want: u64, exclude: Option<usize>) {
        self.views.clear();
        self.rooms.clear();
        for (k, sf) in self.subflows.iter().enumerate() {
            let (mut view, mut room) = sf.view(now_ns, want);
            if exclude == Some(k) {
                view.has_room = false;
                room = None;
            }
            self.views.push(view);
            self.rooms.push(room);
        }
    }

    /// Pick the subflow and the data for the next chunk.
    #[inline]
    fn schedule(&mut self, now_ns: u64) -> Option<(usize, u64, NewChunk)> {
        // Reinjections first: that data is what the receiver waits for.
        if !self.reinject.is_empty() {
            if let Some(decided) = self.schedule_reinjection(now_ns) {
                return decided;
            }
        }
        if self.data_nxt >= self.data_end {
            return None;
        }
        let mut want = self.data_end - self.data_nxt;
        if self.cfg.enforce_data_window {
            let room = self.right_edge.saturating_sub(self.data_nxt);
            if room == 0 {
                self.stats.window_limited += 1;
                return self.on_window_limited(now_ns);
            }
            want = want.min(room);
        }
        let (i, chunk) = self.pick_chunk(now_ns, want, None)?;
        let seq = self.data_nxt;
        self.data_nxt += chunk.len_bytes() as u64;
        self.stats.chunks_scheduled += 1;
        Some((i, seq, chunk))
    }

    /// The head of the reinjection queue for [`schedule`](Self::schedule):
    /// `Some(decision)` if the queue decides, `None` once nothing in it is
    /// left to send (new data is then next).
    // Kept apart from the inlined path of new data, which it would only
    // crowd: reinjection follows timeouts only.
    #[inline(never)]
    fn schedule_reinjection(&mut self, now_ns: u64) -> Option<Option<(usize, u64, NewChunk)>> {
        while let Some(&(seq, len)) = self.reinject.front() {
            let end = seq + len as u64;
            if end <= self.data_una {
                self.reinject.pop_front();
                continue;
            }
            let start = seq.max(self.data_una);
            let Some((i, chunk)) = self.pick_chunk(now_ns, end - start, None) else {
                return Some(None);
            };
            let sent = chunk.len_bytes();
            self.reinject.pop_front();
            if start + (sent as u64) < end {
                self.reinject
                    .push_front((start + sent as u64, (end - start - sent as u64) as u32));
            }
            self.stats.reinjected_segments += 1;
            self.stats.reinjected_bytes += sent as u64;
            return Some(Some((i, start, chunk)));
        }
        None
    }

    /// The connection-level window is full and the data at the Data ACK is
    /// still on subflow `holder`. NSDI'12 §4.2 (Linux
    /// `mptcp_rcv_buf_optimization`): a subflow with room halves the window
    /// of a slower holder (penalisation, at most once per the penalising
    /// subflow's RTT, only while the holder is in the open state) and
    /// resends the head (opportunistic retransmission, once per Data ACK
    /// value, when the holder's RTT is over 4 times its own or the holder's
    /// window is at most 4 segments).
    fn on_window_limited(&mut self, now_ns: u64) -> Option<(usize, u64, NewChunk)> {
        if !(self.cfg.opportunistic_retransmit || self.cfg.penalise_slow_subflows) {
            return None;
        }
        let head = self.data_una;
        let (holder, head_end) = self.subflows.iter().enumerate().find_map(|(k, sf)| {
            let m = sf.map.carrying(head)?;
            Some((k, m.data_end()))
        })?;
        let (i, chunk) = self.pick_chunk(now_ns, head_end - head, Some(holder))?;
        if self.cfg.penalise_slow_subflows {
            let srtt = self.subflows[i].tcp.srtt_ns();
            let due = self.subflows[i]
                .last_penalised_ns
                .is_none_or(|t| now_ns >= t.saturating_add(srtt));
            let slow = &mut self.subflows[holder];
            if due && srtt < slow.tcp.srtt_ns() && slow.tcp.penalise() {
                self.summaries[holder].forget_room();
                self.streak = None;
                self.subflows[i].last_penalised_ns = Some(now_ns);
                self.stats.penalisations += 1;
            }
        }
        if !self.cfg.opportunistic_retransmit || self.opportunistic_for == Some(head) {
            return None;
        }
        // Linux's test: resend only if the holder is much slower (4·RTT) or
        // its window is tiny, else the copy would not arrive much sooner.
        let (mine, theirs) = (&self.subflows[i].tcp, &self.subflows[holder].tcp);
        let tiny = theirs.cwnd_bytes() <= 4 * theirs.config().mss_bytes as u64;
        if !(tiny || mine.srtt_ns().saturating_mul(4) < theirs.srtt_ns()) {
            return None;
        }
        self.opportunistic_for = Some(head);
        self.stats.opportunistic_retransmits += 1;
        Some((i, head, chunk))
    }

    fn check_complete(&mut self, now_ns: u64) {
        if self.finite && self.completed_at_ns.is_none() && self.data_una >= self.data_end {
            self.completed_at_ns = Some(now_ns);
        }
    }
}

/// The last min-RTT pick: at `now_ns`, `subflow` was the fastest candidate
/// with room for a chunk of `want_bytes`. Until a subflow's sender changes
/// otherwise than by the chunks sent on `subflow` (an event, a segment it
/// owed, a penalty; each clears the streak), the faster candidates still
/// have no room for as many bytes, and the candidates and their order are
/// the same, so the next chunk of the same size at the same time goes to
/// `subflow` again if it still has room: the scheduler asks it alone, as
/// the TCP sender of a plain flow would be asked, instead of going over
/// every subflow for each segment. When `alone`, no other subflow had
/// room for the chunk at the streak's start; then, once `subflow` has no
/// room left either, none has, and the scheduler answers so without going
/// over the subflows (the last question after every ACK).
#[derive(Clone, Copy, Debug)]
struct Streak {
    subflow: usize,
    now_ns: u64,
    want_bytes: u64,
    alone: bool,
}

impl Streak {
    fn holds(&self, now_ns: u64, want_bytes: u64) -> bool {
        self.now_ns == now_ns && self.want_bytes == want_bytes
    }
}
