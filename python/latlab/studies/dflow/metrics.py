"""One DFlow run reduced to metrics: a summary row, per-flow rows, flow and bottleneck time series; the
study's runs through latlab's sweep runner; the equation curves of the knee figure; selections over runs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from latlab.models import tcp_equation as eq
from latlab.models.fairness import jain_index
from latlab.studies.dflow.cases import (
    BOTTLENECK,
    DRAWN,
    FULL_QUEUE_DELAY_S,
    LOADED_RTT_S,
    PRIMARY,
    RTT_S,
    SEGMENT_BYTES,
    TARGET_MS,
    Run,
)

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
    return pd.DataFrame(
        {
            "flow_id": fs["flow_id"].to_numpy(),
            "group": meta.loc[fs["flow_id"], "group"].to_numpy(),
            "time_s": time_s,
            "rate_bps": rate_bps.to_numpy(),
            "send_rate_bps": _floats(fs["rate_bps"]),
            "flow_queueing_delay_ms": _floats(fs["queueing_delay_ns"]) / 1e6,
        }
    )


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
    return pd.DataFrame(
        {
            "time_s": _floats(ls["time_ns"]) / 1e9,
            "sojourn_ms": _floats(ls["sojourn_mean_ns"]) / 1e6,
            "sojourn_max_ms": _floats(ls["sojourn_max_ns"]) / 1e6,
            "queue_pkts": _floats(ls["queue_pkts"]),
            "departed_bytes": np.diff(departed, prepend=0.0),
            "drops_pkts": _floats(ls["drops_pkts"]),
        }
    )


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
        "below_target": float(weights[values <= TARGET_MS].sum() / total)
        if total
        else float("nan"),
    }


def _at(series: pd.DataFrame, column: str, t_s: float) -> float:
    """A cumulative column's value at the last sample at or before ``t_s`` (0 before the first)."""
    before = series[series["time_s"] <= t_s + 1e-9]
    return float(before[column].iloc[-1]) if len(before) else 0.0


def run_metrics(
    res: Any, run: Run
) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame, pd.DataFrame]:
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
            **run.params,
            "flow_id": fid,
            "group": f["group"],
            "kind": f["kind"],
            "cc": f["cc"],
            "start_s": float(f["start_ns"]) / 1e9,
            "goodput_bps": float(f["goodput_bps"]),
        }
        if f["kind"] in ("tfrc", "dflow"):
            received = float(pd.to_numeric(f["packets_received"]))
            events = float(pd.to_numeric(f["loss_events"])) + float(
                pd.to_numeric(f["delay_events"])
            )
            row.update(
                loss_event_rate=float(
                    f["loss_event_rate"]
                ),  # the receiver's p at the end of the run
                loss_events=int(pd.to_numeric(f["loss_events"])),
                delay_events=int(pd.to_numeric(f["delay_events"])),
                events_per_packet=events / received if received else float("nan"),
                # Packets that never arrived; the last one-way delay's worth were still in flight at the end.
                lost_pkts=int(f["segments_sent"]) - int(received),
                flow_queueing_delay_ms=float(np.nanmean(in_window["flow_queueing_delay_ms"]))
                if f["kind"] == "dflow" and in_window["flow_queueing_delay_ms"].notna().any()
                else float("nan"),
            )
        else:
            fs = res.flow_samples[res.flow_samples["flow_id"] == fid].sort_values("time_ns")
            rtx = pd.DataFrame(
                {
                    "time_s": _floats(fs["time_ns"]) / 1e9,
                    "rtx": _floats(fs["retransmitted_segments"]),
                }
            )
            row.update(
                retransmits=int(_at(rtx, "rtx", t1) - _at(rtx, "rtx", t0)),
                timeouts=int(pd.to_numeric(f["timeouts"])),
            )
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
    for column, kind in (
        ("dflow_rate_bps", "dflow"),
        ("tfrc_rate_bps", "tfrc"),
        ("rival_rate_bps", "tcp"),
    ):
        g = pf[pf["kind"] == kind]
        summary[column] = float(g["goodput_bps"].mean()) if len(g) else float("nan")
    for kind in ("tfrc", "dflow"):
        g = pf[pf["kind"] == kind]
        summary[f"{kind}_loss_events"] = int(g["loss_events"].sum()) if len(g) else 0
        summary[f"{kind}_lost_pkts"] = int(g["lost_pkts"].sum()) if len(g) else 0
    g = pf[pf["kind"] == "dflow"]
    summary["dflow_delay_events"] = int(g["delay_events"].sum()) if len(g) else 0
    # DFlow's own view of the queue (current − base), to set beside the bottleneck's: they differ by base errors.
    summary["dflow_own_delay_ms"] = (
        float(g["flow_queueing_delay_ms"].mean()) if len(g) else float("nan")
    )
    rival = pf[pf["kind"] == "tcp"]
    summary["rival_retransmits"] = int(rival["retransmits"].sum()) if len(rival) else 0
    summary["rival_timeouts"] = int(rival["timeouts"].sum()) if len(rival) else 0
    first = flows.loc[flows["start_ns"].idxmin()]
    summary["first_to_start"] = str(first["group"])
    keys = run.params
    return (
        summary,
        pf,
        series.assign(**{k: keys[k] for k in ("case", "variant", "seed")}),
        link.assign(**{k: keys[k] for k in ("case", "variant", "seed")}),
    )


