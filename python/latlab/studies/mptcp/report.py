"""The MPTCP-proxy study's report: set-up, single-path TCP, MPTCP through the proxy, the receive buffer, MTU 1000,
throttling, conversion delay, and where latlab differs.

Every sentence that compares with the study comes from a verdict
(:mod:`latlab.studies.mptcp.verdicts`); every other number is measured or
derived from the set-up in :mod:`latlab.studies.mptcp.cases`, never typed in.
"""

from __future__ import annotations

import pandas as pd

from latlab.studies._markdown import num as _f
from latlab.studies._markdown import pct as _pct
from latlab.studies._markdown import table as _table
from latlab.studies._verdict import Verdict
from latlab.studies._verdict import summary as verdict_summary
from latlab.studies.mptcp import cases as C
from latlab.studies.mptcp.metrics import (
    STABLE_FRACTION,
    STALL_S,
    StudyData,
    buffer_curve,
    guidance_parts,
    mean_of,
    pick,
    smallest_stable_mb,
    stable_pockets,
    stable_sizes,
    value_range,
)
from latlab.studies.mptcp.references import PAPER, SFWIN
from latlab.studies.mptcp.verdicts import verdicts


def _mbps(x: float) -> str:
    return _f(x / 1e6, "{:.1f}")


def _ms(x: float) -> str:
    return _f(x, "{:.1f}")


def _why(vs: dict[str, Verdict], data: StudyData, settings: C.Settings) -> dict[str, str]:
    """Why each differing verdict differs: the mechanism, with latlab's own numbers."""
    why: dict[str, str] = {}
    conns = data.conns
    big = pick(conns, "mptcp", size_bytes=settings.large_bytes)
    for key in ("mptcp_wired_share", "mptcp_wifi_share"):
        if key in vs and len(big):
            why[key] = (
                f"the minimum-RTT scheduler sends on the Wi-Fi subflow only while the wired subflow's window "
                f"is full; the wired subflow's mean smoothed RTT was {_ms(mean_of(big, 'srtt_wired_ms'))} ms "
                f"and the Wi-Fi one's {_ms(mean_of(big, 'srtt_wifi_ms'))} ms, and the server's "
                f"{C.ETHERNET_BPS / 1e6:g} Mbit/s link caps what the proxy has to send"
            )
    if "rbuf_small" in vs:
        why["rbuf_small"] = _small_buffer_why(conns)
    g = guidance_parts(conns)
    for key in (
        "rbuf_needed",
        "rbuf_needed" + SFWIN,
        "rbuf_guidance",
        "rbuf_suffices",
        "rbuf_suffices" + SFWIN,
    ):
        if key in vs and g:
            why[key] = (
                f"the buffer a path set needs scales with ΣBW·RTT_max; latlab's paths give ΣBW = "
                f"{_mbps(g['bw_wired_bps'] + g['bw_wifi_bps'])} Mbit/s and RTT_max = {_ms(g['rtt_max_ms'])} ms "
                "(the Wi-Fi subflow's RTT with its queue), a testbed choice, not the study's measurement"
            )
    rfc = buffer_curve(conns, True)
    if "rbuf_needed" in vs and len(rfc) and smallest_stable_mb(rfc) == rfc.index.min():
        why["rbuf_needed"] += (
            "; with the RFC sender no buffer on the grid degrades the download, so the smallest "
            "on the grid counts as stable"
        )
    for key in ("mtu_small", "mtu_small" + SFWIN):
        if key in vs:
            why[key] = (
                "in latlab a smaller MTU costs header bytes and Wi-Fi airtime per frame; the reordering "
                "between paths is set by their RTTs, which the MTU hardly changes, and latlab's receive "
                "buffer counts payload bytes, not the per-packet memory overhead that grows with the "
                "number of segments in Linux"
            )
    if "throttle_long_vs_tcp" in vs:
        tcp_wired = mean_of(
            pick(conns, "baseline", path="wired", size_bytes=settings.large_bytes), "goodput_bps"
        )
        why["throttle_long_vs_tcp"] = (
            f"in latlab's testbed the server's {C.ETHERNET_BPS / 1e6:g} Mbit/s link caps the unthrottled MPTCP "
            f"connection ({_mbps(mean_of(big, 'goodput_bps'))} Mbit/s) and wired TCP ({_mbps(tcp_wired)} Mbit/s) "
            "alike, so a throttled total below the unthrottled one is below wired TCP too; the study's statement "
            "needs an unthrottled MPTCP total above wired TCP"
        )
    for key in ("throttle_small_shift", "throttle_long_shift", "throttle_long_total"):
        if key in vs:
            why[key] = (
                f"the outcome follows from the throttle rate ({settings.throttle_bps[0] / 1e6:g} Mbit/s, a "
                "choice: the study names none) against the Wi-Fi path's capacity and the server's link; "
                "the throttle-rate sweep in section 5 shows how it moves"
            )
    return why


