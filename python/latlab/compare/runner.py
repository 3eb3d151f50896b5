"""``run()``: every scheme × seed alone and against CUBIC, then the table, the figures and the data."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pandas as pd

from latlab import _atomic, dotpath
from latlab.compare import figures, metrics, translate
from latlab.compare.spec import CompareSpec, Scheme, load, seed_list

TABLE_CSV = "table.csv"
SEEDS_CSV = "seeds.csv"
NUMBERS_JSON = "compare.json"
PLANE_PNG = "plane.png"
RTT_PNG = "rtt.png"
#: --quick: this fraction of the duration and measurement window, and at most this many seeds.
QUICK_FRACTION = 0.25
QUICK_SEEDS = 2


class CompareFailed(RuntimeError):
    """Some runs failed; the finished ones are kept in the output folder."""


def describe(scheme: Scheme, spec: CompareSpec) -> dict[str, Any]:
    """A scheme's settings as table columns ("(path's)" marks what the path decides)."""
    queue = scheme.queue_kind
    if queue is None:
        path_queue = dotpath.get(spec.path.scenario, spec.path.bottleneck, None)
        kind = path_queue.get("kind") if isinstance(path_queue, dict) else None
        queue = f"{kind} (path's)" if kind else "(path's)"
    return {
        "cc": scheme.cc,
        "rwnd": scheme.rwnd,
        "queue": queue,
        "pacing": "(path's)" if scheme.pacing is None else ("on" if scheme.pacing else "off"),
        "ecn": "on" if scheme.ecn else "off",
        "edge": scheme.edge_kind or ("(path's)" if spec.path.edge else "-"),
    }


def shortened(spec: CompareSpec) -> CompareSpec:
    """The same comparison shortened: a quarter of the time, at most two seeds."""
    return dataclasses.replace(
        spec,
        duration_s=spec.duration_s * QUICK_FRACTION,
        measure_from_s=spec.measure_from_s * QUICK_FRACTION,
        seeds=spec.seeds[:QUICK_SEEDS],
    )


def runs(spec: CompareSpec) -> list[tuple[dict[str, Any], Any]]:
    """The (params, scenario) pairs of every run, scheme by scheme, seed by seed."""
    return [
        ({"scheme": s.name, "seed": seed, "role": role}, translate.scenario(spec, s, seed, role))
        for s in spec.schemes
        for seed in spec.seeds
        for role in translate.ROLES
    ]


def run(
    schemes: CompareSpec | str | os.PathLike[str],
    outdir: str | os.PathLike[str],
    seeds: int | None = None,
    jobs: int | None = None,
    quick: bool = False,
    progress: bool = True,
) -> pd.DataFrame:
    """Run a comparison; return its table (one row per scheme).

    Args:
        schemes: a scheme file (see :mod:`latlab.compare.spec`) or a parsed CompareSpec.
        outdir: where the runs (``runs/<run_id>/``, ``catalog.parquet``), ``table.csv``,
            ``seeds.csv``, ``compare.json``, ``plane.png`` and ``rtt.png`` go.
        seeds: run seeds 1..N instead of the file's.
        jobs: parallel runs (default: every core).
        quick: a quarter of the duration and window, at most two seeds.
        progress: show the sweep's progress bar.

    Runs finished in ``outdir`` before are not run again. Raises CompareError
    (an invalid file or scheme) before anything runs, and CompareFailed when
    some run failed (after every run was tried).
    """
    from latlab.sweep import run_id_of, run_sweep
    from latlab.sweep.store import OK, load_run

    spec = schemes if isinstance(schemes, CompareSpec) else load(schemes)
    if seeds is not None:
        spec = dataclasses.replace(spec, seeds=seed_list(seeds, "seeds"))
    if quick:
        spec = shortened(spec)
    translate.check(spec)
    outdir = Path(outdir)
    pairs = runs(spec)
    catalog = run_sweep(pairs, outdir, jobs=jobs, progress=progress, name=spec.name)
    failed = catalog[catalog["status"] != OK]
    if len(failed):
        first = failed.iloc[0]
        raise CompareFailed(
            f"{len(failed)} of {len(catalog)} runs failed (finished ones are kept in {outdir}); "
            f"run {first['run_id']}: {first['error']}"
        )
    ids = {(p["scheme"], p["seed"], p["role"]): run_id_of(sc) for p, sc in pairs}
    seed_rows, histograms = _measure(spec, ids, lambda rid: load_run(outdir, rid))
    table = _table(spec, seed_rows, histograms)
    write(spec, outdir, table, seed_rows, histograms)
    return table


def _measure(spec: CompareSpec, ids: dict[tuple[str, int, str], str], load_results: Any):
    rows, histograms = [], {}
    for scheme in spec.schemes:
        parts = []
        for seed in spec.seeds:
            alone_id = ids[(scheme.name, seed, translate.ALONE)]
            vs_id = ids[(scheme.name, seed, translate.VS_CUBIC)]
            alone = load_results(alone_id)
            row = metrics.seed_row(alone, load_results(vs_id))
            rows.append(
                {
                    "scheme": scheme.name,
                    "seed": seed,
                    **row,
                    "alone_run": alone_id,
                    "vs_cubic_run": vs_id,
                }
            )
            parts.append(metrics.group_histogram(alone, translate.SCHEME_GROUP))
        histograms[scheme.name] = metrics.pooled_histogram(parts)
    return pd.DataFrame(rows), histograms


def _table(
    spec: CompareSpec, seed_rows: pd.DataFrame, histograms: dict[str, pd.DataFrame]
) -> pd.DataFrame:
    table = metrics.scheme_table(seed_rows, histograms)
    settings = pd.DataFrame([{"scheme": s.name, **describe(s, spec)} for s in spec.schemes])
    return settings.merge(table, on="scheme", how="left")


def write(
    spec: CompareSpec,
    outdir: Path,
    table: pd.DataFrame,
    seed_rows: pd.DataFrame,
    histograms: dict[str, pd.DataFrame],
) -> None:
    """table.csv, seeds.csv, compare.json, plane.png and rtt.png."""
    _atomic.write_text(outdir / TABLE_CSV, table.to_csv(index=False))
    _atomic.write_text(outdir / SEEDS_CSV, seed_rows.to_csv(index=False))
    numbers = {
        "name": spec.name,
        "source": spec.source,
        "path": spec.path.source,
        "seeds": list(spec.seeds),
        "flows": spec.flows,
        "duration_s": spec.duration_s,
        "measure_from_s": spec.measure_from_s,
        "schemes": json.loads(table.to_json(orient="records")),
        "per_seed": json.loads(seed_rows.to_json(orient="records")),
    }
    _atomic.write_text(outdir / NUMBERS_JSON, json.dumps(numbers, indent=2) + "\n")
    window = f"[{spec.measure_from_s:g}, {spec.duration_s:g}] s"
    figures.save(
        figures.plane_figure(
            seed_rows, f"{spec.name}: each scheme alone ({spec.flows} flow(s)), {window}"
        ),
        outdir / PLANE_PNG,
    )
    figures.save(
        figures.rtt_figure(
            histograms,
            f"{spec.name}: RTT of each scheme alone, {len(spec.seeds)} seeds pooled, {window}",
        ),
        outdir / RTT_PNG,
    )
