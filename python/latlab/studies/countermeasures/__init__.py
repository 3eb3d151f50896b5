"""Who fixes bufferbloat? Every countermeasure on the same three paths (issue 31, point 7).

On an LTE cell with a bloated per-user queue, a Wi-Fi access point with a
shared buffer and the pacing study's small-buffer dumbbell, the study puts
side by side CUBIC over DropTail (the baseline), CUBIC with the RTAC and
DRWA receivers, Vegas, LEDBAT and BBR senders, CoDel, FQ-CoDel and PIE at
the bottleneck with and without ECN, and the edge pacer where it applies.
For each: goodput, p50/p95/p99 RTT, and the share against a CUBIC
competitor.

The paths and schemes are data (``study.toml``, read by :mod:`.cases`); each
path is one ``latlab compare`` run (:func:`latlab.compare.run`: every scheme
alone and against CUBIC over seeds, through the sweep runner, so finished runs
are kept under ``OUTDIR/<path>/runs/`` and a re-run does only what is missing).
:mod:`.metrics` gathers the tables and reads the bottleneck's queue and the
senders' windows from the runs; :mod:`.findings` turns the numbers into the
report's sentences; :mod:`.report` and :mod:`.figures` write the rest.
"""

from __future__ import annotations

import time
from pathlib import Path

NAME = "countermeasures"
DESCRIPTION = (
    "Who fixes bufferbloat? Receiver, sender, queue (CoDel, FQ-CoDel, PIE, ECN) and edge "
    "countermeasures on LTE, Wi-Fi and a small-buffer dumbbell"
)
#: ``latlab reproduce --schemes`` applies to this study.
SUPPORTS_SCHEMES = True


def reproduce(
    outdir: Path, quick: bool = False, jobs: int | None = None, schemes: str | None = None
) -> Path:
    """Run every path's comparison into ``outdir``; write results.csv, figures and report.md.

    ``schemes`` filters the schemes by name (see :func:`.cases.parse_filter`);
    the report names the filter.
    """
    import click

    import latlab.compare
    from latlab._atomic import write_text
    from latlab.studies.countermeasures import cases, figures, metrics, report

    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    paths = cases.specs(schemes)
    _check(paths)
    started = time.monotonic()
    for k, case in enumerate(paths, 1):
        spec = case.spec
        n_seeds = min(len(spec.seeds), 2) if quick else len(spec.seeds)
        click.echo(
            f"countermeasures: path {k}/{len(paths)} {case.name}: {len(spec.schemes)} schemes × "
            f"{n_seeds} seeds × 2 runs (alone, against CUBIC)",
            err=True,
        )
        latlab.compare.run(spec, outdir / case.name, jobs=jobs, quick=quick)
    data = metrics.gather(paths, outdir, quick)
    wall_s = time.monotonic() - started
    metrics.write(data, outdir)
    figures.write_all(data, outdir)
    path = outdir / "report.md"
    write_text(path, report.render(data, quick=quick, schemes=schemes, wall_s=wall_s))
    return path


def _check(paths: list) -> None:
    """Every path's schemes checked by the core before anything runs (compare's own check)."""
    from latlab.compare import CompareError, translate

    for case in paths:
        try:
            translate.check(case.spec)
        except CompareError as e:
            raise type(e)(
                f"{e}; the study runs no scheme until every one is valid: leave schemes out "
                "with --schemes (e.g. --schemes '~*+ecn' without the ECN schemes)"
            ) from None
