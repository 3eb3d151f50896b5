"""Human-readable summaries (rich tables) of one run: its headline numbers and its latency."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table

from latlab import latency
from latlab.results import Results


def si(value: float | None, unit: str = "", digits: int = 3) -> str:
    """1234567 -> '1.23 M' + unit; None -> '-'."""
    if value is None:
        return "-"
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.{digits}g} {prefix}{unit}"
    return f"{value:.{digits}g} {unit}".rstrip()


def count(value: Any) -> str:
    return "-" if value is None else f"{int(value):,}"


def summary_table(results: Results, outdir: Path | None = None) -> Table:
    """Headline numbers of one run: flows, goodput, busiest link, drops, speed, conservation."""
    s = results.summary()
    table = Table(
        title=f"{s['name']} (seed {s['seed']}, {s['duration_s']:g} s simulated)",
        show_header=False,
        title_justify="left",
    )
    table.add_column(style="bold")
    table.add_column()
    table.add_row("flows", count(s["flows"]))
    goodput = si(s["mean_goodput_bps"], "bps")
    if s["total_goodput_bps"] is not None:
        goodput += f" per flow (total {si(s['total_goodput_bps'], 'bps')})"
    table.add_row("mean goodput", goodput)
    hist = results.latency_histogram
    for metric, label in latency.METRIC_LABELS.items():
        p = [s.get(f"{metric}_p{q}_ms") for q in latency.PERCENTILES]
        if p[0] is not None:
            rows = hist[hist["metric"] == metric]
            table.add_row(
                f"{label} p50/p95/p99",
                " / ".join(f"{v:.1f}" for v in p)
                + f" ms ({count(rows['count'].sum())} samples of "
                + f"{rows['flow_id'].nunique()} sampled flow{'s' * (rows['flow_id'].nunique() != 1)})",
            )
    if s["busiest_link"] is not None:
        util = s["busiest_link_utilization"]
        util_text = "-" if util is None else f"{100 * util:.1f} %"
        table.add_row("busiest link", f"{s['busiest_link']}: utilisation {util_text}")
    table.add_row("drops", f"{count(s['drops_pkts'])} packets")
    if s.get("marks_pkts") is not None:
        table.add_row("ECN marks", f"{count(s['marks_pkts'])} packets")
    table.add_row("events", count(s["events"]))
    table.add_row("wall time", "-" if s["wall_s"] is None else f"{s['wall_s']:.2f} s")
    table.add_row("events/s", si(s["events_per_s"]))
    table.add_row("conservation", "[green]ok[/]" if s["conservation_ok"] else "[bold red]FAILED[/]")
    if outdir is not None:
        table.add_row("results", str(outdir))
    return table


MAX_FLOW_ROWS = 8


def latency_table(results: Results) -> Table | None:
    """Goodput beside RTT (or one-way delay) p50/p95/p99 per flow, or per group when there are
    more than MAX_FLOW_ROWS sampled flows; None when the run recorded no latency samples."""
    flows = results.flows
    by_flow = results.latency_per_flow()
    if not len(by_flow):
        return None
    per_flow = len(by_flow) <= MAX_FLOW_ROWS
    rows = by_flow if per_flow else results.latency_per_group()
    goodput = flows.set_index("flow_id")["goodput_bps"] if "goodput_bps" in flows else None
    table = Table(
        title="latency per "
        + ("flow" if per_flow else "group")
        + " (measurement window; samples pooled per group)" * (not per_flow),
        title_justify="left",
    )
    table.add_column("flow" if per_flow else "group")
    if not per_flow:
        table.add_column("flows", justify="right")
    table.add_column("goodput" + ("" if per_flow else " per flow"), justify="right")
    table.add_column("delay", justify="left")
    table.add_column("samples", justify="right")
    for q in latency.PERCENTILES:
        table.add_column(f"p{q} ms", justify="right")
    for _, r in rows.iterrows():
        if per_flow:
            first = [f"{r['flow_id']} ({r['group']})" if r["group"] else str(r["flow_id"])]
            g = None if goodput is None else goodput.get(r["flow_id"])
        else:
            first = [str(r["group"]), count(r["flows"])]
            in_group = flows["group"].astype(str) == r["group"] if "group" in flows else None
            g = (
                None
                if goodput is None or in_group is None
                else flows.loc[in_group, "goodput_bps"].mean()
            )
        table.add_row(
            *first,
            si(None if g is None or g != g else float(g), "bps"),
            latency.METRIC_LABELS[r["metric"]],
            count(r["samples"]),
            *(f"{r[f'p{q}_ms']:.1f}" for q in latency.PERCENTILES),
        )
    return table
