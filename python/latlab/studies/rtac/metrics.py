"""One RTAC-study run reduced to per-flow rows (goodput, RTT spread, window) and RTT samples; the study's runs
through latlab's sweep runner; selections over runs for the verdicts, the figures and the report."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from latlab.studies.rtac.cases import RECEIVERS, Run

#: Experiments whose per-sample RTTs are kept (the boxplots' data); the others keep their quantiles only.
KEEP_SAMPLES = ("single",)


def _floats(column: pd.Series) -> np.ndarray:
    """A (possibly nullable-integer) column as float64 with NaN for missing values."""
    return pd.to_numeric(column, errors="coerce").astype("float64").to_numpy()


def receiver_of(group: str) -> str:
    """The receiver of a flow group ("c1-rtac" → "rtac"); "wired" for the wired client."""
    return group.split("-", 1)[1] if group.startswith("c") and "-" in group else group


def run_metrics(res: Any, run: Run) -> tuple[list[dict[str, Any]], pd.DataFrame]:
    """One run reduced to per-flow rows and the flows' RTT samples over the measurement window.

    RTT is the sender's smoothed RTT (srtt), sampled every sample interval:
    what the phone's download sees, queueing included. Goodput is what the
    receiver delivered to the application over the window.
    """
    flows = res.flows.sort_values("flow_id")
    estimates = receiver_errors(res.tables.get("receiver_samples"), run.measure_from_s)
    fs = res.flow_samples
    t_s = _floats(fs["time_ns"]) / 1e9
    in_window = fs[t_s > run.measure_from_s + 1e-9]
    rows: list[dict[str, Any]] = []
    samples = []
    for _, f in flows.iterrows():
        fid, group = int(f["flow_id"]), str(f["group"])
        s = in_window[in_window["flow_id"] == fid]
        rtt = _floats(s["srtt_ns"]) / 1e6
        rtt = rtt[np.isfinite(rtt) & (rtt > 0)]
        rwnd = _floats(s["rwnd_bytes"])
        handshake_ms = float(pd.to_numeric(f["handshake_rtt_ns"], errors="coerce")) / 1e6
        q = np.percentile(rtt, [5, 25, 50, 75, 95]) if rtt.size else np.full(5, np.nan)
        rows.append(
            {
                **run.params,
                "flow_id": fid,
                "group": group,
                "receiver": receiver_of(group),
                "client": int(group[1:].split("-")[0]) if group.startswith("c") else -1,
                "cc": str(f["cc"]),
                "goodput_bps": float(f["goodput_bps"]),
                "rtt_mean_ms": float(rtt.mean()) if rtt.size else np.nan,
                "rtt_p5_ms": q[0],
                "rtt_p25_ms": q[1],
                "rtt_p50_ms": q[2],
                "rtt_p75_ms": q[3],
                "rtt_p95_ms": q[4],
                # The handshake's RTT is the unloaded one; a flow that keeps a queue never sees it again in the window.
                "rtt_min_ms": float(np.nanmin([rtt.min() if rtt.size else np.nan, handshake_ms])),
                "rwnd_mean_bytes": float(np.nanmean(rwnd)) if np.isfinite(rwnd).any() else np.nan,
                "retransmits": int(pd.to_numeric(f["retransmitted_segments"])),
                "timeouts": int(pd.to_numeric(f["timeouts"])),
                "wall_s": float(res.run_info.get("wall_s", np.nan)),
                **estimates.get(fid, NO_ESTIMATES),
            }
        )
        if run.experiment in KEEP_SAMPLES:
            samples.append(
                pd.DataFrame(
                    {
                        "path": run.path,
                        "receiver": receiver_of(group),
                        "sender": run.sender,
                        "seed": run.seed,
                        "rtt_ms": rtt,
                    }
                )
            )
    return rows, (pd.concat(samples, ignore_index=True) if samples else pd.DataFrame())


#: The receiver-estimate columns of a flow row (NaN for a receiver without estimates).
NO_ESTIMATES: dict[str, float] = {
    "rcv_rtt_err": np.nan,
    "rcv_rtt_bias": np.nan,
    "rcv_win_err": np.nan,
    "rcv_win_bias": np.nan,
    "rcv_win_err_flight": np.nan,
    "rcv_samples": 0,
}


def relative_error(estimate: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    """Mean relative error |e − t| / t and mean signed error (e − t) / t over samples where both are known."""
    ok = np.isfinite(estimate) & np.isfinite(truth) & (truth > 0)
    if not ok.any():
        return np.nan, np.nan
    rel = (estimate[ok] - truth[ok]) / truth[ok]
    return float(np.abs(rel).mean()), float(rel.mean())


def receiver_errors(
    table: pd.DataFrame | None, measure_from_s: float
) -> dict[int, dict[str, float]]:
    """Per flow, over the measurement window: how far the receiver's estimates sit from the sender's state.

    The simulator samples both ends at the same instant (``receiver_samples``): the receiver's RTT estimate against
    the sender's srtt, and its window estimate (bytes delivered per RTT) against the sender's cwnd and against the
    data in flight (the sender sends min(cwnd, rwnd), so a window the receiver binds leaves cwnd above what flies).
    """
    if table is None or not len(table):
        return {}
    t = table[_floats(table["time_ns"]) / 1e9 > measure_from_s + 1e-9]
    out: dict[int, dict[str, float]] = {}
    for fid, d in t.groupby("flow_id"):
        rtt_err, rtt_bias = relative_error(_floats(d["rcv_rtt_ns"]), _floats(d["srtt_ns"]))
        win = _floats(d["rcv_window_est_bytes"])
        win_err, win_bias = relative_error(win, _floats(d["cwnd_bytes"]))
        flight_err, _ = relative_error(win, _floats(d["flight_bytes"]))
        out[int(fid)] = {
            "rcv_rtt_err": rtt_err,
            "rcv_rtt_bias": rtt_bias,
            "rcv_win_err": win_err,
            "rcv_win_bias": win_bias,
            "rcv_win_err_flight": flight_err,
            "rcv_samples": int(np.isfinite(win).sum()),
        }
    return out


@dataclass
class StudyData:
    """Everything a reproduction measured: one row per flow of every run, and the RTT samples of the single flows."""

    flows: pd.DataFrame
    rtt_samples: pd.DataFrame
    runs: pd.DataFrame  # one row per run: params, run id, status


def run_study(
    runs: Sequence[Run], outdir: Path, jobs: int | None, progress: bool = True
) -> StudyData:
    """Run the distinct scenarios of ``runs`` once (sweep runner, resumable) and reduce each run."""
    from latlab import Scenario
    from latlab.sweep import load_run, run_distinct

    pairs = [
        (
            r.params,
            Scenario.from_dict(
                r.scenario(),
                source=f"<rtac {r.experiment} {r.path} {r.label} "
                f"{r.sender} {r.rmem_kb}k seed {r.seed}>",
            ),
        )
        for r in runs
    ]
    sweep_dir = outdir / "runs"
    ids, catalog = run_distinct(pairs, sweep_dir, jobs=jobs, progress=progress, name="rtac")
    status = dict(zip(catalog["run_id"], catalog["status"]))
    rows: list[dict[str, Any]] = []
    samples: list[pd.DataFrame] = []
    summaries: list[dict[str, Any]] = []
    for r, rid in zip(runs, ids):
        summaries.append({**r.params, "run_id": rid, "status": status.get(rid)})
        if status.get(rid) != "ok":
            continue
        flow_rows, rtt = run_metrics(load_run(sweep_dir, rid), r)
        rows += [{**row, "run_id": rid} for row in flow_rows]
        if len(rtt):
            samples.append(rtt)
    return StudyData(
        pd.DataFrame(rows),
        pd.concat(samples, ignore_index=True) if samples else pd.DataFrame(),
        pd.DataFrame(summaries),
    )


# ----- selections over runs ----------------------------------------------------------------------------


def select(
    flows: pd.DataFrame, experiment: str, path: str, sender: str = "cubic", **where: Any
) -> pd.DataFrame:
    """The per-flow rows of one experiment on one path (and sender), optionally filtered further by column."""
    if not len(flows):
        return flows
    d = flows[
        (flows["experiment"] == experiment) & (flows["path"] == path) & (flows["sender"] == sender)
    ]
    for k, v in where.items():
        d = d[d[k] == v] if k in d else d.iloc[0:0]
    return d


def single_figures(flows: pd.DataFrame, path: str, sender: str = "cubic") -> pd.DataFrame:
    """Per receiver, one flow alone: goodput (Mbit/s) and RTT figures, mean over seeds, with the seeds' range."""
    d = select(flows, "single" if sender == "cubic" else "senders", path, sender)
    d = d[d["receivers"].isin(list(RECEIVERS))]
    if not len(d):
        return pd.DataFrame()
    g = d.assign(goodput_mbps=d["goodput_bps"] / 1e6).groupby("receiver")
    out = g.agg(
        goodput_mbps=("goodput_mbps", "mean"),
        goodput_lo=("goodput_mbps", "min"),
        goodput_hi=("goodput_mbps", "max"),
        rtt_mean_ms=("rtt_mean_ms", "mean"),
        rtt_lo=("rtt_mean_ms", "min"),
        rtt_hi=("rtt_mean_ms", "max"),
        rtt_p25_ms=("rtt_p25_ms", "mean"),
        rtt_p50_ms=("rtt_p50_ms", "mean"),
        rtt_p75_ms=("rtt_p75_ms", "mean"),
        rtt_min_ms=("rtt_min_ms", "min"),
        rwnd_kb=("rwnd_mean_bytes", "mean"),
        seeds=("seed", "nunique"),
    )
    out["rwnd_kb"] /= 1024
    return out.reindex([r for r in RECEIVERS if r in out.index])