def _range(r: pd.Series, column: str) -> str:
    """A column's mean over seeds with its range, "–" when missing."""
    mean, lo, hi = r.get(column), r.get(f"{column}_lo"), r.get(f"{column}_hi")
    if mean is None or not pd.notna(mean):
        return "–"
    if lo is None or not pd.notna(lo) or lo == hi:
        return f"{mean:.0f}"
    return f"{mean:.0f} ({lo:.0f}–{hi:.0f})"


def _curve_words(curve: pd.DataFrame, sender: str) -> str:
    """What the curve shows, from its numbers: the smallest stable size, the unstable ones, and pockets."""
    ok = stable_sizes(curve)
    found = smallest_stable_mb(curve)
    n_seeds = int(curve["seeds"].min()) if "seeds" in curve else 1
    bad = [f"{mb:g}" for mb, good in ok.items() if not good]
    text = (
        f"A size is stable when each of its {n_seeds} seeds reaches {100 * STABLE_FRACTION:g} % of the sweep's "
        "best mean goodput; the smallest stable buffer is the smallest size from which on every size of the grid "
        f"is stable. With the {sender} sender: "
    )
    if found == found:
        text += f"the smallest stable buffer is **{found:g} MB**"
    else:
        text += "no size is stable from some point on up to the grid's largest"
    text += "; unstable: " + ", ".join(bad) + " MB" if bad else "; every size on the grid is stable"
    pockets = stable_pockets(curve)
    if pockets:
        text += (
            "; stable below an unstable size (the curve is not monotonic): "
            + ", ".join(f"{mb:g}" for mb in pockets)
            + " MB"
        )
    drops = curve["recv_drops"]
    with_drops = drops[drops > 0]
    if len(with_drops):
        text += (
            f". Receiver drops occur at {', '.join(f'{mb:g}' for mb in with_drops.index)} MB "
            f"(mean {with_drops.max():.0f} at most, at {with_drops.idxmax():g} MB)"
        )
    else:
        text += ". The receiver drops nothing at any size"
    return text + "."


