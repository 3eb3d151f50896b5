"""`run_sweep()`: run every missing run of a sweep and keep the catalog current.

The same runs go to one of three runners, which all yield the same events
(("start", task), ("done", status)):

* the local pool (default): ``jobs`` worker processes on this machine,
  with a per-run time limit (:mod:`latlab.sweep.pool`);
* Dask (``dask=...``): a LocalCluster or an existing cluster (:mod:`latlab.sweep.dask_cluster`);
* inline: one run after another in this process (for debugging; no time limit).

Whatever the runner, a run is simulated by :func:`latlab.sweep.worker.execute`,
so its results are the same bytes, and its files land in the same layout
(:mod:`latlab.sweep.store`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from time import monotonic
from typing import Any

import pandas as pd

from latlab.results import RUN_JSON
from latlab.sweep.definition import RunSpec, Sweep, as_runs, run_id_of
from latlab.sweep.pool import LocalPool
from latlab.sweep.progress import SweepProgress
from latlab.sweep.store import OK, Store, build_catalog
from latlab.sweep.worker import execute, provenance

# catalog.parquet is rewritten as runs finish, but at most every 0.5 s and, for
# big sweeps, so that rewriting it takes at most ~10% of this process's time.
# (Status files are written at once; the catalog can always be rebuilt from them.)
CATALOG_MIN_INTERVAL_S = 0.5
CATALOG_MAX_SHARE = 0.1


def default_jobs() -> int:
    """The cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def needs_run(status: Mapping[str, Any] | None, retry_failed: bool = True) -> bool:
    """A run is (re)done when it never finished, or failed and failures are retried."""
    if status is None:
        return True
    if status.get("status") == OK:
        return False
    return retry_failed


STALE_CHOICES = ("redo", "refuse")


def stale_reason(status: Mapping[str, Any], current: Mapping[str, str]) -> str | None:
    """Why a finished run is stale (made by another latlab version or core build), or None.

    A status without these fields predates them: it is stale too, since what
    made it is unknown.
    """
    diffs = [
        f"{key} {status.get(key, 'unrecorded')!s} (now {value})"
        for key, value in current.items()
        if status.get(key) != value
    ]
    return "; ".join(diffs) or None


class StaleRunsError(RuntimeError):
    """A sweep folder holds runs made by another latlab version or core build, and stale="refuse"."""


def _task(spec: RunSpec, previous: Mapping[str, Any] | None, outdir: Path) -> dict[str, Any]:
    return {
        "run_id": spec.run_id,
        "toml": spec.scenario.to_toml(),
        "source": spec.scenario.core_source,
        "params": spec.params,
        "attempt": int((previous or {}).get("attempt") or 0) + 1,
        "outdir": str(outdir),
    }


def _inline(tasks: Iterable[dict[str, Any]]) -> Iterator[tuple[str, Any]]:
    for task in tasks:
        yield ("start", task)
        yield ("done", execute(task))


def _record(store: Store, status: dict[str, Any]) -> dict[str, Any]:
    """Put a finished run on disk (unless its worker already did) and return its status."""
    files = status.pop("files", None)
    if files is not None:
        store.write_files(status["run_id"], files)
    if not status.pop("persisted", False):
        store.write_status(status)
    return status


class _Catalog:
    """The catalog in memory, written to catalog.parquet (atomically) as runs finish."""

    def __init__(
        self, store: Store, runs: list[dict[str, Any]], statuses: dict[str, dict[str, Any]]
    ) -> None:
        self.store, self.runs, self.statuses = store, runs, statuses
        self._last = float("-inf")
        self._interval = CATALOG_MIN_INTERVAL_S
        self._dirty = True

    def frame(self) -> pd.DataFrame:
        return build_catalog(self.runs, self.statuses)

    def finished(self, status: dict[str, Any]) -> None:
        self.statuses[status["run_id"]] = status
        self._dirty = True
        if monotonic() - self._last >= self._interval:
            self.flush()

    def flush(self) -> None:
        if self._dirty:
            started = monotonic()
            self.store.write_catalog(self.frame())
            self._last = monotonic()
            self._interval = max(CATALOG_MIN_INTERVAL_S, (self._last - started) / CATALOG_MAX_SHARE)
            self._dirty = False


