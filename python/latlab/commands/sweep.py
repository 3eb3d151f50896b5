"""``latlab sweep SWEEP.toml`` runs a parameter sweep; ``latlab results DIR`` summarises one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from latlab.errors import UserError
from latlab.outdir import default_outdir

MAX_FAILURES_SHOWN = 10
DEFAULT_ROWS = 50


def _format(value: Any, kind: str = "") -> str:
    import pandas as pd

    if value is None or (not isinstance(value, (str, bool, list, dict)) and pd.isna(value)):
        return "-"
    if kind == "mbps":
        return f"{value / 1e6:.3f}"
    if kind == "pct":
        return f"{100 * value:.1f}"
    if kind == "s":
        return f"{value:.2f}"
    if kind == "int":
        return f"{int(value):,}"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _param_columns(catalog: Any, meta: dict[str, Any]) -> list[str]:
    names: list[str] = []
    for run in meta.get("runs", []):
        for key in run.get("params", {}):
            col = key if key in catalog.columns else f"param:{key}"
            if col in catalog.columns and col not in names:
                names.append(col)
    return names


def _counts(catalog: Any) -> str:
    counts = catalog["status"].value_counts()
    parts = [
        f"{int(counts.get(s, 0))} {s}" for s in ("ok", "failed", "pending") if counts.get(s, 0)
    ]
    return f"{len(catalog)} runs: " + (", ".join(parts) or "none")


def results_table(catalog: Any, params: list[str], title: str, limit: int | None) -> Any:
    """A rich Table of a catalog: one row per run."""
    import pandas as pd
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    table.add_column("run_id", style="dim", no_wrap=True, min_width=16)
    for p in params:
        table.add_column(p, overflow="fold")
    numeric = [
        ("wall s", "wall_s", "s"),
        ("goodput Mb/s", "mean_goodput_bps", "mbps"),
        ("drops", "drops_pkts", "int"),
        ("util %", "busiest_link_utilization", "pct"),
    ]
    table.add_column("status")
    for header, *_ in numeric:
        table.add_column(header, justify="right")
    table.add_column("conserved")
    show_errors = bool((catalog["status"] == "failed").any())
    if show_errors:
        table.add_column("error", overflow="fold", max_width=60)
    rows = catalog if limit is None else catalog.head(limit)
    style = {"ok": "green", "failed": "red", "pending": "yellow"}
    for _, row in rows.iterrows():
        status = str(row["status"])
        cells = [
            str(row["run_id"]),
            *(_format(row[p]) for p in params),
            f"[{style.get(status, '')}]{status}[/]",
        ]
        cells += [_format(row[col], kind) for _, col, kind in numeric]
        cons = row["conservation_ok"]
        cells.append("-" if pd.isna(cons) else ("yes" if cons else "[red]NO[/]"))
        if show_errors:
            cells.append(_format(row["error"]))
        table.add_row(*cells)
    return table


def grouped_table(catalog: Any, params: list[str], title: str) -> Any:
    """A rich Table with one row per parameter point (seeds pooled): runs, ok, mean ± sd of the metrics."""
    from rich.table import Table

    keys = [p for p in params if p not in ("seed", "param:seed")]
    table = Table(title=title, title_justify="left")
    for p in keys:
        table.add_column(p, overflow="fold")
    for header in (
        "runs",
        "ok",
        "goodput Mb/s (mean ± sd)",
        "drops (mean)",
        "util % (mean)",
        "wall s (mean)",
    ):
        table.add_column(header, justify="right")
    frame = catalog.copy()
    frame["_ok"] = frame["status"] == "ok"
    groups = frame.groupby(keys, sort=False, dropna=False) if keys else [((), frame)]
    for key, g in groups:
        key = key if isinstance(key, tuple) else (key,)
        ok = g[g["_ok"]]
        gp = ok["mean_goodput_bps"].astype(float) / 1e6
        sd = f" ± {gp.std():.3f}" if len(gp) > 1 else ""
        table.add_row(
            *(_format(k) for k in key),
            str(len(g)),
            str(len(ok)),
            f"{gp.mean():.3f}{sd}" if len(gp) else "-",
            _format(ok["drops_pkts"].astype(float).mean()) if len(ok) else "-",
            _format(ok["busiest_link_utilization"].astype(float).mean(), "pct") if len(ok) else "-",
            _format(ok["wall_s"].mean(), "s") if len(ok) else "-",
        )
    return table


def _console() -> Any:
    """A console as wide as the terminal, or wide enough for a table when output goes to a file."""
    from rich.console import Console

    console = Console()
    return console if console.is_terminal else Console(width=max(console.width, 160))


def register(cli: click.Group) -> None:
    @cli.command("sweep")
    @click.argument(
        "sweep_file", metavar="SWEEP.toml", type=click.Path(dir_okay=False, path_type=Path)
    )
    @click.option(
        "-o",
        "--outdir",
        type=click.Path(file_okay=False, path_type=Path),
        help="The sweep folder  [default: out/<sweep name>]",
    )
    @click.option(
        "-j",
        "--jobs",
        type=click.IntRange(min=1),
        help="Parallel runs on this machine, and workers of --dask local  [default: all cores]",
    )
    @click.option(
        "--dask",
        "dask",
        metavar="ADDRESS|local",
        help="Run on a Dask cluster: a scheduler address (tcp://host:8786), a scheduler file "
        "(.json), or 'local' for a LocalCluster on this machine.",
    )
    @click.option(
        "--timeout",
        "timeout_s",
        type=click.FloatRange(min=0, min_open=True),
        metavar="SECONDS",
        help="Time limit per run (replaces the sweep file's timeout_s); a run past it is "
        "killed and recorded as failed.",
    )
    @click.option("--no-retry-failed", is_flag=True, help="Do not redo runs that failed before.")
    @click.option(
        "--inline",
        is_flag=True,
        help="Run in this process, one after another (debugging; no time limit).",
    )
    @click.option(
        "--stale",
        type=click.Choice(["redo", "refuse"]),
        default="redo",
        show_default=True,
        help="Finished runs made by another latlab version or core build: redo them, or refuse "
        "to mix them (exit 2).",
    )
    @click.option("-q", "--quiet", is_flag=True, help="No progress and no summary; only errors.")
    def sweep_cmd(
        sweep_file: Path,
        outdir: Path | None,
        jobs: int | None,
        dask: str | None,
        timeout_s: float | None,
        no_retry_failed: bool,
        inline: bool,
        stale: str,
        quiet: bool,
    ) -> None:
        """Run a parameter sweep: a base scenario over a grid of values and seeds.

        Every run not already finished in the sweep folder is run (on all
        cores, or on a Dask cluster); each gets runs/<run_id>/ (the results
        of `latlab run`, plus status.json), and catalog.parquet lists every
        run with its parameters, status, wall time and summary metrics.
        Interrupt it at any time (Ctrl-C, even kill -9): running the same
        command again does only the runs that are missing or failed.

        Each run records the latlab version and core build that made it; a
        finished run made by another one is redone (or, with --stale refuse,
        the sweep stops before running anything), so a folder never mixes
        results of two builds.

        Exit code 0 when every run is ok, 1 if some failed, 2 for an invalid
        sweep file, scenario or option, or stale runs under --stale refuse.

        \b
        Examples:
          latlab sweep scenarios/sweeps/buffer.toml -o out/buffer
          latlab sweep scenarios/sweeps/buffer.toml -o out/buffer --jobs 2 --timeout 300
          latlab sweep scenarios/sweeps/buffer.toml -o out/buffer --dask local
          latlab sweep scenarios/sweeps/buffer.toml -o out/buffer --dask tcp://scheduler:8786
          latlab results out/buffer
        """
        from rich.console import Console

        from latlab.sweep import StaleRunsError, Sweep, SweepError, run_sweep

        if dask is not None and inline:
            raise click.UsageError("--dask and --inline exclude each other")
        if not sweep_file.is_file():
            raise UserError(f"no such file: {sweep_file}")
        try:
            sweep = Sweep.from_toml(sweep_file)
        except SweepError as e:
            raise UserError(str(e)) from None
        out = outdir if outdir is not None else default_outdir(sweep.name or sweep_file.stem)
        if dask is not None:
            try:
                import distributed  # noqa: F401
            except ImportError:
                raise UserError("--dask needs Dask: pip install 'dask[distributed]'") from None
        try:
            catalog = run_sweep(
                sweep,
                out,
                jobs=jobs,
                dask=dask,
                timeout_s=timeout_s,
                progress=not quiet,
                retry_failed=not no_retry_failed,
                inline=inline,
                stale=stale,
            )
        except (SweepError, StaleRunsError) as e:
            raise UserError(str(e)) from None
        except KeyboardInterrupt:
            if not quiet:
                click.echo(
                    f"interrupted: finished runs are kept in {out}; run the same command to resume",
                    err=True,
                )
            raise
        except (OSError, TimeoutError) as e:
            if dask is not None and dask != "local":
                raise UserError(f"cannot reach the Dask scheduler at {dask}: {e}") from None
            raise

        failed = catalog[catalog["status"] == "failed"]
        if not quiet:
            console = Console()
            console.print(
                f"sweep {sweep.name}: {_counts(catalog)}; catalog: {out / 'catalog.parquet'}"
            )
            for _, row in failed.head(MAX_FAILURES_SHOWN).iterrows():
                console.print(
                    f"[red]failed[/] {row['run_id']}: {row['error']}", markup=True, highlight=False
                )
            if len(failed) > MAX_FAILURES_SHOWN:
                console.print(f"... and {len(failed) - MAX_FAILURES_SHOWN} more failed runs")
            console.print(f"summary: latlab results {out}")
        if len(failed):
            click.get_current_context().exit(1)

    @cli.command("results")
    @click.argument("outdir", metavar="DIR", type=click.Path(file_okay=False, path_type=Path))
    @click.option(
        "--all",
        "show_all",
        is_flag=True,
        help=f"Show every run (default: the first {DEFAULT_ROWS}).",
    )
    @click.option(
        "--failed",
        "only_failed",
        is_flag=True,
        help="Show only the runs that failed, with their errors.",
    )
    @click.option(
        "--group", is_flag=True, help="One row per parameter point, seeds pooled (mean ± sd)."
    )
    def results_cmd(outdir: Path, show_all: bool, only_failed: bool, group: bool) -> None:
        """Summarise a sweep folder: one row per run (parameters, status, metrics).

        The catalog is rebuilt from the runs' status files, so it is current
        even while the sweep runs or after it was killed (catalog.parquet is
        refreshed too). For analysis, read DIR/catalog.parquet with pandas,
        polars or DuckDB, and a run's tables with latlab.sweep.load_run(DIR, RUN_ID).

        \b
        Examples:
          latlab results out/buffer
          latlab results out/buffer --group      # averaged over seeds
          latlab results out/buffer --failed
        """
        from latlab.sweep.store import Store, load_catalog

        if not outdir.is_dir():
            raise UserError(f"no such folder: {outdir}")
        store = Store(outdir)
        try:
            meta = store.read_sweep()
        except FileNotFoundError:
            raise UserError(
                f"{outdir} is not a sweep folder (no sweep.json); `latlab sweep` makes one"
            ) from None
        catalog = load_catalog(outdir)
        params = _param_columns(catalog, meta)
        title = f"sweep {meta.get('name') or outdir.name}: {_counts(catalog)} ({outdir})"
        console = _console()
        if group:
            console.print(grouped_table(catalog, params, title))
            return
        rows = catalog[catalog["status"] == "failed"] if only_failed else catalog
        limit = None if show_all or only_failed else DEFAULT_ROWS
        console.print(results_table(rows, params, title, limit))
        if limit is not None and len(rows) > limit:
            console.print(
                f"... {len(rows) - limit} more runs (--all shows them, --group pools the seeds)"
            )
