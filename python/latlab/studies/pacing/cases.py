"""The pacing study's set-up: scenario builders of experiments A–K (K, BBR senders, is latlab's addition), the settings of a full and a quick run.

Every experiment runs on :func:`two_level_dumbbell`, a ``kind = "custom"``
topology generated here with the same nodes, links and parameter ranges as the
core's ``edge-dumbbell`` (s{i} → ie{j} → c0 → c1 → ee{j} → d{i}), because the
study needs queues the built-in kind cannot express:

* the edge pacer only on the ingress edge links ie{j}->c0 (``edge_queue``
  of the edge-dumbbell also lands on c0->ie{j}, c1->ee{j} and ee{j}->c1,
  which would hold ACKs and already-smooth core output up to d);
* a different queue per ingress edge (partial deployment, experiment J);
* an extra 100 Mbps host and edge for the aggregated UDP source (experiment I).

Rates and delays are drawn with numpy from the scenario seed, so the three
pacing modes of one seed share one topology (only queues and TCP settings
differ) and a comparison between modes is paired.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from latlab.studies.pacing.references import HEADLINE_BUFFER_KB

MODES = ("unpaced", "host-paced", "edge-paced")
#: The senders: the study's NewReno, and BBR (experiment K, latlab's addition). BBR paces every flow itself at
#: pacing_gain × its bandwidth estimate (as Linux does), so it has no unpaced mode and its host-paced mode is its own
#: pacing, not the study's cwnd/RTT pacing.
SENDER_CCS = ("newreno", "bbr")
#: The modes a BBR sender can run in.
BBR_MODES = ("host-paced", "edge-paced")
CORE_KINDS = ("droptail", "red", "red-nowait")
#: The ns2 preset's packets: 1000 B on the wire, of which 40 B are TCP/IP headers (goodput counts the rest).
PACKET_BYTES = 1000
TCP_HEADER_BYTES = 40
PAYLOAD_BYTES = PACKET_BYTES - TCP_HEADER_BYTES
#: The study's delays (ms): access and edge drawn uniformly per link, core fixed.
ACCESS_DELAY_MS = (1.0, 5.0)
EDGE_DELAY_MS = (5.0, 15.0)
CORE_DELAY_MS = 100.0
CORE_RATE_BPS = 100e6
#: The mean propagation RTT over the drawn delays (sender access, ingress edge, core, egress edge, receiver access).
MEAN_RTT_S = 2 * (2 * sum(ACCESS_DELAY_MS) / 2 + 2 * sum(EDGE_DELAY_MS) / 2 + CORE_DELAY_MS) / 1e3
#: The study's edge-pacer delay bound d (ms) unless swept.
DEFAULT_DELAY_MS = 10.0
#: ns-2's pacing used factor 1.0 (a window spread evenly over one RTT) in slow start and congestion avoidance.
HOST_PACING = {"pacing": True, "pacing_ss_factor": 1.0, "pacing_ca_factor": 1.0}
#: Edge pacer capacity: it never holds more than d × edge rate (125 packets at 10 ms, 100 Mbps), so this never binds.
PACER_LIMIT_PACKETS = 10_000
#: ns-2's default queue limit (packets), for access links where they are the bottleneck (experiment F).
NS2_QUEUE_PACKETS = 50
#: A distinct numpy stream for topology draws (seeded by [seed, TAG]).
_TOPOLOGY_TAG = 0x70616365


# ----- topology ----------------------------------------------------------------


def _draw(rng: np.random.Generator, value: float | Sequence[float]) -> float:
    if isinstance(value, (int, float)):
        return float(value)
    lo, hi = value
    return float(lo) if lo == hi else float(rng.uniform(lo, hi))


def two_level_dumbbell(
    seed: int,
    edges: int = 10,
    hosts_per_edge: int = 100,
    access_rate_bps: float | Sequence[float] = (8e6, 12e6),
    access_delay_ms: float | Sequence[float] = ACCESS_DELAY_MS,
    edge_rate_bps: float | Sequence[float] = 100e6,
    edge_delay_ms: float | Sequence[float] = EDGE_DELAY_MS,
    core_rate_bps: float = CORE_RATE_BPS,
    core_delay_ms: float = CORE_DELAY_MS,
    core_queue: dict[str, Any] | None = None,
    ingress_queues: dict[str, Any] | Sequence[dict[str, Any] | None] | None = None,
    edge_queue: dict[str, Any] | None = None,
    access_queue: dict[str, Any] | None = None,
    udp_host: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The study's two-level dumbbell as a custom topology (a ``[topology]`` table as a dict).

    Nodes and links mirror the core's ``edge-dumbbell``: per edge j, duplex
    ingress (ie{j}–c0) and egress (c1–ee{j}) edge links, then per host a
    sender access link s{i}–ie{j} and a receiver access link ee{j}–d{i},
    drawn in that order. ``ingress_queues`` (one spec, or one per edge, None
    for the default) sits only on ie{j}->c0; c0->ie{j} and both egress edge
    directions get ``edge_queue``. ``udp_host`` (e.g. ``{"rate_bps": 100e6}``)
    adds su0–ieu–c0 and c1–eeu–du0 for an aggregated UDP source; its ingress
    link gets ``udp_host["ingress_queue"]`` if set. Queues left None take the
    core's default (a large DropTail).
    """
    rng = np.random.default_rng([seed, _TOPOLOGY_TAG])
    if ingress_queues is None or isinstance(ingress_queues, dict):
        ingress_queues = [ingress_queues] * edges
    if len(ingress_queues) != edges:
        raise ValueError(f"ingress_queues: expected {edges} specs, got {len(ingress_queues)}")
    nodes = [f"s{i}" for i in range(edges * hosts_per_edge)] + [
        f"d{i}" for i in range(edges * hosts_per_edge)
    ]
    nodes += [f"ie{j}" for j in range(edges)] + [f"ee{j}" for j in range(edges)] + ["c0", "c1"]
    links: list[dict[str, Any]] = []

    def link(
        a: str, b: str, rate: float, delay: float, queue: dict[str, Any] | None, duplex: bool = True
    ) -> None:
        spec: dict[str, Any] = {
            "from": a,
            "to": b,
            "rate_bps": rate,
            "delay_ms": delay,
            "duplex": duplex,
        }
        if queue is not None:
            spec["queue"] = dict(queue)
        links.append(spec)

    link("c0", "c1", core_rate_bps, core_delay_ms, core_queue)

    def ingress(ie: str, ingress_queue: dict[str, Any] | None, rate: float, delay: float) -> None:
        # Two one-way links so the pacer (or any ingress queue) sees only data towards the core.
        link(ie, "c0", rate, delay, ingress_queue, duplex=False)
        link("c0", ie, rate, delay, edge_queue, duplex=False)

    for j in range(edges):
        rate, delay = _draw(rng, edge_rate_bps), _draw(rng, edge_delay_ms)
        ingress(f"ie{j}", ingress_queues[j], rate, delay)
        link("c1", f"ee{j}", _draw(rng, edge_rate_bps), _draw(rng, edge_delay_ms), edge_queue)
        for i in range(j * hosts_per_edge, (j + 1) * hosts_per_edge):
            link(
                f"s{i}",
                f"ie{j}",
                _draw(rng, access_rate_bps),
                _draw(rng, access_delay_ms),
                access_queue,
            )
            link(
                f"ee{j}",
                f"d{i}",
                _draw(rng, access_rate_bps),
                _draw(rng, access_delay_ms),
                access_queue,
            )
    if udp_host is not None:
        rate = float(udp_host.get("rate_bps", 100e6))
        nodes += ["su0", "du0", "ieu", "eeu"]
        ingress("ieu", udp_host.get("ingress_queue"), rate, _draw(rng, edge_delay_ms))
        link("c1", "eeu", rate, _draw(rng, edge_delay_ms), edge_queue)
        link("su0", "ieu", rate, _draw(rng, access_delay_ms), None)
        link("eeu", "du0", rate, _draw(rng, access_delay_ms), None)
    return {"kind": "custom", "nodes": [{"name": n} for n in nodes], "links": links}


