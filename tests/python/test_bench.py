"""latlab bench and its worker process."""

import json
import subprocess
import sys

from click.testing import CliRunner

from latlab.bench import suite as bench
from latlab.bench.measure import QUICK_FRACTION, quick
from latlab.cli import cli

RECORD_KEYS = {"name", "sim_s", "wall_s", "events", "events_per_s", "peak_rss_mb"}


def test_worker_stays_lean(subprocess_env):
    code = "import sys, latlab.bench.measure; print(sorted(m for m in ('pandas', 'pyarrow', 'matplotlib', 'rich') if m in sys.modules))"
    res = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"


def test_quick_scales_duration():
    import tomllib

    scaled = tomllib.loads(
        quick("duration_s = 400\nmeasure_from_s = 100\n[topology]\nkind = 'x'\n")
    )
    assert (
        scaled["duration_s"] == 400 * QUICK_FRACTION
        and scaled["measure_from_s"] == 100 * QUICK_FRACTION
    )


def test_worker_prints_one_json_line(core, subprocess_env):
    res = subprocess.run(
        [sys.executable, "-m", "latlab.bench.measure", "dumbbell-10", "--quick"],
        capture_output=True,
        text=True,
        env=subprocess_env,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    lines = res.stdout.strip().splitlines()
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert RECORD_KEYS <= set(record)
    assert (
        record["sim_s"] == 60 * QUICK_FRACTION
        and record["events"] > 0
        and record["peak_rss_mb"] > 0
    )


def test_worker_unknown_name(subprocess_env):
    res = subprocess.run(
        [sys.executable, "-m", "latlab.bench.measure", "nope"],
        capture_output=True,
        text=True,
        env=subprocess_env,
    )
    assert res.returncode == 2 and "dumbbell-10" in res.stderr


def test_bench_quick_json(core):
    res = CliRunner().invoke(cli, ["bench", "dumbbell-10", "--quick", "--json"])
    assert res.exit_code == 0, res.output
    record = json.loads(res.stdout.strip().splitlines()[-1])
    assert RECORD_KEYS <= set(record) and record["machine"]["cores"] >= 1


def test_bench_table(core):
    res = CliRunner().invoke(cli, ["bench", "dumbbell-10", "--quick"])
    assert res.exit_code == 0, res.output
    assert "dumbbell-10" in res.stdout and "cores" in res.stdout


def test_machine_info():
    info = bench.machine_info()
    assert info["cpu"] and info["cores"] >= 1


def test_the_record_names_the_cores_build_and_other_builds_are_warned_of(core, monkeypatch):
    # The extension says which cargo profile built it (crates/py/build.rs): release from make build,
    # release-tests from make test.
    assert bench.machine_info()["build"] in ("release", "release-tests")
    assert bench.build_warning("release") is None
    monkeypatch.setattr(bench, "build_profile", lambda: "release-tests")
    res = CliRunner().invoke(cli, ["bench", "dumbbell-10", "--quick", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout.strip().splitlines()[-1])["machine"]["build"] == "release-tests"
    assert "warning: the compiled core is the release-tests build, not release" in res.stderr
