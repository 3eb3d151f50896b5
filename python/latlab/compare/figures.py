"""The figures of a comparison: the throughput–delay plane and the RTT distributions.

Drawn with matplotlib's object API and the Agg canvas, as :mod:`latlab.plot`.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Ellipse

from latlab import _atomic

X_COLUMN = "rtt_p95_ms"
# Markers and line styles cycle apart from colours, so that schemes whose
# numbers coincide (one flow through CoDel and through FQ-CoDel) both show.
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINESTYLES = ("-", "--", "-.", ":")


def _wide(values: np.ndarray) -> bool:
    """Whether positive values span more than a factor of ten (then a log axis shows them all)."""
    values = values[np.isfinite(values)]
    return bool(len(values) and values.min() > 0 and values.max() / values.min() > 10)


def covariance_ellipse(
    x: np.ndarray, y: np.ndarray
) -> tuple[float, float, float, float, float] | None:
    """(centre x, centre y, width, height, angle in degrees) of the 1-sigma ellipse of the
    points' sample covariance: its axes are 2·sqrt of the covariance's eigenvalues along its
    eigenvectors. None for fewer than two points."""
    if len(x) < 2:
        return None
    cov = np.cov(np.vstack([x, y]))
    values, vectors = np.linalg.eigh(cov)
    values = np.clip(values, 0.0, None)
    major = vectors[:, 1]
    angle = float(np.degrees(np.arctan2(major[1], major[0])))
    return (
        float(np.mean(x)),
        float(np.mean(y)),
        2 * float(np.sqrt(values[1])),
        2 * float(np.sqrt(values[0])),
        angle,
    )


def plane_figure(seeds: pd.DataFrame, title: str) -> Figure:
    """p95 RTT (x, reversed) against goodput (y): one point per seed, one 1-sigma ellipse
    per scheme over its seeds."""
    fig = Figure(figsize=(8, 6), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for i, (scheme, g) in enumerate(seeds.groupby("scheme", sort=False)):
        color = f"C{i % 10}"
        g = g.dropna(subset=[X_COLUMN, "goodput_bps"])
        x = g[X_COLUMN].to_numpy(dtype="float64")
        y = g["goodput_bps"].to_numpy(dtype="float64") / 1e6
        marker = MARKERS[i % len(MARKERS)]
        ax.plot(x, y, marker, color=color, ms=6, mfc="none", label=f"{scheme} ({len(g)} seeds)")
        shape = covariance_ellipse(x, y)
        if shape is not None:
            cx, cy, w, h, angle = shape
            ax.add_patch(
                Ellipse((cx, cy), w, h, angle=angle, fill=False, color=color, lw=1.3, alpha=0.8)
            )
    ax.plot(
        [],
        [],
        ls="none",
        marker="$\\bigcirc$",
        color="0.3",
        label="ellipse: 1σ covariance over seeds",
    )
    log = _wide(seeds[X_COLUMN].to_numpy(dtype="float64"))
    if log:
        ax.set_xscale("log")
    ax.invert_xaxis()
    scale = "log axis, " if log else ""
    ax.set_xlabel(f"p95 RTT (ms; {scale}reversed: lower delay to the right)")
    ax.set_ylabel("goodput (Mbit/s, sum over the scheme's flows)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="best")
    return fig


def rtt_figure(histograms: dict[str, pd.DataFrame], title: str) -> Figure:
    """Per scheme, the CDF of every RTT sample of its flows, seeds pooled."""
    fig = Figure(figsize=(8, 5), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    lows = []
    for i, (scheme, hist) in enumerate(histograms.items()):
        if not len(hist):
            continue
        pooled = hist.groupby("high_ns", sort=True)["count"].sum()
        x_ms = pooled.index.to_numpy(dtype="float64") / 1e6
        y = np.cumsum(pooled.to_numpy(dtype="float64")) / pooled.sum()
        style = LINESTYLES[i % len(LINESTYLES)]
        ax.step(x_ms, y, where="post", lw=1.4, ls=style, color=f"C{i % 10}", label=scheme)
        lows.append(x_ms)
    if lows and _wide(np.concatenate(lows)):
        ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("RTT (ms)")
    ax.set_ylabel("fraction of RTT samples")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="lower right")
    return fig


def save(fig: Figure, path: str | os.PathLike[str]) -> Path:
    return _atomic.write_with(Path(path), lambda tmp: fig.savefig(tmp, format="png", dpi=100))
