"""Figures of the RTAC study, in its style: throughput bars and RTT boxplots (box = 25th–75th percentile).

* :func:`rmem_figure`: auto-tuning's throughput and RTT against tcp_rmem_max, LTE and Wi-Fi;
* :func:`single_figure`: one flow per receiver, throughput bars and RTT boxes, the study's figures marked;
* :func:`competition_figure`: per-client throughput of every competition run;
* :func:`senders_figure`: throughput and RTT per sender variant and receiver, and the share beside auto-tuning.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from latlab.studies.rtac.cases import PAIRS, PATHS, RECEIVERS, SENDERS, Settings
from latlab.studies.rtac.metrics import (
    pair_shares,
    rmem_curve,
    select,
    share_of_autotuning,
    single_figures,
)
from latlab.studies.rtac.references import BEST_RMEM_KB, COMPETITION, RTAC_SHARE, SINGLE

COLORS = {"autotuning": "tab:red", "drwa": "tab:blue", "rtac": "tab:green", "wired": "tab:gray"}
PATH_WORD = {"lte": "LTE", "wifi": "Wi-Fi"}


def _save(fig: Figure, path: Path, dpi: int = 110) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    return path


def rmem_figure(flows: pd.DataFrame, out: Path) -> Path | None:
    curves = {p: rmem_curve(flows, p) for p in PATHS}
    if not any(len(c) for c in curves.values()):
        return None
    fig = Figure(figsize=(9, 6))
    axes = fig.subplots(2, 2, sharex="col")
    for j, (path, c) in enumerate(curves.items()):
        if not len(c):
            continue
        kb = c.index.to_numpy(dtype=float)
        top, bottom = axes[0, j], axes[1, j]
        top.plot(kb, c["goodput_mbps"], "o-", color=COLORS["autotuning"])
        top.fill_between(
            kb, c["goodput_lo"], c["goodput_hi"], color=COLORS["autotuning"], alpha=0.2, lw=0
        )
        bottom.plot(kb, c["rtt_mean_ms"], "o-", color=COLORS["autotuning"], label="mean")
        bottom.fill_between(
            kb,
            c["rtt_p25_ms"],
            c["rtt_p75_ms"],
            color=COLORS["autotuning"],
            alpha=0.2,
            lw=0,
            label="25th–75th percentile",
        )
        lo, hi = BEST_RMEM_KB[path]
        for ax in (top, bottom):
            ax.axvspan(
                max(lo, kb.min() / 1.5), hi, color="0.85", zorder=0, label="study's best range"
            )
            ax.set_xscale("log")
            ax.grid(True, alpha=0.3)
        top.set_title(f"{PATH_WORD[path]}: Auto-tuning against tcp_rmem_max")
        top.set_ylabel("throughput (Mbit/s)")
        top.set_ylim(bottom=0)
        bottom.set_ylabel("RTT (ms)")
        bottom.set_ylim(bottom=0)
        bottom.set_xlabel("tcp_rmem_max (KB)")
        bottom.set_xticks(kb, [f"{k:g}" for k in kb], rotation=45)
        bottom.legend(fontsize=8, loc="upper left")
    return _save(fig, out)


def single_figure(flows: pd.DataFrame, rtt_samples: pd.DataFrame, out: Path) -> Path | None:
    if not len(flows) or not len(rtt_samples):
        return None
    fig = Figure(figsize=(9, 6.5))
    axes = fig.subplots(2, 2)
    for j, path in enumerate(PATHS):
        fig_ = single_figures(flows, path)
        if not len(fig_):
            continue
        recv = list(fig_.index)
        x = np.arange(len(recv))
        top, bottom = axes[0, j], axes[1, j]
        top.bar(x, fig_["goodput_mbps"], color=[COLORS[r] for r in recv], alpha=0.8, label="latlab")
        top.errorbar(
            x,
            fig_["goodput_mbps"],
            yerr=[
                fig_["goodput_mbps"] - fig_["goodput_lo"],
                fig_["goodput_hi"] - fig_["goodput_mbps"],
            ],
            fmt="none",
            ecolor="k",
            capsize=3,
        )
        top.plot(x, [SINGLE[path][r][0] for r in recv], "k*", ms=11, label="study")
        top.set_xticks(x, [RECEIVERS[r] for r in recv])
        top.set_ylabel("throughput (Mbit/s)")
        top.set_title(f"{PATH_WORD[path]}: one flow")
        top.legend(fontsize=8, loc="lower right")
        data = [
            rtt_samples[
                (rtt_samples["path"] == path)
                & (rtt_samples["receiver"] == r)
                & (rtt_samples["sender"] == "cubic")
            ]["rtt_ms"].to_numpy()
            for r in recv
        ]
        box = bottom.boxplot(
            data, positions=x, whis=(5, 95), showfliers=False, patch_artist=True, widths=0.5
        )
        for patch, r in zip(box["boxes"], recv):
            patch.set_facecolor(COLORS[r])
            patch.set_alpha(0.6)
        bottom.plot(x, [SINGLE[path][r][1] for r in recv], "k*", ms=11, label="study (average)")
        bottom.plot(x, fig_["rtt_mean_ms"], "wD", mec="k", ms=6, label="latlab (average)")
        bottom.set_xticks(x, [RECEIVERS[r] for r in recv])
        bottom.set_ylabel("RTT (ms); box 25–75 %, whiskers 5–95 %")
        bottom.set_ylim(bottom=0)
        bottom.legend(fontsize=8, loc="upper right")
        for ax in (top, bottom):
            ax.grid(True, axis="y", alpha=0.3)
    return _save(fig, out)


def competition_figure(flows: pd.DataFrame, out: Path) -> Path | None:
    settings = [(e, p) for (e, p) in COMPETITION if len(select(flows, e, p))]
    if not settings:
        return None
    fig = Figure(figsize=(10, 6.5))
    axes = fig.subplots(2, 2).ravel()
    for ax, (experiment, path) in zip(axes, settings):
        cases = ["+".join(p) for p in PAIRS] if experiment == "pair" else ["+".join(RECEIVERS)]
        labels, x0 = [], 0.0
        for case in cases:
            good = pair_shares(flows, experiment, path, case)
            if not len(good):
                continue
            cols = sorted(good.columns, key=lambda c: (c == "wired", c))
            width = 0.8 / len(cols)
            for i, col in enumerate(cols):
                receiver = "wired" if col == "wired" else col.split("-", 1)[1]
                m = good[col].mean()
                ax.bar(
                    x0 + (i - (len(cols) - 1) / 2) * width,
                    m,
                    width * 0.95,
                    color=COLORS[receiver],
                    yerr=[[m - good[col].min()], [good[col].max() - m]],
                    capsize=2,
                    label=("wired client" if receiver == "wired" else RECEIVERS[receiver]),
                )
            labels.append((x0, " vs ".join(RECEIVERS[r] for r in case.split("+"))))
            x0 += 1
        ax.set_xticks([p for p, _ in labels], [t for _, t in labels], fontsize=8, rotation=10)
        ax.set_ylabel("throughput (Mbit/s)")
        ax.set_title(COMPETITION[(experiment, path)])
        handles, names = ax.get_legend_handles_labels()
        uniq = dict(zip(names, handles))
        ax.legend(uniq.values(), uniq.keys(), fontsize=8)
        ax.grid(True, axis="y", alpha=0.3)
    for ax in axes[len(settings) :]:
        ax.set_visible(False)
    return _save(fig, out)


def senders_figure(flows: pd.DataFrame, settings: Settings, out: Path) -> Path | None:
    d = flows[flows["experiment"].isin(["single", "senders"])] if len(flows) else flows
    if not len(d) or not (d["experiment"] == "senders").any():
        return None
    senders = [s for s in SENDERS if s in settings.senders]
    fig = Figure(figsize=(11, 8.5))
    axes = fig.subplots(3, 2)
    x = np.arange(len(senders))
    width = 0.8 / len(RECEIVERS)
    for j, path in enumerate(PATHS):
        for i, r in enumerate(RECEIVERS):
            tput, p25, p50, p75 = [], [], [], []
            for s in senders:
                f = single_figures(flows, path, s)
                row = f.loc[r] if r in f.index else None
                tput.append(row["goodput_mbps"] if row is not None else np.nan)
                p25.append(row["rtt_p25_ms"] if row is not None else np.nan)
                p50.append(row["rtt_p50_ms"] if row is not None else np.nan)
                p75.append(row["rtt_p75_ms"] if row is not None else np.nan)
            pos = x + (i - 1) * width
            axes[0, j].bar(pos, tput, width * 0.95, color=COLORS[r], label=RECEIVERS[r])
            axes[1, j].bar(
                pos,
                np.array(p75) - np.array(p25),
                width * 0.95,
                bottom=p25,
                color=COLORS[r],
                alpha=0.6,
                label=RECEIVERS[r],
            )
            axes[1, j].plot(pos, p50, "k_", ms=8)
        for i, r in enumerate(("drwa", "rtac")):
            share = [
                share_of_autotuning(flows, "pair" if s == "cubic" else "senders", path, r, s).mean()
                for s in senders
            ]
            axes[2, j].bar(
                x + (i - 0.5) * 0.4,
                np.array(share) * 100,
                0.38,
                color=COLORS[r],
                label=RECEIVERS[r],
            )
        axes[2, j].axhline(RTAC_SHARE * 100, color="k", ls="--", lw=1, label="study: RTAC ≈ 95 %")
        axes[0, j].set_title(f"{PATH_WORD[path]}: one flow per receiver")
        axes[0, j].set_ylabel("throughput (Mbit/s)")
        axes[1, j].set_ylabel("RTT (ms), 25–75 % and median")
        axes[1, j].set_ylim(bottom=0)
        axes[2, j].set_title(f"{PATH_WORD[path]}: beside an Auto-tuning client")
        axes[2, j].set_ylabel("throughput / Auto-tuning's (%)")
        for ax in axes[:, j]:
            ax.set_xticks(x, [SENDERS[s] for s in senders])
            ax.grid(True, axis="y", alpha=0.3)
        axes[0, j].legend(fontsize=7, loc="lower left")
        axes[1, j].legend(fontsize=7, loc="upper right")
        axes[2, j].legend(fontsize=7, loc="upper left")
    return _save(fig, out)


def make_figures(data: Any, settings: Settings, outdir: Path) -> dict[str, str]:
    """Every figure of a reproduction; returns {key: file name} for the report."""
    out: dict[str, str] = {}
    flows = data.flows
    if not len(flows):
        return out
    for key, p in (
        ("rmem", rmem_figure(flows, outdir / "fig_rmem.png")),
        ("single", single_figure(flows, data.rtt_samples, outdir / "fig_single.png")),
        ("competition", competition_figure(flows, outdir / "fig_competition.png")),
        ("senders", senders_figure(flows, settings, outdir / "fig_senders.png")),
    ):
        if p is not None:
            out[key] = p.name
    return out
