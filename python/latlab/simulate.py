"""`run()`: one scenario through the core, into a :class:`~latlab.results.Results`."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from time import perf_counter
from typing import Any

from latlab import _native, stepper
from latlab import run_progress as progress_mod
from latlab.results import Results
from latlab.scenario import Scenario, as_scenario


def run(
    scenario: Scenario | str | os.PathLike[str] | Mapping[str, Any],
    outdir: str | os.PathLike[str] | None = None,
    progress: bool = False,
    seed: int | None = None,
    max_memory_bytes: int | None = None,
) -> Results:
    """Simulate a scenario and return its results as DataFrames.

    Args:
        scenario: a :class:`Scenario`, a path to a TOML file, or a dict.
        outdir: if given, pcap traces go there during the run and the results
            (Parquet tables, run.json, scenario.toml) are written there at the
            end, each file atomically; nothing else in the folder is touched.
        progress: show a progress bar on a terminal (a few plain lines otherwise).
        seed: run with this seed instead of the scenario's.
        max_memory_bytes: refuse (ScenarioError) a scenario whose network is
            estimated to need more than this; default: the memory the machine
            has available.

    Raises:
        ScenarioError: the scenario is invalid (message: ``FILE: key.path: what``).
        SimulationError: the core failed internally.
        CoreNotBuiltError: ``latlab._core`` is not built.

    A packet-conservation failure does not raise (the data may still help
    find the bug) but warns with a :class:`ConservationWarning`, and
    ``results.conservation_ok`` is False.
    """
    sc = as_scenario(scenario)
    if seed is not None:
        sc = sc.with_(seed=int(seed))
    core = _native.core()
    out_path = Path(outdir) if outdir is not None else None
    if out_path is not None:
        out_path.mkdir(parents=True, exist_ok=True)

    started = perf_counter()
    limit = {} if max_memory_bytes is None else {"max_memory_bytes": int(max_memory_bytes)}
    sim = core.Simulation(
        sc.to_toml(), sc.core_source, None if out_path is None else str(out_path), **limit
    )
    build_s = perf_counter() - started

    reporter = progress_mod.make_reporter(progress)
    reporter.start(str(sim.name), int(sim.duration_ns))
    try:
        stepper.advance(sim, lambda now_ns: reporter.update(now_ns, int(sim.events)))
    except BaseException:
        reporter.stop()
        raise
    wall_s = perf_counter() - started
    events = int(sim.events)
    reporter.finish(int(sim.now_ns), events)

    run_info = {
        "name": str(sim.name),
        "seed": int(sim.seed),
        "duration_s": int(sim.duration_ns) / 1e9,
        "events": events,
        "wall_s": wall_s,
        "build_s": build_s,
        "events_per_s": events / wall_s if wall_s > 0 else None,
        "n_flows": int(sim.n_flows),
        "n_links": int(sim.n_links),
        "core_version": str(core.version()),
    }
    whole_check = getattr(sim, "conservation_ok", None)  # every live packet held by a link
    if callable(whole_check):
        run_info["core_conservation_ok"] = bool(whole_check())
    results = Results.from_core(sim.results(), sim.conservation(), run_info, sc)
    results.warn_if_not_conserved()
    if out_path is not None:
        results.write(out_path)
    return results
