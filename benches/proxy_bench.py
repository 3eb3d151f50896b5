#!/usr/bin/env python3
"""Benchmark of ``latlab-net proxy`` (the MPTCP-to-TCP converter) on a namespace testbed.

Three network namespaces in a line, joined by veth pairs::

    client 10.78.1.1 ── 10.78.1.2  proxy  10.78.2.1 ── 10.78.2.2 server

The proxy namespace forwards IP, so "direct" connections (client → 10.78.2.2)
take the same veth path through the same kernel as proxied ones (client →
10.78.1.2, the proxy connects on to 10.78.2.2). Clients use MPTCP sockets
(``socket(AF_INET, SOCK_STREAM, 262)``); the server is plain TCP. The same
runs go through socat (``SOCKET-LISTEN:2:262:...,fork`` so it also listens
with MPTCP) when socat is installed.

What is measured, for direct, latlab-net proxy and socat (connect and
ping-pong interleaved in rounds, so all three see the same background load):

- connect: connect() start to the first byte of a server that speaks first
  (so the proxy's upstream connect is inside), p50/p99; added = proxied − direct.
- data: 64-byte request/response ping-pong on one connection, RTT p50/p99.
- throughput: server → client bulk for ``--seconds``, 1 and 100 connections,
  unshaped (CPU-bound: every process shares the machine's cores) and with a
  ``--rate-mbit`` tbf on the server's egress (the path is the bottleneck).
- CPU: the proxy's utime + stime (+ children's, for socat's forks) from
  /proc/PID/stat during the bulk runs, per Gbit relayed (= cores per Gbit/s).
- memory: VmRSS growth with ``--idle`` idle connections open, per connection
  (socat: the sum over its forked children).
- latlab's own conversion delays from its event log: accept → upstream
  connect started (SYN), first byte in → first byte out (data).
- conversion delays on the wire, as the MPTCP-proxy study measured its
  proxy's (a sniffer beside it): a packet socket in the proxy namespace
  timestamps every TCP packet on both of its interfaces during the latency
  rounds; SYN = the client's SYN in → the proxy's SYN to the server out
  (the client handshake and accept inside), data = a segment in on one
  side → the next one out on the other (the banner byte, and each ping and
  pong). Direct packets are forwarded by the proxy namespace's kernel: the
  same pairing gives the forwarding time a converter replaces.

Needs root and iproute2; the namespaces are deleted on exit. Usage::

    sudo python3 benches/proxy_bench.py --markdown proxy_bench.md --json proxy_bench.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import selectors
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

from latlab.real import tcpmem

IPPROTO_MPTCP = 262
CLIENT_ADDR, PROXY_C_ADDR, PROXY_S_ADDR, SERVER_ADDR = (
    "10.78.1.1",
    "10.78.1.2",
    "10.78.2.1",
    "10.78.2.2",
)
# Server ports: banner (speaks first), echo, bulk source, idle holder.
BANNER, ECHO, BULK, IDLE = 5001, 5002, 5003, 5004
PROXY_PORT_OFFSET = {"latlab": 2000, "socat": 3000, "baseline": 4000}
ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------- roles run inside namespaces


def serve() -> None:
    """The server namespace's four services, until killed."""
    resource.setrlimit(resource.RLIMIT_NOFILE, (20000, 20000))
    held: list[socket.socket] = []
    block = memoryview(b"\x5a" * (4 << 20))

    def banner(c: socket.socket) -> None:
        c.sendall(b"!")
        while c.recv(4096):
            pass
        c.close()

    def echo(c: socket.socket) -> None:
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while True:
            d = c.recv(65536)
            if not d:
                break
            c.sendall(d)
        c.close()

    def bulk(c: socket.socket) -> None:
        try:
            while True:
                c.sendall(block)
        except OSError:
            pass
        c.close()

    def listen(port: int, handler) -> None:  # noqa: ANN001
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((SERVER_ADDR, port))
        s.listen(4096)
        while True:
            c, _ = s.accept()
            if handler is None:
                held.append(c)
            else:
                threading.Thread(target=handler, args=(c,), daemon=True).start()

    for port, handler in ((BANNER, banner), (ECHO, echo), (BULK, bulk)):
        threading.Thread(target=listen, args=(port, handler), daemon=True).start()
    print("ready", flush=True)
    listen(IDLE, None)


#: The clients' protocol: MPTCP (the proxy's purpose), or plain TCP with ``--client-protocol tcp`` to tell the
#: relay's cost from MPTCP's own. Inherited by the client processes through the environment.
CLIENT_PROTOCOL_ENV = "LATLAB_PROXY_BENCH_CLIENT"


def mptcp_socket() -> socket.socket:
    proto = 0 if os.environ.get(CLIENT_PROTOCOL_ENV) == "tcp" else IPPROTO_MPTCP
    return socket.socket(socket.AF_INET, socket.SOCK_STREAM, proto)


