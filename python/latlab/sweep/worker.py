"""Running one run of a sweep, wherever it runs: here, in a pool process, or on a Dask worker.

A task is a plain dict (picklable, small)::

    {"run_id", "toml", "source", "params", "attempt", "outdir"}

:func:`execute` simulates it and returns its status (see :mod:`latlab.sweep.store`).
With ``outdir`` set, the results and then status.json are written into
``outdir/runs/<run_id>/`` before it returns, so a finished run survives
whatever happens to the process that asked for it. With ``outdir`` None
(a Dask worker without a shared filesystem) the result files come back in
the status under ``"files"`` ({relative path: bytes}) for the client to write.

Any exception from the run (a ScenarioError, a SimulationError, a Rust panic,
which pyo3 raises as ``PanicException``, a BaseException) becomes status
"failed" with the error text; only KeyboardInterrupt and SystemExit propagate.

``python -m latlab.sweep.worker`` is the pool's worker process (see
:mod:`latlab.sweep.pool`): it reads tasks from stdin and answers on stdout,
length-prefixed pickles, one task at a time.
"""

from __future__ import annotations

import os
import pickle
import signal
import socket
import stat
import struct
import sys
import tempfile
import traceback
import warnings
from pathlib import Path
from time import perf_counter
from typing import Any, BinaryIO

from latlab.sweep.store import FAILED, OK, RUNS_DIR, now_iso, write_status_file

_HEADER = struct.Struct(">Q")
PARENT_PID_ENV = "LATLAB_SWEEP_PARENT_PID"
MAX_ERROR_CHARS = 4000


def _error_kind(e: BaseException) -> str:
    from latlab.errors import ScenarioError, SimulationError

    if type(e).__name__ == "PanicException":  # pyo3_runtime.PanicException: a Rust panic
        return "panic"
    if isinstance(e, ScenarioError):
        return "scenario"
    if isinstance(e, SimulationError):
        return "simulation"
    return "error"


