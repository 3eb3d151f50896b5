"""N media flows sharing one real bottleneck: rate fairness, queueing delay and loss of TFRC and DFlow.

    .venv/bin/python benches/media_fairness.py          # as root: 3 flows, TFRC then DFlow, 60 s each
    .venv/bin/python benches/media_fairness.py --flows 4 --mode dflow --out out/mf-dflow4

For each mode: two fresh network namespaces (names carry this process's
pid) joined by a veth pair, with a tbf on the sender's side as the
bottleneck (``--rate``, default 2 Mbit/s; a 3000 B bucket and a queue of
35 frames of 1242 B, as in tests/python/test_media_netns.py: ~176 ms when
full at 2 Mbit/s). The feedback direction is unshaped. N ``latlab-net media
recv`` processes (one per flow, ports 5001..) run in the receiver namespace
and N ``latlab-net media send`` in the sender namespace, started
``--stagger-s`` apart (default 1 s) and all stopping together at
``--duration-s``, so every flow sees full contention from the last start on.

Figures (from the receivers' CSV records and summary JSON; the senders'
summaries give packets sent and pacing lateness):

- The *common window* is [last start + warm-up, end - 1 s] on one
  timeline: the same span for every flow, all of them running. Over it,
  from the CSV rows (20 ms each): each flow's rate, its share of the
  aggregate, Jain's fairness index (sum x)^2 / (N * sum x^2) over the
  rates, the aggregate against the line rate and against the payload
  ceiling (rate * 1200 / 1242: tbf counts UDP, IP and Ethernet headers),
  the packets lost, and the queueing delay per flow and over all flows
  (mean and max exact; p50 / p95 over the packet-weighted 20 ms row means,
  ~1-2 packets of a flow each, so close to per-packet values).
- Beside them, each receiver's own "measured" figures (summary JSON: from
  its first packet + warm-up to its last packet; exact per-packet):
  rate, its Jain index, and losses.
- Queueing delay is against the *smallest* one-way delay any flow saw (the
  empty-queue delay): both ends run on this host's CLOCK_MONOTONIC, so
  one-way delays are comparable across flows. Each receiver itself
  measures against its own minimum; the difference ("base offset") is
  queue a flow never saw drain, e.g. a late starter that only ever saw a
  standing queue.
- The tbf's own counters (whole run, slow starts included).

Results: DIR/results.json, DIR/results.md, and each run's files in
DIR/<mode>/ (recv-i.csv, recv-i.summary.json, send-i.*, logs).

Real-time pacing is CPU-sensitive: run it on an otherwise idle machine (the
load average at the start is recorded). Needs root and iproute2 (ip, tc);
without them it prints why and exits 0. The namespaces are always deleted.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import platform
import re
import resource
import signal
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

from latlab.errors import UserError
from latlab.models.fairness import jain_index
from latlab.real import tcpmem
from latlab.real.netbin import find_binary
from latlab.real.netns import TestbedUnavailable, bottleneck_testbed, unavailable_reason

REPO = Path(__file__).resolve().parents[1]

# ----- the bottleneck (as in tests/python/test_media_netns.py) ----------------

PACKET_BYTES = 1200
# tbf counts whole frames: 1200 B payload + 8 UDP + 20 IPv4 + 14 Ethernet.
HEADER_BYTES = 42
QUEUE_PACKETS = 35
LIMIT_BYTES = QUEUE_PACKETS * (PACKET_BYTES + HEADER_BYTES) + 500  # 43,970 B
# The token bucket: two frames, so the rate is enforced at packet scale.
BURST_BYTES = 2 * (PACKET_BYTES + HEADER_BYTES) + 516  # 3000 B
TX_ADDR, RX_ADDR = "10.77.0.1", "10.77.0.2"
BASE_PORT = 5001
ROW_INTERVAL_MS = 20  # receiver CSV rows: ~1-2 packets of each flow
END_TRIM_S = 1.0  # the common window stops this long before the senders do

_children: list[subprocess.Popen] = []


# ----- helpers ------------------------------------------------------------------


def parse_rate(text: str) -> int:
    """tc's rate syntax (bit, kbit, mbit, gbit, bare = bit/s; bps, kbps, mbps = bytes/s) -> bit/s."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", text)
    units = {
        "": 1,
        "bit": 1,
        "kbit": 1e3,
        "mbit": 1e6,
        "gbit": 1e9,
        "bps": 8,
        "kbps": 8e3,
        "mbps": 8e6,
        "gbps": 8e9,
    }
    if not m or m.group(2).lower() not in units:
        raise argparse.ArgumentTypeError(f"not a rate: {text!r} (e.g. 2mbit, 500kbit)")
    bps = int(round(float(m.group(1)) * units[m.group(2).lower()]))
    if bps <= 0:
        raise argparse.ArgumentTypeError(f"rate must be positive: {text!r}")
    return bps


