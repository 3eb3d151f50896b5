"""The RTAC study's set-up: the LTE and Wi-Fi paths, the receivers and senders, the experiments, the settings of
a full and a quick reproduction, and the scenario of one run.

The study downloaded from a server to phones (CUBIC sender, timestamps on,
MSS 1448) over LTE (nominal 100 Mbit/s, per-flow queues at the base station,
RTT_min varying over time) and over Wi-Fi (a 72 Mbit/s 802.11n AP whose
buffer of hundreds of packets is shared by its stations, BDP about 44
packets). Every receiver has tcp_rmem_max = 2560 KB; DRWA λ = 3; RTAC
α = β = 1/8, θ = 1.38 with the study's K and RTT_min compensation Δ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

# ----- the receivers and senders ------------------------------------------------------------------

#: latlab's receiver-window controllers (scenario key tcp.rwnd_controller) and the study's names for them.
RECEIVERS: dict[str, str] = {"autotuning": "Auto-tuning", "drwa": "DRWA", "rtac": "RTAC"}
#: The study's sender variants (scenario key cc) and its names for them: its findings are about these.
STUDY_SENDERS: dict[str, str] = {
    "cubic": "CUBIC",
    "newreno": "Reno",
    "htcp": "H-TCP",
    "vegas": "Vegas",
    "westwood": "Westwood+",
}
#: Senders latlab adds to the sender-variant experiment, which the study did not run (so no reference judges
#: them): BBR sizes its own cwnd from its bandwidth and min-RTT model (about 2 BDP) instead of filling the
#: buffer, so whether a receiver-window controller still shortens the queue behind it is an open question.
ADDED_SENDERS: dict[str, str] = {"bbr": "BBR"}
#: Every sender variant run, the study's first.
SENDERS: dict[str, str] = {**STUDY_SENDERS, **ADDED_SENDERS}
MSS_BYTES = 1448
#: tcp_rmem_max of every receiver (the study's 2560 KB).
RMEM_MAX_KB = 2560
#: tcp_rmem_max sizes a Linux receive *buffer*; the window advertised from it is the buffer less the share kept
#: for overhead, 1 − 2^−tcp_adv_win_scale of it, with tcp_adv_win_scale = 1 (the default of the study's kernels):
#: half. latlab's rmem_max_bytes caps the window itself (receiver-window.md), so it gets half of tcp_rmem_max.
WINDOW_FRACTION = 0.5
#: The adaptive receivers' first window (latlab's default, Linux's 64 KB).
INITIAL_RWND_BYTES = 65535
#: DRWA's λ (Jiang et al.); its α keeps latlab's default 7/8.
DRWA_LAMBDA = 3.0
#: RTAC's gains and operating point (the study's).
RTAC_ALPHA = RTAC_BETA = 0.125
RTAC_THETA = 1.38
#: Reno's a in RTAC's utility (w = sqrt(a)·(RTT/RTT_m)/sqrt(q)).
RENO_A = 1.5


@dataclass(frozen=True)
class PathSpec:
    """One access path: its words, the study's RTAC constants, and what it takes to build."""

    title: str
    rtac_k: float  # the study's K for this path
    delta_ms: float  # the study's RTT_min compensation Δ
    capacity_bps: float  # the rate a single download can reach (for BDP and the figures)
    rtt_min_ms: (
        float  # the path's propagation RTT (wired + radio, both ways), before TTI/HARQ/back-off
    )


# ----- LTE -------------------------------------------------------------------------------------------
#: Each user's channel (its rate when it has the whole cell): a new log-normal draw every second around 54 Mbit/s
#: (log-spread 0.15: mostly 45–65 Mbit/s). A category-3 LTE phone's nominal 100 Mbit/s is the peak; the study's
#: single flows reached 51–55 Mbit/s, which sets the level here. Every user and seed gets its own realisation from
#: the scenario seed.
LTE_CHANNEL_MEDIAN_BPS = 54e6
LTE_CHANNEL_SIGMA = 0.15
LTE_CHANNEL_INTERVAL_MS = 1000.0
#: Wired path server → base station and the radio hop, one way: a 30 ms propagation RTT; TTI alignment, HARQ
#: (10 % block errors, resent 8 ms later) and 0–2 ms frame-timing jitter add a varying few ms, so the smallest
#: RTT a flow sees sits below what a typical packet sees: the reason for RTAC's Δ.
LTE_WIRED_DELAY_MS = 12.0
LTE_RADIO_DELAY_MS = 3.0
LTE_CELL = {
    "scheduler": "pf",
    "resource_blocks": 50,
    "harq_error_prob": 0.1,
    "harq_rtt_ms": 8.0,
    "jitter_ms": 2.0,
}
#: Per-user RLC queue: 3 MB, larger than tcp_rmem_max, so the receive window (not a loss) bounds a flow.
LTE_USER_QUEUE_BYTES = 3_000_000
#: Indirect competition: a wired client shares the server's access link with the phones; that link, at 80 Mbit/s
#: with a 1000-packet router buffer, is the shared wired bottleneck before the per-user radio queues.
LTE_WIRED_BOTTLENECK_BPS = 80e6
LTE_WIRED_BOTTLENECK_PACKETS = 1000
LTE_WIRED_CLIENT_DELAY_MS = 3.0

