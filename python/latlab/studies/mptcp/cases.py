"""The MPTCP-proxy study's set-up: the testbed (server, proxy, a wired and a Wi-Fi path to a two-interface
client), the experiments, the settings of a full and a quick reproduction, and the scenario of one run.

The study downloaded files over HTTP from a legacy server (Apache) through a
proxy (Squid, caching off) that spoke MPTCP to the client and plain TCP to the
server, on a testbed whose client had wired Ethernet and Wi-Fi. It states no
link rates or delays; latlab's testbed is chosen to be that of a laboratory
of the time, and every choice is a named constant here that the report
prints:

* Ethernet everywhere at 100 Mbit/s (Fast Ethernet), sub-millisecond delays,
  switch-port buffers of 100 packets (12 ms at 100 Mbit/s);
* Wi-Fi: an 802.11g access point (54 Mbit/s PHY) in latlab's Wi-Fi AP model
  (one shared downlink buffer, link-layer retries with 802.11 back-off). The
  model sends a frame at its rate with no per-frame overhead, so the DCF's
  fixed costs (DIFS, mean back-off, preamble, SIFS, the MAC ACK) and the
  airtime of the client's TCP ACKs (one per two segments) are folded into
  that rate, per frame size: 25.1 Mbit/s of IP packets at MTU 1500, 19.8 at
  MTU 1000. This is why smaller frames cost Wi-Fi capacity, as on the air.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from typing import Any

# ----- the testbed ---------------------------------------------------------------------------------

#: Nodes: the legacy server, the proxy, the client's Ethernet switch, the Wi-Fi AP, the client.
SERVER, PROXY, SWITCH, AP, CLIENT = "server", "proxy", "eth", "ap", "client"

#: Fast Ethernet on every wired hop (the server's link, the proxy's, the client's).
ETHERNET_BPS = 100e6
#: One-way propagation and switching delay of each wired hop.
SERVER_DELAY_MS = 0.2  # server — proxy
LAN_DELAY_MS = 0.1  # proxy — switch, proxy — AP
CLIENT_WIRE_DELAY_MS = 0.1  # switch — client
#: A switch port's buffer: 100 packets, 12 ms at 100 Mbit/s.
ETHERNET_QUEUE_PACKETS = 100

#: 802.11g: 54 Mbit/s OFDM PHY, 9 µs slots, SIFS 10 µs, CWmin 15, 20 µs preamble + 6 µs signal extension,
#: MAC header + LLC + FCS 36 bytes per frame, MAC ACK (14 bytes) at the 24 Mbit/s basic rate.
WIFI_PHY_BPS = 54e6
WIFI_SLOT_US = 9.0
WIFI_SIFS_US = 10.0
WIFI_DIFS_US = WIFI_SIFS_US + 2 * WIFI_SLOT_US
WIFI_MEAN_BACKOFF_US = 7.5 * WIFI_SLOT_US
WIFI_PREAMBLE_US = 20.0 + 6.0
WIFI_MAC_BYTES = 36
WIFI_MAC_ACK_US = WIFI_PREAMBLE_US + 14 * 8 / 24.0
#: The client's TCP ACKs (IP length 52 bytes) contend for the same air: one per two data segments (delayed ACK).
TCP_ACK_IP_BYTES = 52
ACKS_PER_SEGMENT = 0.5
#: A few frames need a link-layer retry (802.11 back-off, up to 7 attempts).
WIFI_FRAME_ERROR_PROB = 0.02
#: The AP's one downlink buffer (a consumer AP's driver queue), and the radio's one-way delay.
WIFI_AP_PACKETS = 100
WIFI_RADIO_DELAY_MS = 1.0
#: The client's uplink (ACKs only): a plain link at the folded rate.
WIFI_UPLINK_BPS = 20e6


def wifi_exchange_us(ip_bytes: float) -> float:
    """Airtime of one data frame of ``ip_bytes`` with its DCF costs: DIFS, mean back-off, preamble, frame, SIFS, ACK."""
    frame_us = WIFI_PREAMBLE_US + (ip_bytes + WIFI_MAC_BYTES) * 8 / (WIFI_PHY_BPS / 1e6)
    return WIFI_DIFS_US + WIFI_MEAN_BACKOFF_US + frame_us + WIFI_SIFS_US + WIFI_MAC_ACK_US


def wifi_rate_bps(mtu_bytes: int) -> float:
    """The AP model's rate for full-sized packets of ``mtu_bytes``: IP bytes over the airtime they cost, the TCP
    ACKs sent back over the same air included."""
    per_packet_us = wifi_exchange_us(mtu_bytes) + ACKS_PER_SEGMENT * wifi_exchange_us(
        TCP_ACK_IP_BYTES
    )
    return mtu_bytes * 8 / per_packet_us * 1e6


#: TCP: Linux defaults, timestamps on: 52 bytes of IP + TCP headers, so MSS = MTU − 52.
HEADER_BYTES = 52
MTU_BYTES = 1500
SMALL_MTU_BYTES = 1000


def mss_of(mtu_bytes: int) -> int:
    return mtu_bytes - HEADER_BYTES


#: Legacy server and the proxy's upstream connection: CUBIC (Linux's default).
LEGACY_CC = "cubic"
#: MPTCP: coupled congestion control (LIA, RFC 6356) and Linux's default scheduler (lowest RTT first).
MPTCP_CC = "lia"
MPTCP_SCHEDULER = "minrtt"
#: Both subflows open with the connection (latlab's proxy opens every subflow at once; MP_JOIN's extra round trip
#: on a LAN is well under a millisecond).
WIFI_JOIN_S = 0.0

#: The receive buffer: the study's "max TCP memory" (tcp_rmem max) counts socket memory, of which Linux (with
#: tcp_adv_win_scale = 1, the default of the study's kernels) advertises half as window. latlab's MPTCP receive
#: buffer is the data-level window itself, so it gets half of the study's figure.
WINDOW_FRACTION = 0.5
STUDY_BUFFERS_MB = (0.18, 0.72)
DEFAULT_BUFFER_MB = 0.72

#: The proxy: Squid relays through a bounded buffer; the study's user-space proxy added these conversion delays.
RELAY_BYTES = 1_000_000
STUDY_SYN_DELAY_MS = 7.8
STUDY_DATA_DELAY_MS = 15.3
#: Throttling: the study names no rate; latlab halves the wired path (50 Mbit/s) for the verdicts, so that the
#: throttled wired subflow and the Wi-Fi path together fall short of the server's 100 Mbit/s, and the full run
#: sweeps two lower rates beside it.
THROTTLE_BPS = 50e6
#: The study's proxy detected the second subflow by sniffing TCP options and then installed HTB rules: in the
#: first transfer the throttle starts this long after the connection has two subflows; once installed, a
#: repeated transfer is throttled as soon as its second subflow is up.
THROTTLE_INSTALL_S = 0.2
#: HTB's leaf queue: 50 ms at the throttled rate (at least 30 KB).
THROTTLE_QUEUE_MS = 50.0

PATHS: dict[str, str] = {"wired": "wired (Ethernet)", "wifi": "Wi-Fi"}

#: The two MPTCP senders of the receive-buffer and MTU experiments, by whether they keep new data inside the
#: connection-level window (RFC 8684 §3.3.4: Data ACK + window, over all subflows together). latlab's sender does;
#: one that applies the advertised window only in each subflow's own sequence space lets its subflows together
#: overrun the shared buffer, so the receiver drops what does not fit: what the study's receiver drops at 0.18 MB
#: point to. Every other experiment uses the RFC sender.
SENDERS: dict[bool, str] = {True: "data-level window (RFC 8684)", False: "per-subflow window"}


def path_rtt_ms(path: str) -> float:
    """Unloaded round-trip propagation delay server → client on one path (serialisation and queues excluded)."""
    last = CLIENT_WIRE_DELAY_MS if path == "wired" else WIFI_RADIO_DELAY_MS
    return 2 * (SERVER_DELAY_MS + LAN_DELAY_MS + last)


def path_rate_bps(path: str, mtu_bytes: int = MTU_BYTES) -> float:
    """The bottleneck rate of one path for IP packets (wired: the Ethernet links; Wi-Fi: the folded AP rate)."""
    return ETHERNET_BPS if path == "wired" else min(ETHERNET_BPS, wifi_rate_bps(mtu_bytes))


# ----- experiments -----------------------------------------------------------------------------------

#: Experiment keys, in the report's order.
EXPERIMENTS: dict[str, str] = {
    "baseline": "Legacy single-path TCP, wired and Wi-Fi",
    "mptcp": "MPTCP through the proxy",
    "rbuf": "Receive buffer",
    "mtu": "MTU 1000 bytes",
    "throttle": "Throttling the wired subflow",
    "conversion": "Conversion delay",
}
MB = 1_000_000


@dataclass(frozen=True)
class Settings:
    """How much work a reproduction does (full or --quick)."""

    large_bytes: int  # the long transfer (the study's 200 MB)
    small_bytes: int  # the short transfer (the study's 5 MB)
    object_bytes: int  # a small web object (conversion delay)
    sweep_bytes: int  # each point of the receive-buffer sweep and the MTU runs
    buffers_mb: tuple[float, ...]  # the sweep's tcp_rmem max values
    throttle_bps: tuple[
        float, ...
    ]  # throttle rates of the long transfer (the first is the verdicts')
    seeds: tuple[int, ...]
    buffer_seeds: tuple[int, ...] = ()  # the buffer sweep's seeds (default: ``seeds``)
    figure_seed: int = 1

    @property
    def sweep_seeds(self) -> tuple[int, ...]:
        return self.buffer_seeds or self.seeds


#: Full: the study's 200 MB and 5 MB, a sixteen-point buffer sweep of 50 MB transfers over five seeds (finer where
#: the per-subflow-window sender's curve is not monotonic), three throttle rates, three seeds elsewhere.
FULL = Settings(
    large_bytes=200 * MB,
    small_bytes=5 * MB,
    object_bytes=100_000,
    sweep_bytes=50 * MB,
    buffers_mb=(
        0.06,
        0.09,
        0.12,
        0.15,
        0.18,
        0.21,
        0.24,
        0.27,
        0.30,
        0.33,
        0.36,
        0.42,
        0.48,
        0.60,
        0.72,
        1.0,
    ),
    throttle_bps=(THROTTLE_BPS, 25e6, 10e6),
    seeds=(1, 2, 3),
    buffer_seeds=(1, 2, 3, 4, 5),
)
#: Quick: a 20 MB long transfer, a five-point sweep of 10 MB transfers, one throttle rate, one seed.
QUICK = Settings(
    large_bytes=20 * MB,
    small_bytes=5 * MB,
    object_bytes=100_000,
    sweep_bytes=10 * MB,
    buffers_mb=(0.09, 0.18, 0.36, 0.48, 0.72),
    throttle_bps=(THROTTLE_BPS,),
    seeds=(1,),
)


@dataclass(frozen=True)
class Run:
    """One simulation: one download from the server to the client.

    ``transport`` "tcp" is a legacy single-path connection on ``path``;
    "mptcp" a connection over both paths, split at the proxy when ``proxy``.
    ``throttle_bps`` (0: none) limits the wired subflow at the proxy,
    ``throttle_after_s`` after the connection has two subflows. ``conversion``
    puts the study's SYN and data conversion delays into the proxy.
    ``data_window`` False: the MPTCP sender applies the receiver's window
    per subflow only, so its subflows together can overrun the buffer (see
    SENDERS).
    """

    experiment: str
    transport: str
    size_bytes: int
    path: str = "both"
    buffer_mb: float = DEFAULT_BUFFER_MB
    mtu_bytes: int = MTU_BYTES
    throttle_bps: float = 0.0
    throttle_after_s: float = 0.0
    proxy: bool = True
    conversion: bool = True
    data_window: bool = True
    seed: int = 1
    label: str = ""

    def __post_init__(self) -> None:
        check(self)

    @property
    def sample_interval_ms(self) -> float:
        """Fine samples for short transfers (a 5 MB download takes about half a second)."""
        return 5.0 if self.size_bytes <= 10 * MB else 20.0 if self.size_bytes <= 50 * MB else 50.0

    @property
    def duration_s(self) -> float:
        """Long enough for the transfer at the slowest rate it can meet (the Wi-Fi path alone, or a collapsed
        receive buffer), with room to spare; a run idles cheaply once its transfer is done."""
        floor_bps = 12e6
        return round(self.size_bytes * 8 / floor_bps * 1.3 + 2.0, 1)

    @property
    def params(self) -> dict[str, Any]:
        return {
            "experiment": self.experiment,
            "transport": self.transport,
            "path": self.path,
            "size_bytes": self.size_bytes,
            "buffer_mb": self.buffer_mb,
            "mtu_bytes": self.mtu_bytes,
            "throttle_bps": self.throttle_bps,
            "throttle_after_s": self.throttle_after_s,
            "proxy": self.proxy,
            "conversion": self.conversion,
            "data_window": self.data_window,
            "seed": self.seed,
            "label": self.label,
        }

    def scenario(self) -> dict[str, Any]:
        return build(self)


def check(run: Run) -> None:
    """A clear error for a run no scenario can be built for."""
    if run.experiment not in EXPERIMENTS:
        raise ValueError(f"experiment: expected one of {list(EXPERIMENTS)}, got {run.experiment!r}")
    if run.transport not in ("tcp", "mptcp"):
        raise ValueError(f"transport: expected 'tcp' or 'mptcp', got {run.transport!r}")
    if run.transport == "tcp" and run.path not in PATHS:
        raise ValueError(f"path: a single-path run needs one of {list(PATHS)}, got {run.path!r}")
    if run.transport == "mptcp" and run.path != "both":
        raise ValueError(f"path: an MPTCP run uses both paths ('both'), got {run.path!r}")
    if run.size_bytes <= 0:
        raise ValueError(f"size_bytes: expected a positive transfer size, got {run.size_bytes!r}")
    if not 0.01 <= run.buffer_mb <= 64:
        raise ValueError(f"buffer_mb: expected 0.01..64 MB, got {run.buffer_mb!r}")
    if not 576 <= run.mtu_bytes <= 9000:
        raise ValueError(f"mtu_bytes: expected 576..9000, got {run.mtu_bytes!r}")
    if run.throttle_bps < 0 or run.throttle_after_s < 0:
        raise ValueError("throttle_bps, throttle_after_s: expected non-negative values")
    if run.throttle_bps and not (run.transport == "mptcp" and run.proxy):
        raise ValueError(
            "throttle_bps: throttling is the proxy's; it needs an MPTCP run through the proxy"
        )


# ----- what the core supports -------------------------------------------------------------------------


@cache
def supports(feature: str) -> bool:
    """Whether this build's simulator accepts MPTCP flows ("mptcp") or the MPTCP proxy node ("proxy")."""
    from latlab import Scenario, _native

    run = Run("mptcp", "mptcp", 100_000, proxy=(feature == "proxy"))
    sc = Scenario.from_dict(build(run), source=f"<mptcp study: {feature} support>")
    try:
        # Building the simulation (not just parsing the scenario) is what a build without the feature refuses.
        _native.core().Simulation(sc.to_toml(), sc.core_source, None)
    except Exception:  # noqa: BLE001 - any rejection means the feature is missing from this build
        return False
    return True


