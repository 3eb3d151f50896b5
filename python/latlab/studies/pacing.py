"""Edge versus host pacing in small-buffer networks (specs/studies.md §4, experiments A–J).

The study (Sivaraman, ElGindy, Moreland and Ostry, packet pacing in
small-buffer optical packet switched networks, with ns-2) fed 1000 long TCP
Reno flows through a two-level dumbbell (10 edges × 100 hosts) into a 100 Mbps
core with a DropTail buffer of a few KB, and compared no pacing, TCP host
pacing and an optimal edge pacer (specs/edge-pacer.md) at the ingress edges:
edge pacing lifts throughput in the 5–15 KB region, host pacing does not.

``reproduce`` builds every experiment's runs
(:mod:`latlab.studies._pacing_experiments`), runs the distinct scenarios once
through latlab's sweep runner (resumable: an interrupted reproduction picks up
where it stopped), turns each run into a row of metrics, and writes Parquet
tables, figures (:mod:`latlab.studies._pacing_figures`) and report.md.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from latlab.studies._markdown import num as _f
from latlab.studies._markdown import pct as _pct
from latlab.studies._markdown import table as _table
from latlab.studies._pacing_experiments import ALL_EXPERIMENTS, MODES, Run, Settings, runs_of

NAME = "pacing"
DESCRIPTION = "Edge vs host pacing in small-buffer networks: 1000 TCP flows, core buffer 1–50 KB, experiments A–J"

CORE_LINK = "c0->c1"

#: Full reproduction: the study's run length and window, its buffer range (1–50 KB). ~220 runs, see the report.
FULL = Settings(
    duration_s=400.0, measure_from_s=100.0,
    buffers_kb=(1, 2, 3, 4, 5, 7, 10, 15, 20, 30, 50),
    other_buffers_kb=(2, 5, 10, 20),
    delays_ms=(0, 1, 2, 5, 10, 20, 50, 100), delay_buffers_kb=(5, 50), delay_set_ms=(1, 10, 100, 200),
    experiments=ALL_EXPERIMENTS, b_flows=(100, 500), udp_patterns=("poisson", "lrd"),
    j_fractions=(0.3, 0.5), j_buffers_kb=(5, 10),
    e_recoveries=("sack", "fack"), e_buffers_kb=(2, 5, 10, 20), i_delays_ms=(0, 10, 100),
    headline_seeds=(2, 3), rto_buffers_kb=(3, 5, 10),
)  # fmt: skip
#: Quick: 80 s runs measured over [30, 80] s, fewer buffers; C and E (variants of A's set-up) and I's LRD source skipped.
QUICK = Settings(
    duration_s=80.0, measure_from_s=30.0,
    buffers_kb=(1, 2, 3, 5, 10, 20, 50),
    other_buffers_kb=(3, 5, 20),
    delays_ms=(0, 1, 10, 100), delay_buffers_kb=(5, 50), delay_set_ms=(10, 100),
    experiments=("A", "B", "D", "F", "G", "H", "I", "J"), b_flows=(100,), udp_patterns=("poisson",),
    j_fractions=(0.3,), j_buffers_kb=(5,), i_delays_ms=(0, 10, 100),
    headline_seeds=(2, 3), rto_buffers_kb=(5,),
)  # fmt: skip

#: The study's reference points (studies.md §4, experiment A).
REF_PER_FLOW_KBPS = {"unpaced": 82.0, "host-paced": 82.0, "edge-paced": 93.0}
REF_BUFFER_KB = 5.0

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
}


def all_runs(settings: Settings) -> list[Run]:
    runs: list[Run] = []
    for exp in settings.experiments:
        runs += runs_of(exp, settings)
    if settings.headline_seeds and "A" in settings.experiments:
        runs += runs_of("A-seeds", settings)
    if settings.rto_buffers_kb and "A" in settings.experiments:
        runs += runs_of("A-rto", settings)
    return runs


# ----- metrics ---------------------------------------------------------------------


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
    arr = float(core["arrivals_pkts"]) - (float(start["arrivals_pkts"]) if start is not None else 0.0)
    drops = float(core["drops_pkts"]) - (float(start["drops_pkts"]) if start is not None else 0.0)
    row["core_loss"] = drops / arr if arr > 0 else np.nan
    udp = flows[flows["kind"] == "udp"]
    if len(udp):
        sent = float(udp["segments_sent"].sum())
        got = float(pd.to_numeric(udp["packets_received"], errors="coerce").sum())
        row["udp_loss"] = 1.0 - got / sent if sent else np.nan
    if run.workload == "closed-loop":
        tr = res.tables.get("transfers")
        if tr is not None and len(tr):
            tr = tr[tr["start_ns"] >= t0]
            row["file_goodput_kbps"] = float(tr["goodput_bps"].mean()) / 1e3
            row["files"] = int(len(tr))
    for grp in ("paced", "unpaced"):
        g = tcp[tcp["group"] == grp]
        row[f"{grp}_kbps"] = float(g["goodput_bps"].mean()) / 1e3 if len(g) else np.nan
    return row


def run_study(runs: Sequence[Run], outdir: Path, jobs: int | None, progress: bool = True) -> pd.DataFrame:
    """Run the distinct scenarios of ``runs`` once (sweep runner, resumable) and return one metrics row per run."""
    from latlab import Scenario
    from latlab.sweep import load_run, run_distinct

    pairs = [(r.params, Scenario.from_dict(r.scenario(), source=f"<pacing {r.experiment}>")) for r in runs]
    sweep_dir = outdir / "runs"
    ids, catalog = run_distinct(pairs, sweep_dir, jobs=jobs, progress=progress, name="pacing")
    status = dict(zip(catalog["run_id"], catalog["status"]))
    wall = dict(zip(catalog["run_id"], catalog["wall_s"]))
    finished = dict(zip(catalog["run_id"], catalog["finished_at"]))
    cache: dict[str, dict[str, Any]] = {}
    rows = []
    for r, rid in zip(runs, ids):
        row = {**r.params, "run_id": rid, "status": status.get(rid)}
        if status.get(rid) == "ok":
            if rid not in cache:
                cache[rid] = metrics(load_run(sweep_dir, rid), r)
                cache[rid]["wall_s"] = float(wall.get(rid, np.nan))
                cache[rid]["finished_at"] = finished.get(rid)
            row.update(cache[rid])
        rows.append(row)
    return pd.DataFrame(rows)


# ----- the reproduction ------------------------------------------------------------------


def reproduce(outdir: Path, quick: bool = False, jobs: int | None = None) -> Path:
    """Run the study into ``outdir``: runs/ (the sweep), results.parquet, PNG figures and report.md."""
    from latlab import frames as frames_mod
    from latlab._atomic import write_text
    from latlab.sweep import default_jobs

    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    settings = QUICK if quick else FULL
    jobs = jobs or default_jobs()
    runs = all_runs(settings)
    t0 = time.monotonic()
    table = run_study(runs, outdir, jobs)
    elapsed = time.monotonic() - t0
    frames_mod.write_parquet(table, outdir / "results.parquet")
    figures = make_figures(table, settings, outdir)
    report = outdir / "report.md"
    write_text(report, _report(table, settings, quick, jobs, elapsed, figures))
    return report


def _sel(df: pd.DataFrame, exp: str) -> pd.DataFrame:
    return df[(df["experiment"] == exp) & (df["status"] == "ok")]


def h_rows(df: pd.DataFrame, settings: Settings) -> pd.DataFrame:
    """Experiment H's rows tagged by the sweep they belong to: "delay" (d swept) and/or "buffer" (vs buffer)."""
    h = _sel(df, "H")
    parts = []
    paced = h[h["mode"] == "edge-paced"]
    parts.append(paced[paced["buffer_kb"].isin(settings.delay_buffers_kb) & paced["delay_ms"].isin(settings.delays_ms)]
                 .assign(sweep="delay"))  # fmt: skip
    parts.append(paced[paced["buffer_kb"].isin(settings.other_buffers_kb) & paced["delay_ms"].isin(settings.delay_set_ms)]
                 .assign(sweep="buffer"))  # fmt: skip
    parts.append(h[h["mode"] != "edge-paced"].assign(sweep="ref"))
    return pd.concat(parts, ignore_index=True)


