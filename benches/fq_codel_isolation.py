#!/usr/bin/env python3
"""A sparse flow beside ten CUBIC downloads: its delay at each queue kind, and the figure.

Runs scenarios/fq-codel-isolation.toml (a 10 Mbit/s, 20 ms bottleneck; a
ping-like UDP flow of 100-byte packets every 20 ms and ten CUBIC downloads)
with the bottleneck's queue set to each of FQ-CoDel, CoDel, PIE and a
1000-packet DropTail, for several seeds, and reports per queue: the sparse
flow's one-way delay p50/p95/p99 (its path's propagation is 21 ms), the
downloads' RTT p50/p99 (42 ms of propagation), their total goodput and the
bottleneck's drops. The figure (docs/models/fq-codel-isolation.png) shows
the sparse flow's one-way delay distribution per queue, seed 1, with the
commit and the machine in its caption.

    .venv/bin/python benches/fq_codel_isolation.py [--seeds 3] [--png docs/models/fq-codel-isolation.png]
"""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

import numpy as np

import latlab
from latlab import latency
from latlab.bench.suite import machine_info

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "fq-codel-isolation.toml"
QUEUES = {
    "FQ-CoDel": {"kind": "fq_codel"},
    "CoDel": {"kind": "codel", "limit_packets": 1000},
    "PIE": {"kind": "pie", "limit_packets": 1000},
    "DropTail 1000 pkts": {"kind": "droptail", "limit_packets": 1000},
}


def run(queue: dict, seed: int) -> latlab.Results:
    sc = latlab.Scenario.from_toml(SCENARIO)
    links = sc.get("topology.links")
    links[1]["queue"] = queue
    return latlab.run(sc.set("topology.links", links), seed=seed)


def row(name: str, seed: int, r: latlab.Results) -> dict:
    hist, flows = r.latency_histogram, r.flows
    ping_ids = set(flows.loc[flows["group"] == "ping", "flow_id"])
    ping = latency.percentiles_ms(hist[hist["flow_id"].isin(ping_ids)])
    bulk = latency.percentiles_ms(hist[~hist["flow_id"].isin(ping_ids)])
    bulk_flows = flows[flows["group"] == "bulk"]
    return {
        "queue": name,
        "seed": seed,
        "ping_owd_ms": [ping[q] for q in latency.PERCENTILES],
        "bulk_rtt_ms": [bulk[q] for q in latency.PERCENTILES],
        "bulk_goodput_mbps": float(bulk_flows["goodput_bps"].sum()) / 1e6,
        "drops_pkts": int(r.links["drops_pkts"].sum()),
    }


def cdf(hist) -> tuple[np.ndarray, np.ndarray]:
    pooled = hist.groupby(["low_ns", "high_ns"], sort=True)["count"].sum()
    mids = np.array([(lo + hi) / 2 / 1e6 for lo, hi in pooled.index])
    counts = pooled.to_numpy(dtype="float64")
    return mids, np.cumsum(counts) / counts.sum()


def figure(results: dict[str, latlab.Results], png: Path, caption: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for name, r in results.items():
        hist, flows = r.latency_histogram, r.flows
        ping_ids = set(flows.loc[flows["group"] == "ping", "flow_id"])
        x, y = cdf(hist[hist["flow_id"].isin(ping_ids)])
        ax.step(x, y, where="post", label=name)
    ax.axvline(21 + 2 * 5, color="grey", ls=":", lw=1)
    ax.text(31.5, 0.05, "propagation + 2 × CoDel's 5 ms target", color="grey", fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("sparse flow's one-way delay (ms, log scale; 21 ms of it is propagation)")
    ax.set_ylabel("fraction of its packets")
    ax.set_title("A 40 kbit/s sparse flow beside ten CUBIC downloads, 10 Mbit/s bottleneck")
    ax.legend(loc="center right")
    fig.text(0.01, 0.01, caption, fontsize=7, color="dimgrey")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(png, dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--png", type=Path, default=ROOT / "docs" / "models" / "fq-codel-isolation.png")
    args = ap.parse_args()
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    m = machine_info()
    print(f"commit {commit}; {m['cpu']}, {m['cores']} cores, {m['os']}")
    first: dict[str, latlab.Results] = {}
    fmt = "{:<20} {:>4} {:>22} {:>22} {:>10} {:>7}"
    print(
        fmt.format(
            "queue", "seed", "ping OWD p50/95/99 ms", "bulk RTT p50/95/99 ms", "bulk Mb/s", "drops"
        )
    )
    for name, queue in QUEUES.items():
        for seed in range(1, args.seeds + 1):
            r = run(queue, seed)
            first.setdefault(name, r)
            x = row(name, seed, r)
            print(
                fmt.format(
                    name,
                    seed,
                    " / ".join(f"{v:.1f}" for v in x["ping_owd_ms"]),
                    " / ".join(f"{v:.1f}" for v in x["bulk_rtt_ms"]),
                    f"{x['bulk_goodput_mbps']:.2f}",
                    x["drops_pkts"],
                )
            )
    caption = (
        f"latlab {commit}, seed 1, scenarios/fq-codel-isolation.toml, measured over [5, 30] s; "
        f"{m['cpu']}, {m['cores']} cores; python benches/fq_codel_isolation.py"
    )
    figure(first, args.png, caption)
    print(f"figure: {args.png}")


if __name__ == "__main__":
    main()