def rtt_range_ms(topology: dict[str, Any]) -> tuple[float, float]:
    """Smallest and largest propagation RTT (ms) between s{i} and d{i} in a :func:`two_level_dumbbell`."""
    delay = {(lk["from"], lk["to"]): lk["delay_ms"] for lk in topology["links"]}
    up = {a: b for (a, b) in delay if a[:1] == "s" and a[1:].isdigit() and b.startswith("ie")}
    down = {b: a for (a, b) in delay if a.startswith("ee") and b[:1] == "d" and b[1:].isdigit()}
    rtts = []
    for s, ie in up.items():
        i = s[1:]
        ee = down[f"d{i}"]
        one_way = (
            delay[(s, ie)]
            + delay[(ie, "c0")]
            + delay[("c0", "c1")]
            + delay[("c1", ee)]
            + delay[(ee, f"d{i}")]
        )
        rtts.append(2 * one_way)
    return min(rtts), max(rtts)


# ----- queues --------------------------------------------------------------------


def droptail(buffer_kb: float) -> dict[str, Any]:
    return {"kind": "droptail", "limit_bytes": int(round(buffer_kb * 1000))}


def red(buffer_kb: float, wait: bool = True) -> dict[str, Any]:
    """Experiment G: max_th = the buffer, min_th = 40 % of it (in 1000-byte packets), max_p 0.1, w_q 0.002; ns-2's
    ``wait_`` (its default) unless ``wait`` is false (experiment G-wait: the paper's p_a = p_b / (1 - count p_b))."""
    max_th = buffer_kb  # 1000-byte packets
    return {
        "kind": "red",
        "limit_bytes": int(round(buffer_kb * 1000)),
        "min_th": 0.4 * max_th,
        "max_th": max_th,
        "max_p": 0.1,
        "w_q": 0.002,
        "wait": wait,
    }