def _trace_evidence(curve: pd.DataFrame, sender: str) -> list[str]:
    """Where the curve is not monotonic: what the runs' traces show at each stable size below an unstable one, and
    at the unstable sizes next to it on the grid."""
    pockets = stable_pockets(curve)
    if not pockets or "early_occupancy_peak" not in curve:
        return []
    ok = stable_sizes(curve)
    out = [
        f"**Why the {sender} curve is not monotonic: the traces** (mean over seeds; first second: the largest "
        "out-of-order occupancy and the largest sum of the two subflows' cwnds, as a share of the window; stalled: "
        f"time with no delivery to the application for {1e3 * STALL_S:g} ms or more)\n",
        _table(
            [
                "max TCP memory (MB)",
                "stable",
                "first second: out-of-order peak",
                "first second: cwnd sum peak",
                "wired cwnd (KB)",
                "Wi-Fi cwnd (KB)",
                "Wi-Fi share",
                "receiver drops",
                "timeouts",
                "stalled (s)",
            ],
            [
                [
                    f"{mb:g}",
                    "yes" if ok[mb] else "**no**",
                    _pct(r["early_occupancy_peak"], "{:.0f} %"),
                    _pct(r["early_cwnd_sum_peak"], "{:.0f} %"),
                    _f(r.get("cwnd_wired_kb"), "{:.0f}"),
                    _f(r.get("cwnd_wifi_kb"), "{:.0f}"),
                    _pct(r.get("wifi_share"), "{:.0f} %"),
                    _range(r, "recv_drops"),
                    _range(r, "timeouts"),
                    _f(r.get("stall_s"), "{:.2f}"),
                ]
                for mb, r in curve.iterrows()
            ],
        ),
        "",
    ]
    sizes = list(curve.index)
    over = [mb for mb in sizes if curve.loc[mb, "early_cwnd_sum_peak"] > 1]
    words = []
    if over:
        words.append(
            "The per-subflow-window sender lets each subflow fill the whole window on its own, so it can overrun "
            "the buffer wherever the two cwnds together exceed the window: in the first second they did at "
            f"{', '.join(f'{mb:g}' for mb in over)} MB (up to {max(over):g} MB)."
        )
    for p in pockets:
        i = sizes.index(p)
        near = [sizes[j] for j in (i - 1, i + 1) if 0 <= j < len(sizes) and not ok[sizes[j]]]
        r = curve.loc[p]
        text = (
            f"At {p:g} MB (stable) the out-of-order data peaked at {100 * r['early_occupancy_peak']:.0f} % of the "
            f"window in the first second, the wired subflow's cwnd averaged {r['cwnd_wired_kb']:.0f} KB against a "
            f"{C.window_bytes(p) / 1e3:g} KB window, the Wi-Fi subflow carried {100 * r['wifi_share']:.0f} % and "
            f"the receiver dropped {r['recv_drops']:.0f} segments"
        )
        for q in near:
            u = curve.loc[q]
            text += (
                f"; at {q:g} MB (unstable) the peak was {100 * u['early_occupancy_peak']:.0f} %, the wired cwnd "
                f"averaged {u['cwnd_wired_kb']:.0f} KB against {C.window_bytes(q) / 1e3:g} KB, the Wi-Fi subflow "
                f"carried {100 * u['wifi_share']:.0f} %, with {u['recv_drops']:.0f} drops, {u['timeouts']:.0f} "
                f"timeouts and delivery stalled {u['stall_s']:.2f} s"
            )
        words.append(text + ".")
        worse = [
            q for q in near if curve.loc[q, "early_occupancy_peak"] > r["early_occupancy_peak"]
        ]
        shifted = [q for q in near if curve.loc[q, "wifi_share"] > r["wifi_share"]]
        fell = [q for q in near if curve.loc[q, "cwnd_wired_kb"] < r["cwnd_wired_kb"]]
        explained = [q for q in worse if q in shifted and q in fell]
        if explained:
            words.append(
                f"So at {', '.join(f'{q:g}' for q in explained)} MB slow start's bursts on the two paths pushed the "
                "out-of-order data closer to the window's edge than at "
                f"{p:g} MB; once the receiver dropped, the wired subflow's cwnd fell, the minimum-RTT scheduler "
                "sent more on the Wi-Fi subflow (it uses it when the wired one has no window room), and the Wi-Fi "
                "subflow's longer RTT kept data out of order near the edge, so drops and timeouts went on. Whether "
                "the first bursts reach the edge depends on where the window falls among slow start's steps, not "
                "on its size alone: hence the pockets."
            )
    return out + [" ".join(words), ""] if words else out


def _wired_tcp_bps(conns: pd.DataFrame) -> float:
    """Single-path wired TCP's goodput on the longest baseline download."""
    base = pick(conns, "baseline", path="wired")
    if not len(base):
        return float("nan")
    return mean_of(base[base["size_bytes"] == base["size_bytes"].max()], "goodput_bps")


def _small_buffer_why(conns: pd.DataFrame) -> str:
    """The RFC sender at 0.18 MB, with the numbers: what it lost, and what the other sender lost at the same size."""
    small = min(C.STUDY_BUFFERS_MB)
    rfc, sfw = buffer_curve(conns, True), buffer_curve(conns, False)
    if small not in rfc.index:
        return ""
    r = rfc.loc[small]
    text = (
        "latlab's RFC sender keeps new data inside the connection-level window, so the receiver only drops what "
        f"arrives beyond it: over the whole sweep it dropped {rfc['recv_drops'].sum():.0f} segments (sum of the "
        f"per-size means); at {small:g} MB it got {r['goodput_bps'] / 1e6:.1f} Mbit/s with the Wi-Fi subflow "
        f"carrying {100 * r['wifi_share']:.0f} % of the bytes and single-path wired TCP reaching "
        f"{_wired_tcp_bps(conns) / 1e6:.1f} Mbit/s"
    )
    if small in sfw.index:
        q = sfw.loc[small]
        text += (
            f"; the per-subflow-window sender dropped {_range(q, 'recv_drops')} segments at {small:g} MB "
            f"(mean, range over seeds) and got {q['goodput_bps'] / 1e6:.1f} Mbit/s"
        )
    return text


