"""One MPTCP-study run reduced to a connection row (goodput, completion, per-path shares, receive buffer, losses)
and per-subflow throughput over time; the study's runs through latlab's sweep runner; selections over runs for
the verdicts, the figures and the report."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from latlab.studies.mptcp import cases as C

#: "Stable": goodput at least this fraction of the best in the receive-buffer sweep.
STABLE_FRACTION = 0.95
#: Experiments whose per-subflow time series are kept (the figures' data), at the figure seed.
KEEP_SERIES = ("baseline", "mptcp", "rbuf", "mtu", "throttle")


def _floats(column: pd.Series) -> np.ndarray:
    """A (possibly nullable-integer) column as float64 with NaN for missing values."""
    return pd.to_numeric(column, errors="coerce").astype("float64").to_numpy()


def _table(res: Any, name: str) -> pd.DataFrame:
    t = res.tables.get(name)
    return t if t is not None else pd.DataFrame()


def _rate_series(
    time_ns: np.ndarray, cum_bytes: np.ndarray, window_s: float
) -> tuple[np.ndarray, np.ndarray]:
    """Throughput (Mbit/s) over consecutive windows of ``window_s`` from cumulative byte samples."""
    if time_ns.size < 2:
        return np.array([]), np.array([])
    t_s = time_ns / 1e9
    edges = np.arange(0.0, t_s[-1] + window_s, window_s)
    at = np.interp(edges, np.concatenate([[0.0], t_s]), np.concatenate([[0.0], cum_bytes]))
    mbps = np.diff(at) * 8 / window_s / 1e6
    return edges[1:], mbps


def series_window_s(run: C.Run) -> float:
    """The figures' averaging window: a twentieth of the download's time at 100 Mbit/s, in whole sample intervals
    (20 ms for 5 MB, 0.8 s for 200 MB)."""
    sample_s = run.sample_interval_ms / 1e3
    return sample_s * max(1, round(run.size_bytes * 8 / 100e6 / 20 / sample_s))


def run_metrics(res: Any, run: C.Run) -> tuple[dict[str, Any], pd.DataFrame]:
    """One run reduced to its connection row and its throughput series (per subflow, and the total)."""
    flows = res.flows
    m = _table(res, "mptcp")
    if len(m):
        # Through the proxy the server's plain TCP leg is a flow too: the download is the MPTCP connection.
        flows = flows[flows["flow_id"] == m.iloc[0]["flow_id"]]
    f = flows.iloc[0]
    size = float(run.size_bytes)
    completed = bool(f["completed"]) if pd.notna(f["completed"]) else False
    fct_s = float(pd.to_numeric(f["fct_ns"], errors="coerce")) / 1e9 if completed else np.nan
    delivered = float(pd.to_numeric(f["bytes_delivered"], errors="coerce"))
    goodput = size * 8 / fct_s if completed and fct_s > 0 else delivered * 8 / run.duration_s
    row: dict[str, Any] = {
        **run.params,
        "completed": completed,
        "fct_s": fct_s,
        "goodput_bps": goodput,
        "bytes_delivered": delivered,
        "retransmits": int(pd.to_numeric(f["retransmitted_segments"], errors="coerce") or 0),
        "timeouts": int(pd.to_numeric(f["timeouts"], errors="coerce") or 0),
        "wall_s": float(res.run_info.get("wall_s", np.nan)),
    }
    window_s = series_window_s(run)
    parts: list[pd.DataFrame] = []
    if run.transport == "tcp":
        fs = res.flow_samples
        busy = _floats(fs["time_ns"]) / 1e9 <= (fct_s if np.isfinite(fct_s) else run.duration_s)
        srtt = _floats(fs["srtt_ns"])[busy] / 1e6
        row.update(
            {
                f"{run.path}_share": 1.0,
                f"srtt_{run.path}_ms": float(np.nanmean(srtt[srtt > 0]))
                if np.any(srtt > 0)
                else np.nan,
            }
        )
        t, mbps = _rate_series(_floats(fs["time_ns"]), _floats(fs["bytes_acked"]), window_s)
        parts.append(pd.DataFrame({"time_s": t, "mbps": mbps, "subflow": run.path}))
    else:
        row.update(_mptcp_row(res, run, fct_s))
        parts += _subflow_series(res, window_s)
    series = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    if len(series):
        # Only the transfer (and one window after it), not the idle tail of the run.
        end = (fct_s if np.isfinite(fct_s) else run.duration_s) + window_s
        series = series[series["time_s"] <= end]
    return row, series


def _mptcp_row(res: Any, run: C.Run, fct_s: float) -> dict[str, Any]:
    """Per-path shares of the bytes, per-subflow RTTs over the transfer, and the data-level receive buffer."""
    out: dict[str, Any] = {}
    sub = _table(res, "subflows")
    acked = {str(r["path"]): float(r["bytes_acked"]) for _, r in sub.iterrows()} if len(sub) else {}
    total = sum(acked.values())
    for p in C.PATHS:
        out[f"{p}_share"] = acked.get(p, 0.0) / total if total > 0 else np.nan
        out[f"{p}_bytes"] = acked.get(p, 0.0)
    end_ns = (fct_s if np.isfinite(fct_s) else run.duration_s) * 1e9
    ss = _table(res, "subflow_samples")
    names = {int(r["subflow"]): str(r["path"]) for _, r in sub.iterrows()} if len(sub) else {}
    for _, r in sub.iterrows():
        out[f"retransmits_{r['path']}"] = int(
            pd.to_numeric(r["retransmitted_segments"], errors="coerce") or 0
        )
    if len(ss):
        busy = ss[_floats(ss["time_ns"]) <= end_ns]
        for sf, d in busy.groupby("subflow"):
            srtt = _floats(d["srtt_ns"])
            srtt = srtt[srtt > 0]
            out[f"srtt_{names.get(int(sf), f'path{sf}')}_ms"] = (
                float(srtt.mean()) / 1e6 if srtt.size else np.nan
            )
    out.update(_trace_stats(res, run, end_ns, names))
    m = _table(res, "mptcp")
    if len(m):
        r = m.iloc[0]
        out.update(
            {
                "recv_drops": int(r["buffer_drops_segments"]),
                "reinjections": int(r["reinjected_segments"]),
                "buffer_mean_bytes": float(r["buffer_occupancy_mean_bytes"]),
                "buffer_max_bytes": float(r["buffer_occupancy_max_bytes"]),
                "hol_s": float(r["hol_blocked_ns"]) / 1e9,
            }
        )
        out["hol_fraction"] = out["hol_s"] / (end_ns / 1e9) if end_ns > 0 else np.nan
    return out


#: A stall: delivery to the application stands still for at least this long (several sample intervals).
STALL_S = 0.1
#: The start of a transfer whose traces show whether slow start overruns the receive window.
EARLY_S = 1.0


def _trace_stats(res: Any, run: C.Run, end_ns: float, names: dict[int, str]) -> dict[str, float]:
    """What the run's traces show over the transfer: how long delivery stood still (stalls of at least STALL_S),
    how often the out-of-order buffer sat nearly full, and each subflow's mean cwnd."""
    out: dict[str, float] = {}
    ms = _table(res, "mptcp_samples")
    if len(ms):
        ms = ms[_floats(ms["time_ns"]) <= end_ns].sort_values("time_ns")
        t_s = _floats(ms["time_ns"]) / 1e9
        delivered = _floats(ms["bytes_delivered"])
        still = np.concatenate([[False], np.diff(delivered) <= 0])
        stalls, run_s = [], 0.0
        dt = run.sample_interval_ms / 1e3
        for flag in still:
            if flag:
                run_s += dt
            else:
                if run_s >= STALL_S:
                    stalls.append(run_s)
                run_s = 0.0
        if run_s >= STALL_S:
            stalls.append(run_s)
        out["stall_s"] = float(sum(stalls))
        out["stall_longest_s"] = float(max(stalls, default=0.0))
        out["stalls"] = len(stalls)
        occupancy = _floats(ms["buffer_occupancy_bytes"])
        full = occupancy >= 0.9 * C.window_bytes(run.buffer_mb)
        out["buffer_full_fraction"] = float(full.mean()) if full.size else np.nan
        early = t_s <= EARLY_S
        out["early_occupancy_peak"] = (
            float(occupancy[early].max()) / C.window_bytes(run.buffer_mb) if early.any() else np.nan
        )
    ss = _table(res, "subflow_samples")
    if len(ss):
        early = ss[_floats(ss["time_ns"]) / 1e9 <= EARLY_S]
        both = early.pivot_table(index="time_ns", columns="subflow", values="cwnd_bytes").sum(
            axis=1
        )
        out["early_cwnd_sum_peak"] = (
            float(both.max()) / C.window_bytes(run.buffer_mb) if len(both) else np.nan
        )
        busy = ss[_floats(ss["time_ns"]) <= end_ns]
        for sf, d in busy.groupby("subflow"):
            out[f"cwnd_{names.get(int(sf), f'path{sf}')}_kb"] = (
                float(np.nanmean(_floats(d["cwnd_bytes"]))) / 1e3
            )
    return out


