"""The ``latlab`` command: run, validate and benchmark scenarios.

User mistakes (an invalid scenario, a missing file, a bad flag) end in one red
``error: ...`` line on stderr and exit code 2, never a traceback; Ctrl-C ends
with exit code 130. A traceback means a bug in latlab: set ``LATLAB_DEBUG=1``
to see tracebacks for every error.

Heavy imports (pandas, matplotlib) happen inside the commands so that
``latlab --help`` answers instantly.
"""

from __future__ import annotations

import errno
import json
import os
import re
import sys
import warnings
from pathlib import Path
from typing import Any

import click

from latlab import builtin
from latlab.errors import (
    EXIT_USER_ERROR,
    ConservationWarning,
    CoreNotBuiltError,
    ScenarioError,
    SimulationError,
    UserError,
)
from latlab.errors import error_line as _error_line
from latlab.outdir import default_outdir

EXIT_INTERRUPTED = 130

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def _debug() -> bool:
    return os.environ.get("LATLAB_DEBUG", "") not in ("", "0")


class LatlabGroup(click.Group):
    """A click group that turns known exceptions into one-line messages and exit codes."""

    def main(
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
            code = rv if isinstance(rv, int) else 0
        except click.exceptions.NoArgsIsHelpError as e:
            e.show()
            code = e.exit_code
        except click.UsageError as e:
            hint = f" (see '{e.ctx.command_path} --help')" if e.ctx is not None else ""
            _error_line(f"{e.format_message().rstrip('.')}{hint}")
            code = e.exit_code
        except click.ClickException as e:
            e.show()
            code = e.exit_code
        except click.Abort as e:
            interrupted = isinstance(e.__cause__ or e.__context__, KeyboardInterrupt)
            _error_line("interrupted" if interrupted else "aborted")
            code = EXIT_INTERRUPTED if interrupted else 1
        except KeyboardInterrupt:
            _error_line("interrupted")
            code = EXIT_INTERRUPTED
        except Exception as e:  # noqa: BLE001 - mapped below, re-raised if unknown
            if _debug():
                raise
            code = self._report(e)
        if standalone_mode:
            sys.exit(code)
        return code

    @staticmethod
    def _report(e: Exception) -> int:
        """One line for exceptions a user can act on; re-raise the rest (they are bugs)."""
        if isinstance(e, ScenarioError):
            _error_line(str(e))
            return EXIT_USER_ERROR
        if isinstance(e, CoreNotBuiltError):
            _error_line(str(e))
            return 1
        if isinstance(e, SimulationError):
            _error_line(f"the simulation failed (this is a latlab bug; please report it): {e}")
            return 1
        if isinstance(
            e, (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError)
        ):
            reason = e.strerror or str(e)
            _error_line(f"{reason}: {e.filename}" if e.filename else reason)
            return EXIT_USER_ERROR
        if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EROFS, errno.EDQUOT):
            _error_line(f"{e.strerror}: {e.filename}" if e.filename else str(e))
            return 1
        raise e


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from latlab._native import core_version
    from latlab._version import __version__

    core = core_version()
    click.echo(f"latlab {__version__} (core: {core or 'not built'})")
    ctx.exit()


@click.group(name="latlab", cls=LatlabGroup, context_settings=CONTEXT_SETTINGS)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and exit.",
)
def cli() -> None:
    """latlab: a laboratory for transport-layer latency.

    Simulates TCP flows over a packet-level network described in a TOML
    scenario file, and saves per-flow and per-link results (Parquet tables)
    and an overview figure.

    \b
    Examples:
      latlab run default                       # the built-in demo scenario
      latlab run scenarios/red-custom.toml -o out/red --seed 7
      latlab validate my-scenario.toml
      latlab bench --quick                     # a quick speed check

    Run 'latlab COMMAND --help' for the options of one command.
    """


# ----- helpers -------------------------------------------------------------