def edge_pacer(delay_ms: float) -> dict[str, Any]:
    return {"kind": "edge-pacer", "delay_ms": float(delay_ms), "limit_packets": PACER_LIMIT_PACKETS}


# ----- one run -------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """One simulation of the study: its parameters (the catalog row) and how to build it."""

    experiment: str
    mode: str  # unpaced | host-paced | edge-paced
    buffer_kb: float
    seed: int = 1
    duration_s: float = 400.0
    measure_from_s: float = 100.0
    delay_ms: float = DEFAULT_DELAY_MS  # edge pacer d
    flows: int = 1000
    hosts_per_edge: int | None = None  # default flows / edges
    edges: int = 10
    access_rate_bps: float | tuple[float, float] = (8e6, 12e6)
    access_delay_ms: tuple[float, float] = ACCESS_DELAY_MS
    edge_rate_bps: float = 100e6
    core_rate_bps: float = 100e6
    core_kind: str = "droptail"  # droptail | red | red-nowait
    recovery: str = "newreno"
    workload: str = "bulk"  # bulk | closed-loop
    udp: str = ""  # "" | poisson | lrd
    paced_fraction: float = 1.0  # J: share of hosts (host-paced) or edges (edge-paced) that pace
    access_queue_packets: int | None = None
    min_rto_ms: float | None = None  # None: the ns2 preset's 200 ms (ns-2.35's minrto_ default)
    initial_window: int | None = None  # None: the ns2 preset's IW 10
    cc: str = "newreno"  # newreno | bbr (experiment K)

    @property
    def params(self) -> dict[str, Any]:
        return {
            "experiment": self.experiment,
            "mode": self.mode,
            "buffer_kb": self.buffer_kb,
            "seed": self.seed,
            "delay_ms": self.delay_ms if self.mode == "edge-paced" else 0.0,
            "flows": self.flows,
            "recovery": self.recovery,
            "workload": self.workload,
            "udp": self.udp,
            "core_kind": self.core_kind,
            "paced_fraction": self.paced_fraction,
            "duration_s": self.duration_s,
            "measure_from_s": self.measure_from_s,
            "min_rto_ms": self.min_rto_ms or 200.0,
            "initial_window": self.initial_window or 10,
            "cc": self.cc,
        }

    @property
    def paced_count(self) -> int:
        """How many hosts (host-paced) or edges (edge-paced) pace."""
        total = self.flows if self.mode == "host-paced" else self.edges
        return int(round(self.paced_fraction * total))

    def scenario(self) -> dict[str, Any]:
        return build(self)


