#!/usr/bin/env python3
"""ns-3 side of the latlab-vs-ns-3 grid: one point as JSON on stdin, its metrics as one JSON line on stdout.

Run by benches/validation/ns3_grid.py with the interpreter that has the PyPI package `ns3` (3.44):

    echo '{...point...}' | /tmp/ns3venv/bin/python benches/validation/ns3_twin.py

The point carries everything both simulators need, already drawn (access delays and start times come
from the harness's seed, so both sides use literally the same numbers); this module only builds the
ns-3 twin of latlab's dumbbell and measures it. The settings and why each is set are listed in the
table at the top of ns3_grid.py; keys of `ns3_overrides` in the point change one ns-3 setting for the
"change one setting on one side" experiments (see OVERRIDES below).
"""

from __future__ import annotations

import json
import sys
import time

PORT = 9

# One ns-3 setting changed, for an experiment: name -> what it does (applied in build()).
OVERRIDES = {
    "recovery": "TcpClassicRecovery (default here) or TcpPrrRecovery (ns-3's own default)",
    "limited_transmit": "TcpSocketBase::LimitedTransmit (off here: latlab has no RFC 3042)",
    "hystart": "TcpCubic::HyStart (off here: latlab's CUBIC has no HyStart)",
    "core_extra_pkts": "add this many packets to the core device queue",
    "sack": "TcpSocketBase::Sack (off here, as in latlab's ns2-era twin; on, ns-3 recovers by its RFC 6675 scoreboard)",
    "rto_rows": "diagnosis only, no setting changed: also print, per RTO, (time, cwnd before, ssthresh after, the RTO "
    "in force, the last RTT sample, time since the cumulative ACK last advanced and since the fast "
    "recovery began)",
    "core_fifo_qdisc": "hold the core buffer in a FifoQueueDisc (B - 1 packets) over a 1-packet device queue",
    "codel_target_ms": "CoDel's Target (default: latlab's 5 ms less one data-packet serialisation, see build)",
    "red_threshold_shift": "subtract this from latlab's RED thresholds (default 1: the device queue's packet)",
    "data_retries": "TcpSocket::DataRetries (ns-3's default 6: the connection is dropped at the 7th timeout in a row)",
    "min_rto_ms": "TcpSocketBase::MinRto in ms (default: the harness's, matched with latlab's min_rto_ms)",
    "fq_codel_min_bytes": "MinBytes of FqCoDelQueueDisc's per-flow CoDel discs (default: latlab's mtu_bytes; ns-3 "
    "checks it against the flow's own backlog, latlab against the whole discipline's, as Linux)",
    "fq_codel_drop_batch": "FqCoDelQueueDisc::DropBatchSize (default 1, latlab's one packet per overflow; ns-3's 64)",
    "aqm": "latlab's AQM parameters changed for ns-3's disc too, e.g. max_burst_ms (as the grid's --latlab-set aqm.KEY)",
    "timestamps": "TcpSocketBase::Timestamp (off here, as latlab's grid; on, RTT samples come from the echoed "
    "timestamp: a diagnosis of TcpBbr's min_rtt, see the BBR section)",
    "aqm_delay_shift": "subtract one data-packet serialisation from the FQ-CoDel Target / PIE QueueDelayReference "
    "(default true, see build)",
    "bbr_recovery": "TcpBbr's cwnd around loss recovery as Linux's bbr_set_cwnd_to_recover_or_restore (BBR only; "
    "default: ns-3's own): 'round' keeps packet conservation for a whole round after entering fast recovery "
    "(next_rtt_delivered = delivered), 'restore' restores the saved cwnd on leaving fast recovery or a timeout's "
    "loss state (ns-3's TcpSocketBase sets cwnd = ssthresh there, and TcpBbr restores nothing after a timeout), "
    "'linux' both (LATLAB_BBR below)",
}

# The `bbr_recovery` override: TcpBbr with Linux's cwnd handling around loss recovery, as a subclass registered
# under its own TypeId (ns-3 itself unchanged). The round counter and the saved cwnd are TcpBbr's private members;
# member pointers to them are taken through an explicit template instantiation, where access checking does not
# apply (C++17 [temp.spec]/6).
LATLAB_BBR = r"""
#include <algorithm>
namespace latlab_bbr {
using namespace ns3;
template <typename Tag, typename Tag::type M> struct Rob { friend typename Tag::type get(Tag) { return M; } };
struct NextRound { typedef uint32_t TcpBbr::*type; friend type get(NextRound); };
struct Delivered { typedef uint64_t TcpBbr::*type; friend type get(Delivered); };
struct PriorCwnd { typedef uint32_t TcpBbr::*type; friend type get(PriorCwnd); };
template struct Rob<NextRound, &TcpBbr::m_nextRoundDelivered>;
template struct Rob<Delivered, &TcpBbr::m_delivered>;
template struct Rob<PriorCwnd, &TcpBbr::m_priorCwnd>;
}
namespace ns3 {
class LatlabLinuxRecoveryBbr : public TcpBbr {
  public:
    static TypeId GetTypeId() {
        static TypeId tid =
            TypeId("ns3::LatlabLinuxRecoveryBbr")
                .SetParent<TcpBbr>()
                .SetGroupName("Internet")
                .AddConstructor<LatlabLinuxRecoveryBbr>()
                .AddAttribute("RoundConservation", "packet conservation for a whole round after entering recovery",
                              BooleanValue(false), MakeBooleanAccessor(&LatlabLinuxRecoveryBbr::m_round),
                              MakeBooleanChecker())
                .AddAttribute("RestoreOnExit", "cwnd = max(cwnd, prior cwnd) on leaving recovery or loss",
                              BooleanValue(false), MakeBooleanAccessor(&LatlabLinuxRecoveryBbr::m_restore),
                              MakeBooleanChecker());
        return tid;
    }
    LatlabLinuxRecoveryBbr() : TcpBbr() {}
    LatlabLinuxRecoveryBbr(const LatlabLinuxRecoveryBbr& o) : TcpBbr(o), m_round(o.m_round), m_restore(o.m_restore) {}
    std::string GetName() const override { return "LatlabLinuxRecoveryBbr"; }
    Ptr<TcpCongestionOps> Fork() override { return CopyObject<LatlabLinuxRecoveryBbr>(this); }
    // TcpSocketBase calls this before it changes m_congState, so tcb still holds the state being left.
    void CongestionStateSet(Ptr<TcpSocketState> tcb, const TcpSocketState::TcpCongState_t newState) override {
        using S = TcpSocketState;
        const S::TcpCongState_t prev = tcb->m_congState;
        TcpBbr::CongestionStateSet(tcb, newState);
        if (m_round && newState == S::CA_RECOVERY && prev != S::CA_RECOVERY) {
            // tcp_bbr.c bbr_set_cwnd_to_recover_or_restore: next_rtt_delivered = delivered (this ACK's included),
            // so the round, and packet conservation with it, ends when data sent from now on is delivered.
            this->*get(latlab_bbr::NextRound()) =
                uint32_t(this->*get(latlab_bbr::Delivered()) + tcb->m_lastAckedSackedBytes);
        }
        if (m_restore && newState == S::CA_OPEN && (prev == S::CA_RECOVERY || prev == S::CA_LOSS)) {
            // ... and on leaving recovery or loss, cwnd = max(cwnd, prior_cwnd). TcpSocketBase sets cwnd = ssthresh
            // right after leaving fast recovery, so ssthresh (which TcpBbr does not otherwise read) carries it.
            uint32_t c = std::max(tcb->m_cWnd.Get(), this->*get(latlab_bbr::PriorCwnd()));
            tcb->m_cWnd = c;
            tcb->m_ssThresh = c;
        }
    }
  private:
    bool m_round{false};
    bool m_restore{false};
};
}
"""

