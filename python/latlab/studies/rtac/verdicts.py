"""The RTAC study's references judged against latlab's runs (CUBIC sender, mean over seeds).

Each rule is stated in its verdict and is the same whatever the runs gave,
so a verdict says "differs" as readily as "agrees".
"""

from __future__ import annotations

import pandas as pd

from latlab.studies._verdict import Verdict, within
from latlab.studies.rtac.cases import PATHS, RECEIVERS, STUDY_SENDERS
from latlab.studies.rtac.metrics import (
    best_rmem_kb,
    goodput_of,
    rmem_curve,
    share_of_autotuning,
    single_figures,
    value_range,
)
from latlab.studies.rtac.references import (
    BEST_RMEM_KB,
    COMPETITION,
    REFERENCES,
    SENDER_DRWA_WIFI,
    SENDER_RTAC_WIFI,
    VEGAS,
)

#: Tolerances: throughput is set by the path's capacity, which latlab's set-up chose near the study's; the RTT
#: also depends on the buffer and on how each receiver's window settles, so it gets a wider band.
TPUT_AGREE, TPUT_PARTLY = 0.15, 0.30
RTT_AGREE, RTT_PARTLY = 0.25, 0.50
SHARE_AGREE, SHARE_PARTLY = 0.10, 0.40
#: "Starves": the DRWA client gets under this fraction of the auto-tuning client's goodput (partly under the second).
STARVE, STARVE_PARTLY = 0.2, 0.5
#: Sender variants: RTAC's Wi-Fi share agrees above the study's 92 %, partly above this; DRWA's Wi-Fi share partly
#: below this when outside the study's 15–37 %.
SENDER_RTAC_PARTLY, SENDER_DRWA_PARTLY = 0.80, 0.50
#: LTE "similar": RTAC's share within ±this of Auto-tuning's (partly within the second); "much less": DRWA's below
#: the first (partly below the second).
SIMILAR, SIMILAR_PARTLY = 0.15, 0.30
MUCH_LESS, MUCH_LESS_PARTLY = 0.50, 0.80
#: "Low": below this fraction of the CUBIC figure it is compared with.
LOW = 0.70
#: The sweep's "best" tcp_rmem_max: the smallest reaching this fraction of the largest goodput.
BEST_FRACTION = 0.95


def single(flows: pd.DataFrame) -> dict[str, Verdict]:
    """Throughput and RTT of one flow per receiver, on each path."""
    out: dict[str, Verdict] = {}
    for path in PATHS:
        fig = single_figures(flows, path)
        for receiver in RECEIVERS:
            if receiver not in fig.index:
                continue
            row = fig.loc[receiver]
            ref = REFERENCES[f"single_{path}_{receiver}_tput"]
            outcome, rule = within(float(row["goodput_mbps"]), ref, TPUT_AGREE, TPUT_PARTLY)
            out[ref.key] = Verdict(
                ref,
                f"{row['goodput_mbps']:.1f} Mbps ({row['goodput_lo']:.1f}–{row['goodput_hi']:.1f})",
                outcome,
                rule,
            )
            ref = REFERENCES[f"single_{path}_{receiver}_rtt"]
            outcome, rule = within(float(row["rtt_mean_ms"]), ref, RTT_AGREE, RTT_PARTLY)
            out[ref.key] = Verdict(
                ref,
                f"{row['rtt_mean_ms']:.0f} ms ({row['rtt_lo']:.0f}–{row['rtt_hi']:.0f}; "
                f"min {row['rtt_min_ms']:.0f})",
                outcome,
                rule,
            )
    return out


