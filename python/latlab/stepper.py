"""How far to advance the simulation per call, so Python regains control every ~0.2 s.

Running in steps (rather than one ``Simulation.run()``) is what makes a
progress bar possible and keeps Ctrl-C responsive: ``run_until`` releases the
GIL and Python can only raise KeyboardInterrupt between steps. The step is
chosen from the measured speed of the previous one, so a run takes about
``duration / 200`` per step at first and then whatever lands near
``target_wall_s`` per step, however fast or slow the scenario is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from time import perf_counter
from typing import Protocol

INITIAL_STEPS = 200
TARGET_STEP_WALL_S = 0.2
# Change the step by at most this factor at a time: one odd step (a burst of
# flow starts, a page fault) must not swing the next one wildly.
MAX_STEP_CHANGE = 4.0
MIN_STEP_NS = 1_000


class Steppable(Protocol):
    duration_ns: int
    now_ns: int
    finished: bool

    def run_until(self, t_ns: int) -> None: ...
    def run(self) -> None: ...


@dataclass
class StepPlanner:
    """Chooses the next step (simulated ns) from how long the last one took."""

    duration_ns: int
    target_wall_s: float = TARGET_STEP_WALL_S
    step_ns: int = 0

    def __post_init__(self) -> None:
        if self.step_ns <= 0:
            self.step_ns = max(MIN_STEP_NS, self.duration_ns // INITIAL_STEPS)

    def observe(self, simulated_ns: int, wall_s: float) -> int:
        """Record a finished step; return the next step size in simulated nanoseconds."""
        if simulated_ns <= 0:
            return self.step_ns
        ideal = simulated_ns * self.target_wall_s / max(wall_s, 1e-6)
        ideal = min(max(ideal, self.step_ns / MAX_STEP_CHANGE), self.step_ns * MAX_STEP_CHANGE)
        self.step_ns = int(min(max(ideal, MIN_STEP_NS), max(self.duration_ns, MIN_STEP_NS)))
        return self.step_ns


def advance(
    sim: Steppable,
    on_step: Callable[[int], None] | None = None,
    target_wall_s: float = TARGET_STEP_WALL_S,
) -> None:
    """Run ``sim`` to its end in adaptive steps, calling ``on_step(now_ns)`` after each."""
    duration_ns = int(sim.duration_ns)
    planner = StepPlanner(duration_ns, target_wall_s)
    position_ns = int(sim.now_ns)
    while position_ns < duration_ns and not sim.finished:
        target_ns = min(duration_ns, position_ns + planner.step_ns)
        started = perf_counter()
        sim.run_until(target_ns)
        planner.observe(target_ns - position_ns, perf_counter() - started)
        position_ns = target_ns
        if on_step is not None:
            on_step(position_ns)
    if not sim.finished:  # let the core close the books (final samples, conservation)
        sim.run()
