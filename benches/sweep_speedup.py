"""Measure the sweep runners: speed-up of the local pool, and the cost per run of each runner.

    .venv/bin/python benches/sweep_speedup.py            # both measurements
    .venv/bin/python benches/sweep_speedup.py --speedup  # only the 32-run sweep, jobs 1 vs 2
    .venv/bin/python benches/sweep_speedup.py --overhead # only the per-run overhead

Speed-up: scenarios/sweeps/buffer.toml (32 runs of about a second each) with
``jobs=1`` and ``jobs=2`` (and on a Dask LocalCluster of 2 workers), each
into a fresh folder, timed end to end (workers' start-up included).

Overhead per run: sweeps of N near-empty runs (a 0.05 s simulated dumbbell)
for two values of N, timed end to end; the slope (time per extra run) minus
the slope of the inline runner (the same work in this process, no pipes, no
scheduler) is what a runner adds to each run. Start-up (the workers,
the LocalCluster) is the intercept, reported separately.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
from pathlib import Path
from time import perf_counter

from latlab.bench.suite import cpu_model
from latlab.scenario import Scenario
from latlab.sweep import Sweep, run_sweep
from latlab.sweep.execute import default_jobs

REPO = Path(__file__).resolve().parents[1]
EMPTY_RUN = """
name = "empty"
duration_s = 0.05
[topology]
kind = "dumbbell"
pairs = 1
access_rate_bps = 1e8
access_delay_ms = 1
core_rate_bps = 1e7
core_delay_ms = 5
[[flows]]
src = "s{i}"
dst = "d{i}"
cc = "newreno"
"""


def timed_runs(sweep, **kwargs) -> tuple[float, float]:
    """(wall time of the whole sweep, sum of the runs' own wall times as measured where they ran)."""
    with tempfile.TemporaryDirectory(prefix="latlab-bench-sweep-") as out:
        started = perf_counter()
        catalog = run_sweep(sweep, out, progress=False, **kwargs)
        wall = perf_counter() - started
    assert (catalog["status"] == "ok").all(), catalog[["run_id", "error"]]
    return wall, float(catalog["wall_s"].sum())


def timed(sweep, **kwargs) -> float:
    return timed_runs(sweep, **kwargs)[0]


def speedup(repeat: int) -> None:
    sweep = Sweep.from_toml(REPO / "scenarios" / "sweeps" / "buffer.toml")
    print(f"speed-up: {len(sweep)} runs of scenarios/sweeps/buffer.toml (best of {repeat})")
    times: dict[str, list[float]] = {"1": [], "2": [], "dask": []}
    for _ in range(repeat):  # interleaved, so a burst of load elsewhere hits all alike
        times["1"].append(timed(sweep, jobs=1))
        times["2"].append(timed(sweep, jobs=2))
        times["dask"].append(timed(sweep, jobs=2, dask="local"))
    t1, t2, td = (min(times[k]) for k in ("1", "2", "dask"))
    print(f"  pool, 1 worker : {t1:6.1f} s")
    print(f"  pool, 2 workers: {t2:6.1f} s   speed-up {t1 / t2:.2f}x")
    print(
        f"  Dask LocalCluster, 2 workers: {td:6.1f} s   speed-up {t1 / td:.2f}x (vs pool, 1 worker)"
    )


def overhead(small: int, large: int, repeat: int) -> None:
    base = Scenario.from_toml_str(EMPTY_RUN, source="empty.toml")
    sweeps = {n: Sweep(base, seeds=n) for n in (small, large)}
    print(f"overhead per run: sweeps of {small} and {large} near-empty runs (best of {repeat})")
    runners = {
        "inline": {"inline": True},
        "pool, 1 worker": {"jobs": 1},
        "Dask LocalCluster, 1 worker": {"jobs": 1, "dask": "local"},
    }
    times: dict[tuple[str, int], list[tuple[float, float]]] = {
        (label, n): [] for label in runners for n in sweeps
    }
    for _ in range(repeat):  # interleaved, so a burst of load elsewhere hits all alike
        for label, kwargs in runners.items():
            for n, sweep in sweeps.items():
                times[(label, n)].append(timed_runs(sweep, **kwargs))
    slopes = {}
    for label in runners:
        (t_small, e_small), (t_large, e_large) = (
            min(times[(label, small)]),
            min(times[(label, large)]),
        )
        slope = (t_large - t_small) / (large - small)
        outside = (t_large - t_small - (e_large - e_small)) / (large - small)
        slopes[label] = slope
        start = t_small - small * slope
        print(
            f"  {label:28s}: {1e3 * slope:6.1f} ms per run end to end, of which {1e3 * outside:5.1f} ms outside "
            f"the run itself (dispatch, transfer, bookkeeping); start-up {start:5.2f} s"
        )
    for label, slope in slopes.items():
        if label != "inline":
            print(
                f"  {label} adds {1e3 * (slope - slopes['inline']):.1f} ms per run over running in-process"
            )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--speedup", action="store_true")
    parser.add_argument("--overhead", action="store_true")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    both = not (args.speedup or args.overhead)
    print(
        f"machine: {cpu_model()}, {default_jobs()} cores, Python {platform.python_version()}, "
        f"load average before: {os.getloadavg()[0]:.2f}"
    )
    if args.speedup or both:
        speedup(args.repeat)
    if args.overhead or both:
        overhead(32, 160, args.repeat)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