# ----- Wi-Fi -----------------------------------------------------------------------------------------
#: 802.11n, one stream, 20 MHz, short guard interval: 72.2 Mbit/s PHY. latlab's AP sends a frame in its
#: PHY time plus back-off only on a retry, so the per-frame overheads of the DCF without aggregation are folded
#: into the rate: DIFS (34 µs), the mean initial back-off (7.5 slots × 9 µs), the HT preamble (36 µs), SIFS
#: (16 µs) and the legacy ACK (44 µs) beside a 1500-byte frame's 166 µs of data.
WIFI_PHY_BPS = 72.2e6
WIFI_FRAME_OVERHEAD_US = 34 + 7.5 * 9 + 36 + 16 + 44
WIFI_FRAME_DATA_US = 1500 * 8 / WIFI_PHY_BPS * 1e6
WIFI_MAC_EFFICIENCY = WIFI_FRAME_DATA_US / (WIFI_FRAME_DATA_US + WIFI_FRAME_OVERHEAD_US)
WIFI_RATE_BPS = WIFI_PHY_BPS * WIFI_MAC_EFFICIENCY
#: 5 % of frames need a retry (802.11 back-off, up to 7 attempts): a little delay variation, as on a real AP.
WIFI_FRAME_ERROR_PROB = 0.05
#: One shared AP buffer of 400 packets ("hundreds"), against a BDP of about 44 packets.
WIFI_AP_PACKETS = 400
#: The Wi-Fi competition is also run with these AP buffers (packets): the study's competition results depend on
#: the queue the loss-based flow builds, and the study itself suspects that its AP did not share one buffer.
AP_BUFFER_PACKETS = (50, 100, 200, 400)
#: How the AP buffers in those runs (the scenario's `ap.buffer`): one buffer of that many packets shared by the
#: stations, or that many packets per station, each station's queue served in turn (Linux mac80211 keeps a queue
#: per station; crates/link/src/wifi.rs).
AP_BUFFERS: dict[str, str] = {"shared": "shared", "per-station": "per station"}
WIFI_WIRED_DELAY_MS = 4.0
WIFI_RADIO_DELAY_MS = 1.0

PATHS: dict[str, PathSpec] = {
    "lte": PathSpec(
        "LTE (per-user radio queues)",
        rtac_k=3e-7,
        delta_ms=18.0,
        capacity_bps=LTE_CHANNEL_MEDIAN_BPS * math.exp(LTE_CHANNEL_SIGMA**2 / 2),
        rtt_min_ms=2 * (LTE_WIRED_DELAY_MS + LTE_RADIO_DELAY_MS),
    ),
    "wifi": PathSpec(
        "Wi-Fi (shared AP buffer)",
        rtac_k=5e-5,
        delta_ms=8.0,
        capacity_bps=WIFI_RATE_BPS,
        rtt_min_ms=2 * (WIFI_WIRED_DELAY_MS + WIFI_RADIO_DELAY_MS),
    ),
}


def k_bdp_packets(k: float, theta: float = RTAC_THETA) -> float:
    """The BDP (packets) at which RTAC's K puts the operating point at θ: K = a/(θ − 1)·(1/BDP)³."""
    return (RENO_A / (theta - 1) / k) ** (1 / 3)


# ----- experiments -----------------------------------------------------------------------------------

