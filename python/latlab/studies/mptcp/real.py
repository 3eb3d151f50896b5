"""The MPTCP-proxy study on real Linux MPTCP, through latlab's own proxy, beside the simulated runs.

``latlab reproduce mptcp --real`` (root, MPTCP enabled) runs the study's
experiments on a namespace testbed that mirrors the simulated one:

    server ── proxy ─┬─ eth (router) ── client (wired interface)
                     └─ ap  (router) ── client (Wi-Fi-like interface)

* **server**: a plain TCP sender (Linux CUBIC), the study's legacy server;
* **proxy**: ``latlab-net proxy --to server`` (MPTCP toward the client,
  plain TCP upstream, splice relay), sampling every subflow into its
  ``--mptcp-log`` and, in the throttling runs, installing an HTB class and
  a u32 filter for the wired subflow once the connection has two subflows
  (``--throttle client=<wired subnet>,rate=...``). It also forwards
  packets, so the legacy baselines go client → server directly, as the
  study's did;
* **eth**: a router whose egress toward the client is a tbf at the wired
  path's rate with the simulated queue (100 Mbit/s, 100 packets), and no
  propagation delay (the machine has no netem; the simulated wired path's
  is 0.4 ms one way);
* **ap**: a router whose forwarding between its two interfaces goes
  through ``latlab-net emulate`` in router mode (policy rules route what
  arrives on each interface into a TUN device; the emulator runs latlab's
  own link and queue code in wall time and writes the packets back for the
  kernel to forward): toward the client the simulated AP's folded 802.11g
  rate for the MTU with its 100-packet DropTail queue, toward the server
  the simulated Wi-Fi uplink's 20 Mbit/s, and a one-way propagation delay
  of ``RealSettings.wifi_delay_ms`` each way (:data:`WIFI_PATH_DELAY_MS`,
  1.3 ms, the simulated twin's Wi-Fi path: a 1 ms radio hop plus the LAN
  behind the AP, where the real wired path has none added). So the
  Wi-Fi-like path is the slower and the longer one, as the study's was;
* **client**: two interfaces, an MPTCP ``subflow`` endpoint on the Wi-Fi
  one (the kernel path manager joins the second subflow), and the study's
  "max TCP memory" as net.ipv4.tcp_rmem's maximum, which is per namespace
  (net.core.rmem_max cannot be set outside the initial namespace and only
  bounds SO_RCVBUF, which the client does not set).

Cases (:func:`cases`): legacy TCP on each path; MPTCP through the proxy;
client receive memory 0.18 and 0.72 MB; MTU 1000 (MPTCP, and TCP on each
path); the wired subflow throttled during a 5 MB transfer, first (the
proxy creates its HTB root) and repeated through the same proxy, and during
the long transfer; the proxy's conversion delay over many small downloads.
Each row records the machine's load and TCP memory while it ran
(:class:`latlab.real.hostload.RunWatch`); a case run under TCP memory pressure
is run once more.

The server's link is not shaped (the simulated one is 100 Mbit/s, like the
wired path), so that MPTCP can add the Wi-Fi path's capacity to the wired
one. Upstream Linux MPTCP has no coupled congestion control: each subflow
runs Reno, uncoupled (the simulated MPTCP runs LIA; see RealSettings.subflow_cc). Each case builds a fresh
testbed, and every namespace, veth, qdisc and process goes when the case
ends, on failure or Ctrl-C too (namespaces carry the process id; a later
run deletes those of a process that no longer exists).
"""

from __future__ import annotations

import contextlib
import ipaddress
import itertools
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from latlab.real.emulated import EmulationUnavailable
from latlab.real.hostload import RunWatch
from latlab.studies._real_runs import (
    append_row,
    find_exe,
    first_row,
    load_rows,
    measure_case,
    testbed_unavailable_reason,
)
from latlab.studies._verdict import Reference, Verdict, within
from latlab.studies.mptcp import cases as C

MB = 1_000_000
#: The client's interfaces and their subnets; the proxy listens on its side of the wired router.
WIRED_NET, WIFI_NET = "10.250.1.0/24", "10.250.2.0/24"
CLIENT_WIRED, CLIENT_WIFI = "10.250.1.1", "10.250.2.1"
SERVER_ADDR, PROXY_UPSTREAM_ADDR = "10.250.3.2", "10.250.3.1"
PROXY_ADDR = "10.250.11.1"  # proxy — eth router
SERVER_PORT, PROXY_PORT = 5001, 8080
IPPROTO_MPTCP = 262
#: The client's receive memory outside the receive-buffer experiment (the study's stable 0.72 MB).
DEFAULT_RMEM_MB = C.DEFAULT_BUFFER_MB
NS_PREFIX = "llmr"
#: One-way propagation delay of the real Wi-Fi-like path (each way), in the emulator on the ap router: the
#: simulated twin's Wi-Fi path (cases.path_rtt_ms: the 1 ms radio hop plus the wired hops behind the AP, 2.6 ms of
#: round trip), so both sides carry the same propagation delay. The real wired path has none added (0.8 ms RTT in the
#: simulation).
WIFI_PATH_DELAY_MS = C.path_rtt_ms("wifi") / 2


class RealUnavailable(EmulationUnavailable):
    """The real MPTCP testbed cannot run here; the message names what is missing."""


@dataclass(frozen=True)
class RealSettings:
    """Sizes and rates of the real runs (rates are the simulated testbed's; see the module docstring)."""

    large_bytes: int = (
        200 * MB
    )  # baselines, MPTCP unthrottled, the long throttled transfer (the study's 200 MB)
    small_bytes: int = 5 * MB  # the throttled 5 MB transfers, first and repeated
    sweep_bytes: int = 50 * MB  # receive buffers, MTU 1000
    buffers_mb: tuple[float, ...] = C.STUDY_BUFFERS_MB
    wired_bps: float = C.ETHERNET_BPS
    #: Wi-Fi at the simulated AP's folded rate, for 1500- and 1000-byte packets.
    wifi_bps: float = field(default_factory=lambda: C.wifi_rate_bps(C.MTU_BYTES))
    wifi_small_mtu_bps: float = field(default_factory=lambda: C.wifi_rate_bps(C.SMALL_MTU_BYTES))
    queue_packets: int = (
        C.ETHERNET_QUEUE_PACKETS
    )  # both routers (the simulated switch port and AP buffer: 100)
    throttle_bps: float = C.THROTTLE_BPS
    #: The proxy installs its throttle this long after the second subflow (0: as soon as it can).
    throttle_delay_ms: int = 0
    #: The proxy's subflows' congestion control. Upstream Linux has no coupled one (LIA, OLIA); outside the
    #: initial namespace only net.ipv4.tcp_allowed_congestion_control may be the default (here reno and bbr),
    #: so Reno: what LIA does on each subflow when the other is idle (RFC 6356).
    subflow_cc: str = "reno"
    #: Conversion delay: this many small downloads (the simulated study's 100 KB web object), one after another.
    object_bytes: int = 100_000
    conversion_connections: int = 100
    #: Per-subflow sampling by the proxy (--stats-interval-ms) and the client's byte counter.
    sample_ms: int = 50
    #: The Wi-Fi-like path's one-way propagation delay, each way (latlab-net emulate on the ap router).
    wifi_delay_ms: float = WIFI_PATH_DELAY_MS
    #: Its uplink (client → proxy: ACKs, the client's SYNs): the simulated Wi-Fi uplink's rate.
    wifi_uplink_bps: float = C.WIFI_UPLINK_BPS
    #: The emulator's event loop at this SCHED_FIFO priority (None: an ordinary process). On a loaded machine an
    #: ordinary one is preempted for milliseconds (quick set at load 8 on 2 cores: p99 timing error 4.5-26 ms, and
    #: MPTCP 19 % below wired TCP); real-time, p99 58-94 µs (MPTCP 14 % above). It sleeps between packets (no
    #: spinning: --spin-us 0).
    wifi_emulator_realtime: int | None = 10


