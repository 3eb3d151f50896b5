"""The study's Markdown report: set-up, one results table per path, the findings, the traces behind the surprises.

Fixed text here describes the set-up only; every sentence that states a
result comes from :mod:`.findings`, computed from the numbers.
"""

from __future__ import annotations

import pandas as pd

from latlab.studies._markdown import num, table
from latlab.studies.countermeasures import figures, findings
from latlab.studies.countermeasures.cases import BASELINE, ROLES
from latlab.studies.countermeasures.metrics import StudyData

TITLE = "# Who fixes bufferbloat? Countermeasures on LTE, Wi-Fi and a small-buffer dumbbell"


def _range(r: pd.Series, name: str, unit: str, scale: float, fmt: str) -> str:
    mean, lo, hi = (r.get(f"{name}_{s}{unit}") for s in ("mean", "min", "max"))
    if not findings._finite(mean):
        return "–"
    return f"{num(mean * scale, fmt)} [{num(lo * scale, fmt)}–{num(hi * scale, fmt)}]"


def path_table(t: pd.DataFrame) -> str:
    rows = [
        [
            f"**{r['scheme']}**" if r["scheme"] == BASELINE else r["scheme"],
            r["role"],
            r["queue"],
            r["ecn"],
            _range(r, "goodput", "_bps", 1e-6, "{:.2f}"),
            num(r["rtt_p50_ms"], "{:.0f}"),
            num(r["rtt_p95_ms"], "{:.0f}"),
            num(r["rtt_p99_ms"], "{:.0f}"),
            _range(r, "share", "", 1.0, "{:.2f}"),
            num(r["drops_mean_pkts"], "{:.0f}"),
            num(100 * r["util"], "{:.0f}"),
            num(100 * r["queue_empty"], "{:.0f}"),
            num(r["queue_kb"], "{:.0f}"),
            num(r["cwnd_kb"], "{:.0f}"),
            num(r.get("bottleneck_marks"), "{:.0f}"),
            num(r.get("recoveries"), "{:.0f}"),
        ]
        for _, r in t.iterrows()
    ]
    return table(
        [
            "scheme",
            "role",
            "queue",
            "ECN",
            "goodput Mbit/s, mean [min–max]",
            "RTT p50 ms",
            "p95 ms",
            "p99 ms",
            "share vs CUBIC [min–max]",
            "drops",
            "util. %",
            "queue empty %",
            "queue KB",
            "cwnd KB",
            "ECN marks",
            "loss recoveries",
        ],
        rows,
    )


def _header(data: StudyData, quick: bool, schemes: str | None, wall_s: float) -> str:
    runs = 2 * len(data.seeds)
    kind = "**Quick run**" if quick else "**Full run**"
    cmd = "latlab reproduce countermeasures" + (" --quick" if quick else "")
    if schemes:
        cmd += f" --schemes '{schemes}'"
    out = (
        f"{kind} (`{cmd}`): "
        + "; ".join(
            f"{p}: {len(i['seeds'])} seeds, {i['duration_s']:g} s per run measured over "
            f"[{i['measure_from_s']:g}, {i['duration_s']:g}] s, {i['flows']} flow(s) alone"
            for p, i in data.paths.items()
        )
        + f". {runs} runs (each scheme alone and against CUBIC, at every seed); wall time "
        f"{wall_s / 60:.1f} min (a re-run reuses finished runs, so this is the time of the run "
        "that wrote the report)."
    )
    if quick:
        out += (
            " A quick run has a quarter of the full run's duration and at most two seeds: its "
            "numbers are rougher than a full run's."
        )
    if schemes:
        out += (
            f" **Scheme filter** `{schemes}`: only the schemes it keeps ran; the others are "
            "missing from the tables below, not judged."
        )
    return out + "\n"


def _setup(data: StudyData) -> str:
    lines = ["## Set-up", ""]
    lines.append(
        "Each path is one `latlab compare` run ([guide](../guide/compare.md)): every scheme runs "
        "at every seed alone on the path, and one flow of it against one CUBIC flow (the path's "
        "TCP settings, fixed receive window, no ECN) through the same bottleneck, both starting "
        "at 0 s. Goodput is the sum over the scheme's flows alone, mean and range over seeds; the "
        "RTT percentiles pool every RTT sample of every seed; the share is the scheme's flow's "
        "goodput over both flows' in the run against CUBIC. A queue discipline named without a "
        "limit keeps the path's buffer size. The last six columns are read from the runs alone at "
        "the bottleneck link over the measurement window (means over seeds): its utilisation, the "
        "share of 100 ms samples with an empty queue, its mean queue, the scheme's mean "
        "congestion window, the bottleneck's CE marks (whole run), and the scheme's loss "
        "recoveries (fast recoveries and timeouts; a window cut in answer to ECN is not one) "
        "per run. Utilisation is the bits sent over the link's nominal rate: on the LTE "
        "user's trace-driven downlink the rate varies around it, so it can exceed 100 %."
    )
    lines.append("")
    for name, i in data.paths.items():
        lines.append(
            f"* **{i['title']}** (`{name}`, bottleneck `{i['bottleneck_link']}`): {i['about']}."
        )
    lines.append("")
    lines.append(
        "Schemes: "
        + "; ".join(f"{role}: {words}" for role, words in ROLES.items())
        + ". CoDel (target 5 ms, interval 100 ms), FQ-CoDel (RFC 8290 defaults) and PIE "
        "(RFC 8033 defaults, target 15 ms) as in [queues](../models/queues.md); RTAC with "
        "θ = 1.38 and the path's rate, DRWA with its defaults "
        "([receiver window](../models/receiver-window.md)); the edge pacer with d = 10 ms on the "
        "dumbbell's edge links ([edge pacer](../models/edge-pacer.md)); ECN (RFC 3168) at both "
        "ends and in the marking queue."
    )
    return "\n".join(lines) + "\n"


