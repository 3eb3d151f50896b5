"""``latlab compare SCHEMES.toml``: countermeasures side by side on one path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from latlab.errors import UserError, error_line
from latlab.outdir import default_outdir


def _range(row: Any, name: str, unit: str, scale: float, fmt: str) -> str:
    mean, lo, hi = (row.get(f"{name}_{s}{unit}") for s in ("mean", "min", "max"))
    if mean is None or mean != mean:  # None or NaN
        return "-"
    return f"{mean * scale:{fmt}} [{lo * scale:{fmt}}–{hi * scale:{fmt}}]"


def _ms(value: Any) -> str:
    return "-" if value is None or value != value else f"{value:.1f}"


def table_view(table: Any, title: str) -> Any:
    """A rich Table of a comparison's table (one row per scheme)."""
    from rich.table import Table

    view = Table(title=title, title_justify="left")
    for header in ("scheme", "cc", "rwnd", "queue", "pacing", "ecn", "seeds"):
        view.add_column(header)
    for header in (
        "goodput Mb/s mean [min–max]",
        "RTT p50 / p95 / p99 ms",
        "drops (mean)",
        "share vs CUBIC [min–max]",
    ):
        view.add_column(header, justify="right")
    for row in table.to_dict(orient="records"):
        view.add_row(
            *(str(row[k]) for k in ("scheme", "cc", "rwnd", "queue", "pacing", "ecn", "seeds")),
            _range(row, "goodput", "_bps", 1e-6, ".2f"),
            " / ".join(_ms(row.get(f"rtt_p{q}_ms")) for q in (50, 95, 99)),
            _ms(row.get("drops_mean_pkts")).removesuffix(".0"),
            _range(row, "share", "", 1.0, ".2f"),
        )
    return view


def register(cli: click.Group) -> None:
    @cli.command("compare")
    @click.argument(
        "schemes_file", metavar="SCHEMES.toml", type=click.Path(dir_okay=False, path_type=Path)
    )
    @click.option(
        "-o",
        "--outdir",
        type=click.Path(file_okay=False, path_type=Path),
        help="Folder for the runs, the table, the figures and the numbers  [default: out/<name>]",
    )
    @click.option(
        "--seeds",
        type=click.IntRange(min=1),
        metavar="N",
        help="Run seeds 1..N instead of the file's seeds.",
    )
    @click.option(
        "-j", "--jobs", type=click.IntRange(min=1), help="Parallel runs  [default: all cores]"
    )
    @click.option(
        "--quick",
        is_flag=True,
        help="A quarter of the duration and measurement window, at most two seeds.",
    )
    @click.option("-q", "--quiet", is_flag=True, help="No progress and no table; only errors.")
    def compare_cmd(
        schemes_file: Path,
        outdir: Path | None,
        seeds: int | None,
        jobs: int | None,
        quick: bool,
        quiet: bool,
    ) -> None:
        """Compare schemes (controller, receiver window, queue, pacing, ECN) on one path.

        SCHEMES.toml names a path (a scenario file or inline topology keys),
        the seeds, flows per scheme, the duration and measurement window, and
        the schemes (docs/guide/compare.md). Every scheme runs at every seed
        alone on the path and, one flow each, against a CUBIC flow through the
        same bottleneck. OUTDIR gets table.csv (per scheme: goodput mean and
        range over seeds, RTT p50/p95/p99 of the samples of all seeds, drops,
        share against CUBIC), seeds.csv (the same per seed, with run ids),
        compare.json (both), plane.png (p95 RTT against goodput, one point per
        seed, a 1-sigma covariance ellipse per scheme), rtt.png (RTT CDFs) and
        the runs themselves (runs/<run_id>/, catalog.parquet). Runs finished
        in OUTDIR before are not run again: an interrupted comparison resumes.

        Exit code 0 when every run is ok, 1 if some failed, 2 for an invalid
        scheme file or option.

        \b
        Examples:
          latlab compare scenarios/compare/lte.toml -o out/compare
          latlab compare scenarios/compare/lte.toml -o out/compare --seeds 5 --jobs 2
          latlab compare scenarios/compare/lte.toml --quick
        """
        from rich.console import Console

        from latlab.compare import CompareError, CompareFailed, load, run

        if not schemes_file.is_file():
            raise UserError(f"no such file: {schemes_file}")
        try:
            spec = load(schemes_file)
            out = outdir if outdir is not None else default_outdir(spec.name)
            table = run(spec, out, seeds=seeds, jobs=jobs, quick=quick, progress=not quiet)
        except CompareError as e:
            raise UserError(str(e)) from None
        except CompareFailed as e:
            error_line(str(e))
            click.get_current_context().exit(1)
        if not quiet:
            console = Console()
            if not console.is_terminal:  # a log or a pipe: wide enough for the table
                console = Console(width=max(console.width, 180))
            console.print(table_view(table, f"{spec.name} ({out})"))
            console.print(
                f"table: {out / 'table.csv'}; plane: {out / 'plane.png'}; RTT: {out / 'rtt.png'}"
            )