#: Experiment keys, in the report's order.
EXPERIMENTS: dict[str, str] = {
    "rmem": "Auto-tuning against tcp_rmem_max",
    "single": "One flow per receiver",
    "pair": "Two clients in competition",
    "three": "Three clients, one of each receiver",
    "senders": "Sender variants",
    "apbuf": "Wi-Fi competition against the AP's buffer, shared or per station",
}
#: Competing pairs (client 0, client 1): each pair of receivers.
PAIRS: tuple[tuple[str, str], ...] = (
    ("autotuning", "autotuning"),
    ("autotuning", "drwa"),
    ("autotuning", "rtac"),
    ("drwa", "rtac"),
)
#: Sender-variant competition: the receiver under test beside an auto-tuning client, both flows from that sender
#: (and the three clients, one of each receiver, the case the study's sender findings are about).
SENDER_PAIRS: tuple[tuple[str, str], ...] = (("autotuning", "drwa"), ("autotuning", "rtac"))
#: The AP-buffer runs: each receiver beside auto-tuning, and two auto-tuning clients as the control.
AP_PAIRS: tuple[tuple[str, str], ...] = (
    ("autotuning", "autotuning"),
    ("autotuning", "drwa"),
    ("autotuning", "rtac"),
)


@dataclass(frozen=True)
class Settings:
    """How much work a reproduction does (full or --quick)."""

    duration_s: float
    measure_from_s: float  # summaries cover [measure_from_s, duration_s]: slow start excluded
    seeds: tuple[int, ...]
    rmem_kb: tuple[int, ...]
    senders: tuple[str, ...] = tuple(SENDERS)
    ap_packets: tuple[int, ...] = AP_BUFFER_PACKETS
    sample_interval_ms: float = 10.0
    figure_seed: int = 1


#: Full: 60 s runs measured over [10, 60] s, five seeds, nine tcp_rmem_max points.
FULL = Settings(
    duration_s=60.0,
    measure_from_s=10.0,
    seeds=(1, 2, 3, 4, 5),
    rmem_kb=(32, 64, 128, 256, 512, 768, 1024, 1536, 2560),
)
#: Quick: 20 s runs measured over [5, 20] s, two seeds, five tcp_rmem_max points.
QUICK = Settings(
    duration_s=20.0,
    measure_from_s=5.0,
    seeds=(1, 2),
    rmem_kb=(32, 128, 256, 768, 2560),
    ap_packets=(100, 400),
)


@dataclass(frozen=True)
class Run:
    """One simulation: a path, the receiver of each phone client (in client order), the sender, a seed."""

    experiment: str
    path: str
    receivers: tuple[str, ...]
    sender: str = "cubic"
    rmem_kb: int = RMEM_MAX_KB
    seed: int = 1
    ap_packets: int = WIFI_AP_PACKETS  # the Wi-Fi AP's buffer (ignored on LTE)
    ap_buffer: str = "shared"  # shared by the stations, or per station (ignored on LTE)
    duration_s: float = FULL.duration_s
    measure_from_s: float = FULL.measure_from_s
    sample_interval_ms: float = FULL.sample_interval_ms

    def __post_init__(self) -> None:
        check(self)

    @property
    def wired_client(self) -> bool:
        """LTE with several phones is the study's indirect competition: a wired client shares the server's link."""
        return self.path == "lte" and len(self.receivers) > 1

    @property
    def label(self) -> str:
        """ "Auto-tuning vs RTAC", "RTAC"."""
        return " vs ".join(RECEIVERS[r] for r in self.receivers)

    @property
    def params(self) -> dict[str, Any]:
        return {
            "experiment": self.experiment,
            "path": self.path,
            "receivers": "+".join(self.receivers),
            "case": self.label,
            "sender": self.sender,
            "rmem_kb": self.rmem_kb,
            "ap_packets": self.ap_packets,
            "ap_buffer": self.ap_buffer,
            "seed": self.seed,
            "duration_s": self.duration_s,
            "measure_from_s": self.measure_from_s,
        }

    def scenario(self) -> dict[str, Any]:
        return build(self)


def check(run: Run) -> None:
    """A clear error for a run no scenario can be built for (unknown path, receiver, sender, experiment)."""
    if run.experiment not in EXPERIMENTS:
        raise ValueError(f"experiment: expected one of {list(EXPERIMENTS)}, got {run.experiment!r}")
    if run.path not in PATHS:
        raise ValueError(f"path: expected one of {list(PATHS)}, got {run.path!r}")
    if not run.receivers:
        raise ValueError("receivers: expected at least one receiver")
    for r in run.receivers:
        if r not in RECEIVERS:
            raise ValueError(
                f"receivers: unknown receiver {r!r}; expected one of {list(RECEIVERS)}"
            )
    if run.sender not in SENDERS:
        raise ValueError(f"sender: unknown sender {run.sender!r}; expected one of {list(SENDERS)}")
    if not 1 <= run.ap_packets <= 100_000:
        raise ValueError(f"ap_packets: expected 1..100000 packets, got {run.ap_packets!r}")
    if run.ap_buffer not in AP_BUFFERS:
        raise ValueError(f"ap_buffer: expected one of {list(AP_BUFFERS)}, got {run.ap_buffer!r}")
    if not 1 <= run.rmem_kb <= 2**20:
        raise ValueError(f"rmem_kb: expected 1..{2**20} KB, got {run.rmem_kb!r}")
    if not 0 <= run.measure_from_s < run.duration_s:
        raise ValueError(
            f"measure_from_s: expected 0 <= measure_from_s < duration_s, got {run.measure_from_s!r}"
        )


