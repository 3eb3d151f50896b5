"""The latlab command through click's CliRunner: help, exit codes, outputs."""

import json

import pytest
from click.testing import CliRunner

from conftest import TINY_TOML
from latlab.cli import cli


@pytest.fixture
def runner():
    return CliRunner()


def test_help_lists_commands(runner):
    res = runner.invoke(cli, ["--help"])
    assert res.exit_code == 0
    for cmd in ("run", "validate", "bench"):
        assert cmd in res.output
    assert "Examples" in res.output


@pytest.mark.parametrize("cmd", ["run", "validate", "bench"])
def test_command_help_has_example(runner, cmd):
    res = runner.invoke(cli, [cmd, "--help"])
    assert res.exit_code == 0 and "latlab " + cmd in res.output


def test_missing_file_exits_2(runner, tmp_path):
    res = runner.invoke(cli, ["run", str(tmp_path / "nope.toml")])
    assert res.exit_code == 2
    assert res.stderr.startswith("error: no such file") and res.stderr.count("\n") == 1


def test_bad_flag_exits_2(runner, tiny_toml):
    res = runner.invoke(cli, ["run", str(tiny_toml), "--bogus"])
    assert res.exit_code == 2
    assert res.stderr.startswith("error: No such option") and "Traceback" not in res.output


def test_bad_flag_value_exits_2(runner, tiny_toml):
    res = runner.invoke(cli, ["run", str(tiny_toml), "--seed", "minus-one"])
    assert res.exit_code == 2 and res.stderr.startswith("error:")


def test_directory_instead_of_file(runner, tmp_path):
    res = runner.invoke(cli, ["validate", str(tmp_path)])
    assert res.exit_code == 2 and "is a directory" in res.stderr


def test_invalid_toml_exits_2(runner, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("name = \n")
    res = runner.invoke(cli, ["validate", str(bad)])
    assert res.exit_code == 2 and res.stderr.startswith(f"error: {bad}: invalid TOML")


def test_scenario_error_exits_2(runner, fake_core, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("bogus = 1\n" + TINY_TOML)
    res = runner.invoke(cli, ["run", str(bad)])
    assert res.exit_code == 2 and res.stderr.startswith(f"error: {bad}: bogus")


def test_validate_ok(runner, fake_core, tiny_toml):
    res = runner.invoke(cli, ["validate", str(tiny_toml)])
    assert res.exit_code == 0 and res.output.strip() == "ok"


def test_run_writes_results_and_figure(runner, fake_core, tiny_toml, tmp_path):
    out = tmp_path / "out"
    res = runner.invoke(
        cli, ["run", str(tiny_toml), "-o", str(out), "--seed", "8", "--duration", "1"]
    )
    assert res.exit_code == 0, res.output
    assert (out / "overview.png").is_file() and (out / "flows.parquet").is_file()
    meta = json.loads((out / "run.json").read_text())
    assert meta["run"]["seed"] == 8 and meta["run"]["duration_s"] == 1.0
    assert "conservation" in res.stdout and "events/s" in res.stdout


def test_run_default_outdir_and_options(runner, fake_core, tiny_toml, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(cli, ["run", str(tiny_toml), "--quiet", "--no-plot"])
    assert res.exit_code == 0 and res.output == ""
    assert (tmp_path / "out" / "tiny" / "run.json").is_file()
    assert not (tmp_path / "out" / "tiny" / "overview.png").exists()


def test_run_builtin_by_name(runner, fake_core, tmp_path):
    res = runner.invoke(cli, ["run", "default", "-o", str(tmp_path), "-q", "--duration", "1"])
    assert res.exit_code == 0 and (tmp_path / "run.json").is_file()


def test_run_default_flag(runner, fake_core, tmp_path):
    res = runner.invoke(cli, ["run", "--default", "-q", "--no-plot", "--duration", "1"])
    assert res.exit_code == 0 and (tmp_path / "out" / "default" / "run.json").is_file()


@pytest.mark.parametrize("args", [["run"], ["run", "default", "--default"]])
def test_run_needs_exactly_one_scenario(runner, args):
    res = runner.invoke(cli, args)
    assert res.exit_code == 2 and "--default" in res.stderr


def test_conservation_failure_exits_1(runner, fake_core, tiny_toml, tmp_path, monkeypatch):
    monkeypatch.setattr(fake_core, "BREAK_CONSERVATION", True)
    res = runner.invoke(cli, ["run", str(tiny_toml), "-o", str(tmp_path), "-q"])
    assert res.exit_code == 1
    assert "conservation FAILED" in res.stderr and (tmp_path / "run.json").is_file()


def test_interrupt_exits_130(runner, fake_core, tiny_toml, tmp_path, monkeypatch):
    def interrupted(self, t_ns):
        raise KeyboardInterrupt

    monkeypatch.setattr(fake_core.Simulation, "run_until", interrupted)
    res = runner.invoke(cli, ["run", str(tiny_toml), "-o", str(tmp_path)])
    assert res.exit_code == 130 and "interrupted" in res.stderr
    assert not (tmp_path / "run.json").exists()


def test_core_not_built(runner, tiny_toml, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "latlab._core", None)
    res = runner.invoke(cli, ["validate", str(tiny_toml)])
    assert res.exit_code == 1 and "not available" in res.stderr


def test_bench_list(runner):
    res = runner.invoke(cli, ["bench", "--list"])
    assert res.exit_code == 0
    assert [ln.split()[0] for ln in res.output.splitlines()] == [
        "cellular-100",
        "dumbbell-10",
        "dumbbell-1000-bbr",
        "dumbbell-1000",
        "pacing-baseline",
    ]


def test_bench_unknown_name(runner):
    res = runner.invoke(cli, ["bench", "nope"])
    assert res.exit_code == 2 and "dumbbell-10" in res.stderr


def test_version(runner):
    res = runner.invoke(cli, ["--version"])
    assert res.exit_code == 0 and res.output.startswith("latlab ")


def test_duration_shrinks_warmup_that_would_not_fit():
    from latlab import Scenario
    from latlab.cli import with_duration

    sc = Scenario({"duration_s": 60, "measure_from_s": 10})
    assert with_duration(sc, 5).get("measure_from_s") == pytest.approx(5 / 6)
    assert with_duration(sc, 30).get("measure_from_s") == 10
    assert with_duration(Scenario({"duration_s": 60}), 5).get("measure_from_s", None) is None
