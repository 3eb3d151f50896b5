"""The local runner: a pool of worker processes that the parent can kill.

``concurrent.futures`` cannot stop a task that is running, so a run that
hangs would hold its worker for ever. Here each worker is a plain subprocess
(``python -m latlab.sweep.worker``) that the parent feeds one task at a time
over a pipe; a run past its time limit gets its worker killed (SIGKILL) and
replaced, and a worker that dies (a segfault, an abort) is noticed through
its closed pipe. Either way the run is recorded as failed and the others go
on. Workers live for the whole sweep, so a run costs a pipe round trip, not a
Python start-up. Workers ignore Ctrl-C (the parent kills them) and, on Linux,
die with the parent even if it is killed with SIGKILL.

Plain subprocesses rather than ``multiprocessing`` also work inside a Dask
worker, whose daemonic processes may not have multiprocessing children.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import tempfile
from collections import deque
from collections.abc import Iterable, Iterator
from pathlib import Path
from time import monotonic
from typing import Any

from latlab.sweep.definition import SweepError
from latlab.sweep.worker import PARENT_PID_ENV, failed_status, recv_message, send_message

WORKER_MODULE = "latlab.sweep.worker"
LOG_TAIL_CHARS = 1500
CLOSE_WAIT_S = 5.0

Event = tuple[str, Any]  # ("start", task) or ("done", status)


def worker_env() -> dict[str, str]:
    """The environment of a worker: it must import this very latlab (source tree or installed)."""
    import latlab

    env = dict(os.environ)
    package_parent = str(Path(latlab.__file__).resolve().parent.parent)
    parts = [package_parent] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(parts))
    env[PARENT_PID_ENV] = str(os.getpid())
    return env


class WorkerProcess:
    """One worker subprocess: send a task, receive its status; kill it if need be.

    Its stderr goes to an anonymous temporary file (nothing left behind in /tmp),
    whose end is quoted if the worker dies.
    """

    def __init__(self) -> None:
        self._log = tempfile.TemporaryFile(prefix="latlab-worker-")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", WORKER_MODULE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=worker_env(),
            bufsize=0,
        )
        self.ready = False
        self.task: dict[str, Any] | None = None
        self.started = 0.0
        self.deadline: float | None = None

    @property
    def stdout(self) -> Any:
        return self.proc.stdout

    def wait_ready(self, timeout_s: float | None = None) -> None:
        """Block until the worker has imported latlab (SweepError if it dies or takes too long)."""
        with selectors.DefaultSelector() as sel:
            sel.register(self.stdout, selectors.EVENT_READ)
            if not sel.select(timeout_s):
                self.kill()
                raise SweepError(f"a sweep worker process did not start within {timeout_s:g} s")
        self.receive()

    def start(self, task: dict[str, Any], timeout_s: float | None) -> None:
        send_message(self.proc.stdin, task)
        self.task = task
        self.started = monotonic()
        self.deadline = None if timeout_s is None else self.started + timeout_s

    def receive(self) -> dict[str, Any] | None:
        """The next message: a status (returned, the worker becomes idle) or the ready signal (None).

        Raises EOFError if the worker died; SweepError if it died before it was ready.
        """
        try:
            message = recv_message(self.stdout)
        except EOFError:
            if not self.ready:
                raise SweepError(
                    f"a sweep worker process failed to start: {self.death_reason()}"
                ) from None
            raise
        if "ready" in message and "run_id" not in message:
            self.ready = True
            return None
        self.task, self.deadline = None, None
        return message

    def elapsed(self) -> float:
        return monotonic() - self.started

    def kill(self) -> None:
        """Kill the worker (if it still runs), reap it and release its pipes and log."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self._close_pipes()
        self._log.close()

    def close(self) -> None:
        """Let the worker finish and exit (it does when its stdin closes); kill it if it lingers."""
        try:
            self.proc.stdin.close()
            self.proc.wait(CLOSE_WAIT_S)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.kill()

    def _close_pipes(self) -> None:
        for pipe in (self.proc.stdin, self.proc.stdout):
            try:
                pipe.close()
            except OSError:
                pass

    def death_reason(self) -> str:
        """How the worker ended and the end of what it wrote to stderr (then it is cleaned up)."""
        try:
            rc = self.proc.wait(CLOSE_WAIT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        if rc is not None and rc < 0:
            try:
                how = f"killed by signal {signal.Signals(-rc).name}"
            except ValueError:
                how = f"killed by signal {-rc}"
        else:
            how = f"exit code {rc}"
        tail = self.log_tail()
        self.kill()
        return f"{how}; its last output: {tail}" if tail else how

    def log_tail(self, chars: int = LOG_TAIL_CHARS) -> str:
        """The end of the worker's stderr, one line. pread leaves the file offset (shared with the worker) alone."""
        try:
            fd = self._log.fileno()
            size = os.fstat(fd).st_size
            data = os.pread(fd, chars, max(0, size - chars))
        except (OSError, ValueError):
            return ""
        text = data.decode("utf-8", errors="replace").strip()
        return " | ".join(line for line in text.splitlines() if line.strip())


class LocalPool:
    """Runs tasks on ``jobs`` worker processes, killing any run that exceeds ``timeout_s``."""

    def __init__(self, jobs: int, timeout_s: float | None = None) -> None:
        if jobs < 1:
            raise ValueError(f"jobs must be at least 1, got {jobs}")
        self.jobs = int(jobs)
        self.timeout_s = timeout_s

    def run(self, tasks: Iterable[dict[str, Any]]) -> Iterator[Event]:
        """Yield ("start", task) as each run is handed to a worker and ("done", status) as it ends."""
        queue = deque(tasks)
        if not queue:
            return
        sel = selectors.DefaultSelector()
        workers: list[WorkerProcess] = []

        def spawn() -> WorkerProcess:
            worker = WorkerProcess()
            sel.register(worker.stdout, selectors.EVENT_READ, worker)
            workers.append(worker)
            return worker

        def retire(worker: WorkerProcess, kill: bool) -> None:
            sel.unregister(worker.stdout)
            workers.remove(worker)
            if kill:
                worker.kill()
            if queue:
                spawn()

        interrupted = True
        try:
            for _ in range(min(self.jobs, len(queue))):
                spawn()
            while queue or any(w.task is not None for w in workers):
                for worker in list(workers):
                    if worker.ready and worker.task is None and queue:
                        task = queue.popleft()
                        try:
                            worker.start(task, self.timeout_s)
                        except OSError:  # it died while idle: give the task to its replacement
                            queue.appendleft(task)
                            worker.task = None
                            retire(worker, kill=True)
                            continue
                        yield ("start", task)
                deadlines = [w.deadline for w in workers if w.deadline is not None]
                wait = None if not deadlines else max(0.0, min(deadlines) - monotonic())
                for key, _ in sel.select(wait):
                    worker = key.data
                    task = worker.task
                    try:
                        status = worker.receive()
                    except EOFError:
                        wall = worker.elapsed()
                        retire(worker, kill=False)
                        reason = worker.death_reason()  # also reaps it
                        if task is not None:
                            reason = f"the worker process died during the run ({reason})"
                            yield ("done", failed_status(task, reason, "crash", wall))
                        continue
                    if status is not None:
                        yield ("done", status)
                now = monotonic()
                for worker in [w for w in workers if w.deadline is not None and now >= w.deadline]:
                    task, wall = worker.task, worker.elapsed()
                    retire(worker, kill=True)
                    assert task is not None
                    reason = f"timed out after {self.timeout_s:g} s (its worker process was killed)"
                    yield ("done", failed_status(task, reason, "timeout", wall))
            interrupted = False
        finally:
            for worker in workers:
                if interrupted or worker.task is not None:
                    worker.kill()
                else:
                    worker.close()
            sel.close()
