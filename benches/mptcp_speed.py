#!/usr/bin/env python3
"""MPTCP's cost per packet: N two-path MPTCP connections against 2N plain TCP
flows over the same two paths (issue 14, point 6).

Topology: `server` reaches `client` over two disjoint paths, through `ra`
(bottleneck ra->ca) and through `rb` (rb->cb). The MPTCP connections run
server->client with one subflow per path. The TCP flows take the same
bottlenecks with the same hop count: N from `sa` (linked only to ra) and N
from `sb` (linked only to rb) to `client`. Each bottleneck carries N
subflows or N TCP flows, so both runs move about the same packets over the
same links; the figure of merit is wall time per packet-hop (and events/s).

Runs the Rust-only `latlab-sim` binary (`cargo build --release --bin
latlab-sim`), niced, `--repeat` times each, alternating, and prints one line
per run and the ratio of the medians.

    python3 benches/mptcp_speed.py                 # N = 100, 20 s simulated, 2 repeats
    python3 benches/mptcp_speed.py --n 20 --duration 5 --repeat 1
    python3 benches/mptcp_speed.py --callgrind     # instructions per packet-hop (valgrind)

Wall and CPU time on a shared machine are noisy; `--callgrind` counts the
instructions each run executes under valgrind's callgrind (deterministic,
about 40 times slower) and prints instructions per packet-hop and their
ratio instead, then the same per packet-hop by where each instruction's
source line lives (the MPTCP layer, the TCP machines, segment fields, the
simulator, the standard library inlined into all of them): which layer
the difference is in.
"""

from __future__ import annotations

import argparse
import re
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BINARY = REPO / "target" / "release" / "latlab-sim"

TOPOLOGY = """
[tcp]
preset = "linux"
[topology]
kind = "custom"
nodes = [{{ name = "server" }}, {{ name = "sa" }}, {{ name = "sb" }}, {{ name = "ra" }}, {{ name = "rb" }},
         {{ name = "ca" }}, {{ name = "cb" }}, {{ name = "client" }}]
links = [
  {{ from = "server", to = "ra", rate_bps = 10e9, delay_ms = 1 }},
  {{ from = "server", to = "rb", rate_bps = 10e9, delay_ms = 1 }},
  {{ from = "sa", to = "ra", rate_bps = 10e9, delay_ms = 1 }},
  {{ from = "sb", to = "rb", rate_bps = 10e9, delay_ms = 1 }},
  {{ from = "ra", to = "ca", rate_bps = {rate}, delay_ms = 10, queue = {{ kind = "droptail", limit_packets = {queue} }} }},
  {{ from = "rb", to = "cb", rate_bps = {rate}, delay_ms = 20, queue = {{ kind = "droptail", limit_packets = {queue} }} }},
  {{ from = "ca", to = "client", rate_bps = 10e9, delay_ms = 1 }},
  {{ from = "cb", to = "client", rate_bps = 10e9, delay_ms = 1 }},
]
"""

MPTCP = """
[[flows]]
name = "mp"
kind = "mptcp"
src = "server"
dst = "client"
count = {n}
cc = "lia"
start_s = {{ uniform = [0, 1] }}
[flows.mptcp]
recv_buffer_bytes = 4000000
[[flows.mptcp.paths]]
name = "a"
via = ["ra"]
[[flows.mptcp.paths]]
name = "b"
via = ["rb"]
"""

TCP = """
[[flows]]
name = "tcp-a"
src = "sa"
dst = "client"
count = {n}
cc = "newreno"
start_s = {{ uniform = [0, 1] }}
[[flows]]
name = "tcp-b"
src = "sb"
dst = "client"
count = {n}
cc = "newreno"
start_s = {{ uniform = [0, 1] }}
"""

LINE = re.compile(
    r"run (?P<run_s>[\d.]+) s wall .*?; (?P<events>\d+) events \((?P<meps>[\d.]+) M events/s\); "
    r"(?P<hops>\d+) packet-hops \((?P<ns_hop>[\d.]+) ns wall each\); conservation (?P<cons>\w+)"
)


def scenario(kind: str, n: int, duration_s: float) -> str:
    head = f'name = "{kind}-{n}"\nseed = 1\nduration_s = {duration_s}\nsample_interval_ms = 0\n'
    # 1 Mbit/s per subflow or TCP flow at each bottleneck.
    topo = TOPOLOGY.format(rate=f"{n}e6", queue=max(100, 2 * n))
    return head + topo + (MPTCP if kind == "mptcp" else TCP).format(n=n)


