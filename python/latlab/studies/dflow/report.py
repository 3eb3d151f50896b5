"""The DFlow study's report: set-up, the verdict table, one section per case, the knee, the base-period sweep.

Every sentence that compares with the study comes from a verdict
(:mod:`latlab.studies.dflow.verdicts`); every other number is measured or
derived from the set-up here, never typed in.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from latlab.models import tcp_equation as eq
from latlab.studies._markdown import num as _f
from latlab.studies._markdown import pct
from latlab.studies._markdown import table as _table
from latlab.studies._verdict import Verdict
from latlab.studies.dflow.cases import (
    ACCESS_DELAY_MS,
    ACCESS_RATE_BPS,
    BOTTLENECK_RATE_BPS,
    CASES,
    CORE_DELAY_MS,
    CURRENT_PERIOD_MS,
    FULL,
    FULL_QUEUE_DELAY_S,
    LOADED_RTT_S,
    MIN_RATE_BPS,
    PACKET_BYTES,
    PRIMARY,
    QUEUE_PACKETS,
    QUICK,
    RTT_S,
    SAMPLE_INTERVAL_MS,
    SEGMENT_BYTES,
    START_SPREAD_S,
    TARGET_MS,
    TCP_HEADER_BYTES,
    TCP_MSS_BYTES,
    TFRC_HEADER_BYTES,
    VARIANTS,
    Case,
    Settings,
)
from latlab.studies.dflow.metrics import (
    StudyData,
    closest,
    ok_runs,
    rate_ratio,
    sweep_means,
    value_range,
    where_ratio,
)
from latlab.studies.dflow.references import PAPER, REFERENCES
from latlab.studies.dflow.verdicts import verdicts


def _pct(x: Any) -> str:
    return pct(x, "{:.0f} %")


def _kbps(rate_bps: Any) -> str:
    """A rate in kb/s: whole numbers from 10 kb/s up, two decimals below (starved flows)."""
    try:
        x = float(rate_bps)
    except (TypeError, ValueError):
        return "–"
    return _f(x / 1e3, "{:.0f}" if abs(x) >= 1e4 else "{:.2f}")


def _seed_table(d: pd.DataFrame, case: Case) -> str:
    """One row per seed: per-group rates, delay, losses, fairness, utilisation (and the start order in "vs" runs)."""
    header = ["seed"] + (["first to start"] if case.rival else [])
    header += ["DFlow (kb/s per flow)"] if case.dflows else []
    header += ["TFRC (kb/s per flow)"] if case.tfrcs else []
    header += [f"{case.rival_label} (kb/s)"] if case.rival else []
    header += ["delay mean / p95 / max (ms)"] + (
        ["DFlow's own estimate (ms)"] if case.rival else []
    )
    header += [f"packets ≤ {TARGET_MS:g} ms", "drops: window (run)"]
    header += ["TFRC loss events"] if case.tfrcs else []
    header += ["DFlow loss / delay events"] if case.dflows else []
    header += [f"{case.rival_label} retransmits / timeouts"] if case.rival else []
    header += ["Jain DFlows"] if case.dflows > 1 else []
    header += ["Jain all", "utilisation"]
    rows = []
    for _, r in d.iterrows():
        row: list[Any] = [int(r["seed"])] + ([r["first_to_start"]] if case.rival else [])
        row += [_kbps(r["dflow_rate_bps"])] if case.dflows else []
        row += [_kbps(r["tfrc_rate_bps"])] if case.tfrcs else []
        row += [_kbps(r["rival_rate_bps"])] if case.rival else []
        row += [f"{_f(r['delay_mean_ms'])} / {_f(r['delay_p95_ms'])} / {_f(r['delay_max_ms'])}"]
        row += [_f(r["dflow_own_delay_ms"])] if case.rival else []
        row += [_pct(r["below_target"]), f"{int(r['drops_window'])} ({int(r['drops_total'])})"]
        row += [int(r["tfrc_loss_events"])] if case.tfrcs else []
        row += (
            [f"{int(r['dflow_loss_events'])} / {int(r['dflow_delay_events'])}"]
            if case.dflows
            else []
        )
        row += [f"{int(r['rival_retransmits'])} / {int(r['rival_timeouts'])}"] if case.rival else []
        row += [_f(r["jain_dflow"], "{:.3f}")] if case.dflows > 1 else []
        row += [_f(r["jain_all"], "{:.3f}"), _f(r["utilisation"], "{:.3f}")]
        rows.append(row)
    return _table(header, rows)


def _flow_table(f: pd.DataFrame) -> str:
    """Per flow of one run: start, rate, the receiver's p, events, losses (TCP: retransmissions, timeouts)."""
    rows = []
    for _, r in f.sort_values("flow_id").iterrows():
        if r["kind"] in ("tfrc", "dflow"):
            label = "DFlow" if r["kind"] == "dflow" else "TFRC"
            p = _f(r["loss_event_rate"], "{:.4f}")
            events = (
                f"{int(r['loss_events'])} / {int(r['delay_events'])}"
                if r["kind"] == "dflow"
                else str(int(r["loss_events"]))
            )
            losses = f"{int(r['lost_pkts'])} sent − received"
        else:
            label, p = CASES[r["case"]].rival_label or str(r["cc"]), "–"
            events = "–"
            losses = (
                f"{int(r['retransmits'])} retransmits (window), {int(r['timeouts'])} timeouts (run)"
            )
        rows.append(
            [
                int(r["flow_id"]),
                label,
                _f(r["start_s"], "{:.2f}"),
                _kbps(r["goodput_bps"]),
                p,
                events,
                losses,
                _f(r.get("flow_queueing_delay_ms")),
            ]
        )
    return _table(
        [
            "flow",
            "kind",
            "start (s)",
            "mean rate (kb/s)",
            "p at end",
            "loss (/ delay) events",
            "losses",
            "DFlow's own queueing estimate, mean (ms)",
        ],
        rows,
    )


