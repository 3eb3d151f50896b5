"""The report's result sentences, each computed from the measured numbers.

There is no study to agree with: every rule here states what the runs show,
with its threshold in the sentence, so the sentence changes when the numbers
do (tests/python/test_report_claims.py checks that it does):

* **the pick** (:func:`pick`): among the schemes whose mean goodput is within
  :data:`KEEP` (10 %) of the baseline's (CUBIC over DropTail), the one with the
  lowest p95 RTT; also at 5 % and 20 % (:data:`KEEP_SENSITIVITY`), since the
  pick depends on the threshold;
* **the share** (:func:`shares`): a scheme *loses its share* when its mean share
  against one CUBIC flow is below :data:`SHARE_LOW` (0.4), *takes* CUBIC's when
  above :data:`SHARE_HIGH` (0.6), and splits evenly in between;
* **no effect** (:func:`same_as_baseline`): a scheme whose goodput (mean, min,
  max), p95 RTT and drops are the baseline's exactly never changed what the
  sender did in these runs (the simulator is deterministic);
* **surprises** (:func:`surprises`): a queue discipline at the bottleneck that
  costs more than :data:`KEEP` of the baseline's goodput, a queue discipline or
  receiver that raises it by more than :data:`KEEP`, an ECN scheme more
  than :data:`KEEP` away from the same queue dropping, and a scheme with a
  p95 RTT more than :data:`RISE` above the baseline's (an edge pacer's rise
  within its own holding time, :data:`EDGE_CROSSINGS` × d, is explained by it). Each is explained from the traces when they
  show a cause (the bottleneck idles: its queue is empty in at least
  :data:`IDLE_POINTS` more of the samples than the baseline's, and its
  utilisation and the sender's mean window are lower), and flagged **unexplained** otherwise.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from latlab.studies.countermeasures.cases import BASELINE

KEEP = 0.10
KEEP_SENSITIVITY = (0.05, 0.10, 0.20)
SHARE_LOW = 0.4
SHARE_HIGH = 0.6
#: A p95 RTT above the baseline's by more than this share is a surprise (less: level with it).
RISE = 0.10
#: A round trip crosses the edge-dumbbell's edge queue this many times (both directions of the
#: ingress and the egress edge link: data and ACKs), so an edge pacer with bound d adds up to 4 d.
EDGE_CROSSINGS = 4
#: The columns that, all equal to the baseline's, show a scheme that never acted.
SAME_COLUMNS = (
    "goodput_mean_bps",
    "goodput_min_bps",
    "goodput_max_bps",
    "rtt_p95_ms",
    "drops_mean_pkts",
)
#: The bottleneck "idles" when its queue is empty in this many more samples (a share) than the baseline's.
IDLE_POINTS = 0.10
UNEXPLAINED = "**unexplained**"


def mbps(bps: float) -> str:
    return f"{bps / 1e6:.2f} Mbit/s" if _finite(bps) else "no goodput"


def ms(x: float) -> str:
    return f"{x:.0f} ms" if _finite(x) else "no RTT samples"


def pct(x: float) -> str:
    return f"{100 * x:.0f} %"


def _finite(x: Any) -> bool:
    return x is not None and isinstance(x, (int, float)) and math.isfinite(x)


def baseline_row(t: pd.DataFrame) -> pd.Series | None:
    b = t[t["scheme"] == BASELINE]
    return b.iloc[0] if len(b) else None


def pick(t: pd.DataFrame, keep: float = KEEP) -> pd.Series | None:
    """The lowest-p95 scheme among those within ``keep`` of the baseline's goodput (None without a baseline)."""
    base = baseline_row(t)
    if base is None:
        return None
    floor = (1 - keep) * base["goodput_mean_bps"]
    ok = t[(t["goodput_mean_bps"] >= floor) & t["rtt_p95_ms"].notna()]
    return ok.sort_values(["rtt_p95_ms", "scheme"]).iloc[0] if len(ok) else None


def pick_sentence(t: pd.DataFrame, path_title: str) -> str:
    base = baseline_row(t)
    if base is None:
        return (
            f"On the {path_title}, the baseline ({BASELINE}) was not run (scheme filter), so "
            "no scheme is judged against it."
        )
    best = pick(t)
    lowest = t.sort_values(["rtt_p95_ms", "scheme"]).iloc[0]
    out = (
        f"On the {path_title}, the baseline {BASELINE} gets {mbps(base['goodput_mean_bps'])} at a "
        f"p95 RTT of {ms(base['rtt_p95_ms'])}. Among the schemes within {pct(KEEP)} of its "
        f"goodput, {best['scheme']} has the lowest p95 RTT: {ms(best['rtt_p95_ms'])} at "
        f"{mbps(best['goodput_mean_bps'])}"
    )
    if best["scheme"] == BASELINE:
        out += " (no other scheme keeps that much goodput with a lower p95)"
    out += "."
    if lowest["scheme"] != best["scheme"]:
        cost = 1 - lowest["goodput_mean_bps"] / base["goodput_mean_bps"]
        out += (
            f" The lowest p95 RTT of all, {ms(lowest['rtt_p95_ms'])}, is {lowest['scheme']}'s, "
            f"at {mbps(lowest['goodput_mean_bps'])} ({pct(cost)} below the baseline's goodput)."
        )
    return out