def runs_of(settings: Settings, proxy: bool = True) -> list[Run]:
    """Every run of a reproduction. ``proxy`` False runs the MPTCP cases end to end (no split connection, no
    throttling, no conversion delay): what a build without the proxy node can do."""
    out: list[Run] = []
    big, small, sweep = settings.large_bytes, settings.small_bytes, settings.sweep_bytes
    conv = proxy  # the study's proxy had its conversion delays
    mp = {"proxy": proxy, "conversion": conv}
    for seed in settings.sweep_seeds:
        for data_window in SENDERS:
            out += [
                Run("rbuf", "mptcp", sweep, buffer_mb=mb, data_window=data_window, seed=seed, **mp)
                for mb in sorted(set(settings.buffers_mb) | set(STUDY_BUFFERS_MB))
            ]
    for seed in settings.seeds:
        for size in (big, small):
            out += [Run("baseline", "tcp", size, path=p, seed=seed) for p in PATHS]
            out.append(Run("mptcp", "mptcp", size, seed=seed, **mp))
        for data_window in SENDERS:
            out.append(
                Run(
                    "mtu",
                    "mptcp",
                    sweep,
                    mtu_bytes=SMALL_MTU_BYTES,
                    data_window=data_window,
                    seed=seed,
                    **mp,
                )
            )
        out += [
            Run("mtu", "tcp", sweep, path=p, mtu_bytes=SMALL_MTU_BYTES, seed=seed) for p in PATHS
        ]
        if proxy:
            out.append(
                Run(
                    "throttle",
                    "mptcp",
                    small,
                    throttle_bps=settings.throttle_bps[0],
                    throttle_after_s=THROTTLE_INSTALL_S,
                    seed=seed,
                    label="first",
                    **mp,
                )
            )
            out.append(
                Run(
                    "throttle",
                    "mptcp",
                    small,
                    throttle_bps=settings.throttle_bps[0],
                    seed=seed,
                    label="repeated",
                    **mp,
                )
            )
            out += [
                Run("throttle", "mptcp", big, throttle_bps=r, seed=seed, label="long", **mp)
                for r in settings.throttle_bps
            ]
            for size in (settings.object_bytes, small):
                out += [
                    Run("conversion", "mptcp", size, conversion=c, seed=seed) for c in (False, True)
                ]
    return out