def _comparison(vs: dict[str, Verdict], keys: tuple[str, ...]) -> str:
    """One short sentence per judged reference among ``keys`` (the table above has the rules), from the verdicts."""
    return " ".join(vs[k].brief() for k in keys if k in vs)


def _case_texts(runs: pd.DataFrame, flows: pd.DataFrame, vs: dict[str, Verdict]) -> dict[str, str]:
    """What each run shows and how it compares with the study: measured numbers, and sentences from the verdicts."""
    texts: dict[str, str] = {}
    dflow, tfrc = ok_runs(runs, "dflow"), ok_runs(runs, "tfrc")
    period_ms = CURRENT_PERIOD_MS
    if len(dflow):
        low = dflow[dflow["jain_dflow"] < 0.95]
        peaks = dflow["delay_max_ms"]
        texts["dflow"] = (
            f"DFlow's queue: {dflow['delay_mean_ms'].mean():.1f} ms on average, "
            f"{100 * dflow['below_target'].mean():.0f} % of packets at or below the {TARGET_MS:g} ms target, "
            f"{dflow['drops_window'].sum():.0f} drops in all windows together and {dflow['drops_total'].sum():.0f} "
            "over the whole runs (drops outside the window are in the start-up, when the flows' slow start overshoots "
            "before the first delay event takes effect). Whenever the queue passes the target every flow records a "
            f"delay event in the same {period_ms:g} ms period and backs off to its equation rate; the queue drains, "
            f"the link idles briefly (utilisation {dflow['utilisation'].mean():.3f}) and the flows climb again by one "
            f"packet per RTT: the saw-tooth of the figure. The peaks ({peaks.min():.0f}–{peaks.max():.0f} ms, the "
            f"largest sojourn per seed) are the overshoot of each climb: the event is flagged at the end of a "
            f"{period_ms:g} ms period and reaches the sender one RTT later. "
            + (
                f"In {len(low)} of {len(dflow)} seeds one flow falls behind and stays there (Jain "
                f"{', '.join(f'{j:.3f}' for j in low['jain_dflow'])}); the mechanism is in The knee below. "
                if len(low)
                else f"The {CASES['dflow'].dflows} flows reach Jain ≥ 0.95 in every seed. "
            )
            + _comparison(vs, ("dflow_delay", "dflow_losses", "dflow_fairness"))
        )
    if len(tfrc):
        factor = (
            f" ({tfrc['delay_mean_ms'].mean() / dflow['delay_mean_ms'].mean():.0f} times DFlow's)"
            if len(dflow)
            else ""
        )
        texts["tfrc"] = (
            f"TFRC reacts only to loss; its queue: {tfrc['delay_mean_ms'].mean():.0f} ms of "
            f"queueing on average{factor}, against {FULL_QUEUE_DELAY_S * 1e3:.1f} ms for a full queue; "
            f"{tfrc['drops_window'].mean():.0f} drops per window and {tfrc['tfrc_loss_events'].mean():.0f} loss events "
            f"per run; utilisation {tfrc['utilisation'].mean():.3f}"
            + (
                f" against DFlow's {dflow['utilisation'].mean():.3f}"
                + (
                    ": the throughput TFRC gains is the idle time DFlow pays for draining its queue"
                    if tfrc["utilisation"].mean() > dflow["utilisation"].mean()
                    else ""
                )
                if len(dflow)
                else ""
            )
            + ". "
            + _comparison(vs, ("tfrc_delay", "tfrc_losses", "tfrc_throughput"))
        )
    led = ok_runs(runs, "ledbat")
    if len(led):
        ratio = rate_ratio(led)
        groups = []
        for who, label in (("dflow", "DFlow started first"), ("ledbat", "LEDBAT started first")):
            g = led[led["first_to_start"] == who]
            if len(g):
                groups.append(
                    f"{label} in {len(g)} seed{'s' if len(g) > 1 else ''}: DFlow/LEDBAT "
                    f"{value_range(ratio[g.index], '{:.2f}')}, real queue {value_range(g['delay_mean_ms'])} ms, "
                    f"DFlow's own estimate {value_range(g['dflow_own_delay_ms'])} ms"
                )
        best = led.loc[ratio.idxmax()]
        led_target = CASES["ledbat"].rival_params["target_ms"]
        texts["ledbat"] = (
            f"Both controllers aim at {TARGET_MS:g} ms (LEDBAT's target {led_target:g} ms). LEDBAT grows its window "
            "while *its* estimate of the queueing delay (one-way delay minus the smallest it has seen) is below its "
            "target and shrinks it above. DFlow flags an event whenever the smallest delay of its own packets in a "
            f"{period_ms:g} ms period exceeds its threshold"
            + (
                ": with LEDBAT parking the queue near it, most of DFlow's periods are events, p stays far beyond "
                "the knee and DFlow stays below LEDBAT; the fewer packets it sends, the less its per-period minimum "
                "smooths the queue's ripple, which keeps it there. Base-delay errors of a few milliseconds shift this "
                "knife edge: a flow that starts while the other's packets are queued overestimates its base by that "
                "queue and tolerates that much more. "
                if ratio.max() < 1
                else ". "
            )
            + "; ".join(groups)
            + ". "
            f"With a base that never drifts DFlow keeps at most {ratio.max():.2f} of LEDBAT's rate (seed "
            f"{int(best['seed'])}, {best['first_to_start']} first). "
            + _comparison(vs, ("ledbat_share",))
        )
    veg = ok_runs(runs, "vegas")
    if len(veg):
        alpha, beta = CASES["vegas"].rival_params["alpha"], CASES["vegas"].rival_params["beta"]
        q_s = veg["delay_mean_ms"].mean() / 1e3
        packet_bits = PACKET_BYTES * 8
        lo, hi = alpha * packet_bits / q_s, beta * packet_bits / q_s
        half_pps = BOTTLENECK_RATE_BPS / 2 / packet_bits
        vp = (
            flows[
                (flows["case"] == "vegas")
                & (flows["variant"] == PRIMARY)
                & (flows["kind"] == "dflow")
            ]
            if len(flows)
            else flows
        )
        p_txt = (
            f" (its p stays near {vp['loss_event_rate'].median():.4f}: few events per packet at its rate, so "
            "each event lowers the equation rate only a little)"
            if len(vp)
            else ""
        )
        vegas_gets = veg["rival_rate_bps"].mean()
        texts["vegas"] = (
            f"Vegas keeps between α = {alpha:g} and β = {beta:g} of its own packets in the queue: diff = "
            "cwnd·(RTT − baseRTT)/RTT = its rate × the queueing delay, so its rate is α–β packets divided by whatever "
            f"queueing delay the other flow sustains. DFlow lets the queue rise to its {TARGET_MS:g} ms threshold "
            f"before it backs off{p_txt}, and the queue averages {q_s * 1e3:.1f} ms: Vegas can then have "
            f"{lo / 1e3:.0f}–{hi / 1e3:.0f} kb/s and gets {vegas_gets / 1e3:.0f} kb/s; DFlow takes the rest "
            f"({veg['dflow_rate_bps'].mean() / 1e3:.0f} kb/s, DFlow/Vegas {rate_ratio(veg).mean():.2f}). The mean "
            f"delay stays {'below' if veg['delay_mean_ms'].max() < TARGET_MS else 'above'} the target in "
            f"{'every seed' if (veg['delay_mean_ms'] < TARGET_MS).all() else 'some seeds'}, with "
            f"{veg['drops_window'].sum():.0f} drops in all windows together. For equal shares "
            f"({BOTTLENECK_RATE_BPS / 2e6:g} Mb/s each) Vegas would need the queue at "
            f"{alpha / half_pps * 1e3:.0f}–{beta / half_pps * 1e3:.0f} ms, i.e. DFlow backing off well below its "
            "threshold"
            + (
                "; latlab's DFlow does not"
                if q_s * 1e3 > beta / half_pps * 1e3
                else f"; the queue here averages {q_s * 1e3:.1f} ms"
            )
            + ". Smaller packets (ns-2's defaults) would not close the gap: α and β "
            "count packets, so Vegas would get even fewer bytes. "
            + _comparison(vs, ("vegas_share",))
        )
        low = veg[rate_ratio(veg) < 0.5]
        if len(low):
            texts["vegas"] += (
                f" In seed{'s' if len(low) > 1 else ''} {', '.join(str(int(x)) for x in low['seed'])} (first to start: "
                f"{', '.join(low['first_to_start'])}) DFlow ended below half of Vegas's rate: the two slow starts "
                "overlapped, the queue filled, DFlow's delay events pushed it to TFRC's floor, and it climbs back "
                "only as its loss history ages (the history counts packets, and few arrive); Vegas, which never sees "
                "the queue above its β, keeps what DFlow left."
            )
    nr = ok_runs(runs, "newreno")
    if len(nr):
        bad = nr[nr["utilisation"] < 0.9]
        texts["newreno"] = (
            f"NewReno fills the buffer until it overflows; {100 * nr['below_target'].mean():.0f} % of packets see "
            f"the queue at or below DFlow's {TARGET_MS:g} ms threshold"
            + (
                ", so DFlow records an event in almost every period it has packets in, its p climbs far past the "
                "knee and its rate falls"
                if nr["below_target"].mean() < 0.5
                else ""
            )
            + f"; DFlow's rate is {nr['dflow_rate_bps'].mean() / 1e3:.1f} kb/s on average against NewReno's "
            f"{nr['rival_rate_bps'].mean() / 1e3:.0f} kb/s. "
            + _comparison(vs, ("newreno_share",))
            + (
                f" In {len(bad)} of {len(nr)} seeds NewReno itself falls into a timeout cycle (utilisation "
                f"{bad['utilisation'].mean():.2f}, {bad['drops_window'].mean():.0f} drops and "
                f"{bad['rival_timeouts'].mean():.0f} timeouts per run) instead of its usual sawtooth (see Limitations)."
                if len(bad)
                else ""
            )
        )
    return texts


