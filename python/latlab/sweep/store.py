"""A sweep folder on disk: one results folder per run, a status file each, and the catalog.

Layout::

    DIR/sweep.json                the sweep: its name and every run's id and parameters
    DIR/catalog.parquet           one row per run: id, parameters, status, wall time,
                                  error, summary metrics (rebuilt from the status files)
    DIR/runs/<run_id>/            what Results.write() writes (Parquet tables, run.json,
                                  scenario.toml), then
    DIR/runs/<run_id>/status.json written last: status "ok" or "failed", error, wall time,
                                  summary metrics, attempt number

Every file is written atomically (temp file + rename), and a run's
status.json only after its results, so a status "ok" means a complete
results folder. The status files are the source of truth: the catalog is
rebuilt from them, so killing a sweep at any moment (even with SIGKILL)
loses at most the runs in progress.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from latlab import _atomic, frames

SWEEP_JSON = "sweep.json"
CATALOG = "catalog.parquet"
RUNS_DIR = "runs"
STATUS_JSON = "status.json"
FORMAT_VERSION = 1

OK, FAILED, PENDING = "ok", "failed", "pending"

# Latency percentiles pooled over a run's sampled flows (latlab.latency), ms.
LATENCY_METRICS = tuple(f"{m}_p{q}_ms" for m in ("rtt", "owd") for q in (50, 95, 99))
# Summary metrics (from Results.summary()) copied into the catalog, in column order.
METRICS = (
    "name",
    "flows",
    "mean_goodput_bps",
    "total_goodput_bps",
    *LATENCY_METRICS,
    "drops_pkts",
    "busiest_link",
    "busiest_link_utilization",
    "events",
    "events_per_s",
    "sim_wall_s",
    "conservation_ok",
)
FIXED_COLUMNS = (
    "run_id",
    "status",
    "wall_s",
    "attempt",
    "error",
    "error_kind",
    *METRICS,
    "finished_at",
    "host",
    "path",
)
_INT_COLUMNS = ("attempt", "flows", "drops_pkts", "events")
_FLOAT_COLUMNS = (
    "wall_s",
    "mean_goodput_bps",
    "total_goodput_bps",
    *LATENCY_METRICS,
    "busiest_link_utilization",
    "events_per_s",
    "sim_wall_s",
)


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _json_text(data: Any, sort_keys: bool = True) -> str:
    return json.dumps(data, indent=2, sort_keys=sort_keys, default=str, allow_nan=False) + "\n"


class Store:
    """A sweep folder: where each run's files and status go."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def run_dir(self, run_id: str) -> Path:
        return self.root / RUNS_DIR / run_id

    # ----- statuses ------------------------------------------------------
    def read_status(self, run_id: str) -> dict[str, Any] | None:
        """The run's status, or None if it never finished (or its status file is unreadable)."""
        try:
            return json.loads((self.run_dir(run_id) / STATUS_JSON).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def write_status(self, status: Mapping[str, Any]) -> Path:
        return write_status_file(self.run_dir(str(status["run_id"])), status)

    def write_files(self, run_id: str, files: Mapping[str, bytes]) -> None:
        """Write a run's results files (sent back by a remote worker); run.json last, as Results.write does."""
        folder = self.run_dir(run_id)
        for name in sorted(files, key=lambda n: (n == "run.json", n)):
            target = (folder / name).resolve()
            if folder.resolve() not in target.parents:
                raise ValueError(f"run {run_id}: refusing to write {name!r} outside its folder")
            _atomic.write_with(target, lambda tmp, data=files[name]: tmp.write_bytes(data))

    def statuses(self, run_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        return {rid: st for rid in run_ids if (st := self.read_status(rid)) is not None}

    # ----- the sweep -----------------------------------------------------
    def write_sweep(
        self, name: str | None, runs: Sequence[Mapping[str, Any]], source: str | None = None
    ) -> None:
        """Record the sweep's runs (id and parameters, in order) in sweep.json."""
        meta = {
            "format_version": FORMAT_VERSION,
            "name": name,
            "source": source,
            "written_at": now_iso(),
            "runs": [{"run_id": r["run_id"], "params": r["params"]} for r in runs],
        }
        _atomic.write_text(
            self.root / SWEEP_JSON, _json_text(meta, sort_keys=False)
        )  # parameters keep their order

    def read_sweep(self) -> dict[str, Any]:
        path = self.root / SWEEP_JSON
        if not path.is_file():
            raise FileNotFoundError(2, "not a latlab sweep folder (no sweep.json)", str(self.root))
        return json.loads(path.read_text(encoding="utf-8"))

    # ----- the catalog ---------------------------------------------------
    def write_catalog(self, catalog: pd.DataFrame) -> Path:
        return frames.write_parquet(catalog, self.root / CATALOG)

    def catalog(self) -> pd.DataFrame:
        """The catalog rebuilt from sweep.json and the status files (always current)."""
        meta = self.read_sweep()
        runs = meta.get("runs", [])
        return build_catalog(runs, self.statuses(r["run_id"] for r in runs))


def write_status_file(folder: Path, status: Mapping[str, Any]) -> Path:
    """Write ``status.json`` into a run folder atomically."""
    return _atomic.write_text(Path(folder) / STATUS_JSON, _json_text(dict(status)))


def _column_safe(values: list[Any]) -> list[Any]:
    """One parameter column as values Parquet can store: lists/tables as JSON, mixed types as text."""
    values = [json.dumps(v, sort_keys=True) if isinstance(v, (list, dict)) else v for v in values]
    kinds = {
        ("num" if isinstance(v, (int, float)) and not isinstance(v, bool) else type(v).__name__)
        for v in values
        if v is not None
    }
    if len(kinds) > 1:
        return [None if v is None else str(v) for v in values]
    return values


def build_catalog(
    runs: Sequence[Mapping[str, Any]], statuses: Mapping[str, Mapping[str, Any]]
) -> pd.DataFrame:
    """One row per run (in sweep order): id, status, parameters, wall time, error, metrics.

    ``runs`` are {run_id, params} (sweep.json's list); a run without a status is "pending".
    Parameter columns are named by their dotted key (e.g. ``flows.0.cc``); a name
    that would clash with a fixed column gets a ``param:`` prefix.
    """
    param_names: list[str] = []
    for r in runs:
        for key in r.get("params", {}):
            if key not in param_names:
                param_names.append(key)
    param_cols = {k: (f"param:{k}" if k in FIXED_COLUMNS else k) for k in param_names}

    rows: dict[str, list[Any]] = {
        c: [] for c in ("run_id", "status", *param_cols.values(), *FIXED_COLUMNS[2:])
    }
    for r in runs:
        rid = r["run_id"]
        st = statuses.get(rid) or {}
        metrics = st.get("metrics") or {}
        params = r.get("params", {})
        rows["run_id"].append(rid)
        rows["status"].append(st.get("status", PENDING))
        for key, col in param_cols.items():
            rows[col].append(params.get(key))
        for col in ("wall_s", "attempt", "error", "error_kind", "finished_at", "host"):
            rows[col].append(st.get(col))
        for col in METRICS:
            rows[col].append(metrics.get(col))
        rows["path"].append(f"{RUNS_DIR}/{rid}")

    df = pd.DataFrame(
        {c: (_column_safe(v) if c in param_cols.values() else v) for c, v in rows.items()}
    )
    for col in _INT_COLUMNS:
        df[col] = pd.array([None if v is None else int(v) for v in rows[col]], dtype="Int64")
    for col in _FLOAT_COLUMNS:
        df[col] = pd.array(
            [None if v is None else float(v) for v in rows[col]], dtype="Float64"
        ).astype("float64")
    df["conservation_ok"] = pd.array(rows["conservation_ok"], dtype="boolean")
    df["finished_at"] = pd.to_datetime(
        pd.Series(rows["finished_at"], dtype="object"), utc=True, format="ISO8601"
    )
    for col in ("run_id", "status", "error", "error_kind", "name", "busiest_link", "host", "path"):
        df[col] = pd.Series(rows[col], dtype="string")
    return df


def load_catalog(outdir: str | os.PathLike[str], refresh: bool = True) -> pd.DataFrame:
    """A sweep folder's catalog as a DataFrame.

    With ``refresh`` (the default) it is rebuilt from the status files, so it is
    current even while the sweep runs or after it was killed, and
    catalog.parquet is rewritten if the folder is writable. Without, the
    catalog.parquet file is read as it is.
    """
    store = Store(outdir)
    if not refresh or not (store.root / SWEEP_JSON).is_file():
        path = store.root / CATALOG
        if not path.is_file():
            raise FileNotFoundError(
                2, "not a latlab sweep folder (no sweep.json or catalog.parquet)", str(store.root)
            )
        return frames.read_parquet(path)
    catalog = store.catalog()
    try:
        store.write_catalog(catalog)
    except OSError:
        pass  # a read-only copy of a sweep is still readable
    return catalog


def load_run(outdir: str | os.PathLike[str], run_id: str):  # noqa: ANN201 - latlab.Results
    """The :class:`~latlab.results.Results` of one run of a sweep folder."""
    from latlab.results import Results

    return Results.load(Store(outdir).run_dir(run_id))
