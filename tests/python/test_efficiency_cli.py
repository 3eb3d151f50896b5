"""`latlab model efficiency` and `latlab model profiles`: output, figure, and exit code 2 on bad input."""

import pytest
from click.testing import CliRunner

from latlab.cli import cli
from latlab.commands.model import parse_capacity, parse_sizes


@pytest.fixture
def runner():
    return CliRunner()


def test_efficiency_prints_a_table_and_writes_a_figure(runner, tmp_path):
    png = tmp_path / "e.png"
    res = runner.invoke(
        cli,
        [
            "model",
            "efficiency",
            "--profile",
            "4G",
            "--variant",
            "published",
            "--iw",
            "10",
            "--sizes",
            "10k,100k,1M",
            "-n",
            "5000",
            "-o",
            str(png),
            "--csv",
            str(tmp_path / "e.csv"),
        ],
    )
    assert res.exit_code == 0, res.output
    for text in ("size", "mean", "p5", "p50", "p95", "10 KB", "100 KB", "1 MB", "published"):
        assert text in res.output
    assert png.stat().st_size > 10_000
    assert (tmp_path / "e.csv").read_text().startswith("size_bytes,mean,p5,p50,p95")


def test_default_grid_and_output_path(runner):
    res = runner.invoke(
        cli, ["model", "efficiency", "--profile", "3.5G", "--per-decade", "1", "-n", "1000"]
    )
    assert res.exit_code == 0, res.output
    assert "10 MB" in res.output
    from pathlib import Path

    assert Path("out/model/efficiency-3.5G.png").is_file()


def test_background_flow_and_options(runner, tmp_path):
    res = runner.invoke(
        cli,
        [
            "model",
            "efficiency",
            "--profile",
            "3.5G",
            "--flows",
            "2",
            "--tfo",
            "--delayed-ack",
            "--sizes",
            "10k",
            "-n",
            "1000",
            "-o",
            str(tmp_path / "x.png"),
        ],
    )
    assert res.exit_code == 0, res.output
    assert "1 background" in res.output and "TFO" in res.output


def test_samples_csv(runner, tmp_path):
    csv = tmp_path / "m.csv"
    csv.write_text("throughput_kbps,rtt_ms\n5000,40\n6000,45\n20000,38\n")
    loaded = tmp_path / "l.csv"
    loaded.write_text("rtt_ms\n100\n150\n")
    args = [
        "model",
        "efficiency",
        "--samples",
        str(csv),
        "--sizes",
        "10k,1M",
        "-n",
        "1000",
        "-o",
        str(tmp_path / "s.png"),
    ]
    assert runner.invoke(cli, args).exit_code == 0
    res = runner.invoke(cli, args + ["--flows", "2", "--loaded-samples", str(loaded)])
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize(
    "csv_text, message",
    [
        ("rtt_ms\n40\n45\n", "missing column throughput_kbps"),
        ("throughput_kbps,rtt_ms\n5000,40\n-1,45\n", "throughput_kbps must be > 0, got -1"),
        ("throughput_kbps,rtt_ms\n0,40\n6000,45\n", "throughput_kbps must be > 0, got 0"),
        ("throughput_kbps,rtt_ms\n5000,x\n6000,45\n", "'x' is not a number"),
    ],
)
def test_bad_samples_exit_2(runner, tmp_path, csv_text, message):
    csv = tmp_path / "bad.csv"
    csv.write_text(csv_text)
    res = runner.invoke(cli, ["model", "efficiency", "--samples", str(csv)])
    assert res.exit_code == 2
    assert (
        res.stderr.startswith("error: ") and message in res.stderr and "Traceback" not in res.output
    )


@pytest.mark.parametrize(
    "args, message",
    [
        (["--profile", "5G"], "unknown profile '5G'"),
        (["--profile", "4G", "--sizes", "10k,0"], "flow sizes must be > 0 bytes, got 0"),
        (["--profile", "4G", "--sizes", "-5"], "flow sizes must be > 0 bytes"),
        (["--profile", "4G", "--sizes", "ten"], "not a flow size"),
        (["--profile", "4G", "--iw", "0"], "--iw"),
        (["--profile", "4G", "--capacity", "p120"], "between 0 and 100"),
        (["--profile", "3G", "--flows", "2"], "needs the RTT a new flow sees under load"),
        (["--profile", "4G", "--variant", "published", "--delayed-ack"], "--variant exact"),
        ([], "give one of --profile NAME or --samples FILE"),
        (["--samples", "nope.csv"], "no such file"),
    ],
)
def test_bad_input_exit_2(runner, args, message):
    res = runner.invoke(cli, ["model", "efficiency", *args])
    assert res.exit_code == 2, res.output
    assert message in res.stderr and "Traceback" not in res.output


def test_profiles_listing(runner):
    res = runner.invoke(cli, ["model", "profiles"])
    assert res.exit_code == 0
    for name in ("3G", "3.5G", "4G"):
        assert name in res.output


def test_parsers():
    assert parse_sizes("1500, 10k,320KiB,1M") == [1500, 1e4, 320 * 1024, 1e6]
    assert parse_capacity("p95") == 0.95 and parse_capacity("sampled") == "sampled"
    with pytest.raises(ValueError):
        parse_capacity("high")