def _children_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_once(path: Path) -> dict[str, float]:
    cpu0 = _children_cpu_s()
    out = subprocess.run(
        ["nice", "-n", "10", str(BINARY), str(path)], capture_output=True, text=True, check=True
    )
    cpu_s = _children_cpu_s() - cpu0
    m = LINE.search(out.stdout)
    if m is None:
        sys.exit(f"unexpected output from latlab-sim: {out.stdout!r} {out.stderr!r}")
    if m["cons"] != "ok":
        sys.exit(f"conservation violated in {path}")
    # CPU time of the whole process (build included, small here): on a
    # loaded machine wall time also counts the time other processes ran.
    return {
        "run_s": float(m["run_s"]),
        "events": int(m["events"]),
        "meps": float(m["meps"]),
        "hops": int(m["hops"]),
        "ns_hop": float(m["ns_hop"]),
        "cpu_s": cpu_s,
        "cpu_ns_hop": cpu_s * 1e9 / max(int(m["hops"]), 1),
    }


# Where an instruction's source line lives, first match wins. Code inlined
# from another file counts where it was written: an MPTCP call inlined into
# the simulator's loop is "mptcp", a slice bounds check inlined anywhere is
# "std".
AREAS = (
    ("mptcp", ("/proto/src/mptcp/", "/proto/src/cc/lia.rs", "/proto/src/cc/olia.rs")),
    ("tcp", ("/proto/src/tcp/", "/proto/src/cc/")),
    ("segment", ("/proto/src/segment.rs",)),
    ("simulator", ("/crates/sim/", "/crates/qdisc/", "/crates/link/")),
    ("std", ("/rustc/",)),
)
AREA_LABELS = {
    "mptcp": "MPTCP layer (proto/src/mptcp, LIA/OLIA)",
    "tcp": "TCP sender, receiver, controllers",
    "segment": "segment fields (DSS, SACK)",
    "simulator": "simulator, links, queues",
    "std": "Rust standard library, inlined",
    "other": "libc, start-up, the rest",
}


def area_of(source_file: str) -> str:
    for area, needles in AREAS:
        if any(n in source_file for n in needles):
            return area
    return "other"


def callgrind_by_area(out_file: Path) -> dict[str, int]:
    """Self cost (instructions) per source area from a callgrind output file.

    Each cost line counts under the file callgrind names for it: `fl=`
    (the function's file) or, inside inlined code, `fi=`/`fe=`. A `calls=`
    line is followed by the call's inclusive cost, which the callee's own
    lines already count: skipped. File names are compressed as "(id) name"
    on first use and "(id)" after, shared by fl/fi/fe/cfi/cfl.
    """
    names: dict[str, str] = {}
    per_file: dict[str, int] = {}
    current = "?"
    skip_next = False

    def file_name(spec: str) -> str:
        m = re.match(r"\((\d+)\)(?: (.*))?", spec.strip())
        if m is None:
            return spec.strip()
        if m[2]:
            names[m[1]] = m[2]
        return names.get(m[1], "?")

    with open(out_file, encoding="utf-8", errors="replace") as f:
        for line in f:
            c = line[:1]
            if c.isdigit() or c in "+-*":
                if skip_next:
                    skip_next = False
                    continue
                per_file[current] = per_file.get(current, 0) + int(line.split()[-1])
            elif line.startswith(("fl=", "fi=", "fe=")):
                current = file_name(line[3:])
            elif line.startswith(("cfi=", "cfl=")):
                file_name(line[4:])
            elif line.startswith("calls="):
                skip_next = True
    areas: dict[str, int] = {}
    for source_file, ir in per_file.items():
        a = area_of(source_file)
        areas[a] = areas.get(a, 0) + ir
    return areas


def callgrind_once(path: Path) -> dict[str, float]:
    """Instructions executed by one run (valgrind --tool=callgrind), in all
    and per source area."""
    with tempfile.TemporaryDirectory() as tmp:
        out_file = Path(tmp) / "callgrind.out"
        cmd = [
            "nice",
            "-n",
            "10",
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out_file}",
            str(BINARY),
            str(path),
        ]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True)
        areas = callgrind_by_area(out_file)
    m = LINE.search(out.stdout)
    refs = re.search(r"I\s+refs:\s+([\d,]+)", out.stderr)
    if m is None or refs is None:
        sys.exit(f"unexpected output from valgrind: {out.stdout!r} {out.stderr!r}")
    instructions = int(refs[1].replace(",", ""))
    hops = max(int(m["hops"]), 1)
    return {
        "instructions": instructions,
        "hops": int(m["hops"]),
        "per_hop": instructions / hops,
        "events_per_hop": int(m["events"]) / hops,
        "areas_per_hop": {a: ir / hops for a, ir in areas.items()},
    }


