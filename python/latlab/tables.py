"""Human-readable summary (a rich table) of one run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table

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
    if s["busiest_link"] is not None:
        util = s["busiest_link_utilization"]
        util_text = "-" if util is None else f"{100 * util:.1f} %"
        table.add_row("busiest link", f"{s['busiest_link']}: utilisation {util_text}")
    table.add_row("drops", f"{count(s['drops_pkts'])} packets")
    table.add_row("events", count(s["events"]))
    table.add_row("wall time", "-" if s["wall_s"] is None else f"{s['wall_s']:.2f} s")
    table.add_row("events/s", si(s["events_per_s"]))
    table.add_row("conservation", "[green]ok[/]" if s["conservation_ok"] else "[bold red]FAILED[/]")
    if outdir is not None:
        table.add_row("results", str(outdir))
    return table