def _validate(specs: Iterable[RunSpec]) -> None:
    """Check every scenario before starting anything: a typo should fail in a second, not in a thousand runs."""
    from latlab.errors import ScenarioError

    for spec in specs:
        try:
            spec.scenario.validate()
        except ScenarioError as e:
            where = f" (in the run with {spec.params})" if spec.params else ""
            raise type(e)(f"{e}{where}") from None


def run_distinct(
    pairs: Sequence[tuple[Mapping[str, Any], Any]],
    outdir: str | os.PathLike[str],
    jobs: int | None = None,
    progress: bool = True,
    name: str | None = None,
) -> tuple[list[str], pd.DataFrame]:
    """Run each distinct scenario among ``(params, scenario)`` pairs once; return every pair's run id and the catalog.

    Studies describe points that can share a set-up (the same scenario under
    two experiments); a run id is a hash of the scenario, so those points run
    once, labelled by the first pair's params, and each pair finds its
    results under its run id in ``outdir``.
    """
    ids = [run_id_of(sc) for _, sc in pairs]
    unique: dict[str, tuple[Mapping[str, Any], Any]] = {}
    for (params, sc), rid in zip(pairs, ids):
        unique.setdefault(rid, (params, sc))
    catalog = run_sweep(list(unique.values()), outdir, jobs=jobs, progress=progress, name=name)
    return ids, catalog


def run_sweep(
    sweep: Sweep | Iterable[RunSpec | tuple[Mapping[str, Any], Any] | Any],
    outdir: str | os.PathLike[str],
    jobs: int | None = None,
    dask: Any = None,
    timeout_s: float | None = None,
    progress: bool = True,
    retry_failed: bool = True,
    inline: bool = False,
    name: str | None = None,
    stale: str = "redo",
) -> pd.DataFrame:
    """Run a sweep into ``outdir``; return its catalog (one row per run, in sweep order).

    Args:
        sweep: a :class:`Sweep`, or a list of runs: :class:`RunSpec` s,
            ``(params, scenario)`` pairs, or bare scenarios.
        outdir: the sweep folder (``runs/<run_id>/``, ``catalog.parquet``, ``sweep.json``).
        jobs: parallel runs on this machine (default: every core), and the
            number of workers of ``dask="local"``.
        dask: None for the local pool; ``"local"`` for a Dask LocalCluster; a
            scheduler address or scheduler file; or a ``distributed.Client``.
        timeout_s: a time limit per run; a run past it is killed and recorded
            as failed (default: the Sweep's ``timeout_s``, else none).
        progress: show progress (a bar on a terminal, a few lines elsewhere).
        retry_failed: redo runs that failed before (runs that finished are never redone).
        inline: run in this process, one after another (for debugging; ignores ``timeout_s``).
        name: the sweep's name (default: the Sweep's, else "sweep").
        stale: what to do with finished runs made by another latlab version or
            core build (recorded in each status as ``latlab_version`` and
            ``core_build``): "redo" them (the default; said on stderr) or
            "refuse" (raise StaleRunsError before anything runs).

    A run whose ``runs/<id>/status.json`` says "ok" is skipped, so calling
    this again after an interruption does only what is missing. A run that
    raises, panics, crashes its worker or times out is recorded as failed
    (status, error, error_kind) and the others go on. Raises ScenarioError
    before anything runs if a scenario is invalid.
    """
    specs = as_runs(sweep)
    source = None
    if isinstance(sweep, Sweep):
        name = name or sweep.name
        timeout_s = timeout_s if timeout_s is not None else sweep.timeout_s
        source = sweep.source
    name = name or "sweep"
    if dask is not None and inline:
        raise ValueError("choose dask or inline, not both")
    if stale not in STALE_CHOICES:
        raise ValueError(f"stale must be one of {', '.join(STALE_CHOICES)}, got {stale!r}")
    if jobs is not None and jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    jobs = jobs or default_jobs()

    store = Store(outdir)
    store.root.mkdir(parents=True, exist_ok=True)
    runs = [{"run_id": s.run_id, "params": s.params} for s in specs]
    statuses = store.statuses(r["run_id"] for r in runs)
    for run_id, status in list(statuses.items()):
        if status.get("status") == OK and not (store.run_dir(run_id) / RUN_JSON).is_file():
            del statuses[run_id]  # its results were removed since: run it again
    current = provenance()
    stale_runs = {
        rid: why
        for rid, st in statuses.items()
        if st.get("status") == OK and (why := stale_reason(st, current))
    }
    if stale_runs:
        first, why = next(iter(stale_runs.items()))
        what = (
            f"{len(stale_runs)} finished run{'s' if len(stale_runs) > 1 else ''} in {store.root} "
            f"{'were' if len(stale_runs) > 1 else 'was'} made by another latlab version or core build "
            f"(run {first}: {why})"
        )
        if stale == "refuse":
            raise StaleRunsError(
                f"{what}; refusing to mix them with this build's runs: use another "
                'output folder, or stale="redo" to run them again'
            )
        if progress:
            print(f"latlab sweep: {what}; redoing them", file=sys.stderr)
    previous = dict(statuses)  # attempts keep counting across a redo
    for run_id in stale_runs:
        del statuses[run_id]
    todo = [s for s in specs if needs_run(statuses.get(s.run_id), retry_failed)]
    _validate(todo)
    store.write_sweep(name, runs, source)
    catalog = _Catalog(store, runs, statuses)
    catalog.flush()
    root = store.root.resolve()
    tasks = [_task(s, previous.get(s.run_id), root) for s in todo]
    if not tasks:
        return catalog.frame()

    with ExitStack() as stack:
        if dask is not None:
            from latlab.sweep.dask_cluster import cluster_threads, connect, run_on_dask

            client = stack.enter_context(connect(dask, jobs))
            events = run_on_dask(client, tasks, timeout_s)
            capacity = cluster_threads(client)
            where = f"Dask ({capacity} worker threads at {client.scheduler.address})"
        elif inline:
            events, capacity, where = _inline(tasks), 1, "this process"
        else:
            capacity = min(jobs, len(tasks))
            events = LocalPool(capacity, timeout_s).run(tasks)
            where = f"{capacity} local worker process{'es' if capacity > 1 else ''}"
        bar = SweepProgress(
            name,
            len(specs),
            len(specs) - len(todo),
            enabled=progress,
            capacity=capacity,
            where=where,
        )
        in_flight: set[str] = set()
        try:
            with bar:
                for kind, payload in events:
                    if kind == "start":
                        in_flight.add(payload["run_id"])
                        bar.run_started(payload)
                    else:
                        status = _record(store, payload)
                        in_flight.discard(status["run_id"])
                        catalog.finished(status)
                        bar.run_finished(status)
        finally:
            close = getattr(events, "close", None)
            if close is not None:
                close()  # stops the workers if we are leaving early (Ctrl-C)
            for run_id in in_flight:  # a worker may have finished a run we were not told about
                status = store.read_status(run_id)
                if status is not None and status != statuses.get(run_id):
                    catalog.finished(status)
            catalog.flush()
    return catalog.frame()


