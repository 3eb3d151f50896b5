"""The DFlow study's references judged against latlab's runs (primary base period, over seeds).

Each rule turns the draft's words into a threshold (stated in the verdict's
``rule``); the thresholds are the same whatever the run, so a verdict says
"differs" as readily as "agrees".
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from latlab.studies._markdown import num as _f
from latlab.studies._verdict import Verdict
from latlab.studies.dflow.cases import CASES, FULL_QUEUE_DELAY_S, PRIMARY, TARGET_MS
from latlab.studies.dflow.metrics import (
    closest,
    ok_runs,
    rate_ratio,
    sweep_means,
    value_range,
    where_ratio,
)
from latlab.studies.dflow.references import REFERENCES


def _ledbat_why(runs: pd.DataFrame, variant: str) -> str:
    text = f"equal {TARGET_MS:g} ms targets make it a knife edge that base-delay errors of a few ms decide"
    sweep = sweep_means(runs, "ledbat")
    if len(sweep) > 1 and variant == PRIMARY:
        text += (
            f"; the study's share ({REFERENCES['ledbat_share'].words}) lies "
            f"{where_ratio(sweep, REFERENCES['ledbat_share'].value)} (see DFlow's base period)"
        )
    return text


def verdicts(runs: pd.DataFrame, variant: str = PRIMARY) -> dict[str, Verdict]:
    """The study's references, each judged on the finished runs of ``variant`` (by key of REFERENCES)."""
    ref = REFERENCES
    out: dict[str, Verdict] = {}
    dflow, tfrc = ok_runs(runs, "dflow", variant), ok_runs(runs, "tfrc", PRIMARY)
    full_ms = FULL_QUEUE_DELAY_S * 1e3
    target = ref["dflow_delay"].value
    if len(dflow):
        mean, below = dflow["delay_mean_ms"].mean(), dflow["below_target"].mean()
        out["dflow_delay"] = Verdict(
            ref["dflow_delay"],
            f"mean {value_range(dflow['delay_mean_ms'])} ms; {100 * below:.0f} % of packets ≤ {target:g} ms; "
            f"max {dflow['delay_max_ms'].max():.0f} ms",
            "agrees" if mean < target and below >= 0.5 else "differs",
            f"needs the mean below {target:g} ms and at least half the packets are",
        )
        drops = dflow["drops_window"].mean()
        tdrops = tfrc["drops_window"].mean() if len(tfrc) else np.nan
        bound = 0.02 * max(np.nan_to_num(tdrops), 50.0)
        out["dflow_losses"] = Verdict(
            ref["dflow_losses"],
            f"{value_range(dflow['drops_window'], '{:.0f}')} drops per window "
            f"({CASES['tfrc'].short}: {_f(tdrops, '{:.0f}')})",
            "agrees" if drops <= bound else "differs",
            f"needs ≤ {bound:.0f} drops per window (2 % of TFRC's, at least 1)",
        )
        jain = dflow["jain_dflow"]
        low = int((jain < 0.95).sum())
        out["dflow_fairness"] = Verdict(
            ref["dflow_fairness"],
            f"Jain {value_range(jain, '{:.3f}')}"
            + (f"; below 0.95 in {low} of {len(jain)} seeds" if low else ""),
            "agrees" if not low else "partly" if low < len(jain) else "differs",
            "needs Jain's index ≥ 0.95 in every seed; partly: in some",
            "a DFlow that falls behind can stay behind (shared delay events, see The knee)",
        )
    if len(tfrc):
        mean = tfrc["delay_mean_ms"].mean()
        out["tfrc_delay"] = Verdict(
            ref["tfrc_delay"],
            f"mean {value_range(tfrc['delay_mean_ms'], '{:.0f}')} ms, p95 {tfrc['delay_p95_ms'].mean():.0f} ms, "
            f"max {tfrc['delay_max_ms'].max():.1f} ms (full queue {full_ms:.1f} ms)",
            "agrees" if mean >= 0.75 * full_ms else "differs",
            f"needs the mean ≥ 75 % of the full-queue delay ({0.75 * full_ms:.0f} ms)",
        )
        if len(dflow):
            factor = tfrc["drops_window"].mean() / max(dflow["drops_window"].mean(), 1.0)
            out["tfrc_losses"] = Verdict(
                ref["tfrc_losses"],
                f"{value_range(tfrc['drops_window'], '{:.0f}')} drops per window, "
                f"{tfrc['tfrc_loss_events'].mean():.0f} loss events per run",
                "agrees" if factor > 10 else "differs",
                "needs more than 10× DFlow's drops per window (DFlow's counted as at least 1)",
            )
            gain = tfrc["utilisation"].mean() / dflow["utilisation"].mean() - 1
            out["tfrc_throughput"] = Verdict(
                ref["tfrc_throughput"],
                f"utilisation {tfrc['utilisation'].mean():.3f} vs {dflow['utilisation'].mean():.3f} "
                f"({100 * gain:+.0f} %)",
                "agrees" if 0 < gain <= 0.25 else "differs",
                "needs TFRC's utilisation higher by at most 25 %",
            )
    led = ok_runs(runs, "ledbat", variant)
    if len(led):
        r, third = rate_ratio(led), ref["ledbat_share"].value
        m = r.mean()
        lo, hi = 0.6 * third, 1.5 * third
        word = "agrees" if lo <= m <= hi else "partly" if r.between(lo, hi).any() else "differs"
        out["ledbat_share"] = Verdict(
            ref["ledbat_share"],
            f"DFlow/LEDBAT {value_range(r, '{:.2f}')}"
            + "".join(
                f"; {who} first: {value_range(r[led['first_to_start'] == who], '{:.2f}')}"
                for who in ("dflow", "ledbat")
                if (led["first_to_start"] == who).any()
            ),
            word,
            f"needs the mean ratio within {lo:.2f}–{hi:.2f}; partly: one seed's within it",
            _ledbat_why(runs, variant),
        )
    veg = ok_runs(runs, "vegas", variant)
    if len(veg):
        r, one = rate_ratio(veg), ref["vegas_share"].value
        m = r.mean()
        word = (
            "agrees"
            if one / 1.5 <= m <= one * 1.5
            else "partly"
            if one / 2 <= m <= one * 2.5
            else "differs"
        )
        sweep = sweep_means(runs, "vegas")
        extra = ""
        if len(sweep) > 1 and variant == PRIMARY:
            bp, rr = closest(sweep, one)
            extra = f"; no base period brings it to {one:g} (closest {rr:.2f} at {bp:g} RTTs)"
        alpha, beta = CASES["vegas"].rival_params["alpha"], CASES["vegas"].rival_params["beta"]
        out["vegas_share"] = Verdict(
            ref["vegas_share"],
            f"DFlow/Vegas {value_range(r, '{:.2f}')}",
            word,
            f"needs the mean ratio within {one / 1.5:.2f}–{one * 1.5:.2f}; partly within "
            f"{one / 2:.2f}–{one * 2.5:.2f}",
            f"Vegas keeps only {alpha:g}–{beta:g} packets queued, so its rate is {alpha:g}–{beta:g} packets over "
            f"the queueing delay DFlow sustains{extra}",
        )
    nr = ok_runs(runs, "newreno", variant)
    if len(nr):
        out["newreno_share"] = Verdict(
            ref["newreno_share"],
            f"DFlow {value_range(nr['dflow_rate_bps'], '{:.1f}', 1e-3)} kb/s vs NewReno "
            f"{value_range(nr['rival_rate_bps'], '{:.0f}', 1e-3)} kb/s",
            "agrees"
            if rate_ratio(nr).max() < 0.05
            else "partly"
            if rate_ratio(nr).mean() < 0.05
            else "differs",
            "needs DFlow/NewReno < 0.05 in every seed; partly: on average",
        )
    return out
