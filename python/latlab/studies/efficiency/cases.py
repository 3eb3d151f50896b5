"""The efficiency study's set-up: the profiles compared, the flow sizes the report quotes, the settings of a
full and a quick reproduction, and how its simulations run."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

PROFILES = ("3.5G", "4G")
#: Flow sizes (bytes) the closing note quotes; 320 KiB is the study's reference short flow.
NOTE_SIZES = (10_000, 100_000, 1_000_000)
REFERENCE_SIZE = 320 * 1024
SEED = 1


@dataclass(frozen=True)
class Settings:
    """How much work a reproduction does (full or --quick)."""

    per_decade: int  # Monte-Carlo size grid
    n_samples: int  # Monte-Carlo draws
    loaded_runs: int  # simulated bottlenecks per profile for the loaded RTT
    loaded_probes: int  # probe flows per run
    loaded_duration_s: float
    check_per_decade: int  # lossless cross-check grid
    loaded_check_seeds: int  # start-time replicates of the loaded-buffer check
    loaded_check_per_decade: int


FULL = Settings(
    per_decade=10,
    n_samples=1_000_000,
    loaded_runs=12,
    loaded_probes=400,
    loaded_duration_s=70.0,
    check_per_decade=10,
    loaded_check_seeds=8,
    loaded_check_per_decade=5,
)
QUICK = Settings(
    per_decade=4,
    n_samples=100_000,
    loaded_runs=3,
    loaded_probes=200,
    loaded_duration_s=40.0,
    check_per_decade=4,
    loaded_check_seeds=2,
    loaded_check_per_decade=2,
)


# ----- running simulations -------------------------------------------------


def run_scenarios(
    scenarios: Sequence[dict[str, Any]], jobs: int | None = None, rundir: Path | None = None
) -> list[pd.DataFrame]:
    """Run scenarios (dicts) on latlab's sweep runner; return their flows tables, in order.

    ``jobs`` worker processes (default: all cores). With ``rundir`` the runs
    are kept there, so an interrupted reproduction resumes where it stopped;
    without, they go to a temporary folder.
    """
    from latlab.sweep import run_all

    scenarios = list(scenarios)
    if not scenarios:
        return []
    if rundir is not None:
        return [r.flows for r in run_all(scenarios, rundir, jobs=jobs, progress=False)]
    with tempfile.TemporaryDirectory(prefix="latlab-efficiency-") as tmp:
        return [r.flows for r in run_all(scenarios, tmp, jobs=jobs, progress=False)]