# ----- the scenario of one run -------------------------------------------------------------------------


def topology(
    interfaces: tuple[str, ...] = ("wired", "wifi"), mtu_bytes: int = MTU_BYTES
) -> dict[str, Any]:
    """server — proxy, then two ways to the client: proxy — switch — client (Ethernet) and proxy — AP ⇢ client
    (Wi-Fi). A single-path baseline brings only one of the client's interfaces up."""
    eth_q = {"kind": "droptail", "limit_packets": ETHERNET_QUEUE_PACKETS}
    nodes = (
        [SERVER, PROXY]
        + ([SWITCH] if "wired" in interfaces else [])
        + ([AP] if "wifi" in interfaces else [])
    )
    links = [
        {
            "from": SERVER,
            "to": PROXY,
            "rate_bps": ETHERNET_BPS,
            "delay_ms": SERVER_DELAY_MS,
            "queue": eth_q,
        }
    ]
    aps: list[dict[str, Any]] = []
    if "wired" in interfaces:
        links += [
            {
                "from": PROXY,
                "to": SWITCH,
                "rate_bps": ETHERNET_BPS,
                "delay_ms": LAN_DELAY_MS,
                "queue": eth_q,
            },
            {
                "from": SWITCH,
                "to": CLIENT,
                "rate_bps": ETHERNET_BPS,
                "delay_ms": CLIENT_WIRE_DELAY_MS,
                "queue": eth_q,
            },
        ]
    if "wifi" in interfaces:
        links.append(
            {
                "from": PROXY,
                "to": AP,
                "rate_bps": ETHERNET_BPS,
                "delay_ms": LAN_DELAY_MS,
                "queue": eth_q,
            }
        )
        aps.append(
            {
                "node": AP,
                "rate": {"constant_bps": wifi_rate_bps(mtu_bytes)},
                "frame_error_prob": WIFI_FRAME_ERROR_PROB,
                "radio_delay_ms": WIFI_RADIO_DELAY_MS,
                "uplink_rate": {"constant_bps": WIFI_UPLINK_BPS},
                "ap": {"queue": {"kind": "droptail", "limit_packets": WIFI_AP_PACKETS}},
                "stations": [{"node": CLIENT}],
            }
        )
    out: dict[str, Any] = {
        "kind": "custom",
        "nodes": [{"name": n} for n in nodes + [CLIENT]],
        "links": links,
    }
    if aps:
        out["aps"] = aps
    return out