# Counting in C++: a Python callback per packet would dominate the run time.
CPP = r"""
#include <deque>
#include <map>
#include <string>
#include <vector>
namespace latlab_grid {
using namespace ns3;
uint64_t g_data_segments = 0;      // data segments handed to IP by the senders, whole run
uint64_t g_retransmitted = 0;      // of which at or below the socket's highest sequence sent
uint64_t g_loss_entries = 0;       // congestion-state transitions into CA_LOSS (RTO fired)
uint64_t g_tc_drops = 0;           // packets r1's traffic-control layer dropped (device queue stopped)
std::map<const TcpSocketBase*, SequenceNumber32> g_high;

void OnTx(Ptr<const Packet> p, const TcpHeader& h, Ptr<const TcpSocketBase> s) {
    if (p->GetSize() == 0) return;  // pure ACK / SYN / FIN
    g_data_segments++;
    SequenceNumber32 end = h.GetSequenceNumber() + p->GetSize();
    auto it = g_high.find(PeekPointer(s));
    if (it != g_high.end() && end <= it->second) { g_retransmitted++; return; }
    g_high[PeekPointer(s)] = end;
}
// Congestion-state history, for the loss-recovery diagnosis (trace_states): how many fast recoveries start,
// and how many start within 5 ms of the previous recovery or timeout ending (back to back).
uint64_t g_recoveries = 0;
uint64_t g_back_to_back = 0;
Time g_last_exit = Seconds(-1);
uint32_t g_cwnd = 0;  // the last traced cwnd (bytes) of the hooked sockets; read by the sampler for one flow
// The timeout diagnosis: ReTxTimeout sets ssthresh, then cwnd = 1 MSS, then the state to CA_LOSS, all on one
// socket in one event, so the last traced values at the CA_LOSS entry are that socket's. One row per entry:
// time (ns), cwnd just before the timeout and ssthresh just after (bytes).
uint32_t g_cwnd_before = 0;
uint32_t g_ssthresh = 0;
// And the timer at that moment: the RTO in force before the timeout doubled it, the last RTT sample, when the
// cumulative ACK last advanced (the timer's start) and when the fast recovery before it began (ns).
uint64_t g_rto_ns = 0;
uint64_t g_rto_before_ns = 0;   // m_rto before its last change, and when that change came
uint64_t g_rto_changed_ns = 0;
uint64_t g_rtt_ns = 0;
uint64_t g_ack_advance_ns = 0;
uint64_t g_recovery_ns = 0;
std::vector<uint64_t> g_rto_rows;
void OnCong(TcpSocketState::TcpCongState_t from, TcpSocketState::TcpCongState_t to) {
    if (to == TcpSocketState::CA_LOSS && from != TcpSocketState::CA_LOSS) {
        g_loss_entries++;
        g_rto_rows.push_back(Simulator::Now().GetNanoSeconds());
        g_rto_rows.push_back(g_cwnd_before);
        g_rto_rows.push_back(g_ssthresh);
        g_rto_rows.push_back(g_rto_changed_ns == Simulator::Now().GetNanoSeconds() ? g_rto_before_ns : g_rto_ns);
        g_rto_rows.push_back(g_rtt_ns);
        g_rto_rows.push_back(g_ack_advance_ns);
        g_rto_rows.push_back(g_recovery_ns);
    }
    if (to == TcpSocketState::CA_RECOVERY && from != TcpSocketState::CA_RECOVERY)
        g_recovery_ns = Simulator::Now().GetNanoSeconds();
    Time now = Simulator::Now();
    if ((from == TcpSocketState::CA_RECOVERY || from == TcpSocketState::CA_LOSS) &&
        (to == TcpSocketState::CA_OPEN || to == TcpSocketState::CA_DISORDER)) g_last_exit = now;
    if (to == TcpSocketState::CA_RECOVERY && from != TcpSocketState::CA_RECOVERY) {
        g_recoveries++;
        if (g_last_exit >= Seconds(0) && now - g_last_exit < MilliSeconds(5)) g_back_to_back++;
    }
}
void OnCwnd(uint32_t before_bytes, uint32_t now_bytes) { g_cwnd_before = before_bytes; g_cwnd = now_bytes; }
void OnSsthresh(uint32_t, uint32_t now_bytes) { g_ssthresh = now_bytes; }
// ReTxTimeout backs m_rto off in the same event as it enters CA_LOSS: the row takes the value before that change.
void OnRto(Time old_rto, Time now_rto) {
    g_rto_before_ns = old_rto.GetNanoSeconds();
    g_rto_ns = now_rto.GetNanoSeconds();
    g_rto_changed_ns = Simulator::Now().GetNanoSeconds();
}
void OnRtt(Time, Time now_rtt) { g_rtt_ns = now_rtt.GetNanoSeconds(); }
void OnHighAck(SequenceNumber32, SequenceNumber32) { g_ack_advance_ns = Simulator::Now().GetNanoSeconds(); }
void Hook(Ptr<Application> app) {
    Ptr<Socket> s = DynamicCast<BulkSendApplication>(app)->GetSocket();
    s->TraceConnectWithoutContext("Tx", MakeCallback(&OnTx));
    s->TraceConnectWithoutContext("CongState", MakeCallback(&OnCong));
    s->TraceConnectWithoutContext("CongestionWindow", MakeCallback(&OnCwnd));
    s->TraceConnectWithoutContext("SlowStartThreshold", MakeCallback(&OnSsthresh));
    s->TraceConnectWithoutContext("RTO", MakeCallback(&OnRto));
    s->TraceConnectWithoutContext("RTT", MakeCallback(&OnRtt));
    s->TraceConnectWithoutContext("HighestRxAck", MakeCallback(&OnHighAck));
}
// The socket exists once the application has started: hook it just after.
void HookAfter(Ptr<Application> app, double start_s) {
    Simulator::Schedule(Seconds(start_s) + NanoSeconds(1), &Hook, app);
}
// With no queue disc, TrafficControlLayer::Send drops a packet itself when the device has stopped its
// transmit queue (the device stops it when one more packet would overflow the DropTail queue), so the
// core's overflow drops are counted here, not by the device queue.
void OnTcDrop(Ptr<const Packet> p) { g_tc_drops++; }
// Flow 0's state for the BBR trace comparison: cwnd (bytes), pacing rate (bit/s), smoothed RTT (ns; the socket's
// "RTT" trace is m_srtt), read by the sampler every interval.
uint32_t g_f0_cwnd = 0;
uint64_t g_f0_pacing_bps = 0;
uint64_t g_f0_rtt_ns = 0;
void OnF0Cwnd(uint32_t, uint32_t now_bytes) { g_f0_cwnd = now_bytes; }
void OnF0Pacing(DataRate, DataRate now_rate) { g_f0_pacing_bps = now_rate.GetBitRate(); }
void OnF0Rtt(Time, Time now_rtt) { g_f0_rtt_ns = now_rtt.GetNanoSeconds(); }
void HookFlow0(Ptr<Application> app) {
    Ptr<Socket> s = DynamicCast<BulkSendApplication>(app)->GetSocket();
    s->TraceConnectWithoutContext("CongestionWindow", MakeCallback(&OnF0Cwnd));
    s->TraceConnectWithoutContext("PacingRate", MakeCallback(&OnF0Pacing));
    s->TraceConnectWithoutContext("RTT", MakeCallback(&OnF0Rtt));
}
void HookFlow0After(Ptr<Application> app, double start_s) {
    Simulator::Schedule(Seconds(start_s) + NanoSeconds(1), &HookFlow0, app);
}
void HookTc(Ptr<Node> router) {
    bool ok = router->GetObject<TrafficControlLayer>()->TraceConnectWithoutContext("TcDrop", MakeCallback(&OnTcDrop));
    NS_ABORT_MSG_IF(!ok, "TrafficControlLayer has no TcDrop trace source with this signature");
}
// AQM points: every flow's srtt (the "RTT" trace source is TcpSocketBase::m_srtt) and the core queue's sojourn,
// queue disc (SojournTime: enqueue to dequeue from the disc) plus the 1-packet device queue (FIFO, so a deque of
// arrival times), summed over the packets that leave in the window (ResetDelays at the window start).
std::vector<uint64_t> g_srtt_ns;
void OnSrtt(uint32_t i, Time, Time now_srtt) { g_srtt_ns[i] = now_srtt.GetNanoSeconds(); }
void HookSrtt(Ptr<Application> app, uint32_t i) {
    Ptr<Socket> s = DynamicCast<BulkSendApplication>(app)->GetSocket();
    s->TraceConnectWithoutContext("RTT", MakeBoundCallback(&OnSrtt, i));
}
void HookSrttAfter(Ptr<Application> app, double start_s, uint32_t i) {
    if (g_srtt_ns.size() <= i) g_srtt_ns.resize(i + 1, 0);
    Simulator::Schedule(Seconds(start_s) + NanoSeconds(1), &HookSrtt, app, i);
}
double SrttMeanNs() {
    double sum = 0; uint32_t n = 0;
    for (uint64_t v : g_srtt_ns) if (v > 0) { sum += v; n++; }
    return n ? sum / n : 0.0;
}
uint64_t g_disc_sojourn_sum_ns = 0, g_disc_sojourn_n = 0;
uint64_t g_dev_wait_sum_ns = 0, g_dev_wait_n = 0;
std::deque<int64_t> g_dev_arrivals;
void OnDiscSojourn(Time t) { g_disc_sojourn_sum_ns += t.GetNanoSeconds(); g_disc_sojourn_n++; }
void OnDevEnqueue(Ptr<const Packet>) { g_dev_arrivals.push_back(Simulator::Now().GetNanoSeconds()); }
void OnDevDequeue(Ptr<const Packet>) {
    if (g_dev_arrivals.empty()) return;
    g_dev_wait_sum_ns += Simulator::Now().GetNanoSeconds() - g_dev_arrivals.front();
    g_dev_wait_n++;
    g_dev_arrivals.pop_front();
}
void HookDelays(Ptr<QueueDisc> disc, Ptr<Queue<Packet>> devq) {
    bool ok = disc->TraceConnectWithoutContext("SojournTime", MakeCallback(&OnDiscSojourn));
    ok = ok && devq->TraceConnectWithoutContext("Enqueue", MakeCallback(&OnDevEnqueue));
    ok = ok && devq->TraceConnectWithoutContext("Dequeue", MakeCallback(&OnDevDequeue));
    NS_ABORT_MSG_IF(!ok, "queue disc or device queue lacks a SojournTime/Enqueue/Dequeue trace source");
}
void SetFqQuantum(Ptr<QueueDisc> q, uint32_t bytes) { DynamicCast<FqCoDelQueueDisc>(q)->SetQuantum(bytes); }
void ResetDelays() { g_disc_sojourn_sum_ns = g_disc_sojourn_n = g_dev_wait_sum_ns = g_dev_wait_n = 0; }
// The disc's CE marks by reason over the whole run, "reason=count;..." (a child disc's marks are counted by the
// parent too, under "(Marked by child queue disc) ...").
std::string MarkReasons(Ptr<QueueDisc> q) {
    std::string out;
    for (auto& kv : q->GetStats().nMarkedPackets) out += kv.first + "=" + std::to_string(kv.second) + ";";
    return out;
}
uint64_t TotalMarks(Ptr<QueueDisc> q) { return q->GetStats().nTotalMarkedPackets; }
// The disc's drops by reason over the whole run, "reason=count;...".
std::string DropReasons(Ptr<QueueDisc> q) {
    const QueueDisc::Stats& st = q->GetStats();
    std::string out;
    for (auto& kv : st.nDroppedPacketsBeforeEnqueue) out += kv.first + "=" + std::to_string(kv.second) + ";";
    for (auto& kv : st.nDroppedPacketsAfterDequeue) out += kv.first + "=" + std::to_string(kv.second) + ";";
    return out;
}
// BBR points: every flow's TcpBbr beside its socket, read by the sampler: cwnd, bytes in flight (bytes), pacing rate
// (bit/s) and srtt (ns) from the socket's trace sources; min_rtt (ns) from TcpBbr's MinRtt trace; the gains and the
// mode from TcpBbr's public getters (the max-bw filter and the cwnd target are private: the harness derives bw from
// the pacing rate and the gain).
struct BbrFlow {
    uint32_t cwnd = 0, inflight = 0;
    uint64_t pacing_bps = 0, srtt_ns = 0, min_rtt_ns = 0;
    Ptr<TcpBbr> bbr;
};
std::vector<BbrFlow> g_bbr;
void OnBbrCwnd(uint32_t i, uint32_t, uint32_t v) { g_bbr[i].cwnd = v; }
void OnBbrInflight(uint32_t i, uint32_t, uint32_t v) { g_bbr[i].inflight = v; }
void OnBbrPacing(uint32_t i, DataRate, DataRate v) { g_bbr[i].pacing_bps = v.GetBitRate(); }
void OnBbrSrtt(uint32_t i, Time, Time v) { g_bbr[i].srtt_ns = v.GetNanoSeconds(); }
void OnBbrMinRtt(uint32_t i, Time, Time v) { g_bbr[i].min_rtt_ns = v == Time::Max() ? 0 : v.GetNanoSeconds(); }
void HookBbr(Ptr<Application> app, uint32_t i) {
    Ptr<Socket> s = DynamicCast<BulkSendApplication>(app)->GetSocket();
    bool ok = s->TraceConnectWithoutContext("CongestionWindow", MakeBoundCallback(&OnBbrCwnd, i));
    ok = ok && s->TraceConnectWithoutContext("BytesInFlight", MakeBoundCallback(&OnBbrInflight, i));
    ok = ok && s->TraceConnectWithoutContext("PacingRate", MakeBoundCallback(&OnBbrPacing, i));
    ok = ok && s->TraceConnectWithoutContext("RTT", MakeBoundCallback(&OnBbrSrtt, i));
    PointerValue ops;
    s->GetAttribute("CongestionOps", ops);
    Ptr<TcpBbr> bbr = DynamicCast<TcpBbr>(ops.GetObject());
    NS_ABORT_MSG_IF(!bbr, "the socket's CongestionOps is not a TcpBbr");
    ok = ok && bbr->TraceConnectWithoutContext("MinRtt", MakeBoundCallback(&OnBbrMinRtt, i));
    NS_ABORT_MSG_IF(!ok, "a BBR trace source is missing");
    g_bbr[i].bbr = bbr;
}
void HookBbrAfter(Ptr<Application> app, double start_s, uint32_t i) {
    if (g_bbr.size() <= i) g_bbr.resize(i + 1);
    Simulator::Schedule(Seconds(start_s) + NanoSeconds(1), &HookBbr, app, i);
}
// One flow's sample: mode (TcpBbr::BbrMode_t, 0 startup .. 3 probe_rtt; -1 before the socket exists), pacing gain,
// cwnd gain, cwnd and bytes in flight (bytes), pacing rate (bit/s), srtt and min_rtt (ns).
std::vector<double> BbrSample(uint32_t i) {
    if (i >= g_bbr.size() || !g_bbr[i].bbr) return {-1, 0, 0, 0, 0, 0, 0, 0};
    BbrFlow& f = g_bbr[i];
    return {double(f.bbr->GetBbrState()), f.bbr->GetPacingGain(), f.bbr->GetCwndGain(), double(f.cwnd),
            double(f.inflight), double(f.pacing_bps), double(f.srtt_ns), double(f.min_rtt_ns)};
}
EventImpl* PyEvent(void (*f)()) { return MakeEvent(f); }
}
"""

