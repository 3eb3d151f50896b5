"""The efficiency study's five stages, each producing a table: the simulated loaded RTT, the Monte-Carlo
efficiency curves, the options table, and the lossless and loaded cross-checks against the packet simulator."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from latlab.studies.efficiency.cases import (
    NOTE_SIZES,
    PROFILES,
    REFERENCE_SIZE,
    SEED,
    Settings,
    run_scenarios,
)


def simulate_loaded_rtt(settings: Settings, jobs: int | None, outdir: Path) -> dict[str, Any]:
    """Stage 1: the loaded-RTT distribution of each profile, written as ``profiles/<name>-loaded.toml``."""
    from latlab.models import loaded_rtt, profiles

    out: dict[str, Any] = {"profiles": {}, "samples": {}, "runs": []}
    plans = {
        name: loaded_rtt.plan(
            profiles.load(name),
            settings.loaded_runs,
            seed=SEED,
            probes=settings.loaded_probes,
            duration_s=settings.loaded_duration_s,
        )
        for name in PROFILES
    }
    everything = [r for name in PROFILES for r in plans[name]]
    tables = iter(
        run_scenarios(
            [loaded_rtt.scenario(r) for r in everything], jobs, outdir / "runs" / "loaded-rtt"
        )
    )
    for name in PROFILES:
        base = profiles.load(name)
        runs = plans[name]
        samples, summary = loaded_rtt.simulate(
            runs, run_many=lambda scs: [next(tables) for _ in scs]
        )
        text = loaded_rtt.variant_toml(base, samples, summary)
        path = outdir / "profiles" / f"{name}{profiles.LOADED_SUFFIX}.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        info = dict(tomllib.loads(text)["simulation"])
        out["profiles"][name] = base.with_(
            loaded_rtt_ms=loaded_rtt.distribution(samples), loaded_info=info
        )
        out["samples"][name] = samples
        out["runs"].append(summary.assign(profile=name))
    out["runs"] = pd.concat(out["runs"], ignore_index=True)
    return out


def monte_carlo(loaded_profiles: dict[str, Any], settings: Settings) -> pd.DataFrame:
    """Stage 2: efficiency vs size per profile, single flow and one background flow, both formula variants."""
    from latlab.models import montecarlo

    grid = montecarlo.size_grid(per_decade=settings.per_decade)
    grid = np.union1d(grid, [REFERENCE_SIZE])
    frames = []
    for name in PROFILES:
        prof = loaded_profiles[name]
        for n_flows in (1, 2):
            for variant in ("published", "exact"):
                df = montecarlo.efficiency_vs_size(
                    prof,
                    grid,
                    n_flows=n_flows,
                    n_samples=settings.n_samples,
                    options=montecarlo.ModelOptions(variant=variant),
                    seed=SEED,
                )
                frames.append(df.assign(profile=name, n_flows=n_flows, variant=variant))
    return pd.concat(frames, ignore_index=True)


def options_table(loaded_profiles: dict[str, Any], settings: Settings) -> pd.DataFrame:
    """Stage 3: mean efficiency at a few sizes under options the study did not have (single flow, exact model)."""
    from latlab.models import latency, montecarlo

    sizes = list(NOTE_SIZES) + [REFERENCE_SIZE]
    cases: list[tuple[str, Any, dict[str, Any]]] = [
        ("exact model, IW 10 (baseline)", montecarlo.ModelOptions(), {}),
        ("published formula, IW 10", montecarlo.ModelOptions(variant="published"), {}),
        ("IW 4 (RFC 3390)", montecarlo.ModelOptions(iw=4), {}),
        ("IW 30", montecarlo.ModelOptions(iw=30), {}),
        ("IW 100", montecarlo.ModelOptions(iw=100), {}),
        ("TCP Fast Open, IW 10", montecarlo.ModelOptions(tfo=True), {}),
        ("TFO + IW 30", montecarlo.ModelOptions(tfo=True, iw=30), {}),
        (
            "delayed ACK (2 segments, 40 ms)",
            montecarlo.ModelOptions(delayed_ack=latency.DelayedAck()),
            {},
        ),
        (
            "C drawn from the whole throughput distribution",
            montecarlo.ModelOptions(),
            {"capacity": "sampled"},
        ),
    ]
    rows = []
    n = min(settings.n_samples, 200_000)
    for name in PROFILES:
        base = loaded_profiles[name]
        for label, options, changes in cases:
            prof = base.with_(**changes) if changes else base
            df = montecarlo.efficiency_vs_size(prof, sizes, n_samples=n, options=options, seed=SEED)
            for _, row in df.iterrows():
                rows.append(
                    {
                        "profile": name,
                        "case": label,
                        "size_bytes": int(row["size_bytes"]),
                        "mean": row["mean"],
                        "p50": row["p50"],
                    }
                )
    return pd.DataFrame(rows)


def lossless_check(
    loaded_profiles: dict[str, Any],
    settings: Settings,
    jobs: int | None,
    rundir: Path | None = None,
) -> pd.DataFrame:
    """Stage 4: finite flows over a lossless link vs the model, with and without delayed ACKs."""
    from latlab.models import latency, montecarlo, simcheck

    grid = montecarlo.size_grid(per_decade=settings.check_per_decade)
    specs = [(name, dack) for name in PROFILES for dack in (False, True)]
    typical = {name: loaded_profiles[name].typical() for name in PROFILES}
    scenarios = [
        simcheck.lossless_scenario(
            grid,
            *typical[name],
            delayed_ack=dack,
            name=f"fct-{name}-{'delack' if dack else 'plain'}",
        )
        for name, dack in specs
    ]
    frames = []
    for (name, dack), flows in zip(specs, run_scenarios(scenarios, jobs, rundir)):
        c, r = typical[name]
        ct = simcheck.completion_times(flows)
        sizes = ct["size_bytes"].to_numpy()
        frames.append(
            pd.DataFrame(
                {
                    "profile": name,
                    "delayed_ack": dack,
                    "capacity_bps": c,
                    "rtt_s": r,
                    "size_bytes": sizes,
                    "sim_s": ct["fct_s"].to_numpy(),
                    "retransmitted_segments": ct["retransmitted_segments"].to_numpy(),
                    "exact_s": simcheck.model_fct_s(sizes, c, r),
                    "published_s": simcheck.model_fct_s(sizes, c, r, variant="published"),
                    "delack_model_s": simcheck.model_fct_s(
                        sizes, c, r, delayed_ack=latency.DelayedAck()
                    ),
                    "tolerance_s": simcheck.tolerance_s(c),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def loaded_check(
    loaded: dict[str, Any], settings: Settings, jobs: int | None, rundir: Path | None = None
) -> pd.DataFrame:
    """Stage 5: flows that start while a background flow loads the buffer, vs the lossless model."""
    from latlab.models import montecarlo, simcheck

    grid = montecarlo.size_grid(per_decade=settings.loaded_check_per_decade)
    specs = [
        (name, seed) for name in PROFILES for seed in range(1, settings.loaded_check_seeds + 1)
    ]
    typical = {name: loaded["profiles"][name].typical() for name in PROFILES}
    scenarios = [
        simcheck.loaded_scenario(
            grid,
            *typical[name],
            loaded["profiles"][name].buffer_bytes,
            seed=seed,
            name=f"fct-loaded-{name}-{seed}",
        )
        for name, seed in specs
    ]
    frames = []
    model_cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name in PROFILES:
        c, r = typical[name]
        r_s = loaded["samples"][name]
        # The model per size: median over the simulated loaded-RTT samples, at half the capacity.
        per_sample = np.stack([simcheck.model_fct_s(s, c / 2, r_s) for s in grid])
        model_cache[name] = (np.median(per_sample, axis=1), simcheck.model_fct_s(grid, c, r))
    for (name, seed), flows in zip(specs, run_scenarios(scenarios, jobs, rundir)):
        ct = simcheck.completion_times(flows)
        m_loaded, m_single = model_cache[name]
        lookup = dict(zip(grid.tolist(), range(len(grid))))
        idx = [lookup[int(s)] for s in ct["size_bytes"]]
        frames.append(
            ct.assign(
                profile=name,
                seed=seed,
                model_loaded_s=m_loaded[idx],
                model_unloaded_s=m_single[idx],
            )
        )
    return pd.concat(frames, ignore_index=True)


def at_size(curves: pd.DataFrame, profile: str, n_flows: int, variant: str, size: int) -> pd.Series:
    """The curve's row nearest to ``size`` for one profile, flow count and formula variant."""
    sel = curves[
        (curves["profile"] == profile)
        & (curves["n_flows"] == n_flows)
        & (curves["variant"] == variant)
    ]
    return sel.iloc[int(np.argmin(np.abs(sel["size_bytes"].to_numpy() - size)))]
