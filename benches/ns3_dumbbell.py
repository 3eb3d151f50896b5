#!/usr/bin/env python3
"""ns-3 twin of latlab's `dumbbell-1000` benchmark, for side-by-side timing.

N senders s_i -- R1 ==core== R2 -- d_i receivers.  Access links: 10 Mbps, a
propagation delay drawn uniform in [6, 20] ms independently for every access
link (sender side and receiver side).  Core: 100 Mbps, 100 ms, 10000-byte
DropTail device queue.  One NewReno bulk flow per pair, started uniform in
[0, 10] s.  Needs the optional PyPI package `ns3` (3.44, cppyy bindings):

    python3.11 -m venv /tmp/ns3venv && /tmp/ns3venv/bin/pip install ns3
    /tmp/ns3venv/bin/python benches/ns3_dumbbell.py --flows 1000 --duration 400

Modelling choices (see benches/README.md):
* Queues: the traffic-control layer is removed from every device with
  TrafficControlHelper.Uninstall (Ipv4AddressHelper.Assign otherwise adds an
  FqCoDel root qdisc), so the PointToPoint device DropTail queue is the only
  queue: 10000 B on both core devices, 1000 packets on access devices.
* Sizes: SegmentSize 960, Timestamp and SACK options off, so data packets
  are 960 + 20 TCP + 20 IP = 1000 B IP; ns-3's PointToPoint adds a 2-byte PPP
  header, so 1002 B (and 42 B ACKs) are serialised on the wire.
* TCP: TcpNewReno with TcpClassicRecovery (ns-3's default recovery is PRR),
  InitialCwnd 10, MinRto 200 ms, DelAckCount 1, 512 KB socket buffers (above
  the 10 Mbps x 280 ms worst-case BDP, so the receive window never binds).
* Routers: Ipv4::StrongEndSystemModel on.  With ns-3's default weak model,
  every packet a router forwards is first compared with the addresses of all
  its 1001 interfaces; no packet here is addressed to a router, so results
  are identical (same events, same goodput) and runs 1.7-2.8x faster.
  --weak-es restores ns-3's default.
"""

import argparse
import json
import random
import resource
import sys
import time

PORT = 9


def rss_mb():
    # ru_maxrss is in KiB on Linux: the process's peak resident set so far.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def cpu_s():
    # user + system CPU seconds: steadier than wall time on a shared machine.
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--flows", type=int, default=1000, help="sender/receiver pairs (1000)")
    p.add_argument("--duration", type=float, default=400.0, help="simulated seconds (400)")
    p.add_argument("--seed", type=int, default=1, help="seed for delays and start times (1)")
    p.add_argument("--json", action="store_true", help="print one JSON line with the figures")
    p.add_argument(
        "--progress", action="store_true", help="print simulated time to stderr every duration/20 s"
    )
    p.add_argument(
        "--weak-es",
        action="store_true",
        help="keep ns-3's default weak end-system model (slower, same results)",
    )
    return p.parse_args()


