"""The cluster runner: the same runs, submitted to a Dask (distributed) cluster.

``dask`` may be:

* ``"local"``: an in-process ``LocalCluster`` of ``jobs`` single-threaded worker processes;
* a scheduler address (``tcp://host:8786``) or a scheduler file (``scheduler.json``,
  as written by ``dask scheduler --scheduler-file`` or dask-jobqueue/dask-mpi);
* a ``distributed.Client`` you made yourself, e.g. from a dask-jobqueue
  ``SLURMCluster`` or a dask-kubernetes ``KubeCluster`` (it is left open).

Workers need the same latlab installed, but no shared filesystem: each task
writes its results into a scratch folder on its worker and returns the files
(bytes) with its status; the client writes them into the sweep folder, so
the folder, its status files and the catalog look exactly as with the local
pool. With a time limit, a worker runs each simulation in a helper
subprocess (one per worker thread, reused) that it kills when time is up;
without one, the simulation runs in the worker's own thread.

Dask is imported only when this runner is used.
"""

from __future__ import annotations

import secrets
import selectors
import shutil
import tempfile
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from latlab.sweep.worker import execute, failed_status

Event = tuple[str, Any]

_local = threading.local()


def _helper() -> Any:
    """This Dask worker thread's helper process (started on first use)."""
    from latlab.sweep.pool import WorkerProcess

    helper = getattr(_local, "helper", None)
    if helper is None or helper.proc.poll() is not None:
        if helper is not None:
            helper.kill()
        helper = WorkerProcess()
        helper.wait_ready(120)
        _local.helper = helper
    return helper


def run_task(task: dict[str, Any], timeout_s: float | None) -> dict[str, Any]:
    """The Dask task: one run, its files returned with its status (``task["outdir"]`` is None)."""
    if timeout_s is None:
        return execute(task)
    # The scratch folder is made here, so it is removed even if the helper is killed mid-run.
    scratch = tempfile.mkdtemp(prefix=f"latlab-{task['run_id']}-")
    try:
        return _run_in_helper({**task, "scratch": scratch}, timeout_s)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _run_in_helper(task: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    helper = _helper()
    try:
        helper.start(task, timeout_s)
    except OSError:  # it died between tasks: start another
        helper.kill()
        _local.helper = None
        helper = _helper()
        helper.start(task, timeout_s)
    with selectors.DefaultSelector() as sel:
        sel.register(helper.stdout, selectors.EVENT_READ)
        answered = sel.select(timeout_s)
    if not answered:
        wall = helper.elapsed()
        helper.kill()
        _local.helper = None
        return failed_status(
            task,
            f"timed out after {timeout_s:g} s (its helper process was killed)",
            "timeout",
            wall,
        )
    try:
        status = helper.receive()
    except EOFError:
        wall = helper.elapsed()
        _local.helper = None
        reason = f"the helper process died during the run ({helper.death_reason()})"
        return failed_status(task, reason, "crash", wall)
    assert status is not None
    return status


@contextmanager
def connect(dask: Any, jobs: int) -> Iterator[Any]:
    """A ``distributed.Client`` for ``dask`` (see the module docstring); closed on exit if made here."""
    from distributed import Client, LocalCluster

    if isinstance(dask, Client):
        yield dask
        return
    if not isinstance(dask, str) or not dask:
        raise TypeError(
            f"dask must be 'local', a scheduler address or file, or a Client, not {dask!r}"
        )
    if dask == "local":
        cluster = LocalCluster(
            n_workers=jobs, threads_per_worker=1, processes=True, dashboard_address=":0"
        )
        try:
            client = Client(cluster)
            try:
                yield client
            finally:
                client.close()
        finally:
            cluster.close()
        return
    if dask.endswith(".json") and Path(dask).is_file():
        client = Client(scheduler_file=dask)
    else:
        client = Client(dask, timeout="20s")
    try:
        yield client
    finally:
        client.close()


def cluster_threads(client: Any) -> int:
    """How many runs the cluster can run at once (its worker threads)."""
    try:
        return max(1, sum(client.nthreads().values()))
    except Exception:  # noqa: BLE001 - only for the progress display
        return 1


def run_on_dask(
    client: Any, tasks: Iterable[dict[str, Any]], timeout_s: float | None = None
) -> Iterator[Event]:
    """Submit every task; yield ("start", task) for each, then ("done", status) as they finish.

    A task that Dask itself gives up on (its worker died too often, the
    cluster went away) is recorded as failed, like a run that raised.
    """
    from distributed import as_completed

    futures = {}
    try:
        for task in tasks:
            task = {**task, "outdir": None}
            key = f"latlab-run-{task['run_id']}-{secrets.token_hex(4)}"
            future = client.submit(run_task, task, timeout_s, key=key, pure=False, retries=0)
            futures[future] = task
            yield ("start", task)
        for future in as_completed(futures):
            task = futures.pop(future)
            try:
                status = future.result()
            except Exception as e:  # noqa: BLE001 - KilledWorker, CancelledError, lost connection ...
                status = failed_status(
                    task, f"Dask could not run it: {type(e).__name__}: {e}", "cluster"
                )
            finally:
                future.release()
            yield ("done", status)
    finally:
        if futures:
            try:
                client.cancel(list(futures), force=True)
            except Exception:  # noqa: BLE001 - best effort on the way out
                pass
