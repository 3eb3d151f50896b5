#!/usr/bin/env python3
"""latlab against ns-3 on a grid of dumbbells: one point description, two simulators, every setting matched.

A `Point` (flows, core buffer in BDP or bytes, congestion control, core queue, seed, duration, window)
becomes a latlab scenario (TOML text, run on latlab's sweep runner) and an ns-3 twin (benches/validation/ns3_twin.py,
run in a subprocess of the interpreter that has the PyPI package `ns3` 3.44). Access delays and start
times are drawn once here from the point's seed and handed to both, so both use the same numbers.

    # the grid (latlab's points on the sweep runner with --jobs workers, ns-3 points --jobs at a time in
    # subprocesses; --sweep-dir keeps latlab's runs, catalog and Parquet, to resume); a new --jsonl file
    # starts with the command, which the page names
    python benches/validation/ns3_grid.py --ns3-python /tmp/ns3venv/bin/python --flows 1,10,100 \\
        --buffers 0.1bdp,0.5bdp,1bdp,2bdp,10KB --cc newreno,cubic --duration 40 --measure-from 10 --jobs 2 \\
        --jsonl docs/validation/ns3.jsonl --markdown docs/validation/ns3.md
    # one setting changed on one side at a point with a gap (rows tagged with the experiment's name)
    python benches/validation/ns3_grid.py --ns3-python PY --flows 10 --buffers 1bdp --cc newreno \\
        --duration 40 --measure-from 10 --only ns-3 --experiment prr --ns3-set recovery=prr --jsonl docs/validation/ns3.jsonl
    # re-render the page from the stored rows, nothing simulated
    python benches/validation/ns3_grid.py --from-jsonl docs/validation/ns3.jsonl --markdown docs/validation/ns3.md
    # the stored ns-3 numbers tests/python/test_ns3_reference.py checks latlab against (from stored rows)
    python benches/validation/ns3_grid.py --from-jsonl docs/validation/ns3.jsonl --flows 1 --buffers 1bdp,2bdp \\
        --cc newreno --duration 40 --measure-from 10 --write-reference tests/python/data/ns3_reference.json

Matched settings (SETTINGS below is this table; the page prints it):
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import random
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

TWIN = Path(__file__).resolve().with_name("ns3_twin.py")

CORE_RATE_BPS = 10e6
CORE_DELAY_MS = 20.0
ACCESS_RATE_BPS = 100e6  # 10x the core: the core is the only bottleneck
ACCESS_DELAY_MS = (2.0, 20.0)  # uniform, drawn per access link (sender side and receiver side)
START_SPREAD_S = 5.0  # start times uniform in [0, START_SPREAD_S)
MSS_BYTES = 960
IP_TCP_HEADER_BYTES = 40
PPP_HEADER_BYTES = 2  # ns-3's PointToPointNetDevice adds it to every packet on the wire
WIRE_DATA_BYTES = MSS_BYTES + IP_TCP_HEADER_BYTES + PPP_HEADER_BYTES
IW_SEGMENTS = 10
MIN_RTO_MS = 200.0
SOCKET_BUFFER_BYTES = 8 * 1024 * 1024
SAMPLE_INTERVAL_MS = 100

SETTINGS = [
    (
        "topology",
        "custom dumbbell s_i - r1 = r2 - d_i",
        "same, PointToPoint links, one /30 per link",
        "",
    ),
    ("core link", f"{CORE_RATE_BPS / 1e6:g} Mbit/s, {CORE_DELAY_MS:g} ms", "same", ""),
    (
        "access links",
        f"{ACCESS_RATE_BPS / 1e6:g} Mbit/s, delay uniform [{ACCESS_DELAY_MS[0]:g}, "
        f"{ACCESS_DELAY_MS[1]:g}] ms per link",
        "same numbers (drawn once by the harness)",
        "Python random.Random(seed)",
    ),
    (
        "start times",
        f"uniform [0, {START_SPREAD_S:g}) s per flow",
        "same numbers",
        "BulkSend starts the handshake",
    ),
    ("traffic", "one bulk TCP flow per pair", "BulkSendApplication MaxBytes 0, SendSize = MSS", ""),
    ("segment", f"mss_bytes {MSS_BYTES}", f"SegmentSize {MSS_BYTES}", "no options"),
    (
        "headers on the wire",
        f"header_bytes {IP_TCP_HEADER_BYTES + PPP_HEADER_BYTES} (IP 20 + TCP 20 + PPP 2)",
        "IP 20 + TCP 20 + PPP 2",
        f"data {WIRE_DATA_BYTES} B, ACK 42 B on both",
    ),
    (
        "SACK, timestamps",
        "sack false, timestamps false",
        "Sack false, Timestamp false",
        "RTT by Karn's rule",
    ),
    ("initial window", f"initial_window_segments {IW_SEGMENTS}", f"InitialCwnd {IW_SEGMENTS}", ""),
    ("recovery", 'recovery "newreno" (RFC 6582)', "TcpClassicRecovery", "ns-3's default is PRR"),
    (
        "limited transmit",
        "not implemented",
        "LimitedTransmit false",
        "ns-3 default true; with SACK ns-3's window "
        "against the pipe sends on duplicate ACKs all the same (row *window outside recovery*)",
    ),
    (
        "CUBIC",
        "RFC 9438, beta 0.7, C 0.4, fast convergence, no HyStart",
        "TcpCubic Beta 0.7, C 0.4, FastConvergence true, HyStart false",
        "ns-3 default HyStart true",
    ),
    ("delayed ACK", "delayed_ack false", "DelAckCount 1", "an ACK per segment"),
    (
        "RTO",
        f"min_rto_ms {MIN_RTO_MS:g}, initial 1 s, granularity 1 ms",
        f"MinRto {MIN_RTO_MS:g} ms, RttEstimator InitialEstimation 1 s, ClockGranularity 1 ms",
        "",
    ),
    (
        "socket buffers / rwnd",
        "latlab's large fixed rwnd",
        f"SndBufSize = RcvBufSize = {SOCKET_BUFFER_BYTES} B",
        "never binds",
    ),
    (
        "core queue",
        "droptail limit_packets B on r1->r2",
        "DropTailQueue MaxSize Bp on r1's device, traffic-control layer uninstalled",
        "the packet being serialised is outside the queue on both",
    ),
    (
        "core drops",
        "links table / link_samples drops_pkts",
        "device queue drops + r1's TrafficControlLayer TcDrop",
        "with no queue disc ns-3 drops at the TC layer once the device stops its full queue; a FifoQueueDisc twin "
        "gives identical rows (experiment fifo-qdisc)",
    ),
    (
        "core RED (--qdisc red)",
        "red, limit_packets B, min_th round(0.4 B), max_th B, max_p 0.1, w_q 0.002, gentle, "
        "wait, mean_pkt_size_bytes 1000",
        "RedQueueDisc MaxSize (B − 1)p over a 1p device queue, MinTh min_th − 1, "
        "MaxTh max_th − 1, LInterm 10, QW 0.002, Gentle, Wait, MeanPktSize 1000, LinkBandwidth 10 Mb/s, UseHardDrop",
        "B packets waiting on both. Under load the device queue always holds its one packet, so the disc's length "
        "(what ns-3's RED averages) is latlab's queue length − 1: thresholds one lower drop at the same number of "
        "waiting packets, and MaxTh = the disc's limit as latlab's max_th = its limit",
    ),
    (
        "core CoDel (--qdisc codel)",
        "codel, target 5 ms, interval 100 ms, mtu_bytes 1500, limit_packets B",
        f"CoDelQueueDisc MaxSize (B − 1)p over a 1p device queue, Target 5 ms − {WIRE_DATA_BYTES * 8 / CORE_RATE_BPS * 1e3:.4f} ms, "
        "Interval 100ms, MinBytes 1500",
        "B packets waiting on both. latlab's sojourn runs to the start of transmission; ns-3's disc sojourn ends one "
        "data-packet serialisation earlier (the packet then waits behind the one being sent), so its Target is 5 ms less "
        "that time",
    ),
    (
        "core FQ-CoDel (--qdisc fq_codel)",
        "fq_codel, limit_packets B, flows 1024, quantum_bytes 1514, target 5 ms, interval 100 ms, mtu_bytes 1500",
        "FqCoDelQueueDisc MaxSize (B − 1)p over a 1p device queue, Flows 1024, SetQuantum(1514) (no attribute; "
        f"default the device MTU, 1500), Target 5 ms − {WIRE_DATA_BYTES * 8 / CORE_RATE_BPS * 1e3:.4f} ms, Interval "
        "100ms, per-flow CoDelQueueDisc MinBytes 1500, DropBatchSize 1 (default 64), UseEcn false (default true); "
        "defaults kept: Perturbation 0, EnableSetAssociativeHash false, UseL4s false, CeThreshold off",
        "*fq_codel* rows only. B packets waiting on both; Target less one serialisation as for CoDel",
    ),
    (
        "FQ-CoDel: flow hash",
        "SplitMix64 finaliser of the flow id keyed from the seed, scaled onto the 1024 queues",
        "the 5-tuple hash (Perturbation 0) modulo 1024, a queue created at its first packet",
        "not matched: collisions can differ (the ns-3 rows' `flow_queues_used` says how many queues the flows took)",
    ),
    (
        "FQ-CoDel: overflow",
        "the head packet of the fattest queue (bytes), one per overflow",
        "FqCoDelDrop: the fattest queue's head packets, up to DropBatchSize or half its backlog",
        "matched with DropBatchSize 1 (Linux and ns-3 drop batches of up to 64)",
    ),
    (
        "FQ-CoDel: packet size in the quantum",
        f"{WIRE_DATA_BYTES} B per data packet (header_bytes includes PPP)",
        "1000 B per data packet (the disc sees the IP packet, not the PPP header)",
        "not matchable; 2 B per packet against a 1514-B quantum",
    ),
    (
        "FQ-CoDel: CoDel's one-MTU rule",
        "no drop while the whole discipline holds ≤ mtu_bytes (as Linux's fq_codel; crates/qdisc/src/fq_codel.rs)",
        "no drop while the flow's own CoDelQueueDisc holds < MinBytes (CoDelQueueDisc::OkToDrop)",
        "not matchable in ns-3; ns-3 experiment *sack-ns3-fq-min-bytes-1* (MinBytes 1 in the flow queues) brackets it",
    ),
    (
        "FQ-CoDel: memory limit",
        "none (the limit is in packets)",
        "none (MaxSize in packets; ns-3 has no memory_limit)",
        "Linux's 32 MB memory_limit is in neither; it never binds at B ≤ 4 BDP",
    ),
    (
        "core PIE (--qdisc pie)",
        "pie, limit_packets B, target 15 ms, t_update 15 ms, alpha 0.125, beta 1.25, max_burst 150 ms, "
        "mean_pkt_size_bytes 1500",
        "PieQueueDisc MaxSize (B − 1)p over a 1p device queue, QueueDelayReference 15 ms − "
        f"{WIRE_DATA_BYTES * 8 / CORE_RATE_BPS * 1e3:.4f} ms, Tupdate 15 ms, A 0.125, B 1.25, MaxBurstAllowance "
        "150 ms, MeanPktSize 1500, UseDequeueRateEstimator false, UseCapDropAdjustment true, UseDerandomization "
        "false, UseEcn false; defaults kept: ActiveThreshold off (Time::Max: always active), Supdate 0, UseL4s false",
        "*pie* rows only. B packets waiting on both; the reference less one serialisation as CoDel's target (the "
        "delay sample is the disc's sojourn)",
    ),
    (
        "PIE: delay sample",
        "the last dequeued packet's sojourn, 0 once the queue is empty (RFC 8033 §4.3, timestamp variant)",
        "the same in the disc (UseDequeueRateEstimator false)",
        "matched",
    ),
    (
        "PIE: update rule",
        "p += α(d − ref) + β(d − d_old), RFC 8033 §4.2 scaling table, 2 % cap from p ≥ 10 %, ×0.98 when d = d_old "
        "= 0, clamped to [0, 1]",
        "the same (CalculateP, UseCapDropAdjustment)",
        "matched",
    ),
    (
        "PIE: work-conserving rule",
        "no drop with d_old < ref/2 and p < 20 %, or ≤ 2 × 1500 B queued (2 packets here)",
        "no drop with d_old < ref/2 and p < 20 %, or ≤ 2 packets queued (MeanPktSize counts only in byte mode)",
        "matched at these packet sizes",
    ),
    (
        "PIE: burst allowance",
        "150 ms from the start; p keeps updating during it (only the drop test is skipped); restored at an arrival "
        "once p = 0 and both delays < ref/2",
        "0 until the first drop test arms 150 ms; CalculateP holds p at 0 while any is left; armed again only after "
        "1.5 s (BURST_RESET_TIMEOUT) of updates with p = 0 and both delays < ref/2 (ns-2's pie.cc)",
        "not matchable by attribute",
    ),
    (
        "PIE: update timer",
        "every T_UPDATE from the first arrival",
        "every Tupdate from t = 0 (Supdate 0)",
        "phases differ by under 15 ms",
    ),
    (
        "PIE: random drop draw",
        "PCG stream from the run's seed, one draw per arrival that reaches the test",
        "UniformRandomVariable (RngSeedManager seed)",
        "different streams, as every random choice between the two",
    ),
    (
        "PIE: rate estimator, derandomisation, active/inactive",
        "not implemented (RFC 8033 §5.2, §5.4, §5.3 are optional)",
        "off: UseDequeueRateEstimator false, UseDerandomization false, ActiveThreshold Time::Max",
        "matched (all off)",
    ),
    (
        "ECN (--ecn)",
        "`[tcp] ecn = true`, the core queue's `ecn = true`: ECT(0) data, CE where the AQM would drop (PIE below "
        "10 %), ECE until CWR",
        "TcpSocketBase UseEcn On; FqCoDelQueueDisc / PieQueueDisc UseEcn true (FQ-CoDel CeThreshold unset, "
        "UseL4s false; PIE MarkEcnThreshold 0.1)",
        "*ECN* rows only",
    ),
    (
        "ECN: the sender's answer to ECE",
        "once per window: ssthresh by the controller's rule on FlightSize, cwnd = ssthresh at once; ECE on ACKs "
        "up to snd_max at the reduction ignored, also during a loss recovery",
        "EnterCwr at an ECE on an ACK that advances snd_una, whenever not already in CA_CWR (from recovery too): "
        "ssthresh on BytesInFlight, cwnd = ssthresh (TcpClassicRecovery), CA_CWR until an ACK passes "
        "HighTxMark at entry",
        "not matched",
    ),
    (
        "ECN: a loss in the window of an ECN reduction",
        "fast retransmit and recovery as usual, ssthresh not reduced again (RFC 3168 §6.1.2, Linux "
        "tcp_enter_recovery in CA_CWR); a timeout holds ssthresh too",
        "no fast retransmit in CA_CWR (TcpSocketBase::DupAck acts only in CA_OPEN, _DISORDER and _RECOVERY): the "
        "loss waits for the retransmission timer unless CA_CWR ends first",
        "not matched",
    ),
    (
        "other queues",
        "latlab's default (deep)",
        "100000p device queues, no queue disc",
        "never drop",
    ),
    (
        "timer at a fast retransmit",
        "restarted (ns-2, Linux; `rto_restart_on_fast_retransmit` true)",
        "left running (RFC 6298 (5.1))",
        "not matched in the grid; experiment sack-rfc6298-timer",
    ),
    (
        "ssthresh at a loss (SACK)",
        "controller's rule on FlightSize; held at a timeout in recovery "
        "(`ssthresh_from_pipe` false)",
        "controller's rule on BytesInFlight() (the RFC 6675 pipe), recomputed at a "
        "timeout in recovery",
        "not matched in the grid; experiment sack-rfc6298-timer-pipe-ssthresh",
    ),
    (
        "RTO backoff after a new ACK",
        "kept until a new RTT sample (RFC 6298 §5; `rto_backoff_reset_on_ack` false)",
        "dropped at every new ACK (TcpSocketBase::NewAck)",
        "not matched in the grid; experiment sack-rto-backoff-reset",
    ),
    (
        "window outside recovery (SACK)",
        "RFC 5681 FlightSize, snd_max − snd_una (`window_from_pipe` false)",
        "cwnd − BytesInFlight(), the RFC 6675 pipe, in every state (TcpSocketBase::AvailableWindow)",
        "not matched; experiments sack-ns3-cubic-all-window-pipe, sack-ns3-newreno-window-pipe",
    ),
    (
        "data retries",
        "unlimited",
        "TcpSocket::DataRetries 6 (default)",
        "not matched; experiment sack-ns3-data-retries",
    ),
    (
        "CUBIC Reno-friendly α",
        "α = 1 once W_est reaches cwnd_prior (RFC 9438 §4.3; cubic `alpha_switch` 1)",
        "α_cubic = 3(1 − β)/(1 + β) throughout (TcpCubic::Update, as Linux)",
        "not matched; experiment sack-ns3-cubic-alpha",
    ),
    (
        "CUBIC window arithmetic",
        "fractional segments (RFC 9438; cubic `whole_segments` 0)",
        "whole segments: ssthresh = max(⌊β·cwnd⌋, 2), +1 segment per cnt = ⌊cwnd/(target − cwnd)⌋ ACKs, integer "
        "target (TcpCubic::GetSsThresh, Update)",
        "not matched; experiment sack-ns3-cubic-whole-segments",
    ),
    (
        "CUBIC target RTT",
        "smoothed RTT in W_cubic(t + RTT) (RFC 9438 §4.1; cubic `target_min_rtt` 0)",
        "a minimum (m_delayMin: the smallest SRTT since the last timeout)",
        "not matched; experiment sack-ns3-cubic-min-rtt",
    ),
    (
        "CUBIC after a timeout",
        "K = 0, W_max = cwnd_epoch (RFC 9438 §4.8; cubic `timeout_keeps_w_max` 0)",
        "K from the W_max set at the timeout (m_lastMaxCwnd kept)",
        "not matched; experiment sack-ns3-cubic-timeout-w-max",
    ),
    (
        "NewReno congestion avoidance",
        "byte counting, one SMSS per cwnd acknowledged (RFC 3465; newreno `per_ack_increase` 0)",
        "max(1, ⌊SMSS²/cwnd⌋) bytes per ACK of new data (RFC 5681 eq. (3), "
        "TcpNewReno::CongestionAvoidance)",
        "not matched; experiments sack-newreno-per-ack, sack-ns3-newreno-per-ack",
    ),
    (
        "BBR: version",
        "v1 as Linux's tcp_bbr.c (torvalds/linux 02dc96ef): EDT inflight in the phase tests "
        "(`bbr_packets_in_net_at_edt`), long-term bw for policers (`lt_bw`)",
        "TcpBbr (NITK, 2018; BBR v1 of Linux 4.x with the later ACK-aggregation allowance): phase tests on the "
        "prior inflight, no `lt_bw`",
        "*bbr* rows only; `lt_bw` engages at 10 flows, 1 BDP (latlab `cc_params` `lt_bw = 0` turns it off: "
        "experiment sack-no-lt-bw)",
    ),
    (
        "BBR: pacing",
        "the host pacer at BBR's pacing rate, payload bytes over the rate, from the 10th data segment on "
        "(Linux internal pacing, `tcp_update_skb_after_send`), 1 % margin",
        "TcpSocketBase's pacing timer at TcpSocketState::m_pacingRate (TcpBbr turns pacing on), 1 % margin; "
        "PaceInitialWindow false",
        "the initial window unpaced on both",
    ),
    (
        "BBR: TSO / send quantum",
        "cwnd budgets 3 TSO bursts of `bbr_tso_segs_goal` (2 segments at these rates), rounded up to even",
        "3 × m_sendQuantum = 3 segments",
        "latlab's target cwnd about 3 segments more",
    ),
    (
        "BBR: ACK aggregation",
        "`bbr_extra_acked`: epoch reset at 2^20 packets, expected = bw × epoch time (µs)",
        "AckEpochAckedResetThresh 4096 B; the epoch time in whole seconds (uint32_t), so expected = 0 within "
        "a second and extra_acked ≈ the bytes ACKed since the last reset, under 4096 B",
        "allowance at most 4 segments in ns-3",
    ),
    (
        "BBR: ProbeBW start phase",
        "any phase but 3/4: CYCLE_LEN − 1 − rand(7), then advance (`bbr_reset_probe_bw_mode`), from the "
        "flow's seeded stream",
        "7 − ⌊U(0, 6)⌋, then advance: phases 3–7 or 0, from TcpBbr's Stream 4",
        "random streams differ anyway",
    ),
    (
        "BBR: min_rtt and round trips",
        "on every ACK, the RTT of the newest segment it newly SACKs, else of the newest it newly cumulatively "
        "acknowledges, never from a segment that was resent (Linux `ca_rtt_us`, crates/proto/src/tcp/sender/"
        "rate.rs); the echoed timestamp's only when neither gives one; 10 s window; rounds by delivered packets",
        "tcb->m_lastRtt (TcpSocketBase::EstimateRtt, tcp-socket-base.cc 3770–3794 of 3.44): on every cumulative "
        "ACK, the RTT of the highest segment it covers, though SACKed long before (only that segment's own "
        "retransmission is checked), so the ACK that repairs a hole gives about two RTTs; taken as min_rtt "
        "whenever the 10 s filter has expired (TcpBbr::UpdateRTprop, tcp-bbr.cc 358–367); rounds by delivered "
        "bytes",
        "latlab's is Linux's `rs->rtt_us` (tcp_ack_update_rtt); see the 10-flow notes",
    ),
    (
        "BBR: recovery",
        "packet conservation for a round, prior cwnd restored on leaving recovery "
        "(`bbr_set_cwnd_to_recover_or_restore`); SACK off: RFC 6582 NewReno's retransmissions",
        "cwnd = inflight + max(acked, 1 MSS) on entering, conservation for a round, prior cwnd restored at "
        "CA_EVENT_COMPLETE_CWR; TcpClassicRecovery. Then TcpSocketBase sets cwnd = ssthresh on leaving fast "
        "recovery (tcp-socket-base.cc 2247 of 3.44, whatever the controller), and TcpBbr leaves ssthresh at its "
        "initial 2^32 − 1 B until STARTUP ends (tcp-bbr.cc 348)",
        "a fast recovery in STARTUP leaves ns-3's cwnd at 2^32 − 1 B, pacing the only limit, until the pipe is "
        "full (seen before the window, `cwnd_uint32_max_samples` in `bbr_flows`)",
    ),
    ("IPv4", "", "StrongEndSystemModel true", "same results, faster"),
    (
        "measurement",
        "goodput, core loss, queue samples over [measure_from, duration)",
        "same window",
        "retransmissions and timeouts over the whole run on both",
    ),
]

BDP_FACTORS = (0.1, 0.5, 1.0, 2.0)
# latlab's controller names; ns3_twin.py maps each to its ns-3 TypeId (bbr: TcpBbr, compared in its own section)
CCS = ("newreno", "cubic", "bbr")


@dataclasses.dataclass(frozen=True)
class Point:
    flows: int
    buffer: str  # "0.5bdp" or "10KB"
    cc: str  # one of CCS
    qdisc: str = "droptail"
    seed: int = 1
    duration_s: float = 45.0
    measure_from_s: float = 15.0
    # ECN at the ends and in the core queue (RFC 3168): latlab `[tcp] ecn` and the queue's `ecn`; ns-3
    # TcpSocketBase::UseEcn On and the queue disc's UseEcn (AQM queues only, see aqm_params)
    ecn: bool = False

    def key(self) -> tuple:
        return (
            self.flows,
            self.buffer,
            self.cc,
            self.qdisc,
            self.seed,
            self.duration_s,
            self.measure_from_s,
            self.ecn,
        )

    @classmethod
    def of_row(cls, r: dict) -> Point:
        """The point a stored row ran (rows from before a field existed take its default)."""
        return cls(
            **{
                f.name: r[f.name] if f.default is dataclasses.MISSING else r.get(f.name, f.default)
                for f in dataclasses.fields(cls)
            }
        )

    def draws(self) -> list[tuple[float, float, float]]:
        """(sender access delay ms, receiver access delay ms, start s) per flow: the one source for both sides."""
        rng = random.Random(self.seed)
        return [
            (
                round(rng.uniform(*ACCESS_DELAY_MS), 6),
                round(rng.uniform(*ACCESS_DELAY_MS), 6),
                round(rng.uniform(0.0, START_SPREAD_S), 6),
            )
            for _ in range(self.flows)
        ]

    def bdp_pkts(self) -> float:
        """Core rate x the flows' mean two-way propagation delay, in wire-sized data packets."""
        d = self.draws()
        rtt_s = sum(2 * (CORE_DELAY_MS + a + b) for a, b, _ in d) / len(d) / 1e3
        return CORE_RATE_BPS * rtt_s / 8 / WIRE_DATA_BYTES

    def buffer_pkts(self) -> int:
        b = self.buffer.lower()
        if b.endswith("bdp"):
            return max(1, round(float(b[:-3]) * self.bdp_pkts()))
        if b.endswith("kb"):
            return max(1, round(float(b[:-2]) * 1000 / (MSS_BYTES + IP_TCP_HEADER_BYTES)))
        raise ValueError(f"buffer {self.buffer!r}: expected e.g. '0.5bdp' or '10KB'")

    def twin_json(self, ns3_overrides: dict | None = None) -> dict:
        return {
            "flows": self.flows,
            "buffer_pkts": self.buffer_pkts(),
            "cc": self.cc,
            "seed": self.seed,
            "duration_s": self.duration_s,
            "measure_from_s": self.measure_from_s,
            "sample_interval_ms": SAMPLE_INTERVAL_MS,
            "mss_bytes": MSS_BYTES,
            "wire_data_bytes": WIRE_DATA_BYTES,
            "initial_window_segments": IW_SEGMENTS,
            "socket_buffer_bytes": SOCKET_BUFFER_BYTES,
            "min_rto_ms": MIN_RTO_MS,
            "core_rate_bps": CORE_RATE_BPS,
            "core_delay_ms": CORE_DELAY_MS,
            "access_rate_bps": ACCESS_RATE_BPS,
            "draws": self.draws(),
            "qdisc": self.qdisc,
            "red": red_params(self.buffer_pkts()),
            "aqm": aqm_params(self.qdisc, self.ecn) if self.qdisc in AQM_QDISCS else {},
            "ecn": self.ecn,
            "ns3_overrides": ns3_overrides or {},
        }


# ----- latlab ----------------------------------------------------------------------------------------------


def red_params(limit_packets: int) -> dict:
    """RED at the core, as the small-buffer pacing study's experiment G sets it: max_th = B, min_th = 40% of B,
    max_p 0.1, w_q 0.002; gentle and ns-2's wait on; 1000-B mean packet for the idle correction."""
    max_th = max(2, limit_packets)
    return {
        "min_th": max(1, min(max_th - 1, round(0.4 * limit_packets))),
        "max_th": max_th,
        "max_p": 0.1,
        "w_q": 0.002,
        "gentle": True,
        "wait": True,
        "mean_pkt_size_bytes": 1000,
    }


# Flow-queueing and PIE AQMs, compared in their own section (aqm_section). Their points also record the flows'
# mean srtt and the core queue's mean sojourn.
AQM_QDISCS = ("fq_codel", "pie")
QDISCS = ("droptail", "red", "codel") + AQM_QDISCS