BBR_MODES = ("startup", "drain", "probe_bw", "probe_rtt")


def aqm_disc(p: dict, disc_pkts: int, shift_ns: int, ov: dict) -> tuple:
    """SetRootQueueDisc arguments for FQ-CoDel or PIE at the core, from latlab's parameters (`aqm` in the point).
    Every attribute that latlab's queue has is set from it; ns-3's extras are set to latlab's behaviour where ns-3
    has a switch (the matched-settings table of ns3_grid.py names what is left)."""
    from ns import ns

    a = {**p["aqm"], **ov.get("aqm", {})}
    size = ns.QueueSizeValue(ns.QueueSize(f"{disc_pkts}p"))
    if p["qdisc"] == "fq_codel":
        # the per-flow CoDel discs take MinBytes from the CoDelQueueDisc default (FqCoDel sets only their size,
        # Interval, Target, UseEcn, CeThreshold, UseL4s)
        ns.Config.SetDefault(
            "ns3::CoDelQueueDisc::MinBytes",
            ns.UintegerValue(int(ov.get("fq_codel_min_bytes", a["mtu_bytes"]))),
        )
        return (
            "ns3::FqCoDelQueueDisc",
            "MaxSize",
            size,
            "Flows",
            ns.UintegerValue(a["flows"]),
            # string attributes in FqCoDelQueueDisc, passed on to each flow's CoDelQueueDisc
            "Target",
            ns.StringValue(f"{round(a['target_ms'] * 1e6) - shift_ns}ns"),
            "Interval",
            ns.StringValue(f"{round(a['interval_ms'] * 1e6)}ns"),
            "DropBatchSize",
            ns.UintegerValue(int(ov.get("fq_codel_drop_batch", 1))),
            # ECN: mark where CoDel would drop; CeThreshold left unset (Time::Max: no L4S-style shallow marks)
            "UseEcn",
            ns.BooleanValue(bool(a.get("ecn", False))),
        )
    return (
        "ns3::PieQueueDisc",
        "MaxSize",
        size,
        "A",
        ns.DoubleValue(a["alpha"]),
        "B",
        ns.DoubleValue(a["beta"]),
        "Tupdate",
        ns.TimeValue(ns.NanoSeconds(round(a["t_update_ms"] * 1e6))),
        "QueueDelayReference",
        ns.TimeValue(ns.NanoSeconds(round(a["target_ms"] * 1e6) - shift_ns)),
        "MaxBurstAllowance",
        ns.TimeValue(ns.NanoSeconds(round(a["max_burst_ms"] * 1e6))),
        "MeanPktSize",
        ns.UintegerValue(a["mean_pkt_size_bytes"]),
        "UseDequeueRateEstimator",
        ns.BooleanValue(False),
        "UseCapDropAdjustment",
        ns.BooleanValue(True),
        "UseDerandomization",
        ns.BooleanValue(False),
        # ECN: mark instead of drop while p < MarkEcnThreshold (default 0.1, RFC 8033 §5.1's 10 %)
        "UseEcn",
        ns.BooleanValue(bool(a.get("ecn", False))),
    )


