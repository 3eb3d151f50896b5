"""The pacing study's report: the verdict table, the notes on where latlab differs, one section per experiment.

Every sentence that compares with the study comes from a verdict
(:mod:`latlab.studies.pacing.verdicts`) and every number the report gives as
the study's comes from :mod:`latlab.studies.pacing.references`; the rest are
measured or derived from the set-up here.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from latlab.models import edge_pacer as model
from latlab.studies._markdown import num as _f
from latlab.studies._markdown import pct as _pct
from latlab.studies._markdown import table as _table
from latlab.studies._verdict import Verdict
from latlab.studies._verdict import summary as verdict_summary
from latlab.studies.pacing.cases import (
    ALL_EXPERIMENTS,
    CORE_RATE_BPS,
    EXPERIMENT_TITLES,
    FULL,
    MEAN_RTT_S,
    MODES,
    PACKET_BYTES,
    PAYLOAD_BYTES,
    Settings,
)
from latlab.studies.pacing.findings import findings
from latlab.studies.pacing.metrics import b_star, estimate_full_s, h_rows, select, sweep_span_s
from latlab.studies.pacing.references import (
    GOODPUT_KEY,
    HEADLINE_BUFFER_KB,
    PAPER,
    REFERENCES,
    SMALL_BUFFERS_KB,
)
from latlab.studies.pacing.verdicts import verdicts


def _grid_table(d: pd.DataFrame, metric: str, fmt: str = "{:.1f}", pct: bool = False) -> str:
    buffers = sorted(d["buffer_kb"].unique())
    rows = []
    for mode in MODES:
        m = d[d["mode"] == mode].groupby("buffer_kb")[metric].mean()
        if len(m):
            rows.append([mode] + [(_pct(m.get(b)) if pct else _f(m.get(b), fmt)) for b in buffers])
    return _table(["mode"] + [f"{b:g} KB" for b in buffers], rows)


def render(
    df: pd.DataFrame,
    settings: Settings,
    quick: bool,
    jobs: int,
    elapsed: float,
    figures: dict[str, str],
) -> str:
    out: list[str] = []
    add = out.append
    ok = df[df["status"] == "ok"]
    span_s = sweep_span_s(ok)
    n_unique = df["run_id"].nunique()
    pending = df[df["status"] == "pending"]["run_id"].nunique()
    failed = df[~df["status"].isin(["ok", "pending"])]["run_id"].nunique()
    add("# Edge versus host pacing in small-buffer networks\n")
    vs = verdicts(df)
    add(
        f"Reproduction of the small-buffer pacing study ({PAPER.citation()}) in latlab's packet simulator; the edge "
        "pacer, the queues and TCP are described in latlab's notes [edge pacer](../models/edge-pacer.md), "
        "[queues](../models/queues.md), [TCP](../models/tcp.md) and [workloads](../models/workloads.md). "
        "The ns-2 two-level dumbbell (10 ingress edges × 100 hosts, one long TCP flow per host, 100 Mbps core "
        "with a 100 ms delay), its DropTail core buffer swept in KB, and three ways to send: **unpaced**, "
        "**host-paced** (TCP pacing, window spread over one RTT, factor 1.0 as in ns-2) and **edge-paced** (the "
        "optimal edge pacer, delay bound d = 10 ms unless swept, on each ingress edge link ie{j}->c0).\n"
    )
    add(
        (
            "**Quick run** (`latlab reproduce pacing --quick`)"
            if quick
            else "**Full run** (`latlab reproduce pacing`)"
        )
        + f": {settings.duration_s:g} s simulated per run, measured over [{settings.measure_from_s:g}, "
        f"{settings.duration_s:g}] s; seed(s) {', '.join(map(str, settings.seeds))} (one topology draw and one set "
        f"of start times per seed, shared by the three modes: the comparison is paired); {n_unique} distinct runs "
        f"({len(df)} experiment points; set-ups that two experiments share run once), {failed} failed"
        + (
            f", **{pending} not run yet** (a partial report: sections and verdicts without their runs are "
            "missing)"
            if pending
            else ""
        )
        + "; "
        + (
            f"{jobs} worker process(es); wall time {elapsed / 60:.1f} min"
            if jobs
            else f"report from the finished runs (nothing run), {elapsed / 60:.1f} min"
        )
        + (
            f" (the runs themselves span {span_s / 60:.1f} min from the first start to the last finish; a re-run "
            "reuses finished runs, so this span is the time of the run that did the work)"
            if span_s
            else ""
        )
        + ".\n"
    )
    if quick:
        add(
            "Quick mode skips experiments C and E and I's LRD source, sweeps fewer buffers "
            f"({', '.join(f'{b:g}' for b in settings.buffers_kb)} KB for A; "
            f"{', '.join(f'{b:g}' for b in settings.other_buffers_kb)} KB elsewhere) and runs 100 flows only in B. "
            "A 50 s window after a 30 s warm-up is about 200 RTTs: enough for the averages below to within a few "
            "Kbps, not for the study's exact numbers.\n"
        )

    # -- headline vs reference
    a = select(df, "A")
    add("## The study's reference points beside latlab\n")
    add(
        f"Verdicts on experiment A ({sum(v.agrees for v in vs.values())} of {len(vs)} agree); the rule column says "
        "how each was decided.\n"
    )
    rows = []
    for v in vs.values():
        packets = ""
        if v.reference.key in GOODPUT_KEY.values():
            mode = next(m for m, k in GOODPUT_KEY.items() if k == v.reference.key)
            g = a[(a["mode"] == mode) & (a["buffer_kb"] == HEADLINE_BUFFER_KB)][
                "per_flow_kbps"
            ].mean()
            packets = _f(g * PACKET_BYTES / PAYLOAD_BYTES, "{:.1f} Kbps")
        rows.append(
            [v.reference.quantity, v.reference.text(), v.measured, packets, v.rule, v.label()]
        )
    add(
        _table(
            [
                "quantity",
                "study",
                "latlab (payload goodput)",
                "latlab, counting whole packets",
                "rule",
                "verdict",
            ],
            rows,
        )
    )
    add(
        f"\nlatlab's goodput is payload ({PAYLOAD_BYTES} B of each {PACKET_BYTES}-B packet, ns2 preset); the fourth "
        "column counts whole packets, in case the study's goodput did (its text does not say).\n"
    )
    add("\n".join(f"* {v.sentence()}" for v in vs.values()) + "\n")
    add(_seed_spread(df))
    add(_rto_sensitivity(df, settings))
    add(_disagreements(df, settings, vs))
    fv = findings(df, settings.delay_buffers_kb)
    add(_findings_summary(fv))

    # -- experiments
    for exp in ALL_EXPERIMENTS:
        add(f"## {exp}. {EXPERIMENT_TITLES[exp]}\n")
        add(_EXPERIMENT_TEXT[exp] + "\n")
        d = select(df, exp)
        if exp not in settings.experiments:
            add("*Not run in quick mode (the full run has it).*\n")
            continue
        if not len(d):
            add("*No results.*\n")
            continue
        if exp in figures:
            add(f"![{exp}]({figures[exp]})\n")
        if exp in fv:
            add("\n".join(f"* {v.sentence()}" for v in fv[exp].values()) + "\n")
        if exp == "E":
            for rec in sorted(d["recovery"].unique()):
                de = d[d["recovery"] == rec]
                add(
                    f"{rec.upper()}, per-flow goodput (Kbps):\n\n"
                    + _grid_table(de, "per_flow_kbps")
                    + "\n"
                )
                add(
                    f"{rec.upper()}, core loss:\n\n" + _grid_table(de, "core_loss", pct=True) + "\n"
                )
            add(_recovery_note(df))
            add(_e_finding(df))
        elif exp in "ACG":
            add("Per-flow goodput (Kbps):\n\n" + _grid_table(d, "per_flow_kbps") + "\n")
            add("Core loss over the window:\n\n" + _grid_table(d, "core_loss", pct=True) + "\n")
            if exp == "A":
                add("Core utilisation:\n\n" + _grid_table(d, "core_utilisation", pct=True) + "\n")
            if exp == "G":
                add(_red_note(df))
        elif exp == "B":
            for n in sorted(d["flows"].unique()):
                add(
                    f"{n} flows, per-flow goodput (Kbps):\n\n"
                    + _grid_table(d[d["flows"] == n], "per_flow_kbps")
                    + "\n"
                )
                add(
                    f"{n} flows, core loss:\n\n"
                    + _grid_table(d[d["flows"] == n], "core_loss", pct=True)
                    + "\n"
                )
        elif exp == "D":
            add(
                "Average per-file goodput of files started in the window (Kbps):\n\n"
                + _grid_table(d, "file_goodput_kbps")
                + "\n"
            )
            add("Aggregate goodput (Mbps):\n\n" + _grid_table(d, "tcp_goodput_mbps") + "\n")
            add("Core loss:\n\n" + _grid_table(d, "core_loss", pct=True) + "\n")
            add(_d_iw_note(df))
        elif exp == "F":
            add("Aggregate goodput (Mbps):\n\n" + _grid_table(d, "tcp_goodput_mbps") + "\n")
            add("Core loss:\n\n" + _grid_table(d, "core_loss", fmt="{:.2e}") + "\n")
        elif exp == "H":
            h = h_rows(df, settings)
            dl = h[h["sweep"] == "delay"]
            rows = []
            for b in settings.delay_buffers_kb:
                s = dl[dl["buffer_kb"] == b].groupby("delay_ms")["tcp_goodput_mbps"].mean()
                refs = {
                    m: h[(h["mode"] == m) & (h["buffer_kb"] == b)]["tcp_goodput_mbps"].mean()
                    for m in ("unpaced", "host-paced")
                }
                rows.append(
                    [f"{b:g} KB"]
                    + [_f(s.get(x)) for x in settings.delays_ms]
                    + [_f(refs["unpaced"]), _f(refs["host-paced"])]
                )
            add(
                "Aggregate TCP goodput (Mbps) against d:\n\n"
                + _table(
                    ["buffer"]
                    + [f"d = {x:g} ms" for x in settings.delays_ms]
                    + ["unpaced", "host-paced"],
                    rows,
                )
                + "\n"
            )
            bs = b_star(df)
            loads = {b: float(model.offered_load(b * 1000, bs)) for b in settings.delay_buffers_kb}
            add(
                f"**Analysis curves** ([edge pacer](../models/edge-pacer.md)), middle panel: the load a buffer B lets TCP offer, "
                f"ρ = 1 − e^(−B/B*), with B* = {bs / 1e3:.2f} KB fitted to A's unpaced core utilisation "
                f"(λ = {', '.join(f'{loads[b]:.3f} at {b:g} KB' for b in loads)}); the Chernoff loss bound "
                f"L ≤ (λe^(1−λ))^(2d) with d in packet times ({model.packet_time_s(CORE_RATE_BPS) * 1e6:.0f} µs at "
                f"{CORE_RATE_BPS / 1e6:g} Mbps); and T ∝ 1/((RTT0 + d)·sqrt(L)) with RTT0 = {MEAN_RTT_S * 1e3:.0f} ms "
                "(the mean propagation RTT), plotted as T(d)/T(0). latlab's points are its "
                "aggregate goodput divided by the d = 0 run (the pacer as a plain FIFO).\n"
            )
            add(f"![H analysis]({figures.get('H_analysis', 'fig_H_analysis.png')})\n")
            add(_h_evidence(df, settings, bs))
        elif exp == "I":
            for pat in sorted(d["udp"].unique()):
                dp = d[d["udp"] == pat]
                vb = dp[(dp["mode"] != "edge-paced") | (dp["delay_ms"] == 10.0)]
                if f"I_{pat}" in figures:
                    add(f"![I {pat}]({figures[f'I_{pat}']})\n")
                add(
                    f"{pat}: UDP loss vs buffer:\n\n"
                    + _grid_table(vb, "udp_loss", fmt="{:.2e}")
                    + "\n"
                )
                add(
                    f"{pat}: per-flow TCP goodput (Kbps):\n\n"
                    + _grid_table(vb, "per_flow_kbps")
                    + "\n"
                )
                if f"I_{pat}_delay" in figures:
                    add(f"![I {pat} vs d]({figures[f'I_{pat}_delay']})\n")
        elif exp == "J":
            rows = []
            for _, r in d.sort_values(["buffer_kb", "mode", "paced_fraction"]).iterrows():
                frac = 0.0 if r["mode"] == "unpaced" else r["paced_fraction"]
                rows.append(
                    [
                        f"{r['buffer_kb']:g} KB",
                        r["mode"],
                        f"{100 * frac:.0f} %",
                        _f(r["tcp_goodput_mbps"]),
                        _f(r.get("paced_kbps")),
                        _f(r.get("unpaced_kbps")),
                        _pct(r["core_loss"]),
                    ]
                )
            add(
                _table(
                    [
                        "buffer",
                        "who paces",
                        "share",
                        "aggregate (Mbps)",
                        "paced flows (Kbps)",
                        "unpaced flows (Kbps)",
                        "core loss",
                    ],
                    rows,
                )
                + "\n"
            )
            add(_j_finding(df))
        elif exp == "K":
            add(_k_tables(df))

    # -- gaps and cost
    add("## What is not reproduced yet\n")
    add(_GAPS + "\n")
    add("## Cost of the full run\n")
    est, n_full, cost = estimate_full_s(df, settings, 2)
    add(
        f"The full run has {n_full} distinct runs of {FULL.duration_s:g} s. Estimated from this run's measured wall "
        f"time per simulated second (per experiment; A's where an experiment did not run here), on 2 cores: "
        f"**{est / 60:.0f} min** (budget 45 min). Per experiment (core-seconds):\n"
    )
    add(
        _table(
            ["experiment", "runs", "core-seconds"],
            [
                [e, int(cost.loc[e, "runs"]), f"{cost.loc[e, 'core_seconds']:.0f}"]
                for e in cost.index
            ],
        )
        + "\n"
    )

    def _list(xs: tuple[float, ...]) -> str:
        return ", ".join(f"{x:g}" for x in xs)

    add(
        f"The grid was chosen for that budget: {len(FULL.buffers_kb)} buffers in A ({_list(FULL.buffers_kb)} KB), "
        f"{len(FULL.other_buffers_kb)} elsewhere ({_list(FULL.other_buffers_kb)} KB; E runs "
        f"{' and '.join(r.upper() for r in FULL.e_recoveries)} on {_list(FULL.e_buffers_kb)} KB); H sweeps "
        f"d ∈ {{{_list(FULL.delays_ms)}}} ms at {_list(FULL.delay_buffers_kb)} KB and plots "
        f"d ∈ {{{_list(FULL.delay_set_ms)}}} ms against the buffer; I sweeps d ∈ {{{_list(FULL.i_delays_ms)}}} ms; "
        f"J runs {' and '.join(f'{100 * f:g} %' for f in FULL.j_fractions)} at {_list(FULL.j_buffers_kb)} KB. "
        f"Seed(s) {_list(FULL.seeds)}, plus seeds {_list(FULL.headline_seeds)} at the headline point (A, "
        f"{HEADLINE_BUFFER_KB:g} KB); a second seed everywhere would double the time.\n"
    )
    add("## Reproduce\n")
    add(
        "```sh\nlatlab reproduce pacing --quick -o out/pacing-quick   # ~5 min on 2 cores\n"
        "latlab reproduce pacing -o out/pacing                 # the full study (see the estimate above)\n```\n"
    )
    add(
        "Data: results.parquet (one row per experiment point: parameters, run_id, metrics); runs/ is the sweep folder "
        "(catalog.parquet, one results folder per distinct run; re-running skips finished runs). Code: "
        "latlab.studies.pacing: cases (scenario builders, the two-level dumbbell as a custom "
        "topology), metrics, references, verdicts, report, figures; latlab.models.edge_pacer (analysis curves).\n"
    )
    return "\n".join(out)


#: Experiment K's rows, and A's NewReno rows beside them: (label, experiment, sender, mode).
_K_ROWS = (
    ("BBR, its own pacing", "K", "bbr", "host-paced"),
    ("BBR + edge pacer", "K", "bbr", "edge-paced"),
    ("NewReno unpaced (A)", "A", "newreno", "unpaced"),
    ("NewReno host-paced (A)", "A", "newreno", "host-paced"),
    ("NewReno edge-paced (A)", "A", "newreno", "edge-paced"),
)


def _k_tables(df: pd.DataFrame) -> str:
    """Experiment K (BBR senders) beside A's NewReno runs at the same buffers: measured numbers, no verdict."""
    k = select(df, "K")
    buffers = sorted(k["buffer_kb"].unique())
    cc = df["cc"] if "cc" in df else pd.Series("newreno", index=df.index)
    out = []
    for metric, title, pct in (
        ("per_flow_kbps", "Per-flow goodput (Kbps)", False),
        ("core_loss", "Core loss over the window", True),
        ("core_utilisation", "Core utilisation", True),
        ("timeouts_per_flow", "Timeouts per flow (whole run)", False),
    ):
        rows = []
        for label, exp, sender, mode in _K_ROWS:
            d = df[(df["experiment"] == exp) & (cc == sender) & (df["mode"] == mode)]
            m = d.groupby("buffer_kb")[metric].mean()
            if len(m):
                rows.append([label] + [(_pct(m.get(b)) if pct else _f(m.get(b))) for b in buffers])
        out.append(f"{title}:\n\n" + _table(["senders"] + [f"{b:g} KB" for b in buffers], rows))
    return "\n\n".join(out) + "\n"


