"""The DFlow study's set-up: the path, the cases (who shares the bottleneck), DFlow's base-period variants,
the settings of a full and a quick reproduction, and the scenario of one run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: The study's ns-2 dumbbell: 2 Mb/s bottleneck, 35-packet DropTail queue, 120 ms propagation RTT.
BOTTLENECK_RATE_BPS = 2e6
QUEUE_PACKETS = 35
ACCESS_RATE_BPS = 100e6
ACCESS_DELAY_MS = 5.0
CORE_DELAY_MS = 50.0
#: Propagation RTT: (5 + 50 + 5) ms each way.
RTT_S = 2 * (2 * ACCESS_DELAY_MS + CORE_DELAY_MS) / 1e3
#: The study's delay target: DFlow's cd_thresh and LEDBAT's TARGET.
TARGET_MS = 50.0
#: DFlow's current period (the draft's 50 ms): the receiver's delay events are judged per period.
CURRENT_PERIOD_MS = 50.0
#: TFRC/DFlow data packets: 1200 B of payload (s in the equation) + 44 B (IPv4 + UDP + TFRC header).
SEGMENT_BYTES = 1200
TFRC_HEADER_BYTES = 44
PACKET_BYTES = SEGMENT_BYTES + TFRC_HEADER_BYTES
#: TCP gets the same wire size (ns2 preset: 40 header bytes), so "35 packets" is one delay whoever fills the queue.
TCP_HEADER_BYTES = 40
TCP_MSS_BYTES = PACKET_BYTES - TCP_HEADER_BYTES
#: The queueing delay of a full buffer: 35 × 1244 B × 8 / 2 Mb/s = 174.2 ms.
FULL_QUEUE_DELAY_S = QUEUE_PACKETS * PACKET_BYTES * 8 / BOTTLENECK_RATE_BPS
#: The bottleneck link's name in latlab's dumbbell.
BOTTLENECK = "left->right"
#: Flows start uniformly in [0, START_SPREAD_S] s (seeded), as in ns-2 scripts that stagger starts slightly.
START_SPREAD_S = 2.0
SAMPLE_INTERVAL_MS = 100.0
#: TFRC's lowest rate: one packet per t_mbi = 64 s (RFC 5348 §4.3).
MIN_RATE_BPS = SEGMENT_BYTES * 8 / 64.0


@dataclass(frozen=True)
class Case:
    """One of the study's five set-ups: who shares the bottleneck."""

    title: str
    short: str  # axis labels
    dflows: int = 0
    tfrcs: int = 0
    rival: str = ""  # a TCP congestion controller that competes with the DFlow flow(s)
    rival_params: dict[str, float] = field(default_factory=dict)
    rival_label: str = ""


#: The study's runs (studies.md §3), in its order. "vs" runs: one DFlow flow against one TCP flow.
CASES: dict[str, Case] = {
    "dflow": Case("5 DFlow flows", "5 DFlow", dflows=5),
    "tfrc": Case("5 TFRC flows", "5 TFRC", tfrcs=5),
    "ledbat": Case(
        "DFlow vs LEDBAT (target 50 ms)",
        "DFlow vs LEDBAT",
        dflows=1,
        rival="ledbat",
        rival_params={"target_ms": TARGET_MS},
        rival_label="LEDBAT",
    ),
    "vegas": Case(
        "DFlow vs TCP Vegas (α = 1, β = 3)",
        "DFlow vs Vegas",
        dflows=1,
        rival="vegas",
        rival_params={"alpha": 1.0, "beta": 3.0, "gamma": 1.0},
        rival_label="Vegas",
    ),
    "newreno": Case(
        "DFlow vs TCP NewReno", "DFlow vs NewReno", dflows=1, rival="newreno", rival_label="NewReno"
    ),
}

#: DFlow's base_period (in RTTs), swept: the outcome against LEDBAT and Vegas turns on it (see the report).
BASE_PERIODS_RTTS = (10, 30, 100, 300, 1000, 3000, 10000)
VARIANTS: dict[str, float] = {f"base{n}": float(n) for n in BASE_PERIODS_RTTS}
#: The primary runs: 10 000 RTTs (over 20 minutes here) never forget the empty queue of the start within a run,
#: so DFlow's base is the true propagation delay throughout. Shorter periods let a standing queue drift into the
#: base once it has stood for base_period; 1000 RTTs does so after about 3 minutes at the loaded RTT, inside a
#: 300 s run.
PRIMARY = "base10000"
#: Variants whose time series are kept and drawn: the DFlow draft's default and the project's usual 1000 RTTs.
DRAWN = (PRIMARY, "base1000", "base10")
VARIANT_LABEL = {f"base{n}": f"base period {n} RTTs" for n in BASE_PERIODS_RTTS}
VARIANT_LABEL.update(
    base10="base period 10 RTTs (the DFlow draft's default)",
    base10000="base period 10 000 RTTs (no drift)",
)


@dataclass(frozen=True)
class Settings:
    """How much work a reproduction does (full or --quick)."""

    duration_s: float
    measure_from_s: float  # summaries cover [measure_from_s, duration_s]: slow start and the first queue excluded
    seeds: tuple[int, ...]
    variants: tuple[str, ...] = tuple(VARIANTS)
    figure_seed: int = 1  # the seed whose time series are drawn


