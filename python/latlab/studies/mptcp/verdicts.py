"""The MPTCP-proxy study's references judged against latlab's runs (mean over seeds).

Each rule is stated in its verdict and is the same whatever the runs gave,
so a verdict says "differs" as readily as "agrees".
"""

from __future__ import annotations

import math

import pandas as pd

from latlab.studies._verdict import Verdict, as_input, within
from latlab.studies.mptcp import cases as C
from latlab.studies.mptcp.metrics import (
    STABLE_FRACTION,
    buffer_curve,
    guidance_mb,
    guidance_parts,
    mean_of,
    pick,
    smallest_stable_mb,
)
from latlab.studies.mptcp.references import REFERENCES, SFWIN

#: "Most of the traffic": the wired subflow's share of the bytes (agrees above the first, partly above the second).
MOST, MOST_PARTLY = 0.75, 0.5
#: "Little used": the Wi-Fi subflow's share (agrees below the first, partly below the second).
LITTLE, LITTLE_PARTLY = 0.10, 0.25
#: "Degraded": goodput at least this much below the reference case.
DEGRADED = 0.05
#: "Shifts to Wi-Fi": the Wi-Fi subflow's share rises by at least this many points (partly: by half of it).
SHIFT_POINTS = 0.15
#: "Slightly below": the throttled total within this fraction below the unthrottled one (partly: any amount below).
SLIGHTLY = 0.25
#: The smallest stable buffer against the study's 0.48 MB (the sweep's grid bounds it).
NEEDED_AGREE, NEEDED_PARTLY = 0.25, 0.60
#: The guidance "suffices" when the smallest stable buffer is at most this multiple of it (partly: twice that).
GUIDANCE_SLACK = 1.25


def _mbps(x: float) -> str:
    return f"{x / 1e6:.1f} Mbit/s"


def mptcp_split(conns: pd.DataFrame, large_bytes: int) -> dict[str, Verdict]:
    out: dict[str, Verdict] = {}
    d = pick(conns, "mptcp", size_bytes=large_bytes)
    if not len(d):
        return out
    wired, wifi = mean_of(d, "wired_share"), mean_of(d, "wifi_share")
    how = "through the proxy" if bool(d["proxy"].iloc[0]) else "end to end, no proxy"
    where = f"{large_bytes / C.MB:g} MB download {how}, total {_mbps(mean_of(d, 'goodput_bps'))}"
    ref = REFERENCES["mptcp_wired_share"]
    out[ref.key] = Verdict(
        ref,
        f"{100 * wired:.0f} % ({where})",
        "agrees" if wired > MOST else "partly" if wired > MOST_PARTLY else "differs",
        f"target above {100 * MOST:g} %, partly above {100 * MOST_PARTLY:g} %",
    )
    ref = REFERENCES["mptcp_wifi_share"]
    out[ref.key] = Verdict(
        ref,
        f"{100 * wifi:.0f} %",
        "agrees" if wifi < LITTLE else "partly" if wifi < LITTLE_PARTLY else "differs",
        f"target below {100 * LITTLE:g} %, partly below {100 * LITTLE_PARTLY:g} %",
    )
    return out


def guidance(conns: pd.DataFrame) -> dict[str, Verdict]:
    """The guidance's figure on latlab's paths against the study's (a check on the testbed's rates and RTTs)."""
    g = guidance_parts(conns)
    if not g or not math.isfinite(g["buffer_mb"]):
        return {}
    ref = REFERENCES["rbuf_guidance"]
    outcome, rule = within(g["buffer_mb"], ref, NEEDED_AGREE, NEEDED_PARTLY)
    return {
        ref.key: Verdict(
            ref,
            f"{g['buffer_mb']:.2f} MB = 2 × {(g['bw_wired_bps'] + g['bw_wifi_bps']) / 1e6:.1f} "
            f"Mbit/s × {g['rtt_max_ms']:.1f} ms",
            outcome,
            rule,
        )
    }


