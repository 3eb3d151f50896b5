"""`latlab bench`: run benchmark scenarios, each in its own process, and describe the machine.

A fresh process per scenario makes the peak memory figure that run's own and
keeps one benchmark's heap or caches from flattering the next.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import latlab
from latlab import builtin

if TYPE_CHECKING:
    from rich.table import Table

WORKER = "latlab.bench.measure"


class BenchFailure(RuntimeError):
    """A benchmark's worker process failed; the message carries its stderr."""


def names() -> list[str]:
    return builtin.bench_names()


def _worker_env() -> dict[str, str]:
    """Environment for the worker: make sure it imports this very latlab (source tree or installed)."""
    env = dict(os.environ)
    package_parent = str(Path(latlab.__file__).resolve().parent.parent)
    parts = [package_parent] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(parts))
    return env


def run_one(
    name: str, quick: bool = False, timeout_s: float | None = None, build_only: bool = False
) -> dict[str, Any]:
    """Run one benchmark in a subprocess and return its JSON record."""
    cmd = (
        [sys.executable, "-m", WORKER, name]
        + (["--quick"] if quick else [])
        + (["--build-only"] if build_only else [])
    )
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_worker_env(), timeout=timeout_s)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        detail = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
        raise BenchFailure(f"{name}: {detail}")
    return json.loads(lines[-1])


def cpu_model() -> str:
    """The CPU model from /proc/cpuinfo (Linux), else what platform knows."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if (
                    key.strip() in ("model name", "Hardware", "Processor", "cpu model")
                    and value.strip()
                ):
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def build_profile() -> str:
    """The cargo profile of the compiled core: "release" from `make build`, "release-tests" (no LTO,
    about a third slower on the simulator) from `make test`."""
    from latlab import _core

    return str(_core.build_profile())


def build_warning(profile: str) -> str | None:
    """What to say when the core is not the release build, whose speed the benchmarks report."""
    if profile == "release":
        return None
    return (
        f"the compiled core is the {profile} build, not release (make test builds it without LTO, "
        "about a third slower): run make build first to measure the release build"
    )


def machine_info() -> dict[str, Any]:
    """What the numbers depend on: CPU, core count, OS, Python, and the core's build."""
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "build": build_profile(),
    }


def table(
    records: Iterable[Mapping[str, Any]],
    machine: Mapping[str, Any],
    quick_fraction: float | None = None,
) -> Table:
    """One row per benchmark: simulated s, wall s, events, events/s, peak RSS."""
    from rich.table import Table

    from latlab.tables import count, si

    title = "latlab bench" + (
        f" --quick ({quick_fraction:.0%} of each duration)" if quick_fraction else ""
    )
    table = Table(
        title=title,
        caption=f"{machine.get('cpu')}, {machine.get('cores')} cores, {machine.get('build')} build",
        title_justify="left",
    )
    table.add_column("scenario")
    for col in ("simulated s", "wall s", "events", "events/s", "peak RSS MB"):
        table.add_column(col, justify="right")
    for r in records:
        if "error" in r:
            table.add_row(str(r["name"]), "[red]failed[/]", "", "", "", "", end_section=False)
            continue
        table.add_row(
            str(r["name"]),
            f"{r['sim_s']:g}",
            f"{r['wall_s']:.2f}",
            count(r["events"]),
            si(r.get("events_per_s")),
            f"{r['peak_rss_mb']:.1f}",
        )
    return table