def _with_why(vs: dict[str, Verdict], why: dict[str, str]) -> dict[str, Verdict]:
    return {
        k: Verdict(v.reference, v.measured, v.outcome, v.rule, why.get(k, v.why))
        for k, v in vs.items()
    }


def _setup(settings: C.Settings, data: StudyData, jobs: int, elapsed_s: float) -> str:
    runs = data.runs
    n_ok = int((runs["status"] == "ok").sum()) if len(runs) else 0
    n_distinct = runs.loc[runs["status"] == "ok", "run_id"].nunique() if len(runs) else 0
    sim_s = data.conns["wall_s"].sum() if len(data.conns) else float("nan")
    w15, w10 = C.wifi_rate_bps(C.MTU_BYTES), C.wifi_rate_bps(C.SMALL_MTU_BYTES)
    proxy = (
        (
            "the proxy node: MPTCP (proxy → client, over both paths) spliced to plain TCP (server → proxy, "
            f"{C.LEGACY_CC.upper()}) through a {C.RELAY_BYTES / 1e6:g} MB relay buffer; conversion delays "
            f"{C.STUDY_SYN_DELAY_MS:g} ms (SYN) and {C.STUDY_DATA_DELAY_MS:g} ms (data), the study's, in every "
            "proxied run (section 6 removes them)"
        )
        if data.proxy
        else (
            "**not available in this build**: the MPTCP runs go end to end, server → client over both paths, and "
            "the throttling and conversion-delay experiments are not run"
        )
    )
    rows = [
        [
            "topology",
            f"server —{C.ETHERNET_BPS / 1e6:g} Mbit/s, {C.SERVER_DELAY_MS:g} ms— proxy; proxy —"
            f"{C.LAN_DELAY_MS:g} ms— switch —{C.CLIENT_WIRE_DELAY_MS:g} ms— client (wired, "
            f"{C.ETHERNET_BPS / 1e6:g} Mbit/s Fast Ethernet); proxy —{C.LAN_DELAY_MS:g} ms— Wi-Fi AP "
            f"—{C.WIFI_RADIO_DELAY_MS:g} ms radio— client. Ethernet queues: DropTail "
            f"{C.ETHERNET_QUEUE_PACKETS} packets ({C.ETHERNET_QUEUE_PACKETS * 12 / (C.ETHERNET_BPS / 1e6):g} "
            f"ms at {C.ETHERNET_BPS / 1e6:g} Mbit/s). Propagation RTT {C.path_rtt_ms('wired'):g} ms wired, "
            f"{C.path_rtt_ms('wifi'):g} ms Wi-Fi. The study states no rates or delays; these are a "
            "laboratory LAN of its time",
        ],
        [
            "Wi-Fi",
            f"latlab's Wi-Fi AP model (one shared DropTail buffer of {C.WIFI_AP_PACKETS} packets, "
            f"{100 * C.WIFI_FRAME_ERROR_PROB:g} % frame errors retried with 802.11 back-off) for an 802.11g AP "
            f"({C.WIFI_PHY_BPS / 1e6:g} Mbit/s PHY). The model has no per-frame overhead, so DIFS, the mean "
            f"back-off, preamble, SIFS, the MAC ACK and the airtime of the client's TCP ACKs (one per two "
            f"segments) are folded into its rate per frame size: **{w15 / 1e6:.1f} Mbit/s** of IP packets "
            f"at MTU {C.MTU_BYTES}, **{w10 / 1e6:.1f} Mbit/s** at MTU {C.SMALL_MTU_BYTES}; uplink "
            f"{C.WIFI_UPLINK_BPS / 1e6:g} Mbit/s. Chosen over a fixed-rate link because the AP model's "
            "shared buffer and retries are Wi-Fi's delay",
        ],
        ["proxy", proxy],
        [
            "TCP",
            f"`linux` preset, timestamps on, MSS = MTU − {C.HEADER_BYTES} ({C.mss_of(C.MTU_BYTES)} bytes at MTU "
            f"{C.MTU_BYTES}); legacy connections {C.LEGACY_CC.upper()}",
        ],
        [
            "MPTCP",
            f"coupled congestion control {C.MPTCP_CC.upper()} (RFC 6356), scheduler `{C.MPTCP_SCHEDULER}` "
            f"(lowest smoothed RTT with window room, Linux's default); the subflows open with the connection, "
            f"the Wi-Fi one {1e3 * C.WIFI_JOIN_S:g} ms after the wired one; no opportunistic "
            "retransmission or penalisation (NSDI'12 mitigations off)",
        ],
        [
            "receive buffer",
            f"the study's figure is max TCP memory (tcp_rmem max), of which Linux advertises "
            f"{C.WINDOW_FRACTION:g} as window (tcp_adv_win_scale = 1); latlab's MPTCP buffer is the "
            f"data-level window, so it is set to {C.WINDOW_FRACTION:g} × the study's figure "
            f"(0.72 MB → {C.window_bytes(0.72) / 1e3:g} KB). Default {C.DEFAULT_BUFFER_MB:g} MB",
        ],
        [
            "throttle",
            "not run (no proxy node in this build)"
            if not data.proxy
            else f"an HTB-like token bucket at the proxy on the wired subflow, {settings.throttle_bps[0] / 1e6:g} "
            f"Mbit/s for the verdicts (the study names no rate; "
            + ", ".join(f"{r / 1e6:g}" for r in settings.throttle_bps)
            + f" Mbit/s run), leaf queue {C.THROTTLE_QUEUE_MS:g} ms at its rate. First transfer: the rules "
            f"take {C.THROTTLE_INSTALL_S:g} s after the second subflow is up (the study's proxy sniffed "
            "TCP options, then installed them); repeated transfer: in force as soon as it is up",
        ],
        [
            "transfers",
            f"long {settings.large_bytes / C.MB:g} MB, short {settings.small_bytes / C.MB:g} MB, "
            f"buffer sweep and MTU runs {settings.sweep_bytes / C.MB:g} MB, small object "
            f"{settings.object_bytes / 1e3:g} KB; goodput = size / completion time (handshake included)",
        ],
        [
            "seeds",
            ", ".join(str(s) for s in settings.seeds)
            + " (only the Wi-Fi retries are random); tables give "
            "the mean over seeds and the range",
        ],
        [
            "runs",
            f"{n_ok} run points, {n_distinct} distinct simulations; the simulations took {sim_s:.0f} s in all "
            f"(sum over runs); running and reducing them took **{elapsed_s:.0f} s** here on {jobs} worker(s)",
        ],
    ]
    return _table(["", "value"], rows)


