"""Figures of the MPTCP-proxy study, in its style: throughput per subflow over time (and the connection's total).

* :func:`paths_figure`: single-path TCP on each path beside MPTCP through the proxy;
* :func:`buffer_figure`: the receive-buffer sweep, and the subflows over time at 0.18 and 0.72 MB;
* :func:`mtu_figure`: MTU 1000 beside 1500 at 0.72 MB;
* :func:`throttle_figure`: the wired subflow throttled during a 5 MB (first and repeated) and a long download.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from latlab.studies.mptcp import cases as C
from latlab.studies.mptcp.metrics import StudyData, buffer_curve, guidance_mb, mean_of, pick
from latlab.studies.mptcp.references import NEEDED_BUFFER_MB

COLORS = {"wired": "tab:blue", "wifi": "tab:orange", "total": "k"}
WORDS = {"wired": "wired subflow", "wifi": "Wi-Fi subflow", "total": "total"}


def _save(fig: Figure, path: Path, dpi: int = 110) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    return path


def _series(series: pd.DataFrame, experiment: str, **where: Any) -> pd.DataFrame:
    if not len(series):
        return series
    d = series[series["experiment"] == experiment]
    for k, v in where.items():
        d = d[np.isclose(d[k], v)] if isinstance(v, float) else d[d[k] == v]
    return d


def _plot_subflows(ax: Axes, d: pd.DataFrame, title: str, single_path: str | None = None) -> None:
    """Throughput of each subflow (and the total) against time."""
    ax.set_title(title, fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("throughput (Mbit/s)")
    if not len(d):
        ax.text(0.5, 0.5, "not run", ha="center", va="center", transform=ax.transAxes)
        return
    for name in ("total", "wired", "wifi"):
        s = d[d["subflow"] == name]
        if not len(s):
            continue
        label = f"TCP on the {C.PATHS[name]} path" if single_path else WORDS[name]
        ax.plot(
            s["time_s"],
            s["mbps"],
            color=COLORS[name],
            lw=1.2 if name != "total" else 0.9,
            ls="-" if name != "total" else "--",
            label=label,
        )
    ax.set_ylim(bottom=0)
    ax.set_xlim(left=0)
    ax.legend(fontsize=7, loc="upper right")


def paths_figure(data: StudyData, settings: C.Settings, out: Path) -> Path | None:
    s = data.series
    if not len(s):
        return None
    size = settings.large_bytes
    fig = Figure(figsize=(11, 3.4))
    axes = fig.subplots(1, 3, sharey=True)
    for ax, path in zip(axes, C.PATHS):
        _plot_subflows(
            ax,
            _series(s, "baseline", path=path, size_bytes=size),
            f"Legacy TCP, {C.PATHS[path]} only ({size / C.MB:g} MB)",
            single_path=path,
        )
    where = "through the proxy" if data.proxy else "end to end (no proxy)"
    _plot_subflows(
        axes[2], _series(s, "mptcp", size_bytes=size), f"MPTCP {where} ({size / C.MB:g} MB)"
    )
    return _save(fig, out)


SENDER_STYLE = {True: ("o-", "RFC 8684 sender"), False: ("s--", "per-subflow-window sender")}


def buffer_figure(data: StudyData, settings: C.Settings, out: Path) -> Path | None:
    curves = {dw: buffer_curve(data.conns, dw) for dw in C.SENDERS}
    if not any(len(c) for c in curves.values()):
        return None
    fig = Figure(figsize=(13, 7))
    axes = fig.subplots(2, 3)
    top = axes[0]
    g = guidance_mb(data.conns)
    for dw, curve in curves.items():
        if not len(curve):
            continue
        mb = curve.index.to_numpy(dtype=float)
        style, name = SENDER_STYLE[dw]
        top[0].plot(mb, curve["goodput_bps"] / 1e6, style, color="k", label=name)
        top[0].fill_between(
            mb, curve["goodput_lo"] / 1e6, curve["goodput_hi"] / 1e6, color="0.6", alpha=0.25, lw=0
        )
        top[1].plot(
            mb, curve["recv_drops"], style, color="tab:brown", label=f"receiver drops, {name}"
        )
        top[1].plot(
            mb,
            curve["retransmits"],
            style,
            color="tab:red",
            alpha=0.6,
            label=f"retransmitted segments, {name}",
        )
        top[2].plot(
            mb,
            100 * curve["hol_fraction"],
            style,
            color="tab:purple",
            label=f"head-of-line blocked, {name}",
        )
        top[2].plot(
            mb, 100 * curve["wifi_share"], style, color=COLORS["wifi"], label=f"Wi-Fi share, {name}"
        )
    for ax in top:
        if np.isfinite(g):
            ax.axvline(
                g,
                color="tab:green",
                ls="--",
                lw=1,
                label=f"2·ΣBW·RTT_max on latlab's paths ({g:.2f} MB)",
            )
        ax.axvline(
            NEEDED_BUFFER_MB,
            color="tab:red",
            ls=":",
            lw=1.2,
            label=f"study: ≈ {NEEDED_BUFFER_MB:g} MB",
        )
        for b in C.STUDY_BUFFERS_MB:
            ax.axvspan(b * 0.97, b * 1.03, color="0.8", zorder=0)
        ax.set_xscale("log")
        grid = sorted(set().union(*(set(c.index) for c in curves.values())))
        ax.set_xticks(grid, [f"{x:g}" for x in grid], rotation=45, fontsize=7)
        ax.minorticks_off()
        ax.set_xlabel("max TCP memory (MB); window = half of it")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=6, loc="best")
    top[0].set_ylabel("goodput (Mbit/s)")
    top[0].set_title(
        f"Receive buffer sweep ({settings.sweep_bytes / C.MB:g} MB downloads)", fontsize=9
    )
    top[1].set_ylabel("segments")
    top[2].set_ylabel("% (of the download's time; of its bytes)")
    small, large = sorted(C.STUDY_BUFFERS_MB)
    for ax, (dw, b) in zip(axes[1], ((True, small), (False, small), (False, large))):
        _plot_subflows(
            ax,
            _series(data.series, "rbuf", buffer_mb=b, data_window=dw),
            f"max TCP memory {b:g} MB, {SENDER_STYLE[dw][1]}",
        )
    return _save(fig, out)


def mtu_figure(data: StudyData, settings: C.Settings, out: Path) -> Path | None:
    if not len(_series(data.series, "mtu", transport="mptcp")):
        return None
    fig = Figure(figsize=(10, 6.5))
    axes = fig.subplots(2, 2, sharey=True)
    for row, dw in zip(axes, C.SENDERS):
        _plot_subflows(
            row[0],
            _series(data.series, "rbuf", buffer_mb=C.DEFAULT_BUFFER_MB, data_window=dw),
            f"MTU {C.MTU_BYTES}, {C.DEFAULT_BUFFER_MB:g} MB, {SENDER_STYLE[dw][1]}",
        )
        _plot_subflows(
            row[1],
            _series(data.series, "mtu", transport="mptcp", data_window=dw),
            f"MTU {C.SMALL_MTU_BYTES}, {C.DEFAULT_BUFFER_MB:g} MB, {SENDER_STYLE[dw][1]}",
        )
    return _save(fig, out)


def throttle_figure(data: StudyData, settings: C.Settings, out: Path) -> Path | None:
    s = data.series
    if not len(_series(s, "throttle")):
        return None
    rate = settings.throttle_bps[0]
    fig = Figure(figsize=(12, 6.5))
    axes = fig.subplots(2, 3)
    small = settings.small_bytes
    _plot_subflows(
        axes[0, 0], _series(s, "mptcp", size_bytes=small), f"{small / C.MB:g} MB, not throttled"
    )
    _plot_subflows(
        axes[0, 1],
        _series(s, "throttle", label="first"),
        f"{small / C.MB:g} MB, first: wired throttled to {rate / 1e6:g} Mbit/s "
        f"{C.THROTTLE_INSTALL_S:g} s after the join",
    )
    _plot_subflows(
        axes[0, 2],
        _series(s, "throttle", label="repeated"),
        f"{small / C.MB:g} MB, repeated: rules in place",
    )
    big = settings.large_bytes
    _plot_subflows(
        axes[1, 0], _series(s, "mptcp", size_bytes=big), f"{big / C.MB:g} MB, not throttled"
    )
    _plot_subflows(
        axes[1, 1],
        _series(s, "throttle", label="long", throttle_bps=rate),
        f"{big / C.MB:g} MB, wired throttled to {rate / 1e6:g} Mbit/s",
    )
    ax = axes[1, 2]
    conns = data.conns
    bars: list[tuple[str, float, float]] = []  # label, wired, wifi (Mbit/s of goodput)
    for p in C.PATHS:
        d = pick(conns, "baseline", path=p, size_bytes=big)
        g = mean_of(d, "goodput_bps") / 1e6
        bars.append((f"TCP {p}", g if p == "wired" else 0.0, g if p == "wifi" else 0.0))
    free = pick(conns, "mptcp", size_bytes=big)
    runs = [("MPTCP", free)] + [
        (f"MPTCP, {r / 1e6:g} M", pick(conns, "throttle", label="long", throttle_bps=r))
        for r in settings.throttle_bps
    ]
    for label, d in runs:
        g = mean_of(d, "goodput_bps") / 1e6
        bars.append((label, g * mean_of(d, "wired_share"), g * mean_of(d, "wifi_share")))
    x = np.arange(len(bars))
    ax.bar(x, [b[1] for b in bars], color=COLORS["wired"], label="wired")
    ax.bar(
        x, [b[2] for b in bars], bottom=[b[1] for b in bars], color=COLORS["wifi"], label="Wi-Fi"
    )
    ax.set_xticks(x, [b[0] for b in bars], rotation=30, fontsize=7, ha="right")
    ax.set_ylabel("goodput (Mbit/s)")
    ax.set_title(f"{big / C.MB:g} MB: goodput by path", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(True, axis="y", alpha=0.3)
    return _save(fig, out)


def make_figures(data: StudyData, settings: C.Settings, outdir: Path) -> dict[str, str]:
    """Every figure of a reproduction; returns {key: file name} for the report."""
    out: dict[str, str] = {}
    if not len(data.conns):
        return out
    for key, p in (
        ("paths", paths_figure(data, settings, outdir / "fig_paths.png")),
        ("buffer", buffer_figure(data, settings, outdir / "fig_buffer.png")),
        ("mtu", mtu_figure(data, settings, outdir / "fig_mtu.png")),
        ("throttle", throttle_figure(data, settings, outdir / "fig_throttle.png")),
    ):
        if p is not None:
            out[key] = p.name
    return out