def main():
    args = parse_args()
    if args.flows < 1 or args.duration <= 0:
        sys.exit("--flows must be >= 1 and --duration > 0")
    t_import = time.perf_counter()
    try:
        from ns import ns  # cppyy JIT-parses all ns-3 headers: slow the first time
    except ImportError:
        sys.exit("ns3_dumbbell.py needs the ns-3 Python bindings: pip install ns3  (ns-3 3.44)")
    import_s = time.perf_counter() - t_import
    try:
        from importlib.metadata import version

        ns3_version = version("ns3")
    except Exception:  # a source build on PYTHONPATH has no wheel metadata
        ns3_version = "unknown"
    rss_import = rss_mb()

    # Python callables are handed to Simulator::Schedule through a C++ function
    # pointer: cppyy turns the Python function into a `void (*)()` for us.
    ns.cppyy.cppdef("""
        namespace latlab_bench {
        ns3::EventImpl* PyEvent(void (*f)()) { return ns3::MakeEvent(f); }
        }""")
    py_event = ns.cppyy.gbl.latlab_bench.PyEvent

    rng = random.Random(args.seed)
    ns.RngSeedManager.SetSeed(max(1, args.seed))  # ns-3's own streams, should anything draw
    t_setup = time.perf_counter()

    # --- TCP defaults: must be set before any socket is created ---
    cfg = ns.Config.SetDefault
    cfg("ns3::TcpL4Protocol::SocketType", ns.TypeIdValue(ns.TcpNewReno.GetTypeId()))
    cfg("ns3::TcpL4Protocol::RecoveryType", ns.TypeIdValue(ns.TcpClassicRecovery.GetTypeId()))
    cfg("ns3::TcpSocket::SegmentSize", ns.UintegerValue(960))
    cfg("ns3::TcpSocket::InitialCwnd", ns.UintegerValue(10))
    cfg("ns3::TcpSocket::DelAckCount", ns.UintegerValue(1))
    cfg("ns3::TcpSocket::SndBufSize", ns.UintegerValue(512 * 1024))
    cfg("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(512 * 1024))
    cfg("ns3::TcpSocketBase::MinRto", ns.TimeValue(ns.MilliSeconds(200)))
    cfg("ns3::TcpSocketBase::Timestamp", ns.BooleanValue(False))  # else +12 B per segment
    cfg("ns3::TcpSocketBase::Sack", ns.BooleanValue(False))  # plain NewReno, no SACK blocks
    # On Ipv4, not Ipv4L3Protocol: SetDefault on a wrong name is NS_FATAL (aborts).
    cfg("ns3::Ipv4::StrongEndSystemModel", ns.BooleanValue(not args.weak_es))

    # --- nodes ---
    n = args.flows
    senders, receivers, routers = ns.NodeContainer(), ns.NodeContainer(), ns.NodeContainer()
    senders.Create(n)
    receivers.Create(n)
    routers.Create(2)
    r1, r2 = routers.Get(0), routers.Get(1)
    stack = ns.InternetStackHelper()
    for c in (senders, receivers, routers):
        stack.Install(c)

    # --- links; every link is its own /30 subnet ---
    addr = ns.Ipv4AddressHelper()
    addr.SetBase(ns.Ipv4Address("10.0.0.0"), ns.Ipv4Mask("255.255.255.252"))
    tch = ns.TrafficControlHelper()

    def link(a, b, rate, delay_ms, queue):
        p2p = ns.PointToPointHelper()
        p2p.SetDeviceAttribute("DataRate", ns.StringValue(rate))
        p2p.SetChannelAttribute("Delay", ns.TimeValue(ns.MicroSeconds(round(delay_ms * 1000))))
        p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", ns.StringValue(queue))
        devs = p2p.Install(a, b)
        ifaces = addr.Assign(devs)
        addr.NewNetwork()
        tch.Uninstall(devs)  # drop the default qdisc: the device queue is the only queue
        return ifaces

    link(r1, r2, "100Mbps", 100.0, "10000B")
    sink_addrs = []
    for i in range(n):
        link(senders.Get(i), r1, "10Mbps", rng.uniform(6.0, 20.0), "1000p")
        ifaces = link(r2, receivers.Get(i), "10Mbps", rng.uniform(6.0, 20.0), "1000p")
        sink_addrs.append(ifaces.GetAddress(1))
    # Global routing gives every node one route per /30 (2N+1 of them) and
    # ns-3 scans that list linearly per lookup; it is part of ns-3's cost.
    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()

    # --- applications ---
    stop = ns.Seconds(args.duration)
    sink_helper = ns.PacketSinkHelper(
        "ns3::TcpSocketFactory", ns.InetSocketAddress(ns.Ipv4Address.GetAny(), PORT).ConvertTo()
    )
    sink_apps = sink_helper.Install(receivers)
    sink_apps.Start(ns.Seconds(0))
    sink_apps.Stop(stop)
    sinks = [sink_apps.Get(i).GetObject[ns.PacketSink]() for i in range(n)]
    for i in range(n):
        bulk = ns.BulkSendHelper(
            "ns3::TcpSocketFactory", ns.InetSocketAddress(sink_addrs[i], PORT).ConvertTo()
        )
        bulk.SetAttribute("MaxBytes", ns.UintegerValue(0))  # unlimited
        bulk.SetAttribute("SendSize", ns.UintegerValue(960))  # one segment per write
        app = bulk.Install(senders.Get(i))
        app.Start(ns.MicroSeconds(round(rng.uniform(0.0, 10.0) * 1e6)))
        app.Stop(stop)

    # --- measurement: bytes delivered to all sinks (= payload that crossed the
    # core) at the window start and at the end ---
    window_start = 100.0 if args.duration >= 100.0 else 0.0
    rx = {}

    def snapshot(key):
        rx[key] = sum(s.GetTotalRx() for s in sinks)

    if window_start > 0:
        # Keep a reference to each Python callback: cppyy's wrapper must outlive it.
        snap_cb = lambda: snapshot("start")  # noqa: E731
        ns.Simulator.Schedule(ns.Seconds(window_start), py_event(snap_cb))
    else:
        rx["start"] = 0

    # Simulator::GetEventCount exists in 3.44: events popped from the scheduler
    # so far, including timers that were cancelled (ns-3 cancels lazily).
    # Guarded so the script still reports "n/a" on builds without it.
    event_count = getattr(ns.Simulator, "GetEventCount", None)
    wall0 = [0.0]
    step = args.duration / 20.0

    def progress():
        now = ns.Simulator.Now().GetSeconds()
        print(
            f"[ns3_dumbbell] sim {now:7.1f} s / {args.duration:g} s  "
            f"wall {time.perf_counter() - wall0[0]:8.1f} s  "
            f"events {event_count() if event_count else 'n/a'}",
            file=sys.stderr,
            flush=True,
        )
        if now + step < args.duration:
            ns.Simulator.Schedule(ns.Seconds(step), py_event(progress))

    if args.progress:
        ns.Simulator.Schedule(ns.Seconds(step), py_event(progress))

    setup_s = time.perf_counter() - t_setup
    ns.Simulator.Stop(stop)
    cpu0, wall0[0] = cpu_s(), time.perf_counter()
    ns.Simulator.Run()
    run_s = time.perf_counter() - wall0[0]
    run_cpu_s = cpu_s() - cpu0
    snapshot("end")

    events = int(event_count()) if event_count else None
    sim_s = ns.Simulator.Now().GetSeconds()
    span = args.duration - window_start
    goodput_mbps = (rx["end"] - rx["start"]) * 8 / span / 1e6
    out = {
        "scenario": "dumbbell",
        "simulator": "ns-3 " + ns3_version,
        "flows": n,
        "strong_es": not args.weak_es,
        "duration_s": args.duration,
        "seed": args.seed,
        "import_s": round(import_s, 2),
        "setup_s": round(setup_s, 2),
        "wall_s": round(run_s, 3),
        "cpu_s": round(run_cpu_s, 3),
        "sim_s": sim_s,
        "events": events,
        "events_per_s": round(events / run_s) if events is not None and run_s > 0 else None,
        "goodput_window_s": [window_start, args.duration],
        "core_goodput_mbps": round(goodput_mbps, 3),
        "mean_flow_goodput_kbps": round(goodput_mbps * 1000 / n, 3),
        "rss_after_import_mb": round(rss_import, 1),
        "peak_rss_mb": round(rss_mb(), 1),
    }
    ns.Simulator.Destroy()
    if args.json:
        print(json.dumps(out))
        return
    na = lambda v: "n/a" if v is None else v  # noqa: E731
    print(
        f"ns-3 {ns3_version} dumbbell: {n} flows, {args.duration:g} s simulated, "
        f"seed {args.seed}{', weak ES' if args.weak_es else ''}"
    )
    print(f"  import {import_s:.1f} s, setup {setup_s:.1f} s (not in wall time)")
    print(f"  wall time        {run_s:.2f} s  (Simulator::Run only; CPU {run_cpu_s:.2f} s)")
    print(f"  simulated        {sim_s:.1f} s  ({sim_s / run_s:.3f} x real time)")
    print(f"  events           {na(events)}")
    print(f"  events/s         {na(out['events_per_s'])}")
    print(
        f"  core goodput     {goodput_mbps:.3f} Mbps over [{window_start:g}, {args.duration:g}] s"
    )
    print(f"  mean flow goodput {goodput_mbps * 1000 / n:.3f} Kbps")
    print(
        f"  peak RSS         {out['peak_rss_mb']:.1f} MB ({rss_import:.1f} MB after importing ns-3)"
    )


if __name__ == "__main__":
    main()
