"""Sim vs real: the simulator's "linux" TCP preset against the kernel's TCP on the emulated path.

The same scenarios run twice: simulated (``latlab.run``, tcp preset
"linux") and emulated (``latlab run --emulate``: the path through
``latlab-net emulate``, the flows by the kernel's Reno or CUBIC through
``latlab-net flows``). The path: 20 Mbit/s, 25 ms each way (50 ms RTT),
a DropTail buffer of 0.25, 1 or 4 BDP (BDP = 20 Mbit/s x 50 ms = 83
packets of 1500 B); 1 or 10 long-lived flows starting together.

Per case it compares total goodput, the flows' mean smoothed RTT, the
bottleneck queue's mean and maximum occupancy, and retransmitted segments
(measured from ``measure_from_s``), and writes docs/validation/sim-vs-linux.md
with the table, every difference over 10 % listed with its numbers, and the
figures (queue over time per case; goodput and RTT side by side).

The section "Why they differ" comes from docs/validation/sim-vs-linux-notes.md
(written from the measured runs; update it when the numbers change). Needs
root and /dev/net/tun (the emulator). Takes about 3 minutes of wall time per
10 s of --duration over the 12 cases.

    python benches/validation/sim_vs_linux.py                # 20 s runs, measured from 5 s
    python benches/validation/sim_vs_linux.py --duration 10 --measure-from 3 --out /tmp/svl
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

import latlab
from latlab.real import tcpmem
from latlab.real.emulated import run_emulated, unavailable_reason
from latlab.results import Results
from latlab.scenario import Scenario

REPO = Path(__file__).resolve().parents[2]
RATE_BPS = 20e6
ONE_WAY_MS = 25
BDP_PKTS = round(RATE_BPS * 2 * ONE_WAY_MS / 1e3 / 8 / 1500)  # 83
BUFFERS_BDP = (0.25, 1.0, 4.0)
FLOW_COUNTS = (1, 10)
CCS = ("newreno", "cubic")
LINK = "client->server"


def scenario(
    cc: str, flows: int, buffer_bdp: float, duration_s: float, measure_from_s: float
) -> Scenario:
    limit = max(2, round(buffer_bdp * BDP_PKTS))
    text = f"""