def _knee_text(flows: pd.DataFrame) -> str:
    """Where the measured flows sit on the equation curve, and why that explains DFlow's fairness and starvation."""
    knee, unstable = eq.knee_loss_event_rate(), eq.unstable_loss_event_rate()
    parts = [
        f"Flows that share congestion events converge to equal rates only while the equation's elasticity "
        f"−d ln X / d ln p is below 1, which with t_RTO = 4R holds for **p < {unstable:.3f}**, a little below "
        f"the knee. DFlow's delay events are shared: every flow with packets in the queue sees the same "
        f"{CURRENT_PERIOD_MS:g} ms periods above the threshold, so a flow's p is (roughly) the common event frequency divided by its own "
        "packet rate. A flow that falls behind therefore gets a higher p; below that p its equation rate falls "
        "less than in proportion, it is allowed more than it sends and climbs back; above it, its equation "
        "rate falls faster than its rate and it keeps falling until TFRC's floor."
    ]
    f = (
        flows[(flows["variant"] == PRIMARY) & flows["kind"].isin(["tfrc", "dflow"])]
        if len(flows)
        else flows
    )
    if not len(f):
        return parts[0]
    parts.append(
        "The points are the measured flows (primary variant, every seed): x is the receiver's p at the end "
        "of the run, y the flow's mean rate over the window."
    )
    tfrc, dflow = f[f["case"] == "tfrc"], f[f["case"] == "dflow"]
    if len(tfrc):
        p = tfrc["loss_event_rate"].median()
        parts.append(
            f"TFRC flows sit at p ≈ {p:.4f} (median; elasticity {float(eq.equation_elasticity(p)):.2f}), on the "
            "square-root branch: their p counts real losses only."
        )
    if len(dflow):
        n = CASES["dflow"].dflows
        fair = BOTTLENECK_RATE_BPS / n
        ok, behind = (
            dflow[dflow["goodput_bps"] >= 0.8 * fair],
            dflow[dflow["goodput_bps"] < 0.5 * fair],
        )
        if len(ok):
            p = ok["loss_event_rate"].median()
            parts.append(
                f"DFlow flows near their fair share run at p ≈ {p:.3f} (median; elasticity "
                f"{float(eq.equation_elasticity(p)):.2f}): mostly delay events, a few per second, on the "
                f"shoulder of the curve, {knee / p:.0f}× below the knee."
            )
        if len(behind):
            pts = ", ".join(
                f"{r['goodput_bps'] / 1e3:.0f} kb/s at p = {r['loss_event_rate']:.3f}"
                for _, r in behind.sort_values("goodput_bps").iterrows()
            )
            parts.append(
                f"The DFlow flows of the {n}-DFlow runs that ended below half the fair share ({pts}) sit "
                f"near or beyond p = {unstable:.3f}, where the shared events no longer pull them back."
            )
    rivals = f[f["case"].isin(["ledbat", "vegas", "newreno"]) & (f["kind"] == "dflow")]
    if len(rivals):
        med = rivals.groupby("case")["loss_event_rate"].median()
        parts.append(
            "The single DFlow against a TCP flow ends at p ≈ "
            + ", ".join(
                f"{med[c]:.3f} against {CASES[c].rival_label}"
                for c in ("vegas", "ledbat", "newreno")
                if c in med.index
            )
            + " (medians): near the top of the curve where it holds its own, far down the steep branch where "
            f"the rival keeps the queue above {TARGET_MS:g} ms. This is what makes delay events so effective alone (a "
            "modest p already yields the fair share) and so fragile against a flow that keeps the queue "
            "above the threshold (p grows without bound and the rate collapses)."
        )
    return " ".join(parts)