#: Full: 300 s runs measured over [60, 300] s, ten seeds (start orders), every base period: 290 runs.
#: A run costs well under a second, so seeds are cheap, and delay-based flows need them (who starts first matters).
FULL = Settings(duration_s=300.0, measure_from_s=60.0, seeds=tuple(range(1, 11)))
#: Quick: 120 s runs measured over [30, 120] s, the first five seeds, five base periods: 105 runs.
QUICK = Settings(
    duration_s=120.0,
    measure_from_s=30.0,
    seeds=(1, 2, 3, 4, 5),
    variants=("base10", "base100", "base300", "base1000", "base10000"),
)


@dataclass(frozen=True)
class Run:
    """One simulation: a case, a DFlow base-period variant and a seed."""

    case: str
    variant: str = PRIMARY
    seed: int = 1
    duration_s: float = FULL.duration_s
    measure_from_s: float = FULL.measure_from_s

    @property
    def params(self) -> dict[str, Any]:
        return {
            "case": self.case,
            "variant": self.variant,
            "base_period_rtts": VARIANTS.get(self.variant, np.nan),
            "seed": self.seed,
            "duration_s": self.duration_s,
            "measure_from_s": self.measure_from_s,
        }

    def scenario(self) -> dict[str, Any]:
        return build(self)


def runs_of(settings: Settings) -> list[Run]:
    """Every run of a reproduction. TFRC alone has no base period, so it runs under the primary variant only."""
    out = []
    variants = [PRIMARY] + [v for v in settings.variants if v != PRIMARY]  # the primary runs always
    for variant in variants:
        for case_name, case in CASES.items():
            if not case.dflows and variant != PRIMARY:
                continue
            out += [
                Run(case_name, variant, seed, settings.duration_s, settings.measure_from_s)
                for seed in settings.seeds
            ]
    return out


def _tfrc_table(dflow: bool, base_period_rtts: float) -> dict[str, Any]:
    table: dict[str, Any] = {"segment_bytes": SEGMENT_BYTES, "header_bytes": TFRC_HEADER_BYTES}
    if dflow:
        # The draft's settings: 50 ms current period, no gradient test (the study left it off).
        table.update(
            cd_thresh_ms=TARGET_MS,
            base_period_rtts=base_period_rtts,
            current_period_ms=CURRENT_PERIOD_MS,
            gradient_test=False,
        )
    return table


def build(run: Run) -> dict[str, Any]:
    """The scenario (a dict) of one run: latlab's dumbbell, one host pair per flow."""
    if run.case not in CASES:
        raise ValueError(f"case: expected one of {list(CASES)}, got {run.case!r}")
    if run.variant not in VARIANTS:
        raise ValueError(f"variant: expected one of {list(VARIANTS)}, got {run.variant!r}")
    case = CASES[run.case]
    start = {"uniform": [0.0, START_SPREAD_S]}
    flows: list[dict[str, Any]] = []
    index = 0
    if case.tfrcs:
        flows.append(
            {
                "name": "tfrc",
                "kind": "tfrc",
                "count": case.tfrcs,
                "first_index": index,
                "src": "s{i}",
                "dst": "d{i}",
                "start_s": start,
                "tfrc": _tfrc_table(False, 0.0),
            }
        )
        index += case.tfrcs
    if case.dflows:
        flows.append(
            {
                "name": "dflow",
                "kind": "dflow",
                "count": case.dflows,
                "first_index": index,
                "src": "s{i}",
                "dst": "d{i}",
                "start_s": start,
                "tfrc": _tfrc_table(True, VARIANTS[run.variant]),
            }
        )
        index += case.dflows
    if case.rival:
        tcp: dict[str, Any] = {
            "name": case.rival,
            "kind": "tcp",
            "cc": case.rival,
            "count": 1,
            "first_index": index,
            "src": "s{i}",
            "dst": "d{i}",
            "start_s": start,
            # ns2 preset (one ACK per segment, timestamps: LEDBAT's one-way delay), 1244-B packets
            "tcp": {"preset": "ns2", "mss_bytes": TCP_MSS_BYTES, "header_bytes": TCP_HEADER_BYTES},
        }
        if case.rival_params:
            tcp["cc_params"] = dict(case.rival_params)
        flows.append(tcp)
        index += 1
    # TFRC alone does not depend on the variant: leaving it out of the name keeps one scenario (one run id).
    name = f"dflow-study-{run.case}" + (f"-{run.variant}" if case.dflows else "")
    return {
        "name": name,
        "seed": run.seed,
        "duration_s": run.duration_s,
        "measure_from_s": run.measure_from_s,
        "sample_interval_ms": SAMPLE_INTERVAL_MS,
        "topology": {
            "kind": "dumbbell",
            "pairs": index,
            "access_rate_bps": ACCESS_RATE_BPS,
            "access_delay_ms": ACCESS_DELAY_MS,
            "core_rate_bps": BOTTLENECK_RATE_BPS,
            "core_delay_ms": CORE_DELAY_MS,
            "core_queue": {"kind": "droptail", "limit_packets": QUEUE_PACKETS},
        },
        "flows": flows,
    }


#: The RTT with a 50 ms standing queue (and a packet's transmission), to turn base periods into seconds.
LOADED_RTT_S = RTT_S + TARGET_MS / 1e3 + PACKET_BYTES * 8 / BOTTLENECK_RATE_BPS
