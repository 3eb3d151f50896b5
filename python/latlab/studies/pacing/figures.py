"""Figures of the pacing study (see :mod:`latlab.studies.pacing`): x is the core buffer (KB) unless stated."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from latlab.models import edge_pacer as model
from latlab.studies.pacing.cases import (
    CORE_RATE_BPS,
    EXPERIMENT_TITLES,
    MEAN_RTT_S,
    MODES,
    Settings,
)
from latlab.studies.pacing.metrics import b_star, h_rows, select
from latlab.studies.pacing.references import (
    GOODPUT_KEY,
    HEADLINE_BUFFER_KB,
    REFERENCES,
    SMALL_BUFFERS_KB,
)

STYLE = {
    "unpaced": ("tab:red", "o", "-"),
    "host-paced": ("tab:blue", "s", "--"),
    "edge-paced": ("tab:green", "^", "-"),
}
METRIC_LABEL = {
    "tcp_goodput_mbps": "aggregate TCP goodput (Mbps)",
    "per_flow_kbps": "average per-flow goodput (Kbps)",
    "core_loss": "core loss rate",
    "core_utilisation": "core utilisation",
    "udp_loss": "UDP loss rate",
    "file_goodput_kbps": "average per-file goodput (Kbps)",
}


def _save(fig: Figure, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def _by_mode(
    ax, df: pd.DataFrame, metric: str, x: str = "buffer_kb", label_suffix: str = ""
) -> None:
    for mode, (color, marker, ls) in STYLE.items():
        d = df[df["mode"] == mode].groupby(x, as_index=False)[metric].mean().sort_values(x)
        if len(d):
            ax.plot(
                d[x], d[metric], marker=marker, ls=ls, color=color, ms=4, label=mode + label_suffix
            )


def _finish(ax, metric: str, log_y: bool = False, x_label: str = "core buffer (KB)") -> None:
    ax.set_xlabel(x_label)
    ax.set_ylabel(METRIC_LABEL.get(metric, metric))
    if log_y:
        ax.set_yscale("log")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)


def panels(
    df: pd.DataFrame,
    metrics: Sequence[tuple[str, bool]],
    title: str,
    path: Path,
    refs: dict[str, list[tuple[float, float, str]]] | None = None,
) -> Path:
    """One panel per (metric, log_y), a curve per pacing mode; ``refs`` marks the study's reference points."""
    fig = Figure(figsize=(5.2 * len(metrics), 4.2))
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    for ax, (metric, log_y) in zip(axes, metrics):
        sub = df.dropna(subset=[metric])
        if log_y:
            sub = sub[sub[metric] > 0]
        _by_mode(ax, sub, metric)
        for x, y, text in (refs or {}).get(metric, []):
            ax.plot([x], [y], marker="*", color="k", ms=11, ls="none")
            ax.annotate(text, (x, y), textcoords="offset points", xytext=(6, -12), fontsize=7.5)
        _finish(ax, metric, log_y)
    fig.suptitle(title, fontsize=10)
    return _save(fig, path)


def groups_figure(
    df: pd.DataFrame, title: str, path: Path, by: str = "flows", label: str = "{} flows"
) -> Path:
    """B and E: per-flow goodput and aggregate vs buffer, one colour per mode, one line style per value of ``by``
    (flow count in B, loss recovery in E)."""
    fig = Figure(figsize=(10.4, 4.2))
    axes = fig.subplots(1, 2)
    styles = ["-", ":", "-."]
    for k, v in enumerate(sorted(df[by].unique())):
        sub = df[df[by] == v]
        for ax, metric in zip(axes, ("per_flow_kbps", "tcp_goodput_mbps")):
            for mode, (color, marker, _ls) in STYLE.items():
                d = sub[sub["mode"] == mode].groupby("buffer_kb", as_index=False)[metric].mean()
                ax.plot(
                    d["buffer_kb"],
                    d[metric],
                    marker=marker,
                    ls=styles[k % 3],
                    color=color,
                    ms=4,
                    label=f"{mode}, {label.format(v)}",
                )
    for ax, metric in zip(axes, ("per_flow_kbps", "tcp_goodput_mbps")):
        if metric == "per_flow_kbps" and by == "flows":
            ax.set_yscale("log")  # 100 and 500 flows differ five-fold
        _finish(ax, metric)
    fig.suptitle(title, fontsize=10)
    return _save(fig, path)