def receive_buffer(conns: pd.DataFrame, data_window: bool) -> dict[str, Verdict]:
    """The buffer statements for one of the two senders (cases.SENDERS)."""
    out: dict[str, Verdict] = {}
    sfx = "" if data_window else SFWIN
    curve = buffer_curve(conns, data_window)
    if not len(curve) or not all(mb in curve.index for mb in C.STUDY_BUFFERS_MB):
        return out
    small, large = curve.loc[min(C.STUDY_BUFFERS_MB)], curve.loc[max(C.STUDY_BUFFERS_MB)]
    best = float(curve["goodput_bps"].max())
    # 0.18 MB: degraded download, and the study's mechanism (drops at the receiver, retransmissions)
    degraded = small["goodput_bps"] < (1 - DEGRADED) * large["goodput_bps"]
    losses = (small["recv_drops"] + small["retransmits"]) > (
        large["recv_drops"] + large["retransmits"]
    )
    ref = REFERENCES["rbuf_small" + sfx]
    out[ref.key] = Verdict(
        ref,
        f"{_mbps(small['goodput_bps'])} ({100 * small['goodput_bps'] / large['goodput_bps']:.0f} % of 0.72 MB's); "
        f"receiver drops {small['recv_drops']:.0f}, retransmitted segments {small['retransmits']:.0f} "
        f"(0.72 MB: {large['recv_drops']:.0f}, {large['retransmits']:.0f})",
        "agrees" if degraded and losses else "partly" if degraded or losses else "differs",
        f"target: goodput falls more than {100 * DEGRADED:g} % below 0.72 MB's and receiver drops plus "
        "retransmissions exceed 0.72 MB's; partly if one holds",
    )
    stable = large["goodput_bps"] >= STABLE_FRACTION * best
    ref = REFERENCES["rbuf_large" + sfx]
    out[ref.key] = Verdict(
        ref,
        f"{_mbps(large['goodput_bps'])} ({100 * large['goodput_bps'] / best:.0f} % of the sweep's best), "
        f"receiver drops {large['recv_drops']:.0f}",
        "agrees"
        if stable and large["recv_drops"] <= small["recv_drops"] / 4
        else "partly"
        if stable
        else "differs",
        f"target: goodput reaches {100 * STABLE_FRACTION:g} % of the sweep's best with at most a quarter of 0.18 "
        "MB's receiver drops; partly if only the goodput does",
    )
    found = smallest_stable_mb(curve)
    grid = ", ".join(f"{mb:g}" for mb in curve.index)
    seeds = int(curve["seeds"].min()) if "seeds" in curve else 1
    found_text = f"{found:g} MB" if math.isfinite(found) else "none on the grid"
    ref = REFERENCES["rbuf_needed" + sfx]
    outcome, rule = within(found, ref, NEEDED_AGREE, NEEDED_PARTLY)
    out[ref.key] = Verdict(
        ref,
        f"{found_text} (the smallest size from which every size of the grid {grid} MB reaches "
        f"{100 * STABLE_FRACTION:g} % of the best mean goodput in each of {seeds} seeds)",
        outcome,
        rule + "; the grid bounds the answer",
    )
    g = guidance_mb(conns)
    if math.isfinite(g):
        ref = REFERENCES["rbuf_suffices" + sfx]
        outcome = (
            "agrees"
            if found <= GUIDANCE_SLACK * g
            else "partly"
            if found <= 2 * GUIDANCE_SLACK * g
            else "differs"
        )
        out[ref.key] = Verdict(
            ref,
            f"smallest stable {found_text}; guidance {g:.2f} MB on latlab's paths"
            + (f" ({100 * found / g:.0f} % of it)" if math.isfinite(found) else ""),
            outcome,
            f"target: the smallest stable buffer is at most {GUIDANCE_SLACK:g}× the guidance, "
            f"partly within {2 * GUIDANCE_SLACK:g}×",
        )
    return out


def mtu(conns: pd.DataFrame, sweep_bytes: int, data_window: bool) -> dict[str, Verdict]:
    out: dict[str, Verdict] = {}
    small = pick(conns, "mtu", transport="mptcp", data_window=data_window)
    base = pick(
        conns,
        "rbuf",
        buffer_mb=C.DEFAULT_BUFFER_MB,
        size_bytes=sweep_bytes,
        data_window=data_window,
    )
    if not len(small) or not len(base):
        return out
    g1000, g1500 = mean_of(small, "goodput_bps"), mean_of(base, "goodput_bps")
    drop = 1 - g1000 / g1500
    ref = REFERENCES["mtu_small" + ("" if data_window else SFWIN)]
    out[ref.key] = Verdict(
        ref,
        f"{_mbps(g1000)} at MTU 1000 against {_mbps(g1500)} at 1500 ({-100 * drop:+.0f} %); receiver drops "
        f"{mean_of(small, 'recv_drops'):.0f} against {mean_of(base, 'recv_drops'):.0f}",
        "agrees" if drop > DEGRADED else "partly" if drop > 0 else "differs",
        f"target: goodput falls more than {100 * DEGRADED:g} %, partly if it falls at all",
    )
    return out


