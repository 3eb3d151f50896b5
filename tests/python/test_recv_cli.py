"""``latlab recv``: the window-controlling TCP sink (latlab-net recv) as a latlab command.

Help and bad options need no binary; the option list is checked against the
binary's own, and a real transfer on loopback shows the controller's window
held by the kernel as its clamp. Loopback needs no root. Runtime: a second
or two.
"""

from __future__ import annotations

import csv
import io
import json
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from latlab.commands.recv import CONTROLLERS

# Real network use: `make test` runs the tests marked realtime after the parallel run of the others,
# two test files at a time, so the real-time runs never compete with the CPU-bound simulations.
pytestmark = pytest.mark.realtime


def _binary() -> Path | None:
    from latlab.errors import UserError
    from latlab.real.netbin import find_binary

    try:
        return find_binary()
    except UserError:
        return None


BIN = _binary()
needs_binary = pytest.mark.skipif(
    BIN is None,
    reason="latlab-net is not built (cargo build --release -p latlab-net, or make build)",
)
# A bound on a wait for state, so a broken build fails instead of hanging;
# a loaded machine finishes these well inside it.
GIVE_UP_S = 60.0


def latlab(args, env, **kw):
    return subprocess.run(
        [sys.executable, "-m", "latlab", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=GIVE_UP_S,
        **kw,
    )


def test_help_shows_options_and_examples(subprocess_env):
    res = latlab(["recv", "--help"], subprocess_env)
    assert res.returncode == 0, res.stderr
    for text in ("--listen", "--controller", "--param", "Examples:", "latlab recv --listen"):
        assert text in res.stdout
    for name in CONTROLLERS:
        assert name in res.stdout
    top = latlab(["--help"], subprocess_env)
    assert re.search(r"^\s+recv\s", top.stdout, re.M), top.stdout


@pytest.mark.parametrize(
    ("args", "mentioned"),
    [
        (["--listen", "127.0.0.1:5001", "--controller", "bogus"], "bogus"),
        (["--listen", "localhost", "--controller", "drwa"], "ADDR:PORT"),
        (["--listen", "127.0.0.1:5001"], "--controller"),
        (["--listen", "127.0.0.1:5001", "--controller", "drwa", "--param", "lambda"], "KEY=VALUE"),
        (["--listen", "127.0.0.1:5001", "--controller", "drwa", "--duration-s", "0"], "0"),
    ],
)
def test_bad_options_give_one_error_line_and_exit_2(subprocess_env, args, mentioned):
    res = latlab(["recv", *args], subprocess_env)
    assert res.returncode == 2, res.stderr
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), res.stderr
    assert mentioned in lines[0] and "Traceback" not in res.stderr


@needs_binary
def test_a_parameter_the_controller_lacks_is_a_usage_error(subprocess_env):
    # Checked by the binary against the controller (lamda is a typo of lambda).
    args = ["--listen", "127.0.0.1:1", "--controller", "drwa", "--param", "lamda=3"]
    res = latlab(["recv", *args], subprocess_env)
    assert res.returncode == 2, res.stderr
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "lamda" in lines[0], res.stderr


@needs_binary
def test_options_and_controllers_match_the_binary(subprocess_env):
    from latlab.cli import cli

    helptext = subprocess.run(
        [str(BIN), "recv", "--help"], capture_output=True, text=True, check=True
    ).stdout
    binary_opts = set(re.findall(r"^\s+(?:-\w, )?(--[a-z-]+)", helptext, re.M))
    binary_opts -= {"--help", "--version"}
    ours = {o for p in cli.commands["recv"].params for o in p.opts if o.startswith("--")}
    ours.discard("--help")
    assert ours == binary_opts
    binary_controllers = re.findall(r"^\s+- (\w+):", helptext, re.M)
    assert tuple(binary_controllers) == CONTROLLERS


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _connect(port: int, proc: subprocess.Popen) -> socket.socket:
    """Connect once the receiver listens (or fail if it exited first)."""
    give_up = time.monotonic() + GIVE_UP_S
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=GIVE_UP_S)
        except ConnectionRefusedError:
            if proc.poll() is not None:
                pytest.fail(f"latlab recv exited with {proc.returncode}: {proc.stderr.read()}")
            if time.monotonic() > give_up:
                pytest.fail("latlab recv never listened")
            time.sleep(0.01)


def _rows(path: Path) -> list[dict[str, str]]:
    """The record's complete rows so far. The receiver may be writing it as it is read: a line
    without its newline (the header included) is not written yet."""
    if not path.is_file():
        return []
    text = path.read_text()
    complete = text[: text.rfind("\n") + 1]
    return list(csv.DictReader(io.StringIO(complete, newline="")))


@needs_binary
def test_loopback_transfer_runs_the_controller(subprocess_env, tmp_path):
    record, cap_bytes = tmp_path / "recv.csv", 300_000
    port = _free_port()
    args = ["--listen", f"127.0.0.1:{port}", "--controller", "drwa"]
    args += ["--param", f"rmem_max_bytes={cap_bytes}", "--record", str(record)]
    args += ["--interval-ms", "5", "--quiet"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "latlab", "recv", *args],
        env=subprocess_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        sent, chunk = 0, b"\x07" * (128 * 1024)
        with _connect(port, proc) as conn:
            # Send until the receiver has recorded a few intervals with data.
            give_up = time.monotonic() + GIVE_UP_S
            while sum(int(r["bytes_total"]) > 0 for r in _rows(record)) < 3:
                assert time.monotonic() < give_up, "no rows recorded"
                conn.sendall(chunk)
                sent += len(chunk)
            conn.shutdown(socket.SHUT_WR)
        assert proc.wait(timeout=GIVE_UP_S) == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    summary = json.loads(record.with_suffix(".summary.json").read_text())
    assert summary["controller"] == "drwa" and summary["end"] == "eof"
    assert summary["bytes_received"] == sent
    # The buffer is the receiver's own: at least the controller's largest window.
    assert summary["rcvbuf_bytes"] >= cap_bytes
    rows = _rows(record)
    for r in rows:
        rwnd = int(r["rwnd_bytes"])
        assert 0 < rwnd <= cap_bytes
        # The kernel holds the controller's window as its clamp.
        assert int(r["window_clamp_bytes"]) == rwnd
    assert int(rows[-1]["bytes_total"]) <= sent