def aqm_delays(g, srtt_samples: list) -> dict:  # noqa: ANN001
    """The flows' mean srtt over the window's samples and the core queue's mean sojourn (disc + device queue) over
    the packets that left it in the window, ms; the disc's and device's parts also apart."""
    disc = g.g_disc_sojourn_sum_ns / max(1, int(g.g_disc_sojourn_n)) / 1e6
    dev = g.g_dev_wait_sum_ns / max(1, int(g.g_dev_wait_n)) / 1e6
    return {
        "srtt_mean_ms": round(sum(srtt_samples) / max(1, len(srtt_samples)) / 1e6, 3),
        "sojourn_mean_ms": round(disc + dev, 3),
        "sojourn_disc_ms": round(disc, 3),
        "sojourn_device_ms": round(dev, 3),
    }


def latlab_bbr_recovery(ns, cc: str, mode: str):  # noqa: ANN001, ANN201
    """The `bbr_recovery` override: TcpBbr's subclass with Linux's cwnd around recovery ('round', 'restore' or
    'linux' for both), its attributes set as defaults before any socket exists."""
    parts = {"round": (True, False), "restore": (False, True), "linux": (True, True)}
    if cc != "bbr" or mode not in parts:
        raise SystemExit(
            f"ns3_overrides: bbr_recovery={mode!r} needs cc bbr and one of {sorted(parts)}"
        )
    ns.cppyy.cppdef(LATLAB_BBR)
    cls = ns.cppyy.gbl.ns3.LatlabLinuxRecoveryBbr
    cls.GetTypeId()  # registers the TypeId, whose attributes SetDefault looks up by name
    round_, restore = parts[mode]
    ns.Config.SetDefault("ns3::LatlabLinuxRecoveryBbr::RoundConservation", ns.BooleanValue(round_))
    ns.Config.SetDefault("ns3::LatlabLinuxRecoveryBbr::RestoreOnExit", ns.BooleanValue(restore))
    return cls