def b_star(df: pd.DataFrame) -> float:
    from latlab.models import edge_pacer as model

    a = _sel(df, "A")
    a = a[a["mode"] == "unpaced"].groupby("buffer_kb", as_index=False)["core_utilisation"].mean()
    if not len(a):
        return 2000.0
    return model.fit_b_star(a["buffer_kb"].to_numpy() * 1000, a["core_utilisation"].to_numpy())


def make_figures(df: pd.DataFrame, settings: Settings, outdir: Path) -> dict[str, str]:
    from latlab.studies import _pacing_figures as figs

    out: dict[str, str] = {}
    refs = {"per_flow_kbps": [(REF_BUFFER_KB, REF_PER_FLOW_KBPS["unpaced"], "study: unpaced/host 82"),
                              (REF_BUFFER_KB, REF_PER_FLOW_KBPS["edge-paced"], "study: edge 93")],
            "core_loss": [(2.5, 0.15, "study: > 15 % at 2–3 KB")]}  # fmt: skip
    standard = [("per_flow_kbps", False), ("tcp_goodput_mbps", False), ("core_loss", True)]
    for exp in settings.experiments:
        d = _sel(df, exp)
        if not len(d):
            continue
        path = outdir / f"fig_{exp}.png"
        title = f"{exp}. {EXPERIMENT_TITLES[exp]}"
        if exp == "A":
            figs.panels(d, standard + [("core_utilisation", False)], title, path, refs)
        elif exp == "B":
            figs.groups_figure(d, title, path)
        elif exp == "E":
            figs.groups_figure(d, title, path, by="recovery", label="{}")
        elif exp == "D":
            figs.panels(d, [("file_goodput_kbps", False), ("tcp_goodput_mbps", False), ("core_loss", True)], title, path)
        elif exp == "F":
            figs.panels(d, [("tcp_goodput_mbps", False), ("core_loss", True)], title, path)
        elif exp == "H":
            figs.delay_figure(h_rows(df, settings), b_star(df), 0.252, 100e6, path)
            figs.loss_bound_figure(outdir / "fig_H_analysis.png")
            out["H_analysis"] = "fig_H_analysis.png"
        elif exp == "I":
            for pat in sorted(d["udp"].unique()):
                dp = d[d["udp"] == pat]
                vs_buffer = dp[(dp["mode"] != "edge-paced") | (dp["delay_ms"] == 10.0)]
                p = outdir / f"fig_I_{pat}.png"
                figs.panels(vs_buffer, [("tcp_goodput_mbps", False), ("per_flow_kbps", False), ("udp_loss", True)],
                            f"{title}: {pat} UDP", p)  # fmt: skip
                out[f"I_{pat}"] = p.name
                vs_d = dp[(dp["mode"] == "edge-paced") & dp["buffer_kb"].isin(settings.delay_buffers_kb)]
                p2 = outdir / f"fig_I_{pat}_delay.png"
                figs.panels(vs_d.assign(mode="edge-paced"), [("udp_loss", True), ("tcp_goodput_mbps", False)],
                            f"{title}: {pat} UDP vs pacer delay d (x: d in ms; one curve per buffer below)", p2)
                _delay_curves(vs_d, p2)
                out[f"I_{pat}_delay"] = p2.name
            continue
        elif exp == "J":
            figs.partial_figure(d, path)
        else:
            figs.panels(d, standard, title, path)
        out[exp] = path.name
    return out