def rmem(flows: pd.DataFrame) -> dict[str, Verdict]:
    """Auto-tuning's sweep over tcp_rmem_max: where it is best, and both ends of the trade-off."""
    out: dict[str, Verdict] = {}
    for path in PATHS:
        curve = rmem_curve(flows, path)
        if len(curve) < 2:
            continue
        best = best_rmem_kb(curve, BEST_FRACTION)
        lo, hi = BEST_RMEM_KB[path]
        grid = ", ".join(f"{k:g}" for k in curve.index)
        if path == "wifi":
            outcome = "agrees" if best < hi else "partly" if best < 2 * hi else "differs"
            rule = f"target below {hi:g} KB, partly below {2 * hi:g} KB"
        else:
            outcome = (
                "agrees"
                if lo <= best <= hi
                else "partly"
                if lo / 2 <= best <= 2 * hi
                else "differs"
            )
            rule = f"target within {lo:g}–{hi:g} KB, partly within {lo / 2:g}–{2 * hi:g} KB"
        ref = REFERENCES[f"rmem_{path}"]
        out[ref.key] = Verdict(
            ref,
            f"{best:g} KB (the smallest on the grid {grid} KB with ≥ "
            f"{100 * BEST_FRACTION:g} % of the largest goodput)",
            outcome,
            rule + "; the grid bounds the answer",
        )
        small, large = curve.iloc[0], curve.iloc[-1]
        at_best = curve.loc[best]
        starved = small["goodput_mbps"] / curve["goodput_mbps"].max()
        bloat = large["rtt_mean_ms"] / at_best["rtt_mean_ms"]
        ref = REFERENCES[f"rmem_tradeoff_{path}"]
        both = starved < 0.6 and bloat > 2.0
        one = starved < 0.6 or bloat > 2.0
        out[ref.key] = Verdict(
            ref,
            f"{curve.index[0]:g} KB: {small['goodput_mbps']:.1f} Mbps ({100 * starved:.0f} % of the largest); "
            f"{curve.index[-1]:g} KB: RTT {large['rtt_mean_ms']:.0f} ms, {bloat:.1f}× that at {best:g} KB",
            "agrees" if both else "partly" if one else "differs",
            "target: the smallest size gets under 60 % of the largest goodput and the largest size more than "
            "doubles the RTT of the best size; partly if one holds",
        )
    return out


def competition(flows: pd.DataFrame) -> dict[str, Verdict]:
    """RTAC's and DRWA's goodput beside an auto-tuning client sharing the path."""
    out: dict[str, Verdict] = {}
    for experiment, path in COMPETITION:
        rtac = share_of_autotuning(flows, experiment, path, "rtac")
        if len(rtac):
            ref = REFERENCES[f"{experiment}_{path}_rtac"]
            outcome, rule = within(float(rtac.mean()), ref, SHARE_AGREE, SHARE_PARTLY)
            out[ref.key] = Verdict(ref, f"{value_range(rtac, '{:.0f}', 100)} %", outcome, rule)
        drwa = share_of_autotuning(flows, experiment, path, "drwa")
        if len(drwa):
            ref = REFERENCES[f"{experiment}_{path}_drwa"]
            m = float(drwa.mean())
            out[ref.key] = Verdict(
                ref,
                f"DRWA/Auto-tuning {value_range(drwa, '{:.0f}', 100)} %",
                "agrees" if m < STARVE else "partly" if m < STARVE_PARTLY else "differs",
                f"target below {100 * STARVE:g} % of Auto-tuning's goodput, partly below {100 * STARVE_PARTLY:g} %",
            )
    return out


def _three_share(flows: pd.DataFrame, path: str, receiver: str, sender: str) -> pd.Series:
    """Per seed, in the three-client run of ``sender``: ``receiver``'s goodput over the auto-tuning client's."""
    experiment = "three" if sender == "cubic" else "senders"
    return share_of_autotuning(flows, experiment, path, receiver, sender, three=True)


def _three_goodput(flows: pd.DataFrame, path: str, sender: str) -> pd.DataFrame:
    experiment = "three" if sender == "cubic" else "senders"
    return goodput_of(flows, experiment, path, "+".join(RECEIVERS), sender)