def _subflow_series(res: Any, window_s: float) -> list[pd.DataFrame]:
    ss = _table(res, "subflow_samples")
    sub = _table(res, "subflows")
    if not len(ss) or not len(sub):
        return []
    names = {int(r["subflow"]): str(r["path"]) for _, r in sub.iterrows()}
    parts = []
    total = None
    for sf, d in ss.groupby("subflow"):
        d = d.sort_values("time_ns")
        t, mbps = _rate_series(_floats(d["time_ns"]), _floats(d["bytes_acked"]), window_s)
        parts.append(
            pd.DataFrame({"time_s": t, "mbps": mbps, "subflow": names.get(int(sf), f"path{sf}")})
        )
        total = mbps if total is None else total[: len(mbps)] + mbps[: len(total)]
    if total is not None:
        parts.append(
            pd.DataFrame(
                {
                    "time_s": parts[0]["time_s"].to_numpy()[: len(total)],
                    "mbps": total,
                    "subflow": "total",
                }
            )
        )
    return parts


@dataclass
class StudyData:
    """Everything a reproduction measured: one row per run (connection), and the figure runs' throughput series."""

    conns: pd.DataFrame
    series: pd.DataFrame
    runs: pd.DataFrame  # one row per run: params, run id, status
    proxy: bool  # whether the MPTCP runs went through the proxy node