def _sweep_table(runs: pd.DataFrame) -> str:
    cols = {c: sweep_means(runs, c) for c in ("dflow", "ledbat", "vegas", "newreno")}
    bps = sorted(set().union(*(set(v.index) for v in cols.values() if len(v))))
    rows = []
    for bp in bps:
        row: list[Any] = [f"{bp:g}"]
        d = cols["dflow"]
        row.append(
            f"{_f(d.loc[bp, 'delay'])} ms, Jain {_f(d.loc[bp, 'jain'], '{:.3f}')} (worst "
            f"{_f(d.loc[bp, 'jain_min'], '{:.3f}')})"
            if len(d) and bp in d.index
            else "–"
        )
        for c in ("ledbat", "vegas"):
            d = cols[c]
            row.append(
                f"{_f(d.loc[bp, 'ratio'], '{:.2f}')} ({_f(d.loc[bp, 'lo'], '{:.2f}')}–"
                f"{_f(d.loc[bp, 'hi'], '{:.2f}')}), {_f(d.loc[bp, 'delay'])} ms"
                if len(d) and bp in d.index
                else "–"
            )
        d = cols["newreno"]
        row.append(f"{_kbps(d.loc[bp, 'dflow'])} kb/s" if len(d) and bp in d.index else "–")
        rows.append(row)
    return _table(
        [
            "base period (RTTs)",
            f"{CASES['dflow'].short}: delay, Jain",
            "vs LEDBAT: DFlow/LEDBAT (range), delay",
            "vs Vegas: DFlow/Vegas (range), delay",
            "vs NewReno: DFlow",
        ],
        rows,
    )


def _base_period_text(runs: pd.DataFrame) -> str:
    parts = [
        "The base delay is a minimum over the last base period, so a queue that stands longer than that period "
        "becomes part of the base: DFlow stops counting it as queueing. DFlow alone drains its own queue every "
        "few seconds and never meets this; LEDBAT and Vegas hold a standing queue, so against them the base "
        "period decides who yields."
    ]
    led, veg = sweep_means(runs, "ledbat"), sweep_means(runs, "vegas")
    third, same = REFERENCES["ledbat_share"], REFERENCES["vegas_share"]
    if len(led) > 1:
        lo_bp, hi_bp = led.index.min(), led.index.max()
        parts.append(
            f"Against LEDBAT the DFlow/LEDBAT ratio goes from {led.loc[lo_bp, 'ratio']:.2f} at {lo_bp:g} RTTs "
            f"to {led.loc[hi_bp, 'ratio']:.3f} at {hi_bp:g} RTTs; the study's share ({third.words}, "
            f"{third.value:.2f}) lies {where_ratio(led, third.value)}."
        )
    if len(veg) > 1:
        bp, r = closest(veg, same.value)
        alpha, beta = CASES["vegas"].rival_params["alpha"], CASES["vegas"].rival_params["beta"]
        n_more = int((veg["ratio"] > 1).sum())
        parts.append(
            f"Against Vegas DFlow gets more than Vegas at {n_more} of {len(veg)} base periods (closest to the "
            f'study\'s "{same.words}": {r:.2f} at {bp:g} RTTs)'
            + (
                f", where Vegas's own rule gives it only {alpha:g}–{beta:g} packets per queueing delay whatever "
                "DFlow's base does"
                if n_more
                else ""
            )
            + f"; at {veg.index.min():g} RTTs DFlow gets {veg['ratio'].iloc[0]:.1f}× Vegas's rate."
        )
        if len(led) > 1:
            near = led.index[(led["ratio"] >= third.value / 2) & (led["ratio"] <= third.value * 2)]
            if len(near) and all(bp in veg.index for bp in near):
                where = ", ".join(f"{bp:g}" for bp in near)
                vegas = ", ".join(f"{veg.loc[bp, 'ratio']:.2f}" for bp in near)
                both = any(
                    same.value / 1.5 <= veg.loc[bp, "ratio"] <= same.value * 1.5 for bp in near
                )
                parts.append(
                    f"Where LEDBAT's split is within a factor 2 of the study's ({where} RTTs), DFlow/Vegas is "
                    f"{vegas}: "
                    + (
                        "a base period there comes close to both references."
                        if both
                        else "no single base period reproduces both references."
                    )
                )
    d = sweep_means(runs, "dflow")
    if len(d) > 1:
        parts.append(
            f"Alone, {CASES['dflow'].dflows} DFlows keep the queueing delay at {d['delay'].min():.1f}–"
            f"{d['delay'].max():.1f} ms over all base periods; Jain's index is {d['jain'].iloc[0]:.3f} "
            f"(worst seed {d['jain_min'].iloc[0]:.3f}) at {d.index[0]:g} RTTs against "
            f"{d['jain'].iloc[-1]:.3f} (worst {d['jain_min'].iloc[-1]:.3f}) at {d.index[-1]:g}"
            + (
                ": with the long base a flow that fell behind stays behind (see The knee), with the short one "
                "the drifting base lets it climb back."
                if d["jain_min"].iloc[-1] < d["jain_min"].iloc[0]
                else "."
            )
        )
    parts.append(
        "Run length matters too: a finite base period absorbs a rival's standing queue once that queue has "
        "stood longer than the period, and an empty queue resets it; the late-against-early comparison measures "
        "it in these runs."
    )
    return " ".join(parts)