def pair_shares(
    flows: pd.DataFrame,
    experiment: str,
    path: str,
    receivers: str,
    sender: str = "cubic",
    **where: Any,
) -> pd.DataFrame:
    """Per seed of one competition run: each phone client's goodput (Mbit/s) and RTT, and the wired client's."""
    d = select(flows, experiment, path, sender, receivers=receivers, **where)
    if not len(d):
        return pd.DataFrame()
    d = d.assign(
        who=np.where(d["client"] >= 0, "c" + d["client"].astype(str) + "-" + d["receiver"], "wired")
    )
    good = d.pivot_table(index="seed", columns="who", values="goodput_bps", aggfunc="first") / 1e6
    return good


def share_of_autotuning(
    flows: pd.DataFrame,
    experiment: str,
    path: str,
    receiver: str,
    sender: str = "cubic",
    three: bool | None = None,
    **where: Any,
) -> pd.Series:
    """Per seed: the goodput of ``receiver``'s client over that of the auto-tuning client in the same run.

    Pairs put auto-tuning on client 0; the three-client run (``three``, by default the "three" experiment) has one of
    each receiver. For ``receiver`` "autotuning" (the control pair), client 1's goodput over client 0's.
    """
    if three is None:
        three = experiment == "three"
    receivers = "+".join(RECEIVERS) if three else f"autotuning+{receiver}"
    good = pair_shares(flows, experiment, path, receivers, sender, **where)
    if not len(good):
        return pd.Series(dtype=float)
    mine = [c for c in good.columns if c.endswith(f"-{receiver}") and c != "c0-autotuning"]
    if not mine or "c0-autotuning" not in good.columns:
        return pd.Series(dtype=float)
    return (good[mine[0]] / good["c0-autotuning"]).rename(receiver)


