"""DFlow: low-latency congestion control for media (specs/studies.md §3, specs/tfrc-dflow.md).

The study (O'Hanlon and Carlberg, DFlow, draft-ohanlon-rmcat-dflow, with
ns-2) built DFlow on TFRC (RFC 5348): the receiver also turns "delay
congestion events" (50 ms periods whose queueing delay, current − base
one-way delay, exceeds cd_thresh = 50 ms) into entries of TFRC's
loss-interval history, so the sender's equation rate falls before the
buffer overflows. On an ns-2 dumbbell (2 Mb/s bottleneck, 35-packet DropTail
queue, 120 ms RTT) it ran five DFlow flows, five TFRC flows, and one DFlow
against LEDBAT, TCP Vegas and TCP NewReno, and plotted the TCP throughput
equation against the loss event rate over that path (the "knee").

``reproduce`` builds every run (:func:`runs_of`: case × DFlow base period ×
seed; :func:`build` turns one into a scenario dict), runs the distinct
scenarios once through latlab's sweep runner (resumable), reduces each run to
a summary row, per-flow rows and time series (:func:`run_metrics`), and
writes Parquet tables, figures (:mod:`latlab.studies._dflow_figures`) and
report.md. The TCP equation and Jain's index, which the figures and the
report use, are the small models at the top of this module.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from latlab.studies._markdown import num as _f
from latlab.studies._markdown import pct
from latlab.studies._markdown import table as _table

NAME = "dflow"
DESCRIPTION = ("DFlow media congestion control vs TFRC, LEDBAT, Vegas and NewReno on a 2 Mb/s dumbbell: "
               "queueing delay, loss, fairness, the TCP-equation knee")  # fmt: skip

# ----- the path ----------------------------------------------------------------------------

BOTTLENECK_RATE_BPS = 2e6
QUEUE_PACKETS = 35
ACCESS_RATE_BPS = 100e6
ACCESS_DELAY_MS = 5.0
CORE_DELAY_MS = 50.0
#: Propagation RTT: (5 + 50 + 5) ms each way.
RTT_S = 2 * (2 * ACCESS_DELAY_MS + CORE_DELAY_MS) / 1e3
#: The study's delay target: DFlow's cd_thresh and LEDBAT's TARGET.
TARGET_MS = 50.0
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

# ----- models: the TCP throughput equation and Jain's index --------------------------------


def tcp_equation_rate_bps(p: Any, rtt_s: float, segment_bytes: float = SEGMENT_BYTES, b: float = 1.0,
                          t_rto_s: float | None = None) -> np.ndarray:  # fmt: skip
    """RFC 5348 §3.1: X = s / (R·sqrt(2bp/3) + t_RTO·(3·sqrt(3bp/8))·p·(1 + 32p²)), in bit/s.

    ``p`` is the loss event rate (scalar or array, 0 < p ≤ 1), ``rtt_s`` R;
    t_RTO defaults to 4R and b to 1, as RFC 5348 recommends and the study used.
    """
    p = np.asarray(p, dtype=float)
    t_rto_s = 4.0 * rtt_s if t_rto_s is None else t_rto_s
    denom_s = rtt_s * np.sqrt(2 * b * p / 3) + t_rto_s * (3 * np.sqrt(3 * b * p / 8)) * p * (1 + 32 * p**2)
    with np.errstate(divide="ignore"):
        return 8.0 * segment_bytes / denom_s


def knee_loss_event_rate() -> float:
    """The p at which the equation's timeout term equals its first term (with t_RTO = 4R, any b, R, s).

    R·sqrt(2bp/3) = 4R·3·sqrt(3bp/8)·p(1 + 32p²) reduces to p + 32p³ = 1/9
    (sqrt(2/3)/sqrt(3/8) = 4/3): below it the rate falls as p^(-1/2), above it
    as p^(-3/2) and then p^(-7/2), which is the "knee" of the curve.
    """
    roots = np.roots([32.0, 0.0, 1.0, -1.0 / 9.0])
    real = roots[np.abs(roots.imag) < 1e-12].real
    return float(real[real > 0][0])


def equation_elasticity(p: Any) -> np.ndarray:
    """−d ln X / d ln p of the equation with t_RTO = 4R (independent of R and s; b = 1).

    0.5 on the square-root branch, rising through the knee towards 3.5. It
    decides whether flows that share congestion events (DFlow's delay events
    are seen by every flow with packets in the queue) converge to equal
    rates: a flow's p is the shared event frequency over its own packet rate,
    so a flow that falls behind gets a proportionally higher p, and its
    equation rate falls less than proportionally (it recovers) only while
    the elasticity is below 1.
    """
    p = np.asarray(p, dtype=float)
    first = np.sqrt(2 * p / 3)  # R·sqrt(2p/3) / R
    c = 4.0 * 3 * np.sqrt(3 / 8)  # t_RTO·3·sqrt(3/8) / R
    slow, fast = c * p**1.5, c * 32 * p**3.5
    return (0.5 * first + 1.5 * slow + 3.5 * fast) / (first + slow + fast)


def unstable_loss_event_rate() -> float:
    """The p above which shared congestion events stop equalising rates: elasticity = 1 (bisection)."""
    lo, hi = 1e-6, 1.0
    for _ in range(200):
        mid = np.sqrt(lo * hi)
        if equation_elasticity(mid) < 1.0:
            lo = mid
        else:
            hi = mid
    return float(np.sqrt(lo * hi))


def loss_event_rate_for(rate_bps: float, rtt_s: float, segment_bytes: float = SEGMENT_BYTES) -> float:
    """The p at which the equation gives ``rate_bps`` (bisection in log p; the equation falls monotonically in p)."""
    lo, hi = 1e-9, 1.0
    if tcp_equation_rate_bps(hi, rtt_s, segment_bytes) >= rate_bps:
        return hi
    for _ in range(200):
        mid = np.sqrt(lo * hi)
        if tcp_equation_rate_bps(mid, rtt_s, segment_bytes) > rate_bps:
            lo = mid
        else:
            hi = mid
    return float(np.sqrt(lo * hi))


def jain_index(rates: Sequence[float] | np.ndarray) -> float:
    """Jain's fairness index (Σx)² / (n·Σx²): 1 when all are equal, 1/n when one flow has everything.

    NaN for no flows or when every rate is zero (fairness is undefined then).
    """
    x = np.asarray(rates, dtype=float)
    if x.size == 0 or not np.any(x > 0):
        return float("nan")
    return float(x.sum() ** 2 / (x.size * np.sum(x**2)))


# ----- the runs -----------------------------------------------------------------------------


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
    "ledbat": Case("DFlow vs LEDBAT (target 50 ms)", "DFlow vs LEDBAT", dflows=1, rival="ledbat",
                   rival_params={"target_ms": TARGET_MS}, rival_label="LEDBAT"),
    "vegas": Case("DFlow vs TCP Vegas (α = 1, β = 3)", "DFlow vs Vegas", dflows=1, rival="vegas",
                  rival_params={"alpha": 1.0, "beta": 3.0, "gamma": 1.0}, rival_label="Vegas"),
    "newreno": Case("DFlow vs TCP NewReno", "DFlow vs NewReno", dflows=1, rival="newreno", rival_label="NewReno"),
}  # fmt: skip

#: DFlow's base_period (in RTTs), swept: the outcome against LEDBAT and Vegas turns on it (see the report).
BASE_PERIODS_RTTS = (10, 30, 100, 300, 1000, 3000, 10000)
VARIANTS: dict[str, float] = {f"base{n}": float(n) for n in BASE_PERIODS_RTTS}
#: The primary runs: 10 000 RTTs (over 20 minutes here) never forget the empty queue of the start within a run,
#: so DFlow's base is the true propagation delay throughout. Shorter periods let a standing queue drift into the
#: base once it has stood for base_period; 1000 RTTs does so after about 3 minutes at the loaded RTT, inside a
#: 300 s run.
PRIMARY = "base10000"
#: Variants whose time series are kept and drawn: the spec's default and the project's usual 1000 RTTs.
DRAWN = (PRIMARY, "base1000", "base10")
VARIANT_LABEL = {f"base{n}": f"base period {n} RTTs" for n in BASE_PERIODS_RTTS}
VARIANT_LABEL.update(base10="base period 10 RTTs (the spec's default)", base10000="base period 10 000 RTTs (no drift)")


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
QUICK = Settings(duration_s=120.0, measure_from_s=30.0, seeds=(1, 2, 3, 4, 5),
                 variants=("base10", "base100", "base300", "base1000", "base10000"))


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
        return {"case": self.case, "variant": self.variant, "base_period_rtts": VARIANTS.get(self.variant, np.nan),
                "seed": self.seed, "duration_s": self.duration_s, "measure_from_s": self.measure_from_s}  # fmt: skip

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
            out += [Run(case_name, variant, seed, settings.duration_s, settings.measure_from_s) for seed in settings.seeds]
    return out


def _tfrc_table(dflow: bool, base_period_rtts: float) -> dict[str, Any]:
    table: dict[str, Any] = {"segment_bytes": SEGMENT_BYTES, "header_bytes": TFRC_HEADER_BYTES}
    if dflow:
        # The draft's settings: 50 ms current period, no gradient test (the study left it off).
        table.update(cd_thresh_ms=TARGET_MS, base_period_rtts=base_period_rtts, current_period_ms=50.0,
                     gradient_test=False)  # fmt: skip
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
        flows.append({"name": "tfrc", "kind": "tfrc", "count": case.tfrcs, "first_index": index, "src": "s{i}",
                      "dst": "d{i}", "start_s": start, "tfrc": _tfrc_table(False, 0.0)})  # fmt: skip
        index += case.tfrcs
    if case.dflows:
        flows.append({"name": "dflow", "kind": "dflow", "count": case.dflows, "first_index": index, "src": "s{i}",
                      "dst": "d{i}", "start_s": start, "tfrc": _tfrc_table(True, VARIANTS[run.variant])})  # fmt: skip
        index += case.dflows
    if case.rival:
        tcp: dict[str, Any] = {"name": case.rival, "kind": "tcp", "cc": case.rival, "count": 1, "first_index": index,
                               "src": "s{i}", "dst": "d{i}", "start_s": start,
                               # ns2 preset (one ACK per segment, timestamps: LEDBAT's one-way delay), 1244-B packets
                               "tcp": {"preset": "ns2", "mss_bytes": TCP_MSS_BYTES, "header_bytes": TCP_HEADER_BYTES}}  # fmt: skip
        if case.rival_params:
            tcp["cc_params"] = dict(case.rival_params)
        flows.append(tcp)
        index += 1
    # TFRC alone does not depend on the variant: leaving it out of the name keeps one scenario (one run id).
    name = f"dflow-study-{run.case}" + (f"-{run.variant}" if case.dflows else "")
    return {
        "name": name, "seed": run.seed, "duration_s": run.duration_s, "measure_from_s": run.measure_from_s,
        "sample_interval_ms": SAMPLE_INTERVAL_MS,
        "topology": {"kind": "dumbbell", "pairs": index, "access_rate_bps": ACCESS_RATE_BPS,
                     "access_delay_ms": ACCESS_DELAY_MS, "core_rate_bps": BOTTLENECK_RATE_BPS,
                     "core_delay_ms": CORE_DELAY_MS,
                     "core_queue": {"kind": "droptail", "limit_packets": QUEUE_PACKETS}},
        "flows": flows,
    }  # fmt: skip


# ----- metrics --------------------------------------------------------------------------------


def _floats(column: pd.Series) -> np.ndarray:
    """A (possibly nullable-integer) column as float64 with NaN for missing values."""
    return pd.to_numeric(column, errors="coerce").astype("float64").to_numpy()


def flow_series(res: Any) -> pd.DataFrame:
    """Per flow and sample: delivered rate over the last interval (bit/s), TFRC's X, DFlow's own queueing delay.

    The delivered rate comes from differences of the cumulative bytes_delivered,
    which every flow kind has, so TCP and TFRC flows are measured alike.
    """
    fs = res.flow_samples.sort_values(["flow_id", "time_ns"])
    meta = res.flows.set_index("flow_id")
    time_s = _floats(fs["time_ns"]) / 1e9
    delivered = pd.Series(_floats(fs["bytes_delivered"]), index=fs.index)
    grouped = delivered.groupby(fs["flow_id"].to_numpy())
    dt_s = pd.Series(time_s, index=fs.index).groupby(fs["flow_id"].to_numpy()).diff()
    rate_bps = grouped.diff() * 8 / dt_s
    return pd.DataFrame({
        "flow_id": fs["flow_id"].to_numpy(),
        "group": meta.loc[fs["flow_id"], "group"].to_numpy(),
        "time_s": time_s,
        "rate_bps": rate_bps.to_numpy(),
        "send_rate_bps": _floats(fs["rate_bps"]),
        "flow_queueing_delay_ms": _floats(fs["queueing_delay_ns"]) / 1e6,
    })  # fmt: skip


def bottleneck_series(res: Any) -> pd.DataFrame:
    """The bottleneck per sample: mean and max sojourn of the packets that left it in the interval, queue, drops.

    latlab measures a packet's sojourn from enqueue to the start of its
    transmission, so a full buffer shows FULL_QUEUE_DELAY_S and the numbers
    compare directly with DFlow's current − base delay and LEDBAT's target.
    """
    links = res.links
    link_id = links.loc[links["name"] == BOTTLENECK, "link_id"].iloc[0]
    ls = res.link_samples[res.link_samples["link_id"] == link_id].sort_values("time_ns")
    departed = _floats(ls["departures_bytes"])
    return pd.DataFrame({
        "time_s": _floats(ls["time_ns"]) / 1e9,
        "sojourn_ms": _floats(ls["sojourn_mean_ns"]) / 1e6,
        "sojourn_max_ms": _floats(ls["sojourn_max_ns"]) / 1e6,
        "queue_pkts": _floats(ls["queue_pkts"]),
        "departed_bytes": np.diff(departed, prepend=0.0),
        "drops_pkts": _floats(ls["drops_pkts"]),
    })  # fmt: skip


def weighted_quantile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    """The q-quantile of ``values`` where each counts ``weights`` times (NaN without weight)."""
    keep = weights > 0
    v, w = values[keep], weights[keep]
    if not v.size:
        return float("nan")
    order = np.argsort(v)
    cum = np.cumsum(w[order])
    return float(v[order][np.searchsorted(cum, q * cum[-1])])


def delay_stats(link: pd.DataFrame, measure_from_s: float) -> dict[str, float]:
    """Queueing delay over the window, per departed byte (each interval's mean weighted by what left in it).

    Weighting by traffic gives the delay packets saw, not the time average of
    an often idle queue; all data packets have the same size, so bytes count packets.
    """
    w = link[link["time_s"] > measure_from_s + 1e-9]
    values, weights = w["sojourn_ms"].to_numpy(), w["departed_bytes"].to_numpy()
    total = weights.sum()
    return {
        "delay_mean_ms": float((values * weights).sum() / total) if total else float("nan"),
        "delay_p95_ms": weighted_quantile(values, weights, 0.95),
        "delay_max_ms": float(w["sojourn_max_ms"].max()) if len(w) else float("nan"),
        "below_target": float(weights[values <= TARGET_MS].sum() / total) if total else float("nan"),
    }


def _at(series: pd.DataFrame, column: str, t_s: float) -> float:
    """A cumulative column's value at the last sample at or before ``t_s`` (0 before the first)."""
    before = series[series["time_s"] <= t_s + 1e-9]
    return float(before[column].iloc[-1]) if len(before) else 0.0


def run_metrics(res: Any, run: Run) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """One run reduced to (summary row, per-flow rows, flow time series, bottleneck time series)."""
    flows = res.flows.sort_values("flow_id")
    series = flow_series(res)
    link = bottleneck_series(res)
    t0, t1 = run.measure_from_s, run.duration_s
    links = res.links.set_index("name")
    per_flow = []
    for _, f in flows.iterrows():
        fid = int(f["flow_id"])
        s = series[series["flow_id"] == fid]
        in_window = s[s["time_s"] > t0 + 1e-9]
        row: dict[str, Any] = {
            **run.params, "flow_id": fid, "group": f["group"], "kind": f["kind"], "cc": f["cc"],
            "start_s": float(f["start_ns"]) / 1e9, "goodput_bps": float(f["goodput_bps"]),
        }  # fmt: skip
        if f["kind"] in ("tfrc", "dflow"):
            received = float(pd.to_numeric(f["packets_received"]))
            events = float(pd.to_numeric(f["loss_events"])) + float(pd.to_numeric(f["delay_events"]))
            row.update(
                loss_event_rate=float(f["loss_event_rate"]),  # the receiver's p at the end of the run
                loss_events=int(pd.to_numeric(f["loss_events"])), delay_events=int(pd.to_numeric(f["delay_events"])),
                events_per_packet=events / received if received else float("nan"),
                # Packets that never arrived; the last one-way delay's worth were still in flight at the end.
                lost_pkts=int(f["segments_sent"]) - int(received),
                flow_queueing_delay_ms=float(np.nanmean(in_window["flow_queueing_delay_ms"]))
                if f["kind"] == "dflow" and in_window["flow_queueing_delay_ms"].notna().any() else float("nan"),
            )  # fmt: skip
        else:
            fs = res.flow_samples[res.flow_samples["flow_id"] == fid].sort_values("time_ns")
            rtx = pd.DataFrame({"time_s": _floats(fs["time_ns"]) / 1e9, "rtx": _floats(fs["retransmitted_segments"])})
            row.update(retransmits=int(_at(rtx, "rtx", t1) - _at(rtx, "rtx", t0)),
                       timeouts=int(pd.to_numeric(f["timeouts"])))  # fmt: skip
        per_flow.append(row)
    pf = pd.DataFrame(per_flow)
    rates = pf["goodput_bps"].to_numpy()
    dflow_rates = pf.loc[pf["kind"] == "dflow", "goodput_bps"].to_numpy()
    summary: dict[str, Any] = {
        **run.params,
        "utilisation": float(links.loc[BOTTLENECK, "utilization"]),
        "drops_window": int(_at(link, "drops_pkts", t1) - _at(link, "drops_pkts", t0)),
        "drops_total": int(links.loc[BOTTLENECK, "drops_pkts"]),
        **delay_stats(link, t0),
        "goodput_bps": float(rates.sum()),
        "jain_all": jain_index(rates),
        "jain_dflow": jain_index(dflow_rates) if dflow_rates.size >= 2 else float("nan"),
        "wall_s": float(res.run_info.get("wall_s", np.nan)),
    }
    for column, kind in (("dflow_rate_bps", "dflow"), ("tfrc_rate_bps", "tfrc"), ("rival_rate_bps", "tcp")):
        g = pf[pf["kind"] == kind]
        summary[column] = float(g["goodput_bps"].mean()) if len(g) else float("nan")
    for kind in ("tfrc", "dflow"):
        g = pf[pf["kind"] == kind]
        summary[f"{kind}_loss_events"] = int(g["loss_events"].sum()) if len(g) else 0
        summary[f"{kind}_lost_pkts"] = int(g["lost_pkts"].sum()) if len(g) else 0
    g = pf[pf["kind"] == "dflow"]
    summary["dflow_delay_events"] = int(g["delay_events"].sum()) if len(g) else 0
    # DFlow's own view of the queue (current − base), to set beside the bottleneck's: they differ by base errors.
    summary["dflow_own_delay_ms"] = float(g["flow_queueing_delay_ms"].mean()) if len(g) else float("nan")
    rival = pf[pf["kind"] == "tcp"]
    summary["rival_retransmits"] = int(rival["retransmits"].sum()) if len(rival) else 0
    summary["rival_timeouts"] = int(rival["timeouts"].sum()) if len(rival) else 0
    first = flows.loc[flows["start_ns"].idxmin()]
    summary["first_to_start"] = str(first["group"])
    keys = run.params
    return (summary, pf, series.assign(**{k: keys[k] for k in ("case", "variant", "seed")}),
            link.assign(**{k: keys[k] for k in ("case", "variant", "seed")}))  # fmt: skip


@dataclass
class StudyData:
    """Everything a reproduction measured: one row per run, per flow, and the time series."""

    runs: pd.DataFrame
    flows: pd.DataFrame
    flow_series: pd.DataFrame
    bottleneck_series: pd.DataFrame


def run_study(runs: Sequence[Run], outdir: Path, jobs: int | None, progress: bool = True) -> StudyData:
    """Run the distinct scenarios of ``runs`` once (sweep runner, resumable) and reduce each run."""
    from latlab import Scenario
    from latlab.sweep import load_run, run_distinct

    pairs = [(r.params, Scenario.from_dict(r.scenario(), source=f"<dflow {r.case} {r.variant} seed {r.seed}>"))
             for r in runs]  # fmt: skip
    sweep_dir = outdir / "runs"
    ids, catalog = run_distinct(pairs, sweep_dir, jobs=jobs, progress=progress, name="dflow")
    status = dict(zip(catalog["run_id"], catalog["status"]))
    summaries, flows, fseries, lseries = [], [], [], []
    for r, rid in zip(runs, ids):
        if status.get(rid) != "ok":
            summaries.append({**r.params, "run_id": rid, "status": status.get(rid)})
            continue
        summary, pf, fs, ls = run_metrics(load_run(sweep_dir, rid), r)
        summaries.append({**summary, "run_id": rid, "status": "ok"})
        flows.append(pf)
        if r.variant in DRAWN:  # the sweep's other base periods are summarised, not drawn: keep the data small
            fseries.append(fs)
            lseries.append(ls)

    def cat(frames: list[pd.DataFrame]) -> pd.DataFrame:
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    return StudyData(pd.DataFrame(summaries), cat(flows), cat(fseries), cat(lseries))


# ----- the reproduction ---------------------------------------------------------------------------


def knee_curves() -> pd.DataFrame:
    """The equation rate against p over this path: at the propagation RTT and with a full queue added."""
    p = np.logspace(-4, 0, 400)
    rows = []
    for label, rtt_s in (("R = 120 ms (propagation)", RTT_S), ("R = 294 ms (full queue)", RTT_S + FULL_QUEUE_DELAY_S)):
        rows.append(pd.DataFrame({"curve": label, "rtt_s": rtt_s, "p": p, "rate_bps": tcp_equation_rate_bps(p, rtt_s)}))
    return pd.concat(rows, ignore_index=True)


def reproduce(outdir: Path, quick: bool = False, jobs: int | None = None) -> Path:
    """Run the study into ``outdir``: runs/ (the sweep), Parquet tables, PNG figures and report.md."""
    return reproduce_with(QUICK if quick else FULL, Path(outdir), jobs=jobs, quick=quick)


def reproduce_with(settings: Settings, outdir: Path, jobs: int | None = None, quick: bool = False,
                   progress: bool = True) -> Path:  # fmt: skip
    """:func:`reproduce` with explicit settings (tests use tiny ones)."""
    from latlab import frames as frames_mod
    from latlab._atomic import write_text
    from latlab.studies import _dflow_figures as figs
    from latlab.sweep import default_jobs

    outdir.mkdir(parents=True, exist_ok=True)
    jobs = jobs or default_jobs()
    runs = runs_of(settings)
    t0 = time.monotonic()
    data = run_study(runs, outdir, jobs, progress=progress)
    elapsed_s = time.monotonic() - t0
    curves = knee_curves()
    for table, name in ((data.runs, "results"), (data.flows, "flows"), (data.flow_series, "flow_series"),
                        (data.bottleneck_series, "bottleneck_series"), (curves, "knee")):  # fmt: skip
        frames_mod.write_parquet(table, outdir / f"{name}.parquet")
    figures = figs.make_figures(data, curves, settings, outdir)
    report = outdir / "report.md"
    write_text(report, _report(data, settings, quick, jobs, elapsed_s, figures))
    return report


# ----- the report -----------------------------------------------------------------------------------


def _pct(x: Any) -> str:
    return pct(x, "{:.0f} %")


def _kbps(rate_bps: Any) -> str:
    """A rate in kb/s: whole numbers from 10 kb/s up, two decimals below (starved flows)."""
    try:
        x = float(rate_bps)
    except (TypeError, ValueError):
        return "–"
    return _f(x / 1e3, "{:.0f}" if abs(x) >= 1e4 else "{:.2f}")


def _range(values: pd.Series, fmt: str = "{:.1f}", scale: float = 1.0) -> str:
    """Mean over seeds, with the range when there are several."""
    v = values.dropna().astype(float) * scale
    if not len(v):
        return "–"
    if len(v) == 1:
        return fmt.format(v.iloc[0])
    return f"{fmt.format(v.mean())} ({fmt.format(v.min())}–{fmt.format(v.max())})"


def _ok(df: pd.DataFrame, case: str, variant: str = PRIMARY) -> pd.DataFrame:
    """The finished runs of one case and variant, by seed."""
    if not len(df) or "status" not in df:
        return df.iloc[0:0]
    sel = df[(df["case"] == case) & (df["variant"] == variant) & (df["status"] == "ok")]
    return sel.sort_values("seed")


def _ratio(d: pd.DataFrame) -> pd.Series:
    """DFlow's rate over the TCP rival's, per run."""
    return d["dflow_rate_bps"] / d["rival_rate_bps"]


def _seed_table(d: pd.DataFrame, case: Case) -> str:
    """One row per seed: per-group rates, delay, losses, fairness, utilisation (and the start order in "vs" runs)."""
    header = ["seed"] + (["first to start"] if case.rival else [])
    header += ["DFlow (kb/s per flow)"] if case.dflows else []
    header += ["TFRC (kb/s per flow)"] if case.tfrcs else []
    header += [f"{case.rival_label} (kb/s)"] if case.rival else []
    header += ["delay mean / p95 / max (ms)"] + (["DFlow's own estimate (ms)"] if case.rival else [])
    header += ["packets ≤ 50 ms", "drops: window (run)"]
    header += ["TFRC loss events"] if case.tfrcs else []
    header += ["DFlow loss / delay events"] if case.dflows else []
    header += [f"{case.rival_label} retransmits / timeouts"] if case.rival else []
    header += ["Jain DFlows"] if case.dflows > 1 else []
    header += ["Jain all", "utilisation"]
    rows = []
    for _, r in d.iterrows():
        row: list[Any] = [int(r["seed"])] + ([r["first_to_start"]] if case.rival else [])
        row += [_kbps(r["dflow_rate_bps"])] if case.dflows else []
        row += [_kbps(r["tfrc_rate_bps"])] if case.tfrcs else []
        row += [_kbps(r["rival_rate_bps"])] if case.rival else []
        row += [f"{_f(r['delay_mean_ms'])} / {_f(r['delay_p95_ms'])} / {_f(r['delay_max_ms'])}"]
        row += [_f(r["dflow_own_delay_ms"])] if case.rival else []
        row += [_pct(r["below_target"]), f"{int(r['drops_window'])} ({int(r['drops_total'])})"]
        row += [int(r["tfrc_loss_events"])] if case.tfrcs else []
        row += [f"{int(r['dflow_loss_events'])} / {int(r['dflow_delay_events'])}"] if case.dflows else []
        row += [f"{int(r['rival_retransmits'])} / {int(r['rival_timeouts'])}"] if case.rival else []
        row += [_f(r["jain_dflow"], "{:.3f}")] if case.dflows > 1 else []
        row += [_f(r["jain_all"], "{:.3f}"), _f(r["utilisation"], "{:.3f}")]
        rows.append(row)
    return _table(header, rows)


def _flow_table(f: pd.DataFrame) -> str:
    """Per flow of one run: start, rate, the receiver's p, events, losses (TCP: retransmissions, timeouts)."""
    rows = []
    for _, r in f.sort_values("flow_id").iterrows():
        if r["kind"] in ("tfrc", "dflow"):
            label = "DFlow" if r["kind"] == "dflow" else "TFRC"
            p = _f(r["loss_event_rate"], "{:.4f}")
            events = f"{int(r['loss_events'])} / {int(r['delay_events'])}" if r["kind"] == "dflow" else str(int(r["loss_events"]))
            losses = f"{int(r['lost_pkts'])} sent − received"
        else:
            label, p = CASES[r["case"]].rival_label or str(r["cc"]), "–"
            events = "–"
            losses = f"{int(r['retransmits'])} retransmits (window), {int(r['timeouts'])} timeouts (run)"
        rows.append([int(r["flow_id"]), label, _f(r["start_s"], "{:.2f}"), _kbps(r["goodput_bps"]), p, events, losses,
                     _f(r.get("flow_queueing_delay_ms"))])  # fmt: skip
    return _table(["flow", "kind", "start (s)", "mean rate (kb/s)", "p at end", "loss (/ delay) events", "losses",
                   "DFlow's own queueing estimate, mean (ms)"], rows)  # fmt: skip


@dataclass
class Verdict:
    """One of the study's qualitative statements beside latlab's numbers."""

    claim: str
    latlab: str
    verdict: str  # "agrees" | "partly" | "differs"
    why: str = ""


def _ledbat_why(runs: pd.DataFrame) -> str:
    text = "equal 50 ms targets make it a knife edge that base-delay errors of a few ms decide"
    sweep = _sweep_means(runs, "ledbat")
    if len(sweep) > 1:
        text += f"; the study's third lies {_where_ratio(sweep, 1 / 3)} (see DFlow's base period)"
    return text


def verdicts(runs: pd.DataFrame) -> list[Verdict]:
    """The study's qualitative references, each beside latlab's numbers (primary variant, over seeds)."""
    out: list[Verdict] = []
    dflow, tfrc = _ok(runs, "dflow"), _ok(runs, "tfrc")
    full_ms = FULL_QUEUE_DELAY_S * 1e3
    if len(dflow):
        mean, below = dflow["delay_mean_ms"].mean(), dflow["below_target"].mean()
        out.append(Verdict("5 DFlow: delay mostly below the 50 ms target",
                           f"mean {_range(dflow['delay_mean_ms'])} ms; {100 * below:.0f} % of packets ≤ 50 ms; "
                           f"max {dflow['delay_max_ms'].max():.0f} ms",
                           "agrees" if mean < TARGET_MS and below >= 0.5 else "differs"))  # fmt: skip
        drops = dflow["drops_window"].mean()
        tdrops = tfrc["drops_window"].mean() if len(tfrc) else np.nan
        out.append(Verdict("5 DFlow: very few losses",
                           f"{_range(dflow['drops_window'], '{:.0f}')} drops per window (5 TFRC: {_f(tdrops, '{:.0f}')})",
                           "agrees" if drops <= 0.02 * max(np.nan_to_num(tdrops), 50.0) else "differs"))  # fmt: skip
        jain = dflow["jain_dflow"]
        low = int((jain < 0.95).sum())
        out.append(Verdict("5 DFlow: fair sharing among DFlows",
                           f"Jain {_range(jain, '{:.3f}')}" + (f"; below 0.95 in {low} of {len(jain)} seeds" if low else ""),
                           "agrees" if not low else "partly",
                           "a DFlow that falls behind can stay behind (shared delay events, see The knee)" if low else ""))  # fmt: skip
    if len(tfrc):
        mean = tfrc["delay_mean_ms"].mean()
        out.append(Verdict("5 TFRC: delay at the full-queue level",
                           f"mean {_range(tfrc['delay_mean_ms'], '{:.0f}')} ms, p95 {tfrc['delay_p95_ms'].mean():.0f} ms, "
                           f"max {tfrc['delay_max_ms'].max():.1f} ms (full queue {full_ms:.1f} ms)",
                           "agrees" if mean >= 0.75 * full_ms else "differs"))  # fmt: skip
        if len(dflow):
            more = tfrc["drops_window"].mean() > 10 * max(dflow["drops_window"].mean(), 1.0)
            out.append(Verdict("5 TFRC: far more losses than DFlow",
                               f"{_range(tfrc['drops_window'], '{:.0f}')} drops per window, "
                               f"{tfrc['tfrc_loss_events'].mean():.0f} loss events per run",
                               "agrees" if more else "differs"))  # fmt: skip
            gain = tfrc["utilisation"].mean() / dflow["utilisation"].mean() - 1
            out.append(Verdict("5 TFRC: slightly higher throughput than 5 DFlow",
                               f"utilisation {tfrc['utilisation'].mean():.3f} vs {dflow['utilisation'].mean():.3f} "
                               f"({100 * gain:+.0f} %)",
                               "agrees" if 0 < gain <= 0.25 else "differs"))  # fmt: skip
    led = _ok(runs, "ledbat")
    if len(led):
        ratio = _ratio(led)
        m = ratio.mean()
        word = "agrees" if 0.2 <= m <= 0.5 else "partly" if ratio.max() >= 0.2 else "differs"
        out.append(Verdict("DFlow gets about a third of LEDBAT's rate",
                           f"DFlow/LEDBAT {_range(ratio, '{:.2f}')}; "
                           + "; ".join(f"{who} first: {_range(ratio[led['first_to_start'] == who], '{:.2f}')}"
                                       for who in ("dflow", "ledbat") if (led["first_to_start"] == who).any()),
                           word, _ledbat_why(runs) if word != "agrees" else ""))
    veg = _ok(runs, "vegas")
    if len(veg):
        ratio = _ratio(veg)
        m = ratio.mean()
        word = "agrees" if 0.67 <= m <= 1.5 else "partly" if 0.5 <= m <= 2.5 else "differs"
        sweep = _sweep_means(runs, "vegas")
        closest = ""
        if len(sweep) > 1:
            bp, r = _closest(sweep, 1.0)
            closest = f"; no base period brings it to 1 (closest {r:.2f} at {bp:g} RTTs)"
        out.append(Verdict("DFlow gets close to Vegas's rate", f"DFlow/Vegas {_range(ratio, '{:.2f}')}", word,
                           "Vegas keeps only 1–3 packets queued, so its rate is 1–3 packets over the queueing delay "
                           f"DFlow sustains{closest}" if word != "agrees" else ""))  # fmt: skip
    nr = _ok(runs, "newreno")
    if len(nr):
        out.append(Verdict("DFlow drops to near zero against NewReno",
                           f"DFlow {_range(nr['dflow_rate_bps'], '{:.1f}', 1e-3)} kb/s vs NewReno "
                           f"{_range(nr['rival_rate_bps'], '{:.0f}', 1e-3)} kb/s",
                           "agrees" if _ratio(nr).max() < 0.05 else "differs"))  # fmt: skip
    return out


def _case_texts(runs: pd.DataFrame, flows: pd.DataFrame) -> dict[str, str]:
    """What each run shows and why it differs from the study, from the measured numbers."""
    texts: dict[str, str] = {}
    dflow, tfrc = _ok(runs, "dflow"), _ok(runs, "tfrc")
    if len(dflow):
        low = dflow[dflow["jain_dflow"] < 0.95]
        texts["dflow"] = (
            f"DFlow holds the queue short: {dflow['delay_mean_ms'].mean():.1f} ms on average, "
            f"{100 * dflow['below_target'].mean():.0f} % of packets at or below the 50 ms target, "
            f"{dflow['drops_window'].sum():.0f} drops in all windows together (the only drops are in the start-up, "
            "when the flows' slow start overshoots before the first delay event takes effect). Whenever the queue "
            "passes 50 ms every flow records a delay event in the same 50 ms period and backs off to its equation "
            "rate; the queue drains, the link idles briefly "
            f"(utilisation {dflow['utilisation'].mean():.3f}) and the flows climb again by one packet per RTT: "
            "the regular saw-tooth of the figure, a few seconds per cycle. The peaks of 80–100 ms are the overshoot "
            "of each climb: the event is flagged at the end of a 50 ms period and reaches the sender one RTT later. "
            + (f"In {len(low)} of {len(dflow)} seeds one flow falls behind and stays there (Jain "
               f"{', '.join(f'{j:.3f}' for j in low['jain_dflow'])}); the mechanism is in The knee below."
               if len(low) else "The five flows share fairly in every seed.")
        )  # fmt: skip
    if len(tfrc):
        factor = f" ({tfrc['delay_mean_ms'].mean() / dflow['delay_mean_ms'].mean():.0f} times DFlow's)" if len(dflow) else ""
        texts["tfrc"] = (
            f"TFRC reacts only to loss, so it keeps the buffer nearly full: {tfrc['delay_mean_ms'].mean():.0f} ms of "
            f"queueing on average{factor}, against {FULL_QUEUE_DELAY_S * 1e3:.1f} ms for a full queue; "
            f"{tfrc['drops_window'].mean():.0f} drops per window and {tfrc['tfrc_loss_events'].mean():.0f} loss events "
            f"per run; utilisation {tfrc['utilisation'].mean():.3f}"
            + (f" against DFlow's {dflow['utilisation'].mean():.3f}" if len(dflow) else "")
            + ". The throughput TFRC gains is the few percent of idle time DFlow pays for draining its queue. As in "
              "the study: the full-queue delay, far more loss, slightly more throughput."
        )  # fmt: skip
    led = _ok(runs, "ledbat")
    if len(led):
        ratio = _ratio(led)
        groups = []
        for who, label in (("dflow", "DFlow started first"), ("ledbat", "LEDBAT started first")):
            g = led[led["first_to_start"] == who]
            if len(g):
                groups.append(f"{label} in {len(g)} seed{'s' if len(g) > 1 else ''}: DFlow/LEDBAT "
                              f"{_range(ratio[g.index], '{:.2f}')}, real queue {_range(g['delay_mean_ms'])} ms, "
                              f"DFlow's own estimate {_range(g['dflow_own_delay_ms'])} ms")  # fmt: skip
        sweep = _sweep_means(runs, "ledbat")
        third = f" The study's \"about a third\" needs a base that slowly takes in part of LEDBAT's standing " \
                f"queue: it lies {_where_ratio(sweep, 1 / 3)} (see DFlow's base period)." if len(sweep) > 1 else ""
        best = led.loc[ratio.idxmax()]
        texts["ledbat"] = (
            "Both controllers aim at the same 50 ms. LEDBAT grows its window while *its* estimate of the queueing "
            "delay (one-way delay minus the smallest it has seen) is below 50 ms and shrinks it above, so it parks "
            "the queue at its target, without losses. DFlow flags an event whenever the smallest delay of its own "
            "packets in a 50 ms period exceeds its 50 ms: with the queue parked right there, most of its periods "
            "are events, p stays far beyond the knee and DFlow cannot get going; the fewer packets it sends, the less "
            "its per-period minimum smooths the queue's ripple, which keeps it there. Base-delay errors of a few "
            "milliseconds shift this knife edge: a flow that starts while the other's packets are queued "
            "overestimates its base by that queue and tolerates that much more. "
            + "; ".join(groups) + ". "
            f"With a base that never drifts DFlow keeps at most {ratio.max():.2f} of LEDBAT's rate (seed "
            f"{int(best['seed'])}, {best['first_to_start']} first), far from the study's third; the split is decided "
            "by a few milliseconds of base-delay error, not by the algorithms." + third
        )  # fmt: skip
    veg = _ok(runs, "vegas")
    if len(veg):
        q_s = veg["delay_mean_ms"].mean() / 1e3
        packet_bits = PACKET_BYTES * 8
        lo, hi = 1 * packet_bits / q_s, 3 * packet_bits / q_s
        half_pps = BOTTLENECK_RATE_BPS / 2 / packet_bits
        vp = flows[(flows["case"] == "vegas") & (flows["variant"] == PRIMARY) & (flows["kind"] == "dflow")] if len(flows) else flows
        p_txt = f" (its p stays near {vp['loss_event_rate'].median():.4f}: few events per packet at its rate, so " \
                "each event lowers the equation rate only a little)" if len(vp) else ""
        texts["vegas"] = (
            "Vegas keeps between α = 1 and β = 3 of its own packets in the queue: diff = cwnd·(RTT − baseRTT)/RTT "
            "= its rate × the queueing delay, so its rate is 1–3 packets divided by whatever queueing delay the "
            f"other flow sustains. DFlow lets the queue rise to its 50 ms threshold before it backs off{p_txt}, "
            f"and the queue averages {q_s * 1e3:.1f} ms: Vegas can then have {lo / 1e3:.0f}–{hi / 1e3:.0f} kb/s and "
            f"gets {veg['rival_rate_bps'].mean() / 1e3:.0f} kb/s; DFlow takes the rest "
            f"({veg['dflow_rate_bps'].mean() / 1e3:.0f} kb/s, DFlow/Vegas {_ratio(veg).mean():.2f}). Delay stays "
            "below the target and nothing is lost, as in the study. For equal shares (1 Mb/s each) Vegas would need "
            f"the queue at {1 / half_pps * 1e3:.0f}–{3 / half_pps * 1e3:.0f} ms, i.e. DFlow backing off well below "
            "its threshold; latlab's DFlow does not, so Vegas gets less than in the study. Smaller packets (ns-2's "
            "defaults) would not close the gap: α and β count packets, so Vegas would get even fewer bytes."
        )  # fmt: skip
        low = veg[_ratio(veg) < 0.5]
        if len(low):
            texts["vegas"] += (
                f" In seed{'s' if len(low) > 1 else ''} {', '.join(str(int(x)) for x in low['seed'])} (first to start: "
                f"{', '.join(low['first_to_start'])}) DFlow ended below half of Vegas's rate: the two slow starts "
                "overlapped, the queue filled, DFlow's delay events pushed it to TFRC's floor, and it climbs back "
                "only as its loss history ages, which at the floor takes on the order of 100 s (the history counts "
                "packets, and few arrive); Vegas, which never sees the queue above its β, keeps what DFlow left."
            )  # fmt: skip
    nr = _ok(runs, "newreno")
    if len(nr):
        bad = nr[nr["utilisation"] < 0.9]
        texts["newreno"] = (
            f"NewReno fills the buffer until it overflows, so the queue is above DFlow's 50 ms threshold most of the "
            f"time (only {100 * nr['below_target'].mean():.0f} % of packets at or below it); DFlow records an event in "
            "almost every period it has packets in, its p climbs far past the knee and its rate falls to "
            f"{nr['dflow_rate_bps'].mean() / 1e3:.1f} kb/s on average against NewReno's "
            f"{nr['rival_rate_bps'].mean() / 1e3:.0f} kb/s: near zero, as in the study. "
            + (f"In {len(bad)} of {len(nr)} seeds NewReno itself falls into a timeout cycle (utilisation "
               f"{bad['utilisation'].mean():.2f}, {bad['drops_window'].mean():.0f} drops and "
               f"{bad['rival_timeouts'].mean():.0f} timeouts per run) instead of its usual sawtooth (see Limitations); "
               "DFlow is starved in both regimes." if len(bad) else "")
        )  # fmt: skip
    return texts


def _knee_text(flows: pd.DataFrame) -> str:
    """Where the measured flows sit on the equation curve, and why that explains DFlow's fairness and starvation."""
    knee, unstable = knee_loss_event_rate(), unstable_loss_event_rate()
    parts = [f"Flows that share congestion events converge to equal rates only while the equation's elasticity "
             f"−d ln X / d ln p is below 1, which with t_RTO = 4R holds for **p < {unstable:.3f}**, a little below "
             "the knee. DFlow's delay events are shared: every flow with packets in the queue sees the same 50 ms "
             "periods above the threshold, so a flow's p is (roughly) the common event frequency divided by its own "
             "packet rate. A flow that falls behind therefore gets a higher p; below that p its equation rate falls "
             "less than in proportion, it is allowed more than it sends and climbs back; above it, its equation "
             "rate falls faster than its rate and it keeps falling until TFRC's floor."]  # fmt: skip
    f = flows[(flows["variant"] == PRIMARY) & flows["kind"].isin(["tfrc", "dflow"])] if len(flows) else flows
    if not len(f):
        return parts[0]
    parts.append("The points are the measured flows (primary variant, every seed): x is the receiver's p at the end "
                 "of the run, y the flow's mean rate over the window.")  # fmt: skip
    tfrc, dflow = f[f["case"] == "tfrc"], f[f["case"] == "dflow"]
    if len(tfrc):
        p = tfrc["loss_event_rate"].median()
        parts.append(f"TFRC flows sit at p ≈ {p:.4f} (median; elasticity {float(equation_elasticity(p)):.2f}), on the "
                     "square-root branch: their p counts real losses only.")  # fmt: skip
    if len(dflow):
        fair = BOTTLENECK_RATE_BPS / 5
        ok, behind = dflow[dflow["goodput_bps"] >= 0.8 * fair], dflow[dflow["goodput_bps"] < 0.5 * fair]
        if len(ok):
            p = ok["loss_event_rate"].median()
            parts.append(f"DFlow flows near their fair share run at p ≈ {p:.3f} (median; elasticity "
                         f"{float(equation_elasticity(p)):.2f}): mostly delay events, a few per second, on the "
                         f"shoulder of the curve, {knee / p:.0f}× below the knee.")  # fmt: skip
        if len(behind):
            pts = ", ".join(f"{r['goodput_bps'] / 1e3:.0f} kb/s at p = {r['loss_event_rate']:.3f}"
                            for _, r in behind.sort_values("goodput_bps").iterrows())  # fmt: skip
            parts.append(f"The DFlow flows of the 5-DFlow runs that ended below half the fair share ({pts}) sit "
                         f"near or beyond p = {unstable:.3f}, where the shared events no longer pull them back.")
    rivals = f[f["case"].isin(["ledbat", "vegas", "newreno"]) & (f["kind"] == "dflow")]
    if len(rivals):
        med = rivals.groupby("case")["loss_event_rate"].median()
        parts.append("The single DFlow against a TCP flow ends at p ≈ "
                     + ", ".join(f"{med[c]:.3f} against {CASES[c].rival_label}" for c in ("vegas", "ledbat", "newreno")
                                 if c in med.index)
                     + " (medians): near the top of the curve where it holds its own, far down the steep branch where "
                       "the rival keeps the queue above 50 ms. This is what makes delay events so effective alone (a "
                       "modest p already yields the fair share) and so fragile against a flow that keeps the queue "
                       "above the threshold (p grows without bound and the rate collapses).")  # fmt: skip
    return " ".join(parts)


def _sentence(text: str) -> str:
    """Capitalise the first letter only (str.capitalize would lower-case "DFlow" and "LEDBAT")."""
    return text[:1].upper() + text[1:]


def _sweep_means(runs: pd.DataFrame, case: str) -> pd.DataFrame:
    """Per base period: mean DFlow/rival ratio, its range, mean delay (finished runs of one case)."""
    d = runs[(runs["case"] == case) & (runs["status"] == "ok")] if len(runs) else runs
    if not len(d):
        return pd.DataFrame()
    d = d.assign(ratio=d["dflow_rate_bps"] / d["rival_rate_bps"])
    return d.groupby("base_period_rtts").agg(ratio=("ratio", "mean"), lo=("ratio", "min"), hi=("ratio", "max"),
                                             delay=("delay_mean_ms", "mean"), jain=("jain_dflow", "mean"),
                                             jain_min=("jain_dflow", "min"), dflow=("dflow_rate_bps", "mean"))  # fmt: skip


def _closest(sweep: pd.DataFrame, target: float) -> tuple[float, float]:
    """The base period whose mean ratio is closest to ``target`` (in log terms), and that ratio."""
    r = sweep["ratio"].clip(lower=1e-6)
    bp = float((np.log(r) - np.log(target)).abs().idxmin())
    return bp, float(sweep.loc[bp, "ratio"])


#: The RTT with a 50 ms standing queue (and a packet's transmission), to turn base periods into seconds.
LOADED_RTT_S = RTT_S + TARGET_MS / 1e3 + PACKET_BYTES * 8 / BOTTLENECK_RATE_BPS


def _where_ratio(sweep: pd.DataFrame, target: float) -> str:
    """Where the mean ratio crosses ``target`` along the base periods ("between 100 and 300 RTTs ..."), else the closest."""
    r = sweep["ratio"]
    for a, b in zip(r.index[:-1], r.index[1:]):
        if (r[a] - target) * (r[b] - target) <= 0:
            return (f"between {a:g} and {b:g} RTTs (ratios {r[a]:.2f} and {r[b]:.2f}; a base that forgets the empty "
                    f"queue after {a * LOADED_RTT_S:.0f}–{b * LOADED_RTT_S:.0f} s)")  # fmt: skip
    bp, v = _closest(sweep, target)
    return f"nowhere on this grid (closest: {v:.2f} at {bp:g} RTTs)"


def _sweep_table(runs: pd.DataFrame) -> str:
    cols = {c: _sweep_means(runs, c) for c in ("dflow", "ledbat", "vegas", "newreno")}
    bps = sorted(set().union(*(set(v.index) for v in cols.values() if len(v))))
    rows = []
    for bp in bps:
        row: list[Any] = [f"{bp:g}"]
        d = cols["dflow"]
        row.append(f"{_f(d.loc[bp, 'delay'])} ms, Jain {_f(d.loc[bp, 'jain'], '{:.3f}')} (worst "
                   f"{_f(d.loc[bp, 'jain_min'], '{:.3f}')})" if len(d) and bp in d.index else "–")  # fmt: skip
        for c in ("ledbat", "vegas"):
            d = cols[c]
            row.append(f"{_f(d.loc[bp, 'ratio'], '{:.2f}')} ({_f(d.loc[bp, 'lo'], '{:.2f}')}–"
                       f"{_f(d.loc[bp, 'hi'], '{:.2f}')}), {_f(d.loc[bp, 'delay'])} ms" if len(d) and bp in d.index else "–")
        d = cols["newreno"]
        row.append(f"{_kbps(d.loc[bp, 'dflow'])} kb/s" if len(d) and bp in d.index else "–")
        rows.append(row)
    return _table(["base period (RTTs)", "5 DFlow: delay, Jain", "vs LEDBAT: DFlow/LEDBAT (range), delay",
                   "vs Vegas: DFlow/Vegas (range), delay", "vs NewReno: DFlow"], rows)  # fmt: skip


def _base_period_text(runs: pd.DataFrame) -> str:
    parts = ["The base delay is a minimum over the last base period, so a queue that stands longer than that period "
             "becomes part of the base: DFlow stops counting it as queueing. DFlow alone drains its own queue every "
             "few seconds and never meets this; LEDBAT and Vegas hold a standing queue, so against them the base "
             "period decides who yields."]  # fmt: skip
    led, veg = _sweep_means(runs, "ledbat"), _sweep_means(runs, "vegas")
    if len(led) > 1:
        lo_bp, hi_bp = led.index.min(), led.index.max()
        parts.append(f"Against LEDBAT the DFlow/LEDBAT ratio falls from {led.loc[lo_bp, 'ratio']:.2f} at {lo_bp:g} RTTs "
                     f"to {led.loc[hi_bp, 'ratio']:.3f} at {hi_bp:g} RTTs; the study's \"about a third\" lies "
                     f"{_where_ratio(led, 1 / 3)}.")  # fmt: skip
    if len(veg) > 1:
        bp, r = _closest(veg, 1.0)
        parts.append(f"Against Vegas DFlow gets more than Vegas at every base period (closest to the study's \"about "
                     f"the same\": {r:.2f} at {bp:g} RTTs), because Vegas's own rule gives it only 1–3 packets per "
                     "queueing delay whatever DFlow's base does; with short base periods DFlow takes nearly all.")
        if len(led) > 1:
            near = led.index[(led["ratio"] >= 1 / 6) & (led["ratio"] <= 2 / 3)]
            if len(near) and all(bp in veg.index for bp in near):
                where = ", ".join(f"{bp:g}" for bp in near)
                vegas = ", ".join(f"{veg.loc[bp, 'ratio']:.2f}" for bp in near)
                parts.append(f"Where LEDBAT's split is within a factor 2 of a third ({where} RTTs), DFlow/Vegas is "
                             f"{vegas}: no single base period reproduces both references.")
    d = _sweep_means(runs, "dflow")
    if len(d) > 1:
        parts.append(f"Alone, five DFlows keep the same delay at every base period ({d['delay'].min():.1f}–"
                     f"{d['delay'].max():.1f} ms); fairness is best with the shortest (Jain {d['jain'].iloc[0]:.3f}, "
                     f"worst seed {d['jain_min'].iloc[0]:.3f}, at {d.index[0]:g} RTTs, against "
                     f"{d['jain'].iloc[-1]:.3f}, worst {d['jain_min'].iloc[-1]:.3f}, at {d.index[-1]:g}): with a long "
                     "base a flow that fell behind stays behind in some seeds (see The knee), with the short one it "
                     "was pulled back in every seed here.")  # fmt: skip
    parts.append("Run length matters as much as the base period: any finite base eventually absorbs a rival's "
                 "standing queue, so over long enough runs DFlow ends up ahead of LEDBAT and Vegas unless its base "
                 "is reset by an empty queue.")
    return " ".join(parts)


def _late_vs_early(runs: pd.DataFrame, series: pd.DataFrame, case: str, variant: str) -> tuple[str, bool]:
    """How DFlow's own estimate and rate change between the first half and the last quarter of the window.

    Also tells whether the base drifted: DFlow's own estimate at least halved while the real queue stayed.
    """
    d = _ok(runs, case, variant)
    s = series[(series["case"] == case) & (series["variant"] == variant)] if len(series) else series
    if not len(d) or not len(s):
        return "", False
    t0, t1 = float(d["measure_from_s"].iloc[0]), float(d["duration_s"].iloc[0])
    mid, late = t0 + (t1 - t0) / 2, t1 - (t1 - t0) / 4
    dfl = s[s["group"] == "dflow"]
    early_w, late_w = dfl[(dfl["time_s"] > t0) & (dfl["time_s"] <= mid)], dfl[dfl["time_s"] > late]
    e = early_w.groupby("seed").agg(rate=("rate_bps", "mean"), own=("flow_queueing_delay_ms", "mean"))
    lt = late_w.groupby("seed").agg(rate=("rate_bps", "mean"), own=("flow_queueing_delay_ms", "mean"))
    riv = s[(s["group"] != "dflow") & (s["time_s"] > late)].groupby("seed")["rate_bps"].mean()
    ahead = int((lt["rate"] > riv.reindex(lt.index)).sum())
    drifted = bool(lt["own"].mean() < 0.5 * e["own"].mean())
    return (f"between the first half of the window ({t0:g}–{mid:g} s) and its last quarter ({late:g}–{t1:g} s) "
            f"DFlow's own queueing estimate goes from {e['own'].mean():.0f} to {lt['own'].mean():.0f} ms and its rate "
            f"from {e['rate'].mean() / 1e3:.0f} to {lt['rate'].mean() / 1e3:.0f} kb/s (means over seeds); in the last "
            f"quarter DFlow is ahead of {CASES[case].rival_label} in {ahead} of {len(lt)} seeds."), drifted  # fmt: skip


def _sentence(text: str) -> str:
    """Capitalise the first letter only (str.capitalize would lower-case "DFlow" and "LEDBAT")."""
    return text[:1].upper() + text[1:]


def _base10_text(runs: pd.DataFrame) -> str:
    parts = []
    vs = []
    for key in ("ledbat", "vegas"):
        a, b = _ok(runs, key, PRIMARY), _ok(runs, key, "base10")
        if len(a) and len(b):
            vs.append(f"against {CASES[key].rival_label} DFlow goes from {a['dflow_rate_bps'].mean() / 1e3:.0f} to "
                      f"{b['dflow_rate_bps'].mean() / 1e3:.0f} kb/s, {CASES[key].rival_label} from "
                      f"{a['rival_rate_bps'].mean() / 1e3:.0f} to {b['rival_rate_bps'].mean() / 1e3:.0f} kb/s and the "
                      f"mean delay from {a['delay_mean_ms'].mean():.0f} to {b['delay_mean_ms'].mean():.0f} ms")  # fmt: skip
    if vs:
        parts.append("With 10 RTTs (1.2–3 s) the base follows any standing queue within seconds (the dashed line, "
                     "DFlow's own estimate, stays low while the real queue grows): DFlow pushes on top of the rival's "
                     "queue, the rival, which measures the real queue, backs off, and the queue grows until the "
                     "buffer overflows and the losses reset everything. Compared with the primary runs, "
                     + "; ".join(vs) + ". With the spec's default DFlow would beat LEDBAT and Vegas and double the "
                     "delay, the opposite of the study's results.")  # fmt: skip
    a, b = _ok(runs, "newreno", PRIMARY), _ok(runs, "newreno", "base10")
    if len(a) and len(b):
        parts.append(f"NewReno's sawtooth empties the queue now and then, so the drifting base matters little there "
                     f"(DFlow {a['dflow_rate_bps'].mean() / 1e3:.1f} → {b['dflow_rate_bps'].mean() / 1e3:.1f} kb/s).")
    return " ".join(parts)


def _gaps(runs: pd.DataFrame) -> str:
    nr = _ok(runs, "newreno")
    bad, good = nr[nr["utilisation"] < 0.9], nr[nr["utilisation"] >= 0.9]
    numbers = ""
    if len(bad) and len(good):
        numbers = (f" Here: {len(bad)} of {len(nr)} seeds, utilisation {bad['utilisation'].mean():.2f}, "
                   f"{bad['drops_window'].mean():.0f} drops and {bad['rival_timeouts'].mean():.0f} timeouts per run, "
                   f"against {good['utilisation'].mean():.2f}, {good['drops_window'].mean():.0f} drops and "
                   f"{good['rival_timeouts'].mean():.0f} timeouts in the other seeds.")  # fmt: skip
    return f"""* **Per-flow drop counts at the bottleneck.** latlab's link tables count drops per link, not per flow.
  The report gives the bottleneck's drops (in the window and over the run), TFRC/DFlow loss events and
  sent − received per flow (whole run; it also counts the few packets still in flight at the end), and TCP
  retransmissions in the window (they include go-back-N resends after a timeout, so they overstate losses).
  A per-flow drop counter on links would give the study's per-flow loss counts directly.
* **TFRC counters are not sampled.** loss_events, delay_events and loss_event_rate exist only in the flows table
  (whole run; p is the receiver's value at the end), not in flow_samples: the knee figure plots each flow's final
  p against its mean rate over the window, and event counts include the start-up. flow_samples'
  queueing_delay_ns keeps DFlow's last estimate, which goes stale while a starved flow sends nothing.
* **NewReno on this path, before and after a sender fix.** Earlier latlab senders followed RFC 6298 and
  RFC 5681 to the letter and NewReno was bistable here: the RTO timer, last restarted before the hole, fired while
  the fast retransmission crossed the full 174 ms queue (a timeout in about half of the loss cycles), and a timeout
  during recovery set ssthresh = FlightSize/2 over the window that had overflowed, so the next slow start overflowed
  again. The sender now does what ns-2 and Linux do: it restarts the timer as the fast retransmission leaves, and
  keeps the recovery's ssthresh when the timer fires during recovery (Linux's tcp_enter_loss). NewReno now runs its
  one-loss sawtooth (see its table: a few timeouts per run, utilisation near 1); DFlow's fate against it is the
  same in both regimes.
* **ns-2 details the spec does not give** (the study's packet sizes, TCP initial window, the LEDBAT and Vegas
  implementations' filters, start times, how many competitors, how long the runs were) are the assumptions
  stated under Set-up."""


def _report(data: StudyData, settings: Settings, quick: bool, jobs: int, elapsed_s: float,
            figures: dict[str, str]) -> str:  # fmt: skip
    runs, flows = data.runs, data.flows
    full_ms = FULL_QUEUE_DELAY_S * 1e3
    out: list[str] = []
    add = out.append
    add("# DFlow: low-latency congestion control for media\n")
    add("Reproduction of the DFlow study (P. O'Hanlon and K. Carlberg, DFlow, draft-ohanlon-rmcat-dflow; latlab's "
        "specs/studies.md §3 and specs/tfrc-dflow.md) in latlab's packet simulator. "
        + ("**Quick run** (`--quick`): shorter runs and fewer seeds than the full reproduction; the qualitative "
           "picture is the same.\n" if quick else "Full run (`latlab reproduce dflow`).\n"))
    add("DFlow is TFRC (RFC 5348) whose receiver also counts *delay congestion events*: a 50 ms period whose "
        "minimum one-way delay exceeds the base (minimum) one-way delay by more than cd_thresh = 50 ms enters the "
        "loss-interval history like a loss, so the equation rate falls before the buffer overflows.\n")

    # -- set-up
    add("## Set-up\n")
    n_runs = int((runs["status"] == "ok").sum()) if len(runs) else 0
    sim_s = float(runs["wall_s"].sum()) if "wall_s" in runs else float("nan")
    n_dflow_cases = sum(1 for c in CASES.values() if c.dflows)
    add(_table(["", "value"], [
        ["path", f"latlab dumbbell: access links {ACCESS_RATE_BPS / 1e6:g} Mb/s, {ACCESS_DELAY_MS:g} ms; bottleneck "
                 f"{BOTTLENECK_RATE_BPS / 1e6:g} Mb/s, {CORE_DELAY_MS:g} ms; propagation RTT {RTT_S * 1e3:.0f} ms"],
        ["bottleneck queue", f"DropTail, {QUEUE_PACKETS} packets; full-queue delay {QUEUE_PACKETS} × {PACKET_BYTES} B "
                             f"× 8 / 2 Mb/s = **{full_ms:.1f} ms**"],
        ["packets", f"TFRC/DFlow: s = {SEGMENT_BYTES} B payload + {TFRC_HEADER_BYTES} B headers = {PACKET_BYTES} B; "
                    f"TCP (ns2 preset): MSS {TCP_MSS_BYTES} B + {TCP_HEADER_BYTES} B = {PACKET_BYTES} B, one ACK per "
                    "segment, timestamps, NewReno recovery, IW 10"],
        ["DFlow", f"cd_thresh {TARGET_MS:g} ms, current period 50 ms, no gradient test, no oscillation reduction; "
                  f"base period {VARIANTS[PRIMARY]:g} RTTs (primary runs); swept over "
                  f"{', '.join(f'{VARIANTS[v]:g}' for v in settings.variants)} RTTs"],
        ["rivals", f"one DFlow against one TCP flow; LEDBAT target {TARGET_MS:g} ms (RFC 6817 defaults otherwise); "
                   "Vegas α = 1, β = 3, γ = 1 (packets)"],
        ["starts", f"each flow uniformly in [0, {START_SPREAD_S:g}] s, drawn from the seed"],
        ["run length", f"{settings.duration_s:g} s, measured over [{settings.measure_from_s:g}, "
                       f"{settings.duration_s:g}] s (the first {settings.measure_from_s:g} s are warm-up)"],
        ["seeds", ", ".join(str(s) for s in settings.seeds) + f" (figures: seed {settings.figure_seed}); the same "
                  "seed gives the same numbers"],
        ["runs", f"{n_runs}: {len(CASES)} cases × {len(settings.seeds)} seeds, and the {n_dflow_cases} DFlow cases "
                 f"again for each other base period; the simulations themselves took {sim_s:.0f} s in all (sum over "
                 f"runs); running and reducing them took {elapsed_s:.0f} s here on {jobs} worker(s) (runs found "
                 "finished in runs/ are not redone)"],
    ]))  # fmt: skip
    add("\n**Queueing delay** is the bottleneck's sojourn time (enqueue to start of transmission) of the packets "
        "that left it in each 100 ms interval; means and percentiles weight each interval by the bytes that left "
        f"(the delay packets saw). A full buffer shows {full_ms:.1f} ms. **Rates** are goodput over the window, per "
        "flow; the figures show the delivered rate averaged over 1 s. **Losses**: drops at the bottleneck (the only "
        "place packets are lost), TFRC/DFlow loss events and sent − received, TCP retransmissions and timeouts. "
        "**Jain's index** over the per-flow rates, among DFlows and over all flows.\n")
    add("### Choices, and why\n")
    led = _sweep_means(runs, "ledbat")
    third = ""
    if len(led) > 1:
        third = (f" Against LEDBAT the split runs from DFlow ahead ({led['ratio'].iloc[0]:.1f}× LEDBAT at "
                 f"{led.index[0]:g} RTTs) to DFlow starved ({led['ratio'].iloc[-1]:.3f} at {led.index[-1]:g} RTTs); "
                 f"the study's third lies {_where_ratio(led, 1 / 3)}.")  # fmt: skip
    add("* **DFlow's base period: 10 000 RTTs for the primary runs** (over 20 minutes here), i.e. a base that stays "
        "the true propagation delay for the whole run, and a sweep over 10–10 000 RTTs beside it. The base delay is "
        "the minimum one-way delay over the base period, so a queue that stands longer than the period becomes part "
        "of the base and DFlow stops seeing it. DFlow alone never shows this (it drains its own queue every few "
        "seconds), but LEDBAT and Vegas hold a standing queue, so against them the base period, not the algorithm, "
        "decides the outcome." + third + " The draft re-evaluates the base \"regularly\" over \"typically 10·RTT\" "
        "(with which DFlow beats both rivals, the opposite of the study), and the project's scenarios use 1000 RTTs "
        "(about 3 minutes at the loaded RTT here, so the drift arrives inside a 300 s run and the result depends "
        "on where the run ends); the primary runs therefore show the algorithm with a base that does not drift, "
        "and the sweep shows what each base period does.\n"
        "* **One competitor per \"vs\" run** (one DFlow, one TCP flow): the spec names the rival, not the count.\n"
        "* **Equal packet sizes** (1244 B on the wire for TFRC, DFlow and TCP), so that \"35 packets\" is one "
        "delay whoever fills the queue and Vegas's α, β (packets) mean the same bytes as DFlow's packets.\n"
        f"* **{len(settings.seeds)} seeds** (start orders): delay-based flows depend on who starts first (which "
        "queue a flow sees when it measures its base delay), so single runs mislead. Tables give every seed; "
        "summaries give the mean and the range.\n")

    # -- references
    add("## The study's references beside latlab\n")
    add(_table(["study (qualitative)", f"latlab: base period {VARIANTS[PRIMARY]:g} RTTs, mean (range) over seeds",
                "verdict", "why"],
               [[v.claim, v.latlab, f"**{v.verdict}**", v.why] for v in verdicts(runs)]))  # fmt: skip
    add("")
    if "summary" in figures:
        add(f"![summary]({figures['summary']})\n")

    # -- the runs
    texts = _case_texts(runs, flows)
    for key, case in CASES.items():
        add(f"## {case.title}\n")
        d = _ok(runs, key)
        if not len(d):
            add("*No results.*\n")
            continue
        if key in figures:
            add(f"![{case.title}]({figures[key]})\n")
        add(texts.get(key, "") + "\n")
        add(f"Per seed ({settings.duration_s:g} s runs, window [{settings.measure_from_s:g}, "
            f"{settings.duration_s:g}] s):\n")  # fmt: skip
        add(_seed_table(d, case) + "\n")
        f = flows[(flows["case"] == key) & (flows["variant"] == PRIMARY) & (flows["seed"] == settings.figure_seed)] \
            if len(flows) else flows
        if len(f):
            add(f"Per flow, seed {settings.figure_seed} (the figure):\n")
            add(_flow_table(f) + "\n")

    # -- the knee
    add("## The knee: TCP equation rate against the loss event rate\n")
    if "knee" in figures:
        add(f"![knee]({figures['knee']})\n")
    knee = knee_loss_event_rate()
    p_cap, p_half, p_fifth = (loss_event_rate_for(BOTTLENECK_RATE_BPS / n, RTT_S) for n in (1, 2, 5))
    add(f"RFC 5348's equation with b = 1 and t_RTO = 4R, s = {SEGMENT_BYTES} B. With t_RTO = 4R the timeout term "
        f"equals the first term where p + 32p³ = 1/9, i.e. at **p = {knee:.4f}**, whatever R and s: below it the "
        "rate falls as p^(−1/2) (ten times the loss event rate costs a factor 3.2), above it the timeout term takes "
        "over and the rate falls as p^(−3/2) and then p^(−7/2). Over this path (R = 120 ms) the equation gives the "
        f"whole 2 Mb/s at p = {p_cap:.4f}, half of it at p = {p_half:.4f} and a fifth (five flows' fair share) at "
        f"p = {p_fifth:.4f}; its floor is TFRC's one packet per 64 s ({MIN_RATE_BPS:.0f} bit/s).\n")
    add(_knee_text(flows) + "\n")

    # -- the base period
    add("## DFlow's base period\n")
    if "base_period" in figures:
        add(f"![base period]({figures['base_period']})\n")
    add(f"Means over seeds ({len(settings.seeds)} per point), {settings.duration_s:g} s runs:\n")
    add(_sweep_table(runs) + "\n")
    add(_base_period_text(runs) + "\n")
    if "variant_base1000" in figures:
        add("### 1000 RTTs: the drift arrives inside the run\n")
        add(f"![base period 1000 RTTs]({figures['variant_base1000']})\n")
        text, drifted = _late_vs_early(runs, data.flow_series, "ledbat", "base1000")
        period = f"{1000 * RTT_S:.0f} s at the propagation RTT and {1000 * LOADED_RTT_S:.0f} s at the RTT a 50 ms " \
                 "standing queue gives"
        if drifted:
            add(f"1000 RTTs is {period}, so in the LEDBAT runs DFlow's base loses the empty queue of the start during "
                f"the run and takes in LEDBAT's queue. Against LEDBAT: {text} This is why the project's usual 1000 "
                "RTTs is not used for the primary runs: its result depends on where the run ends.\n")
        else:
            add(f"1000 RTTs is {period}: in these {settings.duration_s:g} s runs the base has not yet drifted, so "
                f"the runs look like the primary ones. Against LEDBAT: {text} In the full reproduction's 300 s runs "
                "the drift arrives inside the run and DFlow's rate against LEDBAT climbs towards the end.\n")
    if "variant_base10" in figures:
        add("### 10 RTTs: the spec's default\n")
        add(f"![base period 10 RTTs]({figures['variant_base10']})\n")
        add(_base10_text(runs) + "\n")

    # -- gaps
    add("## Limitations and simulator gaps\n")
    add(_gaps(runs) + "\n")
    add("## Reproduce\n")
    add(f"```sh\nlatlab reproduce dflow --quick -o out/reproduce/dflow-quick -j 1   # {QUICK.duration_s:g} s runs, "
        f"{len(QUICK.seeds)} seeds\nlatlab reproduce dflow -o out/reproduce/dflow -j 2                   # "
        f"{FULL.duration_s:g} s runs, {len(FULL.seeds)} seeds\n```\n")
    add("The output folder holds results.parquet (one row per run: parameters, run_id, delay, losses, rates, Jain), "
        "flows.parquet (one row per flow and run), flow_series.parquet and bottleneck_series.parquet (every 100 ms "
        "sample), knee.parquet (the equation curves) and runs/ (the sweep: one results folder per distinct run; "
        "re-running skips finished runs). The copy under docs/dflow/ keeps only this report and its figures. "
        "Code: latlab.studies.dflow (runs, metrics, models, report) and latlab.studies._dflow_figures.\n")
    return "\n".join(out)
