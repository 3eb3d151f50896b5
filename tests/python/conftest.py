"""Shared fixtures: the source tree on sys.path, the real core (or a skip), and a fake core."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PYTHON_SRC = REPO / "python"
if str(PYTHON_SRC) not in sys.path:
    sys.path.insert(0, str(PYTHON_SRC))

NOT_BUILT = "latlab._core is not built (run: maturin develop --release -m crates/py/Cargo.toml)"

TINY_TOML = """\
name = "tiny"
seed = 3
duration_s = 2.0
sample_interval_ms = 100

[topology]
kind = "dumbbell"
pairs = 2
access_rate_bps = 100e6
access_delay_ms = 1
core_rate_bps = 10e6
core_delay_ms = 5
core_queue = { kind = "droptail", limit_bytes = 30000 }

[[flows]]
name = "bulk"
count = 2
src = "s{i}"
dst = "d{i}"
cc = "newreno"
start_s = { uniform = [0, 0.5] }
"""


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A real-network measurement is skipped, with the reason, while TCP memory is under pressure.

    Checked before the test's fixtures run (a module's shared measurement included), so a
    machine in that state reports a skip naming it rather than a wrong figure.
    """
    if item.get_closest_marker("real_network") is None:
        return
    from latlab.real import tcpmem

    reason = tcpmem.unfit_reason()
    if reason:
        pytest.skip(reason)


@pytest.fixture(autouse=True)
def _isolated_cwd(tmp_path, monkeypatch):
    """Run every test in its own folder, so a default `out/<name>` never lands in the repository."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def core():
    """The compiled core; the test is skipped with a clear reason when it is not built."""
    return pytest.importorskip("latlab._core", reason=NOT_BUILT)


@pytest.fixture
def fake_core(monkeypatch):
    """Install tests/python/fake_core.py as latlab._core for this test."""
    sys.path.insert(0, str(Path(__file__).parent))
    import fake_core as fake

    monkeypatch.setitem(sys.modules, "latlab._core", fake)
    monkeypatch.setattr(fake, "BREAK_CONSERVATION", False)
    monkeypatch.setattr(fake, "BREAK_WHOLE", False)
    return fake


@pytest.fixture
def tiny_toml(tmp_path) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(TINY_TOML)
    return path


@pytest.fixture
def subprocess_env() -> dict[str, str]:
    """Environment for `python -m latlab ...` subprocesses: this source tree importable, no CI quirks."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(PYTHON_SRC)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    )
    env.pop("LATLAB_DEBUG", None)
    return env