def task_connect(addr: str, port: int, n: int) -> list[int]:
    out = []
    for _ in range(n):
        s = mptcp_socket()
        t0 = time.perf_counter_ns()
        s.connect((addr, port))
        if s.recv(1) != b"!":
            raise RuntimeError("no banner")
        out.append(time.perf_counter_ns() - t0)
        s.close()
    return out


def task_pingpong(addr: str, port: int, n: int, size: int = 64) -> list[int]:
    s = mptcp_socket()
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.connect((addr, port))
    msg = b"p" * size
    buf = bytearray(size)
    view = memoryview(buf)
    out = []
    for i in range(n + 50):
        t0 = time.perf_counter_ns()
        s.sendall(msg)
        got = 0
        while got < size:
            k = s.recv_into(view[got:])
            if k == 0:
                raise RuntimeError("echo closed")
            got += k
        if i >= 50:  # the first ones warm caches and the proxy's pipes
            out.append(time.perf_counter_ns() - t0)
    s.close()
    return out


def task_bulk(addr: str, port: int, conns: int, seconds: float, warmup: float = 1.0) -> dict:
    socks = []
    for _ in range(conns):
        s = mptcp_socket()
        s.connect((addr, port))
        s.setblocking(False)
        socks.append(s)
    sel = selectors.DefaultSelector()
    for s in socks:
        sel.register(s, selectors.EVENT_READ)
    buf = bytearray(1 << 20)
    t_start = time.monotonic()
    t_measure, t_end = t_start + warmup, t_start + warmup + seconds
    counted = 0
    while True:
        now = time.monotonic()
        if now >= t_end:
            break
        for key, _ in sel.select(timeout=0.1):
            try:
                k = key.fileobj.recv_into(buf)
            except BlockingIOError:
                continue
            if k == 0:
                raise RuntimeError("bulk source closed")
            if now >= t_measure:
                counted += k
    # Abort (SO_LINGER 0): a plain close of an MPTCP socket with unread data
    # left the connection orphaned but alive in the client's kernel (6.18),
    # still acknowledging data, so the sources kept sending into the next run.
    for s in socks:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
    return {"bytes": counted, "seconds": seconds, "gbps": counted * 8 / seconds / 1e9}


def task_idle(addr: str, port: int, n: int) -> None:
    """Open n idle connections, say so, hold them until stdin closes."""
    resource.setrlimit(resource.RLIMIT_NOFILE, (20000, 20000))
    socks = []
    for _ in range(n):
        s = mptcp_socket()
        s.connect((addr, port))
        socks.append(s)
    print("open", flush=True)
    sys.stdin.readline()
    for s in socks:
        s.close()


def client_role(spec: dict) -> None:
    kind = spec.pop("task")
    if kind == "idle":
        task_idle(**spec)
        return
    fn = {"connect": task_connect, "pingpong": task_pingpong, "bulk": task_bulk}[kind]
    print(json.dumps(fn(**spec)), flush=True)


SO_TIMESTAMPNS, SO_RCVBUFFORCE, PACKET_OUTGOING = 35, 33, 4


def capture_role(out: str) -> None:
    """Timestamp every IPv4 TCP packet on this namespace's interfaces until
    SIGTERM; write one JSON list per packet: [t_ns, ifindex, outgoing,
    src, sport, dst, dport, flags, seq, payload bytes]."""
    import signal

    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))  # ETH_P_ALL
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 64 << 20)  # the parse loop may fall behind
    sock.settimeout(0.2)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    rows = []
    print("ready", flush=True)
    while not stop:
        try:
            data, anc, _flags, addr = sock.recvmsg(128, socket.CMSG_SPACE(16))
        except TimeoutError:
            continue
        except InterruptedError:
            continue
        if len(data) < 54 or data[12:14] != b"\x08\x00" or data[23] != 6:  # IPv4, TCP
            continue
        t_ns = next((struct.unpack("qq", c[2][:16]) for c in anc if c[1] == SO_TIMESTAMPNS), None)
        if t_ns is None:
            continue
        ihl = (data[14] & 0x0F) * 4
        total = struct.unpack("!H", data[16:18])[0]
        tcp = 14 + ihl
        sport, dport, seq = struct.unpack("!HHI", data[tcp : tcp + 8])
        doff = (data[tcp + 12] >> 4) * 4
        rows.append(
            [
                t_ns[0] * 1_000_000_000 + t_ns[1],
                addr[1],
                addr[2] == PACKET_OUTGOING,
                socket.inet_ntoa(data[26:30]),
                sport,
                socket.inet_ntoa(data[30:34]),
                dport,
                data[tcp + 13],
                seq,
                total - ihl - doff,
            ]
        )
    Path(out).write_text("\n".join(json.dumps(r) for r in rows) + "\n")