def _delay_curves(d: pd.DataFrame, path: Path) -> None:
    """I vs d: UDP loss and TCP goodput against d, one curve per buffer (replaces the placeholder panels)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10.4, 4.2))
    axes = fig.subplots(1, 2)
    for ax, metric, log_y in zip(axes, ("udp_loss", "tcp_goodput_mbps"), (True, False)):
        for b, color in zip(sorted(d["buffer_kb"].unique()), ("tab:purple", "tab:orange", "tab:cyan")):
            s = d[d["buffer_kb"] == b].groupby("delay_ms", as_index=False)[metric].mean().sort_values("delay_ms")
            if log_y:
                s = s[s[metric] > 0]
            ax.plot(s["delay_ms"], s[metric], "o-", color=color, ms=4, label=f"edge-paced, {b:g} KB")
        ax.set_xlabel("edge pacer delay bound d (ms)")
        ax.set_ylabel(metric.replace("_", " "))
        if log_y:
            ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


# ----- the report -------------------------------------------------------------------------


def _grid_table(d: pd.DataFrame, metric: str, fmt: str = "{:.1f}", pct: bool = False) -> str:
    buffers = sorted(d["buffer_kb"].unique())
    rows = []
    for mode in MODES:
        m = d[d["mode"] == mode].groupby("buffer_kb")[metric].mean()
        if len(m):
            rows.append([mode] + [(_pct(m.get(b)) if pct else _f(m.get(b), fmt)) for b in buffers])
    return _table(["mode"] + [f"{b:g} KB" for b in buffers], rows)


def estimate_full_s(df: pd.DataFrame, settings: Settings, jobs: int) -> tuple[float, int, pd.DataFrame]:
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


def _report(df: pd.DataFrame, settings: Settings, quick: bool, jobs: int, elapsed: float,
            figures: dict[str, str]) -> str:  # fmt: skip
    out: list[str] = []
    add = out.append
    ok = df[df["status"] == "ok"]
    span_s = sweep_span_s(ok)
    n_unique = df["run_id"].nunique()
    failed = df[df["status"] != "ok"]["run_id"].nunique()
    add("# Edge versus host pacing in small-buffer networks\n")
    add("Reproduction of the small-buffer pacing study (latlab's specs/studies.md §4 and specs/edge-pacer.md): "
        "the ns-2 two-level dumbbell (10 ingress edges × 100 hosts, one long TCP flow per host, 100 Mbps core "
        "with a 100 ms delay), its DropTail core buffer swept in KB, and three ways to send: **unpaced**, "
        "**host-paced** (TCP pacing, window spread over one RTT, factor 1.0 as in ns-2) and **edge-paced** (the "
        "optimal edge pacer, delay bound d = 10 ms unless swept, on each ingress edge link ie{j}->c0).\n")
    add(("**Quick run** (`latlab reproduce pacing --quick`)" if quick else "**Full run** (`latlab reproduce pacing`)")
        + f": {settings.duration_s:g} s simulated per run, measured over [{settings.measure_from_s:g}, "
          f"{settings.duration_s:g}] s; seed(s) {', '.join(map(str, settings.seeds))} (one topology draw and one set "
          f"of start times per seed, shared by the three modes: the comparison is paired); {n_unique} distinct runs "
          f"({len(df)} experiment points; set-ups that two experiments share run once), {failed} failed; "
          f"{jobs} worker process(es); wall time {elapsed / 60:.1f} min"
          + (f" (the runs themselves span {span_s / 60:.1f} min from the first start to the last finish; a re-run "
             "reuses finished runs, so this span is the time of the run that did the work)" if span_s else "")
          + ".\n")
    if quick:
        add("Quick mode skips experiments C and E and I's LRD source, sweeps fewer buffers "
            f"({', '.join(f'{b:g}' for b in settings.buffers_kb)} KB for A; "
            f"{', '.join(f'{b:g}' for b in settings.other_buffers_kb)} KB elsewhere) and runs 100 flows only in B. "
            "A 50 s window after a 30 s warm-up is about 200 RTTs: enough for the averages below to within a few "
            "Kbps, not for the study's exact numbers.\n")

    # -- headline vs reference
    a = _sel(df, "A")
    add("## The study's reference points beside latlab\n")
    rows = []
    for mode in MODES:
        v = a[(a["mode"] == mode) & (a["buffer_kb"] == REF_BUFFER_KB)]["per_flow_kbps"].mean()
        rows.append([f"per-flow goodput at 5 KB, {mode}", f"≈ {REF_PER_FLOW_KBPS[mode]:g} Kbps", _f(v, "{:.1f} Kbps"),
                     _f(v * 1000 / 960, "{:.1f} Kbps")])
    for mode in MODES:
        small = a[(a["mode"] == mode) & a["buffer_kb"].isin([2, 3])]
        rows.append([f"core loss at 2–3 KB, {mode}", "> 15 %",
                     " / ".join(_pct(small[small["buffer_kb"] == b]["core_loss"].mean()) for b in (2, 3)), ""])
    big = a[a["buffer_kb"] >= 20]
    for mode in MODES:
        m = big[big["mode"] == mode]
        rows.append([f"core utilisation at ≥ 20 KB, {mode}", "near 100 %",
                     ", ".join(f"{b:g} KB: {_pct(u)}" for b, u in m.groupby("buffer_kb")["core_utilisation"].mean().items()),
                     ""])  # fmt: skip
    add(_table(["quantity", "study", "latlab (payload goodput)", "latlab, counting 1000-B packets"], rows))
    add("\nlatlab's goodput is payload (960 B of each 1000-B packet, ns2 preset); the last column counts whole "
        "packets, in case the study's goodput did (its text does not say).\n")
    e5 = {m: a[(a["mode"] == m) & (a["buffer_kb"] == REF_BUFFER_KB)]["per_flow_kbps"].mean() for m in MODES}
    if all(np.isfinite(v) for v in e5.values()):
        gain_edge = e5["edge-paced"] / e5["host-paced"] - 1
        gain_host = e5["host-paced"] / e5["unpaced"] - 1
        add(f"At 5 KB edge pacing beats host pacing by {_pct(gain_edge)} (study: over 13 %), and host pacing changes "
            f"unpaced goodput by {_pct(gain_host)} (study: none).\n")
    add(_seed_spread(df))
    add(_rto_sensitivity(df, settings))
    add(_disagreements(df, settings))

    # -- experiments
    for exp in ALL_EXPERIMENTS:
        add(f"## {exp}. {EXPERIMENT_TITLES[exp]}\n")
        add(_EXPERIMENT_TEXT[exp] + "\n")
        d = _sel(df, exp)
        if exp not in settings.experiments:
            add("*Not run in quick mode (the full run has it).*\n")
            continue
        if not len(d):
            add("*No results.*\n")
            continue
        if exp in figures:
            add(f"![{exp}]({figures[exp]})\n")
        if exp == "E":
            for rec in sorted(d["recovery"].unique()):
                de = d[d["recovery"] == rec]
                add(f"{rec.upper()}, per-flow goodput (Kbps):\n\n" + _grid_table(de, "per_flow_kbps") + "\n")
                add(f"{rec.upper()}, core loss:\n\n" + _grid_table(de, "core_loss", pct=True) + "\n")
            add(_recovery_note(df))
        elif exp in "ACG":
            add("Per-flow goodput (Kbps):\n\n" + _grid_table(d, "per_flow_kbps") + "\n")
            add("Core loss over the window:\n\n" + _grid_table(d, "core_loss", pct=True) + "\n")
            if exp == "A":
                add("Core utilisation:\n\n" + _grid_table(d, "core_utilisation", pct=True) + "\n")
        elif exp == "B":
            for n in sorted(d["flows"].unique()):
                add(f"{n} flows, per-flow goodput (Kbps):\n\n" + _grid_table(d[d["flows"] == n], "per_flow_kbps") + "\n")
                add(f"{n} flows, core loss:\n\n" + _grid_table(d[d["flows"] == n], "core_loss", pct=True) + "\n")
        elif exp == "D":
            add("Average per-file goodput of files started in the window (Kbps):\n\n"
                + _grid_table(d, "file_goodput_kbps") + "\n")
            add("Aggregate goodput (Mbps):\n\n" + _grid_table(d, "tcp_goodput_mbps") + "\n")
            add("Core loss:\n\n" + _grid_table(d, "core_loss", pct=True) + "\n")
        elif exp == "F":
            add("Aggregate goodput (Mbps):\n\n" + _grid_table(d, "tcp_goodput_mbps") + "\n")
            add("Core loss:\n\n" + _grid_table(d, "core_loss", fmt="{:.2e}") + "\n")
        elif exp == "H":
            h = h_rows(df, settings)
            dl = h[h["sweep"] == "delay"]
            rows = []
            for b in settings.delay_buffers_kb:
                s = dl[dl["buffer_kb"] == b].groupby("delay_ms")["tcp_goodput_mbps"].mean()
                refs = {m: h[(h["mode"] == m) & (h["buffer_kb"] == b)]["tcp_goodput_mbps"].mean()
                        for m in ("unpaced", "host-paced")}  # fmt: skip
                rows.append([f"{b:g} KB"] + [_f(s.get(x)) for x in settings.delays_ms]
                            + [_f(refs["unpaced"]), _f(refs["host-paced"])])
            add("Aggregate TCP goodput (Mbps) against d:\n\n"
                + _table(["buffer"] + [f"d = {x:g} ms" for x in settings.delays_ms] + ["unpaced", "host-paced"], rows)
                + "\n")  # fmt: skip
            bs = b_star(df)
            from latlab.models import edge_pacer as model

            loads = {b: float(model.offered_load(b * 1000, bs)) for b in settings.delay_buffers_kb}
            add(f"**Analysis curves** (edge-pacer.md), middle panel: the load a buffer B lets TCP offer, "
                f"ρ = 1 − e^(−B/B*), with B* = {bs / 1e3:.2f} KB fitted to A's unpaced core utilisation "
                f"(λ = {', '.join(f'{loads[b]:.3f} at {b:g} KB' for b in loads)}); the Chernoff loss bound "
                "L ≤ (λe^(1−λ))^(2d) with d in packet times (80 µs at 100 Mbps); and T ∝ 1/((RTT0 + d)·sqrt(L)) "
                "with RTT0 = 252 ms (the mean propagation RTT), plotted as T(d)/T(0). latlab's points are its "
                "aggregate goodput divided by the d = 0 run (the pacer as a plain FIFO).\n")
            add(f"![H analysis]({figures.get('H_analysis', 'fig_H_analysis.png')})\n")
            add("The bound is loose by construction (a bufferless fluid with Poisson input): it predicts that any d of "
                "more than a few hundred packet times removes loss entirely at λ < 0.98, whereas TCP's own window "
                "dynamics keep the core loaded and lossy; the model gives the direction (d helps under light load, "
                "hurts under heavy load through RTT0 + d), not the size.\n")
        elif exp == "I":
            for pat in sorted(d["udp"].unique()):
                dp = d[d["udp"] == pat]
                vb = dp[(dp["mode"] != "edge-paced") | (dp["delay_ms"] == 10.0)]
                if f"I_{pat}" in figures:
                    add(f"![I {pat}]({figures[f'I_{pat}']})\n")
                add(f"{pat}: UDP loss vs buffer:\n\n" + _grid_table(vb, "udp_loss", fmt="{:.2e}") + "\n")
                add(f"{pat}: per-flow TCP goodput (Kbps):\n\n" + _grid_table(vb, "per_flow_kbps") + "\n")
                if f"I_{pat}_delay" in figures:
                    add(f"![I {pat} vs d]({figures[f'I_{pat}_delay']})\n")
        elif exp == "J":
            rows = []
            for _, r in d.sort_values(["buffer_kb", "mode", "paced_fraction"]).iterrows():
                frac = 0.0 if r["mode"] == "unpaced" else r["paced_fraction"]
                rows.append([f"{r['buffer_kb']:g} KB", r["mode"], f"{100 * frac:.0f} %", _f(r["tcp_goodput_mbps"]),
                             _f(r.get("paced_kbps")), _f(r.get("unpaced_kbps")), _pct(r["core_loss"])])
            add(_table(["buffer", "who paces", "share", "aggregate (Mbps)", "paced flows (Kbps)",
                        "unpaced flows (Kbps)", "core loss"], rows) + "\n")  # fmt: skip

    # -- gaps and cost
    add("## What is not reproduced yet\n")
    add(_GAPS + "\n")
    add("## Cost of the full run\n")
    est, n_full, cost = estimate_full_s(df, settings, 2)
    add(f"The full run has {n_full} distinct runs of {FULL.duration_s:g} s. Estimated from this run's measured wall "
        f"time per simulated second (per experiment; A's where an experiment did not run here), on 2 cores: "
        f"**{est / 60:.0f} min** (budget 45 min). Per experiment (core-seconds):\n")
    add(_table(["experiment", "runs", "core-seconds"],
               [[e, int(cost.loc[e, "runs"]), f"{cost.loc[e, 'core_seconds']:.0f}"] for e in cost.index]) + "\n")
    add("The grid was chosen for that budget: 11 buffers in A (1, 2, 3, 4, 5, 7, 10, 15, 20, 30, 50 KB), 4 elsewhere "
        "(2, 5, 10, 20 KB; E runs SACK and FACK on them); H sweeps d ∈ {0, 1, 2, 5, 10, 20, 50, "
        "100} ms at 5 and 50 KB and plots d ∈ {1, 10, 100, 200} ms against the buffer; I sweeps d ∈ {0, 10, 100} ms; "
        "J runs 30 % and 50 % at 5 and 10 KB. One seed, plus seeds 2 and 3 at the headline point (A, 5 KB); "
        "a second seed everywhere would double the time.\n")
    add("## Reproduce\n")
    add("```sh\nlatlab reproduce pacing --quick -o out/pacing-quick   # ~5 min on 2 cores\n"
        "latlab reproduce pacing -o out/pacing                 # the full study (see the estimate above)\n```\n")
    add("Data: results.parquet (one row per experiment point: parameters, run_id, metrics); runs/ is the sweep folder "
        "(catalog.parquet, one results folder per distinct run; re-running skips finished runs). Code: "
        "latlab.studies.pacing, ._pacing_experiments (scenario builders, the two-level dumbbell as a custom "
        "topology), ._pacing_figures, latlab.models.edge_pacer (analysis curves).\n")
    return "\n".join(out)


def _recovery_note(df: pd.DataFrame) -> str:
    """E against A: per-flow goodput at each shared buffer by recovery, and edge pacing's gain under each."""
    a, e = _sel(df, "A"), _sel(df, "E")
    both = pd.concat([a.assign(recovery="newreno"), e])
    buffers = sorted(set(e["buffer_kb"]) & set(a["buffer_kb"]))
    if not buffers:
        return ""
    rows = []
    for rec in ("newreno", "sack", "fack"):
        for b in buffers:
            g = both[(both["recovery"] == rec) & (both["buffer_kb"] == b)].groupby("mode")["per_flow_kbps"].mean()
            if not len(g):
                continue
            gain = g.get("edge-paced", np.nan) / g.get("host-paced", np.nan) - 1
            rows.append([rec, f"{b:g} KB"] + [_f(g.get(m)) for m in MODES] + [_pct(gain)])
    return ("Recovery side by side (per-flow goodput in Kbps; NewReno rows are A's runs):\n\n"
            + _table(["recovery", "buffer"] + list(MODES) + ["edge vs host"], rows) + "\n")


