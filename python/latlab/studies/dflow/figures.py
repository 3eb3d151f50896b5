"""Figures of the DFlow study (see :mod:`latlab.studies.dflow`).

* one figure per run (:func:`run_figure`): per-flow rate over time above the
  bottleneck's queueing delay, with the full-queue delay and the 50 ms target
  marked, the warm-up shaded;
* a base-period variant (:func:`variant_figure`): the same panels for every
  DFlow run, one row each; the sweep over base periods (:func:`base_period_figure`);
* the knee (:func:`knee_figure`): the TCP equation rate against the loss event
  rate over this path, with the measured flows on it;
* a summary (:func:`summary_figure`): delay and per-flow rates of every run, over seeds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from latlab.models.tcp_equation import knee_loss_event_rate, unstable_loss_event_rate
from latlab.studies.dflow import cases as C

#: 1 s of 100 ms samples: the rate panels show the delivered rate averaged over this many samples.
SMOOTH_SAMPLES = 10
_DFLOW_COLORS = ("tab:blue", "tab:green", "tab:purple", "tab:cyan", "tab:olive")
_TFRC_COLORS = ("tab:orange", "tab:red", "tab:brown", "tab:pink", "goldenrod")
_RIVAL_COLOR = "tab:red"
#: Knee figure: marker and colour per run.
_CASE_STYLE = {
    "dflow": ("o", "tab:blue"),
    "tfrc": ("s", "tab:orange"),
    "ledbat": ("^", "tab:purple"),
    "vegas": ("D", "tab:green"),
    "newreno": ("v", "tab:red"),
}
#: Rates below this (kb/s) are drawn at it on log axes (a starved flow can deliver nothing in the window).
_LOG_FLOOR_KBPS = 0.05


def _save(fig: Figure, path: Path, dpi: int = 110) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    return path


def _flow_labels(flows: pd.DataFrame) -> dict[int, tuple[str, str]]:
    """flow_id → (label, colour): "DFlow 1".."DFlow 5", "TFRC 1".., or the rival's name."""
    out: dict[int, tuple[str, str]] = {}
    counters = {"dflow": 0, "tfrc": 0}
    for _, f in flows.sort_values("flow_id").iterrows():
        kind = f["kind"]
        if kind in counters:
            n = counters[kind]
            counters[kind] += 1
            palette = _DFLOW_COLORS if kind == "dflow" else _TFRC_COLORS
            out[int(f["flow_id"])] = (
                f"{'DFlow' if kind == 'dflow' else 'TFRC'} {n + 1}",
                palette[n % len(palette)],
            )
        else:
            label = C.CASES[f["case"]].rival_label or str(f["cc"])
            out[int(f["flow_id"])] = (label, _RIVAL_COLOR)
    return out


def draw_run(
    ax_rate: Any,
    ax_delay: Any,
    flows: pd.DataFrame,
    series: pd.DataFrame,
    link: pd.DataFrame,
    measure_from_s: float,
    legend: bool = True,
) -> None:
    """Rate per flow (1 s mean of the delivered rate) on ``ax_rate``, the bottleneck's queueing delay on ``ax_delay``."""
    labels = _flow_labels(flows)
    n = len(labels)
    for fid, s in series.groupby("flow_id"):
        label, color = labels[int(fid)]
        rate_kbps = s["rate_bps"].rolling(SMOOTH_SAMPLES, min_periods=1).mean() / 1e3
        ax_rate.plot(s["time_s"], rate_kbps, lw=0.9, color=color, label=label)
    ax_rate.axhline(
        C.BOTTLENECK_RATE_BPS / n / 1e3,
        color="0.4",
        lw=0.8,
        ls=":",
        label=f"fair share (1/{n})",
    )
    ax_rate.set_ylabel("rate (kb/s, 1 s mean)")
    ax_rate.set_ylim(0, C.BOTTLENECK_RATE_BPS / 1e3 * 1.05)
    full_ms = C.FULL_QUEUE_DELAY_S * 1e3
    ax_delay.plot(
        link["time_s"],
        link["sojourn_ms"],
        lw=0.6,
        color="k",
        label="bottleneck queueing delay (100 ms mean)",
    )
    dflows = flows[flows["kind"] == "dflow"].sort_values("flow_id")
    if len(dflows):
        own = series[series["flow_id"] == dflows["flow_id"].iloc[0]]
        ax_delay.plot(
            own["time_s"],
            own["flow_queueing_delay_ms"],
            lw=0.7,
            ls="--",
            color="tab:blue",
            alpha=0.8,
            label="DFlow 1's own estimate (current − base)",
        )
    ax_delay.axhline(
        full_ms,
        color="tab:red",
        ls="--",
        lw=1.0,
        label=f"full queue ({C.QUEUE_PACKETS} pkts, {full_ms:.1f} ms)",
    )
    ax_delay.axhline(
        C.TARGET_MS, color="tab:green", ls=":", lw=1.2, label=f"target ({C.TARGET_MS:g} ms)"
    )
    ax_delay.set_ylim(0, full_ms * 1.12)
    ax_delay.set_ylabel("queueing delay (ms)")
    ax_delay.set_xlabel("time (s)")
    for ax in (ax_rate, ax_delay):
        ax.axvspan(0, measure_from_s, color="0.5", alpha=0.12, lw=0)
        ax.grid(True, alpha=0.3)
        ax.set_xlim(0, float(link["time_s"].max()))
        if legend:
            ax.legend(fontsize=7, loc="upper right", ncol=2 if ax is ax_rate and n > 2 else 1)