def aqm_params(qdisc: str, ecn: bool = False) -> dict:
    """latlab's AQM parameters at the core (the RFC defaults, written out): the one source for both sides, since
    ns3_twin.py sets its queue disc from this dict (`aqm` in the point). With `ecn` the queue marks ECT packets
    where it would drop them (latlab's queue `ecn = true`, ns-3's UseEcn), beside `tcp.ecn` on both sides."""
    marking = {"ecn": True} if ecn else {}
    if qdisc == "fq_codel":  # RFC 8290 §5.2 / Linux defaults
        return {
            "flows": 1024,
            "quantum_bytes": 1514,
            "target_ms": 5.0,
            "interval_ms": 100.0,
            "mtu_bytes": 1500,
            **marking,
        }
    if qdisc == "pie":  # RFC 8033 §4 / §5
        return {
            "target_ms": 15.0,
            "t_update_ms": 15.0,
            "alpha": 0.125,
            "beta": 1.25,
            "max_burst_ms": 150.0,
            "mean_pkt_size_bytes": 1500,
            **marking,
        }
    raise ValueError(f"qdisc {qdisc!r}: expected one of {', '.join(AQM_QDISCS)}")


def core_queue(qdisc: str, limit_packets: int, ecn: bool = False) -> dict:
    """latlab's core queue; ns3_twin.py builds the same one (CoDel: RFC 8289 defaults, limit B packets)."""
    if qdisc in AQM_QDISCS:
        return {"kind": qdisc, "limit_packets": limit_packets, **aqm_params(qdisc, ecn)}
    if qdisc == "droptail":
        return {"kind": "droptail", "limit_packets": limit_packets}
    if qdisc == "red":
        return {"kind": "red", "limit_packets": limit_packets, **red_params(limit_packets)}
    if qdisc == "codel":
        return {
            "kind": "codel",
            "target_ms": 5.0,
            "interval_ms": 100.0,
            "mtu_bytes": 1500,
            "limit_packets": limit_packets,
        }
    raise ValueError(f"qdisc {qdisc!r}: expected one of {', '.join(QDISCS)}")


def latlab_scenario_toml(pt: Point, latlab_overrides: dict | None = None) -> str:
    """The point as a latlab scenario file (TOML text)."""
    from latlab import Scenario

    ov = dict(latlab_overrides or {})
    tcp = {
        "preset": "ns2",
        "mss_bytes": MSS_BYTES,
        "header_bytes": IP_TCP_HEADER_BYTES + PPP_HEADER_BYTES,
        "initial_window_segments": IW_SEGMENTS,
        "recovery": "newreno",
        "sack": False,
        "timestamps": False,
        "min_rto_ms": MIN_RTO_MS,
        "initial_rto_ms": 1000.0,
        "delayed_ack": False,
        **({"ecn": True} if pt.ecn else {}),
    }
    tcp.update(ov.pop("tcp", {}))
    core_pkts = pt.buffer_pkts() + int(ov.pop("core_extra_pkts", 0))
    # AQM parameters changed for an experiment, e.g. aqm.max_burst_ms=0 (ns3_twin.py takes the same key)
    aqm_ov = ov.pop("aqm", {})
    if aqm_ov and pt.qdisc not in AQM_QDISCS:
        raise ValueError(f"latlab overrides: 'aqm' needs --qdisc {' or '.join(AQM_QDISCS)}")
    # controller knobs, cc_params of the flows of that controller: e.g. cubic.alpha_switch=0, newreno.per_ack_increase=1
    cc_params = {cc: ov.pop(cc, {}) for cc in CCS}
    if ov:
        raise ValueError(
            f"latlab overrides: unknown keys {sorted(ov)}; expected 'tcp', 'newreno', 'cubic', 'bbr', 'aqm' or "
            "'core_extra_pkts'"
        )
    names = ["r1", "r2"] + [f"s{i}" for i in range(pt.flows)] + [f"d{i}" for i in range(pt.flows)]
    links = [
        {
            "from": "r1",
            "to": "r2",
            "rate_bps": CORE_RATE_BPS,
            "delay_ms": CORE_DELAY_MS,
            "queue": {**core_queue(pt.qdisc, core_pkts, pt.ecn), **aqm_ov},
            "duplex": False,
        },
        {
            "from": "r2",
            "to": "r1",
            "rate_bps": CORE_RATE_BPS,
            "delay_ms": CORE_DELAY_MS,
            "duplex": False,
        },
    ]
    d = pt.draws()
    for i, (a, b, _) in enumerate(d):
        links.append({"from": f"s{i}", "to": "r1", "rate_bps": ACCESS_RATE_BPS, "delay_ms": a})
        links.append({"from": "r2", "to": f"d{i}", "rate_bps": ACCESS_RATE_BPS, "delay_ms": b})
    flows = [
        {"name": f"f{i}", "src": f"s{i}", "dst": f"d{i}", "cc": pt.cc, "start_s": s}
        for i, (_, _, s) in enumerate(d)
    ]
    if cc_params.get(pt.cc):
        for f in flows:
            f["cc_params"] = {k: float(v) for k, v in cc_params[pt.cc].items()}
    sc = {
        "name": f"ns3-grid-{pt.flows}f-{pt.buffer}-{pt.cc}-s{pt.seed}",
        "seed": pt.seed,
        "duration_s": pt.duration_s,
        "measure_from_s": pt.measure_from_s,
        "sample_interval_ms": SAMPLE_INTERVAL_MS,
        "tcp": tcp,
        "topology": {"kind": "custom", "nodes": [{"name": n} for n in names], "links": links},
        "flows": flows,
        # BBR points keep every flow's samples (and BBR's model, cc_samples) for the trace comparison, AQM points
        # every flow's (for the mean srtt); sampling does not change the run
        "outputs": {
            "max_sampled_flows": pt.flows if pt.qdisc in AQM_QDISCS or pt.cc == "bbr" else 0
        },
    }
    return Scenario.from_dict(sc).to_toml()


def latlab_points(
    pts: list[Point], latlab_overrides: dict | None, jobs: int, sweep_dir: str | None
) -> list[dict]:
    """latlab's side of `pts` on the sweep runner (`jobs` worker processes; finished runs in `sweep_dir` are not
    run again); the raw counters per point, in order. wall_s is the core's run alone, as the sweep records it."""
    import tempfile

    from latlab import Scenario
    from latlab.sweep import load_run, run_sweep

    specs = [
        (
            {
                "flows": pt.flows,
                "buffer": pt.buffer,
                "cc": pt.cc,
                "qdisc": pt.qdisc,
                "seed": pt.seed,
                "ecn": pt.ecn,
            },
            Scenario.from_toml_str(latlab_scenario_toml(pt, latlab_overrides)),
        )
        for pt in pts
    ]
    with tempfile.TemporaryDirectory(prefix="ns3-grid-latlab-") as scratch:
        outdir = sweep_dir or scratch
        catalog = run_sweep(specs, outdir, jobs=jobs, progress=False, name="ns3-grid")
        failed = catalog[catalog["status"] != "ok"]
        if len(failed):
            raise RuntimeError(
                f"latlab runs failed: {failed[['run_id', 'error']].to_dict('records')}"
            )
        return [
            latlab_raw(pt, load_run(outdir, rid), float(wall))
            for pt, rid, wall in zip(pts, catalog["run_id"], catalog["sim_wall_s"])
        ]


def latlab_point(pt: Point, latlab_overrides: dict | None = None) -> dict:
    """One point in this process (the reference test and single checks), timed around `latlab.run`."""
    import latlab
    from latlab import Scenario

    sc = Scenario.from_toml_str(latlab_scenario_toml(pt, latlab_overrides))
    t0 = time.perf_counter()
    res = latlab.run(sc)
    return latlab_raw(pt, res, time.perf_counter() - t0)


def latlab_raw(pt: Point, res, wall_s: float) -> dict:  # noqa: ANN001
    """One latlab run's counters over the point's measurement window."""
    core_id = int(res.links.loc[res.links["name"] == "r1->r2", "link_id"].iloc[0])
    s = res.link_samples[res.link_samples["link_id"] == core_id].sort_values("time_ns")
    t_from, t_end = int(pt.measure_from_s * 1e9), int(pt.duration_s * 1e9)
    at_from = s[s["time_ns"] == t_from].iloc[0]
    core = res.links[res.links["link_id"] == core_id].iloc[0]
    window = s[(s["time_ns"] >= t_from) & (s["time_ns"] < t_end)]
    flows = res.flows.sort_values("flow_id")
    raw = {
        "simulator": "latlab",
        "wall_s": round(wall_s, 3),
        "per_flow_goodput_bps": [round(float(x), 1) for x in flows["goodput_bps"]],
        "core_arrivals_pkts": int(core["arrivals_pkts"] - at_from["arrivals_pkts"]),
        "core_drops_pkts": int(core["drops_pkts"] - at_from["drops_pkts"]),
        "queue_samples_pkts": [int(x) for x in window["queue_pkts"]],
        "segments_sent": int(flows["segments_sent"].sum()),
        "retransmitted_segments": int(flows["retransmitted_segments"].sum()),
        "timeouts": int(flows["timeouts"].sum()),
    }
    if pt.ecn:
        # marks over the whole run (the link samples have no marks column), with the run's drops beside them
        raw["core_marks_run_pkts"] = int(core["marks_pkts"])
        raw["core_drops_run_pkts"] = int(core["drops_pkts"])
        raw["core_arrivals_run_pkts"] = int(core["arrivals_pkts"])
    if pt.cc == "bbr":
        raw["flow0_samples"] = latlab_flow0_samples(pt, res)
        raw["bbr_samples"] = latlab_bbr_samples(pt, res)
        # (s, queue packets, cumulative core drops) every sample over the whole run, as ns3_twin.py's drop_trace
        raw["drop_trace"] = [
            (round(t / 1e9, 3), int(q), int(d))
            for t, q, d in zip(s["time_ns"], s["queue_pkts"], s["drops_pkts"])
            if t < t_end
        ]
    if pt.qdisc in AQM_QDISCS:
        raw.update(latlab_delays(pt, res, s))
        raw["early_drops_run_pkts"] = int(core["drops_early_pkts"])
        # (s, queue packets, cumulative drops) every sample over the whole run, as ns3_twin.py's run_trace
        raw["run_trace"] = [
            (round(t / 1e9, 3), int(q), int(d))
            for t, q, d in zip(s["time_ns"], s["queue_pkts"], s["drops_pkts"])
            if t < t_end
        ]
    return raw


def latlab_delays(pt: Point, res, s) -> dict:  # noqa: ANN001
    """The flows' mean srtt (every flow's samples in the window) and the core queue's mean sojourn (enqueue to the
    start of transmission) over the packets that left it in the window: each sample's mean covers the interval
    before it, weighted by the bytes that left in it."""
    t_from, t_end = int(pt.measure_from_s * 1e9), int(pt.duration_s * 1e9)
    fs = res.flow_samples
    fs = fs[(fs["time_ns"] >= t_from) & (fs["time_ns"] < t_end) & (fs["srtt_ns"] > 0)]
    dep = s["departures_bytes"].diff()
    inside = (s["time_ns"] > t_from) & (s["time_ns"] <= t_end)
    w, soj = dep[inside], s["sojourn_mean_ns"][inside]
    return {
        "srtt_mean_ms": round(float(fs["srtt_ns"].mean()) / 1e6, 3),
        "sojourn_mean_ms": round(float((w * soj).sum() / w.sum()) / 1e6, 3),
    }


def latlab_flow0_samples(pt: Point, res) -> list:  # noqa: ANN001
    """(s, cwnd segments, sending rate Mb/s, srtt ms) of flow 0 in the window, as ns3_twin.py samples ns-3's
    (there: cwnd, pacing rate, last RTT sample)."""
    fs = res.flow_samples
    f0 = int(res.flows.sort_values("flow_id")["flow_id"].iloc[0])
    s = fs[(fs["flow_id"] == f0) & (fs["time_ns"] >= int(pt.measure_from_s * 1e9))]
    return [
        (
            round(t / 1e9, 3),
            int(c) // MSS_BYTES if c == c else None,
            round(float(r) / 1e6, 4) if r == r else None,
            round(float(rtt) / 1e6, 3),
        )
        for t, c, r, rtt in zip(s["time_ns"], s["cwnd_bytes"], s["rate_bps"], s["srtt_ns"])
    ]


def latlab_bbr_samples(pt: Point, res) -> list:  # noqa: ANN001
    """Every flow's BBR state every sample over the whole run, as ns3_twin.py's `bbr_samples`: (s, mode, pacing gain,
    cwnd gain, cwnd segments, in flight segments, pacing Mb/s, srtt ms, min_rtt ms); latlab also knows its cwnd target
    and bw estimate, appended (segments, Mb/s)."""
    import pandas as pd

    fs = res.flow_samples.set_index(["flow_id", "time_ns"])
    out = []
    for fid in sorted(res.flows["flow_id"]):
        cs = res.cc_samples[res.cc_samples["flow_id"] == fid]
        rows = []
        for r in cs.itertuples():
            f = fs.loc[(fid, r.time_ns)]
            rows.append(
                (
                    round(r.time_ns / 1e9, 3),
                    r.mode,
                    round(r.pacing_gain, 4),
                    round(r.cwnd_gain, 4),
                    round(float(f["cwnd_bytes"]) / MSS_BYTES, 2),
                    round(float(f["flight_bytes"]) / MSS_BYTES, 2),
                    round(r.pacing_rate_bps / 1e6, 4),
                    round(float(f["srtt_ns"]) / 1e6, 3),
                    0.0 if pd.isna(r.min_rtt_ns) else round(float(r.min_rtt_ns) / 1e6, 3),
                    round(r.target_cwnd_bytes / MSS_BYTES, 2),
                    round(r.bw_bps / 1e6, 4),
                )
            )
        out.append(rows)
    return out


def latlab_commit() -> str:
    """The latlab commit that ran the rows (with -dirty if the tree had changes), for the page."""
    here = Path(__file__).resolve().parent
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=here,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return sha + ("-dirty" if dirty else "")


# ----- ns-3 ------------------------------------------------------------------------------------------------


def ns3_point(pt: Point, python: str, ns3_overrides: dict | None = None) -> dict:
    r = subprocess.run(
        ["nice", "-n", "19", python, str(TWIN)],
        input=json.dumps(pt.twin_json(ns3_overrides)),
        capture_output=True,
        text=True,
    )
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    if r.returncode != 0 or not lines:
        raise RuntimeError(
            f"ns-3 point {pt} failed (exit {r.returncode}): {r.stderr.strip()[-600:]}"
        )
    return json.loads(lines[-1])


def ns3_available(python: str) -> bool:
    return subprocess.run([python, "-c", "import ns3"], capture_output=True).returncode == 0


# ----- metrics ---------------------------------------------------------------------------------------------


def jain(xs: list[float]) -> float:
    s, s2 = sum(xs), sum(x * x for x in xs)
    return s * s / (len(xs) * s2) if s2 > 0 else float("nan")


def p95(xs: list[int]) -> float:
    if not xs:
        return float("nan")
    ys = sorted(xs)
    return float(ys[min(len(ys) - 1, math.ceil(0.95 * len(ys)) - 1)])


def reduce(raw: dict) -> dict:
    """A simulator's raw counters to the compared metrics (the same function for both sides)."""
    g = raw["per_flow_goodput_bps"]
    q = raw["queue_samples_pkts"]
    arr = raw["core_arrivals_pkts"]
    return {
        "goodput_mbps": round(sum(g) / 1e6, 4),
        "jain": round(jain(g), 4),
        "loss_rate": round(raw["core_drops_pkts"] / arr, 6) if arr else 0.0,
        "core_drops_pkts": raw["core_drops_pkts"],
        "retransmitted_segments": raw["retransmitted_segments"],
        "timeouts": raw["timeouts"],
        "queue_mean_pkts": round(sum(q) / len(q), 2) if q else float("nan"),
        "queue_p95_pkts": p95(q),
        "wall_s": raw["wall_s"],
        # AQM points only: the flows' mean srtt and the core queue's mean sojourn in the window (ms)
        **{k: raw[k] for k in ("srtt_mean_ms", "sojourn_mean_ms") if k in raw},
        # ECN points only: CE marks at the core over the whole run and their share of the arrivals
        **(
            {
                "core_marks_run_pkts": raw["core_marks_run_pkts"],
                "mark_rate_run": round(
                    raw["core_marks_run_pkts"] / raw["core_arrivals_run_pkts"], 6
                )
                if raw["core_arrivals_run_pkts"]
                else 0.0,
            }
            if "core_marks_run_pkts" in raw
            else {}
        ),
    }


LATLAB_COMMIT = latlab_commit()


def row(pt: Point, raw: dict, experiment: str, overrides: dict) -> dict:
    r = {
        "experiment": experiment,
        "overrides": overrides,
        **dataclasses.asdict(pt),
        "buffer_pkts": pt.buffer_pkts(),
        "bdp_pkts": round(pt.bdp_pkts(), 1),
        **reduce(raw),
        "simulator": raw["simulator"],
    }
    if "version" in raw:
        r["version"] = raw["version"]
    if raw["simulator"] == "latlab":
        r["commit"] = LATLAB_COMMIT
    r["per_flow_goodput_bps"] = raw["per_flow_goodput_bps"]
    if "flow0_samples" in raw and pt.cc == "bbr":
        r["flow0_samples"] = raw["flow0_samples"]
    if "bbr_samples" in raw and pt.cc == "bbr":
        # the per-flow BBR model over the window, and the queue it makes (the section's notes are written from it)
        r["bbr_flows"] = bbr_flow_summary(pt, raw["bbr_samples"])
        r["queue_samples_pkts"] = raw["queue_samples_pkts"]
    if pt.qdisc in AQM_QDISCS:
        # what the AQM section's notes are written from: the queue over time and the kinds of drops
        r["queue_samples_pkts"] = raw["queue_samples_pkts"]
        for k in (
            "early_drops_run_pkts",
            "drop_reasons_run",
            "mark_reasons_run",
            "flow_queues_used",
            "run_trace",
            "core_drops_run_pkts",
        ):
            if k in raw:
                r[k] = raw[k]
    return r


def bbr_flow_summary(pt: Point, samples: list) -> list[dict]:
    """Each flow's BBR model over the window from its samples (ns3_twin.py's and latlab_bbr_samples' layout): the
    flow's propagation RTT and the largest RTT the path can give it (propagation + a full core buffer), the means of
    min_rtt, srtt, cwnd, in flight, bw and cwnd target, the share of samples in PROBE_RTT, with min_rtt above the
    path's largest RTT, and held back (cwnd 10+ segments above what is in flight, 2 or fewer in flight). latlab
    samples its bw and target; for ns-3 (whose max-bw filter and target are private) bw is the pacing rate over
    gain × 0.99 and the target cwnd_gain × bw × min_rtt + 3 segments, without the ACK-aggregation allowance (under
    4096 B), both from PROBE_BW samples."""
    full_queue_ms = pt.buffer_pkts() * WIRE_DATA_BYTES * 8 / CORE_RATE_BPS * 1e3
    out = []
    for (a_ms, b_ms, _), xs in zip(pt.draws(), samples):
        w = [x for x in xs if pt.measure_from_s <= x[0] < pt.duration_s]
        base = 2 * (CORE_DELAY_MS + a_ms + b_ms)
        if not w:
            out.append({"base_rtt_ms": round(base, 1)})
            continue
        bw = [x[10] for x in w] if len(w[0]) > 10 else []
        tgt = [x[9] for x in w] if len(w[0]) > 10 else []
        if not bw:
            pbw = [x for x in w if x[1] == "probe_bw" and x[2] > 0 and x[8] > 0]
            bw = [x[6] / (x[2] * 0.99) for x in pbw]
            tgt = [
                x[3] * (x[6] / (x[2] * 0.99)) * 1e6 / 8 * x[8] / 1e3 / MSS_BYTES + 3 for x in pbw
            ]
        mrtt = [x[8] for x in w if x[8] > 0]

        def mean(v: list) -> float | None:
            return round(sum(v) / len(v), 2) if v else None

        out.append(
            {
                "base_rtt_ms": round(base, 1),
                "path_max_rtt_ms": round(base + full_queue_ms, 1),
                "min_rtt_ms": mean(mrtt),
                "min_rtt_over_path_max": round(
                    sum(1 for v in mrtt if v > base + full_queue_ms) / len(w), 3
                ),
                "srtt_ms": mean([x[7] for x in w]),
                "cwnd_segs": mean([x[4] for x in w]),
                "in_flight_segs": mean([x[5] for x in w]),
                "bw_mbps": mean(bw),
                "target_segs": mean(tgt),
                "probe_rtt_share": round(sum(1 for x in w if x[1] == "probe_rtt") / len(w), 3),
                "held_back_share": round(
                    sum(1 for x in w if x[5] <= 2 and x[4] - x[5] >= 10) / len(w), 3
                ),
                # samples over the whole run with cwnd at 2^32 - 1 bytes (ns-3: TcpSocketBase sets cwnd = ssthresh
                # on leaving fast recovery, and TcpBbr leaves ssthresh at its initial UINT32_MAX in STARTUP)
                "cwnd_uint32_max_samples": sum(1 for x in xs if x[4] * MSS_BYTES >= 2**32 - 1),
            }
        )
    return out


# ----- the page --------------------------------------------------------------------------------------------


def rel(a: float, b: float) -> float:
    """(latlab - ns-3) / ns-3, in %; NaN when ns-3's is 0 and latlab's is not."""
    if b == 0:
        return 0.0 if a == 0 else float("nan")
    return 100.0 * (a - b) / b


def gaps(lat: dict, ns: dict) -> dict:
    return {
        "goodput": rel(lat["goodput_mbps"], ns["goodput_mbps"]),
        "loss": rel(lat["loss_rate"], ns["loss_rate"]),
    }


def over(g: dict, limit: float = 5.0) -> list[str]:
    return [k for k, v in g.items() if not (abs(v) <= limit)]


def fmt_pct(v: float) -> str:
    return "n/a" if math.isnan(v) else f"{v:+.1f}%"


SACK_INTRO = (
    "The same points with one setting changed on both sides: SACK on (latlab `sack = true`, `recovery = "
    '"sack"`, RFC 6675; ns-3 `TcpSocketBase::Sack` true with TcpClassicRecovery). With SACK off the two '
    "simulators run different recovery algorithms (ns3-nosack.md); with SACK on they run the same one. "
    "Where a point ran with several seeds, the row gives the means over seeds and, in brackets, each "
    "simulator's lowest and highest value; *overlap* says whether the two ranges of loss overlap.\n"
)
TIMER_INTRO = (
    "The SACK rows again with one more setting changed on latlab's side only: "
    "`rto_restart_on_fast_retransmit = false`. latlab by default restarts the retransmission timer when a "
    "fast retransmission leaves, as ns-2 and Linux do; ns-3 3.44 does not (TcpSocketBase::SendDataPacket "
    "schedules the timer only when it is not running, and EnterRecovery/DoRetransmit leave it alone), "
    "which is what RFC 6298 (5.1) says. Its timer, last restarted by the ACK before the hole, then has to "
    "outlast the retransmission's trip through a standing queue, and when RTO ≈ SRTT it fires first: a "
    "timeout, ssthresh from ns-3's RFC 6675 pipe (mostly 2 segments here) and a go-back-N. The ns-3 "
    "columns are the SACK rows above, unchanged.\n"
)

PIPE_INTRO = (
    "The timer rows again with one more setting changed on latlab's side only: `ssthresh_from_pipe = "
    "true`. ns-3 3.44 hands its congestion control BytesInFlight(), which with SACK is the RFC 6675 pipe "
    "(TcpTxBuffer::BytesInFlight: sent − SACKed − lost + retransmitted), when it sets ssthresh at a fast "
    "retransmit (TcpSocketBase::EnterRecovery) and at a timeout (TcpSocketBase::ReTxTimeout), and "
    "ReTxTimeout recomputes ssthresh also when the timer fires during fast recovery. RFC 5681 §3.1 eq. (4) "
    "and RFC 6675 §5 (4.2) say FlightSize, which is what latlab uses by default; latlab also keeps the "
    "recovery's ssthresh when the timer fires during it (as Linux's tcp_enter_loss). TcpNewReno halves the "
    "pipe; TcpCubic takes 0.7 × cwnd whatever the flight, so for CUBIC only the recomputation during "
    "recovery changes (latlab's CUBIC also uses cwnd). The ns-3 columns are the SACK rows above, "
    "unchanged.\n"
)

