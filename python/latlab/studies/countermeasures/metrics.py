"""The study's numbers: each path's compare table, and what the runs' traces say about why.

:func:`gather` reads each path's ``table.csv`` and ``seeds.csv`` (written by
:func:`latlab.compare.run`) into one :class:`StudyData`, and reads from every
scheme's runs alone, at its path's bottleneck link and over the measurement
window (:func:`trace_row`):

* ``util``: the bottleneck's utilisation (the ``links`` table);
* ``queue_empty``: the share of 100 ms samples in which its queue held no packet;
* ``queue_kb``: its mean queue (KB);
* ``bottleneck_drops``: packets it dropped (whole run);
* ``bottleneck_marks``: packets it marked CE (ECN, whole run);
* ``cwnd_kb``: the mean congestion window of the scheme's flows (KB, sampled);
* ``recoveries``: the scheme's flows' loss recoveries, fast recoveries and timeouts
  (whole run); a window cut in answer to an ECN echo is not one (see the marks).

``edge_delay_ms`` is the delay bound d of a scheme's edge pacer (NaN without one).

Means over seeds go into the results table beside compare's numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from latlab.compare import translate
from latlab.compare.runner import SEEDS_CSV, TABLE_CSV
from latlab.studies.countermeasures.cases import PathCase

TRACE_COLUMNS = (
    "util",
    "queue_empty",
    "queue_kb",
    "bottleneck_drops",
    "bottleneck_marks",
    "cwnd_kb",
    "recoveries",
)
RESULTS_CSV = "results.csv"
SEEDS_ALL_CSV = "seeds.csv"


@dataclass
class StudyData:
    """Every path's results: one row per (path, scheme), one per (path, scheme, seed)."""

    results: pd.DataFrame
    seeds: pd.DataFrame
    #: Per path: title, about, seeds, flows, duration_s, measure_from_s (as run).
    paths: dict[str, dict[str, Any]]


def trace_row(results: Any, link: str, measure_from_ns: int) -> dict[str, float]:
    """The bottleneck's utilisation, queue and drops, and the scheme's mean cwnd, from one run alone."""
    links = results.links
    row = links[links["name"].astype(str) == link]
    if not len(row):
        raise ValueError(
            f"bottleneck_link: no link named {link!r} in the run; its links are "
            + ", ".join(links["name"].astype(str))
        )
    link_id = int(row["link_id"].iloc[0])
    ls = results.link_samples
    ls = ls[(ls["link_id"].astype(int) == link_id) & (ls["time_ns"] >= measure_from_ns)]
    fs = results.flow_samples
    flows = results.flows
    own = flows[flows["group"].astype(str) == translate.SCHEME_GROUP]
    ids = set(own["flow_id"].astype(int))
    fs = fs[fs["flow_id"].astype(int).isin(ids) & (fs["time_ns"] >= measure_from_ns)]
    cwnd = pd.to_numeric(fs["cwnd_bytes"], errors="coerce").dropna()
    return {
        "util": float(row["utilization"].iloc[0]),
        "queue_empty": float((ls["queue_pkts"] == 0).mean()) if len(ls) else float("nan"),
        "queue_kb": float(ls["queue_bytes"].mean() / 1e3) if len(ls) else float("nan"),
        "bottleneck_drops": float(row["drops_pkts"].iloc[0]),
        "bottleneck_marks": float(row["marks_pkts"].iloc[0]) if "marks_pkts" in row else 0.0,
        "cwnd_kb": float(cwnd.mean() / 1e3) if len(cwnd) else float("nan"),
        "recoveries": float(
            pd.to_numeric(own["fast_recoveries"], errors="coerce").fillna(0).sum()
            + pd.to_numeric(own["timeouts"], errors="coerce").fillna(0).sum()
        ),
    }


def _path_frames(case: PathCase, outdir: Path, quick: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    from latlab.compare.runner import shortened
    from latlab.sweep.store import load_run

    spec = shortened(case.spec) if quick else case.spec
    folder = outdir / case.name
    table = pd.read_csv(folder / TABLE_CSV)
    seeds = pd.read_csv(folder / SEEDS_CSV)
    names = [s.name for s in spec.schemes]
    table = table[table["scheme"].isin(names)]
    seeds = seeds[seeds["scheme"].isin(names) & seeds["seed"].isin(spec.seeds)]
    start_ns = int(round(spec.measure_from_s * 1e9))
    traces = [
        trace_row(load_run(folder, rid), case.bottleneck_link, start_ns)
        for rid in seeds["alone_run"]
    ]
    seeds = pd.concat(
        [seeds.reset_index(drop=True), pd.DataFrame(traces, columns=list(TRACE_COLUMNS))], axis=1
    )
    means = seeds.groupby("scheme", sort=False)[list(TRACE_COLUMNS)].mean().reset_index()
    table = table.merge(means, on="scheme", how="left")
    for frame in (table, seeds):
        frame.insert(0, "path", case.name)
    table.insert(2, "role", table["scheme"].map(case.roles))
    pacer = {s.name: (s.edge_queue or {}).get("delay_ms") for s in spec.schemes}
    table["edge_delay_ms"] = pd.to_numeric(table["scheme"].map(pacer), errors="coerce")
    return table, seeds


def gather(paths: list[PathCase], outdir: Path, quick: bool) -> StudyData:
    """The results of every path run into ``outdir`` (by :func:`latlab.compare.run`)."""
    from latlab.compare.runner import shortened

    tables, seeds, info = [], [], {}
    for case in paths:
        t, s = _path_frames(case, Path(outdir), quick)
        tables.append(t)
        seeds.append(s)
        spec = shortened(case.spec) if quick else case.spec
        info[case.name] = {
            "title": case.title,
            "about": case.about,
            "seeds": list(spec.seeds),
            "flows": spec.flows,
            "duration_s": spec.duration_s,
            "measure_from_s": spec.measure_from_s,
            "bottleneck_link": case.bottleneck_link,
        }
    return StudyData(
        pd.concat(tables, ignore_index=True),
        pd.concat(seeds, ignore_index=True),
        info,
    )


def write(data: StudyData, outdir: Path) -> None:
    from latlab._atomic import write_text

    write_text(Path(outdir) / RESULTS_CSV, data.results.to_csv(index=False))
    write_text(Path(outdir) / SEEDS_ALL_CSV, data.seeds.to_csv(index=False))