def sensitivity_sentence(t: pd.DataFrame) -> str:
    """How the pick moves with the goodput threshold."""
    if baseline_row(t) is None:
        return ""
    parts = []
    for keep in KEEP_SENSITIVITY:
        p = pick(t, keep)
        parts.append(f"within {pct(keep)}: {p['scheme']} ({ms(p['rtt_p95_ms'])})")
    return "The pick by threshold on goodput, " + "; ".join(parts) + "."


def shares(t: pd.DataFrame) -> dict[str, list[str]]:
    """Scheme names by how their mean share against CUBIC falls: "lose", "even", "take"."""
    out: dict[str, list[str]] = {"lose": [], "even": [], "take": []}
    for _, r in t.iterrows():
        s = r["share_mean"]
        if not _finite(s):
            continue
        key = "lose" if s < SHARE_LOW else "take" if s > SHARE_HIGH else "even"
        out[key].append(f"{r['scheme']} ({s:.2f})")
    return out


def share_sentence(t: pd.DataFrame) -> str:
    s = shares(t)
    words = {
        "lose": f"below {SHARE_LOW:g}, losing their share to the CUBIC flow",
        "even": f"between {SHARE_LOW:g} and {SHARE_HIGH:g}",
        "take": f"above {SHARE_HIGH:g}, taking CUBIC's",
    }
    parts = [
        f"{len(names)} {'scheme' if len(names) == 1 else 'schemes'} {words[k]}: {', '.join(names)}"
        if names
        else f"none {words[k]}"
        for k, names in s.items()
    ]
    return "Share against one CUBIC flow (mean over seeds): " + "; ".join(parts) + "."


def _trace_words(r: pd.Series) -> str:
    return (
        f"bottleneck utilisation {pct(r['util'])}, queue empty in {pct(r['queue_empty'])} of the "
        f"samples, mean queue {r['queue_kb']:.0f} KB, mean cwnd {r['cwnd_kb']:.0f} KB, "
        f"{r['bottleneck_drops']:.0f} drops and {r.get('bottleneck_marks', 0):.0f} ECN marks at the "
        f"bottleneck, {r.get('recoveries', math.nan):.0f} loss recoveries per run"
    )


def _idles(r: pd.Series, ref: pd.Series) -> bool:
    return (
        _finite(r["queue_empty"])
        and _finite(ref["queue_empty"])
        and r["queue_empty"] - ref["queue_empty"] >= IDLE_POINTS
        and r["util"] < ref["util"]
        and r["cwnd_kb"] < ref["cwnd_kb"]
    )


def bdp_kb(r: pd.Series, ref: pd.Series) -> float:
    """The path's bandwidth-delay product (KB) at ``ref``'s goodput and ``r``'s p50 RTT."""
    return ref["goodput_mean_bps"] * r["rtt_p50_ms"] / 8e6


def _explain(r: pd.Series, ref: pd.Series, what: str) -> str:
    """A surprise explained by the traces (the bottleneck idles) or flagged unexplained."""
    numbers = f"{r['scheme']}: {_trace_words(r)}; {ref['scheme']}: {_trace_words(ref)}"
    if _idles(r, ref):
        return (
            f"{what} The traces show why: the bottleneck idles under {r['scheme']} ({numbers}). "
            f"The path's bandwidth-delay product at {ref['scheme']}'s goodput and "
            f"{r['scheme']}'s p50 RTT is {bdp_kb(r, ref):.0f} KB. "
            f"Its window (mean {r['cwnd_kb']:.0f} KB against {ref['cwnd_kb']:.0f} KB) is too "
            "small to keep the bottleneck busy: after each drop or mark the queue drains and "
            "the link waits."
        )
    return f"{what} {UNEXPLAINED}: the traces do not show the bottleneck idling ({numbers})."


def same_as_baseline(t: pd.DataFrame) -> list[str]:
    """The schemes whose numbers are the baseline's exactly."""
    base = baseline_row(t)
    if base is None:
        return []
    return [
        r["scheme"]
        for _, r in t.iterrows()
        if r["scheme"] != BASELINE and all(r[c] == base[c] for c in SAME_COLUMNS)
    ]


