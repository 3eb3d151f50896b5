"""Test-only fault injection for sweep workers (never installed with latlab).

Tests put this folder first on PYTHONPATH and set LATLAB_TEST_FAULTS=1, so
every Python process they start (pool workers, Dask workers) imports it at
start-up and wraps ``latlab._core.Simulation``: a scenario whose ``name``
starts with ``fault-`` then misbehaves:

* ``fault-panic``: raises a ``PanicException`` deriving from BaseException, as
  pyo3 does for a Rust panic;
* ``fault-error``: raises RuntimeError;
* ``fault-crash``: kills its own process with SIGSEGV;
* ``fault-hang``: sleeps for an hour.

With LATLAB_TEST_SLOW_S every run first sleeps that long, and with
LATLAB_TEST_COUNTER every run that starts appends "<name> <seed>" to that file.
With LATLAB_TEST_HOLD_ABOVE_SEED=N every run whose seed is above N waits until
its worker is killed: a test that interrupts a sweep after N finished runs
then knows the sweep cannot have finished on its own first, however slow
or fast the machine.
"""

from __future__ import annotations

import os
import signal
import time
import tomllib


class PanicException(BaseException):
    """Stands in for pyo3_runtime.PanicException (also a BaseException)."""


PanicException.__module__ = "pyo3_runtime"


def wrap(real):  # noqa: ANN001, ANN201
    def Simulation(toml_text, source="<scenario>", outdir=None):  # noqa: ANN001, ANN202, N802
        data = tomllib.loads(toml_text)
        name = str(data.get("name", ""))
        counter = os.environ.get("LATLAB_TEST_COUNTER")
        if counter:
            fd = os.open(counter, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, f"{name} {data.get('seed')}\n".encode())
            finally:
                os.close(fd)
        slow = float(os.environ.get("LATLAB_TEST_SLOW_S", "0") or 0)
        if slow:
            time.sleep(slow)
        hold_above = os.environ.get("LATLAB_TEST_HOLD_ABOVE_SEED")
        if hold_above and int(data.get("seed", 0)) > int(hold_above):
            signal.pause()  # until the parent kills this worker (workers ignore SIGINT)
        if name == "fault-panic":
            raise PanicException("assertion failed: injected panic in the core")
        if name == "fault-error":
            raise RuntimeError("injected error")
        if name == "fault-crash":
            os.kill(os.getpid(), signal.SIGSEGV)
        if name == "fault-hang":
            time.sleep(3600)
        return real(toml_text, source, outdir)

    Simulation.__wrapped__ = real
    return Simulation


def install() -> None:
    import latlab._core as core

    if not hasattr(core.Simulation, "__wrapped__"):
        core.Simulation = wrap(core.Simulation)


if os.environ.get("LATLAB_TEST_FAULTS"):
    try:
        install()
    except ImportError:
        pass
