"""Figures of the efficiency study (see :mod:`latlab.studies.efficiency`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from latlab.models.efficiency_plot import COLORS, draw_efficiency, save, size_label

_SIZE_FMT = FuncFormatter(lambda x, _pos: size_label(x))


def _curve(curves: pd.DataFrame, profile: str, n_flows: int, variant: str) -> pd.DataFrame:
    sel = curves[
        (curves["profile"] == profile)
        & (curves["n_flows"] == n_flows)
        & (curves["variant"] == variant)
    ]
    return sel.sort_values("size_bytes")


def study_figure(curves: pd.DataFrame, profiles: list[str], n_flows: int, path: Path) -> Path:
    """The study's figure: efficiency vs flow size for each profile (published formula), exact model dotted."""
    fig = Figure(figsize=(8, 5))
    ax = fig.add_subplot(1, 1, 1)
    draw_efficiency(ax, {p: _curve(curves, p, n_flows, "published") for p in profiles})
    for n, p in enumerate(profiles):
        exact = _curve(curves, p, n_flows, "exact")
        ax.plot(
            exact["size_bytes"],
            exact["mean"],
            color=COLORS[n],
            lw=1.2,
            ls=":",
            label=f"{p} (mean, exact model)",
        )
        if n_flows > 1:
            single = _curve(curves, p, 1, "published")
            ax.plot(
                single["size_bytes"],
                single["mean"],
                color=COLORS[n],
                lw=0.8,
                alpha=0.45,
                label=f"{p} (mean, no background)",
            )
    what = "no concurrent traffic" if n_flows == 1 else f"with {n_flows - 1} background flow"
    ax.set_title(
        f"Protocol efficiency vs flow size, {what} (study's formula; IW 10, MSS 1448 B)",
        fontsize=10,
    )
    ax.legend(fontsize=7.5, loc="upper left", ncol=2)
    return save(fig, path)


def crosscheck_figure(check: pd.DataFrame, profiles: list[str], path: Path) -> Path:
    """Model vs simulation over a lossless link: completion times, residuals in segment times, relative errors."""
    fig = Figure(figsize=(11, 10))
    axes = fig.subplots(3, len(profiles), squeeze=False, sharex=True)
    for col, p in enumerate(profiles):
        d = check[(check["profile"] == p) & (~check["delayed_ack"])].sort_values("size_bytes")
        x = d["size_bytes"]
        ax = axes[0][col]
        ax.plot(x, d["published_s"], color="tab:red", lw=1.5, label="published formula")
        ax.plot(x, d["exact_s"], color="tab:blue", lw=1.5, label="exact model")
        ax.plot(x, d["sim_s"], "o", color="k", ms=3.5, label="simulator")
        ax.set_xscale("log")
        ax.set_yscale("log")
        c, r = d["capacity_bps"].iloc[0], d["rtt_s"].iloc[0]
        ax.set_title(
            f"{p}: C = {c / 1e6:.4g} Mbit/s, R = {r * 1e3:.3g} ms, IW 10, no delayed ACK",
            fontsize=9.5,
        )
        ax.set_ylabel("completion time L_S (s)")
        ax.legend(fontsize=8)
        ax = axes[1][col]
        ax.axhspan(-1, 1, color="tab:green", alpha=0.12, label="tolerance: one segment time S/C")
        ax.plot(
            x,
            (d["sim_s"] - d["exact_s"]) / d["tolerance_s"],
            "o-",
            color="tab:blue",
            ms=3,
            lw=1,
            label="simulator − exact model",
        )
        ax.set_ylim(-1.5, 1.5)
        ax.set_ylabel("difference (segment times)")
        ax.legend(fontsize=8, loc="lower right")
        ax = axes[2][col]
        ax.axhline(0, color="0.5", lw=0.8)
        ax.plot(
            x,
            100 * (d["published_s"] / d["sim_s"] - 1),
            "o-",
            color="tab:red",
            ms=3,
            lw=1,
            label="published formula vs simulator",
        )
        ax.plot(
            x,
            100 * (d["exact_s"] / d["sim_s"] - 1),
            "o-",
            color="tab:blue",
            ms=3,
            lw=1,
            label="exact model vs simulator",
        )
        ax.set_ylabel("model error (%)")
        ax.set_xlabel("flow size")
        ax.legend(fontsize=8)
        ax.xaxis.set_major_formatter(_SIZE_FMT)
        for a in axes[:, col]:
            a.grid(True, alpha=0.3)
    fig.suptitle(
        "Cross-check: latency model vs packet simulator (lossless link, linux preset, wire units)",
        fontsize=11,
    )
    return save(fig, path)


