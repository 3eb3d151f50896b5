"""Sim vs real: the simulator's "linux" TCP preset against the kernel's TCP on the emulated path.

The same scenarios run twice: simulated (``latlab.run``, tcp preset
"linux") and emulated (``latlab run --emulate``: the path through
``latlab-net emulate``, the flows by the kernel's Reno, CUBIC or BBR
through ``latlab-net flows``). The path: 20 Mbit/s, 25 ms each way (50 ms
RTT), a DropTail buffer of 0.25, 1 or 4 BDP (BDP = 20 Mbit/s x 50 ms = 83
packets of 1500 B); 1 or 10 long-lived flows starting together. BBR also
runs one flow over an LTE-like path: the forward rate replays the shipped
trace ``lte-variable`` (ACKs return at 20 Mbit/s), same delay, 1-BDP
DropTail.

Per case it compares total goodput, the flows' mean smoothed RTT, the
bottleneck queue's mean and maximum occupancy, retransmitted segments
(measured from ``measure_from_s``) and Jain's fairness, records the
machine's load and TCP memory during each Linux run (latlab.real.hostload),
and writes docs/validation/sim-vs-linux.md with the table, every flagged
difference (over 10 % in goodput, 15 % in srtt or mean queue) and the
figures. ``--cc`` runs some controllers only: the others' rows are kept
from the measured table (docs/validation/sim-vs-linux-table.csv), and the
page says which commit and kernel produced which rows. Each case's
simulated and emulated results are written under ``--out`` for the
explanations (flow samples, TCP_INFO samples, the emulator's queue).

The section "Why they differ" comes from docs/validation/sim-vs-linux-notes.md
(written from the measured runs; update it when the numbers change). Needs
root and /dev/net/tun (the emulator). Takes about 3 minutes of wall time per
10 s of --duration over the 12 Reno/CUBIC cases, 1.5 over BBR's 7.

    python benches/validation/sim_vs_linux.py                # 20 s runs, measured from 5 s
    python benches/validation/sim_vs_linux.py --duration 15 --measure-from 4 --cc bbr --realtime 10
    python benches/validation/sim_vs_linux.py --from-table   # only re-render the page
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

import latlab
from latlab.real import tcpmem
from latlab.real.emulated import run_emulated, unavailable_reason
from latlab.real.hostload import RunWatch
from latlab.results import Results
from latlab.scenario import Scenario

REPO = Path(__file__).resolve().parents[2]
RATE_BPS = 20e6
ONE_WAY_MS = 25
BDP_PKTS = round(RATE_BPS * 2 * ONE_WAY_MS / 1e3 / 8 / 1500)  # 83
BUFFERS_BDP = (0.25, 1.0, 4.0)
FLOW_COUNTS = (1, 10)
CCS = ("newreno", "cubic", "bbr")
LINK = "client->server"
#: The wireless case: the forward link's rate replays this shipped Mahimahi trace (LTE-like,
#: 2-40 Mbit/s fading over seconds, mean 11.8 Mbit/s), one flow, a 1-BDP (83-packet) DropTail.
TRACE = "lte-variable"
TRACE_FILE = REPO / "python" / "latlab" / "data" / "traces" / f"{TRACE}.trace"
TRACE_CASE = (1, 1.0)
#: Which controllers also run the trace case.
TRACE_CCS = ("bbr",)


def cases(ccs: tuple[str, ...]) -> list[tuple[str, int, float, str]]:
    """(cc, flows, buffer_bdp, path) of every case for these controllers, in table order."""
    out = [(cc, n, b, "droptail") for cc in ccs for n in FLOW_COUNTS for b in BUFFERS_BDP]
    out += [(cc, *TRACE_CASE, TRACE) for cc in ccs if cc in TRACE_CCS]
    return out


def _rate_line(path: str) -> str:
    """The forward link's rate: fixed, or the trace (ACKs return at the fixed rate)."""
    if path == "droptail":
        return f"rate_bps = {RATE_BPS}"
    return f'rate = {{ trace = "{TRACE_FILE}" }}\nreverse_rate_bps = {RATE_BPS}'


def scenario(
    cc: str,
    flows: int,
    buffer_bdp: float,
    duration_s: float,
    measure_from_s: float,
    path: str = "droptail",
) -> Scenario:
    limit = max(2, round(buffer_bdp * BDP_PKTS))
    tag = "" if path == "droptail" else f"-{path}"
    text = f"""
name = "svl-{cc}-{flows}f-{buffer_bdp:g}bdp{tag}"
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
{_rate_line(path)}
delay_ms = {ONE_WAY_MS}
queue = {{ kind = "droptail", limit_packets = {limit} }}
[[flows]]
name = "bulk"
src = "client"
dst = "server"
count = {flows}
cc = "{cc}"
"""
    return Scenario.from_toml_str(text, source=f"<sim_vs_linux {cc} {flows} {buffer_bdp} {path}>")


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