def _shift(ref_key: str, throttled: pd.DataFrame, free: pd.DataFrame) -> Verdict:
    ref = REFERENCES[ref_key]
    before, after = mean_of(free, "wifi_share"), mean_of(throttled, "wifi_share")
    up = after - before
    return Verdict(
        ref,
        f"Wi-Fi share {100 * before:.0f} % unthrottled → {100 * after:.0f} % throttled",
        "agrees" if up >= SHIFT_POINTS else "partly" if up >= SHIFT_POINTS / 2 else "differs",
        f"target: the Wi-Fi subflow's share rises by ≥ {100 * SHIFT_POINTS:g} points, partly by "
        f"≥ {50 * SHIFT_POINTS:g}",
    )


def throttle(conns: pd.DataFrame, settings: C.Settings) -> dict[str, Verdict]:
    out: dict[str, Verdict] = {}
    rate = settings.throttle_bps[0]
    rep = pick(conns, "throttle", label="repeated")
    free_small = pick(conns, "mptcp", size_bytes=settings.small_bytes)
    if len(rep) and len(free_small):
        out["throttle_small_shift"] = _shift("throttle_small_shift", rep, free_small)
    long = pick(conns, "throttle", label="long", throttle_bps=rate)
    free = pick(conns, "mptcp", size_bytes=settings.large_bytes)
    if not len(long) or not len(free):
        return out
    out["throttle_long_shift"] = _shift("throttle_long_shift", long, free)
    total, unthrottled = mean_of(long, "goodput_bps"), mean_of(free, "goodput_bps")
    ratio = total / unthrottled
    ref = REFERENCES["throttle_long_total"]
    out[ref.key] = Verdict(
        ref,
        f"{_mbps(total)} against {_mbps(unthrottled)} ({100 * ratio:.0f} %), wired throttled "
        f"to {rate / 1e6:g} Mbit/s",
        "agrees" if 1 - SLIGHTLY <= ratio < 1 else "partly" if ratio < 1 else "differs",
        f"target within {100 * SLIGHTLY:g} % below the unthrottled total, partly if further below",
    )
    tcp = {
        p: mean_of(pick(conns, "baseline", path=p, size_bytes=settings.large_bytes), "goodput_bps")
        for p in C.PATHS
    }
    ref = REFERENCES["throttle_long_vs_tcp"]
    best_tcp = max(tcp.values())
    out[ref.key] = Verdict(
        ref,
        f"{_mbps(total)}; single-path TCP {_mbps(tcp['wifi'])} on Wi-Fi, {_mbps(tcp['wired'])} on the wired path",
        "agrees" if total > best_tcp else "partly" if total > tcp["wifi"] else "differs",
        "target: above single-path TCP on both paths; partly if above it on the Wi-Fi path (the one traffic moves "
        "to) only",
    )
    return out


def conversion(conns: pd.DataFrame, settings: C.Settings) -> dict[str, Verdict]:
    out: dict[str, Verdict] = {}
    d = pick(conns, "conversion", size_bytes=settings.object_bytes)
    if not len(d):
        return out
    on, off = d[d["conversion"].astype(bool)], d[~d["conversion"].astype(bool)]
    if not len(on) or not len(off):
        return out
    added_ms = 1e3 * (mean_of(on, "fct_s") - mean_of(off, "fct_s"))
    ref = REFERENCES["conversion"]
    # The study's SYN and data delays are set in latlab's proxy: the added time follows from them, so it is an input
    # shown beside what a download pays, not a result that could agree with the study.
    out[ref.key] = as_input(
        ref,
        f"{added_ms:.1f} ms added to a {settings.object_bytes / 1e3:g} KB download "
        f"({1e3 * mean_of(off, 'fct_s'):.1f} → {1e3 * mean_of(on, 'fct_s'):.1f} ms)",
        how=f"latlab's proxy is configured with the study's {C.STUDY_SYN_DELAY_MS:g} ms (SYN) and "
        f"{C.STUDY_DATA_DELAY_MS:g} ms (data) conversion delays",
    )
    return out


def verdicts(conns: pd.DataFrame, settings: C.Settings) -> dict[str, Verdict]:
    """Every reference judged on the finished runs (by key of REFERENCES, in the report's order)."""
    if not len(conns):
        return {}
    found = {
        **mptcp_split(conns, settings.large_bytes),
        **guidance(conns),
        **throttle(conns, settings),
        **conversion(conns, settings),
    }
    for data_window in C.SENDERS:
        found.update(receive_buffer(conns, data_window))
        found.update(mtu(conns, settings.sweep_bytes, data_window))
    return {k: found[k] for k in REFERENCES if k in found}
