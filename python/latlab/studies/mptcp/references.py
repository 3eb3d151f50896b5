"""The MPTCP-proxy study's reference points: what it states, in latlab's words, as data.

The study ran a two-interface client (Ethernet and Wi-Fi) that speaks MPTCP,
an HTTP proxy that converts MPTCP to plain TCP, and a legacy web server. Its
findings, as judged here (rules in :mod:`latlab.studies.mptcp.verdicts`):

* through the proxy, the connection aggregates both subflows, but the wired
  subflow, whose RTT is lower, carries most of the bytes, and the Wi-Fi
  subflow is hardly used while nothing congests the wired path;
* with the client's maximum TCP memory at 0.18 MB the receiver drops data,
  segments are retransmitted and the download suffers; at 0.72 MB it runs
  steadily, and the study puts the need at about 0.48 MB;
* at 0.72 MB, an MTU of 1000 bytes (more segments, more reordering between
  the paths) degrades the download;
* throttling the wired subflow at the proxy moves traffic to the Wi-Fi
  subflow (coupled congestion control steers it); over a 200 MB download the
  total ends a little below the unthrottled one but above single-path TCP;
  a 5 MB download was throttled twice, first while the throttling rules were
  still being installed, then again with the rules in place;
* the study's user-space proxy needed about 7.8 ms to turn a client's SYN
  into its own SYN to the server, and about 15.3 ms to forward a data segment.
"""

from __future__ import annotations

from latlab.studies._verdict import Paper, Reference
from latlab.studies.mptcp.cases import SENDERS, STUDY_DATA_DELAY_MS, STUDY_SYN_DELAY_MS

PAPER = Paper(
    authors="MPTCP-proxy study",
    title="An MPTCP proxy: converting MPTCP to TCP for legacy servers, with per-subflow bandwidth throttling",
    venue="testbed measurements with a two-interface MPTCP client (Ethernet and Wi-Fi), a Squid proxy "
    "(caching off) and an Apache server",
)

#: The receive buffer (max TCP memory, MB) the study cites as needed on its testbed (the guidance's figure).
NEEDED_BUFFER_MB = 0.48
#: Key suffix of the references judged on the per-subflow-window sender.
SFWIN = "_sfwin"


def _refs() -> list[Reference]:
    out = [
        Reference(
            "mptcp_wired_share",
            "Through the proxy: the wired (lower-RTT) subflow's share of the bytes",
            words="most of the traffic",
        ),
        Reference(
            "mptcp_wifi_share",
            "Through the proxy: the Wi-Fi subflow's share of the bytes, no congestion",
            words="little used",
        ),
        Reference(
            "rbuf_guidance",
            "The 2·ΣBW·RTT_max receive-buffer guidance on the testbed's paths",
            NEEDED_BUFFER_MB,
            "MB",
            fmt="{:.2f}",
        ),
    ]
    # The receive-buffer and MTU statements, judged for each of latlab's two MPTCP senders (cases.SENDERS).
    for data_window, suffix in ((True, ""), (False, SFWIN)):
        tag = f" ({SENDERS[data_window]} sender)"
        out += [
            Reference(
                f"rbuf_small{suffix}",
                "Max TCP memory 0.18 MB" + tag,
                words="receiver drops, retransmissions, degraded download",
            ),
            Reference(f"rbuf_large{suffix}", "Max TCP memory 0.72 MB" + tag, words="stable"),
            Reference(
                f"rbuf_needed{suffix}",
                "Smallest stable max TCP memory" + tag,
                NEEDED_BUFFER_MB,
                "MB",
                fmt="{:.2f}",
            ),
            Reference(
                f"rbuf_suffices{suffix}",
                "Smallest stable buffer against the guidance" + tag,
                words="the guidance suffices",
            ),
            Reference(
                f"mtu_small{suffix}",
                "MTU 1000 bytes at 0.72 MB, beside MTU 1500" + tag,
                words="degraded (more segments, more reordering)",
            ),
        ]
    out += [
        Reference(
            "throttle_small_shift",
            "5 MB, wired subflow throttled, rules in place: traffic moves to Wi-Fi",
            words="shifts to the Wi-Fi subflow",
        ),
        Reference(
            "throttle_long_shift",
            "200 MB, wired subflow throttled: traffic moves to Wi-Fi",
            words="shifts to the Wi-Fi subflow",
        ),
        Reference(
            "throttle_long_total",
            "200 MB, wired subflow throttled: total throughput / unthrottled",
            words="slightly below the unthrottled total",
        ),
        Reference(
            "throttle_long_vs_tcp",
            "200 MB, wired subflow throttled: total beside single-path TCP",
            words="above single-path TCP",
        ),
        Reference(
            "conversion",
            "Conversion delay a small download pays (SYN + data)",
            STUDY_SYN_DELAY_MS + STUDY_DATA_DELAY_MS,
            "ms",
            fmt="{:.1f}",
        ),
    ]
    return out


REFERENCES: dict[str, Reference] = {r.key: r for r in _refs()}