def accuracy_figure(
    check: pd.DataFrame, loaded: pd.DataFrame, profiles: list[str], path: Path
) -> Path:
    """Simulated / modelled completion time with delayed ACKs and with a loaded buffer."""
    fig = Figure(figsize=(11, 4.8))
    axes = fig.subplots(1, len(profiles), squeeze=False, sharey=True)[0]
    for col, p in enumerate(profiles):
        ax = axes[col]
        d = check[check["profile"] == p].sort_values("size_bytes")
        plain, dack = d[~d["delayed_ack"]], d[d["delayed_ack"]]
        ax.axhline(1, color="0.5", lw=0.8)
        ax.plot(
            plain["size_bytes"],
            plain["sim_s"] / plain["exact_s"],
            "-",
            color="k",
            lw=1.2,
            label="no delayed ACK / exact model",
        )
        ax.plot(
            dack["size_bytes"],
            dack["sim_s"] / dack["exact_s"],
            "o-",
            color="tab:orange",
            ms=3,
            lw=1,
            label="delayed ACK / exact model",
        )
        ax.plot(
            dack["size_bytes"],
            dack["sim_s"] / dack["delack_model_s"],
            "s-",
            color="tab:green",
            ms=3,
            lw=1,
            label="delayed ACK / delayed-ACK model",
        )
        ld = loaded[loaded["profile"] == p]
        if len(ld):
            agg = (
                ld.groupby("size_bytes")
                .agg(
                    sim=("fct_s", "median"),
                    m_loaded=("model_loaded_s", "first"),
                    m_single=("model_unloaded_s", "first"),
                )
                .reset_index()
            )
            ax.plot(
                agg["size_bytes"],
                agg["sim"] / agg["m_loaded"],
                "^-",
                color="tab:purple",
                ms=4,
                lw=1,
                label="loaded buffer / model with C/2, R_S",
            )
            ax.plot(
                agg["size_bytes"],
                agg["sim"] / agg["m_single"],
                "v--",
                color="tab:purple",
                ms=4,
                lw=0.8,
                alpha=0.6,
                label="loaded buffer / single-flow model (C, R_O)",
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.xaxis.set_major_formatter(_SIZE_FMT)
        ax.set_title(p, fontsize=10)
        ax.set_xlabel("flow size")
        ax.grid(True, which="both", alpha=0.25)
    axes[0].set_ylabel("simulated / modelled completion time")
    axes[-1].legend(fontsize=7.5, loc="upper right")
    fig.suptitle(
        "What delayed ACKs and a loaded buffer do to the model's accuracy (medians over start times)",
        fontsize=11,
    )
    return save(fig, path)


def loaded_rtt_figure(
    unloaded: dict[str, np.ndarray], loaded: dict[str, np.ndarray], path: Path
) -> Path:
    """CDFs of the handshake RTT without and with one background flow."""
    fig = Figure(figsize=(7.5, 4.5))
    ax = fig.add_subplot(1, 1, 1)
    for n, name in enumerate(unloaded):
        for data, ls, what in (
            (unloaded[name], "-", "no background (profile)"),
            (loaded.get(name), "--", "one background flow (simulated)"),
        ):
            if data is None or not len(data):
                continue
            x = np.sort(data) * 1e3
            ax.plot(
                x,
                np.arange(1, x.size + 1) / x.size,
                ls=ls,
                color=COLORS[n],
                label=f"{name}: {what}",
            )
    ax.set_xscale("log")
    ax.set_xlabel("handshake RTT (ms)")
    ax.set_ylabel("CDF")
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=8)
    ax.set_title("Handshake RTT a new flow sees, without and with one long CUBIC flow", fontsize=10)
    return save(fig, path)