def _recovery_note(df: pd.DataFrame) -> str:
    """E against A: per-flow goodput at each shared buffer by recovery, and edge pacing's gain under each."""
    a, e = select(df, "A"), select(df, "E")
    both = pd.concat([a.assign(recovery="newreno"), e])
    buffers = sorted(set(e["buffer_kb"]) & set(a["buffer_kb"]))
    if not buffers:
        return ""
    rows = []
    for rec in ("newreno", "sack", "fack"):
        for b in buffers:
            g = (
                both[(both["recovery"] == rec) & (both["buffer_kb"] == b)]
                .groupby("mode")["per_flow_kbps"]
                .mean()
            )
            if not len(g):
                continue
            gain = g.get("edge-paced", np.nan) / g.get("host-paced", np.nan) - 1
            rows.append([rec, f"{b:g} KB"] + [_f(g.get(m)) for m in MODES] + [_pct(gain)])
    return (
        "Recovery side by side (per-flow goodput in Kbps; NewReno rows are A's runs):\n\n"
        + _table(["recovery", "buffer"] + list(MODES) + ["edge vs host"], rows)
        + "\n"
    )


def _seed_spread(df: pd.DataFrame) -> str:
    """The headline point (A at 5 KB) over every seed run: per-flow goodput per mode and edge pacing's gain."""
    a = select(df, "A")
    pts = pd.concat([a[a["buffer_kb"] == HEADLINE_BUFFER_KB], select(df, "A-seeds")])
    if pts["seed"].nunique() < 2:
        return ""
    rows, gains = [], []
    for seed, g in pts.groupby("seed"):
        v = g.groupby("mode")["per_flow_kbps"].mean()
        gain = v.get("edge-paced", np.nan) / v.get("host-paced", np.nan) - 1
        gains.append(gain)
        rows.append([str(seed)] + [_f(v.get(m)) for m in MODES] + [_pct(gain)])
    per_mode = pts.groupby("mode")["per_flow_kbps"]
    rows.append(
        ["mean ± sd"]
        + [
            f"{per_mode.mean().get(m, np.nan):.1f} ± {per_mode.std().get(m, np.nan):.1f}"
            for m in MODES
        ]
        + [f"{100 * np.mean(gains):.1f} % ± {100 * np.std(gains, ddof=1):.1f}"]
    )
    return (
        "The headline point with other seeds (each seed draws new access/edge rates and delays and new start "
        "times; per-flow goodput in Kbps at 5 KB):\n\n"
        + _table(["seed"] + list(MODES) + ["edge vs host"], rows)
        + "\n"
    )


