"""The RTT a new flow sees while a background flow loads the link, from latlab's own simulator.

The study measured the handshake RTT of new flows while one long background
flow ran (3.5G: shifted right and widened by a bloated per-user buffer; 4G:
barely changed) but printed no numbers. latlab obtains that distribution by
simulation:

* a cellular-like per-user bottleneck: one link ``srv -> ue`` of rate C
  (the profile's capacity rule) and one-way delay R_O/2 (R_O drawn from the
  profile's unloaded RTT), with a DropTail buffer of the profile's
  ``[bottleneck] buffer_bytes`` (the buffer assumption is documented in each
  profile file and in the efficiency report);
* one long-lived CUBIC background flow (Linux preset: delayed ACKs, SACK)
  from time 0;
* probe flows of one segment (1448 bytes, delayed ACK off) starting at
  uniformly random times after a warm-up, each measuring one handshake RTT.

Runs are stratified: run j of n uses the (j + ½)/n quantile of the capacity
(when the profile samples C) and a shuffled stratum of the unloaded RTT.

The handshake RTT of a probe is read from the flows table's
``handshake_rtt_ns`` column when the core provides it. Otherwise it is
recovered exactly from two columns every core has: a one-segment probe
completes (``fct_ns``) one handshake RTT r1 plus one data RTT r2 after its
SYN, and its smoothed RTT (``srtt_ns``) is RFC 6298's ``(7·r1 + r2)/8``
after those two samples (timestamps on, so both are exact), hence
``r1 = (8·srtt − fct)/6``. Probes that lost a packet, hit a timeout, or took
longer than the initial RTO of 1 s (a SYN retransmission cannot be told
apart) are left out and counted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from latlab.models.profiles import PercentileDistribution, Profile, ProfileError

PROBE_BYTES = 1448
PROBE_GROUP = "probe"
BACKGROUND_GROUP = "background"
INITIAL_RTO_S = 1.0
#: Percentile levels stored in a loaded-RTT profile file.
LEVELS = (
    0.5,
    1,
    2.5,
    5,
    10,
    15,
    20,
    25,
    30,
    35,
    40,
    45,
    50,
    55,
    60,
    65,
    70,
    75,
    80,
    85,
    90,
    95,
    97.5,
    99,
    99.5,
)


@dataclass(frozen=True)
class LoadedRun:
    """One simulated bottleneck: capacity, base RTT, buffer, and how long and how many probes."""

    capacity_bps: float
    base_rtt_s: float
    buffer_bytes: int
    seed: int
    probes: int = 400
    duration_s: float = 70.0
    warmup_s: float = 10.0
    cc: str = "cubic"


def plan(
    profile: Profile,
    runs: int,
    seed: int = 1,
    probes: int = 400,
    duration_s: float = 70.0,
    warmup_s: float = 10.0,
    buffer_bytes: int | None = None,
) -> list[LoadedRun]:
    """``runs`` stratified bottlenecks for ``profile`` (see the module docstring)."""
    buffer = buffer_bytes if buffer_bytes is not None else profile.buffer_bytes
    if buffer is None:
        raise ProfileError(
            f"profile {profile.name} names no per-user buffer ([bottleneck] buffer_bytes)"
        )
    if runs < 1:
        raise ValueError(f"runs must be >= 1, got {runs}")
    rng = np.random.default_rng(seed)
    strata = (np.arange(runs) + 0.5) / runs
    if profile.capacity == "sampled":
        caps = profile.throughput_kbps.quantile(strata) * 1e3
    else:
        caps = np.full(
            runs, float(profile.throughput_kbps.quantile(float(profile.capacity))[0]) * 1e3
        )
    rtts = profile.rtt_ms.quantile(rng.permutation(strata)) / 1e3
    return [
        LoadedRun(
            capacity_bps=float(c),
            base_rtt_s=float(r),
            buffer_bytes=int(buffer),
            seed=seed * 1000 + j,
            probes=probes,
            duration_s=duration_s,
            warmup_s=warmup_s,
        )
        for j, (c, r) in enumerate(zip(caps, rtts))
    ]


def scenario(run: LoadedRun) -> dict[str, Any]:
    """The scenario of one run, as a dict for :func:`latlab.run`."""
    last_start = run.duration_s - 2.0 * INITIAL_RTO_S
    if last_start <= run.warmup_s:
        raise ValueError(
            f"duration {run.duration_s} s leaves no time for probes after the {run.warmup_s} s warm-up"
        )
    return {
        "name": "loaded-rtt",
        "seed": int(run.seed),
        "duration_s": float(run.duration_s),
        "sample_interval_ms": 0,
        "tcp": {"preset": "linux"},
        "topology": {
            "kind": "custom",
            "nodes": [{"name": "srv"}, {"name": "ue"}],
            "links": [
                {
                    "from": "srv",
                    "to": "ue",
                    "rate_bps": float(run.capacity_bps),
                    "delay_ms": run.base_rtt_s * 1e3 / 2,
                    "queue": {"kind": "droptail", "limit_bytes": int(run.buffer_bytes)},
                }
            ],
        },
        "flows": [
            {"name": BACKGROUND_GROUP, "src": "srv", "dst": "ue", "cc": run.cc, "start_s": 0.0},
            {
                "name": PROBE_GROUP,
                "count": int(run.probes),
                "src": "srv",
                "dst": "ue",
                "cc": "newreno",
                "size_bytes": PROBE_BYTES,
                "start_s": {"uniform": [float(run.warmup_s), float(last_start)]},
                "tcp": {"delayed_ack": False},
            },
        ],
    }


def probe_rtts(flows: pd.DataFrame, base_rtt_s: float) -> tuple[NDArray[np.float64], int, str]:
    """Handshake RTTs (s) of the probes in a run's flows table, the number left out, and the method used."""
    probes = flows[flows["group"] == PROBE_GROUP]
    if not len(probes):
        return np.empty(0), 0, "none"
    if "handshake_rtt_ns" in probes.columns:
        hs = (
            pd.to_numeric(probes["handshake_rtt_ns"], errors="coerce").astype(float).to_numpy()
            / 1e9
        )
        ok = np.isfinite(hs) & (hs > 0)
        return hs[ok], int((~ok).sum()), "handshake_rtt_ns"
    fct = pd.to_numeric(probes["fct_ns"], errors="coerce").astype(float).to_numpy() / 1e9
    srtt = pd.to_numeric(probes["srtt_ns"], errors="coerce").astype(float).to_numpy() / 1e9
    r1 = (8.0 * srtt - fct) / 6.0  # RFC 6298 after two samples: srtt = (7·r1 + r2)/8, fct = r1 + r2
    r2 = fct - r1
    clean = (probes["retransmitted_segments"].to_numpy() == 0) & (
        probes["timeouts"].to_numpy() == 0
    )
    floor = 0.999 * base_rtt_s
    ok = clean & np.isfinite(fct) & (fct < INITIAL_RTO_S) & (r1 >= floor) & (r2 >= floor)
    return r1[ok], int((~ok).sum()), "rfc6298-inversion"