def _one_run(
    data: Any, case: str, variant: str, seed: int
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    def pick(df: pd.DataFrame) -> pd.DataFrame:
        return df[(df["case"] == case) & (df["variant"] == variant) & (df["seed"] == seed)]

    return pick(data.flows), pick(data.flow_series), pick(data.bottleneck_series)


def run_figure(
    data: Any, case: str, variant: str, seed: int, measure_from_s: float, path: Path
) -> Path | None:
    """One run: rate per flow over time above the bottleneck's queueing delay."""
    flows, series, link = _one_run(data, case, variant, seed)
    if not len(flows):
        return None
    fig = Figure(figsize=(10, 6.2))
    ax_rate, ax_delay = fig.subplots(2, 1, sharex=True)
    draw_run(ax_rate, ax_delay, flows, series, link, measure_from_s)
    # TFRC alone has no base period: leave it out of that title
    base = f"DFlow {C.VARIANT_LABEL[variant]}, " if C.CASES[case].dflows else ""
    ax_rate.set_title(
        f"{C.CASES[case].title}: {base}seed {seed} (shaded: warm-up, not measured)", fontsize=10
    )
    return _save(fig, path)


def variant_figure(
    data: Any, variant: str, seed: int, measure_from_s: float, path: Path
) -> Path | None:
    """Every DFlow run under one base-period variant: a row per run, rate on the left, delay on the right."""
    cases = [
        c for c, spec in C.CASES.items() if spec.dflows and len(_one_run(data, c, variant, seed)[0])
    ]
    if not cases:
        return None
    fig = Figure(figsize=(13, 3.0 * len(cases)))
    axes = fig.subplots(len(cases), 2, squeeze=False)
    for row, case in zip(axes, cases):
        flows, series, link = _one_run(data, case, variant, seed)
        draw_run(row[0], row[1], flows, series, link, measure_from_s, legend=True)
        row[0].set_title(f"{C.CASES[case].title}: rates", fontsize=9.5)
        row[1].set_title(f"{C.CASES[case].title}: queueing delay", fontsize=9.5)
    fig.suptitle(f"DFlow with {C.VARIANT_LABEL[variant]}, seed {seed}", fontsize=11)
    return _save(fig, path, dpi=85)  # a large grid of dense lines: keep the file small


def knee_figure(curves: pd.DataFrame, flows: pd.DataFrame, path: Path) -> Path:
    """The TCP equation rate against p over this path, the knee, and every measured TFRC/DFlow flow on it."""
    fig = Figure(figsize=(9.5, 6.2))
    ax = fig.add_subplot(1, 1, 1)
    for (label, c), ls in zip(curves.groupby("curve", sort=False), ("-", "--")):
        ax.plot(
            c["p"], c["rate_bps"] / 1e3, color="k", ls=ls, lw=1.4, label=f"TCP equation, {label}"
        )
    knee, unstable = knee_loss_event_rate(), unstable_loss_event_rate()
    ax.axvline(knee, color="0.3", ls=":", lw=1.2, label=f"knee: p + 32p³ = 1/9, p = {knee:.4f}")
    ax.axvline(
        unstable, color="tab:purple", ls=":", lw=1.0, label=f"elasticity 1: p = {unstable:.4f}"
    )
    cap = C.BOTTLENECK_RATE_BPS / 1e3
    for rate, text in (
        (cap, "link (2 Mb/s)"),
        (cap / 2, "fair share of 2 flows"),
        (cap / 5, "fair share of 5 flows"),
    ):
        ax.axhline(rate, color="0.6", lw=0.8, ls="-.")
        ax.annotate(
            text,
            (1.2e-4, rate),
            xytext=(0, 2),
            textcoords="offset points",
            fontsize=7.5,
            color="0.35",
        )
    ax.axhline(C.MIN_RATE_BPS / 1e3, color="0.6", lw=0.8, ls="-.")
    ax.annotate(
        "TFRC floor: one packet per 64 s",
        (1.2e-4, C.MIN_RATE_BPS / 1e3),
        xytext=(0, 2),
        textcoords="offset points",
        fontsize=7.5,
        color="0.35",
    )
    pts = (
        flows[(flows["variant"] == C.PRIMARY) & flows["kind"].isin(["tfrc", "dflow"])]
        if len(flows)
        else flows
    )
    for case, (marker, color) in _CASE_STYLE.items():
        d = pts[pts["case"] == case] if len(pts) else pts
        d = d[d["loss_event_rate"] > 0] if len(d) else d
        if not len(d):
            continue
        who = "TFRC flows" if case == "tfrc" else f"DFlow in: {C.CASES[case].title}"
        y = np.maximum(d["goodput_bps"].to_numpy() / 1e3, _LOG_FLOOR_KBPS)
        ax.plot(
            d["loss_event_rate"],
            y,
            marker=marker,
            color=color,
            ls="none",
            ms=6,
            alpha=0.8,
            markeredgecolor="k",
            markeredgewidth=0.4,
            label=who,
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(1e-4, 1.0)
    ax.set_ylim(_LOG_FLOOR_KBPS * 0.8, 2e4)
    ax.set_xlabel("loss (congestion) event rate p")
    ax.set_ylabel("rate (kb/s)")
    ax.set_title(
        f"TCP throughput equation (RFC 5348, b = 1, t_RTO = 4R, s = {C.SEGMENT_BYTES} B) over this "
        "path;\npoints: measured flows (x: receiver's p at the end, y: mean rate over the window)",
        fontsize=9.5,
    )
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=7.5, loc="upper right")
    return _save(fig, path)


def summary_figure(runs: pd.DataFrame, path: Path) -> Path | None:
    """Every run (primary variant), mean over seeds with the seed range: queueing delay, per-flow rates."""
    ok = runs[(runs["status"] == "ok") & (runs["variant"] == C.PRIMARY)] if len(runs) else runs
    if not len(ok):
        return None
    # The second bar of each run: TFRC's per-flow rate in the TFRC run, the TCP rival's in the others.
    ok = ok.assign(other_rate_bps=ok["tfrc_rate_bps"].fillna(ok["rival_rate_bps"]))
    cases = [c for c in C.CASES if (ok["case"] == c).any()]
    fig = Figure(figsize=(12, 4.6))
    ax_delay, ax_rate = fig.subplots(1, 2)
    x = np.arange(len(cases))

    def bar(
        ax: Any,
        offset: float,
        column: str,
        scale: float,
        color: str,
        label: str,
        width: float = 0.36,
    ) -> None:
        g = ok.groupby("case")[column]
        mean = np.array([g.mean().get(c, np.nan) for c in cases]) * scale
        lo = np.array([g.min().get(c, np.nan) for c in cases]) * scale
        hi = np.array([g.max().get(c, np.nan) for c in cases]) * scale
        has = np.isfinite(mean)  # runs without that kind of flow get no bar
        err = np.vstack([mean - lo, hi - mean])[:, has]
        ax.bar(
            x[has] + offset,
            mean[has],
            width,
            color=color,
            label=label,
            yerr=err,
            capsize=3,
            error_kw={"lw": 0.8},
        )

    bar(ax_delay, -0.18, "delay_mean_ms", 1.0, "tab:blue", "mean")
    bar(ax_delay, 0.18, "delay_p95_ms", 1.0, "tab:cyan", "95th percentile")
    gmax = ok.groupby("case")["delay_max_ms"].max()
    ax_delay.plot(
        x,
        [gmax.get(c, np.nan) for c in cases],
        "k_",
        ms=14,
        mew=2,
        ls="none",
        label="max (any seed)",
    )
    ax_delay.axhline(C.FULL_QUEUE_DELAY_S * 1e3, color="tab:red", ls="--", lw=1, label="full queue")
    ax_delay.axhline(
        C.TARGET_MS, color="tab:green", ls=":", lw=1.2, label=f"target {C.TARGET_MS:g} ms"
    )
    ax_delay.set_ylabel("queueing delay (ms)")
    ax_delay.set_title(
        "Bottleneck queueing delay (bars: mean over seeds, whiskers: seed range)", fontsize=9.5
    )
    bar(ax_rate, -0.18, "dflow_rate_bps", 1e-3, "tab:blue", "DFlow (per flow)")
    bar(ax_rate, 0.18, "other_rate_bps", 1e-3, "tab:orange", "TFRC (per flow) / the TCP rival")
    ax_rate.set_ylabel("mean rate over the window (kb/s)")
    ax_rate.set_title("Per-flow rates (whiskers: seed range)", fontsize=9.5)
    for ax in (ax_delay, ax_rate):
        ax.set_xticks(x)
        ax.set_xticklabels([C.CASES[c].short for c in cases], fontsize=8)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=7.5)
    return _save(fig, path)


