"""RTAC: receiver-side TCP adaptive queue control against bufferbloat, beside DRWA and Linux auto-tuning.

The study (Im, Joo, Lee, Bahk) let the phone's receiver bound the data in
flight by the window it advertises: Linux auto-tuning (the default, which
only grows the window up to tcp_rmem_max), DRWA (Jiang et al., a Vegas-like
receiver: λ·(RTT_min/RTT)·ŵ) and RTAC (the window a Reno sender would hold
under an emulated AQM price, K·(Q̂ + 1)). It measured downloads over LTE and
Wi-Fi: auto-tuning against tcp_rmem_max, one flow per receiver, two and three
clients in competition, and five sender variants.

The package splits the reproduction into :mod:`.cases` (the paths, the runs,
the scenario of one run), :mod:`.metrics` (a run reduced to per-flow rows;
the sweep), :mod:`.references` (the study's figures as data),
:mod:`.verdicts`, :mod:`.report` and :mod:`.figures`. The receivers
themselves are latlab's (docs/models/receiver-window.md).
"""

from __future__ import annotations

import time
from pathlib import Path

from latlab.studies.rtac.cases import FULL, QUICK, Run, Settings, build, runs_of
from latlab.studies.rtac.metrics import StudyData, run_study
from latlab.studies.rtac.real import RealSettings
from latlab.studies.rtac.verdicts import verdicts

NAME = "rtac"
DESCRIPTION = (
    "RTAC vs DRWA vs Linux auto-tuning receivers on LTE and Wi-Fi: throughput, RTT, competition, "
    "tcp_rmem_max, sender variants"
)

__all__ = [
    "NAME",
    "DESCRIPTION",
    "reproduce",
    "reproduce_with",
    "verdicts",
    "Run",
    "Settings",
    "build",
    "runs_of",
    "StudyData",
    "run_study",
    "FULL",
    "QUICK",
]


#: This study has a real-network part (``latlab reproduce rtac --real``).
SUPPORTS_REAL = True


def reproduce(
    outdir: Path, quick: bool = False, jobs: int | None = None, real: bool = False
) -> Path:
    """Run the study into ``outdir``: runs/ (the sweep), Parquet tables, PNG figures and report.md.

    ``real`` also runs the receivers on real Linux TCP over an emulated path
    (root; :mod:`latlab.studies.rtac.real`), each beside its simulated twin,
    into report section 6 and ``real.jsonl``. Without root it raises
    :class:`~latlab.real.emulated.EmulationUnavailable` before anything runs.
    """
    real_settings = (
        (
            RealSettings(
                seconds=20.0,
                warmup_s=5.0,
                competition_seconds=60.0,
                competition_warmup_s=20.0,
                thetas=(1.38, 2.0),
                repeats=1,
                shallow_buffer_packets=None,
            )
            if quick
            else RealSettings()
        )
        if real
        else None
    )
    return reproduce_with(
        QUICK if quick else FULL, Path(outdir), jobs=jobs, quick=quick, real=real_settings
    )


def reproduce_with(
    settings: Settings,
    outdir: Path,
    jobs: int | None = None,
    quick: bool = False,
    progress: bool = True,
    real: RealSettings | None = None,
) -> Path:
    """:func:`reproduce` with explicit settings (tests use tiny ones)."""
    from latlab import frames as frames_mod
    from latlab._atomic import write_text
    from latlab.studies.rtac import figures as figs
    from latlab.studies.rtac import real as real_mod
    from latlab.studies.rtac.report import render
    from latlab.sweep import default_jobs

    if real is not None:
        reason = real_mod.unavailable_reason()
        if reason is not None:
            from latlab.real.emulated import EmulationUnavailable

            raise EmulationUnavailable(reason)
    outdir.mkdir(parents=True, exist_ok=True)
    jobs = jobs or default_jobs()
    runs = runs_of(settings)
    t0 = time.monotonic()
    data = run_study(runs, outdir, jobs, progress=progress)
    elapsed_s = time.monotonic() - t0
    for table, name in (
        (data.flows, "flows"),
        (data.rtt_samples, "rtt_samples"),
        (data.runs, "runs"),
    ):
        frames_mod.write_parquet(table, outdir / f"{name}.parquet")
    figures = figs.make_figures(data, settings, outdir)
    real_section = None
    if real is not None:
        t1 = time.monotonic()
        kept: list[tuple[int, str, int]] = []
        rows = real_mod.run_real(
            real, outdir, on_row=_print_real_row if progress else None, kept_runs=kept
        )
        command = "latlab reproduce rtac --real" + (" --quick" if quick else "")
        resumed = (
            f"; {len(kept)} case runs were found finished in `real.jsonl` with the same settings and kept, not "
            "run again"
            if kept
            else ""
        )
        real_section = (
            real_mod.render(rows, real, command)
            + f"\nThe real runs took {time.monotonic() - t1:.0f} s of wall time{resumed}; rows in "
            "`real.jsonl`.\n"
        )
    elif not quick and (outdir / "real.jsonl").exists():
        # A full reproduction into a folder that holds an earlier run's real rows shows them again.
        real_section = real_mod.earlier_section(outdir)
    report = outdir / "report.md"
    write_text(report, render(data, settings, quick, jobs, elapsed_s, figures, real_section))
    return report


def _print_real_row(row: dict) -> None:
    print(
        f"real runs: {row['mode']:4s} {row['receiver']:10s} with {row['with']:12s} "
        f"{row['goodput_mbps']:6.2f} Mbit/s, RTT {row['rtt_mean_ms']:5.0f} ms",
        flush=True,
    )
