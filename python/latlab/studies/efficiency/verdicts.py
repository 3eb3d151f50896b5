"""The efficiency study's findings judged against latlab's curves and simulated loaded RTTs.

Rules (stated in each verdict): the single-flow ordering is judged at the
flow sizes the report quotes; "shifts right and widens" and "barely changes"
are judged on the median and the 5–95 % spread of the handshake RTT.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from latlab.studies._verdict import Verdict
from latlab.studies.efficiency.cases import NOTE_SIZES, REFERENCE_SIZE
from latlab.studies.efficiency.metrics import at_size
from latlab.studies.efficiency.references import REFERENCES

#: "Shifts right and widens": the loaded median and spread at least this many times the unloaded ones.
SHIFT_FACTOR = 1.5
#: "Barely changes": the loaded median within this fraction of the unloaded one (partly within twice it).
BARELY = 0.2


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def single_flow_order(curves: pd.DataFrame, size_label: Any) -> Verdict:
    """4G below 3.5G (published formula, mean, single flow) at every quoted size: agrees; at some: partly."""
    sizes = sorted(list(NOTE_SIZES) + [REFERENCE_SIZE])
    e = {
        (p, s): float(at_size(curves, p, 1, "published", s)["mean"])
        for p in ("3.5G", "4G")
        for s in sizes
    }
    lower = [s for s in sizes if e[("4G", s)] < e[("3.5G", s)]]
    outcome = "agrees" if len(lower) == len(sizes) else "partly" if lower else "differs"
    measured = "; ".join(
        f"{size_label(s)}: 4G {_pct(e[('4G', s)])}, 3.5G {_pct(e[('3.5G', s)])}" for s in sizes
    )
    return Verdict(
        REFERENCES["single_flow_order"],
        measured,
        outcome,
        f"mean efficiency, published formula; needs 4G lower at every quoted size "
        f"({len(lower)} of {len(sizes)} here); at some: partly",
    )


def loaded_rtt(
    unloaded_ms: dict[str, tuple[float, float, float]],
    loaded_ms: dict[str, tuple[float, float, float]],
) -> dict[str, Verdict]:
    """The loaded handshake RTT of each profile against the unloaded one, as (p5, p50, p95) in ms."""
    out: dict[str, Verdict] = {}
    if "3.5G" in loaded_ms:
        (u5, u50, u95), (l5, l50, l95) = unloaded_ms["3.5G"], loaded_ms["3.5G"]
        shift, widen = l50 / u50, (l95 - l5) / (u95 - u5)
        n = int(shift >= SHIFT_FACTOR) + int(widen >= SHIFT_FACTOR)
        out["loaded_rtt_35g"] = Verdict(
            REFERENCES["loaded_rtt_35g"],
            f"median {u50:.0f} → {l50:.0f} ms (×{shift:.1f}), 5–95 % spread {u95 - u5:.0f} → {l95 - l5:.0f} ms "
            f"(×{widen:.1f})",
            "agrees" if n == 2 else "partly" if n == 1 else "differs",
            f"needs median and spread both to grow by ×{SHIFT_FACTOR:g} or more; one of them: partly",
        )
    if "4G" in loaded_ms:
        (_, u50, _), (_, l50, _) = unloaded_ms["4G"], loaded_ms["4G"]
        change = l50 / u50 - 1
        out["loaded_rtt_4g"] = Verdict(
            REFERENCES["loaded_rtt_4g"],
            f"median {u50:.0f} → {l50:.0f} ms ({100 * change:+.0f} %)",
            "agrees"
            if abs(change) <= BARELY
            else "partly"
            if abs(change) <= 2 * BARELY
            else "differs",
            f"tolerance: the median moves by at most {100 * BARELY:g} % (partly: {200 * BARELY:g} %)",
        )
    return out