def delay_figure(
    h: pd.DataFrame, b_star_bytes: float, rtt0_s: float, rate_bps: float, path: Path
) -> Path:
    """Experiment H: aggregate goodput vs d at low/high load beside the analysis curves, and vs buffer per d."""
    fig = Figure(figsize=(15, 4.3))
    ax1, ax2, ax3 = fig.subplots(1, 3)
    paced = h[h["mode"] == "edge-paced"]
    ptime = model.packet_time_s(rate_bps)
    colors = ["tab:purple", "tab:orange", "tab:cyan", "tab:brown"]
    sweep_buffers = sorted(h.loc[h["sweep"] == "delay", "buffer_kb"].unique())
    for k, b in enumerate(sweep_buffers):
        d = (
            paced[(paced["buffer_kb"] == b) & (paced["sweep"] == "delay")]
            .groupby("delay_ms", as_index=False)["tcp_goodput_mbps"]
            .mean()
            .sort_values("delay_ms")
        )
        ax1.plot(
            d["delay_ms"],
            d["tcp_goodput_mbps"],
            "o-",
            color=colors[k % 4],
            ms=4,
            label=f"edge-paced, {b:g} KB",
        )
        for mode in ("unpaced", "host-paced"):
            ref = h[(h["mode"] == mode) & (h["buffer_kb"] == b)]["tcp_goodput_mbps"].mean()
            if np.isfinite(ref):
                ax1.axhline(
                    ref,
                    color=colors[k % 4],
                    ls="--" if mode == "host-paced" else ":",
                    lw=1,
                    label=f"{mode}, {b:g} KB",
                )
        # model: T(d)/T(0) scaled to the simulated d = 0 point
        load = float(model.offered_load(b * 1000, b_star_bytes))
        dd = np.linspace(0, max(d["delay_ms"].max(), 1), 200)
        rel = model.relative_throughput(load, dd / 1e3 / ptime, rtt0_s / ptime)
        ax2.plot(dd, rel, color=colors[k % 4], label=f"model, {b:g} KB (λ = {load:.3f})")
        base = d[d["delay_ms"] == 0]["tcp_goodput_mbps"]
        if len(base):
            ax2.plot(
                d["delay_ms"],
                d["tcp_goodput_mbps"] / float(base.iloc[0]),
                "o",
                color=colors[k % 4],
                ms=4,
                label=f"latlab, {b:g} KB (÷ d = 0)",
            )
    _finish(ax1, "tcp_goodput_mbps", x_label="edge pacer delay bound d (ms)")
    ax1.set_title("aggregate goodput vs d", fontsize=9)
    ax2.set_xlabel("edge pacer delay bound d (ms)")
    ax2.set_ylabel("throughput relative to d = 0")
    ax2.set_yscale("log")
    ax2.grid(True, alpha=0.3)
    ax2.legend(fontsize=7)
    ax2.set_title(
        f"analysis: T ∝ 1/((RTT0+d)(λe^(1−λ))^d), ρ = 1−e^(−B/B*), B* = {b_star_bytes / 1e3:.2g} KB",
        fontsize=8,
    )
    vsb = paced[paced["sweep"] == "buffer"]
    for k, dms in enumerate(sorted(vsb["delay_ms"].unique())):
        d = (
            vsb[vsb["delay_ms"] == dms]
            .groupby("buffer_kb", as_index=False)["tcp_goodput_mbps"]
            .mean()
        )
        ax3.plot(
            d["buffer_kb"],
            d["tcp_goodput_mbps"],
            "^-",
            ms=4,
            color=plt_color(k),
            label=f"edge-paced, d = {dms:g} ms",
        )
    un = (
        h[(h["mode"] == "unpaced") & (h["sweep"] == "buffer")]
        .groupby("buffer_kb", as_index=False)["tcp_goodput_mbps"]
        .mean()
    )
    if len(un):
        ax3.plot(
            un["buffer_kb"], un["tcp_goodput_mbps"], "o:", color="tab:red", ms=4, label="unpaced"
        )
    _finish(ax3, "tcp_goodput_mbps")
    ax3.set_title("aggregate goodput vs buffer, per d", fontsize=9)
    return _save(fig, path)