def _sample_interval_ms(run: Run) -> float:
    """Cumulative link counters are sampled; the window's loss needs a sample at ``measure_from_s``: the largest
    of 10 s (1 s before 10 s) and its divisors that divides the start of the window, in whole milliseconds."""
    start_ms = run.measure_from_s * 1000
    if start_ms != int(start_ms):
        raise ValueError(
            f"measure_from_s must be a whole number of milliseconds, got {run.measure_from_s!r}"
        )
    start_ms = int(start_ms)
    if start_ms == 0:
        return 1000.0
    return float(math.gcd(10_000 if run.measure_from_s >= 10 else 1000, start_ms))


def build(run: Run) -> dict[str, Any]:
    """The scenario (a dict) of one run."""
    if run.mode not in MODES:
        raise ValueError(f"mode: expected one of {MODES}, got {run.mode!r}")
    if run.cc not in SENDER_CCS:
        raise ValueError(f"cc: expected one of {SENDER_CCS}, got {run.cc!r}")
    if run.cc == "bbr" and run.mode not in BBR_MODES:
        raise ValueError(
            f"mode: a BBR sender always paces itself, so it runs in {BBR_MODES}, got {run.mode!r}"
        )
    hosts = run.hosts_per_edge or run.flows // run.edges
    if hosts * run.edges != run.flows:
        raise ValueError(f"{run.flows} flows do not split evenly over {run.edges} edges")
    if run.core_kind not in CORE_KINDS:
        raise ValueError(f"core_kind: expected one of {CORE_KINDS}, got {run.core_kind!r}")
    core = (
        red(run.buffer_kb, wait=run.core_kind == "red")
        if run.core_kind.startswith("red")
        else droptail(run.buffer_kb)
    )
    ingress: list[dict[str, Any] | None] = [None] * run.edges
    if run.mode == "edge-paced":
        # Partial deployment paces the first edges; 100 % paces them all (and the UDP edge).
        ingress = [
            edge_pacer(run.delay_ms) if j < run.paced_count else None for j in range(run.edges)
        ]
    access_queue = (
        {"kind": "droptail", "limit_packets": run.access_queue_packets}
        if run.access_queue_packets
        else None
    )
    udp_host = None
    if run.udp:
        udp_host = {
            "rate_bps": 100e6,
            "ingress_queue": edge_pacer(run.delay_ms)
            if run.mode == "edge-paced" and run.paced_fraction >= 1
            else None,
        }
    topology = two_level_dumbbell(
        run.seed,
        edges=run.edges,
        hosts_per_edge=hosts,
        access_rate_bps=run.access_rate_bps,
        access_delay_ms=run.access_delay_ms,
        edge_rate_bps=run.edge_rate_bps,
        core_rate_bps=run.core_rate_bps,
        core_queue=core,
        ingress_queues=ingress,
        access_queue=access_queue,
        udp_host=udp_host,
    )
    tcp: dict[str, Any] = {"preset": "ns2", "recovery": run.recovery}
    if run.min_rto_ms is not None:
        tcp["min_rto_ms"] = run.min_rto_ms
    if run.initial_window is not None:
        tcp["initial_window_segments"] = run.initial_window
    flows: list[dict[str, Any]] = []
    base: dict[str, Any] = {
        "src": "s{i}",
        "dst": "d{i}",
        "cc": run.cc,
        "start_s": {"uniform": [0.0, 10.0]},
    }
    if run.workload == "closed-loop":
        base["closed_loop"] = {
            "pareto_mean_bytes": 100_000,
            "pareto_shape": 1.2,
            "think_mean_s": 1.0,
        }
    elif run.workload != "bulk":
        raise ValueError(f"workload: expected bulk or closed-loop, got {run.workload!r}")
    if run.mode == "host-paced" and run.paced_fraction < 1:
        # The first hosts pace: with hosts numbered edge by edge these sit behind the first edges, the same
        # flows edge pacing covers at the same fraction, so the paced/unpaced split is comparable.
        n = run.paced_count
        if n:
            flows.append(
                {**base, "name": "paced", "count": n, "first_index": 0, "tcp": dict(HOST_PACING)}
            )
        if run.flows - n:
            flows.append({**base, "name": "unpaced", "count": run.flows - n, "first_index": n})
    elif run.mode == "edge-paced" and run.paced_fraction < 1:
        n = run.paced_count * hosts
        if n:
            flows.append({**base, "name": "paced", "count": n, "first_index": 0})
        if run.flows - n:
            flows.append({**base, "name": "unpaced", "count": run.flows - n, "first_index": n})
    else:
        if run.mode == "host-paced" and run.cc != "bbr":  # BBR paces at its own rate, not cwnd/RTT
            tcp.update(HOST_PACING)
        flows.append({**base, "name": "tcp", "count": run.flows})
    if run.udp == "poisson":
        flows.append(
            {
                "name": "udp",
                "kind": "udp",
                "src": "su0",
                "dst": "du0",
                "udp": {"pattern": "poisson", "rate_bps": 5.5e6, "size_bytes": [100, 300]},
            }
        )
    elif run.udp == "lrd":
        flows.append(
            {
                "name": "udp",
                "kind": "udp",
                "src": "su0",
                "dst": "du0",
                "udp": {"pattern": "lrd", "rate_bps": 6e6, "size_bytes": [100, 300], "hurst": 0.85},
            }
        )
    elif run.udp:
        raise ValueError(f"udp: expected poisson or lrd, got {run.udp!r}")
    # The name leaves the experiment out: the run id is a hash of the scenario, so a set-up two experiments
    # share (A's runs are J's 0 % and 100 % and H's references) runs once.
    name = f"pacing-{run.mode}-{run.buffer_kb:g}kB" + ("" if run.cc == "newreno" else f"-{run.cc}")
    return {
        "name": name,
        "seed": run.seed,
        "duration_s": run.duration_s,
        "measure_from_s": run.measure_from_s,
        "sample_interval_ms": _sample_interval_ms(run),
        "tcp": tcp,
        "topology": topology,
        "flows": flows,
        "outputs": {"max_sampled_flows": 0},
    }


