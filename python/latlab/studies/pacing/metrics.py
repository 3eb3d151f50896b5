"""One pacing run reduced to a row of metrics; the study's runs through latlab's sweep runner; selections and
fits over the results (experiment H's sweeps, the offered-load scale B*), and the cost of a full run."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from latlab.studies.pacing.cases import FULL, Run, Settings, all_runs

CORE_LINK = "c0->c1"
#: D's files are split at this size for the per-size goodput.
SMALL_FILE_BYTES = 100_000


def metrics(res: Any, run: Run) -> dict[str, Any]:
    """One run's row: goodput, core utilisation and loss over the measurement window, UDP loss, per-group goodput."""
    flows, links = res.flows, res.links
    tcp = flows[flows["kind"] == "tcp"]
    core = links[links["name"] == CORE_LINK].iloc[0]
    row: dict[str, Any] = {
        "tcp_goodput_mbps": float(tcp["goodput_bps"].sum()) / 1e6,
        "per_flow_kbps": float(tcp["goodput_bps"].mean()) / 1e3,
        "core_utilisation": float(core["utilization"]),
        "sim_wall_s": float(res.run_info.get("wall_s", np.nan)),
        # over the whole run: how the flows recover (windows of a few segments leave too few duplicate ACKs)
        "timeouts_per_flow": float(tcp["timeouts"].mean()),
        "fast_recoveries_per_flow": float(tcp["fast_recoveries"].mean()),
    }
    # Loss over the window, from the cumulative link samples at measure_from_s and at the end.
    ls = res.link_samples
    ls = ls[ls["link_id"] == core["link_id"]].sort_values("time_ns")
    t0 = int(run.measure_from_s * 1e9)
    start = ls[ls["time_ns"] <= t0].iloc[-1] if len(ls[ls["time_ns"] <= t0]) else None
    arr = float(core["arrivals_pkts"]) - (
        float(start["arrivals_pkts"]) if start is not None else 0.0
    )
    drops = float(core["drops_pkts"]) - (float(start["drops_pkts"]) if start is not None else 0.0)
    row["core_loss"] = drops / arr if arr > 0 else np.nan
    # Over the whole run: how many of the core's drops RED made early (0 for DropTail; absent in older results).
    row["core_drops_pkts"] = int(core["drops_pkts"])
    row["core_early_drops_pkts"] = (
        int(core["drops_early_pkts"]) if "drops_early_pkts" in core.index else np.nan
    )
    row.update(_queue_delays(res, core, t0))
    udp = flows[flows["kind"] == "udp"]
    if len(udp):
        row["udp_loss"] = udp_window_loss(udp)
    if run.workload == "closed-loop":
        tr = res.tables.get("transfers")
        if tr is not None and len(tr):
            tr = tr[tr["start_ns"] >= t0]
            row["file_goodput_kbps"] = float(tr["goodput_bps"].mean()) / 1e3
            row["files"] = int(len(tr))
            # by file size: below and above 100 KB (the Pareto scale is 16.7 KB, so every file is above 10 KB)
            small = tr["size_bytes"] < SMALL_FILE_BYTES
            row["small_file_goodput_kbps"] = float(tr[small]["goodput_bps"].mean()) / 1e3
            row["large_file_goodput_kbps"] = float(tr[~small]["goodput_bps"].mean()) / 1e3
    for grp in ("paced", "unpaced"):
        g = tcp[tcp["group"] == grp]
        row[f"{grp}_kbps"] = float(g["goodput_bps"].mean()) / 1e3 if len(g) else np.nan
    return row


def udp_window_loss(udp: pd.DataFrame) -> float:
    """UDP loss over the measurement window: the share of payload bytes sent in the window that never arrived.

    ``throughput_bps`` (payload sent) and ``goodput_bps`` (payload received) both count from
    ``measure_from_s`` to the end, so the start-up is left out. Bytes, not packets: the flows table counts
    packets over the whole run only; sizes are uniform in 100–300 B, so a byte share weighs a dropped
    300-B packet three times a 100-B one. Packets in flight at the window's two ends nearly cancel (one
    flight of a steady source each), a bias below 1e-4 of the window's bytes.
    """
    sent = float(pd.to_numeric(udp["throughput_bps"], errors="coerce").sum())
    got = float(pd.to_numeric(udp["goodput_bps"], errors="coerce").sum())
    return max(0.0, 1.0 - got / sent) if sent > 0 else np.nan


def _queue_delays(res: Any, core: pd.Series, t0_ns: int) -> dict[str, float]:
    """Mean sojourn over the window at the core queue and at the ingress edge links (the edge pacer's queue), ms.

    From the link samples: each sample interval's mean sojourn weighted by the bytes that left in it.
    """
    links, samples = res.links, res.link_samples
    out: dict[str, float] = {}
    ingress = links[links["name"].str.match(r"^ie\d+->c0$")]["link_id"]
    for key, ids in (("core_sojourn_ms", [core["link_id"]]), ("edge_sojourn_ms", list(ingress))):
        s = samples[samples["link_id"].isin(ids)].sort_values("time_ns")
        s = s.assign(sent=s.groupby("link_id")["departures_bytes"].diff())
        s = s[s["time_ns"] > t0_ns]
        w = s["sent"].to_numpy(dtype=float)
        out[key] = (
            float((s["sojourn_mean_ns"].to_numpy(dtype=float) * w).sum() / w.sum()) / 1e6
            if len(s) and w.sum() > 0
            else np.nan
        )
    return out


