"""The study's figures: each path's throughput–delay plane and RTT distributions (drawn by
:mod:`latlab.compare.figures`, copied beside the report), and the shares against CUBIC."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd

from latlab.compare.runner import PLANE_PNG, RTT_PNG
from latlab.studies.countermeasures.cases import BASELINE
from latlab.studies.countermeasures.findings import SHARE_HIGH, SHARE_LOW
from latlab.studies.countermeasures.metrics import StudyData

SHARE_PNG = "fig_share.png"


def plane_name(path: str) -> str:
    return f"fig_{path}_plane.png"


def rtt_name(path: str) -> str:
    return f"fig_{path}_rtt.png"


def share_figure(results: pd.DataFrame):
    """Per path, each scheme's share against CUBIC: mean bar, seed range as an error bar."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = list(dict.fromkeys(results["path"]))
    fig, axes = plt.subplots(
        1, len(paths), figsize=(4.2 * len(paths), 5.5), sharex=True, squeeze=False
    )
    for ax, path in zip(axes[0], paths):
        t = results[results["path"] == path].iloc[::-1]
        y = range(len(t))
        mean = t["share_mean"].astype(float)
        err = [mean - t["share_min"].astype(float), t["share_max"].astype(float) - mean]
        colours = ["tab:red" if s == BASELINE else "tab:blue" for s in t["scheme"]]
        ax.barh(list(y), mean, xerr=err, color=colours, alpha=0.8, capsize=2)
        ax.set_yticks(list(y), t["scheme"], fontsize=8)
        for x in (SHARE_LOW, 0.5, SHARE_HIGH):
            ax.axvline(x, color="grey", lw=0.8, ls=":" if x != 0.5 else "-")
        ax.set_xlim(0, 1)
        ax.set_xlabel("share against one CUBIC flow")
        ax.set_title(path)
    fig.suptitle("Share of each scheme's flow against a CUBIC flow (mean, range over seeds)")
    fig.tight_layout()
    return fig


def write_all(data: StudyData, outdir: Path) -> None:
    from latlab.compare.figures import save

    outdir = Path(outdir)
    for path in data.paths:
        for src, dst in ((PLANE_PNG, plane_name(path)), (RTT_PNG, rtt_name(path))):
            if (outdir / path / src).is_file():
                shutil.copyfile(outdir / path / src, outdir / dst)
    save(share_figure(data.results), outdir / SHARE_PNG)
