#!/usr/bin/env python3
"""RED at a core buffer of a few packets: latlab against ns-3, early and forced drops side by side.

The small-buffer pacing study's experiment G puts RED at the core with
max_th = the buffer, min_th = 40 % of it (in 1000-B packets), max_p 0.1 and
w_q 0.002. In latlab those runs equal DropTail's at 2 and 5 KB to the last
digit. This script asks whether ns-3's RedQueueDisc (a port of ns-2's red.cc)
does the same on the same small buffers, on a cheaper twin of the study's
set-up: N NewReno flows over a dumbbell whose core carries N × 100 kbit/s
(the study's per-flow share), 100 ms core delay, 10 Mbit/s access links with
6–20 ms delays, 1000-B packets (960 B payload), IW 10, min RTO 200 ms, one ACK
per segment, no SACK or timestamps.

For each buffer B (packets) and queue (DropTail, RED with wait, RED without
wait) it prints aggregate goodput and the core's drops, split as each
simulator counts them:

* latlab: `drops_pkts` and `drops_early_pkts` of the links table;
* ns-3: the queue disc's drops by reason: "Unforced drop" (early); the rest
  are forced: "Forced drop" (avg above max_th), "Dropped by internal queue"
  (RED's buffer full) or FifoQueueDisc's "Queue disc limit exceeded".

ns-3 settings (as benches/ns3_dumbbell.py): the core's RED or FIFO queue disc
holds the buffer (MaxSize B packets) over a 1-packet device queue; access
devices keep a 1000-packet DropTail device queue and no queue disc.
RED: MinTh, MaxTh, QW, LInterm = 1/max_p, Wait, Gentle off, MeanPktSize 1000,
LinkBandwidth/LinkDelay of the core; byte mode off (thresholds in packets).

    python3.11 -m venv /tmp/ns3venv && /tmp/ns3venv/bin/pip install ns3 pyarrow pandas
    PYTHONPATH=python /tmp/ns3venv/bin/python benches/validation/red_small_buffer.py

(latlab's side needs the built extension: run it with the project's
.venv/bin/python and pass --ns3-python /tmp/ns3venv/bin/python, which runs
each ns-3 point in a subprocess of that interpreter.)
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time

PAYLOAD = 960
PORT = 9
KINDS = ("droptail", "red", "red-nowait")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--flows", type=int, default=100, help="sender/receiver pairs (100)")
    p.add_argument("--buffers", default="2,5,10", help="core buffers in 1000-B packets (2,5,10)")
    p.add_argument("--duration", type=float, default=60.0, help="simulated seconds (60)")
    p.add_argument("--measure-from", type=float, default=20.0, help="goodput window start, s (20)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument(
        "--ns3-python",
        default=None,
        help="interpreter with the ns3 package (default: this one, if it can import ns)",
    )
    p.add_argument("--skip-ns3", action="store_true", help="latlab only")
    p.add_argument("--json", action="store_true", help="one JSON line per point")
    p.add_argument(
        "--markdown", default=None, help="write the comparison as a Markdown page to this path"
    )
    p.add_argument(
        "--from-jsonl",
        default=None,
        help="render --markdown from the JSON lines of an earlier --json run (nothing is simulated)",
    )
    p.add_argument(
        "--one", default=None, help=argparse.SUPPRESS
    )  # internal: KIND:BUFFER, ns-3 only
    args = p.parse_args(argv)
    if args.flows < 1 or args.duration <= args.measure_from or args.measure_from < 0:
        p.error("--flows must be >= 1 and 0 <= --measure-from < --duration")
    try:
        args.buffers = [int(b) for b in args.buffers.split(",")]
    except ValueError:
        p.error(
            f"--buffers: expected comma-separated whole numbers of packets, got {args.buffers!r}"
        )
    if any(b < 1 for b in args.buffers):
        p.error("--buffers: every buffer must be at least 1 packet")
    return args


def draws(args):
    """Access delays and start times, the same on both sides."""
    rng = random.Random(args.seed)
    return [
        (rng.uniform(6.0, 20.0), rng.uniform(6.0, 20.0), rng.uniform(0.0, 10.0))
        for _ in range(args.flows)
    ]


def red_params(buffer_pkts: int) -> dict:
    return {"min_th": 0.4 * buffer_pkts, "max_th": float(buffer_pkts), "max_p": 0.1, "w_q": 0.002}


# ----- latlab ------------------------------------------------------------------------------------------


def latlab_point(args, kind: str, buffer_pkts: int) -> dict:
    import latlab

    core_rate = args.flows * 100e3
    d = draws(args)
    names = (
        ["r1", "r2"] + [f"s{i}" for i in range(args.flows)] + [f"d{i}" for i in range(args.flows)]
    )
    nodes = [{"name": n} for n in names]
    if kind == "droptail":
        queue = {"kind": "droptail", "limit_packets": buffer_pkts}
    else:
        queue = {
            "kind": "red",
            "limit_packets": buffer_pkts,
            **red_params(buffer_pkts),
            "wait": kind == "red",
        }
    # The core's reverse direction (ACKs) keeps latlab's default deep DropTail, as ns-3's 1000-packet device queue.
    links = [
        {
            "from": "r1",
            "to": "r2",
            "rate_bps": core_rate,
            "delay_ms": 100.0,
            "queue": queue,
            "duplex": False,
        },
        {"from": "r2", "to": "r1", "rate_bps": core_rate, "delay_ms": 100.0, "duplex": False},
    ]
    for i, (a, b, _) in enumerate(d):
        links.append({"from": f"s{i}", "to": "r1", "rate_bps": 10e6, "delay_ms": a})
        links.append({"from": "r2", "to": f"d{i}", "rate_bps": 10e6, "delay_ms": b})
    flows = [
        {"name": f"f{i}", "src": f"s{i}", "dst": f"d{i}", "cc": "newreno", "start_s": s}
        for i, (_, _, s) in enumerate(d)
    ]
    sc = {
        "name": f"red-small-{kind}-{buffer_pkts}",
        "seed": args.seed,
        "duration_s": args.duration,
        "measure_from_s": args.measure_from,
        "sample_interval_ms": 1000,
        "tcp": {"preset": "ns2", "min_rto_ms": 200},
        "topology": {"kind": "custom", "nodes": nodes, "links": links},
        "flows": flows,
        "outputs": {"max_sampled_flows": 0},
    }
    t0 = time.perf_counter()
    res = latlab.run(sc)
    wall = time.perf_counter() - t0
    core = res.links[res.links["name"] == "r1->r2"].iloc[0]
    return {
        "simulator": "latlab",
        "kind": kind,
        "buffer_pkts": buffer_pkts,
        "wall_s": round(wall, 2),
        "goodput_mbps": round(float(res.flows["goodput_bps"].sum()) / 1e6, 3),
        "core_drops": int(core["drops_pkts"]),
        "early_drops": int(core["drops_early_pkts"]),
        "forced_drops": int(core["drops_pkts"] - core["drops_early_pkts"]),
        "core_arrivals": int(core["arrivals_pkts"]),
    }


# ----- ns-3 ----------------------------------------------------------------------------------------------


def ns3_point(args, kind: str, buffer_pkts: int) -> dict:
    from ns import ns

    ns.cppyy.cppdef("""
        namespace latlab_red {
        ns3::EventImpl* PyEvent(void (*f)()) { return ns3::MakeEvent(f); }
        }""")
    py_event = ns.cppyy.gbl.latlab_red.PyEvent
    core_rate = args.flows * 100e3
    cfg = ns.Config.SetDefault
    cfg("ns3::TcpL4Protocol::SocketType", ns.TypeIdValue(ns.TcpNewReno.GetTypeId()))
    cfg("ns3::TcpL4Protocol::RecoveryType", ns.TypeIdValue(ns.TcpClassicRecovery.GetTypeId()))
    cfg("ns3::TcpSocket::SegmentSize", ns.UintegerValue(PAYLOAD))
    cfg("ns3::TcpSocket::InitialCwnd", ns.UintegerValue(10))
    cfg("ns3::TcpSocket::DelAckCount", ns.UintegerValue(1))
    cfg("ns3::TcpSocket::SndBufSize", ns.UintegerValue(512 * 1024))
    cfg("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(512 * 1024))
    cfg("ns3::TcpSocketBase::MinRto", ns.TimeValue(ns.MilliSeconds(200)))
    cfg("ns3::TcpSocketBase::Timestamp", ns.BooleanValue(False))
    cfg("ns3::TcpSocketBase::Sack", ns.BooleanValue(False))
    cfg("ns3::Ipv4::StrongEndSystemModel", ns.BooleanValue(True))

    n = args.flows
    senders, receivers, routers = ns.NodeContainer(), ns.NodeContainer(), ns.NodeContainer()
    senders.Create(n)
    receivers.Create(n)
    routers.Create(2)
    r1, r2 = routers.Get(0), routers.Get(1)
    stack = ns.InternetStackHelper()
    for c in (senders, receivers, routers):
        stack.Install(c)
    addr = ns.Ipv4AddressHelper()
    addr.SetBase(ns.Ipv4Address("10.0.0.0"), ns.Ipv4Mask("255.255.255.252"))
    tch = ns.TrafficControlHelper()

    def link(a, b, rate_bps, delay_ms, device_queue):
        p2p = ns.PointToPointHelper()
        p2p.SetDeviceAttribute("DataRate", ns.DataRateValue(ns.DataRate(int(rate_bps))))
        p2p.SetChannelAttribute("Delay", ns.TimeValue(ns.MicroSeconds(round(delay_ms * 1000))))
        p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", ns.StringValue(device_queue))
        devs = p2p.Install(a, b)
        ifaces = addr.Assign(devs)
        addr.NewNetwork()
        tch.Uninstall(devs)
        return devs, ifaces

    core_devs, _ = link(r1, r2, core_rate, 100.0, "1p")
    # Only r1's device has the 1-packet device queue under the queue disc; the ACK direction gets 1000 packets.
    core_devs.Get(1).GetObject[ns.PointToPointNetDevice]().GetQueue().SetMaxSize(
        ns.QueueSize("1000p")
    )
    core_tch = ns.TrafficControlHelper()
    if kind == "droptail":
        cfg("ns3::FifoQueueDisc::MaxSize", ns.QueueSizeValue(ns.QueueSize(f"{buffer_pkts}p")))
        core_tch.SetRootQueueDisc("ns3::FifoQueueDisc")
    else:
        p = red_params(buffer_pkts)
        # Attributes as defaults: the helper's variadic attribute list does not cross cppyy well.
        red = "ns3::RedQueueDisc::"
        cfg(red + "MaxSize", ns.QueueSizeValue(ns.QueueSize(f"{buffer_pkts}p")))
        cfg(red + "MinTh", ns.DoubleValue(p["min_th"]))
        cfg(red + "MaxTh", ns.DoubleValue(p["max_th"]))
        cfg(red + "QW", ns.DoubleValue(p["w_q"]))
        cfg(red + "LInterm", ns.DoubleValue(1.0 / p["max_p"]))
        cfg(red + "Wait", ns.BooleanValue(kind == "red"))
        cfg(red + "Gentle", ns.BooleanValue(False))
        cfg(red + "MeanPktSize", ns.UintegerValue(1000))
        cfg(red + "LinkBandwidth", ns.DataRateValue(ns.DataRate(int(core_rate))))
        cfg(red + "LinkDelay", ns.TimeValue(ns.MilliSeconds(100)))
        core_tch.SetRootQueueDisc("ns3::RedQueueDisc")
    qdiscs = core_tch.Install(core_devs.Get(0))
    qdisc = qdiscs.Get(0)

    d = draws(args)
    sink_addrs = []
    for i, (a, b, _) in enumerate(d):
        link(senders.Get(i), r1, 10e6, a, "1000p")
        _, ifaces = link(r2, receivers.Get(i), 10e6, b, "1000p")
        sink_addrs.append(ifaces.GetAddress(1))
    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()

    stop = ns.Seconds(args.duration)
    sink_apps = ns.PacketSinkHelper(
        "ns3::TcpSocketFactory", ns.InetSocketAddress(ns.Ipv4Address.GetAny(), PORT).ConvertTo()
    ).Install(receivers)
    sink_apps.Start(ns.Seconds(0))
    sink_apps.Stop(stop)
    sinks = [sink_apps.Get(i).GetObject[ns.PacketSink]() for i in range(n)]
    for i, (_, _, start) in enumerate(d):
        bulk = ns.BulkSendHelper(
            "ns3::TcpSocketFactory", ns.InetSocketAddress(sink_addrs[i], PORT).ConvertTo()
        )
        bulk.SetAttribute("MaxBytes", ns.UintegerValue(0))
        bulk.SetAttribute("SendSize", ns.UintegerValue(PAYLOAD))
        app = bulk.Install(senders.Get(i))
        app.Start(ns.MicroSeconds(round(start * 1e6)))
        app.Stop(stop)
    rx = {}

    def snap():
        rx["start"] = sum(s.GetTotalRx() for s in sinks)

    cb = snap  # keep the callback alive for cppyy
    ns.Simulator.Schedule(ns.Seconds(args.measure_from), py_event(cb))
    ns.Simulator.Stop(stop)
    t0 = time.perf_counter()
    ns.Simulator.Run()
    wall = time.perf_counter() - t0
    end = sum(s.GetTotalRx() for s in sinks)
    st = qdisc.GetStats()
    by = {
        r: int(st.GetNDroppedPackets(r))
        for r in ("Unforced drop", "Forced drop", "Dropped by internal queue")
    }
    out = {
        "simulator": "ns-3",
        "kind": kind,
        "buffer_pkts": buffer_pkts,
        "wall_s": round(wall, 2),
        "goodput_mbps": round(
            (end - rx["start"]) * 8 / (args.duration - args.measure_from) / 1e6, 3
        ),
        "core_drops": int(st.nTotalDroppedPackets),
        "early_drops": by["Unforced drop"],
        # everything not early is forced (FifoQueueDisc names its own reason, "Queue disc limit exceeded")
        "forced_drops": int(st.nTotalDroppedPackets) - by["Unforced drop"],
        "forced_avg_drops": by["Forced drop"],
        "queue_full_drops": by["Dropped by internal queue"],
        "core_arrivals": int(st.nTotalReceivedPackets),
    }
    ns.Simulator.Destroy()
    return out


def ns3_subprocess(args, python: str, kind: str, buffer_pkts: int) -> dict | None:
    cmd = [
        python,
        __file__,
        "--one",
        f"{kind}:{buffer_pkts}",
        "--flows",
        str(args.flows),
        "--duration",
        str(args.duration),
        "--measure-from",
        str(args.measure_from),
        "--seed",
        str(args.seed),
    ]
    r = subprocess.run(cmd, capture_output=True, text=True)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    if r.returncode != 0 or not lines:
        print(
            f"ns-3 point {kind} {buffer_pkts}p failed (exit {r.returncode}): {r.stderr.strip()[-400:]}",
            file=sys.stderr,
        )
        return None
    return json.loads(lines[-1])


def nowait_sentence(by: dict, sims: list[str], buffers: list[int]) -> str:
    """Where RED without wait drops early, per simulator (measured, not assumed)."""
    parts = []
    for s in sims:
        at = [b for b in buffers if by.get((s, "red-nowait", b), {}).get("early_drops", 0) > 0]
        parts.append(f"{s} at {', '.join(f'{b}' for b in at)} packets" if at else f"{s} nowhere")
    return "Without `wait_` RED drops early in " + "; ".join(parts) + ". "


def render(rows: list[dict], args, command: str) -> str:
    """The comparison as Markdown: a table per simulator and buffer, then what follows from the numbers."""
    by = {(r["simulator"], r["kind"], r["buffer_pkts"]): r for r in rows}
    sims = [s for s in ("latlab", "ns-3") if any(r["simulator"] == s for r in rows)]
    buffers = sorted({r["buffer_pkts"] for r in rows})
    out = [
        "# RED at a core buffer of a few packets: latlab and ns-3\n",
        "Generated by `"
        + command
        + "`. The set-up (a cheaper twin of the small-buffer pacing study's experiment "
        f"G): {args.flows} NewReno flows over a dumbbell whose core carries {args.flows} × 100 kbit/s with a "
        "100 ms delay; 10 Mbit/s access links with 6–20 ms delays drawn once and shared by both simulators, "
        "start times uniform in [0, 10] s; 1000-B packets (960 B payload), IW 10, min RTO 200 ms, an ACK per "
        "segment, no SACK or timestamps. RED as in G: min_th = 0.4·B, max_th = B (packets), max_p 0.1, w_q "
        "0.002, gentle off, limit B packets; *without wait* turns ns-2's `wait_` rule off. "
        f"{args.duration:g} s simulated, goodput over [{args.measure_from:g}, {args.duration:g}] s; drops and "
        "arrivals over the whole run. ns-3's buffer is B packets in the queue disc plus one in the device queue "
        "under it.\n",
        "| buffer | queue | "
        + " | ".join(f"{s}: goodput (Mbit/s) | {s}: drops (early)" for s in sims)
        + " |",
        "|---|---|" + "---|---|" * len(sims),
    ]
    for b in buffers:
        for k in KINDS:
            cells = []
            for s in sims:
                r = by.get((s, k, b))
                cells += (
                    [f"{r['goodput_mbps']:.3f}", f"{r['core_drops']} ({r['early_drops']})"]
                    if r
                    else ["", ""]
                )
            label = {"droptail": "DropTail", "red": "RED", "red-nowait": "RED without wait"}[k]
            out.append(f"| {b} pkt | {label} | " + " | ".join(cells) + " |")
    out.append("")
    notes = []
    for s in sims:
        same = [
            b
            for b in buffers
            if by.get((s, "red", b))
            and by.get((s, "droptail", b))
            and by[(s, "red", b)]["early_drops"] == 0
            and by[(s, "red", b)]["core_drops"] == by[(s, "droptail", b)]["core_drops"]
            and by[(s, "red", b)]["goodput_mbps"] == by[(s, "droptail", b)]["goodput_mbps"]
        ]
        early = {b: by[(s, "red", b)]["early_drops"] for b in buffers if (s, "red", b) in by}
        notes.append(
            f"* **{s}**: RED with wait drops early "
            + ", ".join(f"{n} times at {b} pkt" for b, n in early.items())
            + (
                f"; at {', '.join(f'{b} pkt' for b in same)} it is DropTail exactly (same drops, same goodput)"
                if same
                else ""
            )
            + "."
        )
    out += notes
    walls = {s: [r["wall_s"] for r in rows if r["simulator"] == s and "wall_s" in r] for s in sims}
    if all(walls.values()):
        out.append(
            "* Run time per point (the simulation alone; this 2-core VM was shared with other jobs): "
            + "; ".join(f"{s} {min(w):.1f}–{max(w):.1f} s" for s, w in walls.items())
            + "."
        )
    out.append("")
    out.append(
        "What the numbers show, and why. RED considers an early drop only when the queue already holds more than "
        "one packet (ns-2 red.cc and ns-3 RedQueueDisc both test `qlen > 1`), so in a 2-packet buffer every arrival "
        "RED could drop early finds the buffer full: both simulators' RED equals their DropTail there. At a few "
        "packets the two simulators part. ns-2's red.cc resets `count` (arrivals since the last drop) at every "
        "forced drop, a queue overflow included (the Philip Liu fix, skipped only with `ns1_compat_`), and latlab "
        "follows it; with `wait_` no early drop happens while count·p_b < 1, and overflows every ten to a few "
        "tens of arrivals keep count below 1/p_b ≥ 10. ns-3 resets `count` on an average-above-max_th drop only "
        "*when* Ns1Compat is set (the condition is inverted), and a drop by its internal queue when the buffer is "
        "full does not touch `count` at all, so count keeps growing across overflows and early drops do happen. "
        + nowait_sentence(by, sims, buffers)
        + "The goodput gap between the simulators at "
        "the same queue (present for DropTail too) is not RED's: it belongs to the ns-3 fidelity grid "
        "(benches/validation, docs/validation). ns-3 is the PyPI package `ns3` 3.44; the raw rows are in "
        "red-small-buffer.jsonl beside this page (re-render with `--from-jsonl`).\n"
    )
    return "\n".join(out) + "\n"


def main(argv=None):
    args = parse_args(argv)
    words = list(sys.argv[1:] if argv is None else argv)
    if "--from-jsonl" in words:  # the page names the command that simulated, not the re-render
        i = words.index("--from-jsonl")
        del words[i : i + 2]
    command = "python benches/validation/red_small_buffer.py " + " ".join(words)
    if args.from_jsonl:
        if not args.markdown:
            print("--from-jsonl needs --markdown PATH", file=sys.stderr)
            return 2
        with open(args.from_jsonl) as f:
            rows = [json.loads(ln) for ln in f if ln.startswith("{")]
        with open(args.markdown, "w") as f:
            f.write(render(rows, args, command))
        return 0
    if args.one:
        kind, b = args.one.split(":")
        print(json.dumps(ns3_point(args, kind, int(b))), flush=True)
        return 0
    ns3_python = None
    if not args.skip_ns3:
        ns3_python = args.ns3_python or sys.executable
        probe = subprocess.run([ns3_python, "-c", "import ns3"], capture_output=True)
        if probe.returncode != 0:
            print(
                f"ns-3 skipped: {ns3_python} cannot import the ns3 package (pip install ns3; or --ns3-python PY)",
                file=sys.stderr,
            )
            ns3_python = None
    rows = []
    for b in args.buffers:
        for kind in KINDS:
            pts = [latlab_point(args, kind, b)]
            if ns3_python:
                p = ns3_subprocess(args, ns3_python, kind, b)
                if p:
                    pts.append(p)
            for p in pts:
                rows.append(p)
                if args.json:
                    print(json.dumps(p), flush=True)
                else:
                    print(
                        f"{p['simulator']:7s} {kind:10s} {b:3d} pkt  goodput {p['goodput_mbps']:7.3f} Mbit/s  "
                        f"core drops {p['core_drops']:7d} = early {p['early_drops']:6d} + forced "
                        f"{p['forced_drops']:7d} of {p['core_arrivals']} arrivals  (wall {p['wall_s']} s)",
                        flush=True,
                    )
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(render(rows, args, command))
    return 0


if __name__ == "__main__":
    sys.exit(main())