def build_and_run(p: dict) -> dict:
    from ns import ns

    try:
        from importlib.metadata import version

        ns3_version = version("ns3")
    except Exception:
        ns3_version = "unknown"
    ns.cppyy.cppdef(CPP)
    g = ns.cppyy.gbl.latlab_grid
    ov = p.get("ns3_overrides", {})
    unknown = set(ov) - set(OVERRIDES)
    if unknown:
        raise SystemExit(
            f"ns3_overrides: unknown keys {sorted(unknown)}; expected some of {sorted(OVERRIDES)}"
        )
    ns.RngSeedManager.SetSeed(max(1, int(p["seed"])))
    aqm = p.get("qdisc") in ("fq_codel", "pie")

    cfg = ns.Config.SetDefault
    cc = {"newreno": ns.TcpNewReno, "cubic": ns.TcpCubic, "bbr": ns.TcpBbr}[p["cc"]]
    if "bbr_recovery" in ov:
        cc = latlab_bbr_recovery(ns, p["cc"], ov["bbr_recovery"])
    cfg("ns3::TcpL4Protocol::SocketType", ns.TypeIdValue(cc.GetTypeId()))
    recovery = {"classic": ns.TcpClassicRecovery, "prr": ns.TcpPrrRecovery}[
        ov.get("recovery", "classic")
    ]
    cfg("ns3::TcpL4Protocol::RecoveryType", ns.TypeIdValue(recovery.GetTypeId()))
    cfg("ns3::TcpSocket::SegmentSize", ns.UintegerValue(p["mss_bytes"]))
    cfg("ns3::TcpSocket::InitialCwnd", ns.UintegerValue(p["initial_window_segments"]))
    cfg("ns3::TcpSocket::DelAckCount", ns.UintegerValue(1))
    cfg("ns3::TcpSocket::SndBufSize", ns.UintegerValue(p["socket_buffer_bytes"]))
    cfg("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(p["socket_buffer_bytes"]))
    cfg(
        "ns3::TcpSocketBase::MinRto",
        ns.TimeValue(ns.MilliSeconds(float(ov.get("min_rto_ms", p["min_rto_ms"])))),
    )
    cfg("ns3::TcpSocketBase::ClockGranularity", ns.TimeValue(ns.MilliSeconds(1)))
    cfg("ns3::RttEstimator::InitialEstimation", ns.TimeValue(ns.Seconds(1)))
    cfg("ns3::TcpSocketBase::Timestamp", ns.BooleanValue(bool(ov.get("timestamps", False))))
    cfg("ns3::TcpSocketBase::Sack", ns.BooleanValue(bool(ov.get("sack", False))))
    cfg(
        "ns3::TcpSocketBase::LimitedTransmit",
        ns.BooleanValue(bool(ov.get("limited_transmit", False))),
    )
    cfg("ns3::TcpCubic::HyStart", ns.BooleanValue(bool(ov.get("hystart", False))))
    if "data_retries" in ov:
        cfg("ns3::TcpSocket::DataRetries", ns.UintegerValue(int(ov["data_retries"])))
    cfg("ns3::TcpCubic::FastConvergence", ns.BooleanValue(True))
    cfg("ns3::TcpCubic::Beta", ns.DoubleValue(0.7))
    cfg("ns3::TcpCubic::C", ns.DoubleValue(0.4))
    cfg("ns3::Ipv4::StrongEndSystemModel", ns.BooleanValue(True))
    if p.get("ecn"):
        # RFC 3168 at both ends: ECN-setup SYN, ECT(0) data, ECE until CWR (TcpSocketState::UseEcn_t On)
        cfg("ns3::TcpSocketBase::UseEcn", ns.StringValue("On"))

    n = p["flows"]
    senders, receivers, routers = ns.NodeContainer(), ns.NodeContainer(), ns.NodeContainer()
    senders.Create(n)
    receivers.Create(n)
    routers.Create(2)
    r1, r2 = routers.Get(0), routers.Get(1)
    stack = ns.InternetStackHelper()
    for c in (senders, receivers, routers):
        stack.Install(c)
    addr = ns.Ipv4AddressHelper()
    addr.SetBase(ns.Ipv4Address("10.0.0.0"), ns.Ipv4Mask("255.255.255.252"))
    tch = ns.TrafficControlHelper()

    def link(a, b, rate_bps, delay_ms, queue):
        p2p = ns.PointToPointHelper()
        p2p.SetDeviceAttribute("DataRate", ns.DataRateValue(ns.DataRate(int(rate_bps))))
        p2p.SetChannelAttribute("Delay", ns.TimeValue(ns.NanoSeconds(round(delay_ms * 1e6))))
        p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", ns.StringValue(queue))
        devs = p2p.Install(a, b)
        ifaces = addr.Assign(devs)
        addr.NewNetwork()
        tch.Uninstall(devs)  # no traffic-control layer: the device queue is the only queue
        return devs, ifaces

    core_pkts = int(p["buffer_pkts"]) + int(ov.get("core_extra_pkts", 0))
    core_devs, _ = link(r1, r2, p["core_rate_bps"], p["core_delay_ms"], f"{core_pkts}p")
    # ACK direction: deep, as latlab's default queue on r2->r1.
    core_devs.Get(1).GetObject[ns.PointToPointNetDevice]().GetQueue().SetMaxSize(
        ns.QueueSize("100000p")
    )
    core_q = core_devs.Get(0).GetObject[ns.PointToPointNetDevice]().GetQueue()
    fifo = None
    # RED and CoDel: the queue disc holds B - 1 packets over a 1-packet device queue, so ns-3 holds B waiting
    # packets in all, as latlab (the packet being serialised is outside both). Under load the device queue is
    # never empty while the disc holds packets: the disc's length is then latlab's queue length minus one, and a
    # packet leaves the disc one data-packet serialisation before it would leave latlab's queue.
    disc_pkts = max(1, core_pkts - 1)
    ser_ns = round(p["wire_data_bytes"] * 8 / p["core_rate_bps"] * 1e9)
    if p.get("qdisc", "droptail") == "codel":
        # RFC 8289 CoDel as latlab's: INTERVAL 100 ms, MinBytes = latlab's mtu_bytes 1500, the physical limit B
        # packets in all. latlab's sojourn runs from enqueue to the start of transmission; the disc's ends one
        # serialisation earlier (the packet then waits in the device queue), so its Target is latlab's 5 ms less
        # that serialisation: both compare the same interval with 5 ms.
        core_q.SetMaxSize(ns.QueueSize("1p"))
        target_ns = round(float(ov.get("codel_target_ms", 5.0 - ser_ns / 1e6)) * 1e6)
        codel_tch = ns.TrafficControlHelper()
        codel_tch.SetRootQueueDisc(
            "ns3::CoDelQueueDisc",
            "MaxSize",
            ns.QueueSizeValue(ns.QueueSize(f"{disc_pkts}p")),
            "Target",
            ns.TimeValue(ns.NanoSeconds(target_ns)),
            "Interval",
            ns.StringValue("100ms"),
            "MinBytes",
            ns.UintegerValue(1500),
        )
        fifo = codel_tch.Install(core_devs.Get(0)).Get(0)
    elif p.get("qdisc", "droptail") == "red":
        # ns-3's RedQueueDisc is a port of ns-2's red.cc, as latlab's RED: max_p as LInterm = 1/max_p, QW = w_q,
        # Gentle, Wait, MeanPktSize and the link rate for the idle correction, forced drops as hard drops. RED
        # averages the disc's length, latlab's queue length minus the device's one packet under load, so the
        # thresholds are latlab's minus one: both drop at the same number of waiting packets (MaxTh = the disc's
        # limit, as latlab's max_th = its limit).
        r = p["red"]
        shift = float(ov.get("red_threshold_shift", 1.0))
        core_q.SetMaxSize(ns.QueueSize("1p"))
        red_tch = ns.TrafficControlHelper()
        red_tch.SetRootQueueDisc(
            "ns3::RedQueueDisc",
            "MaxSize",
            ns.QueueSizeValue(ns.QueueSize(f"{disc_pkts}p")),
            "MinTh",
            ns.DoubleValue(max(0.0, r["min_th"] - shift)),
            "MaxTh",
            ns.DoubleValue(max(1.0, r["max_th"] - shift)),
            "LInterm",
            ns.DoubleValue(1.0 / r["max_p"]),
            "QW",
            ns.DoubleValue(r["w_q"]),
            "Gentle",
            ns.BooleanValue(r["gentle"]),
            "Wait",
            ns.BooleanValue(r["wait"]),
            "MeanPktSize",
            ns.UintegerValue(r["mean_pkt_size_bytes"]),
            "LinkBandwidth",
            ns.DataRateValue(ns.DataRate(int(p["core_rate_bps"]))),
            "UseHardDrop",
            ns.BooleanValue(True),
        )
        fifo = red_tch.Install(core_devs.Get(0)).Get(0)
    elif p.get("qdisc", "droptail") in ("fq_codel", "pie"):
        core_q.SetMaxSize(ns.QueueSize("1p"))
        # the disc's delay ends one serialisation before latlab's, as for CoDel above
        shift_ns = ser_ns if ov.get("aqm_delay_shift", True) else 0
        aqm_tch = ns.TrafficControlHelper()
        aqm_tch.SetRootQueueDisc(*aqm_disc(p, disc_pkts, shift_ns, ov))
        fifo = aqm_tch.Install(core_devs.Get(0)).Get(0)
        if p["qdisc"] == "fq_codel":
            # no attribute for it: the quantum is set by method before the disc is initialised (else the MTU)
            g.SetFqQuantum(fifo, int(p["aqm"]["quantum_bytes"]))
    elif p.get("qdisc", "droptail") != "droptail":
        raise SystemExit(f"qdisc {p['qdisc']!r}: expected droptail, red, codel, fq_codel or pie")
    if ov.get("core_fifo_qdisc"):
        core_q.SetMaxSize(ns.QueueSize("1p"))
        # the device queue holds one waiting packet, so the queue disc holds the rest of the B
        cfg(
            "ns3::FifoQueueDisc::MaxSize",
            ns.QueueSizeValue(ns.QueueSize(f"{max(1, core_pkts - 1)}p")),
        )
        fifo_tch = ns.TrafficControlHelper()
        fifo_tch.SetRootQueueDisc("ns3::FifoQueueDisc")
        fifo = fifo_tch.Install(core_devs.Get(0)).Get(0)
    # r1's other devices carry only ACKs into 100000-packet queues: every drop r1 makes is the core's.
    g.HookTc(r1)
    sink_addrs = []
    for a_ms, b_ms, _ in p["draws"]:
        link(senders.Get(len(sink_addrs)), r1, p["access_rate_bps"], a_ms, "100000p")
        _, ifaces = link(r2, receivers.Get(len(sink_addrs)), p["access_rate_bps"], b_ms, "100000p")
        sink_addrs.append(ifaces.GetAddress(1))
    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()

    stop = ns.Seconds(p["duration_s"])
    sink_apps = ns.PacketSinkHelper(
        "ns3::TcpSocketFactory", ns.InetSocketAddress(ns.Ipv4Address.GetAny(), PORT).ConvertTo()
    ).Install(receivers)
    sink_apps.Start(ns.Seconds(0))
    sink_apps.Stop(stop)
    sinks = [sink_apps.Get(i).GetObject[ns.PacketSink]() for i in range(n)]
    for i, (_, _, start_s) in enumerate(p["draws"]):
        bulk = ns.BulkSendHelper(
            "ns3::TcpSocketFactory", ns.InetSocketAddress(sink_addrs[i], PORT).ConvertTo()
        )
        bulk.SetAttribute("MaxBytes", ns.UintegerValue(0))
        bulk.SetAttribute("SendSize", ns.UintegerValue(p["mss_bytes"]))
        app = bulk.Install(senders.Get(i)).Get(0)
        app.SetStartTime(ns.NanoSeconds(round(start_s * 1e9)))
        app.SetStopTime(stop)
        g.HookAfter(app, float(round(start_s * 1e9)) / 1e9)
        if i == 0:
            g.HookFlow0After(app, float(round(start_s * 1e9)) / 1e9)
        if aqm:
            g.HookSrttAfter(app, float(round(start_s * 1e9)) / 1e9, i)
        if p["cc"] == "bbr":
            g.HookBbrAfter(app, float(round(start_s * 1e9)) / 1e9, i)

    if aqm:
        g.HookDelays(fifo, core_q)
    # Measurement: per-sink bytes and core queue counters at the window start; queue length every interval.
    marks = {}
    samples = []
    srtt_samples = []  # AQM points: the flows' mean srtt (ns) at each sample
    cwnd_samples = []  # segments, one flow only (trace_states)
    flow0_samples = []  # (s, cwnd segments, pacing Mb/s, srtt ms) of flow 0 in the window
    # BBR points: every flow every interval over the whole run, (s, mode, pacing gain, cwnd gain, cwnd segments,
    # in flight segments, pacing Mb/s, srtt ms, min_rtt ms); None until the flow's socket exists
    bbr_samples = [[] for _ in range(n)] if p["cc"] == "bbr" else []

    def fifo_counts():
        if fifo is None:
            return 0, 0
        st = fifo.GetStats()
        return int(st.nTotalReceivedPackets), int(st.nTotalDroppedPackets)

    def mark():
        marks["rx"] = [s.GetTotalRx() for s in sinks]
        marks["recv"] = int(core_q.GetTotalReceivedPackets())
        marks["drop"] = int(core_q.GetTotalDroppedPackets()) + int(g.g_tc_drops)
        marks["fifo"] = fifo_counts()
        marks["timeouts"] = int(g.g_loss_entries)
        g.ResetDelays()

    interval_ns = int(p["sample_interval_ms"] * 1e6)

    def sample():
        samples.append(
            int(core_q.GetNPackets()) + (int(fifo.GetNPackets()) if fifo is not None else 0)
        )
        if n == 1:
            cwnd_samples.append(int(g.g_cwnd) // p["mss_bytes"])
        if aqm:
            srtt_samples.append(float(g.SrttMeanNs()))
        flow0_samples.append(
            (
                round(ns.Simulator.Now().GetSeconds(), 3),
                int(g.g_f0_cwnd) // p["mss_bytes"],
                round(int(g.g_f0_pacing_bps) / 1e6, 4),
                round(int(g.g_f0_rtt_ns) / 1e6, 3),
            )
        )
        if ns.Simulator.Now().GetNanoSeconds() + interval_ns < int(p["duration_s"] * 1e9):
            ns.Simulator.Schedule(ns.NanoSeconds(interval_ns), g.PyEvent(sample_cb))

    # AQM points: (s, queue packets, cumulative disc drops) every interval over the whole run, slow start included
    run_trace = []
    drop_trace = []  # BBR points: the same at the DropTail core, beside bbr_samples

    def bbr_sample(t_s: float) -> None:
        mss = p["mss_bytes"]
        for i, out_i in enumerate(bbr_samples):
            mode, pg, cg, cwnd, infl, rate, srtt, min_rtt = list(g.BbrSample(i))
            if mode < 0:
                continue
            out_i.append(
                (
                    t_s,
                    BBR_MODES[int(mode)],
                    round(pg, 4),
                    round(cg, 4),
                    round(cwnd / mss, 2),
                    round(infl / mss, 2),
                    round(rate / 1e6, 4),
                    round(srtt / 1e6, 3),
                    round(min_rtt / 1e6, 3),
                )
            )

    def trace():
        if bbr_samples:
            t_s = round(ns.Simulator.Now().GetSeconds(), 3)
            bbr_sample(t_s)
            # (s, queue packets, cumulative core drops): where in time the drops fall, beside the flows' states
            drop_trace.append(
                (
                    t_s,
                    int(core_q.GetNPackets()),
                    int(core_q.GetTotalDroppedPackets()) + int(g.g_tc_drops),
                )
            )
        if not aqm:
            if ns.Simulator.Now().GetNanoSeconds() + interval_ns < int(p["duration_s"] * 1e9):
                ns.Simulator.Schedule(ns.NanoSeconds(interval_ns), g.PyEvent(trace_cb))
            return
        run_trace.append(
            (
                round(ns.Simulator.Now().GetSeconds(), 3),
                int(core_q.GetNPackets()) + int(fifo.GetNPackets()),
                fifo_counts()[1],
            )
        )
        if ns.Simulator.Now().GetNanoSeconds() + interval_ns < int(p["duration_s"] * 1e9):
            ns.Simulator.Schedule(ns.NanoSeconds(interval_ns), g.PyEvent(trace_cb))

    mark_cb, sample_cb, trace_cb = mark, sample, trace  # cppyy needs the callables alive
    if aqm or bbr_samples:
        ns.Simulator.Schedule(ns.NanoSeconds(0), g.PyEvent(trace_cb))
    ns.Simulator.Schedule(ns.NanoSeconds(int(p["measure_from_s"] * 1e9)), g.PyEvent(mark_cb))
    ns.Simulator.Schedule(ns.NanoSeconds(int(p["measure_from_s"] * 1e9)), g.PyEvent(sample_cb))
    ns.Simulator.Stop(stop)
    t0 = time.perf_counter()
    ns.Simulator.Run()
    wall = time.perf_counter() - t0
    span = p["duration_s"] - p["measure_from_s"]
    per_flow = [(s.GetTotalRx() - r0) * 8 / span for s, r0 in zip(sinks, marks["rx"])]
    recv = int(core_q.GetTotalReceivedPackets()) - marks["recv"]
    drop = int(core_q.GetTotalDroppedPackets()) + int(g.g_tc_drops) - marks["drop"]
    if fifo is not None:  # arrivals and drops are the queue disc's (every packet passes through it)
        (r0, d0), (r1_, d1) = marks["fifo"], fifo_counts()
        recv, drop = r1_ - r0 - (d1 - d0), d1 - d0
    out = {
        "simulator": "ns-3",
        "version": "ns-3 " + ns3_version,
        "wall_s": round(wall, 3),
        "per_flow_goodput_bps": [round(x, 1) for x in per_flow],
        "core_arrivals_pkts": recv + drop,
        "core_drops_pkts": drop,
        "queue_samples_pkts": samples,
        "segments_sent": int(g.g_data_segments),
        "retransmitted_segments": int(g.g_retransmitted),
        "timeouts": int(g.g_loss_entries),
        "timeouts_in_window": int(g.g_loss_entries) - marks["timeouts"],
        "recoveries": int(g.g_recoveries),
        "back_to_back_recoveries": int(g.g_back_to_back),
    }
    if ov.get("rto_rows"):
        # At each CA_LOSS entry: time (s), cwnd before and ssthresh after (segments), the RTO in force and the
        # last RTT sample (ms), how long before the timeout the cumulative ACK last advanced and the fast
        # recovery began (ms; the recovery's, if one came after that advance).
        v = g.g_rto_rows
        out["rto_rows"] = [
            (
                round(v[i] / 1e9, 4),
                v[i + 1] // p["mss_bytes"],
                v[i + 2] // p["mss_bytes"],
                round(v[i + 3] / 1e6, 2),
                round(v[i + 4] / 1e6, 2),
                round((v[i] - v[i + 5]) / 1e6, 2),
                round((v[i] - v[i + 6]) / 1e6, 2) if v[i + 6] > v[i + 5] else None,
            )
            for i in range(0, v.size(), 7)
        ]
    if cwnd_samples:
        out["cwnd_samples_segments"] = cwnd_samples
    if aqm:
        out.update(aqm_delays(g, srtt_samples))
        out["drop_reasons_run"] = str(g.DropReasons(fifo))
        if p.get("ecn"):
            out["core_marks_run_pkts"] = int(g.TotalMarks(fifo))
            out["mark_reasons_run"] = str(g.MarkReasons(fifo))
            received, dropped = fifo_counts()
            out["core_drops_run_pkts"] = dropped
            out["core_arrivals_run_pkts"] = received
        out["run_trace"] = run_trace
        if p["qdisc"] == "fq_codel":
            out["flow_queues_used"] = int(fifo.GetNQueueDiscClasses())
    out["flow0_samples"] = flow0_samples
    if bbr_samples:
        out["bbr_samples"] = bbr_samples
        out["drop_trace"] = drop_trace
    ns.Simulator.Destroy()
    return out


def main() -> int:
    point = json.loads(sys.stdin.read())
    print(json.dumps(build_and_run(point)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