def senders(flows: pd.DataFrame) -> dict[str, Verdict]:
    """The sender-variant findings: three clients per sender on each path, and a Vegas sender alone."""
    out: dict[str, Verdict] = {}
    lo, hi = SENDER_DRWA_WIFI
    for sender in STUDY_SENDERS:
        if sender == VEGAS:
            continue
        rtac = _three_share(flows, "wifi", "rtac", sender)
        if len(rtac):
            m = float(rtac.mean())
            ref = REFERENCES[f"senders_wifi_rtac_{sender}"]
            out[ref.key] = Verdict(
                ref,
                f"{value_range(rtac, '{:.0f}', 100)} %",
                "agrees"
                if m > SENDER_RTAC_WIFI
                else "partly"
                if m > SENDER_RTAC_PARTLY
                else "differs",
                f"target above {100 * SENDER_RTAC_WIFI:g} %, partly above {100 * SENDER_RTAC_PARTLY:g} %",
            )
        drwa = _three_share(flows, "wifi", "drwa", sender)
        if len(drwa):
            m = float(drwa.mean())
            ref = REFERENCES[f"senders_wifi_drwa_{sender}"]
            out[ref.key] = Verdict(
                ref,
                f"{value_range(drwa, '{:.0f}', 100)} %",
                "agrees" if lo <= m <= hi else "partly" if m < SENDER_DRWA_PARTLY else "differs",
                f"target within {100 * lo:g}–{100 * hi:g} %, partly elsewhere below {100 * SENDER_DRWA_PARTLY:g} %",
            )
        rtac = _three_share(flows, "lte", "rtac", sender)
        if len(rtac):
            dev = abs(float(rtac.mean()) - 1)
            ref = REFERENCES[f"senders_lte_rtac_{sender}"]
            out[ref.key] = Verdict(
                ref,
                f"{value_range(rtac, '{:.0f}', 100)} %",
                "agrees" if dev <= SIMILAR else "partly" if dev <= SIMILAR_PARTLY else "differs",
                f"target within ±{100 * SIMILAR:g} % of Auto-tuning's, partly within ±{100 * SIMILAR_PARTLY:g} %",
            )
        drwa = _three_share(flows, "lte", "drwa", sender)
        if len(drwa):
            m = float(drwa.mean())
            ref = REFERENCES[f"senders_lte_drwa_{sender}"]
            out[ref.key] = Verdict(
                ref,
                f"{value_range(drwa, '{:.0f}', 100)} %",
                "agrees" if m < MUCH_LESS else "partly" if m < MUCH_LESS_PARTLY else "differs",
                f"target below {100 * MUCH_LESS:g} % of Auto-tuning's, partly below {100 * MUCH_LESS_PARTLY:g} %",
            )
    out.update(_vegas(flows))
    return out


def _vegas(flows: pd.DataFrame) -> dict[str, Verdict]:
    """Vegas: every receiver low in the three-client LTE case; alone, low on LTE and less so on Wi-Fi."""
    out: dict[str, Verdict] = {}
    vegas3, cubic3 = _three_goodput(flows, "lte", VEGAS), _three_goodput(flows, "lte", "cubic")
    if len(vegas3) and "autotuning" in cubic3:
        bar = float(cubic3["autotuning"].mean())
        means = vegas3.mean()
        low = means < LOW * bar
        ref = REFERENCES["senders_lte_vegas"]
        out[ref.key] = Verdict(
            ref,
            ", ".join(f"{RECEIVERS[r]} {means[r]:.1f}" for r in RECEIVERS if r in means)
            + f" Mbit/s; with CUBIC, Auto-tuning {bar:.1f} Mbit/s",
            "agrees" if low.all() else "partly" if low.any() else "differs",
            f"target: every receiver gets below {100 * LOW:g} % of CUBIC's Auto-tuning client in the same case, "
            "partly if some do",
        )
    shortfall: dict[str, float] = {}
    for path in PATHS:
        vegas, cubic = single_figures(flows, path, VEGAS), single_figures(flows, path)
        both = [r for r in RECEIVERS if r in vegas.index and r in cubic.index]
        if not both:
            continue
        ratio = vegas.loc[both, "goodput_mbps"] / cubic.loc[both, "goodput_mbps"]
        shortfall[path] = float(1 - ratio.mean())
        if path == "lte":
            low = ratio < LOW
            ref = REFERENCES["senders_single_lte_vegas"]
            out[ref.key] = Verdict(
                ref,
                ", ".join(f"{RECEIVERS[r]} {100 * ratio[r]:.0f} %" for r in both) + " of CUBIC's",
                "agrees" if low.all() else "partly" if low.any() else "differs",
                f"target: every receiver gets below {100 * LOW:g} % of its CUBIC throughput, partly if some do",
            )
    if len(shortfall) == 2:
        ref = REFERENCES["senders_single_wifi_vegas"]
        out[ref.key] = Verdict(
            ref,
            f"Vegas {100 * shortfall['wifi']:.0f} % below CUBIC on Wi-Fi, {100 * shortfall['lte']:.0f} % on LTE "
            "(mean over receivers)",
            "agrees" if shortfall["wifi"] < shortfall["lte"] else "differs",
            "target: Vegas's shortfall against CUBIC is smaller on Wi-Fi than on LTE",
        )
    return out


def verdicts(flows: pd.DataFrame) -> dict[str, Verdict]:
    """Every reference judged on the finished runs (by key of REFERENCES, in the report's order)."""
    found = {**single(flows), **rmem(flows), **competition(flows), **senders(flows)}
    return {k: found[k] for k in REFERENCES if k in found}