# Experiments that change latlab only on top of another experiment: experiment -> the one whose ns-3 rows they are
# set against (not against the base rows).
LAYERED = {
    "sack-rfc6298-timer": "sack",
    "sack-rfc6298-timer-pipe-ssthresh": "sack",
    "sack-rto-backoff-reset": "sack",
    "sack-ns3-timer-rules": "sack",
    "sack-ns3-cubic-alpha": "sack",
    "sack-ns3-cubic-whole-segments": "sack",
    "sack-ns3-cubic-min-rtt": "sack",
    "sack-ns3-cubic-timeout-w-max": "sack",
    "sack-ns3-cubic": "sack",
    "sack-ns3-cubic-all": "sack",
    "sack-newreno-per-ack": "sack",
    "sack-ns3-newreno-per-ack": "sack",
    "sack-ns3-cubic-alpha-min-rtt": "sack",
    "sack-ns3-cubic-alpha-whole-min-rtt": "sack",
    "sack-ns3-cubic-alpha-whole-timeout": "sack",
    "sack-ns3-all-no-rescue": "sack",
    "sack-ns3-all-rtt-per-ack": "sack",
    "sack-rtt-per-ack": "sack",
    "sack-ns3-cubic-all-window-pipe": "sack",
    "sack-ns3-newreno-window-pipe": "sack",
    "sack-ns3-cubic-all-window-pipe-rtt-per-ack": "sack",
    "sack-ns3-newreno-window-pipe-rtt-per-ack": "sack",
}
TIMER_RULES = ("sack-ns3-timer-rules", "timer and ssthresh rules")
# What each layered experiment switches to ns-3's way (the gap list names it).
CAUSES = {
    "sack-rfc6298-timer": "ns-3's timer left running at a fast retransmit",
    "sack-rfc6298-timer-pipe-ssthresh": "that timer and ssthresh from the pipe",
    "sack-rto-backoff-reset": "ns-3's RTO backoff dropped at every new ACK",
    "sack-ns3-timer-rules": "ns-3's timer and ssthresh rules",
    "sack-ns3-cubic-alpha": "the timer and ssthresh rules and TcpCubic's Reno-friendly α",
    "sack-ns3-cubic-whole-segments": "the timer and ssthresh rules and TcpCubic's whole-segment arithmetic",
    "sack-ns3-cubic-min-rtt": "the timer and ssthresh rules and TcpCubic's minimum-RTT target",
    "sack-ns3-cubic-timeout-w-max": "the timer and ssthresh rules and TcpCubic's W_max kept after a timeout",
    "sack-ns3-cubic": "ns-3's timer and ssthresh rules, TcpCubic's α and whole-segment arithmetic",
    "sack-ns3-cubic-all": "the timer and ssthresh rules and all four TcpCubic knobs",
    "sack-newreno-per-ack": "TcpNewReno's per-ACK increase alone",
    "sack-ns3-newreno-per-ack": "ns-3's timer and ssthresh rules and TcpNewReno's per-ACK increase",
    "sack-ns3-cubic-alpha-min-rtt": "the timer and ssthresh rules and TcpCubic's α and minimum-RTT target",
    "sack-ns3-cubic-alpha-whole-min-rtt": "the timer and ssthresh rules and three TcpCubic knobs (no W_max "
    "after a timeout)",
    "sack-ns3-cubic-alpha-whole-timeout": "the timer and ssthresh rules and three TcpCubic knobs (no "
    "minimum-RTT target)",
    "sack-ns3-all-no-rescue": "every ns-3 rule found and no RFC 6675 rescue retransmission",
    "sack-ns3-all-rtt-per-ack": "every ns-3 rule found and an RTT sample per ACK",
    "sack-rtt-per-ack": "an RTT sample per ACK alone",
    "sack-ns3-cubic-all-window-pipe": "every ns-3 rule found for CUBIC and the window against the pipe",
    "sack-ns3-newreno-window-pipe": "every ns-3 rule found for NewReno and the window against the pipe",
    "sack-ns3-cubic-all-window-pipe-rtt-per-ack": "every ns-3 rule found for CUBIC, the window against the pipe "
    "and an RTT sample per ACK",
    "sack-ns3-newreno-window-pipe-rtt-per-ack": "every ns-3 rule found for NewReno, the window against the "
    "pipe and an RTT sample per ACK",
}
FULL = {"newreno": "sack-ns3-newreno-per-ack", "cubic": "sack-ns3-cubic-all"}
# FULL with `window_from_pipe` as well: ns-3's window against the pipe outside recovery.
FULL_PIPE = {"newreno": "sack-ns3-newreno-window-pipe", "cubic": "sack-ns3-cubic-all-window-pipe"}
# FULL_PIPE with an RTT sample per ACK as well (latlab's `timestamps = true`), as ns-3 samples without timestamps.
FULL_PIPE_RTT = {
    "newreno": "sack-ns3-newreno-window-pipe-rtt-per-ack",
    "cubic": "sack-ns3-cubic-all-window-pipe-rtt-per-ack",
}
WINDOW_INTRO = (
    "The rows of the two sections that switch on every ns-3 rule found before (*sack-ns3-cubic-all*, "
    "*sack-ns3-newreno-per-ack*) with one more latlab setting: `window_from_pipe = true`. Outside SACK "
    "recovery latlab checks the window against RFC 5681 FlightSize, snd_max − snd_una (for the "
    "go-back-N after a timeout, the sequence range from snd_una to the segment to resend). ns-3 3.44's "
    "TcpSocketBase::AvailableWindow is cwnd − BytesInFlight() in every congestion state, and "
    "BytesInFlight() is the RFC 6675 pipe (TcpTxBuffer: sent − SACKed − lost + retransmitted). So in "
    "ns-3, with SACK, a duplicate ACK that SACKs a segment frees room for a new one before fast "
    "retransmit (RFC 3042 limited transmit in effect, though LimitedTransmit is off), and after a "
    "timeout, which marks every un-SACKed segment lost (TcpTxBuffer::SetSentListLost), new data "
    "follows the retransmissions while SACKed data lies above a hole, where FlightSize holds it back "
    "until the hole is acknowledged. The knob counts the window as ns-3 does (the pipe "
    "`ssthresh_from_pipe` uses). The ns-3 columns are the SACK rows above, unchanged.\n"
)
WINDOW_SECTIONS = [
    (
        "sack-ns3-cubic-all-window-pipe",
        "SACK on both sides, every ns-3 rule found and the window against the pipe: CUBIC",
        "every ns-3 rule found and the window against the pipe",
    ),
    (
        "sack-ns3-newreno-window-pipe",
        "SACK on both sides, every ns-3 rule found and the window against the pipe: NewReno",
        "every ns-3 rule found and the window against the pipe",
    ),
]
OTHER_EXPERIMENTS = [
    (
        "sack-ns3-cubic-alpha-min-rtt",
        TIMER_RULES,
        "`alpha_switch = 0`, `target_min_rtt = 1` on the timer and ssthresh rules",
    ),
    (
        "sack-ns3-cubic-alpha-whole-min-rtt",
        TIMER_RULES,
        "`alpha_switch = 0`, `whole_segments = 1`, `target_min_rtt "
        "= 1` on the timer and ssthresh rules",
    ),
    (
        "sack-ns3-cubic-alpha-whole-timeout",
        TIMER_RULES,
        "`alpha_switch = 0`, `whole_segments = 1`, "
        "`timeout_keeps_w_max = 1` on the timer and ssthresh rules",
    ),
    (
        "sack-ns3-all-no-rescue",
        (FULL, "every ns-3 rule found"),
        "every ns-3 rule found (the last section's settings: "
        "NewReno with `per_ack_increase = 1`, CUBIC with the four TcpCubic knobs) and `rescue_retransmission = false`: "
        "ns-3 3.44 has no RFC 6675 rescue retransmission (a SHOULD), latlab does by default",
    ),
    (
        "sack-ns3-all-rtt-per-ack",
        (FULL, "every ns-3 rule found"),
        "every ns-3 rule found and `timestamps = true` "
        "(in latlab RTT measurement only; the wire size is set by header_bytes): an RTT sample from every ACK of new "
        "data, as ns-3's TcpSocketBase::EstimateRtt takes one per ACK from its RttHistory without timestamps (Karn's "
        "rule aside), where latlab times one segment per RTT",
    ),
    ("sack-rtt-per-ack", ("sack", "SACK rows"), "`timestamps = true` alone on the SACK rows"),
]
CUBIC_SECTIONS = [
    (
        "sack-ns3-cubic-alpha",
        "SACK on both sides, ns-3's rules, TcpCubic's Reno-friendly α",
        "The rows of the section above (latlab's timer and ssthresh rules as ns-3) with one CUBIC knob changed on "
        "latlab's side: `alpha_switch = 0`. In the Reno-friendly region RFC 9438 §4.3 grows W_est by α = 3(1 − β)/"
        "(1 + β) ≈ 0.53 segments per RTT until it reaches cwnd_prior, the window at the last reduction, and from "
        "there by 1 (a SHOULD), which latlab does by default. ns-3 3.44's TcpCubic::Update, like Linux's "
        "tcp_friendliness, keeps α_cubic throughout (m_tcpCwnd + 1 every cwnd·(1 + β)/(3(1 − β)) acknowledged "
        "segments). With 10 flows each window is 10 to 40 segments and K = ∛(W_max(1 − β)/C) is 2 to 3 s, longer than "
        "the Reno estimate takes to regain W_max, so the Reno-friendly region sets the window for most of each cycle, "
        "and past cwnd_prior latlab's window grows twice as fast as ns-3's. The ns-3 columns are the SACK rows above, "
        "unchanged.\n",
        "TcpCubic keeping α_cubic past cwnd_prior",
    ),
    (
        "sack-ns3-cubic-whole-segments",
        "SACK on both sides, ns-3's rules, TcpCubic's whole-segment arithmetic",
        "The same rows with a different single CUBIC knob: `whole_segments = 1`. ns-3's TcpCubic, like Linux, keeps "
        "cwnd in whole segments. At a loss it sets W_max = cwnd (⌊cwnd·(1 + β)/2⌋ with fast convergence) and ssthresh "
        "= max(⌊β·cwnd⌋, 2) segments (TcpCubic::GetSsThresh); latlab's RFC 9438 window is fractional and β·cwnd is "
        "not rounded, so its reduction ends about 0.85 segment higher (12% of ssthresh at a 10-segment window). In "
        "congestion avoidance TcpCubic::Update takes the integer target W_max ∓ ⌊C·|t + RTT − K|³⌋ and adds a "
        "segment every cnt = ⌊cwnd/(target − cwnd)⌋ acknowledged segments (at least 2; lower when the Reno estimate "
        "is ahead), which at windows of a few segments grows faster than the RFC's (target − cwnd)/cwnd per ACK: the "
        "rounded-down cube holds the concave target up to a segment higher, and cnt is rounded down. The knob does "
        "both as ns-3. The ns-3 columns are the SACK rows above, unchanged.\n",
        "TcpCubic's whole-segment arithmetic",
    ),
    (
        "sack-ns3-cubic-min-rtt",
        "SACK on both sides, ns-3's rules, TcpCubic's minimum-RTT target",
        "The same rows with `target_min_rtt = 1` alone: the target W_cubic(t + RTT) looks ahead by the minimum RTT, as "
        "Linux (delay_min) does, instead of RFC 9438's smoothed RTT (§4.1, §4.4); TcpCubic's m_delayMin is the "
        "smallest smoothed RTT since the last timeout, between the two.\n",
        "TcpCubic's minimum-RTT target",
    ),
    (
        "sack-ns3-cubic-timeout-w-max",
        "SACK on both sides, ns-3's rules, TcpCubic's W_max after a timeout",
        "The same rows with `timeout_keeps_w_max = 1` alone. RFC 9438 §4.8 starts the first stage after a timeout with "
        "K = 0 and W_max = cwnd_epoch (Linux gets the same by clearing W_max when it enters the Loss state); ns-3 "
        "3.44's TcpCubic::CubicReset at CA_LOSS leaves m_lastMaxCwnd as GetSsThresh set it, so the stage climbs back "
        "towards it with K > 0, as after a fast retransmit.\n",
        "TcpCubic keeping W_max after a timeout",
    ),
    (
        "sack-ns3-cubic",
        "SACK on both sides, ns-3's rules, TcpCubic's α and whole-segment arithmetic",
        "The two CUBIC knobs that move the loss rate above, together, on top of latlab's timer and ssthresh rules as "
        "ns-3: `alpha_switch = 0`, `whole_segments = 1`. The ns-3 columns are the SACK rows above, unchanged.\n",
        "TcpCubic's Reno-friendly α and whole-segment arithmetic",
    ),
    (
        "sack-ns3-cubic-all",
        "SACK on both sides, ns-3's rules, all four TcpCubic knobs",
        "As the previous section with the two knobs that do not close a gap on their own as well: `alpha_switch = 0`, "
        "`whole_segments = 1`, `target_min_rtt = 1`, `timeout_keeps_w_max = 1`, i.e. latlab's CUBIC with all four "
        "TcpCubic departures from RFC 9438 that latlab can switch on. Where the buffer is deep the minimum-RTT "
        "look-ahead and W_max kept after a timeout matter once the window is counted in whole segments (at 2 BDP the "
        "smoothed RTT is three times the minimum). The ns-3 columns are the SACK rows above, unchanged.\n",
        "all four TcpCubic behaviours",
    ),
]
NEWRENO_SECTIONS = [
    (
        "sack-newreno-per-ack",
        "SACK on both sides, TcpNewReno's per-ACK increase",
        "sack",
        "SACK rows",
        "The SACK rows with one setting changed on latlab's side only: NewReno's `per_ack_increase = 1`. ns-3 3.44's "
        "TcpNewReno::CongestionAvoidance adds max(1, ⌊SMSS²/cwnd⌋) bytes per ACK that acknowledges new data (RFC 5681 "
        "eq. (3)), however much the ACK covers; latlab counts bytes (RFC 3465, the form RFC 5681 §3.1 RECOMMENDS), one "
        "SMSS per cwnd of acknowledged data. The per-ACK form grows a little less than a segment per RTT (cwnd grows "
        "within the round: about 0.9 segment at three segments), and the cumulative ACK that ends a SACK recovery, "
        "covering many segments, adds one increment instead of one per segment. The ns-3 columns are the SACK rows "
        "above, unchanged.\n",
        "TcpNewReno's per-ACK increase",
    ),
    (
        "sack-ns3-newreno-per-ack",
        "SACK on both sides, ns-3's rules and TcpNewReno's per-ACK increase",
        TIMER_RULES[0],
        "timer and ssthresh rules",
        "latlab's timer and ssthresh rules as ns-3 (the section with all three) and NewReno's `per_ack_increase = 1`: "
        "NewReno with every ns-3 behaviour latlab can switch on. The ns-3 columns are the SACK rows above, "
        "unchanged.\n",
        "ns-3's timer and ssthresh rules with TcpNewReno's per-ACK increase",
    ),
]
ALL3_INTRO = (
    "The SACK rows again with the three latlab settings above at once, each as ns-3 3.44 does it: "
    "`rto_restart_on_fast_retransmit = false`, `ssthresh_from_pipe = true`, `rto_backoff_reset_on_ack = "
    "true`. The ns-3 columns are the SACK rows above, unchanged.\n"
)
# Experiments that change ns-3 only on top of another experiment: experiment -> the one whose latlab rows they are
# set against.
NS3_LAYERED = {
    "sack-ns3-data-retries": "sack",
    "sack-ns3-red-thresholds-unshifted": "sack",
    "sack-ns3-codel-target-5ms": "sack",
    "sack-ns3-limited-transmit": "sack",
}
# Experiments that change a setting on both sides, each side under its own name: latlab experiment -> ns-3 one.
PAIRED = {"sack-ns3-cubic-all-min-rto-1s": "sack-min-rto-1s"}
PAIRED_NAMES = set(PAIRED) | set(PAIRED.values())
TWIN_INTROS = {
    "sack-ns3-red-thresholds-unshifted": (
        "RED at 100 flows, SACK on both sides, with one twin setting changed on ns-3's side: MinTh and MaxTh at "
        "latlab's min_th and max_th instead of one lower (the settings table's choice). The latlab columns are the "
        "SACK rows above, unchanged.\n"
    ),
    "sack-ns3-codel-target-5ms": (
        "CoDel at 100 flows, SACK on both sides, with one twin setting changed on ns-3's side: Target 5 ms instead "
        "of 5 ms less one data-packet serialisation (the settings table's choice). The latlab columns are the SACK "
        "rows above, unchanged.\n"
    ),
}
BACKOFF_INTRO = (
    "The SACK rows again with one setting changed on latlab's side only: `rto_backoff_reset_on_ack = "
    "true`. ns-3 3.44's TcpSocketBase::NewAck sets RTO = SRTT + 4·RTTVAR (at least MinRto) at every ACK "
    "of new data, which drops the exponential backoff even when the ACK gave no RTT sample because it "
    "acknowledges a retransmission (Karn's rule); RFC 6298 §5 (the note after (5.7)) keeps the "
    "backed-off RTO until a new RTT measurement, as latlab does by default. The ns-3 columns are the "
    "SACK rows above, unchanged. Where timeouts repeat (100 and 1000 flows) the RTO columns do not "
    "compare like with like: ns-3 counts entries into CA_LOSS, latlab every expiry.\n"
)
RETRIES_INTRO = (
    "The SACK rows again with one setting changed on ns-3's side only: TcpSocket::DataRetries 1000 in "
    "place of ns-3's default 6. ns-3 drops a connection when its retransmission timer expires a seventh "
    'time without a new ACK in between (TcpSocketBase::ReTxTimeout: "No more data retries available. '
    'Dropping connection"); latlab retransmits until acknowledged. From the 200 ms minimum RTO the seven '
    "backed-off waits last at least 25.4 s, while RFC 1122 §4.2.3.5 says the threshold R2 for data "
    "SHOULD correspond to at least 100 s. The latlab columns are the SACK rows above, unchanged; *zero "
    "flows* counts the flows with no goodput in the window (latlab / ns-3).\n"
)


def loss_gaps_by_cc(exps: dict, lat_exp: str, ns_exp: str, flows: int) -> dict:
    """cc -> [(label, loss gap %, goodput gap %)] of the means over seeds at `flows` flows, where both ran."""
    groups: dict = {}
    for k, e in exps.items():
        la, na = e.get(lat_exp, {}), e.get(ns_exp, {})
        if k[0] == flows and "latlab" in la and "ns-3" in na:
            groups.setdefault((k[0], k[1], k[2], k[3]), []).append((la["latlab"], na["ns-3"]))
    out: dict = {}
    order = lambda x: (x[0][3], x[0][1].endswith("KB"), float(x[0][1].lower().rstrip("bdpk")))  # noqa: E731
    for g, runs in sorted(groups.items(), key=order):
        mean = lambda side, m: sum(r[side][m] for r in runs) / len(runs)  # noqa: E731
        label = f"{g[1]}" + ("" if g[3] == "droptail" else f" {g[3]}")
        out.setdefault(g[2], []).append(
            (
                label,
                rel(mean(0, "loss_rate"), mean(1, "loss_rate")),
                rel(mean(0, "goodput_mbps"), mean(1, "goodput_mbps")),
            )
        )
    return out


def pipe_paragraph(exps: dict) -> list[str]:
    """What the pipe-ssthresh experiment shows, per flow count and congestion control, from the rows."""
    out = layered_paragraph(
        exps,
        "sack-rfc6298-timer-pipe-ssthresh",
        "ns-3's ssthresh rule (the pipe, recomputed at a timeout during recovery) with its timer",
    )
    if not out:
        return []
    after10 = loss_gaps_by_cc(exps, "sack-rfc6298-timer-pipe-ssthresh", "sack", 10)
    if any(
        cc_ == "cubic" and sum(abs(x[1]) <= 10 for x in pts) < len(pts)
        for cc_, pts in after10.items()
    ) and not any("sack-ns3-cubic" in e for e in exps.values()):
        out.append(
            "The 10-flow CUBIC loss gap stays **unexplained**. Candidates, untested, where latlab's RFC 9438 controller and ns-3's TcpCubic (which "
            "follows Linux's tcp_cubic) differ in the Reno-friendly region, where windows of ten or so segments "
            "spend most of their time: RFC 9438 §4.3 raises α from 3(1 − β)/(1 + β) to 1 once W_est reaches "
            "cwnd_prior, TcpCubic keeps the smaller α; and the cubic target W_cubic(t + RTT) uses latlab's "
            "smoothed RTT, TcpCubic's t + the minimum RTT.\n"
        )
    return out


FULL_EMULATION = FULL


def seed_spread(
    exps: dict, lat_exp: str, f: int, buf: str, cc_: str, q: str = "droptail"
) -> dict | None:
    """latlab `lat_exp` against ns-3 *sack* at one point over every seed both ran: means, the paired per-seed
    differences (loss in percentage points, drops in the window) with their standard errors, and the ranges."""
    pairs = sorted(
        (k[4], e[lat_exp]["latlab"], e["sack"]["ns-3"])
        for k, e in exps.items()
        if k[:4] == (f, buf, cc_, q)
        and "latlab" in e.get(lat_exp, {})
        and "ns-3" in e.get("sack", {})
    )
    n = len(pairs)
    if n < 2:
        return None

    def mean_se(xs: list[float]) -> tuple[float, float]:
        m = sum(xs) / len(xs)
        return m, math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1) / len(xs))

    la, na = [p_[1] for p_ in pairs], [p_[2] for p_ in pairs]
    dl, dl_se = mean_se([100 * (a["loss_rate"] - b["loss_rate"]) for a, b in zip(la, na)])
    dd, dd_se = mean_se([a["core_drops_pkts"] - b["core_drops_pkts"] for a, b in zip(la, na)])
    m = lambda rows, k: sum(r[k] for r in rows) / len(rows)  # noqa: E731
    return {
        "n": n,
        "loss_l": 100 * m(la, "loss_rate"),
        "loss_n": 100 * m(na, "loss_rate"),
        "rel": rel(m(la, "loss_rate"), m(na, "loss_rate")),
        "gp": rel(m(la, "goodput_mbps"), m(na, "goodput_mbps")),
        "d": dl,
        "d_se": dl_se,
        "drops_l": m(la, "core_drops_pkts"),
        "drops_n": m(na, "core_drops_pkts"),
        "dd": dd,
        "dd_se": dd_se,
        "lower": sum(a["loss_rate"] < b["loss_rate"] for a, b in zip(la, na)),
        "range_l": (100 * min(r["loss_rate"] for r in la), 100 * max(r["loss_rate"] for r in la)),
        "range_n": (100 * min(r["loss_rate"] for r in na), 100 * max(r["loss_rate"] for r in na)),
        "drops_each": [(a["core_drops_pkts"], b["core_drops_pkts"]) for a, b in zip(la, na)],
    }


def window_tail(exps: dict, at) -> str:
    """The 10-flow 0.1 BDP CUBIC goodput gap with and without ns-3's window against the pipe."""
    g_p = at(FULL_PIPE["cubic"], 10, "cubic", "0.1bdp")
    if not g_p:
        return "It stays **unexplained**."

    def mean_of(exp: str, sim: str, m: str) -> float:
        rows = [
            e[exp][sim]
            for k, e in exps.items()
            if k[:4] == (10, "0.1bdp", "cubic", "droptail")
            and sim in e.get(exp, {})
            and "ns-3" in e.get("sack", {})
            and "latlab" in e.get(FULL_PIPE["cubic"], {})
        ]
        return sum(r[m] for r in rows) / len(rows)

    to = [
        mean_of(FULL["cubic"], "latlab", "timeouts"),
        mean_of(FULL_PIPE["cubic"], "latlab", "timeouts"),
        mean_of("sack", "ns-3", "timeouts"),
    ]
    q = [
        mean_of(FULL["cubic"], "latlab", "queue_mean_pkts"),
        mean_of(FULL_PIPE["cubic"], "latlab", "queue_mean_pkts"),
        mean_of("sack", "ns-3", "queue_mean_pkts"),
    ]
    inside = abs(g_p[1]) <= 10 and abs(g_p[2]) <= 5
    return (
        f"What moves it is ns-3's window against the pipe (`window_from_pipe = true`, the sections with tables "
        f"above): goodput {fmt_pct(g_p[2])}, loss {fmt_pct(g_p[1])}; timeouts per run {to[0]:.1f} → {to[1]:.1f} "
        f"(ns-3 {to[2]:.1f}), mean queue {q[0]:.2f} → {q[1]:.2f} packets (ns-3 {q[2]:.2f}), means over the "
        "seeds. With SACK ns-3 sends a new segment for each duplicate ACK that SACKs one, because its window is "
        "cwnd − pipe in every state; at windows of a few segments that keeps the ACK clock going until the "
        "third duplicate ACK, where latlab, counting FlightSize, sends nothing, more often runs out of "
        "duplicate ACKs and waits for the timer. "
        + (
            "At 10 flows the goodput gap is **explained** by it; at 100 flows the same setting opens loss gaps "
            "(below)."
            if inside
            else "It does not bring the point inside."
        )
    )


def explanations(exps: dict) -> list[str]:
    """The three gaps the CUBIC and NewReno experiments take up, each with its cause and numbers from the rows."""

    def at(exp: str, f: int, cc_: str, label: str):
        for x in loss_gaps_by_cc(exps, exp, "sack", f).get(cc_, []):
            if x[0] == label:
                return x
        return None

    def loss(exp: str, f: int, cc_: str, labels: list[str]) -> str:
        xs = [(lb, at(exp, f, cc_, lb)) for lb in labels]
        return ", ".join(f"{lb} {fmt_pct(x[1])}" for lb, x in xs if x)

    if not any("sack-ns3-cubic-all" in e for e in exps.values()):
        return []
    b10 = ["0.1bdp", "0.5bdp", "1bdp", "2bdp"]
    out = ["## What explains the CUBIC and NewReno gaps\n"]
    g = at("sack-ns3-cubic-all", 10, "cubic", "0.1bdp")
    out.append(
        "**10-flow CUBIC loss.** With SACK on both sides latlab lost more than ns-3 at every 10-flow CUBIC point (loss "
        f"gaps {loss('sack', 10, 'cubic', b10)}, means over seeds), and ns-3's timer and ssthresh rules, which close "
        f"the NewReno rows, leave them ({loss(TIMER_RULES[0], 10, 'cubic', b10)}). The cause is ns-3's TcpCubic, "
        "which departs from RFC 9438 where latlab follows it. The largest single part is the Reno-friendly α "
        "(§4.3): TcpCubic keeps α_cubic ≈ 0.53 segments per RTT where the RFC switches to 1 once W_est reaches "
        f"cwnd_prior ({loss('sack-ns3-cubic-alpha', 10, 'cubic', b10)} with `alpha_switch = 0` alone). The "
        "second is its whole-segment arithmetic (W_max, ssthresh rounded down; one segment per ⌊cwnd/(target − "
        "cwnd)⌋ ACKs), which alone changes little but with the α closes the small buffers "
        f"({loss('sack-ns3-cubic', 10, 'cubic', b10)}); with the minimum-RTT look-ahead and W_max kept after a "
        f"timeout as well, all four as TcpCubic, every 10-flow point is inside 10% "
        f"({loss('sack-ns3-cubic-all', 10, 'cubic', b10)}). None of the four is a latlab defect: latlab's defaults "
        "are RFC 9438's, and each knob is opt-in. Goodput at 0.1 BDP stays below ns-3's"
        + (f" ({fmt_pct(g[2])})" if g else "")
        + ": with the same loss latlab's flows sit in more timeouts and "
        "keep a shorter queue; neither ns-3's missing RFC 6675 rescue retransmission (*sack-ns3-all-no-rescue*: no "
        "row changes) nor an RTT sample per ACK (*sack-ns3-all-rtt-per-ack*) moves it. "
        + window_tail(exps, at)
        + "\n"
    )
    nr2 = loss("sack", 100, "newreno", ["2bdp", "2bdp red", "1bdp red"])
    out.append(
        "**100-flow 2 BDP (RED and drop-tail).** NewReno's loss gaps with SACK "
        f"({nr2}) are ns-3's TcpNewReno congestion avoidance: RFC 5681 eq. (3), SMSS²/cwnd per ACK, where latlab "
        "counts bytes (RFC 3465, RFC 5681's RECOMMENDED form). At windows of two to four segments eq. (3) gives "
        "about 0.9 segment per RTT, and the cumulative ACK that ends a SACK recovery adds one increment, not one "
        f"per segment. `per_ack_increase = 1` alone: {loss('sack-newreno-per-ack', 100, 'newreno', ['2bdp', '2bdp red', '1bdp red'])}; "
        f"with ns-3's timer and ssthresh rules: {loss('sack-ns3-newreno-per-ack', 100, 'newreno', ['2bdp', '2bdp red', '1bdp red'])}. "
        f"CUBIC's RED gap at 2 BDP ({loss('sack', 100, 'cubic', ['2bdp red'])}) grows with the timer rules "
        f"({loss(TIMER_RULES[0], 100, 'cubic', ['2bdp red'])}) and falls with TcpCubic's α "
        f"({loss('sack-ns3-cubic-alpha', 100, 'cubic', ['2bdp red'])}) or all four TcpCubic knobs "
        f"({loss('sack-ns3-cubic-all', 100, 'cubic', ['2bdp red'])}): at 2 BDP each flow holds two to four "
        "segments, deep in the Reno-friendly region, where TcpCubic's α of 0.53 against the RFC's 1 sets the "
        "growth as at 10 flows.\n"
    )
    g_t = at(TIMER_RULES[0], 10, "newreno", "0.1bdp")
    g_p = at("sack-ns3-newreno-per-ack", 10, "newreno", "0.1bdp")
    if g_t and g_p:
        out.append(
            f"**10-flow 0.1 BDP NewReno goodput.** With the timer and ssthresh rules the loss agrees "
            f"({fmt_pct(g_t[1])}) but goodput is {fmt_pct(g_t[2])}; with TcpNewReno's per-ACK increase as well it is "
            f"{fmt_pct(g_p[2])} at loss {fmt_pct(g_p[1])}, inside the goal, so the goodput gap is the same increase "
            "rule.\n"
        )
    one = loss("sack-ns3-newreno-per-ack", 1, "newreno", b10)
    out.append(
        "**One flow.** The single-flow SACK loss rates are a handful of drops in the window (the counts are in the "
        f"list below). NewReno's agree drop for drop with ns-3's per-ACK increase and rules ({one}); CUBIC's with "
        f"TcpCubic's α and whole-segment arithmetic ({loss('sack-ns3-cubic', 1, 'cubic', b10)}, means over the "
        "seeds in the tables), while the minimum-RTT look-ahead and kept W_max move the deep buffers away again "
        f"({loss('sack-ns3-cubic-all', 1, 'cubic', b10)}), by a few drops.\n"
    )
    out += seeds_paragraphs(exps, loss)
    out += window_100_paragraph(exps, loss)
    return out


