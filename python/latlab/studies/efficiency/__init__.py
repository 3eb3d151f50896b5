"""Short-flow protocol efficiency in 3.5G and 4G networks (Garcia, Alfredsson and Brunstrom, WiOpt 2014).

The study modelled the completion time of short TCP flows, drove the model
with throughput and RTT distributions measured in 3.5G (HSPA+) and 4G (LTE)
networks in a Monte-Carlo simulation, and found that 4G's better latency and
throughput nevertheless give lower protocol efficiency.

``reproduce`` runs five stages (:mod:`.metrics`) and writes a Markdown report
(:mod:`.report`) whose comparisons with the study come from verdicts
(:mod:`.verdicts`) on the study's findings (:mod:`.references`):

1. simulates the loaded handshake RTT (one background flow) for each profile
   (:mod:`latlab.models.loaded_rtt`) and writes it as a profile variant;
2. runs the Monte-Carlo (:mod:`latlab.models.montecarlo`): efficiency versus
   flow size on a log grid 1 KB – 10 MB, mean and 5/50/95 percentiles, per
   profile, single flow and with one background flow, for the study's
   published formula and the exact model: the study's two figures;
3. tabulates the options the study did not have (TFO, larger IW, delayed ACKs)
   and the sensitivity to the capacity rule;
4. cross-checks the exact model against finite flows in the packet simulator
   over a lossless link (:mod:`latlab.models.simcheck`), also with delayed ACKs;
5. measures how far the lossless model is from flows that start while a
   background flow fills the buffer.

Simulations go through :func:`run_scenarios`, which hands them to latlab's
sweep runner (:mod:`latlab.sweep`): every core by default, and the runs are
kept under ``OUTDIR/runs/`` so an interrupted reproduction resumes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from latlab.studies.efficiency.cases import (
    FULL,
    NOTE_SIZES,
    PROFILES,
    QUICK,
    REFERENCE_SIZE,
    SEED,
    Settings,
    run_scenarios,
)
from latlab.studies.efficiency.metrics import (
    loaded_check,
    lossless_check,
    monte_carlo,
    options_table,
    simulate_loaded_rtt,
)

NAME = "efficiency"
DESCRIPTION = "Short-flow TCP protocol efficiency in 3.5G vs 4G: latency model, Monte-Carlo, simulator cross-check"

__all__ = [
    "NAME",
    "DESCRIPTION",
    "FULL",
    "QUICK",
    "NOTE_SIZES",
    "PROFILES",
    "REFERENCE_SIZE",
    "SEED",
    "Settings",
    "run_scenarios",
    "simulate_loaded_rtt",
    "monte_carlo",
    "options_table",
    "lossless_check",
    "loaded_check",
    "reproduce",
]


def reproduce(outdir: Path, quick: bool = False, jobs: int | None = None) -> Path:
    """Run the whole study into ``outdir``: Parquet data, PNG figures, profile variants and report.md."""
    from latlab import frames as frames_mod
    from latlab._atomic import write_text
    from latlab.models import profiles
    from latlab.studies.efficiency import figures as figs
    from latlab.studies.efficiency.report import render

    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    settings = QUICK if quick else FULL

    loaded = simulate_loaded_rtt(settings, jobs, outdir)
    curves = monte_carlo(loaded["profiles"], settings)
    options = options_table(loaded["profiles"], settings)
    check = lossless_check(loaded["profiles"], settings, jobs, outdir / "runs" / "lossless-check")
    lcheck = loaded_check(loaded, settings, jobs, outdir / "runs" / "loaded-check")

    samples = pd.concat(
        [pd.DataFrame({"profile": k, "rtt_s": v}) for k, v in loaded["samples"].items()],
        ignore_index=True,
    )
    for table, name in (
        (curves, "efficiency"),
        (options, "options"),
        (check, "crosscheck"),
        (lcheck, "loaded_check"),
        (samples, "loaded_rtt_samples"),
        (loaded["runs"], "loaded_rtt_runs"),
    ):
        frames_mod.write_parquet(table, outdir / f"{name}.parquet")

    rng = np.random.default_rng(SEED)
    unloaded = {name: profiles.load(name).rtt_ms.sample(20_000, rng) / 1e3 for name in PROFILES}
    names = list(PROFILES)
    figs.study_figure(curves, names, 1, outdir / "fig_efficiency_single.png")
    figs.study_figure(curves, names, 2, outdir / "fig_efficiency_background.png")
    figs.crosscheck_figure(check, names, outdir / "fig_crosscheck.png")
    figs.accuracy_figure(check, lcheck, names, outdir / "fig_accuracy.png")
    figs.loaded_rtt_figure(unloaded, loaded["samples"], outdir / "fig_loaded_rtt.png")

    report = outdir / "report.md"
    write_text(report, render(settings, quick, loaded, curves, options, check, lcheck))
    return report