def _late_vs_early(
    runs: pd.DataFrame, series: pd.DataFrame, case: str, variant: str
) -> tuple[str, bool]:
    """How DFlow's own estimate and rate change between the first half and the last quarter of the window.

    Also tells whether the base drifted: DFlow's own estimate at least halved while the real queue stayed.
    """
    d = ok_runs(runs, case, variant)
    s = series[(series["case"] == case) & (series["variant"] == variant)] if len(series) else series
    if not len(d) or not len(s):
        return "", False
    t0, t1 = float(d["measure_from_s"].iloc[0]), float(d["duration_s"].iloc[0])
    mid, late = t0 + (t1 - t0) / 2, t1 - (t1 - t0) / 4
    dfl = s[s["group"] == "dflow"]
    early_w, late_w = dfl[(dfl["time_s"] > t0) & (dfl["time_s"] <= mid)], dfl[dfl["time_s"] > late]
    e = early_w.groupby("seed").agg(
        rate=("rate_bps", "mean"), own=("flow_queueing_delay_ms", "mean")
    )
    lt = late_w.groupby("seed").agg(
        rate=("rate_bps", "mean"), own=("flow_queueing_delay_ms", "mean")
    )
    riv = s[(s["group"] != "dflow") & (s["time_s"] > late)].groupby("seed")["rate_bps"].mean()
    ahead = int((lt["rate"] > riv.reindex(lt.index)).sum())
    drifted = bool(lt["own"].mean() < 0.5 * e["own"].mean())
    return (
        f"between the first half of the window ({t0:g}–{mid:g} s) and its last quarter ({late:g}–{t1:g} s) "
        f"DFlow's own queueing estimate goes from {e['own'].mean():.0f} to {lt['own'].mean():.0f} ms and its rate "
        f"from {e['rate'].mean() / 1e3:.0f} to {lt['rate'].mean() / 1e3:.0f} kb/s (means over seeds); in the last "
        f"quarter DFlow is ahead of {CASES[case].rival_label} in {ahead} of {len(lt)} seeds."
    ), drifted


def _base10_text(runs: pd.DataFrame) -> str:
    parts = []
    vs = []
    for key in ("ledbat", "vegas"):
        a, b = ok_runs(runs, key, PRIMARY), ok_runs(runs, key, "base10")
        if len(a) and len(b):
            vs.append(
                f"against {CASES[key].rival_label} DFlow goes from {a['dflow_rate_bps'].mean() / 1e3:.0f} to "
                f"{b['dflow_rate_bps'].mean() / 1e3:.0f} kb/s, {CASES[key].rival_label} from "
                f"{a['rival_rate_bps'].mean() / 1e3:.0f} to {b['rival_rate_bps'].mean() / 1e3:.0f} kb/s and the "
                f"mean delay from {a['delay_mean_ms'].mean():.0f} to {b['delay_mean_ms'].mean():.0f} ms"
            )
    if vs:
        parts.append(
            f"With 10 RTTs ({10 * RTT_S:.1f}–{10 * (RTT_S + FULL_QUEUE_DELAY_S):.1f} s, from an empty to "
            "a full queue) the base follows any standing queue within seconds (the dashed line, "
            "DFlow's own estimate, stays low while the real queue grows): DFlow pushes on top of the rival's "
            "queue, the rival, which measures the real queue, backs off, and the queue grows until the "
            "buffer overflows and the losses reset everything. Compared with the primary runs, "
            + "; ".join(vs)
            + "."
        )
        judged = verdicts(runs, "base10")
        sentences = [judged[k].sentence() for k in ("ledbat_share", "vegas_share") if k in judged]
        if sentences:
            parts.append("Judged with the draft's default base period: " + " ".join(sentences))
    a, b = ok_runs(runs, "newreno", PRIMARY), ok_runs(runs, "newreno", "base10")
    if len(a) and len(b):
        parts.append(
            f"Against NewReno DFlow goes from {a['dflow_rate_bps'].mean() / 1e3:.1f} to "
            f"{b['dflow_rate_bps'].mean() / 1e3:.1f} kb/s: NewReno's sawtooth empties the queue now and then, "
            "which resets the base whatever its period."
        )
    return " ".join(parts)


