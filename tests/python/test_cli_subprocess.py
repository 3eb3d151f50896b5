"""The installed-style entry points in real subprocesses: exit codes and no tracebacks."""

import subprocess
import sys

import pytest

from conftest import TINY_TOML


def latlab_cmd(args, env, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "latlab", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
    )


def test_help(subprocess_env):
    res = latlab_cmd(["--help"], subprocess_env)
    assert res.returncode == 0
    for cmd in ("run", "validate", "bench"):
        assert cmd in res.stdout


def test_missing_file(subprocess_env, tmp_path):
    res = latlab_cmd(["run", str(tmp_path / "missing.toml")], subprocess_env)
    assert res.returncode == 2
    assert "Traceback" not in res.stderr and res.stderr.startswith("error: no such file")


def test_bad_flag(subprocess_env, tmp_path):
    res = latlab_cmd(["run", "x.toml", "--frobnicate"], subprocess_env)
    assert res.returncode == 2 and "Traceback" not in res.stderr and res.stderr.startswith("error:")


BAD_SCENARIOS = {
    "unknown-key": ("bogus_key = 1\n" + TINY_TOML, "bogus_key"),
    "wrong-type": (TINY_TOML.replace("duration_s = 2.0", 'duration_s = "long"'), "duration_s"),
    "negative-rate": (
        TINY_TOML.replace("core_rate_bps = 10e6", "core_rate_bps = -10e6"),
        "core_rate_bps",
    ),
    "unknown-node": (TINY_TOML.replace('src = "s{i}"', 'src = "nowhere{i}"'), "nowhere"),
}


@pytest.mark.parametrize("case", sorted(BAD_SCENARIOS))
@pytest.mark.parametrize("command", ["run", "validate"])
def test_invalid_scenario_exits_2(core, subprocess_env, tmp_path, case, command):
    text, mentioned = BAD_SCENARIOS[case]
    path = tmp_path / f"{case}.toml"
    path.write_text(text)
    args = [command, str(path)] + (["-o", str(tmp_path / "out")] if command == "run" else [])
    res = latlab_cmd(args, subprocess_env)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}"), res.stderr
    assert mentioned in lines[0]
    assert not (tmp_path / "out" / "run.json").exists()


def test_run_end_to_end(core, subprocess_env, tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text(TINY_TOML)
    res = latlab_cmd(["run", str(path), "-o", str(tmp_path / "out")], subprocess_env)
    assert res.returncode == 0, res.stderr
    for name in ("flows.parquet", "links.parquet", "run.json", "scenario.toml", "overview.png"):
        assert (tmp_path / "out" / name).is_file(), name
    assert "conservation" in res.stdout


def test_validate_ok(core, subprocess_env, tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text(TINY_TOML)
    res = latlab_cmd(["validate", str(path)], subprocess_env)
    assert res.returncode == 0 and res.stdout.strip() == "ok"