def print_areas(counts: dict[str, dict]) -> None:
    """Instructions per packet-hop by where their source line lives, MPTCP
    against TCP: which layer the difference is in."""
    m, t = counts["mptcp"]["areas_per_hop"], counts["tcp"]["areas_per_hop"]
    print(f"{'per packet-hop, by source':<44} {'MPTCP':>7} {'TCP':>7} {'diff':>7}")
    for area, label in AREA_LABELS.items():
        a, b = m.get(area, 0.0), t.get(area, 0.0)
        print(f"{label:<44} {a:7.1f} {b:7.1f} {a - b:+7.1f}")
    a, b = sum(m.values()), sum(t.values())
    print(f"{'all':<44} {a:7.1f} {b:7.1f} {a - b:+7.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=100, help="MPTCP connections (TCP flows: 2n)")
    ap.add_argument("--duration", type=float, default=20.0, help="simulated seconds")
    ap.add_argument("--repeat", type=int, default=2, help="runs of each, alternating")
    ap.add_argument(
        "--callgrind",
        action="store_true",
        help="count instructions under valgrind instead of timing",
    )
    args = ap.parse_args()
    if not BINARY.is_file():
        sys.exit(f"{BINARY} missing: cargo build --release --bin latlab-sim")
    if args.callgrind:
        counts = {}
        with tempfile.TemporaryDirectory() as tmp:
            for kind in ("mptcp", "tcp"):
                path = Path(tmp) / f"{kind}.toml"
                path.write_text(scenario(kind, args.n, args.duration))
                counts[kind] = callgrind_once(path)
                c = counts[kind]
                label = f"{args.n} MPTCP x2" if kind == "mptcp" else f"{2 * args.n} TCP"
                # Events per hop too: an extra timer per packet would show there.
                print(
                    f"{label:>12}: {c['instructions']} instructions, {c['hops']} packet-hops, {c['per_hop']:.0f} per packet-hop, "
                    f"{c['events_per_hop']:.3f} events per packet-hop"
                )
        print(
            f"instructions per packet-hop ratio MPTCP/TCP {counts['mptcp']['per_hop'] / counts['tcp']['per_hop']:.2f}"
        )
        print_areas(counts)
        return
    results: dict[str, list[dict[str, float]]] = {"mptcp": [], "tcp": []}
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for kind in results:
            paths[kind] = Path(tmp) / f"{kind}.toml"
            paths[kind].write_text(scenario(kind, args.n, args.duration))
        for r in range(args.repeat):
            for kind in results:
                res = run_once(paths[kind])
                results[kind].append(res)
                label = f"{args.n} MPTCP x2" if kind == "mptcp" else f"{2 * args.n} TCP"
                print(
                    f"run {r + 1} {label:>12}: {res['run_s']:.3f} s wall, {res['events']} events "
                    f"({res['meps']:.2f} M events/s), {res['hops']} packet-hops, {res['ns_hop']:.0f} ns wall and "
                    f"{res['cpu_ns_hop']:.0f} ns CPU per packet-hop"
                )
    med = {
        k: {
            f: statistics.median(r[f] for r in v) for f in ("ns_hop", "meps", "run_s", "cpu_ns_hop")
        }
        for k, v in results.items()
    }
    print(
        f"median ns per packet-hop: MPTCP {med['mptcp']['ns_hop']:.0f}, TCP {med['tcp']['ns_hop']:.0f}; "
        f"ratio MPTCP/TCP {med['mptcp']['ns_hop'] / med['tcp']['ns_hop']:.2f}"
    )
    print(
        f"median CPU ns per packet-hop: MPTCP {med['mptcp']['cpu_ns_hop']:.0f}, TCP {med['tcp']['cpu_ns_hop']:.0f}; "
        f"ratio MPTCP/TCP {med['mptcp']['cpu_ns_hop'] / med['tcp']['cpu_ns_hop']:.2f}"
    )
    print(f"median M events/s: MPTCP {med['mptcp']['meps']:.2f}, TCP {med['tcp']['meps']:.2f}")


if __name__ == "__main__":
    main()
