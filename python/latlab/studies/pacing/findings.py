"""The study's findings for experiments B–I judged against latlab's runs (A's reference points are :mod:`.verdicts`).

Each rule is stated in its verdict. Shared conventions:

* a number against the study's: tolerance ±5 % (partly ±10 %) for goodputs and throughputs, ±25 % (partly
  ±50 %) for a buffer read off a curve on latlab's coarse grid (2, 5, 10, 20 KB), by linear interpolation;
* a curve "rises", "falls" or "is ahead" when it moves by more than :data:`MOVE_REL` (1 %): over three seeds the
  headline goodputs vary by about 0.3 %, so a 1 % move is not noise;
* "little" agrees within ±5 % (partly ±10 %), looser than A's "none" (±2, partly ±5 points).

E and J have no study findings here; the report states what latlab finds there without a verdict.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from latlab.studies._verdict import Outcome, Verdict, within
from latlab.studies.pacing.cases import CORE_RATE_BPS, MODES
from latlab.studies.pacing.metrics import select
from latlab.studies.pacing.references import C_TARGET_KBPS, FINDINGS, G_TARGET_MBPS, READ_AT_KB

#: A relative change larger than this counts as a rise, a fall or a lead.
MOVE_REL = 0.01
GOODPUT_TOL = (0.05, 0.10)
BUFFER_TOL = (0.25, 0.50)
LITTLE_TOL = (0.05, 0.10)
SHORT = {"unpaced": "unpaced", "host-paced": "host", "edge-paced": "edge"}


def _curve(d: pd.DataFrame, mode: str, metric: str) -> pd.Series:
    """Mean of ``metric`` against the buffer for one mode."""
    return d[d["mode"] == mode].groupby("buffer_kb")[metric].mean().sort_index()


def read_at(curve: pd.Series, buffer_kb: float) -> float:
    """The curve at ``buffer_kb``, linear between grid points (NaN outside the grid)."""
    if not len(curve) or buffer_kb < curve.index.min() or buffer_kb > curve.index.max():
        return np.nan
    return float(np.interp(buffer_kb, curve.index.to_numpy(float), curve.to_numpy(float)))


def buffer_for(curve: pd.Series, target: float) -> float:
    """The smallest buffer at which the curve reaches ``target`` (linear between grid points); NaN if never,
    and the first grid buffer if it is there already."""
    xs, ys = curve.index.to_numpy(float), curve.to_numpy(float)
    for i, (x, y) in enumerate(zip(xs, ys)):
        if y >= target:
            if i == 0:
                return float(x)
            x0, y0 = xs[i - 1], ys[i - 1]
            return float(x0 + (target - y0) * (x - x0) / (y - y0))
    return np.nan


def _kb(x: float) -> str:
    return f"{x:.1f} KB" if np.isfinite(x) else "not reached on the grid"


def _rel(a: float, b: float) -> float:
    return a / b - 1 if b else np.nan


def _judge(ref_key: str, measured: float, text: str, tol: tuple[float, float]) -> Verdict:
    ref = FINDINGS[ref_key]
    outcome, rule = within(measured, ref, *tol)
    return Verdict(ref, text, outcome, rule)


def _b(df: pd.DataFrame) -> dict[str, Verdict]:
    out: dict[str, Verdict] = {}
    b = select(df, "B")
    b100 = b[(b["flows"] == 100) & b["buffer_kb"].between(10, 30)]
    if len(b100):
        host, edge = (
            _curve(b100, "host-paced", "per_flow_kbps"),
            _curve(b100, "edge-paced", "per_flow_kbps"),
        )
        lead = {x: _rel(host.get(x, np.nan), edge.get(x, np.nan)) for x in host.index}
        n = sum(v > MOVE_REL for v in lead.values())
        out["B_host_100"] = Verdict(
            FINDINGS["B_host_100"],
            ", ".join(
                f"{x:g} KB: host {host[x]:.1f}, edge {edge.get(x, np.nan):.1f} Kbps"
                for x in host.index
            ),
            "agrees" if n == len(lead) else "partly" if n else "differs",
            f"host ahead by > {100 * MOVE_REL:g} % at every such buffer ({n} of {len(lead)} here); some: partly",
        )
    a = select(df, "A")
    if len(a):
        host, edge = (
            _curve(a, "host-paced", "per_flow_kbps"),
            _curve(a, "edge-paced", "per_flow_kbps"),
        )
        lead = (edge / host - 1).dropna()
        behind = [x for x, v in lead.items() if v < -MOVE_REL]
        level = [x for x, v in lead.items() if abs(v) <= MOVE_REL]
        out["B_edge_1000"] = Verdict(
            FINDINGS["B_edge_1000"],
            f"edge ahead at {sum(lead > MOVE_REL)} of {len(lead)} buffers (A's runs), level (±{100 * MOVE_REL:g} %) "
            f"at {', '.join(f'{x:g} KB' for x in level) or 'none'}, behind at "
            f"{', '.join(f'{x:g} KB' for x in behind) or 'none'}",
            "agrees" if not behind and not level else "partly" if not behind else "differs",
            f"edge ahead by > {100 * MOVE_REL:g} % at every buffer; level somewhere: partly; behind anywhere: differs",
        )
    return out


def _c(df: pd.DataFrame) -> dict[str, Verdict]:
    out: dict[str, Verdict] = {}
    c = select(df, "C")
    if not len(c):
        return out
    for mode, key in (
        ("unpaced", "C_tput_unpaced"),
        ("host-paced", "C_tput_host"),
        ("edge-paced", "C_tput_edge"),
    ):
        tput = read_at(_curve(c, mode, "core_utilisation"), 5.0) * CORE_RATE_BPS / 1e6
        if np.isfinite(tput):
            out[key] = _judge(key, tput, f"{tput:.1f} Mbps", GOODPUT_TOL)
    for mode, key in (("unpaced", "C_need_unpaced"), ("host-paced", "C_need_host")):
        need = buffer_for(_curve(c, mode, "per_flow_kbps"), C_TARGET_KBPS)
        out[key] = _judge(key, need, _kb(need), BUFFER_TOL)
    need = buffer_for(_curve(c, "edge-paced", "per_flow_kbps"), C_TARGET_KBPS)
    ref = FINDINGS["C_need_edge"]
    outcome: Outcome = (
        "agrees"
        if need < ref.value
        else "partly"
        if need < ref.value * (1 + BUFFER_TOL[0])
        else "differs"
    )
    out["C_need_edge"] = Verdict(
        ref,
        _kb(need),
        outcome,
        f"below {ref.value:g} KB; below {ref.value * (1 + BUFFER_TOL[0]):g} KB: partly",
    )
    return out


def _d(df: pd.DataFrame) -> dict[str, Verdict]:
    out: dict[str, Verdict] = {}
    d = select(df, "D")
    if not len(d) or "file_goodput_kbps" not in d:
        return out
    at = {m: read_at(_curve(d, m, "file_goodput_kbps"), 10.0) for m in MODES}
    for mode, key in (("edge-paced", "D_edge"), ("host-paced", "D_host")):
        if np.isfinite(at[mode]):
            out[key] = _judge(key, at[mode], f"{at[mode]:.1f} Kbps", GOODPUT_TOL)
    lead = _rel(at["edge-paced"], at["host-paced"])
    if np.isfinite(lead):
        ref = FINDINGS["D_edge_over_host"]
        lo, hi = ref.value - 7, ref.value + 7
        outcome: Outcome = (
            "agrees" if lo <= 100 * lead <= hi else "partly" if lead > MOVE_REL else "differs"
        )
        out["D_edge_over_host"] = Verdict(
            ref,
            f"{100 * lead:+.1f} % (edge {at['edge-paced']:.1f}, host {at['host-paced']:.1f}, unpaced "
            f"{at['unpaced']:.1f} Kbps)",
            outcome,
            f"edge ahead by {lo:g}–{hi:g} %; ahead by another amount: partly; not ahead by > {100 * MOVE_REL:g} %: "
            "differs",
        )
    return out


def _f(df: pd.DataFrame) -> dict[str, Verdict]:
    out: dict[str, Verdict] = {}
    f = select(df, "F")
    if not len(f):
        return out
    g = f.groupby(["buffer_kb", "mode"])["tcp_goodput_mbps"].mean().unstack()
    gains = [float(v) for m in MODES[1:] if m in g for v in (g[m] / g["unpaced"] - 1)]
    worst = max(gains, key=abs)
    out["F_little"] = Verdict(
        FINDINGS["F_little"],
        f"largest change {100 * worst:+.1f} % (host or edge against unpaced, over the buffers)",
        "agrees"
        if abs(worst) <= LITTLE_TOL[0]
        else "partly"
        if abs(worst) <= LITTLE_TOL[1]
        else "differs",
        f"absolute change within {100 * LITTLE_TOL[0]:g} %; within {100 * LITTLE_TOL[1]:g} %: partly",
    )
    zero = {
        m: min(
            (
                b
                for b, v in f[f["mode"] == m].groupby("buffer_kb")["core_loss"].max().items()
                if v == 0
            ),
            default=np.nan,
        )
        for m in MODES
    }
    ref = FINDINGS["F_zero_loss"]
    need = [v for v in zero.values()]
    outcome: Outcome = (
        "agrees"
        if all(np.isfinite(v) and v <= ref.value for v in need)
        else "partly"
        if all(np.isfinite(v) for v in need)
        else "differs"
    )
    out["F_zero_loss"] = Verdict(
        ref,
        ", ".join(f"{SHORT[m]} {_kb(v)}" for m, v in zero.items()),
        outcome,
        f"no core drop in the window at ≤ {ref.value:g} KB in every mode; at a larger grid buffer: partly",
    )
    return out


def _g(df: pd.DataFrame) -> dict[str, Verdict]:
    out: dict[str, Verdict] = {}
    g = select(df, "G")
    if not len(g):
        return out
    for mode, key in (("edge-paced", "G_edge_99"), ("host-paced", "G_host_99")):
        need = buffer_for(_curve(g, mode, "core_utilisation") * CORE_RATE_BPS / 1e6, G_TARGET_MBPS)
        out[key] = _judge(key, need, _kb(need), BUFFER_TOL)
    for mode, key in (("unpaced", "G_unpaced"), ("host-paced", "G_host"), ("edge-paced", "G_edge")):
        v = read_at(_curve(g, mode, "per_flow_kbps"), READ_AT_KB)
        if np.isfinite(v):
            out[key] = _judge(key, v, f"{v:.1f} Kbps (read between 5 and 10 KB)", GOODPUT_TOL)
    return out


def _trend(s: pd.Series) -> str:
    return ", ".join(f"{x:g} ms: {v:.1f}" for x, v in s.items())


def _h(df: pd.DataFrame, delay_buffers_kb: tuple[float, ...]) -> dict[str, Verdict]:
    out: dict[str, Verdict] = {}
    h = select(df, "H")
    paced = h[h["mode"] == "edge-paced"]
    if not len(paced):
        return out
    lo_b, hi_b = min(delay_buffers_kb), max(delay_buffers_kb)
    s5 = (
        paced[paced["buffer_kb"] == lo_b]
        .groupby("delay_ms")["tcp_goodput_mbps"]
        .mean()
        .sort_index()
    )
    if len(s5) > 2 and 0.0 in s5.index and 10.0 in s5.index:
        rises = _rel(s5[10.0], s5[0.0]) > MOVE_REL
        sat = _rel(s5.max(), s5[10.0]) <= 2 * MOVE_REL
        out["H_5KB"] = Verdict(
            FINDINGS["H_5KB"],
            f"{lo_b:g} KB, Mbps at d = {_trend(s5)}",
            "agrees" if rises and sat else "partly" if rises else "differs",
            f"d = 10 ms above d = 0 by > {100 * MOVE_REL:g} % and within {200 * MOVE_REL:g} % of the best d; "
            "the rise alone: partly",
        )
    s50 = (
        paced[paced["buffer_kb"] == hi_b]
        .groupby("delay_ms")["tcp_goodput_mbps"]
        .mean()
        .sort_index()
    )
    if len(s50) > 2 and 0.0 in s50.index:
        change = _rel(s50.iloc[-1], s50[0.0])
        out["H_50KB"] = Verdict(
            FINDINGS["H_50KB"],
            f"{hi_b:g} KB, Mbps at d = {_trend(s50)} ({100 * change:+.1f} % from d = 0 to {s50.index[-1]:g} ms)",
            "agrees" if change < -MOVE_REL else "partly" if change < 0 else "differs",
            f"largest d below d = 0 by > {100 * MOVE_REL:g} %; below by less: partly",
        )
    un = h[h["mode"] == "unpaced"].groupby("buffer_kb")["tcp_goodput_mbps"].mean()
    a_un = select(df, "A")
    a_un = a_un[a_un["mode"] == "unpaced"].groupby("buffer_kb")["tcp_goodput_mbps"].mean()
    un = un.combine_first(a_un)
    d1 = (
        paced[(paced["delay_ms"] == 1.0) & (paced["buffer_kb"] <= 5)]
        .groupby("buffer_kb")["tcp_goodput_mbps"]
        .mean()
    )
    if len(d1):
        gains = {b: _rel(v, un.get(b, np.nan)) for b, v in d1.items()}
        n = sum(abs(v) <= MOVE_REL for v in gains.values() if np.isfinite(v))
        out["H_1ms"] = Verdict(
            FINDINGS["H_1ms"],
            ", ".join(f"{b:g} KB: {100 * v:+.1f} % against unpaced" for b, v in gains.items()),
            "agrees" if n == len(gains) else "partly" if n else "differs",
            f"within ±{100 * MOVE_REL:g} % of unpaced at every such buffer ({n} of {len(gains)}); some: partly",
        )
    big = (
        paced[paced["buffer_kb"] >= 10]
        .groupby(["buffer_kb", "delay_ms"])["tcp_goodput_mbps"]
        .mean()
        .unstack()
    )
    long_d = [x for x in (100.0, 200.0) if x in big]
    if len(big) and 10.0 in big and long_d:
        drops = {(b, x): _rel(big.loc[b, x], big.loc[b, 10.0]) for b in big.index for x in long_d}
        drops = {k: v for k, v in drops.items() if np.isfinite(v)}
        n = sum(v < -MOVE_REL for v in drops.values())
        out["H_long"] = Verdict(
            FINDINGS["H_long"],
            "; ".join(f"{b:g} KB, {x:g} ms: {100 * v:+.1f} %" for (b, x), v in drops.items())
            + " against d = 10 ms",
            "agrees" if n == len(drops) else "partly" if n else "differs",
            f"below d = 10 ms by > {100 * MOVE_REL:g} % at every such point ({n} of {len(drops)}); some: partly",
        )
    return out


def _i(df: pd.DataFrame) -> dict[str, Verdict]:
    out: dict[str, Verdict] = {}
    i = select(df, "I")
    if not len(i) or "udp_loss" not in i:
        return out
    i = i[(i["mode"] != "edge-paced") | (i["delay_ms"] == 10.0)]
    p = i[i["udp"] == "poisson"]
    if len(p):
        for mode, key in (
            ("edge-paced", "I_edge"),
            ("host-paced", "I_host"),
            ("unpaced", "I_unpaced"),
        ):
            v = read_at(_curve(p, mode, "per_flow_kbps"), READ_AT_KB)
            if np.isfinite(v):
                out[key] = _judge(key, v, f"{v:.1f} Kbps (read between 5 and 10 KB)", GOODPUT_TOL)
        top = float(p["per_flow_kbps"].max())
        sat = {
            m: buffer_for(_curve(p, m, "per_flow_kbps"), top * (1 - 1.5 * MOVE_REL)) for m in MODES
        }
        order = [sat[m] for m in ("edge-paced", "host-paced", "unpaced")]
        key_order = [x if np.isfinite(x) else np.inf for x in order]
        ordered = key_order[0] < key_order[1] < key_order[2]
        out["I_saturation"] = Verdict(
            FINDINGS["I_saturation"],
            ", ".join(f"{SHORT[m]} {_kb(sat[m])}" for m in ("edge-paced", "host-paced", "unpaced")),
            "agrees" if ordered else "partly" if key_order[0] < min(key_order[1:]) else "differs",
            f"saturated = within {150 * MOVE_REL:g} % of the best per-flow goodput ({top:.1f} Kbps); edge before "
            "host before unpaced; edge first only: partly",
        )
        loss = p.groupby(["buffer_kb", "mode"])["udp_loss"].mean().unstack()
        mid = loss[loss.index.to_series().between(5, 30)]
        if len(mid) and {"unpaced", "edge-paced"} <= set(mid.columns):
            ratio = (mid["unpaced"] / mid["edge-paced"].where(mid["edge-paced"] > 0)).to_dict()
            n = sum(v >= 10 for v in ratio.values() if np.isfinite(v))
            out["I_udp_loss"] = Verdict(
                FINDINGS["I_udp_loss"],
                ", ".join(
                    f"{b:g} KB: ÷{v:.1f}" if np.isfinite(v) else f"{b:g} KB: edge 0"
                    for b, v in ratio.items()
                ),
                "agrees" if n == len(ratio) else "partly" if n else "differs",
                f"edge-paced loss at least 10× lower at every such buffer ({n} of {len(ratio)}); some: partly",
            )
        if "edge-paced" in loss:
            e = loss["edge-paced"].dropna()
            ups = [(a, b) for a, b in zip(e.index[:-1], e.index[1:]) if e[b] > e[a] * 1.1]
            out["I_udp_shape"] = Verdict(
                FINDINGS["I_udp_shape"],
                "edge-paced " + ", ".join(f"{b:g} KB {v:.1e}" for b, v in e.items()),
                "agrees" if ups else "differs",
                "rises by > 10 % from one grid buffer to the next somewhere",
            )
    lrd = i[i["udp"] == "lrd"]
    if len(lrd):
        e = _curve(lrd, "edge-paced", "per_flow_kbps")
        peak = float(e.idxmax())
        near = e[(e.index >= 5) & (e.index <= 10)]
        plateau = len(near) and _rel(float(e.max()), float(near.max())) <= MOVE_REL
        out["I_lrd_peak"] = Verdict(
            FINDINGS["I_lrd_peak"],
            f"largest at {peak:g} KB ("
            + ", ".join(f"{b:g} KB {v:.1f}" for b, v in e.items())
            + " Kbps)",
            "agrees" if 5 <= peak <= 10 else "partly" if plateau else "differs",
            f"largest at 5–10 KB; within {100 * MOVE_REL:g} % of the largest there (a plateau, no peak): partly",
        )
        loss = lrd.groupby(["buffer_kb", "mode"])["udp_loss"].mean().unstack()
        if {"unpaced", "edge-paced"} <= set(loss.columns):
            ratio = (loss["unpaced"] / loss["edge-paced"]).replace([np.inf], np.nan).dropna()
            best = float(ratio.max()) if len(ratio) else np.nan
            out["I_lrd_udp"] = Verdict(
                FINDINGS["I_lrd_udp"],
                f"largest reduction ÷{best:.1f} ("
                + ", ".join(f"{b:g} KB ÷{v:.1f}" for b, v in ratio.items())
                + ")",
                "agrees" if 3 <= best <= 30 else "partly" if best > 1 + MOVE_REL else "differs",
                "largest reduction 3–30-fold (an order of magnitude, within a factor of ~3); some reduction: partly",
            )
    return out


STEPS: dict[str, Callable[[pd.DataFrame], dict[str, Verdict]]] = {
    "B": _b,
    "C": _c,
    "D": _d,
    "F": _f,
    "G": _g,
    "I": _i,
}


def findings(
    df: pd.DataFrame, delay_buffers_kb: tuple[float, ...] = (5.0, 50.0)
) -> dict[str, dict[str, Verdict]]:
    """The study's findings for B, C, D, F, G, H and I judged on the finished runs, by experiment (absent: no runs)."""
    out = {exp: step(df) for exp, step in STEPS.items()}
    out["H"] = _h(df, delay_buffers_kb)
    return {exp: out[exp] for exp in "BCDFGHI" if out.get(exp)}
