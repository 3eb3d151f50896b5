"""The numbers of a comparison, from the runs' own result tables.

Per scheme and seed (:func:`seed_row`):

* ``goodput_bps``: the sum of the goodput of the scheme's flows in its run
  alone (the ``flows`` table's ``goodput_bps``: bytes delivered in the
  measurement window);
* ``rtt_p50_ms`` ... ``rtt_p99_ms``: percentiles of every RTT sample of the
  scheme's flows in that run (:mod:`latlab.latency`, within 3.1 %);
* ``drops_pkts``: packets dropped on all links of that run (the ``links``
  table, over the whole run);
* ``share``: the scheme's flow's goodput over the sum of its and the CUBIC
  flow's, in the run against CUBIC.

Per scheme (:func:`scheme_table`): the mean, min and max over seeds of
goodput, drops and share; the RTT percentiles of the samples of every seed
pooled.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from latlab import latency
from latlab.compare.translate import COMPETITOR_GROUP, SCHEME_GROUP
from latlab.results import Results

METRIC = "rtt"
PERCENTILES = latency.PERCENTILES


def group_flows(results: Results, group: str) -> pd.DataFrame:
    flows = results.flows
    return flows[flows["group"].astype(str) == group]


def group_histogram(results: Results, group: str, metric: str = METRIC) -> pd.DataFrame:
    """The latency histogram rows of one flow group's flows."""
    hist = results.latency_histogram
    ids = set(group_flows(results, group)["flow_id"].astype(int))
    if not len(hist):
        return hist
    return hist[hist["flow_id"].astype(int).isin(ids) & (hist["metric"] == metric)]


def goodput_bps(results: Results, group: str) -> float:
    return float(group_flows(results, group)["goodput_bps"].astype(float).sum())


def seed_row(alone: Results, vs_cubic: Results) -> dict[str, float | None]:
    """One scheme's numbers at one seed, from its two runs."""
    p = latency.percentiles_ms(group_histogram(alone, SCHEME_GROUP))
    own = goodput_bps(vs_cubic, SCHEME_GROUP)
    total = own + goodput_bps(vs_cubic, COMPETITOR_GROUP)
    links = alone.links
    return {
        "goodput_bps": goodput_bps(alone, SCHEME_GROUP),
        **{f"{METRIC}_p{q}_ms": p[q] for q in PERCENTILES},
        "drops_pkts": float(links["drops_pkts"].astype(float).sum()) if len(links) else 0.0,
        "vs_cubic_goodput_bps": own,
        "cubic_goodput_bps": total - own,
        "share": own / total if total > 0 else None,
    }


def scheme_table(seeds: pd.DataFrame, histograms: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per scheme (in the order of ``seeds``) from the per-seed rows and each
    scheme's latency histogram rows of all its seeds."""
    rows = []
    for scheme, g in seeds.groupby("scheme", sort=False):
        pooled = latency.percentiles_ms(histograms.get(scheme, pd.DataFrame()))
        row = {"scheme": scheme, "seeds": len(g)}
        row.update(_spread(g["goodput_bps"], "goodput", "_bps"))
        row.update({f"{METRIC}_p{q}_ms": pooled[q] for q in PERCENTILES})
        row.update(_spread(g["drops_pkts"], "drops", "_pkts"))
        row.update(_spread(g["share"], "share", ""))
        rows.append(row)
    return pd.DataFrame(rows)


def _spread(values: pd.Series, name: str, unit: str) -> dict[str, float | None]:
    v = pd.to_numeric(values, errors="coerce").dropna()
    if not len(v):
        return {f"{name}_{s}{unit}": None for s in ("mean", "min", "max")}
    return {
        f"{name}_mean{unit}": float(v.mean()),
        f"{name}_min{unit}": float(v.min()),
        f"{name}_max{unit}": float(v.max()),
    }


def pooled_histogram(parts: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Histogram rows of several runs in one frame (percentiles pool equal buckets)."""
    parts = [p for p in parts if len(p)]
    if not parts:
        return pd.DataFrame(columns=["flow_id", "metric", "low_ns", "high_ns", "count"])
    return pd.concat(parts, ignore_index=True)