def queue_figure_name(ccs: tuple[str, ...]) -> str:
    """The queue figure of a run of these controllers (the whole grid keeps the plain name)."""
    return (
        "sim-vs-linux-queues.png"
        if set(ccs) == set(CCS)
        else f"sim-vs-linux-queues-{'-'.join(ccs)}.png"
    )


def figure_queues(
    runs: dict[tuple, tuple[Results, Results]], path: Path, measure_from_s: float
) -> None:
    """Queue over time, one panel per case: rows (cc, flows), columns the paths."""
    rows = sorted({(cc, n) for cc, n, _, _ in runs}, key=lambda k: (CCS.index(k[0]), k[1]))
    cols = [("droptail", b) for b in BUFFERS_BDP]
    if any(p != "droptail" for *_, p in runs):
        cols.append((TRACE, TRACE_CASE[1]))
    fig = Figure(figsize=(3.3 * len(cols) + 1, 2.2 * len(rows) + 1))
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(rows), len(cols), sharex=True, squeeze=False)
    for ax in axes.flat:
        ax.set_visible(False)
    for (cc, n, b, path_kind), (sim, emu) in runs.items():
        ax = axes[rows.index((cc, n))][cols.index((path_kind, b))]
        ax.set_visible(True)
        for label, r in (("sim", sim), ("Linux", emu)):
            lid = int(r.links.set_index("name").loc[LINK, "link_id"])
            q = r.link_samples[r.link_samples["link_id"] == lid]
            ax.plot(q["time_ns"] / 1e9, q["queue_pkts"], lw=0.8, label=label)
        ax.axhline(max(2, round(b * BDP_PKTS)), color="grey", lw=0.6, ls=":")
        ax.axvline(measure_from_s, color="grey", lw=0.6, ls="--")
        where = f"{b:g} BDP" + ("" if path_kind == "droptail" else f", {path_kind}")
        ax.set_title(f"{cc}, {n} flow{'s' if n > 1 else ''}, {where}", fontsize=9)
        ax.tick_params(labelsize=7)
        ax.set_xlabel("time (s)", fontsize=8)
        ax.set_ylabel("queue (pkts)", fontsize=8)
        ax.legend(fontsize=7)
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
        f"{c[:5]} {n}f {b:g}" + ("" if p == "droptail" else " lte")
        for c, n, b, p in zip(table["cc"], table["flows"], table["buffer_bdp"], table["path"])
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


#: A difference over this many percent is flagged (and must be explained in the notes).
FLAG_PCT = {"goodput_mbps": 10.0, "srtt_ms": 15.0, "queue_mean_pkts": 15.0}


def path_cell(r: pd.Series) -> str:
    return (
        f"{r['buffer_bdp']:g}" if r["path"] == "droptail" else f"{r['path']}, {r['buffer_bdp']:g}"
    )


def host_cell(r: pd.Series) -> str:
    load = r.get("load_max_1m")
    if load is None or load != load:
        return "–"
    return f"{load:.1f}" + (" **TCP memory pressure**" if bool(r.get("tcp_mem_pressure")) else "")


def provenance(table: pd.DataFrame) -> list[str]:
    """One line per (commit, kernel): which rows it produced."""
    lines = []
    for (commit, kernel), g in table.groupby(["commit", "kernel"], sort=False):
        ccs = ", ".join(dict.fromkeys(g["cc"]))
        lines.append(f"- {ccs} ({len(g)} rows): commit {commit}, kernel {kernel}.")
    return lines