def window_100_paragraph(exps: dict, loss) -> list[str]:
    """What ns-3's window against the pipe does to the 100-flow points."""
    labels = [
        "0.1bdp",
        "0.5bdp",
        "1bdp",
        "2bdp",
        "10KB",
        "0.5bdp red",
        "1bdp red",
        "2bdp red",
        "0.5bdp codel",
        "1bdp codel",
        "2bdp codel",
    ]
    if not any(FULL_PIPE["cubic"] in e for k, e in exps.items() if k[0] == 100):
        return []
    parts = [
        f"{cc_} {loss(FULL[cc_], 100, cc_, labels)} → {loss(FULL_PIPE[cc_], 100, cc_, labels)}"
        for cc_ in ("newreno", "cubic")
    ]
    same100 = [
        k
        for k, e in exps.items()
        if k[0] == 100
        and "ns-3" in e.get("sack-ns3-data-retries", {})
        and "ns-3" in e.get("sack", {})
        and all(
            e["sack"]["ns-3"][m] == e["sack-ns3-data-retries"]["ns-3"][m]
            for m in ("goodput_mbps", "loss_rate", "timeouts")
        )
    ]
    retries_note = (
        (
            " (not its data-retry limit: lifting it leaves the row of "
            + ", ".join(
                f"{k[0]} flows {k[1]} {k[2]}{'' if k[3] == 'droptail' else ' ' + k[3]}"
                for k in same100
            )
            + " unchanged, *sack-ns3-data-retries*)"
        )
        if same100
        else ""
    )
    return [
        "**The window against the pipe at 100 flows.** The same knob moves the 100-flow points the other way "
        f"(loss gaps, every ns-3 rule found before → with `window_from_pipe` as well: {'; '.join(parts)}). "
        "There each window holds one to three segments and most losses end in a timeout, so what the sender "
        "may send on duplicate ACKs and after a timeout sets the loss rate; counting the window as ns-3 does, "
        "latlab now loses more than ns-3 at every 100-flow point. Some other ns-3 behaviour at these windows, "
        "not found, must hold ns-3 back there"
        + retries_note
        + "; the agreement at 100 flows without the knob may be two "
        "differences cancelling. With the knob these 100-flow loss gaps are **unexplained**; the knob stays "
        "opt-in, and the next section gives both sets.\n"
    ]


def pipe_note(exps: dict) -> str:
    """The 10-flow 0.5 BDP NewReno point with ns-3's window against the pipe as well."""
    sp = seed_spread(exps, FULL_PIPE["newreno"], 10, "0.5bdp", "newreno")
    if not sp:
        return ""
    return (
        f" At 10 flows 0.5 BDP the gap is latlab losing less at every seed; with ns-3's window against the pipe "
        f"as well (*{FULL_PIPE['newreno']}*, {sp['n']} seeds) it is {fmt_pct(sp['rel'])} ({sp['d']:+.3f} ± "
        f"{sp['d_se']:.3f} points per seed), "
        + (
            "inside the goal: the same ns-3 behaviour as the 10-flow CUBIC goodput gap above, with the same "
            "cost at 100 flows (below)."
            if abs(sp["rel"]) <= 10
            else "still outside."
        )
    )


def min_rto_paragraph(exps: dict) -> str:
    """One CUBIC flow with the minimum RTO at 1 s on both sides: does the 2 BDP gap go with ns-3's timeouts?"""
    lat_exp, ns_exp = next(iter(PAIRED.items()))
    out, after = [], []
    for b in ("1bdp", "2bdp"):
        pairs = [
            (e[lat_exp]["latlab"], e[ns_exp]["ns-3"], e[FULL["cubic"]]["latlab"], e["sack"]["ns-3"])
            for k, e in sorted(exps.items())
            if k[:4] == (1, b, "cubic", "droptail")
            and "latlab" in e.get(lat_exp, {})
            and "ns-3" in e.get(ns_exp, {})
            and "latlab" in e.get(FULL["cubic"], {})
            and "ns-3" in e.get("sack", {})
        ]
        if len(pairs) < 2:
            continue
        m = lambda i, f: sum(p_[i][f] for p_ in pairs) / len(pairs)  # noqa: E731
        d = [p_[0]["core_drops_pkts"] - p_[1]["core_drops_pkts"] for p_ in pairs]
        dm = sum(d) / len(d)
        se = math.sqrt(sum((x - dm) ** 2 for x in d) / (len(d) - 1) / len(d))
        after.append(rel(m(0, "loss_rate"), m(1, "loss_rate")))
        out.append(
            f"{b}, {len(pairs)} seeds: timeouts per run latlab {m(2, 'timeouts'):.2f} → {m(0, 'timeouts'):.2f}, "
            f"ns-3 {m(3, 'timeouts'):.2f} → {m(1, 'timeouts'):.2f}; mean queue latlab {m(2, 'queue_mean_pkts'):.0f} "
            f"→ {m(0, 'queue_mean_pkts'):.0f}, ns-3 {m(3, 'queue_mean_pkts'):.0f} → {m(1, 'queue_mean_pkts'):.0f} "
            f"packets; loss {fmt_pct(rel(m(2, 'loss_rate'), m(3, 'loss_rate')))} → "
            f"{fmt_pct(rel(m(0, 'loss_rate'), m(1, 'loss_rate')))} ({m(0, 'core_drops_pkts'):.1f} vs "
            f"{m(1, 'core_drops_pkts'):.1f} drops per run, per seed {dm:+.1f} ± {se:.1f})"
        )
    if not out:
        return ""
    return (
        " What differs shows in the timeouts: at 2 BDP ns-3's fast recovery at the end of each CUBIC cycle is "
        "followed by a timeout (seed 1, the twin's `rto_rows`: a loss at cwnd 327 segments, 228 after the fast "
        "retransmit, 10 two or three 100-ms samples later), latlab's is not. With the "
        f"minimum RTO at 1 s on both sides (latlab `min_rto_ms = 1000`, *{lat_exp}*; ns-3 MinRto 1 s, "
        f"*{ns_exp}*), against the rows above: "
        + "; ".join(out)
        + ". "
        + (
            "So the one-flow gaps are ns-3's timeouts after fast recovery: with a minimum RTO neither timer "
            "reaches they close, and they are **explained** by that experiment."
            + timer_mechanism(exps)
            if all(abs(g_) <= 10 for g_ in after)
            else "With it the gaps do not all close."
        )
    )


def timer_mechanism(exps: dict) -> str:
    """Why ns-3's timer fires after a one-flow fast recovery, and the latlab settings that make latlab's fire too."""
    exp = FULL_PIPE_RTT["cubic"]
    parts = []
    for b in ("1bdp", "2bdp"):
        pairs = [
            (e[exp]["latlab"], e["sack"]["ns-3"])
            for k, e in sorted(exps.items())
            if k[:4] == (1, b, "cubic", "droptail")
            and "latlab" in e.get(exp, {})
            and "ns-3" in e.get("sack", {})
        ]
        if len(pairs) < 2:
            return ""
        m = lambda i, f: sum(p_[i][f] for p_ in pairs) / len(pairs)  # noqa: E731
        parts.append(
            f"{b}, {len(pairs)} seeds: timeouts per run {m(0, 'timeouts'):.2f} against ns-3's "
            f"{m(1, 'timeouts'):.2f}, mean queue {m(0, 'queue_mean_pkts'):.0f} against "
            f"{m(1, 'queue_mean_pkts'):.0f} packets, loss {fmt_pct(rel(m(0, 'loss_rate'), m(1, 'loss_rate')))}, "
            f"goodput {fmt_pct(rel(m(0, 'goodput_mbps'), m(1, 'goodput_mbps')))}"
        )
    return (
        " Why ns-3's timer fires: at the three timeouts of seed 1 after the first (the twin's `rto_rows`) its RTO "
        "was 251.9 ms against a last RTT sample of 250.9 ms. With an RTT sample from every ACK while the queue "
        "fills slowly, RTTVAR stays a fraction of a millisecond, so RTO = SRTT + G (1 ms). The timer ran from the "
        "last cumulative ACK, 2.4 ms before the fast recovery began (three duplicate ACKs 0.8 ms apart), and the "
        "retransmission waits behind the full queue, so its ACK is due about one RTT (250.9 ms) after it was sent, "
        "while the timer fired 249.5 ms after the recovery began: a spurious timeout. latlab's timer does the same only with both settings that "
        "make its estimator and its queue the same as ns-3's: an RTT sample per ACK (`timestamps = true`; with "
        "one timed segment per RTT latlab's SRTT lags the rising RTT, 213–231 ms at its losses at seed 1 against "
        "250.9 ms with a sample per ACK, which keeps its RTO clear) and the window against the pipe (`window_from_pipe`; without it the three duplicate ACKs "
        "release no new segment, the queue shrinks by three packets and the retransmission's ACK comes 2.4 ms "
        f"sooner, inside the timer). With both (*{exp}*): "
        + "; ".join(parts)
        + ": the one-flow gaps are **explained** by ns-3's estimator and window together, and neither alone "
        "(*sack-ns3-all-rtt-per-ack*, *sack-ns3-cubic-all-window-pipe*) reproduces them."
    )


def seeds_paragraphs(exps: dict, loss) -> list[str]:
    """The points outside the goal with every ns-3 rule found switched on, run with more seeds: is the gap
    inside the seed-to-seed spread?"""
    out = []

    def verdict(sp: dict, drops: bool = False) -> str:
        d, se = (sp["dd"], sp["dd_se"]) if drops else (sp["d"], sp["d_se"])
        if abs(sp["rel"]) <= 10:
            return "inside the goal over these seeds"
        if abs(d) <= 2 * se:
            return "within two standard errors of zero: inside the seed-to-seed spread"
        return f"{abs(d) / se:.1f} standard errors from zero: not the seed spread"

    nr = [
        (f, b, q, seed_spread(exps, FULL["newreno"], f, b, "newreno", q))
        for f, b, q in ((10, "0.5bdp", "droptail"), (100, "1bdp", "red"))
    ]
    nr = [x for x in nr if x[3]]
    if nr:
        out.append(
            "**NewReno, more seeds.** The two NewReno points just outside the goal with every ns-3 rule found "
            "(*sack-ns3-newreno-per-ack* against ns-3's SACK rows), each seed drawing its own delays and "
            "start times, the same on both sides: "
            + "; ".join(
                f"{f} flows {b}{'' if q == 'droptail' else ' ' + q}, {sp['n']} seeds: loss {sp['loss_l']:.3f}% "
                f"/ {sp['loss_n']:.3f}% ({fmt_pct(sp['rel'])}; goodput {fmt_pct(sp['gp'])}), per seed latlab − "
                f"ns-3 = {sp['d']:+.3f} ± {sp['d_se']:.3f} points (mean ± standard error), latlab lower at "
                f"{sp['lower']} of {sp['n']} seeds, ranges [{sp['range_l'][0]:.3f}, {sp['range_l'][1]:.3f}] / "
                f"[{sp['range_n'][0]:.3f}, {sp['range_n'][1]:.3f}]: {verdict(sp)}"
                for f, b, q, sp in nr
            )
            + "."
            + pipe_note(exps)
            + "\n"
        )
    one = [(b, seed_spread(exps, FULL["cubic"], 1, b, "cubic")) for b in ("1bdp", "2bdp")]
    one = [x for x in one if x[1]]
    if one:
        txt = (
            "**One CUBIC flow, more seeds.** With all four TcpCubic knobs (*sack-ns3-cubic-all*) a run has a few "
            "dozen drops in the window, so the loss rate is a count: "
            + "; ".join(
                f"{b}, {sp['n']} seeds: loss {fmt_pct(sp['rel'])}, {sp['drops_l']:.1f} vs {sp['drops_n']:.1f} "
                f"drops per run, per seed latlab − ns-3 = {sp['dd']:+.1f} ± {sp['dd_se']:.1f} drops (mean ± "
                f"standard error), {sum(abs(a - c) >= 5 for a, c in sp['drops_each'])} of {sp['n']} seeds apart by "
                f"5 drops or more: {verdict(sp, drops=True)}"
                for b, sp in one
            )
            + "."
        )
        two = dict(one).get("2bdp")
        wo = seed_spread(exps, "sack-ns3-cubic", 1, "2bdp", "cubic")
        wt = seed_spread(exps, "sack-ns3-cubic-alpha-whole-timeout", 1, "2bdp", "cubic")
        if two and wo and wt and abs(two["dd"]) > 2 * two["dd_se"]:
            txt += (
                f" At 2 BDP the gap comes with `timeout_keeps_w_max`: without it and without the minimum-RTT "
                f"target (*sack-ns3-cubic*, {wo['n']} seeds) loss is {fmt_pct(wo['rel'])} ({wo['dd']:+.1f} ± "
                f"{wo['dd_se']:.1f} drops per seed), with it and still without the minimum-RTT target "
                f"(*sack-ns3-cubic-alpha-whole-timeout*, {wt['n']} seeds) {fmt_pct(wt['rel'])} ({wt['dd']:+.1f} ± "
                f"{wt['dd_se']:.1f}). ns-3 3.44 does keep W_max at a timeout (TcpCubic::CubicReset leaves "
                "m_lastMaxCwnd as GetSsThresh set it), so the knob copies that rule."
                + min_rto_paragraph(exps)
            )
        out.append(txt + "\n")
    return out


def limited_transmit_check(exps: dict) -> list[str]:
    """ns-3's LimitedTransmit switched on with SACK: does the flag change anything once the window is the pipe?"""
    pairs = [
        (k, e["sack"]["ns-3"], e["sack-ns3-limited-transmit"]["ns-3"])
        for k, e in sorted(exps.items())
        if "ns-3" in e.get("sack", {}) and "ns-3" in e.get("sack-ns3-limited-transmit", {})
    ]
    if not pairs:
        return []
    same = all(
        all(
            a[m] == b[m]
            for m in ("goodput_mbps", "loss_rate", "retransmitted_segments", "timeouts")
        )
        for _, a, b in pairs
    )
    where = ", ".join(f"{k[0]} flows {k[1]} {k[2]} seed {k[4]}" for k, _, _ in pairs)
    return [
        f"On ns-3's side, TcpSocketBase::LimitedTransmit on instead of off with SACK (*sack-ns3-limited-transmit*, "
        f"{where}) "
        + (
            "gives the same row to the last digit: with SACK the flag does not act, the window "
            "against the pipe sends on duplicate ACKs whatever it says (in TcpSocketBase::DupAck it "
            "only adds ns-3's emulated SACK block when SACK is off).\n"
            if same
            else "changes the row: the flag acts with SACK too.\n"
        )
    ]


def full_emulation(exps: dict) -> list[str]:
    """The SACK points with latlab set to every ns-3 behaviour the experiments found (per congestion control, the
    experiment in FULL_EMULATION): how many are inside the goal, and which are not; then the same with the window
    against the pipe as well (FULL_PIPE)."""

    def bullets(mapping: dict) -> tuple[list[str], int, int]:
        lines, inside, total = [], 0, 0
        for cc_, exp in mapping.items():
            for f in sorted({k[0] for k, e in exps.items() if exp in e and k[2] == cc_}):
                pts = loss_gaps_by_cc(exps, exp, "sack", f).get(cc_, [])
                if not pts:
                    continue
                out_ = [x for x in pts if not (abs(x[1]) <= 10 and abs(x[2]) <= 5)]
                inside += len(pts) - len(out_)
                total += len(pts)
                lines.append(
                    f"* {cc_}, {f} flows (*{exp}*): loss within 10% and goodput within 5% at "
                    f"{len(pts) - len(out_)} of {len(pts)} points"
                    + (
                        ": outside, "
                        + ", ".join(
                            f"{x[0]} (loss {fmt_pct(x[1])}, goodput {fmt_pct(x[2])})" for x in out_
                        )
                        if out_
                        else ""
                    )
                    + "."
                )
        return lines, inside, total

    lines, inside, total = bullets(FULL_EMULATION)
    if not lines:
        return []
    out = [
        "## latlab with every ns-3 behaviour found switched on\n",
        "The SACK points once more, latlab set to every ns-3 3.44 behaviour the experiments above found to "
        "matter, each an opt-in latlab setting: the timer and ssthresh rules (`rto_restart_on_fast_retransmit = "
        "false`, `ssthresh_from_pipe = true`, `rto_backoff_reset_on_ack = true`) and, for NewReno, "
        "TcpNewReno's per-ACK increase (`per_ack_increase = 1`), for CUBIC the four TcpCubic departures from RFC "
        "9438 (`alpha_switch = 0`, `whole_segments = 1`, `target_min_rtt = 1`, `timeout_keeps_w_max = 1`). The "
        "ns-3 side is the SACK rows, unchanged; means over seeds where several ran.\n",
    ] + lines
    out += ["", f"In all: {inside} of {total} points inside the goal.\n"]
    pipe, p_in, p_tot = bullets(FULL_PIPE)
    if pipe:
        out += [
            "With ns-3's window against the pipe as well (`window_from_pipe = true`, the last two sections "
            "with tables):\n"
        ] + pipe
        out += ["", f"In all: {p_in} of {p_tot} points inside the goal.\n"]
    rtt, r_in, r_tot = bullets(FULL_PIPE_RTT)
    if rtt:
        out += [
            "With an RTT sample per ACK as well (`timestamps = true`, which in latlab only changes RTT "
            "measurement: ns-3 takes a sample from every ACK of new data without timestamps, latlab times one "
            "segment per RTT; the one-flow paragraph above says why it matters together with the window):\n"
        ]
        out += rtt + ["", f"In all: {r_in} of {r_tot} points inside the goal.\n"]
    return out


def sack_gap_closers(exps: dict) -> dict:
    """For each SACK point (flows, buffer, cc, queue) outside the goal, averaged over its seeds: the experiments
    layered on the SACK rows that bring it inside (an empty list where none does)."""
    return {
        g: [n for n, r in tried if abs(r[0]) <= 5 and abs(r[1]) <= 10]
        for g, (_base_gap, tried) in sack_gaps(exps).items()
    }


def sack_gaps(exps: dict) -> dict:
    """Each SACK point outside the goal → (its gap over seeds, [(experiment, its gap)] for every layered experiment
    run there); a gap is (goodput %, loss %, loss latlab, loss ns-3, drops latlab, drops ns-3)."""

    def gap(k_points: list, lat_exp: str, ns_exp: str):
        la = [exps[k][lat_exp]["latlab"] for k in k_points if "latlab" in exps[k].get(lat_exp, {})]
        na = [exps[k][ns_exp]["ns-3"] for k in k_points if "ns-3" in exps[k].get(ns_exp, {})]
        if not la or not na or len(la) != len(na):
            return None
        m = lambda rows, f: sum(r[f] for r in rows) / len(rows)  # noqa: E731
        return (
            rel(m(la, "goodput_mbps"), m(na, "goodput_mbps")),
            rel(m(la, "loss_rate"), m(na, "loss_rate")),
            m(la, "loss_rate"),
            m(na, "loss_rate"),
            m(la, "core_drops_pkts"),
            m(na, "core_drops_pkts"),
        )

    points: dict = {}
    for k, e in exps.items():
        if "latlab" in e.get("sack", {}) and "ns-3" in e.get("sack", {}):
            points.setdefault((k[0], k[1], k[2], k[3]), []).append(k)
    layered = [(n, "sack") for n in LAYERED if LAYERED[n] == "sack"] + [
        ("sack", n) for n in NS3_LAYERED
    ]
    out = {}
    for g, k_points in points.items():
        base_gap = gap(k_points, "sack", "sack")
        if base_gap is None or (abs(base_gap[0]) <= 5 and abs(base_gap[1]) <= 10):
            continue
        tried = []
        for lat_exp, ns_exp in layered:
            r = gap(k_points, lat_exp, ns_exp)
            if r is not None:
                tried.append((lat_exp if ns_exp == "sack" else ns_exp, r))
        out[g] = (base_gap, tried)
    return out


def remaining_gaps(exps: dict) -> list[str]:
    """Every SACK point outside the issue's goal (goodput within 5%, loss within 10%), and which experiment layered
    on the SACK rows, if any, brings it inside."""
    lines = []
    order = lambda g: (g[0], g[3], g[1].endswith("KB"), float(g[1].lower().rstrip("bdpk")), g[2])  # noqa: E731
    table = sack_gaps(exps)
    for g in sorted(table, key=order):
        base_gap, tried = table[g]
        closed = [n for n, r in tried if abs(r[0]) <= 5 and abs(r[1]) <= 10]
        label = f"{g[0]} flows {g[1]} {g[2]}" + ("" if g[3] == "droptail" else f" {g[3]}")
        what = (
            f"goodput {fmt_pct(base_gap[0])}, loss {100 * base_gap[2]:.3f}% / {100 * base_gap[3]:.3f}% "
            f"({fmt_pct(base_gap[1])}"
            + (
                f"; {base_gap[4]:.0f} vs {base_gap[5]:.0f} drops in the window"
                if base_gap[5] < 100
                else ""
            )
            + ")"
        )
        loss_only = [(n, r) for n, r in tried if abs(r[1]) <= 10 and n not in closed]
        if closed:
            status = "inside with " + ", ".join(
                f"*{n}* ({CAUSES[n]}; goodput {fmt_pct(r[0])}, loss {fmt_pct(r[1])})"
                if n in CAUSES
                else f"*{n}*"
                for n, r in tried
                if n in closed
            )
        elif loss_only:
            status = (
                "loss inside with "
                + ", ".join(f"*{n}* (goodput then {fmt_pct(r[0])})" for n, r in loss_only)
                + ", goodput not: **partly explained**"
            )
        elif tried:
            best = min(tried, key=lambda x: abs(x[1][1]))
            status = (
                f"no experiment brings it inside (closest loss: *{best[0]}* {fmt_pct(best[1][1])}, goodput "
                f"{fmt_pct(best[1][0])}): **unexplained**"
            )
        else:
            status = "no experiment run: **unexplained**"
        lines.append(f"* {label}: {what}; {status}.")
    if not lines:
        return []
    return (
        [
            "## Where the SACK gaps stand\n",
            "Every point of the SACK table outside the goal (goodput within 5%, loss within 10% relative), and "
            "whether an experiment above, each one setting changed on one side, brings it inside; means over "
            "seeds where several ran.\n",
        ]
        + lines
        + [""]
    )


def retries_paragraph(exps: dict) -> list[str]:
    """How far ns-3's own rows move when its data-retry limit is lifted."""
    pairs = [
        (k, e["sack"]["ns-3"], e["sack-ns3-data-retries"]["ns-3"])
        for k, e in sorted(exps.items())
        if "ns-3" in e.get("sack", {}) and "ns-3" in e.get("sack-ns3-data-retries", {})
    ]
    if not pairs:
        return []
    moves = [abs(rel(b["loss_rate"], a["loss_rate"])) for _, a, b in pairs]
    zeros = lambda r: sum(1 for x in r["per_flow_goodput_bps"] if x == 0)  # noqa: E731
    za, zb = sum(zeros(a) for _, a, _ in pairs), sum(zeros(b) for _, _, b in pairs)
    return [
        f"Lifting the limit moves ns-3's own loss by at most {max(moves):.1f}% (relative) at these "
        f"{len(pairs)} points, and its flows with no goodput in the window from {za} to {zb} (summed over the "
        f"points): the data-retry limit does not explain the loss gap"
        + (", and most of ns-3's idle flows are not dropped connections." if zb > za / 2 else ".")
        + "\n"
    ]


def layered_paragraph(
    exps: dict, exp: str, cause: str, base: tuple[str, str] | None = None
) -> list[str]:
    """Per flow count and congestion control: the loss gaps of a latlab-only experiment layered on the SACK rows,
    against `base` (experiment, label) if given, else the timer rows where they exist (10 flows), else the SACK
    rows."""
    flow_counts = sorted({k[0] for k, e in exps.items() if exp in e})
    out = []
    for f in flow_counts:
        after = loss_gaps_by_cc(exps, exp, "sack", f)
        if base and isinstance(base[0], dict):  # a base experiment per congestion control
            before = {
                cc_: loss_gaps_by_cc(exps, e, "sack", f).get(cc_, []) for cc_, e in base[0].items()
            }
            before_name = base[1]
        elif base:
            before, before_name = loss_gaps_by_cc(exps, base[0], "sack", f), base[1]
        else:
            timer = loss_gaps_by_cc(exps, "sack-rfc6298-timer", "sack", f) if "timer" in exp else {}
            before, before_name = (
                (timer, "timer alone")
                if timer
                else (loss_gaps_by_cc(exps, "sack", "sack", f), "SACK rows")
            )
        parts = []
        for cc_, pts in sorted(after.items(), key=lambda x: x[0] != "newreno"):
            prev_pts = {x[0]: x for x in before.get(cc_, [])}
            ok = sum(abs(x[1]) <= 10 for x in pts)
            good = sum(abs(x[2]) <= 5 for x in pts)
            was = sum(abs(prev_pts[x[0]][1]) <= 10 for x in pts if x[0] in prev_pts)
            gaps_ = ", ".join(
                f"{x[0]} {fmt_pct(prev_pts[x[0]][1]) + ' → ' if x[0] in prev_pts else ''}{fmt_pct(x[1])}"
                for x in pts
            )
            off = [f"{x[0]} {fmt_pct(x[2])}" for x in pts if abs(x[2]) > 5]
            same = all(
                x[0] in prev_pts
                and abs(prev_pts[x[0]][1] - x[1]) < 0.05
                and abs(prev_pts[x[0]][2] - x[2]) < 0.05
                for x in pts
            )
            verdict = (
                f"the rows do not change ({before_name} → this identical), so this setting does not act here"
                if same
                else f"the loss gap closes, so it is explained by {cause}"
                if ok == len(pts)
                else "with this setting the loss gap does not close"
                if ok <= was
                else "the loss gap closes at some points only"
            )
            parts.append(
                f"{cc_}: loss within 10% at {ok} of {len(pts)} points ({before_name}: {was}); loss gaps "
                f"({before_name} → this) {gaps_}; goodput within 5% at {good} of {len(pts)}"
                + (f" (not at {', '.join(off)})" if off else "")
                + f": {verdict}."
            )
        by_q: dict = {}
        for cc_, pts in after.items():
            prev_pts = {x[0]: x for x in before.get(cc_, [])}
            for x in pts:
                q = x[0].split(" ")[1] if " " in x[0] else "droptail"
                c = by_q.setdefault(q, [0, 0, 0])
                c[0] += abs(x[1]) <= 10
                c[1] += x[0] in prev_pts and abs(prev_pts[x[0]][1]) <= 10
                c[2] += 1
        if len(by_q) > 1:
            parts.append(
                "By core queue: "
                + ", ".join(
                    f"{q} loss within 10% at {c[0]} of {c[2]} ({before_name}: {c[1]})"
                    for q, c in sorted(by_q.items())
                )
                + "."
            )
        out.append(f"At {f} flows, by congestion control: " + " ".join(parts) + "\n")
    return out