def runs_of(settings: Settings) -> list[Run]:
    """Every run of a reproduction (the sweep runner runs a scenario shared by two experiments once)."""
    out: list[Run] = []
    # Every download starts at t = 0, as the study's clients started theirs together: a receiver whose first RTT
    # sample already includes another flow's full queue takes that for RTT_min, sees no queue (Q̂ = 0 for RTAC,
    # RTT_min/RTT = 1 for DRWA) and never binds the sender.
    common = {
        "duration_s": settings.duration_s,
        "measure_from_s": settings.measure_from_s,
        "sample_interval_ms": settings.sample_interval_ms,
    }
    for seed in settings.seeds:
        for path in PATHS:
            out += [
                Run("rmem", path, ("autotuning",), rmem_kb=kb, seed=seed, **common)
                for kb in settings.rmem_kb
            ]
            out += [Run("single", path, (r,), seed=seed, **common) for r in RECEIVERS]
            out += [Run("pair", path, pair, seed=seed, **common) for pair in PAIRS]
            out.append(Run("three", path, tuple(RECEIVERS), seed=seed, **common))
            for sender in settings.senders:
                out += [
                    Run("senders", path, (r,), sender=sender, seed=seed, **common)
                    for r in RECEIVERS
                ]
                out += [
                    Run("senders", path, pair, sender=sender, seed=seed, **common)
                    for pair in SENDER_PAIRS
                ]
                out.append(
                    Run("senders", path, tuple(RECEIVERS), sender=sender, seed=seed, **common)
                )
        out += [
            Run("apbuf", "wifi", pair, ap_packets=n, ap_buffer=b, seed=seed, **common)
            for b in AP_BUFFERS
            for n in settings.ap_packets
            for pair in AP_PAIRS
        ]
    return out


# ----- the scenario of one run -------------------------------------------------------------------------


def rwnd_table(receiver: str, path: str, rmem_kb: int = RMEM_MAX_KB) -> dict[str, Any]:
    """The flow's tcp.rwnd_controller and tcp.rwnd_params for one receiver on one path."""
    if receiver not in RECEIVERS:
        raise ValueError(
            f"receiver: unknown receiver {receiver!r}; expected one of {list(RECEIVERS)}"
        )
    window_max = max(1, int(rmem_kb * 1024 * WINDOW_FRACTION))
    # The window before the first adjustment: latlab's default (64 KB), or the cap when that is smaller.
    params: dict[str, Any] = {
        "rmem_max_bytes": window_max,
        "initial_rwnd_bytes": min(INITIAL_RWND_BYTES, window_max),
    }
    if receiver == "drwa":
        params["lambda"] = DRWA_LAMBDA
    elif receiver == "rtac":
        spec = PATHS[path]
        # K from θ and the BDP at the path's rate (the study's configuration rule), recomputed by the receiver from
        # its RTT_m + Δ: the study's own K values are this rule at its paths' BDPs (see k_bdp_packets), and a fixed K
        # at a larger BDP puts the operating point below θ ≈ 1.28, where the window oscillates.
        params.update(
            alpha=RTAC_ALPHA,
            beta=RTAC_BETA,
            theta=RTAC_THETA,
            link_rate_bps=spec.capacity_bps,
            delta_ms=spec.delta_ms,
        )
    return {"rwnd_controller": receiver, "rwnd_params": params}


def client_name(i: int, receiver: str) -> str:
    """The flow (group) name of phone client i: "c0-rtac"."""
    return f"c{i}-{receiver}"


def _lte_channel() -> dict[str, Any]:
    return {
        "per_interval": {
            "interval_ms": LTE_CHANNEL_INTERVAL_MS,
            "lognormal": {"median_bps": LTE_CHANNEL_MEDIAN_BPS, "sigma": LTE_CHANNEL_SIGMA},
        }
    }


