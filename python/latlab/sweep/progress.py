"""Progress over a sweep: a live bar on a terminal (done/failed/running, ETA), a few lines elsewhere.

As for single runs (:mod:`latlab.run_progress`), the bar appears only when stdout
is a terminal and ``CI`` is unset; otherwise a start line, a line per failed
run, a milestone at most every 30 s and an end line go to stderr.
"""

from __future__ import annotations

import sys
from time import perf_counter
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from latlab.run_progress import in_ci
from latlab.sweep.store import OK

PLAIN_MIN_INTERVAL_S = 30.0


def _hms(seconds: float) -> str:
    seconds = int(round(seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def describe_failure(status: dict[str, Any]) -> str:
    params = ", ".join(f"{k}={v}" for k, v in (status.get("params") or {}).items())
    where = f" ({params})" if params else ""
    return f"run {status['run_id']}{where} failed: {status.get('error')}"


class SweepProgress:
    """Counts runs as they start and end, and shows it.

    Args:
        name: the sweep's name.
        total: runs in the sweep; ``done_before`` of them already finished (skipped).
        enabled: False shows nothing at all.
        capacity: most runs that can be running at once (the displayed "running" is capped by it).
        where: what runs them, for the start line ("4 local workers", "Dask at tcp://...").
    """

    def __init__(
        self,
        name: str,
        total: int,
        done_before: int,
        enabled: bool = True,
        capacity: int | None = None,
        where: str = "",
        console: Console | None = None,
    ) -> None:
        self.name, self.total, self.done_before = name, total, done_before
        self.capacity, self.where = capacity, where
        self.ok = self.failed = self.started = 0
        self.enabled = enabled
        self._console = console or Console()
        self._rich = enabled and self._console.is_terminal and not in_ci()
        self._progress: Progress | None = None
        self._t0 = self._last_line = perf_counter()

    # ----- counting -------------------------------------------------------
    @property
    def running(self) -> int:
        n = self.started - self.ok - self.failed
        return min(n, self.capacity) if self.capacity else n

    @property
    def done(self) -> int:
        return self.done_before + self.ok + self.failed

    def __enter__(self) -> SweepProgress:
        self._t0 = self._last_line = perf_counter()
        if self._rich:
            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn(
                    "[green]✓ {task.fields[ok]}[/] [red]✗ {task.fields[failed]}[/] ▶ {task.fields[running]}"
                ),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=self._console,
                transient=True,
            )
            self._progress.start()
            self._task = self._progress.add_task(
                self.name, total=self.total, completed=self.done_before, ok=0, failed=0, running=0
            )
        elif self.enabled:
            before = f", {self.done_before} already done" if self.done_before else ""
            where = f" on {self.where}" if self.where else ""
            self._say(
                f"sweep {self.name}: {self.total} runs{before}; running {self.total - self.done_before}{where}"
            )
        return self

    def run_started(self, task: dict[str, Any]) -> None:
        self.started += 1
        self._refresh()

    def run_finished(self, status: dict[str, Any]) -> None:
        if status.get("status") == OK:
            self.ok += 1
        else:
            self.failed += 1
            if self._progress is not None:
                self._progress.console.print(f"[red]✗[/] {escape(describe_failure(status))}")
            elif self.enabled:
                self._say(describe_failure(status))
        self._refresh()
        if (
            not self._rich
            and self.enabled
            and perf_counter() - self._last_line >= PLAIN_MIN_INTERVAL_S
        ):
            self._say(self._milestone())

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
        elif self.enabled and exc[0] is None:
            self._say(f"sweep {self.name}: {self._counts()} in {_hms(perf_counter() - self._t0)}")

    # ----- display ----------------------------------------------------------
    def _counts(self) -> str:
        skipped = f" ({self.done_before} from before)" if self.done_before else ""
        return f"{self.done}/{self.total} done{skipped}, {self.ok} ok, {self.failed} failed"

    def _milestone(self) -> str:
        new = self.ok + self.failed
        elapsed = perf_counter() - self._t0
        left = self.total - self.done
        eta = f", ETA {_hms(elapsed / new * left)}" if new and left else ""
        return f"sweep {self.name}: {self._counts()}, {self.running} running{eta}"

    def _refresh(self) -> None:
        if self._progress is not None:
            self._progress.update(
                self._task,
                completed=self.done,
                ok=self.ok,
                failed=self.failed,
                running=self.running,
            )

    def _say(self, text: str) -> None:
        print(f"latlab: {text}", file=sys.stderr, flush=True)
        self._last_line = perf_counter()