# ----- the experiments ---------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    """How much work a reproduction does (full or --quick)."""

    duration_s: float
    measure_from_s: float
    buffers_kb: tuple[float, ...]  # experiment A's grid
    other_buffers_kb: tuple[float, ...]  # B–G, I, J
    delays_ms: tuple[float, ...]  # H: d swept at the two buffers below
    delay_buffers_kb: tuple[float, ...]  # H: low load and high load
    delay_set_ms: tuple[float, ...]  # H: d values plotted against the buffer
    experiments: tuple[str, ...]
    b_flows: tuple[int, ...] = (100, 500)
    udp_patterns: tuple[str, ...] = ("poisson", "lrd")
    j_fractions: tuple[float, ...] = (0.3, 0.5)
    j_buffers_kb: tuple[float, ...] = (5.0,)
    e_recoveries: tuple[str, ...] = ("sack", "fack")
    e_buffers_kb: tuple[float, ...] = (2.0, 5.0, 20.0)
    i_delays_ms: tuple[float, ...] = (0.0, 10.0, 100.0)  # I: d swept at delay_buffers_kb
    seeds: tuple[int, ...] = (1,)
    #: A at the reference buffer again with these seeds (experiment "A-seeds"): the spread of the headline.
    headline_seeds: tuple[int, ...] = ()
    #: A again with a longer minimum RTO at these buffers (experiment "A-rto"): the headline's sensitivity to it.
    rto_min_ms: float = 1000.0
    rto_buffers_kb: tuple[float, ...] = ()
    #: G again without ns-2's wait rule at these buffers (experiment "G-wait"): why G's RED acts as DropTail.
    red_nowait_buffers_kb: tuple[float, ...] = ()
    #: D again with a small initial window at these buffers (experiment "D-iw"): every file of a closed-loop user
    #: opens a new connection, so the initial window, which the study does not give, acts on every file.
    d_iw_segments: int = 2
    d_iw_buffers_kb: tuple[float, ...] = ()


