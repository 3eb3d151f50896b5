"""Progress reporting for a running simulation: a live bar on a terminal, a few lines elsewhere.

A live bar in a log file or CI output is noise, so the bar appears only when
stdout is a terminal and the ``CI`` variable is unset; otherwise at most a few
plain lines go to stderr (start, long-run milestones, end).
"""

from __future__ import annotations

import os
import sys
from time import perf_counter
from typing import Protocol

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

PLAIN_MIN_INTERVAL_S = 10.0  # plain mode: milestone lines no more often than this


class Reporter(Protocol):
    def start(self, name: str, duration_ns: int) -> None: ...
    def update(self, now_ns: int, events: int) -> None: ...
    def finish(self, now_ns: int, events: int) -> None: ...
    def stop(self) -> None:
        """Tear down the display without a final report (on error or Ctrl-C)."""


def _si(value: float) -> str:
    for factor, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.1f}{suffix}"
    return f"{value:.0f}"


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


class NullReporter:
    """Says nothing."""

    def start(self, name: str, duration_ns: int) -> None:
        pass

    def update(self, now_ns: int, events: int) -> None:
        pass

    def finish(self, now_ns: int, events: int) -> None:
        pass

    def stop(self) -> None:
        pass


class RichReporter:
    """A transient bar: simulated time / total, wall time, events per second."""

    def __init__(self, console: Console | None = None) -> None:
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[sim]}"),
            TimeElapsedColumn(),
            TextColumn("{task.fields[rate]}"),
            console=console,
            transient=True,
        )
        self._task: TaskID | None = None
        self._started = 0.0

    def start(self, name: str, duration_ns: int) -> None:
        self._started = perf_counter()
        self._duration_s = duration_ns / 1e9
        self._progress.start()
        self._task = self._progress.add_task(
            name, total=max(duration_ns, 1), sim=self._sim_text(0), rate=""
        )

    def _sim_text(self, now_ns: int) -> str:
        return f"{now_ns / 1e9:,.1f}/{self._duration_s:,.1f} s sim"

    def update(self, now_ns: int, events: int) -> None:
        wall = perf_counter() - self._started
        rate = f"{_si(events / wall)} events/s" if wall > 0 else ""
        if self._task is not None:
            self._progress.update(
                self._task, completed=now_ns, sim=self._sim_text(now_ns), rate=rate
            )

    def finish(self, now_ns: int, events: int) -> None:
        self.update(now_ns, events)
        self._progress.stop()

    def stop(self) -> None:
        self._progress.stop()


class PlainReporter:
    """A start line, a milestone at each quarter of long runs, an end line (stderr)."""

    def __init__(self, stream=None) -> None:  # noqa: ANN001 - any text stream
        self._stream = stream if stream is not None else sys.stderr
        self._started = 0.0
        self._last_line = 0.0
        self._next_quarter = 1

    def _say(self, text: str) -> None:
        print(f"latlab: {text}", file=self._stream, flush=True)
        self._last_line = perf_counter()

    def start(self, name: str, duration_ns: int) -> None:
        self._name, self._duration_ns = name, max(duration_ns, 1)
        self._started = perf_counter()
        self._say(f"running {name} ({duration_ns / 1e9:g} s simulated)")

    def update(self, now_ns: int, events: int) -> None:
        quarter = 4 * now_ns // self._duration_ns
        if quarter >= self._next_quarter and quarter < 4:
            self._next_quarter = quarter + 1
            if perf_counter() - self._last_line >= PLAIN_MIN_INTERVAL_S:
                self._say(
                    f"{self._name}: {25 * quarter}% ({now_ns / 1e9:g} s simulated, {_si(events)} events)"
                )

    def finish(self, now_ns: int, events: int) -> None:
        wall = perf_counter() - self._started
        rate = f", {_si(events / wall)} events/s" if wall > 0 else ""
        self._say(f"{self._name} done: {_si(events)} events in {wall:.2f} s{rate}")

    def stop(self) -> None:
        pass


def make_reporter(enabled: bool, console: Console | None = None) -> Reporter:
    """The right reporter for where output goes: rich bar, plain lines, or nothing."""
    if not enabled:
        return NullReporter()
    console = console or Console()
    if console.is_terminal and not in_ci():
        return RichReporter(console)
    return PlainReporter()
