"""Edge versus host pacing in small-buffer networks (Sivaraman, ElGindy, Moreland and Ostry, IEEE/ACM ToN 2009).

The study fed 1000 long TCP Reno flows through a two-level dumbbell (10
edges × 100 hosts) into a 100 Mbps core with a DropTail buffer of a few KB,
and compared no pacing, TCP host pacing and an optimal edge pacer at the
ingress edges (experiments A–J), with ns-2; experiment K (BBR senders) is latlab's addition.

``reproduce`` builds every experiment's runs (:mod:`.cases`), runs the
distinct scenarios once through latlab's sweep runner (resumable: an
interrupted reproduction picks up where it stopped), turns each run into a
row of metrics (:mod:`.metrics`), judges the study's reference points
(:mod:`.references`, :mod:`.verdicts`) and writes Parquet tables, figures
(:mod:`.figures`) and report.md (:mod:`.report`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from latlab.studies.pacing.cases import FULL, QUICK, Run, Settings, all_runs
from latlab.studies.pacing.metrics import estimate_full_s, finished_runs, metrics, run_study

if TYPE_CHECKING:
    import pandas as pd

NAME = "pacing"
DESCRIPTION = "Edge vs host pacing in small-buffer networks: 1000 TCP flows, core buffer 1–50 KB, experiments A–J, and K with BBR senders"

__all__ = [
    "NAME",
    "DESCRIPTION",
    "FULL",
    "QUICK",
    "Run",
    "Settings",
    "all_runs",
    "estimate_full_s",
    "metrics",
    "run_study",
    "reproduce",
    "report_finished",
]


def reproduce(outdir: Path, quick: bool = False, jobs: int | None = None) -> Path:
    """Run the study into ``outdir``: runs/ (the sweep), results.parquet, PNG figures and report.md."""
    from latlab.sweep import default_jobs

    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    settings = QUICK if quick else FULL
    jobs = jobs or default_jobs()
    t0 = time.monotonic()
    table = run_study(all_runs(settings), outdir, jobs)
    return _write(table, settings, outdir, quick, jobs, time.monotonic() - t0)


def report_finished(outdir: Path, quick: bool = False) -> Path:
    """Write results.parquet, figures and report.md from the runs already finished in ``outdir`` (runs nothing).

    For an interrupted or still running reproduction: the report says how many runs are missing.
    """
    outdir = Path(outdir)
    settings = QUICK if quick else FULL
    t0 = time.monotonic()
    table = finished_runs(all_runs(settings), outdir)
    return _write(table, settings, outdir, quick, 0, time.monotonic() - t0)


def _write(
    table: pd.DataFrame, settings: Settings, outdir: Path, quick: bool, jobs: int, elapsed: float
) -> Path:
    from latlab import frames as frames_mod
    from latlab._atomic import write_text
    from latlab.studies.pacing.figures import make_figures
    from latlab.studies.pacing.report import render

    frames_mod.write_parquet(table, outdir / "results.parquet")
    figures = make_figures(table, settings, outdir)
    report = outdir / "report.md"
    write_text(report, render(table, settings, quick, jobs, elapsed, figures))
    return report
