"""One benchmark run in a fresh process: ``python -m latlab.bench.measure NAME [--quick]``.

``latlab bench`` starts this once per scenario so the peak RSS it reports
(``getrusage(RUSAGE_SELF).ru_maxrss``) belongs to that run alone. It uses only
the standard library, tomli-w and ``latlab._core`` -- no pandas, pyarrow or
matplotlib, whose imports would dwarf a small run's memory. It prints one JSON
line on stdout: name, sim_s, wall_s, build_s, events, events_per_s,
peak_rss_mb, baseline_rss_mb, rss_after_build_mb, ... With ``--build-only`` it
builds the scenario, records the memory it holds, and stops (the scaling
benchmark uses this to split memory into bytes per flow and per link).

NAME is a built-in benchmark (``dumbbell-10``), any built-in scenario
(``default``) or a path to a TOML file.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tomllib
from pathlib import Path
from time import perf_counter

from latlab import builtin

#: ``--quick`` runs each scenario for this fraction of its duration_s (and
#: measure_from_s), for smoke tests: a 400 s scenario runs for 40 s.
QUICK_FRACTION = 0.1


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, MB (Linux reports ru_maxrss in KiB)."""
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    scale = 1 / 1024 if sys.platform != "darwin" else 1 / (1024 * 1024)  # macOS reports bytes
    return kib * scale


def rss_mb() -> float | None:
    """Resident set size now, MB (Linux /proc; None elsewhere)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def load(name: str) -> tuple[str, str]:
    """(toml_text, source_name) for a benchmark name, built-in name or file path."""
    path = Path(name)
    if name.endswith(".toml") and path.is_file():
        return path.read_text(encoding="utf-8"), str(path)
    for candidate in (f"{builtin.BENCH_DIR}/{name}", name):
        if builtin.exists(candidate):
            return builtin.read_text(candidate), builtin.source_name(candidate)
    raise FileNotFoundError(
        f"no benchmark {name!r}; built-in benchmarks: {', '.join(builtin.bench_names())}"
    )


def quick(text: str, fraction: float = QUICK_FRACTION) -> str:
    """The scenario with duration_s and measure_from_s scaled by ``fraction``."""
    import tomli_w

    data = tomllib.loads(text)
    for key in ("duration_s", "measure_from_s"):
        if isinstance(data.get(key), (int, float)):
            data[key] = data[key] * fraction
    return tomli_w.dumps(data)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m latlab.bench.measure", description=__doc__.splitlines()[0]
    )
    parser.add_argument("name")
    parser.add_argument(
        "--quick", action="store_true", help=f"run {QUICK_FRACTION:.0%} of the duration"
    )
    parser.add_argument(
        "--build-only", action="store_true", help="build, measure memory, do not run"
    )
    args = parser.parse_args(argv)
    try:
        text, source = load(args.name)
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.quick:
        text = quick(text)
    try:
        from latlab import _core
    except ImportError as e:
        print(f"error: latlab._core is not built: {e}", file=sys.stderr)
        return 3
    baseline_mb = peak_rss_mb()
    before_build_mb = rss_mb()
    started = perf_counter()
    try:
        sim = _core.Simulation(text, source)
        build_s = perf_counter() - started
        after_build_mb = rss_mb()
        if not args.build_only:
            sim.run()
    except _core.ScenarioError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    wall_s = perf_counter() - started
    if args.build_only:
        record = {
            "name": args.name,
            "build_s": round(build_s, 6),
            "rss_after_build_mb": after_build_mb,
            "rss_before_build_mb": before_build_mb,
            "baseline_rss_mb": round(baseline_mb, 2),
            "flows": int(sim.n_flows),
            "links": int(sim.n_links),
        }
        print(json.dumps(record), flush=True)
        return 0
    events = int(sim.events)
    record = {
        "name": args.name,
        "quick": args.quick,
        "sim_s": int(sim.duration_ns) / 1e9,
        "wall_s": round(wall_s, 6),
        "build_s": round(build_s, 6),
        "run_s": round(wall_s - build_s, 6),
        "rss_after_build_mb": after_build_mb,
        "events": events,
        "events_per_s": round(events / wall_s, 1) if wall_s > 0 else None,
        "peak_rss_mb": round(peak_rss_mb(), 2),
        "baseline_rss_mb": round(baseline_mb, 2),
        "flows": int(sim.n_flows),
        "links": int(sim.n_links),
        "conservation_ok": all(bool(c.get("ok", True)) for c in sim.conservation())
        and bool(
            sim.conservation_ok() if callable(getattr(sim, "conservation_ok", None)) else True
        ),
        "core_version": str(_core.version()),
    }
    print(json.dumps(record), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