ALL_EXPERIMENTS = tuple("ABCDEFGHIJK")


def runs_of(exp: str, s: Settings) -> list[Run]:
    """The runs of one experiment (A–K) under settings ``s``."""
    common = {"duration_s": s.duration_s, "measure_from_s": s.measure_from_s}
    out: list[Run] = []
    for seed in s.seeds:
        kw = {**common, "seed": seed}
        if exp == "A":
            out += [Run("A", m, b, **kw) for b in s.buffers_kb for m in MODES]
        elif exp == "B":
            out += [
                Run("B", m, b, flows=n, **kw)
                for n in s.b_flows
                for b in s.other_buffers_kb
                for m in MODES
            ]
        elif exp == "C":
            out += [
                Run("C", m, b, access_rate_bps=100e6, **kw)
                for b in s.other_buffers_kb
                for m in MODES
            ]
        elif exp == "D":
            out += [
                Run("D", m, b, workload="closed-loop", **kw)
                for b in s.other_buffers_kb
                for m in MODES
            ]
        elif exp == "E":
            out += [
                Run("E", m, b, recovery=rec, **kw)
                for rec in s.e_recoveries
                for b in s.e_buffers_kb
                for m in MODES
            ]
        elif exp == "F":
            out += [
                Run(
                    "F",
                    m,
                    b,
                    flows=100,
                    access_rate_bps=(1e6, 2e6),
                    edge_rate_bps=40e6,
                    core_rate_bps=200e6,
                    access_queue_packets=NS2_QUEUE_PACKETS,
                    **kw,
                )
                for b in s.other_buffers_kb
                for m in MODES
            ]
        elif exp == "G":
            out += [
                Run("G", m, b, core_kind="red", **kw) for b in s.other_buffers_kb for m in MODES
            ]
        elif exp == "H":
            out += [
                Run("H", "edge-paced", b, delay_ms=d, **kw)
                for b in s.delay_buffers_kb
                for d in s.delays_ms
            ]
            out += [
                Run("H", "edge-paced", b, delay_ms=d, **kw)
                for d in s.delay_set_ms
                for b in s.other_buffers_kb
            ]
            # references for the d sweep: unpaced and host-paced at the same buffers
            out += [Run("H", m, b, **kw) for b in s.delay_buffers_kb for m in MODES[:2]]
        elif exp == "I":
            for pat in s.udp_patterns:
                out += [Run("I", m, b, udp=pat, **kw) for b in s.other_buffers_kb for m in MODES]
                out += [
                    Run("I", "edge-paced", b, udp=pat, delay_ms=d, **kw)
                    for b in s.delay_buffers_kb
                    for d in s.i_delays_ms
                ]
        elif exp == "J":
            out += [
                Run("J", m, b, paced_fraction=f, **kw)
                for b in s.j_buffers_kb
                for f in s.j_fractions
                for m in MODES[1:]
            ]
            out += [Run("J", m, b, **kw) for b in s.j_buffers_kb for m in MODES]  # 0 % and 100 %
        elif exp == "K":
            out += [Run("K", m, b, cc="bbr", **kw) for b in s.other_buffers_kb for m in BBR_MODES]
        elif exp == "A-seeds":
            out += [
                Run("A-seeds", m, HEADLINE_BUFFER_KB, **{**kw, "seed": hs})
                for hs in s.headline_seeds
                for m in MODES
            ]
        elif exp == "G-wait":
            out += [
                Run("G-wait", m, b, core_kind="red-nowait", **kw)
                for b in s.red_nowait_buffers_kb
                for m in MODES
            ]
        elif exp == "D-iw":
            out += [
                Run("D-iw", m, b, workload="closed-loop", initial_window=s.d_iw_segments, **kw)
                for b in s.d_iw_buffers_kb
                for m in MODES
            ]
        elif exp == "A-rto":
            out += [
                Run("A-rto", m, b, min_rto_ms=s.rto_min_ms, **kw)
                for b in s.rto_buffers_kb
                for m in MODES
            ]
        else:
            raise ValueError(f"unknown experiment {exp!r}; expected one of {ALL_EXPERIMENTS}")
    # One run per distinct set-up (H's d = 10 ms runs are A's, etc. are run again under their own label,
    # which keeps each experiment's table self-contained; the dedupe is only within an experiment).
    seen: dict[tuple, Run] = {}
    for r in out:
        seen.setdefault(tuple(sorted(r.params.items())), r)
    return list(seen.values())