def plt_color(k: int) -> str:
    return ["tab:olive", "tab:green", "tab:purple", "tab:orange", "tab:cyan", "tab:brown"][k % 6]


def loss_bound_figure(path: Path) -> Path:
    """The analysis curves on their own: the Chernoff loss bound vs load per d, and burstiness vs d."""
    fig = Figure(figsize=(10.4, 4.0))
    ax1, ax2 = fig.subplots(1, 2)
    lam = np.linspace(0.5, 0.999, 200)
    for d_pkts in (1, 10, 50, 125):
        ax1.plot(lam, model.loss_bound(lam, d_pkts), label=f"d = {d_pkts} packet times")
    ax1.set_yscale("log")
    ax1.set_ylim(1e-12, 1.5)
    ax1.set_xlabel("normalised load λ")
    ax1.set_ylabel("loss bound (λe^(1−λ))^(2d)")
    ax1.grid(True, alpha=0.3)
    ax1.legend(fontsize=8)
    d = np.linspace(0.1e-3, 100e-3, 200)
    for rate in (1e3, 5e3, 12.5e3):
        ax2.plot(d * 1e3, model.burstiness(rate, d), label=f"λ = {rate:g} packets/s")
    ax2.set_xlabel("delay bound d (ms)")
    ax2.set_ylabel("burstiness β = 1/sqrt(2λd)")
    ax2.set_yscale("log")
    ax2.grid(True, alpha=0.3)
    ax2.legend(fontsize=8)
    return _save(fig, path)


def partial_figure(j: pd.DataFrame, path: Path) -> Path:
    """Experiment J: aggregate goodput vs deployed fraction; per-flow goodput of paced vs unpaced flows."""
    fig = Figure(figsize=(10.4, 4.2))
    ax1, ax2 = fig.subplots(1, 2)
    for mode in ("host-paced", "edge-paced"):
        color, marker, ls = STYLE[mode]
        for b in sorted(j["buffer_kb"].unique()):
            d = j[(j["buffer_kb"] == b) & ((j["mode"] == mode) | (j["mode"] == "unpaced"))].copy()
            d.loc[d["mode"] == "unpaced", "paced_fraction"] = 0.0
            d = (
                d.groupby("paced_fraction", as_index=False)["tcp_goodput_mbps"]
                .mean()
                .sort_values("paced_fraction")
            )
            ax1.plot(
                100 * d["paced_fraction"],
                d["tcp_goodput_mbps"],
                marker=marker,
                ls=ls,
                color=color,
                ms=4,
                label=f"{mode}, {b:g} KB",
            )
    _finish(ax1, "tcp_goodput_mbps", x_label="share of hosts / edges that pace (%)")
    rows = j.dropna(subset=["paced_kbps"])
    labels, vals, cols = [], [], []
    for _, r in rows.sort_values(["buffer_kb", "mode", "paced_fraction"]).iterrows():
        for grp in ("paced", "unpaced"):
            labels.append(
                f"{r['mode'].split('-')[0]} {100 * r['paced_fraction']:.0f}%\n{grp}, {r['buffer_kb']:g} KB"
            )
            vals.append(r[f"{grp}_kbps"])
            cols.append(STYLE[r["mode"]][0] if grp == "paced" else "tab:gray")
    ax2.bar(range(len(vals)), vals, color=cols)
    ax2.set_xticks(range(len(vals)), labels, fontsize=7)
    ax2.set_ylabel(METRIC_LABEL["per_flow_kbps"])
    ax2.grid(True, axis="y", alpha=0.3)
    ax2.set_title("partial deployment: paced vs unpaced flows", fontsize=9)
    return _save(fig, path)