def _seed_spread(df: pd.DataFrame) -> str:
    """The headline point (A at 5 KB) over every seed run: per-flow goodput per mode and edge pacing's gain."""
    a = _sel(df, "A")
    pts = pd.concat([a[a["buffer_kb"] == REF_BUFFER_KB], _sel(df, "A-seeds")])
    if pts["seed"].nunique() < 2:
        return ""
    rows, gains = [], []
    for seed, g in pts.groupby("seed"):
        v = g.groupby("mode")["per_flow_kbps"].mean()
        gain = v.get("edge-paced", np.nan) / v.get("host-paced", np.nan) - 1
        gains.append(gain)
        rows.append([str(seed)] + [_f(v.get(m)) for m in MODES] + [_pct(gain)])
    per_mode = pts.groupby("mode")["per_flow_kbps"]
    rows.append(["mean ± sd"] + [f"{per_mode.mean().get(m, np.nan):.1f} ± {per_mode.std().get(m, np.nan):.1f}"
                                 for m in MODES] + [f"{100 * np.mean(gains):.1f} % ± {100 * np.std(gains, ddof=1):.1f}"])
    return ("The headline point with other seeds (each seed draws new access/edge rates and delays and new start "
            "times; per-flow goodput in Kbps at 5 KB):\n\n"
            + _table(["seed"] + list(MODES) + ["edge vs host"], rows) + "\n")