def _lte_topology(run: Run) -> dict[str, Any]:
    n = len(run.receivers)
    queue = {"kind": "droptail", "limit_bytes": LTE_USER_QUEUE_BYTES}
    if not run.wired_client:
        return {
            "kind": "cellular",
            "users": n,
            "wired_rate_bps": 1e9,
            "wired_delay_ms": LTE_WIRED_DELAY_MS,
            "radio_delay_ms": LTE_RADIO_DELAY_MS,
            "cell": dict(LTE_CELL),
            "rate": _lte_channel(),
            "queue": queue,
            "uplink_rate": {"constant_bps": 10e6},
        }
    # Indirect competition: server —(shared wired bottleneck)— gw —{bs — ue0..ue(n-1), wired client}.
    nodes = [{"name": x} for x in ("server", "gw", "bs", "wired", *(f"ue{i}" for i in range(n)))]
    bottleneck_delay_ms = LTE_WIRED_DELAY_MS - LTE_WIRED_CLIENT_DELAY_MS
    links = [
        {
            "from": "server",
            "to": "gw",
            "rate_bps": LTE_WIRED_BOTTLENECK_BPS,
            "delay_ms": bottleneck_delay_ms,
            "queue": {"kind": "droptail", "limit_packets": LTE_WIRED_BOTTLENECK_PACKETS},
        },
        {"from": "gw", "to": "bs", "rate_bps": 1e9, "delay_ms": LTE_WIRED_CLIENT_DELAY_MS},
        {"from": "gw", "to": "wired", "rate_bps": 1e9, "delay_ms": LTE_WIRED_CLIENT_DELAY_MS},
    ]
    cell = {
        "node": "bs",
        "cell": dict(LTE_CELL),
        "rate": _lte_channel(),
        "queue": queue,
        "radio_delay_ms": LTE_RADIO_DELAY_MS,
        "uplink_rate": {"constant_bps": 10e6},
        "users": [{"node": f"ue{i}"} for i in range(n)],
    }
    return {"kind": "custom", "nodes": nodes, "links": links, "cells": [cell]}


def _wifi_topology(run: Run) -> dict[str, Any]:
    return {
        "kind": "wifi",
        "stations": len(run.receivers),
        "wired_rate_bps": 1e9,
        "wired_delay_ms": WIFI_WIRED_DELAY_MS,
        "radio_delay_ms": WIFI_RADIO_DELAY_MS,
        "rate": {"constant_bps": WIFI_RATE_BPS},
        "frame_error_prob": WIFI_FRAME_ERROR_PROB,
        "ap": {
            "queue": {"kind": "droptail", "limit_packets": run.ap_packets},
            "buffer": run.ap_buffer,
        },
        "uplink_rate": {"constant_bps": 20e6},
    }


def build(run: Run) -> dict[str, Any]:
    """The scenario (a dict) of one run: one download per phone client, plus the wired client on LTE competition."""
    check(run)
    client = "ue" if run.path == "lte" else "sta"
    flows: list[dict[str, Any]] = []
    for i, receiver in enumerate(run.receivers):
        flows.append(
            {
                "name": client_name(i, receiver),
                "kind": "tcp",
                "src": "server",
                "dst": f"{client}{i}",
                "cc": run.sender,
                "start_s": 0.0,
                "tcp": rwnd_table(receiver, run.path, run.rmem_kb),
            }
        )
    if run.wired_client:
        # A desktop on the wired side: CUBIC with an unbounded (fixed, 1 GB) window fills the shared router buffer.
        flows.append(
            {
                "name": "wired",
                "kind": "tcp",
                "src": "server",
                "dst": "wired",
                "cc": "cubic",
                "start_s": 0.0,
            }
        )
    name = f"rtac-study-{run.path}-{'-'.join(run.receivers)}-{run.sender}-{run.rmem_kb}k"
    if run.path == "wifi" and run.ap_packets != WIFI_AP_PACKETS:
        name += f"-ap{run.ap_packets}"
    if run.path == "wifi" and run.ap_buffer != "shared":
        name += f"-{run.ap_buffer}"
    return {
        "name": name,
        "seed": run.seed,
        "duration_s": run.duration_s,
        "measure_from_s": run.measure_from_s,
        "sample_interval_ms": run.sample_interval_ms,
        # Linux defaults; the study's MSS and timestamps (the receivers' RTT samples need them).
        "tcp": {"preset": "linux", "mss_bytes": MSS_BYTES, "timestamps": True},
        "topology": _lte_topology(run) if run.path == "lte" else _wifi_topology(run),
        "flows": flows,
    }