def make_figures(df: pd.DataFrame, settings: Settings, outdir: Path) -> dict[str, str]:
    """Every experiment's figure (and H's analysis curves) into ``outdir``; returns name → file name."""
    out: dict[str, str] = {}
    ref = REFERENCES
    small = (SMALL_BUFFERS_KB[0] + SMALL_BUFFERS_KB[-1]) / 2
    refs = {
        "per_flow_kbps": [
            (
                HEADLINE_BUFFER_KB,
                ref[GOODPUT_KEY[m]].value,
                f"study: {m} {ref[GOODPUT_KEY[m]].number()}",
            )
            for m in MODES
        ],
        "core_loss": [
            (
                small,
                ref["loss_small"].value / 100,
                f"study: {ref['loss_small'].text()} at "
                f"{SMALL_BUFFERS_KB[0]:g}–{SMALL_BUFFERS_KB[-1]:g} KB",
            )
        ],
    }
    standard = [("per_flow_kbps", False), ("tcp_goodput_mbps", False), ("core_loss", True)]
    for exp in settings.experiments:
        d = select(df, exp)
        if not len(d):
            continue
        path = outdir / f"fig_{exp}.png"
        title = f"{exp}. {EXPERIMENT_TITLES[exp]}"
        if exp == "A":
            panels(d, standard + [("core_utilisation", False)], title, path, refs)
        elif exp == "B":
            groups_figure(d, title, path)
        elif exp == "E":
            groups_figure(d, title, path, by="recovery", label="{}")
        elif exp == "D":
            panels(
                d,
                [("file_goodput_kbps", False), ("tcp_goodput_mbps", False), ("core_loss", True)],
                title,
                path,
            )
        elif exp == "F":
            panels(d, [("tcp_goodput_mbps", False), ("core_loss", True)], title, path)
        elif exp == "H":
            delay_figure(h_rows(df, settings), b_star(df), MEAN_RTT_S, CORE_RATE_BPS, path)
            loss_bound_figure(outdir / "fig_H_analysis.png")
            out["H_analysis"] = "fig_H_analysis.png"
        elif exp == "I":
            for pat in sorted(d["udp"].unique()):
                dp = d[d["udp"] == pat]
                vs_buffer = dp[(dp["mode"] != "edge-paced") | (dp["delay_ms"] == 10.0)]
                p = outdir / f"fig_I_{pat}.png"
                panels(
                    vs_buffer,
                    [("tcp_goodput_mbps", False), ("per_flow_kbps", False), ("udp_loss", True)],
                    f"{title}: {pat} UDP",
                    p,
                )
                out[f"I_{pat}"] = p.name
                vs_d = dp[
                    (dp["mode"] == "edge-paced") & dp["buffer_kb"].isin(settings.delay_buffers_kb)
                ]
                p2 = outdir / f"fig_I_{pat}_delay.png"
                panels(
                    vs_d.assign(mode="edge-paced"),
                    [("udp_loss", True), ("tcp_goodput_mbps", False)],
                    f"{title}: {pat} UDP vs pacer delay d (x: d in ms; one curve per buffer below)",
                    p2,
                )
                _delay_curves(vs_d, p2)
                out[f"I_{pat}_delay"] = p2.name
            continue
        elif exp == "J":
            partial_figure(d, path)
        else:
            panels(d, standard, title, path)
        out[exp] = path.name
    return out


def _delay_curves(d: pd.DataFrame, path: Path) -> None:
    """I vs d: UDP loss and TCP goodput against d, one curve per buffer (replaces the placeholder panels)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10.4, 4.2))
    axes = fig.subplots(1, 2)
    for ax, metric, log_y in zip(axes, ("udp_loss", "tcp_goodput_mbps"), (True, False)):
        for b, color in zip(
            sorted(d["buffer_kb"].unique()), ("tab:purple", "tab:orange", "tab:cyan")
        ):
            s = (
                d[d["buffer_kb"] == b]
                .groupby("delay_ms", as_index=False)[metric]
                .mean()
                .sort_values("delay_ms")
            )
            if log_y:
                s = s[s[metric] > 0]
            ax.plot(
                s["delay_ms"], s[metric], "o-", color=color, ms=4, label=f"edge-paced, {b:g} KB"
            )
        ax.set_xlabel("edge pacer delay bound d (ms)")
        ax.set_ylabel(metric.replace("_", " "))
        if log_y:
            ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