def run_study(
    runs: Sequence[Run], outdir: Path, jobs: int | None, progress: bool = True
) -> pd.DataFrame:
    """Run the distinct scenarios of ``runs`` once (sweep runner, resumable) and return one metrics row per run."""
    from latlab import Scenario
    from latlab.sweep import run_distinct

    pairs = [
        (r.params, Scenario.from_dict(r.scenario(), source=f"<pacing {r.experiment}>"))
        for r in runs
    ]
    ids, catalog = run_distinct(pairs, outdir / "runs", jobs=jobs, progress=progress, name="pacing")
    return collect(runs, ids, catalog, outdir)


def finished_runs(runs: Sequence[Run], outdir: Path) -> pd.DataFrame:
    """One metrics row per run from the runs already finished in ``outdir/runs`` (nothing is run; others pending).

    Renders a report of an interrupted reproduction; ``run_study`` on the same folder later completes it.
    """
    from latlab import Scenario
    from latlab.frames import read_parquet
    from latlab.sweep.execute import run_id_of

    ids = [
        run_id_of(Scenario.from_dict(r.scenario(), source=f"<pacing {r.experiment}>")) for r in runs
    ]
    catalog = read_parquet(outdir / "runs" / "catalog.parquet")
    return collect(runs, ids, catalog, outdir)


def collect(
    runs: Sequence[Run], ids: Sequence[str], catalog: pd.DataFrame, outdir: Path
) -> pd.DataFrame:
    """Each run's parameters and, if it finished, its metrics (a distinct run is read once)."""
    from latlab.sweep import load_run

    sweep_dir = outdir / "runs"
    status = dict(zip(catalog["run_id"], catalog["status"]))
    wall = dict(zip(catalog["run_id"], catalog["wall_s"]))
    finished = dict(zip(catalog["run_id"], catalog["finished_at"]))
    cache: dict[str, dict[str, Any]] = {}
    rows = []
    for r, rid in zip(runs, ids):
        row = {**r.params, "run_id": rid, "status": status.get(rid, "pending")}
        if status.get(rid) == "ok":
            if rid not in cache:
                cache[rid] = metrics(load_run(sweep_dir, rid), r)
                cache[rid]["wall_s"] = float(wall.get(rid, np.nan))
                cache[rid]["finished_at"] = finished.get(rid)
            row.update(cache[rid])
        rows.append(row)
    return pd.DataFrame(rows)


def select(df: pd.DataFrame, exp: str) -> pd.DataFrame:
    """The finished runs of one experiment."""
    return df[(df["experiment"] == exp) & (df["status"] == "ok")]


def h_rows(df: pd.DataFrame, settings: Settings) -> pd.DataFrame:
    """Experiment H's rows tagged by the sweep they belong to: "delay" (d swept) and/or "buffer" (vs buffer)."""
    h = select(df, "H")
    parts = []
    paced = h[h["mode"] == "edge-paced"]
    parts.append(
        paced[
            paced["buffer_kb"].isin(settings.delay_buffers_kb)
            & paced["delay_ms"].isin(settings.delays_ms)
        ].assign(sweep="delay")
    )
    parts.append(
        paced[
            paced["buffer_kb"].isin(settings.other_buffers_kb)
            & paced["delay_ms"].isin(settings.delay_set_ms)
        ].assign(sweep="buffer")
    )
    parts.append(h[h["mode"] != "edge-paced"].assign(sweep="ref"))
    return pd.concat(parts, ignore_index=True)


def b_star(df: pd.DataFrame) -> float:
    from latlab.models import edge_pacer as model

    a = select(df, "A")
    a = a[a["mode"] == "unpaced"].groupby("buffer_kb", as_index=False)["core_utilisation"].mean()
    if not len(a):
        return 2000.0
    return model.fit_b_star(a["buffer_kb"].to_numpy() * 1000, a["core_utilisation"].to_numpy())


def estimate_full_s(
    df: pd.DataFrame, settings: Settings, jobs: int
) -> tuple[float, int, pd.DataFrame]:
    """The full reproduction's wall time, from this run's measured wall time per simulated second, per experiment.

    A run's cost is proportional to its simulated packets, which the core link (saturated in every
    experiment but F) fixes more than the flow count; experiments not run here take A's rate.
    """
    ok = df[df["status"] == "ok"].drop_duplicates("run_id")
    rate = (ok["wall_s"] / ok["duration_s"]).groupby(ok["experiment"]).mean()
    fallback = float(rate.get("A", rate.mean() if len(rate) else 0.05))
    full_runs = all_runs(FULL)
    seen: dict[Run, Run] = {}
    for r in full_runs:  # the same set-up under two experiments runs once (the first one pays)
        seen.setdefault(dataclasses.replace(r, experiment=""), r)
    per_exp = pd.Series({r.experiment: 0 for r in full_runs}, dtype=float)
    counts = pd.Series({r.experiment: 0 for r in full_runs}, dtype=int)
    for r in seen.values():
        per_exp[r.experiment] += float(rate.get(r.experiment, fallback)) * r.duration_s
        counts[r.experiment] += 1
    table = pd.DataFrame({"runs": counts, "core_seconds": per_exp})
    return float(per_exp.sum() / jobs), int(counts.sum()), table


def sweep_span_s(ok: pd.DataFrame) -> float | None:
    """From the first run's start (finish − wall time) to the last run's finish, from the catalog's times."""
    if "finished_at" not in ok or not len(ok):
        return None
    end = pd.to_datetime(ok["finished_at"], utc=True, errors="coerce")
    start = end - pd.to_timedelta(ok["wall_s"], unit="s")
    span = (end.max() - start.min()).total_seconds()
    return float(span) if np.isfinite(span) else None