def _rto_sensitivity(df: pd.DataFrame, settings: Settings) -> str:
    """A against A-rto: per-flow goodput and timeouts with the ns2 preset's 200 ms minimum RTO and a longer one."""
    a, r = _sel(df, "A"), _sel(df, "A-rto")
    if not len(r):
        return ""
    rows = []
    for b in sorted(r["buffer_kb"].unique()):
        for label, d in ((f"{200:g} ms", a), (f"{settings.rto_min_ms:g} ms", r)):
            g = d[d["buffer_kb"] == b].groupby("mode")
            v, to = g["per_flow_kbps"].mean(), g["timeouts_per_flow"].mean() / settings.duration_s
            loss = g["core_loss"].mean()
            gain = v.get("edge-paced", np.nan) / v.get("host-paced", np.nan) - 1
            rows.append([f"{b:g} KB", label]
                        + [f"{_f(v.get(m))} / {_f(to.get(m), '{:.2f}')} / {_pct(loss.get(m))}" for m in MODES]
                        + [_pct(gain)])  # fmt: skip
    return ("**Sensitivity to the minimum RTO.** With ~1000 windows of 2–4 segments sharing the core, many losses "
            "leave too few duplicate ACKs for fast retransmit, so flows recover by timeout; and with RTO = max(min "
            "RTO, srtt + 4·rttvar) close to an RTT that queueing and pacing delay inflate, a timer can fire for a "
            "segment that is only late, resending data that was not lost. The same runs with a longer minimum RTO "
            "(cells: per-flow goodput in Kbps / timeouts per flow per second over the run / core loss):\n\n"
            + _table(["buffer", "min RTO"] + list(MODES) + ["edge vs host"], rows) + "\n")


