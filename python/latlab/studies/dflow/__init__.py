"""DFlow: low-latency congestion control for media (O'Hanlon and Carlberg, draft-ohanlon-rmcat-dflow).

The study built DFlow on TFRC (RFC 5348): the receiver also turns "delay
congestion events" (50 ms periods whose queueing delay, current − base
one-way delay, exceeds cd_thresh = 50 ms) into entries of TFRC's
loss-interval history, so the sender's equation rate falls before the
buffer overflows. On an ns-2 dumbbell (2 Mb/s bottleneck, 35-packet DropTail
queue, 120 ms RTT) it ran five DFlow flows, five TFRC flows, and one DFlow
against LEDBAT, TCP Vegas and TCP NewReno, and plotted the TCP throughput
equation against the loss event rate over that path (the "knee").

The package splits the reproduction into :mod:`.cases` (the path, the runs,
the scenario of one run), :mod:`.metrics` (one run reduced to rows and time
series; the sweep), :mod:`.references` (the study's statements as data),
:mod:`.verdicts` (each reference judged against the runs), :mod:`.report`
(the Markdown template: verdict sentences and measured numbers) and
:mod:`.figures`. The TCP equation and Jain's index are latlab models
(:mod:`latlab.models.tcp_equation`, :mod:`latlab.models.fairness`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from latlab.models import tcp_equation as _eq
from latlab.models.fairness import jain_index
from latlab.models.tcp_equation import (
    equation_elasticity,
    knee_loss_event_rate,
    unstable_loss_event_rate,
)
from latlab.studies.dflow.cases import *  # noqa: F403 (the set-up is the study's public vocabulary)
from latlab.studies.dflow.cases import FULL, QUICK, RTT_S, SEGMENT_BYTES, Settings, runs_of
from latlab.studies.dflow.metrics import (
    StudyData,
    bottleneck_series,
    delay_stats,
    flow_series,
    knee_curves,
    run_metrics,
    run_study,
    weighted_quantile,
)
from latlab.studies.dflow.verdicts import verdicts

NAME = "dflow"
DESCRIPTION = (
    "DFlow media congestion control vs TFRC, LEDBAT, Vegas and NewReno on a 2 Mb/s dumbbell: "
    "queueing delay, loss, fairness, the TCP-equation knee"
)

__all__ = [
    "NAME",
    "DESCRIPTION",
    "reproduce",
    "reproduce_with",
    "verdicts",
    "jain_index",
    "tcp_equation_rate_bps",
    "loss_event_rate_for",
    "knee_loss_event_rate",
    "equation_elasticity",
    "unstable_loss_event_rate",
    "StudyData",
    "bottleneck_series",
    "delay_stats",
    "flow_series",
    "knee_curves",
    "run_metrics",
    "run_study",
    "weighted_quantile",
]


def tcp_equation_rate_bps(
    p: Any,
    rtt_s: float = RTT_S,
    segment_bytes: float = SEGMENT_BYTES,
    b: float = 1.0,
    t_rto_s: float | None = None,
) -> np.ndarray:
    """The TCP equation (:func:`latlab.models.tcp_equation.tcp_equation_rate_bps`) with this study's s by default."""
    return _eq.tcp_equation_rate_bps(p, rtt_s, segment_bytes, b, t_rto_s)


def loss_event_rate_for(
    rate_bps: float, rtt_s: float = RTT_S, segment_bytes: float = SEGMENT_BYTES
) -> float:
    """The p at which the equation gives ``rate_bps`` over this study's path by default."""
    return _eq.loss_event_rate_for(rate_bps, rtt_s, segment_bytes)


def reproduce(outdir: Path, quick: bool = False, jobs: int | None = None) -> Path:
    """Run the study into ``outdir``: runs/ (the sweep), Parquet tables, PNG figures and report.md."""
    return reproduce_with(QUICK if quick else FULL, Path(outdir), jobs=jobs, quick=quick)


def reproduce_with(
    settings: Settings,
    outdir: Path,
    jobs: int | None = None,
    quick: bool = False,
    progress: bool = True,
) -> Path:
    """:func:`reproduce` with explicit settings (tests use tiny ones)."""
    from latlab import frames as frames_mod
    from latlab._atomic import write_text
    from latlab.studies.dflow import figures as figs
    from latlab.studies.dflow.report import render
    from latlab.sweep import default_jobs

    outdir.mkdir(parents=True, exist_ok=True)
    jobs = jobs or default_jobs()
    runs = runs_of(settings)
    t0 = time.monotonic()
    data = run_study(runs, outdir, jobs, progress=progress)
    elapsed_s = time.monotonic() - t0
    curves = knee_curves()
    for table, name in (
        (data.runs, "results"),
        (data.flows, "flows"),
        (data.flow_series, "flow_series"),
        (data.bottleneck_series, "bottleneck_series"),
        (curves, "knee"),
    ):
        frames_mod.write_parquet(table, outdir / f"{name}.parquet")
    figures = figs.make_figures(data, curves, settings, outdir)
    report = outdir / "report.md"
    write_text(report, render(data, settings, quick, jobs, elapsed_s, figures))
    return report