def load_scenario(arg: str):  # noqa: ANN201 - latlab.Scenario, imported lazily
    """A scenario from a file path, or from a built-in name when no such file exists."""
    from latlab.scenario import Scenario

    path = Path(arg)
    if path.is_dir():
        raise UserError(f"{arg} is a directory; expected a scenario TOML file")
    if path.is_file():
        return Scenario.from_toml(path)
    if builtin.exists(arg):
        return Scenario.builtin(arg)
    hint = "" if arg.endswith(".toml") else f" (built-in scenarios: {', '.join(builtin.names())})"
    raise UserError(f"no such file: {arg}{hint}")


def with_duration(sc, duration_s: float):  # noqa: ANN001, ANN201 - latlab.Scenario
    """The scenario run for ``duration_s``; a warm-up that would not fit shrinks in proportion.

    ``--duration`` is mostly used for a quick look, and a 60 s scenario that
    measures from 10 s would otherwise be invalid at ``--duration 5``.
    """
    measure_from_s = sc.get("measure_from_s", 0)
    original = sc.duration_s
    changes: dict[str, float] = {"duration_s": duration_s}
    if isinstance(measure_from_s, (int, float)) and measure_from_s >= duration_s and original:
        changes["measure_from_s"] = measure_from_s * duration_s / original
    return sc.with_(changes)


# ----- run -----------------------------------------------------------------


@cli.command("run")
@click.argument("scenario", metavar="SCENARIO", required=False)
@click.option(
    "--default",
    "use_default",
    is_flag=True,
    help="Run the built-in default scenario (same as SCENARIO = default).",
)
@click.option(
    "-o",
    "--outdir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for the results  [default: out/<scenario name>]",
)
@click.option("--seed", type=click.IntRange(min=0), help="Random seed, replacing the scenario's.")
@click.option(
    "--duration",
    "duration_s",
    type=click.FloatRange(min=0, min_open=True),
    metavar="SECONDS",
    help="Simulated seconds, replacing the scenario's duration_s (measure_from_s shrinks in "
    "proportion if it would not fit).",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress and no summary; only errors.")
@click.option("--no-plot", is_flag=True, help="Do not draw overview.png.")
@click.option(
    "--max-memory",
    "max_memory",
    metavar="SIZE",
    default=None,
    help="Refuse a scenario estimated to need more memory than SIZE (e.g. 2G, 512M; "
    "default: what the machine has available).",
)
@click.option(
    "--emulate",
    is_flag=True,
    help="Run the flows with the Linux kernel's TCP over the scenario's path emulated in real time "
    "(latlab-net emulate + flows; root and /dev/net/tun). Takes duration_s of wall time.",
)
def run_cmd(
    scenario: str | None,
    use_default: bool,
    outdir: Path | None,
    seed: int | None,
    duration_s: float | None,
    quiet: bool,
    no_plot: bool,
    max_memory: str | None,
    emulate: bool,
) -> None:
    """Simulate a scenario and save its results.

    SCENARIO is a TOML file, or the name of a built-in scenario such as
    "default". The results folder gets one Parquet table per kind of result
    (flows, flow_samples, links, link_samples, conservation), run.json,
    scenario.toml (exactly what ran) and overview.png. Files are replaced
    one by one; nothing else in the folder is deleted.

    Exit code 0 on success, 2 for an invalid scenario or bad option, 1 if
    the run's packet-conservation check failed (a simulator bug).

    \b
    Examples:
      latlab run default                            # or: latlab run --default
      latlab run scenarios/red-custom.toml -o out/red --seed 7
      latlab run my.toml --duration 5 --no-plot     # a quick look
      sudo latlab run scenarios/emulate-20mbit-50ms.toml --emulate   # Linux TCP, emulated path

    With --emulate the same tables come from real sockets: a path that fits
    one machine (one node pair, or a dumbbell whose access links are all
    alike), TCP flows with reno/cubic/bbr; anything else is refused (exit 2)
    naming the keys. run.json then has "emulated": true.
    """
    from rich.console import Console

    import latlab
    from latlab import plot

    if use_default == (scenario is not None):
        raise click.UsageError("give one SCENARIO (a TOML file or a built-in name) or --default")
    sc = load_scenario(scenario if scenario is not None else "default")
    sc.validate()  # the file as written first, so error line numbers match it
    if duration_s is not None:
        sc = with_duration(sc, duration_s)
    outdir = outdir if outdir is not None else default_outdir(sc.name)

    if emulate:
        from latlab.real.emulated import EmulationUnavailable, run_emulated

        try:
            results = run_emulated(sc, outdir, seed=seed, quiet=quiet)
        except EmulationUnavailable as e:
            raise UserError(f"--emulate: {e}") from e
        except RuntimeError as e:
            _error_line(f"--emulate: {e}")
            click.get_current_context().exit(1)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConservationWarning)  # reported below, in red
            results = latlab.run(
                sc,
                outdir=outdir,
                progress=not quiet,
                seed=seed,
                max_memory_bytes=None
                if max_memory is None
                else parse_size(max_memory, "--max-memory"),
            )

    figure = access_figure = subflows_figure = None
    if not no_plot:
        figure = plot.overview(results, outdir / "overview.png")
        if plot.has_access(results):
            access_figure = plot.access(results, outdir / "access.png")
        if plot.has_mptcp(results):
            subflows_figure = plot.subflows(results, outdir / "subflows.png")

    if not quiet:
        from latlab.tables import latency_table, summary_table

        console = Console()
        console.print(summary_table(results, outdir))
        by_flow = latency_table(results)
        if by_flow is not None:
            console.print(by_flow)
        if figure is not None:
            console.print(f"overview: {figure}")
        if access_figure is not None:
            console.print(f"access links: {access_figure}")
        if subflows_figure is not None:
            console.print(f"MPTCP subflows: {subflows_figure}")
    if not results.conservation_ok:
        _error_line(
            f"packet conservation FAILED {results.conservation_problem()} "
            f"(a simulator bug; results written to {outdir} but suspect)"
        )
        click.get_current_context().exit(1)


