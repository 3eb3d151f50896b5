"""The pacing study's references judged against experiment A (seed 1 unless stated).

Each rule is stated in its verdict: goodput within ±5 % agrees (±10 %
partly); a gain the study calls "none" agrees within ±2 points (±5 partly);
"> 15 %" and "near 100 %" agree when every mode passes (partly when some do).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from latlab.studies._verdict import Outcome, Verdict, within
from latlab.studies.pacing.cases import MODES
from latlab.studies.pacing.metrics import select
from latlab.studies.pacing.references import (
    GOODPUT_KEY,
    HEADLINE_BUFFER_KB,
    LARGE_FROM_KB,
    REFERENCES,
    SMALL_BUFFERS_KB,
)

#: Relative tolerance of a goodput against the study's (agrees, partly).
GOODPUT_TOL = (0.05, 0.10)
#: A gain the study calls "none" (≈ 0 %): agrees within this many points, partly within the second.
NONE_TOL_PTS = (2.0, 5.0)


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %" if np.isfinite(x) else "–"


def _none_outcome(gains: list[float]) -> tuple[Outcome, str]:
    worst = max((abs(g) for g in gains if np.isfinite(g)), default=np.nan)
    if not np.isfinite(worst):
        return "differs", "no measurement"
    rule = (
        f"largest absolute gain {100 * worst:.1f} points; tolerance ±{NONE_TOL_PTS[0]:g} (partly: "
        f"±{NONE_TOL_PTS[1]:g})"
    )
    return (
        "agrees"
        if 100 * worst <= NONE_TOL_PTS[0]
        else "partly"
        if 100 * worst <= NONE_TOL_PTS[1]
        else "differs"
    ), rule


def goodput_at(a: pd.DataFrame, buffer_kb: float) -> dict[str, float]:
    """Mean per-flow goodput (Kbps) per mode at one buffer."""
    return {
        m: float(a[(a["mode"] == m) & (a["buffer_kb"] == buffer_kb)]["per_flow_kbps"].mean())
        for m in MODES
    }


def verdicts(df: pd.DataFrame) -> dict[str, Verdict]:
    """Every reference of :data:`REFERENCES` judged on experiment A's runs (absent when A has no such point)."""
    ref = REFERENCES
    a = select(df, "A")
    out: dict[str, Verdict] = {}
    if not len(a):
        return out
    g5 = goodput_at(a, HEADLINE_BUFFER_KB)
    for mode in MODES:
        r = ref[GOODPUT_KEY[mode]]
        if np.isfinite(g5[mode]):
            outcome, rule = within(g5[mode], r, *GOODPUT_TOL)
            out[r.key] = Verdict(r, f"{g5[mode]:.1f} Kbps", outcome, rule)
    if all(np.isfinite(v) for v in g5.values()):
        gain = g5["edge-paced"] / g5["host-paced"] - 1
        r = ref["edge_over_host"]
        outcome: Outcome = "agrees" if 100 * gain > r.value else "partly" if gain > 0 else "differs"
        out[r.key] = Verdict(
            r,
            _pct(gain),
            outcome,
            f"needs a lead above {r.value:g} %; a smaller lead: partly",
            "latlab's host pacing is closer to edge pacing than the study's"
            if g5["host-paced"] > g5["unpaced"]
            else "",
        )
        host = g5["host-paced"] / g5["unpaced"] - 1
        outcome, rule = _none_outcome([host])
        out["host_over_unpaced"] = Verdict(
            ref["host_over_unpaced"], f"{100 * host:+.1f} %", outcome, rule
        )
    small = a[a["buffer_kb"].isin(SMALL_BUFFERS_KB)]
    if len(small):
        r = ref["loss_small"]
        loss = {
            (m, b): float(
                small[(small["mode"] == m) & (small["buffer_kb"] == b)]["core_loss"].mean()
            )
            for m in MODES
            for b in SMALL_BUFFERS_KB
        }
        above = sum(100 * v > r.value for v in loss.values())
        out[r.key] = Verdict(
            r,
            ", ".join(
                f"{m} {' / '.join(_pct(loss[(m, b)]) for b in SMALL_BUFFERS_KB)}" for m in MODES
            ),
            "agrees" if above == len(loss) else "partly" if above else "differs",
            f"needs above {r.value:g} % for every mode and buffer ({above} of {len(loss)} here); some: partly",
            "the notes below compare the counted loss with the square-root law and the equation with timeouts",
        )
        gains = []
        for b in SMALL_BUFFERS_KB:
            g = goodput_at(a, b)
            gains += [g[m] / g["unpaced"] - 1 for m in MODES[1:]]
        outcome, rule = _none_outcome(gains)
        gb = {b: goodput_at(a, b) for b in SMALL_BUFFERS_KB}
        out["pacing_small"] = Verdict(
            ref["pacing_small"],
            "; ".join(
                f"{b:g} KB: host {_pct(gb[b]['host-paced'] / gb[b]['unpaced'] - 1)}, edge "
                f"{_pct(gb[b]['edge-paced'] / gb[b]['unpaced'] - 1)}"
                for b in SMALL_BUFFERS_KB
            ),
            outcome,
            rule,
        )
    big = a[a["buffer_kb"] >= LARGE_FROM_KB]
    if len(big):
        r = ref["util_large"]
        low = big.groupby("mode")["core_utilisation"].min()
        n_ok = int((low >= 0.97).sum())
        out[r.key] = Verdict(
            r,
            "lowest " + ", ".join(f"{m} {_pct(low.get(m, np.nan))}" for m in MODES),
            "agrees" if n_ok == len(low) else "partly" if (low >= 0.90).all() else "differs",
            "needs ≥ 97 % in every mode at every such buffer; ≥ 90 %: partly",
        )
        g = big.groupby(["buffer_kb", "mode"])["per_flow_kbps"].mean().unstack()
        gains = [float(v) for m in MODES[1:] if m in g for v in (g[m] / g["unpaced"] - 1)]
        outcome, rule = _none_outcome(gains)
        out["pacing_large"] = Verdict(
            ref["pacing_large"],
            f"largest {_pct(max(gains, key=abs))} (over modes and buffers)",
            outcome,
            rule,
        )
    return out