def goodput_of(
    flows: pd.DataFrame, experiment: str, path: str, receivers: str, sender: str = "cubic"
) -> pd.DataFrame:
    """Per seed of one run: each phone client's goodput (Mbit/s), columns by receiver."""
    good = pair_shares(flows, experiment, path, receivers, sender)
    if not len(good):
        return good
    good = good[[c for c in good.columns if c != "wired"]]
    return good.rename(columns=lambda c: c.split("-", 1)[1])


def rmem_curve(flows: pd.DataFrame, path: str) -> pd.DataFrame:
    """Auto-tuning's goodput (Mbit/s) and RTT against tcp_rmem_max (KB), mean over seeds."""
    d = select(flows, "rmem", path)
    if not len(d):
        return pd.DataFrame()
    out = (
        d.assign(goodput_mbps=d["goodput_bps"] / 1e6)
        .groupby("rmem_kb")
        .agg(
            goodput_mbps=("goodput_mbps", "mean"),
            goodput_lo=("goodput_mbps", "min"),
            goodput_hi=("goodput_mbps", "max"),
            rtt_mean_ms=("rtt_mean_ms", "mean"),
            rtt_p25_ms=("rtt_p25_ms", "mean"),
            rtt_p75_ms=("rtt_p75_ms", "mean"),
        )
    )
    return out.sort_index()


def best_rmem_kb(curve: pd.DataFrame, fraction: float = 0.95) -> float:
    """The smallest tcp_rmem_max whose goodput reaches ``fraction`` of the sweep's largest (NaN without data)."""
    if not len(curve):
        return float("nan")
    ok = curve[curve["goodput_mbps"] >= fraction * curve["goodput_mbps"].max()]
    return float(ok.index.min())


def value_range(values: pd.Series, fmt: str = "{:.1f}", scale: float = 1.0) -> str:
    """Mean over seeds, with the range when there are several."""
    v = pd.Series(values).dropna().astype(float) * scale
    if not len(v):
        return "–"
    if len(v) == 1:
        return fmt.format(v.iloc[0])
    return f"{fmt.format(v.mean())} ({fmt.format(v.min())}–{fmt.format(v.max())})"