def parse_size(text: str, option: str) -> int:
    """'2G', '512M', '64k' or a plain number of bytes (powers of 1024 for the suffixes)."""
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][0-9]+)?)\s*([kKmMgGtT]?)(?:i?B)?\s*", text)
    if m is None or float(m.group(1)) * units[m.group(2).upper()] < 1:
        raise UserError(
            f"{option}: expected a size such as 2G, 512M or 1000000 (bytes), got {text!r}"
        )
    return int(float(m.group(1)) * units[m.group(2).upper()])


# ----- validate ------------------------------------------------------------


@cli.command()
@click.argument("scenario", metavar="SCENARIO")
def validate(scenario: str) -> None:
    """Check a scenario without running it.

    Prints "ok", or the first problem as "error: FILE: key.path: what is
    wrong and what is expected" (exit code 2).

    \b
    Example:
      latlab validate scenarios/codel-uplink.toml
    """
    load_scenario(scenario).validate()
    click.echo("ok")


# ----- bench ---------------------------------------------------------------


@cli.command()
@click.argument("names", nargs=-1, metavar="[NAME]...")
@click.option("--list", "list_only", is_flag=True, help="List the benchmark scenarios and exit.")
@click.option(
    "--quick", is_flag=True, help="Run each for 10% of its simulated duration (a smoke test)."
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON object per benchmark (with machine info).",
)
@click.option(
    "--scale",
    is_flag=True,
    help="Cost growth: the dumbbell at 1k, 10k and 100k flows (build, run, events/s, memory).",
)
@click.option(
    "--sizes",
    default=None,
    metavar="N,N,...",
    help="Flow counts for --scale (default 1000,10000,100000).",
)
@click.option(
    "--figure",
    "figure_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="With --scale: write the log-log figure (wall time and memory against flows) here.",
)
def bench(
    names: tuple[str, ...],
    list_only: bool,
    quick: bool,
    as_json: bool,
    scale: bool,
    sizes: str | None,
    figure_path: Path | None,
) -> None:
    """Measure simulator speed and memory on the built-in benchmarks.

    Each benchmark runs in a fresh Python process so its peak memory is its
    own. Prints simulated seconds, wall seconds, events, events per second
    and peak RSS per scenario, and the machine's CPU. NAME is a built-in
    benchmark (see --list) or a scenario TOML file; default: all built-in
    benchmarks. --quick scales duration_s (and measure_from_s) to 10%.

    \b
    Examples:
      latlab bench --list
      latlab bench dumbbell-10 --quick
      latlab bench --json >> benches/history.jsonl
      latlab bench --scale --figure scale.png  # 1k, 10k, 100k flows: cost growth
    """
    from rich.console import Console

    from latlab.bench import suite as bench_mod

    console = Console()
    if scale or sizes or figure_path:
        if not scale:
            raise UserError("--sizes and --figure go with --scale")
        if names:
            raise UserError("--scale runs its own scenarios; give no benchmark names with it")
        _bench_scale(console, sizes, quick, as_json, figure_path)
        return
    available = bench_mod.names()
    if list_only:
        for name in available:
            click.echo(f"{name:20s} {builtin.description(builtin.BENCH_DIR + '/' + name)}")
        return
    selected = list(names) or available
    unknown = [
        n
        for n in selected
        if n not in available and not (n.endswith(".toml") and Path(n).is_file())
    ]
    if unknown:
        raise UserError(
            f"unknown benchmark {', '.join(unknown)}; available: {', '.join(available)}"
        )

    machine = bench_mod.machine_info()
    _warn_about_the_build(machine)
    records: list[dict[str, Any]] = []
    failed = False
    for name in selected:
        try:
            if console.is_terminal and not as_json:
                with console.status(f"running {name}{' (quick)' if quick else ''} ..."):
                    record = bench_mod.run_one(name, quick=quick)
            else:
                record = bench_mod.run_one(name, quick=quick)
        except bench_mod.BenchFailure as e:
            _error_line(str(e))
            record, failed = {"name": name, "error": str(e)}, True
        records.append(record)
        if as_json:
            click.echo(json.dumps({**record, "machine": machine}))
    if not as_json:
        from latlab.bench.measure import QUICK_FRACTION

        console.print(bench_mod.table(records, machine, QUICK_FRACTION if quick else None))
    if failed:
        click.get_current_context().exit(1)