def _share_cells(d: pd.DataFrame) -> list[str]:
    return [
        value_range(d["goodput_bps"], "{:.1f}", 1e-6),
        value_range(d["fct_s"], "{:.2f}"),
        _pct(mean_of(d, "wired_share"), "{:.0f} %"),
        _pct(mean_of(d, "wifi_share"), "{:.0f} %"),
        _ms(mean_of(d, "srtt_wired_ms")),
        _ms(mean_of(d, "srtt_wifi_ms")),
        _f(mean_of(d, "retransmits"), "{:.0f}"),
    ]


SHARE_HEADER = [
    "goodput (Mbit/s)",
    "completion (s)",
    "wired share",
    "Wi-Fi share",
    "wired srtt (ms)",
    "Wi-Fi srtt (ms)",
    "retransmitted segments",
]


def render(
    data: StudyData,
    settings: C.Settings,
    quick: bool,
    jobs: int,
    elapsed_s: float,
    figures: dict[str, str],
    real_section: str | None = None,
) -> str:
    conns = data.conns
    vs = _with_why(verdicts(conns, settings), _why(verdicts(conns, settings), data, settings))
    out: list[str] = []
    add = out.append
    add("# MPTCP proxy: multipath through an MPTCP-to-TCP converter, with bandwidth throttling\n")
    add(
        f"Reproduction of the MPTCP-proxy study ({PAPER.title}; {PAPER.venue}) in latlab's packet simulator. "
        "MPTCP is described in latlab's note [Multipath TCP](../models/mptcp.md), the Wi-Fi AP in "
        "[links](../models/links.md). "
        + (
            "**Quick run** (`latlab reproduce mptcp --quick`): shorter downloads, a coarser buffer grid, one seed "
            "and one throttle rate; its numbers are not the full run's.\n"
            if quick
            else "Full run (`latlab reproduce mptcp`).\n"
        )
    )
    if not data.proxy:
        add(
            "**This build has no proxy node**: every MPTCP connection runs end to end from the server, so its two "
            "subflows share the server's link instead of a plain TCP leg ending at the proxy, and the throttling "
            "and conversion-delay experiments (sections 5 and 6) are not run.\n"
        )
    add(verdict_summary(vs.values()))
    add("")
    add("## Set-up\n")
    add(_setup(settings, data, jobs, elapsed_s))
    add("")

    # -- 1 and 2: single path, and MPTCP
    add("## 1. Legacy single-path TCP, and 2. MPTCP through the proxy\n")
    rows = []
    for size in (settings.large_bytes, settings.small_bytes):
        for p in C.PATHS:
            d = pick(conns, "baseline", path=p, size_bytes=size)
            if len(d):
                rows.append([f"TCP, {C.PATHS[p]} only", f"{size / C.MB:g}"] + _share_cells(d))
        d = pick(conns, "mptcp", size_bytes=size)
        if len(d):
            rows.append(
                [
                    "MPTCP " + ("through the proxy" if data.proxy else "end to end"),
                    f"{size / C.MB:g}",
                ]
                + _share_cells(d)
            )
    add(_table(["connection", "MB"] + SHARE_HEADER, rows))
    add("")
    for key in ("mptcp_wired_share", "mptcp_wifi_share"):
        if key in vs:
            add(f"- {vs[key].sentence()}")
    add("")
    if "paths" in figures:
        add(f"![Throughput per subflow over time]({figures['paths']})\n")

    # -- 3: receive buffer
    add("## 3. Receive buffer\n")
    add(
        f"MPTCP downloads of {settings.sweep_bytes / C.MB:g} MB against the client's max TCP memory (window = "
        f"{C.WINDOW_FRACTION:g} × it), with each of two senders: latlab's, which keeps new data inside the "
        "connection-level window (RFC 8684 §3.3.4: Data ACK + window over all subflows), and one that applies the "
        "advertised window only in each subflow's own sequence space, so that its subflows together can overrun "
        "the shared buffer and the receiver drops what does not fit (the study's receiver drops point to a stack "
        "that did). Head-of-line blocked: the share of the download's time during which data waited in the "
        "receive buffer behind a hole.\n"
    )
    for dw, name in C.SENDERS.items():
        curve = buffer_curve(conns, dw)
        if not len(curve):
            continue
        add(f"**{name[:1].upper() + name[1:]} sender**\n")
        ok = stable_sizes(curve)
        add(
            _table(
                [
                    "max TCP memory (MB)",
                    "window (KB)",
                    "goodput (Mbit/s), mean (range)",
                    "stable in every seed",
                    "Wi-Fi share",
                    "head-of-line blocked",
                    "retransmitted segments",
                    "receiver drops, mean (range)",
                    "timeouts",
                    "reinjected segments",
                ],
                [
                    [
                        f"{mb:g}",
                        f"{C.window_bytes(mb) / 1e3:g}",
                        f"{r['goodput_bps'] / 1e6:.1f} ({r['goodput_lo'] / 1e6:.1f}–{r['goodput_hi'] / 1e6:.1f})",
                        "yes" if ok.get(mb, False) else "**no**",
                        _pct(r.get("wifi_share"), "{:.0f} %"),
                        _pct(r["hol_fraction"], "{:.0f} %"),
                        _f(r["retransmits"], "{:.0f}"),
                        _range(r, "recv_drops"),
                        _range(r, "timeouts"),
                        _f(r["reinjections"], "{:.0f}"),
                    ]
                    for mb, r in curve.iterrows()
                ],
            )
        )
        add("")
        add(_curve_words(curve, name) + "\n")
        out += _trace_evidence(curve, name)
        sfx = "" if dw else SFWIN
        for key in ("rbuf_small", "rbuf_large", "rbuf_needed", "rbuf_suffices"):
            if key + sfx in vs:
                add(f"- {vs[key + sfx].sentence()}")
        add("")
    g = guidance_parts(conns)
    if g:
        add(
            f"The guidance (Linux, NSDI'12): a receive buffer of at least 2·ΣBW·RTT_max. From latlab's own runs: "
            f"single-path TCP reaches {_mbps(g['bw_wired_bps'])} Mbit/s wired and {_mbps(g['bw_wifi_bps'])} "
            f"Mbit/s on Wi-Fi; in the RFC sender's largest-buffer run the subflows' mean smoothed RTTs are "
            f"{_ms(g['rtt_wired_ms'])} ms (wired) and {_ms(g['rtt_wifi_ms'])} ms (Wi-Fi, its queue included). So "
            f"2 × {_mbps(g['bw_wired_bps'] + g['bw_wifi_bps'])} Mbit/s × {_ms(g['rtt_max_ms'])} ms = "
            f"**{g['buffer_mb']:.2f} MB**, compared with the max TCP memory as the study compares it.\n"
        )
        if "rbuf_guidance" in vs:
            add(f"- {vs['rbuf_guidance'].sentence()}\n")
    if "buffer" in figures:
        add(f"![Receive buffer]({figures['buffer']})\n")

    # -- 4: MTU
    add("## 4. MTU 1000 bytes at 0.72 MB\n")
    rows = []
    for p in C.PATHS:
        d = pick(conns, "mtu", transport="tcp", path=p)
        if len(d):
            rows.append(
                [
                    f"TCP, {C.PATHS[p]} only",
                    f"{C.SMALL_MTU_BYTES}",
                    value_range(d["goodput_bps"], "{:.1f}", 1e-6),
                    "–",
                    "–",
                    "–",
                ]
            )
    for dw, name in C.SENDERS.items():
        for mtu in (C.MTU_BYTES, C.SMALL_MTU_BYTES):
            d = (
                pick(conns, "mtu", transport="mptcp", data_window=dw)
                if mtu == C.SMALL_MTU_BYTES
                else pick(conns, "rbuf", buffer_mb=C.DEFAULT_BUFFER_MB, data_window=dw)
            )
            if len(d):
                rows.append(
                    [
                        f"MPTCP, {name} sender",
                        f"{mtu}",
                        value_range(d["goodput_bps"], "{:.1f}", 1e-6),
                        _pct(mean_of(d, "wifi_share"), "{:.0f} %"),
                        _pct(mean_of(d, "hol_fraction"), "{:.0f} %"),
                        _f(mean_of(d, "recv_drops"), "{:.0f}"),
                    ]
                )
    if rows:
        add(
            f"{settings.sweep_bytes / C.MB:g} MB downloads. At MTU {C.SMALL_MTU_BYTES} the Wi-Fi AP's rate is "
            f"{C.wifi_rate_bps(C.SMALL_MTU_BYTES) / 1e6:.1f} Mbit/s instead of {C.wifi_rate_bps(C.MTU_BYTES) / 1e6:.1f} "
            "(its per-frame costs weigh more on smaller frames).\n"
        )
        add(
            _table(
                [
                    "connection",
                    "MTU (bytes)",
                    "goodput (Mbit/s)",
                    "Wi-Fi share",
                    "head-of-line blocked",
                    "receiver drops",
                ],
                rows,
            )
        )
        add("")
    for key in ("mtu_small", "mtu_small" + SFWIN):
        if key in vs:
            add(f"- {vs[key].sentence()}")
    add("")
    if "mtu" in figures:
        add(f"![MTU 1000 against 1500]({figures['mtu']})\n")

    # -- 5: throttling
    add("## 5. Throttling the wired subflow at the proxy\n")
    if not data.proxy:
        add("Not run: throttling is the proxy's, and this build has no proxy node.\n")
    else:
        rows = []
        small = settings.small_bytes
        for label, d in (
            (f"{small / C.MB:g} MB, not throttled", pick(conns, "mptcp", size_bytes=small)),
            (
                f"{small / C.MB:g} MB, first (rules installed {C.THROTTLE_INSTALL_S:g} s after the join)",
                pick(conns, "throttle", label="first"),
            ),
            (
                f"{small / C.MB:g} MB, repeated (rules in place)",
                pick(conns, "throttle", label="repeated"),
            ),
            (
                f"{settings.large_bytes / C.MB:g} MB, not throttled",
                pick(conns, "mptcp", size_bytes=settings.large_bytes),
            ),
        ):
            if len(d):
                rows.append([label] + _share_cells(d))
        for r in settings.throttle_bps:
            d = pick(conns, "throttle", label="long", throttle_bps=r)
            if len(d):
                rows.append(
                    [f"{settings.large_bytes / C.MB:g} MB, wired throttled to {r / 1e6:g} Mbit/s"]
                    + _share_cells(d)
                )
        add(_table(["download"] + SHARE_HEADER, rows))
        add("")
        for key in (
            "throttle_small_shift",
            "throttle_long_shift",
            "throttle_long_total",
            "throttle_long_vs_tcp",
        ):
            if key in vs:
                add(f"- {vs[key].sentence()}")
        add("")
    if "throttle" in figures:
        add(f"![Throttling]({figures['throttle']})\n")

    # -- 6: conversion delay
    add("## 6. Conversion delay\n")
    conv = pick(conns, "conversion")
    if not data.proxy or not len(conv):
        add("Not run: the conversion delay is the proxy's, and this build has no proxy node.\n")
    else:
        rows = []
        for size in sorted(conv["size_bytes"].unique()):
            on = pick(conns, "conversion", size_bytes=int(size), conversion=True)
            off = pick(conns, "conversion", size_bytes=int(size), conversion=False)
            rows.append(
                [
                    f"{size / 1e3:g} KB",
                    _ms(1e3 * mean_of(off, "fct_s")),
                    _ms(1e3 * mean_of(on, "fct_s")),
                    _ms(1e3 * (mean_of(on, "fct_s") - mean_of(off, "fct_s"))),
                    _mbps(mean_of(off, "goodput_bps")),
                    _mbps(mean_of(on, "goodput_bps")),
                ]
            )
        add(
            f"Downloads through the proxy without and with the study's conversion delays ({C.STUDY_SYN_DELAY_MS:g} ms "
            f"for the SYN, {C.STUDY_DATA_DELAY_MS:g} ms per data segment).\n"
        )
        add(
            _table(
                [
                    "download",
                    "completion, no delay (ms)",
                    "with the study's delays (ms)",
                    "added (ms)",
                    "goodput, no delay (Mbit/s)",
                    "with delays (Mbit/s)",
                ],
                rows,
            )
        )
        add("")
        if "conversion" in vs:
            add(f"- {vs['conversion'].sentence()}\n")

    # -- differences
    add("## Where and why latlab differs\n")
    differing = [v for v in vs.values() if v.outcome in ("partly", "differs")]
    if differing:
        for v in differing:
            add(f"- {v.sentence()}")
    else:
        add("Every verdict agrees.")
    add("")
    add(
        "Modelling choices behind the numbers (not measured in the study, so no verdict): the link rates, delays and "
        "buffers of the testbed; the Wi-Fi MAC's overheads folded into the AP's rate; the throttle rate and the "
        "rules' installation delay; the proxy's relay buffer. Not modelled: HTTP and the proxy's application "
        "(Squid's own buffering and request handling), MPTCP's MP_CAPABLE/MP_JOIN key exchange and path manager, "
        "uplink contention on the Wi-Fi medium beyond the ACK airtime folded into the rate.\n"
    )

    # -- real Linux
    add("## Real Linux MPTCP through latlab's proxy\n")
    if real_section:
        add(real_section)
    else:
        add(
            "Not run here. `latlab reproduce mptcp --real` (root, a kernel with MPTCP) runs the same experiments on "
            "real Linux MPTCP through `latlab-net proxy` in network namespaces and prints them beside these rows.\n"
        )
    return "\n".join(out)