#: Quick: the simulated quick reproduction's sizes (20 MB long, 5 MB short, 10 MB sweep points).
QUICK_REAL = RealSettings(
    large_bytes=20 * MB, small_bytes=5 * MB, sweep_bytes=10 * MB, conversion_connections=20
)
FULL_REAL = RealSettings()


# ----- the endpoints (run inside namespaces) ----------------------------------------------------------------

#: The legacy server: accept N connections one after another, send each SIZE bytes with CUBIC, half-close, and
#: print one JSON line per connection (bytes, tcpi_total_retrans at offset 100 of struct tcp_info).
SERVER = r"""
import json, socket, struct, sys
host, port, size, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind((host, port)); l.listen(8)
print(json.dumps({"ready": True}), flush=True)
buf = b"\x5a" * 65536
for _ in range(count):
    s, peer = l.accept()
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"cubic")
    left = size
    while left > 0:
        left -= s.send(buf[:min(left, len(buf))])
    s.shutdown(socket.SHUT_WR)
    s.settimeout(120)
    try:
        while s.recv(65536):
            pass
    except OSError:
        pass
    info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
    print(json.dumps({"peer": peer[0], "bytes": size, "total_retrans": struct.unpack_from("I", info, 100)[0]}),
          flush=True)
    s.close()
"""

#: The client: connect (MPTCP or plain TCP, optionally from one address), read to EOF, and print one JSON line:
#: CLOCK_MONOTONIC times of connect and EOF, the bytes read, whether MPTCP was in use (TCP_IS_MPTCP = 43), and
#: the cumulative bytes read every SAMPLE_MS.
CLIENT = r"""
import json, socket, sys, time
proto, host, port, src, sample_ms = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], float(sys.argv[5])
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262 if proto == "mptcp" else 0)
if src != "-":
    s.bind((src, 0))
t0 = time.monotonic_ns()
s.connect((host, port))
try:
    is_mptcp = bool(s.getsockopt(socket.IPPROTO_TCP, 43))
except OSError:
    is_mptcp = False
buf = bytearray(1 << 18); got = 0; samples = [(t0, 0)]; step = int(sample_ms * 1e6); nxt = t0 + step
while True:
    n = s.recv_into(buf)
    now = time.monotonic_ns()
    if now >= nxt:
        samples.append((now, got)); nxt = now + step
    if n == 0:
        break
    got += n
t1 = time.monotonic_ns()
samples.append((t1, got))
s.close()
print(json.dumps({"start_ns": t0, "end_ns": t1, "bytes": got, "is_mptcp": is_mptcp, "samples": samples}))
"""


# ----- availability --------------------------------------------------------------------------------------------


def unavailable_reason() -> str | None:
    """What the real runs need and this machine lacks, or None."""
    reason = testbed_unavailable_reason(
        "the real MPTCP runs", "network namespaces, tc", tools=("ip", "tc")
    )
    if reason:
        return reason
    try:
        enabled = Path("/proc/sys/net/mptcp/enabled").read_text().strip()
    except OSError:
        return "the kernel has no MPTCP (/proc/sys/net/mptcp/enabled is missing)"
    if enabled != "1":
        return "MPTCP is disabled (sysctl net.mptcp.enabled = 0)"
    try:
        find_exe()
    except Exception as e:  # noqa: BLE001 - the message is what matters
        return f"latlab-net is not built: {e}"
    return None


# ----- the testbed ----------------------------------------------------------------------------------------------

_serial = itertools.count()


def _sh(cmd: list[str], timeout: float = 20) -> str:
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if res.returncode != 0:
        raise RuntimeError(f"'{' '.join(cmd)}' failed: {res.stderr.strip() or res.stdout.strip()}")
    return res.stdout


def _delete_stale_namespaces() -> None:
    """Namespaces of an earlier run whose process is gone (killed with SIGKILL, say)."""
    try:
        names = [
            line.split()[0] for line in _sh(["ip", "netns", "list"]).splitlines() if line.strip()
        ]
    except (RuntimeError, subprocess.TimeoutExpired):
        return
    for ns in names:
        m = re.fullmatch(rf"{NS_PREFIX}-(\d+)-\d+-\w+", ns)
        if m and not Path(f"/proc/{m.group(1)}").exists():
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


@dataclass
class Testbed:
    """Namespace names of one built testbed (see the module docstring)."""

    server: str
    proxy: str
    eth: str
    ap: str
    client: str
    #: latlab-net emulate's --out on the ap router (summary.json once it has stopped), if the testbed was given a
    #: work directory.
    wifi_emulator_out: Path | None = None

    def exec(self, ns: str, cmd: list[str]) -> list[str]:
        return ["ip", "netns", "exec", ns, *cmd]


def wifi_scenario(settings: RealSettings, downlink_bps: float) -> str:
    """The Wi-Fi-like path as a latlab scenario for ``latlab-net emulate`` (router mode on the ap router): one link
    client → proxy (the uplink) and its reverse (the downlink), a DropTail queue of the simulated AP's size each
    way, the path's one-way delay each way. Rates are of IP packets, as the simulated AP's folded rate is."""
    return "\n".join(
        [
            'name = "mptcp-real-wifi-path"',
            "duration_s = 1",
            "seed = 1",
            "",
            "[topology]",
            'kind = "custom"',
            'nodes = [{ name = "client" }, { name = "proxy" }]',
            "",
            "[[topology.links]]",
            'from = "client"',
            'to = "proxy"',
            f"rate_bps = {settings.wifi_uplink_bps!r}",
            f"reverse_rate_bps = {float(downlink_bps)!r}",
            f"delay_ms = {float(settings.wifi_delay_ms)!r}",
            f'queue = {{ kind = "droptail", limit_packets = {settings.queue_packets} }}',
            "",
        ]
    )


def _tbf(rate_bps: float, queue_packets: int, mtu_bytes: int) -> list[str]:
    # The bucket holds at least two full frames, and 1 ms at the rate; the queue is the simulated one in packets.
    burst = max(2 * (mtu_bytes + 14), int(rate_bps / 8 / 1000))
    return [
        "tbf",
        "rate",
        f"{int(rate_bps)}bit",
        "burst",
        str(burst),
        "limit",
        str(queue_packets * (mtu_bytes + 14)),
    ]


