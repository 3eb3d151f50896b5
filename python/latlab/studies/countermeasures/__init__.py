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

``--real`` (root) adds the real part (:mod:`.real`, :mod:`.real_report`): the
Linux-capable schemes (CUBIC, BBR, Reno through DropTail, CoDel, FQ-CoDel and
PIE; CUBIC with ECN) on real Linux TCP over the emulated paths, each beside
the same scenario simulated.
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
#: This study has a real-network part (``latlab reproduce countermeasures --real``).
SUPPORTS_REAL = True


def reproduce(
    outdir: Path,
    quick: bool = False,
    jobs: int | None = None,
    schemes: str | None = None,
    real: bool = False,
) -> Path:
    """Run every path's comparison into ``outdir``; write results.csv, figures and report.md.

    ``schemes`` filters the schemes by name (see :func:`.cases.parse_filter`),
    the real part's too; the report names the filter. ``real`` then runs the
    real part (root; :mod:`.real`); without root it raises
    :class:`~latlab.real.emulated.EmulationUnavailable` before anything runs.
    A report written without ``real`` into a folder that holds a real part's
    rows (``real.jsonl``) shows them again.
    """
    import click

    import latlab.compare
    from latlab._atomic import write_text
    from latlab.studies.countermeasures import cases, figures, metrics, report

    outdir = Path(outdir)
    paths = cases.specs(schemes)
    _check(paths)
    if real:
        _require_real()
    outdir.mkdir(parents=True, exist_ok=True)
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
    real_rows = _real_part(paths, outdir, quick, schemes) if real else _earlier_rows(outdir)
    path = outdir / "report.md"
    write_text(
        path,
        report.render(
            data,
            quick=quick,
            schemes=schemes,
            wall_s=wall_s,
            real=_real_text(real_rows, paths, quick, schemes) if real_rows else None,
        ),
    )
    return path


def _require_real() -> None:
    from latlab.real.emulated import EmulationUnavailable
    from latlab.studies.countermeasures import real

    reason = real.unavailable_reason()
    if reason is not None:
        raise EmulationUnavailable(reason)


def _real_part(paths: list, outdir: Path, quick: bool, schemes: str | None) -> list[dict]:
    """The real part's rows (run now, or kept from an earlier run with the same settings)."""
    import click

    from latlab.studies.countermeasures import cases, real

    settings = real.QUICK if quick else real.FULL
    todo = real.cases(paths, settings, *cases.parse_filter(schemes))
    click.echo(
        f"countermeasures: real part: {len(todo)} cases, each simulated, then each on real Linux TCP "
        f"({settings.duration_s:g} s per run)",
        err=True,
    )
    return real.run_all(todo, outdir, settings, on_row=_print_real_row)


def _earlier_rows(outdir: Path) -> list[dict]:
    from latlab.studies._real_runs import load_rows
    from latlab.studies.countermeasures.real import REAL_JSONL, latest

    jsonl = Path(outdir) / REAL_JSONL
    return latest(load_rows(jsonl)) if jsonl.exists() else []


def _real_text(rows: list[dict], paths: list, quick: bool, schemes: str | None) -> tuple[str, str]:
    """The real part's section and its summary line, from its rows (their own settings)."""
    import dataclasses

    from latlab.studies.countermeasures import real, real_report

    base = real.QUICK if quick else real.FULL
    settings = dataclasses.replace(
        base, duration_s=rows[0]["duration_s"], measure_from_s=rows[0]["measure_from_s"]
    )
    command = "latlab reproduce countermeasures --real" + (" --quick" if quick else "")
    if schemes:
        command += f" --schemes '{schemes}'"
    section = real_report.render(
        rows,
        settings,
        command,
        titles={p.name: p.title for p in paths},
        seeds={p.name: p.spec.seeds[0] for p in paths},
    )
    return section, real_report.summary_sentence(rows)


def _print_real_row(row: dict) -> None:
    import click

    if row.get("skipped"):
        text = f"skipped: {row['skipped']}"
    else:
        text = f"{row['goodput_mbps']:6.2f} Mbit/s, p95 srtt {row['rtt_p95_ms'] or float('nan'):6.0f} ms"
    click.echo(
        f"countermeasures: {row['mode']:4s} {row['path']:8s} {row['scheme']:20s} {text}", err=True
    )


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