def _disagreements(df: pd.DataFrame, settings: Settings) -> str:
    a = _sel(df, "A")
    if not len(a):
        return ""
    notes = ["### Where latlab agrees and where it does not\n"]
    e5 = {m: a[(a["mode"] == m) & (a["buffer_kb"] == 5)]["per_flow_kbps"].mean() for m in MODES}
    for m in MODES:
        ref = REF_PER_FLOW_KBPS[m]
        if np.isfinite(e5[m]):
            dev = e5[m] / ref - 1
            word = "agrees" if abs(dev) <= 0.05 else "is lower" if dev < 0 else "is higher"
            notes.append(f"* {m} at 5 KB: {e5[m]:.1f} Kbps against ≈ {ref:g} ({100 * dev:+.0f} %): latlab {word}.")
    g = a.groupby(["buffer_kb", "mode"])["per_flow_kbps"].mean().unstack()
    if all(m in g for m in MODES):
        vs_host = g["edge-paced"] / g["host-paced"] - 1
        vs_un = g["edge-paced"] / g["unpaced"] - 1

        def where(gain: pd.Series) -> str:
            ahead = [b for b, v in gain.items() if v > 0.02]
            return f"{min(ahead):g}–{max(ahead):g} KB" if ahead else "nowhere"

        big = g.index >= 20
        mid = a[a["buffer_kb"].between(5, 15)].groupby("mode")["core_loss"].mean()
        notes.append("* Where edge pacing leads by more than 2 %: against unpaced at " + where(vs_un)
                     + ", against host-paced at " + where(vs_host) + "; at 20 KB and above the lead is at most "
                     + f"{_pct(max(vs_un[big].max(), vs_host[big].max()))} (study: the advantage holds for 5–15 KB "
                     "and vanishes above ~20 KB). Against unpaced latlab agrees; against host pacing latlab's window "
                     "sits at smaller buffers, because latlab's host pacing gains more than the study's between 5 and "
                     f"15 KB: over 5–15 KB it takes the core loss from {_pct(mid.get('unpaced'))} (unpaced) to "
                     f"{_pct(mid.get('host-paced'))}, where the edge pacer takes it to {_pct(mid.get('edge-paced'))}.")
    loss = a[a["buffer_kb"].isin([2, 3])].groupby("mode")["core_loss"].mean()
    if len(loss):
        one = a[a["buffer_kb"] == a["buffer_kb"].min()].groupby("mode")["core_loss"].mean()
        un_loss = a[(a["mode"] == "unpaced") & (a["buffer_kb"] >= 3)].groupby("buffer_kb")["core_loss"].mean()
        notes.append("* Loss at 2–3 KB (mean of the two buffers): "
                     + ", ".join(f"{m} {_pct(loss.get(m))}" for m in MODES)
                     + (": above 15 % as in the study." if (loss > 0.15).all() else
                        f": **not** above 15 % in every mode; latlab passes 15 % only at {a['buffer_kb'].min():g} KB "
                        f"({', '.join(f'{m} {_pct(one.get(m))}' for m in MODES)}). With ~1000 flows sharing "
                        "100 Mbps over ~250 ms each has a window of about 3 packets, and the loss rate Reno settles "
                        "at is set by that share (p ≈ 1.5/W², order 15 %) more than by the buffer: latlab's unpaced "
                        f"loss only falls from {_pct(un_loss.iloc[0])} to {_pct(un_loss.iloc[-1])} between "
                        f"{un_loss.index[0]:g} and {un_loss.index[-1]:g} KB. How the flows time out moves it by "
                        "several points (the min-RTO table: 1 s instead of 200 ms takes a third off), which is within "
                        "the unknowns of the study's TCP set-up."))
    big = a[a["buffer_kb"] >= 20].groupby("mode")["core_utilisation"].min()
    if len(big):
        notes.append("* Utilisation at ≥ 20 KB (lowest over those buffers): "
                     + ", ".join(f"{m} {_pct(big.get(m))}" for m in MODES) + ".")
    r5 = _sel(df, "A-rto")
    r5 = r5[r5["buffer_kb"] == REF_BUFFER_KB].groupby("mode")["per_flow_kbps"].mean()
    if len(r5) == len(MODES):
        gain = r5["edge-paced"] / r5["host-paced"] - 1
        a5 = a[a["buffer_kb"] == REF_BUFFER_KB]
        util5 = a5[a5["mode"] == "edge-paced"]["core_utilisation"].mean()
        r5_all = _sel(df, "A-rto")
        to_cut = float(np.mean([a5[a5["mode"] == m]["timeouts_per_flow"].mean()
                                / r5_all[(r5_all["mode"] == m) & (r5_all["buffer_kb"] == REF_BUFFER_KB)][
                                    "timeouts_per_flow"].mean() for m in MODES]))  # fmt: skip
        base5 = a5.groupby("mode")["per_flow_kbps"].mean()
        shift = max(abs(r5[m] / base5[m] - 1) for m in MODES)
        notes.append(f"* Timeouts (table above): a minimum RTO of {settings.rto_min_ms:g} ms instead of 200 ms cuts "
                     f"timeouts {to_cut:.1f}-fold (mean over the modes) and moves 5 KB goodput by at most "
                     f"{_pct(shift)} (unpaced {r5['unpaced']:.1f}, host-paced {r5['host-paced']:.1f}, edge-paced "
                     f"{r5['edge-paced']:.1f} Kbps; edge vs host {_pct(gain)}); the edge pacer keeps the core "
                     f"{_pct(util5)} busy at 5 KB either way. ns-2's minrto_ default is 200 ms since October 2004 "
                     "(ns-default.tcl; its own test suites keep the earlier 1 s), and the study does not say which it "
                     "ran. What did matter is when the timer restarts. latlab's first full run used a sender that "
                     "left the RTO timer running through a fast retransmission (RFC 6298 read literally) and raised "
                     "ssthresh to half the FlightSize when a timeout ended a recovery: spurious timeouts behind the "
                     "queue gave 81.5 / 83.4 / 88.1 Kbps at 5 KB (edge vs host 5.6 %). The sender now restarts the "
                     "timer as the fast retransmission leaves and keeps the recovery's ssthresh, as ns-2 (tcp-reno.cc) "
                     "and Linux do, which produced the figures above.")
    if len(e5) == len(MODES) and all(np.isfinite(v) for v in e5.values()):
        notes.append(f"* What remains: edge-paced matches the study ({e5['edge-paced']:.1f} against ≈ 93 Kbps) while "
                     f"unpaced and host-paced are {_pct(e5['unpaced'] / 82 - 1)} and {_pct(e5['host-paced'] / 82 - 1)} "
                     "above its ≈ 82, so latlab's edge-over-host margin is smaller than the study's. latlab finds no "
                     "single cause for that: the seeds agree to a few tenths of a Kbps, and SACK or FACK (E) change "
                     "the picture little. Candidates are ns-2 details the set-up does not give: its coarse 10 ms "
                     "timer tick and once-per-RTT RTT sampling (latlab: 1 ms, every ACK, timestamps), its pacing "
                     "implementation, and access-link queue sizes (latlab: large, so the core is the only drop point).")
    notes.append("* Why latlab can differ: the edge pacer is latlab's online algorithm (edge-pacer.md: release at "
                 "the fluid exit curve, per-packet deadline guaranteed), the ns-2 study's implementation details are "
                 "not known; ns-2's TCP pacing (a timer per packet at cwnd/RTT) is modelled by latlab's host pacing "
                 "with factor 1.0; IW 10 (latlab's ns2 preset) where ns-2 1.x defaulted to 1–2 segments affects only "
                 "the start-up, which the window excludes; topology rates and delays are one random draw (seed "
                 "above), not the study's; "
                 + ("and quick mode measures 50 s, not 300 s, so per-flow averages carry a few Kbps of noise."
                    if settings.duration_s < 400 else "and the study's run is a single seed too."))
    return "\n".join(notes) + "\n"