def cpu_times() -> tuple[float, float]:
    """(busy, total) jiffies of all cores, from /proc/stat."""
    with open("/proc/stat") as f:
        v = [float(x) for x in f.readline().split()[1:]]
    idle = v[3] + (v[4] if len(v) > 4 else 0.0)  # idle + iowait
    total = sum(v[:8])  # guest time is already counted in user
    return total - idle, total


def children_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def stop(proc: subprocess.Popen, timeout_s: float = 5.0) -> None:
    """SIGTERM (a receiver then writes its summary), then SIGKILL."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def stop_all_children() -> None:
    for proc in _children:
        try:
            stop(proc, timeout_s=2.0)
        except Exception as e:  # noqa: BLE001 - best effort on the way out
            print(f"warning: could not stop pid {proc.pid}: {e}", file=sys.stderr)


def wait_for_line(path: Path, text: str, proc: subprocess.Popen, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text():
            return
        if proc.poll() is not None:
            raise RuntimeError(
                f"process ended early ({proc.returncode}): {path.read_text()[-2000:]}"
            )
        time.sleep(0.02)
    raise RuntimeError(f"no '{text}' in {path} after {timeout_s} s")


def read_rows(path: Path) -> list[dict[str, float | None]]:
    with path.open() as f:
        return [
            {k: float(v) if v != "" else None for k, v in row.items()} for row in csv.DictReader(f)
        ]


def weighted_rank(pairs: list[tuple[float, float]], q: float) -> float:
    """Nearest-rank percentile of values with weights (weight = packets in the row)."""
    pairs = sorted(pairs)
    total = sum(w for _, w in pairs)
    want = max(q * total, 1e-12)
    acc = 0.0
    for v, w in pairs:
        acc += w
        if acc >= want - 1e-9:
            return v
    return pairs[-1][0]


def distribution(samples: list[tuple[float, float]], maxes: list[float]) -> dict | None:
    """Mean (exact), p50 / p95 (of row means, packet-weighted) and max (exact) of queueing delay."""
    weight = sum(wt for _, wt in samples)
    if not weight:
        return None
    return {
        "count": int(weight),
        "mean": sum(v * wt for v, wt in samples) / weight,
        "p50": weighted_rank(samples, 0.5),
        "p95": weighted_rank(samples, 0.95),
        "max": max(maxes),
    }


def shifted(dist: dict | None, by: float) -> dict | None:
    if not dist:
        return None
    return {k: (v + by if k in ("mean", "p50", "p95", "max") else v) for k, v in dist.items()}


# ----- one mode ---------------------------------------------------------------------


def run_mode(mode: str, args: argparse.Namespace, binary: Path, out: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*"):
        if old.is_file():
            old.unlink()
    n, d, w, stagger = args.flows, args.duration_s, args.warmup_s, args.stagger_s
    load_before = os.getloadavg()
    testbed = ExitStack()
    ns = testbed.enter_context(
        bottleneck_testbed(f"mf-{mode}", args.rate, BURST_BYTES, LIMIT_BYTES, TX_ADDR, RX_ADDR)
    )
    receivers: list[subprocess.Popen] = []
    senders: list[subprocess.Popen] = []
    recv_launch: list[float] = []
    send_launch: list[float] = []
    try:
        # The receivers, all listening before the first sender starts.
        for i in range(n):
            log = out / f"recv-{i}.log"
            cmd = [
                *ns.in_rx([str(binary)]),
                "media",
                "recv",
                "--listen",
                f"{RX_ADDR}:{BASE_PORT + i}",
                "--duration-s",
                str(d + 30),
                "--idle-timeout-s",
                "2",
                "--warmup-s",
                str(w),
                "--interval-ms",
                str(ROW_INTERVAL_MS),
                "--record",
                str(out / f"recv-{i}.csv"),
            ]
            with log.open("w") as f:
                recv_launch.append(time.monotonic())
                proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT)
            receivers.append(proc)
            _children.append(proc)
        for i, proc in enumerate(receivers):
            wait_for_line(out / f"recv-{i}.log", "listening on", proc)
        # The senders, stagger apart, all stopping at t0 + d.
        t0 = time.monotonic()
        cpu_before = (*cpu_times(), children_cpu_s())
        for i in range(n):
            start = t0 + i * stagger
            time.sleep(max(0.0, start - time.monotonic()))
            cmd = [
                *ns.in_tx([str(binary)]),
                "media",
                "send",
                "--to",
                f"{RX_ADDR}:{BASE_PORT + i}",
                "--mode",
                mode,
                "--duration-s",
                f"{d - i * stagger:.3f}",
                "--packet-bytes",
                str(PACKET_BYTES),
                "--record",
                str(out / f"send-{i}.csv"),
                "-q",
            ]
            if mode == "dflow":
                cmd += ["--cd-thresh-ms", str(args.cd_thresh_ms)]
            with (out / f"send-{i}.log").open("w") as f:
                send_launch.append(time.monotonic() - t0)
                proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT)
            senders.append(proc)
            _children.append(proc)
            print(f"  {mode}: flow {i} started at {send_launch[-1]:.2f} s", flush=True)
        failures = []
        for i, proc in enumerate(senders):
            code = proc.wait(timeout=d + 60)
            if code != 0:
                failures.append(
                    f"sender {i} exited {code}: {(out / f'send-{i}.log').read_text()[-1000:]}"
                )
        # Each receiver stops 2 s after its last packet (--idle-timeout-s).
        for i, proc in enumerate(receivers):
            try:
                code = proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                stop(proc)
                code = proc.returncode
            if code != 0:
                failures.append(
                    f"receiver {i} exited {code}: {(out / f'recv-{i}.log').read_text()[-1000:]}"
                )
        wall_s = time.monotonic() - t0
        busy, total = cpu_times()
        own_cpu_s = children_cpu_s() - cpu_before[2]
        tbf = ns.qdisc_stats()
        if failures:
            raise RuntimeError(f"{mode}: " + "\n".join(failures))
    finally:
        for proc in senders + receivers:
            stop(proc)
        testbed.close()
    load_after = os.getloadavg()
    (out / "tbf-stats.txt").write_text(tbf + "\n")
    cores = os.cpu_count() or 1
    cpu = {
        "wall_s": wall_s,
        # Busy share of all cores over the run (anything on the machine), and the part of it that
        # this run's own processes (senders, receivers; ip and tc) used.
        "busy_fraction": (busy - cpu_before[0]) / max(total - cpu_before[1], 1.0),
        "own_fraction": own_cpu_s / (wall_s * cores),
        "own_cpu_s": own_cpu_s,
    }
    res = analyse(
        mode,
        args,
        out,
        t0_offsets=[r - t0 for r in recv_launch],
        send_launch=send_launch,
        load=(load_before, load_after),
        tbf=tbf,
    )
    res["cpu"] = cpu
    return res


def analyse(mode, args, out, t0_offsets, send_launch, load, tbf) -> dict:
    n = args.flows
    recv = [json.loads((out / f"recv-{i}.summary.json").read_text()) for i in range(n)]
    send = [json.loads((out / f"send-{i}.summary.json").read_text()) for i in range(n)]
    rows = [read_rows(out / f"recv-{i}.csv") for i in range(n)]
    interval_s = ROW_INTERVAL_MS / 1e3
    win_start = (n - 1) * args.stagger_s + args.warmup_s
    win_end = args.duration_s - END_TRIM_S
    global_min_owd = min(r["owd_min_ms"] for r in recv if r["owd_min_ms"] is not None)

    flows = []
    all_delay: list[tuple[float, float]] = []
    all_max: list[float] = []
    for i in range(n):
        r, s, m = recv[i], send[i], recv[i]["measured"]
        shift = r["owd_min_ms"] - global_min_owd
        # A row at receiver time t_s covers (t_s - interval, t_s]; receiver time + offset = time since t0.
        in_win = [row for row in rows[i] if win_start < row["t_s"] + t0_offsets[i] <= win_end]
        packets = sum(row["packets_received"] for row in in_win)
        span = len(in_win) * interval_s
        delay, maxes = [], []
        for row in in_win:
            if row["packets_received"] and row["owd_ms"] is not None:
                delay.append((row["owd_ms"] - global_min_owd, row["packets_received"]))
                # Rows measure against the minimum seen so far: mean OWD - mean queueing delay.
                min_so_far = row["owd_ms"] - row["queueing_delay_ms"]
                maxes.append(row["queueing_delay_max_ms"] + min_so_far - global_min_owd)
        all_delay += delay
        all_max += maxes
        lost_win = int(sum(row["lost_packets"] for row in in_win))
        per_s: dict[int, float] = {}
        for row in rows[i]:
            sec = int(math.ceil(row["t_s"] + t0_offsets[i] - 1e-9)) - 1
            per_s[sec] = per_s.get(sec, 0.0) + row["packets_received"] * PACKET_BYTES * 8
        flows.append(
            {
                "flow": i,
                "port": BASE_PORT + i,
                "start_s": round(send_launch[i], 3),
                # The common window (CSV rows).
                "rate_bps": packets * PACKET_BYTES * 8 / span if span > 0 else 0.0,
                "window_s": span,
                "received_in_window": int(packets),
                "lost_in_window": lost_win,
                "queueing_delay_ms": distribution(delay, maxes),
                # The receiver's summary: its own warm-up (first packet + warm-up to its last packet).
                "measured_rate_bps": m["mean_rate_bps"],
                "measured_s": m["active_s"],
                "lost_after_warmup": m["lost_packets"],
                "received_after_warmup": m["packets_received"],
                "loss_fraction_after_warmup": m["loss_fraction"],
                "measured_queueing_delay_ms": shifted(m["queueing_delay_ms"], shift),
                "measured_queueing_delay_own_base_ms": m["queueing_delay_ms"],
                "base_offset_ms": shift,
                # The whole run.
                "lost_whole_run": r["lost_packets"],
                "packets_sent": s["packets_sent"],
                "unaccounted": s["packets_sent"] - r["packets_received"] - r["lost_packets"],
                "delay_events": r["delay_events"],
                "loss_events": r["loss_events"],
                "final_loss_event_rate": r["final_loss_event_rate"],
                "pacing_lateness_us": s["pacing_lateness_us"],
                "final_rtt_ms": s["final_rtt_ms"],
                "malformed": sum(r["socket"]["dropped"].values()),
                "rate_per_s_bps": [per_s.get(k, 0.0) for k in range(int(args.duration_s) + 1)],
            }
        )
    rates = [f["rate_bps"] for f in flows]
    aggregate = sum(rates)
    overall = distribution(all_delay, all_max)
    ceiling = args.rate * PACKET_BYTES / (PACKET_BYTES + HEADER_BYTES)
    m_rates = [f["measured_rate_bps"] for f in flows]
    return {
        "mode": mode,
        "flows": flows,
        "window_s": [win_start, win_end],
        "jain": jain_index(rates),
        "jain_measured": jain_index(m_rates),
        "aggregate_bps": aggregate,
        "aggregate_of_line_rate": aggregate / args.rate,
        "aggregate_of_payload_ceiling": aggregate / ceiling,
        "payload_ceiling_bps": ceiling,
        "queueing_delay_ms": overall,
        "full_queue_ms": LIMIT_BYTES * 8 / args.rate * 1e3,
        "min_owd_ms": global_min_owd,
        "loadavg_before": load[0],
        "loadavg_after": load[1],
        "tbf": tbf_counters(tbf),
        "tbf_stats": tbf,
    }


# ----- report -------------------------------------------------------------------------


def tbf_counters(text: str) -> dict:
    """Whole-run counters of the tbf (all flows, slow starts included)."""
    m = re.search(r"Sent (\d+) bytes (\d+) pkt \(dropped (\d+), overlimits (\d+)", text)
    if not m:
        return {}
    return dict(zip(("sent_bytes", "sent_packets", "dropped", "overlimits"), map(int, m.groups())))


def fmt_dist(d: dict | None) -> str:
    return "-" if not d else f"{d['mean']:.1f} / {d['p50']:.1f} / {d['p95']:.1f} / {d['max']:.1f}"


def markdown(results: list[dict], args: argparse.Namespace) -> str:
    lines = [
        f"# media fairness: {args.flows} flows, {args.rate / 1e6:g} Mbit/s tbf, {args.duration_s:g} s, "
        f"warm-up {args.warmup_s:g} s, starts {args.stagger_s:g} s apart",
        "",
    ]
    for res in results:
        w0, w1 = res["window_s"]
        q = res["queueing_delay_ms"]
        lines += [
            f"## {res['mode']}",
            "",
            f"Common window {w0:g}–{w1:g} s. Jain {res['jain']:.4f} (own warm-up windows: "
            f"{res['jain_measured']:.4f}). Aggregate {res['aggregate_bps'] / 1e6:.3f} Mb/s = "
            f"{res['aggregate_of_line_rate'] * 100:.1f}% of {args.rate / 1e6:g} Mbit/s "
            f"({res['aggregate_of_payload_ceiling'] * 100:.1f}% of the {res['payload_ceiling_bps'] / 1e6:.3f} Mb/s "
            f"payload ceiling). Queueing delay, all flows, mean / p50 / p95 / max: {fmt_dist(q)} ms "
            f"(full queue {res['full_queue_ms']:.0f} ms). CPU busy {res['cpu']['busy_fraction'] * 100:.0f}% of "
            f"{os.cpu_count()} cores during the run, {res['cpu']['own_fraction'] * 100:.0f}% by its own "
            f"processes; load average {res['loadavg_before'][0]:.2f} before, {res['loadavg_after'][0]:.2f} after.",
            "",
            "| flow | start s | rate Mb/s (share) | own-window rate Mb/s | lost in window | "
            "lost after own warm-up | qdelay mean / p50 / p95 / max ms | base offset ms | delay ev. | loss ev. | "
            "pacing p95 µs |",
            "|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|",
        ]
        for f in res["flows"]:
            seen = f["received_after_warmup"] + f["lost_after_warmup"]
            seen_w = f["received_in_window"] + f["lost_in_window"]
            pace = f["pacing_lateness_us"]
            lines.append(
                f"| {f['flow']} | {f['start_s']:.2f} | {f['rate_bps'] / 1e6:.3f} "
                f"({f['rate_bps'] / res['aggregate_bps'] * 100:.1f}%) | {f['measured_rate_bps'] / 1e6:.3f} | "
                f"{f['lost_in_window']} of {seen_w} | {f['lost_after_warmup']} of {seen} | "
                f"{fmt_dist(f['queueing_delay_ms'])} | {f['base_offset_ms']:.2f} | {f['delay_events']} | "
                f"{f['loss_events']} | {pace['p95'] if pace else float('nan'):.0f} |"
            )
        tbf = res["tbf"]
        if tbf:
            lines += [
                "",
                f"tbf, whole run: {tbf['sent_packets']} packets sent, {tbf['dropped']} dropped.",
            ]
        lines.append("")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--flows", type=int, default=3)
    ap.add_argument("--mode", choices=["dflow", "tfrc", "both"], default="both")
    ap.add_argument(
        "--duration-s",
        type=float,
        default=60.0,
        help="senders stop this long after the first starts",
    )
    ap.add_argument(
        "--warmup-s", type=float, default=15.0, help="left out after each flow's first packet"
    )
    ap.add_argument("--stagger-s", type=float, default=1.0, help="between sender starts")
    ap.add_argument(
        "--rate", type=parse_rate, default=parse_rate("2mbit"), help="tbf rate, tc syntax (2mbit)"
    )
    ap.add_argument("--cd-thresh-ms", type=float, default=50.0, help="DFlow's delay threshold")
    ap.add_argument("--out", type=Path, default=REPO / "out" / "media-fairness")
    args = ap.parse_args()
    if args.flows < 1:
        ap.error("--flows must be at least 1")
    if args.flows + BASE_PORT > 65535:
        ap.error("too many flows")
    if (args.flows - 1) * args.stagger_s + args.warmup_s >= args.duration_s - END_TRIM_S - 1:
        ap.error("--duration-s leaves no common window after the last start and the warm-up")

    reason = unavailable_reason()
    if reason:
        print(f"skipped: {reason}")
        return 0
    try:
        binary = find_binary()
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    # A SIGTERM unwinds like Ctrl-C, so the namespaces are deleted.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    modes = ["tfrc", "dflow"] if args.mode == "both" else [args.mode]
    load = os.getloadavg()
    print(
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores; "
        f"{tcpmem.describe()}",
        flush=True,
    )
    if load[0] > 1.5:
        print("warning: the machine is busy; real-time pacing may suffer", flush=True)
    results = []
    try:
        for mode in modes:
            print(f"{mode}: {args.flows} flows for {args.duration_s:g} s ...", flush=True)
            results.append(run_mode(mode, args, binary, args.out / mode))
    except TestbedUnavailable as e:
        print(f"skipped: {e}")
        return 0
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        stop_all_children()

    report = {
        "flows": args.flows,
        "rate_bps": args.rate,
        "duration_s": args.duration_s,
        "warmup_s": args.warmup_s,
        "stagger_s": args.stagger_s,
        "cd_thresh_ms": args.cd_thresh_ms,
        "packet_bytes": PACKET_BYTES,
        "queue_limit_bytes": LIMIT_BYTES,
        "burst_bytes": BURST_BYTES,
        "host": {
            "cores": os.cpu_count(),
            "kernel": platform.release(),
            "tcp_mem": tcpmem.describe(),
        },
        "results": results,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(report, indent=2) + "\n")
    md = markdown(results, args)
    (args.out / "results.md").write_text(md + "\n")
    print()
    print(md)
    print(f"written: {args.out / 'results.json'}, {args.out / 'results.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
