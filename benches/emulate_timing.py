"""Timing fidelity and top rate of ``latlab-net emulate`` (crates/net/src/emulate).

For each link rate: a one-link path (the rate, 10 ms one way, a DropTail
buffer of 100 ms at that rate) is emulated; a UDP source in the client
namespace offers 5% more than the link rate in 1500-byte IP packets for a few
seconds (the queue stays full, so the link is always busy); the emulator's
summary gives, for every packet, |actual write time - scheduled time| (p50,
p99, p99.9), the rate it delivered against the rate it was set to, and the
drops. The emulator's CPU use comes from /proc.

Needs root, /dev/net/tun, iproute2 and a built binary
(``cargo build --release -p latlab-net``). Run from the source tree::

    python3 benches/emulate_timing.py                      # 10, 100, 500 Mbit/s
    python3 benches/emulate_timing.py --rates 500 800 1000 --seconds 3

Timing figures depend on how busy the machine is: run it on an idle one.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from latlab.real import tcpmem

ROOT = Path(__file__).resolve().parents[1]
BINARY = Path(os.environ.get("LATLAB_NET_BIN", ROOT / "target" / "release" / "latlab-net"))

SCENARIO = """
name = "emulate-timing-{mbit}"
duration_s = 10
sample_interval_ms = 100
[topology]
kind = "custom"
nodes = [{{ name = "client" }}, {{ name = "server" }}]
[[topology.links]]
from = "client"
to = "server"
rate_bps = {rate_bps}
delay_ms = 10
queue = {{ kind = "droptail", limit_bytes = {limit_bytes} }}
"""

# Offers `rate` bit/s of 1500-byte IP packets (1472-byte UDP payloads) to
# ADDR:9 for SECONDS, sending each millisecond's packets in one burst.
SOURCE = r"""
import socket, sys, time
addr, rate, seconds = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)
payload = b"x" * 1472
per_ms = rate / 8 / 1500 / 1000
t0 = time.monotonic(); sent = 0; owed = 0.0; errors = 0
while True:
    now = time.monotonic()
    if now - t0 >= seconds:
        break
    due = (now - t0) * 1000 * per_ms
    while sent < due:
        try:
            s.sendto(payload, (addr, 9))
        except OSError:
            errors += 1
        sent += 1
    time.sleep(0.0002)
print(sent, errors)
"""

# Binds the discard port so that packets are not answered with ICMP; never reads.
SINK = "import socket, time; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('0.0.0.0', 9)); time.sleep(3600)"


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_one(mbit: float, seconds: float, workdir: Path, extra: list[str]) -> dict:
    rate_bps = mbit * 1e6
    scenario = workdir / f"path-{mbit:g}.toml"
    scenario.write_text(
        SCENARIO.format(mbit=mbit, rate_bps=rate_bps, limit_bytes=int(rate_bps / 8 * 0.100))
    )
    out = workdir / f"out-{mbit:g}"
    emu = subprocess.Popen(
        [str(BINARY), "emulate", str(scenario), "--stay", "--quiet", "--out", str(out), *extra],
        stdout=subprocess.PIPE,
        text=True,
    )
    sink = None
    try:
        ready = json.loads(emu.stdout.readline())
        sink = subprocess.Popen(
            ["ip", "netns", "exec", ready["server_ns"], sys.executable, "-c", SINK]
        )
        time.sleep(0.3)
        cpu0, t0 = cpu_seconds(emu.pid), time.monotonic()
        src = subprocess.run(
            [
                "ip",
                "netns",
                "exec",
                ready["client_ns"],
                sys.executable,
                "-c",
                SOURCE,
                ready["server_addr"],
                str(rate_bps * 1.05),
                str(seconds),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        time.sleep(0.2)
        cpu = (cpu_seconds(emu.pid) - cpu0) / (time.monotonic() - t0)
    finally:
        if sink is not None:
            sink.kill()
            sink.wait()
        emu.terminate()
        emu.wait(timeout=30)
    s = json.loads((out / "summary.json").read_text())
    up = s["up"]
    sent = int(src.stdout.split()[0])
    return {
        "link_mbit": mbit,
        "sent_pkts": sent,
        "offered_mbit": sent * 1500 * 8 / seconds / 1e6,
        "read_pkts": up["read_pkts"],
        "delivered_pkts": up["delivered_pkts"],
        "queue_drops_pkts": up["queue_drops_pkts"],
        "delivered_mbit": (up["delivered_rate_bps"] or 0) / 1e6,
        "scheduled_mbit": (up["scheduled_rate_bps"] or 0) / 1e6,
        "rate_error_pct": 100 * ((up["delivered_rate_bps"] or 0) / rate_bps - 1),
        "timing": up["timing_error"],
        "emulator_cpu_pct": 100 * cpu,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--rates", type=float, nargs="+", default=[10, 100, 500], help="link rates, Mbit/s"
    )
    ap.add_argument("--seconds", type=float, default=3.0, help="how long to offer traffic per rate")
    ap.add_argument(
        "--realtime", type=int, metavar="PRIO", help="pass --realtime PRIO to the emulator"
    )
    ap.add_argument("--spin-us", type=float, help="pass --spin-us US to the emulator")
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args()
    if os.geteuid() != 0 or not Path("/dev/net/tun").exists():
        print("skipped: needs root and /dev/net/tun", file=sys.stderr)
        return 0
    if not BINARY.is_file():
        print(f"build {BINARY} first: cargo build --release -p latlab-net", file=sys.stderr)
        return 1
    rows = []
    with tempfile.TemporaryDirectory(prefix="latlab-emu-bench-") as d:
        for mbit in args.rates:
            extra = ["--realtime", str(args.realtime)] if args.realtime else []
            extra += ["--spin-us", str(args.spin_us)] if args.spin_us is not None else []
            rows.append(run_one(mbit, args.seconds, Path(d), extra))
    print(
        "| link Mbit/s | offered Mbit/s | delivered (scheduled) Mbit/s | rate error | timing error p50 / p99 / p99.9 / max (us) "
        "| lost before the emulator | queue drops | emulator CPU |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        t = r["timing"] or {}
        kernel_loss = 1 - r["read_pkts"] / max(r["sent_pkts"], 1)
        print(
            f"| {r['link_mbit']:g} | {r['offered_mbit']:.1f} | {r['delivered_mbit']:.3f} ({r['scheduled_mbit']:.3f}) | {r['rate_error_pct']:+.3f}% "
            f"| {t.get('p50_us', 0):.1f} / {t.get('p99_us', 0):.1f} / {t.get('p999_us', 0):.1f} / {t.get('max_us', 0):.0f} "
            f"| {100 * kernel_loss:.2f}% | {r['queue_drops_pkts']} | {r['emulator_cpu_pct']:.0f}% |"
        )
    print(f"\n{tcpmem.describe()}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
