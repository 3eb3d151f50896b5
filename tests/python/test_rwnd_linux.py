"""Receiver-window controllers on real Linux TCP over the TUN emulator (benches/validation/rwnd_linux.py).

Needs root, /dev/net/tun, iproute2 and the built latlab-net; skips with the reason otherwise. About a minute.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benches" / "validation" / "rwnd_linux.py"


def _load():
    spec = importlib.util.spec_from_file_location("rwnd_linux", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def mod():
    m = _load()
    reason = m.why_not()
    if reason:
        pytest.skip(reason)
    if not (Path(m.ROOT) / "target/release/latlab-net").exists():
        pytest.skip("latlab-net is not built (make build)")
    return m


def test_rtac_and_drwa_remove_the_bloat_that_autotuning_builds(mod, tmp_path):
    args = mod.parse_args(["--seconds", "10", "--warmup", "4"])
    exe = mod.binary(args)
    rows = {}
    for c in ("autotuning", "drwa", "rtac"):
        (tmp_path / c).mkdir()
        (r,) = mod.run_case(args, exe, [c], tmp_path / c)
        rows[c] = r
    at = rows["autotuning"]
    assert at["goodput_mbps"] > 0.85 * 30 * 0.96  # the link's payload rate, less header
    assert at["rtt_mean_ms"] > 4 * 40, at  # the 1000-packet buffer fills: RTT far above 40 ms
    for c in ("drwa", "rtac"):
        assert rows[c]["rtt_mean_ms"] < 0.5 * at["rtt_mean_ms"], rows[c]
        assert rows[c]["goodput_mbps"] >= 0.85 * at["goodput_mbps"], rows[c]


def test_in_direct_competition_drwa_starves_and_rtac_does_not(mod, tmp_path):
    args = mod.parse_args(["--seconds", "10", "--warmup", "4"])
    exe = mod.binary(args)
    share = {}
    for c in ("rtac", "drwa"):
        (tmp_path / c).mkdir()
        at, other = mod.run_case(args, exe, ["autotuning", c], tmp_path / c)
        assert at["controller"] == "autotuning" and other["controller"] == c
        share[c] = other["goodput_mbps"] / at["goodput_mbps"]
    assert share["drwa"] < 0.2, share
    assert share["rtac"] > 2 * share["drwa"], share