def write_report(table: pd.DataFrame, doc: Path, args: argparse.Namespace) -> None:
    lines = [
        "# Simulator vs Linux TCP on the emulated path",
        "",
        "Generated by `python benches/validation/sim_vs_linux.py "
        f"--duration {args.duration:g} --measure-from {args.measure_from:g}` (run per controller "
        "with `--cc`). Each case runs in the simulator (tcp preset "
        '"linux") and under `latlab run --emulate` (the kernel\'s TCP between two namespaces, the path '
        "forwarded by `latlab-net emulate` through the same DropTail queue model). Path: 20 Mbit/s, 25 ms "
        f"each way, DropTail of 0.25/1/4 BDP ({BDP_PKTS} packets = 1 BDP); the `{TRACE}` row replaces the "
        f"forward rate by the shipped Mahimahi trace `{TRACE}` (LTE-like, 2–40 Mbit/s, mean 11.8 Mbit/s; "
        "ACKs return at 20 Mbit/s) with the same delay and a 1-BDP DropTail. Flows start together at 0 s; "
        f"every figure is over [{args.measure_from:g} s, {args.duration:g} s] (queue and srtt from 20 ms "
        "samples). Each cell is `sim / Linux`; the last column is the machine's largest 1-minute load "
        "average during the Linux run (recorded from the BBR rows on; – where the run did not record it).",
        "",
        "The rows come from these runs:",
        "",
        *provenance(table),
        "",
        "| cc | flows | buffer (BDP) | " + " | ".join(c[1] for c in COLUMNS) + " | host load |",
        "|---|---|---|" + "---|" * (len(COLUMNS) + 1),
    ]
    flagged = []
    for _, r in table.iterrows():
        cells = []
        for col, name, digits in COLUMNS:
            s, lin = r[f"sim_{col}"], r[f"linux_{col}"]
            d = diff_pct(s, lin)
            mark = " **!**" if col in FLAG_PCT and abs(d) > FLAG_PCT[col] else ""
            cells.append(f"{fmt(s, digits)} / {fmt(lin, digits)}{mark}")
            if mark:
                flagged.append((r["cc"], r["flows"], path_cell(r), name, s, lin, d))
        lines.append(
            f"| {r['cc']} | {r['flows']} | {path_cell(r)} | "
            + " | ".join(cells)
            + f" | {host_cell(r)} |"
        )
    lines += [
        "",
        "**!** marks a difference over 10 % in goodput, or over 15 % in srtt or mean queue "
        "(retransmissions, maximum queue and fairness are shown, not flagged).",
        "",
        "## Flagged differences",
        "",
    ]
    if not flagged:
        lines.append("None.")
    for cc, n, where, name, s, lin, d in flagged:
        lines.append(
            f"- {cc}, {n} flow(s), {where} BDP: {name} {fmt(s, 2)} (sim) vs {fmt(lin, 2)} (Linux), "
            f"{d:+.0f} %."
        )
    notes = doc.parent / "sim-vs-linux-notes.md"
    if notes.is_file():
        lines += ["", notes.read_text(encoding="utf-8").strip()]
    lines += ["", "## Figures", ""]
    for name in [queue_figure_name(CCS)] + [
        queue_figure_name((cc,)) for cc in dict.fromkeys(table["cc"])
    ]:
        if (doc.parent / name).is_file():
            lines += [f"![queue over time]({name})", ""]
    lines += ["![goodput, srtt, queue](sim-vs-linux-bars.png)", ""]
    doc.write_text("\n".join(lines) + "\n", encoding="utf-8")


def current_commit() -> str:
    """HEAD's short hash, with "+changes" when the code the runs use differs from it."""
    git = ["git", "-C", str(REPO)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(
        [*git, "status", "--porcelain", "--", "crates", "python", "benches"],
        capture_output=True,
        text=True,
    )
    commit = head.stdout.strip() or "?"
    return commit + ("+changes" if dirty.stdout.strip() else "")


def merge_rows(new: pd.DataFrame, table_csv: Path, ccs: tuple[str, ...]) -> pd.DataFrame:
    """The earlier table's rows of the other controllers, then this run's, in the grid's order."""
    if not table_csv.is_file():
        return new
    old = pd.read_csv(table_csv)
    old = old[~old["cc"].isin(ccs)]
    merged = pd.concat([old, new], ignore_index=True)
    order = merged["cc"].map(CCS.index) * 10 + (merged["path"] != "droptail")
    return merged.iloc[order.argsort(kind="stable")].reset_index(drop=True)


@contextlib.contextmanager
def realtime_children(prio: int):
    """SCHED_FIFO at ``prio`` for this process while the block lasts, so that the flow engine it
    starts (the kernel TCP's sending and receiving threads; blocking I/O, it never spins) inherits
    it: on a busy machine a starved sender makes Linux's flows application-limited."""
    if not prio:
        yield
        return
    before = os.sched_getscheduler(0), os.sched_getparam(0)
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(prio))
    try:
        yield
    finally:
        os.sched_setscheduler(0, before[0], before[1])


def run_case(
    case: tuple[str, int, float, str], args: argparse.Namespace, commit: str
) -> tuple[dict, Results, Results]:
    cc, n, b, path_kind = case
    sc = scenario(cc, n, b, args.duration, args.measure_from, path_kind)
    sim = latlab.run(sc)
    sim.write(args.out / sc.name / "sim")
    with RunWatch() as watch, realtime_children(args.realtime):
        emu = run_emulated(sc, args.out / sc.name, quiet=True, realtime=args.realtime or None)
    row = {"cc": cc, "flows": n, "buffer_bdp": b, "path": path_kind, "commit": commit}
    row["kernel"] = emu.run_info.get("kernel") or "?"
    row.update({f"sim_{k}": v for k, v in metrics(sim, args.measure_from).items()})
    row.update({f"linux_{k}": v for k, v in metrics(emu, args.measure_from).items()})
    row.update(watch.record())
    return row, sim, emu