class SweepFailed(RuntimeError):
    """Some runs of :func:`run_all` failed; ``catalog`` has every run's status and error."""

    def __init__(self, message: str, catalog: pd.DataFrame) -> None:
        super().__init__(message)
        self.catalog = catalog


def run_all(
    scenarios: Iterable[Any],
    outdir: str | os.PathLike[str],
    jobs: int | None = None,
    dask: Any = None,
    timeout_s: float | None = None,
    progress: bool = True,
    inline: bool = False,
) -> list[Any]:
    """Run scenarios through the sweep runner; return their Results in the same order.

    The drop-in for a study's "run all these scenarios" loop. ``scenarios``
    holds Scenarios, dicts or TOML paths, ``(params, scenario)`` pairs, or
    RunSpecs; a scenario that appears twice is run once. Runs finished in
    ``outdir`` before are not run again. Raises :class:`SweepFailed` (after
    every run was tried) if any run failed.
    """
    specs = [
        s if isinstance(s, RunSpec) else RunSpec.of(s[1], s[0]) if _is_pair(s) else RunSpec.of(s)
        for s in scenarios
    ]
    unique = list({s.run_id: s for s in reversed(specs)}.values())[
        ::-1
    ]  # first occurrence, in order
    catalog = run_sweep(
        unique, outdir, jobs=jobs, dask=dask, timeout_s=timeout_s, progress=progress, inline=inline
    )
    failed = catalog[catalog["status"] != OK]
    if len(failed):
        first = failed.iloc[0]
        raise SweepFailed(
            f"{len(failed)} of {len(catalog)} runs failed (in {outdir}); "
            f"run {first['run_id']}: {first['error']}",
            catalog,
        )
    from latlab.sweep.store import load_run

    return [load_run(outdir, s.run_id) for s in specs]


def _is_pair(item: Any) -> bool:
    return isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], Mapping)