def sack_section(
    exps: dict,
    lat_exp: str = "sack",
    ns_exp: str = "sack",
    title: str = "The grid with SACK on both sides",
    intro: str = SACK_INTRO,
    zero_flows: bool = False,
) -> list[str]:
    """The grid again with SACK on both sides (experiment "sack"): the recovery both simulators share.

    Points run with several seeds (each seed draws its own access delays and start times, the same on both
    sides) are one row: the means over seeds, and each simulator's range, so a difference can be set against
    the run-to-run spread. `lat_exp` / `ns_exp` pick the experiments whose latlab and ns-3 rows are compared
    (an experiment that changes latlab only is set against the ns-3 rows of the one it builds on)."""
    groups: dict = {}
    for k, e in exps.items():
        la, na = e.get(lat_exp, {}), e.get(ns_exp, {})
        if "latlab" in la and "ns-3" in na:
            groups.setdefault((k[0], k[1], k[2], k[3]), []).append((k[4], la["latlab"], na["ns-3"]))
    if not groups:
        return []
    out = [
        f"## {title}\n",
        intro,
        "| flows | buffer (B pkts) | cc | seeds | goodput Mb/s latlab / ns-3 (Δ) | loss % latlab / ns-3 (Δ rel) | "
        "loss ranges over seeds | retx latlab / ns-3 | RTOs latlab / ns-3 | Jain latlab / ns-3 |"
        + (" zero flows latlab / ns-3 |" if zero_flows else ""),
        "|---|---|---|---|---|---|---|---|---|---|" + ("---|" if zero_flows else ""),
    ]

    def zeros(rows: list[dict]) -> float:
        return sum(sum(1 for x in r["per_flow_goodput_bps"] if x == 0) for r in rows) / len(rows)

    def mean(rows: list[dict], m: str) -> float:
        return sum(r[m] for r in rows) / len(rows)

    within = loss10 = good = overlap_n = multi = 0
    rto10 = [0.0, 0.0]  # mean RTOs summed over the 10-flow rows: latlab, ns-3
    for g in sorted(
        groups,
        key=lambda g: (g[0], g[3], g[1].endswith("KB"), float(g[1].lower().rstrip("bdpk")), g[2]),
    ):
        runs = sorted(groups[g], key=lambda x: x[0])
        lats, nss = [r[1] for r in runs], [r[2] for r in runs]
        lat = {
            m: mean(lats, m)
            for m in ("goodput_mbps", "loss_rate", "retransmitted_segments", "timeouts", "jain")
        }
        ns = {
            m: mean(nss, m)
            for m in ("goodput_mbps", "loss_rate", "retransmitted_segments", "timeouts", "jain")
        }
        gp = gaps(lat, ns)
        within += not over(gp)
        loss10 += abs(gp["loss"]) <= 10
        good += abs(gp["goodput"]) <= 5
        ranges = "–"
        if len(runs) > 1:
            multi += 1
            lo_l, hi_l = min(r["loss_rate"] for r in lats), max(r["loss_rate"] for r in lats)
            lo_n, hi_n = min(r["loss_rate"] for r in nss), max(r["loss_rate"] for r in nss)
            ov = lo_l <= hi_n and lo_n <= hi_l
            overlap_n += ov
            ranges = (
                f"[{100 * lo_l:.3f}, {100 * hi_l:.3f}] / [{100 * lo_n:.3f}, {100 * hi_n:.3f}]"
                + (" overlap" if ov else " apart")
            )
        if g[0] == 10:
            rto10[0] += lat["timeouts"]
            rto10[1] += ns["timeouts"]
        seeds = ",".join(str(r[0]) for r in runs)
        cc = g[2] if g[3] == "droptail" else f"{g[2]}, {g[3]}"
        out.append(
            f"| {g[0]} | {g[1]} ({lats[0]['buffer_pkts']}) | {cc} | {seeds} | {lat['goodput_mbps']:.3f} / "
            f"{ns['goodput_mbps']:.3f} ({fmt_pct(gp['goodput'])}) | {100 * lat['loss_rate']:.3f} / "
            f"{100 * ns['loss_rate']:.3f} ({fmt_pct(gp['loss'])}) | {ranges} | "
            f"{lat['retransmitted_segments']:.0f} / {ns['retransmitted_segments']:.0f} | "
            f"{lat['timeouts']:.0f} / {ns['timeouts']:.0f} | {lat['jain']:.3f} / {ns['jain']:.3f} |"
            + (f" {zeros(lats):.0f} / {zeros(nss):.0f} |" if zero_flows else "")
        )
    n = len(groups)
    label = "With SACK on" if lat_exp == ns_exp else f"latlab *{lat_exp}* against ns-3 *{ns_exp}*"
    out += [
        "",
        f"{label}: goodput within 5% at {good} of {n} points, loss within 10% (relative) at {loss10} of "
        f"{n}, both within 5% at {within}."
        + (
            f" Of the {multi} points run with several seeds, the two simulators' loss ranges overlap at "
            f"{overlap_n}."
            if multi
            else ""
        )
        + (
            f" RTOs at 10 flows (means over seeds, summed over the points): latlab {rto10[0]:.0f}, ns-3 "
            f"{rto10[1]:.0f} ({rto10[1] / rto10[0]:.1f}×)."
            if rto10[0] > 0
            else ""
        )
        + "\n",
    ]
    return out


def render(rows: list[dict], command: str) -> str:
    aqm_rows = [r for r in rows if r["qdisc"] in AQM_QDISCS]
    rows = [r for r in rows if r["qdisc"] not in AQM_QDISCS]
    bbr_rows = [r for r in rows if r["cc"] == "bbr"]
    rows = [r for r in rows if r["cc"] != "bbr"]
    base = {}
    exps = {}
    for r in rows:
        pt = Point.of_row(r)
        if r["experiment"] == "base":
            base.setdefault(pt.key(), {})[r["simulator"]] = r
        else:
            exps.setdefault(pt.key(), {}).setdefault(r["experiment"], {})[r["simulator"]] = r
    version = next((r["version"] for r in rows if r.get("version")), "ns-3 (not run)")
    out = [
        "# latlab against ns-3 on a dumbbell grid\n",
        f"Generated by `{command}` (re-render without simulating: `--from-jsonl docs/validation/ns3.jsonl "
        f"--markdown docs/validation/ns3.md`). ns-3 is {version} (PyPI package `ns3`), run by "
        "benches/validation/ns3_twin.py in a subprocess; the raw rows, per-flow goodputs included, are in "
        "ns3.jsonl beside this page.\n",
        "## Matched settings\n",
        "| setting | latlab | ns-3 | note |",
        "|---|---|---|---|",
    ]
    out += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in SETTINGS]
    out += [
        "",
        "B (core buffer, packets) = the factor × the BDP (core rate × the flows' mean two-way propagation "
        f"delay, in {WIRE_DATA_BYTES}-B packets), at least 1; `10KB` = 10 packets of 1000 B. Loss = drops / "
        "arrivals at the core queue in the window; queue = core queue length (packets) sampled every "
        f"{SAMPLE_INTERVAL_MS} ms in the window; retransmitted segments and timeouts over the whole run (ns-3: "
        "data segments sent at or below the socket's highest sequence; timeouts = entries into CA_LOSS, so "
        "back-to-back RTOs of one loss episode count once there). Wall = the simulation run alone "
        "(ns-3: Simulator::Run; latlab: the core's run in a sweep worker, as the sweep records it; rows from "
        "before the sweep runner: `latlab.run`), on a 2-core VM shared with other jobs; ratio = ns-3 / "
        "latlab.\n",
        "## The grid\n",
        "| flows | buffer (B pkts) | cc | seed | goodput Mb/s latlab / ns-3 (Δ) | loss % latlab / ns-3 (Δ rel) | "
        "retx latlab / ns-3 | RTOs latlab / ns-3 | queue mean latlab / ns-3 | queue p95 latlab / ns-3 | "
        "Jain latlab / ns-3 | wall s latlab / ns-3 (ratio) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    flagged = []
    agree = total = 0
    for k in sorted(
        base,
        key=lambda k: (k[0], k[1].endswith("KB"), float(k[1].lower().rstrip("bdpk")), k[2], k[4]),
    ):
        b = base[k]
        lat, ns = b.get("latlab"), b.get("ns-3")
        if not lat:
            continue
        cc = k[2] if k[3] == "droptail" else f"{k[2]}, {k[3]}"
        head = f"| {k[0]} | {k[1]} ({lat['buffer_pkts']}) | {cc} | {k[4]} |"
        if not ns:
            out.append(
                head
                + f" {lat['goodput_mbps']:.3f} / – | {100 * lat['loss_rate']:.3f} / – | "
                + " | ".join(
                    f"{lat[m]} / –"
                    for m in (
                        "retransmitted_segments",
                        "timeouts",
                        "queue_mean_pkts",
                        "queue_p95_pkts",
                        "jain",
                    )
                )
                + f" | {lat['wall_s']:.2f} / – |"
            )
            continue
        g = gaps(lat, ns)
        total += 1
        if over(g):
            flagged.append((k, lat, ns, g))
        else:
            agree += 1
        ratio = ns["wall_s"] / lat["wall_s"] if lat["wall_s"] > 0 else float("nan")
        out.append(
            head
            + f" {lat['goodput_mbps']:.3f} / {ns['goodput_mbps']:.3f} ({fmt_pct(g['goodput'])}) | "
            f"{100 * lat['loss_rate']:.3f} / {100 * ns['loss_rate']:.3f} ({fmt_pct(g['loss'])}) | "
            + " | ".join(
                f"{lat[m]} / {ns[m]}"
                for m in ("retransmitted_segments", "timeouts", "queue_mean_pkts", "queue_p95_pkts")
            )
            + f" | {lat['jain']:.3f} / {ns['jain']:.3f}"
            + f" | {lat['wall_s']:.2f} / {ns['wall_s']:.2f} ({ratio:.0f}×) |"
        )
    ratios = sorted(
        base[k]["ns-3"]["wall_s"] / base[k]["latlab"]["wall_s"]
        for k in base
        if "ns-3" in base[k] and "latlab" in base[k] and base[k]["latlab"]["wall_s"] > 0
    )
    out += ["", f"Goodput and loss both within 5% at {agree} of {total} points compared."]
    if ratios:
        out.append(
            f"ns-3 took {ratios[len(ratios) // 2]:.0f}× latlab's wall time at the median point "
            f"({ratios[0]:.0f}–{ratios[-1]:.0f}×)."
        )
    out.append("")
    out += sack_section(exps)
    out += sack_section(
        exps,
        "sack-rfc6298-timer",
        LAYERED["sack-rfc6298-timer"],
        "SACK on both sides, latlab's timer as RFC 6298 and ns-3",
        TIMER_INTRO,
    )
    out += sack_section(
        exps,
        "sack-rfc6298-timer-pipe-ssthresh",
        LAYERED["sack-rfc6298-timer-pipe-ssthresh"],
        "SACK on both sides, latlab's timer as RFC 6298, ssthresh from the pipe as ns-3",
        PIPE_INTRO,
    )
    out += pipe_paragraph(exps)
    out += sack_section(
        exps,
        "sack-rto-backoff-reset",
        LAYERED["sack-rto-backoff-reset"],
        "SACK on both sides, latlab's RTO backoff dropped at every new ACK as ns-3",
        BACKOFF_INTRO,
    )
    out += layered_paragraph(
        exps, "sack-rto-backoff-reset", "ns-3 dropping the RTO backoff at every new ACK"
    )
    out += sack_section(
        exps,
        "sack-ns3-timer-rules",
        LAYERED["sack-ns3-timer-rules"],
        "SACK on both sides, latlab's timer and ssthresh rules all as ns-3",
        ALL3_INTRO,
    )
    out += layered_paragraph(
        exps, "sack-ns3-timer-rules", "ns-3's timer and ssthresh rules together"
    )
    if any("sack-ns3-cubic" in e for e in exps.values()):
        out.append(
            "The CUBIC loss gap left at 10 flows is taken up in the next sections, each one TcpCubic behaviour "
            "switched on in latlab on top of these rules.\n"
        )
    for name, title, intro, cause in CUBIC_SECTIONS:
        out += sack_section(exps, name, LAYERED[name], title, intro)
        out += layered_paragraph(exps, name, cause, TIMER_RULES)
    for name, title, base_exp, base_label, intro, cause in NEWRENO_SECTIONS:
        out += sack_section(exps, name, LAYERED[name], title, intro)
        out += layered_paragraph(exps, name, cause, (base_exp, base_label))
    for i, (name, title, cause) in enumerate(WINDOW_SECTIONS):
        out += sack_section(
            exps,
            name,
            LAYERED[name],
            title,
            WINDOW_INTRO if i == 0 else "As the previous section, for NewReno.\n",
        )
        out += layered_paragraph(exps, name, cause, (FULL, "every ns-3 rule found before"))
    out += limited_transmit_check(exps)
    out += sack_section(
        exps,
        NS3_LAYERED["sack-ns3-data-retries"],
        "sack-ns3-data-retries",
        "SACK on both sides, ns-3 without its data-retry limit",
        RETRIES_INTRO,
        zero_flows=True,
    )
    out += retries_paragraph(exps)
    for name, intro in TWIN_INTROS.items():
        title = {
            "sack-ns3-red-thresholds-unshifted": "RED twin with latlab's thresholds unshifted",
            "sack-ns3-codel-target-5ms": "CoDel twin with Target 5 ms",
        }[name]
        out += sack_section(exps, NS3_LAYERED[name], name, title, intro)
    other = [(n, b, w) for n, b, w in OTHER_EXPERIMENTS if any(n in e for e in exps.values())]
    if other:
        out += [
            "## Other latlab-only experiments\n",
            "Further settings changed on latlab's side only, each against the ns-3 SACK rows (unchanged), "
            "summarised without their tables (the rows are in ns3.jsonl).\n",
        ]
        for name, base_, what in other:
            out.append(f"*{name}*: {what}.\n")
            out += layered_paragraph(exps, name, CAUSES[name], base_)
    out += explanations(exps)
    out += full_emulation(exps)
    out += remaining_gaps(exps)
    out += ["## Points where goodput or loss differs by more than 5%\n"]
    if not flagged:
        out.append("None.\n")
    closers = sack_gap_closers(exps)
    # A byte buffer that comes to the same B as a BDP factor is the same run (the Coverage note): its experiments
    # are the twin's.
    same_run = {}
    for k in base:
        if k[1].endswith("KB") and "latlab" in base[k]:
            for t in base:
                if (
                    (t[0], t[2], t[3], t[4]) == (k[0], k[2], k[3], k[4])
                    and not t[1].endswith("KB")
                    and "latlab" in base[t]
                    and base[t]["latlab"]["buffer_pkts"] == base[k]["latlab"]["buffer_pkts"]
                ):
                    same_run[k] = t
    for k, lat, ns, g in flagged:
        what = " and ".join(f"{m} {fmt_pct(g[m])}" for m in over(g))
        if "loss" in over(g) and "core_drops_pkts" in lat and "core_drops_pkts" in ns:
            what += f" ({lat['core_drops_pkts']} vs {ns['core_drops_pkts']} drops in the window)"
        lines = [
            f"* **{k[0]} flows, {k[1]} ({lat['buffer_pkts']} pkts), {k[2]}{'' if k[3] == 'droptail' else ', ' + k[3]}, seed {k[4]}**: {what} "
            f"(latlab − ns-3, relative to ns-3)."
        ]
        closed = False
        twin = same_run.get(k) if not exps.get(k) else None
        if twin:
            lines.append(
                f"  The same run as {twin[1]} (B = {lat['buffer_pkts']} packets); its experiments:"
            )
        k_exp = twin or k
        for name, sides in sorted(exps.get(k_exp, {}).items()):
            if name in LAYERED or name in NS3_LAYERED or name in PAIRED_NAMES:
                continue  # compared in its own section, against the experiment it builds on
            el, en = sides.get("latlab", lat), sides.get("ns-3", ns)
            changed = "; ".join(f"{s}: {json.dumps(r['overrides'])}" for s, r in sides.items())
            g2 = gaps(el, en)
            ok = not over(g2)
            closed |= ok
            lines.append(
                f"  experiment *{name}* ({changed}): goodput {fmt_pct(g['goodput'])} → "
                f"{fmt_pct(g2['goodput'])}, loss {fmt_pct(g['loss'])} → {fmt_pct(g2['loss'])}: "
                + ("the gap closes (both within 5%)." if ok else "the gap does not close.")
            )
        sack = exps.get(k_exp, {}).get("sack")
        sack_closed = bool(
            sack
            and "latlab" in sack
            and "ns-3" in sack
            and not over(gaps(sack["latlab"], sack["ns-3"]))
        )
        # With SACK on both sides, the point's gap over seeds is the SACK table's; which layered experiment closes
        # it is in "Where the SACK gaps stand" (no entry there: inside the goal over seeds).
        g_sack = (k_exp[0], k_exp[1], k_exp[2], k_exp[3])
        sack_chain = sack is not None and (g_sack not in closers or closers[g_sack])
        chain_what = (
            "inside the goal over its seeds"
            if g_sack not in closers
            else "inside with " + ", ".join(f"*{n}*" for n in closers.get(g_sack, []))
        )
        status = (
            "explained: the gap is in the no-SACK loss recovery, where ns-3 does not run RFC 6582 "
            "(ns3-nosack.md); with SACK on both sides it closes"
            if sack_closed
            else "explained by experiment"
            if closed
            else "explained in two steps: the no-SACK part is ns-3's loss recovery (ns3-nosack.md); with SACK on "
            f"both sides the point is {chain_what} (Where the SACK gaps stand)"
            if sack_chain
            else "partly explained: with SACK on both sides the point stays outside the goal (Where the SACK gaps "
            "stand)"
            if sack is not None
            else "unexplained (experiments above did not close it)"
            if exps.get(k_exp)
            else "unexplained (no experiment yet)"
        )
        lines[0] += f" Status: **{status}**."
        out += lines
    out += ["", "## Experiments, by setting changed\n"]
    summary: dict = {}
    for k, lat, ns, g in flagged:
        for name, sides in exps.get(k, {}).items():
            if name in LAYERED or name in NS3_LAYERED or name in PAIRED_NAMES:
                continue
            g2 = gaps(sides.get("latlab", lat), sides.get("ns-3", ns))
            changed = "; ".join(
                f"{s_}: {json.dumps(r['overrides'])}" for s_, r in sorted(sides.items())
            )
            e = summary.setdefault(name, {"changed": changed, "closed": [], "open": []})
            (e["open"] if over(g2) else e["closed"]).append(f"{k[0]} flows {k[1]} {k[2]}")
    if not summary:
        out.append("None run yet.")
    for name, e in sorted(summary.items()):
        n = len(e["closed"]) + len(e["open"])
        out.append(
            f"* *{name}* ({e['changed']}): run at {n} flagged point(s); the gap closes at {len(e['closed'])}"
            + (f" ({', '.join(e['closed'])})" if e["closed"] else "")
            + (f" and stays at {', '.join(e['open'])}" if e["open"] else "")
            + "."
        )
    prr = [
        (k, lat, ns, gaps(exps[k]["prr"].get("latlab", lat), exps[k]["prr"].get("ns-3", ns)))
        for k, lat, ns, g in flagged
        if "prr" in exps.get(k, {})
    ]
    nr = [x for x in prr if x[0][2] == "newreno"]
    if nr:
        good = [x for x in nr if abs(x[3]["goodput"]) <= 5]
        loss_apart = [x for x in good if not abs(x[3]["loss"]) <= 5]
        label = lambda x: f"{x[0][0]} flows {x[0][1]}"  # noqa: E731
        out.append(
            f"\nNewReno: with ns-3's default PRR in place of TcpClassicRecovery, the goodput gap falls within "
            f"5% at {len(good)} of the {len(nr)} flagged NewReno points tried"
            + (f" ({', '.join(map(label, good))})" if good else "")
            + "."
            + (
                f" Loss does not follow at {', '.join(map(label, loss_apart))}: there latlab's core loss is "
                "then "
                + ", ".join(f"{fmt_pct(x[3]['loss'])}" for x in loss_apart)
                + " from ns-3's: PRR is "
                "not the whole SACK-off difference (ns3-nosack.md traces the rest; with SACK on both sides "
                "these points are inside the goal, statuses above)."
                if loss_apart
                else ""
            )
            + " A mechanism consistent with the classic-recovery rows (not traced packet by packet): with "
            "SACK off ns-3 still keeps a scoreboard (a fake SACK per duplicate ACK) and computes bytes in "
            "flight from it, while TcpClassicRecovery sets cwnd to ssthresh on entry; once the window's "
            "holes are marked lost the sender may send cwnd − in-flight at once, a line-rate burst from the "
            "10× faster access links into the core queue. PRR (RFC 6937) releases segments in proportion to "
            "the data delivered, closer to latlab's RFC 6582 NewReno, which sends one segment per duplicate "
            "ACK once the inflated window passes the flight. So matching latlab's `newreno` to "
            "TcpClassicRecovery, as the issue asks, is the setting to reconsider before any of these NewReno "
            "rows is called a latlab defect."
        )
    cubic_prr_open = [p_ for p_ in summary.get("prr", {}).get("open", []) if p_.endswith("cubic")]
    if cubic_prr_open:
        out.append(
            "\nFor CUBIC, PRR alone does not close the gap ("
            + ", ".join(cubic_prr_open)
            + "), and HyStart "
            "is not it either where the *hystart* rows exist. What closes them is SACK on both sides "
            "(the SACK-off recovery difference, ns3-nosack.md) and then TcpCubic's own rules, each switched "
            "on in latlab in the sections above; the statuses above name the experiment for each point."
        )
    out += [""] + bbr_section(bbr_rows)
    out += aqm_section([r for r in aqm_rows if not r.get("ecn")])
    out += ecn_section(aqm_rows)
    out += ["## Coverage\n"]
    have = {(k[0], k[2], k[3]) for k, b in base.items() if "ns-3" in b}
    flows_run = sorted({k[0] for k in have})
    seeds = sorted({k[4] for k in base} | {k[4] for k in exps})
    # flow counts compared only in an experiment (both sides changed), not on the SACK-off grid
    exp_only: dict = {}
    for k, e in exps.items():
        if k[0] not in flows_run:
            exp_only.setdefault(k[0], set()).update(
                n for n, sides in e.items() if "ns-3" in sides and "latlab" in sides
            )
    exp_only = {f: names for f, names in exp_only.items() if names}
    missing = [f for f in (1, 10, 100, 1000) if f not in flows_run and f not in exp_only]
    same = sorted(
        {
            (k[0], k[2], b["latlab"]["buffer_pkts"])
            for k, b in base.items()
            if k[1].endswith("KB")
            and any(
                k2[0] == k[0]
                and k2[2] == k[2]
                and k2[1] != k[1]
                and b2["latlab"]["buffer_pkts"] == b["latlab"]["buffer_pkts"]
                for k2, b2 in base.items()
            )
        }
    )
    if same:
        out.append(
            "Where a byte buffer resolves to the same B as a BDP factor ("
            + ", ".join(f"{f} flows {cc} B = {bp}" for f, cc, bp in same)
            + "), the two rows are the same run, and an "
            "experiment listed under one applies to the other.\n"
        )
    out.append(
        f"Compared: flows {', '.join(map(str, flows_run)) or 'none'}; seeds {', '.join(map(str, seeds))}; "
        f"queues {', '.join(sorted({k[2] for k in have})) or 'none'} at the core. "
        + "".join(
            f"{f} flows compared only in experiment {', '.join(sorted(names))} (no SACK-off rows; "
            f"{', '.join(sorted({k[1] for k in exps if k[0] == f}, key=lambda b: float(b.lower().rstrip('bdpk'))))}, "
            f"{', '.join(sorted({k[2] for k in exps if k[0] == f}))}, "
            f"{', '.join(sorted({f'{k[5]:g}' for k in exps if k[0] == f}))} s simulated). "
            for f, names in sorted(exp_only.items())
        )
        + (f"Not yet run against ns-3: {', '.join(map(str, missing))} flows. " if missing else "")
        + (
            "".join(
                f"{q} at the core (the issue's 100-flow case) is not in ns3_grid.py yet; "
                for q in ("RED", "CoDel")
                if q.lower() not in {k[2] for k in have}
            )
        )
        + ("a single seed per point, so no point has a spread yet." if len(seeds) < 2 else "")
        + "\n"
    )
    return "\n".join(out) + "\n"


BBR_INTRO = (
    "latlab's BBR (v1, crates/proto/src/cc/bbr.rs, after Linux's tcp_bbr.c) against ns-3's TcpBbr on four points "
    "of the grid: 1 and 10 flows × 1 and 2 BDP DropTail buffers, everything else as the grid (delayed ACKs off, "
    "no timestamps, min RTO 200 ms, the same MSS, headers and initial window on both); the settings that differ "
    "between the two BBRs are the *BBR* rows of the matched-settings table. ns-3's TcpBbr cannot run the grid's "
    "SACK-off twin: with Sack and LimitedTransmit both false, TcpSocketBase::SendPendingData asserts that nothing "
    "is sent in CA_DISORDER (NS_ASSERT at tcp-socket-base.cc line 3532 of the 3.44 wheel), and BBR, which does not "
    "cut cwnd on duplicate ACKs, sends there: the 1-flow 1-BDP run aborts at 7.4 s. The BBR rows are therefore "
    'the grid\'s *sack* experiment, SACK on both sides (latlab `sack = true`, `recovery = "sack"`; ns-3 `Sack` '
    "true with TcpClassicRecovery), as Linux runs BBR. Same rule as the grid: goodput and core loss both within "
    "5% (loss relative to ns-3's). The flow-0 columns are the means over the window of flow 0's samples every "
    f"{SAMPLE_INTERVAL_MS} ms: cwnd (segments) and srtt (ns-3's traced), from the rows' `flow0_samples` in "
    "ns3.jsonl (each sample also holds latlab's sending rate and ns-3's traced pacing rate, Mb/s). Each row also "
    "holds `bbr_flows`: every flow's BBR model over the window, sampled at the same interval (latlab: its "
    "`cc_samples` table; ns-3: TcpBbr's MinRtt trace, gains and mode beside the socket's cwnd, BytesInFlight, "
    "pacing rate and srtt, bw derived from the pacing rate and the gain, the cwnd target as cwnd_gain × bw × "
    "min_rtt + 3 segments, its ACK-aggregation allowance under 4096 B left out), which the notes below are "
    "written from.\n"
)
BBR_COMMAND = (
    "python benches/validation/ns3_grid.py --cc bbr --flows 1,10 --buffers 1bdp,2bdp --duration 40 "
    "--measure-from 10 --jobs 2 --experiment sack --latlab-set tcp.sack=true --latlab-set tcp.recovery=sack "
    "--ns3-set sack=true --jsonl docs/validation/ns3.jsonl"
)

# latlab-only BBR experiments: name -> (the experiment whose ns-3 row they are compared with, what changes).
BBR_EXPERIMENTS = {
    "sack-no-lt-bw": (
        "sack",
        "latlab's long-term (policer) bandwidth sampling off (`cc_params` `lt_bw = 0`), which ns-3's TcpBbr does "
        "not have. Run by the same command with `--only latlab --experiment sack-no-lt-bw --latlab-set bbr.lt_bw=0` "
        "and the flows at 10.",
    ),
    "sack-window-pipe": (
        "sack",
        "latlab's window checked against the RFC 6675 pipe in every state (`window_from_pipe = true`), as ns-3's "
        "TcpSocketBase::AvailableWindow (cwnd − BytesInFlight) and Linux's tcp_packets_in_flight do (matched-settings "
        "row *window outside recovery (SACK)*). Run by the same command with `--only latlab --experiment "
        "sack-window-pipe --latlab-set tcp.window_from_pipe=true` and the flows at 10.",
    ),
    "sack-ns3-timestamps": (
        "sack",
        "ns-3 with TCP timestamps (RFC 7323) on, so that an RTT sample is read from the echoed timestamp of the "
        "segment the ACK answers (TcpSocketBase::CalculateRttSample), the repairing retransmission's, and no "
        "longer from the send time of the highest segment the cumulative ACK covers; its headers grow by the "
        "12-byte option (1014-byte packets on the wire where latlab's are 1002). Run by the same command with "
        "`--only ns-3 --experiment sack-ns3-timestamps --ns3-set timestamps=true` and the flows at 10.",
    ),
    "sack-ns3-tcp-rules": (
        "sack",
        "latlab's sender with every TCP rule the matched-settings table lists as ns-3 3.44's: the window against "
        "the pipe, ssthresh from the pipe, the RTO backoff dropped on every ACK of new data, no RFC 6675 rescue "
        "retransmission and no RTO restart at a fast retransmit. Run by the same command with `--only latlab "
        "--experiment sack-ns3-tcp-rules --latlab-set tcp.window_from_pipe=true --latlab-set "
        "tcp.ssthresh_from_pipe=true --latlab-set tcp.rto_backoff_reset_on_ack=true --latlab-set "
        "tcp.rescue_retransmission=false --latlab-set tcp.rto_restart_on_fast_retransmit=false` and the flows at 10.",
    ),
    "sack-ns3-bbr-linux-recovery": (
        "sack",
        "ns-3's TcpBbr with Linux's cwnd around loss recovery (`bbr_set_cwnd_to_recover_or_restore`): packet "
        "conservation for a whole round after entering fast recovery, where TcpBbr ends it at the next round start "
        "(it does not move the round's end to the current delivered count), and the saved cwnd restored on leaving "
        "fast recovery or a timeout's loss state, where TcpSocketBase sets cwnd = ssthresh (the BDP estimate "
        "TcpBbr left there when STARTUP ended) and TcpBbr restores nothing after a timeout. (TcpSocketBase skips its "
        "recovery ops, TcpClassicRecovery or PRR, for a controller with CongControl: they set no cwnd on duplicate "
        "or partial ACKs.) A subclass of TcpBbr in "
        "the harness (ns3_twin.py, `bbr_recovery`); ns-3 itself unchanged. Run by the same command with `--only "
        "ns-3 --experiment sack-ns3-bbr-linux-recovery --ns3-set bbr_recovery=linux` and the flows at 10.",
    ),
}

# At seed 1 a flagged BBR point's own note: the explanations are written over every seed (bbr_seed_notes).
BBR_SEED1_NOTE = "One seed of several: read it with the notes over seeds below."


def flow0_window(r: dict) -> list:
    """Flow 0's samples in the window [measure_from, duration), cwnd known."""
    return [x for x in r.get("flow0_samples", []) if x[1] is not None and x[0] < r["duration_s"]]


def flow0_means(r: dict) -> tuple[float, float]:
    """Mean cwnd (segments) and RTT (ms) of flow 0's samples in the window (NaN without samples)."""
    xs = flow0_window(r)
    if not xs:
        return float("nan"), float("nan")
    return sum(x[1] for x in xs) / len(xs), sum(x[3] for x in xs) / len(xs)


def bbr_trace_facts(lat: dict, ns: dict) -> str:
    """What the rows' counters and flow-0 samples say at a BBR point, latlab / ns-3."""
    b = lat["buffer_pkts"]

    def low(r: dict) -> str:
        xs = flow0_window(r)
        return f"{100 * sum(1 for x in xs if x[1] <= 4) / len(xs):.0f}%" if xs else "–"

    share = [min(r["per_flow_goodput_bps"]) / 1e6 for r in (lat, ns)]
    return (
        f"Traces, latlab / ns-3: the core queue holds {lat['queue_mean_pkts'] / b:.0%} / "
        f"{ns['queue_mean_pkts'] / b:.0%} of its {b} packets on average; RTOs {lat['timeouts']} / {ns['timeouts']}; "
        f"flow 0 at cwnd ≤ 4 segments (PROBE_RTT or after a timeout) in {low(lat)} / {low(ns)} of its samples; the "
        f"slowest flow gets {share[0]:.2f} / {share[1]:.2f} Mb/s."
    )


def bbr_model_facts(lat: dict, ns: dict) -> str:
    """What the rows' per-flow BBR models say at a point (`bbr_flows`), latlab / ns-3; empty for rows from before
    the model was recorded."""
    if "bbr_flows" not in lat or "bbr_flows" not in ns:
        return ""
    b = lat["buffer_pkts"]
    per_s = 1000 // SAMPLE_INTERVAL_MS

    def live(r: dict) -> list[dict]:  # flows not starved in timeouts, whose model is in use
        return [
            f
            for f, g in zip(r["bbr_flows"], r["per_flow_goodput_bps"])
            if g >= 0.1e6 and f.get("min_rtt_ms")
        ]

    def excess(r: dict) -> float:
        fs = live(r)
        return sum(f["min_rtt_ms"] - f["base_rtt_ms"] for f in fs) / max(1, len(fs))

    def total(r: dict, k: str) -> float:
        return sum(f.get(k) or 0.0 for f in r["bbr_flows"])

    def share(r: dict, k: str, fs: list | None = None) -> float:
        fs = r["bbr_flows"] if fs is None else fs
        return sum(f.get(k) or 0.0 for f in fs) / max(1, len(fs))

    def drained(r: dict) -> int:
        q = r.get("queue_samples_pkts", [])
        return sum(1 for i in range(0, len(q), per_s) if min(q[i : i + per_s]) < b / 4)

    seconds = len(lat.get("queue_samples_pkts", [])) // per_s
    n = [len(live(r)) for r in (lat, ns)]
    return (
        f"BBR models, latlab / ns-3 (means over the window, every flow sampled every {SAMPLE_INTERVAL_MS} ms, "
        f"`bbr_flows` in ns3.jsonl): min_rtt above the flow's propagation RTT by {excess(lat):.0f} / "
        f"{excess(ns):.0f} ms (the {n[0]} / {n[1]} flows with 0.1 Mb/s or more), and above the largest RTT "
        f"the path can give them (propagation + a full buffer) in {share(lat, 'min_rtt_over_path_max', live(lat)):.1%} "
        f"/ {share(ns, 'min_rtt_over_path_max', live(ns)):.1%} of their samples; bw estimates summed "
        f"{total(lat, 'bw_mbps'):.1f} / {total(ns, 'bw_mbps'):.1f} Mb/s on the {CORE_RATE_BPS / 1e6:g} Mb/s core; "
        f"cwnd targets summed "
        f"{total(lat, 'target_segs'):.0f} / {total(ns, 'target_segs'):.0f} segments against BDP + B = "
        f"{lat['bdp_pkts'] + b:.0f} packets; the queue "
        f"below B/4 in {drained(lat)} / {drained(ns)} of the window's {seconds} seconds; a flow held back (cwnd "
        f"10+ segments above its flight, 2 or fewer in flight) in {share(lat, 'held_back_share'):.1%} / "
        f"{share(ns, 'held_back_share'):.1%} of the samples."
    )


# The BBR seed summary's pairs: (latlab experiment, ns-3 experiment, what differs from the matched pair).
BBR_SEED_PAIRS = (
    ("sack", "sack", "the matched settings"),
    (
        "sack",
        "sack-ns3-timestamps",
        "ns-3 with timestamps: its RTT sample per ACK from the echo, as latlab's and Linux's",
    ),
    ("sack-no-lt-bw", "sack-ns3-timestamps", "also latlab without `lt_bw`, which TcpBbr lacks"),
    (
        "sack-no-lt-bw",
        "sack",
        "latlab without `lt_bw`, which TcpBbr lacks, against ns-3's matched row",
    ),
    ("sack-window-pipe", "sack", "latlab's window against the pipe, as ns-3's"),
    ("sack-window-pipe", "sack-ns3-timestamps", "both of the above"),
    (
        "sack-ns3-tcp-rules",
        "sack",
        "latlab with every TCP rule of ns-3 3.44's the matched-settings table lists",
    ),
    ("sack", "sack-ns3-bbr-linux-recovery", "ns-3's TcpBbr with Linux's cwnd around loss recovery"),
)


# The figures the BBR seed summary averages, in its order.
BBR_SEED_METRICS = (
    "goodput_mbps",
    "loss_rate",
    "queue_mean_pkts",
    "srtt_median_ms",
    "timeouts",
    "jain",
)


def median_srtt_ms(r: dict) -> float:
    """A run's median over its flows of each flow's mean srtt over the window (`bbr_flows`)."""
    return statistics.median(f["srtt_ms"] for f in r["bbr_flows"] if f.get("srtt_ms"))


def _mean_se(xs: list[float]) -> tuple[float, float]:
    m = sum(xs) / len(xs)
    return m, math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1) / len(xs))


