"""MPTCP proxy: a protocol converter between MPTCP clients and legacy TCP servers, with per-subflow throttling.

The study put an HTTP proxy that converts MPTCP to TCP between a
two-interface client (Ethernet and Wi-Fi) and a legacy web server, and
measured single-path TCP on each path, MPTCP through the proxy, the
client's receive buffer (0.18 against 0.72 MB), a smaller MTU, throttling
the wired subflow at the proxy during a 5 MB and a 200 MB download, and the
proxy's conversion delays.

The package splits the reproduction into :mod:`.cases` (the testbed, the
runs, the scenario of one run), :mod:`.metrics` (a run reduced to a
connection row and per-subflow throughput over time), :mod:`.references`
(the study's statements as data), :mod:`.verdicts`, :mod:`.report` and
:mod:`.figures`. MPTCP itself is latlab's (docs/models/mptcp.md).
"""

from __future__ import annotations

import time
from pathlib import Path

from latlab.studies.mptcp.cases import FULL, QUICK, Run, Settings, build, runs_of, supports
from latlab.studies.mptcp.metrics import StudyData, run_study
from latlab.studies.mptcp.verdicts import verdicts

NAME = "mptcp"
DESCRIPTION = (
    "MPTCP through an MPTCP-to-TCP proxy over wired + Wi-Fi: subflow shares, receive buffer, MTU, "
    "throttling the wired subflow, conversion delay"
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
    "supports",
]


#: This study has a real-network part (``latlab reproduce mptcp --real``).
SUPPORTS_REAL = True


class MptcpUnavailable(RuntimeError):
    """This build's simulator has no MPTCP flows."""


def reproduce(
    outdir: Path, quick: bool = False, jobs: int | None = None, real: bool = False
) -> Path:
    """Run the study into ``outdir``: runs/ (the sweep), Parquet tables, PNG figures and report.md.

    ``real`` also runs the experiments on real Linux MPTCP through latlab's
    proxy in network namespaces (root and MPTCP; :mod:`latlab.studies.mptcp.real`),
    beside the simulated rows, into the report's last section and
    ``real.jsonl``; without root or MPTCP it raises
    :class:`~latlab.studies.mptcp.real.RealUnavailable` before simulating.
    """
    return reproduce_with(QUICK if quick else FULL, Path(outdir), jobs=jobs, quick=quick, real=real)


def reproduce_with(
    settings: Settings,
    outdir: Path,
    jobs: int | None = None,
    quick: bool = False,
    progress: bool = True,
    real: bool = False,
) -> Path:
    """:func:`reproduce` with explicit settings (tests use tiny ones).

    Without the proxy node in this build, the MPTCP runs go end to end (no
    split connection; no throttling or conversion-delay runs) and the report
    says so.
    """
    from latlab import frames as frames_mod
    from latlab._atomic import write_text
    from latlab.studies.mptcp import figures as figs
    from latlab.studies.mptcp.report import render
    from latlab.sweep import default_jobs

    if real:
        from latlab.studies.mptcp import real as real_mod

        reason = real_mod.unavailable_reason()
        if reason:
            raise real_mod.RealUnavailable(reason)
    if not supports("mptcp"):
        raise MptcpUnavailable(
            'this build\'s simulator has no MPTCP flows (kind = "mptcp"); rebuild latlab'
        )
    proxy = supports("proxy")
    outdir.mkdir(parents=True, exist_ok=True)
    jobs = jobs or default_jobs()
    runs = runs_of(settings, proxy=proxy)
    t0 = time.monotonic()
    data = run_study(
        runs, outdir, jobs, figure_seed=settings.figure_seed, progress=progress, proxy=proxy
    )
    elapsed_s = time.monotonic() - t0
    for table, name in (
        (data.conns, "connections"),
        (data.series, "subflow_series"),
        (data.runs, "runs"),
    ):
        frames_mod.write_parquet(table, outdir / f"{name}.parquet")
    figures = figs.make_figures(data, settings, outdir)
    real_md = None
    if real:
        real_md = real_mod.real_section(
            outdir,
            quick,
            sim_rows=data.conns.to_dict("records"),
            progress=real_mod.print_row if progress else None,
        )
    elif not quick and (outdir / "real.jsonl").exists():
        # A full reproduction into a folder that holds an earlier run's real rows shows them again.
        from latlab.studies.mptcp import real as real_mod

        real_md = real_mod.earlier_section(outdir, sim_rows=data.conns.to_dict("records"))
    report = outdir / "report.md"
    write_text(
        report, render(data, settings, quick, jobs, elapsed_s, figures, real_section=real_md)
    )
    return report
