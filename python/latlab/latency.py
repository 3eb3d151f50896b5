"""Latency percentiles of a run: each flow's RTT (TCP, MPTCP) or one-way delay (UDP, TFRC/DFlow).

The core counts every latency sample of every sampled flow in the
measurement window into the ``latency_histogram`` table: for TCP each RTT
measurement the sender's RFC 6298 estimator takes (per ACK of new data
with RFC 7323 timestamps, else Karn's one timed segment per round trip),
before any smoothing; for UDP and TFRC/DFlow each data packet's one-way
delay. Buckets are log-linear (128 per power of two), so a percentile read
from them is within 0.78 % of the exact sample percentile. A percentile is
the nearest-rank one (the smallest sample with at least q % of the samples
at or below it), reported as the middle of its bucket.

An emulated run (``latlab run --emulate``) sees real Linux sockets, whose
per-ACK RTT samples the kernel does not expose: its histogram holds the
kernel's smoothed RTT (``tcpi_rtt``) read every sample interval, as metric
``srtt``, each value in a bucket of its own (exact). A percentile of srtt
is not one of RTT: smoothing narrows the distribution, so its p99 is at
most the RTT samples' p99 over the same time.

Pooling several flows pools their samples: a flow that took more samples
weighs more, as in "the RTT an ACK saw".
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

PERCENTILES = (50, 95, 99)
METRIC_LABELS = {
    "rtt": "RTT",
    "owd": "one-way delay",
    "srtt": "smoothed RTT (kernel srtt, sampled)",
}


def exact_histogram(samples: pd.DataFrame, metric: str, value_column: str) -> pd.DataFrame:
    """A ``latency_histogram`` table from raw samples (flow_id, ``value_column`` in ns), one bucket
    [v, v + 1) per distinct value, so its percentiles are the exact sample ones. Zero values (no
    sample yet) are left out."""
    columns = ["flow_id", "metric", "low_ns", "high_ns", "count"]
    values = samples[samples[value_column] > 0] if len(samples) else samples
    if not len(values):
        return pd.DataFrame(columns=columns)
    counts = (
        values.assign(low_ns=values[value_column].astype("int64"))
        .groupby(["flow_id", "low_ns"], sort=True)
        .size()
        .reset_index(name="count")
    )
    counts["metric"] = metric
    counts["high_ns"] = counts["low_ns"] + 1
    counts["flow_id"] = counts["flow_id"].astype("int64")
    return counts[columns].astype({"low_ns": "int64", "high_ns": "int64", "count": "int64"})


def percentiles_ms(
    hist: pd.DataFrame, qs: Sequence[float] = PERCENTILES
) -> dict[float, float | None]:
    """Nearest-rank percentiles (ms) of the samples in histogram rows (low_ns, high_ns, count).

    Rows of several flows may be mixed: equal buckets are pooled. None for
    each q when there are no samples.
    """
    if not len(hist):
        return dict.fromkeys(qs)
    pooled = hist.groupby(["low_ns", "high_ns"], sort=True)["count"].sum()
    counts = pooled.to_numpy(dtype="float64")
    cumulative = np.cumsum(counts)
    total = cumulative[-1]
    if total <= 0:
        return dict.fromkeys(qs)
    lows = pooled.index.get_level_values("low_ns").to_numpy(dtype="float64")
    highs = pooled.index.get_level_values("high_ns").to_numpy(dtype="float64")
    out: dict[float, float | None] = {}
    for q in qs:
        rank = max(1, math.ceil(q / 100 * total))
        i = int(np.searchsorted(cumulative, rank))
        out[q] = float(lows[i] + highs[i]) / 2 / 1e6
    return out


def per_flow(hist: pd.DataFrame, flows: pd.DataFrame) -> pd.DataFrame:
    """One row per flow with samples: flow_id, group, metric, samples, p50_ms, p95_ms, p99_ms."""
    columns = ["flow_id", "group", "metric", "samples", *(f"p{q}_ms" for q in PERCENTILES)]
    if not len(hist):
        return pd.DataFrame(columns=columns)
    group_of = (
        dict(zip(flows["flow_id"].astype(int), flows["group"].astype(str)))
        if {"flow_id", "group"} <= set(flows.columns)
        else {}
    )
    rows = []
    for (flow_id, metric), h in hist.groupby(["flow_id", "metric"], sort=True):
        p = percentiles_ms(h)
        rows.append(
            [int(flow_id), group_of.get(int(flow_id), ""), str(metric), int(h["count"].sum())]
            + [p[q] for q in PERCENTILES]
        )
    return pd.DataFrame(rows, columns=columns)


def per_group(hist: pd.DataFrame, flows: pd.DataFrame) -> pd.DataFrame:
    """One row per flow group and metric: group, metric, flows, samples, p50_ms, p95_ms, p99_ms
    (samples pooled over the group's sampled flows), in the groups' order in ``flows``."""
    columns = ["group", "metric", "flows", "samples", *(f"p{q}_ms" for q in PERCENTILES)]
    if not len(hist):
        return pd.DataFrame(columns=columns)
    group_of = (
        dict(zip(flows["flow_id"].astype(int), flows["group"].astype(str)))
        if {"flow_id", "group"} <= set(flows.columns)
        else {}
    )
    groups = [group_of.get(int(f), "") for f in hist["flow_id"]]
    tagged = hist.assign(group=groups)
    rows = []
    for group in dict.fromkeys([*group_of.values(), *groups]):
        for metric in METRIC_LABELS:
            h = tagged[(tagged["group"] == group) & (tagged["metric"] == metric)]
            if not len(h):
                continue
            p = percentiles_ms(h)
            rows.append(
                [group, metric, h["flow_id"].nunique(), int(h["count"].sum())]
                + [p[q] for q in PERCENTILES]
            )
    return pd.DataFrame(rows, columns=columns)


def run_percentiles(hist: pd.DataFrame) -> dict[str, float | None]:
    """The run's pooled percentiles: rtt_p50_ms ... rtt_p99_ms, owd_p50_ms ... owd_p99_ms (None without
    samples), and srtt_p50_ms ... only for an emulated run, which has them instead of RTT samples."""
    out: dict[str, float | None] = {}
    for metric in METRIC_LABELS:
        rows = hist[hist["metric"] == metric] if len(hist) else hist
        if metric == "srtt" and not len(rows):
            continue
        p = percentiles_ms(rows)
        for q in PERCENTILES:
            out[f"{metric}_p{q}_ms"] = p[q]
    return out