def _path_section(name: str, info: dict, t: pd.DataFrame) -> str:
    parts = [f"## {info['title']}", "", path_table(t), ""]
    parts.append(f"![{name}: throughput–delay plane]({figures.plane_name(name)})")
    parts.append("")
    parts.append(f"![{name}: RTT distributions]({figures.rtt_name(name)})")
    parts.append("")
    parts.append("* " + findings.pick_sentence(t, info["title"]))
    sens = findings.sensitivity_sentence(t)
    if sens:
        parts.append("* " + sens)
    parts.append("* " + findings.share_sentence(t))
    for extra in (
        findings.ecn_sentence(t),
        findings.baseline_share_sentence(t),
        findings.same_sentence(t),
    ):
        if extra:
            parts.append("* " + extra)
    for s in findings.surprises(t):
        parts.append("* " + s)
    return "\n".join(parts) + "\n"


def _summary(data: StudyData) -> str:
    rows = []
    for name, info in data.paths.items():
        t = data.results[data.results["path"] == name]
        base = findings.baseline_row(t)
        best = findings.pick(t)
        s = findings.shares(t)
        rows.append(
            [
                info["title"],
                "–"
                if base is None
                else f"{findings.mbps(base['goodput_mean_bps'])}, p95 {findings.ms(base['rtt_p95_ms'])}",
                "–"
                if best is None
                else f"{best['scheme']}: {findings.mbps(best['goodput_mean_bps'])}, p95 {findings.ms(best['rtt_p95_ms'])}",
                ", ".join(s["lose"]) or "none",
            ]
        )
    return (
        "## Summary\n\n"
        + table(
            [
                "path",
                f"baseline ({BASELINE})",
                f"lowest p95 within {findings.pct(findings.KEEP)} of its goodput",
                f"share below {findings.SHARE_LOW:g} against CUBIC",
            ],
            rows,
        )
        + "\n"
    )


DEPENDS = """## What the results depend on

* **The threshold on goodput**: the pick changes with it; each path lists the pick at 5, 10 and 20 %.
* **The buffer**: a queue discipline keeps the path's buffer size (1.5 MB per LTE user, 300 packets at the
  AP, 15 KB in the dumbbell's core), so delay-based and receiver schemes face the same buffer as CUBIC.
* **The rate's variation**: the LTE user's rate follows the shipped lte-variable trace; the Wi-Fi and dumbbell
  rates are fixed. AQM targets (CoDel 5 ms, PIE 15 ms) are fixed in time while the LTE queue's drain rate is not.
* **RTAC's operating point**: θ = 1.38 and a link rate per path (11 Mbit/s on LTE, 30 Mbit/s on Wi-Fi, 5 Mbit/s
  per flow on the dumbbell); other values move its goodput and delay.
* **The competition**: one flow of the scheme against one CUBIC flow, both starting at 0 s; over a large buffer
  a different start order can move the share.
* **Seeds**: the ranges in the tables are over seeds (channel draws, start times, random drops); a difference
  smaller than a range is not a ranking.
"""

NOT_RUN_REAL = """* **The real part** (`--real`, root): real Linux TCP (CUBIC, BBR, Reno, ECN on and off) over the emulated
  paths with latlab's queues, beside the simulated runs, was not run for this report.
"""
FILTERED = """* **A scheme filtered out** by `--schemes` is missing from the tables; the header says which filter ran.
"""


def render(
    data: StudyData,
    quick: bool,
    schemes: str | None,
    wall_s: float,
    real: tuple[str, str] | None = None,
) -> str:
    """The report; ``real`` is the real part's section and its summary line (None: not run)."""
    summary = _summary(data) + (f"\n{real[1]}\n" if real else "")
    parts = [TITLE, "", _header(data, quick, schemes, wall_s), summary, _setup(data)]
    for name, info in data.paths.items():
        parts.append(_path_section(name, info, data.results[data.results["path"] == name]))
    parts += [f"![shares against CUBIC]({figures.SHARE_PNG})\n"]
    if real:
        parts.append(real[0])
    parts += [DEPENDS, "## Not done\n\n" + ("" if real else NOT_RUN_REAL) + FILTERED]
    return "\n".join(parts)