_EXPERIMENT_TEXT = {
    "A": "1000 long NewReno flows (ns2 preset: 1000-B data packets, 40-B ACKs), access 8–12 Mbps and 1–5 ms, edges "
         "100 Mbps and 5–15 ms, core 100 Mbps and 100 ms (propagation RTT 224–280 ms), starts uniform in [0, 10] s; "
         "core buffer swept. The study's reference points are the stars.",
    "B": "As A with 10 and 50 hosts per edge (100 and 500 flows).",
    "C": "As A with 100 Mbps access links: each host can burst at the edge rate.",
    "D": "1000 closed-loop users (traffic.md): Pareto files (mean 100 KB, shape 1.2), exponential think time (mean "
         "1 s). Goodput per file = size / completion time, averaged over files started in the window.",
    "E": "As A with SACK recovery (RFC 6675) and with FACK (forward acknowledgement: every un-SACKed segment below "
         "the highest SACKed byte counts as lost, pipe = snd.nxt − snd.fack + retran_data, recovery once snd.fack − "
         "snd.una > 3 segments), at fewer buffers; NewReno is A.",
    "F": "10 edges × 10 hosts (100 flows), access 1–2 Mbps with ns-2's default 50-packet access queue (the access "
         "links are the bottlenecks; latlab's default 10 000-packet queue would bloat them), edges 40 Mbps, core "
         "200 Mbps: the core is not the bottleneck, and losses there come only from bursts.",
    "G": "As A with RED at the core: max_th = the buffer, min_th = 40 % of it (in 1000-B packets), max_p 0.1, "
         "w_q 0.002, limit = the buffer.",
    "H": "Edge pacing with d swept at 5 KB (light load) and 50 KB (heavy load), with unpaced and host-paced as "
         "horizontal references; and d ∈ {1, 10, 100, 200} ms (quick: {10, 100}) against the buffer. "
         "d = 0 is the pacer as a FIFO.",
    "I": "As A plus one aggregated UDP source on its own 100 Mbps access and ingress edge (su0 → ieu → c0 → c1 → "
         "eeu → du0): Poisson at 5.5 Mbps, and LRD (fGn, Norros model) at 6 Mbps with H = 0.85; packets 100–300 B. "
         "In edge-paced runs the UDP edge is paced too (every ingress edge paces). UDP loss is over the whole run.",
    "J": "A share of the hosts pace (host-paced: the first 300 or 500 hosts) or a share of the ingress edges "
         "(edge-paced: the first 3 or 5 edges, which carry the same hosts), the rest unpaced; 0 % and 100 % are A's "
         "runs.",
}