name = "svl-{cc}-{flows}f-{buffer_bdp:g}bdp"
seed = 1
duration_s = {duration_s}
measure_from_s = {measure_from_s}
sample_interval_ms = 20
tcp = {{ preset = "linux" }}
[topology]
kind = "custom"
nodes = [{{ name = "client" }}, {{ name = "server" }}]
[[topology.links]]
from = "client"
to = "server"
rate_bps = {RATE_BPS}
delay_ms = {ONE_WAY_MS}
queue = {{ kind = "droptail", limit_packets = {limit} }}
[[flows]]
name = "bulk"
src = "client"
dst = "server"
count = {flows}
cc = "{cc}"
"""
    return Scenario.from_toml_str(text, source=f"<sim_vs_linux {cc} {flows} {buffer_bdp}>")


def metrics(r: Results, measure_from_s: float) -> dict[str, float]:
    """Goodput, RTT, queue and retransmissions over the measurement window."""
    t0 = measure_from_s * 1e9
    link_id = int(r.links.set_index("name").loc[LINK, "link_id"])
    q = r.link_samples[(r.link_samples["link_id"] == link_id) & (r.link_samples["time_ns"] >= t0)]
    s = r.flow_samples[r.flow_samples["time_ns"] >= t0]
    g = r.flows["goodput_bps"].astype(float)
    jain = float(g.sum() ** 2 / (len(g) * (g**2).sum())) if (g > 0).any() else float("nan")
    retrans_window = (
        s.groupby("flow_id")["retransmitted_segments"].agg(lambda x: x.max() - x.min()).sum()
        if len(s)
        else float("nan")
    )
    return {
        "goodput_mbps": float(g.sum()) / 1e6,
        "jain": jain,
        "srtt_ms": float(s["srtt_ns"].mean()) / 1e6 if len(s) else float("nan"),
        "queue_mean_pkts": float(q["queue_pkts"].mean()),
        "queue_max_pkts": float(q["queue_pkts"].max()),
        "retrans_pkts": float(retrans_window),
    }


def figure_queues(
    runs: dict[tuple, tuple[Results, Results]], path: Path, measure_from_s: float
) -> None:
    fig = Figure(figsize=(13, 10))
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(CCS) * len(FLOW_COUNTS), len(BUFFERS_BDP), sharex=True, squeeze=False)
    for (cc, n, b), (sim, emu) in runs.items():
        row = CCS.index(cc) * len(FLOW_COUNTS) + FLOW_COUNTS.index(n)
        ax = axes[row][BUFFERS_BDP.index(b)]
        for label, r, style in (("sim", sim, "-"), ("Linux", emu, "-")):
            lid = int(r.links.set_index("name").loc[LINK, "link_id"])
            q = r.link_samples[r.link_samples["link_id"] == lid]
            ax.plot(q["time_ns"] / 1e9, q["queue_pkts"], style, lw=0.8, label=label)
        ax.axhline(max(2, round(b * BDP_PKTS)), color="grey", lw=0.6, ls=":")
        ax.axvline(measure_from_s, color="grey", lw=0.6, ls="--")
        ax.set_title(f"{cc}, {n} flow{'s' if n > 1 else ''}, {b:g} BDP", fontsize=9)
        ax.tick_params(labelsize=7)
    axes[0][0].legend(fontsize=8)
    for ax in axes[-1]:
        ax.set_xlabel("time (s)", fontsize=8)
    for row in axes:
        row[0].set_ylabel("queue (pkts)", fontsize=8)
    fig.suptitle(
        "Bottleneck queue: simulator (linux preset) vs Linux TCP on the emulated path", fontsize=11
    )
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def figure_bars(table: pd.DataFrame, path: Path) -> None:
    fig = Figure(figsize=(12, 4.2))
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 3)
    labels = [
        f"{c[:5]} {n}f {b:g}" for c, n, b in zip(table["cc"], table["flows"], table["buffer_bdp"])
    ]
    x = np.arange(len(table))
    for ax, (col, title) in zip(
        axes,
        (
            ("goodput_mbps", "goodput (Mbit/s)"),
            ("srtt_ms", "mean srtt (ms)"),
            ("queue_mean_pkts", "mean queue (pkts)"),
        ),
    ):
        ax.bar(x - 0.2, table[f"sim_{col}"], 0.4, label="sim")
        ax.bar(x + 0.2, table[f"linux_{col}"], 0.4, label="Linux")
        ax.set_xticks(x, labels, rotation=70, fontsize=7)
        ax.set_title(title, fontsize=10)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def fmt(v: float, digits: int = 1) -> str:
    return "–" if v != v else f"{v:.{digits}f}"


def diff_pct(sim: float, lin: float) -> float:
    return (lin - sim) / sim * 100 if sim else float("nan")


COLUMNS = (
    ("goodput_mbps", "goodput Mbit/s", 2),
    ("srtt_ms", "srtt ms", 1),
    ("queue_mean_pkts", "queue mean pkts", 1),
    ("queue_max_pkts", "queue max pkts", 0),
    ("retrans_pkts", "retrans pkts", 0),
    ("jain", "Jain", 3),
)


def write_report(table: pd.DataFrame, doc: Path, args: argparse.Namespace, info: dict) -> None:
    lines = [
        "# Simulator vs Linux TCP on the emulated path",
        "",
        "Generated by `python benches/validation/sim_vs_linux.py "
        f"--duration {args.duration:g} --measure-from {args.measure_from:g}` "
        f"(kernel {info['kernel']}, {info['when']}). Each case runs in the simulator (tcp preset "
        '"linux") and under `latlab run --emulate` (the kernel\'s TCP between two namespaces, the path '
        "forwarded by `latlab-net emulate` through the same DropTail queue model). Path: 20 Mbit/s, 25 ms "
        f"each way, DropTail of 0.25/1/4 BDP ({BDP_PKTS} packets = 1 BDP); flows start together at 0 s; every "
        f"figure is over [{args.measure_from:g} s, {args.duration:g} s] (queue and srtt from 20 ms samples). "
        "Each cell is `sim / Linux`.",
        "",
        "| cc | flows | buffer (BDP) | " + " | ".join(c[1] for c in COLUMNS) + " |",
        "|---|---|---|" + "---|" * len(COLUMNS),
    ]
    flagged = []
    for _, r in table.iterrows():
        cells = []
        for col, name, digits in COLUMNS:
            s, lin = r[f"sim_{col}"], r[f"linux_{col}"]
            d = diff_pct(s, lin)
            mark = (
                " **!**"
                if col not in ("retrans_pkts", "jain", "queue_max_pkts") and abs(d) > 10
                else ""
            )
            cells.append(f"{fmt(s, digits)} / {fmt(lin, digits)}{mark}")
            if mark:
                flagged.append((r["cc"], r["flows"], r["buffer_bdp"], name, s, lin, d))
        lines.append(
            f"| {r['cc']} | {r['flows']} | {r['buffer_bdp']:g} | " + " | ".join(cells) + " |"
        )
    lines += [
        "",
        "**!** marks a difference over 10 % in goodput, srtt or mean queue "
        "(retransmissions, maximum queue and fairness are shown, not flagged).",
        "",
        "## Differences over 10 %",
        "",
    ]
    if not flagged:
        lines.append("None.")
    for cc, n, b, name, s, lin, d in flagged:
        lines.append(
            f"- {cc}, {n} flow(s), {b:g} BDP: {name} {fmt(s, 2)} (sim) vs {fmt(lin, 2)} (Linux), "
            f"{d:+.0f} %."
        )
    notes = doc.parent / "sim-vs-linux-notes.md"
    if notes.is_file():
        lines += ["", notes.read_text(encoding="utf-8").strip()]
    lines += [
        "",
        "## Figures",
        "",
        "![queue over time](sim-vs-linux-queues.png)",
        "",
        "![goodput, srtt, queue](sim-vs-linux-bars.png)",
        "",
    ]
    doc.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--duration", type=float, default=20.0, help="seconds per run (wall time when emulated)"
    )
    ap.add_argument(
        "--measure-from", type=float, default=5.0, help="start of the measurement window, s"
    )
    ap.add_argument("--out", type=Path, default=Path("out/sim_vs_linux"), help="results folders")
    ap.add_argument("--doc", type=Path, default=REPO / "docs" / "validation" / "sim-vs-linux.md")
    ap.add_argument(
        "--from-table",
        type=Path,
        default=None,
        metavar="CSV",
        help="only rewrite the report from a table.csv of an earlier run (figures are kept)",
    )
    ap.add_argument(
        "--kernel", default=None, help="with --from-table: the kernel release the table came from"
    )
    args = ap.parse_args()
    if args.from_table is not None:
        info = {
            "kernel": args.kernel or "?",
            "when": pd.Timestamp.now(tz="UTC").strftime("%Y-%m-%d"),
        }
        write_report(pd.read_csv(args.from_table), args.doc, args, info)
        print(f"wrote {args.doc}")
        return 0
    reason = unavailable_reason()
    if reason is not None:
        print(f"sim_vs_linux: {reason}", file=sys.stderr)
        return 2
    tcpmem.require_fit("sim_vs_linux")
    print(f"sim_vs_linux: before, {tcpmem.describe()}", flush=True)
    rows, runs = [], {}
    kernel = "?"
    for cc in CCS:
        for n in FLOW_COUNTS:
            for b in BUFFERS_BDP:
                sc = scenario(cc, n, b, args.duration, args.measure_from)
                sim = latlab.run(sc)
                emu = run_emulated(sc, args.out / sc.name, quiet=True)
                kernel = emu.run_info.get("kernel", kernel)
                runs[(cc, n, b)] = (sim, emu)
                row = {"cc": cc, "flows": n, "buffer_bdp": b}
                row.update({f"sim_{k}": v for k, v in metrics(sim, args.measure_from).items()})
                row.update({f"linux_{k}": v for k, v in metrics(emu, args.measure_from).items()})
                rows.append(row)
                print(json.dumps(row), flush=True)
    table = pd.DataFrame(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out / "table.csv", index=False)
    args.doc.parent.mkdir(parents=True, exist_ok=True)
    figure_queues(runs, args.doc.parent / "sim-vs-linux-queues.png", args.measure_from)
    figure_bars(table, args.doc.parent / "sim-vs-linux-bars.png")
    info = {"kernel": kernel, "when": pd.Timestamp.now(tz="UTC").strftime("%Y-%m-%d")}
    write_report(table, args.doc, args, info)
    print(f"sim_vs_linux: after, {tcpmem.describe()}")
    print(f"wrote {args.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