def window_bytes(buffer_mb: float) -> int:
    """latlab's data-level receive window for the study's max TCP memory (see WINDOW_FRACTION)."""
    return int(buffer_mb * MB * WINDOW_FRACTION)


def throttle_queue_bytes(rate_bps: float) -> int:
    return max(30_000, int(rate_bps * THROTTLE_QUEUE_MS / 1e3 / 8))


def mptcp_table(run: Run) -> dict[str, Any]:
    """The flow's [flows.mptcp] table: scheduler, receive buffer, the two paths, and the proxy if any."""
    table: dict[str, Any] = {
        "scheduler": MPTCP_SCHEDULER,
        "recv_buffer_bytes": window_bytes(run.buffer_mb),
        "enforce_data_window": run.data_window,
        "opportunistic_retransmit": False,
        "penalise_slow_subflows": False,
        "paths": [
            {"name": "wired", "via": [SWITCH], "join_s": 0.0, "backup": False},
            {"name": "wifi", "via": [AP], "join_s": WIFI_JOIN_S, "backup": False},
        ],
    }
    if run.proxy:
        proxy: dict[str, Any] = {
            "node": PROXY,
            "relay_bytes": RELAY_BYTES,
            "upstream_cc": LEGACY_CC,
            "syn_delay_ms": STUDY_SYN_DELAY_MS if run.conversion else 0.0,
            "data_delay_ms": STUDY_DATA_DELAY_MS if run.conversion else 0.0,
        }
        if run.throttle_bps:
            proxy["throttle"] = {
                "path": "wired",
                "rate_bps": run.throttle_bps,
                "after_s": run.throttle_after_s,
                "queue_bytes": throttle_queue_bytes(run.throttle_bps),
            }
        table["proxy"] = proxy
    return table