def wire_delays(rows: list[list]) -> dict:
    """Per kind (direct, latlab, baseline, socat), the proxy namespace's
    SYN and data delays from the capture (see the module notes). The
    latency rounds run one connection at a time, so each packet in pairs
    with the first matching packet out after it (within 100 ms)."""
    syn_f, ack_f = 0x02, 0x10
    kind_of = {off: k for k, off in PROXY_PORT_OFFSET.items()}

    def proxy_kind(port: int) -> tuple[str, int] | None:
        """The proxy kind listening on `port` and the server port behind it."""
        for off, k in kind_of.items():
            if port - off in (BANNER, ECHO):
                return k, port - off
        return None

    rows = sorted(rows)
    out: dict = {}
    seen_syn = set()
    for i, (t, _if, outgoing, src, sport, dst, dport, flags, seq, payload) in enumerate(rows):
        syn = bool(flags & syn_f) and not flags & ack_f
        if outgoing or not (syn or payload > 0):
            continue
        if syn:
            if (src, sport, seq) in seen_syn:  # a retransmitted SYN
                continue
            seen_syn.add((src, sport, seq))
        kind = None
        if {src, dst} == {CLIENT_ADDR, SERVER_ADDR}:  # forwarded: the same packet leaves
            kind = "direct"
            if (dport if src == CLIENT_ADDR else sport) not in (BANNER, ECHO):
                continue

            def match(r, src=src, sport=sport, seq=seq, flags=flags):  # noqa: ANN001, ANN202
                return r[3] == src and r[4] == sport and r[8] == seq and r[7] == flags
        elif src == CLIENT_ADDR and dst == PROXY_C_ADDR and proxy_kind(dport):
            kind, base = proxy_kind(dport)

            def match(r, syn=syn, base=base):  # noqa: ANN001, ANN202
                return (
                    r[3] == PROXY_S_ADDR
                    and r[6] == base
                    and ((r[7] & (syn_f | ack_f)) == syn_f if syn else r[9] > 0)
                )
        elif src == SERVER_ADDR and dst == PROXY_S_ADDR and sport in (BANNER, ECHO) and not syn:

            def match(r, base=sport):  # noqa: ANN001, ANN202
                return (
                    r[3] == PROXY_C_ADDR and r[9] > 0 and (proxy_kind(r[4]) or ("", 0))[1] == base
                )
        else:
            continue
        for j in range(
            i + 1, len(rows)
        ):  # indices: a slice would copy the rest of the capture per packet
            r = rows[j]
            if r[0] - t > 100_000_000:
                break
            if r[2] and match(r):
                k = kind or proxy_kind(r[4])[0]
                what = "syn" if syn else ("data_c2s" if src == CLIENT_ADDR else "data_s2c")
                out.setdefault(k, {}).setdefault(what, []).append(r[0] - t)
                break
    return {
        k: {w: {"n": len(v), "p50": pct(v, 0.5), "p99": pct(v, 0.99)} for w, v in d.items()}
        for k, d in out.items()
    }


# ---------------------------------------------------------------- the testbed, from the root namespace


def run(cmd: list[str]) -> None:
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {res.stderr.strip()}")


class Testbed:
    def __init__(self) -> None:
        pid = os.getpid()
        self.ns = {k: f"llprx-{k}-{pid}" for k in ("cli", "prx", "srv")}
        self.created: list[str] = []

    def __enter__(self) -> Testbed:
        ns = self.ns
        pid = os.getpid()
        try:
            for n in ns.values():
                run(["ip", "netns", "add", n])
                self.created.append(n)
            a, b, c, d = (f"lp{pid}{x}"[:15] for x in "abcd")
            self.server_dev = d
            for cmd in (
                [
                    "ip",
                    "link",
                    "add",
                    a,
                    "netns",
                    ns["cli"],
                    "type",
                    "veth",
                    "peer",
                    "name",
                    b,
                    "netns",
                    ns["prx"],
                ],
                [
                    "ip",
                    "link",
                    "add",
                    c,
                    "netns",
                    ns["prx"],
                    "type",
                    "veth",
                    "peer",
                    "name",
                    d,
                    "netns",
                    ns["srv"],
                ],
                ["ip", "-n", ns["cli"], "addr", "add", f"{CLIENT_ADDR}/24", "dev", a],
                ["ip", "-n", ns["prx"], "addr", "add", f"{PROXY_C_ADDR}/24", "dev", b],
                ["ip", "-n", ns["prx"], "addr", "add", f"{PROXY_S_ADDR}/24", "dev", c],
                ["ip", "-n", ns["srv"], "addr", "add", f"{SERVER_ADDR}/24", "dev", d],
                *[["ip", "-n", n, "link", "set", "lo", "up"] for n in ns.values()],
                ["ip", "-n", ns["cli"], "link", "set", a, "up"],
                ["ip", "-n", ns["prx"], "link", "set", b, "up"],
                ["ip", "-n", ns["prx"], "link", "set", c, "up"],
                ["ip", "-n", ns["srv"], "link", "set", d, "up"],
                ["ip", "-n", ns["cli"], "route", "add", "default", "via", PROXY_C_ADDR],
                ["ip", "-n", ns["srv"], "route", "add", "default", "via", PROXY_S_ADDR],
                ["ip", "netns", "exec", ns["prx"], "sysctl", "-qw", "net.ipv4.ip_forward=1"],
            ):
                run(cmd)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for n in self.created:
            subprocess.run(["ip", "netns", "del", n], capture_output=True)

    def exec(self, where: str, cmd: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.ns[where], *cmd]