def bbr_seed_stats(pts: dict, f: int, buf: str, lat_exp: str, ns_exp: str) -> dict | None:
    """latlab `lat_exp` against ns-3 `ns_exp` at one BBR point over every seed both ran: the means of each side,
    their relative gaps, and the per-seed loss difference in percentage points with its standard error."""
    pairs = [
        (pts[(k, lat_exp)]["latlab"], pts[(k, ns_exp)]["ns-3"])
        for (k, e) in pts
        if e == lat_exp
        and k[:3] == (f, buf, "bbr")
        and "latlab" in pts[(k, lat_exp)]
        and "ns-3" in pts.get((k, ns_exp), {})
    ]
    if len(pairs) < 2:
        return None
    la, na = [p_[0] for p_ in pairs], [p_[1] for p_ in pairs]
    for r in la + na:
        r["srtt_median_ms"] = median_srtt_ms(r)
    m = lambda rows, key: sum(r[key] for r in rows) / len(rows)  # noqa: E731
    d, d_se = _mean_se([100 * (a["loss_rate"] - b["loss_rate"]) for a, b in pairs])
    out = {"n": len(pairs), "d_loss_pp": d, "d_loss_se": d_se}
    for key in BBR_SEED_METRICS:
        out[key] = (m(la, key), m(na, key), rel(m(la, key), m(na, key)))
    return out


def _live_share(r: dict, key: str) -> float:
    """The mean of a per-flow BBR figure over the flows not starved (0.1 Mb/s or more)."""
    fs = [
        f
        for f, g in zip(r["bbr_flows"], r["per_flow_goodput_bps"])
        if g >= 0.1e6 and f.get("min_rtt_ms")
    ]
    return sum(f.get(key) or 0.0 for f in fs) / max(1, len(fs))


def bbr_target_split(pts: dict, f: int, buf: str, factor: float = 1.25) -> dict | None:
    """ns-3's runs at one BBR point (timestamps off and on, every seed) split by whether their flows' cwnd targets
    sum to more than `factor` × (BDP + B): the means of each group and of latlab's *sack* runs."""
    ns_rows = [
        sides["ns-3"]
        for (k, e), sides in pts.items()
        if k[:3] == (f, buf, "bbr") and e in ("sack", "sack-ns3-timestamps") and "ns-3" in sides
    ]
    lat_rows = [
        sides["latlab"]
        for (k, e), sides in pts.items()
        if k[:3] == (f, buf, "bbr") and e == "sack" and "latlab" in sides
    ]
    if len(ns_rows) < 4 or not lat_rows:
        return None

    def over(r: dict) -> bool:
        return sum(x.get("target_segs") or 0.0 for x in r["bbr_flows"]) > factor * (
            r["bdp_pkts"] + r["buffer_pkts"]
        )

    def means(rows: list[dict]) -> dict:
        n = len(rows)
        return {
            "n": n,
            "loss": 100 * sum(r["loss_rate"] for r in rows) / n if n else float("nan"),
            "queue": sum(r["queue_mean_pkts"] for r in rows) / n if n else float("nan"),
            "srtt": sum(r["srtt_median_ms"] for r in rows) / n if n else float("nan"),
            "impossible": 100 * sum(_live_share(r, "min_rtt_over_path_max") for r in rows) / n
            if n
            else float("nan"),
            "loss_min": 100 * min((r["loss_rate"] for r in rows), default=float("nan")),
            "loss_max": 100 * max((r["loss_rate"] for r in rows), default=float("nan")),
            "targets_over": sum(
                sum(x.get("target_segs") or 0.0 for x in r["bbr_flows"])
                / (r["bdp_pkts"] + r["buffer_pkts"])
                for r in rows
            )
            / n
            if n
            else float("nan"),
        }

    for r in ns_rows + lat_rows:
        r["srtt_median_ms"] = median_srtt_ms(r)
    return {
        "factor": factor,
        "over": means([r for r in ns_rows if over(r)]),
        "rest": means([r for r in ns_rows if not over(r)]),
        "latlab": means(lat_rows),
        "latlab_over": sum(over(r) for r in lat_rows),
    }


def bbr_split_sentence(sp: dict) -> str:
    """What the split of ns-3's runs by cwnd targets shows, in one paragraph."""
    o, r, la = sp["over"], sp["rest"], sp["latlab"]
    return (
        f"ns-3's {o['n'] + r['n']} runs here (timestamps off and on, every seed) fall in two groups by their flows' "
        f"cwnd targets (cwnd_gain × bw × min_rtt, summed): in {o['n']} the targets sum to more than "
        f"{sp['factor']:g} × (BDP + B) ({o['targets_over']:.2f} × on average), and the flows' min_rtt lies above "
        f"the largest RTT the path can give (propagation + a full buffer) in {o['impossible']:.1f}% of their "
        f"samples: an RTT no segment sent once can have, which TcpBbr took as min_rtt. Those runs lose "
        f"{o['loss']:.2f}% with a mean queue of {o['queue']:.1f} packets and a median srtt of {o['srtt']:.0f} ms. "
        f"In the other {r['n']} ({r['targets_over']:.2f} × BDP + B; {r['impossible']:.1f}% of samples above the "
        f"path's largest RTT) ns-3 loses {r['loss']:.2f}% with {r['queue']:.1f} packets and {r['srtt']:.0f} ms, "
        f"against latlab's {la['loss']:.2f}%, {la['queue']:.1f} packets and {la['srtt']:.0f} ms over its "
        f"{la['n']} seeds ({la['targets_over']:.2f} × BDP + B, {sp['latlab_over']} run(s) above {sp['factor']:g} ×; "
        f"{la['impossible']:.1f}% of samples above the path's largest RTT). "
        + (
            f"So the gap is ns-3's impossible min_rtt: its other runs' {r['loss']:.2f}% lies within latlab's "
            f"seed-to-seed range ({la['loss_min']:.2f}–{la['loss_max']:.2f}%)."
            if la["loss_min"] <= r["loss"] <= la["loss_max"]
            else f"ns-3's other runs' {r['loss']:.2f}% lies outside latlab's seed-to-seed range "
            f"({la['loss_min']:.2f}–{la['loss_max']:.2f}%): that rest is unexplained."
        )
    )


def _implied_rtt_ratio(rows: list[dict]) -> float:
    """Mean over runs of the median flow's srtt over the RTT the run's queue implies: the flows' mean propagation
    RTT plus the mean queue's transmission time at the core rate."""
    ratios = []
    for r in rows:
        fs = r["bbr_flows"]
        base_ms = sum(f["base_rtt_ms"] for f in fs) / len(fs)
        implied_ms = base_ms + r["queue_mean_pkts"] * WIRE_DATA_BYTES * 8 / CORE_RATE_BPS * 1000
        ratios.append(median_srtt_ms(r) / implied_ms)
    return sum(ratios) / len(ratios)


def _rows_of(pts: dict, f: int, buf: str, exp: str, sim: str) -> list[dict]:
    return [
        sides[sim]
        for (k, e), sides in pts.items()
        if k[:3] == (f, buf, "bbr") and e == exp and sim in sides
    ]


def _rule_misses(st: dict) -> list[str]:
    """The gaps outside the rule of the sim-vs-Linux page: goodput 10 %, mean queue and srtt 15 %."""
    limits = (
        ("goodput", "goodput_mbps", 10.0),
        ("mean queue", "queue_mean_pkts", 15.0),
        ("srtt", "srtt_median_ms", 15.0),
    )
    return [
        f"{name} {fmt_pct(st[key][2])}" for name, key, lim in limits if not abs(st[key][2]) <= lim
    ]


# The experiments that test a cause of a BBR point's loss gap, with the pair they are read against: (latlab
# experiment, ns-3 experiment, what changes from the matched pair).
BBR_LOSS_CHECKS = (
    ("sack", "sack-ns3-timestamps", "ns-3 with timestamps"),
    ("sack-window-pipe", "sack", "latlab's window against the pipe"),
    (
        "sack-ns3-tcp-rules",
        "sack",
        "latlab with every TCP rule of ns-3 3.44's the matched-settings table lists",
    ),
    ("sack", "sack-ns3-bbr-linux-recovery", "ns-3's TcpBbr with Linux's cwnd around recovery"),
    (
        "sack-no-lt-bw",
        "sack",
        "latlab without `lt_bw` (Linux's long-term bandwidth sampling, which paces a flow at gain 1 at its "
        "long-term delivery rate for 48 round trips once two intervals in a row, of 4 or more round trips each, "
        "lose 50/256 (about 20%) or more at about the same rate; TcpBbr lacks it)",
    ),
)

# A loss check that closes at least this share of the matched pair's per-seed loss gap is named as a cause.
BBR_LOSS_CLOSES = 0.25


def bbr_loss_checks(pts: dict, f: int, buf: str, base: dict) -> tuple[str, tuple | None]:
    """Each loss check run at a point (latlab / ns-3 mean loss and the per-seed gap, in BBR_LOSS_CHECKS' order),
    and the one that closes the largest share of the matched pair's per-seed gap: (share, what, its stats)."""
    items, best = [], None
    for lat_exp, ns_exp, what in BBR_LOSS_CHECKS:
        st = bbr_seed_stats(pts, f, buf, lat_exp, ns_exp)
        if st is None:
            continue
        items.append(
            f"{what.split(' (')[0]} {100 * st['loss_rate'][0]:.2f}% / {100 * st['loss_rate'][1]:.2f}% "
            f"({st['d_loss_pp']:+.2f} ± {st['d_loss_se']:.2f} pp)"
        )
        closed = 1 - st["d_loss_pp"] / base["d_loss_pp"] if base["d_loss_pp"] else 0.0
        if best is None or closed > best[0]:
            best = (closed, what, st)
    return "; ".join(items), best


def bbr_loss_verdict(best: tuple | None) -> str:
    """What the loss checks leave of a point's loss gap."""
    if best is None or best[0] < BBR_LOSS_CLOSES:
        share = max(0.0, best[0]) if best else 0.0
        return f"None of these closes more than {share:.0%} of the per-seed gap: unexplained."
    closed, what, st = best
    return (
        f"The one that closes part of it is {what}: {closed:.0%} of the per-seed gap. The rest "
        f"({st['d_loss_pp']:+.2f} ± {st['d_loss_se']:.2f} pp against ns-3's matched row) is unexplained."
    )


def bbr_targets_sentence(sp: dict) -> str:
    """At a point where every ns-3 run's targets lie on one side of the split: the targets' sums on both sides."""
    groups = [g for g in (sp["over"], sp["rest"]) if g["n"]]
    n = sum(g["n"] for g in groups)
    ns_t = sum(g["targets_over"] * g["n"] for g in groups) / n
    ns_imp = sum(g["impossible"] * g["n"] for g in groups) / n
    la = sp["latlab"]
    return (
        f"The split by cwnd targets that explains the 2-BDP point does not apply here: ns-3's flows' targets "
        f"(cwnd_gain × bw × min_rtt, summed) come to {ns_t:.2f} × (BDP + B) on average over its {n} runs "
        f"(timestamps off and on; {sp['over']['n']} above {sp['factor']:g} ×, min_rtt above the path's largest RTT "
        f"in {ns_imp:.1f}% of samples), latlab's to {la['targets_over']:.2f} × over its {la['n']} seeds: latlab's are "
        f"the larger, yet it loses less."
    )


def bbr_seed_notes(pts: dict) -> list[str]:
    """One note per multi-flow BBR point over every seed: which means are outside the rule, and what the runs'
    traces and the experiments say about each."""
    out = []
    points = sorted({(k[0], k[1]) for (k, _e) in pts if k[0] > 1 and k[2] == "bbr"})
    for f, buf in points:
        st = bbr_seed_stats(pts, f, buf, "sack", "sack")
        if st is None:
            continue
        misses = _rule_misses(st)
        parts = [
            f"* **{f} flows, {buf}, {st['n']} seeds, matched settings**: "
            + (
                f"outside the rule: {', '.join(misses)}."
                if misses
                else "goodput, mean queue and srtt within the rule."
            )
            + f" Loss {fmt_pct(st['loss_rate'][2])} ({st['d_loss_pp']:+.2f} ± {st['d_loss_se']:.2f} pp per seed)."
        ]
        lat, ns = _rows_of(pts, f, buf, "sack", "latlab"), _rows_of(pts, f, buf, "sack", "ns-3")
        ns_ts = _rows_of(pts, f, buf, "sack-ns3-timestamps", "ns-3")
        parts.append(
            f"*srtt*: each side's srtt against the RTT its own queue implies (the flows' propagation RTT plus the mean "
            f"queue at the core rate): latlab {_implied_rtt_ratio(lat):.2f}, ns-3 {_implied_rtt_ratio(ns):.2f}"
            + (f", ns-3 with timestamps {_implied_rtt_ratio(ns_ts):.2f}" if ns_ts else "")
            + ". So the gap is in the estimators more than in the path: latlab's sender here has no timestamps, so it "
            "times one segment per round trip and none while a retransmission is outstanding (RFC 6298 with Karn's "
            "rule), and its srtt sits below the RTT its own queue implies; ns-3 takes a sample on every ACK. The mean "
            "queue is the path's own figure."
        )
        pipe = bbr_seed_stats(pts, f, buf, "sack-window-pipe", "sack")
        pipe_ts = bbr_seed_stats(pts, f, buf, "sack-window-pipe", "sack-ns3-timestamps")
        if pipe:
            parts.append(
                f"*Window rule*: with latlab's window checked against the pipe as ns-3's (*sack-window-pipe*), the "
                f"mean queue gap is {fmt_pct(pipe['queue_mean_pkts'][2])}, srtt {fmt_pct(pipe['srtt_median_ms'][2])}"
                + (
                    f" ({fmt_pct(pipe_ts['srtt_median_ms'][2])} against ns-3 with timestamps)"
                    if pipe_ts
                    else ""
                )
                + f", goodput {fmt_pct(pipe['goodput_mbps'][2])}: latlab's default window (cwnd against FlightSize "
                "outside recovery, which after a timeout still counts the SACKed data above the hole) holds its flows "
                "back after timeouts and lets the queue drain, where ns-3's keep sending."
            )
        sp = bbr_target_split(pts, f, buf)
        if sp and sp["over"]["n"] and sp["rest"]["n"]:
            parts.append("*Loss*: " + bbr_split_sentence(sp))
        else:
            checks, best = bbr_loss_checks(pts, f, buf, st)
            parts.append(
                f"*Loss*: ns-3 loses more at every seed ({100 * st['loss_rate'][1]:.2f}% against "
                f"{100 * st['loss_rate'][0]:.2f}% on average). "
                + (bbr_targets_sentence(sp) + " " if sp else "")
                + (f"Loss latlab / ns-3 with one setting changed: {checks}. " if checks else "")
                + bbr_loss_verdict(best)
            )
        out.append(" ".join(parts))
    return out + [""] if out else []


def bbr_seed_summary(pts: dict) -> list[str]:
    """The 10-flow BBR points over every seed run: a table of means per pair of experiments (BBR_SEED_PAIRS),
    and which gaps are outside the rule (goodput 10 %, mean queue 15 %)."""
    points = sorted(
        {(k[0], k[1]) for (k, _e) in pts if k[0] > 1 and k[2] == "bbr"}, key=lambda x: (x[0], x[1])
    )
    lines: list[str] = []
    for f, buf in points:
        for lat_exp, ns_exp, what in BBR_SEED_PAIRS:
            st = bbr_seed_stats(pts, f, buf, lat_exp, ns_exp)
            if st is None:
                continue
            gp, loss, q, rtt, rto, jn = (st[k] for k in BBR_SEED_METRICS)
            lines.append(
                f"| {f} | {buf} | {lat_exp} / {ns_exp} ({what}) | {st['n']} | {gp[0]:.3f} / {gp[1]:.3f} "
                f"({fmt_pct(gp[2])}) | {q[0]:.1f} / {q[1]:.1f} ({fmt_pct(q[2])}) | {rtt[0]:.1f} / {rtt[1]:.1f} "
                f"({fmt_pct(rtt[2])}) | {100 * loss[0]:.2f} / "
                f"{100 * loss[1]:.2f} ({fmt_pct(loss[2])}; {st['d_loss_pp']:+.2f} ± {st['d_loss_se']:.2f} pp) | "
                f"{rto[0]:.0f} / {rto[1]:.0f} | {jn[0]:.3f} / {jn[1]:.3f} |"
            )
    if not lines:
        return []
    return [
        "**Over seeds.** A single seed of ten BBR flows is a weak witness: the flows' shares swing between stalls, "
        "and at the same settings latlab's loss moves by up to a factor of two from seed to seed. So the 10-flow "
        "points ran at every seed below (each seed draws the access delays and start times, the same on both sides, "
        "and so its own BDP and buffer), and the pairs are compared by their means; the loss column adds the "
        "per-seed difference latlab − ns-3 in percentage points, mean ± standard error. The srtt is each run's "
        "median over its flows of the flow's mean srtt over the window (a starved flow's seconds-long srtt would "
        "swamp a mean). Run by the commands above with `--flows 10 --seeds 1,2,3,4,5`. The rule is the sim-vs-Linux "
        "page's: goodput within 10 %, mean queue and srtt within 15 %, or explained.\n",
        "| flows | buffer | experiments, latlab / ns-3 | seeds | goodput Mb/s latlab / ns-3 (Δ) | queue mean pkts "
        "latlab / ns-3 (Δ) | srtt ms, median flow, latlab / ns-3 (Δ) | loss % latlab / ns-3 (Δ rel; Δ pp) | "
        "RTOs latlab / ns-3 | Jain latlab / ns-3 |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *lines,
        "",
    ]


def _rows_by_point_and_experiment(rows: list[dict]) -> dict:
    """{(point key, experiment): {simulator: row}}: the two simulators' rows of one point side by side."""
    pts: dict = {}
    for r in rows:
        pts.setdefault((Point.of_row(r).key(), r["experiment"]), {})[r["simulator"]] = r
    return pts