def run_name(run: Run) -> str:
    parts = [
        run.experiment,
        run.transport,
        run.path,
        f"{run.size_bytes / MB:g}MB",
        f"{run.buffer_mb:g}mb",
        f"mtu{run.mtu_bytes}",
    ]
    if run.throttle_bps:
        parts.append(f"thr{run.throttle_bps / 1e6:g}M@{run.throttle_after_s:g}s")
    if run.transport == "mptcp":
        parts.append("proxy" if run.proxy else "e2e")
        if not run.data_window:
            parts.append("sfwin")
        if run.proxy and not run.conversion:
            parts.append("noconv")
    return "mptcp-study-" + "-".join(parts)


def build(run: Run) -> dict[str, Any]:
    """The scenario (a dict) of one run: one download, server → client."""
    check(run)
    flow: dict[str, Any] = {
        "name": "mp" if run.transport == "mptcp" else f"tcp-{run.path}",
        "kind": run.transport,
        "src": SERVER,
        "dst": CLIENT,
        "size_bytes": run.size_bytes,
    }
    if run.transport == "mptcp":
        flow["cc"] = MPTCP_CC
        flow["mptcp"] = mptcp_table(run)
        interfaces: tuple[str, ...] = tuple(PATHS)
    else:
        flow["cc"] = LEGACY_CC
        interfaces = (run.path,)
    return {
        "name": run_name(run),
        "seed": run.seed,
        "duration_s": run.duration_s,
        "sample_interval_ms": run.sample_interval_ms,
        "tcp": {
            "preset": "linux",
            "mss_bytes": mss_of(run.mtu_bytes),
            "header_bytes": HEADER_BYTES,
            "timestamps": True,
        },
        "topology": topology(interfaces, run.mtu_bytes),
        "flows": [flow],
    }


def with_seed(run: Run, seed: int) -> Run:
    return replace(run, seed=seed)