def base_period_figure(runs: pd.DataFrame, path: Path) -> Path | None:
    """The sweep over DFlow's base period: rate ratio against each rival, queueing delay, fairness among 5 DFlows."""
    ok = runs[runs["status"] == "ok"] if len(runs) else runs
    ok = ok[ok["case"] != "tfrc"] if len(ok) else ok
    if not len(ok) or ok["base_period_rtts"].nunique() < 2:
        return None
    fig = Figure(figsize=(14, 4.4))
    ax_ratio, ax_delay, ax_jain = fig.subplots(1, 3)
    for case in ("ledbat", "vegas", "newreno"):
        d = ok[ok["case"] == case]
        if not len(d):
            continue
        marker, color = _CASE_STYLE[case]
        ratio = (d["dflow_rate_bps"] / d["rival_rate_bps"]).clip(lower=1e-5)
        g = ratio.groupby(d["base_period_rtts"])
        ax_ratio.plot(
            g.mean().index,
            g.mean(),
            marker=marker,
            color=color,
            label=f"vs {C.CASES[case].rival_label}",
        )
        ax_ratio.fill_between(g.min().index, g.min(), g.max(), color=color, alpha=0.15, lw=0)
    ax_ratio.axhline(1 / 3, color="tab:purple", ls=":", lw=1, label="study vs LEDBAT: about 1/3")
    ax_ratio.axhline(1.0, color="tab:green", ls=":", lw=1, label="study vs Vegas: about 1")
    ax_ratio.set_yscale("log")
    ax_ratio.set_ylabel("DFlow rate / rival rate (mean; band: seed range)")
    ax_ratio.set_title("DFlow against one TCP flow", fontsize=9.5)
    for case in ("dflow", "ledbat", "vegas", "newreno"):
        d = ok[ok["case"] == case]
        if len(d):
            marker, color = _CASE_STYLE[case]
            g = d.groupby("base_period_rtts")["delay_mean_ms"].mean()
            ax_delay.plot(g.index, g, marker=marker, color=color, label=C.CASES[case].short)
    ax_delay.axhline(
        C.TARGET_MS, color="tab:green", ls=":", lw=1.2, label=f"target {C.TARGET_MS:g} ms"
    )
    ax_delay.axhline(C.FULL_QUEUE_DELAY_S * 1e3, color="tab:red", ls="--", lw=1, label="full queue")
    ax_delay.set_ylim(0, C.FULL_QUEUE_DELAY_S * 1e3 * 1.1)
    ax_delay.set_ylabel("mean queueing delay (ms)")
    ax_delay.set_title("Bottleneck queueing delay", fontsize=9.5)
    d = ok[ok["case"] == "dflow"]
    if len(d):
        g = d.groupby("base_period_rtts")["jain_dflow"]
        ax_jain.plot(g.mean().index, g.mean(), "o-", color="tab:blue", label="mean over seeds")
        ax_jain.plot(g.min().index, g.min(), "v--", color="tab:blue", alpha=0.6, label="worst seed")
    ax_jain.set_ylim(0.5, 1.02)
    ax_jain.set_ylabel("Jain's index among 5 DFlows")
    ax_jain.set_title("Fairness among five DFlows", fontsize=9.5)
    for ax in (ax_ratio, ax_delay, ax_jain):
        ax.set_xscale("log")
        ax.set_xlabel("DFlow base period (RTTs)")
        ax.grid(True, which="both", alpha=0.25)
        ax.legend(fontsize=7.5)
    return _save(fig, path)


def make_figures(data: Any, curves: pd.DataFrame, settings: Any, outdir: Path) -> dict[str, str]:
    """Every figure of a reproduction; returns {key: file name} for the report."""
    out: dict[str, str] = {}
    if not len(data.flows):
        return out
    for case in C.CASES:
        p = run_figure(
            data,
            case,
            C.PRIMARY,
            settings.figure_seed,
            settings.measure_from_s,
            outdir / f"fig_{case}.png",
        )
        if p is not None:
            out[case] = p.name
    for variant in C.DRAWN:
        if variant == C.PRIMARY or variant not in settings.variants:
            continue
        p = variant_figure(
            data,
            variant,
            settings.figure_seed,
            settings.measure_from_s,
            outdir / f"fig_variant_{variant}.png",
        )
        if p is not None:
            out[f"variant_{variant}"] = p.name
    p = base_period_figure(data.runs, outdir / "fig_base_period.png")
    if p is not None:
        out["base_period"] = p.name
    out["knee"] = knee_figure(curves, data.flows, outdir / "fig_knee.png").name
    p = summary_figure(data.runs, outdir / "fig_summary.png")
    if p is not None:
        out["summary"] = p.name
    return out
