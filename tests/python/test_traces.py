"""Mahimahi traces: byte-exact round trip, strict reading, rate series both ways, generators, `latlab trace`."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from latlab import traces
from latlab.cli import cli
from latlab.commands.trace import parse_rate
from latlab.traces import Trace, TraceError

DATA = Path(traces.__file__).parent / "data" / "traces"
SHIPPED = ["lte-steady", "lte-variable", "wifi-weak"]

# Written by hand: an opportunity at 0, repeated timestamps, a gap, a final newline.
HAND_WRITTEN = b"0\n1\n1\n1\n4\n9\n9\n10\n25\n"


@pytest.fixture
def runner():
    return CliRunner()


# ----- reading and writing ----------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        HAND_WRITTEN,
        b"1\n",  # the 12 Mbit/s trace
        b"1",  # no final newline
        b"3\r\n3\r\n7\r\n",  # CRLF
        b"3\r\n3\r\n7",  # CRLF, no final newline
        b"5\n5\n5\n5\n5\n",  # everything in one millisecond
    ],
)
def test_round_trip_byte_for_byte(tmp_path, data):
    src, dst = tmp_path / "in.trace", tmp_path / "out.trace"
    src.write_bytes(data)
    Trace.read(src).write(dst)
    assert dst.read_bytes() == data


def test_hand_written_file_contents(tmp_path):
    path = tmp_path / "hand.trace"
    path.write_bytes(HAND_WRITTEN)
    t = Trace.read(path)
    assert t.timestamps_ms.tolist() == [0, 1, 1, 1, 4, 9, 9, 10, 25]
    assert t.period_ms == 25 and t.opportunities == 9
    assert t.mean_rate_bps == pytest.approx(9 * 1500 * 8 / 0.025)
    # timestamp 0 is the end of the previous loop: it counts in the last millisecond
    per_ms = t.opportunities_per_ms()
    assert per_ms[0] == 3 and per_ms[24] == 2 and per_ms.sum() == 9
    assert t.longest_gap_ms() == 15


def test_canonical_layout(tmp_path):
    t = Trace.from_bytes(b"3\r\n3\r\n7", source="w.trace")
    assert t.canonical().to_bytes() == b"3\n3\n7\n"
    assert traces.constant(12e6, 0.003).to_bytes() == b"1\n2\n3\n"


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_traces_round_trip_and_are_canonical(tmp_path, runner, name):
    original = (DATA / f"{name}.trace").read_bytes()
    t = traces.load(name)
    assert t.to_bytes() == original and (t.newline, t.final_newline) == ("\n", True)
    out = tmp_path / "copy.trace"
    res = runner.invoke(cli, ["trace", "copy", name, "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert out.read_bytes() == original
    assert len(original) <= 1_000_000 and t.period_ms == 60_000


def test_copy_keeps_a_user_file_or_canonicalises_it(tmp_path, runner):
    src = tmp_path / "win.trace"
    src.write_bytes(b"2\r\n2\r\n9")
    same, canon = tmp_path / "same.trace", tmp_path / "canon.trace"
    assert runner.invoke(cli, ["trace", "copy", str(src), "-o", str(same)]).exit_code == 0
    assert (
        runner.invoke(cli, ["trace", "copy", str(src), "-o", str(canon), "--canonical"]).exit_code
        == 0
    )
    assert same.read_bytes() == b"2\r\n2\r\n9" and canon.read_bytes() == b"2\n2\n9\n"


@pytest.mark.parametrize(
    "data, line, message",
    [
        (b"", None, "empty file"),
        (b"1\n\n2\n", 2, "empty line"),
        (b"1\n2\n\n", 3, "empty line"),
        (b"1\n-3\n5\n", 2, "negative timestamp"),
        (b"1\n2.5\n", 2, "not an integer timestamp: '2.5'"),
        (b"1\nabc\n", 2, "not an integer timestamp: 'abc'"),
        (b" 1\n", 1, "not an integer timestamp"),
        (b"4\n7\n5\n9\n", 3, "timestamp 5 is smaller than the one before it (7)"),
        (b"0\n0\n", 2, "must be > 0"),
        (b"1\n007\n", 2, "leading zero"),
        (b"1\n99999999999\n", 2, "above 2147483647"),
        (b"1\r\n2\n3\r\n", 2, "mixed line endings"),
    ],
)
def test_errors_name_file_and_line(tmp_path, data, line, message):
    path = tmp_path / "bad.trace"
    path.write_bytes(data)
    with pytest.raises(TraceError) as e:
        Trace.read(path)
    where = f"{path}:{line}: " if line is not None else f"{path}: "
    assert str(e.value).startswith(where) and message in str(e.value)


def test_trace_from_an_array_is_validated():
    with pytest.raises(TraceError, match="must not decrease"):
        Trace(np.array([3, 2]))
    with pytest.raises(TraceError, match="must be > 0"):
        Trace(np.array([0]))
    with pytest.raises(TraceError, match=">= 0"):
        Trace(np.array([-1, 4]))


# ----- rates ----------------------------------------------------------------


def test_constant_12_mbit_is_one_opportunity_per_ms():
    t = traces.constant(12e6, 2.0)
    assert t.timestamps_ms.tolist() == list(range(1, 2001))
    assert t.mean_rate_bps == pytest.approx(12e6)
    assert Trace.from_bytes(b"1\n").mean_rate_bps == pytest.approx(12e6)
    assert np.all(traces.constant(24e6, 1.0).opportunities_per_ms() == 2)


def test_rate_series_of_a_schedule():
    t = traces.schedule([[0, 24e6], [1.0, 6e6]], duration_s=1.5)
    t_s, rate = t.rate_series(bin_ms=500)
    assert t_s.tolist() == [0.0, 0.5, 1.0]
    assert rate.tolist() == pytest.approx([24e6, 24e6, 6e6])
    # a bin that does not divide the period: the last bin is shorter, its rate over its own length
    t_s, rate = traces.constant(12e6, 1.0).rate_series(bin_ms=300)
    assert t_s.tolist() == [0.0, 0.3, 0.6, 0.9] and rate == pytest.approx(12e6)


def _series(seed: int, n: int = 200):
    rng = np.random.default_rng(seed)
    t_s = np.cumsum(rng.uniform(0.003, 0.4, n)) - 0.1
    rate = rng.lognormal(np.log(8e6), 1.0, n) * (
        rng.random(n) > 0.1
    )  # with some zero-rate intervals
    return t_s, rate


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_rate_series_to_trace_keeps_the_bytes_within_one_opportunity(seed):
    t_s, rate = _series(seed)
    end_s = t_s[-1] + 0.25
    t = traces.from_rate_series(t_s, rate, end_s=end_s)
    ends = np.append(t_s[1:], end_s)
    cumulative_bytes = np.cumsum(rate / 8 * (ends - t_s))
    assert t.period_ms == round((end_s - t_s[0]) * 1e3)
    shortfall = cumulative_bytes[-1] - t.bytes_per_period
    assert 0 <= shortfall < 1500
    # bytes are carried forward, not rounded per interval: every prefix is within one opportunity too
    # (the millisecond grid can shift a boundary by < 1 ms; compare at whole-ms interval ends)
    per_ms = t.opportunities_per_ms()
    for i in range(0, len(ends) - 1, 17):
        end_ms = (ends[i] - t_s[0]) * 1e3
        if abs(end_ms - round(end_ms)) < 1e-6:
            delivered = per_ms[: round(end_ms)].sum() * 1500
            assert -1500 < cumulative_bytes[i] - delivered < 1500 + 1e-6


@pytest.mark.parametrize(
    "name, bin_ms", [(name, b) for name in SHIPPED for b in (7, 100, 1000)] + [("wifi-weak", 1)]
)
def test_trace_to_series_and_back_keeps_each_bin(name, bin_ms):
    t = traces.load(name)
    series_path = Path("series.csv")
    series_path.write_text(traces.series_csv_text(t, bin_ms))
    t_s, rate_bps, duration_s = traces.read_series_csv(series_path)
    back = traces.from_rate_series(t_s, rate_bps, duration_s=duration_s)
    assert back.period_ms == t.period_ms and back.opportunities == t.opportunities
    assert np.array_equal(back.rate_series(bin_ms)[1], t.rate_series(bin_ms)[1])


def test_series_with_durations_and_gaps():
    # 12 Mbit/s for 10 ms, nothing for 10 ms, 24 Mbit/s for 10 ms
    t = traces.from_rate_series([0.0, 0.02], [12e6, 24e6], duration_s=[0.01, 0.01])
    per_ms = t.opportunities_per_ms()
    assert t.period_ms == 30 and per_ms[:10].tolist() == [1] * 10
    assert per_ms[10:20].sum() == 0 and per_ms[20:].tolist() == [2] * 10


def test_the_last_opportunity_sets_the_period():
    # the rate drops to zero at the end: the last opportunity moves to the end, so the loop keeps its length
    t = traces.schedule([[0, 12e6], [0.5, 0.0]], duration_s=1.0)
    assert t.period_ms == 1000 and t.opportunities == 500
    with pytest.raises(TraceError, match="less than one 1500-byte opportunity"):
        traces.constant(1e3, 1.0)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"t_s": [0, 1], "rate_bps": [1e6, -1]}, "rate_bps[1] must be a finite rate >= 0"),
        ({"t_s": [0, 1, 1], "rate_bps": [1e6] * 3}, "t_s must increase"),
        ({"t_s": [0], "rate_bps": [1e6]}, "needs its end"),
        ({"t_s": [0, 1], "rate_bps": [1e6, 1e6], "duration_s": [2, 1]}, "overlaps"),
    ],
)
def test_bad_series(kwargs, message):
    with pytest.raises(TraceError) as e:
        traces.from_rate_series(**kwargs)
    assert message in str(e.value)


# ----- generators -------------------------------------------------------------


@pytest.mark.parametrize("seed, sigma", [(1, 0.0), (2, 0.0), (3, 0.4)])
def test_markov_long_run_mean_matches_the_stationary_mean(seed, sigma):
    args = dict(good_bps=2e6, bad_bps=0.3e6, mean_good_s=1.0, mean_bad_s=0.5)
    t = traces.markov(**args, duration_s=3000, seed=seed, sigma=sigma)
    stationary = traces.markov_mean_bps(**args)
    assert stationary == pytest.approx((2e6 * 1.0 + 0.3e6 * 0.5) / 1.5)
    # ~2000 good/bad cycles: the time share of each state is within ~1 % (one sd); allow 4 %
    assert t.mean_rate_bps == pytest.approx(stationary, rel=0.04)


def test_markov_stays_are_exponential_with_the_given_means():
    starts, rates = traces.markov_series(5e6, 1e6, 2.0, 0.5, duration_s=4000, seed=7)
    stays = np.diff(starts)
    good = rates[:-1] == 5e6
    assert stays[good].mean() == pytest.approx(2.0, rel=0.08)
    assert stays[~good].mean() == pytest.approx(0.5, rel=0.08)
    assert np.all(rates[:-1] != rates[1:])  # states alternate


def test_drawn_keeps_the_marginal_law_and_clips():
    dist = traces.LogNormal(10e6, 0.5)
    _, rates = traces.drawn_series(dist, interval_ms=10, duration_s=400, seed=5, correlation=0.9)
    assert np.median(rates) == pytest.approx(10e6, rel=0.1)
    assert np.std(np.log(rates)) == pytest.approx(0.5, rel=0.1)
    z = np.log(rates / 10e6)
    assert np.corrcoef(z[:-1], z[1:])[0, 1] == pytest.approx(0.9, abs=0.03)
    _, clipped = traces.drawn_series(dist, 10, 10, seed=5, min_bps=8e6, max_bps=12e6)
    assert clipped.min() >= 8e6 and clipped.max() <= 12e6
    _, uni = traces.drawn_series(traces.Uniform(2e6, 4e6), 10, 100, seed=1)
    assert 2e6 <= uni.min() and uni.max() <= 4e6 and np.mean(uni) == pytest.approx(3e6, rel=0.03)
    _, emp = traces.drawn_series(traces.Empirical((1e6, 2e6, 3e6)), 10, 100, seed=1)
    assert 1e6 <= emp.min() and emp.max() <= 3e6


def test_generators_are_deterministic():
    a = traces.markov(6e6, 0.2e6, 1.5, 0.3, duration_s=20, seed=4, sigma=0.3).to_bytes()
    assert a == traces.markov(6e6, 0.2e6, 1.5, 0.3, duration_s=20, seed=4, sigma=0.3).to_bytes()
    assert a != traces.markov(6e6, 0.2e6, 1.5, 0.3, duration_s=20, seed=5, sigma=0.3).to_bytes()
    d = traces.LogNormal(10e6, 0.5)
    assert traces.drawn(d, 100, 5, seed=1).to_bytes() == traces.drawn(d, 100, 5, seed=1).to_bytes()


def _readme_commands() -> list[list[str]]:
    text = (DATA / "README.md").read_text()
    return [
        shlex.split(line)[1:] for line in text.splitlines() if line.startswith("latlab trace gen ")
    ]


def test_readme_commands_make_the_shipped_traces(tmp_path, runner):
    commands = _readme_commands()
    made = set()
    for args in commands:
        target = Path(args[args.index("-o") + 1])
        args[args.index("-o") + 1] = str(tmp_path / target.name)
        res = runner.invoke(cli, args)
        assert res.exit_code == 0, res.output
        assert (tmp_path / target.name).read_bytes() == (DATA / target.name).read_bytes(), (
            target.name
        )
        made.add(target.name.removesuffix(".trace"))
    assert made == set(SHIPPED) == set(traces.builtin_names())


def test_readme_statistics_match_show():
    text = (DATA / "README.md").read_text()
    for name in SHIPPED:
        row = re.search(
            rf"^\| `{name}` \|[^|]*\| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|", text, re.M
        )
        s = traces.summary(traces.load(name), bin_ms=100)
        measured = [round(s[k] / 1e6, 2) for k in ("mean_bps", "p10_bps", "p50_bps", "p90_bps")]
        assert [float(v) for v in row.groups()] == measured, name


# ----- the command ------------------------------------------------------------


def test_gen_show_check_and_series(runner, tmp_path):
    out = tmp_path / "s.trace"
    res = runner.invoke(
        cli, ["trace", "gen", "schedule", "0:24M", "1:6M", "--duration", "2", "-o", str(out)]
    )
    assert res.exit_code == 0, res.output
    assert Trace.read(out).mean_rate_bps == pytest.approx(15e6)
    res = runner.invoke(cli, ["trace", "show", str(out)])
    assert res.exit_code == 0 and "15.00 Mbit/s" in res.output and "2,500" in res.output
    res = runner.invoke(cli, ["trace", "check", str(out)])
    assert res.exit_code == 0 and res.output.startswith("ok: ") and "canonical" in res.output
    csv = tmp_path / "s.csv"
    assert (
        runner.invoke(
            cli, ["trace", "to-series", str(out), "--bin-ms", "500", "-o", str(csv)]
        ).exit_code
        == 0
    )
    assert csv.read_text().splitlines()[:2] == [
        "time_s,rate_bps,duration_s",
        "0.000,24000000.0,0.500",
    ]
    back = tmp_path / "back.trace"
    assert runner.invoke(cli, ["trace", "from-series", str(csv), "-o", str(back)]).exit_code == 0
    assert back.read_bytes() == out.read_bytes()  # a piecewise-constant trace survives exactly
    res = runner.invoke(cli, ["trace", "to-series", str(out), "--bin-ms", "1000"])
    assert res.exit_code == 0 and res.stdout.splitlines()[1:] == [
        "0.000,24000000.0,1.000",
        "1.000,6000000.0,1.000",
    ]


def test_from_series_without_durations(runner, tmp_path):
    csv = tmp_path / "m.csv"
    csv.write_text("rate_bps,time_s,note\n12e6,10.0,a\n24e6,10.5,b\n")
    out = tmp_path / "m.trace"
    assert runner.invoke(cli, ["trace", "from-series", str(csv), "-o", str(out)]).exit_code == 0
    t = Trace.read(out)
    assert t.period_ms == 1000 and t.opportunities == 500 + 1000
    assert (
        runner.invoke(
            cli, ["trace", "from-series", str(csv), "--end", "12", "-o", str(out)]
        ).exit_code
        == 0
    )
    assert Trace.read(out).period_ms == 2000


def test_gen_every_generator(runner, tmp_path):
    samples = tmp_path / "rates.csv"
    samples.write_text("rate_bps\n1e6\n5e6\n9e6\n")
    for args in (
        ["constant", "--rate", "12M", "--duration", "1"],
        [
            "markov",
            "--good",
            "6M",
            "--bad",
            "0",
            "--mean-good",
            "1",
            "--mean-bad",
            "0.2",
            "--duration",
            "5",
        ],
        ["drawn", "--dist", "uniform", "--low", "1M", "--high", "3M", "--duration", "5"],
        ["drawn", "--dist", "empirical", "--samples", str(samples), "--duration", "5"],
    ):
        out = tmp_path / f"{args[0]}.trace"
        res = runner.invoke(cli, ["trace", "gen", *args, "-o", str(out)])
        assert res.exit_code == 0, res.output
        Trace.read(out)


def test_plot_writes_a_png(runner, tmp_path):
    png = tmp_path / "w.png"
    res = runner.invoke(cli, ["trace", "plot", "wifi-weak", "-o", str(png)])
    assert res.exit_code == 0, res.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert runner.invoke(cli, ["trace", "plot", "lte-steady"]).exit_code == 0
    assert Path("out/trace/lte-steady.png").is_file()


def test_list(runner):
    res = runner.invoke(cli, ["trace", "list"])
    assert res.exit_code == 0 and all(name in res.output for name in SHIPPED)


@pytest.mark.parametrize(
    "args, message",
    [
        (["check", "BAD"], "bad.trace:3: timestamp 1 is smaller than the one before it (2)"),
        (["show", "BAD"], "bad.trace:3:"),
        (["copy", "BAD", "-o", "x.trace"], "bad.trace:3:"),
        (["check", "no-such.trace"], "no such file: no-such.trace (shipped traces: lte-steady"),
        (
            ["gen", "constant", "--rate", "fast", "--duration", "1", "-o", "x.trace"],
            "not a rate: 'fast'",
        ),
        (
            ["gen", "constant", "--rate", "1k", "--duration", "1", "-o", "x.trace"],
            "less than one 1500-byte opportunity",
        ),
        (["gen", "schedule", "5:1M", "--duration", "10", "-o", "x.trace"], "must start at t = 0"),
        (["gen", "schedule", "0-1M", "--duration", "10", "-o", "x.trace"], "expected T:RATE"),
        (
            [
                "gen",
                "drawn",
                "--dist",
                "lognormal",
                "--median",
                "2M",
                "--duration",
                "1",
                "-o",
                "x.trace",
            ],
            "needs --sigma",
        ),
        (
            [
                "gen",
                "drawn",
                "--dist",
                "uniform",
                "--low",
                "5M",
                "--high",
                "1M",
                "--duration",
                "1",
                "-o",
                "x.trace",
            ],
            "low_bps <= high_bps",
        ),
        (["from-series", "BADCSV", "-o", "x.trace"], "bad.csv:3: rate_bps: 'fast' is not a number"),
        (["to-series", "BAD"], "bad.trace:3:"),
    ],
)
def test_bad_input_exits_2_with_one_line(runner, tmp_path, args, message):
    bad = tmp_path / "bad.trace"
    bad.write_bytes(b"1\n2\n1\n")
    bad_csv = tmp_path / "bad.csv"
    bad_csv.write_text("time_s,rate_bps\n0,1e6\n1,fast\n")
    args = [str(bad) if a == "BAD" else str(bad_csv) if a == "BADCSV" else a for a in args]
    res = runner.invoke(cli, ["trace", *args])
    assert res.exit_code == 2, res.output
    assert res.stderr.startswith("error: ") and res.stderr.count("\n") == 1, res.stderr
    assert message in res.stderr and "Traceback" not in res.output
    assert not Path("x.trace").exists()


def test_parse_rate():
    assert parse_rate("24M") == 24e6 and parse_rate("800k") == 800e3 and parse_rate("12e6") == 12e6
    assert (
        parse_rate("2.5Mbit/s") == 2.5e6 and parse_rate("1G") == 1e9 and parse_rate("0.2M") == 200e3
    )
    with pytest.raises(ValueError):
        parse_rate("-1M")