@dataclass
class StudyData:
    """Everything a reproduction measured: one row per run, per flow, and the time series."""

    runs: pd.DataFrame
    flows: pd.DataFrame
    flow_series: pd.DataFrame
    bottleneck_series: pd.DataFrame


def run_study(
    runs: Sequence[Run], outdir: Path, jobs: int | None, progress: bool = True
) -> StudyData:
    """Run the distinct scenarios of ``runs`` once (sweep runner, resumable) and reduce each run."""
    from latlab import Scenario
    from latlab.sweep import load_run, run_distinct

    pairs = [
        (
            r.params,
            Scenario.from_dict(r.scenario(), source=f"<dflow {r.case} {r.variant} seed {r.seed}>"),
        )
        for r in runs
    ]
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
        if (
            r.variant in DRAWN
        ):  # the sweep's other base periods are summarised, not drawn: keep the data small
            fseries.append(fs)
            lseries.append(ls)

    def cat(frames: list[pd.DataFrame]) -> pd.DataFrame:
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    return StudyData(pd.DataFrame(summaries), cat(flows), cat(fseries), cat(lseries))


def knee_curves() -> pd.DataFrame:
    """The equation rate against p over this path: at the propagation RTT and with a full queue added."""
    p = np.logspace(-4, 0, 400)
    rows = []
    for what, rtt_s in (("propagation", RTT_S), ("full queue", RTT_S + FULL_QUEUE_DELAY_S)):
        rows.append(
            pd.DataFrame(
                {
                    "curve": f"R = {rtt_s * 1e3:.0f} ms ({what})",
                    "rtt_s": rtt_s,
                    "p": p,
                    "rate_bps": eq.tcp_equation_rate_bps(p, rtt_s, SEGMENT_BYTES),
                }
            )
        )
    return pd.concat(rows, ignore_index=True)


# ----- selections over runs (used by the verdicts, the figures and the report) ----------------------


def value_range(values: pd.Series, fmt: str = "{:.1f}", scale: float = 1.0) -> str:
    """Mean over seeds, with the range when there are several."""
    v = values.dropna().astype(float) * scale
    if not len(v):
        return "–"
    if len(v) == 1:
        return fmt.format(v.iloc[0])
    return f"{fmt.format(v.mean())} ({fmt.format(v.min())}–{fmt.format(v.max())})"


def ok_runs(df: pd.DataFrame, case: str, variant: str = PRIMARY) -> pd.DataFrame:
    """The finished runs of one case and variant, by seed."""
    if not len(df) or "status" not in df:
        return df.iloc[0:0]
    sel = df[(df["case"] == case) & (df["variant"] == variant) & (df["status"] == "ok")]
    return sel.sort_values("seed")


def rate_ratio(d: pd.DataFrame) -> pd.Series:
    """DFlow's rate over the TCP rival's, per run."""
    return d["dflow_rate_bps"] / d["rival_rate_bps"]


def sweep_means(runs: pd.DataFrame, case: str) -> pd.DataFrame:
    """Per base period: mean DFlow/rival ratio, its range, mean delay (finished runs of one case)."""
    d = runs[(runs["case"] == case) & (runs["status"] == "ok")] if len(runs) else runs
    if not len(d):
        return pd.DataFrame()
    d = d.assign(ratio=d["dflow_rate_bps"] / d["rival_rate_bps"])
    return d.groupby("base_period_rtts").agg(
        ratio=("ratio", "mean"),
        lo=("ratio", "min"),
        hi=("ratio", "max"),
        delay=("delay_mean_ms", "mean"),
        jain=("jain_dflow", "mean"),
        jain_min=("jain_dflow", "min"),
        dflow=("dflow_rate_bps", "mean"),
    )


def closest(sweep: pd.DataFrame, target: float) -> tuple[float, float]:
    """The base period whose mean ratio is closest to ``target`` (in log terms), and that ratio."""
    r = sweep["ratio"].clip(lower=1e-6)
    bp = float((np.log(r) - np.log(target)).abs().idxmin())
    return bp, float(sweep.loc[bp, "ratio"])


def where_ratio(sweep: pd.DataFrame, target: float) -> str:
    """Where the mean ratio crosses ``target`` along the base periods ("between 100 and 300 RTTs ..."), else the closest."""
    r = sweep["ratio"]
    for a, b in zip(r.index[:-1], r.index[1:]):
        if (r[a] - target) * (r[b] - target) <= 0:
            return (
                f"between {a:g} and {b:g} RTTs (ratios {r[a]:.2f} and {r[b]:.2f}; a base that forgets the empty "
                f"queue after {a * LOADED_RTT_S:.0f}–{b * LOADED_RTT_S:.0f} s)"
            )
    bp, v = closest(sweep, target)
    return f"nowhere on this grid (closest: {v:.2f} at {bp:g} RTTs)"