def _gaps(runs: pd.DataFrame) -> str:
    nr = ok_runs(runs, "newreno")
    bad, good = nr[nr["utilisation"] < 0.9], nr[nr["utilisation"] >= 0.9]
    numbers = ""
    if len(bad) and len(good):
        numbers = (
            f" Here: {len(bad)} of {len(nr)} seeds, utilisation {bad['utilisation'].mean():.2f}, "
            f"{bad['drops_window'].mean():.0f} drops and {bad['rival_timeouts'].mean():.0f} timeouts per run, "
            f"against {good['utilisation'].mean():.2f}, {good['drops_window'].mean():.0f} drops and "
            f"{good['rival_timeouts'].mean():.0f} timeouts in the other seeds."
        )
    nr_all = ok_runs(runs, "newreno")
    regime = (
        f"NewReno now runs its one-loss sawtooth (here: {nr_all['rival_timeouts'].mean():.1f} timeouts per run, "
        f"utilisation {nr_all['utilisation'].mean():.3f}, means over seeds)."
        if len(nr_all)
        else ""
    )
    return f"""* **Per-flow drop counts at the bottleneck.** latlab's link tables count drops per link, not per flow.
  The report gives the bottleneck's drops (in the window and over the run), TFRC/DFlow loss events and
  sent − received per flow (whole run; it also counts the few packets still in flight at the end), and TCP
  retransmissions in the window (they include go-back-N resends after a timeout, so they overstate losses).
  A per-flow drop counter on links would give the study's per-flow loss counts directly.
* **TFRC counters are not sampled.** loss_events, delay_events and loss_event_rate exist only in the flows table
  (whole run; p is the receiver's value at the end), not in flow_samples: the knee figure plots each flow's final
  p against its mean rate over the window, and event counts include the start-up. flow_samples'
  queueing_delay_ns keeps DFlow's last estimate, which goes stale while a starved flow sends nothing.
* **NewReno on this path, before and after a sender fix.** Earlier latlab senders followed RFC 6298 and
  RFC 5681 to the letter and NewReno was bistable here: the RTO timer, last restarted before the hole, fired while
  the fast retransmission crossed the full {FULL_QUEUE_DELAY_S * 1e3:.0f} ms queue (a timeout in about half of the loss cycles), and a timeout
  during recovery set ssthresh = FlightSize/2 over the window that had overflowed, so the next slow start overflowed
  again. The sender now does what ns-2 and Linux do: it restarts the timer as the fast retransmission leaves, and
  keeps the recovery's ssthresh when the timer fires during recovery (Linux's tcp_enter_loss). {regime}{numbers}
* **ns-2 details the draft does not give** (the study's packet sizes, TCP initial window, the LEDBAT and Vegas
  implementations' filters, start times, how many competitors, how long the runs were) are the assumptions
  stated under Set-up."""


