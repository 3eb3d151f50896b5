"""``latlab trace ...``: Mahimahi link traces in and out (generate, convert, show, plot, check, copy)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from latlab.errors import UserError

_RATE_RE = re.compile(
    r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([kKmMgG]?)(?:bit/s|bps|b/s)?\s*$"
)
_RATE_UNITS = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9}
_OUT = click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="The trace file to write.",
)
_DURATION = click.option(
    "--duration",
    "duration_s",
    type=click.FloatRange(min=0.001),
    required=True,
    metavar="SECONDS",
    help="Length of the trace = its loop period (s).",
)
_SEED = click.option(
    "--seed", type=click.IntRange(min=0), default=1, show_default=True, help="Random seed (PCG64)."
)


def parse_rate(text: str) -> float:
    """'24M', '2.5Mbit/s', '800k', '12e6' -> bit/s (decimal units). ValueError naming the text."""
    m = _RATE_RE.match(text)
    if not m:
        raise ValueError(f"not a rate: {text!r} (examples: 12e6, 800k, 24M, 2.5Mbit/s)")
    return float(m.group(1)) * _RATE_UNITS[m.group(2).lower()]


class RateType(click.ParamType):
    name = "RATE"

    def convert(self, value, param, ctx):  # noqa: ANN001, ANN201 - click API
        if isinstance(value, float):
            return value
        try:
            return parse_rate(value)
        except ValueError as e:
            self.fail(str(e), param, ctx)


RATE = RateType()


def _user_errors(fn):  # noqa: ANN001, ANN202 - a decorator
    """TraceError (bad files, bad parameters) -> one red line, exit code 2."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        from latlab.traces import TraceError

        try:
            return fn(*args, **kwargs)
        except TraceError as e:
            raise UserError(str(e)) from None

    return wrapper


def _mbps(bps: float) -> str:
    return f"{bps / 1e6:.2f} Mbit/s"


def _wrote(trace, path: Path) -> None:  # noqa: ANN001 - Trace
    click.echo(
        f"{path}: {trace.opportunities:,} opportunities, period {trace.period_ms / 1e3:g} s, "
        f"mean {_mbps(trace.mean_rate_bps)}"
    )


