"""`latlab sweep` and `latlab results`: exit codes, output, and surviving kill -9 and Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from latlab.cli import cli
from latlab.sweep import load_run
from latlab.sweep.store import CATALOG, STATUS_JSON, Store
from test_sweep_run import QUICK_TOML, count_runs, fault_env


@pytest.fixture
def runner():
    return CliRunner()


def write_sweep(tmp_path: Path, body: str) -> Path:
    (tmp_path / "quick.toml").write_text(QUICK_TOML)
    path = tmp_path / "sw.toml"
    path.write_text('base = "quick.toml"\n' + body)
    return path


def test_sweep_then_results(core, runner, tmp_path):
    path = write_sweep(tmp_path, 'seeds = 2\n[grid]\n"flows.0.cc" = ["newreno", "cubic"]\n')
    res = runner.invoke(cli, ["sweep", str(path), "-o", str(tmp_path / "out"), "--jobs", "2"])
    assert res.exit_code == 0, res.output
    assert "4 runs: 4 ok" in res.output and "latlab results" in res.output
    catalog = pd.read_parquet(tmp_path / "out" / CATALOG)
    assert (catalog["status"] == "ok").all()

    res = runner.invoke(cli, ["results", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    assert "4 runs: 4 ok" in res.output and "flows.0.cc" in res.output
    assert all(run_id in res.output for run_id in catalog["run_id"])
    res = runner.invoke(cli, ["results", str(tmp_path / "out"), "--group"])
    assert res.exit_code == 0 and "cubic" in res.output and "±" in res.output


def test_sweep_over_cubic_and_bbr(core, runner, tmp_path):
    """BBR can be named in a sweep's grid like any other controller; each run's flows use the named one."""
    path = write_sweep(tmp_path, '[grid]\n"flows.0.cc" = ["cubic", "bbr"]\n')
    out = tmp_path / "out"
    res = runner.invoke(cli, ["sweep", str(path), "-o", str(out), "--inline"])
    assert res.exit_code == 0, res.output
    assert "2 runs: 2 ok" in res.output
    catalog = pd.read_parquet(out / CATALOG)
    assert catalog["flows.0.cc"].tolist() == ["cubic", "bbr"]
    for _, row in catalog.iterrows():
        flows = load_run(out, row["run_id"]).flows
        assert set(flows["cc"]) == {row["flows.0.cc"]}
        assert flows["goodput_bps"].sum() > 0
    res = runner.invoke(cli, ["results", str(out), "--group"])
    assert res.exit_code == 0 and "bbr" in res.output and "cubic" in res.output


def test_default_outdir_is_out_slash_name(core, runner, tmp_path):
    path = write_sweep(tmp_path, 'name = "mine"\n')
    res = runner.invoke(cli, ["sweep", str(path), "-q", "--inline"])
    assert res.exit_code == 0 and res.output == ""
    assert (Path("out") / "mine" / CATALOG).is_file()


def test_failed_runs_exit_1(core, runner, tmp_path, monkeypatch):
    for key, value in fault_env().items():
        monkeypatch.setenv(key, value)
    path = write_sweep(tmp_path, '[[cases]]\nname = "fault-error"\n[[cases]]\nname = "fine"\n')
    res = runner.invoke(cli, ["sweep", str(path), "-o", str(tmp_path / "out"), "--jobs", "2"])
    assert res.exit_code == 1, res.output
    assert "1 ok, 1 failed" in res.output and "RuntimeError: injected error" in res.output
    res = runner.invoke(cli, ["results", str(tmp_path / "out"), "--failed"])
    assert res.exit_code == 0 and "injected error" in res.output and "fine" not in res.output


@pytest.mark.parametrize(
    "body, message",
    [
        ("bogus = 1\n", "bogus: unknown key"),
        ('[grid]\n"flows.0.cc" = "cubic"\n', "expected a list"),
        ('[grid]\n"topology.core_rate_bps" = [1e6, -5.0]\n', "core_rate_bps"),
    ],
)
def test_bad_sweep_exits_2_with_one_line(core, runner, tmp_path, body, message):
    path = write_sweep(tmp_path, body)
    res = runner.invoke(cli, ["sweep", str(path), "-o", str(tmp_path / "out")])
    assert res.exit_code == 2
    assert (
        res.stderr.startswith("error: ") and res.stderr.count("\n") == 1 and message in res.stderr
    )
    assert not (tmp_path / "out" / "runs").exists()


def test_missing_file_and_not_a_sweep_folder(runner, tmp_path):
    res = runner.invoke(cli, ["sweep", str(tmp_path / "nope.toml")])
    assert res.exit_code == 2 and res.stderr.startswith("error: no such file")
    res = runner.invoke(cli, ["results", str(tmp_path)])
    assert res.exit_code == 2 and "not a sweep folder" in res.stderr
    res = runner.invoke(cli, ["sweep", str(tmp_path / "nope.toml"), "--dask", "local", "--inline"])
    assert res.exit_code == 2


# ----- interruptions, in a real process --------------------------------------------


def _workers_of(pid: int) -> list[int]:
    """Sweep worker processes started by process ``pid`` that are still alive (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if (
            b"latlab.sweep.worker" in cmdline
            and f"LATLAB_SWEEP_PARENT_PID={pid}".encode() in environ
            and state != "Z"
        ):
            found.append(int(entry.name))
    return found


def _wait_for(condition, timeout_s: float = 120.0, what: str = "") -> None:
    """Poll until ``condition()``; the bound only turns a hang into a failure (a loaded machine
    starts the sweep's Python processes in seconds, not minutes)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _ok_runs(out: Path) -> dict[str, dict]:
    found = {}
    for status_path in (out / "runs").glob(f"*/{STATUS_JSON}"):
        status = json.loads(status_path.read_text())
        if status["status"] == "ok":
            found[status["run_id"]] = status
    return found


def _default_sigint() -> None:
    """In the child before exec: Ctrl-C's default disposition, whatever this process inherited.

    A suite run as a background job of a non-interactive shell has SIGINT ignored, and an
    ignored signal stays ignored across fork and exec; Python then installs no
    KeyboardInterrupt handler, and the sweep would never see the Ctrl-C this test sends.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start_sweep(tmp_path: Path, subprocess_env: dict, n_runs: int, finish: int):
    """A 2-worker sweep of ``n_runs`` seeds whose first ``finish`` runs finish and the rest hold.

    The held runs wait until their worker is killed, so the sweep is still running whenever the
    test gets round to interrupting it, on a machine of any speed. Returns the environment
    without the hold, for a resume that must finish.
    """
    counter = tmp_path / "counter.txt"
    env = {**subprocess_env, **fault_env(counter)}
    path = write_sweep(tmp_path, f"seeds = {n_runs}\n")
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "latlab", "sweep", str(path), "-o", str(out), "--jobs", "2"]
    proc = subprocess.Popen(
        cmd,
        env={**env, "LATLAB_TEST_HOLD_ABOVE_SEED": str(finish)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    )
    return proc, cmd, env, out, counter


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")
def test_kill_9_loses_no_finished_run_and_the_same_command_resumes(core, tmp_path, subprocess_env):
    n_runs = 16
    proc, cmd, env, out, counter = _start_sweep(tmp_path, subprocess_env, n_runs, finish=4)
    try:
        _wait_for(
            lambda: len(_ok_runs(out)) >= 4 or proc.poll() is not None, what="4 finished runs"
        )
        assert proc.poll() is None, proc.communicate()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    _wait_for(
        lambda: not _workers_of(proc.pid), timeout_s=15, what="the workers to die with their parent"
    )

    done = _ok_runs(out)
    assert 4 <= len(done) < n_runs
    store = Store(out)
    stamps = {rid: (store.run_dir(rid) / STATUS_JSON).stat().st_mtime_ns for rid in done}
    for rid in done:  # every finished run is a complete results folder
        assert (store.run_dir(rid) / "run.json").is_file()
    seeds_done = {status["params"]["seed"] for status in done.values()}

    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert f"{len(done)} already done" in res.stderr
    final = _ok_runs(out)
    assert len(final) == n_runs
    assert {rid: (store.run_dir(rid) / STATUS_JSON).stat().st_mtime_ns for rid in done} == stamps
    assert all(final[rid]["attempt"] == 1 for rid in done)
    runs = count_runs(counter)
    assert all(runs[f"tiny {seed}"] == 1 for seed in seeds_done), (
        runs
    )  # finished runs were not run again
    assert set(runs) == {f"tiny {seed}" for seed in range(1, n_runs + 1)}
    catalog = pd.read_parquet(out / CATALOG)
    assert len(catalog) == n_runs and (catalog["status"] == "ok").all()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")
def test_ctrl_c_stops_cleanly_and_keeps_finished_runs(core, tmp_path, subprocess_env):
    proc, cmd, env, out, counter = _start_sweep(tmp_path, subprocess_env, 12, finish=2)
    try:
        _wait_for(
            lambda: len(_ok_runs(out)) >= 2 or proc.poll() is not None, what="2 finished runs"
        )
        assert proc.poll() is None, proc.communicate()
        os.kill(proc.pid, signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    assert "error: interrupted" in stderr and "Traceback" not in stderr
    assert not _workers_of(proc.pid)
    done = _ok_runs(out)
    catalog = pd.read_parquet(out / CATALOG)  # flushed on the way out
    assert set(catalog.loc[catalog["status"] == "ok", "run_id"]) == set(done)
    assert not (catalog["status"] == "failed").any()  # interrupted runs are not failures


def test_progress_is_plain_lines_off_a_terminal_and_in_ci(monkeypatch, capsys):
    from io import StringIO

    from rich.console import Console

    from latlab.sweep.progress import SweepProgress

    def simulate(console):
        with SweepProgress("s", total=3, done_before=1, console=console, where="2 workers") as bar:
            for i in (1, 2):
                bar.run_started({"run_id": str(i)})
            bar.run_finished({"run_id": "1", "status": "ok"})
            bar.run_finished(
                {"run_id": "2", "status": "failed", "error": "boom", "params": {"seed": 2}}
            )
        return bar

    bar = simulate(Console(file=StringIO()))  # not a terminal
    err = capsys.readouterr().err
    assert "sweep s: 3 runs, 1 already done; running 2 on 2 workers" in err
    assert (
        "run 2 (seed=2) failed: boom" in err and "3/3 done (1 from before), 1 ok, 1 failed" in err
    )
    assert (bar.ok, bar.failed, bar.running) == (1, 1, 0)

    monkeypatch.setenv("CI", "true")
    terminal = StringIO()
    simulate(Console(file=terminal, force_terminal=True))
    assert "━" not in terminal.getvalue() and "1 failed" in capsys.readouterr().err


def test_stale_refuse_exits_2_and_runs_nothing(core, runner, tmp_path):
    path = write_sweep(tmp_path, 'name = "st"\n')
    out = tmp_path / "out"
    assert runner.invoke(cli, ["sweep", str(path), "-o", str(out), "-q", "--inline"]).exit_code == 0
    (status_path,) = (out / "runs").glob(f"*/{STATUS_JSON}")
    st = json.loads(status_path.read_text())
    st["latlab_version"] = "0.0.1"
    status_path.write_text(json.dumps(st))
    res = runner.invoke(
        cli, ["sweep", str(path), "-o", str(out), "-q", "--inline", "--stale", "refuse"]
    )
    assert res.exit_code == 2, res.output
    assert "another latlab version" in res.stderr and res.stderr.count("\n") == 1
    assert json.loads(status_path.read_text())["latlab_version"] == "0.0.1"
    # The default redoes it.
    assert runner.invoke(cli, ["sweep", str(path), "-o", str(out), "-q", "--inline"]).exit_code == 0
    assert json.loads(status_path.read_text())["latlab_version"] != "0.0.1"