_GAPS = """* **FACK's rampdown and overdamping** (ns-2 `Agent/TCP/Fack` options, off by default there) are not
  modelled: latlab's FACK halves the window at once, like its SACK.
* **The edge pacer only on ingress links** needs no simulator change: the study builds the two-level dumbbell
  as a `kind = "custom"` topology (`_pacing_experiments.two_level_dumbbell`), with two one-way links per
  ingress edge. The built-in `edge-dumbbell` would put `edge_queue` on c0->ie{j}, c1->ee{j} and ee{j}->c1 too
  (delaying ACKs and the core's output by up to d). A schema extension would let the built-in kind do it: an
  `ingress_queue` for ie{j}->c0 only (defaulting to `edge_queue`), and optionally `ingress_queue_edges = [..]`
  (which edges get it) for partial deployment — that would shrink scenario files from ~4000 links to one table.
* **Partial deployment (J)** is built the same way (a pacer on the first k ingress links only).
* **Per-packet UDP loss in the window**: the flows table counts UDP packets over the whole run, so I's UDP loss
  includes the start-up. A windowed count (`packets_sent`/`packets_received` from measure_from_s) in the flows
  table would fix it.
* **ns-2 details** the spec does not give (the study's TCP initial window, access/edge queue sizes, the exact
  RED variant) are latlab's defaults (IW 10, large access/edge DropTail, ns-2-style RED with wait)."""