#: Full reproduction: the study's run length and window, its buffer range (1–50 KB). ~220 runs, see the report.
FULL = Settings(
    duration_s=400.0,
    measure_from_s=100.0,
    buffers_kb=(1, 2, 3, 4, 5, 7, 10, 15, 20, 30, 50),
    other_buffers_kb=(2, 5, 10, 20),
    delays_ms=(0, 1, 2, 5, 10, 20, 50, 100),
    delay_buffers_kb=(5, 50),
    delay_set_ms=(1, 10, 100, 200),
    experiments=ALL_EXPERIMENTS,
    b_flows=(100, 500),
    udp_patterns=("poisson", "lrd"),
    j_fractions=(0.3, 0.5),
    j_buffers_kb=(5, 10),
    e_recoveries=("sack", "fack"),
    e_buffers_kb=(2, 5, 10, 20),
    i_delays_ms=(0, 10, 100),
    headline_seeds=(2, 3),
    rto_buffers_kb=(3, 5, 10),
    red_nowait_buffers_kb=(5, 10),
    d_iw_buffers_kb=(10,),
)
#: Quick: 80 s runs measured over [30, 80] s, fewer buffers; C and E (variants of A's set-up) and I's LRD source skipped.
QUICK = Settings(
    duration_s=80.0,
    measure_from_s=30.0,
    buffers_kb=(1, 2, 3, 5, 10, 20, 50),
    other_buffers_kb=(3, 5, 20),
    delays_ms=(0, 1, 10, 100),
    delay_buffers_kb=(5, 50),
    delay_set_ms=(10, 100),
    experiments=("A", "B", "D", "F", "G", "H", "I", "J", "K"),
    b_flows=(100,),
    udp_patterns=("poisson",),
    j_fractions=(0.3,),
    j_buffers_kb=(5,),
    i_delays_ms=(0, 10, 100),
    headline_seeds=(2, 3),
    rto_buffers_kb=(5,),
    red_nowait_buffers_kb=(5,),
    d_iw_buffers_kb=(5,),
)

EXPERIMENT_TITLES = {
    "A": "Core bottleneck, 1000 flows",
    "B": "Fewer flows (100 and 500)",
    "C": "High-speed access links (100 Mbps)",
    "D": "Short-lived flows: 1000 closed-loop users",
    "E": "TCP variants: SACK and FACK (NewReno is A)",
    "F": "Core not the bottleneck (core 200 Mbps, edges 40 Mbps, access 1–2 Mbps, 100 flows)",
    "G": "RED at the core",
    "H": "Edge pacer delay bound d",
    "I": "Mixed TCP and real-time UDP",
    "J": "Partial deployment",
    "K": "BBR senders: their own pacing, and behind the edge pacer (latlab's addition)",
}


def all_runs(settings: Settings) -> list[Run]:
    """Every run of a reproduction: the experiments, A's extra seeds and minimum-RTO runs, and G without wait."""
    runs: list[Run] = []
    for exp in settings.experiments:
        runs += runs_of(exp, settings)
    if settings.headline_seeds and "A" in settings.experiments:
        runs += runs_of("A-seeds", settings)
    if settings.rto_buffers_kb and "A" in settings.experiments:
        runs += runs_of("A-rto", settings)
    if settings.red_nowait_buffers_kb and "G" in settings.experiments:
        runs += runs_of("G-wait", settings)
    if settings.d_iw_buffers_kb and "D" in settings.experiments:
        runs += runs_of("D-iw", settings)
    return runs