def same_sentence(t: pd.DataFrame) -> str:
    same = same_as_baseline(t)
    if not same:
        return ""
    return (
        f"{', '.join(same)} {'gives' if len(same) == 1 else 'give'} the baseline's numbers "
        "exactly (goodput at every seed, p95 RTT, drops): in these runs "
        f"{'it' if len(same) == 1 else 'each'} never changed what the sender did."
    )


def ecn_sentence(t: pd.DataFrame) -> str:
    """Each marking queue with ECN beside the same queue dropping: goodput and p95 RTT."""
    by_name = {r["scheme"]: r for _, r in t.iterrows()}
    parts = []
    for name, r in by_name.items():
        plain = by_name.get(name.removesuffix("+ecn")) if name.endswith("+ecn") else None
        if plain is None or not plain["goodput_mean_bps"]:
            continue
        dg = r["goodput_mean_bps"] / plain["goodput_mean_bps"] - 1
        parts.append(
            f"{plain['scheme']} {100 * dg:+.0f} % goodput, p95 RTT {ms(plain['rtt_p95_ms'])} → "
            f"{ms(r['rtt_p95_ms'])}, {r['drops_mean_pkts']:.0f} drops against "
            f"{plain['drops_mean_pkts']:.0f} (mean per run)"
        )
    return "With ECN against the same queue dropping: " + "; ".join(parts) + "." if parts else ""


def baseline_share_sentence(t: pd.DataFrame) -> str:
    base = baseline_row(t)
    if base is None or not _finite(base["share_mean"]):
        return ""
    return (
        f"CUBIC against CUBIC (the baseline) splits {base['share_mean']:.2f} "
        f"[{base['share_min']:.2f}–{base['share_max']:.2f}] over seeds: the spread of an even "
        "contest on this path."
    )


def _p95_rise(r: pd.Series, base: pd.Series) -> str:
    name, p, p0 = r["scheme"], r["rtt_p95_ms"], base["rtt_p95_ms"]
    what = f"{name}'s p95 RTT, {ms(p)}, is {pct(p / p0 - 1)} above the baseline's {ms(p0)}."
    d = r.get("edge_delay_ms")
    if _finite(d) and p - p0 <= EDGE_CROSSINGS * d:
        return (
            f"{what} The rise, {p - p0:.0f} ms, is within what the edge pacer itself holds: up "
            f"to d = {d:g} ms on each of the {EDGE_CROSSINGS} edge-queue crossings of a round "
            f"trip ({EDGE_CROSSINGS * d:g} ms)."
        )
    return f"{what} {UNEXPLAINED}: {name}: {_trace_words(r)}; {BASELINE}: {_trace_words(base)}."


def surprises(t: pd.DataFrame) -> list[str]:
    """Sentences on the results a reader would not expect, each explained from the traces or flagged."""
    base = baseline_row(t)
    if base is None:
        return []
    out = []
    by_name = {r["scheme"]: r for _, r in t.iterrows()}
    g0, p0 = base["goodput_mean_bps"], base["rtt_p95_ms"]
    for name, r in by_name.items():
        if name == BASELINE:
            continue
        g, p = r["goodput_mean_bps"], r["rtt_p95_ms"]
        if r["role"] == "queue" and not name.endswith("+ecn") and g < (1 - KEEP) * g0:
            out.append(
                _explain(
                    r,
                    base,
                    f"{name} costs {pct(1 - g / g0)} of the baseline's goodput "
                    f"({mbps(g)} against {mbps(g0)}).",
                )
            )
        if r["role"] in ("queue", "receiver") and g > (1 + KEEP) * g0:
            out.append(
                f"{name} raises goodput by {pct(g / g0 - 1)} over the baseline's ({mbps(g)} "
                f"against {mbps(g0)}). {UNEXPLAINED}: {name}: {_trace_words(r)}; {BASELINE}: "
                f"{_trace_words(base)}."
            )
        plain = by_name.get(name.removesuffix("+ecn"))
        if name.endswith("+ecn") and plain is not None:
            dg = g / plain["goodput_mean_bps"] - 1 if plain["goodput_mean_bps"] else math.nan
            if _finite(dg) and abs(dg) > KEEP:
                out.append(
                    _explain(
                        r if dg < 0 else plain,
                        plain if dg < 0 else r,
                        f"With ECN, {plain['scheme']} gets {mbps(g)} against {mbps(plain['goodput_mean_bps'])} "
                        f"dropping ({100 * dg:+.0f} %).",
                    )
                )
        if _finite(p) and _finite(p0) and p > (1 + RISE) * p0:
            out.append(_p95_rise(r, base))
    return out
