"""Efficiency-versus-flow-size figures (matplotlib object API, Agg canvas, no pyplot)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from latlab import _atomic

COLORS = ("tab:blue", "tab:red", "tab:green", "tab:purple", "tab:orange", "tab:brown")


def size_label(size_bytes: float) -> str:
    """1000 -> '1 KB', 320000 -> '320 KB', 1e7 -> '10 MB' (decimal units)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if size_bytes >= scale:
            return f"{size_bytes / scale:.3g} {unit}"
    return f"{size_bytes:.0f} B"


def draw_efficiency(
    ax: Axes,
    curves: Mapping[str, pd.DataFrame],
    band: bool = True,
    styles: Mapping[str, dict] | None = None,
) -> None:
    """One line per curve (the mean), the 5–95 % band shaded and the median dashed."""
    for n, (label, df) in enumerate(curves.items()):
        style = {"color": COLORS[n % len(COLORS)], "lw": 2.0, **((styles or {}).get(label, {}))}
        ax.plot(df["size_bytes"], df["mean"], label=f"{label} (mean)", **style)
        if band:
            ax.fill_between(
                df["size_bytes"],
                df["p5"],
                df["p95"],
                color=style["color"],
                alpha=0.15,
                lw=0,
                label=f"{label} (5–95 %)",
            )
            ax.plot(
                df["size_bytes"],
                df["p50"],
                color=style["color"],
                lw=1.0,
                ls="--",
                label=f"{label} (median)",
            )
    ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("flow size")
    ax.set_ylabel("protocol efficiency  E = L_O / L_S")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: size_label(x)))
    ax.grid(True, which="major", alpha=0.3)
    ax.grid(True, which="minor", axis="x", alpha=0.1)


def save(fig: Figure, path: str | os.PathLike[str]) -> Path:
    """Render with the Agg canvas and write the PNG atomically."""
    FigureCanvasAgg(fig)
    return _atomic.write_with(
        Path(path), lambda tmp: fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight")
    )


def efficiency_figure(
    curves: Mapping[str, pd.DataFrame], path: str | os.PathLike[str], title: str
) -> Path:
    """A single-panel efficiency-vs-size figure written to ``path``."""
    fig = Figure(figsize=(7.5, 4.8))
    ax = fig.add_subplot(1, 1, 1)
    draw_efficiency(ax, curves)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    return save(fig, path)