def core_build() -> str:
    """An id of the simulator core that makes the runs: the SHA-256 of the loaded
    ``latlab._core`` extension file (first 16 hex digits).

    Hashing the binary that actually runs, rather than stamping a hash of the
    Rust sources in at compile time, also catches a rebuild with another
    compiler, profile or dependency, and a stale extension left beside new
    sources. A core without a file (a test stand-in) is named by its version.
    """
    import hashlib
    import sys

    core = sys.modules.get("latlab._core")
    if core is None:
        import latlab._core as core

    path = getattr(core, "__file__", None)
    key = (
        core.__name__,
        path,
        os.stat(path).st_mtime_ns if path and os.path.isfile(path) else None,
    )
    cached = _CORE_BUILD.get(key)
    if cached is None:
        if key[2] is not None:
            digest = hashlib.sha256()
            with open(path, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    digest.update(chunk)
            cached = "sha256:" + digest.hexdigest()[:16]
        else:
            version = getattr(core, "version", None)
            cached = f"{core.__name__}:{version() if version else 'unknown'}"
        _CORE_BUILD[key] = cached
    return cached


_CORE_BUILD: dict[Any, str] = {}


def provenance() -> dict[str, str]:
    """What made a run: latlab's version and the core build (see :func:`core_build`)."""
    from latlab._version import __version__

    return {"latlab_version": __version__, "core_build": core_build()}


def base_status(task: dict[str, Any]) -> dict[str, Any]:
    return {
        "run_id": task["run_id"],
        "params": task.get("params", {}),
        "attempt": int(task.get("attempt", 1)),
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "started_at": now_iso(),
    }


def failed_status(
    task: dict[str, Any], error: str, kind: str, wall_s: float | None = None
) -> dict[str, Any]:
    """The status of a run that did not finish (used here and by runners that see a worker die)."""
    status = base_status(task)
    status.update(
        status=FAILED,
        error=error[-MAX_ERROR_CHARS:],
        error_kind=kind,
        wall_s=wall_s,
        finished_at=now_iso(),
    )
    return status


def execute(task: dict[str, Any]) -> dict[str, Any]:
    """Run one task; return its status (results and status.json already written if ``outdir``)."""
    from latlab.scenario import Scenario
    from latlab.simulate import run

    status = base_status(task)
    status.update(provenance())
    started = perf_counter()
    outdir = task.get("outdir")
    run_dir = Path(outdir) / RUNS_DIR / task["run_id"] if outdir else None
    # Without an outdir, results go to a scratch folder: the caller's (task["scratch"], which
    # the caller removes) or a temporary one removed here.
    scratch = None
    if run_dir is not None:
        target = run_dir
    elif task.get("scratch"):
        target = Path(task["scratch"])
    else:
        scratch = tempfile.TemporaryDirectory(prefix=f"latlab-{task['run_id']}-")
        target = Path(scratch.name)
    try:
        try:
            scenario = Scenario.from_toml_str(task["toml"], source=task.get("source", "<sweep>"))
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                results = run(scenario, outdir=target)
            summary = results.summary()
            summary["sim_wall_s"] = summary.pop("wall_s", None)
            if results.conservation_ok:
                status.update(status=OK, error=None, error_kind=None, metrics=summary)
            else:
                # Packets appeared or vanished: the numbers cannot be trusted,
                # so the run is not a result (its files stay for inspection).
                links = list(results.conservation_failures().get("link", []))
                where = (
                    f" on {', '.join(map(str, links))}"
                    if links
                    else " (packets not held by any link)"
                )
                status.update(
                    status=FAILED,
                    error=f"packet conservation check failed{where}",
                    error_kind="conservation",
                    metrics=summary,
                )
            if caught:
                status["warnings"] = sorted({f"{w.category.__name__}: {w.message}" for w in caught})
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:  # noqa: BLE001 - a panic is a BaseException; every failure is recorded
            text = f"{type(e).__name__}: {e}"
            status.update(
                status=FAILED,
                error=text[-MAX_ERROR_CHARS:],
                error_kind=_error_kind(e),
                traceback="".join(traceback.format_exception(e))[-MAX_ERROR_CHARS:],
            )
        status["wall_s"] = perf_counter() - started
        status["finished_at"] = now_iso()
        if run_dir is not None:
            write_status_file(run_dir, status)
            status["persisted"] = True
        else:
            status["files"] = {
                str(p.relative_to(target)): p.read_bytes()
                for p in sorted(target.rglob("*"))
                if p.is_file()
            }
        return status
    finally:
        if scratch is not None:
            scratch.cleanup()


# ----- the worker process ----------------------------------------------------


def send_message(stream: BinaryIO, obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def _read_exactly(stream: BinaryIO, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = stream.read(left)
        if not chunk:
            raise EOFError("the other end closed the pipe")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def recv_message(stream: BinaryIO) -> Any:
    (n,) = _HEADER.unpack(_read_exactly(stream, _HEADER.size))
    return pickle.loads(_read_exactly(stream, n))


def _die_with_parent() -> None:
    """Linux: get SIGKILL when the parent dies, so a killed sweep leaves no worker behind."""
    parent = os.environ.get(PARENT_PID_ENV)
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            PR_SET_PDEATHSIG = 1
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if parent and os.getppid() != int(parent):  # the parent died before prctl took effect
        os._exit(1)


def _reset_stderr() -> None:
    """Empty the stderr log (a file the parent reads if this process dies) before each run."""
    sys.stderr.flush()
    try:
        if stat.S_ISREG(os.fstat(2).st_mode):
            os.ftruncate(2, 0)
            os.lseek(2, 0, os.SEEK_SET)
    except OSError:
        pass


def main() -> None:
    """Serve tasks from stdin until it closes; a fresh process per worker, many runs each."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    _die_with_parent()
    # The protocol owns the real stdout; anything else printed goes to stderr.
    proto_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    proto_in = sys.stdin.buffer
    import latlab.simulate  # noqa: F401 - import once, before saying ready, so no run pays for it

    send_message(proto_out, {"ready": os.getpid()})
    while True:
        try:
            task = recv_message(proto_in)
        except EOFError:
            return
        _reset_stderr()
        send_message(proto_out, execute(task))


if __name__ == "__main__":
    main()