def sim_only(args: argparse.Namespace) -> int:
    """The simulated cells of every case of ``args.cc`` at this commit, beside the table's (--sim-only)."""
    table = pd.read_csv(args.table)
    keys = [k for k, _, _ in COLUMNS]
    print(
        f"sim_vs_linux --sim-only at {current_commit()}: each cell now / table (the table's commit)"
    )
    for cc, n, b, path_kind in cases(args.cc):
        got = metrics(
            latlab.run(scenario(cc, n, b, args.duration, args.measure_from, path_kind)),
            args.measure_from,
        )
        old = table[
            (table["cc"] == cc)
            & (table["flows"] == n)
            & (table["buffer_bdp"] == b)
            & (table["path"] == path_kind)
        ]
        want = old.iloc[0] if len(old) else None
        cells = [
            f"{k} {fmt(got[k], 3)} / {fmt(want[f'sim_{k}'], 3) if want is not None else '–'}"
            for k in keys
        ]
        tag = f"({want['commit']})" if want is not None else "(not in the table)"
        print(f"{cc} {n} flows {b:g} BDP {path_kind} {tag}: " + "; ".join(cells), flush=True)
    return 0


def parse_ccs(text: str) -> tuple[str, ...]:
    ccs = tuple(c.strip() for c in text.split(",") if c.strip())
    unknown = [c for c in ccs if c not in CCS]
    if unknown or not ccs:
        raise argparse.ArgumentTypeError(
            f"unknown controller(s) {', '.join(unknown) or '(none)'}: expected a comma-separated "
            f"list of {', '.join(CCS)}"
        )
    return ccs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--duration", type=float, default=20.0, help="seconds per run (wall time when emulated)"
    )
    ap.add_argument(
        "--measure-from", type=float, default=5.0, help="start of the measurement window, s"
    )
    ap.add_argument(
        "--cc",
        type=parse_ccs,
        default=CCS,
        help=f"controllers to run, comma-separated (default all: {','.join(CCS)}); the other "
        "controllers' rows are kept from --table",
    )
    ap.add_argument(
        "--realtime", type=int, default=0, help="the emulator's SCHED_FIFO priority (0: off)"
    )
    ap.add_argument("--out", type=Path, default=Path("out/sim_vs_linux"), help="results folders")
    ap.add_argument("--doc", type=Path, default=REPO / "docs" / "validation" / "sim-vs-linux.md")
    ap.add_argument(
        "--table",
        type=Path,
        default=REPO / "docs" / "validation" / "sim-vs-linux-table.csv",
        help="the measured table the report shows: rows of the controllers not run are kept from it, "
        "and it is rewritten with this run's rows",
    )
    ap.add_argument(
        "--from-table",
        action="store_true",
        help="run nothing: only rewrite the report from --table (figures are kept)",
    )
    ap.add_argument(
        "--sim-only",
        action="store_true",
        help="run only the simulated side of the chosen controllers' cases and print its cells beside the "
        "simulated cells of --table (a check that the simulator still gives the table's numbers); writes nothing",
    )
    args = ap.parse_args(argv)
    if args.sim_only:
        return sim_only(args)
    if args.from_table:
        write_report(pd.read_csv(args.table), args.doc, args)
        print(f"wrote {args.doc}")
        return 0
    reason = unavailable_reason()
    if reason is not None:
        print(f"sim_vs_linux: {reason}", file=sys.stderr)
        return 2
    tcpmem.require_fit("sim_vs_linux")
    print(f"sim_vs_linux: before, {tcpmem.describe()}", flush=True)
    commit = current_commit()
    rows, runs = [], {}
    for case in cases(args.cc):
        row, sim, emu = run_case(case, args, commit)
        rows.append(row)
        runs[case] = (sim, emu)
        print(json.dumps(row), flush=True)
    new = pd.DataFrame(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    new.to_csv(args.out / "table.csv", index=False)
    table = merge_rows(new, args.table, args.cc)
    table.to_csv(args.table, index=False)
    args.doc.parent.mkdir(parents=True, exist_ok=True)
    figure_queues(runs, args.doc.parent / queue_figure_name(args.cc), args.measure_from)
    figure_bars(table, args.doc.parent / "sim-vs-linux-bars.png")
    write_report(table, args.doc, args)
    print(f"sim_vs_linux: after, {tcpmem.describe()}")
    print(f"wrote {args.doc} and {args.table}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