def _red_note(df: pd.DataFrame) -> str:
    """G against A and G-wait: where RED at the core is DropTail, which drops were early, and why."""
    g, a, nw = select(df, "G"), select(df, "A"), select(df, "G-wait")
    if not len(g) or "core_early_drops_pkts" not in g:
        return ""
    out = []
    rows = []
    same_at: list[float] = []
    for b in sorted(g["buffer_kb"].unique()):
        gb, ab = g[g["buffer_kb"] == b], a[a["buffer_kb"] == b]
        same = 0
        for m in MODES:
            x, y = gb[gb["mode"] == m], ab[ab["mode"] == m]
            if (
                len(x)
                and len(y)
                and (x["per_flow_kbps"].to_numpy() == y["per_flow_kbps"].to_numpy()).all()
                and (x["core_loss"].to_numpy() == y["core_loss"].to_numpy()).all()
            ):
                same += 1
        if same == len(MODES):
            same_at.append(b)
        early = gb.groupby("mode")["core_early_drops_pkts"].sum()
        total = gb.groupby("mode")["core_drops_pkts"].sum()
        cells = [f"{int(early.get(m, 0))} of {int(total.get(m, 0))}" for m in MODES]
        nb = nw[nw["buffer_kb"] == b]
        if len(nb):
            e2, t2 = (
                nb.groupby("mode")["core_early_drops_pkts"].sum(),
                nb.groupby("mode")["core_drops_pkts"].sum(),
            )
            k2 = nb.groupby("mode")["per_flow_kbps"].mean()
            cells_nw = [
                f"{int(e2.get(m, 0))} of {int(t2.get(m, 0))} ({_f(k2.get(m))} Kbps)" for m in MODES
            ]
        else:
            cells_nw = ["" for _ in MODES]
        pkts = int(b * 1000 // PACKET_BYTES)
        rows.append([f"{b:g} KB ({pkts} pkt)", f"{same} of {len(MODES)}"] + cells + cells_nw)
    out.append(
        "RED's early drops, counted per link (`drops_early_pkts` in the links table; the rest of `drops_pkts` "
        "are forced: buffer full, or the average above max_th). Cells: early of all core drops over the whole "
        "run; *same as A*: modes whose per-flow goodput and core loss equal DropTail's (experiment A) to the "
        "last digit; *without wait*: the same runs with ns-2's `wait_` off (experiment G-wait, the paper's "
        "p_a = p_b / (1 − count·p_b)):\n"
    )
    out.append(
        _table(
            ["buffer", "same as A"]
            + [f"{m}: early" for m in MODES]
            + [f"{m}: early without wait" for m in MODES],
            rows,
        )
        + "\n"
    )
    zero = sorted(
        float(b)
        for b in g["buffer_kb"].unique()
        if g[g["buffer_kb"] == b]["core_early_drops_pkts"].sum() == 0
    )
    nw_early = float(nw["core_early_drops_pkts"].sum()) if len(nw) else 0.0
    if zero:
        out.append(
            f"**Why RED is DropTail here.** RED made no early drop at {', '.join(f'{b:g}' for b in zero)} KB"
            + (
                f", and the runs equal A's exactly at {', '.join(f'{b:g}' for b in same_at)} KB"
                if same_at
                else ""
            )
            + ". Two rules of ns-2's RED (red.cc, which latlab follows) account for it. (1) An early drop is "
            "considered only when the queue already holds more than one packet (`qlen > 1`); a 2 KB buffer holds "
            "two 1000-B packets, so whenever that holds the arrival does not fit and is a forced drop anyway. "
            "(2) With `wait_` on (ns-2's default), no early drop happens while count·p_b < 1, where count is the "
            "number of arrivals since the last drop and p_b ≤ max_p = 0.1, so at least 10 (at the average queues "
            "here, several tens of) arrivals must pass without a drop; but every forced drop resets count (red.cc, "
            "unless `ns1_compat_`), and at the small buffers' core loss of several per cent the buffer overflows "
            "every few tens of arrivals. "
            + (
                f"Without `wait_` (G-wait) RED drops {int(nw_early)} packets early at "
                f"{', '.join(f'{b:g}' for b in sorted(nw['buffer_kb'].unique()))} KB, which shows that the rule, not "
                "the average, is what holds them back. "
                if nw_early > 0
                else "Without `wait_` (G-wait) there are still no early drops, so the average queue stays below min_th "
                "too. "
                if len(nw)
                else ""
            )
            + "Gentle mode and the mean packet size cannot change this: the average never reaches max_th = the "
            "buffer (the queue an arrival sees is at most the buffer less one packet), and the mean packet size "
            "only sets the idle-time decay, which lowers the average further. This is RED's own semantics at "
            "buffers of a few packets, not a latlab defect; the study's RED results at these buffers may rest on "
            "a different RED variant or parameters (its text does not give them). ns-3's RedQueueDisc on the same small "
            "buffers, side by side with latlab: [docs/validation/red-small-buffer.md]"
            "(../validation/red-small-buffer.md) (it keeps counting across buffer overflows, so it does drop early "
            "at 5 packets).\n"
        )
    return "\n".join(out) + "\n"


def _rto_sensitivity(df: pd.DataFrame, settings: Settings) -> str:
    """A against A-rto: per-flow goodput and timeouts with the ns2 preset's 200 ms minimum RTO and a longer one."""
    a, r = select(df, "A"), select(df, "A-rto")
    if not len(r):
        return ""
    rows = []
    for b in sorted(r["buffer_kb"].unique()):
        for label, d in ((f"{200:g} ms", a), (f"{settings.rto_min_ms:g} ms", r)):
            g = d[d["buffer_kb"] == b].groupby("mode")
            v, to = g["per_flow_kbps"].mean(), g["timeouts_per_flow"].mean() / settings.duration_s
            loss = g["core_loss"].mean()
            gain = v.get("edge-paced", np.nan) / v.get("host-paced", np.nan) - 1
            rows.append(
                [f"{b:g} KB", label]
                + [
                    f"{_f(v.get(m))} / {_f(to.get(m), '{:.2f}')} / {_pct(loss.get(m))}"
                    for m in MODES
                ]
                + [_pct(gain)]
            )
    return (
        "**Sensitivity to the minimum RTO.** With ~1000 windows of 2–4 segments sharing the core, many losses "
        "leave too few duplicate ACKs for fast retransmit, so flows recover by timeout; and with RTO = max(min "
        "RTO, srtt + 4·rttvar) close to an RTT that queueing and pacing delay inflate, a timer can fire for a "
        "segment that is only late, resending data that was not lost. The same runs with a longer minimum RTO "
        "(cells: per-flow goodput in Kbps / timeouts per flow per second over the run / core loss):\n\n"
        + _table(["buffer", "min RTO"] + list(MODES) + ["edge vs host"], rows)
        + "\n"
    )


def _disagreements(df: pd.DataFrame, settings: Settings, vs: dict[str, Verdict]) -> str:
    """Notes on where and why latlab differs: measured numbers; comparisons only through the verdicts."""
    a = select(df, "A")
    if not len(a):
        return ""
    notes = ["### Notes on the differences\n"]
    g = a.groupby(["buffer_kb", "mode"])["per_flow_kbps"].mean().unstack()
    if all(m in g for m in MODES):
        vs_host = g["edge-paced"] / g["host-paced"] - 1
        vs_un = g["edge-paced"] / g["unpaced"] - 1

        def where(gain: pd.Series) -> str:
            ahead = [b for b, v in gain.items() if v > 0.02]
            return f"{min(ahead):g}–{max(ahead):g} KB" if ahead else "nowhere"

        lo, hi = HEADLINE_BUFFER_KB, 15.0
        mid = a[a["buffer_kb"].between(lo, hi)].groupby("mode")["core_loss"].mean()
        notes.append(
            "* Where edge pacing leads by more than 2 %: against unpaced at "
            + where(vs_un)
            + ", against host-paced at "
            + where(vs_host)
            + f". Between {lo:g} and {hi:g} KB latlab's host "
            f"pacing takes the core loss from {_pct(mid.get('unpaced'))} (unpaced) to "
            f"{_pct(mid.get('host-paced'))}, where the edge pacer takes it to {_pct(mid.get('edge-paced'))}."
        )
    note = _small_buffer_loss(a)
    if note:
        notes.append(note)
    r_all = select(df, "A-rto")
    if len(r_all):
        both = pd.concat(
            [
                a[a["buffer_kb"].isin(r_all["buffer_kb"].unique())].assign(rto="base"),
                r_all.assign(rto="long"),
            ]
        )
        loss_by_rto = both.groupby("rto")["core_loss"].mean()
        if {"base", "long"} <= set(loss_by_rto.index):
            notes.append(
                f"* How the flows time out moves the loss: a minimum RTO of {settings.rto_min_ms:g} ms "
                f"instead of 200 ms changes the core loss by {_pct(loss_by_rto['long'] / loss_by_rto['base'] - 1)} on average "
                f"over the buffers of the table above ({_pct(loss_by_rto['base'])} → {_pct(loss_by_rto['long'])})."
            )
    r5 = (
        r_all[r_all["buffer_kb"] == HEADLINE_BUFFER_KB].groupby("mode")["per_flow_kbps"].mean()
        if len(r_all)
        else pd.Series(dtype=float)
    )
    if len(r5) == len(MODES):
        gain = r5["edge-paced"] / r5["host-paced"] - 1
        a5 = a[a["buffer_kb"] == HEADLINE_BUFFER_KB]
        util5 = a5[a5["mode"] == "edge-paced"]["core_utilisation"].mean()
        to_cut = float(
            np.mean(
                [
                    a5[a5["mode"] == m]["timeouts_per_flow"].mean()
                    / r_all[(r_all["mode"] == m) & (r_all["buffer_kb"] == HEADLINE_BUFFER_KB)][
                        "timeouts_per_flow"
                    ].mean()
                    for m in MODES
                ]
            )
        )
        base5 = a5.groupby("mode")["per_flow_kbps"].mean()
        shift = max(abs(r5[m] / base5[m] - 1) for m in MODES)
        notes.append(
            f"* Timeouts (table above): a minimum RTO of {settings.rto_min_ms:g} ms instead of 200 ms cuts "
            f"timeouts {to_cut:.1f}-fold (mean over the modes) and moves {HEADLINE_BUFFER_KB:g} KB goodput by "
            f"at most {_pct(shift)} (unpaced {r5['unpaced']:.1f}, host-paced {r5['host-paced']:.1f}, "
            f"edge-paced {r5['edge-paced']:.1f} Kbps; edge vs host {_pct(gain)}); the edge pacer keeps the "
            f"core {_pct(util5)} busy at {HEADLINE_BUFFER_KB:g} KB. ns-2's minrto_ default is 200 ms since "
            "October 2004 (ns-default.tcl; its own test suites keep the earlier 1 s), and the study does not "
            "say which it ran. When the timer restarts matters too: an earlier latlab sender left the RTO "
            "timer running through a fast retransmission (RFC 6298 read literally) and raised ssthresh to "
            "half the FlightSize when a timeout ended a recovery, which gave spurious timeouts behind the "
            "queue and lower goodput in every mode. The sender now restarts the timer as the fast "
            "retransmission leaves and keeps the recovery's ssthresh, as ns-2 (tcp-reno.cc) and Linux do; "
            "it produced the figures here."
        )
    goodput = [vs[k] for k in GOODPUT_KEY.values() if k in vs]
    if "edge_over_host" in vs and len(goodput) == len(MODES):
        parts = "; ".join(
            f"{v.reference.quantity.split(', ')[-1]} {v.measured} against the study's "
            f"{v.reference.text()} ({v.outcome})"
            for v in goodput
        )
        notes.append(
            f"* What remains: {parts}; edge pacing's lead over host pacing is {vs['edge_over_host'].measured} "
            f"against the study's {vs['edge_over_host'].reference.text()} ({vs['edge_over_host'].outcome}). "
            + _spread_and_recovery(df)
            + "Candidates are ns-2 details the "
            "set-up does not give: its coarse 10 ms timer tick and once-per-RTT RTT sampling (latlab: 1 ms, "
            "every ACK, timestamps), its pacing implementation, and access-link queue sizes (latlab: large, "
            "so the core is the only drop point)."
        )
    notes.append(
        "* What the set-up leaves open: the edge pacer is latlab's online algorithm ([edge pacer]"
        "(../models/edge-pacer.md): release at the fluid exit curve, per-packet deadline guaranteed), the "
        "ns-2 study's implementation details are not known; ns-2's TCP pacing (a timer per packet at "
        "cwnd/RTT) is modelled by latlab's host pacing with factor 1.0; IW 10 (latlab's ns2 preset) where "
        "ns-2 1.x defaulted to 1–2 segments acts only on the long flows' start-up, which the window excludes, "
        "but on every file of D's closed-loop users (see D); topology "
        "rates and delays are one random draw (seed above), not the study's; "
        + (
            f"and quick mode measures {settings.duration_s - settings.measure_from_s:g} s, not "
            f"{FULL.duration_s - FULL.measure_from_s:g} s, so per-flow averages carry a few Kbps of noise."
            if settings.duration_s < FULL.duration_s
            else "and the study's run is a single seed too."
        )
    )
    return "\n".join(notes) + "\n"


def _pftk_loss(rate_pps: float, rtt_s: float, t_rto_s: float) -> float:
    """The loss event rate at which RFC 5348's throughput equation (Padhye et al.) gives ``rate_pps``."""
    from latlab.models.tcp_equation import tcp_equation_rate_bps

    grid = np.logspace(-4, 0, 2000)
    pps = tcp_equation_rate_bps(grid, rtt_s, 1.0, t_rto_s=t_rto_s) / 8.0  # decreasing in p
    return float(np.interp(-rate_pps, -pps, grid))


def _small_buffer_loss(a: pd.DataFrame) -> str:
    """The 2–3 KB loss: the square-root estimate from the set-up, the same estimate from the measured rate and RTT,
    the equation with timeouts, and the measured loss; which one the runs support, decided by the numbers."""
    small = a[(a["mode"] == "unpaced") & a["buffer_kb"].isin(SMALL_BUFFERS_KB)]
    if not len(small):
        return ""
    n_flows = int(small["flows"].iloc[0])
    pkt_rate = CORE_RATE_BPS / (PACKET_BYTES * 8)
    w_setup = pkt_rate * MEAN_RTT_S / n_flows
    measured = float(small["core_loss"].mean())
    delivered_pps = float(small["core_utilisation"].mean()) * pkt_rate / n_flows
    queue_s = sum(
        float(small[k].mean()) / 1e3 for k in ("core_sojourn_ms", "edge_sojourn_ms") if k in small
    )
    rtt_s = MEAN_RTT_S + (queue_s if np.isfinite(queue_s) else 0.0)
    w_meas = delivered_pps * rtt_s
    to = float(small["timeouts_per_flow"].mean())
    fr = float(small["fast_recoveries_per_flow"].mean())
    share_to = to / (to + fr) if to + fr > 0 else np.nan
    p_sqrt = 1.5 / w_meas**2
    p_eq = {t: _pftk_loss(delivered_pps, rtt_s, t) for t in (max(0.2, rtt_s), 4 * rtt_s)}
    lo, hi = min(p_eq.values()), max(p_eq.values())
    best = min(
        (("the square-root law", p_sqrt), ("the equation with timeouts", (lo + hi) / 2)),
        key=lambda kv: abs(np.log(kv[1] / measured)),
    )
    return (
        f"* Loss at {SMALL_BUFFERS_KB[0]:g}–{SMALL_BUFFERS_KB[-1]:g} KB, unpaced: measured {_pct(measured)} (the core's "
        f"drops over its arrivals in the window; the study: {REFERENCES['loss_small'].text()}). The square-root law p ≈ 1.5/W² with W from the set-up alone "
        f"({n_flows} flows sharing {CORE_RATE_BPS / 1e6:g} Mbps over ~{MEAN_RTT_S * 1e3:.0f} ms, W = {w_setup:.1f} "
        f"packets) gives {_pct(1.5 / w_setup**2)}; with the runs' own rate and RTT (each flow delivers "
        f"{delivered_pps:.1f} packets/s over an RTT of {rtt_s * 1e3:.0f} ms including the core and edge queues' mean "
        f"sojourn, W = {w_meas:.2f}) it gives {_pct(p_sqrt)}. The law assumes every loss is repaired by fast "
        f"recovery; in these runs a flow has {to:.0f} timeouts and {fr:.0f} fast recoveries over the run "
        f"({_pct(share_to)} of recoveries by timeout), and a timeout silences a flow for at least 200 ms. The "
        f"throughput equation with timeouts (RFC 5348 §3.1, Padhye et al.) gives, for the same rate and RTT, "
        f"{_pct(lo)}–{_pct(hi)} (t_RTO from max(200 ms, RTT) to 4·RTT). Closest to the measured loss: {best[0]}; "
        "the counted loss is what the report uses."
    )


def _spread_and_recovery(df: pd.DataFrame) -> str:
    """How much the seeds and the recovery variants (E) move edge pacing's lead over host pacing at the headline buffer."""
    parts = []
    a = select(df, "A")
    pts = pd.concat([a[a["buffer_kb"] == HEADLINE_BUFFER_KB], select(df, "A-seeds")])
    sd = pts.groupby(["seed", "mode"])["per_flow_kbps"].mean().unstack().std()
    if pts["seed"].nunique() > 1 and len(sd):
        parts.append(
            f"over {pts['seed'].nunique()} seeds the per-flow goodputs vary by at most {sd.max():.1f} Kbps "
            "(standard deviation)"
        )
    e = select(df, "E")
    e = e[e["buffer_kb"] == HEADLINE_BUFFER_KB]
    if len(e):
        gains = {"newreno": np.nan}
        ga = a[a["buffer_kb"] == HEADLINE_BUFFER_KB].groupby("mode")["per_flow_kbps"].mean()
        if {"edge-paced", "host-paced"} <= set(ga.index):
            gains["newreno"] = ga["edge-paced"] / ga["host-paced"] - 1
        for rec, g in e.groupby("recovery"):
            m = g.groupby("mode")["per_flow_kbps"].mean()
            gains[rec] = m.get("edge-paced", np.nan) / m.get("host-paced", np.nan) - 1
        parts.append(
            "edge pacing's lead over host pacing is "
            + ", ".join(f"{_pct(v)} with {k}" for k, v in gains.items())
        )
    return (
        ("latlab finds no single cause for the differences: " + "; ".join(parts) + ". ")
        if parts
        else ""
    )


def _h_evidence(df: pd.DataFrame, settings: Settings, bs: float) -> str:
    """H's queues against d (core busy share, core loss, mean sojourn at the core and in the pacer) and, from them,
    whether the analysis's direction at the high-load buffer holds in latlab's runs."""
    h = select(df, "H")
    paced = h[h["mode"] == "edge-paced"]
    cols = [c for c in ("core_sojourn_ms", "edge_sojourn_ms") if c in paced]
    if not len(paced) or len(cols) < 2:
        return ""
    rows, by_buffer = [], {}
    for b in settings.delay_buffers_kb:
        g = (
            paced[paced["buffer_kb"] == b]
            .groupby("delay_ms")[["tcp_goodput_mbps", "core_utilisation", "core_loss", *cols]]
            .mean()
        )
        by_buffer[b] = g
        for d, r in g.iterrows():
            rows.append(
                [
                    f"{b:g} KB",
                    f"{d:g} ms",
                    _f(r["tcp_goodput_mbps"]),
                    _pct(r["core_utilisation"]),
                    _pct(r["core_loss"], "{:.2f} %"),
                    _f(r["core_sojourn_ms"], "{:.2f}"),
                    _f(r["edge_sojourn_ms"], "{:.2f}"),
                ]
            )
    out = [
        "The runs' queues against d (means over the window from the link samples; sojourn weighted by the bytes "
        "leaving; the pacer's is the ingress edge links' queue):\n",
        _table(
            [
                "buffer",
                "d",
                "TCP goodput (Mbps)",
                "core busy",
                "core loss",
                "core sojourn (ms)",
                "pacer sojourn (ms)",
            ],
            rows,
        )
        + "\n",
    ]
    hi = max(settings.delay_buffers_kb)
    g = by_buffer[hi]
    if len(g) > 1 and 0.0 in g.index:
        d_max = float(g.index.max())
        lam = float(model.offered_load(hi * 1000, bs))
        pkt_s = model.packet_time_s(CORE_RATE_BPS)
        analysis = float(model.relative_throughput(lam, d_max / 1e3 / pkt_s, MEAN_RTT_S / pkt_s))
        latlab = float(g.loc[d_max, "tcp_goodput_mbps"] / g.loc[0.0, "tcp_goodput_mbps"])
        busy_lo = float(g["core_utilisation"].min())
        hold = float(g.loc[d_max, "edge_sojourn_ms"])
        falls = latlab < 1 - 0.01
        out.append(
            f"At {hi:g} KB the analysis curve gives T({d_max:g} ms)/T(0) = {analysis:.2f}; latlab's runs give "
            f"{latlab:.3f}, {'a fall' if falls else 'no fall'}. The core is at least {_pct(busy_lo)} busy at every d, "
            f"and at d = {d_max:g} ms the pacer holds a packet {hold:.1f} ms on average (the bound is "
            f"{d_max:g} ms); the core's loss goes from {_pct(g.loc[0.0, 'core_loss'], '{:.2f} %')} at d = 0 to "
            f"{_pct(g.loc[d_max, 'core_loss'], '{:.2f} %')}.\n"
        )
        loss_falls = g.loc[d_max, "core_loss"] <= g.loc[0.0, "core_loss"]
        if not falls and busy_lo >= 0.97 and loss_falls:
            out.append(
                "So at this buffer the analysis, not the simulation, is what is wrong, and so was this report's "
                'earlier prose ("d hurts under heavy load through RTT0 + d"). T ∝ 1/((RTT0 + d)·√L) holds for one '
                "flow whose loss L is given; at a saturated core the loss is not given: the flows' windows settle "
                "where their sum fills the link, so a longer RTT (here by the pacer's mean hold) is met by a lower "
                "loss, not by a lower aggregate. While the core stays busy the aggregate can only lose the share of "
                "retransmitted bytes, and that share falls with the loss. A fall like the study's at 50 KB needs "
                "the core to go idle or to carry more retransmissions as d grows; these runs show neither.\n"
            )
        elif falls:
            out.append("Here latlab's goodput falls with d, in the analysis's direction.\n")
    out.append(
        "The bound itself is loose by construction (a bufferless fluid with Poisson input): beyond a few hundred "
        "packet times it predicts no loss at λ < 0.98, where TCP keeps the core loaded and lossy.\n"
    )
    return "\n".join(out)


def _order(g: pd.Series) -> str:
    """Modes from the highest value to the lowest: "host-paced 139.3 > edge-paced 134.5 > unpaced 134.0"."""
    return " > ".join(f"{m} {v:.1f}" for m, v in g.sort_values(ascending=False).items())


def _d_iw_note(df: pd.DataFrame) -> str:
    """D with the ns2 preset's IW 10 beside D-iw (a small IW): per-file goodput by mode, by file size, the loss and
    the pacer's hold; and the order of the modes under each."""
    d, small_iw = select(df, "D"), select(df, "D-iw")
    if not len(small_iw) or "file_goodput_kbps" not in small_iw:
        return ""
    both = pd.concat([d[d["buffer_kb"].isin(small_iw["buffer_kb"].unique())], small_iw])
    cols = [
        c
        for c in (
            "file_goodput_kbps",
            "small_file_goodput_kbps",
            "large_file_goodput_kbps",
            "core_loss",
            "edge_sojourn_ms",
        )
        if c in both
    ]
    rows, orders = [], []
    for (b, iw), g in both.groupby(["buffer_kb", "initial_window"]):
        m = g.groupby("mode")[cols].mean()
        for mode in MODES:
            if mode in m.index:
                r = m.loc[mode]
                rows.append(
                    [f"{b:g} KB", f"IW {iw:g}", mode]
                    + [
                        _pct(r[c])
                        if c == "core_loss"
                        else _f(r[c], "{:.1f}" if "kbps" in c else "{:.2f}")
                        for c in cols
                    ]
                )
        orders.append(f"at {b:g} KB with IW {iw:g}: {_order(m['file_goodput_kbps'])} Kbps")
    names = {
        "file_goodput_kbps": "per-file goodput (Kbps)",
        "small_file_goodput_kbps": "files < 100 KB",
        "large_file_goodput_kbps": "files ≥ 100 KB",
        "core_loss": "core loss",
        "edge_sojourn_ms": "pacer sojourn (ms)",
    }
    return (
        "**The initial window.** Each file of a closed-loop user opens a new connection (handshake, initial "
        "window, a fresh controller and RTT estimate), so the initial window, which the study does not give, acts "
        "on every file, not only on a start-up the window leaves out. The same runs with IW "
        f"{int(small_iw['initial_window'].iloc[0])} (experiment D-iw; ns-2's TCP agents start from one or two "
        "segments) beside the ns2 preset's IW 10:\n\n"
        + _table(["buffer", "initial window", "mode"] + [names[c] for c in cols], rows)
        + "\n\nOrder of the modes by per-file goodput: "
        + "; ".join(orders)
        + ".\n"
    )


def _findings_summary(fv: dict[str, dict[str, Verdict]]) -> str:
    """The verdict table of the study's findings for B–I; their sentences sit in each experiment's section."""
    vs = [v for exp in fv.values() for v in exp.values()]
    if not vs:
        return ""
    return (
        "## The study's findings for B–I beside latlab\n\n"
        "Read from the study's figures; each experiment's section below gives the sentences. E and J have no "
        "findings to compare with: their sections say what latlab finds.\n\n"
        + verdict_summary(vs)
        + "\n"
    )


def _direction(change: float, tol: float = 0.01) -> str:
    return "higher" if change > tol else "lower" if change < -tol else "level (within 1 %)"


def _e_finding(df: pd.DataFrame) -> str:
    """What latlab finds for E (no study finding): how far SACK and FACK move per-flow goodput from NewReno's."""
    a, e = select(df, "A"), select(df, "E")
    if not len(e):
        return ""
    both = pd.concat(
        [a[a["buffer_kb"].isin(e["buffer_kb"].unique())].assign(recovery="newreno"), e]
    )
    g = both.groupby(["recovery", "buffer_kb", "mode"])["per_flow_kbps"].mean()
    base = g.xs("newreno", level="recovery")
    moves = {
        rec: (g.xs(rec, level="recovery") / base - 1).dropna()
        for rec in sorted(e["recovery"].unique())
    }
    parts = [
        f"{rec.upper()} moves per-flow goodput from NewReno's by {_pct(m.min())} to {_pct(m.max())}"
        for rec, m in moves.items()
        if len(m)
    ]
    return "latlab finds (no study finding to compare with): " + "; ".join(parts) + ".\n"


def _j_finding(df: pd.DataFrame) -> str:
    """What latlab finds for J (no study finding): paced against unpaced flows under partial deployment."""
    j = select(df, "J")
    j = j[(j["paced_fraction"] > 0) & (j["paced_fraction"] < 1)]
    if not len(j):
        return ""
    parts = []
    for _, r in j.sort_values(["paced_fraction", "buffer_kb", "mode"]).iterrows():
        paced, unpaced = float(r.get("paced_kbps", np.nan)), float(r.get("unpaced_kbps", np.nan))
        if not (np.isfinite(paced) and np.isfinite(unpaced)):
            continue
        change = paced / unpaced - 1
        parts.append(
            f"{100 * r['paced_fraction']:.0f} % {r['mode']} at {r['buffer_kb']:g} KB: the paced flows get "
            f"{paced:.1f} Kbps, {_direction(change)} than the unpaced flows beside them ({unpaced:.1f} Kbps, "
            f"{100 * change:+.1f} %)"
        )
    return (
        "latlab finds (no study finding to compare with): " + "; ".join(parts) + ".\n"
        if parts
        else ""
    )


_EXPERIMENT_TEXT = {
    "A": "1000 long NewReno flows (ns2 preset: 1000-B data packets, 40-B ACKs), access 8–12 Mbps and 1–5 ms, edges "
    "100 Mbps and 5–15 ms, core 100 Mbps and 100 ms (propagation RTT 224–280 ms), starts uniform in [0, 10] s; "
    "core buffer swept. The study's reference points are the stars.",
    "B": "As A with 10 and 50 hosts per edge (100 and 500 flows).",
    "C": "As A with 100 Mbps access links: each host can burst at the edge rate.",
    "D": "1000 closed-loop users ([workloads](../models/workloads.md)): Pareto files (mean 100 KB, shape 1.2), exponential think time (mean "
    "1 s). Goodput per file = size / completion time, averaged over files started in the window.",
    "E": "As A with SACK recovery (RFC 6675) and with FACK (forward acknowledgement: every un-SACKed segment below "
    "the highest SACKed byte counts as lost, pipe = snd.nxt − snd.fack + retran_data, recovery once snd.fack − "
    "snd.una > 3 segments), at fewer buffers; NewReno is A.",
    "F": "10 edges × 10 hosts (100 flows), access 1–2 Mbps with ns-2's default 50-packet access queue (the access "
    "links are the bottlenecks; latlab's default 10 000-packet queue would bloat them), edges 40 Mbps, core "
    "200 Mbps: the core is not the bottleneck, and losses there come only from bursts.",
    "G": "As A with RED at the core: max_th = the buffer, min_th = 40 % of it (in 1000-B packets), max_p 0.1, "
    "w_q 0.002, limit = the buffer.",
    "H": "Edge pacing with d swept at 5 KB (light load) and 50 KB (heavy load), with unpaced and host-paced as "
    "horizontal references; and d ∈ {1, 10, 100, 200} ms (quick: {10, 100}) against the buffer. "
    "d = 0 is the pacer as a FIFO.",
    "I": "As A plus one aggregated UDP source on its own 100 Mbps access and ingress edge (su0 → ieu → c0 → c1 → "
    "eeu → du0): Poisson at 5.5 Mbps, and LRD (fGn, Norros model) at 6 Mbps with H = 0.85; packets 100–300 B. "
    "In edge-paced runs the UDP edge is paced too (every ingress edge paces). UDP loss is over the measurement "
    "window only: the share of the payload bytes sent in the window that never arrived.",
    "J": "A share of the hosts pace (host-paced: the first 300 or 500 hosts) or a share of the ingress edges "
    "(edge-paced: the first 3 or 5 edges, which carry the same hosts), the rest unpaced; 0 % and 100 % are A's "
    "runs.",
    "K": "latlab's addition, not in the study, so no reference and no verdict: as A with BBR senders (BBR v1 as "
    "Linux's tcp_bbr, ns2 preset packets) at B–G's buffers. BBR paces every flow at pacing_gain × its bandwidth "
    "estimate, so it has no unpaced mode, and host pacing is its own pacing; the question left is whether an edge "
    "pacer still lowers core loss and raises goodput when the hosts already pace. A's NewReno rows at the same "
    "buffers are printed beside it.",
}

_GAPS = """* **FACK's rampdown and overdamping** (ns-2 `Agent/TCP/Fack` options, off by default there) are not
  modelled: latlab's FACK halves the window at once, like its SACK.
* **The edge pacer only on ingress links** needs no simulator change: the study builds the two-level dumbbell
  as a `kind = "custom"` topology (`latlab.studies.pacing.cases.two_level_dumbbell`), with two one-way links per
  ingress edge. The built-in `edge-dumbbell` would put `edge_queue` on c0->ie{j}, c1->ee{j} and ee{j}->c1 too
  (delaying ACKs and the core's output by up to d). A schema extension would let the built-in kind do it: an
  `ingress_queue` for ie{j}->c0 only (defaulting to `edge_queue`), and optionally `ingress_queue_edges = [..]`
  (which edges get it) for partial deployment — that would shrink scenario files from ~4000 links to one table.
* **Partial deployment (J)** is built the same way (a pacer on the first k ingress links only).
* **Per-packet UDP loss in the window**: the flows table counts UDP packets over the whole run only, so I's UDP
  loss is counted in payload bytes over the window (`throughput_bps` against `goodput_bps`); a windowed packet
  count in the flows table would give the study's per-packet measure.
* **ns-2 details** the study does not give (the study's TCP initial window, access/edge queue sizes, the exact
  RED variant) are latlab's defaults (IW 10, large access/edge DropTail, ns-2-style RED with wait)."""
