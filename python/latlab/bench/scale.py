"""`latlab bench --scale`: what a network of N flows costs as N grows.

The scenario is one dumbbell of N sender/receiver pairs, each pair one bulk
NewReno flow: 10 Mbit/s access links with 6-20 ms delays, a core of
N x 100 kbit/s and 100 ms whose DropTail buffer holds N x 10 bytes, starts
spread over the first 10 s. Every size runs in a fresh process (so its peak
memory is its own) and is built a second time with a single flow, so that
the memory held after building splits into bytes per link and bytes per
idle flow. The largest size runs for a shorter simulated time; events per
second and bytes per flow are what compare across sizes.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from latlab.bench import suite as bench

#: Flow counts of the default scaling run.
SIZES: tuple[int, ...] = (1_000, 10_000, 100_000)
#: Simulated seconds per size; sizes above 10k get the short run.
DURATION_S = 40.0
LARGE_DURATION_S = 10.0
LARGE_FROM = 20_000


def duration_s(n: int) -> float:
    return DURATION_S if n < LARGE_FROM else LARGE_DURATION_S


def scenario_text(n: int, sim_s: float, flows: int | None = None) -> str:
    """The scaling dumbbell with ``n`` pairs and ``flows`` flows (default ``n``)."""
    flows = n if flows is None else flows
    return f"""# latlab bench --scale: {n} pairs, {flows} flows.
name = "scale-{n}"
seed = 1
duration_s = {sim_s:g}
sample_interval_ms = 1000

[tcp]
preset = "ns2"

[topology]
kind = "dumbbell"
pairs = {n}
access_rate_bps = 10e6
access_delay_ms = [6, 20]
core_rate_bps = {n * 100_000}
core_delay_ms = 100
core_queue = {{ kind = "droptail", limit_bytes = {n * 10} }}

[[flows]]
count = {flows}
src = "s{{i}}"
dst = "d{{i}}"
cc = "newreno"
start_s = {{ uniform = [0, 10] }}
"""


def measure(n: int, workdir: Path, quick: bool = False) -> dict[str, Any]:
    """Run the size-``n`` dumbbell and its one-flow twin; one record."""
    sim_s = duration_s(n) * (0.25 if quick else 1.0)
    full = workdir / f"scale-{n}.toml"
    full.write_text(scenario_text(n, sim_s), encoding="utf-8")
    links_only = workdir / f"scale-{n}-1flow.toml"
    links_only.write_text(scenario_text(n, sim_s, flows=1), encoding="utf-8")
    run = bench.run_one(str(full))
    twin = bench.run_one(str(links_only), build_only=True)
    base = twin["rss_before_build_mb"]
    mb = 1024 * 1024
    per_link = (twin["rss_after_build_mb"] - base) * mb / twin["links"]
    per_flow = (run["rss_after_build_mb"] - twin["rss_after_build_mb"]) * mb / max(n - 1, 1)
    return {
        "flows": n,
        "links": run["links"],
        "sim_s": run["sim_s"],
        "build_s": run["build_s"],
        "run_s": run["run_s"],
        "wall_s": run["wall_s"],
        "events": run["events"],
        "events_per_s": run["events_per_s"],
        "peak_rss_mb": run["peak_rss_mb"],
        "idle_bytes_per_flow": round(per_flow),
        "bytes_per_link": round(per_link),
        "conservation_ok": run["conservation_ok"],
    }


def run(
    sizes: Sequence[int] = SIZES,
    quick: bool = False,
    on_record: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Measure every size in turn (smallest first), calling ``on_record`` after each."""
    records = []
    with tempfile.TemporaryDirectory(prefix="latlab-scale-") as tmp:
        for n in sorted(sizes):
            rec = measure(n, Path(tmp), quick=quick)
            records.append(rec)
            if on_record is not None:
                on_record(rec)
    return records


def table(records: Iterable[Mapping[str, Any]], machine: Mapping[str, Any]):
    """A rich table, one row per size."""
    from rich.table import Table

    from latlab.tables import count, si

    t = Table(
        title="latlab bench --scale (dumbbell, one NewReno flow per pair)",
        caption=f"{machine.get('cpu')}, {machine.get('cores')} cores",
        title_justify="left",
    )
    for col in (
        "flows",
        "links",
        "simulated s",
        "build s",
        "run s",
        "events/s",
        "peak RSS MB",
        "B/idle flow",
        "B/link",
    ):
        t.add_column(col, justify="right")
    for r in records:
        t.add_row(
            count(r["flows"]),
            count(r["links"]),
            f"{r['sim_s']:g}",
            f"{r['build_s']:.2f}",
            f"{r['run_s']:.2f}",
            si(r["events_per_s"]),
            f"{r['peak_rss_mb']:.0f}",
            count(r["idle_bytes_per_flow"]),
            count(r["bytes_per_link"]),
        )
    return t


def figure(records: Sequence[Mapping[str, Any]], path: Path, machine: Mapping[str, Any]) -> None:
    """Log-log wall time (build and run, per simulated second) and peak memory against N."""
    from matplotlib.figure import Figure

    n = [r["flows"] for r in records]
    fig = Figure(figsize=(9, 3.6))
    ax1, ax2 = fig.subplots(1, 2)
    ax1.loglog(n, [r["build_s"] for r in records], "o-", label="build")
    ax1.loglog(n, [r["run_s"] / r["sim_s"] for r in records], "s-", label="run, per simulated s")
    ax1.set_xlabel("flows")
    ax1.set_ylabel("wall seconds")
    ax1.legend()
    ax1.grid(True, which="both", alpha=0.3)
    ax2.loglog(n, [r["peak_rss_mb"] for r in records], "o-", color="C2", label="peak RSS")
    ax2.loglog(
        n,
        [r["idle_bytes_per_flow"] * r["flows"] / 2**20 for r in records],
        "s--",
        color="C3",
        label="idle flows (after build)",
    )
    ax2.set_xlabel("flows")
    ax2.set_ylabel("MB")
    ax2.legend()
    ax2.grid(True, which="both", alpha=0.3)
    fig.suptitle(
        f"latlab bench --scale on {machine.get('cpu')} ({machine.get('cores')} cores)", fontsize=9
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)