def simulate(
    runs: Sequence[LoadedRun],
    run_many: Callable[[list[dict[str, Any]]], list[pd.DataFrame]] | None = None,
) -> tuple[NDArray[np.float64], pd.DataFrame]:
    """Run every bottleneck and pool the probes' handshake RTTs (s); also a per-run summary table.

    ``run_many`` maps scenario dicts to their flows tables (default: one
    after another in this process); the efficiency study passes a parallel one.
    """
    scenarios = [scenario(r) for r in runs]
    if run_many is None:
        import latlab

        tables = [latlab.run(sc).flows for sc in scenarios]
    else:
        tables = run_many(scenarios)
    pooled, rows = [], []
    for run, flows in zip(runs, tables):
        rtts, excluded, method = probe_rtts(flows, run.base_rtt_s)
        pooled.append(rtts)
        bg = flows[flows["group"] == BACKGROUND_GROUP]
        rows.append(
            {
                **asdict(run),
                "samples": rtts.size,
                "excluded": excluded,
                "method": method,
                "rtt_p50_ms": float(np.median(rtts) * 1e3) if rtts.size else np.nan,
                "background_goodput_bps": float(bg["goodput_bps"].iloc[0]) if len(bg) else np.nan,
            }
        )
    return np.concatenate(pooled) if pooled else np.empty(0), pd.DataFrame(rows)


def distribution(samples_s: NDArray[np.float64]) -> PercentileDistribution:
    """The pooled samples as a percentile distribution (ms) at :data:`LEVELS`."""
    if samples_s.size < 2:
        raise ValueError(f"too few loaded-RTT samples ({samples_s.size}) for a distribution")
    values = np.maximum.accumulate(np.percentile(samples_s * 1e3, LEVELS))
    return PercentileDistribution(LEVELS, tuple(float(f"{v:.4f}") for v in values))


def variant_toml(profile: Profile, samples_s: NDArray[np.float64], summary: pd.DataFrame) -> str:
    """The ``<profile>-loaded.toml`` file: the loaded-RTT distribution and how it was simulated."""
    dist = distribution(samples_s)
    first = summary.iloc[0]
    lines = [
        f"# Loaded handshake RTT for profile {profile.name}: the RTT a new flow sees while one",
        "# long CUBIC flow loads the per-user bottleneck. Simulated by latlab",
        "# (latlab.models.loaded_rtt, run by `latlab reproduce efficiency`); regenerate rather than edit.",
        f'profile = "{profile.name}"',
        "background_flows = 1",
        "",
        "[loaded_rtt_ms]",
        "percentiles = [" + ", ".join(f"{p:g}" for p in dist.percentiles) + "]",
        "values = [" + ", ".join(f"{v:g}" for v in dist.values) + "]",
        "",
        "[simulation]",
        "background_flows = 1",
        f"runs = {len(summary)}",
        f"samples = {int(samples_s.size)}",
        f"excluded_probes = {int(summary['excluded'].sum())}",
        f"buffer_bytes = {int(first['buffer_bytes'])}",
        "capacity_bps = [" + ", ".join(f"{c:.6g}" for c in summary["capacity_bps"]) + "]",
        "base_rtt_ms = [" + ", ".join(f"{r * 1e3:.4g}" for r in summary["base_rtt_s"]) + "]",
        f'background_cc = "{first["cc"]}"',
        f"probes_per_run = {int(first['probes'])}",
        f"duration_s = {float(first['duration_s']):g}",
        f"warmup_s = {float(first['warmup_s']):g}",
        f'method = "{first["method"]}"',
        "",
    ]
    return "\n".join(lines)