def run_study(
    runs: Sequence[C.Run],
    outdir: Path,
    jobs: int | None,
    figure_seed: int = 1,
    progress: bool = True,
    proxy: bool = True,
) -> StudyData:
    """Run the distinct scenarios of ``runs`` once (sweep runner, resumable) and reduce each run."""
    from latlab import Scenario
    from latlab.sweep import load_run, run_distinct

    pairs = [
        (r.params, Scenario.from_dict(r.scenario(), source=f"<{C.run_name(r)} seed {r.seed}>"))
        for r in runs
    ]
    sweep_dir = outdir / "runs"
    ids, catalog = run_distinct(pairs, sweep_dir, jobs=jobs, progress=progress, name="mptcp")
    status = dict(zip(catalog["run_id"], catalog["status"]))
    rows: list[dict[str, Any]] = []
    series: list[pd.DataFrame] = []
    summaries: list[dict[str, Any]] = []
    for r, rid in zip(runs, ids):
        summaries.append({**r.params, "run_id": rid, "status": status.get(rid)})
        if status.get(rid) != "ok":
            continue
        row, s = run_metrics(load_run(sweep_dir, rid), r)
        rows.append({**row, "run_id": rid})
        if r.seed == figure_seed and r.experiment in KEEP_SERIES and len(s):
            series.append(
                s.assign(run_id=rid, **{k: v for k, v in r.params.items() if k != "seed"})
            )
    return StudyData(
        pd.DataFrame(rows),
        pd.concat(series, ignore_index=True) if series else pd.DataFrame(),
        pd.DataFrame(summaries),
        proxy,
    )


# ----- selections over runs ----------------------------------------------------------------------------


def pick(conns: pd.DataFrame, experiment: str, **where: Any) -> pd.DataFrame:
    """The connection rows of one experiment, filtered further by column values."""
    if not len(conns):
        return conns
    d = conns[conns["experiment"] == experiment]
    for k, v in where.items():
        d = d[np.isclose(d[k], v)] if isinstance(v, float) else d[d[k] == v]
    return d


def mean_of(d: pd.DataFrame, column: str) -> float:
    """Mean over seeds (NaN without rows or without the column)."""
    if not len(d) or column not in d:
        return float("nan")
    return float(pd.to_numeric(d[column], errors="coerce").mean())