def client(tb: Testbed, spec: dict, timeout: float = 300) -> object:
    cmd = tb.exec("cli", [sys.executable, __file__, "--role", "client", "--spec", json.dumps(spec)])
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if res.returncode != 0:
        raise RuntimeError(f"client {spec}: {res.stderr.strip()}")
    return json.loads(res.stdout)


def cpu_seconds(pid: int, children: bool) -> float:
    """utime + stime of pid (+ its waited-for children, and live children when asked)."""
    tick = os.sysconf("SC_CLK_TCK")

    def stat(p: int) -> list[str]:
        text = Path(f"/proc/{p}/stat").read_text()
        return text[text.rindex(")") + 2 :].split()

    f = stat(pid)
    # utime, stime, cutime, cstime (proc(5) fields 14-17).
    total = sum(int(x) for x in f[11:15]) if children else int(f[11]) + int(f[12])
    if children:
        for p in child_pids(pid):
            try:
                g = stat(p)
                total += int(g[11]) + int(g[12])
            except (FileNotFoundError, ProcessLookupError):
                pass
    return total / tick


def machine_busy_seconds() -> float:
    """CPU seconds all cores spent busy since boot (/proc/stat: user, nice, system, irq, softirq, steal)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    busy = fields[0] + fields[1] + fields[2] + sum(fields[5:8])
    return busy / os.sysconf("SC_CLK_TCK")


def child_pids(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                text = (d / "stat").read_text()
                if int(text[text.rindex(")") + 2 :].split()[1]) == pid:
                    out.append(int(d.name))
            except (FileNotFoundError, ProcessLookupError, ValueError):
                pass
    return out


def rss_kib(pid: int, children: bool) -> int:
    def one(p: int) -> int:
        for line in Path(f"/proc/{p}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    total = one(pid)
    if children:
        for p in child_pids(pid):
            try:
                total += one(p)
            except (FileNotFoundError, ProcessLookupError):
                pass
    return total


def start_proxies(
    tb: Testbed, kind: str, binary: str, events_dir: Path, tag: str
) -> dict[int, subprocess.Popen]:
    """One proxy process per server port; returns port → process."""
    procs = {}
    for port in (BANNER, ECHO, BULK, IDLE):
        lport = port + PROXY_PORT_OFFSET[kind]
        if kind in ("latlab", "baseline"):
            cmd = [
                binary,
                "proxy",
                "--listen",
                f"{PROXY_C_ADDR}:{lport}",
                "--to",
                f"{SERVER_ADDR}:{port}",
                "--events",
                str(events_dir / f"events-{kind}-{tag}-{port}.jsonl"),
                "--quiet",
                "--grace-s",
                "0.5",
            ]
        else:
            hexaddr = (
                "x" + (struct.pack("!H", lport) + socket.inet_aton(PROXY_C_ADDR) + b"\0" * 8).hex()
            )
            cmd = [
                "socat",
                f"SOCKET-LISTEN:2:{IPPROTO_MPTCP}:{hexaddr},reuseaddr,fork,backlog=4096",
                f"TCP:{SERVER_ADDR}:{port}",
            ]
        p = subprocess.Popen(
            tb.exec("prx", cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        if kind in ("latlab", "baseline"):
            line = p.stdout.readline()
            if not line.startswith("{"):
                raise RuntimeError(f"latlab-net proxy did not start: {p.stderr.read()}")
        procs[port] = p
    if kind == "socat":
        time.sleep(0.3)
    return procs


def binary_of(kind: str, args: argparse.Namespace) -> str:
    return args.baseline if kind == "baseline" else args.binary


def stop(procs: dict[int, subprocess.Popen]) -> None:
    for p in procs.values():
        p.terminate()
    for p in procs.values():
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def pct(values: list[int], q: float) -> float:
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))] / 1e3  # µs


def latency(
    tb: Testbed, kinds: list[str], args: argparse.Namespace, events_dir: Path, rounds: int = 5
) -> dict:
    """Connect and ping-pong times, the kinds interleaved in rounds so that all
    see the same background load (the machine is shared)."""
    procs = {
        k: start_proxies(tb, k, binary_of(k, args), events_dir, "latency")
        for k in kinds
        if k != "direct"
    }
    samples: dict = {k: {"connect_us": [], "pingpong_us": []} for k in kinds}
    capture_file = events_dir / "capture.jsonl"
    capture = subprocess.Popen(
        tb.exec(
            "prx", [sys.executable, __file__, "--role", "capture", "--spec", str(capture_file)]
        ),
        stdout=subprocess.PIPE,
        text=True,
    )
    if capture.stdout.readline().strip() != "ready":
        raise RuntimeError("the packet capture did not start")
    try:
        for _ in range(rounds):
            for k in kinds:
                addr = SERVER_ADDR if k == "direct" else PROXY_C_ADDR
                off = 0 if k == "direct" else PROXY_PORT_OFFSET[k]
                samples[k]["connect_us"] += client(
                    tb,
                    {
                        "task": "connect",
                        "addr": addr,
                        "port": BANNER + off,
                        "n": max(1, args.connects // rounds),
                    },
                )
                samples[k]["pingpong_us"] += client(
                    tb,
                    {
                        "task": "pingpong",
                        "addr": addr,
                        "port": ECHO + off,
                        "n": max(1, args.pings // rounds),
                    },
                )
    finally:
        for p in procs.values():
            stop(p)
        capture.terminate()
        capture.wait(60)
    res = {
        k: {key: {"p50": pct(v, 0.5), "p99": pct(v, 0.99), "n": len(v)} for key, v in s.items()}
        for k, s in samples.items()
    }
    rows = [json.loads(line) for line in capture_file.read_text().splitlines() if line]
    for k, w in wire_delays(rows).items():
        if k in res:
            res[k]["wire"] = w
    return res


def measure(tb: Testbed, kind: str, args: argparse.Namespace, events_dir: Path) -> dict:
    """Throughput, CPU and idle memory of one kind."""
    procs = (
        start_proxies(tb, kind, binary_of(kind, args), events_dir, "bulk")
        if kind != "direct"
        else {}
    )
    addr = SERVER_ADDR if kind == "direct" else PROXY_C_ADDR
    off = 0 if kind == "direct" else PROXY_PORT_OFFSET[kind]
    children = kind == "socat"
    r: dict = {}
    try:
        for shaped in (False, True) if args.rate_mbit > 0 else (False,):
            if shaped:
                run(
                    tb.exec(
                        "srv",
                        [
                            "tc",
                            "qdisc",
                            "replace",
                            "dev",
                            tb.server_dev,
                            "root",
                            "tbf",
                            "rate",
                            f"{args.rate_mbit}mbit",
                            "burst",
                            "256kb",
                            "limit",
                            "2mb",
                        ],
                    )
                )
            try:
                for conns in (1, 100):
                    cpu0 = cpu_seconds(procs[BULK].pid, children) if procs else 0.0
                    spec = {
                        "task": "bulk",
                        "addr": addr,
                        "port": BULK + off,
                        "conns": conns,
                        "seconds": args.seconds,
                    }
                    busy0, wall0 = machine_busy_seconds(), time.monotonic()
                    b = client(tb, spec)
                    busy, wall = machine_busy_seconds() - busy0, time.monotonic() - wall0
                    time.sleep(0.3)  # socat's children exit and are reaped into cutime
                    cpu = (cpu_seconds(procs[BULK].pid, children) - cpu0) if procs else None
                    # CPU over the whole run (warm-up included) per Gbit relayed in it.
                    gbit_total = b["gbps"] * (args.seconds + 1.0)
                    r[f"bulk_{conns}{'_shaped' if shaped else ''}"] = {
                        "gbps": b["gbps"],
                        "cpu_s": cpu,
                        "cpu_s_per_gbit": (cpu / gbit_total)
                        if cpu is not None and gbit_total > 0
                        else None,
                        # The whole machine, softirq included (much of the
                        # veth and TCP receive work is charged to no process).
                        # On a quiet machine, when the cores are busy
                        # throughout, throughput is CPU-bound and the ratio of
                        # these per-Gbit costs bounds it.
                        "machine_cores_busy": busy / wall,
                        "machine_cpu_s_per_gbit": busy / gbit_total if gbit_total > 0 else None,
                    }
            finally:
                if shaped:
                    run(tb.exec("srv", ["tc", "qdisc", "del", "dev", tb.server_dev, "root"]))
        if procs:
            pid = procs[IDLE].pid
            rss0 = rss_kib(pid, children)
            holder = subprocess.Popen(
                tb.exec(
                    "cli",
                    [
                        sys.executable,
                        __file__,
                        "--role",
                        "client",
                        "--spec",
                        json.dumps(
                            {"task": "idle", "addr": addr, "port": IDLE + off, "n": args.idle}
                        ),
                    ],
                ),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            if holder.stdout.readline().strip() != "open":
                raise RuntimeError("idle connections did not open")
            time.sleep(1.0)
            rss1 = rss_kib(pid, children)
            holder.stdin.close()
            holder.wait(30)
            r["idle"] = {
                "n": args.idle,
                "rss_before_kib": rss0,
                "rss_open_kib": rss1,
                "kib_per_connection": (rss1 - rss0) / args.idle,
            }
    finally:
        stop(procs)
    return r


def event_log_delays(events_dir: Path) -> dict:
    syn, c2s, s2c = [], [], []
    for f in events_dir.glob("events-latlab-*.jsonl"):
        for line in f.read_text().splitlines():
            e = json.loads(line)
            if e.get("upstream_connect_start_ns") is not None:
                syn.append(e["upstream_connect_start_ns"])
            for lst, a, b in (
                (c2s, "c2s_first_in_ns", "c2s_first_out_ns"),
                (s2c, "s2c_first_in_ns", "s2c_first_out_ns"),
            ):
                if e.get(a) is not None and e.get(b) is not None:
                    lst.append(e[b] - e[a])
    return {
        name: {"n": len(v), "p50": pct(v, 0.5), "p99": pct(v, 0.99)}
        for name, v in (("syn", syn), ("data_c2s", c2s), ("data_s2c", s2c))
        if v
    }


def markdown(res: dict, args: argparse.Namespace) -> str:
    kinds = [k for k in ("direct", "latlab", "baseline", "socat") if k in res["runs"]]
    d = res["runs"]["direct"]
    lines = [
        "# latlab-net proxy benchmark",
        "",
        f"Namespace testbed client — proxy — server over veth (kernel {os.uname().release}, "
        f"{os.cpu_count()} cores, load average {res['loadavg']} at the start; "
        f"{res['tcp_mem_before']} before, {res['tcp_mem_after']} after). Clients {'MPTCP' if args.client_protocol == 'mptcp' else 'plain TCP'}, server TCP. "
        f"Command: `{res['command']}`"
        + (f" (baseline: an earlier latlab-net binary, {args.baseline})" if args.baseline else ""),
        "",
        "Latency (µs; added = through the proxy − direct, p50 and p99 each):",
        "",
        "| | connect to first byte p50 / p99 | added | ping-pong RTT p50 / p99 | added | RSS per idle conn KiB |",
        "|---|---|---|---|---|---|",
    ]
    for k in kinds:
        r = res["runs"][k]
        row = [k]
        for key in ("connect_us", "pingpong_us"):
            row.append(f"{r[key]['p50']:.0f} / {r[key]['p99']:.0f}")
            added = f"{r[key]['p50'] - d[key]['p50']:+.0f} / {r[key]['p99'] - d[key]['p99']:+.0f}"
            row.append("" if k == "direct" else added)
        row.append(f"{r['idle']['kib_per_connection']:.1f}" if "idle" in r else "")
        lines.append("| " + " | ".join(row) + " |")
    variants = [v for v in ("bulk_1", "bulk_100", "bulk_1_shaped", "bulk_100_shaped") if v in d]
    names = {
        "bulk_1": "1 conn",
        "bulk_100": "100 conns",
        "bulk_1_shaped": f"1 conn, {args.rate_mbit} Mbit/s tbf",
        "bulk_100_shaped": f"100 conns, {args.rate_mbit} Mbit/s tbf",
    }

    def variant_table(caption: str, cell) -> list[str]:  # noqa: ANN001
        """A table with a row per kind and a column per bulk variant; ``cell(run, variant)`` fills it."""
        return [
            "",
            caption,
            "",
            "| | " + " | ".join(names[v] for v in variants) + " |",
            "|---|" + "---|" * len(variants),
        ] + [
            f"| {k} | " + " | ".join(cell(res["runs"][k][v], v) for v in variants) + " |"
            for k in kinds
        ]

    def throughput(r: dict, v: str) -> str:
        share = (
            f"{100 * r['gbps'] / d[v]['gbps']:.0f}%" if d[v]["gbps"] > 0 else "direct moved nothing"
        )
        cell = f"{r['gbps']:.2f} ({share})"
        return cell + (
            f", {r['cpu_s_per_gbit']:.3f} CPU s/Gbit" if r["cpu_s_per_gbit"] is not None else ""
        )

    lines += variant_table(
        "Throughput server → client, Gbit/s (% of direct) and the proxy's CPU seconds per Gbit "
        "relayed:",
        throughput,
    )
    if all("machine_cores_busy" in res["runs"][k].get(v, {}) for k in kinds for v in variants):
        lines += variant_table(
            f"The whole machine during each run (user, kernel, irq and softirq time of all {os.cpu_count()} cores; "
            "it includes any other job, so it reads true only on a quiet machine: see the load average above): "
            "cores kept busy and CPU seconds per Gbit delivered. Where every core is busy, throughput is bounded "
            "by the machine, and a relay that runs a second TCP connection pays that connection's kernel work on "
            "every byte:",
            lambda r, v: (
                f"{r['machine_cores_busy']:.2f} cores, "
                + (
                    f"{r['machine_cpu_s_per_gbit']:.3f} CPU s/Gbit"
                    if r["machine_cpu_s_per_gbit"]
                    else "nothing delivered"
                )
            ),
        )
    ev = res.get("latlab_event_log", {})
    if ev:
        lines += [
            "",
            "latlab-net proxy's own conversion delays (its event log, all runs above):",
            "",
        ]
        for name, v in ev.items():
            lines.append(f"- {name}: p50 {v['p50']:.1f} µs, p99 {v['p99']:.1f} µs (n = {v['n']})")
    wired = [k for k in kinds if "wire" in res["runs"][k]]
    if wired:
        lines += [
            "",
            "Conversion delay on the wire (µs, p50 / p99, n): a packet socket in the proxy namespace "
            "timestamps each packet in and the packet it becomes on the other side; SYN includes the "
            "client handshake and accept; for direct, the kernel forwarding the same packet:",
            "",
            "| | SYN in → SYN out | data client → server | data server → client |",
            "|---|---|---|---|",
        ]
        for k in wired:
            w = res["runs"][k]["wire"]
            lines.append(
                f"| {k} | "
                + " | ".join(
                    f"{w[x]['p50']:.1f} / {w[x]['p99']:.1f} ({w[x]['n']})" if x in w else ""
                    for x in ("syn", "data_c2s", "data_s2c")
                )
                + " |"
            )
    lines += ["", "Goals (issue 15):", ""]
    for g in res["goals"]:
        lines.append(f"- {g['goal']}: {'met' if g['met'] else 'NOT met'} ({g['measured']})")
    return "\n".join(lines) + "\n"


def goals(res: dict) -> list[dict]:
    runs = res["runs"]
    d, lat = runs["direct"], runs["latlab"]
    out = []
    ev = res.get("latlab_event_log", {})
    if "syn" in ev:
        out.append(
            {
                "goal": "conversion p50 ≤ 0.1 ms (SYN, event log)",
                "met": ev["syn"]["p50"] <= 100,
                "measured": f"{ev['syn']['p50']:.1f} µs",
            }
        )
    # The study's proxy: 7.8 ms per SYN and 15.3 ms per data segment, on the wire.
    for key, what, study_ms in (
        ("syn", "SYN", 7.8),
        ("data_s2c", "data, server → client", 15.3),
        ("data_c2s", "data, client → server", 15.3),
    ):
        w = lat.get("wire", {}).get(key)
        if w:
            out.append(
                {
                    "goal": f"conversion on the wire p50 ≤ 0.1 ms ({what})",
                    "met": w["p50"] <= 100,
                    "measured": f"{w['p50']:.1f} µs, p99 {w['p99']:.1f} µs; {study_ms * 1e3 / w['p50']:.0f}× below "
                    f"the study's {study_ms} ms",
                }
            )
    for key, what in (
        ("connect_us", "added connect latency p50 ≤ 0.1 ms"),
        ("pingpong_us", "added data latency p50 ≤ 0.1 ms"),
    ):
        added = lat[key]["p50"] - d[key]["p50"]
        out.append({"goal": what, "met": added <= 100, "measured": f"{added:+.0f} µs"})
    for v in ("bulk_1", "bulk_100", "bulk_1_shaped", "bulk_100_shaped"):
        if v in d:
            if d[v]["gbps"] <= 0:
                out.append(
                    {
                        "goal": f"throughput, {v}",
                        "met": False,
                        "measured": "the direct run moved nothing: no reference (MPTCP fallback stall)",
                    }
                )
                continue
            ratio = lat[v]["gbps"] / d[v]["gbps"]
            what = (
                f"throughput ≥ 90% of direct, {v.replace('bulk_', '').replace('_', ' conn(s), ')}"
            )
            measured = f"{100 * ratio:.0f}%"
            if lat[v].get("machine_cpu_s_per_gbit") and d[v].get("machine_cpu_s_per_gbit"):
                # If both runs kept every core busy, the machine delivers
                # cores / (CPU s per Gbit): the ratio of costs is the ceiling.
                measured += (
                    f"; machine {d[v]['machine_cores_busy']:.2f} cores busy direct, "
                    f"{lat[v]['machine_cores_busy']:.2f} through the proxy; CPU per Gbit "
                    f"{lat[v]['machine_cpu_s_per_gbit'] / d[v]['machine_cpu_s_per_gbit']:.2f}× direct's"
                )
            out.append({"goal": what, "met": ratio >= 0.9, "measured": measured})
    if "socat" in runs:
        s = runs["socat"]
        beats = [
            ("connect p50", lat["connect_us"]["p50"] <= s["connect_us"]["p50"]),
            ("ping-pong p50", lat["pingpong_us"]["p50"] <= s["pingpong_us"]["p50"]),
            ("1-conn throughput", lat["bulk_1"]["gbps"] >= s["bulk_1"]["gbps"]),
            ("100-conn throughput", lat["bulk_100"]["gbps"] >= s["bulk_100"]["gbps"]),
            (
                "RSS per idle conn",
                lat["idle"]["kib_per_connection"] <= s["idle"]["kib_per_connection"],
            ),
        ]
        out.append(
            {
                "goal": "beat socat",
                "met": all(b for _, b in beats),
                "measured": ", ".join(f"{n} {'yes' if b else 'no'}" for n, b in beats),
            }
        )
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--role", choices=["server", "client", "capture"], help=argparse.SUPPRESS)
    ap.add_argument("--spec", help=argparse.SUPPRESS)
    ap.add_argument(
        "--binary",
        default=os.environ.get("LATLAB_NET_BIN", str(ROOT / "target/release/latlab-net")),
    )
    ap.add_argument(
        "--seconds",
        type=float,
        default=5.0,
        help="measured bulk seconds per run (after 1 s warm-up)",
    )
    ap.add_argument("--connects", type=int, default=1000, help="connections timed")
    ap.add_argument("--pings", type=int, default=5000, help="ping-pong round trips timed")
    ap.add_argument("--idle", type=int, default=1000, help="idle connections for the RSS figure")
    ap.add_argument(
        "--rate-mbit",
        type=int,
        default=1000,
        help="also run the bulk tests with a tbf of this rate on the server's egress (0: not)",
    )
    ap.add_argument("--no-socat", action="store_true")
    ap.add_argument(
        "--client-protocol",
        choices=["mptcp", "tcp"],
        default="mptcp",
        help="the clients' sockets: MPTCP (default) or plain TCP, to separate MPTCP's cost from the relay's",
    )
    ap.add_argument(
        "--baseline",
        help="also measure this latlab-net binary (e.g. an earlier build), side by side",
    )
    ap.add_argument("--markdown", type=Path)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if args.role == "server":
        serve()
        return 0
    if args.role == "client":
        client_role(json.loads(args.spec))
        return 0
    if args.role == "capture":
        capture_role(args.spec)
        return 0
    os.environ[CLIENT_PROTOCOL_ENV] = args.client_protocol  # the client processes inherit it
    if os.geteuid() != 0:
        print("skipped: the namespace testbed needs root", file=sys.stderr)
        return 0
    if shutil.which("ip") is None:
        print("skipped: iproute2 (ip) is not installed", file=sys.stderr)
        return 0
    if not os.access(args.binary, os.X_OK):
        print(f"{args.binary} not found: cargo build --release -p latlab-net", file=sys.stderr)
        return 1
    tcpmem.require_fit("proxy_bench")
    kinds = ["direct", "latlab"]
    if args.baseline:
        if not os.access(args.baseline, os.X_OK):
            print(f"--baseline {args.baseline}: not an executable", file=sys.stderr)
            return 1
        kinds.append("baseline")
    if args.no_socat:
        pass
    elif shutil.which("socat") is None:
        print(
            "socat is not installed (apt-get install -y socat): skipping its runs", file=sys.stderr
        )
    else:
        kinds.append("socat")
    res: dict = {
        "command": "python3 benches/proxy_bench.py " + " ".join(sys.argv[1:]),
        "runs": {},
        "loadavg": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "tcp_mem_before": tcpmem.describe(),
    }
    events_dir = Path(f"/tmp/latlab-proxy-bench-{os.getpid()}")
    events_dir.mkdir(exist_ok=True)
    with Testbed() as tb:
        server = subprocess.Popen(
            tb.exec("srv", [sys.executable, __file__, "--role", "server"]),
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            if server.stdout.readline().strip() != "ready":
                raise RuntimeError("server did not start")
            print("latency ...", file=sys.stderr, flush=True)
            lat = latency(tb, kinds, args, events_dir)
            print(json.dumps(lat), file=sys.stderr, flush=True)
            for kind in kinds:
                print(f"{kind} ...", file=sys.stderr, flush=True)
                res["runs"][kind] = {**lat[kind], **measure(tb, kind, args, events_dir)}
                print(json.dumps(res["runs"][kind]), file=sys.stderr, flush=True)
        finally:
            server.kill()
            server.wait()
    res["latlab_event_log"] = event_log_delays(events_dir)
    shutil.rmtree(events_dir, ignore_errors=True)
    res["goals"] = goals(res)
    res["tcp_mem_after"] = tcpmem.describe()
    text = markdown(res, args)
    print(text)
    if args.markdown:
        args.markdown.write_text(text)
    if args.json:
        args.json.write_text(json.dumps(res, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
