"""``latlab emulate``: the pass-through to ``latlab-net emulate``.

- Without root: bad command lines exit 2 with the binary's message, through
  the binary and through ``python -m latlab``; an unreadable scenario is a
  clear error (exit 1) before anything is built.
- With root, /dev/net/tun and iproute2 (skipped otherwise, with the reason):
  a command run through ``latlab emulate`` sits in the client namespace of
  scenarios/emulate-20mbit-50ms.toml, connects to a server in the server
  namespace in no less than the 50 ms RTT, and its exit code comes back;
  the summary is written and both namespaces are gone afterwards.

The emulator's own behaviour (goodput, rate, counters, SIGKILL recovery) is
tested in crates/net/tests/emulate_netns.rs; timing in benches/emulate_timing.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO


def _binary() -> Path | None:
    from latlab.errors import UserError
    from latlab.real.netbin import find_binary

    try:
        return find_binary()
    except UserError:
        return None


BIN = _binary()
SCENARIO = REPO / "scenarios" / "emulate-20mbit-50ms.toml"

# Real network use: `make test` runs the tests marked realtime after the parallel run of the others,
# two test files at a time, so the real-time runs never compete with the CPU-bound simulations.
pytestmark = [
    pytest.mark.realtime,
    pytest.mark.skipif(
        BIN is None,
        reason="latlab-net is not built (cargo build --release -p latlab-net, or make build)",
    ),
]


def _testbed_missing() -> str | None:
    if os.geteuid() != 0:
        return "not root"
    if not Path("/dev/net/tun").exists():
        return "no /dev/net/tun"
    if shutil.which("ip") is None:
        return "no iproute2 'ip' command"
    return None


@pytest.mark.parametrize(
    "args, mentions",
    [
        (["emulate", str(SCENARIO)], "COMMAND"),
        (["emulate", str(SCENARIO), "--stay", "--", "true"], "--stay"),
        (["emulate", str(SCENARIO), "--duration-s", "-1"], "duration"),
        (["emulate", str(SCENARIO), "--mtu", "100", "--", "true"], "100"),
        (["emulate", str(SCENARIO), "--pcap", "--", "true"], "--out"),
    ],
)
def test_bad_command_lines_exit_2(args, mentions, subprocess_env):
    res = subprocess.run([str(BIN), *args], capture_output=True, text=True, timeout=10)
    assert res.returncode == 2 and mentions in res.stderr and "panicked" not in res.stderr, (
        res.stderr
    )
    env = dict(subprocess_env, LATLAB_NET_BIN=str(BIN))
    res = subprocess.run(
        [sys.executable, "-m", "latlab", *args], capture_output=True, text=True, env=env, timeout=30
    )
    assert res.returncode == 2 and mentions in res.stderr and "Traceback" not in res.stderr, (
        res.stderr
    )


def test_an_unreadable_scenario_is_a_clear_error(subprocess_env, tmp_path):
    env = dict(subprocess_env, LATLAB_NET_BIN=str(BIN))
    missing = tmp_path / "nope.toml"
    res = subprocess.run(
        [sys.executable, "-m", "latlab", "emulate", str(missing), "--", "true"],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    assert res.returncode == 1 and str(missing) in res.stderr and "Traceback" not in res.stderr, (
        res.stderr
    )


# Run in the client namespace: start a listener in the server namespace,
# connect to it, print the connect time and exit 3.
CLIENT = r"""
import json, os, socket, subprocess, sys, time
server = subprocess.Popen(["ip", "netns", "exec", os.environ["LATLAB_EMU_SERVER_NS"], sys.executable, "-c",
    "import socket; s = socket.socket(); s.bind(('0.0.0.0', 7000)); s.listen(); print('up', flush=True); "
    "c, _ = s.accept(); c.sendall(b'hi'); c.close()"], stdout=subprocess.PIPE, text=True)
server.stdout.readline()
t0 = time.monotonic()
c = socket.create_connection((os.environ["LATLAB_EMU_SERVER_ADDR"], 7000), timeout=10)
connect_ms = (time.monotonic() - t0) * 1e3
data = c.recv(10)
server.wait(timeout=10)
netns = subprocess.run(["ip", "netns", "identify"], capture_output=True, text=True).stdout.strip()
print(json.dumps({"connect_ms": connect_ms, "data": data.decode(), "netns": netns}))
sys.exit(3)
"""


def test_a_command_crosses_the_emulated_path(subprocess_env, tmp_path):
    reason = _testbed_missing()
    if reason:
        pytest.skip(f"{reason}: the emulator needs root, /dev/net/tun and iproute2")
    env = dict(subprocess_env, LATLAB_NET_BIN=str(BIN))
    out = tmp_path / "emu"
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "latlab",
            "emulate",
            str(SCENARIO),
            "--quiet",
            "--out",
            str(out),
            "--",
            sys.executable,
            "-c",
            CLIENT,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert res.returncode == 3, res.stderr
    lines = res.stdout.splitlines()
    ready = json.loads(lines[0])
    result = json.loads(lines[-1])
    assert ready["event"] == "ready"
    assert result["data"] == "hi" and result["netns"] == ready["client_ns"]
    # 25 ms each way: the handshake cannot beat the 50 ms RTT. Nor was it lost and retried: that
    # takes Linux's 1 s SYN retransmission timeout, far beyond what a busy machine adds.
    assert 50.0 <= result["connect_ms"] < 1000.0, result
    summary = json.loads((out / "summary.json").read_text())
    assert summary["command_exit_code"] == 3
    # SYN and its ACK up, SYN-ACK and data down (later packets may still be in flight at exit).
    assert summary["up"]["delivered_pkts"] >= 2 and summary["down"]["delivered_pkts"] >= 2
    assert all(link["conservation_ok"] for link in summary["links"])
    assert (out / "link_samples.csv").read_text().startswith("time_ns,link_id,queue_bytes,")
    left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert ready["client_ns"] not in left and ready["server_ns"] not in left
