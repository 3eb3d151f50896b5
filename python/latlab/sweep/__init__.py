"""Parameter sweeps: many runs, on every core or on a Dask cluster, resumable, with a catalog.

::

    from latlab import Scenario
    from latlab.sweep import Sweep, run_sweep, load_run

    sweep = Sweep(Scenario.builtin("default"),
                  grid={"topology.core_queue.limit_bytes": [30_000, 125_000], "flows.0.cc": ["newreno", "cubic"]},
                  seeds=[1, 2, 3])
    # or: sweep = Sweep.from_toml("scenarios/sweeps/buffer.toml")
    catalog = run_sweep(sweep, "out/buffer")            # a DataFrame, one row per run
    ok = catalog[catalog.status == "ok"]
    res = load_run("out/buffer", ok.run_id.iloc[0])      # that run's Results

A study that builds its own scenarios passes ``(params, scenario)`` pairs, or
just wants the Results back in order::

    catalog = run_sweep([({"load": x}, make_scenario(x)) for x in loads], outdir, jobs=jobs)
    results = run_all([make_scenario(x) for x in loads], outdir, jobs=jobs)   # list[Results]

The pieces, one idea per module:

* :mod:`~latlab.sweep.definition`: ``Sweep`` (TOML or Python), ``RunSpec``, run ids;
* :mod:`~latlab.sweep.execute`: ``run_sweep``, skipping finished runs;
* :mod:`~latlab.sweep.pool`: the local pool of killable worker processes;
* :mod:`~latlab.sweep.dask_cluster`: the Dask runner (Dask imported only there);
* :mod:`~latlab.sweep.worker`: one run, as every runner executes it;
* :mod:`~latlab.sweep.store`: the folder layout, status files and the catalog;
* :mod:`~latlab.sweep.progress`: the progress bar.
"""

from __future__ import annotations

from latlab.sweep.definition import RunSpec, Sweep, SweepError, as_runs, run_id_of
from latlab.sweep.execute import (
    StaleRunsError,
    SweepFailed,
    default_jobs,
    run_all,
    run_distinct,
    run_sweep,
)
from latlab.sweep.store import load_catalog, load_run

__all__ = [
    "Sweep",
    "RunSpec",
    "SweepError",
    "as_runs",
    "run_id_of",
    "run_sweep",
    "StaleRunsError",
    "run_distinct",
    "run_all",
    "SweepFailed",
    "default_jobs",
    "load_catalog",
    "load_run",
]