def _provenance(rows: list[dict]) -> tuple[list[str], list[str]]:
    """The latlab commits and the ns-3 versions the rows came from."""
    commits = sorted({r["commit"] for r in rows if r["simulator"] == "latlab" and r.get("commit")})
    versions = sorted({r["version"] for r in rows if r["simulator"] == "ns-3" and r.get("version")})
    return commits, versions


def bbr_section(rows: list[dict]) -> list[str]:
    """The BBR rows (cc = bbr), latlab against ns-3's TcpBbr, by point and experiment."""
    pts = _rows_by_point_and_experiment(rows)
    if not pts:
        return []
    commits, versions = _provenance(rows)
    out = [
        "## BBR against ns-3's TcpBbr\n",
        BBR_INTRO,
        f"Rows from latlab commit {', '.join(commits) or 'unknown'} and {', '.join(versions) or 'ns-3 (not run)'}, "
        f"by `{BBR_COMMAND}`.\n",
        "| flows | buffer (B pkts) | experiment | seed | goodput Mb/s latlab / ns-3 (Δ) | loss % latlab / ns-3 "
        "(Δ rel) | retx latlab / ns-3 | RTOs latlab / ns-3 | queue mean latlab / ns-3 | queue p95 latlab / ns-3 | "
        "Jain latlab / ns-3 | flow-0 cwnd seg latlab / ns-3 | flow-0 RTT ms latlab / ns-3 |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    agree = total = 0
    flagged = []
    order = {"base": 0, "sack": 1}
    for (k, exp), sides in sorted(
        pts.items(),
        key=lambda kv: (
            kv[0][0][0],
            float(kv[0][0][1].rstrip("bdp")),
            order.get(kv[0][1], 2),
            kv[0][0][4],
        ),
    ):
        if k[4] != 1:
            continue  # other seeds: the summary over seeds below
        lat, ns = sides.get("latlab"), sides.get("ns-3")
        # a one-side experiment is compared with the other side's row of the setting it changes (BBR_EXPERIMENTS)
        one_side = not (lat and ns) and exp in BBR_EXPERIMENTS
        if one_side:
            other = pts.get((k, BBR_EXPERIMENTS[exp][0]), {})
            label = f"{exp} ({'ns-3' if ns else 'latlab'} only)"
            lat, ns = lat or other.get("latlab"), ns or other.get("ns-3")
        if not (lat and ns):
            continue
        g = gaps(lat, ns)
        if exp == "sack":
            total += 1
            if over(g):
                flagged.append((k, exp, g))
            else:
                agree += 1
        (lc, lr), (nc, nr) = flow0_means(lat), flow0_means(ns)
        out.append(
            f"| {k[0]} | {k[1]} ({lat['buffer_pkts']}) | {label if one_side else exp} | {k[4]} | {lat['goodput_mbps']:.3f} / "
            f"{ns['goodput_mbps']:.3f} ({fmt_pct(g['goodput'])}) | {100 * lat['loss_rate']:.3f} / "
            f"{100 * ns['loss_rate']:.3f} ({fmt_pct(g['loss'])}) | "
            + " | ".join(
                f"{lat[m]} / {ns[m]}"
                for m in ("retransmitted_segments", "timeouts", "queue_mean_pkts", "queue_p95_pkts")
            )
            + f" | {lat['jain']:.3f} / {ns['jain']:.3f} | {lc:.1f} / {nc:.1f} | {lr:.1f} / {nr:.1f} |"
        )
    out += [
        "",
        f"Goodput and loss both within 5% at {agree} of {total} BBR points compared at seed 1 (both sides run).\n",
    ]
    for exp, (against, what) in BBR_EXPERIMENTS.items():
        sims = {sim for (_, e), sides in pts.items() if e == exp for sim in sides}
        if len(sims) == 1:
            (sim,) = sims
            other = "ns-3" if sim == "latlab" else "latlab"
            out.append(f"*{exp}* ({sim} only, against {other}'s *{against}* row): {what}\n")
    for k, exp, g in flagged:
        what = " and ".join(f"{m} {fmt_pct(g[m])}" for m in over(g))
        lat, ns = pts[(k, exp)]["latlab"], pts[(k, exp)]["ns-3"]
        note = BBR_SEED1_NOTE if k[0] > 1 else "Not yet explained from the traces."
        out.append(
            f"* **{k[0]} flows, {k[1]}, {exp}**: {what} ({lat['core_drops_pkts']} vs {ns['core_drops_pkts']} drops "
            f"in the window). "
            + " ".join(x for x in (bbr_trace_facts(lat, ns), bbr_model_facts(lat, ns), note) if x)
        )
    out.append("")
    return out + bbr_one_flow_rule(pts) + bbr_seed_summary(pts) + bbr_seed_notes(pts)


def bbr_one_flow_rule(pts: dict) -> list[str]:
    """The one-flow BBR points against the sim-vs-Linux rule (goodput 10 %, mean queue and srtt 15 %; the srtt is
    flow 0's, the only flow's)."""
    out = []
    for (k, exp), sides in sorted(pts.items(), key=lambda kv: str(kv[0])):
        lat, ns = sides.get("latlab"), sides.get("ns-3")
        if k[0] != 1 or exp != "sack" or not (lat and ns):
            continue
        gaps_ = {
            "goodput": (rel(lat["goodput_mbps"], ns["goodput_mbps"]), 10.0),
            "mean queue": (rel(lat["queue_mean_pkts"], ns["queue_mean_pkts"]), 15.0),
            "srtt": (rel(flow0_means(lat)[1], flow0_means(ns)[1]), 15.0),
        }
        misses = [f"{m} {fmt_pct(v)}" for m, (v, lim) in gaps_.items() if not abs(v) <= lim]
        shown = ", ".join(f"{m} {fmt_pct(v)}" for m, (v, _) in gaps_.items())
        out.append(
            f"* **1 flow, {k[1]}** against the sim-vs-Linux rule (goodput 10 %, mean queue and srtt 15 %): {shown}; "
            + (f"outside: {', '.join(misses)}, not yet explained." if misses else "all within.")
        )
    return out + [""] if out else []


AQM_INTRO = (
    "latlab's FQ-CoDel (crates/qdisc/src/fq_codel.rs, RFC 8290) and PIE (crates/qdisc/src/pie.rs, RFC 8033) at the "
    "core against ns-3's FqCoDelQueueDisc and PieQueueDisc, on the grid's dumbbell with CUBIC (and NewReno at 10 "
    "flows, run with the ECN rows of the next section): 1 and 10 flows × 1 and 4 BDP buffers (B packets in all, the limit of latlab's queue; in ns-3 B − 1 in the disc over a "
    "1-packet device queue, as the CoDel rows). ECN is off on both sides here (the next section turns it on). As "
    "the BBR rows, "
    'these run with SACK on both sides (latlab `sack = true`, `recovery = "sack"`; ns-3 `Sack` true with '
    "TcpClassicRecovery): that is where the grid's DropTail CUBIC points at 1 and 10 flows agree (the *sack* rows "
    "above), so what differs here is the queue. The AQM settings that differ are the *FQ-CoDel* and *PIE* rows "
    "of the matched-settings table. Columns: goodput; the flows' mean srtt (every flow sampled every "
    f"{SAMPLE_INTERVAL_MS} ms in the window; ns-3's traced m_srtt); the core queue's mean sojourn over the "
    "packets that left it in the window, from arrival to the start of transmission (latlab: the link's sojourn; "
    "ns-3: the disc's SojournTime plus the wait in the device queue); queue length (packets, sampled); drops in "
    "the window and loss (drops / arrivals); Jain's index over the flows' goodputs. Rule: a difference over 10% "
    "in goodput, srtt, sojourn, loss or Jain is explained from the runs' traces below or marked unexplained.\n"
)
AQM_COMMAND = (
    "python benches/validation/ns3_grid.py --ns3-python .venv-ns3/bin/python --cc cubic --flows 1,10 "
    "--buffers 1bdp,4bdp --qdisc fq_codel,pie --duration 40 --measure-from 10 --jobs 2 --experiment sack "
    "--latlab-set tcp.sack=true --latlab-set tcp.recovery=sack --ns3-set sack=true --jsonl docs/validation/ns3.jsonl"
)
AQM_METRICS = (
    ("goodput", "goodput_mbps"),
    ("srtt", "srtt_mean_ms"),
    ("sojourn", "sojourn_mean_ms"),
    ("loss", "loss_rate"),
    ("Jain", "jain"),
)
# One-side AQM experiments: name -> (the experiment whose other-side row they are compared with, what changes).
AQM_EXPERIMENTS = {
    "sack-ns3-fq-min-bytes-1": (
        "sack",
        "ns-3's flow queues with CoDelQueueDisc MinBytes 1, so that CoDel may drop while the flow has packets "
        "left: with ten flows sharing the link latlab's whole-discipline rule (≤ 1500 B in all) almost never "
        "exempts a packet, ns-3's per-flow rule (< 1500 B left in the flow's own queue) exempts every flow down to "
        "one packet left behind the one dequeued. MinBytes 0 would be the closest but ns-3 3.44 aborts with it "
        "(NS_ASSERT 'Attempted to dereference zero pointer' at 0.85 s of the 10-flow run, a drop emptying the "
        "flow queue). Run by "
        "`python benches/validation/ns3_grid.py --ns3-python .venv-ns3/bin/python --only ns-3 --cc cubic --flows 10 "
        "--buffers 1bdp,4bdp --qdisc fq_codel --duration 40 --measure-from 10 --jobs 2 --experiment "
        "sack-ns3-fq-min-bytes-1 --ns3-set sack=true --ns3-set fq_codel_min_bytes=1 --jsonl docs/validation/ns3.jsonl`.",
    ),
}
AQM_EXPERIMENTS["sack-ns3-cubic-all"] = (
    "sack",
    "latlab with ns-3's TCP rules, the grid's *sack-ns3-cubic-all* overrides (RFC 6298 timer at a fast "
    "retransmit, ssthresh from the pipe, RTO backoff dropped at a new ACK, and TcpCubic's α, whole-segment "
    "arithmetic, minimum-RTT target and W_max after a timeout), to separate the TCP's part of a gap from the "
    "queue's. Run by the section's command with `--only latlab --experiment sack-ns3-cubic-all --latlab-set "
    "tcp.rto_restart_on_fast_retransmit=false --latlab-set tcp.ssthresh_from_pipe=true --latlab-set "
    "tcp.rto_backoff_reset_on_ack=true --latlab-set cubic.alpha_switch=0 --latlab-set cubic.whole_segments=1 "
    "--latlab-set cubic.target_min_rtt=1 --latlab-set cubic.timeout_keeps_w_max=1` (and the seeds).",
)
AQM_EXPERIMENTS["sack-ns3-newreno-per-ack"] = (
    "sack",
    "latlab with ns-3's TCP rules for NewReno, the grid's *sack-ns3-newreno-per-ack* overrides (RFC 6298 timer at "
    "a fast retransmit, ssthresh from the pipe, RTO backoff dropped at a new ACK, TcpNewReno's per-ACK increase), "
    "as *sack-ns3-cubic-all* for CUBIC. Run by the section's command with `--only latlab --cc newreno --experiment "
    "sack-ns3-newreno-per-ack --latlab-set tcp.rto_restart_on_fast_retransmit=false --latlab-set "
    "tcp.ssthresh_from_pipe=true --latlab-set tcp.rto_backoff_reset_on_ack=true --latlab-set "
    "newreno.per_ack_increase=1` and the flows at 10.",
)
AQM_EXPERIMENTS["sack-no-burst"] = (
    None,
    "both sides without PIE's burst allowance (latlab `max_burst_ms = 0`, ns-3 MaxBurstAllowance 0), the one "
    "part of PIE whose rules differ between the two (matched-settings row *PIE: burst allowance*). Run by the "
    "section's command with `--flows 1 --qdisc pie --experiment sack-no-burst --latlab-set aqm.max_burst_ms=0 "
    "--ns3-set aqm.max_burst_ms=0`.",
)
# What the traces show at each AQM point outside the 10% rule: (flows, buffer, qdisc, experiment) -> text, written
# from the rows' queue samples, drop kinds and counters (see aqm_trace_facts).
FQ_NOTE = (
    "Explained by one named setting, with the TCP sharing the loss. (1) Sojourn, queue length and srtt are CoDel's "
    "one-MTU rule (matched-settings row *FQ-CoDel: CoDel's one-MTU rule*): ns-3's per-flow CoDel does not drop "
    "while its flow has under 1500 B (one 1000-B packet) left behind the packet dequeued, so each of the ten flows "
    "keeps about two packets waiting (15–16.5 packets in all, sojourn 12–13 ms), while latlab's rule counts the "
    "whole discipline's backlog, as Linux's fq_codel does, and almost never exempts (8.6 packets, 6.7 ms). With "
    "MinBytes 1 in ns-3's flow queues (*sack-ns3-fq-min-bytes-1*; MinBytes 0 aborts ns-3) its sojourn falls from "
    "13.2 to 8.8 ms (1 BDP) and 13.2 to 8.7 ms (4 BDP) against latlab's 6.7 and 6.8, and srtt comes within 6%; the "
    "rest (−22 to −24%) is **unexplained**: a candidate, not traced, is the exemption MinBytes 1 still leaves (a "
    "flow's last packet), which latlab's rule does not give. latlab's TCP rules do not move this part (sojourn 5.7–6.0 ms "
    "with ns-3's). (2) Loss and timeouts: two one-setting changes each bring the loss inside 10%: ns-3 with "
    "MinBytes 1 drops as often as latlab (+1.9 / +7.8% at 1 / 4 BDP), and latlab with ns-3's TCP rules "
    "(*sack-ns3-cubic-all*) drops as rarely as ns-3 with its default (+4.6, −3.7, −0.2% at 1 BDP, seeds 1–3; "
    "+1.1% at 4 BDP; RTOs 35 against latlab's own 73 and ns-3's 15 at seed 1). The per-flow exemption saves ns-3's "
    "flows drops, and latlab's TCP answers drops with more timeouts; how the two share the gap is not separated."
)
AQM_NOTES: dict = {
    (1, "1bdp", "pie", "sack"): (
        "Counting noise, not a queue difference: 8 / 9 drops in the 30-s window (one drop apart) and the other "
        "four metrics within 9%; with ns-3's TCP rules in latlab 9 / 9."
    ),
    (1, "4bdp", "pie", "sack"): (
        "Explained: a start-up transient, made of PIE's burst-allowance rule and latlab's TCP. 238 of latlab's 245 "
        "drops in the window fall in its first 5 s; in its last 25 s both drop 7 packets. Before the window slow "
        "start overshoots further in latlab (the queue peaks at 368 / 261 packets, 596 / 75 drops, 5 / 2 RTOs), and "
        "each burst of drops ends in a timeout and a new slow start (latlab's flow samples: cwnd 385 → 5 → 278 → 4 → "
        "198 → 1 segments between 3 and 10 s). (1) The overshoot is the burst allowance (matched-settings row *PIE: "
        "burst allowance*): latlab restores it whenever p = 0 and the delay is low, so it is full when slow start "
        "builds the queue and lets 150 ms more of it in; ns-3 arms it at the first packet and re-arms it only after "
        "1.5 s of calm, so it has run out by then. Without it on both sides (*sack-no-burst*) latlab's peak comes "
        "to ns-3's (264 / 261 packets) and its window drops fall from 245 to 22 (ns-3: 8), while ns-3's row is the "
        "same as its *sack* row to the last digit. (2) The timeouts that follow are latlab's TCP: with ns-3's TCP "
        "rules in latlab (*sack-ns3-cubic-all*, the burst allowance kept) the point is inside: goodput 9.474 / "
        "9.500 Mb/s, 6 / 8 drops in the window. Which of the TCP rules matters is not isolated."
    ),
    (10, "1bdp", "fq_codel", "sack"): FQ_NOTE,
    (10, "4bdp", "fq_codel", "sack"): FQ_NOTE,
    (10, "1bdp", "pie", "sack"): (
        "Bracketed by the TCP rules, not PIE's: the queue agrees (queue length and sojourn within 5% at seeds 1 and 3; "
        "at seed 2, +11.1% sojourn with latlab's TCP, −1.9% with ns-3's rules) and so do goodput, srtt and Jain; "
        "only the drop rate differs, and ns-3's lies between latlab's with its own TCP (+17.6, +14.7, +8.6% at "
        "seeds 1–3) and latlab's with ns-3's TCP rules (*sack-ns3-cubic-all*: −13.1, −13.6, −14.7%). At an equal "
        "queue delay PIE's drop rate is set by how the flows answer a drop, which those rules change; which rule "
        "accounts for which part is not isolated."
    ),
    (10, "4bdp", "pie", "sack"): (
        "As at 1 BDP (one seed): queue, sojourn, srtt, goodput and Jain within 3%; loss +17.3% with latlab's TCP, "
        "−11.0% with ns-3's TCP rules in latlab (*sack-ns3-cubic-all*). The TCP's, not PIE's."
    ),
    (10, "1bdp", "fq_codel", "sack-ns3-cubic-all"): (
        "The sojourn gap of the *sack* rows, with the loss gap gone: see the note above."
    ),
    (10, "4bdp", "fq_codel", "sack-ns3-cubic-all"): (
        "The sojourn gap of the *sack* rows, with the loss gap gone: see the note above."
    ),
    (
        10,
        "1bdp",
        "pie",
        "sack-ns3-cubic-all",
    ): "ns-3's loss lies between the two latlab rows: see the *sack* note.",
    (
        10,
        "4bdp",
        "pie",
        "sack-ns3-cubic-all",
    ): "ns-3's loss lies between the two latlab rows: see the *sack* note.",
    (10, "1bdp", "fq_codel", "sack-ns3-fq-min-bytes-1"): (
        "What is left of the sojourn gap with ns-3's one-MTU exemption narrowed: see the *sack* note."
    ),
    (10, "4bdp", "fq_codel", "sack-ns3-fq-min-bytes-1"): (
        "What is left of the sojourn gap with ns-3's one-MTU exemption narrowed: see the *sack* note."
    ),
    (1, "4bdp", "pie", "sack-ns3-cubic-all"): "Counting noise: 6 / 8 drops in the window.",
    (10, "1bdp", "fq_codel", "newreno", "sack"): (
        "Sojourn: CoDel's one-MTU rule, as for CUBIC (the note on the CUBIC *sack* rows); the loss agrees (−1.4%)."
    ),
    (10, "4bdp", "fq_codel", "newreno", "sack"): (
        "Sojourn: CoDel's one-MTU rule, as for CUBIC (the note on the CUBIC *sack* rows); the loss agrees (+3.4%)."
    ),
    (10, "1bdp", "fq_codel", "newreno", "sack-ns3-newreno-per-ack"): (
        "The sojourn gap of the *sack* row. Loss: with ns-3's NewReno rules (*sack-ns3-newreno-per-ack*) latlab "
        "drops less than ns-3 (−21.0 / −16.8% at 1 / 4 BDP) while with its own rules as often: for NewReno at "
        "FQ-CoDel those rules and ns-3's per-flow exemption do not add up as for CUBIC; **unexplained**, not traced."
    ),
    (10, "4bdp", "fq_codel", "newreno", "sack-ns3-newreno-per-ack"): (
        "As at 1 BDP: see the note there (**unexplained**)."
    ),
    (10, "1bdp", "pie", "newreno", "sack"): (
        "Bracketed by the TCP rules, as for CUBIC: queue length, sojourn, srtt, goodput and Jain within 3%, and "
        "ns-3's loss between latlab's with its own TCP (+17.4 / +11.6% at 1 / 4 BDP) and with ns-3's NewReno "
        "rules (*sack-ns3-newreno-per-ack*: −7.9 / −10.8%)."
    ),
    (10, "4bdp", "pie", "newreno", "sack"): "As at 1 BDP: see the note there.",
    (10, "4bdp", "pie", "newreno", "sack-ns3-newreno-per-ack"): (
        "ns-3's loss lies between the two latlab rows: see the *sack* note at 1 BDP."
    ),
    (1, "4bdp", "pie", "sack-no-burst"): (
        "The rest of the *sack* row's start-up transient with the burst allowance gone (22 / 8 drops, 4 / 2 RTOs): "
        "latlab's TCP, see the note on that row."
    ),
}


def aqm_gaps(lat: dict, ns: dict) -> dict:
    return {name: rel(lat[k], ns[k]) for name, k in AQM_METRICS}


def aqm_trace_facts(lat: dict, ns: dict) -> str:
    """What the rows' queue samples and drop counters say at an AQM point, latlab / ns-3."""
    b = lat["buffer_pkts"]

    def full(r: dict) -> str:
        q = r.get("queue_samples_pkts", [])
        return f"{100 * sum(1 for x in q if x >= b - 1) / len(q):.0f}%" if q else "–"

    def spread(r: dict) -> str:
        g = r["per_flow_goodput_bps"]
        return f"{min(g) / 1e6:.2f}–{max(g) / 1e6:.2f}"

    text = (
        f"Traces, latlab / ns-3: queue at its limit ({b - 1}+ packets) in {full(lat)} / {full(ns)} of the samples; "
        f"RTOs {lat['timeouts']} / {ns['timeouts']}; retransmitted segments {lat['retransmitted_segments']} / "
        f"{ns['retransmitted_segments']}; per-flow goodput {spread(lat)} / {spread(ns)} Mb/s."
    )
    if all(r.get("run_trace") for r in (lat, ns)):
        t0 = lat["measure_from_s"]

        def at(r: dict, t: float) -> int:  # cumulative drops at the last sample at or before t
            return max((d for s, _, d in r["run_trace"] if s <= t + 1e-9), default=0)

        def peak(r: dict) -> int:
            return max((q for s, q, _ in r["run_trace"] if s < t0), default=0)

        text += (
            f" Whole-run trace: the queue peaks at {peak(lat)} / {peak(ns)} packets before the window, with "
            f"{at(lat, t0)} / {at(ns, t0)} drops there; of the window's drops {at(lat, t0 + 5) - at(lat, t0)} / "
            f"{at(ns, t0 + 5) - at(ns, t0)} fall in its first 5 s."
        )
    if lat["qdisc"] == "pie" and "early_drops_run_pkts" in lat:
        text += f" Whole run: latlab's random (early) drops {lat['early_drops_run_pkts']};"
    if ns.get("drop_reasons_run"):
        text += (
            f" ns-3's disc drops by reason {ns['drop_reasons_run'].rstrip(';').replace(';', ', ')}."
        )
    if ns.get("flow_queues_used"):
        text += f" ns-3 hashed the flows into {ns['flow_queues_used']} flow queues."
    return text


def aqm_seed_means(pts: dict) -> list[str]:
    """Where a point ran with several seeds: each metric's mean over the seeds on both sides and the difference of
    the means (the per-seed rows are in the table above)."""
    groups: dict = {}
    for (k, exp), sides in pts.items():
        if "latlab" in sides and "ns-3" in sides:
            groups.setdefault((k[0], k[1], k[3], f"{k[2]}, {exp}"), []).append(sides)
    multi = {g: v for g, v in groups.items() if len(v) > 1}
    if not multi:
        return []
    out = [
        "Means over seeds, latlab / ns-3 (Δ of the means):\n",
        "| flows | buffer | queue | cc, experiment | seeds | goodput Mb/s | srtt ms | sojourn ms | loss % | Jain |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (f, b, q, exp), v in sorted(
        multi.items(), key=lambda kv: (kv[0][2], kv[0][0], kv[0][1], kv[0][3])
    ):

        def mean(side: str, key: str, v=v) -> float:
            return sum(x[side][key] for x in v) / len(v)

        cells = []
        for _, key in AQM_METRICS:
            a, n = mean("latlab", key), mean("ns-3", key)
            scale = 100 if key == "loss_rate" else 1
            cells.append(f"{scale * a:.3f} / {scale * n:.3f} ({fmt_pct(rel(a, n))})")
        seeds = ", ".join(
            str(x["latlab"]["seed"]) for x in sorted(v, key=lambda x: x["latlab"]["seed"])
        )
        out.append(f"| {f} | {b} | {q} | {exp} | {seeds} | " + " | ".join(cells) + " |")
    return out + [""]


def aqm_section(rows: list[dict]) -> list[str]:
    """The FQ-CoDel and PIE rows, latlab against ns-3's queue discs, by point and experiment."""
    pts = _rows_by_point_and_experiment(rows)
    if not pts:
        return []
    commits, versions = _provenance(rows)
    out = [
        "## FQ-CoDel and PIE against ns-3's queue discs\n",
        AQM_INTRO,
        f"Rows from latlab commit {', '.join(commits) or 'unknown'} and {', '.join(versions) or 'ns-3 (not run)'} on "
        "a 2-core VM shared with other jobs (load 12–20 during the runs, so ns-3's wall times are inflated; the "
        "latlab commits differ from main's 526fc78 only in benches/validation and docs, so every row ran the same "
        "simulator, and -dirty marks uncommitted edits to this page's text while a run went), by "
        f"`{AQM_COMMAND}`; seeds 2 and 3 at 10 flows, 1 BDP by the same with `--flows 10 --buffers 1bdp --seeds 2,3` "
        "(the 4-BDP seeds were not run, for time). ns-3 runs in its own virtualenv (`python -m venv .venv-ns3 && "
        ".venv-ns3/bin/pip install ns3==3.44.post0`), never as a latlab dependency. The ECN points are in the "
        "next section (`--ecn`).\n",
        "| flows | buffer (B pkts) | queue | cc, experiment | seed | goodput Mb/s latlab / ns-3 (Δ) | srtt ms latlab / ns-3 "
        "(Δ) | sojourn ms latlab / ns-3 (Δ) | queue mean pkts latlab / ns-3 | queue p95 latlab / ns-3 | drops latlab / "
        "ns-3 (loss Δ rel) | Jain latlab / ns-3 (Δ) | wall s latlab / ns-3 |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    agree = total = 0
    flagged = []
    for (k, exp), sides in sorted(
        pts.items(),
        key=lambda kv: (
            kv[0][0][3],
            kv[0][0][0],
            float(kv[0][0][1].rstrip("bdp")),
            kv[0][1],
            kv[0][0][4],
        ),
    ):
        lat, ns = sides.get("latlab"), sides.get("ns-3")
        # a one-side experiment is compared with the other side's row of the setting it changes (AQM_EXPERIMENTS)
        one_side = not (lat and ns) and AQM_EXPERIMENTS.get(exp, (None,))[0] is not None
        if one_side:
            other = pts.get((k, AQM_EXPERIMENTS[exp][0]), {})
            lat, ns = lat or other.get("latlab"), ns or other.get("ns-3")
        if not (lat and ns):
            continue
        g = aqm_gaps(lat, ns)
        if exp == "sack":
            total += 1
            agree += not over(g, 10.0)
        if over(g, 10.0):
            flagged.append((k, exp, g))
        label = f"{exp} ({'ns-3' if sides.get('ns-3') else 'latlab'} only)" if one_side else exp
        out.append(
            f"| {k[0]} | {k[1]} ({lat['buffer_pkts']}) | {k[3]} | {k[2]}, {label} | {k[4]} | {lat['goodput_mbps']:.3f} / "
            f"{ns['goodput_mbps']:.3f} ({fmt_pct(g['goodput'])}) | {lat['srtt_mean_ms']:.1f} / "
            f"{ns['srtt_mean_ms']:.1f} ({fmt_pct(g['srtt'])}) | {lat['sojourn_mean_ms']:.2f} / "
            f"{ns['sojourn_mean_ms']:.2f} ({fmt_pct(g['sojourn'])}) | {lat['queue_mean_pkts']} / "
            f"{ns['queue_mean_pkts']} | {lat['queue_p95_pkts']} / {ns['queue_p95_pkts']} | "
            f"{lat['core_drops_pkts']} / {ns['core_drops_pkts']} ({fmt_pct(g['loss'])}) | {lat['jain']:.3f} / "
            f"{ns['jain']:.3f} ({fmt_pct(g['Jain'])}) | {lat['wall_s']:.2f} / {ns['wall_s']:.2f} |"
        )
    out += [
        "",
        f"All five within 10% at {agree} of {total} AQM points compared (*sack* rows, both sides run).\n",
    ]
    out += aqm_seed_means(pts)
    for exp, (against, what) in AQM_EXPERIMENTS.items():
        if any(e == exp for _, e in pts):
            against_text = (
                f"one side, against the other side's *{against}* row" if against else "both sides"
            )
            out.append(f"*{exp}* ({against_text}): {what}\n")
    for k, exp, g in flagged:
        what = ", ".join(f"{m} {fmt_pct(g[m])}" for m in over(g, 10.0))
        sides, other = pts[(k, exp)], pts.get((k, AQM_EXPERIMENTS.get(exp, ("",))[0]), {})
        lat, ns = sides.get("latlab") or other["latlab"], sides.get("ns-3") or other["ns-3"]
        # notes written for the CUBIC rows, or for one controller's (flows, buffer, qdisc, cc, experiment)
        note = AQM_NOTES.get((k[0], k[1], k[3], k[2], exp)) or (
            AQM_NOTES.get((k[0], k[1], k[3], exp)) if k[2] == "cubic" else None
        )
        note = note or "**Unexplained**: not yet traced further."
        out.append(
            f"* **{k[0]} flows, {k[1]}, {k[3]}, {k[2]}, {exp}, seed {k[4]}**: {what}. {aqm_trace_facts(lat, ns)} {note}"
        )
    out.append("")
    return out


ECN_COMMAND = (
    "python benches/validation/ns3_grid.py --ns3-python /tmp/ns3venv/bin/python --cc cubic,newreno --flows 10 "
    "--buffers 1bdp,4bdp --qdisc fq_codel,pie --duration 40 --measure-from 10 --jobs 2 --ecn --experiment sack "
    "--latlab-set tcp.sack=true --latlab-set tcp.recovery=sack --ns3-set sack=true --jsonl docs/validation/ns3.jsonl"
)
ECN_INTRO = (
    "The FQ-CoDel and PIE points with ECN on (RFC 3168) at both ends and in the core queue: latlab `[tcp] ecn = "
    "true` and the queue's `ecn = true`; ns-3 TcpSocketBase UseEcn On and the disc's UseEcn true (FQ-CoDel's "
    "CeThreshold left unset, so no shallow L4S-style marks; PIE's MarkEcnThreshold its default 0.1, RFC 8033 "
    "§5.1's 10 %, as latlab's). Everything else is the section above: SACK on both sides, 10 flows, CUBIC and "
    "NewReno, 1 and 4 BDP. The queues mark an ECT packet where they would drop it and still drop on overflow; "
    "PIE drops ECT packets too once its probability passes 10 %. Marks are counted over the whole run on both "
    "sides (latlab's link samples have no marks column; ns-3: the disc's nTotalMarkedPackets), drops as in the "
    "section above over the window. Rule as above, with the mark rate (marks / arrivals, whole run) as a sixth "
    "metric: a difference over 10% in goodput, srtt, sojourn, loss, mark rate or Jain is explained from the runs' "
    "traces below or marked unexplained.\n"
)
ECN_METRICS = AQM_METRICS + (("mark rate", "mark_rate_run"),)
# What the traces show at each ECN point outside the 10% rule: (flows, buffer, qdisc, cc, experiment) -> text,
# written from the rows below and the ECN-off rows of the section above.
FQ_ECN_NOTE = (
    "Explained by the two causes of the ECN-off FQ-CoDel rows (note on the section above's 10-flow *sack* rows), "
    "ECN changing neither. (1) Sojourn is CoDel's one-MTU rule: ns-3's per-flow CoDel does not act while its flow "
    "has under 1500 B left, latlab's rule counts the whole discipline's backlog as Linux's fq_codel; ECN moves "
    "neither much (CUBIC, 1 BDP: latlab 6.7 → 7.4 ms, ns-3 13.2 → 13.5 ms; ECN off → on table). (2) Mark rate: CoDel marks where it would drop, "
    "and latlab marks 27–36% more often as it drops 16–31% more often without ECN. Part is latlab's TCP: with "
    "ns-3's TCP rules in latlab (*sack-ns3-cubic-all*) the CUBIC gap falls from +27.5 / +36.3% to +21.0 / +23.4% "
    "(1 / 4 BDP); the rest goes with the per-flow exemption, which spares ns-3's flows marks as it spared them "
    "drops (with MinBytes 1 in ns-3's flow queues, *sack-ns3-fq-min-bytes-1*, ns-3's sojourn falls from 13.5 / 13.4 to 8.7 / 8.6 ms and the mark-rate gap to "
    "+14.3 / +26.3%). Each change closes part of the gap; together, in counts (latlab with ns-3's TCP rules "
    "against ns-3 with MinBytes 1), 615 / 572 and 801 / 703 marks. The sojourn rest (−14%) is the one left by the "
    "ECN-off rows too, **unexplained** (a flow's last packet, which MinBytes 1 still exempts, is the candidate)."
)
FQ_ECN_NEWRENO_NOTE = (
    "Sojourn: CoDel's one-MTU rule, as for CUBIC (the note on the CUBIC rows). Mark rate: **unexplained**. Unlike "
    "CUBIC's, NewReno's gap is not the ECN-off drop gap carried over: without ECN the two drop about as often at "
    "these points (loss −1.4 / +3.4% at 1 / 4 BDP, the section above), with ECN latlab marks +28.5 / +18.5% more "
    "often, and ns-3's NewReno rules in latlab (*sack-ns3-newreno-per-ack*) leave that (+24.5 / +18.3%). What "
    "differs with ECN on is each sender's answer to ECE (matched-settings rows *ECN: the "
    "sender's answer to ECE*): not traced further (a candidate: how cwnd moves while the reduction's window is "
    "acknowledged, latlab's congestion avoidance on ACKs without ECE against ns-3's CA_CWR)."
)
PIE_ECN_NOTE = (
    "Bracketed by the TCP rules, as the ECN-off PIE rows' drop rate: queue length, sojourn, srtt, goodput and Jain "
    "agree, and ns-3's mark rate lies between latlab's with its own TCP (+14.3 / +17.9% at 1 / 4 BDP) and with "
    "ns-3's TCP rules (*sack-ns3-cubic-all*: −9.4 / −6.5%, inside the rule). At an equal queue delay PIE's "
    "probability, and so its marks, follow how the flows answer a mark."
)
ECN_NOTES: dict = {
    (10, "1bdp", "fq_codel", "cubic", "sack"): FQ_ECN_NOTE,
    (10, "4bdp", "fq_codel", "cubic", "sack"): FQ_ECN_NOTE,
    (10, "1bdp", "fq_codel", "newreno", "sack"): FQ_ECN_NEWRENO_NOTE,
    (10, "4bdp", "fq_codel", "newreno", "sack"): FQ_ECN_NEWRENO_NOTE,
    (10, "1bdp", "fq_codel", "cubic", "sack-ns3-cubic-all"): (
        "The sojourn gap of the *sack* row, and what is left of its mark-rate gap with ns-3's TCP rules: see that "
        "row's note."
    ),
    (10, "4bdp", "fq_codel", "cubic", "sack-ns3-cubic-all"): (
        "The sojourn gap of the *sack* row, and what is left of its mark-rate gap with ns-3's TCP rules: see that "
        "row's note."
    ),
    (10, "1bdp", "fq_codel", "cubic", "sack-ns3-fq-min-bytes-1"): (
        "What is left with ns-3's one-MTU exemption narrowed: see the *sack* row's note."
    ),
    (10, "4bdp", "fq_codel", "cubic", "sack-ns3-fq-min-bytes-1"): (
        "What is left with ns-3's one-MTU exemption narrowed: see the *sack* row's note."
    ),
    (10, "1bdp", "pie", "cubic", "sack"): PIE_ECN_NOTE,
    (10, "4bdp", "pie", "cubic", "sack"): PIE_ECN_NOTE
    + " Loss: 1 / 0 drops in the window (n/a for a relative difference), counting noise.",
    (10, "4bdp", "pie", "newreno", "sack"): (
        "Loss: 3 / 0 drops in the window, counting noise. Mark rate (latlab 19.5% lower) partly **unexplained**: "
        "the queue agrees within 8% (sojourn, length, srtt), and the difference goes with the start-up: latlab's "
        "queue fills (410 / 262 packets at its peak before the window, 832 / 228 drops there; PIE's burst "
        "allowance differs, matched-settings row *PIE: burst allowance*, as at the ECN-off 1-flow 4-BDP point), "
        "and one flow comes out of it with 0.23 Mb/s (Jain 0.929 / 0.994). With ns-3's NewReno rules in latlab "
        "(*sack-ns3-newreno-per-ack*) the slowest flow gets 0.76 Mb/s, Jain 0.983 and the mark rate −12.7%; the "
        "rest is not traced."
    ),
    (10, "4bdp", "pie", "newreno", "sack-ns3-newreno-per-ack"): (
        "The start-up of the *sack* row with ns-3's NewReno rules: see that row's note."
    ),
    (10, "1bdp", "fq_codel", "newreno", "sack-ns3-newreno-per-ack"): (
        "ns-3's NewReno rules leave the *sack* row's gaps as they were: see that row's note."
    ),
    (10, "4bdp", "fq_codel", "newreno", "sack-ns3-newreno-per-ack"): (
        "ns-3's NewReno rules leave the *sack* row's gaps as they were: see that row's note."
    ),
}
ECN_SUMMARY = (
    "What ECN does is the same in both simulators (the table below): the drops in the window go (to 0–3 "
    "packets) while goodput moves by at most 1% and the mean sojourn by at most 1.1 ms; the start-up's overflow drops remain "
    "(whole-run drops column; FQ-CoDel and PIE still drop a full buffer, and PIE above 10 %). The TCP differences "
    "of the matched-settings *ECN* rows (ns-3 answers ECE from any state and has no fast retransmit in CA_CWR; "
    "latlab reduces once per window for marks and drops together) have little to act on here: with no drop in "
    "the window a loss inside an ECN reduction's window is rare; the timeouts are those of the start-up (RTO "
    "counts in the notes).\n"
)


def ecn_effect(pts: dict) -> list[str]:
    """Each side's own change from ECN off to on at the points run both ways: what ECN does in each simulator."""
    out = []
    for (k, exp), sides in sorted(
        pts.items(), key=lambda kv: (kv[0][0][3], kv[0][0][2], kv[0][0][1])
    ):
        if not k[7]:
            continue
        off = pts.get((k[:7] + (False,), exp), {})
        cells = []
        for sim in ("latlab", "ns-3"):
            on_r, off_r = sides.get(sim), off.get(sim)
            if not (on_r and off_r):
                cells = []
                break
            cells.append(
                f"{off_r['goodput_mbps']:.3f} → {on_r['goodput_mbps']:.3f} | {off_r['sojourn_mean_ms']:.2f} → "
                f"{on_r['sojourn_mean_ms']:.2f} | {off_r['core_drops_pkts']} → {on_r['core_drops_pkts']}"
            )
        if cells:
            out.append(
                f"| {k[0]} | {k[1]} | {k[3]} | {k[2]} | {k[4]} | " + " | ".join(cells) + " |"
            )
    if not out:
        return []
    return [
        "ECN off → on, each simulator against itself (the ECN-off rows are the section above's, or run by the "
        "same command without `--ecn`):\n",
        "| flows | buffer | queue | cc | seed | latlab goodput Mb/s | latlab sojourn ms | latlab drops in window | "
        "ns-3 goodput Mb/s | ns-3 sojourn ms | ns-3 drops in window |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *out,
        "",
    ]


def ecn_trace_facts(lat: dict, ns: dict) -> str:
    """The AQM section's trace facts and, for an ECN point, the marks and drops over the whole run."""
    text = aqm_trace_facts(lat, ns)
    text += (
        f" Whole run: marks {lat.get('core_marks_run_pkts', '–')} / {ns.get('core_marks_run_pkts', '–')}, drops "
        f"{lat.get('core_drops_run_pkts', '–')} / {ns.get('core_drops_run_pkts', '–')}"
    )
    if ns.get("mark_reasons_run"):
        text += f"; ns-3's marks by reason {ns['mark_reasons_run'].rstrip(';').replace(';', ', ')}"
    return text + "."


def ecn_section(rows: list[dict]) -> list[str]:
    """The AQM points with ECN on, latlab against ns-3, and each side's change from ECN off."""
    pts: dict = {}
    for r in rows:
        pts.setdefault((Point.of_row(r).key(), r["experiment"]), {})[r["simulator"]] = r
    on = {key: sides for key, sides in pts.items() if key[0][7]}
    if not on:
        return []
    commits = sorted(
        {r["commit"] for sides in on.values() for r in sides.values() if r["simulator"] == "latlab"}
    )
    versions = sorted(
        {r["version"] for sides in on.values() for r in sides.values() if r.get("version")}
    )
    out = [
        "## FQ-CoDel and PIE with ECN against ns-3\n",
        ECN_INTRO,
        f"Rows from latlab commit {', '.join(commits) or 'unknown'} and {', '.join(versions) or 'ns-3 (not run)'}, "
        f"by `{ECN_COMMAND}`, each side run on its own (`--only latlab`, `--only ns-3`) on the 2-core VM shared with "
        "other jobs (load 14–19, so the wall times are inflated); the ECN-off NewReno rows of the table below by "
        "the same without `--ecn`, the one-side experiments as described under the table, with `--ecn`.\n",
        "| flows | buffer (B pkts) | queue | cc, experiment | seed | goodput Mb/s latlab / ns-3 (Δ) | srtt ms latlab / "
        "ns-3 (Δ) | sojourn ms latlab / ns-3 (Δ) | queue mean pkts latlab / ns-3 | drops in window latlab / ns-3 "
        "(loss Δ rel) | marks, whole run, latlab / ns-3 (mark rate Δ rel) | drops, whole run, latlab / ns-3 | Jain "
        "latlab / ns-3 (Δ) | wall s latlab / ns-3 |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    agree = total = 0
    flagged = []
    for (k, exp), sides in sorted(
        on.items(), key=lambda kv: (kv[0][0][3], kv[0][0][2], kv[0][0][1], kv[0][0][4])
    ):
        lat, ns = sides.get("latlab"), sides.get("ns-3")
        # a one-side experiment is compared with the other side's row of the setting it changes (AQM_EXPERIMENTS)
        one_side = not (lat and ns) and AQM_EXPERIMENTS.get(exp, (None,))[0] is not None
        if one_side:
            other = on.get((k, AQM_EXPERIMENTS[exp][0]), {})
            lat, ns = lat or other.get("latlab"), ns or other.get("ns-3")
        if not (lat and ns):
            continue
        g = {name: rel(lat[key], ns[key]) for name, key in ECN_METRICS}
        if not one_side:
            total += 1
            agree += not over(g, 10.0)
        if over(g, 10.0):
            flagged.append((k, exp, g, lat, ns))
        label = f"{exp} ({'ns-3' if sides.get('ns-3') else 'latlab'} only)" if one_side else exp
        out.append(
            f"| {k[0]} | {k[1]} ({lat['buffer_pkts']}) | {k[3]} | {k[2]}, {label} | {k[4]} | {lat['goodput_mbps']:.3f} / "
            f"{ns['goodput_mbps']:.3f} ({fmt_pct(g['goodput'])}) | {lat['srtt_mean_ms']:.1f} / "
            f"{ns['srtt_mean_ms']:.1f} ({fmt_pct(g['srtt'])}) | {lat['sojourn_mean_ms']:.2f} / "
            f"{ns['sojourn_mean_ms']:.2f} ({fmt_pct(g['sojourn'])}) | {lat['queue_mean_pkts']} / "
            f"{ns['queue_mean_pkts']} | {lat['core_drops_pkts']} / {ns['core_drops_pkts']} ({fmt_pct(g['loss'])}) | "
            f"{lat['core_marks_run_pkts']} / {ns['core_marks_run_pkts']} ({fmt_pct(g['mark rate'])}) | "
            f"{lat.get('core_drops_run_pkts', '–')} / {ns.get('core_drops_run_pkts', '–')} | {lat['jain']:.3f} / "
            f"{ns['jain']:.3f} ({fmt_pct(g['Jain'])}) | {lat['wall_s']:.2f} / {ns['wall_s']:.2f} |"
        )
    out += ["", f"All six within 10% at {agree} of {total} ECN points compared (both sides run).\n"]
    for exp, (against, what) in AQM_EXPERIMENTS.items():
        if any(e == exp for _, e in on):
            out.append(
                f"*{exp}* (one side, against the other side's *{against}* row, here with `--ecn`): {what}\n"
            )
    out.append(ECN_SUMMARY)
    out += ecn_effect(pts)
    for k, exp, g, lat, ns in flagged:
        what = ", ".join(f"{m} {fmt_pct(g[m])}" for m in over(g, 10.0))
        note = ECN_NOTES.get(
            (k[0], k[1], k[3], k[2], exp), "**Unexplained**: not yet traced further."
        )
        out.append(
            f"* **{k[0]} flows, {k[1]}, {k[3]}, {k[2]}, {exp}, seed {k[4]}**: {what}. {ecn_trace_facts(lat, ns)} "
            f"{note}"
        )
    out.append("")
    return out


# ----- driver ----------------------------------------------------------------------------------------------


def parse_kv(items: list[str], what: str) -> dict:
    out: dict = {}
    for it in items:
        if "=" not in it:
            raise SystemExit(f"{what}: expected KEY=VALUE, got {it!r}")
        k, v = it.split("=", 1)
        try:
            val = json.loads(v)
        except json.JSONDecodeError:
            val = v
        node = out
        parts = k.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = val
    return out


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--flows", default="1,10,100", help="comma-separated flow counts (1,10,100)")
    p.add_argument(
        "--buffers", default="0.1bdp,0.5bdp,1bdp,2bdp,10KB", help="core buffers: XbdP or XKB"
    )
    p.add_argument("--cc", default="newreno,cubic")
    p.add_argument("--seeds", default="1")
    p.add_argument(
        "--qdisc",
        default="droptail",
        help="core queue: droptail, red, codel, fq_codel, pie (comma-separated)",
    )
    p.add_argument(
        "--ecn",
        action="store_true",
        help="ECN on (RFC 3168): at the ends (latlab tcp.ecn, ns-3 UseEcn On) and in the core AQM queue, which "
        "marks ECT packets instead of dropping them (fq_codel and pie only)",
    )
    p.add_argument("--duration", type=float, default=45.0, help="simulated seconds (45)")
    p.add_argument("--measure-from", type=float, default=15.0, help="window start, s (15)")
    p.add_argument(
        "--jobs",
        type=int,
        default=2,
        help="ns-3 subprocesses at once, and latlab's sweep workers (latlab runs on the sweep runner) (2)",
    )
    p.add_argument(
        "--sweep-dir",
        default=None,
        help="keep latlab's runs in this sweep folder (catalog, Parquet per run; finished runs are not "
        "run again); default: a temporary one",
    )
    p.add_argument(
        "--ns3-python", default=None, help="interpreter with the ns3 package (default: this one)"
    )
    p.add_argument("--skip-ns3", action="store_true", help="latlab only")
    p.add_argument(
        "--experiment", default="base", help="name for rows with settings changed (base)"
    )
    p.add_argument(
        "--ns3-set",
        action="append",
        default=[],
        help="ns-3 override KEY=VALUE (see ns3_twin.OVERRIDES)",
    )
    p.add_argument(
        "--latlab-set", action="append", default=[], help="latlab override, e.g. tcp.recovery=sack"
    )
    p.add_argument(
        "--only",
        choices=("both", "latlab", "ns-3"),
        default="both",
        help="run one side only (an experiment that changes one side reuses the other's base row)",
    )
    p.add_argument("--jsonl", default=None, help="append the rows to this file")
    p.add_argument(
        "--markdown", default=None, help="write the page here (from all rows of --jsonl if given)"
    )
    p.add_argument(
        "--from-jsonl",
        default=None,
        help="render --markdown from stored rows; nothing is simulated",
    )
    p.add_argument(
        "--write-reference", default=None, help="write the ns-3 rows as a test reference file"
    )
    p.add_argument(
        "--print-scenario", action="store_true", help="print the first point's latlab TOML and exit"
    )
    args = p.parse_args(argv)
    if not 0 <= args.measure_from < args.duration:
        p.error("--measure-from must be in [0, --duration)")
    if args.measure_from < START_SPREAD_S and not args.from_jsonl:
        p.error(
            f"--measure-from must be at least {START_SPREAD_S:g} s: every flow has started by then"
        )
    if round(args.measure_from * 1000) % SAMPLE_INTERVAL_MS:
        p.error(f"--measure-from must be a multiple of the {SAMPLE_INTERVAL_MS} ms sample interval")
    return args


def points(args) -> list[Point]:
    pts = [
        Point(int(f), b, cc, q, int(s), args.duration, args.measure_from, args.ecn)
        for f in args.flows.split(",")
        for b in args.buffers.split(",")
        for cc in args.cc.split(",")
        for q in args.qdisc.split(",")
        for s in args.seeds.split(",")
    ]
    for pt in pts:
        pt.buffer_pkts()  # a bad buffer is a usage error before anything runs
        if pt.qdisc not in QDISCS:
            raise SystemExit(f"--qdisc: {pt.qdisc!r}; expected one of {', '.join(QDISCS)}")
        if pt.cc not in CCS:
            raise SystemExit(f"--cc: {pt.cc!r}; expected one of {', '.join(CCS)}")
        if pt.ecn and pt.qdisc not in AQM_QDISCS:
            raise SystemExit(f"--ecn: needs --qdisc {' or '.join(AQM_QDISCS)}, got {pt.qdisc!r}")
    return pts


def read_rows(path: str) -> list[dict]:
    """The stored rows; a line holding only {"command": ...} names the command that simulated them."""
    with open(path) as f:
        return [r for r in (json.loads(ln) for ln in f if ln.startswith("{")) if "simulator" in r]


def main(argv=None) -> int:
    args = parse_args(argv)
    words = list(sys.argv[1:] if argv is None else argv)
    command = "python benches/validation/ns3_grid.py " + " ".join(words)
    if args.from_jsonl:
        if not (args.markdown or args.write_reference):
            print("--from-jsonl needs --markdown PATH or --write-reference PATH", file=sys.stderr)
            return 2
        rows = read_rows(args.from_jsonl)
        if args.markdown:
            Path(args.markdown).write_text(render(rows, command_of(args.from_jsonl, command)))
        if args.write_reference:
            # the stored rows of the chosen points, with both commands: the one that simulated, this one
            keys = {pt.key() for pt in points(args)}
            chosen = [r for r in rows if Point.of_row(r).key() in keys]
            write_reference(
                args.write_reference, chosen, command_of(args.from_jsonl, "?") + "; then " + command
            )
        return 0
    try:
        pts = points(args)
    except ValueError as e:
        print(f"--buffers: {e}", file=sys.stderr)
        return 2
    if args.print_scenario:
        print(latlab_scenario_toml(pts[0]))
        return 0
    lat_ov, ns_ov = parse_kv(args.latlab_set, "--latlab-set"), parse_kv(args.ns3_set, "--ns3-set")
    ns3_python = None
    if not args.skip_ns3 and args.only != "latlab":
        ns3_python = args.ns3_python or sys.executable
        if not ns3_available(ns3_python):
            print(
                f"ns-3 skipped: {ns3_python} cannot import the ns3 package (pip install ns3; or --ns3-python PY)",
                file=sys.stderr,
            )
            ns3_python = None
    rows: list[dict] = []
    if args.jsonl and not Path(args.jsonl).exists():
        Path(args.jsonl).write_text(json.dumps({"command": command}) + "\n")

    def emit(r: dict) -> None:
        rows.append(r)
        line = json.dumps(r)
        if args.jsonl:
            with open(args.jsonl, "a") as f:
                f.write(line + "\n")
        print(
            f"{r['simulator']:6s} {r['experiment']:10s} {r['flows']:4d} flows {r['buffer']:>7s} "
            f"({r['buffer_pkts']:4d} p) {r['cc']:7s} goodput {r['goodput_mbps']:7.3f} Mb/s loss "
            f"{100 * r['loss_rate']:6.3f}% retx {r['retransmitted_segments']:6d} rto {r['timeouts']:4d} "
            f"q {r['queue_mean_pkts']:7.2f}/{r['queue_p95_pkts']:5.0f} jain {r['jain']:.3f} wall {r['wall_s']:.2f} s",
            flush=True,
        )

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = []
        if ns3_python:
            futures = [(pt, pool.submit(ns3_point, pt, ns3_python, ns_ov)) for pt in pts]
        if args.only != "ns-3":
            for pt, raw in zip(pts, latlab_points(pts, lat_ov, max(1, args.jobs), args.sweep_dir)):
                emit(row(pt, raw, args.experiment, lat_ov))
        for pt, fu in futures:
            try:
                emit(row(pt, fu.result(), args.experiment, ns_ov))
            except RuntimeError as e:
                print(e, file=sys.stderr)
    if args.write_reference:
        write_reference(args.write_reference, rows, command)
    if args.markdown:
        all_rows = read_rows(args.jsonl) if args.jsonl else rows
        Path(args.markdown).write_text(
            render(all_rows, command_of(args.jsonl, command) if args.jsonl else command)
        )
    return 0


def write_reference(path: str, rows: list[dict], command: str) -> None:
    """The ns-3 base rows as the reference tests/python/test_ns3_reference.py checks latlab against."""
    ns = [r for r in rows if r["simulator"] == "ns-3" and r["experiment"] == "base"]
    if not ns:
        raise SystemExit(
            "--write-reference: no ns-3 rows to write (is ns-3 available? do the points match?)"
        )
    ref = {
        "ns3_version": ns[0].get("version"),
        "command": command,
        "tolerance": {"goodput_rel": 0.05, "loss_rel": 0.10},
        "points": [
            {
                k: r[k]
                for k in (
                    "flows",
                    "buffer",
                    "cc",
                    "qdisc",
                    "seed",
                    "duration_s",
                    "measure_from_s",
                    "buffer_pkts",
                    "goodput_mbps",
                    "loss_rate",
                    "retransmitted_segments",
                    "timeouts",
                    "queue_mean_pkts",
                    "jain",
                )
            }
            for r in ns
        ],
    }
    Path(path).write_text(json.dumps(ref, indent=1) + "\n")


def command_of(jsonl: str, fallback: str) -> str:
    """The page names the command that simulated the base rows, stored in the rows' file as {"command": ...}."""
    with open(jsonl) as f:
        for ln in f:
            if ln.startswith("{") and "simulator" not in (r := json.loads(ln)) and "command" in r:
                return r["command"]
    return fallback


if __name__ == "__main__":
    sys.exit(main())