def buffer_curve(conns: pd.DataFrame, data_window: bool = True) -> pd.DataFrame:
    """The receive-buffer sweep of one sender (cases.SENDERS): goodput, losses and head-of-line blocking per max TCP
    memory (MB), mean over seeds."""
    d = pick(conns, "rbuf", data_window=data_window)
    if not len(d):
        return pd.DataFrame()
    cols = {
        c: "mean"
        for c in (
            "goodput_bps",
            "recv_drops",
            "retransmits",
            "reinjections",
            "hol_fraction",
            "wifi_share",
            "buffer_max_bytes",
            "fct_s",
            "timeouts",
            "stall_s",
            "stall_longest_s",
            "buffer_full_fraction",
            "cwnd_wired_kb",
            "cwnd_wifi_kb",
            "retransmits_wired",
            "retransmits_wifi",
            "early_occupancy_peak",
            "early_cwnd_sum_peak",
        )
        if c in d
    }
    out = d.groupby("buffer_mb").agg(cols)
    by = d.groupby("buffer_mb")
    out["goodput_lo"] = by["goodput_bps"].min()
    out["goodput_hi"] = by["goodput_bps"].max()
    out["seeds"] = by["seed"].nunique()
    for c in (
        "recv_drops",
        "retransmits",
        "reinjections",
        "hol_fraction",
        "timeouts",
        "stall_s",
        "early_occupancy_peak",
        "early_cwnd_sum_peak",
    ):
        if c not in d:
            out[c] = np.nan
            continue
        if c not in out:
            out[c] = by[c].mean()
        out[f"{c}_lo"] = by[c].min()
        out[f"{c}_hi"] = by[c].max()
    return out.sort_index()


def stable_sizes(curve: pd.DataFrame, fraction: float = STABLE_FRACTION) -> pd.Series:
    """Per buffer size: whether every seed's goodput reaches ``fraction`` of the sweep's best (mean) goodput."""
    if not len(curve):
        return pd.Series(dtype=bool)
    return curve["goodput_lo"] >= fraction * curve["goodput_bps"].max()


def smallest_stable_mb(curve: pd.DataFrame, fraction: float = STABLE_FRACTION) -> float:
    """The smallest max TCP memory from which on every size of the grid is stable: every seed's goodput at that
    size and at every larger one reaches ``fraction`` of the sweep's best (NaN without data, or when the largest
    size is not stable). A stable size with an unstable one above it does not count: the curve is not monotonic."""
    ok = stable_sizes(curve, fraction)
    if not len(ok) or not bool(ok.iloc[-1]):
        return float("nan")
    bad = ok[~ok]
    above = ok.index if not len(bad) else ok.index[ok.index > bad.index.max()]
    return float(above.min())


def stable_pockets(curve: pd.DataFrame, fraction: float = STABLE_FRACTION) -> list[float]:
    """Stable sizes below an unstable one: the points where the curve is not monotonic."""
    ok = stable_sizes(curve, fraction)
    bad = ok[~ok]
    if not len(bad):
        return []
    return [float(mb) for mb, good in ok.items() if good and mb < bad.index.max()]


def guidance_parts(conns: pd.DataFrame) -> dict[str, float]:
    """The NSDI'12 guidance from latlab's own measurements: ΣBW = single-path TCP goodput on each path (the long
    downloads), RTT_max = the larger of the subflows' mean smoothed RTTs in the RFC sender's largest-buffer run;
    the buffer 2·ΣBW·RTT_max, compared with the max TCP memory as the study compares it."""
    base = pick(conns, "baseline")
    if not len(base):
        return {}
    big = base["size_bytes"].max()
    bw = {
        p: mean_of(pick(conns, "baseline", path=p, size_bytes=big), "goodput_bps") for p in C.PATHS
    }
    sweep = pick(conns, "rbuf", data_window=True)
    if not len(sweep):
        return {}
    top = sweep[sweep["buffer_mb"] == sweep["buffer_mb"].max()]
    rtts = {p: mean_of(top, f"srtt_{p}_ms") for p in C.PATHS}
    rtt_max_ms = max((v for v in rtts.values() if np.isfinite(v)), default=float("nan"))
    buffer_bytes = 2 * sum(bw.values()) / 8 * rtt_max_ms / 1e3
    return {
        "bw_wired_bps": bw["wired"],
        "bw_wifi_bps": bw["wifi"],
        "rtt_wired_ms": rtts["wired"],
        "rtt_wifi_ms": rtts["wifi"],
        "rtt_max_ms": rtt_max_ms,
        "buffer_bytes": buffer_bytes,
        "buffer_mb": buffer_bytes / C.MB,
    }


def guidance_mb(conns: pd.DataFrame) -> float:
    return guidance_parts(conns).get("buffer_mb", float("nan"))


def value_range(values: pd.Series, fmt: str = "{:.1f}", scale: float = 1.0) -> str:
    """Mean over seeds, with the range when there are several."""
    v = pd.Series(values).dropna().astype(float) * scale
    if not len(v):
        return "–"
    if len(v) == 1 or v.min() == v.max():
        return fmt.format(v.mean())
    return f"{fmt.format(v.mean())} ({fmt.format(v.min())}–{fmt.format(v.max())})"