def register(cli: click.Group) -> None:
    @cli.group("trace")
    def trace() -> None:
        """Mahimahi link traces: generate, convert to and from rate series, show, plot, check.

        A trace file holds one integer per line: the millisecond of one
        1500-byte delivery opportunity (a repeated value = several in that
        ms); it loops with period = its last timestamp ("1" alone is
        12 Mbit/s). TRACE is a file, or the name of a shipped trace (see
        'latlab trace list'). Rates take k/M/G suffixes (24M = 24 Mbit/s).

        \b
        Examples:
          latlab trace list
          latlab trace gen constant --rate 24M --duration 10 -o steady.trace
          latlab trace gen markov --good 30M --bad 2M --mean-good 4 --mean-bad 1 --duration 60 -o gb.trace
          latlab trace show lte-variable
          latlab trace plot my.trace -o my.png
          latlab trace to-series my.trace --bin-ms 1000 -o my.csv
          latlab trace from-series measured.csv -o measured.trace
        """

    @trace.command("list")
    def list_cmd() -> None:
        """List the traces shipped with latlab, with their mean rates."""
        from latlab import traces

        for name in traces.builtin_names():
            t = traces.load(name)
            click.echo(f"{name:16s} period {t.period_ms / 1e3:g} s, mean {_mbps(t.mean_rate_bps)}")

    # ----- generators ---------------------------------------------------

    @trace.group("gen")
    def gen() -> None:
        """Generate a trace: constant, schedule, markov or drawn.

        Every generator is deterministic: the same command (and --seed)
        writes the same bytes.

        \b
        Examples:
          latlab trace gen constant --rate 12M --duration 1 -o 12mbit.trace   # one opportunity per ms
          latlab trace gen schedule 0:24M 10:3M 20:24M --duration 30 -o steps.trace
          latlab trace gen markov --good 6M --bad 0.3M --mean-good 2 --mean-bad 0.4 --duration 60 -o fades.trace
          latlab trace gen drawn --dist lognormal --median 20M --sigma 0.5 --correlation 0.9 --duration 60 -o d.trace
        """

    @gen.command("constant")
    @click.option(
        "--rate", "rate_bps", type=RATE, required=True, help="The rate (bit/s; 24M = 24 Mbit/s)."
    )
    @_DURATION
    @_OUT
    @_user_errors
    def gen_constant(rate_bps: float, duration_s: float, output: Path) -> None:
        """A constant rate (12M gives one opportunity per millisecond).

        \b
        Example:
          latlab trace gen constant --rate 24M --duration 10 -o steady.trace
        """
        from latlab import traces

        t = traces.constant(rate_bps, duration_s)
        t.write(output)
        _wrote(t, output)

    @gen.command("schedule")
    @click.argument("steps", nargs=-1, required=True, metavar="T:RATE...")
    @_DURATION
    @_OUT
    @_user_errors
    def gen_schedule(steps: tuple[str, ...], duration_s: float, output: Path) -> None:
        """Piecewise-constant rates: each T:RATE holds from T seconds until the next step.

        The first step starts at 0; the last holds until --duration.

        \b
        Example:
          latlab trace gen schedule 0:24M 10:3M 20:24M --duration 30 -o steps.trace
        """
        from latlab import traces

        pairs = []
        for step in steps:
            t_text, sep, rate_text = step.partition(":")
            try:
                t_s = float(t_text)
            except ValueError:
                t_s = None
            if not sep or t_s is None:
                raise traces.TraceError(
                    f"schedule step {step!r}: expected T:RATE, seconds and a rate "
                    f"(example: 10:3M = 3 Mbit/s from 10 s)"
                )
            try:
                pairs.append([t_s, parse_rate(rate_text)])
            except ValueError as e:
                raise traces.TraceError(f"schedule step {step!r}: {e}") from None
        t = traces.schedule(pairs, duration_s)
        t.write(output)
        _wrote(t, output)

    @gen.command("markov")
    @click.option(
        "--good", "good_bps", type=RATE, required=True, help="Rate in the good state (bit/s)."
    )
    @click.option(
        "--bad",
        "bad_bps",
        type=RATE,
        required=True,
        help="Rate in the bad state (bit/s; 0 = outage).",
    )
    @click.option(
        "--mean-good",
        "mean_good_s",
        type=click.FloatRange(min=0, min_open=True),
        required=True,
        metavar="SECONDS",
        help="Mean stay in the good state (exponential).",
    )
    @click.option(
        "--mean-bad",
        "mean_bad_s",
        type=click.FloatRange(min=0, min_open=True),
        required=True,
        metavar="SECONDS",
        help="Mean stay in the bad state (exponential).",
    )
    @click.option(
        "--sigma",
        type=click.FloatRange(min=0),
        default=0.0,
        show_default=True,
        help="Log-normal spread of each visit's rate around its state's rate (mean kept).",
    )
    @_DURATION
    @_SEED
    @_OUT
    @_user_errors
    def gen_markov(
        good_bps: float,
        bad_bps: float,
        mean_good_s: float,
        mean_bad_s: float,
        sigma: float,
        duration_s: float,
        seed: int,
        output: Path,
    ) -> None:
        """A Gilbert-style good/bad channel with exponential stays in each state.

        Long-run mean: (good x mean-good + bad x mean-bad) / (mean-good + mean-bad).

        \b
        Example:
          latlab trace gen markov --good 6M --bad 0.3M --mean-good 2 --mean-bad 0.4 --duration 60 -o fades.trace
        """
        from latlab import traces

        t = traces.markov(good_bps, bad_bps, mean_good_s, mean_bad_s, duration_s, seed, sigma=sigma)
        t.write(output)
        _wrote(t, output)
        stationary = traces.markov_mean_bps(good_bps, bad_bps, mean_good_s, mean_bad_s)
        click.echo(f"stationary mean of the channel: {_mbps(stationary)}")

    @gen.command("drawn")
    @click.option(
        "--dist",
        type=click.Choice(["lognormal", "uniform", "empirical"]),
        required=True,
        help="The distribution of the rates.",
    )
    @click.option("--median", "median_bps", type=RATE, help="lognormal: the median rate.")
    @click.option(
        "--sigma", type=click.FloatRange(min=0), help="lognormal: the spread of log(rate)."
    )
    @click.option("--low", "low_bps", type=RATE, help="uniform: the lowest rate.")
    @click.option("--high", "high_bps", type=RATE, help="uniform: the highest rate.")
    @click.option(
        "--samples",
        "samples_path",
        type=click.Path(dir_okay=False, path_type=Path),
        metavar="CSV",
        help="empirical: measured rates, a CSV with a rate_bps column.",
    )
    @click.option(
        "--interval-ms",
        type=click.IntRange(min=1),
        default=100,
        show_default=True,
        help="A new rate every this many ms.",
    )
    @click.option(
        "--correlation",
        type=click.FloatRange(min=0, max=1, max_open=True),
        default=0.0,
        show_default=True,
        help="Correlation of successive draws (Gaussian copula, AR(1)).",
    )
    @click.option("--min", "min_bps", type=RATE, help="Clip rates below this.")
    @click.option("--max", "max_bps", type=RATE, help="Clip rates above this.")
    @_DURATION
    @_SEED
    @_OUT
    @_user_errors
    def gen_drawn(
        dist: str,
        median_bps: float | None,
        sigma: float | None,
        low_bps: float | None,
        high_bps: float | None,
        samples_path: Path | None,
        interval_ms: int,
        correlation: float,
        min_bps: float | None,
        max_bps: float | None,
        duration_s: float,
        seed: int,
        output: Path,
    ) -> None:
        """Rates drawn from a distribution, one per --interval-ms.

        --dist lognormal needs --median and --sigma; uniform needs --low and
        --high; empirical needs --samples CSV (a header row naming a
        rate_bps column, one measured rate per row). --correlation makes
        successive draws alike (slow fading) without changing their
        distribution.

        \b
        Examples:
          latlab trace gen drawn --dist lognormal --median 20M --sigma 0.5 --correlation 0.9 --duration 60 -o d.trace
          latlab trace gen drawn --dist uniform --low 2M --high 40M --interval-ms 500 --duration 60 -o u.trace
          latlab trace gen drawn --dist empirical --samples rates.csv --duration 60 -o e.trace
        """
        from latlab import traces

        needed = {
            "lognormal": {"--median": median_bps, "--sigma": sigma},
            "uniform": {"--low": low_bps, "--high": high_bps},
            "empirical": {"--samples": samples_path},
        }[dist]
        missing = [name for name, value in needed.items() if value is None]
        if missing:
            raise click.UsageError(f"--dist {dist} needs {' and '.join(missing)}")
        if dist == "lognormal":
            d = traces.LogNormal(median_bps, sigma)
        elif dist == "uniform":
            d = traces.Uniform(low_bps, high_bps)
        else:
            d = traces.Empirical(tuple(traces.read_rates_csv(samples_path).tolist()))
        t = traces.drawn(
            d,
            interval_ms,
            duration_s,
            seed,
            correlation=correlation,
            min_bps=min_bps,
            max_bps=max_bps,
        )
        t.write(output)
        _wrote(t, output)

    # ----- conversions --------------------------------------------------

    @trace.command("from-series")
    @click.argument("csv_path", type=click.Path(dir_okay=False, path_type=Path), metavar="CSV")
    @_OUT
    @click.option(
        "--end",
        "end_s",
        type=float,
        metavar="SECONDS",
        help="Where the last row's rate ends (without a duration_s column)  "
        "[default: as long as the row before]",
    )
    @_user_errors
    def from_series(csv_path: Path, output: Path, end_s: float | None) -> None:
        """Turn a throughput series (CSV) into a trace.

        The CSV has a header row naming time_s and rate_bps (any order,
        other columns ignored) and one row per interval: rate_bps (bit/s)
        holds from time_s until the next row's time_s. An optional
        duration_s column gives each row's length instead (gaps then carry
        no rate); without it the last row lasts as long as the row before it,
        or until --end. The trace starts at the first time_s; fractional
        opportunities are carried forward, so it holds the series' bytes to
        within one 1500-byte opportunity.

        \b
        Example:
          latlab trace from-series measured.csv -o measured.trace
        """
        from latlab import traces

        t_s, rate_bps, duration_s = traces.read_series_csv(csv_path)
        if duration_s is not None and end_s is not None:
            raise click.UsageError("--end goes with a CSV without a duration_s column")
        t = traces.from_rate_series(t_s, rate_bps, duration_s=duration_s, end_s=end_s)
        t.write(output)
        _wrote(t, output)

    @trace.command("to-series")
    @click.argument("trace_arg", metavar="TRACE")
    @click.option(
        "--bin-ms",
        type=click.IntRange(min=1),
        default=100,
        show_default=True,
        help="Bin width (ms).",
    )
    @click.option(
        "-o",
        "--output",
        type=click.Path(dir_okay=False, path_type=Path),
        help="The CSV to write  [default: standard output]",
    )
    @_user_errors
    def to_series(trace_arg: str, bin_ms: int, output: Path | None) -> None:
        """Write a trace's delivery rate as a CSV: time_s, rate_bps, duration_s per bin.

        One period is cut into --bin-ms bins (the last shorter if the bin
        does not divide the period). 'latlab trace from-series' reads the
        file back into a trace with the same bytes per bin.

        \b
        Example:
          latlab trace to-series lte-variable --bin-ms 1000 -o lte-variable.csv
        """
        from latlab import _atomic, traces

        text = traces.series_csv_text(traces.load(trace_arg), bin_ms)
        if output is None:
            sys.stdout.write(text)
        else:
            _atomic.write_text(output, text)
            click.echo(f"series: {output}", err=True)

    # ----- inspection ---------------------------------------------------

    @trace.command("show")
    @click.argument("trace_arg", metavar="TRACE")
    @click.option(
        "--bin-ms",
        type=click.IntRange(min=1),
        default=100,
        show_default=True,
        help="Bin width (ms) for the min/percentile/max rates.",
    )
    @_user_errors
    def show(trace_arg: str, bin_ms: int) -> None:
        """Summarise a trace: period, opportunities, mean and spread of the rate.

        \b
        Example:
          latlab trace show lte-variable --bin-ms 1000
        """
        from rich.console import Console
        from rich.table import Table

        from latlab import traces

        t = traces.load(trace_arg)
        s = traces.summary(t, bin_ms)
        table = Table(title=f"trace {t.source}", show_header=False)
        table.add_column("what")
        table.add_column("value", justify="right")
        table.add_row("period", f"{s['period_ms'] / 1e3:g} s ({s['period_ms']} ms)")
        table.add_row("opportunities", f"{s['opportunities']:,} x 1500 B")
        table.add_row("mean rate", _mbps(s["mean_bps"]))
        for key in ("min", "p10", "p50", "p90", "max"):
            table.add_row(f"{key} rate ({bin_ms} ms bins)", _mbps(s[f"{key}_bps"]))
        table.add_row("longest gap", f"{s['longest_gap_ms']} ms")
        Console().print(table)

    @trace.command("plot")
    @click.argument("trace_arg", metavar="TRACE")
    @click.option(
        "--bin-ms",
        type=click.IntRange(min=1),
        default=100,
        show_default=True,
        help="Bin width (ms).",
    )
    @click.option(
        "-o",
        "--output",
        type=click.Path(dir_okay=False, path_type=Path),
        help="The figure (PNG)  [default: out/trace/<name>.png]",
    )
    @_user_errors
    def plot(trace_arg: str, bin_ms: int, output: Path | None) -> None:
        """Plot a trace's delivery rate over one period (PNG).

        \b
        Example:
          latlab trace plot wifi-weak -o wifi-weak.png
        """
        from latlab import traces

        t = traces.load(trace_arg)
        name = Path(t.source).name.removesuffix(traces.SUFFIX)
        path = output or Path("out") / "trace" / f"{re.sub(r'[^A-Za-z0-9._-]+', '_', name)}.png"
        traces.plot_rate(t, path, bin_ms, title=name)
        click.echo(f"figure: {path}")

    @trace.command("check")
    @click.argument("trace_arg", metavar="TRACE")
    @_user_errors
    def check(trace_arg: str) -> None:
        """Validate a trace file: "ok", or the first problem and its line (exit 2).

        \b
        Example:
          latlab trace check my.trace
        """
        from latlab import traces

        t = traces.load(trace_arg)
        layout = (
            "canonical"
            if (t.newline, t.final_newline) == ("\n", True)
            else f"{'CRLF' if t.newline == chr(13) + chr(10) else 'LF'} line endings, "
            f"{'with' if t.final_newline else 'no'} final newline"
        )
        click.echo(
            f"ok: {t.source}: {t.opportunities:,} opportunities, period {t.period_ms} ms, "
            f"mean {_mbps(t.mean_rate_bps)} ({layout})"
        )

    @trace.command("copy")
    @click.argument("trace_arg", metavar="TRACE")
    @_OUT
    @click.option("--canonical", is_flag=True, help="Write LF line endings and a final newline.")
    @_user_errors
    def copy(trace_arg: str, output: Path, canonical: bool) -> None:
        """Read a trace and write it back: the same bytes, unless --canonical.

        Any file 'latlab trace check' accepts is written byte for byte
        (line endings and the final newline kept); --canonical writes LF
        line endings and a final newline.

        \b
        Examples:
          latlab trace copy my.trace -o copy.trace && cmp my.trace copy.trace
          latlab trace copy windows.trace --canonical -o unix.trace
        """
        from latlab import traces

        t = traces.load(trace_arg)
        (t.canonical() if canonical else t).write(output)
        _wrote(t, output)