@contextlib.contextmanager
def testbed(
    settings: RealSettings,
    mtu_bytes: int = C.MTU_BYTES,
    rmem_mb: float = DEFAULT_RMEM_MB,
    wifi_bps: float | None = None,
    work: Path | None = None,
    exe: str | None = None,
) -> Iterator[Testbed]:
    """Build the five namespaces and start the Wi-Fi-like path's emulator; stop it (SIGTERM: it removes its rules)
    and delete the namespaces (and with them every veth, qdisc and route) on exit."""
    pid, k = os.getpid(), next(_serial)
    tb = Testbed(*(f"{NS_PREFIX}-{pid}-{k}-{role}" for role in ("srv", "prx", "eth", "ap", "cli")))
    made: list[str] = []
    emulator: subprocess.Popen | None = None
    scratch = None if work is not None else tempfile.TemporaryDirectory(prefix="latlab-mptcp-wifi-")
    try:
        for ns in (tb.server, tb.proxy, tb.eth, tb.ap, tb.client):
            _sh(["ip", "netns", "add", ns])
            made.append(ns)
            _sh(["ip", "-n", ns, "link", "set", "lo", "up"])

        def veth(
            a: str, dev_a: str, addr_a: str, b: str, dev_b: str, addr_b: str, mtu: int
        ) -> None:
            _sh(
                [
                    "ip",
                    "-n",
                    a,
                    "link",
                    "add",
                    dev_a,
                    "mtu",
                    str(mtu),
                    "type",
                    "veth",
                    "peer",
                    "name",
                    dev_b,
                    "mtu",
                    str(mtu),
                    "netns",
                    b,
                ]
            )
            for ns, dev, addr in ((a, dev_a, addr_a), (b, dev_b, addr_b)):
                _sh(["ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev])
                _sh(["ip", "-n", ns, "link", "set", dev, "up"])

        veth(tb.server, "s0", SERVER_ADDR, tb.proxy, "p0", PROXY_UPSTREAM_ADDR, C.MTU_BYTES)
        veth(tb.proxy, "pw", PROXY_ADDR, tb.eth, "ep", "10.250.11.2", mtu_bytes)
        veth(tb.proxy, "pf", "10.250.12.1", tb.ap, "ap", "10.250.12.2", mtu_bytes)
        veth(tb.eth, "ec", "10.250.1.2", tb.client, "c1", CLIENT_WIRED, mtu_bytes)
        veth(tb.ap, "ac", "10.250.2.2", tb.client, "c2", CLIENT_WIFI, mtu_bytes)
        steps = [
            ["ip", "-n", tb.server, "route", "add", "default", "via", PROXY_UPSTREAM_ADDR],
            ["ip", "-n", tb.proxy, "route", "add", WIRED_NET, "via", "10.250.11.2"],
            ["ip", "-n", tb.proxy, "route", "add", WIFI_NET, "via", "10.250.12.2"],
            ["ip", "-n", tb.eth, "route", "add", "default", "via", PROXY_ADDR],
            ["ip", "-n", tb.ap, "route", "add", "default", "via", "10.250.12.1"],
            # The client: wired by default; anything from the Wi-Fi address (the joined subflow, the Wi-Fi
            # baseline) leaves by the Wi-Fi interface.
            [
                "ip",
                "-n",
                tb.client,
                "route",
                "add",
                "default",
                "via",
                "10.250.1.2",
                "dev",
                "c1",
                "metric",
                "100",
            ],
            [
                "ip",
                "-n",
                tb.client,
                "route",
                "add",
                "default",
                "via",
                "10.250.2.2",
                "dev",
                "c2",
                "metric",
                "200",
            ],
            [
                "ip",
                "-n",
                tb.client,
                "route",
                "add",
                "default",
                "via",
                "10.250.2.2",
                "dev",
                "c2",
                "table",
                "102",
            ],
            ["ip", "-n", tb.client, "rule", "add", "from", CLIENT_WIFI, "table", "102"],
            # The paths' bottlenecks, toward the client (ACKs go back unshaped).
            [
                "tc",
                "-n",
                tb.eth,
                "qdisc",
                "add",
                "dev",
                "ec",
                "root",
                *_tbf(settings.wired_bps, settings.queue_packets, mtu_bytes),
            ],
            [
                "ip",
                "-n",
                tb.client,
                "mptcp",
                "limits",
                "set",
                "subflows",
                "2",
                "add_addr_accepted",
                "2",
            ],
            [
                "ip",
                "-n",
                tb.proxy,
                "mptcp",
                "limits",
                "set",
                "subflows",
                "2",
                "add_addr_accepted",
                "2",
            ],
            [
                "ip",
                "-n",
                tb.client,
                "mptcp",
                "endpoint",
                "add",
                CLIENT_WIFI,
                "dev",
                "c2",
                "subflow",
            ],
        ]
        for cmd in steps:
            _sh(cmd)
        for ns in (tb.proxy, tb.eth, tb.ap):
            _sh(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv4.ip_forward=1"])
        # The proxy's subflows toward the client take the namespace's default controller (the server sets
        # CUBIC on its socket).
        _sh(
            [
                "ip",
                "netns",
                "exec",
                tb.proxy,
                "sysctl",
                "-qw",
                f"net.ipv4.tcp_congestion_control={settings.subflow_cc}",
            ]
        )
        # The study's "max TCP memory": tcp_rmem's maximum (per namespace), the default kept.
        rmem = int(rmem_mb * MB)
        _sh(
            [
                "ip",
                "netns",
                "exec",
                tb.client,
                "sysctl",
                "-qw",
                f"net.ipv4.tcp_rmem=4096 {min(131072, rmem)} {rmem}",
            ]
        )
        # The Wi-Fi-like path: the emulator between the ap router's client side (ac: what arrives there takes the
        # uplink) and its proxy side (ap: the downlink). Forwarding is on already, as router mode requires.
        emu_dir = Path(work if work is not None else scratch.name)  # type: ignore[union-attr]
        scenario = emu_dir / "wifi-path.toml"
        scenario.write_text(wifi_scenario(settings, wifi_bps or settings.wifi_bps))
        tb.wifi_emulator_out = emu_dir / "wifi-emulator"
        emulator = subprocess.Popen(
            [
                exe or find_exe(),
                "emulate",
                str(scenario),
                "--router-netns",
                tb.ap,
                "--ingress",
                "ac",
                "--egress",
                "ap",
                "--mtu",
                str(mtu_bytes),
                "--stay",
                "--quiet",
                "--out",
                str(tb.wifi_emulator_out),
                *(
                    ["--realtime", str(settings.wifi_emulator_realtime), "--spin-us", "0"]
                    if settings.wifi_emulator_realtime
                    else []
                ),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        ready = emulator.stdout.readline() if emulator.stdout else ""
        if not ready.strip():
            emulator.wait(10)
            err = emulator.stderr.read() if emulator.stderr else ""
            raise RuntimeError(
                f"latlab-net emulate (Wi-Fi path) exited with {emulator.returncode}: {err.strip()}"
            )
        yield tb
    finally:
        if emulator is not None:
            if emulator.poll() is None:
                emulator.send_signal(signal.SIGTERM)
            try:
                emulator.wait(10)
            except subprocess.TimeoutExpired:
                emulator.kill()
                emulator.wait()
            for f in (emulator.stdout, emulator.stderr):
                if f:
                    f.close()
        if scratch is not None:
            scratch.cleanup()
        # Deleting a namespace deletes its veth ends (so the pairs), its qdiscs and routes.
        for ns in made:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


class Procs:
    """Processes started in a case; all terminated (then killed) on exit, whatever happened."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen] = []

    def start(self, cmd: list[str], **kw: Any) -> subprocess.Popen:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, **kw)
        self.procs.append(p)
        return p

    def __enter__(self) -> Procs:
        return self

    def __exit__(self, *exc: object) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            if p.stdout:
                p.stdout.close()


def _ready(p: subprocess.Popen, what: str) -> dict:
    line = p.stdout.readline() if p.stdout else ""
    if not line:
        p.wait(10)
        raise RuntimeError(f"{what} exited with {p.returncode} before it was ready")
    return json.loads(line)


# ----- one case ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One real case: ``transfers`` downloads one after another through the same testbed (and proxy)."""

    experiment: str
    transport: str  # "tcp" (legacy, client → server directly) or "mptcp" (through the proxy)
    size_bytes: int
    path: str = "both"
    buffer_mb: float = DEFAULT_RMEM_MB
    mtu_bytes: int = C.MTU_BYTES
    throttle_bps: float = 0.0
    labels: tuple[str, ...] = ("",)  # one per transfer

    @property
    def name(self) -> str:
        parts = [self.experiment, self.transport, self.path, f"{self.size_bytes / MB:g}MB"]
        if self.experiment == "rbuf":
            parts.append(f"{self.buffer_mb:g}mb")
        if self.mtu_bytes != C.MTU_BYTES:
            parts.append(f"mtu{self.mtu_bytes}")
        return "-".join(parts)


def cases(settings: RealSettings) -> list[Case]:
    """The study's experiments, in the report's order."""
    big, small, sweep = settings.large_bytes, settings.small_bytes, settings.sweep_bytes
    # The baselines and the unthrottled MPTCP transfer are the long one, as the throttled long transfer they frame.
    out = [Case("baseline", "tcp", big, path=p) for p in C.PATHS]
    out.append(Case("mptcp", "mptcp", big))
    out += [Case("rbuf", "mptcp", sweep, buffer_mb=mb) for mb in settings.buffers_mb]
    # MTU 1000: MPTCP, and each path alone, which separates the smaller frames' own cost from MPTCP's.
    out.append(Case("mtu", "mptcp", sweep, mtu_bytes=C.SMALL_MTU_BYTES))
    out += [Case("mtu", "tcp", sweep, path=p, mtu_bytes=C.SMALL_MTU_BYTES) for p in C.PATHS]
    out.append(
        Case(
            "throttle",
            "mptcp",
            small,
            throttle_bps=settings.throttle_bps,
            labels=("first", "repeated"),
        )
    )
    out.append(Case("throttle", "mptcp", big, throttle_bps=settings.throttle_bps, labels=("long",)))
    out.append(
        Case(
            "conversion",
            "mptcp",
            settings.object_bytes,
            labels=tuple(f"object{i}" for i in range(settings.conversion_connections)),
        )
    )
    return out


def _path_of(addr: str) -> str:
    ip = ipaddress.ip_address(addr.rsplit(":", 1)[0].strip("[]"))
    return (
        "wired"
        if ip in ipaddress.ip_network(WIRED_NET)
        else "wifi"
        if ip in ipaddress.ip_network(WIFI_NET)
        else "other"
    )


def _load_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        with contextlib.suppress(json.JSONDecodeError):
            out.append(json.loads(line))
    return out


def _rate_series(
    samples: list[tuple[int, int]], t0_ns: int, window_s: float
) -> list[tuple[float, float]]:
    """(time s from t0, Mbit/s over the last ``window_s``) from cumulative (time ns, bytes) samples."""
    out, j = [], 0
    for i, (t, b) in enumerate(samples):
        while j < i and (t - samples[j][0]) / 1e9 > window_s:
            j += 1
        if i > j and t > samples[j][0]:
            out.append(
                ((t - t0_ns) / 1e9, (b - samples[j][1]) * 8 / ((t - samples[j][0]) / 1e9) / 1e6)
            )
    return out


def _transfer_row(
    case: Case,
    label: str,
    client: dict,
    subflows: list[dict],
    log: list[dict],
    event: dict | None,
    server: dict | None,
    settings: RealSettings,
) -> dict[str, Any]:
    """One transfer reduced: goodput, per-path bytes and goodput, retransmissions, throttle latency, series."""
    dur_s = (client["end_ns"] - client["start_ns"]) / 1e9
    row: dict[str, Any] = {
        "mode": "real",
        "case": case.name + (f"-{label}" if label else ""),
        "experiment": case.experiment,
        "transport": case.transport,
        "path": case.path,
        "label": label,
        "size_bytes": case.size_bytes,
        "buffer_mb": case.buffer_mb,
        "mtu_bytes": case.mtu_bytes,
        "throttle_bps": case.throttle_bps,
        "bytes": client["bytes"],
        "completed": client["bytes"] >= case.size_bytes,
        "duration_s": dur_s,
        "goodput_bps": client["bytes"] * 8 / dur_s if dur_s > 0 else float("nan"),
        "is_mptcp": client["is_mptcp"],
    }
    window_s = 0.2 if case.size_bytes <= 10 * MB else 0.5
    series: dict[str, list[tuple[float, float]]] = {}
    if case.transport == "tcp":
        row.update(
            {
                f"{case.path}_bytes": float(client["bytes"]),
                f"{case.path}_share": 1.0,
                f"{case.path}_goodput_bps": row["goodput_bps"],
                "subflows": 1,
                "retransmits": (server or {}).get("total_retrans"),
            }
        )
        series[case.path] = _rate_series(
            [tuple(s) for s in client["samples"]], client["start_ns"], window_s
        )
    else:
        by_path: dict[str, list[dict]] = {}
        for s in subflows:
            by_path.setdefault(_path_of(s["remote"]), []).append(s)
        total_acked = 0.0
        row["retransmits"] = 0
        for p, ss in by_path.items():
            # One subflow per path here; if a path ever had two, their counters add.
            last: dict[str, dict] = {}
            for s in ss:
                last[s["remote"]] = s
            acked = float(sum(s["bytes_acked"] for s in last.values()))
            retrans = int(sum(s["total_retrans"] for s in last.values()))
            total_acked += acked
            row.update(
                {
                    f"{p}_bytes": acked,
                    f"{p}_goodput_bps": acked * 8 / dur_s if dur_s > 0 else float("nan"),
                    f"retransmits_{p}": retrans,
                    f"srtt_{p}_ms": _mean([s["srtt_us"] / 1e3 for s in ss if s["srtt_us"] > 0]),
                }
            )
            row["retransmits"] += retrans
            if len(last) == 1:
                series[p] = _rate_series(
                    [(s["t_ns"], s["bytes_acked"]) for s in ss], client["start_ns"], window_s
                )
        for p in C.PATHS:
            row.setdefault(f"{p}_bytes", 0.0)
            row[f"{p}_share"] = row[f"{p}_bytes"] / total_acked if total_acked > 0 else float("nan")
        row["subflows"] = len({s["remote"] for s in subflows})
        row.update(_throttle_fields(case, subflows, log))
        if event:
            row["syn_conversion_ms"] = (
                event.get("upstream_connect_start_ns") or float("nan")
            ) / 1e6
            first_in, first_out = event.get("s2c_first_in_ns"), event.get("s2c_first_out_ns")
            row["data_conversion_ms"] = (
                (first_out - first_in) / 1e6
                if first_in is not None and first_out is not None
                else float("nan")
            )
    row["series"] = {p: [[round(t, 3), round(v, 3)] for t, v in s] for p, s in series.items()}
    return row


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else float("nan")


_TOKEN = re.compile(r"token: (\d+)")


def _throttle_fields(case: Case, subflows: list[dict], log: list[dict]) -> dict[str, Any]:
    """When the wired subflow was throttled, how long after the second subflow, and its goodput from then on."""
    if not case.throttle_bps:
        return {}
    tokens = {s.get("token") for s in subflows if s.get("token") is not None}
    thr = [x for x in log if x.get("kind") == "throttle" and x.get("token") in tokens]
    out: dict[str, Any] = {
        "throttled": bool(thr),
        "throttle_errors": sum(1 for x in log if x.get("kind") == "throttle_error"),
    }
    if not thr:
        return out
    # The throttle line's time is when the proxy began installing (tc); the rule is active install_ms later.
    t_thr = thr[0]["t_ns"] + int((thr[0].get("install_ms") or 0.0) * 1e6)
    # The connection has two subflows at its SUB_ESTABLISHED event (the proxy logs every path-manager event).
    subs = [
        x["t_ns"]
        for x in log
        if x.get("kind") == "pm"
        and "SubEstablished" in x.get("event", "")
        and (m := _TOKEN.search(x["event"]))
        and int(m.group(1)) in tokens
    ]
    out["throttle_install_ms"] = thr[0].get("install_ms")
    out["throttle_latency_ms"] = (
        (t_thr - min(subs)) / 1e6 if subs else thr[0].get("after_sub_established_ms")
    )
    wired = sorted(
        (s["t_ns"], s["bytes_acked"]) for s in subflows if _path_of(s["remote"]) == "wired"
    )
    # From 0.1 s after the rule (what was already queued past the proxy drains at the path's rate) to the
    # wired subflow's last byte.
    after = [w for w in wired if w[0] >= t_thr + 100_000_000]
    if len(after) >= 2:
        done = next((w for w in after if w[1] >= after[-1][1]), after[-1])
        span_s = (done[0] - after[0][0]) / 1e9
        out["wired_after_throttle_bps"] = (
            (done[1] - after[0][1]) * 8 / span_s if span_s > 0.2 else float("nan")
        )
    out["throttle_t_s"] = t_thr / 1e9  # CLOCK_MONOTONIC; made relative to the transfer in run_case
    return out


def run_case(case: Case, settings: RealSettings, exe: str, work: Path) -> list[dict[str, Any]]:
    """Build the testbed, run the case's transfers, reduce each to a row; everything torn down after."""
    wifi_bps = settings.wifi_small_mtu_bps if case.mtu_bytes != C.MTU_BYTES else settings.wifi_bps
    log_path, events_path = work / "mptcp.jsonl", work / "events.jsonl"
    with (
        testbed(settings, case.mtu_bytes, case.buffer_mb, wifi_bps, work, exe) as tb,
        Procs() as procs,
        RunWatch() as watch,
    ):
        server = procs.start(
            tb.exec(
                tb.server,
                [
                    sys.executable,
                    "-c",
                    SERVER,
                    SERVER_ADDR,
                    str(SERVER_PORT),
                    str(case.size_bytes),
                    str(len(case.labels)),
                ],
            )
        )
        _ready(server, "the server")
        if case.transport == "mptcp":
            throttle = (
                [
                    "--throttle",
                    f"client={WIRED_NET},rate={int(case.throttle_bps)}",
                    "--throttle-delay-ms",
                    str(settings.throttle_delay_ms),
                ]
                if case.throttle_bps
                else []
            )
            proxy = procs.start(
                tb.exec(
                    tb.proxy,
                    [
                        exe,
                        "proxy",
                        "--listen",
                        f"{PROXY_ADDR}:{PROXY_PORT}",
                        "--to",
                        f"{SERVER_ADDR}:{SERVER_PORT}",
                        "--mptcp-log",
                        str(log_path),
                        "--stats-interval-ms",
                        str(settings.sample_ms),
                        "--events",
                        str(events_path),
                        "--grace-s",
                        "1",
                        "--quiet",
                        *throttle,
                    ],
                )
            )
            ready = _ready(proxy, "latlab-net proxy")
            if ready.get("protocol") != "mptcp":
                raise RealUnavailable(f"the proxy could not listen with MPTCP: {ready}")
            target = (PROXY_ADDR, PROXY_PORT, "-")
        else:
            proxy = None
            target = (
                SERVER_ADDR,
                SERVER_PORT,
                CLIENT_WIRED if case.path == "wired" else CLIENT_WIFI,
            )
        floor_bps = min(settings.wifi_small_mtu_bps, case.throttle_bps or settings.wired_bps)
        timeout_s = case.size_bytes * 8 / floor_bps * 3 + 30
        clients, servers = [], []
        for _ in case.labels:
            cl = procs.start(
                tb.exec(
                    tb.client,
                    [
                        sys.executable,
                        "-c",
                        CLIENT,
                        case.transport,
                        target[0],
                        str(target[1]),
                        target[2],
                        str(settings.sample_ms),
                    ],
                )
            )
            out, _ = cl.communicate(timeout=timeout_s)
            if cl.returncode != 0 or not out.strip():
                raise RuntimeError(f"{case.name}: the client exited with {cl.returncode}")
            clients.append(json.loads(out.strip().splitlines()[-1]))
            line = server.stdout.readline() if server.stdout else ""
            servers.append(json.loads(line) if line.strip() else None)
        if proxy is not None:
            # SIGTERM: the proxy closes its connections, writes the last samples and removes its rules.
            proxy.send_signal(signal.SIGTERM)
            proxy.wait(15)
        tc_left = (
            _sh(tb.exec(tb.proxy, ["tc", "qdisc", "show", "dev", "pw"]))
            if case.throttle_bps
            else ""
        )
    emulated = _wifi_emulator_fields(tb.wifi_emulator_out, settings)
    log = _load_jsonl(log_path)
    events = [e for e in _load_jsonl(events_path) if e.get("event") == "close"]
    conns = list(dict.fromkeys(s["conn"] for s in log if s.get("kind") == "subflow"))
    rows = []
    for i, (label, cl) in enumerate(zip(case.labels, clients)):
        subs = [
            s
            for s in log
            if s.get("kind") == "subflow" and i < len(conns) and s["conn"] == conns[i]
        ]
        ev = next((e for e in events if i < len(conns) and e.get("id") == conns[i]), None)
        row = _transfer_row(
            case, label, cl, subs, log, ev, servers[i] if i < len(servers) else None, settings
        )
        if "throttle_t_s" in row:
            row["throttle_t_s"] = row["throttle_t_s"] - cl["start_ns"] / 1e9
        if case.throttle_bps:
            row["htb_left_after_proxy_exit"] = "htb" in tc_left
        row.update(watch.record())
        row.update(emulated)
        rows.append(row)
    return [conversion_row(rows)] if case.experiment == "conversion" else rows


def _wifi_emulator_fields(out: Path | None, settings: RealSettings) -> dict[str, Any]:
    """What the Wi-Fi path's emulator reports over the whole case (its summary.json): the configured delay, packets
    delivered and dropped by its queue toward the client, and how late or early it wrote them against the model's
    schedule (p50/p99 µs)."""
    fields: dict[str, Any] = {"wifi_delay_ms": settings.wifi_delay_ms}
    try:
        summary = json.loads((Path(out) / "summary.json").read_text()) if out else None
    except (OSError, json.JSONDecodeError):
        summary = None
    if not summary:
        return fields
    down, up = summary.get("down") or {}, summary.get("up") or {}
    timing = down.get("timing_error") or {}
    fields.update(
        {
            "wifi_emu_down_pkts": down.get("delivered_pkts"),
            "wifi_emu_up_pkts": up.get("delivered_pkts"),
            "wifi_emu_queue_drops": (down.get("queue_drops_pkts") or 0)
            + (up.get("queue_drops_pkts") or 0),
            "wifi_emu_timing_p50_us": timing.get("p50_us"),
            "wifi_emu_timing_p99_us": timing.get("p99_us"),
        }
    )
    return fields


def _quantile(xs: list[float], q: float) -> float:
    xs = sorted(x for x in xs if x == x)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def conversion_row(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The small downloads of the conversion case as one row: the proxy's SYN and data conversion delays
    (median and 99th percentile over the connections), and the mean of the rest."""
    out = {k: v for k, v in rows[0].items() if k not in ("series", "label")}
    first_label = rows[0].get("label") or ""
    if first_label and out["case"].endswith("-" + first_label):
        out["case"] = out["case"][: -len(first_label) - 1]
    out.update(
        {
            "label": "",
            "connections": len(rows),
            "completed": all(r["completed"] for r in rows),
            "duration_s": _mean([r["duration_s"] for r in rows]),
            "goodput_bps": _mean([r["goodput_bps"] for r in rows]),
            "retransmits": sum(r.get("retransmits") or 0 for r in rows),
            "is_mptcp": all(r["is_mptcp"] for r in rows),
            "series": {},
            "load_max_1m": max(r["load_max_1m"] for r in rows),
            "tcp_mem_pressure": any(r["tcp_mem_pressure"] for r in rows),
        }
    )
    for key in ("syn_conversion_ms", "data_conversion_ms"):
        vals = [float(r[key]) for r in rows if r.get(key) is not None]
        out[key] = _quantile(vals, 0.5)
        out[f"{key}_p99"] = _quantile(vals, 0.99)
    for p in C.PATHS:
        out[f"{p}_bytes"] = sum(r.get(f"{p}_bytes") or 0.0 for r in rows)
    total = sum(out[f"{p}_bytes"] for p in C.PATHS)
    for p in C.PATHS:
        out[f"{p}_share"] = out[f"{p}_bytes"] / total if total > 0 else float("nan")
        out.pop(f"{p}_goodput_bps", None)
    return out


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM unwinds like Ctrl-C (so every testbed is torn down); only possible on the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def run_real(
    outdir: Path,
    settings: RealSettings = QUICK_REAL,
    progress: Callable[[dict[str, Any]], None] | None = None,
    exe: str | None = None,
) -> list[dict[str, Any]]:
    """Every real case, one row per transfer, also appended to ``outdir/real.jsonl`` as they come.

    Raises :class:`RealUnavailable` naming what is missing (root, iproute2, MPTCP, latlab-net). ``progress``
    gets each row. A case whose run hit TCP memory pressure (other jobs' sockets count) is run once more.
    """
    reason = unavailable_reason()
    if reason:
        raise RealUnavailable(reason)
    exe = exe or find_exe()
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    jsonl = outdir / "real.jsonl"
    jsonl.write_text("")
    _delete_stale_namespaces()
    rows: list[dict[str, Any]] = []
    with _sigterm_as_interrupt(), tempfile.TemporaryDirectory(prefix="latlab-mptcp-real-") as tmp:
        for i, case in enumerate(cases(settings)):
            work = Path(tmp) / f"case{i}"
            work.mkdir()
            measured = measure_case(lambda w, case=case: run_case(case, settings, exe, w), work)
            for row in measured:
                rows.append(row)
                append_row(jsonl, row)
                if progress:
                    progress(row)
    return rows


# ----- the report ---------------------------------------------------------------------------------------------------


def _fmt(v: Any, spec: str = ".1f", scale: float = 1.0) -> str:
    try:
        x = float(v) * scale
    except (TypeError, ValueError):
        return "–"
    return "–" if x != x else format(x, spec)


def _sim_match(sim_rows: list[dict], row: dict) -> list[dict]:
    """The simulated runs of the same experiment (same transport, path, label, buffer and MTU; any size/seed)."""

    def same(s: dict) -> bool:
        if s.get("experiment") != row["experiment"] or s.get("transport") != row["transport"]:
            return False
        if (
            str(s.get("path", "both")) != row["path"]
            or int(s.get("mtu_bytes", C.MTU_BYTES)) != row["mtu_bytes"]
        ):
            return False
        if (
            row["experiment"] == "rbuf"
            and abs(float(s.get("buffer_mb", 0)) - row["buffer_mb"]) > 1e-9
        ):
            return False
        if row["experiment"] == "conversion":
            return False  # the simulated proxy's conversion delays are the study's, put in by hand
        if row["experiment"] == "throttle":
            return (
                s.get("label") == row["label"]
                and abs(float(s.get("throttle_bps", 0)) - row["throttle_bps"]) < 1
            )
        return int(s.get("size_bytes", -1)) == row["size_bytes"] or row["experiment"] != "mptcp"

    hits = [s for s in sim_rows if same(s)]
    sized = [s for s in hits if int(s.get("size_bytes", -1)) == row["size_bytes"]]
    return sized or hits


def _sim_cell(sims: list[dict], key: str, spec: str, scale: float = 1.0) -> str:
    vals = [
        float(s[key]) for s in sims if s.get(key) is not None and float(s[key]) == float(s[key])
    ]
    return _fmt(sum(vals) / len(vals), spec, scale) if vals else "–"


def _pick(rows: list[dict], experiment: str, **where: Any) -> dict | None:
    return first_row(rows, {"experiment": experiment, **where})


def statements(rows: list[dict]) -> list[str]:
    """What the real rows show, sentence by sentence, each from the measured numbers."""
    out = []
    wired = _pick(rows, "baseline", path="wired")
    wifi = _pick(rows, "baseline", path="wifi")
    mp = _pick(rows, "mptcp")
    if wired and wifi and mp:
        gain = mp["goodput_bps"] / wired["goodput_bps"] - 1
        out.append(
            f"MPTCP through the proxy reached {mp['goodput_bps'] / 1e6:.1f} Mbit/s against "
            f"{wired['goodput_bps'] / 1e6:.1f} (wired TCP) and {wifi['goodput_bps'] / 1e6:.1f} (Wi-Fi TCP): "
            f"{gain:+.0%} against the single path with the higher goodput, with {mp.get('wired_share', float('nan')):.0%} of "
            "the bytes on the wired subflow. " + real_verdicts(rows)["mptcp_wired_share"].sentence()
        )
    rb = sorted((r for r in rows if r["experiment"] == "rbuf"), key=lambda r: r["buffer_mb"])
    if len(rb) >= 2:
        lo, hi = rb[0], rb[-1]
        out.append(
            f"Client receive memory {lo['buffer_mb']:g} MB: {lo['goodput_bps'] / 1e6:.1f} Mbit/s, "
            f"{lo.get('retransmits', 0)} retransmissions; {hi['buffer_mb']:g} MB: "
            f"{hi['goodput_bps'] / 1e6:.1f} Mbit/s, {hi.get('retransmits', 0)} retransmissions"
            + _buffer_cost(lo["goodput_bps"] / hi["goodput_bps"] if hi["goodput_bps"] > 0 else 1.0)
            + (
                "; it also had fewer retransmissions: its window, not the routers' queues, bounded the flight."
                if (lo.get("retransmits") or 0) < (hi.get("retransmits") or 0)
                else "."
            )
        )
        out.append(real_verdicts(rows)["real_rbuf_small"].sentence())
    mtu, ref = _pick(rows, "mtu", transport="mptcp"), (rb[-1] if rb else None)
    if mtu and ref:
        small = [r for r in (_pick(rows, "mtu", transport="tcp", path=p) for p in C.PATHS) if r]
        alone = sum(r["goodput_bps"] for r in small)
        out.append(
            f"MTU 1000 at {ref['buffer_mb']:g} MB: {mtu['goodput_bps'] / 1e6:.1f} Mbit/s against "
            f"{ref['goodput_bps'] / 1e6:.1f} at MTU 1500 ({mtu['goodput_bps'] / ref['goodput_bps'] - 1:+.0%}; "
            "the Wi-Fi path's rate is the simulated AP's for 1000-byte frames)"
            + (
                f"; single-path TCP at MTU 1000 reached "
                f"{' and '.join(_fmt(r['goodput_bps'], '.1f', 1e-6) for r in small)} Mbit/s (wired, Wi-Fi), "
                f"so MPTCP got {mtu['goodput_bps'] / alone:.0%} of their sum"
                if len(small) == 2 and alone > 0
                else ""
            )
            + "."
        )
    for r in rows:
        if r["experiment"] != "throttle":
            continue
        rate = r["throttle_bps"] / 1e6
        if not r.get("throttled"):
            out.append(
                f"Throttled transfer '{r['label']}': the proxy installed no throttle "
                f"({r.get('throttle_errors', 0)} errors)."
            )
            continue
        out.append(
            f"Throttled transfer '{r['label']}' ({r['size_bytes'] / MB:g} MB, wired subflow to {rate:g} "
            f"Mbit/s): rule active {_fmt(r.get('throttle_latency_ms'), '.1f')} ms after the second subflow "
            f"(tc install {_fmt(r.get('throttle_install_ms'), '.1f')} ms), {r['throttle_t_s'] * 1e3:.0f} ms "
            f"into the transfer; the wired subflow then carried "
            f"{_fmt(r.get('wired_after_throttle_bps'), '.1f', 1e-6)} Mbit/s; total "
            f"{r['goodput_bps'] / 1e6:.1f} Mbit/s, Wi-Fi share "
            f"{r.get('wifi_share', float('nan')):.0%}."
        )
    long = _pick(rows, "throttle", label="long")
    if long and mp and wired and wifi:
        best = max(wired["goodput_bps"], wifi["goodput_bps"])
        out.append(
            f"The long throttled transfer's total, {long['goodput_bps'] / 1e6:.1f} Mbit/s, against "
            f"{mp['goodput_bps'] / 1e6:.1f} unthrottled, {wifi['goodput_bps'] / 1e6:.1f} (Wi-Fi TCP) and "
            f"{wired['goodput_bps'] / 1e6:.1f} (wired TCP); it is "
            f"{'above' if long['goodput_bps'] > best else 'below'} the single path with the higher goodput "
            f"({best / 1e6:.1f})."
        )
        vs = real_verdicts(rows)
        out += [
            vs[k].sentence() for k in ("throttle_long_total", "throttle_long_vs_tcp") if k in vs
        ]
    conv = _pick(rows, "conversion")
    if conv:
        syn, data = conv["syn_conversion_ms"], conv["data_conversion_ms"]
        out.append(
            f"Conversion delay of latlab's proxy over {conv['connections']} downloads of "
            f"{conv['size_bytes'] / 1e3:g} KB: SYN (client accepted → upstream SYN) median {syn:.3f} ms, "
            f"p99 {conv['syn_conversion_ms_p99']:.3f} ms; data (first byte in → out) median {data:.3f} ms, "
            f"p99 {conv['data_conversion_ms_p99']:.3f} ms."
        )
        out.append(real_verdicts(rows)["conversion"].sentence())
    if mp and mp.get("wifi_emu_timing_p99_us") is not None:
        out.append(
            f"The Wi-Fi-like path ({mp['wifi_delay_ms']:g} ms each way in `latlab-net emulate`, router mode): "
            f"the MPTCP transfer's Wi-Fi subflow had a mean smoothed RTT of {_fmt(mp.get('srtt_wifi_ms'))} ms "
            f"against {2 * mp['wifi_delay_ms']:g} ms of propagation (the wired one "
            f"{_fmt(mp.get('srtt_wired_ms'))} ms); the emulator wrote its packets toward the client "
            f"{_fmt(mp.get('wifi_emu_timing_p50_us'), '.0f')} µs (median) and "
            f"{_fmt(mp.get('wifi_emu_timing_p99_us'), '.0f')} µs (p99) from the model's schedule, and its "
            f"queue dropped {mp.get('wifi_emu_queue_drops', 0)} packets."
        )
    loaded = [r for r in rows if r.get("tcp_mem_pressure")]
    if loaded:
        out.append(
            "**Not measurements:** "
            + ", ".join(r["case"] for r in loaded)
            + " ran under TCP memory "
            "pressure (net.ipv4.tcp_mem), where Linux shrinks every receive window."
        )
    return out


def _buffer_cost(ratio: float) -> str:
    """The smaller buffer's goodput as a fraction of the larger's, in words (numbers only; the verdict compares)."""
    if ratio <= 1.0:
        return f" — the smaller buffer cost {1 - ratio:.0%} of the goodput"
    return f" — the smaller buffer was not slower ({ratio - 1:+.0%})"


def real_verdicts(rows: list[dict]) -> dict[str, Verdict]:
    """The study's statements judged on the real rows, by the simulated study's rules (mptcp.verdicts): the wired
    subflow's share, the small buffer, the long throttled transfer, and the real proxy's conversion delay (measured
    here, not an input as in the simulator)."""
    from latlab.studies.mptcp.references import REFERENCES
    from latlab.studies.mptcp.verdicts import DEGRADED, MOST, MOST_PARTLY, SLIGHTLY

    out: dict[str, Verdict] = {}
    wired, wifi = _pick(rows, "baseline", path="wired"), _pick(rows, "baseline", path="wifi")
    mp = _pick(rows, "mptcp")
    if mp and mp.get("wired_share") is not None:
        share = float(mp["wired_share"])
        ref = REFERENCES["mptcp_wired_share"]
        out[ref.key] = Verdict(
            ref,
            f"{share:.0%} (real)",
            "agrees" if share > MOST else "partly" if share > MOST_PARTLY else "differs",
            f"target above {100 * MOST:g} %, partly above {100 * MOST_PARTLY:g} %",
        )
    rb = sorted((r for r in rows if r["experiment"] == "rbuf"), key=lambda r: r["buffer_mb"])
    if len(rb) >= 2 and rb[-1]["goodput_bps"] > 0:
        lo, hi = rb[0], rb[-1]
        degraded = lo["goodput_bps"] < (1 - DEGRADED) * hi["goodput_bps"]
        losses = (lo.get("retransmits") or 0) > (hi.get("retransmits") or 0)
        study = REFERENCES["rbuf_small"]
        ref = Reference(
            "real_rbuf_small",
            f"Max TCP memory {lo['buffer_mb']:g} MB, real Linux MPTCP",
            words=study.words,
        )
        out[ref.key] = Verdict(
            ref,
            f"{lo['buffer_mb']:g} MB: {lo['goodput_bps'] / hi['goodput_bps']:.0%} of {hi['buffer_mb']:g} MB's "
            f"goodput, {lo.get('retransmits', 0)} retransmissions against {hi.get('retransmits', 0)} (real)",
            "agrees" if degraded and losses else "partly" if degraded or losses else "differs",
            f"target: goodput more than {100 * DEGRADED:g} % below the larger buffer's and more retransmissions; "
            "partly if one holds",
        )
    long = _pick(rows, "throttle", label="long")
    if long and mp and wired and wifi and mp["goodput_bps"] > 0:
        ratio = long["goodput_bps"] / mp["goodput_bps"]
        ref = REFERENCES["throttle_long_total"]
        out[ref.key] = Verdict(
            ref,
            f"{long['goodput_bps'] / 1e6:.1f} against {mp['goodput_bps'] / 1e6:.1f} Mbit/s ({ratio:.0%}, real)",
            "agrees" if 1 - SLIGHTLY <= ratio < 1 else "partly" if ratio < 1 else "differs",
            f"target within {100 * SLIGHTLY:g} % below the unthrottled total, partly if further below",
        )
        total, best = long["goodput_bps"], max(wired["goodput_bps"], wifi["goodput_bps"])
        ref = REFERENCES["throttle_long_vs_tcp"]
        out[ref.key] = Verdict(
            ref,
            f"{total / 1e6:.1f} Mbit/s; single-path TCP {wifi['goodput_bps'] / 1e6:.1f} on Wi-Fi, "
            f"{wired['goodput_bps'] / 1e6:.1f} wired (real)",
            "agrees" if total > best else "partly" if total > wifi["goodput_bps"] else "differs",
            "target: above single-path TCP on both paths; partly if above it on the Wi-Fi path only",
        )
    conv = _pick(rows, "conversion")
    if conv:
        added = float(conv["syn_conversion_ms"]) + float(conv["data_conversion_ms"])
        ref = REFERENCES["conversion"]
        outcome, rule = within(added, ref, CONV_AGREE, CONV_PARTLY)
        out[ref.key] = Verdict(
            ref,
            f"{added:.3f} ms (medians, SYN + data, latlab's real proxy)",
            outcome,
            rule,
        )
    return out


#: The real proxy's conversion delay (SYN + data medians) against the study's: tolerance and partly.
CONV_AGREE, CONV_PARTLY = 0.15, 0.40


def figure(rows: list[dict], out: Path) -> Path | None:
    """Throughput per subflow over time of the real MPTCP transfers (the study's figure style), one panel each."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [r for r in rows if r["transport"] == "mptcp" and r.get("series")]
    if not panels:
        return None
    cols = 2
    nrows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(10, 2.6 * nrows), squeeze=False)
    colors = {"wired": "tab:blue", "wifi": "tab:orange"}
    for ax, r in zip(axes.flat, panels):
        for p, pts in r["series"].items():
            if pts:
                ax.plot(
                    [t for t, _ in pts],
                    [v for _, v in pts],
                    color=colors.get(p, "k"),
                    label=C.PATHS.get(p, p),
                )
        if r.get("throttle_t_s") is not None:
            ax.axvline(r["throttle_t_s"], color="k", ls=":", lw=1, label="throttle active")
        ax.set_ylim(bottom=0)
        ax.set_title(r["case"], fontsize=9)
        ax.set_xlabel("time (s)")
        ax.set_ylabel("Mbit/s")
        ax.legend(fontsize=7, loc="upper right")
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def report_section(
    rows: list[dict],
    sim_rows: list[dict] | None = None,
    settings: RealSettings | None = None,
    command: str = "latlab reproduce mptcp --real",
    figure_path: str | None = None,
) -> str:
    """Markdown: the testbed, one table row per real transfer beside its simulated twin, and what they show.

    ``sim_rows`` are the simulated connection rows (the study's ``StudyData.conns`` as records: experiment,
    transport, path, label, size_bytes, buffer_mb, mtu_bytes, throttle_bps, goodput_bps, wired_share,
    retransmits); without them the simulated column is empty.
    """
    s = settings or QUICK_REAL
    sim_rows = sim_rows or []
    out = [
        f"Command: `{command}` (root, net.mptcp.enabled = 1). Namespaces: legacy server — latlab's proxy "
        "(`latlab-net proxy --to server`, MPTCP toward the client, plain TCP upstream) — a wired router "
        f"(tbf {s.wired_bps / 1e6:g} Mbit/s, no propagation delay) and a Wi-Fi-like router whose forwarding "
        f"goes through `latlab-net emulate` in router mode ({s.wifi_bps / 1e6:.1f} Mbit/s toward the client, "
        f"{s.wifi_small_mtu_bps / 1e6:.1f} at MTU 1000: the simulated AP's folded 802.11g rates; "
        f"{s.wifi_uplink_bps / 1e6:g} Mbit/s back; {s.wifi_delay_ms:g} ms one-way propagation delay each way, "
        f"{2 * s.wifi_delay_ms:g} ms RTT, where the simulated Wi-Fi path has {C.path_rtt_ms('wifi'):g} ms), each "
        f"with a {s.queue_packets}-packet queue — a client with an MPTCP subflow endpoint on its Wi-Fi "
        "interface. The server's link is unshaped. Upstream Linux MPTCP has no coupled congestion control: subflows run "
        f"{s.subflow_cc}, uncoupled (the simulation: LIA); the server CUBIC. Receive memory is the client "
        "namespace's net.ipv4.tcp_rmem maximum "
        f"({DEFAULT_RMEM_MB:g} MB unless stated). Per-subflow bytes are the proxy's MPTCP_TCPINFO samples "
        f"(bytes_acked every {s.sample_ms} ms, `--mptcp-log`); goodput is the client's bytes over connect → EOF.",
        "",
        "| case | goodput real / sim (Mbit/s) | wired share real / sim | wired / Wi-Fi real (Mbit/s) | "
        "srtt wired / Wi-Fi real (ms) | retrans. real | duration (s) | throttle active after 2nd subflow (ms) | "
        "load (1 min) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        sims = _sim_match(sim_rows, r)
        share = _fmt(r.get("wired_share"), ".0%") if r["transport"] == "mptcp" else "–"
        sim_share = _sim_cell(sims, "wired_share", ".0%") if r["transport"] == "mptcp" else "–"
        sim_good = _sim_cell(sims, "goodput_bps", ".1f", 1e-6)
        out.append(
            f"| {r['case']} | {_fmt(r['goodput_bps'], '.1f', 1e-6)} / {sim_good}"
            f" | {share} / {sim_share} | {_fmt(r.get('wired_goodput_bps'), '.1f', 1e-6)} / "
            f"{_fmt(r.get('wifi_goodput_bps'), '.1f', 1e-6)} | {_fmt(r.get('srtt_wired_ms'))} / "
            f"{_fmt(r.get('srtt_wifi_ms'))} | {r.get('retransmits', '–')} | "
            f"{r['duration_s']:.2f} | {_fmt(r.get('throttle_latency_ms'), '.1f')} | "
            f"{r.get('load_max_1m', '–')} |"
        )
    out += ["", *[f"- {x}" for x in statements(rows)]]
    if figure_path:
        out += ["", f"![Real per-subflow throughput]({figure_path})"]
    return "\n".join(out) + "\n"


def real_section(
    outdir: Path,
    quick: bool,
    sim_rows: list[dict] | None = None,
    progress: Callable[[dict[str, Any]], None] | None = None,
) -> str:
    """Everything ``reproduce(..., real=True)`` needs in one call: run the real set (quick or full) into
    ``outdir/real.jsonl``, draw ``outdir/real_subflows.png``, and return the report's Markdown section."""
    settings = QUICK_REAL if quick else FULL_REAL
    t0 = time.monotonic()
    rows = run_real(outdir, settings, progress)
    fig = figure(rows, Path(outdir) / "real_subflows.png")
    command = "latlab reproduce mptcp --real" + (" --quick" if quick else "")
    return (
        report_section(rows, sim_rows, settings, command, fig.name if fig else None)
        + f"\nThe real runs took {time.monotonic() - t0:.0f} s of wall time; rows in `real.jsonl`.\n"
    )


def earlier_section(outdir: Path, sim_rows: list[dict] | None = None) -> str | None:
    """The report's section from the rows an earlier ``--real`` run left in ``outdir/real.jsonl`` (the full set),
    rendered again without running anything; None without such rows."""
    jsonl = Path(outdir) / "real.jsonl"
    rows = load_rows(jsonl) if jsonl.exists() else []
    if not rows:
        return None
    fig = figure(rows, Path(outdir) / "real_subflows.png")
    command = "latlab reproduce mptcp --real"
    return (
        report_section(rows, sim_rows, FULL_REAL, command, fig.name if fig else None)
        + f"\nThese real rows are from an earlier run of `{command}`, kept in `real.jsonl`; this report renders "
        "them again beside the simulated rows above without running them.\n"
    )


def print_row(row: dict[str, Any]) -> None:
    """A progress line per real transfer."""
    print(
        f"real: {row['case']:36s} {row['goodput_bps'] / 1e6:7.1f} Mbit/s  wired share "
        f"{_fmt(row.get('wired_share'), '.0%'):>4s}  load {row.get('load_max_1m', '–')}",
        flush=True,
    )