def render(
    data: StudyData,
    settings: Settings,
    quick: bool,
    jobs: int,
    elapsed_s: float,
    figures: dict[str, str],
) -> str:
    runs, flows = data.runs, data.flows
    full_ms = FULL_QUEUE_DELAY_S * 1e3
    out: list[str] = []
    add = out.append
    vs = verdicts(runs)
    add("# DFlow: low-latency congestion control for media\n")
    add(
        f"Reproduction of the DFlow study ({PAPER.citation()}) in latlab's packet simulator; the algorithms are "
        "described in latlab's notes [TFRC and DFlow](../models/tfrc-dflow.md), [TCP](../models/tcp.md) and "
        "[congestion control](../models/congestion-control.md). "
        + (
            "**Quick run** (`--quick`): shorter runs and fewer seeds than the full reproduction, so its numbers "
            "are not the full run's.\n"
            if quick
            else "Full run (`latlab reproduce dflow`).\n"
        )
    )
    add(
        f"DFlow is TFRC (RFC 5348) whose receiver also counts *delay congestion events*: a {CURRENT_PERIOD_MS:g} ms "
        "period whose minimum one-way delay exceeds the base (minimum) one-way delay by more than cd_thresh = "
        f"{TARGET_MS:g} ms enters the loss-interval history like a loss, so the equation rate falls before the buffer "
        "overflows.\n"
    )

    # -- set-up
    add("## Set-up\n")
    n_runs = int((runs["status"] == "ok").sum()) if len(runs) else 0
    sim_s = float(runs["wall_s"].sum()) if "wall_s" in runs else float("nan")
    n_dflow_cases = sum(1 for c in CASES.values() if c.dflows)
    vegas, ledbat = CASES["vegas"].rival_params, CASES["ledbat"].rival_params
    add(
        _table(
            ["", "value"],
            [
                [
                    "path",
                    f"latlab dumbbell: access links {ACCESS_RATE_BPS / 1e6:g} Mb/s, {ACCESS_DELAY_MS:g} ms; bottleneck "
                    f"{BOTTLENECK_RATE_BPS / 1e6:g} Mb/s, {CORE_DELAY_MS:g} ms; propagation RTT {RTT_S * 1e3:.0f} ms",
                ],
                [
                    "bottleneck queue",
                    f"DropTail, {QUEUE_PACKETS} packets; full-queue delay {QUEUE_PACKETS} × {PACKET_BYTES} B "
                    f"× 8 / {BOTTLENECK_RATE_BPS / 1e6:g} Mb/s = **{full_ms:.1f} ms**",
                ],
                [
                    "packets",
                    f"TFRC/DFlow: s = {SEGMENT_BYTES} B payload + {TFRC_HEADER_BYTES} B headers = {PACKET_BYTES} B; "
                    f"TCP (ns2 preset): MSS {TCP_MSS_BYTES} B + {TCP_HEADER_BYTES} B = {PACKET_BYTES} B, one ACK per "
                    "segment, timestamps, NewReno recovery, IW 10",
                ],
                [
                    "DFlow",
                    f"cd_thresh {TARGET_MS:g} ms, current period {CURRENT_PERIOD_MS:g} ms, no gradient test, no "
                    f"oscillation reduction; base period {VARIANTS[PRIMARY]:g} RTTs (primary runs); swept over "
                    f"{', '.join(f'{VARIANTS[v]:g}' for v in settings.variants)} RTTs",
                ],
                [
                    "rivals",
                    f"one DFlow against one TCP flow; LEDBAT target {ledbat['target_ms']:g} ms (RFC 6817 defaults "
                    f"otherwise); Vegas α = {vegas['alpha']:g}, β = {vegas['beta']:g}, γ = {vegas['gamma']:g} "
                    "(packets)",
                ],
                [
                    "starts",
                    f"each flow uniformly in [0, {START_SPREAD_S:g}] s, drawn from the seed",
                ],
                [
                    "run length",
                    f"{settings.duration_s:g} s, measured over [{settings.measure_from_s:g}, "
                    f"{settings.duration_s:g}] s (the first {settings.measure_from_s:g} s are warm-up)",
                ],
                [
                    "seeds",
                    ", ".join(str(s) for s in settings.seeds)
                    + f" (figures: seed {settings.figure_seed}); the same "
                    "seed gives the same numbers",
                ],
                [
                    "runs",
                    f"{n_runs}: {len(CASES)} cases × {len(settings.seeds)} seeds, and the {n_dflow_cases} DFlow cases "
                    f"again for each other base period; the simulations themselves took {sim_s:.0f} s in all (sum over "
                    f"runs); running and reducing them took {elapsed_s:.0f} s here on {jobs} worker(s) (runs found "
                    "finished in runs/ are not redone)",
                ],
            ],
        )
    )
    add(
        f"\n**Queueing delay** is the bottleneck's sojourn time (enqueue to start of transmission) of the packets "
        f"that left it in each {SAMPLE_INTERVAL_MS:g} ms interval; means and percentiles weight each interval by the "
        f"bytes that left (the delay packets saw). A full buffer shows {full_ms:.1f} ms. **Rates** are goodput over "
        "the window, per flow; the figures show the delivered rate averaged over 1 s. **Losses**: drops at the "
        "bottleneck (the only place packets are lost), TFRC/DFlow loss events and sent − received, TCP "
        "retransmissions and timeouts. **Jain's index** over the per-flow rates, among DFlows and over all flows.\n"
    )
    add("### Choices, and why\n")
    led = sweep_means(runs, "ledbat")
    share = REFERENCES["ledbat_share"]
    third = ""
    if len(led) > 1:
        third = (
            f" Against LEDBAT the split runs from {led['ratio'].iloc[0]:.1f}× LEDBAT's rate at "
            f"{led.index[0]:g} RTTs to {led['ratio'].iloc[-1]:.3f} at {led.index[-1]:g} RTTs; "
            f"the study's share ({share.words}) lies {where_ratio(led, share.value)}."
        )
    judged10 = verdicts(runs, "base10")
    with10 = ""
    if "ledbat_share" in judged10 and "vegas_share" in judged10:
        a, b = judged10["ledbat_share"], judged10["vegas_share"]
        with10 = (
            f" (with which, in these runs, the LEDBAT share {a.outcome} and the Vegas share {b.outcome}: see "
            "10 RTTs below)"
        )
    drift_s = 1000 * LOADED_RTT_S
    add(
        f"* **DFlow's base period: {VARIANTS[PRIMARY]:,.0f} RTTs for the primary runs** "
        f"({VARIANTS[PRIMARY] * RTT_S / 60:.0f} minutes or more here), i.e. a base that stays the true propagation "
        f"delay for the whole run, and a sweep over {min(VARIANTS.values()):g}–{max(VARIANTS.values()):,.0f} RTTs "
        "beside it. The base delay is the minimum one-way delay over the base period, so a queue that stands longer "
        "than the period becomes part of the base and DFlow stops seeing it. DFlow alone does not meet this (it "
        "drains its own queue every few seconds), but LEDBAT and Vegas hold a standing queue, so against them the "
        "base period, not the algorithm, decides the outcome."
        + third
        + " The draft re-evaluates the base "
        f'"regularly" over "typically 10·RTT"{with10}, and the project\'s scenarios use 1000 RTTs '
        f"({drift_s:.0f} s at the RTT a {TARGET_MS:g} ms standing queue gives, so in a {FULL.duration_s:g} s run the "
        "drift arrives inside the run and the result depends on where the run ends); the primary runs therefore "
        "show the algorithm with a base that does not drift, and the sweep shows what each base period does.\n"
        '* **One competitor per "vs" run** (one DFlow, one TCP flow): the draft names the rival, not the count.\n'
        f'* **Equal packet sizes** ({PACKET_BYTES} B on the wire for TFRC, DFlow and TCP), so that "{QUEUE_PACKETS} '
        "packets\" is one delay whoever fills the queue and Vegas's α, β (packets) mean the same bytes as DFlow's "
        "packets.\n"
        f"* **{len(settings.seeds)} seeds** (start orders): delay-based flows depend on who starts first (which "
        "queue a flow sees when it measures its base delay), so single runs mislead. Tables give every seed; "
        "summaries give the mean and the range.\n"
    )

    # -- references
    add("## The study's references beside latlab\n")
    add(
        f"Verdicts over the primary runs ({sum(v.agrees for v in vs.values())} of {len(vs)} agree); the rule column "
        "says how each was decided.\n"
    )
    add(
        _table(
            [
                "reference",
                "study",
                f"latlab: base period {VARIANTS[PRIMARY]:g} RTTs, mean (range) over seeds",
                "rule",
                "verdict",
                "why",
            ],
            [
                [
                    v.reference.quantity,
                    v.reference.text(),
                    v.measured,
                    v.rule,
                    v.label(),
                    v.why if not v.agrees else "",
                ]
                for v in vs.values()
            ],
        )
    )
    add("")
    if "summary" in figures:
        add(f"![summary]({figures['summary']})\n")

    # -- the runs
    texts = _case_texts(runs, flows, vs)
    for key, case in CASES.items():
        add(f"## {case.title}\n")
        d = ok_runs(runs, key)
        if not len(d):
            add("*No results.*\n")
            continue
        if key in figures:
            add(f"![{case.title}]({figures[key]})\n")
        add(texts.get(key, "") + "\n")
        add(
            f"Per seed ({settings.duration_s:g} s runs, window [{settings.measure_from_s:g}, "
            f"{settings.duration_s:g}] s):\n"
        )
        add(_seed_table(d, case) + "\n")
        f = (
            flows[
                (flows["case"] == key)
                & (flows["variant"] == PRIMARY)
                & (flows["seed"] == settings.figure_seed)
            ]
            if len(flows)
            else flows
        )
        if len(f):
            add(f"Per flow, seed {settings.figure_seed} (the figure):\n")
            add(_flow_table(f) + "\n")

    # -- the knee
    add("## The knee: TCP equation rate against the loss event rate\n")
    if "knee" in figures:
        add(f"![knee]({figures['knee']})\n")
    knee = eq.knee_loss_event_rate()
    n = CASES["dflow"].dflows
    p_cap, p_half, p_share = (
        eq.loss_event_rate_for(BOTTLENECK_RATE_BPS / k, RTT_S, SEGMENT_BYTES) for k in (1, 2, n)
    )
    add(
        f"RFC 5348's equation with b = 1 and t_RTO = 4R, s = {SEGMENT_BYTES} B. With t_RTO = 4R the timeout term "
        f"equals the first term where p + 32p³ = 1/9, i.e. at **p = {knee:.4f}**, whatever R and s: below it the "
        f"rate falls as p^(−1/2) (ten times the loss event rate costs a factor {np.sqrt(10):.1f}), above it the "
        "timeout term takes over and the rate falls as p^(−3/2) and then p^(−7/2). Over this path "
        f"(R = {RTT_S * 1e3:.0f} ms) the equation gives the whole {BOTTLENECK_RATE_BPS / 1e6:g} Mb/s at "
        f"p = {p_cap:.4f}, half of it at p = {p_half:.4f} and 1/{n} ({n} flows' fair share) at p = {p_share:.4f}; its "
        f"floor is TFRC's one packet per 64 s ({MIN_RATE_BPS:.0f} bit/s).\n"
    )
    add(_knee_text(flows) + "\n")

    # -- the base period
    add("## DFlow's base period\n")
    if "base_period" in figures:
        add(f"![base period]({figures['base_period']})\n")
    add(f"Means over seeds ({len(settings.seeds)} per point), {settings.duration_s:g} s runs:\n")
    add(_sweep_table(runs) + "\n")
    add(_base_period_text(runs) + "\n")
    if "variant_base1000" in figures:
        add("### 1000 RTTs: the drift arrives inside the run\n")
        add(f"![base period 1000 RTTs]({figures['variant_base1000']})\n")
        text, drifted = _late_vs_early(runs, data.flow_series, "ledbat", "base1000")
        period = (
            f"{1000 * RTT_S:.0f} s at the propagation RTT and {1000 * LOADED_RTT_S:.0f} s at the RTT a "
            f"{TARGET_MS:g} ms standing queue gives"
        )
        if drifted:
            add(
                f"1000 RTTs is {period}, so in the LEDBAT runs DFlow's base loses the empty queue of the start during "
                f"the run and takes in LEDBAT's queue. Against LEDBAT: {text} This is why the project's usual 1000 "
                "RTTs is not used for the primary runs: its result depends on where the run ends.\n"
            )
        else:
            add(
                f"1000 RTTs is {period}: in these {settings.duration_s:g} s runs the base has not yet drifted, so "
                f"the runs look like the primary ones. Against LEDBAT: {text} A run longer than {1000 * LOADED_RTT_S:.0f} s "
                "would see the drift inside the run.\n"
            )
    if "variant_base10" in figures:
        add("### 10 RTTs: the draft's default\n")
        add(f"![base period 10 RTTs]({figures['variant_base10']})\n")
        add(_base10_text(runs) + "\n")

    # -- gaps
    add("## Limitations and simulator gaps\n")
    add(_gaps(runs) + "\n")
    add("## Reproduce\n")
    add(
        f"```sh\nlatlab reproduce dflow --quick -o out/reproduce/dflow-quick -j 1   # {QUICK.duration_s:g} s runs, "
        f"{len(QUICK.seeds)} seeds\nlatlab reproduce dflow -o out/reproduce/dflow -j 2                   # "
        f"{FULL.duration_s:g} s runs, {len(FULL.seeds)} seeds\n```\n"
    )
    add(
        "The output folder holds results.parquet (one row per run: parameters, run_id, delay, losses, rates, Jain), "
        f"flows.parquet (one row per flow and run), flow_series.parquet and bottleneck_series.parquet (every "
        f"{SAMPLE_INTERVAL_MS:g} ms sample), knee.parquet (the equation curves) and runs/ (the sweep: one results folder per distinct run; "
        "re-running skips finished runs). The copy under docs/dflow/ keeps only this report and its figures. "
        "Code: latlab.studies.dflow (cases, metrics, references, verdicts, report, figures), latlab.models.tcp_equation "
        "and latlab.models.fairness.\n"
    )
    return "\n".join(out)