def _warn_about_the_build(machine: dict[str, Any]) -> None:
    from latlab.bench import suite as bench_mod

    warning = bench_mod.build_warning(machine["build"])
    if warning:
        click.echo(f"warning: {warning}", err=True)


def _bench_scale(
    console: Any, sizes: str | None, quick: bool, as_json: bool, figure_path: Path | None
) -> None:
    from latlab.bench import scale as scale_mod
    from latlab.bench import suite as bench_mod

    if sizes is None:
        counts = list(scale_mod.SIZES)
    else:
        try:
            counts = [int(float(x)) for x in sizes.split(",") if x.strip()]
        except ValueError:
            raise UserError(
                f"--sizes: expected flow counts separated by commas, got {sizes!r}"
            ) from None
        if not counts or any(c < 2 for c in counts):
            raise UserError(f"--sizes: expected flow counts of at least 2, got {sizes!r}")
    machine = bench_mod.machine_info()
    _warn_about_the_build(machine)

    def show(rec: dict[str, Any]) -> None:
        if as_json:
            click.echo(json.dumps({**rec, "machine": machine}))
        else:
            console.print(
                f"{rec['flows']:>9,} flows: build {rec['build_s']:.2f} s, run {rec['run_s']:.2f} s "
                f"for {rec['sim_s']:g} s simulated, peak {rec['peak_rss_mb']:.0f} MB"
            )

    try:
        records = scale_mod.run(counts, quick=quick, on_record=show)
    except bench_mod.BenchFailure as e:
        raise SimulationError(str(e)) from None
    if not as_json:
        console.print(scale_mod.table(records, machine))
    if figure_path is not None:
        scale_mod.figure(records, figure_path, machine)
        if not as_json:
            console.print(f"figure: {figure_path}")


def _register_commands() -> None:
    """Add the commands defined in ``latlab.commands`` (one module each)."""
    import importlib
    import pkgutil

    from latlab import commands

    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        register = getattr(module, "register", None)
        if callable(register):
            register(cli)


_register_commands()


def main() -> None:
    """Entry point of the ``latlab`` command (and ``python -m latlab``)."""
    cli()


if __name__ == "__main__":
    main()
